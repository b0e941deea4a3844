/*
 * bench/thread_start.c: what starting a thread costs (issue 4), Kudu's benchmark from change
 * 8257: start 1000 threads whose body is empty, ask each one's tid, join them all. One sample
 * is one such round; the figure is per thread. Variants, interleaved round by round so that
 * load from other processes falls on all of them alike:
 *
 *   vmthread    vmt_thread_start (no handshake), vmt_thread_tid, vmt_thread_join + release
 *   handshake   raw pthreads with the two-way handshake Kudu had before the change and HotSpot
 *               still has: the parent waits (futex) until the child published its tid, the
 *               child waits until the parent lets it run; then tid, then join
 *   pthread     pthread_create + pthread_join, nothing else: the floor
 *
 * Per variant: wall, user and system time (getrusage(RUSAGE_SELF) around the round: exited
 * threads' times are folded into the process) and context switches (voluntary + involuntary),
 * each per thread, as the median and min..max over the rounds.
 *
 * Second part, the registry under readers: with 1000 live threads parked, one thread starts
 * and joins threads (start+join per sample) while another thread either does nothing, spins
 * without touching memory, runs the walk's loop over private copies of the snapshot's ids and
 * hot cells (same instructions and footprint, nothing shared: the control), walks the registry in a loop (what
 * getAllThreadIds does: protect the current snapshot, copy the listed ids, release), or does
 * either walk once per millisecond. On this 2-core machine any busy thread takes CPU and cache
 * from the starts, and any thread waking 1000 times a second disturbs them; the registry's own
 * effect is walker / private walk, at either pace. The starter and the reader are pinned to
 * two different CPUs (the started threads inherit the starter's mask).
 *
 * The walk uses the runtime's internal registry API (runtime/registry/registry.h) because the
 * public management call sits in another module; it is the same loop.
 *
 * Third part, the number of live threads (issue 12, item 17): start+join pairs, one at a time,
 * with 10 and with 10,000 threads parked, for vmt_thread_start and for raw pthread_create. A
 * vmthread round and a pthread round run back to back (who goes first alternates), and one
 * sample of vmthread / pthread is taken from each such pair, so that load from elsewhere falls
 * on both; the live count switches between 10,000 and 10 several times (cycles). What matters
 * is vmthread's growth from 10 to 10,000 against raw pthread's in the same run (the kernel and
 * glibc also cost more with more threads: that part is not the runtime's), that is the median
 * vmthread / pthread at 10,000 over the same at 10. The parked threads are vmthreads with
 * 64 KiB stacks (640 MB of address space, a few pages of memory each); the part is skipped,
 * with a message, when the host's limits (RLIMIT_NPROC, threads-max, pid_max,
 * vm.max_map_count) leave too little room.
 *
 * VMTB_ONLY=<variant> (vmthread, handshake or pthread) runs only that variant's rounds and
 * skips the other parts: for strace -c or perf on one variant. VMTB_ONLY=live runs only the
 * third part.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bench/harness.h"
#include "runtime/registry/registry.h"
#include "vmthread.h"

#define THREADS 1000

static void futex_wait(_Atomic uint32_t *w, uint32_t expected) {
  syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}
static void futex_wake(_Atomic uint32_t *w) {
  syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *empty_body(void *arg) { return arg; }

/* ---- one round per variant ------------------------------------------------------------- */
typedef struct round {
  double wall_us, user_us, sys_us, csw;  /* per thread */
} round_t;

typedef struct meter {
  int64_t t0;
  struct rusage r0;
} meter_t;

static int64_t tv_us(struct timeval tv) { return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec; }

static void meter_start(meter_t *m) {
  getrusage(RUSAGE_SELF, &m->r0);
  m->t0 = vmtb_now_ns();
}

static round_t meter_stop(const meter_t *m, int n) {
  int64_t t1 = vmtb_now_ns();
  struct rusage r1;
  getrusage(RUSAGE_SELF, &r1);
  round_t r;
  r.wall_us = (double)(t1 - m->t0) / 1000.0 / n;
  r.user_us = (double)(tv_us(r1.ru_utime) - tv_us(m->r0.ru_utime)) / n;
  r.sys_us = (double)(tv_us(r1.ru_stime) - tv_us(m->r0.ru_stime)) / n;
  r.csw = (double)((r1.ru_nvcsw + r1.ru_nivcsw) - (m->r0.ru_nvcsw + m->r0.ru_nivcsw)) / n;
  return r;
}

static vmt_thread_t *vt[THREADS];
static pthread_t pt[THREADS];

static void die(const char *what, int err) {
  fprintf(stderr, "thread_start: %s failed: %s\n", what, strerror(err < 0 ? -err : err));
  exit(1);
}

static round_t round_vmthread(void) {
  meter_t m;
  meter_start(&m);
  for (int i = 0; i < THREADS; i++) {
    int rc = vmt_thread_start(&vt[i], empty_body, NULL);
    if (rc) die("vmt_thread_start", rc);
  }
  for (int i = 0; i < THREADS; i++) VMTB_SINK(vmt_thread_tid(vt[i]));
  for (int i = 0; i < THREADS; i++) {
    vmt_thread_join(vt[i], NULL);
    vmt_thread_release(vt[i]);
  }
  return meter_stop(&m, THREADS);
}

typedef struct handshake {
  _Atomic uint32_t tid;  /* published by the child */
  _Atomic uint32_t go;   /* set by the parent once it saw the tid */
} handshake_t;

static handshake_t hs[THREADS];

static void *handshake_body(void *arg) {
  handshake_t *h = arg;
  atomic_store_explicit(&h->tid, (uint32_t)syscall(SYS_gettid), memory_order_release);
  futex_wake(&h->tid);
  while (atomic_load_explicit(&h->go, memory_order_acquire) == 0) futex_wait(&h->go, 0);
  return NULL;
}

static round_t round_handshake(void) {
  memset(hs, 0, sizeof(hs));
  meter_t m;
  meter_start(&m);
  for (int i = 0; i < THREADS; i++) {
    int rc = pthread_create(&pt[i], NULL, handshake_body, &hs[i]);
    if (rc) die("pthread_create", rc);
    while (atomic_load_explicit(&hs[i].tid, memory_order_acquire) == 0) futex_wait(&hs[i].tid, 0);
    atomic_store_explicit(&hs[i].go, 1, memory_order_release);
    futex_wake(&hs[i].go);
  }
  for (int i = 0; i < THREADS; i++) VMTB_SINK(atomic_load(&hs[i].tid));
  for (int i = 0; i < THREADS; i++) pthread_join(pt[i], NULL);
  return meter_stop(&m, THREADS);
}

static round_t round_pthread(void) {
  meter_t m;
  meter_start(&m);
  for (int i = 0; i < THREADS; i++) {
    int rc = pthread_create(&pt[i], NULL, empty_body, NULL);
    if (rc) die("pthread_create", rc);
  }
  for (int i = 0; i < THREADS; i++) pthread_join(pt[i], NULL);
  return meter_stop(&m, THREADS);
}

/* ---- the registry under readers -------------------------------------------------------- */
enum {
  READER_NONE,
  READER_SPINNER,
  READER_PRIVATE,
  READER_WALKER,
  READER_PACED_PRIVATE,
  READER_PACED,
  READER_KINDS
};
static const char *const reader_names[READER_KINDS] = {
    "starts_1000_live",        "starts_1000_live_spinner",         "starts_1000_live_private_walk",
    "starts_1000_live_walker", "starts_1000_live_private_walk_1ms", "starts_1000_live_walker_1ms"};

static _Atomic int reader_mode = READER_NONE;
static _Atomic bool reader_quit;
static _Atomic uint64_t walks;
static pthread_mutex_t mode_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t mode_cond = PTHREAD_COND_INITIALIZER;

static int64_t collect_ids(const vmt__snapshot_t *s) {
  int64_t *ids = malloc((s->count + 1) * sizeof(*ids));
  size_t n = 0;
  for (size_t i = 0; i < s->count; i++)
    if (vmt__hot_is_listed(s->hot[i])) ids[n++] = s->ids[i];
  int64_t sum = 0;
  for (size_t i = 0; i < n; i++) sum += ids[i];
  free(ids);
  return sum;
}

static int64_t walk_ids(void) {
  const vmt__snapshot_t *s = vmt__registry_acquire();
  int64_t sum = collect_ids(s);
  vmt__registry_release(s);
  return sum;
}

/* The control for the walker: the same loop over private copies of the snapshot's id and hot
 * cell arrays and of the cells (same memory footprint and instructions, nothing shared with
 * the starts, no protection). */
static vmt__snapshot_t *private_snapshot;

static void make_private_snapshot(void) {
  const vmt__snapshot_t *s = vmt__registry_acquire();
  int64_t *ids = malloc((s->count + 1) * sizeof(*ids));
  struct vmt__thread_hot **hot = malloc((s->count + 1) * sizeof(*hot));
  struct vmt__thread_hot *cells = aligned_alloc(64, (s->count + 2) * sizeof(*cells));
  private_snapshot = calloc(1, sizeof(*private_snapshot));
  private_snapshot->count = s->count;
  for (size_t i = 0; i < s->count; i++) {
    ids[i] = s->ids[i];
    memcpy(&cells[i], s->hot[i], sizeof(cells[i]));
    hot[i] = &cells[i];
  }
  private_snapshot->ids = ids;
  private_snapshot->hot = hot;
  vmt__registry_release(s);
}

static void *reader(void *arg) {
  (void)arg;
  volatile uint64_t spin = 0;
  while (!atomic_load_explicit(&reader_quit, memory_order_relaxed)) {
    switch (atomic_load_explicit(&reader_mode, memory_order_relaxed)) {
      case READER_SPINNER:
        for (int i = 0; i < 1000; i++) spin++;
        break;
      case READER_PRIVATE:
        VMTB_SINK(collect_ids(private_snapshot));
        atomic_fetch_add_explicit(&walks, 1, memory_order_relaxed);
        break;
      case READER_WALKER:
        VMTB_SINK(walk_ids());
        atomic_fetch_add_explicit(&walks, 1, memory_order_relaxed);
        break;
      case READER_PACED:
      case READER_PACED_PRIVATE: {
        bool shared = atomic_load_explicit(&reader_mode, memory_order_relaxed) == READER_PACED;
        VMTB_SINK(shared ? walk_ids() : collect_ids(private_snapshot));
        atomic_fetch_add_explicit(&walks, 1, memory_order_relaxed);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
        break;
      }
      default:  /* no reader: sleep until the mode changes (no wake-ups of our own) */
        pthread_mutex_lock(&mode_lock);
        while (atomic_load(&reader_mode) == READER_NONE && !atomic_load(&reader_quit))
          pthread_cond_wait(&mode_cond, &mode_lock);
        pthread_mutex_unlock(&mode_lock);
        break;
    }
  }
  return NULL;
}

static void set_reader(int mode, bool quit) {
  pthread_mutex_lock(&mode_lock);
  atomic_store(&reader_mode, mode);
  atomic_store(&reader_quit, quit);
  pthread_cond_broadcast(&mode_cond);
  pthread_mutex_unlock(&mode_lock);
}

static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cond = PTHREAD_COND_INITIALIZER;
static bool unpark;

static void *parked_body(void *arg) {
  pthread_mutex_lock(&park_lock);
  while (!unpark) pthread_cond_wait(&park_cond, &park_lock);
  pthread_mutex_unlock(&park_lock);
  return arg;
}

static double starts_round(int n) {
  int64_t t0 = vmtb_now_ns();
  for (int i = 0; i < n; i++) {
    vmt_thread_t *t;
    int rc = vmt_thread_start(&t, empty_body, NULL);
    if (rc) die("vmt_thread_start", rc);
    vmt_thread_join(t, NULL);
    vmt_thread_release(t);
  }
  return (double)(vmtb_now_ns() - t0) / 1000.0 / n;
}

/* ---- part three: start+join against the number of live threads ---------------------------- */
#define LIVE_FEW 10
#define LIVE_MANY 10000
#define PARKED_STACK ((size_t)64 * 1024)

/* A gate the parked threads sleep on (futex) until it opens. */
static _Atomic uint32_t gate_few, gate_many;

static void *gated_body(void *arg) {
  _Atomic uint32_t *gate = arg;
  while (atomic_load_explicit(gate, memory_order_acquire) == 0) futex_wait(gate, 0);
  return NULL;
}

static void gate_open(_Atomic uint32_t *gate) {
  atomic_store_explicit(gate, 1, memory_order_release);
  syscall(SYS_futex, (uint32_t *)gate, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static long read_proc_long(const char *path) {
  FILE *f = fopen(path, "r");
  long v = -1;
  if (f) {
    if (fscanf(f, "%ld", &v) != 1) v = -1;
    fclose(f);
  }
  return v;
}

/* NULL if the host has room for `want` more threads (with a margin for the other processes of
 * a shared machine), else why not. */
static const char *no_room_for(long want, char *why, size_t len) {
  long margin = 2000;
  struct rlimit rl;
  if (getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      (long)rl.rlim_cur < want + margin) {
    snprintf(why, len, "RLIMIT_NPROC is %ld, %ld threads wanted", (long)rl.rlim_cur, want);
    return why;
  }
  static const struct {
    const char *path;
    long per_thread;
  } limits[] = {{"/proc/sys/kernel/threads-max", 1},
                {"/proc/sys/kernel/pid_max", 1},
                {"/proc/sys/vm/max_map_count", 2}};  /* a stack and its guard page */
  for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
    long v = read_proc_long(limits[i].path);
    if (v >= 0 && v < limits[i].per_thread * want + margin) {
      snprintf(why, len, "%s is %ld, %ld threads wanted", limits[i].path, v, want);
      return why;
    }
  }
  return NULL;
}

/* Starts n parked threads into out[]; the number started (short of n when the host refused). */
static int park_threads(vmt_thread_t **out, int n, _Atomic uint32_t *gate, int *err) {
  vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_STACK_SIZE, .stack_size = PARKED_STACK};
  for (int i = 0; i < n; i++) {
    int rc = vmt_thread_start_ex(&out[i], &o, gated_body, (void *)gate);
    if (rc) {
      *err = rc;
      return i;
    }
  }
  return n;
}

static void unpark_threads(vmt_thread_t **t, int n, _Atomic uint32_t *gate) {
  gate_open(gate);
  for (int i = 0; i < n; i++) {
    vmt_thread_join(t[i], NULL);
    vmt_thread_release(t[i]);
  }
}

static double pthread_starts_round(int n) {
  int64_t t0 = vmtb_now_ns();
  for (int i = 0; i < n; i++) {
    pthread_t p;
    int rc = pthread_create(&p, NULL, empty_body, NULL);
    if (rc) die("pthread_create", rc);
    pthread_join(p, NULL);
  }
  return (double)(vmtb_now_ns() - t0) / 1000.0 / n;
}

static void report_live_row(const vmtb_options_t *opts, const char *variant, const char *unit,
                            double *samples, size_t n, int live, vmtb_result_t *res) {
  char extra[64];
  snprintf(extra, sizeof(extra), "\"live_threads\":%d", live);
  *res = (vmtb_result_t){.bench = "thread_start", .variant = variant, .unit = unit};
  vmtb_stats(samples, n, res);
  vmtb_report(opts, res, extra);
}

enum { VM_FEW, PT_FEW, VM_MANY, PT_MANY, SERIES };  /* the series of part three */
static void live_report(const vmtb_options_t *opts, double *const *x, size_t n);

/* One phase: rounds of start+join pairs, vmthread and pthread back to back (who goes first
 * alternates), into vm[at..], pt[at..]. */
static void live_phase(double *vm, double *pt, size_t at, size_t rounds, int pairs) {
  for (size_t r = 0; r < rounds; r++) {
    bool vm_first = (at + r) % 2 == 0;
    if (vm_first) vm[at + r] = starts_round(pairs);
    pt[at + r] = pthread_starts_round(pairs);
    if (!vm_first) vm[at + r] = starts_round(pairs);
  }
}

static void live_scaling(const vmtb_options_t *opts) {
  size_t cycles = opts->quick ? 3 : opts->longrun ? 15 : 11;
  size_t per_cycle = opts->quick ? 5 : opts->longrun ? 31 : 21;
  int pairs = opts->quick ? 50 : 100;
  vmtb_note(opts,
            "\nlive threads: start+join pairs (%d per round, one at a time) with %d and %d "
            "parked threads, vmthread and raw pthread rounds back to back; %zu cycles of %zu "
            "rounds per variant and live count",
            pairs, LIVE_FEW, LIVE_MANY, cycles, per_cycle);
  char why[160];
  if (no_room_for(LIVE_MANY, why, sizeof(why))) {
    vmtb_note(opts, "live threads: skipped (%s)", why);
    return;
  }
  vmt_thread_t **few = calloc(LIVE_FEW, sizeof(*few));
  vmt_thread_t **many = calloc(LIVE_MANY, sizeof(*many));
  size_t n = cycles * per_cycle;
  double *x[SERIES];
  for (int k = 0; k < SERIES; k++) x[k] = calloc(n, sizeof(double));
  int err = 0;
  if (park_threads(few, LIVE_FEW, &gate_few, &err) != LIVE_FEW) die("vmt_thread_start", err);
  starts_round(pairs);  /* warm-up */
  pthread_starts_round(pairs);
  bool skipped = false;
  for (size_t c = 0; c < cycles && !skipped; c++) {
    atomic_store(&gate_many, 0);
    int got = park_threads(many, LIVE_MANY - LIVE_FEW, &gate_many, &err);
    if (got != LIVE_MANY - LIVE_FEW) {
      vmtb_note(opts, "live threads: skipped (start %d of %d parked threads: %s)", got + 1,
                LIVE_MANY - LIVE_FEW, strerror(-err));
      skipped = true;
    } else {
      live_phase(x[VM_MANY], x[PT_MANY], c * per_cycle, per_cycle, pairs);
    }
    unpark_threads(many, got, &gate_many);
    if (!skipped) live_phase(x[VM_FEW], x[PT_FEW], c * per_cycle, per_cycle, pairs);
  }
  unpark_threads(few, LIVE_FEW, &gate_few);
  free(few);
  free(many);
  if (!skipped) live_report(opts, x, n);
  for (int k = 0; k < SERIES; k++) free(x[k]);
}

static void live_report(const vmtb_options_t *opts, double *const *x, size_t n) {
  /* vmthread / pthread of back-to-back rounds: load from elsewhere falls on both alike. */
  double *over_few = calloc(n, sizeof(double)), *over_many = calloc(n, sizeof(double));
  for (size_t i = 0; i < n; i++) {
    over_few[i] = x[VM_FEW][i] / x[PT_FEW][i];
    over_many[i] = x[VM_MANY][i] / x[PT_MANY][i];
  }
  vmtb_table_header(opts, "thread_start: start+join (one at a time) by number of live threads "
                          "(us/thread; samples = rounds)");
  static const char *const names[SERIES] = {"start_join_10_live", "start_join_10_live_pthread",
                                            "start_join_10000_live",
                                            "start_join_10000_live_pthread"};
  static const int lives[SERIES] = {LIVE_FEW, LIVE_FEW, LIVE_MANY, LIVE_MANY};
  vmtb_result_t st[SERIES];
  for (int k = 0; k < SERIES; k++) report_live_row(opts, names[k], "us/thread", x[k], n,
                                                   lives[k], &st[k]);
  vmtb_result_t of, om;
  report_live_row(opts, "vmthread_over_pthread_10_live", "x", over_few, n, LIVE_FEW, &of);
  report_live_row(opts, "vmthread_over_pthread_10000_live", "x", over_many, n, LIVE_MANY, &om);
  vmtb_note(opts, "\n%d -> %d live threads, start+join per thread (medians): vmthread %.1f -> "
            "%.1f us (%.2fx), pthread %.1f -> %.1f us (%.2fx)",
            LIVE_FEW, LIVE_MANY, st[VM_FEW].p50, st[VM_MANY].p50,
            st[VM_MANY].p50 / st[VM_FEW].p50, st[PT_FEW].p50, st[PT_MANY].p50,
            st[PT_MANY].p50 / st[PT_FEW].p50);
  vmtb_note(opts, "vmthread / pthread, back-to-back rounds (median [min..max]): %d live %.2fx "
            "[%.2f..%.2f], %d live %.2fx [%.2f..%.2f]; growth of vmthread over pthread's %.2fx "
            "(done when <= 1.10x)",
            LIVE_FEW, of.p50, of.min, of.max, LIVE_MANY, om.p50, om.min, om.max,
            om.p50 / of.p50);
  free(over_few);
  free(over_many);
}

/* ---- main ------------------------------------------------------------------------------ */
enum { V_VMTHREAD, V_HANDSHAKE, V_PTHREAD, VARIANTS };
static const char *const variant_names[VARIANTS] = {"vmthread", "handshake", "pthread"};
static round_t (*const rounds[VARIANTS])(void) = {round_vmthread, round_handshake, round_pthread};

int main(int argc, char **argv) {
  vmtb_options_t opts;
  vmtb_parse_args(argc, argv, &opts, NULL);
  const char *only = getenv("VMTB_ONLY");
  if (only && strcmp(only, "live") == 0) {
    live_scaling(&opts);
    return 0;
  }
  size_t repeats = opts.quick ? 5 : opts.longrun ? 61 : 21;
  size_t reader_repeats = opts.quick ? 31 : opts.longrun ? 601 : 201;
  /* Beside a busy reader a start can wait a scheduler tick (4 ms) for a CPU: keep rounds short. */
  int starts_per_sample = opts.quick ? 100 : opts.longrun ? 500 : 200;
  if (!opts.json) vmtb_describe_machine(stdout);
  vmtb_note(&opts,
            "thread_start: %d empty threads per round (start all, tid of each, join all), %zu "
            "rounds per variant after one warm-up round, variants interleaved",
            THREADS, repeats);

  double *wall[VARIANTS], *user[VARIANTS], *sys[VARIANTS], *csw[VARIANTS];
  for (int v = 0; v < VARIANTS; v++) {
    wall[v] = calloc(repeats, sizeof(double));
    user[v] = calloc(repeats, sizeof(double));
    sys[v] = calloc(repeats, sizeof(double));
    csw[v] = calloc(repeats, sizeof(double));
    if (getenv("VMTB_ONLY") && strcmp(getenv("VMTB_ONLY"), variant_names[v]) != 0) continue;
    rounds[v]();  /* warm-up: stacks cached, records pooled, pages faulted in */
  }
  for (size_t r = 0; r < repeats; r++) {
    for (int k = 0; k < VARIANTS; k++) {
      int v = (int)((r + (size_t)k) % VARIANTS);  /* rotate who goes first */
      if (only && strcmp(only, variant_names[v]) != 0) continue;
      round_t x = rounds[v]();
      wall[v][r] = x.wall_us;
      user[v][r] = x.user_us;
      sys[v][r] = x.sys_us;
      csw[v][r] = x.csw;
    }
  }

  /* Medians are the harness's p50: nearest rank of an odd number of rounds. */
  enum { WALL, USER, SYS, CSW, MEASURES };
  vmtb_result_t st[VARIANTS][MEASURES];
  for (int v = 0; v < VARIANTS; v++) {
    double *series[MEASURES] = {wall[v], user[v], sys[v], csw[v]};
    for (int m = 0; m < MEASURES; m++) vmtb_stats(series[m], repeats, &st[v][m]);
  }
  vmtb_table_header(&opts, "thread_start: start + tid + join, per thread (us/thread; samples = "
                           "rounds of 1000 threads)");
  double med[VARIANTS];
  for (int v = 0; v < VARIANTS; v++) {
    char extra[256];
    med[v] = st[v][WALL].p50;
    snprintf(extra, sizeof(extra), "\"user_us\":%.3f,\"sys_us\":%.3f,\"csw\":%.3f,\"threads\":%d",
             st[v][USER].p50, st[v][SYS].p50, st[v][CSW].p50, THREADS);
    vmtb_result_t res = st[v][WALL];
    res.bench = "thread_start";
    res.variant = variant_names[v];
    res.unit = "us/thread";
    vmtb_report(&opts, &res, extra);
  }
  vmtb_note(&opts, "\n%-10s %22s %22s %22s %24s", "variant", "wall us/thread", "user us/thread",
            "sys us/thread", "ctx switches/thread");
  for (int v = 0; v < VARIANTS; v++) {
    const vmtb_result_t *w = &st[v][WALL], *u = &st[v][USER], *y = &st[v][SYS], *c = &st[v][CSW];
    vmtb_note(&opts, "%-10s %6.1f [%5.1f..%6.1f] %6.1f [%5.1f..%6.1f] %6.1f [%5.1f..%6.1f] "
              "%6.2f [%5.2f..%6.2f]",
              variant_names[v], w->p50, w->min, w->max, u->p50, u->min, u->max, y->p50, y->min,
              y->max, c->p50, c->min, c->max);
  }
  vmtb_note(&opts, "(median [min..max] over %zu rounds)", repeats);
  vmtb_note(&opts, "\nratios (medians):");
  vmtb_note(&opts, "  vmthread / pthread      %5.2fx  (done when <= 1.15x)",
            med[V_VMTHREAD] / med[V_PTHREAD]);
  vmtb_note(&opts, "  handshake / vmthread    %5.2fx  (done when >= 1.2x; Kudu measured 2.6x)",
            med[V_HANDSHAKE] / med[V_VMTHREAD]);
  vmtb_note(&opts, "  handshake / pthread     %5.2fx", med[V_HANDSHAKE] / med[V_PTHREAD]);
  vmtb_note(&opts, "  ctx switches handshake / vmthread  %5.2fx  (Kudu: 29552 -> 17178, 1.72x)",
            st[V_HANDSHAKE][CSW].p50 / st[V_VMTHREAD][CSW].p50);

  if (only) return 0;
  /* ---- part two: starts while 1000 threads live, with and without readers -------------- */
  vmtb_note(&opts,
            "\nregistry under readers: %d start+join per sample with %d parked threads alive; "
            "%zu samples per variant, interleaved",
            starts_per_sample, THREADS, reader_repeats);
  for (int i = 0; i < THREADS; i++) {
    int rc = vmt_thread_start(&vt[i], parked_body, NULL);
    if (rc) die("vmt_thread_start (parked)", rc);
  }
  make_private_snapshot();
  /* Placement fixed: the starter (and so every thread it starts, which inherits its mask) on
   * one CPU, the reader on another. Left to the scheduler, three runnable threads on two CPUs
   * land in a different arrangement from round to round and the medians swing by 2x between
   * runs; pinned, the rows differ by what the reader does, not by where it ran. */
  cpu_set_t allowed, starter_cpu, reader_cpu;
  bool pinned = false;
  CPU_ZERO(&starter_cpu);
  CPU_ZERO(&reader_cpu);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0 && CPU_COUNT(&allowed) >= 2) {
    int first = -1, second = -1;
    for (int c = 0; c < CPU_SETSIZE && second < 0; c++)
      if (CPU_ISSET(c, &allowed)) {
        if (first < 0) first = c;
        else second = c;
      }
    CPU_SET(first, &starter_cpu);
    CPU_SET(second, &reader_cpu);
    pinned = pthread_setaffinity_np(pthread_self(), sizeof(starter_cpu), &starter_cpu) == 0;
  }
  vmtb_note(&opts, "placement: %s", pinned ? "starter and its threads on one CPU, reader on another"
                                           : "left to the scheduler (fewer than 2 CPUs)");
  pthread_t reader_thread;
  pthread_create(&reader_thread, NULL, reader, NULL);
  if (pinned) pthread_setaffinity_np(reader_thread, sizeof(reader_cpu), &reader_cpu);
  double *rs[READER_KINDS];
  for (int k = 0; k < READER_KINDS; k++) rs[k] = calloc(reader_repeats, sizeof(double));
  uint64_t walks_in[READER_KINDS] = {0};
  double walk_time[READER_KINDS] = {0};
  starts_round(starts_per_sample / 4);  /* warm-up */
  for (size_t r = 0; r < reader_repeats; r++) {
    for (int j = 0; j < READER_KINDS; j++) {
      int k = (int)((r + (size_t)j) % READER_KINDS);
      set_reader(k, false);
      uint64_t w0 = atomic_load(&walks);
      int64_t t0 = vmtb_now_ns();
      rs[k][r] = starts_round(starts_per_sample);
      walk_time[k] += (double)(vmtb_now_ns() - t0) / 1e9;
      walks_in[k] += atomic_load(&walks) - w0;
    }
  }
  set_reader(READER_NONE, true);
  pthread_join(reader_thread, NULL);
  pthread_mutex_lock(&park_lock);
  unpark = true;
  pthread_cond_broadcast(&park_cond);
  pthread_mutex_unlock(&park_lock);
  for (int i = 0; i < THREADS; i++) {
    vmt_thread_join(vt[i], NULL);
    vmt_thread_release(vt[i]);
  }

  vmtb_table_header(&opts, "thread_start: start+join with 1000 live threads, by concurrent "
                           "reader (us/thread; samples = rounds)");
  double rmed[READER_KINDS];
  for (int k = 0; k < READER_KINDS; k++) {
    char extra[128];
    snprintf(extra, sizeof(extra), "\"live_threads\":%d,\"walks_per_s\":%.0f", THREADS,
             walk_time[k] > 0 ? (double)walks_in[k] / walk_time[k] : 0.0);
    vmtb_result_t res = {.bench = "thread_start", .variant = reader_names[k],
                         .unit = "us/thread"};
    vmtb_stats(rs[k], reader_repeats, &res);
    rmed[k] = res.p50;
    vmtb_report(&opts, &res, extra);
  }
  vmtb_note(&opts, "\nwalks per second: walker %.0f, private walk %.0f, paced walker %.0f",
            walk_time[READER_WALKER] > 0 ? walks_in[READER_WALKER] / walk_time[READER_WALKER] : 0,
            walk_time[READER_PRIVATE] > 0 ? walks_in[READER_PRIVATE] / walk_time[READER_PRIVATE]
                                          : 0,
            walk_time[READER_PACED] > 0 ? walks_in[READER_PACED] / walk_time[READER_PACED] : 0);
  vmtb_note(&opts, "one walk (ids of %d threads): %.2f us in a loop", THREADS,
            walks_in[READER_WALKER] ? 1e6 * walk_time[READER_WALKER] / walks_in[READER_WALKER]
                                    : 0.0);
  vmtb_note(&opts, "ratios (medians):");
  vmtb_note(&opts, "  walker every 1 ms / same walk on private copies every 1 ms %5.2fx  (the "
            "registry's own effect; done when <= 1.10x)",
            rmed[READER_PACED] / rmed[READER_PACED_PRIVATE]);
  vmtb_note(&opts, "  walker every 1 ms / no reader                  %5.2fx  (includes 1000 "
            "wake-ups a second of any thread)",
            rmed[READER_PACED] / rmed[READER_NONE]);
  vmtb_note(&opts, "  walker in a loop / same walk on private copies %5.2fx  (the registry's own "
            "effect; done when <= 1.10x)",
            rmed[READER_WALKER] / rmed[READER_PRIVATE]);
  vmtb_note(&opts, "  private walk / spinner (memory traffic of any walk) %5.2fx",
            rmed[READER_PRIVATE] / rmed[READER_SPINNER]);
  vmtb_note(&opts, "  spinner / no reader (CPU taken by any busy thread) %5.2fx",
            rmed[READER_SPINNER] / rmed[READER_NONE]);
  if (pinned) pthread_setaffinity_np(pthread_self(), sizeof(allowed), &allowed);
  live_scaling(&opts);
  return 0;
}
