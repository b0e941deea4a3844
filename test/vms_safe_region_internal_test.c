/*
 * test/vms_safe_region_internal_test.c: a thread woken in a safe region while a safepoint holds,
 * seen at the one instant no public call can time: when its way out has just found the
 * safepoint and turns to wait for the end (the VMT__FAULT_EXEC_SLOW hook). A safepoint holds
 * every other thread in a safe state (docs/vm-services.md), so even then its state reads
 * BLOCKED, and a handshake another thread asks of it at that instant does not run before the
 * end (only the coordinator's own run during a safepoint). Internal: it needs the hook.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/fault.h"
#include "runtime/vmservices/vmservices_impl.h"
#include "test/vms_util.h"

static struct {
  vmt_thread_t *target;
  _Atomic bool armed;           /* the hook acts once, for the target, during a safepoint */
  _Atomic bool hold;            /* ... and keeps it there until an operation is queued for it */
  _Atomic int seen_state;       /* the target's state at that instant; -1 before */
} watch;

static void at_slow_entry(void *arg) {
  (void)arg;
  if (vmt_thread_current() != watch.target || !vmt_safepoint_in_progress()) return;
  if (!atomic_exchange(&watch.armed, false)) return;
  atomic_store(&watch.seen_state, vmt_exec_state(watch.target));
  if (atomic_load(&watch.hold)) WAIT_UNTIL(vmt_poll_armed(watch.target));
}

static void watch_start(parker_t *pk, bool hold) {
  parker_start(pk);
  watch.target = pk->thread;
  atomic_store(&watch.hold, hold);
  atomic_store(&watch.seen_state, -1);
  vmt__fault_set_hook(VMT__FAULT_EXEC_SLOW, at_slow_entry, NULL);
}

/* Lets the parker out of its park while the safepoint holds; returns once its way out has met
 * the safepoint (the hook has run). */
static void wake_and_watch(parker_t *pk) {
  atomic_store(&watch.armed, true);
  atomic_store(&pk->stop, true);
  vmt_unpark(pk->thread);
  MU_POLL_UNTIL(atomic_load(&watch.seen_state) != -1, "the parker to meet the safepoint");
}

static void a_thread_woken_at_a_safepoint_never_reads_unsafe(void **state) {
  (void)state;
  parker_t pk;
  watch_start(&pk, false);
  assert_int_equal(vmt_safepoint_begin(0, NULL), 0);
  wake_and_watch(&pk);
  int seen = atomic_load(&watch.seen_state);
  int after = vmt_exec_state(pk.thread);
  int phase = atomic_load(&pk.phase);
  assert_int_equal(vmt_safepoint_end(NULL), 0);
  mu_join(pk.thread);
  vmt__fault_disarm_all();
  assert_string_equal(vmt_exec_state_name((vmt_exec_state_t)seen), "BLOCKED");
  assert_string_equal(vmt_exec_state_name((vmt_exec_state_t)after), "BLOCKED");
  assert_int_equal(phase, 1);
}

typedef struct late_ask {
  _Atomic int calls;
  _Atomic bool during_safepoint;   /* what the operation saw when it ran */
  _Atomic int rc;
} late_ask_t;

static void note_safepoint(vmt_thread_t *target, void *arg) {
  (void)target;
  late_ask_t *a = arg;
  atomic_store(&a->during_safepoint, vmt_safepoint_in_progress());
  atomic_fetch_add(&a->calls, 1);
}

static void *ask_once_it_is_out(void *arg) {
  late_ask_t *a = arg;
  if (!WAIT_UNTIL(atomic_load(&watch.seen_state) != -1)) return NULL;
  atomic_store(&a->rc, vmt_handshake_run(watch.target, note_safepoint, a, 10 * VMS_SECOND, NULL));
  return NULL;
}

static void a_handshake_asked_of_it_then_waits_for_the_end(void **state) {
  (void)state;
  late_ask_t a = {.rc = 1};
  parker_t pk;
  watch_start(&pk, true);
  vmt_thread_t *asker = mu_start(ask_once_it_is_out, &a);
  assert_int_equal(vmt_safepoint_begin(0, NULL), 0);
  wake_and_watch(&pk);
  /* Until the operation has run or someone sleeps for the end: the parker does once it has
   * nothing left to do but wait, and the asker once it knows it must. */
  MU_POLL_UNTIL(atomic_load(&a.calls) > 0 ||
                    (atomic_load(&vmt__sp_word) & VMT__SP_WAITERS) != 0,
                "the operation to run or a thread to wait for the end");
  int calls_during = atomic_load(&a.calls);
  assert_int_equal(vmt_safepoint_end(NULL), 0);
  mu_join(asker);
  mu_join(pk.thread);
  vmt__fault_disarm_all();
  assert_int_equal(calls_during, 0);
  assert_int_equal(atomic_load(&a.rc), 0);
  assert_int_equal(atomic_load(&a.calls), 1);
  assert_false(atomic_load(&a.during_safepoint));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_thread_woken_at_a_safepoint_never_reads_unsafe),
      cmocka_unit_test(a_handshake_asked_of_it_then_waits_for_the_end),
  };
  return cmocka_run_group_tests(tests, mu_attach_main, mu_detach_main);
}
