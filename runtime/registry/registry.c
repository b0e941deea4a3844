/*
 * runtime/registry/registry.c: the set of live threads and its counters, safe to walk while
 * threads start and exit (the model is HotSpot's ThreadsSMR; docs/design.md, "Registry").
 *
 * DESIGN. A snapshot is a 40-byte header (entries, count, generation) over an array of record
 * pointers sorted by id, and one array serves many snapshots. Ids are handed out under the
 * writer lock, so a starting thread's id is larger than any already in: a start appends. It
 * writes the slot just past the current snapshot's count, which no published snapshot covers,
 * and publishes a new header with count + 1 over the same array. The entries [0, count) of a
 * published snapshot are never written again, so every snapshot stays immutable, and a start
 * allocates one header and copies nothing, whatever the number of threads. (Go's runtime keeps
 * its goroutines the same way: an append-only array that readers take as a pointer and a
 * length.) HotSpot's ThreadsList::add_thread copies the whole list at every start, and
 * remove_thread at every exit; this file copied at every start until issue 12 item 17: at
 * 10,000 live threads, start+join grew 1.21-1.50x more than raw pthread's from 10 to 10,000
 * live threads (bench/thread_start.c "live threads", eight runs on the shared machine),
 * 0.94-1.11x with the shared array (nine runs; 0.94-1.03x in the eight at load below 700); a start allocated 20,496 bytes with 2000
 * threads live against 80 with none, now 80 and 80 (test/registry_internal_test.c). Timed in
 * isolation at 10,000 entries (a throwaway loop with jemalloc on this machine), one insert
 * cost 2,090 ns copying everything, 40-60 ns as a copy-on-write of one 256-entry chunk and of
 * the chunk directory (which still grows with n, and makes walkers loop over chunks), 8-18 ns
 * with the shared array. Walkers see one flat
 * array either way: `threads[i]`, i < count (the same loop over a header-and-array pair or
 * over the old contiguous snapshot measured alike, 2.2-4.4 ns per entry).
 *
 * Beside `threads` the array keeps each entry's id and hot cell (registry.h), written with the
 * record pointer and never changed, so lookups search 8-byte ids instead of chasing a pointer
 * per probe, and the walks that need only ids, listed flags and allocation counters (all ids,
 * allocated bytes) read the arrays and the cells, never a record. Reading a line of each
 * record, those walks cost 2.99x (all ids) and 1.55x (allocated bytes) as much per thread at
 * 10,000 threads as at 1000 in the run of record before this (docs/benchmarks.md, 2026-12-02):
 * 1000 records (under 0.5 MB) stay in a core's 1 MB L2 here between calls, 10,000 (about 5 MB)
 * do not. The mutable per-thread flag such a walk needs (listed) lives in the cell, one copy
 * per record, not in the array: an array copied by a rebuild would otherwise hold a second
 * copy for exits to update. A start writes three words instead of one, and a rebuild copies
 * three arrays.
 *
 * An exit does not touch the array: it tombstones its record in place (lookups and listings
 * skip it; the record stays allocated) and a later rebuild drops it. A rebuild copies the
 * current entries into a new array (room for 1.5x the live entries + 64, the appends to come),
 * squeezes the tombstones out and publishes a header over it; arrays already published are
 * never changed. A start rebuilds when the array is full, or when tombstones reach 8 + 1/64 of
 * the live entries, so a walk reads at most that many dead entries (8 + 1.6%); a rebuild comes
 * once per Θ(n) starts and its O(n) copy costs each start O(1): about 64 pointers (at 10,000
 * live, 10,164 pointers every 164 starts). An exit rebuilds only when tombstones crowd the
 * array (over 64 and twice the live entries): a thread whose body never touched the allocator
 * does not make jemalloc set up (and tear down, with madvise and a TLB shootdown) a thread cache
 * just to leave, which measured 20-30 us per thread here, and an exit cannot fail for want of
 * memory (without it the tombstones wait). A rebuild finds each tombstone's slot from the index
 * it was appended at (still right unless an earlier rebuild moved it; else a binary search), so
 * it reads the records of the tombstones, not all n of them.
 *
 * Readers protect the header they read with a hazard pointer (hazard.c) and never lock.
 * Reclamation never makes a writer wait. A retired header may be freed once no hazard slot
 * holds it, and an array with the last header over it. A record that left the registry keeps
 * the registry's reference until no reader can still see it: exactly the snapshots with a
 * generation in [inserted_generation, removed_generation] held it, so it is safe once no
 * protected snapshot has a generation in that range. Memory held: the current array and header,
 * the headers retired since the last reclamation, and for each reader that holds an older
 * snapshot, that snapshot's header, array and records only, not every thread that came and went
 * meanwhile. Retired headers are pushed before the records they drop, and the reclaimer takes
 * the records first, so every snapshot that can hold a record it takes is in its own list.
 * Reclamation runs amortised (once 16 + <hazard blocks> items are pending) from a start or exit
 * that finds the reclaim lock free; it never blocks on it.
 *
 * Counters (live, peak, daemon, total started, per-category live, started and exited CPU)
 * change under the writer lock and are read with plain atomic loads. An exit's CPU time moves
 * into its category, and its port record becomes exiting, inside an odd exit sequence, so a
 * reader of a category's whole CPU time (exited total plus live clocks) can tell whether an
 * exit raced with its sweep (vmt__registry_exit_seq).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/registry/registry_impl.h"

/* The storage of one or more snapshots: slots [0, count of the newest header over it) are
 * published and never written again; the writer fills the rest, one append at a time. An entry
 * is three words in three arrays of one allocation: the record (slot), its id and its hot cell
 * (both immutable for the record's life in the registry), so that a walk over ids or cells
 * reads 8 bytes per thread of each array instead of a line of each record. */
struct vmt__registry_array {
  size_t capacity;
  _Atomic size_t users;  /* headers over it, not yet freed; the last one frees the array */
  int64_t *id;                       /* capacity entries, after slot[] */
  struct vmt__thread_hot **hot;      /* capacity entries, after id[] */
  vmt_thread_t *slot[];
};
typedef struct vmt__registry_array registry_array_t;

static vmt__snapshot_t empty_snapshot;
_Atomic(vmt__snapshot_t *) vmt__current_snapshot = &empty_snapshot;

static pthread_mutex_t writer_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t generation;            /* of the current snapshot; writer_lock */
/* The last ids handed out; writer_lock. Internal threads (the SIGQUIT dump thread) count down
 * from -1: they must not use up an id that management shows (Java's ids are the application's
 * threads', and a dump enabled before the first start must not make that thread #2). They sort
 * first, so their start inserts at the front of a new array (a copy, rare); management never
 * looks an id <= 0 up (-EINVAL), so they cannot be found by id either. */
static int64_t last_id, last_internal_id;
static size_t tombstoned;              /* tombstones in the current snapshot; writer_lock */
static vmt_thread_t *tombstones;       /* the same records, linked by list_next; writer_lock */
/* The current snapshot's entries and live entries, for sizing a rebuild before the lock. */
static _Atomic size_t count_hint, kept_hint;

static _Atomic int32_t live_count, peak_count, daemon_count;
static _Atomic int64_t started_total;
static _Atomic uint64_t exit_seq;      /* odd inside an exit's CPU accounting; writer_lock */

static _Atomic(vmt__snapshot_t *) retired_snapshots;
static _Atomic(vmt_thread_t *) retired_records;
static _Atomic size_t retired_pending;
static _Atomic size_t reclaim_threshold = 16;

static pthread_mutex_t reclaim_lock = PTHREAD_MUTEX_INITIALIZER;
static vmt__snapshot_t *kept_snapshots;  /* still protected at the last reclamation */
static vmt_thread_t *kept_records;

/* What the registry's memory is (vmt__registry_stats). */
static _Atomic size_t snapshots_held, arrays_held, bytes_held;
static _Atomic uint64_t rebuild_count;

VMT__PROCESS_STATE(registry_ids,
                   .symbols = "last_id last_internal_id snapshots_held arrays_held bytes_held "
                              "rebuild_count",
                   .rule = VMT__FORK_KEEP,
                   .fork = "ids go on counting (never reused; the parent's threads keep theirs); "
                           "the memory counted is the child's too");

static vmt__snapshot_t *snapshot_alloc(void) {
  if (vmt__fault_hit(VMT__FAULT_ALLOC) != 0) return NULL;
  vmt__snapshot_t *s = malloc(sizeof(*s));
  if (s == NULL) return NULL;
  s->array = NULL;  /* until published */
  atomic_fetch_add_explicit(&snapshots_held, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&bytes_held, sizeof(*s), memory_order_relaxed);
  return s;
}

static registry_array_t *array_alloc(size_t capacity) {
  if (vmt__fault_hit(VMT__FAULT_ALLOC) != 0) return NULL;
  size_t bytes = sizeof(registry_array_t) + capacity * VMT__SNAPSHOT_ENTRY_BYTES;
  registry_array_t *a = malloc(bytes);
  if (a == NULL) return NULL;
  a->capacity = capacity;
  a->id = (int64_t *)&a->slot[capacity];
  a->hot = (struct vmt__thread_hot **)&a->id[capacity];
  atomic_init(&a->users, 0);
  atomic_fetch_add_explicit(&arrays_held, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&bytes_held, bytes, memory_order_relaxed);
  return a;
}

static void array_free(registry_array_t *a) {
  if (a == NULL) return;
  atomic_fetch_sub_explicit(&arrays_held, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&bytes_held,
                            sizeof(registry_array_t) + a->capacity * VMT__SNAPSHOT_ENTRY_BYTES,
                            memory_order_relaxed);
  free(a);
}

/* A header never published, or one no reader can hold any more. */
static void snapshot_free(vmt__snapshot_t *s) {
  registry_array_t *a = s->array;
  if (a && atomic_fetch_sub_explicit(&a->users, 1, memory_order_acq_rel) == 1) array_free(a);
  atomic_fetch_sub_explicit(&snapshots_held, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&bytes_held, sizeof(*s), memory_order_relaxed);
  free(s);
}

static void push_snapshot(vmt__snapshot_t *s) {
  s->retire_next = atomic_load_explicit(&retired_snapshots, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(&retired_snapshots, &s->retire_next, s,
                                                memory_order_release, memory_order_relaxed)) {
  }
  atomic_fetch_add_explicit(&retired_pending, 1, memory_order_relaxed);
}

static void push_record(vmt_thread_t *t) {
  t->list_next = atomic_load_explicit(&retired_records, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(&retired_records, &t->list_next, t,
                                                memory_order_release, memory_order_relaxed)) {
  }
  atomic_fetch_add_explicit(&retired_pending, 1, memory_order_relaxed);
}

static int reg_state(const vmt_thread_t *t) {
  return atomic_load_explicit(&((vmt_thread_t *)t)->registry_state, memory_order_relaxed);
}

/* The sizing rules (DESIGN above). A rebuild copies all `count` entries before it squeezes
 * out the tombstones, so the array holds at least that many. */
static size_t rebuild_capacity(size_t count, size_t kept) {
  size_t want = kept + kept / 2 + 64;
  return want > count ? want : count;
}
static bool tombstones_slow_walks(size_t kept) { return tombstoned >= 8 + kept / 64; }
static bool tombstones_crowd(size_t kept) { return tombstoned > 64 && tombstoned > 2 * kept; }

size_t vmt__ids_lower_bound(const int64_t *ids, size_t n, int64_t id) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ids[mid] < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static void tombstone_locked(vmt_thread_t *t) {
  atomic_store_explicit(&t->registry_state, VMT__REG_TOMBSTONE, memory_order_release);
  t->list_next = tombstones;
  tombstones = t;
  tombstoned++;
}

/* Copies the current snapshot's entries but its tombstones into dst (room for all of them,
 * tombstones included, checked by the caller) and returns how many; *dropped gets the
 * tombstones, which leave with the next publication. writer_lock held. The copy is a memcpy
 * of the three arrays and a pass over them that squeezes out the gaps: records other than the
 * tombstones are not read. */
static size_t rebuild_locked(registry_array_t *dst, vmt_thread_t **dropped) {
  vmt__snapshot_t *cur = atomic_load_explicit(&vmt__current_snapshot, memory_order_relaxed);
  size_t n = cur->count;
  if (n) {
    memcpy(dst->slot, cur->threads, n * sizeof(dst->slot[0]));
    memcpy(dst->id, cur->ids, n * sizeof(dst->id[0]));
    memcpy(dst->hot, cur->hot, n * sizeof(dst->hot[0]));
  }
  *dropped = tombstones;
  for (vmt_thread_t *x = tombstones; x; x = x->list_next) {
    size_t at = x->registry_slot;
    if (at >= n || cur->threads[at] != x) at = vmt__ids_lower_bound(cur->ids, n, x->id);
    if (at < n && cur->threads[at] == x) dst->slot[at] = NULL;
    x->removed_generation = cur->generation;
    atomic_store_explicit(&x->registry_state, VMT__REG_NONE, memory_order_relaxed);
  }
  if (tombstones) {
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
      if (dst->slot[i] == NULL) continue;
      dst->slot[j] = dst->slot[i];
      dst->id[j] = dst->id[i];
      dst->hot[j++] = dst->hot[i];
    }
    n = j;
  }
  tombstoned = 0;
  tombstones = NULL;
  atomic_fetch_add_explicit(&rebuild_count, 1, memory_order_relaxed);
  return n;
}

/* Publishes ns as the current snapshot: the first n entries of arr, plus add (if not NULL)
 * inserted at index `at`: n (an append) unless arr is a new array no snapshot covers yet.
 * Retires what it replaced, then the records a rebuild dropped (the reclaimer relies on this
 * order). writer_lock held; once pushed, the old header may be freed by a concurrent reclaimer:
 * not touched again. */
static void publish_locked(vmt__snapshot_t *ns, registry_array_t *arr, size_t n,
                           vmt_thread_t *add, size_t at, vmt_thread_t *dropped) {
  vmt__snapshot_t *cur = atomic_load_explicit(&vmt__current_snapshot, memory_order_relaxed);
  ns->generation = ++generation;
  if (add) {
    /* No published snapshot covers slot n (those over arr end at or before it), nor, for an
     * insertion before the end, any slot of the new array. */
    if (at < n) {
      memmove(&arr->slot[at + 1], &arr->slot[at], (n - at) * sizeof(arr->slot[0]));
      memmove(&arr->id[at + 1], &arr->id[at], (n - at) * sizeof(arr->id[0]));
      memmove(&arr->hot[at + 1], &arr->hot[at], (n - at) * sizeof(arr->hot[0]));
    }
    arr->slot[at] = add;
    arr->id[at] = add->id;
    arr->hot[at] = add->hot;
    add->registry_slot = at;
    n++;
    add->inserted_generation = ns->generation;
    atomic_store_explicit(&add->registry_state, VMT__REG_IN, memory_order_relaxed);
  }
  ns->array = arr;
  ns->threads = arr->slot;
  ns->ids = arr->id;
  ns->hot = arr->hot;
  ns->count = n;
  atomic_fetch_add_explicit(&arr->users, 1, memory_order_relaxed);
  atomic_store_explicit(&vmt__current_snapshot, ns, memory_order_seq_cst);
  atomic_store_explicit(&count_hint, n, memory_order_relaxed);
  atomic_store_explicit(&kept_hint, n - tombstoned, memory_order_relaxed);
  if (cur != &empty_snapshot) push_snapshot(cur);
  while (dropped) {
    vmt_thread_t *next = dropped->list_next;
    push_record(dropped);
    dropped = next;
  }
}

static bool contains(const void *const *h, size_t n, const void *p) {
  for (size_t i = 0; i < n; i++)
    if (h[i] == p) return true;
  return false;
}

/* Generations of the snapshots still protected at this reclamation. Beyond PROTECTED_MAX of
 * them (64 readers each holding one), the check falls back to "none at or after the oldest". */
#define PROTECTED_MAX 64
typedef struct protected_gens {
  size_t n;
  bool overflow;
  uint64_t oldest;
  uint64_t gen[PROTECTED_MAX];
} protected_gens_t;

static void protect_gen(protected_gens_t *p, uint64_t g) {
  if (g < p->oldest) p->oldest = g;
  if (p->n < PROTECTED_MAX)
    p->gen[p->n++] = g;
  else
    p->overflow = true;
}

static bool record_visible(const protected_gens_t *p, const vmt_thread_t *t) {
  if (p->overflow) return t->removed_generation >= p->oldest;
  for (size_t i = 0; i < p->n; i++)
    if (p->gen[i] >= t->inserted_generation && p->gen[i] <= t->removed_generation) return true;
  return false;
}

static void reclaim(bool wait) {
  if (wait) {
    pthread_mutex_lock(&reclaim_lock);
  } else if (pthread_mutex_trylock(&reclaim_lock) != 0) {
    return;
  }
  /* Everything taken here was replaced (a seq_cst store of the current pointer) before it was
   * pushed, so that store happens before the slot loads below, and all of them are seq_cst: a
   * reader whose re-check still saw a taken snapshot as current published its slot earlier in
   * the single total order, and the loads see it. (No fence: gcc's TSan rejects them.) */
  vmt_thread_t *records = atomic_exchange_explicit(&retired_records, NULL, memory_order_seq_cst);
  vmt__snapshot_t *snaps = atomic_exchange_explicit(&retired_snapshots, NULL, memory_order_seq_cst);
  const void **hazards;
  size_t nh;
  bool have_hazards = vmt__hazards_collect(&hazards, &nh) == 0;
  size_t freed = 0;
  protected_gens_t prot = {.n = 0, .overflow = false, .oldest = UINT64_MAX};
  vmt__snapshot_t *keep_s = kept_snapshots;
  kept_snapshots = NULL;
  for (int pass = 0; pass < 2; pass++) {
    vmt__snapshot_t *s = pass == 0 ? keep_s : snaps;
    while (s) {
      vmt__snapshot_t *next = s->retire_next;
      if (!have_hazards || contains(hazards, nh, s)) {
        protect_gen(&prot, s->generation);
        s->retire_next = kept_snapshots;
        kept_snapshots = s;
      } else {
        snapshot_free(s);
        freed++;
      }
      s = next;
    }
  }
  vmt_thread_t *keep_r = kept_records;
  kept_records = NULL;
  for (int pass = 0; pass < 2; pass++) {
    vmt_thread_t *t = pass == 0 ? keep_r : records;
    while (t) {
      vmt_thread_t *next = t->list_next;
      if (record_visible(&prot, t)) {
        t->list_next = kept_records;
        kept_records = t;
      } else {
        vmt__record_unref(t);
        freed++;
      }
      t = next;
    }
  }
  if (have_hazards) free(hazards);
  size_t pending = atomic_fetch_sub_explicit(&retired_pending, freed, memory_order_relaxed) - freed;
  atomic_store_explicit(&reclaim_threshold, pending + 16 + vmt__hazard_block_count(),
                        memory_order_relaxed);
  pthread_mutex_unlock(&reclaim_lock);
}

static void compact(void);

static void maybe_reclaim(void) {
  if (atomic_load_explicit(&retired_pending, memory_order_relaxed) >=
      atomic_load_explicit(&reclaim_threshold, memory_order_relaxed))
    reclaim(false);
}

void vmt__registry_reclaim(void) {
  compact();
  reclaim(true);
}

/* Appends t to the current array; rebuilds first when the array is full or t is an internal
 * thread (a start that cannot have the memory for it fails, leaving the registry as it was) or,
 * memory allowing, when tombstones would slow walks. The array is allocated outside the lock,
 * sized from a hint, and the hint checked again under it. */
int vmt__registry_insert(vmt_thread_t *t) {
  vmt__snapshot_t *ns = snapshot_alloc();
  if (ns == NULL) return -ENOMEM;
  registry_array_t *spare = NULL;
  bool tried = false;  /* a rebuild's array was asked for */
  for (;;) {
    pthread_mutex_lock(&writer_lock);
    vmt__snapshot_t *cur = atomic_load_explicit(&vmt__current_snapshot, memory_order_relaxed);
    registry_array_t *arr = cur->array;
    size_t kept = cur->count - tombstoned;
    bool full = arr == NULL || cur->count == arr->capacity;
    bool front = t->kind == VMT__KIND_INTERNAL;  /* the smallest id yet: a new array */
    bool rebuild = full || front || tombstones_slow_walks(kept);
    bool room = spare != NULL && spare->capacity >= cur->count + 1;
    if (rebuild && !room && (full || front || !tried)) {
      size_t cap = rebuild_capacity(cur->count + 1, kept + 1);
      pthread_mutex_unlock(&writer_lock);
      array_free(spare);
      spare = array_alloc(cap);
      tried = true;
      if (spare == NULL && (full || front)) {
        snapshot_free(ns);
        return -ENOMEM;
      }
      continue;
    }
    size_t n = cur->count;
    vmt_thread_t *dropped = NULL;
    if (rebuild && room) {
      n = rebuild_locked(spare, &dropped);
      arr = spare;
      spare = NULL;
    }
    /* The largest id yet (an append keeps the array sorted), or an internal thread's smallest. */
    vmt__record_set_id(t, front ? --last_internal_id : ++last_id);
    publish_locked(ns, arr, n, t, front ? 0 : n, dropped);
    pthread_mutex_unlock(&writer_lock);
    array_free(spare);  /* another start rebuilt meanwhile */
    maybe_reclaim();
    return 0;
  }
}

static void uncount_locked(vmt_thread_t *t) {
  if (!atomic_load_explicit(&t->counted, memory_order_relaxed)) return;
  atomic_store_explicit(&t->counted, false, memory_order_relaxed);
  atomic_store_explicit(&t->hot->listed, 0, memory_order_release);
  atomic_fetch_sub_explicit(&live_count, 1, memory_order_relaxed);
  if (t->daemon) atomic_fetch_sub_explicit(&daemon_count, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&t->category->live, 1, memory_order_relaxed);
}

void vmt__registry_count(vmt_thread_t *t) {
  if (t->kind == VMT__KIND_INTERNAL) return;
  /* The second of the two calls of a start (header) usually finds it done: one load. */
  if (atomic_load_explicit(&t->count_claimed, memory_order_acquire)) return;
  pthread_mutex_lock(&writer_lock);
  if (atomic_load_explicit(&t->count_claimed, memory_order_relaxed)) {
    pthread_mutex_unlock(&writer_lock);
    return;
  }
  /* A thread that already left (its child ran and ended first) is counted as started only. */
  bool in = reg_state(t) == VMT__REG_IN;
  atomic_fetch_add_explicit(&started_total, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&t->category->started, 1, memory_order_relaxed);
  (void)vmt__fault_hit(VMT__FAULT_COUNT_MIDWAY);
  if (in) {
    atomic_store_explicit(&t->counted, true, memory_order_relaxed);
    atomic_store_explicit(&t->hot->listed, 1, memory_order_release);
    int32_t live = atomic_fetch_add_explicit(&live_count, 1, memory_order_relaxed) + 1;
    if (live > atomic_load_explicit(&peak_count, memory_order_relaxed))
      atomic_store_explicit(&peak_count, live, memory_order_relaxed);
    if (t->daemon) atomic_fetch_add_explicit(&daemon_count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->category->live, 1, memory_order_relaxed);
  }
  /* The claim is released last: the child that finds it claimed (the acquire above) skips the
   * lock and runs its body, so everything the count does must be visible to it by then, the
   * counted flag (vmt__thread_is_listed) above all. Released before the counted store, it let
   * a thread that asked about its own CPU time first thing get -1 (once in 100 to 400 runs of
   * //test:mx_conformance_test, 500 such threads a run). A thread that goes on to end clears
   * the flags after this store, never before it. */
  atomic_store_explicit(&t->count_claimed, true, memory_order_release);
  pthread_mutex_unlock(&writer_lock);
}

/* Rebuilds the current snapshot without its tombstones. Nothing happens without memory. */
static void compact(void) {
  for (;;) {
    size_t cap = rebuild_capacity(atomic_load_explicit(&count_hint, memory_order_relaxed),
                                  atomic_load_explicit(&kept_hint, memory_order_relaxed));
    vmt__snapshot_t *ns = snapshot_alloc();
    registry_array_t *arr = ns ? array_alloc(cap) : NULL;
    if (arr == NULL) {
      if (ns) snapshot_free(ns);
      return;
    }
    pthread_mutex_lock(&writer_lock);
    vmt__snapshot_t *cur = atomic_load_explicit(&vmt__current_snapshot, memory_order_relaxed);
    if (tombstoned == 0 || arr->capacity < cur->count) {
      bool done = tombstoned == 0;
      pthread_mutex_unlock(&writer_lock);
      snapshot_free(ns);
      array_free(arr);
      if (done) return;
      continue;  /* others started threads meanwhile: size again */
    }
    vmt_thread_t *dropped;
    size_t n = rebuild_locked(arr, &dropped);
    publish_locked(ns, arr, n, NULL, 0, dropped);
    pthread_mutex_unlock(&writer_lock);
    return;
  }
}

void vmt__registry_remove(vmt_thread_t *t, bool exiting) {
  pthread_mutex_lock(&writer_lock);
  if (exiting) {
    uint64_t s = atomic_load_explicit(&exit_seq, memory_order_relaxed);
    /* A sequence lock without fences (sync_impl.h: Boehm's variant that TSan can check):
     * the odd store, then release stores (the add; the port's seq_cst mark), then the even
     * release store. A reader that saw either store re-reads the sequence changed. */
    atomic_store_explicit(&exit_seq, s + 1, memory_order_relaxed);
    /* Read inside the odd section: any reading of this clock a reader kept was taken before
     * it (later ones fail their sequence check or find the record exiting), so it is not
     * above what the total receives. */
    int64_t cpu_ns = vmt_os_current_thread_cpu_time(false) - t->cpu_at_begin_ns;
    if (t->kind != VMT__KIND_INTERNAL && cpu_ns > 0)
      atomic_fetch_add_explicit(&t->category->exited_cpu_ns, cpu_ns, memory_order_release);
    vmt_os_thread_mark_exiting(&t->os);
    atomic_store_explicit(&exit_seq, s + 2, memory_order_release);
  }
  uncount_locked(t);
  tombstone_locked(t);
  vmt__snapshot_t *cur = atomic_load_explicit(&vmt__current_snapshot, memory_order_relaxed);
  size_t kept = cur->count - tombstoned;
  atomic_store_explicit(&kept_hint, kept, memory_order_relaxed);
  bool crowded = tombstones_crowd(kept);
  pthread_mutex_unlock(&writer_lock);
  if (crowded) {
    compact();
    maybe_reclaim();
  }
}

void vmt__registry_stats(vmt__registry_stats_t *out) {
  pthread_mutex_lock(&writer_lock);
  vmt__snapshot_t *cur = atomic_load_explicit(&vmt__current_snapshot, memory_order_relaxed);
  out->count = cur->count;
  out->tombstones = tombstoned;
  out->capacity = cur->array ? cur->array->capacity : 0;
  out->generation = cur->generation;
  pthread_mutex_unlock(&writer_lock);
  out->snapshots = atomic_load_explicit(&snapshots_held, memory_order_relaxed);
  out->arrays = atomic_load_explicit(&arrays_held, memory_order_relaxed);
  out->bytes = atomic_load_explicit(&bytes_held, memory_order_relaxed);
  out->rebuilds = atomic_load_explicit(&rebuild_count, memory_order_relaxed);
}

vmt_thread_t *vmt__snapshot_find(const vmt__snapshot_t *snap, int64_t id) {
  if (snap == NULL) return NULL;
  size_t at = vmt__ids_lower_bound(snap->ids, snap->count, id);
  if (at == snap->count || snap->ids[at] != id) return NULL;
  vmt_thread_t *t = snap->threads[at];
  /* In an older snapshot a record may have left since (tombstoned, then dropped). */
  return reg_state(t) == VMT__REG_IN ? t : NULL;
}

bool vmt__thread_is_listed(const vmt_thread_t *t) {
  return t != NULL && t->kind != VMT__KIND_INTERNAL &&
         atomic_load_explicit(&((vmt_thread_t *)t)->counted, memory_order_acquire) &&
         reg_state(t) == VMT__REG_IN &&
         atomic_load_explicit(&((vmt_thread_t *)t)->state, memory_order_acquire) !=
             VMT_THREAD_TERMINATED;
}

void vmt__registry_counts(vmt__counts_t *out) {
  out->live = atomic_load_explicit(&live_count, memory_order_relaxed);
  out->peak = atomic_load_explicit(&peak_count, memory_order_relaxed);
  out->daemon = atomic_load_explicit(&daemon_count, memory_order_relaxed);
  out->total_started = atomic_load_explicit(&started_total, memory_order_relaxed);
}

uint64_t vmt__registry_exit_seq(void) {
  return atomic_load_explicit(&exit_seq, memory_order_acquire);
}
void vmt__registry_exits_hold(void) { pthread_mutex_lock(&writer_lock); }
void vmt__registry_exits_release(void) { pthread_mutex_unlock(&writer_lock); }

void vmt__registry_reset_peak(void) {
  pthread_mutex_lock(&writer_lock);
  atomic_store_explicit(&peak_count, atomic_load_explicit(&live_count, memory_order_relaxed),
                        memory_order_relaxed);
  pthread_mutex_unlock(&writer_lock);
}

/* ---- fork ------------------------------------------------------------------------------ */
static void registry_fork_prepare(void) {
  pthread_mutex_lock(&reclaim_lock);
  pthread_mutex_lock(&writer_lock);
}

static void registry_fork_parent(void) {
  pthread_mutex_unlock(&writer_lock);
  pthread_mutex_unlock(&reclaim_lock);
}

/* Only the forking thread exists in the child. Every other record becomes a terminated thread
 * of another process: tombstoned, its running-thread reference dropped (that thread will never
 * drop it), never joined at the OS level (its pthread does not exist here). */
static void registry_fork_child(void) {
  vmt_thread_t *survivor = vmt__current;
  pthread_mutex_init(&writer_lock, NULL);
  pthread_mutex_init(&reclaim_lock, NULL);
  vmt__snapshot_t *cur = atomic_load_explicit(&vmt__current_snapshot, memory_order_relaxed);
  int32_t live = 0, daemon = 0;
  for (size_t i = 0; i < cur->count; i++) {
    vmt_thread_t *x = cur->threads[i];
    /* A vanished thread may have held the record's lock (a rename, a copy of its name, the
     * first ask of its stack): nobody will release it here. */
    pthread_mutex_init(&x->cold->lock, NULL);
    if (x == survivor) {
      if (atomic_load_explicit(&x->counted, memory_order_relaxed)) {
        live = 1;
        daemon = x->daemon ? 1 : 0;
        atomic_store_explicit(&x->category->live, 1, memory_order_relaxed);
      }
      continue;
    }
    if (reg_state(x) == VMT__REG_IN) {
      tombstone_locked(x);
    } else if (atomic_load_explicit(&x->done, memory_order_relaxed) != 0) {
      continue;  /* its exit bookkeeping was complete; at worst its last unref was not */
    }
    /* Live, or between leaving the registry and `done`: finish for the vanished thread. */
    atomic_store_explicit(&x->counted, false, memory_order_relaxed);
    vmt_os_thread_mark_exiting(&x->os);
    atomic_store_explicit(&x->hot->allocatedp, NULL, memory_order_relaxed);
    vmt__thread_set_terminated(x);   /* and unlisted (its hot cell) */
    atomic_store_explicit(&x->done, 1, memory_order_release);
    /* The vanished thread's own reference. Never the last: the record is in the current
     * snapshot, so the registry's reference is still there. */
    atomic_fetch_sub_explicit(&x->refs, 1, memory_order_acq_rel);
  }
  atomic_store_explicit(&live_count, live, memory_order_relaxed);
  atomic_store_explicit(&peak_count, live, memory_order_relaxed);
  atomic_store_explicit(&daemon_count, daemon, memory_order_relaxed);
  /* No rebuild and no reclamation here: a fork child of a threaded process may only call
   * async-signal-safe functions until it is past the fork (POSIX), and an allocator lock held
   * by a vanished thread would hang it (gcc 12's ASan does not reset its own). A later rebuild
   * (once tombstones reach the rule above, or vmt__registry_reclaim()) drops the tombstones. */
}
VMT__PROCESS_STATE(registry,
                   .symbols = "writer_lock reclaim_lock empty_snapshot vmt__current_snapshot "
                              "generation tombstoned tombstones count_hint kept_hint live_count "
                              "peak_count daemon_count started_total retired_snapshots "
                              "retired_records retired_pending reclaim_threshold kept_snapshots "
                              "kept_records exit_seq",
                   .rule = VMT__FORK_RESET,
                   .fork = "held across fork; then every other thread's record is a terminated "
                           "thread of another process (tombstoned, done, its own reference "
                           "dropped), live and peak count only the forking thread, total "
                           "started is kept; retired lists are kept for the next reclamation; "
                           "the exit sequence is even (exits run under the writer lock); "
                           "every record's lock (name, stack bounds) is re-initialised (a "
                           "terminated record no snapshot holds keeps its own: renaming one "
                           "at the fork is the residual case)",
                   .rank = VMT__RANK_REGISTRY + 1, .prepare = registry_fork_prepare,
                   .parent = registry_fork_parent, .child = registry_fork_child);
