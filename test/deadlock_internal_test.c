/*
 * test/deadlock_internal_test.c: vmt__find_deadlocks, after OpenJDK's
 * ThreadMXBean/FindDeadlocks and FindMonitorDeadlock tests:
 *   - no cycle gives no ids, even with a chain of blocked threads and a thread in wait();
 *   - a 3-thread monitor cycle gives exactly those 3 ids; a thread blocked on a member of the
 *     cycle (but not on it) is not reported;
 *   - adding a 3-thread synchronizer cycle gives 6 ids for the combined finder and still 3 for
 *     the monitor-only one;
 *   - the answer stays exact while other threads start, lock, exit and leave the registry;
 *   - a cycle through a monitor and a synchronizer is found by the combined finder only.
 * The deadlocked threads can never be released (that is what a deadlock is): they are daemon
 * threads of this process, which is why this test has a binary of its own.
 * An internal-API test: it includes runtime/internal.h.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "runtime/internal.h"
#include "test/monitor_util.h"

#define CYCLE 3

static int teardown(void **state) {
  (void)state;
  vmt__fault_disarm_all();
  return 0;
}

static vmt_thread_t *start_daemon(vmt_thread_fn fn, void *arg) {
  vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_DAEMON, .daemon = true};
  vmt_thread_t *t = NULL;
  assert_int_equal(vmt_thread_start_ex(&t, &o, fn, arg), 0);
  return t;
}

static size_t find(bool include_syncs, int64_t **ids) {
  size_t n = 99;
  assert_int_equal(vmt__find_deadlocks(include_syncs, ids, &n), 0);
  if (n == 0) assert_null(*ids);
  return n;
}

static int cmp_id(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Exactly the ids of threads[0..n), whatever the order. */
static void assert_ids(int64_t *ids, size_t count, vmt_thread_t **threads, size_t n) {
  assert_int_equal(count, n);
  int64_t *want = malloc(n * sizeof(*want));
  assert_non_null(want);
  for (size_t i = 0; i < n; i++) want[i] = vmt_thread_id(threads[i]);
  qsort(want, n, sizeof(*want), cmp_id);
  qsort(ids, count, sizeof(*ids), cmp_id);
  assert_memory_equal(ids, want, n * sizeof(*want));
  free(want);
}

/* ---- Cycles ------------------------------------------------------------------------------ *
 * Member i takes lock i, waits until every member holds its own, then takes lock i+1. */
typedef struct ring {
  vmt_monitor_t *m[CYCLE];
  vmt_sync_t *s[CYCLE];
  bool syncs;
  _Atomic int holding;
  _Atomic int next;
} ring_t;

static void *ring_member(void *arg) {
  ring_t *r = arg;
  int i = atomic_fetch_add(&r->next, 1);
  if (r->syncs) vmt_sync_lock(r->s[i]);
  else vmt_monitor_enter(r->m[i]);
  atomic_fetch_add(&r->holding, 1);
  while (atomic_load(&r->holding) < CYCLE) mu_pause_1ms();
  if (r->syncs) vmt_sync_lock(r->s[(i + 1) % CYCLE]);   /* never returns */
  else vmt_monitor_enter(r->m[(i + 1) % CYCLE]);
  return NULL;
}

static void make_ring(ring_t *r, bool syncs, vmt_thread_t **members) {
  r->syncs = syncs;
  for (int i = 0; i < CYCLE; i++) {
    if (syncs) assert_int_equal(vmt_sync_create(&r->s[i], "ring-sync"), 0);
    else assert_int_equal(vmt_monitor_create(&r->m[i], "ring"), 0);
  }
  for (int i = 0; i < CYCLE; i++) members[i] = start_daemon(ring_member, r);
  vmt_thread_state_t want = syncs ? VMT_THREAD_WAITING : VMT_THREAD_BLOCKED;
  for (int i = 0; i < CYCLE; i++)
    MU_POLL_UNTIL(vmt_thread_state(members[i]) == want, "a ring member to block");
}

/* A thread blocked on a monitor that a ring member holds: it waits on the cycle but is not
 * part of it. */
static void *enter_and_stay(void *arg) {
  vmt_monitor_enter(arg);
  return NULL;
}

/* A thread in wait(): no edge at all. */
typedef struct sleeper {
  vmt_monitor_t *m;
  _Atomic int waiting;
} sleeper_t;

static void *wait_forever(void *arg) {
  sleeper_t *s = arg;
  vmt_monitor_enter(s->m);
  atomic_store(&s->waiting, 1);
  vmt_monitor_wait(s->m, 0);
  vmt_monitor_exit(s->m);
  return NULL;
}

static sleeper_t waiter_state;
static vmt_thread_t *waiter;
static vmt_monitor_t *chain_lock;
static vmt_thread_t *chain_blocked;

static void no_cycle_gives_none(void **state) {
  (void)state;
  int64_t *ids = (int64_t *)&ids;   /* must be overwritten */
  size_t n = 99;
  assert_int_equal(vmt__find_deadlocks(false, NULL, &n), -EINVAL);
  assert_int_equal(vmt__find_deadlocks(false, &ids, NULL), -EINVAL);
  assert_int_equal(find(true, &ids), 0);

  /* A thread waiting for a notify that never comes, and a chain: main holds a monitor, a
   * thread blocks on it. Neither is a cycle. */
  assert_int_equal(vmt_monitor_create(&waiter_state.m, "never-notified"), 0);
  waiter = start_daemon(wait_forever, &waiter_state);
  MU_POLL_UNTIL(vmt_thread_state(waiter) == VMT_THREAD_WAITING, "the waiter");
  assert_int_equal(vmt_monitor_create(&chain_lock, "chain"), 0);
  assert_int_equal(vmt_monitor_enter(chain_lock), 0);
  chain_blocked = start_daemon(enter_and_stay, chain_lock);
  MU_POLL_UNTIL(vmt_thread_state(chain_blocked) == VMT_THREAD_BLOCKED, "the chain");
  assert_int_equal(find(false, &ids), 0);
  assert_int_equal(find(true, &ids), 0);
  assert_int_equal(vmt_monitor_exit(chain_lock), 0);
  MU_POLL_UNTIL(vmt_thread_state(chain_blocked) == VMT_THREAD_TERMINATED, "the chain to end");
  assert_int_equal(vmt_thread_join(chain_blocked, NULL), 0);
  vmt_thread_release(chain_blocked);
}

static vmt_thread_t *monitor_ring[CYCLE];
static ring_t mring;

static void monitor_cycle_gives_exactly_its_members(void **state) {
  (void)state;
  make_ring(&mring, false, monitor_ring);
  /* One more thread blocks on the first ring monitor: behind the cycle, not in it. */
  vmt_thread_t *behind = start_daemon(enter_and_stay, mring.m[0]);
  MU_POLL_UNTIL(vmt_thread_state(behind) == VMT_THREAD_BLOCKED, "the thread behind");
  int64_t *ids;
  size_t n = find(false, &ids);
  assert_ids(ids, n, monitor_ring, CYCLE);
  free(ids);
  n = find(true, &ids);
  assert_ids(ids, n, monitor_ring, CYCLE);
  free(ids);
}

static void synchronizer_cycle_counts_only_for_the_combined_finder(void **state) {
  (void)state;
  static ring_t sring;
  static vmt_thread_t *sync_ring[CYCLE];
  make_ring(&sring, true, sync_ring);
  int64_t *ids;
  size_t n = find(false, &ids);
  assert_ids(ids, n, monitor_ring, CYCLE);
  free(ids);
  vmt_thread_t *all[2 * CYCLE];
  for (int i = 0; i < CYCLE; i++) {
    all[i] = monitor_ring[i];
    all[CYCLE + i] = sync_ring[i];
  }
  n = find(true, &ids);
  assert_ids(ids, n, all, 2 * CYCLE);
  free(ids);
}

/* ---- Safe and exact while threads come and go ------------------------------------------- */

typedef struct churn {
  vmt_monitor_t *m;
  _Atomic int stop;
} churn_t;

static void *short_lived(void *arg) {
  churn_t *c = arg;
  for (int i = 0; i < 50; i++) {
    vmt_monitor_enter(c->m);
    vmt_monitor_exit(c->m);
  }
  return NULL;
}

static void *spawner(void *arg) {
  churn_t *c = arg;
  while (!atomic_load(&c->stop)) {
    vmt_thread_t *t;
    if (vmt_thread_start(&t, short_lived, c) != 0) continue;
    vmt_thread_join(t, NULL);
    vmt_thread_release(t);
  }
  return NULL;
}

static void answer_is_exact_while_threads_exit(void **state) {
  (void)state;
  churn_t c = {0};
  assert_int_equal(vmt_monitor_create(&c.m, "churn"), 0);
  vmt_thread_t *sp[2];
  for (int i = 0; i < 2; i++) assert_int_equal(vmt_thread_start(&sp[i], spawner, &c), 0);
  int64_t end = mu_now_ns() + 150 * MU_MS;
  int rounds = 0;
  while (mu_now_ns() < end || rounds < 20) {
    int64_t *ids;
    size_t n = find(false, &ids);
    assert_ids(ids, n, monitor_ring, CYCLE);
    free(ids);
    rounds++;
  }
  atomic_store(&c.stop, 1);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(vmt_thread_join(sp[i], NULL), 0);
    vmt_thread_release(sp[i]);
  }
  assert_int_equal(vmt_monitor_destroy(c.m), 0);
}

/* A cycle through one monitor and one synchronizer: only the combined finder sees it. */
typedef struct mixed {
  vmt_monitor_t *m;
  vmt_sync_t *s;
  _Atomic int holding;
} mixed_t;

static void *hold_monitor_want_sync(void *arg) {
  mixed_t *x = arg;
  vmt_monitor_enter(x->m);
  atomic_fetch_add(&x->holding, 1);
  while (atomic_load(&x->holding) < 2) mu_pause_1ms();
  vmt_sync_lock(x->s);   /* never returns */
  return NULL;
}

static void *hold_sync_want_monitor(void *arg) {
  mixed_t *x = arg;
  vmt_sync_lock(x->s);
  atomic_fetch_add(&x->holding, 1);
  while (atomic_load(&x->holding) < 2) mu_pause_1ms();
  vmt_monitor_enter(x->m);   /* never returns */
  return NULL;
}

static void mixed_cycle_needs_the_combined_finder(void **state) {
  (void)state;
  static mixed_t x;
  assert_int_equal(vmt_monitor_create(&x.m, "mixed"), 0);
  assert_int_equal(vmt_sync_create(&x.s, "mixed-sync"), 0);
  vmt_thread_t *a = start_daemon(hold_monitor_want_sync, &x);
  vmt_thread_t *b = start_daemon(hold_sync_want_monitor, &x);
  MU_POLL_UNTIL(vmt_thread_state(a) == VMT_THREAD_WAITING, "the monitor holder to wait");
  MU_POLL_UNTIL(vmt_thread_state(b) == VMT_THREAD_BLOCKED, "the sync holder to block");
  int64_t *ids;
  size_t n = find(false, &ids);
  assert_ids(ids, n, monitor_ring, CYCLE);
  free(ids);
  n = find(true, &ids);
  assert_int_equal(n, 2 * CYCLE + 2);
  int64_t want[2] = {vmt_thread_id(a), vmt_thread_id(b)};
  for (int k = 0; k < 2; k++) {
    bool found = false;
    for (size_t i = 0; i < n; i++) found |= ids[i] == want[k];
    assert_true(found);
  }
  free(ids);
}

static void failure_to_allocate_is_reported(void **state) {
  (void)state;
  vmt__fault_arm(VMT__FAULT_ALLOC, 0, -1, ENOMEM);
  int64_t *ids = NULL;
  size_t n = 99;
  assert_int_equal(vmt__find_deadlocks(true, &ids, &n), -ENOMEM);
  assert_null(ids);
  assert_int_equal(n, 0);
  vmt__fault_disarm_all();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(no_cycle_gives_none, teardown),
      cmocka_unit_test_teardown(monitor_cycle_gives_exactly_its_members, teardown),
      cmocka_unit_test_teardown(synchronizer_cycle_counts_only_for_the_combined_finder,
                                teardown),
      cmocka_unit_test_teardown(answer_is_exact_while_threads_exit, teardown),
      cmocka_unit_test_teardown(mixed_cycle_needs_the_combined_finder, teardown),
      cmocka_unit_test_teardown(failure_to_allocate_is_reported, teardown),
  };
  return cmocka_run_group_tests_name("deadlock_internal", tests, mu_attach_main, mu_detach_main);
}
