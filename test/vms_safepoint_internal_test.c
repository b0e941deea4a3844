/*
 * test/vms_safepoint_internal_test.c: the safepoint coordinator's wait at the one instant no
 * public call can time (the VMT__FAULT_SP_SLEEP hook): its spin is over and it is about to
 * sleep on the countdown with the value it last read, and right then every armed thread
 * arrives, the last one finding nobody asleep to wake yet. The begin must still return at once
 * (no wake-up lost), with every one of them counted and stopped; with one straggler and with as
 * many as the process has CPUs (more runnable threads than CPUs, the coordinator included).
 * Internal: it needs the hook.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/fault.h"
#include "test/vms_util.h"

#define MAX_MUTATORS 64

static struct {
  mutator_t *m;
  int n;
  _Atomic bool released;        /* the mutators have been let poll */
  _Atomic bool all_blocked;     /* ... and every one had arrived when the hook returned */
} gate;

/* In the coordinator, at the hook: lets every mutator reach its poll and waits until each one
 * has arrived (BLOCKED), so that every arrival falls between the coordinator's last read of
 * the countdown and its sleep. Once. */
static void release_at_hook(void *arg) {
  (void)arg;
  if (vmt_thread_current() == NULL || !vmt_safepoint_in_progress()) return;
  if (atomic_exchange(&gate.released, true)) return;
  for (int i = 0; i < gate.n; i++) atomic_store(&gate.m[i].poll, true);
  bool all = true;
  for (int i = 0; i < gate.n; i++)
    all = WAIT_UNTIL(vmt_exec_state(gate.m[i].thread) == VMT_EXEC_BLOCKED) && all;
  atomic_store(&gate.all_blocked, all);
}

/* n mutators in managed code that do not poll until the hook lets them: the coordinator arms
 * them all, spins in vain, and goes to sleep. */
static void begin_with_stragglers(int n) {
  mutator_t m[MAX_MUTATORS];
  memset(&gate, 0, sizeof(gate));
  gate.m = m;
  gate.n = n;
  for (int i = 0; i < n; i++) mutator_start(&m[i], false);
  vmt__fault_set_hook(VMT__FAULT_SP_SLEEP, release_at_hook, NULL);
  vmt_safepoint_stats_t st;
  int64_t t0 = test_clock_ns(CLOCK_MONOTONIC);
  int rc = vmt_safepoint_begin(5 * VMS_SECOND, &st);
  int64_t waited = test_clock_ns(CLOCK_MONOTONIC) - t0;
  vmt__fault_disarm_all();
  if (rc != 0) {
    for (int i = 0; i < n; i++) mutator_stop(&m[i]);
    fail_msg("begin: %d after %lld ms (straggler %lld)", rc, (long long)(waited / 1000000),
             (long long)st.straggler.thread_id);
  }
  bool released = atomic_load(&gate.released), all_blocked = atomic_load(&gate.all_blocked);
  bool stalled = true;
  for (int i = 0; i < n; i++)
    stalled = vmt_exec_state(m[i].thread) == VMT_EXEC_BLOCKED && mutator_stalled(&m[i]) &&
              stalled;
  assert_int_equal(vmt_safepoint_end(&st), 0);
  for (int i = 0; i < n; i++) {
    uint64_t before = atomic_load(&m[i].iterations);
    MU_POLL_UNTIL(atomic_load(&m[i].iterations) > before, "a mutator to run after the end");
  }
  for (int i = 0; i < n; i++) mutator_stop(&m[i]);
  assert_true(released);        /* the coordinator did go to sleep */
  assert_true(all_blocked);
  assert_int_equal(st.running, n);
  assert_true(stalled);         /* stopped until the end */
  /* A lost wake-up would leave the coordinator asleep until the 5 s deadline. */
  if (waited >= VMS_SECOND) fail_msg("begin took %lld ms", (long long)(waited / 1000000));
}

static void one_straggler_arrives_as_the_coordinator_goes_to_sleep(void **state) {
  (void)state;
  begin_with_stragglers(1);
}

static void as_many_stragglers_as_cpus(void **state) {
  (void)state;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus < 1) cpus = 1;
  begin_with_stragglers(cpus > MAX_MUTATORS ? MAX_MUTATORS : (int)cpus);
}

int main(void) {
  vmt_thread_t *self;
  assert_int_equal(vmt_thread_attach(NULL, &self), 0);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(one_straggler_arrives_as_the_coordinator_goes_to_sleep),
      cmocka_unit_test(as_many_stragglers_as_cpus),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  vmt_thread_detach();
  return rc;
}
