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
 *     Then the thread is exiting for the VM services (vmt__vms_thread_exiting: back in VM
 *     code, it waits there if suspended; from then no suspension takes, since it will reach
 *     no safe point it could stop at, HotSpot's _thread_exiting).
 *     Then the locks the thread still holds are released (vmt__monitor_thread_end): their
 *     waiters must not wait for a thread that is gone, nor for the next thread to reuse this
 *     record. A detach is no end: the thread may still be inside them, so it keeps them, and
 *     the record stays their owner, silent, until the thread ends (vmt__monitor_keep;
 *     docs/monitors.md).
 *  1. TERMINATED; then EXITED for the VM services (vmt__vms_thread_exit_end: what was queued
 *     meanwhile runs, later requests get -ESRCH); then out of the registry: in one step under
 *     the registry's writer lock the thread's CPU time (read there) joins its category's exited
 *     total and the port record is marked exiting, inside an odd exit sequence (a reader of the
 *     category's whole CPU time sees the thread live or exited, never both nor neither), and
 *     the live, daemon and category counts drop. The microseconds of the exit path after that
 *     are counted nowhere. A profiled thread then deletes its CPU timer (it reads `exiting`'s
 *     mark, then its profiler state: runtime/profiler/arm.c), while it still holds its own
 *     reference and its tid: no timer outlives its thread, and none ever names a recycled tid.
 *  2. Allocation counters folded into the exited total (alloc.c).
 *  3. `done` (release): the bookkeeping is complete; exit_event is set and the joiners that
 *     sleep on it (an interruptible or timed join, join.c) are woken. They then reap in
 *     pthread_join, which returns only after the thread's very end, so they see all of the
 *     above; no wake-up call is made when nobody sleeps there.
 *  4. The thread's own reference.
 */
#include <errno.h>

#include "runtime/thread/thread_impl.h"

void vmt__thread_finish(vmt_thread_t *t, bool goes_on) {
  int old_cancel;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old_cancel);
  t->finishing = true;   /* vmt_thread_exit from a hook or destructor below: -EPERM */
  /* An end (not a detach) may come from unwinding out of a start hook (it called
   * vmt_thread_exit, or was cancelled): that call never returned; count it out. A detach may
   * be called from a start hook that is still running: it will return. */
  if (!goes_on) vmt__hooks_unwound();
  vmt__vms_thread_exit_begin(t);
  (void)vmt__fault_hit(VMT__FAULT_THREAD_EXITING);   /* a hook point only */
  vmt__hooks_run(t, false);
  vmt__tls_thread_end(t);
  vmt__vms_thread_exiting(t);   /* no longer alive for suspension */
  bool kept = goes_on && vmt__monitor_keep(t);
  if (!kept) vmt__monitor_thread_end(t);
  vmt__thread_set_terminated(t);   /* and its hot cell unlisted */
  (void)vmt__fault_hit(VMT__FAULT_THREAD_TERMINATED);   /* a hook point only */
  vmt__vms_thread_exit_end(t);
  vmt__registry_remove(t, true);
  vmt__prof_thread_end(t);   /* the profiler's timer: after `exiting`, before the tid goes */
  vmt__alloc_thread_end(t);
  vmt__stack_guard_end(t);
  vmt__current_set(NULL);
  if (!kept) vmt__self = NULL;
  atomic_store_explicit(&t->done, 1, memory_order_release);
  /* Joiners asleep on exit_event (join.c) wake now, before the last steps of the exit. */
  atomic_fetch_or_explicit(&t->exit_event, VMT__EVENT_PERMIT, memory_order_seq_cst);
  if (atomic_load_explicit(&t->join_sleepers, memory_order_seq_cst) > 0)
    vmt_os_futex_wake(&t->exit_event, INT32_MAX);
  if (!kept) vmt__record_unref(t);   /* else the identity's, dropped at the thread's end */
  pthread_setcancelstate(old_cancel, NULL);
}

int vmt_thread_exit(void *result) {
  vmt_thread_t *t = vmt__current;
  /* On its way out already (an exit hook, a TLS destructor): a pthread_exit here would unwind
   * out of the bookkeeping, leaving the thread listed and its joiners waiting for good. */
  if (t == NULL || t->kind == VMT__KIND_ATTACHED || t->finishing) return -EPERM;
  t->cold->result = result;
  pthread_exit(result);
}
