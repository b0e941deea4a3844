/*
 * runtime/registry/registry.c: the set of live threads and its counters, safe to walk while threads
 * start and exit (the model is HotSpot's ThreadsSMR; docs/design.md, "Registry").
 *
 * DESIGN. The live threads are an immutable, id-sorted array (a snapshot). A start builds a
 * new snapshot (allocated before taking the writer lock, copied under it: a memcpy of 8 KB for
 * 1000 threads, no system call), publishes it with one store and retires the old one. Readers
 * protect the snapshot they read with a hazard pointer (hazard.c) and never lock.
 *
 * Reclamation never makes a writer wait. A retired snapshot may be freed once no hazard slot
 * holds it. A record that left the registry keeps the registry's reference until no reader can
 * still see it: exactly the snapshots with a generation in [inserted_generation,
 * removed_generation] held it, so it is safe once no protected snapshot has a generation in
 * that range (a reader that holds one snapshot for long keeps only the records that snapshot
 * holds, not every thread that came and went meanwhile). Retired snapshots are pushed before
 * the records they drop, and the reclaimer takes the records first, so every snapshot that can
 * hold a record it takes is in its own list. Reclamation runs amortised (once 16 + <hazard
 * blocks> items are pending) from a start or exit that finds the reclaim lock free; it never
 * blocks on it.
 *
 * An exit does not build a snapshot: it tombstones its record in place (lookups and listings
 * skip it; the record stays allocated) and the next rebuild, by a start or once tombstones
 * outnumber live entries two to one, drops it. So an exiting thread neither allocates nor
 * frees, except the rare one that finds the snapshot crowded (tombstones over 64 and twice
 * the live entries) and compacts it: a thread whose body never touched the allocator does
 * not make jemalloc set up (and tear down, with madvise and a TLB shootdown) a thread cache
 * just to leave, which measured 20-30 us per thread here. An exit cannot fail for want of
 * memory either: without memory the compaction waits for the next rebuild.
 *
 * Counters (live, peak, daemon, total started, per-category live) change under the writer
 * lock and are read with plain atomic loads.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/registry/registry_impl.h"

static vmt__snapshot_t empty_snapshot;
_Atomic(vmt__snapshot_t *) vmt__current_snapshot = &empty_snapshot;

static pthread_mutex_t writer_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t generation;            /* of the current snapshot; writer_lock */
static size_t tombstoned;              /* tombstones in the current snapshot; writer_lock */
static vmt_thread_t *tombstones;       /* the same records, linked by list_next; writer_lock */
static _Atomic size_t current_count;   /* sizing hint read before taking the lock */

static _Atomic int32_t live_count, peak_count, daemon_count;
static _Atomic int64_t started_total;

static _Atomic(vmt__snapshot_t *) retired_snapshots;
static _Atomic(vmt_thread_t *) retired_records;
static _Atomic size_t retired_pending;
static _Atomic size_t reclaim_threshold = 16;

static pthread_mutex_t reclaim_lock = PTHREAD_MUTEX_INITIALIZER;
static vmt__snapshot_t *kept_snapshots;  /* still protected at the last reclamation */
static vmt_thread_t *kept_records;

static vmt__snapshot_t *snapshot_alloc(size_t capacity) {
  if (vmt__fault_hit(VMT__FAULT_ALLOC) != 0) return NULL;
  return malloc(sizeof(vmt__snapshot_t) + capacity * sizeof(vmt_thread_t *));
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

/* Entries the current snapshot would keep after a rebuild: writer_lock held. */
static size_t kept_count_locked(const vmt__snapshot_t *cur) { return cur->count - tombstoned; }

size_t vmt__threads_lower_bound(vmt_thread_t *const *threads, size_t n, int64_t id) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (threads[mid]->id < id)
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

/* Builds ns from the current snapshot plus add (if not NULL) minus every tombstone, publishes
 * it and retires what it replaced. writer_lock held; ns has room (checked by the caller).
 * The copy is a memcpy of the pointer array; tombstones are found by binary search in the
 * (immutable) current array and the gaps squeezed out of the copy, so a rebuild reads the
 * records of the tombstones and log2(n) others, never all n of them (at 1000 threads that was
 * most of the per-start overhead: 1000 cache lines). */
static void publish_locked(vmt__snapshot_t *ns, vmt_thread_t *add) {
  vmt__snapshot_t *cur = atomic_load_explicit(&vmt__current_snapshot, memory_order_relaxed);
  size_t n = cur->count;
  memcpy(ns->threads, cur->threads, n * sizeof(ns->threads[0]));
  vmt_thread_t *dropped = tombstones;
  for (vmt_thread_t *x = dropped; x; x = x->list_next) {
    size_t at = vmt__threads_lower_bound(cur->threads, cur->count, x->id);
    if (at < cur->count && cur->threads[at] == x) ns->threads[at] = NULL;
    x->removed_generation = cur->generation;
    atomic_store_explicit(&x->registry_state, VMT__REG_NONE, memory_order_relaxed);
  }
  if (dropped) {
    size_t j = 0;
    for (size_t i = 0; i < n; i++)
      if (ns->threads[i]) ns->threads[j++] = ns->threads[i];
    n = j;
  }
  if (add) {
    /* Ids are handed out before the lock, so a start may insert below the end. */
    size_t at = vmt__threads_lower_bound(ns->threads, n, add->id);
    memmove(&ns->threads[at + 1], &ns->threads[at], (n - at) * sizeof(ns->threads[0]));
    ns->threads[at] = add;
    n++;
  }
  ns->count = n;
  ns->generation = ++generation;
  if (add) {
    add->inserted_generation = ns->generation;
    atomic_store_explicit(&add->registry_state, VMT__REG_IN, memory_order_relaxed);
  }
  atomic_store_explicit(&vmt__current_snapshot, ns, memory_order_seq_cst);
  atomic_store_explicit(&current_count, n, memory_order_relaxed);
  tombstoned = 0;
  tombstones = NULL;
  /* Snapshot first, then the records it dropped (the reclaimer relies on this order). Once
   * pushed, cur may be freed by a concurrent reclaimer: not touched again. */
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
        free(s);
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

int vmt__registry_insert(vmt_thread_t *t) {
  for (;;) {
    size_t want = atomic_load_explicit(&current_count, memory_order_relaxed) + 1;
    size_t cap = want + want / 8 + 4;
    vmt__snapshot_t *ns = snapshot_alloc(cap);
    if (ns == NULL) return -ENOMEM;
    pthread_mutex_lock(&writer_lock);
    vmt__snapshot_t *cur = atomic_load_explicit(&vmt__current_snapshot, memory_order_relaxed);
    if (cur->count + 1 <= cap) {  /* the copy holds the tombstones until squeezed */
      publish_locked(ns, t);
      pthread_mutex_unlock(&writer_lock);
      maybe_reclaim();
      return 0;
    }
    pthread_mutex_unlock(&writer_lock);
    free(ns);  /* others grew the registry meanwhile: size again */
  }
}

static void uncount_locked(vmt_thread_t *t) {
  if (!atomic_load_explicit(&t->counted, memory_order_relaxed)) return;
  atomic_store_explicit(&t->counted, false, memory_order_relaxed);
  atomic_fetch_sub_explicit(&live_count, 1, memory_order_relaxed);
  if (t->daemon) atomic_fetch_sub_explicit(&daemon_count, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&t->category->live, 1, memory_order_relaxed);
}

void vmt__registry_count(vmt_thread_t *t) {
  if (t->kind == VMT__KIND_INTERNAL) return;
  pthread_mutex_lock(&writer_lock);
  atomic_fetch_add_explicit(&started_total, 1, memory_order_relaxed);
  /* A thread that already left (its child ran and ended first) is counted as started only. */
  if (reg_state(t) == VMT__REG_IN) {
    atomic_store_explicit(&t->counted, true, memory_order_relaxed);
    int32_t live = atomic_fetch_add_explicit(&live_count, 1, memory_order_relaxed) + 1;
    if (live > atomic_load_explicit(&peak_count, memory_order_relaxed))
      atomic_store_explicit(&peak_count, live, memory_order_relaxed);
    if (t->daemon) atomic_fetch_add_explicit(&daemon_count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->category->live, 1, memory_order_relaxed);
  }
  pthread_mutex_unlock(&writer_lock);
}

/* Rebuilds the current snapshot without its tombstones. Nothing happens without memory. */
static void compact(void) {
  for (;;) {
    size_t cap = atomic_load_explicit(&current_count, memory_order_relaxed) + 4;
    vmt__snapshot_t *ns = snapshot_alloc(cap);
    if (ns == NULL) return;
    pthread_mutex_lock(&writer_lock);
    vmt__snapshot_t *cur = atomic_load_explicit(&vmt__current_snapshot, memory_order_relaxed);
    if (tombstoned == 0) {
      pthread_mutex_unlock(&writer_lock);
      free(ns);
      return;
    }
    if (cur->count <= cap) {
      publish_locked(ns, NULL);
      pthread_mutex_unlock(&writer_lock);
      return;
    }
    pthread_mutex_unlock(&writer_lock);
    free(ns);
  }
}

void vmt__registry_remove(vmt_thread_t *t) {
  pthread_mutex_lock(&writer_lock);
  uncount_locked(t);
  tombstone_locked(t);
  vmt__snapshot_t *cur = atomic_load_explicit(&vmt__current_snapshot, memory_order_relaxed);
  bool crowded = tombstoned > 64 && tombstoned > 2 * kept_count_locked(cur);
  pthread_mutex_unlock(&writer_lock);
  if (crowded) {
    compact();
    maybe_reclaim();
  }
}

vmt_thread_t *vmt__snapshot_find(const vmt__snapshot_t *snap, int64_t id) {
  if (snap == NULL) return NULL;
  size_t at = vmt__threads_lower_bound(snap->threads, snap->count, id);
  if (at == snap->count || snap->threads[at]->id != id) return NULL;
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

void vmt__registry_reset_peak(void) {
  pthread_mutex_lock(&writer_lock);
  atomic_store_explicit(&peak_count, atomic_load_explicit(&live_count, memory_order_relaxed),
                        memory_order_relaxed);
  pthread_mutex_unlock(&writer_lock);
}

/* ---- fork ------------------------------------------------------------------------------ */
void vmt__registry_fork_prepare(void) {
  pthread_mutex_lock(&reclaim_lock);
  pthread_mutex_lock(&writer_lock);
}

void vmt__registry_fork_parent(void) {
  pthread_mutex_unlock(&writer_lock);
  pthread_mutex_unlock(&reclaim_lock);
}

/* Only the forking thread exists in the child. Every other record becomes a terminated thread
 * of another process: tombstoned, its running-thread reference dropped (that thread will never
 * drop it), never joined at the OS level (its pthread does not exist here). */
void vmt__registry_fork_child(vmt_thread_t *survivor) {
  pthread_mutex_init(&writer_lock, NULL);
  pthread_mutex_init(&reclaim_lock, NULL);
  vmt__snapshot_t *cur = atomic_load_explicit(&vmt__current_snapshot, memory_order_relaxed);
  int32_t live = 0, daemon = 0;
  for (size_t i = 0; i < cur->count; i++) {
    vmt_thread_t *x = cur->threads[i];
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
    atomic_store_explicit(&x->allocatedp, NULL, memory_order_relaxed);
    atomic_store_explicit(&x->state, VMT_THREAD_TERMINATED, memory_order_relaxed);
    atomic_store_explicit(&x->done, 1, memory_order_release);
    /* The vanished thread's own reference. Never the last: the record is in the current
     * snapshot, so the registry's reference is still there. */
    atomic_fetch_sub_explicit(&x->refs, 1, memory_order_acq_rel);
  }
  atomic_store_explicit(&live_count, live, memory_order_relaxed);
  atomic_store_explicit(&peak_count, live, memory_order_relaxed);
  atomic_store_explicit(&daemon_count, daemon, memory_order_relaxed);
  vmt__hazard_fork_child();
  /* No rebuild and no reclamation here: a fork child of a threaded process may only call
   * async-signal-safe functions until it is past the fork (POSIX), and an allocator lock held
   * by a vanished thread would hang it (gcc 12's ASan does not reset its own). The next start,
   * or vmt__registry_reclaim(), drops the tombstones. */
}
