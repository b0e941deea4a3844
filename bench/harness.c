/*
 * bench/harness.c: statistics, reporting and machine description for the benchmarks.
 */
#include "bench/harness.h"

#include <gnu/libc-version.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

void vmtb_parse_args(int argc, char **argv, vmtb_options_t *opts, const char *usage_extra) {
  memset(opts, 0, sizeof(*opts));
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0) {
      opts->json = true;
    } else if (strcmp(argv[i], "--quick") == 0) {
      opts->quick = true;
    } else if (strcmp(argv[i], "--long") == 0) {
      opts->longrun = true;
    } else {
      bool help = strcmp(argv[i], "--help") == 0;
      fprintf(help ? stdout : stderr, "usage: %s [--json] [--quick|--long]%s%s\n", argv[0],
              usage_extra ? "\n" : "", usage_extra ? usage_extra : "");
      exit(help ? 0 : 2);
    }
  }
  if (opts->quick && opts->longrun) {
    fprintf(stderr, "%s: --quick and --long exclude each other\n", argv[0]);
    exit(2);
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted samples. */
static double rank(const double *sorted, size_t n, double pct) {
  size_t k = (size_t)(pct / 100.0 * (double)n + 0.999999);
  if (k < 1) k = 1;
  if (k > n) k = n;
  return sorted[k - 1];
}

void vmtb_stats(double *samples, size_t n, vmtb_result_t *r) {
  r->samples = n;
  if (n == 0) {
    r->mean = r->p50 = r->p90 = r->p99 = r->p999 = r->p9999 = r->max = r->min = 0;
    return;
  }
  qsort(samples, n, sizeof(double), cmp_double);
  double sum = 0;
  for (size_t i = 0; i < n; i++) sum += samples[i];
  r->mean = sum / (double)n;
  r->min = samples[0];
  r->p50 = rank(samples, n, 50);
  r->p90 = rank(samples, n, 90);
  r->p99 = rank(samples, n, 99);
  r->p999 = rank(samples, n, 99.9);
  r->p9999 = rank(samples, n, 99.99);
  r->max = samples[n - 1];
}

void vmtb_table_header(const vmtb_options_t *opts, const char *title) {
  if (opts->json) return;
  printf("\n== %s\n", title);
  printf("%-34s %-9s %9s %10s %10s %10s %10s %10s %10s %11s\n", "variant", "unit", "samples",
         "mean", "p50", "p90", "p99", "p99.9", "p99.99", "max");
}

void vmtb_report(const vmtb_options_t *opts, const vmtb_result_t *r, const char *extra_json) {
  if (opts->json) {
    printf("{\"bench\":\"%s\",\"variant\":\"%s\",\"unit\":\"%s\",\"samples\":%zu,"
           "\"mean\":%.3f,\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"p999\":%.3f,"
           "\"p9999\":%.3f,\"max\":%.3f,\"min\":%.3f%s%s}\n",
           r->bench, r->variant, r->unit, r->samples, r->mean, r->p50, r->p90, r->p99, r->p999,
           r->p9999, r->max, r->min, extra_json ? "," : "", extra_json ? extra_json : "");
  } else {
    printf("%-34s %-9s %9zu %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %11.1f\n", r->variant,
           r->unit, r->samples, r->mean, r->p50, r->p90, r->p99, r->p999, r->p9999, r->max);
  }
  fflush(stdout);
}

void vmtb_note(const vmtb_options_t *opts, const char *fmt, ...) {
  FILE *out = opts->json ? stderr : stdout;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(out, fmt, ap);
  va_end(ap);
  fputc('\n', out);
  fflush(out);
}

static void read_first_line(const char *path, const char *prefix, char *buf, size_t len) {
  buf[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof(line), f)) {
    if (prefix == NULL || strncmp(line, prefix, strlen(prefix)) == 0) {
      char *s = prefix ? strchr(line, ':') : line;
      if (s == NULL) continue;
      if (prefix) s++;
      while (*s == ' ' || *s == '\t') s++;
      /* A bounded copy: snprintf("%s") of a 512-byte line into len trips gcc's
       * -Wformat-truncation at -O2 (the opt config). */
      size_t n = strcspn(s, "\n");
      if (n >= len) n = len - 1;
      memcpy(buf, s, n);
      buf[n] = '\0';
      break;
    }
  }
  fclose(f);
}

void vmtb_describe_machine(FILE *out) {
  char cpu[256], clocksource[64];
  struct utsname u;
  read_first_line("/proc/cpuinfo", "model name", cpu, sizeof(cpu));
  read_first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource", NULL,
                  clocksource, sizeof(clocksource));
  uname(&u);
  struct timespec res;
  long hz = 0;
  /* The coarse clock advances once per tick: its resolution is 1/HZ. */
  if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0 && res.tv_nsec > 0)
    hz = 1000000000L / res.tv_nsec;
  fprintf(out,
          "machine: %s | %ld cores | Linux %s | clocksource %s | HZ %ld | glibc %s | gcc %s\n",
          cpu[0] ? cpu : "unknown cpu", sysconf(_SC_NPROCESSORS_ONLN), u.release,
          clocksource[0] ? clocksource : "unknown", hz, gnu_get_libc_version(), __VERSION__);
}

int64_t vmtb_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
