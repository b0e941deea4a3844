/*
 * os_linux/stack.c: a thread's stack as the C library placed it (runtime/os.h, "Stacks").
 *
 * pthread_getattr_np is the one source: for a thread glibc created it reports the block it
 * allocated minus its guard (stackblock + guardsize .. stackblock + size, the thread descriptor
 * and static TLS included at the top); for the main thread it reads /proc/self/maps and
 * RLIMIT_STACK (57-71 us here, against 1.1-1.4 us for another thread, whose cost is mostly the
 * affinity mask glibc fetches with sched_getaffinity into a malloc'ed buffer).
 *
 * Guard zones are page protections inside that block (mprotect, which splits the stack's
 * mapping: two more entries of the process's map count per thread with zones), and the handler
 * that reports an overflow runs on an alternate signal stack of our own.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
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

int vmt_os_stack_protect(uintptr_t addr, size_t len, bool accessible) {
  int err = vmt__fault_hit(VMT__FAULT_ALLOC);   /* a split mapping takes kernel memory */
  if (err) return err;
  if (mprotect((void *)addr, len, accessible ? PROT_READ | PROT_WRITE : PROT_NONE) != 0)
    return -errno;
  return 0;
}

/* Our handler and the VM's run here: 64 KiB, or four times what the kernel says a signal frame
 * needs on this CPU (AT_MINSIGSTKSZ; AVX-512 state makes it several KiB), whichever is more. */
static size_t altstack_size(void) {
  size_t want = 64 * 1024;
  long min = sysconf(_SC_MINSIGSTKSZ);
  if (min > 0 && (size_t)min * 4 > want) want = (size_t)min * 4;
  size_t pg = vmt_os_page_size();
  return (want + pg - 1) / pg * pg;
}

int vmt_os_altstack_install(vmt_os_altstack_t *a) {
  memset(a, 0, sizeof(*a));
  int err = vmt__fault_hit(VMT__FAULT_ALLOC);
  if (err) return err;
  size_t pg = vmt_os_page_size(), size = altstack_size();
  void *mem = mmap(NULL, size + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
                   -1, 0);
  if (mem == MAP_FAILED) return -errno;
  /* A guard page below, so a handler that overflows the alternate stack faults instead of
   * writing over whatever is mapped below it. */
  if (mprotect(mem, pg, PROT_NONE) != 0) {
    err = -errno;
    munmap(mem, size + pg);
    return err;
  }
  stack_t ss = {.ss_sp = (char *)mem + pg, .ss_size = size, .ss_flags = 0}, old;
  if (sigaltstack(&ss, &old) != 0) {
    err = -errno;
    munmap(mem, size + pg);
    return err;
  }
  a->mem = mem;
  a->mapped = size + pg;
  a->old_sp = old.ss_sp;
  a->old_size = old.ss_size;
  a->old_flags = old.ss_flags & SS_DISABLE;
  return 0;
}

void vmt_os_altstack_remove(vmt_os_altstack_t *a) {
  if (a->mem == NULL) return;
  stack_t old = {.ss_sp = a->old_sp, .ss_size = a->old_size, .ss_flags = a->old_flags};
  if (old.ss_flags & SS_DISABLE) {
    old.ss_sp = NULL;
    old.ss_size = 0;
  }
  sigaltstack(&old, NULL);
  munmap(a->mem, a->mapped);
  a->mem = NULL;
}
