/*
 * test/interrupt_test.c: Thread.interrupt and the timed and interruptible blocking calls,
 * through the public API (the rules are the table of docs/thread-api.md):
 * - each primitive interrupted before and during the call: sleep and join return -EINTR and
 *   clear the status; park returns -EINTR and keeps it, and a permit present wins; a
 *   terminated thread is joined whatever the status; monitor enter and the synchronizer's
 *   lock ignore interrupts;
 * - timeouts: parkNanos(<= 0) returns at once without the permit, parkUntil on both clocks
 *   (a passed deadline still takes the permit), timed join (-ETIMEDOUT, and the thread can be
 *   joined after), the WAITING / TIMED_WAITING states and waited counts of a join;
 * - monitor wait: interrupted before (at once, the monitor never released) and during (-EINTR
 *   only once re-entered, to its depth, the status cleared), both notified and interrupted
 *   (whoever came first wins; the notify is never lost), a timeout and an interrupt;
 * - a race of unpark and interrupt against park over 10^7 rounds, and of notify and interrupt
 *   against wait over 10^6 (fewer under the sanitizers, which make each round 5-50x slower):
 *   no wake-up is lost (the target would sleep for good) and nothing is consumed twice;
 * - timer slack: the runtime's default for started threads, the option, attach, bad values.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "test/monitor_util.h"
#include "test/thread_util.h"
#include "vmthread.h"

static void wait_for_state(vmt_thread_t *t, vmt_thread_state_t state) {
  MU_POLL_UNTIL(vmt_thread_state(t) == state, vmt_thread_state_name(state));
}

static const int64_t LONG_NS = 60LL * 1000 * 1000 * 1000;   /* never reached in a passing run */

/* ---- Basics ----------------------------------------------------------------------------- */
static void *report_interrupted(void *arg) {
  *(int *)arg = vmt_thread_interrupted() ? 1 : 0;
  return NULL;
}

static void status_is_set_read_and_cleared(void **state) {
  (void)state;
  assert_int_equal(vmt_thread_interrupt(NULL), -EINVAL);
  assert_false(vmt_thread_is_interrupted(NULL));
  /* A thread without record cannot be interrupted. */
  int seen = -1;
  pthread_t p;
  assert_int_equal(pthread_create(&p, NULL, report_interrupted, &seen), 0);
  assert_int_equal(pthread_join(p, NULL), 0);
  assert_int_equal(seen, 0);
  /* The calling thread: set, seen, cleared once. */
  vmt_thread_t *self = vmt_thread_current();
  assert_false(vmt_thread_is_interrupted(self));
  assert_int_equal(vmt_thread_interrupt(self), 0);
  assert_true(vmt_thread_is_interrupted(self));
  assert_true(vmt_thread_is_interrupted(self));   /* isInterrupted leaves it */
  assert_true(vmt_thread_interrupted());
  assert_false(vmt_thread_interrupted());
  assert_false(vmt_thread_is_interrupted(self));
  /* A terminated thread keeps what it was given (Java's isInterrupted of a dead thread). */
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, return_arg, NULL), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(vmt_thread_interrupt(t), 0);
  assert_true(vmt_thread_is_interrupted(t));
  assert_int_equal(vmt_thread_release(t), 0);
}

/* ---- Sleep ------------------------------------------------------------------------------ */
typedef struct blocked_call {
  int (*call)(void *arg);
  void *arg;
  bool interrupt_first;      /* the thread interrupts itself before the call */
  int rc;
  bool interrupted_after;    /* its status after the call */
  latch_t entered;
} blocked_call_t;

static void *run_call(void *arg) {
  blocked_call_t *b = arg;
  if (b->interrupt_first) vmt_thread_interrupt(vmt_thread_current());
  latch_open(&b->entered);
  b->rc = b->call(b->arg);
  b->interrupted_after = vmt_thread_is_interrupted(vmt_thread_current());
  return NULL;
}

/* Runs call on a new thread: with `before`, interrupted before the call; else interrupted once
 * it is in `waiting_state` inside the call. */
static blocked_call_t run_interrupted(int (*call)(void *), void *arg, bool before,
                                      vmt_thread_state_t waiting_state) {
  blocked_call_t b = {.call = call, .arg = arg, .interrupt_first = before};
  latch_init(&b.entered);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, run_call, &b), 0);
  if (!before) {
    latch_wait(&b.entered);
    /* RUNNABLE: a call that does not block (it races with the interrupt). */
    if (waiting_state != VMT_THREAD_RUNNABLE) wait_for_state(t, waiting_state);
    assert_int_equal(vmt_thread_interrupt(t), 0);
  }
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(vmt_thread_release(t), 0);
  latch_destroy(&b.entered);
  return b;
}

static int sleep_long(void *arg) {
  (void)arg;
  return vmt_sleep_ns(LONG_NS);
}

static int sleep_zero(void *arg) {
  (void)arg;
  return vmt_sleep_ns(0);
}

static void sleep_is_interrupted_and_clears(void **state) {
  (void)state;
  blocked_call_t b = run_interrupted(sleep_long, NULL, false, VMT_THREAD_TIMED_WAITING);
  assert_int_equal(b.rc, -EINTR);
  assert_false(b.interrupted_after);
  b = run_interrupted(sleep_long, NULL, true, VMT_THREAD_RUNNABLE);
  assert_int_equal(b.rc, -EINTR);
  assert_false(b.interrupted_after);
  b = run_interrupted(sleep_zero, NULL, true, VMT_THREAD_RUNNABLE);   /* Thread.sleep(0) too */
  assert_int_equal(b.rc, -EINTR);
  assert_false(b.interrupted_after);
  b = run_interrupted(sleep_zero, NULL, false, VMT_THREAD_RUNNABLE);
  assert_true(b.rc == 0 || b.rc == -EINTR);   /* raced with the interrupt: either is right */
}

/* ---- Park ------------------------------------------------------------------------------- */
static int park_forever(void *arg) {
  (void)arg;
  return vmt_park(0);
}
static int park_nanos_long(void *arg) {
  (void)arg;
  return vmt_park_nanos(LONG_NS);
}
static int park_until_long(void *arg) {
  vmt_clock_t clock = *(vmt_clock_t *)arg;
  int64_t now = clock == VMT_CLOCK_REALTIME ? test_clock_ns(CLOCK_REALTIME) : vmt_nanotime();
  return vmt_park_until(now + LONG_NS, clock);
}

static void park_is_interrupted_and_keeps_the_status(void **state) {
  (void)state;
  vmt_clock_t mono = VMT_CLOCK_MONOTONIC, wall = VMT_CLOCK_REALTIME;
  struct {
    int (*call)(void *);
    void *arg;
    vmt_thread_state_t waiting;
  } parks[] = {{park_forever, NULL, VMT_THREAD_WAITING},
               {park_nanos_long, NULL, VMT_THREAD_TIMED_WAITING},
               {park_until_long, &mono, VMT_THREAD_TIMED_WAITING},
               {park_until_long, &wall, VMT_THREAD_TIMED_WAITING}};
  for (size_t i = 0; i < sizeof(parks) / sizeof(parks[0]); i++) {
    for (int before = 0; before <= 1; before++) {
      blocked_call_t b = run_interrupted(parks[i].call, parks[i].arg, before, parks[i].waiting);
      assert_int_equal(b.rc, -EINTR);
      assert_true(b.interrupted_after);   /* park never clears it */
    }
  }
}

static void *permit_and_status(void *arg) {
  int *rc = arg;
  vmt_thread_t *self = vmt_thread_current();
  vmt_unpark(self);
  vmt_thread_interrupt(self);
  rc[0] = vmt_park(0);                  /* the permit wins */
  rc[1] = vmt_park(0);                  /* then the status: at once */
  rc[2] = vmt_park_nanos(LONG_NS);
  rc[3] = vmt_thread_interrupted() ? 1 : 0;
  rc[4] = vmt_park_nanos(1000 * 1000);  /* cleared: a real wait, which times out */
  return NULL;
}

static void a_permit_wins_over_the_status(void **state) {
  (void)state;
  int rc[5];
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, permit_and_status, rc), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(vmt_thread_release(t), 0);
  assert_int_equal(rc[0], 0);
  assert_int_equal(rc[1], -EINTR);
  assert_int_equal(rc[2], -EINTR);
  assert_int_equal(rc[3], 1);
  assert_int_equal(rc[4], -ETIMEDOUT);
}

static void *timed_parks(void *arg) {
  int *rc = arg;
  vmt_thread_t *self = vmt_thread_current();
  vmt_unpark(self);
  rc[0] = vmt_park_nanos(0);            /* parkNanos(0): no wait, the permit untouched */
  rc[1] = vmt_park_nanos(-5);
  rc[2] = vmt_park(0);                  /* so this one takes it at once */
  vmt_unpark(self);
  rc[3] = vmt_park_until(vmt_nanotime() - 1000, VMT_CLOCK_MONOTONIC);   /* passed: takes it */
  rc[4] = vmt_park_until(vmt_nanotime() + 2 * 1000 * 1000, VMT_CLOCK_MONOTONIC);
  rc[5] = vmt_park_until(test_clock_ns(CLOCK_REALTIME) + 2 * 1000 * 1000, VMT_CLOCK_REALTIME);
  rc[6] = vmt_park_until(0, VMT_CLOCK_REALTIME);
  rc[7] = vmt_park_until(1, (vmt_clock_t)7);
  int64_t t0 = vmt_nanotime();
  rc[8] = vmt_park_nanos(3 * 1000 * 1000);
  rc[9] = vmt_nanotime() - t0 >= 3 * 1000 * 1000;   /* never early */
  return NULL;
}

static void park_timeouts_follow_java(void **state) {
  (void)state;
  int rc[10];
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, timed_parks, rc), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(vmt_thread_release(t), 0);
  assert_int_equal(rc[0], -ETIMEDOUT);
  assert_int_equal(rc[1], -ETIMEDOUT);
  assert_int_equal(rc[2], 0);
  assert_int_equal(rc[3], 0);
  assert_int_equal(rc[4], -ETIMEDOUT);
  assert_int_equal(rc[5], -ETIMEDOUT);
  assert_int_equal(rc[6], -ETIMEDOUT);
  assert_int_equal(rc[7], -EINVAL);
  assert_int_equal(rc[8], -ETIMEDOUT);
  assert_int_equal(rc[9], 1);
  /* Without a record there is no permit. */
  assert_int_equal(vmt_thread_detach(), 0);
  assert_int_equal(vmt_park_nanos(1), -EPERM);
  assert_int_equal(vmt_park_until(0, VMT_CLOCK_MONOTONIC), -EPERM);
  vmt_thread_t *self;
  assert_int_equal(vmt_thread_attach(NULL, &self), 0);
}

/* ---- Join ------------------------------------------------------------------------------- */
typedef struct join_arg {
  vmt_thread_t *target;
  int64_t timeout;   /* < 0: vmt_thread_join */
} join_arg_t;

static int join_interruptibly(void *arg) {
  join_arg_t *j = arg;
  return j->timeout < 0 ? vmt_thread_join(j->target, NULL)
                        : vmt_thread_timed_join(j->target, j->timeout, NULL);
}

static void join_is_interrupted_and_clears(void **state) {
  (void)state;
  for (int timed = 0; timed <= 1; timed++) {
    for (int before = 0; before <= 1; before++) {
      latch_t go;
      latch_init(&go);
      join_arg_t j = {.timeout = timed ? LONG_NS : -1};
      assert_int_equal(vmt_thread_start(&j.target, wait_for_latch, &go), 0);
      blocked_call_t b = run_interrupted(join_interruptibly, &j, before,
                                         timed ? VMT_THREAD_TIMED_WAITING : VMT_THREAD_WAITING);
      assert_int_equal(b.rc, -EINTR);
      assert_false(b.interrupted_after);
      /* No join happened: the target can still be joined. */
      latch_open(&go);
      void *result = &go;
      assert_int_equal(vmt_thread_join(j.target, &result), 0);
      assert_null(result);
      assert_int_equal(vmt_thread_join(j.target, NULL), -EALREADY);
      assert_int_equal(vmt_thread_release(j.target), 0);
      latch_destroy(&go);
    }
  }
}

static void *join_with_status(void *arg) {
  join_arg_t *j = arg;
  vmt_thread_interrupt(vmt_thread_current());
  j->timeout = vmt_thread_join(j->target, NULL);   /* reused as the result */
  return (void *)(intptr_t)vmt_thread_is_interrupted(vmt_thread_current());
}

static void a_terminated_thread_is_joined_whatever_the_status(void **state) {
  (void)state;
  join_arg_t j = {0};
  assert_int_equal(vmt_thread_start(&j.target, return_arg, NULL), 0);
  /* Wait until it has ended (without joining). */
  MU_POLL_UNTIL(vmt_thread_state(j.target) == VMT_THREAD_TERMINATED, "TERMINATED");
  vmt_thread_t *joiner;
  assert_int_equal(vmt_thread_start(&joiner, join_with_status, &j), 0);
  void *still_interrupted = NULL;
  assert_int_equal(vmt_thread_join(joiner, &still_interrupted), 0);
  assert_int_equal(j.timeout, 0);
  assert_int_equal((intptr_t)still_interrupted, 1);   /* Java's join of a dead thread */
  assert_int_equal(vmt_thread_release(joiner), 0);
  assert_int_equal(vmt_thread_release(j.target), 0);
}

static void timed_join_times_out_and_joins_later(void **state) {
  (void)state;
  latch_t go;
  latch_init(&go);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, wait_for_latch, &go), 0);
  assert_int_equal(vmt_thread_timed_join(t, 0, NULL), -ETIMEDOUT);   /* <= 0: a try */
  assert_int_equal(vmt_thread_timed_join(t, -1, NULL), -ETIMEDOUT);
  int64_t t0 = vmt_nanotime();
  assert_int_equal(vmt_thread_timed_join(t, 2 * 1000 * 1000, NULL), -ETIMEDOUT);
  assert_true(vmt_nanotime() - t0 >= 2 * 1000 * 1000);
  latch_open(&go);
  assert_int_equal(vmt_thread_timed_join(t, VMT_TIMEOUT_INFINITE, NULL), 0);
  assert_int_equal(vmt_thread_timed_join(t, 0, NULL), -EALREADY);
  assert_int_equal(vmt_thread_timed_join(NULL, 0, NULL), -EINVAL);
  assert_int_equal(vmt_thread_release(t), 0);
  /* A try on a terminated thread joins it. */
  assert_int_equal(vmt_thread_start(&t, return_arg, NULL), 0);
  MU_POLL_UNTIL(vmt_thread_state(t) == VMT_THREAD_TERMINATED, "TERMINATED");
  assert_int_equal(vmt_thread_timed_join(t, 0, NULL), 0);
  assert_int_equal(vmt_thread_release(t), 0);
  latch_destroy(&go);
}

static void a_joiner_is_waiting_and_counted(void **state) {
  (void)state;
  latch_t go;
  latch_init(&go);
  join_arg_t j = {.timeout = -1};
  assert_int_equal(vmt_thread_start(&j.target, wait_for_latch, &go), 0);
  blocked_call_t b = {.call = join_interruptibly, .arg = &j};
  latch_init(&b.entered);
  vmt_thread_t *joiner;
  assert_int_equal(vmt_thread_start(&joiner, run_call, &b), 0);
  wait_for_state(joiner, VMT_THREAD_WAITING);
  vmt_thread_info_t *info = NULL;
  assert_int_equal(vmt_mx_get_thread_info(vmt_thread_id(joiner), 0, &info), 0);
  assert_int_equal(info->state, VMT_THREAD_WAITING);
  assert_int_equal(info->waited_count, 1);
  vmt_mx_thread_info_free(info);
  latch_open(&go);
  assert_int_equal(vmt_thread_join(joiner, NULL), 0);
  assert_int_equal(b.rc, 0);
  assert_int_equal(vmt_thread_release(joiner), 0);
  assert_int_equal(vmt_thread_release(j.target), 0);
  latch_destroy(&go);
  latch_destroy(&b.entered);
}

/* ---- Monitor wait -------------------------------------------------------------------------- */
typedef struct waiter_arg {
  vmt_monitor_t *m;
  bool interrupt_first;
  int64_t timeout;
  int rc;
  bool interrupted_after, held_after;
  uint64_t waits_before, waits_after;
  latch_t entered;
} waiter_arg_t;

static uint64_t waits_of(vmt_monitor_t *m) {
  vmt_monitor_stats_t st;
  assert_int_equal(vmt_monitor_get_stats(m, &st), 0);
  return st.waits;
}

static void *wait_twice_entered(void *arg) {
  waiter_arg_t *w = arg;
  vmt_monitor_enter(w->m);
  vmt_monitor_enter(w->m);   /* depth 2: wait re-enters to the same depth */
  if (w->interrupt_first) vmt_thread_interrupt(vmt_thread_current());
  w->waits_before = waits_of(w->m);
  latch_open(&w->entered);
  w->rc = vmt_monitor_wait(w->m, w->timeout);
  w->waits_after = waits_of(w->m);
  w->held_after = vmt_monitor_holds_lock(w->m) == 1;
  w->interrupted_after = vmt_thread_is_interrupted(vmt_thread_current());
  vmt_monitor_exit(w->m);
  if (vmt_monitor_exit(w->m) != 0) w->held_after = false;   /* both levels were back */
  return NULL;
}

static void wait_is_interrupted_after_reentering(void **state) {
  (void)state;
  for (int timed = 0; timed <= 1; timed++) {
    waiter_arg_t w = {.timeout = timed ? LONG_NS : 0};
    assert_int_equal(vmt_monitor_create(&w.m, "interrupted"), 0);
    latch_init(&w.entered);
    vmt_thread_t *t;
    assert_int_equal(vmt_thread_start(&t, wait_twice_entered, &w), 0);
    latch_wait(&w.entered);
    wait_for_state(t, timed ? VMT_THREAD_TIMED_WAITING : VMT_THREAD_WAITING);
    /* Hold the monitor while interrupting: the waiter must get it back before it returns. */
    assert_int_equal(vmt_monitor_enter(w.m), 0);
    assert_int_equal(vmt_thread_interrupt(t), 0);
    wait_for_state(t, VMT_THREAD_BLOCKED);
    for (int i = 0; i < 5; i++) {
      mu_pause_1ms();
      assert_int_equal(vmt_thread_state(t), VMT_THREAD_BLOCKED);   /* not returned */
    }
    assert_int_equal(vmt_monitor_exit(w.m), 0);
    assert_int_equal(vmt_thread_join(t, NULL), 0);
    assert_int_equal(w.rc, -EINTR);
    assert_false(w.interrupted_after);
    assert_true(w.held_after);
    assert_int_equal(w.waits_after, w.waits_before + 1);
    assert_int_equal(vmt_thread_release(t), 0);
    assert_int_equal(vmt_monitor_destroy(w.m), 0);
    latch_destroy(&w.entered);
  }
}

static void wait_with_the_status_set_throws_at_once(void **state) {
  (void)state;
  waiter_arg_t w = {.timeout = LONG_NS, .interrupt_first = true};
  assert_int_equal(vmt_monitor_create(&w.m, "pre-interrupted"), 0);
  latch_init(&w.entered);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, wait_twice_entered, &w), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(w.rc, -EINTR);
  assert_false(w.interrupted_after);
  assert_true(w.held_after);
  assert_int_equal(w.waits_after, w.waits_before);   /* it never waited */
  assert_int_equal(vmt_thread_release(t), 0);
  assert_int_equal(vmt_monitor_destroy(w.m), 0);
  latch_destroy(&w.entered);
}

/* Both, while the notifier holds the monitor: whichever claimed the waiter's node first wins. A
 * notify first: the wait returns 0 and the status stays set. An interrupt first: -EINTR, and
 * the notify goes to the next waiter (a second one here), never lost. */
static void notify_and_interrupt_both_while_waiting(void **state) {
  (void)state;
  for (int notify_first = 0; notify_first <= 1; notify_first++) {
    waiter_arg_t a = {.timeout = 0}, b = {.timeout = 0};
    assert_int_equal(vmt_monitor_create(&a.m, "both"), 0);
    b.m = a.m;
    latch_init(&a.entered);
    latch_init(&b.entered);
    vmt_thread_t *ta, *tb;
    assert_int_equal(vmt_thread_start(&ta, wait_twice_entered, &a), 0);
    latch_wait(&a.entered);
    wait_for_state(ta, VMT_THREAD_WAITING);
    assert_int_equal(vmt_thread_start(&tb, wait_twice_entered, &b), 0);
    latch_wait(&b.entered);
    wait_for_state(tb, VMT_THREAD_WAITING);
    assert_int_equal(vmt_monitor_enter(a.m), 0);
    if (notify_first) {
      assert_int_equal(vmt_monitor_notify(a.m), 0);   /* a is first in the wait set */
      assert_int_equal(vmt_thread_interrupt(ta), 0);
    } else {
      assert_int_equal(vmt_thread_interrupt(ta), 0);
      assert_int_equal(vmt_monitor_notify(a.m), 0);   /* a has left: b gets it */
    }
    assert_int_equal(vmt_monitor_exit(a.m), 0);
    assert_int_equal(vmt_thread_join(ta, NULL), 0);
    if (notify_first) {
      assert_int_equal(a.rc, 0);
      assert_true(a.interrupted_after);
      /* b still waits: wake it. */
      assert_int_equal(vmt_monitor_enter(a.m), 0);
      assert_int_equal(vmt_monitor_notify(a.m), 0);
      assert_int_equal(vmt_monitor_exit(a.m), 0);
    } else {
      assert_int_equal(a.rc, -EINTR);
      assert_false(a.interrupted_after);
    }
    assert_int_equal(vmt_thread_join(tb, NULL), 0);
    assert_int_equal(b.rc, 0);   /* notified: by the second notify, or by the first one */
    assert_true(a.held_after && b.held_after);
    assert_int_equal(vmt_thread_release(ta), 0);
    assert_int_equal(vmt_thread_release(tb), 0);
    assert_int_equal(vmt_monitor_destroy(a.m), 0);
    latch_destroy(&a.entered);
    latch_destroy(&b.entered);
  }
}

/* A timeout and an interrupt: the interrupt wins (Java checks it first after the wait). */
static void *timed_wait_with_interrupt(void *arg) {
  vmt_monitor_t *m = arg;
  vmt_monitor_enter(m);
  int rc = vmt_monitor_wait(m, 1000 * 1000);
  vmt_monitor_exit(m);
  return (void *)(intptr_t)rc;
}

static void a_timed_out_wait_still_reports_the_interrupt(void **state) {
  (void)state;
  vmt_monitor_t *m;
  assert_int_equal(vmt_monitor_create(&m, "late"), 0);
  assert_int_equal(vmt_monitor_enter(m), 0);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, timed_wait_with_interrupt, m), 0);
  /* The waiter's 1 ms passes while we hold the monitor; then it is interrupted, still
   * blocked re-entering. */
  MU_POLL_UNTIL(vmt_thread_state(t) == VMT_THREAD_BLOCKED, "BLOCKED after its timeout");
  assert_int_equal(vmt_thread_interrupt(t), 0);
  assert_int_equal(vmt_monitor_exit(m), 0);
  void *rc = NULL;
  assert_int_equal(vmt_thread_join(t, &rc), 0);
  /* Whether the interrupt came before its wake-up or after, it is seen once re-entered. */
  assert_int_equal((intptr_t)rc, -EINTR);
  assert_false(vmt_thread_is_interrupted(t));
  assert_int_equal(vmt_thread_release(t), 0);
  assert_int_equal(vmt_monitor_destroy(m), 0);
}

/* ---- What ignores interrupts ---------------------------------------------------------------- */
typedef struct locker {
  vmt_monitor_t *m;
  vmt_sync_t *s;
  int rc_enter, rc_lock;
  bool status_after;
} locker_t;

static void *enter_then_lock(void *arg) {
  locker_t *l = arg;
  l->rc_enter = vmt_monitor_enter(l->m);
  vmt_monitor_exit(l->m);
  l->rc_lock = vmt_sync_lock(l->s);
  vmt_sync_unlock(l->s);
  l->status_after = vmt_thread_is_interrupted(vmt_thread_current());
  return NULL;
}

static void monitor_enter_and_lock_ignore_interrupts(void **state) {
  (void)state;
  locker_t l = {0};
  assert_int_equal(vmt_monitor_create(&l.m, "held"), 0);
  assert_int_equal(vmt_sync_create(&l.s, "held"), 0);
  assert_int_equal(vmt_monitor_enter(l.m), 0);
  assert_int_equal(vmt_sync_lock(l.s), 0);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, enter_then_lock, &l), 0);
  wait_for_state(t, VMT_THREAD_BLOCKED);
  assert_int_equal(vmt_thread_interrupt(t), 0);
  for (int i = 0; i < 5; i++) {   /* still blocked: an interrupt does not end an enter */
    mu_pause_1ms();
    assert_int_equal(vmt_thread_state(t), VMT_THREAD_BLOCKED);
  }
  assert_int_equal(vmt_monitor_exit(l.m), 0);
  wait_for_state(t, VMT_THREAD_WAITING);   /* now in vmt_sync_lock */
  assert_int_equal(vmt_thread_interrupt(t), 0);
  for (int i = 0; i < 5; i++) {
    mu_pause_1ms();
    assert_int_equal(vmt_thread_state(t), VMT_THREAD_WAITING);
  }
  assert_int_equal(vmt_sync_unlock(l.s), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(l.rc_enter, 0);
  assert_int_equal(l.rc_lock, 0);
  assert_true(l.status_after);
  assert_int_equal(vmt_thread_release(t), 0);
  assert_int_equal(vmt_monitor_destroy(l.m), 0);
  assert_int_equal(vmt_sync_destroy(l.s), 0);
}

/* ---- The race: unpark and interrupt against park ---------------------------------------- *
 * Round k: the driver gives the target a permit, an interrupt, or both (in either order; in
 * one round of eight the interrupt comes from a helper thread, woken for it, so that the two
 * arrive at once from two threads), then waits for the target to report it has seen what was
 * given. The target parks until it has consumed the round's permit (a park returning 0) and
 * seen its interrupt (vmt_thread_interrupted), after spinning a varying while, so the gifts
 * land before, during and after its sleep. A lost wake-up leaves the target asleep: the
 * driver's wait times out. A permit consumed twice shows as a park returning 0 in a round
 * that gave none.
 * Rounds: 10^7 in the default build (the sanitizers make each round 5-50x slower: 10^6 under
 * ASan, 2x10^5 under TSan), or as many as RACE_BUDGET_NS allow: the two sides hand rounds to
 * each other by spinning, then blocking, and on a machine shared with other builds a round
 * can cost a scheduler tick. The number run is printed; the budget changes how much is
 * tried, never the verdict. */
#if defined(__SANITIZE_THREAD__)
#define RACE_ROUNDS 200000L
#elif defined(__SANITIZE_ADDRESS__)
#define RACE_ROUNDS 1000000L
#else
#define RACE_ROUNDS 10000000L
#endif
#define RACE_BUDGET_NS (30LL * 1000 * 1000 * 1000)

enum { GIVE_PERMIT = 1, GIVE_INTERRUPT = 2 };

static inline void cpu_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* A counter one thread raises and another waits on: spin first, then a condition variable
 * (not the runtime: the handshake must not use what is under test). */
typedef struct counter {
  _Atomic long value;
  _Atomic int sleepers;
  pthread_mutex_t lock;
  pthread_cond_t cond;
} counter_t;

static void counter_init(counter_t *c) {
  atomic_store(&c->value, 0);
  atomic_store(&c->sleepers, 0);
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->cond, NULL);
}

static void counter_set(counter_t *c, long v) {
  atomic_store(&c->value, v);
  if (atomic_load(&c->sleepers)) {
    pthread_mutex_lock(&c->lock);
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
  }
}

/* Waits until value >= k; false once deadline (monotonic ns, 0: none) has passed. */
static bool counter_await(counter_t *c, long k, int64_t deadline) {
  for (int spins = 0; spins < 4000; spins++) {
    if (atomic_load_explicit(&c->value, memory_order_acquire) >= k) return true;
    cpu_pause();
  }
  pthread_mutex_lock(&c->lock);
  atomic_fetch_add(&c->sleepers, 1);
  bool ok = true;
  while (atomic_load(&c->value) < k && ok) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 1000 * 1000;   /* re-check every ms: a set between the load and the wait */
    if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
    pthread_cond_timedwait(&c->cond, &c->lock, &ts);
    ok = deadline == 0 || vmt_nanotime() < deadline;
  }
  atomic_fetch_sub(&c->sleepers, 1);
  pthread_mutex_unlock(&c->lock);
  return atomic_load(&c->value) >= k;
}

typedef struct race {
  vmt_thread_t *target, *helper;
  counter_t round;         /* the round the driver started (its gifts are `gifts`) */
  counter_t done;          /* the last round the target finished */
  _Atomic int gifts;
  _Atomic long helper_round;
  _Atomic bool stop;
  _Atomic long extra_permits;   /* parks that returned 0 beyond the rounds' permits */
} race_t;

static void *race_target(void *arg) {
  race_t *r = arg;
  unsigned seed = 12345;
  for (long k = 1;; k++) {
    while (!counter_await(&r->round, k, 0))
      if (atomic_load(&r->stop)) return NULL;
    if (atomic_load(&r->stop)) return NULL;
    int want = atomic_load(&r->gifts), seen = 0;
    while (seen != want && !atomic_load(&r->stop)) {
      seed = seed * 1103515245u + 12345u;
      for (unsigned spin = (seed >> 16) % 128; spin > 0; spin--) cpu_pause();
      if (vmt_park(0) == 0) {
        if (seen & GIVE_PERMIT) atomic_fetch_add(&r->extra_permits, 1);
        seen |= GIVE_PERMIT;
      }
      if (vmt_thread_interrupted()) seen |= GIVE_INTERRUPT;
    }
    counter_set(&r->done, k);
  }
}

static void *race_helper(void *arg) {
  race_t *r = arg;
  for (long seen = 0;;) {
    vmt_park(0);
    if (atomic_load(&r->stop)) return NULL;
    long k = atomic_load_explicit(&r->helper_round, memory_order_acquire);
    if (k != seen) vmt_thread_interrupt(r->target);
    seen = k;
  }
}

static void unpark_and_interrupt_race_against_park(void **state) {
  (void)state;
  race_t r;
  memset(&r, 0, sizeof(r));
  counter_init(&r.round);
  counter_init(&r.done);
  assert_int_equal(vmt_thread_start(&r.target, race_target, &r), 0);
  assert_int_equal(vmt_thread_start(&r.helper, race_helper, &r), 0);
  unsigned seed = 777;
  long lost_at = 0, k;
  int64_t budget_end = vmt_nanotime() + RACE_BUDGET_NS;
  for (k = 1; k <= RACE_ROUNDS && !lost_at; k++) {
    if ((k & 1023) == 0 && vmt_nanotime() > budget_end) break;
    seed = seed * 1103515245u + 12345u;
    int gifts = 1 + (int)((seed >> 16) % 3);   /* permit, interrupt, or both */
    bool by_helper = (gifts & GIVE_INTERRUPT) && ((seed >> 20) % 8) == 0;
    bool interrupt_first = (seed >> 24) & 1;
    atomic_store(&r.gifts, gifts);
    counter_set(&r.round, k);
    if (by_helper) {
      atomic_store(&r.helper_round, k);
      vmt_unpark(r.helper);
    }
    if ((gifts & GIVE_INTERRUPT) && !by_helper && interrupt_first)
      vmt_thread_interrupt(r.target);
    if (gifts & GIVE_PERMIT) vmt_unpark(r.target);
    if ((gifts & GIVE_INTERRUPT) && !by_helper && !interrupt_first)
      vmt_thread_interrupt(r.target);
    if (!counter_await(&r.done, k, vmt_nanotime() + MU_POLL_DEADLINE_NS)) lost_at = k;
  }
  print_message("unpark/interrupt race: %ld rounds\n", k - 1);
  atomic_store(&r.stop, true);
  counter_set(&r.round, LONG_MAX);
  vmt_unpark(r.target);
  vmt_unpark(r.helper);
  assert_int_equal(vmt_thread_join(r.helper, NULL), 0);
  assert_int_equal(vmt_thread_join(r.target, NULL), 0);
  assert_int_equal(vmt_thread_release(r.helper), 0);
  assert_int_equal(vmt_thread_release(r.target), 0);
  if (lost_at) fail_msg("a wake-up was lost in round %ld", lost_at);
  assert_int_equal(atomic_load(&r.extra_permits), 0);
}

/* ---- The race: notify and interrupt against wait ----------------------------------------- *
 * Round k: the waiter enters the monitor, says so, and waits. The driver enters (which it can
 * only once the wait has released the monitor, so the waiter is in the wait set), gives a
 * notify, an interrupt, or both, in either order, sometimes the interrupt only after it left
 * the monitor (racing with the re-entry), and leaves. The waiter's wait must return (or the
 * round never ends: a lost wake-up), with 0 only in a round with a notify, -EINTR only in one
 * with an interrupt; once the driver has given everything, the status must be set exactly
 * when an interrupt was given and the wait did not consume it. Every round sleeps at least
 * once (the waiter cannot return before the driver leaves): 10^6 rounds in the default build,
 * fewer under the sanitizers, within WAIT_RACE_BUDGET_NS (the number run is printed). */
#if defined(__SANITIZE_THREAD__)
#define WAIT_RACE_ROUNDS 20000L
#elif defined(__SANITIZE_ADDRESS__)
#define WAIT_RACE_ROUNDS 200000L
#else
#define WAIT_RACE_ROUNDS 1000000L
#endif
#define WAIT_RACE_BUDGET_NS (20LL * 1000 * 1000 * 1000)

enum { GIVE_NOTIFY = 4, GIVE_LATE = 8 };   /* LATE: the interrupt after leaving the monitor */

typedef struct wait_race {
  vmt_monitor_t *m;
  counter_t ready;    /* the round the waiter has entered the monitor for */
  counter_t given;    /* the round whose gifts are all given */
  counter_t done;     /* the round the waiter finished */
  _Atomic int gifts;
  _Atomic bool stop;
  _Atomic long bad_round;
  _Atomic int bad_what;
} wait_race_t;

static void wait_race_fail(wait_race_t *r, long k, int what) {
  long none = 0;
  if (atomic_compare_exchange_strong(&r->bad_round, &none, k)) atomic_store(&r->bad_what, what);
}

static void *wait_race_waiter(void *arg) {
  wait_race_t *r = arg;
  for (long k = 1;; k++) {
    vmt_monitor_enter(r->m);
    counter_set(&r->ready, k);
    int rc = vmt_monitor_wait(r->m, 0);
    vmt_monitor_exit(r->m);
    if (atomic_load(&r->stop)) return NULL;
    while (!counter_await(&r->given, k, 0))
      if (atomic_load(&r->stop)) return NULL;
    int gifts = atomic_load(&r->gifts);
    bool pending = vmt_thread_interrupted();
    if (rc == 0 && !(gifts & GIVE_NOTIFY)) wait_race_fail(r, k, 1);      /* a phantom notify */
    if (rc == -EINTR && !(gifts & GIVE_INTERRUPT)) wait_race_fail(r, k, 2);
    if (rc != 0 && rc != -EINTR) wait_race_fail(r, k, 3);
    bool expect_pending = (gifts & GIVE_INTERRUPT) && rc == 0;
    if (pending != expect_pending) wait_race_fail(r, k, 4);
    counter_set(&r->done, k);
  }
}

static void notify_and_interrupt_race_against_wait(void **state) {
  (void)state;
  wait_race_t r;
  memset(&r, 0, sizeof(r));
  counter_init(&r.ready);
  counter_init(&r.given);
  counter_init(&r.done);
  assert_int_equal(vmt_monitor_create(&r.m, "race"), 0);
  vmt_thread_t *w;
  assert_int_equal(vmt_thread_start(&w, wait_race_waiter, &r), 0);
  unsigned seed = 4242;
  long lost_at = 0, k;
  int64_t budget_end = vmt_nanotime() + WAIT_RACE_BUDGET_NS;
  for (k = 1; k <= WAIT_RACE_ROUNDS && !lost_at && !atomic_load(&r.bad_round); k++) {
    if ((k & 255) == 0 && vmt_nanotime() > budget_end) break;
    seed = seed * 1103515245u + 12345u;
    int pick = (int)((seed >> 16) % 4);
    int gifts = pick == 0 ? GIVE_NOTIFY
                : pick == 1 ? GIVE_INTERRUPT
                : pick == 2 ? GIVE_NOTIFY | GIVE_INTERRUPT
                            : GIVE_NOTIFY | GIVE_INTERRUPT | GIVE_LATE;
    bool interrupt_first = (seed >> 24) & 1;
    atomic_store(&r.gifts, gifts);
    if (!counter_await(&r.ready, k, vmt_nanotime() + MU_POLL_DEADLINE_NS)) {
      lost_at = k - 1;
      break;
    }
    vmt_monitor_enter(r.m);   /* the waiter is in the wait set once we hold it */
    vmt_thread_t *target = w;
    if ((gifts & GIVE_INTERRUPT) && !(gifts & GIVE_LATE) && interrupt_first)
      vmt_thread_interrupt(target);
    if (gifts & GIVE_NOTIFY) vmt_monitor_notify(r.m);
    if ((gifts & GIVE_INTERRUPT) && !(gifts & GIVE_LATE) && !interrupt_first)
      vmt_thread_interrupt(target);
    vmt_monitor_exit(r.m);
    if (gifts & GIVE_LATE) vmt_thread_interrupt(target);
    counter_set(&r.given, k);
    if (!counter_await(&r.done, k, vmt_nanotime() + MU_POLL_DEADLINE_NS)) lost_at = k;
  }
  print_message("notify/interrupt race: %ld rounds\n", k - 1);
  atomic_store(&r.stop, true);
  counter_set(&r.given, LONG_MAX);
  /* The waiter may be on its way into one more wait: wake it until it has ended. */
  do {
    vmt_monitor_enter(r.m);
    vmt_monitor_notify_all(r.m);
    vmt_monitor_exit(r.m);
  } while (vmt_thread_timed_join(w, 10 * 1000 * 1000, NULL) == -ETIMEDOUT);
  assert_int_equal(vmt_thread_release(w), 0);
  assert_int_equal(vmt_monitor_destroy(r.m), 0);
  if (lost_at) fail_msg("a wake-up was lost in round %ld", lost_at);
  if (atomic_load(&r.bad_round))
    fail_msg("round %ld: check %d failed", atomic_load(&r.bad_round), atomic_load(&r.bad_what));
}

/* ---- Timer slack ------------------------------------------------------------------------ */
static void *own_slack(void *arg) {
  *(int64_t *)arg = vmt_thread_timer_slack();
  return NULL;
}

static int64_t slack_of_new_thread(const vmt_thread_options_t *o) {
  int64_t slack = -1;
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start_ex(&t, o, own_slack, &slack), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(vmt_thread_release(t), 0);
  return slack;
}

static void *attach_and_report_slack(void *arg) {
  int64_t *s = arg;
  s[0] = vmt_thread_timer_slack();
  vmt_thread_t *self;
  vmt_thread_attach(NULL, &self);
  s[1] = vmt_thread_timer_slack();   /* attach without the option leaves it */
  vmt_thread_detach();
  vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_TIMER_SLACK, .timer_slack_ns = 2000};
  vmt_thread_attach(&o, &self);
  s[2] = vmt_thread_timer_slack();
  vmt_thread_detach();
  return NULL;
}

static void timer_slack_defaults_and_options(void **state) {
  (void)state;
  assert_int_equal(vmt_thread_default_timer_slack(), VMT_THREAD_TIMER_SLACK_DEFAULT_NS);
  assert_int_equal(slack_of_new_thread(NULL), VMT_THREAD_TIMER_SLACK_DEFAULT_NS);
  vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_TIMER_SLACK, .timer_slack_ns = 7000};
  assert_int_equal(slack_of_new_thread(&o), 7000);
  /* 0: whatever the creator has. */
  int64_t mine = vmt_thread_timer_slack();
  assert_true(mine > 0);
  assert_int_equal(vmt_thread_set_timer_slack(3000), 0);
  assert_int_equal(vmt_thread_timer_slack(), 3000);
  o.timer_slack_ns = 0;
  assert_int_equal(slack_of_new_thread(&o), 3000);
  assert_int_equal(vmt_thread_set_default_timer_slack(4000), 0);
  assert_int_equal(slack_of_new_thread(NULL), 4000);
  assert_int_equal(vmt_thread_set_default_timer_slack(0), 0);   /* inherit */
  assert_int_equal(slack_of_new_thread(NULL), 3000);
  assert_int_equal(vmt_thread_set_default_timer_slack(VMT_THREAD_TIMER_SLACK_DEFAULT_NS), 0);
  assert_int_equal(vmt_thread_set_timer_slack(mine), 0);
  /* Bad values. */
  assert_int_equal(vmt_thread_set_timer_slack(-1), -EINVAL);
  assert_int_equal(vmt_thread_set_timer_slack(VMT_THREAD_TIMER_SLACK_MAX_NS + 1), -EINVAL);
  assert_int_equal(vmt_thread_set_default_timer_slack(-1), -EINVAL);
  vmt_thread_t *t = NULL;
  o.timer_slack_ns = -5;
  assert_int_equal(vmt_thread_start_ex(&t, &o, return_arg, NULL), -EINVAL);
  assert_null(t);
  /* Attached threads keep theirs unless asked. */
  int64_t s[3];
  pthread_t p;
  assert_int_equal(pthread_create(&p, NULL, attach_and_report_slack, s), 0);
  assert_int_equal(pthread_join(p, NULL), 0);
  assert_int_equal(s[1], s[0]);
  assert_int_equal(s[2], 2000);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(status_is_set_read_and_cleared),
      cmocka_unit_test(sleep_is_interrupted_and_clears),
      cmocka_unit_test(park_is_interrupted_and_keeps_the_status),
      cmocka_unit_test(a_permit_wins_over_the_status),
      cmocka_unit_test(park_timeouts_follow_java),
      cmocka_unit_test(join_is_interrupted_and_clears),
      cmocka_unit_test(a_terminated_thread_is_joined_whatever_the_status),
      cmocka_unit_test(timed_join_times_out_and_joins_later),
      cmocka_unit_test(a_joiner_is_waiting_and_counted),
      cmocka_unit_test(wait_is_interrupted_after_reentering),
      cmocka_unit_test(wait_with_the_status_set_throws_at_once),
      cmocka_unit_test(notify_and_interrupt_both_while_waiting),
      cmocka_unit_test(a_timed_out_wait_still_reports_the_interrupt),
      cmocka_unit_test(monitor_enter_and_lock_ignore_interrupts),
      cmocka_unit_test(unpark_and_interrupt_race_against_park),
      cmocka_unit_test(notify_and_interrupt_race_against_wait),
      cmocka_unit_test(timer_slack_defaults_and_options),
  };
  return cmocka_run_group_tests(tests, mu_attach_main, mu_detach_main);
}
