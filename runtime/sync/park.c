/*
 * runtime/sync/park.c: LockSupport.park / parkNanos / unpark for runtime threads, and Thread.sleep.
 *
 * park: the permit (t->sync.park_permit) is the futex word: unpark sets it to 1 and wakes,
 * park consumes it with an exchange. Both count as waits (HotSpot counts a park in the waited
 * count whether or not the permit was already there). A thread without a record has no permit
 * to wait on: park returns -EPERM there.
 * sleep: TIMED_WAITING until a CLOCK_MONOTONIC deadline fixed at the call, so EINTR and spurious
 * wake-ups neither shorten nor lengthen it.
 * join: the thread package waits itself (pthread_join); it publishes the wait through the two
 * calls at the end, which record it as a park.
 */
#include <errno.h>

#include "runtime/sync/sync_impl.h"

int vmt_park(int64_t timeout_ns) {
  vmt_thread_t *t = vmt__current;
  if (t == NULL) return -EPERM;
  int64_t deadline = vmt__deadline_after(timeout_ns);
  vmt__episode_t ep;
  vmt__episode_begin(t, &ep, VMT__EP_PARK, NULL, deadline != VMT_OS_NO_DEADLINE);
  int rc = 0;
  while (rc == 0 && atomic_exchange_explicit(&t->sync.park_permit, 0, memory_order_acquire) == 0)
    rc = vmt__wait_turn(&t->sync.park_permit, 0, deadline);
  vmt__episode_end(t, &ep, NULL, NULL);
  return rc;
}

int vmt_unpark(vmt_thread_t *t) {
  if (t == NULL || t->magic != VMT__THREAD_MAGIC) return -EINVAL;
  if (atomic_exchange_explicit(&t->sync.park_permit, 1, memory_order_release) == 0)
    vmt_os_futex_wake(&t->sync.park_permit, 1);
  return 0;
}

int vmt_sleep_ns(int64_t ns) {
  if (ns < 0) return -EINVAL;
  if (ns == 0) return 0;
  int64_t deadline = vmt__deadline_after(ns);
  vmt_thread_t *t = vmt__current;
  vmt__episode_t ep;
  vmt__episode_begin(t, &ep, VMT__EP_SLEEP, NULL, true);
  /* Nobody ever wakes this word: only the deadline ends the wait. */
  _Atomic uint32_t never = 0;
  while (vmt__wait_turn(&never, 0, deadline) == 0) {
  }
  vmt__episode_end(t, &ep, NULL, NULL);
  return 0;
}

void vmt__join_wait_begin(vmt__episode_t *ep) {
  vmt__episode_begin(vmt__current, ep, VMT__EP_PARK, NULL, false);
}

void vmt__join_wait_end(vmt__episode_t *ep) { vmt__episode_end(vmt__current, ep, NULL, NULL); }
