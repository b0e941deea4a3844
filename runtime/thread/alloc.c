/*
 * runtime/thread/alloc.c: bytes allocated per thread, from jemalloc's per-thread counters
 * (mallctl "thread.allocatedp": a pointer to a uint64_t counter that jemalloc bumps on every
 * allocation, in the thread's own TLS). Its twin "thread.deallocatedp" is not used: no
 * ThreadMXBean figure needs freed bytes.
 *
 * The library does not link jemalloc (no DT_NEEDED): Debian's jemalloc has 2632 bytes of
 * initial-exec TLS, more than glibc's static TLS surplus has left in a running JVM, so a
 * libvmthread.so.0 that needed it could not be dlopen'ed there ("cannot allocate memory in
 * static TLS block"). mallctl is looked up at run time in the process's global scope instead
 * (dlsym(RTLD_DEFAULT)): it is found when jemalloc is the process's allocator, because the
 * executable links it (this project's tests and benchmarks do) or LD_PRELOAD names it.
 *
 * Support is decided at run time, once: mallctl must resolve and answer, and the counter must
 * move after a malloc. Finding jemalloc is not enough: under ASan/TSan the sanitizer's malloc
 * wins, mallctl still answers, and the counter never moves (seen here).
 *
 * A new thread finds its counters without calling jemalloc. Asking mallctl makes jemalloc set
 * up the thread's state and thread cache, which it tears down again at exit (a 32 KB madvise
 * and a TLB shootdown): 20-30 us for a thread that never allocates, most of a thread start.
 * jemalloc's thread state is a static-TLS variable, and so is our anchor below, so the distance
 * between the two is the same in every thread; the probe measures it once and checks it in a
 * second thread. A thread then computes its counter's address from its own anchor: the counter
 * reads 0 until the thread first allocates. If the check finds other addresses (jemalloc
 * loaded with dynamic TLS), every thread asks mallctl instead. If the check cannot run (no
 * thread could be created for it), new threads get no counters rather than ask jemalloc: a
 * thread's first jemalloc call must set up its thread cache, and with the address space
 * exhausted jemalloc 5.3 crashes doing that (seen under RLIMIT_AS, test/exhaustion_linux_test).
 * The probe runs in the thread that first starts or attaches a thread (vmt__runtime_init), not
 * in a new thread racing its creator for memory.
 *
 * The pointer, its base and the reader count live in the thread's hot cell (registry.h), not in
 * its record: a sweep of 10,000 threads reads 313 KiB of consecutive cells instead of a line
 * of each of 4.5 MB of records. Reading another thread's counter is a read of that thread's
 * TLS, which disappears with the thread (glibc may unmap or recycle its stack after join). So
 * the owner unpublishes the pointer at its end and then waits until no reader is inside the few-instruction read
 * (alloc_readers; Dekker-style with seq_cst on both sides). A reader never waits. The counters
 * are written by jemalloc with plain stores: they are read with atomic relaxed loads, without
 * which gcc keeps a stale value across a malloc call (seen here).
 */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>

#include "runtime/thread/thread_impl.h"

typedef int (*mallctl_fn)(const char *name, void *oldp, size_t *oldlenp, void *newp,
                          size_t newlen);

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static _Atomic bool probed;            /* probe() has run: vmt__alloc_supported's fast path */
static mallctl_fn mallctl_of_process;  /* jemalloc's, if the process has one; set by probe() */
static bool supported;
static _Atomic int64_t exited_total;

static _Thread_local char tls_anchor __attribute__((tls_model("initial-exec")));
static enum { OFFSETS_UNCHECKED, OFFSETS_VALID, OFFSETS_DIFFER } offsets = OFFSETS_UNCHECKED;
/* Distance from tls_anchor, as an integer: the two objects are unrelated in C's eyes. */
static uintptr_t allocated_offset;

/* Readers of the forking thread's counter that were inside their read at fork do not exist in
 * the child: its alloc_readers would never come down, and its exit would wait for them for
 * good. Other records' counts do not matter: their threads never run their exit path here. */
static void readers_fork_child(void) {
  vmt_thread_t *self = vmt__current;
  if (self != NULL) atomic_store_explicit(&self->hot->alloc_readers, 0, memory_order_relaxed);
}
VMT__PROCESS_STATE(alloc_readers, .symbols = "", .rule = VMT__FORK_RESET,
                   .fork = "the forking thread's count of readers inside a read of its counter "
                           "(a field of its hot cell) is zeroed: those readers vanished",
                   .rank = VMT__RANK_THREAD + 1, .child = readers_fork_child);
VMT__PROCESS_STATE(alloc_probe,
                   .symbols = "probe_once probed mallctl_of_process supported offsets "
                              "allocated_offset tls_anchor exited_total",
                   .rule = VMT__FORK_KEEP,
                   .fork = "the probe's answer and the TLS distance hold in the child; the exited "
                           "total keeps what exited threads allocated");

static uintptr_t anchor(void) { return (uintptr_t)&tls_anchor; }

static int counter_pointer(const uint64_t **allocated) {
  int err = vmt__fault_hit(VMT__FAULT_MALLCTL);
  if (err) return err;
  size_t sz = sizeof(*allocated);
  uint64_t *a = NULL;
  if (mallctl_of_process == NULL ||
      mallctl_of_process("thread.allocatedp", &a, &sz, NULL, 0) != 0 || a == NULL)
    return -ENOTSUP;
  *allocated = a;
  return 0;
}

static uint64_t read_counter(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

/* In a second thread: do the offsets measured in the first one find this thread's counters? */
static void *check_offsets(void *arg) {
  const uint64_t *a;
  bool *ok = arg;
  *ok = counter_pointer(&a) == 0 && (uintptr_t)a == anchor() + allocated_offset;
  return NULL;
}

static void probe(void) {
  /* POSIX gives dlsym's result as void *; converting it to a function pointer is what
   * dlsym(3) documents (through a union, which -Wpedantic accepts). */
  union {
    void *object;
    mallctl_fn fn;
  } sym = {.object = dlsym(RTLD_DEFAULT, "mallctl")};
  mallctl_of_process = sym.fn;
  const uint64_t *a;
  if (counter_pointer(&a) != 0) return;
  uint64_t before = read_counter(a);
  /* volatile: the compiler may otherwise drop a malloc/free pair. */
  void *volatile p = malloc(1000);
  uint64_t after = read_counter(a);
  free(p);
  supported = p != NULL && after != before;
  if (!supported) return;
  allocated_offset = (uintptr_t)a - anchor();
  bool ok = false;
  pthread_attr_t attr;
  pthread_t helper;
  if (pthread_attr_init(&attr) != 0) return;
  pthread_attr_setstacksize(&attr, vmt__stack_size_rule(1));  /* the smallest we allow */
  if (pthread_create(&helper, &attr, check_offsets, &ok) == 0) {
    pthread_join(helper, NULL);
    offsets = ok ? OFFSETS_VALID : OFFSETS_DIFFER;
  }
  pthread_attr_destroy(&attr);
}

/* The calling thread's counter: from the anchor, from mallctl if the probe said so, or none. */
static int own_counter(const uint64_t **a) {
  if (offsets == OFFSETS_DIFFER) return counter_pointer(a);
  if (offsets == OFFSETS_UNCHECKED) return -ENOTSUP;
  int err = vmt__fault_hit(VMT__FAULT_MALLCTL);  /* the same seam: "counters unavailable" */
  if (err) return err;
  *a = (const uint64_t *)(anchor() + allocated_offset);
  return 0;
}

bool vmt__alloc_supported(void) {
  if (__builtin_expect(atomic_load_explicit(&probed, memory_order_acquire), 1)) return supported;
  /* The probe joins its helper thread, a cancellation point, inside calls that are none (the
   * first start or attach, any allocated-memory query: docs/design.md, "Cancellation"); a
   * first call cancelled there never returned (test/cancellation_test.c). */
  int cancel;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
  pthread_once(&probe_once, probe);
  pthread_setcancelstate(cancel, NULL);
  atomic_store_explicit(&probed, true, memory_order_release);
  return supported;
}

void vmt__alloc_thread_begin(vmt_thread_t *t) {
  const uint64_t *a;
  if (!vmt__alloc_supported() || own_counter(&a) != 0) return;
  struct vmt__thread_hot *h = t->hot;
  /* An attached thread allocated before it was attached: that is not the runtime thread's. */
  h->alloc_base = t->kind == VMT__KIND_ATTACHED ? (int64_t)read_counter(a) : 0;
  atomic_store_explicit(&h->allocatedp, a, memory_order_seq_cst);
}

void vmt__alloc_thread_end(vmt_thread_t *t) {
  struct vmt__thread_hot *h = t->hot;
  const uint64_t *a = atomic_load_explicit(&h->allocatedp, memory_order_relaxed);
  if (a == NULL) return;
  atomic_fetch_add_explicit(&exited_total, (int64_t)read_counter(a) - h->alloc_base,
                            memory_order_relaxed);
  atomic_store_explicit(&h->allocatedp, NULL, memory_order_seq_cst);
  /* Readers are inside a handful of instructions; yield only if one was preempted there. */
  for (int spins = 0; atomic_load_explicit(&h->alloc_readers, memory_order_seq_cst) != 0;
       spins++)
    if (spins > 100) sched_yield();
}

int64_t vmt__alloc_hot_bytes(struct vmt__thread_hot *h) {
  atomic_fetch_add_explicit(&h->alloc_readers, 1, memory_order_seq_cst);
  const uint64_t *a = atomic_load_explicit(&h->allocatedp, memory_order_seq_cst);
  int64_t bytes = a ? (int64_t)read_counter(a) - h->alloc_base : -1;
  atomic_fetch_sub_explicit(&h->alloc_readers, 1, memory_order_release);
  return bytes;
}

int64_t vmt__alloc_thread_bytes(const vmt_thread_t *ct) {
  vmt_thread_t *t = (vmt_thread_t *)ct;
  if (t == NULL) return -1;
  if (t == vmt__current) {
    const uint64_t *a = atomic_load_explicit(&t->hot->allocatedp, memory_order_relaxed);
    return a ? (int64_t)read_counter(a) - t->hot->alloc_base : -1;
  }
  return vmt__alloc_hot_bytes(t->hot);
}

int64_t vmt__alloc_exited_total(void) {
  return atomic_load_explicit(&exited_total, memory_order_relaxed);
}
