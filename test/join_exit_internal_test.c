/*
 * test/join_exit_internal_test.c: a join of a thread that vmt_thread_state already calls
 * TERMINATED, while the rest of its exit is still under way. Java's join(millis) loops on
 * isAlive(), and a TERMINATED thread is not alive: the join returns at once, however short the
 * timeout and whatever the joiner's interrupt status. A joiner that trusted only the exit's
 * last event answered -ETIMEDOUT there (a timed join right after the state said TERMINATED,
 * seen in CI under TSan). The VMT__FAULT_THREAD_TERMINATED hook holds the target at that point
 * for as long as a test likes. Internal: it needs the hook.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "runtime/fault.h"
#include "test/thread_util.h"
#include "test/vms_util.h"

typedef struct held {
  vmt_thread_t *_Atomic target;
  _Atomic int phase;   /* 1 the target is in the hook, 2 it may go on */
} held_t;

static held_t held;

static void hold_terminated(void *arg) {
  (void)arg;
  if (vmt_thread_current() != atomic_load(&held.target)) return;
  atomic_store(&held.phase, 1);
  WAIT_UNTIL(atomic_load(&held.phase) == 2);
}

/* Lets the held target go after a while, from a thread of its own: a joiner that reaps the
 * target waits for the rest of its exit, which the hook holds up until then. */
static void *release_later(void *arg) {
  (void)arg;
  struct timespec ts = {0, 20 * 1000 * 1000};
  nanosleep(&ts, NULL);
  atomic_store(&held.phase, 2);
  return NULL;
}

static int token;

static void *return_token(void *arg) {
  latch_wait(arg);
  return &token;
}

/* Starts a target held in its exit where it is TERMINATED, and the thread that lets it go. */
static vmt_thread_t *start_held(latch_t *go, pthread_t *releaser) {
  memset(&held, 0, sizeof(held));
  vmt_thread_t *t = mu_start(return_token, go);
  atomic_store(&held.target, t);
  vmt__fault_set_hook(VMT__FAULT_THREAD_TERMINATED, hold_terminated, NULL);
  latch_open(go);
  MU_POLL_UNTIL(atomic_load(&held.phase) == 1, "the target to be held in its exit");
  assert_int_equal(vmt_thread_state(t), VMT_THREAD_TERMINATED);
  assert_int_equal(pthread_create(releaser, NULL, release_later, NULL), 0);
  return t;
}

static void end_held(vmt_thread_t *t, pthread_t releaser, latch_t *go) {
  pthread_join(releaser, NULL);
  vmt__fault_disarm_all();
  /* Joined once: a second join is refused, the result was not lost. */
  assert_int_equal(vmt_thread_timed_join(t, 0, NULL), -EALREADY);
  assert_int_equal(vmt_thread_release(t), 0);
  latch_destroy(go);
}

/* A join with this timeout of a target held where it is TERMINATED: it joins, with the result. */
static void join_held_with(int64_t timeout_ns) {
  latch_t go;
  latch_init(&go);
  pthread_t releaser;
  vmt_thread_t *t = start_held(&go, &releaser);
  void *res = NULL;
  assert_int_equal(vmt_thread_timed_join(t, timeout_ns, &res), 0);
  assert_ptr_equal(res, &token);
  end_held(t, releaser, &go);
}

static void a_try_join_of_a_terminated_thread_joins_it(void **state) {
  (void)state;
  join_held_with(0);
}

static void a_timed_join_of_a_terminated_thread_joins_it(void **state) {
  (void)state;
  join_held_with(1000 * 1000);   /* 1 ms */
}

typedef struct int_joiner {
  vmt_thread_t *target;
  void *res;
  int rc;
  bool still_interrupted;
} int_joiner_t;

static void *join_interrupted(void *arg) {
  int_joiner_t *j = arg;
  vmt_thread_interrupt(vmt_thread_current());
  j->rc = vmt_thread_timed_join(j->target, 0, &j->res);
  j->still_interrupted = vmt_thread_is_interrupted(vmt_thread_current());
  return NULL;
}

/* Java: join on a thread that is not alive returns, the interrupt status set and kept. */
static void an_interrupted_joiner_joins_a_terminated_thread(void **state) {
  (void)state;
  latch_t go;
  latch_init(&go);
  int_joiner_t j = {.rc = 1};
  pthread_t releaser;
  vmt_thread_t *t = start_held(&go, &releaser);
  j.target = t;
  vmt_thread_t *jt = mu_start(join_interrupted, &j);
  mu_join(jt);
  assert_int_equal(j.rc, 0);
  assert_ptr_equal(j.res, &token);
  assert_true(j.still_interrupted);
  end_held(t, releaser, &go);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_try_join_of_a_terminated_thread_joins_it),
      cmocka_unit_test(a_timed_join_of_a_terminated_thread_joins_it),
      cmocka_unit_test(an_interrupted_joiner_joins_a_terminated_thread),
  };
  return cmocka_run_group_tests(tests, mu_attach_main, mu_detach_main);
}
