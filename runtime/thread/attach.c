/*
 * runtime/thread/attach.c: foreign threads (the VM's main thread, a thread some library
 * created) joining and leaving the runtime, as JNI's AttachCurrentThread / DetachCurrentThread.
 *
 * An attached thread gets a record, an id, a name and a category, and counts as started and
 * live; attaching again nests (attach_count, touched only by the thread itself) and each attach
 * needs its detach. The kernel name is changed only when the caller passes a name: renaming the
 * main thread would rename the process in ps and top. A thread that ends while attached is
 * detached by the runtime's end hook (armed here, before anything is registered, so that an
 * attach that cannot arm it fails instead of leaving a dead thread listed), so the registry
 * never keeps a dead thread.
 *
 * Locks. The new record becomes the thread's lock identity and takes over the locks it held
 * before (an implicit identity's, or those a previous attach kept: runtime/sync/sync.h); a last
 * detach keeps the locks still held, since the thread may still be inside them.
 */
#include <errno.h>
#include <stdlib.h>

#include "runtime/thread/thread_impl.h"

static void detach_all(vmt_thread_t *t, bool goes_on) {
  t->attach_count = 0;
  vmt__thread_finish(t, goes_on);
}

/* The end hook's piece (runtime/registry/registry.h): a thread that ends attached leaves. */
static void attached_thread_end(void) {
  vmt_thread_t *t = vmt__current;
  if (t && t->kind == VMT__KIND_ATTACHED && t->attach_count > 0) detach_all(t, false);
}

int vmt_thread_attach(const vmt_thread_options_t *options, vmt_thread_t **out) {
  if (out == NULL) return -EINVAL;
  *out = NULL;
  vmt__thread_opts_t o;
  int rc = vmt__options_resolve(options, &o);
  if (rc) return rc;
  /* An attached thread's stack is its creator's (a JVM's threads have HotSpot's zones). */
  if (o.guard.red_size + o.guard.yellow_size + o.guard.reserved_size) return -EINVAL;
  vmt_thread_t *cur = vmt__current;
  if (cur != NULL) {
    if (cur->kind != VMT__KIND_ATTACHED) return -EINVAL;  /* a runtime thread already */
    /* Its last detach (or its end) is running our caller, an exit hook or TLS destructor: a
     * nested attach would count on a record that is leaving, and no detach could undo it. */
    if (cur->finishing) return -EINVAL;
    cur->attach_count++;
    *out = cur;
    return 0;
  }
  vmt__runtime_init();
  /* Both pieces: a thread that ends attached is detached, and one that detached still holding
   * locks releases them as it ends. */
  rc = vmt__thread_end_arm(VMT__END_ATTACHED, attached_thread_end);
  if (rc == 0) rc = vmt__identity_arm_end();
  if (rc) return rc;
  vmt_thread_t *t = vmt__record_alloc();
  if (t == NULL) return -ENOMEM;
  rc = vmt__record_init(t, &o, VMT__KIND_ATTACHED);
  if (rc) return rc;
  /* The thread's own reference and the registry's; users hold none until they retain. */
  atomic_store_explicit(&t->refs, 2, memory_order_relaxed);
  t->start_time_ns = vmt_os_java_time_nanos();
  t->cpu_at_begin_ns = vmt_os_current_thread_cpu_time(false);
  atomic_store_explicit(&t->state, VMT_THREAD_RUNNABLE, memory_order_relaxed);
  vmt_os_thread_bind_self(&t->os);
  rc = vmt__registry_insert(t);
  if (rc) {
    atomic_store_explicit(&t->refs, 1, memory_order_relaxed);
    vmt__record_unref(t);
    return rc;
  }
  /* A suspend-all in effect counts it in: it may run native code, and stops when it first
   * tries to enter managed code. */
  vmt__vms_thread_registered(t);
  if (o.name) vmt_os_set_native_name(t->os_name);
  /* Only when asked: the thread is the host's (its slack is the host's choice). */
  if (o.timer_slack_set && o.timer_slack_ns > 0) vmt_os_set_timer_slack(o.timer_slack_ns);
  vmt__alloc_thread_begin(t);
  t->attach_count = 1;
  vmt_thread_t *old = vmt__self;
  if (old != NULL) vmt__monitor_adopt(t, old);
  vmt__self = t;
  vmt__current_set(t);
  vmt__vms_thread_attached(t);   /* a safepoint it began while foreign stays its own */
  if (old != NULL) vmt__record_unref(old);   /* the old identity's thread reference */
  /* Now, while the thread is ours to ask (stack.c); a failure leaves the bounds unknown
   * (vmt_thread_stack_info then answers -ESRCH for another thread, and retries for this one). */
  vmt__stack_bounds_ensure(t);
  vmt__prof_thread_begin(t);
  vmt__registry_count(t);
  vmt__hooks_run(t, true);
  *out = t;
  return 0;
}

int vmt_thread_detach(void) {
  vmt_thread_t *t = vmt__current;
  if (t == NULL || t->kind != VMT__KIND_ATTACHED || t->attach_count <= 0) return -EINVAL;
  if (--t->attach_count > 0) return 0;
  detach_all(t, true);
  return 0;
}
