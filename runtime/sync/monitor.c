/*
 * runtime/sync/monitor.c: Java `synchronized` monitors (include/vmthread/monitor.h): create,
 * destroy, enter, try-enter, exit, describe, statistics. Wait and notify are in monitor_wait.c.
 *
 * The uncontended enter is: a magic check, the caller's lock identity (one TLS load of
 * vmt__self), one CAS on the lock word, the owner store, the owner's enter count and a
 * held-list push under the thread's sequence lock (plain stores on x86-64). The uncontended
 * exit is the reverse with one exchange. A contended enter goes to enter_slow, the only place
 * that changes the thread's state, counts, or reads a clock (runtime/sync/sync_impl.h, DESIGN).
 * A thread without an identity gets one at its first enter (enter_first; runtime/sync/sync.h).
 */
#include <errno.h>

#include "runtime/sync/sync_impl.h"

static inline struct vmt__lock *as_lock(const vmt_monitor_t *m) {
  return vmt__lock_checked(m, VMT__LOCK_MAGIC_MONITOR);
}

int vmt_monitor_create(vmt_monitor_t **out, const char *name) {
  if (out == NULL) return -EINVAL;
  struct vmt__lock *l;
  int rc = vmt__lock_create(&l, VMT__LOCK_MAGIC_MONITOR, name, "monitor");
  if (rc == 0) *out = (vmt_monitor_t *)l;
  return rc;
}

int vmt_monitor_destroy(vmt_monitor_t *m) {
  return vmt__lock_destroy(m ? &m->lock : NULL, VMT__LOCK_MAGIC_MONITOR);
}

/* The recursion count is 32 bits; Java has no limit but no program nests 4 billion deep. */
static int enter_recursive(struct vmt__lock *l) {
  if (l->recursions == UINT32_MAX) return -EAGAIN;
  l->recursions++;
  vmt__lock_count_enter(l);
  return 0;
}

static __attribute__((noinline)) int enter_slow(struct vmt__lock *l, vmt_thread_t *t) {
  if (vmt__lock_claim_vanished(l, t)) return -EOWNERDEAD;
  return vmt__lock_enter_contended(l, t, VMT__EP_ENTER, VMT_OS_NO_DEADLINE, true);
}

/* The calling thread's first lock, when it is neither started nor attached. */
static __attribute__((noinline)) int enter_first(struct vmt__lock *l, bool try_only) {
  int rc = 0;
  vmt_thread_t *t = vmt__identity(&rc);
  if (t == NULL) return rc;
  if (vmt__lock_try_acquire(l)) {
    vmt__lock_took(l, t);
    return 0;
  }
  if (try_only) return vmt__lock_claim_vanished(l, t) ? -EOWNERDEAD : -EBUSY;
  return enter_slow(l, t);
}

int vmt_monitor_enter(vmt_monitor_t *m) {
  struct vmt__lock *l = as_lock(m);
  if (l == NULL) return -EINVAL;
  vmt_thread_t *t = vmt__self;
  if (__builtin_expect(t == NULL, 0)) return enter_first(l, false);
  if (atomic_load_explicit(&l->owner, memory_order_relaxed) == vmt__token(t))
    return enter_recursive(l);
  if (__builtin_expect(!vmt__lock_try_acquire(l), 0)) return enter_slow(l, t);
  vmt__lock_took(l, t);
  return 0;
}

int vmt_monitor_try_enter(vmt_monitor_t *m) {
  struct vmt__lock *l = as_lock(m);
  if (l == NULL) return -EINVAL;
  vmt_thread_t *t = vmt__self;
  if (__builtin_expect(t == NULL, 0)) return enter_first(l, true);
  if (atomic_load_explicit(&l->owner, memory_order_relaxed) == vmt__token(t))
    return enter_recursive(l);
  if (!vmt__lock_try_acquire(l)) return vmt__lock_claim_vanished(l, t) ? -EOWNERDEAD : -EBUSY;
  vmt__lock_took(l, t);
  return 0;
}

int vmt_monitor_exit(vmt_monitor_t *m) {
  struct vmt__lock *l = as_lock(m);
  if (l == NULL) return -EINVAL;
  vmt_thread_t *t = vmt__self;
  if (__builtin_expect(
          !vmt__token_is_self(atomic_load_explicit(&l->owner, memory_order_relaxed), t), 0))
    return -EPERM;
  if (l->recursions > 0) {
    l->recursions--;
    return 0;
  }
  return vmt__lock_exit(t, l);
}

int vmt_monitor_describe(const vmt_monitor_t *m, char *buf, size_t len) {
  struct vmt__lock *l = as_lock(m);
  if (l == NULL || (buf == NULL && len > 0)) return -EINVAL;
  return vmt__lock_describe(l, buf, len);
}

int vmt_monitor_get_stats(const vmt_monitor_t *m, vmt_monitor_stats_t *out) {
  struct vmt__lock *l = as_lock(m);
  if (l == NULL || out == NULL) return -EINVAL;
  out->enters = atomic_load_explicit(&l->enters, memory_order_relaxed);
  out->contended_enters = atomic_load_explicit(&l->contended_enters, memory_order_relaxed);
  out->waits = atomic_load_explicit(&l->waits, memory_order_relaxed);
  out->entry_waiters = atomic_load_explicit(&l->entry_waiters, memory_order_relaxed);
  out->wait_waiters = atomic_load_explicit(&l->wait_waiters, memory_order_relaxed);
  uint64_t epoch = vmt__contention_current_epoch();
  if (epoch == 0) {
    out->blocked_time_ns = -1;
  } else {
    /* The epoch first (acquire): the time read after it is that epoch's (episode.c). */
    bool current = atomic_load_explicit(&l->times_epoch, memory_order_acquire) == epoch;
    out->blocked_time_ns = current ? atomic_load_explicit(&l->blocked_ns, memory_order_relaxed) : 0;
  }
  /* The owner is read after the snapshot is taken, which keeps its record from being recycled
   * meanwhile (vmt__token_owner_id). Without a snapshot there is no owner to name: an error,
   * not a "free" the call never saw. */
  const vmt__snapshot_t *snap = vmt__registry_acquire();
  if (snap == NULL) return -ENOMEM;
  out->owner_id = vmt__token_owner_id(snap, atomic_load_explicit(&l->owner, memory_order_relaxed));
  vmt__registry_release(snap);
  return 0;
}

int32_t vmt__monitor_identity(const vmt_monitor_t *m) {
  struct vmt__lock *l = as_lock(m);
  return l ? atomic_load_explicit(&l->identity, memory_order_acquire) : 0;
}
