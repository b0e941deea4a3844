/*
 * runtime/sync/contention.c: the contention-monitoring switch (ThreadMXBean's
 * setThreadContentionMonitoringEnabled), off by default as in HotSpot.
 *
 * One 64-bit word holds both the setting and an epoch: odd means enabled, and every enable
 * moves to a new odd value. Threads tag the times they accumulate with the epoch they were
 * measured in (episode.c); readers treat times of an older epoch as zero. That is Java's
 * "enabling resets every thread's times" without walking the threads or writing into records
 * that belong to their owners.
 */
#include "runtime/sync/sync_impl.h"

_Atomic uint64_t vmt__contention_epoch;
VMT__PROCESS_STATE(contention, .symbols = "vmt__contention_epoch", .rule = VMT__FORK_KEEP,
                   .fork = "the setting and its epoch are the child's too");

bool vmt__contention_monitoring_enabled(void) {
  return (atomic_load_explicit(&vmt__contention_epoch, memory_order_acquire) & 1) != 0;
}

void vmt__set_contention_monitoring(bool enable) {
  uint64_t e = atomic_load_explicit(&vmt__contention_epoch, memory_order_relaxed);
  while (((e & 1) != 0) != enable &&
         !atomic_compare_exchange_weak_explicit(&vmt__contention_epoch, &e, e + 1,
                                                memory_order_acq_rel, memory_order_relaxed)) {
  }
}
