/*
 * vmthread/vmservices.h: what a garbage-collected VM needs to act on its threads, not only to
 * observe them: execution states, safe regions, a thread-local poll, handshakes, global
 * safepoints and suspension (HotSpot's SafepointMechanism, Handshake, SafepointSynchronize and
 * JVMTI suspension; ART's thread states, checkpoints and SuspendAll). docs/vm-services.md has
 * the model, the rules and the costs.
 *
 * Execution states. Every runtime thread (started or attached) is in one of:
 *
 *   NATIVE   outside managed code (safe). Every thread starts here, started or attached, like
 *            a JNI thread outside the VM: a thread that never enters managed code never holds
 *            up a safepoint or a handshake.
 *   MANAGED  running the VM's managed code (unsafe): it must call vmt_poll() often (loop
 *            back-edges, method entries), as compiled Java code does.
 *   VM       in the VM's runtime code, touching managed state without polling (unsafe); it
 *            reaches a safe point at its next transition or poll.
 *   BLOCKED  in a blocking call (safe): the runtime's own (contended monitor enter, wait,
 *            park, sleep, synchronizer waits, join, vmt_mx_set_stack_walker's wait for the
 *            management calls in progress) are safe regions by themselves, and a host
 *            brackets its own with vmt_exec_enter(VMT_EXEC_BLOCKED) and back.
 *   EXITED   the thread has left (safe; operations on it fail with -ESRCH).
 *
 * A thread in a safe state may keep running (native code, a system call) but may not leave
 * it while a safepoint is in progress, while a handshake is being run on its behalf, or while
 * it is suspended: leaving waits. Entering an unsafe state, or any transition out of one, is
 * also a poll: pending handshakes run then. Threads that are neither started nor attached
 * (foreign threads) take no part: they are never stopped and never waited for.
 *
 * Who may call what: transitions and vmt_poll() only on the calling thread; requests
 * (handshakes, safepoints, suspension) from any thread, runtime or foreign, in any state; the
 * waiting requester is itself in a safe state while it waits, so two threads asking each other
 * never deadlock. Every wait has a timeout (0 = none), and a timed-out request names the
 * thread it waited for (vmt_straggler_t). Nothing here is async-signal-safe except vmt_poll()'s
 * fast path and vmt_exec_state().
 */
#ifndef VMTHREAD_VMSERVICES_H
#define VMTHREAD_VMSERVICES_H

#include "vmthread/common.h"
#include "vmthread/thread.h"

VMT_EXTERN_C_BEGIN

/* ---- Execution states ------------------------------------------------------------------- */
typedef enum vmt_exec_state {
  VMT_EXEC_NATIVE = 0,
  VMT_EXEC_MANAGED = 1,
  VMT_EXEC_VM = 2,
  VMT_EXEC_BLOCKED = 3,
  VMT_EXEC_EXITED = 4,
} vmt_exec_state_t;

/* t's execution state (one atomic load: racy by nature unless t is held), -EINVAL for NULL or
 * a released handle. Async-signal-safe. */
VMT_EXPORT int vmt_exec_state(const vmt_thread_t *t);
/* "NATIVE", "MANAGED", "VM", "BLOCKED", "EXITED"; "UNKNOWN" otherwise. */
VMT_EXPORT const char *vmt_exec_state_name(vmt_exec_state_t state);

/* Moves the calling thread to `to` (NATIVE, MANAGED, VM or BLOCKED) and returns the state it
 * left, so that a bracket restores it: `int prev = vmt_exec_enter(VMT_EXEC_BLOCKED); read(...);
 * vmt_exec_enter(prev);`. Into an unsafe state from a safe one it waits first while a
 * safepoint is in progress, a handshake runs on its behalf or it is suspended; every
 * transition from an unsafe state runs the thread's pending handshakes first. Cost: one
 * compare-and-swap (and, into an unsafe state, one load of the safepoint word); the slow path
 * only when something is pending. Errors: -EPERM (not a runtime thread), -EINVAL (to is
 * EXITED or out of range). */
VMT_EXPORT int vmt_exec_enter(vmt_exec_state_t to);

/* ---- The poll --------------------------------------------------------------------------- *
 * The poll word is the first 32-bit word after the record's magic: VMT_POLL_OFFSET bytes into
 * the thread handle, a stable part of the ABI (the library checks it at build time). A JIT
 * keeps the thread handle in a register and emits `test dword [thread + VMT_POLL_OFFSET],
 * VMT_POLL_MASK; jnz slow` with a call to vmt_poll_slow(thread) on the slow side, exactly what
 * vmt_poll() compiles to: one load, one test, one predicted branch. The word is armed by
 * requesters (an atomic OR) and disarmed only by the thread itself (or on its behalf while it
 * is safe). Polling in a safe state returns at once: the poll is for unsafe code. */
#define VMT_POLL_OFFSET 4
#define VMT_POLL_MASK 0x700u

/* Runs what is pending for the calling thread `self`: handshake operations, a safepoint (it
 * waits in BLOCKED until the end), a suspension (it waits until resumed). A `self` other than
 * the calling thread's handle is ignored. */
VMT_EXPORT void vmt_poll_slow(vmt_thread_t *self);

/* Whether anything is pending for t (any thread may ask; t must be held). */
static inline bool vmt_poll_armed(const vmt_thread_t *t) {
  return (__atomic_load_n((const uint32_t *)((const char *)t + VMT_POLL_OFFSET),
                          __ATOMIC_ACQUIRE) &
          VMT_POLL_MASK) != 0;
}

static inline void vmt_poll(vmt_thread_t *self) {
  uint32_t w = __atomic_load_n((const uint32_t *)((const char *)self + VMT_POLL_OFFSET),
                               __ATOMIC_RELAXED);
  if (__builtin_expect((w & VMT_POLL_MASK) != 0, 0)) vmt_poll_slow(self);
}

/* The address of t's poll word (for a JIT that wants it absolute), NULL for a bad handle.
 * Read it with an atomic load (a plain 32-bit load in machine code). */
VMT_EXPORT const uint32_t *vmt_poll_word(vmt_thread_t *t);

/* ---- Stragglers -------------------------------------------------------------------------- *
 * A request that times out (-ETIMEDOUT) names the thread it was still waiting for: a thread in
 * managed or VM code that neither polled nor changed state in time. */
typedef struct vmt_straggler {
  int64_t thread_id;        /* 0 when the request did not time out */
  int exec_state;           /* its vmt_exec_state_t when the wait gave up */
  /* Time since it was last seen at a slow-path safe point (a poll that found work, a
   * transition that waited or ran operations), -1 if never. Fast polls and fast transitions
   * leave no trace: this is an upper bound of how long it has not been stoppable, never a
   * lower one. */
  int64_t since_safe_ns;
  int64_t waited_ns;        /* how long the request waited for it */
} vmt_straggler_t;

/* ---- Handshakes ------------------------------------------------------------------------- *
 * fn(target, arg) runs exactly once with the target at a safe point: by the target itself at
 * its next poll or transition when it runs managed or VM code, or by the requester on its
 * behalf while the target is in a safe state (the target cannot leave that state until fn
 * returns: its stack, its held monitors and its state stay as they are). fn must be short, must
 * not wait for the target, and must not begin a safepoint or another handshake; it may
 * allocate. It runs with cancellation disabled, wherever it runs (a cancellation pending on
 * that thread is acted upon at its next cancellation point after fn). */
typedef void (*vmt_handshake_fn)(vmt_thread_t *target, void *arg);

typedef struct vmt_handshake_result {
  /* Single target: whether the target ran fn itself (else the requester did). All threads: how
   * many ran it themselves, and how many the requester ran on their behalf. */
  bool by_target;
  int32_t by_targets;
  int32_t by_requester;
  vmt_straggler_t straggler;   /* on -ETIMEDOUT */
} vmt_handshake_result_t;

/*
 * Runs fn for target and returns when it has run. The requester waits in a safe state: a
 * short bounded spin (a target on another CPU answers within it), then a futex, never a fixed
 * sleep. timeout_ns: 0 waits for as long as it takes, > 0 gives -ETIMEDOUT after that long,
 * with fn not run and never to run (an fn already running is waited for: then 0). target may
 * be the calling thread: fn runs at once. result may be NULL. Errors: -EINVAL (NULL target or
 * fn, a released handle, timeout_ns < 0), -ESRCH (the target has exited or exits before it
 * runs fn), -ETIMEDOUT.
 */
VMT_EXPORT int vmt_handshake_run(vmt_thread_t *target, vmt_handshake_fn fn, void *arg,
                                 int64_t timeout_ns, vmt_handshake_result_t *result);
/* Queues fn for target to run itself, at its next poll or transition out of an unsafe state,
 * or as it leaves a safe state, or at the latest as it exits (so it runs exactly once as long
 * as the target ever does one of these; a target that stays in native code forever never runs
 * it). Returns at once. Errors: -EINVAL, -ESRCH (exited), -ENOMEM. */
VMT_EXPORT int vmt_handshake_post(vmt_thread_t *target, vmt_handshake_fn fn, void *arg);
/* fn for every started and attached thread alive at the call (the calling thread included,
 * run at once), each at its own safe point; returns when all have run. Threads that exit
 * before they run it are skipped. Errors: -EINVAL, -ETIMEDOUT (those that had not run it by
 * then never will; the straggler is one of them), -ENOMEM. */
VMT_EXPORT int vmt_handshake_run_all(vmt_handshake_fn fn, void *arg, int64_t timeout_ns,
                                     vmt_handshake_result_t *result);

/* ---- Global safepoints ------------------------------------------------------------------ *
 * vmt_safepoint_begin returns with every other runtime thread stopped at a poll or in a safe
 * state, and none leaves a safe state until vmt_safepoint_end (its caller excepted, which is
 * itself BLOCKED in between, so a VM thread can begin one from managed code). Idle threads are
 * never touched: the coordinator reads their state once; only threads in managed or VM code are
 * armed and waited for, counted down with one atomic and woken by one futex. One safepoint at a
 * time (a second begin waits, safe, for the first to end); handshakes on behalf of safe
 * threads are held off during one, except the coordinator's own.
 */
typedef struct vmt_safepoint_stats {
  uint64_t id;                      /* 1, 2, ...: safepoints begun in this process */
  int64_t time_to_safepoint_ns;     /* from the call to all threads stopped */
  int64_t time_at_safepoint_ns;     /* from then to vmt_safepoint_end (filled by end) */
  int32_t threads;                  /* runtime threads examined, the coordinator excluded */
  int32_t running;                  /* of which were in managed or VM code and had to stop */
  int64_t last_thread_id;           /* the last of those to arrive, 0 if none */
  vmt_straggler_t straggler;        /* on -ETIMEDOUT */
} vmt_safepoint_stats_t;

/* 0 once at the safepoint; -ETIMEDOUT (nothing stays stopped; stats->straggler names a thread
 * that had not arrived, or the safe thread whose handshake operation a requester was still
 * running on its behalf (the begin waits for those first), or the coordinator of another
 * safepoint that held for the whole timeout, thread_id 0 if that one is foreign), -EDEADLK (the caller is already the
 * coordinator, or is inside a handshake operation: one the requester or its target is waiting
 * for, which no safepoint could wait out), -EINVAL (timeout_ns < 0), -ENOMEM, -EAGAIN (a foreign caller whose end could
 * not be hooked, below). stats may be NULL. */
VMT_EXPORT int vmt_safepoint_begin(int64_t timeout_ns, vmt_safepoint_stats_t *stats);
/* Releases every thread with one broadcast; stats (may be NULL) gets time_at_safepoint_ns.
 * -EPERM unless the caller began the safepoint in progress. A coordinator that exits (or
 * detaches) with its safepoint held ends it as it goes (one begun in its own exit hooks or TLS
 * destructors too, after them), a foreign one included (begin hooks
 * its end); one that attaches keeps it and ends it as the attached thread. */
VMT_EXPORT int vmt_safepoint_end(vmt_safepoint_stats_t *stats);
/* True while a safepoint is being reached or held (any thread may ask). */
VMT_EXPORT bool vmt_safepoint_in_progress(void);

/* ---- Suspension ------------------------------------------------------------------------- *
 * Counted per reason (ART's suspend counts; JVMTI's SuspendThread is the debugger's reason):
 * a thread is suspended while any count is > 0, and then cannot leave a safe state; suspend
 * returns once the target is safe and will stay so. A thread that is itself suspended (it runs
 * on only in native code) cannot suspend another: -EDEADLK, which rules out two threads
 * suspending each other. */
typedef enum vmt_suspend_reason {
  VMT_SUSPEND_VM = 0,        /* the VM's own (a GC, a deoptimisation) */
  VMT_SUSPEND_DEBUGGER = 1,  /* JVMTI SuspendThread and the like */
  VMT_SUSPEND_USER = 2,      /* Thread.suspend */
  VMT_SUSPEND_REASON_COUNT = 3,
} vmt_suspend_reason_t;

/* Adds one to t's count for reason and returns when t is safe (at once for a thread already
 * in a safe state; after its next poll or transition for one in managed or VM code). t may be
 * the caller: it then waits until resumed (from native code it goes on, and stops when it
 * next tries to enter managed code). straggler may be NULL. Errors: -EINVAL (NULL or released
 * handle, reason out of range, timeout_ns < 0), -EDEADLK (the caller is suspended), -ESRCH
 * (not alive: exited, or exiting, i.e. past its exit hooks and TLS destructors, where it
 * reaches no point it could stop at; no count is left then, JVMTI's THREAD_NOT_ALIVE),
 * -ETIMEDOUT (the count is taken back), -EOVERFLOW (the count for reason, or the total over
 * all reasons, at INT32_MAX). A thread suspended before it is exiting (in an exit hook, say)
 * stops there and does not exit until resumed. */
VMT_EXPORT int vmt_thread_suspend(vmt_thread_t *t, vmt_suspend_reason_t reason,
                                  int64_t timeout_ns, vmt_straggler_t *straggler);
/* Takes one off t's count for reason; the last one lets t go. -EINVAL when that count is 0
 * (a resume without its suspend) or for a bad handle or reason, -ESRCH when t is exiting or
 * has exited (its counts went with it). Never waits. */
VMT_EXPORT int vmt_thread_resume(vmt_thread_t *t, vmt_suspend_reason_t reason);
/* t's total suspend count over all reasons (>= 0; 0 once t is exiting, and for good), -EINVAL
 * for a bad handle. */
VMT_EXPORT int vmt_thread_suspend_count(const vmt_thread_t *t);
/* Suspends every started and attached thread but the caller, for reason; returns once all
 * are safe. On -ETIMEDOUT every count taken is taken back. Threads that are exiting are
 * skipped (one that becomes exiting before it stops is too). Errors as vmt_thread_suspend.
 * "Every" includes newcomers (ART's ThreadList::Register): while a suspend-all is in effect
 * (until its resume_all), a thread that starts or attaches begins with its count, before its
 * first instruction (an attach: before attach returns), so it is reported suspended at once,
 * runs native code and its start hooks, and stops when it first tries to enter managed code.
 * The call's walk and the registrations take one lock, so no thread is missed or counted
 * twice; nested suspend-alls (two callers) each count newcomers in. Internal threads are
 * never counted. */
VMT_EXPORT int vmt_thread_suspend_all(vmt_suspend_reason_t reason, int64_t timeout_ns,
                                      vmt_straggler_t *straggler);
/* Ends one suspend-all of reason (newcomers are no longer counted in for it) and takes one off
 * the count for reason of every thread whose count for it is > 0 (the caller's excepted),
 * newcomers counted in included; returns how many it resumed, or -EINVAL for a bad reason. A
 * thread suspended for the same reason by vmt_thread_suspend as well keeps that count. */
VMT_EXPORT int vmt_thread_resume_all(vmt_suspend_reason_t reason);

VMT_EXTERN_C_END

#endif /* VMTHREAD_VMSERVICES_H */
