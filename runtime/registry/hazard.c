/*
 * runtime/registry/hazard.c: hazard pointers protecting registry snapshots (Michael 2004; HotSpot's
 * ThreadsSMR uses the same idea for its ThreadsList).
 *
 * Each reading thread owns a block of VMT__HAZARDS_PER_THREAD slots. Blocks live on one global
 * list that only grows; a thread takes an inactive block (or a new one) on its first acquire
 * and gives it back from the runtime's end hook when it exits (runtime/os.h, "Thread end"). A
 * thread whose hook cannot be armed keeps its block only while it holds a snapshot. The first
 * 64 blocks are static, so readers almost never allocate.
 *
 * Acquire: load the current snapshot, publish it in a free slot (seq_cst store), re-load the
 * current snapshot (seq_cst); if it is unchanged, the snapshot is protected: a reclaimer that
 * takes it after its replacement (a seq_cst store) reads the slots with seq_cst loads and sees
 * the hazard, and a replacement earlier in the total order made the re-load see a newer one.
 * Cost: two loads and one store to a line only this thread writes; no read-modify-write on a
 * shared line, so readers do not slow each other or the writers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/registry/registry_impl.h"

/* One cache line per block: a reader's stores to its slots never share a line with another
 * reader's. */
typedef struct hazard_block {
  _Alignas(64) _Atomic(const vmt__snapshot_t *) slot[VMT__HAZARDS_PER_THREAD];
  _Atomic bool active;
  struct hazard_block *next;   /* immutable once the block is on the list */
} hazard_block_t;

#define STATIC_BLOCKS 64
static hazard_block_t static_blocks[STATIC_BLOCKS];
static _Atomic int32_t static_used;
static _Atomic(hazard_block_t *) blocks;
static _Atomic size_t block_count;

static _Thread_local hazard_block_t *my_block __attribute__((tls_model("initial-exec")));
/* my_block goes back at the last release, not at the thread's end: no end hook. */
static _Thread_local bool my_block_transient __attribute__((tls_model("initial-exec")));

/* Defined in registry.c: the current snapshot pointer, readable without a lock. */
extern _Atomic(vmt__snapshot_t *) vmt__current_snapshot;

static void block_release(void *arg) {
  hazard_block_t *b = arg;
  for (int i = 0; i < VMT__HAZARDS_PER_THREAD; i++)
    atomic_store_explicit(&b->slot[i], NULL, memory_order_release);
  if (my_block == b) my_block = NULL;
  atomic_store_explicit(&b->active, false, memory_order_release);
}

/* The end hook's piece (registry.h, "The end of a thread"). */
static void hazard_thread_end(void) {
  if (my_block) block_release(my_block);
}

static hazard_block_t *block_get(void) {
  hazard_block_t *b;
  for (b = atomic_load_explicit(&blocks, memory_order_acquire); b; b = b->next) {
    bool expected = false;
    if (!atomic_load_explicit(&b->active, memory_order_relaxed) &&
        atomic_compare_exchange_strong_explicit(&b->active, &expected, true,
                                                memory_order_acquire, memory_order_relaxed))
      goto have;
  }
  int32_t i = atomic_fetch_add_explicit(&static_used, 1, memory_order_relaxed);
  if (i < STATIC_BLOCKS) {
    b = &static_blocks[i];
  } else {
    b = vmt__fault_hit(VMT__FAULT_ALLOC) ? NULL
                                         : aligned_alloc(_Alignof(hazard_block_t), sizeof(*b));
    if (b == NULL) return NULL;
    memset(b, 0, sizeof(*b));
  }
  atomic_store_explicit(&b->active, true, memory_order_relaxed);
  b->next = atomic_load_explicit(&blocks, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(&blocks, &b->next, b, memory_order_release,
                                                memory_order_relaxed)) {
  }
  atomic_fetch_add_explicit(&block_count, 1, memory_order_relaxed);
have:
  my_block_transient = vmt__thread_end_arm(VMT__END_HAZARDS, hazard_thread_end) != 0;
  my_block = b;
  return b;
}

const vmt__snapshot_t *vmt__registry_acquire(void) {
  hazard_block_t *b = my_block;
  if (__builtin_expect(b == NULL, 0) && (b = block_get()) == NULL) return NULL;
  int i = 0;
  while (i < VMT__HAZARDS_PER_THREAD &&
         atomic_load_explicit(&b->slot[i], memory_order_relaxed) != NULL)
    i++;
  /* All slots taken: a query nested in a stack walker the host's queries call (it runs while
   * they hold theirs, and may query again). The host can exhaust them, so it is refused like a
   * block that cannot be allocated (-ENOMEM to the caller), never aborted. */
  if (i == VMT__HAZARDS_PER_THREAD) return NULL;
  const vmt__snapshot_t *s = atomic_load_explicit(&vmt__current_snapshot, memory_order_acquire);
  for (;;) {
    atomic_store_explicit(&b->slot[i], s, memory_order_seq_cst);
    const vmt__snapshot_t *again =
        atomic_load_explicit(&vmt__current_snapshot, memory_order_seq_cst);
    if (again == s) return s;
    s = again;
  }
}

void vmt__registry_release(const vmt__snapshot_t *snap) {
  hazard_block_t *b = my_block;
  if (snap == NULL || b == NULL) return;
  for (int i = VMT__HAZARDS_PER_THREAD - 1; i >= 0; i--) {
    if (atomic_load_explicit(&b->slot[i], memory_order_relaxed) == snap) {
      atomic_store_explicit(&b->slot[i], NULL, memory_order_release);
      break;
    }
  }
  if (__builtin_expect(my_block_transient, 0)) {
    for (int i = 0; i < VMT__HAZARDS_PER_THREAD; i++)
      if (atomic_load_explicit(&b->slot[i], memory_order_relaxed) != NULL) return;
    block_release(b);
  }
}

size_t vmt__hazard_block_count(void) {
  return atomic_load_explicit(&block_count, memory_order_relaxed);
}

int vmt__hazards_collect(const void ***out, size_t *count) {
  size_t cap = (vmt__hazard_block_count() + 1) * VMT__HAZARDS_PER_THREAD, n = 0;
  const void **h = malloc(cap * sizeof(*h));
  if (h == NULL) return -ENOMEM;
  for (hazard_block_t *b = atomic_load_explicit(&blocks, memory_order_acquire); b; b = b->next) {
    for (int i = 0; i < VMT__HAZARDS_PER_THREAD; i++) {
      const void *p = atomic_load_explicit(&b->slot[i], memory_order_seq_cst);
      if (p == NULL) continue;
      if (n == cap) {
        const void **bigger = realloc(h, 2 * cap * sizeof(*h));
        if (bigger == NULL) {
          free(h);
          return -ENOMEM;
        }
        h = bigger;
        cap *= 2;
      }
      h[n++] = p;
    }
  }
  *out = h;
  *count = n;
  return 0;
}

/* Only the forking thread survives; its block (if any) keeps its slots, and every other block
 * is free again (the snapshots its slots protected are no longer read by anyone). */
static void hazard_fork_child(void) {
  for (hazard_block_t *b = atomic_load_explicit(&blocks, memory_order_acquire); b; b = b->next)
    if (b != my_block) block_release(b);
}
VMT__PROCESS_STATE(hazard,
                   .symbols = "static_blocks static_used blocks block_count my_block "
                              "my_block_transient",
                   .rule = VMT__FORK_RESET,
                   .fork = "every block but the forking thread's is released: vanished readers "
                           "protect nothing; the forking thread keeps its block and whether it "
                           "goes back at its last release",
                   .rank = VMT__RANK_REGISTRY + 5, .child = hazard_fork_child);
