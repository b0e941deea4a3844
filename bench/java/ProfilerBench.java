// ProfilerBench: HotSpot's JFR CPU-time sampler (JDK 25, JEP 509: the jdk.CPUTimeSample event,
// experimental, Linux only) on the workloads of //bench:profiler, for the side-by-side lines of
// issue 18: samples against the expected number (thread CPU / period), the summed
// samplingPeriod against each thread's CPU time and the process's, and the overhead.
//
// jfr_accuracy_10ms: three burner threads of 100, 75 and 50 % duty cycle (burn, then sleep the
// rest of each 10 ms) use 2.0 s of CPU each (0.5 s with --quick) under a recording with only
// jdk.CPUTimeSample enabled, throttle "10ms" (a CPU-time period per thread, as ours). The
// recording is dumped and read back with jdk.jfr.consumer.RecordingFile, the API `jfr print`
// and `jfr summary` are built on. Per burner, the row's samples are |sum of samplingPeriod -
// thread CPU| / thread CPU in %, the thread's CPU read by itself (getCurrentThreadCpuTime)
// around its work. jfr_overhead_10ms: a fixed amount of work on two threads, process CPU time
// (OperatingSystemMXBean) with and without such a recording, rounds interleaved; each sample
// is a profiled round's CPU in % of the mean of the unprofiled rounds around it.
//
// HotSpot 17 has no CPU-time sampler: there the row "jfr_cpu_time_sample_unsupported" says so
// (its one sample is 0) and nothing is measured.
//
// Build and run: javac -d OUT bench/java/*.java; java -cp OUT vmtbench.ProfilerBench [--quick]
// [--json]

package vmtbench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

import jdk.jfr.EventType;
import jdk.jfr.FlightRecorder;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

import static vmtbench.BenchSupport.*;

public final class ProfilerBench {
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    static final String EVENT = "jdk.CPUTimeSample";
    static final long MS = 1_000_000L;

    static boolean samplerExists() {
        for (EventType t : FlightRecorder.getFlightRecorder().getEventTypes()) {
            if (t.getName().equals(EVENT)) {
                return true;
            }
        }
        return false;
    }

    static Recording recording(int periodMs) {
        Recording r = new Recording();
        r.enable(EVENT).with("throttle", periodMs + "ms");
        r.enable("jdk.CPUTimeSamplesLost");
        return r;
    }

    // ---- the work: an interpreter-like loop, as bench/profiler.c --------------------------
    static long[] regs = new long[16];

    static void op(long[] r, int i) {
        switch (i & 3) {
            case 0: r[i & 15] += r[(i + 3) & 15] + i; break;
            case 1: r[i & 15] = r[i & 15] * 6364136223846793005L + 1442695040888963407L; break;
            case 2: r[(i + 7) & 15] ^= r[i & 15] >>> 7; break;
            default: r[i & 15] = Long.rotateLeft(r[i & 15], 13); break;
        }
    }

    static int basicBlock(long[] r, int pc) {
        for (int k = 0; k < 64; k++) {
            op(r, (pc++ * 0x9E3779B1) >>> 7);
        }
        return pc;
    }

    static int interpret(long[] r, int pc, long units) {
        for (long u = 0; u < units; u++) {
            for (int a = 0; a < 4; a++) {
                for (int b = 0; b < 8; b++) {
                    pc = basicBlock(r, pc);
                }
            }
        }
        return pc;
    }

    // ---- accuracy --------------------------------------------------------------------------
    static final class Burner extends Thread {
        final int duty;
        final long targetNs;
        volatile long ownNs;

        Burner(int duty, long targetNs) {
            super("burner-" + duty);
            this.duty = duty;
            this.targetNs = targetNs;
        }

        @Override
        public void run() {
            long[] r = new long[16];
            int pc = 7;
            long c0 = MX.getCurrentThreadCpuTime(), slice = 10 * MS * duty / 100;
            while (MX.getCurrentThreadCpuTime() - c0 < targetNs) {
                long s0 = MX.getCurrentThreadCpuTime();
                while (MX.getCurrentThreadCpuTime() - s0 < slice) {
                    pc = interpret(r, pc, 4);
                }
                if (duty < 100) {
                    try {
                        Thread.sleep((10 * MS - slice) / MS);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }
            blackhole += r[3] + pc;
            ownNs = MX.getCurrentThreadCpuTime() - c0;
        }
    }

    static Row accuracy(int periodMs, long targetNs, Path dir) throws Exception {
        int[] duties = {100, 75, 50};
        Burner[] b = new Burner[duties.length];
        for (int i = 0; i < b.length; i++) {
            b[i] = new Burner(duties[i], targetNs);
        }
        Recording rec = recording(periodMs);
        rec.start();
        long p0 = OS.getProcessCpuTime();
        for (Burner x : b) {
            x.start();
        }
        for (Burner x : b) {
            x.join();
        }
        rec.stop();
        long process = OS.getProcessCpuTime() - p0;
        Path file = dir.resolve("cpu-time-" + periodMs + "ms.jfr");
        rec.dump(file);
        rec.close();
        Map<Long, long[]> perThread = new HashMap<>();   // thread id -> {samples, sum ns, failed}
        long allSamples = 0, allWeight = 0, failed = 0, biased = 0, lost = 0;
        for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
            if (e.getEventType().getName().equals("jdk.CPUTimeSamplesLost")) {
                lost += e.getInt("lostSamples");
                continue;
            }
            if (!e.getEventType().getName().equals(EVENT)) {
                continue;
            }
            long weight = ((Duration) e.getDuration("samplingPeriod")).toNanos();
            allSamples++;
            allWeight += weight;
            if (e.getBoolean("failed")) {
                failed++;
            }
            if (e.getBoolean("biased")) {
                biased++;
            }
            if (e.getThread("eventThread") == null) {
                continue;
            }
            long[] s = perThread.computeIfAbsent(e.getThread("eventThread").getJavaThreadId(),
                                                 k -> new long[2]);
            s[0]++;
            s[1] += weight;
        }
        Files.deleteIfExists(file);
        long[] err = new long[b.length];   // in 1/10000 of a percent, for the summary
        long samples = 0, weight = 0, cpu = 0;
        for (int i = 0; i < b.length; i++) {
            long[] s = perThread.getOrDefault(b[i].getId(), new long[2]);
            double e = 100.0 * Math.abs(s[1] - b[i].ownNs) / b[i].ownNs;
            err[i] = Math.round(e * 1e4);
            samples += s[0];
            weight += s[1];
            cpu += b[i].ownNs;
            progress(String.format("  %d ms, duty %3d%%: thread cpu %.1f ms, %d samples, sum of "
                    + "samplingPeriod %.1f ms, error %.3f%%", periodMs, b[i].duty, b[i].ownNs / 1e6,
                    s[0], s[1] / 1e6, e));
        }
        progress(String.format("  %d ms: %d samples in all (%d failed, %d biased), %d lost, sum of "
                + "samplingPeriod %.1f ms of %.1f ms process CPU", periodMs, allSamples, failed, biased,
                lost, allWeight / 1e6, process / 1e6));
        Row r = summarize("hotspot_profiler", "jfr_accuracy_" + periodMs + "ms", "%", err, 1e4);
        r.put("period_ms", periodMs);
        r.put("cpu_s_per_thread", targetNs / 1e9);
        r.put("samples_per_expected", samples / ((double) cpu / (periodMs * MS)));
        r.put("weight_per_thread_cpu", (double) weight / cpu);
        r.put("weight_per_process_cpu", (double) allWeight / process);
        r.put("jfr_samples", samples);
        r.put("failed", failed);
        r.put("biased", biased);
        r.put("lost", lost);
        return r;
    }

    // ---- overhead --------------------------------------------------------------------------
    static long runWork(long units) throws InterruptedException {
        Thread[] t = new Thread[2];
        long c0 = OS.getProcessCpuTime();
        for (int i = 0; i < 2; i++) {
            t[i] = new Thread(() -> {
                long[] r = new long[16];
                blackhole += interpret(r, 1, units) + r[5];
            });
            t[i].start();
        }
        for (Thread x : t) {
            x.join();
        }
        return OS.getProcessCpuTime() - c0;
    }

    static Row overhead(int periodMs, boolean quick) throws Exception {
        int rounds = quick ? 7 : 21;
        long[] r = new long[16];
        interpret(r, 1, 2000);   // warm-up: compiled before it is measured
        long c0 = MX.getCurrentThreadCpuTime();
        interpret(r, 1, 200);
        double unitNs = (MX.getCurrentThreadCpuTime() - c0) / 200.0;
        long units = (long) ((quick ? 100 : 150) * MS / unitNs);
        runWork(units / 4);
        double[] off = new double[rounds + 1];
        double[] on = new double[rounds];
        off[0] = runWork(units);
        for (int i = 0; i < rounds; i++) {
            Recording rec = recording(periodMs);
            rec.start();
            on[i] = runWork(units);
            rec.stop();
            rec.close();
            off[i + 1] = runWork(units);
        }
        long[] ratio = new long[rounds];   // % of the unprofiled rounds, x 1e4
        double offSum = 0;
        for (int i = 0; i < rounds; i++) {
            ratio[i] = Math.round(100 * on[i] / ((off[i] + off[i + 1]) / 2) * 1e4);
            offSum += off[i];
        }
        Row row = summarize("hotspot_profiler", "jfr_overhead_" + periodMs + "ms", "% of off", ratio, 1e4);
        row.put("rounds", rounds);
        row.put("cpu_ms_unprofiled", offSum / rounds / 1e6);
        progress(String.format("  jfr_overhead_%dms: overhead median %+.3f%%, spread [%+.3f%% .. %+.3f%%] "
                + "over %d rounds", periodMs, row.p50 - 100, row.min - 100, row.max - 100,
                rounds));
        return row;
    }

    public static void main(String[] args) throws Exception {
        parseArgs(args, "vmtbench.ProfilerBench");
        progress("java " + System.getProperty("java.version") + ", " + JVM_VERSION);
        if (!samplerExists()) {
            Row r = summarize("hotspot_profiler", "jfr_cpu_time_sample_unsupported", "samples",
                              new long[] {0}, 1);
            r.put("reason", "this JVM has no " + EVENT + " event (JEP 509 is JDK 25)");
            emit(r);
            progress("no " + EVENT + " on this JVM: nothing to measure");
        } else {
            Path dir = Files.createTempDirectory("vmt-jfr");
            emit(accuracy(10, (quick ? 500 : 2000) * MS, dir));
            emit(overhead(10, quick));
            Files.deleteIfExists(dir);
        }
        finish();
        progress("done (blackhole " + (blackhole & 1) + ")");
    }
}
