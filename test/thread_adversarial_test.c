/*
 * test/thread_adversarial_test.c: java.lang.Thread, Object.wait/notify, LockSupport and
 * ThreadLocal edge cases, checked against Java's documented rules and the public headers'
 * contracts: interrupt status at the boundaries (timeouts of 0, negative and huge values,
 * dead and released threads, threads without a record), permits that do not accumulate and
 * survive a sleep, monitor depth across wait, states as Java reports them, attach counting,
 * stale handles, names at their limits, TLS destructors and keys. Contract only, never timing;
 * every test runs under a hang guard (alarm).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "test/monitor_util.h"
#include "test/thread_util.h"
#include "vmthread.h"

static void wait_for_state(vmt_thread_t *t, vmt_thread_state_t state) {
  MU_POLL_UNTIL(vmt_thread_state(t) == state, vmt_thread_state_name(state));
}

static int guard(void **state) {
  (void)state;
  alarm(60);
  return 0;
}

static int unguard(void **state) {
  (void)state;
  alarm(0);
  return 0;
}

#define T(f) cmocka_unit_test_setup_teardown(f, guard, unguard)

/* ---- Interrupt status at the boundaries --------------------------------------------------- */
static void *sleep_zero_with_status(void *arg) {
  int *r = arg;
  vmt_thread_interrupt(vmt_thread_current());
  r[0] = vmt_sleep_ns(0);
  r[1] = vmt_thread_is_interrupted(vmt_thread_current());
  r[2] = vmt_sleep_ns(-1);
  vmt_thread_interrupt(vmt_thread_current());
  r[3] = vmt_sleep_ns(-1);   /* -EINVAL first: the status stays */
  r[4] = vmt_thread_interrupted();
  r[5] = vmt_thread_interrupted();
  return NULL;
}

static void sleep_zero_and_negative_with_the_status(void **state) {
  (void)state;
  int r[6];
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, sleep_zero_with_status, r), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(r[0], -EINTR);
  assert_int_equal(r[1], 0);
  assert_int_equal(r[2], -EINVAL);
  assert_int_equal(r[3], -EINVAL);
  assert_int_equal(r[4], 1);
  assert_int_equal(r[5], 0);
  /* A terminated thread keeps a status given after its end; interrupt still answers 0. */
  assert_false(vmt_thread_is_interrupted(t));
  assert_int_equal(vmt_thread_interrupt(t), 0);
  assert_true(vmt_thread_is_interrupted(t));
  assert_int_equal(vmt_thread_release(t), 0);
  /* Stale from the release on. */
  assert_int_equal(vmt_thread_interrupt(t), -EINVAL);
  assert_false(vmt_thread_is_interrupted(t));
  assert_int_equal(vmt_unpark(t), -EINVAL);
}

static void *no_record_calls(void *arg) {
  int *r = arg;
  r[0] = vmt_thread_interrupted();
  r[1] = vmt_sleep_ns(1000);
  r[2] = vmt_park(1000);
  r[3] = vmt_park_nanos(1000);
  r[4] = vmt_thread_exit(NULL);
  r[5] = vmt_thread_detach();
  return NULL;
}

static void a_thread_without_record_has_no_status_nor_permit(void **state) {
  (void)state;
  int r[6];
  pthread_t p;
  assert_int_equal(pthread_create(&p, NULL, no_record_calls, r), 0);
  assert_int_equal(pthread_join(p, NULL), 0);
  assert_int_equal(r[0], 0);
  assert_int_equal(r[1], 0);
  assert_int_equal(r[2], -EPERM);
  assert_int_equal(r[3], -EPERM);
  assert_int_equal(r[4], -EPERM);
  assert_int_equal(r[5], -EINVAL);
}

typedef struct blocker {
  vmt_monitor_t *m;
  vmt_thread_t *target;
  int64_t timeout;
  int rc;
  int status_after;
  int depth_ok;
  latch_t go;
} blocker_t;

static void *timed_join_with_status(void *arg) {
  blocker_t *b = arg;
  vmt_thread_interrupt(vmt_thread_current());
  b->rc = vmt_thread_timed_join(b->target, b->timeout, NULL);
  b->status_after = vmt_thread_is_interrupted(vmt_thread_current());
  return NULL;
}

static void timed_join_try_with_the_status(void **state) {
  (void)state;
  latch_t l;
  latch_init(&l);
  vmt_thread_t *target, *j;
  assert_int_equal(vmt_thread_start(&target, wait_for_latch, &l), 0);
  const int64_t timeouts[] = {0, -1, INT64_MIN, 1000};
  for (size_t i = 0; i < sizeof timeouts / sizeof timeouts[0]; i++) {
    blocker_t b = {.target = target, .timeout = timeouts[i]};
    assert_int_equal(vmt_thread_start(&j, timed_join_with_status, &b), 0);
    assert_int_equal(vmt_thread_join(j, NULL), 0);
    assert_int_equal(vmt_thread_release(j), 0);
    assert_int_equal(b.rc, -EINTR);
    assert_int_equal(b.status_after, 0);
  }
  /* Without the status: a try times out, and the target can still be joined. */
  assert_int_equal(vmt_thread_timed_join(target, 0, NULL), -ETIMEDOUT);
  assert_int_equal(vmt_thread_timed_join(target, -5, NULL), -ETIMEDOUT);
  latch_open(&l);
  assert_int_equal(vmt_thread_join(target, NULL), 0);
  assert_int_equal(vmt_thread_timed_join(target, 0, NULL), -EALREADY);
  assert_int_equal(vmt_thread_release(target), 0);
  latch_destroy(&l);
}

/* ---- Huge timeouts must not fall into the past -------------------------------------------- */
static void *wait_huge(void *arg) {
  blocker_t *b = arg;
  vmt_monitor_enter(b->m);
  vmt_monitor_enter(b->m);
  latch_open(&b->go);
  b->rc = vmt_monitor_wait(b->m, b->timeout);
  b->depth_ok = vmt_monitor_exit(b->m) == 0 && vmt_monitor_exit(b->m) == 0 &&
                vmt_monitor_exit(b->m) == -EPERM;
  return NULL;
}

static void huge_and_negative_wait_timeouts_wait_for_the_notify(void **state) {
  (void)state;
  const int64_t timeouts[] = {INT64_MAX, INT64_MAX - 1, INT64_MAX / 2, -1, INT64_MIN, 0};
  for (size_t i = 0; i < sizeof timeouts / sizeof timeouts[0]; i++) {
    blocker_t b = {.timeout = timeouts[i]};
    latch_init(&b.go);
    assert_int_equal(vmt_monitor_create(&b.m, "huge"), 0);
    vmt_thread_t *t;
    assert_int_equal(vmt_thread_start(&t, wait_huge, &b), 0);
    latch_wait(&b.go);
    MU_POLL_UNTIL(vmt_thread_state(t) == VMT_THREAD_WAITING ||
                      vmt_thread_state(t) == VMT_THREAD_TIMED_WAITING,
                  "waiting");
    assert_int_equal(vmt_monitor_enter(b.m), 0);
    assert_int_equal(vmt_monitor_notify(b.m), 0);
    assert_int_equal(vmt_monitor_exit(b.m), 0);
    assert_int_equal(vmt_thread_join(t, NULL), 0);
    assert_int_equal(b.rc, 0);
    assert_true(b.depth_ok);
    assert_int_equal(vmt_thread_release(t), 0);
    assert_int_equal(vmt_monitor_destroy(b.m), 0);
    latch_destroy(&b.go);
  }
}

static void *sleep_huge(void *arg) {
  blocker_t *b = arg;
  b->rc = vmt_sleep_ns(b->timeout);
  b->status_after = vmt_thread_is_interrupted(vmt_thread_current());
  return NULL;
}

static void *park_nanos_huge(void *arg) {
  blocker_t *b = arg;
  b->rc = vmt_park_nanos(b->timeout);
  b->status_after = vmt_thread_is_interrupted(vmt_thread_current());
  return NULL;
}

static void *park_until_huge_mono(void *arg) {
  blocker_t *b = arg;
  b->rc = vmt_park_until(b->timeout, VMT_CLOCK_MONOTONIC);
  return NULL;
}

static void *park_until_huge_real(void *arg) {
  blocker_t *b = arg;
  b->rc = vmt_park_until(b->timeout, VMT_CLOCK_REALTIME);
  return NULL;
}

static void *timed_join_huge(void *arg) {
  blocker_t *b = arg;
  b->rc = vmt_thread_timed_join(b->target, b->timeout, NULL);
  return NULL;
}

static void huge_timeouts_sleep_park_and_join_do_not_return_at_once(void **state) {
  (void)state;
  const int64_t timeouts[] = {INT64_MAX, INT64_MAX - 1, INT64_MAX / 2};
  for (size_t i = 0; i < sizeof timeouts / sizeof timeouts[0]; i++) {
    blocker_t b = {.timeout = timeouts[i]};
    vmt_thread_t *t;
    /* sleep: an interrupt ends it, -EINTR, cleared. */
    assert_int_equal(vmt_thread_start(&t, sleep_huge, &b), 0);
    wait_for_state(t, VMT_THREAD_TIMED_WAITING);
    assert_int_equal(vmt_thread_interrupt(t), 0);
    assert_int_equal(vmt_thread_join(t, NULL), 0);
    assert_int_equal(b.rc, -EINTR);
    assert_int_equal(b.status_after, 0);
    vmt_thread_release(t);
    /* parkNanos: unpark ends it. */
    assert_int_equal(vmt_thread_start(&t, park_nanos_huge, &b), 0);
    MU_POLL_UNTIL(vmt_thread_state(t) == VMT_THREAD_WAITING ||
                      vmt_thread_state(t) == VMT_THREAD_TIMED_WAITING,
                  "parked");
    assert_int_equal(vmt_unpark(t), 0);
    assert_int_equal(vmt_thread_join(t, NULL), 0);
    assert_int_equal(b.rc, 0);
    vmt_thread_release(t);
    /* parkUntil on both clocks. */
    for (int c = 0; c < 2; c++) {
      assert_int_equal(vmt_thread_start(&t, c ? park_until_huge_real : park_until_huge_mono, &b),
                       0);
      MU_POLL_UNTIL(vmt_thread_state(t) == VMT_THREAD_WAITING ||
                        vmt_thread_state(t) == VMT_THREAD_TIMED_WAITING,
                    "parked until");
      assert_int_equal(vmt_unpark(t), 0);
      assert_int_equal(vmt_thread_join(t, NULL), 0);
      assert_int_equal(b.rc, 0);
      vmt_thread_release(t);
    }
    /* timed join. */
    latch_t l;
    latch_init(&l);
    vmt_thread_t *target;
    assert_int_equal(vmt_thread_start(&target, wait_for_latch, &l), 0);
    b.target = target;
    assert_int_equal(vmt_thread_start(&t, timed_join_huge, &b), 0);
    MU_POLL_UNTIL(vmt_thread_state(t) == VMT_THREAD_WAITING ||
                      vmt_thread_state(t) == VMT_THREAD_TIMED_WAITING,
                  "joining");
    latch_open(&l);
    assert_int_equal(vmt_thread_join(t, NULL), 0);
    assert_int_equal(b.rc, 0);
    vmt_thread_release(t);
    vmt_thread_release(target);
    latch_destroy(&l);
  }
}

/* ---- Monitors ------------------------------------------------------------------------------ */
static void *not_owner_calls(void *arg) {
  blocker_t *b = arg;
  vmt_thread_interrupt(vmt_thread_current());
  int ok = vmt_monitor_wait(b->m, 0) == -EPERM && vmt_monitor_wait(b->m, 1000) == -EPERM &&
           vmt_monitor_notify(b->m) == -EPERM && vmt_monitor_notify_all(b->m) == -EPERM &&
           vmt_monitor_exit(b->m) == -EPERM;
  /* IllegalMonitorStateException comes before the interrupt: the status stays. */
  b->rc = ok;
  b->status_after = vmt_thread_is_interrupted(vmt_thread_current());
  return NULL;
}

static void monitor_calls_without_ownership(void **state) {
  (void)state;
  blocker_t b = {0};
  assert_int_equal(vmt_monitor_create(&b.m, "imse"), 0);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, not_owner_calls, &b), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_true(b.rc);
  assert_true(b.status_after);
  vmt_thread_release(t);
  /* Owned by another thread: still not ours. */
  assert_int_equal(vmt_monitor_enter(b.m), 0);
  assert_int_equal(vmt_thread_start(&t, not_owner_calls, &b), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_true(b.rc);
  vmt_thread_release(t);
  assert_int_equal(vmt_monitor_exit(b.m), 0);
  assert_int_equal(vmt_monitor_destroy(b.m), 0);
}

static void a_notify_with_no_waiter_is_lost_and_depth_survives_waits(void **state) {
  (void)state;
  vmt_monitor_t *m;
  assert_int_equal(vmt_monitor_create(&m, "lost"), 0);
  for (int i = 0; i < 3; i++) assert_int_equal(vmt_monitor_enter(m), 0);
  assert_int_equal(vmt_monitor_notify(m), 0);
  assert_int_equal(vmt_monitor_notify_all(m), 0);
  assert_int_equal(vmt_monitor_wait(m, 1000), -ETIMEDOUT);
  assert_int_equal(vmt_monitor_holds_lock(m), 1);
  /* Interrupted at the call: at once, the depth untouched. */
  assert_int_equal(vmt_thread_interrupt(vmt_thread_current()), 0);
  assert_int_equal(vmt_monitor_wait(m, 0), -EINTR);
  assert_false(vmt_thread_is_interrupted(vmt_thread_current()));
  for (int i = 0; i < 3; i++) assert_int_equal(vmt_monitor_exit(m), 0);
  assert_int_equal(vmt_monitor_exit(m), -EPERM);
  assert_int_equal(vmt_monitor_holds_lock(m), 0);
  assert_int_equal(vmt_monitor_destroy(m), 0);
}

static atomic_int woken;
static void *wait_and_count(void *arg) {
  blocker_t *b = arg;
  vmt_monitor_enter(b->m);
  int rc = vmt_monitor_wait(b->m, 0);
  vmt_monitor_exit(b->m);
  if (rc == 0) atomic_fetch_add(&woken, 1);
  return NULL;
}

static void notify_wakes_one_and_notify_all_the_rest(void **state) {
  (void)state;
  enum { N = 4 };
  blocker_t b = {0};
  assert_int_equal(vmt_monitor_create(&b.m, "all"), 0);
  atomic_store(&woken, 0);
  vmt_thread_t *t[N];
  for (int i = 0; i < N; i++) assert_int_equal(vmt_thread_start(&t[i], wait_and_count, &b), 0);
  vmt_monitor_stats_t st;
  MU_POLL_UNTIL(vmt_monitor_get_stats(b.m, &st) == 0 && st.wait_waiters == N, "all waiting");
  assert_int_equal(vmt_monitor_enter(b.m), 0);
  assert_int_equal(vmt_monitor_notify(b.m), 0);
  assert_int_equal(vmt_monitor_exit(b.m), 0);
  MU_POLL_UNTIL(atomic_load(&woken) == 1, "one woken");
  MU_POLL_UNTIL(vmt_monitor_get_stats(b.m, &st) == 0 && st.wait_waiters == N - 1, "three left");
  assert_int_equal(atomic_load(&woken), 1);
  assert_int_equal(vmt_monitor_enter(b.m), 0);
  assert_int_equal(vmt_monitor_notify_all(b.m), 0);
  assert_int_equal(vmt_monitor_exit(b.m), 0);
  for (int i = 0; i < N; i++) {
    assert_int_equal(vmt_thread_join(t[i], NULL), 0);
    vmt_thread_release(t[i]);
  }
  assert_int_equal(atomic_load(&woken), N);
  assert_int_equal(vmt_monitor_get_stats(b.m, &st), 0);
  assert_int_equal(st.entry_waiters, 0);
  assert_int_equal(st.wait_waiters, 0);
  assert_int_equal(st.waits, N);
  assert_int_equal(st.owner_id, 0);
  assert_int_equal(vmt_monitor_destroy(b.m), 0);
}

static void *notify_and_end_holding(void *arg) {
  blocker_t *b = arg;
  vmt_monitor_enter(b->m);
  vmt_monitor_enter(b->m);
  vmt_monitor_notify(b->m);
  return NULL;   /* ends owning m at depth 2: the end releases it, and hands it on */
}

static void a_thread_that_ends_holding_a_monitor_hands_it_on(void **state) {
  (void)state;
  blocker_t w = {.timeout = 0};
  latch_init(&w.go);
  assert_int_equal(vmt_monitor_create(&w.m, "ends-holding"), 0);
  vmt_thread_t *waiter, *notifier;
  assert_int_equal(vmt_thread_start(&waiter, wait_huge, &w), 0);
  latch_wait(&w.go);
  wait_for_state(waiter, VMT_THREAD_WAITING);
  assert_int_equal(vmt_thread_start(&notifier, notify_and_end_holding, &w), 0);
  assert_int_equal(vmt_thread_join(notifier, NULL), 0);
  assert_int_equal(vmt_thread_timed_join(waiter, 10LL * 1000 * 1000 * 1000, NULL), 0);
  assert_int_equal(w.rc, 0);
  assert_true(w.depth_ok);
  assert_int_equal(vmt_monitor_try_enter(w.m), 0);
  assert_int_equal(vmt_monitor_exit(w.m), 0);
  vmt_thread_release(waiter);
  vmt_thread_release(notifier);
  assert_int_equal(vmt_monitor_destroy(w.m), 0);
  latch_destroy(&w.go);
}

static void *wait_with_timeout(void *arg) {
  blocker_t *b = arg;
  vmt_monitor_enter(b->m);
  latch_open(&b->go);
  b->rc = vmt_monitor_wait(b->m, b->timeout);
  b->depth_ok = vmt_monitor_holds_lock(b->m) == 1;
  b->status_after = vmt_thread_is_interrupted(vmt_thread_current());
  vmt_monitor_exit(b->m);
  return NULL;
}

static void a_waiter_that_stops_by_itself_is_blocked_until_it_reenters(void **state) {
  (void)state;
  for (int interrupt = 0; interrupt < 2; interrupt++) {
    blocker_t b = {.timeout = interrupt ? 0 : 200 * MU_MS};
    latch_init(&b.go);
    assert_int_equal(vmt_monitor_create(&b.m, "left"), 0);
    vmt_thread_t *t;
    assert_int_equal(vmt_thread_start(&t, wait_with_timeout, &b), 0);
    latch_wait(&b.go);
    MU_POLL_UNTIL(vmt_thread_state(t) == VMT_THREAD_WAITING ||
                      vmt_thread_state(t) == VMT_THREAD_TIMED_WAITING ||
                      vmt_thread_state(t) == VMT_THREAD_TERMINATED,
                  "in wait()");
    assert_int_equal(vmt_monitor_enter(b.m), 0);
    if (interrupt) assert_int_equal(vmt_thread_interrupt(t), 0);
    /* BLOCKED re-entering; TERMINATED only if a loaded machine let the timeout pass and the
     * waiter re-enter before our enter (then there is nothing to see). */
    MU_POLL_UNTIL(vmt_thread_state(t) == VMT_THREAD_BLOCKED ||
                      vmt_thread_state(t) == VMT_THREAD_TERMINATED,
                  "BLOCKED re-entering");
    assert_int_equal(vmt_monitor_exit(b.m), 0);
    assert_int_equal(vmt_thread_join(t, NULL), 0);
    assert_int_equal(b.rc, interrupt ? -EINTR : -ETIMEDOUT);
    assert_true(b.depth_ok);
    assert_int_equal(b.status_after, 0);
    vmt_thread_release(t);
    assert_int_equal(vmt_monitor_destroy(b.m), 0);
    latch_destroy(&b.go);
  }
}

typedef struct notify_race {
  vmt_monitor_t *m;
  int64_t timeout;
  atomic_int rc;   /* 1 while waiting */
  atomic_int in_wait;
} notify_race_t;

static void *race_waiter(void *arg) {
  notify_race_t *w = arg;
  vmt_monitor_enter(w->m);
  atomic_store(&w->in_wait, 1);
  int rc = vmt_monitor_wait(w->m, w->timeout);
  vmt_monitor_exit(w->m);
  atomic_store(&w->rc, rc);
  return NULL;
}

/* One notify against a waiter whose timeout runs out about then and one that waits for good:
 * the notify goes to one of them, never to the one that timed out (Object.notify picks a
 * thread that is waiting), so if the first timed out the second wakes with no other notify. */
static void a_notify_is_not_lost_to_a_waiter_that_timed_out(void **state) {
  (void)state;
  int rounds = 300, timed_out = 0;
  for (int i = 0; i < rounds; i++) {
    vmt_monitor_t *m;
    assert_int_equal(vmt_monitor_create(&m, "race"), 0);
    /* a first: the wait set is FIFO, so the notify is a's unless a has left it. */
    notify_race_t a = {.m = m, .timeout = 2 * MU_MS};
    notify_race_t b = {.m = m, .timeout = 0};
    atomic_init(&a.rc, 1);
    atomic_init(&b.rc, 1);
    atomic_init(&a.in_wait, 0);
    atomic_init(&b.in_wait, 0);
    vmt_thread_t *ta, *tb;
    assert_int_equal(vmt_thread_start(&ta, race_waiter, &a), 0);
    while (!atomic_load(&a.in_wait)) sched_yield();
    assert_int_equal(vmt_thread_start(&tb, race_waiter, &b), 0);
    while (!atomic_load(&b.in_wait)) sched_yield();
    assert_int_equal(vmt_monitor_enter(m), 0);   /* b (and a, unless it re-entered) wait */
    struct timespec ts = {0, (i % 13) * 200 * 1000};
    nanosleep(&ts, NULL);
    assert_int_equal(vmt_monitor_notify(m), 0);
    assert_int_equal(vmt_monitor_exit(m), 0);
    MU_POLL_UNTIL(atomic_load(&a.rc) != 1, "a done");
    if (atomic_load(&a.rc) == -ETIMEDOUT) {
      timed_out++;
      MU_POLL_UNTIL(atomic_load(&b.rc) != 1, "b woken by the one notify");
      assert_int_equal(atomic_load(&b.rc), 0);
    } else {
      assert_int_equal(atomic_load(&a.rc), 0);
      assert_int_equal(vmt_monitor_enter(m), 0);
      assert_int_equal(vmt_monitor_notify(m), 0);
      assert_int_equal(vmt_monitor_exit(m), 0);
    }
    assert_int_equal(vmt_thread_join(ta, NULL), 0);
    assert_int_equal(vmt_thread_join(tb, NULL), 0);
    assert_int_equal(atomic_load(&b.rc), 0);
    vmt_thread_release(ta);
    vmt_thread_release(tb);
    vmt_monitor_stats_t st;
    assert_int_equal(vmt_monitor_get_stats(m, &st), 0);
    assert_int_equal(st.entry_waiters, 0);
    assert_int_equal(st.wait_waiters, 0);
    assert_int_equal(vmt_monitor_destroy(m), 0);
  }
  print_message("a_notify_is_not_lost_to_a_waiter_that_timed_out: %d of %d timed out\n",
                timed_out, rounds);
}

/* ---- Park permits -------------------------------------------------------------------------- */
static void permits_do_not_accumulate_and_survive_a_sleep(void **state) {
  (void)state;
  vmt_thread_t *self = vmt_thread_current();
  assert_int_equal(vmt_unpark(self), 0);
  assert_int_equal(vmt_unpark(self), 0);
  assert_int_equal(vmt_park(0), 0);
  assert_int_equal(vmt_park_nanos(1000), -ETIMEDOUT);
  /* sleep does not consume the permit (Thread.sleep knows nothing of LockSupport). */
  assert_int_equal(vmt_unpark(self), 0);
  assert_int_equal(vmt_sleep_ns(1000), 0);
  assert_int_equal(vmt_park_nanos(MU_POLL_DEADLINE_NS), 0);
  /* Neither a monitor wait nor a timed join touches the permit. */
  vmt_monitor_t *m;
  assert_int_equal(vmt_monitor_create(&m, "permit"), 0);
  assert_int_equal(vmt_unpark(self), 0);
  assert_int_equal(vmt_monitor_enter(m), 0);
  assert_int_equal(vmt_monitor_wait(m, 1000), -ETIMEDOUT);
  assert_int_equal(vmt_monitor_exit(m), 0);
  assert_int_equal(vmt_monitor_destroy(m), 0);
  latch_t l;
  latch_init(&l);
  vmt_thread_t *held;
  assert_int_equal(vmt_thread_start(&held, wait_for_latch, &l), 0);
  assert_int_equal(vmt_thread_timed_join(held, 1000, NULL), -ETIMEDOUT);
  latch_open(&l);
  assert_int_equal(vmt_thread_join(held, NULL), 0);
  vmt_thread_release(held);
  latch_destroy(&l);
  assert_int_equal(vmt_park_nanos(MU_POLL_DEADLINE_NS), 0);
  /* parkNanos(<= 0) leaves the permit. */
  assert_int_equal(vmt_unpark(self), 0);
  assert_int_equal(vmt_park_nanos(0), -ETIMEDOUT);
  assert_int_equal(vmt_park_nanos(-1), -ETIMEDOUT);
  assert_int_equal(vmt_park_until(0, VMT_CLOCK_MONOTONIC), 0);   /* passed: takes it */
  assert_int_equal(vmt_park_until(0, VMT_CLOCK_REALTIME), -ETIMEDOUT);
  assert_int_equal(vmt_park_until(0, (vmt_clock_t)99), -EINVAL);
  /* A park with the status set: -EINTR, kept; a monitor wait then clears it. */
  assert_int_equal(vmt_thread_interrupt(self), 0);
  assert_int_equal(vmt_park(0), -EINTR);
  assert_int_equal(vmt_park_nanos(1000), -EINTR);
  assert_true(vmt_thread_is_interrupted(self));
  assert_true(vmt_thread_interrupted());
  assert_false(vmt_thread_interrupted());
  /* An unpark of a dead thread that is still referenced is harmless. */
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, return_arg, NULL), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(vmt_unpark(t), 0);
  vmt_thread_release(t);
}

/* ---- States -------------------------------------------------------------------------------- */
static void *park_forever(void *arg) {
  blocker_t *b = arg;
  b->rc = vmt_park(0);
  return NULL;
}

static void *park_until_far(void *arg) {
  blocker_t *b = arg;
  b->rc = vmt_park_until(vmt_nanotime() + 3600LL * 1000 * 1000 * 1000, VMT_CLOCK_MONOTONIC);
  return NULL;
}

static void *enter_monitor(void *arg) {
  blocker_t *b = arg;
  b->rc = vmt_monitor_enter(b->m);
  vmt_monitor_exit(b->m);
  return NULL;
}

static void *wait_timed(void *arg) {
  blocker_t *b = arg;
  vmt_monitor_enter(b->m);
  b->rc = vmt_monitor_wait(b->m, 3600LL * 1000 * 1000 * 1000);
  vmt_monitor_exit(b->m);
  return NULL;
}

static void states_as_java_reports_them(void **state) {
  (void)state;
  blocker_t b = {0};
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, park_forever, &b), 0);
  wait_for_state(t, VMT_THREAD_WAITING);
  vmt_unpark(t);
  vmt_thread_join(t, NULL);
  assert_int_equal(vmt_thread_state(t), VMT_THREAD_TERMINATED);
  vmt_thread_release(t);

  assert_int_equal(vmt_thread_start(&t, park_until_far, &b), 0);
  wait_for_state(t, VMT_THREAD_TIMED_WAITING);
  vmt_unpark(t);
  vmt_thread_join(t, NULL);
  assert_int_equal(b.rc, 0);
  vmt_thread_release(t);

  assert_int_equal(vmt_monitor_create(&b.m, "states"), 0);
  assert_int_equal(vmt_monitor_enter(b.m), 0);
  assert_int_equal(vmt_thread_start(&t, enter_monitor, &b), 0);
  wait_for_state(t, VMT_THREAD_BLOCKED);
  assert_int_equal(vmt_monitor_exit(b.m), 0);
  vmt_thread_join(t, NULL);
  vmt_thread_release(t);

  assert_int_equal(vmt_thread_start(&t, wait_timed, &b), 0);
  wait_for_state(t, VMT_THREAD_TIMED_WAITING);
  assert_int_equal(vmt_monitor_enter(b.m), 0);
  assert_int_equal(vmt_monitor_notify(b.m), 0);
  /* Notified, the monitor still ours: BLOCKED re-entering. */
  wait_for_state(t, VMT_THREAD_BLOCKED);
  assert_int_equal(vmt_monitor_exit(b.m), 0);
  vmt_thread_join(t, NULL);
  assert_int_equal(b.rc, 0);
  vmt_thread_release(t);
  assert_int_equal(vmt_monitor_destroy(b.m), 0);

  assert_int_equal(vmt_thread_state(NULL), VMT_THREAD_STATE_INVALID);
  assert_string_equal(vmt_thread_state_name((vmt_thread_state_t)42), "UNKNOWN");
}

/* ---- Join ---------------------------------------------------------------------------------- */
static void *join_self(void *arg) {
  int *r = arg;
  r[0] = vmt_thread_join(vmt_thread_current(), NULL);
  r[1] = vmt_thread_timed_join(vmt_thread_current(), 1000, NULL);
  r[2] = vmt_thread_timed_join(vmt_thread_current(), 0, NULL);
  return NULL;
}

static void join_of_self_and_of_attached_threads(void **state) {
  (void)state;
  int r[3];
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, join_self, r), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(r[0], -EDEADLK);
  assert_int_equal(r[1], -EDEADLK);
  assert_int_equal(r[2], -EDEADLK);
  assert_int_equal(vmt_thread_join(t, NULL), -EALREADY);
  vmt_thread_release(t);
  assert_int_equal(vmt_thread_join(t, NULL), -EINVAL);
  assert_int_equal(vmt_thread_join(NULL, NULL), -EINVAL);
  /* The attached main thread. */
  assert_int_equal(vmt_thread_join(vmt_thread_current(), NULL), -EINVAL);
}

typedef struct racing_joiner {
  vmt_thread_t *target;
  atomic_int rc;   /* 1 until the join returned */
} racing_joiner_t;

static void *join_racing(void *arg) {
  racing_joiner_t *j = arg;
  atomic_store(&j->rc, vmt_thread_join(j->target, NULL));
  return NULL;
}

static void several_joiners_at_once(void **state) {
  (void)state;
  enum { N = 3 };
  latch_t l;
  latch_init(&l);
  vmt_thread_t *target, *j[N];
  racing_joiner_t jr[N];
  assert_int_equal(vmt_thread_start(&target, wait_for_latch, &l), 0);
  for (int i = 0; i < N; i++) {
    jr[i].target = target;
    atomic_init(&jr[i].rc, 1);
    assert_int_equal(vmt_thread_start(&j[i], join_racing, &jr[i]), 0);
  }
  /* Documented: one join wins, the others get -EALREADY at once (Java lets all of them wait). */
  MU_POLL_UNTIL((atomic_load(&jr[0].rc) == -EALREADY) + (atomic_load(&jr[1].rc) == -EALREADY) +
                        (atomic_load(&jr[2].rc) == -EALREADY) ==
                    N - 1,
                "two joiners refused");
  latch_open(&l);
  int ok = 0, already = 0;
  for (int i = 0; i < N; i++) {
    assert_int_equal(vmt_thread_join(j[i], NULL), 0);
    vmt_thread_release(j[i]);
    ok += atomic_load(&jr[i].rc) == 0;
    already += atomic_load(&jr[i].rc) == -EALREADY;
  }
  assert_int_equal(ok, 1);
  assert_int_equal(already, N - 1);
  vmt_thread_release(target);
  latch_destroy(&l);
}

static void *timed_join_long(void *arg) {
  blocker_t *b = arg;
  latch_open(&b->go);
  b->rc = vmt_thread_timed_join(b->target, b->timeout, NULL);
  return NULL;
}

/* A join refused with -EALREADY because a timed join is in progress: that join may time out,
 * and then nobody has joined (the header once said the result goes to that join). */
static void already_while_a_timed_join_is_in_progress(void **state) {
  (void)state;
  latch_t l;
  latch_init(&l);
  blocker_t b = {.timeout = 300 * MU_MS};
  latch_init(&b.go);
  vmt_thread_t *target, *j;
  assert_int_equal(vmt_thread_start(&target, wait_for_latch, &l), 0);
  b.target = target;
  assert_int_equal(vmt_thread_start(&j, timed_join_long, &b), 0);
  wait_for_state(j, VMT_THREAD_TIMED_WAITING);
  assert_int_equal(vmt_thread_join(target, NULL), -EALREADY);
  assert_int_equal(vmt_thread_join(j, NULL), 0);
  assert_int_equal(b.rc, -ETIMEDOUT);
  latch_open(&l);
  assert_int_equal(vmt_thread_join(target, NULL), 0);   /* the result went to nobody before */
  vmt_thread_release(j);
  vmt_thread_release(target);
  latch_destroy(&b.go);
  latch_destroy(&l);
}

typedef struct join_race {
  vmt_thread_t *target;
  atomic_int sent;   /* the interrupt has been made */
  int rc, status, rejoin;
} join_race_t;

static void *join_then_report(void *arg) {
  join_race_t *r = arg;
  r->rc = vmt_thread_join(r->target, NULL);
  while (!atomic_load(&r->sent)) sched_yield();
  r->status = vmt_thread_interrupted();
  r->rejoin = r->rc == -EINTR ? vmt_thread_join(r->target, NULL) : 0;
  return NULL;
}

/* An interrupt racing a join and the target's end: the interrupt is consumed by the join
 * (-EINTR, the target joinable after) or left pending (the join succeeded), exactly one. */
static void interrupt_races_join_and_exit(void **state) {
  (void)state;
  int rounds = 500, interrupted = 0;
  for (int i = 0; i < rounds; i++) {
    join_race_t r = {.target = NULL};
    atomic_init(&r.sent, 0);
    vmt_thread_t *j;
    assert_int_equal(vmt_thread_start(&r.target, return_arg, NULL), 0);
    assert_int_equal(vmt_thread_start(&j, join_then_report, &r), 0);
    if (i & 1) sched_yield();
    assert_int_equal(vmt_thread_interrupt(j), 0);
    atomic_store(&r.sent, 1);
    assert_int_equal(vmt_thread_join(j, NULL), 0);
    if (r.rc == -EINTR) {
      interrupted++;
      assert_int_equal(r.status, 0);
      assert_int_equal(r.rejoin, 0);
    } else {
      assert_int_equal(r.rc, 0);
      assert_int_equal(r.status, 1);
    }
    vmt_thread_release(j);
    vmt_thread_release(r.target);
  }
  print_message("interrupt_races_join_and_exit: %d of %d joins interrupted\n", interrupted,
                rounds);
}

/* ---- Attach, detach, stale attached handles ---------------------------------------------- */
static void *attach_count(void *arg) {
  int *r = arg;
  vmt_thread_t *a, *b;
  r[0] = vmt_thread_attach(NULL, &a);
  r[1] = vmt_thread_attach(NULL, &b);
  r[2] = a == b && vmt_thread_current() == a;
  r[3] = vmt_thread_detach();
  r[4] = vmt_thread_current() == a && vmt_thread_state(a) == VMT_THREAD_RUNNABLE;
  r[5] = vmt_thread_exit(NULL);
  r[6] = vmt_thread_detach();
  r[7] = vmt_thread_current() == NULL;
  r[8] = vmt_thread_detach();
  /* Stale from the last detach on: no user reference was ever taken. */
  r[9] = vmt_thread_interrupt(a);
  r[10] = vmt_unpark(a);
  r[11] = vmt_thread_set_name(a, "x");
  char buf[8];
  r[12] = vmt_thread_get_name(a, buf, sizeof buf);
  r[13] = vmt_thread_retain(a);
  r[14] = vmt_thread_release(a);
  return NULL;
}

static void attach_and_detach_count_and_leave_a_stale_handle(void **state) {
  (void)state;
  int r[15];
  pthread_t p;
  assert_int_equal(pthread_create(&p, NULL, attach_count, r), 0);
  assert_int_equal(pthread_join(p, NULL), 0);
  assert_int_equal(r[0], 0);
  assert_int_equal(r[1], 0);
  assert_true(r[2]);
  assert_int_equal(r[3], 0);
  assert_true(r[4]);
  assert_int_equal(r[5], -EPERM);
  assert_int_equal(r[6], 0);
  assert_true(r[7]);
  assert_int_equal(r[8], -EINVAL);
  assert_int_equal(r[9], -EINVAL);
  assert_int_equal(r[10], -EINVAL);
  assert_int_equal(r[11], -EINVAL);
  assert_int_equal(r[12], -EINVAL);
  assert_int_equal(r[13], -EINVAL);
  assert_int_equal(r[14], -EINVAL);
}

static void *attach_from_started(void *arg) {
  int *r = arg;
  vmt_thread_t *a = NULL;
  r[0] = vmt_thread_attach(NULL, &a);
  r[1] = a == NULL;
  r[2] = vmt_thread_detach();
  return NULL;
}

static void a_started_thread_cannot_attach_or_detach(void **state) {
  (void)state;
  int r[3];
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, attach_from_started, r), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  vmt_thread_release(t);
  assert_int_equal(r[0], -EINVAL);
  assert_true(r[1]);
  assert_int_equal(r[2], -EINVAL);
}

typedef struct kept {
  vmt_monitor_t *m;
  vmt_thread_t *self;
  latch_t entered, interrupted;
  int wait_rc, interrupted_after;
  atomic_int second_wait;   /* 1 in the second wait, 2 once it returned */
  int second_rc;
} kept_t;

static void *detach_holding_then_wait(void *arg) {
  kept_t *k = arg;
  vmt_thread_attach(NULL, &k->self);
  vmt_thread_retain(k->self);
  vmt_monitor_enter(k->m);
  latch_open(&k->entered);
  latch_wait(&k->interrupted);
  vmt_thread_detach();   /* keeps m: the thread is still inside it */
  k->wait_rc = vmt_monitor_wait(k->m, 1000 * 1000);
  k->interrupted_after = vmt_thread_interrupted();
  /* Interrupted through the retained handle while it waits: still not interruptible. */
  atomic_store(&k->second_wait, 1);
  k->second_rc = vmt_monitor_wait(k->m, 100 * MU_MS);
  atomic_store(&k->second_wait, 2);
  vmt_monitor_exit(k->m);
  return NULL;
}

/* Interrupted while attached, the thread detaches still holding a monitor and waits on it: it
 * is no runtime thread any more (a thread without record cannot be interrupted), and the
 * status of its terminated record stays as it was ("a terminated thread keeps it"). */
static void a_detached_thread_keeps_no_interrupt_for_its_waits(void **state) {
  (void)state;
  kept_t k = {.m = NULL};
  atomic_init(&k.second_wait, 0);
  latch_init(&k.entered);
  latch_init(&k.interrupted);
  assert_int_equal(vmt_monitor_create(&k.m, "kept"), 0);
  pthread_t p;
  assert_int_equal(pthread_create(&p, NULL, detach_holding_then_wait, &k), 0);
  latch_wait(&k.entered);
  assert_int_equal(vmt_thread_interrupt(k.self), 0);
  latch_open(&k.interrupted);
  while (atomic_load(&k.second_wait) != 2) {
    if (atomic_load(&k.second_wait) == 1) assert_int_equal(vmt_thread_interrupt(k.self), 0);
    mu_pause_1ms();
  }
  assert_int_equal(pthread_join(p, NULL), 0);
  assert_int_equal(k.second_rc, -ETIMEDOUT);
  assert_int_equal(k.wait_rc, -ETIMEDOUT);
  assert_int_equal(k.interrupted_after, 0);
  assert_int_equal(vmt_thread_state(k.self), VMT_THREAD_TERMINATED);
  assert_true(vmt_thread_is_interrupted(k.self));
  assert_int_equal(vmt_thread_release(k.self), 0);
  assert_int_equal(vmt_monitor_destroy(k.m), 0);
  latch_destroy(&k.entered);
  latch_destroy(&k.interrupted);
}

/* ---- Names --------------------------------------------------------------------------------- */
static void *rename_and_report(void *arg) {
  char **names = arg;
  vmt_thread_set_name(vmt_thread_current(), names[0]);
  names[1] = strdup(vmt_thread_os_name(vmt_thread_current()));
  return NULL;
}

static void names_at_their_limits(void **state) {
  (void)state;
  char *big = malloc(VMT_THREAD_NAME_MAX + 2);
  memset(big, 'n', VMT_THREAD_NAME_MAX + 1);
  big[VMT_THREAD_NAME_MAX + 1] = '\0';
  vmt_thread_t *t;
  vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_NAME, .name = big};
  assert_int_equal(vmt_thread_start_ex(&t, &o, return_arg, NULL), -EINVAL);
  big[VMT_THREAD_NAME_MAX] = '\0';
  assert_int_equal(vmt_thread_start_ex(&t, &o, return_arg, NULL), 0);
  assert_int_equal(strlen(vmt_thread_name(t)), VMT_THREAD_NAME_MAX);
  assert_int_equal(vmt_thread_get_name(t, NULL, 0), VMT_THREAD_NAME_MAX);
  char small[4];
  assert_int_equal(vmt_thread_get_name(t, small, sizeof small), VMT_THREAD_NAME_MAX);
  assert_string_equal(small, "nnn");
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  /* Renaming a terminated thread is allowed ("whatever t's state"). */
  assert_int_equal(vmt_thread_set_name(t, "after\xc3\xa9nd"), 0);
  assert_string_equal(vmt_thread_name(t), "after\xc3\xa9nd");
  const char *bad[] = {"", "\xc3", "\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xff",
                       "a\x80"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(vmt_thread_set_name(t, bad[i]), -EINVAL);
  assert_string_equal(vmt_thread_name(t), "after\xc3\xa9nd");
  vmt_thread_release(t);
  assert_int_equal(vmt_thread_set_name(t, "stale"), -EINVAL);
  free(big);

  /* The kernel's 15 bytes are cut at a character boundary. */
  char *names[2] = {"abcdefghijklm\xf0\x9f\x98\x80z", NULL};
  assert_int_equal(vmt_thread_start(&t, rename_and_report, names), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_string_equal(names[1], "abcdefghijklm");
  free(names[1]);
  vmt_thread_release(t);
}

/* ---- TLS ----------------------------------------------------------------------------------- */
static vmt_tls_key_t key_a, key_b;
static atomic_int dtor_a, dtor_b;
static void dtor_for_a(void *v) {
  (void)v;
  atomic_fetch_add(&dtor_a, 1);
}
static void dtor_for_b(void *v) {
  (void)v;
  /* Re-sets a slot already passed this round: it gets another round. */
  if (atomic_fetch_add(&dtor_b, 1) == 0) vmt_tls_set(key_a, (void *)2);
}

static void *set_both(void *arg) {
  (void)arg;
  vmt_tls_set(key_a, (void *)1);
  vmt_tls_set(key_b, (void *)1);
  return NULL;
}

static void a_destructor_may_set_an_earlier_slot(void **state) {
  (void)state;
  assert_int_equal(vmt_tls_key_create(&key_a, dtor_for_a), 0);
  assert_int_equal(vmt_tls_key_create(&key_b, dtor_for_b), 0);
  assert_true(key_a < key_b);
  atomic_store(&dtor_a, 0);
  atomic_store(&dtor_b, 0);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, set_both, NULL), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  void *v = (void *)1;
  assert_int_equal(vmt_thread_tls_get(t, key_a, &v), 0);
  assert_null(v);
  vmt_thread_release(t);
  assert_int_equal(atomic_load(&dtor_a), 2);
  assert_int_equal(atomic_load(&dtor_b), 1);
  /* A freed key: set refused, read NULL; its index handed out again starts NULL. */
  assert_int_equal(vmt_tls_set(key_a, (void *)7), 0);
  assert_int_equal(vmt_tls_key_delete(key_a), 0);
  assert_null(vmt_tls_get(key_a));
  assert_int_equal(vmt_tls_set(key_a, (void *)8), -EINVAL);
  assert_int_equal(vmt_tls_key_delete(key_a), -EINVAL);
  vmt_tls_key_t again;
  assert_int_equal(vmt_tls_key_create(&again, NULL), 0);
  assert_int_equal(again, key_a);
  assert_null(vmt_tls_get(again));
  assert_int_equal(vmt_tls_key_delete(again), 0);
  assert_int_equal(vmt_tls_key_delete(key_b), 0);
  assert_int_equal(vmt_tls_key_delete(0), -EINVAL);
  assert_int_equal(vmt_tls_key_delete(VMT_TLS_KEYS_MAX), -EINVAL);
}

static void tls_values_survive_fork_in_the_child(void **state) {
  (void)state;
  vmt_tls_key_t k;
  assert_int_equal(vmt_tls_key_create(&k, NULL), 0);
  assert_int_equal(vmt_tls_set(k, (void *)0x1234), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int ok = vmt_tls_get(k) == (void *)0x1234 && vmt_tls_set(k, (void *)5) == 0 &&
             vmt_tls_get(k) == (void *)5;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_ptr_equal(vmt_tls_get(k), (void *)0x1234);
  assert_int_equal(vmt_tls_set(k, NULL), 0);
  assert_int_equal(vmt_tls_key_delete(k), 0);
}

/* ---- Stacks -------------------------------------------------------------------------------- */
static void *own_stack(void *arg) {
  vmt_stack_info_t *s = arg;
  int local = 0;
  if (vmt_thread_stack_info(vmt_thread_current(), s) != 0) s->lo = s->hi = 0;
  uintptr_t here = (uintptr_t)&local;
  if (here < s->lo || here >= s->hi) s->lo = s->hi = 0;
  return NULL;
}

static void stack_bounds_hold_the_frame(void **state) {
  (void)state;
  vmt_stack_info_t s;
  int local = 0;
  assert_int_equal(vmt_thread_stack_info(vmt_thread_current(), &s), 0);
  assert_true((uintptr_t)&local >= s.lo && (uintptr_t)&local < s.hi);
  assert_true(vmt_stack_bytes_left() > 0 && vmt_stack_bytes_left() < s.hi - s.lo);
  const size_t sizes[] = {1, 64 * 1024, 300 * 1024 + 1, 4 * 1024 * 1024};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_STACK_SIZE, .stack_size = sizes[i]};
    vmt_thread_t *t;
    assert_int_equal(vmt_thread_start_ex(&t, &o, own_stack, &s), 0);
    assert_int_equal(vmt_thread_join(t, NULL), 0);
    vmt_thread_release(t);
    assert_true(s.hi > s.lo);
    /* Rounded up to a page, at least 64 KiB: the usable part is not a small fraction of it. */
    size_t want = sizes[i] < 64 * 1024 ? 64 * 1024 : (sizes[i] + 4095) / 4096 * 4096;
    /* No upper bound: glibc hands a cached stack up to 4x the request to a new thread, and
     * the bounds are exactly what pthread_getattr_np reports (8 MiB for a 4 MiB request). */
    assert_true(s.hi - s.lo >= want / 2);
  }
}

/* ---- Runtime calls from the exit path ----------------------------------------------------- */
static atomic_int exit_rc = 1;
static void exit_from_hook(vmt_thread_t *t, void *ctx) {
  (void)t;
  (void)ctx;
  atomic_store(&exit_rc, vmt_thread_exit((void *)0x99));
}

static void exit_called_from_an_exit_hook(void **state) {
  (void)state;
  assert_int_equal(vmt_thread_hooks_add(NULL, exit_from_hook, NULL), 0);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, return_arg, (void *)7), 0);
  void *res = NULL;
  /* Before the remove: a hook call that never returned would make it wait for good. */
  assert_int_equal(vmt_thread_timed_join(t, 5LL * 1000 * 1000 * 1000, &res), 0);
  assert_int_equal(vmt_thread_hooks_remove(NULL, exit_from_hook, NULL), 0);
  assert_int_equal(atomic_load(&exit_rc), -EPERM);
  assert_ptr_equal(res, (void *)7);
  vmt_thread_release(t);
}

static void exit_from_start_hook(vmt_thread_t *t, void *ctx) {
  (void)ctx;
  if (vmt_thread_current() == t) vmt_thread_exit((void *)0x77);
}

static void *never_runs(void *arg) {
  (void)arg;
  return (void *)1;
}

static atomic_int remove_rc = 1;
static void *remove_start_hook(void *arg) {
  (void)arg;
  atomic_store(&remove_rc, vmt_thread_hooks_remove(exit_from_start_hook, NULL, NULL));
  return NULL;
}

/* vmt_thread_exit from an on_start hook ends the thread before its body (valid: the thread is
 * a started one, and not on its way out yet); the hook's call must count as finished, or the
 * hook's removal waits for it for good. */
static void exit_called_from_a_start_hook(void **state) {
  (void)state;
  assert_int_equal(vmt_thread_hooks_add(exit_from_start_hook, NULL, NULL), 0);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, never_runs, NULL), 0);
  void *res = NULL;
  assert_int_equal(vmt_thread_timed_join(t, 5LL * 1000 * 1000 * 1000, &res), 0);
  assert_ptr_equal(res, (void *)0x77);
  vmt_thread_release(t);
  /* The remove on a helper thread, so that a hang fails the test instead of the run. */
  pthread_t p;
  assert_int_equal(pthread_create(&p, NULL, remove_start_hook, NULL), 0);
  MU_POLL_UNTIL(atomic_load(&remove_rc) != 1, "hooks_remove to return");
  assert_int_equal(pthread_join(p, NULL), 0);
  assert_int_equal(atomic_load(&remove_rc), 0);
}

static atomic_int in_cancel_hook;
static pthread_t cancel_hook_thread;
static void block_in_start_hook(vmt_thread_t *t, void *ctx) {
  (void)t;
  (void)ctx;
  cancel_hook_thread = pthread_self();
  atomic_store(&in_cancel_hook, 1);
  /* Cancelled at pthread_testcancel: sched_yield is no cancellation point. A request acted on
   * inside a blocking call (nanosleep) unwinds from the SIGCANCEL handler, which GCC's ASan
   * may report as a stack-buffer-overflow depending on frame layout (google/sanitizers#1399,
   * glibc's cancellation longjmp leaves the skipped frames poisoned). */
  for (;;) {
    pthread_testcancel();
    sched_yield();
  }
}

static void *remove_cancel_hook(void *arg) {
  (void)arg;
  atomic_store(&remove_rc, vmt_thread_hooks_remove(block_in_start_hook, NULL, NULL));
  return NULL;
}

/* Cancelled inside its on_start hook: the thread ends (PTHREAD_CANCELED), and the hook's call
 * counts as finished. */
static void cancelled_inside_a_start_hook(void **state) {
  (void)state;
  atomic_store(&in_cancel_hook, 0);
  atomic_store(&remove_rc, 1);
  assert_int_equal(vmt_thread_hooks_add(block_in_start_hook, NULL, NULL), 0);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, never_runs, NULL), 0);
  MU_POLL_UNTIL(atomic_load(&in_cancel_hook), "the start hook");
  pthread_t p;
  assert_int_equal(pthread_create(&p, NULL, remove_cancel_hook, NULL), 0);
  /* The remove waits while the hook runs (it may also start after the hook's end). */
  assert_int_equal(pthread_cancel(cancel_hook_thread), 0);
  void *res = NULL;
  assert_int_equal(vmt_thread_timed_join(t, 5LL * 1000 * 1000 * 1000, &res), 0);
  assert_ptr_equal(res, PTHREAD_CANCELED);
  vmt_thread_release(t);
  MU_POLL_UNTIL(atomic_load(&remove_rc) != 1, "hooks_remove to return");
  assert_int_equal(pthread_join(p, NULL), 0);
  assert_int_equal(atomic_load(&remove_rc), 0);
}

static vmt_tls_key_t exit_key;
static void exit_from_destructor(void *v) {
  (void)v;
  atomic_store(&exit_rc, vmt_thread_exit((void *)0x98));
}

static void *set_exit_slot(void *arg) {
  vmt_tls_set(exit_key, arg);
  return arg;
}

static void exit_called_from_a_tls_destructor(void **state) {
  (void)state;
  assert_int_equal(vmt_tls_key_create(&exit_key, exit_from_destructor), 0);
  atomic_store(&exit_rc, 1);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, set_exit_slot, (void *)5), 0);
  void *res = NULL;
  assert_int_equal(vmt_thread_timed_join(t, 5LL * 1000 * 1000 * 1000, &res), 0);
  assert_int_equal(atomic_load(&exit_rc), -EPERM);
  assert_ptr_equal(res, (void *)5);
  vmt_thread_release(t);
  assert_int_equal(vmt_tls_key_delete(exit_key), 0);
}

static vmt_tls_key_t attach_key;
static atomic_int attach_in_dtor_rc = 1;
static void attach_from_destructor(void *v) {
  (void)v;
  vmt_thread_t *again = NULL;
  atomic_store(&attach_in_dtor_rc, vmt_thread_attach(NULL, &again));
}

static void *attach_set_detach(void *arg) {
  int *r = arg;
  vmt_thread_t *self;
  r[0] = vmt_thread_attach(NULL, &self);
  vmt_tls_set(attach_key, (void *)1);
  r[1] = vmt_thread_detach();
  r[2] = vmt_thread_current() != NULL;
  r[3] = vmt_thread_detach();
  r[4] = vmt_thread_current() == NULL;
  return NULL;
}

static void attach_from_the_last_detach_is_not_a_phantom(void **state) {
  (void)state;
  assert_int_equal(vmt_tls_key_create(&attach_key, attach_from_destructor), 0);
  int r[5];
  pthread_t p;
  assert_int_equal(pthread_create(&p, NULL, attach_set_detach, r), 0);
  assert_int_equal(pthread_join(p, NULL), 0);
  assert_int_equal(vmt_tls_key_delete(attach_key), 0);
  assert_int_equal(r[0], 0);
  assert_int_equal(r[1], 0);
  /* Refused (the header's rule), and the thread is not attached after its last detach. Before
   * the fix the attach answered 0 and the thread was detached all the same (r[2] false). */
  assert_int_equal(atomic_load(&attach_in_dtor_rc), -EINVAL);
  assert_false(r[2]);
  assert_int_equal(r[3], -EINVAL);
  assert_true(r[4]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      T(sleep_zero_and_negative_with_the_status),
      T(a_thread_without_record_has_no_status_nor_permit),
      T(timed_join_try_with_the_status),
      T(huge_and_negative_wait_timeouts_wait_for_the_notify),
      T(huge_timeouts_sleep_park_and_join_do_not_return_at_once),
      T(monitor_calls_without_ownership),
      T(a_notify_with_no_waiter_is_lost_and_depth_survives_waits),
      T(notify_wakes_one_and_notify_all_the_rest),
      T(a_thread_that_ends_holding_a_monitor_hands_it_on),
      T(a_waiter_that_stops_by_itself_is_blocked_until_it_reenters),
      T(a_notify_is_not_lost_to_a_waiter_that_timed_out),
      T(permits_do_not_accumulate_and_survive_a_sleep),
      T(states_as_java_reports_them),
      T(join_of_self_and_of_attached_threads),
      T(several_joiners_at_once),
      T(interrupt_races_join_and_exit),
      T(already_while_a_timed_join_is_in_progress),
      T(attach_and_detach_count_and_leave_a_stale_handle),
      T(a_started_thread_cannot_attach_or_detach),
      T(a_detached_thread_keeps_no_interrupt_for_its_waits),
      T(names_at_their_limits),
      T(a_destructor_may_set_an_earlier_slot),
      T(tls_values_survive_fork_in_the_child),
      T(stack_bounds_hold_the_frame),
      T(exit_called_from_an_exit_hook),
      T(exit_called_from_a_tls_destructor),
      T(exit_called_from_a_start_hook),
      T(cancelled_inside_a_start_hook),
      T(attach_from_the_last_detach_is_not_a_phantom),
  };
  return cmocka_run_group_tests(tests, mu_attach_main, mu_detach_main);
}
