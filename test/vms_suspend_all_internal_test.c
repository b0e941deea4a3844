/*
 * test/vms_suspend_all_internal_test.c: threads that appear while a vmt_thread_suspend_all is in
 * effect are counted in (ART's ThreadList::Register takes suspend_all_count_): one started, one
 * attached (a foreign thread), one whose start hook enters managed code, each begins suspended,
 * is reported so, runs no managed code until resume_all (an oracle counter bumped right after its
 * entry into managed code), and runs once resume_all has released it. Nested suspend-alls of two
 * callers each count newcomers in and each resume_all releases its own. A storm of starts and
 * attaches against suspend_all/resume_all from two callers leaves no count behind and no thread
 * held. Internal: "waits for its resume" is read from the WAITER bit of the thread's exec word,
 * the point where a thread that will not run managed code has gone to sleep (no timing).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/vmservices/vmservices_impl.h"
#include "test/vms_util.h"

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "vms_suspend_all_internal_test: hung for 120 s\n";
  (void)!write(2, msg, sizeof(msg) - 1);
  abort();
}

static void hang_guard(void) {
  signal(SIGALRM, on_alarm);
  alarm(120);
}

/* A thread that, after its start, tries to run managed code and counts each entry. */
typedef struct newcomer {
  _Atomic(vmt_thread_t *) self;
  _Atomic int count_at_start;   /* its own suspend count, read first thing */
  _Atomic bool ready;           /* about to enter managed code */
  _Atomic int entered;          /* the oracle: entries into managed code */
  _Atomic bool attached_ok;
  _Atomic bool may_detach;
} newcomer_t;

static void newcomer_run(newcomer_t *n) {
  vmt_thread_t *self = vmt_thread_current();
  atomic_store(&n->count_at_start, vmt_thread_suspend_count(self));
  atomic_store(&n->self, self);
  atomic_store(&n->ready, true);
  vmt_exec_enter(VMT_EXEC_MANAGED);
  atomic_fetch_add(&n->entered, 1);
  vmt_poll(self);
  vmt_exec_enter(VMT_EXEC_NATIVE);
}

static void *newcomer_started(void *arg) {
  newcomer_run(arg);
  return NULL;
}

static void *newcomer_attached(void *arg) {
  newcomer_t *n = arg;
  vmt_thread_t *t = NULL;
  if (vmt_thread_attach(NULL, &t) != 0) return (void *)1;
  atomic_store(&n->attached_ok, true);
  newcomer_run(n);
  while (!atomic_load(&n->may_detach)) sched_yield();
  return (void *)(intptr_t)vmt_thread_detach();
}

/* Until the newcomer has either run managed code (the bug) or gone to sleep in its way out of
 * NATIVE, waiting for its resume (the contract): no timing, one of the two must happen. */
static void await_entered_or_waiting(newcomer_t *n, const char *who) {
  MU_POLL_UNTIL(atomic_load(&n->entered) > 0 ||
                    (atomic_load(&n->ready) &&
                     (atomic_load(&atomic_load(&n->self)->exec) &
                      (VMT__EXEC_WAITER | VMT__EXEC_STATE_MASK)) ==
                         (VMT__EXEC_WAITER | VMT_EXEC_NATIVE)),
                who);
  if (atomic_load(&n->entered) > 0)
    fail_msg("%s: a thread that appeared during a suspend-all ran managed code", who);
}

static bool reported_suspended(vmt_thread_t *t) {
  vmt_thread_info_t *info = mu_info_of(vmt_thread_id(t), 0);
  bool s = info != NULL && info->suspended;
  vmt_mx_thread_info_free(info);
  return s;
}

static void newcomers_begin_suspended_and_run_after_resume_all(void **state) {
  (void)state;
  hang_guard();
  assert_int_equal(vmt_thread_suspend_all(VMT_SUSPEND_DEBUGGER, 10 * VMS_SECOND, NULL), 0);
  newcomer_t started = {0}, attached = {0};
  vmt_thread_t *t = mu_start(newcomer_started, &started);
  /* Counted in as it registered: suspended before it has run a single instruction. */
  assert_int_equal(vmt_thread_suspend_count(t), 1);
  assert_true(reported_suspended(t));
  pthread_t foreign;
  assert_int_equal(pthread_create(&foreign, NULL, newcomer_attached, &attached), 0);
  await_entered_or_waiting(&started, "the started newcomer");
  await_entered_or_waiting(&attached, "the attached newcomer");
  assert_int_equal(atomic_load(&started.count_at_start), 1);
  assert_int_equal(atomic_load(&attached.count_at_start), 1);
  vmt_thread_t *a = atomic_load(&attached.self);
  assert_int_equal(vmt_thread_suspend_count(a), 1);
  assert_true(reported_suspended(a));
  /* Both, and nobody else (the caller excepted). */
  assert_int_equal(vmt_thread_resume_all(VMT_SUSPEND_DEBUGGER), 2);
  MU_POLL_UNTIL(atomic_load(&started.entered) == 1 && atomic_load(&attached.entered) == 1,
                "both newcomers to run managed code once resumed");
  assert_int_equal(vmt_thread_suspend_count(a), 0);
  atomic_store(&attached.may_detach, true);
  mu_join(t);
  void *rc = (void *)1;
  assert_int_equal(pthread_join(foreign, &rc), 0);
  assert_null(rc);
  /* Over: a thread started now runs at once. */
  newcomer_t later = {0};
  t = mu_start(newcomer_started, &later);
  assert_int_equal(vmt_thread_suspend_count(t), 0);
  mu_join(t);
  assert_int_equal(atomic_load(&later.entered), 1);
}

/* The newcomer's own start hook (JVMTI ThreadStart) runs, in native code; the hook's entry into
 * managed code is where it stops. */
static newcomer_t hook_nc;
static _Atomic bool hook_armed;
static void start_hook(vmt_thread_t *t, void *ctx) {
  (void)t, (void)ctx;
  if (atomic_exchange(&hook_armed, false)) newcomer_run(&hook_nc);
}
static void *nothing(void *arg) { return arg; }

static void a_newcomer_stops_in_its_start_hook_at_managed_code(void **state) {
  (void)state;
  hang_guard();
  memset(&hook_nc, 0, sizeof(hook_nc));
  assert_int_equal(vmt_thread_hooks_add(start_hook, NULL, NULL), 0);
  assert_int_equal(vmt_thread_suspend_all(VMT_SUSPEND_VM, 10 * VMS_SECOND, NULL), 0);
  atomic_store(&hook_armed, true);
  vmt_thread_t *t = mu_start(nothing, NULL);
  await_entered_or_waiting(&hook_nc, "the newcomer's start hook");
  assert_int_equal(atomic_load(&hook_nc.count_at_start), 1);
  assert_int_equal(vmt_thread_resume_all(VMT_SUSPEND_VM), 1);
  MU_POLL_UNTIL(atomic_load(&hook_nc.entered) == 1, "the hook to run managed code once resumed");
  mu_join(t);
  assert_int_equal(vmt_thread_hooks_remove(start_hook, NULL, NULL), 0);
}

/* Two callers, nested: each suspend-all counts newcomers in, each resume_all releases one. */
typedef struct caller {
  _Atomic int phase;   /* 1: suspend-all; 2 the test asks resume-all; 3 done */
  _Atomic int rc_suspend, rc_resume;
} caller_t;

static void *foreign_caller(void *arg) {
  caller_t *c = arg;
  atomic_store(&c->rc_suspend, vmt_thread_suspend_all(VMT_SUSPEND_USER, 10 * VMS_SECOND, NULL));
  atomic_store(&c->phase, 1);
  while (atomic_load(&c->phase) != 2) sched_yield();
  atomic_store(&c->rc_resume, vmt_thread_resume_all(VMT_SUSPEND_USER));
  atomic_store(&c->phase, 3);
  return NULL;
}

static void nested_suspend_alls_each_count_newcomers_in(void **state) {
  (void)state;
  hang_guard();
  caller_t c1 = {.rc_suspend = 1}, c2 = {.rc_suspend = 1};
  pthread_t p1, p2;
  assert_int_equal(pthread_create(&p1, NULL, foreign_caller, &c1), 0);
  MU_POLL_UNTIL(atomic_load(&c1.phase) == 1, "the first suspend-all");
  assert_int_equal(pthread_create(&p2, NULL, foreign_caller, &c2), 0);
  MU_POLL_UNTIL(atomic_load(&c2.phase) == 1, "the second suspend-all");
  assert_int_equal(atomic_load(&c1.rc_suspend), 0);
  assert_int_equal(atomic_load(&c2.rc_suspend), 0);
  newcomer_t n = {0};
  vmt_thread_t *t = mu_start(newcomer_started, &n);
  assert_int_equal(vmt_thread_suspend_count(t), 2);
  await_entered_or_waiting(&n, "the newcomer under two suspend-alls");
  atomic_store(&c1.phase, 2);
  MU_POLL_UNTIL(atomic_load(&c1.phase) == 3, "the first resume-all");
  /* The main thread (attached) and the newcomer. */
  assert_int_equal(atomic_load(&c1.rc_resume), 2);
  assert_int_equal(vmt_thread_suspend_count(t), 1);
  assert_int_equal(atomic_load(&n.entered), 0);
  atomic_store(&c2.phase, 2);
  MU_POLL_UNTIL(atomic_load(&c2.phase) == 3, "the second resume-all");
  assert_int_equal(atomic_load(&c2.rc_resume), 2);
  MU_POLL_UNTIL(atomic_load(&n.entered) == 1, "the newcomer to run once both resumed");
  assert_int_equal(vmt_thread_suspend_count(vmt_thread_current()), 0);
  mu_join(t);
  pthread_join(p1, NULL);
  pthread_join(p2, NULL);
}

/* ---- Storm ------------------------------------------------------------------------------ */
typedef struct storm {
  _Atomic bool stop;
  _Atomic int failures;
  _Atomic uint64_t born;
  /* Suspend-alls that have returned and not yet been resumed: no thread may be running managed
   * code past a poll or an entry while it is > 0 (suspend_all returned once every thread was
   * safe, and a newcomer begins suspended). */
  _Atomic int in_effect;
  _Atomic int ran_during;   /* the oracle: managed code seen running while in_effect > 0 */
} storm_t;

static void check_not_in_effect(storm_t *s) {
  if (atomic_load(&s->in_effect) > 0) atomic_fetch_add(&s->ran_during, 1);
}

static void *short_managed(void *arg) {
  storm_t *s = arg;
  vmt_thread_t *self = vmt_thread_current();
  vmt_exec_enter(VMT_EXEC_MANAGED);
  check_not_in_effect(s);
  for (int i = 0; i < 20; i++) {
    vmt_poll(self);
    check_not_in_effect(s);
  }
  vmt_exec_enter(VMT_EXEC_NATIVE);
  atomic_fetch_add(&s->born, 1);
  return NULL;
}

static void *start_storm(void *arg) {
  storm_t *s = arg;
  while (!atomic_load(&s->stop)) {
    vmt_thread_t *t = NULL;
    if (vmt_thread_start(&t, short_managed, s) != 0) {
      atomic_fetch_add(&s->failures, 1);
      continue;
    }
    if (vmt_thread_join(t, NULL) != 0 || vmt_thread_release(t) != 0)
      atomic_fetch_add(&s->failures, 1);
  }
  return NULL;
}

static void *attach_storm(void *arg) {
  storm_t *s = arg;
  while (!atomic_load(&s->stop)) {
    vmt_thread_t *t = NULL;
    if (vmt_thread_attach(NULL, &t) != 0) {
      atomic_fetch_add(&s->failures, 1);
      continue;
    }
    short_managed(s);
    if (vmt_thread_detach() != 0) atomic_fetch_add(&s->failures, 1);
  }
  return NULL;
}

typedef struct storm_caller {
  storm_t *s;
  int rounds;
  _Atomic int failures;
} storm_caller_t;

/* A foreign caller: suspend-all, then resume-all, many times. */
static void *suspend_resume_rounds(void *arg) {
  storm_caller_t *c = arg;
  for (int r = 0; r < c->rounds; r++) {
    int rc = vmt_thread_suspend_all(VMT_SUSPEND_VM, 10 * VMS_SECOND, NULL);
    if (rc != 0) {
      atomic_fetch_add(&c->failures, 1);
      continue;
    }
    atomic_fetch_add(&c->s->in_effect, 1);
    sched_yield();   /* a chance for newcomers to try their entry meanwhile */
    atomic_fetch_sub(&c->s->in_effect, 1);
    if (vmt_thread_resume_all(VMT_SUSPEND_VM) < 0) atomic_fetch_add(&c->failures, 1);
  }
  return NULL;
}

static void a_storm_of_newcomers_leaves_no_count_behind(void **state) {
  (void)state;
  hang_guard();
  storm_t s = {0};
  vmt_thread_t *starter[2];
  pthread_t attacher[2], callers[2];
  for (int i = 0; i < 2; i++) starter[i] = mu_start(start_storm, &s);
  for (int i = 0; i < 2; i++)
    assert_int_equal(pthread_create(&attacher[i], NULL, attach_storm, &s), 0);
  MU_POLL_UNTIL(atomic_load(&s.born) > 20, "threads to come and go");
  storm_caller_t c[2];
  for (int i = 0; i < 2; i++) {
    c[i] = (storm_caller_t){.s = &s, .rounds = 2000 / VMS_SCALE_DIVISOR + 20};
    assert_int_equal(pthread_create(&callers[i], NULL, suspend_resume_rounds, &c[i]), 0);
  }
  for (int i = 0; i < 2; i++) pthread_join(callers[i], NULL);
  for (int i = 0; i < 2; i++) assert_int_equal(atomic_load(&c[i].failures), 0);
  /* Every suspend-all was resumed: nobody is held, everybody gets on (a count lost by a
   * newcomer would hold it forever: the joins below would hang). */
  uint64_t born = atomic_load(&s.born);
  MU_POLL_UNTIL(atomic_load(&s.born) > born + 20, "threads to come and go after the rounds");
  atomic_store(&s.stop, true);
  for (int i = 0; i < 2; i++) mu_join(starter[i]);
  for (int i = 0; i < 2; i++) pthread_join(attacher[i], NULL);
  assert_int_equal(atomic_load(&s.failures), 0);
  assert_int_equal(atomic_load(&s.ran_during), 0);
  assert_int_equal(vmt_thread_suspend_count(vmt_thread_current()), 0);
  /* Nothing left for a resume_all: an extra count would show here. */
  assert_int_equal(vmt_thread_resume_all(VMT_SUSPEND_VM), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(newcomers_begin_suspended_and_run_after_resume_all),
      cmocka_unit_test(a_newcomer_stops_in_its_start_hook_at_managed_code),
      cmocka_unit_test(nested_suspend_alls_each_count_newcomers_in),
      cmocka_unit_test(a_storm_of_newcomers_leaves_no_count_behind),
  };
  /* VMS_SA_FILTER names one test (cmocka's pattern): a failure in one leaves suspensions and
   * threads behind that would fail the next ones too. */
  const char *filter = getenv("VMS_SA_FILTER");
  if (filter) cmocka_set_test_filter(filter);
  return cmocka_run_group_tests(tests, mu_attach_main, mu_detach_main);
}
