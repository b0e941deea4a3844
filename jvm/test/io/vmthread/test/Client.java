/*
 * Client: a second JVM reading the host's bean over the host's RMI connector on 127.0.0.1, as
 * jconsole or VisualVM would, with no vmthread class on its class path (only this test's jar;
 * nothing here names an io.vmthread class). It reads every attribute one by one and all at
 * once (getAttributes is what jconsole calls: nothing may be left out), invokes every
 * operation, rebuilds every ThreadInfo with ThreadInfo.from, and checks against this JVM's own
 * java.lang:type=Threading bean that every standard attribute and operation is there and that
 * bad arguments fail with HotSpot's exception and message; then the scene the host set: held
 * locks under the frames that took them in ThreadInfo.toString(), lockName = lockInfo, the
 * monitors' own names. Prints PASS/FAIL lines and "N passed, M failed".
 *
 * Usage: java -cp vmthread-tests.jar io.vmthread.test.Client DIR   (DIR/host.properties)
 */
package io.vmthread.test;

import java.io.InputStream;
import java.lang.management.LockInfo;
import java.lang.management.ManagementFactory;
import java.lang.management.MonitorInfo;
import java.lang.management.ThreadInfo;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.JMX;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanInfo;
import javax.management.MBeanOperationInfo;
import javax.management.MBeanParameterInfo;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.openmbean.CompositeData;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

public final class Client {
  private Client() {}

  private static final String NAME = "io.vmthread:type=Threading";

  public static void main(String[] args) {
    try {
      run(Path.of(args[0]));
    } catch (Throwable t) {
      Check.that(false, "client threw " + t);
      t.printStackTrace(System.out);
    }
    System.out.println(Check.passed + " passed, " + Check.failed + " failed");
    System.exit(Check.failed == 0 ? 0 : 1);
  }

  private static void run(Path dir) throws Exception {
    Properties host = new Properties();
    try (InputStream in = Files.newInputStream(dir.resolve("host.properties"))) {
      host.load(in);
    }
    Check.equal(null, Client.class.getClassLoader().getResource("io/vmthread/VmThreadMXBean.class"),
        "no vmthread class on the client's class path");
    JMXServiceURL url = new JMXServiceURL(host.getProperty("url"));
    Check.equal("127.0.0.1", url.getHost(), "the connector's address is on the loopback");
    long owner = Long.parseLong(host.getProperty("owner"));
    long blocked = Long.parseLong(host.getProperty("blocked"));
    try (JMXConnector connector = JMXConnectorFactory.connect(url)) {
      MBeanServerConnection conn = connector.getMBeanServerConnection();
      ObjectName name = new ObjectName(NAME);
      MBeanInfo info = conn.getMBeanInfo(name);
      MBeanInfo reference = ManagementFactory.getPlatformMBeanServer()
          .getMBeanInfo(new ObjectName(ManagementFactory.THREAD_MXBEAN_NAME));
      attributes(conn, name, info, reference, host);
      operations(conn, name, info, reference, owner);
      messages(conn, name);
      scene(conn, name, owner, blocked);
    }
  }

  // ---- Attributes ---------------------------------------------------------------------------

  private static void attributes(MBeanServerConnection conn, ObjectName name, MBeanInfo info,
      MBeanInfo reference, Properties host) throws Exception {
    Set<String> ours = new HashSet<>();
    for (MBeanAttributeInfo a : info.getAttributes()) {
      ours.add(a.getName());
    }
    List<String> missing = new ArrayList<>();
    for (MBeanAttributeInfo a : reference.getAttributes()) {
      if (!ours.contains(a.getName())) {
        missing.add(a.getName());
      }
    }
    Check.equal(List.of(), missing, "every attribute of java.lang:type=Threading is here");
    Check.that(!ours.contains("ThreadDump") && ours.contains("LibraryVersion"),
        "the dump is no attribute; LibraryVersion is one");

    String[] names = ours.toArray(new String[0]);
    Arrays.sort(names);
    AttributeList all = conn.getAttributes(name, names);
    List<String> got = new ArrayList<>();
    for (Attribute a : all.asList()) {
      got.add(a.getName());
    }
    Check.equal(Arrays.asList(names), got,
        "getAttributes (what jconsole reads) returns all " + names.length + " attributes");
    for (String a : names) {
      Throwable t = Check.failure(() -> conn.getAttribute(name, a));
      Check.that(t == null, "getAttribute " + a + (t == null ? "" : " threw " + t));
    }
    if (!(Boolean) conn.getAttribute(name, "ThreadAllocatedMemorySupported")) {
      Check.that(!(Boolean) conn.getAttribute(name, "ThreadAllocatedMemoryEnabled")
          && (Long) conn.getAttribute(name, "CurrentThreadAllocatedBytes") == -1
          && (Long) conn.getAttribute(name, "TotalThreadAllocatedBytes") == -1,
          "allocated memory unsupported: its attributes read as disabled (false, -1, -1)");
    }
    Check.equal(host.getProperty("version"), conn.getAttribute(name, "LibraryVersion"),
        "LibraryVersion");
    long[] ids = (long[]) conn.getAttribute(name, "AllThreadIds");
    Check.that(Check.contains(ids, Long.parseLong(host.getProperty("owner")))
        && Check.contains(ids, Long.parseLong(host.getProperty("blocked"))),
        "AllThreadIds lists the host's threads");
  }

  // ---- Operations ---------------------------------------------------------------------------

  private static String signature(MBeanOperationInfo op) {
    StringBuilder sb = new StringBuilder(op.getName()).append('(');
    for (MBeanParameterInfo p : op.getSignature()) {
      sb.append(p.getType()).append(',');
    }
    return sb.append(')').toString();
  }

  private static void operations(MBeanServerConnection conn, ObjectName name, MBeanInfo info,
      MBeanInfo reference, long owner) throws Exception {
    Set<String> ours = new HashSet<>();
    for (MBeanOperationInfo op : info.getOperations()) {
      ours.add(signature(op));
    }
    List<String> missing = new ArrayList<>();
    for (MBeanOperationInfo op : reference.getOperations()) {
      if (!ours.contains(signature(op))) {
        missing.add(signature(op));
      }
    }
    Check.equal(List.of(), missing, "every operation of java.lang:type=Threading is here");

    boolean allocated = (Boolean) conn.getAttribute(name, "ThreadAllocatedMemorySupported");
    long[] ids = (long[]) conn.getAttribute(name, "AllThreadIds");
    int infos = 0;
    for (MBeanOperationInfo op : info.getOperations()) {
      if (op.getName().endsWith("Profiler")) {
        continue;   // a pair, in its order: below
      }
      MBeanParameterInfo[] sig = op.getSignature();
      Object[] args = new Object[sig.length];
      String[] types = new String[sig.length];
      for (int i = 0; i < sig.length; i++) {
        types[i] = sig[i].getType();
        args[i] = argument(types[i], owner, ids);
      }
      Object result;
      try {
        result = conn.invoke(name, op.getName(), args, types);
      } catch (Exception e) {
        Throwable t = Check.failure(() -> {
          throw e;
        });
        boolean expected = !allocated && op.getName().equals("getThreadAllocatedBytes")
            && t instanceof UnsupportedOperationException;
        Check.that(expected, "invoke " + signature(op) + (expected
            ? ": UnsupportedOperationException (no jemalloc)" : " threw " + t));
        continue;
      }
      int n = 0;
      boolean ok = true;
      if (result instanceof CompositeData) {
        ok = ThreadInfo.from((CompositeData) result).getThreadName() != null;
        n = 1;
      } else if (result instanceof CompositeData[]) {
        for (CompositeData cd : (CompositeData[]) result) {
          if (cd != null) {
            ok &= ThreadInfo.from(cd).getThreadName() != null;
            n++;
          }
        }
      }
      infos += n;
      Check.that(ok, "invoke " + signature(op) + " -> "
          + (n > 0 ? n + " ThreadInfo.from" : String.valueOf(shortly(result))));
    }
    Check.that(infos > 0, "ThreadInfo.from on every element: " + infos + " ThreadInfos");
    // The profiler over the connector: started with the default period, stopped with its
    // collapsed stacks (whatever the host's threads did meanwhile; possibly nothing).
    conn.invoke(name, "startProfiler", new Object[] {0L}, new String[] {"long"});
    Object collapsed = conn.invoke(name, "stopProfiler", new Object[0], new String[0]);
    Check.that(collapsed instanceof String, "invoke startProfiler(0), stopProfiler() -> text");
  }

  private static Object argument(String type, long owner, long[] ids) {
    switch (type) {
      case "long":
        return owner;
      case "[J":
        return ids;
      case "int":
        return 8;
      case "boolean":
        return true;
      default:
        throw new IllegalStateException("no argument for a parameter of type " + type);
    }
  }

  private static Object shortly(Object result) {
    if (result instanceof long[]) {
      return Arrays.toString((long[]) result);
    }
    if (result instanceof String && ((String) result).length() > 40) {
      return ((String) result).substring(0, 40).replace('\n', ' ') + "...";
    }
    return result;
  }

  // ---- HotSpot's messages -------------------------------------------------------------------

  private static void messages(MBeanServerConnection conn, ObjectName name) {
    com.sun.management.ThreadMXBean remote =
        JMX.newMXBeanProxy(conn, name, com.sun.management.ThreadMXBean.class);
    com.sun.management.ThreadMXBean hotspot =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    for (BadCalls.Bad bad : BadCalls.ALL) {
      Check.sameFailure(() -> bad.call.call(hotspot), () -> bad.call.call(remote),
          "over JMX, " + bad.what + ": as HotSpot's bean");
    }
  }

  // ---- The host's scene: held locks, lock names ---------------------------------------------

  private static void scene(MBeanServerConnection conn, ObjectName name, long owner, long blocked)
      throws Exception {
    java.lang.management.ThreadMXBean proxy =
        JMX.newMXBeanProxy(conn, name, java.lang.management.ThreadMXBean.class);
    ThreadInfo[] two = proxy.getThreadInfo(new long[] {owner, blocked}, true, true);
    ThreadInfo o = two[0];
    ThreadInfo b = two[1];
    String text = o.toString();
    System.out.print(text.replaceAll("(?m)^", "  | "));
    Check.that(text.contains("\tat demo.Owner.hold(Owner.vm:12)\n\t-  waiting on jvm-test-gate@"),
        "toString: the owner waits on the gate under its top frame");
    Check.that(text.contains("\t-  locked jvm-test-inner@"),
        "toString: a monitor no frame reports is held at the top frame");
    Check.that(text.contains("\tat demo.Main.main(Main.vm:7)\n\t-  locked jvm-test-contended@"),
        "toString: the monitor frame 1 entered is held under frame 1");
    MonitorInfo contended = null;
    for (MonitorInfo m : o.getLockedMonitors()) {
      if (m.getClassName().equals("jvm-test-contended")) {
        contended = m;
      }
    }
    Check.that(contended != null && contended.getLockedStackDepth() == 1
        && contended.getLockedStackFrame().getMethodName().equals("main"),
        "MonitorInfo: jvm-test-contended at depth 1, frame demo.Main.main: " + contended);
    Check.that(b.toString().contains("\tat demo.Blocked.enter(Blocked.vm:3)\n"
        + "\t-  blocked on jvm-test-contended@"), "toString: the blocked thread's monitor");
    Check.equal("jvm-test-owner", b.getLockOwnerName(), "the blocked thread's lock owner");

    // Every ThreadInfo: lockName is lockInfo.toString() (the specification), and locks carry
    // the names the VM gave them.
    boolean names = true;
    int locks = 0;
    for (ThreadInfo t : proxy.dumpAllThreads(true, true)) {
      LockInfo l = t.getLockInfo();
      names &= l == null ? t.getLockName() == null : t.getLockName().equals(l.toString());
      List<LockInfo> all = new ArrayList<>(Arrays.asList(t.getLockedMonitors()));
      all.addAll(Arrays.asList(t.getLockedSynchronizers()));
      if (l != null) {
        all.add(l);
      }
      for (LockInfo x : all) {
        names &= x.getClassName().startsWith("jvm-test-");
        locks++;
      }
    }
    Check.that(names && locks >= 4,
        "every ThreadInfo: lockName = lockInfo.toString(), locks by their own names (" + locks
            + " locks)");

    String json = (String) conn.invoke(name, "dumpThreadsJson", new Object[0], new String[0]);
    Check.that(json.contains("\"tid\": \"" + owner + "\"") && json.contains("\"depth\": 1"),
        "dumpThreadsJson: the owner, and a monitor owned at depth 1");
  }
}
