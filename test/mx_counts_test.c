/*
 * test/mx_counts_test.c: ThreadMXBean's counts and getAllThreadIds, ported from what OpenJDK's
 * java/lang/management/ThreadMXBean tests check (ThreadCounts, ResetPeakThreadCount,
 * AllThreadIds): exact deltas as user and daemon threads start and stop, the peak and its
 * reset, ids present while alive and gone once terminated, counts that drop before join
 * returns, and attached threads counted while attached. And what OpenJDK has no test for: ids
 * asked for while threads start and end (getAllThreadIds reads ids and listed flags from arrays
 * beside the registry's records, which rebuilds squeeze and records recycled for new threads
 * must not confuse) are never an ended thread's, a thread's not started, or an internal one.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <pthread.h>
#include <sched.h>

#include <cmocka.h>

#include "mx_util.h"
#include "test/thread_util.h"

typedef struct counts {
  int32_t live, peak, daemon;
  int64_t started;
} counts_t;

static counts_t now(void) {
  counts_t c = {vmt_mx_get_thread_count(), vmt_mx_get_peak_thread_count(),
                vmt_mx_get_daemon_thread_count(), vmt_mx_get_total_started_thread_count()};
  return c;
}

static void counts_follow_user_and_daemon_threads(void **state) {
  (void)state;
  vmt_mx_reset_peak_thread_count();
  counts_t base = now();
  assert_int_equal(base.peak, base.live);

  gate_t users, daemons[2];
  gate_init(&users);
  gate_init(&daemons[0]);
  gate_init(&daemons[1]);
  vmt_thread_t *u[3], *d[2];
  for (int i = 0; i < 3; i++) assert_non_null(u[i] = start_named("user", false, gate_body, &users));
  for (int i = 0; i < 2; i++)
    assert_non_null(d[i] = start_named("daemon", true, gate_body, &daemons[i]));
  /* A started thread counts the moment start returns, before it ran. */
  counts_t c = now();
  assert_int_equal(c.live, base.live + 5);
  assert_int_equal(c.daemon, base.daemon + 2);
  assert_int_equal(c.started, base.started + 5);
  assert_int_equal(c.peak, base.live + 5);
  gate_await(&users, 3);
  gate_await(&daemons[0], 1);
  gate_await(&daemons[1], 1);

  /* The daemons end one at a time: each drops the counts by one before its join returns. */
  for (int i = 0; i < 2; i++) {
    gate_open(&daemons[i]);
    assert_int_equal(vmt_thread_join(d[i], NULL), 0);
    c = now();
    assert_int_equal(c.daemon, base.daemon + 2 - (i + 1));
    assert_int_equal(c.live, base.live + 5 - (i + 1));
  }
  assert_int_equal(c.started, base.started + 5);
  assert_int_equal(c.peak, base.live + 5); /* the peak stays until reset */

  vmt_mx_reset_peak_thread_count();
  assert_int_equal(vmt_mx_get_peak_thread_count(), base.live + 3);

  gate_open(&users);
  for (int i = 0; i < 3; i++) assert_int_equal(vmt_thread_join(u[i], NULL), 0);
  c = now();
  assert_int_equal(c.live, base.live);
  assert_int_equal(c.daemon, base.daemon);
  assert_int_equal(c.peak, base.live + 3);
  assert_int_equal(c.started, base.started + 5);
  vmt_mx_reset_peak_thread_count();
  assert_int_equal(vmt_mx_get_peak_thread_count(), base.live);

  for (int i = 0; i < 3; i++) vmt_thread_release(u[i]);
  for (int i = 0; i < 2; i++) vmt_thread_release(d[i]);
  gate_destroy(&users);
  gate_destroy(&daemons[0]);
  gate_destroy(&daemons[1]);
}

static void peak_tracks_the_highest_live_count_since_reset(void **state) {
  (void)state;
  vmt_mx_reset_peak_thread_count();
  counts_t base = now();
  gate_t g;
  gate_init(&g);
  vmt_thread_t *t[4];
  for (int round = 0; round < 2; round++) {
    /* Rounds of 4 then 2 threads: the peak keeps 4 after the second, smaller round. */
    int n = round == 0 ? 4 : 2;
    for (int i = 0; i < n; i++) assert_non_null(t[i] = start_named("peak", false, gate_body, &g));
    gate_await(&g, n);
    gate_open(&g);
    for (int i = 0; i < n; i++) {
      assert_int_equal(vmt_thread_join(t[i], NULL), 0);
      vmt_thread_release(t[i]);
    }
    g.arrived = 0;
    assert_int_equal(vmt_mx_get_peak_thread_count(), base.live + 4);
  }
  gate_destroy(&g);
}

static void all_ids_list_live_threads_and_drop_terminated_ones(void **state) {
  (void)state;
  gate_t g;
  gate_init(&g);
  vmt_thread_t *t[5];
  int64_t id[5];
  for (int i = 0; i < 5; i++) {
    assert_non_null(t[i] = start_named("ids", i % 2, gate_body, &g));
    id[i] = vmt_thread_id(t[i]);
  }
  gate_await(&g, 5);
  int64_t *ids = NULL;
  size_t n = 0;
  assert_int_equal(vmt_mx_get_all_thread_ids(&ids, &n), 0);
  assert_int_equal(n, (size_t)vmt_mx_get_thread_count());
  for (int i = 0; i < 5; i++) assert_true(ids_contain(ids, n, id[i]));
  for (size_t i = 1; i < n; i++) assert_true(ids[i - 1] < ids[i]); /* ascending, unique */
  vmt_mx_ids_free(ids);

  gate_open(&g);
  for (int i = 0; i < 5; i++) assert_int_equal(vmt_thread_join(t[i], NULL), 0);
  assert_int_equal(vmt_mx_get_all_thread_ids(&ids, &n), 0);
  for (int i = 0; i < 5; i++) assert_false(ids_contain(ids, n, id[i]));
  vmt_mx_ids_free(ids);
  for (int i = 0; i < 5; i++) vmt_thread_release(t[i]);
  gate_destroy(&g);
}

static void attached_thread_is_counted_and_listed_while_attached(void **state) {
  (void)state;
  counts_t base = now();
  vmt_thread_t *self = NULL;
  assert_int_equal(vmt_thread_attach(NULL, &self), 0);
  assert_int_equal(vmt_mx_get_thread_count(), base.live + 1);
  int64_t *ids = NULL;
  size_t n = 0;
  assert_int_equal(vmt_mx_get_all_thread_ids(&ids, &n), 0);
  assert_true(ids_contain(ids, n, vmt_thread_id(self)));
  int64_t my_id = vmt_thread_id(self);
  vmt_mx_ids_free(ids);
  assert_int_equal(vmt_thread_detach(), 0);
  assert_int_equal(vmt_mx_get_thread_count(), base.live);
  assert_int_equal(vmt_mx_get_all_thread_ids(&ids, &n), 0);
  assert_false(ids_contain(ids, n, my_id));
  vmt_mx_ids_free(ids);
}

/* ---- ids while threads come and go ------------------------------------------------------ *
 * One churner starts CHURN threads one after another (ids consecutive: nothing else starts
 * meanwhile), each ending at once, and joins each CHURN_LIVE starts later, so that exits,
 * tombstones, rebuilds and recycled records mix. The main thread asks for all ids meanwhile and
 * checks each answer against what it knew before the call (which threads were joined) and after
 * it (how many starts had returned). */
enum { CHURN = 1500, CHURN_LIVE = 12 };
static _Atomic int churn_started;      /* starts returned */
static _Atomic int churn_joined_upto;  /* threads [0, this) are joined */
static _Atomic int64_t churn_first_id;

static void *churn_threads(void *arg) {
  (void)arg;
  static vmt_thread_t *t[CHURN];
  for (int k = 0; k < CHURN; k++) {
    if (vmt_thread_start(&t[k], return_arg, NULL) != 0) abort();
    if (k == 0) atomic_store(&churn_first_id, vmt_thread_id(t[0]));
    atomic_store(&churn_started, k + 1);
    if (k >= CHURN_LIVE) {
      int j = k - CHURN_LIVE;
      if (vmt_thread_join(t[j], NULL) != 0) abort();
      vmt_thread_release(t[j]);
      atomic_store(&churn_joined_upto, j + 1);
    }
  }
  for (int j = CHURN - CHURN_LIVE; j < CHURN; j++) {
    if (vmt_thread_join(t[j], NULL) != 0) abort();
    vmt_thread_release(t[j]);
    atomic_store(&churn_joined_upto, j + 1);
  }
  return NULL;
}

static void all_ids_while_threads_come_and_go_are_never_an_ended_threads(void **state) {
  (void)state;
  /* Threads of the tests before this one that are still listed (none should be). */
  int64_t *before = NULL;
  size_t nbefore = 0;
  assert_int_equal(vmt_mx_get_all_thread_ids(&before, &nbefore), 0);
  pthread_t churner;
  assert_int_equal(pthread_create(&churner, NULL, churn_threads, NULL), 0);
  while (atomic_load(&churn_started) == 0) sched_yield();
  int64_t first = atomic_load(&churn_first_id);
  size_t calls = 0, seen = 0;
  while (atomic_load(&churn_joined_upto) < CHURN) {
    int joined = atomic_load(&churn_joined_upto);
    int64_t *ids = NULL;
    size_t n = 0;
    assert_int_equal(vmt_mx_get_all_thread_ids(&ids, &n), 0);
    int started = atomic_load(&churn_started);
    for (size_t i = 0; i < n; i++) {
      assert_true(ids[i] > 0);                       /* never an internal thread */
      if (i > 0) assert_true(ids[i - 1] < ids[i]);   /* ascending */
      if (ids[i] < first) {
        assert_true(ids_contain(before, nbefore, ids[i]));
        continue;
      }
      int64_t k = ids[i] - first;
      /* Not joined before the call began; started, or the one start in flight. */
      assert_true(k >= joined);
      assert_true(k <= started);
      seen++;
    }
    vmt_mx_ids_free(ids);
    calls++;
  }
  assert_int_equal(pthread_join(churner, NULL), 0);
  vmt_mx_ids_free(before);
  print_message("%zu calls, %zu churned ids listed\n", calls, seen);
  assert_true(calls > 0);
}

static void all_ids_rejects_null(void **state) {
  (void)state;
  int64_t *ids;
  size_t n;
  assert_int_equal(vmt_mx_get_all_thread_ids(NULL, &n), -EINVAL);
  assert_int_equal(vmt_mx_get_all_thread_ids(&ids, NULL), -EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(counts_follow_user_and_daemon_threads),
      cmocka_unit_test(peak_tracks_the_highest_live_count_since_reset),
      cmocka_unit_test(all_ids_list_live_threads_and_drop_terminated_ones),
      cmocka_unit_test(attached_thread_is_counted_and_listed_while_attached),
      cmocka_unit_test(all_ids_while_threads_come_and_go_are_never_an_ended_threads),
      cmocka_unit_test(all_ids_rejects_null),
  };
  return cmocka_run_group_tests_name("mx_counts", tests, NULL, NULL);
}
