/*
 * CategoryUsage: one thread category's figures (vmt_mx_get_category_usage, Eclipse OMR's
 * omrthread_get_jvm_cpu_usage_info): how much CPU the VM's GC, JIT or application threads used,
 * the exited ones included. An MXBean maps it to open data (CompositeData) through its getters
 * and its @ConstructorParameters constructor, so a generic JMX client reads it. The annotation
 * is java.management's (javax.management.ConstructorParameters), not java.beans'
 * ConstructorProperties: that one is in java.desktop, which a JVM may not have (a jlink'ed
 * image), and without it no MXBean proxy of VmThreadMXBean can be made there.
 */
package io.vmthread;

import javax.management.ConstructorParameters;

/** CPU time and thread counts of one thread category, from one consistent moment. */
public final class CategoryUsage {
  private final String name;
  private final int liveCount;
  private final long startedCount;
  private final long cpuTimeNs;
  private final long exitedCpuTimeNs;

  /**
   * @param name the category ("gc", "jit", "app", ...)
   * @param liveCount its threads alive now
   * @param startedCount its threads ever started or attached
   * @param cpuTimeNs CPU time of its live threads plus every one that exited, -1 when disabled
   * @param exitedCpuTimeNs the exited threads' part of it, -1 when disabled
   */
  @ConstructorParameters({"name", "liveCount", "startedCount", "cpuTimeNs", "exitedCpuTimeNs"})
  public CategoryUsage(String name, int liveCount, long startedCount, long cpuTimeNs,
                       long exitedCpuTimeNs) {
    this.name = name;
    this.liveCount = liveCount;
    this.startedCount = startedCount;
    this.cpuTimeNs = cpuTimeNs;
    this.exitedCpuTimeNs = exitedCpuTimeNs;
  }

  /** @return the category's name */
  public String getName() {
    return name;
  }

  /** @return its threads alive now */
  public int getLiveCount() {
    return liveCount;
  }

  /** @return its threads ever started or attached */
  public long getStartedCount() {
    return startedCount;
  }

  /** @return CPU time of its live threads plus all that exited, in ns; -1 when disabled */
  public long getCpuTimeNs() {
    return cpuTimeNs;
  }

  /** @return the exited threads' part of {@link #getCpuTimeNs}, in ns; -1 when disabled */
  public long getExitedCpuTimeNs() {
    return exitedCpuTimeNs;
  }

  @Override
  public String toString() {
    return name + ": live=" + liveCount + " started=" + startedCount + " cpu=" + cpuTimeNs
        + "ns (exited " + exitedCpuTimeNs + "ns)";
  }
}
