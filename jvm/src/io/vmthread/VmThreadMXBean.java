/*
 * VmThreadMXBean: the management interface of vmthread's native threads as a JMX MXBean.
 *
 * It is com.sun.management.ThreadMXBean (and so java.lang.management.ThreadMXBean) with the
 * same meaning for every method, applied to the threads of the vmthread runtime loaded in this
 * process instead of the JVM's own Java threads; plus what only a VM's threads have. Thread ids
 * are the runtime's ids (vmt_thread_id), unrelated to Java thread ids.
 *
 * Registered by VmThreadManagement.register() under "io.vmthread:type=Threading"; a JMX client
 * (jconsole, VisualVM, a remote connector) sees its attributes (ThreadCount, AllThreadIds, ...)
 * and operations (getThreadCpuTime, getThreadInfo, ...) as it sees java.lang:type=Threading.
 */
package io.vmthread;

public interface VmThreadMXBean extends com.sun.management.ThreadMXBean {
  /**
   * The category the VM gave the thread at start or attach ("gc", "jit", "app", ...), or null
   * if the thread is not alive.
   *
   * @throws IllegalArgumentException if id &lt;= 0
   */
  String getThreadCategory(long id);

  /** A jstack-style dump of all the runtime's threads (vmt_mx_thread_dump_to_string). */
  String getThreadDump();

  /** The version of the native library actually loaded ("0.1.0"). */
  String getLibraryVersion();
}
