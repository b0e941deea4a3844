/*
 * test/mx_info_test.c: ThreadInfo (getThreadInfo in its forms, dumpAllThreads), ported from
 * what OpenJDK's ThreadMXBean tests check (ThreadInfoArray, InvalidThreadID, MaxDepthForThreadInfo,
 * Locks, LockedMonitors, LockedSynchronizers, ThreadBlockedCount): invalid input rejected,
 * unknown and terminated elements NULL, every field filled, maxDepth honoured, the lock a
 * BLOCKED thread waits for and its owner, locked monitors and synchronizers, contention times
 * only while monitoring is enabled, and stacks from a registered walker.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "mx_util.h"

#define UNKNOWN_ID 999999

static void invalid_input_is_rejected(void **state) {
  (void)state;
  vmt_thread_info_t *info = (vmt_thread_info_t *)1;
  const int64_t bad[] = {0, -1, INT64_MIN};
  for (int i = 0; i < 3; i++) {
    assert_int_equal(vmt_mx_get_thread_info(bad[i], 0, &info), -EINVAL);
    int64_t ids[2] = {UNKNOWN_ID, bad[i]};
    vmt_thread_info_t **arr = NULL;
    assert_int_equal(vmt_mx_get_thread_info_array(ids, 2, false, false, 0, &arr), -EINVAL);
    assert_null(arr);
  }
  assert_int_equal(vmt_mx_get_thread_info(UNKNOWN_ID, -1, &info), -EINVAL);
  assert_int_equal(vmt_mx_get_thread_info(UNKNOWN_ID, 0, NULL), -EINVAL);
  assert_ptr_equal(info, (vmt_thread_info_t *)1); /* untouched on error */
  vmt_thread_info_t **arr = NULL;
  int64_t one = UNKNOWN_ID;
  assert_int_equal(vmt_mx_get_thread_info_array(NULL, 1, false, false, 0, &arr), -EINVAL);
  assert_int_equal(vmt_mx_get_thread_info_array(&one, 1, false, false, -5, &arr), -EINVAL);
  assert_int_equal(vmt_mx_get_thread_info_array(&one, 1, false, false, 0, NULL), -EINVAL);
  size_t n;
  assert_int_equal(vmt_mx_dump_all_threads(true, true, -1, &arr, &n), -EINVAL);
  assert_int_equal(vmt_mx_dump_all_threads(true, true, 0, NULL, &n), -EINVAL);
  assert_int_equal(vmt_mx_dump_all_threads(true, true, 0, &arr, NULL), -EINVAL);
  vmt_mx_thread_info_free(NULL);
  vmt_mx_thread_info_array_free(NULL, 3);
}

static void unknown_gives_null_and_empty_array_gives_empty_result(void **state) {
  (void)state;
  vmt_thread_info_t *info = (vmt_thread_info_t *)1;
  assert_int_equal(vmt_mx_get_thread_info(UNKNOWN_ID, VMT_MX_MAX_DEPTH_ALL, &info), 0);
  assert_null(info);
  int64_t ids[1] = {UNKNOWN_ID};
  vmt_thread_info_t **arr = NULL;
  assert_int_equal(vmt_mx_get_thread_info_array(ids, 0, true, true, 0, &arr), 0);
  assert_non_null(arr);
  vmt_mx_thread_info_array_free(arr, 0);
}

typedef struct holder {
  gate_t gate;
  vmt_monitor_t *m1, *m2;
  vmt_sync_t *s1;
} holder_t;

/* Takes two monitors (one twice) and a synchronizer, then waits at the gate holding them. */
static void *hold_locks(void *arg) {
  holder_t *h = arg;
  vmt_monitor_enter(h->m1);
  vmt_monitor_enter(h->m2);
  vmt_monitor_enter(h->m2);
  vmt_sync_lock(h->s1);
  gate_pass(&h->gate);
  vmt_sync_unlock(h->s1);
  vmt_monitor_exit(h->m2);
  vmt_monitor_exit(h->m2);
  vmt_monitor_exit(h->m1);
  return NULL;
}

static bool has_lock_named(const vmt_lock_info_t *l, const char *prefix, const char *cls) {
  return strncmp(l->name, prefix, strlen(prefix)) == 0 && l->name[strlen(prefix)] == '@' &&
         strcmp(l->class_name, cls) == 0;
}

static void fields_and_locked_monitors_and_synchronizers(void **state) {
  (void)state;
  holder_t h;
  gate_init(&h.gate);
  assert_int_equal(vmt_monitor_create(&h.m1, "first"), 0);
  assert_int_equal(vmt_monitor_create(&h.m2, "second"), 0);
  assert_int_equal(vmt_sync_create(&h.s1, "sync"), 0);
  vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_NAME | VMT_THREAD_OPT_CATEGORY |
                                     VMT_THREAD_OPT_DAEMON | VMT_THREAD_OPT_PRIORITY,
                            .name = "holder of locks",
                            .category = "gc",
                            .daemon = true,
                            .priority = 7};
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start_ex(&t, &o, hold_locks, &h), 0);
  gate_await(&h.gate, 1);
  int64_t id = vmt_thread_id(t);

  vmt_thread_info_t **arr = NULL;
  assert_int_equal(vmt_mx_get_thread_info_array(&id, 1, true, true, 0, &arr), 0);
  vmt_thread_info_t *ti = arr[0];
  assert_non_null(ti);
  assert_int_equal(ti->id, id);
  assert_string_equal(ti->name, "holder of locks");
  assert_string_equal(ti->category, "gc");
  assert_true(ti->daemon);
  assert_int_equal(ti->priority, 7);
  assert_int_equal(ti->tid, vmt_thread_tid(t));
  assert_int_equal(ti->state, VMT_THREAD_RUNNABLE); /* in pthread_cond_wait: not the runtime's */
  assert_null(ti->lock);
  assert_int_equal(ti->lock_owner_id, -1);
  assert_null(ti->lock_owner_name);
  assert_true(ti->elapsed_ns > 0);
  if (vmt_mx_is_thread_cpu_time_supported()) {
    assert_true(ti->cpu_time_ns >= 0);
    assert_true(ti->user_time_ns >= 0 && ti->user_time_ns <= ti->cpu_time_ns);
  }
  assert_int_equal(ti->frame_count, 0); /* max_depth 0 */
  assert_null(ti->frames);
  /* m2 entered twice is one locked monitor; innermost first. */
  assert_int_equal(ti->locked_monitor_count, 2);
  assert_true(has_lock_named(&ti->locked_monitors[0].lock, "second", "vmt.Monitor"));
  assert_true(has_lock_named(&ti->locked_monitors[1].lock, "first", "vmt.Monitor"));
  assert_int_equal(ti->locked_synchronizer_count, 1);
  assert_true(has_lock_named(&ti->locked_synchronizers[0], "sync", "vmt.Synchronizer"));
  char buf[300];
  vmt_monitor_describe(h.m1, buf, sizeof(buf));
  assert_string_equal(ti->locked_monitors[1].lock.name, buf);
  vmt_mx_thread_info_array_free(arr, 1);

  /* Not asked for: not reported. */
  assert_int_equal(vmt_mx_get_thread_info_array(&id, 1, false, false, 0, &arr), 0);
  assert_int_equal(arr[0]->locked_monitor_count, 0);
  assert_int_equal(arr[0]->locked_synchronizer_count, 0);
  vmt_mx_thread_info_array_free(arr, 1);

  /* The flags form: the same ThreadInfo, and without CPU times when asked (Java's has none). */
  assert_int_equal(vmt_mx_get_thread_info_array_ex(&id, 1,
                                                   VMT_MX_INFO_LOCKED_MONITORS |
                                                       VMT_MX_INFO_LOCKED_SYNCHRONIZERS |
                                                       VMT_MX_INFO_NO_CPU_TIME,
                                                   0, &arr), 0);
  ti = arr[0];
  assert_non_null(ti);
  assert_string_equal(ti->name, "holder of locks");
  assert_string_equal(ti->category, "gc");
  assert_int_equal(ti->tid, vmt_thread_tid(t));
  assert_int_equal(ti->cpu_time_ns, -1);
  assert_int_equal(ti->user_time_ns, -1);
  assert_int_equal(ti->locked_monitor_count, 2);
  assert_int_equal(ti->locked_synchronizer_count, 1);
  vmt_mx_thread_info_array_free(arr, 1);
  assert_int_equal(vmt_mx_get_thread_info_array_ex(&id, 1, 0, 0, &arr), 0);
  assert_int_equal(arr[0]->locked_monitor_count, 0);
  if (vmt_mx_is_thread_cpu_time_supported())
    assert_true(arr[0]->user_time_ns >= 0 && arr[0]->user_time_ns <= arr[0]->cpu_time_ns);
  vmt_mx_thread_info_array_free(arr, 1);
  size_t all = 0;
  assert_int_equal(vmt_mx_dump_all_threads_ex(VMT_MX_INFO_NO_CPU_TIME, 0, &arr, &all), 0);
  bool seen = false;
  for (size_t i = 0; i < all; i++) {
    assert_int_equal(arr[i]->cpu_time_ns, -1);
    seen |= arr[i]->id == id;
  }
  assert_true(seen);
  vmt_mx_thread_info_array_free(arr, all);

  gate_open(&h.gate);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  vmt_thread_info_t *gone = (vmt_thread_info_t *)1;
  assert_int_equal(vmt_mx_get_thread_info(id, 5, &gone), 0);
  assert_null(gone); /* terminated */
  vmt_thread_release(t);
  vmt_monitor_destroy(h.m1);
  vmt_monitor_destroy(h.m2);
  vmt_sync_destroy(h.s1);
  gate_destroy(&h.gate);
}

static void blocked_thread_reports_lock_owner_and_contention(void **state) {
  (void)state;
  vmt_thread_t *self;
  assert_int_equal(vmt_thread_attach(NULL, &self), 0);
  assert_false(vmt_mx_is_thread_contention_monitoring_enabled()); /* off by default */
  assert_true(vmt_mx_is_thread_contention_monitoring_supported());
  vmt_monitor_t *m;
  assert_int_equal(vmt_monitor_create(&m, "contended"), 0);

  for (int enabled = 0; enabled < 2; enabled++) {
    assert_int_equal(vmt_mx_set_thread_contention_monitoring_enabled(enabled), 0);
    assert_int_equal(vmt_mx_is_thread_contention_monitoring_enabled(), (bool)enabled);
    assert_int_equal(vmt_monitor_enter(m), 0);
    vmt_thread_t *t = start_named("blocked one", false, enter_and_leave, m);
    assert_true(await_state(t, VMT_THREAD_BLOCKED));
    int64_t ids[3] = {vmt_thread_id(t), UNKNOWN_ID, vmt_thread_id(self)};
    vmt_thread_info_t **arr;
    assert_int_equal(vmt_mx_get_thread_info_array(ids, 3, false, false, 0, &arr), 0);
    vmt_thread_info_t *ti = arr[0];
    assert_non_null(ti);
    assert_null(arr[1]);
    assert_non_null(arr[2]);
    assert_int_equal(arr[2]->id, vmt_thread_id(self));
    assert_int_equal(ti->state, VMT_THREAD_BLOCKED);
    assert_non_null(ti->lock);
    assert_true(has_lock_named(ti->lock, "contended", "vmt.Monitor"));
    assert_int_equal(ti->lock_owner_id, vmt_thread_id(self));
    assert_string_equal(ti->lock_owner_name, vmt_thread_name(self));
    assert_true(ti->blocked_count >= 1);
    if (enabled)
      assert_true(ti->blocked_time_ns >= 0);
    else
      assert_int_equal(ti->blocked_time_ns, -1);
    vmt_mx_thread_info_array_free(arr, 3);
    assert_int_equal(vmt_monitor_exit(m), 0);
    assert_int_equal(vmt_thread_join(t, NULL), 0);
    vmt_thread_release(t);
  }
  assert_int_equal(vmt_mx_set_thread_contention_monitoring_enabled(false), 0);
  vmt_monitor_destroy(m);
  assert_int_equal(vmt_thread_detach(), 0);
}

static void waiting_thread_reports_monitor_and_waited_count(void **state) {
  (void)state;
  waiter_t w = {.notified = false};
  assert_int_equal(vmt_monitor_create(&w.m, "waited-on"), 0);
  vmt_thread_t *t = start_named("waiter", false, wait_on_monitor, &w);
  assert_true(await_state(t, VMT_THREAD_WAITING));
  vmt_thread_info_t *ti;
  assert_int_equal(vmt_mx_get_thread_info(vmt_thread_id(t), 0, &ti), 0);
  assert_int_equal(ti->state, VMT_THREAD_WAITING);
  assert_non_null(ti->lock);
  assert_true(has_lock_named(ti->lock, "waited-on", "vmt.Monitor"));
  assert_int_equal(ti->lock_owner_id, -1); /* wait released it: nobody owns it */
  assert_null(ti->lock_owner_name);
  assert_true(ti->waited_count >= 1);
  assert_int_equal(ti->waited_time_ns, -1); /* contention monitoring is off */
  assert_int_equal(ti->blocked_count, 0);
  vmt_mx_thread_info_free(ti);
  /* Not locked while waiting: wait released it. */
  int64_t id = vmt_thread_id(t);
  vmt_thread_info_t **arr;
  assert_int_equal(vmt_mx_get_thread_info_array(&id, 1, true, true, 0, &arr), 0);
  assert_int_equal(arr[0]->locked_monitor_count, 0);
  vmt_mx_thread_info_array_free(arr, 1);

  waiter_release(&w);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  vmt_thread_release(t);
  assert_int_equal(vmt_monitor_destroy(w.m), 0);
}

static void *park_forever(void *arg) {
  _Atomic bool *stop = arg;
  while (!atomic_load(stop)) vmt_park(0);
  return NULL;
}

static void parked_thread_is_waiting_without_lock(void **state) {
  (void)state;
  _Atomic bool stop = false;
  vmt_thread_t *t = start_named("parker", false, park_forever, &stop);
  assert_true(await_state(t, VMT_THREAD_WAITING));
  vmt_thread_info_t *ti;
  assert_int_equal(vmt_mx_get_thread_info(vmt_thread_id(t), 0, &ti), 0);
  assert_int_equal(ti->state, VMT_THREAD_WAITING);
  assert_null(ti->lock);
  vmt_mx_thread_info_free(ti);
  atomic_store(&stop, true);
  vmt_unpark(t);
  vmt_thread_join(t, NULL);
  vmt_thread_release(t);
}

static __attribute__((noinline)) int own_info_depth(int32_t depth, vmt_thread_info_t **ti) {
  int rc = vmt_mx_get_thread_info(vmt_thread_id(vmt_thread_current()), depth, ti);
  __asm__ __volatile__("" ::: "memory"); /* not a tail call: this frame must exist */
  return rc;
}

static void own_native_frames_and_max_depth(void **state) {
  (void)state;
  vmt_thread_t *self;
  assert_int_equal(vmt_thread_attach(NULL, &self), 0);
  vmt_thread_info_t *ti;
  assert_int_equal(own_info_depth(0, &ti), 0);
  assert_int_equal(ti->frame_count, 0);
  vmt_mx_thread_info_free(ti);

  assert_int_equal(own_info_depth(VMT_MX_MAX_DEPTH_ALL, &ti), 0);
  size_t all = ti->frame_count;
  /* The first frame is the caller's (own_info_depth here), not the runtime's own. */
  assert_true(all >= 2);
  uintptr_t top = ti->frames[0].pc;
  assert_true(top >= (uintptr_t)own_info_depth && top < (uintptr_t)own_info_depth + 1024);
  for (size_t i = 0; i < all; i++) {
    assert_non_null(ti->frames[i].function);
    assert_int_equal(ti->frames[i].line, -1);
  }
  vmt_mx_thread_info_free(ti);

  assert_int_equal(own_info_depth(1, &ti), 0);
  assert_int_equal(ti->frame_count, 1);
  assert_true(ti->frames[0].pc == top);
  vmt_mx_thread_info_free(ti);
  assert_int_equal(vmt_thread_detach(), 0);
}

static void other_threads_have_no_native_frames(void **state) {
  (void)state;
  gate_t g;
  vmt_thread_t *t = start_gated(&g, "other", false);
  vmt_thread_info_t *ti;
  assert_int_equal(vmt_mx_get_thread_info(vmt_thread_id(t), VMT_MX_MAX_DEPTH_ALL, &ti), 0);
  assert_int_equal(ti->frame_count, 0);
  vmt_mx_thread_info_free(ti);
  finish_gated(&g, t);
}

/* A VM's walker: `depth` frames named after the thread, or an error for "fail". */
typedef struct walk_ctx {
  int depth;
  int calls;
  char names[200][32];
} walk_ctx_t;

static int fake_walker(vmt_thread_t *t, vmt_stack_frame_t *frames, int32_t max, void *arg) {
  walk_ctx_t *c = arg;
  c->calls++;
  if (strcmp(vmt_thread_name(t), "fail") == 0) return -EFAULT;
  int n = c->depth < max ? c->depth : max;
  for (int i = 0; i < n; i++) {
    snprintf(c->names[i], sizeof(c->names[i]), "vm.Method%d", i);
    frames[i].function = c->names[i];
    frames[i].file = i % 2 ? NULL : "Vm.java";
    frames[i].line = i;
    frames[i].pc = 0;
  }
  return n;
}

static void registered_walker_supplies_frames(void **state) {
  (void)state;
  static walk_ctx_t ctx;
  ctx.depth = 150; /* deeper than the first buffer the runtime offers */
  vmt_mx_set_stack_walker(fake_walker, &ctx);
  gate_t g;
  gate_init(&g);
  vmt_thread_t *t = start_named("walked", false, gate_body, &g);
  vmt_thread_t *f = start_named("fail", false, gate_body, &g);
  gate_await(&g, 2);
  int64_t ids[2] = {vmt_thread_id(t), vmt_thread_id(f)};
  vmt_thread_info_t **arr;
  assert_int_equal(vmt_mx_get_thread_info_array(ids, 2, false, false, VMT_MX_MAX_DEPTH_ALL, &arr),
                   0);
  assert_int_equal(arr[0]->frame_count, 150);
  for (int i = 0; i < 150; i++) {
    char want[32];
    snprintf(want, sizeof(want), "vm.Method%d", i);
    assert_string_equal(arr[0]->frames[i].function, want);
    assert_true(arr[0]->frames[i].function != ctx.names[i]); /* a copy */
    assert_int_equal(arr[0]->frames[i].line, i);
    if (i % 2)
      assert_null(arr[0]->frames[i].file);
    else
      assert_string_equal(arr[0]->frames[i].file, "Vm.java");
  }
  assert_int_equal(arr[1]->frame_count, 0); /* the walker failed for this one */
  vmt_mx_thread_info_array_free(arr, 2);

  assert_int_equal(vmt_mx_get_thread_info_array(ids, 1, false, false, 3, &arr), 0);
  assert_int_equal(arr[0]->frame_count, 3);
  vmt_mx_thread_info_array_free(arr, 1);
  int calls = ctx.calls;
  assert_int_equal(vmt_mx_get_thread_info_array(ids, 1, false, false, 0, &arr), 0);
  assert_int_equal(arr[0]->frame_count, 0);
  assert_int_equal(ctx.calls, calls); /* depth 0: the walker is not even asked */
  vmt_mx_thread_info_array_free(arr, 1);

  vmt_mx_set_stack_walker(NULL, NULL);
  gate_open(&g);
  vmt_thread_join(t, NULL);
  vmt_thread_join(f, NULL);
  vmt_thread_release(t);
  vmt_thread_release(f);
  gate_destroy(&g);
}

/* A walker that knows its frames' lock records: frame 2 entered "first", frames 0 and 1 both
 * hold "second" (re-entered one frame down); it also tries reports the runtime must refuse. */
typedef struct lock_walk {
  holder_t *h;
  int rc_outside_frame, rc_null, rc_dead;
} lock_walk_t;

static int locking_walker(vmt_thread_t *t, vmt_stack_frame_t *frames, int32_t max, void *arg) {
  lock_walk_t *w = arg;
  (void)t;
  static const char *names[] = {"vm.Inner.run", "vm.Middle.run", "vm.Outer.run"};
  int n = max < 3 ? max : 3;
  for (int i = 0; i < n; i++)
    frames[i] = (vmt_stack_frame_t){(char *)names[i], (char *)"Vm.java", 10 + i, 0};
  if (n == 3) vmt_mx_frame_holds_monitor(2, w->h->m1);
  vmt_mx_frame_holds_monitor(0, w->h->m2);
  if (n >= 2) vmt_mx_frame_holds_monitor(1, w->h->m2);
  w->rc_outside_frame = vmt_mx_frame_holds_monitor(max, w->h->m1);
  w->rc_null = vmt_mx_frame_holds_monitor(0, NULL);
  w->rc_dead = vmt_mx_frame_holds_monitor(0, (vmt_monitor_t *)w->h->s1); /* not a monitor */
  return n;
}

static int32_t depth_of(const vmt_thread_info_t *ti, vmt_monitor_t *m) {
  char name[300];
  vmt_monitor_describe(m, name, sizeof(name));
  for (size_t i = 0; i < ti->locked_monitor_count; i++)
    if (strcmp(ti->locked_monitors[i].lock.name, name) == 0)
      return ti->locked_monitors[i].stack_depth;
  return -100; /* not held */
}

/* MonitorInfo's lockedStackDepth (ThreadInfo.toString and jstack print each held lock under
 * the frame that took it): the frame the walker names, the outermost of several, else 0 when
 * there are frames, else -1. */
static void walker_reports_the_frames_that_hold_monitors(void **state) {
  (void)state;
  assert_int_equal(vmt_mx_frame_holds_monitor(0, NULL), -EPERM); /* not in a walker */
  holder_t h;
  gate_init(&h.gate);
  assert_int_equal(vmt_monitor_create(&h.m1, "first"), 0);
  assert_int_equal(vmt_monitor_create(&h.m2, "second"), 0);
  assert_int_equal(vmt_sync_create(&h.s1, "sync"), 0);
  vmt_thread_t *t = start_named("holder", false, hold_locks, &h);
  gate_await(&h.gate, 1);
  int64_t id = vmt_thread_id(t);
  vmt_thread_info_t **arr;

  /* No walker: another thread has no frames, so no depth is known. */
  assert_int_equal(vmt_mx_get_thread_info_array(&id, 1, true, false, VMT_MX_MAX_DEPTH_ALL, &arr),
                   0);
  assert_int_equal(arr[0]->frame_count, 0);
  assert_int_equal(depth_of(arr[0], h.m1), -1);
  assert_int_equal(depth_of(arr[0], h.m2), -1);
  vmt_mx_thread_info_array_free(arr, 1);

  lock_walk_t w = {.h = &h};
  vmt_mx_set_stack_walker(locking_walker, &w);
  assert_int_equal(vmt_mx_get_thread_info_array(&id, 1, true, true, VMT_MX_MAX_DEPTH_ALL, &arr),
                   0);
  assert_int_equal(arr[0]->frame_count, 3);
  assert_int_equal(depth_of(arr[0], h.m1), 2);
  assert_int_equal(depth_of(arr[0], h.m2), 1); /* reported at 0 and 1: the outermost */
  assert_int_equal(arr[0]->locked_synchronizer_count, 1);
  vmt_mx_thread_info_array_free(arr, 1);
  assert_int_equal(w.rc_outside_frame, -EINVAL);
  assert_int_equal(w.rc_null, -EINVAL);
  assert_int_equal(w.rc_dead, -EINVAL);

  /* Cut to 2 frames: "first" was reported for no frame that is returned, so it falls back to
   * the top frame; "second" keeps frame 1. */
  assert_int_equal(vmt_mx_get_thread_info_array(&id, 1, true, false, 2, &arr), 0);
  assert_int_equal(arr[0]->frame_count, 2);
  assert_int_equal(depth_of(arr[0], h.m1), 0);
  assert_int_equal(depth_of(arr[0], h.m2), 1);
  vmt_mx_thread_info_array_free(arr, 1);
  vmt_mx_set_stack_walker(NULL, NULL);

  /* The calling thread without a walker: its native frames, and the top one holds what it
   * holds. */
  vmt_thread_t *me;
  assert_int_equal(vmt_thread_attach(NULL, &me), 0);
  vmt_monitor_t *mine;
  assert_int_equal(vmt_monitor_create(&mine, "mine"), 0);
  assert_int_equal(vmt_monitor_enter(mine), 0);
  int64_t self = vmt_thread_id(me);
  assert_int_equal(
      vmt_mx_get_thread_info_array(&self, 1, true, false, VMT_MX_MAX_DEPTH_ALL, &arr), 0);
  assert_true(arr[0]->frame_count > 0);
  assert_int_equal(depth_of(arr[0], mine), 0);
  vmt_mx_thread_info_array_free(arr, 1);
  assert_int_equal(vmt_monitor_exit(mine), 0);
  assert_int_equal(vmt_monitor_destroy(mine), 0);
  assert_int_equal(vmt_thread_detach(), 0);

  gate_open(&h.gate);
  vmt_thread_join(t, NULL);
  vmt_thread_release(t);
  vmt_monitor_destroy(h.m1);
  vmt_monitor_destroy(h.m2);
  vmt_sync_destroy(h.s1);
  gate_destroy(&h.gate);
}

static void dump_all_lists_every_live_thread(void **state) {
  (void)state;
  gate_t g;
  gate_init(&g);
  vmt_thread_t *t[4];
  for (int i = 0; i < 4; i++) t[i] = start_named("dumped", i & 1, gate_body, &g);
  gate_await(&g, 4);
  vmt_thread_info_t **arr;
  size_t n;
  assert_int_equal(vmt_mx_dump_all_threads(true, true, VMT_MX_MAX_DEPTH_ALL, &arr, &n), 0);
  int64_t *ids;
  size_t nids;
  assert_int_equal(vmt_mx_get_all_thread_ids(&ids, &nids), 0);
  assert_int_equal(n, nids);
  for (size_t i = 0; i < n; i++) {
    assert_non_null(arr[i]);
    assert_int_equal(arr[i]->id, ids[i]); /* both ascending by id */
  }
  for (int i = 0; i < 4; i++) assert_true(ids_contain(ids, nids, vmt_thread_id(t[i])));
  vmt_mx_ids_free(ids);
  vmt_mx_thread_info_array_free(arr, n);
  gate_open(&g);
  for (int i = 0; i < 4; i++) {
    vmt_thread_join(t[i], NULL);
    vmt_thread_release(t[i]);
  }
  gate_destroy(&g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(invalid_input_is_rejected),
      cmocka_unit_test(unknown_gives_null_and_empty_array_gives_empty_result),
      cmocka_unit_test(fields_and_locked_monitors_and_synchronizers),
      cmocka_unit_test(blocked_thread_reports_lock_owner_and_contention),
      cmocka_unit_test(waiting_thread_reports_monitor_and_waited_count),
      cmocka_unit_test(parked_thread_is_waiting_without_lock),
      cmocka_unit_test(own_native_frames_and_max_depth),
      cmocka_unit_test(other_threads_have_no_native_frames),
      cmocka_unit_test(registered_walker_supplies_frames),
      cmocka_unit_test(walker_reports_the_frames_that_hold_monitors),
      cmocka_unit_test(dump_all_lists_every_live_thread),
  };
  return cmocka_run_group_tests_name("mx_info", tests, NULL, NULL);
}
