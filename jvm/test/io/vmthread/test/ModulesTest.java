/*
 * ModulesTest: the bean in a JVM that has only the modules vmthread.jar needs (java.base,
 * java.management, jdk.management: what a jlink'ed application image may hold), run by
 * jvm_test.sh with --limit-modules. An MXBean proxy of VmThreadMXBean must be possible there:
 * the MXBean framework has to rebuild every type from open data (CategoryUsage) with what
 * java.management offers.
 */
package io.vmthread.test;

import io.vmthread.CategoryUsage;
import io.vmthread.VmThreadManagement;
import io.vmthread.VmThreadMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import javax.management.JMX;

public final class ModulesTest {
  private ModulesTest() {}

  public static void main(String[] args) {
    Check.that(ModuleLayer.boot().findModule("java.desktop").isEmpty(),
        "this JVM runs without java.desktop (--limit-modules)");
    long g = 0;
    try {
      g = TestNatives.startWorkers(2, "app", false, 0, 0);
      long[] ids = TestNatives.workerIds(g);
      VmThreadMXBean proxy = JMX.newMXBeanProxy(ManagementFactory.getPlatformMBeanServer(),
          VmThreadManagement.register(), VmThreadMXBean.class);
      CategoryUsage[] usage = proxy.getCategoryUsage();
      boolean app = false;
      for (CategoryUsage u : usage) {
        app |= u.getName().equals("app") && u.getLiveCount() == 2;
      }
      Check.that(app, "VmThreadMXBean proxy: getCategoryUsage has app, 2 live");
      ThreadInfo info = proxy.getThreadInfo(ids[1]);
      Check.equal("app-worker-1", info == null ? null : info.getThreadName(),
          "VmThreadMXBean proxy: getThreadInfo");
    } catch (Throwable t) {
      Check.that(false, "ModulesTest threw " + t);
      t.printStackTrace(System.out);
    } finally {
      if (g != 0) {
        Check.equal(2, TestNatives.stopWorkers(g), "the 2 app threads joined");
      }
    }
    System.out.println(Check.passed + " passed, " + Check.failed + " failed");
    System.exit(Check.failed == 0 ? 0 : 1);
  }
}
