/*
 * test/clock_util.h: the tests' one clock reader: a kernel clock (CLOCK_MONOTONIC for deadlines
 * and elapsed time, CLOCK_THREAD_CPUTIME_ID for CPU time) in nanoseconds, read with a bare
 * clock_gettime and never through vmthread, so a test does not time itself with the code
 * under test.
 */
#ifndef VMT_TEST_CLOCK_UTIL_H
#define VMT_TEST_CLOCK_UTIL_H

#include <stdint.h>
#include <time.h>

static inline int64_t test_clock_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif /* VMT_TEST_CLOCK_UTIL_H */
