/*
 * test/vms_state_test.c: execution states, safe regions and the poll through the public API
 * (include/vmthread/vmservices.h): where a started and an attached thread begin, what
 * vmt_exec_enter returns and refuses, which runtime calls are safe regions (park, sleep,
 * contended enter, wait, join) and that they restore the state they found, the poll word's
 * place in the ABI, and a foreign thread's exclusion.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "test/vms_util.h"

static void *exec_state_of_self(void *arg) {
  (void)arg;
  return (void *)(intptr_t)vmt_exec_state(vmt_thread_current());
}

static void started_and_attached_threads_begin_native(void **state) {
  (void)state;
  vmt_thread_t *t = mu_start(exec_state_of_self, NULL);
  assert_int_equal((intptr_t)mu_join(t), VMT_EXEC_NATIVE);
  vmt_thread_t *self = vmt_thread_current();
  assert_non_null(self);
  assert_int_equal(vmt_exec_state(self), VMT_EXEC_NATIVE);
  assert_int_equal(vmt_exec_state(NULL), -EINVAL);
  assert_string_equal(vmt_exec_state_name(VMT_EXEC_MANAGED), "MANAGED");
  assert_string_equal(vmt_exec_state_name((vmt_exec_state_t)99), "UNKNOWN");
}

static void enter_returns_the_state_it_left(void **state) {
  (void)state;
  vmt_thread_t *self = vmt_thread_current();
  assert_int_equal(vmt_exec_enter(VMT_EXEC_MANAGED), VMT_EXEC_NATIVE);
  assert_int_equal(vmt_exec_state(self), VMT_EXEC_MANAGED);
  assert_int_equal(vmt_exec_enter(VMT_EXEC_VM), VMT_EXEC_MANAGED);
  int prev = vmt_exec_enter(VMT_EXEC_BLOCKED);
  assert_int_equal(prev, VMT_EXEC_VM);
  assert_int_equal(vmt_exec_enter((vmt_exec_state_t)prev), VMT_EXEC_BLOCKED);
  assert_int_equal(vmt_exec_enter(VMT_EXEC_NATIVE), VMT_EXEC_VM);
  assert_int_equal(vmt_exec_enter(VMT_EXEC_EXITED), -EINVAL);
  assert_int_equal(vmt_exec_enter((vmt_exec_state_t)-1), -EINVAL);
  assert_int_equal(vmt_exec_state(self), VMT_EXEC_NATIVE);
}

static void *foreign_enter(void *arg) {
  (void)arg;
  return (void *)(intptr_t)vmt_exec_enter(VMT_EXEC_MANAGED);
}

static void foreign_threads_have_no_state(void **state) {
  (void)state;
  pthread_t p;
  void *r;
  assert_int_equal(pthread_create(&p, NULL, foreign_enter, NULL), 0);
  assert_int_equal(pthread_join(p, &r), 0);
  assert_int_equal((intptr_t)r, -EPERM);
}

static void poll_word_is_at_the_documented_offset(void **state) {
  (void)state;
  vmt_thread_t *self = vmt_thread_current();
  const uint32_t *w = vmt_poll_word(self);
  assert_ptr_equal((const void *)w, (const char *)self + VMT_POLL_OFFSET);
  assert_int_equal(__atomic_load_n(w, __ATOMIC_ACQUIRE) & VMT_POLL_MASK, 0);
  assert_false(vmt_poll_armed(self));
  assert_null(vmt_poll_word(NULL));
  /* Nothing pending: the poll returns, in any state. */
  vmt_poll(self);
  vmt_exec_enter(VMT_EXEC_MANAGED);
  vmt_poll(self);
  vmt_poll_slow(self);
  vmt_poll_slow(NULL);
  vmt_exec_enter(VMT_EXEC_NATIVE);
}

/* ---- The runtime's blocking calls are safe regions ----------------------------------- */
typedef struct region_probe {
  _Atomic int step;
  _Atomic int state_after;      /* the state the call restored */
  vmt_monitor_t *m;
  vmt_thread_t *joinee;
} region_probe_t;

static void *park_in_managed(void *arg) {
  region_probe_t *p = arg;
  vmt_exec_enter(VMT_EXEC_MANAGED);
  atomic_store(&p->step, 1);
  vmt_park(0);
  atomic_store(&p->state_after, vmt_exec_state(vmt_thread_current()));
  vmt_exec_enter(VMT_EXEC_NATIVE);
  return NULL;
}

static void park_is_a_safe_region(void **state) {
  (void)state;
  region_probe_t p = {0};
  vmt_thread_t *t = mu_start(park_in_managed, &p);
  MU_POLL_UNTIL(atomic_load(&p.step) == 1 && vmt_exec_state(t) == VMT_EXEC_BLOCKED,
                "the parked thread to be BLOCKED");
  vmt_unpark(t);
  mu_join(t);
  assert_int_equal(atomic_load(&p.state_after), VMT_EXEC_MANAGED);
}

static void *enter_in_vm(void *arg) {
  region_probe_t *p = arg;
  vmt_exec_enter(VMT_EXEC_VM);
  atomic_store(&p->step, 1);
  vmt_monitor_enter(p->m);   /* contended: the main thread holds it */
  atomic_store(&p->state_after, vmt_exec_state(vmt_thread_current()));
  vmt_monitor_wait(p->m, 1000 * 1000);   /* 1 ms, times out */
  vmt_monitor_exit(p->m);
  atomic_store(&p->step, 2);
  vmt_exec_enter(VMT_EXEC_NATIVE);
  return NULL;
}

static void contended_enter_and_wait_are_safe_regions(void **state) {
  (void)state;
  region_probe_t p = {0};
  assert_int_equal(vmt_monitor_create(&p.m, "region"), 0);
  assert_int_equal(vmt_monitor_enter(p.m), 0);
  vmt_thread_t *t = mu_start(enter_in_vm, &p);
  MU_POLL_UNTIL(vmt_thread_state(t) == VMT_THREAD_BLOCKED && vmt_exec_state(t) ==
                                                                   VMT_EXEC_BLOCKED,
                "the contender to block");
  assert_int_equal(vmt_monitor_exit(p.m), 0);
  mu_join(t);
  assert_int_equal(atomic_load(&p.state_after), VMT_EXEC_VM);
  assert_int_equal(atomic_load(&p.step), 2);
  assert_int_equal(vmt_monitor_destroy(p.m), 0);
}

static void *sleep_in_managed(void *arg) {
  region_probe_t *p = arg;
  vmt_exec_enter(VMT_EXEC_MANAGED);
  vmt_sleep_ns(1000 * 1000);
  atomic_store(&p->state_after, vmt_exec_state(vmt_thread_current()));
  atomic_store(&p->step, 1);
  while (atomic_load(&p->step) != 2) vmt_sleep_ns(100 * 1000);
  vmt_exec_enter(VMT_EXEC_NATIVE);
  return NULL;
}

static void *join_in_managed(void *arg) {
  region_probe_t *p = arg;
  vmt_exec_enter(VMT_EXEC_MANAGED);
  vmt_thread_join(p->joinee, NULL);
  atomic_store(&p->state_after, vmt_exec_state(vmt_thread_current()));
  vmt_exec_enter(VMT_EXEC_NATIVE);
  return NULL;
}

static void sleep_and_join_are_safe_regions(void **state) {
  (void)state;
  region_probe_t sleeper = {0};
  vmt_thread_t *s = mu_start(sleep_in_managed, &sleeper);
  MU_POLL_UNTIL(atomic_load(&sleeper.step) == 1, "the sleeper to wake");
  assert_int_equal(atomic_load(&sleeper.state_after), VMT_EXEC_MANAGED);
  /* The sleeper now loops in 100 us sleeps; the joiner waits for it in join. */
  region_probe_t joiner = {.joinee = s};
  vmt_thread_t *j = mu_start(join_in_managed, &joiner);
  MU_POLL_UNTIL(vmt_exec_state(j) == VMT_EXEC_BLOCKED, "the joiner to block in join");
  atomic_store(&sleeper.step, 2);
  mu_join(j);
  assert_int_equal(atomic_load(&joiner.state_after), VMT_EXEC_MANAGED);
  assert_int_equal(vmt_thread_release(s), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(started_and_attached_threads_begin_native),
      cmocka_unit_test(enter_returns_the_state_it_left),
      cmocka_unit_test(foreign_threads_have_no_state),
      cmocka_unit_test(poll_word_is_at_the_documented_offset),
      cmocka_unit_test(park_is_a_safe_region),
      cmocka_unit_test(contended_enter_and_wait_are_safe_regions),
      cmocka_unit_test(sleep_and_join_are_safe_regions),
  };
  return cmocka_run_group_tests(tests, mu_attach_main, mu_detach_main);
}
