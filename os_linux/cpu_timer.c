/*
 * os_linux/cpu_timer.c: POSIX timers on one thread's CPU clock that signal that thread only
 * (timer_create with SIGEV_THREAD_ID, Linux 2.6+), and what a handler reads of their signals.
 * The profiler's sampling (runtime/profiler/) is built on them, as JDK 25's JFR CPU-time
 * sampler (JEP 509) and async-profiler's ctimer engine are.
 *
 * The clock is the thread's SCHED clock computed from the tid in the runtime's record, never
 * from a pthread_t. The kernel resolves both the clock's tid and the SIGEV_THREAD_ID target
 * when the timer is created and holds on to that task: a tid recycled later cannot inherit the
 * timer. What it cannot know is whether the tid still names the thread the record describes;
 * the caller guarantees that the thread has not begun to leave (runtime/profiler/arm.c).
 *
 * Overruns (measured here, HZ=250, docs/profiler.md): the kernel checks CPU timers at each
 * tick, so a 1 ms timer sends about one signal per 4 ms and si_overrun counts the rest; an
 * expiration while the signal is still queued is counted the same way.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>

#include "os_linux/os_impl.h"
#include "runtime/fault.h"

int vmt_os_cpu_timer_start(const vmt_os_thread_t *ot, int signo, int64_t period_ns, void *cookie,
                           vmt_os_cpu_timer_t *out, int64_t *cpu_ns) {
  if (ot == NULL || out == NULL || period_ns <= 0 || signo <= 0 || signo >= NSIG)
    return -EINVAL;
  out->created = false;
  pid_t tid = vmt_os_thread_tid(ot);
  if (tid == 0 || atomic_load_explicit(&((vmt_os_thread_t *)ot)->exiting, memory_order_seq_cst))
    return -ESRCH;
  int err = vmt__fault_hit(VMT__FAULT_TIMER);
  if (err) return err;
  struct sigevent ev;
  memset(&ev, 0, sizeof(ev));
  ev.sigev_notify = SIGEV_THREAD_ID;
  ev.sigev_signo = signo;
  ev.sigev_value.sival_ptr = cookie;
  ev._sigev_un._tid = tid;   /* glibc 2.36 has no sigev_notify_thread_id macro for it */
  timer_t handle;
  if (timer_create(vmt_os__thread_clock(tid, VMT_OS_CPUCLOCK_SCHED), &ev, &handle) != 0)
    return errno == EINVAL ? -ESRCH : -errno;   /* EINVAL: the clock's thread is gone */
  struct itimerspec its;
  its.it_interval.tv_sec = (time_t)(period_ns / 1000000000);
  its.it_interval.tv_nsec = (long)(period_ns % 1000000000);
  its.it_value = its.it_interval;
  if (timer_settime(handle, 0, &its, NULL) != 0) {
    int rc = -errno;
    timer_delete(handle);
    return rc;
  }
  out->handle = handle;
  out->created = true;
  if (cpu_ns) {
    if (vmt_os__thread_clocks_read(ot, (const int[]){VMT_OS_CPUCLOCK_SCHED}, cpu_ns, 1) != 0)
      *cpu_ns = -1;
  }
  return 0;
}

void vmt_os_cpu_timer_delete(vmt_os_cpu_timer_t *timer) {
  if (timer == NULL || !timer->created) return;
  timer_delete((timer_t)timer->handle);
  timer->created = false;
}

bool vmt_os_timer_signal(const siginfo_t *info, const void *ucontext, vmt_os_timer_signal_t *out) {
  if (info == NULL || info->si_code != SI_TIMER) return false;
  out->cookie = info->si_value.sival_ptr;
  out->overrun = info->si_overrun > 0 ? info->si_overrun : 0;
  out->pc = 0;
#if defined(__x86_64__)
  if (ucontext) out->pc = (uintptr_t)((const ucontext_t *)ucontext)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
  if (ucontext) out->pc = (uintptr_t)((const ucontext_t *)ucontext)->uc_mcontext.pc;
#endif
  return true;
}
