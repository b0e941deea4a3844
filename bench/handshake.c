/*
 * bench/handshake.c: the C floors under issue #14's VM-service latencies, and the table the
 * vmthread rows join. bench/java/VmServicesBench.java measures HotSpot's side of the same
 * questions (hotspot_stack_trace, hotspot_suspend, hotspot_safepoint) with the same targets
 * and configurations.
 *
 * bench "handshake", unit us: one request from the main thread to one target thread that is
 * running (spinning in a loop with a poll check), parked (vmt_park) or in native (read(2) on a
 * pipe that gets no data), with idle_threads = 0, 1,000, 10,000 parked runtime threads (10,000
 * not in --quick) and running_threads = 0 (1 and 2 with --long, at 0 idle threads) spinning
 * threads besides the requester and the target. Every row carries both keys.
 *
 *   poll_round_trip   running target: the requester stores a request into the target's poll
 *                     word; the target's loop sees it at its next check and stores an ack; the
 *                     requester spins until it sees the ack (yielding after 1000 checks, for
 *                     the running_threads rows). Two cache-line transfers: the floor of a
 *                     handshake the target runs itself.
 *   safe_cas_parked   parked / native target, which published "safe" in its state word before
 *   safe_cas_native   blocking: the requester claims it (CAS safe -> held), would run the
 *                     operation on its behalf, and releases it (store safe). The floor of a
 *                     handshake the requester runs for a blocked target (HotSpot's
 *                     try_process); a target that wakes meanwhile waits until it is released.
 *
 * bench "handshake.poll_cost", unit ns/iter: the same dependent loop (a 64-bit LCG step, a
 * latency-bound chain as in most JIT'd loops) without and with a poll check per iteration
 * (loop_plain, loop_poll_word: a load of a thread-local word, a test and a predicted branch to
 * a never-taken slow path), in batches of POLL_BATCH iterations, interleaved batch by batch.
 * Issue #14: "the poll costs <= 1% on a loop benchmark".
 *
 * vmthread's rows are a table line each: HS_VARIANTS takes the target kind, the running
 * target's loop (or the blocked target's block step) and the timed request; LOOP_VARIANTS a
 * loop function. They pair with the HotSpot rows of the same configuration:
 * vmt_handshake_{running,parked,native} (a synchronous handshake; their rows at 1,000 and
 * 10,000 idle threads carry p50_delta_us, the difference to 0 idle), vmt_stack_trace_{...}
 * (vmt_mx_get_thread_info with a one-frame walker, which runs inside a handshake),
 * vmt_suspend_ and vmt_resume_{running,parked,native} (bench "handshake.suspend", at 0 idle
 * and 0 running only, beside futex_wake_sleeper: the waker's FUTEX_WAKE of a thread asleep
 * for 50 us, the floor of a resume that finds its thread asleep), loop_vmt_poll and loop_vmt_poll_current. bench "handshake.safepoint":
 * empty safepoints and the deadlock scan at one, with 0, 1, 2 running threads (0 idle) and at
 * 1,000 and 10,000 idle (safepoint_config). docs/benchmarks.md has the method of each.
 *
 * Method: a running target publishes its progress every 1024 iterations and the requester waits
 * for new progress before each request, so a request never finds it descheduled or still
 * blocked from the previous one. Variants are measured one target at a time (a spinning target
 * would otherwise compete with the others), in BLOCKS alternating blocks per configuration so
 * that load from elsewhere falls on all of them alike.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bench/harness.h"
#include "vmthread.h"

#define BLOCKS 5
#define POLL_BATCH 10000
#define PROGRESS_MASK 1023u
/* Small stacks: 10,000 idle threads at the default 8 MB would be 80 GB of address space. */
#define IDLE_STACK (128 * 1024)

typedef enum { HS_RUNNING, HS_PARKED, HS_NATIVE } hs_kind_t;

enum { STATE_RUNNING, STATE_SAFE, STATE_HELD };

typedef struct hs_target {
  hs_kind_t kind;
  vmt_thread_t *thread;
  int pipe[2];                              /* HS_NATIVE: read end, write end */
  _Alignas(64) _Atomic uint64_t poll_word;  /* written by the requester */
  _Alignas(64) _Atomic uint64_t ack;        /* written by the target */
  _Atomic uint32_t state;                   /* STATE_*: written by both */
  _Atomic uint32_t fword;                   /* futex_wake_sleeper: the futex word */
  _Atomic uint64_t progress;                /* running target: iterations / 1024 */
  _Atomic bool stop;
  _Atomic bool ready;
  uint64_t seq;                             /* requester's last request */
  const struct hs_variant *variant;
} hs_target_t;

typedef struct hs_variant {
  const char *name;
  const char *bench;   /* NULL: "handshake"; others only at 0 idle, 0 running threads */
  hs_kind_t kind;
  /* HS_RUNNING: the target's loop until t->stop. HS_PARKED / HS_NATIVE: one blocking step
   * (the body calls it until t->stop; halting wakes it). */
  void (*body_step)(hs_target_t *t);
  int64_t (*request)(hs_target_t *t); /* one timed request; its ns */
} hs_variant_t;

static void die(const char *what, int err) {
  fprintf(stderr, "handshake: %s: %s\n", what, strerror(err < 0 ? -err : err));
  exit(1);
}

#define LCG(v) ((v) * 6364136223846793005ull + 1442695040888963407ull)

/* ---- The C floors ------------------------------------------------------------------------ */

/* Never called in a measurement (no slow path is ever armed there), but compiled in, so the
 * loop pays for the call's register pressure as a VM's poll does. */
__attribute__((noinline)) static void poll_slow(_Atomic uint64_t *word) {
  atomic_store_explicit(word, 0, memory_order_relaxed);
}

static void spin_poll_word(hs_target_t *t) {
  uint64_t v = 1, i = 0;
  while (!atomic_load_explicit(&t->stop, memory_order_relaxed)) {
    v = LCG(v);
    uint64_t req = atomic_load_explicit(&t->poll_word, memory_order_acquire);
    if (__builtin_expect(req != 0, 0)) {
      atomic_store_explicit(&t->poll_word, 0, memory_order_relaxed);
      atomic_store_explicit(&t->ack, req, memory_order_release);
    }
    if ((++i & PROGRESS_MASK) == 0) atomic_store_explicit(&t->progress, i, memory_order_relaxed);
  }
  VMTB_SINK(v);
}

static int64_t request_poll_word(hs_target_t *t) {
  uint64_t seq = ++t->seq;
  int64_t t0 = vmtb_now_ns();
  atomic_store_explicit(&t->poll_word, seq, memory_order_release);
  /* Spins; after a few microseconds (the round trip is ~0.2 us) it yields too, so that a target
   * that lost its CPU to a running thread gets it back within the row instead of after a time
   * slice: a requester that only spins measures the scheduler, not the round trip. */
  for (unsigned i = 0; atomic_load_explicit(&t->ack, memory_order_acquire) != seq; i++)
    if (i >= 1000) sched_yield();
  return vmtb_now_ns() - t0;
}

/* Leaves the safe state, waiting while a requester holds it (what a VM's transition does). */
static void leave_safe(hs_target_t *t) {
  uint32_t safe = STATE_SAFE;
  while (!atomic_compare_exchange_weak(&t->state, &safe, STATE_RUNNING)) safe = STATE_SAFE;
}

static void park_safe(hs_target_t *t) {
  atomic_store(&t->state, STATE_SAFE);
  vmt_park(0);
  leave_safe(t);
}

static void read_safe(hs_target_t *t) {
  char c;
  atomic_store(&t->state, STATE_SAFE);
  ssize_t n = read(t->pipe[0], &c, 1);
  VMTB_SINK(n);
  leave_safe(t);
}

static int64_t request_safe_cas(hs_target_t *t) {
  int64_t t0 = vmtb_now_ns();
  uint32_t safe = STATE_SAFE;
  while (!atomic_compare_exchange_weak(&t->state, &safe, STATE_HELD)) safe = STATE_SAFE;
  /* (the operation would run here, with the target held in its safe state) */
  atomic_store(&t->state, STATE_SAFE);
  return vmtb_now_ns() - t0;
}

/* The floor of a resume: a FUTEX_WAKE, as the waker sees it, of a thread asleep on its word.
 * The target sleeps in FUTEX_WAIT; the requester lets it sleep SLEEPER_NAP_NS (so that its CPU
 * has gone idle, as a suspended thread's does) and times its one system call. A wake that
 * found nobody in the kernel yet (it returns 0) is not a sample; the requester tries again. */
#define SLEEPER_NAP_NS 50000
static long futex_call(_Atomic uint32_t *w, int op, uint32_t val) {
  return syscall(SYS_futex, (uint32_t *)w, op, val, NULL, NULL, 0);
}

static void futex_sleep(hs_target_t *t) {
  atomic_store(&t->fword, 0);
  atomic_store(&t->state, STATE_SAFE);
  /* stop is read after the store above: a halt whose store of 1 that store overwrote has set
   * stop before it (target_halt), so the target cannot sleep through it. */
  while (atomic_load(&t->fword) == 0 && !atomic_load(&t->stop))
    futex_call(&t->fword, FUTEX_WAIT_PRIVATE, 0);
}

static int64_t request_futex_wake(hs_target_t *t) {
  for (;;) {
    /* HELD below: a SAFE seen here is the target's next sleep, not the one just woken. */
    while (atomic_load(&t->state) != STATE_SAFE) sched_yield();
    atomic_store(&t->state, STATE_HELD);
    struct timespec nap = {0, SLEEPER_NAP_NS};
    nanosleep(&nap, NULL);
    atomic_store(&t->fword, 1);
    int64_t t0 = vmtb_now_ns();
    long woken = futex_call(&t->fword, FUTEX_WAKE_PRIVATE, 1);
    int64_t d = vmtb_now_ns() - t0;
    if (woken == 1) return d;
  }
}

/* ---- vmthread's rows ------------------------------------------------------------------- *
 * The same targets through the VM services: a running target spins in managed code with
 * vmt_poll in its loop; a parked one parks from managed code (a safe region); a native one
 * sits in read(2) in native code, where every thread starts. */
static void vmt_spin_managed(hs_target_t *t) {
  vmt_thread_t *self = vmt_thread_current();
  vmt_exec_enter(VMT_EXEC_MANAGED);
  uint64_t v = 1, i = 0;
  while (!atomic_load_explicit(&t->stop, memory_order_relaxed)) {
    v = LCG(v);
    vmt_poll(self);
    if ((++i & PROGRESS_MASK) == 0) atomic_store_explicit(&t->progress, i, memory_order_relaxed);
  }
  vmt_exec_enter(VMT_EXEC_NATIVE);
  VMTB_SINK(v);
}

static void vmt_park_managed(hs_target_t *t) {
  vmt_exec_enter(VMT_EXEC_MANAGED);
  atomic_store(&t->state, STATE_SAFE);   /* what target_start waits for */
  vmt_park(0);
}

static void vmt_read_native(hs_target_t *t) {
  char c;
  atomic_store(&t->state, STATE_SAFE);
  ssize_t n = read(t->pipe[0], &c, 1);
  VMTB_SINK(n);
}

static void noop_op(vmt_thread_t *target, void *arg) { (void)target, (void)arg; }

#define REQUEST_TIMEOUT_NS (10 * 1000000000LL)

static int64_t request_vmt_handshake(hs_target_t *t) {
  int64_t t0 = vmtb_now_ns();
  int rc = vmt_handshake_run(t->thread, noop_op, NULL, REQUEST_TIMEOUT_NS, NULL);
  int64_t d = vmtb_now_ns() - t0;
  if (rc) die("vmt_handshake_run", rc);
  return d;
}

/* ThreadInfo with a stack of another thread: the walker (one frame) runs in a handshake. */
static int one_frame(vmt_thread_t *t, vmt_stack_frame_t *frames, int32_t max, void *ctx) {
  (void)t, (void)ctx;
  if (max < 1) return 0;
  frames[0] = (vmt_stack_frame_t){.function = "bench.Spin.run", .file = "Spin.vm", .line = 1};
  return 1;
}

static int64_t request_vmt_stack_trace(hs_target_t *t) {
  vmt_thread_info_t *info = NULL;
  int64_t t0 = vmtb_now_ns();
  int rc = vmt_mx_get_thread_info(vmt_thread_id(t->thread), 8, &info);
  int64_t d = vmtb_now_ns() - t0;
  if (rc || info == NULL || info->frame_count != 1) die("vmt_mx_get_thread_info", rc ? rc : EIO);
  vmt_mx_thread_info_free(info);
  return d;
}

static int64_t request_vmt_suspend(hs_target_t *t) {
  int64_t t0 = vmtb_now_ns();
  int rc = vmt_thread_suspend(t->thread, VMT_SUSPEND_DEBUGGER, REQUEST_TIMEOUT_NS, NULL);
  int64_t d = vmtb_now_ns() - t0;
  if (rc == 0) rc = vmt_thread_resume(t->thread, VMT_SUSPEND_DEBUGGER);
  if (rc) die("vmt_thread_suspend", rc);
  return d;
}

static int64_t request_vmt_resume(hs_target_t *t) {
  int rc = vmt_thread_suspend(t->thread, VMT_SUSPEND_DEBUGGER, REQUEST_TIMEOUT_NS, NULL);
  if (rc) die("vmt_thread_suspend", rc);
  int64_t t0 = vmtb_now_ns();
  rc = vmt_thread_resume(t->thread, VMT_SUSPEND_DEBUGGER);
  int64_t d = vmtb_now_ns() - t0;
  if (rc) die("vmt_thread_resume", rc);
  return d;
}

static const hs_variant_t HS_VARIANTS[] = {
    {"poll_round_trip", NULL, HS_RUNNING, spin_poll_word, request_poll_word},
    {"safe_cas_parked", NULL, HS_PARKED, park_safe, request_safe_cas},
    {"safe_cas_native", NULL, HS_NATIVE, read_safe, request_safe_cas},
    {"vmt_handshake_running", NULL, HS_RUNNING, vmt_spin_managed, request_vmt_handshake},
    {"vmt_handshake_parked", NULL, HS_PARKED, vmt_park_managed, request_vmt_handshake},
    {"vmt_handshake_native", NULL, HS_NATIVE, vmt_read_native, request_vmt_handshake},
    {"vmt_stack_trace_running", NULL, HS_RUNNING, vmt_spin_managed, request_vmt_stack_trace},
    {"vmt_stack_trace_parked", NULL, HS_PARKED, vmt_park_managed, request_vmt_stack_trace},
    {"vmt_stack_trace_native", NULL, HS_NATIVE, vmt_read_native, request_vmt_stack_trace},
    {"vmt_suspend_running", "handshake.suspend", HS_RUNNING, vmt_spin_managed,
     request_vmt_suspend},
    {"vmt_suspend_parked", "handshake.suspend", HS_PARKED, vmt_park_managed,
     request_vmt_suspend},
    {"vmt_suspend_native", "handshake.suspend", HS_NATIVE, vmt_read_native,
     request_vmt_suspend},
    {"futex_wake_sleeper", "handshake.suspend", HS_PARKED, futex_sleep, request_futex_wake},
    {"vmt_resume_running", "handshake.suspend", HS_RUNNING, vmt_spin_managed,
     request_vmt_resume},
    {"vmt_resume_parked", "handshake.suspend", HS_PARKED, vmt_park_managed, request_vmt_resume},
    {"vmt_resume_native", "handshake.suspend", HS_NATIVE, vmt_read_native, request_vmt_resume},
};
#define N_HS (sizeof(HS_VARIANTS) / sizeof(HS_VARIANTS[0]))

/* ---- Targets and spinners ----------------------------------------------------------------- */

static void *target_main(void *arg) {
  hs_target_t *t = arg;
  atomic_store(&t->ready, true);
  if (t->kind == HS_RUNNING) {
    t->variant->body_step(t);
  } else {
    while (!atomic_load(&t->stop)) t->variant->body_step(t);
  }
  return NULL;
}

static hs_target_t *target_start(const hs_variant_t *v) {
  hs_target_t *t = aligned_alloc(64, sizeof(*t));
  if (t == NULL) die("aligned_alloc", ENOMEM);
  memset(t, 0, sizeof(*t));
  t->kind = v->kind;
  t->variant = v;
  t->pipe[0] = t->pipe[1] = -1;
  if (v->kind == HS_NATIVE && pipe2(t->pipe, O_CLOEXEC) != 0) die("pipe2", errno);
  int rc = vmt_thread_start(&t->thread, target_main, t);
  if (rc) die("vmt_thread_start", rc);
  while (!atomic_load(&t->ready)) sched_yield();
  if (v->kind != HS_RUNNING) {
    /* Safe published, and a moment to get into the kernel. */
    while (atomic_load(&t->state) != STATE_SAFE) sched_yield();
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  return t;
}

/* Returns once a running target made progress since the call: it is on a CPU, in its loop.
 * A short spin, then sched_yield: the target may be waiting for this very CPU. */
static void await_progress(hs_target_t *t) {
  if (t->kind != HS_RUNNING) return;
  uint64_t seen = atomic_load_explicit(&t->progress, memory_order_relaxed);
  int64_t deadline = vmtb_now_ns() + 10 * 1000000000LL;
  for (unsigned i = 0; atomic_load_explicit(&t->progress, memory_order_relaxed) == seen; i++) {
    if (i < 100) continue;
    if (vmtb_now_ns() > deadline) die("a running target made no progress for 10 s", EDEADLK);
    sched_yield();
  }
}

static void target_halt(hs_target_t *t) {
  atomic_store(&t->stop, true);
  if (t->kind == HS_PARKED) {
    vmt_unpark(t->thread);
    atomic_store(&t->fword, 1);   /* futex_wake_sleeper's target */
    futex_call(&t->fword, FUTEX_WAKE_PRIVATE, 1);
  }
  if (t->kind == HS_NATIVE && write(t->pipe[1], "x", 1) != 1) die("write", errno);
  vmt_thread_join(t->thread, NULL);
  vmt_thread_release(t->thread);
  if (t->kind == HS_NATIVE) {
    close(t->pipe[0]);
    close(t->pipe[1]);
  }
  free(t);
}

/* ---- Idle threads ------------------------------------------------------------------------- */

typedef struct idle_pool {
  vmt_thread_t **threads;
  int count;
  _Atomic int parked;
  _Atomic bool stop;
} idle_pool_t;

static void *idle_main(void *arg) {
  idle_pool_t *p = arg;
  atomic_fetch_add(&p->parked, 1);
  while (!atomic_load(&p->stop)) vmt_park(0);
  return NULL;
}

/* Grows the pool to n threads; false (with a message) when the OS refuses. */
static bool idle_grow(const vmtb_options_t *o, idle_pool_t *p, int n) {
  vmt_thread_t **grown = realloc(p->threads, (size_t)n * sizeof(*grown));
  if (grown == NULL) die("realloc", ENOMEM);
  p->threads = grown;
  vmt_thread_options_t opt = {.flags = VMT_THREAD_OPT_NAME | VMT_THREAD_OPT_STACK_SIZE,
                              .name = "idle",
                              .stack_size = IDLE_STACK};
  while (p->count < n) {
    int rc = vmt_thread_start_ex(&p->threads[p->count], &opt, idle_main, p);
    if (rc) {
      vmtb_note(o, "handshake: cannot start %d idle threads (%s at %d): rows skipped", n,
                strerror(-rc), p->count);
      return false;
    }
    p->count++;
  }
  while (atomic_load(&p->parked) < p->count) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  return true;
}

static void idle_close(idle_pool_t *p) {
  atomic_store(&p->stop, true);
  for (int i = 0; i < p->count; i++) vmt_unpark(p->threads[i]);
  for (int i = 0; i < p->count; i++) {
    vmt_thread_join(p->threads[i], NULL);
    vmt_thread_release(p->threads[i]);
  }
  free(p->threads);
}

/* ---- Measurement -------------------------------------------------------------------------- */

typedef struct cfg {
  size_t warmup, samples, contended_samples, poll_samples;
  int idle_levels[3];
  int n_idle_levels;
  int max_running;
} cfg_t;

static vmtb_result_t report_row(const vmtb_options_t *o, const char *bench,
                                const char *variant, const char *unit, double *s, size_t n,
                                const char *extra) {
  vmtb_result_t r = {.bench = bench, .variant = variant, .unit = unit};
  vmtb_stats(s, n, &r);
  vmtb_report(o, &r, extra);
  return r;
}

/* Each variant's p50 at 0 idle, 0 running threads: the rows with idle threads carry their
 * difference to it (issue #14: "10,000 idle threads move a single-target handshake by <= 1
 * us"). */
static double quiet_p50[64];

/* Every HS_VARIANTS row at one configuration. */
static void hs_config(const vmtb_options_t *o, const cfg_t *c, int idle, int running) {
  size_t n = running ? c->contended_samples : c->samples;
  size_t per_block = (n + BLOCKS - 1) / BLOCKS;
  double *s = calloc(N_HS * n, sizeof(double));
  if (s == NULL) die("calloc", ENOMEM);
  size_t done[N_HS] = {0};
  int64_t start = vmtb_now_ns();
  char title[120];
  snprintf(title, sizeof(title), "one request to one target, %d idle, %d running threads (us)",
           idle, running);
  vmtb_table_header(o, title);
  for (int b = 0; b < BLOCKS; b++) {
    for (size_t k = 0; k < N_HS; k++) {
      const hs_variant_t *v = &HS_VARIANTS[(k + (size_t)b) % N_HS];
      size_t vi = (size_t)(v - HS_VARIANTS);
      if (v->bench && (idle || running)) continue;   /* the suspension rows: quiet only */
      hs_target_t *t = target_start(v);
      hs_target_t *spinners[2];
      for (int i = 0; i < running; i++) spinners[i] = target_start(&HS_VARIANTS[0]);
      size_t warm = b == 0 ? c->warmup : c->warmup / 10;
      for (size_t i = 0; i < warm; i++) {
        await_progress(t);
        VMTB_SINK(v->request(t));
      }
      for (size_t i = 0; i < per_block && done[vi] < n; i++) {
        await_progress(t);
        s[vi * n + done[vi]++] = (double)v->request(t) / 1000.0;
      }
      for (int i = 0; i < running; i++) target_halt(spinners[i]);
      target_halt(t);
    }
  }
  vmtb_note(o, "handshake: %d idle, %d running threads: %zu samples per row in %.1f s", idle,
            running, n, (double)(vmtb_now_ns() - start) / 1e9);
  _Static_assert(N_HS <= sizeof(quiet_p50) / sizeof(quiet_p50[0]), "quiet_p50 holds them");
  for (size_t vi = 0; vi < N_HS; vi++) {
    if (done[vi] == 0) continue;
    char extra[120];
    int len = snprintf(extra, sizeof(extra), "\"idle_threads\":%d,\"running_threads\":%d",
                       idle, running);
    if (idle > 0 && running == 0 && quiet_p50[vi] > 0) {
      vmtb_result_t q = {0};
      double *copy = malloc(done[vi] * sizeof(double));
      if (copy == NULL) die("malloc", ENOMEM);
      memcpy(copy, &s[vi * n], done[vi] * sizeof(double));
      vmtb_stats(copy, done[vi], &q);
      free(copy);
      snprintf(extra + len, sizeof(extra) - (size_t)len, ",\"p50_delta_us\":%.3f",
               q.p50 - quiet_p50[vi]);
    }
    const char *bench = HS_VARIANTS[vi].bench ? HS_VARIANTS[vi].bench : "handshake";
    vmtb_result_t r = report_row(o, bench, HS_VARIANTS[vi].name, "us", &s[vi * n], done[vi],
                                 extra);
    if (idle == 0 && running == 0) quiet_p50[vi] = r.p50;
  }
  free(s);
}

/* ---- The poll's cost on a loop ------------------------------------------------------------- */

static _Thread_local _Atomic uint64_t poll_word_tls;

/* Every loop function starts a 64-byte line and every loop a 32-byte window (LOOP_ALIGN):
 * where the linker puts a function otherwise moves with the code around it, and a loop of
 * 24-30 bytes that happens to straddle a line is fetched in two. Two builds of the same loops,
 * 32 bytes apart (2026-12-02), gave loop_vmt_poll / loop_plain 1.00x and 1.05-1.14x, with
 * loop_poll_word (no vmthread code at all) moving alike: the layout, not the poll. */
#define LOOP_ALIGN __attribute__((aligned(64), noinline, optimize("align-loops=32")))

static LOOP_ALIGN uint64_t loop_plain(uint64_t v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    v = LCG(v);
    __asm__ __volatile__("" : "+r"(v)); /* keeps the loop a loop: no closed form */
  }
  return v;
}

static LOOP_ALIGN uint64_t loop_poll_word(uint64_t v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    v = LCG(v);
    __asm__ __volatile__("" : "+r"(v));
    if (__builtin_expect(atomic_load_explicit(&poll_word_tls, memory_order_relaxed) != 0, 0))
      poll_slow(&poll_word_tls);
  }
  return v;
}

/* vmthread's poll on the handle a VM keeps at hand (in a register, in its own thread
 * structure), in managed code: the main thread enters it for the loop rows. */
static vmt_thread_t *loop_self;

static LOOP_ALIGN uint64_t loop_vmt_poll(uint64_t v, size_t n) {
  vmt_thread_t *self = loop_self;
  for (size_t i = 0; i < n; i++) {
    v = LCG(v);
    __asm__ __volatile__("" : "+r"(v));
    vmt_poll(self);
  }
  return v;
}

/* The same poll on vmt_thread_current() at every iteration: what a host that keeps no handle
 * pays (a call into the library and its TLS load), the cost a public TLS variable would save. */
static LOOP_ALIGN uint64_t loop_vmt_poll_current(uint64_t v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    v = LCG(v);
    __asm__ __volatile__("" : "+r"(v));
    vmt_poll(vmt_thread_current());
  }
  return v;
}

/* A native call per iteration, as a VM's JNI-style call out of managed code makes it: NATIVE
 * on the way out, MANAGED on the way back (the way out of a safe state: announce LEAVING, read
 * the safepoint word, take the state; runtime/vmservices/vmservices.h). Its cost per
 * iteration over loop_plain is the transition pair's. */
static LOOP_ALIGN uint64_t loop_native_call(uint64_t v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    v = LCG(v);
    __asm__ __volatile__("" : "+r"(v));
    vmt_exec_enter(VMT_EXEC_NATIVE);
    vmt_exec_enter(VMT_EXEC_MANAGED);
  }
  return v;
}

typedef struct loop_variant {
  const char *name;
  uint64_t (*loop)(uint64_t v, size_t n);
} loop_variant_t;

static const loop_variant_t LOOP_VARIANTS[] = {
    {"loop_plain", loop_plain},
    {"loop_poll_word", loop_poll_word},
    {"loop_vmt_poll", loop_vmt_poll},
    {"loop_vmt_poll_current", loop_vmt_poll_current},
    {"loop_native_call", loop_native_call},
};
#define N_LOOP (sizeof(LOOP_VARIANTS) / sizeof(LOOP_VARIANTS[0]))

static void poll_cost(const vmtb_options_t *o, const cfg_t *c) {
  loop_self = vmt_thread_current();
  vmt_exec_enter(VMT_EXEC_MANAGED);
  size_t n = c->poll_samples;
  double *s = calloc(N_LOOP * n, sizeof(double));
  if (s == NULL) die("calloc", ENOMEM);
  uint64_t v = 1;
  for (long r = -(long)(n / 10); r < (long)n; r++) {
    for (size_t k = 0; k < N_LOOP; k++) {
      size_t li = (k + (size_t)(r + (long)n)) % N_LOOP;
      int64_t t0 = vmtb_now_ns();
      v = LOOP_VARIANTS[li].loop(v, POLL_BATCH);
      int64_t t1 = vmtb_now_ns();
      if (r >= 0) s[li * n + (size_t)r] = (double)(t1 - t0) / POLL_BATCH;
    }
  }
  vmt_exec_enter(VMT_EXEC_NATIVE);
  VMTB_SINK(v);
  vmtb_table_header(o, "a dependent loop without and with a poll check (ns per iteration)");
  char extra[40];
  snprintf(extra, sizeof(extra), "\"batch\":%d", POLL_BATCH);
  double plain_p50 = 0;
  for (size_t li = 0; li < N_LOOP; li++) {
    vmtb_result_t r = {.bench = "handshake.poll_cost", .variant = LOOP_VARIANTS[li].name,
                       .unit = "ns/iter"};
    vmtb_stats(&s[li * n], n, &r);
    vmtb_report(o, &r, extra);
    if (li == 0) plain_p50 = r.p50;
    else vmtb_note(o, "%s / loop_plain at p50: %.4f", r.variant, r.p50 / plain_p50);
  }
  free(s);
}

/* ---- Safepoints -------------------------------------------------------------------------- *
 * bench "handshake.safepoint", unit us: an empty global safepoint from the main thread (in
 * native code) with `running` threads spinning in managed code with polls and the idle pool
 * parked: vmt_safepoint_total is the wall time of begin and end, vmt_safepoint_reach the
 * statistics' time to safepoint; vmt_find_deadlocks_at_safepoint is the deadlock scan at one
 * (HotSpot's findDeadlockedThreads, bench/java/VmServicesBench.java's find_deadlocks). Before
 * each sample every spinner has made progress: it is on a CPU, in its loop.
 *
 * Two coordinators, sample by sample in turn. The rows above begin right after the main
 * thread's wait for that progress, a spin with sched_yield: a coordinator that was running, so
 * the scheduler has been sharing the CPUs between it and the spinners. The _woken rows
 * (vmt_safepoint_reach_woken, vmt_safepoint_total_woken; 0 idle threads only) begin the
 * moment the main thread wakes from a 1 ms nanosleep, as a VM's safepoint coordinator does: it
 * sleeps until an operation is asked for or a timer fires (HotSpot's VMThread waits on its
 * operation queue with a timeout; the JVM rows' findDeadlockedThreads is such a request), and
 * while it sleeps the spinners have every CPU. With 2 spinners it wakes onto a CPU a spinner
 * holds, which then waits behind it. */
#define WOKEN_SLEEP_NS 1000000
static void safepoint_config(const vmtb_options_t *o, const cfg_t *c, int idle, int running) {
  /* With 2 spinners, 2 CPUs and the coordinator, one of the three waits for a CPU in every
   * sample: fewer samples. */
  size_t n = running < 2 ? c->samples : c->contended_samples * 4;
  hs_target_t *spinners[2];
  for (int i = 0; i < running; i++) spinners[i] = target_start(&HS_VARIANTS[3]);
  double *total = calloc(n, sizeof(double)), *reach = calloc(n, sizeof(double));
  double *scan = calloc(n, sizeof(double));
  bool woken = idle == 0;
  double *wtotal = calloc(n, sizeof(double)), *wreach = calloc(n, sizeof(double));
  if (total == NULL || reach == NULL || scan == NULL || wtotal == NULL || wreach == NULL)
    die("calloc", ENOMEM);
  double stopped = 0, wstopped = 0;
  size_t warm = c->warmup / 10;
  for (size_t i = 0; i < n + warm; i++) {
    for (int k = 0; k < running; k++) await_progress(spinners[k]);
    vmt_safepoint_stats_t st;
    int64_t t0 = vmtb_now_ns();
    int rc = vmt_safepoint_begin(REQUEST_TIMEOUT_NS, &st);
    if (rc == 0) rc = vmt_safepoint_end(&st);
    int64_t t1 = vmtb_now_ns();
    if (rc) die("vmt_safepoint_begin", rc);
    for (int k = 0; k < running; k++) await_progress(spinners[k]);
    int64_t *ids = NULL;
    size_t nids = 0;
    int64_t t2 = vmtb_now_ns();
    rc = vmt_mx_find_deadlocked_threads_at_safepoint(REQUEST_TIMEOUT_NS, &ids, &nids);
    int64_t t3 = vmtb_now_ns();
    if (rc) die("vmt_mx_find_deadlocked_threads_at_safepoint", rc);
    vmt_mx_ids_free(ids);
    vmt_safepoint_stats_t wst = {0};
    int64_t t4 = 0, t5 = 0;
    if (woken) {
      for (int k = 0; k < running; k++) await_progress(spinners[k]);
      struct timespec ts = {0, WOKEN_SLEEP_NS};
      nanosleep(&ts, NULL);
      t4 = vmtb_now_ns();
      rc = vmt_safepoint_begin(REQUEST_TIMEOUT_NS, &wst);
      if (rc == 0) rc = vmt_safepoint_end(&wst);
      t5 = vmtb_now_ns();
      if (rc) die("vmt_safepoint_begin", rc);
    }
    if (i < warm) continue;
    total[i - warm] = (double)(t1 - t0) / 1000.0;
    reach[i - warm] = (double)st.time_to_safepoint_ns / 1000.0;
    scan[i - warm] = (double)(t3 - t2) / 1000.0;
    stopped += st.running;
    wtotal[i - warm] = (double)(t5 - t4) / 1000.0;
    wreach[i - warm] = (double)wst.time_to_safepoint_ns / 1000.0;
    wstopped += wst.running;
  }
  for (int i = 0; i < running; i++) target_halt(spinners[i]);
  char title[96], extra[120];
  snprintf(title, sizeof(title), "empty safepoints, %d idle, %d running threads (us)", idle,
           running);
  vmtb_table_header(o, title);
  snprintf(extra, sizeof(extra),
           "\"idle_threads\":%d,\"running_threads\":%d,\"stopped_mean\":%.2f", idle, running,
           stopped / (double)n);
  report_row(o, "handshake.safepoint", "vmt_safepoint_total", "us", total, n, extra);
  report_row(o, "handshake.safepoint", "vmt_safepoint_reach", "us", reach, n, extra);
  report_row(o, "handshake.safepoint", "vmt_find_deadlocks_at_safepoint", "us", scan, n, extra);
  if (woken) {
    snprintf(extra, sizeof(extra),
             "\"idle_threads\":%d,\"running_threads\":%d,\"stopped_mean\":%.2f,"
             "\"sleep_ns\":%d",
             idle, running, wstopped / (double)n, WOKEN_SLEEP_NS);
    report_row(o, "handshake.safepoint", "vmt_safepoint_total_woken", "us", wtotal, n, extra);
    report_row(o, "handshake.safepoint", "vmt_safepoint_reach_woken", "us", wreach, n, extra);
  }
  free(total);
  free(reach);
  free(scan);
  free(wtotal);
  free(wreach);
}

int main(int argc, char **argv) {
  vmtb_options_t o;
  vmtb_parse_args(argc, argv, &o, NULL);
  /* Rows with running threads only with --long: with a spinning requester, a spinning target
   * and more spinners than the 2 CPUs, a round trip waits for the scheduler to run requester
   * and target at once: 10-140 ms per sample in runs of this file on 2026-12-01 on this
   * shared machine (seconds per row, for a figure that only says "the scheduler"). */
  cfg_t c = {.warmup = 300, .samples = 2000, .contended_samples = 50, .poll_samples = 2000,
             .idle_levels = {0, 1000, 10000}, .n_idle_levels = 3, .max_running = 0};
  if (o.quick)
    c = (cfg_t){.warmup = 50, .samples = 200, .contended_samples = 10, .poll_samples = 300,
                .idle_levels = {0, 1000}, .n_idle_levels = 2, .max_running = 0};
  if (o.longrun)
    c = (cfg_t){.warmup = 1000, .samples = 20000, .contended_samples = 200,
                .poll_samples = 20000, .idle_levels = {0, 1000, 10000}, .n_idle_levels = 3,
                .max_running = 2};
  if (!o.json) vmtb_describe_machine(stdout);
  vmt_thread_t *self;
  int rc = vmt_thread_attach(NULL, &self);
  if (rc) die("vmt_thread_attach", rc);
  vmt_mx_set_stack_walker(one_frame, NULL);

  poll_cost(&o, &c);
  idle_pool_t pool = {0};
  for (int l = 0; l < c.n_idle_levels; l++) {
    int idle = c.idle_levels[l];
    int64_t t0 = vmtb_now_ns();
    if (!idle_grow(&o, &pool, idle)) break;
    vmtb_note(&o, "handshake: %d idle threads started in %.1f s", idle,
              (double)(vmtb_now_ns() - t0) / 1e9);
    hs_config(&o, &c, idle, 0);
    for (int running = 1; idle == 0 && running <= c.max_running; running++)
      hs_config(&o, &c, idle, running);
    /* Issue #14: time to safepoint with up to ncpu running threads, at every mode. */
    for (int running = 0; running <= (idle == 0 ? 2 : 0); running++)
      safepoint_config(&o, &c, idle, running);
  }
  idle_close(&pool);
  vmt_thread_detach();
  return 0;
}
