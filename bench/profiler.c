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
 * overhead_<P>ms (P = 10, 4): a fixed amount of work (two threads running an interpreter-like
 * loop ten calls deep) timed in process CPU time (getrusage: the workers, the drainer, the
 * handlers), unprofiled and profiled, rounds interleaved (off, 10 ms, 4 ms, off, ...); each
 * sample is a profiled round's CPU in % of the mean of the unprofiled rounds around it
 * (150 ms of CPU per thread and round, 21 rounds; --quick: 100 ms, 7 rounds). The notes print
 * the median overhead and its spread, and beside it the profiler's own time as it measures it
 * (its handlers' and the drainer's, vmt_prof_stats_t), which a shared machine's noise does not
 * blur: the kernel's delivery of each signal (1.3-2.5 us here) is in the first only.
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
#include <stdatomic.h>
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

static void *worker(void *arg) {
  vm_t m = {.pc = 1};
  for (int i = 0; i < 16; i++) m.regs[i] = (uint64_t)i * 0x9e3779b97f4a7c15ull;
  interpret(&m, *(int64_t *)arg);
  VMTB_SINK(m.regs[3]);
  return NULL;
}

/* Process CPU time of `units` of work on two threads. */
static int64_t run_work(int64_t units) {
  vmt_thread_t *t[2];
  int64_t c0 = process_cpu_ns();
  for (int i = 0; i < 2; i++)
    if (vmt_thread_start(&t[i], worker, &units) != 0) abort();
  for (int i = 0; i < 2; i++) {
    vmt_thread_join(t[i], NULL);
    vmt_thread_release(t[i]);
  }
  return process_cpu_ns() - c0;
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
static void overhead(const vmtb_options_t *o) {
  int rounds = o->quick ? 7 : o->longrun ? 41 : 21;
  /* Calibrated: 150 ms of CPU per thread and round (100 ms with --quick). */
  vm_t m = {.pc = 1};
  int64_t c0 = thread_cpu_ns();
  interpret(&m, 200);
  VMTB_SINK(m.regs[0]);
  double unit_ns = (double)(thread_cpu_ns() - c0) / 200;
  int64_t units = (int64_t)((o->quick ? 100 : 150) * MS / unit_ns);
  run_work(units / 4);   /* warm-up */
  double *off = calloc((size_t)rounds + 1, sizeof(double));
  double *on10 = calloc((size_t)rounds, sizeof(double)), *on4 = calloc((size_t)rounds, sizeof(double));
  int64_t samples10 = 0, samples4 = 0, lost10 = 0, lost4 = 0;
  double self10 = 0, self4 = 0, work10 = 0, work4 = 0;   /* the profiler's own cost, ns */
  off[0] = (double)run_work(units);
  for (int r = 0; r < rounds; r++) {
    for (int k = 0; k < 2; k++) {
      int period_ms = k == 0 ? 10 : 4;
      vmt_prof_options_t po = {.flags = VMT_PROF_OPT_PERIOD, .period_ns = period_ms * MS};
      if (vmt_prof_start(&po) != 0) abort();
      double cpu = (double)run_work(units);
      vmt_prof_stop();
      vmt_prof_stats_t st;
      vmt_prof_get_stats(&st);
      int64_t lost = 0;
      for (int c = 0; c < VMT_PROF_LOST_COUNT; c++) lost += st.lost_samples[c];
      double self = (double)(st.handler_ns + st.drainer_cpu_ns);
      if (k == 0) {
        on10[r] = cpu;
        samples10 += st.samples;
        lost10 += lost;
        self10 += self;
        work10 += cpu;
      } else {
        on4[r] = cpu;
        samples4 += st.samples;
        lost4 += lost;
        self4 += self;
        work4 += cpu;
      }
      vmt_prof_clear();
    }
    off[r + 1] = (double)run_work(units);
  }
  /* Each profiled round against the unprofiled rounds on either side of it. */
  double *ratio10 = calloc((size_t)rounds, sizeof(double)), *ratio4 = calloc((size_t)rounds, sizeof(double));
  double off_sum = 0;
  for (int r = 0; r < rounds; r++) {
    double base = (off[r] + off[r + 1]) / 2;
    ratio10[r] = 100 * on10[r] / base;
    ratio4[r] = 100 * on4[r] / base;
    off_sum += off[r];
  }
  const char *names[2] = {"overhead_10ms", "overhead_4ms"};
  double *ratios[2] = {ratio10, ratio4};
  int64_t samples[2] = {samples10, samples4}, lost[2] = {lost10, lost4};
  double self_pct[2] = {100 * self10 / work10, 100 * self4 / work4};
  double per_sample_us[2] = {samples10 ? self10 / 1e3 / (double)samples10 : 0,
                             samples4 ? self4 / 1e3 / (double)samples4 : 0};
  for (int k = 0; k < 2; k++) {
    vmtb_result_t r = {.bench = "profiler", .variant = names[k], .unit = "% of off"};
    vmtb_stats(ratios[k], (size_t)rounds, &r);
    char extra[320];
    snprintf(extra, sizeof(extra),
             "\"rounds\":%d,\"cpu_ms_unprofiled\":%.1f,\"samples_per_round\":%.0f,"
             "\"lost\":%lld,\"self_cost_pct\":%.4f,\"self_us_per_sample\":%.2f",
             rounds, off_sum / rounds / 1e6, (double)samples[k] / rounds, (long long)lost[k],
             self_pct[k], per_sample_us[k]);
    vmtb_report(o, &r, extra);
    vmtb_note(o, "  %s: overhead median %+.3f%%, spread [%+.3f%% .. %+.3f%%] over %d rounds; "
                 "%.0f samples per round, %lld lost; the profiler's own time (handlers and "
                 "drainer) %.3f%% of the workload's CPU, %.2f us a sample",
              names[k], r.p50 - 100, r.min - 100, r.max - 100, rounds,
              (double)samples[k] / rounds, (long long)lost[k], self_pct[k], per_sample_us[k]);
  }
  free(off);
  free(on10);
  free(on4);
  free(ratio10);
  free(ratio4);
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
  vmtb_options_t o;
  vmtb_parse_args(argc, argv, &o, "       or: --profile-out PREFIX (writes PREFIX.{collapsed,svg,txt})");
  vmtb_describe_machine(o.json ? stderr : stdout);
  vmtb_table_header(&o, "profiler: weights against CPU time, overhead, arming");
  accuracy(&o, 4, 1500 * MS);
  accuracy(&o, 10, 2000 * MS);
  accuracy(&o, 20, 3400 * MS);
  overhead(&o);
  bias(&o);
  arm_many(&o);
  return 0;
}
