/*
 * runtime/thread/stack.c: a thread's stack bounds (vmthread/stack.h): asked of the port
 * (pthread_getattr_np) once per thread and kept in the record's cold block, and the
 * fast-path limit that vmt_stack_bytes_left compares against. The fast block is public
 * (vmthread/thread.h), plain C types: it is read and written with the __atomic builtins.
 *
 * When they are asked. pthread_getattr_np allocates, and an allocation in a thread that
 * otherwise never allocates makes jemalloc build its thread cache at start and tear it down at
 * exit (20-30 us a thread, docs/design.md "Exit"), so a started thread does not ask at start
 * unless it has guard zones (stack_guard.c): the first caller asks. The thread itself asks
 * pthread_self(); another thread asks the started thread's pthread_t, which stays valid until
 * it is joined (we own it, registry/record.c): join marks the record `stack_reaping` under the
 * same lock before it reaps, so an asker either finished or sees the mark and answers -ESRCH.
 * An attached thread asks as it attaches (its pthread_t is not ours to use later), as HotSpot
 * does for every thread (Thread::record_stack_base_and_size).
 */
#include <errno.h>
#include <stdint.h>

#include "runtime/thread/thread_impl.h"

/* Publishes bounds asked by the caller: under cold->lock. */
static void publish_locked(vmt_thread_t *t, uintptr_t lo, uintptr_t hi, size_t guard) {
  struct vmt__thread_cold *c = t->cold;
  c->stack_lo = lo;
  c->stack_hi = hi;
  c->stack_os_guard = guard;
  /* The guard zones, when the thread has them, raised the limit already (stack_guard.c). */
  if (__atomic_load_n(&c->fast.stack_limit, __ATOMIC_RELAXED) == 0)
    __atomic_store_n(&c->fast.stack_limit, lo, __ATOMIC_RELAXED);
  atomic_store_explicit(&c->stack_known, true, memory_order_release);
}

int vmt__stack_bounds_ensure(vmt_thread_t *t) {
  struct vmt__thread_cold *c = t->cold;
  if (atomic_load_explicit(&c->stack_known, memory_order_acquire)) return 0;
  pthread_mutex_lock(&c->lock);
  int rc = 0;
  if (!atomic_load_explicit(&c->stack_known, memory_order_relaxed)) {
    uintptr_t lo = 0, hi = 0;
    size_t guard = 0;
    if (t == vmt__current)
      rc = vmt_os_thread_stack(pthread_self(), &lo, &hi, &guard);
    else if (t->kind != VMT__KIND_ATTACHED && !c->stack_reaping && t->owns_pthread &&
             vmt__thread_of_this_process(t))
      /* stack_reaping first: join clears owns_pthread after marking it, outside the lock;
       * start sets owns_pthread under it. */
      rc = vmt_os_thread_stack(t->pthread, &lo, &hi, &guard);
    else
      rc = -ESRCH;
    if (rc == 0) publish_locked(t, lo, hi, guard);
  }
  pthread_mutex_unlock(&c->lock);
  return rc;
}

void vmt__stack_mark_reaping(vmt_thread_t *t, bool reaping) {
  pthread_mutex_lock(&t->cold->lock);
  t->cold->stack_reaping = reaping;
  pthread_mutex_unlock(&t->cold->lock);
}

int vmt_thread_stack_info(vmt_thread_t *t, vmt_stack_info_t *out) {
  if (t == NULL || out == NULL || !vmt__record_ref_if_live(t)) return -EINVAL;
  int rc = vmt__stack_bounds_ensure(t);
  if (rc == 0) {
    const struct vmt__thread_cold *c = t->cold;
    out->lo = c->stack_lo;
    out->hi = c->stack_hi;
    out->os_guard_size = c->stack_os_guard;
    out->limit = __atomic_load_n(&c->fast.stack_limit, __ATOMIC_RELAXED);
    /* The zones are set before the body runs and never change after, but by the thread's
     * end; a reader of another thread sees them as of now. */
    bool armed = atomic_load_explicit(&c->zones_armed, memory_order_acquire);
    out->red_size = armed ? c->guard.red_size : 0;
    out->yellow_size = armed ? c->guard.yellow_size : 0;
    out->reserved_size = armed ? c->guard.reserved_size : 0;
    out->disabled_zones = armed ? atomic_load_explicit(&c->zones_disabled, memory_order_relaxed)
                                : 0;
  }
  vmt__record_unref(t);
  return rc;
}

size_t vmt_stack_bytes_left_slow(void) {
  vmt_thread_t *t = vmt__current;
  if (t == NULL || vmt__stack_bounds_ensure(t) != 0) return SIZE_MAX;
  uintptr_t limit = __atomic_load_n(&t->cold->fast.stack_limit, __ATOMIC_RELAXED);
  uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
  return sp > limit ? sp - limit : 0;
}
