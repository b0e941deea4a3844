/*
 * vmthread/profiler.h: a CPU-time profiler of the runtime's threads, sampling each thread on its
 * own CPU clock (docs/profiler.md).
 *
 * Every runtime thread (started or attached, now and later; never the runtime's internal
 * threads) gets a POSIX timer on its own CPU clock while the profiler runs: a thread is sampled
 * once per `period_ns` of the CPU time it uses, never while it waits, so samples are
 * proportional to CPU time, not to wall time. The kernel checks CPU timers once per tick
 * (4 ms at HZ=250) and folds expirations it could not signal into the next signal's overrun
 * count: a sample carries weight = 1 + overrun, and the weights times the period add up to
 * the thread's CPU time (less than one period and one tick per thread, what no signal told of
 * yet). The stack is taken in the signal handler: the VM's frames through a walker it
 * registers (vmt_prof_set_walker), else the native frames (libunwind, when installed). A
 * drainer (an internal thread) aggregates samples per thread, per category and per stack;
 * the outputs are collapsed stacks (flamegraph.pl's input, and speedscope's and the Firefox
 * profiler's), a self-contained interactive flame graph (SVG), and a CPU table per category
 * and per thread.
 *
 * Conventions: 0 or a negative errno. One profiler per process; start, stop, clear and the
 * outputs may be called from any thread (they serialise on one lock), never from a signal
 * handler. The profile of the last run stays readable after stop, until the next start or
 * vmt_prof_clear().
 */
#ifndef VMTHREAD_PROFILER_H
#define VMTHREAD_PROFILER_H

#include <stdio.h>

#include "vmthread/common.h"
#include "vmthread/thread.h"

VMT_EXTERN_C_BEGIN

/* Which fields of vmt_prof_options_t are set. */
enum vmt_prof_option_flags {
  VMT_PROF_OPT_PERIOD = 1u << 0,
  VMT_PROF_OPT_MAX_DEPTH = 1u << 1,
  VMT_PROF_OPT_BUFFER = 1u << 2,
  VMT_PROF_OPT_SIGNAL = 1u << 3,
  VMT_PROF_OPT_MODE = 1u << 4,
};

typedef enum vmt_prof_mode {
  /* The handler walks the stack of the code it interrupted. */
  VMT_PROF_MODE_SIGNAL = 0,
  /* JEP 518's idea, on the VM services (include/vmthread/vmservices.h): a thread in managed or
   * VM code (VMT_EXEC_MANAGED, VMT_EXEC_VM) is not walked by the handler, which leaves the
   * weight and arms the thread's poll; the thread walks its own stack at its next poll (the
   * walker gets a NULL ucontext), where the VM's frames are consistent. The price is a bias:
   * the CPU used since the signal is put on the poll site's stack (docs/profiler.md measures
   * it). A thread in a safe state (native, blocked) is walked by the handler as in the signal
   * mode; weight left for a poll that never comes is lost as VMT_PROF_LOST_UNSAFE. */
  VMT_PROF_MODE_COOPERATIVE = 1,
} vmt_prof_mode_t;

#define VMT_PROF_PERIOD_DEFAULT_NS 10000000           /* 10 ms of a thread's CPU time */
#define VMT_PROF_PERIOD_MIN_NS 1000000                /* 1 ms (the kernel: one tick, 4 ms) */
#define VMT_PROF_PERIOD_MAX_NS 1000000000             /* 1 s */
#define VMT_PROF_MAX_DEPTH_DEFAULT 128
#define VMT_PROF_MAX_DEPTH_LIMIT 1024
#define VMT_PROF_BUFFER_DEFAULT (16u * 1024)          /* bytes per thread */
#define VMT_PROF_BUFFER_MIN (4u * 1024)
#define VMT_PROF_BUFFER_MAX (16u * 1024 * 1024)

typedef struct vmt_prof_options {
  uint32_t flags;           /* VMT_PROF_OPT_*: the fields below that are set */
  int64_t period_ns;        /* CPU time between two samples of one thread */
  int32_t max_depth;        /* frames kept per sample, [1, VMT_PROF_MAX_DEPTH_LIMIT] */
  uint32_t buffer_bytes;    /* each thread's sample buffer (rounded up to a power of two) */
  /* The sampling signal; default SIGRTMIN + 6 (docs/profiler.md says why that one). */
  int signal;
  vmt_prof_mode_t mode;
} vmt_prof_options_t;

/*
 * Starts profiling every runtime thread (NULL options: all defaults) and discards the previous
 * profile. Returns once every live thread is armed. Errors: -EINVAL (an option out of range,
 * an unknown flag, a signal the runtime cannot use: SIGKILL, SIGSTOP, the synchronous ones,
 * and SIGQUIT, the thread dump's: vmt_mx_enable_sigquit_dump chains to the handler it finds),
 * -EALREADY (running), -EBUSY (the host has a handler on the signal: choose another with
 * VMT_PROF_OPT_SIGNAL; the host's handler is never replaced), -ENOTSUP (CPU timers are not
 * available), -ENOMEM or -EAGAIN (the drainer thread could not be created).
 * A thread whose timer cannot be created (the kernel's limit, RLIMIT_SIGPENDING) is counted
 * in vmt_prof_stats_t.arm_failures and not sampled; the others are.
 */
VMT_EXPORT int vmt_prof_start(const vmt_prof_options_t *options);
/*
 * Stops: deletes every timer, waits for handlers in progress, drains every buffer into the
 * profile and stops the drainer. Once it returns, no handler touches the profiler's state and
 * no sampling signal is pending. 0, also when not running.
 */
VMT_EXPORT int vmt_prof_stop(void);
VMT_EXPORT bool vmt_prof_is_running(void);
/* Frees the last profile (not while running: -EBUSY). */
VMT_EXPORT int vmt_prof_clear(void);

/* Why a timer signal gave no sample. Each cause counts samples and their weight. */
typedef enum vmt_prof_lost_cause {
  VMT_PROF_LOST_BUFFER_FULL = 0,  /* the thread's buffer had no room: the drainer was late */
  VMT_PROF_LOST_UNSAFE,           /* the walker said the thread cannot be walked now, or the
                                     native walk could not enter the loader (a fork pending) */
  VMT_PROF_LOST_WALK_FAILED,      /* the walker or the native unwinder failed */
  VMT_PROF_LOST_DISARMED,         /* the thread was being armed or disarmed (start, exit) */
  VMT_PROF_LOST_COUNT,
} vmt_prof_lost_cause_t;
/* "buffer_full", "unsafe", "walk_failed", "disarmed"; NULL outside the enum. */
VMT_EXPORT const char *vmt_prof_lost_cause_name(vmt_prof_lost_cause_t cause);

typedef struct vmt_prof_stats {
  bool running;
  vmt_prof_mode_t mode;
  int64_t period_ns;
  int32_t max_depth;
  int signal;
  int64_t samples;                       /* recorded in the profile */
  int64_t weight;                        /* their weights: sum of 1 + overrun */
  int64_t lost_samples[VMT_PROF_LOST_COUNT];
  int64_t lost_weight[VMT_PROF_LOST_COUNT];
  int64_t threads;                       /* armings in this run (a thread excluded and
                                          * included again counts twice) */
  int32_t threads_armed;                 /* armed now */
  int64_t arm_failures;                  /* threads whose timer could not be created */
  int32_t threads_at_start;              /* armed by the start itself */
  int64_t start_arm_ns;                  /* how long the start's arming of them took */
  int64_t stacks;                        /* distinct (thread, stack) pairs */
  int64_t cpu_ns;                        /* sum of the threads' CPU time while armed */
  /* Expirations the kernel had not signalled when a timer was deleted: floor(CPU while armed
   * / period) less the weights recorded and lost, over the armings that ended. About one per
   * arming on an idle CPU; more when a thread shared its CPU (the kernel checks CPU timers
   * only at ticks that find the thread running). Never made into samples. */
  int64_t unsignalled;
  /* The profiler's own cost: the time its signal handlers took (CLOCK_MONOTONIC around each,
   * so a handler preempted counts its wait), and the drainer thread's CPU time (once the
   * profile stopped; 0 while it runs). The kernel's delivery of each signal is in neither. */
  int64_t handler_ns;
  int64_t drainer_cpu_ns;
  const char *unwinder;                  /* "vmthread cfi", "libunwind", "pc only", "vm walker" */
} vmt_prof_stats_t;
/* Figures of the running or last profile (drained first). -EINVAL on NULL. */
VMT_EXPORT int vmt_prof_get_stats(vmt_prof_stats_t *out);

/* One thread of the profile. name and category stay valid until the next start or clear. */
typedef struct vmt_prof_thread_stats {
  int64_t id;
  const char *name;
  const char *category;
  int64_t samples;
  int64_t weight;
  int64_t lost_samples[VMT_PROF_LOST_COUNT];
  int64_t lost_weight[VMT_PROF_LOST_COUNT];
  /* The thread's CPU time from its arming to its disarming (stop or its end), read on its own
   * clock; a running profile counts only the armings that ended. -1 if a read failed. */
  int64_t cpu_ns;
  int64_t unsignalled;                   /* as in vmt_prof_stats_t, for this thread */
  bool ended;                            /* the thread ended while profiled */
} vmt_prof_thread_stats_t;
/* The thread with id `id` (a profiled thread, live or ended): -ENOENT if not in the profile,
 * -EINVAL on NULL or id <= 0. */
VMT_EXPORT int vmt_prof_get_thread_stats(int64_t id, vmt_prof_thread_stats_t *out);

/*
 * Leaves t out of profiling (excluded true) or puts it back (false), as JFR leaves its own
 * threads out and async-profiler's thread filter keeps chosen ones: a VM's agent or
 * compiler threads, or one half of an A/B measurement (bench/profiler.c). The mark is t's for
 * its life, across starts and stops; a thread starts included. While a profile runs it takes
 * effect before the call returns: an excluded thread is disarmed (its samples and its CPU time
 * so far stay in the profile; its buffer is freed by the drainer when t excludes itself, kept
 * until the stop when another thread does, as a handler running on t may still finish its one
 * sample), an included one is armed (a timer that cannot be created counts in arm_failures, as
 * at a start). A terminated t: 0, nothing to do.
 * Errors: -EINVAL (NULL or a released handle).
 */
VMT_EXPORT int vmt_prof_set_thread_excluded(vmt_thread_t *t, bool excluded);

/*
 * The VM's frames. The walker runs in the signal handler, on the sampled thread t, with the
 * context the kernel saved (ucontext_t *): it must be async-signal-safe (no locks, no
 * allocation, no stdio). In the cooperative mode it may also run at a poll of t, on t, with
 * ucontext NULL: t's own stack from there. It writes up to max frames, innermost first, as
 * values of its own (method ids, code addresses) and returns their number; 0 when t is not in
 * the VM's code (the native frames are taken instead); -EAGAIN when t cannot be walked now (mid-transition: the
 * sample is lost as VMT_PROF_LOST_UNSAFE); any other negative errno when it failed
 * (VMT_PROF_LOST_WALK_FAILED). The symbolizer runs later, in an ordinary thread, once per
 * distinct frame value: it writes a NUL-terminated name into buf (len bytes) and returns 0,
 * or -ENOENT for a value it does not know, which is then named as a native code address.
 * Setting or clearing (NULL, NULL) is refused while the profiler runs (-EBUSY).
 */
typedef int (*vmt_prof_walker_fn)(vmt_thread_t *t, const void *ucontext, uintptr_t *frames,
                                  int32_t max, void *ctx);
typedef int (*vmt_prof_symbolizer_fn)(uintptr_t frame, char *buf, size_t len, void *ctx);
VMT_EXPORT int vmt_prof_set_walker(vmt_prof_walker_fn walker, vmt_prof_symbolizer_fn symbolizer,
                                   void *ctx);

/* ---- Output ---------------------------------------------------------------------------- */
enum vmt_prof_output_flags {
  VMT_PROF_OUT_THREADS = 1u << 0,     /* a root frame per thread: "name [id]" */
  VMT_PROF_OUT_CATEGORIES = 1u << 1,  /* a root frame per category, above the thread's */
  VMT_PROF_OUT_LINES = 1u << 2,       /* "function (file:line)" where lines are known (and
                                        the writing thread has 256 KiB of stack left:
                                        docs/profiler.md) */
  VMT_PROF_OUT_NS = 1u << 3,          /* values in ns of CPU time (weight * period) */
};
/*
 * Collapsed stacks, one line per distinct stack: "root;...;leaf value\n", value the summed
 * weights (samples of one period each) or, with VMT_PROF_OUT_NS, CPU ns. The input format of
 * flamegraph.pl and stackcollapse tools; speedscope and the Firefox profiler open it as is.
 * Errors: -EINVAL (NULL, unknown flag), -EIO (the stream failed), -ENOMEM, -ENOENT (no
 * profile: never started, or cleared).
 */
VMT_EXPORT int vmt_prof_write_collapsed(FILE *out, uint32_t flags);
/* The same into a malloc'ed NUL-terminated buffer (free()); *len excludes the NUL. */
VMT_EXPORT int vmt_prof_collapsed_to_string(uint32_t flags, char **out, size_t *len);
/* A self-contained flame graph: one SVG file with its own script (click a frame to zoom,
 * search by regular expression, reset), readable in any browser and, without the script, by
 * any SVG renderer. title may be NULL. Errors as for the collapsed stacks. */
VMT_EXPORT int vmt_prof_write_flamegraph(FILE *out, const char *title, uint32_t flags);
/* A text table: CPU time per category and per thread (samples, weight * period, the thread's
 * own clock over the same time, lost samples by cause). Errors as above. */
VMT_EXPORT int vmt_prof_write_table(FILE *out);

/* ---- Control of a running process ------------------------------------------------------ */
/*
 * Opt-in: signal `sig` toggles the profiler (default options): the first starts it, the next
 * stops it and writes <prefix>.collapsed, <prefix>.svg and <prefix>.txt (prefix NULL:
 * "vmthread-profile-<pid>"; a run number is appended from the second run on). The handler
 * only wakes an internal thread (never counted nor listed), which does the work. Errors:
 * -EINVAL (a signal the runtime cannot use, the sampling signal, or SIGQUIT: the thread
 * dump's, vmt_mx_enable_sigquit_dump), -EALREADY (enabled),
 * -EBUSY (the host has a handler on sig), -errno of pipe/thread creation. Disable restores
 * the disposition found at enable, unless the host installed its own handler over ours since
 * (it stays, and the signal is the host's: a later enable gives -EBUSY), and stops the thread
 * (a running profile keeps running).
 */
VMT_EXPORT int vmt_prof_enable_signal_control(int sig, const char *prefix);
VMT_EXPORT int vmt_prof_disable_signal_control(void);

VMT_EXTERN_C_END

#endif /* VMTHREAD_PROFILER_H */
