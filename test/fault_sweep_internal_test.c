/*
 * test/fault_sweep_internal_test.c: every fault seam (runtime/fault.h) failed at every call a
 * scenario makes through it, one call at a time. The scenario is what a VM does all day:
 * attach a foreign thread, start a named thread in a new category, read CPU and user times,
 * create and use a monitor and a synchronizer, ask the management API for ids, ThreadInfo,
 * times and a dump, then join and release everything. For each seam and each n, the n-th call
 * through the seam fails with the errno the real call would give; the sweep ends when the
 * scenario makes fewer than n calls through it.
 *
 * After every run: each operation gave success or a documented error, and the runtime is
 * consistent: live, daemon and per-category counts back where they were, total started moved by
 * exactly the starts and attaches that succeeded, no thread listed that should not be, and (ASan)
 * nothing leaked. Then the same scenario must succeed with nothing injected. Figures: faults
 * injected per seam, and what each one turned into (an error reported to the caller, or a
 * degradation the contract allows: a thread keeping its inherited kernel name, a -1 time).
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
#include "test/reliability.h"

static const struct {
  vmt__fault_site_t site;
  const char *name;
  int err;   /* what the real call fails with */
} seams[] = {
    {VMT__FAULT_ALLOC, "allocation", ENOMEM},
    {VMT__FAULT_PTHREAD_CREATE, "pthread_create", EAGAIN},
    {VMT__FAULT_SETNAME, "pthread_setname_np", ERANGE},
    {VMT__FAULT_CLOCK, "clock read", EINVAL},
    {VMT__FAULT_GETCPUCLOCKID, "pthread_getcpuclockid", ESRCH},
    {VMT__FAULT_MALLCTL, "mallctl", ENOENT},
    {VMT__FAULT_THREAD_END, "pthread_setspecific", ENOMEM},
    {VMT__FAULT_TIMER, "timer_create", EAGAIN},
};
enum { SEAMS = sizeof(seams) / sizeof(seams[0]), MAX_CALLS = 2000 };
/* The hook points after these (runtime/fault.h) have no call to fail: nothing to sweep. */
_Static_assert((int)SEAMS == (int)VMT__FAULT_FALLIBLE_COUNT, "every seam that can fail a call is swept");

/* What one scenario run saw. */
typedef struct run {
  int started, attached;     /* successes, counted by the registry */
  int errors;                /* operations that reported an error to the caller */
  int minus_one;             /* time / byte answers of -1 for a live thread */
  char bad[160];             /* an undocumented answer, if any */
} run_t;

static void bad_answer(run_t *r, const char *op, long rc) {
  if (r->bad[0] == '\0') snprintf(r->bad, sizeof(r->bad), "%s answered %ld", op, rc);
}

/* rc must be 0 or one of the errors the operation documents. */
static bool check_rc(run_t *r, const char *op, int rc, int e1, int e2) {
  if (rc == 0) return true;
  if (rc == -e1 || (e2 && rc == -e2)) {
    r->errors++;
    return false;
  }
  bad_answer(r, op, rc);
  return false;
}

static void check_time(run_t *r, const char *op, int64_t ns) {
  if (ns == -1) {
    r->minus_one++;
    if (getenv("VMT_SWEEP_DEBUG")) printf("  -1 from %s\n", op);
  }
  else if (ns < 0)
    bad_answer(r, op, (long)ns);
}

typedef struct body_state {
  vmt_monitor_t *m;
  vmt_sync_t *s;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  bool ready, go;
} body_state_t;

static void *named_body(void *arg) {
  body_state_t *b = arg;
  pthread_mutex_lock(&b->lock);
  b->ready = true;   /* running: its counters are published */
  pthread_cond_broadcast(&b->cond);
  while (!b->go) pthread_cond_wait(&b->cond, &b->lock);
  pthread_mutex_unlock(&b->lock);
  if (b->m && vmt_monitor_enter(b->m) == 0) vmt_monitor_exit(b->m);
  void *volatile p = malloc(100);
  free(p);
  return arg;
}

typedef struct foreign {
  run_t *r;
  body_state_t *b;
} foreign_t;

static void *foreign_body(void *arg) {
  foreign_t *f = arg;
  vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_NAME, .name = "sweep-foreign"};
  vmt_thread_t *me;
  int rc = vmt_thread_attach(&o, &me);
  if (check_rc(f->r, "vmt_thread_attach", rc, ENOMEM, 0)) {
    f->r->attached++;
    check_time(f->r, "vmt_current_thread_cpu_time", vmt_current_thread_cpu_time(VMT_CPU_USER));
    if (f->b->s && vmt_sync_lock(f->b->s) == 0) vmt_sync_unlock(f->b->s);
    if (vmt_thread_detach() != 0) bad_answer(f->r, "vmt_thread_detach", -1);
  }
  return NULL;
}

static void scenario(run_t *r, int iteration) {
  memset(r, 0, sizeof(*r));
  body_state_t b = {.go = false};
  pthread_mutex_init(&b.lock, NULL);
  pthread_cond_init(&b.cond, NULL);
  if (!check_rc(r, "vmt_monitor_create", vmt_monitor_create(&b.m, "sweep"), ENOMEM, 0)) b.m = NULL;
  if (!check_rc(r, "vmt_sync_create", vmt_sync_create(&b.s, "sweep"), ENOMEM, 0)) b.s = NULL;

  /* A foreign thread attaches while a runtime thread starts. */
  run_t fr = {0};   /* the foreign thread's own tally, merged after it is joined */
  foreign_t f = {.r = &fr, .b = &b};
  pthread_t p;
  if (pthread_create(&p, NULL, foreign_body, &f) != 0) abort();

  /* A new category every run: its interning allocates at the same point of every run, so the
   * sweep stays deterministic and covers that allocation too. */
  char category[32];
  snprintf(category, sizeof(category), "sweep-%d", iteration);
  vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_NAME | VMT_THREAD_OPT_CATEGORY |
                                     VMT_THREAD_OPT_DAEMON,
                            .name = "sweep-thread-with-a-long-name",
                            .category = category,
                            .daemon = true};
  vmt_thread_t *t = NULL;
  int rc = vmt_thread_start_ex(&t, &o, named_body, &b);
  bool running = check_rc(r, "vmt_thread_start_ex", rc, ENOMEM, EAGAIN);
  if (!running && t != NULL) bad_answer(r, "vmt_thread_start_ex left *out", rc);
  if (running) {
    r->started++;
    pthread_mutex_lock(&b.lock);
    while (!b.ready) pthread_cond_wait(&b.cond, &b.lock);
    pthread_mutex_unlock(&b.lock);
    check_time(r, "vmt_thread_cpu_time", vmt_thread_cpu_time(t, VMT_CPU_TOTAL));
    check_time(r, "vmt_thread_cpu_time", vmt_thread_cpu_time(t, VMT_CPU_USER));
    check_time(r, "vmt_thread_cpu_time", vmt_thread_cpu_time(t, VMT_CPU_USER_FAST));
    if (vmt_thread_tid(t) <= 0) bad_answer(r, "vmt_thread_tid", vmt_thread_tid(t));
    int64_t id = vmt_thread_id(t), ns;
    vmt_thread_info_t *info = NULL;
    if (check_rc(r, "vmt_mx_get_thread_info", vmt_mx_get_thread_info(id, 2, &info), ENOMEM, 0)) {
      if (info == NULL || info->id != id) bad_answer(r, "vmt_mx_get_thread_info: no info", 0);
      vmt_mx_thread_info_free(info);
    }
    if (check_rc(r, "vmt_mx_get_thread_cpu_time", vmt_mx_get_thread_cpu_time(id, &ns), ENOMEM, 0))
      check_time(r, "vmt_mx_get_thread_cpu_time", ns);
    int64_t bytes;
    if (vmt_mx_is_thread_allocated_memory_supported()) {   /* jemalloc only */
      rc = vmt_mx_get_thread_allocated_bytes(id, &bytes);
      if (check_rc(r, "vmt_mx_get_thread_allocated_bytes", rc, ENOMEM, 0))
        check_time(r, "vmt_mx_get_thread_allocated_bytes", bytes);
    }
  }
  int64_t *ids = NULL;
  size_t n;
  if (check_rc(r, "vmt_mx_get_all_thread_ids", vmt_mx_get_all_thread_ids(&ids, &n), ENOMEM, 0))
    vmt_mx_ids_free(ids);
  char *text = NULL;
  size_t len;
  if (check_rc(r, "vmt_mx_thread_dump_to_string", vmt_mx_thread_dump_to_string(&text, &len),
               ENOMEM, 0))
    free(text);
  check_time(r, "vmt_current_thread_cpu_time", vmt_current_thread_cpu_time(VMT_CPU_TOTAL));

  pthread_mutex_lock(&b.lock);
  b.go = true;
  pthread_cond_broadcast(&b.cond);
  pthread_mutex_unlock(&b.lock);
  pthread_join(p, NULL);
  r->attached += fr.attached;
  r->errors += fr.errors;
  r->minus_one += fr.minus_one;
  if (r->bad[0] == '\0' && fr.bad[0] != '\0') memcpy(r->bad, fr.bad, sizeof(r->bad));
  if (running) {
    void *result = NULL;
    rc = vmt_thread_join(t, &result);
    if (rc != 0 || result != &b) bad_answer(r, "vmt_thread_join", rc);
    if (vmt_thread_release(t) != 0) bad_answer(r, "vmt_thread_release", -1);
  }
  if (b.m && vmt_monitor_destroy(b.m) != 0) bad_answer(r, "vmt_monitor_destroy", -1);
  if (b.s && vmt_sync_destroy(b.s) != 0) bad_answer(r, "vmt_sync_destroy", -1);
  pthread_mutex_destroy(&b.lock);
  pthread_cond_destroy(&b.cond);
}

static size_t listed(void) {
  const vmt__snapshot_t *s = vmt__registry_acquire();
  size_t k = 0;
  for (size_t i = 0; i < s->count; i++)
    if (vmt__thread_is_listed(s->threads[i])) k++;
  vmt__registry_release(s);
  return k;
}

static vmt__counts_t c0;
static size_t listed0;

/* The runtime after a run: every thread of the run ended and was counted out. */
static void check_consistent(const char *what, int call, const vmt__counts_t *before,
                             const run_t *r) {
  if (r->bad[0] != '\0') fail_msg("%s, call %d: undocumented answer: %s", what, call, r->bad);
  vmt__counts_t c;
  vmt__registry_counts(&c);
  if (c.live != c0.live || c.daemon != c0.daemon)
    fail_msg("%s, call %d: live %d daemon %d, expected %d %d", what, call, c.live, c.daemon,
             c0.live, c0.daemon);
  if (c.total_started != before->total_started + r->started + r->attached)
    fail_msg("%s, call %d: total started moved by %lld for %d successes", what, call,
             (long long)(c.total_started - before->total_started), r->started + r->attached);
  if (listed() != listed0) fail_msg("%s, call %d: a thread stayed listed", what, call);
  for (vmt__category_t *cat = vmt__categories(); cat; cat = cat->next)
    if (strncmp(cat->name, "sweep-", 6) == 0 && atomic_load(&cat->live) != 0)
      fail_msg("%s: category %s still counts a live thread", what, cat->name);
}

static void every_seam_fails_at_every_call(void **state) {
  (void)state;
  run_t r;
  int iteration = 0;
  scenario(&r, iteration++);   /* warm-up: probes, hazard block */
  assert_string_equal(r.bad, "");
  vmt__registry_counts(&c0);
  listed0 = listed();
  int64_t total_faults = 0, total_runs = 0;
  for (int s = 0; s < SEAMS; s++) {
    int64_t injected = 0, runs = 0, errors = 0, minus_one = 0;
    int n;
    for (n = 0; n < MAX_CALLS; n++) {
      vmt__fault_arm(seams[s].site, n, 1, seams[s].err);
      vmt__counts_t before;
      vmt__registry_counts(&before);
      scenario(&r, iteration++);
      int hit = vmt__fault_injected(seams[s].site);
      vmt__fault_disarm_all();
      check_consistent(seams[s].name, n + 1, &before, &r);
      runs++;
      if (hit == 0) break;   /* the scenario makes only n calls through this seam */
      injected += hit;
      errors += r.errors;
      minus_one += r.minus_one;
    }
    assert_true(n < MAX_CALLS);
    /* With nothing injected, everything works again. */
    scenario(&r, iteration++);
    assert_string_equal(r.bad, "");
    assert_int_equal(r.errors, 0);
    assert_int_equal(r.started, 1);
    assert_int_equal(r.attached, 1);
    rel_figure_text("faults", "seam", "%s injected=%lld runs=%lld errors_reported=%lld "
                    "minus_one_answers=%lld", seams[s].name, (long long)injected,
                    (long long)runs, (long long)errors, (long long)minus_one);
    total_faults += injected;
    total_runs += runs;
  }
  /* Each seam failing every call for a whole run, then all of them at once. */
  for (int s = 0; s <= SEAMS; s++) {
    vmt__counts_t before;
    vmt__registry_counts(&before);
    for (int k = 0; k < SEAMS; k++)
      if (k == s || s == SEAMS) vmt__fault_arm(seams[k].site, 0, -1, seams[k].err);
    scenario(&r, iteration++);
    int64_t hit = 0;
    for (int k = 0; k < SEAMS; k++)
      if (k == s || s == SEAMS) hit += vmt__fault_injected(seams[k].site);
    vmt__fault_disarm_all();
    const char *what = s == SEAMS ? "all seams" : seams[s].name;
    check_consistent(what, -1, &before, &r);
    rel_figure_text("faults", "always_failing", "%s injected=%lld errors_reported=%d "
                    "minus_one_answers=%d", what, (long long)hit, r.errors, r.minus_one);
    total_faults += hit;
    total_runs++;
    scenario(&r, iteration++);
    assert_string_equal(r.bad, "");
    assert_int_equal(r.errors, 0);
  }
  vmt__registry_reclaim();
  rel_figure_text("faults", "build", "%s", rel_build_flavour());
  rel_figure("faults", "injected_total", total_faults);
  rel_figure("faults", "scenario_runs", total_runs);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_seam_fails_at_every_call),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
