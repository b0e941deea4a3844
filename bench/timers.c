/*
 * bench/timers.c: time sources (issue 3): vDSO CLOCK_MONOTONIC (the baseline; Java's
 * System.nanoTime), vmthread's vmt_nanotime, raw rdtsc / rdtscp, and the calibrated TSC
 * counter in its two forms: "vmt_counter" reads the published parameters through the seqlock
 * on every call, "vmt_counter_cached" (what vmt_elapsed_nanos() is) uses the thread's cached
 * copy. Also the counter's drift against CLOCK_MONOTONIC over the run, in ppm.
 *
 * These calls are cheaper than the timestamps that would time them, so each sample times a
 * batch of BATCH calls (two CLOCK_MONOTONIC reads around the batch) and reports per call; the
 * "timer_overhead" row is the same batch with no call in it: the measuring cost per call that
 * is inside every other row. Variants are sampled in interleaved rounds (blocks of 1000, each
 * after 16 discarded samples), after a warm-up.
 *
 * Uses the public API, plus the port's internals (os_linux/tsc_impl.h) for the seqlock
 * variant and the recalibration figures.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "bench/harness.h"
#include "os_linux/tsc_impl.h"
#include "vmthread.h"

#define BATCH 16
#define BLOCK 1000
/* Each block starts with REWARM discarded samples. Without them the first sample after the
 * switch from another variant (cold branch predictors and cache lines) was the block's maximum
 * in most blocks here: an artifact of interleaving that lands at exactly 1/BLOCK, p99.9. */
#define REWARM 16
static double scratch[REWARM];

static int64_t mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline uint64_t rdtscp_(void) {
  unsigned aux;
  return __rdtscp(&aux);
}

#define SAMPLER(name, expr)                                        \
  static void sample_##name(double *out, size_t n) {               \
    for (size_t i = 0; i < n; i++) {                               \
      int64_t t0 = vmtb_now_ns();                                  \
      for (int k = 0; k < BATCH; k++) {                            \
        int64_t v = (int64_t)(expr);                               \
        VMTB_SINK(v);                                              \
      }                                                            \
      int64_t t1 = vmtb_now_ns();                                  \
      out[i] = (double)(t1 - t0) / BATCH;                          \
    }                                                              \
  }

SAMPLER(timer_overhead, k)
SAMPLER(clock_monotonic, mono())
SAMPLER(vmt_nanotime, vmt_nanotime())
SAMPLER(rdtsc, __rdtsc())
SAMPLER(rdtscp, rdtscp_())
SAMPLER(vmt_counter, vmt_os__elapsed_nanos_seqlock())
SAMPLER(vmt_counter_cached, vmt_elapsed_nanos())

typedef struct variant {
  const char *name;
  void (*sample)(double *, size_t);
  bool counter;   /* carries the drift figure */
  double *samples;
  size_t n;
} variant_t;

#define V(name, counter) {#name, sample_##name, counter, NULL, 0}
static variant_t variants[] = {
    V(timer_overhead, false), V(clock_monotonic, false), V(vmt_nanotime, false),
    V(rdtsc, false),          V(rdtscp, false),          V(vmt_counter, true),
    V(vmt_counter_cached, true),
};
#define NVARIANTS (sizeof(variants) / sizeof(variants[0]))

/* counter - monotonic, from the closest of 16 paired reads. */
static double offset_ns(void) {
  double best = 0;
  int64_t best_gap = INT64_MAX;
  for (int i = 0; i < 16; i++) {
    int64_t m0 = mono(), e = vmt_elapsed_nanos(), m1 = mono();
    if (m1 - m0 < best_gap) {
      best_gap = m1 - m0;
      best = (double)e - ((double)m0 + (double)(m1 - m0) / 2);
    }
  }
  return best;
}

static vmtb_result_t results[NVARIANTS];

static double p50_of(const char *name) {
  for (size_t i = 0; i < NVARIANTS; i++)
    if (strcmp(variants[i].name, name) == 0) return results[i].p50;
  abort();
}

int main(int argc, char **argv) {
  vmtb_options_t opts;
  vmtb_parse_args(argc, argv, &opts, NULL);
  size_t per_variant = opts.quick ? 20000 : opts.longrun ? 1000000 : 200000;
  /* The drift is measured over at least this long, whatever the sample count. */
  int64_t min_span_ns = opts.longrun ? 10000000000LL : 1000000000LL;

  if (!opts.json) vmtb_describe_machine(stdout);
  vmtb_note(&opts, "elapsed counter source: %s (%s)", vmt_elapsed_source(),
            vmt_elapsed_source_reason());
  vmtb_note(&opts, "timers: %zu samples per variant, each the mean of a batch of %d calls "
            "between two CLOCK_MONOTONIC reads; interleaved blocks of %d samples",
            per_variant, BATCH, BLOCK);

  for (size_t i = 0; i < NVARIANTS; i++) {
    variants[i].samples = malloc(per_variant * sizeof(double));
    if (variants[i].samples == NULL) return 1;
    variants[i].sample(variants[i].samples, BLOCK);   /* warm-up */
  }
  int64_t m_start = mono();
  double off_start = offset_ns();
  for (size_t done = 0; done < per_variant; done += BLOCK) {
    size_t k = per_variant - done < BLOCK ? per_variant - done : BLOCK;
    for (size_t i = 0; i < NVARIANTS; i++) {
      variants[i].sample(scratch, REWARM);   /* discarded: see REWARM */
      variants[i].sample(variants[i].samples + done, k);
      variants[i].n += k;
    }
  }
  /* Keep reading the counter (as a program would) until the drift span is reached. */
  while (mono() - m_start < min_span_ns) {
    for (int i = 0; i < 1000; i++) VMTB_SINK(vmt_elapsed_nanos());
    usleep(10000);
  }
  int64_t span = mono() - m_start;
  double drift_ppm = (offset_ns() - off_start) / (double)span * 1e6;

  char extra[160];
  vmtb_table_header(&opts, "timers: one read (ns per call, batches of 16, measuring included)");
  for (size_t i = 0; i < NVARIANTS; i++) {
    results[i] = (vmtb_result_t){.bench = "timers", .variant = variants[i].name, .unit = "ns"};
    vmtb_stats(variants[i].samples, variants[i].n, &results[i]);
    if (variants[i].counter)
      snprintf(extra, sizeof(extra), "\"batch\":%d,\"drift_ppm\":%.3f,\"drift_span_ms\":%.0f",
               BATCH, drift_ppm, (double)span / 1e6);
    else
      snprintf(extra, sizeof(extra), "\"batch\":%d", BATCH);
    vmtb_report(&opts, &results[i], extra);
  }
  int64_t last_error;
  uint64_t recalibrations;
  vmt_os__elapsed_stats(&last_error, &recalibrations);
  vmtb_note(&opts, "\nmeasuring overhead: %.1f ns per call (timer_overhead p50) is inside "
            "every row above", p50_of("timer_overhead"));
  vmtb_note(&opts, "clock_monotonic / vmt_counter_cached p50: %.2fx (done when >= 1.4x)",
            p50_of("clock_monotonic") / p50_of("vmt_counter_cached"));
  vmtb_note(&opts, "clock_monotonic / vmt_counter p50:        %.2fx",
            p50_of("clock_monotonic") / p50_of("vmt_counter"));
  vmtb_note(&opts, "counter drift vs CLOCK_MONOTONIC over %.2f s: %+.3f ppm (done when |x| < 50); "
            "%llu recalibrations, last error %+lld ns",
            (double)span / 1e9, drift_ppm, (unsigned long long)recalibrations,
            (long long)last_error);
  for (size_t i = 0; i < NVARIANTS; i++) free(variants[i].samples);
  return 0;
}
