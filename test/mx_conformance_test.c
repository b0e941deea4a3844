/*
 * test/mx_conformance_test.c: the management API against the Java contract, one group per
 * OpenJDK ThreadMXBean test (the .java files of test/jdk/java/lang/management/ThreadMXBean and
 * test/jdk/com/sun/management/ThreadMXBean), each case naming the test and the assertion it
 * carries over. Where a Java test checks HotSpot's behaviour rather than the specification,
 * the case says so. These assert what Java promises (ThreadMXBean, ThreadInfo, MonitorInfo
 * javadoc; sun.management.ThreadImpl; HotSpot's services/threadService.cpp), not what the code
 * happens to do: a failure here is a difference a Java user would see.
 *
 * Counts are process-wide, so every case works with differences from what it read first. The
 * main thread is attached (the owner other threads block on). The deadlock group runs last: its
 * threads can never be released, and the process ends with them.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "mx_util.h"
#include "monitor_util.h"
#include "test/thread_util.h"

#define UNKNOWN_ID 999999   /* InvalidThreadID's "non-existent thread" */
#define MS (1000LL * 1000)

/* ---- helpers ------------------------------------------------------------------------------ */

static void expect_no_lock(const vmt_thread_info_t *info) {
  assert_null(info->lock);
  assert_int_equal(info->lock_owner_id, -1);
  assert_null(info->lock_owner_name);
}

static void expect_lock(const vmt_thread_info_t *info, const char *display, int64_t owner_id,
                        const char *owner_name) {
  assert_non_null(info->lock);
  assert_string_equal(info->lock->name, display);
  assert_int_equal(info->lock_owner_id, owner_id);
  if (owner_name == NULL)
    assert_null(info->lock_owner_name);
  else
    assert_string_equal(info->lock_owner_name, owner_name);
}

static void monitor_name(vmt_monitor_t *m, char *buf, size_t len) {
  assert_true(vmt_monitor_describe(m, buf, len) > 0);
}

static void sync_name(vmt_sync_t *s, char *buf, size_t len) {
  assert_true(vmt_sync_describe(s, buf, len) > 0);
}

static int64_t self_id(void) { return vmt_thread_id(vmt_thread_current()); }

static void join_release(vmt_thread_t *t) {
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(vmt_thread_release(t), 0);
}

/* A body that spins (RUNNABLE) until *stop. */
static void *spin_until(void *arg) {
  _Atomic bool *stop = arg;
  while (!atomic_load(stop)) {
  }
  return NULL;
}

/* A body in Object.wait(timeout) on a monitor until told to stop. */
typedef struct timed_waiter {
  vmt_monitor_t *m;
  int64_t timeout_ns;
  _Atomic bool done;
} timed_waiter_t;

static void *timed_wait_loop(void *arg) {
  timed_waiter_t *w = arg;
  vmt_monitor_enter(w->m);
  while (!atomic_load(&w->done)) vmt_monitor_wait(w->m, w->timeout_ns);
  vmt_monitor_exit(w->m);
  return NULL;
}

/* LockSupport.park / parkNanos until told to stop (stopped by flag + unpark). */
typedef struct parker {
  int64_t timeout_ns;
  _Atomic bool done;
} parker_t;

static void *park_loop(void *arg) {
  parker_t *p = arg;
  while (!atomic_load(&p->done)) vmt_park(p->timeout_ns);
  return NULL;
}

/* Thread.sleep in short naps until told to stop. */
static void *sleep_loop(void *arg) {
  _Atomic bool *done = arg;
  while (!atomic_load(done)) vmt_sleep_ns(5 * MS);
  return NULL;
}

/* Locks a synchronizer (blocking while another thread owns it) and unlocks it. */
static void *lock_and_unlock(void *arg) {
  vmt_sync_lock(arg);
  vmt_sync_unlock(arg);
  return NULL;
}

/* ==== ThreadCounts, AllThreadIds, ResetPeakThreadCount, ThreadLists ===================== */

typedef struct counts {
  int32_t live, peak, daemon;
  int64_t started;
} counts_t;

static counts_t counts_now(void) {
  return (counts_t){vmt_mx_get_thread_count(), vmt_mx_get_peak_thread_count(),
                    vmt_mx_get_daemon_thread_count(), vmt_mx_get_total_started_thread_count()};
}

/* ThreadCounts: live, total started, peak and daemon counts follow daemon and user threads as
 * they start and end: ending daemon threads lowers live and daemon counts by exactly their
 * number and leaves total started and peak alone. AllThreadIds: the counts change by exactly
 * the threads added, once they are joined (checkThreadCount after joinDaemonThreads). */
static void thread_counts_follow_daemon_and_user_threads(void **state) {
  (void)state;
  enum { DAEMONS = 5, USERS = 3 };
  gate_t gd, gu;
  gate_init(&gd);
  gate_init(&gu);
  counts_t c0 = counts_now();
  vmt_thread_t *d[DAEMONS], *u[USERS];
  for (int i = 0; i < DAEMONS; i++) d[i] = start_named("tc-daemon", true, gate_body, &gd);
  gate_await(&gd, DAEMONS);
  counts_t c1 = counts_now();
  assert_int_equal(c1.live, c0.live + DAEMONS);
  assert_int_equal(c1.daemon, c0.daemon + DAEMONS);
  assert_int_equal(c1.started, c0.started + DAEMONS);
  assert_true(c1.peak >= c1.live);
  for (int i = 0; i < USERS; i++) u[i] = start_named("tc-user", false, gate_body, &gu);
  gate_await(&gu, USERS);
  counts_t c2 = counts_now();
  assert_int_equal(c2.live, c0.live + DAEMONS + USERS);
  assert_int_equal(c2.daemon, c0.daemon + DAEMONS);
  assert_int_equal(c2.started, c0.started + DAEMONS + USERS);
  assert_true(c2.peak >= c2.live);

  gate_open(&gd);
  for (int i = 0; i < DAEMONS; i++) join_release(d[i]);
  counts_t c3 = counts_now();
  assert_int_equal(c3.live, c0.live + USERS);
  assert_int_equal(c3.daemon, c0.daemon);
  assert_int_equal(c3.started, c2.started); /* ended threads were still started */
  assert_int_equal(c3.peak, c2.peak);       /* the peak does not fall with the count */

  gate_open(&gu);
  for (int i = 0; i < USERS; i++) join_release(u[i]);
  counts_t c4 = counts_now();
  assert_int_equal(c4.live, c0.live);
  assert_int_equal(c4.daemon, c0.daemon);
  assert_int_equal(c4.started, c2.started);
  assert_int_equal(c4.peak, c2.peak);
  gate_destroy(&gd);
  gate_destroy(&gu);
}

/* ResetPeakThreadCount: after resetPeakThreadCount the peak equals the live count; starting n
 * threads raises it by exactly n (peak2 == peak1 + delta); ending threads leaves it as it was
 * (peak2 == peak1); starting threads below the old peak leaves it unchanged (DAEMON_THREADS_2,
 * EXPECTED_PEAK_DELTA_2 = 0); and a reset after threads ended brings it down to the live
 * count. */
static void reset_peak_sets_peak_to_the_live_count(void **state) {
  (void)state;
  /* The first eight wait at two gates: the four that end first (TERMINATE_1) at g1, the four
   * that stay alive until after the third reset at g4. One gate for all eight let the four
   * meant to stay end on their own while the live count was being read and the next four
   * started: "peak 7 != live 4 + 4" under TSan on the loaded machine, 1 run in 3. */
  gate_t g1, g2, g3, g4;
  gate_init(&g1);
  gate_init(&g2);
  gate_init(&g3);
  gate_init(&g4);
  vmt_mx_reset_peak_thread_count();
  assert_int_equal(vmt_mx_get_peak_thread_count(), vmt_mx_get_thread_count());

  int32_t peak0 = vmt_mx_get_peak_thread_count();
  vmt_thread_t *a[8], *b[2], *c[4];
  for (int i = 0; i < 8; i++) a[i] = start_named("rp-1", true, gate_body, i < 4 ? &g1 : &g4);
  gate_await(&g1, 4);
  gate_await(&g4, 4);
  assert_int_equal(vmt_mx_get_peak_thread_count(), peak0 + 8);

  int32_t peak1 = vmt_mx_get_peak_thread_count();
  gate_open(&g1);
  for (int i = 0; i < 4; i++) join_release(a[i]);
  assert_int_equal(vmt_mx_get_peak_thread_count(), peak1);   /* TERMINATE_1 */

  for (int i = 0; i < 2; i++) b[i] = start_named("rp-2", true, gate_body, &g2);
  gate_await(&g2, 2);
  assert_int_equal(vmt_mx_get_peak_thread_count(), peak1);   /* below the old peak */

  vmt_mx_reset_peak_thread_count();
  int32_t live = vmt_mx_get_thread_count();
  assert_int_equal(vmt_mx_get_peak_thread_count(), live);
  for (int i = 0; i < 4; i++) c[i] = start_named("rp-3", true, gate_body, &g3);
  gate_await(&g3, 4);
  assert_int_equal(vmt_mx_get_peak_thread_count(), live + 4);  /* EXPECTED_PEAK_DELTA_3 */

  int32_t peak3 = vmt_mx_get_peak_thread_count();
  gate_open(&g4);
  for (int i = 4; i < 8; i++) join_release(a[i]);
  gate_open(&g2);
  for (int i = 0; i < 2; i++) join_release(b[i]);
  assert_int_equal(vmt_mx_get_peak_thread_count(), peak3);
  vmt_mx_reset_peak_thread_count();
  assert_int_equal(vmt_mx_get_peak_thread_count(), vmt_mx_get_thread_count());
  gate_open(&g3);
  for (int i = 0; i < 4; i++) join_release(c[i]);
  vmt_mx_reset_peak_thread_count();
  assert_int_equal(vmt_mx_get_peak_thread_count(), vmt_mx_get_thread_count());
  gate_destroy(&g1);
  gate_destroy(&g2);
  gate_destroy(&g3);
  gate_destroy(&g4);
}

/* ThreadLists: getThreadCount() == getAllThreadIds().length. AllThreadIds: every started
 * thread is listed while alive and no longer once it has terminated (checkDaemonThreadsDead:
 * alive != found fails). */
static void all_ids_agree_with_the_count_and_drop_dead_threads(void **state) {
  (void)state;
  gate_t g;
  gate_init(&g);
  vmt_thread_t *t[4];
  for (int i = 0; i < 4; i++) t[i] = start_named("ids", i % 2 == 0, gate_body, &g);
  gate_await(&g, 4);
  int64_t *ids;
  size_t n;
  assert_int_equal(vmt_mx_get_all_thread_ids(&ids, &n), 0);
  assert_int_equal((int32_t)n, vmt_mx_get_thread_count());
  for (int i = 0; i < 4; i++) assert_true(ids_contain(ids, n, vmt_thread_id(t[i])));
  assert_true(ids_contain(ids, n, self_id()));
  vmt_mx_ids_free(ids);

  int64_t dead = vmt_thread_id(t[0]);
  gate_open(&g);
  for (int i = 0; i < 4; i++) assert_int_equal(vmt_thread_join(t[i], NULL), 0);
  assert_int_equal(vmt_mx_get_all_thread_ids(&ids, &n), 0);
  assert_int_equal((int32_t)n, vmt_mx_get_thread_count());
  assert_false(ids_contain(ids, n, dead));
  vmt_mx_ids_free(ids);
  for (int i = 0; i < 4; i++) assert_int_equal(vmt_thread_release(t[i]), 0);
  gate_destroy(&g);
}

/* AllThreadIds / ThreadCounts for threads that join the VM from outside (JNI
 * AttachCurrentThread, AttachCurrentThreadAsDaemon): an attached thread is started (total
 * started grows), live, listed and, attached as a daemon, counted as one; after detach it is
 * gone from the live counts and from getAllThreadIds, getThreadInfo is null and its CPU time -1;
 * attaching again is a new thread with a new id (Java never reuses a thread id). */
typedef struct attach_probe {
  bool daemon;
  int64_t first_id, second_id;
  counts_t before, attached, detached, again;
  bool listed, info_present, info_daemon, gone_from_ids, info_null_after, cpu_minus_one_after;
  int rc;
} attach_probe_t;

static void *attach_twice(void *arg) {
  attach_probe_t *p = arg;
  vmt_thread_options_t o;
  memset(&o, 0, sizeof(o));
  o.flags = VMT_THREAD_OPT_NAME | VMT_THREAD_OPT_DAEMON;
  o.name = "attached";
  o.daemon = p->daemon;
  p->before = counts_now();
  vmt_thread_t *me = NULL;
  if ((p->rc = vmt_thread_attach(&o, &me)) != 0) return NULL;
  p->attached = counts_now();
  p->first_id = vmt_thread_id(me);
  int64_t *ids;
  size_t n;
  if (vmt_mx_get_all_thread_ids(&ids, &n) == 0) {
    p->listed = ids_contain(ids, n, p->first_id);
    vmt_mx_ids_free(ids);
  }
  vmt_thread_info_t *info = NULL;
  if (vmt_mx_get_thread_info(p->first_id, 0, &info) == 0 && info) {
    p->info_present = info->state == VMT_THREAD_RUNNABLE;
    p->info_daemon = info->daemon;
    vmt_mx_thread_info_free(info);
  }
  if ((p->rc = vmt_thread_detach()) != 0) return NULL;
  p->detached = counts_now();
  if (vmt_mx_get_all_thread_ids(&ids, &n) == 0) {
    p->gone_from_ids = !ids_contain(ids, n, p->first_id);
    vmt_mx_ids_free(ids);
  }
  info = (vmt_thread_info_t *)1;
  p->info_null_after = vmt_mx_get_thread_info(p->first_id, 0, &info) == 0 && info == NULL;
  int64_t ns = 0;
  p->cpu_minus_one_after = vmt_mx_get_thread_cpu_time(p->first_id, &ns) == 0 && ns == -1;
  if ((p->rc = vmt_thread_attach(&o, &me)) != 0) return NULL;
  p->again = counts_now();
  p->second_id = vmt_thread_id(me);
  p->rc = vmt_thread_detach();
  return NULL;
}

static void attached_threads_are_started_live_and_daemon_like_jni_ones(void **state) {
  (void)state;
  for (int daemon = 0; daemon < 2; daemon++) {
    attach_probe_t p;
    memset(&p, 0, sizeof(p));
    p.daemon = daemon;
    pthread_t pt;
    assert_int_equal(pthread_create(&pt, NULL, attach_twice, &p), 0);
    assert_int_equal(pthread_join(pt, NULL), 0);
    assert_int_equal(p.rc, 0);
    assert_int_equal(p.attached.started, p.before.started + 1);
    assert_int_equal(p.attached.live, p.before.live + 1);
    assert_int_equal(p.attached.daemon, p.before.daemon + daemon);
    assert_true(p.attached.peak >= p.attached.live);
    assert_true(p.listed);
    assert_true(p.info_present);
    assert_int_equal(p.info_daemon, daemon);
    assert_int_equal(p.detached.live, p.before.live);
    assert_int_equal(p.detached.daemon, p.before.daemon);
    assert_int_equal(p.detached.started, p.attached.started);
    assert_true(p.gone_from_ids);
    assert_true(p.info_null_after);
    assert_true(p.cpu_minus_one_after);
    assert_int_equal(p.again.started, p.detached.started + 1);
    assert_true(p.second_id > p.first_id);
  }
}

/* A thread is alive from the moment it is started until it terminates (Thread.isAlive), and
 * ThreadMXBean answers for every live thread: getAllThreadIds lists it, getThreadInfo is not
 * null, getThreadCpuTime is not -1, and getPeakThreadCount (ResetPeakThreadCount's "peak live
 * thread count") has counted it. HotSpot adds a thread to its thread list and counts before
 * the thread runs a single instruction of its own (JVM_StartThread, Threads::add), so this
 * holds even for a thread that asks about itself first thing and for one that ends at once. */
typedef struct self_view {
  _Atomic int info_null, cpu_minus_one, not_listed;
} self_view_t;

static void *look_at_self(void *arg) {
  self_view_t *v = arg;
  int64_t id = vmt_thread_id(vmt_thread_current());
  vmt_thread_info_t *info = NULL;
  if (vmt_mx_get_thread_info(id, 0, &info) != 0 || info == NULL) atomic_fetch_add(&v->info_null, 1);
  vmt_mx_thread_info_free(info);
  int64_t ns = -1;
  if (vmt_mx_is_thread_cpu_time_supported() &&
      (vmt_mx_get_thread_cpu_time(id, &ns) != 0 || ns == -1))
    atomic_fetch_add(&v->cpu_minus_one, 1);
  int64_t *ids;
  size_t n;
  if (vmt_mx_get_all_thread_ids(&ids, &n) == 0) {
    if (!ids_contain(ids, n, id)) atomic_fetch_add(&v->not_listed, 1);
    vmt_mx_ids_free(ids);
  }
  return NULL;
}

static void a_started_thread_is_live_from_its_first_instruction(void **state) {
  (void)state;
  enum { N = 1000 };
  self_view_t v;
  memset(&v, 0, sizeof(v));
  int peak_missed = 0;
  for (int i = 0; i < N; i++) {
    vmt_mx_reset_peak_thread_count();
    int32_t live = vmt_mx_get_thread_count();
    vmt_thread_t *t = start_named("early", false, i % 2 ? look_at_self : return_arg,
                                  i % 2 ? &v : NULL);
    assert_non_null(t);
    join_release(t);
    if (vmt_mx_get_peak_thread_count() < live + 1) peak_missed++;
  }
  assert_int_equal(atomic_load(&v.info_null), 0);
  assert_int_equal(atomic_load(&v.cpu_minus_one), 0);
  assert_int_equal(atomic_load(&v.not_listed), 0);
  assert_int_equal(peak_missed, 0);
}

/* ==== InvalidThreadID, ThreadInfoArray, ThreadStackTrace ================================ */

/* InvalidThreadID: getThreadCpuTime(id) throws IllegalArgumentException for 0, -1, -2,
 * Long.MIN_VALUE + 1 and Long.MIN_VALUE, and returns -1 for a thread that does not exist
 * (999999). The same check (ThreadImpl.verifyThreadId) guards every call taking an id. */
static void invalid_ids_are_illegal_arguments_and_unknown_ones_minus_one(void **state) {
  (void)state;
  const int64_t bad[] = {0, -1, -2, INT64_MIN + 1, INT64_MIN};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    int64_t v = 7;
    vmt_thread_info_t *info = NULL;
    assert_int_equal(vmt_mx_get_thread_cpu_time(bad[i], &v), -EINVAL);
    assert_int_equal(vmt_mx_get_thread_user_time(bad[i], &v), -EINVAL);
    assert_int_equal(vmt_mx_get_thread_info(bad[i], 0, &info), -EINVAL);
    int64_t pair[2] = {self_id(), bad[i]};
    int64_t out[2];
    assert_int_equal(vmt_mx_get_thread_cpu_time_array(pair, 2, out), -EINVAL);
    assert_int_equal(vmt_mx_get_thread_user_time_array(pair, 2, out), -EINVAL);
    vmt_thread_info_t **arr = NULL;
    assert_int_equal(vmt_mx_get_thread_info_array(pair, 2, false, false, 0, &arr), -EINVAL);
    if (vmt_mx_is_thread_allocated_memory_supported())
      assert_int_equal(vmt_mx_get_thread_allocated_bytes(bad[i], &v), -EINVAL);
    assert_int_equal(v, 7);
  }
  int64_t ns = 0;
  assert_int_equal(vmt_mx_get_thread_cpu_time(UNKNOWN_ID, &ns), 0);
  assert_int_equal(ns, -1);
  assert_int_equal(vmt_mx_get_thread_user_time(UNKNOWN_ID, &ns), 0);
  assert_int_equal(ns, -1);
}

/* ThreadInfoArray.checkNullElement / checkEmptyArray: getThreadInfo(long[]) has a null element
 * for an id with no live thread, and an empty id array gives an empty result for every form
 * (getThreadInfo(ids), (ids, 1), (ids, true, true)). ThreadStackTrace.checkNullThreadInfo:
 * getThreadInfo of a terminated thread is null, with and without a stack depth. */
static void null_elements_for_dead_and_unknown_ids_and_empty_for_empty(void **state) {
  (void)state;
  gate_t g;
  vmt_thread_t *live = start_gated(&g, "live", false);
  vmt_thread_t *dead = start_named("dead", false, return_arg, NULL);
  assert_int_equal(vmt_thread_join(dead, NULL), 0);
  int64_t ids[4] = {vmt_thread_id(live), vmt_thread_id(dead), UNKNOWN_ID, self_id()};
  for (int depth = 0; depth <= 1; depth++) {
    vmt_thread_info_t **arr = NULL;
    assert_int_equal(vmt_mx_get_thread_info_array(ids, 4, depth, depth,
                                                  depth ? VMT_MX_MAX_DEPTH_ALL : 0, &arr), 0);
    assert_non_null(arr[0]);
    assert_int_equal(arr[0]->id, ids[0]);
    assert_null(arr[1]);
    assert_null(arr[2]);
    assert_non_null(arr[3]);
    assert_int_equal(arr[3]->id, ids[3]);
    vmt_mx_thread_info_array_free(arr, 4);
  }
  assert_null(mu_info_of(ids[1], 0));
  assert_null(mu_info_of(ids[1], VMT_MX_MAX_DEPTH_ALL));

  const bool flags[3][2] = {{false, false}, {false, false}, {true, true}};
  const int32_t depths[3] = {0, 1, VMT_MX_MAX_DEPTH_ALL};
  for (int i = 0; i < 3; i++) {
    vmt_thread_info_t **arr = NULL;
    assert_int_equal(
        vmt_mx_get_thread_info_array(ids, 0, flags[i][0], flags[i][1], depths[i], &arr), 0);
    assert_non_null(arr);
    vmt_mx_thread_info_array_free(arr, 0);
  }
  assert_int_equal(vmt_thread_release(dead), 0);
  finish_gated(&g, live);
}

/* ThreadStackTrace.checkNullThreadInfo, for a thread that has ended but was not joined yet
 * (Java: Thread.getState() is TERMINATED once run() returned; getThreadInfo is null then, and
 * the CPU time -1, InvalidThreadID's "thread doesn't exist"). */
static void terminated_before_join_is_null_and_minus_one(void **state) {
  (void)state;
  vmt_thread_t *t = start_named("ending", false, return_arg, NULL);
  assert_true(await_state(t, VMT_THREAD_TERMINATED));
  int64_t id = vmt_thread_id(t);
  assert_null(mu_info_of(id, 0));
  int64_t ns = 0;
  assert_int_equal(vmt_mx_get_thread_cpu_time(id, &ns), 0);
  assert_int_equal(ns, -1);
  assert_int_equal(vmt_mx_get_thread_user_time(id, &ns), 0);
  assert_int_equal(ns, -1);
  if (vmt_mx_is_thread_allocated_memory_supported()) {
    assert_int_equal(vmt_mx_get_thread_allocated_bytes(id, &ns), 0);
    assert_int_equal(ns, -1);
  }
  int64_t *ids;
  size_t n;
  assert_int_equal(vmt_mx_get_all_thread_ids(&ids, &n), 0);
  assert_false(ids_contain(ids, n, id));
  vmt_mx_ids_free(ids);
  join_release(t);
}

/* ==== ThreadMXBeanStateTest ============================================================== */

/* ThreadMXBeanStateTest.checkLockInfo for each state a thread passes through: RUNNABLE with no
 * lock and owner -1; BLOCKED entering a monitor the main thread holds, lockName that monitor and
 * the owner the main thread; WAITING in wait() and TIMED_WAITING in wait(timeout) on it with
 * nobody owning it (owner null, id -1); TIMED_WAITING in parkNanos and WAITING in park, and
 * TIMED_WAITING in sleep, all with no lock (LockSupport.park without a blocker). */
static void states_and_lock_info_as_thread_mxbean_state_test(void **state) {
  (void)state;
  char name[300];
  vmt_monitor_t *m;
  assert_int_equal(vmt_monitor_create(&m, "my lock"), 0);
  monitor_name(m, name, sizeof(name));

  _Atomic bool stop = false;
  vmt_thread_t *t = start_named("StateChanger", true, spin_until, &stop);
  vmt_thread_info_t *info = mu_await_info_state(vmt_thread_id(t), VMT_THREAD_RUNNABLE);
  expect_no_lock(info);
  vmt_mx_thread_info_free(info);
  atomic_store(&stop, true);
  join_release(t);

  assert_int_equal(vmt_monitor_enter(m), 0);
  t = start_named("StateChanger", true, enter_and_leave, m);
  info = mu_await_info_state(vmt_thread_id(t), VMT_THREAD_BLOCKED);
  expect_lock(info, name, self_id(), vmt_thread_name(vmt_thread_current()));
  vmt_mx_thread_info_free(info);
  assert_int_equal(vmt_monitor_exit(m), 0);
  join_release(t);

  waiter_t w = {.m = m};
  t = start_named("StateChanger", true, wait_on_monitor, &w);
  info = mu_await_info_state(vmt_thread_id(t), VMT_THREAD_WAITING);
  expect_lock(info, name, -1, NULL);
  vmt_mx_thread_info_free(info);
  waiter_release(&w);
  join_release(t);

  timed_waiter_t tw = {.m = m, .timeout_ns = 60000 * MS};
  t = start_named("StateChanger", true, timed_wait_loop, &tw);
  info = mu_await_info_state(vmt_thread_id(t), VMT_THREAD_TIMED_WAITING);
  expect_lock(info, name, -1, NULL);
  vmt_mx_thread_info_free(info);
  assert_int_equal(vmt_monitor_enter(m), 0);
  atomic_store(&tw.done, true);
  assert_int_equal(vmt_monitor_notify_all(m), 0);
  assert_int_equal(vmt_monitor_exit(m), 0);
  join_release(t);

  for (int timed = 1; timed >= 0; timed--) {
    parker_t p = {.timeout_ns = timed ? 60000 * MS : 0};
    t = start_named("StateChanger", true, park_loop, &p);
    info = mu_await_info_state(vmt_thread_id(t),
                            timed ? VMT_THREAD_TIMED_WAITING : VMT_THREAD_WAITING);
    expect_no_lock(info);
    vmt_mx_thread_info_free(info);
    atomic_store(&p.done, true);
    assert_int_equal(vmt_unpark(t), 0);
    join_release(t);
  }

  _Atomic bool woke = false;
  t = start_named("StateChanger", true, sleep_loop, &woke);
  info = mu_await_info_state(vmt_thread_id(t), VMT_THREAD_TIMED_WAITING);
  expect_no_lock(info);
  vmt_mx_thread_info_free(info);
  atomic_store(&woke, true);
  int64_t id = vmt_thread_id(t);
  join_release(t);
  assert_null(mu_info_of(id, 0));   /* TERMINATED: no ThreadInfo */
  assert_int_equal(vmt_monitor_destroy(m), 0);
}

/* The same for ownable synchronizers (ThreadMXBeanStateTest's park on a blocker; LockInfo of
 * a thread parked in AbstractQueuedSynchronizer.acquire is the synchronizer, its owner the
 * exclusive owner thread: ThreadSnapshot::initialize, "Support for JSR-166 locks"). */
static void synchronizer_wait_reports_the_synchronizer_and_its_owner(void **state) {
  (void)state;
  char name[300];
  vmt_sync_t *s;
  assert_int_equal(vmt_sync_create(&s, "java.util.concurrent.locks.ReentrantLock$NonfairSync"), 0);
  sync_name(s, name, sizeof(name));
  assert_int_equal(vmt_sync_lock(s), 0);
  vmt_thread_t *t = start_named("sync-waiter", true, lock_and_unlock, s);
  vmt_thread_info_t *info = mu_await_info_state(vmt_thread_id(t), VMT_THREAD_WAITING);
  expect_lock(info, name, self_id(), vmt_thread_name(vmt_thread_current()));
  assert_string_equal(info->lock->class_name, "vmt.Synchronizer");
  vmt_mx_thread_info_free(info);
  assert_int_equal(vmt_sync_unlock(s), 0);
  join_release(t);
  assert_int_equal(vmt_sync_destroy(s), 0);
}

/* java.lang.Thread.State.WAITING names Thread.join with no timeout among the calls that make a
 * thread WAITING, and ThreadInfo.getWaitedCount counts it (HotSpot: join waits on the Thread
 * object; measured here with JDK 17 and 25: a joiner is WAITING with waitedCount 1, and its
 * ThreadInfo names the joined Thread as its lock, "java.lang.Thread@<its identity hash>", with
 * lockOwnerId -1; the same for join(ms), TIMED_WAITING). A thread in vmt_thread_join on a
 * thread that has not ended is WAITING, counted as a wait, with its time while contention
 * monitoring is on, waiting on the joined thread ("vmt.Thread", its id as the identity, no
 * owner), and RUNNABLE again once the join returned. Joining a thread that has already ended
 * does not wait (Java: join returns at once, isAlive() is false). */
static void joining_thread_is_waiting_and_counts_a_wait(void **state) {
  (void)state;
  assert_int_equal(vmt_mx_set_thread_contention_monitoring_enabled(true), 0);
  gate_t g;
  vmt_thread_t *target = start_gated(&g, "joined", false);
  joiner_t j = {.target = target, .rc = 1};
  vmt_thread_t *t = start_named("joiner", false, join_target, &j);
  int64_t id = vmt_thread_id(t);
  vmt_thread_info_t *info = mu_await_info_state(id, VMT_THREAD_WAITING);
  assert_non_null(info->lock);
  assert_string_equal(info->lock->class_name, "vmt.Thread");
  assert_int_equal(info->lock->identity_hash, (int32_t)vmt_thread_id(target));
  assert_int_equal(info->lock_owner_id, -1);
  assert_int_equal(info->waited_count, 1);
  assert_true(info->waited_time_ns >= 0);
  assert_int_equal(info->blocked_count, 0);
  vmt_mx_thread_info_free(info);
  gate_open(&g);
  join_release(t);
  assert_int_equal(j.rc, 0);

  /* The target has ended and been joined: a second joiner's join does not wait. */
  vmt_thread_t *ended = start_named("ended", false, return_arg, NULL);
  assert_true(await_state(ended, VMT_THREAD_TERMINATED));
  vmt_thread_t *me = vmt_thread_current();
  vmt_thread_info_t *before = mu_info_of(vmt_thread_id(me), 0);
  assert_int_equal(vmt_thread_join(ended, NULL), 0);
  vmt_thread_info_t *after = mu_info_of(vmt_thread_id(me), 0);
  assert_int_equal(after->state, VMT_THREAD_RUNNABLE);
  assert_int_equal(after->waited_count, before->waited_count);
  vmt_mx_thread_info_free(before);
  vmt_mx_thread_info_free(after);
  assert_int_equal(vmt_thread_release(ended), 0);
  assert_int_equal(vmt_thread_release(target), 0);
  gate_destroy(&g);
  assert_int_equal(vmt_mx_set_thread_contention_monitoring_enabled(false), 0);
}

/* ==== Locks =============================================================================== */

/* Locks.checkBlockedObject and findThreadsBlockedOn: t1 holds A and blocks on B, t2 holds B and
 * blocks on C, the main thread holds C: each BLOCKED thread names the lock it waits for and its
 * owner, and following lockOwnerId from t1 gives t1, t2, main (expectedThreads), with
 * getThreadInfo(ids) and getThreadInfo(ids, 1) alike. assertNoLock: once they are done, no
 * thread names any of them (nor main) as a lock owner. */
typedef struct chain_link {
  vmt_monitor_t *held, *want;
  _Atomic bool holding;
} chain_link_t;

static void *hold_then_enter(void *arg) {
  chain_link_t *c = arg;
  vmt_monitor_enter(c->held);
  atomic_store(&c->holding, true);
  vmt_monitor_enter(c->want);
  vmt_monitor_exit(c->want);
  vmt_monitor_exit(c->held);
  return NULL;
}

static const vmt_thread_info_t *find_info(vmt_thread_info_t **arr, size_t n, int64_t id) {
  for (size_t i = 0; i < n; i++)
    if (arr[i] && arr[i]->id == id) return arr[i];
  return NULL;
}

static void no_thread_names_as_owner(int64_t owner) {
  vmt_thread_info_t **all;
  size_t n;
  assert_int_equal(vmt_mx_dump_all_threads(true, true, 0, &all, &n), 0);
  for (size_t i = 0; i < n; i++) assert_int_not_equal(all[i]->lock_owner_id, owner);
  vmt_mx_thread_info_array_free(all, n);
}

static void blocked_chain_names_each_owner(void **state) {
  (void)state;
  vmt_monitor_t *a, *b, *c;
  assert_int_equal(vmt_monitor_create(&a, "OBJA"), 0);
  assert_int_equal(vmt_monitor_create(&b, "OBJB"), 0);
  assert_int_equal(vmt_monitor_create(&c, "OBJC"), 0);
  char bname[300], cname[300];
  monitor_name(b, bname, sizeof(bname));
  monitor_name(c, cname, sizeof(cname));
  no_thread_names_as_owner(self_id());

  assert_int_equal(vmt_monitor_enter(c), 0);
  chain_link_t l2 = {.held = b, .want = c}, l1 = {.held = a, .want = b};
  vmt_thread_t *t2 = start_named("LockBThread", false, hold_then_enter, &l2);
  vmt_thread_info_t *i2 = mu_await_info_state(vmt_thread_id(t2), VMT_THREAD_BLOCKED);
  vmt_thread_t *t1 = start_named("LockAThread", false, hold_then_enter, &l1);
  vmt_thread_info_t *i1 = mu_await_info_state(vmt_thread_id(t1), VMT_THREAD_BLOCKED);
  expect_lock(i2, cname, self_id(), vmt_thread_name(vmt_thread_current()));
  expect_lock(i1, bname, vmt_thread_id(t2), "LockBThread");
  vmt_mx_thread_info_free(i1);
  vmt_mx_thread_info_free(i2);

  for (int32_t depth = 0; depth <= 1; depth++) {
    int64_t *ids;
    size_t n;
    assert_int_equal(vmt_mx_get_all_thread_ids(&ids, &n), 0);
    vmt_thread_info_t **arr;
    assert_int_equal(vmt_mx_get_thread_info_array(ids, n, false, false, depth, &arr), 0);
    const int64_t expected[3] = {vmt_thread_id(t1), vmt_thread_id(t2), self_id()};
    const vmt_thread_info_t *at = find_info(arr, n, expected[0]);
    for (int k = 0; k < 3; k++) {
      assert_non_null(at);
      assert_int_equal(at->id, expected[k]);
      if (k == 2) {
        assert_int_equal(at->state, VMT_THREAD_RUNNABLE);
        break;
      }
      assert_int_equal(at->state, VMT_THREAD_BLOCKED);
      at = find_info(arr, n, at->lock_owner_id);
    }
    vmt_mx_thread_info_array_free(arr, n);
    vmt_mx_ids_free(ids);
  }
  assert_int_equal(vmt_monitor_exit(c), 0);
  join_release(t1);
  join_release(t2);
  no_thread_names_as_owner(self_id());
  assert_int_equal(vmt_monitor_destroy(a), 0);
  assert_int_equal(vmt_monitor_destroy(b), 0);
  assert_int_equal(vmt_monitor_destroy(c), 0);
}

/* Locks.CheckerThread, phases 1 and 3: a thread WAITING in OBJC.wait() reports OBJC as its
 * lock with no owner while nobody holds OBJC (checkBlockedObject(waiter, OBJC, null)), and the
 * thread that holds OBJC meanwhile as the owner (checkBlockedObject(waiter, OBJC,
 * currentThread)): HotSpot names the monitor's current owner for a waiting thread too. Phase 2:
 * notified while the notifier still holds OBJC... and blocked on `ready`, it is BLOCKED with the
 * holder of `ready` as owner. */
static void waiting_thread_names_the_current_owner_of_its_monitor(void **state) {
  (void)state;
  vmt_monitor_t *objc;
  assert_int_equal(vmt_monitor_create(&objc, "OBJC"), 0);
  char name[300];
  monitor_name(objc, name, sizeof(name));
  waiter_t w = {.m = objc};
  vmt_thread_t *t = start_named("WaitingThread", false, wait_on_monitor, &w);
  int64_t id = vmt_thread_id(t);
  vmt_thread_info_t *info = mu_await_info_state(id, VMT_THREAD_WAITING);
  expect_lock(info, name, -1, NULL);
  vmt_mx_thread_info_free(info);

  assert_int_equal(vmt_monitor_enter(objc), 0);
  info = mu_info_of(id, 0);
  assert_int_equal(info->state, VMT_THREAD_WAITING);
  expect_lock(info, name, self_id(), vmt_thread_name(vmt_thread_current()));
  vmt_mx_thread_info_free(info);
  /* Notified while we still hold it: it must get OBJC back from us. */
  atomic_store(&w.notified, true);
  assert_int_equal(vmt_monitor_notify(objc), 0);
  info = mu_await_info_state(id, VMT_THREAD_BLOCKED);
  expect_lock(info, name, self_id(), vmt_thread_name(vmt_thread_current()));
  vmt_mx_thread_info_free(info);
  assert_int_equal(vmt_monitor_exit(objc), 0);
  join_release(t);
  assert_int_equal(vmt_monitor_destroy(objc), 0);
}

/* ==== LockedMonitors (LockingThread), LockedSynchronizers (SynchronizerLockingThread),
 *      MyOwnSynchronizer ================================================================== */

/* LockingThread.Thread1: A() locks lock1..lock3, B() lock4, lock5, C() lock6, D() lock7 and
 * waits on it. Thread2 locks lock8 and waits on it. */
enum { LT_LOCKS = 8 };
typedef struct locking {
  vmt_monitor_t *lock[LT_LOCKS + 1];   /* lock[1..8] */
  vmt_sync_t *sync[5];                 /* SynchronizerLockingThread's lock1..lock4 */
  bool syncs;                          /* Thread1 takes sync[1..4] instead of lock1..lock4 */
  vmt_thread_t *t1, *t2;
  _Atomic bool done;
} locking_t;

static void *locking_thread1(void *arg) {
  locking_t *c = arg;
  for (int i = 1; i <= 4; i++) {
    if (c->syncs)
      vmt_sync_lock(c->sync[i]);
    else
      vmt_monitor_enter(c->lock[i]);
  }
  for (int i = 5; i <= 7; i++) vmt_monitor_enter(c->lock[i]);
  while (!atomic_load(&c->done)) vmt_monitor_wait(c->lock[7], 0);
  for (int i = 7; i >= 5; i--) vmt_monitor_exit(c->lock[i]);
  for (int i = 4; i >= 1; i--) {
    if (c->syncs)
      vmt_sync_unlock(c->sync[i]);
    else
      vmt_monitor_exit(c->lock[i]);
  }
  return NULL;
}

static void *locking_thread2(void *arg) {
  locking_t *c = arg;
  vmt_monitor_enter(c->lock[8]);
  while (!atomic_load(&c->done)) vmt_monitor_wait(c->lock[8], 0);
  vmt_monitor_exit(c->lock[8]);
  return NULL;
}

/* The VM's walker for the two LockingThreads: Thread1's frames D, C, B, A, run (innermost
 * first) with their lock records (D's record for lock7 included: the frame still has it while
 * it waits), Thread2's run with lock8's. */
static const char *const T1_FRAMES[] = {"D", "C", "B", "A", "run"};

static int locking_walker(vmt_thread_t *t, vmt_stack_frame_t *frames, int32_t max, void *arg) {
  locking_t *c = arg;
  if (t == c->t1) {
    int n = max < 5 ? max : 5;
    for (int i = 0; i < n; i++)
      frames[i] = (vmt_stack_frame_t){(char *)T1_FRAMES[i], (char *)"LockingThread.java", 100 + i,
                                      0};
    /* frame -> locks it entered */
    static const int at[LT_LOCKS + 1] = {-1, 3, 3, 3, 2, 2, 1, 0, -1};
    for (int k = 1; k <= 7; k++)
      if (at[k] < n && (!c->syncs || k > 4)) vmt_mx_frame_holds_monitor(at[k], c->lock[k]);
    return n;
  }
  if (t == c->t2 && max >= 1) {
    frames[0] = (vmt_stack_frame_t){(char *)"run", (char *)"LockingThread.java", 200, 0};
    vmt_mx_frame_holds_monitor(0, c->lock[8]);
    return 1;
  }
  return 0;
}

static int lock_index(const locking_t *c, const char *display) {
  char name[300];
  for (int k = 1; k <= LT_LOCKS; k++) {
    monitor_name(c->lock[k], name, sizeof(name));
    if (strcmp(name, display) == 0) return k;
  }
  return -1;
}

/* LockingThread.checkLockedMonitors / SynchronizerLockingThread.checkLocks on one ThreadInfo. */
static void check_locking_thread(const locking_t *c, const vmt_thread_info_t *ti, bool monitors,
                                 bool syncs) {
  char name[300];
  bool is_t1 = ti->id == vmt_thread_id(c->t1);
  monitor_name(c->lock[is_t1 ? 7 : 8], name, sizeof(name));
  assert_string_equal(ti->name, is_t1 ? "t1" : "t2");
  expect_lock(ti, name, -1, NULL);   /* waitingLock: the monitor it waits on */
  if (!monitors) {
    assert_int_equal(ti->locked_monitor_count, 0);
    assert_null(ti->locked_monitors);
  } else if (!is_t1) {
    assert_int_equal(ti->locked_monitor_count, 0);   /* Thread2.OWNED_MONITORS */
  } else {
    /* LOCKED_MONITORS: D none (lock7 is waited on, not held), C lock6, B lock5, lock4, A lock3,
     * lock2, lock1; with synchronizers for lock1..4, only lock6 and lock5 (OWNED_MONITORS 2). */
    static const int expected_frame[LT_LOCKS + 1] = {-1, 3, 3, 3, 2, 2, 1, -1, -1};
    size_t want = c->syncs ? 2 : 6;
    assert_int_equal(ti->locked_monitor_count, want);
    bool seen[LT_LOCKS + 1] = {false};
    int32_t prev_depth = 0;
    for (size_t i = 0; i < ti->locked_monitor_count; i++) {
      const vmt_monitor_info_t *m = &ti->locked_monitors[i];
      /* HotSpot's order (jmm_DumpThreads walks the frames from the top): by depth. */
      assert_true(m->stack_depth >= prev_depth);
      prev_depth = m->stack_depth;
      int k = lock_index(c, m->lock.name);
      assert_true(k >= 1 && k <= 6);
      assert_false(c->syncs && k <= 4);
      assert_false(seen[k]);
      seen[k] = true;
      assert_string_equal(m->lock.class_name, "vmt.Monitor");
      /* checkStackFrame: the locked stack frame is stackTrace[depth], and the method that
       * entered it (checkMonitor). */
      assert_true(m->stack_depth >= 0 && (size_t)m->stack_depth < ti->frame_count);
      assert_int_equal(m->stack_depth, expected_frame[k]);
      assert_string_equal(ti->frames[m->stack_depth].function, T1_FRAMES[expected_frame[k]]);
    }
  }
  if (!syncs) {
    assert_int_equal(ti->locked_synchronizer_count, 0);
    assert_null(ti->locked_synchronizers);
  } else {
    size_t want = is_t1 && c->syncs ? 4 : 0;   /* OWNED_SYNCS */
    assert_int_equal(ti->locked_synchronizer_count, want);
    for (size_t i = 0; i < want; i++) {
      bool found = false;
      for (int k = 1; k <= 4; k++) {
        sync_name(c->sync[k], name, sizeof(name));
        found |= strcmp(name, ti->locked_synchronizers[i].name) == 0;
      }
      assert_true(found);
      assert_string_equal(ti->locked_synchronizers[i].class_name, "vmt.Synchronizer");
    }
  }
}

static void check_locking_infos(const locking_t *c, vmt_thread_info_t **arr, size_t n,
                                bool monitors, bool syncs) {
  int matches = 0;
  for (size_t i = 0; i < n; i++) {
    if (arr[i] == NULL) continue;
    if (arr[i]->id == vmt_thread_id(c->t1) || arr[i]->id == vmt_thread_id(c->t2)) {
      check_locking_thread(c, arr[i], monitors, syncs);
      matches++;
    }
  }
  assert_int_equal(matches, 2);   /* "MonitorInfo missing" */
}

static void run_locking_threads(bool syncs) {
  locking_t c;
  memset(&c, 0, sizeof(c));
  c.syncs = syncs;
  char lname[16];
  for (int k = 1; k <= LT_LOCKS; k++) {
    snprintf(lname, sizeof(lname), "lock%d", k);
    assert_int_equal(vmt_monitor_create(&c.lock[k], lname), 0);
  }
  for (int k = 1; k <= 4; k++) {
    snprintf(lname, sizeof(lname), "sync%d", k);
    assert_int_equal(vmt_sync_create(&c.sync[k], lname), 0);
  }
  c.t1 = start_named("t1", true, locking_thread1, &c);
  c.t2 = start_named("t2", true, locking_thread2, &c);
  vmt_mx_thread_info_free(mu_await_info_state(vmt_thread_id(c.t1), VMT_THREAD_WAITING));
  vmt_mx_thread_info_free(mu_await_info_state(vmt_thread_id(c.t2), VMT_THREAD_WAITING));
  vmt_mx_set_stack_walker(locking_walker, &c);

  const bool forms[3][2] = {{true, false}, {true, true}, {false, true}};
  for (int f = 0; f < 3; f++) {
    bool mon = forms[f][0], syn = forms[f][1];
    vmt_thread_info_t **arr;
    size_t n;
    assert_int_equal(vmt_mx_dump_all_threads(mon, syn, VMT_MX_MAX_DEPTH_ALL, &arr, &n), 0);
    check_locking_infos(&c, arr, n, mon, syn);
    vmt_mx_thread_info_array_free(arr, n);
    int64_t ids[2] = {vmt_thread_id(c.t1), vmt_thread_id(c.t2)};
    assert_int_equal(vmt_mx_get_thread_info_array(ids, 2, mon, syn, VMT_MX_MAX_DEPTH_ALL, &arr),
                     0);
    check_locking_infos(&c, arr, 2, mon, syn);
    vmt_mx_thread_info_array_free(arr, 2);
  }
  vmt_mx_set_stack_walker(NULL, NULL);

  atomic_store(&c.done, true);
  for (int k = 7; k <= 8; k++) {
    vmt_monitor_enter(c.lock[k]);
    vmt_monitor_notify_all(c.lock[k]);
    vmt_monitor_exit(c.lock[k]);
  }
  join_release(c.t1);
  join_release(c.t2);
  for (int k = 1; k <= LT_LOCKS; k++) assert_int_equal(vmt_monitor_destroy(c.lock[k]), 0);
  for (int k = 1; k <= 4; k++) assert_int_equal(vmt_sync_destroy(c.sync[k]), 0);
}

/* LockedMonitors: dumpAllThreads(true, false), dumpAllThreads(true, true), getThreadInfo(ids,
 * true, false) and (ids, true, true): Thread1 has 6 locked monitors, each at the frame that
 * entered it, and not lock7, which it waits on (the monitor waiting is not locked); Thread2 has
 * none; their LockInfo is the monitor waited on; no synchronizers. */
static void locked_monitors_as_locking_thread(void **state) {
  (void)state;
  run_locking_threads(false);
}

/* LockedSynchronizers: Thread1 holds synchronizers lock1..lock4 and monitors lock5, lock6 and
 * waits on lock7: 2 locked monitors, 4 locked synchronizers. MyOwnSynchronizer: with
 * lockedMonitors false, no ThreadInfo has a locked monitor (an empty array, never null in
 * Java: here NULL with count 0). */
static void locked_synchronizers_as_synchronizer_locking_thread(void **state) {
  (void)state;
  run_locking_threads(true);
}

/* MyOwnSynchronizer: a thread that holds a synchronizer and waits in Object.wait on a monitor
 * it entered: dumpAllThreads(false, true) and getThreadInfo({id}, false, true) give no locked
 * monitor for any thread and exactly that synchronizer for it, by class and identity. */
typedef struct own_sync {
  vmt_sync_t *mutex;
  waiter_t w;
} own_sync_t;

static void *own_sync_body(void *arg) {
  own_sync_t *o = arg;
  vmt_sync_lock(o->mutex);
  wait_on_monitor(&o->w);
  vmt_sync_unlock(o->mutex);
  return NULL;
}

static void my_own_synchronizer_is_listed_alone(void **state) {
  (void)state;
  own_sync_t o;
  memset(&o, 0, sizeof(o));
  assert_int_equal(vmt_sync_create(&o.mutex, "MyOwnSynchronizer$Mutex$Sync"), 0);
  assert_int_equal(vmt_monitor_create(&o.w.m, "o"), 0);
  char want[300];
  sync_name(o.mutex, want, sizeof(want));
  vmt_thread_t *t = start_named("MyThread", true, own_sync_body, &o);
  int64_t id = vmt_thread_id(t);
  vmt_mx_thread_info_free(mu_await_info_state(id, VMT_THREAD_WAITING));

  vmt_thread_info_t **arr;
  size_t n;
  assert_int_equal(vmt_mx_dump_all_threads(false, true, VMT_MX_MAX_DEPTH_ALL, &arr, &n), 0);
  int found = 0;
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(arr[i]->locked_monitor_count, 0);
    if (arr[i]->id != id) continue;
    found++;
    assert_int_equal(arr[i]->locked_synchronizer_count, 1);
    assert_string_equal(arr[i]->locked_synchronizers[0].name, want);
  }
  assert_int_equal(found, 1);
  vmt_mx_thread_info_array_free(arr, n);
  assert_int_equal(vmt_mx_get_thread_info_array(&id, 1, false, true, VMT_MX_MAX_DEPTH_ALL, &arr),
                   0);
  assert_int_equal(arr[0]->locked_monitor_count, 0);
  assert_int_equal(arr[0]->locked_synchronizer_count, 1);
  assert_string_equal(arr[0]->locked_synchronizers[0].name, want);
  char prefix[300];
  snprintf(prefix, sizeof(prefix), "%s@", "MyOwnSynchronizer$Mutex$Sync");
  assert_memory_equal(arr[0]->locked_synchronizers[0].name, prefix, strlen(prefix));
  char hex[16];
  snprintf(hex, sizeof(hex), "%x", (unsigned)arr[0]->locked_synchronizers[0].identity_hash);
  assert_string_equal(arr[0]->locked_synchronizers[0].name + strlen(prefix), hex);
  vmt_mx_thread_info_array_free(arr, 1);

  waiter_release(&o.w);
  join_release(t);
  assert_int_equal(vmt_sync_destroy(o.mutex), 0);
  assert_int_equal(vmt_monitor_destroy(o.w.m), 0);
}

/* ==== SynchronizationStatistics, ThreadBlockedCount ====================================== */

/* A thread that passes gate g between steps, so the test reads its ThreadInfo at known points:
 * steps are "block on m1", "wait on m1 for timeout", ... as the Java test's phases. */
typedef enum step_kind { STEP_ENTER, STEP_WAIT, STEP_NESTED_ENTER, STEP_NESTED_WAITS } step_kind_t;

typedef struct stepper {
  gate_t g;
  step_kind_t kind;
  vmt_monitor_t *m[3];
  int repeat;
} stepper_t;

static void *stepper_body(void *arg) {
  stepper_t *s = arg;
  gate_pass(&s->g);   /* phase[1]: the test reads the starting ThreadInfo, then lets us go */
  switch (s->kind) {
    case STEP_ENTER:   /* testBlockingOnSimpleMonitor, ThreadBlockedCount */
      for (int i = 0; i < s->repeat; i++) {
        vmt_monitor_enter(s->m[0]);
        vmt_monitor_exit(s->m[0]);
        gate_pass(&s->g);
      }
      break;
    case STEP_NESTED_ENTER:   /* testBlockingOnNestedMonitor */
      vmt_monitor_enter(s->m[0]);
      gate_pass(&s->g);
      vmt_monitor_enter(s->m[1]);
      vmt_monitor_exit(s->m[1]);
      vmt_monitor_exit(s->m[0]);
      gate_pass(&s->g);
      break;
    case STEP_WAIT:   /* testWaitingOnSimpleMonitor, testMultiWaitingOnSimpleMonitor */
      vmt_monitor_enter(s->m[0]);
      for (int i = 0; i < s->repeat; i++) vmt_monitor_wait(s->m[0], 20 * MS);
      vmt_monitor_exit(s->m[0]);
      gate_pass(&s->g);
      break;
    case STEP_NESTED_WAITS:   /* testWaitingOnNestedMonitor */
      for (int i = 0; i < 3; i++) {
        vmt_monitor_enter(s->m[i]);
        vmt_monitor_wait(s->m[i], 20 * MS);
      }
      for (int i = 2; i >= 0; i--) vmt_monitor_exit(s->m[i]);
      gate_pass(&s->g);
      break;
  }
  return NULL;
}

static vmt_thread_t *stepper_start(stepper_t *s, step_kind_t kind, int repeat) {
  memset(s, 0, sizeof(*s));
  gate_init(&s->g);
  s->kind = kind;
  s->repeat = repeat;
  char n[16];
  for (int i = 0; i < 3; i++) {
    snprintf(n, sizeof(n), "lock%d", i + 1);
    assert_int_equal(vmt_monitor_create(&s->m[i], n), 0);
  }
  vmt_thread_t *t = start_named("LockerThread", true, stepper_body, s);
  gate_await(&s->g, 1);
  return t;
}

static void stepper_finish(stepper_t *s, vmt_thread_t *t) {
  gate_open(&s->g);
  join_release(t);
  for (int i = 0; i < 3; i++) assert_int_equal(vmt_monitor_destroy(s->m[i]), 0);
  gate_destroy(&s->g);
}

/* Holds m while t blocks entering it (BLOCKED, lockName m), then lets it in. */
static void block_once_on(vmt_thread_t *t, vmt_monitor_t *m, gate_t *g, int arrivals) {
  char name[300];
  monitor_name(m, name, sizeof(name));
  assert_int_equal(vmt_monitor_enter(m), 0);
  gate_open(g);
  vmt_thread_info_t *info = mu_await_info_state(vmt_thread_id(t), VMT_THREAD_BLOCKED);
  assert_string_equal(info->lock->name, name);   /* testBlocked: lockName == lock.toString() */
  vmt_mx_thread_info_free(info);
  assert_int_equal(vmt_monitor_exit(m), 0);
  gate_await(g, arrivals);
}

/* testBlockingOnSimpleMonitor and ThreadBlockedCount: each contended enter counts one blocked
 * enter (blockedCount grows by at least 1 each time, 3 after three), and the blocked time does
 * not go down (blkTimeDiff >= 0) while contention monitoring is enabled. */
static void blocked_count_and_time_as_synchronization_statistics(void **state) {
  (void)state;
  assert_int_equal(vmt_mx_set_thread_contention_monitoring_enabled(true), 0);
  stepper_t s;
  vmt_thread_t *t = stepper_start(&s, STEP_ENTER, 3);
  vmt_thread_info_t *ti1 = mu_info_of(vmt_thread_id(t), 0);
  int64_t prev_time = ti1->blocked_time_ns;
  assert_true(prev_time >= 0);
  for (int i = 1; i <= 3; i++) {
    block_once_on(t, s.m[0], &s.g, 1 + i);
    vmt_thread_info_t *ti = mu_info_of(vmt_thread_id(t), 0);
    assert_true(ti->blocked_count - ti1->blocked_count >= i);
    assert_true(ti->blocked_time_ns >= prev_time);
    prev_time = ti->blocked_time_ns;
    vmt_mx_thread_info_free(ti);
  }
  vmt_mx_thread_info_free(ti1);
  stepper_finish(&s, t);
}

/* testBlockingOnNestedMonitor: blocking on lock2 while holding lock1 counts too. */
static void nested_blocking_counts_each_enter(void **state) {
  (void)state;
  stepper_t s;
  vmt_thread_t *t = stepper_start(&s, STEP_NESTED_ENTER, 0);
  vmt_thread_info_t *ti1 = mu_info_of(vmt_thread_id(t), 0);
  block_once_on(t, s.m[0], &s.g, 2);
  vmt_thread_info_t *ti2 = mu_info_of(vmt_thread_id(t), 0);
  assert_true(ti2->blocked_count - ti1->blocked_count >= 1);
  block_once_on(t, s.m[1], &s.g, 3);
  vmt_thread_info_t *ti3 = mu_info_of(vmt_thread_id(t), 0);
  assert_true(ti3->blocked_count - ti2->blocked_count >= 1);
  assert_true(ti3->blocked_time_ns >= ti2->blocked_time_ns);
  vmt_mx_thread_info_free(ti1);
  vmt_mx_thread_info_free(ti2);
  vmt_mx_thread_info_free(ti3);
  stepper_finish(&s, t);
}

/* Thread.sleep(0) is a sleep that ends at once: HotSpot counts it in getWaitedCount (its
 * sleep statistics start before the zero check; measured here with JDK 17.0.15 and 25.0.3: +1
 * per Thread.sleep(0), +10 for ten), while a sleep(0) that throws InterruptedException at the
 * call counts nothing (+0 on both). vmt_sleep_ns(0) answers the same. */
static void sleep_of_zero_counts_a_wait_unless_interrupted(void **state) {
  (void)state;
  vmt_thread_t *me = vmt_thread_current();
  int64_t id = vmt_thread_id(me);
  vmt_thread_info_t *w0 = mu_info_of(id, 0);
  assert_int_equal(vmt_sleep_ns(0), 0);
  vmt_thread_info_t *w1 = mu_info_of(id, 0);
  for (int i = 0; i < 10; i++) assert_int_equal(vmt_sleep_ns(0), 0);
  vmt_thread_info_t *w2 = mu_info_of(id, 0);
  assert_int_equal(vmt_thread_interrupt(me), 0);
  assert_int_equal(vmt_sleep_ns(0), -EINTR);
  assert_false(vmt_thread_is_interrupted(me));
  vmt_thread_info_t *w3 = mu_info_of(id, 0);
  assert_int_equal(w1->waited_count - w0->waited_count, 1);
  assert_int_equal(w2->waited_count - w1->waited_count, 10);
  assert_int_equal(w3->waited_count - w2->waited_count, 0);
  assert_int_equal(w3->state, VMT_THREAD_RUNNABLE);
  vmt_mx_thread_info_free(w0);
  vmt_mx_thread_info_free(w1);
  vmt_mx_thread_info_free(w2);
  vmt_mx_thread_info_free(w3);
}

/* ThreadInfo.isInNative: executing native code. A thread blocked or waiting in a runtime call
 * is inside the runtime, not in native code: HotSpot's threads in Object.wait, sleep, park or a
 * contended enter are never isInNative (_thread_blocked). Our threads begin NATIVE, and a
 * blocking call publishes its Java state a little before it moves into its safe region (and
 * leaves the region a little before it is RUNNABLE again): a ThreadInfo taken in between must
 * not say WAITING and in native at once (seen over JMX: //jvm:jvm_test's ApiTest, once under
 * load). A thread times out of 1 us waits in a loop while ThreadInfos of it are taken. */
typedef struct {
  vmt_monitor_t *m;
  _Atomic bool done;
} short_waits_t;

static void *short_waits(void *arg) {
  short_waits_t *w = arg;
  vmt_monitor_enter(w->m);
  while (!atomic_load(&w->done)) vmt_monitor_wait(w->m, 1000);
  vmt_monitor_exit(w->m);
  return NULL;
}

static void a_waiting_thread_is_never_in_native(void **state) {
  (void)state;
  short_waits_t w = {.done = false};
  assert_int_equal(vmt_monitor_create(&w.m, "short-waits"), 0);
  vmt_thread_t *t = start_named("short-waiter", false, short_waits, &w);
  int64_t id = vmt_thread_id(t);
  int waiting = 0, running_native = 0, both = 0;
  for (int i = 0; i < 20000; i++) {
    vmt_thread_info_t *ti = mu_info_of(id, 0);
    bool blocked_or_waiting = ti->state == VMT_THREAD_BLOCKED ||
                              ti->state == VMT_THREAD_WAITING ||
                              ti->state == VMT_THREAD_TIMED_WAITING;
    waiting += blocked_or_waiting;
    running_native += !blocked_or_waiting && ti->in_native;
    both += blocked_or_waiting && ti->in_native;
    vmt_mx_thread_info_free(ti);
  }
  atomic_store(&w.done, true);
  join_release(t);
  assert_int_equal(vmt_monitor_destroy(w.m), 0);
  print_message("short-waiter: %d of 20000 infos blocked or waiting, %d runnable in native\n",
                waiting, running_native);
  assert_true(waiting > 0);   /* the infos saw the waits they are meant to check */
  assert_int_equal(both, 0);
}

/* testWaitingOnSimpleMonitor, testMultiWaitingOnSimpleMonitor, testWaitingOnNestedMonitor:
 * each wait(timeout) counts one wait (waitedCount grows by 1, 3) and the waited time grows
 * (waitTimeDiff > 0). The thread is first BLOCKED entering lock1, which the test holds
 * (waitForThreadState(lt, BLOCKED)). */
static void waited_count_and_time_as_synchronization_statistics(void **state) {
  (void)state;
  assert_int_equal(vmt_mx_set_thread_contention_monitoring_enabled(true), 0);
  const step_kind_t kinds[3] = {STEP_WAIT, STEP_WAIT, STEP_NESTED_WAITS};
  const int repeats[3] = {1, 3, 0};
  const int expected[3] = {1, 3, 3};
  for (int k = 0; k < 3; k++) {
    stepper_t s;
    vmt_thread_t *t = stepper_start(&s, kinds[k], repeats[k]);
    vmt_thread_info_t *ti1 = mu_info_of(vmt_thread_id(t), 0);
    block_once_on(t, s.m[0], &s.g, 2);
    vmt_thread_info_t *ti = mu_info_of(vmt_thread_id(t), 0);
    assert_true(ti->waited_count - ti1->waited_count >= expected[k]);
    assert_true(ti->waited_time_ns - ti1->waited_time_ns > 0);
    vmt_mx_thread_info_free(ti);
    vmt_mx_thread_info_free(ti1);
    stepper_finish(&s, t);
  }
}

/* ObjectMonitor::wait (HotSpot): a wait(timeout) that times out must get the monitor back like
 * any enter; with another thread holding it, the thread is BLOCKED on that monitor (owner: the
 * holder) until it gets it, and that counts as a blocked enter. */
static void timed_out_wait_reenters_blocked(void **state) {
  (void)state;
  vmt_monitor_t *m;
  assert_int_equal(vmt_monitor_create(&m, "lock1"), 0);
  char name[300];
  monitor_name(m, name, sizeof(name));
  timed_waiter_t tw = {.m = m, .timeout_ns = 1 * MS};
  vmt_thread_t *t = start_named("LockerThread", true, timed_wait_loop, &tw);
  vmt_mx_thread_info_free(mu_await_info_state(vmt_thread_id(t), VMT_THREAD_TIMED_WAITING));
  assert_int_equal(vmt_monitor_enter(m), 0);
  /* It times out within 1 ms and finds the monitor held by us. */
  vmt_thread_info_t *info = mu_await_info_state(vmt_thread_id(t), VMT_THREAD_BLOCKED);
  expect_lock(info, name, self_id(), vmt_thread_name(vmt_thread_current()));
  int64_t blocked = info->blocked_count;
  assert_true(blocked >= 1);
  vmt_mx_thread_info_free(info);
  atomic_store(&tw.done, true);
  assert_int_equal(vmt_monitor_exit(m), 0);
  join_release(t);
  assert_int_equal(vmt_monitor_destroy(m), 0);
}

/* ==== EnableTest, DisableTest ============================================================== */

/* HotSpot's defaults (ThreadService::init, ThreadImpl): contention monitoring off, CPU time on
 * where supported, allocated memory on where supported. Run first, before any case changes a
 * switch. */
static void defaults_are_hotspot_defaults(void **state) {
  (void)state;
  assert_true(vmt_mx_is_thread_contention_monitoring_supported());
  assert_false(vmt_mx_is_thread_contention_monitoring_enabled());
  bool on = false;
  if (vmt_mx_is_thread_cpu_time_supported()) {
    assert_int_equal(vmt_mx_is_thread_cpu_time_enabled(&on), 0);
    assert_true(on);
  }
  if (vmt_mx_is_thread_allocated_memory_supported()) {
    on = false;
    assert_int_equal(vmt_mx_is_thread_allocated_memory_enabled(&on), 0);
    assert_true(on);
  } else {
    assert_int_equal(vmt_mx_is_thread_allocated_memory_enabled(&on), -ENOTSUP);
  }
  assert_true(vmt_mx_is_object_monitor_usage_supported());
  assert_true(vmt_mx_is_synchronizer_usage_supported());
}

/* EnableTest.testThreadContentionMonitoring / DisableTest: the switch is a plain boolean:
 * enabling it two more times keeps it on, one disable turns it off whatever the number of
 * enables, disabling twice keeps it off. Same for CPU time (testThreadCpuTime). */
static void switches_are_booleans_not_counters(void **state) {
  (void)state;
  assert_int_equal(vmt_mx_set_thread_contention_monitoring_enabled(false), 0);
  assert_false(vmt_mx_is_thread_contention_monitoring_enabled());
  for (int i = 0; i < 3; i++) {
    assert_int_equal(vmt_mx_set_thread_contention_monitoring_enabled(true), 0);
    assert_true(vmt_mx_is_thread_contention_monitoring_enabled());
  }
  assert_int_equal(vmt_mx_set_thread_contention_monitoring_enabled(false), 0);
  assert_false(vmt_mx_is_thread_contention_monitoring_enabled());
  assert_int_equal(vmt_mx_set_thread_contention_monitoring_enabled(false), 0);
  assert_false(vmt_mx_is_thread_contention_monitoring_enabled());
  assert_int_equal(vmt_mx_set_thread_contention_monitoring_enabled(true), 0);
  assert_true(vmt_mx_is_thread_contention_monitoring_enabled());
  assert_int_equal(vmt_mx_set_thread_contention_monitoring_enabled(false), 0);

  if (!vmt_mx_is_thread_cpu_time_supported()) return;
  bool on;
  for (int i = 0; i < 3; i++) {
    assert_int_equal(vmt_mx_set_thread_cpu_time_enabled(true), 0);
    assert_int_equal(vmt_mx_is_thread_cpu_time_enabled(&on), 0);
    assert_true(on);
  }
  for (int i = 0; i < 2; i++) {
    assert_int_equal(vmt_mx_set_thread_cpu_time_enabled(false), 0);
    assert_int_equal(vmt_mx_is_thread_cpu_time_enabled(&on), 0);
    assert_false(on);
  }
  assert_int_equal(vmt_mx_set_thread_cpu_time_enabled(true), 0);
  assert_int_equal(vmt_mx_is_thread_cpu_time_enabled(&on), 0);
  assert_true(on);
}

/* ThreadImpl.setThreadContentionMonitoringEnabled: "if re-enabled, reset contention time
 * statistics for all threads" — only on a change from disabled to enabled
 * (contentionMonitoringEnabled != enable); enabling it while it is on keeps the times. While
 * disabled, times are -1 (ThreadInfo.getBlockedTime/getWaitedTime) and counts go on; counts
 * are never reset. */
typedef struct waited_then_idle {
  vmt_monitor_t *m;
  gate_t g;
} waited_then_idle_t;

static void *wait_then_idle(void *arg) {
  waited_then_idle_t *w = arg;
  vmt_monitor_enter(w->m);
  vmt_monitor_wait(w->m, 5 * MS);   /* times out: waited time > 0 */
  vmt_monitor_exit(w->m);
  gate_pass(&w->g);                 /* idle at a pthread gate: no episode in progress */
  return NULL;
}

static void enabling_resets_times_only_when_it_was_off(void **state) {
  (void)state;
  assert_int_equal(vmt_mx_set_thread_contention_monitoring_enabled(true), 0);
  waited_then_idle_t w;
  gate_init(&w.g);
  assert_int_equal(vmt_monitor_create(&w.m, "m"), 0);
  vmt_thread_t *t = start_named("stats", true, wait_then_idle, &w);
  gate_await(&w.g, 1);
  int64_t id = vmt_thread_id(t);
  vmt_thread_info_t *a = mu_info_of(id, 0);
  assert_true(a->waited_time_ns > 0);
  assert_true(a->waited_count >= 1);

  assert_int_equal(vmt_mx_set_thread_contention_monitoring_enabled(true), 0);  /* still on */
  vmt_thread_info_t *b = mu_info_of(id, 0);
  assert_int_equal(b->waited_time_ns, a->waited_time_ns);
  assert_int_equal(b->blocked_time_ns, a->blocked_time_ns);

  assert_int_equal(vmt_mx_set_thread_contention_monitoring_enabled(false), 0);
  vmt_thread_info_t *c = mu_info_of(id, 0);
  assert_int_equal(c->waited_time_ns, -1);
  assert_int_equal(c->blocked_time_ns, -1);
  assert_int_equal(c->waited_count, a->waited_count);

  assert_int_equal(vmt_mx_set_thread_contention_monitoring_enabled(true), 0);  /* re-enabled */
  vmt_thread_info_t *d = mu_info_of(id, 0);
  assert_int_equal(d->waited_time_ns, 0);
  assert_int_equal(d->blocked_time_ns, 0);
  assert_int_equal(d->waited_count, a->waited_count);
  assert_int_equal(d->blocked_count, a->blocked_count);
  vmt_mx_thread_info_free(a);
  vmt_mx_thread_info_free(b);
  vmt_mx_thread_info_free(c);
  vmt_mx_thread_info_free(d);
  assert_int_equal(vmt_mx_set_thread_contention_monitoring_enabled(false), 0);
  gate_open(&w.g);
  join_release(t);
  assert_int_equal(vmt_monitor_destroy(w.m), 0);
  gate_destroy(&w.g);
}

/* ==== ThreadCpuTime, ThreadUserTime, ThreadCpuTimeArray ================================== */

/* ThreadCpuTime / ThreadUserTime main(): with measurement disabled, getCurrentThreadCpuTime,
 * getCurrentThreadUserTime, getThreadCpuTime(self) and getThreadUserTime(self) are -1
 * ("expected = -1"); ThreadCpuTimeArray: every element of getThreadCpuTime(ids) and
 * getThreadUserTime(ids) is -1; the ThreadInfo times follow. Enabled again, they are >= 0 and
 * the time read for the thread by id is >= the current-thread time read before it
 * (time1 >= time). */
static void disabled_cpu_time_is_minus_one_everywhere(void **state) {
  (void)state;
  if (!vmt_mx_is_thread_cpu_time_supported()) skip();
  gate_t g;
  vmt_thread_t *other = start_gated(&g, "MyThread-0", false);
  int64_t ids[2] = {self_id(), vmt_thread_id(other)};
  int64_t v, arr[2];
  assert_int_equal(vmt_mx_set_thread_cpu_time_enabled(false), 0);
  assert_int_equal(vmt_mx_get_current_thread_cpu_time(&v), 0);
  assert_int_equal(v, -1);
  assert_int_equal(vmt_mx_get_current_thread_user_time(&v), 0);
  assert_int_equal(v, -1);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(vmt_mx_get_thread_cpu_time(ids[i], &v), 0);
    assert_int_equal(v, -1);
    assert_int_equal(vmt_mx_get_thread_user_time(ids[i], &v), 0);
    assert_int_equal(v, -1);
  }
  assert_int_equal(vmt_mx_get_thread_cpu_time_array(ids, 2, arr), 0);
  assert_true(arr[0] == -1 && arr[1] == -1);
  assert_int_equal(vmt_mx_get_thread_user_time_array(ids, 2, arr), 0);
  assert_true(arr[0] == -1 && arr[1] == -1);
  vmt_thread_info_t *info = mu_info_of(ids[1], 0);
  assert_int_equal(info->cpu_time_ns, -1);
  assert_int_equal(info->user_time_ns, -1);
  vmt_mx_thread_info_free(info);
  /* ids are still checked first (ThreadCpuTimeArray: ids[0] = 0 throws). */
  int64_t bad[2] = {0, ids[1]};
  assert_int_equal(vmt_mx_get_thread_cpu_time_array(bad, 2, arr), -EINVAL);
  assert_int_equal(vmt_mx_get_thread_cpu_time_array(NULL, 2, arr), -EINVAL);

  assert_int_equal(vmt_mx_set_thread_cpu_time_enabled(true), 0);
  int64_t time, time1;
  assert_int_equal(vmt_mx_get_current_thread_cpu_time(&time), 0);
  assert_true(time >= 0);
  assert_int_equal(vmt_mx_get_thread_cpu_time(ids[0], &time1), 0);
  assert_true(time1 >= time);
  assert_int_equal(vmt_mx_get_current_thread_user_time(&time), 0);
  assert_true(time >= 0);
  assert_int_equal(vmt_mx_get_thread_user_time(ids[0], &time1), 0);
  assert_true(time1 >= time);
  assert_int_equal(vmt_mx_get_thread_cpu_time_array(ids, 2, arr), 0);
  assert_true(arr[0] >= 0 && arr[1] >= 0);
  finish_gated(&g, other);
}

/* ThreadCpuTime.MyThread.run / ThreadUserTime.MyThread.run, in a thread of its own after some
 * work: getCurrentThreadCpuTime read first is <= getThreadCpuTime(getId()) read after, and
 * getCurrentThreadUserTime <= getThreadUserTime(getId()) (utime1 > utime2 fails). Both read
 * in both orders of ThreadCpuTime and ThreadUserTime. */
typedef struct self_times {
  int64_t utime1, utime2, time1, time2;   /* ThreadCpuTime's order */
  int64_t time3, utime3, time4, utime4;   /* ThreadUserTime's order */
} self_times_t;

static void *read_own_times(void *arg) {
  self_times_t *s = arg;
  burn_cpu_ns(2 * MS);
  int64_t id = vmt_thread_id(vmt_thread_current());
  vmt_mx_get_current_thread_user_time(&s->utime1);
  vmt_mx_get_thread_user_time(id, &s->utime2);
  vmt_mx_get_current_thread_cpu_time(&s->time1);
  vmt_mx_get_thread_cpu_time(id, &s->time2);
  burn_cpu_ns(1 * MS);
  vmt_mx_get_current_thread_cpu_time(&s->time3);
  vmt_mx_get_current_thread_user_time(&s->utime3);
  vmt_mx_get_thread_cpu_time(id, &s->time4);
  vmt_mx_get_thread_user_time(id, &s->utime4);
  return NULL;
}

static void own_times_by_id_never_below_the_current_thread_times(void **state) {
  (void)state;
  if (!vmt_mx_is_thread_cpu_time_supported()) skip();
  for (int round = 0; round < 20; round++) {
    self_times_t s;
    memset(&s, 0, sizeof(s));
    vmt_thread_t *t = start_named("MyThread", false, read_own_times, &s);
    join_release(t);
    assert_true(s.utime1 >= 0 && s.time1 > 0);
    assert_true(s.utime1 <= s.utime2);
    assert_true(s.time1 <= s.time2);
    assert_true(s.utime2 <= s.time2);   /* the consistent user time: never above a later total */
    assert_true(s.time3 <= s.time4);
    assert_true(s.utime3 <= s.utime4);
  }
}

/* ThreadCpuTime / ThreadCpuTimeArray: the CPU time of a thread waiting on a monitor never goes
 * down between two reads (times[i] > newTime fails), single and array forms; a joined thread's
 * is -1 (InvalidThreadID). */
static void waiting_threads_cpu_time_never_decreases_and_is_minus_one_after(void **state) {
  (void)state;
  if (!vmt_mx_is_thread_cpu_time_supported()) skip();
  enum { N = 4 };
  vmt_monitor_t *obj;
  assert_int_equal(vmt_monitor_create(&obj, "obj"), 0);
  waiter_t w = {.m = obj};
  vmt_thread_t *t[N];
  int64_t ids[N], first[N], second[N], user[N];
  for (int i = 0; i < N; i++) {
    t[i] = start_named("MyThread", false, wait_on_monitor, &w);
    ids[i] = vmt_thread_id(t[i]);
  }
  for (int i = 0; i < N; i++) vmt_mx_thread_info_free(mu_await_info_state(ids[i], VMT_THREAD_WAITING));
  assert_int_equal(vmt_mx_get_thread_cpu_time_array(ids, N, first), 0);
  assert_int_equal(vmt_mx_get_thread_user_time_array(ids, N, user), 0);
  for (int i = 0; i < N; i++) {
    assert_int_equal(vmt_mx_get_thread_cpu_time(ids[i], &second[i]), 0);
    assert_true(first[i] >= 0 && first[i] <= second[i]);
    assert_true(user[i] >= 0 && user[i] <= second[i]);
  }
  waiter_release(&w);
  for (int i = 0; i < N; i++) assert_int_equal(vmt_thread_join(t[i], NULL), 0);
  assert_int_equal(vmt_mx_get_thread_cpu_time_array(ids, N, first), 0);
  for (int i = 0; i < N; i++) {
    assert_int_equal(first[i], -1);
    assert_int_equal(vmt_mx_get_thread_user_time(ids[i], &second[i]), 0);
    assert_int_equal(second[i], -1);
    assert_int_equal(vmt_thread_release(t[i]), 0);
  }
  assert_int_equal(vmt_monitor_destroy(obj), 0);
}

/* ==== ThreadDaemonTest ===================================================================== */

/* ThreadDaemonTest: dumpAllThreads(false, false) reports each thread's daemon flag as the
 * thread was started with, for every one of NUM_THREADS threads with a random mix. */
static void dump_all_reports_each_daemon_flag(void **state) {
  (void)state;
  enum { N = 20 };
  gate_t g;
  gate_init(&g);
  vmt_thread_t *t[N];
  bool daemon[N];
  unsigned seed = (unsigned)test_clock_ns(CLOCK_MONOTONIC);
  for (int i = 0; i < N; i++) {
    char name[32];
    snprintf(name, sizeof(name), "ThreadDaemonTest-%d", i);
    daemon[i] = (rand_r(&seed) & 1) != 0;
    t[i] = start_named(name, daemon[i], gate_body, &g);
  }
  gate_await(&g, N);
  vmt_thread_info_t **arr;
  size_t n;
  assert_int_equal(vmt_mx_dump_all_threads(false, false, 0, &arr, &n), 0);
  int count = 0;
  for (size_t i = 0; i < n; i++) {
    int num;
    if (sscanf(arr[i]->name, "ThreadDaemonTest-%d", &num) != 1) continue;
    assert_true(num >= 0 && num < N);
    assert_int_equal(arr[i]->daemon, daemon[num]);
    count++;
  }
  assert_int_equal(count, N);
  vmt_mx_thread_info_array_free(arr, n);
  gate_open(&g);
  for (int i = 0; i < N; i++) join_release(t[i]);
  gate_destroy(&g);
}

/* ==== MaxDepthForThreadInfoTest ============================================================ */

static int deep_walker(vmt_thread_t *t, vmt_stack_frame_t *frames, int32_t max, void *arg) {
  (void)t;
  (void)arg;
  int n = max < 10 ? max : 10;
  for (int i = 0; i < n; i++)
    frames[i] = (vmt_stack_frame_t){(char *)"vm.Deep.frame", (char *)"Deep.java", i, 0};
  return n;
}

/* MaxDepthForThreadInfoTest: getThreadInfo(allIds, true, true, 0) and dumpAllThreads(true,
 * true, 0) give no frames; with 3 (2) no more than 3 (2); -1 is IllegalArgumentException for
 * both. Every thread here has 10 frames (a VM walker), the calling thread too. */
static void max_depth_caps_every_stack(void **state) {
  (void)state;
  gate_t g;
  vmt_thread_t *t = start_gated(&g, "deep", false);
  vmt_mx_set_stack_walker(deep_walker, NULL);
  int64_t *ids;
  size_t n;
  assert_int_equal(vmt_mx_get_all_thread_ids(&ids, &n), 0);
  const int32_t depths[3] = {0, 3, 2};
  for (int k = 0; k < 3; k++) {
    vmt_thread_info_t **arr;
    assert_int_equal(vmt_mx_get_thread_info_array(ids, n, true, true, depths[k], &arr), 0);
    for (size_t i = 0; i < n; i++)
      if (arr[i]) assert_true(arr[i]->frame_count == (size_t)depths[k]);
    vmt_mx_thread_info_array_free(arr, n);
    size_t m;
    assert_int_equal(vmt_mx_dump_all_threads(true, true, depths[k], &arr, &m), 0);
    for (size_t i = 0; i < m; i++) assert_true(arr[i]->frame_count == (size_t)depths[k]);
    vmt_mx_thread_info_array_free(arr, m);
  }
  vmt_thread_info_t **arr = NULL;
  size_t m;
  assert_int_equal(vmt_mx_get_thread_info_array(ids, n, true, true, -1, &arr), -EINVAL);
  assert_int_equal(vmt_mx_dump_all_threads(true, true, -1, &arr, &m), -EINVAL);
  vmt_mx_ids_free(ids);
  vmt_mx_set_stack_walker(NULL, NULL);
  finish_gated(&g, t);
}

/* ==== ThreadAllocatedMemory ================================================================ */

typedef struct allocator {
  gate_t g;
  int64_t size1, size2;
} allocator_t;

static void allocate_some(size_t bytes) {
  static char *volatile sink;
  for (size_t done = 0; done < bytes; done += 4096) {
    char *p = malloc(4096);
    if (!p) return;
    p[0] = 1;
    sink = p;
    free(sink);
  }
}

static void *allocator_body(void *arg) {
  allocator_t *a = arg;
  allocate_some(1 << 16);
  gate_pass(&a->g);   /* waitUntilThreadBlocked */
  int64_t id = vmt_thread_id(vmt_thread_current());
  vmt_mx_get_thread_allocated_bytes(id, &a->size1);
  allocate_some(1 << 16);
  vmt_mx_get_thread_allocated_bytes(id, &a->size2);
  gate_pass(&a->g);
  return NULL;
}

/* ThreadAllocatedMemory: testSupportEnableDisable (disabled: getCurrentThreadAllocatedBytes is
 * -1), testGetCurrentThreadAllocatedBytes and testCurrentThreadGetThreadAllocatedBytes (>= 0 and
 * not decreasing over an allocation, by both calls), testGetThreadAllocatedBytes (another
 * thread's count never decreases; in the thread itself size1 <= size2), testGetAll... (the
 * total never decreases, also after threads exit); and ThreadAllocatedMemoryArray: a dead
 * thread's element is -1. */
static void allocated_bytes_as_thread_allocated_memory(void **state) {
  (void)state;
  if (!vmt_mx_is_thread_allocated_memory_supported())
    skip();   /* mx_alloc_test checks the -ENOTSUP answers of this build */
  int64_t v, total0, total1, total2;
  assert_int_equal(vmt_mx_set_thread_allocated_memory_enabled(false), 0);
  bool on = true;
  assert_int_equal(vmt_mx_is_thread_allocated_memory_enabled(&on), 0);
  assert_false(on);
  assert_int_equal(vmt_mx_get_current_thread_allocated_bytes(&v), 0);
  assert_int_equal(v, -1);
  assert_int_equal(vmt_mx_get_thread_allocated_bytes(self_id(), &v), 0);
  assert_int_equal(v, -1);
  assert_int_equal(vmt_mx_get_total_thread_allocated_bytes(&v), 0);
  assert_int_equal(v, -1);
  assert_int_equal(vmt_mx_set_thread_allocated_memory_enabled(true), 0);
  assert_int_equal(vmt_mx_is_thread_allocated_memory_enabled(&on), 0);
  assert_true(on);

  int64_t size, after;
  assert_int_equal(vmt_mx_get_current_thread_allocated_bytes(&size), 0);
  assert_true(size >= 0);
  allocate_some(1 << 16);
  assert_int_equal(vmt_mx_get_current_thread_allocated_bytes(&after), 0);
  assert_true(after >= size);
  assert_int_equal(vmt_mx_get_thread_allocated_bytes(self_id(), &size), 0);
  assert_true(size >= after);
  allocate_some(1 << 16);
  assert_int_equal(vmt_mx_get_thread_allocated_bytes(self_id(), &after), 0);
  assert_true(after >= size);

  assert_int_equal(vmt_mx_get_total_thread_allocated_bytes(&total0), 0);
  assert_true(total0 > 0);
  allocator_t a;
  memset(&a, 0, sizeof(a));
  gate_init(&a.g);
  vmt_thread_t *t = start_named("MyThread", false, allocator_body, &a);
  gate_await(&a.g, 1);
  int64_t id = vmt_thread_id(t);
  assert_int_equal(vmt_mx_get_thread_allocated_bytes(id, &size), 0);
  assert_true(size >= 0);
  assert_int_equal(vmt_mx_get_total_thread_allocated_bytes(&total1), 0);
  assert_true(total1 >= total0);
  gate_open(&a.g);
  gate_await(&a.g, 2);
  assert_int_equal(vmt_mx_get_thread_allocated_bytes(id, &after), 0);
  assert_true(after >= size);
  assert_true(a.size1 >= size && a.size1 <= a.size2);
  gate_open(&a.g);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  int64_t pair[2] = {id, self_id()}, out[2];
  assert_int_equal(vmt_mx_get_thread_allocated_bytes_array(pair, 2, out), 0);
  assert_int_equal(out[0], -1);
  assert_true(out[1] >= 0);
  assert_int_equal(vmt_mx_get_total_thread_allocated_bytes(&total2), 0);
  assert_true(total2 >= total1);
  assert_int_equal(vmt_thread_release(t), 0);
  gate_destroy(&a.g);
}

/* ==== FindDeadlocks, MonitorDeadlock, SynchronizerDeadlock, SharedSynchronizer ============
 * (last: deadlocked threads never end) */

/* FindDeadlocks: "no deadlock: Should return null" — null, not an empty array, from both
 * finders, with threads that wait on monitors nobody holds, a thread parked without a blocker
 * (SharedSynchronizer: parked, but on nothing owned) and one blocked on a monitor whose owner
 * is running. */
static void no_deadlock_is_null_from_both_finders(void **state) {
  (void)state;
  vmt_monitor_t *m, *held;
  assert_int_equal(vmt_monitor_create(&m, "a"), 0);
  assert_int_equal(vmt_monitor_create(&held, "held"), 0);
  waiter_t w = {.m = m};
  parker_t p = {.timeout_ns = 0};
  vmt_thread_t *tw = start_named("waits", true, wait_on_monitor, &w);
  vmt_thread_t *tp = start_named("parks", true, park_loop, &p);
  assert_int_equal(vmt_monitor_enter(held), 0);
  vmt_thread_t *tb = start_named("blocks", true, enter_and_leave, held);
  vmt_mx_thread_info_free(mu_await_info_state(vmt_thread_id(tw), VMT_THREAD_WAITING));
  vmt_mx_thread_info_free(mu_await_info_state(vmt_thread_id(tp), VMT_THREAD_WAITING));
  vmt_mx_thread_info_free(mu_await_info_state(vmt_thread_id(tb), VMT_THREAD_BLOCKED));
  for (int syncs = 0; syncs < 2; syncs++) {
    int64_t *ids = (int64_t *)1;
    size_t n = 7;
    assert_int_equal(syncs ? vmt_mx_find_deadlocked_threads(&ids, &n)
                           : vmt_mx_find_monitor_deadlocked_threads(&ids, &n), 0);
    assert_null(ids);
    assert_int_equal(n, 0);
  }
  assert_int_equal(vmt_monitor_exit(held), 0);
  waiter_release(&w);
  atomic_store(&p.done, true);
  assert_int_equal(vmt_unpark(tp), 0);
  join_release(tw);
  join_release(tp);
  join_release(tb);
  assert_int_equal(vmt_monitor_destroy(m), 0);
  assert_int_equal(vmt_monitor_destroy(held), 0);
}

/* MonitorDeadlock / SynchronizerDeadlock: three threads, each holding lock i and then asking
 * for lock i+1 mod 3. The lock kind of each edge is given per thread. */
typedef struct dl_thread {
  vmt_monitor_t *m1, *m2;   /* monitors, or NULL */
  vmt_sync_t *s1, *s2;      /* synchronizers, or NULL */
  gate_t *go;
} dl_thread_t;

static void *deadlocking_thread(void *arg) {
  dl_thread_t *d = arg;
  if (d->m1) vmt_monitor_enter(d->m1);
  else vmt_sync_lock(d->s1);
  gate_pass(d->go);   /* barr.signal(); go.await() */
  if (d->m2) vmt_monitor_enter(d->m2);
  else vmt_sync_lock(d->s2);
  fail_msg("should not reach here");
  return NULL;
}

typedef struct dl_set {
  gate_t go;
  dl_thread_t d[3];
  vmt_thread_t *t[3];
  int64_t ids[3];
} dl_set_t;

/* Starts the three threads of one cycle; kinds[i] says whether thread i's first lock is a
 * monitor (true) or a synchronizer, and thread i asks for thread i+1's first lock. Returns once
 * all three are BLOCKED or WAITING for their second lock. */
static void dl_start(dl_set_t *s, const char *prefix, const bool kinds[3]) {
  gate_init(&s->go);
  vmt_monitor_t *m[3] = {NULL, NULL, NULL};
  vmt_sync_t *y[3] = {NULL, NULL, NULL};
  char name[64];
  for (int i = 0; i < 3; i++) {
    snprintf(name, sizeof(name), "%s-lock-%d", prefix, i);
    if (kinds[i])
      assert_int_equal(vmt_monitor_create(&m[i], name), 0);
    else
      assert_int_equal(vmt_sync_create(&y[i], name), 0);
  }
  for (int i = 0; i < 3; i++) {
    int j = (i + 1) % 3;
    s->d[i] = (dl_thread_t){m[i], m[j], y[i], y[j], &s->go};
    snprintf(name, sizeof(name), "%s-Thread-%d", prefix, i + 1);
    s->t[i] = start_named(name, true, deadlocking_thread, &s->d[i]);
    s->ids[i] = vmt_thread_id(s->t[i]);
  }
  gate_await(&s->go, 3);
  gate_open(&s->go);
  for (int i = 0; i < 3; i++) {
    int j = (i + 1) % 3;
    vmt_mx_thread_info_free(
        mu_await_info_state(s->ids[i], kinds[j] ? VMT_THREAD_BLOCKED : VMT_THREAD_WAITING));
  }
}

/* checkResult: exactly EXPECTED_THREADS, and every one of them. */
static void expect_ids(const int64_t *got, size_t n, const int64_t *want, size_t wn) {
  assert_non_null(got);
  assert_int_equal(n, wn);
  for (size_t i = 0; i < wn; i++) assert_true(ids_contain(got, n, want[i]));
  for (size_t i = 1; i < n; i++) assert_true(got[i - 1] < got[i]);   /* ascending, distinct */
}

static dl_set_t monitors_set, syncs_set, mixed_set;
static vmt_monitor_t *tail_wants;

/* FindDeadlocks with MonitorDeadlock: both finders report exactly the three monitor-deadlocked
 * threads (md.checkResult(mthreads)). A fourth thread blocked entering a monitor that a
 * deadlocked thread holds waits for the cycle but is not on it: the specification's "cycles of
 * threads", which this runtime reports (HotSpot's walk may add such a thread when it visits it
 * first; the specification does not). */
static void monitor_deadlock_is_found_by_both(void **state) {
  (void)state;
  const bool monitors[3] = {true, true, true};
  dl_start(&monitors_set, "MThread", monitors);
  tail_wants = monitors_set.d[0].m1;
  vmt_thread_t *tail = start_named("tail", true, enter_and_leave, tail_wants);
  vmt_mx_thread_info_free(mu_await_info_state(vmt_thread_id(tail), VMT_THREAD_BLOCKED));
  for (int syncs = 0; syncs < 2; syncs++) {
    int64_t *ids;
    size_t n;
    assert_int_equal(syncs ? vmt_mx_find_deadlocked_threads(&ids, &n)
                           : vmt_mx_find_monitor_deadlocked_threads(&ids, &n), 0);
    expect_ids(ids, n, monitors_set.ids, 3);
    assert_false(ids_contain(ids, n, vmt_thread_id(tail)));
    vmt_mx_ids_free(ids);
  }
  vmt_thread_release(tail);
}

/* FindDeadlocks with SynchronizerDeadlock: findDeadlockedThreads now reports both cycles
 * (sd.checkResult(newList) on what is new), findMonitorDeadlockedThreads still only the
 * monitor one. A cycle with one synchronizer edge and two monitor edges is a deadlock for
 * findDeadlockedThreads only: findMonitorDeadlockedThreads follows monitors alone. */
static void synchronizer_deadlocks_are_found_by_find_deadlocked_threads_only(void **state) {
  (void)state;
  const bool syncs[3] = {false, false, false};
  const bool mixed[3] = {true, false, true};
  dl_start(&syncs_set, "Deadlock", syncs);
  dl_start(&mixed_set, "Mixed", mixed);
  int64_t *ids;
  size_t n;
  assert_int_equal(vmt_mx_find_monitor_deadlocked_threads(&ids, &n), 0);
  expect_ids(ids, n, monitors_set.ids, 3);
  vmt_mx_ids_free(ids);
  assert_int_equal(vmt_mx_find_deadlocked_threads(&ids, &n), 0);
  int64_t all[9];
  for (int i = 0; i < 3; i++) {
    all[i] = monitors_set.ids[i];
    all[3 + i] = syncs_set.ids[i];
    all[6 + i] = mixed_set.ids[i];
  }
  expect_ids(ids, n, all, 9);
  vmt_mx_ids_free(ids);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(defaults_are_hotspot_defaults),
      cmocka_unit_test(thread_counts_follow_daemon_and_user_threads),
      cmocka_unit_test(reset_peak_sets_peak_to_the_live_count),
      cmocka_unit_test(all_ids_agree_with_the_count_and_drop_dead_threads),
      cmocka_unit_test(attached_threads_are_started_live_and_daemon_like_jni_ones),
      cmocka_unit_test(a_started_thread_is_live_from_its_first_instruction),
      cmocka_unit_test(invalid_ids_are_illegal_arguments_and_unknown_ones_minus_one),
      cmocka_unit_test(null_elements_for_dead_and_unknown_ids_and_empty_for_empty),
      cmocka_unit_test(terminated_before_join_is_null_and_minus_one),
      cmocka_unit_test(states_and_lock_info_as_thread_mxbean_state_test),
      cmocka_unit_test(synchronizer_wait_reports_the_synchronizer_and_its_owner),
      cmocka_unit_test(joining_thread_is_waiting_and_counts_a_wait),
      cmocka_unit_test(blocked_chain_names_each_owner),
      cmocka_unit_test(waiting_thread_names_the_current_owner_of_its_monitor),
      cmocka_unit_test(locked_monitors_as_locking_thread),
      cmocka_unit_test(locked_synchronizers_as_synchronizer_locking_thread),
      cmocka_unit_test(my_own_synchronizer_is_listed_alone),
      cmocka_unit_test(blocked_count_and_time_as_synchronization_statistics),
      cmocka_unit_test(nested_blocking_counts_each_enter),
      cmocka_unit_test(waited_count_and_time_as_synchronization_statistics),
      cmocka_unit_test(sleep_of_zero_counts_a_wait_unless_interrupted),
      cmocka_unit_test(a_waiting_thread_is_never_in_native),
      cmocka_unit_test(timed_out_wait_reenters_blocked),
      cmocka_unit_test(switches_are_booleans_not_counters),
      cmocka_unit_test(enabling_resets_times_only_when_it_was_off),
      cmocka_unit_test(disabled_cpu_time_is_minus_one_everywhere),
      cmocka_unit_test(own_times_by_id_never_below_the_current_thread_times),
      cmocka_unit_test(waiting_threads_cpu_time_never_decreases_and_is_minus_one_after),
      cmocka_unit_test(dump_all_reports_each_daemon_flag),
      cmocka_unit_test(max_depth_caps_every_stack),
      cmocka_unit_test(allocated_bytes_as_thread_allocated_memory),
      cmocka_unit_test(no_deadlock_is_null_from_both_finders),
      cmocka_unit_test(monitor_deadlock_is_found_by_both),
      cmocka_unit_test(synchronizer_deadlocks_are_found_by_find_deadlocked_threads_only),
  };
  return cmocka_run_group_tests(tests, mu_attach_main, NULL);
}
