/*
 * test/vms_safepoint_test.c: global safepoints through the public API. The oracle: threads
 * that enter and leave managed code in a loop flag every stretch of managed work; during each
 * safepoint no flag is ever up and no managed work advances, while native work may. Also: a
 * thread woken in a safe region stays there until the end; the statistics (who had to stop,
 * the last to arrive); a thread that never polls times the begin out, is named, and is left
 * running; nesting and a foreign coordinator; handshakes during a safepoint.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "test/thread_util.h"
#include "test/vms_util.h"

#define ORACLE_THREADS 4

typedef struct commuter {
  _Atomic bool stop;
  _Atomic bool busy;              /* inside managed work, between polls */
  _Atomic uint64_t managed_work;
  _Atomic uint64_t native_work;
  vmt_thread_t *thread;
} commuter_t;

/* In and out of managed code: a stretch of work with polls in it, then a stretch of native
 * code (a system call, or none at all, so the transitions come back to back). */
static void *commute(void *arg) {
  commuter_t *c = arg;
  vmt_thread_t *self = vmt_thread_current();
  for (unsigned i = 0; !atomic_load_explicit(&c->stop, memory_order_relaxed); i++) {
    vmt_exec_enter(VMT_EXEC_MANAGED);
    for (int j = 0; j < 32; j++) {
      atomic_store_explicit(&c->busy, true, memory_order_relaxed);
      atomic_fetch_add_explicit(&c->managed_work, 1, memory_order_relaxed);
      atomic_store_explicit(&c->busy, false, memory_order_release);
      vmt_poll(self);
    }
    vmt_exec_enter(VMT_EXEC_NATIVE);
    atomic_fetch_add_explicit(&c->native_work, 1, memory_order_relaxed);
    if (i % 8 == 0) sched_yield();
  }
  return NULL;
}

static void nobody_runs_managed_code_during_a_safepoint(void **state) {
  (void)state;
  commuter_t c[ORACLE_THREADS];
  memset(c, 0, sizeof(c));
  for (int i = 0; i < ORACLE_THREADS; i++) c[i].thread = mu_start(commute, &c[i]);
  int rounds = 400 / VMS_SCALE_DIVISOR + 20;
  uint64_t native_during = 0;
  uint64_t after[ORACLE_THREADS] = {0};
  for (int r = 0; r < rounds; r++) {
    /* Every thread has done managed work since the last safepoint: they really interleave. */
    for (int i = 0; i < ORACLE_THREADS; i++)
      MU_POLL_UNTIL(atomic_load(&c[i].managed_work) > after[i], "managed work between safepoints");
    vmt_safepoint_stats_t st;
    assert_int_equal(vmt_safepoint_begin(10 * VMS_SECOND, &st), 0);
    assert_true(vmt_safepoint_in_progress());
    uint64_t managed[ORACLE_THREADS], native[ORACLE_THREADS];
    for (int i = 0; i < ORACLE_THREADS; i++) {
      managed[i] = atomic_load(&c[i].managed_work);
      native[i] = atomic_load(&c[i].native_work);
    }
    /* Hold it a while (about 100 us of checks) and look all the time. */
    for (int k = 0; k < 2000; k++)
      for (int i = 0; i < ORACLE_THREADS; i++)
        if (atomic_load_explicit(&c[i].busy, memory_order_acquire))
          fail_msg("round %d: thread %d runs managed code at a safepoint", r, i);
    for (int i = 0; i < ORACLE_THREADS; i++) {
      if (atomic_load(&c[i].managed_work) != managed[i])
        fail_msg("round %d: thread %d did managed work at a safepoint", r, i);
      native_during += atomic_load(&c[i].native_work) - native[i];
    }
    assert_int_equal(vmt_safepoint_end(&st), 0);
    assert_true(st.time_at_safepoint_ns >= 0);
    for (int i = 0; i < ORACLE_THREADS; i++) after[i] = managed[i];
  }
  for (int i = 0; i < ORACLE_THREADS; i++) {
    atomic_store(&c[i].stop, true);
    mu_join(c[i].thread);
    assert_true(atomic_load(&c[i].managed_work) > 0);
  }
  print_message("%d safepoints; native work done during them: %llu\n", rounds,
                (unsigned long long)native_during);
}

static void a_woken_thread_stays_in_its_safe_region(void **state) {
  (void)state;
  parker_t pk;
  parker_start(&pk);
  assert_int_equal(vmt_safepoint_begin(0, NULL), 0);
  atomic_store(&pk.stop, true);
  vmt_unpark(pk.thread);
  /* It has its permit but cannot leave the park while the safepoint holds. */
  for (int i = 0; i < 20; i++) {
    mu_pause_1ms();
    assert_int_equal(atomic_load(&pk.phase), 1);
    assert_int_equal(vmt_exec_state(pk.thread), VMT_EXEC_BLOCKED);
  }
  assert_int_equal(vmt_safepoint_end(NULL), 0);
  MU_POLL_UNTIL(atomic_load(&pk.phase) == 2, "the parker to leave after the end");
  mu_join(pk.thread);
}

/* Native code runs on during a safepoint; the exit, VM code, waits for the end. */
static void native_threads_run_on_but_do_not_exit(void **state) {
  (void)state;
  native_reader_t r;
  reader_start(&r);
  assert_int_equal(vmt_safepoint_begin(0, NULL), 0);
  reader_feed(&r);
  /* The reader returns from read(2) and its body, then waits at its exit (VM code). */
  MU_POLL_UNTIL(atomic_load(&r.phase) == 2, "the reader to read");
  for (int i = 0; i < 20; i++) {
    mu_pause_1ms();
    assert_int_not_equal(vmt_exec_state(r.thread), VMT_EXEC_EXITED);
  }
  assert_int_equal(vmt_safepoint_end(NULL), 0);
  reader_stop(&r);
}

static void statistics_name_who_had_to_stop(void **state) {
  (void)state;
  mutator_t m[2];
  parker_t pk[3];
  for (int i = 0; i < 2; i++) mutator_start(&m[i], true);
  for (int i = 0; i < 3; i++) parker_start(&pk[i]);
  vmt_safepoint_stats_t st;
  assert_int_equal(vmt_safepoint_begin(10 * VMS_SECOND, &st), 0);
  assert_true(st.id >= 1);
  assert_true(st.threads >= 5);
  assert_int_equal(st.running, 2);
  assert_true(st.last_thread_id == vmt_thread_id(m[0].thread) ||
              st.last_thread_id == vmt_thread_id(m[1].thread));
  assert_true(st.time_to_safepoint_ns > 0);
  assert_int_equal(st.straggler.thread_id, 0);
  for (int i = 0; i < 2; i++) {
    assert_true(mutator_stalled(&m[i]));
    assert_int_equal(vmt_exec_state(m[i].thread), VMT_EXEC_BLOCKED);
  }
  /* Nesting is refused; so is an end by someone else. */
  assert_int_equal(vmt_safepoint_begin(0, NULL), -EDEADLK);
  uint64_t id = st.id;
  assert_int_equal(vmt_safepoint_end(&st), 0);
  assert_int_equal(st.id, id);
  assert_false(vmt_safepoint_in_progress());
  assert_int_equal(vmt_safepoint_end(NULL), -EPERM);
  /* Idle threads are never counted as running. */
  for (int i = 0; i < 2; i++) mutator_stop(&m[i]);
  assert_int_equal(vmt_safepoint_begin(0, &st), 0);
  assert_int_equal(st.running, 0);
  assert_int_equal(st.last_thread_id, 0);
  assert_int_equal(vmt_safepoint_end(NULL), 0);
  for (int i = 0; i < 3; i++) parker_stop(&pk[i]);
  assert_int_equal(vmt_safepoint_begin(-1, NULL), -EINVAL);
}

static void a_thread_that_never_polls_times_out_and_is_named(void **state) {
  (void)state;
  mutator_t good, bad;
  mutator_start(&good, true);
  mutator_start(&bad, false);
  vmt_safepoint_stats_t st;
  int64_t timeout = 50 * MU_MS;
  assert_int_equal(vmt_safepoint_begin(timeout, &st), -ETIMEDOUT);
  assert_int_equal(st.straggler.thread_id, vmt_thread_id(bad.thread));
  assert_int_equal(st.straggler.exec_state, VMT_EXEC_MANAGED);
  assert_true(st.straggler.waited_ns >= timeout);
  /* Nothing stays stopped: no safepoint, no flag left, the good one runs again. */
  assert_false(vmt_safepoint_in_progress());
  assert_false(vmt_poll_armed(bad.thread));
  uint64_t it = atomic_load(&good.iterations);
  MU_POLL_UNTIL(atomic_load(&good.iterations) > it + 1000, "the good mutator to run again");
  mutator_stop(&bad);
  mutator_stop(&good);
}

typedef struct coordinator {
  mutator_t *m;
  _Atomic int rc_begin, rc_end;
  _Atomic bool stalled;
} coordinator_t;

static void *coordinate(void *arg) {
  coordinator_t *c = arg;
  atomic_store(&c->rc_begin, vmt_safepoint_begin(10 * VMS_SECOND, NULL));
  atomic_store(&c->stalled, mutator_stalled(c->m));
  atomic_store(&c->rc_end, vmt_safepoint_end(NULL));
  return NULL;
}

static void a_foreign_thread_may_coordinate(void **state) {
  (void)state;
  mutator_t m;
  mutator_start(&m, true);
  coordinator_t c = {.m = &m, .rc_begin = 1, .rc_end = 1};
  pthread_t p;
  assert_int_equal(pthread_create(&p, NULL, coordinate, &c), 0);
  pthread_join(p, NULL);
  assert_int_equal(atomic_load(&c.rc_begin), 0);
  assert_true(atomic_load(&c.stalled));
  assert_int_equal(atomic_load(&c.rc_end), 0);
  mutator_stop(&m);
}

/* Two coordinators: the second waits, safe, for the first to end. */
static void *coordinate_from_managed(void *arg) {
  coordinator_t *c = arg;
  vmt_exec_enter(VMT_EXEC_MANAGED);
  atomic_store(&c->rc_begin, vmt_safepoint_begin(10 * VMS_SECOND, NULL));
  atomic_store(&c->rc_end, vmt_safepoint_end(NULL));
  vmt_exec_enter(VMT_EXEC_NATIVE);
  return NULL;
}

static void safepoints_take_turns(void **state) {
  (void)state;
  mutator_t m;
  mutator_start(&m, true);
  coordinator_t c[4];
  vmt_thread_t *t[4];
  for (int round = 0; round < 20; round++) {
    for (int i = 0; i < 4; i++) {
      c[i] = (coordinator_t){.m = &m, .rc_begin = 1, .rc_end = 1};
      t[i] = mu_start(coordinate_from_managed, &c[i]);
    }
    for (int i = 0; i < 4; i++) {
      mu_join(t[i]);
      assert_int_equal(atomic_load(&c[i].rc_begin), 0);
      assert_int_equal(atomic_load(&c[i].rc_end), 0);
    }
  }
  mutator_stop(&m);
}

/* A handshake asked during a safepoint: the coordinator's own runs on behalf of stopped
 * threads at once; another thread's waits for the end. */
typedef struct late_request {
  vmt_thread_t *target;
  probe_t probe;
  _Atomic int rc;
} late_request_t;

static void *late_request(void *arg) {
  late_request_t *r = arg;
  atomic_store(&r->rc, vmt_handshake_run(r->target, probe_fn, &r->probe, 10 * VMS_SECOND, NULL));
  return NULL;
}

static void handshakes_during_a_safepoint(void **state) {
  (void)state;
  mutator_t m;
  mutator_start(&m, true);
  parker_t pk;
  parker_start(&pk);
  assert_int_equal(vmt_safepoint_begin(0, NULL), 0);
  probe_t mine = {0};
  vmt_handshake_result_t res;
  assert_int_equal(vmt_handshake_run(m.thread, probe_fn, &mine, 0, &res), 0);
  assert_false(res.by_target);   /* it is stopped: the coordinator ran it */
  late_request_t late = {.target = pk.thread, .rc = 1};
  vmt_thread_t *lt = mu_start(late_request, &late);
  for (int i = 0; i < 20; i++) {
    mu_pause_1ms();
    assert_int_equal(atomic_load(&late.probe.calls), 0);
  }
  assert_int_equal(vmt_safepoint_end(NULL), 0);
  mu_join(lt);
  assert_int_equal(atomic_load(&late.rc), 0);
  assert_int_equal(atomic_load(&late.probe.calls), 1);
  mutator_stop(&m);
  parker_stop(&pk);
}

/* A coordinator that exits with its safepoint held: the exit ends it, the next one begins. */
static void *begin_and_exit(void *arg) {
  *(int *)arg = vmt_safepoint_begin(10 * VMS_SECOND, NULL);
  return NULL;
}

static void a_coordinator_that_exits_ends_its_safepoint(void **state) {
  (void)state;
  mutator_t m;
  mutator_start(&m, true);
  int rc = 1;
  mu_join(mu_start(begin_and_exit, &rc));
  assert_int_equal(rc, 0);
  assert_false(vmt_safepoint_in_progress());
  uint64_t it = atomic_load(&m.iterations);
  MU_POLL_UNTIL(atomic_load(&m.iterations) > it + 1000, "the mutator to run again");
  assert_int_equal(vmt_safepoint_begin(10 * VMS_SECOND, NULL), 0);
  assert_int_equal(vmt_safepoint_end(NULL), 0);
  mutator_stop(&m);
}

/* The same for a safepoint begun in the thread's own exit hook (JVMTI ThreadEnd is VM code):
 * the exit had looked for a held safepoint before the hooks ran, and nothing ended this one, so
 * it held for good after the thread was gone (every later begin waited its whole timeout). */
static vmt_thread_t *_Atomic exit_hook_coordinator;
static _Atomic int exit_hook_rc = 1;
static void begin_in_exit_hook(vmt_thread_t *t, void *ctx) {
  (void)ctx;
  if (t == atomic_load(&exit_hook_coordinator))
    atomic_store(&exit_hook_rc, vmt_safepoint_begin(10 * VMS_SECOND, NULL));
}

static void *wait_then_return(void *arg) {
  latch_wait(arg);
  return NULL;
}

static void a_safepoint_begun_in_an_exit_hook_ends_with_the_thread(void **state) {
  (void)state;
  mutator_t m;
  mutator_start(&m, true);
  latch_t go;
  latch_init(&go);
  assert_int_equal(vmt_thread_hooks_add(NULL, begin_in_exit_hook, NULL), 0);
  vmt_thread_t *t = mu_start(wait_then_return, &go);
  atomic_store(&exit_hook_coordinator, t);
  latch_open(&go);
  mu_join(t);
  atomic_store(&exit_hook_coordinator, NULL);
  assert_int_equal(vmt_thread_hooks_remove(NULL, begin_in_exit_hook, NULL), 0);
  assert_int_equal(atomic_load(&exit_hook_rc), 0);
  assert_false(vmt_safepoint_in_progress());
  uint64_t it = atomic_load(&m.iterations);
  MU_POLL_UNTIL(atomic_load(&m.iterations) > it + 1000, "the mutator to run again");
  assert_int_equal(vmt_safepoint_begin(10 * VMS_SECOND, NULL), 0);
  assert_int_equal(vmt_safepoint_end(NULL), 0);
  mutator_stop(&m);
  latch_destroy(&go);
}

/* Threads that appear while a safepoint holds: one the coordinator starts, one that attaches
 * (a foreign thread). Each begins in NATIVE, runs up to its first entry into managed code and
 * must stay there until the end, however long the safepoint lasts. */
typedef struct newcomer {
  _Atomic bool ready;     /* about to enter managed code */
  _Atomic bool entered;   /* in managed code */
} newcomer_t;

static void newcomer_enter(newcomer_t *n) {
  assert_int_equal(vmt_exec_state(vmt_thread_current()), VMT_EXEC_NATIVE);
  atomic_store(&n->ready, true);
  vmt_exec_enter(VMT_EXEC_MANAGED);
  atomic_store(&n->entered, true);
  vmt_exec_enter(VMT_EXEC_NATIVE);
}

static void *newcomer_started(void *arg) {
  newcomer_enter(arg);
  return NULL;
}

static void *newcomer_attached(void *arg) {
  vmt_thread_t *t = NULL;
  if (vmt_thread_attach(NULL, &t) != 0) return (void *)1;
  newcomer_enter(arg);
  return (void *)(intptr_t)vmt_thread_detach();
}

static void threads_that_appear_at_a_safepoint_stay_safe(void **state) {
  (void)state;
  for (int round = 0; round < 20; round++) {
    newcomer_t started = {0}, attached = {0};
    assert_int_equal(vmt_safepoint_begin(10 * VMS_SECOND, NULL), 0);
    vmt_thread_t *t = mu_start(newcomer_started, &started);
    pthread_t foreign;
    assert_int_equal(pthread_create(&foreign, NULL, newcomer_attached, &attached), 0);
    MU_POLL_UNTIL(atomic_load(&started.ready) && atomic_load(&attached.ready),
                  "both newcomers at their entry into managed code");
    /* Both are a few instructions from the entry; give them every chance to get past it. */
    for (int k = 0; k < 200; k++) {
      sched_yield();
      if (atomic_load(&started.entered) || atomic_load(&attached.entered))
        fail_msg("round %d: a thread that appeared at a safepoint ran managed code (%s)", round,
                 atomic_load(&started.entered) ? "started" : "attached");
    }
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
    assert_false(atomic_load(&started.entered));
    assert_false(atomic_load(&attached.entered));
    assert_int_equal(vmt_safepoint_end(NULL), 0);
    mu_join(t);
    void *rc = (void *)1;
    assert_int_equal(pthread_join(foreign, &rc), 0);
    assert_null(rc);
    assert_true(atomic_load(&started.entered));
    assert_true(atomic_load(&attached.entered));
  }
}

/* A begin that times out waiting for a processor still inside an operation it runs on behalf
 * of a safe thread (an operation that blocks until released: against fn's contract, which is
 * exactly the case a timeout is for) names that target, as any straggler is named: its id,
 * its state, how long since its last slow-path safe point. Before the fix the straggler was id
 * 0 (the begin never reached its walk, and nothing else was named). */
typedef struct blocking_op {
  _Atomic bool entered;
  _Atomic bool release;
} blocking_op_t;

static void block_until_released(vmt_thread_t *target, void *arg) {
  (void)target;
  blocking_op_t *b = arg;
  atomic_store(&b->entered, true);
  WAIT_UNTIL(atomic_load(&b->release));
}

typedef struct blocking_requester {
  vmt_thread_t *target;
  blocking_op_t op;
  _Atomic int rc;
  _Atomic bool by_target;
} blocking_requester_t;

static void *run_blocking_op(void *arg) {
  blocking_requester_t *r = arg;
  vmt_handshake_result_t res = {0};
  atomic_store(&r->rc, vmt_handshake_run(r->target, block_until_released, &r->op, 0, &res));
  atomic_store(&r->by_target, res.by_target);
  return NULL;
}

static void a_begin_held_up_by_an_operation_in_flight_names_its_target(void **state) {
  (void)state;
  parker_t p;
  parker_start(&p);
  blocking_requester_t r = {.target = p.thread, .rc = 1};
  vmt_thread_t *rt = mu_start(run_blocking_op, &r);
  MU_POLL_UNTIL(atomic_load(&r.op.entered), "the operation to run on the parker's behalf");
  vmt_safepoint_stats_t st;
  int64_t timeout = 20 * MU_MS;
  assert_int_equal(vmt_safepoint_begin(timeout, &st), -ETIMEDOUT);
  assert_int_equal(st.straggler.thread_id, vmt_thread_id(p.thread));
  assert_int_equal(st.straggler.exec_state, VMT_EXEC_BLOCKED);
  assert_true(st.straggler.waited_ns >= timeout);
  assert_false(vmt_safepoint_in_progress());
  atomic_store(&r.op.release, true);
  mu_join(rt);
  assert_int_equal(atomic_load(&r.rc), 0);
  assert_false(atomic_load(&r.by_target));
  /* Nothing held: the next safepoint is reached. */
  assert_int_equal(vmt_safepoint_begin(10 * VMS_SECOND, NULL), 0);
  assert_int_equal(vmt_safepoint_end(NULL), 0);
  parker_stop(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(nobody_runs_managed_code_during_a_safepoint),
      cmocka_unit_test(a_woken_thread_stays_in_its_safe_region),
      cmocka_unit_test(native_threads_run_on_but_do_not_exit),
      cmocka_unit_test(statistics_name_who_had_to_stop),
      cmocka_unit_test(a_thread_that_never_polls_times_out_and_is_named),
      cmocka_unit_test(a_begin_held_up_by_an_operation_in_flight_names_its_target),
      cmocka_unit_test(a_foreign_thread_may_coordinate),
      cmocka_unit_test(safepoints_take_turns),
      cmocka_unit_test(handshakes_during_a_safepoint),
      cmocka_unit_test(a_coordinator_that_exits_ends_its_safepoint),
      cmocka_unit_test(a_safepoint_begun_in_an_exit_hook_ends_with_the_thread),
      cmocka_unit_test(threads_that_appear_at_a_safepoint_stay_safe),
  };
  return cmocka_run_group_tests(tests, mu_attach_main, mu_detach_main);
}
