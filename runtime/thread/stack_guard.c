/*
 * runtime/thread/stack_guard.c: guard zones of started threads (vmthread/stack.h) and the
 * SIGSEGV handler that turns a frame reaching one into a report the VM can make a
 * StackOverflowError of. HotSpot's zones are the model (StackOverflow in
 * share/runtime/stackOverflow.hpp: reserved, yellow and red pages at the stack's end; the
 * yellow and reserved zones are disabled when hit and re-enabled once the stack has unwound).
 *
 * Set-up runs on the new thread before its body (start.c): the bounds (pthread_getattr_np, the
 * one allocation a thread with zones makes at start), the alternate signal stack, the zones'
 * protection, and, process-wide and once, the handler. The thread undoes its zones and its
 * alternate stack at its end (exit.c): glibc caches thread stacks and hands them to the next
 * thread as they are, so a zone left protected would fault in a thread that never asked for it.
 *
 * The handler is process-wide state and the process may not be ours: a JVM host installs its
 * own SIGSEGV handler (implicit null checks, safepoint polls) before it loads us. Every fault
 * that is not a zone of the faulting runtime thread goes to the handler that was installed
 * before ours, the way HotSpot chains (os::Posix's call_chained_handler): with that handler's
 * mask and flags (SA_SIGINFO, SA_NODEFER, SA_RESETHAND), or, for SIG_DFL and SIG_IGN, the
 * default action. Only a thread with guard zones makes us install it, so a host that never
 * asks for zones never sees it. A host that replaces SIGSEGV after us must chain likewise
 * (HotSpot's libjsig does); docs/thread-api.md says so.
 *
 * Fork: the handler and the child's copy of the forking thread's zones and alternate stack
 * are inherited as they are (a fork copies the address space and the dispositions); the
 * installation's state is settled in the child (the rows below).
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "runtime/thread/thread_impl.h"

/* The handler's installation: NONE, then INSTALLING (one thread's sigaction in progress), then
 * INSTALLED. No lock: a fork child finds out from the disposition itself what a vanished
 * installer had done (fork rule below). */
enum { NONE = 0, INSTALLING, INSTALLED };
static _Atomic int install_state;
static struct sigaction previous;   /* written by the one installer, before INSTALLED */
static void on_segv(int sig, siginfo_t *info, void *uc);

static _Atomic(vmt_stack_overflow_fn) handler_fn;
static _Atomic(void *) handler_ctx;

static void install_fork_child(void) {
  if (atomic_load_explicit(&install_state, memory_order_relaxed) != INSTALLING) return;
  /* Its installer vanished mid-way: the kernel's disposition says whether it got that far
   * (`previous` is written by the same sigaction call). */
  struct sigaction now;
  bool ours = sigaction(SIGSEGV, NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) &&
              now.sa_sigaction == on_segv;
  atomic_store_explicit(&install_state, ours ? INSTALLED : NONE, memory_order_relaxed);
}
VMT__PROCESS_STATE(stack_guard_install, .symbols = "install_state previous",
                   .rule = VMT__FORK_RESET,
                   .fork = "the child inherits the signal dispositions: our handler stays "
                           "installed over the one it chains to; an installation a vanished "
                           "thread left in progress is settled from the disposition itself",
                   .rank = VMT__RANK_THREAD + 3, .child = install_fork_child);
VMT__PROCESS_STATE(stack_guard_handler, .symbols = "handler_fn handler_ctx",
                   .rule = VMT__FORK_KEEP,
                   .fork = "the VM's overflow handler stays set; the forking thread's zones and "
                           "alternate stack are copied with its stack, as they were");

const char *vmt_stack_zone_name(vmt_stack_zone_t zone) {
  switch (zone) {
    case VMT_STACK_ZONE_RESERVED: return "reserved";
    case VMT_STACK_ZONE_YELLOW: return "yellow";
    case VMT_STACK_ZONE_RED: return "red";
    case VMT_STACK_ZONE_NONE: break;
  }
  return "none";
}

void vmt_stack_overflow_handler_set(vmt_stack_overflow_fn fn, void *ctx) {
  atomic_store_explicit(&handler_ctx, ctx, memory_order_relaxed);
  atomic_store_explicit(&handler_fn, fn, memory_order_release);
}

/* ---- Zones ------------------------------------------------------------------------------- */
typedef struct zone_range {
  uintptr_t lo, hi;
} zone_range_t;

static zone_range_t zone_range(const struct vmt__thread_cold *c, vmt_stack_zone_t z) {
  uintptr_t red = c->stack_lo, yellow = red + c->guard.red_size,
            reserved = yellow + c->guard.yellow_size, top = reserved + c->guard.reserved_size;
  switch (z) {
    case VMT_STACK_ZONE_RED: return (zone_range_t){red, yellow};
    case VMT_STACK_ZONE_YELLOW: return (zone_range_t){yellow, reserved};
    case VMT_STACK_ZONE_RESERVED: return (zone_range_t){reserved, top};
    case VMT_STACK_ZONE_NONE: break;
  }
  return (zone_range_t){0, 0};
}

static vmt_stack_zone_t zone_of(const struct vmt__thread_cold *c, uintptr_t addr) {
  for (int z = VMT_STACK_ZONE_RESERVED; z <= VMT_STACK_ZONE_RED; z++) {
    zone_range_t r = zone_range(c, (vmt_stack_zone_t)z);
    if (addr >= r.lo && addr < r.hi) return (vmt_stack_zone_t)z;
  }
  return VMT_STACK_ZONE_NONE;
}

static uintptr_t zones_top(const struct vmt__thread_cold *c) {
  return zone_range(c, VMT_STACK_ZONE_RESERVED).hi;
}

/* ---- The handler ------------------------------------------------------------------------- */
/* Async-signal-safe formatting for the report: decimal and hex into buf, returns the end. */
static char *put_str(char *p, char *end, const char *s) {
  while (*s && p < end) *p++ = *s++;
  return p;
}
static char *put_num(char *p, char *end, uint64_t v, unsigned base) {
  char tmp[24];
  int n = 0;
  do {
    tmp[n++] = "0123456789abcdef"[v % base];
    v /= base;
  } while (v && n < (int)sizeof(tmp));
  while (n > 0 && p < end) *p++ = tmp[--n];
  return p;
}

static void report_unhandled(const vmt_thread_t *t, vmt_stack_zone_t z, uintptr_t addr) {
  char buf[256], *p = buf, *end = buf + sizeof(buf) - 1;
  p = put_str(p, end, "vmthread: stack overflow: thread #");
  p = put_num(p, end, (uint64_t)t->id, 10);
  p = put_str(p, end, " reached its ");
  p = put_str(p, end, vmt_stack_zone_name(z));
  p = put_str(p, end, " zone at 0x");
  p = put_num(p, end, addr, 16);
  p = put_str(p, end, z == VMT_STACK_ZONE_RED ? " (the VM's handler returned)\n"
                                              : " and no overflow handler is set\n");
  ssize_t unused = write(STDERR_FILENO, buf, (size_t)(p - buf));
  (void)unused;
}

/* What the previous disposition would have done with this signal. */
static void chain(int sig, siginfo_t *info, void *uc) {
  struct sigaction prev = previous;
  bool siginfo = (prev.sa_flags & SA_SIGINFO) != 0;
  void (*h)(int) = prev.sa_handler;
  if (siginfo || (h != SIG_DFL && h != SIG_IGN)) {
    /* Its mask (and its own signal unless SA_NODEFER) while it runs, as the kernel would. */
    sigset_t mask = prev.sa_mask, old;
    if (!(prev.sa_flags & SA_NODEFER)) sigaddset(&mask, sig);
    pthread_sigmask(SIG_BLOCK, &mask, &old);
    if (prev.sa_flags & SA_RESETHAND) previous.sa_handler = SIG_DFL, previous.sa_flags = 0;
    if (siginfo)
      prev.sa_sigaction(sig, info, uc);
    else
      h(sig);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return;
  }
  if (h == SIG_IGN && info->si_code <= 0) return;   /* a sent SIGSEGV it ignored */
  /* The default action. A fault (si_code > 0) happens again when we return, now to SIG_DFL;
   * a sent signal is sent again, and arrives once this handler has returned. An ignored
   * fault is fatal anyway (the kernel forces the default action). */
  struct sigaction dfl;
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, NULL);
  if (info->si_code <= 0) raise(sig);
}

/* Opens z and every zone above it (a big frame may skip the reserved zone). */
static void open_from(struct vmt__thread_cold *c, vmt_stack_zone_t z) {
  unsigned done = atomic_load_explicit(&c->zones_disabled, memory_order_relaxed);
  for (int k = z; k >= VMT_STACK_ZONE_RESERVED; k--) {
    zone_range_t r = zone_range(c, (vmt_stack_zone_t)k);
    if (r.hi == r.lo || (done & (1u << k))) continue;
    if (vmt_os_stack_protect(r.lo, r.hi - r.lo, true) == 0) done |= 1u << k;
  }
  atomic_store_explicit(&c->zones_disabled, done, memory_order_relaxed);
}

static void on_segv(int sig, siginfo_t *info, void *uc) {
  int saved_errno = errno;
  vmt_thread_t *t = vmt__current;
  struct vmt__thread_cold *c = t ? t->cold : NULL;
  vmt_stack_zone_t z = VMT_STACK_ZONE_NONE;
  if (c && atomic_load_explicit(&c->zones_armed, memory_order_relaxed) && info->si_code > 0)
    z = zone_of(c, (uintptr_t)info->si_addr);
  vmt_stack_overflow_fn fn = atomic_load_explicit(&handler_fn, memory_order_acquire);
  if (z == VMT_STACK_ZONE_NONE) {
    chain(sig, info, uc);
  } else if (fn == NULL) {
    report_unhandled(t, z, (uintptr_t)info->si_addr);
    chain(sig, info, uc);
  } else {
    if (z != VMT_STACK_ZONE_RED) open_from(c, z);
    vmt_stack_overflow_t ev = {
        .thread = t, .zone = z, .fault_address = info->si_addr, .siginfo = info, .ucontext = uc};
    fn(&ev, atomic_load_explicit(&handler_ctx, memory_order_relaxed));
    if (z == VMT_STACK_ZONE_RED) {
      /* No way on: the red zone stays closed, so returning would fault again forever. */
      report_unhandled(t, z, (uintptr_t)info->si_addr);
      chain(sig, info, uc);
    }
  }
  errno = saved_errno;
}

static int install_handler(void) {
  int expected = NONE;
  if (atomic_compare_exchange_strong(&install_state, &expected, INSTALLING)) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    int rc = sigaction(SIGSEGV, &sa, &previous) == 0 ? 0 : -errno;
    atomic_store(&install_state, rc == 0 ? INSTALLED : NONE);
    return rc;
  }
  /* Another thread installs it: one system call away. */
  while (atomic_load(&install_state) == INSTALLING) sched_yield();
  return atomic_load(&install_state) == INSTALLED ? 0 : install_handler();
}

/* ---- Set-up and tear-down, on the thread itself ---------------------------------------- */
int vmt__stack_guard_begin(vmt_thread_t *t) {
  struct vmt__thread_cold *c = t->cold;
  size_t total = c->guard.red_size + c->guard.yellow_size + c->guard.reserved_size;
  if (total == 0) return 0;
  int rc = vmt__stack_bounds_ensure(t);
  /* The options checked the sizes against the stack size; the stack glibc gave must agree,
   * by the same rule: zones and VMT__STACK_GUARD_MIN_USABLE within [lo, hi). Measured against
   * this frame instead, the few KiB glibc keeps at the top (static TLS, the descriptor) and
   * the frames above us made every start the options accepted at the edge run without zones.
   * The frame itself must of course be above them. */
  uintptr_t here = (uintptr_t)__builtin_frame_address(0);
  if (rc == 0 && (c->stack_lo + total + VMT__STACK_GUARD_MIN_USABLE > c->stack_hi ||
                  c->stack_lo + total + vmt_os_page_size() > here))
    rc = -ENOSPC;
  if (rc == 0) rc = install_handler();
  if (rc == 0) rc = vmt_os_altstack_install(&c->altstack);
  if (rc == 0) {
    rc = vmt_os_stack_protect(c->stack_lo, total, false);
    if (rc) vmt_os_altstack_remove(&c->altstack);
  }
  if (rc) {
    memset(&c->guard, 0, sizeof(c->guard));
    return rc;
  }
  atomic_store_explicit(&c->zones_disabled, 0, memory_order_relaxed);
  atomic_store_explicit(&c->zones_armed, true, memory_order_release);
  __atomic_store_n(&c->fast.stack_limit, zones_top(c), __ATOMIC_RELAXED);
  return 0;
}

void vmt__stack_guard_end(vmt_thread_t *t) {
  struct vmt__thread_cold *c = t->cold;
  if (!atomic_load_explicit(&c->zones_armed, memory_order_relaxed)) return;
  atomic_store_explicit(&c->zones_armed, false, memory_order_relaxed);
  /* Whatever happens to the stack after us (glibc's cache hands it to the next thread as it
   * is), it must be plain memory again. */
  vmt_os_stack_protect(c->stack_lo, zones_top(c) - c->stack_lo, true);
  vmt_os_altstack_remove(&c->altstack);
}

int vmt_stack_guard_reenable(void) {
  vmt_thread_t *t = vmt__current;
  if (t == NULL) return -EPERM;
  struct vmt__thread_cold *c = t->cold;
  unsigned open = atomic_load_explicit(&c->zones_disabled, memory_order_relaxed);
  if (!atomic_load_explicit(&c->zones_armed, memory_order_relaxed) || open == 0) return 0;
  uintptr_t here = (uintptr_t)__builtin_frame_address(0);
  if (here < zones_top(c) + vmt_os_page_size()) return -EBUSY;
  for (int k = VMT_STACK_ZONE_RED; k >= VMT_STACK_ZONE_RESERVED; k--) {
    if (!(open & (1u << k))) continue;
    zone_range_t r = zone_range(c, (vmt_stack_zone_t)k);
    int rc = vmt_os_stack_protect(r.lo, r.hi - r.lo, false);
    if (rc) {
      atomic_store_explicit(&c->zones_disabled, open, memory_order_relaxed);
      return rc;
    }
    open &= ~(1u << k);
  }
  atomic_store_explicit(&c->zones_disabled, 0, memory_order_relaxed);
  return 0;
}
