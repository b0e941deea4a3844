/*
 * os_linux/thread_end.c: the per-thread end hook of the port contract (runtime/os.h, "Thread
 * end"): the one place the runtime learns that a thread it knows is going away, whether it
 * started the thread, the thread attached, or the thread only took a lock.
 *
 * Primary: one thread-specific-data key for the whole runtime. pthread_setspecific needs no
 * allocation for glibc's first 32 keys and reports ENOMEM for the others, and glibc runs key
 * destructors in up to PTHREAD_DESTRUCTOR_ITERATIONS (4) rounds, so a thread that touches the
 * runtime again from another library's destructor is torn down again in the next round.
 * Fallback, when the host has used every key (glibc has 1024, PTHREAD_KEYS_MAX): glibc's
 * __cxa_thread_atexit_impl (2.18+, what C++ thread_local destructors use). It has no limit, but
 * it calloc()s 32 bytes per registration and ends the process if that fails (glibc 2.36:
 * "failed to register TLS destructor: out of memory"); so it is used only when no key is left,
 * and once per thread. Its destructors run before any key's (start_thread calls
 * __call_tls_dtors first) and, for the main thread, at exit(), but never again once the key
 * destructors have begun: a thread armed from a host's key destructor (one that attaches to
 * report its end, say) ended still attached, counted and listed. So the key is made when the
 * library is loaded, before a host can have taken every key (test/exhaustion_linux_test.c,
 * pthread_keys_exhausted_with_a_host_destructor); the fallback serves a library loaded after
 * the host had taken them all.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "os_linux/os_impl.h"
#include "runtime/fault.h"

/* glibc's: weak, so that a C library without it leaves the pointer NULL. */
extern int __cxa_thread_atexit_impl(void (*fn)(void *), void *obj, void *dso_symbol)
    __attribute__((weak));
/* This object's DSO handle (crtbegin): the registration keeps the library loaded meanwhile. */
extern void *__dso_handle __attribute__((visibility("hidden")));

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t end_key;
static bool have_key;
static _Atomic bool force_fallback;   /* tests: arm as if no key were left */
static _Atomic(void (*)(void)) end_fn;
static _Thread_local bool armed __attribute__((tls_model("initial-exec")));
VMT__PROCESS_STATE(thread_end, .symbols = "key_once end_key have_key force_fallback end_fn armed",
                   .rule = VMT__FORK_KEEP,
                   .fork = "the key and its destructor stay valid, and the forking thread, the "
                           "only one in the child, keeps its value and its armed flag");

static void run_end(void) {
  armed = false;
  void (*fn)(void) = atomic_load_explicit(&end_fn, memory_order_acquire);
  if (fn) fn();
}

static void key_destructor(void *value) {
  (void)value;
  run_end();
}

static void tls_destructor(void *obj) {
  (void)obj;
  run_end();
}

static void make_key(void) { have_key = pthread_key_create(&end_key, key_destructor) == 0; }

/* At load: before main, or at the dlopen that loads the library (the opening comment says why). */
__attribute__((constructor)) static void reserve_key(void) { pthread_once(&key_once, make_key); }

bool vmt_os__thread_end_force_fallback(bool on) {
  return atomic_exchange_explicit(&force_fallback, on, memory_order_relaxed);
}

int vmt_os_thread_end_arm(void (*fn)(void)) {
  if (armed) return 0;
  void (*none)(void) = NULL;
  atomic_compare_exchange_strong_explicit(&end_fn, &none, fn, memory_order_acq_rel,
                                          memory_order_acquire);
  pthread_once(&key_once, make_key);
  int err = vmt__fault_hit(VMT__FAULT_THREAD_END);
  if (err) return err;
  if (have_key && !atomic_load_explicit(&force_fallback, memory_order_relaxed)) {
    /* Any non-NULL value: glibc calls the destructor only for those. */
    err = pthread_setspecific(end_key, &armed);
    if (err) return -err;
  } else if (__cxa_thread_atexit_impl != NULL) {
    __cxa_thread_atexit_impl(tls_destructor, NULL, &__dso_handle);
  } else {
    return -EAGAIN;
  }
  armed = true;
  return 0;
}
