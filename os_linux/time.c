/*
 * os_linux/time.c: Java's System.nanoTime (CLOCK_MONOTONIC through the vDSO; its cost is in
 * docs/cpu-time.md), the base every other time source is calibrated against; the wall clock;
 * the calling thread's timer slack, which decides how late its timed waits wake.
 */
#include <errno.h>
#include <sys/prctl.h>

#include "os_linux/os_impl.h"

int64_t vmt_os_java_time_nanos(void) {
  struct timespec ts;
  /* CLOCK_MONOTONIC cannot fail with a valid pointer (clock_gettime(2)). */
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return vmt_os__ts_ns(&ts);
}

int64_t vmt_os_wall_time_nanos(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return vmt_os__ts_ns(&ts);
}

/* PR_SET_TIMERSLACK takes an unsigned long of ns; PR_GET_TIMERSLACK returns it (as an int:
 * prctl(2); a slack above INT_MAX ns reads truncated, and nobody sets one). */
int vmt_os_set_timer_slack(int64_t ns) {
  if (ns < 0) return -EINVAL;
  return prctl(PR_SET_TIMERSLACK, (unsigned long)ns, 0, 0, 0) == 0 ? 0 : -errno;
}

int64_t vmt_os_timer_slack(void) {
  int rc = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
  return rc >= 0 ? rc : -errno;
}
