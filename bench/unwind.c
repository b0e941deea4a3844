/*
 * bench/unwind.c: one native stack walk from a signal handler, as the profiler's handler takes
 * it (issue #18: the walk was most of a sample's cost), with vmthread's own CFI unwinder
 * (os_linux/cfi_unwind.c) and with libunwind's local unwinder, of the same stack, side by
 * side: each signal's handler walks the interrupted context with both, in alternating order,
 * timing each walk alone (CLOCK_MONOTONIC through the vDSO, ~27 ns a read here, included).
 * The sampled thread spins 15 frames deep: a noinline recursion 11 deep in this binary (-O2,
 * with Bazel's frame pointers, which neither unwinder uses), often inside libc's memcpy
 * (Debian's, without frame pointers), under glibc's thread start. bench "unwind", unit ns per
 * walk:
 *
 *   walk_own          vmthread's unwinder (frames per walk in `frames`)
 *   walk_libunwind    libunwind 1.6, global cache (its lock blocks signals per step)
 *
 * `equal` counts the walks whose frames were the same for both (all of them, or a bug).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "bench/harness.h"
#include "os_linux/os_impl.h"

#define MAXF 64
#define DEPTH 10

static uintptr_t stack_lo, stack_hi;
static _Atomic int ready, stop, done, want;
static int order;
static int64_t own_ns, lu_ns;
static int n_own, n_lu;
static uintptr_t own[MAXF], lu[MAXF];

static void on_signal(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  (void)si;
  if (!atomic_load(&want)) return;
  int64_t t0, t1;
  if (order) {
    t0 = vmtb_now_ns();
    n_lu = vmt__libunwind_walk(uc, lu, MAXF);
    t1 = vmtb_now_ns();
    lu_ns = t1 - t0;
  }
  t0 = vmtb_now_ns();
  n_own = vmt__cfi_walk(uc, stack_lo, stack_hi, own, MAXF);
  t1 = vmtb_now_ns();
  own_ns = t1 - t0;
  if (!order) {
    t0 = vmtb_now_ns();
    n_lu = vmt__libunwind_walk(uc, lu, MAXF);
    t1 = vmtb_now_ns();
    lu_ns = t1 - t0;
  }
  atomic_store(&want, 0);
  atomic_store(&done, 1);
}

static char src[8192], dst[8192];
static volatile unsigned sink;

static __attribute__((noinline)) void leaf(void) {
  atomic_store(&ready, 1);
  while (!atomic_load(&stop)) {
    for (unsigned i = 0; i < 200; i++) sink += i;
    memcpy(dst, src, 4096 + (sink & 2048));
  }
}

static __attribute__((noinline)) void deep(int n) {
  volatile char buf[48];
  buf[0] = (char)n;
  if (n > 0) deep(n - 1);
  else leaf();
  sink += (unsigned)buf[0];
}

static void *sampled(void *arg) {
  (void)arg;
  pthread_attr_t a;
  void *addr;
  size_t size;
  if (pthread_getattr_np(pthread_self(), &a) != 0 || pthread_attr_getstack(&a, &addr, &size))
    abort();
  pthread_attr_destroy(&a);
  stack_lo = (uintptr_t)addr;
  stack_hi = (uintptr_t)addr + size;
  deep(DEPTH);
  return NULL;
}

int main(int argc, char **argv) {
  vmtb_options_t o;
  vmtb_parse_args(argc, argv, &o, NULL);
  if (!o.json) vmtb_describe_machine(stdout);
  if (vmt_os_native_unwind_init() != 0 || vmt__cfi_prepare() != 0) {
    fprintf(stderr, "unwind: no unwinder\n");
    return 1;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGUSR2, &sa, NULL) != 0) return 1;
  pthread_t th;
  if (pthread_create(&th, NULL, sampled, NULL) != 0) return 1;
  while (!atomic_load(&ready)) sched_yield();
  size_t warm = o.quick ? 100 : 500, n = o.quick ? 1000 : o.longrun ? 20000 : 5000;
  double *so = malloc(n * sizeof(double)), *sl = malloc(n * sizeof(double));
  if (so == NULL || sl == NULL) return 1;
  long long frames = 0, equal = 0, lu_failed = 0;
  for (size_t i = 0; i < warm + n; i++) {
    order = (int)(i & 1);
    atomic_store(&done, 0);
    atomic_store(&want, 1);
    if (pthread_kill(th, SIGUSR2) != 0) return 1;
    while (!atomic_load(&done)) sched_yield();
    if (i < warm) continue;
    so[i - warm] = (double)own_ns;
    sl[i - warm] = (double)lu_ns;
    frames += n_own;
    if (n_lu <= 0) lu_failed++;
    if (n_own == n_lu && memcmp(own, lu, (size_t)n_own * sizeof(uintptr_t)) == 0) equal++;
  }
  atomic_store(&stop, 1);
  pthread_join(th, NULL);
  vmtb_table_header(&o, "one native stack walk from a signal handler (ns per walk)");
  char extra[160];
  vmtb_result_t r = {.bench = "unwind", .variant = "walk_own", .unit = "ns"};
  vmtb_stats(so, n, &r);
  snprintf(extra, sizeof(extra), "\"frames\":%.1f,\"equal\":%lld,\"walks\":%zu",
           (double)frames / (double)n, equal, n);
  vmtb_report(&o, &r, extra);
  double own_p50 = r.p50;
  r = (vmtb_result_t){.bench = "unwind", .variant = "walk_libunwind", .unit = "ns"};
  vmtb_stats(sl, n, &r);
  snprintf(extra, sizeof(extra), "\"frames\":%.1f,\"failed\":%lld,\"walks\":%zu",
           (double)frames / (double)n, lu_failed, n);
  vmtb_report(&o, &r, extra);
  vmtb_note(&o, "%.1f frames a walk; libunwind / own at p50: %.1fx; equal frames in %lld of %zu",
            (double)frames / (double)n, own_p50 > 0 ? r.p50 / own_p50 : 0.0, equal, n);
  free(so);
  free(sl);
  return equal == (long long)n ? 0 : 1;
}
