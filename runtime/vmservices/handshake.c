/*
 * runtime/vmservices/handshake.c: operations run on a thread at a safe point (HotSpot's
 * Handshake, ART's checkpoints): queued under the target's lock; run by the target itself
 * when it is in managed or VM code (at its next poll or transition), or by the requester on
 * its behalf while it is in a safe state, holding it there (PROCESSING) until done; the
 * DESIGN paragraph in vmservices_impl.h has the protocol.
 *
 * The requester waits in BLOCKED: another thread can handshake it, suspend it or reach a
 * safepoint meanwhile, and two threads that handshake each other process each other's
 * operation. It spins VMT__VMS_SPIN_NS, retrying the processing whenever the target shows a
 * safe state, then sleeps on the node's futex word, which whoever completes the node wakes.
 * While a safepoint holds, safe threads are processed by nobody but its coordinator: the
 * requester sleeps until the end (one broadcast) and retries.
 */
#include <pthread.h>
#include <stdlib.h>

#include "runtime/vmservices/vmservices_impl.h"

/* Runs one operation with cancellation off. An operation is the VM's code and may reach a
 * cancellation point (a log write, as a stack walker may); none of the calls it runs inside
 * is one (docs/design.md, "Cancellation"), and a thread unwound from inside it would leave its
 * node never completed (its requester waits forever) or, on a requester processing for a safe
 * target, PROCESSING set and the processor counted for good (the target could never leave its
 * safe state, no safepoint could begin). A cancellation pending is acted upon at the thread's
 * next cancellation point. Two pthread_setcancelstate calls: a few ns, on the slow path. */
_Thread_local int vmt__hs_op_depth __attribute__((tls_model("initial-exec")));
VMT__PROCESS_STATE(hs_op_depth, .symbols = "vmt__hs_op_depth", .rule = VMT__FORK_KEEP,
                   .fork = "per thread: the child's one thread is inside the operations it was "
                           "inside when it forked, and returns from them there");

static void run_fn(vmt_handshake_fn fn, vmt_thread_t *t, void *arg) {
  int old_cancel;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old_cancel);
  vmt__hs_op_depth++;
  fn(t, arg);
  vmt__hs_op_depth--;
  pthread_setcancelstate(old_cancel, NULL);
}

void vmt__straggler_fill(vmt_straggler_t *s, const vmt_thread_t *t, int64_t waited_ns) {
  if (s == NULL) return;
  s->thread_id = t ? t->id : 0;
  s->exec_state = t ? vmt__exec_state_of(t) : 0;
  int64_t last = t ? atomic_load_explicit(&((vmt_thread_t *)t)->vms.last_safe_ns,
                                          memory_order_relaxed)
                   : 0;
  s->since_safe_ns = last ? vmt_os_elapsed_nanos() - last : -1;
  s->waited_ns = waited_ns;
}

void vmt__hs_complete(struct vmt__hs_node *n, int32_t result, bool by_target) {
  n->result = result;
  n->by_target = by_target;
  vmt__hs_group_t *g = n->group;
  if (g) {
    if (result == 0)
      atomic_fetch_add_explicit(by_target ? &g->by_targets : &g->by_requester, 1,
                                memory_order_relaxed);
    atomic_store_explicit(&n->done, VMT__NODE_DONE, memory_order_release);
    uint32_t r = atomic_fetch_sub_explicit(&g->pending, 1, memory_order_acq_rel);
    if (r == (VMT__GROUP_SLEEPING | 1u)) vmt_os_futex_wake(&g->pending, 1);
    return;
  }
  if (atomic_exchange_explicit(&n->done, VMT__NODE_DONE, memory_order_acq_rel) ==
      VMT__NODE_SLEEPING)
    vmt_os_futex_wake(&n->done, 1);
}

static void run_node(vmt_thread_t *t, struct vmt__hs_node *n, bool by_target) {
  run_fn(n->fn, t, n->arg);
  if (n->async)
    free(n);
  else
    vmt__hs_complete(n, 0, by_target);
}

int vmt__hs_push(vmt_thread_t *t, struct vmt__hs_node *n) {
  n->next = NULL;
  n->target = t;
  atomic_store_explicit(&n->done, VMT__NODE_PENDING, memory_order_relaxed);
  vmt_os_futex_lock(&t->vms.queue_lock);
  if ((atomic_load_explicit(&t->exec, memory_order_relaxed) & VMT__EXEC_STATE_MASK) ==
      VMT_EXEC_EXITED) {
    vmt_os_futex_unlock(&t->vms.queue_lock);
    return -ESRCH;
  }
  if (t->vms.queue_tail)
    t->vms.queue_tail->next = n;
  else
    t->vms.queue_head = n;
  t->vms.queue_tail = n;
  atomic_fetch_or_explicit(&t->exec, VMT__EXEC_HANDSHAKE, memory_order_seq_cst);
  vmt_os_futex_unlock(&t->vms.queue_lock);
  return 0;
}

/* Unlinks n from t's queue if it is still there (nobody has started it). */
static bool take_back(vmt_thread_t *t, struct vmt__hs_node *n) {
  bool found = false;
  vmt_os_futex_lock(&t->vms.queue_lock);
  struct vmt__hs_node *prev = NULL;
  for (struct vmt__hs_node *p = t->vms.queue_head; p; prev = p, p = p->next) {
    if (p != n) continue;
    if (prev)
      prev->next = n->next;
    else
      t->vms.queue_head = n->next;
    if (t->vms.queue_tail == n) t->vms.queue_tail = prev;
    if (t->vms.queue_head == NULL)
      atomic_fetch_and_explicit(&t->exec, ~VMT__EXEC_HANDSHAKE, memory_order_relaxed);
    found = true;
    break;
  }
  vmt_os_futex_unlock(&t->vms.queue_lock);
  return found;
}

void vmt__hs_wake_requesters(vmt_thread_t *t) {
  vmt_os_futex_lock(&t->vms.queue_lock);
  for (struct vmt__hs_node *p = t->vms.queue_head; p; p = p->next) {
    if (p->async) continue;
    if (p->group)
      vmt_os_futex_wake(&p->group->pending, 1);
    else if (atomic_load_explicit(&p->done, memory_order_relaxed) == VMT__NODE_SLEEPING)
      vmt_os_futex_wake(&p->done, 1);
  }
  vmt_os_futex_unlock(&t->vms.queue_lock);
}

void vmt__hs_process_own(vmt_thread_t *t) {
  vmt_os_futex_lock(&t->vms.queue_lock);
  struct vmt__hs_node *n = t->vms.queue_head;
  /* The first node's line (its requester's, who wrote it) is fetched while the word and the
   * lock are written, with intent to write: the run ends writing its result and done. */
  if (n) __builtin_prefetch(n, 1, 3);
  t->vms.queue_head = t->vms.queue_tail = NULL;
  atomic_fetch_and_explicit(&t->exec, ~VMT__EXEC_HANDSHAKE, memory_order_acq_rel);
  vmt_os_futex_unlock(&t->vms.queue_lock);
  t->vms.ops_depth++;
  while (n) {
    struct vmt__hs_node *next = n->next;   /* n may vanish once completed */
    run_node(t, n, true);
    n = next;
  }
  t->vms.ops_depth--;
  vmt__prof_poll(t);   /* the profiler's cooperative sample, if its handler left one */
}

enum { TP_NOT_SAFE = 0, TP_PROCESSED, TP_SAFEPOINT };

/* Takes the synchronous operations out of t's queue, keeping the asynchronous ones (the
 * target's own) in order; under queue_lock. */
static struct vmt__hs_node *take_sync(vmt_thread_t *t) {
  struct vmt__hs_node *sync = NULL, **sync_tail = &sync;
  struct vmt__hs_node *keep = NULL, *keep_tail = NULL;
  for (struct vmt__hs_node *p = t->vms.queue_head, *next; p; p = next) {
    next = p->next;
    p->next = NULL;
    if (p->async) {
      if (keep_tail)
        keep_tail->next = p;
      else
        keep = p;
      keep_tail = p;
    } else {
      *sync_tail = p;
      sync_tail = &p->next;
    }
  }
  t->vms.queue_head = keep;
  t->vms.queue_tail = keep_tail;
  return sync;
}

/* The requester self runs t's synchronous operations while t is safe (HotSpot's
 * try_process). TP_SAFEPOINT: a safepoint holds, only its coordinator may do this now. */
static int try_process(vmt_thread_t *t, vmt_thread_t *self) {
  uint32_t w = atomic_load_explicit(&t->exec, memory_order_acquire);
  if (!(w & VMT__EXEC_HANDSHAKE) || (w & VMT__EXEC_PROCESSING) ||
      !vmt__exec_is_safe(w & VMT__EXEC_STATE_MASK))
    return TP_NOT_SAFE;
  if (!vmt__sp_processing_begin(self)) return TP_SAFEPOINT;
  int rc = TP_NOT_SAFE;
  vmt_os_futex_lock(&t->vms.queue_lock);
  w = atomic_load_explicit(&t->exec, memory_order_relaxed);
  for (;;) {
    if (!(w & VMT__EXEC_HANDSHAKE) || (w & VMT__EXEC_PROCESSING) ||
        !vmt__exec_is_safe(w & VMT__EXEC_STATE_MASK))
      goto out;
    /* The CAS requires the safe state it read: from here the thread cannot leave it. */
    if (atomic_compare_exchange_weak_explicit(&t->exec, &w, w | VMT__EXEC_PROCESSING,
                                              memory_order_seq_cst, memory_order_relaxed))
      break;
  }
  /* TP_PROCESSED only if an operation ran: a safe target whose queue holds none of ours (it
   * runs ours itself, inside which it entered a safe state; only asynchronous ones or the
   * profiler's flag are left) is no progress, and the caller must go on to spin and sleep
   * instead of retrying at once forever. */
  for (;;) {
    struct vmt__hs_node *n = take_sync(t);
    if (n == NULL) break;
    rc = TP_PROCESSED;
    vmt_os_futex_unlock(&t->vms.queue_lock);
    while (n) {
      struct vmt__hs_node *next = n->next;
      run_node(t, n, false);
      n = next;
    }
    vmt_os_futex_lock(&t->vms.queue_lock);
  }
  /* Let go, under the lock so that no push slips between "queue empty" and the clear. */
  uint32_t clear = VMT__EXEC_PROCESSING | VMT__EXEC_WAITER;
  if (t->vms.queue_head == NULL) clear |= VMT__EXEC_HANDSHAKE;
  w = atomic_fetch_and_explicit(&t->exec, ~clear, memory_order_seq_cst);
  if (w & VMT__EXEC_WAITER) vmt_os_futex_wake(&t->exec, 1);
out:
  vmt_os_futex_unlock(&t->vms.queue_lock);
  vmt__sp_processing_end(self);
  return rc;
}

/* Whether t shows a state in which a requester could process it. */
static inline bool looks_processable(vmt_thread_t *t) {
  uint32_t w = atomic_load_explicit(&t->exec, memory_order_relaxed);
  return (w & VMT__EXEC_HANDSHAKE) && !(w & VMT__EXEC_PROCESSING) &&
         vmt__exec_is_safe(w & VMT__EXEC_STATE_MASK);
}

int vmt__hs_wait(vmt_thread_t *self, struct vmt__hs_node *n, int64_t deadline) {
  vmt_thread_t *t = n->target;
  int64_t spin_start = vmt_os_elapsed_nanos();
  bool spinning = true;
  for (;;) {
    if (atomic_load_explicit(&n->done, memory_order_acquire) == VMT__NODE_DONE) return 0;
    int tp = looks_processable(t) ? try_process(t, self) : TP_NOT_SAFE;
    if (tp == TP_PROCESSED) continue;
    int rc = 0;
    if (tp == TP_SAFEPOINT) {
      rc = vmt__sp_wait_end(deadline);
    } else if (spinning) {
      spinning = vmt__vms_spin_turn(spin_start);
      continue;
    } else {
      uint32_t expected = VMT__NODE_PENDING;
      if (!atomic_compare_exchange_strong_explicit(&n->done, &expected, VMT__NODE_SLEEPING,
                                                   memory_order_acq_rel,
                                                   memory_order_acquire) &&
          expected == VMT__NODE_DONE)
        return 0;
      if (deadline != VMT_OS_NO_DEADLINE && vmt_os_java_time_nanos() >= deadline)
        rc = -ETIMEDOUT;
      else if (vmt_os_futex_wait(&n->done, VMT__NODE_SLEEPING, deadline) == -ETIMEDOUT)
        rc = -ETIMEDOUT;
    }
    if (rc != -ETIMEDOUT) continue;
    if (atomic_load_explicit(&n->done, memory_order_acquire) == VMT__NODE_DONE) return 0;
    if (take_back(t, n)) return -ETIMEDOUT;
    /* Started by the target or a processor: it completes soon (fn is short by contract). */
    deadline = VMT_OS_NO_DEADLINE;
  }
}

static int check_timeout(int64_t timeout_ns) { return timeout_ns < 0 ? -EINVAL : 0; }

/* The request itself, for a target whose record the caller keeps from reuse. */
static int run_on(vmt_thread_t *self, vmt_thread_t *target, vmt_handshake_fn fn, void *arg,
                  int64_t timeout_ns, vmt_handshake_result_t *result) {
  int64_t start = vmt_os_java_time_nanos();
  int64_t deadline = vmt__vms_deadline(timeout_ns);
  int saved = vmt__region_enter(self);
  /* One line: the target (or a processor) reads fn and arg and writes the result and done,
   * one miss for it and one for the requester's read of done, where a node across two lines
   * would cost each of them one more. */
  _Alignas(64) struct vmt__hs_node n = {.fn = fn, .arg = arg};
  int rc = vmt__hs_push(target, &n);
  if (rc == 0) rc = vmt__hs_wait(self, &n, deadline);
  if (rc == 0) rc = n.result;
  if (rc == 0 && result) {
    result->by_target = n.by_target;
    result->by_targets = n.by_target;
    result->by_requester = !n.by_target;
  }
  if (rc == -ETIMEDOUT && result)
    vmt__straggler_fill(&result->straggler, target, vmt_os_java_time_nanos() - start);
  vmt__region_leave(self, saved, NULL);
  return rc;
}

static void run_own(vmt_thread_t *self, vmt_handshake_fn fn, void *arg,
                    vmt_handshake_result_t *result) {
  run_fn(fn, self, arg);
  if (result) {
    result->by_target = true;
    result->by_targets = 1;
  }
}

int vmt_handshake_run(vmt_thread_t *target, vmt_handshake_fn fn, void *arg, int64_t timeout_ns,
                      vmt_handshake_result_t *result) {
  if (target == NULL || fn == NULL || check_timeout(timeout_ns)) return -EINVAL;
  if (result) *result = (vmt_handshake_result_t){0};
  vmt_thread_t *self = vmt__current;
  if (target == self) {
    run_own(self, fn, arg, result);
    return 0;
  }
  /* The target's queue line, which its last run of its queue wrote, is fetched for the push
   * while the handle is checked (the checks read the poll word's line, another miss): a
   * prefetch cannot fault, whatever the handle. */
  __builtin_prefetch(&target->vms.queue_lock, 1, 3);
  if (!vmt__record_ref_if_live(target)) return -EINVAL;
  int rc = run_on(self, target, fn, arg, timeout_ns, result);
  vmt__record_unref(target);
  return rc;
}

int vmt__hs_run_kept(vmt_thread_t *target, vmt_handshake_fn fn, void *arg, int64_t timeout_ns,
                     vmt_handshake_result_t *result) {
  if (result) *result = (vmt_handshake_result_t){0};
  vmt_thread_t *self = vmt__current;
  if (target == self) {
    run_own(self, fn, arg, result);
    return 0;
  }
  __builtin_prefetch(&target->vms.queue_lock, 1, 3);
  return run_on(self, target, fn, arg, timeout_ns, result);
}

int vmt_handshake_post(vmt_thread_t *target, vmt_handshake_fn fn, void *arg) {
  if (target == NULL || fn == NULL) return -EINVAL;
  if (!vmt__record_ref_if_live(target)) return -EINVAL;
  struct vmt__hs_node *n =
      vmt__fault_hit(VMT__FAULT_ALLOC) ? NULL : calloc(1, sizeof(*n));
  int rc = -ENOMEM;
  if (n) {
    n->fn = fn;
    n->arg = arg;
    n->async = true;
    rc = vmt__hs_push(target, n);
    if (rc) free(n);
  }
  vmt__record_unref(target);
  return rc;
}

int vmt__hs_run_group(vmt_thread_t *self, struct vmt__hs_node *nodes, size_t n,
                      vmt_handshake_fn fn, void *arg, int64_t deadline,
                      vmt_handshake_result_t *result) {
  int64_t start = vmt_os_java_time_nanos();
  vmt__hs_group_t g = {0};
  atomic_store_explicit(&g.pending, 1, memory_order_relaxed);   /* ours, until all are queued */
  for (size_t i = 0; i < n; i++) {
    nodes[i].fn = fn;
    nodes[i].arg = arg;
    nodes[i].group = &g;
    atomic_fetch_add_explicit(&g.pending, 1, memory_order_relaxed);
    if (vmt__hs_push(nodes[i].target, &nodes[i]) != 0) {
      /* Exited: it is skipped, as if it had never been there. */
      nodes[i].result = -ESRCH;
      atomic_store_explicit(&nodes[i].done, VMT__NODE_DONE, memory_order_relaxed);
      atomic_fetch_sub_explicit(&g.pending, 1, memory_order_relaxed);
    }
  }
  for (size_t i = 0; i < n; i++)
    if (looks_processable(nodes[i].target)) try_process(nodes[i].target, self);
  atomic_fetch_sub_explicit(&g.pending, 1, memory_order_acq_rel);
  int rc = 0;
  int64_t spin_start = vmt_os_elapsed_nanos();
  bool spinning = true;
  size_t scan = 0;   /* nodes before it are done */
  for (;;) {
    uint32_t p = atomic_load_explicit(&g.pending, memory_order_acquire);
    if ((p & ~VMT__GROUP_SLEEPING) == 0) break;
    /* Process whoever has become safe since: cheap, one load per pending target. */
    int tp = TP_NOT_SAFE;
    while (scan < n && atomic_load_explicit(&nodes[scan].done, memory_order_acquire) ==
                           VMT__NODE_DONE)
      scan++;
    for (size_t i = scan; i < n && tp != TP_SAFEPOINT; i++)
      if (atomic_load_explicit(&nodes[i].done, memory_order_acquire) != VMT__NODE_DONE &&
          looks_processable(nodes[i].target))
        tp = try_process(nodes[i].target, self);
    if (tp == TP_PROCESSED) continue;
    int wrc = 0;
    if (tp == TP_SAFEPOINT) {
      wrc = vmt__sp_wait_end(deadline);
    } else if (spinning && (spinning = vmt__vms_spin_turn(spin_start))) {
      continue;
    } else if (!(p & VMT__GROUP_SLEEPING)) {
      atomic_compare_exchange_strong_explicit(&g.pending, &p, p | VMT__GROUP_SLEEPING,
                                              memory_order_acq_rel, memory_order_relaxed);
      continue;
    } else if (deadline != VMT_OS_NO_DEADLINE && vmt_os_java_time_nanos() >= deadline) {
      wrc = -ETIMEDOUT;
    } else {
      wrc = vmt_os_futex_wait(&g.pending, p, deadline);
    }
    if (wrc != -ETIMEDOUT) continue;
    /* Give up: take back what nobody started, then wait for what is running. */
    rc = -ETIMEDOUT;
    bool named = false;
    for (size_t i = 0; i < n; i++) {
      if (atomic_load_explicit(&nodes[i].done, memory_order_acquire) == VMT__NODE_DONE) continue;
      if (take_back(nodes[i].target, &nodes[i])) {
        nodes[i].result = -ETIMEDOUT;
        if (!named && result) {
          vmt__straggler_fill(&result->straggler, nodes[i].target,
                              vmt_os_java_time_nanos() - start);
          named = true;
        }
        atomic_store_explicit(&nodes[i].done, VMT__NODE_DONE, memory_order_release);
        atomic_fetch_sub_explicit(&g.pending, 1, memory_order_acq_rel);
      }
    }
    deadline = VMT_OS_NO_DEADLINE;
  }
  if (result) {
    result->by_targets = atomic_load_explicit(&g.by_targets, memory_order_relaxed);
    result->by_requester = atomic_load_explicit(&g.by_requester, memory_order_relaxed);
  }
  return rc;
}

int vmt_handshake_run_all(vmt_handshake_fn fn, void *arg, int64_t timeout_ns,
                          vmt_handshake_result_t *result) {
  if (fn == NULL || check_timeout(timeout_ns)) return -EINVAL;
  if (result) *result = (vmt_handshake_result_t){0};
  int64_t deadline = vmt__vms_deadline(timeout_ns);
  vmt_thread_t *self = vmt__current;
  const vmt__snapshot_t *snap = vmt__registry_acquire();
  if (snap == NULL) return -ENOMEM;
  struct vmt__hs_node *nodes =
      vmt__fault_hit(VMT__FAULT_ALLOC) ? NULL : calloc(snap->count + 1, sizeof(*nodes));
  if (nodes == NULL) {
    vmt__registry_release(snap);
    return -ENOMEM;
  }
  size_t n = 0;
  for (size_t i = 0; i < snap->count; i++) {
    vmt_thread_t *t = snap->threads[i];
    if (t != self && vmt__thread_is_listed(t)) nodes[n++].target = t;
  }
  int saved = vmt__region_enter(self);
  int rc = vmt__hs_run_group(self, nodes, n, fn, arg, deadline, result);
  vmt__region_leave(self, saved, NULL);
  if (self && vmt__thread_is_listed(self)) {
    run_fn(fn, self, arg);
    if (result) result->by_targets++;
  }
  free(nodes);
  vmt__registry_release(snap);
  return rc;
}
