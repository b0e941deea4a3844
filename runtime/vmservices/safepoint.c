/*
 * runtime/vmservices/safepoint.c: global safepoints (HotSpot's SafepointSynchronize, ART's
 * SuspendAll), scaled to idle threads: the coordinator publishes the safepoint word, reads each
 * record's exec word once (safe threads cost that load and nothing else: they check the word
 * themselves when they leave), arms only the threads it finds in managed or VM code, and
 * sleeps on a countdown their arrivals decrement. Reaching 10,000 idle threads is one pass of
 * loads over the snapshot; no system call, no atomic read-modify-write per idle thread.
 *
 * Counting without a race against early arrivals: the countdown starts at a bias, each armed
 * thread's arrival subtracts one (it may arrive before the walk is over), and the coordinator
 * subtracts bias - armed after the walk; it reaches 0 exactly when every armed thread has
 * arrived. Whoever clears a thread's SAFEPOINT flag counts its arrival: the thread (at a poll,
 * at a transition) or the coordinator (when it takes the flag back after a timeout).
 *
 * The coordinator waits for the lock of the next safepoint, and holds the safepoint, in
 * BLOCKED, so that it can be begun from managed code and never waits for itself; its own
 * transitions are not held (vmt__sp_holds). Handshakes processed on behalf of safe threads are
 * drained before the walk (their operations must not overlap a safepoint) and held off until
 * the end, except the coordinator's own.
 */
#include <limits.h>

#include "runtime/fault.h"
#include "runtime/vmservices/vmservices_impl.h"

_Atomic uint32_t vmt__sp_word;
_Atomic uintptr_t vmt__sp_owner;

#define SP_BIAS (1u << 29)
#define SP_SLEEPING (1u << 31)
#define INFLIGHT_WAITING (1u << 31)

/* One safepoint at a time. A futex lock (vmservices_impl.h), not a pthread mutex: its holder
 * keeps it across calls for the length of a safepoint, a fork included, and TSan counts every
 * pthread mutex a thread holds (64 at most: a coordinator's fork, with the fork handlers' and
 * jemalloc's locks on top, passed that in vms_fork_linux_test). */
static _Atomic uint32_t sp_lock;
static _Atomic uint32_t sp_remaining;          /* countdown of armed threads (above) */
static _Atomic(vmt_thread_t *) sp_last;        /* the last thread to announce its arrival */
static _Atomic uint32_t hs_inflight;           /* processors on behalf of safe threads */
static uint64_t sp_count;                      /* safepoints begun (sp_lock) */
/* The coordinator's record (NULL for a foreign one or none): whom a begin that times out
 * waiting for sp_lock names. */
static _Atomic(vmt_thread_t *) sp_holder;
/* The safepoint in progress, the coordinator's (under sp_lock). */
static struct {
  int saved_state;
  int64_t reached_ns;
  uint64_t id;
} sp_cur;

void vmt__sp_arrive(vmt_thread_t *t) {
  atomic_store_explicit(&sp_last, t, memory_order_relaxed);
  uint32_t r = atomic_fetch_sub_explicit(&sp_remaining, 1, memory_order_acq_rel);
  if (r == (SP_SLEEPING | 1u)) vmt_os_futex_wake(&sp_remaining, 1);
}

int vmt__sp_wait_end(int64_t deadline) {
  for (;;) {
    uint32_t v = atomic_load_explicit(&vmt__sp_word, memory_order_seq_cst);
    if (!(v & VMT__SP_ACTIVE)) return 0;
    if (!(v & VMT__SP_WAITERS) &&
        !atomic_compare_exchange_weak_explicit(&vmt__sp_word, &v, v | VMT__SP_WAITERS,
                                               memory_order_seq_cst, memory_order_relaxed))
      continue;
    if (vmt_os_futex_wait(&vmt__sp_word, v | VMT__SP_WAITERS, deadline) == -ETIMEDOUT)
      return atomic_load_explicit(&vmt__sp_word, memory_order_seq_cst) & VMT__SP_ACTIVE
                 ? -ETIMEDOUT
                 : 0;
  }
}

static void inflight_dec(void) {
  uint32_t r = atomic_fetch_sub_explicit(&hs_inflight, 1, memory_order_seq_cst);
  if (r == (INFLIGHT_WAITING | 1u)) vmt_os_futex_wake(&hs_inflight, 1);
}

bool vmt__sp_processing_begin(vmt_thread_t *self) {
  uintptr_t me = vmt__sp_token(self);
  if (atomic_load_explicit(&vmt__sp_owner, memory_order_relaxed) == me) return true;
  if (atomic_load_explicit(&vmt__sp_word, memory_order_seq_cst) & VMT__SP_ACTIVE) return false;
  atomic_fetch_add_explicit(&hs_inflight, 1, memory_order_seq_cst);
  /* Dekker with the coordinator's store of the word, then its read of hs_inflight. */
  if (atomic_load_explicit(&vmt__sp_word, memory_order_seq_cst) & VMT__SP_ACTIVE) {
    inflight_dec();
    return false;
  }
  return true;
}

void vmt__sp_processing_end(vmt_thread_t *self) {
  if (atomic_load_explicit(&vmt__sp_owner, memory_order_relaxed) == vmt__sp_token(self)) return;
  inflight_dec();
}

/* Sleeps until *word (without its sleeping bit) is 0; false on the deadline. */
static bool wait_zero(_Atomic uint32_t *word, uint32_t sleeping, int64_t deadline) {
  int64_t spin_start = vmt_os_elapsed_nanos();
  bool spinning = true;
  for (;;) {
    uint32_t v = atomic_load_explicit(word, memory_order_acquire);
    if ((v & ~sleeping) == 0) return true;
    if (spinning && (spinning = vmt__vms_spin_turn(spin_start))) continue;
    if (!(v & sleeping)) {
      atomic_compare_exchange_weak_explicit(word, &v, v | sleeping, memory_order_acq_rel,
                                            memory_order_relaxed);
      continue;
    }
    if (deadline != VMT_OS_NO_DEADLINE && vmt_os_java_time_nanos() >= deadline) return false;
    (void)vmt__fault_hit(VMT__FAULT_SP_SLEEP);   /* a hook point only */
    vmt_os_futex_wait(word, v, deadline);
  }
}

/* Ends the safepoint in progress: one broadcast for every waiter. Under sp_lock. */
static void release_all(void) {
  atomic_store_explicit(&sp_holder, NULL, memory_order_relaxed);
  atomic_store_explicit(&vmt__sp_owner, 0, memory_order_relaxed);
  uint32_t old = atomic_load_explicit(&vmt__sp_word, memory_order_relaxed);
  old = atomic_exchange_explicit(&vmt__sp_word, (old & ~3u) + 4u, memory_order_seq_cst);
  if (old & VMT__SP_WAITERS) vmt_os_futex_wake(&vmt__sp_word, INT_MAX);
}

/* After a timeout: takes SAFEPOINT back from every armed thread that has not arrived
 * (counting the arrival itself), then waits for those that took theirs to count. Returns the
 * first thread it had to take the flag back from. */
static vmt_thread_t *disarm(vmt_thread_t *armed) {
  vmt_thread_t *straggler = NULL;
  for (vmt_thread_t *t = armed; t; t = t->vms.sp_next) {
    uint32_t w = atomic_load_explicit(&t->exec, memory_order_relaxed);
    while ((w & VMT__EXEC_SAFEPOINT) &&
           !atomic_compare_exchange_weak_explicit(&t->exec, &w, w & ~VMT__EXEC_SAFEPOINT,
                                                  memory_order_seq_cst, memory_order_relaxed)) {
    }
    if (w & VMT__EXEC_SAFEPOINT) {
      if (!straggler) straggler = t;
      atomic_fetch_sub_explicit(&sp_remaining, 1, memory_order_acq_rel);
    }
  }
  /* Threads that cleared their own flag are a few instructions from their decrement. */
  while ((atomic_load_explicit(&sp_remaining, memory_order_acquire) & ~SP_SLEEPING) != 0)
    sched_yield();
  return straggler;
}

/* After the wait for processors on behalf of safe threads ran out: the target of one still in
 * flight, which is what the timeout is reported against (the processor holds it in its safe
 * state with PROCESSING while it runs its operations). A processor is counted a little before
 * it sets the flag and a little after it clears it, so the scan goes round until it finds one or
 * none is in flight any more (NULL: the begin goes on, its deadline already past, and a thread
 * it then waits for is named instead). */
static vmt_thread_t *inflight_target(const vmt__snapshot_t *snap, vmt_thread_t *self) {
  for (;;) {
    for (size_t i = 0; i < snap->count; i++) {
      vmt_thread_t *t = snap->threads[i];
      if (t != self && (atomic_load_explicit(&t->exec, memory_order_acquire) &
                        VMT__EXEC_PROCESSING) &&
          atomic_load_explicit(&t->registry_state, memory_order_relaxed) == VMT__REG_IN)
        return t;
    }
    if ((atomic_load_explicit(&hs_inflight, memory_order_acquire) & ~INFLIGHT_WAITING) == 0)
      return NULL;
    sched_yield();
  }
}

/* The end of a foreign thread (a runtime thread ends its safepoint in its exit path,
 * lifecycle.c): one that still holds its safepoint ends it, or nobody else could. */
static void sp_foreign_thread_end(void) {
  if (atomic_load_explicit(&vmt__sp_owner, memory_order_relaxed) == vmt__sp_token(vmt__current))
    vmt_safepoint_end(NULL);
}

int vmt_safepoint_begin(int64_t timeout_ns, vmt_safepoint_stats_t *stats) {
  if (timeout_ns < 0) return -EINVAL;
  vmt_thread_t *self = vmt__current;
  uintptr_t me = vmt__sp_token(self);
  if (atomic_load_explicit(&vmt__sp_owner, memory_order_relaxed) == me) return -EDEADLK;
  /* Inside a handshake operation: as a processor for a safe thread it is one of the in-flight
   * processors the begin waits out, and as a target its requester waits for it. */
  if (vmt__hs_op_depth > 0) return -EDEADLK;
  if (self == NULL) {
    int arm = vmt__thread_end_arm(VMT__END_SAFEPOINT, sp_foreign_thread_end);
    if (arm) return arm;
  }
  if (stats) *stats = (vmt_safepoint_stats_t){0};
  int64_t start = vmt_os_java_time_nanos();
  int64_t deadline = vmt__vms_deadline(timeout_ns);
  int saved = vmt__region_enter(self);
  if (!vmt_os_futex_lock_until(&sp_lock, deadline)) {
    /* Another safepoint holds for longer than our timeout: its coordinator is the straggler. */
    vmt_thread_t *holder = atomic_load_explicit(&sp_holder, memory_order_relaxed);
    if (holder && !vmt__record_ref_if_live(holder)) holder = NULL;
    if (stats) vmt__straggler_fill(&stats->straggler, holder, vmt_os_java_time_nanos() - start);
    if (holder) vmt__record_unref(holder);
    vmt__region_leave(self, saved, NULL);
    return -ETIMEDOUT;
  }
  atomic_store_explicit(&sp_holder, self, memory_order_relaxed);
  uint64_t id = ++sp_count;
  atomic_store_explicit(&sp_remaining, SP_BIAS, memory_order_relaxed);
  atomic_store_explicit(&sp_last, NULL, memory_order_relaxed);
  atomic_store_explicit(&vmt__sp_owner, me, memory_order_relaxed);
  atomic_fetch_or_explicit(&vmt__sp_word, VMT__SP_ACTIVE, memory_order_seq_cst);
  /* The snapshot is taken after the word is set: a thread it misses was inserted later, began
   * in NATIVE (safe) and checks the word when it leaves that state. */
  const vmt__snapshot_t *snap = vmt__registry_acquire();
  if (snap == NULL) {
    release_all();
    vmt_os_futex_unlock(&sp_lock);
    vmt__region_leave(self, saved, NULL);
    return -ENOMEM;
  }
  int rc = 0;
  vmt_thread_t *held_by = NULL;   /* a target whose operation outlasted the timeout */
  if (!wait_zero(&hs_inflight, INFLIGHT_WAITING, deadline)) {
    held_by = inflight_target(snap, self);
    if (held_by) rc = -ETIMEDOUT;
  }
  atomic_fetch_and_explicit(&hs_inflight, ~INFLIGHT_WAITING, memory_order_relaxed);
  vmt_thread_t *armed = NULL;
  int32_t examined = 0, running = 0;
  for (size_t i = 0; rc == 0 && i < snap->count; i++) {
    vmt_thread_t *t = snap->threads[i];
    if (i + 8 < snap->count) __builtin_prefetch(&snap->threads[i + 8]->exec);
    if (t == self) continue;
    examined++;
    uint32_t w = atomic_load_explicit(&t->exec, memory_order_seq_cst);
    if (!vmt__exec_may_run(w)) continue;
    /* A record of a thread that has left (or, after fork, of another process's thread). */
    if (atomic_load_explicit(&t->registry_state, memory_order_relaxed) != VMT__REG_IN) continue;
    /* Unsafe, or leaving a safe state (it may have read the word before we set it): armed, the
     * leaver's last CAS fails and it arrives without having left. */
    while (vmt__exec_may_run(w) && !(w & VMT__EXEC_SAFEPOINT) &&
           !atomic_compare_exchange_weak_explicit(&t->exec, &w, w | VMT__EXEC_SAFEPOINT,
                                                  memory_order_seq_cst, memory_order_relaxed)) {
    }
    if (!vmt__exec_may_run(w)) continue;   /* it became safe */
    t->vms.sp_next = armed;
    armed = t;
    running++;
  }
  uint32_t left = atomic_fetch_sub_explicit(&sp_remaining, SP_BIAS - (uint32_t)running,
                                            memory_order_acq_rel) -
                  (SP_BIAS - (uint32_t)running);
  if (rc == 0 && left != 0 && !wait_zero(&sp_remaining, SP_SLEEPING, deadline)) rc = -ETIMEDOUT;
  vmt__registry_release(snap);
  int64_t now = vmt_os_java_time_nanos();
  if (stats) {
    stats->id = id;
    stats->time_to_safepoint_ns = now - start;
    stats->threads = examined;
    stats->running = running;
  }
  if (rc != 0) {
    vmt_thread_t *straggler = held_by ? held_by : disarm(armed);
    if (stats) vmt__straggler_fill(&stats->straggler, straggler, now - start);
    release_all();
    vmt_os_futex_unlock(&sp_lock);
    vmt__region_leave(self, saved, NULL);
    return rc;
  }
  vmt_thread_t *last = atomic_load_explicit(&sp_last, memory_order_relaxed);
  if (stats) stats->last_thread_id = running && last ? last->id : 0;
  sp_cur.saved_state = saved;
  sp_cur.reached_ns = now;
  sp_cur.id = id;
  return 0;
}

int vmt_safepoint_end(vmt_safepoint_stats_t *stats) {
  vmt_thread_t *self = vmt__current;
  if (atomic_load_explicit(&vmt__sp_owner, memory_order_relaxed) != vmt__sp_token(self))
    return -EPERM;
  if (stats) {
    stats->id = sp_cur.id;
    stats->time_at_safepoint_ns = vmt_os_java_time_nanos() - sp_cur.reached_ns;
  }
  int saved = sp_cur.saved_state;
  release_all();
  vmt_os_futex_unlock(&sp_lock);
  vmt__region_leave(self, saved, NULL);
  return 0;
}

void vmt__vms_thread_attached(vmt_thread_t *t) {
  /* Only the thread itself can match its own token: no other writer races this. */
  if (atomic_load_explicit(&vmt__sp_owner, memory_order_relaxed) != vmt__sp_token(NULL)) return;
  atomic_store_explicit(&sp_holder, t, memory_order_relaxed);
  atomic_store_explicit(&vmt__sp_owner, vmt__sp_token(t), memory_order_relaxed);
}

bool vmt_safepoint_in_progress(void) {
  return atomic_load_explicit(&vmt__sp_word, memory_order_acquire) & VMT__SP_ACTIVE;
}

/* ---- Fork ------------------------------------------------------------------------------ */
static void sp_fork_child(void) {
  vmt_thread_t *self = vmt__current;
  if (atomic_load_explicit(&vmt__sp_owner, memory_order_relaxed) == vmt__sp_token(self)) {
    /* The forking thread holds the safepoint: it still does, over a process of one thread.
     * Its sp_lock is held by the same thread in the child. Nobody waits on the word here. */
    atomic_fetch_and_explicit(&vmt__sp_word, ~VMT__SP_WAITERS, memory_order_relaxed);
  } else {
    atomic_store_explicit(&sp_lock, 0, memory_order_relaxed);
    atomic_store_explicit(&sp_holder, NULL, memory_order_relaxed);
    atomic_store_explicit(&vmt__sp_owner, 0, memory_order_relaxed);
    atomic_fetch_and_explicit(&vmt__sp_word, ~(VMT__SP_ACTIVE | VMT__SP_WAITERS),
                              memory_order_relaxed);
  }
  atomic_store_explicit(&sp_remaining, 0, memory_order_relaxed);
  atomic_store_explicit(&hs_inflight, 0, memory_order_relaxed);
}
VMT__PROCESS_STATE(safepoint,
                   .symbols = "vmt__sp_word vmt__sp_owner sp_lock sp_remaining sp_last "
                              "hs_inflight sp_count sp_cur sp_holder",
                   .rule = VMT__FORK_RESET,
                   .fork = "a safepoint another thread held is over (its coordinator is not "
                           "there; sp_lock re-initialised, the word cleared); one the forking "
                           "thread holds stays held by it; no arrival nor processor is counted",
                   .rank = VMT__RANK_VMSERVICES + 2, .child = sp_fork_child);
