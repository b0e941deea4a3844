/*
 * test/registry_internal_test.c: the registry's storage (runtime/registry/registry.c, DESIGN):
 * snapshots are headers over arrays shared by many snapshots, starts append past the current
 * count, rebuilds copy into a new array. What that can get wrong, each checked here: a snapshot
 * held while thousands of threads come and go must keep exactly its view (count, entries, ids,
 * their records); a lookup must find every id whichever side of a rebuild it was appended on,
 * at the ends of the array and right after each rebuild; once readers release, reclamation
 * must free every array and header but the current ones (and, under ASan, LSan sees no leak);
 * internal threads, whose ids sort before all others, must go first without changing older
 * views; a start that cannot allocate (its header, or the array a full registry needs) must
 * leave the registry as it was; and a start must allocate as much with 2000 threads live as
 * with none (the copy this storage replaced allocated 8 bytes per live thread at every start).
 * The arrays of ids and hot cells beside the records must say what the records say after every
 * rebuild, and each cell's listed flag what vmt__thread_is_listed() says.
 * A reader past its hazard slots is refused, never aborted. Internal test: it reads the
 * registry and its counters directly.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#include <cmocka.h>
#include <jemalloc/jemalloc.h>

#include "runtime/registry/registry_impl.h"
#include "runtime/thread/thread.h"
#include "test/thread_util.h"

static vmt__registry_stats_t stats(void) {
  vmt__registry_stats_t st;
  vmt__registry_stats(&st);
  return st;
}

static int teardown(void **state) {
  (void)state;
  vmt__fault_disarm_all();
  return 0;
}

/* Starts and joins n threads, batch at a time alive together (so that exits and starts mix
 * and tombstones build up between rebuilds). */
static void churn(int n, int batch) {
  vmt_thread_t **t = calloc((size_t)batch, sizeof(*t));
  assert_non_null(t);
  for (int done = 0; done < n; done += batch) {
    int k = n - done < batch ? n - done : batch;
    for (int i = 0; i < k; i++) assert_int_equal(vmt_thread_start(&t[i], return_arg, NULL), 0);
    for (int i = 0; i < k; i++) {
      assert_int_equal(vmt_thread_join(t[i], NULL), 0);
      assert_int_equal(vmt_thread_release(t[i]), 0);
    }
  }
  free(t);
}

/* What a reader saw when it took its snapshot. */
typedef struct view {
  const vmt__snapshot_t *snap;
  size_t count;
  vmt_thread_t *const *threads;
  vmt_thread_t **records;
  int64_t *ids;
} view_t;

static void view_take(view_t *v) {
  v->snap = vmt__registry_acquire();
  assert_non_null(v->snap);
  v->count = v->snap->count;
  v->threads = v->snap->threads;
  v->records = malloc((v->count + 1) * sizeof(*v->records));
  v->ids = malloc((v->count + 1) * sizeof(*v->ids));
  assert_non_null(v->records);
  assert_non_null(v->ids);
  for (size_t i = 0; i < v->count; i++) {
    v->records[i] = v->snap->threads[i];
    v->ids[i] = v->snap->threads[i]->id;
  }
}

/* The number of differences between the snapshot now and what was seen (0 if it kept its
 * view): count, storage, entries, their ids and their records' magic. */
static size_t view_changes(const view_t *v) {
  size_t bad = v->snap->count != v->count || v->snap->threads != v->threads;
  size_t n = v->snap->count < v->count ? v->snap->count : v->count;
  for (size_t i = 0; i < n; i++) {
    vmt_thread_t *t = v->snap->threads[i];
    if (t != v->records[i]) {  /* (and t may not even be a record any more) */
      bad++;
      continue;
    }
    bad += t->id != v->ids[i] ||
           __atomic_load_n(&t->magic, __ATOMIC_RELAXED) != VMT__THREAD_MAGIC ||
           (i > 0 && v->records[i - 1]->id >= t->id);
  }
  return bad;
}

static void view_drop(view_t *v) {
  vmt__registry_release(v->snap);
  free(v->records);
  free(v->ids);
}

/* The arrays beside the records (ids, hot cells) say what the records say, entry by entry, and
 * each cell's listed flag what vmt__thread_is_listed() says (no thread of these tests is between
 * its TERMINATED store and the flag's, which are adjacent stores of the thread itself, while
 * this runs: they are all parked or joined). */
static void entries_agree(const vmt__snapshot_t *s) {
  for (size_t k = 0; k < s->count; k++) {
    vmt_thread_t *t = s->threads[k];
    assert_int_equal(s->ids[k], t->id);
    assert_ptr_equal(s->hot[k], t->hot);
    assert_int_equal(vmt__hot_is_listed(s->hot[k]), vmt__thread_is_listed(t));
  }
}

/* ---- a held snapshot keeps its view ---------------------------------------------------- */
typedef struct watcher {
  _Atomic bool stop;
  _Atomic size_t checks, changes;
} watcher_t;

static void *watch_a_view(void *arg) {
  watcher_t *w = arg;
  view_t v;
  view_take(&v);
  while (!atomic_load(&w->stop)) {
    atomic_fetch_add(&w->changes, view_changes(&v));
    atomic_fetch_add(&w->checks, 1);
  }
  view_drop(&v);
  return NULL;
}

static void a_held_snapshot_keeps_its_view_while_thousands_come_and_go(void **state) {
  (void)state;
  enum { PARKED = 100, CHURN = 3000 };
  static vmt_thread_t *parked[PARKED];
  latch_t g[2];  /* even, odd */
  latch_init(&g[0]);
  latch_init(&g[1]);
  for (int i = 0; i < PARKED; i++)
    assert_int_equal(vmt_thread_start(&parked[i], wait_for_latch, &g[i % 2]), 0);
  /* The view is taken over a fresh array (a rebuild has just dropped a tombstone), which the
   * starts below could append to or squeeze: it has room. */
  churn(1, 1);
  vmt__registry_reclaim();
  vmt__registry_stats_t before = stats();
  assert_true(before.capacity >= before.count + 64);
  view_t v;
  view_take(&v);
  assert_true(v.count >= PARKED);
  /* A second reader, in another thread, re-checks its own view all the while. */
  watcher_t w = {0};
  pthread_t reader;
  assert_int_equal(pthread_create(&reader, NULL, watch_a_view, &w), 0);
  /* Half of the threads both views hold leave: their tombstones sit inside the views. */
  latch_open(&g[0]);
  for (int i = 0; i < PARKED; i += 2) assert_int_equal(vmt_thread_join(parked[i], NULL), 0);
  churn(CHURN, 64);
  churn(CHURN / 3, 16);
  vmt__registry_reclaim();
  vmt__registry_stats_t after = stats();
  /* The churn went through rebuilds (new arrays) and appends to shared ones. */
  assert_true(after.rebuilds >= before.rebuilds + 2);
  assert_true(after.generation >= before.generation + CHURN);
  atomic_store(&w.stop, true);
  pthread_join(reader, NULL);
  assert_true(atomic_load(&w.checks) > 0);
  assert_int_equal(atomic_load(&w.changes), 0);
  assert_int_equal(view_changes(&v), 0);
  /* Lookups in the held view: the parked threads still running are found, those that left are
   * not, and none of the threads started after the view is. */
  for (int i = 0; i < PARKED; i++)
    assert_ptr_equal(vmt__snapshot_find(v.snap, vmt_thread_id(parked[i])),
                     i % 2 ? parked[i] : NULL);
  const vmt__snapshot_t *now = vmt__registry_acquire();
  for (size_t i = 0; i < now->count; i++) {
    vmt_thread_t *t = now->threads[i];
    if (t->id > v.ids[v.count - 1]) assert_null(vmt__snapshot_find(v.snap, t->id));
  }
  vmt__registry_release(now);
  view_drop(&v);
  latch_open(&g[1]);
  for (int i = 0; i < PARKED; i++) {
    if (i % 2) assert_int_equal(vmt_thread_join(parked[i], NULL), 0);
    vmt_thread_release(parked[i]);
  }
}

/* ---- lookups on both sides of every rebuild -------------------------------------------- */
static void lookups_find_every_id_at_array_boundaries(void **state) {
  (void)state;
  enum { N = 1500 };
  static vmt_thread_t *t[N];
  static bool gone[N];
  latch_t g[2];
  for (int k = 0; k < 2; k++) latch_init(&g[k]);
  /* 1000 threads alive at the end: small stacks. */
  vmt_thread_options_t small = {.flags = VMT_THREAD_OPT_STACK_SIZE, .stack_size = 256 * 1024};
  vmt__registry_reclaim();
  uint64_t rebuilds = stats().rebuilds;
  int boundaries = 0;
  const vmt__snapshot_t *prev = vmt__registry_acquire();
  for (int i = 0; i < N; i++) {
    /* Every third thread leaves soon (latch 0, opened every 100 starts), so rebuilds also
     * happen because of tombstones, not only because the array is full. */
    assert_int_equal(vmt_thread_start_ex(&t[i], &small, wait_for_latch, &g[i % 3 == 0 ? 0 : 1]),
                     0);
    const vmt__snapshot_t *s = vmt__registry_acquire();
    /* The newest thread is the last entry, found; so are both ends and their neighbours. */
    assert_true(s->count >= 1);
    assert_ptr_equal(s->threads[s->count - 1], t[i]);
    assert_ptr_equal(vmt__snapshot_find(s, vmt_thread_id(t[i])), t[i]);
    assert_null(vmt__snapshot_find(s, vmt_thread_id(t[i]) + 1));
    assert_null(vmt__snapshot_find(s, 0));
    assert_null(vmt__snapshot_find(s, INT64_MAX));
    bool rebuilt = s->threads != prev->threads;
    if (!rebuilt) {
      /* An append: the previous snapshot's entries are this one's first entries. */
      assert_int_equal(s->count, prev->count + 1);
    } else {
      boundaries++;
      /* Right after a rebuild: every live thread, and only those, in id order, the id and cell
       * arrays squeezed with the records. */
      entries_agree(s);
      for (size_t k = 1; k < s->count; k++) assert_true(s->threads[k - 1]->id < s->threads[k]->id);
      for (int j = 0; j <= i; j++)
        assert_ptr_equal(vmt__snapshot_find(s, vmt_thread_id(t[j])), gone[j] ? NULL : t[j]);
      /* And the previous array still answers for its own view. */
      for (int j = 0; j < i; j++)
        if (!gone[j]) assert_ptr_equal(vmt__snapshot_find(prev, vmt_thread_id(t[j])), t[j]);
    }
    vmt__registry_release(prev);
    prev = s;
    if (i % 100 == 99) {
      latch_open(&g[0]);
      for (int j = 0; j <= i; j += 3)
        if (!gone[j]) {
          assert_int_equal(vmt_thread_join(t[j], NULL), 0);
          gone[j] = true;
        }
      latch_destroy(&g[0]);
      latch_init(&g[0]);
    }
  }
  vmt__registry_release(prev);
  /* Growth from 1 to 1000 live threads, and tombstones, made several arrays. */
  assert_true(boundaries >= 4);
  assert_true(stats().rebuilds >= rebuilds + 4);
  latch_open(&g[0]);
  latch_open(&g[1]);
  for (int i = 0; i < N; i++) {
    if (!gone[i]) assert_int_equal(vmt_thread_join(t[i], NULL), 0);
    vmt_thread_release(t[i]);
  }
}

/* ---- reclamation ----------------------------------------------------------------------- */
enum { HOLDERS = 3 };
static pthread_barrier_t hold_barrier;

typedef struct holder {
  latch_t *take, *release;
  vmt__snapshot_t const *held;
} holder_t;

static void *hold_until_told(void *arg) {
  holder_t *h = arg;
  latch_wait(h->take);
  h->held = vmt__registry_acquire();
  pthread_barrier_wait(&hold_barrier);
  latch_wait(h->release);
  vmt__registry_release(h->held);
  return NULL;
}

static void reclamation_frees_every_array_once_readers_release(void **state) {
  (void)state;
  churn(10, 10);
  vmt__registry_reclaim();
  vmt__registry_stats_t base = stats();
  assert_int_equal(base.snapshots, 1);  /* the current one, nothing retired left */
  assert_int_equal(base.arrays, 1);
  /* Readers take snapshots at different times, each over a different array, and hold them
   * while threads come and go. */
  pthread_barrier_init(&hold_barrier, NULL, 2);
  latch_t take[HOLDERS], release;
  latch_init(&release);
  holder_t h[HOLDERS];
  pthread_t th[HOLDERS];
  for (int i = 0; i < HOLDERS; i++) {
    latch_init(&take[i]);
    h[i] = (holder_t){.take = &take[i], .release = &release};
    assert_int_equal(pthread_create(&th[i], NULL, hold_until_told, &h[i]), 0);
  }
  /* A thread the later holders see, and that ends while they hold their snapshots. */
  vmt_thread_t *last = NULL;
  latch_t last_go;
  latch_init(&last_go);
  for (int i = 0; i < HOLDERS; i++) {
    latch_open(&take[i]);
    pthread_barrier_wait(&hold_barrier);
    /* Two rebuilds after each take: every holder's array is a different one. */
    uint64_t r0 = stats().rebuilds;
    while (stats().rebuilds < r0 + 2) churn(50, 25);
    if (i == 0) assert_int_equal(vmt_thread_start(&last, wait_for_latch, &last_go), 0);
  }
  latch_open(&last_go);
  assert_int_equal(vmt_thread_join(last, NULL), 0);
  assert_int_equal(vmt_thread_release(last), 0);
  churn(200, 50);
  vmt__registry_reclaim();
  vmt__registry_stats_t held = stats();
  /* Each holder keeps its own header and array, nothing more: all else was freed. */
  assert_int_equal(held.arrays, 1 + HOLDERS);
  assert_int_equal(held.snapshots, 1 + HOLDERS);
  assert_int_equal(__atomic_load_n(&last->magic, __ATOMIC_RELAXED), VMT__THREAD_MAGIC);
  latch_open(&release);
  for (int i = 0; i < HOLDERS; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&hold_barrier);
  vmt__registry_reclaim();
  vmt__registry_stats_t end = stats();
  assert_int_equal(end.snapshots, 1);
  assert_int_equal(end.arrays, 1);
  assert_true(end.bytes >= sizeof(vmt__snapshot_t) + end.capacity * VMT__SNAPSHOT_ENTRY_BYTES);
  assert_true(end.bytes <= sizeof(vmt__snapshot_t) + 64 + end.capacity * VMT__SNAPSHOT_ENTRY_BYTES);
  /* The record that only the holders could still see is back in the pool. */
  assert_int_equal(__atomic_load_n(&last->magic, __ATOMIC_RELAXED), 0);
}

/* ---- internal threads sort first ------------------------------------------------------- */
static void sorted_and_found(const vmt__snapshot_t *s, vmt_thread_t *const *t, int n) {
  entries_agree(s);
  for (size_t k = 1; k < s->count; k++) assert_true(s->threads[k - 1]->id < s->threads[k]->id);
  for (int i = 0; i < n; i++) assert_ptr_equal(vmt__snapshot_find(s, vmt_thread_id(t[i])), t[i]);
}

static void internal_threads_go_first_without_changing_older_views(void **state) {
  (void)state;
  enum { APP = 5, INTERNAL = 2, N = APP + INTERNAL + 1 };
  vmt_thread_t *t[N];
  latch_t g;
  latch_init(&g);
  for (int i = 0; i < APP; i++) assert_int_equal(vmt_thread_start(&t[i], wait_for_latch, &g), 0);
  view_t v;
  view_take(&v);
  /* Internal threads take ids below every other (from -1 down): each goes to the front. */
  for (int i = APP; i < APP + INTERNAL; i++) {
    assert_int_equal(vmt__thread_start_internal(&t[i], "vmt-test-internal", wait_for_latch, &g),
                     0);
    assert_true(vmt_thread_id(t[i]) < 0);
    const vmt__snapshot_t *s = vmt__registry_acquire();
    assert_ptr_equal(s->threads[0], t[i]);
    sorted_and_found(s, t, i + 1);
    vmt__registry_release(s);
  }
  /* The next application thread appends again, after them all. */
  assert_int_equal(vmt_thread_start(&t[N - 1], wait_for_latch, &g), 0);
  const vmt__snapshot_t *s = vmt__registry_acquire();
  assert_ptr_equal(s->threads[s->count - 1], t[N - 1]);
  sorted_and_found(s, t, N);
  vmt__registry_release(s);
  assert_int_equal(view_changes(&v), 0);
  for (int i = APP; i < N; i++) assert_null(vmt__snapshot_find(v.snap, vmt_thread_id(t[i])));
  view_drop(&v);
  latch_open(&g);
  for (int i = 0; i < N; i++) {
    assert_int_equal(vmt_thread_join(t[i], NULL), 0);
    vmt_thread_release(t[i]);
  }
}

/* ---- allocation failures --------------------------------------------------------------- */
/* Fails the 1st, 2nd, ... allocation of a start until one succeeds; each failure must leave
 * the registry exactly as it was. Returns how many allocations the successful start made. */
static int starts_failing_each_allocation(void) {
  for (int skip = 0; skip < 16; skip++) {
    vmt__registry_stats_t st0 = stats();
    const vmt__snapshot_t *s0 = vmt__registry_acquire();
    vmt__fault_arm(VMT__FAULT_ALLOC, skip, 1, ENOMEM);
    vmt_thread_t *t;
    latch_t g;
    latch_init(&g);
    int rc = vmt_thread_start(&t, wait_for_latch, &g);
    bool injected = vmt__fault_injected(VMT__FAULT_ALLOC) == 1;
    vmt__fault_disarm_all();
    if (rc == 0) {
      assert_false(injected);
      latch_open(&g);
      assert_int_equal(vmt_thread_join(t, NULL), 0);
      vmt_thread_release(t);
      vmt__registry_release(s0);
      return skip;
    }
    assert_int_equal(rc, -ENOMEM);
    assert_true(injected);
    const vmt__snapshot_t *s1 = vmt__registry_acquire();
    vmt__registry_stats_t st1 = stats();
    assert_ptr_equal(s1, s0);  /* nothing published */
    assert_int_equal(s1->count, st0.count);
    assert_int_equal(st1.count, st0.count);
    assert_int_equal(st1.generation, st0.generation);
    assert_int_equal(st1.capacity, st0.capacity);
    assert_int_equal(st1.tombstones, st0.tombstones);
    assert_int_equal(st1.snapshots, st0.snapshots);
    assert_int_equal(st1.arrays, st0.arrays);
    assert_int_equal(st1.bytes, st0.bytes);
    vmt__registry_release(s1);
    vmt__registry_release(s0);
  }
  fail_msg("no start succeeded");
  return -1;
}

static void a_start_that_cannot_allocate_leaves_the_registry_intact(void **state) {
  (void)state;
  /* Room in the array: the start allocates its record, name and header. */
  churn(1, 1);
  vmt__registry_reclaim();
  vmt__registry_stats_t st = stats();
  assert_true(st.capacity > st.count + 1);
  int appending = starts_failing_each_allocation();
  assert_true(appending >= 3);
  /* A full array: fill it with parked threads (appends only: no tombstones), then the start
   * needs one more allocation, the new array, and fails cleanly without it too. */
  churn(1, 1);
  vmt__registry_reclaim();
  st = stats();
  size_t room = st.capacity - st.count;
  vmt_thread_t **t = calloc(room, sizeof(*t));
  latch_t g;
  latch_init(&g);
  for (size_t i = 0; i < room; i++)
    assert_int_equal(vmt_thread_start(&t[i], wait_for_latch, &g), 0);
  st = stats();
  assert_int_equal(st.count, st.capacity);
  int rebuilding = starts_failing_each_allocation();
  assert_int_equal(rebuilding, appending + 1);
  latch_open(&g);
  for (size_t i = 0; i < room; i++) {
    assert_int_equal(vmt_thread_join(t[i], NULL), 0);
    vmt_thread_release(t[i]);
  }
  free(t);
}

/* ---- what a start costs does not depend on the live threads ---------------------------- */
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
static uint64_t allocated_so_far(void) {
  uint64_t *p = NULL;
  size_t sz = sizeof(p);
  assert_int_equal(mallctl("thread.allocatedp", &p, &sz, NULL, 0), 0);
  return atomic_load_explicit((_Atomic uint64_t *)p, memory_order_relaxed);
}

static int by_value(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Bytes the calling thread allocates in vmt_thread_start: the median of 15 starts, each from
 * a registry whose retired records are back in the pool. */
static uint64_t bytes_per_start(void) {
  uint64_t b[15];
  for (int i = 0; i < 15; i++) {
    vmt__registry_reclaim();
    vmt_thread_t *t;
    uint64_t a0 = allocated_so_far();
    assert_int_equal(vmt_thread_start(&t, return_arg, NULL), 0);
    b[i] = allocated_so_far() - a0;
    assert_int_equal(vmt_thread_join(t, NULL), 0);
    vmt_thread_release(t);
  }
  qsort(b, 15, sizeof(b[0]), by_value);
  return b[7];
}
#endif

static void a_start_allocates_as_much_with_2000_live_threads_as_with_none(void **state) {
  (void)state;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  skip();  /* the sanitizer's malloc replaces jemalloc's, whose counter this test reads */
#else
  enum { LIVE = 2000 };
  uint64_t few = bytes_per_start();
  static vmt_thread_t *t[LIVE];
  latch_t g;
  latch_init(&g);
  vmt_thread_options_t small = {.flags = VMT_THREAD_OPT_STACK_SIZE, .stack_size = 128 * 1024};
  for (int i = 0; i < LIVE; i++)
    assert_int_equal(vmt_thread_start_ex(&t[i], &small, wait_for_latch, &g), 0);
  uint64_t many = bytes_per_start();
  latch_open(&g);
  for (int i = 0; i < LIVE; i++) {
    assert_int_equal(vmt_thread_join(t[i], NULL), 0);
    vmt_thread_release(t[i]);
  }
  /* A copy of the registry would be 8 bytes per live thread: 16 KB here. */
  print_message("bytes allocated per start: %llu, then %llu with %d more threads live\n",
                (unsigned long long)few, (unsigned long long)many, LIVE);
  assert_true(many <= few + 64);
#endif
}

/* A thread holds at most VMT__HAZARDS_PER_THREAD snapshots; one more was a programming error
 * that aborted the process ("more than 4 registry snapshots held by one thread"). But the host
 * reaches it: a stack walker is the VM's code, runs while the query that called it holds a
 * snapshot, and may query again (ThreadInfo with frames of a carrier thread, say), whose walk
 * runs the walker again. Such a nesting three deep aborted; the runtime must answer -ENOMEM
 * (the error every registry read documents) instead. */
static int nest_depth, nest_errors, nest_others;

static int nesting_walker(vmt_thread_t *t, vmt_stack_frame_t *frames, int32_t max, void *ctx) {
  (void)ctx;
  if (nest_depth < 2 * VMT__HAZARDS_PER_THREAD) {
    nest_depth++;
    vmt_thread_info_t *info = NULL;
    int rc = vmt_mx_get_thread_info(vmt_thread_id(t), 4, &info);
    if (rc == -ENOMEM) nest_errors++;
    else if (rc != 0) nest_others++;
    vmt_mx_thread_info_free(info);
    nest_depth--;
  }
  if (max < 1) return 0;
  frames[0] = (vmt_stack_frame_t){.function = "nested", .file = NULL, .line = 1, .pc = 0};
  return 1;
}

static void a_reader_past_its_hazard_slots_is_refused(void **state) {
  (void)state;
  const vmt__snapshot_t *held[VMT__HAZARDS_PER_THREAD];
  for (int i = 0; i < VMT__HAZARDS_PER_THREAD; i++) assert_non_null(held[i] = vmt__registry_acquire());
  assert_null(vmt__registry_acquire());
  for (int i = VMT__HAZARDS_PER_THREAD - 1; i >= 0; i--) vmt__registry_release(held[i]);

  vmt_thread_t *me;
  assert_int_equal(vmt_thread_attach(NULL, &me), 0);
  vmt_mx_set_stack_walker(nesting_walker, NULL);
  vmt_thread_info_t *info = NULL;
  int rc = vmt_mx_get_thread_info(vmt_thread_id(me), 4, &info);
  vmt_mx_set_stack_walker(NULL, NULL);
  assert_true(rc == 0 || rc == -ENOMEM);
  vmt_mx_thread_info_free(info);
  assert_true(nest_errors > 0);   /* the nesting did run out of slots */
  assert_int_equal(nest_others, 0);
  /* Every slot came back. */
  for (int i = 0; i < VMT__HAZARDS_PER_THREAD; i++) assert_non_null(held[i] = vmt__registry_acquire());
  for (int i = VMT__HAZARDS_PER_THREAD - 1; i >= 0; i--) vmt__registry_release(held[i]);
  assert_int_equal(vmt_thread_detach(), 0);
}

/* A thread is counted once, by its starter or by itself if it runs first (runtime/thread/
 * start.c); the one that does not count it sees the count claimed and goes on without the
 * lock. Whatever it then asks about itself must find the count complete: listed, a CPU time,
 * in the live count. Here the starter is held in the middle of the count (the seam waits, up to
 * a bound, for the child's first questions) while the child runs. */
static struct {
  _Atomic int asked;                    /* the child has asked its questions */
  _Atomic int unlisted, cpu_minus_one, not_live;
} midway;

static void hold_count_midway(void *arg) {
  (void)arg;
  if (vmt_thread_current() != NULL) return;   /* the child counting itself: no hold */
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    if (atomic_load(&midway.asked)) return;
    clock_gettime(CLOCK_MONOTONIC, &t);
    /* A child blocked on the writer lock this hold has cannot ask: let go after 50 ms. */
    if ((t.tv_sec - t0.tv_sec) * 1000000000LL + (t.tv_nsec - t0.tv_nsec) > 50000000LL) return;
    sched_yield();
  }
}

static void *ask_about_self(void *arg) {
  (void)arg;
  vmt_thread_t *self = vmt_thread_current();
  if (!vmt__thread_is_listed(self)) atomic_fetch_add(&midway.unlisted, 1);
  int64_t ns = -1;
  if (vmt_mx_get_thread_cpu_time(vmt_thread_id(self), &ns) != 0 || ns < 0)
    atomic_fetch_add(&midway.cpu_minus_one, 1);
  if (vmt_mx_get_thread_count() < 1) atomic_fetch_add(&midway.not_live, 1);
  atomic_store(&midway.asked, 1);
  return NULL;
}

static void a_thread_never_sees_its_own_count_half_done(void **state) {
  (void)state;
  memset(&midway, 0, sizeof(midway));
  vmt__fault_set_hook(VMT__FAULT_COUNT_MIDWAY, hold_count_midway, NULL);
  for (int i = 0; i < 10; i++) {
    atomic_store(&midway.asked, 0);
    vmt_thread_t *t;
    assert_int_equal(vmt_thread_start(&t, ask_about_self, NULL), 0);
    assert_int_equal(vmt_thread_join(t, NULL), 0);
    assert_int_equal(vmt_thread_release(t), 0);
    assert_int_equal(atomic_load(&midway.asked), 1);
  }
  vmt__fault_set_hook(VMT__FAULT_COUNT_MIDWAY, NULL, NULL);
  assert_int_equal(atomic_load(&midway.unlisted), 0);
  assert_int_equal(atomic_load(&midway.cpu_minus_one), 0);
  assert_int_equal(atomic_load(&midway.not_live), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(a_reader_past_its_hazard_slots_is_refused, teardown),
      cmocka_unit_test_teardown(a_held_snapshot_keeps_its_view_while_thousands_come_and_go,
                                teardown),
      cmocka_unit_test_teardown(lookups_find_every_id_at_array_boundaries, teardown),
      cmocka_unit_test_teardown(reclamation_frees_every_array_once_readers_release, teardown),
      cmocka_unit_test_teardown(internal_threads_go_first_without_changing_older_views,
                                teardown),
      cmocka_unit_test_teardown(a_start_that_cannot_allocate_leaves_the_registry_intact,
                                teardown),
      cmocka_unit_test_teardown(a_start_allocates_as_much_with_2000_live_threads_as_with_none,
                                teardown),
      cmocka_unit_test_teardown(a_thread_never_sees_its_own_count_half_done, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
