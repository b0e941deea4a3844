/*
 * bench/management.c: the cost of the management API with 1, 100 and 1000 live threads, each
 * parked (vmt_park, a futex wait: no CPU used while measured).
 *
 * The headline is the CPU-time sweep (vmt_mx_get_thread_cpu_time_array over every id), set
 * against two baselines measured in the same run and interleaved sample by sample so that
 * machine noise hits all three alike:
 *   bare_clock_sweep  a loop of bare clock_gettime on the same threads' CPU clocks: the floor,
 *                     since no CPU-time clock is served by the vDSO (every read is a syscall);
 *   proc_sweep        open+read+parse of /proc/self/task/<tid>/stat per thread
 *                     (vmt_os_proc_thread_times): what a runtime without clock ids does.
 * Issue #6 asks the sweep of 1000 threads to cost <= 1.3x the floor and >= 15x less than /proc
 * (medians). Also measured: ThreadInfo of all threads, all ids, allocated bytes of all (when
 * jemalloc is the allocator), and a full text dump. One sample is one whole sweep, in ns; the
 * JSON rows carry "threads" and "per_thread_ns" (p50 / threads).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vmthread.h>

#include "bench/harness.h"
#include "runtime/os.h"

typedef struct parked {
  vmt_thread_t *t;
  clockid_t clock;
  pid_t tid;
} parked_t;

static _Atomic bool stop;
static _Atomic int ready;

static void *park_body(void *arg) {
  parked_t *p = arg;
  pthread_getcpuclockid(pthread_self(), &p->clock);
  atomic_fetch_add(&ready, 1);
  while (!atomic_load(&stop)) vmt_park(0);
  return NULL;
}

static parked_t *start_parked(int n) {
  parked_t *ps = calloc((size_t)n, sizeof(*ps));
  atomic_store(&stop, false);
  atomic_store(&ready, 0);
  vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_NAME | VMT_THREAD_OPT_STACK_SIZE,
                            .name = "parked",
                            .stack_size = 128 * 1024};
  for (int i = 0; i < n; i++) {
    int rc = vmt_thread_start_ex(&ps[i].t, &o, park_body, &ps[i]);
    if (rc) {
      fprintf(stderr, "management: thread %d of %d: %s\n", i, n, strerror(-rc));
      exit(1);
    }
    ps[i].tid = vmt_thread_tid(ps[i].t);
  }
  while (atomic_load(&ready) < n) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  return ps;
}

static void stop_parked(parked_t *ps, int n) {
  atomic_store(&stop, true);
  for (int i = 0; i < n; i++) vmt_unpark(ps[i].t);
  for (int i = 0; i < n; i++) {
    vmt_thread_join(ps[i].t, NULL);
    vmt_thread_release(ps[i].t);
  }
  free(ps);
}

/* ---- One sweep per variant; each returns its duration in ns ---------------------------- */
typedef struct ctx {
  parked_t *ps;
  int n;
  int64_t *ids;
  int64_t *out;
} ctx_t;

static int64_t sweep_cpu_array(ctx_t *c) {
  int64_t t0 = vmtb_now_ns();
  int rc = vmt_mx_get_thread_cpu_time_array(c->ids, (size_t)c->n, c->out);
  int64_t t1 = vmtb_now_ns();
  VMTB_SINK(rc);
  VMTB_SINK(c->out[c->n - 1]);
  return t1 - t0;
}

static int64_t sweep_bare_clock(ctx_t *c) {
  int64_t acc = 0;
  int64_t t0 = vmtb_now_ns();
  for (int i = 0; i < c->n; i++) {
    struct timespec ts;
    if (clock_gettime(c->ps[i].clock, &ts) == 0) acc += ts.tv_sec * 1000000000LL + ts.tv_nsec;
  }
  int64_t t1 = vmtb_now_ns();
  VMTB_SINK(acc);
  return t1 - t0;
}

static int64_t sweep_proc(ctx_t *c) {
  int64_t acc = 0;
  int64_t t0 = vmtb_now_ns();
  for (int i = 0; i < c->n; i++) {
    int64_t user, sys;
    if (vmt_os_proc_thread_times(c->ps[i].tid, &user, &sys) == 0) acc += user + sys;
  }
  int64_t t1 = vmtb_now_ns();
  VMTB_SINK(acc);
  return t1 - t0;
}

static int64_t sweep_thread_info(ctx_t *c) {
  vmt_thread_info_t **infos = NULL;
  int64_t t0 = vmtb_now_ns();
  int rc = vmt_mx_get_thread_info_array(c->ids, (size_t)c->n, false, false, 0, &infos);
  if (rc == 0) vmt_mx_thread_info_array_free(infos, (size_t)c->n);
  int64_t t1 = vmtb_now_ns();
  VMTB_SINK(rc);
  return t1 - t0;
}

static int64_t sweep_all_ids(ctx_t *c) {
  int64_t *ids = NULL;
  size_t n = 0;
  int64_t t0 = vmtb_now_ns();
  int rc = vmt_mx_get_all_thread_ids(&ids, &n);
  if (rc == 0) vmt_mx_ids_free(ids);
  int64_t t1 = vmtb_now_ns();
  VMTB_SINK(n);
  (void)c;
  return t1 - t0;
}

static int64_t sweep_allocated(ctx_t *c) {
  int64_t t0 = vmtb_now_ns();
  int rc = vmt_mx_get_thread_allocated_bytes_array(c->ids, (size_t)c->n, c->out);
  int64_t t1 = vmtb_now_ns();
  VMTB_SINK(rc);
  return t1 - t0;
}

static int64_t sweep_dump(ctx_t *c) {
  char *text = NULL;
  size_t len = 0;
  int64_t t0 = vmtb_now_ns();
  int rc = vmt_mx_thread_dump_to_string(&text, &len);
  free(text);
  int64_t t1 = vmtb_now_ns();
  VMTB_SINK(rc);
  (void)c;
  return t1 - t0;
}

typedef struct variant {
  const char *name;
  int64_t (*sweep)(ctx_t *);
  double *samples;
  size_t count;
  vmtb_result_t result;
} variant_t;

static void report(const vmtb_options_t *opts, variant_t *v, int n) {
  char name[64], extra[128];
  snprintf(name, sizeof(name), "%s_%d", v->name, n);
  v->result.bench = "management";
  v->result.variant = name;
  v->result.unit = "ns";
  vmtb_stats(v->samples, v->count, &v->result);
  snprintf(extra, sizeof(extra), "\"threads\":%d,\"per_thread_ns\":%.1f", n,
           v->result.p50 / n);
  vmtb_report(opts, &v->result, extra);
}

/*
 * Runs the variants interleaved, sample by sample, in a freshly shuffled order each time, after
 * a warm-up of each. The order matters: the /proc sweep leaves the caches cold (1000 path
 * lookups and opens) for whatever runs next, and a fixed rotation let one CPU-time variant
 * follow it twice as often as the other (a 10% bias seen here). Shuffling gives each variant
 * each predecessor equally often in expectation.
 */
static void run_interleaved(ctx_t *c, variant_t *vs, int nv, size_t samples, int warmup) {
  for (int w = 0; w < warmup; w++)
    for (int i = 0; i < nv; i++) vs[i].sweep(c);
  for (int i = 0; i < nv; i++) {
    vs[i].samples = calloc(samples, sizeof(double));
    vs[i].count = samples;
  }
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  int order[8];
  for (size_t s = 0; s < samples; s++) {
    for (int i = 0; i < nv; i++) order[i] = i;
    for (int i = nv - 1; i > 0; i--) {
      rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17; /* xorshift64 */
      int j = (int)(rng % (uint64_t)(i + 1)), x = order[i];
      order[i] = order[j];
      order[j] = x;
    }
    for (int k = 0; k < nv; k++) vs[order[k]].samples[s] = (double)vs[order[k]].sweep(c);
  }
}

static size_t scaled(const vmtb_options_t *o, size_t n) {
  if (o->quick) return n / 5 ? n / 5 : 1;
  if (o->longrun) return n * 5;
  return n;
}

int main(int argc, char **argv) {
  vmtb_options_t opts;
  vmtb_parse_args(argc, argv, &opts, NULL);
  if (!opts.json) vmtb_describe_machine(stdout);
  if (!vmt_mx_is_thread_cpu_time_supported()) {
    fprintf(stderr, "management: thread CPU time is not supported here\n");
    return 1;
  }
  const int sizes[] = {1, 100, 1000};
  for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
    int n = sizes[si];
    parked_t *ps = start_parked(n);
    ctx_t c = {.ps = ps, .n = n, .out = calloc((size_t)n, sizeof(int64_t))};
    size_t nids = 0;
    if (vmt_mx_get_all_thread_ids(&c.ids, &nids) != 0 || nids != (size_t)n) {
      fprintf(stderr, "management: expected %d ids, got %zu\n", n, nids);
      return 1;
    }
    char title[96];
    snprintf(title, sizeof(title), "management: %d parked threads (one sample = one sweep)", n);
    vmtb_table_header(&opts, title);

    /* The three CPU-time sweeps, interleaved: one clock read per thread each. */
    size_t cpu_samples = scaled(&opts, n >= 1000 ? 300 : n >= 100 ? 1000 : 20000);
    /* The headline ratios are medians at 1000 threads: with 60 samples (--quick) they moved
     * by +-10% between runs on the shared test machine, so keep 150 even then (~2 s, mostly
     * the /proc sweeps). */
    if (n >= 1000 && cpu_samples < 150) cpu_samples = 150;
    variant_t cpu[3] = {{.name = "cpu_time_sweep", .sweep = sweep_cpu_array},
                        {.name = "bare_clock_sweep", .sweep = sweep_bare_clock},
                        {.name = "proc_sweep", .sweep = sweep_proc}};
    run_interleaved(&c, cpu, 3, cpu_samples, 5);
    for (int i = 0; i < 3; i++) report(&opts, &cpu[i], n);
    vmtb_note(&opts, "  ratios (p50): cpu_time_sweep / bare_clock_sweep = %.2fx (want <= 1.3 at "
              "1000); proc_sweep / cpu_time_sweep = %.1fx (want >= 15 at 1000)",
              cpu[0].result.p50 / cpu[1].result.p50, cpu[2].result.p50 / cpu[0].result.p50);

    variant_t rest[4] = {{.name = "thread_info_all", .sweep = sweep_thread_info},
                         {.name = "all_ids", .sweep = sweep_all_ids},
                         {.name = "allocated_bytes_all", .sweep = sweep_allocated},
                         {.name = "dump", .sweep = sweep_dump}};
    int nrest = vmt_mx_is_thread_allocated_memory_supported() ? 4 : 3;
    if (nrest == 3) {
      rest[2] = rest[3];
      vmtb_note(&opts, "  allocated bytes: unsupported (jemalloc is not the allocator)");
    }
    size_t other_samples = scaled(&opts, n >= 1000 ? 40 : n >= 100 ? 300 : 3000);
    run_interleaved(&c, rest, nrest, other_samples, 2);
    for (int i = 0; i < nrest; i++) report(&opts, &rest[i], n);

    for (int i = 0; i < 3; i++) free(cpu[i].samples);
    for (int i = 0; i < nrest; i++) free(rest[i].samples);
    vmt_mx_ids_free(c.ids);
    free(c.out);
    stop_parked(ps, n);
  }
  return 0;
}
