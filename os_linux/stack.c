/*
 * os_linux/stack.c: a thread's stack as the C library placed it (runtime/os.h, "Stacks").
 *
 * pthread_getattr_np is the one source: for a thread glibc created it reports the block it
 * allocated minus its guard (stackblock + guardsize .. stackblock + size, the thread descriptor
 * and static TLS included at the top); for the main thread it reads /proc/self/maps and
 * RLIMIT_STACK (57-71 us here, against 1.1-1.4 us for another thread, whose cost is mostly the
 * affinity mask glibc fetches with sched_getaffinity into a malloc'ed buffer).
 */
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include "os_linux/os_impl.h"
#include "runtime/fault.h"
#include "runtime/process.h"

int vmt_os_thread_stack(pthread_t th, uintptr_t *lo, uintptr_t *hi, size_t *guard) {
  int rc = vmt__fault_hit(VMT__FAULT_ALLOC);
  if (rc) return rc;
  pthread_attr_t attr;
  rc = pthread_getattr_np(th, &attr);
  if (rc) return -rc;
  void *addr = NULL;
  size_t size = 0, g = 0;
  rc = pthread_attr_getstack(&attr, &addr, &size);
  if (rc == 0) rc = pthread_attr_getguardsize(&attr, &g);
  pthread_attr_destroy(&attr);
  if (rc) return -rc;
  *lo = (uintptr_t)addr;
  *hi = (uintptr_t)addr + size;
  *guard = g;
  return 0;
}

size_t vmt_os_page_size(void) {
  static _Atomic size_t cached;
  VMT__PROCESS_STATE(page_size, .symbols = "cached", .rule = VMT__FORK_KEEP,
                     .fork = "the page size is the machine's");
  size_t pg = atomic_load_explicit(&cached, memory_order_relaxed);
  if (pg == 0) {
    long v = sysconf(_SC_PAGESIZE);
    pg = v > 0 ? (size_t)v : 4096;
    atomic_store_explicit(&cached, pg, memory_order_relaxed);
  }
  return pg;
}
