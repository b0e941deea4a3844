/*
 * test/cpu_burn.h: burns CPU time of the calling thread, measured on the kernel's own clock
 * (CLOCK_THREAD_CPUTIME_ID, the pid-0 SCHED clock) rather than on vmthread's, so a test of
 * vmthread's clocks does not measure its workload with the code under test.
 */
#ifndef VMT_TEST_CPU_BURN_H
#define VMT_TEST_CPU_BURN_H

#include <stdint.h>
#include <time.h>

#include "test/clock_util.h"

/* Burns at least ns of the calling thread's CPU time (user time, almost all of it: the clock
 * is read once per 10000 steps, so it may run over by one such round, some microseconds). */
static inline void burn_cpu_ns(int64_t ns) {
  int64_t until = test_clock_ns(CLOCK_THREAD_CPUTIME_ID) + ns;
  volatile uint64_t x = 1;
  while (test_clock_ns(CLOCK_THREAD_CPUTIME_ID) < until)
    for (int i = 0; i < 10000; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
}

static inline void burn_cpu_ms(int ms) { burn_cpu_ns((int64_t)ms * 1000000); }

#endif /* VMT_TEST_CPU_BURN_H */
