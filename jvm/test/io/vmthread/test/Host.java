/*
 * Host: the JVM that hosts a "language runtime" (TestNatives) and serves its bean to a second
 * JVM, the path docs/embedding.md section 6 describes. After the in-process tests, it
 *   - sets a scene that stays put: two interpreter threads with guest frames, a thread owning
 *     two monitors (one entered at its guest frame 1, as the walker says) with another thread
 *     blocked on one of them, the stack walker on, and the SIGQUIT dump enabled into a file;
 *   - registers the bean and serves the platform MBean server on an RMI connector bound to
 *     127.0.0.1 only, then writes what the client needs to know (host.properties: the
 *     connector's address, this pid, the scene's thread ids) into the directory it was given;
 *   - waits until jvm_test.sh has run the client, `jcmd <pid> Thread.print` and `kill -3`
 *     (the file "stop" appears), takes the scene down, and checks that a guest library linked
 *     statically against libvmthread.a (a second runtime) makes the bean refuse to answer.
 */
package io.vmthread.test;

import io.vmthread.VmThreadMXBean;
import io.vmthread.VmThreadManagement;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.rmi.server.RMIServerSocketFactory;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import javax.management.remote.JMXConnectorServer;
import javax.management.remote.JMXConnectorServerFactory;
import javax.management.remote.JMXServiceURL;
import javax.management.remote.rmi.RMIConnectorServer;

final class Host {
  private Host() {}

  /** How long the host waits for jvm_test.sh's "stop" (a deadline for a hung test). */
  private static final long STOP_DEADLINE_NS = 120_000_000_000L;

  static void serve(Path dir, String guest) throws Exception {
    VmThreadMXBean mx = VmThreadManagement.getThreadMXBean();
    VmThreadManagement.register();
    long interp = TestNatives.startWorkers(2, "interp", false, 0, 0);
    long pair = TestNatives.startContention();
    long[] interpIds = TestNatives.workerIds(interp);
    long[] pairIds = TestNatives.workerIds(pair);
    TestNatives.setStackWalker(true);
    TestNatives.enableSigquitDump(dir.resolve("vmthread-dump.txt").toString());
    try {
      Check.that(Check.eventually(() -> state(mx, pairIds[1]) == Thread.State.BLOCKED
          && state(mx, pairIds[0]) == Thread.State.WAITING), "scene: owner waits, other blocks");

      // The stub the connector hands out names 127.0.0.1, and its sockets listen there only.
      System.setProperty("java.rmi.server.hostname", "127.0.0.1");
      InetAddress loopback = InetAddress.getLoopbackAddress();
      Map<String, Object> env = new HashMap<>();
      env.put(RMIConnectorServer.RMI_SERVER_SOCKET_FACTORY_ATTRIBUTE,
          (RMIServerSocketFactory) port -> new ServerSocket(port, 0, loopback));
      JMXConnectorServer cs = JMXConnectorServerFactory.newJMXConnectorServer(
          new JMXServiceURL("service:jmx:rmi://127.0.0.1"), env,
          ManagementFactory.getPlatformMBeanServer());
      cs.start();
      try {
        Properties p = new Properties();
        p.setProperty("url", cs.getAddress().toString());
        p.setProperty("pid", Long.toString(ProcessHandle.current().pid()));
        p.setProperty("owner", Long.toString(pairIds[0]));
        p.setProperty("blocked", Long.toString(pairIds[1]));
        p.setProperty("interp", interpIds[0] + "," + interpIds[1]);
        p.setProperty("version", mx.getLibraryVersion());
        Path tmp = dir.resolve("host.properties.tmp");
        try (OutputStream out = Files.newOutputStream(tmp)) {
          p.store(out, "io.vmthread.test.Host");
        }
        Files.move(tmp, dir.resolve("host.properties"), StandardCopyOption.ATOMIC_MOVE);
        System.out.println("host: serving " + cs.getAddress());
        Check.that(awaitStop(dir.resolve("stop")), "host: jvm_test.sh said stop");
      } finally {
        cs.stop();
      }
    } finally {
      TestNatives.disableSigquitDump();
      TestNatives.setStackWalker(false);
      Check.equal(2, TestNatives.stopWorkers(interp), "scene: interp workers joined");
      Check.equal(2, TestNatives.stopWorkers(pair), "scene: contention pair joined");
    }
    if (guest != null) {
      twoRuntimes(mx, guest);
    }
  }

  private static boolean awaitStop(Path stop) throws InterruptedException {
    long deadline = System.nanoTime() + STOP_DEADLINE_NS;
    while (!Files.exists(stop)) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      Thread.sleep(20);
    }
    return true;
  }

  /** A guest that linked libvmthread.a starts a thread in its own copy of the runtime: the
   *  bean, which reads libvmthread.so.0's copy, must say so instead of answering for part of
   *  the process (it said ThreadCount = 0 before). */
  private static void twoRuntimes(VmThreadMXBean mx, String guest) throws IOException {
    Check.that(mx.getThreadCount() >= 0, "one runtime: the bean answers");
    System.load(guest);
    String file = Path.of(guest).getFileName().toString();
    Throwable t = Check.failure(mx::getThreadCount);
    Check.that(t instanceof IllegalStateException && t.getMessage().contains(file),
        "two runtimes: getThreadCount refuses, naming " + file + " (" + t + ")");
    t = Check.failure(mx::dumpThreads);
    Check.that(t instanceof IllegalStateException, "two runtimes: dumpThreads refuses (" + t + ")");
    String dump = TestNatives.threadDump();
    Check.that(dump.contains("WARNING: 1 other copy of vmthread in this process has threads")
        && dump.contains(file), "two runtimes: the C dump warns, naming " + file);
  }

  private static Thread.State state(VmThreadMXBean mx, long id) {
    ThreadInfo info = mx.getThreadInfo(id);
    return info == null ? null : info.getThreadState();
  }
}
