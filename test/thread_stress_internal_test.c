/*
 * test/thread_stress_internal_test.c: thousands of thread lifetimes (joined, released while
 * running, attached and detached foreign threads) against concurrent registry walkers. The
 * walkers check what the reclamation scheme promises: a record seen in a protected snapshot is
 * never recycled while the snapshot is held (its id does not change under the reader), every
 * snapshot is sorted, and lookups by id find exactly the record listed. Snapshots are malloc'ed
 * and freed, so ASan catches a walker touching a reclaimed one; TSan checks the orderings.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/registry/registry.h"

enum { STARTERS = 3, LIFETIMES_PER_STARTER = 1000, WALKERS = 2, RESIDENTS = 64 };

static _Atomic bool stop;
static _Atomic long walker_errors, walks, max_seen;

static void *empty_body(void *arg) { return arg; }

/* Residents live through the whole run, so every snapshot copy moves tens of entries. */
static pthread_mutex_t resident_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t resident_cond = PTHREAD_COND_INITIALIZER;
static bool residents_may_leave;

static void *resident_body(void *arg) {
  pthread_mutex_lock(&resident_lock);
  while (!residents_may_leave) pthread_cond_wait(&resident_cond, &resident_lock);
  pthread_mutex_unlock(&resident_lock);
  return arg;
}

static void *foreign_body(void *arg) {
  (void)arg;
  vmt_thread_t *me;
  if (vmt_thread_attach(NULL, &me) == 0) vmt_thread_detach();
  return NULL;
}

static void *starter(void *arg) {
  long seed = (long)(intptr_t)arg;
  for (int i = 0; i < LIFETIMES_PER_STARTER; i++) {
    vmt_thread_t *t;
    switch ((i + seed) % 4) {
      case 0:
      case 1:
        if (vmt_thread_start(&t, empty_body, NULL) == 0) {
          vmt_thread_tid(t);
          vmt_thread_join(t, NULL);
          vmt_thread_release(t);
        }
        break;
      case 2:  /* released while (probably) running: the record outlives the creator */
        if (vmt_thread_start(&t, empty_body, NULL) == 0) vmt_thread_release(t);
        break;
      case 3: {
        pthread_t th;
        if (pthread_create(&th, NULL, foreign_body, NULL) == 0) pthread_join(th, NULL);
        break;
      }
    }
  }
  return NULL;
}

static void check_snapshot(const vmt__snapshot_t *s) {
  int64_t ids[4096];
  size_t n = s->count < 4096 ? s->count : 4096;
  for (size_t i = 0; i < n; i++) {
    vmt_thread_t *t = s->threads[i];
    ids[i] = t->id;
    if (__atomic_load_n(&t->magic, __ATOMIC_RELAXED) != VMT__THREAD_MAGIC) walker_errors++;
    if (i > 0 && ids[i - 1] >= ids[i]) walker_errors++;
    if (t->name == NULL || t->category == NULL) walker_errors++;
    /* Found means this very record; not found means it has left (states only move forward:
     * in, tombstoned, dropped). */
    vmt_thread_t *found = vmt__snapshot_find(s, ids[i]);
    if (found != NULL && found != t) walker_errors++;
    if (found == NULL && atomic_load(&t->registry_state) == VMT__REG_IN) walker_errors++;
    (void)vmt__thread_is_listed(t);
    (void)vmt_thread_state(t);
  }
  /* Nested protection while the outer one is held. */
  const vmt__snapshot_t *inner = vmt__registry_acquire();
  if (inner == NULL || inner->generation < s->generation) walker_errors++;
  vmt__registry_release(inner);
  /* Still the same records: none was recycled while the snapshot was protected. */
  for (size_t i = 0; i < n; i++)
    if (s->threads[i]->id != ids[i]) walker_errors++;
  long seen = (long)n;
  if (seen > max_seen) max_seen = seen;
}

static void *walker(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    const vmt__snapshot_t *s = vmt__registry_acquire();
    if (s == NULL) {
      walker_errors++;
      continue;
    }
    check_snapshot(s);
    vmt__registry_release(s);
    walks++;
  }
  return NULL;
}

static void lifetimes_against_walkers(void **state) {
  (void)state;
  vmt__registry_reclaim();
  vmt__counts_t c0;
  vmt__registry_counts(&c0);
  pthread_t walkers[WALKERS], starters[STARTERS];
  vmt_thread_t *residents[RESIDENTS];
  for (int i = 0; i < RESIDENTS; i++)
    assert_int_equal(vmt_thread_start(&residents[i], resident_body, NULL), 0);
  for (int i = 0; i < WALKERS; i++)
    assert_int_equal(pthread_create(&walkers[i], NULL, walker, NULL), 0);
  for (int i = 0; i < STARTERS; i++)
    assert_int_equal(pthread_create(&starters[i], NULL, starter, (void *)(intptr_t)i), 0);
  for (int i = 0; i < STARTERS; i++) pthread_join(starters[i], NULL);
  pthread_mutex_lock(&resident_lock);
  residents_may_leave = true;
  pthread_cond_broadcast(&resident_cond);
  pthread_mutex_unlock(&resident_lock);
  for (int i = 0; i < RESIDENTS; i++) {
    assert_int_equal(vmt_thread_join(residents[i], NULL), 0);
    vmt_thread_release(residents[i]);
  }
  /* Released-while-running threads end on their own: wait until the registry drains. */
  for (int spins = 0; spins < 5000; spins++) {
    vmt__counts_t c;
    vmt__registry_counts(&c);
    if (c.live == c0.live) break;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  atomic_store(&stop, true);
  for (int i = 0; i < WALKERS; i++) pthread_join(walkers[i], NULL);
  printf("walks: %ld, largest snapshot seen: %ld\n", atomic_load(&walks),
         atomic_load(&max_seen));
  assert_int_equal(atomic_load(&walker_errors), 0);
  assert_true(atomic_load(&walks) > 0);

  vmt__counts_t c;
  vmt__registry_counts(&c);
  assert_int_equal(c.live, c0.live);
  assert_int_equal(c.daemon, c0.daemon);
  /* Every lifetime was counted as started: 3 of 4 started, 1 of 4 attached. */
  assert_int_equal(c.total_started,
                   c0.total_started + STARTERS * LIFETIMES_PER_STARTER + RESIDENTS);
  assert_true(atomic_load(&max_seen) >= RESIDENTS);
  /* Nothing left in the registry, and reclamation returns every record to the pool. */
  vmt__registry_reclaim();
  const vmt__snapshot_t *s = vmt__registry_acquire();
  size_t in = 0;
  for (size_t i = 0; i < s->count; i++)
    in += atomic_load(&s->threads[i]->registry_state) == VMT__REG_IN;
  vmt__registry_release(s);
  assert_int_equal(in, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(lifetimes_against_walkers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
