/*
 * vmthread/monitor.h: monitors (Java `synchronized`), ownable synchronizers, sleep and park.
 *
 * Every blocking call records what a thread dump and ThreadMXBean report: the thread's state
 * (BLOCKED on a contended enter, and from the notify on while a notified waiter re-enters;
 * WAITING / TIMED_WAITING in wait, park, sleep and synchronizer waits), what it is blocked on
 * and who owns it, counts always, and times (the episode in progress included) while
 * contention monitoring is enabled (vmt_mx_set_thread_contention_monitoring_enabled). The
 * uncontended enter/exit records nothing but ownership and depth.
 *
 * Monitors and synchronizers may be used by any thread. A lock belongs to the thread that
 * entered it for that thread's whole life, across attach and detach; a detach releases nothing,
 * and a thread's end releases what it still holds (as HotSpot does for monitors entered through
 * JNI), so no later thread inherits it. A thread that is not a runtime thread nor attached gets
 * no statistics, and its first lock needs a small record of its own (-ENOMEM, or -EAGAIN if the
 * C library has no per-thread exit hook left: docs/monitors.md, "Limits").
 *
 * Every call below that takes a monitor or synchronizer answers -EINVAL for NULL or for a
 * handle that is not a live object of that kind (destroyed, or the other kind), before any
 * other error it lists.
 *
 * After fork(), in the child: a monitor or synchronizer that a thread which did not survive the
 * fork owned is taken over by the next enter, try_enter, lock, try_lock or timed_lock, which
 * answers -EOWNERDEAD (as a robust pthread mutex does): the caller owns it, once, and what it
 * guards was left by a thread that stopped wherever it was. Until then it reads as owned by
 * nobody, and destroy answers -EBUSY. Threads that were waiting or blocked on it in the parent
 * are not waiting in the child. (docs/design.md, "fork")
 */
#ifndef VMTHREAD_MONITOR_H
#define VMTHREAD_MONITOR_H

#include "vmthread/clock.h"
#include "vmthread/common.h"
#include "vmthread/thread.h"

VMT_EXTERN_C_BEGIN

typedef struct vmt_monitor vmt_monitor_t;
typedef struct vmt_sync vmt_sync_t;

#define VMT_MONITOR_NAME_MAX 255

/* Creates a monitor; name is copied (NULL gives "monitor"). Shown as "name@<hex id>".
 * Errors: -EINVAL (NULL out, name too long), -ENOMEM. */
VMT_EXPORT int vmt_monitor_create(vmt_monitor_t **out, const char *name);
/* Destroys an unowned monitor with no waiters; -EBUSY otherwise, -EINVAL on NULL or a
 * destroyed monitor. Slots are recycled: use after destroy is -EINVAL until the slot is reused,
 * never a crash. A destroy racing an enter of the same monitor (a VM deflating an idle one) is
 * all-or-nothing: the enter wins (destroy -EBUSY) or answers -EINVAL; likewise for
 * synchronizers. */
VMT_EXPORT int vmt_monitor_destroy(vmt_monitor_t *m);

/* Reentrant enter. -EINVAL on NULL, -EAGAIN past 2^32-1 nested enters, -EOWNERDEAD (entered;
 * fork child only, above); the first lock of a thread neither started nor attached: -ENOMEM,
 * -EAGAIN (above). */
VMT_EXPORT int vmt_monitor_enter(vmt_monitor_t *m);
/* 0 if entered (recursively too), -EBUSY if another thread owns it, the errors of enter. */
VMT_EXPORT int vmt_monitor_try_enter(vmt_monitor_t *m);
/* -EPERM if the caller does not own m (Java: IllegalMonitorStateException). */
VMT_EXPORT int vmt_monitor_exit(vmt_monitor_t *m);

/*
 * Java's Object.wait: releases m fully (whatever the depth), waits for notify or the timeout,
 * re-enters to the same depth. timeout_ns < 0 or 0 waits without timeout (Java: wait(0)).
 * Returns 0 when notified, -ETIMEDOUT on timeout, -EPERM if the caller does not own m.
 * Interruptible (vmt_thread_interrupt), as Object.wait throws InterruptedException: -EINTR,
 * the status cleared, at once with the monitor never released when the status is set at the
 * call, else once the monitor is re-entered to its depth; a notify that came first wins (0,
 * the status stays set). Spurious wake-ups are absorbed; a signal's EINTR never escapes.
 */
VMT_EXPORT int vmt_monitor_wait(vmt_monitor_t *m, int64_t timeout_ns);
VMT_EXPORT int vmt_monitor_notify(vmt_monitor_t *m);     /* -EPERM if not owner */
VMT_EXPORT int vmt_monitor_notify_all(vmt_monitor_t *m); /* -EPERM if not owner */

/* Thread.holdsLock(m): 1 if the calling thread owns m (at any depth), 0 if not, -EINVAL. */
VMT_EXPORT int vmt_monitor_holds_lock(const vmt_monitor_t *m);

/* The display name "name@hexid" into buf (truncated, always NUL-terminated); bytes needed
 * (snprintf's rule). -EINVAL also for a NULL buf with len > 0. */
VMT_EXPORT int vmt_monitor_describe(const vmt_monitor_t *m, char *buf, size_t len);

/* Per-monitor statistics (what OMR's lock monitor offers; HotSpot has none). Times in ns,
 * -1 while contention monitoring is disabled; blocked_time_ns counts finished blocks. A
 * notified waiter re-entering counts in contended_enters and entry_waiters (and in
 * wait_waiters until it has re-entered). -EINVAL, -ENOMEM (no registry snapshot to name the
 * owner with). */
typedef struct vmt_monitor_stats {
  uint64_t enters;            /* successful enters, recursive ones included */
  uint64_t contended_enters;  /* enters that had to block, re-entries after notify included */
  uint64_t waits;             /* wait() calls */
  int64_t blocked_time_ns;    /* total time threads spent blocked entering it */
  int64_t owner_id;           /* current owner's thread id, 0 if none or not a runtime thread */
  uint32_t entry_waiters;     /* threads blocked entering now */
  uint32_t wait_waiters;      /* threads in wait() now */
} vmt_monitor_stats_t;
VMT_EXPORT int vmt_monitor_get_stats(const vmt_monitor_t *m, vmt_monitor_stats_t *out);

/* Ownable synchronizer (java.util.concurrent AbstractOwnableSynchronizer): not reentrant. lock,
 * try_lock and timed_lock may also answer -EOWNERDEAD (locked; fork child only, above). */
VMT_EXPORT int vmt_sync_create(vmt_sync_t **out, const char *name);
VMT_EXPORT int vmt_sync_destroy(vmt_sync_t *s);            /* -EBUSY while owned or waited for */
/* Like enter, the first lock of a thread neither started nor attached may fail: -ENOMEM,
 * -EAGAIN (above). */
VMT_EXPORT int vmt_sync_lock(vmt_sync_t *s);               /* -EDEADLK if the caller owns it */
VMT_EXPORT int vmt_sync_try_lock(vmt_sync_t *s);           /* -EBUSY if owned */
/* -ETIMEDOUT; timeout_ns <= 0 only tries (tryLock(0, unit)), but reports -ETIMEDOUT. */
VMT_EXPORT int vmt_sync_timed_lock(vmt_sync_t *s, int64_t timeout_ns);
VMT_EXPORT int vmt_sync_unlock(vmt_sync_t *s);             /* -EPERM if not owner */
/* ReentrantLock.isHeldByCurrentThread: 1 if the calling thread owns s, 0 if not, -EINVAL. */
VMT_EXPORT int vmt_sync_holds_lock(const vmt_sync_t *s);
VMT_EXPORT int vmt_sync_describe(const vmt_sync_t *s, char *buf, size_t len);

/* Thread.sleep: TIMED_WAITING, counted as a wait, until ns have passed (a CLOCK_MONOTONIC
 * deadline fixed at the call, honoured across EINTR; sub-millisecond: the thread's timer slack
 * decides how late it wakes, vmthread/thread.h). 0 yields the processor and returns, counted as
 * a wait as HotSpot's Thread.sleep(0) is; -EINVAL for ns < 0.
 * Interruptible: -EINTR, the status cleared, when interrupted while sleeping or if the status
 * was set at the call (also for ns == 0), as Thread.sleep throws InterruptedException. */
VMT_EXPORT int vmt_sleep_ns(int64_t ns);
/*
 * LockSupport.park / parkNanos / parkUntil / unpark. A park returns 0 when it consumed the
 * permit (an unpark before the park counts, once), -ETIMEDOUT when its time passed, -EINTR
 * when the thread is interrupted or its status was set at the call (the status stays set:
 * park never clears it; a permit present is consumed first and wins). Spurious returns are
 * allowed as in Java (this implementation makes none). Only runtime threads (started or
 * attached) have a permit: park on any other thread returns -EPERM. Each park counts as a
 * wait, WAITING without a time limit, TIMED_WAITING with one.
 * - vmt_park(timeout_ns): timeout_ns <= 0 waits without timeout (Unsafe.park(false, 0)); the
 *   historical rule, kept: LockSupport.park() is vmt_park(0).
 * - vmt_park_nanos(timeout_ns): LockSupport.parkNanos: timeout_ns <= 0 returns -ETIMEDOUT at
 *   once without touching the permit or counting (Java's "if (nanos > 0)");
 *   VMT_TIMEOUT_INFINITE waits forever.
 * - vmt_park_until(deadline_ns, clock): until an absolute deadline on CLOCK_MONOTONIC
 *   (vmt_nanotime's scale) or CLOCK_REALTIME (ns since the epoch; LockSupport.parkUntil's
 *   milliseconds * 10^6; the wait follows changes of the wall clock). A deadline that has
 *   passed waits no more, but still consumes a permit present. -EINVAL for another clock.
 */
/*
 * LockSupport.park(blocker): Java's LockSupport sets the thread's parkBlocker field, parks,
 * and clears it; a VM does the same with this setter around any vmt_park* call. While the
 * calling thread is parked with a blocker set, ThreadInfo reports the blocker as its lock
 * (class name and identity, "class@hex" as LockInfo.toString) and owner_id as the lock's owner
 * (an AbstractOwnableSynchronizer's exclusive owner; 0 for none), and the dump shows "parking
 * to wait for <...>". The class name is copied, cut at VMT_PARK_BLOCKER_CLASS_MAX bytes on a
 * UTF-8 boundary. NULL clears the blocker. Errors: -EPERM (not a runtime thread), -EINVAL (a
 * blocker without class_name, or an owner_id < 0).
 */
#define VMT_PARK_BLOCKER_CLASS_MAX 127
typedef struct vmt_park_blocker {
  const char *class_name;   /* e.g. "java.util.concurrent.locks.ReentrantLock$NonfairSync" */
  int32_t identity_hash;
  int64_t owner_id;
} vmt_park_blocker_t;
VMT_EXPORT int vmt_thread_set_park_blocker(const vmt_park_blocker_t *blocker);

VMT_EXPORT int vmt_park(int64_t timeout_ns);
VMT_EXPORT int vmt_park_nanos(int64_t timeout_ns);
VMT_EXPORT int vmt_park_until(int64_t deadline_ns, vmt_clock_t clock);
VMT_EXPORT int vmt_unpark(vmt_thread_t *t);   /* -EINVAL on NULL or a released handle */

VMT_EXTERN_C_END

#endif /* VMTHREAD_MONITOR_H */
