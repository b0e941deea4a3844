/*
 * runtime/sync/monitor_wait.c: Java's Object.wait / notify / notifyAll on vmthread monitors.
 *
 * The wait set is a FIFO of nodes on the waiters' stacks, linked and unlinked only by the
 * monitor's owner: wait links its node before releasing the monitor, notify unlinks under
 * ownership, and a waiter that left by itself unlinks its own node only after it has
 * re-entered. So the wait set needs no lock of its own, and a node is never touched after its
 * waiter returns (the waiter returns only once it owns the monitor again, and everyone else
 * touches nodes only while owning it). Each node carries its own futex word, so notify picks
 * exactly one thread. It does not wake it: the notifier still owns the monitor, and a waiter
 * woken now would only find it held and sleep again on the lock word (measured: 7 of 8
 * re-entries were contended, a round trip through wait/notify took 2.4x a pthread condition
 * variable's). notify hands the waiter to the lock instead: the node goes on the lock's handed
 * list, and the notifier's release of the monitor (its exit, or its own wait) wakes it on its
 * node once the word is free, the waiter's first and only wake-up, as HotSpot's exit unparks
 * the successor it moved from the wait set to the entry list. That is one syscall per
 * hand-off besides the waiter's sleep; requeueing it onto the lock word (FUTEX_CMP_REQUEUE) at
 * the notify and waking it from there at the exit made two, and a wait/notify round trip took
 * 5.0-6.4 us where a park/unpark round trip took 4.1-6.5 (docs/monitors.md). notify_all still requeues
 * every waiter onto the word ("wait morphing"): the exit then wakes one of them, whose own exit
 * wakes the next, instead of all of them at once.
 *
 * States (Java). WAITING or TIMED_WAITING with waiting_on set while waiting. A notified waiter
 * must get the monitor back from its notifier: it is BLOCKED on it from the notify on, which
 * counts as a blocked enter of the thread and a contended enter of the monitor, and its time
 * from there is blocked time. The waiter is asleep then, so the notifier writes that change
 * for it (vmt__episode_reenter), as HotSpot's INotify does; the node's state word makes the
 * notifier and the waiter agree on who ends the wait (sync_impl.h): a waiter that stops by
 * itself first (its timeout, or an interrupt) claims its node, is never picked by a notify,
 * and re-enters like any enter: BLOCKED and counted only if the monitor is owned then.
 *
 * Interrupts (Java's Object.wait): a status set at the call returns -EINTR at once, the
 * monitor never released. While waiting, the node is published in the waiter's record
 * (sync.wait_node), and vmt_thread_interrupt claims it for the waiter (WAITING -> LEFT) and
 * wakes it; the waiter re-enters, then returns -EINTR with the status cleared. A notify that
 * claimed the node first wins: the wait returns 0 and the status stays set. The node lives on
 * the waiter's stack, so interrupters count themselves in (sync.wait_users) before they read
 * the pointer, and the waiter, having cleared it, waits for them to be out before it returns.
 * Only the calling runtime thread's status counts: a waiter whose lock identity is not its
 * current record (a foreign thread's implicit identity, a detached thread's kept record) is
 * not interruptible, as a thread without record is not.
 */
#include <errno.h>
#include <sched.h>

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

/* The owner bumps a counter only owners write: no read-modify-write needed. */
static inline void owner_add(_Atomic uint64_t *counter, uint64_t n) {
  atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + n,
                        memory_order_relaxed);
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

/* The waiter stops waiting on its own (a timeout, an interrupt): true if it won the node. */
static bool leave(vmt__wait_node_t *node) {
  uint32_t expected = VMT__WAIT_WAITING;
  return atomic_compare_exchange_strong_explicit(&node->state, &expected, VMT__WAIT_LEFT,
                                                 memory_order_acquire, memory_order_acquire);
}

/* Sleeps until a notifier has finished with the node (NOTIFIED, HANDED) or the waiter left it
 * by itself (LEFT). The one place a waiter gives up waiting: its timeout, or an interrupt (the
 * interrupter claims the node for it, interrupt.c, or the waiter sees the status before it
 * sleeps: it published its node first, Dekker's pattern against the interrupter's store of
 * the status); every way goes through the CAS, so a notify in flight always wins or always
 * loses whole. */
static uint32_t await_end(vmt__wait_node_t *node, vmt_thread_t *t, int64_t deadline) {
  for (;;) {
    uint32_t s = atomic_load_explicit(&node->state, memory_order_acquire);
    if (s == VMT__WAIT_NOTIFIED || s == VMT__WAIT_HANDED || s == VMT__WAIT_LEFT) return s;
    if (s == VMT__WAIT_NOTIFYING) {
      /* A notifier is writing our state (a few stores); then it stores HANDED (notify) or
       * NOTIFIED and requeues us (notify_all). */
      vmt__wait_turn(&node->state, VMT__WAIT_NOTIFYING, VMT_OS_NO_DEADLINE);
      continue;
    }
    if (vmt__interrupt_pending(t) && leave(node)) return VMT__WAIT_LEFT;
    if (vmt__wait_turn(&node->state, VMT__WAIT_WAITING, deadline) == 0) continue;
    if (leave(node)) return VMT__WAIT_LEFT;
  }
}

/* Takes the node back from interrupters: none reaches it once this returns (interrupt.c). */
static void unpublish(vmt_thread_t *t) {
  atomic_store_explicit(&t->sync.wait_node, NULL, memory_order_seq_cst);
  for (unsigned spins = 0; atomic_load_explicit(&t->sync.wait_users, memory_order_seq_cst);
       spins++)
    if (spins > 100) sched_yield();   /* an interrupter preempted inside (a CAS and a wake) */
}

int vmt_monitor_wait(vmt_monitor_t *m, int64_t timeout_ns) {
  vmt_thread_t *t = vmt__self;
  int err = 0;
  struct vmt__lock *l = owned_lock(m, t, &err);
  if (l == NULL) return err;
  /* Only a runtime thread has an interrupt status: the lock identity of a thread that is none
   * (an implicit one, or the record a detached thread keeps while it holds locks, which is
   * TERMINATED and keeps the status it had) is not interrupted, and is not claimed. */
  vmt_thread_t *it = t != NULL && t == vmt__current ? t : NULL;
  /* Object.wait with the status set throws at once, the monitor never released (HotSpot's
   * ObjectMonitor::wait checks before it enqueues). */
  if (vmt__interrupt_consume(it)) return -EINTR;
  int64_t deadline = vmt__deadline_after(timeout_ns);

  vmt__wait_node_t node = {.next = NULL, .state = VMT__WAIT_WAITING, .thread = t};
  if (l->wait_tail) l->wait_tail->next = &node;
  else l->wait_head = &node;
  l->wait_tail = &node;
  owner_add(&l->waits, 1);
  atomic_store_explicit(&l->wait_waiters,
                        atomic_load_explicit(&l->wait_waiters, memory_order_relaxed) + 1,
                        memory_order_relaxed);
  uint32_t recursions = l->recursions;
  l->recursions = 0;

  /* Publish WAITING before the monitor is released: a reader never sees the thread RUNNABLE
   * and holding nothing in between. */
  vmt__episode_begin(t, &node.ep, VMT__EP_WAIT, l, deadline != VMT_OS_NO_DEADLINE);
  vmt__held_pop(t, l);
  vmt__lock_release(l);

  if (it) atomic_store_explicit(&it->sync.wait_node, &node, memory_order_seq_cst);
  uint32_t end = await_end(&node, it, deadline);
  if (it) unpublish(it);
  bool notified = end != VMT__WAIT_LEFT;
  if (notified) {
    /* BLOCKED on l since the notify (node.ep is the re-entry now). Handed: woken by the
     * release, which has freed the word: take it as any contender would. Requeued onto the
     * lock word: acquire like a woken sleeper. */
    if (end == VMT__WAIT_NOTIFIED ||
        (!vmt__lock_try_acquire(l) && !vmt__lock_spin(l)))
      /* A monitor with a waiter cannot be destroyed: no -EINVAL here. */
      vmt__lock_acquire_contended(l, VMT__LOCK_MAGIC_MONITOR, VMT_OS_NO_DEADLINE);
    atomic_store_explicit(&l->owner, vmt__token(t), memory_order_relaxed);
    vmt__episode_end(t, &node.ep, l, l);
    atomic_fetch_sub_explicit(&l->entry_waiters, 1, memory_order_release);
  } else {
    /* Left by itself: the wait ends here; the re-entry is an enter like any other. */
    vmt__episode_end(t, &node.ep, l, NULL);
    if (vmt__lock_try_acquire(l)) {
      atomic_store_explicit(&l->owner, vmt__token(t), memory_order_relaxed);
      vmt__held_push(t, l);
    } else {
      vmt__lock_enter_contended(l, t, VMT__EP_ENTER, VMT_OS_NO_DEADLINE, false);
    }
    unlink_node(l, &node);   /* unless a notify skipped it out of the set already */
  }
  l->recursions = recursions;
  /* Release: a destroy that reads 0 (acquire) comes after our last touch of the monitor. */
  atomic_store_explicit(&l->wait_waiters,
                        atomic_load_explicit(&l->wait_waiters, memory_order_relaxed) - 1,
                        memory_order_release);
  /* Notified: 0, and an interrupt that came too late stays pending (Java reports the notify
   * and leaves the status set). Else, the monitor re-entered, an interrupt wins over the
   * timeout and is consumed (InterruptedException). */
  if (notified) return 0;
  return vmt__interrupt_consume(it) ? -EINTR : -ETIMEDOUT;
}

/* Picks the first waiter that has not left by itself, hands it to the lock (notify) or requeues
 * it onto the lock word (notify_all); false if none. */
static bool notify_one(struct vmt__lock *l, bool requeue) {
  vmt__wait_node_t *node;
  while ((node = l->wait_head) != NULL) {
    l->wait_head = node->next;
    if (l->wait_head == NULL) l->wait_tail = NULL;
    uint32_t expected = VMT__WAIT_WAITING;
    if (!atomic_compare_exchange_strong_explicit(&node->state, &expected, VMT__WAIT_NOTIFYING,
                                                 memory_order_acquire, memory_order_relaxed))
      continue;   /* it timed out: it re-enters on its own and owes us nothing */
    /* The waiter sleeps, or will see NOTIFYING and wait for us: its record is ours to write. */
    atomic_fetch_add_explicit(&l->contended_enters, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&l->entry_waiters, 1, memory_order_relaxed);
    vmt__episode_reenter(node->thread, &node->ep, l);
    if (!requeue) {
      /* Our release wakes it (vmt__lock_release_handed); until then it sleeps on its node, or,
       * woken spuriously, finds HANDED and contends like any enter. */
      node->handed_next = l->handed;
      l->handed = node;
      atomic_store_explicit(&node->state, VMT__WAIT_HANDED, memory_order_release);
      return true;
    }
    /* We own the monitor, so only we can take the word to FREE: saying CONTENDED makes our
     * exit wake a sleeper on it, the requeued waiter among them. */
    atomic_store_explicit(&l->state, VMT__LOCK_CONTENDED, memory_order_relaxed);
    atomic_store_explicit(&node->state, VMT__WAIT_NOTIFIED, memory_order_release);
    vmt_os_futex_requeue(&node->state, VMT__WAIT_NOTIFIED, &l->state, 1);
    return true;
  }
  return false;
}

static int notify(vmt_monitor_t *m, bool all) {
  vmt_thread_t *t = vmt__self;
  int err = 0;
  struct vmt__lock *l = owned_lock(m, t, &err);
  if (l == NULL) return err;
  while (notify_one(l, all) && all) {
  }
  return 0;
}

int vmt_monitor_notify(vmt_monitor_t *m) { return notify(m, false); }
int vmt_monitor_notify_all(vmt_monitor_t *m) { return notify(m, true); }
