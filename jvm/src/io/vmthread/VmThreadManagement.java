/*
 * VmThreadManagement: the entry point for a JVM hosting vmthread, as ManagementFactory is for
 * the JVM's own beans. getThreadMXBean() returns the process-wide bean; register() puts it in
 * the platform MBean server under OBJECT_NAME so that any JMX client can read it.
 *
 *   VmThreadMXBean threads = VmThreadManagement.getThreadMXBean();
 *   long[] ids = threads.getAllThreadIds();
 *   VmThreadManagement.register();       // visible in jconsole as io.vmthread:type=Threading
 */
package io.vmthread;

import java.lang.management.ManagementFactory;
import javax.management.InstanceAlreadyExistsException;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;
import javax.management.StandardMBean;

public final class VmThreadManagement {
  /** The ObjectName register() uses. */
  public static final String OBJECT_NAME = "io.vmthread:type=Threading";

  private static final VmThreadMXBeanImpl BEAN = new VmThreadMXBeanImpl(objectName());

  private VmThreadManagement() {}

  /** The bean for this process's vmthread runtime (loads libvmthread_jni on first use). */
  public static VmThreadMXBean getThreadMXBean() {
    NativeThreads.ensureLoaded();
    return BEAN;
  }

  /**
   * Registers the bean in the platform MBean server under OBJECT_NAME, as an MXBean (open
   * types only, so clients need no vmthread classes). Returns the name; registering twice is
   * harmless.
   */
  public static synchronized ObjectName register() throws JMException {
    return register(ManagementFactory.getPlatformMBeanServer());
  }

  public static synchronized ObjectName register(MBeanServer server) throws JMException {
    VmThreadMXBean bean = getThreadMXBean();
    ObjectName name = bean.getObjectName();
    if (server.isRegistered(name)) {
      return name;
    }
    try {
      server.registerMBean(new StandardMBean(bean, VmThreadMXBean.class, true), name);
    } catch (InstanceAlreadyExistsException raced) {
      // Registered by another MBeanServer user between the check and here: same outcome.
    }
    return name;
  }

  /** Removes the bean from the platform MBean server, if it is there. */
  public static synchronized void unregister() throws JMException {
    MBeanServer server = ManagementFactory.getPlatformMBeanServer();
    ObjectName name = BEAN.getObjectName();
    if (server.isRegistered(name)) {
      server.unregisterMBean(name);
    }
  }

  private static ObjectName objectName() {
    try {
      return new ObjectName(OBJECT_NAME);
    } catch (MalformedObjectNameException e) {
      throw new AssertionError(e);
    }
  }
}
