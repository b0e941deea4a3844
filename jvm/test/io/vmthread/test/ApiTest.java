/*
 * ApiTest: VmThreadMXBean called directly, method by method: values against the runtime's
 * threads, ThreadInfo contents (state, lock, owner, guest frames from a VM stack walker), and
 * the exception mapping the ThreadMXBean specification requires: IllegalArgumentException for
 * id <= 0 or a negative depth with HotSpot's own messages (compared with this JVM's
 * java.lang:type=Threading bean, call for call), NullPointerException for a null array,
 * UnsupportedOperationException for what the runtime says it cannot do (each optional
 * capability is exercised in whichever branch this runtime is in, and that branch is checked),
 * and, call for call against that bean again, the answers of OpenJDK's ThreadMXBean tests for
 * empty arrays, duplicate and unknown ids, huge depths and disabled CPU time.
 */
package io.vmthread.test;

import io.vmthread.VmThreadManagement;
import io.vmthread.VmThreadMXBean;
import java.lang.management.LockInfo;
import java.lang.management.ManagementFactory;
import java.lang.management.MonitorInfo;
import java.lang.management.ThreadInfo;

final class ApiTest {
  private ApiTest() {}

  private static final long UNKNOWN = Long.MAX_VALUE;
  private static final long ALLOC_BYTES = 1 << 20;  // each interp worker allocates this much

  static void run() throws Exception {
    VmThreadMXBean mx = VmThreadManagement.getThreadMXBean();
    String expectedVersion = System.getProperty("vmthread.expected.version");
    Check.equal(expectedVersion, mx.getLibraryVersion(), "getLibraryVersion = headers' version");
    Check.equal(TestNatives.version(), mx.getLibraryVersion(), "one runtime: same library");

    badArguments(mx);

    long workers = TestNatives.startWorkers(2, "interp", false, 0, ALLOC_BYTES);
    long pair = TestNatives.startContention();
    try {
      long[] ids = TestNatives.workerIds(workers);
      long[] pairIds = TestNatives.workerIds(pair);
      threadInfo(mx, ids);
      nullIdsAsHotSpot(mx);
      answersAsHotSpot(mx, ids[0]);
      stackWalker(mx, ids);
      contention(mx, pairIds[0], pairIds[1]);
      cpuTime(mx, ids[0]);
      allocatedMemory(mx, ids[0]);
      Check.equal(null, mx.findDeadlockedThreads(), "findDeadlockedThreads: none");
      Check.equal(null, mx.findMonitorDeadlockedThreads(), "findMonitorDeadlockedThreads: none");
      String dump = mx.dumpThreads();
      Check.that(dump.contains("interp-worker-0") && dump.contains("jvm-test-blocked"),
          "dumpThreads names the runtime's threads");
      String json = mx.dumpThreadsJson();
      Check.that(json.startsWith("{\n  \"threadDump\": {") && json.contains(
          "\"tid\": \"" + pairIds[1] + "\"") && json.contains("\"blockedOn\": \"jvm-test-contended@"),
          "dumpThreadsJson names the runtime's threads and what they block on");
    } finally {
      TestNatives.setStackWalker(false);
      Check.equal(2, TestNatives.stopWorkers(workers), "interp workers joined");
      Check.equal(2, TestNatives.stopWorkers(pair), "contention pair joined");
    }
    attach(mx);
  }

  private static void badArguments(VmThreadMXBean mx) {
    com.sun.management.ThreadMXBean hotspot =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    for (BadCalls.Bad bad : BadCalls.ALL) {
      Check.sameFailure(() -> bad.call.call(hotspot), () -> bad.call.call(mx),
          bad.what + ": as HotSpot's bean");
    }
    Check.throwsA(IllegalArgumentException.class, () -> mx.getThreadCategory(-1),
        "getThreadCategory(-1)");

    Check.equal(null, mx.getThreadInfo(UNKNOWN), "getThreadInfo(unknown id) is null");
    Check.equal(-1L, mx.getThreadCpuTime(UNKNOWN), "getThreadCpuTime(unknown id) is -1");
    Check.equal(null, mx.getThreadCategory(UNKNOWN), "getThreadCategory(unknown id) is null");
    Check.equal(0, mx.getThreadInfo(new long[0]).length, "getThreadInfo(empty) is empty");
  }

  private static void threadInfo(VmThreadMXBean mx, long[] ids) throws Exception {
    Check.that(Check.eventually(() -> state(mx, ids[0]) == Thread.State.WAITING),
        "interp-worker-0 reaches WAITING");
    ThreadInfo info = mx.getThreadInfo(ids[0]);
    Check.equal(ids[0], info.getThreadId(), "ThreadInfo id");
    Check.equal("interp-worker-0", info.getThreadName(), "ThreadInfo name");
    Check.equal("interp", mx.getThreadCategory(ids[0]), "getThreadCategory");
    Check.that(info.getLockName().startsWith("jvm-test-gate@"),
        "waiting on the gate monitor: " + info.getLockName());
    LockInfo lock = info.getLockInfo();
    Check.that(lock != null && lock.getClassName().equals("jvm-test-gate"),
        "LockInfo's class is the monitor's name: " + lock);
    Check.equal(String.valueOf(lock), info.getLockName(), "lockName = lockInfo.toString()");
    Check.equal(0, info.getStackTrace().length, "getThreadInfo(id) has no stack trace");
    Check.that(info.getWaitedCount() >= 1, "waited count counts the wait");
    Check.that(!info.isSuspended() && !info.isInNative(),
        "not suspended, not in native (blocked in a monitor wait)");
    Check.that(info.toString().contains("interp-worker-0"), "ThreadInfo.toString works");

    ThreadInfo[] two = mx.getThreadInfo(new long[] {ids[1], UNKNOWN});
    Check.that(two.length == 2 && two[0] != null && two[0].getThreadId() == ids[1]
        && two[1] == null, "getThreadInfo({live, unknown}) = {info, null}");

    boolean listed = false;
    for (ThreadInfo t : mx.dumpAllThreads(false, false)) {
      listed |= t.getThreadId() == ids[1];
    }
    Check.that(listed, "dumpAllThreads lists interp-worker-1");
  }

  /** getThreadInfo(long[], boolean, boolean) with null ids: HotSpot hands that form to the VM
   *  unchecked (sun.management.ThreadImpl calls dumpThreads0 directly), and the VM dumps every
   *  thread for null ids: JDK 17 and 25 return all their threads, no exception. The bean must
   *  answer as HotSpot's does, with every runtime thread. */
  private static void nullIdsAsHotSpot(VmThreadMXBean mx) throws Exception {
    java.lang.management.ThreadMXBean hotspot = ManagementFactory.getThreadMXBean();
    for (boolean locks : new boolean[] {false, true}) {
      Throwable want = Check.failure(() -> hotspot.getThreadInfo((long[]) null, locks, locks));
      Throwable got = Check.failure(() -> mx.getThreadInfo((long[]) null, locks, locks));
      Check.equal(String.valueOf(want), String.valueOf(got),
          "getThreadInfo(null, " + locks + ", " + locks + "): as HotSpot's bean");
      if (got != null) {
        continue;
      }
      long[] listed = mx.getAllThreadIds();
      ThreadInfo[] all = mx.getThreadInfo((long[]) null, locks, locks);
      long[] dumped = new long[all.length];
      for (int i = 0; i < all.length; i++) {
        dumped[i] = all[i].getThreadId();
      }
      java.util.Arrays.sort(listed);
      java.util.Arrays.sort(dumped);
      Check.equal(listed, dumped, "getThreadInfo(null, " + locks + ", " + locks
          + ") gives every runtime thread, as dumpAllThreads");
    }
  }

  /** A call of ThreadMXBean's that answers, made on both beans with a live id of each. */
  interface Answer {
    Object call(com.sun.management.ThreadMXBean bean, long live) throws Exception;
  }

  /** What a call answered, with the bean's live id written "live": null entries, lengths,
   *  ids and -1 as they are, a non-negative time as ">=0". */
  private static String shape(Object o, long live) {
    if (o instanceof ThreadInfo[]) {
      StringBuilder b = new StringBuilder("[");
      for (ThreadInfo t : (ThreadInfo[]) o) {
        b.append(t == null ? "null" : t.getThreadId() == live ? "live" : "other").append(' ');
      }
      return b.append(']').toString();
    }
    if (o instanceof long[]) {
      StringBuilder b = new StringBuilder("[");
      for (long v : (long[]) o) {
        b.append(v < 0 ? Long.toString(v) : ">=0").append(' ');
      }
      return b.append(']').toString();
    }
    if (o instanceof Long) {
      long v = (Long) o;
      return v < 0 ? Long.toString(v) : ">=0";
    }
    return String.valueOf(o);
  }

  private static String answer(Answer a, com.sun.management.ThreadMXBean bean, long live) {
    try {
      return shape(a.call(bean, live), live);
    } catch (Throwable t) {
      return t.getClass().getName() + ": " + t.getMessage();
    }
  }

  /** The answers of HotSpot's ThreadMXBean tests (ThreadInfoArray, ThreadCpuTimeArray,
   *  ThreadCpuTime, ResetPeakThreads...) for empty arrays, duplicate and unknown ids, huge
   *  depths and disabled CPU time, from both beans: HotSpot's with a live Java thread, ours with
   *  a live runtime thread (ids written "live"). */
  private static void answersAsHotSpot(VmThreadMXBean mx, long live) throws Exception {
    com.sun.management.ThreadMXBean hotspot =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    Thread sleeper = new Thread(() -> {
      try {
        Thread.sleep(Long.MAX_VALUE);
      } catch (InterruptedException e) {
        // done
      }
    }, "api-test-sleeper");
    sleeper.setDaemon(true);
    sleeper.start();
    long javaLive = sleeper.getId();
    String[] names = {
        "getThreadInfo({}, 0)", "getThreadInfo({}, true, true)",
        "getThreadInfo({}, true, true, 0)", "getThreadCpuTime({})", "getThreadUserTime({})",
        "getThreadInfo({live, live})", "getThreadInfo({live, live}, MAX)",
        "getThreadInfo({live, unknown, live}, true, true, MAX)",
        "getThreadInfo({unknown, live}, true, true)", "getThreadInfo(live, MAX)",
        "getThreadInfo(live, MAX - 1)", "getThreadCpuTime({unknown, unknown})",
        "getThreadCpuTime({live, unknown, live})", "getThreadUserTime(unknown)",
        "resetPeakThreadCount: peak = live count", "findDeadlockedThreads()",
        "findMonitorDeadlockedThreads()",
        "CPU time off: getThreadCpuTime(live)", "CPU time off: getThreadUserTime(live)",
        "CPU time off: getThreadCpuTime({live, live})",
        "CPU time off: getThreadUserTime({live, unknown})",
        "CPU time off: getCurrentThreadCpuTime()", "CPU time off: getCurrentThreadUserTime()",
    };
    Answer[] calls = {
        (b, id) -> b.getThreadInfo(new long[0], 0),
        (b, id) -> b.getThreadInfo(new long[0], true, true),
        (b, id) -> b.getThreadInfo(new long[0], true, true, 0),
        (b, id) -> b.getThreadCpuTime(new long[0]),
        (b, id) -> b.getThreadUserTime(new long[0]),
        (b, id) -> b.getThreadInfo(new long[] {id, id}),
        (b, id) -> b.getThreadInfo(new long[] {id, id}, Integer.MAX_VALUE),
        (b, id) -> b.getThreadInfo(new long[] {id, UNKNOWN, id}, true, true, Integer.MAX_VALUE),
        (b, id) -> b.getThreadInfo(new long[] {UNKNOWN, id}, true, true),
        (b, id) -> new ThreadInfo[] {b.getThreadInfo(id, Integer.MAX_VALUE)},
        (b, id) -> new ThreadInfo[] {b.getThreadInfo(id, Integer.MAX_VALUE - 1)},
        (b, id) -> b.getThreadCpuTime(new long[] {UNKNOWN, UNKNOWN}),
        (b, id) -> b.getThreadCpuTime(new long[] {id, UNKNOWN, id}),
        (b, id) -> b.getThreadUserTime(UNKNOWN),
        (b, id) -> {
          b.resetPeakThreadCount();
          return b.getPeakThreadCount() == b.getThreadCount();
        },
        (b, id) -> b.findDeadlockedThreads(),
        (b, id) -> b.findMonitorDeadlockedThreads(),
        (b, id) -> b.getThreadCpuTime(id),
        (b, id) -> b.getThreadUserTime(id),
        (b, id) -> b.getThreadCpuTime(new long[] {id, id}),
        (b, id) -> b.getThreadUserTime(new long[] {id, UNKNOWN}),
        (b, id) -> b.getCurrentThreadCpuTime(),
        (b, id) -> b.getCurrentThreadUserTime(),
    };
    int cpuOff = 17;  // from here on, with CPU time measurement disabled on both beans
    boolean measured = mx.isThreadCpuTimeSupported() && hotspot.isThreadCpuTimeSupported();
    boolean hotspotWas = hotspot.isThreadCpuTimeEnabled();
    boolean ourWas = mx.isThreadCpuTimeEnabled();
    try {
      for (int i = 0; i < calls.length; i++) {
        if (i == cpuOff) {
          if (!measured) {
            break;
          }
          hotspot.setThreadCpuTimeEnabled(false);
          mx.setThreadCpuTimeEnabled(false);
        }
        String want = answer(calls[i], hotspot, javaLive);
        String got = answer(calls[i], mx, live);
        Check.equal(want, got, names[i] + ": as HotSpot's bean");
      }
    } finally {
      if (measured) {
        hotspot.setThreadCpuTimeEnabled(hotspotWas);
        mx.setThreadCpuTimeEnabled(ourWas);
      }
      sleeper.interrupt();
      sleeper.join();
    }
  }

  private static void stackWalker(VmThreadMXBean mx, long[] ids) {
    TestNatives.setStackWalker(true);
    StackTraceElement[] st = mx.getThreadInfo(ids[0], 10).getStackTrace();
    Check.equal(2, st.length, "the VM's walker gives the guest frames");
    if (st.length == 2) {
      Check.equal("demo.Interpreter", st[0].getClassName(), "frame 0 class");
      Check.equal("run", st[0].getMethodName(), "frame 0 method");
      Check.equal("Interpreter.vm", st[0].getFileName(), "frame 0 file");
      Check.equal(42, st[0].getLineNumber(), "frame 0 line");
      Check.that(!st[0].isNativeMethod(), "a guest frame with a line is not native");
      Check.equal("demo.Main.main(Main.vm:7)", st[1].toString(), "frame 1 as Java prints it");
    }
    Check.equal(1, mx.getThreadInfo(ids[0], 1).getStackTrace().length, "maxDepth 1 cuts");
    TestNatives.setStackWalker(false);
    Check.equal(0, mx.getThreadInfo(ids[0], 10).getStackTrace().length,
        "no walker: no frames for another thread");
  }

  private static void contention(VmThreadMXBean mx, long owner, long blocked) throws Exception {
    Check.that(Check.eventually(() -> state(mx, blocked) == Thread.State.BLOCKED),
        "jvm-test-blocked reaches BLOCKED");
    ThreadInfo b = mx.getThreadInfo(blocked);
    Check.equal(owner, b.getLockOwnerId(), "the blocked thread names its lock owner's id");
    Check.equal("jvm-test-owner", b.getLockOwnerName(), "and its name");
    Check.that(b.getLockName().startsWith("jvm-test-contended@"),
        "blocked on the contended monitor: " + b.getLockName());
    Check.that(b.getBlockedCount() >= 1, "blocked count counts the contended enter");

    Check.equal(String.valueOf(b.getLockInfo()), b.getLockName(),
        "blocked: lockName = lockInfo.toString()");
    if (mx.isObjectMonitorUsageSupported()) {
      MonitorInfo[] held = mx.getThreadInfo(new long[] {owner}, true, false)[0]
          .getLockedMonitors();
      boolean found = false;
      for (MonitorInfo m : held) {
        found |= m.getIdentityHashCode() == b.getLockInfo().getIdentityHashCode()
            && m.toString().equals(b.getLockName());
      }
      Check.that(found, "the owner's locked monitors include the contended one, same name");
    } else {
      Check.throwsA(UnsupportedOperationException.class,
          () -> mx.getThreadInfo(new long[] {owner}, true, false),
          "lockedMonitors unsupported: getThreadInfo(ids, true, false)");
      Check.throwsA(UnsupportedOperationException.class, () -> mx.dumpAllThreads(true, false),
          "lockedMonitors unsupported: dumpAllThreads(true, false)");
    }
    if (mx.isSynchronizerUsageSupported()) {
      Check.equal(0, mx.getThreadInfo(new long[] {owner}, false, true)[0]
          .getLockedSynchronizers().length, "the owner holds no synchronizer");
    } else {
      Check.throwsA(UnsupportedOperationException.class,
          () -> mx.getThreadInfo(new long[] {owner}, false, true),
          "synchronizers unsupported: getThreadInfo(ids, false, true)");
    }

    if (mx.isThreadContentionMonitoringSupported()) {
      boolean was = mx.isThreadContentionMonitoringEnabled();
      mx.setThreadContentionMonitoringEnabled(true);
      Check.that(mx.isThreadContentionMonitoringEnabled(), "contention monitoring enabled");
      Check.that(mx.getThreadInfo(blocked).getBlockedTime() >= 0,
          "enabled: blocked time is measured");
      mx.setThreadContentionMonitoringEnabled(false);
      Check.equal(-1L, mx.getThreadInfo(blocked).getBlockedTime(), "disabled: blocked time -1");
      mx.setThreadContentionMonitoringEnabled(was);
    } else {
      Check.throwsA(UnsupportedOperationException.class,
          () -> mx.setThreadContentionMonitoringEnabled(true),
          "contention monitoring unsupported: set");
      Check.throwsA(UnsupportedOperationException.class,
          mx::isThreadContentionMonitoringEnabled, "contention monitoring unsupported: is");
    }
  }

  private static void cpuTime(VmThreadMXBean mx, long id) {
    if (mx.isCurrentThreadCpuTimeSupported()) {
      // This Java thread is not a runtime thread: current-thread time is the caller's clock.
      long user = mx.getCurrentThreadUserTime();
      long cpu = mx.getCurrentThreadCpuTime();
      Check.that(cpu > 0 && user >= 0 && user <= cpu,
          "current (Java) thread: 0 <= user " + user + " <= cpu " + cpu);
    } else {
      Check.throwsA(UnsupportedOperationException.class, mx::getCurrentThreadCpuTime,
          "current-thread CPU time unsupported: getCurrentThreadCpuTime");
    }
    if (mx.isThreadCpuTimeSupported()) {
      boolean was = mx.isThreadCpuTimeEnabled();
      mx.setThreadCpuTimeEnabled(true);
      Check.that(mx.getThreadCpuTime(id) >= 0, "enabled: CPU time of a live thread >= 0");
      long user = mx.getThreadUserTime(id);
      Check.that(user >= 0 && user <= mx.getThreadCpuTime(id), "user time <= total time");
      mx.setThreadCpuTimeEnabled(false);
      Check.equal(-1L, mx.getThreadCpuTime(id), "disabled: getThreadCpuTime is -1");
      Check.equal(-1L, mx.getThreadCpuTime(new long[] {id})[0], "disabled: array form -1");
      mx.setThreadCpuTimeEnabled(was);
    } else {
      Check.throwsA(UnsupportedOperationException.class, () -> mx.getThreadCpuTime(id),
          "CPU time unsupported: getThreadCpuTime");
      Check.throwsA(UnsupportedOperationException.class, mx::isThreadCpuTimeEnabled,
          "CPU time unsupported: isThreadCpuTimeEnabled");
    }
  }

  private static void allocatedMemory(VmThreadMXBean mx, long id) {
    // jvm_test.sh says which process this is: on jemalloc (LD_PRELOAD) or on glibc's malloc.
    String expected = System.getProperty("vmthread.expect.allocated");
    if (expected != null) {
      Check.equal(Boolean.parseBoolean(expected), mx.isThreadAllocatedMemorySupported(),
          "allocated memory supported exactly when jemalloc is the JVM's allocator");
    }
    if (mx.isThreadAllocatedMemorySupported()) {
      mx.setThreadAllocatedMemoryEnabled(true);
      Check.that(mx.isThreadAllocatedMemoryEnabled(), "allocated memory enabled");
      long bytes = mx.getThreadAllocatedBytes(id);
      Check.that(bytes >= ALLOC_BYTES,
          "allocated bytes count what the worker allocated: " + bytes + " >= " + ALLOC_BYTES);
      Check.equal(bytes, mx.getThreadAllocatedBytes(new long[] {id})[0],
          "array form agrees (the worker is parked)");
      Check.equal(-1L, mx.getThreadAllocatedBytes(UNKNOWN), "allocated bytes unknown id -1");
      Check.that(mx.getTotalThreadAllocatedBytes() >= bytes,
          "total allocated bytes >= one thread's");
    } else {
      // The usual case in a JVM: its malloc is glibc's, so jemalloc's counters (which vmthread
      // reads) do not exist. The attributes read as disabled (so a client reading all of them
      // gets all of them); the operations and enabling throw, as the specification says.
      Check.that(!mx.isThreadAllocatedMemoryEnabled(),
          "allocated memory unsupported: ThreadAllocatedMemoryEnabled reads false");
      Check.equal(-1L, mx.getCurrentThreadAllocatedBytes(),
          "allocated memory unsupported: CurrentThreadAllocatedBytes reads -1");
      Check.equal(-1L, mx.getTotalThreadAllocatedBytes(),
          "allocated memory unsupported: TotalThreadAllocatedBytes reads -1");
      mx.setThreadAllocatedMemoryEnabled(false);
      Check.that(!mx.isThreadAllocatedMemoryEnabled(),
          "allocated memory unsupported: disabling it is accepted, and it stays off");
      Check.throwsA(UnsupportedOperationException.class, () -> mx.getThreadAllocatedBytes(id),
          "allocated memory unsupported: getThreadAllocatedBytes");
      Check.throwsA(UnsupportedOperationException.class,
          () -> mx.getThreadAllocatedBytes(new long[] {id, id}),
          "allocated memory unsupported: getThreadAllocatedBytes(long[])");
      Check.throwsA(UnsupportedOperationException.class,
          () -> mx.setThreadAllocatedMemoryEnabled(true),
          "allocated memory unsupported: setThreadAllocatedMemoryEnabled(true)");
    }
  }

  /** A Java thread joins the runtime (as a VM's main thread would) and leaves again. */
  private static void attach(VmThreadMXBean mx) {
    int before = mx.getThreadCount();
    long id = TestNatives.attachCurrent("java-main");
    try {
      Check.equal(before + 1, mx.getThreadCount(), "an attached Java thread is counted");
      Check.equal("java", mx.getThreadCategory(id), "with its category");
      ThreadInfo self = mx.getThreadInfo(id);
      Check.that(self != null && self.getThreadState() == Thread.State.RUNNABLE,
          "and is RUNNABLE");
    } finally {
      TestNatives.detachCurrent();
    }
    Check.equal(before, mx.getThreadCount(), "detach removes it");
  }

  private static Thread.State state(VmThreadMXBean mx, long id) {
    ThreadInfo info = mx.getThreadInfo(id);
    return info == null ? null : info.getThreadState();
  }
}
