/*
 * os_linux/os_impl.h: what the files of the Linux port share and nothing else includes: the
 * CPU clock id encoding of the kernel ABI, the nanosecond helpers and the
 * test seams of the time sources. Hidden; tests of internals include it and say so.
 */
#ifndef VMT_OS_LINUX_OS_IMPL_H
#define VMT_OS_LINUX_OS_IMPL_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>

#include "runtime/os.h"
#include "runtime/process.h"

/*
 * CPU clock ids (include/linux/posix-timers.h, stable since 2.6.12): ((~pid) << 3) | bits,
 * where bit 2 marks a per-thread clock and bits 1..0 the type. Type 3 is the fd-clock path and
 * 0b111 is invalid, so the replacement mask covers all three bits (VMT_OS_CLOCK_FIELD_MASK),
 * never the type alone.
 */
#define VMT_OS_CPUCLOCK_PROF 0
#define VMT_OS_CPUCLOCK_VIRT 1
#define VMT_OS_CPUCLOCK_SCHED 2
#define VMT_OS_CPUCLOCK_TYPE_MASK 3
#define VMT_OS_CPUCLOCK_PERTHREAD 4
#define VMT_OS_CLOCK_FIELD_MASK 7

/* The clock id of type `type` of thread tid (tid 0: the calling thread, no pid lookup). */
static inline clockid_t vmt_os__thread_clock(pid_t tid, int type) {
  /* Computed on unsigned values: shifting a negative int left is undefined in C11. */
  return (clockid_t)((~(uint32_t)tid << 3) | VMT_OS_CPUCLOCK_PERTHREAD | (uint32_t)type);
}

/* The tid a per-thread clock id encodes (arithmetic shift of a negative value: gcc defines
 * it; we rely on two's complement throughout). */
static inline pid_t vmt_os__clock_tid(clockid_t clock) { return (pid_t)~(clock >> 3); }

static inline int64_t vmt_os__ts_ns(const struct timespec *ts) {
  return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

/*
 * clock_gettime of a CPU clock as one syscall instruction in the caller's code; 0 or -errno.
 * No CPU-time clock is served by the vDSO, so glibc's clock_gettime goes through the vDSO's
 * entry only to make the same syscall, and then returns. That return is what costs: after this
 * syscall (whose kernel path is deep) the first `ret` in user space mispredicts, measured here
 * (Linux 6.18, AMD EPYC with the SRSO and retpoline mitigations; 1000 sleeping threads, best of
 * 200 loops) at 299-314 ns per read when the syscall sits in any function that returns after
 * it, 188-190 ns when it is issued inline in the loop, while getppid() costs 162 ns either
 * way. A loop over threads with the syscall inline pays that once per loop, not per thread.
 * Other architectures use clock_gettime.
 */
static inline int vmt_os__clock_syscall(clockid_t clock, struct timespec *ts) {
#if defined(__x86_64__) && defined(SYS_clock_gettime)
  long ret;
  register long a1 __asm__("rdi") = clock;
  register long a2 __asm__("rsi") = (long)ts;
  __asm__ __volatile__("syscall"
                       : "=a"(ret)
                       : "0"((long)SYS_clock_gettime), "r"(a1), "r"(a2)
                       : "rcx", "r11", "memory");
  return (int)ret;
#else
  return clock_gettime(clock, ts) == 0 ? 0 : -errno;
#endif
}

/* Reads clocks types[0..n) of a live, bound thread into ns[0..n), in that order, validated once
 * after the last read (cpu_clock.c): a thread still not exiting then was there for every read.
 * -ESRCH when the thread has not started, is exiting or has exited; else 0 or -errno. */
int vmt_os__thread_clocks_read(const vmt_os_thread_t *ot, const int *types, int64_t *ns, int n);

/*
 * The /proc fallback (HotSpot's, when its clock_getres probe fails): which reads go through
 * /proc/self/task/<tid>/stat instead of a CPU clock. Set by the probe from the clocks that do
 * not work; 0 (every read by clock id) until then and on any normal system. Tick precision
 * (10 ms) and over 20x the cost of a clock read, but the same validation: -1 for a thread
 * that is not there.
 */
#define VMT_OS__PROC_THREAD_TOTAL 1u    /* another thread's SCHED (and PROF) */
#define VMT_OS__PROC_THREAD_USER 2u     /* another thread's VIRT */
#define VMT_OS__PROC_CURRENT_TOTAL 4u   /* the calling thread's SCHED */
#define VMT_OS__PROC_CURRENT_USER 8u    /* the calling thread's VIRT */
extern _Atomic unsigned vmt_os__proc_fallback;
/* Test seam: forces the fallback mask (after init); returns the previous one. */
unsigned vmt_os__set_proc_fallback(unsigned mask);
/* Tests: threads armed from now on use the end hook's fallback (__cxa_thread_atexit_impl), as
 * if the host had taken every thread-specific-data key before the library was loaded
 * (thread_end.c). Returns the previous setting. */
bool vmt_os__thread_end_force_fallback(bool on);
/* A clock of `type` read through /proc for tid: VIRT = utime, PROF and SCHED = utime + stime
 * (the kernel scales both to the precise runtime). 0 or -errno (-ESRCH: no such thread). */
int vmt_os__proc_clock_read(pid_t tid, int type, int64_t *ns);

/* ---- Time sources: the elapsed counter (tsc.c) ---------------------------------------- */
/* Decides the elapsed counter's source and calibrates it; called once by vmt_os_init(). */
void vmt_os__elapsed_init(void);

/* ---- Native stacks (unwind.c, cfi_unwind.c) --------------------------------------------- */
/* vmthread's own CFI unwinder (cfi_unwind.c): x86-64 only. Compiled under every sanitizer (the
 * tests compare it with libunwind there too); unwind.c decides where the handler uses it. */
#if defined(__x86_64__)
#define VMT__CFI_UNWINDER 1
/* Builds the table of loaded objects once (outside handlers); 0 or -ENOMEM. */
int vmt__cfi_prepare(void);
/* Rebuilds the table if objects were loaded or unloaded since it was built (outside
 * handlers): true if it did. The replaced table waits for vmt__cfi_release_retired. */
bool vmt__cfi_refresh(void);
/* Frees the replaced tables: only when no walk can hold one (no handler in flight). */
void vmt__cfi_release_retired(void);
/* Is the table built? */
bool vmt__cfi_ready(void);
/* Pcs that fell in no known object, since the process began. */
int64_t vmt__cfi_unknown_pcs(void);
/* The walk from a signal's context (any ucontext_t with the registers), reading stack words in
 * [the context's rsp, stack_hi) only, and only if stack_lo <= rsp < stack_hi. Async-signal-safe.
 * Returns the frames written (>= 1, the context's pc first), -ENOENT if the pc is 0, -EINVAL
 * for no context or buffer. */
int32_t vmt__cfi_walk(const void *ucontext, uintptr_t stack_lo, uintptr_t stack_hi,
                      uintptr_t *pcs, int32_t max);
#else
#define VMT__CFI_UNWINDER 0
#endif
/* libunwind's walk from the same context (UNW_INIT_SIGNAL_FRAME), for the tests and the bench
 * that compare the two: frames written, -EIO if it failed, -ENOTSUP without libunwind. */
int32_t vmt__libunwind_walk(const void *ucontext, uintptr_t *pcs, int32_t max);
/* A fork is between its prepare and its parent/child handlers (os_linux/loader.c; tests). */
bool vmt_os__loader_fork_pending(void);

#endif /* VMT_OS_LINUX_OS_IMPL_H */
