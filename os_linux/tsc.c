/*
 * os_linux/tsc.c: the elapsed counter (vmt_os_elapsed_nanos): the TSC converted to
 * nanoseconds when it is usable, CLOCK_MONOTONIC otherwise. The model is in tsc_impl.h.
 *
 * Why: a vDSO CLOCK_MONOTONIC read (an ordered rdtsc, a seqlock over the kernel's timekeeper, a
 * multiply) costs over twice a plain rdtsc here (docs/cpu-time.md). The cached variant keeps the
 * current segment in a thread-local copy that stays valid until a TSC value before which the
 * writer promised not to change the function, so the fast path is rdtsc, two compares and a
 * multiply with no shared cache line to miss on (the "TscCacheTimer" idea: tails above 200 ns
 * removed). Calibration is against CLOCK_MONOTONIC, never the brand-string frequency, with
 * paired reads (monotonic, tsc, monotonic; the pair with the smallest gap of 16 wins), first
 * over 2 ms, then at doubling intervals up to 1 s, each slope measured since the previous pair
 * (a 60 ns pair error over 1 s is 0.06 ppm; a baseline from the very first pair would lag
 * behind NTP slewing CLOCK_MONOTONIC). Each recalibration also corrects the offset by bending
 * the slope (at most 500 ppm, NTP's slew bound) so the error decays over the next interval;
 * nothing ever steps.
 *
 * Like HotSpot's elapsed counter on x86 this reads a plain rdtsc (not lfence;rdtsc): it is
 * monotonic per thread, and across threads only as ordered as the TSC reads themselves.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
#define VMT_HAVE_TSC 1
#else
#define VMT_HAVE_TSC 0
#endif

#include "os_linux/os_impl.h"
#include "os_linux/tsc_impl.h"

/* ---- The real environment ------------------------------------------------------------- */

static uint64_t real_read_tsc(void *ctx) {
  (void)ctx;
#if VMT_HAVE_TSC
  return __rdtsc();
#else
  return 0;
#endif
}

static int64_t real_read_monotonic(void *ctx) {
  (void)ctx;
  return vmt_os_java_time_nanos();
}

static void real_sleep_ns(void *ctx, int64_t ns) {
  (void)ctx;
  struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000), .tv_nsec = (long)(ns % 1000000000)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static bool real_cpuid(void *ctx, uint32_t leaf, uint32_t regs[4]) {
  (void)ctx;
#if VMT_HAVE_TSC
  unsigned a, b, c, d;
  /* __get_cpuid checks the leaf against the maximum of its range (basic or extended). */
  if (!__get_cpuid(leaf, &a, &b, &c, &d)) return false;
  regs[0] = a;
  regs[1] = b;
  regs[2] = c;
  regs[3] = d;
  return true;
#else
  (void)leaf;
  (void)regs;
  return false;
#endif
}

static int real_read_clocksource(void *ctx, char *buf, size_t len) {
  (void)ctx;
  int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  ssize_t n;
  do {
    n = read(fd, buf, len - 1);
  } while (n < 0 && errno == EINTR);
  int err = n < 0 ? -errno : 0;
  close(fd);
  if (err) return err;
  buf[n] = '\0';
  return 0;
}

const vmt_os__tsc_env_t vmt_os__tsc_real_env = {
    .read_tsc = real_read_tsc,
    .read_monotonic = real_read_monotonic,
    .sleep_ns = real_sleep_ns,
    .cpuid = real_cpuid,
    .read_clocksource = real_read_clocksource,
    .ctx = NULL,
};

/* ---- Decision ------------------------------------------------------------------------- */

#define CPUID_EXT_MAX 0x80000000u
#define CPUID_APM 0x80000007u        /* advanced power management: EDX[8] invariant TSC */
#define CPUID_INVARIANT_TSC (1u << 8)

bool vmt_os__tsc_decide(const vmt_os__tsc_env_t *env, const char **reason) {
  uint32_t regs[4];
  if (!env->cpuid(env->ctx, CPUID_EXT_MAX, regs)) {
    *reason = "no CPUID (not x86)";
    return false;
  }
  /* Intel answers a leaf above the maximum with the highest basic leaf's data: never read it
   * without checking the maximum first. */
  if (regs[0] < CPUID_APM) {
    *reason = "CPUID max extended leaf below 0x80000007: invariant-TSC bit unavailable";
    return false;
  }
  if (!env->cpuid(env->ctx, CPUID_APM, regs) || (regs[3] & CPUID_INVARIANT_TSC) == 0) {
    *reason = "CPUID 0x80000007 EDX[8] clear: the TSC is not invariant";
    return false;
  }
  char source[64];
  int err = env->read_clocksource(env->ctx, source, sizeof(source));
  if (err == -EMFILE || err == -ENFILE) {
    /* The host's condition, not the machine's: say so, the decision is made once. */
    *reason = "current_clocksource unreadable: no file descriptor left when the runtime first "
              "ran (the source is decided once per process)";
    return false;
  }
  if (err != 0) {
    *reason = "current_clocksource unreadable";
    return false;
  }
  source[strcspn(source, "\n ")] = '\0';
  if (strcmp(source, "tsc") != 0) {
    *reason = "the kernel's current clocksource is not tsc (it found the TSC unstable or "
              "unsynchronised, or prefers another)";
    return false;
  }
  *reason = "invariant TSC (CPUID) and the kernel's clocksource is tsc";
  return true;
}

/* ---- Calibration ---------------------------------------------------------------------- */

typedef struct pair {
  uint64_t tsc;
  int64_t ns;
} pair_t;

/* monotonic, tsc, monotonic: the pair whose two monotonic reads are closest brackets the TSC
 * read best; its midpoint is the estimate (error <= gap / 2). */
static pair_t read_pair(const vmt_os__tsc_env_t *env) {
  pair_t best = {0, 0};
  int64_t best_gap = INT64_MAX;
  for (int i = 0; i < 16; i++) {
    int64_t m0 = env->read_monotonic(env->ctx);
    uint64_t t = env->read_tsc(env->ctx);
    int64_t m1 = env->read_monotonic(env->ctx);
    int64_t gap = m1 - m0;
    if (gap >= 0 && gap < best_gap) {
      best_gap = gap;
      best.tsc = t;
      best.ns = m0 + gap / 2;
    }
  }
  return best;
}

/* ns per tick << 32 from two points; 0 if they do not define a positive slope. */
static uint64_t slope(uint64_t t0, int64_t n0, uint64_t t1, int64_t n1) {
  if (t1 <= t0 || n1 <= n0) return 0;
  unsigned __int128 m = ((unsigned __int128)(uint64_t)(n1 - n0) << 32) / (t1 - t0);
  return m > UINT64_MAX ? 0 : (uint64_t)m;
}

/* Ticks in ns nanoseconds at slope mult (ns per tick << 32). */
static uint64_t ticks_for(int64_t ns, uint64_t mult) {
  return (uint64_t)(((unsigned __int128)(uint64_t)ns << 32) / mult);
}

static void publish_copy(vmt_os__tsc_published_t *p, const vmt_os__tsc_segment_t *prev,
                         const vmt_os__tsc_segment_t *cur, uint64_t next_recal) {
  atomic_store_explicit(&p->prev_tsc, prev->tsc, memory_order_release);
  atomic_store_explicit(&p->prev_ns, prev->ns, memory_order_release);
  atomic_store_explicit(&p->prev_mult, prev->mult, memory_order_release);
  atomic_store_explicit(&p->cur_tsc, cur->tsc, memory_order_release);
  atomic_store_explicit(&p->cur_ns, cur->ns, memory_order_release);
  atomic_store_explicit(&p->cur_mult, cur->mult, memory_order_release);
  atomic_store_explicit(&p->next_recal_tsc, next_recal, memory_order_release);
}

/* The second half of a write (the first made seq odd and set write_limit): pub[0] while
 * readers use pub[1], then pub[1] while they use pub[0]. */
static void publish(vmt_os__tsc_clock_t *c, uint64_t odd_seq, const vmt_os__tsc_segment_t *prev,
                    const vmt_os__tsc_segment_t *cur, uint64_t next_recal) {
  publish_copy(&c->pub[0], prev, cur, next_recal);
  atomic_store_explicit(&c->seq, odd_seq + 1, memory_order_release);
  publish_copy(&c->pub[1], prev, cur, next_recal);
  atomic_store_explicit(&c->write_limit, UINT64_MAX, memory_order_release);
}

int vmt_os__tsc_clock_init(vmt_os__tsc_clock_t *c, const vmt_os__tsc_env_t *env) {
  memset(c, 0, sizeof(*c));
  c->env = env;
  c->max_slew_ppm = VMT_OS__TSC_MAX_SLEW_PPM;
  pair_t p0 = read_pair(env);
  env->sleep_ns(env->ctx, VMT_OS__TSC_FIRST_INTERVAL_NS);
  pair_t p1 = read_pair(env);
  uint64_t mult = slope(p0.tsc, p0.ns, p1.tsc, p1.ns);
  if (mult == 0) return -EINVAL;
  pthread_mutex_init(&c->writer, NULL);
  c->anchor_tsc = p0.tsc;
  c->anchor_ns = p0.ns;
  c->interval_ns = 2 * VMT_OS__TSC_FIRST_INTERVAL_NS;
  c->max_interval_ns = VMT_OS__TSC_MAX_INTERVAL_NS;
  vmt_os__tsc_segment_t seg = {.tsc = p1.tsc, .ns = p1.ns, .mult = mult};
  /* seq 2 marks "published": readers never see a zeroed clock as valid. */
  atomic_store_explicit(&c->write_limit, UINT64_MAX, memory_order_relaxed);
  publish(c, 1, &seg, &seg, p1.tsc + ticks_for(c->interval_ns, mult));
  return 0;
}

void vmt_os__tsc_clock_destroy(vmt_os__tsc_clock_t *c) {
  if (atomic_load_explicit(&c->seq, memory_order_relaxed) != 0)
    pthread_mutex_destroy(&c->writer);
}

typedef struct params {
  vmt_os__tsc_segment_t prev, cur;
  uint64_t next_recal;
} params_t;

/* Never waits: it copies the half no writer is rewriting, and retries only if a writer
 * finished a half in the meantime. Returns the write limit (UINT64_MAX when no write is in
 * progress). */
static uint64_t read_params(vmt_os__tsc_clock_t *c, params_t *p) {
  for (;;) {
    uint64_t s1 = atomic_load_explicit(&c->seq, memory_order_acquire);
    vmt_os__tsc_published_t *pub = &c->pub[s1 & 1];
    p->prev.tsc = atomic_load_explicit(&pub->prev_tsc, memory_order_acquire);
    p->prev.ns = atomic_load_explicit(&pub->prev_ns, memory_order_acquire);
    p->prev.mult = atomic_load_explicit(&pub->prev_mult, memory_order_acquire);
    p->cur.tsc = atomic_load_explicit(&pub->cur_tsc, memory_order_acquire);
    p->cur.ns = atomic_load_explicit(&pub->cur_ns, memory_order_acquire);
    p->cur.mult = atomic_load_explicit(&pub->cur_mult, memory_order_acquire);
    p->next_recal = atomic_load_explicit(&pub->next_recal_tsc, memory_order_acquire);
    uint64_t limit = atomic_load_explicit(&c->write_limit, memory_order_acquire);
    if (atomic_load_explicit(&c->seq, memory_order_relaxed) == s1) return limit;
  }
}

/* Under c->writer. False if nothing was published: a segment published earlier has not been
 * reached yet (only an off-schedule call can find that), or the clocks did not advance. */
static bool recalibrate_locked(vmt_os__tsc_clock_t *c) {
  const vmt_os__tsc_env_t *env = c->env;
  pair_t p = read_pair(env);   /* the clock reads stay outside the write section */
  uint64_t rate = slope(c->anchor_tsc, c->anchor_ns, p.tsc, p.ns);
  if (rate == 0) return false;
  params_t old;
  read_params(c, &old);
  /* Only two segments are kept: the one in force must be the current one, else dropping the
   * previous would freeze the clock until the current one starts. */
  if (env->read_tsc(env->ctx) < old.cur.tsc) return false;
  int64_t interval = c->interval_ns * 2;
  if (interval > c->max_interval_ns) interval = c->max_interval_ns;

  /* From here readers may convert with the old function only below the write limit: it is at
   * most the new segment's start (below), which is at least the TSC now plus 1 us. A reader
   * that copied before seq went odd read its TSC before that, hence below `now`. */
  uint64_t margin = ticks_for(1000, rate);
  atomic_store_explicit(&c->write_limit, env->read_tsc(env->ctx) + margin, memory_order_relaxed);
  uint64_t seq = atomic_load_explicit(&c->seq, memory_order_relaxed);
  atomic_store_explicit(&c->seq, seq + 1, memory_order_release);
  /* The new segment must start where no one has converted with the old function yet: after
   * every TSC value read before the sequence went odd (`now`, plus 1 us for cross-CPU skew),
   * and not before old.next_recal, below which threads' cached copies of the current segment
   * stay valid. On schedule the first bound is the later one (a reader's TSC reached
   * next_recal before this began); an off-schedule call starts its segment in the future. */
  uint64_t now = env->read_tsc(env->ctx);
  uint64_t start = (p.tsc > now ? p.tsc : now) + margin;
  if (start < old.next_recal) start = old.next_recal;
  int64_t value = vmt_os__tsc_segment_convert(&old.cur, start);
  int64_t truth = p.ns + (int64_t)(((unsigned __int128)(start - p.tsc) * rate) >> 32);
  int64_t error = value - truth;
  /* Bend the slope so the error decays over the next interval: mult = rate * (1 - e / I),
   * bounded by the slew limit. */
  __int128 adjust = (__int128)rate * error / interval;
  __int128 bound = (__int128)rate * c->max_slew_ppm / 1000000;
  if (adjust > bound) adjust = bound;
  if (adjust < -bound) adjust = -bound;
  vmt_os__tsc_segment_t seg = {.tsc = start, .ns = value, .mult = (uint64_t)(rate - adjust)};
  publish(c, seq + 1, &old.cur, &seg, start + ticks_for(interval, seg.mult));

  c->interval_ns = interval;
  c->anchor_tsc = p.tsc;
  c->anchor_ns = p.ns;
  atomic_store_explicit(&c->last_error_ns, error, memory_order_relaxed);
  atomic_fetch_add_explicit(&c->recalibrations, 1, memory_order_relaxed);
  return true;
}

bool vmt_os__tsc_clock_recalibrate(vmt_os__tsc_clock_t *c) {
  pthread_mutex_lock(&c->writer);
  bool done = recalibrate_locked(c);
  pthread_mutex_unlock(&c->writer);
  return done;
}

static int64_t convert(vmt_os__tsc_clock_t *c, uint64_t tsc, params_t *p) {
  uint64_t limit = read_params(c, p);
  if (tsc >= p->next_recal) {
    if (pthread_mutex_trylock(&c->writer) == 0) {
      /* Still due? Another thread may have done it between our read and the lock. */
      read_params(c, p);
      if (tsc >= p->next_recal) recalibrate_locked(c);
      pthread_mutex_unlock(&c->writer);
      limit = read_params(c, p);
    } else if (limit == UINT64_MAX) {
      /* A writer holds the lock but has not opened its write section yet (it is measuring its
       * pair): the write limit it will publish comes from a TSC it may have read before ours.
       * Run no further than the promise, or the next read, clamped to that limit, would go
       * back (test/tsc_internal_test.c, a_reader_racing_a_recalibration_never_goes_back). */
      limit = p->next_recal;
    }
  }
  /* A trylock loser converts with the current segments: below any segment start a writer
   * may still publish, the function is the one it has. While a write is in progress (or about
   * to be) that is below the write limit, or the promise of the copy read, whichever is later:
   * past it the clock waits for the writer's new function instead of running ahead with the
   * old one. */
  if (limit != UINT64_MAX) {
    uint64_t bound = limit > p->next_recal ? limit : p->next_recal;
    if (tsc > bound) tsc = bound;
  }
  return vmt_os__tsc_segment_convert(tsc >= p->cur.tsc ? &p->cur : &p->prev, tsc);
}

int64_t vmt_os__tsc_clock_convert(vmt_os__tsc_clock_t *c, uint64_t tsc) {
  params_t p;
  return convert(c, tsc, &p);
}

int64_t vmt_os__tsc_clock_convert_cached_slow(vmt_os__tsc_clock_t *c, vmt_os__tsc_cache_t *cache,
                                              uint64_t tsc) {
  params_t p;
  int64_t ns = convert(c, tsc, &p);
  cache->seg = p.cur;
  cache->valid_until = p.next_recal;
  return ns;
}

/* ---- The global elapsed counter ------------------------------------------------------- */

enum { MODE_UNKNOWN = 0, MODE_MONOTONIC, MODE_TSC };

/* The fast path reads elapsed_mode and the thread's cache, nothing else: each on a cache line
 * of its own, so that no write elsewhere (a recalibration, another module's counter) ever
 * invalidates what it reads. */
static vmt_os__tsc_clock_t global_clock __attribute__((aligned(64)));
static _Atomic int elapsed_mode __attribute__((aligned(64)));
static const char *elapsed_reason = "not probed yet";
/* initial-exec: one %fs-relative load, no __tls_get_addr call even in the shared library. */
static __thread vmt_os__tsc_cache_t tls_cache
    __attribute__((tls_model("initial-exec"), aligned(64)));

/* fork(): a child must not inherit a recalibration in progress (a half-written latch would
 * stay half-written, a held writer lock would stop its recalibrations). The prepare handler
 * takes the writer lock, so no write section is open across fork; both sides release it. The
 * lock exists once the TSC is in use; prepare says whether it took it (a fork concurrent with
 * the probe may find the mode changed by the time fork returns). */
static bool writer_held_for_fork;
static void fork_prepare(void) {
  writer_held_for_fork = atomic_load_explicit(&elapsed_mode, memory_order_acquire) == MODE_TSC;
  if (writer_held_for_fork) pthread_mutex_lock(&global_clock.writer);
}
static void fork_release(void) {
  if (writer_held_for_fork) pthread_mutex_unlock(&global_clock.writer);
}
VMT__PROCESS_STATE(tsc_clock, .symbols = "global_clock writer_held_for_fork",
                   .rule = VMT__FORK_HOLD,
                   .fork = "no recalibration is in progress across fork (its writer lock is "
                           "held); the segments are the child's too (same TSC)",
                   .rank = VMT__RANK_PORT, .prepare = fork_prepare, .parent = fork_release,
                   .child = fork_release);
VMT__PROCESS_STATE(tsc_mode,
                   .symbols = "elapsed_mode elapsed_reason tls_cache vmt_os__tsc_real_env",
                   .rule = VMT__FORK_KEEP,
                   .fork = "the source decision and the forking thread's cached segment hold "
                           "in the child");

void vmt_os__elapsed_init(void) {
  const char *reason;
  int mode = MODE_MONOTONIC;
  if (vmt_os__tsc_decide(&vmt_os__tsc_real_env, &reason)) {
    if (vmt_os__tsc_clock_init(&global_clock, &vmt_os__tsc_real_env) == 0) {
      mode = MODE_TSC;
    } else {
      reason = "the TSC did not advance during calibration";
    }
  }
  elapsed_reason = reason;
  atomic_store_explicit(&elapsed_mode, mode, memory_order_release);
}

static int elapsed_mode_now(void) {
  int mode = atomic_load_explicit(&elapsed_mode, memory_order_acquire);
  if (__builtin_expect(mode != MODE_UNKNOWN, 1)) return mode;
  vmt_os_init();
  return atomic_load_explicit(&elapsed_mode, memory_order_acquire);
}

int64_t vmt_os_elapsed_nanos(void) {
  if (__builtin_expect(elapsed_mode_now() == MODE_TSC, 1))
    return vmt_os__tsc_clock_convert_cached(&global_clock, &tls_cache, real_read_tsc(NULL));
  return vmt_os_java_time_nanos();
}

int64_t vmt_os__elapsed_nanos_seqlock(void) {
  if (elapsed_mode_now() == MODE_TSC)
    return vmt_os__tsc_clock_convert(&global_clock, real_read_tsc(NULL));
  return vmt_os_java_time_nanos();
}

bool vmt_os__elapsed_uses_tsc(void) { return elapsed_mode_now() == MODE_TSC; }

bool vmt_os__elapsed_recalibrate(void) {
  return elapsed_mode_now() == MODE_TSC && vmt_os__tsc_clock_recalibrate(&global_clock);
}

const char *vmt_os_elapsed_source(void) {
  return elapsed_mode_now() == MODE_TSC ? "tsc" : "clock_monotonic";
}

const char *vmt_os_elapsed_source_reason(void) {
  elapsed_mode_now();
  return elapsed_reason;
}

void vmt_os__elapsed_stats(int64_t *last_error_ns, uint64_t *recalibrations) {
  *last_error_ns = atomic_load_explicit(&global_clock.last_error_ns, memory_order_relaxed);
  *recalibrations = atomic_load_explicit(&global_clock.recalibrations, memory_order_relaxed);
}
