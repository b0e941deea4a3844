/*
 * vmthread/thread.h: the thread abstraction a language VM builds on.
 *
 * Life cycle of a thread started by the runtime (the full sequence is in docs/design.md):
 *
 *   NEW ──start──▶ RUNNABLE ◀──▶ BLOCKED / WAITING / TIMED_WAITING ──exit──▶ TERMINATED
 *
 * - vmt_thread_start_ex() registers the record (the thread counts as started and alive the
 *   moment it returns), calls pthread_create and returns; it never waits for the child. The
 *   kernel tid is known when start returns (vmt_thread_tid() never blocks on Linux).
 * - The child installs itself as the current thread, sets its OS name and runs the body. On
 *   the way out (return, vmt_thread_exit(), or cancellation) it becomes TERMINATED, leaves the
 *   registry, adds its CPU time and allocations to the totals, and only then wakes joiners.
 * - The record is reference counted: the creator holds one reference (returned by start) and
 *   the running thread holds one (the registry keeps one more while readers may see it).
 *   vmt_thread_release() drops the creator's; the record goes back to the runtime's pool when
 *   all are gone. Until then every accessor below is valid, even after termination. A handle
 *   whose thread has terminated and whose user references are all gone (released, not
 *   retained; an attached thread's after its last detach) is stale: every call below that
 *   answers -EINVAL for a released handle does so from the release on, not only once the
 *   runtime's own last reference has gone.
 *
 * Foreign threads (the VM's main thread, a thread of another library) join with
 * vmt_thread_attach() and leave with vmt_thread_detach().
 */
#ifndef VMTHREAD_THREAD_H
#define VMTHREAD_THREAD_H

#include <sys/types.h>

#include "vmthread/common.h"

VMT_EXTERN_C_BEGIN

typedef struct vmt_thread vmt_thread_t;

/* Java's Thread.State, in Java's order. VMT_THREAD_STATE_INVALID is what vmt_thread_state()
 * answers for a NULL handle; it also makes the enum signed, so the answer compares < 0. */
typedef enum vmt_thread_state {
  VMT_THREAD_STATE_INVALID = -1,
  VMT_THREAD_NEW = 0,
  VMT_THREAD_RUNNABLE,
  VMT_THREAD_BLOCKED,
  VMT_THREAD_WAITING,
  VMT_THREAD_TIMED_WAITING,
  VMT_THREAD_TERMINATED,
} vmt_thread_state_t;

/* "RUNNABLE", ...; "UNKNOWN" for VMT_THREAD_STATE_INVALID or a value outside the enum. */
VMT_EXPORT const char *vmt_thread_state_name(vmt_thread_state_t state);

typedef void *(*vmt_thread_fn)(void *arg);

/* Which fields of vmt_thread_options_t are set (libuv's uv_thread_options_t idiom). */
enum vmt_thread_option_flags {
  VMT_THREAD_OPT_NAME = 1u << 0,
  VMT_THREAD_OPT_CATEGORY = 1u << 1,
  VMT_THREAD_OPT_DAEMON = 1u << 2,
  VMT_THREAD_OPT_PRIORITY = 1u << 3,
  VMT_THREAD_OPT_STACK_SIZE = 1u << 4,
  VMT_THREAD_OPT_STACK_GUARD = 1u << 5,
  VMT_THREAD_OPT_TIMER_SLACK = 1u << 6,
};

/* Guard zones below a started thread's usable stack (HotSpot's model, vmthread/stack.h): from
 * the lowest address up, red, yellow, reserved. Each size is rounded up to whole pages; 0
 * leaves that zone out. A frame that reaches a zone makes the runtime report the overflow to
 * the VM's handler (vmt_stack_overflow_handler_set) on an alternate signal stack. */
typedef struct vmt_stack_guard {
  size_t red_size;        /* the last resort: reaching it is fatal unless the handler leaves */
  size_t yellow_size;     /* reported, then opened for the handler (StackOverflowError) */
  size_t reserved_size;   /* reported first, then opened (HotSpot's ReservedStackAccess) */
} vmt_stack_guard_t;

#define VMT_THREAD_NAME_MAX 4096     /* bytes of the full name, without the NUL */
#define VMT_THREAD_OS_NAME_MAX 15    /* bytes the kernel keeps (pthread_setname_np) */
#define VMT_THREAD_CATEGORY_MAX 63   /* bytes of a category name */
#define VMT_THREAD_MIN_PRIORITY 1    /* Java's Thread.MIN_PRIORITY */
#define VMT_THREAD_NORM_PRIORITY 5
#define VMT_THREAD_MAX_PRIORITY 10

typedef struct vmt_thread_options {
  unsigned flags;          /* VMT_THREAD_OPT_* saying which fields below are set */
  const char *name;        /* default "vmt-thread-<id>"; valid UTF-8, 1..VMT_THREAD_NAME_MAX */
  const char *category;    /* default "app"; [a-z0-9_-], 1..VMT_THREAD_CATEGORY_MAX bytes */
  bool daemon;             /* default false */
  int priority;            /* VMT_THREAD_MIN_PRIORITY..MAX; default NORM */
  size_t stack_size;       /* 0 = default; rounding and clamping rule in docs/design.md */
  /* Guard zones (VMT_THREAD_OPT_STACK_GUARD; started threads only, attach refuses them): the
   * zones and 64 KiB must fit in the stack, else -EINVAL. */
  vmt_stack_guard_t stack_guard;
  /* Timer slack (VMT_THREAD_OPT_TIMER_SLACK): how late the kernel may end the thread's timed
   * waits, in ns (PR_SET_TIMERSLACK), set by the thread itself as it starts or attaches.
   * 0 keeps what the thread inherits from its creator. Without the flag a started thread gets
   * the runtime's default (vmt_thread_default_timer_slack) and an attached one keeps its own.
   * -EINVAL for < 0 or above 1 s. */
  int64_t timer_slack_ns;
} vmt_thread_options_t;

/*
 * Starts a thread running fn(arg) with default options. On success *out holds the creator's
 * reference. Errors: -EINVAL (NULL out or fn, bad options), -EAGAIN / -ENOMEM (the OS refused;
 * nothing is left behind: no registry entry, no counter change, no leak).
 */
VMT_EXPORT int vmt_thread_start(vmt_thread_t **out, vmt_thread_fn fn, void *arg);
VMT_EXPORT int vmt_thread_start_ex(vmt_thread_t **out, const vmt_thread_options_t *options,
                                   vmt_thread_fn fn, void *arg);

/*
 * Waits until t has terminated and its bookkeeping (registry, counters, totals) is done, then
 * stores the body's result in *result (if result is not NULL): the body's return value, the
 * value passed to vmt_thread_exit(), or PTHREAD_CANCELED. Does not release t.
 * Like Java's Thread.join, a runtime thread's join is interruptible: -EINTR, its interrupt
 * status cleared, when it is interrupted while t is alive, also when the status was set
 * before the call (a terminated t is joined whatever the status, as Java's join returns for a
 * dead thread). The joiner is WAITING meanwhile and the join counts in its waited count.
 * Errors: -EINVAL (NULL, released or attached handle), -EDEADLK (t is the calling thread),
 * -EALREADY (t was joined before, or another thread is joining it now: unlike Java, one
 * joiner at a time; the result goes to that join if it succeeds, and if it ends without
 * joining, interrupted, timed out or cancelled, t may be joined again, so a refused joiner
 * cannot take -EALREADY to mean that t has ended), -EINTR (no join happened: t may be
 * joined again). A cancellation point: a joiner cancelled while it waits has not joined, and
 * t can be joined again (its result is kept). No lock is reported for the wait (Java names
 * the Thread object, which a native thread has not).
 */
VMT_EXPORT int vmt_thread_join(vmt_thread_t *t, void **result);
/* Thread.join(millis) in ns: the same, giving up after timeout_ns with -ETIMEDOUT (no join
 * happened: t may be joined again). timeout_ns <= 0 does not wait (0 if t has terminated,
 * else -EINTR or -ETIMEDOUT); VMT_TIMEOUT_INFINITE is vmt_thread_join. "Terminated", here and
 * in vmt_thread_join, is vmt_thread_state's TERMINATED: from then on a join succeeds, and it
 * waits for the microseconds of t's exit left (its bookkeeping) before it returns. Java's join(0) waits
 * forever: map it to vmt_thread_join. The joiner is TIMED_WAITING. */
VMT_EXPORT int vmt_thread_timed_join(vmt_thread_t *t, int64_t timeout_ns, void **result);

/*
 * Thread.interrupt: sets t's interrupt status and wakes t from sleep (vmt_sleep_ns), park
 * (vmt_park*) and join; Object.wait: see vmthread/monitor.h. Not a signal: a thread that does
 * not wait only finds its status set. A terminated t keeps it (Java's isInterrupted of a dead
 * thread). What each call does with the status, and with a timeout <= 0, is the table in
 * docs/thread-api.md. Monitor enter and the synchronizers' lock calls ignore it, as Java's
 * synchronized and Lock.lock() do. -EINVAL for NULL or a handle with no reference left.
 */
VMT_EXPORT int vmt_thread_interrupt(vmt_thread_t *t);
/* Thread.isInterrupted: t's status, unchanged. false for NULL or a released handle. */
VMT_EXPORT bool vmt_thread_is_interrupted(const vmt_thread_t *t);
/* Thread.interrupted: the calling thread's status, cleared. false on a thread that is not a
 * runtime thread (it cannot be interrupted). */
VMT_EXPORT bool vmt_thread_interrupted(void);

/* Takes one more reference (for code that keeps a thread beyond its creator). -EINVAL on NULL
 * or on a started thread whose references are all gone. An attached thread may be retained
 * while it is attached (attach itself hands out no reference). */
VMT_EXPORT int vmt_thread_retain(vmt_thread_t *t);

/*
 * Drops one reference. Releasing the creator's reference of a thread that is still running
 * detaches it: its record is freed when it ends. -EINVAL on NULL or a handle with no references
 * left. Records are never returned to malloc, so a stale handle is detected instead of
 * crashing, until its record is recycled for a new thread (docs/design.md, "References").
 */
VMT_EXPORT int vmt_thread_release(vmt_thread_t *t);

/* Ends the calling runtime thread with result; bookkeeping runs as on return. Only valid on a
 * thread started by vmt_thread_start*(); on any other thread it returns -EPERM, and so it does
 * on the thread's own way out (from its exit hooks and TLS destructors: the thread is ending
 * already, with the result it had). */
VMT_EXPORT int vmt_thread_exit(void *result);

/* The calling thread's record (started or attached), or NULL. One TLS load; no reference taken. */
VMT_EXPORT vmt_thread_t *vmt_thread_current(void);

/*
 * Not API: the calling thread's fast-path block, which the inline calls of vmthread/tls.h
 * (vmt_tls_get) and vmthread/stack.h (vmt_stack_bytes_left) read, so that they cost one
 * initial-exec TLS load and one load of the block. Its layout is part of the ABI; never write
 * it. vmt_thread_fast points into the calling thread's record while the thread is a runtime
 * thread (started or attached), and is NULL on any other thread. One pointer of static TLS,
 * next to the library's own (docs/embedding.md, "Loaded with dlopen").
 */
#define VMT_TLS_KEYS_MAX 64   /* TLS slots per thread; key 0 is never handed out */
typedef struct vmt_thread_fast {
  uintptr_t stack_limit;            /* lowest address a frame may use; 0 until known */
  void *tls[VMT_TLS_KEYS_MAX];      /* the thread's TLS slot values (vmthread/tls.h) */
} vmt_thread_fast_t;
VMT_EXPORT extern __thread vmt_thread_fast_t *vmt_thread_fast VMT_TLS_INITIAL_EXEC;

/*
 * Attaches the calling thread (the VM's main thread, a foreign library's thread). It gets an
 * id, a name, a category and counts as started and live while attached. Idempotent: attaching
 * an attached thread returns its record and counts one more attach (options are then checked
 * but not applied: bad ones still answer -EINVAL); each needs a matching detach. The kernel name changes only if options give a name
 * (else vmt_thread_os_name() is ""). A thread that ends while attached is detached. Locks the
 * thread already holds stay its own (now listed in its ThreadInfo under its new id).
 * Errors: -EINVAL (NULL out, bad options, the caller is a runtime-started thread, or it is
 * detaching: called from its exit hooks or TLS destructors at its last detach or end), -ENOMEM,
 * -EAGAIN (no per-thread exit hook left in the C library: docs/monitors.md, "Limits").
 */
VMT_EXPORT int vmt_thread_attach(const vmt_thread_options_t *options, vmt_thread_t **out);

/* Undoes one attach of the calling thread; the last one makes it TERMINATED and leaves the
 * registry. It releases no lock: the thread may still be inside them, and keeps them until it
 * exits them or ends. -EINVAL if the calling thread is not attached (including runtime-started
 * threads). */
VMT_EXPORT int vmt_thread_detach(void);

/*
 * Start and exit hooks (JVMTI's ThreadStart / ThreadEnd), run on the thread itself:
 * - on_start: a started thread's once it is current, in the registry and named, before its
 *   body, counted live (it may run before the creator's vmt_thread_start has returned: start
 *   never waits for the child); an attached thread's at its first attach, once it is current
 *   and counted, before attach returns.
 * - on_exit: first on the way out (return, vmt_thread_exit, cancellation, last detach, ending
 *   while attached), while the thread is still current, RUNNABLE, listed and holding its
 *   locks, before its TLS destructors.
 * Start hooks run in the order they were added, exit hooks in the reverse order. A thread that
 * started before a hook was added runs its on_exit (not its on_start). Internal threads run
 * none. Either function may be NULL, not both. Errors: add -EINVAL, -EAGAIN (all
 * VMT_THREAD_HOOKS_MAX slots in use); remove -ENOENT (no such triple), -EDEADLK (called from a
 * hook). remove waits for calls of that hook in progress on other threads, so ctx may be
 * freed once it returns.
 */
#define VMT_THREAD_HOOKS_MAX 8
typedef void (*vmt_thread_hook_fn)(vmt_thread_t *t, void *ctx);
VMT_EXPORT int vmt_thread_hooks_add(vmt_thread_hook_fn on_start, vmt_thread_hook_fn on_exit,
                                    void *ctx);
VMT_EXPORT int vmt_thread_hooks_remove(vmt_thread_hook_fn on_start, vmt_thread_hook_fn on_exit,
                                       void *ctx);

/*
 * Timer slack. The kernel may fire a thread's timers up to its slack late, to batch wake-ups;
 * Linux's default, 50 us, makes a 1 ms timed wait take 1,064-1,080 us (docs/thread-api.md),
 * so the runtime gives its started threads a smaller default, VMT_THREAD_TIMER_SLACK_DEFAULT_NS.
 * set_default changes it for threads started afterwards (0: they inherit their creator's);
 * set/get act on the calling thread, any thread (0 restores the slack it inherited at its
 * creation). Errors: -EINVAL (< 0, or above 1 s), -errno from prctl.
 */
#define VMT_THREAD_TIMER_SLACK_DEFAULT_NS 1000
#define VMT_THREAD_TIMER_SLACK_MAX_NS (1000LL * 1000 * 1000)
VMT_EXPORT int vmt_thread_set_default_timer_slack(int64_t ns);
VMT_EXPORT int64_t vmt_thread_default_timer_slack(void);
VMT_EXPORT int vmt_thread_set_timer_slack(int64_t ns);
VMT_EXPORT int64_t vmt_thread_timer_slack(void);   /* ns, or -errno */

/* Accessors: valid while the caller holds a reference. NULL t gives -1 / NULL / false. */
VMT_EXPORT int64_t vmt_thread_id(const vmt_thread_t *t);        /* Java id: > 0, never reused */
/* The full name. The string stays valid until t is renamed (vmt_thread_set_name) or released;
 * a thread that others may rename is read with vmt_thread_get_name. */
VMT_EXPORT const char *vmt_thread_name(const vmt_thread_t *t);
/* The name the kernel has (at most VMT_THREAD_OS_NAME_MAX bytes); changes only when the thread
 * renames itself. */
VMT_EXPORT const char *vmt_thread_os_name(const vmt_thread_t *t);
VMT_EXPORT const char *vmt_thread_category(const vmt_thread_t *t);
VMT_EXPORT bool vmt_thread_is_daemon(const vmt_thread_t *t);
/* Java priority as given; like HotSpot on Linux by default, the OS priority is not changed. */
VMT_EXPORT int vmt_thread_priority(const vmt_thread_t *t);

/*
 * Thread.setName: t's full name becomes a copy of name (valid UTF-8, 1..VMT_THREAD_NAME_MAX
 * bytes, as in the options), whatever t's state. The kernel name follows (its first 15 bytes,
 * cut at a character boundary) only when t is the calling thread and was started by the
 * runtime, as HotSpot does (JVM_SetNativeThreadName: the current thread only, never one
 * attached through JNI); a kernel that refuses leaves the old kernel name, and the call still
 * succeeds. Errors: -EINVAL (NULL t or name, a released handle, a name the options would
 * refuse), -ENOMEM (the old name stays).
 */
VMT_EXPORT int vmt_thread_set_name(vmt_thread_t *t, const char *name);
/* Copies t's full name into buf (snprintf's rule: truncated, always terminated when len > 0)
 * under the lock a rename takes; the length of the name. -EINVAL for NULL t, a released
 * handle, or a NULL buf with len > 0. */
VMT_EXPORT int vmt_thread_get_name(vmt_thread_t *t, char *buf, size_t len);
/* Thread.setPriority: stores VMT_THREAD_MIN_PRIORITY..MAX (the OS priority is not changed,
 * as above). -EINVAL for NULL t, a released handle or a priority out of range. */
VMT_EXPORT int vmt_thread_set_priority(vmt_thread_t *t, int priority);
VMT_EXPORT vmt_thread_state_t vmt_thread_state(const vmt_thread_t *t);

/*
 * The kernel thread id. Known when start returns (the kernel writes it before pthread_create
 * returns); on a platform where it is not, the call waits (acquire load, then futex) until the
 * child publishes it. -EINVAL on NULL or a released handle (its tid may belong to another
 * thread by then). A thread that has ended but is still referenced answers the tid it had, for
 * logs and dumps; the kernel may have given that number to another thread already, so it must
 * not be used to signal the thread or to read its /proc entries once vmt_thread_state says
 * TERMINATED.
 */
VMT_EXPORT pid_t vmt_thread_tid(vmt_thread_t *t);

VMT_EXTERN_C_END

#endif /* VMTHREAD_THREAD_H */
