/*
 * VmThreadManagement: the entry point for a JVM hosting vmthread (its javadoc says how).
 */
package io.vmthread;

import java.lang.management.ManagementFactory;
import javax.management.InstanceAlreadyExistsException;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;
import javax.management.StandardMBean;

/**
 * The entry point for a JVM hosting vmthread, as {@link ManagementFactory} is for the JVM's own
 * beans: {@link #getThreadMXBean()} returns the process-wide bean, {@link #register()} puts it
 * in the platform MBean server under {@value #OBJECT_NAME}, where any JMX client reads it.
 *
 * <pre>{@code
 * VmThreadMXBean threads = VmThreadManagement.getThreadMXBean();
 * long[] ids = threads.getAllThreadIds();
 * VmThreadManagement.register();   // jconsole shows it as io.vmthread:type=Threading
 * }</pre>
 *
 * <p>The JNI bridge {@code libvmthread_jni.so} is loaded on first use, with
 * {@code System.loadLibrary("vmthread_jni")} from {@code java.library.path}, or from the file
 * named by the system property {@code io.vmthread.jni.library}. It needs
 * {@code libvmthread.so.0} next to it and no environment. From JDK 24 on, loading a native
 * library is a restricted operation: start the JVM with
 * {@code --enable-native-access=ALL-UNNAMED} (JDK 17 accepts it too), or the load prints a
 * warning.
 */
public final class VmThreadManagement {
  /** The ObjectName {@link #register()} uses. */
  public static final String OBJECT_NAME = "io.vmthread:type=Threading";

  private static final VmThreadMXBeanImpl BEAN = new VmThreadMXBeanImpl(objectName());

  private VmThreadManagement() {}

  /**
   * The bean for this process's vmthread runtime.
   *
   * @return the bean (one per process)
   * @throws UnsatisfiedLinkError if the JNI bridge cannot be loaded
   */
  public static VmThreadMXBean getThreadMXBean() {
    NativeThreads.ensureLoaded();
    return BEAN;
  }

  /**
   * Registers the bean in the platform MBean server under {@value #OBJECT_NAME}, as an MXBean
   * (open types only, so clients need no vmthread classes). Registering twice is harmless.
   *
   * @return the name it is registered under
   * @throws JMException if the MBean server refuses it
   */
  public static synchronized ObjectName register() throws JMException {
    return register(ManagementFactory.getPlatformMBeanServer());
  }

  /**
   * Registers the bean in the given MBean server, as {@link #register()} does in the
   * platform's.
   *
   * @param server the MBean server
   * @return the name it is registered under
   * @throws JMException if the MBean server refuses it
   */
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

  /**
   * Removes the bean from the platform MBean server, if it is there.
   *
   * @throws JMException if the MBean server refuses
   */
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
