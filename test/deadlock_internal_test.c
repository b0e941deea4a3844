/*
 * test/deadlock_internal_test.c: vmt__find_deadlocks, after OpenJDK's
 * ThreadMXBean/FindDeadlocks and FindMonitorDeadlock tests:
 *   - no cycle gives no ids, even with a chain of blocked threads and a thread in wait();
 *   - a 3-thread monitor cycle gives exactly those 3 ids; a thread blocked on a member of the
 *     cycle (but not on it) is not reported;
 *   - adding a 3-thread synchronizer cycle gives 6 ids for the combined finder and still 3 for
 *     the monitor-only one;
 *   - the answer stays exact while other threads start, lock, exit and leave the registry;
 *   - a cycle through a monitor and a synchronizer is found by the combined finder only;
 *   - a chain that the first read of the graph sees as a cycle, because it changed between two
 *     edges of that read (the hook point VMT__FAULT_DEADLOCK_SCAN), is not reported: the
 *     second read drops it; and a hook there that changes nothing on a cycle hides no cycle;
 *   - a cycle through a notified waiter that waits to re-enter is found;
 *   - a cycle through a thread holding more than 2^20 locks is found, and that thread's lock
 *     info lists them all.
 * The deadlocked threads can never be released (that is what a deadlock is): they are daemon
 * threads of this process, which is why this test has a binary of its own.
 * An internal-API test: it includes runtime/registry/registry.h and runtime/sync/sync.h.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/registry/registry.h"
#include "runtime/sync/sync.h"
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

/* ---- A chain read as a cycle ------------------------------------------------------------ *
 * The first read takes the threads' edges one after another, in snapshot order; the hook point
 * VMT__FAULT_DEADLOCK_SCAN follows each edge. `first` (the one of the two the scan reads
 * first) holds m2 and is blocked entering m1, held by `second`. Right after first's edge is
 * read, the hook lets second go: it releases m1 (first takes it and goes on, holding m1 and
 * m2) and blocks entering m2, held by first. The first read then holds first -> second and
 * second -> first: a cycle that never existed at one instant, which only the second read
 * (first's sequence number has moved) can drop. */
typedef struct transient {
  vmt_monitor_t *m1, *m2;
  _Atomic(vmt_thread_t *) first;   /* NULL until the test knows the scan order */
  vmt_thread_t *second;
  _Atomic int second_holds_m1, first_holds_both, second_may_move, finish;
  /* The hook's own, written by the thread that scans. */
  size_t act_at;   /* the hook call that follows first's edge: its snapshot index + 1 */
  size_t calls;
  bool acted, timed_out;
} transient_t;

static void *transient_member(void *arg) {
  transient_t *x = arg;
  vmt_thread_t *first;
  while ((first = atomic_load(&x->first)) == NULL) mu_pause_1ms();
  if (vmt_thread_current() == first) {
    vmt_monitor_enter(x->m2);
    while (!atomic_load(&x->second_holds_m1)) mu_pause_1ms();
    vmt_monitor_enter(x->m1);   /* blocks until the hook lets second release m1 */
    atomic_store(&x->first_holds_both, 1);
    while (!atomic_load(&x->finish)) mu_pause_1ms();
    vmt_monitor_exit(x->m1);
    vmt_monitor_exit(x->m2);
  } else {
    vmt_monitor_enter(x->m1);
    atomic_store(&x->second_holds_m1, 1);
    while (!atomic_load(&x->second_may_move)) mu_pause_1ms();
    vmt_monitor_exit(x->m1);
    vmt_monitor_enter(x->m2);   /* blocks until first finishes */
    vmt_monitor_exit(x->m2);
  }
  return NULL;
}

/* Runs inside the scan: it must not fail a cmocka assertion (the jump would leave the scan
 * half done, its snapshot held). */
static void transient_hook(void *arg) {
  transient_t *x = arg;
  if (++x->calls != x->act_at || x->acted) return;
  x->acted = true;
  atomic_store(&x->second_may_move, 1);
  int64_t deadline = test_clock_ns(CLOCK_MONOTONIC) + MU_POLL_DEADLINE_NS;
  while (!atomic_load(&x->first_holds_both) ||
         vmt_thread_state(x->second) != VMT_THREAD_BLOCKED) {
    if (test_clock_ns(CLOCK_MONOTONIC) > deadline) {
      x->timed_out = true;
      return;
    }
    mu_pause_1ms();
  }
}

static void transient_chain(bool include_syncs) {
  static transient_t x;
  memset(&x, 0, sizeof(x));
  assert_int_equal(vmt_monitor_create(&x.m1, "transient-1"), 0);
  assert_int_equal(vmt_monitor_create(&x.m2, "transient-2"), 0);
  vmt_thread_t *t[2] = {mu_start(transient_member, &x), mu_start(transient_member, &x)};

  /* Which of the two the scan reads first: their order in the snapshot it will take. Holding
   * that snapshot keeps it from being freed, so if it is still the current one after the scan,
   * the scan read this one. */
  const vmt__snapshot_t *snap = vmt__registry_acquire();
  assert_non_null(snap);
  size_t at[2] = {SIZE_MAX, SIZE_MAX};
  for (size_t i = 0; i < snap->count; i++)
    for (int k = 0; k < 2; k++)
      if (snap->threads[i] == t[k]) at[k] = i;
  assert_true(at[0] != SIZE_MAX && at[1] != SIZE_MAX);
  int first = at[0] < at[1] ? 0 : 1;
  x.second = t[1 - first];
  x.act_at = at[first] + 1;
  atomic_store(&x.first, t[first]);
  MU_POLL_UNTIL(vmt_thread_state(t[first]) == VMT_THREAD_BLOCKED, "first to block on m1");

  vmt__fault_set_hook(VMT__FAULT_DEADLOCK_SCAN, transient_hook, &x);
  int64_t *ids;
  size_t n = find(include_syncs, &ids);
  vmt__fault_set_hook(VMT__FAULT_DEADLOCK_SCAN, NULL, NULL);
  const vmt__snapshot_t *now = vmt__registry_acquire();
  bool same = now == snap;
  size_t count = snap->count;
  vmt__registry_release(now);
  vmt__registry_release(snap);
  assert_true(same);
  assert_false(x.timed_out);
  assert_true(x.acted);
  assert_int_equal(x.calls, count);   /* one call after each edge: every thread was read */
  assert_int_equal(n, 0);             /* and find() checked ids == NULL */

  /* Settled: first runs holding both, second is blocked on m2 behind it. A chain, no cycle. */
  assert_int_equal(vmt_thread_state(t[first]), VMT_THREAD_RUNNABLE);
  assert_int_equal(vmt_thread_state(x.second), VMT_THREAD_BLOCKED);
  assert_int_equal(find(include_syncs, &ids), 0);

  atomic_store(&x.finish, 1);
  for (int k = 0; k < 2; k++) mu_join(t[k]);
  assert_int_equal(vmt_monitor_destroy(x.m1), 0);
  assert_int_equal(vmt_monitor_destroy(x.m2), 0);
}

static void chain_read_as_a_cycle_is_dropped(void **state) {
  (void)state;
  transient_chain(false);
  transient_chain(true);
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

static vmt_thread_t *sync_ring[CYCLE];

static void synchronizer_cycle_counts_only_for_the_combined_finder(void **state) {
  (void)state;
  static ring_t sring;
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
  int64_t end = test_clock_ns(CLOCK_MONOTONIC) + 150 * MU_MS;
  int rounds = 0;
  while (test_clock_ns(CLOCK_MONOTONIC) < end || rounds < 20) {
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

static vmt_thread_t *mixed_pair[2];

static void mixed_cycle_needs_the_combined_finder(void **state) {
  (void)state;
  static mixed_t x;
  assert_int_equal(vmt_monitor_create(&x.m, "mixed"), 0);
  assert_int_equal(vmt_sync_create(&x.s, "mixed-sync"), 0);
  vmt_thread_t *a = mixed_pair[0] = start_daemon(hold_monitor_want_sync, &x);
  vmt_thread_t *b = mixed_pair[1] = start_daemon(hold_sync_want_monitor, &x);
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

/* The hook point with a hook that changes nothing on a cycle: the scanning thread takes and
 * releases a monitor of its own after each edge (its sequence number moves; it is on no
 * cycle). Every cycle is still found, exactly. */
typedef struct bystander {
  vmt_monitor_t *m;
  size_t calls;
} bystander_t;

static void bystander_hook(void *arg) {
  bystander_t *b = arg;
  b->calls++;
  vmt_monitor_enter(b->m);
  vmt_monitor_exit(b->m);
}

static void hook_that_changes_no_cycle_hides_none(void **state) {
  (void)state;
  vmt_thread_t *all[2 * CYCLE + 2];
  for (int i = 0; i < CYCLE; i++) {
    all[i] = monitor_ring[i];
    all[CYCLE + i] = sync_ring[i];
  }
  all[2 * CYCLE] = mixed_pair[0];
  all[2 * CYCLE + 1] = mixed_pair[1];
  bystander_t b = {0};
  assert_int_equal(vmt_monitor_create(&b.m, "bystander"), 0);
  for (int include_syncs = 0; include_syncs <= 1; include_syncs++) {
    b.calls = 0;
    vmt__fault_set_hook(VMT__FAULT_DEADLOCK_SCAN, bystander_hook, &b);
    int64_t *ids;
    size_t n = find(include_syncs, &ids);
    vmt__fault_set_hook(VMT__FAULT_DEADLOCK_SCAN, NULL, NULL);
    assert_true(b.calls >= 2 * CYCLE + 3);   /* at least every cycle member and this thread */
    if (include_syncs) assert_ids(ids, n, all, 2 * CYCLE + 2);
    else assert_ids(ids, n, monitor_ring, CYCLE);
    free(ids);
  }
  assert_int_equal(vmt_monitor_destroy(b.m), 0);
}

/* A cycle through a thread that waits to re-enter after wait(), the case the Java
 * specification names ("blocked waiting to enter a synchronization block or waiting to reenter
 * a synchronization block after an Object.wait call"): T holds A and waits on M; X enters M,
 * notifies T and, still owning M, blocks entering A. T needs M back from X, X needs A from T. */
typedef struct reentry {
  vmt_monitor_t *a, *m;
  _Atomic int t_waiting;
} reentry_t;

static void *hold_a_wait_on_m(void *arg) {
  reentry_t *x = arg;
  vmt_monitor_enter(x->a);
  vmt_monitor_enter(x->m);
  atomic_store(&x->t_waiting, 1);
  vmt_monitor_wait(x->m, 0);   /* returns only with M back: never */
  return NULL;
}

static void *notify_then_want_a(void *arg) {
  reentry_t *x = arg;
  vmt_monitor_enter(x->m);
  vmt_monitor_notify(x->m);
  vmt_monitor_enter(x->a);   /* never returns */
  return NULL;
}

static void cycle_through_a_reentering_waiter_is_found(void **state) {
  (void)state;
  static reentry_t x;
  assert_int_equal(vmt_monitor_create(&x.a, "reentry-a"), 0);
  assert_int_equal(vmt_monitor_create(&x.m, "reentry-m"), 0);
  vmt_thread_t *t = start_daemon(hold_a_wait_on_m, &x);
  MU_POLL_UNTIL(vmt_thread_state(t) == VMT_THREAD_WAITING && atomic_load(&x.t_waiting),
                "T to wait on M");
  vmt_thread_t *notifier = start_daemon(notify_then_want_a, &x);
  MU_POLL_UNTIL(vmt_thread_state(notifier) == VMT_THREAD_BLOCKED, "X to block on A");
  vmt_thread_t *pair[2] = {t, notifier};
  vmt_thread_t *all[CYCLE + 2];
  for (int i = 0; i < CYCLE; i++) all[i] = monitor_ring[i];
  all[CYCLE] = t;
  all[CYCLE + 1] = notifier;
  int64_t *ids;
  size_t n = find(false, &ids);
  assert_ids(ids, n, all, CYCLE + 2);
  free(ids);
  /* The combined finder sees it too, with every cycle found so far. */
  n = find(true, &ids);
  assert_int_equal(n, 2 * CYCLE + 2 + 2);
  for (int k = 0; k < 2; k++) {
    bool found = false;
    for (size_t i = 0; i < n; i++) found |= ids[i] == vmt_thread_id(pair[k]);
    assert_true(found);
  }
  free(ids);
}

/* A cycle through a thread that holds more than 2^20 locks: the second read walks its whole
 * held list to find the one its predecessor waits for, the outermost (a walk once stopped at
 * 2^20 links and dropped the cycle), and its lock info lists them all (a reader once took a
 * list that long for a torn read and retried forever). */
enum { MANY_LOCKS = (1 << 20) + 1 };

typedef struct crowded {
  vmt_monitor_t *a, *b;
  vmt_monitor_t **many;
  _Atomic int p_holds, q_holds;
} crowded_t;

static void *hold_many_then_want_b(void *arg) {
  crowded_t *x = arg;
  vmt_monitor_enter(x->a);   /* the outermost: the end of the held list */
  for (int i = 0; i < MANY_LOCKS - 1; i++) vmt_monitor_enter(x->many[i]);
  atomic_store(&x->p_holds, 1);
  while (!atomic_load(&x->q_holds)) mu_pause_1ms();
  vmt_monitor_enter(x->b);   /* never returns */
  return NULL;
}

static void *hold_b_then_want_a(void *arg) {
  crowded_t *x = arg;
  vmt_monitor_enter(x->b);
  atomic_store(&x->q_holds, 1);
  while (!atomic_load(&x->p_holds)) mu_pause_1ms();
  vmt_monitor_enter(x->a);   /* never returns */
  return NULL;
}

static void cycle_through_a_thread_holding_many_locks_is_found(void **state) {
  (void)state;
#if defined(__SANITIZE_THREAD__)
  /* Measured here: 8.8 GB resident once the 2^20 monitors exist (ThreadSanitizer's shadow and
   * per-mutex state), against 0.9 GB in the default build and 1.0 GB under ASan. */
  printf("skip: 2^20 monitors take about 9 GB under ThreadSanitizer; the walks this checks run "
         "on one thread, and the default and ASan builds run it\n");
  skip();
#endif
  static crowded_t x;
  x.many = malloc((MANY_LOCKS - 1) * sizeof(*x.many));
  assert_non_null(x.many);
  assert_int_equal(vmt_monitor_create(&x.a, "crowded-a"), 0);
  assert_int_equal(vmt_monitor_create(&x.b, "crowded-b"), 0);
  for (int i = 0; i < MANY_LOCKS - 1; i++)
    assert_int_equal(vmt_monitor_create(&x.many[i], "crowd"), 0);
  vmt_thread_t *p = start_daemon(hold_many_then_want_b, &x);
  vmt_thread_t *q = start_daemon(hold_b_then_want_a, &x);
  MU_POLL_UNTIL(vmt_thread_state(p) == VMT_THREAD_BLOCKED, "P to block on B");
  MU_POLL_UNTIL(vmt_thread_state(q) == VMT_THREAD_BLOCKED, "Q to block on A");
  int64_t *ids;
  size_t n = find(false, &ids);
  assert_int_equal(n, CYCLE + 2 + 2);
  for (int k = 0; k < 2; k++) {
    int64_t want = vmt_thread_id(k == 0 ? p : q);
    bool found = false;
    for (size_t i = 0; i < n; i++) found |= ids[i] == want;
    assert_true(found);
  }
  free(ids);

  alarm(120);   /* a reader that retries forever ends the test instead of hanging it */
  vmt__thread_lock_info_t info;
  assert_int_equal(vmt__thread_lock_info(p, true, &info), 0);
  alarm(0);
  assert_int_equal(info.state, VMT_THREAD_BLOCKED);
  assert_int_equal(info.held_count, MANY_LOCKS);
  char name[VMT__LOCK_DESC_NAME_MAX];
  assert_true(vmt_monitor_describe(x.a, name, sizeof(name)) > 0);
  assert_string_equal(info.held[MANY_LOCKS - 1].name, name);
  assert_int_equal(info.held[MANY_LOCKS - 1].depth, 0);
  assert_int_equal(info.held[0].depth, MANY_LOCKS - 1);
  free(info.held);
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
      cmocka_unit_test_teardown(chain_read_as_a_cycle_is_dropped, teardown),
      cmocka_unit_test_teardown(monitor_cycle_gives_exactly_its_members, teardown),
      cmocka_unit_test_teardown(synchronizer_cycle_counts_only_for_the_combined_finder,
                                teardown),
      cmocka_unit_test_teardown(answer_is_exact_while_threads_exit, teardown),
      cmocka_unit_test_teardown(mixed_cycle_needs_the_combined_finder, teardown),
      cmocka_unit_test_teardown(hook_that_changes_no_cycle_hides_none, teardown),
      cmocka_unit_test_teardown(cycle_through_a_reentering_waiter_is_found, teardown),
      cmocka_unit_test_teardown(cycle_through_a_thread_holding_many_locks_is_found, teardown),
      cmocka_unit_test_teardown(failure_to_allocate_is_reported, teardown),
  };
  return cmocka_run_group_tests_name("deadlock_internal", tests, mu_attach_main, mu_detach_main);
}
