/*
 * vmthread/clock.h: CPU time of threads and fast time sources.
 *
 * Three kinds of CPU time (semantics and measured cost in docs/cpu-time.md):
 *   VMT_CPU_TOTAL        user+system, nanosecond precise (the kernel's CPUCLOCK_SCHED).
 *   VMT_CPU_USER         user only, *consistent*: never greater than TOTAL read after it and
 *                        monotonic non-decreasing per thread. The management API's default.
 *   VMT_CPU_USER_FAST    user only, raw tick-based CPUCLOCK_VIRT (OpenJDK 26 semantics): one
 *                        syscall, 4 ms granular at HZ=250, and may exceed TOTAL.
 */
#ifndef VMTHREAD_CLOCK_H
#define VMTHREAD_CLOCK_H

#include "vmthread/common.h"
#include "vmthread/thread.h"

VMT_EXTERN_C_BEGIN

/* The clock of an absolute deadline (vmt_park_until). */
typedef enum vmt_clock {
  VMT_CLOCK_MONOTONIC = 0,   /* vmt_nanotime's scale: System.nanoTime */
  VMT_CLOCK_REALTIME = 1,    /* ns since the Unix epoch: System.currentTimeMillis * 10^6 */
} vmt_clock_t;

typedef enum vmt_cpu_kind {
  VMT_CPU_TOTAL = 0,
  VMT_CPU_USER,
  VMT_CPU_USER_FAST,
} vmt_cpu_kind_t;

/*
 * CPU time of t in nanoseconds, or -1 when t is NULL, has not started, has terminated or is
 * terminating. Never another thread's time: the read is validated against the runtime's own
 * record of t, not against a pthread_t.
 */
VMT_EXPORT int64_t vmt_thread_cpu_time(vmt_thread_t *t, vmt_cpu_kind_t kind);

/* CPU time of the calling thread (any thread, attached or not); -1 only on a bad kind. */
VMT_EXPORT int64_t vmt_current_thread_cpu_time(vmt_cpu_kind_t kind);

/* CLOCK_MONOTONIC in nanoseconds (vDSO): Java's System.nanoTime(). */
VMT_EXPORT int64_t vmt_nanotime(void);

/*
 * The elapsed counter: the TSC when it is usable (invariant TSC and the kernel's clocksource is
 * tsc), calibrated against CLOCK_MONOTONIC; CLOCK_MONOTONIC otherwise. Nanoseconds, monotonic.
 */
VMT_EXPORT int64_t vmt_elapsed_nanos(void);

/* Which source the elapsed counter uses ("tsc" or "clock_monotonic") and why, for logs. The
 * source is decided once per process, at the runtime's first use (vmt_os_init: the first thread
 * start, attach, capability query or elapsed read); a process with no file descriptor left then
 * cannot read the kernel's clocksource and uses CLOCK_MONOTONIC for its life, and the reason
 * says so. */
VMT_EXPORT const char *vmt_elapsed_source(void);
VMT_EXPORT const char *vmt_elapsed_source_reason(void);

VMT_EXTERN_C_END

#endif /* VMTHREAD_CLOCK_H */
