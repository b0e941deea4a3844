/*
 * runtime/fault.h: fault-injection seams (SQLite's idea). Each site that can fail in the real
 * world asks vmt__fault_hit(site) first; a test arms a site to fail its n-th next call with a
 * chosen errno. A few more sites are points where a test's hook changes the world mid-way
 * through an algorithm (a race it could not time). Disarmed, a seam costs one relaxed load of a
 * global that is almost always zero. Hidden; tests reach it by linking the static library.
 */
#ifndef VMT_RUNTIME_FAULT_H
#define VMT_RUNTIME_FAULT_H

#include <stdatomic.h>
#include <stdbool.h>

typedef enum vmt__fault_site {
  VMT__FAULT_ALLOC = 0,          /* any allocation the runtime makes */
  VMT__FAULT_PTHREAD_CREATE,
  VMT__FAULT_SETNAME,            /* pthread_setname_np */
  VMT__FAULT_CLOCK,              /* clock_gettime on a CPU clock */
  VMT__FAULT_GETCPUCLOCKID,      /* pthread_getcpuclockid */
  VMT__FAULT_MALLCTL,
  VMT__FAULT_THREAD_END,         /* arming the per-thread end hook (pthread_setspecific) */
  VMT__FAULT_TIMER,              /* timer_create on a thread's CPU clock (the profiler) */
  /* The sites above stand before a call that can fail. The ones from here on are points in an
   * algorithm where nothing can fail: only a hook is of use there, to change the world at that
   * exact moment; vmt__fault_arm ignores them, and their callers ignore vmt__fault_hit. */
  VMT__FAULT_FALLIBLE_COUNT,
  /* sync/deadlock.c, after each thread's edge in the first read of the graph: a hook there makes
   * that read see a cycle that never existed at one instant (test/deadlock_internal_test.c). */
  VMT__FAULT_DEADLOCK_SCAN = VMT__FAULT_FALLIBLE_COUNT,
  /* lock_info.c, after the copy of a thread's lock state and before the owner of the lock it
   * waits for is named: a hook there can end that owner and give its record to a new thread
   * (test/monitor_internal_test.c). */
  VMT__FAULT_LOCK_OWNER,
  /* thread/exit.c, in VM code between the VM services' two exit steps: a hook there queues a
   * handshake or begins a safepoint while the thread is half-way out
   * (test/vms_exit_internal_test.c). */
  VMT__FAULT_THREAD_EXITING,
  /* thread/exit.c, right after the thread became TERMINATED and before its exit_event is set
   * (the bookkeeping of its exit under way): a hook there holds it where vmt_thread_state
   * already answers TERMINATED and a joiner's sleep has not been ended
   * (test/join_exit_internal_test.c). */
  VMT__FAULT_THREAD_TERMINATED,
  /* vmservices/state.c, at the entry of a transition's slow path (a flag was set, or leaving a
   * safe state found a safepoint): a hook there sees the thread at the instant it has learnt it
   * must wait, and can queue work for it then (test/vms_safe_region_internal_test.c). */
  VMT__FAULT_EXEC_SLOW,
  /* vmservices/safepoint.c, in the coordinator's wait for the threads it armed: after its spin,
   * right before it sleeps on the countdown with the value it last read. A hook there makes
   * every straggler arrive in that window (test/vms_safepoint_internal_test.c). */
  VMT__FAULT_SP_SLEEP,
  /* os_linux/cfi_unwind.c, inside the dl_iterate_phdr callback of a refresh of the unwinder's
   * table: a hook there is a thread holding glibc's loader lock at that moment, for as long as
   * it likes (a fork then, test/loader_fork_linux_internal_test.c). */
  VMT__FAULT_LOADER_HELD,
  /* profiler/session.c, in vmt_prof_set_thread_excluded(t, false)'s arming, right after an
   * arming attempt found t claimed by another party and before it looks at t's state again: a
   * hook there is that party letting go at that moment (test/profiler_internal_test.c). */
  VMT__FAULT_PROF_ARM_CLAIMED,
  /* registry/registry.c, in the middle of a thread's count (vmt__registry_count, under the
   * registry's writer lock), on whichever of the starter and the started thread counts it: a
   * hook there holds the count half-done while the thread being counted goes on to run
   * (test/registry_internal_test.c). */
  VMT__FAULT_COUNT_MIDWAY,
  VMT__FAULT_SITE_COUNT,
} vmt__fault_site_t;

extern _Atomic int vmt__fault_armed;  /* number of armed sites; 0 on the fast path */

int vmt__fault_check_slow(vmt__fault_site_t site);

/* 0, or the negative errno to fail with at this site. */
static inline int vmt__fault_hit(vmt__fault_site_t site) {
  if (__builtin_expect(atomic_load_explicit(&vmt__fault_armed, memory_order_relaxed) == 0, 1))
    return 0;
  return vmt__fault_check_slow(site);
}

/* Fails calls number skip+1 .. skip+times (counting from now) at site with -err (err > 0).
 * times < 0 fails every call until disarmed. A site from VMT__FAULT_FALLIBLE_COUNT on cannot
 * fail: it is not armed. */
void vmt__fault_arm(vmt__fault_site_t site, int skip, int times, int err);
void vmt__fault_disarm_all(void);
/* How many times the site has injected a failure since the last disarm. */
int vmt__fault_injected(vmt__fault_site_t site);
/* Runs fn(arg) at every call of site, before its plan is consulted (a race a test cannot time,
 * such as a thread starting to exit during a clock read, made to happen at that point). fn
 * runs outside the seams' lock, so it (and threads it waits for) may go through seams; a hook
 * removed while a call of it is under way is not waited for. NULL fn removes the hook;
 * vmt__fault_disarm_all removes it too. */
void vmt__fault_set_hook(vmt__fault_site_t site, void (*fn)(void *arg), void *arg);

#endif /* VMT_RUNTIME_FAULT_H */
