/*
 * test/spin_internal_test.c: the adaptive spin of a contended acquisition (runtime/sync/lock.c,
 * vmt__lock_spin; docs/monitors.md, "Spinning"). Its speed is the benchmarks' business; what is
 * checked here is the policy, driven deterministically by calling the spin on a word the test
 * itself holds (every spin fails) or has left free (every spin succeeds):
 *   - a spin on a held word fails and lowers the lock's budget, down to zero and never below;
 *   - zero is no absorbing state: a spin at budget zero still looks at the word, takes it when
 *     it is free, and raises the budget again;
 *   - successes bring the budget back to where a new lock starts, and no further;
 *   - a request of the VM services pending for the spinner ends the spin, with no penalty.
 * An internal-API test: it includes runtime/sync/sync_impl.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "runtime/sync/sync_impl.h"
#include "test/monitor_util.h"

#define TRIES 1000   /* far more spins than any budget needs to run out or come back */

static int32_t budget(struct vmt__lock *l) {
  return atomic_load_explicit(&l->spin_budget, memory_order_relaxed);
}

static void failed_spins_lower_the_budget_to_zero(void **state) {
  (void)state;
  vmt_monitor_t *m;
  assert_int_equal(vmt_monitor_create(&m, "spin"), 0);
  struct vmt__lock *l = &m->lock;
  int32_t initial = budget(l);
  assert_true(initial > 0);
  assert_int_equal(vmt_monitor_enter(m), 0);   /* the word is ours: every spin fails */
  int tries = 0;
  while (budget(l) > 0 && tries++ < TRIES) {
    int32_t before = budget(l);
    assert_false(vmt__lock_spin(l));
    assert_true(budget(l) < before);
    assert_true(budget(l) >= 0);
  }
  assert_int_equal(budget(l), 0);
  assert_false(vmt__lock_spin(l));
  assert_int_equal(budget(l), 0);
  assert_int_equal(vmt_monitor_exit(m), 0);
  assert_int_equal(vmt_monitor_destroy(m), 0);
}

static void a_spin_at_zero_still_takes_a_free_word_and_the_budget_recovers(void **state) {
  (void)state;
  vmt_monitor_t *m;
  assert_int_equal(vmt_monitor_create(&m, "spin"), 0);
  struct vmt__lock *l = &m->lock;
  int32_t initial = budget(l);
  atomic_store_explicit(&l->spin_budget, 0, memory_order_relaxed);
  int tries = 0;
  do {
    int32_t before = budget(l);
    assert_true(vmt__lock_spin(l));   /* the word was free: the spin took it */
    assert_int_equal(atomic_load(&l->state), VMT__LOCK_LOCKED);
    vmt__lock_release(l);
    assert_true(budget(l) > before);
  } while (budget(l) < initial && tries++ < TRIES);
  assert_int_equal(budget(l), initial);
  assert_true(vmt__lock_spin(l));   /* back at the start: a success changes nothing */
  vmt__lock_release(l);
  assert_int_equal(budget(l), initial);
  /* The monitor itself never saw an enter: the spin took the word only. */
  vmt_monitor_stats_t st;
  assert_int_equal(vmt_monitor_get_stats(m, &st), 0);
  assert_int_equal(st.enters, 0);
  assert_int_equal(vmt_monitor_destroy(m), 0);
}

/* A pending VM-service request (here a handshake flag, set and cleared by the test itself with
 * no operation queued and nothing polling in between) ends a spin at its first look, and
 * leaves the budget alone: the spin did not fail on its merits. */
static void a_pending_request_ends_a_spin_without_penalty(void **state) {
  (void)state;
  vmt_thread_t *self = vmt_thread_current();
  assert_non_null(self);
  vmt_monitor_t *m;
  assert_int_equal(vmt_monitor_create(&m, "spin"), 0);
  struct vmt__lock *l = &m->lock;
  int32_t initial = budget(l);
  assert_int_equal(vmt_monitor_enter(m), 0);   /* held: the spin cannot succeed */
  atomic_fetch_or(&self->exec, VMT__EXEC_HANDSHAKE);
  assert_false(vmt__lock_spin(l));
  atomic_fetch_and(&self->exec, ~VMT__EXEC_HANDSHAKE);
  assert_int_equal(budget(l), initial);
  assert_false(vmt__lock_spin(l));   /* without the flag the same spin fails and pays */
  assert_true(budget(l) < initial);
  assert_int_equal(vmt_monitor_exit(m), 0);
  assert_int_equal(vmt_monitor_destroy(m), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(failed_spins_lower_the_budget_to_zero),
      cmocka_unit_test(a_spin_at_zero_still_takes_a_free_word_and_the_budget_recovers),
      cmocka_unit_test(a_pending_request_ends_a_spin_without_penalty),
  };
  return cmocka_run_group_tests(tests, mu_attach_main, mu_detach_main);
}
