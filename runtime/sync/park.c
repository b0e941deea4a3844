/*
 * runtime/sync/park.c: LockSupport.park / parkNanos / parkUntil / unpark for runtime threads,
 * and Thread.sleep.
 *
 * park: the thread's event word (t->sync.park_permit, registry.h) is the futex word. Bit 0 is
 * the permit: unpark sets it, park consumes it (an atomic and-not that returns the old word).
 * Interrupt adds VMT__EVENT_POKE to the same word, so it changes under a sleeper that checked
 * the status before it slept: no wake-up is lost. A thread about to sleep sets bit 1 with a
 * CAS from the value it checked, and a waker calls FUTEX_WAKE only when its read-modify-write
 * found that bit (mutex2's "contended" state in Drepper's "Futexes Are Tricky"): an unpark or
 * interrupt of a thread that is not asleep makes no system call, as HotSpot's unpark signals
 * only a parked thread. As in HotSpot's Parker::park,
 * a permit is consumed first (return 0), then a pending interrupt returns at once (-EINTR,
 * the status kept: park never clears it), then the thread sleeps. Every park counts as a wait
 * (HotSpot counts one in the waited count whether or not the permit was there). A thread
 * without a record has no permit to wait on: park returns -EPERM there.
 * sleep: TIMED_WAITING on the same word until a CLOCK_MONOTONIC deadline fixed at the call
 * (so EINTR and spurious wake-ups neither shorten nor lengthen it), or an interrupt (-EINTR,
 * the status cleared, Thread.sleep's InterruptedException), also one pending at the call. An
 * unpark only makes a sleeper look again.
 * The park blocker (LockSupport's parkBlocker) is copied into the record inside a write
 * section of the thread's sequence lock; readers report it as the lock of a thread that is
 * parking (lock_info.c).
 */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "runtime/sync/sync_impl.h"

/* Sleeps one turn on the thread's event word, whose value was v (SLEEPER clear): announces
 * the sleep first (a CAS, so that a waker that changed the word meanwhile makes it retry), so
 * wakers call the kernel only when the thread sleeps. 0 to look again, -ETIMEDOUT. */
static int sleep_turn(_Atomic uint32_t *word, uint32_t v, int64_t deadline, bool realtime) {
  if (!atomic_compare_exchange_strong_explicit(word, &v, v | VMT__EVENT_SLEEPER,
                                               memory_order_seq_cst, memory_order_relaxed))
    return 0;
  v |= VMT__EVENT_SLEEPER;
  int rc = realtime ? vmt__wait_turn_realtime(word, v, deadline)
                    : vmt__wait_turn(word, v, deadline);
  atomic_fetch_and_explicit(word, ~VMT__EVENT_SLEEPER, memory_order_relaxed);
  return rc;
}

static int park(vmt_thread_t *t, int64_t deadline, bool realtime) {
  vmt__episode_t ep;
  vmt__episode_begin(t, &ep, VMT__EP_PARK, NULL, deadline != VMT_OS_NO_DEADLINE);
  int rc;
  for (;;) {
    uint32_t v = atomic_fetch_and_explicit(&t->sync.park_permit, ~VMT__EVENT_PERMIT,
                                           memory_order_acquire);
    if (v & VMT__EVENT_PERMIT) {
      rc = 0;
      break;
    }
    if (vmt__interrupt_pending(t)) {
      rc = -EINTR;
      break;
    }
    rc = sleep_turn(&t->sync.park_permit, v & ~VMT__EVENT_SLEEPER, deadline, realtime);
    if (rc) break;
  }
  vmt__episode_end(t, &ep, NULL, NULL);
  return rc;
}

int vmt_park(int64_t timeout_ns) {
  vmt_thread_t *t = vmt__current;
  if (t == NULL) return -EPERM;
  return park(t, vmt__deadline_after(timeout_ns), false);
}

int vmt_park_nanos(int64_t timeout_ns) {
  vmt_thread_t *t = vmt__current;
  if (t == NULL) return -EPERM;
  /* LockSupport.parkNanos: "if (nanos > 0) park": no wait, no permit taken, no count. */
  if (timeout_ns <= 0) return -ETIMEDOUT;
  int64_t deadline = vmt__deadline_after_or_now(timeout_ns);
  return park(t, deadline, false);
}

int vmt_park_until(int64_t deadline_ns, vmt_clock_t clock) {
  vmt_thread_t *t = vmt__current;
  if (clock != VMT_CLOCK_MONOTONIC && clock != VMT_CLOCK_REALTIME) return -EINVAL;
  if (t == NULL) return -EPERM;
  /* A deadline that has passed waits no more, but a permit is still consumed (Unsafe.park with
   * an absolute time, as parkUntil calls it). */
  return park(t, deadline_ns < 0 ? 0 : deadline_ns, clock == VMT_CLOCK_REALTIME);
}

int vmt_thread_set_park_blocker(const vmt_park_blocker_t *blocker) {
  vmt_thread_t *t = vmt__current;
  if (t == NULL) return -EPERM;
  if (blocker != NULL && (blocker->class_name == NULL || blocker->owner_id < 0)) return -EINVAL;
  struct vmt__thread_cold *c = t->cold;
  enum { WORDS = sizeof(c->blocker_class) / sizeof(c->blocker_class[0]) };
  uint64_t words[WORDS] = {0};
  if (blocker != NULL) {
    /* Cut on a character boundary (at most 3 continuation bytes back from the limit). */
    size_t n = strnlen(blocker->class_name, VMT_PARK_BLOCKER_CLASS_MAX + 1);
    if (n > VMT_PARK_BLOCKER_CLASS_MAX) {
      n = VMT_PARK_BLOCKER_CLASS_MAX;
      for (int k = 0; k < 3 && n > 0 && (blocker->class_name[n] & 0xC0) == 0x80; k++) n--;
    }
    memcpy(words, blocker->class_name, n);
  }
  uint32_t s = vmt__seq_begin(&t->sync.seq);
  if (blocker != NULL) {
    for (int i = 0; i < WORDS; i++)
      atomic_store_explicit(&c->blocker_class[i], words[i], VMT__SEQ_W);
    atomic_store_explicit(&c->blocker_hash, blocker->identity_hash, VMT__SEQ_W);
    atomic_store_explicit(&c->blocker_owner, blocker->owner_id, VMT__SEQ_W);
  }
  atomic_store_explicit(&t->sync.blocker_set, blocker != NULL, VMT__SEQ_W);
  vmt__seq_end(&t->sync.seq, s);
  return 0;
}

int vmt_unpark(vmt_thread_t *t) {
  if (t == NULL || !vmt__handle_valid(t)) return -EINVAL;
  /* seq_cst: against the sleeper's announcing CAS (it sees the permit, or we see it). */
  uint32_t v = atomic_fetch_or_explicit(&t->sync.park_permit, VMT__EVENT_PERMIT,
                                        memory_order_seq_cst);
  if (v & VMT__EVENT_SLEEPER) vmt_os_futex_wake(&t->sync.park_permit, 1);
  return 0;
}

int vmt_sleep_ns(int64_t ns) {
  if (ns < 0) return -EINVAL;
  vmt_thread_t *t = vmt__current;
  if (vmt__interrupt_consume(t)) return -EINTR;
  vmt__episode_t ep;
  if (ns == 0) {
    /* Thread.sleep(0): HotSpot yields the processor and counts it as a sleep in the waited
     * count (its sleep statistics start before the zero check; JDK 17 and 25 both count +1,
     * test/mx_conformance_test.c, sleep_of_zero_counts_a_wait_unless_interrupted). */
    vmt__episode_begin(t, &ep, VMT__EP_SLEEP, NULL, true);
    sched_yield();
    vmt__episode_end(t, &ep, NULL, NULL);
    return 0;
  }
  int64_t deadline = vmt__deadline_after(ns);
  vmt__episode_begin(t, &ep, VMT__EP_SLEEP, NULL, true);
  /* A thread without record: nobody can wake this word, only the deadline ends the wait. */
  _Atomic uint32_t never = 0;
  _Atomic uint32_t *word = t ? &t->sync.park_permit : &never;
  int rc = 0;
  for (;;) {
    uint32_t v = atomic_load_explicit(word, memory_order_acquire) & ~VMT__EVENT_SLEEPER;
    if (vmt__interrupt_consume(t)) {
      rc = -EINTR;
      break;
    }
    if (sleep_turn(word, v, deadline, false) != 0) break;
  }
  vmt__episode_end(t, &ep, NULL, NULL);
  return rc;
}
