/*
 * runtime/vmservices/suspend.c: suspension on top of the exec word and handshakes (JVMTI
 * SuspendThread / ResumeThread, Thread.suspend, ART's SuspendAll).
 *
 * Counts per reason change under one process-wide lock, which is also what makes ART's rule
 * hold: a requester reads its own count under the same lock that raises its target's, so of
 * two threads suspending each other the second sees itself suspended and is refused
 * (-EDEADLK) instead of both waiting forever. SUSPEND is set in the target's word while its
 * total is > 0; the atomic OR returns the state it found:
 * - safe: nothing more to do, the thread cannot leave that state (one atomic, no wait);
 * - managed or VM code: a no-op handshake; the target runs it at its next poll or transition
 *   and then stops there itself (BLOCKED, waiting on its own word), so when the handshake
 *   returns the target will not run managed code again until resumed.
 * Resume clears SUSPEND with the last count and wakes the thread only if it sleeps on its word.
 *
 * Exit (HotSpot's "careful dance between thread suspension and exit", JavaThread::exit). Past
 * its exit hooks and TLS destructors a thread runs only the runtime's bookkeeping: it reaches
 * no poll and no transition out of a safe state where it could stop, and its one last
 * processing of operations (vmt__vms_thread_exit_end) cannot hold it. So there, in VM code, it
 * marks itself exiting under the suspension lock and drops its counts: those are suspends whose
 * no-op operation it has not run yet (any earlier one holds it: it can leave neither a safe
 * state nor a poll while counted). Their requesters find the mark once the operation has run
 * and answer -ESRCH without a count to take back; later suspends and resumes answer -ESRCH at
 * once. A thread that a hook left in a safe state goes back into VM code first, which waits
 * while it is suspended (it is still alive there).
 */
#include <stdlib.h>

#include "runtime/vmservices/vmservices_impl.h"

/* A futex lock (vmservices_impl.h), held for a few stores at a time. */
_Atomic uint32_t vmt__suspend_lock;
static void suspend_fork_prepare(void) { vmt_os_futex_lock(&vmt__suspend_lock); }
static void suspend_fork_parent(void) { vmt_os_futex_unlock(&vmt__suspend_lock); }
static void suspend_fork_child(void) {
  atomic_store_explicit(&vmt__suspend_lock, 0, memory_order_relaxed);
}
VMT__PROCESS_STATE(suspend_lock, .symbols = "vmt__suspend_lock", .rule = VMT__FORK_HOLD,
                   .fork = "held across fork (its holders only count and OR a flag), fresh in "
                           "the child; the counts it guards are the records' (lifecycle.c)",
                   .rank = VMT__RANK_VMSERVICES + 1, .prepare = suspend_fork_prepare,
                   .parent = suspend_fork_parent, .child = suspend_fork_child);

static bool reason_ok(vmt_suspend_reason_t reason) {
  return (unsigned)reason < VMT_SUSPEND_REASON_COUNT;
}

/* Under vmt__suspend_lock. Returns the exec word as SUSPEND was set (or found set). */
static uint32_t count_up(vmt_thread_t *t, vmt_suspend_reason_t reason) {
  t->vms.suspend_counts[reason]++;
  int32_t total = atomic_load_explicit(&t->vms.suspend_total, memory_order_relaxed) + 1;
  atomic_store_explicit(&t->vms.suspend_total, total, memory_order_release);
  return atomic_fetch_or_explicit(&t->exec, VMT__EXEC_SUSPEND, memory_order_seq_cst);
}

/* Under vmt__suspend_lock; the caller checked the count is > 0. */
static void count_down(vmt_thread_t *t, vmt_suspend_reason_t reason) {
  t->vms.suspend_counts[reason]--;
  int32_t total = atomic_load_explicit(&t->vms.suspend_total, memory_order_relaxed) - 1;
  atomic_store_explicit(&t->vms.suspend_total, total, memory_order_release);
  if (total > 0) return;
  uint32_t old = atomic_fetch_and_explicit(&t->exec, ~(VMT__EXEC_SUSPEND | VMT__EXEC_WAITER),
                                           memory_order_seq_cst);
  if (old & VMT__EXEC_WAITER) vmt_os_futex_wake(&t->exec, 1);
}

/* Under vmt__suspend_lock: one more count for reason would overflow it or the total (the sum
 * of three counts, each of which may reach INT32_MAX alone). */
static bool count_full(const vmt_thread_t *t, vmt_suspend_reason_t reason) {
  return t->vms.suspend_counts[reason] == INT32_MAX ||
         atomic_load_explicit(&t->vms.suspend_total, memory_order_relaxed) == INT32_MAX;
}

static void noop(vmt_thread_t *t, void *arg) { (void)t, (void)arg; }

static bool self_suspended(vmt_thread_t *self) {
  return self && atomic_load_explicit(&self->vms.suspend_total, memory_order_relaxed) > 0;
}

int vmt_thread_suspend(vmt_thread_t *t, vmt_suspend_reason_t reason, int64_t timeout_ns,
                       vmt_straggler_t *straggler) {
  if (t == NULL || !reason_ok(reason) || timeout_ns < 0) return -EINVAL;
  if (straggler) *straggler = (vmt_straggler_t){0};
  if (!vmt__record_ref_if_live(t)) return -EINVAL;
  vmt_thread_t *self = vmt__current;
  vmt_os_futex_lock(&vmt__suspend_lock);
  int rc = 0;
  uint32_t w = 0;
  bool counted = false, waited = false;
  if (t->vms.exiting)
    rc = -ESRCH;
  else if (t != self && self_suspended(self))
    rc = -EDEADLK;
  else if (count_full(t, reason))
    rc = -EOVERFLOW;
  else
    w = count_up(t, reason), counted = true;
  vmt_os_futex_unlock(&vmt__suspend_lock);
  uint32_t state = w & VMT__EXEC_STATE_MASK;
  if (rc == 0 && state == VMT_EXEC_EXITED) rc = -ESRCH;
  if (rc == 0 && t == self) {
    /* Stops here until resumed if in managed or VM code; from native code it goes on. */
    if (!vmt__exec_is_safe(state)) vmt__exec_move_slow(self, state, NULL);
  } else if (rc == 0 && !vmt__exec_is_safe(state)) {
    vmt_handshake_result_t res;
    rc = vmt_handshake_run(t, noop, NULL, timeout_ns, &res);
    if (rc == -ETIMEDOUT && straggler) *straggler = res.straggler;
    waited = true;
  }
  if (counted && (rc != 0 || waited)) {
    /* Unless the thread became exiting while we waited for it (it dropped the count: no
     * stop is coming), the count stays on success and is taken back on failure. A count taken
     * while the thread was safe needs no look: it holds the thread before it can exit. */
    vmt_os_futex_lock(&vmt__suspend_lock);
    if (t->vms.exiting)
      rc = -ESRCH;
    else if (rc != 0)
      count_down(t, reason);
    vmt_os_futex_unlock(&vmt__suspend_lock);
  }
  vmt__record_unref(t);
  return rc;
}

int vmt_thread_resume(vmt_thread_t *t, vmt_suspend_reason_t reason) {
  if (t == NULL || !reason_ok(reason) || !vmt__record_ref_if_live(t)) return -EINVAL;
  int rc = 0;
  vmt_os_futex_lock(&vmt__suspend_lock);
  if (t->vms.exiting)
    rc = -ESRCH;
  else if (t->vms.suspend_counts[reason] <= 0)
    rc = -EINVAL;
  else
    count_down(t, reason);
  vmt_os_futex_unlock(&vmt__suspend_lock);
  vmt__record_unref(t);
  return rc;
}

int vmt_thread_suspend_count(const vmt_thread_t *t) {
  if (t == NULL || !vmt__handle_valid(t)) return -EINVAL;
  return atomic_load_explicit(&((vmt_thread_t *)t)->vms.suspend_total, memory_order_acquire);
}

int vmt_thread_suspend_all(vmt_suspend_reason_t reason, int64_t timeout_ns,
                           vmt_straggler_t *straggler) {
  if (!reason_ok(reason) || timeout_ns < 0) return -EINVAL;
  if (straggler) *straggler = (vmt_straggler_t){0};
  int64_t deadline = vmt__vms_deadline(timeout_ns);
  vmt_thread_t *self = vmt__current;
  const vmt__snapshot_t *snap = vmt__registry_acquire();
  if (snap == NULL) return -ENOMEM;
  /* counted[0..c): threads whose count we raised; nodes[0..r): those found running. */
  vmt_thread_t **counted =
      vmt__fault_hit(VMT__FAULT_ALLOC) ? NULL : calloc(snap->count + 1, sizeof(*counted));
  struct vmt__hs_node *nodes =
      counted == NULL ? NULL : calloc(snap->count + 1, sizeof(*nodes));
  if (nodes == NULL) {
    free(counted);
    vmt__registry_release(snap);
    return -ENOMEM;
  }
  size_t c = 0, r = 0;
  int rc = 0;
  vmt_os_futex_lock(&vmt__suspend_lock);
  if (self_suspended(self)) rc = -EDEADLK;
  for (size_t i = 0; rc == 0 && i < snap->count; i++) {
    vmt_thread_t *t = snap->threads[i];
    if (t == self || !vmt__thread_is_listed(t) || t->vms.exiting) continue;
    if (count_full(t, reason)) {
      rc = -EOVERFLOW;
      break;
    }
    uint32_t s = count_up(t, reason) & VMT__EXEC_STATE_MASK;
    counted[c++] = t;
    if (!vmt__exec_is_safe(s)) nodes[r++].target = t;
  }
  vmt_os_futex_unlock(&vmt__suspend_lock);
  if (rc == 0 && r > 0) {
    vmt_handshake_result_t res = {0};
    int saved = vmt__region_enter(self);
    rc = vmt__hs_run_group(self, nodes, r, noop, NULL, deadline, &res);
    vmt__region_leave(self, saved, NULL);
    if (rc == -ETIMEDOUT && straggler) *straggler = res.straggler;
  }
  if (rc != 0) {
    /* Those that became exiting meanwhile dropped their counts themselves. */
    vmt_os_futex_lock(&vmt__suspend_lock);
    for (size_t i = 0; i < c; i++)
      if (!counted[i]->vms.exiting) count_down(counted[i], reason);
    vmt_os_futex_unlock(&vmt__suspend_lock);
  }
  free(nodes);
  free(counted);
  vmt__registry_release(snap);
  return rc;
}

int vmt_thread_resume_all(vmt_suspend_reason_t reason) {
  if (!reason_ok(reason)) return -EINVAL;
  vmt_thread_t *self = vmt__current;
  const vmt__snapshot_t *snap = vmt__registry_acquire();
  if (snap == NULL) return -ENOMEM;
  int resumed = 0;
  vmt_os_futex_lock(&vmt__suspend_lock);
  for (size_t i = 0; i < snap->count; i++) {
    vmt_thread_t *t = snap->threads[i];
    if (t == self || t->vms.suspend_counts[reason] <= 0) continue;
    count_down(t, reason);
    resumed++;
  }
  vmt_os_futex_unlock(&vmt__suspend_lock);
  vmt__registry_release(snap);
  return resumed;
}

void vmt__vms_thread_exiting(vmt_thread_t *t) {
  if (vmt__exec_is_safe((uint32_t)vmt__exec_state_of(t))) vmt__exec_move(t, VMT_EXEC_VM, NULL);
  vmt_os_futex_lock(&vmt__suspend_lock);
  t->vms.exiting = true;
  for (int i = 0; i < VMT_SUSPEND_REASON_COUNT; i++) t->vms.suspend_counts[i] = 0;
  atomic_store_explicit(&t->vms.suspend_total, 0, memory_order_release);
  atomic_fetch_and_explicit(&t->exec, ~VMT__EXEC_SUSPEND, memory_order_seq_cst);
  vmt_os_futex_unlock(&vmt__suspend_lock);
}
