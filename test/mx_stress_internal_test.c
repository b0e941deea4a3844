/*
 * test/mx_stress_internal_test.c: OpenJDK's ThreadInfoStress idea for the whole management
 * API. Ten worker threads take monitors and a synchronizer, allocate, sleep and park, and die
 * at random times (most joined, a quarter released while running; all their records are
 * reclaimed behind the readers' backs); replacements keep ten alive. Meanwhile a querier
 * thread asks everything every 2 ms: counts, ids, CPU and user times, allocated bytes,
 * ThreadInfo with locks and stacks (from a registered walker that reads the thread it is
 * given), dumps, deadlocks.
 *
 * It runs for 3 s, and at least until the querier made 100 rounds and 50 workers died, so a
 * slow sanitizer build still covers the races; it is meant to be clean under ASan and TSan.
 * The querier checks invariants and counts violations (cmocka's asserts must stay on the main
 * thread): ids ascending, unknown ids -1/NULL, user <= CPU, peak and totals never decreasing,
 * a BLOCKED thread always with its lock, no deadlock ever.
 *
 * Internal only for its last step: it asks the registry to reclaim (vmt__registry_reclaim).
 * The registry drops its reference to an ended record when it reclaims, amortised over later
 * starts and exits, and a thread released while running is pthread_detach'ed with that last
 * reference; without the call, the last few released workers end the process undetached and
 * ThreadSanitizer reports them as leaked threads (seen in 1 run of 4). The runtime could detach
 * at exit instead; until it does, this keeps the test about the management API.
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
#include "runtime/registry/registry.h"
#include "test/clock_util.h"

#define WORKERS 10
#define RUN_NS 3000000000LL
#define HARD_LIMIT_NS 60000000000LL
#define MIN_ROUNDS 100
#define MIN_DEATHS 50
#define UNKNOWN_ID 999999

static vmt_monitor_t *mons[3];
static vmt_sync_t *shared_sync;
static _Atomic bool stop_querier;
static _Atomic int rounds, deaths, violations;
static char first_violation[256];
static pthread_mutex_t violation_lock = PTHREAD_MUTEX_INITIALIZER;

#define CHECK(cond)                                                                          \
  do {                                                                                       \
    if (!(cond)) violation(__LINE__, #cond);                                                 \
  } while (0)

static void violation(int line, const char *what) {
  if (atomic_fetch_add(&violations, 1) == 0) {
    pthread_mutex_lock(&violation_lock);
    snprintf(first_violation, sizeof(first_violation), "line %d: %s", line, what);
    pthread_mutex_unlock(&violation_lock);
  }
}

static void *worker(void *arg) {
  unsigned seed = (unsigned)(uintptr_t)arg;
  int64_t deadline = test_clock_ns(CLOCK_MONOTONIC) + (rand_r(&seed) % 200) * 1000000LL;
  while (test_clock_ns(CLOCK_MONOTONIC) < deadline) {
    vmt_monitor_t *m = mons[rand_r(&seed) % 3];
    vmt_monitor_enter(m);
    void *p = malloc((size_t)(rand_r(&seed) % 4096) + 1);
    __asm__ __volatile__("" : : "r"(p) : "memory");
    free(p);
    if (rand_r(&seed) % 4 == 0) vmt_monitor_wait(m, 100000);
    vmt_monitor_exit(m);
    switch (rand_r(&seed) % 3) {
      case 0:
        if (vmt_sync_timed_lock(shared_sync, 200000) == 0) vmt_sync_unlock(shared_sync);
        break;
      case 1:
        vmt_sleep_ns(200000);
        break;
      default:
        vmt_park(100000);
    }
  }
  if (seed % 2) vmt_thread_exit(NULL); /* the other way out */
  return NULL;
}

static int stress_walker(vmt_thread_t *t, vmt_stack_frame_t *frames, int32_t max, void *ctx) {
  (void)ctx;
  /* The record is protected for the call: its name must be readable, whatever the thread
   * does meanwhile. */
  const char *name = vmt_thread_name(t);
  if (!name) return -EINVAL;
  int n = max < 2 ? max : 2;
  for (int i = 0; i < n; i++) {
    frames[i].function = i == 0 ? "vm.Worker.run" : "vm.Thread.start0";
    frames[i].file = NULL;
    frames[i].line = i;
    frames[i].pc = 0;
  }
  return n;
}

static void check_infos(vmt_thread_info_t **infos, const int64_t *ids, size_t n) {
  for (size_t i = 0; i < n; i++) {
    vmt_thread_info_t *ti = infos[i];
    if (ids[i] == UNKNOWN_ID) CHECK(ti == NULL);
    if (!ti) continue;
    CHECK(ti->id == ids[i]);
    CHECK(ti->name != NULL && ti->category != NULL);
    CHECK(ti->state >= VMT_THREAD_RUNNABLE && ti->state <= VMT_THREAD_TIMED_WAITING);
    CHECK(ti->state != VMT_THREAD_BLOCKED || ti->lock != NULL);
    CHECK(ti->lock == NULL || (ti->lock->name && ti->lock->class_name));
    CHECK(ti->frame_count <= 2);
    CHECK(ti->user_time_ns <= ti->cpu_time_ns || ti->cpu_time_ns == -1);
  }
}

static void query_everything(int round, int64_t *last_started, int64_t *last_total) {
  int32_t live = vmt_mx_get_thread_count();
  int64_t started = vmt_mx_get_total_started_thread_count();
  CHECK(live >= 0 && vmt_mx_get_daemon_thread_count() >= 0);
  /* Nothing resets the peak here, so it never decreases. (It may read below the live count
   * read just before: the registry raises the live count first.) */
  static int32_t last_peak;
  int32_t peak = vmt_mx_get_peak_thread_count();
  CHECK(peak >= last_peak);
  last_peak = peak;
  CHECK(started >= *last_started);
  *last_started = started;

  int64_t *ids = NULL;
  size_t n = 0;
  CHECK(vmt_mx_get_all_thread_ids(&ids, &n) == 0);
  for (size_t i = 1; i < n; i++) CHECK(ids[i - 1] < ids[i]);
  /* An unknown id among the real ones. */
  int64_t *q = malloc((n + 1) * sizeof(*q));
  memcpy(q, ids, n * sizeof(*q));
  q[n] = UNKNOWN_ID;
  size_t nq = n + 1;

  int64_t *user = malloc(nq * sizeof(*user)), *cpu = malloc(nq * sizeof(*cpu));
  CHECK(vmt_mx_get_thread_user_time_array(q, nq, user) == 0);
  CHECK(vmt_mx_get_thread_cpu_time_array(q, nq, cpu) == 0);
  for (size_t i = 0; i < nq; i++) {
    CHECK(cpu[i] >= -1 && user[i] >= -1);
    if (user[i] >= 0 && cpu[i] >= 0) CHECK(user[i] <= cpu[i]);
  }
  CHECK(cpu[n] == -1 && user[n] == -1);
  int64_t one;
  CHECK(vmt_mx_get_thread_cpu_time(q[round % nq], &one) == 0 && one >= -1);
  CHECK(vmt_mx_get_thread_user_time(q[round % nq], &one) == 0 && one >= -1);

  if (vmt_mx_is_thread_allocated_memory_supported()) {
    CHECK(vmt_mx_get_thread_allocated_bytes_array(q, nq, cpu) == 0);
    CHECK(cpu[n] == -1);
    int64_t total;
    CHECK(vmt_mx_get_total_thread_allocated_bytes(&total) == 0);
    CHECK(total >= *last_total);
    *last_total = total;
  }

  vmt_thread_info_t **infos = NULL;
  if (vmt_mx_get_thread_info_array(q, nq, true, true, VMT_MX_MAX_DEPTH_ALL, &infos) == 0) {
    check_infos(infos, q, nq);
    vmt_mx_thread_info_array_free(infos, nq);
  } else {
    CHECK(!"get_thread_info_array failed");
  }
  vmt_thread_info_t *single = NULL;
  CHECK(vmt_mx_get_thread_info(q[round % nq], 1, &single) == 0);
  if (single) check_infos(&single, &q[round % nq], 1);
  vmt_mx_thread_info_free(single);

  size_t nd = 0;
  CHECK(vmt_mx_dump_all_threads(round & 1, round & 2, round % 4, &infos, &nd) == 0);
  for (size_t i = 0; i < nd; i++) CHECK(infos[i] && (i == 0 || infos[i - 1]->id < infos[i]->id));
  vmt_mx_thread_info_array_free(infos, nd);

  int64_t *dl = (int64_t *)1;
  size_t ndl = 1;
  CHECK(vmt_mx_find_deadlocked_threads(&dl, &ndl) == 0 && dl == NULL && ndl == 0);
  CHECK(vmt_mx_find_monitor_deadlocked_threads(&dl, &ndl) == 0 && dl == NULL && ndl == 0);
  if (round % 8 == 0) {
    char *text = NULL;
    size_t len;
    CHECK(vmt_mx_thread_dump_to_string(&text, &len) == 0 && text && strlen(text) == len);
    CHECK(text && strstr(text, "deadlock") == NULL);
    free(text);
  }
  if (round % 50 == 25) {
    /* Toggle the switches under load; they must stay plain booleans. */
    bool contention = vmt_mx_is_thread_contention_monitoring_enabled();
    vmt_mx_set_thread_contention_monitoring_enabled(!contention);
    vmt_mx_set_thread_cpu_time_enabled(round % 100 != 25);
  }
  free(user);
  free(cpu);
  free(q);
  vmt_mx_ids_free(ids);
}

static void *querier(void *arg) {
  (void)arg;
  int64_t last_started = 0, last_total = 0;
  for (int round = 0; !atomic_load(&stop_querier); round++) {
    query_everything(round, &last_started, &last_total);
    atomic_fetch_add(&rounds, 1);
    vmt_sleep_ns(2000000);
  }
  vmt_mx_set_thread_cpu_time_enabled(true);
  vmt_mx_set_thread_contention_monitoring_enabled(false);
  return NULL;
}

static void threads_die_while_everything_is_queried(void **state) {
  (void)state;
  for (int i = 0; i < 3; i++) assert_int_equal(vmt_monitor_create(&mons[i], "stress"), 0);
  assert_int_equal(vmt_sync_create(&shared_sync, "stress-sync"), 0);
  vmt_mx_set_stack_walker(stress_walker, NULL);
  vmt_thread_t *q = start_named("querier", false, querier, NULL);
  assert_non_null(q);

  vmt_thread_t *slot[WORKERS] = {0};
  unsigned seed = 12345;
  int64_t start = test_clock_ns(CLOCK_MONOTONIC);
  for (;;) {
    int64_t elapsed = test_clock_ns(CLOCK_MONOTONIC) - start;
    bool enough = elapsed >= RUN_NS && atomic_load(&rounds) >= MIN_ROUNDS &&
                  atomic_load(&deaths) >= MIN_DEATHS;
    assert_true(elapsed < HARD_LIMIT_NS);
    for (int i = 0; i < WORKERS; i++) {
      if (slot[i] && vmt_thread_state(slot[i]) == VMT_THREAD_TERMINATED) {
        assert_int_equal(vmt_thread_join(slot[i], NULL), 0);
        vmt_thread_release(slot[i]);
        slot[i] = NULL;
        atomic_fetch_add(&deaths, 1);
      }
      if (!slot[i] && !enough) {
        unsigned s = (unsigned)rand_r(&seed);
        vmt_thread_t *t = start_named("worker", s % 3 == 0, worker, (void *)(uintptr_t)s);
        assert_non_null(t);
        if (s % 4 == 0) {
          /* Released while it runs: nobody joins it; its record is reclaimed when it ends. */
          vmt_thread_release(t);
          atomic_fetch_add(&deaths, 1);
        } else {
          slot[i] = t;
        }
      }
    }
    if (enough) {
      bool any = false;
      for (int i = 0; i < WORKERS; i++) any |= slot[i] != NULL;
      if (!any) break;
    }
    sleep_ms(1);
  }
  atomic_store(&stop_querier, true);
  assert_int_equal(vmt_thread_join(q, NULL), 0);
  vmt_thread_release(q);
  vmt_mx_set_stack_walker(NULL, NULL);
  print_message("%d query rounds, %d workers died, %d violations\n", atomic_load(&rounds),
                atomic_load(&deaths), atomic_load(&violations));
  if (atomic_load(&violations)) print_message("first: %s\n", first_violation);
  assert_int_equal(atomic_load(&violations), 0);
  /* Released workers may still be finishing; wait until only this test's threads are gone. */
  for (int i = 0; i < 10000 && vmt_mx_get_thread_count() > 0; i++) sleep_ms(1);
  assert_int_equal(vmt_mx_get_thread_count(), 0);
  vmt__registry_reclaim();
  for (int i = 0; i < 3; i++) assert_int_equal(vmt_monitor_destroy(mons[i]), 0);
  assert_int_equal(vmt_sync_destroy(shared_sync), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(threads_die_while_everything_is_queried),
  };
  return cmocka_run_group_tests_name("mx_stress_internal", tests, NULL, NULL);
}
