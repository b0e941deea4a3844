/*
 * bench/wake.c: how fast a blocked thread is woken, and how long a 1 ms timed block lasts: the
 * C floors issue #15's thresholds divide by ("interrupt -> wake <= 1.2x the futex floor",
 * "unpark -> return <= 1.1x", "exit -> join <= 1.2x raw pthread_join", "1 ms timed blocking
 * overshoot <= 20 us at p50"), vmthread's calls, and the same definitions as
 * bench/java/WakeBench.java, whose rows are HotSpot's side (hotspot_wake, hotspot_wake.timed).
 *
 * A wake-up latency is the time from the waker's action (CLOCK_MONOTONIC just before the call)
 * to the woken thread's first instruction after its blocking call returned. Per sample, the
 * waiter announces (an atomic store just before its blocking call); the waker waits for the
 * announcement, lets SETTLE_NS more pass (yielding its CPU, in case load from elsewhere put
 * both threads on one) so that the waiter is asleep in the kernel and its CPU idle, as in
 * real use, then acts. Between samples the waiter sleeps on a futex. Variants are interleaved
 * sample by sample in a rotating order. bench "wake", unit us:
 *
 *   futex_wake              FUTEX_WAKE -> FUTEX_WAIT returns (the floor of every wake-up)
 *   condvar_signal          pthread_cond_signal, then unlock -> pthread_cond_wait returns
 *   pthread_kill_nanosleep  pthread_kill(SIGUSR1) -> nanosleep fails with EINTR (an empty
 *                           handler in between): what a signal-based interrupt costs
 *   vmt_unpark              vmt_unpark -> vmt_park returns
 *   vmt_notify              vmt_monitor_notify, then exit -> vmt_monitor_wait returns
 *   vmt_interrupt_sleep     vmt_thread_interrupt -> vmt_sleep_ns returns -EINTR
 *   vmt_interrupt_park      vmt_thread_interrupt -> vmt_park returns -EINTR
 *   vmt_interrupt_wait      vmt_thread_interrupt -> vmt_monitor_wait returns -EINTR (the
 *                           monitor re-entered)
 *   vmt_interrupt_join      vmt_thread_interrupt -> vmt_thread_join (of a thread that never
 *                           ends) returns -EINTR
 *   pthread_exit_join       a thread's last statement -> pthread_join returns (raw pthreads)
 *   vmt_exit_join           the same through vmt_thread_start / vmt_thread_join
 *
 * bench "wake.timed", unit us: the actual duration of a 1 ms block, with extra keys
 * requested_us, overshoot_p50_us, overshoot_p99_us (percentile minus the 1 ms asked for) and
 * timer_slack_ns (the caller's PR_GET_TIMERSLACK during the call):
 *
 *   nanosleep_1ms           nanosleep(1 ms) with the thread's default timer slack (50 us)
 *   nanosleep_1ms_slack_1ns the same with PR_SET_TIMERSLACK 1 ns
 *   vmt_sleep_1ms, vmt_park_1ms, vmt_wait_1ms, vmt_join_1ms (vmt_thread_timed_join of a
 *                           thread that never ends)   vmthread's timed calls, with the timer
 *                           slack the runtime gives the threads it starts
 *                           (vmt_thread_default_timer_slack; the main thread here is attached,
 *                           and attach leaves a host thread's slack alone)
 *
 * Adding a variant is one function per side and one line in a table: WAKE_VARIANTS (a block
 * function run by the waiter, which returns the time right after its call returned, and an
 * act function run by the waker, which returns the time just before its call), EXIT_VARIANTS
 * (start and join of a thread whose body is exit_body) or TIMED_VARIANTS (one 1 ms block and
 * the timer slack to run it with). The interrupt rows pair with hotspot_wake's
 * interrupt_sleep, interrupt_park, interrupt_wait, interrupt_join, and vmt_join_1ms with
 * hotspot_wake.timed's join_1ms (docs/benchmarks.md).
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bench/harness.h"
#include "vmthread.h"

/* Same as WakeBench.SETTLE_NS: long enough for the waiter to block in the kernel. */
#define SETTLE_NS 50000
#define TIMED_NS 1000000

typedef struct cfg {
  size_t warmup, samples, timed_samples;
} cfg_t;

/* ---- The waiter: one thread that runs one blocking call per round ------------------------- */

typedef struct waiter waiter_t;
typedef struct wake_variant {
  const char *name;
  int64_t (*block)(waiter_t *w); /* waiter: announce, block; the time right after the return */
  int64_t (*act)(waiter_t *w);   /* waker: the time just before the waking call, then the call */
} wake_variant_t;

/* A runtime thread that never ends (until main stops it): what the join rows join. */
static vmt_thread_t *never_ending;
static _Atomic uint32_t never_ending_stop;

struct waiter {
  vmt_thread_t *thread; /* a runtime thread, so vmthread's calls work in it */
  pthread_t pthread;
  const wake_variant_t *_Atomic variant;
  _Atomic uint32_t round, announced, finished;
  _Atomic int64_t t1;
  _Atomic uint32_t word; /* futex word; also the condition unpark and notify make true */
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  vmt_monitor_t *monitor;
};

static void announce(waiter_t *w) {
  atomic_store_explicit(&w->announced, atomic_load(&w->round), memory_order_release);
}

/* Waits until *w == v: a short spin, then sched_yield, so that the thread it waits for runs
 * even when load from elsewhere put both on one CPU (a pure spin would hold it off for a
 * whole time slice, milliseconds). */
static void await_value(_Atomic uint32_t *w, uint32_t v) {
  for (unsigned i = 0; atomic_load_explicit(w, memory_order_acquire) != v; i++)
    if (i >= 100) sched_yield();
}

/* Lets SETTLE_NS pass, yielding the CPU: a waiter sharing it gets to block in the kernel. */
static void settle(void) {
  int64_t end = vmtb_now_ns() + SETTLE_NS;
  while (vmtb_now_ns() < end) sched_yield();
}

static void die(const char *what, int err) {
  fprintf(stderr, "wake: %s: %s\n", what, strerror(err < 0 ? -err : err));
  exit(1);
}

static void *never_ending_main(void *arg) {
  while (atomic_load(&never_ending_stop) == 0)
    syscall(SYS_futex, (uint32_t *)&never_ending_stop, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
  return arg;
}

static int64_t block_futex(waiter_t *w) {
  int64_t t;
  announce(w);
  do {
    syscall(SYS_futex, (uint32_t *)&w->word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    t = vmtb_now_ns();
  } while (atomic_load(&w->word) == 0);
  atomic_store(&w->word, 0);
  return t;
}

static int64_t act_futex(waiter_t *w) {
  int64_t t0 = vmtb_now_ns();
  atomic_store(&w->word, 1);
  syscall(SYS_futex, (uint32_t *)&w->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
  return t0;
}

static int64_t block_cond(waiter_t *w) {
  int64_t t;
  pthread_mutex_lock(&w->mutex);
  announce(w);
  do {
    pthread_cond_wait(&w->cond, &w->mutex);
    t = vmtb_now_ns();
  } while (atomic_load(&w->word) == 0);
  atomic_store(&w->word, 0);
  pthread_mutex_unlock(&w->mutex);
  return t;
}

static int64_t act_cond(waiter_t *w) {
  pthread_mutex_lock(&w->mutex);
  atomic_store(&w->word, 1);
  int64_t t0 = vmtb_now_ns();
  pthread_cond_signal(&w->cond);
  pthread_mutex_unlock(&w->mutex);
  return t0;
}

static void on_sigusr1(int sig) { (void)sig; }

static int64_t block_nanosleep(waiter_t *w) {
  struct timespec forever = {60, 0};
  announce(w);
  int rc = nanosleep(&forever, NULL);
  int64_t t = vmtb_now_ns();
  if (rc == 0 || errno != EINTR) die("nanosleep was not interrupted", rc == 0 ? EINVAL : errno);
  return t;
}

static int64_t act_pthread_kill(waiter_t *w) {
  int64_t t0 = vmtb_now_ns();
  pthread_kill(w->pthread, SIGUSR1);
  return t0;
}

static int64_t block_vmt_park(waiter_t *w) {
  int64_t t;
  announce(w);
  do {
    vmt_park(0);
    t = vmtb_now_ns();
  } while (atomic_load(&w->word) == 0);
  atomic_store(&w->word, 0);
  return t;
}

static int64_t act_vmt_unpark(waiter_t *w) {
  atomic_store(&w->word, 1);
  int64_t t0 = vmtb_now_ns();
  vmt_unpark(w->thread);
  return t0;
}

static int64_t block_vmt_wait(waiter_t *w) {
  int64_t t;
  vmt_monitor_enter(w->monitor);
  announce(w);
  do {
    vmt_monitor_wait(w->monitor, 0);
    t = vmtb_now_ns();
  } while (atomic_load(&w->word) == 0);
  atomic_store(&w->word, 0);
  vmt_monitor_exit(w->monitor);
  return t;
}

static int64_t act_vmt_notify(waiter_t *w) {
  vmt_monitor_enter(w->monitor);
  atomic_store(&w->word, 1);
  int64_t t0 = vmtb_now_ns();
  vmt_monitor_notify(w->monitor);
  vmt_monitor_exit(w->monitor);
  return t0;
}

static int64_t block_vmt_sleep_interrupted(waiter_t *w) {
  announce(w);
  int rc = vmt_sleep_ns(60LL * 1000 * 1000 * 1000);
  int64_t t = vmtb_now_ns();
  if (rc != -EINTR) die("vmt_sleep_ns was not interrupted", rc ? rc : EINVAL);
  return t;
}

static int64_t block_vmt_park_interrupted(waiter_t *w) {
  int64_t t;
  announce(w);
  do {
    vmt_park(0);   /* -EINTR, the status kept: park never clears it */
    t = vmtb_now_ns();
  } while (!vmt_thread_interrupted());
  return t;
}

static int64_t block_vmt_wait_interrupted(waiter_t *w) {
  vmt_monitor_enter(w->monitor);
  announce(w);
  int rc = vmt_monitor_wait(w->monitor, 0);
  int64_t t = vmtb_now_ns();
  vmt_monitor_exit(w->monitor);
  if (rc != -EINTR) die("vmt_monitor_wait was not interrupted", rc ? rc : EINVAL);
  return t;
}

static int64_t block_vmt_join_interrupted(waiter_t *w) {
  announce(w);
  int rc = vmt_thread_join(never_ending, NULL);
  int64_t t = vmtb_now_ns();
  if (rc != -EINTR) die("vmt_thread_join was not interrupted", rc ? rc : EINVAL);
  return t;
}

static int64_t act_vmt_interrupt(waiter_t *w) {
  int64_t t0 = vmtb_now_ns();
  vmt_thread_interrupt(w->thread);
  return t0;
}

static const wake_variant_t WAKE_VARIANTS[] = {
    {"futex_wake", block_futex, act_futex},
    {"condvar_signal", block_cond, act_cond},
    {"pthread_kill_nanosleep", block_nanosleep, act_pthread_kill},
    {"vmt_unpark", block_vmt_park, act_vmt_unpark},
    {"vmt_notify", block_vmt_wait, act_vmt_notify},
    {"vmt_interrupt_sleep", block_vmt_sleep_interrupted, act_vmt_interrupt},
    {"vmt_interrupt_park", block_vmt_park_interrupted, act_vmt_interrupt},
    {"vmt_interrupt_wait", block_vmt_wait_interrupted, act_vmt_interrupt},
    {"vmt_interrupt_join", block_vmt_join_interrupted, act_vmt_interrupt},
};
#define N_WAKE (sizeof(WAKE_VARIANTS) / sizeof(WAKE_VARIANTS[0]))

static void *waiter_main(void *arg) {
  waiter_t *w = arg;
  w->pthread = pthread_self();
  uint32_t seen = 0;
  for (;;) {
    uint32_t r;
    /* Between rounds it sleeps: the timed part runs meanwhile and needs no competitor. */
    while ((r = atomic_load_explicit(&w->round, memory_order_acquire)) == seen)
      syscall(SYS_futex, (uint32_t *)&w->round, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
    seen = r;
    const wake_variant_t *v = atomic_load(&w->variant);
    if (v == NULL) return NULL;
    atomic_store(&w->t1, v->block(w));
    atomic_store_explicit(&w->finished, seen, memory_order_release);
  }
}

static uint32_t next_round(waiter_t *w) {
  uint32_t r = atomic_fetch_add_explicit(&w->round, 1, memory_order_release) + 1;
  syscall(SYS_futex, (uint32_t *)&w->round, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
  return r;
}

/* One round: the waiter blocks as v says, the waker wakes it; the latency in ns. */
static int64_t wake_once(waiter_t *w, const wake_variant_t *v) {
  atomic_store(&w->variant, v);
  uint32_t r = next_round(w);
  await_value(&w->announced, r);
  settle();
  int64_t t0 = v->act(w);
  await_value(&w->finished, r);
  return atomic_load(&w->t1) - t0;
}

/* ---- A thread's last action -> join returns ---------------------------------------------- */

static _Atomic uint32_t joining;
static _Atomic int64_t exit_t0;

static void *exit_body(void *arg) {
  await_value(&joining, 1);
  settle(); /* the joiner is blocked in join by now */
  atomic_store(&exit_t0, vmtb_now_ns());
  return arg;
}

typedef struct exit_variant {
  const char *name;
  void (*start)(void **handle); /* starts a thread running exit_body */
  void (*join)(void *handle);   /* joins and frees it */
} exit_variant_t;

static void start_pthread(void **handle) {
  pthread_t *t = malloc(sizeof(*t));
  int rc = t ? pthread_create(t, NULL, exit_body, NULL) : ENOMEM;
  if (rc) die("pthread_create", rc);
  *handle = t;
}

static void join_pthread(void *handle) {
  pthread_join(*(pthread_t *)handle, NULL);
  free(handle);
}

static void start_vmt(void **handle) {
  vmt_thread_t *t;
  int rc = vmt_thread_start(&t, exit_body, NULL);
  if (rc) die("vmt_thread_start", rc);
  *handle = t;
}

static void join_vmt(void *handle) {
  vmt_thread_join(handle, NULL);
  vmt_thread_release(handle);
}

static const exit_variant_t EXIT_VARIANTS[] = {
    {"pthread_exit_join", start_pthread, join_pthread},
    {"vmt_exit_join", start_vmt, join_vmt},
};
#define N_EXIT (sizeof(EXIT_VARIANTS) / sizeof(EXIT_VARIANTS[0]))

static int64_t exit_join_once(const exit_variant_t *v) {
  void *handle;
  atomic_store(&joining, 0);
  v->start(&handle);
  atomic_store(&joining, 1); /* announced just before the blocking call */
  v->join(handle);
  return vmtb_now_ns() - atomic_load(&exit_t0);
}

/* ---- 1 ms timed blocks on the calling thread --------------------------------------------- */

/* slack_ns of a vmthread row: the slack the runtime gives the threads it starts. */
#define RUNTIME_SLACK ((unsigned long)-1)

typedef struct timed_variant {
  const char *name;
  unsigned long slack_ns; /* PR_SET_TIMERSLACK before the call; 0: the thread's default */
  void (*block_1ms)(void);
} timed_variant_t;

static vmt_monitor_t *timed_monitor;

static void timed_nanosleep(void) {
  struct timespec ts = {0, TIMED_NS};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static void timed_vmt_sleep(void) { vmt_sleep_ns(TIMED_NS); }
static void timed_vmt_park(void) { vmt_park(TIMED_NS); }

static void timed_vmt_wait(void) {
  vmt_monitor_enter(timed_monitor);
  vmt_monitor_wait(timed_monitor, TIMED_NS);
  vmt_monitor_exit(timed_monitor);
}

static void timed_vmt_join(void) { vmt_thread_timed_join(never_ending, TIMED_NS, NULL); }

static const timed_variant_t TIMED_VARIANTS[] = {
    {"nanosleep_1ms", 0, timed_nanosleep},
    {"nanosleep_1ms_slack_1ns", 1, timed_nanosleep},
    {"vmt_sleep_1ms", RUNTIME_SLACK, timed_vmt_sleep},
    {"vmt_park_1ms", RUNTIME_SLACK, timed_vmt_park},
    {"vmt_wait_1ms", RUNTIME_SLACK, timed_vmt_wait},
    {"vmt_join_1ms", RUNTIME_SLACK, timed_vmt_join},
};
#define N_TIMED (sizeof(TIMED_VARIANTS) / sizeof(TIMED_VARIANTS[0]))

/* ---- Reporting ---------------------------------------------------------------------------- */

static double *to_us(const int64_t *ns, size_t n) {
  double *us = malloc(n * sizeof(double));
  if (us == NULL) die("malloc", ENOMEM);
  for (size_t i = 0; i < n; i++) us[i] = (double)ns[i] / 1000.0;
  return us;
}

static int64_t *alloc_samples(size_t rows, size_t n) {
  int64_t *s = calloc(rows * n, sizeof(int64_t));
  if (s == NULL) die("calloc", ENOMEM);
  return s;
}

static void wake_rows(const vmtb_options_t *o, const cfg_t *c, waiter_t *w) {
  size_t nv = N_WAKE + N_EXIT, n = c->samples;
  int64_t *s = alloc_samples(nv, n);
  for (long r = -(long)c->warmup; r < (long)n; r++) {
    for (size_t k = 0; k < nv; k++) {
      size_t v = (k + (size_t)(r + (long)c->warmup)) % nv; /* rotate the order */
      int64_t ns = v < N_WAKE ? wake_once(w, &WAKE_VARIANTS[v])
                              : exit_join_once(&EXIT_VARIANTS[v - N_WAKE]);
      if (r >= 0) s[v * n + (size_t)r] = ns;
    }
  }
  vmtb_table_header(o, "wake-up latency: waker's call -> the woken thread runs (us)");
  for (size_t v = 0; v < nv; v++) {
    vmtb_result_t res = {.bench = "wake", .unit = "us"};
    res.variant = v < N_WAKE ? WAKE_VARIANTS[v].name : EXIT_VARIANTS[v - N_WAKE].name;
    double *us = to_us(&s[v * n], n);
    vmtb_stats(us, n, &res);
    vmtb_report(o, &res, NULL);
    free(us);
  }
  free(s);
}

static void timed_rows(const vmtb_options_t *o, const cfg_t *c) {
  unsigned long default_slack = (unsigned long)prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
  size_t n = c->timed_samples;
  int64_t *s = alloc_samples(N_TIMED, n);
  unsigned long slack[N_TIMED];
  for (long r = -(long)c->warmup / 10; r < (long)n; r++) {
    for (size_t k = 0; k < N_TIMED; k++) {
      size_t v = (k + (size_t)(r + (long)c->warmup)) % N_TIMED;
      /* 0 resets the calling thread's slack to its default (prctl(2)). */
      unsigned long want = TIMED_VARIANTS[v].slack_ns;
      if (want == RUNTIME_SLACK) want = (unsigned long)vmt_thread_default_timer_slack();
      prctl(PR_SET_TIMERSLACK, want, 0, 0, 0);
      slack[v] = (unsigned long)prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
      int64_t t0 = vmtb_now_ns();
      TIMED_VARIANTS[v].block_1ms();
      int64_t t1 = vmtb_now_ns();
      if (r >= 0) s[v * n + (size_t)r] = t1 - t0;
    }
  }
  prctl(PR_SET_TIMERSLACK, default_slack, 0, 0, 0);
  vmtb_table_header(o, "1 ms timed block: actual duration (us)");
  for (size_t v = 0; v < N_TIMED; v++) {
    vmtb_result_t res = {.bench = "wake.timed", .variant = TIMED_VARIANTS[v].name, .unit = "us"};
    double *us = to_us(&s[v * n], n);
    vmtb_stats(us, n, &res);
    char extra[200];
    snprintf(extra, sizeof(extra),
             "\"requested_us\":%d,\"overshoot_p50_us\":%.3f,\"overshoot_p99_us\":%.3f,"
             "\"timer_slack_ns\":%lu",
             TIMED_NS / 1000, res.p50 - TIMED_NS / 1000, res.p99 - TIMED_NS / 1000, slack[v]);
    vmtb_report(o, &res, extra);
    free(us);
  }
  free(s);
}

int main(int argc, char **argv) {
  vmtb_options_t o;
  vmtb_parse_args(argc, argv, &o, NULL);
  cfg_t c = {.warmup = 300, .samples = 2000, .timed_samples = 1000};
  if (o.quick) c = (cfg_t){.warmup = 50, .samples = 200, .timed_samples = 100};
  if (o.longrun) c = (cfg_t){.warmup = 1000, .samples = 10000, .timed_samples = 5000};
  if (!o.json) vmtb_describe_machine(stdout);

  /* No SA_RESTART: nanosleep fails with EINTR whatever the flags (signal(7)), the rest too. */
  struct sigaction sa = {.sa_handler = on_sigusr1};
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGUSR1, &sa, NULL) != 0) die("sigaction", errno);
  vmt_thread_t *self;
  int rc = vmt_thread_attach(NULL, &self);
  if (rc) die("vmt_thread_attach", rc);

  static waiter_t w = {.mutex = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
  if ((rc = vmt_monitor_create(&w.monitor, "wake")) != 0 ||
      (rc = vmt_monitor_create(&timed_monitor, "timed")) != 0)
    die("vmt_monitor_create", rc);
  atomic_store(&w.variant, &WAKE_VARIANTS[0]);
  if ((rc = vmt_thread_start(&w.thread, waiter_main, &w)) != 0) die("vmt_thread_start", rc);
  if ((rc = vmt_thread_start(&never_ending, never_ending_main, NULL)) != 0)
    die("vmt_thread_start", rc);

  wake_rows(&o, &c, &w);
  timed_rows(&o, &c);

  atomic_store(&w.variant, NULL);
  next_round(&w);
  vmt_thread_join(w.thread, NULL);
  vmt_thread_release(w.thread);
  atomic_store(&never_ending_stop, 1);
  syscall(SYS_futex, (uint32_t *)&never_ending_stop, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
  vmt_thread_join(never_ending, NULL);
  vmt_thread_release(never_ending);
  vmt_monitor_destroy(w.monitor);
  vmt_monitor_destroy(timed_monitor);
  vmt_thread_detach();
  return 0;
}
