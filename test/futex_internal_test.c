/*
 * test/futex_internal_test.c: the port's futex (runtime/os.h), which every blocking call of
 * the monitor module rests on: value mismatch, absolute monotonic deadlines, wake-ups.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "runtime/os.h"
#include "test/clock_util.h"

static void mismatch_returns_eagain(void **state) {
  (void)state;
  _Atomic uint32_t word = 1;
  assert_int_equal(vmt_os_futex_wait(&word, 0, VMT_OS_NO_DEADLINE), -EAGAIN);
}

static void past_and_near_deadlines_time_out(void **state) {
  (void)state;
  _Atomic uint32_t word = 0;
  assert_int_equal(vmt_os_futex_wait(&word, 0, 0), -ETIMEDOUT);
  assert_int_equal(vmt_os_futex_wait(&word, 0, -5), -ETIMEDOUT);
  int64_t deadline = test_clock_ns(CLOCK_MONOTONIC) + 20 * 1000 * 1000;
  int rc;
  do rc = vmt_os_futex_wait(&word, 0, deadline); while (rc == 0 || rc == -EINTR);
  assert_int_equal(rc, -ETIMEDOUT);
  /* The deadline is absolute CLOCK_MONOTONIC: the kernel returned no earlier than it. */
  assert_true(test_clock_ns(CLOCK_MONOTONIC) >= deadline);
}

static void *waker(void *arg) {
  _Atomic uint32_t *word = arg;
  atomic_store(word, 1);
  vmt_os_futex_wake(word, INT32_MAX);
  return NULL;
}

static void wake_releases_a_waiter(void **state) {
  (void)state;
  _Atomic uint32_t word = 0;
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, waker, &word), 0);
  while (atomic_load(&word) == 0) {
    int rc = vmt_os_futex_wait(&word, 0, VMT_OS_NO_DEADLINE);
    assert_true(rc == 0 || rc == -EAGAIN || rc == -EINTR);
  }
  assert_int_equal(pthread_join(th, NULL), 0);
  /* Waking with nobody waiting, or a count of zero, is harmless. */
  vmt_os_futex_wake(&word, 1);
  vmt_os_futex_wake(&word, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(mismatch_returns_eagain),
      cmocka_unit_test(past_and_near_deadlines_time_out),
      cmocka_unit_test(wake_releases_a_waiter),
  };
  return cmocka_run_group_tests_name("futex_internal", tests, NULL, NULL);
}
