/*
 * test/mx_cpu_test.c: thread CPU and user time through the management API, ported from what
 * OpenJDK's ThreadMXBean tests check (ThreadCpuTime, ThreadUserTime, ThreadCpuTimeArray,
 * InvalidThreadID): invalid ids rejected before anything else, an unknown id giving -1, -1
 * while disabled, a thread that finished its work gaining (almost) no CPU time while it waits,
 * user time never above CPU time, times never decreasing, and -1 once a thread terminated.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "mx_util.h"

#define UNKNOWN_ID 999999

static void require_cpu_time(void) {
  if (!vmt_mx_is_thread_cpu_time_supported()) {
    print_message("thread CPU time is not supported on this platform\n");
    skip();
  }
}

static void invalid_ids_are_rejected_first(void **state) {
  (void)state;
  const int64_t bad[] = {0, -1, INT64_MIN};
  int64_t v = 42;
  /* Even while disabled: the id check comes before the enabled check (Java's order). */
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1 && vmt_mx_set_thread_cpu_time_enabled(false) != 0) break;
    for (size_t i = 0; i < 3; i++) {
      assert_int_equal(vmt_mx_get_thread_cpu_time(bad[i], &v), -EINVAL);
      assert_int_equal(vmt_mx_get_thread_user_time(bad[i], &v), -EINVAL);
      int64_t arr[2] = {UNKNOWN_ID, bad[i]}, out[2] = {7, 7};
      assert_int_equal(vmt_mx_get_thread_cpu_time_array(arr, 2, out), -EINVAL);
      assert_int_equal(vmt_mx_get_thread_user_time_array(arr, 2, out), -EINVAL);
    }
  }
  assert_int_equal(v, 42); /* nothing written on error */
  assert_int_equal(vmt_mx_set_thread_cpu_time_enabled(true), 0);
  int64_t out[1];
  assert_int_equal(vmt_mx_get_thread_cpu_time_array(NULL, 1, out), -EINVAL);
  assert_int_equal(vmt_mx_get_thread_user_time_array(NULL, 0, out), -EINVAL);
  int64_t one = UNKNOWN_ID;
  assert_int_equal(vmt_mx_get_thread_cpu_time_array(&one, 1, NULL), -EINVAL);
  assert_int_equal(vmt_mx_get_thread_cpu_time(1, NULL), -EINVAL);
  assert_int_equal(vmt_mx_get_current_thread_cpu_time(NULL), -EINVAL);
  bool en;
  assert_int_equal(vmt_mx_is_thread_cpu_time_enabled(NULL), -EINVAL);
  assert_int_equal(vmt_mx_is_thread_cpu_time_enabled(&en), 0);
}

static void unknown_id_gives_minus_one(void **state) {
  (void)state;
  require_cpu_time();
  int64_t v = 0;
  assert_int_equal(vmt_mx_get_thread_cpu_time(UNKNOWN_ID, &v), 0);
  assert_int_equal(v, -1);
  v = 0;
  assert_int_equal(vmt_mx_get_thread_user_time(UNKNOWN_ID, &v), 0);
  assert_int_equal(v, -1);
}

static void empty_array_gives_empty_result(void **state) {
  (void)state;
  require_cpu_time();
  int64_t ids[1] = {1}, out[1] = {77};
  assert_int_equal(vmt_mx_get_thread_cpu_time_array(ids, 0, out), 0);
  assert_int_equal(vmt_mx_get_thread_user_time_array(ids, 0, NULL), 0);
  assert_int_equal(out[0], 77);
}

typedef struct worker {
  gate_t done_working; /* the worker arrives here after its work, and waits */
  int burn_ms;
} worker_t;

static void *burn_then_wait(void *arg) {
  worker_t *w = arg;
  burn_cpu_ms(w->burn_ms);
  gate_pass(&w->done_working);
  return NULL;
}

static void finished_thread_gains_almost_no_cpu_while_waiting(void **state) {
  (void)state;
  require_cpu_time();
  worker_t w = {.burn_ms = 50};
  gate_init(&w.done_working);
  vmt_thread_t *t = start_named("burner", false, burn_then_wait, &w);
  assert_non_null(t);
  gate_await(&w.done_working, 1);
  int64_t id = vmt_thread_id(t), before, after, user;
  assert_int_equal(vmt_mx_get_thread_cpu_time(id, &before), 0);
  /* It burned ~50 ms (CPU time, not wall time: the count is the kernel's). */
  assert_true(before >= 45 * 1000000LL);
  sleep_ms(100);
  assert_int_equal(vmt_mx_get_thread_user_time(id, &user), 0);
  assert_int_equal(vmt_mx_get_thread_cpu_time(id, &after), 0);
  /* Waiting in pthread_cond_wait costs no CPU; 10 ms leaves room for the wake-up path only
   * (OpenJDK's ThreadCpuTime allows the same kind of slack). */
  assert_true(after >= before);
  assert_true(after - before < 10 * 1000000LL);
  assert_true(user >= 0);
  assert_true(user <= after);
  gate_open(&w.done_working);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  /* Terminated: -1, though the record is still referenced. */
  assert_int_equal(vmt_mx_get_thread_cpu_time(id, &after), 0);
  assert_int_equal(after, -1);
  assert_int_equal(vmt_mx_get_thread_user_time(id, &user), 0);
  assert_int_equal(user, -1);
  vmt_thread_release(t);
  gate_destroy(&w.done_working);
}

static void disabled_measurement_gives_minus_one(void **state) {
  (void)state;
  require_cpu_time();
  gate_t g;
  vmt_thread_t *t = start_gated(&g, "idle", false);
  int64_t id = vmt_thread_id(t), v;
  bool enabled = false;
  assert_int_equal(vmt_mx_is_thread_cpu_time_enabled(&enabled), 0);
  assert_true(enabled); /* on by default */

  assert_int_equal(vmt_mx_set_thread_cpu_time_enabled(false), 0);
  assert_int_equal(vmt_mx_is_thread_cpu_time_enabled(&enabled), 0);
  assert_false(enabled);
  assert_int_equal(vmt_mx_get_thread_cpu_time(id, &v), 0);
  assert_int_equal(v, -1);
  assert_int_equal(vmt_mx_get_thread_user_time(id, &v), 0);
  assert_int_equal(v, -1);
  assert_int_equal(vmt_mx_get_current_thread_cpu_time(&v), 0);
  assert_int_equal(v, -1);
  assert_int_equal(vmt_mx_get_current_thread_user_time(&v), 0);
  assert_int_equal(v, -1);
  int64_t ids[2] = {id, id}, out[2] = {0, 0};
  assert_int_equal(vmt_mx_get_thread_cpu_time_array(ids, 2, out), 0);
  assert_int_equal(out[0], -1);
  assert_int_equal(out[1], -1);
  vmt_thread_info_t *info = NULL;
  assert_int_equal(vmt_mx_get_thread_info(id, 0, &info), 0);
  assert_non_null(info);
  assert_int_equal(info->cpu_time_ns, -1);
  assert_int_equal(info->user_time_ns, -1);
  vmt_mx_thread_info_free(info);

  assert_int_equal(vmt_mx_set_thread_cpu_time_enabled(true), 0);
  assert_int_equal(vmt_mx_get_thread_cpu_time(id, &v), 0);
  assert_true(v >= 0);
  finish_gated(&g, t);
}

static void current_thread_times_grow_and_user_stays_below_total(void **state) {
  (void)state;
  if (!vmt_mx_is_current_thread_cpu_time_supported()) {
    print_message("current-thread CPU time is not supported\n");
    skip();
  }
  int64_t prev_cpu = 0, prev_user = 0;
  for (int i = 0; i < 200; i++) {
    int64_t user, cpu;
    assert_int_equal(vmt_mx_get_current_thread_user_time(&user), 0);
    assert_int_equal(vmt_mx_get_current_thread_cpu_time(&cpu), 0);
    assert_true(user >= 0);
    assert_true(user <= cpu);
    assert_true(cpu >= prev_cpu);
    assert_true(user >= prev_user);
    prev_cpu = cpu;
    prev_user = user;
    if (i % 50 == 0) burn_cpu_ms(2);
  }
  assert_true(prev_cpu >= 6 * 1000000LL);
}

typedef struct spinner {
  _Atomic bool stop;
} spinner_t;

static void *spin(void *arg) {
  spinner_t *s = arg;
  while (!atomic_load(&s->stop)) burn_cpu_ms(1);
  return NULL;
}

static void busy_thread_times_never_decrease_and_user_never_exceeds_cpu(void **state) {
  (void)state;
  require_cpu_time();
  spinner_t s = {false};
  vmt_thread_t *t = start_named("spinner", false, spin, &s);
  assert_non_null(t);
  int64_t id = vmt_thread_id(t), prev_cpu = 0, prev_user = 0;
  for (int i = 0; i < 300; i++) {
    int64_t user, cpu;
    assert_int_equal(vmt_mx_get_thread_user_time(id, &user), 0);
    assert_int_equal(vmt_mx_get_thread_cpu_time(id, &cpu), 0);
    assert_true(cpu >= prev_cpu);
    assert_true(user >= prev_user);
    assert_true(user <= cpu); /* user read first: never above the total read after it */
    prev_cpu = cpu;
    prev_user = user;
    if (i % 30 == 0) sleep_ms(1);
  }
  atomic_store(&s.stop, true);
  vmt_thread_join(t, NULL);
  vmt_thread_release(t);
}

static void array_forms_answer_per_element(void **state) {
  (void)state;
  require_cpu_time();
  gate_t live, ending;
  gate_init(&live);
  gate_init(&ending);
  vmt_thread_t *a = start_named("a", false, gate_body, &live);
  vmt_thread_t *b = start_named("b", true, gate_body, &live);
  vmt_thread_t *ended = start_named("ended", false, gate_body, &ending);
  gate_await(&live, 2);
  gate_await(&ending, 1);
  gate_open(&ending);
  vmt_thread_join(ended, NULL);
  /* Unknown and terminated elements read -1; the others answer, duplicates included. */
  int64_t ids[5] = {vmt_thread_id(a), UNKNOWN_ID, vmt_thread_id(ended), vmt_thread_id(b),
                    vmt_thread_id(a)};
  int64_t cpu[5], user[5];
  assert_int_equal(vmt_mx_get_thread_user_time_array(ids, 5, user), 0);
  assert_int_equal(vmt_mx_get_thread_cpu_time_array(ids, 5, cpu), 0);
  for (int i = 0; i < 5; i++) {
    if (i == 1 || i == 2) {
      assert_int_equal(cpu[i], -1);
      assert_int_equal(user[i], -1);
    } else {
      assert_true(cpu[i] >= 0);
      assert_true(user[i] >= 0 && user[i] <= cpu[i]);
    }
  }
  /* An element naming the calling thread is answered too (the attached main thread). */
  vmt_thread_t *self;
  assert_int_equal(vmt_thread_attach(NULL, &self), 0);
  int64_t me = vmt_thread_id(self), my_cpu;
  burn_cpu_ms(1);
  assert_int_equal(vmt_mx_get_thread_cpu_time_array(&me, 1, &my_cpu), 0);
  assert_true(my_cpu > 0);
  assert_int_equal(vmt_thread_detach(), 0);

  gate_open(&live);
  vmt_thread_join(a, NULL);
  vmt_thread_join(b, NULL);
  vmt_thread_release(a);
  vmt_thread_release(b);
  vmt_thread_release(ended);
  gate_destroy(&live);
  gate_destroy(&ending);
}

/* The array sweeps resolve ids against one snapshot a chunk at a time, walking forward when
 * the ids come sorted: every element must be answered as a one-id query answers it, whatever
 * the order, with ended threads (tombstones in the snapshot), unknown ids and duplicates
 * among them, across chunks of the sweep (more than 64 threads), and the calling thread in
 * several chunks. */
#define MANY 150
static void sweeps_answer_every_order_as_single_queries_do(void **state) {
  (void)state;
  require_cpu_time();
  gate_t live, ending;
  gate_init(&live);
  gate_init(&ending);
  vmt_thread_t *t[MANY];
  for (int i = 0; i < MANY; i++) {
    t[i] = start_named("sweep", false, gate_body, i % 7 == 3 ? &ending : &live);
    assert_non_null(t[i]);
  }
  int ended = 0;
  for (int i = 0; i < MANY; i++) ended += i % 7 == 3;
  gate_await(&live, MANY - ended);
  gate_await(&ending, ended);
  vmt_thread_t *self;
  assert_int_equal(vmt_thread_attach(NULL, &self), 0);
  /* Ended after the last start: their records stay in the snapshot, tombstoned. */
  gate_open(&ending);
  for (int i = 0; i < MANY; i++)
    if (i % 7 == 3) vmt_thread_join(t[i], NULL);
  /* Ascending with unknown ids between (ids are never reused: id + 1000000 is unknown). */
  enum { N = 2 * MANY + 8 };
  int64_t ids[N];
  size_t n = 0;
  for (int i = 0; i < MANY; i++) {
    ids[n++] = vmt_thread_id(t[i]);
    if (i % 40 == 0) ids[n++] = vmt_thread_id(t[i]) + 1000000;
  }
  ids[n++] = vmt_thread_id(self);
  int64_t order[3][N];
  size_t len[3] = {n, n, 0};
  for (size_t i = 0; i < n; i++) {
    order[0][i] = ids[i];
    order[1][n - 1 - i] = ids[i];   /* descending */
  }
  /* Shuffled, with duplicates and the calling thread in several chunks. */
  uint64_t rng = 42;
  for (size_t i = 0; i < n + 6; i++) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    order[2][len[2]++] = i % 50 == 0 ? vmt_thread_id(self) : ids[(rng >> 33) % n];
  }
  for (int o = 0; o < 3; o++) {
    int64_t cpu[N];
    assert_int_equal(vmt_mx_get_thread_cpu_time_array(order[o], len[o], cpu), 0);
    for (size_t i = 0; i < len[o]; i++) {
      int64_t one;
      assert_int_equal(vmt_mx_get_thread_cpu_time(order[o][i], &one), 0);
      if (one < 0) {
        assert_int_equal(cpu[i], -1);
      } else {
        assert_true(cpu[i] >= 0 && cpu[i] <= one);
      }
    }
    vmt_thread_info_t **infos;
    assert_int_equal(vmt_mx_get_thread_info_array(order[o], len[o], false, false, 0, &infos), 0);
    for (size_t i = 0; i < len[o]; i++) {
      int64_t one;
      assert_int_equal(vmt_mx_get_thread_cpu_time(order[o][i], &one), 0);
      assert_true((infos[i] != NULL) == (one >= 0));
      if (infos[i]) assert_int_equal(infos[i]->id, order[o][i]);
    }
    vmt_mx_thread_info_array_free(infos, len[o]);
  }
  assert_int_equal(vmt_thread_detach(), 0);
  gate_open(&live);
  for (int i = 0; i < MANY; i++) {
    if (i % 7 != 3) vmt_thread_join(t[i], NULL);
    vmt_thread_release(t[i]);
  }
  gate_destroy(&live);
  gate_destroy(&ending);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(invalid_ids_are_rejected_first),
      cmocka_unit_test(unknown_id_gives_minus_one),
      cmocka_unit_test(empty_array_gives_empty_result),
      cmocka_unit_test(finished_thread_gains_almost_no_cpu_while_waiting),
      cmocka_unit_test(disabled_measurement_gives_minus_one),
      cmocka_unit_test(current_thread_times_grow_and_user_stays_below_total),
      cmocka_unit_test(busy_thread_times_never_decrease_and_user_never_exceeds_cpu),
      cmocka_unit_test(array_forms_answer_per_element),
      cmocka_unit_test(sweeps_answer_every_order_as_single_queries_do),
  };
  return cmocka_run_group_tests_name("mx_cpu", tests, NULL, NULL);
}
