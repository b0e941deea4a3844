/*
 * os_linux/unwind.c: the native stack of interrupted code, from inside a signal handler, for
 * the profiler (runtime/profiler/handler.c).
 *
 * Which unwinder, and why. Debian's glibc and any -O2 code are built without frame pointers,
 * so a frame-pointer walk stops (or wanders off into garbage) at the first such frame: it
 * only suits code built for it. The walk must read the .eh_frame call-frame information every
 * object carries. On x86-64 the handler uses vmthread's own CFI unwinder (cfi_unwind.c): no
 * lock, no allocation, no system call, every stack word checked against the thread's stack
 * bounds (asked when the thread is armed, runtime/profiler/arm.c). Measured with
 * //bench:unwind (one walk of the same 15-frame stack from a signal handler, both unwinders
 * in each handler; 2026-12-02 05:50 UTC, on main 5d648ce, three runs): p50 1.17-1.80 us with
 * it, 6.68-7.77 us with libunwind (4.3-5.8x), equal frames in every walk. libunwind's local unwinder (Debian's libunwind8) is documented
 * async-signal-safe (libunwind(3)), but with its global cache (the default) each step takes a
 * lock that blocks signals with two sigprocmask calls, most of its cost (libgcc's
 * _Unwind_Backtrace measured the same, 10-13 us for 8 frames, 2026-12-01); its per-thread
 * cache keeps its state in dynamic TLS, which glibc allocates with malloc on a thread's first
 * touch: not in a signal handler.
 *
 * libunwind stays where it is the right tool: the cooperative mode's walk at a poll
 * (vmt_os_native_unwind_here: not in a handler, so its lock costs time only, and the poll is
 * not the signal mode's per-sample path), a thread whose stack bounds are unknown (nothing to
 * check a stack read against), other architectures (cfi_unwind.c knows x86-64's registers
 * and signal frame only), and ThreadSanitizer (below). The tests of internals compare the two
 * walks frame for frame (test/unwind_linux_internal_test.c).
 *
 * dlopen, not DT_NEEDED: libunwind.so.8 exports _Unwind_RaiseException and the rest of the
 * C++ ABI's unwinder; linked into the library it would be found before libgcc_s in a host
 * that links us early, and its _Unwind_* would replace the host's. Opened RTLD_LOCAL its
 * symbols stay private, and libvmthread.so.0 keeps needing libc alone (a stock JVM loads it
 * with no environment, docs/embedding.md). Without libunwind (not installed, or a build
 * without its header) the own unwinder still walks on x86-64; elsewhere, and for a thread
 * without known stack bounds, a sample is then the interrupted pc alone.
 *
 * ThreadSanitizer delays asynchronous signals to its next interceptor and then calls the
 * handler with a copy of the context taken at delivery, whose stack has been reused since:
 * under TSan the walk starts from the handler's own frame instead (what it shows is the
 * deferral point, docs/profiler.md).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <ucontext.h>

#include "os_linux/os_impl.h"
#include "runtime/process.h"

#if defined(__has_include)
#if __has_include(<libunwind.h>)
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#define VMT_OS_HAVE_LIBUNWIND 1
#endif
#endif

#ifdef VMT_OS_HAVE_LIBUNWIND
/* The local-only names are macros (unw_step is _ULx86_64_step on x86-64): their strings are
 * what dlsym needs. */
#define VMT_OS_STR2(x) #x
#define VMT_OS_STR(x) VMT_OS_STR2(x)

static struct {
  int (*init_local2)(unw_cursor_t *, unw_context_t *, int);
  int (*init_local)(unw_cursor_t *, unw_context_t *);
  int (*step)(unw_cursor_t *);
  int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
  int (*getcontext)(unw_context_t *);
  int (*is_signal_frame)(unw_cursor_t *);
} unw;
#endif

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static _Atomic bool have_unwinder;
#ifdef VMT_OS_HAVE_LIBUNWIND
#define UNWINDER_SYMBOLS "unw init_once have_unwinder"
#else
#define UNWINDER_SYMBOLS "init_once have_unwinder"
#endif
VMT__PROCESS_STATE(unwinder, .symbols = UNWINDER_SYMBOLS, .rule = VMT__FORK_KEEP,
                   .fork = "the loaded libunwind and its functions are the child's too");

#ifdef VMT_OS_HAVE_LIBUNWIND
/* dlopen, the first walk and a dlclose, all in one loader section (os_linux/loader.c). */
static void load_in_section(void) {
  void *lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) return;
  unw.init_local2 = (int (*)(unw_cursor_t *, unw_context_t *, int))dlsym(
      lib, VMT_OS_STR(unw_init_local2));
  unw.init_local = (int (*)(unw_cursor_t *, unw_context_t *))dlsym(lib,
                                                                   VMT_OS_STR(unw_init_local));
  unw.step = (int (*)(unw_cursor_t *))dlsym(lib, VMT_OS_STR(unw_step));
  unw.get_reg = (int (*)(unw_cursor_t *, unw_regnum_t, unw_word_t *))dlsym(
      lib, VMT_OS_STR(unw_get_reg));
  unw.getcontext = (int (*)(unw_context_t *))dlsym(lib, VMT_OS_STR(unw_tdep_getcontext));
  unw.is_signal_frame = (int (*)(unw_cursor_t *))dlsym(lib, VMT_OS_STR(unw_is_signal_frame));
  if (!unw.init_local2 || !unw.init_local || !unw.step || !unw.get_reg || !unw.getcontext ||
      !unw.is_signal_frame) {
    dlclose(lib);
    return;
  }
  /* The first walk initialises libunwind (its locks, the unwind tables of every loaded
   * object); do it here, outside any handler. The library stays loaded for the process. */
  unw_context_t uc;
  unw_cursor_t c;
  if (unw.getcontext(&uc) == 0 && unw.init_local(&c, &uc) == 0)
    for (int i = 0; i < 64 && unw.step(&c) > 0; i++) {
    }
  atomic_store_explicit(&have_unwinder, true, memory_order_release);
}
static void load(void) {
  vmt_os_loader_enter(true);
  load_in_section();
  vmt_os_loader_exit();
}
#else
static void load(void) {}
#endif

/* The handler's walk uses vmthread's own unwinder on x86-64, except under ThreadSanitizer
 * (the header says why). */
#if VMT__CFI_UNWINDER && !defined(__SANITIZE_THREAD__)
#define USE_OWN 1
#else
#define USE_OWN 0
#endif

int vmt_os_native_unwind_init(void) {
  pthread_once(&init_once, load);
#if USE_OWN
  if (vmt__cfi_prepare() == 0) return 0;
#endif
  return atomic_load_explicit(&have_unwinder, memory_order_acquire) ? 0 : -ENOTSUP;
}

void vmt_os_native_unwind_refresh(void) {
#if USE_OWN
  (void)vmt__cfi_refresh();
#endif
}

void vmt_os_native_unwind_quiesce(void) {
#if VMT__CFI_UNWINDER
  vmt__cfi_release_retired();
#endif
}

const char *vmt_os_native_unwinder(void) {
#if USE_OWN
  if (vmt__cfi_ready()) return "vmthread cfi";
#endif
  return atomic_load_explicit(&have_unwinder, memory_order_acquire) ? "libunwind" : "pc only";
}

static uintptr_t context_pc(const void *ucontext) {
#if defined(__x86_64__)
  return (uintptr_t)((const ucontext_t *)ucontext)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
  return (uintptr_t)((const ucontext_t *)ucontext)->uc_mcontext.pc;
#else
  (void)ucontext;
  return 0;
#endif
}

#ifdef VMT_OS_HAVE_LIBUNWIND
/* Steps the cursor, writing the ip of each frame; returns the number written. */
static int32_t walk(unw_cursor_t *c, uintptr_t *pcs, int32_t max) {
  int32_t n = 0;
  do {
    unw_word_t ip;
    if (unw.get_reg(c, UNW_REG_IP, &ip) != 0 || ip == 0) break;
    pcs[n++] = (uintptr_t)ip;
  } while (n < max && unw.step(c) > 0);
  return n;
}
#endif

int32_t vmt__libunwind_walk(const void *ucontext, uintptr_t *pcs, int32_t max) {
  if (ucontext == NULL || pcs == NULL || max <= 0) return -EINVAL;
#ifdef VMT_OS_HAVE_LIBUNWIND
  if (atomic_load_explicit(&have_unwinder, memory_order_acquire)) {
    /* The signal's context is the interrupted code's: the kernel saved every register. */
    unw_cursor_t c;
    /* libunwind finds each frame's tables through dl_iterate_phdr: not while a fork waits. */
    if (!vmt_os_loader_enter(false)) return -EAGAIN;
    int32_t n = unw.init_local2(&c, (unw_context_t *)ucontext, UNW_INIT_SIGNAL_FRAME) == 0
                    ? walk(&c, pcs, max)
                    : -1;
    vmt_os_loader_exit();
    return n > 0 ? n : -EIO;
  }
#endif
  return -ENOTSUP;
}

int vmt_os_native_unwind(const void *ucontext, uintptr_t stack_lo, uintptr_t stack_hi,
                         uintptr_t *pcs, int32_t max) {
  if (pcs == NULL || max <= 0) return -EINVAL;
  uintptr_t pc = ucontext ? context_pc(ucontext) : 0;
#if USE_OWN
  /* Without the thread's stack bounds no stack word can be checked: libunwind then. */
  if (ucontext && stack_lo < stack_hi && vmt__cfi_ready()) {
    return vmt__cfi_walk(ucontext, stack_lo, stack_hi, pcs, max);
  }
#else
  (void)stack_lo;
  (void)stack_hi;
#endif
#ifdef VMT_OS_HAVE_LIBUNWIND
  if (atomic_load_explicit(&have_unwinder, memory_order_acquire)) {
#if defined(__SANITIZE_THREAD__)
    unw_cursor_t c;
    /* From here, past the handler's frames and the signal frame if the signal was not
     * deferred (then the interrupted pc follows it); else what is there is the deferral point. */
    unw_context_t here;
    if (!vmt_os_loader_enter(false)) return -EAGAIN;
    int32_t n = unw.getcontext(&here) == 0 && unw.init_local(&c, &here) == 0
                    ? walk(&c, pcs, max)
                    : 0;
    vmt_os_loader_exit();
    for (int32_t i = 0; i < n; i++)
      if (pcs[i] == pc && pc != 0) {
        for (int32_t j = i; j < n; j++) pcs[j - i] = pcs[j];
        return n - i;
      }
    return n > 0 ? n : -EIO;
#else
    return ucontext ? vmt__libunwind_walk(ucontext, pcs, max) : -EIO;
#endif
  }
#endif
  if (pc == 0) return -ENOENT;
  pcs[0] = pc;
  return 1;
}

__attribute__((noinline)) int vmt_os_native_unwind_here(uintptr_t *pcs, int32_t max,
                                                        int32_t skip) {
  if (pcs == NULL || max <= 0 || skip < 0) return -EINVAL;
#ifdef VMT_OS_HAVE_LIBUNWIND
  if (atomic_load_explicit(&have_unwinder, memory_order_acquire)) {
    unw_context_t here;
    unw_cursor_t c;
    if (!vmt_os_loader_enter(false)) return -EAGAIN;
    int32_t n = -1;
    if (unw.getcontext(&here) == 0 && unw.init_local(&c, &here) == 0) {
      /* This function's own frame, then the caller's `skip`. */
      int32_t i = 0;
      while (i <= skip && unw.step(&c) > 0) i++;
      if (i > skip) n = walk(&c, pcs, max);
    }
    vmt_os_loader_exit();
    return n > 0 ? n : -EIO;
  }
#endif
  return -ENOTSUP;
}
