/*
 * runtime/os.h: the port contract. The runtime calls only what is declared here; os_linux/
 * implements it. Internal (hidden) API: names are vmt_os_*, never exported.
 *
 * Rules of the port:
 * - Functions return 0 or a negative errno, or the HotSpot shape where stated (-1 plus a
 *   success flag that is assigned on every path; NULL when the caller needs only the -1).
 * - A thread is described by the runtime's own record (vmt_os_thread_t), never by a bare
 *   pthread_t: glibc and musl hand out the *caller's* clock for an exited thread, and a
 *   pthread_t of a joined thread is undefined behaviour (docs/cpu-time.md).
 * - Nothing here allocates on a CPU-time read path.
 */
#ifndef VMT_RUNTIME_OS_H
#define VMT_RUNTIME_OS_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* The port's view of one thread, embedded in the runtime's thread record. */
typedef struct vmt_os_thread {
  /* Kernel tid once published (> 0; release, acquire); <= 0 before (binding states, see
   * os_linux/thread_id.c). Read it with vmt_os_thread_tid(). */
  _Atomic int32_t tid;
  /* Set (seq_cst) by the thread itself on its way out, before the kernel can reuse its tid.
   * A CPU-time read that sees it clear *after* the clock read read the right thread. */
  _Atomic int32_t exiting;
  /* Consistent user time: the largest value handed out to any reader (the thread itself or
   * another), so answers never go backwards; only ever a value <= a total read before it. */
  _Atomic int64_t user_time_floor_ns;
} vmt_os_thread_t;

/* Probes the platform once (clock ids, TSC); idempotent and thread-safe. 0 or -errno. */
int vmt_os_init(void);

/* ---- Thread identity ------------------------------------------------------------------- */
/* Binds ot to a freshly created thread: derives from its clock id (pthread_getcpuclockid) the
 * tid the kernel wrote before pthread_create returned; publishes the tid (every clock id of the
 * thread is computed from it). Called by the parent right after pthread_create. */
int vmt_os_thread_bind(vmt_os_thread_t *ot, pthread_t handle);
/* The same for the calling thread (attach, and the child's own publication). */
int vmt_os_thread_bind_self(vmt_os_thread_t *ot);
/* The published tid, or 0 if not yet published (never a transient state of the word). */
pid_t vmt_os_thread_tid(const vmt_os_thread_t *ot);
/* The tid, waiting (futex) if not yet published. */
pid_t vmt_os_thread_tid_wait(vmt_os_thread_t *ot);
/* Called by the thread itself as it starts to leave. */
void vmt_os_thread_mark_exiting(vmt_os_thread_t *ot);
/* The calling thread's kernel tid (gettid, cached per thread). */
pid_t vmt_os_current_tid(void);

/* ---- Thread end ------------------------------------------------------------------------ *
 * The runtime's one per-thread teardown. vmt_os_thread_end_arm(fn) makes fn run on the calling
 * thread when it ends (returns from its start routine, calls pthread_exit, or is cancelled),
 * after its cancellation cleanup handlers. Once armed, arming again is a no-op until fn has run;
 * fn may arm again (a thread that touches the runtime from a later destructor), and then runs
 * again while the C library still runs destructors. fn is process-wide: the first call's is
 * kept. The main thread's fn runs only if it ends through pthread_exit (and, where the fallback
 * below is in use, at exit()). Not async-signal-safe.
 * Linux: a thread-specific-data key, created when the library is loaded; if the host had taken
 * all of glibc's 1024 keys before that, glibc's __cxa_thread_atexit_impl (what C++
 * thread_local destructors use), which has no limit but runs nothing armed once the key
 * destructors have begun. 0, -ENOMEM (pthread_setspecific could not grow its table), -EAGAIN
 * (no key left and no fallback in this C library). */
int vmt_os_thread_end_arm(void (*fn)(void));

/* ---- CPU clocks ------------------------------------------------------------------------ */
/* Replaces the type bits of a per-thread CPU clock id under a 3-bit mask: user_only gives
 * CPUCLOCK_VIRT, else CPUCLOCK_SCHED. -EINVAL if base is not a per-thread CPU clock. */
int vmt_os_cpu_clockid(clockid_t base, bool user_only, clockid_t *out);
/* The calling thread's pid-0 clock ids: VIRT = -3, SCHED = -2 (no pid lookup in the kernel). */
clockid_t vmt_os_current_cpu_clockid(bool user_only);

/* HotSpot's os::thread_cpu_time(thread, user_only): ns, or -1 with *success = false when the
 * thread has not started, has exited or is exiting. user_only is the raw VIRT clock. */
int64_t vmt_os_thread_cpu_time(const vmt_os_thread_t *ot, bool user_only, bool *success);
/* vmt_os_thread_cpu_time(ots[i], false, NULL) into out[i] for i < n (NULL: -1), in one loop
 * whose clock reads are inline: for sweeps over many threads (os_linux/cpu_clock.c). next
 * holds up to nnext addresses the caller reads after the call: their first 128 bytes are
 * prefetched one per thread read, so that they arrive during the syscalls. */
void vmt_os_threads_cpu_time(const vmt_os_thread_t *const *ots, size_t n, int64_t *out,
                             const void *const *next, size_t nnext);
/* Consistent user time of another thread: SCHED total scaled by the VIRT/PROF tick ratio,
 * raised to the thread's floor (ot->user_time_floor_ns, shared with the thread's own reads):
 * one non-decreasing sequence over all readers, never above a total read after it. */
int64_t vmt_os_thread_user_time_consistent(vmt_os_thread_t *ot, bool *success);
/* The same, and in *total_ns (-1 on failure) the SCHED total it was scaled from (or a later
 * one, read when the floor was above it), never below the answer: for a caller that wants
 * both (ThreadInfo), three clock reads instead of four. */
int64_t vmt_os_thread_user_and_total_time(vmt_os_thread_t *ot, int64_t *total_ns,
                                          bool *success);
/* The calling thread: total (SCHED pid-0) or raw user (VIRT pid-0). */
int64_t vmt_os_current_thread_cpu_time(bool user_only);
/* Consistent user time of the calling thread (getrusage(RUSAGE_THREAD)); ot may be NULL
 * for a thread without a record, else the answer is raised to its floor and raises it (a
 * floor above getrusage's total is checked against the pid-0 SCHED clock first). */
int64_t vmt_os_current_thread_user_time_consistent(vmt_os_thread_t *ot);

/* ---- /proc (the "before" of the benchmarks, and the fallback) ------------------------- */
typedef struct vmt_os_proc_times {
  char state;             /* field 3 */
  uint64_t utime_ticks;   /* field 14 */
  uint64_t stime_ticks;   /* field 15 */
} vmt_os_proc_times_t;
/* Parses the content of /proc/<pid>/task/<tid>/stat (after the last ')'). -EINVAL if malformed
 * or truncated. Pure: fuzzable. */
int vmt_os_proc_stat_parse(const char *buf, size_t len, vmt_os_proc_times_t *out);
/* Reads and parses /proc/self/task/<tid>/stat; ns through *user_ns / *sys_ns. */
int vmt_os_proc_thread_times(pid_t tid, int64_t *user_ns, int64_t *sys_ns);

/* ---- Time sources ---------------------------------------------------------------------- */
int64_t vmt_os_java_time_nanos(void);     /* CLOCK_MONOTONIC */
int64_t vmt_os_wall_time_nanos(void);     /* CLOCK_REALTIME: ns since the Unix epoch */
int64_t vmt_os_elapsed_nanos(void);       /* calibrated TSC (cached parameters) or monotonic */
const char *vmt_os_elapsed_source(void);
const char *vmt_os_elapsed_source_reason(void);

/* ---- Futex (process-private) ----------------------------------------------------------- *
 * The one blocking primitive the runtime builds its waits on (monitors, synchronizers, park,
 * sleep; the port's own tid_wait). Join waits in pthread_join (runtime/thread/join.c).
 * Deadlines are absolute CLOCK_MONOTONIC nanoseconds, the scale of vmt_os_java_time_nanos(),
 * so a wait re-issued after EINTR or a spurious wake keeps the caller's deadline exactly. */
#define VMT_OS_NO_DEADLINE INT64_MAX
/* Sleeps while *word == expected, until woken or the deadline. 0 when woken (or spuriously),
 * -EAGAIN if *word != expected on entry, -ETIMEDOUT, -EINTR (a signal). Callers re-check
 * their condition on every return. */
int vmt_os_futex_wait(_Atomic uint32_t *word, uint32_t expected, int64_t deadline_ns);
/* The same with an absolute CLOCK_REALTIME deadline (ns since the epoch): the kernel follows
 * changes of the wall clock while it sleeps (LockSupport.parkUntil's deadline is wall time). */
int vmt_os_futex_wait_realtime(_Atomic uint32_t *word, uint32_t expected, int64_t deadline_ns);
/* Wakes up to count waiters (INT32_MAX: all). Never fails on a valid address. */
void vmt_os_futex_wake(_Atomic uint32_t *word, int32_t count);
/* Moves up to count waiters of from (only if *from == expected) to wait on to, waking none
 * (FUTEX_CMP_REQUEUE): a notified monitor waiter then sleeps on the lock word until the
 * notifier releases the monitor, instead of waking to find it still held. 0 or -EAGAIN. */
int vmt_os_futex_requeue(_Atomic uint32_t *from, uint32_t expected, _Atomic uint32_t *to,
                         int32_t count);

/* The CPU's spin-wait hint (x86 pause, arm64 yield): one round of a bounded spin. */
static inline void vmt_os_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* A futex lock in one zero-initialised word: 0 free, 1 held, 2 held with sleepers (Drepper's
 * "Futexes Are Tricky", mutex2). For sections of a few stores, where a pthread mutex cannot
 * be used: its owner may be inside a fork's atfork window, ThreadSanitizer sees a pthread
 * mutex re-initialised in a fork child as a race with the parent's unlock, and it costs no
 * lock-set slot (TSan allows a thread 64 at once). A fork child resets the word to 0 (its
 * owner's process state row says so). Not recursive, not async-signal-safe. The lock spins
 * 100 rounds on the word before it sleeps; the unlock wakes one sleeper only when one said it
 * sleeps. */
/* The lock, or false once deadline (vmt_os_java_time_nanos's scale; VMT_OS_NO_DEADLINE: none)
 * has passed without it. A waiter that gives up leaves the word at 2, which costs the holder
 * one spare wake at its unlock. */
static inline bool vmt_os_futex_lock_until(_Atomic uint32_t *l, int64_t deadline) {
  uint32_t expected = 0;
  if (atomic_compare_exchange_strong_explicit(l, &expected, 1, memory_order_acquire,
                                              memory_order_relaxed))
    return true;
  for (int i = 0; i < 100; i++) {
    expected = 0;
    if (atomic_load_explicit(l, memory_order_relaxed) == 0 &&
        atomic_compare_exchange_strong_explicit(l, &expected, 1, memory_order_acquire,
                                                memory_order_relaxed))
      return true;
    vmt_os_cpu_relax();
  }
  while (atomic_exchange_explicit(l, 2, memory_order_acquire) != 0) {
    if (deadline != VMT_OS_NO_DEADLINE && vmt_os_java_time_nanos() >= deadline) return false;
    vmt_os_futex_wait(l, 2, deadline);
  }
  return true;
}
static inline void vmt_os_futex_lock(_Atomic uint32_t *l) {
  (void)vmt_os_futex_lock_until(l, VMT_OS_NO_DEADLINE);
}
static inline void vmt_os_futex_unlock(_Atomic uint32_t *l) {
  if (atomic_exchange_explicit(l, 0, memory_order_release) == 2) vmt_os_futex_wake(l, 1);
}

/* ---- Capabilities ---------------------------------------------------------------------- */
typedef struct vmt_os_caps {
  bool thread_cpu_time;           /* any thread's CPU time by clock id */
  bool current_thread_cpu_time;
  bool user_time;                 /* VIRT/PROF clocks work */
} vmt_os_caps_t;
const vmt_os_caps_t *vmt_os_caps(void);

/* ---- Stacks ---------------------------------------------------------------------------- */
/* The stack of th as pthread_getattr_np reports it: [*lo, *hi), and *guard bytes of the C
 * library's guard page(s) below lo. th is the calling thread or one not yet joined nor
 * detached. Allocates (glibc also asks the thread's affinity mask), so a thread that never
 * allocated is not made to ask. 0 or -errno. */
int vmt_os_thread_stack(pthread_t th, uintptr_t *lo, uintptr_t *hi, size_t *guard);
/* Reaps th (pthread_join), which has finished its work and is running its last steps: polls
 * pthread_tryjoin_np for up to spin_ns first, so that a joiner woken a few microseconds before
 * the thread's very end does not go to sleep a second time. 0 or -errno. */
int vmt_os_thread_reap(pthread_t th, int64_t spin_ns);

/* The page size (sysconf, read once). */
size_t vmt_os_page_size(void);
/* Makes [addr, addr + len) of the calling thread's stack (page aligned) inaccessible, or
 * readable and writable again. 0 or -errno (-ENOMEM: the process's map count is exhausted). */
int vmt_os_stack_protect(uintptr_t addr, size_t len, bool accessible);
/* An alternate signal stack for the calling thread (the handler of a stack overflow cannot run
 * on the stack that overflowed): mapped with a guard page below it, installed with
 * sigaltstack, the one it replaces kept for vmt_os_altstack_remove. */
typedef struct vmt_os_altstack {
  void *mem;           /* our mapping (guard page included), NULL when none */
  size_t mapped;
  void *old_sp;        /* the alternate stack it replaced (the sanitizers install their own) */
  size_t old_size;
  int old_flags;
} vmt_os_altstack_t;
/* 0 or -errno; nothing is left behind on failure. */
int vmt_os_altstack_install(vmt_os_altstack_t *a);
/* Puts the replaced alternate stack back and unmaps ours; a no-op when none. */
void vmt_os_altstack_remove(vmt_os_altstack_t *a);

/* ---- Timer slack ---------------------------------------------------------------------- *
 * How late the kernel may fire the calling thread's timers, to batch wake-ups (prctl
 * PR_SET_TIMERSLACK; per thread, inherited by the threads it creates; 50 us by default). A
 * timed futex wait or nanosleep of 1 ms overshoots by the slack plus the wake-up. */
/* ns > 0 sets it; 0 restores the default the thread inherited at its creation. 0 or -errno. */
int vmt_os_set_timer_slack(int64_t ns);
/* The calling thread's slack in ns, or -errno. */
int64_t vmt_os_timer_slack(void);

/* ---- Names ----------------------------------------------------------------------------- */
/* Cuts full to the kernel's 15 bytes at a UTF-8 boundary into os_name[16]. */
void vmt_os_native_name(const char *full, char os_name[16]);
/* Sets the calling thread's kernel name. 0 or -errno. */
int vmt_os_set_native_name(const char *os_name);

/* ---- Sampling: CPU-time timers, the timer signal, native stacks, symbols ---------------- *
 * What the profiler (runtime/profiler/) asks of the platform. A timer counts the CPU time of
 * one thread on that thread's own SCHED clock (the clock id computed from the record's tid)
 * and sends its signal to that thread only (Linux: SIGEV_THREAD_ID). On Linux a CPU timer
 * fires at most once per scheduler tick (HZ=250 here: at most 250 signals per second and
 * thread), and expirations that come while the signal is still pending, or between ticks, are
 * carried by the next signal as its overrun count, so a sample stands for 1 + overrun periods. */
typedef struct vmt_os_cpu_timer {
  void *handle;    /* timer_t; valid while `created` */
  bool created;
} vmt_os_cpu_timer_t;
/* Creates and starts a periodic timer on ot's own CPU clock: every period_ns of that thread's
 * CPU time, signal signo is sent to that thread with cookie as its value. The thread must be
 * bound and not exiting, and must stay so until the call returns (the caller's protocol,
 * runtime/profiler/arm.c, guarantees it): -ESRCH otherwise. -EINVAL (period <= 0, bad
 * signal), -EAGAIN (the kernel's limit on timers, RLIMIT_SIGPENDING), -ENOMEM. On success
 * *cpu_ns, if not NULL, is the thread's CPU time read right after the timer started (the
 * origin of its first period). */
int vmt_os_cpu_timer_start(const vmt_os_thread_t *ot, int signo, int64_t period_ns, void *cookie,
                           vmt_os_cpu_timer_t *out, int64_t *cpu_ns);
/* Deletes the timer (idempotent). Once it returns, the timer sends no new signal; one already
 * queued may still be delivered on kernels older than 6.13 (the caller removes its handler's
 * state first, and discards pending signals with SIG_IGN when it is done with the signal). */
void vmt_os_cpu_timer_delete(vmt_os_cpu_timer_t *timer);

/* What a signal handler learns from its siginfo and context. Async-signal-safe. */
typedef struct vmt_os_timer_signal {
  void *cookie;        /* the value given to vmt_os_cpu_timer_start */
  int32_t overrun;     /* expirations that sent no signal of their own (>= 0) */
  uintptr_t pc;        /* where the thread was interrupted; 0 if the context has none */
} vmt_os_timer_signal_t;
/* True, filling *out, if the signal was sent by a POSIX timer (not by kill or sigqueue). */
bool vmt_os_timer_signal(const siginfo_t *info, const void *ucontext, vmt_os_timer_signal_t *out);

/* Native stacks of the interrupted code. init prepares the unwinder once (x86-64: vmthread's
 * own CFI unwinder's table of loaded objects, os_linux/cfi_unwind.c; and libunwind, dlopen'ed:
 * the library keeps no DT_NEEDED on it); idempotent and thread-safe; -ENOTSUP when there is
 * neither, and unwind then returns the interrupted pc alone. unwind is async-signal-safe and
 * is called only from a signal handler on the interrupted thread, with that thread's stack
 * bounds [stack_lo, stack_hi) (0, 0 when unknown: then libunwind walks, unchecked): it writes up
 * to max program counters of the interrupted code into pcs, innermost first (pcs[0] the
 * interrupted pc, the others return addresses), and returns their number (>= 1); -EIO when the
 * unwinder failed, -ENOENT when the context has no pc. */
int vmt_os_native_unwind_init(void);
int vmt_os_native_unwind(const void *ucontext, uintptr_t stack_lo, uintptr_t stack_hi,
                         uintptr_t *pcs, int32_t max);
/* Outside handlers, now and then (the profiler's drainer, each round): takes in objects
 * loaded or unloaded since init. Cheap when nothing changed (one dl_iterate_phdr callback). */
void vmt_os_native_unwind_refresh(void);
/* Only when no handler can be inside unwind (the profiler's stop, after they drained): frees
 * what refresh replaced. */
void vmt_os_native_unwind_quiesce(void);
/* The same from the calling function, outside any handler (the cooperative mode's walk at a
 * poll): skip the `skip` innermost frames (the caller's own). The number written, or -errno
 * (-ENOTSUP without libunwind). */
int vmt_os_native_unwind_here(uintptr_t *pcs, int32_t max, int32_t skip);
/* "vmthread cfi", "libunwind" or "pc only": the handler's unwinder (for the profile's header and
 * the docs). */
const char *vmt_os_native_unwinder(void);

/* Symbols of code addresses in this process: function (every symbol table the objects carry,
 * the static functions' too), and source file and line where the object has DWARF line
 * tables (elfutils' libdw, dlopen'ed; dladdr alone otherwise). Not async-signal-safe: the
 * profiler's output path calls it. A symbolizer reads the process's mappings when opened:
 * code loaded later is named after a reopen. */
typedef struct vmt_os_symbolizer vmt_os_symbolizer_t;
typedef struct vmt_os_symbol {
  char function[256];  /* "" when unknown */
  char module[256];    /* the object's file name (basename), "" when unknown */
  char file[256];      /* source file, "" when unknown */
  int32_t line;        /* -1 when unknown */
  uintptr_t offset;    /* pc - function start, or pc - module base without a function */
} vmt_os_symbol_t;
/* NULL on -ENOMEM only (without libdw it answers through dladdr). */
vmt_os_symbolizer_t *vmt_os_symbolizer_open(void);
void vmt_os_symbolizer_close(vmt_os_symbolizer_t *s);
/* return_address: pc is a return address (the call is the byte before it). 0, or -ENOENT
 * when no object holds pc (out is then all unknown). */
int vmt_os_symbolize(vmt_os_symbolizer_t *s, uintptr_t pc, bool return_address,
                     vmt_os_symbol_t *out);
/* "libdw" or "dladdr". */
const char *vmt_os_symbolizer_kind(vmt_os_symbolizer_t *s);

/* ---- The loader's lock and fork ------------------------------------------------------------ *
 * Every call of the runtime that may take glibc's loader write lock (dl_iterate_phdr, dlopen,
 * dlclose, backtrace(3), a libunwind walk) runs between vmt_os_loader_enter and _exit: glibc
 * leaves that lock held in a fork child if a thread was inside at the fork, and fork waits for
 * these sections (os_linux/loader.c). Sections nest. enter returns false only with may_wait
 * false (a signal handler's walk: async-signal-safe then), when a fork is pending or the
 * thread is inside a section already; the caller does without the call. */
bool vmt_os_loader_enter(bool may_wait);
void vmt_os_loader_exit(void);

/* ---- Copies of the runtime in this process ---------------------------------------------- *
 * A process can hold more than one copy of the runtime: libvmthread.so.0 and any object that
 * linked libvmthread.a, each with its own registry that sees only its own threads. Each copy
 * carries a marker; the port finds the other copies' markers in every loaded object, also in
 * those loaded RTLD_LOCAL (JNI libraries are), where no symbol lookup would reach them. */
/* Marks this copy as in use (it has started or attached a thread). Idempotent; never fails. */
void vmt_os_copy_mark_in_use(void);
/* How many other copies in this process are in use; the file of the first one into path
 * ("" for the main program; nothing is written when len is 0). Never fails. */
int32_t vmt_os_other_copies_in_use(char *path, size_t len);

#endif /* VMT_RUNTIME_OS_H */
