/*
 * JniTest: what the JNI bridge must do with strings and references whatever the runtime holds.
 *   names    a thread name with characters outside the BMP (4-byte UTF-8) and other non-ASCII
 *            characters reaches Java unchanged (JNI's NewStringUTF takes modified UTF-8, which
 *            differs from UTF-8 exactly there), in ThreadInfo, in dumpAllThreads, in the dump;
 *   monitors a thread holding many monitors: every one is a MonitorInfo of the right name,
 *            and the bridge stays within the local references it asked the JVM for (-Xcheck:jni
 *            prints "WARNING: JNI local refs: N, exceeds capacity: M" otherwise, which
 *            jvm_test.sh counts as a failure);
 *   frames   a guest (VM) method whose line is unknown is not a native method: StackTraceElement
 *            keeps -2 and isNativeMethod for native methods, and prints "(Interpreter.vm)";
 *            a native symbol is one ("(Native Method)");
 *   bytes    a monitor whose name is not UTF-8 (0xff, an overlong NUL, a CESU surrogate, a cut
 *            4-byte sequence): its LockInfo is the bytes as Java's UTF-8 decoder reads them
 *            (U+FFFD for each bad sequence), lockName is still lockInfo.toString(), and the
 *            dumps do not fail;
 *   ended    once that thread has ended, every per-id query answers "no such thread" (null,
 *            -1) in that id's position, as ThreadMXBean says for a thread that is not alive;
 *   churn    Java threads (two of them attached to the runtime) calling the bean while runtime
 *            threads start and end: every answer keeps the specification's shape (no null in
 *            dumpAllThreads, entry i for ids[i]; an attached reader sees itself RUNNABLE, and
 *            not at all once detached).
 */
package io.vmthread.test;

import io.vmthread.CategoryUsage;
import io.vmthread.VmThreadManagement;
import io.vmthread.VmThreadMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MonitorInfo;
import java.lang.management.ThreadInfo;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import javax.management.JMX;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import javax.management.openmbean.CompositeData;

final class JniTest {
  private JniTest() {}

  // U+00FC (2 bytes), U+540D (3 bytes), U+1F600 (4 bytes: a surrogate pair in Java).
  static final String NAME = "jvm-test-\u00fc-\u540d-\ud83d\ude00-end";
  static final String MONITOR = "jvm-test-m\u00f6nitor-\ud83d\udd12";
  static final int MONITORS = 100;

  static void run() throws Exception {
    VmThreadMXBean mx = VmThreadManagement.getThreadMXBean();
    long h = TestNatives.startHolder(NAME.getBytes(StandardCharsets.UTF_8),
        MONITOR.getBytes(StandardCharsets.UTF_8), MONITORS);
    long id = TestNatives.holderId(h);
    try {
      ThreadInfo info = mx.getThreadInfo(id);
      Check.equal(NAME, info == null ? null : info.getThreadName(),
          "a name with a 4-byte UTF-8 character reaches ThreadInfo unchanged");
      boolean inDump = false;
      for (ThreadInfo t : mx.dumpAllThreads(false, false)) {
        inDump |= t != null && t.getThreadId() == id && NAME.equals(t.getThreadName());
      }
      Check.that(inDump, "and dumpAllThreads");
      Check.that(mx.dumpThreads().contains("\"" + NAME + "\""), "and dumpThreads");

      if (mx.isObjectMonitorUsageSupported()) {
        for (int round = 0; round < 3; round++) {
          ThreadInfo[] infos = mx.getThreadInfo(new long[] {id}, true, false);
          MonitorInfo[] held = infos[0].getLockedMonitors();
          Check.equal(MONITORS, held.length,
              "getThreadInfo(ids, true, false): a MonitorInfo per held monitor");
          boolean names = true;
          for (MonitorInfo m : held) {
            names &= MONITOR.equals(m.getClassName());
          }
          Check.that(names, "each named as created (non-ASCII, 4-byte UTF-8)");
        }
        int found = 0;
        for (ThreadInfo t : mx.dumpAllThreads(true, false)) {
          if (t != null && t.getThreadId() == id) {
            found = t.getLockedMonitors().length;
          }
        }
        Check.equal(MONITORS, found, "dumpAllThreads(true, false): every held monitor");
      }
      proxy(id);
    } finally {
      TestNatives.stopHolder(h);
    }
    ended(mx, id);
    frames(mx);
    badBytes(mx);
    churn(mx);
  }

  /* VmThreadMXBean itself through an MXBean proxy (every value converted to open data and back
   * by the MXBean framework), and ThreadInfo.from on what the MBean server returns. */
  private static void proxy(long id) throws Exception {
    MBeanServer server = ManagementFactory.getPlatformMBeanServer();
    ObjectName name = VmThreadManagement.register();
    try {
      VmThreadMXBean proxy = JMX.newMXBeanProxy(server, name, VmThreadMXBean.class);
      Check.equal(name, proxy.getObjectName(), "VmThreadMXBean proxy: getObjectName");
      CategoryUsage[] usage = proxy.getCategoryUsage();
      Check.that(usage.length > 0 && usage[0].getName() != null,
          "VmThreadMXBean proxy: getCategoryUsage");
      ThreadInfo info = proxy.getThreadInfo(id);
      Check.equal(NAME, info == null ? null : info.getThreadName(),
          "VmThreadMXBean proxy: getThreadInfo keeps the 4-byte UTF-8 name");
      Check.equal(-1L, info == null ? 0L : info.getLockOwnerId(),
          "a thread blocked on nothing: lockOwnerId -1");
      CompositeData cd = (CompositeData) server.invoke(name, "getThreadInfo",
          new Object[] {id}, new String[] {"long"});
      ThreadInfo from = ThreadInfo.from(cd);
      Check.equal(NAME, from.getThreadName(), "ThreadInfo.from(the server's CompositeData)");
      if (proxy.isObjectMonitorUsageSupported() && proxy.isSynchronizerUsageSupported()) {
        ThreadInfo[] all = proxy.getThreadInfo(new long[] {id}, true, true);
        Check.equal(MONITORS, all[0].getLockedMonitors().length,
            "VmThreadMXBean proxy: getThreadInfo(ids, true, true) keeps every MonitorInfo");
      }
    } finally {
      VmThreadManagement.unregister();
    }
  }

  private static void badBytes(VmThreadMXBean mx) {
    byte[] bytes = {'j', 'v', 'm', '-', (byte) 0xff, (byte) 0xfe, '-', (byte) 0xc0, (byte) 0x80,
        '-', (byte) 0xed, (byte) 0xa0, (byte) 0x80, '-', (byte) 0xf0, (byte) 0x9f, (byte) 0x98};
    String expected = new String(bytes, StandardCharsets.UTF_8);
    long h = TestNatives.startHolder("jvm-test-bad-bytes".getBytes(StandardCharsets.UTF_8),
        bytes, 1);
    try {
      long id = TestNatives.holderId(h);
      if (mx.isObjectMonitorUsageSupported()) {
        ThreadInfo info = mx.getThreadInfo(new long[] {id}, true, false)[0];
        MonitorInfo[] held = info.getLockedMonitors();
        Check.that(held.length == 1 && expected.equals(held[0].getClassName()),
            "a monitor name that is not UTF-8 arrives as Java decodes it: "
            + (held.length == 1 ? held[0].getClassName() : "no monitor"));
      }
      ThreadInfo waiting = mx.getThreadInfo(id);
      Check.equal(Thread.State.WAITING, waiting.getThreadState(), "the holder waits");
      if (mx.isThreadContentionMonitoringSupported()) {
        boolean was = mx.isThreadContentionMonitoringEnabled();
        try {
          mx.setThreadContentionMonitoringEnabled(false);
          ThreadInfo off = mx.getThreadInfo(id);
          Check.that(off.getBlockedTime() == -1 && off.getWaitedTime() == -1,
              "contention monitoring off: blockedTime and waitedTime -1 (" + off.getBlockedTime()
              + ", " + off.getWaitedTime() + ")");
          mx.setThreadContentionMonitoringEnabled(true);
          ThreadInfo on = mx.getThreadInfo(id);
          Check.that(on.getBlockedTime() >= 0 && on.getWaitedTime() >= 0
              && on.getWaitedCount() >= 1, "on: both >= 0, waitedCount >= 1 (" + on.getBlockedTime()
              + ", " + on.getWaitedTime() + ", " + on.getWaitedCount() + ")");
        } finally {
          mx.setThreadContentionMonitoringEnabled(was);
        }
      }
      Check.that(waiting.getLockInfo() != null
          && waiting.getLockName().equals(waiting.getLockInfo().toString()),
          "lockName = lockInfo.toString() (class@hex)");
      Check.that(mx.dumpThreads().contains("jvm-test-bad-bytes")
          && mx.dumpThreadsJson().contains("jvm-test-bad-bytes"), "both dumps still work");
    } finally {
      TestNatives.stopHolder(h);
    }
  }

  private static void frames(VmThreadMXBean mx) {
    long g = TestNatives.startWorkers(1, "noline", false, 0, 0);
    TestNatives.setStackWalker(true);
    try {
      ThreadInfo info = mx.getThreadInfo(TestNatives.workerIds(g)[0], 10);
      StackTraceElement[] st = info.getStackTrace();
      Check.equal(2, st.length, "noline: the walker's two frames");
      if (st.length == 2) {
        Check.that(!st[0].isNativeMethod() && st[0].getLineNumber() == -1,
            "a guest method with no line is not native, line -1: " + st[0]
            + " (line " + st[0].getLineNumber() + ")");
        Check.equal("demo.Interpreter.loop(Interpreter.vm)", st[0].toString(),
            "and prints as Java prints a frame of unknown line");
        Check.that(st[1].isNativeMethod() && st[1].getLineNumber() == -2,
            "a native symbol is a native method: " + st[1]);
      }
    } finally {
      TestNatives.setStackWalker(false);
      TestNatives.stopWorkers(g);
    }
  }

  private static void ended(VmThreadMXBean mx, long dead) {
    long h = TestNatives.startHolder("jvm-test-live".getBytes(StandardCharsets.UTF_8),
        "jvm-test-none".getBytes(StandardCharsets.UTF_8), 0);
    try {
      ended(mx, dead, TestNatives.holderId(h));
    } finally {
      TestNatives.stopHolder(h);
    }
  }

  private static void ended(VmThreadMXBean mx, long dead, long live) {
    Check.equal(null, mx.getThreadInfo(dead), "getThreadInfo(ended id) is null");
    ThreadInfo[] infos = mx.getThreadInfo(new long[] {dead, live, dead}, 1);
    Check.that(infos.length == 3 && infos[0] == null && infos[2] == null && infos[1] != null
        && infos[1].getThreadId() == live, "getThreadInfo(ids): null exactly at the ended ids");
    if (mx.isObjectMonitorUsageSupported() && mx.isSynchronizerUsageSupported()) {
      infos = mx.getThreadInfo(new long[] {live, dead}, true, true);
      Check.that(infos.length == 2 && infos[0] != null && infos[1] == null,
          "getThreadInfo(ids, true, true): null at the ended id");
    }
    if (mx.isThreadCpuTimeSupported() && mx.isThreadCpuTimeEnabled()) {
      Check.equal(-1L, mx.getThreadCpuTime(dead), "getThreadCpuTime(ended id) = -1");
      Check.equal(-1L, mx.getThreadUserTime(dead), "getThreadUserTime(ended id) = -1");
      long[] t = mx.getThreadCpuTime(new long[] {dead, live});
      Check.that(t.length == 2 && t[0] == -1 && t[1] >= 0,
          "getThreadCpuTime(long[]): -1 at the ended id only");
    }
    if (mx.isThreadAllocatedMemorySupported() && mx.isThreadAllocatedMemoryEnabled()) {
      Check.equal(-1L, mx.getThreadAllocatedBytes(dead), "getThreadAllocatedBytes(ended) = -1");
      long[] b = mx.getThreadAllocatedBytes(new long[] {live, dead});
      Check.that(b.length == 2 && b[1] == -1, "getThreadAllocatedBytes(long[]): -1 at ended");
    }
    Check.equal(null, mx.getThreadCategory(dead), "getThreadCategory(ended id) is null");
  }

  private static final int READERS = 4;
  private static final int ROUNDS = 30;

  private static void churn(VmThreadMXBean mx) throws Exception {
    AtomicReference<String> problem = new AtomicReference<>();
    Thread churner = new Thread(() -> {
      for (int i = 0; i < ROUNDS; i++) {
        long g = TestNatives.startWorkers(3, "churn", i % 2 == 0, 0, 0);
        TestNatives.stopWorkers(g);
      }
    });
    boolean monitors = mx.isObjectMonitorUsageSupported() && mx.isSynchronizerUsageSupported();
    List<Thread> readers = new ArrayList<>();
    for (int r = 0; r < READERS; r++) {
      String self = "jvm-test-reader-" + r;
      readers.add(new Thread(() -> {
        try {
          // Half the readers are runtime threads themselves (attached), half are not.
          long selfId = self.endsWith("0") || self.endsWith("2") ? TestNatives.attachCurrent(self)
              : 0;
          while (churner.isAlive() || selfId != 0) {
            if (selfId != 0) {
              ThreadInfo mine = mx.getThreadInfo(selfId);
              if (mine == null || !self.equals(mine.getThreadName())
                  || mine.getThreadState() != Thread.State.RUNNABLE) {
                problem.compareAndSet(null, "attached reader's own ThreadInfo " + mine);
              }
              if (!churner.isAlive()) {
                TestNatives.detachCurrent();
                if (mx.getThreadInfo(selfId) != null) {
                  problem.compareAndSet(null, "a detached reader still has a ThreadInfo");
                }
                selfId = 0;
                continue;
              }
            }
            long[] ids = mx.getAllThreadIds();
            ThreadInfo[] infos = mx.getThreadInfo(ids, monitors, monitors);
            for (int i = 0; i < ids.length; i++) {
              if (infos[i] != null && infos[i].getThreadId() != ids[i]) {
                problem.compareAndSet(null, "getThreadInfo entry " + i + " is not ids[i]");
              }
            }
            for (ThreadInfo t : mx.dumpAllThreads(monitors, monitors)) {
              if (t == null) {
                problem.compareAndSet(null, "dumpAllThreads has a null entry");
              }
            }
            if (mx.isThreadCpuTimeSupported()) {
              for (long t : mx.getThreadCpuTime(ids)) {
                if (t < -1) {
                  problem.compareAndSet(null, "getThreadCpuTime entry " + t);
                }
              }
            }
            if (mx.getThreadCount() < 0 || mx.getDaemonThreadCount() < 0) {
              problem.compareAndSet(null, "negative count");
            }
          }
        } catch (Throwable t) {
          problem.compareAndSet(null, t.toString());
        }
      }));
    }
    churner.start();
    readers.forEach(Thread::start);
    churner.join();
    for (Thread t : readers) {
      t.join();
    }
    Check.equal(null, problem.get(),
        READERS + " Java threads reading while runtime threads start and end");
  }
}
