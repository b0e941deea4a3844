/*
 * runtime/thread/thread_impl.h: what the files of the thread package share (options, the
 * allocation counters' begin and end, the exit bookkeeping, process-wide initialisation).
 * Hidden; nothing outside runtime/thread/ includes it, except tests of internals.
 */
#ifndef VMT_RUNTIME_THREAD_THREAD_IMPL_H
#define VMT_RUNTIME_THREAD_THREAD_IMPL_H

#if !defined(VMT_IN_THREAD) && !defined(VMT_TEST_OF_INTERNALS)
#error "this header is private to runtime/thread/ (runtime/thread/BUILD.bazel)"
#endif

#include "runtime/process.h"
#include "runtime/registry/registry.h"
#include "runtime/sync/sync.h"
#include "runtime/thread/thread.h"
#include "runtime/vmservices/vmservices.h"

/* ---- Options (options.c) --------------------------------------------------------------- */
/* Validates options (NULL = all defaults) into *out. 0 or -EINVAL. */
int vmt__options_resolve(const vmt_thread_options_t *options, vmt__thread_opts_t *out);
/* The stack size rule (docs/design.md): 0 stays 0; else rounded up to the page size and
 * clamped to [VMT__STACK_MIN_BYTES or the platform minimum if larger, VMT__STACK_MAX_BYTES]. */
#define VMT__STACK_MIN_BYTES ((size_t)64 * 1024)
#define VMT__STACK_MAX_BYTES ((size_t)1 << 30)
size_t vmt__stack_size_rule(size_t requested);
/* Bytes above the guard zones a thread must keep, at least (options.c, stack_guard.c). */
#define VMT__STACK_GUARD_MIN_USABLE ((size_t)64 * 1024)
/* True if s[0..len) is well-formed UTF-8 (no overlong forms, surrogates or > U+10FFFF). */
bool vmt__utf8_valid(const char *s, size_t len);

/* ---- Allocation counters (alloc.c) ------------------------------------------------------ */
/* Called by the owning thread at start/attach and exit/detach. */
void vmt__alloc_thread_begin(vmt_thread_t *t);
void vmt__alloc_thread_end(vmt_thread_t *t);

/* ---- Stacks (stack.c) ------------------------------------------------------------------- */
/* Asks the port for t's stack once (the calling thread's, or a started thread's not yet being
 * joined) and publishes it in t's cold block; 0, -ESRCH, -errno. */
int vmt__stack_bounds_ensure(vmt_thread_t *t);
/* Join is about to reap t's pthread (reaping: nobody asks it any more), or was cancelled
 * before it did (false again). */
void vmt__stack_mark_reaping(vmt_thread_t *t, bool reaping);

/* ---- Guard zones (stack_guard.c) ---------------------------------------------------------- */
/* On the new thread before its body: bounds, alternate stack, zones t->cold->guard asks for,
 * the process's handler. 0, or -errno with nothing left in place (the thread runs without
 * zones, and its stack info says so). */
int vmt__stack_guard_begin(vmt_thread_t *t);
/* On the thread at its end: the zones become plain stack again, the alternate stack goes. */
void vmt__stack_guard_end(vmt_thread_t *t);

/* ---- Start and exit hooks (hooks.c) ------------------------------------------------------ */
/* Runs the VM's start (start = true) or exit hooks for t, on t itself; none for internal
 * threads. */
void vmt__hooks_run(vmt_thread_t *t, bool start);
/* The calling thread is ending (exit.c, not at a detach): hook calls it is still inside were
 * unwound (a cancellation, a pthread_exit) and never return; count them finished. */
void vmt__hooks_unwound(void);

/* ---- TLS slots (tls.c) ------------------------------------------------------------------ */
/* The destructors of t's slots, then every slot cleared; run by t itself as it ends. */
void vmt__tls_thread_end(vmt_thread_t *t);

/* ---- Life cycle and process-wide state (access.c, exit.c) ------------------------------ */
/* Idempotent: port init, allocation-counter probe. */
void vmt__runtime_init(void);
/* The common exit bookkeeping of a started, internal or (last detach) attached thread, run by
 * the thread itself; drops the thread's own reference (exit.c). goes_on: a detach, after which
 * the thread runs on without a record; it keeps the locks it holds (t stays their owner,
 * silent) instead of releasing them, and t keeps the thread's reference until the thread
 * ends. */
void vmt__thread_finish(vmt_thread_t *t, bool goes_on);

#endif /* VMT_RUNTIME_THREAD_THREAD_IMPL_H */
