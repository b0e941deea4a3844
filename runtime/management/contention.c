/*
 * runtime/management/contention.c: contention monitoring (the switch; blocked and waited times are
 * kept by the monitor module), the usage capabilities, and deadlock detection
 * (findMonitorDeadlockedThreads, findDeadlockedThreads, lock-free or at a safepoint) over the
 * monitor module's wait-for graph. All of it is supported on every platform the runtime builds on: monitors and
 * synchronizers are the runtime's own.
 */
#include <errno.h>

#include "runtime/management/management_impl.h"

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

/* vmt__find_deadlocks answers NULL and 0 when there is no deadlock: Java's null, not an
 * empty array. */
int vmt_mx_find_monitor_deadlocked_threads(int64_t **ids, size_t *count) {
  return vmt__find_deadlocks(false, ids, count);
}

int vmt_mx_find_deadlocked_threads(int64_t **ids, size_t *count) {
  return vmt__find_deadlocks(true, ids, count);
}

int vmt_mx_find_deadlocked_threads_at_safepoint(int64_t timeout_ns, int64_t **ids,
                                                size_t *count) {
  if (!ids || !count || timeout_ns < 0) return -EINVAL;
  int rc = vmt_safepoint_begin(timeout_ns, NULL);
  if (rc) return rc;
  rc = vmt__find_deadlocks(true, ids, count);
  vmt_safepoint_end(NULL);
  return rc;
}
