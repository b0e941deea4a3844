/*
 * test/mx_counts_test.c: ThreadMXBean's counts and getAllThreadIds, ported from what OpenJDK's
 * java/lang/management/ThreadMXBean tests check (ThreadCounts, ResetPeakThreadCount,
 * AllThreadIds): exact deltas as user and daemon threads start and stop, the peak and its
 * reset, ids present while alive and gone once terminated, counts that drop before join
 * returns, and attached threads counted while attached.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "mx_util.h"

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
      cmocka_unit_test(all_ids_rejects_null),
  };
  return cmocka_run_group_tests_name("mx_counts", tests, NULL, NULL);
}
