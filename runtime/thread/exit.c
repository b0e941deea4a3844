/*
 * runtime/thread/exit.c: the one exit path of a runtime thread (body returned, vmt_thread_exit,
 * or cancellation, all through the cleanup handler pushed in start.c) and of the last
 * detach of an attached thread.
 *
 * Order, and why:
 *  -. The thread moves into VM code (vmt__vms_thread_exit_begin): it runs its pending
 *     handshakes, and waits while suspended or while a safepoint holds, so that none of what
 *     follows happens under a safepoint or to a suspended thread.
 *  0. The VM's exit hooks (hooks.c, JVMTI's ThreadEnd), then the TLS slots' destructors
 *     (tls.c), on the thread itself while it is still current,
 *     RUNNABLE and listed, holding its locks: a destructor is VM code that may use the runtime.
 *     Then the locks the thread still holds are released (vmt__monitor_thread_end): their
 *     waiters must not wait for a thread that is gone, nor for the next thread to reuse this
 *     record. A detach is no end: the thread may still be inside them, so it keeps them, and
 *     the record stays their owner, silent, until the thread ends (vmt__monitor_keep;
 *     docs/monitors.md).
 *  1. CPU time of the thread, added to its category's exited total, then the port record is
 *     marked exiting. A category sum (exited total + live threads' clocks) may count the last
 *     microseconds twice for an instant, never miss them, and never goes backwards.
 *  2. TERMINATED; then EXITED for the VM services (vmt__vms_thread_exit_end: what was queued
 *     meanwhile runs, later requests get -ESRCH); then out of the registry: live/daemon/
 *     category counts drop here.
 *  3. Allocation counters folded into the exited total (alloc.c).
 *  4. `done` (release): the bookkeeping is complete. Joiners wait in pthread_join, which
 *     returns only after the thread's very end, so they see all of the above; the exiting
 *     thread makes no wake-up call of its own (join.c says why).
 *  5. The thread's own reference.
 */
#include <errno.h>

#include "runtime/thread/thread_impl.h"

void vmt__thread_finish(vmt_thread_t *t, bool goes_on) {
  int old_cancel;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old_cancel);
  vmt__vms_thread_exit_begin(t);
  (void)vmt__fault_hit(VMT__FAULT_THREAD_EXITING);   /* a hook point only */
  vmt__hooks_run(t, false);
  vmt__tls_thread_end(t);
  bool kept = goes_on && vmt__monitor_keep(t);
  if (!kept) vmt__monitor_thread_end(t);
  int64_t cpu = vmt_os_current_thread_cpu_time(false);
  if (cpu > t->cpu_at_begin_ns && t->kind != VMT__KIND_INTERNAL)
    atomic_fetch_add_explicit(&t->category->exited_cpu_ns, cpu - t->cpu_at_begin_ns,
                              memory_order_relaxed);
  vmt_os_thread_mark_exiting(&t->os);
  atomic_store_explicit(&t->state, VMT_THREAD_TERMINATED, memory_order_release);
  vmt__vms_thread_exit_end(t);
  vmt__registry_remove(t);
  vmt__alloc_thread_end(t);
  vmt__stack_guard_end(t);
  vmt__current_set(NULL);
  if (!kept) vmt__self = NULL;
  atomic_store_explicit(&t->done, 1, memory_order_release);
  if (!kept) vmt__record_unref(t);   /* else the identity's, dropped at the thread's end */
  pthread_setcancelstate(old_cancel, NULL);
}

int vmt_thread_exit(void *result) {
  vmt_thread_t *t = vmt__current;
  if (t == NULL || t->kind == VMT__KIND_ATTACHED) return -EPERM;
  t->result = result;
  pthread_exit(result);
}
