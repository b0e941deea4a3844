/*
 * os_linux/tsc_impl.h: the elapsed counter's machinery, exposed to tsc.c and to the tests of
 * internals. A vmt_os__tsc_clock_t is one calibrated TSC clock: the global one runs on the
 * real rdtsc/CLOCK_MONOTONIC/CPUID/sysfs; a test builds its own on a fake environment (the
 * test seam), drives it with chosen TSC values and checks the decision, the conversion and
 * the recalibration exactly.
 *
 * The clock is a continuous piecewise-linear function of the TSC value:
 *   ns(T) = seg.ns + ((T - seg.tsc) * seg.mult) >> 32      (seg = cur if T >= cur.tsc else prev)
 * with T - seg.tsc clamped at 0. Recalibration appends a segment that starts at a TSC value no
 * reader has converted yet, with seg.ns = the old function's value there: the slope changes,
 * the value never steps. Segments are published through a latch (two copies, Linux's
 * seqcount_latch), so a reader never waits for the writer: not for one preempted inside its
 * write, nor, from a signal handler, for the writer it interrupted on its own thread (a seqlock
 * reader spun there without a bound). `next_recal_tsc` promises that the function below it will
 * not change, which lets a per-thread cache of the current segment be used without touching
 * shared memory at all (the "cached" variant).
 */
#ifndef VMT_OS_LINUX_TSC_IMPL_H
#define VMT_OS_LINUX_TSC_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where the clock gets its inputs. All members are set; ctx is passed back. */
typedef struct vmt_os__tsc_env {
  uint64_t (*read_tsc)(void *ctx);
  int64_t (*read_monotonic)(void *ctx);          /* CLOCK_MONOTONIC ns */
  void (*sleep_ns)(void *ctx, int64_t ns);       /* calibration interval */
  /* CPUID leaf into regs (eax, ebx, ecx, edx); false if the CPU has no CPUID. */
  bool (*cpuid)(void *ctx, uint32_t leaf, uint32_t regs[4]);
  /* Content of .../clocksource0/current_clocksource into buf (NUL-terminated); 0 or -errno. */
  int (*read_clocksource)(void *ctx, char *buf, size_t len);
  void *ctx;
} vmt_os__tsc_env_t;

/* The real environment: rdtsc, vDSO CLOCK_MONOTONIC, nanosleep, cpuid, sysfs. */
extern const vmt_os__tsc_env_t vmt_os__tsc_real_env;

/* Is the TSC usable as the elapsed counter? Needs the CPUID invariant-TSC bit (leaf 0x80000007
 * EDX bit 8, after checking that leaf 0x80000000 reports it exists) AND the kernel's current
 * clocksource being "tsc" (the kernel checked synchronisation across CPUs and stability; being
 * merely listed in available_clocksource is not enough). *reason says why, for logs. */
bool vmt_os__tsc_decide(const vmt_os__tsc_env_t *env, const char **reason);

typedef struct vmt_os__tsc_segment {
  uint64_t tsc;    /* first TSC value of the segment */
  int64_t ns;      /* its value there */
  uint64_t mult;   /* ns per tick, << 32 */
} vmt_os__tsc_segment_t;

/* A thread's private copy of the current segment, valid while T < valid_until. */
typedef struct vmt_os__tsc_cache {
  vmt_os__tsc_segment_t seg;
  uint64_t valid_until;   /* 0: empty */
} vmt_os__tsc_cache_t;

/* One published copy of the function: the two segments and the schedule's promise. */
typedef struct vmt_os__tsc_published {
  _Atomic uint64_t prev_tsc, prev_mult, cur_tsc, cur_mult, next_recal_tsc;
  _Atomic int64_t prev_ns, cur_ns;
} vmt_os__tsc_published_t;

typedef struct vmt_os__tsc_clock {
  const vmt_os__tsc_env_t *env;
  /* Published (latch): readers use pub[seq & 1]. The writer makes seq odd, rewrites pub[0],
   * makes it even, rewrites pub[1]; a reader retries only if seq moved while it copied, that is
   * if a writer finished a half meanwhile. Data fields are written with release stores and read
   * with acquire loads, which orders them against `seq` without standalone fences (Boehm, "Can
   * seqlocks get along with programming language memory models?", 2012), and keeps TSan able
   * to check it. While a write is in progress, write_limit bounds the TSC values the function
   * it replaces may still convert (below it the old and new functions agree); UINT64_MAX
   * otherwise. */
  _Atomic uint64_t seq;
  vmt_os__tsc_published_t pub[2];
  _Atomic uint64_t write_limit;
  /* Writer-only state, under `writer`. */
  pthread_mutex_t writer;
  uint64_t anchor_tsc;       /* the previous calibration pair: the next slope's baseline */
  int64_t anchor_ns;
  int64_t interval_ns;       /* current recalibration interval (doubles up to the maximum) */
  int64_t max_interval_ns;   /* VMT_OS__TSC_MAX_INTERVAL_NS; tests shorten it */
  int64_t max_slew_ppm;      /* bound on the offset-correcting slope change */
  _Atomic uint64_t recalibrations;
  _Atomic int64_t last_error_ns;   /* counter minus CLOCK_MONOTONIC at the last recalibration */
} vmt_os__tsc_clock_t;

#define VMT_OS__TSC_FIRST_INTERVAL_NS 2000000LL     /* initial calibration: 2 ms */
#define VMT_OS__TSC_MAX_INTERVAL_NS 1000000000LL    /* recalibrate at most every 1 s */
#define VMT_OS__TSC_MAX_SLEW_PPM 500                /* NTP's slew bound */

/* Calibrates clock on env (sleeps VMT_OS__TSC_FIRST_INTERVAL_NS). 0 or -EINVAL if the TSC did
 * not advance. */
int vmt_os__tsc_clock_init(vmt_os__tsc_clock_t *clock, const vmt_os__tsc_env_t *env);
void vmt_os__tsc_clock_destroy(vmt_os__tsc_clock_t *clock);

/* Converts TSC value tsc through the published segments (latch read), recalibrating first
 * if tsc has reached next_recal_tsc and no other thread is doing it. */
int64_t vmt_os__tsc_clock_convert(vmt_os__tsc_clock_t *clock, uint64_t tsc);
/* The same through a per-thread cache: no shared-memory access while the cache is valid. */
int64_t vmt_os__tsc_clock_convert_cached_slow(vmt_os__tsc_clock_t *clock,
                                              vmt_os__tsc_cache_t *cache, uint64_t tsc);

static inline int64_t vmt_os__tsc_segment_convert(const vmt_os__tsc_segment_t *seg,
                                                  uint64_t tsc) {
  /* Negative deltas (a TSC read older than the segment) are clamped: never before its start. */
  uint64_t delta = tsc > seg->tsc ? tsc - seg->tsc : 0;
  /* 64x64 -> 128-bit product: no overflow for any delta (mult < 2^64, so product < 2^128). */
  return seg->ns + (int64_t)(((unsigned __int128)delta * seg->mult) >> 32);
}

static inline int64_t vmt_os__tsc_clock_convert_cached(vmt_os__tsc_clock_t *clock,
                                                       vmt_os__tsc_cache_t *cache,
                                                       uint64_t tsc) {
  if (__builtin_expect(tsc >= cache->seg.tsc && tsc < cache->valid_until, 1))
    return vmt_os__tsc_segment_convert(&cache->seg, tsc);
  return vmt_os__tsc_clock_convert_cached_slow(clock, cache, tsc);
}

/* Recalibrates off schedule (tests; readers trigger it on schedule otherwise). It keeps the
 * schedule's promise: the new segment starts no earlier than the published next_recal_tsc
 * (threads' cached segments are valid below it), possibly in the future. False, with nothing
 * published, while a segment published earlier has not been reached. */
bool vmt_os__tsc_clock_recalibrate(vmt_os__tsc_clock_t *clock);

/* The global elapsed counter's fast paths, for the benchmark: the uncached variant (named
 * _seqlock for the benchmark's history) and the cached one; both CLOCK_MONOTONIC when the TSC
 * is not used. */
int64_t vmt_os__elapsed_nanos_seqlock(void);
bool vmt_os__elapsed_uses_tsc(void);
/* vmt_os__tsc_clock_recalibrate on the global counter (tests); false when not on the TSC. */
bool vmt_os__elapsed_recalibrate(void);
/* The global clock's last measured error against CLOCK_MONOTONIC (ns) and recalibrations. */
void vmt_os__elapsed_stats(int64_t *last_error_ns, uint64_t *recalibrations);

#endif /* VMT_OS_LINUX_TSC_IMPL_H */
