/*
 * os_linux/thread_id.c: binding the runtime's record of a thread to the kernel's identity of
 * it (its tid, from which every clock id of it is computed), and the calling thread's tid.
 *
 * The parent binds right after pthread_create: the kernel wrote the child's tid into the
 * pthread descriptor before clone returned (CLONE_PARENT_SETTID), so pthread_getcpuclockid
 * already encodes it, and tid = ~(clockid >> 3) is right before the child has run. The clock id
 * is validated (a per-thread SCHED clock with a non-zero pid field) because glibc hands out
 * clock -2, the *caller's* clock, when it reads a zero tid.
 *
 * DESIGN (publication). `tid` is the publication word: > 0 is the published tid; below zero
 * are the states before it: UNBOUND (0), CLAIMED (a binder is filling the record), and each of
 * those with waiters recorded. Claiming first makes bind (parent) and bind_self (child) safe to
 * race: exactly one of them resets the record's CPU-time history, then exchanges the tid in
 * (release) and wakes the futex only if a waiter recorded itself, so the common start, where
 * nobody waits, makes no futex syscall. Readers acquire-load the tid and treat anything <= 0 as
 * "not yet" (vmt_os_thread_tid).
 *
 * The end of the kernel's identity too: vmt_os_thread_reap joins a thread that has told its
 * joiner it is done, polling pthread_tryjoin_np (glibc) for the few microseconds its last steps
 * take (the C library's thread exit: TSD destructors, the stack's madvise), so the joiner, just
 * woken, does not sleep again until the kernel clears the tid.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "os_linux/os_impl.h"
#include "runtime/fault.h"

#define TID_UNBOUND 0
#define TID_CLAIMED (-1)
#define TID_UNBOUND_WAITED (-2)
#define TID_CLAIMED_WAITED (-3)

/* Validates a clock id from pthread_getcpuclockid and extracts its tid; -ESRCH for the
 * zero-tid window (clock -2), -EINVAL for anything that is not a per-thread SCHED clock. */
static int clock_to_tid(clockid_t clock, pid_t *tid) {
  if (clock >= 0 || (clock & VMT_OS_CLOCK_FIELD_MASK) !=
                        (VMT_OS_CPUCLOCK_PERTHREAD | VMT_OS_CPUCLOCK_SCHED))
    return -EINVAL;
  pid_t t = vmt_os__clock_tid(clock);
  if (t == 0) return -ESRCH;
  if (t < 0) return -EINVAL;
  *tid = t;
  return 0;
}

static int publish(vmt_os_thread_t *ot, pid_t tid) {
  int32_t seen = atomic_load_explicit(&ot->tid, memory_order_relaxed);
  for (;;) {
    /* Bound already: same thread, same tid. */
    if (seen > 0) return 0;
    /* Being bound by the other side of the race: wait for its tid (a few instructions away),
     * so that the tid is published when bind returns; the thread reading its own CPU time
     * right after bind_self must find itself (docs/reliability.md, regression test). */
    if (seen == TID_CLAIMED || seen == TID_CLAIMED_WAITED) {
      vmt_os_thread_tid_wait(ot);
      return 0;
    }
    int32_t claimed = seen == TID_UNBOUND ? TID_CLAIMED : TID_CLAIMED_WAITED;
    if (atomic_compare_exchange_weak_explicit(&ot->tid, &seen, claimed, memory_order_acquire,
                                              memory_order_relaxed))
      break;
  }
  /* A new identity starts a new CPU-time history (after fork the surviving thread is
   * re-bound: its clock restarted from zero, so must the consistent-user floor). */
  atomic_store_explicit(&ot->user_time_floor_ns, 0, memory_order_relaxed);
  int32_t before = atomic_exchange_explicit(&ot->tid, tid, memory_order_acq_rel);
  if (before == TID_CLAIMED_WAITED) vmt_os_futex_wake((_Atomic uint32_t *)&ot->tid, INT32_MAX);
  return 0;
}

int vmt_os_thread_bind(vmt_os_thread_t *ot, pthread_t handle) {
  if (ot == NULL) return -EINVAL;
  int err = vmt__fault_hit(VMT__FAULT_GETCPUCLOCKID);
  if (err) return err;
  clockid_t clock;
  int rc = pthread_getcpuclockid(handle, &clock);
  if (rc != 0) return -rc;
  pid_t tid;
  err = clock_to_tid(clock, &tid);
  if (err) return err;
  return publish(ot, tid);
}

int vmt_os_thread_bind_self(vmt_os_thread_t *ot) {
  if (ot == NULL) return -EINVAL;
  return publish(ot, vmt_os_current_tid());
}

pid_t vmt_os_thread_tid(const vmt_os_thread_t *ot) {
  if (ot == NULL) return 0;
  int32_t tid = atomic_load_explicit(&((vmt_os_thread_t *)ot)->tid, memory_order_acquire);
  return tid > 0 ? tid : 0;
}

pid_t vmt_os_thread_tid_wait(vmt_os_thread_t *ot) {
  if (ot == NULL) return -EINVAL;
  int32_t tid = atomic_load_explicit(&ot->tid, memory_order_acquire);
  while (tid <= 0) {
    /* Record the wait before sleeping, so that the publisher knows to wake. */
    int32_t waited = tid == TID_UNBOUND ? TID_UNBOUND_WAITED
                     : tid == TID_CLAIMED ? TID_CLAIMED_WAITED : tid;
    if (waited != tid &&
        !atomic_compare_exchange_weak_explicit(&ot->tid, &tid, waited, memory_order_acquire,
                                               memory_order_acquire))
      continue;   /* tid holds the fresh value */
    vmt_os_futex_wait((_Atomic uint32_t *)&ot->tid, (uint32_t)waited, VMT_OS_NO_DEADLINE);
    tid = atomic_load_explicit(&ot->tid, memory_order_acquire);
  }
  return tid;
}

void vmt_os_thread_mark_exiting(vmt_os_thread_t *ot) {
  if (ot == NULL) return;
  /* seq_cst pairs with the fence readers issue after their clock read (cpu_clock.c). */
  atomic_store_explicit(&ot->exiting, 1, memory_order_seq_cst);
}

/*
 * The calling thread's tid, cached per thread (gettid is a real syscall, ~100 ns here). glibc
 * dropped its own tid cache because of fork: the forking thread's cache would be stale in the
 * child, so the child handler clears it (before the thread package re-binds the surviving
 * thread's record, which asks for the new tid: a higher rank runs first in the child).
 */
static __thread pid_t cached_tid;

static void clear_after_fork(void) { cached_tid = 0; }
VMT__PROCESS_STATE(cached_tid, .symbols = "cached_tid", .rule = VMT__FORK_RESET,
                   .fork = "the forking thread's cached tid is cleared: the child has a new one",
                   .rank = VMT__RANK_PORT + 1, .child = clear_after_fork);

pid_t vmt_os_current_tid(void) {
  pid_t tid = cached_tid;
  if (__builtin_expect(tid != 0, 1)) return tid;
  tid = (pid_t)syscall(SYS_gettid);
  cached_tid = tid;
  return tid;
}

int vmt_os_thread_reap(pthread_t th, int64_t spin_ns) {
  int64_t end = vmt_os_java_time_nanos() + spin_ns;
  for (int round = 0;; round++) {
    int rc = pthread_tryjoin_np(th, NULL);
    if (rc != EBUSY) return -rc;
    if (vmt_os_java_time_nanos() >= end) break;
    /* A few rounds of pause for a thread that runs on the other CPU; then yield, in case the
     * scheduler woke us on the ending thread's own CPU, where spinning would only hold it
     * off. */
    if (round < 16) {
      for (int i = 0; i < 64; i++) vmt_os_cpu_relax();
    } else {
      sched_yield();
    }
  }
  return -pthread_join(th, NULL);
}
