/*
 * JmxTest: the runtime's threads as any JMX client sees them. The bean is registered in the
 * platform MBean server and read only through MBeanServer.getAttribute / invoke by name (and
 * through a standard ThreadMXBean proxy), then compared with what the C side reports through
 * TestNatives, before, while and after five runtime threads run; then the profiler's start
 * and stop operations on two burning threads. (A second JVM reads the bean over an RMI
 * connector, as jconsole or VisualVM would: Host and Client.)
 */
package io.vmthread.test;

import io.vmthread.VmThreadManagement;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import javax.management.JMX;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import javax.management.openmbean.CompositeData;

final class JmxTest {
  private JmxTest() {}

  private static final long BURN_NS = 2_000_000L;  // CPU each gc worker burns before waiting

  static void run() throws Exception {
    MBeanServer server = ManagementFactory.getPlatformMBeanServer();
    ObjectName name = VmThreadManagement.register();
    Check.equal(new ObjectName("io.vmthread:type=Threading"), name, "registered name");
    Check.that(server.isRegistered(name), "the bean is in the platform MBean server");
    Check.equal(name, VmThreadManagement.register(), "registering again is harmless");
    Check.that(JMX.isMXBeanInterface(io.vmthread.VmThreadMXBean.class), "it is an MXBean");
    String[] attrs = Arrays.stream(server.getMBeanInfo(name).getAttributes())
        .map(MBeanAttributeInfo::getName).sorted().toArray(String[]::new);
    for (String a : new String[] {"AllThreadIds", "DaemonThreadCount", "PeakThreadCount",
        "ThreadCount", "TotalStartedThreadCount", "ThreadCpuTimeEnabled", "LibraryVersion"}) {
      Check.that(Arrays.binarySearch(attrs, a) >= 0, "MBeanInfo lists attribute " + a);
    }
    // A dump is work: an operation, so a client reading every attribute does not build one.
    Check.that(Arrays.binarySearch(attrs, "ThreadDump") < 0, "no ThreadDump attribute");
    String[] ops = Arrays.stream(server.getMBeanInfo(name).getOperations())
        .map(o -> o.getName()).sorted().toArray(String[]::new);
    Check.that(Arrays.binarySearch(ops, "dumpThreads") >= 0
        && Arrays.binarySearch(ops, "dumpThreadsJson") >= 0,
        "dumpThreads and dumpThreadsJson are operations");
    Check.that(Arrays.binarySearch(ops, "startProfiler") >= 0
        && Arrays.binarySearch(ops, "stopProfiler") >= 0,
        "startProfiler and stopProfiler are operations");

    int count0 = (Integer) server.getAttribute(name, "ThreadCount");
    long started0 = (Long) server.getAttribute(name, "TotalStartedThreadCount");
    int daemon0 = (Integer) server.getAttribute(name, "DaemonThreadCount");
    Check.equal(TestNatives.threadCount(), count0, "ThreadCount = C count before start");
    Check.equal(TestNatives.totalStartedThreadCount(), started0,
        "TotalStartedThreadCount = C count before start");
    Check.equal(TestNatives.daemonThreadCount(), daemon0, "DaemonThreadCount = C before start");

    long gc = TestNatives.startWorkers(3, "gc", true, BURN_NS, 0);
    long jit = TestNatives.startWorkers(2, "jit", false, 0, 0);
    long[] gcIds = TestNatives.workerIds(gc);
    long[] jitIds = TestNatives.workerIds(jit);
    try {
      int count = (Integer) server.getAttribute(name, "ThreadCount");
      Check.equal(count0 + 5, count, "ThreadCount grew by the 5 started threads");
      Check.equal(TestNatives.threadCount(), count, "ThreadCount = C count");
      Check.equal(daemon0 + 3, server.getAttribute(name, "DaemonThreadCount"),
          "DaemonThreadCount grew by the 3 daemon threads");
      Check.equal(TestNatives.daemonThreadCount(), server.getAttribute(name, "DaemonThreadCount"),
          "DaemonThreadCount = C count");
      Check.equal(started0 + 5, server.getAttribute(name, "TotalStartedThreadCount"),
          "TotalStartedThreadCount grew by 5");
      Check.equal(TestNatives.totalStartedThreadCount(),
          server.getAttribute(name, "TotalStartedThreadCount"), "TotalStartedThreadCount = C");
      int peak = (Integer) server.getAttribute(name, "PeakThreadCount");
      Check.that(peak >= count, "PeakThreadCount >= ThreadCount");
      Check.equal(TestNatives.peakThreadCount(), peak, "PeakThreadCount = C peak");

      long[] ids = (long[]) server.getAttribute(name, "AllThreadIds");
      long[] cIds = TestNatives.allThreadIds();
      Arrays.sort(ids);
      Arrays.sort(cIds);
      Check.equal(cIds, ids, "AllThreadIds = the C side's ids");
      boolean all = true;
      for (long id : gcIds) {
        all &= Check.contains(ids, id);
      }
      for (long id : jitIds) {
        all &= Check.contains(ids, id);
      }
      Check.that(all, "AllThreadIds lists every started thread");

      // CPU time through an operation, bracketed by the C clock API's reading of the same
      // thread (the worker is parked, but a reading must never fall outside the bracket).
      for (int i = 0; i < gcIds.length; i++) {
        long before = TestNatives.workerCpuTime(gc, i);
        long viaJmx = (Long) server.invoke(name, "getThreadCpuTime",
            new Object[] {gcIds[i]}, new String[] {"long"});
        long after = TestNatives.workerCpuTime(gc, i);
        Check.that(before <= viaJmx && viaJmx <= after,
            "getThreadCpuTime(gc-worker-" + i + ") = " + viaJmx + " within C readings ["
                + before + ", " + after + "]");
        Check.that(viaJmx >= BURN_NS, "gc-worker-" + i + " shows the CPU it burned (>= "
            + BURN_NS + " ns)");
      }
      long[] before = new long[gcIds.length];
      for (int i = 0; i < gcIds.length; i++) {
        before[i] = TestNatives.workerCpuTime(gc, i);
      }
      long[] times = (long[]) server.invoke(name, "getThreadCpuTime",
          new Object[] {gcIds}, new String[] {long[].class.getName()});
      boolean bracketed = times.length == gcIds.length;
      for (int i = 0; bracketed && i < gcIds.length; i++) {
        bracketed = before[i] <= times[i] && times[i] <= TestNatives.workerCpuTime(gc, i);
      }
      Check.that(bracketed, "getThreadCpuTime(long[]) = C readings " + Arrays.toString(times));

      Check.throwsA(IllegalArgumentException.class,
          () -> server.invoke(name, "getThreadCpuTime", new Object[] {0L},
              new String[] {"long"}),
          "invoke getThreadCpuTime(0) through JMX");

      // ThreadInfo as open data, rebuilt the standard way.
      Check.that(Check.eventually(() -> threadState(server, name, jitIds[0])
          == Thread.State.WAITING), "jit-worker-0 reaches WAITING (read through JMX)");
      CompositeData cd = (CompositeData) server.invoke(name, "getThreadInfo",
          new Object[] {jitIds[0], 4}, new String[] {"long", "int"});
      ThreadInfo info = ThreadInfo.from(cd);
      Check.equal("jit-worker-0", info.getThreadName(), "ThreadInfo name through JMX");
      Check.equal(jitIds[0], info.getThreadId(), "ThreadInfo id through JMX");
      Check.that(info.getLockName() != null && info.getLockName().startsWith("jvm-test-gate@"),
          "ThreadInfo lock is the gate monitor: " + info.getLockName());
      Check.that(!info.isDaemon() && info.getPriority() == 5,
          "ThreadInfo daemon=false, priority=5");
      Check.equal("gc", server.invoke(name, "getThreadCategory", new Object[] {gcIds[0]},
          new String[] {"long"}), "getThreadCategory through JMX");
      // CPU per category as open data: the gc threads alive and started, CPU consistent.
      CompositeData[] usage = (CompositeData[]) server.getAttribute(name, "CategoryUsage");
      CompositeData gcUsage = null;
      for (CompositeData u : usage) {
        if ("gc".equals(u.get("name"))) {
          gcUsage = u;
        }
      }
      Check.that(gcUsage != null, "CategoryUsage has the gc category");
      Check.that((Integer) gcUsage.get("liveCount") >= 3
          && (Long) gcUsage.get("startedCount") >= 3, "CategoryUsage: gc counts " + gcUsage);
      long gcCpu = (Long) gcUsage.get("cpuTimeNs");
      long gcExited = (Long) gcUsage.get("exitedCpuTimeNs");
      Check.that(gcCpu >= gcExited && gcExited >= 0, "CategoryUsage: gc CPU " + gcUsage);

      // The standard interface through a proxy, as a generic ThreadMXBean client reads it.
      ThreadMXBean proxy = JMX.newMXBeanProxy(server, name, ThreadMXBean.class);
      Check.equal(TestNatives.threadCount(), proxy.getThreadCount(),
          "ThreadMXBean proxy: getThreadCount");
      ThreadInfo viaProxy = proxy.getThreadInfo(gcIds[1]);
      Check.that(viaProxy != null && "gc-worker-1".equals(viaProxy.getThreadName())
          && viaProxy.isDaemon(), "ThreadMXBean proxy: getThreadInfo(gc-worker-1)");

    } finally {
      Check.equal(3, TestNatives.stopWorkers(gc), "the 3 gc threads joined");
      Check.equal(2, TestNatives.stopWorkers(jit), "the 2 jit threads joined");
    }

    Check.equal(count0, server.getAttribute(name, "ThreadCount"),
        "ThreadCount is back after join");
    Check.equal(TestNatives.threadCount(), server.getAttribute(name, "ThreadCount"),
        "ThreadCount = C count after join");
    Check.equal(started0 + 5, server.getAttribute(name, "TotalStartedThreadCount"),
        "TotalStartedThreadCount keeps the exited threads");
    long[] idsAfter = (long[]) server.getAttribute(name, "AllThreadIds");
    Check.that(!Check.contains(idsAfter, gcIds[0]) && !Check.contains(idsAfter, jitIds[1]),
        "AllThreadIds no longer lists the joined threads");
    Check.equal(-1L, server.invoke(name, "getThreadCpuTime", new Object[] {gcIds[0]},
        new String[] {"long"}), "getThreadCpuTime of a joined thread is -1");
    Check.equal(null, server.invoke(name, "getThreadInfo", new Object[] {gcIds[0]},
        new String[] {"long"}), "getThreadInfo of a joined thread is null");

    int peak = (Integer) server.getAttribute(name, "PeakThreadCount");
    Check.that(peak >= count0 + 5, "PeakThreadCount remembers the 5 threads");
    server.invoke(name, "resetPeakThreadCount", new Object[0], new String[0]);
    Check.equal(server.getAttribute(name, "ThreadCount"),
        server.getAttribute(name, "PeakThreadCount"), "resetPeakThreadCount: peak = live");
    Check.equal(TestNatives.peakThreadCount(), server.getAttribute(name, "PeakThreadCount"),
        "PeakThreadCount = C peak after reset");

    profiler(server, name);

    VmThreadManagement.unregister();
    Check.that(!server.isRegistered(name), "unregister removes the bean");
  }

  /* The profiler through the bean's two operations: two runtime threads burn CPU while it
   * runs, and the collapsed text names them, one root frame per thread. */
  private static void profiler(MBeanServer server, ObjectName name) throws Exception {
    Check.throwsA(javax.management.RuntimeMBeanException.class, () -> server.invoke(name,
        "startProfiler", new Object[] {1L}, new String[] {"long"}),
        "startProfiler(1 ns) is refused (IllegalArgumentException)");
    server.invoke(name, "startProfiler", new Object[] {4_000_000L}, new String[] {"long"});
    long burners = TestNatives.startWorkers(2, "prof", false, 200_000_000L, 0);
    try {
      long[] ids = TestNatives.workerIds(burners);
      Check.that(Check.eventually(() -> TestNatives.workerCpuTime(burners, 0) >= 200_000_000L
          && TestNatives.workerCpuTime(burners, 1) >= 200_000_000L), "the prof workers burned");
      String collapsed = (String) server.invoke(name, "stopProfiler", new Object[0],
          new String[0]);
      Check.that(collapsed.contains("prof-worker-0 [" + ids[0] + "];")
          && collapsed.contains("prof-worker-1 [" + ids[1] + "];"),
          "stopProfiler: the collapsed stacks have a root frame per profiled thread");
      boolean wellFormed = !collapsed.isEmpty();
      for (String line : collapsed.split("\n")) {
        wellFormed &= line.matches(".+;.+ [1-9][0-9]*");
      }
      Check.that(wellFormed, "stopProfiler: every line is \"frame;...;frame weight\"");
    } finally {
      Check.equal(2, TestNatives.stopWorkers(burners), "the 2 prof threads joined");
    }
  }

  private static Thread.State threadState(MBeanServer server, ObjectName name, long id) {
    try {
      CompositeData cd = (CompositeData) server.invoke(name, "getThreadInfo",
          new Object[] {id}, new String[] {"long"});
      return cd == null ? null : ThreadInfo.from(cd).getThreadState();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
