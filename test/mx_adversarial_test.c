/*
 * test/mx_adversarial_test.c: the management API and the profiler against OpenJDK's
 * ThreadMXBean test semantics (test/jdk/java/lang/management/ThreadMXBean), on the edges an
 * outside tester probes: ids that repeat, are dead, unknown or invalid, in array forms that cross
 * the sweeps' chunks; switches turned off and on; counts across thread churn; deadlock cycles
 * next to waits that are none; and the profiler's argument and life-cycle rules. Every check is
 * a contract, never a timing. The main thread is attached; the deadlock cases run last (their
 * threads are never released) and an alarm ends a hung run.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "mx_util.h"
#include "monitor_util.h"

#define UNKNOWN_ID INT64_MAX

static void *noop_body(void *arg) {
  (void)arg;
  return NULL;
}

/* A thread that ran and was joined: its id is dead. */
static int64_t ended_id(void) {
  vmt_thread_t *t = start_named("adv-dead", false, noop_body, NULL);
  assert_non_null(t);
  int64_t id = vmt_thread_id(t);
  vmt_thread_join(t, NULL);
  vmt_thread_release(t);
  return id;
}

/* ---- InvalidThreadID / ThreadCpuTime: ids that repeat, across sweep chunks ---------------- */

/* getThreadCpuTime(long[]) with 200 ids (more than one 64-id chunk): the calling thread, a live
 * gated thread, a dead and an unknown id, repeated and unsorted. Each element answers for its
 * own id only: -1 for dead and unknown, a time for the live ones; user time likewise and
 * never above the CPU time read after it. */
static void cpu_time_arrays_answer_each_element_for_its_own_id(void **state) {
  (void)state;
  gate_t g;
  vmt_thread_t *t = start_gated(&g, "adv-live", false);
  int64_t live = vmt_thread_id(t), self = vmt_thread_id(vmt_thread_current());
  int64_t dead = ended_id();
  enum { N = 200 };
  int64_t ids[N], cpu[N], user[N];
  for (size_t i = 0; i < N; i++) {
    switch (i % 5) {
      case 0: ids[i] = self; break;
      case 1: ids[i] = dead; break;
      case 2: ids[i] = live; break;
      case 3: ids[i] = UNKNOWN_ID; break;
      default: ids[i] = (i & 1) ? self : live; break;
    }
  }
  assert_int_equal(vmt_mx_get_thread_user_time_array(ids, N, user), 0);
  assert_int_equal(vmt_mx_get_thread_cpu_time_array(ids, N, cpu), 0);
  for (size_t i = 0; i < N; i++) {
    if (ids[i] == dead || ids[i] == UNKNOWN_ID) {
      assert_int_equal(cpu[i], -1);
      assert_int_equal(user[i], -1);
    } else {
      assert_true(cpu[i] >= 0);
      assert_true(user[i] >= 0);
      assert_true(user[i] <= cpu[i]);
    }
  }
  int64_t one;
  assert_int_equal(vmt_mx_get_thread_cpu_time(dead, &one), 0);
  assert_int_equal(one, -1);
  assert_int_equal(vmt_mx_get_thread_user_time(dead, &one), 0);
  assert_int_equal(one, -1);
  /* One invalid element makes the whole call illegal (Java checks ids before anything). */
  ids[N - 1] = 0;
  assert_int_equal(vmt_mx_get_thread_cpu_time_array(ids, N, cpu), -EINVAL);
  ids[N - 1] = INT64_MIN;
  assert_int_equal(vmt_mx_get_thread_user_time_array(ids, N, user), -EINVAL);
  assert_int_equal(vmt_mx_get_thread_cpu_time(-1, &one), -EINVAL);
  assert_int_equal(vmt_mx_get_thread_user_time(0, &one), -EINVAL);
  finish_gated(&g, t);
}

/* ThreadCpuTime: disabled, every form answers -1; enabled again, times resume and never go
 * below what was read before the switch. */
static void cpu_time_disabled_then_enabled_resumes_monotonic(void **state) {
  (void)state;
  gate_t g;
  vmt_thread_t *t = start_gated(&g, "adv-cpu", false);
  int64_t id = vmt_thread_id(t), self = vmt_thread_id(vmt_thread_current());
  int64_t before_self, before_t, v;
  assert_int_equal(vmt_mx_get_thread_cpu_time(self, &before_self), 0);
  assert_int_equal(vmt_mx_get_thread_cpu_time(id, &before_t), 0);
  assert_true(before_self >= 0 && before_t >= 0);
  assert_int_equal(vmt_mx_set_thread_cpu_time_enabled(false), 0);
  assert_int_equal(vmt_mx_get_current_thread_cpu_time(&v), 0);
  assert_int_equal(v, -1);
  assert_int_equal(vmt_mx_get_current_thread_user_time(&v), 0);
  assert_int_equal(v, -1);
  assert_int_equal(vmt_mx_get_thread_cpu_time(id, &v), 0);
  assert_int_equal(v, -1);
  assert_int_equal(vmt_mx_get_thread_user_time(self, &v), 0);
  assert_int_equal(v, -1);
  vmt_thread_info_t *info = mu_info_of(id, 0);
  assert_non_null(info);
  assert_int_equal(info->cpu_time_ns, -1);
  assert_int_equal(info->user_time_ns, -1);
  vmt_mx_thread_info_free(info);
  vmt_category_usage_t *u;
  size_t n;
  assert_int_equal(vmt_mx_get_category_usage(&u, &n), 0);
  for (size_t i = 0; i < n; i++) assert_int_equal(u[i].cpu_time_ns, -1);
  vmt_mx_category_usage_free(u);
  assert_int_equal(vmt_mx_set_thread_cpu_time_enabled(true), 0);
  burn_cpu_ms(5);
  assert_int_equal(vmt_mx_get_thread_cpu_time(self, &v), 0);
  assert_true(v >= before_self);
  assert_int_equal(vmt_mx_get_thread_cpu_time(id, &v), 0);
  assert_true(v >= before_t);
  finish_gated(&g, t);
}

/* ---- ThreadInfoArray / MaxDepth / InvalidThreadID ----------------------------------------- */

static void info_arrays_with_repeated_dead_and_unknown_ids(void **state) {
  (void)state;
  gate_t g;
  vmt_thread_t *t = start_gated(&g, "adv-info", false);
  int64_t live = vmt_thread_id(t), self = vmt_thread_id(vmt_thread_current());
  int64_t dead = ended_id();
  int64_t ids[] = {live, dead, self, live, UNKNOWN_ID, self, dead, live};
  size_t n = sizeof(ids) / sizeof(ids[0]);
  vmt_thread_info_t **infos;
  int32_t depths[] = {0, 1, 7, VMT_MX_MAX_DEPTH_ALL};
  for (size_t d = 0; d < sizeof(depths) / sizeof(depths[0]); d++) {
    assert_int_equal(vmt_mx_get_thread_info_array(ids, n, true, true, depths[d], &infos), 0);
    for (size_t i = 0; i < n; i++) {
      if (ids[i] == dead || ids[i] == UNKNOWN_ID) {
        assert_null(infos[i]);
        continue;
      }
      assert_non_null(infos[i]);
      assert_int_equal(infos[i]->id, ids[i]);
      assert_true(infos[i]->frame_count <= (size_t)depths[d]);
      if (depths[d] == 0) assert_null(infos[i]->frames);
    }
    vmt_mx_thread_info_array_free(infos, n);
  }
  /* A negative depth or an invalid id anywhere: IllegalArgumentException, nothing returned. */
  infos = (vmt_thread_info_t **)1;
  assert_int_equal(vmt_mx_get_thread_info_array(ids, n, false, false, -1, &infos), -EINVAL);
  assert_int_equal(vmt_mx_get_thread_info_array(ids, n, false, false, INT32_MIN, &infos),
                   -EINVAL);
  int64_t bad[] = {live, -5};
  assert_int_equal(vmt_mx_get_thread_info_array(bad, 2, false, false, 0, &infos), -EINVAL);
  assert_ptr_equal(infos, (vmt_thread_info_t **)1);
  vmt_thread_info_t *one = (vmt_thread_info_t *)1;
  assert_int_equal(vmt_mx_get_thread_info(live, -1, &one), -EINVAL);
  assert_int_equal(vmt_mx_get_thread_info(0, 0, &one), -EINVAL);
  assert_null(mu_info_of(dead, 0));
  assert_null(mu_info_of(UNKNOWN_ID, VMT_MX_MAX_DEPTH_ALL));
  size_t count;
  assert_int_equal(vmt_mx_dump_all_threads(false, false, -1, &infos, &count), -EINVAL);
  /* The calling thread's own stack with the largest depth: some frames, never more than asked. */
  one = mu_info_of(self, VMT_MX_MAX_DEPTH_ALL);
  assert_non_null(one);
  assert_true(one->frame_count > 0);
  vmt_mx_thread_info_free(one);
  one = mu_info_of(self, 1);
  assert_true(one->frame_count <= 1);
  vmt_mx_thread_info_free(one);
  finish_gated(&g, t);
}

/* ---- ThreadCounts / ResetPeakThreadCount / AllThreadIds ----------------------------------- */

static void counts_across_churn_and_peak_reset(void **state) {
  (void)state;
  int32_t live0 = vmt_mx_get_thread_count(), daemon0 = vmt_mx_get_daemon_thread_count();
  int64_t started0 = vmt_mx_get_total_started_thread_count();
  enum { K = 6 };
  gate_t g;
  gate_init(&g);
  vmt_thread_t *ts[K];
  for (int i = 0; i < K; i++) {
    ts[i] = start_named("adv-count", i % 2 == 0, gate_body, &g);
    assert_non_null(ts[i]);
  }
  gate_await(&g, K);
  assert_int_equal(vmt_mx_get_thread_count(), live0 + K);
  assert_int_equal(vmt_mx_get_daemon_thread_count(), daemon0 + K / 2);
  assert_true(vmt_mx_get_peak_thread_count() >= live0 + K);
  int64_t *ids;
  size_t n;
  assert_int_equal(vmt_mx_get_all_thread_ids(&ids, &n), 0);
  assert_int_equal(n, (size_t)(live0 + K));
  for (int i = 0; i < K; i++) assert_true(ids_contain(ids, n, vmt_thread_id(ts[i])));
  for (size_t i = 1; i < n; i++) assert_true(ids[i - 1] < ids[i]);
  vmt_mx_ids_free(ids);
  gate_open(&g);
  for (int i = 0; i < K; i++) {
    vmt_thread_join(ts[i], NULL);
    vmt_thread_release(ts[i]);
  }
  gate_destroy(&g);
  assert_int_equal(vmt_mx_get_thread_count(), live0);
  assert_int_equal(vmt_mx_get_daemon_thread_count(), daemon0);
  /* Ended threads stay in the started total. */
  assert_int_equal(vmt_mx_get_total_started_thread_count(), started0 + K);
  /* resetPeakThreadCount: the peak becomes the live count, then follows new starts. */
  vmt_mx_reset_peak_thread_count();
  assert_int_equal(vmt_mx_get_peak_thread_count(), live0);
  gate_t g2;
  vmt_thread_t *t = start_gated(&g2, "adv-peak", false);
  assert_int_equal(vmt_mx_get_peak_thread_count(), live0 + 1);
  finish_gated(&g2, t);
  assert_int_equal(vmt_mx_get_peak_thread_count(), live0 + 1);
  vmt_mx_reset_peak_thread_count();
  assert_int_equal(vmt_mx_get_peak_thread_count(), live0);
  assert_int_equal(vmt_mx_get_total_started_thread_count(), started0 + K + 1);
}

/* A thread attached and detached: its id is dead afterwards (null, -1), never another's. */
typedef struct attach_probe {
  int64_t id;
} attach_probe_t;

static void *attach_detach(void *arg) {
  attach_probe_t *p = arg;
  vmt_thread_t *me = NULL;
  if (vmt_thread_attach(NULL, &me) == 0) {
    p->id = vmt_thread_id(me);
    vmt_thread_detach();
  }
  return NULL;
}

static void detached_thread_id_is_dead(void **state) {
  (void)state;
  int64_t started0 = vmt_mx_get_total_started_thread_count();
  attach_probe_t p = {0};
  pthread_t pt;
  assert_int_equal(pthread_create(&pt, NULL, attach_detach, &p), 0);
  pthread_join(pt, NULL);
  assert_true(p.id > 0);
  assert_int_equal(vmt_mx_get_total_started_thread_count(), started0 + 1);
  assert_null(mu_info_of(p.id, 0));
  int64_t v;
  assert_int_equal(vmt_mx_get_thread_cpu_time(p.id, &v), 0);
  assert_int_equal(v, -1);
  assert_int_equal(vmt_mx_get_thread_user_time(p.id, &v), 0);
  assert_int_equal(v, -1);
  if (vmt_mx_is_thread_allocated_memory_supported()) {
    assert_int_equal(vmt_mx_get_thread_allocated_bytes(p.id, &v), 0);
    assert_int_equal(v, -1);
  }
}

/* A pthread that burns CPU, attaches in its own category, reports its id and its own CPU clock
 * just before and just after the attach, then waits. */
typedef struct pre_burn {
  gate_t g;
  int64_t id;
  int64_t before_ns, after_ns;
} pre_burn_t;

static void *burn_then_attach(void *arg) {
  pre_burn_t *p = arg;
  burn_cpu_ms(80);
  vmt_thread_options_t o;
  memset(&o, 0, sizeof(o));
  o.flags = VMT_THREAD_OPT_CATEGORY;
  o.category = "adv-attached";
  vmt_thread_t *me = NULL;
  p->before_ns = test_clock_ns(CLOCK_THREAD_CPUTIME_ID);
  int rc = vmt_thread_attach(&o, &me);
  p->after_ns = test_clock_ns(CLOCK_THREAD_CPUTIME_ID);
  if (rc == 0) p->id = vmt_thread_id(me);
  gate_pass(&p->g);
  vmt_thread_detach();
  return NULL;
}

/* vmt_mx_get_category_usage: an attached thread's share of its category is its
 * vmt_mx_get_thread_cpu_time less its CPU time at the attach; the per-thread time is the
 * thread's whole clock (Java's, for a JNI-attached thread). The header said before that the
 * two agree, which an 80 ms burn before the attach showed false (own 80 ms, category 0.05). */
static void category_time_agrees_with_an_attached_threads_time(void **state) {
  (void)state;
  if (!vmt_mx_is_thread_cpu_time_supported()) skip();
  pre_burn_t p = {.id = 0};
  gate_init(&p.g);
  pthread_t pt;
  assert_int_equal(pthread_create(&pt, NULL, burn_then_attach, &p), 0);
  gate_await(&p.g, 1);
  assert_true(p.id > 0);
  int64_t own1, own2;
  assert_int_equal(vmt_mx_get_thread_cpu_time(p.id, &own1), 0);
  vmt_category_usage_t *u;
  size_t n;
  assert_int_equal(vmt_mx_get_category_usage(&u, &n), 0);
  assert_int_equal(vmt_mx_get_thread_cpu_time(p.id, &own2), 0);
  int64_t cat = -2;
  for (size_t i = 0; i < n; i++)
    if (strcmp(u[i].name, "adv-attached") == 0) cat = u[i].cpu_time_ns;
  vmt_mx_category_usage_free(u);
  gate_open(&p.g);
  pthread_join(pt, NULL);
  gate_destroy(&p.g);
  /* The whole clock, pre-attach burn included, per thread; the share since the attach in the
   * category: own - (CPU at attach), which lies between the two reads around the attach. */
  assert_true(own1 >= p.before_ns);
  assert_true(cat >= own1 - p.after_ns);
  assert_true(cat <= own2 - p.before_ns);
}

/* ---- SynchronizationStatistics / ThreadBlockedCount / Locks ------------------------------- */

static void blocked_counts_kept_while_monitoring_is_off_and_lock_fields(void **state) {
  (void)state;
  bool was = vmt_mx_is_thread_contention_monitoring_enabled();
  assert_int_equal(vmt_mx_set_thread_contention_monitoring_enabled(false), 0);
  vmt_monitor_t *m;
  assert_int_equal(vmt_monitor_create(&m, "adv-lock"), 0);
  int64_t self = vmt_thread_id(vmt_thread_current());
  for (int round = 0; round < 3; round++) {
    vmt_monitor_enter(m);
    vmt_thread_t *t = start_named("adv-blocked", false, enter_and_leave, m);
    int64_t id = vmt_thread_id(t);
    vmt_thread_info_t *info = mu_await_info_state(id, VMT_THREAD_BLOCKED);
    assert_non_null(info->lock);
    assert_int_equal(info->lock_owner_id, self);
    assert_non_null(info->lock_owner_name);
    assert_int_equal(info->blocked_time_ns, -1);
    assert_int_equal(info->waited_time_ns, -1);
    vmt_mx_thread_info_free(info);
    vmt_monitor_exit(m);
    /* After the release: the thread ran on, never blocked on m again. Its count is kept. */
    vmt_thread_join(t, NULL);
    vmt_thread_release(t);
  }
  vmt_monitor_destroy(m);
  assert_int_equal(vmt_mx_set_thread_contention_monitoring_enabled(was), 0);
}

typedef struct blocker3 {
  vmt_monitor_t *m;
  gate_t g;
} blocker3_t;

static void *block_three_times(void *arg) {
  blocker3_t *b = arg;
  for (int i = 0; i < 3; i++) {
    gate_pass(&b->g);
    vmt_monitor_enter(b->m);
    vmt_monitor_exit(b->m);
  }
  gate_pass(&b->g);
  return NULL;
}

static void blocked_count_is_counted_with_monitoring_off(void **state) {
  (void)state;
  bool was = vmt_mx_is_thread_contention_monitoring_enabled();
  assert_int_equal(vmt_mx_set_thread_contention_monitoring_enabled(false), 0);
  blocker3_t b;
  gate_init(&b.g);
  assert_int_equal(vmt_monitor_create(&b.m, "adv-three"), 0);
  vmt_thread_t *t = start_named("adv-three", false, block_three_times, &b);
  int64_t id = vmt_thread_id(t);
  for (int i = 0; i < 3; i++) {
    gate_await(&b.g, i + 1);
    vmt_monitor_enter(b.m);
    gate_open(&b.g);
    vmt_mx_thread_info_free(mu_await_info_state(id, VMT_THREAD_BLOCKED));
    vmt_monitor_exit(b.m);
  }
  gate_await(&b.g, 4);
  vmt_thread_info_t *info = mu_info_of(id, 0);
  assert_non_null(info);
  assert_int_equal(info->blocked_count, 3);
  assert_int_equal(info->blocked_time_ns, -1);
  vmt_mx_thread_info_free(info);
  /* Enabled now: times are measured from zero. */
  assert_int_equal(vmt_mx_set_thread_contention_monitoring_enabled(true), 0);
  info = mu_info_of(id, 0);
  assert_int_equal(info->blocked_count, 3);
  assert_int_equal(info->blocked_time_ns, 0);
  vmt_mx_thread_info_free(info);
  gate_open(&b.g);
  vmt_thread_join(t, NULL);
  vmt_thread_release(t);
  vmt_monitor_destroy(b.m);
  gate_destroy(&b.g);
  assert_int_equal(vmt_mx_set_thread_contention_monitoring_enabled(was), 0);
}

typedef struct sync_holder {
  vmt_sync_t *s;
  gate_t *g;
} sync_holder_t;

static void *hold_sync_at_gate(void *arg) {
  sync_holder_t *h = arg;
  vmt_sync_lock(h->s);
  gate_pass(h->g);
  vmt_sync_unlock(h->s);
  return NULL;
}

static int64_t own_waited_count(void) {
  vmt_thread_info_t *ti = mu_info_of(vmt_thread_id(vmt_thread_current()), 0);
  int64_t n = ti->waited_count;
  vmt_mx_thread_info_free(ti);
  return n;
}

/* Thread.join of a thread that has terminated returns at once (isAlive is false): no wait, so
 * no waited count; parkNanos(0) neither (Java's "if (nanos > 0)"). */
static void joining_a_terminated_thread_is_no_wait(void **state) {
  (void)state;
  vmt_thread_t *t = start_named("adv-done", false, noop_body, NULL);
  assert_true(await_state(t, VMT_THREAD_TERMINATED));
  int64_t before = own_waited_count();
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(own_waited_count(), before);
  vmt_thread_release(t);
  t = start_named("adv-done", false, noop_body, NULL);
  assert_true(await_state(t, VMT_THREAD_TERMINATED));
  before = own_waited_count();
  assert_int_equal(vmt_thread_timed_join(t, 1000 * MU_MS, NULL), 0);
  assert_int_equal(own_waited_count(), before);
  vmt_thread_release(t);
  before = own_waited_count();
  assert_int_equal(vmt_park_nanos(0), -ETIMEDOUT);
  assert_int_equal(own_waited_count(), before);
  /* tryLock() and tryLock(0, unit) on a synchronizer another thread owns never park. */
  vmt_sync_t *s;
  assert_int_equal(vmt_sync_create(&s, "adv-try"), 0);
  gate_t g;
  gate_init(&g);
  sync_holder_t h = {s, &g};
  vmt_thread_t *o = start_named("adv-owner", false, hold_sync_at_gate, &h);
  gate_await(&g, 1);
  before = own_waited_count();
  vmt_thread_info_t *self_before = mu_info_of(vmt_thread_id(vmt_thread_current()), 0);
  assert_int_equal(vmt_sync_try_lock(s), -EBUSY);
  assert_int_equal(vmt_sync_timed_lock(s, 0), -ETIMEDOUT);
  assert_int_equal(vmt_sync_timed_lock(s, -5), -ETIMEDOUT);
  vmt_thread_info_t *self_after = mu_info_of(vmt_thread_id(vmt_thread_current()), 0);
  assert_int_equal(self_after->waited_count, self_before->waited_count);
  assert_int_equal(self_after->blocked_count, self_before->blocked_count);
  vmt_mx_thread_info_free(self_before);
  vmt_mx_thread_info_free(self_after);
  (void)before;
  gate_open(&g);
  vmt_thread_join(o, NULL);
  vmt_thread_release(o);
  gate_destroy(&g);
  assert_int_equal(vmt_sync_destroy(s), 0);
}

/* ---- ThreadAllocatedMemory ---------------------------------------------------------------- */

static void allocated_bytes_grow_with_allocations_and_dead_is_minus_one(void **state) {
  (void)state;
  if (!vmt_mx_is_thread_allocated_memory_supported()) {
    int64_t v;
    assert_int_equal(vmt_mx_get_thread_allocated_bytes(0, &v), -EINVAL);
    assert_int_equal(vmt_mx_get_thread_allocated_bytes(1, &v), -ENOTSUP);
    printf("allocated memory unsupported in this build (no jemalloc): skipped\n");
    skip();
  }
  int64_t self = vmt_thread_id(vmt_thread_current());
  int64_t a, b, c;
  assert_int_equal(vmt_mx_get_current_thread_allocated_bytes(&a), 0);
  void *volatile p = malloc(1 << 20);
  assert_non_null(p);
  assert_int_equal(vmt_mx_get_current_thread_allocated_bytes(&b), 0);
  assert_int_equal(vmt_mx_get_thread_allocated_bytes(self, &c), 0);
  free(p);
  assert_true(b - a >= (1 << 20));
  assert_true(c >= b);
  int64_t dead = ended_id();
  int64_t ids[] = {self, dead, UNKNOWN_ID, self};
  int64_t out[4];
  assert_int_equal(vmt_mx_get_thread_allocated_bytes_array(ids, 4, out), 0);
  assert_true(out[0] >= c);
  assert_int_equal(out[1], -1);
  assert_int_equal(out[2], -1);
  assert_true(out[3] >= out[0]);
  ids[2] = -1;
  assert_int_equal(vmt_mx_get_thread_allocated_bytes_array(ids, 4, out), -EINVAL);
  int64_t tot1, tot2;
  assert_int_equal(vmt_mx_get_total_thread_allocated_bytes(&tot1), 0);
  assert_int_equal(vmt_mx_get_total_thread_allocated_bytes(&tot2), 0);
  assert_true(tot2 >= tot1);
  assert_int_equal(vmt_mx_set_thread_allocated_memory_enabled(false), 0);
  assert_int_equal(vmt_mx_get_current_thread_allocated_bytes(&a), 0);
  assert_int_equal(a, -1);
  assert_int_equal(vmt_mx_get_thread_allocated_bytes(self, &a), 0);
  assert_int_equal(a, -1);
  assert_int_equal(vmt_mx_set_thread_allocated_memory_enabled(true), 0);
  assert_int_equal(vmt_mx_get_current_thread_allocated_bytes(&a), 0);
  assert_true(a >= c);
}

/* ThreadAllocatedMemory: the query itself allocates nothing, and each allocation of a size
 * class moves the current thread's count by exactly its size, by either form of the query. */
static void allocated_bytes_move_exactly_with_each_allocation(void **state) {
  (void)state;
  if (!vmt_mx_is_thread_allocated_memory_supported()) {
    printf("allocated memory unsupported in this build (no jemalloc): skipped\n");
    skip();
  }
  int64_t self = vmt_thread_id(vmt_thread_current());
  int64_t a, b, c, d;
  assert_int_equal(vmt_mx_get_current_thread_allocated_bytes(&a), 0);
  assert_int_equal(vmt_mx_get_current_thread_allocated_bytes(&b), 0);
  assert_int_equal(b, a);
  assert_int_equal(vmt_mx_get_thread_allocated_bytes(self, &c), 0);
  assert_int_equal(vmt_mx_get_thread_allocated_bytes(self, &d), 0);
  assert_int_equal(d, c);
  const size_t sizes[] = {64, 4096, 1u << 20};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    assert_int_equal(vmt_mx_get_current_thread_allocated_bytes(&a), 0);
    void *volatile p = malloc(sizes[i]);
    assert_non_null(p);
    assert_int_equal(vmt_mx_get_current_thread_allocated_bytes(&b), 0);
    free(p);
    assert_int_equal(b - a, (int64_t)sizes[i]);
    assert_int_equal(vmt_mx_get_thread_allocated_bytes(self, &c), 0);
    p = malloc(sizes[i]);
    assert_int_equal(vmt_mx_get_thread_allocated_bytes(self, &d), 0);
    free(p);
    assert_int_equal(d - c, (int64_t)sizes[i]);
  }
}

/* ---- Dumps under churn -------------------------------------------------------------------- */

static _Atomic bool churn_stop;

static void *churner(void *arg) {
  (void)arg;
  while (!atomic_load(&churn_stop)) {
    vmt_thread_t *t = start_named("adv-churn", false, noop_body, NULL);
    if (t) {
      vmt_thread_join(t, NULL);
      vmt_thread_release(t);
    }
  }
  return NULL;
}

static char walked_frame[] = "vm_frame";

static int one_frame_walker(vmt_thread_t *t, vmt_stack_frame_t *frames, int32_t max,
                            void *ctx) {
  (void)t, (void)ctx;
  if (max < 1) return 0;
  frames[0].function = walked_frame;
  frames[0].line = 1;
  return 1;
}

static void dumps_under_churn(void **state) {
  (void)state;
  atomic_store(&churn_stop, false);
  vmt_thread_t *c = start_named("adv-churner", false, churner, NULL);
  for (int i = 0; i < 50; i++) {
    /* Half the rounds with a walker: other threads' stacks are read in handshakes with threads
     * that may be exiting. */
    if (i == 25) vmt_mx_set_stack_walker(one_frame_walker, NULL);
    char *s;
    size_t len;
    assert_int_equal(vmt_mx_thread_dump_to_string(&s, &len), 0);
    assert_int_equal(strlen(s), len);
    free(s);
    assert_int_equal(vmt_mx_thread_dump_json_to_string(&s, &len), 0);
    free(s);
    vmt_thread_info_t **infos;
    size_t n;
    assert_int_equal(vmt_mx_dump_all_threads(true, true, VMT_MX_MAX_DEPTH_ALL, &infos, &n), 0);
    for (size_t k = 0; k < n; k++) {
      assert_non_null(infos[k]);
      if (k) assert_true(infos[k - 1]->id < infos[k]->id);
    }
    vmt_mx_thread_info_array_free(infos, n);
  }
  vmt_mx_set_stack_walker(NULL, NULL);
  atomic_store(&churn_stop, true);
  vmt_thread_join(c, NULL);
  vmt_thread_release(c);
}

/* Thread dump with CPU time disabled: no "cpu=" anywhere (docs/management.md: "absent while CPU
 * time is disabled"), in the text and the JSON forms; back once enabled. */
static void dumps_leave_cpu_out_while_disabled(void **state) {
  (void)state;
  char *s;
  size_t len;
  assert_int_equal(vmt_mx_set_thread_cpu_time_enabled(false), 0);
  assert_int_equal(vmt_mx_thread_dump_to_string(&s, &len), 0);
  bool text_cpu = strstr(s, "cpu=") != NULL;
  free(s);
  assert_int_equal(vmt_mx_thread_dump_json_to_string(&s, &len), 0);
  bool json_cpu = strstr(s, "cpuTimeNs") != NULL;
  free(s);
  assert_int_equal(vmt_mx_set_thread_cpu_time_enabled(true), 0);
  assert_false(text_cpu);
  assert_false(json_cpu);
  assert_int_equal(vmt_mx_thread_dump_to_string(&s, &len), 0);
  assert_non_null(strstr(s, "cpu="));
  free(s);
}

/* ---- Profiler ----------------------------------------------------------------------------- */

static void *burn_body(void *arg) {
  burn_cpu_ms((int)(intptr_t)arg);
  return NULL;
}

static void profiler_arguments_and_life_cycle(void **state) {
  (void)state;
  vmt_prof_options_t o;
  memset(&o, 0, sizeof(o));
  o.flags = VMT_PROF_OPT_PERIOD;
  o.period_ns = VMT_PROF_PERIOD_MIN_NS - 1;
  assert_int_equal(vmt_prof_start(&o), -EINVAL);
  o.period_ns = VMT_PROF_PERIOD_MAX_NS + 1;
  assert_int_equal(vmt_prof_start(&o), -EINVAL);
  o.period_ns = -1;
  assert_int_equal(vmt_prof_start(&o), -EINVAL);
  o.flags = VMT_PROF_OPT_MAX_DEPTH;
  o.max_depth = 0;
  assert_int_equal(vmt_prof_start(&o), -EINVAL);
  o.max_depth = VMT_PROF_MAX_DEPTH_LIMIT + 1;
  assert_int_equal(vmt_prof_start(&o), -EINVAL);
  o.flags = VMT_PROF_OPT_SIGNAL;
  o.signal = SIGKILL;
  assert_int_equal(vmt_prof_start(&o), -EINVAL);
  o.signal = SIGSEGV;
  assert_int_equal(vmt_prof_start(&o), -EINVAL);
  o.signal = 0;
  assert_int_equal(vmt_prof_start(&o), -EINVAL);
  o.signal = 1000;
  assert_int_equal(vmt_prof_start(&o), -EINVAL);
  /* SIGQUIT is the thread dump's: a dump enabled while sampling there chained to the sampling
   * handler and printed one thread dump per sample (51 for 51). */
  o.signal = SIGQUIT;
  int quit_rc = vmt_prof_start(&o);
  if (quit_rc == 0) vmt_prof_stop();
  assert_int_equal(quit_rc, -EINVAL);
  o.flags = VMT_PROF_OPT_BUFFER;
  o.buffer_bytes = VMT_PROF_BUFFER_MIN - 1;
  assert_int_equal(vmt_prof_start(&o), -EINVAL);
  o.buffer_bytes = VMT_PROF_BUFFER_MAX + 1;
  assert_int_equal(vmt_prof_start(&o), -EINVAL);
  o.flags = VMT_PROF_OPT_MODE;
  o.mode = (vmt_prof_mode_t)7;
  assert_int_equal(vmt_prof_start(&o), -EINVAL);
  o.flags = 1u << 20;
  assert_int_equal(vmt_prof_start(&o), -EINVAL);
  assert_false(vmt_prof_is_running());
  assert_int_equal(vmt_prof_stop(), 0);
  for (int run = 0; run < 3; run++) {
    int rc = vmt_prof_start(NULL);
    if (rc == -ENOTSUP) {
      printf("CPU timers unavailable: skipped\n");
      skip();
    }
    assert_int_equal(rc, 0);
    assert_true(vmt_prof_is_running());
    assert_int_equal(vmt_prof_start(NULL), -EALREADY);
    assert_int_equal(vmt_prof_clear(), -EBUSY);
    /* Threads that start and exit while sampled. */
    for (int i = 0; i < 4; i++) {
      vmt_thread_t *t = start_named("adv-prof", false, burn_body, (void *)(intptr_t)30);
      assert_non_null(t);
      vmt_thread_join(t, NULL);
      vmt_thread_release(t);
    }
    assert_int_equal(vmt_prof_stop(), 0);
    assert_false(vmt_prof_is_running());
    assert_int_equal(vmt_prof_stop(), 0);
    vmt_prof_stats_t st;
    assert_int_equal(vmt_prof_get_stats(&st), 0);
    assert_false(st.running);
    assert_true(st.threads >= 4);
    assert_int_equal(st.threads_armed, 0);
    char *s;
    size_t len;
    assert_int_equal(vmt_prof_collapsed_to_string(0, &s, &len), 0);
    free(s);
  }
  assert_int_equal(vmt_prof_clear(), 0);
  assert_int_equal(vmt_prof_get_stats(NULL), -EINVAL);
}

static int null_prof_walker(vmt_thread_t *t, const void *uc, uintptr_t *frames, int32_t max,
                            void *ctx) {
  (void)t, (void)uc, (void)frames, (void)max, (void)ctx;
  return 0;
}

/* Per-thread statistics and outputs: bad arguments, an ended thread, a cleared profile. */
static void profiler_thread_stats_and_outputs(void **state) {
  (void)state;
  vmt_prof_thread_stats_t ts;
  assert_int_equal(vmt_prof_get_thread_stats(0, &ts), -EINVAL);
  assert_int_equal(vmt_prof_get_thread_stats(-3, &ts), -EINVAL);
  assert_int_equal(vmt_prof_get_thread_stats(1, NULL), -EINVAL);
  assert_int_equal(vmt_prof_set_thread_excluded(NULL, true), -EINVAL);
  char *s;
  size_t len;
  assert_int_equal(vmt_prof_clear(), 0);
  assert_int_equal(vmt_prof_collapsed_to_string(0, &s, &len), -ENOENT);
  assert_int_equal(vmt_prof_collapsed_to_string(1u << 30, &s, &len), -EINVAL);
  assert_int_equal(vmt_prof_write_collapsed(NULL, 0), -EINVAL);
  assert_int_equal(vmt_prof_write_table(NULL), -EINVAL);
  int rc = vmt_prof_start(NULL);
  if (rc == -ENOTSUP) {
    printf("CPU timers unavailable: skipped\n");
    skip();
  }
  assert_int_equal(rc, 0);
  assert_int_equal(vmt_prof_set_walker(null_prof_walker, NULL, NULL), -EBUSY);
  vmt_thread_t *t = start_named("adv-prof-ended", false, burn_body, (void *)(intptr_t)40);
  int64_t id = vmt_thread_id(t);
  vmt_thread_join(t, NULL);
  vmt_thread_release(t);
  assert_int_equal(vmt_prof_get_thread_stats(UNKNOWN_ID, &ts), -ENOENT);
  assert_int_equal(vmt_prof_stop(), 0);
  assert_int_equal(vmt_prof_get_thread_stats(id, &ts), 0);
  assert_int_equal(ts.id, id);
  assert_true(ts.ended);
  assert_string_equal(ts.name, "adv-prof-ended");
  assert_true(ts.cpu_ns > 0);
  FILE *full = fopen("/dev/full", "w");
  if (full) {
    assert_int_equal(vmt_prof_write_collapsed(full, 0), -EIO);
    fclose(full);
  }
  /* A new start discards the last profile: the ended thread is in none. */
  assert_int_equal(vmt_prof_start(NULL), 0);
  assert_int_equal(vmt_prof_get_thread_stats(id, &ts), -ENOENT);
  assert_int_equal(vmt_prof_stop(), 0);
  assert_int_equal(vmt_prof_get_thread_stats(id, &ts), -ENOENT);
  assert_int_equal(vmt_prof_clear(), 0);
  assert_int_equal(vmt_prof_get_thread_stats(id, &ts), -ENOENT);
  assert_int_equal(vmt_prof_write_table(stdout), -ENOENT);
}

/* True if s[0, n) is well-formed UTF-8 (RFC 3629) without the control characters XML 1.0
 * forbids. */
static bool xml_text_ok(const unsigned char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned c = s[i];
    if (c < 0x80) {
      if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return false;
      i++;
      continue;
    }
    size_t len = c < 0xc2 ? 0 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : c < 0xf5 ? 4 : 0;
    if (len == 0 || i + len > n) return false;
    for (size_t k = 1; k < len; k++)
      if ((s[i + k] & 0xc0) != 0x80) return false;
    if ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xed && s[i + 1] >= 0xa0) ||
        (c == 0xf0 && s[i + 1] < 0x90) || (c == 0xf4 && s[i + 1] >= 0x90))
      return false;
    i += len;
  }
  return true;
}

static void *burn_named_latin1(void *arg) {
  vmt_thread_set_name(vmt_thread_current(), "caf\xe9-\xff\xfe");
  burn_cpu_ms((int)(intptr_t)arg);
  return NULL;
}

/* vmt_prof_write_flamegraph: "a self-contained flame graph: one SVG file ... readable in any
 * browser". An SVG is XML, and an XML parser stops at the first byte that is not UTF-8: a
 * thread name or a title in Latin-1 (or any VM's bytes) must not make the file unreadable. The
 * JSON dump turns such bytes into U+FFFD; the flame graph must stay well-formed too. */
static void flamegraph_is_well_formed_utf8_whatever_the_names(void **state) {
  (void)state;
  vmt_prof_options_t o = {.flags = VMT_PROF_OPT_PERIOD, .period_ns = VMT_PROF_PERIOD_MIN_NS};
  int rc = vmt_prof_start(&o);
  if (rc == -ENOTSUP) {
    printf("CPU timers unavailable: skipped\n");
    skip();
  }
  assert_int_equal(rc, 0);
  vmt_thread_t *t = start_named("adv-latin1", false, burn_named_latin1, (void *)(intptr_t)60);
  vmt_thread_join(t, NULL);
  vmt_thread_release(t);
  assert_int_equal(vmt_prof_stop(), 0);
  char *svg = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&svg, &len);
  assert_non_null(f);
  assert_int_equal(vmt_prof_write_flamegraph(f, "profile of caf\xe9 \xc3(", VMT_PROF_OUT_THREADS),
                   0);
  fclose(f);
  assert_true(xml_text_ok((const unsigned char *)svg, len));
  free(svg);
  assert_int_equal(vmt_prof_clear(), 0);
}

/* Three VM stacks in turn, innermost first: [foo], [foo.cold], [bar, foo]. "foo.cold" is how
 * GCC names a function's cold part; '.' sorts below ';' in a byte order. */
static _Atomic unsigned rotation;

static int rotating_walker(vmt_thread_t *t, const void *uc, uintptr_t *frames, int32_t max,
                           void *ctx) {
  (void)t, (void)uc, (void)ctx;
  if (max < 2) return 0;
  switch (atomic_fetch_add(&rotation, 1) % 3) {
    case 0: frames[0] = 1; return 1;
    case 1: frames[0] = 2; return 1;
    default: frames[0] = 3; frames[1] = 1; return 2;
  }
}

static int rotating_symbolizer(uintptr_t frame, char *buf, size_t len, void *ctx) {
  (void)ctx;
  const char *name = frame == 1 ? "foo" : frame == 2 ? "foo.cold" : frame == 3 ? "bar" : NULL;
  if (name == NULL) return -ENOENT;
  snprintf(buf, len, "%s", name);
  return 0;
}

static size_t count_of(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
  return n;
}

/* A flame graph merges every stack through one frame into one box per parent: "foo" at the root
 * is one box, whatever other frames' names share its prefix (flamegraph.pl's rule, and the
 * reason the x axis is sorted by name). */
static void flamegraph_merges_a_frame_into_one_box(void **state) {
  (void)state;
  atomic_store(&rotation, 0);
  assert_int_equal(vmt_prof_set_walker(rotating_walker, rotating_symbolizer, NULL), 0);
  vmt_prof_options_t o = {.flags = VMT_PROF_OPT_PERIOD, .period_ns = VMT_PROF_PERIOD_MIN_NS};
  int rc = vmt_prof_start(&o);
  if (rc == -ENOTSUP) {
    vmt_prof_set_walker(NULL, NULL, NULL);
    printf("CPU timers unavailable: skipped\n");
    skip();
  }
  assert_int_equal(rc, 0);
  /* Burn until each of the three stacks has been sampled (every walk takes the next one). */
  int64_t deadline = test_clock_ns(CLOCK_MONOTONIC) + 60LL * 1000 * MU_MS;
  vmt_prof_stats_t st;
  do {
    vmt_thread_t *t = start_named("adv-rotate", false, burn_body, (void *)(intptr_t)50);
    vmt_thread_join(t, NULL);
    vmt_thread_release(t);
    assert_int_equal(vmt_prof_get_stats(&st), 0);
  } while (st.samples < 6 && test_clock_ns(CLOCK_MONOTONIC) < deadline);
  assert_int_equal(vmt_prof_stop(), 0);
  assert_int_equal(vmt_prof_set_walker(NULL, NULL, NULL), 0);
  assert_true(st.samples >= 6);
  char *collapsed;
  size_t len;
  assert_int_equal(vmt_prof_collapsed_to_string(0, &collapsed, &len), 0);
  bool all_three = strstr(collapsed, "foo;bar ") && strstr(collapsed, "foo.cold ") &&
                   (strncmp(collapsed, "foo ", 4) == 0 || strstr(collapsed, "\nfoo "));
  free(collapsed);
  if (!all_three) {
    printf("not all three stacks were sampled: skipped\n");
    skip();
  }
  char *svg = NULL;
  FILE *f = open_memstream(&svg, &len);
  assert_non_null(f);
  assert_int_equal(vmt_prof_write_flamegraph(f, NULL, 0), 0);
  fclose(f);
  assert_int_equal(count_of(svg, "<title>foo ("), 1);
  assert_int_equal(count_of(svg, "<title>foo.cold ("), 1);
  assert_int_equal(count_of(svg, "<title>bar ("), 1);
  free(svg);
  assert_int_equal(vmt_prof_clear(), 0);
}

/* ---- SIGQUIT dump ------------------------------------------------------------------------- */

static void sigquit_enable_disable_rules(void **state) {
  (void)state;
  FILE *sink = fopen("/dev/null", "w");
  assert_non_null(sink);
  int32_t live = vmt_mx_get_thread_count();
  assert_int_equal(vmt_mx_disable_sigquit_dump(), 0);
  assert_int_equal(vmt_mx_enable_sigquit_dump(sink), 0);
  assert_int_equal(vmt_mx_enable_sigquit_dump(sink), -EALREADY);
  /* The dump thread is never counted nor listed. */
  assert_int_equal(vmt_mx_get_thread_count(), live);
  int64_t *ids;
  size_t n;
  assert_int_equal(vmt_mx_get_all_thread_ids(&ids, &n), 0);
  assert_int_equal(n, (size_t)live);
  for (size_t i = 0; i < n; i++) assert_true(ids[i] > 0);
  vmt_mx_ids_free(ids);
  assert_int_equal(vmt_mx_disable_sigquit_dump(), 0);
  assert_int_equal(vmt_mx_disable_sigquit_dump(), 0);
  fclose(sink);
}

/* ---- Stack walker: a failed walk leaves nothing behind ------------------------------------ */

typedef struct walk_plan {
  int64_t failing_id;   /* its walk writes frames, then fails */
} walk_plan_t;

static char stale_function[] = "stale_function";
static char stale_file[] = "stale.c";

/* The failing thread's walk writes two full frames and answers -EIO (a walker that gives up
 * half-way: "that thread's trace is then empty"); every other walk sets only pc, leaving the
 * other fields unset, which "read as zero". */
static int partly_failing_walker(vmt_thread_t *t, vmt_stack_frame_t *frames, int32_t max,
                                 void *ctx) {
  walk_plan_t *plan = ctx;
  if (max < 2) return 0;
  if (vmt_thread_id(t) == plan->failing_id) {
    for (int i = 0; i < 2; i++)
      frames[i] = (vmt_stack_frame_t){stale_function, stale_file, 7, 0x1000u + (uintptr_t)i};
    return -EIO;
  }
  frames[0].pc = 0x2000;
  frames[1].pc = 0x2001;
  return 2;
}

/* vmt_mx_set_stack_walker: "fields it leaves unset in those frames read as zero", for every
 * thread of a call, whatever the walk of the thread before it did. */
static void a_failed_walk_leaves_nothing_for_the_next_thread(void **state) {
  (void)state;
  gate_t ga, gb;
  vmt_thread_t *a = start_gated(&ga, "adv-walk-a", false);
  vmt_thread_t *b = start_gated(&gb, "adv-walk-b", false);
  walk_plan_t plan = {vmt_thread_id(a)};
  vmt_mx_set_stack_walker(partly_failing_walker, &plan);
  int64_t ids[] = {vmt_thread_id(a), vmt_thread_id(b)};
  vmt_thread_info_t **infos;
  assert_int_equal(vmt_mx_get_thread_info_array(ids, 2, false, false, 8, &infos), 0);
  vmt_mx_set_stack_walker(NULL, NULL);
  assert_non_null(infos[0]);
  assert_non_null(infos[1]);
  assert_int_equal(infos[0]->frame_count, 0);
  assert_int_equal(infos[1]->frame_count, 2);
  for (size_t i = 0; i < 2; i++) {
    const vmt_stack_frame_t *f = &infos[1]->frames[i];
    assert_string_equal(f->function, "??");
    assert_null(f->file);
    assert_int_equal(f->line, 0);
    assert_int_equal(f->pc, 0x2000u + i);
  }
  vmt_mx_thread_info_array_free(infos, 2);
  finish_gated(&ga, a);
  finish_gated(&gb, b);
}

typedef struct lock_walk {
  vmt_monitor_t *a, *b;
  int rc_at_max, rc_null, rc_neg;
} lock_walk_t;

/* Five frames; a entered in frame 3 and again in frame 1, b in frame 0; and the errors. */
static int locking_walker(vmt_thread_t *t, vmt_stack_frame_t *frames, int32_t max, void *ctx) {
  (void)t;
  lock_walk_t *w = ctx;
  int n = max < 5 ? max : 5;
  for (int i = 0; i < n; i++) frames[i].pc = 0x3000u + (uintptr_t)i;
  w->rc_at_max = vmt_mx_frame_holds_monitor(max, w->a);
  w->rc_null = vmt_mx_frame_holds_monitor(0, NULL);
  w->rc_neg = vmt_mx_frame_holds_monitor(-1, w->a);
  vmt_mx_frame_holds_monitor(3, w->a);
  vmt_mx_frame_holds_monitor(1, w->a);
  vmt_mx_frame_holds_monitor(0, w->b);
  return n;
}

/* MonitorInfo.getLockedStackDepth through the walker: the outermost frame that entered it; a
 * frame beyond the trace kept (max_depth) names no frame, and the monitor gets frame 0. */
static void locked_stack_depth_from_the_walker(void **state) {
  (void)state;
  lock_walk_t w = {0};
  assert_int_equal(vmt_monitor_create(&w.a, "adv-da"), 0);
  assert_int_equal(vmt_monitor_create(&w.b, "adv-db"), 0);
  assert_int_equal(vmt_mx_frame_holds_monitor(0, w.a), -EPERM);
  vmt_monitor_enter(w.a);
  vmt_monitor_enter(w.a);
  vmt_monitor_enter(w.b);
  vmt_mx_set_stack_walker(locking_walker, &w);
  int64_t self = vmt_thread_id(vmt_thread_current());
  for (int32_t depth = 2; depth <= 8; depth += 6) {
    vmt_thread_info_t **infos;
    assert_int_equal(vmt_mx_get_thread_info_array(&self, 1, true, false, depth, &infos), 0);
    vmt_thread_info_t *ti = infos[0];
    assert_non_null(ti);
    assert_int_equal(ti->frame_count, depth < 5 ? (size_t)depth : 5u);
    assert_int_equal(ti->locked_monitor_count, 2);
    for (size_t i = 0; i < ti->locked_monitor_count; i++) {
      const vmt_monitor_info_t *m = &ti->locked_monitors[i];
      bool is_a = strncmp(m->lock.name, "adv-da@", 7) == 0;
      int32_t want = is_a ? (depth > 3 ? 3 : 1) : 0;
      assert_int_equal(m->stack_depth, want);
      assert_true((size_t)m->stack_depth < ti->frame_count);
    }
    vmt_mx_thread_info_array_free(infos, 1);
  }
  vmt_mx_set_stack_walker(NULL, NULL);
  assert_int_equal(w.rc_at_max, -EINVAL);
  assert_int_equal(w.rc_null, -EINVAL);
  assert_int_equal(w.rc_neg, -EINVAL);
  vmt_monitor_exit(w.b);
  vmt_monitor_exit(w.a);
  vmt_monitor_exit(w.a);
  vmt_monitor_destroy(w.a);
  vmt_monitor_destroy(w.b);
}

/* ---- FindDeadlocks / FindMonitorDeadlock (last: their threads never end) ------------------ */

typedef struct wait_holder {
  vmt_monitor_t *held;     /* held throughout */
  vmt_monitor_t *waited;   /* waited on, with a timeout */
  int64_t timeout_ns;
  gate_t *g;
} wait_holder_t;

static void *hold_then_wait(void *arg) {
  wait_holder_t *w = arg;
  vmt_monitor_enter(w->held);
  vmt_monitor_enter(w->waited);
  gate_pass(w->g);
  vmt_monitor_wait(w->waited, w->timeout_ns);
  vmt_monitor_exit(w->waited);
  vmt_monitor_exit(w->held);
  return NULL;
}

typedef struct two_locks {
  vmt_monitor_t *first, *second;
  gate_t *g;
} two_locks_t;

static void *lock_first_then_second(void *arg) {
  two_locks_t *l = arg;
  vmt_monitor_enter(l->first);
  gate_pass(l->g);
  vmt_monitor_enter(l->second);
  vmt_monitor_exit(l->second);
  vmt_monitor_exit(l->first);
  return NULL;
}

/* A thread in wait() has no edge: T1 holds A and waits on B; T2 holds B and blocks on A. No
 * deadlock (FindDeadlocks: a waiting thread is not deadlocked). When T1's wait times out it
 * must re-enter B, owned by T2: BLOCKED, and now the two are a real monitor deadlock. */
static void waiting_is_no_deadlock_until_the_waiter_reenters(void **state) {
  (void)state;
  vmt_monitor_t *a, *b;
  assert_int_equal(vmt_monitor_create(&a, "adv-A"), 0);
  assert_int_equal(vmt_monitor_create(&b, "adv-B"), 0);
  gate_t g1, g2;
  gate_init(&g1);
  gate_init(&g2);
  wait_holder_t w = {a, b, 2000LL * MU_MS, &g1};
  vmt_thread_t *t1 = start_named("adv-waiter", true, hold_then_wait, &w);
  gate_await(&g1, 1);
  gate_open(&g1);
  int64_t id1 = vmt_thread_id(t1);
  vmt_mx_thread_info_free(mu_await_info_state(id1, VMT_THREAD_TIMED_WAITING));
  two_locks_t l = {b, a, &g2};
  vmt_thread_t *t2 = start_named("adv-blocker", true, lock_first_then_second, &l);
  int64_t id2 = vmt_thread_id(t2);
  gate_await(&g2, 1);
  gate_open(&g2);
  vmt_thread_info_t *i2 = mu_await_info_state(id2, VMT_THREAD_BLOCKED);
  assert_int_equal(i2->lock_owner_id, id1);
  vmt_mx_thread_info_free(i2);
  vmt_thread_info_t *i1 = mu_info_of(id1, 0);
  if (i1->state == VMT_THREAD_TIMED_WAITING) {
    int64_t *ids;
    size_t n;
    assert_int_equal(vmt_mx_find_deadlocked_threads(&ids, &n), 0);
    assert_false(ids && ids_contain(ids, n, id1));
    vmt_mx_ids_free(ids);
    assert_int_equal(vmt_mx_find_monitor_deadlocked_threads(&ids, &n), 0);
    assert_false(ids && ids_contain(ids, n, id1));
    vmt_mx_ids_free(ids);
  }
  vmt_mx_thread_info_free(i1);
  vmt_mx_thread_info_free(mu_await_info_state(id1, VMT_THREAD_BLOCKED));
  int64_t *ids = NULL;
  size_t n = 0;
  MU_POLL_UNTIL((vmt_mx_ids_free(ids), vmt_mx_find_monitor_deadlocked_threads(&ids, &n) == 0 &&
                 ids && ids_contain(ids, n, id1) && ids_contain(ids, n, id2)),
                "the re-entry deadlock");
  vmt_mx_ids_free(ids);
  assert_int_equal(vmt_mx_find_deadlocked_threads(&ids, &n), 0);
  assert_true(ids && ids_contain(ids, n, id1) && ids_contain(ids, n, id2));
  vmt_mx_ids_free(ids);
  vmt_thread_release(t1);
  vmt_thread_release(t2);
}

typedef struct sync_pair {
  vmt_sync_t *first, *second;
  bool timed;
  gate_t *g;
} sync_pair_t;

static void *sync_first_then_second(void *arg) {
  sync_pair_t *p = arg;
  vmt_sync_lock(p->first);
  gate_pass(p->g);
  if (p->timed)
    vmt_sync_timed_lock(p->second, 3600LL * 1000 * MU_MS);
  else
    vmt_sync_lock(p->second);
  return NULL;
}

/* A cycle of three synchronizers where one member waits in tryLock(timeout): HotSpot reports
 * it (the thread is parked with the synchronizer as its blocker). Monitor finder: none. */
static void three_synchronizer_cycle_with_a_timed_lock(void **state) {
  (void)state;
  vmt_sync_t *s[3];
  for (int i = 0; i < 3; i++) assert_int_equal(vmt_sync_create(&s[i], "adv-S"), 0);
  gate_t g;
  gate_init(&g);
  static sync_pair_t p[3];
  vmt_thread_t *t[3];
  int64_t id[3];
  for (int i = 0; i < 3; i++) {
    p[i] = (sync_pair_t){s[i], s[(i + 1) % 3], i == 1, &g};
    t[i] = start_named("adv-sync", true, sync_first_then_second, &p[i]);
    id[i] = vmt_thread_id(t[i]);
  }
  gate_await(&g, 3);
  gate_open(&g);
  vmt_mx_thread_info_free(mu_await_info_state(id[0], VMT_THREAD_WAITING));
  vmt_mx_thread_info_free(mu_await_info_state(id[1], VMT_THREAD_TIMED_WAITING));
  vmt_mx_thread_info_free(mu_await_info_state(id[2], VMT_THREAD_WAITING));
  int64_t *ids = NULL;
  size_t n = 0;
  MU_POLL_UNTIL((vmt_mx_ids_free(ids), vmt_mx_find_deadlocked_threads(&ids, &n) == 0 && ids &&
                 n >= 3),
                "the synchronizer cycle");
  for (int i = 0; i < 3; i++) assert_true(ids_contain(ids, n, id[i]));
  vmt_mx_ids_free(ids);
  int64_t *mids;
  assert_int_equal(vmt_mx_find_monitor_deadlocked_threads(&mids, &n), 0);
  for (int i = 0; i < 3; i++) assert_false(mids && ids_contain(mids, n, id[i]));
  vmt_mx_ids_free(mids);
  char *dump;
  size_t len;
  assert_int_equal(vmt_mx_thread_dump_to_string(&dump, &len), 0);
  assert_non_null(strstr(dump, "deadlock"));
  free(dump);
  for (int i = 0; i < 3; i++) vmt_thread_release(t[i]);
}

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "mx_adversarial_test: hung (alarm)\n";
  (void)!write(2, msg, sizeof(msg) - 1);
  _exit(3);
}

int main(void) {
  signal(SIGALRM, on_alarm);
  alarm(240);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(cpu_time_arrays_answer_each_element_for_its_own_id),
      cmocka_unit_test(cpu_time_disabled_then_enabled_resumes_monotonic),
      cmocka_unit_test(info_arrays_with_repeated_dead_and_unknown_ids),
      cmocka_unit_test(counts_across_churn_and_peak_reset),
      cmocka_unit_test(detached_thread_id_is_dead),
      cmocka_unit_test(category_time_agrees_with_an_attached_threads_time),
      cmocka_unit_test(blocked_counts_kept_while_monitoring_is_off_and_lock_fields),
      cmocka_unit_test(blocked_count_is_counted_with_monitoring_off),
      cmocka_unit_test(joining_a_terminated_thread_is_no_wait),
      cmocka_unit_test(allocated_bytes_grow_with_allocations_and_dead_is_minus_one),
      cmocka_unit_test(allocated_bytes_move_exactly_with_each_allocation),
      cmocka_unit_test(dumps_under_churn),
      cmocka_unit_test(dumps_leave_cpu_out_while_disabled),
      cmocka_unit_test(profiler_arguments_and_life_cycle),
      cmocka_unit_test(profiler_thread_stats_and_outputs),
      cmocka_unit_test(flamegraph_is_well_formed_utf8_whatever_the_names),
      cmocka_unit_test(flamegraph_merges_a_frame_into_one_box),
      cmocka_unit_test(sigquit_enable_disable_rules),
      cmocka_unit_test(a_failed_walk_leaves_nothing_for_the_next_thread),
      cmocka_unit_test(locked_stack_depth_from_the_walker),
      cmocka_unit_test(waiting_is_no_deadlock_until_the_waiter_reenters),
      cmocka_unit_test(three_synchronizer_cycle_with_a_timed_lock),
  };
  return cmocka_run_group_tests(tests, mu_attach_main, NULL);
}
