/*
 * test/monitor_internal_test.c: what the monitor module records for the management API
 * (runtime/sync/sync.h), checked the way OpenJDK's ThreadMXBean tests check it:
 *   - ThreadStateTest: a thread walked through RUNNABLE, BLOCKED (on the right monitor, owned
 *     by the right thread), WAITING, TIMED_WAITING and back to RUNNABLE;
 *   - ThreadBlockedCount: the blocked count grows by exactly one per contended enter;
 *   - ThreadInfo waited count and time after wait(300 ms) with contention monitoring on;
 *   - contention times are -1 while monitoring is off and restart from zero when it is
 *     turned on again (ThreadMXBean.setThreadContentionMonitoringEnabled);
 *   - locked monitors and synchronizers with their depth (ThreadInfo.getLockedMonitors);
 * plus the races (a reader copying a thread's locks while it churns through them) and the
 * failure paths (allocation failures through the fault seams).
 * An internal-API test: it includes runtime/sync/sync.h.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "runtime/registry/registry_impl.h"
#include "runtime/sync/sync.h"
#include "runtime/sync/sync_impl.h"
#include "test/monitor_util.h"

static int detach_main(void **state) {
  vmt__set_contention_monitoring(false);
  return mu_detach_main(state);
}

static int reset_after(void **state) {
  (void)state;
  vmt__fault_disarm_all();
  vmt__set_contention_monitoring(false);
  return 0;
}

static vmt__thread_lock_info_t info_of(vmt_thread_t *t, bool want_held) {
  vmt__thread_lock_info_t info;
  assert_int_equal(vmt__thread_lock_info(t, want_held, &info), 0);
  return info;
}

static void describe(vmt_monitor_t *m, char *buf) {
  assert_true(vmt_monitor_describe(m, buf, VMT__LOCK_DESC_NAME_MAX) > 0);
}


/* ---- ThreadStateTest -------------------------------------------------------------------- */

typedef struct script {
  vmt_monitor_t *m;
  _Atomic int go;      /* set by the test: proceed to the next phase */
  _Atomic int phase;   /* set by the thread: the phase it is in */
} script_t;

static void await_go(script_t *s, int n) {
  while (atomic_load(&s->go) < n) mu_pause_1ms();
}

static void *walker(void *arg) {
  script_t *s = arg;
  atomic_store(&s->phase, 1);   /* RUNNABLE: busy, holding nothing */
  await_go(s, 1);
  vmt_monitor_enter(s->m);      /* BLOCKED: the test holds m */
  atomic_store(&s->phase, 2);
  vmt_monitor_wait(s->m, 0);    /* WAITING on m */
  vmt_monitor_wait(s->m, 60LL * 1000 * MU_MS);   /* TIMED_WAITING on m */
  vmt_monitor_exit(s->m);
  vmt_park(0);                  /* WAITING, no lock */
  vmt_park(60LL * 1000 * MU_MS);   /* TIMED_WAITING, no lock */
  atomic_store(&s->phase, 3);   /* RUNNABLE again */
  await_go(s, 2);
  return NULL;
}

static void assert_on(vmt_thread_t *t, int state, vmt_monitor_t *m, int64_t owner) {
  vmt__thread_lock_info_t info = info_of(t, false);
  assert_int_equal(info.state, state);
  if (m == NULL) {
    assert_false(info.has_lock);
    assert_int_equal(info.lock_owner_id, -1);
    return;
  }
  char name[VMT__LOCK_DESC_NAME_MAX];
  describe(m, name);
  assert_true(info.has_lock);
  assert_string_equal(info.lock.name, name);
  assert_string_equal(info.lock.class_name, "vmt.Monitor");
  assert_false(info.lock.is_sync);
  assert_int_equal(info.lock_owner_id, owner);
}

static void thread_walks_through_every_state(void **state) {
  (void)state;
  script_t s = {0};
  assert_int_equal(vmt_monitor_create(&s.m, "walk"), 0);
  vmt_thread_t *t = mu_start(walker, &s);
  MU_POLL_UNTIL(atomic_load(&s.phase) == 1, "phase 1");
  assert_on(t, VMT_THREAD_RUNNABLE, NULL, -1);

  assert_int_equal(vmt_monitor_enter(s.m), 0);
  atomic_store(&s.go, 1);
  MU_POLL_UNTIL(vmt_thread_state(t) == VMT_THREAD_BLOCKED, "BLOCKED");
  assert_on(t, VMT_THREAD_BLOCKED, s.m, vmt_thread_id(vmt_thread_current()));
  assert_int_equal(vmt_monitor_exit(s.m), 0);

  MU_POLL_UNTIL(vmt_thread_state(t) == VMT_THREAD_WAITING, "WAITING in wait()");
  assert_on(t, VMT_THREAD_WAITING, s.m, -1);   /* released while waiting */
  assert_int_equal(vmt_monitor_enter(s.m), 0);
  assert_on(t, VMT_THREAD_WAITING, s.m, vmt_thread_id(vmt_thread_current()));
  assert_int_equal(vmt_monitor_notify(s.m), 0);
  assert_int_equal(vmt_monitor_exit(s.m), 0);

  MU_POLL_UNTIL(vmt_thread_state(t) == VMT_THREAD_TIMED_WAITING, "TIMED_WAITING in wait()");
  assert_on(t, VMT_THREAD_TIMED_WAITING, s.m, -1);
  assert_int_equal(vmt_monitor_enter(s.m), 0);
  assert_int_equal(vmt_monitor_notify(s.m), 0);
  assert_int_equal(vmt_monitor_exit(s.m), 0);

  MU_POLL_UNTIL(vmt_thread_state(t) == VMT_THREAD_WAITING, "WAITING in park()");
  assert_on(t, VMT_THREAD_WAITING, NULL, -1);
  assert_int_equal(vmt_unpark(t), 0);
  MU_POLL_UNTIL(vmt_thread_state(t) == VMT_THREAD_TIMED_WAITING, "TIMED_WAITING in park()");
  assert_on(t, VMT_THREAD_TIMED_WAITING, NULL, -1);
  assert_int_equal(vmt_unpark(t), 0);

  MU_POLL_UNTIL(atomic_load(&s.phase) == 3, "phase 3");
  assert_on(t, VMT_THREAD_RUNNABLE, NULL, -1);
  vmt__thread_lock_info_t info = info_of(t, true);
  assert_int_equal(info.held_count, 0);
  assert_null(info.held);
  /* One contended enter, plus each re-entry after a notify that found the monitor still
   * owned by the notifier (Java counts re-entries too): between 1 and 3. */
  assert_in_range(info.blocked_count, 1, 3);
  assert_int_equal(info.waited_count, 4);   /* two waits, two parks */
  atomic_store(&s.go, 2);
  mu_join(t);
  assert_int_equal(vmt_monitor_destroy(s.m), 0);
}

/* ---- ThreadBlockedCount ----------------------------------------------------------------- */

#define BLOCKS 3

typedef struct counted {
  vmt_monitor_t *m;
  _Atomic int go;
  _Atomic int done;
} counted_t;

static void *block_repeatedly(void *arg) {
  counted_t *c = arg;
  for (int i = 1; i <= BLOCKS; i++) {
    while (atomic_load(&c->go) < i) mu_pause_1ms();
    vmt_monitor_enter(c->m);
    vmt_monitor_exit(c->m);
    atomic_store(&c->done, i);
  }
  return NULL;
}

static void blocked_count_grows_by_each_contended_enter(void **state) {
  (void)state;
  counted_t c = {0};
  assert_int_equal(vmt_monitor_create(&c.m, "blocker"), 0);
  vmt_thread_t *t = mu_start(block_repeatedly, &c);
  for (int i = 1; i <= BLOCKS; i++) {
    assert_int_equal(vmt_monitor_enter(c.m), 0);
    atomic_store(&c.go, i);
    MU_POLL_UNTIL(vmt_thread_state(t) == VMT_THREAD_BLOCKED, "BLOCKED");
    assert_int_equal(info_of(t, false).blocked_count, (uint64_t)i);
    assert_int_equal(vmt_monitor_exit(c.m), 0);
    MU_POLL_UNTIL(atomic_load(&c.done) == i, "the enter to finish");
  }
  vmt__thread_lock_info_t info = info_of(t, false);
  assert_int_equal(info.blocked_count, BLOCKS);
  assert_int_equal(info.waited_count, 0);
  vmt_monitor_stats_t st;
  assert_int_equal(vmt_monitor_get_stats(c.m, &st), 0);
  assert_int_equal(st.contended_enters, BLOCKS);
  assert_int_equal(st.enters, 2 * BLOCKS);
  mu_join(t);
  assert_int_equal(vmt_monitor_destroy(c.m), 0);
}

/* ---- Waited count and time ------------------------------------------------------------ */

typedef struct timed {
  vmt_monitor_t *m;
  int rc;
  _Atomic int done;
  _Atomic int go;
} timed_t;

static void *wait_300ms(void *arg) {
  timed_t *w = arg;
  vmt_monitor_enter(w->m);
  w->rc = vmt_monitor_wait(w->m, 300 * MU_MS);
  vmt_monitor_exit(w->m);
  atomic_store(&w->done, 1);
  while (!atomic_load(&w->go)) mu_pause_1ms();
  return NULL;
}

static void waited_count_and_time_after_wait_300ms(void **state) {
  (void)state;
  vmt__set_contention_monitoring(true);
  assert_true(vmt__contention_monitoring_enabled());
  timed_t w = {0};
  assert_int_equal(vmt_monitor_create(&w.m, "timed"), 0);
  vmt_thread_t *t = mu_start(wait_300ms, &w);
  MU_POLL_UNTIL(atomic_load(&w.done), "wait(300 ms) to return");
  assert_int_equal(w.rc, -ETIMEDOUT);
  vmt__thread_lock_info_t info = info_of(t, false);
  assert_int_equal(info.waited_count, 1);
  /* At least the 300 ms the CLOCK_MONOTONIC deadline guaranteed, less 5% for the calibration
   * of the elapsed counter (TSC) against CLOCK_MONOTONIC. */
  assert_true(info.waited_ns >= 285 * MU_MS);
  assert_true(info.blocked_ns >= 0);
  atomic_store(&w.go, 1);
  mu_join(t);
  assert_int_equal(vmt_monitor_destroy(w.m), 0);
}

static void *wait_briefly(void *arg) {
  timed_t *w = arg;
  vmt_monitor_enter(w->m);
  vmt_monitor_wait(w->m, 2 * MU_MS);
  vmt_monitor_exit(w->m);
  atomic_fetch_add(&w->done, 1);
  while (atomic_load(&w->go) < atomic_load(&w->done)) mu_pause_1ms();
  return NULL;
}

static void times_are_off_then_restart_from_zero(void **state) {
  (void)state;
  timed_t w = {0};
  assert_int_equal(vmt_monitor_create(&w.m, "toggle"), 0);
  vmt__set_contention_monitoring(false);
  assert_false(vmt__contention_monitoring_enabled());
  vmt_thread_t *t = mu_start(wait_briefly, &w);
  MU_POLL_UNTIL(atomic_load(&w.done) == 1, "first wait");
  vmt__thread_lock_info_t info = info_of(t, false);
  assert_int_equal(info.waited_count, 1);   /* counts are always kept */
  assert_int_equal(info.waited_ns, -1);
  assert_int_equal(info.blocked_ns, -1);
  vmt_monitor_stats_t st;
  assert_int_equal(vmt_monitor_get_stats(w.m, &st), 0);
  assert_int_equal(st.blocked_time_ns, -1);

  /* Turned on: it has no time yet, so zero (not -1). */
  vmt__set_contention_monitoring(true);
  vmt__set_contention_monitoring(true);   /* idempotent: no second reset */
  info = info_of(t, false);
  assert_int_equal(info.waited_ns, 0);
  assert_int_equal(info.blocked_ns, 0);
  atomic_store(&w.go, 1);
  mu_join(t);

  /* A wait while monitoring is on is timed. */
  t = mu_start(wait_briefly, &w);
  atomic_store(&w.go, 1);
  MU_POLL_UNTIL(atomic_load(&w.done) == 2, "second wait");
  info = info_of(t, false);
  assert_int_equal(info.waited_count, 1);
  assert_true(info.waited_ns > 0);
  int64_t before = info.waited_ns;
  /* Off: -1. On again: zero, not the old value. */
  vmt__set_contention_monitoring(false);
  assert_int_equal(info_of(t, false).waited_ns, -1);
  vmt__set_contention_monitoring(true);
  info = info_of(t, false);
  assert_int_equal(info.waited_ns, 0);
  assert_true(before > 0);
  assert_int_equal(info.waited_count, 1);   /* counts survive the reset */
  atomic_store(&w.go, 2);
  mu_join(t);
  assert_int_equal(vmt_monitor_destroy(w.m), 0);
}

typedef struct contend {
  vmt_monitor_t *m;
  _Atomic int done;
} contend_t;

static void *enter_exit(void *arg) {
  contend_t *c = arg;
  vmt_monitor_enter(c->m);
  vmt_monitor_exit(c->m);
  atomic_store(&c->done, 1);
  return NULL;
}

static void blocked_time_is_kept_per_thread_and_per_monitor(void **state) {
  (void)state;
  vmt__set_contention_monitoring(true);
  contend_t c = {0};
  assert_int_equal(vmt_monitor_create(&c.m, "held"), 0);
  assert_int_equal(vmt_monitor_enter(c.m), 0);
  vmt_thread_t *t = mu_start(enter_exit, &c);
  MU_POLL_UNTIL(vmt_thread_state(t) == VMT_THREAD_BLOCKED, "BLOCKED");
  int64_t t0 = test_clock_ns(CLOCK_MONOTONIC);
  /* keep it blocked a while */
  while (test_clock_ns(CLOCK_MONOTONIC) - t0 < 20 * MU_MS) mu_pause_1ms();
  assert_int_equal(vmt_monitor_exit(c.m), 0);
  MU_POLL_UNTIL(atomic_load(&c.done), "the enter");
  vmt__thread_lock_info_t info = info_of(t, false);
  assert_int_equal(info.blocked_count, 1);
  assert_true(info.blocked_ns >= 15 * MU_MS);
  vmt_monitor_stats_t st;
  assert_int_equal(vmt_monitor_get_stats(c.m, &st), 0);
  assert_int_equal(st.blocked_time_ns, info.blocked_ns);
  mu_join(t);
  assert_int_equal(vmt_monitor_destroy(c.m), 0);
}

typedef struct syncwait {
  vmt_sync_t *s;
  int rc;
} syncwait_t;

static void *timed_lock(void *arg) {
  syncwait_t *w = arg;
  w->rc = vmt_sync_timed_lock(w->s, 60LL * 1000 * MU_MS);
  if (w->rc == 0) vmt_sync_unlock(w->s);
  return NULL;
}

static void synchronizer_wait_is_a_timed_wait_on_it(void **state) {
  (void)state;
  syncwait_t w = {0};
  assert_int_equal(vmt_sync_create(&w.s, "rw-lock"), 0);
  assert_int_equal(vmt_sync_lock(w.s), 0);
  vmt_thread_t *t = mu_start(timed_lock, &w);
  MU_POLL_UNTIL(vmt_thread_state(t) == VMT_THREAD_TIMED_WAITING, "TIMED_WAITING");
  vmt__thread_lock_info_t info = info_of(t, false);
  assert_int_equal(info.state, VMT_THREAD_TIMED_WAITING);
  assert_true(info.has_lock);
  assert_true(info.lock.is_sync);
  assert_string_equal(info.lock.class_name, "vmt.Synchronizer");
  char name[VMT__LOCK_DESC_NAME_MAX];
  assert_true(vmt_sync_describe(w.s, name, sizeof(name)) > 0);
  assert_string_equal(info.lock.name, name);
  assert_int_equal(info.lock_owner_id, vmt_thread_id(vmt_thread_current()));
  assert_int_equal(info.waited_count, 1);   /* a park, in Java */
  assert_int_equal(info.blocked_count, 0);
  assert_int_equal(vmt_sync_unlock(w.s), 0);
  mu_join(t);
  assert_int_equal(w.rc, 0);
  assert_int_equal(vmt_sync_destroy(w.s), 0);
}

/* ---- Re-entry after wait (Java: "blocked to reenter a monitor") ------------------------- *
 * A notified waiter must get the monitor back from the notifier, who still owns it: from the
 * notify on it is BLOCKED on that monitor, owned by the notifier (ThreadInfo, jstack's "waiting
 * to re-lock in wait()"), the re-entry counts as a blocked enter of the thread and a contended
 * enter of the monitor, and the time it is held off is blocked time, not waited time. HotSpot's
 * ObjectMonitor::INotify does this on the waiter's behalf (wait_reenter_begin). */

typedef struct reenter {
  vmt_monitor_t *m;
  int64_t timeout_ns;       /* of the wait */
  int rc;
  int64_t before_wait_ns;   /* test clock, just before the wait */
  _Atomic int entered, done;
} reenter_t;

static void *wait_once(void *arg) {
  reenter_t *r = arg;
  vmt_monitor_enter(r->m);
  atomic_store(&r->entered, 1);
  r->before_wait_ns = test_clock_ns(CLOCK_MONOTONIC);
  r->rc = vmt_monitor_wait(r->m, r->timeout_ns);
  vmt_monitor_exit(r->m);
  atomic_store(&r->done, 1);
  return NULL;
}

static void notified_waiter_is_blocked_on_the_notifier(void **state) {
  (void)state;
  int64_t me = vmt_thread_id(vmt_thread_current());
  for (int timed = 0; timed <= 1; timed++) {
    reenter_t r = {.timeout_ns = timed ? 60LL * 1000 * MU_MS : 0};
    assert_int_equal(vmt_monitor_create(&r.m, "reenter"), 0);
    vmt_thread_t *t = mu_start(wait_once, &r);
    vmt_thread_state_t waiting = timed ? VMT_THREAD_TIMED_WAITING : VMT_THREAD_WAITING;
    MU_POLL_UNTIL(vmt_thread_state(t) == waiting, "the waiter to wait");
    assert_int_equal(vmt_monitor_enter(r.m), 0);
    assert_on(t, waiting, r.m, me);
    assert_int_equal(vmt_monitor_notify(r.m), 0);

    /* Blocked from the notify on, while we hold the monitor: no poll needed, and none would
     * help, since the waiter cannot run into the monitor until we leave it. */
    assert_int_equal(vmt_thread_state(t), VMT_THREAD_BLOCKED);
    assert_on(t, VMT_THREAD_BLOCKED, r.m, me);
    vmt__thread_lock_info_t info = info_of(t, false);
    assert_int_equal(info.blocked_count, 1);
    assert_int_equal(info.waited_count, 1);
    vmt_monitor_stats_t st;
    assert_int_equal(vmt_monitor_get_stats(r.m, &st), 0);
    assert_int_equal(st.contended_enters, 1);
    assert_int_equal(st.entry_waiters, 1);
    assert_int_equal(st.wait_waiters, 1);   /* until it has re-entered */

    /* The management API says the same: ThreadInfo and the dump. */
    vmt_thread_info_t *ti;
    assert_int_equal(vmt_mx_get_thread_info(vmt_thread_id(t), 0, &ti), 0);
    assert_int_equal(ti->state, VMT_THREAD_BLOCKED);
    assert_non_null(ti->lock);
    char name[VMT__LOCK_DESC_NAME_MAX];
    describe(r.m, name);
    assert_string_equal(ti->lock->name, name);
    assert_int_equal(ti->lock_owner_id, me);
    assert_int_equal(ti->blocked_count, 1);
    vmt_mx_thread_info_free(ti);
    char *dump;
    size_t len;
    assert_int_equal(vmt_mx_thread_dump_to_string(&dump, &len), 0);
    char want[2 * VMT__LOCK_DESC_NAME_MAX];
    snprintf(want, sizeof(want), "- waiting to lock <%s> (a vmt.Monitor) (owned by \"%s\" #%lld)",
             name,
             vmt_thread_name(vmt_thread_current()), (long long)me);
    assert_non_null(strstr(dump, want));
    free(dump);

    assert_int_equal(vmt_monitor_exit(r.m), 0);
    MU_POLL_UNTIL(atomic_load(&r.done), "the waiter to re-enter and leave");
    assert_int_equal(r.rc, 0);
    info = info_of(t, false);
    assert_int_equal(info.blocked_count, 1);
    assert_int_equal(info.waited_count, 1);
    assert_int_equal(vmt_monitor_get_stats(r.m, &st), 0);
    assert_int_equal(st.contended_enters, 1);
    assert_int_equal(st.entry_waiters, 0);
    assert_int_equal(st.wait_waiters, 0);
    mu_join(t);
    assert_int_equal(vmt_monitor_destroy(r.m), 0);
  }
}

static void sleep_ms(int64_t ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * MU_MS};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* The issue's figures: the thread waits ~100 ms, is notified, and is held off 300 ms. */
static void reentry_is_blocked_time_not_waited_time(void **state) {
  (void)state;
  vmt__set_contention_monitoring(true);
  reenter_t r = {.timeout_ns = 0};
  assert_int_equal(vmt_monitor_create(&r.m, "held-off"), 0);
  vmt_thread_t *t = mu_start(wait_once, &r);
  MU_POLL_UNTIL(vmt_thread_state(t) == VMT_THREAD_WAITING, "the waiter to wait");
  sleep_ms(100);
  assert_int_equal(vmt_monitor_enter(r.m), 0);
  assert_int_equal(vmt_monitor_notify(r.m), 0);
  int64_t notified_ns = test_clock_ns(CLOCK_MONOTONIC);
  sleep_ms(300);
  int64_t held_off_ns = test_clock_ns(CLOCK_MONOTONIC) - notified_ns;
  assert_int_equal(vmt_monitor_exit(r.m), 0);
  MU_POLL_UNTIL(atomic_load(&r.done), "the waiter to re-enter and leave");
  vmt__thread_lock_info_t info = info_of(t, false);
  assert_int_equal(info.waited_count, 1);
  assert_int_equal(info.blocked_count, 1);
  /* Lower bounds less 5% for the elapsed counter's calibration against CLOCK_MONOTONIC; the
   * waited time is at most the time from before the wait to the notify, so none of the 300 ms
   * (that bound holds however long the machine made either sleep). */
  assert_true(info.blocked_ns >= held_off_ns * 95 / 100);
  assert_true(info.waited_ns >= 95 * MU_MS);
  assert_true(info.waited_ns <= (notified_ns - r.before_wait_ns) * 105 / 100);
  vmt_monitor_stats_t st;
  assert_int_equal(vmt_monitor_get_stats(r.m, &st), 0);
  assert_int_equal(st.contended_enters, 1);
  assert_true(st.blocked_time_ns >= held_off_ns * 95 / 100);
  mu_join(t);
  assert_int_equal(vmt_monitor_destroy(r.m), 0);
}

/* A wait that timed out re-enters by itself: blocked only if the monitor is owned then. */
static void timed_out_waiter_blocks_only_on_an_owned_monitor(void **state) {
  (void)state;
  reenter_t r = {.timeout_ns = 20 * MU_MS};
  assert_int_equal(vmt_monitor_create(&r.m, "timed-out"), 0);
  vmt_thread_t *t = mu_start(wait_once, &r);   /* nobody else takes the monitor */
  MU_POLL_UNTIL(atomic_load(&r.done), "the wait to time out");
  assert_int_equal(r.rc, -ETIMEDOUT);
  assert_int_equal(info_of(t, false).blocked_count, 0);
  mu_join(t);
  assert_int_equal(vmt_monitor_destroy(r.m), 0);

  /* Now the monitor is ours when the wait times out. We get it once the wait has released it;
   * the waiter is still inside wait() (it counts in wait_waiters until it has re-entered,
   * which it cannot while we own the monitor) unless it was fast enough to time out, re-enter
   * and leave first: then we try again. */
  for (int64_t give_up = test_clock_ns(CLOCK_MONOTONIC) + MU_POLL_DEADLINE_NS;;) {
    memset(&r, 0, sizeof(r));
    r.timeout_ns = 20 * MU_MS;
    assert_int_equal(vmt_monitor_create(&r.m, "timed-out-held"), 0);
    t = mu_start(wait_once, &r);
    MU_POLL_UNTIL(atomic_load(&r.entered), "the waiter to enter");
    assert_int_equal(vmt_monitor_enter(r.m), 0);
    vmt_monitor_stats_t st;
    assert_int_equal(vmt_monitor_get_stats(r.m, &st), 0);
    if (st.wait_waiters == 1) break;
    assert_int_equal(vmt_monitor_exit(r.m), 0);
    mu_join(t);
    assert_int_equal(vmt_monitor_destroy(r.m), 0);
    if (test_clock_ns(CLOCK_MONOTONIC) > give_up) fail_msg("the waiter never waited for us");
  }
  MU_POLL_UNTIL(vmt_thread_state(t) == VMT_THREAD_BLOCKED, "the timed-out waiter to block");
  assert_on(t, VMT_THREAD_BLOCKED, r.m, vmt_thread_id(vmt_thread_current()));
  assert_int_equal(info_of(t, false).blocked_count, 1);
  assert_int_equal(vmt_monitor_exit(r.m), 0);
  MU_POLL_UNTIL(atomic_load(&r.done), "the waiter to leave");
  assert_int_equal(r.rc, -ETIMEDOUT);
  mu_join(t);
  assert_int_equal(vmt_monitor_destroy(r.m), 0);
}

/* ---- Times include the episode in progress ---------------------------------------------- *
 * HotSpot: a thread blocked for 3 s reports about 3 s of blocked time while still blocked. */

typedef struct in_progress {
  vmt_monitor_t *m;
} in_progress_t;

static void *block_wait_park(void *arg) {
  in_progress_t *p = arg;
  vmt_monitor_enter(p->m);
  vmt_monitor_wait(p->m, 0);
  vmt_monitor_exit(p->m);
  vmt_park(0);
  return NULL;
}

static void times_include_the_episode_in_progress(void **state) {
  (void)state;
  vmt__set_contention_monitoring(true);
  in_progress_t p = {0};
  assert_int_equal(vmt_monitor_create(&p.m, "in-progress"), 0);
  assert_int_equal(vmt_monitor_enter(p.m), 0);
  vmt_thread_t *t = mu_start(block_wait_park, &p);
  MU_POLL_UNTIL(vmt_thread_state(t) == VMT_THREAD_BLOCKED, "BLOCKED");
  int64_t t0 = test_clock_ns(CLOCK_MONOTONIC);
  sleep_ms(150);
  vmt__thread_lock_info_t info = info_of(t, false);
  int64_t lower = (test_clock_ns(CLOCK_MONOTONIC) - t0) * 95 / 100;
  assert_int_equal(info.state, VMT_THREAD_BLOCKED);
  assert_true(info.blocked_ns >= lower);
  assert_int_equal(info.waited_ns, 0);
  assert_int_equal(info.blocked_count, 1);
  vmt_thread_info_t *ti;
  assert_int_equal(vmt_mx_get_thread_info(vmt_thread_id(t), 0, &ti), 0);
  assert_true(ti->blocked_time_ns >= lower);
  vmt_mx_thread_info_free(ti);
  /* Re-enabling starts a new epoch: the episode began under the old one and adds nothing. */
  vmt__set_contention_monitoring(false);
  assert_int_equal(info_of(t, false).blocked_ns, -1);
  vmt__set_contention_monitoring(true);
  assert_int_equal(info_of(t, false).blocked_ns, 0);
  assert_int_equal(vmt_monitor_exit(p.m), 0);

  MU_POLL_UNTIL(vmt_thread_state(t) == VMT_THREAD_WAITING, "WAITING in wait()");
  t0 = test_clock_ns(CLOCK_MONOTONIC);
  sleep_ms(150);
  info = info_of(t, false);
  lower = (test_clock_ns(CLOCK_MONOTONIC) - t0) * 95 / 100;
  assert_int_equal(info.state, VMT_THREAD_WAITING);
  assert_true(info.waited_ns >= lower);
  /* Monotonic: a later read never gives less. */
  int64_t before = info.waited_ns;
  assert_true(info_of(t, false).waited_ns >= before);
  assert_int_equal(vmt_monitor_enter(p.m), 0);
  assert_int_equal(vmt_monitor_notify(p.m), 0);
  assert_int_equal(vmt_monitor_exit(p.m), 0);

  MU_POLL_UNTIL(vmt_thread_state(t) == VMT_THREAD_WAITING, "WAITING in park()");
  info = info_of(t, false);
  int64_t waited_before_park = info.waited_ns;
  sleep_ms(100);
  info = info_of(t, false);
  assert_true(info.waited_ns >= waited_before_park + 95 * MU_MS);
  assert_int_equal(vmt_unpark(t), 0);
  mu_join(t);
  assert_int_equal(vmt_monitor_destroy(p.m), 0);
}

/* ---- Locked monitors and synchronizers -------------------------------------------------- */

static void held_locks_listed_innermost_first_with_depth(void **state) {
  (void)state;
  vmt_monitor_t *m1, *m2, *m3;
  vmt_sync_t *s1;
  assert_int_equal(vmt_monitor_create(&m1, "outer"), 0);
  assert_int_equal(vmt_monitor_create(&m2, "middle"), 0);
  assert_int_equal(vmt_monitor_create(&m3, "inner"), 0);
  assert_int_equal(vmt_sync_create(&s1, "sync"), 0);
  assert_int_equal(vmt_monitor_enter(m1), 0);
  assert_int_equal(vmt_monitor_enter(m2), 0);
  assert_int_equal(vmt_monitor_enter(m2), 0);   /* reentrant: listed once */
  assert_int_equal(vmt_sync_lock(s1), 0);
  assert_int_equal(vmt_monitor_enter(m3), 0);

  vmt_monitor_stats_t st;
  assert_int_equal(vmt_monitor_get_stats(m2, &st), 0);
  assert_int_equal(st.owner_id, vmt_thread_id(vmt_thread_current()));
  assert_int_equal(st.enters, 2);
  vmt__thread_lock_info_t info = info_of(vmt_thread_current(), true);
  assert_int_equal(info.held_count, 4);
  char name[VMT__LOCK_DESC_NAME_MAX];
  describe(m3, name);
  assert_string_equal(info.held[0].name, name);
  assert_int_equal(info.held[0].depth, 3);
  assert_true(info.held[1].is_sync);
  assert_string_equal(info.held[1].class_name, "vmt.Synchronizer");
  assert_int_equal(info.held[1].depth, 2);
  describe(m2, name);
  assert_string_equal(info.held[2].name, name);
  assert_int_equal(info.held[2].depth, 1);
  describe(m1, name);
  assert_string_equal(info.held[3].name, name);
  assert_int_equal(info.held[3].depth, 0);
  assert_true(info.held[3].identity != info.held[2].identity);
  free(info.held);

  /* Out-of-order release: m2 goes only with its second exit. */
  assert_int_equal(vmt_monitor_exit(m2), 0);
  assert_int_equal(info_of(vmt_thread_current(), false).held_count, 0);   /* not asked for */
  info = info_of(vmt_thread_current(), true);
  assert_int_equal(info.held_count, 4);
  free(info.held);
  assert_int_equal(vmt_monitor_exit(m2), 0);
  info = info_of(vmt_thread_current(), true);
  assert_int_equal(info.held_count, 3);
  describe(m1, name);
  assert_string_equal(info.held[2].name, name);
  assert_int_equal(info.held[2].depth, 0);
  assert_int_equal(info.held[0].depth, 2);
  free(info.held);

  assert_int_equal(vmt_monitor_exit(m3), 0);
  assert_int_equal(vmt_sync_unlock(s1), 0);
  assert_int_equal(vmt_monitor_exit(m1), 0);
  info = info_of(vmt_thread_current(), true);
  assert_int_equal(info.held_count, 0);
  assert_null(info.held);
  vmt_monitor_destroy(m1);
  vmt_monitor_destroy(m2);
  vmt_monitor_destroy(m3);
  vmt_sync_destroy(s1);
}

typedef struct identity {
  vmt_monitor_t *m;
  int rc[7];
  int64_t owner_while_attached, self_id;
  size_t held_while_attached;
} identity_t;

static void *enter_then_attach(void *arg) {
  identity_t *x = arg;
  x->rc[0] = vmt_monitor_enter(x->m);   /* no record yet: an implicit identity owns it */
  vmt_thread_t *self;
  x->rc[1] = vmt_thread_attach(NULL, &self);
  x->self_id = vmt_thread_id(self);
  x->rc[2] = vmt_monitor_enter(x->m);   /* recursive: the attach handed it to the record */
  vmt_monitor_stats_t st;
  vmt_monitor_get_stats(x->m, &st);
  x->owner_while_attached = st.owner_id;
  vmt__thread_lock_info_t info;
  if (vmt__thread_lock_info(self, true, &info) == 0) {
    x->held_while_attached = info.held_count;
    free(info.held);
  }
  x->rc[3] = vmt_monitor_exit(x->m);
  x->rc[4] = vmt_monitor_exit(x->m);
  x->rc[5] = vmt_monitor_exit(x->m);   /* one too many */
  x->rc[6] = vmt_thread_detach();
  return NULL;
}

static void ownership_survives_an_attach_in_between(void **state) {
  (void)state;
  identity_t x = {0};
  assert_int_equal(vmt_monitor_create(&x.m, "attach"), 0);
  pthread_t p;
  assert_int_equal(pthread_create(&p, NULL, enter_then_attach, &x), 0);
  assert_int_equal(pthread_join(p, NULL), 0);
  assert_int_equal(x.rc[0], 0);
  assert_int_equal(x.rc[1], 0);
  assert_int_equal(x.rc[2], 0);
  /* Taken before the thread had an id, owned by the thread all along: now under its id, and
   * listed among its locked monitors (ThreadInfo.getLockedMonitors). */
  assert_true(x.self_id > 0);
  assert_int_equal(x.owner_while_attached, x.self_id);
  assert_int_equal(x.held_while_attached, 1);
  assert_int_equal(x.rc[3], 0);
  assert_int_equal(x.rc[4], 0);
  assert_int_equal(x.rc[5], -EPERM);
  assert_int_equal(x.rc[6], 0);
  assert_int_equal(vmt_monitor_destroy(x.m), 0);   /* released: not busy */
}

/* ---- Readers racing with the owner ------------------------------------------------------ */

#define CHURN_LOCKS 6

typedef struct churn {
  _Atomic int stop;
  _Atomic uint64_t rounds;
} churn_t;

static void *churn_locks(void *arg) {
  churn_t *c = arg;
  while (!atomic_load(&c->stop)) {
    vmt_monitor_t *m[CHURN_LOCKS];
    for (int i = 0; i < CHURN_LOCKS; i++) {
      if (vmt_monitor_create(&m[i], "churn") != 0) abort();
      vmt_monitor_enter(m[i]);
    }
    /* Release in a scrambled order, then destroy: slots get recycled under the reader. */
    for (int i = 0; i < CHURN_LOCKS; i++) vmt_monitor_exit(m[(i * 5 + 1) % CHURN_LOCKS]);
    for (int i = 0; i < CHURN_LOCKS; i++) vmt_monitor_destroy(m[i]);
    atomic_fetch_add(&c->rounds, 1);
  }
  return NULL;
}

static void lock_info_is_consistent_while_the_owner_churns(void **state) {
  (void)state;
  churn_t c = {0};
  vmt_thread_t *t = mu_start(churn_locks, &c);
  int64_t start = test_clock_ns(CLOCK_MONOTONIC);
  size_t seen_nonempty = 0;
  for (int64_t now = start;
       (now - start < 200 * MU_MS || atomic_load(&c.rounds) < 100 || seen_nonempty == 0) &&
       now - start < MU_POLL_DEADLINE_NS;
       now = test_clock_ns(CLOCK_MONOTONIC)) {
    vmt__thread_lock_info_t info = info_of(t, true);
    assert_true(info.held_count <= CHURN_LOCKS);
    for (size_t i = 0; i < info.held_count; i++) {
      assert_memory_equal(info.held[i].name, "churn@", 6);
      assert_int_equal(info.held[i].depth, (int32_t)(info.held_count - 1 - i));
    }
    seen_nonempty += info.held_count > 0;
    free(info.held);
  }
  atomic_store(&c.stop, 1);
  mu_join(t);
  /* How often a copy caught locks held depends on scheduling, but some must have: a reader
   * that always came back empty would pass every check above. */
  assert_true(seen_nonempty > 0);
  assert_true(atomic_load(&c.rounds) >= 100);
}

/* ---- The lock owner a reader names ------------------------------------------------------ *
 * lock info names the owner of the lock a thread waits for. Between the copy and the naming,
 * the hook lets that owner leave and end, reclaims its record and starts a new thread, which
 * gets the record back from the pool (LIFO) unless the reader's snapshot still protects it.
 * The new thread never owned the lock: it must not be named. */

typedef struct recycled {
  vmt_monitor_t *m;
  vmt_thread_t *owner, *newcomer;
  _Atomic int owner_go, newcomer_go;
  bool acted, reused;
} recycled_t;

static void *own_until_told(void *arg) {
  recycled_t *r = arg;
  vmt_monitor_enter(r->m);
  while (!atomic_load(&r->owner_go)) mu_pause_1ms();
  vmt_monitor_exit(r->m);
  return NULL;
}

static void *enter_once_and_leave(void *arg) {
  recycled_t *r = arg;
  vmt_monitor_enter(r->m);
  vmt_monitor_exit(r->m);
  return NULL;
}

static void *idle_until_told(void *arg) {
  recycled_t *r = arg;
  while (!atomic_load(&r->newcomer_go)) mu_pause_1ms();
  return NULL;
}

/* Must not fail an assertion: it runs inside vmt__thread_lock_info. */
static void end_owner_and_reuse_its_record(void *arg) {
  recycled_t *r = arg;
  if (r->acted) return;
  r->acted = true;
  vmt_thread_t *old = r->owner;
  atomic_store(&r->owner_go, 1);
  vmt_thread_join(old, NULL);
  vmt_thread_release(old);
  vmt__registry_reclaim();
  if (vmt_thread_start(&r->newcomer, idle_until_told, r) == 0) r->reused = r->newcomer == old;
}

static void lock_info_never_names_a_recycled_owner(void **state) {
  (void)state;
  recycled_t r = {0};
  assert_int_equal(vmt_monitor_create(&r.m, "recycled"), 0);
  vmt__registry_reclaim();   /* earlier threads' records: the owner's will be the last freed */
  r.owner = mu_start(own_until_told, &r);
  vmt_monitor_stats_t st;
  MU_POLL_UNTIL(vmt_monitor_get_stats(r.m, &st) == 0 && st.owner_id == vmt_thread_id(r.owner),
                "the owner to own it");
  vmt_thread_t *w = mu_start(enter_once_and_leave, &r);
  MU_POLL_UNTIL(vmt_thread_state(w) == VMT_THREAD_BLOCKED, "the waiter to block");
  vmt__fault_set_hook(VMT__FAULT_LOCK_OWNER, end_owner_and_reuse_its_record, &r);
  vmt__thread_lock_info_t info = info_of(w, false);
  vmt__fault_set_hook(VMT__FAULT_LOCK_OWNER, NULL, NULL);
  assert_true(r.acted);
  assert_non_null(r.newcomer);
  assert_int_equal(info.state, VMT_THREAD_BLOCKED);
  assert_true(info.has_lock);
  /* The copy was taken while the first owner held the lock: it may be named, or nobody (it
   * has gone); never the newcomer, whose record was the owner's if the pool gave it back. */
  if (!r.reused) print_message("note: the newcomer got another record\n");
  assert_true(info.lock_owner_id != vmt_thread_id(r.newcomer));
  atomic_store(&r.newcomer_go, 1);
  mu_join(r.newcomer);
  mu_join(w);
  assert_int_equal(vmt_monitor_destroy(r.m), 0);
}

/* ---- Failure paths ---------------------------------------------------------------------- */

static void lock_info_reports_enomem_and_leaks_nothing(void **state) {
  (void)state;
  assert_int_equal(vmt__thread_lock_info(NULL, false, NULL), -EINVAL);
  vmt_monitor_t *m;
  assert_int_equal(vmt_monitor_create(&m, "held"), 0);
  assert_int_equal(vmt_monitor_enter(m), 0);
  vmt__fault_arm(VMT__FAULT_ALLOC, 0, -1, ENOMEM);
  vmt__thread_lock_info_t info;
  assert_int_equal(vmt__thread_lock_info(vmt_thread_current(), true, &info), -ENOMEM);
  assert_true(vmt__fault_injected(VMT__FAULT_ALLOC) > 0);
  /* Without the held list, nothing needs allocating. */
  assert_int_equal(vmt__thread_lock_info(vmt_thread_current(), false, &info), 0);
  vmt__fault_disarm_all();
  assert_int_equal(vmt_monitor_exit(m), 0);
  assert_int_equal(vmt_monitor_destroy(m), 0);
}

/* vmt_monitor_get_stats names the owner through a registry snapshot; a thread whose hazard
 * block cannot be allocated gets -ENOMEM, not an owner of 0 ("free") it never read. Every
 * block is taken first, by threads that hold theirs, so the next thread must allocate one. */
typedef struct hogs {
  _Atomic int ready;
  vmt_monitor_t *m;
  int rc;
  int64_t owner_id;
} hogs_t;

static void *take_a_hazard_block(void *arg) {
  hogs_t *h = arg;
  int64_t *ids = NULL;
  size_t n = 0;
  if (vmt_mx_get_all_thread_ids(&ids, &n) == 0) vmt_mx_ids_free(ids);
  atomic_fetch_add(&h->ready, 1);
  vmt_park(0);
  return NULL;
}

static void *stats_from_a_new_thread(void *arg) {
  hogs_t *h = arg;
  vmt_monitor_stats_t st = {.owner_id = 12345};
  h->rc = vmt_monitor_get_stats(h->m, &st);
  h->owner_id = st.owner_id;
  return NULL;
}

static void get_stats_reports_enomem(void **state) {
  (void)state;
  hogs_t h = {0};
  assert_int_equal(vmt_monitor_create(&h.m, "stats"), 0);
  assert_int_equal(vmt_monitor_enter(h.m), 0);
  size_t n = vmt__hazard_block_count() + 65;   /* more than the 64 static blocks */
  vmt_thread_t **t = calloc(n, sizeof(*t));
  assert_non_null(t);
  for (size_t i = 0; i < n; i++) t[i] = mu_start(take_a_hazard_block, &h);
  MU_POLL_UNTIL((size_t)atomic_load(&h.ready) == n, "every thread to hold a hazard block");
  vmt__fault_arm(VMT__FAULT_ALLOC, 0, -1, ENOMEM);
  pthread_t p;
  assert_int_equal(pthread_create(&p, NULL, stats_from_a_new_thread, &h), 0);
  assert_int_equal(pthread_join(p, NULL), 0);
  bool injected = vmt__fault_injected(VMT__FAULT_ALLOC) > 0;
  vmt__fault_disarm_all();
  assert_true(injected);
  assert_int_equal(h.rc, -ENOMEM);
  assert_int_equal(pthread_create(&p, NULL, stats_from_a_new_thread, &h), 0);
  assert_int_equal(pthread_join(p, NULL), 0);
  assert_int_equal(h.rc, 0);
  assert_int_equal(h.owner_id, vmt_thread_id(vmt_thread_current()));
  for (size_t i = 0; i < n; i++) assert_int_equal(vmt_unpark(t[i]), 0);
  for (size_t i = 0; i < n; i++) mu_join(t[i]);
  free(t);
  assert_int_equal(vmt_monitor_exit(h.m), 0);
  assert_int_equal(vmt_monitor_destroy(h.m), 0);
}

static void create_reports_enomem_when_the_pool_must_grow(void **state) {
  (void)state;
  enum { MAX = 1000 };
  vmt_monitor_t **made = calloc(MAX, sizeof(*made));
  assert_non_null(made);
  vmt__fault_arm(VMT__FAULT_ALLOC, 0, -1, ENOMEM);
  int n = 0, rc = 0;
  while (n < MAX && (rc = vmt_monitor_create(&made[n], "pool")) == 0) n++;
  bool injected = vmt__fault_injected(VMT__FAULT_ALLOC) > 0;
  vmt__fault_disarm_all();
  /* Free slots are handed out without allocating; the first chunk allocation fails. */
  assert_int_equal(rc, -ENOMEM);
  assert_true(n < MAX);
  assert_true(injected);
  for (int i = 0; i < n; i++) assert_int_equal(vmt_monitor_destroy(made[i]), 0);
  free(made);
  /* And the pool works again. */
  vmt_monitor_t *m;
  assert_int_equal(vmt_monitor_create(&m, "after"), 0);
  assert_int_equal(vmt_monitor_destroy(m), 0);
}

/* A destroy that overtakes an enter between the enter's check of the handle and its take of
 * the lock word (a VM deflating a monitor while a thread is about to enter it), replayed step
 * by step: the check passes, the destroy completes, then the enter goes on as
 * vmt_monitor_enter and vmt_sync_lock do. It must take nothing and answer -EINVAL. Before
 * destroy took the word itself, the enter's compare-and-swap took the freed slot (this test
 * failed at that step) and the caller owned a slot in the pool, which the next create handed
 * to another caller. test/monitor_test.c races the real calls. */
static void an_enter_overtaken_by_a_destroy_takes_nothing(void **state) {
  (void)state;
  vmt_thread_t *self = vmt__self;
  assert_non_null(self);
  for (int kind = 0; kind < 2; kind++) {
    uint32_t magic = kind ? VMT__LOCK_MAGIC_SYNC : VMT__LOCK_MAGIC_MONITOR;
    void *o;
    if (kind) assert_int_equal(vmt_sync_create((vmt_sync_t **)&o, "overtaken"), 0);
    else assert_int_equal(vmt_monitor_create((vmt_monitor_t **)&o, "overtaken"), 0);
    struct vmt__lock *l = vmt__lock_checked(o, magic);   /* the enter's check */
    assert_non_null(l);
    assert_int_equal(kind ? vmt_sync_destroy(o) : vmt_monitor_destroy(o), 0);
    assert_false(vmt__lock_try_acquire(l));               /* the enter's fast path */
    assert_int_equal(vmt__lock_enter_contended(l, self, kind ? VMT__EP_SYNC : VMT__EP_ENTER,
                                               VMT_OS_NO_DEADLINE, true),
                     -EINVAL);                             /* its slow path */
    assert_true(atomic_load(&self->sync.held_head) != l);
    assert_int_equal(vmt_thread_state(self), VMT_THREAD_RUNNABLE);
    assert_null(atomic_load(&self->sync.blocked_on));
    assert_null(atomic_load(&self->sync.parked_on));
    assert_int_equal(atomic_load(&l->entry_waiters), 0);
    /* The slot is fine for its next object. */
    if (kind) assert_int_equal(vmt_sync_create((vmt_sync_t **)&o, "next"), 0);
    else assert_int_equal(vmt_monitor_create((vmt_monitor_t **)&o, "next"), 0);
    assert_int_equal(kind ? vmt_sync_lock(o) : vmt_monitor_enter(o), 0);
    assert_int_equal(kind ? vmt_sync_unlock(o) : vmt_monitor_exit(o), 0);
    assert_int_equal(kind ? vmt_sync_destroy(o) : vmt_monitor_destroy(o), 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(an_enter_overtaken_by_a_destroy_takes_nothing, reset_after),
      cmocka_unit_test_teardown(thread_walks_through_every_state, reset_after),
      cmocka_unit_test_teardown(blocked_count_grows_by_each_contended_enter, reset_after),
      cmocka_unit_test_teardown(waited_count_and_time_after_wait_300ms, reset_after),
      cmocka_unit_test_teardown(times_are_off_then_restart_from_zero, reset_after),
      cmocka_unit_test_teardown(blocked_time_is_kept_per_thread_and_per_monitor, reset_after),
      cmocka_unit_test_teardown(synchronizer_wait_is_a_timed_wait_on_it, reset_after),
      cmocka_unit_test_teardown(notified_waiter_is_blocked_on_the_notifier, reset_after),
      cmocka_unit_test_teardown(reentry_is_blocked_time_not_waited_time, reset_after),
      cmocka_unit_test_teardown(timed_out_waiter_blocks_only_on_an_owned_monitor, reset_after),
      cmocka_unit_test_teardown(times_include_the_episode_in_progress, reset_after),
      cmocka_unit_test_teardown(held_locks_listed_innermost_first_with_depth, reset_after),
      cmocka_unit_test_teardown(ownership_survives_an_attach_in_between, reset_after),
      cmocka_unit_test_teardown(lock_info_is_consistent_while_the_owner_churns, reset_after),
      cmocka_unit_test_teardown(lock_info_never_names_a_recycled_owner, reset_after),
      cmocka_unit_test_teardown(lock_info_reports_enomem_and_leaks_nothing, reset_after),
      cmocka_unit_test_teardown(get_stats_reports_enomem, reset_after),
      cmocka_unit_test_teardown(create_reports_enomem_when_the_pool_must_grow, reset_after),
  };
  return cmocka_run_group_tests_name("monitor_internal", tests, mu_attach_main, detach_main);
}
