/*
 * os_linux/caps.c: vmt_os_init() and the capability record. HotSpot probes the thread CPU
 * clocks once at startup (os::Linux::fast_thread_clock_init, with clock_getres); so do we, for
 * each kind of clock the port uses, and the elapsed counter decides its source here too.
 * Nothing is assumed: a kind whose probe fails is reported unsupported and its reads go through
 * /proc instead (os_impl.h, vmt_os__proc_fallback).
 */
#include <errno.h>
#include <pthread.h>

#include "os_linux/os_impl.h"

static vmt_os_caps_t caps;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static _Atomic bool probed;   /* probe() has run: vmt_os_init's fast path */

static bool clock_works(clockid_t clock) {
  struct timespec ts;
  return clock_getres(clock, &ts) == 0 && clock_gettime(clock, &ts) == 0;
}

static void probe(void) {
  pid_t self = vmt_os_current_tid();
  /* Another thread's clocks are reached by tid: probe the calling thread's, by tid. */
  caps.thread_cpu_time = clock_works(vmt_os__thread_clock(self, VMT_OS_CPUCLOCK_SCHED));
  caps.current_thread_cpu_time = clock_works(vmt_os_current_cpu_clockid(false));
  caps.user_time = clock_works(vmt_os_current_cpu_clockid(true)) &&
                           clock_works(vmt_os__thread_clock(self, VMT_OS_CPUCLOCK_VIRT)) &&
                           clock_works(vmt_os__thread_clock(self, VMT_OS_CPUCLOCK_PROF));
  unsigned fallback = 0;
  if (!caps.thread_cpu_time) fallback |= VMT_OS__PROC_THREAD_TOTAL;
  if (!caps.user_time) fallback |= VMT_OS__PROC_THREAD_USER | VMT_OS__PROC_CURRENT_USER;
  if (!caps.current_thread_cpu_time) fallback |= VMT_OS__PROC_CURRENT_TOTAL;
  atomic_store_explicit(&vmt_os__proc_fallback, fallback, memory_order_relaxed);
  vmt_os__elapsed_init();
}

_Atomic unsigned vmt_os__proc_fallback;
VMT__PROCESS_STATE(caps, .symbols = "caps init_once probed vmt_os__proc_fallback",
                   .rule = VMT__FORK_KEEP,
                   .fork = "the probes' answers hold in the child: same kernel, same machine");

unsigned vmt_os__set_proc_fallback(unsigned mask) {
  vmt_os_init();
  return atomic_exchange_explicit(&vmt_os__proc_fallback, mask, memory_order_relaxed);
}

int vmt_os_init(void) {
  if (__builtin_expect(atomic_load_explicit(&probed, memory_order_acquire), 1)) return 0;
  /* The probe reads sysfs and sleeps (the elapsed counter's calibration), cancellation points
   * inside the first call of a process, which is none (docs/design.md, "Cancellation"): the
   * first start, attach, capability query or elapsed-time read of a cancelled thread never
   * returned (test/cancellation_test.c), and could leave the sysfs descriptor open. */
  int cancel;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
  int rc = pthread_once(&init_once, probe);
  pthread_setcancelstate(cancel, NULL);
  if (rc == 0) atomic_store_explicit(&probed, true, memory_order_release);
  return rc == 0 ? 0 : -rc;
}

const vmt_os_caps_t *vmt_os_caps(void) {
  vmt_os_init();
  return &caps;
}
