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
#include <time.h>

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

static void noop_op(vmt_thread_t *t, void *arg) {
  (void)t;
  (void)arg;
}

/* ---- timeouts of the all-threads calls ------------------------------------------------- *
 * vmthread/vmservices.h: run_all's "-ETIMEDOUT (those that had not run it by then never will;
 * the straggler is one of them)"; suspend_all's "On -ETIMEDOUT every count taken is taken
 * back". A mutator that does not poll is the one straggler among threads that answer. */
static void all_thread_timeouts_name_the_one_that_did_not_poll(void **state) {
  (void)state;
  hang_guard();
  mutator_t quiet, polling;
  mutator_start(&quiet, false);
  mutator_start(&polling, true);
  parker_t p;
  parker_start(&p);

  probe_t pr = {0};
  vmt_handshake_result_t res;
  assert_int_equal(vmt_handshake_run_all(probe_fn, &pr, 30 * MU_MS, &res), -ETIMEDOUT);
  assert_int_equal(res.straggler.thread_id, vmt_thread_id(quiet.thread));
  assert_int_equal(res.straggler.exec_state, VMT_EXEC_MANAGED);
  int ran = atomic_load(&pr.calls);
  assert_int_equal(ran, res.by_targets + res.by_requester);
  /* The straggler polls again: the operation taken back never runs. */
  atomic_store(&quiet.poll, true);
  uint64_t before = atomic_load(&quiet.iterations);
  MU_POLL_UNTIL(atomic_load(&quiet.iterations) > before + 1000, "the straggler to poll");
  assert_int_equal(vmt_handshake_run(quiet.thread, noop_op, NULL, 0, NULL), 0);
  assert_int_equal(atomic_load(&pr.calls), ran);
  atomic_store(&quiet.poll, false);

  vmt_straggler_t sg;
  /* Wait until the quiet one is surely past its last poll: a no-poll loop turn is all it does. */
  before = atomic_load(&quiet.iterations);
  MU_POLL_UNTIL(atomic_load(&quiet.iterations) > before + 1000, "the quiet mutator to run");
  assert_int_equal(vmt_thread_suspend_all(VMT_SUSPEND_DEBUGGER, 30 * MU_MS, &sg), -ETIMEDOUT);
  assert_int_equal(sg.thread_id, vmt_thread_id(quiet.thread));
  assert_int_equal(sg.exec_state, VMT_EXEC_MANAGED);
  assert_true(sg.waited_ns > 0);
  /* Every count was taken back: the safe and the polling threads run on too. */
  assert_int_equal(vmt_thread_suspend_count(quiet.thread), 0);
  assert_int_equal(vmt_thread_suspend_count(polling.thread), 0);
  assert_int_equal(vmt_thread_suspend_count(p.thread), 0);
  before = atomic_load(&polling.iterations);
  MU_POLL_UNTIL(atomic_load(&polling.iterations) > before, "the polling mutator to go on");
  assert_int_equal(vmt_thread_resume_all(VMT_SUSPEND_DEBUGGER), 0);

  mutator_stop(&quiet);
  mutator_stop(&polling);
  parker_stop(&p);
}

/* ---- suspend-all while threads start and end -------------------------------------------- */
typedef struct churn {
  _Atomic bool stop;
  _Atomic uint64_t started;
  _Atomic int failures;
} churn_t;

static void *short_managed_life(void *arg) {
  (void)arg;
  vmt_thread_t *self = vmt_thread_current();
  vmt_exec_enter(VMT_EXEC_MANAGED);
  for (int i = 0; i < 100; i++) vmt_poll(self);
  vmt_exec_enter(VMT_EXEC_NATIVE);
  return NULL;
}

/* Starts and joins short-lived threads in managed code until told (a runtime thread: its
 * joins are safe regions, and it may itself be suspended between them). */
static void *churn_threads(void *arg) {
  churn_t *c = arg;
  while (!atomic_load(&c->stop)) {
    vmt_thread_t *t = NULL;
    if (vmt_thread_start(&t, short_managed_life, NULL) != 0) {
      atomic_fetch_add(&c->failures, 1);
      continue;
    }
    atomic_fetch_add(&c->started, 1);
    if (vmt_thread_join(t, NULL) != 0 || vmt_thread_release(t) != 0)
      atomic_fetch_add(&c->failures, 1);
  }
  return NULL;
}

static void suspend_all_while_threads_start_and_end(void **state) {
  (void)state;
  hang_guard();
  churn_t c = {0};
  vmt_thread_t *churner[2];
  for (int i = 0; i < 2; i++) churner[i] = mu_start(churn_threads, &c);
  MU_POLL_UNTIL(atomic_load(&c.started) > 10, "threads to come and go");
  int rounds = 200 / VMS_SCALE_DIVISOR + 10;
  for (int r = 0; r < rounds; r++) {
    vmt_straggler_t sg;
    assert_int_equal(vmt_thread_suspend_all(VMT_SUSPEND_VM, 10 * VMS_SECOND, &sg), 0);
    /* Both churners are suspended now (they were alive at the call). */
    assert_true(vmt_thread_suspend_count(churner[0]) >= 1);
    assert_true(vmt_thread_suspend_count(churner[1]) >= 1);
    assert_true(vmt_thread_resume_all(VMT_SUSPEND_VM) >= 2);
    assert_int_equal(vmt_thread_suspend_count(churner[0]), 0);
    assert_int_equal(vmt_thread_suspend_count(churner[1]), 0);
  }
  atomic_store(&c.stop, true);
  for (int i = 0; i < 2; i++) mu_join(churner[i]);
  assert_int_equal(atomic_load(&c.failures), 0);
}

/* ---- exits ------------------------------------------------------------------------------ */
typedef struct ender {
  native_reader_t reader;
  _Atomic bool in_fn;
  _Atomic bool fn_may_return;
  _Atomic int state_seen_in_fn;   /* the target's state at the end of fn */
} ender_t;

static void hold_in_fn(vmt_thread_t *target, void *arg) {
  ender_t *e = arg;
  atomic_store(&e->in_fn, true);
  while (!atomic_load(&e->fn_may_return)) sched_yield();
  atomic_store(&e->state_seen_in_fn, vmt_exec_state(target));
}

typedef struct requester_arg {
  ender_t *e;
  vmt_thread_t *target;
  _Atomic int rc;
} requester_arg_t;

static void *request_hold(void *arg) {
  requester_arg_t *r = arg;
  atomic_store(&r->rc, vmt_handshake_run(r->target, hold_in_fn, r->e, 0, NULL));
  return NULL;
}

/* A thread in native code that ends (its read returns, its body returns) while a requester
 * runs an operation on its behalf: it does not become EXITED before the operation returns
 * (docs/vm-services.md: the target cannot leave its safe state until fn returns, and cannot exit
 * during it). A suspended thread that ends waits until resumed before it exits. */
static void a_thread_does_not_exit_under_an_operation_or_while_suspended(void **state) {
  (void)state;
  hang_guard();
  ender_t e = {.state_seen_in_fn = -1};
  reader_start(&e.reader);
  requester_arg_t r = {.e = &e, .target = e.reader.thread, .rc = 1};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, request_hold, &r), 0);
  MU_POLL_UNTIL(atomic_load(&e.in_fn), "the operation to run");
  reader_feed(&e.reader);   /* the body returns now, while fn runs on its behalf */
  MU_POLL_UNTIL(atomic_load(&e.reader.phase) == 2, "the reader's read to return");
  for (int i = 0; i < 20; i++) mu_pause_1ms();
  assert_int_not_equal(vmt_exec_state(e.reader.thread), VMT_EXEC_EXITED);
  atomic_store(&e.fn_may_return, true);
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_int_equal(atomic_load(&r.rc), 0);
  assert_int_not_equal(atomic_load(&e.state_seen_in_fn), VMT_EXEC_EXITED);
  reader_stop(&e.reader);

  /* Suspended in native code, then ends: not before its resume. */
  native_reader_t rd;
  reader_start(&rd);
  assert_int_equal(vmt_thread_suspend(rd.thread, VMT_SUSPEND_USER, 0, NULL), 0);
  reader_feed(&rd);
  MU_POLL_UNTIL(atomic_load(&rd.phase) == 2, "the reader's read to return");
  assert_int_equal(vmt_thread_timed_join(rd.thread, 20 * MU_MS, NULL), -ETIMEDOUT);
  assert_int_equal(vmt_exec_state(rd.thread), VMT_EXEC_NATIVE);
  assert_int_equal(vmt_thread_resume(rd.thread, VMT_SUSPEND_USER), 0);
  reader_stop(&rd);
}

/* ---- signals during transitions ---------------------------------------------------------- *
 * A signal handler that reads the thread's state (async-signal-safe) while the thread moves in
 * and out of managed code, and a suspended thread hit by signals while it waits: it stays. */
static vmt_thread_t *_Atomic sig_target;
static _Atomic int sig_bad_states;
static _Atomic int sig_seen;

static void read_state_in_handler(int sig) {
  (void)sig;
  int s = vmt_exec_state(atomic_load(&sig_target));
  if (s < VMT_EXEC_NATIVE || s > VMT_EXEC_BLOCKED) atomic_fetch_add(&sig_bad_states, 1);
  atomic_fetch_add(&sig_seen, 1);
}

typedef struct commuter {
  _Atomic bool stop;
  _Atomic bool ready;
  _Atomic uint64_t turns;
  pthread_t pthread;
} commuter_t;

static void *commute(void *arg) {
  commuter_t *c = arg;
  vmt_thread_t *self = vmt_thread_current();
  c->pthread = pthread_self();
  atomic_store(&sig_target, self);
  atomic_store(&c->ready, true);
  while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
    vmt_exec_enter(VMT_EXEC_MANAGED);
    vmt_poll(self);
    vmt_exec_enter(VMT_EXEC_VM);
    vmt_exec_enter(VMT_EXEC_BLOCKED);
    vmt_exec_enter(VMT_EXEC_NATIVE);
    atomic_fetch_add_explicit(&c->turns, 1, memory_order_relaxed);
  }
  return NULL;
}

static void signals_during_transitions_and_a_suspension(void **state) {
  (void)state;
  hang_guard();
  struct sigaction sa = {0}, old;
  sa.sa_handler = read_state_in_handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;   /* no SA_RESTART: interrupted futex waits must be re-issued */
  assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
  commuter_t c = {0};
  vmt_thread_t *t = mu_start(commute, &c);
  MU_POLL_UNTIL(atomic_load(&c.ready), "the commuter to start");
  for (int i = 0; i < 2000 / VMS_SCALE_DIVISOR; i++) {
    assert_int_equal(pthread_kill(c.pthread, SIGUSR1), 0);
    if (i % 50 == 0) {
      assert_int_equal(vmt_thread_suspend(t, VMT_SUSPEND_VM, 0, NULL), 0);
      uint64_t turns = atomic_load(&c.turns);
      for (int k = 0; k < 20; k++) {
        assert_int_equal(pthread_kill(c.pthread, SIGUSR1), 0);
        sched_yield();
      }
      /* Woken by signals, it stays where a suspension holds it (one turn may finish: the
       * suspension may have found it in a safe state just before its NATIVE step). */
      assert_true(atomic_load(&c.turns) <= turns + 1);
      assert_int_equal(vmt_thread_resume(t, VMT_SUSPEND_VM), 0);
    }
  }
  MU_POLL_UNTIL(atomic_load(&sig_seen) > 0, "a signal to be handled");
  atomic_store(&c.stop, true);
  mu_join(t);
  assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
  assert_int_equal(atomic_load(&sig_bad_states), 0);
}

/* ---- a requester whose operation runs on a target that blocks inside it ---------------- *
 * vmthread/vmservices.h: "The requester waits in a safe state: a short bounded spin (...),
 * then a futex". The target runs fn itself at its poll, and fn brackets a blocking call of its
 * own (vmt_exec_enter(BLOCKED) and back); meanwhile another thread posts an asynchronous
 * operation to the target, so the target shows a safe state with work queued, none of it the
 * requester's, and a signal wakes the requester. It must sleep again until fn completes, not
 * spin on the target. */
typedef struct blocking_op {
  _Atomic bool in_fn;
  _Atomic bool posted;
  _Atomic int64_t requester_cpu_ns;
  _Atomic int rc;
  vmt_thread_t *target;
} blocking_op_t;

static int64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * VMS_SECOND + ts.tv_nsec;
}

static void block_inside(vmt_thread_t *target, void *arg) {
  (void)target;
  blocking_op_t *b = arg;
  int prev = vmt_exec_enter(VMT_EXEC_BLOCKED);
  atomic_store(&b->in_fn, true);
  while (!atomic_load(&b->posted)) sched_yield();
  struct timespec ts = {0, 200 * 1000 * 1000};   /* the host's blocking call */
  nanosleep(&ts, NULL);
  vmt_exec_enter((vmt_exec_state_t)prev);
}

static void *request_blocking(void *arg) {
  blocking_op_t *b = arg;
  int64_t cpu = thread_cpu_ns();
  atomic_store(&b->rc, vmt_handshake_run(b->target, block_inside, b, 0, NULL));
  atomic_store(&b->requester_cpu_ns, thread_cpu_ns() - cpu);
  return NULL;
}

static void ignore_signal(int sig) { (void)sig; }

static void a_requester_sleeps_while_its_operation_blocks_on_the_target(void **state) {
  (void)state;
  hang_guard();
  mutator_t m;
  mutator_start(&m, true);
  blocking_op_t b = {.target = m.thread, .rc = 1};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, request_blocking, &b), 0);
  MU_POLL_UNTIL(atomic_load(&b.in_fn), "the operation to block on its target");
  probe_t pr = {0};
  assert_int_equal(vmt_handshake_post(m.thread, probe_fn, &pr), 0);
  /* A signal wakes the requester from its futex (a profiler's, a SIGQUIT dump's): it must go
   * back to sleep. */
  struct sigaction sa = {0}, old;
  sa.sa_handler = ignore_signal;
  sigemptyset(&sa.sa_mask);
  assert_int_equal(sigaction(SIGUSR2, &sa, &old), 0);
  for (int i = 0; i < 20; i++) mu_pause_1ms();
  assert_int_equal(pthread_kill(th, SIGUSR2), 0);
  atomic_store(&b.posted, true);
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_int_equal(sigaction(SIGUSR2, &old, NULL), 0);
  assert_int_equal(atomic_load(&b.rc), 0);
  /* 200 ms of waiting: a spin of microseconds, then a sleep; not 200 ms on a CPU. */
  int64_t cpu = atomic_load(&b.requester_cpu_ns);
  print_message("requester CPU while fn blocked 200 ms: %lld us\n", (long long)(cpu / 1000));
  assert_true(cpu < 100 * MU_MS);
  MU_POLL_UNTIL(atomic_load(&pr.calls) == 1, "the posted operation to run");
  mutator_stop(&m);
}

/* ---- a suspended monitor contender -------------------------------------------------------- *
 * docs/vm-services.md: "A thread woken there that must stay (a safepoint holds, it is
 * suspended) first passes the wake-up it was given on to another sleeper of the same word, so a
 * monitor hand-off is never kept by a thread that cannot take the monitor." */
typedef struct contender {
  vmt_monitor_t *m;
  _Atomic bool entered;
  vmt_thread_t *thread;
} contender_t;

static void *contend_managed(void *arg) {
  contender_t *c = arg;
  vmt_exec_enter(VMT_EXEC_MANAGED);
  vmt_monitor_enter(c->m);
  atomic_store(&c->entered, true);
  vmt_monitor_exit(c->m);
  vmt_exec_enter(VMT_EXEC_NATIVE);
  return NULL;
}

static void a_suspended_contender_does_not_keep_the_monitor_from_the_next(void **state) {
  (void)state;
  hang_guard();
  vmt_monitor_t *m;
  assert_int_equal(vmt_monitor_create(&m, "adv-contended"), 0);
  assert_int_equal(vmt_monitor_enter(m), 0);
  contender_t c[2] = {{.m = m}, {.m = m}};
  vmt_monitor_stats_t st;
  for (int i = 0; i < 2; i++) {
    c[i].thread = mu_start(contend_managed, &c[i]);
    MU_POLL_UNTIL(vmt_monitor_get_stats(m, &st) == 0 && st.entry_waiters == (uint32_t)i + 1,
                  "the contender to block");
  }
  /* Both sleep on the monitor; suspend each in turn while the other must get it. */
  assert_int_equal(vmt_thread_suspend(c[0].thread, VMT_SUSPEND_DEBUGGER, 0, NULL), 0);
  assert_int_equal(vmt_monitor_exit(m), 0);
  MU_POLL_UNTIL(atomic_load(&c[1].entered), "the contender that is not suspended to enter");
  assert_false(atomic_load(&c[0].entered));
  assert_int_equal(vmt_thread_resume(c[0].thread, VMT_SUSPEND_DEBUGGER), 0);
  MU_POLL_UNTIL(atomic_load(&c[0].entered), "the resumed contender to enter");
  mu_join(c[0].thread);
  mu_join(c[1].thread);
  assert_int_equal(vmt_monitor_destroy(m), 0);
}

/* ---- a cancellation of a suspended thread in native code -------------------------------- *
 * Cancelled inside read(2) while suspended: it unwinds (native code runs on), and its exit path,
 * VM code, waits for the resume: no suspended thread exits. */
typedef struct cancel_reader {
  int fds[2];
  pthread_t pthread;
  _Atomic bool reading;
} cancel_reader_t;

static void *read_until_cancelled(void *arg) {
  cancel_reader_t *r = arg;
  r->pthread = pthread_self();
  atomic_store(&r->reading, true);
  char ch;
  for (;;) {
    ssize_t n = read(r->fds[0], &ch, 1);   /* a cancellation point */
    (void)n;
  }
  return NULL;
}

static void a_suspended_thread_cancelled_in_native_code_exits_only_once_resumed(void **state) {
  (void)state;
  hang_guard();
  cancel_reader_t r = {0};
  assert_int_equal(pipe(r.fds), 0);
  vmt_thread_t *t = mu_start(read_until_cancelled, &r);
  MU_POLL_UNTIL(atomic_load(&r.reading), "the reader to block in read");
  assert_int_equal(vmt_thread_suspend(t, VMT_SUSPEND_USER, 0, NULL), 0);
  assert_int_equal(pthread_cancel(r.pthread), 0);
  assert_int_equal(vmt_thread_timed_join(t, 50 * MU_MS, NULL), -ETIMEDOUT);
  assert_int_not_equal(vmt_exec_state(t), VMT_EXEC_EXITED);
  assert_int_equal(vmt_thread_suspend_count(t), 1);
  assert_int_equal(vmt_thread_resume(t, VMT_SUSPEND_USER), 0);
  void *res = NULL;
  assert_int_equal(vmt_thread_join(t, &res), 0);
  assert_ptr_equal(res, PTHREAD_CANCELED);
  assert_int_equal(vmt_exec_state(t), VMT_EXEC_EXITED);
  assert_int_equal(vmt_thread_release(t), 0);
  close(r.fds[0]);
  close(r.fds[1]);
}

/* ---- stale handles, bad arguments -------------------------------------------------------- */
static void *nothing(void *arg) { return arg; }

/* An attached thread that retains its handle, detaches, and leaves the handle behind. */
static void *attach_retain_detach(void *arg) {
  vmt_thread_t **out = arg;
  vmt_thread_t *me = NULL;
  if (vmt_thread_attach(NULL, &me) != 0 || vmt_thread_retain(me) != 0) return NULL;
  vmt_thread_detach();
  *out = me;
  return NULL;
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
  /* Not alive, as the suspend said (it was -EINVAL, "no count", before exiting threads were
   * refused: the same answer as a resume without its suspend on a live thread). */
  assert_int_equal(vmt_thread_resume(t, VMT_SUSPEND_VM), -ESRCH);
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

  /* A detached thread's handle, still retained, then released (the thread itself lives on). */
  vmt_thread_t *d = NULL;
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, attach_retain_detach, &d), 0);
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_non_null(d);
  assert_int_equal(vmt_exec_state(d), VMT_EXEC_EXITED);
  assert_int_equal(vmt_handshake_run(d, noop_op, NULL, 0, NULL), -ESRCH);
  assert_int_equal(vmt_handshake_post(d, noop_op, NULL), -ESRCH);
  assert_int_equal(vmt_thread_suspend(d, VMT_SUSPEND_DEBUGGER, 0, NULL), -ESRCH);
  assert_int_equal(vmt_thread_suspend_count(d), 0);
  assert_int_equal(vmt_thread_resume(d, VMT_SUSPEND_DEBUGGER), -ESRCH);
  assert_int_equal(vmt_thread_release(d), 0);
  assert_int_equal(vmt_exec_state(d), -EINVAL);
  assert_int_equal(vmt_handshake_run(d, noop_op, NULL, 0, NULL), -EINVAL);
  assert_int_equal(vmt_thread_suspend(d, VMT_SUSPEND_DEBUGGER, 0, NULL), -EINVAL);
  assert_int_equal(vmt_thread_resume(d, VMT_SUSPEND_DEBUGGER), -EINVAL);

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

/* ---- a safepoint begun from inside a handshake operation --------------------------------- *
 * docs/vm-services.md ("Who may call what"): no request from inside an operation. A begin there
 * can never succeed (a processor on behalf of a safe thread is what a begin waits out; a target
 * running its own operation holds the handshake it is in): it must answer -EDEADLK at once,
 * whatever its timeout, not wait out its timeout or hang with none. */
typedef struct nested_begin {
  _Atomic int rc;
  _Atomic int ran;
} nested_begin_t;

static void begin_inside(vmt_thread_t *target, void *arg) {
  (void)target;
  nested_begin_t *b = arg;
  int rc = vmt_safepoint_begin(0, NULL);
  if (rc == 0) vmt_safepoint_end(NULL);
  atomic_store(&b->rc, rc);
  atomic_fetch_add(&b->ran, 1);
}

static void a_safepoint_begun_inside_an_operation_is_refused(void **state) {
  (void)state;
  hang_guard();
  /* Run by the requester on behalf of a parked target. */
  parker_t p;
  parker_start(&p);
  nested_begin_t b = {.rc = 1};
  vmt_handshake_result_t res;
  assert_int_equal(vmt_handshake_run(p.thread, begin_inside, &b, 10 * VMS_SECOND, &res), 0);
  assert_false(res.by_target);
  assert_int_equal(atomic_load(&b.ran), 1);
  assert_int_equal(atomic_load(&b.rc), -EDEADLK);
  parker_stop(&p);
  /* Run by a target in managed code, at its poll. */
  mutator_t m;
  mutator_start(&m, true);
  nested_begin_t c = {.rc = 1};
  assert_int_equal(vmt_handshake_run(m.thread, begin_inside, &c, 10 * VMS_SECOND, &res), 0);
  assert_true(res.by_target);
  assert_int_equal(atomic_load(&c.ran), 1);
  assert_int_equal(atomic_load(&c.rc), -EDEADLK);
  mutator_stop(&m);
  /* Nothing is left held. */
  assert_false(vmt_safepoint_in_progress());
  assert_int_equal(vmt_safepoint_begin(5 * VMS_SECOND, NULL), 0);
  assert_int_equal(vmt_safepoint_end(NULL), 0);
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
      cmocka_unit_test(all_thread_timeouts_name_the_one_that_did_not_poll),
      cmocka_unit_test(suspend_all_while_threads_start_and_end),
      cmocka_unit_test(a_thread_does_not_exit_under_an_operation_or_while_suspended),
      cmocka_unit_test(signals_during_transitions_and_a_suspension),
      cmocka_unit_test(a_requester_sleeps_while_its_operation_blocks_on_the_target),
      cmocka_unit_test(a_suspended_contender_does_not_keep_the_monitor_from_the_next),
      cmocka_unit_test(a_suspended_thread_cancelled_in_native_code_exits_only_once_resumed),
      cmocka_unit_test(stale_handles_and_bad_arguments_are_refused),
      cmocka_unit_test(a_safepoint_begun_inside_an_operation_is_refused),
  };
  /* VMS_ADV_FILTER names one test (cmocka's pattern): a hang guard ends the whole binary. */
  const char *filter = getenv("VMS_ADV_FILTER");
  if (filter) cmocka_set_test_filter(filter);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
