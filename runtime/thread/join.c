/*
 * runtime/thread/join.c: join, retain and release: what a user does with a handle.
 *
 * Every entry point first checks the record's magic and takes or checks a reference with a
 * compare-and-swap that refuses zero, so a handle whose references are all gone gives -EINVAL
 * (records are type-stable, registry/record.c). Join holds a temporary internal reference while
 * it waits, so a concurrent release cannot recycle the record under it.
 *
 * Java's join is an Object.wait: interruptible (-EINTR, the status cleared) and timed. So a
 * runtime thread, or any thread with a timeout, first sleeps on the target's exit_event, a
 * futex word the exiting thread sets just after its bookkeeping (`done`) and wakes only when
 * a joiner counted itself asleep (join_sleepers; Dekker's pattern with the set), or stops
 * waiting as soon as the target is TERMINATED (the state is set before that bookkeeping, and a
 * TERMINATED thread is not alive for Java's join), then reaps with pthread_join, which returns
 * once the kernel has cleared the thread's tid at its very end. A thread without record
 * joining without a timeout cannot be interrupted: it waits in
 * pthread_join alone, one sleep and no wake-up call in the exiting thread.
 *
 * Cancellation: both waits are cancellation points (pthread_join is one; the futex wait tests
 * for a request at every turn, and a request wakes it), and a joiner cancelled inside them has
 * not joined (POSIX: the target is not detached either). A cleanup handler gives the claim
 * back and drops the temporary reference, so a later join gets the result and reaps the
 * thread, as if the cancelled call had never been made.
 */
#include <errno.h>

#include "runtime/thread/thread_impl.h"

/* How long a joiner polls for a thread's last steps before it sleeps in pthread_join: the C
 * library's thread exit after ours (TSD destructors, the stack's madvise) takes microseconds;
 * a thread preempted there is waited for in the kernel. */
#define REAP_SPIN_NS (50LL * 1000)

typedef struct join_claim {
  vmt_thread_t *t;
  vmt_thread_t *self;
  int64_t deadline_ns;
  int rc;           /* of the sleep on exit_event */
  bool sleeping;    /* counted in t->join_sleepers */
  bool in_region;   /* inside the reap's safe region, entered from state `saved` */
  int saved;
} join_claim_t;

static void join_cancelled(void *arg) {
  join_claim_t *c = arg;
  /* The joiner unwinds in the state it was in, not in the safe region's. */
  if (c->in_region) vmt__region_leave(c->self, c->saved, NULL);
  if (c->sleeping) atomic_fetch_sub_explicit(&c->t->join_sleepers, 1, memory_order_relaxed);
  vmt__stack_mark_reaping(c->t, false);   /* not joined: its pthread_t may still be asked */
  atomic_store_explicit(&c->t->joined, false, memory_order_release);
  vmt__record_unref(c->t);
}

/* The cancellation points alone in their functions, their state in the claim: cleanup_push
 * sets a jump buffer, and nothing of the caller's may live across it (gcc -Wclobbered). */
static __attribute__((noinline)) void sleep_on_exit_event(join_claim_t *c) {
  pthread_cleanup_push(join_cancelled, c);
  atomic_fetch_add_explicit(&c->t->join_sleepers, 1, memory_order_seq_cst);
  c->sleeping = true;
  c->rc = vmt__wait_for_exit(c->self, c->t, c->deadline_ns);
  atomic_fetch_sub_explicit(&c->t->join_sleepers, 1, memory_order_relaxed);
  c->sleeping = false;
  pthread_cleanup_pop(0);
}

/* A safe region, like the runtime's other blocking calls (vmservices.h). Woken from
 * exit_event, the thread has a few microseconds of its exit left to run: poll for its end for
 * a while rather than sleep a second time (exit -> join was 25.7 us against raw pthread_join's
 * 16.1 with the second sleep, //bench:wake --quick, a loaded machine). */
static __attribute__((noinline)) void reap(join_claim_t *c, bool slept) {
  pthread_cleanup_push(join_cancelled, c);
  c->saved = vmt__region_enter(c->self);
  c->in_region = true;
  if (slept)
    vmt_os_thread_reap(c->t->pthread, REAP_SPIN_NS);
  else
    pthread_join(c->t->pthread, NULL);
  vmt__region_leave(c->self, c->saved, NULL);
  c->in_region = false;
  pthread_cleanup_pop(0);
}

static int join(vmt_thread_t *t, int64_t deadline_ns, bool timed, void **result) {
  if (t == NULL || !vmt__record_ref_if_live(t)) return -EINVAL;
  int rc = 0;
  if (atomic_load_explicit(&t->user_refs, memory_order_acquire) <= 0 ||
      t->kind == VMT__KIND_ATTACHED) {
    rc = -EINVAL;
  } else if (t == vmt__current) {
    rc = -EDEADLK;
  } else if (atomic_exchange_explicit(&t->joined, true, memory_order_acq_rel)) {
    rc = -EALREADY;
  } else {
    /* A thread of a fork's parent process does not exist here: nothing to wait for. */
    bool here = vmt__thread_of_this_process(t);
    join_claim_t claim = {.t = t, .self = vmt__current, .deadline_ns = deadline_ns};
    /* Interruptible or timed: sleep on the target's exit_event first (its exit sets it just
     * after `done` and wakes sleepers it counts, exit.c). A thread without record waiting
     * without a timeout can be neither interrupted nor timed out: pthread_join alone. */
    bool slept = here && (claim.self != NULL || timed);
    if (slept) sleep_on_exit_event(&claim);
    rc = claim.rc;
    if (rc == 0) {
      /* pthread_join returns once the kernel has cleared the thread's tid word, after the
       * thread ran its whole exit path: the bookkeeping is done by then. */
      vmt__stack_mark_reaping(t, true);
      if (here) reap(&claim, slept);
      t->owns_pthread = false;
      if (result) *result = t->cold->result;
    } else {
      /* Interrupted or timed out: no join happened, and another may. */
      atomic_store_explicit(&t->joined, false, memory_order_release);
    }
  }
  vmt__record_unref(t);
  return rc;
}

int vmt_thread_join(vmt_thread_t *t, void **result) {
  return join(t, VMT_OS_NO_DEADLINE, false, result);
}

int vmt_thread_timed_join(vmt_thread_t *t, int64_t timeout_ns, void **result) {
  return join(t, vmt__deadline_after_or_now(timeout_ns), true, result);
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
