/*
 * test/cpu_time_identity_linux_test.c: never another thread's time. Targets that sleep (near
 * zero CPU) exit while a querying thread that burns CPU reads their CPU and user times without
 * pause; every answer is checked against what the target itself measured just before it left
 * (plus a small allowance for its exit bookkeeping). The querier's own time, and that of busy
 * threads that inherit a target's tid, are hundreds of times larger: the caller's-clock bug of
 * glibc and musl (an exited thread's pthread_getcpuclockid gives clock -2) or a read through a
 * recycled tid would show as an answer far above the bound.
 *
 * Tid recycling is made to happen, not hoped for: in a forked child inside a new PID namespace
 * (root with CAP_SYS_ADMIN; skipped otherwise, with the reason printed) the namespace's pid_max
 * is lowered to 400 (per-namespace pid_max, Linux 6.14), so tids wrap every few hundred starts,
 * and /proc/sys/kernel/ns_last_pid is set so that a busy thread is created with the tid of the
 * target that just exited while the test still holds that target's handle. The child counts
 * the tids it saw more than once and the forced reuses; a run where none happened fails.
 * Public API only.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "test/cpu_burn.h"
#include "test/reliability.h"
#include "vmthread.h"

#define MS (1000LL * 1000)
/* CPU a target may still use between its last self-measurement and leaving (bookkeeping;
 * tens of us natively, more under sanitizers). */
#define EXIT_ALLOWANCE_NS (5 * MS)
/* VIRT is charged in whole ticks (4 ms at HZ=250): two more ticks may land after the read. */
#define TICK_ALLOWANCE_NS (8 * MS)
#define QUERIER_BURN_NS (100 * MS)
#define RECYCLER_BURN_NS (25 * MS)
/* One forced reuse per FORCE_EVERY lifetimes: each costs a recycler's burn. */
#define FORCE_EVERY 20

typedef struct target {
  _Atomic int64_t self_total, self_virt;
} target_t;

/* The handle the querier reads; Dekker-style hand-back (seq_cst on both sides). */
static _Atomic(vmt_thread_t *) published;
static _Atomic int querier_busy;
static _Atomic bool querier_stop;
static _Atomic bool querier_ready;   /* its burn is done: it reads from now on */
static _Atomic int64_t max_total, max_user, max_fast;
static _Atomic int64_t reads, answers;

static void atomic_max(_Atomic int64_t *m, int64_t v) {
  int64_t cur = atomic_load(m);
  while (v > cur && !atomic_compare_exchange_weak(m, &cur, v)) {
  }
}

static void *querier(void *arg) {
  (void)arg;
  burn_cpu_ns(QUERIER_BURN_NS);  /* its own clock, the wrong answer, is large */
  atomic_store(&querier_ready, true);
  while (!atomic_load(&querier_stop)) {
    atomic_store(&querier_busy, 1);
    vmt_thread_t *t = atomic_load(&published);
    if (t != NULL) {
      int64_t v[3] = {vmt_thread_cpu_time(t, VMT_CPU_TOTAL), vmt_thread_cpu_time(t, VMT_CPU_USER),
                      vmt_thread_cpu_time(t, VMT_CPU_USER_FAST)};
      atomic_max(&max_total, v[0]);
      atomic_max(&max_user, v[1]);
      atomic_max(&max_fast, v[2]);
      atomic_fetch_add_explicit(&reads, 3, memory_order_relaxed);
      for (int k = 0; k < 3; k++)
        if (v[k] >= 0) atomic_fetch_add_explicit(&answers, 1, memory_order_relaxed);
    }
    atomic_store(&querier_busy, 0);
  }
  return NULL;
}

static void *sleeper(void *arg) {
  target_t *g = arg;
  vmt_sleep_ns(200 * 1000);
  vmt_sleep_ns(300 * 1000);
  atomic_store(&g->self_total, vmt_current_thread_cpu_time(VMT_CPU_TOTAL));
  atomic_store(&g->self_virt, vmt_current_thread_cpu_time(VMT_CPU_USER_FAST));
  return NULL;
}

static void *recycler(void *arg) {
  (void)arg;
  burn_cpu_ns(RECYCLER_BURN_NS);
  vmt_park(0);  /* stays alive, with its large clock, until unparked */
  return NULL;
}

typedef struct outcome {
  int64_t lifetimes, wrong, stale_queries, stale_wrong, forced_reuse, forced_tries;
  int64_t tids_repeated;   /* lifetimes whose tid an earlier target had */
  char first_wrong[200];
} outcome_t;

static void note_wrong(outcome_t *o, const char *what, int64_t got, int64_t bound) {
  if (o->wrong++ == 0)
    snprintf(o->first_wrong, sizeof(o->first_wrong), "%s answered %lld ns, bound %lld ns", what,
             (long long)got, (long long)bound);
}

static void unpublish(void) {
  atomic_store(&published, NULL);
  while (atomic_load(&querier_busy)) sched_yield();
}

/* A step of the harness that must not fail did: says which and why before the abort, so a run
 * that dies under load (a start refused for memory, say) names its cause instead of showing
 * only a signal. */
static void harness_failed(const char *what, int rc) {
  fprintf(stderr, "cpu_time_identity: %s failed: %s\n", what, strerror(rc < 0 ? -rc : rc));
  abort();
}

/* Runs `lifetimes` sleeper targets under the querier. With force_reuse, after every
 * FORCE_EVERY-th joined target a busy thread is created with the target's tid (ns_last_pid)
 * and the stale handle is read. */
static void run_targets(int64_t lifetimes, bool force_reuse, outcome_t *o) {
  memset(o, 0, sizeof(*o));
  atomic_store(&querier_stop, false);
  pthread_t q;
  atomic_store(&querier_ready, false);
  int qrc = pthread_create(&q, NULL, querier, NULL);
  if (qrc != 0) harness_failed("pthread_create (querier)", qrc);
  /* The targets live while the querier reads: not during its burn, which a loaded machine (an
   * ASan build at load ~100) stretched past all 300 lifetimes, so that it read none. */
  while (!atomic_load(&querier_ready)) usleep(1000);
  /* Tids seen (this process's namespace): a bitmap over the kernel's largest pid_max. */
  enum { TID_LIMIT = 4194304 };
  uint8_t *seen = calloc(TID_LIMIT / 8, 1);
  if (seen == NULL) harness_failed("calloc", ENOMEM);
  for (int64_t i = 0; i < lifetimes; i++) {
    target_t g = {0};
    vmt_thread_t *t;
    int rc;
    while ((rc = vmt_thread_start(&t, sleeper, &g)) == -EAGAIN) usleep(1000);
    if (rc != 0) harness_failed("vmt_thread_start (target)", rc);
    pid_t tid = vmt_thread_tid(t);
    if (tid > 0 && tid < TID_LIMIT) {
      if (seen[tid / 8] & (1u << (tid % 8))) o->tids_repeated++;
      seen[tid / 8] |= (uint8_t)(1u << (tid % 8));
    }
    atomic_store(&max_total, -1);
    atomic_store(&max_user, -1);
    atomic_store(&max_fast, -1);
    atomic_store(&published, t);
    if ((rc = vmt_thread_join(t, NULL)) != 0) harness_failed("vmt_thread_join (target)", rc);
    unpublish();
    int64_t self_total = atomic_load(&g.self_total), self_virt = atomic_load(&g.self_virt);
    int64_t bound = self_total + EXIT_ALLOWANCE_NS;
    if (atomic_load(&max_total) > bound) note_wrong(o, "total", atomic_load(&max_total), bound);
    if (atomic_load(&max_user) > bound) note_wrong(o, "user", atomic_load(&max_user), bound);
    int64_t fast_bound = self_virt + TICK_ALLOWANCE_NS + EXIT_ALLOWANCE_NS;
    if (atomic_load(&max_fast) > fast_bound)
      note_wrong(o, "user_fast", atomic_load(&max_fast), fast_bound);
    if (force_reuse && tid > 1 && i % FORCE_EVERY == 0) {
      vmt_thread_t *r = NULL;
      o->forced_tries++;
      if (rel_write_sysctl("/proc/sys/kernel/ns_last_pid", tid - 1) == 0 &&
          vmt_thread_start(&r, recycler, NULL) == 0) {
        bool same = vmt_thread_tid(r) == tid;
        if (same) o->forced_reuse++;
        /* The stale handle (joined, not released) while its tid belongs to a busy thread. */
        while (vmt_thread_cpu_time(r, VMT_CPU_TOTAL) < RECYCLER_BURN_NS / 2 &&
               vmt_thread_state(r) == VMT_THREAD_RUNNABLE)
          usleep(1000);
        vmt_cpu_kind_t kinds[] = {VMT_CPU_TOTAL, VMT_CPU_USER, VMT_CPU_USER_FAST};
        for (int k = 0; k < 3; k++) {
          int64_t v = vmt_thread_cpu_time(t, kinds[k]);
          o->stale_queries++;
          if (v != -1) {
            o->stale_wrong++;
            note_wrong(o, "stale handle", v, -1);
          }
        }
        vmt_unpark(r);
        if ((rc = vmt_thread_join(r, NULL)) != 0) harness_failed("vmt_thread_join (recycler)", rc);
        vmt_thread_release(r);
      }
    }
    vmt_thread_release(t);
    o->lifetimes++;
  }
  atomic_store(&querier_stop, true);
  pthread_join(q, NULL);
  free(seen);
}

static void publish_outcome(const char *test, const outcome_t *o) {
  rel_figure_text(test, "build", "%s", rel_build_flavour());
  rel_figure(test, "lifetimes", o->lifetimes);
  rel_figure(test, "concurrent_reads", atomic_load(&reads));
  rel_figure(test, "concurrent_answers", atomic_load(&answers));
  rel_figure(test, "tids_repeated", o->tids_repeated);
  rel_figure(test, "forced_reuse_tries", o->forced_tries);
  rel_figure(test, "forced_reuse", o->forced_reuse);
  rel_figure(test, "stale_handle_reads", o->stale_queries);
  rel_figure(test, "wrong_answers", o->wrong);
}

/* In this process (the machine's PID namespace): the exit race, with whatever tid reuse the
 * machine produces. */
static void sleepers_never_report_someone_elses_time(void **state) {
  (void)state;
  atomic_store(&reads, 0);
  atomic_store(&answers, 0);
  int64_t n = (int64_t)rel_env_number("VMT_IDENTITY_LIFETIMES", 300);
  outcome_t o;
  run_targets(n, false, &o);
  publish_outcome("identity", &o);
  if (o.wrong) fail_msg("%lld wrong answer(s); first: %s", (long long)o.wrong, o.first_wrong);
  /* The querier did read live targets: a run where it never got to (its 100 ms burn first, on a
   * machine loaded enough to starve it for all the lifetimes) has checked nothing. */
  if (atomic_load(&answers) == 0)
    fail_msg("the querier read no live target (%lld reads in %lld lifetimes)",
             (long long)atomic_load(&reads), (long long)o.lifetimes);
}

/* Exit codes of the namespace child. */
enum { CHILD_OK = 0, CHILD_NO_PIDMAX = 3, CHILD_WRONG = 4, CHILD_NO_REUSE = 5, CHILD_NO_FORCED = 6 };

static char **self_argv;

/* The namespace child's work. */
static int ns_child_main(void) {
  if (rel_write_sysctl("/proc/sys/kernel/pid_max", 400) != 0) return CHILD_NO_PIDMAX;
  outcome_t o;
  int64_t n = (int64_t)rel_env_number("VMT_IDENTITY_NS_LIFETIMES", 500);
  run_targets(n, true, &o);
  publish_outcome("identity_recycled", &o);
  if (o.wrong) {
    fprintf(stderr, "wrong answer: %s\n", o.first_wrong);
    return CHILD_WRONG;
  }
  if (o.tids_repeated == 0) return CHILD_NO_REUSE;
  if (o.forced_reuse == 0) return CHILD_NO_FORCED;
  return CHILD_OK;
}

static void recycled_tids_never_report_the_new_owners_time(void **state) {
  (void)state;
  pid_t outer = fork();
  assert_true(outer >= 0);
  if (outer == 0) {
    /* Between the test and the namespace: unshare affects children only. */
    if (unshare(CLONE_NEWPID) != 0) _exit(100 + errno);
    pid_t inner = fork();
    if (inner < 0) _exit(2);
    if (inner == 0) {
      /* pid 1 of the new namespace: a fresh image of this binary (a fork child of a fork is
       * no place to start threads under TSan), which runs ns_child_main. */
      setenv("VMT_IDENTITY_NS_CHILD", "1", 1);
      execv("/proc/self/exe", self_argv);
      _exit(2);
    }
    int st;
    if (waitpid(inner, &st, 0) != inner) _exit(2);
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
  }
  int status;
  assert_int_equal(waitpid(outer, &status, 0), outer);
  assert_true(WIFEXITED(status));
  int code = WEXITSTATUS(status);
  if (code >= 100 && code < 128) {
    printf("skip: unshare(CLONE_NEWPID) failed (%s): tid recycling needs CAP_SYS_ADMIN\n",
           strerror(code - 100));
    skip();
  }
  if (code == CHILD_NO_PIDMAX) {
    printf("skip: this kernel has no per-namespace pid_max (Linux >= 6.14)\n");
    skip();
  }
  assert_int_equal(code, CHILD_OK);
}

int main(int argc, char **argv) {
  (void)argc;
  self_argv = argv;
  if (getenv("VMT_IDENTITY_NS_CHILD")) return ns_child_main();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(recycled_tids_never_report_the_new_owners_time),
      cmocka_unit_test(sleepers_never_report_someone_elses_time),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
