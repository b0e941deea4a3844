/*
 * test/fault_internal_test.c: the fault-injection seams themselves (an internal module, hence
 * the name). Every other failure-path test trusts these semantics.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "runtime/fault.h"

static int teardown(void **state) {
  (void)state;
  vmt__fault_disarm_all();
  return 0;
}

static void disarmed_sites_never_fail(void **state) {
  (void)state;
  for (int site = 0; site < VMT__FAULT_SITE_COUNT; site++)
    for (int i = 0; i < 100; i++) assert_int_equal(vmt__fault_hit((vmt__fault_site_t)site), 0);
  assert_int_equal(atomic_load(&vmt__fault_armed), 0);
}

static void skip_then_fail_exact_number_of_times(void **state) {
  (void)state;
  vmt__fault_arm(VMT__FAULT_PTHREAD_CREATE, 2, 3, EAGAIN);
  assert_int_equal(vmt__fault_hit(VMT__FAULT_PTHREAD_CREATE), 0);
  assert_int_equal(vmt__fault_hit(VMT__FAULT_PTHREAD_CREATE), 0);
  for (int i = 0; i < 3; i++) assert_int_equal(vmt__fault_hit(VMT__FAULT_PTHREAD_CREATE), -EAGAIN);
  /* Exhausted plans disarm themselves and restore the fast path. */
  assert_int_equal(vmt__fault_hit(VMT__FAULT_PTHREAD_CREATE), 0);
  assert_int_equal(vmt__fault_injected(VMT__FAULT_PTHREAD_CREATE), 3);
  assert_int_equal(atomic_load(&vmt__fault_armed), 0);
}

static void sites_are_independent(void **state) {
  (void)state;
  vmt__fault_arm(VMT__FAULT_ALLOC, 0, -1, ENOMEM);
  assert_int_equal(vmt__fault_hit(VMT__FAULT_SETNAME), 0);
  assert_int_equal(vmt__fault_hit(VMT__FAULT_ALLOC), -ENOMEM);
  assert_int_equal(vmt__fault_hit(VMT__FAULT_ALLOC), -ENOMEM);
  vmt__fault_disarm_all();
  assert_int_equal(vmt__fault_hit(VMT__FAULT_ALLOC), 0);
}

static void bad_arguments_arm_nothing(void **state) {
  (void)state;
  vmt__fault_arm(VMT__FAULT_SITE_COUNT, 0, 1, EIO);
  vmt__fault_arm(VMT__FAULT_CLOCK, 0, 0, EIO);
  vmt__fault_arm(VMT__FAULT_CLOCK, 0, 1, 0);
  assert_int_equal(atomic_load(&vmt__fault_armed), 0);
  assert_int_equal(vmt__fault_hit(VMT__FAULT_CLOCK), 0);
  assert_int_equal(vmt__fault_hit((vmt__fault_site_t)-1), 0);
}

static void count_call(void *arg) { (*(int *)arg)++; }

/* A hook point has nothing to fail: arming it arms nothing, a hook there runs at every call. */
static void hook_points_run_hooks_and_never_fail(void **state) {
  (void)state;
  for (int site = VMT__FAULT_FALLIBLE_COUNT; site < VMT__FAULT_SITE_COUNT; site++) {
    vmt__fault_arm((vmt__fault_site_t)site, 0, -1, EIO);
    assert_int_equal(atomic_load(&vmt__fault_armed), 0);
    int calls = 0;
    vmt__fault_set_hook((vmt__fault_site_t)site, count_call, &calls);
    for (int i = 0; i < 3; i++) assert_int_equal(vmt__fault_hit((vmt__fault_site_t)site), 0);
    assert_int_equal(calls, 3);
    assert_int_equal(vmt__fault_injected((vmt__fault_site_t)site), 0);
    vmt__fault_set_hook((vmt__fault_site_t)site, NULL, NULL);
    assert_int_equal(vmt__fault_hit((vmt__fault_site_t)site), 0);
    assert_int_equal(calls, 3);
    assert_int_equal(atomic_load(&vmt__fault_armed), 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(disarmed_sites_never_fail, teardown),
      cmocka_unit_test_teardown(skip_then_fail_exact_number_of_times, teardown),
      cmocka_unit_test_teardown(sites_are_independent, teardown),
      cmocka_unit_test_teardown(bad_arguments_arm_nothing, teardown),
      cmocka_unit_test_teardown(hook_points_run_hooks_and_never_fail, teardown),
  };
  return cmocka_run_group_tests_name("fault_internal", tests, NULL, NULL);
}
