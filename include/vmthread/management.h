/*
 * vmthread/management.h: a C mirror of java.lang.management.ThreadMXBean and its
 * com.sun.management extension. Each function is named after its Java method
 * (getThreadCpuTime -> vmt_mx_get_thread_cpu_time); docs/management.md has the full table.
 *
 * Conventions (from the Java specification):
 * - A fallible query returns 0 or a negative errno and passes its Java result through an out
 *   parameter. -EINVAL is Java's IllegalArgumentException (id <= 0, NULL array, negative
 *   maxDepth), checked before anything else; -ENOTSUP is UnsupportedOperationException.
 * - Within a successful call, Java's own "no answer" values are kept: -1 for a time or byte
 *   count of a thread that is unknown, not started, terminated, or when measurement is
 *   disabled; NULL for the ThreadInfo of such a thread.
 * - Results are copies the caller owns, freed with the matching *_free call.
 * - Any query that reads the thread registry may also fail with -ENOMEM (a thread's first
 *   read allocates its reclamation slot; allocation failures are never hidden; a thread holds
 *   four registry snapshots at most, which only queries nested in a stack walker reach).
 * - The runtime's own internal threads (the dump thread) are never counted nor listed.
 */
#ifndef VMTHREAD_MANAGEMENT_H
#define VMTHREAD_MANAGEMENT_H

#include <stdio.h>

#include "vmthread/common.h"
#include "vmthread/monitor.h"
#include "vmthread/thread.h"

VMT_EXTERN_C_BEGIN

/* ---- Counts ---------------------------------------------------------------------------- */
VMT_EXPORT int32_t vmt_mx_get_thread_count(void);         /* live threads */
VMT_EXPORT int32_t vmt_mx_get_peak_thread_count(void);
VMT_EXPORT int64_t vmt_mx_get_total_started_thread_count(void);
VMT_EXPORT int32_t vmt_mx_get_daemon_thread_count(void);
VMT_EXPORT void vmt_mx_reset_peak_thread_count(void);      /* peak := live */

/* All live thread ids, ascending. *ids is malloc'ed, never NULL on success (free with
 * vmt_mx_ids_free). -EINVAL on NULL, -ENOMEM. */
VMT_EXPORT int vmt_mx_get_all_thread_ids(int64_t **ids, size_t *count);
VMT_EXPORT void vmt_mx_ids_free(int64_t *ids);

/* ---- ThreadInfo ------------------------------------------------------------------------ */
typedef struct vmt_lock_info {
  char *class_name;        /* "vmt.Monitor", "vmt.Synchronizer", "vmt.Thread" (a joined thread:
                              Java's join waits on the Thread) or a park blocker's class */
  char *name;              /* display name "name@hexid" (Java: LockInfo.toString) */
  int32_t identity_hash;   /* stable identity shown in hex */
} vmt_lock_info_t;

typedef struct vmt_monitor_info {
  vmt_lock_info_t lock;
  /* Index of the frame that entered it (Java's lockedStackDepth): the one the walker named
   * (vmt_mx_frame_holds_monitor), else 0 (the top frame) when there are frames, else -1. */
  int32_t stack_depth;
} vmt_monitor_info_t;

typedef struct vmt_stack_frame {
  char *function;          /* symbol or VM method name; "??" if unknown */
  char *file;              /* source or module, may be NULL */
  int32_t line;            /* -1 if unknown */
  uintptr_t pc;
} vmt_stack_frame_t;

/*
 * A thread's state as JVMTI's GetThreadState bits (same values, so a JVMTI agent passes them
 * on as they are): vmt_thread_info_t.state_bits. Java's state is in the bits too (the
 * JVMTI_JAVA_LANG_THREAD_STATE_* combinations), and the kind of wait is what jstack prints after
 * the state: SLEEPING "(sleeping)", PARKED "(parking)", IN_OBJECT_WAIT and
 * BLOCKED_ON_MONITOR_ENTER "(on object monitor)". Which call sets which (docs/management.md):
 *   RUNNABLE                 ALIVE | RUNNABLE, and IN_NATIVE when in_native
 *   BLOCKED                  ALIVE | BLOCKED_ON_MONITOR_ENTER: a contended monitor enter, and a
 *                            notified waiter's re-entry
 *   WAITING / TIMED_WAITING  ALIVE | WAITING | WAITING_INDEFINITELY or WAITING_WITH_TIMEOUT,
 *                            and one of: SLEEPING (vmt_sleep_ns; always with timeout), PARKED
 *                            (vmt_park*, a synchronizer acquire: AQS parks), IN_OBJECT_WAIT
 *                            (vmt_monitor_wait, and join: Java's join is an Object.wait)
 * and SUSPENDED while suspended, INTERRUPTED while the interrupt status is set, in any state.
 * The state and the kind come from one read of the thread's published episode, so a reader
 * never sees RUNNABLE with a kind, nor WAITING or TIMED_WAITING without exactly one; SUSPENDED,
 * INTERRUPTED and IN_NATIVE are read beside it (each true at some moment of the read). A
 * host's own blocking bracket (vmt_exec_enter(VMT_EXEC_BLOCKED), vmthread/vmservices.h) leaves
 * the thread RUNNABLE, as HotSpot's VM-internal blocking does; vmt_exec_state tells it apart.
 */
#define VMT_THREAD_STATE_ALIVE 0x0001u
#define VMT_THREAD_STATE_TERMINATED 0x0002u
#define VMT_THREAD_STATE_RUNNABLE 0x0004u
#define VMT_THREAD_STATE_WAITING_INDEFINITELY 0x0010u
#define VMT_THREAD_STATE_WAITING_WITH_TIMEOUT 0x0020u
#define VMT_THREAD_STATE_SLEEPING 0x0040u
#define VMT_THREAD_STATE_WAITING 0x0080u
#define VMT_THREAD_STATE_IN_OBJECT_WAIT 0x0100u
#define VMT_THREAD_STATE_PARKED 0x0200u
#define VMT_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER 0x0400u
#define VMT_THREAD_STATE_SUSPENDED 0x100000u
#define VMT_THREAD_STATE_INTERRUPTED 0x200000u
#define VMT_THREAD_STATE_IN_NATIVE 0x400000u

typedef struct vmt_thread_info {
  int64_t id;
  char *name;
  char *category;
  vmt_thread_state_t state;
  bool daemon;
  /* Java's isInNative: the thread is RUNNABLE and its execution state is NATIVE
   * (vmthread/vmservices.h), as for every thread that never entered managed code and for one
   * in a native call out of it; never while it is blocked or waiting in a runtime call. */
  bool in_native;
  bool suspended;              /* Java's isSuspended: its suspend count is > 0 */
  int32_t priority;
  pid_t tid;
  int64_t cpu_time_ns;         /* -1 if disabled or not alive */
  int64_t user_time_ns;        /* consistent user time; -1 likewise */
  int64_t elapsed_ns;          /* since start (or attach) */
  int64_t blocked_count;
  int64_t blocked_time_ns;     /* -1 while contention monitoring is disabled */
  int64_t waited_count;
  int64_t waited_time_ns;      /* -1 while contention monitoring is disabled */
  vmt_lock_info_t *lock;       /* what it is blocked or waiting on, or NULL */
  int64_t lock_owner_id;       /* -1 if none */
  char *lock_owner_name;       /* NULL if none */
  vmt_stack_frame_t *frames;
  size_t frame_count;
  vmt_monitor_info_t *locked_monitors;      /* only when asked for */
  size_t locked_monitor_count;
  vmt_lock_info_t *locked_synchronizers;    /* only when asked for */
  size_t locked_synchronizer_count;
  /* Fields are only ever added here, at the end: every vmt_thread_info_t is allocated by the
   * library, so a program built against an older header reads the fields it knows. */
  uint32_t state_bits;         /* VMT_THREAD_STATE_* (above): JVMTI's GetThreadState */
} vmt_thread_info_t;

/*
 * getThreadInfo(id, maxDepth): *out is NULL for an unknown, not yet started or terminated
 * thread. max_depth is the number of frames wanted: 0 gives no stack trace (Java's
 * getThreadInfo(long) and getThreadInfo(long[]) are getThreadInfo(id, 0)),
 * VMT_MX_MAX_DEPTH_ALL gives every frame (Java's Integer.MAX_VALUE). No locked monitors or
 * synchronizers are reported (use the array form). Errors: -EINVAL (id <= 0, max_depth < 0,
 * NULL out), -ENOMEM.
 *
 * With max_depth > 0 and a stack walker registered (below), every other thread's ThreadInfo
 * is read inside a handshake with it (vmthread/vmservices.h): its stack, its state and its
 * locks are one state of the thread, at a safe point. A thread in native or blocked code is
 * read at once, on the caller's side; one running managed code at its next poll. One that
 * does not poll within VMT_MX_WALK_TIMEOUT_NS is reported without frames. max_depth 0, or no
 * walker (other threads then have no frames), never waits for anybody.
 */
#define VMT_MX_MAX_DEPTH_ALL INT32_MAX
#define VMT_MX_WALK_TIMEOUT_NS (1000LL * 1000 * 1000)
VMT_EXPORT int vmt_mx_get_thread_info(int64_t id, int32_t max_depth, vmt_thread_info_t **out);

/* getThreadInfo(long[] ids, boolean lockedMonitors, boolean lockedSynchronizers, int maxDepth):
 * (*out)[i] is NULL for an unknown element. *out is an array of count pointers (never NULL on
 * success, even for count 0), freed with vmt_mx_thread_info_array_free(*out, count).
 * Errors: -EINVAL (NULL ids or out, any id <= 0, max_depth < 0), -ENOTSUP when locked_* is
 * asked but unsupported, -ENOMEM (nothing is returned then). */
VMT_EXPORT int vmt_mx_get_thread_info_array(const int64_t *ids, size_t count,
                                            bool locked_monitors, bool locked_synchronizers,
                                            int32_t max_depth, vmt_thread_info_t ***out);

/* dumpAllThreads(lockedMonitors, lockedSynchronizers, maxDepth): every live thread, sorted by
 * id (threads that end during the call are left out). Errors as above. */
VMT_EXPORT int vmt_mx_dump_all_threads(bool locked_monitors, bool locked_synchronizers,
                                       int32_t max_depth, vmt_thread_info_t ***out,
                                       size_t *count);

/*
 * The same with a flags word (VMT_MX_INFO_*); unknown flags are -EINVAL. The plain calls are
 * these with the locked_* flags they name. Java's ThreadInfo carries no CPU time; vmthread's
 * does (cpu_time_ns, user_time_ns), read as each ThreadInfo is taken: three clock reads, each
 * a syscall, most of what a ThreadInfo without stacks costs (docs/management.md).
 * VMT_MX_INFO_NO_CPU_TIME leaves both at -1, for a caller that wants what Java's holds.
 */
#define VMT_MX_INFO_LOCKED_MONITORS 0x1u
#define VMT_MX_INFO_LOCKED_SYNCHRONIZERS 0x2u
#define VMT_MX_INFO_NO_CPU_TIME 0x4u
VMT_EXPORT int vmt_mx_get_thread_info_array_ex(const int64_t *ids, size_t count, uint32_t flags,
                                               int32_t max_depth, vmt_thread_info_t ***out);
VMT_EXPORT int vmt_mx_dump_all_threads_ex(uint32_t flags, int32_t max_depth,
                                          vmt_thread_info_t ***out, size_t *count);

/* vmt_mx_dump_all_threads_ex at a global safepoint (what HotSpot's dumpAllThreads always
 * is): every thread's ThreadInfo from one instant, in which no thread runs managed code,
 * enters or leaves a monitor through the runtime's blocking paths, or exits; the calling
 * thread's own entry is read at that instant too. The price: every thread in managed code
 * stops for the length of the dump (docs/management.md, "Consistent or lock-free"). Threads in
 * native code run on; one that takes an uncontended monitor there changes its locks even so
 * (enter it from VM code). flags as the _ex calls; timeout_ns bounds the time to reach the
 * safepoint (0: none). Errors as vmt_mx_dump_all_threads_ex (checked before any thread is
 * stopped), and -EINVAL (timeout_ns < 0), -ETIMEDOUT (nothing returned), -EDEADLK (the caller
 * holds a safepoint already). */
VMT_EXPORT int vmt_mx_dump_all_threads_at_safepoint(uint32_t flags, int32_t max_depth,
                                                    int64_t timeout_ns,
                                                    vmt_thread_info_t ***out, size_t *count);

VMT_EXPORT void vmt_mx_thread_info_free(vmt_thread_info_t *info);
VMT_EXPORT void vmt_mx_thread_info_array_free(vmt_thread_info_t **infos, size_t count);

/*
 * Stack walking. The embedding VM knows its own frames: it registers a walker that fills up to
 * max frames of thread t, innermost first. For another thread it is called inside a handshake
 * with t (vmthread/vmservices.h): t is stopped at a safe point for the whole call and cannot
 * exit, so its frames hold still. It runs either on t itself, at t's poll (t was in managed
 * code), or on the querying thread while t is held in a safe state (native, blocked): check
 * vmt_thread_current() if the difference matters, and do not wait for t in it. For the
 * calling thread itself it is called directly. The walker returns the number of frames
 * written, or a negative errno (that thread's trace is then empty); fields it leaves unset in
 * those frames read as zero. The strings it stores stay the VM's: the runtime copies them
 * before the walker is called again. When it fills all max frames it may be called again with
 * a larger buffer (up to 65536 frames). Replacing or removing (NULL) the walker waits for
 * calls in progress, in a safe state (BLOCKED, as the runtime's other blocking calls); a
 * walker must not call vmt_mx_set_stack_walker itself.
 * Without a walker, the calling thread gets its native frames (backtrace(3), from the frame
 * that called the management function) and other threads none.
 */
typedef int (*vmt_mx_stack_walker_fn)(vmt_thread_t *t, vmt_stack_frame_t *frames, int32_t max,
                                      void *ctx);
VMT_EXPORT void vmt_mx_set_stack_walker(vmt_mx_stack_walker_fn walker, void *ctx);
/*
 * For a walker, while it fills frames: frame `frame` (an index into the frames of this call,
 * innermost 0) holds `monitor`, entered there, as HotSpot's frames report their lock records.
 * ThreadInfo's locked monitors then carry that frame as their stack depth (a monitor reported
 * by several frames, re-entered deeper down, gets the outermost); a held monitor no frame
 * reports gets frame 0. Optional: nothing is recorded when monitors are entered, so the VM
 * says what its frames know. Errors: -EPERM outside a walker call on this thread, -EINVAL for
 * a frame outside [0, max) or a monitor that is NULL or destroyed, -ENOMEM.
 */
VMT_EXPORT int vmt_mx_frame_holds_monitor(int32_t frame, const vmt_monitor_t *monitor);

/* ---- CPU time -------------------------------------------------------------------------- *
 * Times are ns, or -1 for an unknown, not started or terminated thread and while measurement
 * is disabled (it is enabled by default). Checks in Java's order: -EINVAL (id <= 0, a NULL
 * pointer), then -ENOTSUP (neither thread nor current-thread CPU time supported; or only the
 * latter and the id is not the calling thread's). User time is the consistent user time
 * (vmthread/clock.h, VMT_CPU_USER): never above the CPU time read after it, never decreasing.
 * The array forms (com.sun.management) fill out[i] for ids[i]: -1 for an unknown element only;
 * -EINVAL for NULL ids, NULL out with count > 0, or any id <= 0; count 0 writes nothing. */
VMT_EXPORT bool vmt_mx_is_thread_cpu_time_supported(void);
VMT_EXPORT bool vmt_mx_is_current_thread_cpu_time_supported(void);
VMT_EXPORT int vmt_mx_is_thread_cpu_time_enabled(bool *enabled);       /* -ENOTSUP */
VMT_EXPORT int vmt_mx_set_thread_cpu_time_enabled(bool enable);        /* -ENOTSUP */
VMT_EXPORT int vmt_mx_get_current_thread_cpu_time(int64_t *ns);        /* -1 if disabled */
VMT_EXPORT int vmt_mx_get_current_thread_user_time(int64_t *ns);
VMT_EXPORT int vmt_mx_get_thread_cpu_time(int64_t id, int64_t *ns);    /* -1 unknown/disabled */
VMT_EXPORT int vmt_mx_get_thread_user_time(int64_t id, int64_t *ns);
VMT_EXPORT int vmt_mx_get_thread_cpu_time_array(const int64_t *ids, size_t count, int64_t *out);
VMT_EXPORT int vmt_mx_get_thread_user_time_array(const int64_t *ids, size_t count, int64_t *out);

/* ---- CPU time per thread category (Eclipse OMR's omrthread_get_jvm_cpu_usage_info) ------- *
 * For each category (vmt_thread_options_t.category) that has had a thread, sorted by name:
 * its live and started counts and the CPU time of its live threads plus every one that
 * exited, from one consistent moment (a thread that exits during the call is counted once,
 * live or exited). An attached thread counts the CPU it used while attached: its share is its
 * vmt_mx_get_thread_cpu_time less its CPU time at the attach, which the per-thread time (the
 * thread's whole clock, as Java's for a JNI-attached thread) still includes. Otherwise the
 * times agree with the per-thread times: the category's cpu_time_ns is their sum over its
 * live threads plus its threads' times at their exits (the few microseconds of an exit path
 * after its last read are counted nowhere). The runtime's
 * internal threads are in no category. Times are -1 while thread CPU time is unsupported or
 * disabled (vmt_mx_set_thread_cpu_time_enabled). *out is malloc'ed (free with
 * vmt_mx_category_usage_free), never NULL on success. Errors: -EINVAL (NULL), -ENOMEM. */
typedef struct vmt_category_usage {
  char name[VMT_THREAD_CATEGORY_MAX + 1];
  int32_t live_count;
  int64_t started_count;         /* threads started or attached in it, ever */
  int64_t cpu_time_ns;           /* live + exited threads */
  int64_t exited_cpu_time_ns;    /* the exited threads' part of it */
} vmt_category_usage_t;
VMT_EXPORT int vmt_mx_get_category_usage(vmt_category_usage_t **out, size_t *count);
VMT_EXPORT void vmt_mx_category_usage_free(vmt_category_usage_t *usage);

/* ---- Contention monitoring ------------------------------------------------------------- */
VMT_EXPORT bool vmt_mx_is_thread_contention_monitoring_supported(void);
VMT_EXPORT bool vmt_mx_is_thread_contention_monitoring_enabled(void);
/* Enabling resets every thread's blocked and waited times to zero. */
VMT_EXPORT int vmt_mx_set_thread_contention_monitoring_enabled(bool enable);
VMT_EXPORT bool vmt_mx_is_object_monitor_usage_supported(void);
VMT_EXPORT bool vmt_mx_is_synchronizer_usage_supported(void);

/* ---- Deadlocks -------------------------------------------------------------------------- */
/* Ids of threads in cycles of monitor ownership (findMonitorDeadlockedThreads) or of monitors
 * and synchronizers (findDeadlockedThreads). *ids = NULL and *count = 0 when there is none
 * (Java: null); else free *ids with vmt_mx_ids_free. Errors: -EINVAL (NULL), -ENOMEM.
 * The synchronizers followed are the runtime's own (monitor.h's vmt_sync_*), whose owner it
 * knows at every instant. A park blocker's owner_id (vmt_thread_set_park_blocker) is the host's
 * snapshot from before the park and may be stale by the scan (a queued successor acquires, the
 * snapshot still names the old owner), so it is shown in ThreadInfo but no edge is drawn
 * through it: a cycle of threads parked on the VM's own locks (java.util.concurrent's, built on
 * vmt_park) is not reported. HotSpot reads the lock's owner field at its safepoint instead. */
VMT_EXPORT int vmt_mx_find_monitor_deadlocked_threads(int64_t **ids, size_t *count);
VMT_EXPORT int vmt_mx_find_deadlocked_threads(int64_t **ids, size_t *count);
/* findDeadlockedThreads at a global safepoint: no lock changes owner through the runtime's
 * paths during the scan, so a cycle reported is one that held at that instant. The lock-free
 * scan above never stops anybody and confirms a cycle by reading it twice; this one stops
 * every thread in managed code for the scan (HotSpot's is always of this kind). timeout_ns and
 * the extra errors as vmt_mx_dump_all_threads_at_safepoint. */
VMT_EXPORT int vmt_mx_find_deadlocked_threads_at_safepoint(int64_t timeout_ns, int64_t **ids,
                                                           size_t *count);

/* ---- Allocated bytes (jemalloc per-thread counters) ------------------------------------ */
/* Supported only when jemalloc is the process allocator (decided at run time); every call
 * below but the first answers -ENOTSUP otherwise. Ids are checked first (-EINVAL), as for
 * CPU time; an unknown or ended thread, or disabled measurement, gives -1. The current thread
 * has no count (-1) unless it was started by the runtime or attached. */
VMT_EXPORT bool vmt_mx_is_thread_allocated_memory_supported(void);
VMT_EXPORT int vmt_mx_is_thread_allocated_memory_enabled(bool *enabled);  /* -ENOTSUP */
VMT_EXPORT int vmt_mx_set_thread_allocated_memory_enabled(bool enable);   /* -ENOTSUP */
VMT_EXPORT int vmt_mx_get_thread_allocated_bytes(int64_t id, int64_t *bytes);
VMT_EXPORT int vmt_mx_get_thread_allocated_bytes_array(const int64_t *ids, size_t count,
                                                       int64_t *out);
VMT_EXPORT int vmt_mx_get_current_thread_allocated_bytes(int64_t *bytes);
/* All bytes allocated by runtime threads, live and exited; never decreases. */
VMT_EXPORT int vmt_mx_get_total_thread_allocated_bytes(int64_t *bytes);

/* ---- Runtimes in this process ---------------------------------------------------------- */
/* How many other copies of the vmthread runtime in this process have started or attached a
 * thread: 0 in a sound process. A copy is libvmthread.so.0 or any object that linked
 * libvmthread.a (found also when it was loaded RTLD_LOCAL, as JNI libraries are); each has its
 * own registry and answers only for its own threads, so with two in use every answer of this
 * API is about part of the process. path receives the file of the first such copy ("" for the
 * main program); it may be NULL when len is 0. Returns the count, or -EINVAL (NULL path with
 * len > 0). The text dump and the JMX bean report it. */
VMT_EXPORT int32_t vmt_mx_get_other_runtime_count(char *path, size_t len);

/* ---- Thread dumps ----------------------------------------------------------------------- */
/* A jstack-style dump of all threads, with a deadlock section when one exists (layout in
 * docs/management.md). -EINVAL on NULL, -EIO if the stream reports an error, -ENOMEM. */
VMT_EXPORT int vmt_mx_print_thread_dump(FILE *out);
/* Into a malloc'ed, NUL-terminated buffer (free()); *len excludes the NUL. -EINVAL, -ENOMEM. */
VMT_EXPORT int vmt_mx_thread_dump_to_string(char **out, size_t *len);
/* The same threads as JSON, in the layout of `jcmd Thread.dump_to_file -format=json` (JDK 21+:
 * threadDump, threadContainers, threads with tid, name, state, stack, monitorsOwned), plus
 * vmthread's category, daemon, priority, cpuTimeNs and ownableSynchronizersOwned; schema in
 * docs/management.md. Always valid UTF-8 JSON. Errors as for the text dump. */
VMT_EXPORT int vmt_mx_print_thread_dump_json(FILE *out);
VMT_EXPORT int vmt_mx_thread_dump_json_to_string(char **out, size_t *len);
/* Opt-in: answer SIGQUIT (kill -3) with a dump to out (stderr if NULL), written by an internal
 * dump thread (not counted, not listed, no thread id); the handler only wakes it, and signals
 * that arrive while a dump is pending share it. The handler that was installed before (a JVM's:
 * its attach listener for jcmd and jstack starts from it) still runs after ours on every
 * signal, with the same siginfo; SIG_DFL is replaced, as in a JVM. Enable: -EALREADY if
 * enabled, -errno if the pipe, the thread or sigaction fail (nothing is left behind). Disable
 * restores the disposition found at enable, stops the dump thread and closes the pipe; 0 also
 * when it was not enabled. A handler the host installed over ours after enable is never
 * replaced: disable leaves it (ours, under it, forwards as before) and enable again only turns
 * the dump back on. Disable answers -errno if sigaction fails to restore the disposition
 * (the thread and the pipe are still gone). A fork child starts with the dump off (the
 * disposition found at enable restored as by disable, the parent's pipe closed) and may
 * enable it again. */
VMT_EXPORT int vmt_mx_enable_sigquit_dump(FILE *out);
VMT_EXPORT int vmt_mx_disable_sigquit_dump(void);

VMT_EXTERN_C_END

#endif /* VMTHREAD_MANAGEMENT_H */
