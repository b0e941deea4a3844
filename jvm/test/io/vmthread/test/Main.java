/*
 * Main: runs the JVM tests of vmthread's JMX bridge in one JVM and prints the closing line
 * "N passed, M failed" (scripts/test_report.py reads it from the Bazel test log).
 *   JmxTest  reads the runtime's threads through the platform MBean server by attribute and
 *            operation name, as a JMX client would, against the C side's own answers;
 *   ApiTest  calls the ThreadMXBean interface directly: values, ThreadInfo, exception mapping;
 *   JniTest  the bridge with non-ASCII names (4-byte UTF-8) and a thread holding many monitors;
 *   Host     with --serve DIR: serves the bean to a second JVM (Client) over a loopback RMI
 *            connector, with the SIGQUIT dump on, until DIR/stop appears; then, with
 *            --guest FILE, loads a guest that linked libvmthread.a (two runtimes).
 * An unexpected exception in a test counts as one failure and the next test still runs.
 */
package io.vmthread.test;

import java.nio.file.Path;

public final class Main {
  private Main() {}

  public static void main(String[] args) {
    Path serve = null;
    String guest = null;
    for (int i = 0; i + 1 < args.length; i += 2) {
      if (args[i].equals("--serve")) {
        serve = Path.of(args[i + 1]);
      } else if (args[i].equals("--guest")) {
        guest = args[i + 1];
      }
    }
    run("JmxTest", JmxTest::run);
    run("ApiTest", ApiTest::run);
    run("BlockedTimeTest", BlockedTimeTest::run);
    run("JniTest", JniTest::run);
    if (serve != null) {
      Path dir = serve;
      String file = guest;
      run("Host", () -> Host.serve(dir, file));
    }
    System.out.println(Check.passed + " passed, " + Check.failed + " failed");
    System.exit(Check.failed == 0 ? 0 : 1);
  }

  private static void run(String name, Check.Action test) {
    System.out.println("== " + name);
    try {
      test.run();
    } catch (Throwable t) {
      Check.that(false, name + " threw " + t);
      t.printStackTrace(System.out);
    }
  }
}
