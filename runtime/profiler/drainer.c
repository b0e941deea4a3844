/*
 * runtime/profiler/drainer.c: the drainer, an internal thread (never counted, listed or
 * profiled) that empties the threads' sample buffers into the profile. Started by the first
 * profile of the process; it parks between profiles.
 *
 * It sleeps on a futex for at most DRAIN_INTERVAL_NS (1 s), and is woken early by a handler
 * whose buffer is half full, by every VMT__PROF_RETIRED_WAKE-th (256th) slot of an ended thread
 * (arm.c), by an output that wants fresh figures, and by the stop. Each wake-up costs some
 * 30-50 us of its CPU here (a timer, two context switches on a VM) besides ~1-2 us a sample
 * drained, so it sleeps long: with a 100 ms sleep it took 216-485 us of CPU a second of
 * profiling at 4 and 10 ms with 1 and 64 busy threads (9 wake-ups a second), with 1 s 12-154 us
 * (0.6-2 wake-ups: at 4 ms a half-full ring wakes it first), no sample lost in either
 * (//bench:profiler's drainer rows, 2026-12-02, docs/profiler.md).
 * A round takes the retired list, then the ready list (both whole, by exchange), drains the
 * ready slots, then drains and frees the retired ones: a slot retired before the round began
 * was pushed on the ready list, if at all, before it was retired, so nothing of it is left
 * behind once it is freed. It is the only consumer of every slot while
 * a profile runs; once it parked, the stopping thread is (vmt__prof_drainer_stop).
 *
 * The interval is not what keeps samples from being lost: a thread is sampled at most 250
 * times a second (one per tick); the default 16 KiB buffer holds 15 of the deepest samples (128
 * frames) and some 90 of 20 frames, and its handler wakes the drainer at half full, which leaves
 * the other half (28 ms of samples at the deepest) for the wake-up to be served in, whatever the
 * interval. What the interval bounds is how long ended threads' buffers (fewer than 256) and the
 * lost counters wait for a round; outputs and the stop drain first.
 */
#include <errno.h>
#include <stdlib.h>

#include "runtime/profiler/profiler_impl.h"

#define DRAIN_INTERVAL_NS (1000 * 1000000)
/* How often a drain_now caller looks again for a round it missed the wake of. */
#define DRAIN_NOW_RECHECK_NS (100 * 1000000)

static _Atomic uint32_t rounds;   /* completed rounds; a futex word for drain_now */
static _Atomic int32_t round_waiters;   /* drain_now callers waiting on it */
static void drainer_fork_child(void) { atomic_store(&round_waiters, 0); }
VMT__PROCESS_STATE(drainer_rounds, .symbols = "rounds round_waiters",
                   .rule = VMT__FORK_RESET,
                   .fork = "rounds is a count only compared with itself; the waiters of "
                           "vanished threads are forgotten (zeroed)",
                   .rank = VMT__RANK_PROFILER + 15, .child = drainer_fork_child);

/* The slot's lost counts not yet in the profile (the producer only ever adds to them). */
static void fold_lost(vmt__prof_profile_t *p, vmt__prof_thread_t *th, vmt__prof_slot_t *slot) {
  int64_t h = atomic_load_explicit(&slot->handler_ns, memory_order_relaxed);
  p->handler_ns += h - slot->handler_ns_seen;
  slot->handler_ns_seen = h;
  for (int c = 0; c < VMT_PROF_LOST_COUNT; c++) {
    int64_t n = atomic_load_explicit(&slot->lost[c], memory_order_relaxed);
    int64_t w = atomic_load_explicit(&slot->lost_weight[c], memory_order_relaxed);
    int64_t dn = n - slot->lost_seen[c], dw = w - slot->lost_weight_seen[c];
    slot->lost_seen[c] = n;
    slot->lost_weight_seen[c] = w;
    p->lost[c] += dn;
    p->lost_weight[c] += dw;
    if (th) {
      th->lost[c] += dn;
      th->lost_weight[c] += dw;
    }
  }
}

static void drain_slot(vmt__prof_profile_t *p, vmt__prof_slot_t *slot) {
  vmt__prof_thread_t *th = slot->entry;
  if (th == NULL) th = slot->entry = vmt__prof_profile_thread(p, slot);
  uint64_t tail = atomic_load_explicit(&slot->tail, memory_order_relaxed);
  uint64_t head = atomic_load_explicit(&slot->head, memory_order_acquire);
  uint64_t cap = slot->mask + 1;
  while (tail < head) {
    uint64_t at = tail & slot->mask;
    uint64_t h = slot->words[at];
    if (vmt__prof_header_kind(h) == VMT__PROF_KIND_PAD) {
      tail += cap - at;
      continue;
    }
    uint32_t n = vmt__prof_header_frames(h);
    slot->drained_weight += vmt__prof_header_weight(h);
    if (th)
      vmt__prof_profile_add(p, th, vmt__prof_header_kind(h), (const uintptr_t *)&slot->words[at + 1],
                            n, vmt__prof_header_weight(h));
    else
      p->oom = true;
    tail += 1 + (uint64_t)n;
  }
  atomic_store_explicit(&slot->tail, tail, memory_order_release);
  fold_lost(p, th, slot);
}

/* Drains a slot whose thread is disarmed, folds its figures into its thread, frees it. */
static void finish_slot(vmt__prof_profile_t *p, vmt__prof_slot_t *slot) {
  /* Weight the cooperative mode left for a poll that never came before the disarm. */
  int64_t never = atomic_load_explicit(&slot->coop_weight, memory_order_relaxed);
  if (never > 0) {
    atomic_fetch_add_explicit(&slot->lost[VMT_PROF_LOST_UNSAFE], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&slot->lost_weight[VMT_PROF_LOST_UNSAFE], never,
                              memory_order_relaxed);
    atomic_store_explicit(&slot->coop_weight, 0, memory_order_relaxed);
  }
  drain_slot(p, slot);
  vmt__prof_thread_t *th = slot->entry;
  if (th) {
    if (slot->cpu_at_arm_ns >= 0 && slot->cpu_at_disarm_ns >= slot->cpu_at_arm_ns) {
      int64_t cpu = slot->cpu_at_disarm_ns - slot->cpu_at_arm_ns;
      th->cpu_ns += cpu;
      /* Expirations the kernel never signalled: it checks CPU timers at ticks that find the
       * thread running, so the last ones of an arming may still be pending when the timer is
       * deleted (docs/profiler.md, "The tail"). Counted, never made into samples. */
      int64_t told = slot->drained_weight;
      for (int c = 0; c < VMT_PROF_LOST_COUNT; c++) told += slot->lost_weight_seen[c];
      int64_t tail = cpu / p->cfg.period_ns - told;
      if (tail > 0) {
        th->unsignalled += tail;
        p->unsignalled += tail;
      }
    } else {
      th->cpu_unknown = true;
    }
    th->ended = th->ended || slot->ended;
  }
  vmt__prof_slot_free(slot);
}

static void round_once(vmt__prof_slot_t *disarmed) {
  /* Reset first: a push between the two is counted and taken now (one early wake at worst). */
  atomic_store_explicit(&vmt__prof.retired_count, 0, memory_order_seq_cst);
  vmt__prof_slot_t *retired = atomic_exchange_explicit(&vmt__prof.retired, NULL,
                                                       memory_order_seq_cst);
  vmt__prof_slot_t *ready = atomic_exchange_explicit(&vmt__prof.ready, NULL,
                                                     memory_order_seq_cst);
  vmt__prof_profile_t *p = vmt__prof.profile;
  pthread_mutex_lock(&p->lock);
  while (ready) {
    vmt__prof_slot_t *next = ready->ready_next;
    /* Cleared before the drain reads head: a sample published after that read finds the flag
     * clear and queues the slot again. */
    atomic_store_explicit(&ready->queued, 0, memory_order_seq_cst);
    drain_slot(p, ready);
    ready = next;
  }
  while (retired) {
    vmt__prof_slot_t *next = retired->list_next;
    finish_slot(p, retired);
    retired = next;
  }
  while (disarmed) {
    vmt__prof_slot_t *next = disarmed->list_next;
    finish_slot(p, disarmed);
    disarmed = next;
  }
  for (int c = 0; c < VMT_PROF_LOST_COUNT; c++) {
    /* Signals that found no slot: the session's, not a thread's. */
    int64_t n = atomic_exchange_explicit(&vmt__prof.lost_unattributed[c], 0, memory_order_relaxed);
    int64_t w = atomic_exchange_explicit(&vmt__prof.lost_unattributed_weight[c], 0,
                                         memory_order_relaxed);
    p->lost[c] += n;
    p->lost_weight[c] += w;
  }
  pthread_mutex_unlock(&p->lock);
  atomic_fetch_add_explicit(&rounds, 1, memory_order_seq_cst);
  if (atomic_load_explicit(&round_waiters, memory_order_seq_cst) > 0)
    vmt_os_futex_wake(&rounds, INT32_MAX);
}

/* Between profiles the drainer parks (drainer_active 0) instead of ending: a start then costs
 * no thread creation, and the thread's first-use costs (its stack's pages, its allocator
 * cache, its hazard block) are paid once per process, not once per profile: they were 1 to 3
 * ms of CPU per profile here, as much as a 300 ms profile's handlers. */
static void *drainer_main(void *arg) {
  (void)arg;
  bool in_session = false;
  int64_t cpu0 = 0;
  for (;;) {
    bool active = atomic_load_explicit(&vmt__prof.drainer_active, memory_order_seq_cst) != 0;
    if (atomic_exchange_explicit(&vmt__prof.wake, 0, memory_order_seq_cst) == 0)
      vmt_os_futex_wait(&vmt__prof.wake, 0,
                        active ? vmt_os_java_time_nanos() + DRAIN_INTERVAL_NS
                               : VMT_OS_NO_DEADLINE);
    if (atomic_load_explicit(&vmt__prof.drainer_active, memory_order_seq_cst) == 0) continue;
    if (!in_session) {
      in_session = true;
      cpu0 = vmt_os_current_thread_cpu_time(false);
    }
    if (atomic_load_explicit(&vmt__prof.stopping, memory_order_seq_cst)) {
      /* Its own cost in this profile, for the figures; then it parks. */
      int64_t cpu = vmt_os_current_thread_cpu_time(false) - cpu0;
      pthread_mutex_lock(&vmt__prof.profile->lock);
      vmt__prof.profile->drainer_cpu_ns = cpu;
      pthread_mutex_unlock(&vmt__prof.profile->lock);
      in_session = false;
      atomic_store_explicit(&vmt__prof.drainer_active, 0, memory_order_seq_cst);
      vmt_os_futex_wake(&vmt__prof.drainer_active, INT32_MAX);
      continue;
    }
    if (atomic_load_explicit(&vmt__prof.helping, memory_order_seq_cst)) {
      /* The start's arming, from the other end (session.c waits for it). */
      vmt__prof.threads_helped = vmt__prof_arm_all(true);
      atomic_store_explicit(&vmt__prof.helping, 0, memory_order_seq_cst);
      vmt_os_futex_wake(&vmt__prof.helping, INT32_MAX);
    }
    if (atomic_exchange_explicit(&vmt__prof.rescan, false, memory_order_seq_cst))
      (void)vmt__prof_arm_all(false);
    /* Objects dlopen'ed (or closed) since: the handlers' unwinder learns them here. */
    vmt_os_native_unwind_refresh();
    round_once(NULL);
  }
  return NULL;
}

int vmt__prof_drainer_start(void) {
  atomic_store(&vmt__prof.wake, 0);
  atomic_store(&vmt__prof.helping, 0);
  int rc = 0;
  if (vmt__prof.drainer == NULL)
    rc = vmt__thread_start_internal(&vmt__prof.drainer, "vmt-prof-drainer", drainer_main, NULL);
  if (rc) {
    vmt__prof.drainer = NULL;
    return rc;
  }
  atomic_store_explicit(&vmt__prof.drainer_active, 1, memory_order_seq_cst);
  vmt__prof_wake_drainer();
  return 0;
}

void vmt__prof_drainer_stop(vmt__prof_slot_t *disarmed) {
  atomic_store_explicit(&vmt__prof.stopping, true, memory_order_seq_cst);
  vmt__prof_wake_drainer();
  uint32_t a;
  while ((a = atomic_load_explicit(&vmt__prof.drainer_active, memory_order_seq_cst)) != 0)
    vmt_os_futex_wait(&vmt__prof.drainer_active, a, VMT_OS_NO_DEADLINE);
  /* Parked: the lists are this thread's now. */
  round_once(disarmed);
}

void vmt__prof_drain_now(void) {
  /* Two completed rounds: the one in progress may have taken its lists before the call. */
  atomic_fetch_add_explicit(&round_waiters, 1, memory_order_seq_cst);
  uint32_t start = atomic_load_explicit(&rounds, memory_order_seq_cst);
  vmt__prof_wake_drainer();
  for (;;) {
    uint32_t now = atomic_load_explicit(&rounds, memory_order_seq_cst);
    if (now - start >= 2) break;
    if (now - start == 1) vmt__prof_wake_drainer();
    vmt_os_futex_wait(&rounds, now, vmt_os_java_time_nanos() + DRAIN_NOW_RECHECK_NS);
  }
  atomic_fetch_sub_explicit(&round_waiters, 1, memory_order_seq_cst);
}
