/*
 * os_linux/time.c: Java's System.nanoTime (CLOCK_MONOTONIC through the vDSO; its cost is in
 * docs/cpu-time.md), the base every other time source is calibrated against.
 */
#include "os_linux/os_impl.h"

int64_t vmt_os_java_time_nanos(void) {
  struct timespec ts;
  /* CLOCK_MONOTONIC cannot fail with a valid pointer (clock_gettime(2)). */
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return vmt_os__ts_ns(&ts);
}
