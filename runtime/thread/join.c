/*
 * runtime/thread/join.c: join, retain and release: what a user does with a handle.
 *
 * Every entry point first checks the record's magic and takes or checks a reference with a
 * compare-and-swap that refuses zero, so a handle whose references are all gone gives -EINVAL
 * (records are type-stable, registry/record.c). Join holds a temporary internal reference while
 * it waits, so a concurrent release cannot recycle the record under it.
 *
 * It waits in pthread_join alone. Waiting first on a futex the exiting thread wakes once its
 * bookkeeping is done would cost, when the joiner arrives early, a wake-up system call in the
 * exiting thread and a second sleep in the joiner (pthread_join still has to wait for the
 * thread's very end to reap it): two context switches where one does.
 *
 * While it waits for a thread that has not terminated, the joiner is WAITING, and the wait
 * counts in its ThreadInfo as Java's Thread.join does (runtime/sync/sync.h, vmt__join_wait_begin).
 *
 * Cancellation: pthread_join is a cancellation point, and a joiner cancelled inside it has not
 * joined (POSIX: the target is not detached either). A cleanup handler ends the wait, gives the
 * claim back and drops the temporary reference, so a later join gets the result and reaps the
 * thread, as if the cancelled call had never been made.
 */
#include <errno.h>

#include "runtime/thread/thread_impl.h"

typedef struct join_wait {
  vmt_thread_t *t;
  vmt_thread_t *self;
  int saved;           /* the joiner's execution state before the safe region */
  bool waits;          /* the target was alive: the joiner is WAITING (vmt__join_wait_begin) */
  vmt__episode_t ep;
} join_wait_t;

static void join_cancelled(void *arg) {
  join_wait_t *w = arg;
  /* The joiner unwinds in the state it was in, not in the safe region's. */
  vmt__region_leave(w->self, w->saved, NULL);
  if (w->waits) vmt__join_wait_end(&w->ep);
  vmt__stack_mark_reaping(w->t, false);   /* not joined: its pthread_t may still be asked */
  atomic_store_explicit(&w->t->joined, false, memory_order_release);
  vmt__record_unref(w->t);
}

/* The cancellation point alone in its function: pthread_cleanup_push sets a jump buffer, and
 * nothing of the caller's may live across it (gcc -Wclobbered, seen under --config=tsan). */
static __attribute__((noinline)) void wait_for_end(join_wait_t *w) {
  pthread_cleanup_push(join_cancelled, w);
  pthread_join(w->t->pthread, NULL);
  pthread_cleanup_pop(0);
}

int vmt_thread_join(vmt_thread_t *t, void **result) {
  if (t == NULL || !vmt__record_ref_if_live(t)) return -EINVAL;
  int rc = 0;
  if (atomic_load_explicit(&t->user_refs, memory_order_acquire) <= 0 ||
      t->kind == VMT__KIND_ATTACHED) {
    rc = -EINVAL;
  } else if (t == vmt__current) {
    rc = -EDEADLK;
  } else {
    if (atomic_exchange_explicit(&t->joined, true, memory_order_acq_rel)) {
      rc = -EALREADY;
    } else {
      /* pthread_join returns once the kernel has cleared the thread's tid word, after the
       * thread ran its whole exit path: the bookkeeping is done by then. A thread of a fork's
       * parent process does not exist here: nothing to wait for. */
      vmt__stack_mark_reaping(t, true);
      if (vmt__thread_of_this_process(t)) {
        /* Java: joining a live thread is a wait (WAITING, a waited count); joining one that
         * has terminated returns at once (isAlive() is false), though pthread_join may still
         * wait out its last instructions. The wait itself is a safe region, like the
         * runtime's other blocking calls (vmservices.h). */
        join_wait_t w = {.t = t, .self = vmt__current};
        w.waits = atomic_load_explicit(&t->state, memory_order_acquire) != VMT_THREAD_TERMINATED;
        if (w.waits) vmt__join_wait_begin(&w.ep);
        w.saved = vmt__region_enter(w.self);
        wait_for_end(&w);
        vmt__region_leave(w.self, w.saved, NULL);
        if (w.waits) vmt__join_wait_end(&w.ep);
      }
      t->owns_pthread = false;
      if (result) *result = t->result;
    }
  }
  vmt__record_unref(t);
  return rc;
}

int vmt_thread_retain(vmt_thread_t *t) {
  if (t == NULL || !vmt__record_ref_if_live(t)) return -EINVAL;
  /* A started thread's user references cannot come back from zero (its last holder let go,
   * so nobody may use the handle); an attached thread starts at zero and may be retained
   * while it is attached. */
  bool from_zero_ok = t->kind == VMT__KIND_ATTACHED &&
                      atomic_load_explicit(&t->state, memory_order_acquire) !=
                          VMT_THREAD_TERMINATED;
  int32_t u = atomic_load_explicit(&t->user_refs, memory_order_relaxed);
  do {
    if (u <= 0 && !from_zero_ok) {
      vmt__record_unref(t);
      return -EINVAL;
    }
  } while (!atomic_compare_exchange_weak_explicit(&t->user_refs, &u, u + 1, memory_order_acq_rel,
                                                  memory_order_relaxed));
  /* The first user reference keeps the internal one just taken; later ones do not need it. */
  if (u > 0) vmt__record_unref(t);
  return 0;
}

int vmt_thread_release(vmt_thread_t *t) {
  if (t == NULL || __atomic_load_n(&t->magic, __ATOMIC_RELAXED) != VMT__THREAD_MAGIC)
    return -EINVAL;
  int32_t u = atomic_load_explicit(&t->user_refs, memory_order_relaxed);
  do {
    if (u <= 0) return -EINVAL;
  } while (!atomic_compare_exchange_weak_explicit(&t->user_refs, &u, u - 1, memory_order_acq_rel,
                                                  memory_order_relaxed));
  if (u == 1) vmt__record_unref(t);
  return 0;
}
