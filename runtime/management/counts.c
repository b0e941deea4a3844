/*
 * runtime/management/counts.c: ThreadMXBean's counts (getThreadCount, getPeakThreadCount,
 * getTotalStartedThreadCount, getDaemonThreadCount, resetPeakThreadCount) and getAllThreadIds.
 * The counters live in the registry, which updates them as threads start and exit (a thread
 * leaves the counts before its joiners wake); internal threads are never in them.
 */
#include <errno.h>

#include "runtime/management/management_impl.h"

int32_t vmt_mx_get_thread_count(void) {
  vmt__counts_t c;
  vmt__registry_counts(&c);
  return c.live;
}

int32_t vmt_mx_get_peak_thread_count(void) {
  vmt__counts_t c;
  vmt__registry_counts(&c);
  return c.peak;
}

int64_t vmt_mx_get_total_started_thread_count(void) {
  vmt__counts_t c;
  vmt__registry_counts(&c);
  return c.total_started;
}

int32_t vmt_mx_get_daemon_thread_count(void) {
  vmt__counts_t c;
  vmt__registry_counts(&c);
  return c.daemon;
}

void vmt_mx_reset_peak_thread_count(void) { vmt__registry_reset_peak(); }

int vmt_mx_get_all_thread_ids(int64_t **ids, size_t *count) {
  if (!ids || !count) return -EINVAL;
  const vmt__snapshot_t *snap = vmt__registry_acquire();
  if (!snap) return -ENOMEM;
  /* One slot more than needed: an empty result is still a valid (non-NULL) array. */
  int64_t *out = vmt__mx_malloc((snap->count + 1) * sizeof(*out));
  if (!out) {
    vmt__registry_release(snap);
    return -ENOMEM;
  }
  /* The ids and the hot cells, never the records: 8 + 8 + 32 bytes per thread, in order. */
  size_t n = 0;
  for (size_t i = 0; i < snap->count; i++) {
    vmt__mx_prefetch_hot_ahead(snap, i);
    if (vmt__hot_is_listed(snap->hot[i])) out[n++] = snap->ids[i];
  }
  vmt__registry_release(snap);
  *ids = out;
  *count = n;
  return 0;
}

void vmt_mx_ids_free(int64_t *ids) { free(ids); }
