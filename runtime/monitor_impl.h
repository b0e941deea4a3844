/*
 * runtime/monitor_impl.h: what the monitor module keeps in each thread record, and what it
 * offers the management module. Hidden.
 */
#ifndef VMT_RUNTIME_MONITOR_IMPL_H
#define VMT_RUNTIME_MONITOR_IMPL_H

#include <stdatomic.h>
#include <stdint.h>

struct vmt_monitor;
struct vmt_sync;

/* Per-thread synchronization state. Written by the owning thread; read by management code
 * holding a registry snapshot. */
struct vmt__thread_sync {
  _Atomic(struct vmt_monitor *) blocked_on;   /* contended enter in progress (BLOCKED) */
  _Atomic(struct vmt_monitor *) waiting_on;   /* in vmt_monitor_wait */
  _Atomic(struct vmt_sync *) parked_on;       /* waiting to acquire a synchronizer */
  _Atomic uint64_t blocked_count;
  _Atomic uint64_t waited_count;
  _Atomic int64_t blocked_ns;
  _Atomic int64_t waited_ns;
  _Atomic uint32_t park_permit;               /* futex word for park/unpark */
};

#endif /* VMT_RUNTIME_MONITOR_IMPL_H */
