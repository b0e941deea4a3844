/*
 * test/user_time_linux_internal_test.c: consistent user time (os_linux/user_time.c). Over 10^5
 * samples of a busy thread, read by another thread and by itself: user <= the total read after
 * it, and never decreasing. Also the shared floor, the kernel's special cases, and failures.
 * Internal API, Linux-specific.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/fault.h"
#include "runtime/os.h"

#define SAMPLES 100000

typedef struct busy {
  vmt_os_thread_t ot;
  _Atomic int stop;
  _Atomic int bound;
} busy_t;

/* Mixes user work with system calls so that both VIRT and PROF-VIRT ticks accumulate. */
static void *busy_main(void *arg) {
  busy_t *b = arg;
  vmt_os_thread_bind_self(&b->ot);
  atomic_store(&b->bound, 1);
  volatile uint64_t x = 0;
  while (!atomic_load_explicit(&b->stop, memory_order_relaxed)) {
    for (int i = 0; i < 20000; i++) x += (uint64_t)i;
    getppid();
  }
  /* The port contract: a thread marks itself exiting before it leaves. Only that makes a read
   * after pthread_join reliably -1: the kernel clears the tid for join before it releases the
   * task, so the clock of a joined thread can still answer for a moment (1 run in 10). */
  vmt_os_thread_mark_exiting(&b->ot);
  return NULL;
}

static void busy_start(busy_t *b, pthread_t *th) {
  memset(b, 0, sizeof(*b));
  assert_int_equal(pthread_create(th, NULL, busy_main, b), 0);
  while (!atomic_load(&b->bound)) usleep(100);
}

static int teardown(void **state) {
  (void)state;
  vmt__fault_disarm_all();
  return 0;
}

static void another_threads_user_time_is_consistent(void **state) {
  (void)state;
  busy_t b;
  pthread_t th;
  busy_start(&b, &th);
  int64_t last = 0;
  int raw_above_total = 0;
  for (int i = 0; i < SAMPLES; i++) {
    bool ok = false, ok_total = false, ok_raw = false;
    int64_t raw = vmt_os_thread_cpu_time(&b.ot, true, &ok_raw);
    int64_t user = vmt_os_thread_user_time_consistent(&b.ot, &ok);
    int64_t total = vmt_os_thread_cpu_time(&b.ot, false, &ok_total);
    assert_true(ok && ok_total && ok_raw);
    assert_true(user >= 0);
    assert_true(user <= total);
    assert_true(user >= last);
    last = user;
    if (raw > total) raw_above_total++;
    /* The pair form: its total is the one the user time was scaled from, read after the
     * ticks, so it covers them, and it is no older than the total read just before. */
    int64_t pair_total = -1;
    int64_t pair_user = vmt_os_thread_user_and_total_time(&b.ot, &pair_total, &ok);
    assert_true(ok);
    assert_true(pair_user >= user && pair_user <= pair_total && pair_total >= total);
    last = pair_user;
  }
  atomic_store(&b.stop, 1);
  pthread_join(th, NULL);
  /* Not asserted (it depends on the tick phase): how often the raw clock broke the rule. */
  printf("raw VIRT above the total it preceded: %d of %d samples\n", raw_above_total, SAMPLES);
}

typedef struct self_check {
  vmt_os_thread_t *ot;   /* NULL: no record */
  int violations;
} self_check_t;

static void *sample_self(void *arg) {
  self_check_t *s = arg;
  int64_t last = 0;
  for (int i = 0; i < SAMPLES; i++) {
    int64_t user = vmt_os_current_thread_user_time_consistent(s->ot);
    int64_t total = vmt_os_current_thread_cpu_time(false);
    if (user < 0 || user > total || user < last) s->violations++;
    last = user;
  }
  return NULL;
}

static void own_user_time_is_consistent_with_and_without_a_record(void **state) {
  (void)state;
  vmt_os_thread_t ot;
  memset(&ot, 0, sizeof(ot));
  self_check_t with = {&ot, 0}, without = {NULL, 0};
  pthread_t a, b;
  assert_int_equal(pthread_create(&a, NULL, sample_self, &with), 0);
  assert_int_equal(pthread_create(&b, NULL, sample_self, &without), 0);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  assert_int_equal(with.violations, 0);
  assert_int_equal(without.violations, 0);
  assert_true(atomic_load(&ot.user_time_floor_ns) > 0);
}

/* The thread reads itself (getrusage) while another reads it (scaling): the two scale
 * differently, and the shared floor keeps both sequences monotonic and <= total. */
typedef struct mixed {
  busy_t b;
  _Atomic int violations;
} mixed_t;

static void *mixed_self(void *arg) {
  mixed_t *m = arg;
  vmt_os_thread_bind_self(&m->b.ot);
  atomic_store(&m->b.bound, 1);
  int64_t last = 0;
  volatile uint64_t x = 0;
  for (int i = 0; i < SAMPLES / 2; i++) {
    for (int k = 0; k < 200; k++) x += (uint64_t)k;
    int64_t user = vmt_os_current_thread_user_time_consistent(&m->b.ot);
    int64_t total = vmt_os_current_thread_cpu_time(false);
    if (user < last || user > total) atomic_fetch_add(&m->violations, 1);
    last = user;
  }
  atomic_store(&m->b.stop, 1);
  return NULL;
}

static void self_and_other_readers_share_the_floor(void **state) {
  (void)state;
  mixed_t m;
  memset(&m, 0, sizeof(m));
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, mixed_self, &m), 0);
  while (!atomic_load(&m.b.bound)) usleep(100);
  int64_t last = 0;
  while (!atomic_load(&m.b.stop)) {
    bool ok = false, ok_total = false;
    int64_t user = vmt_os_thread_user_time_consistent(&m.b.ot, &ok);
    int64_t total = vmt_os_thread_cpu_time(&m.b.ot, false, &ok_total);
    if (!ok || !ok_total) break;
    assert_true(user <= total);
    assert_true(user >= last);
    last = user;
  }
  pthread_join(th, NULL);
  assert_int_equal(atomic_load(&m.violations), 0);
}

static void floor_is_honoured_but_never_above_total(void **state) {
  (void)state;
  busy_t b;
  pthread_t th;
  busy_start(&b, &th);
  bool ok = false;
  int64_t total = vmt_os_thread_cpu_time(&b.ot, false, &ok);
  assert_true(ok);
  /* A floor just below the total forces the answer up to it... */
  atomic_store(&b.ot.user_time_floor_ns, total - 1);
  int64_t user = vmt_os_thread_user_time_consistent(&b.ot, &ok);
  assert_true(ok);
  assert_true(user >= total - 1);
  /* ...and an impossible floor (above any total) is still clamped to the total. */
  atomic_store(&b.ot.user_time_floor_ns, INT64_MAX / 2);
  user = vmt_os_thread_user_time_consistent(&b.ot, &ok);
  int64_t total_after = vmt_os_thread_cpu_time(&b.ot, false, &ok);
  assert_true(user <= total_after);
  /* The pair form reports a total the answer does not exceed. */
  int64_t pair_total = -1;
  user = vmt_os_thread_user_and_total_time(&b.ot, &pair_total, &ok);
  assert_true(ok && user <= pair_total);
  atomic_store(&b.stop, 1);
  pthread_join(th, NULL);
}

/* The calling thread's path: a floor above getrusage's answer is handed out only when the
 * thread's own SCHED clock covers it. */
static void own_floor_is_honoured_but_never_above_total(void **state) {
  (void)state;
  vmt_os_thread_t ot;
  memset(&ot, 0, sizeof(ot));
  int64_t total = vmt_os_current_thread_cpu_time(false);
  atomic_store(&ot.user_time_floor_ns, total - 1);
  assert_true(vmt_os_current_thread_user_time_consistent(&ot) >= total - 1);
  atomic_store(&ot.user_time_floor_ns, INT64_MAX / 2);
  int64_t user = vmt_os_current_thread_user_time_consistent(&ot);
  assert_true(user >= 0 && user <= vmt_os_current_thread_cpu_time(false));
  /* Not raised by an answer it did not give. */
  assert_int_equal(atomic_load(&ot.user_time_floor_ns), INT64_MAX / 2);
}

static void failures_give_minus_one(void **state) {
  (void)state;
  busy_t b;
  pthread_t th;
  busy_start(&b, &th);
  /* Each of the three clock reads may fail. */
  for (int skip = 0; skip < 3; skip++) {
    vmt__fault_arm(VMT__FAULT_CLOCK, skip, 1, EIO);
    bool ok = true;
    assert_int_equal(vmt_os_thread_user_time_consistent(&b.ot, &ok), -1);
    assert_false(ok);
    vmt__fault_arm(VMT__FAULT_CLOCK, skip, 1, EIO);
    int64_t total = 0;
    assert_int_equal(vmt_os_thread_user_and_total_time(&b.ot, &total, &ok), -1);
    assert_false(ok);
    assert_int_equal(total, -1);
    vmt__fault_disarm_all();
  }
  vmt__fault_arm(VMT__FAULT_CLOCK, 0, 1, EIO);
  assert_int_equal(vmt_os_current_thread_user_time_consistent(NULL), -1);
  bool ok = true;
  assert_int_equal(vmt_os_thread_user_time_consistent(NULL, &ok), -1);
  assert_false(ok);
  atomic_store(&b.stop, 1);
  pthread_join(th, NULL);
  /* Exited: -1, with the caller's own time large by now. */
  ok = true;
  assert_int_equal(vmt_os_thread_user_time_consistent(&b.ot, &ok), -1);
  assert_false(ok);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(another_threads_user_time_is_consistent, teardown),
      cmocka_unit_test_teardown(own_user_time_is_consistent_with_and_without_a_record,
                                teardown),
      cmocka_unit_test_teardown(self_and_other_readers_share_the_floor, teardown),
      cmocka_unit_test_teardown(floor_is_honoured_but_never_above_total, teardown),
      cmocka_unit_test_teardown(own_floor_is_honoured_but_never_above_total, teardown),
      cmocka_unit_test_teardown(failures_give_minus_one, teardown),
  };
  return cmocka_run_group_tests_name("user_time_linux_internal", tests, NULL, NULL);
}
