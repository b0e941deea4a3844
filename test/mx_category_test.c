/*
 * test/mx_category_test.c: CPU time per thread category (vmt_mx_get_category_usage, OMR's
 * omrthread_get_jvm_cpu_usage_info) through the public API. With threads of two categories
 * burning CPU and half of them exiting mid-way, each category's total lies between the sum of
 * its live threads' per-thread times read just before the call plus its exited threads' own
 * last readings, and the same sum read just after plus a bound on the exit path each exited
 * thread ran after its last reading; counts are exact. With threads exiting all through the
 * calls, no total ever goes down (a thread counted twice, then once, would). The runtime's
 * internal threads have no category; disabled CPU time reads -1; the dump has the section.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test/cpu_burn.h"
#include "test/thread_util.h"
#include "vmthread.h"

/* What one exited thread's exit path may burn after its body's last clock reading: hooks, TLS
 * destructors, lock release, the registry's writer lock. Microseconds in the default build;
 * generous, for the sanitizer builds and a loaded machine. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define EXIT_PATH_BOUND_NS (5LL * 1000 * 1000)
#else
#define EXIT_PATH_BOUND_NS (1LL * 1000 * 1000)
#endif

typedef struct burner {
  latch_t *phase1_done_gate;
  latch_t *exit_gate;        /* NULL: exit after phase 1 */
  latch_t *second_gate;
  _Atomic int *phase1_count;
  int64_t final_cpu_ns;      /* the body's own last reading (those that exit) */
} burner_t;

static void *burn_body(void *arg) {
  burner_t *b = arg;
  burn_cpu_ms(20);
  if (b->exit_gate == NULL) {
    b->final_cpu_ns = vmt_current_thread_cpu_time(VMT_CPU_TOTAL);
    atomic_fetch_add(b->phase1_count, 1);
    return NULL;
  }
  atomic_fetch_add(b->phase1_count, 1);
  latch_wait(b->second_gate);
  burn_cpu_ms(10);
  latch_wait(b->exit_gate);
  return NULL;
}

static const vmt_category_usage_t *find(const vmt_category_usage_t *u, size_t n,
                                        const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(u[i].name, name) == 0) return &u[i];
  return NULL;
}

static int64_t cpu_of(vmt_thread_t *t) {
  int64_t ns = -1;
  assert_int_equal(vmt_mx_get_thread_cpu_time(vmt_thread_id(t), &ns), 0);
  return ns;
}

#define PER_CATEGORY 4
static const char *const cats[2] = {"gc-test", "jit-test"};

static void totals_equal_live_plus_exited(void **state) {
  (void)state;
  latch_t second, exit_gate, unused;
  latch_init(&second);
  latch_init(&exit_gate);
  latch_init(&unused);
  _Atomic int phase1 = 0;
  burner_t b[2][PER_CATEGORY];
  vmt_thread_t *t[2][PER_CATEGORY];
  for (int c = 0; c < 2; c++) {
    for (int i = 0; i < PER_CATEGORY; i++) {
      /* Half of each category exits after its first burn. */
      b[c][i] = (burner_t){&unused, i % 2 ? &exit_gate : NULL, &second, &phase1, 0};
      vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_CATEGORY, .category = cats[c]};
      assert_int_equal(vmt_thread_start_ex(&t[c][i], &o, burn_body, &b[c][i]), 0);
    }
  }
  for (int c = 0; c < 2; c++)
    for (int i = 0; i < PER_CATEGORY; i += 2) assert_int_equal(vmt_thread_join(t[c][i], NULL), 0);
  while (atomic_load(&phase1) < 2 * PER_CATEGORY) burn_cpu_ms(1);
  latch_open(&second);   /* the live ones burn again while we read */

  for (int round = 0; round < 5; round++) {
    int64_t before[2] = {0, 0}, after[2] = {0, 0}, exited[2] = {0, 0};
    for (int c = 0; c < 2; c++)
      for (int i = 0; i < PER_CATEGORY; i++) {
        if (i % 2)
          before[c] += cpu_of(t[c][i]);
        else
          exited[c] += b[c][i].final_cpu_ns;
      }
    vmt_category_usage_t *u = NULL;
    size_t n = 0;
    assert_int_equal(vmt_mx_get_category_usage(&u, &n), 0);
    for (int c = 0; c < 2; c++)
      for (int i = 1; i < PER_CATEGORY; i += 2) after[c] += cpu_of(t[c][i]);
    for (int c = 0; c < 2; c++) {
      const vmt_category_usage_t *x = find(u, n, cats[c]);
      assert_non_null(x);
      assert_int_equal(x->live_count, PER_CATEGORY / 2);
      assert_int_equal(x->started_count, PER_CATEGORY);
      int64_t low = before[c] + exited[c];
      int64_t high = after[c] + exited[c] + (PER_CATEGORY / 2) * EXIT_PATH_BOUND_NS;
      if (x->cpu_time_ns < low || x->cpu_time_ns > high)
        fail_msg("%s: %lld ns not in [%lld, %lld]", cats[c], (long long)x->cpu_time_ns,
                 (long long)low, (long long)high);
      assert_true(x->exited_cpu_time_ns >= exited[c]);
      assert_true(x->exited_cpu_time_ns <= exited[c] + (PER_CATEGORY / 2) * EXIT_PATH_BOUND_NS);
    }
    vmt_mx_category_usage_free(u);
  }
  /* The rest exit: everything is on the exited side now, and nothing was lost on the way. */
  int64_t last_live[2] = {0, 0};
  for (int c = 0; c < 2; c++)
    for (int i = 1; i < PER_CATEGORY; i += 2) last_live[c] += cpu_of(t[c][i]);
  latch_open(&exit_gate);
  for (int c = 0; c < 2; c++)
    for (int i = 1; i < PER_CATEGORY; i += 2) assert_int_equal(vmt_thread_join(t[c][i], NULL), 0);
  vmt_category_usage_t *u = NULL;
  size_t n = 0;
  assert_int_equal(vmt_mx_get_category_usage(&u, &n), 0);
  for (int c = 0; c < 2; c++) {
    const vmt_category_usage_t *x = find(u, n, cats[c]);
    assert_int_equal(x->live_count, 0);
    assert_int_equal(x->cpu_time_ns, x->exited_cpu_time_ns);
    int64_t exited = 0;
    for (int i = 0; i < PER_CATEGORY; i += 2) exited += b[c][i].final_cpu_ns;
    assert_true(x->cpu_time_ns >= exited + last_live[c]);
  }
  vmt_mx_category_usage_free(u);
  for (int c = 0; c < 2; c++)
    for (int i = 0; i < PER_CATEGORY; i++) assert_int_equal(vmt_thread_release(t[c][i]), 0);
  latch_destroy(&second);
  latch_destroy(&exit_gate);
  latch_destroy(&unused);
}

/* ---- Exits during the calls: totals never go down --------------------------------------- */
typedef struct storm {
  _Atomic bool stop;
} storm_t;

static void *burn_briefly(void *arg) {
  (void)arg;
  burn_cpu_ns(200 * 1000);
  return NULL;
}

static void *start_and_end_threads(void *arg) {
  storm_t *s = arg;
  vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_CATEGORY, .category = "storm"};
  while (!atomic_load(&s->stop)) {
    vmt_thread_t *t;
    if (vmt_thread_start_ex(&t, &o, burn_briefly, NULL) != 0) continue;
    vmt_thread_join(t, NULL);
    vmt_thread_release(t);
  }
  return NULL;
}

static void totals_never_go_down_while_threads_exit(void **state) {
  (void)state;
  storm_t s = {0};
  pthread_t starters[2];
  for (int i = 0; i < 2; i++)
    assert_int_equal(pthread_create(&starters[i], NULL, start_and_end_threads, &s), 0);
  int64_t last = -1, started = 0, went_down = -1, down_from = 0;
  bool sane = true;
  /* At least 300 calls, and until 50 threads have come and gone during them; the failure is
   * reported after the storm stops (its threads must not outlive the test). */
  for (int i = 0; (i < 300 || started < 50) && i < 1000000 && went_down < 0 && sane; i++) {
    vmt_category_usage_t *u = NULL;
    size_t n = 0;
    sane = vmt_mx_get_category_usage(&u, &n) == 0;
    const vmt_category_usage_t *x = sane ? find(u, n, "storm") : NULL;
    if (x) {
      started = x->started_count;
      if (x->cpu_time_ns < last) went_down = x->cpu_time_ns, down_from = last;
      sane = x->exited_cpu_time_ns <= x->cpu_time_ns;
      last = x->cpu_time_ns;
    }
    vmt_mx_category_usage_free(u);
  }
  atomic_store(&s.stop, true);
  for (int i = 0; i < 2; i++) assert_int_equal(pthread_join(starters[i], NULL), 0);
  if (went_down >= 0)
    fail_msg("storm went down: %lld after %lld", (long long)went_down, (long long)down_from);
  assert_true(sane);
  assert_true(started >= 50 && last > 0);
}

/* ---- Edges -------------------------------------------------------------------------------- */
static void bad_input_internal_threads_and_disabled_time(void **state) {
  (void)state;
  size_t n;
  vmt_category_usage_t *u;
  assert_int_equal(vmt_mx_get_category_usage(NULL, &n), -EINVAL);
  assert_int_equal(vmt_mx_get_category_usage(&u, NULL), -EINVAL);
  assert_int_equal(vmt_mx_get_category_usage(&u, &n), 0);
  for (size_t i = 0; i < n; i++) {
    assert_true(strcmp(u[i].name, "vmt-internal") != 0);
    if (i) assert_true(strcmp(u[i - 1].name, u[i].name) < 0);   /* sorted */
  }
  vmt_mx_category_usage_free(u);
  if (!vmt_mx_is_thread_cpu_time_supported()) skip();
  assert_int_equal(vmt_mx_set_thread_cpu_time_enabled(false), 0);
  assert_int_equal(vmt_mx_get_category_usage(&u, &n), 0);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(u[i].cpu_time_ns, -1);
    assert_int_equal(u[i].exited_cpu_time_ns, -1);
  }
  vmt_mx_category_usage_free(u);
  assert_int_equal(vmt_mx_set_thread_cpu_time_enabled(true), 0);
}

static void dump_lists_the_categories(void **state) {
  (void)state;
  char *s = NULL;
  size_t len = 0;
  assert_int_equal(vmt_mx_thread_dump_to_string(&s, &len), 0);
  const char *sect = strstr(s, "Thread categories:\n");
  assert_non_null(sect);
  assert_non_null(strstr(sect, "\tgc-test: live=0 started=4 cpu="));
  free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(totals_equal_live_plus_exited),
      cmocka_unit_test(totals_never_go_down_while_threads_exit),
      cmocka_unit_test(bad_input_internal_threads_and_disabled_time),
      cmocka_unit_test(dump_lists_the_categories),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
