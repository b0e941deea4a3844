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

/* The guard zones (vmt_stack_guard_t in vmthread/thread.h), in the order a growing stack
 * reaches them. */
typedef enum vmt_stack_zone {
  VMT_STACK_ZONE_NONE = 0,
  VMT_STACK_ZONE_RESERVED,   /* highest: reached first */
  VMT_STACK_ZONE_YELLOW,
  VMT_STACK_ZONE_RED,        /* lowest, just above the C library's guard page */
} vmt_stack_zone_t;

/* "reserved", "yellow", "red"; "none" for VMT_STACK_ZONE_NONE or a value outside the enum. */
VMT_EXPORT const char *vmt_stack_zone_name(vmt_stack_zone_t zone);

typedef struct vmt_stack_info {
  uintptr_t lo;             /* lowest address of the stack (pthread_attr_getstack's addr) */
  uintptr_t hi;             /* one past the highest (addr + size) */
  size_t os_guard_size;     /* the C library's guard below lo (pthread_attr_getguardsize) */
  uintptr_t limit;          /* lowest address a frame may use: above the guard zones, else lo */
  /* Guard zones in place (0 without): red [lo, lo + red), yellow above it, reserved above
   * that, up to limit. */
  size_t red_size, yellow_size, reserved_size;
  unsigned disabled_zones;  /* 1u << vmt_stack_zone_t of each zone opened after a hit */
} vmt_stack_info_t;

/*
 * The stack of t (a runtime thread the caller holds a reference to, or the calling thread).
 * Errors: -EINVAL (NULL t or out, a released handle), -ESRCH (a started thread that was joined before anyone
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

/* ---- Guard zones and overflow reports ------------------------------------------------------
 *
 * A started thread with VMT_THREAD_OPT_STACK_GUARD has its zones protected before its body
 * runs, and its own alternate signal stack. A frame that reaches a zone raises SIGSEGV; the
 * runtime's handler (installed when the first such thread starts; it passes every other fault
 * on to the handler it found, a JVM host's for one) runs on the alternate stack and:
 * - reserved or yellow zone: opens that zone (and, for yellow, the reserved one above it) so
 *   the thread has room to unwind, and calls the VM's handler. If the handler returns, the
 *   faulting instruction runs again, now in the open zone: the VM has redirected the thread
 *   (the ucontext) or marked a pending StackOverflowError. It may also siglongjmp out. The
 *   zones stay open until the thread calls vmt_stack_guard_reenable.
 * - red zone: calls the VM's handler with the red zone left protected; if the handler returns,
 *   the fault goes to the previous handler, or the default action (the process dies with
 *   SIGSEGV).
 * - without a handler set: writes a report to stderr (the thread id and the zone) and takes
 *   the previous handler's or the default action, leaving the zone protected.
 * The handler runs in signal context: async-signal-safe calls only.
 */
typedef struct vmt_stack_overflow {
  vmt_thread_t *thread;     /* the overflowing thread (the calling thread) */
  vmt_stack_zone_t zone;
  void *fault_address;      /* siginfo's si_addr */
  void *siginfo;            /* the signal's siginfo_t */
  void *ucontext;           /* its ucontext_t: the VM may redirect the interrupted PC */
} vmt_stack_overflow_t;
typedef void (*vmt_stack_overflow_fn)(const vmt_stack_overflow_t *event, void *ctx);

/* Process-wide; NULL removes it. Set it before starting threads with guard zones: a handler
 * replaced while an overflow is being reported may see the old ctx with the new fn. */
VMT_EXPORT void vmt_stack_overflow_handler_set(vmt_stack_overflow_fn fn, void *ctx);

/* Protects the calling thread's opened zones again (HotSpot's reguard_stack), once its frame is
 * at least a page above them: 0 (also when none was open), -EBUSY while the frame is still
 * within a page of them, -EPERM on a thread that is not a runtime thread, -errno from
 * mprotect. */
VMT_EXPORT int vmt_stack_guard_reenable(void);

VMT_EXTERN_C_END

#endif /* VMTHREAD_STACK_H */
