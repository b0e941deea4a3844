/*
 * test/storm_internal_test.c: the lifecycle storm. Thousands of thread lifetimes (start, work,
 * exit, join; some released while still running; some foreign pthreads that attach and detach,
 * or end still attached) run on every core while querying threads walk the registry without
 * pause, reading counts, ids, names, states, tids, CPU and user times and allocated bytes of
 * threads that may be exiting under them, and a third polls the management API as a monitoring
 * agent would (counts, ids, ThreadInfo single and array, times by id and as arrays, allocated
 * bytes, dumps, deadlock scans), flipping the contention-monitoring and CPU-time switches and
 * resetting the peak now and then. Afterwards the counters must be exact, the registry
 * must hold only what it held before, every record must be back in the pool, every id unique,
 * and (under ASan) nothing leaked. The second test runs the same storm while an injector
 * thread makes every fault seam (runtime/fault.h) fail at random calls: refusals are allowed,
 * inexact books are not. Internal test: it checks the registry and the record pool directly.
 *
 * Scale. The storm runs for VMT_STORM_SECONDS = 2 s (the fault storm VMT_STORM_FAULT_SECONDS =
 * 1 s) or VMT_STORM_LIFETIMES = 200000 lifetimes, whichever ends first: seconds under
 * `scripts/test` in every configuration. The long run is the same binary with larger values
 * (docs/reliability.md, "Bounded and long runs").
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
#include <unistd.h>

#include <cmocka.h>

#include "runtime/registry/registry_impl.h"
#include "runtime/thread/thread.h"
#include "test/clock_util.h"
#include "test/reliability.h"

enum { MONITORS = 4, KINDS = 8 };

static const char *const kind_names[KINDS] = {
    "start-join",          "start-join-daemon", "start-join-named", "start-exit-join",
    "released-running",    "retained-joined",   "attach-detach",    "attach-end-attached",
};

typedef struct storm {
  int64_t deadline_ns;
  int64_t max_lifetimes;
  _Atomic int64_t claimed;
  _Atomic int64_t finished;           /* lifetimes that ran (started or attached) */
  /* The fault storm: seams fire at random while everything runs (storm_with_faults). */
  bool faults;
  _Atomic int64_t refused;            /* starts and attaches refused by an injected fault */
  _Atomic int64_t injected[VMT__FAULT_FALLIBLE_COUNT];
  _Atomic int64_t by_kind[KINDS];
  _Atomic int64_t start_retries;      /* EAGAIN from an overloaded machine: retried */
  _Atomic int32_t max_live_seen;      /* the largest live count a querier read */
  _Atomic int64_t *ids;               /* ids[i] of lifetime i, 0 until known */
  vmt_monitor_t *monitors[MONITORS];
  _Atomic bool stop;
  /* Queries. */
  _Atomic int64_t snapshot_walks, record_queries, time_reads, time_answers, count_reads,
      lookups;
  /* Management API queries (vmt_mx_*), by kind. */
  _Atomic int64_t mx_counts, mx_id_lists, mx_infos, mx_info_arrays, mx_times, mx_time_arrays,
      mx_alloc, mx_dumps, mx_deadlock_scans, mx_switches;
  /* Distinct records seen by creators (the pool is type-stable: a handful of addresses). */
  pthread_mutex_t seen_lock;
  vmt_thread_t **seen;
  size_t seen_count, seen_cap;
  /* The first failure seen off the main thread (cmocka asserts only on the main thread). */
  _Atomic int64_t failures;
  char first_failure[256];
} storm_t;

static storm_t storm;

/* An error an injected fault may cause (and nothing else may). */
#define FAULTED(rc) (storm.faults && ((rc) == -ENOMEM || (rc) == -EAGAIN))

#define STORM_CHECK(cond, ...)                                                            \
  do {                                                                                    \
    if (!(cond)) storm_fail(__VA_ARGS__);                                                 \
  } while (0)

static void storm_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void storm_fail(const char *fmt, ...) {
  if (atomic_fetch_add(&storm.failures, 1) != 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(storm.first_failure, sizeof(storm.first_failure), fmt, ap);
  va_end(ap);
}

static void remember_record(vmt_thread_t *t) {
  pthread_mutex_lock(&storm.seen_lock);
  for (size_t i = 0; i < storm.seen_count; i++)
    if (storm.seen[i] == t) {
      pthread_mutex_unlock(&storm.seen_lock);
      return;
    }
  if (storm.seen_count == storm.seen_cap) {
    storm.seen_cap = storm.seen_cap ? 2 * storm.seen_cap : 256;
    storm.seen = realloc(storm.seen, storm.seen_cap * sizeof(*storm.seen));
    if (storm.seen == NULL) abort();
  }
  storm.seen[storm.seen_count++] = t;
  pthread_mutex_unlock(&storm.seen_lock);
}

/* ---- the work each lifetime does --------------------------------------------------------- */
typedef struct body_arg {
  int64_t index;
  int kind;
  bool refused;   /* a foreign thread's attach was refused (fault storm) */
} body_arg_t;

static void do_work(int64_t index) {
  vmt_monitor_t *m = storm.monitors[index % MONITORS];
  STORM_CHECK(vmt_monitor_enter(m) == 0, "monitor enter failed");
  if (index % 3 == 0) STORM_CHECK(vmt_monitor_enter(m) == 0, "reentrant enter failed");
  void *volatile p = malloc((size_t)(index % 4096) + 1);
  free(p);
  if (index % 3 == 0) STORM_CHECK(vmt_monitor_exit(m) == 0, "reentrant exit failed");
  STORM_CHECK(vmt_monitor_exit(m) == 0, "monitor exit failed");
  vmt_thread_t *self = vmt_thread_current();
  STORM_CHECK(self != NULL, "a runtime thread without a current record");
  STORM_CHECK(vmt_thread_cpu_time(self, VMT_CPU_TOTAL) >= (storm.faults ? -1 : 0),
              "own CPU time unreadable");
  if (index % 16 == 0) vmt_park(1000);        /* 1 us: a timed wait that times out */
  if (index % 16 == 8) vmt_sleep_ns(1000);
}

static void *runtime_body(void *arg) {
  body_arg_t *a = arg;
  do_work(a->index);
  if (a->kind == 3) vmt_thread_exit(a);       /* the explicit-exit path; does not return */
  if (a->kind == 4) {                         /* nobody joins it: it owns its argument */
    free(a);
    return NULL;
  }
  return a;
}

static void *foreign_body(void *arg) {
  body_arg_t *a = arg;
  vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_NAME | VMT_THREAD_OPT_CATEGORY,
                            .name = "storm-foreign-\xc3\xa9t\xc3\xa9",
                            .category = "storm-foreign"};
  vmt_thread_t *t = NULL;
  int rc = vmt_thread_attach(a->index % 2 ? &o : NULL, &t);
  if (FAULTED(rc)) {
    a->refused = true;
    return NULL;
  }
  STORM_CHECK(rc == 0, "attach failed: %d", rc);
  if (rc != 0) return NULL;
  atomic_store(&storm.ids[a->index], vmt_thread_id(t));
  remember_record(t);
  vmt_thread_t *again = NULL;
  STORM_CHECK(vmt_thread_attach(NULL, &again) == 0 && again == t, "nested attach");
  do_work(a->index);
  STORM_CHECK(vmt_thread_detach() == 0, "nested detach");
  /* Kind 7 ends while attached: the runtime's end hook must detach it. */
  if (a->kind == 6) STORM_CHECK(vmt_thread_detach() == 0, "detach failed");
  return NULL;
}

static int start_retrying(vmt_thread_t **t, const vmt_thread_options_t *o, body_arg_t *a) {
  for (;;) {
    int rc = vmt_thread_start_ex(t, o, runtime_body, a);
    if (rc != -EAGAIN) return rc;
    atomic_fetch_add(&storm.start_retries, 1);
    usleep(1000);
  }
}

/* The creator's side of a runtime thread's lifetime once t started, by kind. */
static void end_runtime_lifetime(vmt_thread_t *t, int kind, body_arg_t *a) {
  switch (kind) {
    case 4:
      /* Released while (probably) running: the thread frees its record itself. */
      STORM_CHECK(vmt_thread_release(t) == 0, "release of a running thread");
      break;
    case 5:
      STORM_CHECK(vmt_thread_retain(t) == 0, "retain");
      STORM_CHECK(vmt_thread_release(t) == 0, "release 1 of 2");
      STORM_CHECK(vmt_thread_join(t, NULL) == 0, "join");
      STORM_CHECK(vmt_thread_release(t) == 0, "release 2 of 2");
      free(a);
      break;
    default: { /* 0 to 3: joined */
      /* The creator queries its own child while it may be exiting. */
      STORM_CHECK(vmt_thread_cpu_time(t, VMT_CPU_USER) >= -1, "bad user time");
      STORM_CHECK(vmt_thread_tid(t) > 0, "no tid");
      void *result = NULL;
      int rc = vmt_thread_join(t, &result);
      STORM_CHECK(rc == 0 && result == a, "join: %d", rc);
      STORM_CHECK(vmt_thread_state(t) == VMT_THREAD_TERMINATED, "joined but not TERMINATED");
      STORM_CHECK(vmt_thread_cpu_time(t, VMT_CPU_TOTAL) == -1, "time of a joined thread");
      STORM_CHECK(vmt_thread_join(t, NULL) == -EALREADY, "second join");
      STORM_CHECK(vmt_thread_release(t) == 0, "release");
      free(a);
      break;
    }
  }
}

static void one_lifetime(int64_t index) {
  int kind = (int)(index % KINDS);
  body_arg_t *a = malloc(sizeof(*a));
  if (a == NULL) abort();
  a->index = index;
  a->kind = kind;
  a->refused = false;
  vmt_thread_options_t o = {0};
  if (kind == 1) {
    o.flags = VMT_THREAD_OPT_DAEMON | VMT_THREAD_OPT_CATEGORY | VMT_THREAD_OPT_STACK_SIZE;
    o.daemon = true;
    o.category = "storm-daemon";
    o.stack_size = 128 * 1024;
  } else if (kind == 2) {
    o.flags = VMT_THREAD_OPT_NAME | VMT_THREAD_OPT_PRIORITY;
    o.name = "storm \xe2\x9a\xa1 a rather long thread name that the kernel must cut";
    o.priority = VMT_THREAD_MAX_PRIORITY;
  }
  if (kind <= 5) { /* a runtime thread; kinds 6 and 7 are foreign threads that attach */
    vmt_thread_t *t = NULL;
    int rc = start_retrying(&t, kind == 1 || kind == 2 ? &o : NULL, a);
    if (FAULTED(rc)) goto refused;
    STORM_CHECK(rc == 0, "start failed: %d", rc);
    if (rc == 0) {
      atomic_store(&storm.ids[index], vmt_thread_id(t));
      remember_record(t);
      end_runtime_lifetime(t, kind, a);
    }
  } else {
    pthread_t p;
    int err;
    while ((err = pthread_create(&p, NULL, foreign_body, a)) == EAGAIN) {
      atomic_fetch_add(&storm.start_retries, 1);
      usleep(1000);
    }
    STORM_CHECK(err == 0, "pthread_create: %d", err);
    if (err == 0) pthread_join(p, NULL);
    bool attach_refused = a->refused;
    free(a);
    if (attach_refused) {
      atomic_fetch_add(&storm.refused, 1);
      return;
    }
  }
  atomic_fetch_add(&storm.by_kind[kind], 1);
  atomic_fetch_add(&storm.finished, 1);
  return;
refused:
  free(a);
  atomic_fetch_add(&storm.refused, 1);
}

static void *creator(void *arg) {
  (void)arg;
  for (;;) {
    if (test_clock_ns(CLOCK_MONOTONIC) >= storm.deadline_ns) break;
    int64_t i = atomic_fetch_add(&storm.claimed, 1);
    if (i >= storm.max_lifetimes) break;
    one_lifetime(i);
  }
  return NULL;
}

/* ---- the queriers -------------------------------------------------------------------------- */
static void query_record(const vmt__snapshot_t *snap, vmt_thread_t *t) {
  atomic_fetch_add_explicit(&storm.record_queries, 1, memory_order_relaxed);
  int64_t id = vmt_thread_id(t);
  STORM_CHECK(id > 0, "listed record with id %lld", (long long)id);
  /* Found: this very record. Not found: it left since is_listed (exits tombstone in place). */
  vmt_thread_t *found = vmt__snapshot_find(snap, id);
  STORM_CHECK(found == t || (found == NULL && !vmt__thread_is_listed(t)),
              "lookup by id found another record");
  atomic_fetch_add_explicit(&storm.lookups, 1, memory_order_relaxed);
  STORM_CHECK(vmt_thread_name(t) != NULL && vmt_thread_name(t)[0] != '\0', "no name");
  STORM_CHECK(vmt_thread_category(t) != NULL, "no category");
  vmt_thread_state_t st = vmt_thread_state(t);
  STORM_CHECK(st >= VMT_THREAD_NEW && st <= VMT_THREAD_TERMINATED, "state %d", (int)st);
  STORM_CHECK(vmt_thread_priority(t) >= VMT_THREAD_MIN_PRIORITY &&
                  vmt_thread_priority(t) <= VMT_THREAD_MAX_PRIORITY,
              "priority");
  static const vmt_cpu_kind_t kinds[] = {VMT_CPU_TOTAL, VMT_CPU_USER, VMT_CPU_USER_FAST};
  for (size_t k = 0; k < 3; k++) {
    int64_t ns = vmt_thread_cpu_time(t, kinds[k]);
    STORM_CHECK(ns >= -1, "CPU time %lld", (long long)ns);
    atomic_fetch_add_explicit(&storm.time_reads, 1, memory_order_relaxed);
    if (ns >= 0) atomic_fetch_add_explicit(&storm.time_answers, 1, memory_order_relaxed);
  }
  STORM_CHECK(vmt__alloc_thread_bytes(t) >= -1, "allocated bytes");
}

static void query_round(uint64_t round) {
  const vmt__snapshot_t *snap = vmt__registry_acquire();
  STORM_CHECK(snap != NULL || storm.faults, "registry acquire failed");
  if (snap == NULL) return;
  atomic_fetch_add_explicit(&storm.snapshot_walks, 1, memory_order_relaxed);
  int64_t prev = 0;
  for (size_t i = 0; i < snap->count; i++) {
    vmt_thread_t *t = snap->threads[i];
    STORM_CHECK(t->id > prev, "snapshot not sorted by id");
    prev = t->id;
    if (vmt__thread_is_listed(t)) query_record(snap, t);
  }
  /* Ids of recent lifetimes, found or not (they may have ended): never a different thread. */
  int64_t claimed = atomic_load(&storm.claimed);
  for (int k = 0; k < 8 && claimed > 0; k++) {
    int64_t j = claimed - 1 - (int64_t)((round * 7 + (uint64_t)k) % 64);
    if (j < 0 || j >= storm.max_lifetimes) continue;
    int64_t id = atomic_load(&storm.ids[j]);
    if (id <= 0) continue;
    vmt_thread_t *t = vmt__snapshot_find(snap, id);
    atomic_fetch_add_explicit(&storm.lookups, 1, memory_order_relaxed);
    STORM_CHECK(t == NULL || vmt_thread_id(t) == id, "lookup of %lld found %lld",
                (long long)id, (long long)vmt_thread_id(t));
  }
  vmt__registry_release(snap);
  vmt__counts_t c;
  vmt__registry_counts(&c);
  atomic_fetch_add_explicit(&storm.count_reads, 1, memory_order_relaxed);
  int32_t seen = atomic_load_explicit(&storm.max_live_seen, memory_order_relaxed);
  while (c.live > seen && !atomic_compare_exchange_weak(&storm.max_live_seen, &seen, c.live)) {
  }
  STORM_CHECK(c.live >= 0 && c.daemon >= 0 && c.daemon <= c.live + 64, "counts %d/%d",
              c.live, c.daemon);
}

static void *querier(void *arg) {
  (void)arg;
  int64_t total_seen = 0;
  for (uint64_t round = 0; !atomic_load(&storm.stop); round++) {
    query_round(round);
    vmt__counts_t c;
    vmt__registry_counts(&c);
    STORM_CHECK(c.total_started >= total_seen, "total started went backwards");
    total_seen = c.total_started;
  }
  return NULL;
}

/* The management API's view, as a monitoring agent polls it: counts, ids, ThreadInfo, CPU and
 * user times and allocated bytes by id (one at a time and as arrays), dumps, deadlocks. Every
 * answer for an id must be about that id, or the Java "no answer" (-1 / NULL). */
static void mx_round(uint64_t round) {
  /* Under the sanitizers jemalloc is not the allocator: -ENOTSUP, as documented. */
  bool alloc_supported = vmt_mx_is_thread_allocated_memory_supported();
  int32_t live = vmt_mx_get_thread_count();
  int32_t peak = vmt_mx_get_peak_thread_count();
  int32_t daemon = vmt_mx_get_daemon_thread_count();
  STORM_CHECK(live >= 0 && daemon >= 0 && peak >= 0, "mx counts %d %d %d", live, peak, daemon);
  STORM_CHECK(vmt_mx_get_total_started_thread_count() >= 0, "mx total started");
  atomic_fetch_add_explicit(&storm.mx_counts, 4, memory_order_relaxed);

  int64_t *ids = NULL;
  size_t n = 0;
  int rc = vmt_mx_get_all_thread_ids(&ids, &n);
  if (FAULTED(rc)) return;
  STORM_CHECK(rc == 0, "get_all_thread_ids: %d", rc);
  if (rc != 0) return;
  atomic_fetch_add_explicit(&storm.mx_id_lists, 1, memory_order_relaxed);
  for (size_t i = 0; i < n; i++) {
    STORM_CHECK(ids[i] > 0 && (i == 0 || ids[i] > ids[i - 1]), "ids not ascending");
    vmt_thread_info_t *info = NULL;
    rc = vmt_mx_get_thread_info(ids[i], (int32_t)(round % 3), &info);
    STORM_CHECK(rc == 0 || FAULTED(rc), "get_thread_info: %d", rc);
    atomic_fetch_add_explicit(&storm.mx_infos, 1, memory_order_relaxed);
    if (info) {
      STORM_CHECK(info->id == ids[i], "ThreadInfo of %lld is about %lld", (long long)ids[i],
                  (long long)info->id);
      STORM_CHECK(info->name != NULL && info->category != NULL, "ThreadInfo without names");
      STORM_CHECK(info->cpu_time_ns >= -1 && info->user_time_ns >= -1, "ThreadInfo times");
      vmt_mx_thread_info_free(info);
    }
    int64_t cpu = -2, user = -2, bytes = -2;
    rc = vmt_mx_get_thread_cpu_time(ids[i], &cpu);
    STORM_CHECK((rc == 0 && cpu >= -1) || FAULTED(rc), "mx cpu time");
    rc = vmt_mx_get_thread_user_time(ids[i], &user);
    STORM_CHECK((rc == 0 && user >= -1) || FAULTED(rc), "mx user time");
    rc = vmt_mx_get_thread_allocated_bytes(ids[i], &bytes);
    STORM_CHECK(FAULTED(rc) || (alloc_supported ? rc == 0 && bytes >= -1 : rc == -ENOTSUP),
                "mx allocated bytes");
    atomic_fetch_add_explicit(&storm.mx_times, 2, memory_order_relaxed);
    atomic_fetch_add_explicit(&storm.mx_alloc, 1, memory_order_relaxed);
  }
  if (n > 0) {
    int64_t *out = malloc(n * sizeof(*out));
    if (out == NULL) abort();
    rc = vmt_mx_get_thread_cpu_time_array(ids, n, out);
    STORM_CHECK(rc == 0 || FAULTED(rc), "cpu time array");
    rc = vmt_mx_get_thread_user_time_array(ids, n, out);
    STORM_CHECK(rc == 0 || FAULTED(rc), "user time array");
    rc = vmt_mx_get_thread_allocated_bytes_array(ids, n, out);
    STORM_CHECK(FAULTED(rc) || (alloc_supported ? rc == 0 : rc == -ENOTSUP), "alloc array");
    atomic_fetch_add_explicit(&storm.mx_time_arrays, 3, memory_order_relaxed);
    free(out);
    vmt_thread_info_t **infos = NULL;
    rc = vmt_mx_get_thread_info_array(ids, n, true, true, 2, &infos);
    STORM_CHECK(rc == 0 || FAULTED(rc), "get_thread_info_array: %d", rc);
    if (rc == 0) {
      for (size_t i = 0; i < n; i++)
        STORM_CHECK(infos[i] == NULL || infos[i]->id == ids[i], "array ThreadInfo mismatch");
      vmt_mx_thread_info_array_free(infos, n);
    }
    atomic_fetch_add_explicit(&storm.mx_info_arrays, 1, memory_order_relaxed);
  }
  vmt_mx_ids_free(ids);
  /* The switches flip under load: times may answer -1 meanwhile, never garbage. */
  if (round % 64 == 0) {
    STORM_CHECK(vmt_mx_set_thread_contention_monitoring_enabled(round % 128 == 0) == 0,
                "contention monitoring switch");
    vmt_mx_reset_peak_thread_count();
    atomic_fetch_add_explicit(&storm.mx_switches, 2, memory_order_relaxed);
  }
  if (round % 96 == 0) {
    STORM_CHECK(vmt_mx_set_thread_cpu_time_enabled(round % 192 != 0) == 0, "cpu time switch");
    atomic_fetch_add_explicit(&storm.mx_switches, 1, memory_order_relaxed);
  }
  if (round % 8 == 0) {
    vmt_thread_info_t **all = NULL;
    size_t count = 0;
    rc = vmt_mx_dump_all_threads(true, true, 4, &all, &count);
    STORM_CHECK(rc == 0 || FAULTED(rc), "dump_all_threads");
    if (rc == 0 && all) vmt_mx_thread_info_array_free(all, count);
    char *text = NULL;
    size_t len = 0;
    rc = vmt_mx_thread_dump_to_string(&text, &len);
    STORM_CHECK((rc == 0 && text != NULL && strlen(text) == len) || FAULTED(rc),
                "thread_dump_to_string");
    if (rc == 0) free(text);
    atomic_fetch_add_explicit(&storm.mx_dumps, 2, memory_order_relaxed);
    int64_t *dl = NULL;
    size_t dn = 0;
    rc = vmt_mx_find_deadlocked_threads(&dl, &dn);
    STORM_CHECK((rc == 0 && dn == 0) || FAULTED(rc), "deadlock found");
    if (rc == 0) vmt_mx_ids_free(dl);
    atomic_fetch_add_explicit(&storm.mx_deadlock_scans, 1, memory_order_relaxed);
  }
}

static void *mx_querier(void *arg) {
  (void)arg;
  for (uint64_t round = 0; !atomic_load(&storm.stop); round++) mx_round(round);
  return NULL;
}

/* ---- the test ---------------------------------------------------------------------------- */
static size_t listed_in_registry(void) {
  const vmt__snapshot_t *s = vmt__registry_acquire();
  size_t n = 0;
  for (size_t i = 0; i < s->count; i++)
    if (vmt__thread_is_listed(s->threads[i])) n++;
  vmt__registry_release(s);
  return n;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Arms one seam at a time, at a random call among its next 50, every 100 us. Only the seams
 * that can fail a call: the hook points after them (runtime/fault.h) have nothing to fail. */
static const int seam_errno[VMT__FAULT_FALLIBLE_COUNT] = {
    [VMT__FAULT_ALLOC] = ENOMEM,         [VMT__FAULT_PTHREAD_CREATE] = EAGAIN,
    [VMT__FAULT_SETNAME] = ERANGE,       [VMT__FAULT_CLOCK] = EINVAL,
    [VMT__FAULT_GETCPUCLOCKID] = ESRCH,  [VMT__FAULT_MALLCTL] = ENOENT,
    [VMT__FAULT_TIMER] = EAGAIN,
};
static const char *const seam_names[VMT__FAULT_FALLIBLE_COUNT] = {
    [VMT__FAULT_ALLOC] = "allocation",   [VMT__FAULT_PTHREAD_CREATE] = "pthread_create",
    [VMT__FAULT_SETNAME] = "pthread_setname_np", [VMT__FAULT_CLOCK] = "clock_read",
    [VMT__FAULT_GETCPUCLOCKID] = "pthread_getcpuclockid", [VMT__FAULT_MALLCTL] = "mallctl",
    [VMT__FAULT_TIMER] = "timer_create",
};
static _Atomic bool injector_stop;

static void *injector(void *arg) {
  (void)arg;
  unsigned seed = 12345;
  while (!atomic_load(&injector_stop)) {
    int site = (int)(rand_r(&seed) % VMT__FAULT_FALLIBLE_COUNT);
    /* Arming resets the site's count: collect it first. */
    atomic_fetch_add(&storm.injected[site], vmt__fault_injected((vmt__fault_site_t)site));
    vmt__fault_arm((vmt__fault_site_t)site, (int)(rand_r(&seed) % 50), 1, seam_errno[site]);
    usleep(100);
  }
  vmt__fault_disarm_all();
  for (int site = 0; site < VMT__FAULT_FALLIBLE_COUNT; site++)
    atomic_fetch_add(&storm.injected[site], vmt__fault_injected((vmt__fault_site_t)site));
  return NULL;
}

static void *empty_body(void *arg) { return arg; }

static void run_storm(const char *T, bool faults, double seconds) {
  memset(&storm, 0, sizeof(storm));
  storm.faults = faults;
  atomic_store(&injector_stop, false);
  storm.max_lifetimes = (int64_t)rel_env_number("VMT_STORM_LIFETIMES", 200000);
  storm.ids = calloc((size_t)storm.max_lifetimes, sizeof(*storm.ids));
  assert_non_null(storm.ids);
  pthread_mutex_init(&storm.seen_lock, NULL);
  for (int i = 0; i < MONITORS; i++) assert_int_equal(vmt_monitor_create(&storm.monitors[i], "storm"), 0);

  vmt__registry_reclaim();
  vmt__counts_t c0;
  vmt__registry_counts(&c0);
  size_t listed0 = listed_in_registry();

  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int creators = 2 * (int)(cores < 2 ? 2 : cores) + 1, queriers = 3;
  pthread_t cr[64], qr[4];
  if (creators > 64) creators = 64;
  int64_t t0 = test_clock_ns(CLOCK_MONOTONIC);
  storm.deadline_ns = t0 + (int64_t)(seconds * 1e9);
  /* Two registry walkers (internal view) and one management-API poller. */
  for (int i = 0; i < queriers; i++)
    assert_int_equal(pthread_create(&qr[i], NULL, i == 0 ? mx_querier : querier, NULL), 0);
  pthread_t inj;
  if (faults) assert_int_equal(pthread_create(&inj, NULL, injector, NULL), 0);
  for (int i = 0; i < creators; i++) assert_int_equal(pthread_create(&cr[i], NULL, creator, NULL), 0);
  for (int i = 0; i < creators; i++) pthread_join(cr[i], NULL);
  if (faults) {
    atomic_store(&injector_stop, true);
    pthread_join(inj, NULL);
    /* A clean start and exit rebuilds the snapshot, dropping what exits without memory
     * tombstoned. */
    vmt_thread_t *t;
    assert_int_equal(vmt_thread_start(&t, empty_body, NULL), 0);
    assert_int_equal(vmt_thread_join(t, NULL), 0);
    assert_int_equal(vmt_thread_release(t), 0);
  }
  int64_t cleanup_starts = faults ? 1 : 0;

  /* Released-while-running threads finish on their own: wait (poll) for the live count. */
  int64_t wait_deadline = test_clock_ns(CLOCK_MONOTONIC) + 30LL * 1000 * 1000 * 1000;
  vmt__counts_t c;
  for (;;) {
    vmt__registry_counts(&c);
    if (c.live == c0.live || test_clock_ns(CLOCK_MONOTONIC) > wait_deadline) break;
    usleep(1000);
  }
  atomic_store(&storm.stop, true);
  for (int i = 0; i < queriers; i++) pthread_join(qr[i], NULL);
  int64_t elapsed_ns = test_clock_ns(CLOCK_MONOTONIC) - t0;
  int64_t lifetimes = atomic_load(&storm.finished);

  if (atomic_load(&storm.failures) != 0)
    fail_msg("%lld failure(s) during the storm; first: %s", (long long)storm.failures,
             storm.first_failure);

  /* Counters exact. */
  vmt__registry_counts(&c);
  assert_int_equal(c.live, c0.live);
  assert_int_equal(c.daemon, c0.daemon);
  assert_int_equal(c.total_started, c0.total_started + lifetimes + cleanup_starts);
  assert_true(c.peak >= c.live);   /* the poller resets the peak now and then */
  for (vmt__category_t *cat = vmt__categories(); cat; cat = cat->next)
    if (strncmp(cat->name, "storm", 5) == 0) assert_int_equal(atomic_load(&cat->live), 0);

  /* The registry holds what it held before, and nothing is left to reclaim. */
  vmt__registry_reclaim();
  assert_int_equal(listed_in_registry(), listed0);
  const vmt__snapshot_t *s = vmt__registry_acquire();
  size_t in_snapshot = s->count;
  vmt__registry_release(s);
  assert_int_equal(in_snapshot, listed0);

  /* Every record is back in the pool: magic cleared, no reference left. */
  for (size_t i = 0; i < storm.seen_count; i++) {
    vmt_thread_t *t = storm.seen[i];
    assert_int_equal(__atomic_load_n(&t->magic, __ATOMIC_RELAXED), 0);
    assert_int_equal(atomic_load(&t->refs), 0);
  }
  assert_true(vmt__record_pool_free_count() >= storm.seen_count);

  /* Every lifetime got an id, and no id was given twice. */
  int64_t *ids = malloc((size_t)lifetimes * sizeof(*ids));
  assert_non_null(ids);
  int64_t n = 0;
  for (int64_t i = 0; i < storm.max_lifetimes && n < lifetimes; i++) {
    int64_t id = atomic_load(&storm.ids[i]);
    if (id > 0) ids[n++] = id;
  }
  assert_int_equal(n, lifetimes);
  qsort(ids, (size_t)n, sizeof(*ids), cmp_i64);
  for (int64_t i = 1; i < n; i++) assert_true(ids[i] > ids[i - 1]);
  free(ids);

  rel_figure_text(T, "build", "%s", rel_build_flavour());
  if (faults) {
    int64_t total = 0;
    for (int site = 0; site < VMT__FAULT_FALLIBLE_COUNT; site++) {
      rel_figure_text(T, "injected", "%s %lld", seam_names[site],
                      (long long)atomic_load(&storm.injected[site]));
      total += atomic_load(&storm.injected[site]);
    }
    rel_figure(T, "injected_total", total);
    rel_figure(T, "refused_starts_and_attaches", atomic_load(&storm.refused));
    assert_true(total > 0);
  }
  rel_figure(T, "seconds_ms", elapsed_ns / 1000000);
  rel_figure(T, "cores", cores);
  rel_figure(T, "creators", creators);
  rel_figure(T, "queriers", queriers);
  rel_figure(T, "lifetimes", lifetimes);
  for (int k = 0; k < KINDS; k++)
    rel_figure_text(T, "lifetimes_by_kind", "%s %lld", kind_names[k],
                    (long long)atomic_load(&storm.by_kind[k]));
  rel_figure(T, "peak_live", atomic_load(&storm.max_live_seen));
  rel_figure(T, "records_distinct", (long long)storm.seen_count);
  rel_figure(T, "start_retries_eagain", atomic_load(&storm.start_retries));
  rel_figure(T, "snapshot_walks", atomic_load(&storm.snapshot_walks));
  rel_figure(T, "record_queries", atomic_load(&storm.record_queries));
  rel_figure(T, "cpu_time_reads", atomic_load(&storm.time_reads));
  rel_figure(T, "cpu_time_answers", atomic_load(&storm.time_answers));
  rel_figure(T, "count_reads", atomic_load(&storm.count_reads));
  rel_figure(T, "id_lookups", atomic_load(&storm.lookups));
  rel_figure(T, "mx_count_reads", atomic_load(&storm.mx_counts));
  rel_figure(T, "mx_id_lists", atomic_load(&storm.mx_id_lists));
  rel_figure(T, "mx_thread_infos", atomic_load(&storm.mx_infos));
  rel_figure(T, "mx_thread_info_arrays", atomic_load(&storm.mx_info_arrays));
  rel_figure(T, "mx_cpu_user_time_by_id", atomic_load(&storm.mx_times));
  rel_figure(T, "mx_time_and_alloc_arrays", atomic_load(&storm.mx_time_arrays));
  rel_figure(T, "mx_allocated_bytes_by_id", atomic_load(&storm.mx_alloc));
  rel_figure(T, "mx_dumps", atomic_load(&storm.mx_dumps));
  rel_figure(T, "mx_deadlock_scans", atomic_load(&storm.mx_deadlock_scans));
  rel_figure(T, "mx_switches", atomic_load(&storm.mx_switches));
  int64_t mx_total = atomic_load(&storm.mx_counts) + atomic_load(&storm.mx_id_lists) +
                     atomic_load(&storm.mx_infos) + atomic_load(&storm.mx_info_arrays) +
                     atomic_load(&storm.mx_times) + atomic_load(&storm.mx_time_arrays) +
                     atomic_load(&storm.mx_alloc) + atomic_load(&storm.mx_dumps) +
                     atomic_load(&storm.mx_deadlock_scans) + atomic_load(&storm.mx_switches);
  rel_figure(T, "mx_queries_total", mx_total);
  rel_figure(T, "queries_total",
             mx_total + atomic_load(&storm.snapshot_walks) + atomic_load(&storm.record_queries) +
                 atomic_load(&storm.time_reads) + atomic_load(&storm.count_reads) +
                 atomic_load(&storm.lookups));
  rel_figure(T, "failures", atomic_load(&storm.failures));
  STORM_CHECK(vmt_mx_set_thread_cpu_time_enabled(true) == 0, "cpu time back on");
  vmt_mx_set_thread_contention_monitoring_enabled(false);
  /* The management API agrees with the registry at rest. */
  assert_int_equal(vmt_mx_get_thread_count(), c.live);
  assert_int_equal(vmt_mx_get_daemon_thread_count(), c.daemon);
  assert_int_equal(vmt_mx_get_total_started_thread_count(), c.total_started);

  for (int i = 0; i < MONITORS; i++) assert_int_equal(vmt_monitor_destroy(storm.monitors[i]), 0);
  free(storm.seen);
  free(storm.ids);
}

static void lifecycle_storm(void **state) {
  (void)state;
  run_storm("storm", false, rel_env_number("VMT_STORM_SECONDS", 2));
}

/* The same storm while every seam fails now and then: starts, attaches and queries may be
 * refused with -ENOMEM or -EAGAIN, times may answer -1, and at the end everything must still
 * add up exactly. */
static void lifecycle_storm_with_faults(void **state) {
  (void)state;
  run_storm("storm_faults", true, rel_env_number("VMT_STORM_FAULT_SECONDS", 1));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(lifecycle_storm),
      cmocka_unit_test(lifecycle_storm_with_faults),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
