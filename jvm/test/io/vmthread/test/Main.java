/*
 * Main: runs the JVM tests of vmthread's JMX bridge in one JVM and prints the closing line
 * "N passed, M failed" (scripts/test_report.py reads it from the Bazel test log).
 *   JmxTest  reads the runtime's threads through the platform MBean server by attribute and
 *            operation name, as a JMX client would, against the C side's own answers;
 *   ApiTest  calls the ThreadMXBean interface directly: values, ThreadInfo, exception mapping.
 * An unexpected exception in a test counts as one failure and the next test still runs.
 */
package io.vmthread.test;

public final class Main {
  private Main() {}

  public static void main(String[] args) {
    run("JmxTest", JmxTest::run);
    run("ApiTest", ApiTest::run);
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
