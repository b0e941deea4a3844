/*
 * os_linux/cpu_clock.c: CPU time of a thread by clock id (HotSpot's os::thread_cpu_time and
 * JDK-8372584's CPUCLOCK_VIRT user time), and of the calling thread by the pid-0 ids.
 *
 * DESIGN (never another thread's time). The clock id is computed from the tid in the runtime's
 * own record, never from a pthread_t (undefined after join; glibc and musl both yield the
 * caller's clock -2 in windows around exit). A tid stays valid until the thread has exited;
 * the thread sets `exiting` before it can exit. A reader therefore reads the clock, issues a
 * full fence, and loads `exiting`: clear means the thread had not begun to leave when the
 * clock was read, so the tid still named it (a recycled tid is only possible after exit).
 * Set means the value may belong to a new owner of the tid: -1.
 */
#include <errno.h>

#include "os_linux/os_impl.h"
#include "runtime/fault.h"

/* Inline in the loops below, so that a read of several clocks makes its syscalls back to back
 * (os_impl.h, vmt_os__clock_syscall: the first return after each one costs ~110 ns here). */
static inline __attribute__((always_inline)) int clock_read(clockid_t clock, int64_t *ns) {
  int err = vmt__fault_hit(VMT__FAULT_CLOCK);
  if (err) return err;
  struct timespec ts;
  err = vmt_os__clock_syscall(clock, &ts);
  if (err) return err;
  *ns = vmt_os__ts_ns(&ts);
  return 0;
}

int vmt_os_cpu_clockid(clockid_t base, bool user_only, clockid_t *out) {
  if (out == NULL) return -EINVAL;
  /* A per-thread CPU clock: negative, per-thread bit set, and not the invalid 0b111. */
  if (base >= 0 || (base & VMT_OS_CPUCLOCK_PERTHREAD) == 0 ||
      (base & VMT_OS_CPUCLOCK_TYPE_MASK) == VMT_OS_CPUCLOCK_TYPE_MASK)
    return -EINVAL;
  uint32_t type = user_only ? VMT_OS_CPUCLOCK_VIRT : VMT_OS_CPUCLOCK_SCHED;
  *out = (clockid_t)(((uint32_t)base & ~(uint32_t)VMT_OS_CLOCK_FIELD_MASK) |
                     VMT_OS_CPUCLOCK_PERTHREAD | type);
  return 0;
}

clockid_t vmt_os_current_cpu_clockid(bool user_only) {
  return vmt_os__thread_clock(0, user_only ? VMT_OS_CPUCLOCK_VIRT : VMT_OS_CPUCLOCK_SCHED);
}

/* The published tid of a thread that has not begun to leave; 0 otherwise. Read here, not
 * through vmt_os_thread_tid(): a call would return after the previous thread's syscall in the
 * sweep loop below. */
static inline pid_t live_tid(const vmt_os_thread_t *ot) {
  int32_t tid = atomic_load_explicit(&((vmt_os_thread_t *)ot)->tid, memory_order_acquire);
  if (tid <= 0) return 0;   /* never started (or still being bound) */
  if (atomic_load_explicit(&((vmt_os_thread_t *)ot)->exiting, memory_order_acquire)) return 0;
  return tid;
}

/* After a clock read: was the thread still there when it was read? The fence keeps the load
 * of `exiting` from being performed before the syscall's read of the task (the syscall is not
 * a C11 atomic, so only a fence orders it). ThreadSanitizer does not model fences and gcc
 * refuses them under -fsanitize=thread; it sees the seq_cst load instead. */
static inline bool still_alive(const vmt_os_thread_t *ot) {
#if !defined(__SANITIZE_THREAD__)
  atomic_thread_fence(memory_order_seq_cst);
#endif
  return atomic_load_explicit(&((vmt_os_thread_t *)ot)->exiting, memory_order_seq_cst) == 0;
}

/* The tid is recycled only after the thread has exited, and it sets `exiting` before that:
 * one check after the last read covers the earlier ones (consistent user time reads three
 * clocks; one fence instead of three). */
int vmt_os__thread_clocks_read(const vmt_os_thread_t *ot, const int *types, int64_t *ns, int n) {
  pid_t tid = live_tid(ot);
  if (tid == 0) return -ESRCH;
  unsigned fallback = atomic_load_explicit(&vmt_os__proc_fallback, memory_order_relaxed);
  for (int i = 0; i < n; i++) {
    unsigned proc = types[i] == VMT_OS_CPUCLOCK_VIRT ? VMT_OS__PROC_THREAD_USER
                                                     : VMT_OS__PROC_THREAD_TOTAL;
    int err;
    if (__builtin_expect(fallback & proc, 0))
      err = vmt_os__proc_clock_read(tid, types[i], &ns[i]);
    else
      err = clock_read(vmt_os__thread_clock(tid, types[i]), &ns[i]);
    if (err) return err == -EINVAL ? -ESRCH : err;   /* EINVAL: the task is gone */
  }
  return still_alive(ot) ? 0 : -ESRCH;
}

int64_t vmt_os_thread_cpu_time(const vmt_os_thread_t *ot, bool user_only, bool *success) {
  int type = user_only ? VMT_OS_CPUCLOCK_VIRT : VMT_OS_CPUCLOCK_SCHED;
  int64_t ns;
  bool ok = ot != NULL && vmt_os__thread_clocks_read(ot, &type, &ns, 1) == 0;
  if (success != NULL) *success = ok;
  return ok ? ns : -1;
}

void vmt_os_threads_cpu_time(const vmt_os_thread_t *const *ots, size_t n, int64_t *out,
                             const void *const *next, size_t nnext) {
  for (size_t i = 0; i < n; i++) {
    const vmt_os_thread_t *ot = ots[i];
    /* The next thread's tid and flag load during this one's syscall, and so does one of the
     * caller's next records. */
    if (i + 1 < n && ots[i + 1]) __builtin_prefetch(ots[i + 1]);
    if (i < nnext) {
      __builtin_prefetch(next[i]);
      __builtin_prefetch((const char *)next[i] + 64);
    }
    if (__builtin_expect(atomic_load_explicit(&vmt_os__proc_fallback, memory_order_relaxed) &
                             VMT_OS__PROC_THREAD_TOTAL,
                         0)) {
      out[i] = vmt_os_thread_cpu_time(ot, false, NULL);
      continue;
    }
    /* vmt_os__thread_clocks_read for one SCHED clock, written out so that nothing returns
     * between one thread's syscall and the next. */
    pid_t tid = ot ? live_tid(ot) : 0;
    int64_t ns = -1;
    if (tid != 0 && clock_read(vmt_os__thread_clock(tid, VMT_OS_CPUCLOCK_SCHED), &ns) != 0)
      ns = -1;
    out[i] = ns >= 0 && still_alive(ot) ? ns : -1;
  }
}

int64_t vmt_os_current_thread_cpu_time(bool user_only) {
  int64_t ns;
  unsigned proc = user_only ? VMT_OS__PROC_CURRENT_USER : VMT_OS__PROC_CURRENT_TOTAL;
  int type = user_only ? VMT_OS_CPUCLOCK_VIRT : VMT_OS_CPUCLOCK_SCHED;
  int err;
  if (__builtin_expect(atomic_load_explicit(&vmt_os__proc_fallback, memory_order_relaxed) & proc,
                       0))
    err = vmt_os__proc_clock_read(vmt_os_current_tid(), type, &ns);
  else
    err = clock_read(vmt_os__thread_clock(0, type), &ns);
  return err ? -1 : ns;
}
