/*
 * runtime/profiler/drainer.c: the drainer, an internal thread (never counted, listed or
 * profiled) that empties the threads' sample buffers into the profile.
 *
 * It sleeps on a futex for at most DRAIN_INTERVAL_NS, and is woken early by a handler whose
 * buffer is half full, by a thread that ended (its slot is retired) and by an output that
 * wants fresh figures. A round takes the retired list, then the ready list (both whole, by
 * exchange), drains the ready slots, then drains and frees the retired ones: a slot retired
 * before the round began was pushed on the ready list, if at all, before it was retired, so
 * nothing of it is left behind once it is freed. It is the only consumer of every slot while
 * it runs; after it stopped, the stopping thread is (vmt__prof_drainer_stop).
 *
 * The interval: a thread is sampled at most 250 times a second (one per tick), so in 20 ms
 * a thread writes at most 5 samples; the default 16 KiB buffer holds 15 of the deepest (128
 * frames) and some 90 of 20 frames.
 */
#include <errno.h>
#include <stdlib.h>

#include "runtime/profiler/profiler_impl.h"

#define DRAIN_INTERVAL_NS (20 * 1000000)

static _Atomic uint32_t rounds;   /* completed rounds; a futex word for drain_now */
VMT__PROCESS_STATE(drainer_rounds, .symbols = "rounds", .rule = VMT__FORK_KEEP,
                   .fork = "a count only compared with itself; the child has no drainer until "
                           "it starts a profile");

/* The slot's lost counts not yet in the profile (the producer only ever adds to them). */
static void fold_lost(vmt__prof_profile_t *p, vmt__prof_thread_t *th, vmt__prof_slot_t *slot) {
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
  vmt_os_futex_wake(&rounds, INT32_MAX);
}

static void *drainer_main(void *arg) {
  (void)arg;
  for (;;) {
    if (atomic_exchange_explicit(&vmt__prof.wake, 0, memory_order_seq_cst) == 0)
      vmt_os_futex_wait(&vmt__prof.wake, 0, vmt_os_java_time_nanos() + DRAIN_INTERVAL_NS);
    if (atomic_load_explicit(&vmt__prof.stopping, memory_order_seq_cst)) break;
    if (atomic_exchange_explicit(&vmt__prof.rescan, false, memory_order_seq_cst))
      (void)vmt__prof_arm_all();
    round_once(NULL);
  }
  return NULL;
}

int vmt__prof_drainer_start(void) {
  atomic_store(&vmt__prof.wake, 0);
  return vmt__thread_start_internal(&vmt__prof.drainer, "vmt-prof-drainer", drainer_main, NULL);
}

void vmt__prof_drainer_stop(vmt__prof_slot_t *disarmed) {
  atomic_store_explicit(&vmt__prof.stopping, true, memory_order_seq_cst);
  atomic_store_explicit(&vmt__prof.wake, 1, memory_order_seq_cst);
  vmt_os_futex_wake(&vmt__prof.wake, 1);
  vmt_thread_join(vmt__prof.drainer, NULL);
  vmt_thread_release(vmt__prof.drainer);
  vmt__prof.drainer = NULL;
  round_once(disarmed);
}

void vmt__prof_drain_now(void) {
  /* Two completed rounds: the one in progress may have taken its lists before the call. */
  uint32_t start = atomic_load_explicit(&rounds, memory_order_seq_cst);
  vmt__prof_wake_drainer();
  for (;;) {
    uint32_t now = atomic_load_explicit(&rounds, memory_order_seq_cst);
    if (now - start >= 2) return;
    if (now - start == 1) vmt__prof_wake_drainer();
    vmt_os_futex_wait(&rounds, now, vmt_os_java_time_nanos() + DRAIN_INTERVAL_NS);
  }
}
