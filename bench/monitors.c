/*
 * bench/monitors.c: what vmthread's monitors, synchronizers and park cost next to a bare pthread
 * mutex (and condition variable) in the same run, with the definitions HotSpot's side uses
 * (bench/java/MonitorsBench.java), so that the rows pair up (issues #5 and #16).
 *
 *   uncontended   one thread, enter+exit (lock+unlock) pairs in batches of BATCH; the variants
 *                 (pthread mutex, monitor with contention monitoring off and on, synchronizer,
 *                 the empty loop) are interleaved batch by batch in a rotating order, so that
 *                 frequency changes and noise from other processes hit all of them alike. A
 *                 sample is one batch's time / BATCH. The empty loop is what the timer and the
 *                 loop add per pair, and tells whether the core was shared (docs/monitors.md).
 *   contended     two threads start a batch together (a spin barrier, not timed) and each makes
 *                 BATCH pairs on one shared lock; a sample is the time from the start until the
 *                 later of the two has finished, / BATCH: ns per pair per thread while both
 *                 run. A sample counts only if neither thread was preempted meanwhile (its
 *                 involuntary context switches, getrusage); the variants alternate sample by
 *                 sample. On a loaded 2-core machine two free-running threads seldom overlap
 *                 (in such a run 0.2% of enters found the monitor owned): the barrier and the
 *                 filter make every sample one in which both threads ran.
 *   hand-off      two threads pass a turn back and forth: wait/notify on a monitor (pthread: a
 *                 condition variable), and vmt_park/vmt_unpark with a turn word. A sample is
 *                 one round trip (two hand-offs, two wake-ups) timed by the main thread.
 * Ratios printed at the end are of medians; --json writes the harness's schema.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "bench/harness.h"
#include "vmthread.h"

#define BATCH 1000

typedef struct cfg {
  size_t warmup, samples, contended_warmup, contended_samples, handoff_samples;
  int64_t contended_budget_s;   /* the contended part stops sampling after this */
} cfg_t;

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static vmt_monitor_t *monitor;
static vmt_sync_t *sync_lock;

static double batch_pthread(int n) {
  int64_t t0 = vmtb_now_ns();
  for (int i = 0; i < n; i++) {
    pthread_mutex_lock(&mutex);
    pthread_mutex_unlock(&mutex);
  }
  return (double)(vmtb_now_ns() - t0) / n;
}

static double batch_monitor(int n) {
  int64_t t0 = vmtb_now_ns();
  for (int i = 0; i < n; i++) {
    vmt_monitor_enter(monitor);
    vmt_monitor_exit(monitor);
  }
  return (double)(vmtb_now_ns() - t0) / n;
}

static double batch_sync(int n) {
  int64_t t0 = vmtb_now_ns();
  for (int i = 0; i < n; i++) {
    vmt_sync_lock(sync_lock);
    vmt_sync_unlock(sync_lock);
  }
  return (double)(vmtb_now_ns() - t0) / n;
}

static double batch_empty(int n) {
  int64_t t0 = vmtb_now_ns();
  for (int i = 0; i < n; i++) VMTB_SINK(i);
  return (double)(vmtb_now_ns() - t0) / n;
}

static void report(const vmtb_options_t *o, const char *bench, const char *variant, double *s,
                   size_t n, vmtb_result_t *r, const char *extra) {
  r->bench = bench;
  r->variant = variant;
  r->unit = "ns/call";
  vmtb_stats(s, n, r);
  vmtb_report(o, r, extra);
}

/* ---- Uncontended ------------------------------------------------------------------------ */

/* Probes of the core's state, in the same rotation (docs/monitors.md, "Why the uncontended ratio
 * moves"): a chain of dependent multiplies runs at one per 3 cycles however the core is shared,
 * so it gives the clock; a one-instruction-per-cycle loop (aligned to 64 bytes in asm, so that
 * no build moves it across an op-cache line, which halves its speed) runs at one iteration per
 * cycle only while no other hardware thread competes for the core. And the floor of any lock: a
 * CAS and an exchange on one word, the two locked instructions every enter+exit pair makes. */
static double batch_cycle_loop(int n) {
  int64_t t0 = vmtb_now_ns();
#if defined(__x86_64__)
  int i = 0;
  __asm__ __volatile__(".p2align 6\n1:\n\tadd $1, %0\n\tcmp %1, %0\n\tjne 1b"
                       : "+r"(i) : "r"(n) : "cc");
#else
  for (int i = 0; i < n; i++) VMTB_SINK(i);
#endif
  return (double)(vmtb_now_ns() - t0) / n;
}

static double batch_multiply_chain(int n) {
  uint64_t x = 3;
  int64_t t0 = vmtb_now_ns();
  for (int i = 0; i < n; i++) {
    x *= 0x9E3779B97F4A7C15ull;
    __asm__ __volatile__("" : "+r"(x));
  }
  VMTB_SINK(x);
  return (double)(vmtb_now_ns() - t0) / n;
}

static double batch_locked_pair(int n) {
  static _Atomic uint32_t word;
  int64_t t0 = vmtb_now_ns();
  for (int i = 0; i < n; i++) {
    uint32_t expected = 0;
    atomic_compare_exchange_strong(&word, &expected, 1);
    atomic_exchange(&word, 0);
  }
  return (double)(vmtb_now_ns() - t0) / n;
}

enum { U_PTHREAD, U_MONITOR, U_MONITOR_ON, U_SYNC, U_EMPTY, U_CHAIN, U_CYCLE, U_LOCKED,
       U_VARIANTS };
static const char *const u_names[U_VARIANTS] = {
    "pthread_mutex lock+unlock", "monitor enter+exit", "monitor enter+exit, monitoring on",
    "sync lock+unlock", "measuring overhead (empty loop)", "probe: dependent multiply",
    "probe: one-cycle loop", "probe: CAS+exchange pair"};

static double uncontended_batch(int v) {
  switch (v) {
    case U_PTHREAD: return batch_pthread(BATCH);
    case U_MONITOR: return batch_monitor(BATCH);
    case U_MONITOR_ON: {
      vmt_mx_set_thread_contention_monitoring_enabled(true);
      double ns = batch_monitor(BATCH);
      vmt_mx_set_thread_contention_monitoring_enabled(false);
      return ns;
    }
    case U_SYNC: return batch_sync(BATCH);
    case U_CHAIN: return batch_multiply_chain(BATCH);
    case U_CYCLE: return batch_cycle_loop(BATCH);
    case U_LOCKED: return batch_locked_pair(BATCH);
    default: return batch_empty(BATCH);
  }
}

/* a / b, or 0 when b has no samples (printed, never a row's value). */
static double ratio(double a, double b) { return b > 0 ? a / b : 0; }

typedef struct ratios {
  double uncontended, monitoring, sync_uncontended, contended, contended_monitoring,
      sync_contended, handoff;
} ratios_t;

static void uncontended(const vmtb_options_t *o, const cfg_t *c, ratios_t *q) {
  double *s[U_VARIANTS];
  for (int v = 0; v < U_VARIANTS; v++)
    if (!(s[v] = malloc(c->samples * sizeof(double)))) abort();
  for (size_t i = 0; i < c->warmup; i++)
    for (int v = 0; v < U_VARIANTS; v++) uncontended_batch(v);
  for (size_t i = 0; i < c->samples; i++)
    for (int k = 0; k < U_VARIANTS; k++) {
      int v = (int)((k + i) % U_VARIANTS);   /* rotate: no variant always runs first */
      s[v][i] = uncontended_batch(v);
    }
  vmtb_table_header(o, "uncontended enter+exit, one thread (batches of 1000, interleaved)");
  vmtb_result_t r[U_VARIANTS];
  /* Ratios need the baselines' medians first: compute all, then report. */
  for (int v = 0; v < U_VARIANTS; v++) vmtb_stats(s[v], c->samples, &r[v]);
  /* Cycles per iteration of the one-cycle loop: 1 with the core to itself, about 2 shared. */
  double loop_cycles = r[U_CYCLE].p50 / (r[U_CHAIN].p50 / 3);
  for (int v = 0; v < U_VARIANTS; v++) {
    char extra[160] = "";
    if (v == U_MONITOR || v == U_SYNC)
      snprintf(extra, sizeof(extra), "\"ratio_vs_pthread\":%.3f,\"core_loop_cycles\":%.2f",
               r[v].p50 / r[U_PTHREAD].p50, loop_cycles);
    else if (v == U_MONITOR_ON)
      snprintf(extra, sizeof(extra), "\"ratio_vs_pthread\":%.3f,\"ratio_vs_monitoring_off\":%.3f",
               r[v].p50 / r[U_PTHREAD].p50, r[v].p50 / r[U_MONITOR].p50);
    report(o, "monitors.uncontended", u_names[v], s[v], c->samples, &r[v],
           extra[0] ? extra : NULL);
  }
  q->uncontended = r[U_MONITOR].p50 / r[U_PTHREAD].p50;
  q->monitoring = r[U_MONITOR_ON].p50 / r[U_MONITOR].p50;
  q->sync_uncontended = r[U_SYNC].p50 / r[U_PTHREAD].p50;
  double e = r[U_EMPTY].p50;
  vmtb_note(o,
            "uncontended p50: monitor %.2f ns, pthread %.2f ns, ratio %.3f (without the %.2f ns "
            "loop+timer overhead: %.3f); monitoring on/off %.3f; sync %.2f ns",
            r[U_MONITOR].p50, r[U_PTHREAD].p50, q->uncontended, e,
            (r[U_MONITOR].p50 - e) / (r[U_PTHREAD].p50 - e), q->monitoring, r[U_SYNC].p50);
  vmtb_note(o,
            "core: %.2f cycles per iteration of the one-cycle loop (1: the core to itself; about "
            "2: shared with another hardware thread, where the ratio above rises), clock %.2f "
            "GHz, CAS+exchange floor %.2f ns",
            loop_cycles, 3 / r[U_CHAIN].p50, r[U_LOCKED].p50);
  for (int v = 0; v < U_VARIANTS; v++) free(s[v]);
}

/* ---- Contended: two threads on one lock, batches started together ------------------------- */

enum { C_PTHREAD, C_MONITOR, C_MONITOR_ON, C_SYNC, C_VARIANTS };
static const char *const c_names[C_VARIANTS] = {
    "pthread_mutex lock+unlock", "monitor enter+exit", "monitor enter+exit, monitoring on",
    "sync lock+unlock"};

/* One turn of a wait for the other thread: spins for the first millisecond of the wait (a yield
 * on a loaded machine can give the CPU away for a whole time slice, and counts as a
 * preemption), then yields, so that the other thread runs even when load put both on one CPU. */
static void pause_turn(unsigned i, int64_t since) {
  __builtin_ia32_pause();
  if (i % 64 == 63 && vmtb_now_ns() - since > 1000000) sched_yield();
}

/* The calling thread's involuntary context switches (preemptions; a sleep in a futex is a
 * voluntary one). MonitorsBench reads the same counter from /proc/thread-self/status. */
static long preemptions(void) {
  struct rusage ru;
  return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nivcsw : -1;
}

static void contended_batch(int v) {
  switch (v) {
    case C_PTHREAD: batch_pthread(BATCH); break;
    case C_SYNC: batch_sync(BATCH); break;
    default: batch_monitor(BATCH); break;
  }
}

typedef struct partner {
  _Atomic unsigned ready;      /* = round once the partner waits for the start */
  _Atomic unsigned go;         /* the main thread's start signal for a round */
  _Atomic unsigned done;       /* = round once t1 and preempted are stored */
  _Atomic int variant;         /* -1: leave */
  _Atomic int64_t t1;
  _Atomic bool preempted;      /* between its ready and its batch's end */
} partner_t;

static void *partner_body(void *arg) {
  partner_t *p = arg;
  for (unsigned round = 1;; round++) {
    long before = preemptions();
    atomic_store(&p->ready, round);
    int64_t since = vmtb_now_ns();
    for (unsigned i = 0; atomic_load(&p->go) != round; i++) pause_turn(i, since);
    int v = atomic_load(&p->variant);
    if (v < 0) return NULL;
    contended_batch(v);
    atomic_store(&p->t1, vmtb_now_ns());
    atomic_store(&p->preempted, preemptions() != before);
    atomic_store(&p->done, round);
  }
}

/* A sample counts only if neither thread was preempted from the start signal to the end of its
 * batch: on a shared 2-core machine the two threads otherwise often take turns on one CPU, and
 * the sample measures the scheduler, not the lock. Samples are taken until every variant has
 * its count or the time budget is spent; kept_pct says how many attempts counted. */
static void contended(const vmtb_options_t *o, const cfg_t *c, ratios_t *q) {
  size_t n = c->contended_samples;
  double *s[C_VARIANTS];
  size_t kept[C_VARIANTS] = {0}, attempts[C_VARIANTS] = {0};
  uint64_t enters[C_VARIANTS] = {0}, contended_enters[C_VARIANTS] = {0};
  for (int v = 0; v < C_VARIANTS; v++)
    if (!(s[v] = malloc(n * sizeof(double)))) abort();
  partner_t p = {0};
  vmt_thread_t *t;
  if (vmt_thread_start(&t, partner_body, &p) != 0) abort();
  unsigned round = 0;
  size_t full = 0;
  int64_t deadline = vmtb_now_ns() + c->contended_budget_s * 1000000000LL;
  for (size_t r = 0; full < C_VARIANTS && (r < c->contended_warmup || vmtb_now_ns() < deadline);
       r++)
    for (int k = 0; k < C_VARIANTS; k++) {
      int v = (int)((k + r) % C_VARIANTS);   /* rotate: no variant always runs first */
      if (kept[v] == n) continue;
      round++;
      int64_t since = vmtb_now_ns();
      for (unsigned i = 0; atomic_load(&p.ready) != round; i++) pause_turn(i, since);
      if (v == C_MONITOR_ON) vmt_mx_set_thread_contention_monitoring_enabled(true);
      vmt_monitor_stats_t before, after;
      vmt_monitor_get_stats(monitor, &before);
      atomic_store(&p.variant, v);
      long main_before = preemptions();
      int64_t t0 = vmtb_now_ns();
      atomic_store(&p.go, round);
      contended_batch(v);
      int64_t t_main = vmtb_now_ns();
      bool main_preempted = preemptions() != main_before;
      since = vmtb_now_ns();
      for (unsigned i = 0; atomic_load(&p.done) != round; i++) pause_turn(i, since);
      int64_t t_partner = atomic_load(&p.t1);
      vmt_monitor_get_stats(monitor, &after);
      if (v == C_MONITOR_ON) vmt_mx_set_thread_contention_monitoring_enabled(false);
      if (r < c->contended_warmup) continue;
      attempts[v]++;
      if (main_preempted || atomic_load(&p.preempted)) continue;
      s[v][kept[v]++] = (double)((t_main > t_partner ? t_main : t_partner) - t0) / BATCH;
      if (kept[v] == n) full++;
      enters[v] += after.enters - before.enters;
      contended_enters[v] += after.contended_enters - before.contended_enters;
    }
  round++;
  int64_t since = vmtb_now_ns();
  for (unsigned i = 0; atomic_load(&p.ready) != round; i++) pause_turn(i, since);
  atomic_store(&p.variant, -1);
  atomic_store(&p.go, round);
  vmt_thread_join(t, NULL);
  vmt_thread_release(t);

  vmtb_table_header(o, "contended enter+exit, two threads on one lock (ns per pair per thread)");
  vmtb_result_t res[C_VARIANTS] = {0};
  for (int v = 0; v < C_VARIANTS; v++) {
    if (kept[v] > 0) vmtb_stats(s[v], kept[v], &res[v]);
    else   /* never both on a CPU for a whole batch: no row (the summary says n/a) */
      vmtb_note(o, "  %s: no sample without a preemption in %zu attempts", c_names[v],
                attempts[v]);
  }
  for (int v = 0; v < C_VARIANTS; v++) {
    if (kept[v] == 0) continue;
    char extra[200];
    int len = snprintf(extra, sizeof(extra), "\"batch\":%d,\"kept_pct\":%.1f", BATCH,
                       100.0 * (double)kept[v] / (double)attempts[v]);
    if (v != C_PTHREAD && kept[C_PTHREAD] > 0)
      len += snprintf(extra + len, sizeof(extra) - (size_t)len, ",\"ratio_vs_pthread\":%.3f",
                      res[v].p50 / res[C_PTHREAD].p50);
    if (v == C_MONITOR_ON && kept[C_MONITOR] > 0)
      len += snprintf(extra + len, sizeof(extra) - (size_t)len, ",\"ratio_vs_monitoring_off\":%.3f",
                      res[v].p50 / res[C_MONITOR].p50);
    /* How often an enter had to block (vmt_monitor_stats_t.contended_enters: one that a spin
     * completed does not count; a pthread mutex cannot tell). */
    if (enters[v] > 0)
      snprintf(extra + len, sizeof(extra) - (size_t)len, ",\"blocked_pct\":%.1f",
               100.0 * (double)contended_enters[v] / (double)enters[v]);
    report(o, "monitors.contended", c_names[v], s[v], kept[v], &res[v], extra);
  }
  q->contended = ratio(res[C_MONITOR].p50, res[C_PTHREAD].p50);
  q->contended_monitoring = ratio(res[C_MONITOR_ON].p50, res[C_MONITOR].p50);
  q->sync_contended = ratio(res[C_SYNC].p50, res[C_PTHREAD].p50);
  vmtb_note(o, "contended p50: monitor %.1f ns (%.1f%% of enters blocked), pthread %.1f ns, "
            "ratio %.3f; sync %.1f ns",
            res[C_MONITOR].p50, 100.0 * (double)contended_enters[C_MONITOR] /
                                    (double)(enters[C_MONITOR] + !enters[C_MONITOR]),
            res[C_PTHREAD].p50, q->contended, res[C_SYNC].p50);
  for (int v = 0; v < C_VARIANTS; v++) free(s[v]);
}

/* ---- Hand-offs: wait/notify (condition variable) and park/unpark ---------------------------- */

typedef struct pingpong {
  bool use_monitor;
  size_t rounds;
  int turn;
  pthread_cond_t cond;
  double *out;
} pingpong_t;

static void pp_lock(pingpong_t *p) {
  if (p->use_monitor) vmt_monitor_enter(monitor);
  else pthread_mutex_lock(&mutex);
}
static void pp_unlock(pingpong_t *p) {
  if (p->use_monitor) vmt_monitor_exit(monitor);
  else pthread_mutex_unlock(&mutex);
}
static void pp_pass(pingpong_t *p, int me) {
  p->turn = 1 - me;
  if (p->use_monitor) vmt_monitor_notify(monitor);
  else pthread_cond_signal(&p->cond);
  while (p->turn != me) {
    if (p->use_monitor) vmt_monitor_wait(monitor, 0);
    else pthread_cond_wait(&p->cond, &mutex);
  }
}

static void *pong(void *arg) {
  pingpong_t *p = arg;
  pp_lock(p);
  while (p->turn != 1) {
    if (p->use_monitor) vmt_monitor_wait(monitor, 0);
    else pthread_cond_wait(&p->cond, &mutex);
  }
  for (size_t i = 0; i < p->rounds; i++) pp_pass(p, 1);
  p->turn = 0;
  if (p->use_monitor) vmt_monitor_notify(monitor);
  else pthread_cond_signal(&p->cond);
  pp_unlock(p);
  return NULL;
}

static double report_handoff(const vmtb_options_t *o, const char *variant, double *out,
                             size_t rounds, double baseline_p50) {
  vmtb_result_t res;
  size_t skip = rounds / 10;   /* warm-up */
  char extra[64] = "";
  vmtb_stats(out + skip, rounds - skip, &res);
  if (baseline_p50 > 0)
    snprintf(extra, sizeof(extra), "\"ratio_vs_pthread\":%.3f", res.p50 / baseline_p50);
  res.bench = "monitors.handoff";
  res.variant = variant;
  res.unit = "ns/round trip";
  vmtb_report(o, &res, extra[0] ? extra : NULL);
  return res.p50;
}

static double handoff(const vmtb_options_t *o, const cfg_t *c, bool use_monitor,
                      const char *variant, double baseline_p50) {
  pingpong_t p = {.use_monitor = use_monitor, .rounds = c->handoff_samples, .turn = 0};
  pthread_cond_init(&p.cond, NULL);
  p.out = malloc(p.rounds * sizeof(double));
  if (!p.out) abort();
  vmt_thread_t *t;
  if (vmt_thread_start(&t, pong, &p) != 0) abort();
  pp_lock(&p);
  for (size_t i = 0; i < p.rounds; i++) {
    int64_t t0 = vmtb_now_ns();
    pp_pass(&p, 0);
    p.out[i] = (double)(vmtb_now_ns() - t0);
  }
  p.turn = 1;   /* let pong finish its last pass */
  if (use_monitor) vmt_monitor_notify(monitor);
  else pthread_cond_signal(&p.cond);
  pp_unlock(&p);
  vmt_thread_join(t, NULL);
  vmt_thread_release(t);
  double p50 = report_handoff(o, variant, p.out, p.rounds, baseline_p50);
  pthread_cond_destroy(&p.cond);
  free(p.out);
  return p50;
}

/* LockSupport.park/unpark's counterpart: the turn word says whose turn it is; each side
 * unparks the other, then parks until the turn comes back (a park may return early). */
typedef struct parkpong {
  size_t rounds;
  _Atomic int turn;
  vmt_thread_t *main_thread;
} parkpong_t;

static void *park_pong(void *arg) {
  parkpong_t *p = arg;
  vmt_thread_t *main_thread = p->main_thread;
  for (size_t i = 0; i < p->rounds; i++) {
    while (atomic_load(&p->turn) != 1) vmt_park(0);
    atomic_store(&p->turn, 0);
    vmt_unpark(main_thread);
  }
  return NULL;
}

static void park_handoff(const vmtb_options_t *o, const cfg_t *c) {
  parkpong_t p = {.rounds = c->handoff_samples, .turn = 0, .main_thread = vmt_thread_current()};
  double *out = malloc(p.rounds * sizeof(double));
  if (!out) abort();
  vmt_thread_t *t;
  if (vmt_thread_start(&t, park_pong, &p) != 0) abort();
  for (size_t i = 0; i < p.rounds; i++) {
    int64_t t0 = vmtb_now_ns();
    atomic_store(&p.turn, 1);
    vmt_unpark(t);
    while (atomic_load(&p.turn) != 0) vmt_park(0);
    out[i] = (double)(vmtb_now_ns() - t0);
  }
  vmt_thread_join(t, NULL);
  vmt_thread_release(t);
  report_handoff(o, "park/unpark round trip", out, p.rounds, 0);
  free(out);
}

int main(int argc, char **argv) {
  vmtb_options_t o;
  vmtb_parse_args(argc, argv, &o, NULL);
  cfg_t c = {.warmup = 200, .samples = 5000, .contended_warmup = 100, .contended_samples = 3000,
             .handoff_samples = 20000, .contended_budget_s = 30};
  if (o.quick) c = (cfg_t){.warmup = 20, .samples = 300, .contended_warmup = 20,
                            .contended_samples = 300, .handoff_samples = 1000,
                            .contended_budget_s = 5};
  if (o.longrun) c = (cfg_t){.warmup = 1000, .samples = 50000, .contended_warmup = 500,
                              .contended_samples = 30000, .handoff_samples = 200000,
                              .contended_budget_s = 120};
  if (!o.json) vmtb_describe_machine(stdout);
  /* The VM's threads are runtime threads: attach, so enters record what they would there. */
  vmt_thread_t *self;
  if (vmt_thread_attach(NULL, &self) != 0 || vmt_monitor_create(&monitor, "bench") != 0 ||
      vmt_sync_create(&sync_lock, "bench") != 0) {
    fprintf(stderr, "monitors: setup failed\n");
    return 1;
  }

  ratios_t q;
  uncontended(&o, &c, &q);
  contended(&o, &c, &q);

  vmtb_table_header(&o, "hand-offs: wait/notify (pthread: condition variable), park/unpark");
  double hp = handoff(&o, &c, false, "pthread_cond round trip", 0);
  double hm = handoff(&o, &c, true, "monitor wait/notify round trip", hp);
  q.handoff = hm / hp;
  park_handoff(&o, &c);

  vmtb_note(&o, "\nratios of medians:");
  vmtb_note(&o, "  uncontended monitor / pthread_mutex     %.3f   (goal <= 1.0)", q.uncontended);
  vmtb_note(&o, "  uncontended monitoring on / off         %.3f   (goal ~1.0)", q.monitoring);
  vmtb_note(&o, "  uncontended sync / pthread_mutex        %.3f", q.sync_uncontended);
  vmtb_note(&o, "  contended monitor / pthread_mutex       %.3f   (goal <= 1.0)", q.contended);
  vmtb_note(&o, "  contended monitoring on / off           %.3f", q.contended_monitoring);
  vmtb_note(&o, "  contended sync / pthread_mutex          %.3f", q.sync_contended);
  vmtb_note(&o, "  wait/notify hand-off monitor / pthread  %.3f", q.handoff);
  vmt_sync_destroy(sync_lock);
  vmt_monitor_destroy(monitor);
  vmt_thread_detach();
  return 0;
}
