/*
 * test/clock_test.c: the public CPU-time API (include/vmthread/clock.h) on runtime threads:
 * each kind on a live thread, a thread reading itself, an attached foreign thread until it
 * detaches, -1 for NULL and bad kinds, and -1 after termination while the caller burns CPU (so
 * answering with the caller's clock would show). Time sources: monotonic, and the
 * elapsed counter names its source. Public headers only.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "test/cpu_burn.h"
#include "vmthread.h"

typedef struct worker {
  _Atomic int stage;   /* 1: burned and parked; 2: may return */
  int burn_ms;
} worker_t;

static void *worker_main(void *arg) {
  worker_t *w = arg;
  burn_cpu_ms(w->burn_ms);
  atomic_store(&w->stage, 1);
  /* Parked, not polling: a 200 us poll wakes thousands of times while a loaded machine
   * stretches the caller's 40 ms burn, and gained 20 ms of CPU once (scripts/test). */
  while (atomic_load(&w->stage) != 2) vmt_park(0);
  return NULL;
}

static void live_thread_every_kind(void **state) {
  (void)state;
  worker_t w = {.burn_ms = 20};
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, worker_main, &w), 0);
  while (atomic_load(&w.stage) != 1) usleep(200);
  int64_t total = vmt_thread_cpu_time(t, VMT_CPU_TOTAL);
  assert_true(total >= 20 * 1000000);
  int64_t user = vmt_thread_cpu_time(t, VMT_CPU_USER);
  int64_t total_after = vmt_thread_cpu_time(t, VMT_CPU_TOTAL);
  assert_true(user >= 0 && user <= total_after);
  assert_true(vmt_thread_cpu_time(t, VMT_CPU_USER_FAST) >= 0);
  assert_int_equal(vmt_thread_cpu_time(t, (vmt_cpu_kind_t)42), -1);
  /* The parked worker does not gain the caller's CPU. */
  burn_cpu_ms(40);
  assert_true(vmt_thread_cpu_time(t, VMT_CPU_TOTAL) - total < 20 * 1000000);
  atomic_store(&w.stage, 2);
  vmt_unpark(t);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  /* Terminated: -1 for every kind, while the caller's own clock is large. */
  burn_cpu_ms(20);
  assert_int_equal(vmt_thread_cpu_time(t, VMT_CPU_TOTAL), -1);
  assert_int_equal(vmt_thread_cpu_time(t, VMT_CPU_USER), -1);
  assert_int_equal(vmt_thread_cpu_time(t, VMT_CPU_USER_FAST), -1);
  assert_int_equal(vmt_thread_release(t), 0);
}

static void *read_self(void *arg) {
  (void)arg;
  vmt_thread_t *self = vmt_thread_current();
  burn_cpu_ms(5);
  int64_t last = 0;
  for (int i = 0; i < 10000; i++) {
    int64_t user = vmt_thread_cpu_time(self, VMT_CPU_USER);
    int64_t cur_user = vmt_current_thread_cpu_time(VMT_CPU_USER);
    int64_t total = vmt_thread_cpu_time(self, VMT_CPU_TOTAL);
    if (user < last || user > total || cur_user < user || cur_user > total)
      return (void *)1;
    last = cur_user;
  }
  return NULL;
}

static void a_thread_reading_itself_is_consistent(void **state) {
  (void)state;
  vmt_thread_t *t;
  void *bad = (void *)2;
  assert_int_equal(vmt_thread_start(&t, read_self, NULL), 0);
  assert_int_equal(vmt_thread_join(t, &bad), 0);
  assert_null(bad);
  assert_int_equal(vmt_thread_release(t), 0);
}

/* A foreign thread that attaches is readable by others while attached, and reads -1 once
 * detached (it still runs: its tid is valid, but the record no longer describes it). */
typedef struct foreign {
  vmt_thread_t *t;
  _Atomic int stage;   /* 1 attached, 2 may detach, 3 detached, 4 may leave */
} foreign_t;

static void *foreign_main(void *arg) {
  foreign_t *f = arg;
  if (vmt_thread_attach(NULL, &f->t) != 0 || vmt_thread_retain(f->t) != 0) return (void *)1;
  burn_cpu_ms(10);
  atomic_store(&f->stage, 1);
  while (atomic_load(&f->stage) != 2) usleep(200);
  if (vmt_thread_detach() != 0) return (void *)1;
  atomic_store(&f->stage, 3);
  while (atomic_load(&f->stage) != 4) usleep(200);
  return NULL;
}

static void attached_thread_is_readable_until_it_detaches(void **state) {
  (void)state;
  foreign_t f = {0};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, foreign_main, &f), 0);
  while (atomic_load(&f.stage) != 1) usleep(200);
  assert_true(vmt_thread_cpu_time(f.t, VMT_CPU_TOTAL) >= 10 * 1000000);
  assert_true(vmt_thread_cpu_time(f.t, VMT_CPU_USER) >= 0);
  atomic_store(&f.stage, 2);
  while (atomic_load(&f.stage) != 3) usleep(200);
  burn_cpu_ms(20);
  assert_int_equal(vmt_thread_cpu_time(f.t, VMT_CPU_TOTAL), -1);
  assert_int_equal(vmt_thread_cpu_time(f.t, VMT_CPU_USER), -1);
  assert_int_equal(vmt_thread_cpu_time(f.t, VMT_CPU_USER_FAST), -1);
  atomic_store(&f.stage, 4);
  void *bad = (void *)2;
  assert_int_equal(pthread_join(th, &bad), 0);
  assert_null(bad);
  assert_int_equal(vmt_thread_release(f.t), 0);
}

static void null_and_bad_kinds(void **state) {
  (void)state;
  assert_int_equal(vmt_thread_cpu_time(NULL, VMT_CPU_TOTAL), -1);
  assert_int_equal(vmt_thread_cpu_time(NULL, VMT_CPU_USER), -1);
  assert_int_equal(vmt_current_thread_cpu_time((vmt_cpu_kind_t)-1), -1);
  assert_int_equal(vmt_current_thread_cpu_time((vmt_cpu_kind_t)3), -1);
}

static void current_thread_without_a_record(void **state) {
  (void)state;
  /* The test's main thread is not attached: the current-thread calls still work. */
  assert_null(vmt_thread_current());
  burn_cpu_ms(5);
  int64_t total = vmt_current_thread_cpu_time(VMT_CPU_TOTAL);
  int64_t user = vmt_current_thread_cpu_time(VMT_CPU_USER);
  int64_t total_after = vmt_current_thread_cpu_time(VMT_CPU_TOTAL);
  assert_true(total >= 5 * 1000000);
  assert_true(user >= 0 && user <= total_after);
  assert_true(vmt_current_thread_cpu_time(VMT_CPU_USER_FAST) >= 0);
}

static void time_sources(void **state) {
  (void)state;
  int64_t a = vmt_nanotime(), e = vmt_elapsed_nanos();
  usleep(1000);
  assert_true(vmt_nanotime() > a);
  assert_true(vmt_elapsed_nanos() > e);
  const char *src = vmt_elapsed_source();
  assert_true(strcmp(src, "tsc") == 0 || strcmp(src, "clock_monotonic") == 0);
  assert_non_null(vmt_elapsed_source_reason());
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(live_thread_every_kind),
      cmocka_unit_test(a_thread_reading_itself_is_consistent),
      cmocka_unit_test(attached_thread_is_readable_until_it_detaches),
      cmocka_unit_test(null_and_bad_kinds),
      cmocka_unit_test(current_thread_without_a_record),
      cmocka_unit_test(time_sources),
  };
  return cmocka_run_group_tests_name("clock", tests, NULL, NULL);
}
