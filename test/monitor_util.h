/*
 * test/monitor_util.h: what the monitor tests share: a 1 ms pause that is not a vmthread wait
 * (it must not move the counts under test), and polling with a generous deadline instead of
 * fixed sleeps, so a slow or loaded machine delays a test but never fails it, and the group
 * setup that attaches the main thread, and ThreadInfo polled until a thread reaches a state.
 * Include after <cmocka.h>.
 */
#ifndef VMT_TEST_MONITOR_UTIL_H
#define VMT_TEST_MONITOR_UTIL_H

#include <stdint.h>
#include <time.h>

#include "test/clock_util.h"
#include "vmthread.h"

#define MU_POLL_DEADLINE_NS (10LL * 1000 * 1000 * 1000)
#define MU_MS (1000LL * 1000)

static inline void mu_pause_1ms(void) {
  struct timespec ts = {0, 1000 * 1000};
  nanosleep(&ts, NULL);
}

/* Polls cond (an expression) every millisecond; fails the test after the deadline. */
#define MU_POLL_UNTIL(cond, what)                                                    \
  do {                                                                               \
    int64_t mu_deadline_ = test_clock_ns(CLOCK_MONOTONIC) + MU_POLL_DEADLINE_NS;     \
    while (!(cond)) {                                                                \
      if (test_clock_ns(CLOCK_MONOTONIC) > mu_deadline_)                             \
        fail_msg("timed out waiting for %s", what);                                  \
      mu_pause_1ms();                                                                \
    }                                                                                \
  } while (0)

/* ThreadInfo of id without a stack beyond depth (NULL for a dead id); the call must succeed. */
static inline vmt_thread_info_t *mu_info_of(int64_t id, int32_t depth) {
  vmt_thread_info_t *info = (vmt_thread_info_t *)1;
  assert_int_equal(vmt_mx_get_thread_info(id, depth, &info), 0);
  return info;
}

/* Java's "wait for the thread to transition to the expected state" (ThreadMXBeanStateTest's
 * getThreadInfo): polls ThreadInfo until it reports state, then returns that ThreadInfo, so the
 * lock fields checked next are from the same consistent read as the state. */
static inline vmt_thread_info_t *mu_await_info_state(int64_t id, vmt_thread_state_t state) {
  int64_t deadline = test_clock_ns(CLOCK_MONOTONIC) + MU_POLL_DEADLINE_NS;
  for (;;) {
    vmt_thread_info_t *info = mu_info_of(id, 0);
    if (info != NULL && info->state == state) return info;
    vmt_mx_thread_info_free(info);
    if (test_clock_ns(CLOCK_MONOTONIC) > deadline)
      fail_msg("thread %lld never reached %s", (long long)id, vmt_thread_state_name(state));
    mu_pause_1ms();
  }
}

/* Group setup and teardown for tests that run on the main thread attached as a vmthread (an
 * owner other threads can block on; vmt_thread_current() is that thread in every test). */
static inline int mu_attach_main(void **state) {
  (void)state;
  vmt_thread_t *self = NULL;
  return vmt_thread_attach(NULL, &self);
}

static inline int mu_detach_main(void **state) {
  (void)state;
  return vmt_thread_detach();
}

static inline vmt_thread_t *mu_start(vmt_thread_fn fn, void *arg) {
  vmt_thread_t *t = NULL;
  assert_int_equal(vmt_thread_start(&t, fn, arg), 0);
  return t;
}

static inline void *mu_join(vmt_thread_t *t) {
  void *result = NULL;
  assert_int_equal(vmt_thread_join(t, &result), 0);
  assert_int_equal(vmt_thread_release(t), 0);
  return result;
}

#endif /* VMT_TEST_MONITOR_UTIL_H */
