/*
 * runtime/management/alloc.c: allocated bytes (com.sun.management.ThreadMXBean's
 * getThreadAllocatedBytes, getCurrentThreadAllocatedBytes, getTotalThreadAllocatedBytes and the
 * switch). The counts are jemalloc's own per-thread counters (thread.allocatedp), published by each
 * runtime thread in its hot cell (runtime/thread/alloc.c); a reader holds a registry snapshot, so it
 * never reads the counters of a thread whose memory is gone. When jemalloc is not the process
 * allocator (sanitizer builds, another malloc preloaded) the counters never move, and the
 * capability reports itself unsupported instead of answering zeros.
 */
#include <errno.h>

#include "runtime/management/management_impl.h"

/* HotSpot enables allocation measurement by default (ThreadAllocatedMemory). */
static _Atomic bool alloc_enabled = true;
/* The largest total handed out. A thread that exits between the read of its live count and
 * the read of the exited total is counted twice for a moment, and the next answer would be
 * smaller; HotSpot keeps the same high-water mark in jmm_GetTotalThreadAllocatedMemory
 * (JDK 21, services/management.cpp) so that the total never decreases. */
static _Atomic int64_t total_high_water;
VMT__PROCESS_STATE(alloc_switch, .symbols = "alloc_enabled total_high_water",
                   .rule = VMT__FORK_KEEP,
                   .fork = "the setting holds; the total never goes below what the parent "
                           "reported, though the vanished threads' counters are gone");

bool vmt_mx_is_thread_allocated_memory_supported(void) { return vmt__alloc_supported(); }

int vmt_mx_is_thread_allocated_memory_enabled(bool *enabled) {
  return vmt__mx_switch_get(vmt__alloc_supported(), &alloc_enabled, enabled);
}

int vmt_mx_set_thread_allocated_memory_enabled(bool enable) {
  return vmt__mx_switch_set(vmt__alloc_supported(), &alloc_enabled, enable);
}

static bool measuring(void) { return atomic_load_explicit(&alloc_enabled, memory_order_relaxed); }

/* The counter a hot cell points to, prefetched: it lives in its thread's jemalloc TLS, a line
 * and a page of its own per thread (the thread's stack mapping), so at 10,000 threads every
 * read misses the caches and the TLB. Half as far ahead as the cells, whose lines (and so the
 * pointer) have arrived by then. The pointer may be stale by the time it is used: a prefetch
 * never faults, and the read itself is validated (runtime/thread/alloc.c). */
static void prefetch_counter(const vmt__snapshot_t *snap, size_t i) {
  size_t at = i + VMT__MX_PREFETCH_AHEAD / 2;
  if (at >= snap->count) return;
  const uint64_t *a = atomic_load_explicit(&snap->hot[at]->allocatedp, memory_order_relaxed);
  if (a) __builtin_prefetch(a);
}

/* What the walks below prefetch: the cells ahead (for writing), the counters half as far. */
static void prefetch_cell_and_counter(const vmt__snapshot_t *snap, size_t i) {
  vmt__mx_prefetch_hot_ahead_w(snap, i);
  prefetch_counter(snap, i);
}

/* The walks below read the snapshot's id and cell arrays, the cells and the counters: never a
 * record (runtime/registry/registry.h, struct vmt__thread_hot). */
int vmt_mx_get_thread_allocated_bytes_array(const int64_t *ids, size_t count, int64_t *out) {
  if (!ids || (!out && count) || vmt__mx_ids_invalid(ids, count)) return -EINVAL;
  if (!vmt__alloc_supported()) return -ENOTSUP;
  return vmt__mx_sweep(ids, count, out, measuring(), NULL, vmt__alloc_hot_bytes,
                       prefetch_cell_and_counter);
}

int vmt_mx_get_thread_allocated_bytes(int64_t id, int64_t *bytes) {
  if (!bytes) return -EINVAL;
  return vmt_mx_get_thread_allocated_bytes_array(&id, 1, bytes);
}

int vmt_mx_get_current_thread_allocated_bytes(int64_t *bytes) {
  if (!bytes) return -EINVAL;
  if (!vmt__alloc_supported()) return -ENOTSUP;
  vmt_thread_t *self = vmt_thread_current();
  /* A thread that is neither started by the runtime nor attached has no published counter. */
  *bytes = measuring() && self ? vmt__alloc_thread_bytes(self) : -1;
  return 0;
}

int vmt_mx_get_total_thread_allocated_bytes(int64_t *bytes) {
  if (!bytes) return -EINVAL;
  if (!vmt__alloc_supported()) return -ENOTSUP;
  if (!measuring()) {
    *bytes = -1;
    return 0;
  }
  /* Live threads first, then the exited total: a thread that exits in between moves its
   * bytes from the first figure to the second and is counted (twice, at worst), never lost. */
  int64_t total = 0;
  const vmt__snapshot_t *snap = vmt__registry_acquire();
  if (!snap) return -ENOMEM;
  for (size_t i = 0; i < snap->count; i++) {
    struct vmt__thread_hot *h = snap->hot[i];
    prefetch_cell_and_counter(snap, i);
    if (!vmt__hot_is_listed(h)) continue;
    int64_t b = vmt__alloc_hot_bytes(h);
    if (b > 0) total += b;
  }
  vmt__registry_release(snap);
  total += vmt__alloc_exited_total();
  int64_t seen = atomic_load_explicit(&total_high_water, memory_order_relaxed);
  while (total > seen &&
         !atomic_compare_exchange_weak_explicit(&total_high_water, &seen, total,
                                                memory_order_relaxed, memory_order_relaxed)) {
  }
  *bytes = total > seen ? total : seen;
  return 0;
}
