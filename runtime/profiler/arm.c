/*
 * runtime/profiler/arm.c: giving each runtime thread its CPU timer and sample buffer, and
 * taking them back before the thread leaves.
 *
 * Four parties arm: the start of a session (every live thread of one registry snapshot), a
 * thread that starts or attaches while a session runs (itself, from the life-cycle hook), the
 * drainer once after the start (a thread whose tid was not yet published when the start saw
 * it), and vmt_prof_set_thread_excluded(t, false). Three disarm: the stop (every armed
 * thread), a thread that ends (itself), and vmt_prof_set_thread_excluded(t, true). An
 * excluded thread is never armed.
 *
 * DESIGN (a timer never outlives its thread, and never names a recycled tid). A record's
 * prof.state is claimed IDLE -> BUSY by one party at a time (compare-exchange); the armer
 * then checks, in this order, that the session still arms and that the thread has not begun
 * to leave (os.exiting), creates the timer and publishes ARMED; the disarmer claims ARMED ->
 * BUSY, deletes the timer and publishes IDLE. A thread that ends first sets os.exiting, then
 * reads prof.state (runtime/thread/exit.c, both seq_cst): either it sees the armer's BUSY and
 * waits for the ARMED that follows, then disarms itself, or the armer sees `exiting` and does
 * not arm. While the state is BUSY the thread cannot finish leaving, so its tid still names
 * it when the timer is created. The stop sets vmt__prof_arming false before it walks the
 * registry, and an armer re-checks the flag after its claim, so no arming slips past a stop.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/profiler/profiler_impl.h"

static vmt__prof_slot_t *slot_new(const vmt__prof_config_t *cfg, vmt_thread_t *t) {
  if (vmt__fault_hit(VMT__FAULT_ALLOC)) return NULL;
  vmt__prof_slot_t *slot = calloc(1, sizeof(*slot));
  if (slot == NULL) return NULL;
  /* The ring's words are written before they are read: never touched here, an idle thread's
   * ring takes no memory (its fresh pages stay unmapped). */
  slot->words = malloc(cfg->buffer_words * sizeof(uint64_t));
  slot->thread_name = strdup(t->name);
  if (slot->words == NULL || slot->thread_name == NULL) {
    vmt__prof_slot_free(slot);
    return NULL;
  }
  slot->thread_id = t->id;
  slot->category = t->category->name;
  slot->mask = cfg->buffer_words - 1;
  slot->cpu_at_arm_ns = slot->cpu_at_disarm_ns = -1;
  return slot;
}

void vmt__prof_slot_free(vmt__prof_slot_t *slot) {
  if (slot == NULL) return;
  free(slot->words);
  free(slot->thread_name);
  free(slot);
}

int vmt__prof_arm(vmt_thread_t *t) {
  if (t->kind == VMT__KIND_INTERNAL) return 0;
  uint32_t idle = VMT__PROF_IDLE;
  if (!atomic_compare_exchange_strong_explicit(&t->prof.state, &idle, VMT__PROF_BUSY,
                                               memory_order_seq_cst, memory_order_relaxed))
    return VMT__PROF_ARM_CLAIMED;   /* armed already, or another party is at it */
  const vmt__prof_config_t *cfg = &vmt__prof.cfg;
  int rc = 0;
  if (!atomic_load_explicit(&vmt__prof_arming, memory_order_seq_cst) ||
      atomic_load_explicit(&t->prof.excluded, memory_order_seq_cst) ||
      atomic_load_explicit(&t->os.exiting, memory_order_seq_cst) ||
      vmt_os_thread_tid(&t->os) == 0) {
    /* Stopped, excluded, leaving, or not yet bound: the thread arms itself when it runs
     * (start.c publishes the tid before its hook) or the drainer's rescan arms it. An
     * exclusion set after this check finds the BUSY, then the ARMED, and disarms. */
    atomic_store_explicit(&t->prof.state, VMT__PROF_IDLE, memory_order_seq_cst);
    return 0;
  }
  vmt__prof_slot_t *slot = slot_new(cfg, t);
  if (slot == NULL) {
    rc = -ENOMEM;
  } else {
    /* The handler's unwinder checks every stack word it reads against these (unwind.c). Asked
     * now, outside any handler: pthread_getattr_np, 1-2 us (the main thread's reads /proc). */
    vmt_stack_info_t si;
    if (vmt_thread_stack_info(t, &si) == 0 && si.lo < si.hi) {
      slot->stack_lo = si.lo;
      slot->stack_hi = si.hi;
    }
    /* The slot first: the first signal may come before timer_create returns. */
    atomic_store_explicit(&t->prof.slot, slot, memory_order_seq_cst);
    rc = vmt_os_cpu_timer_start(&t->os, cfg->signo, cfg->period_ns, slot, &slot->timer,
                                &slot->cpu_at_arm_ns);
    if (rc) {
      /* No timer ever ran: a handler that loaded the pointer finds no signal carrying it as
       * its cookie, and never touches it (handler.c). */
      atomic_store_explicit(&t->prof.slot, NULL, memory_order_seq_cst);
      vmt__prof_slot_free(slot);
    }
  }
  if (rc) {
    /* Left IDLE, the thread is tried again by the drainer's rescans: count it once. */
    uint32_t session = atomic_load_explicit(&vmt__prof.session, memory_order_relaxed);
    if (atomic_exchange_explicit(&t->prof.arm_failed_session, session, memory_order_relaxed) !=
        session)
      atomic_fetch_add_explicit(&vmt__prof.arm_failures, 1, memory_order_relaxed);
    atomic_store_explicit(&t->prof.state, VMT__PROF_IDLE, memory_order_seq_cst);
    return rc;
  }
  atomic_fetch_add_explicit(&vmt__prof.threads_ever, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&vmt__prof.threads_armed, 1, memory_order_relaxed);
  atomic_store_explicit(&t->prof.state, VMT__PROF_ARMED, memory_order_seq_cst);
  return 1;
}

static void push_retired(vmt__prof_slot_t *slot) {
  vmt__prof_slot_t *old = atomic_load_explicit(&vmt__prof.retired, memory_order_relaxed);
  do slot->list_next = old;
  while (!atomic_compare_exchange_weak_explicit(&vmt__prof.retired, &old, slot,
                                                memory_order_seq_cst, memory_order_relaxed));
  if (atomic_fetch_add_explicit(&vmt__prof.retired_count, 1, memory_order_seq_cst) + 1 ==
      VMT__PROF_RETIRED_WAKE)
    vmt__prof_wake_drainer();
}

void vmt__prof_disarm(vmt_thread_t *t, bool self, bool ending, vmt__prof_slot_t **disarmed) {
  /* A record of an ancestor process (fork) carries that process's arming: ARMED with a timer
   * id that may name one of this process's own timers, or BUSY for a party that is not here.
   * Its slot is the parent's, set aside with its profile (session.c's child handler); nothing
   * is deleted, waited for or drained. Whether such a record is still in a snapshot the stop
   * walks depends on the registry's rebuilds, so it is checked here. */
  if (!vmt__thread_of_this_process(t)) return;
  for (;;) {
    uint32_t s = atomic_load_explicit(&t->prof.state, memory_order_seq_cst);
    if (s == VMT__PROF_IDLE) return;
    if (s == VMT__PROF_BUSY) {
      /* Another party is between two system calls (timer_create, timer_settime): a few us. */
      sched_yield();
      continue;
    }
    if (atomic_compare_exchange_weak_explicit(&t->prof.state, &s, VMT__PROF_BUSY,
                                              memory_order_seq_cst, memory_order_relaxed))
      break;
  }
  vmt__prof_slot_t *slot = atomic_load_explicit(&t->prof.slot, memory_order_seq_cst);
  /* Timer first, clock second: no sample can stand for CPU time after the clock's reading. */
  vmt_os_cpu_timer_delete(&slot->timer);
  bool ok = true;
  int64_t cpu = self ? vmt_os_current_thread_cpu_time(false)
                     : vmt_os_thread_cpu_time(&t->os, false, &ok);
  slot->cpu_at_disarm_ns = ok ? cpu : -1;
  slot->ended = ending;
  /* From here the handler on t finds no slot (t's own handler: the store is ordered before
   * the push below for a handler interrupting this very thread). */
  atomic_store_explicit(&t->prof.slot, NULL, memory_order_seq_cst);
  if (disarmed) {
    slot->list_next = *disarmed;
    *disarmed = slot;
  } else {
    /* The drainer's next round frees it (a wake-up only every VMT__PROF_RETIRED_WAKE-th: a VM
     * starting thousands of short threads a second made the drainer wake as often when each
     * one woke it, 126 ms of its CPU in a 4 s profile here). */
    push_retired(slot);
  }
  atomic_fetch_sub_explicit(&vmt__prof.threads_armed, 1, memory_order_relaxed);
  atomic_store_explicit(&t->prof.state, VMT__PROF_IDLE, memory_order_seq_cst);
}

int32_t vmt__prof_arm_all(bool from_the_end) {
  const vmt__snapshot_t *snap = vmt__registry_acquire();
  if (snap == NULL) return 0;
  int32_t armed = 0;
  for (size_t k = 0; k < snap->count; k++) {
    vmt_thread_t *t = snap->threads[from_the_end ? snap->count - 1 - k : k];
    if (atomic_load_explicit(&t->registry_state, memory_order_acquire) != VMT__REG_IN) continue;
    if (vmt__prof_arm(t) == 1) armed++;
  }
  vmt__registry_release(snap);
  return armed;
}

void vmt__prof_thread_begin_hook(vmt_thread_t *t) { (void)vmt__prof_arm(t); }

void vmt__prof_thread_end_hook(vmt_thread_t *t) { vmt__prof_disarm(t, true, true, NULL); }
