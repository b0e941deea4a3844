/*
 * package-info: the package's javadoc.
 */

/**
 * vmthread's native threads in a JVM's JMX: {@link io.vmthread.VmThreadMXBean} is
 * {@code com.sun.management.ThreadMXBean} over the C management API of the vmthread runtime
 * loaded in the process, and {@link io.vmthread.VmThreadManagement} gets and registers it.
 * docs/embedding.md, section 6, describes how a Java host ships and uses it.
 */
package io.vmthread;
