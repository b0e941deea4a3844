/*
 * VmThreadMXBeanImpl: VmThreadMXBean on top of the C management API (through NativeThreads).
 * Argument checks that the C side cannot express (a null array is Java's NullPointerException)
 * are made here; everything else (id <= 0, negative depth, unsupported) is decided by the C
 * side and arrives as the exception the ThreadMXBean specification names.
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

  // ---- Counts -----------------------------------------------------------------------------

  @Override
  public int getThreadCount() {
    return NativeThreads.threadCount();
  }

  @Override
  public int getPeakThreadCount() {
    return NativeThreads.peakThreadCount();
  }

  @Override
  public long getTotalStartedThreadCount() {
    return NativeThreads.totalStartedThreadCount();
  }

  @Override
  public int getDaemonThreadCount() {
    return NativeThreads.daemonThreadCount();
  }

  @Override
  public long[] getAllThreadIds() {
    return NativeThreads.allThreadIds();
  }

  @Override
  public void resetPeakThreadCount() {
    NativeThreads.resetPeakThreadCount();
  }

  // ---- ThreadInfo -------------------------------------------------------------------------

  @Override
  public ThreadInfo getThreadInfo(long id) {
    return getThreadInfo(id, 0);
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
    return getThreadInfo(ids, false, false, maxDepth);
  }

  @Override
  public ThreadInfo[] getThreadInfo(long[] ids, boolean lockedMonitors,
      boolean lockedSynchronizers) {
    return getThreadInfo(ids, lockedMonitors, lockedSynchronizers, Integer.MAX_VALUE);
  }

  @Override
  public ThreadInfo[] getThreadInfo(long[] ids, boolean lockedMonitors,
      boolean lockedSynchronizers, int maxDepth) {
    Objects.requireNonNull(ids, "ids");
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
    return NativeThreads.isThreadCpuTimeEnabled();
  }

  @Override
  public void setThreadCpuTimeEnabled(boolean enable) {
    NativeThreads.setThreadCpuTimeEnabled(enable);
  }

  @Override
  public long getCurrentThreadCpuTime() {
    return NativeThreads.currentThreadCpuTime();
  }

  @Override
  public long getCurrentThreadUserTime() {
    return NativeThreads.currentThreadUserTime();
  }

  @Override
  public long getThreadCpuTime(long id) {
    return NativeThreads.threadCpuTime(id);
  }

  @Override
  public long getThreadUserTime(long id) {
    return NativeThreads.threadUserTime(id);
  }

  @Override
  public long[] getThreadCpuTime(long[] ids) {
    Objects.requireNonNull(ids, "ids");
    return NativeThreads.threadCpuTimes(ids);
  }

  @Override
  public long[] getThreadUserTime(long[] ids) {
    Objects.requireNonNull(ids, "ids");
    return NativeThreads.threadUserTimes(ids);
  }

  // ---- Contention monitoring --------------------------------------------------------------

  @Override
  public boolean isThreadContentionMonitoringSupported() {
    return NativeThreads.isThreadContentionMonitoringSupported();
  }

  @Override
  public boolean isThreadContentionMonitoringEnabled() {
    if (!isThreadContentionMonitoringSupported()) {
      throw new UnsupportedOperationException("thread contention monitoring is not supported");
    }
    return NativeThreads.isThreadContentionMonitoringEnabled();
  }

  @Override
  public void setThreadContentionMonitoringEnabled(boolean enable) {
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
    return NativeThreads.findMonitorDeadlockedThreads();
  }

  @Override
  public long[] findDeadlockedThreads() {
    return NativeThreads.findDeadlockedThreads();
  }

  // ---- Allocated bytes --------------------------------------------------------------------

  @Override
  public boolean isThreadAllocatedMemorySupported() {
    return NativeThreads.isThreadAllocatedMemorySupported();
  }

  @Override
  public boolean isThreadAllocatedMemoryEnabled() {
    return NativeThreads.isThreadAllocatedMemoryEnabled();
  }

  @Override
  public void setThreadAllocatedMemoryEnabled(boolean enable) {
    NativeThreads.setThreadAllocatedMemoryEnabled(enable);
  }

  @Override
  public long getThreadAllocatedBytes(long id) {
    return NativeThreads.threadAllocatedBytes(id);
  }

  @Override
  public long[] getThreadAllocatedBytes(long[] ids) {
    Objects.requireNonNull(ids, "ids");
    return NativeThreads.threadAllocatedBytesArray(ids);
  }

  @Override
  public long getCurrentThreadAllocatedBytes() {
    return NativeThreads.currentThreadAllocatedBytes();
  }

  @Override
  public long getTotalThreadAllocatedBytes() {
    return NativeThreads.totalThreadAllocatedBytes();
  }

  // ---- vmthread's own ---------------------------------------------------------------------

  @Override
  public String getThreadCategory(long id) {
    return NativeThreads.threadCategory(id);
  }

  @Override
  public String getThreadDump() {
    return NativeThreads.threadDump();
  }

  @Override
  public String getLibraryVersion() {
    return NativeThreads.version();
  }
}
