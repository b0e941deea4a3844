/*
 * runtime/profiler/handler.c: the sampling signal's handler and its disposition.
 *
 * The handler runs on the sampled thread, in whatever that thread was doing: only
 * async-signal-safe work (POSIX.1-2008 2.4.3): atomics, the walker, the ring's words, a futex
 * wake. It finds its buffer through the thread's own record (vmt__current, one initial-exec TLS
 * load), checks that the signal's cookie is that buffer (a signal of another timer, or one
 * sent by kill(2), is never counted), walks the stack straight into the ring and publishes it.
 *
 * Which signal. Default SIGRTMIN + 6 (40 with glibc 2.36, whose SIGRTMIN is 34: it keeps 32
 * and 33 for itself). Not SIGPROF: JDK 25's CPU-time sampler (JEP 509), async-profiler,
 * gperftools and V8 all sample with it. Not the JVM's own signals (HotSpot: SIGSEGV, SIGBUS,
 * SIGFPE, SIGILL, SIGTRAP for its traps, SIGUSR2 for suspend/resume, SIGQUIT, SIGHUP, SIGINT,
 * SIGTERM), not SIGRTMIN itself (.NET's activation signal), not SIGRTMAX (Valgrind's).
 * The host is never overridden: a handler already installed on the signal makes the start
 * fail with -EBUSY, as the SIGQUIT dump would chain instead (management/sigquit.c) — chaining
 * is no answer here, since the host's handler would receive our timer signals.
 *
 * Stop (session.c) deletes the timers and waits for vmt__prof_in_handler to drain; then
 * uninstall sets SIG_IGN, which discards a signal still queued for a deleted timer (kernels
 * before 6.13 deliver those; 6.18 here drops them, checked), and restores the old disposition.
 */
#include <errno.h>
#include <string.h>

#include "runtime/profiler/profiler_impl.h"

_Static_assert(ATOMIC_INT_LOCK_FREE == 2 && ATOMIC_LLONG_LOCK_FREE == 2 &&
                   ATOMIC_POINTER_LOCK_FREE == 2,
               "the handler needs lock-free atomics");

_Atomic(const vmt__prof_config_t *) vmt__prof_handler_cfg;
_Atomic int32_t vmt__prof_in_handler;

static int installed_signo;              /* under vmt__prof.lock, like the two below */
static struct sigaction previous;
static bool installed;
static _Atomic int fork_signo;           /* the installed signal, for the fork handlers */
static sigset_t fork_saved_mask;         /* the forking thread's, around fork */
static bool fork_masked;

/* The forking thread takes no sample while the atfork handlers run: it holds every lock they
 * take (jemalloc's arenas among them), and a walk then is where an unwinder that allocated
 * would deadlock (ThreadSanitizer saw libunwind's lock taken there, its 65th). A signal that
 * came meanwhile is delivered when the parent's mask is back; none is pending in the child. */
static void signal_fork_prepare(void) {
  fork_masked = false;
  int signo = atomic_load(&fork_signo);
  if (signo == 0) return;
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, signo);
  fork_masked = pthread_sigmask(SIG_BLOCK, &s, &fork_saved_mask) == 0;
}
static void signal_fork_restore(void) {
  if (fork_masked) pthread_sigmask(SIG_SETMASK, &fork_saved_mask, NULL);
}
VMT__PROCESS_STATE(profiler_signal,
                   .symbols = "vmt__prof_handler_cfg vmt__prof_in_handler installed_signo "
                              "previous installed fork_signo fork_saved_mask fork_masked",
                   .rule = VMT__FORK_RESET,
                   .fork = "the sampling signal is blocked in the forking thread around fork; "
                           "the disposition is inherited and stays ours (harmless: no timer "
                           "is); the session's configuration is withdrawn and the count of "
                           "handlers in vanished threads zeroed by the profiler's child "
                           "handler (session.c)",
                   .rank = VMT__RANK_PROFILER + 5, .prepare = signal_fork_prepare,
                   .parent = signal_fork_restore, .child = signal_fork_restore);

static void lose(vmt__prof_slot_t *slot, vmt_prof_lost_cause_t cause, int64_t weight) {
  if (slot) {
    atomic_fetch_add_explicit(&slot->lost[cause], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&slot->lost_weight[cause], weight, memory_order_relaxed);
  } else {
    atomic_fetch_add_explicit(&vmt__prof.lost_unattributed[cause], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&vmt__prof.lost_unattributed_weight[cause], weight,
                              memory_order_relaxed);
  }
}

void vmt__prof_wake_drainer(void) {
  if (atomic_exchange_explicit(&vmt__prof.wake, 1, memory_order_seq_cst) == 0)
    vmt_os_futex_wake(&vmt__prof.wake, 1);
}

static void push_ready(vmt__prof_slot_t *slot) {
  if (atomic_exchange_explicit(&slot->queued, 1, memory_order_seq_cst) != 0) return;
  vmt__prof_slot_t *old = atomic_load_explicit(&vmt__prof.ready, memory_order_relaxed);
  do slot->ready_next = old;
  while (!atomic_compare_exchange_weak_explicit(&vmt__prof.ready, &old, slot,
                                                memory_order_seq_cst, memory_order_relaxed));
}

/* Writes one sample of `weight` into the thread's ring; the stack is walked in place: from the
 * signal's context, or (ucontext NULL, the cooperative mode at a poll) from here. */
__attribute__((noinline)) static void record(vmt__prof_slot_t *slot,
                                             const vmt__prof_config_t *cfg, vmt_thread_t *t,
                                             const void *ucontext, int64_t weight) {
  uint64_t head = atomic_load_explicit(&slot->head, memory_order_relaxed);
  uint64_t tail = atomic_load_explicit(&slot->tail, memory_order_acquire);
  uint64_t cap = slot->mask + 1, need = 1 + (uint64_t)cfg->max_depth;
  uint64_t at = head & slot->mask, room = cap - at;
  /* A sample never wraps: pad to the end of the ring when it does not fit before it. */
  uint64_t pad = room < need ? room : 0;
  if (cap - (head - tail) < pad + need) {
    lose(slot, VMT_PROF_LOST_BUFFER_FULL, weight);
    vmt__prof_wake_drainer();
    return;
  }
  if (pad) {
    slot->words[at] = vmt__prof_header(0, 0, VMT__PROF_KIND_PAD);
    at = 0;
  }
  uintptr_t *frames = (uintptr_t *)&slot->words[at + 1];
  _Static_assert(sizeof(uintptr_t) == sizeof(uint64_t), "one frame per ring word");
  int n = 0;
  uint32_t kind = VMT__PROF_KIND_VM;
  if (cfg->walker) n = cfg->walker(t, ucontext, frames, cfg->max_depth, cfg->walker_ctx);
  if (n == 0) {
    kind = VMT__PROF_KIND_NATIVE;
    /* At a poll: past record and vmt__prof_coop_poll (both noinline), from their caller on. */
    n = ucontext ? vmt_os_native_unwind(ucontext, slot->stack_lo, slot->stack_hi, frames,
                                        cfg->max_depth)
                 : vmt_os_native_unwind_here(frames, cfg->max_depth, 2);
  }
  if (n < 0) {
    lose(slot, n == -EAGAIN ? VMT_PROF_LOST_UNSAFE : VMT_PROF_LOST_WALK_FAILED, weight);
    return;
  }
  if (n > cfg->max_depth) n = cfg->max_depth;
  if (weight > UINT32_MAX) weight = UINT32_MAX;
  slot->words[at] = vmt__prof_header((uint32_t)weight, (uint32_t)n, kind);
  head += pad + 1 + (uint64_t)n;
  atomic_store_explicit(&slot->head, head, memory_order_release);
  push_ready(slot);
  /* Half full: the drainer's next round is too far away for this thread. */
  if (cap - (head - tail) < cap / 2) vmt__prof_wake_drainer();
}

static void handler(int sig, siginfo_t *info, void *ucontext) {
  (void)sig;
  int saved_errno = errno;
  vmt_os_timer_signal_t ts;
  if (!vmt_os_timer_signal(info, ucontext, &ts)) {
    errno = saved_errno;
    return;   /* kill(2) or sigqueue(3): not a sample */
  }
  atomic_fetch_add_explicit(&vmt__prof_in_handler, 1, memory_order_seq_cst);
  const vmt__prof_config_t *cfg = atomic_load_explicit(&vmt__prof_handler_cfg,
                                                       memory_order_seq_cst);
  vmt_thread_t *t = vmt__current;
  vmt__prof_slot_t *slot =
      t ? atomic_load_explicit(&t->prof.slot, memory_order_seq_cst) : NULL;
  int64_t weight = 1 + (int64_t)ts.overrun;
  if (cfg == NULL || slot == NULL || slot != ts.cookie) {
    /* A session that is stopping, a thread between disarm and arm, or a signal queued for a
     * timer deleted since: its slot (the cookie) is never touched. */
    if (cfg) lose(NULL, VMT_PROF_LOST_DISARMED, weight);
  } else if (cfg->mode == VMT_PROF_MODE_COOPERATIVE &&
             (!vmt__exec_is_safe((uint32_t)vmt__exec_state_of(t)) ||
              atomic_load_explicit(&slot->coop_writing, memory_order_relaxed))) {
    /* JEP 518's idea: in managed or VM code the VM's frames may be mid-change; leave the
     * weight for the thread to walk itself at its next poll, which the handshake flag makes
     * take its slow path (the thread's own word: the CAS loops of vmservices retry). */
    atomic_fetch_add_explicit(&slot->coop_weight, weight, memory_order_relaxed);
    atomic_store_explicit(&t->prof.at_poll, 1, memory_order_release);
    atomic_fetch_or_explicit(&t->exec, VMT__EXEC_HANDSHAKE, memory_order_seq_cst);
  } else {
    /* CLOCK_MONOTONIC through the vDSO: async-signal-safe, 27 ns a read here. */
    int64_t t0 = vmt_os_java_time_nanos();
    record(slot, cfg, t, ucontext, weight);
    atomic_fetch_add_explicit(&slot->handler_ns, vmt_os_java_time_nanos() - t0,
                              memory_order_relaxed);
  }
  atomic_fetch_sub_explicit(&vmt__prof_in_handler, 1, memory_order_seq_cst);
  errno = saved_errno;
}

int vmt__prof_default_signal(void) { return SIGRTMIN + 6; }

/* Counted in vmt__prof_in_handler like a handler: the stop waits for it before it frees. */
__attribute__((noinline)) void vmt__prof_coop_poll(vmt_thread_t *t) {
  atomic_fetch_add_explicit(&vmt__prof_in_handler, 1, memory_order_seq_cst);
  atomic_store_explicit(&t->prof.at_poll, 0, memory_order_relaxed);
  const vmt__prof_config_t *cfg = atomic_load_explicit(&vmt__prof_handler_cfg,
                                                       memory_order_seq_cst);
  vmt__prof_slot_t *slot = atomic_load_explicit(&t->prof.slot, memory_order_seq_cst);
  if (cfg && slot && cfg->mode == VMT_PROF_MODE_COOPERATIVE) {
    int64_t weight = atomic_exchange_explicit(&slot->coop_weight, 0, memory_order_relaxed);
    if (weight > 0) {
      atomic_store_explicit(&slot->coop_writing, 1, memory_order_relaxed);
      atomic_signal_fence(memory_order_seq_cst);
      int64_t t0 = vmt_os_java_time_nanos();
      record(slot, cfg, t, NULL, weight);
      atomic_fetch_add_explicit(&slot->handler_ns, vmt_os_java_time_nanos() - t0,
                                memory_order_relaxed);
      atomic_signal_fence(memory_order_seq_cst);
      atomic_store_explicit(&slot->coop_writing, 0, memory_order_relaxed);
    }
  }
  atomic_fetch_sub_explicit(&vmt__prof_in_handler, 1, memory_order_seq_cst);
}

bool vmt__prof_signal_usable(int signo) {
  if (signo <= 0 || signo >= NSIG) return false;
  switch (signo) {
    case SIGKILL: case SIGSTOP:
    /* Synchronous: raised by the faulting instruction itself, they belong to the host. */
    case SIGSEGV: case SIGBUS: case SIGFPE: case SIGILL: case SIGTRAP: case SIGSYS:
    /* The thread dump's (vmt_mx_enable_sigquit_dump, a JVM's jstack): the dump chains to the
     * handler it finds, so sampling there made every timer signal a thread dump (51 for 51
     * samples, test/mx_adversarial_test.c); as the control signal, with both features on it
     * and disabled in the order they were enabled (each restores what it found), kill -3
     * was left to control's idle handler for good (test/bad_input_test.c). */
    case SIGQUIT:
      return false;
    default:
      break;
  }
  /* glibc keeps the real-time signals below SIGRTMIN for itself (cancellation, setxid). */
  return signo < 32 || signo >= SIGRTMIN;
}

static bool is_ours(const struct sigaction *sa) {
  return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == handler;
}

static bool is_function(const struct sigaction *sa) {
  if (sa->sa_flags & SA_SIGINFO) return sa->sa_sigaction != NULL;
  return sa->sa_handler != SIG_DFL && sa->sa_handler != SIG_IGN;
}

int vmt__prof_handler_install(int signo) {
  if (installed && installed_signo == signo) return 0;
  if (installed) vmt__prof_handler_uninstall();
  struct sigaction seen;
  if (sigaction(signo, NULL, &seen) != 0) return -errno;
  if (is_function(&seen) && !is_ours(&seen)) return -EBUSY;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = handler;
  sigemptyset(&sa.sa_mask);
  /* SA_RESTART: a sample never makes the sampled thread's system call fail with EINTR.
   * SA_ONSTACK: a thread that set up an alternate stack (a VM's, for stack overflows) takes
   * the signal there. */
  sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  if (sigaction(signo, &sa, &previous) != 0) return -errno;
  if (is_function(&previous) && !is_ours(&previous)) {
    /* The host installed one between our two calls: give it back. */
    sigaction(signo, &previous, NULL);
    return -EBUSY;
  }
  if (is_ours(&previous)) {
    /* Left installed by a fork parent: SIG_DFL is what it replaced. */
    memset(&previous, 0, sizeof(previous));
    previous.sa_handler = SIG_DFL;
  }
  installed_signo = signo;
  installed = true;
  atomic_store(&fork_signo, signo);
  return 0;
}

void vmt__prof_handler_uninstall(void) {
  if (!installed) return;
  struct sigaction now;
  /* A host that put its own handler there since keeps it. */
  if (sigaction(installed_signo, NULL, &now) == 0 && is_ours(&now)) {
    struct sigaction ignore;
    memset(&ignore, 0, sizeof(ignore));
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(installed_signo, &ignore, NULL);   /* discards pending ones, in every thread */
    sigaction(installed_signo, &previous, NULL);
  }
  installed = false;
  atomic_store(&fork_signo, 0);
}
