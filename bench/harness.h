/*
 * bench/harness.h: what every vmthread benchmark shares. JMH "sample mode" statistics over
 * per-call samples, one result row format for people (a table) and one for machines (JSON
 * lines, the schema in docs/benchmarks.md), the command-line flags, and a description of the
 * machine so that every printed figure says where it came from.
 */
#ifndef VMT_BENCH_HARNESS_H
#define VMT_BENCH_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct vmtb_options {
  bool json;     /* --json: JSON lines only on stdout */
  bool quick;    /* --quick: fewer samples (CI, smoke runs) */
  bool longrun;  /* --long: more samples and repeats */
} vmtb_options_t;

/* Parses --json, --quick, --long, --help; exits 2 with usage on anything else. */
void vmtb_parse_args(int argc, char **argv, vmtb_options_t *opts, const char *usage_extra);

typedef struct vmtb_result {
  const char *bench;
  const char *variant;
  const char *unit;
  size_t samples;
  double mean, p50, p90, p99, p999, p9999, max;
  double min;
} vmtb_result_t;

/* Fills r's statistics from n samples (sorted in place; nearest-rank percentiles). */
void vmtb_stats(double *samples, size_t n, vmtb_result_t *r);

/* Prints the table header once and one row per result (human mode) or a JSON line (json
 * mode). extra_json, if not NULL, is appended inside the object (",\"k\":v,..." without the
 * leading comma: the harness adds it). */
void vmtb_report(const vmtb_options_t *opts, const vmtb_result_t *r, const char *extra_json);
void vmtb_table_header(const vmtb_options_t *opts, const char *title);

/* A free-form line for people (to stdout in table mode, to stderr in JSON mode). */
void vmtb_note(const vmtb_options_t *opts, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* CPU model, cores, kernel, clocksource, HZ guess, glibc, compiler: one line for people. */
void vmtb_describe_machine(FILE *out);

/* Monotonic nanoseconds (vDSO CLOCK_MONOTONIC) for harness timing. */
int64_t vmtb_now_ns(void);

/* Keeps the compiler from discarding a value. */
#define VMTB_SINK(v) __asm__ __volatile__("" : : "r"(v) : "memory")

#endif /* VMT_BENCH_HARNESS_H */
