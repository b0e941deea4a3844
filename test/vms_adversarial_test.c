/*
 * test/vms_adversarial_test.c: the VM services under the calls and the events an outside user
 * can combine with them: a cancellation pending while a handshake operation runs (on its target
 * or on a requester processing for a safe target), a second safepoint begun with a timeout
 * while another one holds, a foreign coordinator that attaches or ends while holding its
 * safepoint, stale handles and bad arguments to every call. Scenarios that would leave a
 * safepoint held for good if the runtime got them wrong run in a process of their own, so that
 * a failure fails one test and not every later one. Every test runs under a hang guard.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "test/vms_util.h"

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "vms_adversarial_test: hang guard expired (a call never returned)\n";
  ssize_t n = write(2, msg, sizeof(msg) - 1);
  (void)n;
  _exit(70);
}

static void hang_guard(void) {
  signal(SIGALRM, on_alarm);
  alarm(60);
}

/* Runs a scenario in a process of its own (this binary executed again, VMS_ADV_CHILD naming
 * it, as test/cancellation_test.c does; a fork child could not start threads under the
 * sanitizers): its exit status is 0 for success. */
static void run_in_child(const char *name, const char *what) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    setenv("VMS_ADV_CHILD", name, 1);
    execl("/proc/self/exe", "vms_adversarial_test", (char *)NULL);
    _exit(99);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail_msg("%s: child status 0x%x (exit code %d)", what, status,
             WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* ---- cancellation inside a handshake operation ------------------------------------------ *
 * docs/design.md, "Cancellation": a call is a cancellation point that leaves the runtime as if
 * it had not been made, or none at all; vmt_poll, the transitions and the handshake calls are
 * none. A handshake operation is the VM's code, and may reach a cancellation point (a write to
 * a log, as a stack walker may: the walk turns cancellation off for it). */
typedef struct op_count {
  _Atomic int entered;
  _Atomic int completed;
} op_count_t;

static void op_with_cancellation_point(vmt_thread_t *target, void *arg) {
  (void)target;
  op_count_t *c = arg;
  atomic_fetch_add(&c->entered, 1);
  pthread_testcancel();
  atomic_fetch_add(&c->completed, 1);
}

typedef struct cancelled_poller {
  _Atomic bool running;
  _Atomic bool may_end;
  _Atomic bool reached_end;
} cancelled_poller_t;

/* In managed code with a cancellation pending, polling (no cancellation point) until told. */
static void *poll_cancelled(void *arg) {
  cancelled_poller_t *p = arg;
  vmt_thread_t *self = vmt_thread_current();
  pthread_cancel(pthread_self());
  vmt_exec_enter(VMT_EXEC_MANAGED);
  atomic_store(&p->running, true);
  while (!atomic_load(&p->may_end)) vmt_poll(self);
  vmt_exec_enter(VMT_EXEC_NATIVE);
  atomic_store(&p->reached_end, true);
  pthread_testcancel();   /* the cancellation acts here */
  return NULL;
}

static void a_cancellation_is_not_acted_upon_inside_an_operation_on_its_target(void **state) {
  (void)state;
  hang_guard();
  cancelled_poller_t p = {0};
  vmt_thread_t *t = mu_start(poll_cancelled, &p);
  MU_POLL_UNTIL(atomic_load(&p.running), "the target to run managed code");
  op_count_t c = {0};
  vmt_handshake_result_t res;
  /* The target runs it at its poll: the operation completes, and the call returns. */
  assert_int_equal(vmt_handshake_run(t, op_with_cancellation_point, &c, 0, &res), 0);
  assert_true(res.by_target);
  assert_int_equal(atomic_load(&c.entered), 1);
  assert_int_equal(atomic_load(&c.completed), 1);
  /* The target goes on, and is cancelled at its own next cancellation point. */
  atomic_store(&p.may_end, true);
  mu_join(t);
  assert_true(atomic_load(&p.reached_end));
}

typedef struct cancelled_requester {
  vmt_thread_t *target;
  op_count_t ops;
  _Atomic bool returned;
  _Atomic int rc;
} cancelled_requester_t;

/* A foreign thread, cancellation pending, handshakes a parked (safe) thread: it runs the
 * operation itself, on the target's behalf. */
static void *request_cancelled(void *arg) {
  cancelled_requester_t *r = arg;
  pthread_cancel(pthread_self());
  /* No local whose address is taken: ASan's redzones of a frame the cancellation unwinds stay
   * poisoned, and the thread's own teardown then writes there. */
  atomic_store(&r->rc, vmt_handshake_run(r->target, op_with_cancellation_point, &r->ops, 0, NULL));
  atomic_store(&r->returned, true);
  pthread_testcancel();
  return NULL;
}

static void a_cancellation_is_not_acted_upon_inside_an_operation_run_on_behalf(void **state) {
  (void)state;
  hang_guard();
  parker_t p;
  parker_start(&p);
  cancelled_requester_t r = {.target = p.thread, .rc = 1};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, request_cancelled, &r), 0);
  void *res = NULL;
  assert_int_equal(pthread_join(th, &res), 0);
  assert_ptr_equal(res, PTHREAD_CANCELED);
  assert_true(atomic_load(&r.returned));
  assert_int_equal(atomic_load(&r.rc), 0);
  assert_int_equal(atomic_load(&r.ops.completed), 1);
  /* Nothing is left held: a safepoint is reached, and the parked thread can leave. */
  vmt_safepoint_stats_t st;
  assert_int_equal(vmt_safepoint_begin(5 * VMS_SECOND, &st), 0);
  assert_int_equal(vmt_safepoint_end(NULL), 0);
  parker_stop(&p);
}

/* ---- a begin with a timeout while another safepoint holds -------------------------------- *
 * vmthread/vmservices.h: "Every wait has a timeout (0 = none), and a timed-out request names
 * the thread it waited for"; a second begin "waits, safe, for the first to end". */
typedef struct holder {
  _Atomic bool holding;
  _Atomic bool release;
  _Atomic int begin_rc;
  _Atomic int end_rc;
} holder_t;

static void *hold_safepoint(void *arg) {
  holder_t *h = arg;
  atomic_store(&h->begin_rc, vmt_safepoint_begin(0, NULL));
  atomic_store(&h->holding, true);
  /* Until told, or 3 s: a begin that ignores its timeout then returns, and is caught. */
  int64_t deadline = test_clock_ns(CLOCK_MONOTONIC) + 3 * VMS_SECOND;
  while (!atomic_load(&h->release) && test_clock_ns(CLOCK_MONOTONIC) < deadline) mu_pause_1ms();
  atomic_store(&h->end_rc, vmt_safepoint_end(NULL));
  return NULL;
}

static void a_begin_times_out_while_another_safepoint_holds(void **state) {
  (void)state;
  hang_guard();
  holder_t h = {0};
  vmt_thread_t *t = mu_start(hold_safepoint, &h);
  MU_POLL_UNTIL(atomic_load(&h.holding), "the other coordinator to hold its safepoint");
  assert_int_equal(atomic_load(&h.begin_rc), 0);
  vmt_safepoint_stats_t st;
  int rc = vmt_safepoint_begin(20 * MU_MS, &st);
  bool released_first = atomic_load(&h.release);
  atomic_store(&h.release, true);
  if (rc == 0) vmt_safepoint_end(NULL);
  mu_join(t);
  assert_int_equal(atomic_load(&h.end_rc), 0);
  assert_false(released_first);
  assert_int_equal(rc, -ETIMEDOUT);
  /* The thread it waited for: the coordinator of the safepoint that held. */
  assert_int_equal(st.straggler.thread_id, vmt_thread_id(t));
  assert_false(vmt_safepoint_in_progress());
}

/* ---- foreign coordinators ---------------------------------------------------------------- *
 * vmthread/vmservices.h: requests "from any thread, runtime or foreign"; "-EPERM unless the
 * caller began the safepoint in progress"; "A coordinator that exits (or detaches) with its
 * safepoint held ends it as it goes." */
static void *begin_attach_end_detach(void *arg) {
  int *rc = arg;
  rc[0] = vmt_safepoint_begin(0, NULL);
  vmt_thread_t *me = NULL;
  rc[1] = vmt_thread_attach(NULL, &me);
  rc[2] = vmt_safepoint_end(NULL);
  rc[3] = vmt_thread_detach();
  return NULL;
}

static int child_foreign_coordinator_attaches(void) {
  int rc[4] = {1, 1, 1, 1};
  pthread_t th;
  if (pthread_create(&th, NULL, begin_attach_end_detach, rc) != 0) return 10;
  if (pthread_join(th, NULL) != 0) return 11;
  if (rc[0] != 0 || rc[1] != 0 || rc[3] != 0) return 12;
  if (rc[2] != 0) {
    fprintf(stderr, "vmt_safepoint_end after an attach by its coordinator: %d\n", rc[2]);
    return 13;
  }
  if (vmt_safepoint_in_progress()) return 14;
  if (vmt_safepoint_begin(VMS_SECOND, NULL) != 0) return 15;
  return vmt_safepoint_end(NULL) == 0 ? 0 : 16;
}

static void a_foreign_coordinator_that_attaches_can_end_its_safepoint(void **state) {
  (void)state;
  hang_guard();
  run_in_child("attaches", "a foreign coordinator attached, then ended");
}

static void *begin_and_return(void *arg) {
  *(int *)arg = vmt_safepoint_begin(0, NULL);
  return NULL;
}

static int child_foreign_coordinator_exits(void) {
  int rc = 1;
  pthread_t th;
  if (pthread_create(&th, NULL, begin_and_return, &rc) != 0) return 10;
  if (pthread_join(th, NULL) != 0) return 11;
  if (rc != 0) return 12;
  if (vmt_safepoint_in_progress()) {
    fprintf(stderr, "a foreign coordinator exited: its safepoint is still in progress\n");
    return 13;
  }
  if (vmt_safepoint_begin(VMS_SECOND, NULL) != 0) return 14;
  return vmt_safepoint_end(NULL) == 0 ? 0 : 15;
}

static void a_foreign_coordinator_that_exits_ends_its_safepoint(void **state) {
  (void)state;
  hang_guard();
  run_in_child("exits", "a foreign coordinator exited");
}

/* ---- stale handles, bad arguments -------------------------------------------------------- */
static void *nothing(void *arg) { return arg; }

static void noop_op(vmt_thread_t *t, void *arg) {
  (void)t;
  (void)arg;
}

static void stale_handles_and_bad_arguments_are_refused(void **state) {
  (void)state;
  hang_guard();
  vmt_thread_t *t = mu_start(nothing, NULL);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  /* Joined, still held: it has exited. */
  assert_int_equal(vmt_exec_state(t), VMT_EXEC_EXITED);
  assert_int_equal(vmt_handshake_run(t, noop_op, NULL, 0, NULL), -ESRCH);
  assert_int_equal(vmt_handshake_post(t, noop_op, NULL), -ESRCH);
  assert_int_equal(vmt_thread_suspend(t, VMT_SUSPEND_VM, 0, NULL), -ESRCH);
  assert_int_equal(vmt_thread_suspend_count(t), 0);
  assert_int_equal(vmt_thread_resume(t, VMT_SUSPEND_VM), -EINVAL);
  assert_int_equal(vmt_thread_release(t), 0);
  /* Released: every call refuses the handle. */
  assert_int_equal(vmt_exec_state(t), -EINVAL);
  assert_null(vmt_poll_word(t));
  assert_int_equal(vmt_handshake_run(t, noop_op, NULL, 0, NULL), -EINVAL);
  assert_int_equal(vmt_handshake_post(t, noop_op, NULL), -EINVAL);
  assert_int_equal(vmt_thread_suspend(t, VMT_SUSPEND_VM, 0, NULL), -EINVAL);
  assert_int_equal(vmt_thread_resume(t, VMT_SUSPEND_VM), -EINVAL);
  assert_int_equal(vmt_thread_suspend_count(t), -EINVAL);
  vmt_poll_slow(t);   /* not the caller's: ignored */

  parker_t p;
  parker_start(&p);
  assert_int_equal(vmt_handshake_run(NULL, noop_op, NULL, 0, NULL), -EINVAL);
  assert_int_equal(vmt_handshake_run(p.thread, NULL, NULL, 0, NULL), -EINVAL);
  assert_int_equal(vmt_handshake_run(p.thread, noop_op, NULL, -1, NULL), -EINVAL);
  assert_int_equal(vmt_handshake_run(p.thread, noop_op, NULL, INT64_MAX, NULL), 0);
  assert_int_equal(vmt_handshake_post(p.thread, NULL, NULL), -EINVAL);
  assert_int_equal(vmt_handshake_run_all(NULL, NULL, 0, NULL), -EINVAL);
  assert_int_equal(vmt_handshake_run_all(noop_op, NULL, -1, NULL), -EINVAL);
  assert_int_equal(vmt_handshake_run_all(noop_op, NULL, INT64_MAX, NULL), 0);
  assert_int_equal(vmt_safepoint_begin(-1, NULL), -EINVAL);
  assert_int_equal(vmt_safepoint_end(NULL), -EPERM);
  assert_int_equal(vmt_safepoint_begin(INT64_MAX, NULL), 0);
  assert_int_equal(vmt_safepoint_begin(0, NULL), -EDEADLK);
  assert_int_equal(vmt_safepoint_end(NULL), 0);
  assert_int_equal(vmt_safepoint_end(NULL), -EPERM);
  assert_int_equal(vmt_thread_suspend(NULL, VMT_SUSPEND_VM, 0, NULL), -EINVAL);
  assert_int_equal(vmt_thread_suspend(p.thread, VMT_SUSPEND_REASON_COUNT, 0, NULL), -EINVAL);
  assert_int_equal(vmt_thread_suspend(p.thread, (vmt_suspend_reason_t)-1, 0, NULL), -EINVAL);
  assert_int_equal(vmt_thread_suspend(p.thread, VMT_SUSPEND_VM, -1, NULL), -EINVAL);
  assert_int_equal(vmt_thread_resume(p.thread, VMT_SUSPEND_VM), -EINVAL);   /* never suspended */
  assert_int_equal(vmt_thread_resume(p.thread, VMT_SUSPEND_REASON_COUNT), -EINVAL);
  assert_int_equal(vmt_thread_suspend(p.thread, VMT_SUSPEND_USER, INT64_MAX, NULL), 0);
  assert_int_equal(vmt_thread_resume(p.thread, VMT_SUSPEND_VM), -EINVAL);   /* another reason */
  assert_int_equal(vmt_thread_suspend_count(p.thread), 1);
  assert_int_equal(vmt_thread_resume(p.thread, VMT_SUSPEND_USER), 0);
  assert_int_equal(vmt_thread_suspend_count(p.thread), 0);
  assert_int_equal(vmt_thread_suspend_count(NULL), -EINVAL);
  assert_int_equal(vmt_thread_suspend_all(VMT_SUSPEND_REASON_COUNT, 0, NULL), -EINVAL);
  assert_int_equal(vmt_thread_suspend_all(VMT_SUSPEND_VM, -1, NULL), -EINVAL);
  assert_int_equal(vmt_thread_resume_all(VMT_SUSPEND_REASON_COUNT), -EINVAL);
  /* From a foreign thread, transitions are refused. */
  assert_int_equal(vmt_exec_enter(VMT_EXEC_MANAGED), -EPERM);
  assert_int_equal(vmt_exec_state(NULL), -EINVAL);
  assert_string_equal(vmt_exec_state_name((vmt_exec_state_t)99), "UNKNOWN");
  parker_stop(&p);
}

static const struct {
  const char *name;
  int (*body)(void);
} children[] = {
    {"attaches", child_foreign_coordinator_attaches},
    {"exits", child_foreign_coordinator_exits},
};

int main(void) {
  const char *child = getenv("VMS_ADV_CHILD");
  if (child) {
    alarm(30);
    for (size_t i = 0; i < sizeof(children) / sizeof(children[0]); i++)
      if (strcmp(children[i].name, child) == 0) return children[i].body();
    return 98;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_cancellation_is_not_acted_upon_inside_an_operation_on_its_target),
      cmocka_unit_test(a_cancellation_is_not_acted_upon_inside_an_operation_run_on_behalf),
      cmocka_unit_test(a_begin_times_out_while_another_safepoint_holds),
      cmocka_unit_test(a_foreign_coordinator_that_attaches_can_end_its_safepoint),
      cmocka_unit_test(a_foreign_coordinator_that_exits_ends_its_safepoint),
      cmocka_unit_test(stale_handles_and_bad_arguments_are_refused),
  };
  /* VMS_ADV_FILTER names one test (cmocka's pattern): a hang guard ends the whole binary. */
  const char *filter = getenv("VMS_ADV_FILTER");
  if (filter) cmocka_set_test_filter(filter);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
