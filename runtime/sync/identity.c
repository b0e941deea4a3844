/*
 * runtime/sync/identity.c: a thread's lock identity (sync.h, "Lock identity") when it is
 * neither started by the runtime nor attached: a record of kind IMPLICIT, made at its first
 * lock and given back at its end.
 *
 * Without one, the owner token of such a thread was the address of a thread-local anchor, and
 * glibc hands a dead thread's stack and TLS to the next thread of the same size: a monitor left
 * held by a dead foreign thread passed to an unrelated later one. A record is never shared by
 * two live threads, and the end hook (registry.h, "The end of a thread") releases what the
 * thread still holds before the record can be recycled. An implicit record is never in the
 * registry: it is not counted, not listed and has no id (Java's ThreadMXBean knows only Java
 * threads; jstack does not list threads that never attached). Its thread state, counts and
 * times are not kept (`silent`): nobody could read them.
 */
#include <errno.h>

#include "runtime/sync/sync_impl.h"

_Thread_local vmt_thread_t *vmt__self __attribute__((tls_model("initial-exec")));
VMT__PROCESS_STATE(lock_self, .symbols = "vmt__self", .rule = VMT__FORK_KEEP,
                   .fork = "the forking thread keeps its lock identity and the locks it holds "
                           "(lock.c marks the others' for takeover); a vanished thread's implicit "
                           "record is never given back in the child");
/* The end hook's piece: what the thread's identity (implicit, or kept after a last detach)
 * still holds is released, and the record goes back. */
static void identity_end(void) {
  vmt_thread_t *t = vmt__self;
  if (t == NULL) return;
  vmt__monitor_thread_end(t);
  vmt__self = NULL;
  vmt__record_unref(t);
}

int vmt__identity_make(vmt_thread_t **out) {
  *out = NULL;
  int rc = vmt__identity_arm_end();
  if (rc) return rc;
  vmt_thread_t *t = vmt__record_alloc();
  if (t == NULL) return -ENOMEM;
  t->kind = VMT__KIND_IMPLICIT;
  t->sync.silent = true;
  atomic_store_explicit(&t->refs, 1, memory_order_relaxed);   /* the thread's own */
  atomic_store_explicit(&t->state, VMT_THREAD_RUNNABLE, memory_order_relaxed);
  vmt__self = t;
  *out = t;
  return 0;
}

int vmt__identity_arm_end(void) { return vmt__thread_end_arm(VMT__END_LOCKS, identity_end); }
