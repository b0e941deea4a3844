/*
 * VmThreadMXBean: the management interface of vmthread's native threads as a JMX MXBean.
 */
package io.vmthread;

/**
 * The threads of the vmthread runtime loaded in this process, as a JMX MXBean.
 *
 * <p>It is {@link com.sun.management.ThreadMXBean} (and so
 * {@link java.lang.management.ThreadMXBean}) with the same meaning for every method, applied to
 * the runtime's native threads instead of the JVM's Java threads, plus what only a VM's threads
 * have. Thread ids are the runtime's ids ({@code vmt_thread_id}), unrelated to Java thread ids.
 * Arguments are checked as HotSpot checks them, in the same order and with the same messages
 * ({@code "Invalid thread ID parameter: 0"}, {@code "Invalid maxDepth parameter: -1"},
 * {@code "Invalid thread ID entry"}), and {@code getThreadInfo(null, lockedMonitors,
 * lockedSynchronizers)} answers as {@code dumpAllThreads(lockedMonitors, lockedSynchronizers)},
 * as HotSpot's does.
 *
 * <p>Registered by {@link VmThreadManagement#register()} under
 * {@value VmThreadManagement#OBJECT_NAME}; a JMX client (jconsole, VisualVM, a remote connector)
 * sees its attributes ({@code ThreadCount}, {@code AllThreadIds}, ...) and operations
 * ({@code getThreadCpuTime}, {@code getThreadInfo}, {@code dumpThreads}, ...) as it sees
 * {@code java.lang:type=Threading}, with no vmthread classes on its side.
 *
 * <p>Differences from HotSpot's bean, each because a native runtime is not a JVM:
 * <ul>
 *   <li><b>Allocated memory</b> is measured only when jemalloc is the process's allocator
 *       (the JVM started with {@code LD_PRELOAD=libjemalloc.so.2}). When it is not,
 *       {@link #isThreadAllocatedMemorySupported()} is false and the three allocated-memory
 *       <em>attributes</em> read as if measurement were disabled:
 *       {@code ThreadAllocatedMemoryEnabled} is false, {@code CurrentThreadAllocatedBytes} and
 *       {@code TotalThreadAllocatedBytes} are -1, so a client that reads every attribute (as
 *       jconsole does) gets all of them. Enabling it, and the per-thread operations
 *       {@code getThreadAllocatedBytes}, throw {@link UnsupportedOperationException} as the
 *       specification says; disabling it is accepted and changes nothing (the attribute
 *       reads false, so a client may write back what it read).
 *   <li><b>Two runtimes</b>: if another copy of the runtime in this process has threads (a
 *       library that linked {@code libvmthread.a} statically), this bean would see only part of
 *       the process, so every query throws {@link IllegalStateException} naming that copy.
 *   <li>{@code ThreadInfo.isSuspended()} is true while the thread's suspend count is above 0,
 *       {@code isInNative()} while it is RUNNABLE with its execution state NATIVE (where a
 *       thread that never entered the VM's managed code stays; never while it is blocked or
 *       waiting in a runtime call), as the C ThreadInfo says.
 * </ul>
 */
public interface VmThreadMXBean extends com.sun.management.ThreadMXBean {
  /**
   * The category the VM gave the thread at start or attach ("gc", "jit", "app", ...).
   *
   * @param id the runtime's thread id
   * @return the category, or null if the thread is not alive
   * @throws IllegalArgumentException if {@code id <= 0}
   */
  String getThreadCategory(long id);

  /**
   * CPU time and thread counts per thread category, sorted by name: each category's live and
   * started counts and the CPU time of its live threads plus every one that exited, from one
   * consistent moment ({@code vmt_mx_get_category_usage}, Eclipse OMR's
   * {@code omrthread_get_jvm_cpu_usage_info}). An attribute ({@code CategoryUsage}): one sweep
   * of the threads' CPU clocks.
   *
   * @return one entry per category that has had a thread
   */
  CategoryUsage[] getCategoryUsage();

  /**
   * A jstack-style text dump of all the runtime's threads, with a deadlock section when there
   * is one ({@code vmt_mx_thread_dump_to_string}). An operation, not an attribute: a client
   * that reads every attribute does not build a dump each time.
   *
   * @return the dump
   */
  String dumpThreads();

  /**
   * The same dump as JSON, in the layout of {@code jcmd <pid> Thread.dump_to_file
   * -format=json} (JDK 21 and later: {@code threadDump}, {@code threadContainers},
   * {@code threads} with {@code tid}, {@code name}, {@code state}, {@code stack},
   * {@code monitorsOwned}), plus vmthread's {@code category}, {@code daemon},
   * {@code priority}, {@code cpuTimeNs} and {@code ownableSynchronizersOwned}
   * ({@code vmt_mx_thread_dump_json_to_string}).
   *
   * @return the dump as a JSON text
   */
  String dumpThreadsJson();

  /**
   * Starts the runtime's CPU-time profiler ({@code vmt_prof_start}): every runtime thread is
   * sampled once per {@code periodNanos} of its own CPU time (docs/profiler.md). An operation.
   *
   * @param periodNanos CPU time between two samples of one thread, 1 ms to 1 s (0: the
   *     default, 10 ms)
   * @throws IllegalArgumentException if the period is out of range
   * @throws IllegalStateException if the profiler runs already, or its signal is taken
   */
  void startProfiler(long periodNanos);

  /**
   * Stops the profiler ({@code vmt_prof_stop}) and returns its profile as collapsed stacks
   * ({@code vmt_prof_collapsed_to_string}, a root frame per thread): one line per stack, "frame;
   * frame;frame weight", root first, weight in samples of one period. The text that
   * flamegraph.pl, speedscope and the Firefox profiler read.
   *
   * @return the collapsed stacks ("" if nothing was sampled, or it never ran)
   */
  String stopProfiler();

  /**
   * The version of the native library actually loaded ("0.1.0"). An attribute: it costs one
   * call returning a constant string.
   *
   * @return the version
   */
  String getLibraryVersion();
}
