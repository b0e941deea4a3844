/*
 * test/reliability.h: what the reliability tests share (storm, never-another-thread's-time,
 * exhaustion, faults, bad input, fork, signals): scaling knobs read from the environment and the
 * figures they publish. Their clock is test/clock_util.h's, their CPU burner test/cpu_burn.h's.
 *
 * Figures. Each test publishes what it did (lifetimes run, queries made, faults injected...)
 * as lines "figure <test> <key> <value>" on stdout, and appends the same lines to the file
 * named by VMT_REL_FIGURES when it is set. scripts/reliability runs the tests with that set and
 * writes docs/reliability.md from the file, so the document's figures come from a run of the
 * code, never from hand. Extra rows (the bad-input table) go through rel_figure_text.
 */
#ifndef VMT_TEST_RELIABILITY_H
#define VMT_TEST_RELIABILITY_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Writes v to a /proc/sys file (a namespace's own pid_max or ns_last_pid); 0 or -errno. */
static inline int rel_write_sysctl(const char *path, long v) {
  FILE *f = fopen(path, "w");
  if (f == NULL) return -errno;
  fprintf(f, "%ld", v);
  return fclose(f) == 0 ? 0 : -errno;
}

/* A positive number from the environment, or def when unset or malformed. */
static inline double rel_env_number(const char *name, double def) {
  const char *s = getenv(name);
  if (s == NULL || *s == '\0') return def;
  char *end;
  double v = strtod(s, &end);
  return (*end == '\0' && v > 0) ? v : def;
}

static inline void rel_figure_text(const char *test, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static inline void rel_figure_text(const char *test, const char *key, const char *fmt, ...) {
  char value[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(value, sizeof(value), fmt, ap);
  va_end(ap);
  printf("figure %s %s %s\n", test, key, value);
  fflush(stdout);
  const char *path = getenv("VMT_REL_FIGURES");
  if (path == NULL || *path == '\0') return;
  FILE *f = fopen(path, "a");
  if (f == NULL) return;
  fprintf(f, "figure %s %s %s\n", test, key, value);
  fclose(f);
}

static inline void rel_figure(const char *test, const char *key, long long value) {
  rel_figure_text(test, key, "%lld", value);
}

/* This process's address-space size (VmSize) in bytes, or 0. */
static inline size_t rel_vm_size(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (f == NULL) return 0;
  char line[256];
  size_t kb = 0;
  while (fgets(line, sizeof(line), f))
    if (sscanf(line, "VmSize: %zu kB", &kb) == 1) break;
  fclose(f);
  return kb * 1024;
}

/* The sanitizer a build runs under, for the figures ("none", "asan", "tsan"). */
static inline const char *rel_build_flavour(void) {
#if defined(__SANITIZE_ADDRESS__)
  return "asan";
#elif defined(__SANITIZE_THREAD__)
  return "tsan";
#else
  return "none";
#endif
}

#endif /* VMT_TEST_RELIABILITY_H */
