/*
 * os_linux/loader.c: the runtime's calls into the dynamic loader's object list, kept out of
 * the way of fork (os.h, "The loader's lock and fork").
 *
 * dl_iterate_phdr, dlopen, dlclose and every unwinder that finds its tables through
 * dl_iterate_phdr (backtrace(3), libgcc's _Unwind_Find_FDE; libunwind) take glibc's
 * dl_load_write_lock. glibc's fork re-initialises its loader lock (dl_load_lock) and its TLS
 * lock in the child, not that one (2.36, posix/fork.c), so a fork while any thread of the
 * parent is inside one of those calls leaves it held in the child for good: the child's next
 * dl_iterate_phdr never returns. The runtime's own threads were there often enough to show: a
 * SIGQUIT dump in a fork child hung (vmt_os_other_copies_in_use, in dl_iterate_phdr, waiting
 * for _rtld_global's lock) in 2 of 600 children of test/fork_calls_linux_test.c's
 * vmt_prof_write_collapsed row, whose profiler threads refresh the unwinder's table of loaded
 * objects and symbolize while the parent forks; 0 of 1000 with these sections.
 *
 * So the runtime makes those calls inside a loader section, and fork waits for the sections in
 * progress and keeps new ones from starting: a count of threads inside, a flag the forking
 * thread raises, Dekker-style (each side's seq_cst store, then its seq_cst load of the other's
 * word, so at least one of the two sees the other). A thread already inside may nest (a
 * section of its own below another); the forking thread does not wait for its own sections
 * (a fork from a handler that interrupted one). A section that may not wait (a signal handler,
 * the cooperative poll's walk) gives up while a fork is pending, and also when its thread is
 * inside a section already (a handler that interrupted it there would walk into the loader's
 * lock its own thread may hold); its caller does without: a profiler sample is then lost as
 * unsafe. Other code of the process, outside the runtime, is
 * not covered: POSIX allows a multi-threaded process's fork child only async-signal-safe
 * calls, and dl_iterate_phdr is none.
 *
 * The fork row ranks last among the port's locks: a thread that holds one of them (the copy
 * cache's, the unwinder's build lock) and then enters a section must be able to finish before
 * the forking thread waits for the section.
 */
#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "os_linux/os_impl.h"
#include "runtime/os.h"
#include "runtime/process.h"

static _Atomic uint32_t inside;    /* loader sections in progress, over all threads */
static _Atomic uint32_t forking;   /* 1 while a fork's prepare to its parent/child handler */
/* This thread's sections in progress. initial-exec: a %fs-relative load, nothing allocated. */
static _Thread_local uint32_t depth __attribute__((tls_model("initial-exec")));

bool vmt_os_loader_enter(bool may_wait) {
  /* A caller that cannot wait may have interrupted this very thread inside a section (a
   * signal handler), where the loader's lock may be the thread's own: no walk then. */
  if (!may_wait && depth > 0) return false;
  for (;;) {
    atomic_fetch_add_explicit(&inside, 1, memory_order_seq_cst);
    /* Nested: the fork waits for the outer section, so this one must be let through. */
    if (depth > 0 || !atomic_load_explicit(&forking, memory_order_seq_cst)) {
      depth++;
      return true;
    }
    atomic_fetch_sub_explicit(&inside, 1, memory_order_seq_cst);
    if (!may_wait) return false;
    while (atomic_load_explicit(&forking, memory_order_acquire))
      vmt_os_futex_wait(&forking, 1, VMT_OS_NO_DEADLINE);
  }
}

void vmt_os_loader_exit(void) {
  depth--;
  atomic_fetch_sub_explicit(&inside, 1, memory_order_seq_cst);
}

bool vmt_os__loader_fork_pending(void) {
  return atomic_load_explicit(&forking, memory_order_acquire) != 0;
}

static void loader_fork_prepare(void) {
  atomic_store_explicit(&forking, 1, memory_order_seq_cst);
  /* The sections in progress are a few dl_iterate_phdr callbacks or one unwind each. */
  while (atomic_load_explicit(&inside, memory_order_seq_cst) > depth) sched_yield();
}
static void loader_fork_parent(void) {
  atomic_store_explicit(&forking, 0, memory_order_release);
  vmt_os_futex_wake(&forking, INT_MAX);
}
static void loader_fork_child(void) {
  /* Only the forking thread is left: its own sections are all there is. */
  atomic_store_explicit(&inside, depth, memory_order_relaxed);
  atomic_store_explicit(&forking, 0, memory_order_relaxed);
}
VMT__PROCESS_STATE(loader, .symbols = "inside forking depth", .rule = VMT__FORK_HOLD,
                   .fork = "no thread of the runtime is inside the loader's object list across "
                           "fork (prepare waits for the sections in progress and holds new "
                           "ones off), so glibc's dl_load_write_lock is not held by one in the "
                           "child; the count is the forking thread's own sections",
                   .rank = VMT__RANK_PORT + 4, .prepare = loader_fork_prepare,
                   .parent = loader_fork_parent, .child = loader_fork_child);
