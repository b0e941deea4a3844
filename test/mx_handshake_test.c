/*
 * test/mx_handshake_test.c: management on top of the VM services. The stack walker runs
 * inside a handshake with the thread it walks: on that thread at its poll when it runs managed
 * code, on the querying thread while a parked thread is held in its safe state (it cannot
 * leave the park, nor exit, during the walk). A thread that never polls gets its ThreadInfo
 * without frames, after the walk timeout, instead of hanging the query. ThreadInfo's in_native
 * and suspended say what the VM services know. A dump at a safepoint is of one instant: every
 * walk of it sees every thread where the first walk saw it; the deadlock scan at a safepoint
 * finds a real cycle and nothing else.
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

/* ---- A walker that says where it ran and what it saw --------------------------------- */
#define MAX_MUT 4
typedef struct walk_log {
  pthread_mutex_t lock;
  vmt_thread_t *walked[16];
  vmt_thread_t *ran_on[16];
  int exec_state[16];
  int n;
  /* A dump's walks: every mutator's iteration count, as each walk saw it. */
  mutator_t *mutators[MAX_MUT];
  int nmut;
  uint64_t seen[16][MAX_MUT];
  /* Parker: made to want out during the walk. */
  parker_t *parker;
  int parker_phase_after;
} walk_log_t;

static int log_walker(vmt_thread_t *t, vmt_stack_frame_t *frames, int32_t max, void *ctx) {
  walk_log_t *w = ctx;
  if (w->parker && t == w->parker->thread) {
    /* Let it go, then look: it must still be in its park, held by this walk. */
    atomic_store(&w->parker->stop, true);
    vmt_unpark(t);
    for (int i = 0; i < 20; i++) mu_pause_1ms();
    w->parker_phase_after = atomic_load(&w->parker->phase);
  }
  pthread_mutex_lock(&w->lock);
  if (w->n < 16) {
    w->walked[w->n] = t;
    w->ran_on[w->n] = vmt_thread_current();
    w->exec_state[w->n] = vmt_exec_state(t);
    for (int k = 0; k < w->nmut; k++) w->seen[w->n][k] = atomic_load(&w->mutators[k]->iterations);
    w->n++;
  }
  pthread_mutex_unlock(&w->lock);
  if (max < 1) return 0;
  frames[0] = (vmt_stack_frame_t){.function = "demo.Main.run", .file = "Main.vm", .line = 7};
  return 1;
}

static walk_log_t *log_install(void) {
  walk_log_t *w = calloc(1, sizeof(*w));
  assert_non_null(w);
  pthread_mutex_init(&w->lock, NULL);
  vmt_mx_set_stack_walker(log_walker, w);
  return w;
}

static void log_remove(walk_log_t *w) {
  vmt_mx_set_stack_walker(NULL, NULL);
  pthread_mutex_destroy(&w->lock);
  free(w);
}

static vmt_thread_info_t *info_of(vmt_thread_t *t, int32_t depth) {
  vmt_thread_info_t *info = NULL;
  assert_int_equal(vmt_mx_get_thread_info(vmt_thread_id(t), depth, &info), 0);
  assert_non_null(info);
  return info;
}

/* info_of, and how long the call took. */
static vmt_thread_info_t *timed_info_of(vmt_thread_t *t, int32_t depth, int64_t *took_ns) {
  int64_t t0 = test_clock_ns(CLOCK_MONOTONIC);
  vmt_thread_info_t *info = info_of(t, depth);
  *took_ns = test_clock_ns(CLOCK_MONOTONIC) - t0;
  return info;
}

static void a_running_thread_is_walked_by_itself_at_its_poll(void **state) {
  (void)state;
  walk_log_t *w = log_install();
  mutator_t m;
  mutator_start(&m, true);
  vmt_thread_info_t *info = info_of(m.thread, 8);
  assert_int_equal(info->frame_count, 1);
  assert_string_equal(info->frames[0].function, "demo.Main.run");
  assert_false(info->in_native);
  assert_false(info->suspended);
  vmt_mx_thread_info_free(info);
  assert_int_equal(w->n, 1);
  assert_ptr_equal(w->walked[0], m.thread);
  assert_ptr_equal(w->ran_on[0], m.thread);
  /* No stack asked: no walk, no handshake. */
  info = info_of(m.thread, 0);
  assert_int_equal(info->frame_count, 0);
  vmt_mx_thread_info_free(info);
  assert_int_equal(w->n, 1);
  mutator_stop(&m);
  log_remove(w);
}

static void a_parked_thread_is_held_while_it_is_walked(void **state) {
  (void)state;
  walk_log_t *w = log_install();
  parker_t pk;
  parker_start(&pk);
  w->parker = &pk;
  vmt_thread_info_t *info = info_of(pk.thread, 8);
  assert_int_equal(info->frame_count, 1);
  assert_false(info->in_native);
  assert_int_equal(info->state, VMT_THREAD_WAITING);
  vmt_mx_thread_info_free(info);
  assert_int_equal(w->n, 1);
  assert_ptr_equal(w->ran_on[0], vmt_thread_current());
  assert_int_equal(w->exec_state[0], VMT_EXEC_BLOCKED);
  /* Unparked during the walk, it stayed in the park until the walk was over. */
  assert_int_equal(w->parker_phase_after, 1);
  MU_POLL_UNTIL(atomic_load(&pk.phase) == 2, "the parker to leave after the walk");
  mu_join(pk.thread);
  log_remove(w);
}

static void a_thread_that_never_polls_is_reported_without_frames(void **state) {
  (void)state;
  walk_log_t *w = log_install();
  mutator_t m;
  mutator_start(&m, false);
  int64_t waited;
  vmt_thread_info_t *info = timed_info_of(m.thread, 8, &waited);
  assert_int_equal(info->frame_count, 0);
  assert_int_equal(info->id, vmt_thread_id(m.thread));
  assert_true(waited >= VMT_MX_WALK_TIMEOUT_NS);
  vmt_mx_thread_info_free(info);
  assert_int_equal(w->n, 0);
  mutator_stop(&m);
  assert_int_equal(w->n, 0);   /* the walk was taken back, never run late */
  log_remove(w);
}

static void in_native_and_suspended_are_real(void **state) {
  (void)state;
  native_reader_t r;
  reader_start(&r);
  parker_t pk;
  parker_start(&pk);
  vmt_thread_info_t *info = info_of(r.thread, 0);
  assert_true(info->in_native);
  assert_false(info->suspended);
  vmt_mx_thread_info_free(info);
  assert_int_equal(vmt_thread_suspend(pk.thread, VMT_SUSPEND_DEBUGGER, 0, NULL), 0);
  info = info_of(pk.thread, 0);
  assert_false(info->in_native);
  assert_true(info->suspended);
  vmt_mx_thread_info_free(info);
  assert_int_equal(vmt_thread_resume(pk.thread, VMT_SUSPEND_DEBUGGER), 0);
  info = info_of(pk.thread, 0);
  assert_false(info->suspended);
  vmt_mx_thread_info_free(info);
  reader_stop(&r);
  parker_stop(&pk);
}

/* management.h: without a walker the calling thread gets its native frames and every other
 * thread none (backtrace(3) is not run on a thread at its poll), and nobody is waited for. */
static void without_a_walker_a_running_thread_has_no_frames(void **state) {
  (void)state;
  vmt_mx_set_stack_walker(NULL, NULL);
  for (int poll = 1; poll >= 0; poll--) {
    mutator_t m;
    mutator_start(&m, poll);
    int64_t waited;
    vmt_thread_info_t *info = timed_info_of(m.thread, 8, &waited);
    assert_int_equal(info->frame_count, 0);
    vmt_mx_thread_info_free(info);
    if (!poll) assert_true(waited < VMT_MX_WALK_TIMEOUT_NS);   /* not the walk's timeout */
    mutator_stop(&m);
  }
}

/* A thread in managed code that replaces the walker while a call with stacks holds the
 * walker lock waits for that call in a safe state: the call walks it on its behalf instead
 * of waiting for a poll that cannot come until the call ends. */
typedef struct replacer {
  _Atomic bool running, go, replaced, stop;
  _Atomic(vmt_thread_t *) walked_on;   /* where the replacer's own walk ran */
  _Atomic bool saw_blocked;
  vmt_thread_t *thread;
} replacer_t;

static int gate_walker(vmt_thread_t *t, vmt_stack_frame_t *frames, int32_t max, void *ctx) {
  replacer_t *r = ctx;
  if (t == r->thread) {
    atomic_store(&r->walked_on, vmt_thread_current());
  } else if (!atomic_exchange(&r->go, true)) {
    /* The replacer now waits for this call's walker lock; give it 2 s to show BLOCKED. */
    for (int i = 0; i < 2000 && vmt_exec_state(r->thread) != VMT_EXEC_BLOCKED; i++)
      mu_pause_1ms();
    atomic_store(&r->saw_blocked, vmt_exec_state(r->thread) == VMT_EXEC_BLOCKED);
  }
  if (max < 1) return 0;
  frames[0] = (vmt_stack_frame_t){.function = "demo.Main.run", .file = "Main.vm", .line = 7};
  return 1;
}

static void *replace_from_managed_code(void *arg) {
  replacer_t *r = arg;
  vmt_thread_t *self = vmt_thread_current();
  vmt_exec_enter(VMT_EXEC_MANAGED);
  atomic_store(&r->running, true);
  while (!atomic_load(&r->stop)) {
    if (atomic_load(&r->go) && !atomic_load(&r->replaced)) {
      vmt_mx_set_stack_walker(gate_walker, r);
      atomic_store(&r->replaced, true);
    }
    vmt_poll(self);
  }
  vmt_exec_enter(VMT_EXEC_NATIVE);
  return NULL;
}

static void replacing_the_walker_from_managed_code_does_not_stall_a_walk(void **state) {
  (void)state;
  replacer_t r;
  memset(&r, 0, sizeof(r));
  vmt_mx_set_stack_walker(gate_walker, &r);
  r.thread = mu_start(replace_from_managed_code, &r);
  MU_POLL_UNTIL(atomic_load(&r.running), "the replacer to run managed code");
  /* The caller first (its walk lets the replacer go), then the replacer. */
  int64_t ids[2] = {vmt_thread_id(vmt_thread_current()), vmt_thread_id(r.thread)};
  vmt_thread_info_t **infos = NULL;
  assert_int_equal(vmt_mx_get_thread_info_array(ids, 2, false, false, 8, &infos), 0);
  assert_true(atomic_load(&r.saw_blocked));
  assert_non_null(infos[1]);
  assert_int_equal(infos[1]->frame_count, 1);
  assert_ptr_equal(atomic_load(&r.walked_on), vmt_thread_current());
  vmt_mx_thread_info_array_free(infos, 2);
  MU_POLL_UNTIL(atomic_load(&r.replaced), "the replacement to finish after the call");
  atomic_store(&r.stop, true);
  mu_join(r.thread);
  vmt_mx_set_stack_walker(NULL, NULL);
}

/* ---- At a safepoint ---------------------------------------------------------------------- */
static void a_dump_at_a_safepoint_is_of_one_instant(void **state) {
  (void)state;
  walk_log_t *w = log_install();
  mutator_t m[3];
  for (int i = 0; i < 3; i++) {
    mutator_start(&m[i], true);
    w->mutators[i] = &m[i];
  }
  w->nmut = 3;
  vmt_thread_info_t **infos = NULL;
  size_t n = 0;
  uint32_t locks = VMT_MX_INFO_LOCKED_MONITORS | VMT_MX_INFO_LOCKED_SYNCHRONIZERS;
  assert_int_equal(
      vmt_mx_dump_all_threads_at_safepoint(locks, 8, 10 * VMS_SECOND, &infos, &n), 0);
  assert_true(n >= 4);   /* the mutators and the main thread */
  assert_true(w->n >= 4);
  for (int k = 1; k < w->n; k++)
    for (int i = 0; i < 3; i++)
      if (w->seen[k][i] != w->seen[0][i])
        fail_msg("walk %d saw mutator %d at %llu, walk 0 at %llu", k, i,
                 (unsigned long long)w->seen[k][i], (unsigned long long)w->seen[0][i]);
  for (size_t i = 0; i < n; i++) assert_int_equal(infos[i]->frame_count, 1);
  vmt_mx_thread_info_array_free(infos, n);
  /* The flags of the _ex calls: no CPU times when asked. */
  assert_int_equal(
      vmt_mx_dump_all_threads_at_safepoint(VMT_MX_INFO_NO_CPU_TIME, 0, 0, &infos, &n), 0);
  assert_true(n >= 4);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(infos[i]->cpu_time_ns, -1);
    assert_int_equal(infos[i]->user_time_ns, -1);
  }
  vmt_mx_thread_info_array_free(infos, n);
  assert_false(vmt_safepoint_in_progress());
  for (int i = 0; i < 3; i++) mutator_stop(&m[i]);
  /* A thread that never polls: the safepoint times out, nothing is returned. */
  mutator_t bad;
  mutator_start(&bad, false);
  infos = (vmt_thread_info_t **)1;
  assert_int_equal(vmt_mx_dump_all_threads_at_safepoint(0, 8, 50 * MU_MS, &infos, &n),
                   -ETIMEDOUT);
  assert_ptr_equal(infos, (vmt_thread_info_t **)1);
  /* Bad arguments are refused before anybody is stopped: with no timeout (0), a safepoint
   * begun for them would wait for the never-polling thread forever. */
  assert_int_equal(vmt_mx_dump_all_threads_at_safepoint(0, -1, 0, &infos, &n), -EINVAL);
  assert_int_equal(vmt_mx_dump_all_threads_at_safepoint(0x80000000u, 8, 0, &infos, &n),
                   -EINVAL);
  assert_int_equal(vmt_mx_dump_all_threads_at_safepoint(0, 8, -1, &infos, &n), -EINVAL);
  assert_int_equal(vmt_mx_dump_all_threads_at_safepoint(0, 8, 0, NULL, &n), -EINVAL);
  mutator_stop(&bad);
  log_remove(w);
}

typedef struct cross {
  vmt_monitor_t *first, *second;
  _Atomic int *holding;
} cross_t;

static void *enter_both(void *arg) {
  cross_t *c = arg;
  vmt_monitor_enter(c->first);
  atomic_fetch_add(c->holding, 1);
  while (atomic_load(c->holding) < 2) sched_yield();
  vmt_monitor_enter(c->second);   /* never returns: a deadlock */
  return NULL;
}

static void the_deadlock_scan_at_a_safepoint_finds_a_real_cycle(void **state) {
  (void)state;
  int64_t *ids = (int64_t *)1;
  size_t n = 99;
  assert_int_equal(vmt_mx_find_deadlocked_threads_at_safepoint(0, &ids, &n), 0);
  assert_null(ids);
  assert_int_equal(n, 0);
  vmt_monitor_t *a, *b;
  assert_int_equal(vmt_monitor_create(&a, "a"), 0);
  assert_int_equal(vmt_monitor_create(&b, "b"), 0);
  _Atomic int holding = 0;
  cross_t c1 = {a, b, &holding}, c2 = {b, a, &holding};
  vmt_thread_t *t1, *t2;
  assert_int_equal(vmt_thread_start(&t1, enter_both, &c1), 0);
  assert_int_equal(vmt_thread_start(&t2, enter_both, &c2), 0);
  MU_POLL_UNTIL(vmt_thread_state(t1) == VMT_THREAD_BLOCKED &&
                    vmt_thread_state(t2) == VMT_THREAD_BLOCKED,
                "the deadlock");
  assert_int_equal(vmt_mx_find_deadlocked_threads_at_safepoint(10 * VMS_SECOND, &ids, &n), 0);
  assert_int_equal(n, 2);
  assert_true((ids[0] == vmt_thread_id(t1) && ids[1] == vmt_thread_id(t2)) ||
              (ids[0] == vmt_thread_id(t2) && ids[1] == vmt_thread_id(t1)));
  vmt_mx_ids_free(ids);
  assert_int_equal(vmt_mx_find_deadlocked_threads_at_safepoint(-1, &ids, &n), -EINVAL);
  /* The two stay deadlocked for the life of the process (released, never joined). */
  vmt_thread_release(t1);
  vmt_thread_release(t2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_running_thread_is_walked_by_itself_at_its_poll),
      cmocka_unit_test(a_parked_thread_is_held_while_it_is_walked),
      cmocka_unit_test(a_thread_that_never_polls_is_reported_without_frames),
      cmocka_unit_test(in_native_and_suspended_are_real),
      cmocka_unit_test(without_a_walker_a_running_thread_has_no_frames),
      cmocka_unit_test(replacing_the_walker_from_managed_code_does_not_stall_a_walk),
      cmocka_unit_test(a_dump_at_a_safepoint_is_of_one_instant),
      cmocka_unit_test(the_deadlock_scan_at_a_safepoint_finds_a_real_cycle),
  };
  return cmocka_run_group_tests(tests, mu_attach_main, mu_detach_main);
}
