/*
 * vmthread.h: the one header a host VM includes.
 *
 *   vmthread/thread.h      threads: start, join, attach/detach, names, categories, states
 *   vmthread/stack.h       stack bounds, bytes left, guard zones and overflow reports
 *   vmthread/tls.h         thread-local slots: keys, destructors, the inline get
 *   vmthread/clock.h       CPU time of threads and fast time sources
 *   vmthread/monitor.h     monitors, synchronizers, sleep and park
 *   vmthread/management.h  the C mirror of java.lang.management.ThreadMXBean
 *   vmthread/vmservices.h  execution states, the poll, handshakes, safepoints, suspension
 *   vmthread/profiler.h    a CPU-time profiler of the runtime's threads, with flame graphs
 */
#ifndef VMTHREAD_H
#define VMTHREAD_H

#include "vmthread/common.h"
#include "vmthread/thread.h"
#include "vmthread/stack.h"
#include "vmthread/tls.h"
#include "vmthread/clock.h"
#include "vmthread/monitor.h"
#include "vmthread/management.h"
#include "vmthread/vmservices.h"
#include "vmthread/profiler.h"

#endif /* VMTHREAD_H */
