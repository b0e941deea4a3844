/*
 * bench/management.c: the cost of the management API with 1, 100, 1000 and 10,000 live
 * threads, each parked (vmt_park, a futex wait: no CPU used while measured) FRAMES calls deep,
 * with a stack walker (vmt_mx_set_stack_walker) that reports those FRAMES frames, as a VM's
 * walker would walk its frame chain. bench/java/ManagementBench.java measures the same calls
 * on HotSpot with the same number of frames per thread.
 *
 * The headline is the CPU-time sweep (vmt_mx_get_thread_cpu_time_array over every id), set
 * against three baselines measured in the same run and interleaved sample by sample so that
 * machine noise hits all of them alike:
 *   bare_clock_sweep  a loop of bare clock_gettime on the same threads' CPU clocks: the floor,
 *                     since no CPU-time clock is served by the vDSO (every read is a syscall);
 *   raw_clock_sweep   the same syscalls issued inline (no vDSO entry, no return after each):
 *                     the lowest a sweep can cost, which the runtime's sweep gets close to;
 *   proc_sweep        open+read+parse of /proc/self/task/<tid>/stat per thread
 *                     (vmt_os_proc_thread_times): what a runtime without clock ids does
 *                     (up to 1000 threads: at 10,000 one sweep takes 0.1 s and says nothing new).
 * Issue #6 asks the sweep of 1000 threads to cost <= 1.3x the floor and >= 15x less than /proc,
 * issue #16 <= 1.1x the floor at 1000 and 10,000 threads (medians). Also measured, interleaved
 * with each other: ThreadInfo of all threads without and with stacks, dumpAllThreads with
 * locks and stacks (these three as Java's, without CPU times), ThreadInfo with vmthread's CPU
 * times, all ids, allocated bytes of all (when jemalloc is the allocator) with its floor
 * (alloc_counter_floor: one read of each thread's jemalloc counter through a pointer the thread
 * took itself, no runtime in between), the deadlock scan, a full text dump, and the floors of
 * the calls with stacks (walk_floor: the walker's reads of each thread's frame records;
 * clock_walk_floor: those and a clock syscall per thread; dump_floor: those and a block of the
 * last text dump's size written and freed, what the text dump does that is not the runtime's
 * work). Issue #12 asks
 * each to cost per thread at 10,000 threads <= 1.1x what it costs at 1000: the growth rounds
 * at the end measure that in pairs (run_growth). One sample is one whole call, in ns of wall
 * time; the JSON rows carry "threads", "per_thread_ns" (p50 / threads), "cpu_per_thread_ns" (the p50
 * of the calling thread's CPU time over the same calls, / threads: every vmthread call runs on
 * the calling thread alone, so this is its cost without the time other processes took the CPU
 * away, which on a loaded machine fills calls longer than a time slice) and "frames" where
 * stacks are taken.
 *
 * 10,000 threads need the host's room for them (RLIMIT_NPROC, threads-max, pid_max,
 * vm.max_map_count: two mappings per stack): without it, or when a start fails, that size is
 * skipped with a message. Stacks are 64 KiB (the runtime's minimum).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <vmthread.h>

#include "bench/harness.h"
#include "os_linux/os_impl.h"
#include "runtime/os.h"

/* Frames each parked thread reports: the depth ManagementBench.java parks its threads at. */
#define FRAMES 20

/* One frame of a parked thread's chain, on that thread's stack (a VM's frame record). */
typedef struct vframe {
  const char *method;
  int32_t line;
  const struct vframe *caller;
} vframe_t;

/* A set of parked threads started together, ended together. */
typedef struct group {
  _Atomic bool stop;
  _Atomic int ready;
} group_t;

typedef struct parked {
  group_t *g;
  vmt_thread_t *t;
  clockid_t clock;
  pid_t tid;
  const uint64_t *allocated;   /* jemalloc's counter of the thread (its TLS), or NULL */
  _Atomic(const vframe_t *) top;   /* innermost frame, published before the thread parks */
} parked_t;

static char method_names[FRAMES][48];

static void park_deep(parked_t *p, int level, const vframe_t *caller) {
  vframe_t f = {method_names[level], 100 + level, caller};
  if (level + 1 < FRAMES) {
    park_deep(p, level + 1, &f);
    __asm__ __volatile__("" : : "r"(&f) : "memory");   /* f lives until the call returns */
    return;
  }
  atomic_store_explicit(&p->top, &f, memory_order_release);
  atomic_fetch_add(&p->g->ready, 1);
  while (!atomic_load(&p->g->stop)) vmt_park(0);
  atomic_store_explicit(&p->top, NULL, memory_order_release);
}

/* jemalloc's control call: the benchmark links jemalloc (//:vmthread), which may not be the
 * allocator (sanitizer builds): then the floor below is not measured. */
int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);

static void *park_body(void *arg) {
  parked_t *p = arg;
  pthread_getcpuclockid(pthread_self(), &p->clock);
  uint64_t *a = NULL;
  size_t sz = sizeof(a);
  if (vmt_mx_is_thread_allocated_memory_supported() &&
      mallctl("thread.allocatedp", &a, &sz, NULL, 0) == 0)
    p->allocated = a;
  park_deep(p, 0, NULL);
  return NULL;
}

/* The walker's view of the parked threads: within a group ids are consecutive (one starter,
 * nothing else starts meanwhile), so a thread's slot is its id minus the group's first one. */
typedef struct walk_ctx {
  struct {
    parked_t *ps;
    int n;
    int64_t first_id;
  } range[2];
  int ranges;
} walk_ctx_t;

/* Copies the frame chain of p into frames, as a VM's walker reads its frame records. */
static int32_t copy_frames(const parked_t *p, vmt_stack_frame_t *frames, int32_t max) {
  int32_t k = 0;
  for (const vframe_t *f = atomic_load_explicit(&p->top, memory_order_acquire); f && k < max;
       f = f->caller, k++)
    frames[k] = (vmt_stack_frame_t){.function = (char *)f->method,
                                     .file = (char *)"Worker.java",
                                     .line = f->line,
                                     .pc = 0};
  return k;
}

static int walker(vmt_thread_t *t, vmt_stack_frame_t *frames, int32_t max, void *arg) {
  const walk_ctx_t *w = arg;
  int64_t id = vmt_thread_id(t);
  for (int r = 0; r < w->ranges; r++) {
    int64_t i = id - w->range[r].first_id;
    if (i >= 0 && i < w->range[r].n && w->range[r].ps[i].t == t)
      return copy_frames(&w->range[r].ps[i], frames, max);
  }
  return 0;
}

static long read_long(const char *path) {
  FILE *f = fopen(path, "r");
  long v = -1;
  if (f) {
    if (fscanf(f, "%ld", &v) != 1) v = -1;
    fclose(f);
  }
  return v;
}

/* Whether the host has room for n more threads; why not in why. */
static bool room_for(int n, char *why, size_t len) {
  struct rlimit rl;
  long margin = 256;
  if (getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      rl.rlim_cur < (rlim_t)(n + margin)) {
    snprintf(why, len, "RLIMIT_NPROC is %llu", (unsigned long long)rl.rlim_cur);
    return false;
  }
  long threads_max = read_long("/proc/sys/kernel/threads-max");
  long pid_max = read_long("/proc/sys/kernel/pid_max");
  long maps = read_long("/proc/sys/vm/max_map_count");
  if (threads_max >= 0 && threads_max < n + margin) {
    snprintf(why, len, "kernel.threads-max is %ld", threads_max);
    return false;
  }
  if (pid_max >= 0 && pid_max < n + margin) {
    snprintf(why, len, "kernel.pid_max is %ld", pid_max);
    return false;
  }
  if (maps >= 0 && maps < 2L * n + 4096) {
    snprintf(why, len, "vm.max_map_count is %ld (two mappings per thread stack)", maps);
    return false;
  }
  return true;
}

static void stop_parked(parked_t *ps, int n, group_t *g) {
  atomic_store(&g->stop, true);
  for (int i = 0; i < n; i++) vmt_unpark(ps[i].t);
  for (int i = 0; i < n; i++) {
    vmt_thread_join(ps[i].t, NULL);
    vmt_thread_release(ps[i].t);
  }
}

/* Starts n parked threads of group g in ps[0..n): 0, or -1 with the reason in why (and none
 * left running) when the host cannot hold `room` threads or a start fails. */
static int start_parked(parked_t *ps, int n, int room, group_t *g, char *why, size_t len) {
  if (!room_for(room, why, len)) return -1;
  atomic_store(&g->stop, false);
  atomic_store(&g->ready, 0);
  vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_NAME | VMT_THREAD_OPT_STACK_SIZE,
                            .name = "parked",
                            .stack_size = 64 * 1024};
  for (int i = 0; i < n; i++) {
    ps[i].g = g;
    int rc = vmt_thread_start_ex(&ps[i].t, &o, park_body, &ps[i]);
    if (rc) {
      snprintf(why, len, "thread %d of %d did not start: %s", i + 1, n, strerror(-rc));
      stop_parked(ps, i, g);
      return -1;
    }
    ps[i].tid = vmt_thread_tid(ps[i].t);
  }
  while (atomic_load(&g->ready) < n) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  return 0;
}

/* ---- One call per variant; each returns its duration in ns ----------------------------- */
typedef struct ctx {
  parked_t *ps;
  int n;
  int64_t *ids;
  int64_t *out;
  size_t dump_len;   /* the last text dump's length (dump_floor writes as much) */
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

/* The same syscall issued inline (no vDSO entry, no function return after it), with the port's
 * own instruction sequence (os_linux/os_impl.h): the floor below the bare loop. */
static int64_t sweep_raw_clock(ctx_t *c) {
  int64_t acc = 0;
  int64_t t0 = vmtb_now_ns();
  for (int i = 0; i < c->n; i++) {
    struct timespec ts;
    if (vmt_os__clock_syscall(c->ps[i].clock, &ts) == 0)
      acc += ts.tv_sec * 1000000000LL + ts.tv_nsec;
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

static int64_t info_array(ctx_t *c, uint32_t flags, int32_t depth) {
  vmt_thread_info_t **infos = NULL;
  int64_t t0 = vmtb_now_ns();
  int rc = vmt_mx_get_thread_info_array_ex(c->ids, (size_t)c->n, flags, depth, &infos);
  if (rc == 0) vmt_mx_thread_info_array_free(infos, (size_t)c->n);
  int64_t t1 = vmtb_now_ns();
  VMTB_SINK(rc);
  return t1 - t0;
}

/* getThreadInfo(ids, 0) and getThreadInfo(ids, Integer.MAX_VALUE): what Java's ThreadInfo
 * holds, so without vmthread's CPU times (VMT_MX_INFO_NO_CPU_TIME). thread_info_all_cpu is
 * the plain call, CPU and user time included: three clock reads per thread more. */
static int64_t sweep_thread_info(ctx_t *c) { return info_array(c, VMT_MX_INFO_NO_CPU_TIME, 0); }
static int64_t sweep_thread_info_stacks(ctx_t *c) {
  return info_array(c, VMT_MX_INFO_NO_CPU_TIME, VMT_MX_MAX_DEPTH_ALL);
}
static int64_t sweep_thread_info_cpu(ctx_t *c) { return info_array(c, 0, 0); }

/* dumpAllThreads(true, true): every thread, its locks and all its frames (as Java's, no CPU
 * times). */
static int64_t sweep_dump_all_threads(ctx_t *c) {
  vmt_thread_info_t **infos = NULL;
  size_t n = 0;
  int64_t t0 = vmtb_now_ns();
  int rc = vmt_mx_dump_all_threads_ex(VMT_MX_INFO_LOCKED_MONITORS |
                                          VMT_MX_INFO_LOCKED_SYNCHRONIZERS |
                                          VMT_MX_INFO_NO_CPU_TIME,
                                      VMT_MX_MAX_DEPTH_ALL, &infos, &n);
  if (rc == 0) vmt_mx_thread_info_array_free(infos, n);
  int64_t t1 = vmtb_now_ns();
  VMTB_SINK(rc);
  (void)c;
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

/* The floor of allocated_bytes_all: one read of each thread's own jemalloc counter, through
 * pointers the threads took themselves, in id order. The counters lie in the threads' TLS, one
 * stack mapping (and so one page) per thread: what this loop pays at 10,000 threads for TLB and
 * cache misses, any reader of those counters pays. */
static int64_t sweep_alloc_floor(ctx_t *c) {
  uint64_t acc = 0;
  int64_t t0 = vmtb_now_ns();
  for (int i = 0; i < c->n; i++) {
    if (i + 16 < c->n && c->ps[i + 16].allocated) __builtin_prefetch(c->ps[i + 16].allocated);
    if (c->ps[i].allocated) acc += __atomic_load_n(c->ps[i].allocated, __ATOMIC_RELAXED);
  }
  int64_t t1 = vmtb_now_ns();
  VMTB_SINK(acc);
  return t1 - t0;
}

/* The floors of the calls with stacks: what the VM's walker (this benchmark's, `walker`) reads
 * of each thread with no runtime in between, its frame records on the thread's own stack
 * (each stack its own mapping: at 10,000 threads these reads miss the TLB and the caches, as
 * any walker's would), in id order; and the same with the thread's CPU clock read first, as
 * the text dump does (one SCHED-clock syscall and the frames of each thread). */
static int64_t walk_floor(ctx_t *c, bool with_clock, size_t text_bytes) {
  vmt_stack_frame_t frames[FRAMES];
  int64_t acc = 0;
  int64_t t0 = vmtb_now_ns();
  for (int i = 0; i < c->n; i++) {
    struct timespec ts;
    if (with_clock && vmt_os__clock_syscall(c->ps[i].clock, &ts) == 0) acc += ts.tv_nsec;
    acc += copy_frames(&c->ps[i], frames, FRAMES) + frames[0].line;
  }
  if (text_bytes) {
    /* The text dump's result: one block of its size from the allocator, every byte written,
     * freed. jemalloc serves a block of 8 MB or more (the dump of 10,000 threads is ~20 MB)
     * from its oversize arena and gives it back to the kernel on free, so each call faults
     * its pages in again, whoever fills them. */
    char *text = malloc(text_bytes);
    if (!text) abort();
    memset(text, 'x', text_bytes);
    acc += text[text_bytes / 2];
    free(text);
  }
  int64_t t1 = vmtb_now_ns();
  VMTB_SINK(acc);
  return t1 - t0;
}
static int64_t sweep_walk_floor(ctx_t *c) { return walk_floor(c, false, 0); }
static int64_t sweep_clock_walk_floor(ctx_t *c) { return walk_floor(c, true, 0); }
/* The length is the last text dump's of this context (the warm-up runs `dump` before this
 * floor): without one the floor would write nothing and look cheap, so that is an error. */
static int64_t sweep_dump_floor(ctx_t *c) {
  if (c->dump_len == 0) {
    fprintf(stderr, "management: dump_floor ran before any text dump of %d threads\n", c->n);
    exit(1);
  }
  return walk_floor(c, true, c->dump_len + 1);
}

/* findDeadlockedThreads (monitors and synchronizers). */
static int64_t sweep_deadlocks(ctx_t *c) {
  int64_t *ids = NULL;
  size_t n = 0;
  int64_t t0 = vmtb_now_ns();
  int rc = vmt_mx_find_deadlocked_threads(&ids, &n);
  if (rc == 0) vmt_mx_ids_free(ids);
  int64_t t1 = vmtb_now_ns();
  VMTB_SINK(rc);
  (void)c;
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
  if (rc == 0) c->dump_len = len;
  return t1 - t0;
}

typedef struct variant {
  const char *name;
  int64_t (*sweep)(ctx_t *);
  bool stacks;   /* takes every frame of every thread */
  double *samples;
  double *cpu_samples;   /* the calling thread's CPU time over the same calls */
  size_t count;
  vmtb_result_t result;
} variant_t;

/* The calling thread's CPU time (the pid-0 SCHED clock), ns. */
static int64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void report(const vmtb_options_t *opts, variant_t *v, int n) {
  char name[64], extra[192];
  snprintf(name, sizeof(name), "%s_%d", v->name, n);
  v->result.bench = "management";
  v->result.variant = name;
  v->result.unit = "ns";
  vmtb_stats(v->samples, v->count, &v->result);
  vmtb_result_t cpu;
  vmtb_stats(v->cpu_samples, v->count, &cpu);
  int len = snprintf(extra, sizeof(extra),
                     "\"threads\":%d,\"per_thread_ns\":%.1f,\"cpu_per_thread_ns\":%.1f", n,
                     v->result.p50 / n, cpu.p50 / n);
  if (v->stacks) snprintf(extra + len, sizeof(extra) - (size_t)len, ",\"frames\":%d", FRAMES);
  vmtb_report(opts, &v->result, extra);
}

/* Evicts what the previous call left in the caches (and the TLB) before a call of the growth
 * rounds: 64 MiB written, twice this machine's L3. */
enum { FLUSH_BYTES = 64 << 20 };
static unsigned char *flush_buf;

static void flush_caches(void) {
  if (!flush_buf && !(flush_buf = malloc(FLUSH_BYTES))) abort();
  for (size_t i = 0; i < FLUSH_BYTES; i += 64) flush_buf[i]++;
  VMTB_SINK(flush_buf[FLUSH_BYTES / 2]);
}

/*
 * Runs the variants interleaved, sample by sample, in a freshly shuffled order each time, after
 * a warm-up of each; with cold, every call after the caches are flushed (not timed). The order matters: the /proc sweep leaves the caches cold (1000 path
 * lookups and opens) for whatever runs next, and a fixed rotation let one CPU-time variant
 * follow it twice as often as the other (a 10% bias seen here). Shuffling gives each variant
 * each predecessor equally often in expectation.
 */
static void run_interleaved(ctx_t *c, variant_t *vs, int nv, size_t samples, int warmup,
                            bool cold) {
  for (int w = 0; w < warmup; w++)
    for (int i = 0; i < nv; i++) vs[i].sweep(c);
  for (int i = 0; i < nv; i++) {
    vs[i].samples = calloc(samples, sizeof(double));
    vs[i].cpu_samples = calloc(samples, sizeof(double));
    vs[i].count = samples;
  }
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  int order[16];
  for (size_t s = 0; s < samples; s++) {
    for (int i = 0; i < nv; i++) order[i] = i;
    for (int i = nv - 1; i > 0; i--) {
      rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17; /* xorshift64 */
      int j = (int)(rng % (uint64_t)(i + 1)), x = order[i];
      order[i] = order[j];
      order[j] = x;
    }
    for (int k = 0; k < nv; k++) {
      variant_t *v = &vs[order[k]];
      if (cold) flush_caches();
      int64_t cpu0 = thread_cpu_ns();
      v->samples[s] = (double)v->sweep(c);
      v->cpu_samples[s] = (double)(thread_cpu_ns() - cpu0);
    }
  }
}

static size_t scaled(const vmtb_options_t *o, size_t n) {
  if (o->quick) return n / 5 ? n / 5 : 1;
  if (o->longrun) return n * 5;
  return n;
}

/* A phase's context: the ids of every live thread, in the snapshot's order. */
static void ctx_begin(ctx_t *c, parked_t *ps, int n) {
  *c = (ctx_t){.ps = ps, .n = n, .out = calloc((size_t)n, sizeof(int64_t))};
  size_t nids = 0;
  if (!c->out || vmt_mx_get_all_thread_ids(&c->ids, &nids) != 0 || nids != (size_t)n) {
    fprintf(stderr, "management: expected %d ids, got %zu\n", n, nids);
    exit(1);
  }
}

static void ctx_end(ctx_t *c) {
  vmt_mx_ids_free(c->ids);
  free(c->out);
}

static void variants_free(variant_t *vs, int nv) {
  for (int i = 0; i < nv; i++) {
    free(vs[i].samples), free(vs[i].cpu_samples);
    vs[i].samples = vs[i].cpu_samples = NULL;
  }
}

/* The calls and floors measured at every size after the CPU-time sweeps, and by the growth
 * rounds; the allocated-bytes pair last (left out where jemalloc is not the allocator). */
static const variant_t other_variants[] = {
    {.name = "thread_info_all", .sweep = sweep_thread_info},
    {.name = "thread_info_all_cpu", .sweep = sweep_thread_info_cpu},
    {.name = "thread_info_all_stacks", .sweep = sweep_thread_info_stacks, .stacks = true},
    {.name = "dump_all_threads", .sweep = sweep_dump_all_threads, .stacks = true},
    {.name = "all_ids", .sweep = sweep_all_ids},
    {.name = "deadlock_scan", .sweep = sweep_deadlocks},
    {.name = "dump", .sweep = sweep_dump, .stacks = true},
    {.name = "walk_floor", .sweep = sweep_walk_floor, .stacks = true},
    {.name = "clock_walk_floor", .sweep = sweep_clock_walk_floor, .stacks = true},
    {.name = "dump_floor", .sweep = sweep_dump_floor, .stacks = true},
    {.name = "allocated_bytes_all", .sweep = sweep_allocated},
    {.name = "alloc_counter_floor", .sweep = sweep_alloc_floor}};
enum { OTHER_VARIANTS = sizeof(other_variants) / sizeof(other_variants[0]) };

static int other_variant_count(void) {
  return vmt_mx_is_thread_allocated_memory_supported() ? OTHER_VARIANTS : OTHER_VARIANTS - 2;
}

static void run_size(const vmtb_options_t *opts, int n) {
  char why[160];
  parked_t *ps = calloc((size_t)n, sizeof(*ps));
  group_t g;
  if (!ps || start_parked(ps, n, n, &g, why, sizeof(why)) != 0) {
    vmtb_note(opts, "management: %d threads skipped: %s", n, ps ? why : "out of memory");
    free(ps);
    return;
  }
  ctx_t c;
  ctx_begin(&c, ps, n);
  walk_ctx_t w = {.range = {{ps, n, vmt_thread_id(ps[0].t)}}, .ranges = 1};
  vmt_mx_set_stack_walker(walker, &w);
  char title[128];
  snprintf(title, sizeof(title),
           "management: %d parked threads, %d frames each (one sample = one call)", n, FRAMES);
  vmtb_table_header(opts, title);

  /* The CPU-time sweeps, interleaved: one clock read per thread each. */
  size_t cpu_samples = scaled(opts, n >= 10000 ? 100 : n >= 1000 ? 300 : n >= 100 ? 1000 : 20000);
  /* The headline ratios are medians at 1000 and 10,000 threads: with 60 samples (--quick)
   * they moved by +-10% between runs on the shared test machine, so keep 150 (40 at 10,000,
   * where one sample of all three takes ~20 ms) even then. */
  size_t cpu_min = n >= 10000 ? 40 : n >= 1000 ? 150 : 0;
  if (cpu_samples < cpu_min) cpu_samples = cpu_min;
  variant_t cpu[4] = {{.name = "cpu_time_sweep", .sweep = sweep_cpu_array},
                      {.name = "bare_clock_sweep", .sweep = sweep_bare_clock},
                      {.name = "raw_clock_sweep", .sweep = sweep_raw_clock},
                      {.name = "proc_sweep", .sweep = sweep_proc}};
  int ncpu = n <= 1000 ? 4 : 3;
  run_interleaved(&c, cpu, ncpu, cpu_samples, 5, false);
  for (int i = 0; i < ncpu; i++) report(opts, &cpu[i], n);
  vmtb_note(opts, "  ratios (p50): cpu_time_sweep / bare_clock_sweep = %.2fx (want <= 1.1); "
            "cpu_time_sweep / raw_clock_sweep = %.2fx",
            cpu[0].result.p50 / cpu[1].result.p50, cpu[0].result.p50 / cpu[2].result.p50);
  if (ncpu == 4)
    vmtb_note(opts, "  proc_sweep / cpu_time_sweep = %.1fx (want >= 15 at 1000)",
              cpu[3].result.p50 / cpu[0].result.p50);

  variant_t rest[OTHER_VARIANTS];
  memcpy(rest, other_variants, sizeof(rest));
  int nrest = other_variant_count();
  if (nrest < OTHER_VARIANTS)
    vmtb_note(opts, "  allocated bytes: unsupported (jemalloc is not the allocator)");
  size_t other_samples = scaled(opts, n >= 10000 ? 40 : n >= 1000 ? 200 : n >= 100 ? 500 : 3000);
  if (other_samples < 8) other_samples = 8;
  run_interleaved(&c, rest, nrest, other_samples, 2, false);
  for (int i = 0; i < nrest; i++) report(opts, &rest[i], n);

  vmt_mx_set_stack_walker(NULL, NULL);
  variants_free(cpu, ncpu);
  variants_free(rest, nrest);
  ctx_end(&c);
  stop_parked(ps, n, &g);
  free(ps);
}

/*
 * Growth from 1000 to 10,000 threads in paired rounds (issue #12: "per-thread cost at 10,000
 * <= 1.1x that at 1000"). The sizes above are measured once each, some seconds apart, and
 * what else the machine runs in those seconds (the other CPU's work filling the shared L3,
 * which holds the 10,000 threads' records and not the 1000's) moved the ratio of the same code
 * from 1.03x to 1.64x between runs. Here 1000 threads stay parked while 9000 more are started
 * and ended again every round; each round measures every call at 1000 and then at 10,000
 * threads within a few seconds, interleaved as above, each call with the caches and the TLB
 * flushed first (flush_caches), and its ratio is the p50 of the calling thread's CPU time per
 * thread at 10,000 over that at 1000. Cold at both sizes, as a monitoring agent's poll every
 * few seconds finds them: with the caches as the previous call left them, 1000 threads' data
 * stayed in the 32 MB L3 and 10,000 threads' did not, and the ratio measured that cliff
 * (thread_info_all 1.2-1.7x interleaved, 1.05x called back to back: 218 and 229 ns per
 * thread, 2026-12-02 05:00 UTC) more than the calls' work. A growth_<call> row's
 * samples are those per-round ratios. A growth_<call>_net_of_<floor> row's are the same ratio
 * with the floor's extra cost per thread taken off the 10,000 side: (call at 10,000 - (floor
 * at 10,000 - floor at 1000)) / call at 1000, the floor being the same kernel or memory reads
 * with no runtime in between (the clock syscalls, the walker's reads of each thread's stack,
 * each thread's jemalloc counter), whose growth with the thread count no runtime can take
 * away; what is left is the growth of the runtime's own work. (Dividing by the floor's
 * growth instead would credit a call with the whole relative growth of a floor that is a
 * small part of its cost.) bench_driver.py's HEADLINE_GROWTH names the floor of each call.
 */
typedef struct over_floor {
  const char *call, *floor;
} over_floor_t;
static const over_floor_t growth_floors[] = {
    {"cpu_time_sweep", "raw_clock_sweep"},     {"thread_info_all_cpu", "raw_clock_sweep"},
    {"dump", "dump_floor"},              {"thread_info_all_stacks", "walk_floor"},
    {"dump_all_threads", "walk_floor"},        {"allocated_bytes_all", "alloc_counter_floor"}};

static int variant_index(const variant_t *vs, int nv, const char *name) {
  for (int i = 0; i < nv; i++)
    if (strcmp(vs[i].name, name) == 0) return i;
  return -1;
}

/* Each variant's p50 CPU time per thread over `samples` interleaved calls. */
static void growth_phase(ctx_t *c, variant_t *vs, int nv, size_t samples, double *out) {
  run_interleaved(c, vs, nv, samples, 1, true);
  for (int i = 0; i < nv; i++) {
    vmtb_result_t r;
    vmtb_stats(vs[i].cpu_samples, vs[i].count, &r);
    out[i] = r.p50 / c->n;
  }
  variants_free(vs, nv);
}

static void growth_report(const vmtb_options_t *opts, const char *name, double *ratios,
                          int rounds, int small, int large) {
  vmtb_result_t r = {.bench = "management", .variant = name, .unit = "x"};
  vmtb_stats(ratios, (size_t)rounds, &r);
  char extra[96];
  snprintf(extra, sizeof(extra), "\"rounds\":%d,\"small\":%d,\"large\":%d", rounds, small,
           large);
  vmtb_report(opts, &r, extra);
}

static void run_growth(const vmtb_options_t *opts) {
  enum { SMALL = 1000, LARGE = 10000, MAXV = 16 };
  /* 11 rounds: with 7, the text dump's rounds in a run of 2026-12-02 (08:24 UTC) spread from
   * 0.98x to 1.57x and their median, 1.12x, sat in that tail, where two runs of the same code
   * right after gave 1.03x and 0.99x: a median of more rounds is what a shared machine's
   * disturbances of some seconds move less. */
  int rounds = opts->quick ? 3 : opts->longrun ? 21 : 11;   /* quick: its 2-minute budget */
  char why[160];
  parked_t *ps = calloc(LARGE, sizeof(*ps));
  group_t kept, extra;
  if (!ps || start_parked(ps, SMALL, LARGE, &kept, why, sizeof(why)) != 0) {
    vmtb_note(opts, "management: growth rounds skipped: %s", ps ? why : "out of memory");
    free(ps);
    return;
  }
  variant_t vs[MAXV] = {{.name = "cpu_time_sweep", .sweep = sweep_cpu_array},
                        {.name = "raw_clock_sweep", .sweep = sweep_raw_clock}};
  int nv = 2;
  memcpy(vs + nv, other_variants, sizeof(other_variants));
  nv += other_variant_count();
  double *ratio = calloc((size_t)(nv * rounds), sizeof(double));
  enum { FLOORS = sizeof(growth_floors) / sizeof(growth_floors[0]) };
  double *over = calloc((size_t)(FLOORS * rounds), sizeof(double));
  if (!ratio || !over) abort();
  walk_ctx_t w = {.range = {{ps, SMALL, vmt_thread_id(ps[0].t)}}, .ranges = 1};
  vmt_mx_set_stack_walker(walker, &w);
  char title[160];
  snprintf(title, sizeof(title),
           "management: growth from %d to %d threads, %d paired rounds (one sample = one "
           "round's ratio)", SMALL, LARGE, rounds);
  vmtb_table_header(opts, title);
  int done = 0;
  for (int r = 0; r < rounds; r++) {
    double small[MAXV], large[MAXV];
    ctx_t c;
    ctx_begin(&c, ps, SMALL);
    growth_phase(&c, vs, nv, opts->quick ? 6 : 12, small);
    ctx_end(&c);
    if (start_parked(ps + SMALL, LARGE - SMALL, LARGE, &extra, why, sizeof(why)) != 0) {
      vmtb_note(opts, "management: growth round %d: %s", r + 1, why);
      break;
    }
    w.range[1].ps = ps + SMALL;
    w.range[1].n = LARGE - SMALL;
    w.range[1].first_id = vmt_thread_id(ps[SMALL].t);
    w.ranges = 2;   /* the walker runs only inside the calls below */
    ctx_begin(&c, ps, LARGE);
    growth_phase(&c, vs, nv, opts->quick ? 4 : 8, large);
    ctx_end(&c);
    w.ranges = 1;
    stop_parked(ps + SMALL, LARGE - SMALL, &extra);
    for (int i = 0; i < nv; i++) ratio[i * rounds + r] = large[i] / small[i];
    for (int f = 0; f < FLOORS; f++) {
      int a = variant_index(vs, nv, growth_floors[f].call);
      int b = variant_index(vs, nv, growth_floors[f].floor);
      if (a >= 0 && b >= 0) over[f * rounds + r] = (large[a] - (large[b] - small[b])) / small[a];
    }
    done++;
  }
  if (done > 0) {
    char name[96];
    for (int i = 0; i < nv; i++) {
      snprintf(name, sizeof(name), "growth_%s", vs[i].name);
      growth_report(opts, name, ratio + i * rounds, done, SMALL, LARGE);
    }
    for (int f = 0; f < FLOORS; f++) {
      if (variant_index(vs, nv, growth_floors[f].call) < 0 ||
          variant_index(vs, nv, growth_floors[f].floor) < 0)
        continue;
      snprintf(name, sizeof(name), "growth_%s_net_of_%s", growth_floors[f].call,
               growth_floors[f].floor);
      growth_report(opts, name, over + f * rounds, done, SMALL, LARGE);
    }
  }
  vmt_mx_set_stack_walker(NULL, NULL);
  free(ratio);
  free(over);
  stop_parked(ps, SMALL, &kept);
  free(ps);
}

int main(int argc, char **argv) {
  vmtb_options_t opts;
  vmtb_parse_args(argc, argv, &opts, NULL);
  if (!opts.json) vmtb_describe_machine(stdout);
  if (!vmt_mx_is_thread_cpu_time_supported()) {
    fprintf(stderr, "management: thread CPU time is not supported here\n");
    return 1;
  }
  for (int i = 0; i < FRAMES; i++)
    snprintf(method_names[i], sizeof(method_names[i]), "vmtbench.Worker.level%02d", i);
  const int sizes[] = {1, 100, 1000, 10000};
  for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) run_size(&opts, sizes[si]);
  run_growth(&opts);
  return 0;
}
