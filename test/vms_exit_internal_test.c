/*
 * test/vms_exit_internal_test.c: a thread half-way out (between the VM services' two exit
 * steps, runtime/thread/exit.c), where only a fault-seam hook can hold it: a handshake queued
 * there is run by the thread itself before it becomes EXITED (exactly once, never dropped,
 * no use after free: its requester's node lives on the requester's stack), one asked after
 * answers -ESRCH; a safepoint begun there counts the exiting thread and returns once it has
 * left. A thread past its exit hooks and TLS destructors is no longer alive for suspension
 * (JVMTI's THREAD_NOT_ALIVE; HotSpot's suspend handshake skips an exiting thread): a suspend
 * that lands there answers -ESRCH and leaves no count on the ended thread, and a resume after
 * answers -ESRCH too. Internal: it needs the VMT__FAULT_THREAD_EXITING and
 * VMT__FAULT_THREAD_TERMINATED hooks.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/fault.h"
#include "runtime/vmservices/vmservices.h"
#include "test/thread_util.h"
#include "test/vms_util.h"

typedef struct half_way {
  vmt_thread_t *target;
  _Atomic int phase;          /* 1 the target is in the hook, 2 it may go on */
  _Atomic bool until_queued;  /* the hook waits for a queued operation (else for phase 2) */
} half_way_t;

static half_way_t hw;

/* Runs under the seams' lock: no other thread may pass a seam meanwhile (thread starts do),
 * so every thread of the test is running before the hook is set. */
static void hold_in_exit(void *arg) {
  (void)arg;
  if (vmt_thread_current() != hw.target || hw.target == NULL) return;
  atomic_store(&hw.phase, 1);
  int64_t deadline = test_clock_ns(CLOCK_MONOTONIC) + 10 * VMS_SECOND;
  while (test_clock_ns(CLOCK_MONOTONIC) < deadline) {
    if (atomic_load(&hw.until_queued) ? vmt_poll_armed(hw.target)
                                      : atomic_load(&hw.phase) == 2)
      break;
    sched_yield();
  }
}

static void *return_at_once(void *arg) {
  latch_wait(arg);
  return NULL;
}

typedef struct asker {
  vmt_thread_t *target;
  probe_t probe;
  _Atomic int rc;
  _Atomic bool by_target;
  _Atomic bool started;
} asker_t;

static void *ask(void *arg) {
  asker_t *a = arg;
  atomic_store(&a->started, true);
  if (!WAIT_UNTIL(atomic_load(&hw.phase) == 1)) return NULL;
  vmt_handshake_result_t res = {0};
  atomic_store(&a->rc, vmt_handshake_run(a->target, probe_fn, &a->probe, 0, &res));
  atomic_store(&a->by_target, res.by_target);
  return NULL;
}

static void a_handshake_queued_half_way_out_runs_once(void **state) {
  (void)state;
  latch_t go;
  latch_init(&go);
  memset(&hw, 0, sizeof(hw));
  atomic_store(&hw.until_queued, true);
  hw.target = mu_start(return_at_once, &go);
  assert_int_equal(vmt_thread_retain(hw.target), 0);
  asker_t a = {.target = hw.target, .rc = 1};
  vmt_thread_t *at = mu_start(ask, &a);
  /* Past its start (which passes a seam the hook's lock would hold up). */
  MU_POLL_UNTIL(atomic_load(&a.started), "the asker to start");
  vmt__fault_set_hook(VMT__FAULT_THREAD_EXITING, hold_in_exit, NULL);
  latch_open(&go);
  mu_join(at);
  mu_join(hw.target);
  vmt__fault_disarm_all();
  assert_int_equal(atomic_load(&a.rc), 0);
  assert_true(atomic_load(&a.by_target));
  assert_ptr_equal(atomic_load(&a.probe.ran_on), hw.target);
  assert_int_equal(atomic_load(&a.probe.calls), 1);
  /* Gone now: refused, nothing runs. */
  assert_int_equal(vmt_handshake_run(hw.target, probe_fn, &a.probe, 0, NULL), -ESRCH);
  assert_int_equal(atomic_load(&a.probe.calls), 1);
  assert_int_equal(vmt_thread_release(hw.target), 0);
  latch_destroy(&go);
}

static void *release_once_armed(void *arg) {
  (void)arg;
  /* The coordinator has armed the exiting thread: let it go on out. */
  WAIT_UNTIL(vmt_safepoint_in_progress() && vmt_poll_armed(hw.target));
  atomic_store(&hw.phase, 2);
  return NULL;
}

static void a_safepoint_begun_half_way_out_counts_the_thread(void **state) {
  (void)state;
  latch_t go;
  latch_init(&go);
  memset(&hw, 0, sizeof(hw));
  hw.target = mu_start(return_at_once, &go);
  assert_int_equal(vmt_thread_retain(hw.target), 0);
  vmt__fault_set_hook(VMT__FAULT_THREAD_EXITING, hold_in_exit, NULL);
  latch_open(&go);
  MU_POLL_UNTIL(atomic_load(&hw.phase) == 1, "the target to be half-way out");
  assert_int_equal(vmt_exec_state(hw.target), VMT_EXEC_VM);
  pthread_t releaser;
  assert_int_equal(pthread_create(&releaser, NULL, release_once_armed, NULL), 0);
  vmt_safepoint_stats_t st;
  assert_int_equal(vmt_safepoint_begin(10 * VMS_SECOND, &st), 0);
  assert_int_equal(st.running, 1);
  assert_int_equal(st.last_thread_id, vmt_thread_id(hw.target));
  assert_int_equal(vmt_exec_state(hw.target), VMT_EXEC_EXITED);
  assert_int_equal(vmt_safepoint_end(NULL), 0);
  pthread_join(releaser, NULL);
  mu_join(hw.target);
  vmt__fault_disarm_all();
  assert_int_equal(vmt_thread_release(hw.target), 0);
  latch_destroy(&go);
}

/* ---- Suspension of a thread on its way out ---------------------------------------------- */
typedef struct suspender {
  vmt_thread_t *target;
  bool all;                   /* vmt_thread_suspend_all instead of vmt_thread_suspend */
  _Atomic int rc;
  _Atomic bool done;
} suspender_t;

static suspender_t sus;

/* On the target, where the hook or seam is: until the suspension has queued its operation (the
 * target is in VM code, so a requester must wait for it to poll) or has answered. It returns
 * without polling, as an exit hook that just returns does. */
static void wait_for_suspender(void) {
  atomic_store(&hw.phase, 1);
  WAIT_UNTIL(vmt_poll_armed(hw.target) || atomic_load(&sus.done));
}

static void exit_hook(vmt_thread_t *t, void *ctx) {
  (void)ctx;
  if (t == hw.target && hw.target != NULL) wait_for_suspender();
}

static void at_terminated(void *arg) {
  (void)arg;
  if (vmt_thread_current() == hw.target && hw.target != NULL) wait_for_suspender();
}

static void *suspend_target(void *arg) {
  (void)arg;
  atomic_store(&hw.until_queued, true);   /* "started" */
  if (!WAIT_UNTIL(atomic_load(&hw.phase) == 1)) return NULL;
  int rc = sus.all ? vmt_thread_suspend_all(VMT_SUSPEND_DEBUGGER, 0, NULL)
                   : vmt_thread_suspend(sus.target, VMT_SUSPEND_DEBUGGER, 0, NULL);
  atomic_store(&sus.rc, rc);
  atomic_store(&sus.done, true);
  return NULL;
}

/* The ended thread: no count left, not reported suspended, a resume refused without touching
 * any count. */
static void assert_ended_unsuspended(vmt_thread_t *t) {
  assert_int_equal(vmt_exec_state(t), VMT_EXEC_EXITED);
  assert_int_equal(vmt_thread_suspend_count(t), 0);
  assert_int_equal(vmt_thread_resume(t, VMT_SUSPEND_DEBUGGER), -ESRCH);
  assert_int_equal(vmt_thread_suspend(t, VMT_SUSPEND_DEBUGGER, 0, NULL), -ESRCH);
  assert_int_equal(vmt_thread_suspend_count(t), 0);
}

static void start_suspension_case(latch_t *go, bool all) {
  latch_init(go);
  memset(&hw, 0, sizeof(hw));
  memset(&sus, 0, sizeof(sus));
  atomic_store(&sus.rc, 1);
  sus.all = all;
  hw.target = mu_start(return_at_once, go);
  sus.target = hw.target;
  assert_int_equal(vmt_thread_retain(hw.target), 0);
}

/* After its exit hooks, where the thread only does the runtime's bookkeeping (here: once it is
 * TERMINATED) it can no longer stop: the suspend is refused. Before the fix it answered 0 (the
 * no-op operation ran in the exit's last step) and the thread ended EXITED with count 1. */
static void a_suspend_after_the_exit_hooks_answers_esrch(void **state) {
  (void)state;
  latch_t go;
  start_suspension_case(&go, false);
  vmt_thread_t *st = mu_start(suspend_target, NULL);
  MU_POLL_UNTIL(atomic_load(&hw.until_queued), "the suspender to start");
  vmt__fault_set_hook(VMT__FAULT_THREAD_TERMINATED, at_terminated, NULL);
  latch_open(&go);
  mu_join(st);
  mu_join(hw.target);
  vmt__fault_disarm_all();
  assert_int_equal(atomic_load(&sus.rc), -ESRCH);
  assert_ended_unsuspended(hw.target);
  assert_int_equal(vmt_thread_release(hw.target), 0);
  latch_destroy(&go);
}

/* Asked while the thread is inside its exit hook (in VM code), and the hook returns without
 * polling: the thread's next safe point is in the exit's last step, after which it cannot
 * stop, so the request answers -ESRCH (HotSpot: the handshake finds the thread exiting). */
static void a_suspend_from_an_exit_hook_that_never_polls_answers_esrch(void **state) {
  (void)state;
  latch_t go;
  start_suspension_case(&go, false);
  vmt_thread_t *st = mu_start(suspend_target, NULL);
  MU_POLL_UNTIL(atomic_load(&hw.until_queued), "the suspender to start");
  assert_int_equal(vmt_thread_hooks_add(NULL, exit_hook, NULL), 0);
  latch_open(&go);
  mu_join(st);
  mu_join(hw.target);
  assert_int_equal(vmt_thread_hooks_remove(NULL, exit_hook, NULL), 0);
  assert_int_equal(atomic_load(&sus.rc), -ESRCH);
  assert_ended_unsuspended(hw.target);
  assert_int_equal(vmt_thread_release(hw.target), 0);
  latch_destroy(&go);
}

/* suspend_all from the main thread while the target is in its exit hook: the exiting thread
 * is skipped, the call succeeds, and nothing is left for resume_all to release. */
static void suspend_all_skips_a_thread_that_is_exiting(void **state) {
  (void)state;
  latch_t go;
  start_suspension_case(&go, true);
  assert_int_equal(vmt_thread_hooks_add(NULL, exit_hook, NULL), 0);
  atomic_store(&hw.until_queued, true);
  latch_open(&go);
  MU_POLL_UNTIL(atomic_load(&hw.phase) == 1, "the target to be in its exit hook");
  assert_int_equal(vmt_thread_suspend_all(VMT_SUSPEND_DEBUGGER, 0, NULL), 0);
  atomic_store(&sus.done, true);
  mu_join(hw.target);
  assert_int_equal(vmt_thread_hooks_remove(NULL, exit_hook, NULL), 0);
  assert_ended_unsuspended(hw.target);
  assert_int_equal(vmt_thread_resume_all(VMT_SUSPEND_DEBUGGER), 0);
  assert_int_equal(vmt_thread_release(hw.target), 0);
  latch_destroy(&go);
}

/* A thread suspended while an exit hook had it in native code is still alive there: it stops
 * before the rest of its exit (its way back into VM code) until resumed, then ends with no
 * count. */
static void native_exit_hook(vmt_thread_t *t, void *ctx) {
  (void)ctx;
  if (t != hw.target || hw.target == NULL) return;
  vmt_exec_enter(VMT_EXEC_NATIVE);
  atomic_store(&hw.phase, 1);
  WAIT_UNTIL(atomic_load(&sus.done));
}

static void a_thread_suspended_in_native_in_its_exit_hook_stays_until_resumed(void **state) {
  (void)state;
  latch_t go;
  start_suspension_case(&go, false);
  assert_int_equal(vmt_thread_hooks_add(NULL, native_exit_hook, NULL), 0);
  latch_open(&go);
  MU_POLL_UNTIL(atomic_load(&hw.phase) == 1, "the target to be native in its exit hook");
  assert_int_equal(vmt_thread_suspend(hw.target, VMT_SUSPEND_DEBUGGER, 0, NULL), 0);
  atomic_store(&sus.done, true);
  /* It cannot get past its way back into VM code, so it never becomes EXITED meanwhile. */
  MU_POLL_UNTIL(vmt_exec_state(hw.target) == VMT_EXEC_NATIVE &&
                    (atomic_load(&hw.target->exec) & VMT__EXEC_WAITER),
                "the target to wait for its resume");
  assert_int_equal(vmt_thread_suspend_count(hw.target), 1);
  assert_int_equal(vmt_thread_resume(hw.target, VMT_SUSPEND_DEBUGGER), 0);
  mu_join(hw.target);
  assert_int_equal(vmt_thread_hooks_remove(NULL, native_exit_hook, NULL), 0);
  assert_ended_unsuspended(hw.target);
  assert_int_equal(vmt_thread_release(hw.target), 0);
  latch_destroy(&go);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_handshake_queued_half_way_out_runs_once),
      cmocka_unit_test(a_safepoint_begun_half_way_out_counts_the_thread),
      cmocka_unit_test(a_suspend_after_the_exit_hooks_answers_esrch),
      cmocka_unit_test(a_suspend_from_an_exit_hook_that_never_polls_answers_esrch),
      cmocka_unit_test(suspend_all_skips_a_thread_that_is_exiting),
      cmocka_unit_test(a_thread_suspended_in_native_in_its_exit_hook_stays_until_resumed),
  };
  return cmocka_run_group_tests(tests, mu_attach_main, mu_detach_main);
}
