/*
 * runtime/sync/deadlock.c: findMonitorDeadlockedThreads / findDeadlockedThreads.
 *
 * Each thread has at most one outgoing edge: "blocked entering monitor L (or, with syncs,
 * waiting to acquire synchronizer L), and L is owned by thread U". The graph is functional, so
 * cycles are found in O(n) by colouring. As in Java, only threads *on* a cycle are reported; a
 * thread blocked on a deadlocked thread is not, and a thread in wait() has no edge at all (it
 * waits for a notify, not for a lock).
 *
 * HotSpot walks the graph at a safepoint. We cannot stop threads, so each candidate cycle is
 * verified: every member's sequence number (runtime/sync/sync_impl.h) must be the same, and even,
 * in a second read as in the first, and each member must still list the lock its predecessor waits
 * for among the locks it holds. A thread changes its sequence whenever it takes, releases or stops
 * waiting for a lock, so all members were in that state throughout the interval between the two
 * reads, at the same time: a real cycle, which can never resolve. A transient chain fails the check
 * and is dropped (the next call finds it if it became real). A test makes one through the hook
 * point VMT__FAULT_DEADLOCK_SCAN (runtime/fault.h), between two edges of the first read.
 * Threads that exit meanwhile are safe to read: the registry snapshot keeps their records.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/sync/sync_impl.h"

/* How many records ahead the first read prefetches the lock state it reads: up to ~100 ns
 * from memory against a few ns of work per thread (as VMT__MX_PREFETCH_AHEAD, in
 * runtime/management/management_impl.h). */
#define VMT__DEADLOCK_PREFETCH 32

typedef struct node {
  struct vmt__lock *lock;   /* what this thread waits for, NULL if none */
  uintptr_t owner;          /* its owner's token (a record address), 0 if none */
  uint32_t seq;
  ssize_t next;             /* index of the owner in the snapshot, -1 if none */
  uint8_t colour;           /* 0 new, 1 on the current path, 2 done */
  bool in_cycle;
} node_t;

/* One consistent read of t's edge: its sequence number and the lock it waits for. */
static void read_edge(vmt_thread_t *t, bool include_syncs, uint32_t *seq,
                      struct vmt__lock **lock) {
  for (unsigned attempts = 0;;) {
    uint32_t s1 = vmt__seq_read_begin(&t->sync.seq, &attempts);
    struct vmt__lock *l =
        (struct vmt__lock *)atomic_load_explicit(&t->sync.blocked_on, VMT__SEQ_R);
    if (l == NULL && include_syncs)
      l = (struct vmt__lock *)atomic_load_explicit(&t->sync.parked_on, VMT__SEQ_R);
    if (atomic_load_explicit(&t->sync.seq, VMT__SEQ_R) != s1) continue;
    *seq = s1;
    *lock = l;
    return;
  }
}

/* True if t's sequence is still seq and lock is on its held list. */
static bool still_holds(vmt_thread_t *t, uint32_t seq, struct vmt__lock *lock) {
  if (atomic_load_explicit(&t->sync.seq, memory_order_acquire) != seq) return false;
  unsigned steps = 0;
  for (struct vmt__lock *h = atomic_load_explicit(&t->sync.held_head, VMT__SEQ_R); h != NULL;
       h = atomic_load_explicit(&h->held_next, VMT__SEQ_R)) {
    if (h == lock) return atomic_load_explicit(&t->sync.seq, VMT__SEQ_R) == seq;
    /* A torn walk may run in a cycle: the sequence has moved then, and a check ends it. */
    if (++steps % VMT__HELD_WALK_CHECK == 0 &&
        atomic_load_explicit(&t->sync.seq, VMT__SEQ_R) != seq)
      return false;
  }
  return false;
}

/*
 * Owner tokens are record addresses. An open-addressing table (at least twice as many slots as
 * threads, a power of two) maps them to snapshot indices in O(1) expected. It replaced a
 * sorted table, an O(n log n) qsort in every scan: with it a scan of parked threads cost 27 ns
 * per thread at 1000 threads and 74 at 10,000 here; with this table (and the prefetch) 22 and
 * 23 (best of 10-50 calls, a scratch program on the //bench:management set-up). The table is
 * built only when some thread waits on an owned lock: with none, there is no edge and no cycle.
 */
typedef struct addr_index {
  uintptr_t addr;   /* 0: empty slot */
  size_t index;
} addr_index_t;

static size_t slot_of(uintptr_t addr, size_t mask) {
  /* Records are 8-byte aligned and hundreds of bytes apart: mix the bits above. */
  return (size_t)(((uint64_t)addr >> 3) * 0x9e3779b97f4a7c15ull >> 32) & mask;
}

static void table_put(addr_index_t *table, size_t mask, uintptr_t addr, size_t index) {
  size_t at = slot_of(addr, mask);
  while (table[at].addr != 0) at = (at + 1) & mask;
  table[at] = (addr_index_t){addr, index};
}

static ssize_t index_of(const addr_index_t *table, size_t mask, uintptr_t token) {
  for (size_t at = slot_of(token, mask); table[at].addr != 0; at = (at + 1) & mask)
    if (table[at].addr == token) return (ssize_t)table[at].index;
  return -1;
}

int vmt__find_deadlocks(bool include_syncs, int64_t **ids, size_t *count) {
  if (ids == NULL || count == NULL) return -EINVAL;
  *ids = NULL;
  *count = 0;
  const vmt__snapshot_t *snap = vmt__registry_acquire();
  if (snap == NULL) return -ENOMEM;
  size_t n = snap->count;
  if (n == 0) {
    vmt__registry_release(snap);
    return 0;
  }
  node_t *nodes = vmt__fault_hit(VMT__FAULT_ALLOC) ? NULL : calloc(n, sizeof(*nodes));
  if (nodes == NULL) {
    vmt__registry_release(snap);
    return -ENOMEM;
  }
  /* First read: each thread's edge, as its lock and the lock's owner token. */
  size_t waiting = 0;
  for (size_t i = 0; i < n; i++) {
    if (i + VMT__DEADLOCK_PREFETCH < n)
      __builtin_prefetch(&snap->threads[i + VMT__DEADLOCK_PREFETCH]->sync);
    read_edge(snap->threads[i], include_syncs, &nodes[i].seq, &nodes[i].lock);
    nodes[i].next = -1;
    if (nodes[i].lock != NULL) {
      nodes[i].owner = atomic_load_explicit(&nodes[i].lock->owner, VMT__SEQ_R);
      waiting += nodes[i].owner != 0;
    }
    (void)vmt__fault_hit(VMT__FAULT_DEADLOCK_SCAN);   /* a test may change the graph here */
  }
  if (waiting == 0) {
    free(nodes);
    vmt__registry_release(snap);
    return 0;
  }
  size_t slots = 16;
  while (slots < 2 * n) slots *= 2;
  addr_index_t *table =
      vmt__fault_hit(VMT__FAULT_ALLOC) ? NULL : calloc(slots, sizeof(*table));
  if (table == NULL) {
    free(nodes);
    vmt__registry_release(snap);
    return -ENOMEM;
  }
  for (size_t i = 0; i < n; i++) table_put(table, slots - 1, (uintptr_t)snap->threads[i], i);
  for (size_t i = 0; i < n; i++)
    if (nodes[i].owner != 0) nodes[i].next = index_of(table, slots - 1, nodes[i].owner);

  /* Colour walk: a path that runs into a node on the current path closed a cycle. */
  size_t found = 0;
  for (size_t i = 0; i < n; i++) {
    ssize_t v = (ssize_t)i;
    while (v >= 0 && nodes[v].colour == 0) {
      nodes[v].colour = 1;
      v = nodes[v].next;
    }
    if (v >= 0 && nodes[v].colour == 1) {
      /* v is on a cycle that this walk closed: verify it, then mark its members. */
      bool real = true;
      ssize_t u = v;
      do {
        ssize_t w = nodes[u].next;
        uint32_t seq;
        struct vmt__lock *lock;
        read_edge(snap->threads[u], include_syncs, &seq, &lock);
        if (seq != nodes[u].seq || lock != nodes[u].lock ||
            !still_holds(snap->threads[w], nodes[w].seq, nodes[u].lock))
          real = false;
        u = w;
      } while (u != v);
      if (real) {
        u = v;
        do {
          nodes[u].in_cycle = true;
          found++;
          u = nodes[u].next;
        } while (u != v);
      }
    }
    for (v = (ssize_t)i; v >= 0 && nodes[v].colour == 1; v = nodes[v].next) nodes[v].colour = 2;
  }

  int rc = 0;
  if (found > 0) {
    int64_t *out = vmt__fault_hit(VMT__FAULT_ALLOC) ? NULL : malloc(found * sizeof(*out));
    if (out == NULL) {
      rc = -ENOMEM;
    } else {
      size_t k = 0;
      for (size_t i = 0; i < n; i++)
        if (nodes[i].in_cycle && vmt__thread_is_listed(snap->threads[i]))
          out[k++] = snap->threads[i]->id;   /* ascending: the snapshot's order */
      if (k == 0) {
        free(out);
        out = NULL;
      }
      *ids = out;
      *count = k;
    }
  }
  free(nodes);
  free(table);
  vmt__registry_release(snap);
  return rc;
}
