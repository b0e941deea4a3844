/*
 * bench/profiler.c: the CPU-time profiler (issue 18): how well its weights add up to each
 * thread's CPU time, what it costs a workload, how fast it arms 10,000 threads. Public API
 * only.
 *
 * accuracy_<P>ms (P = 4, 10, 20): two burner threads of 100 and 50 % duty cycle (burn, then
 * sleep the rest of each 10 ms) use C of CPU each under a profile of period P; per thread the
 * error is |weight * P - cpu| / cpu, cpu being the thread's own clock over the time it was
 * armed (read by the profiler at arm and at its end). The tail: the kernel checks CPU timers
 * at ticks (4 ms) that find the thread running, so the last expirations of an arming may be
 * unsignalled when the thread ends: one period and a tick on a CPU of its own, several when
 * threads share a CPU (30 ms of 2 s at 10 ms, with six bare-kernel burners on the two cores).
 * Hence 1.5 cores of burners, and C for 1 % with room: 1.5 s at 4 ms, 2.0 s at 10 ms, 3.4 s
 * at 20 ms, in --quick mode too (the 1 % needs it; about 15 s in all).
 * The rows' extra keys: samples per expected (cpu / P), the summed weights against the
 * process's CPU time over the run, lost samples by cause.
 *
 * overhead_<P>ms (P = 10, 4): two identical workers (an interpreter-like loop ten calls deep)
 * pinned to one CPU take one-tick turns, one of them profiled, the other left out
 * (vmt_prof_set_thread_excluded), roles swapped every round; a round is the profiled half's CPU
 * per unit of work, plus the drainer's and the start/stop's CPU, in % of its twin's (50 turns
 * of 4 ms a half; 21 rounds, 7 with --quick, 41 with --long; the section below says why). The
 * notes print the median, the spread (p10 .. p90, min .. max), the signals per expected one,
 * and beside it the profiler's own time as it measures it (its handlers' and the drainer's,
 * vmt_prof_stats_t), which leaves the kernel's part out. overhead_aa (neither twin profiled)
 * and overhead_4ms_injected (a walker that spins a known CPU time per sample) check the
 * method. --overhead-only runs these rows alone.
 * bias_signal, bias_cooperative: a thread in managed code spends half its CPU in a function
 * that never polls, half in one that polls; the row is the share of the weight on the first
 * one's stacks (its true share, about 50 %, is in an extra key): the cooperative mode's bias,
 * next to the signal mode.
 * arm_10000: 10,000 parked threads, the time vmt_prof_start takes to arm them all (and the
 * stop, in an extra key), over 3 start/stop rounds; beside it the process CPU the start used
 * (its two armers': the parked threads use none), which a loaded machine does not inflate as
 * it does the wall time (an armer waiting for a CPU, or the start for its helper).
 *
 * --profile-out PREFIX: instead, profiles a mix of the suite's own workloads (contended
 * monitors as //bench:monitors runs them, thread starts as //bench:thread_start, CPU-time
 * sweeps as //bench:management), each in its own category, and writes PREFIX.collapsed,
 * PREFIX.svg and PREFIX.txt (the picture in docs/profiler.md).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench/harness.h"
#include "vmthread.h"

#define MS (1000LL * 1000)

static int64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t process_cpu_ns(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000 +
         ((int64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000;
}

static void sleep_ns(int64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* ---- The work: an interpreter-like loop, ten calls deep ---------------------------------- */
typedef struct vm {
  uint64_t regs[16];
  uint32_t pc;
} vm_t;

#define OP(name, expr)                                                     \
  __attribute__((noinline)) static void op_##name(vm_t *m, uint32_t i) {   \
    uint64_t *r = m->regs;                                                 \
    expr;                                                                  \
    __asm__ volatile("" ::: "memory");                                     \
  }
OP(add, r[i & 15] += r[(i + 3) & 15] + i)
OP(mul, r[i & 15] = r[i & 15] * 6364136223846793005ull + 1442695040888963407ull)
OP(xor, r[(i + 7) & 15] ^= r[i & 15] >> 7)
OP(rot, r[i & 15] = (r[i & 15] << 13) | (r[i & 15] >> 51))

__attribute__((noinline)) static void dispatch(vm_t *m, uint32_t op) {
  switch (op & 3) {
    case 0: op_add(m, op); break;
    case 1: op_mul(m, op); break;
    case 2: op_xor(m, op); break;
    default: op_rot(m, op); break;
  }
}
__attribute__((noinline)) static void basic_block(vm_t *m) {
  for (uint32_t k = 0; k < 64; k++) dispatch(m, m->pc++ * 2654435761u >> 7);
}
__attribute__((noinline)) static void method_inner(vm_t *m) {
  for (int k = 0; k < 8; k++) basic_block(m);
}
__attribute__((noinline)) static void method_outer(vm_t *m) {
  for (int k = 0; k < 4; k++) method_inner(m);
}
__attribute__((noinline)) static void interpret(vm_t *m, int64_t units) {
  for (int64_t u = 0; u < units; u++) method_outer(m);
}

/* ---- accuracy --------------------------------------------------------------------------- */
typedef struct burner {
  int duty;
  int64_t target_ns;
  _Atomic int64_t own_ns;
  vmt_thread_t *t;
} burner_t;

static _Atomic bool burners_go;

static void *burner_body(void *arg) {
  burner_t *b = arg;
  while (!atomic_load(&burners_go)) sleep_ns(MS / 10);
  vm_t m = {.pc = 7};
  int64_t c0 = thread_cpu_ns(), slice = 10 * MS * b->duty / 100;
  while (thread_cpu_ns() - c0 < b->target_ns) {
    int64_t s0 = thread_cpu_ns();
    while (thread_cpu_ns() - s0 < slice) interpret(&m, 4);
    if (b->duty < 100) sleep_ns(10 * MS - slice);
  }
  VMTB_SINK(m.regs[1]);
  atomic_store(&b->own_ns, thread_cpu_ns() - c0);
  return NULL;
}

static const char *cause_key[VMT_PROF_LOST_COUNT] = {"lost_full", "lost_unsafe",
                                                     "lost_walk_failed", "lost_disarmed"};

static void accuracy(const vmtb_options_t *o, int period_ms, int64_t target_ns) {
  enum { N = 2 };
  /* 1.5 cores of the 2: the burners do not take each other's ticks (see the tail above). */
  static const int duty[N] = {100, 50};
  burner_t b[N];
  atomic_store(&burners_go, false);
  for (int i = 0; i < N; i++) {
    b[i] = (burner_t){.duty = duty[i], .target_ns = target_ns};
    atomic_store(&b[i].own_ns, 0);
    if (vmt_thread_start(&b[i].t, burner_body, &b[i]) != 0) abort();
  }
  vmt_prof_options_t po = {.flags = VMT_PROF_OPT_PERIOD, .period_ns = period_ms * MS};
  if (vmt_prof_start(&po) != 0) abort();
  int64_t p0 = process_cpu_ns();
  atomic_store(&burners_go, true);
  for (int i = 0; i < N; i++) {
    vmt_thread_join(b[i].t, NULL);
  }
  vmt_prof_stop();
  int64_t process = process_cpu_ns() - p0;
  double err[N];
  int64_t samples = 0, weight = 0, cpu = 0;
  for (int i = 0; i < N; i++) {
    vmt_prof_thread_stats_t ts;
    if (vmt_prof_get_thread_stats(vmt_thread_id(b[i].t), &ts) != 0) abort();
    double sampled = (double)ts.weight * (double)po.period_ns;
    err[i] = ts.cpu_ns > 0 ? 100.0 * __builtin_fabs(sampled - (double)ts.cpu_ns) / (double)ts.cpu_ns
                           : 100.0;
    samples += ts.samples;
    weight += ts.weight;
    cpu += ts.cpu_ns;
    vmtb_note(o, "  %d ms, duty %3d%%: thread cpu %.1f ms (own clock %.1f), %lld samples, weight "
                 "%lld = %.1f ms, error %.3f%%, unsignalled %lld",
              period_ms, duty[i], (double)ts.cpu_ns / 1e6, (double)atomic_load(&b[i].own_ns) / 1e6,
              (long long)ts.samples, (long long)ts.weight, sampled / 1e6, err[i],
              (long long)ts.unsignalled);
    vmt_thread_release(b[i].t);
  }
  vmt_prof_stats_t st;
  vmt_prof_get_stats(&st);
  char variant[32], extra[512];
  snprintf(variant, sizeof(variant), "accuracy_%dms", period_ms);
  int n = snprintf(extra, sizeof(extra),
                   "\"period_ms\":%d,\"cpu_s_per_thread\":%.2f,\"samples_per_expected\":%.4f,"
                   "\"weight_per_thread_cpu\":%.4f,\"weight_per_process_cpu\":%.4f,"
                   "\"prof_samples\":%lld,\"prof_weight\":%lld,\"unsignalled\":%lld,"
                   "\"unwinder\":\"%s\"",
                   period_ms, (double)target_ns / 1e9,
                   (double)samples / ((double)cpu / (double)po.period_ns),
                   (double)weight * (double)po.period_ns / (double)cpu,
                   (double)st.weight * (double)po.period_ns / (double)process,
                   (long long)samples, (long long)weight, (long long)st.unsignalled,
                   st.unwinder);
  int64_t lost = 0;
  for (int c = 0; c < VMT_PROF_LOST_COUNT; c++) {
    n += snprintf(extra + n, sizeof(extra) - (size_t)n, ",\"%s\":%lld", cause_key[c],
                  (long long)st.lost_samples[c]);
    lost += st.lost_samples[c];
  }
  n += snprintf(extra + n, sizeof(extra) - (size_t)n, ",\"lost\":%lld", (long long)lost);
  vmtb_note(o, "  %d ms: lost samples: buffer_full %lld, unsafe %lld, walk_failed %lld, "
               "disarmed %lld",
            period_ms, (long long)st.lost_samples[0], (long long)st.lost_samples[1],
            (long long)st.lost_samples[2], (long long)st.lost_samples[3]);
  vmtb_result_t r = {.bench = "profiler", .variant = variant, .unit = "%"};
  vmtb_stats(err, N, &r);
  vmtb_report(o, &r, extra);
  vmt_prof_clear();
}

/* ---- overhead --------------------------------------------------------------------------- */
/* Two identical workers take turns on one CPU, a burst each (A, B, A, B, ...), and one of
 * them is profiled: the two halves of a round share the machine's moment to within a burst
 * (4 ms), which a round against the rounds before and after it does not (those spread -17 % ..
 * +44 % here). A burst lasts one tick and ends just after one (a thread sees the
 * tick as the step of CLOCK_MONOTONIC_COARSE): the kernel checks a thread's CPU timers at the
 * ticks that find it running, and a thread whose turns began and ended at random moments
 * would see them irregularly, and fewer signals than a thread alone on its CPU (scheduler
 * slices: 0.61 per expected one at 4 ms; 20 ms turns: 0.93; aligned one-tick turns: 0.96),
 * leaving part of the cost out. So each half does
 * what work fits in its bursts, and a round compares CPU per unit of work. Each worker reads
 * its own CPU clock over the whole round (its bursts, its waits for its turn, the handlers and
 * the kernel's signal work on it); the profiled half also pays for the drainer's CPU and the
 * starting thread's start and stop. */
typedef struct pair {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int round, turn, done;           /* under lock */
  bool quit;
  int bursts, burst_ticks;
  int cpu;                         /* both workers' CPU, or -1 (not pinned) */
  int64_t cpu_ns[2];               /* each worker's CPU over the round, its own clock */
  int64_t units[2];                /* the work each did (calls of interpret(m, 1)) */
  int64_t align_ns[2];             /* CPU before the measure: its wait for a first tick */
} pair_t;

typedef struct pair_worker {
  pair_t *p;
  int me;
} pair_worker_t;

static int64_t coarse_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Works until the coarse clock (the tick) has stepped `ticks` times: from just after a tick
 * to just after another. Returns the units done. */
static int64_t work_ticks(vm_t *m, int ticks) {
  int64_t units = 0, last = coarse_ns();
  for (int seen = 0; seen < ticks;) {
    interpret(m, 1);
    units++;
    int64_t now = coarse_ns();
    if (now != last) seen++, last = now;
  }
  return units;
}

static void *pair_body(void *arg) {
  pair_worker_t *w = arg;
  pair_t *p = w->p;
  if (p->cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(p->cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) abort();
  }
  vm_t m = {.pc = 1};
  for (int i = 0; i < 16; i++) m.regs[i] = (uint64_t)i * 0x9e3779b97f4a7c15ull;
  int seen = 0;
  pthread_mutex_lock(&p->lock);
  for (;;) {
    while (p->round == seen && !p->quit) pthread_cond_wait(&p->cond, &p->lock);
    if (p->quit) break;
    seen = p->round;
    pthread_mutex_unlock(&p->lock);
    int64_t c0 = 0, units = 0, align = thread_cpu_ns();
    for (int b = 0; b < p->bursts; b++) {
      pthread_mutex_lock(&p->lock);
      while (p->turn != w->me) pthread_cond_wait(&p->cond, &p->lock);
      pthread_mutex_unlock(&p->lock);
      if (b == 0) {
        /* Every burst begins just after a tick, the first too; the measure begins there. */
        work_ticks(&m, 1);
        c0 = thread_cpu_ns();
        align = c0 - align;
      }
      units += work_ticks(&m, p->burst_ticks);
      pthread_mutex_lock(&p->lock);
      p->turn = 1 - w->me;
      pthread_cond_broadcast(&p->cond);
      pthread_mutex_unlock(&p->lock);
    }
    int64_t c1 = thread_cpu_ns();
    pthread_mutex_lock(&p->lock);
    p->cpu_ns[w->me] = c1 - c0;
    p->align_ns[w->me] = align;
    p->units[w->me] = units;
    p->done++;
    pthread_cond_broadcast(&p->cond);
  }
  pthread_mutex_unlock(&p->lock);
  VMTB_SINK(m.regs[3]);
  return NULL;
}

/* The validation's known cost: the walker spins this long on the sampled thread's CPU clock,
 * then lets the native unwinder take the frames as without it. */
static int64_t inject_ns;
static int inject_walker(vmt_thread_t *t, const void *uc, uintptr_t *frames, int32_t max,
                         void *ctx) {
  (void)t, (void)uc, (void)frames, (void)max, (void)ctx;
  int64_t c0 = thread_cpu_ns();
  while (thread_cpu_ns() - c0 < inject_ns) {
  }
  return 0;
}

enum { OVH_AA, OVH_10, OVH_4, OVH_INJECT, OVH_KINDS };
static const char *const ovh_name[OVH_KINDS] = {"overhead_aa", "overhead_10ms", "overhead_4ms",
                                                "overhead_4ms_injected"};
static const int ovh_period_ms[OVH_KINDS] = {0, 10, 4, 4};

typedef struct ovh_sums {
  double *ratio;                   /* per round: profiled half in % of the other */
  double work_ns, prof_ns, extra_ns, self_ns, unaccounted_ns;
  int64_t samples, weight, lost;
} ovh_sums_t;

/* One round of kind k: the worker `profiled` is profiled (none for OVH_AA), `first` has the
 * first burst. */
static void ovh_round(pair_t *p, int k, int profiled, int first, ovh_sums_t *s, int r) {
  int64_t p0 = process_cpu_ns(), m0 = thread_cpu_ns();
  if (ovh_period_ms[k]) {
    vmt_prof_options_t po = {.flags = VMT_PROF_OPT_PERIOD, .period_ns = ovh_period_ms[k] * MS};
    if (vmt_prof_start(&po) != 0) abort();
  }
  int64_t m1 = thread_cpu_ns();
  pthread_mutex_lock(&p->lock);
  p->done = 0;
  p->turn = first;
  p->round++;
  pthread_cond_broadcast(&p->cond);
  while (p->done < 2) pthread_cond_wait(&p->cond, &p->lock);
  pthread_mutex_unlock(&p->lock);
  int64_t m2 = thread_cpu_ns();
  vmt_prof_stats_t st = {0};
  if (ovh_period_ms[k]) {
    vmt_prof_stop();
    vmt_prof_get_stats(&st);
    vmt_prof_clear();
  }
  int64_t m3 = thread_cpu_ns(), p1 = process_cpu_ns();
  /* What the profile cost outside the workers: the drainer, the start and the stop. */
  double extra = (double)(st.drainer_cpu_ns + (m1 - m0) + (m3 - m2));
  int other = 1 - profiled;
  /* The profiled half's work at the unprofiled half's CPU per unit: the same work unprofiled,
   * at the same moment. */
  double base = (double)p->units[profiled] * (double)p->cpu_ns[other] / (double)p->units[other];
  s->ratio[r] = 100 * ((double)p->cpu_ns[profiled] + extra) / base;
  s->work_ns += base;
  s->prof_ns += (double)p->cpu_ns[profiled];
  s->extra_ns += extra;
  s->self_ns += (double)(st.handler_ns + st.drainer_cpu_ns);
  /* The process's CPU that none of the above explains: the main thread's waiting, and what
   * the profiler would spend elsewhere. */
  s->unaccounted_ns += (double)(p1 - p0) - (double)(p->cpu_ns[0] + p->cpu_ns[1]) -
                       (double)(p->align_ns[0] + p->align_ns[1]) -
                       (double)st.drainer_cpu_ns - (double)(m3 - m0);
  s->samples += st.samples;
  s->weight += st.weight;
  for (int c = 0; c < VMT_PROF_LOST_COUNT; c++) s->lost += st.lost_samples[c];
}

static double sorted_rank(const double *sorted, int n, double pct) {
  return sorted[(int)((n - 1) * pct / 100 + 0.5)];
}

static void overhead(const vmtb_options_t *o) {
  /* 50 bursts of one tick (4 ms) a half and round: 200 ms of CPU each on a free CPU. */
  enum { BURSTS = 50, BURST_TICKS = 1 };
  int rounds = o->quick ? 7 : o->longrun ? 41 : 21;
  pair_t p = {.bursts = BURSTS, .burst_ticks = BURST_TICKS, .cpu = sched_getcpu()};
  pthread_mutex_init(&p.lock, NULL);
  pthread_cond_init(&p.cond, NULL);
  pair_worker_t w[2] = {{&p, 0}, {&p, 1}};
  vmt_thread_t *t[2];
  for (int i = 0; i < 2; i++)
    if (vmt_thread_start(&t[i], pair_body, &w[i]) != 0) abort();
  /* 100 us a sample, 2.5 % at 4 ms: a known cost well above a loaded machine's noise */
  inject_ns = 100 * 1000;
  ovh_sums_t s[OVH_KINDS];
  memset(s, 0, sizeof(s));
  for (int k = 0; k < OVH_KINDS; k++) s[k].ratio = calloc((size_t)rounds + 1, sizeof(double));
  ovh_round(&p, OVH_AA, 0, 0, &s[OVH_AA], rounds);   /* warm-up: the last slot, dropped */
  memset(&s[OVH_AA].work_ns, 0, sizeof(s[OVH_AA]) - offsetof(ovh_sums_t, work_ns));
  for (int r = 0; r < rounds; r++) {
    for (int k = 0; k < OVH_KINDS; k++) {
      /* Each worker profiled and each first in half the rounds. */
      int profiled = (r + k) % 2, first = (r / 2 + k) % 2;
      vmt_prof_set_thread_excluded(t[profiled], false);
      vmt_prof_set_thread_excluded(t[1 - profiled], true);
      vmt_prof_set_walker(k == OVH_INJECT ? inject_walker : NULL, NULL, NULL);
      ovh_round(&p, k, profiled, first, &s[k], r);
    }
  }
  vmt_prof_set_walker(NULL, NULL, NULL);
  pthread_mutex_lock(&p.lock);
  p.quit = true;
  pthread_cond_broadcast(&p.cond);
  pthread_mutex_unlock(&p.lock);
  for (int i = 0; i < 2; i++) {
    vmt_thread_join(t[i], NULL);
    vmt_thread_release(t[i]);
  }
  double p50[OVH_KINDS];
  for (int k = 0; k < OVH_KINDS; k++) {
    ovh_sums_t *x = &s[k];
    vmtb_result_t r = {.bench = "profiler", .variant = ovh_name[k], .unit = "% of off"};
    vmtb_stats(x->ratio, (size_t)rounds, &r);
    p50[k] = r.p50;
    double p10 = sorted_rank(x->ratio, rounds, 10);
    double self_pct = 100 * x->self_ns / x->work_ns;
    double per_sample_us = x->samples ? x->self_ns / 1e3 / (double)x->samples : 0;
    double expected = ovh_period_ms[k] ? x->prof_ns / (double)(ovh_period_ms[k] * MS) : 0;
    char extra[640];
    int n = snprintf(extra, sizeof(extra),
                     "\"rounds\":%d,\"bursts\":%d,\"burst_ticks\":%d,\"cpu\":%d,"
                     "\"cpu_ms_unprofiled\":%.1f,\"p10\":%.3f,\"samples_per_round\":%.1f,"
                     "\"samples_per_expected\":%.3f,\"weight_per_expected\":%.3f,\"lost\":%lld,"
                     "\"self_cost_pct\":%.4f,\"self_us_per_sample\":%.2f,"
                     "\"outside_workers_pct\":%.4f,\"unaccounted_pct\":%.4f",
                     rounds, BURSTS, BURST_TICKS, p.cpu, x->work_ns / rounds / 1e6,
                     p10, (double)x->samples / rounds,
                     expected > 0 ? (double)x->samples / expected : 0,
                     expected > 0 ? (double)x->weight / expected : 0, (long long)x->lost,
                     self_pct, per_sample_us, 100 * x->extra_ns / x->work_ns,
                     100 * x->unaccounted_ns / x->work_ns);
    double expected_added = 0;
    if (k == OVH_INJECT) {
      expected_added = 100 * (double)x->samples * (double)inject_ns / x->work_ns;
      snprintf(extra + n, sizeof(extra) - (size_t)n,
               ",\"injected_us\":%.1f,\"expected_added_pct\":%.3f,\"measured_added_pct\":%.3f",
               (double)inject_ns / 1e3, expected_added, r.p50 - p50[OVH_4]);
    }
    vmtb_report(o, &r, extra);
    vmtb_note(o, "  %s: median %+.3f%% (p10 .. p90 %+.3f%% .. %+.3f%%, min .. max %+.3f%% .. "
                 "%+.3f%%) over %d rounds of %.0f ms a half; %.1f samples a round (%.2f per "
                 "expected), %lld lost; the profiler's own time %.3f%% (%.2f us a sample); "
                 "outside the workers %.3f%%, unaccounted %+.3f%%",
              ovh_name[k], r.p50 - 100, p10 - 100, r.p90 - 100, r.min - 100, r.max - 100, rounds,
              x->work_ns / rounds / 1e6, (double)x->samples / rounds,
              expected > 0 ? (double)x->samples / expected : 0, (long long)x->lost, self_pct,
              per_sample_us, 100 * x->extra_ns / x->work_ns, 100 * x->unaccounted_ns / x->work_ns);
    if (k == OVH_INJECT)
      vmtb_note(o, "  %s: %.0f us injected a sample: expected %+.3f%% over overhead_4ms, "
                   "measured %+.3f%%",
                ovh_name[k], (double)inject_ns / 1e3, expected_added, r.p50 - p50[OVH_4]);
    free(x->ratio);
  }
  pthread_mutex_destroy(&p.lock);
  pthread_cond_destroy(&p.cond);
}

/* ---- the cooperative mode's bias ------------------------------------------------------- */
/* A thread in managed code (the VM services' MANAGED state) spends about half its CPU in a
 * function that never polls and half in one that polls every ~2 us (its own clock says how
 * much exactly: true_share_pct). The share of the weight on the first function's stacks is
 * the measure: the signal mode sees the truth; the cooperative mode moves it to the next poll
 * site. */
__attribute__((noinline)) static void bias_no_poll(vm_t *m, int64_t ns) {
  int64_t c0 = thread_cpu_ns();
  while (thread_cpu_ns() - c0 < ns) interpret(m, 1);
}
__attribute__((noinline)) static void bias_polls(vmt_thread_t *self, vm_t *m, int64_t ns) {
  int64_t c0 = thread_cpu_ns();
  while (thread_cpu_ns() - c0 < ns) {
    basic_block(m);
    vmt_poll(self);
  }
}
static void *bias_body(void *arg) {
  int64_t total = *(int64_t *)arg;
  vmt_thread_t *self = vmt_thread_current();
  vm_t m = {.pc = 5};
  vmt_exec_enter(VMT_EXEC_MANAGED);
  int64_t c0 = thread_cpu_ns(), spent[2] = {0, 0};
  uint64_t seed = 88172645463325252ull;
  while (thread_cpu_ns() - c0 < total) {
    /* Phases of 0.5 to 3.5 ms, drawn at random: a fixed length would beat with the 4 ms tick
     * the kernel samples at (2 ms phases gave 40 % or 65 % instead of 50). */
    int64_t len[2];
    for (int k = 0; k < 2; k++) {
      seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
      len[k] = MS / 2 + (int64_t)(seed % (3 * MS));
    }
    int64_t a = thread_cpu_ns();
    bias_no_poll(&m, len[0]);
    int64_t b = thread_cpu_ns();
    bias_polls(self, &m, len[1]);
    spent[0] += b - a;
    spent[1] += thread_cpu_ns() - b;
  }
  *(double *)arg = 100.0 * (double)spent[0] / (double)(spent[0] + spent[1]);
  vmt_exec_enter(VMT_EXEC_NATIVE);
  VMTB_SINK(m.regs[4]);
  return NULL;
}

static void bias(const vmtb_options_t *o) {
  const char *names[2] = {"bias_signal", "bias_cooperative"};
  for (int k = 0; k < 2; k++) {
    vmt_prof_options_t po = {.flags = VMT_PROF_OPT_PERIOD | VMT_PROF_OPT_MODE,
                             .period_ns = 4 * MS,
                             .mode = k ? VMT_PROF_MODE_COOPERATIVE : VMT_PROF_MODE_SIGNAL};
    if (vmt_prof_start(&po) != 0) abort();
    vmt_thread_t *t;
    union {
      int64_t total;
      double true_share;   /* the body's answer: its own clock's share of the first function */
    } io = {.total = (o->quick ? 500 : 1500) * MS};
    if (vmt_thread_start(&t, bias_body, &io) != 0) abort();
    vmt_thread_join(t, NULL);
    vmt_prof_stop();
    char *text;
    size_t len;
    if (vmt_prof_collapsed_to_string(VMT_PROF_OUT_THREADS, &text, &len) != 0) abort();
    char root[48];
    snprintf(root, sizeof(root), "[%lld];", (long long)vmt_thread_id(t));
    int64_t all = 0, no_poll = 0, at_poll = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
      if (strstr(line, root) == NULL) continue;
      int64_t w = strtoll(strrchr(line, ' ') + 1, NULL, 10);
      all += w;
      if (strstr(line, "bias_no_poll")) no_poll += w;
      /* vmt_poll_slow tail-calls the slow move at -O2: its frame may be gone. */
      if (strstr(line, "vmt_poll_slow") || strstr(line, "vmt__exec_move_slow")) at_poll += w;
    }
    free(text);
    vmt_prof_thread_stats_t ts;
    vmt_prof_get_thread_stats(vmt_thread_id(t), &ts);
    vmt_thread_release(t);
    double share = all ? 100.0 * (double)no_poll / (double)all : 0;
    double poll_share = all ? 100.0 * (double)at_poll / (double)all : 0;
    vmtb_result_t r = {.bench = "profiler", .variant = names[k], .unit = "%"};
    double v = share;
    vmtb_stats(&v, 1, &r);
    char extra[200];
    snprintf(extra, sizeof(extra),
             "\"true_share_pct\":%.1f,\"at_poll_pct\":%.1f,\"weight\":%lld,"
             "\"lost_unsafe\":%lld", io.true_share, poll_share, (long long)all,
             (long long)ts.lost_weight[VMT_PROF_LOST_UNSAFE]);
    vmtb_report(o, &r, extra);
    vmtb_note(o, "  %s: %.1f%% of the weight on the non-polling function's stacks (it used "
                 "%.1f%% of the CPU), %.1f%% taken at a poll, weight %lld",
              names[k], share, io.true_share, poll_share, (long long)all);
    vmt_prof_clear();
  }
}

/* ---- arming 10,000 threads -------------------------------------------------------------- */
/* Parked on a plain condition variable: the runtime under test is not what holds them. */
static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cond = PTHREAD_COND_INITIALIZER;
static bool parked_release;

static void set_parked_release(bool v) {
  pthread_mutex_lock(&park_lock);
  parked_release = v;
  pthread_cond_broadcast(&park_cond);
  pthread_mutex_unlock(&park_lock);
}

static void *parked(void *arg) {
  (void)arg;
  pthread_mutex_lock(&park_lock);
  while (!parked_release) pthread_cond_wait(&park_cond, &park_lock);
  pthread_mutex_unlock(&park_lock);
  return NULL;
}

static void arm_many(const vmtb_options_t *o) {
  int threads = 10000, rounds = 3;
  vmt_thread_t **t = calloc((size_t)threads, sizeof(*t));
  vmt_thread_options_t to = {.flags = VMT_THREAD_OPT_STACK_SIZE, .stack_size = 64 * 1024};
  set_parked_release(false);
  int started = 0;
  for (; started < threads; started++)
    if (vmt_thread_start_ex(&t[started], &to, parked, NULL) != 0) break;
  double arm_ms[3], arm_cpu_ms[3], stop_ms_sum = 0;
  int64_t armed = 0, failures = 0;
  for (int r = 0; r < rounds; r++) {
    int64_t c0 = process_cpu_ns();
    int64_t t0 = vmtb_now_ns();
    if (vmt_prof_start(NULL) != 0) abort();
    int64_t t1 = vmtb_now_ns();
    arm_cpu_ms[r] = (double)(process_cpu_ns() - c0) / 1e6;
    vmt_prof_stats_t st;
    vmt_prof_get_stats(&st);
    int64_t t2 = vmtb_now_ns();
    vmt_prof_stop();
    int64_t t3 = vmtb_now_ns();
    arm_ms[r] = (double)(t1 - t0) / 1e6;
    stop_ms_sum += (double)(t3 - t2) / 1e6;
    armed = st.threads_at_start;
    failures = st.arm_failures;
    vmt_prof_clear();
  }
  set_parked_release(true);
  for (int i = 0; i < started; i++) {
    vmt_thread_join(t[i], NULL);
    vmt_thread_release(t[i]);
  }
  free(t);
  vmtb_result_t cpu = {.bench = "profiler", .variant = "arm_10000_cpu", .unit = "ms"};
  vmtb_stats(arm_cpu_ms, (size_t)rounds, &cpu);
  vmtb_result_t r = {.bench = "profiler", .variant = "arm_10000", .unit = "ms"};
  vmtb_stats(arm_ms, (size_t)rounds, &r);
  char extra[200];
  snprintf(extra, sizeof(extra),
           "\"threads\":%d,\"armed\":%lld,\"arm_failures\":%lld,\"stop_ms\":%.2f,"
           "\"cpu_ms\":%.2f",
           started, (long long)armed, (long long)failures, stop_ms_sum / rounds, cpu.p50);
  vmtb_report(o, &r, extra);
  vmtb_note(o, "  %d threads: start (arming every one) p50 %.2f ms (process CPU %.2f ms), stop "
               "%.2f ms, %lld armed, %lld arm failures",
            started, r.p50, cpu.p50, stop_ms_sum / rounds, (long long)armed, (long long)failures);
}

/* ---- --profile-out: the suite's own workloads under the profiler ------------------------- */
static vmt_monitor_t *shared_monitor;
static _Atomic bool mix_stop;

static void *monitor_worker(void *arg) {
  (void)arg;
  uint64_t n = 0;
  while (!atomic_load_explicit(&mix_stop, memory_order_relaxed)) {
    vmt_monitor_enter(shared_monitor);
    n++;
    vmt_monitor_exit(shared_monitor);
  }
  VMTB_SINK(n);
  return NULL;
}

static void *empty(void *arg) { return arg; }

static void *starter(void *arg) {
  (void)arg;
  while (!atomic_load_explicit(&mix_stop, memory_order_relaxed)) {
    vmt_thread_t *t;
    if (vmt_thread_start(&t, empty, NULL) == 0) {
      vmt_thread_join(t, NULL);
      vmt_thread_release(t);
    }
  }
  return NULL;
}

static void *sweeper(void *arg) {
  (void)arg;
  while (!atomic_load_explicit(&mix_stop, memory_order_relaxed)) {
    int64_t *ids;
    size_t n;
    if (vmt_mx_get_all_thread_ids(&ids, &n) != 0) continue;
    int64_t *cpu = malloc((n ? n : 1) * sizeof(*cpu));
    vmt_mx_get_thread_cpu_time_array(ids, n, cpu);
    free(cpu);
    vmt_mx_ids_free(ids);
  }
  return NULL;
}

static void *interpreter(void *arg) {
  (void)arg;
  vm_t m = {.pc = 3};
  while (!atomic_load_explicit(&mix_stop, memory_order_relaxed)) interpret(&m, 8);
  VMTB_SINK(m.regs[2]);
  return NULL;
}

static int profile_out(const char *prefix) {
  struct {
    const char *category, *name;
    vmt_thread_fn fn;
  } mix[] = {
      {"monitors", "contender-1", monitor_worker}, {"monitors", "contender-2", monitor_worker},
      {"thread_start", "starter", starter},        {"management", "cpu-sweeper", sweeper},
      {"app", "interpreter", interpreter},
  };
  enum { M = sizeof(mix) / sizeof(mix[0]) };
  vmt_monitor_create(&shared_monitor, "bench");
  vmt_thread_t *idle[100];
  set_parked_release(false);
  for (int i = 0; i < 100; i++) vmt_thread_start(&idle[i], parked, NULL);
  vmt_prof_options_t po = {.flags = VMT_PROF_OPT_PERIOD, .period_ns = 4 * MS};
  int rc = vmt_prof_start(&po);
  if (rc) return rc;
  vmt_thread_t *t[M];
  atomic_store(&mix_stop, false);
  for (int i = 0; i < M; i++) {
    vmt_thread_options_t to = {.flags = VMT_THREAD_OPT_NAME | VMT_THREAD_OPT_CATEGORY,
                               .name = mix[i].name, .category = mix[i].category};
    vmt_thread_start_ex(&t[i], &to, mix[i].fn, NULL);
  }
  sleep_ns(4000 * MS);
  atomic_store(&mix_stop, true);
  for (int i = 0; i < M; i++) {
    vmt_thread_join(t[i], NULL);
    vmt_thread_release(t[i]);
  }
  vmt_prof_stop();
  set_parked_release(true);
  for (int i = 0; i < 100; i++) {
    vmt_thread_join(idle[i], NULL);
    vmt_thread_release(idle[i]);
  }
  char path[4096];
  snprintf(path, sizeof(path), "%s.collapsed", prefix);
  FILE *f = fopen(path, "w");
  if (!f) return -errno;
  rc = vmt_prof_write_collapsed(f, VMT_PROF_OUT_CATEGORIES | VMT_PROF_OUT_THREADS);
  fclose(f);
  snprintf(path, sizeof(path), "%s.svg", prefix);
  f = fopen(path, "w");
  if (!f) return -errno;
  if (rc == 0)
    rc = vmt_prof_write_flamegraph(f, "vmthread's own workloads: contended monitors, thread "
                                      "starts, CPU-time sweeps, an interpreter loop (4 ms)",
                                   VMT_PROF_OUT_CATEGORIES | VMT_PROF_OUT_THREADS);
  fclose(f);
  snprintf(path, sizeof(path), "%s.txt", prefix);
  f = fopen(path, "w");
  if (!f) return -errno;
  if (rc == 0) rc = vmt_prof_write_table(f);
  fclose(f);
  return rc;
}

int main(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--profile-out") == 0) {
      int rc = profile_out(argv[i + 1]);
      if (rc) fprintf(stderr, "profile: %s\n", strerror(-rc));
      return rc ? 1 : 0;
    }
  /* --overhead-only: the overhead rows alone (the method's A/A and injected-cost checks). */
  bool overhead_only = false;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--overhead-only") == 0) {
      overhead_only = true;
      memmove(&argv[i], &argv[i + 1], (size_t)(argc - i) * sizeof(char *));
      argc--;
      break;
    }
  vmtb_options_t o;
  vmtb_parse_args(argc, argv, &o,
                  "       or: [--json] [--quick|--long] --overhead-only (the overhead rows alone)\n"
                  "       or: --profile-out PREFIX (writes PREFIX.{collapsed,svg,txt})");
  vmtb_describe_machine(o.json ? stderr : stdout);
  vmtb_table_header(&o, "profiler: weights against CPU time, overhead, arming");
  if (overhead_only) {
    overhead(&o);
    return 0;
  }
  accuracy(&o, 4, 1500 * MS);
  accuracy(&o, 10, 2000 * MS);
  accuracy(&o, 20, 3400 * MS);
  overhead(&o);
  bias(&o);
  arm_many(&o);
  return 0;
}
