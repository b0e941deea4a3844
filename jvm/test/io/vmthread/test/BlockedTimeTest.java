/*
 * BlockedTimeTest: the blocked and waited times of an episode still in progress, read over
 * JMX, against HotSpot's own bean for Java threads blocked and waiting as long (issue #17 item
 * 5; the C side is issue #12 item 3). HotSpot includes the running episode (its
 * ThreadStatistics timers report active ticks), so a thread blocked for 300 ms reports about
 * 300 ms while still blocked; vmthread's bean must too.
 *
 * Both pairs block after contention monitoring is enabled on both beans (enabling resets the
 * times). The checks are lower bounds: each thread was seen BLOCKED (or WAITING) at `since`, so
 * by the time its ThreadInfo is read it has been blocked at least `held` ms. Nothing here
 * asserts an upper bound or a duration of its own.
 */
package io.vmthread.test;

import io.vmthread.VmThreadMXBean;
import io.vmthread.VmThreadManagement;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import javax.management.openmbean.CompositeData;

final class BlockedTimeTest {
  private BlockedTimeTest() {}

  private static final long HOLD_MS = 300;

  static void run() throws Exception {
    VmThreadMXBean mx = VmThreadManagement.getThreadMXBean();
    ThreadMXBean hotspot = ManagementFactory.getThreadMXBean();
    if (!mx.isThreadContentionMonitoringSupported()
        || !hotspot.isThreadContentionMonitoringSupported()) {
      Check.that(false, "contention monitoring is supported by both beans");
      return;
    }
    boolean mxWas = mx.isThreadContentionMonitoringEnabled();
    boolean hsWas = hotspot.isThreadContentionMonitoringEnabled();
    mx.setThreadContentionMonitoringEnabled(true);
    hotspot.setThreadContentionMonitoringEnabled(true);
    MBeanServer server = ManagementFactory.getPlatformMBeanServer();
    ObjectName name = VmThreadManagement.register();

    Object monitor = new Object();
    Object gate = new Object();
    boolean[] open = {false};
    Thread javaWaiting = new Thread(() -> {
      synchronized (gate) {
        while (!open[0]) {
          try {
            gate.wait();
          } catch (InterruptedException e) {
            return;
          }
        }
      }
    }, "java-waiting");
    Thread javaBlocked = new Thread(() -> {
      synchronized (monitor) {
        Thread.onSpinWait();
      }
    }, "java-blocked");
    long pair = 0;
    try {
      synchronized (monitor) {
        javaWaiting.start();
        javaBlocked.start();
        // The runtime's pair: "jvm-test-owner" waits on the gate monitor (WAITING), and
        // "jvm-test-blocked" is BLOCKED entering the monitor the owner holds.
        pair = TestNatives.startContention();
        long[] ids = TestNatives.workerIds(pair);
        long owner = ids[0];
        long blocked = ids[1];
        Check.that(Check.eventually(() -> state(hotspot, javaBlocked.getId())
            == Thread.State.BLOCKED && state(hotspot, javaWaiting.getId()) == Thread.State.WAITING
            && state(mx, blocked) == Thread.State.BLOCKED
            && state(mx, owner) == Thread.State.WAITING), "all four threads block");
        long since = System.nanoTime();
        Thread.sleep(HOLD_MS);
        long held = (System.nanoTime() - since) / 1_000_000L;

        ThreadInfo hb = hotspot.getThreadInfo(javaBlocked.getId());
        ThreadInfo hw = hotspot.getThreadInfo(javaWaiting.getId());
        Check.that(hb.getBlockedTime() >= held,
            "HotSpot: a Java thread still blocked reports its block in progress: "
                + hb.getBlockedTime() + " ms >= " + held + " ms");
        Check.that(hw.getWaitedTime() >= held,
            "HotSpot: a Java thread still waiting reports its wait in progress: "
                + hw.getWaitedTime() + " ms >= " + held + " ms");

        ThreadInfo vb = ThreadInfo.from((CompositeData) server.invoke(name, "getThreadInfo",
            new Object[] {blocked}, new String[] {"long"}));
        ThreadInfo vw = ThreadInfo.from((CompositeData) server.invoke(name, "getThreadInfo",
            new Object[] {owner}, new String[] {"long"}));
        Check.that(vb.getThreadState() == Thread.State.BLOCKED && vb.getBlockedTime() >= held,
            "over JMX, a runtime thread still blocked reports its block in progress, as HotSpot: "
                + vb.getBlockedTime() + " ms >= " + held + " ms (HotSpot "
                + hb.getBlockedTime() + " ms)");
        Check.that(vw.getThreadState() == Thread.State.WAITING && vw.getWaitedTime() >= held,
            "over JMX, a runtime thread still waiting reports its wait in progress, as HotSpot: "
                + vw.getWaitedTime() + " ms >= " + held + " ms (HotSpot "
                + hw.getWaitedTime() + " ms)");
        Check.equal(hb.getBlockedCount(), vb.getBlockedCount(),
            "blocked count of a block in progress, as HotSpot's");
      }
    } finally {
      synchronized (gate) {
        open[0] = true;
        gate.notifyAll();
      }
      javaBlocked.join();
      javaWaiting.join();
      if (pair != 0) {
        Check.equal(2, TestNatives.stopWorkers(pair), "contention pair joined");
      }
      mx.setThreadContentionMonitoringEnabled(mxWas);
      hotspot.setThreadContentionMonitoringEnabled(hsWas);
    }
  }

  private static Thread.State state(ThreadMXBean bean, long id) {
    ThreadInfo info = bean.getThreadInfo(id);
    return info == null ? null : info.getThreadState();
  }
}
