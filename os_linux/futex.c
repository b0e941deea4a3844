/*
 * os_linux/futex.c: the port's futex (runtime/os.h), the only blocking primitive under the
 * runtime's monitors, park, sleep and join.
 *
 * FUTEX_WAIT_BITSET takes an *absolute* timeout on CLOCK_MONOTONIC (futex(2): the bitset
 * operations measure against CLOCK_MONOTONIC unless FUTEX_CLOCK_REALTIME is given), unlike
 * FUTEX_WAIT's relative one. A wait re-issued after EINTR or a spurious wake-up therefore
 * keeps the caller's deadline without recomputing anything. FUTEX_PRIVATE_FLAG skips the
 * mm-wide hash lookup: every word the runtime waits on is process-private. With
 * FUTEX_CLOCK_REALTIME the absolute timeout is on CLOCK_REALTIME, and the kernel re-arms it
 * when the wall clock is set (parkUntil's deadline, in wall time).
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime/os.h"

static int futex_wait(_Atomic uint32_t *word, uint32_t expected, int64_t deadline_ns,
                      int clock_flag) {
  struct timespec ts, *tsp = NULL;
  if (deadline_ns != VMT_OS_NO_DEADLINE) {
    if (deadline_ns < 0) deadline_ns = 0;
    ts.tv_sec = (time_t)(deadline_ns / 1000000000);
    ts.tv_nsec = (long)(deadline_ns % 1000000000);
    tsp = &ts;
  }
  long rc = syscall(SYS_futex, (uint32_t *)word,
                    FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG | clock_flag, expected, tsp, NULL,
                    FUTEX_BITSET_MATCH_ANY);
  if (rc == 0) return 0;
  switch (errno) {
    case EAGAIN:
    case ETIMEDOUT:
    case EINTR:
      return -errno;
    default:
      /* EFAULT/EINVAL/ENOSYS mean a programming error in the runtime (a bad word address):
       * report it as a wake-up; every caller re-checks its condition and the deadline. */
      return 0;
  }
}

int vmt_os_futex_wait(_Atomic uint32_t *word, uint32_t expected, int64_t deadline_ns) {
  return futex_wait(word, expected, deadline_ns, 0);
}

int vmt_os_futex_wait_realtime(_Atomic uint32_t *word, uint32_t expected, int64_t deadline_ns) {
  return futex_wait(word, expected, deadline_ns, FUTEX_CLOCK_REALTIME);
}

void vmt_os_futex_wake(_Atomic uint32_t *word, int32_t count) {
  if (count <= 0) return;
  syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, count, NULL, NULL, 0);
}

int vmt_os_futex_requeue(_Atomic uint32_t *from, uint32_t expected, _Atomic uint32_t *to,
                         int32_t count) {
  /* nr_requeue travels in the timeout argument's slot (futex(2)). */
  long rc = syscall(SYS_futex, (uint32_t *)from, FUTEX_CMP_REQUEUE | FUTEX_PRIVATE_FLAG, 0,
                    (void *)(uintptr_t)count, (uint32_t *)to, expected);
  return rc < 0 ? -errno : 0;
}
