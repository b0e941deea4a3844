/*
 * vmthread/stack.h: a thread's stack as a VM needs it: its bounds (for a GC that scans stacks,
 * and for stack-depth checks), how many bytes the calling thread has left, and guard zones
 * below the usable stack whose overflow the VM turns into its language's StackOverflowError.
 * The contract, with what happens on attached threads, is in docs/thread-api.md ("Stacks").
 *
 * Bounds are exactly what pthread_getattr_np(3) reports for the thread: [lo, hi), the C
 * library's own guard page below lo excluded. They are asked once per thread and kept: by an
 * attached thread as it attaches, by a started thread when it (or anyone) first asks, or at its
 * start when it has guard zones (pthread_getattr_np allocates: a thread that never asks is not
 * made to set up the allocator's thread cache at start).
 */
#ifndef VMTHREAD_STACK_H
#define VMTHREAD_STACK_H

#include "vmthread/common.h"
#include "vmthread/thread.h"

VMT_EXTERN_C_BEGIN

typedef struct vmt_stack_info {
  uintptr_t lo;             /* lowest address of the stack (pthread_attr_getstack's addr) */
  uintptr_t hi;             /* one past the highest (addr + size) */
  size_t os_guard_size;     /* the C library's guard below lo (pthread_attr_getguardsize) */
  uintptr_t limit;          /* lowest address a frame may use: above the guard zones, else lo */
} vmt_stack_info_t;

/*
 * The stack of t (a runtime thread the caller holds a reference to, or the calling thread).
 * Errors: -EINVAL (NULL t or out), -ESRCH (a started thread that was joined before anyone
 * asked: its stack is gone), -errno from pthread_getattr_np (-ENOMEM).
 */
VMT_EXPORT int vmt_thread_stack_info(vmt_thread_t *t, vmt_stack_info_t *out);

/* The out-of-line half of vmt_stack_bytes_left: asks the bounds on the first call. */
VMT_EXPORT size_t vmt_stack_bytes_left_slow(void);

/*
 * Bytes between the calling thread's frame and its stack limit (vmt_stack_info_t.limit): 0 at
 * or below it. Inline: once the bounds are known, one TLS load, one load and one compare. A
 * thread that is not a runtime thread, or whose bounds cannot be asked, gets SIZE_MAX.
 */
static inline size_t vmt_stack_bytes_left(void) {
  vmt_thread_fast_t *f = vmt_thread_fast;
  uintptr_t limit = f ? __atomic_load_n(&f->stack_limit, __ATOMIC_RELAXED) : 0;
  if (__builtin_expect(limit == 0, 0)) return vmt_stack_bytes_left_slow();
  uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
  return sp > limit ? sp - limit : 0;
}

VMT_EXTERN_C_END

#endif /* VMTHREAD_STACK_H */
