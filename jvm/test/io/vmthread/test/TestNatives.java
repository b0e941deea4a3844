/*
 * TestNatives: the test's own native library (jvm/test/native/vmthread_jni_test.c), standing
 * for a language runtime that runs vmthread threads inside this JVM, and reading the C API
 * directly so that JMX answers can be compared with the C side's.
 */
package io.vmthread.test;

final class TestNatives {
  static {
    System.loadLibrary("vmthread_jni_test");
  }

  private TestNatives() {}

  /** Starts n threads "category-worker-i" that burn burnNanos of CPU, allocate (and free)
   *  allocBytes, then wait on a monitor "jvm-test-gate"; returns once all are at the gate. */
  static native long startWorkers(int n, String category, boolean daemon, long burnNanos,
      long allocBytes);

  /** Thread 0 "jvm-test-owner" owns monitors "jvm-test-contended" (entered, the walker says,
   *  at its guest frame 1) and "jvm-test-inner" and waits at the gate; thread 1
   *  "jvm-test-blocked" blocks entering "jvm-test-contended". */
  static native long startContention();

  static native long[] workerIds(long handle);

  /** vmt_thread_cpu_time(thread i, VMT_CPU_TOTAL): the clock API, not the management API. */
  static native long workerCpuTime(long handle, int i);

  /** Releases the gate and joins every thread of the group; returns how many joined. */
  static native int stopWorkers(long handle);

  static native int threadCount();
  static native int peakThreadCount();
  static native int daemonThreadCount();
  static native long totalStartedThreadCount();
  static native long[] allThreadIds();
  static native String version();

  static native long attachCurrent(String name);
  static native void detachCurrent();

  /** A stack walker giving guest frames to threads of category "interp" (two) and to the
   *  contention pair (two for the owner, one for the blocked thread). */
  static native void setStackWalker(boolean on);

  /** vmt_mx_enable_sigquit_dump into the file at path, as a VM would enable it. */
  static native void enableSigquitDump(String path);
  static native void disableSigquitDump();

  /** vmt_mx_thread_dump_to_string, called from this library. */
  static native String threadDump();

  /** A thread whose name is exactly the bytes name (UTF-8, no JNI modified-UTF-8 step) that
   *  enters n monitors named monitorName, then waits until stopHolder. */
  static native long startHolder(byte[] name, byte[] monitorName, int n);
  static native long holderId(long handle);
  static native void stopHolder(long handle);
}
