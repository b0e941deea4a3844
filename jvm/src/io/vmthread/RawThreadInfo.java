/*
 * RawThreadInfo: one vmt_thread_info_t copied field by field by the JNI bridge, before
 * ThreadInfos turns it into a java.lang.management.ThreadInfo. Not its CPU and user times:
 * ThreadInfo has no place for them, so the bridge asks the C side not to read them
 * (VMT_MX_INFO_NO_CPU_TIME). Times are in nanoseconds as the
 * C API gives them; frames are parallel arrays (one JNI array per column instead of one object
 * per frame).
 */
package io.vmthread;

final class RawThreadInfo {
  long id;
  String name;
  String category;
  int state;                 // vmt_thread_state_t: Java's Thread.State order
  boolean daemon;
  boolean inNative;          // its execution state is NATIVE (vmthread/vmservices.h)
  boolean suspended;         // its suspend count is > 0
  int priority;
  int tid;
  long elapsedNs;
  long blockedCount;
  long blockedTimeNs;        // -1 while contention monitoring is disabled
  long waitedCount;
  long waitedTimeNs;
  RawLock lock;              // what it is blocked or waiting on, or null
  long lockOwnerId;
  String lockOwnerName;
  String[] frameFunctions;
  String[] frameFiles;       // elements may be null
  int[] frameLines;          // -1 if unknown
  RawLock[] lockedMonitors;  // stackDepth set; null when not asked for
  RawLock[] lockedSynchronizers;

  RawThreadInfo() {}

  static final class RawLock {
    String className;
    String name;
    int identityHash;
    int stackDepth;          // monitors: frame index where it was entered, -1 if unknown

    RawLock() {}
  }
}
