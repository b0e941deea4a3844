/*
 * runtime/fault.c: the fault-injection seams declared in fault.h. A site's plan is guarded by
 * one mutex: only armed runs (tests) ever reach it.
 */
#include "runtime/fault.h"

#include <pthread.h>

#include "runtime/process.h"

_Atomic int vmt__fault_armed;

static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  bool armed;
  int skip;
  int times;
  int err;
  int injected;
  void (*hook)(void *);
  void *hook_arg;
} plans[VMT__FAULT_SITE_COUNT];

/* Not held across fork: hooks run under fault_lock, and a test's hook may be the very thing that
 * waits for a fork to happen. Only tests ever take it. */
static void fault_fork_child(void) { pthread_mutex_init(&fault_lock, NULL); }
VMT__PROCESS_STATE(fault, .symbols = "vmt__fault_armed plans fault_lock",
                   .rule = VMT__FORK_REINIT,
                   .fork = "the seams' lock is re-initialised; the plans are kept (only tests arm them)",
                   .rank = VMT__RANK_FAULT, .child = fault_fork_child);

int vmt__fault_check_slow(vmt__fault_site_t site) {
  if ((unsigned)site >= VMT__FAULT_SITE_COUNT) return 0;
  int result = 0;
  pthread_mutex_lock(&fault_lock);
  void (*hook)(void *) = plans[site].hook;
  void *hook_arg = plans[site].hook_arg;
  pthread_mutex_unlock(&fault_lock);
  /* Outside the lock: a hook may make other threads run through seams while it waits. */
  if (hook) hook(hook_arg);
  pthread_mutex_lock(&fault_lock);
  if (plans[site].armed) {
    if (plans[site].skip > 0) {
      plans[site].skip--;
    } else {
      result = -plans[site].err;
      plans[site].injected++;
      if (plans[site].times > 0 && --plans[site].times == 0) {
        plans[site].armed = false;
        atomic_fetch_sub_explicit(&vmt__fault_armed, 1, memory_order_relaxed);
      }
    }
  }
  pthread_mutex_unlock(&fault_lock);
  return result;
}

void vmt__fault_arm(vmt__fault_site_t site, int skip, int times, int err) {
  if ((unsigned)site >= VMT__FAULT_FALLIBLE_COUNT || times == 0 || err <= 0) return;
  pthread_mutex_lock(&fault_lock);
  if (!plans[site].armed) atomic_fetch_add_explicit(&vmt__fault_armed, 1, memory_order_relaxed);
  plans[site].armed = true;
  plans[site].skip = skip < 0 ? 0 : skip;
  plans[site].times = times;
  plans[site].err = err;
  plans[site].injected = 0;
  pthread_mutex_unlock(&fault_lock);
}

void vmt__fault_disarm_all(void) {
  pthread_mutex_lock(&fault_lock);
  for (int i = 0; i < VMT__FAULT_SITE_COUNT; i++) {
    if (plans[i].armed) atomic_fetch_sub_explicit(&vmt__fault_armed, 1, memory_order_relaxed);
    if (plans[i].hook) atomic_fetch_sub_explicit(&vmt__fault_armed, 1, memory_order_relaxed);
    plans[i].armed = false;
    plans[i].hook = NULL;
  }
  pthread_mutex_unlock(&fault_lock);
}

/* A hook keeps the slow path on like an armed plan: it counts in vmt__fault_armed. */
void vmt__fault_set_hook(vmt__fault_site_t site, void (*fn)(void *arg), void *arg) {
  if ((unsigned)site >= VMT__FAULT_SITE_COUNT) return;
  pthread_mutex_lock(&fault_lock);
  if (!plans[site].hook != !fn)
    atomic_fetch_add_explicit(&vmt__fault_armed, fn ? 1 : -1, memory_order_relaxed);
  plans[site].hook = fn;
  plans[site].hook_arg = arg;
  pthread_mutex_unlock(&fault_lock);
}

int vmt__fault_injected(vmt__fault_site_t site) {
  if ((unsigned)site >= VMT__FAULT_SITE_COUNT) return 0;
  pthread_mutex_lock(&fault_lock);
  int n = plans[site].injected;
  pthread_mutex_unlock(&fault_lock);
  return n;
}
