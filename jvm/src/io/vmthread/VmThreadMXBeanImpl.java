/*
 * VmThreadMXBeanImpl: VmThreadMXBean on top of the C management API (through NativeThreads).
 *
 * Arguments are checked here, before the native call, in HotSpot's order and with HotSpot's
 * messages (sun.management.ThreadImpl; the three-argument getThreadInfo checks ids in the VM,
 * whose message is "Invalid thread ID entry"), so that a tool sees the same exception from this
 * bean as from java.lang:type=Threading. The C side checks again; its errors arrive as the
 * exceptions ThreadMXBean names, for what only it can tell.
 *
 * Every query first makes sure this is the only runtime in use in the process (check()): a
 * second copy, linked statically into another library, has its own registry, and answering for
 * one of them would be answering for part of the process without a word.
 */
package io.vmthread;

import java.lang.management.ThreadInfo;
import java.util.Objects;
import javax.management.ObjectName;

final class VmThreadMXBeanImpl implements VmThreadMXBean {
  private final ObjectName name;

  VmThreadMXBeanImpl(ObjectName name) {
    this.name = name;
  }

  @Override
  public ObjectName getObjectName() {
    return name;
  }

  // ---- Checks (HotSpot's order and messages) ----------------------------------------------

  private static void check() {
    String other = NativeThreads.otherRuntime();
    if (other != null) {
      throw new IllegalStateException("another copy of the vmthread runtime in this process has"
          + " threads (" + (other.isEmpty() ? "the main program" : other) + ", which linked"
          + " libvmthread.a); this bean reads libvmthread.so.0's copy and would show only part"
          + " of the process: link every user of vmthread against libvmthread.so.0"
          + " (docs/embedding.md, \"One runtime per process\")");
    }
  }

  private static void verifyThreadId(long id) {
    if (id <= 0) {
      throw new IllegalArgumentException("Invalid thread ID parameter: " + id);
    }
  }

  private static void verifyThreadIds(long[] ids) {
    Objects.requireNonNull(ids);
    for (long id : ids) {
      verifyThreadId(id);
    }
  }

  private static void verifyMaxDepth(int maxDepth) {
    if (maxDepth < 0) {
      throw new IllegalArgumentException("Invalid maxDepth parameter: " + maxDepth);
    }
  }

  private void verifyDumpThreads(boolean lockedMonitors, boolean lockedSynchronizers) {
    if (lockedMonitors && !isObjectMonitorUsageSupported()) {
      throw new UnsupportedOperationException(
          "Monitoring of Object Monitor Usage is not supported.");
    }
    if (lockedSynchronizers && !isSynchronizerUsageSupported()) {
      throw new UnsupportedOperationException("Monitoring of Synchronizer Usage is not supported.");
    }
  }

  private void verifyThreadCpuTime(long[] ids) {
    verifyThreadIds(ids);
    if (!isThreadCpuTimeSupported() && !isCurrentThreadCpuTimeSupported()) {
      throw new UnsupportedOperationException("Thread CPU time measurement is not supported.");
    }
  }

  private void ensureThreadAllocatedMemorySupported() {
    if (!isThreadAllocatedMemorySupported()) {
      throw new UnsupportedOperationException(
          "Thread allocated memory measurement is not supported.");
    }
  }

  // ---- Counts -----------------------------------------------------------------------------

  @Override
  public int getThreadCount() {
    check();
    return NativeThreads.threadCount();
  }

  @Override
  public int getPeakThreadCount() {
    check();
    return NativeThreads.peakThreadCount();
  }

  @Override
  public long getTotalStartedThreadCount() {
    check();
    return NativeThreads.totalStartedThreadCount();
  }

  @Override
  public int getDaemonThreadCount() {
    check();
    return NativeThreads.daemonThreadCount();
  }

  @Override
  public long[] getAllThreadIds() {
    check();
    return NativeThreads.allThreadIds();
  }

  @Override
  public void resetPeakThreadCount() {
    check();
    NativeThreads.resetPeakThreadCount();
  }

  // ---- ThreadInfo -------------------------------------------------------------------------

  @Override
  public ThreadInfo getThreadInfo(long id) {
    return getThreadInfo(new long[] {id}, 0)[0];
  }

  @Override
  public ThreadInfo getThreadInfo(long id, int maxDepth) {
    return getThreadInfo(new long[] {id}, maxDepth)[0];
  }

  @Override
  public ThreadInfo[] getThreadInfo(long[] ids) {
    return getThreadInfo(ids, 0);
  }

  @Override
  public ThreadInfo[] getThreadInfo(long[] ids, int maxDepth) {
    verifyThreadIds(ids);
    verifyMaxDepth(maxDepth);
    return threadInfo(ids, false, false, maxDepth);
  }

  @Override
  public ThreadInfo[] getThreadInfo(long[] ids, boolean lockedMonitors,
      boolean lockedSynchronizers) {
    // HotSpot hands this form to the VM unchecked; the VM's message for a bad id differs, and
    // for null ids the VM dumps every thread (JDK 17 and 25: no NullPointerException).
    if (ids == null) {
      return dumpAllThreads(lockedMonitors, lockedSynchronizers);
    }
    for (long id : ids) {
      if (id <= 0) {
        throw new IllegalArgumentException("Invalid thread ID entry");
      }
    }
    verifyDumpThreads(lockedMonitors, lockedSynchronizers);
    return threadInfo(ids, lockedMonitors, lockedSynchronizers, Integer.MAX_VALUE);
  }

  @Override
  public ThreadInfo[] getThreadInfo(long[] ids, boolean lockedMonitors,
      boolean lockedSynchronizers, int maxDepth) {
    verifyMaxDepth(maxDepth);
    verifyThreadIds(ids);
    if (ids.length == 0) {
      return new ThreadInfo[0];
    }
    verifyDumpThreads(lockedMonitors, lockedSynchronizers);
    return threadInfo(ids, lockedMonitors, lockedSynchronizers, maxDepth);
  }

  private static ThreadInfo[] threadInfo(long[] ids, boolean lockedMonitors,
      boolean lockedSynchronizers, int maxDepth) {
    check();
    return ThreadInfos.toThreadInfos(
        NativeThreads.threadInfo(ids, lockedMonitors, lockedSynchronizers, maxDepth));
  }

  @Override
  public ThreadInfo[] dumpAllThreads(boolean lockedMonitors, boolean lockedSynchronizers) {
    return dumpAllThreads(lockedMonitors, lockedSynchronizers, Integer.MAX_VALUE);
  }

  @Override
  public ThreadInfo[] dumpAllThreads(boolean lockedMonitors, boolean lockedSynchronizers,
      int maxDepth) {
    verifyMaxDepth(maxDepth);
    verifyDumpThreads(lockedMonitors, lockedSynchronizers);
    check();
    return ThreadInfos.toThreadInfos(
        NativeThreads.dumpAllThreads(lockedMonitors, lockedSynchronizers, maxDepth));
  }

  // ---- CPU time ---------------------------------------------------------------------------

  @Override
  public boolean isThreadCpuTimeSupported() {
    return NativeThreads.isThreadCpuTimeSupported();
  }

  @Override
  public boolean isCurrentThreadCpuTimeSupported() {
    return NativeThreads.isCurrentThreadCpuTimeSupported();
  }

  @Override
  public boolean isThreadCpuTimeEnabled() {
    if (!isThreadCpuTimeSupported() && !isCurrentThreadCpuTimeSupported()) {
      throw new UnsupportedOperationException("Thread CPU time measurement is not supported");
    }
    return NativeThreads.isThreadCpuTimeEnabled();
  }

  @Override
  public void setThreadCpuTimeEnabled(boolean enable) {
    if (!isThreadCpuTimeSupported() && !isCurrentThreadCpuTimeSupported()) {
      throw new UnsupportedOperationException("Thread CPU time measurement is not supported");
    }
    NativeThreads.setThreadCpuTimeEnabled(enable);
  }

  @Override
  public long getCurrentThreadCpuTime() {
    if (!isCurrentThreadCpuTimeSupported()) {
      throw new UnsupportedOperationException(
          "Current thread CPU time measurement is not supported.");
    }
    return NativeThreads.currentThreadCpuTime();
  }

  @Override
  public long getCurrentThreadUserTime() {
    if (!isCurrentThreadCpuTimeSupported()) {
      throw new UnsupportedOperationException(
          "Current thread CPU time measurement is not supported.");
    }
    return NativeThreads.currentThreadUserTime();
  }

  @Override
  public long getThreadCpuTime(long id) {
    return getThreadCpuTime(new long[] {id})[0];
  }

  @Override
  public long getThreadUserTime(long id) {
    return getThreadUserTime(new long[] {id})[0];
  }

  @Override
  public long[] getThreadCpuTime(long[] ids) {
    verifyThreadCpuTime(ids);
    check();
    return ids.length == 1 ? new long[] {NativeThreads.threadCpuTime(ids[0])}
        : NativeThreads.threadCpuTimes(ids);
  }

  @Override
  public long[] getThreadUserTime(long[] ids) {
    verifyThreadCpuTime(ids);
    check();
    return ids.length == 1 ? new long[] {NativeThreads.threadUserTime(ids[0])}
        : NativeThreads.threadUserTimes(ids);
  }

  // ---- Contention monitoring --------------------------------------------------------------

  @Override
  public boolean isThreadContentionMonitoringSupported() {
    return NativeThreads.isThreadContentionMonitoringSupported();
  }

  @Override
  public boolean isThreadContentionMonitoringEnabled() {
    if (!isThreadContentionMonitoringSupported()) {
      throw new UnsupportedOperationException("Thread contention monitoring is not supported.");
    }
    return NativeThreads.isThreadContentionMonitoringEnabled();
  }

  @Override
  public void setThreadContentionMonitoringEnabled(boolean enable) {
    if (!isThreadContentionMonitoringSupported()) {
      throw new UnsupportedOperationException("Thread contention monitoring is not supported");
    }
    NativeThreads.setThreadContentionMonitoringEnabled(enable);
  }

  @Override
  public boolean isObjectMonitorUsageSupported() {
    return NativeThreads.isObjectMonitorUsageSupported();
  }

  @Override
  public boolean isSynchronizerUsageSupported() {
    return NativeThreads.isSynchronizerUsageSupported();
  }

  // ---- Deadlocks --------------------------------------------------------------------------

  @Override
  public long[] findMonitorDeadlockedThreads() {
    check();
    return NativeThreads.findMonitorDeadlockedThreads();
  }

  @Override
  public long[] findDeadlockedThreads() {
    if (!isSynchronizerUsageSupported()) {
      throw new UnsupportedOperationException("Monitoring of Synchronizer Usage is not supported.");
    }
    check();
    return NativeThreads.findDeadlockedThreads();
  }

  // ---- Allocated bytes (attributes read as disabled when unsupported: VmThreadMXBean) -----

  @Override
  public boolean isThreadAllocatedMemorySupported() {
    return NativeThreads.isThreadAllocatedMemorySupported();
  }

  @Override
  public boolean isThreadAllocatedMemoryEnabled() {
    return isThreadAllocatedMemorySupported() && NativeThreads.isThreadAllocatedMemoryEnabled();
  }

  @Override
  public void setThreadAllocatedMemoryEnabled(boolean enable) {
    if (!enable && !isThreadAllocatedMemorySupported()) {
      return;  // it is off and stays off
    }
    ensureThreadAllocatedMemorySupported();
    NativeThreads.setThreadAllocatedMemoryEnabled(enable);
  }

  @Override
  public long getThreadAllocatedBytes(long id) {
    verifyThreadId(id);
    ensureThreadAllocatedMemorySupported();
    check();
    return NativeThreads.threadAllocatedBytes(id);
  }

  @Override
  public long[] getThreadAllocatedBytes(long[] ids) {
    Objects.requireNonNull(ids);
    if (ids.length == 1) {
      return new long[] {getThreadAllocatedBytes(ids[0])};
    }
    verifyThreadIds(ids);
    ensureThreadAllocatedMemorySupported();
    check();
    return NativeThreads.threadAllocatedBytesArray(ids);
  }

  @Override
  public long getCurrentThreadAllocatedBytes() {
    if (!isThreadAllocatedMemorySupported()) {
      return -1;
    }
    check();
    return NativeThreads.currentThreadAllocatedBytes();
  }

  @Override
  public long getTotalThreadAllocatedBytes() {
    if (!isThreadAllocatedMemorySupported()) {
      return -1;
    }
    check();
    return NativeThreads.totalThreadAllocatedBytes();
  }

  // ---- vmthread's own ---------------------------------------------------------------------

  @Override
  public String getThreadCategory(long id) {
    verifyThreadId(id);
    check();
    return NativeThreads.threadCategory(id);
  }

  @Override
  public CategoryUsage[] getCategoryUsage() {
    check();
    Object[] raw = NativeThreads.categoryUsage();
    String[] names = (String[]) raw[0];
    long[] figures = (long[]) raw[1];
    CategoryUsage[] out = new CategoryUsage[names.length];
    for (int i = 0; i < names.length; i++) {
      out[i] = new CategoryUsage(names[i], (int) figures[4 * i], figures[4 * i + 1],
          figures[4 * i + 2], figures[4 * i + 3]);
    }
    return out;
  }

  @Override
  public String dumpThreads() {
    check();
    return NativeThreads.threadDump();
  }

  @Override
  public String dumpThreadsJson() {
    check();
    return NativeThreads.threadDumpJson();
  }

  @Override
  public void startProfiler(long periodNanos) {
    check();
    NativeThreads.profilerStart(periodNanos);
  }

  @Override
  public String stopProfiler() {
    check();
    return NativeThreads.profilerStop();
  }

  @Override
  public String getLibraryVersion() {
    return NativeThreads.version();
  }
}
