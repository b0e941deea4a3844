/*
 * JniTest: what the JNI bridge must do with strings and references whatever the runtime holds.
 *   names    a thread name with characters outside the BMP (4-byte UTF-8) and other non-ASCII
 *            characters reaches Java unchanged (JNI's NewStringUTF takes modified UTF-8, which
 *            differs from UTF-8 exactly there), in ThreadInfo, in dumpAllThreads, in the dump;
 *   monitors a thread holding many monitors: every one is a MonitorInfo of the right name,
 *            and the bridge stays within the local references it asked the JVM for (-Xcheck:jni
 *            prints "WARNING: JNI local refs: N, exceeds capacity: M" otherwise, which
 *            jvm_test.sh counts as a failure).
 */
package io.vmthread.test;

import io.vmthread.VmThreadManagement;
import io.vmthread.VmThreadMXBean;
import java.lang.management.MonitorInfo;
import java.lang.management.ThreadInfo;
import java.nio.charset.StandardCharsets;

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
    try {
      long id = TestNatives.holderId(h);
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
    } finally {
      TestNatives.stopHolder(h);
    }
  }
}
