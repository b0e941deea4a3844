// ManagementBench: HotSpot's side of bench/management.c. The management calls a monitoring
// agent makes over every thread, with 1, 100, 1000 and 10,000 live threads, each parked
// (LockSupport.park) FRAMES frames deep, the depth bench/management.c's stack walker reports.
//
// Rows (bench "hotspot_management", variant <call>_<threads>, unit ns, one sample = one call
// over every thread), named as the vmthread rows they are compared with:
//   cpu_time_sweep_N          com.sun.management.ThreadMXBean.getThreadCpuTime(long[] allIds)
//   thread_info_all_N         getThreadInfo(allIds, 0)
//   thread_info_all_stacks_N  getThreadInfo(allIds, Integer.MAX_VALUE)
//   dump_all_threads_N        dumpAllThreads(true, true)
//   all_ids_N                 getAllThreadIds()
//   deadlock_scan_N           findDeadlockedThreads()
//   allocated_bytes_all_N     com.sun.management.ThreadMXBean.getThreadAllocatedBytes(allIds)
//   dump_N                    the full text dump: the DiagnosticCommand MBean's threadPrint
//                             with -l, which is `jcmd <pid> Thread.print -l` (and `jstack -l`)
//                             run in-process: the same VM operation and the same text (states,
//                             locks, ownable synchronizers, deadlocks) as vmthread's dump,
//                             on 17 and 25 alike, and without a jcmd process's start-up
//                             (hundreds of ms) or the attach handshake in every sample.
//   dump_threads_N            HotSpotDiagnosticMXBean.dumpThreads(file, TEXT_PLAIN), JDK 21+
//                             only: the newer dump (no lock details), for reference. On an
//                             older JDK the row set says so on stderr and has no such rows.
// Each row carries "threads" (parked threads), "jvm_threads" (ids the JVM lists: the parked
// ones plus its own), "per_thread_ns" (p50 / threads), "frames" (each parked thread's stack
// depth as getStackTrace reports it) and "call".
//
// Method, as bench/management.c: for each thread count, the calls are sampled interleaved, in
// a freshly shuffled order each round, after a warm-up round; percentiles are nearest-rank.
// --quick leaves out 10,000 threads (a round of the calls with stacks takes 1.5-3.5 s there, and
// the quick suite has two minutes for everything); the default run has them.
//
// Build and run (Java 17, no dependencies):
//   javac -d OUT bench/java/*.java
//   java -cp OUT vmtbench.ManagementBench [--quick] [--json]

package vmtbench;

import java.io.File;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.LockSupport;
import javax.management.MBeanServer;
import javax.management.ObjectName;

import static vmtbench.BenchSupport.*;

public final class ManagementBench {
    static final int FRAMES = 20;
    static final int[] SIZES = {1, 100, 1000, 10000};
    // Stacks of the parked threads: small, as bench/management.c's 64 KiB (HotSpot needs
    // more than that for a Java thread; 256 KiB is a tenth of the default).
    static final long STACK_BYTES = 256 << 10;

    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    static final com.sun.management.ThreadMXBean SUN = (com.sun.management.ThreadMXBean) MX;

    static boolean json;
    static volatile boolean stop;

    /** A thread parked depth frames below its run(): the recursion the stack walk reports. */
    static final class Parker implements Runnable {
        final int depth;
        final CountDownLatch ready;

        Parker(int depth, CountDownLatch ready) {
            this.depth = depth;
            this.ready = ready;
        }

        @Override
        public void run() {
            descend(depth);
        }

        void descend(int k) {
            if (k > 0) {
                descend(k - 1);
                return;
            }
            ready.countDown();
            while (!stop) {
                LockSupport.park(this);
            }
        }
    }

    static Thread[] startParked(int n, int depth) throws InterruptedException {
        stop = false;
        CountDownLatch ready = new CountDownLatch(n);
        Thread[] ts = new Thread[n];
        for (int i = 0; i < n; i++) {
            ts[i] = new Thread(null, new Parker(depth, ready), "parked-" + i, STACK_BYTES);
            ts[i].setDaemon(true);
            ts[i].start();
        }
        ready.await();
        // Parked, not just about to park: the stack is the one measured.
        for (Thread t : ts) {
            while (t.getState() != Thread.State.WAITING) {
                Thread.onSpinWait();
            }
        }
        return ts;
    }

    static void stopParked(Thread[] ts) throws InterruptedException {
        stop = true;
        for (Thread t : ts) {
            LockSupport.unpark(t);
        }
        for (Thread t : ts) {
            t.join();
        }
    }

    /** The recursion depth that makes a parked thread's stack FRAMES frames deep. */
    static int depthFor(int frames) throws InterruptedException {
        Thread[] probe = startParked(1, 0);
        int base = probe[0].getStackTrace().length;
        stopParked(probe);
        return Math.max(0, frames - base);
    }

    interface Call {
        long run() throws Exception;
    }

    static final class Variant {
        final String name;
        final String call;
        final boolean stacks;
        final Call body;
        long[] samples;

        Variant(String name, String call, boolean stacks, Call body) {
            this.name = name;
            this.call = call;
            this.stacks = stacks;
            this.body = body;
        }

        long time() throws Exception {
            long t0 = System.nanoTime();
            long r = body.run();
            long t1 = System.nanoTime();
            blackhole ^= r;
            return t1 - t0;
        }
    }

    static long infoSum(ThreadInfo[] infos) {
        long acc = infos.length;
        for (ThreadInfo ti : infos) {
            if (ti != null) {
                acc += ti.getStackTrace().length;
            }
        }
        return acc;
    }

    static int samplesFor(int n, boolean quick) {
        int s = n >= 10000 ? 6 : n >= 1000 ? 30 : n >= 100 ? 200 : 2000;
        return quick ? Math.max(3, s / 5) : s;
    }

    public static void main(String[] args) throws Exception {
        boolean quick = false;
        for (String a : args) {
            switch (a) {
                case "--quick": quick = true; break;
                case "--json": json = true; break;
                default:
                    System.err.println("usage: java vmtbench.ManagementBench [--quick] [--json]");
                    System.exit(2);
            }
        }
        progress("java " + System.getProperty("java.version") + ", " + System.getProperty("java.vm.name")
                + " " + JVM_VERSION + ": management calls at " + java.util.Arrays.toString(SIZES)
                + " parked threads, " + FRAMES + " frames each" + (quick ? " (quick)" : ""));
        if (!MX.isThreadCpuTimeEnabled()) {
            MX.setThreadCpuTimeEnabled(true);
        }
        MBeanServer mbs = ManagementFactory.getPlatformMBeanServer();
        ObjectName dcmd = new ObjectName("com.sun.management:type=DiagnosticCommand");
        Object[] printArgs = {new String[] {"-l"}};
        String[] printSig = {String[].class.getName()};
        // dumpThreads(String, ThreadDumpFormat) exists from JDK 21: looked up, not linked, so
        // that this file compiles and runs on 17.
        Method dumpThreads = null;
        Object textPlain = null;
        try {
            Class<?> fmt = Class.forName("com.sun.management.HotSpotDiagnosticMXBean$ThreadDumpFormat");
            dumpThreads = com.sun.management.HotSpotDiagnosticMXBean.class.getMethod("dumpThreads",
                    String.class, fmt);
            for (Object c : fmt.getEnumConstants()) {
                if (c.toString().equals("TEXT_PLAIN")) {
                    textPlain = c;
                }
            }
        } catch (ReflectiveOperationException e) {
            progress("HotSpotDiagnosticMXBean.dumpThreads is not in JDK " + System.getProperty("java.version")
                    + " (added in 21): no dump_threads rows");
        }
        com.sun.management.HotSpotDiagnosticMXBean diag =
                ManagementFactory.getPlatformMXBean(com.sun.management.HotSpotDiagnosticMXBean.class);
        Path dir = Files.createTempDirectory("vmt-dump-");
        final Method dumpThreadsM = dumpThreads;
        final Object textPlainF = textPlain;

        int depth = depthFor(FRAMES);
        List<Row> rows = new ArrayList<>();
        for (int n : SIZES) {
            if (quick && n >= 10000) {
                progress(n + " threads: not in --quick (default mode only)");
                continue;
            }
            Thread[] ts = startParked(n, depth);
            int frames = ts[0].getStackTrace().length;
            long[] ids = MX.getAllThreadIds();
            File dumpFile = dir.resolve("threads.txt").toFile();
            List<Variant> vs = new ArrayList<>();
            vs.add(new Variant("cpu_time_sweep", "com.sun.management.ThreadMXBean.getThreadCpuTime(long[])",
                    false, () -> SUN.getThreadCpuTime(ids)[0]));
            vs.add(new Variant("thread_info_all", "getThreadInfo(long[], 0)", false,
                    () -> infoSum(MX.getThreadInfo(ids, 0))));
            vs.add(new Variant("thread_info_all_stacks", "getThreadInfo(long[], Integer.MAX_VALUE)", true,
                    () -> infoSum(MX.getThreadInfo(ids, Integer.MAX_VALUE))));
            vs.add(new Variant("dump_all_threads", "dumpAllThreads(true, true)", true,
                    () -> infoSum(MX.dumpAllThreads(true, true))));
            vs.add(new Variant("all_ids", "getAllThreadIds()", false, () -> MX.getAllThreadIds().length));
            vs.add(new Variant("deadlock_scan", "findDeadlockedThreads()", false, () -> {
                long[] d = MX.findDeadlockedThreads();
                return d == null ? 0 : d.length;
            }));
            vs.add(new Variant("allocated_bytes_all",
                    "com.sun.management.ThreadMXBean.getThreadAllocatedBytes(long[])", false,
                    () -> SUN.getThreadAllocatedBytes(ids)[0]));
            vs.add(new Variant("dump", "DiagnosticCommand threadPrint -l (jcmd Thread.print -l)", true,
                    () -> ((String) mbs.invoke(dcmd, "threadPrint", printArgs, printSig)).length()));
            if (dumpThreadsM != null && textPlainF != null) {
                vs.add(new Variant("dump_threads", "HotSpotDiagnosticMXBean.dumpThreads(file, TEXT_PLAIN)",
                        true, () -> {
                            dumpThreadsM.invoke(diag, dumpFile.getPath(), textPlainF);
                            return dumpFile.length();
                        }));
            }
            int samples = samplesFor(n, quick);
            progress(n + " threads (" + ids.length + " listed by the JVM, " + frames + " frames each): "
                    + samples + " samples per call");
            for (Variant v : vs) {
                v.samples = new long[samples];
                v.time();   // warm-up
                dumpFile.delete();
            }
            Random rng = new Random(0x9e3779b97f4a7c15L);
            List<Variant> order = new ArrayList<>(vs);
            for (int s = 0; s < samples; s++) {
                java.util.Collections.shuffle(order, rng);
                for (Variant v : order) {
                    v.samples[s] = v.time();
                    dumpFile.delete();
                }
            }
            for (Variant v : vs) {
                Row r = summarize("hotspot_management", v.name + "_" + n, "ns", v.samples, 1);
                r.put("threads", n).put("jvm_threads", ids.length).put("per_thread_ns", r.p50 / n);
                if (v.stacks) {
                    r.put("frames", frames);
                }
                r.put("call", v.call);
                rows.add(r);
                if (json) {
                    emitJson(r);
                }
            }
            stopParked(ts);
            System.gc();
        }
        Files.deleteIfExists(dir.resolve("threads.txt"));
        Files.deleteIfExists(dir);
        if (!json) {
            System.out.println(String.format(Locale.ROOT, "%-30s %8s %14s %14s %14s %14s", "variant", "samples",
                    "p50 ns", "p99 ns", "max ns", "per thread"));
            for (Row r : rows) {
                System.out.println(String.format(Locale.ROOT, "%-30s %8d %14.0f %14.0f %14.0f %14.1f", r.variant,
                        r.samples, r.p50, r.p99, r.max, (Double) r.extra.get("per_thread_ns")));
            }
        }
        progress("done (blackhole " + (blackhole & 1) + ")");
    }
}
