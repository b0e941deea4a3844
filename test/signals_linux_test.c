/*
 * test/signals_linux_test.c: EINTR on every wait. A handler for SIGUSR1 is installed WITHOUT
 * SA_RESTART, so each signal interrupts the futex the waiting thread sleeps in, and another
 * thread sends one every 200 us while a runtime thread sleeps, waits on a monitor (timed and
 * until notified), parks (timed and until unparked), joins, takes a synchronizer with a
 * timeout, and blocks entering a contended monitor.
 *
 * Each wait must give its normal answer (EINTR never escapes), never return before its
 * timeout or before the event it waits for, and still end: a wait that restarted its whole
 * relative timeout after each signal would never end under a signal every 200 us, so each
 * must return within a generous 10 s (a liveness bound, not a timing assertion). The test also
 * checks that the signals did land during each wait (a wait that got none is run again, up
 * to 5 times: a loaded machine starves the signaller now and then). Then a handler makes every
 * call docs/embedding.md names async-signal-safe, on every signal. Public API only.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "test/clock_util.h"
#include "test/reliability.h"
#include "vmthread.h"

#define MS (1000LL * 1000)
#define WAIT_NS (50 * MS)
#define LIVENESS_NS (10000 * MS)

static _Atomic int64_t signals_seen;
static void on_sigusr1(int sig) {
  (void)sig;
  atomic_fetch_add_explicit(&signals_seen, 1, memory_order_relaxed);
}

/* The thread being interrupted, and the one interrupting it. */
static _Atomic bool stop_signaller;
/* The target is signalled only under this lock, so it is never signalled once it has moved
 * on (a pthread_t of a joined thread must not be used). */
static pthread_mutex_t target_lock = PTHREAD_MUTEX_INITIALIZER;
static bool target_set;
static pthread_t target;
static _Atomic int64_t signals_sent;
static _Atomic int signal_number = SIGUSR1;   /* what the signaller sends */

static void *signaller(void *arg) {
  (void)arg;
  while (!atomic_load(&stop_signaller)) {
    pthread_mutex_lock(&target_lock);
    if (target_set && pthread_kill(target, atomic_load(&signal_number)) == 0)
      atomic_fetch_add(&signals_sent, 1);
    pthread_mutex_unlock(&target_lock);
    usleep(200);
  }
  return NULL;
}

static void set_target(bool on) {
  pthread_mutex_lock(&target_lock);
  target = pthread_self();
  target_set = on;
  pthread_mutex_unlock(&target_lock);
}

typedef struct op {
  int (*fn)(struct op *);
  const char *name;
  int expected;
  int64_t min_ns;          /* must not return earlier */
  _Atomic bool event;      /* set by the helper when the awaited event happens */
  vmt_monitor_t *m;
  vmt_sync_t *s;
  vmt_thread_fn before_fn; /* started before the op (the sleeper it joins, the owner) */
  _Atomic bool before_ready;
  vmt_thread_t *other;     /* that thread */
  /* results */
  int rc;
  int64_t elapsed_ns, signals;
  bool event_before_return;
} op_t;

/* The thread running the op, published by run_op: the owner holds on until it is BLOCKED (a
 * fixed 50 ms hold let a loaded machine start the entering thread only after the exit). */
static _Atomic(vmt_thread_t *) op_thread;

static void *run_op(void *arg) {
  op_t *op = arg;
  atomic_store(&op_thread, vmt_thread_current());
  int64_t sig0 = atomic_load(&signals_seen);
  set_target(true);
  int64_t t0 = test_clock_ns(CLOCK_MONOTONIC);
  op->rc = op->fn(op);
  op->elapsed_ns = test_clock_ns(CLOCK_MONOTONIC) - t0;
  op->event_before_return = atomic_load(&op->event);
  set_target(false);
  atomic_store(&op_thread, NULL);
  op->signals = atomic_load(&signals_seen) - sig0;
  return NULL;
}

/* ---- the waits ---------------------------------------------------------------------------- */
static int do_sleep(op_t *op) { (void)op; return vmt_sleep_ns(WAIT_NS); }
static int do_park_timed(op_t *op) { (void)op; return vmt_park(WAIT_NS); }
static int do_park(op_t *op) { (void)op; return vmt_park(0); }
static int do_wait_timed(op_t *op) {
  vmt_monitor_enter(op->m);
  int rc = vmt_monitor_wait(op->m, WAIT_NS);
  vmt_monitor_exit(op->m);
  return rc;
}
static int do_wait(op_t *op) {
  vmt_monitor_enter(op->m);
  int rc = 0;
  /* Java's loop: a notify is the only thing that sets the event. */
  while (!atomic_load(&op->event) && rc == 0) rc = vmt_monitor_wait(op->m, 0);
  vmt_monitor_exit(op->m);
  return rc;
}
static int do_join(op_t *op) { return vmt_thread_join(op->other, NULL); }
static int do_timed_lock(op_t *op) { return vmt_sync_timed_lock(op->s, WAIT_NS); }
static int do_enter(op_t *op) {
  int rc = vmt_monitor_enter(op->m);
  if (rc == 0) vmt_monitor_exit(op->m);
  return rc;
}

/* Helpers that make the awaited event happen after WAIT_NS. */
static void *sleep_then_event(void *arg) {
  op_t *op = arg;
  atomic_store(&op->before_ready, true);
  vmt_sleep_ns(WAIT_NS);
  atomic_store(&op->event, true);
  return NULL;
}

static void *hold_for_a_while(void *arg) {
  op_t *op = arg;
  vmt_monitor_enter(op->m);
  atomic_store(&op->before_ready, true);
  /* Bounded, so an enter that wrongly succeeds fails the test below instead of hanging it. */
  int64_t give_up = test_clock_ns(CLOCK_MONOTONIC) + LIVENESS_NS;
  vmt_thread_t *waiter;
  while (((waiter = atomic_load(&op_thread)) == NULL ||
          vmt_thread_state(waiter) != VMT_THREAD_BLOCKED) &&
         test_clock_ns(CLOCK_MONOTONIC) < give_up)
    usleep(1000);
  vmt_sleep_ns(WAIT_NS);
  atomic_store(&op->event, true);
  vmt_monitor_exit(op->m);
  return NULL;
}

static void run_once(op_t *op, vmt_thread_fn helper_fn) {
  vmt_thread_t *t, *helper = NULL, *before = NULL;
  atomic_store(&op->event, false);
  if (op->before_fn) {
    atomic_store(&op->before_ready, false);
    assert_int_equal(vmt_thread_start(&before, op->before_fn, op), 0);
    op->other = before;
    while (!atomic_load(&op->before_ready)) usleep(1000);
  }
  assert_int_equal(vmt_thread_start(&t, run_op, op), 0);
  if (helper_fn) assert_int_equal(vmt_thread_start(&helper, helper_fn, op), 0);
  if (op->fn == do_park) {
    while (!atomic_load(&op->event)) usleep(1000);
    vmt_unpark(t);
  }
  if (op->fn == do_wait) {
    while (!atomic_load(&op->event)) usleep(1000);
    vmt_monitor_enter(op->m);
    vmt_monitor_notify_all(op->m);
    vmt_monitor_exit(op->m);
  }
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(vmt_thread_release(t), 0);
  if (helper) {
    assert_int_equal(vmt_thread_join(helper, NULL), 0);
    assert_int_equal(vmt_thread_release(helper), 0);
  }
  if (before) {
    if (op->fn != do_join) assert_int_equal(vmt_thread_join(before, NULL), 0);
    assert_int_equal(vmt_thread_release(before), 0);
  }
  printf("%-36s rc=%d elapsed=%.1f ms signals=%lld\n", op->name, op->rc, op->elapsed_ns / 1e6,
         (long long)op->signals);
  if (op->rc != op->expected) fail_msg("%s: rc %d, expected %d", op->name, op->rc, op->expected);
  if (op->elapsed_ns < op->min_ns)
    fail_msg("%s returned after %lld ns, before its %lld ns", op->name, (long long)op->elapsed_ns,
             (long long)op->min_ns);
  if (op->elapsed_ns > LIVENESS_NS) fail_msg("%s took %lld ns", op->name, (long long)op->elapsed_ns);
  if ((helper_fn || op->before_fn) && !op->event_before_return)
    fail_msg("%s returned before the event it waits for", op->name);
}

/* A wait during which no signal landed proved nothing: on a loaded machine (load 15 on 2
 * cores) the signaller was starved for a whole 50 ms wait now and then, so such a wait is run
 * again, a few times at most. */
#define MAX_ATTEMPTS 5
static void run(op_t *op, vmt_thread_fn helper_fn) {
  for (int attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    run_once(op, helper_fn);
    if (op->signals > 0) break;
    if (attempt == MAX_ATTEMPTS)
      fail_msg("%s: no signal landed during %d waits", op->name, MAX_ATTEMPTS);
    printf("%s: no signal landed during the wait; again\n", op->name);
  }
  rel_figure_text("signals", "wait", "%s rc=%d signals_during_wait=%lld", op->name, op->rc,
                  (long long)op->signals);
}

static void every_wait_survives_eintr(void **state) {
  (void)state;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_sigusr1;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;   /* no SA_RESTART: every signal interrupts the futex */
  struct sigaction old;
  assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
  pthread_t sig;
  assert_int_equal(pthread_create(&sig, NULL, signaller, NULL), 0);

  vmt_monitor_t *m;
  vmt_sync_t *s;
  assert_int_equal(vmt_monitor_create(&m, "eintr"), 0);
  assert_int_equal(vmt_sync_create(&s, "eintr"), 0);

  op_t sleep_op = {.fn = do_sleep, .name = "vmt_sleep_ns(50 ms)", .expected = 0, .min_ns = WAIT_NS};
  run(&sleep_op, NULL);
  op_t park_timed = {.fn = do_park_timed, .name = "vmt_park(50 ms)", .expected = -ETIMEDOUT,
                     .min_ns = WAIT_NS};
  run(&park_timed, NULL);
  op_t park = {.fn = do_park, .name = "vmt_park(0) until unpark", .expected = 0};
  run(&park, sleep_then_event);
  op_t wait_timed = {.fn = do_wait_timed, .name = "vmt_monitor_wait(50 ms)",
                     .expected = -ETIMEDOUT, .min_ns = WAIT_NS, .m = m};
  run(&wait_timed, NULL);
  op_t wait = {.fn = do_wait, .name = "vmt_monitor_wait(0) until notify", .expected = 0, .m = m};
  run(&wait, sleep_then_event);

  /* Joined only after the sleeper's end (its event). */
  op_t join_op = {.fn = do_join, .name = "vmt_thread_join(50 ms sleeper)", .expected = 0,
                  .before_fn = sleep_then_event};
  run(&join_op, NULL);

  /* A synchronizer held by this thread for the whole timed attempt. */
  assert_int_equal(vmt_sync_lock(s), 0);
  op_t timed_lock = {.fn = do_timed_lock, .name = "vmt_sync_timed_lock(50 ms, held)",
                     .expected = -ETIMEDOUT, .min_ns = WAIT_NS, .s = s};
  run(&timed_lock, NULL);
  assert_int_equal(vmt_sync_unlock(s), 0);

  /* A runtime thread holds m until the entering thread is BLOCKED, then 50 ms more; entering
   * must wait for its exit (its event), signals or not. */
  op_t enter = {.fn = do_enter, .name = "vmt_monitor_enter(held 50 ms)", .expected = 0, .m = m,
                .before_fn = hold_for_a_while};
  run(&enter, NULL);

  atomic_store(&stop_signaller, true);
  pthread_join(sig, NULL);
  sigaction(SIGUSR1, &old, NULL);
  assert_int_equal(vmt_monitor_destroy(m), 0);
  assert_int_equal(vmt_sync_destroy(s), 0);
  rel_figure_text("signals", "build", "%s", rel_build_flavour());
  rel_figure("signals", "signals_sent", atomic_load(&signals_sent));
  rel_figure("signals", "signals_handled", atomic_load(&signals_seen));
}

/* ---- the async-signal-safe calls, from a handler ------------------------------------------ *
 * docs/embedding.md lists the calls a signal handler may make (a VM's profiling or safepoint
 * signal): current, the accessors, both CPU-time calls, nanotime and unpark. A handler makes
 * every one of them, on every signal, while the thread it interrupts is itself inside those
 * calls, parks and is unparked: each answer must be right (the thread's own id, name and
 * category, times >= 0, the consistent user time never decreasing in the handler's calls nor
 * in the interrupted code's, and a handler's answer never below one the interrupted code had
 * before the handler ran: calls that overlap, a handler inside a call, promise no order), and
 * nothing may hang. */
#define AS_SAFE_LOOPS 20000
static vmt_thread_t *as_self, *as_peer;
static int64_t as_self_id;
static volatile sig_atomic_t as_handled, as_wrong;
/* The consistent user time last handed to the interrupted code, and to the handler. */
static _Atomic int64_t as_last_main, as_last_handler;

static volatile sig_atomic_t as_first_wrong;   /* which check, for the message */
static _Atomic int64_t as_wrong_values[2];
static void wrong(int which, int64_t a, int64_t b) {
  if (as_wrong++ == 0) {
    as_first_wrong = which;
    atomic_store(&as_wrong_values[0], a);
    atomic_store(&as_wrong_values[1], b);
  }
}

static void note_user_time(_Atomic int64_t *last, int64_t v) {
  int64_t before = atomic_load(last);
  if (v < before) wrong(1, v, before);
  atomic_store(last, v);
}

static void on_sigusr2(int sig) {
  (void)sig;
  int saved = errno;
  vmt_thread_t *me = vmt_thread_current();
  bool ok = me == as_self && vmt_thread_id(me) == as_self_id &&
            strcmp(vmt_thread_name(me), "as-safe") == 0 &&
            strcmp(vmt_thread_os_name(me), "as-safe") == 0 &&
            strcmp(vmt_thread_category(me), "app") == 0 && !vmt_thread_is_daemon(me) &&
            vmt_thread_priority(me) == VMT_THREAD_NORM_PRIORITY &&
            vmt_thread_state(me) != VMT_THREAD_TERMINATED && vmt_thread_state(me) >= 0;
  for (int k = VMT_CPU_TOTAL; k <= VMT_CPU_USER_FAST; k++)
    ok = ok && vmt_current_thread_cpu_time((vmt_cpu_kind_t)k) >= 0 &&
         vmt_thread_cpu_time(me, (vmt_cpu_kind_t)k) >= 0 &&
         vmt_thread_cpu_time(as_peer, (vmt_cpu_kind_t)k) >= 0;
  int64_t main_before = atomic_load(&as_last_main);
  int64_t user = vmt_current_thread_cpu_time(VMT_CPU_USER);
  if (user < main_before) wrong(4, user, main_before);
  note_user_time(&as_last_handler, user);
  ok = ok && vmt_nanotime() > 0 && vmt_unpark(as_peer) == 0 && vmt_unpark(me) == 0;
  if (!ok) wrong(2, 0, 0);
  as_handled++;
  errno = saved;
}

static void *as_peer_body(void *arg) {
  _Atomic bool *stop = arg;
  while (!atomic_load(stop)) vmt_park(1000 * 1000);
  return NULL;
}

static void *as_safe_body(void *arg) {
  (void)arg;
  as_self = vmt_thread_current();
  as_self_id = vmt_thread_id(as_self);
  set_target(true);
  for (int i = 0; i < AS_SAFE_LOOPS; i++) {
    note_user_time(&as_last_main, vmt_current_thread_cpu_time(VMT_CPU_USER));
    note_user_time(&as_last_main, vmt_thread_cpu_time(as_self, VMT_CPU_USER));
    if (vmt_current_thread_cpu_time(VMT_CPU_TOTAL) < 0 ||
        vmt_thread_cpu_time(as_peer, VMT_CPU_USER) < 0)
      wrong(3, 0, 0);
    if (i % 64 == 0) vmt_park(100 * 1000);   /* the handler's unpark may end it early */
  }
  set_target(false);
  return NULL;
}

static void async_signal_safe_calls_in_a_handler(void **state) {
  (void)state;
  struct sigaction sa, old;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_sigusr2;
  sigemptyset(&sa.sa_mask);
  assert_int_equal(sigaction(SIGUSR2, &sa, &old), 0);
  _Atomic bool stop_peer = false;
  assert_int_equal(vmt_thread_start(&as_peer, as_peer_body, &stop_peer), 0);
  for (int attempt = 1;; attempt++) {
    as_handled = as_wrong = as_first_wrong = 0;
    atomic_store(&as_last_main, 0);
    atomic_store(&as_last_handler, 0);
    atomic_store(&stop_signaller, false);
    vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_NAME, .name = "as-safe"};
    vmt_thread_t *t;
    assert_int_equal(vmt_thread_start_ex(&t, &o, as_safe_body, NULL), 0);
    pthread_t sig;
    atomic_store(&signal_number, SIGUSR2);
    assert_int_equal(pthread_create(&sig, NULL, signaller, NULL), 0);
    assert_int_equal(vmt_thread_join(t, NULL), 0);
    atomic_store(&stop_signaller, true);
    pthread_join(sig, NULL);
    atomic_store(&signal_number, SIGUSR1);
    assert_int_equal(vmt_thread_release(t), 0);
    printf("async-signal-safe calls: %d handlers ran, wrong answers: %d (first: check %d, "
           "%lld, %lld)\n", (int)as_handled, (int)as_wrong, (int)as_first_wrong,
           (long long)atomic_load(&as_wrong_values[0]), (long long)atomic_load(&as_wrong_values[1]));
    assert_int_equal(as_wrong, 0);
    if (as_handled >= 10) break;
    if (attempt == MAX_ATTEMPTS) fail_msg("only %d signals landed", (int)as_handled);
  }
  atomic_store(&stop_peer, true);
  vmt_unpark(as_peer);
  assert_int_equal(vmt_thread_join(as_peer, NULL), 0);
  assert_int_equal(vmt_thread_release(as_peer), 0);
  sigaction(SIGUSR2, &old, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_wait_survives_eintr),
      cmocka_unit_test(async_signal_safe_calls_in_a_handler),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
