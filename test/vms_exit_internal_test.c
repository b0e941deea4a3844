/*
 * test/vms_exit_internal_test.c: a thread half-way out (between the VM services' two exit
 * steps, runtime/thread/exit.c), where only a fault-seam hook can hold it: a handshake queued
 * there is run by the thread itself before it becomes EXITED (exactly once, never dropped,
 * no use after free: its requester's node lives on the requester's stack), one asked after
 * answers -ESRCH; a safepoint begun there counts the exiting thread and returns once it has
 * left. Internal: it needs the VMT__FAULT_THREAD_EXITING hook.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/fault.h"
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_handshake_queued_half_way_out_runs_once),
      cmocka_unit_test(a_safepoint_begun_half_way_out_counts_the_thread),
  };
  return cmocka_run_group_tests(tests, mu_attach_main, mu_detach_main);
}
