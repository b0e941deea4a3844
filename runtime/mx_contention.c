/*
 * runtime/mx_contention.c: contention monitoring (the switch; blocked and waited times are
 * kept by the monitor module), the usage capabilities, and deadlock detection
 * (findMonitorDeadlockedThreads, findDeadlockedThreads) over the monitor module's wait-for
 * graph. All of it is supported on every platform the runtime builds on: monitors and
 * synchronizers are the runtime's own.
 */
#include <errno.h>

#include "runtime/mx_impl.h"

bool vmt_mx_is_thread_contention_monitoring_supported(void) { return true; }

/* Off by default, as in HotSpot: timing every contended enter costs two clock reads. */
bool vmt_mx_is_thread_contention_monitoring_enabled(void) {
  return vmt__contention_monitoring_enabled();
}

int vmt_mx_set_thread_contention_monitoring_enabled(bool enable) {
  vmt__set_contention_monitoring(enable);
  return 0;
}

bool vmt_mx_is_object_monitor_usage_supported(void) { return true; }
bool vmt_mx_is_synchronizer_usage_supported(void) { return true; }

static int find(bool include_syncs, int64_t **ids, size_t *count) {
  if (!ids || !count) return -EINVAL;
  int64_t *found = NULL;
  size_t n = 0;
  int rc = vmt__find_deadlocks(include_syncs, &found, &n);
  if (rc) return rc;
  if (n == 0) {
    /* Java returns null, not an empty array, when there is no deadlock. */
    free(found);
    found = NULL;
  }
  *ids = found;
  *count = n;
  return 0;
}

int vmt_mx_find_monitor_deadlocked_threads(int64_t **ids, size_t *count) {
  return find(false, ids, count);
}

int vmt_mx_find_deadlocked_threads(int64_t **ids, size_t *count) {
  return find(true, ids, count);
}
