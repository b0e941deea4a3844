// HotSpotBench: the HotSpot baseline for vmthread's C benchmarks.
//
// It measures, on the JVM that runs it, the calls our runtime re-implements: the current
// thread's user and CPU time, another live thread's user and CPU time, System.nanoTime as
// the timer reference, and starting plus joining 1000 empty threads (Kudu's thread start
// benchmark). The method matches bench/*.c so the rows can sit in one results file: a
// warm-up phase, then one latency sample per call taken with System.nanoTime on each side.
// Calls cheaper than about 1 us are timed in batches of BATCH calls and divided, because a
// nanoTime pair (~30 ns here) would otherwise be a large part of each sample; the cost of
// the empty pair is reported as its own row ("timer_overhead") so that nobody reads it as
// the cost of a call.
//
// Build and run (Java 17, no dependencies):
//   javac -d OUT bench/java/*.java
//   java -cp OUT vmtbench.HotSpotBench [--quick] [--json]
// --quick: 20k samples per method after 5k warm-up samples, 5 thread-start repeats.
// default: 200k samples after 20k warm-up samples, 30 thread-start repeats.
// --json:  only JSON lines on stdout (schema in BenchSupport.toJson); progress goes to stderr.
//
// Percentiles are nearest-rank over the sorted samples. For a batched row a sample is the
// mean of BATCH consecutive calls, so its tail is smoother than that of single calls; the
// "batch" key says which rows were batched.

package vmtbench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;

import static vmtbench.BenchSupport.*;

public final class HotSpotBench {
    // A batch this size makes the nanoTime pair ~2 ns per call for a 30 ns call, while
    // keeping a sample short enough (a few us) that preemption still shows in the tail.
    static final int BATCH = 16;
    // Calls whose single-call median is below this are batched. Decided at run time so that a
    // JVM where user time got cheap (JDK 26 reads a clock instead of /proc) is batched too.
    static final long BATCH_BELOW_NS = 1000;
    static final int CALIBRATION_SAMPLES = 2000;

    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();

    static boolean json;

    /**
     * One measured method. Each subclass owns its timing loop, so the call inside the loop
     * is a direct call that the JIT can inline. A shared loop calling through an interface
     * would turn megamorphic after a few methods and add a virtual dispatch to every call,
     * several percent of a 30 ns nanoTime.
     */
    abstract static class Method {
        final String variant;
        long sink;

        Method(String variant) {
            this.variant = variant;
        }

        /** Nanoseconds taken by {@code calls} consecutive calls, measured around them. */
        abstract long interval(int calls);

        /** Batch size this method is sampled with; 0 means the sample holds no call. */
        int chooseBatch() {
            long[] single = new long[CALIBRATION_SAMPLES];
            for (int i = 0; i < single.length; i++) {
                single[i] = interval(1);
            }
            Arrays.sort(single);
            return single[single.length / 2] < BATCH_BELOW_NS ? BATCH : 1;
        }
    }

    /** The empty interval: two back-to-back nanoTime calls, the floor of every sample. */
    static final class TimerOverhead extends Method {
        TimerOverhead() {
            super("timer_overhead");
        }

        @Override
        long interval(int calls) {
            long t0 = System.nanoTime();
            long t1 = System.nanoTime();
            return t1 - t0;
        }

        @Override
        int chooseBatch() {
            return 0;
        }
    }

    static final class NanoTime extends Method {
        NanoTime() {
            super("nano_time");
        }

        @Override
        long interval(int calls) {
            long acc = 0;
            long t0 = System.nanoTime();
            for (int i = 0; i < calls; i++) {
                acc += System.nanoTime();
            }
            long t1 = System.nanoTime();
            sink ^= acc;
            return t1 - t0;
        }
    }

    static final class CurrentUserTime extends Method {
        CurrentUserTime() {
            super("current_user_time");
        }

        @Override
        long interval(int calls) {
            long acc = 0;
            long t0 = System.nanoTime();
            for (int i = 0; i < calls; i++) {
                acc += MX.getCurrentThreadUserTime();
            }
            long t1 = System.nanoTime();
            sink ^= acc;
            return t1 - t0;
        }
    }

    static final class CurrentCpuTime extends Method {
        CurrentCpuTime() {
            super("current_cpu_time");
        }

        @Override
        long interval(int calls) {
            long acc = 0;
            long t0 = System.nanoTime();
            for (int i = 0; i < calls; i++) {
                acc += MX.getCurrentThreadCpuTime();
            }
            long t1 = System.nanoTime();
            sink ^= acc;
            return t1 - t0;
        }
    }

    static final class OtherUserTime extends Method {
        final long id;

        OtherUserTime(long id) {
            super("other_user_time");
            this.id = id;
        }

        @Override
        long interval(int calls) {
            long acc = 0;
            long t0 = System.nanoTime();
            for (int i = 0; i < calls; i++) {
                acc += MX.getThreadUserTime(id);
            }
            long t1 = System.nanoTime();
            sink ^= acc;
            return t1 - t0;
        }
    }

    static final class OtherCpuTime extends Method {
        final long id;

        OtherCpuTime(long id) {
            super("other_cpu_time");
            this.id = id;
        }

        @Override
        long interval(int calls) {
            long acc = 0;
            long t0 = System.nanoTime();
            for (int i = 0; i < calls; i++) {
                acc += MX.getThreadCpuTime(id);
            }
            long t1 = System.nanoTime();
            sink ^= acc;
            return t1 - t0;
        }
    }

    static Row measure(Method m, int warmup, int samples) {
        progress("measuring " + m.variant);
        System.gc(); // start each method with an empty young generation
        // Warm up with single calls before deciding on batching: a cold, interpreted loop
        // can make a 300 ns call look like 1 us. Then warm up again at the chosen size.
        for (int i = 0; i < warmup / 2; i++) {
            m.interval(1);
        }
        int batch = m.chooseBatch();
        int calls = Math.max(batch, 1);
        for (int i = 0; i < warmup / 2; i++) {
            m.interval(calls);
        }
        long[] raw = new long[samples];
        for (int i = 0; i < samples; i++) {
            raw[i] = m.interval(calls);
        }
        blackhole ^= m.sink;
        // The empty interval is reported per sample: it is what one sample costs to take.
        Row r = summarize("hotspot", m.variant, "ns", raw, calls);
        r.min = null;
        r.put("batch", batch);
        return r;
    }

    // ---- thread start -------------------------------------------------------------------

    // User and sys CPU time of the whole process, in clock ticks, from /proc/self/stat.
    // The process totals keep the time of threads that have already exited, which is what
    // this benchmark needs (its threads are gone when it reads them). Java cannot call
    // getrusage, and OperatingSystemMXBean.getProcessCpuTime is user+sys together (and on
    // Linux also tick based), so /proc is the only way to get the split.
    // Context switches are not reported for Java: the process-wide count exists only
    // through getrusage(RUSAGE_SELF); /proc/self/task/*/status lists live threads only and
    // loses the switches of the 1000 threads once they have exited.
    static long[] procUserSysTicks() {
        try {
            String stat = Files.readString(Path.of("/proc/self/stat"));
            // The command name (field 2) may hold spaces and ')': split after the last ')'.
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" +");
            // f[0] is field 3 (state), so utime (field 14) is f[11] and stime (15) is f[12].
            return new long[] {Long.parseLong(f[11]), Long.parseLong(f[12])};
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    // USER_HZ, the unit of /proc tick counts, is 100 on every Linux architecture the JDK
    // supports (the kernel converts from its internal HZ=250 here).
    static final double US_PER_TICK = 1_000_000.0 / 100;

    static final int THREADS = 1000;

    /** Start THREADS empty threads, then join them all (Kudu's order); returns {wall ns, start-phase ns}. */
    static long[] startJoinRound() throws InterruptedException {
        Thread[] threads = new Thread[THREADS];
        Runnable empty = () -> { };
        long t0 = System.nanoTime();
        for (int i = 0; i < THREADS; i++) {
            threads[i] = new Thread(empty);
            threads[i].start();
        }
        long t1 = System.nanoTime();
        for (Thread t : threads) {
            t.join();
        }
        long t2 = System.nanoTime();
        return new long[] {t2 - t0, t1 - t0};
    }

    static Row threadStart(int repeats) throws InterruptedException {
        progress("measuring start_join_1000 (" + repeats + " repeats of " + THREADS + " threads)");
        // One discarded round compiles Thread.start's Java path and grows the heap first.
        startJoinRound();
        System.gc();
        long[] wall = new long[repeats];
        long[] startOnly = new long[repeats];
        long[] before = procUserSysTicks();
        for (int r = 0; r < repeats; r++) {
            long[] w = startJoinRound();
            wall[r] = w[0];
            startOnly[r] = w[1];
        }
        long[] after = procUserSysTicks();
        double nsPerThreadToUs = 1000.0 * THREADS;
        Row row = summarize("hotspot_thread_start", "start_join_1000", "us/thread", wall, nsPerThreadToUs);
        Arrays.sort(startOnly);
        row.put("start_only_us", startOnly[repeats / 2] / nsPerThreadToUs);
        // CPU time is taken over all repeats together: a tick is 10 ms, about one round's
        // wall time, so a single round would be mostly rounding. It includes the JVM's own
        // threads (GC, JIT) during the window, so it is an upper bound per started thread.
        if (before != null && after != null) {
            double threadsTotal = (double) THREADS * repeats;
            row.put("user_us", (after[0] - before[0]) * US_PER_TICK / threadsTotal);
            row.put("sys_us", (after[1] - before[1]) * US_PER_TICK / threadsTotal);
            row.put("cpu_source", "proc_self_stat_process_delta");
        }
        return row;
    }

    // ---- output --------------------------------------------------------------------------

    static void printTable(List<Row> rows) {
        String head = String.format(Locale.ROOT, "%-18s %-10s %5s %8s %10s %10s %10s %10s %10s %10s %10s",
                "variant", "unit", "batch", "samples", "mean", "p50", "p90", "p99", "p99.9", "p99.99", "max");
        System.out.println(head);
        for (Row r : rows) {
            System.out.println(String.format(Locale.ROOT,
                    "%-18s %-10s %5s %8d %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f",
                    r.variant, r.unit, String.valueOf(r.extra.getOrDefault("batch", "-")), r.samples,
                    r.mean, r.p50, r.p90, r.p99, r.p999, r.p9999, r.max));
        }
        for (Row r : rows) {
            if (r.min != null) {
                System.out.println(String.format(Locale.ROOT,
                        "%s: median %.1f us/thread (min %.1f, max %.1f over %d repeats); start phase alone %.1f us/thread",
                        r.variant, r.p50, r.min, r.max, r.samples, r.extra.get("start_only_us")));
                if (r.extra.containsKey("user_us")) {
                    System.out.println(String.format(Locale.ROOT,
                            "%s: process CPU per started thread: user %.1f us, sys %.1f us (/proc/self/stat delta,"
                                    + " includes JVM background threads; 10 ms ticks)",
                            r.variant, r.extra.get("user_us"), r.extra.get("sys_us")));
                }
                System.out.println(r.variant + ": context switches not available from Java (needs getrusage)");
            }
        }
        System.out.println("timer_overhead is the cost of taking one sample (an empty nanoTime pair);"
                + " a batched row carries timer_overhead/batch of it per call.");
    }

    public static void main(String[] args) throws Exception {
        boolean quick = false;
        for (String a : args) {
            switch (a) {
                case "--quick": quick = true; break;
                case "--json": json = true; break;
                default:
                    System.err.println("usage: java HotSpotBench [--quick] [--json]");
                    System.exit(2);
            }
        }
        int samples = quick ? 20_000 : 200_000;
        int warmup = quick ? 5_000 : 20_000;
        int repeats = quick ? 5 : 30;

        progress("java " + System.getProperty("java.version") + ", " + System.getProperty("java.vm.name")
                + " " + JVM_VERSION + ", " + Runtime.getRuntime().availableProcessors() + " cpus, "
                + (quick ? "quick" : "long") + " mode: " + samples + " samples after " + warmup + " warm-up");

        if (!MX.isCurrentThreadCpuTimeSupported() || !MX.isThreadCpuTimeSupported()) {
            System.err.println("thread CPU time is not supported by this JVM");
            System.exit(1);
        }
        if (!MX.isThreadCpuTimeEnabled()) {
            MX.setThreadCpuTimeEnabled(true);
        }

        // The other thread: alive and parked on a latch for the whole measurement, so its
        // lookup by id always succeeds and its CPU time stays put.
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch parked = new CountDownLatch(1);
        Thread other = new Thread(() -> {
            parked.countDown();
            try {
                release.await();
            } catch (InterruptedException ignored) {
                // exit: the benchmark is over
            }
        }, "hotspotbench-other");
        other.setDaemon(true);
        other.start();
        parked.await();
        long otherId = other.getId();

        List<Row> rows = new ArrayList<>();
        Method[] methods = {
            new TimerOverhead(),
            new NanoTime(),
            new CurrentUserTime(),
            new CurrentCpuTime(),
            new OtherUserTime(otherId),
            new OtherCpuTime(otherId),
        };
        for (Method m : methods) {
            Row r = measure(m, warmup, samples);
            rows.add(r);
            if (json) {
                emitJson(r);
            }
        }
        if (MX.getThreadCpuTime(otherId) < 0) {
            // -1 would mean the lookup failed and we timed the "no such thread" path.
            System.err.println("warning: other thread was not found during measurement");
        }
        release.countDown();
        other.join();

        Row ts = threadStart(repeats);
        rows.add(ts);
        if (json) {
            emitJson(ts);
        } else {
            printTable(rows);
        }
        progress("done (blackhole " + (blackhole & 1) + ")");
    }
}
