/*
 * os_linux/user_time.c: user time that is consistent: never greater than the thread's total
 * (SCHED) time read after it, and monotonic non-decreasing per thread.
 *
 * Raw CPUCLOCK_VIRT is tick sampled (4 ms at HZ=250) and, for a busy thread, often exceeds the
 * precise SCHED total read after it (test/user_time_linux_internal_test.c prints how often;
 * docs/cpu-time.md quotes runs). The kernel hides that in /proc, getrusage and
 * times() by scaling the tick samples to the precise runtime (kernel/sched/cputime.c,
 * cputime_adjust) and keeping the result monotonic. We do the same:
 * - the calling thread: getrusage(RUSAGE_THREAD) is that kernel-scaled value, in one syscall
 *   (us resolution);
 * - another thread: total * VIRT / PROF (user ticks over user+system ticks), three syscalls,
 *   with the kernel's special cases (no system ticks: all user; no user ticks: none).
 * Both clamp to the per-thread floor (ot->user_time_floor_ns, the largest value handed out)
 * and to the total, then raise the floor. The two sources scale differently, so the floor is
 * what keeps a thread read alternately by itself and by others monotonic.
 */
#include <errno.h>
#include <sys/resource.h>

#include "os_linux/os_impl.h"
#include "runtime/fault.h"

/* Clamps user to [floor, total] and raises the floor to the answer. A caller whose total was
 * read before a concurrent caller's larger floor was stored may still answer below that floor:
 * the calls overlapped, so no order was promised between them. */
static int64_t clamp_and_raise(vmt_os_thread_t *ot, int64_t user, int64_t total) {
  int64_t floor = atomic_load_explicit(&ot->user_time_floor_ns, memory_order_relaxed);
  if (user < floor) user = floor;
  if (user > total) user = total;
  while (user > floor &&
         !atomic_compare_exchange_weak_explicit(&ot->user_time_floor_ns, &floor, user,
                                                memory_order_relaxed, memory_order_relaxed)) {
  }
  return user;
}

int64_t vmt_os_thread_user_time_consistent(vmt_os_thread_t *ot, bool *success) {
  return vmt_os_thread_user_and_total_time(ot, NULL, success);
}

int64_t vmt_os_thread_user_and_total_time(vmt_os_thread_t *ot, int64_t *total_ns,
                                          bool *success) {
  /* Ticks first, total last: the total then covers every tick counted, so user <= total
   * before any clamping. */
  static const int types[3] = {VMT_OS_CPUCLOCK_VIRT, VMT_OS_CPUCLOCK_PROF,
                               VMT_OS_CPUCLOCK_SCHED};
  int64_t t3[3];
  bool ok = ot != NULL && vmt_os__thread_clocks_read(ot, types, t3, 3) == 0;
  if (success != NULL) *success = ok;
  if (total_ns != NULL) *total_ns = ok ? t3[2] : -1;
  if (!ok) return -1;
  int64_t virt = t3[0], prof = t3[1], total = t3[2];
  int64_t scaled;
  if (virt >= prof)
    scaled = total;   /* no system ticks (also: no ticks at all) */
  else if (virt <= 0)
    scaled = 0;       /* no user ticks */
  else
    scaled = (int64_t)((__int128)total * virt / prof);
  return clamp_and_raise(ot, scaled, total);
}

int64_t vmt_os_current_thread_user_time_consistent(vmt_os_thread_t *ot) {
  struct rusage ru;
  if (vmt__fault_hit(VMT__FAULT_CLOCK) != 0 || getrusage(RUSAGE_THREAD, &ru) != 0) return -1;
  int64_t user = (int64_t)ru.ru_utime.tv_sec * 1000000000 + (int64_t)ru.ru_utime.tv_usec * 1000;
  if (ot == NULL) return user;
  /* user + system is the SCHED total at the read (within 1 us: 2000 of 2000 samples here). */
  int64_t total = user + (int64_t)ru.ru_stime.tv_sec * 1000000000 +
                  (int64_t)ru.ru_stime.tv_usec * 1000;
  return clamp_and_raise(ot, user, total);
}
