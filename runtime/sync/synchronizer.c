/*
 * runtime/sync/synchronizer.c: ownable synchronizers (Java's AbstractOwnableSynchronizer, the
 * owner of a ReentrantLock or a write lock): a non-reentrant lock with an owner, on the same
 * lock word and held list as monitors (runtime/sync/sync_impl.h).
 *
 * A thread that has to wait for one is WAITING (TIMED_WAITING for a timed lock) with parked_on
 * set, and the wait counts in its waited count and time: in Java it is parked in
 * AbstractQueuedSynchronizer, and LockSupport.park counts as a wait. Deadlock detection follows
 * parked_on edges only when asked to (findDeadlockedThreads, not findMonitorDeadlockedThreads).
 */
#include <errno.h>

#include "runtime/sync/sync_impl.h"

static inline struct vmt__lock *as_lock(const vmt_sync_t *s) {
  return vmt__lock_checked(s, VMT__LOCK_MAGIC_SYNC);
}

int vmt_sync_create(vmt_sync_t **out, const char *name) {
  if (out == NULL) return -EINVAL;
  struct vmt__lock *l;
  int rc = vmt__lock_create(&l, VMT__LOCK_MAGIC_SYNC, name, "sync");
  if (rc == 0) *out = (vmt_sync_t *)l;
  return rc;
}

int vmt_sync_destroy(vmt_sync_t *s) {
  return vmt__lock_destroy(s ? &s->lock : NULL, VMT__LOCK_MAGIC_SYNC);
}

static __attribute__((noinline)) int lock_slow(struct vmt__lock *l, vmt_thread_t *t,
                                               int64_t timeout_ns, bool timed) {
  if (vmt__lock_claim_vanished(l, t)) return -EOWNERDEAD;
  if (timed && timeout_ns <= 0) return -ETIMEDOUT;   /* tryLock(0, unit) */
  int64_t deadline = timed ? vmt__deadline_after(timeout_ns) : VMT_OS_NO_DEADLINE;
  return vmt__lock_enter_contended(l, t, VMT__EP_SYNC, deadline, true);
}

static inline int lock_as(struct vmt__lock *l, vmt_thread_t *t, int64_t timeout_ns, bool timed) {
  if (vmt__token_is_self(atomic_load_explicit(&l->owner, memory_order_relaxed), t))
    return -EDEADLK;
  if (__builtin_expect(!vmt__lock_try_acquire(l), 0)) return lock_slow(l, t, timeout_ns, timed);
  vmt__lock_took(l, t);
  return 0;
}

/* The calling thread's first lock, when it is neither started nor attached. */
static __attribute__((noinline)) int lock_first(struct vmt__lock *l, int64_t timeout_ns,
                                                bool timed) {
  int rc = 0;
  vmt_thread_t *t = vmt__identity(&rc);
  if (t == NULL) return rc;
  return lock_as(l, t, timeout_ns, timed);
}

/* The common case (a thread with an identity, the lock free) makes no call and needs no stack
 * frame, as vmt_monitor_enter: the rest is out of line. */
static inline int lock_until(vmt_sync_t *s, int64_t timeout_ns, bool timed) {
  struct vmt__lock *l = as_lock(s);
  if (l == NULL) return -EINVAL;
  vmt_thread_t *t = vmt__self;
  if (__builtin_expect(t == NULL, 0)) return lock_first(l, timeout_ns, timed);
  return lock_as(l, t, timeout_ns, timed);
}

int vmt_sync_lock(vmt_sync_t *s) { return lock_until(s, 0, false); }

int vmt_sync_timed_lock(vmt_sync_t *s, int64_t timeout_ns) {
  return lock_until(s, timeout_ns, true);
}

int vmt_sync_try_lock(vmt_sync_t *s) {
  struct vmt__lock *l = as_lock(s);
  if (l == NULL) return -EINVAL;
  int rc = 0;
  vmt_thread_t *t = vmt__identity(&rc);
  if (t == NULL) return rc;
  if (!vmt__lock_try_acquire(l)) return vmt__lock_claim_vanished(l, t) ? -EOWNERDEAD : -EBUSY;
  vmt__lock_took(l, t);
  return 0;
}

int vmt_sync_unlock(vmt_sync_t *s) {
  struct vmt__lock *l = as_lock(s);
  if (l == NULL) return -EINVAL;
  vmt_thread_t *t = vmt__self;
  if (!vmt__token_is_self(atomic_load_explicit(&l->owner, memory_order_relaxed), t))
    return -EPERM;
  return vmt__lock_exit(t, l);
}

int vmt_sync_describe(const vmt_sync_t *s, char *buf, size_t len) {
  struct vmt__lock *l = as_lock(s);
  if (l == NULL || (buf == NULL && len > 0)) return -EINVAL;
  return vmt__lock_describe(l, buf, len);
}
