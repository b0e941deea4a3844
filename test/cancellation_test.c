/*
 * test/cancellation_test.c: pthread_cancel of a thread inside each call that blocks, or that
 * can reach a cancellation point (docs/design.md, "Cancellation", has the table these tests
 * check). A cancelled call must leave the runtime as it would be had the call not been made
 * (join), or not be a cancellation point at all, with the cancellation acted upon at the
 * caller's next one: no internal lock may stay held, nothing may leak (LeakSanitizer runs in the
 * ASan build).
 *
 * Most tests cancel a thread before it makes the call, while it waits without passing a
 * cancellation point: the cancellation is then pending and is acted upon at the first
 * cancellation point inside the call, which places it there without any timing. Public API
 * only.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "test/thread_util.h"
#include "vmthread.h"

/* A thread that is cancelled while it spins (no cancellation point), then makes `call`. */
typedef struct victim {
  pthread_t thread;
  _Atomic bool go;
  _Atomic bool returned;   /* the call came back (only expected where it is no cancellation point) */
  int rc;
  void (*call)(struct victim *v);
  void *arg;
} victim_t;

static void *victim_main(void *arg) {
  victim_t *v = arg;
  while (!atomic_load(&v->go)) {
  }
  v->call(v);
  atomic_store(&v->returned, true);
  pthread_testcancel();
  return NULL;
}

/* Cancels a victim before its call, lets it call, and waits for it: PTHREAD_CANCELED. */
static void run_cancelled(void (*call)(victim_t *), void *arg, victim_t *v) {
  memset(v, 0, sizeof(*v));
  v->call = call;
  v->arg = arg;
  assert_int_equal(pthread_create(&v->thread, NULL, victim_main, v), 0);
  assert_int_equal(pthread_cancel(v->thread), 0);
  atomic_store(&v->go, true);
  void *res = NULL;
  assert_int_equal(pthread_join(v->thread, &res), 0);
  assert_ptr_equal(res, PTHREAD_CANCELED);
}

/* A hang is a failure naming the test, not a stuck run. */
static void hang_guard(void) { alarm(60); }

/* ---- join -------------------------------------------------------------------------------- */
static void *wait_then_return(void *arg) {
  latch_wait(arg);
  return (void *)0x5eed;
}

static void call_join(victim_t *v) { v->rc = vmt_thread_join(v->arg, NULL); }

static void join_cancelled_leaves_the_target_joinable(void **state) {
  (void)state;
#if defined(__SANITIZE_THREAD__)
  /* TSan's pthread_join interceptor does not survive a cancellation inside it ("finished with
   * ignores enabled", google/sanitizers#646): the join is cancelled exactly there. */
  print_message("skipped: TSan cannot cancel a thread inside pthread_join\n");
  skip();
#endif
  hang_guard();
  latch_t latch;
  latch_init(&latch);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, wait_then_return, &latch), 0);
  victim_t v;
  run_cancelled(call_join, t, &v);
  assert_false(atomic_load(&v.returned));   /* cancelled inside, at pthread_join */
  /* The target still runs and still is the creator's to join: the result is not lost. */
  assert_int_equal(vmt_thread_state(t), VMT_THREAD_RUNNABLE);
  latch_open(&latch);
  void *result = NULL;
  assert_int_equal(vmt_thread_join(t, &result), 0);
  assert_ptr_equal(result, (void *)0x5eed);
  assert_int_equal(vmt_thread_join(t, NULL), -EALREADY);
  assert_int_equal(vmt_thread_release(t), 0);
  latch_destroy(&latch);
}

/* ---- the SIGQUIT switch (its lock is held across the dump thread's stop) ------------------ */
static void call_disable(victim_t *v) { v->rc = vmt_mx_disable_sigquit_dump(); }
static void call_enable(victim_t *v) { v->rc = vmt_mx_enable_sigquit_dump(v->arg); }

static void sigquit_switch_is_no_cancellation_point(void **state) {
  (void)state;
  hang_guard();
  FILE *sink = fopen("/dev/null", "w");
  assert_non_null(sink);
  victim_t v;
  run_cancelled(call_enable, sink, &v);
  assert_true(atomic_load(&v.returned));
  assert_int_equal(v.rc, 0);
  run_cancelled(call_disable, NULL, &v);
  assert_true(atomic_load(&v.returned));
  assert_int_equal(v.rc, 0);
  /* Usable afterwards: nothing was left held. */
  assert_int_equal(vmt_mx_enable_sigquit_dump(sink), 0);
  assert_int_equal(vmt_mx_disable_sigquit_dump(), 0);
  fclose(sink);
}

/* ---- a stack walker with a cancellation point in it (its lock is held across the walk) ---- */
static int cancellable_walker(vmt_thread_t *t, vmt_stack_frame_t *frames, int32_t max,
                              void *ctx) {
  (void)t;
  if (ctx) atomic_store((_Atomic(vmt_thread_t *) *)ctx, vmt_thread_current());
  pthread_testcancel();   /* what a VM's walker may reach: a read, a write, a wait */
  if (max < 1) return 0;
  frames[0] = (vmt_stack_frame_t){.function = "walked", .file = NULL, .line = 1, .pc = 0};
  return 1;
}

static void call_thread_info(victim_t *v) {
  vmt_thread_info_t *info = NULL;
  v->rc = vmt_mx_get_thread_info(vmt_thread_id(v->arg), 8, &info);
  vmt_mx_thread_info_free(info);
}

static void call_dump(victim_t *v) { v->rc = vmt_mx_print_thread_dump(v->arg); }

static void walks_are_no_cancellation_point(void **state) {
  (void)state;
  hang_guard();
  vmt_thread_t *me;
  assert_int_equal(vmt_thread_attach(NULL, &me), 0);
  vmt_mx_set_stack_walker(cancellable_walker, NULL);
  victim_t v;
  run_cancelled(call_thread_info, me, &v);
  assert_true(atomic_load(&v.returned));
  assert_int_equal(v.rc, 0);
  FILE *sink = fopen("/dev/null", "w");
  assert_non_null(sink);
  run_cancelled(call_dump, sink, &v);
  assert_true(atomic_load(&v.returned));
  assert_int_equal(v.rc, 0);
  fclose(sink);
  /* The walker can be replaced: no walk holds its lock. */
  vmt_mx_set_stack_walker(NULL, NULL);
  assert_int_equal(vmt_thread_detach(), 0);
}

/* A thread in managed code runs the walk of itself at its poll (a handshake the querying
 * thread waits for): a cancellation pending there is not acted upon inside the walk either. */
typedef struct poller {
  _Atomic bool running, stop;
} poller_t;

static void *poll_with_a_pending_cancellation(void *arg) {
  poller_t *p = arg;
  vmt_thread_t *self = vmt_thread_current();
  pthread_cancel(pthread_self());   /* pending: nothing below is a cancellation point */
  vmt_exec_enter(VMT_EXEC_MANAGED);
  atomic_store(&p->running, true);
  while (!atomic_load(&p->stop)) vmt_poll(self);
  vmt_exec_enter(VMT_EXEC_NATIVE);
  int old;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);   /* end normally */
  return NULL;
}

static void a_walk_on_its_target_is_no_cancellation_point_there(void **state) {
  (void)state;
  hang_guard();
  vmt_thread_t *me;
  assert_int_equal(vmt_thread_attach(NULL, &me), 0);
  _Atomic(vmt_thread_t *) ran_on = NULL;
  vmt_mx_set_stack_walker(cancellable_walker, &ran_on);
  poller_t p = {0};
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, poll_with_a_pending_cancellation, &p), 0);
  while (!atomic_load(&p.running)) sched_yield();
  vmt_thread_info_t *info = NULL;
  assert_int_equal(vmt_mx_get_thread_info(vmt_thread_id(t), 8, &info), 0);
  assert_non_null(info);
  assert_int_equal(info->frame_count, 1);
  assert_ptr_equal(atomic_load(&ran_on), t);   /* the walk ran on the target, at its poll */
  vmt_mx_thread_info_free(info);
  atomic_store(&p.stop, true);
  void *res = (void *)1;
  assert_int_equal(vmt_thread_join(t, &res), 0);
  assert_null(res);
  assert_int_equal(vmt_thread_release(t), 0);
  vmt_mx_set_stack_walker(NULL, NULL);
  assert_int_equal(vmt_thread_detach(), 0);
}

/* ---- waits: not cancellation points ------------------------------------------------------ */
typedef struct waiter {
  vmt_monitor_t *mon;
  _Atomic bool waiting;
  _Atomic bool notified;
  _Atomic int rc;
} waiter_t;

static void *wait_on_monitor(void *arg) {
  waiter_t *w = arg;
  vmt_monitor_enter(w->mon);
  atomic_store(&w->waiting, true);
  int rc = 0;
  while (!atomic_load(&w->notified) && rc == 0) rc = vmt_monitor_wait(w->mon, 0);
  atomic_store(&w->rc, rc);
  vmt_monitor_exit(w->mon);
  pthread_testcancel();
  return NULL;
}

static void a_cancelled_waiter_waits_on(void **state) {
  (void)state;
  hang_guard();
  waiter_t w = {.rc = -1};
  assert_int_equal(vmt_monitor_create(&w.mon, "cancel-wait"), 0);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, wait_on_monitor, &w), 0);
  while (!atomic_load(&w.waiting)) sched_yield();
  /* Once we own the monitor, the waiter is inside wait (it released it there). */
  assert_int_equal(vmt_monitor_enter(w.mon), 0);
  assert_int_equal(pthread_cancel(th), 0);
  vmt_monitor_stats_t st;
  assert_int_equal(vmt_monitor_get_stats(w.mon, &st), 0);
  assert_int_equal(st.wait_waiters, 1);
  atomic_store(&w.notified, true);
  assert_int_equal(vmt_monitor_notify_all(w.mon), 0);
  assert_int_equal(vmt_monitor_exit(w.mon), 0);
  void *res = NULL;
  assert_int_equal(pthread_join(th, &res), 0);
  assert_ptr_equal(res, PTHREAD_CANCELED);
  /* The wait returned as notified, re-entered and exited: the monitor is free and unwaited. */
  assert_int_equal(atomic_load(&w.rc), 0);
  assert_int_equal(vmt_monitor_get_stats(w.mon, &st), 0);
  assert_int_equal(st.wait_waiters, 0);
  assert_int_equal(vmt_monitor_destroy(w.mon), 0);
}

static void call_sleep(victim_t *v) { v->rc = vmt_sleep_ns(1000 * 1000); }
static void call_timed_wait(victim_t *v) {
  vmt_monitor_enter(v->arg);
  v->rc = vmt_monitor_wait(v->arg, 1000 * 1000);
  vmt_monitor_exit(v->arg);
}
static void call_timed_lock(victim_t *v) { v->rc = vmt_sync_timed_lock(v->arg, 1000 * 1000); }

static void blocking_calls_finish_before_the_cancellation(void **state) {
  (void)state;
  hang_guard();
  victim_t v;
  run_cancelled(call_sleep, NULL, &v);
  assert_true(atomic_load(&v.returned));
  assert_int_equal(v.rc, 0);
  vmt_monitor_t *m;
  assert_int_equal(vmt_monitor_create(&m, "cancel-timed"), 0);
  run_cancelled(call_timed_wait, m, &v);
  assert_true(atomic_load(&v.returned));
  assert_int_equal(v.rc, -ETIMEDOUT);
  assert_int_equal(vmt_monitor_destroy(m), 0);
  vmt_sync_t *s;
  assert_int_equal(vmt_sync_create(&s, "cancel-sync"), 0);
  assert_int_equal(vmt_sync_lock(s), 0);   /* held: the victim's timed lock times out */
  run_cancelled(call_timed_lock, s, &v);
  assert_true(atomic_load(&v.returned));
  assert_int_equal(v.rc, -ETIMEDOUT);
  assert_int_equal(vmt_sync_unlock(s), 0);
  assert_int_equal(vmt_sync_destroy(s), 0);
}

/* ---- the first call of a process: its one-time probes ------------------------------------ *
 * The first call that needs the port's probes (clocks, the elapsed counter's calibration, which
 * reads sysfs and sleeps 2 ms) or the allocation counters' probe (a helper thread, joined) runs
 * them inside it. Those are cancellation points; the calls are not (the table): a first
 * vmt_thread_start, vmt_thread_attach, vmt_mx_is_thread_cpu_time_supported or
 * vmt_elapsed_nanos of a cancelled thread never returned, cancelled inside a probe (each found by
 * this test before the probes turned cancellation off). Each call runs first in a process of its
 * own: this binary, executed again with VMT_CANCEL_FIRST_CALL naming it. */
static void *first_call_body(void *arg) { return arg; }

/* Joined by the child's main thread: a join is a cancellation point of its own. */
static vmt_thread_t *first_started;
static void first_start(victim_t *v) { v->rc = vmt_thread_start(&first_started, first_call_body, NULL); }
static void first_attach(victim_t *v) {
  vmt_thread_t *me;
  v->rc = vmt_thread_attach(NULL, &me);
  if (v->rc == 0) v->rc = vmt_thread_detach();
}
static void first_caps(victim_t *v) { v->rc = vmt_mx_is_thread_cpu_time_supported() ? 0 : 0; }
static void first_elapsed(victim_t *v) { v->rc = vmt_elapsed_nanos() > 0 ? 0 : -1; }
static void first_alloc_probe(victim_t *v) {
  bool on = false;
  int rc = vmt_mx_is_thread_allocated_memory_enabled(&on);
  v->rc = rc == -ENOTSUP ? 0 : rc;
}

static const struct {
  const char *name;
  void (*call)(victim_t *v);
} first_calls[] = {
    {"vmt_thread_start", first_start},
    {"vmt_thread_attach", first_attach},
    {"vmt_mx_is_thread_cpu_time_supported", first_caps},
    {"vmt_elapsed_nanos", first_elapsed},
    {"vmt_mx_is_thread_allocated_memory_enabled", first_alloc_probe},
};
enum { FIRST_CALLS = sizeof(first_calls) / sizeof(first_calls[0]) };

static int open_descriptors(void) {
  int n = 0;
  for (int fd = 0; fd < 1024; fd++) n += fcntl(fd, F_GETFD) >= 0;
  return n;
}

/* In the re-executed child: 0 if the call returned with 0 and left no descriptor open. */
static int first_call_child(const char *name) {
  for (int i = 0; i < FIRST_CALLS; i++) {
    if (strcmp(first_calls[i].name, name) != 0) continue;
    int fds = open_descriptors();
    victim_t v;
    run_cancelled(first_calls[i].call, NULL, &v);
    if (!atomic_load(&v.returned)) {
      fprintf(stderr, "%s: cancelled inside the call\n", name);
      return 1;
    }
    if (v.rc != 0) {
      fprintf(stderr, "%s: answered %d\n", name, v.rc);
      return 2;
    }
    if (first_started != NULL &&
        (vmt_thread_join(first_started, NULL) != 0 || vmt_thread_release(first_started) != 0))
      return 6;
    if (open_descriptors() != fds) {
      fprintf(stderr, "%s: %d descriptors open before, %d after\n", name, fds,
              open_descriptors());
      return 3;
    }
    return 0;
  }
  return 4;
}

static void first_calls_are_no_cancellation_points(void **state) {
  (void)state;
  hang_guard();
  for (int i = 0; i < FIRST_CALLS; i++) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      setenv("VMT_CANCEL_FIRST_CALL", first_calls[i].name, 1);
      execl("/proc/self/exe", "cancellation_test", (char *)NULL);
      _exit(5);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      fail_msg("the first %s of a cancelled thread: child status 0x%x", first_calls[i].name,
               status);
  }
}

int main(void) {
  const char *first = getenv("VMT_CANCEL_FIRST_CALL");
  if (first) return first_call_child(first);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(first_calls_are_no_cancellation_points),
      cmocka_unit_test(join_cancelled_leaves_the_target_joinable),
      cmocka_unit_test(sigquit_switch_is_no_cancellation_point),
      cmocka_unit_test(walks_are_no_cancellation_point),
      cmocka_unit_test(a_walk_on_its_target_is_no_cancellation_point_there),
      cmocka_unit_test(a_cancelled_waiter_waits_on),
      cmocka_unit_test(blocking_calls_finish_before_the_cancellation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
