/*
 * test/mx_fault_internal_test.c: the management API's failure paths, through the fault seams
 * (runtime/fault.h, hence an internal test). Every allocation a query makes is failed in turn:
 * the query must answer -ENOMEM, leave its out parameters alone and leak nothing (LeakSanitizer
 * checks the last part under --config=asan); once no failure is injected it must succeed. The
 * SIGQUIT dump must leave the disposition and the threads as they were when its thread cannot
 * start. A CPU clock read that fails gives -1 for that thread.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "mx_util.h"
#include "runtime/fault.h"

static int teardown(void **state) {
  (void)state;
  vmt__fault_disarm_all();
  return 0;
}

static int walker(vmt_thread_t *t, vmt_stack_frame_t *frames, int32_t max, void *ctx) {
  (void)t, (void)ctx;
  int n = max < 3 ? max : 3;
  for (int i = 0; i < n; i++) {
    frames[i].function = "vm.f";
    frames[i].file = "F.java";
    frames[i].line = 1;
    frames[i].pc = 0;
  }
  return n;
}

typedef struct scene {
  gate_t gate;
  vmt_monitor_t *m;
  vmt_sync_t *s;
  vmt_thread_t *holder, *blocked, *self;
} scene_t;

static void *holder_body(void *arg) {
  scene_t *sc = arg;
  vmt_monitor_enter(sc->m);
  vmt_sync_lock(sc->s);
  gate_pass(&sc->gate);
  vmt_sync_unlock(sc->s);
  vmt_monitor_exit(sc->m);
  return NULL;
}

static void *blocked_body(void *arg) {
  scene_t *sc = arg;
  vmt_monitor_enter(sc->m);
  vmt_monitor_exit(sc->m);
  return NULL;
}

/* A thread holding a monitor and a synchronizer, one blocked on that monitor, and the
 * attached main thread: every kind of string a ThreadInfo copies. */
static void scene_up(scene_t *sc) {
  gate_init(&sc->gate);
  assert_int_equal(vmt_thread_attach(NULL, &sc->self), 0);
  assert_int_equal(vmt_monitor_create(&sc->m, "faulty"), 0);
  assert_int_equal(vmt_sync_create(&sc->s, "faulty-sync"), 0);
  sc->holder = start_named("holder", false, holder_body, sc);
  gate_await(&sc->gate, 1);
  sc->blocked = start_named("blocked", false, blocked_body, sc);
  assert_true(await_state(sc->blocked, VMT_THREAD_BLOCKED));
}

static void scene_down(scene_t *sc) {
  gate_open(&sc->gate);
  vmt_thread_join(sc->holder, NULL);
  vmt_thread_join(sc->blocked, NULL);
  vmt_thread_release(sc->holder);
  vmt_thread_release(sc->blocked);
  vmt_monitor_destroy(sc->m);
  vmt_sync_destroy(sc->s);
  vmt_thread_detach();
  gate_destroy(&sc->gate);
}

/* Runs call with the k-th allocation failing, k = 0, 1, ... until a run injects nothing;
 * returns how many runs failed. */
#define EVERY_ALLOCATION_FAILS(call, on_success)                                            \
  do {                                                                                       \
    int failed_runs = 0;                                                                     \
    for (int k = 0; k < 10000; k++) {                                                        \
      vmt__fault_arm(VMT__FAULT_ALLOC, k, 1, ENOMEM);                                        \
      int rc_ = (call);                                                                      \
      bool injected_ = vmt__fault_injected(VMT__FAULT_ALLOC) > 0;                            \
      vmt__fault_disarm_all();                                                               \
      if (injected_) {                                                                       \
        assert_int_equal(rc_, -ENOMEM);                                                      \
        failed_runs++;                                                                       \
        continue;                                                                            \
      }                                                                                      \
      assert_int_equal(rc_, 0);                                                              \
      on_success;                                                                            \
      break;                                                                                 \
    }                                                                                        \
    assert_true(failed_runs > 0);                                                            \
  } while (0)

static void thread_info_fails_cleanly_at_every_allocation(void **state) {
  (void)state;
  scene_t sc;
  scene_up(&sc);
  int64_t ids[4] = {vmt_thread_id(sc.holder), vmt_thread_id(sc.blocked), vmt_thread_id(sc.self),
                    999999};
  vmt_thread_info_t **arr = NULL;
  EVERY_ALLOCATION_FAILS(vmt_mx_get_thread_info_array(ids, 4, true, true, VMT_MX_MAX_DEPTH_ALL,
                                                      &arr),
                         vmt_mx_thread_info_array_free(arr, 4));
  vmt_mx_set_stack_walker(walker, NULL);
  EVERY_ALLOCATION_FAILS(vmt_mx_get_thread_info_array(ids, 4, true, true, VMT_MX_MAX_DEPTH_ALL,
                                                      &arr),
                         vmt_mx_thread_info_array_free(arr, 4));
  vmt_mx_set_stack_walker(NULL, NULL);
  vmt_thread_info_t *one = NULL;
  EVERY_ALLOCATION_FAILS(vmt_mx_get_thread_info(ids[1], 1, &one), vmt_mx_thread_info_free(one));
  size_t n = 0;
  EVERY_ALLOCATION_FAILS(vmt_mx_dump_all_threads(true, true, 8, &arr, &n),
                         vmt_mx_thread_info_array_free(arr, n));
  scene_down(&sc);
}

static void dumps_and_ids_fail_cleanly_at_every_allocation(void **state) {
  (void)state;
  scene_t sc;
  scene_up(&sc);
  char *text = NULL;
  size_t len = 0;
  EVERY_ALLOCATION_FAILS(vmt_mx_thread_dump_to_string(&text, &len), free(text));
  int64_t *ids = NULL;
  size_t n = 0;
  EVERY_ALLOCATION_FAILS(vmt_mx_get_all_thread_ids(&ids, &n), vmt_mx_ids_free(ids));
  FILE *devnull = fopen("/dev/null", "w");
  assert_non_null(devnull);
  EVERY_ALLOCATION_FAILS(vmt_mx_print_thread_dump(devnull), (void)0);
  fclose(devnull);
  scene_down(&sc);
}

static void sigquit_enable_leaves_nothing_when_its_thread_cannot_start(void **state) {
  (void)state;
  struct sigaction before, after;
  assert_int_equal(sigaction(SIGQUIT, NULL, &before), 0);
  int32_t live = vmt_mx_get_thread_count();
  vmt__fault_arm(VMT__FAULT_PTHREAD_CREATE, 0, 1, EAGAIN);
  assert_int_equal(vmt_mx_enable_sigquit_dump(NULL), -EAGAIN);
  assert_int_equal(vmt__fault_injected(VMT__FAULT_PTHREAD_CREATE), 1);
  vmt__fault_disarm_all();
  assert_int_equal(sigaction(SIGQUIT, NULL, &after), 0);
  assert_ptr_equal(after.sa_handler, before.sa_handler);
  assert_int_equal(vmt_mx_get_thread_count(), live);
  /* Nothing half-enabled remains: enabling works now, and disabling restores. */
  assert_int_equal(vmt_mx_enable_sigquit_dump(NULL), 0);
  assert_int_equal(vmt_mx_disable_sigquit_dump(), 0);
  assert_int_equal(sigaction(SIGQUIT, NULL, &after), 0);
  assert_ptr_equal(after.sa_handler, before.sa_handler);
}

static void failing_clock_reads_answer_minus_one(void **state) {
  (void)state;
  if (!vmt_mx_is_thread_cpu_time_supported()) {
    print_message("thread CPU time is not supported here\n");
    skip();
  }
  gate_t g;
  vmt_thread_t *t = start_gated(&g, "clocked", false);
  int64_t id = vmt_thread_id(t), ids[2] = {id, id}, out[2] = {0, 0}, v = 0;
  /* A CPU clock the kernel refuses (the thread vanished under us, say) is Java's -1, per
   * element, never an error of the whole call nor a stale value. */
  vmt__fault_arm(VMT__FAULT_CLOCK, 0, -1, EINVAL);
  assert_int_equal(vmt_mx_get_thread_cpu_time(id, &v), 0);
  assert_int_equal(v, -1);
  assert_int_equal(vmt_mx_get_thread_user_time(id, &v), 0);
  assert_int_equal(v, -1);
  assert_int_equal(vmt_mx_get_thread_cpu_time_array(ids, 2, out), 0);
  assert_int_equal(out[0], -1);
  assert_int_equal(out[1], -1);
  vmt_thread_info_t *ti = NULL;
  assert_int_equal(vmt_mx_get_thread_info(id, 0, &ti), 0);
  assert_non_null(ti);
  assert_int_equal(ti->cpu_time_ns, -1);
  assert_int_equal(ti->user_time_ns, -1);
  vmt_mx_thread_info_free(ti);
  assert_true(vmt__fault_injected(VMT__FAULT_CLOCK) > 0);
  vmt__fault_disarm_all();
  assert_int_equal(vmt_mx_get_thread_cpu_time(id, &v), 0);
  assert_true(v >= 0);
  finish_gated(&g, t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(thread_info_fails_cleanly_at_every_allocation, teardown),
      cmocka_unit_test_teardown(dumps_and_ids_fail_cleanly_at_every_allocation, teardown),
      cmocka_unit_test_teardown(sigquit_enable_leaves_nothing_when_its_thread_cannot_start,
                                teardown),
      cmocka_unit_test_teardown(failing_clock_reads_answer_minus_one, teardown),
  };
  return cmocka_run_group_tests_name("mx_fault_internal", tests, NULL, NULL);
}
