/*
 * NativeThreads: the JNI surface of libvmthread_jni.so (jvm/native/vmthread_jni.c), one static
 * native method per C management call. Errors come back as the exceptions ThreadMXBean
 * specifies (the bridge maps -EINVAL to IllegalArgumentException and -ENOTSUP to
 * UnsupportedOperationException); "no answer" values (-1, null) pass through unchanged.
 *
 * Loading: System.loadLibrary("vmthread_jni") from java.library.path, or the file named by the
 * system property io.vmthread.jni.library (an absolute path). The bridge links
 * libvmthread.so.0 dynamically, so it observes the same runtime as every other native library
 * in the process that uses vmthread. Both calls are restricted methods from JDK 24 on (JEP
 * 472): start the JVM with --enable-native-access=ALL-UNNAMED (this class is in the unnamed
 * module of the class path), or the first load prints a warning (docs/embedding.md, section 6).
 */
package io.vmthread;

final class NativeThreads {
  static final String LIBRARY_PROPERTY = "io.vmthread.jni.library";

  static {
    String path = System.getProperty(LIBRARY_PROPERTY);
    if (path != null && !path.isEmpty()) {
      System.load(path);
    } else {
      System.loadLibrary("vmthread_jni");
    }
  }

  private NativeThreads() {}

  /** Forces the static initializer (library load) to run; cheap once done. */
  static void ensureLoaded() {}

  static native String version();

  static native int threadCount();
  static native int peakThreadCount();
  static native long totalStartedThreadCount();
  static native int daemonThreadCount();
  static native void resetPeakThreadCount();
  static native long[] allThreadIds();

  /** One RawThreadInfo (or null) per id; -EINVAL for id <= 0 or depth < 0. */
  static native RawThreadInfo[] threadInfo(
      long[] ids, boolean lockedMonitors, boolean lockedSynchronizers, int maxDepth);
  static native RawThreadInfo[] dumpAllThreads(
      boolean lockedMonitors, boolean lockedSynchronizers, int maxDepth);

  static native boolean isThreadCpuTimeSupported();
  static native boolean isCurrentThreadCpuTimeSupported();
  static native boolean isThreadCpuTimeEnabled();
  static native void setThreadCpuTimeEnabled(boolean enable);
  static native long currentThreadCpuTime();
  static native long currentThreadUserTime();
  static native long threadCpuTime(long id);
  static native long threadUserTime(long id);
  static native long[] threadCpuTimes(long[] ids);
  static native long[] threadUserTimes(long[] ids);

  static native boolean isThreadContentionMonitoringSupported();
  static native boolean isThreadContentionMonitoringEnabled();
  static native void setThreadContentionMonitoringEnabled(boolean enable);
  static native boolean isObjectMonitorUsageSupported();
  static native boolean isSynchronizerUsageSupported();

  static native long[] findMonitorDeadlockedThreads();
  static native long[] findDeadlockedThreads();

  static native boolean isThreadAllocatedMemorySupported();
  static native boolean isThreadAllocatedMemoryEnabled();
  static native void setThreadAllocatedMemoryEnabled(boolean enable);
  static native long threadAllocatedBytes(long id);
  static native long[] threadAllocatedBytesArray(long[] ids);
  static native long currentThreadAllocatedBytes();
  static native long totalThreadAllocatedBytes();

  static native String threadDump();
  static native String threadDumpJson();
  static native void profilerStart(long periodNanos);
  static native String profilerStop();
  static native String threadCategory(long id);
  /** {String[] names, long[] figures}: per category live, started, CPU ns, exited CPU ns
   *  (vmt_mx_get_category_usage). */
  static native Object[] categoryUsage();

  /** The file of another copy of the runtime in this process that has threads ("" for the
   *  main program), or null if there is none (vmt_mx_get_other_runtime_count). */
  static native String otherRuntime();
}
