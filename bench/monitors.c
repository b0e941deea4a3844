/*
 * bench/monitors.c: what a vmthread monitor costs next to a bare pthread mutex, measured in the
 * same run (issue 5's "done when": uncontended enter/exit at most 1.3x pthread_mutex
 * lock/unlock at the median, and contention monitoring adding nothing measurable to it).
 *
 *   uncontended   one thread, enter+exit pairs in batches of BATCH; the variants (pthread
 *                 mutex, monitor with contention monitoring off, monitor with it on) are
 *                 interleaved batch by batch, so frequency changes and noise from other
 *                 processes hit all of them alike. A sample is one batch's time / BATCH.
 *   overhead      the same loop with an empty body: what the timer and the loop add per call.
 *   contended     two threads enter+exit the same lock as fast as they can (ns per pair, per
 *                 thread): the lock word, the spin and the futex path under real contention.
 *   hand-off      two threads pass the lock back and forth through wait/notify (pthread: a
 *                 condition variable): a sample is one round trip, two wake-ups.
 * Ratios printed at the end are of medians; --json writes the harness's schema.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/harness.h"
#include "vmthread.h"

#define BATCH 1000

typedef struct cfg {
  size_t warmup, samples, contended_samples, handoff_samples;
} cfg_t;

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static vmt_monitor_t *monitor;

static double batch_pthread(void) {
  int64_t t0 = vmtb_now_ns();
  for (int i = 0; i < BATCH; i++) {
    pthread_mutex_lock(&mutex);
    pthread_mutex_unlock(&mutex);
  }
  return (double)(vmtb_now_ns() - t0) / BATCH;
}

static double batch_monitor(void) {
  int64_t t0 = vmtb_now_ns();
  for (int i = 0; i < BATCH; i++) {
    vmt_monitor_enter(monitor);
    vmt_monitor_exit(monitor);
  }
  return (double)(vmtb_now_ns() - t0) / BATCH;
}

static double batch_empty(void) {
  int64_t t0 = vmtb_now_ns();
  for (int i = 0; i < BATCH; i++) VMTB_SINK(i);
  return (double)(vmtb_now_ns() - t0) / BATCH;
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

static void uncontended(const vmtb_options_t *o, const cfg_t *c, double *ratio_pthread,
                        double *ratio_monitoring) {
  double *sp = malloc(c->samples * sizeof(double));
  double *soff = malloc(c->samples * sizeof(double));
  double *son = malloc(c->samples * sizeof(double));
  double *sempty = malloc(c->samples * sizeof(double));
  if (!sp || !soff || !son || !sempty) abort();
  for (size_t i = 0; i < c->warmup; i++) {
    batch_pthread();
    batch_monitor();
  }
  for (size_t i = 0; i < c->samples; i++) {
    /* Rotate the order so that no variant always runs first after a toggle. */
    switch (i % 3) {
      case 0:
        sp[i] = batch_pthread();
        soff[i] = batch_monitor();
        vmt_mx_set_thread_contention_monitoring_enabled(true);
        son[i] = batch_monitor();
        vmt_mx_set_thread_contention_monitoring_enabled(false);
        break;
      case 1:
        vmt_mx_set_thread_contention_monitoring_enabled(true);
        son[i] = batch_monitor();
        vmt_mx_set_thread_contention_monitoring_enabled(false);
        sp[i] = batch_pthread();
        soff[i] = batch_monitor();
        break;
      default:
        soff[i] = batch_monitor();
        vmt_mx_set_thread_contention_monitoring_enabled(true);
        son[i] = batch_monitor();
        vmt_mx_set_thread_contention_monitoring_enabled(false);
        sp[i] = batch_pthread();
        break;
    }
    sempty[i] = batch_empty();
  }
  vmtb_table_header(o, "uncontended enter+exit, one thread (batches of 1000, interleaved)");
  vmtb_result_t rp, roff, ron, rempty;
  report(o, "monitors.uncontended", "pthread_mutex lock+unlock", sp, c->samples, &rp, NULL);
  char extra[160];
  /* Ratios need the baseline's median first: compute, then report with it. */
  vmtb_stats(soff, c->samples, &roff);
  snprintf(extra, sizeof(extra), "\"ratio_vs_pthread\":%.3f", roff.p50 / rp.p50);
  report(o, "monitors.uncontended", "monitor enter+exit", soff, c->samples, &roff, extra);
  vmtb_stats(son, c->samples, &ron);
  snprintf(extra, sizeof(extra), "\"ratio_vs_pthread\":%.3f,\"ratio_vs_monitoring_off\":%.3f",
           ron.p50 / rp.p50, ron.p50 / roff.p50);
  report(o, "monitors.uncontended", "monitor enter+exit, monitoring on", son, c->samples, &ron,
         extra);
  report(o, "monitors.uncontended", "measuring overhead (empty loop)", sempty, c->samples,
         &rempty, NULL);
  *ratio_pthread = roff.p50 / rp.p50;
  *ratio_monitoring = ron.p50 / roff.p50;
  vmtb_note(o,
            "uncontended p50: monitor %.2f ns, pthread %.2f ns, ratio %.3f (without the %.2f ns "
            "loop+timer overhead: %.3f); monitoring on/off %.3f",
            roff.p50, rp.p50, roff.p50 / rp.p50, rempty.p50,
            (roff.p50 - rempty.p50) / (rp.p50 - rempty.p50), ron.p50 / roff.p50);
  free(sp);
  free(soff);
  free(son);
  free(sempty);
}

/* ---- Contended: two threads on one lock --------------------------------------------------- */

typedef struct race {
  bool use_monitor;
  size_t samples;
  double *out;           /* this thread's per-batch samples */
  _Atomic int *ready;
} race_t;

static void *race_body(void *arg) {
  race_t *r = arg;
  atomic_fetch_add(r->ready, 1);
  while (atomic_load(r->ready) < 2) {
  }
  for (size_t i = 0; i < r->samples; i++)
    r->out[i] = r->use_monitor ? batch_monitor() : batch_pthread();
  return NULL;
}

static double contended(const vmtb_options_t *o, const cfg_t *c, bool use_monitor,
                        bool monitoring, const char *variant, const char *extra_base,
                        double baseline_p50) {
  vmt_mx_set_thread_contention_monitoring_enabled(monitoring);
  _Atomic int ready = 0;
  size_t n = c->contended_samples;
  double *s = malloc(2 * n * sizeof(double));
  if (!s) abort();
  race_t r[2] = {{use_monitor, n, s, &ready}, {use_monitor, n, s + n, &ready}};
  vmt_monitor_stats_t before, after;
  vmt_monitor_get_stats(monitor, &before);
  vmt_thread_t *t;
  if (vmt_thread_start(&t, race_body, &r[1]) != 0) abort();
  race_body(&r[0]);
  vmt_thread_join(t, NULL);
  vmt_thread_release(t);
  vmt_monitor_get_stats(monitor, &after);
  vmt_mx_set_thread_contention_monitoring_enabled(false);
  /* On a loaded 2-core machine the two threads may not overlap much: say how contended the
   * run really was (the monitor counts it; a pthread mutex cannot). */
  if (use_monitor)
    vmtb_note(o, "  %s: %.1f%% of enters were contended", variant,
              100.0 * (double)(after.contended_enters - before.contended_enters) /
                  (double)(after.enters - before.enters + (after.enters == before.enters)));
  vmtb_result_t res;
  char extra[128];
  extra[0] = '\0';
  if (baseline_p50 > 0) {
    vmtb_stats(s, 2 * n, &res);
    snprintf(extra, sizeof(extra), "\"%s\":%.3f", extra_base, res.p50 / baseline_p50);
  }
  report(o, "monitors.contended", variant, s, 2 * n, &res, extra[0] ? extra : NULL);
  free(s);
  return res.p50;
}

/* ---- Hand-off through wait/notify --------------------------------------------------------- */

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
  vmtb_result_t res;
  size_t skip = p.rounds / 10;   /* warm-up */
  char extra[64];
  extra[0] = '\0';
  vmtb_stats(p.out + skip, p.rounds - skip, &res);
  if (baseline_p50 > 0)
    snprintf(extra, sizeof(extra), "\"ratio_vs_pthread\":%.3f", res.p50 / baseline_p50);
  res.bench = "monitors.handoff";
  res.variant = variant;
  res.unit = "ns/round trip";
  vmtb_report(o, &res, extra[0] ? extra : NULL);
  pthread_cond_destroy(&p.cond);
  free(p.out);
  return res.p50;
}

int main(int argc, char **argv) {
  vmtb_options_t o;
  vmtb_parse_args(argc, argv, &o, NULL);
  cfg_t c = {.warmup = 200, .samples = 5000, .contended_samples = 3000, .handoff_samples = 20000};
  if (o.quick) c = (cfg_t){.warmup = 20, .samples = 300, .contended_samples = 300,
                            .handoff_samples = 1000};
  if (o.longrun) c = (cfg_t){.warmup = 1000, .samples = 50000, .contended_samples = 30000,
                              .handoff_samples = 200000};
  if (!o.json) vmtb_describe_machine(stdout);
  /* The VM's threads are runtime threads: attach, so enters record what they would there. */
  vmt_thread_t *self;
  if (vmt_thread_attach(NULL, &self) != 0 || vmt_monitor_create(&monitor, "bench") != 0) {
    fprintf(stderr, "monitors: setup failed\n");
    return 1;
  }

  double ratio_pthread, ratio_monitoring;
  uncontended(&o, &c, &ratio_pthread, &ratio_monitoring);

  vmtb_table_header(&o, "contended enter+exit, two threads on one lock (per thread)");
  double cp = contended(&o, &c, false, false, "pthread_mutex lock+unlock", NULL, 0);
  double cm = contended(&o, &c, true, false, "monitor enter+exit", "ratio_vs_pthread", cp);
  double con = contended(&o, &c, true, true, "monitor enter+exit, monitoring on",
                         "ratio_vs_monitoring_off", cm);

  vmtb_table_header(&o, "hand-off through wait/notify (pthread: condition variable)");
  double hp = handoff(&o, &c, false, "pthread_cond round trip", 0);
  double hm = handoff(&o, &c, true, "monitor wait/notify round trip", hp);

  vmtb_note(&o, "\nratios of medians:");
  vmtb_note(&o, "  uncontended monitor / pthread_mutex     %.3f   (goal <= 1.3)", ratio_pthread);
  vmtb_note(&o, "  uncontended monitoring on / off         %.3f   (goal ~1.0)", ratio_monitoring);
  vmtb_note(&o, "  contended monitor / pthread_mutex       %.3f", cm / cp);
  vmtb_note(&o, "  contended monitoring on / off           %.3f", con / cm);
  vmtb_note(&o, "  wait/notify hand-off monitor / pthread  %.3f", hm / hp);
  vmt_monitor_destroy(monitor);
  vmt_thread_detach();
  return 0;
}
