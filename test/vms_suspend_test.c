/*
 * test/vms_suspend_test.c: suspension through the public API: a running thread stops and a
 * parked or native one stays put; counts per reason (a resume without its suspend is refused,
 * reasons do not mix); a suspended thread cannot suspend another (mutual suspension refused,
 * and two threads racing to suspend each other never both win); self-suspension; a timeout
 * that names the straggler and takes the count back; suspend-all and resume-all; and a storm of
 * suspend/resume pairs (10^6 in the default build, a tenth under ASan, a fiftieth under TSan)
 * with no lost resume and no hang.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "test/reliability.h"
#include "test/vms_util.h"

static void a_running_thread_stops_until_resumed(void **state) {
  (void)state;
  mutator_t m;
  mutator_start(&m, true);
  assert_int_equal(vmt_thread_suspend(m.thread, VMT_SUSPEND_DEBUGGER, 10 * VMS_SECOND, NULL), 0);
  assert_int_equal(vmt_thread_suspend_count(m.thread), 1);
  assert_true(mutator_stalled(&m));
  assert_int_equal(vmt_exec_state(m.thread), VMT_EXEC_BLOCKED);
  assert_int_equal(vmt_thread_resume(m.thread, VMT_SUSPEND_DEBUGGER), 0);
  assert_int_equal(vmt_thread_suspend_count(m.thread), 0);
  uint64_t it = atomic_load(&m.iterations);
  MU_POLL_UNTIL(atomic_load(&m.iterations) > it + 1000, "the mutator to run again");
  mutator_stop(&m);
}

static void a_parked_thread_stays_parked(void **state) {
  (void)state;
  parker_t pk;
  parker_start(&pk);
  assert_int_equal(vmt_thread_suspend(pk.thread, VMT_SUSPEND_VM, 0, NULL), 0);
  atomic_store(&pk.stop, true);
  vmt_unpark(pk.thread);
  for (int i = 0; i < 20; i++) {
    mu_pause_1ms();
    assert_int_equal(atomic_load(&pk.phase), 1);
  }
  assert_int_equal(vmt_thread_resume(pk.thread, VMT_SUSPEND_VM), 0);
  MU_POLL_UNTIL(atomic_load(&pk.phase) == 2, "the parker to return");
  mu_join(pk.thread);
}

static void a_native_thread_runs_on_but_cannot_enter_managed_code(void **state) {
  (void)state;
  native_reader_t r;
  reader_start_ex(&r, true);
  assert_int_equal(vmt_thread_suspend(r.thread, VMT_SUSPEND_USER, 0, NULL), 0);
  reader_feed(&r);
  MU_POLL_UNTIL(atomic_load(&r.phase) == 2, "native code to go on");
  for (int i = 0; i < 20; i++) {
    mu_pause_1ms();
    assert_int_equal(atomic_load(&r.phase), 2);
  }
  assert_int_equal(vmt_thread_resume(r.thread, VMT_SUSPEND_USER), 0);
  reader_stop(&r);
  assert_int_equal(atomic_load(&r.phase), 3);
}

static void counts_are_per_reason(void **state) {
  (void)state;
  parker_t pk;
  parker_start(&pk);
  vmt_thread_t *t = pk.thread;
  assert_int_equal(vmt_thread_resume(t, VMT_SUSPEND_VM), -EINVAL);
  assert_int_equal(vmt_thread_suspend(t, VMT_SUSPEND_VM, 0, NULL), 0);
  assert_int_equal(vmt_thread_suspend(t, VMT_SUSPEND_VM, 0, NULL), 0);
  assert_int_equal(vmt_thread_suspend(t, VMT_SUSPEND_DEBUGGER, 0, NULL), 0);
  assert_int_equal(vmt_thread_suspend_count(t), 3);
  assert_int_equal(vmt_thread_resume(t, VMT_SUSPEND_USER), -EINVAL);
  assert_int_equal(vmt_thread_resume(t, VMT_SUSPEND_VM), 0);
  assert_int_equal(vmt_thread_resume(t, VMT_SUSPEND_VM), 0);
  assert_int_equal(vmt_thread_resume(t, VMT_SUSPEND_VM), -EINVAL);
  assert_int_equal(vmt_thread_suspend_count(t), 1);
  atomic_store(&pk.stop, true);
  vmt_unpark(t);
  mu_pause_1ms();
  assert_int_equal(atomic_load(&pk.phase), 1);   /* the debugger still holds it */
  assert_int_equal(vmt_thread_resume(t, VMT_SUSPEND_DEBUGGER), 0);
  mu_join(t);
  /* Bad input. */
  assert_int_equal(vmt_thread_suspend(NULL, VMT_SUSPEND_VM, 0, NULL), -EINVAL);
  assert_int_equal(vmt_thread_suspend(vmt_thread_current(), VMT_SUSPEND_REASON_COUNT, 0, NULL),
                   -EINVAL);
  assert_int_equal(vmt_thread_suspend(vmt_thread_current(), VMT_SUSPEND_VM, -1, NULL), -EINVAL);
  assert_int_equal(vmt_thread_resume(NULL, VMT_SUSPEND_VM), -EINVAL);
  assert_int_equal(vmt_thread_suspend_count(NULL), -EINVAL);
  assert_int_equal(vmt_thread_suspend_all(VMT_SUSPEND_REASON_COUNT, 0, NULL), -EINVAL);
  assert_int_equal(vmt_thread_resume_all((vmt_suspend_reason_t)-1), -EINVAL);
}

/* ---- Mutual suspension ------------------------------------------------------------------ */
typedef struct suspender {
  int fds[2];
  vmt_thread_t *victim;
  _Atomic int phase;
  _Atomic int rc;
} suspender_t;

static void *suspend_after_read(void *arg) {
  suspender_t *s = arg;
  atomic_store(&s->phase, 1);
  char c;
  ssize_t r = read(s->fds[0], &c, 1);
  (void)r;
  atomic_store(&s->rc, vmt_thread_suspend(s->victim, VMT_SUSPEND_VM, 0, NULL));
  atomic_store(&s->phase, 2);
  return NULL;
}

static void a_suspended_thread_cannot_suspend_another(void **state) {
  (void)state;
  parker_t victim;
  parker_start(&victim);
  suspender_t s = {.victim = victim.thread, .rc = 1};
  assert_int_equal(pipe(s.fds), 0);
  vmt_thread_t *t = mu_start(suspend_after_read, &s);
  MU_POLL_UNTIL(atomic_load(&s.phase) == 1, "the suspender to block in native code");
  assert_int_equal(vmt_thread_suspend(t, VMT_SUSPEND_VM, 0, NULL), 0);
  assert_int_equal(write(s.fds[1], "x", 1), 1);   /* native code runs on, suspended */
  MU_POLL_UNTIL(atomic_load(&s.phase) == 2, "the suspender's attempt");
  assert_int_equal(atomic_load(&s.rc), -EDEADLK);
  assert_int_equal(vmt_thread_suspend_count(victim.thread), 0);
  assert_int_equal(vmt_thread_resume(t, VMT_SUSPEND_VM), 0);
  mu_join(t);
  parker_stop(&victim);
  close(s.fds[0]);
  close(s.fds[1]);
}

typedef struct duelist {
  _Atomic(vmt_thread_t *) *other;
  _Atomic int *go;
  _Atomic int rc;
} duelist_t;

static void *duel(void *arg) {
  duelist_t *d = arg;
  vmt_thread_t *self = vmt_thread_current();
  vmt_exec_enter(VMT_EXEC_MANAGED);
  atomic_fetch_add(d->go, 1);
  while (atomic_load(d->go) < 3) vmt_poll(self);
  atomic_store(&d->rc, vmt_thread_suspend(atomic_load(d->other), VMT_SUSPEND_VM,
                                          10 * VMS_SECOND, NULL));
  atomic_fetch_add(d->go, 1);
  /* The loser is stopped at a poll in here until the main thread resumes it. */
  while (atomic_load(d->go) < 6) vmt_poll(self);
  vmt_exec_enter(VMT_EXEC_NATIVE);
  return NULL;
}

static void two_threads_suspending_each_other_never_both_win(void **state) {
  (void)state;
  int rounds = 200 / VMS_SCALE_DIVISOR + 10, refused = 0;
  for (int r = 0; r < rounds; r++) {
    _Atomic int go = 0;
    _Atomic(vmt_thread_t *) ta = NULL, tb = NULL;
    duelist_t a = {.other = &tb, .go = &go, .rc = 1}, b = {.other = &ta, .go = &go, .rc = 1};
    vmt_thread_t *t1 = mu_start(duel, &a);
    vmt_thread_t *t2 = mu_start(duel, &b);
    atomic_store(&ta, t1);
    atomic_store(&tb, t2);
    atomic_fetch_add(&go, 1);
    /* The loser is either refused (-EDEADLK: it was counted first) or stopped at a poll
     * before it could ask; once resumed, it may ask again and win in turn. What must never
     * happen is both suspended at once. */
    while (atomic_load(&a.rc) == 1 || atomic_load(&b.rc) == 1) {
      int c1 = vmt_thread_suspend_count(t1), c2 = vmt_thread_suspend_count(t2);
      assert_true(c1 + c2 <= 1);
      if (atomic_load(&a.rc) != 1 || atomic_load(&b.rc) != 1) {
        if (c1) vmt_thread_resume(t1, VMT_SUSPEND_VM);
        if (c2) vmt_thread_resume(t2, VMT_SUSPEND_VM);
      }
      mu_pause_1ms();
    }
    int ra = atomic_load(&a.rc), rb = atomic_load(&b.rc);
    assert_true(ra == 0 || ra == -EDEADLK);
    assert_true(rb == 0 || rb == -EDEADLK);
    assert_true(ra == 0 || rb == 0);
    refused += ra == -EDEADLK || rb == -EDEADLK;
    atomic_fetch_add(&go, 1);
    for (int i = 0; i < 2; i++) {
      vmt_thread_t *t = i ? t2 : t1;
      while (vmt_thread_suspend_count(t) > 0) vmt_thread_resume(t, VMT_SUSPEND_VM);
    }
    mu_join(t1);
    mu_join(t2);
  }
  print_message("%d rounds, %d with a refusal\n", rounds, refused);
}

static void self_suspension(void **state) {
  (void)state;
  vmt_thread_t *self = vmt_thread_current();
  /* From native code it returns at once; it is suspended until resumed. */
  assert_int_equal(vmt_thread_suspend(self, VMT_SUSPEND_VM, 0, NULL), 0);
  assert_int_equal(vmt_thread_suspend_count(self), 1);
  assert_int_equal(vmt_thread_resume(self, VMT_SUSPEND_VM), 0);
  assert_int_equal(vmt_exec_enter(VMT_EXEC_MANAGED), VMT_EXEC_NATIVE);
  vmt_exec_enter(VMT_EXEC_NATIVE);
}

static void a_timeout_names_the_straggler_and_takes_the_count_back(void **state) {
  (void)state;
  mutator_t m;
  mutator_start(&m, false);
  vmt_straggler_t s;
  assert_int_equal(vmt_thread_suspend(m.thread, VMT_SUSPEND_VM, 50 * MU_MS, &s), -ETIMEDOUT);
  assert_int_equal(s.thread_id, vmt_thread_id(m.thread));
  assert_int_equal(s.exec_state, VMT_EXEC_MANAGED);
  assert_true(s.waited_ns >= 50 * MU_MS);
  assert_int_equal(vmt_thread_suspend_count(m.thread), 0);
  assert_false(vmt_poll_armed(m.thread));
  mutator_stop(&m);
}

static void a_thread_that_exited_cannot_be_suspended(void **state) {
  (void)state;
  parker_t pk;
  parker_start(&pk);
  assert_int_equal(vmt_thread_retain(pk.thread), 0);
  parker_stop(&pk);
  assert_int_equal(vmt_thread_suspend(pk.thread, VMT_SUSPEND_VM, 0, NULL), -ESRCH);
  assert_int_equal(vmt_thread_suspend_count(pk.thread), 0);
  assert_int_equal(vmt_thread_release(pk.thread), 0);
}

static void suspend_all_and_resume_all(void **state) {
  (void)state;
  mutator_t m[3];
  parker_t pk[2];
  for (int i = 0; i < 3; i++) mutator_start(&m[i], true);
  for (int i = 0; i < 2; i++) parker_start(&pk[i]);
  assert_int_equal(vmt_thread_suspend_all(VMT_SUSPEND_DEBUGGER, 10 * VMS_SECOND, NULL), 0);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(vmt_thread_suspend_count(m[i].thread), 1);
    assert_true(mutator_stalled(&m[i]));
  }
  assert_int_equal(vmt_thread_suspend_count(vmt_thread_current()), 0);
  assert_int_equal(vmt_thread_resume_all(VMT_SUSPEND_VM), 0);   /* another reason: nobody */
  assert_int_equal(vmt_thread_resume_all(VMT_SUSPEND_DEBUGGER), 5);
  assert_int_equal(vmt_thread_resume_all(VMT_SUSPEND_DEBUGGER), 0);
  for (int i = 0; i < 3; i++) mutator_stop(&m[i]);
  for (int i = 0; i < 2; i++) parker_stop(&pk[i]);
}

/* ---- The storm --------------------------------------------------------------------------- */
typedef struct stormer {
  vmt_thread_t *target;
  long pairs;
  _Atomic long failures;
} stormer_t;

static void *storm_pairs(void *arg) {
  stormer_t *s = arg;
  for (long i = 0; i < s->pairs; i++) {
    if (vmt_thread_suspend(s->target, VMT_SUSPEND_VM, 10 * VMS_SECOND, NULL) != 0 ||
        vmt_thread_resume(s->target, VMT_SUSPEND_VM) != 0)
      atomic_fetch_add(&s->failures, 1);
    /* Now and then let the target run, so that suspends find it running, parked and native,
     * not only held by the other suspender. */
    if (i % 8 == 0) sched_yield();
  }
  return NULL;
}

typedef struct storm_target {
  _Atomic bool stop;
  _Atomic uint64_t work;
} storm_target_t;

/* Managed code with polls, a park with a short timeout and a native stretch, in turn. */
static void *storm_target(void *arg) {
  storm_target_t *st = arg;
  vmt_thread_t *self = vmt_thread_current();
  for (unsigned i = 0; !atomic_load_explicit(&st->stop, memory_order_relaxed); i++) {
    vmt_exec_enter(VMT_EXEC_MANAGED);
    for (int j = 0; j < 256; j++) {
      atomic_fetch_add_explicit(&st->work, 1, memory_order_relaxed);
      vmt_poll(self);
    }
    if (i % 3 == 0) vmt_park(10 * 1000);
    vmt_exec_enter(VMT_EXEC_NATIVE);
  }
  return NULL;
}

#define STORMERS 2
static void suspend_resume_storm(void **state) {
  (void)state;
  long total = (long)rel_env_number("VMT_VMS_STORM_PAIRS", 1e6) / VMS_SCALE_DIVISOR;
  storm_target_t st = {0};
  vmt_thread_t *target = mu_start(storm_target, &st);
  stormer_t s[STORMERS];
  vmt_thread_t *t[STORMERS];
  int64_t start = test_clock_ns(CLOCK_MONOTONIC);
  for (int i = 0; i < STORMERS; i++) {
    s[i] = (stormer_t){.target = target, .pairs = total / STORMERS};
    t[i] = mu_start(storm_pairs, &s[i]);
  }
  for (int i = 0; i < STORMERS; i++) {
    mu_join(t[i]);
    assert_int_equal(atomic_load(&s[i].failures), 0);
  }
  int64_t elapsed = test_clock_ns(CLOCK_MONOTONIC) - start;
  uint64_t work_during = atomic_load(&st.work);
  /* No resume was lost: the count is back to 0 and the target runs on to its end. */
  assert_int_equal(vmt_thread_suspend_count(target), 0);
  uint64_t w = atomic_load(&st.work);
  MU_POLL_UNTIL(atomic_load(&st.work) > w + 1000, "the target to run after the storm");
  atomic_store(&st.stop, true);
  mu_join(target);
  rel_figure("vms_suspend_test", "storm_pairs", total);
  rel_figure("vms_suspend_test", "storm_ms", elapsed / 1000000);
  rel_figure("vms_suspend_test", "storm_target_work", (long long)work_during);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_running_thread_stops_until_resumed),
      cmocka_unit_test(a_parked_thread_stays_parked),
      cmocka_unit_test(a_native_thread_runs_on_but_cannot_enter_managed_code),
      cmocka_unit_test(counts_are_per_reason),
      cmocka_unit_test(a_suspended_thread_cannot_suspend_another),
      cmocka_unit_test(two_threads_suspending_each_other_never_both_win),
      cmocka_unit_test(self_suspension),
      cmocka_unit_test(a_timeout_names_the_straggler_and_takes_the_count_back),
      cmocka_unit_test(a_thread_that_exited_cannot_be_suspended),
      cmocka_unit_test(suspend_all_and_resume_all),
      cmocka_unit_test(suspend_resume_storm),
  };
  return cmocka_run_group_tests(tests, mu_attach_main, mu_detach_main);
}
