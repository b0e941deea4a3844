/*
 * OomTest: the bean when its calls fail half-way, run by jvm_test.sh in a JVM of its own with a
 * small heap (-Xmx16m, the serial collector: a full heap is reached fastest) and -Xcheck:jni.
 *   first  the bean's first ThreadInfo reads the JDK's ThreadInfo type from the platform bean
 *          (io.vmthread.ThreadInfos); when that read fails (here: java.lang:type=Threading is
 *          unregistered for the call; in the field: the heap is full at that moment) the call
 *          fails, and the next one, with the platform bean back, must answer;
 *   heap   each round fills the heap, frees a little more of it than the round before (about
 *          10 % more: from 512 bytes to all of it), makes one call, then frees everything, so
 *          that allocation fails at every point of a call in turn: in the bridge's JNI
 *          allocations and in the Java objects built from them. ThreadMXBean has one answer
 *          for that: OutOfMemoryError, and the bean must work again once there is memory.
 *          Nothing is allocated between the fill and the call's end (results go to
 *          preallocated counters), so that every failure counted is the call's.
 * The JDK's own classes that the calls use are initialized first, by the same kind of calls on
 * the platform bean through the MBean server: a static initializer of the JDK's that fails
 * under a full heap (Long$LongCache's, for the first boxed long) breaks that class for the whole
 * JVM, which is no fault of the bean's.
 */
package io.vmthread.test;

import io.vmthread.VmThreadManagement;
import io.vmthread.VmThreadMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import javax.management.openmbean.CompositeData;

public final class OomTest {
  private OomTest() {}

  static final int MONITORS = 200;
  static final String[] CALLS = {"getThreadInfo(ids, true, false)", "dumpAllThreads(true, true)",
      "dumpThreads()", "getCategoryUsage()"};

  private static final List<byte[]> FILL = new ArrayList<>(1 << 16);

  public static void main(String[] args) {
    long h = 0;
    try {
      MBeanServer server = ManagementFactory.getPlatformMBeanServer();
      CompositeData sample = (CompositeData) server.invoke(
          new ObjectName(ManagementFactory.THREAD_MXBEAN_NAME), "getThreadInfo",
          new Object[] {Thread.currentThread().getId()}, new String[] {"long"});
      Check.that(ThreadInfo.from(sample) != null
          && ManagementFactory.getThreadMXBean().dumpAllThreads(true, true).length > 0,
          "the JDK's side warmed up (its ThreadInfo, through the MBean server)");
      VmThreadMXBean mx = VmThreadManagement.getThreadMXBean();
      firstThreadInfoFails(server, mx);
      h = TestNatives.startHolder("jvm-test-oom-holder-\u00fc".getBytes(StandardCharsets.UTF_8),
          "jvm-test-oom-m\u00f6nitor".getBytes(StandardCharsets.UTF_8), MONITORS);
      long id = TestNatives.holderId(h);
      long[] ids = {id};
      for (int c = 0; c < CALLS.length; c++) {
        int ok = 0;
        int oome = 0;
        Throwable other = null;
        for (int free = 1; free < 30_000; free = free * 11 / 10 + 1) {
          Throwable failure = null;
          fill(64 << 10);
          fill(512);
          for (int k = 0; k < free && !FILL.isEmpty(); k++) {
            FILL.remove(FILL.size() - 1);
          }
          try {
            call(mx, c, ids);
          } catch (Throwable t) {
            failure = t;
          }
          FILL.clear();
          if (failure == null) {
            ok++;
          } else if (failure instanceof OutOfMemoryError) {
            oome++;
          } else if (other == null) {
            other = failure;
          }
        }
        Check.that(other == null, CALLS[c] + " out of heap: OutOfMemoryError or an answer, "
            + "nothing else (" + ok + " answered, " + oome + " OutOfMemoryError"
            + (other == null ? "" : ", then " + other) + ")");
        if (other != null) {
          other.printStackTrace(System.out);
        }
        Check.that(oome > 0 && ok > 0, CALLS[c] + ": the rounds ran out of heap in the call and "
            + "also had enough (" + oome + " / " + ok + ")");
      }
      // With memory again, every call answers in full.
      ThreadInfo[] infos = mx.getThreadInfo(ids, true, false);
      Check.equal(MONITORS, infos[0] == null ? -1 : infos[0].getLockedMonitors().length,
          "afterwards: getThreadInfo(ids, true, false) has every held monitor");
      boolean listed = false;
      for (ThreadInfo t : mx.dumpAllThreads(true, true)) {
        listed |= t.getThreadId() == id && t.getLockedMonitors().length == MONITORS;
      }
      Check.that(listed, "afterwards: dumpAllThreads(true, true) lists the holder in full");
      Check.that(mx.dumpThreads().contains("jvm-test-oom-holder-\u00fc"),
          "afterwards: dumpThreads names the holder");
    } catch (Throwable t) {
      FILL.clear();
      Check.that(false, "OomTest threw " + t);
      t.printStackTrace(System.out);
    } finally {
      if (h != 0) {
        TestNatives.stopHolder(h);
      }
    }
    System.out.println(Check.passed + " passed, " + Check.failed + " failed");
    System.exit(Check.failed == 0 ? 0 : 1);
  }

  /** The bean's first ThreadInfo, with java.lang:type=Threading unregistered, then again. */
  private static void firstThreadInfoFails(MBeanServer server, VmThreadMXBean mx)
      throws Exception {
    long g = TestNatives.startWorkers(1, "app", false, 0, 0);
    try {
      long id = TestNatives.workerIds(g)[0];
      ObjectName threading = new ObjectName(ManagementFactory.THREAD_MXBEAN_NAME);
      server.unregisterMBean(threading);
      Throwable first;
      try {
        first = Check.failure(() -> mx.getThreadInfo(id));
      } finally {
        server.registerMBean(ManagementFactory.getThreadMXBean(), threading);
      }
      Check.that(first instanceof IllegalStateException, "the bean's first ThreadInfo without "
          + "java.lang:type=Threading: IllegalStateException (" + first + ")");
      Throwable[] again = new Throwable[1];
      ThreadInfo info = null;
      try {
        info = mx.getThreadInfo(id);
      } catch (Throwable t) {
        again[0] = t;
        t.printStackTrace(System.out);
      }
      Check.that(info != null && info.getThreadId() == id, "with it registered again, the next "
          + "call answers (" + (again[0] != null ? again[0] : info.getThreadName()) + ")");
    } finally {
      Check.equal(1, TestNatives.stopWorkers(g), "the app thread joined");
    }
  }

  private static void fill(int chunk) {
    try {
      while (true) {
        FILL.add(new byte[chunk]);
      }
    } catch (OutOfMemoryError full) {
      // the heap is full, to chunk bytes
    }
  }

  private static void call(VmThreadMXBean mx, int c, long[] ids) {
    switch (c) {
      case 0: mx.getThreadInfo(ids, true, false); break;
      case 1: mx.dumpAllThreads(true, true); break;
      case 2: mx.dumpThreads(); break;
      default: mx.getCategoryUsage(); break;
    }
  }
}
