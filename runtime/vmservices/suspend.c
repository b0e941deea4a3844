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
 * Suspend-all (ART's SuspendAll / ResumeAll and Register). The members are the started (not
 * internal) and attached threads from their registration (vmt__vms_thread_registered: before
 * pthread_create, or in attach) until they are exiting, on a list through their records. A
 * suspend-all, under the lock, counts every member but its caller and adds one to sa.counts;
 * a thread registering takes sa.counts under the same lock. So a thread registers before the
 * walk (counted by it) or after (counted by sa.counts), never both, never neither; resume_all
 * (and a suspend-all that times out) takes one off sa.counts and one off every member with a
 * count for the reason. The walk reads no registry snapshot: it needs none of the records'
 * fields but the suspension's, and it holds a reference on each member it must wait for.
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

/* A futex lock (vmservices_impl.h), held for a few stores (or one walk of the members) at a
 * time. */
_Atomic uint32_t vmt__suspend_lock;

/* The suspend-alls in effect (under vmt__suspend_lock): how many per reason, and the threads
 * they count, linked through their records from registration to exiting. */
static struct {
  int32_t counts[VMT_SUSPEND_REASON_COUNT];
  vmt_thread_t *members;
  _Atomic size_t member_count;   /* written under the lock; read before it to size arrays */
} sa;

static void suspend_fork_prepare(void) { vmt_os_futex_lock(&vmt__suspend_lock); }
static void suspend_fork_parent(void) { vmt_os_futex_unlock(&vmt__suspend_lock); }
static void suspend_fork_child(void) {
  /* Only the forking thread is left; no suspension survives fork (lifecycle.c zeroes its own
   * counts), so no suspend-all is in effect in the child either. */
  vmt_thread_t *self = vmt__current;
  for (int i = 0; i < VMT_SUSPEND_REASON_COUNT; i++) sa.counts[i] = 0;
  sa.members = NULL;
  atomic_store_explicit(&sa.member_count, 0, memory_order_relaxed);
  if (self && self->vms.member) {
    self->vms.member_prev = self->vms.member_next = NULL;
    sa.members = self;
    atomic_store_explicit(&sa.member_count, 1, memory_order_relaxed);
  }
  atomic_store_explicit(&vmt__suspend_lock, 0, memory_order_relaxed);
}
VMT__PROCESS_STATE(suspend_lock, .symbols = "vmt__suspend_lock sa", .rule = VMT__FORK_HOLD,
                   .fork = "held across fork (its holders only count, OR a flag and walk the "
                           "members), fresh in the child; the suspend-alls in effect are over "
                           "there and the members are the forking thread alone, if it was one; "
                           "the counts it guards are the records' (lifecycle.c)",
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

/* Under the lock: whether one more suspend-all of reason would overflow the count it hands
 * newcomers (for reason, or their total). */
static bool sa_full(vmt_suspend_reason_t reason) {
  int64_t total = 0;
  for (int i = 0; i < VMT_SUSPEND_REASON_COUNT; i++) total += sa.counts[i];
  return sa.counts[reason] == INT32_MAX || total >= INT32_MAX;
}

/* Under the lock: one off reason's count of every member but self that has one (a suspend-all's
 * own, handed out by its walk or at registration). Returns how many. */
static int sa_release(vmt_thread_t *self, vmt_suspend_reason_t reason) {
  int released = 0;
  for (vmt_thread_t *t = sa.members; t; t = t->vms.member_next) {
    if (t == self || t->vms.suspend_counts[reason] <= 0) continue;
    count_down(t, reason);
    released++;
  }
  return released;
}

int vmt_thread_suspend_all(vmt_suspend_reason_t reason, int64_t timeout_ns,
                           vmt_straggler_t *straggler) {
  if (!reason_ok(reason) || timeout_ns < 0) return -EINVAL;
  if (straggler) *straggler = (vmt_straggler_t){0};
  int64_t deadline = vmt__vms_deadline(timeout_ns);
  vmt_thread_t *self = vmt__current;
  /* nodes[0..r): the members found running, each with a reference (taken under the lock,
   * while the member cannot have passed its exit: the thread's own is still held). Sized
   * before the lock (no allocation under it: a fork's prepare may hold the allocator's locks
   * and wait for ours), again if more threads registered meanwhile. */
  struct vmt__hs_node *nodes = NULL;
  size_t cap = 0, r = 0;
  int rc = 0;
  for (;;) {
    size_t want = atomic_load_explicit(&sa.member_count, memory_order_relaxed) + 8;
    if (want > cap) {
      free(nodes);
      cap = want + want / 4;
      nodes = vmt__fault_hit(VMT__FAULT_ALLOC) ? NULL : calloc(cap, sizeof(*nodes));
      if (nodes == NULL) return -ENOMEM;
    }
    vmt_os_futex_lock(&vmt__suspend_lock);
    if (atomic_load_explicit(&sa.member_count, memory_order_relaxed) <= cap) break;
    vmt_os_futex_unlock(&vmt__suspend_lock);
  }
  if (self_suspended(self)) {
    rc = -EDEADLK;
  } else if (sa_full(reason)) {
    rc = -EOVERFLOW;
  } else {
    for (vmt_thread_t *t = sa.members; t; t = t->vms.member_next)
      if (t != self && count_full(t, reason)) rc = -EOVERFLOW;
  }
  if (rc == 0) {
    /* Every member is counted here, every thread that registers from now on at its
     * registration: under one lock, so none is missed and none is counted twice. */
    sa.counts[reason]++;
    for (vmt_thread_t *t = sa.members; t; t = t->vms.member_next) {
      if (t == self) continue;
      uint32_t s = count_up(t, reason) & VMT__EXEC_STATE_MASK;
      if (!vmt__exec_is_safe(s) && vmt__record_ref_if_live(t)) nodes[r++].target = t;
    }
  }
  vmt_os_futex_unlock(&vmt__suspend_lock);
  if (rc == 0 && r > 0) {
    vmt_handshake_result_t res = {0};
    int saved = vmt__region_enter(self);
    rc = vmt__hs_run_group(self, nodes, r, noop, NULL, deadline, &res);
    vmt__region_leave(self, saved, NULL);
    if (rc == -ETIMEDOUT && straggler) *straggler = res.straggler;
  }
  if (rc == -ETIMEDOUT) {
    /* Taken back as resume_all would: every member now holds one count of this call (those
     * that registered meanwhile got theirs from sa.counts; those exiting meanwhile dropped
     * theirs and left). */
    vmt_os_futex_lock(&vmt__suspend_lock);
    if (sa.counts[reason] > 0) sa.counts[reason]--;   /* unless a resume_all took it */
    sa_release(self, reason);
    vmt_os_futex_unlock(&vmt__suspend_lock);
  }
  for (size_t i = 0; i < r; i++) vmt__record_unref(nodes[i].target);
  free(nodes);
  return rc;
}

int vmt_thread_resume_all(vmt_suspend_reason_t reason) {
  if (!reason_ok(reason)) return -EINVAL;
  vmt_thread_t *self = vmt__current;
  vmt_os_futex_lock(&vmt__suspend_lock);
  if (sa.counts[reason] > 0) sa.counts[reason]--;
  int resumed = sa_release(self, reason);
  vmt_os_futex_unlock(&vmt__suspend_lock);
  return resumed;
}

/* Under the lock: t leaves the members and every suspension (its counts are dropped). */
static void leave_locked(vmt_thread_t *t) {
  if (t->vms.member) {
    if (t->vms.member_prev)
      t->vms.member_prev->vms.member_next = t->vms.member_next;
    else
      sa.members = t->vms.member_next;
    if (t->vms.member_next) t->vms.member_next->vms.member_prev = t->vms.member_prev;
    t->vms.member_prev = t->vms.member_next = NULL;
    t->vms.member = false;
    atomic_store_explicit(&sa.member_count,
                          atomic_load_explicit(&sa.member_count, memory_order_relaxed) - 1,
                          memory_order_relaxed);
  }
  t->vms.exiting = true;
  for (int i = 0; i < VMT_SUSPEND_REASON_COUNT; i++) t->vms.suspend_counts[i] = 0;
  atomic_store_explicit(&t->vms.suspend_total, 0, memory_order_release);
  atomic_fetch_and_explicit(&t->exec, ~VMT__EXEC_SUSPEND, memory_order_seq_cst);
}

void vmt__vms_thread_registered(vmt_thread_t *t) {
  vmt_os_futex_lock(&vmt__suspend_lock);
  t->vms.member = true;
  t->vms.member_prev = NULL;
  t->vms.member_next = sa.members;
  if (sa.members) sa.members->vms.member_prev = t;
  sa.members = t;
  atomic_store_explicit(&sa.member_count,
                        atomic_load_explicit(&sa.member_count, memory_order_relaxed) + 1,
                        memory_order_relaxed);
  /* The counts of the suspend-alls in effect (sa_full kept them and their sum in range). */
  int32_t total = atomic_load_explicit(&t->vms.suspend_total, memory_order_relaxed);
  for (int i = 0; i < VMT_SUSPEND_REASON_COUNT; i++) {
    t->vms.suspend_counts[i] += sa.counts[i];
    total += sa.counts[i];
  }
  atomic_store_explicit(&t->vms.suspend_total, total, memory_order_release);
  if (total > 0) atomic_fetch_or_explicit(&t->exec, VMT__EXEC_SUSPEND, memory_order_seq_cst);
  vmt_os_futex_unlock(&vmt__suspend_lock);
}

void vmt__vms_thread_start_failed(vmt_thread_t *t) { vmt__suspend_leave(t); }

void vmt__suspend_leave(vmt_thread_t *t) {
  vmt_os_futex_lock(&vmt__suspend_lock);
  leave_locked(t);
  vmt_os_futex_unlock(&vmt__suspend_lock);
}
