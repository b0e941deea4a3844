/*
 * runtime/sync/interrupt.c: Thread.interrupt, isInterrupted and interrupted, and the
 * interruptible wait that join uses (vmt__wait_for_exit, sync.h).
 *
 * The status is a word in the record (t->sync.interrupted). Interrupting sets it, then makes
 * every word the thread may sleep on change and wakes it: its event word (park, sleep: poked
 * with VMT__EVENT_POKE, which leaves the permit and sleeper bits alone; the kernel is called
 * only when the sleeper bit says it sleeps, park.c), and the word an interruptible wait
 * published in t->sync.wake_word (join: the target's exit_event). The sleeper's side loads its
 * word, then checks the status, then sleeps only while the word still holds what it loaded:
 * an interrupt after the load changes the word (the futex refuses to sleep, or wakes it), one
 * before it is seen by the check. For wake_word the publication and the interrupter's read of
 * it are seq_cst against the status's store and load (Dekker's pattern): either the
 * interrupter sees the word, or the sleeper sees the status. Every word poked is type-stable
 * (records are never freed), so a poke that arrives late only makes some sleeper look again.
 *
 * A monitor wait sleeps on its wait node, on its stack: the interrupter claims the node for
 * it instead (monitor_wait.c says how the node's lifetime is kept safe).
 *
 * An interrupt is no signal: nothing runs on the target, a thread that does not wait only
 * finds its status set. Cancellation (pthread_cancel) stays what it is: it is not an
 * interrupt, and an interrupt does not cancel. The synchronizers' waits: docs/thread-api.md.
 */
#include <errno.h>

#include "runtime/sync/sync_impl.h"

int vmt_thread_interrupt(vmt_thread_t *t) {
  if (t == NULL || !vmt__record_ref_if_live(t)) return -EINVAL;
  atomic_store_explicit(&t->sync.interrupted, 1, memory_order_seq_cst);
  /* Its own event word: the kernel is called only if it sleeps there (park.c). */
  uint32_t v = atomic_fetch_add_explicit(&t->sync.park_permit, VMT__EVENT_POKE,
                                         memory_order_seq_cst);
  if (v & VMT__EVENT_SLEEPER) vmt_os_futex_wake(&t->sync.park_permit, 1);
  /* A monitor wait: claim the node for the waiter (the CAS a notify makes too: one of them
   * wins) and wake it. The node is on the waiter's stack: counted in first, so the waiter
   * does not return before we are out (monitor_wait.c). */
  atomic_fetch_add_explicit(&t->sync.wait_users, 1, memory_order_seq_cst);
  struct vmt__wait_node *node = atomic_load_explicit(&t->sync.wait_node, memory_order_seq_cst);
  _Atomic uint32_t *claimed = NULL;
  if (node != NULL) {
    uint32_t expected = VMT__WAIT_WAITING;
    if (atomic_compare_exchange_strong_explicit(&node->state, &expected, VMT__WAIT_LEFT,
                                                memory_order_release, memory_order_relaxed))
      claimed = &node->state;
  }
  atomic_fetch_sub_explicit(&t->sync.wait_users, 1, memory_order_release);
  /* The wake comes after we are out, so the woken waiter never waits for our system call. It
   * only names the address (a stack word that may be reused by now): at worst a spurious
   * wake-up of whoever waits there, which every waiter absorbs. */
  if (claimed != NULL) vmt_os_futex_wake(claimed, 1);
  _Atomic uint32_t *w = atomic_load_explicit(&t->sync.wake_word, memory_order_seq_cst);
  /* Others may sleep there too (the joiners of one thread): all wake, look again, and the
   * others sleep on. */
  if (w != NULL) {
    atomic_fetch_add_explicit(w, VMT__EVENT_POKE, memory_order_release);
    vmt_os_futex_wake(w, INT32_MAX);
  }
  vmt__record_unref(t);
  return 0;
}

bool vmt_thread_is_interrupted(const vmt_thread_t *t) {
  return t != NULL && vmt__handle_valid(t) && vmt__interrupt_pending(t);
}

bool vmt__interrupt_consume(vmt_thread_t *t) {
  if (!vmt__interrupt_pending(t)) return false;
  return atomic_exchange_explicit(&t->sync.interrupted, 0, memory_order_acq_rel) != 0;
}

bool vmt_thread_interrupted(void) { return vmt__interrupt_consume(vmt__current); }

typedef struct event_wait {
  vmt_thread_t *self;
  vmt__episode_t ep;
} event_wait_t;

/* The end of the wait, also when the thread is cancelled inside it (join's cancellation). */
static void event_wait_end(void *arg) {
  event_wait_t *w = arg;
  if (w->self) atomic_store_explicit(&w->self->sync.wake_word, NULL, memory_order_relaxed);
  vmt__episode_end(w->self, &w->ep, NULL, NULL);
}

/* The target is not alive: its exit_event is set, or it is TERMINATED already, with the rest of
 * its exit (a few microseconds of bookkeeping, vmt__thread_finish) still to run. Java's join
 * loops on isAlive(), which is false from TERMINATED on: such a join returns at once, whatever
 * the timeout or the joiner's interrupt status, and the reap waits for that rest. */
static bool target_ended(vmt_thread_t *target, uint32_t event) {
  return (event & VMT__EVENT_PERMIT) ||
         atomic_load_explicit(&target->state, memory_order_acquire) == VMT_THREAD_TERMINATED;
}

int vmt__wait_for_exit(vmt_thread_t *self, vmt_thread_t *target, int64_t deadline_ns) {
  _Atomic uint32_t *word = &target->exit_event;
  if (target_ended(target, atomic_load_explicit(word, memory_order_acquire))) return 0;
  if (vmt__interrupt_consume(self)) return -EINTR;
  event_wait_t w = {.self = self};
  vmt__episode_begin_join(self, &w.ep, target, deadline_ns != VMT_OS_NO_DEADLINE);
  if (self) atomic_store_explicit(&self->sync.wake_word, word, memory_order_seq_cst);
  int rc = 0;
  pthread_cleanup_push(event_wait_end, &w);
  for (;;) {
    uint32_t v = atomic_load_explicit(word, memory_order_seq_cst);
    if (target_ended(target, v)) break;
    if (vmt__interrupt_consume(self)) {
      rc = -EINTR;
      break;
    }
    /* A cancellation point, as the pthread_join it stands before: a request interrupts the
     * futex wait (glibc's SIGCANCEL) and is acted on here. */
    pthread_testcancel();
    rc = vmt__wait_turn(word, v, deadline_ns);
    if (rc == -ETIMEDOUT && target_ended(target, 0)) rc = 0;   /* ended as the time ran out */
    if (rc) break;
  }
  pthread_cleanup_pop(1);
  return rc;
}
