/*
 * test/vms_handshake_test.c: handshakes through the public API. Who runs the operation (the
 * target when it runs managed code, the requester when the target is blocked or in native
 * code), exactly once per target, under a storm of requests against a thread that keeps
 * changing state; a thread that exits with a request pending, and one that has exited; a
 * timeout that takes the request back and names the straggler; asynchronous operations; all
 * threads at once; two threads handshaking each other; a foreign requester.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test/vms_util.h"

static void runs_on_a_running_target_by_the_target(void **state) {
  (void)state;
  mutator_t m;
  mutator_start(&m, true);
  probe_t p = {0};
  vmt_handshake_result_t res;
  assert_int_equal(vmt_handshake_run(m.thread, probe_fn, &p, 0, &res), 0);
  assert_int_equal(atomic_load(&p.calls), 1);
  assert_true(res.by_target);
  assert_ptr_equal(atomic_load(&p.ran_on), m.thread);
  assert_ptr_equal(atomic_load(&p.target), m.thread);
  mutator_stop(&m);
  assert_int_equal(atomic_load(&p.calls), 1);
}

static void runs_on_a_parked_target_by_the_requester(void **state) {
  (void)state;
  parker_t pk;
  parker_start(&pk);
  probe_t p = {0};
  vmt_handshake_result_t res;
  assert_int_equal(vmt_handshake_run(pk.thread, probe_fn, &p, 0, &res), 0);
  assert_int_equal(atomic_load(&p.calls), 1);
  assert_false(res.by_target);
  assert_ptr_equal(atomic_load(&p.ran_on), vmt_thread_current());
  assert_ptr_equal(atomic_load(&p.target), pk.thread);
  assert_int_equal(atomic_load(&p.target_exec_state), VMT_EXEC_BLOCKED);
  parker_stop(&pk);
}

static void runs_on_a_native_target_by_the_requester(void **state) {
  (void)state;
  native_reader_t r;
  reader_start(&r);
  probe_t p = {0};
  vmt_handshake_result_t res;
  assert_int_equal(vmt_handshake_run(r.thread, probe_fn, &p, 0, &res), 0);
  assert_false(res.by_target);
  assert_ptr_equal(atomic_load(&p.ran_on), vmt_thread_current());
  assert_int_equal(atomic_load(&p.target_exec_state), VMT_EXEC_NATIVE);
  reader_stop(&r);
  assert_int_equal(atomic_load(&p.calls), 1);
}

static void runs_at_once_on_the_caller(void **state) {
  (void)state;
  probe_t p = {0};
  vmt_handshake_result_t res;
  assert_int_equal(vmt_handshake_run(vmt_thread_current(), probe_fn, &p, 0, &res), 0);
  assert_true(res.by_target);
  assert_int_equal(atomic_load(&p.calls), 1);
}

static void refuses_bad_input(void **state) {
  (void)state;
  probe_t p = {0};
  vmt_thread_t *self = vmt_thread_current();
  assert_int_equal(vmt_handshake_run(NULL, probe_fn, &p, 0, NULL), -EINVAL);
  assert_int_equal(vmt_handshake_run(self, NULL, &p, 0, NULL), -EINVAL);
  assert_int_equal(vmt_handshake_run(self, probe_fn, &p, -1, NULL), -EINVAL);
  assert_int_equal(vmt_handshake_post(NULL, probe_fn, &p), -EINVAL);
  assert_int_equal(vmt_handshake_post(self, NULL, &p), -EINVAL);
  assert_int_equal(vmt_handshake_run_all(NULL, &p, 0, NULL), -EINVAL);
  assert_int_equal(vmt_handshake_run_all(probe_fn, &p, -1, NULL), -EINVAL);
  assert_int_equal(atomic_load(&p.calls), 0);
}

/* ---- Exactly once, whatever the target is doing --------------------------------------- */
typedef struct flipper {
  _Atomic bool stop;
  vmt_thread_t *thread;
} flipper_t;

/* Managed code with polls, a native stretch, a park with a short timeout, a VM stretch: every
 * kind of state and transition, over and over. */
static void *flip(void *arg) {
  flipper_t *f = arg;
  vmt_thread_t *self = vmt_thread_current();
  for (unsigned i = 0; !atomic_load_explicit(&f->stop, memory_order_relaxed); i++) {
    vmt_exec_enter(VMT_EXEC_MANAGED);
    for (int j = 0; j < 4096; j++) vmt_poll(self);
    switch (i % 4) {
      case 0: vmt_exec_enter(VMT_EXEC_NATIVE); sched_yield(); break;
      case 1: vmt_park(20 * 1000); break;
      case 2: vmt_exec_enter(VMT_EXEC_VM); break;
      default: break;
    }
  }
  vmt_exec_enter(VMT_EXEC_NATIVE);
  return NULL;
}

#define STORM_REQUESTERS 3
typedef struct storm {
  vmt_thread_t *target;
  int rounds;
  _Atomic int *calls;        /* one counter per (requester, round) */
  _Atomic int failures;
  _Atomic int by_target, by_requester;
  int index;
} storm_t;

static void count_call(vmt_thread_t *target, void *arg) {
  (void)target;
  atomic_fetch_add((_Atomic int *)arg, 1);
}

static void *request_storm(void *arg) {
  storm_t *s = arg;
  for (int r = 0; r < s->rounds; r++) {
    vmt_handshake_result_t res = {0};
    if (vmt_handshake_run(s->target, count_call, &s->calls[s->index * s->rounds + r],
                          10 * VMS_SECOND, &res) != 0)
      atomic_fetch_add(&s->failures, 1);
    atomic_fetch_add(res.by_target ? &s->by_target : &s->by_requester, 1);
  }
  return NULL;
}

static void exactly_once_under_a_storm(void **state) {
  (void)state;
  flipper_t f = {0};
  f.thread = mu_start(flip, &f);
  int rounds = 20000 / VMS_SCALE_DIVISOR;
  _Atomic int *calls = calloc((size_t)rounds * STORM_REQUESTERS, sizeof(*calls));
  assert_non_null(calls);
  storm_t st[STORM_REQUESTERS];
  vmt_thread_t *req[STORM_REQUESTERS];
  for (int i = 0; i < STORM_REQUESTERS; i++) {
    st[i] = (storm_t){.target = f.thread, .rounds = rounds, .calls = calls, .index = i};
    req[i] = mu_start(request_storm, &st[i]);
  }
  int by_target = 0, by_requester = 0;
  for (int i = 0; i < STORM_REQUESTERS; i++) {
    mu_join(req[i]);
    assert_int_equal(atomic_load(&st[i].failures), 0);
    by_target += atomic_load(&st[i].by_target);
    by_requester += atomic_load(&st[i].by_requester);
  }
  atomic_store(&f.stop, true);
  mu_join(f.thread);
  for (int i = 0; i < rounds * STORM_REQUESTERS; i++)
    if (atomic_load(&calls[i]) != 1) fail_msg("request %d ran %d times", i, atomic_load(&calls[i]));
  free(calls);
  print_message("%d requests: %d run by the target, %d by the requester\n",
                rounds * STORM_REQUESTERS, by_target, by_requester);
}

/* ---- Timeouts and exits ---------------------------------------------------------------- */
static void timeout_takes_the_request_back_and_names_the_straggler(void **state) {
  (void)state;
  mutator_t m;
  mutator_start(&m, false);   /* never polls */
  probe_t p = {0};
  vmt_handshake_result_t res;
  int64_t timeout = 50 * MU_MS;
  assert_int_equal(vmt_handshake_run(m.thread, probe_fn, &p, timeout, &res), -ETIMEDOUT);
  assert_int_equal(res.straggler.thread_id, vmt_thread_id(m.thread));
  assert_int_equal(res.straggler.exec_state, VMT_EXEC_MANAGED);
  assert_true(res.straggler.waited_ns >= timeout);
  assert_true(res.straggler.since_safe_ns == -1 || res.straggler.since_safe_ns >= 0);
  /* Taken back: nothing is pending, and the operation never runs, even once it polls. */
  assert_false(vmt_poll_armed(m.thread));
  atomic_store(&m.poll, true);
  uint64_t it = atomic_load(&m.iterations);
  MU_POLL_UNTIL(atomic_load(&m.iterations) > it + 1000, "the mutator to poll");
  mutator_stop(&m);
  assert_int_equal(atomic_load(&p.calls), 0);
}

typedef struct requester {
  vmt_thread_t *target;
  probe_t *probe;
  _Atomic int rc;
  _Atomic int by_target;
} requester_t;

static void *request(void *arg) {
  requester_t *r = arg;
  vmt_handshake_result_t res = {0};
  int rc = vmt_handshake_run(r->target, probe_fn, r->probe, 0, &res);
  atomic_store(&r->by_target, res.by_target);
  atomic_store(&r->rc, rc);
  return NULL;
}

static void a_target_that_exits_runs_what_is_pending(void **state) {
  (void)state;
  mutator_t m;
  mutator_start(&m, false);
  atomic_store(&m.exit_managed, true);   /* it will return from its body still in MANAGED */
  assert_int_equal(vmt_thread_retain(m.thread), 0);
  probe_t p = {0};
  requester_t r = {.target = m.thread, .probe = &p, .rc = 1};
  vmt_thread_t *rt = mu_start(request, &r);
  MU_POLL_UNTIL(vmt_poll_armed(m.thread), "the request to be queued");
  atomic_store(&m.stop, true);   /* it exits without one more poll */
  mu_join(m.thread);
  mu_join(rt);
  assert_int_equal(atomic_load(&r.rc), 0);
  assert_true(atomic_load(&r.by_target));
  assert_ptr_equal(atomic_load(&p.ran_on), m.thread);
  assert_int_equal(atomic_load(&p.calls), 1);
  /* Exited (we still hold a reference): -ESRCH, nothing runs. */
  assert_int_equal(vmt_exec_state(m.thread), VMT_EXEC_EXITED);
  assert_int_equal(vmt_handshake_run(m.thread, probe_fn, &p, 0, NULL), -ESRCH);
  assert_int_equal(vmt_handshake_post(m.thread, probe_fn, &p), -ESRCH);
  assert_int_equal(atomic_load(&p.calls), 1);
  assert_int_equal(vmt_thread_release(m.thread), 0);
}

/* ---- Asynchronous operations ----------------------------------------------------------- */
static void posted_operations_run_on_the_target(void **state) {
  (void)state;
  mutator_t m;
  mutator_start(&m, true);
  probe_t running = {0};
  assert_int_equal(vmt_handshake_post(m.thread, probe_fn, &running), 0);
  MU_POLL_UNTIL(atomic_load(&running.calls) == 1, "the running target to run it");
  assert_ptr_equal(atomic_load(&running.ran_on), m.thread);
  mutator_stop(&m);

  /* A parked target runs it when it leaves the park, never the requester. */
  parker_t pk;
  parker_start(&pk);
  probe_t parked = {0};
  assert_int_equal(vmt_handshake_post(pk.thread, probe_fn, &parked), 0);
  /* A synchronous request processes the parked thread on its behalf: the posted one stays. */
  probe_t sync = {0};
  assert_int_equal(vmt_handshake_run(pk.thread, probe_fn, &sync, 0, NULL), 0);
  assert_int_equal(atomic_load(&sync.calls), 1);
  assert_int_equal(atomic_load(&parked.calls), 0);
  parker_stop(&pk);
  assert_int_equal(atomic_load(&parked.calls), 1);
  assert_ptr_equal(atomic_load(&parked.ran_on), pk.thread);

  /* A native thread that never enters managed code runs it as it exits. */
  native_reader_t r;
  reader_start(&r);
  probe_t at_exit = {0};
  assert_int_equal(vmt_handshake_post(r.thread, probe_fn, &at_exit), 0);
  assert_int_equal(atomic_load(&at_exit.calls), 0);
  reader_stop(&r);
  assert_int_equal(atomic_load(&at_exit.calls), 1);
  assert_ptr_equal(atomic_load(&at_exit.ran_on), r.thread);

  /* To oneself: in native code it waits; entering managed code is a poll, which runs it. */
  probe_t own = {0};
  vmt_thread_t *self = vmt_thread_current();
  assert_int_equal(vmt_handshake_post(self, probe_fn, &own), 0);
  vmt_poll(self);   /* a poll in a safe state runs nothing */
  assert_int_equal(atomic_load(&own.calls), 0);
  vmt_exec_enter(VMT_EXEC_MANAGED);
  assert_int_equal(atomic_load(&own.calls), 1);
  assert_ptr_equal(atomic_load(&own.ran_on), self);
  vmt_exec_enter(VMT_EXEC_NATIVE);
}

/* ---- All threads ------------------------------------------------------------------------ */
#define MAX_IDS 64
typedef struct per_thread {
  pthread_mutex_t lock;
  int64_t ids[MAX_IDS];
  int calls[MAX_IDS];
  int n;
} per_thread_t;

static void count_per_thread(vmt_thread_t *target, void *arg) {
  per_thread_t *pt = arg;
  pthread_mutex_lock(&pt->lock);
  int i = 0;
  while (i < pt->n && pt->ids[i] != vmt_thread_id(target)) i++;
  if (i == pt->n && pt->n < MAX_IDS) pt->ids[pt->n++] = vmt_thread_id(target);
  if (i < MAX_IDS) pt->calls[i]++;
  pthread_mutex_unlock(&pt->lock);
}

static void run_all_runs_once_on_every_thread(void **state) {
  (void)state;
  mutator_t m[3];
  parker_t pk[2];
  native_reader_t r;
  for (int i = 0; i < 3; i++) mutator_start(&m[i], true);
  for (int i = 0; i < 2; i++) parker_start(&pk[i]);
  reader_start(&r);
  int32_t live = vmt_mx_get_thread_count();   /* these 6 and the main thread */
  per_thread_t pt = {.lock = PTHREAD_MUTEX_INITIALIZER};
  vmt_handshake_result_t res;
  assert_int_equal(vmt_handshake_run_all(count_per_thread, &pt, 10 * VMS_SECOND, &res), 0);
  assert_int_equal(pt.n, live);
  for (int i = 0; i < pt.n; i++) assert_int_equal(pt.calls[i], 1);
  assert_int_equal(res.by_targets + res.by_requester, live);
  assert_true(res.by_targets >= 1);    /* the caller ran its own at once */
  assert_true(res.by_requester >= 3);  /* the parked and the native threads */
  for (int i = 0; i < 3; i++) mutator_stop(&m[i]);
  for (int i = 0; i < 2; i++) parker_stop(&pk[i]);
  reader_stop(&r);
}

static void run_all_times_out_on_a_straggler(void **state) {
  (void)state;
  mutator_t good, bad;
  mutator_start(&good, true);
  mutator_start(&bad, false);
  per_thread_t pt = {.lock = PTHREAD_MUTEX_INITIALIZER};
  vmt_handshake_result_t res;
  assert_int_equal(vmt_handshake_run_all(count_per_thread, &pt, 50 * MU_MS, &res), -ETIMEDOUT);
  assert_int_equal(res.straggler.thread_id, vmt_thread_id(bad.thread));
  for (int i = 0; i < pt.n; i++) {
    assert_int_equal(pt.calls[i], 1);
    assert_true(pt.ids[i] != vmt_thread_id(bad.thread));
  }
  mutator_stop(&bad);
  mutator_stop(&good);
  for (int i = 0; i < pt.n; i++) assert_true(pt.ids[i] != vmt_thread_id(bad.thread));
}

/* ---- Requesters that are themselves targets -------------------------------------------- */
typedef struct pair {
  vmt_thread_t *other;
  _Atomic(vmt_thread_t *) *me_slot;
  _Atomic int *go;
  probe_t probe;
  _Atomic int rc;
} pair_t;

static void *handshake_the_other(void *arg) {
  pair_t *p = arg;
  vmt_thread_t *self = vmt_thread_current();
  vmt_exec_enter(VMT_EXEC_MANAGED);
  atomic_fetch_add(p->go, 1);
  while (atomic_load(p->go) < 3) vmt_poll(self);   /* both here and both slots filled */
  atomic_store(&p->rc, vmt_handshake_run(atomic_load(p->me_slot), probe_fn, &p->probe,
                                         10 * VMS_SECOND, NULL));
  /* Stay until the other one is done with us too (an exited thread answers -ESRCH). */
  atomic_fetch_add(p->go, 1);
  while (atomic_load(p->go) < 5) vmt_poll(self);
  vmt_exec_enter(VMT_EXEC_NATIVE);
  return NULL;
}

static void two_threads_handshake_each_other(void **state) {
  (void)state;
  for (int round = 0; round < 50; round++) {
    _Atomic int go = 0;
    _Atomic(vmt_thread_t *) slot_a = NULL, slot_b = NULL;
    pair_t a = {.me_slot = &slot_b, .go = &go}, b = {.me_slot = &slot_a, .go = &go};
    vmt_thread_t *ta = mu_start(handshake_the_other, &a);
    atomic_store(&slot_a, ta);
    vmt_thread_t *tb = mu_start(handshake_the_other, &b);
    atomic_store(&slot_b, tb);
    atomic_fetch_add(&go, 1);
    mu_join(ta);
    mu_join(tb);
    assert_int_equal(atomic_load(&a.rc), 0);
    assert_int_equal(atomic_load(&b.rc), 0);
    assert_int_equal(atomic_load(&a.probe.calls), 1);
    assert_int_equal(atomic_load(&b.probe.calls), 1);
  }
}

static void *foreign_request(void *arg) {
  requester_t *r = arg;
  vmt_handshake_result_t res = {0};
  atomic_store(&r->rc, vmt_handshake_run(r->target, probe_fn, r->probe, 10 * VMS_SECOND, &res));
  atomic_store(&r->by_target, res.by_target);
  return NULL;
}

static void a_foreign_thread_may_ask(void **state) {
  (void)state;
  mutator_t m;
  mutator_start(&m, true);
  parker_t pk;
  parker_start(&pk);
  probe_t p1 = {0}, p2 = {0};
  requester_t r1 = {.target = m.thread, .probe = &p1, .rc = 1};
  requester_t r2 = {.target = pk.thread, .probe = &p2, .rc = 1};
  pthread_t f1, f2;
  assert_int_equal(pthread_create(&f1, NULL, foreign_request, &r1), 0);
  assert_int_equal(pthread_create(&f2, NULL, foreign_request, &r2), 0);
  pthread_join(f1, NULL);
  pthread_join(f2, NULL);
  assert_int_equal(atomic_load(&r1.rc), 0);
  assert_true(atomic_load(&r1.by_target));
  assert_int_equal(atomic_load(&r2.rc), 0);
  assert_false(atomic_load(&r2.by_target));
  assert_null(atomic_load(&p2.ran_on));   /* run by the foreign thread: no runtime thread */
  mutator_stop(&m);
  parker_stop(&pk);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(runs_on_a_running_target_by_the_target),
      cmocka_unit_test(runs_on_a_parked_target_by_the_requester),
      cmocka_unit_test(runs_on_a_native_target_by_the_requester),
      cmocka_unit_test(runs_at_once_on_the_caller),
      cmocka_unit_test(refuses_bad_input),
      cmocka_unit_test(exactly_once_under_a_storm),
      cmocka_unit_test(timeout_takes_the_request_back_and_names_the_straggler),
      cmocka_unit_test(a_target_that_exits_runs_what_is_pending),
      cmocka_unit_test(posted_operations_run_on_the_target),
      cmocka_unit_test(run_all_runs_once_on_every_thread),
      cmocka_unit_test(run_all_times_out_on_a_straggler),
      cmocka_unit_test(two_threads_handshake_each_other),
      cmocka_unit_test(a_foreign_thread_may_ask),
  };
  return cmocka_run_group_tests(tests, mu_attach_main, mu_detach_main);
}
