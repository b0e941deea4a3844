/*
 * runtime/thread/clock.c: the public CPU-time and time-source API (include/vmthread/clock.h)
 * over the port (runtime/os.h). The validation that matters lives here and below: a thread is read
 * through its own record (its published tid and exiting flag, and its state), never through a
 * pthread_t, so an exited thread answers -1 and never the caller's or a tid-recycler's time.
 */
#include "runtime/thread/thread_impl.h"

/* The record of a thread whose time may be read: started (tid published) and not over. */
static bool readable(const vmt_thread_t *t) {
  if (t == NULL || t->magic != VMT__THREAD_MAGIC) return false;
  int state = atomic_load_explicit(&((vmt_thread_t *)t)->state, memory_order_acquire);
  return state != VMT_THREAD_NEW && state != VMT_THREAD_TERMINATED;
}

int64_t vmt_thread_cpu_time(vmt_thread_t *t, vmt_cpu_kind_t kind) {
  if (!readable(t)) return -1;
  /* The calling thread cannot exit under us: the pid-0 ids, no pid lookup. Recognised by its
   * record (one TLS load), as runtime/management/cpu.c does, not by comparing tids. */
  if (t == vmt__current) return vmt_current_thread_cpu_time(kind);
  /* The port answers -1 whenever its success flag would be false. */
  switch (kind) {
    case VMT_CPU_TOTAL: return vmt_os_thread_cpu_time(&t->os, false, NULL);
    case VMT_CPU_USER_FAST: return vmt_os_thread_cpu_time(&t->os, true, NULL);
    case VMT_CPU_USER: return vmt_os_thread_user_time_consistent(&t->os, NULL);
    default: return -1;
  }
}

int64_t vmt_current_thread_cpu_time(vmt_cpu_kind_t kind) {
  switch (kind) {
    case VMT_CPU_TOTAL: return vmt_os_current_thread_cpu_time(false);
    case VMT_CPU_USER_FAST: return vmt_os_current_thread_cpu_time(true);
    case VMT_CPU_USER: {
      /* A runtime thread's floor is shared with other threads reading it, which scale
       * differently (os.h): honouring it keeps every reader's answers monotonic. */
      vmt_thread_t *self = vmt__current;
      return vmt_os_current_thread_user_time_consistent(self ? &self->os : NULL);
    }
    default: return -1;
  }
}

int64_t vmt_nanotime(void) { return vmt_os_java_time_nanos(); }
int64_t vmt_elapsed_nanos(void) { return vmt_os_elapsed_nanos(); }
const char *vmt_elapsed_source(void) { return vmt_os_elapsed_source(); }
const char *vmt_elapsed_source_reason(void) { return vmt_os_elapsed_source_reason(); }
