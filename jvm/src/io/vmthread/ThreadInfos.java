/*
 * ThreadInfos: builds java.lang.management.ThreadInfo objects for the runtime's native threads
 * the standard way, ThreadInfo.from(CompositeData), since ThreadInfo has no public constructor.
 *
 * The CompositeType must be the one ThreadInfo.from validates against, which differs between
 * JDK versions (Java 9 added the module fields of StackTraceElement, Java 9 daemon/priority).
 * Rather than hard-coding one version's layout, we take the type from the running JDK through
 * public API only: the platform ThreadMXBean's getThreadInfo, invoked through the MBean server,
 * returns a ThreadInfo mapped to CompositeData by the JDK itself. Values are then filled in by
 * item name; items this code does not know (a future JDK's) get a neutral value of their type.
 *
 * Mapping from vmt_thread_info_t (include/vmthread/management.h):
 *   blocked/waited times   nanoseconds -> milliseconds (ThreadInfo's unit); -1 stays -1
 *   state                  same order as Thread.State
 *   frames                 a VM method "pkg.Class.method" (from the VM's stack walker) is split
 *                          at the last '.'; a native symbol gets class "<native>". The line is
 *                          the frame's line; when it is unknown, -1 for a VM method (Java's
 *                          "unknown line") and -2 with isNativeMethod for a native symbol.
 *   locks                  a lock's className is the name the VM gave the monitor or synchronizer
 *                          (vmt_monitor_create(&m, "CodeCache_lock")), its identityHashCode the
 *                          runtime's identity, so LockInfo.toString() is the C display name
 *                          "name@hexid" and lockName equals it, as the ThreadInfo specification
 *                          requires (lockName is lockInfo.toString()); the same for MonitorInfo
 *                          and the locked synchronizers.
 *   suspended, inNative    the VM services' (vmthread/vmservices.h): suspended while its suspend
 *                          count is > 0; in native while its execution state is NATIVE, which
 *                          is where every thread is that never entered managed code
 */
package io.vmthread;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.util.HashMap;
import java.util.Map;
import javax.management.JMException;
import javax.management.ObjectName;
import javax.management.RuntimeErrorException;
import javax.management.openmbean.ArrayType;
import javax.management.openmbean.CompositeData;
import javax.management.openmbean.CompositeDataSupport;
import javax.management.openmbean.CompositeType;
import javax.management.openmbean.OpenDataException;
import javax.management.openmbean.OpenType;
import javax.management.openmbean.SimpleType;

final class ThreadInfos {
  private ThreadInfos() {}

  private static final Thread.State[] STATES = Thread.State.values();

  /**
   * The JDK's own ThreadInfo CompositeType and its nested types, found at the first ThreadInfo
   * built and kept from then on. Not in a static initializer: one that fails (the platform
   * bean's answer is an allocation like any other, and the heap may be full at that moment)
   * leaves the class unusable for good: every later call would throw NoClassDefFoundError
   * "Could not initialize class" instead of answering once there is memory again. A failed
   * read here throws what failed (OutOfMemoryError) and the next call reads again
   * (jvm/test/io/vmthread/test/OomTest.java).
   */
  private static final class Types {
    final CompositeType threadInfo;
    final CompositeType stackFrame;
    final CompositeType lockInfo;
    final CompositeType monitorInfo;
    final CompositeType synchronizer;

    private static volatile Types found;

    static Types get() {
      Types t = found;
      if (t == null) {
        t = new Types();  // two threads may both read it: the same types, either one is kept
        found = t;
      }
      return t;
    }

    private Types() {
      try {
        CompositeData sample = (CompositeData) ManagementFactory.getPlatformMBeanServer().invoke(
            new ObjectName(ManagementFactory.THREAD_MXBEAN_NAME), "getThreadInfo",
            new Object[] {Thread.currentThread().getId()}, new String[] {"long"});
        threadInfo = sample.getCompositeType();
      } catch (RuntimeErrorException e) {
        throw e.getTargetError();  // an Error of the platform bean's (OutOfMemoryError)
      } catch (JMException e) {
        throw new IllegalStateException("cannot read the JDK's ThreadInfo CompositeType", e);
      }
      stackFrame = elementType(threadInfo, "stackTrace");
      lockInfo = (CompositeType) threadInfo.getType("lockInfo");
      monitorInfo = elementType(threadInfo, "lockedMonitors");
      synchronizer = elementType(threadInfo, "lockedSynchronizers");
    }

    private static CompositeType elementType(CompositeType type, String item) {
      return (CompositeType) ((ArrayType<?>) type.getType(item)).getElementOpenType();
    }
  }

  static ThreadInfo[] toThreadInfos(RawThreadInfo[] raws) {
    ThreadInfo[] out = new ThreadInfo[raws.length];
    for (int i = 0; i < raws.length; i++) {
      out[i] = raws[i] == null ? null : toThreadInfo(raws[i]);
    }
    return out;
  }

  static ThreadInfo toThreadInfo(RawThreadInfo raw) {
    return ThreadInfo.from(toCompositeData(raw));
  }

  static CompositeData toCompositeData(RawThreadInfo raw) {
    Types types = Types.get();
    Map<String, Object> v = new HashMap<>();
    v.put("threadId", raw.id);
    v.put("threadName", raw.name);
    v.put("threadState", (raw.state >= 0 && raw.state < STATES.length
        ? STATES[raw.state] : Thread.State.RUNNABLE).name());
    v.put("blockedCount", raw.blockedCount);
    v.put("blockedTime", nanosToMillis(raw.blockedTimeNs));
    v.put("waitedCount", raw.waitedCount);
    v.put("waitedTime", nanosToMillis(raw.waitedTimeNs));
    v.put("lockInfo", raw.lock == null ? null : lock(types.lockInfo, raw.lock));
    v.put("lockName", raw.lock == null ? null
        : userName(raw.lock) + "@" + Integer.toHexString(raw.lock.identityHash));
    v.put("lockOwnerId", raw.lockOwnerId);
    v.put("lockOwnerName", raw.lockOwnerName);
    CompositeData[] frames = frames(types, raw);
    v.put("stackTrace", frames);
    v.put("suspended", raw.suspended);
    v.put("inNative", raw.inNative);
    v.put("lockedMonitors", monitors(types, raw, frames));
    v.put("lockedSynchronizers", locks(types.synchronizer, raw.lockedSynchronizers));
    v.put("daemon", raw.daemon);
    v.put("priority", raw.priority);
    return composite(types.threadInfo, v);
  }

  private static long nanosToMillis(long ns) {
    return ns < 0 ? -1 : ns / 1_000_000L;
  }

  private static CompositeData[] frames(Types types, RawThreadInfo raw) {
    int n = raw.frameFunctions == null ? 0 : raw.frameFunctions.length;
    CompositeData[] out = new CompositeData[n];
    for (int i = 0; i < n; i++) {
      out[i] = frame(types, raw.frameFunctions[i], raw.frameFiles[i], raw.frameLines[i]);
    }
    return out;
  }

  private static CompositeData frame(Types types, String function, String file, int line) {
    String fn = function == null || function.isEmpty() ? "??" : function;
    int dot = fn.lastIndexOf('.');
    boolean vmMethod = dot > 0 && dot < fn.length() - 1;
    Map<String, Object> v = new HashMap<>();
    v.put("className", vmMethod ? fn.substring(0, dot) : "<native>");
    v.put("methodName", vmMethod ? fn.substring(dot + 1) : fn);
    v.put("fileName", file);
    // StackTraceElement: -2 (and isNativeMethod) means a native method; a VM method whose line
    // is unknown is not one, its line is -1 ("Interpreter.vm" or "Unknown Source").
    boolean nativeMethod = line < 0 && !vmMethod;
    v.put("lineNumber", line >= 0 ? line : nativeMethod ? -2 : -1);
    v.put("nativeMethod", nativeMethod);
    v.put("classLoaderName", null);
    v.put("moduleName", null);
    v.put("moduleVersion", null);
    return composite(types.stackFrame, v);
  }

  /** The VM's name for the lock: the C display name "name@hexid" without its identity. */
  static String userName(RawThreadInfo.RawLock lock) {
    String suffix = "@" + Integer.toHexString(lock.identityHash);
    return lock.name != null && lock.name.endsWith(suffix)
        ? lock.name.substring(0, lock.name.length() - suffix.length()) : lock.className;
  }

  private static CompositeData lock(CompositeType type, RawThreadInfo.RawLock lock) {
    Map<String, Object> v = new HashMap<>();
    v.put("className", userName(lock));
    v.put("identityHashCode", lock.identityHash);
    return composite(type, v);
  }

  private static CompositeData[] locks(CompositeType type, RawThreadInfo.RawLock[] locks) {
    if (locks == null) {
      return new CompositeData[0];
    }
    CompositeData[] out = new CompositeData[locks.length];
    for (int i = 0; i < locks.length; i++) {
      out[i] = lock(type, locks[i]);
    }
    return out;
  }

  private static CompositeData[] monitors(Types types, RawThreadInfo raw,
      CompositeData[] frames) {
    if (raw.lockedMonitors == null) {
      return new CompositeData[0];
    }
    CompositeData[] out = new CompositeData[raw.lockedMonitors.length];
    for (int i = 0; i < out.length; i++) {
      RawThreadInfo.RawLock m = raw.lockedMonitors[i];
      // MonitorInfo requires a frame whenever the depth is >= 0; a depth beyond the frames
      // that were asked for (maxDepth) is reported as unknown, as HotSpot does.
      boolean known = m.stackDepth >= 0 && m.stackDepth < frames.length;
      Map<String, Object> v = new HashMap<>();
      v.put("className", userName(m));
      v.put("identityHashCode", m.identityHash);
      v.put("lockedStackDepth", known ? m.stackDepth : -1);
      v.put("lockedStackFrame", known ? frames[m.stackDepth] : null);
      out[i] = composite(types.monitorInfo, v);
    }
    return out;
  }

  /** Fills every item of type: known values by name, a neutral value for unknown items. */
  private static CompositeData composite(CompositeType type, Map<String, Object> values) {
    Map<String, Object> items = new HashMap<>();
    for (String key : type.keySet()) {
      items.put(key, values.containsKey(key) ? values.get(key) : neutral(type.getType(key)));
    }
    try {
      return new CompositeDataSupport(type, items);
    } catch (OpenDataException e) {
      throw new IllegalStateException("ThreadInfo mapping does not fit " + type.getTypeName(), e);
    }
  }

  private static Object neutral(OpenType<?> type) {
    if (type.equals(SimpleType.BOOLEAN)) {
      return Boolean.FALSE;
    } else if (type.equals(SimpleType.INTEGER)) {
      return -1;
    } else if (type.equals(SimpleType.LONG)) {
      return -1L;
    } else if (type instanceof ArrayType<?>
        && ((ArrayType<?>) type).getElementOpenType() instanceof CompositeType) {
      return new CompositeData[0];
    }
    return null;
  }
}
