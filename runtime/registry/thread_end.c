/*
 * runtime/registry/thread_end.c: the runtime's end of a thread (registry.h, "The end of a
 * thread"): one port hook per thread (runtime/os.h, "Thread end") that runs each package's
 * piece in a fixed order. It lives at the bottom of the runtime so that every package can arm
 * it without calling up: each hands in its own piece as it arms.
 */
#include "runtime/registry/registry_impl.h"

static _Atomic(void (*)(void)) pieces[VMT__END_PIECES];
VMT__PROCESS_STATE(thread_end, .symbols = "pieces", .rule = VMT__FORK_KEEP,
                   .fork = "the same functions in the child; the forking thread's hook stays "
                           "armed (runtime/os.h)");

static void thread_end(void) {
  for (int i = 0; i < VMT__END_PIECES; i++) {
    void (*fn)(void) = atomic_load_explicit(&pieces[i], memory_order_acquire);
    if (fn) fn();
  }
}

int vmt__thread_end_arm(vmt__end_piece_t piece, void (*fn)(void)) {
  /* Each piece has one function for the whole process: a plain store, repeated harmlessly. */
  if (atomic_load_explicit(&pieces[piece], memory_order_relaxed) != fn)
    atomic_store_explicit(&pieces[piece], fn, memory_order_release);
  return vmt_os_thread_end_arm(thread_end);
}
