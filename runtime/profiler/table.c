/*
 * runtime/profiler/table.c: the CPU table: per category, then per thread (heaviest first), the
 * samples, their weight, the CPU time they stand for (weight * period), the thread's own CPU
 * clock over the time it was armed, their ratio, and the lost samples. Layout in
 * docs/profiler.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/profiler/profiler_impl.h"

typedef struct cat_row {
  const char *name;
  int64_t threads, samples, weight, cpu_ns, lost;
  bool cpu_unknown;
} cat_row_t;

static int64_t lost_of(const int64_t *lost) {
  int64_t n = 0;
  for (int c = 0; c < VMT_PROF_LOST_COUNT; c++) n += lost[c];
  return n;
}

static int by_weight(const void *a, const void *b) {
  const vmt__prof_thread_t *x = *(vmt__prof_thread_t *const *)a, *y = *(vmt__prof_thread_t *const *)b;
  if (x->weight != y->weight) return x->weight < y->weight ? 1 : -1;
  return x->id < y->id ? -1 : x->id > y->id;
}

static void ratio(char *buf, size_t len, int64_t profiled_ns, int64_t cpu_ns, bool unknown) {
  if (unknown || cpu_ns <= 0)
    snprintf(buf, len, "-");
  else
    snprintf(buf, len, "%.4f", (double)profiled_ns / (double)cpu_ns);
}

static int write_table(FILE *out, vmt__prof_profile_t *p) {
  int64_t period = p->cfg.period_ns;
  fprintf(out, "vmthread CPU profile: period %.3f ms of each thread's CPU time, %s mode, "
               "unwinder %s\n",
          (double)period / 1e6, p->cfg.mode == VMT_PROF_MODE_COOPERATIVE ? "cooperative" : "signal",
          p->unwinder);
  fprintf(out, "samples %" PRId64 ", weight %" PRId64 " (%.3f s of CPU), distinct stacks %zu%s\n",
          p->samples, p->weight, (double)(p->weight * period) / 1e9, p->stack_count,
          p->oom ? " (some samples dropped: out of memory)" : "");
  fprintf(out, "lost samples (weight):");
  for (int c = 0; c < VMT_PROF_LOST_COUNT; c++)
    fprintf(out, " %s %" PRId64 " (%" PRId64 ")", vmt_prof_lost_cause_name((vmt_prof_lost_cause_t)c),
            p->lost[c], p->lost_weight[c]);
  fprintf(out, "\nexpirations never signalled before their timer was deleted: %" PRId64
               " (%.3f ms)", p->unsignalled, (double)(p->unsignalled * period) / 1e6);
  fprintf(out, "\nits own cost: handlers %.3f ms (%.2f us a sample), drainer %.3f ms of CPU",
          (double)p->handler_ns / 1e6,
          p->samples ? (double)p->handler_ns / 1e3 / (double)p->samples : 0.0,
          (double)p->drainer_cpu_ns / 1e6);
  fprintf(out, "\nthreads profiled %zu; armed at start %" PRId32 " in %.3f ms; arm failures %" PRId64
               "\n\n",
          p->thread_count, vmt__prof.threads_at_start, (double)vmt__prof.start_arm_ns / 1e6,
          atomic_load(&vmt__prof.arm_failures));

  size_t n = p->thread_count;
  vmt__prof_thread_t **rows = calloc(n ? n : 1, sizeof(*rows));
  cat_row_t *cats = calloc(n ? n : 1, sizeof(*cats));
  if (rows == NULL || cats == NULL) {
    free(rows);
    free(cats);
    return -ENOMEM;
  }
  size_t i = 0, ncat = 0;
  for (vmt__prof_thread_t *th = p->threads; th; th = th->next) rows[i++] = th;
  qsort(rows, n, sizeof(*rows), by_weight);
  for (i = 0; i < n; i++) {
    vmt__prof_thread_t *th = rows[i];
    size_t c = 0;
    while (c < ncat && strcmp(cats[c].name, th->category) != 0) c++;
    if (c == ncat) cats[ncat++].name = th->category;
    cats[c].threads++;
    cats[c].samples += th->samples;
    cats[c].weight += th->weight;
    cats[c].cpu_ns += th->cpu_ns;
    cats[c].cpu_unknown = cats[c].cpu_unknown || th->cpu_unknown;
    cats[c].lost += lost_of(th->lost);
  }
  char r[32];
  fprintf(out, "%-20s %8s %10s %10s %14s %14s %9s %8s\n", "category", "threads", "samples",
          "weight", "profiled ms", "clock ms", "ratio", "lost");
  for (size_t c = 0; c < ncat; c++) {
    ratio(r, sizeof(r), cats[c].weight * period, cats[c].cpu_ns, cats[c].cpu_unknown);
    fprintf(out, "%-20s %8" PRId64 " %10" PRId64 " %10" PRId64 " %14.3f %14.3f %9s %8" PRId64 "\n",
            cats[c].name, cats[c].threads, cats[c].samples, cats[c].weight,
            (double)(cats[c].weight * period) / 1e6, (double)cats[c].cpu_ns / 1e6, r, cats[c].lost);
  }
  fprintf(out, "\n%-28s %8s %-12s %9s %9s %13s %13s %8s %6s %s\n", "thread", "id", "category",
          "samples", "weight", "profiled ms", "clock ms", "ratio", "lost", "");
  /* Threads with neither a sample nor a period of CPU time (a VM's idle or short-lived ones:
   * thousands, at times) are summed in one line instead. */
  int64_t quiet = 0, quiet_cpu = 0;
  for (i = 0; i < n; i++) {
    vmt__prof_thread_t *th = rows[i];
    if (th->samples == 0 && lost_of(th->lost) == 0 && !th->cpu_unknown && th->cpu_ns < period) {
      quiet++;
      quiet_cpu += th->cpu_ns;
      continue;
    }
    ratio(r, sizeof(r), th->weight * period, th->cpu_ns, th->cpu_unknown);
    fprintf(out, "%-28.28s %8" PRId64 " %-12.12s %9" PRId64 " %9" PRId64 " %13.3f %13.3f %8s %6" PRId64
                 " %s\n",
            th->name, th->id, th->category, th->samples, th->weight,
            (double)(th->weight * period) / 1e6, (double)th->cpu_ns / 1e6, r, lost_of(th->lost),
            th->ended ? "ended" : "");
  }
  if (quiet)
    fprintf(out, "(%" PRId64 " more threads, no sample and under a period of CPU each: %.3f ms "
                 "in all)\n", quiet, (double)quiet_cpu / 1e6);
  free(rows);
  free(cats);
  return 0;
}

int vmt_prof_write_table(FILE *out) {
  if (out == NULL) return -EINVAL;
  vmt__prof_profile_t *p;
  int rc = vmt__prof_output_begin(&p);
  if (rc) return rc;
  rc = write_table(out, p);
  vmt__prof_output_end(p);
  if (rc == 0 && (fflush(out) != 0 || ferror(out))) rc = -EIO;
  return rc;
}
