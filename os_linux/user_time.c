/*
 * os_linux/user_time.c: user time that is consistent: never greater than the thread's total
 * (SCHED) time read after it, and one non-decreasing sequence per thread, whoever reads it.
 *
 * Raw CPUCLOCK_VIRT is tick sampled (4 ms at HZ=250) and, for a busy thread, often exceeds the
 * precise SCHED total read after it (test/user_time_linux_internal_test.c prints how often;
 * docs/cpu-time.md quotes runs). The kernel hides that in /proc, getrusage and
 * times() by scaling the tick samples to the precise runtime (kernel/sched/cputime.c,
 * cputime_adjust) and keeping the result monotonic. We do the same:
 * - the calling thread: getrusage(RUSAGE_THREAD)'s user time is that kernel-scaled value, in
 *   one syscall (us resolution, and split from the runtime the scheduler last accounted, which
 *   lags the SCHED clock by the slice in progress);
 * - another thread: total * VIRT / PROF (user ticks over user+system ticks), three syscalls,
 *   with the kernel's special cases (no system ticks: all user; no user ticks: none).
 *
 * DESIGN (one sequence). Each source alone is <= any total read after it; they differ from
 * each other by up to a few us (the truncation and the lag above), so a thread read in turn by
 * itself and by others would step back and forth. The record's floor (ot->user_time_floor_ns)
 * is the largest value handed out; every answer is at least the floor and raises it. A floor
 * only ever holds a value that was <= a total read before it was stored, so it is <= every
 * total read after it: answering the floor keeps "user <= total" without a clamp to this
 * call's own total, which is what went wrong before (the calling thread's answer was capped
 * by getrusage's truncated total, below a floor another reader had set from the precise clock:
 * test/clock_test.c, user_time_is_one_sequence_for_all_readers). Only when the floor is above
 * what this call read is a total read again (the pid-0 SCHED clock for the calling thread) to
 * check it, so a floor that no total supports (a bug elsewhere) is still never handed out.
 */
#include <errno.h>
#include <sys/resource.h>

#include "os_linux/os_impl.h"
#include "runtime/fault.h"

/* Answers max(user, floor), raising the floor to it. user <= *total on entry. When the floor is
 * above *total (a concurrent call read later, or the calling thread's source lags), a fresh
 * total is read with reread(ot) (-1 if it fails): the floor is answered if that total covers
 * it, else the fresh total, and the floor is left alone. *total ends as a total the answer is
 * <= (a ThreadInfo reports both). */
static int64_t settle(vmt_os_thread_t *ot, int64_t user, int64_t *total,
                      int64_t (*reread)(vmt_os_thread_t *)) {
  int64_t floor = atomic_load_explicit(&ot->user_time_floor_ns, memory_order_relaxed);
  bool checked = false;
  for (;;) {
    if (user < floor) user = floor;
    if (user > *total && !checked) {
      int64_t fresh = reread(ot);
      checked = true;
      if (fresh > *total) *total = fresh;
    }
    if (user > *total) return *total;   /* a floor no total supports: not handed out */
    if (user == floor) return user;
    if (atomic_compare_exchange_weak_explicit(&ot->user_time_floor_ns, &floor, user,
                                              memory_order_relaxed, memory_order_relaxed))
      return user;
  }
}

static int64_t reread_other(vmt_os_thread_t *ot) {
  static const int sched = VMT_OS_CPUCLOCK_SCHED;
  int64_t ns;
  return vmt_os__thread_clocks_read(ot, &sched, &ns, 1) == 0 ? ns : -1;
}

static int64_t reread_self(vmt_os_thread_t *ot) {
  (void)ot;
  return vmt_os_current_thread_cpu_time(false);
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
  if (total_ns != NULL) *total_ns = -1;
  if (!ok) return -1;
  int64_t virt = t3[0], prof = t3[1], total = t3[2];
  int64_t scaled;
  if (virt >= prof)
    scaled = total;   /* no system ticks (also: no ticks at all) */
  else if (virt <= 0)
    scaled = 0;       /* no user ticks */
  else
    scaled = (int64_t)((__int128)total * virt / prof);
  int64_t user = settle(ot, scaled, &total, reread_other);
  if (total_ns != NULL) *total_ns = total;
  return user;
}

int64_t vmt_os_current_thread_user_time_consistent(vmt_os_thread_t *ot) {
  struct rusage ru;
  if (vmt__fault_hit(VMT__FAULT_CLOCK) != 0 || getrusage(RUSAGE_THREAD, &ru) != 0) return -1;
  int64_t user = (int64_t)ru.ru_utime.tv_sec * 1000000000 + (int64_t)ru.ru_utime.tv_usec * 1000;
  if (ot == NULL) return user;
  /* getrusage's user + system is the runtime last accounted, truncated: <= the SCHED clock
   * (within 1 us when nothing is in progress: 2000 of 2000 samples here), never above it. */
  int64_t total = user + (int64_t)ru.ru_stime.tv_sec * 1000000000 +
                  (int64_t)ru.ru_stime.tv_usec * 1000;
  return settle(ot, user, &total, reread_self);
}
