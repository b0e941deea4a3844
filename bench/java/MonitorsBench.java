// MonitorsBench: what HotSpot's monitors and java.util.concurrent locks cost on this machine
// (issue #16's HotSpot side of //bench:monitors; bench/monitors.c has the same definitions).
//
// Rows, ns per enter+exit (lock+unlock) pair or per round trip:
//   hotspot_monitors.uncontended  synchronized, reentrant_lock, timer_overhead (the same loop
//                                 with an empty body): one thread, batches of BATCH pairs, the
//                                 variants interleaved batch by batch in a rotating order; a
//                                 sample is one batch's time / BATCH.
//   hotspot_monitors.contended    synchronized, reentrant_lock: two threads start a batch
//                                 together (a spin barrier, not timed) and each makes BATCH pairs
//                                 on one shared lock; a sample is the time from the start to the
//                                 moment the later of the two has finished, / BATCH (ns per pair
//                                 per thread while both run). A sample counts only if neither
//                                 thread was preempted meanwhile (nonvoluntary_ctxt_switches of
//                                 /proc/thread-self/status: the counter getrusage gives the C
//                                 side); kept_pct says how many attempts counted. The variants
//                                 alternate sample by sample.
//   hotspot_monitors.handoff      wait_notify: two threads pass a turn back and forth with
//                                 notify() + wait() on one monitor, each holding it except while
//                                 waiting; park_unpark: the same with a volatile turn and
//                                 LockSupport.unpark + park. A sample is one round trip (two
//                                 hand-offs) timed by the main thread; the first tenth is warm-up.
//
// C2 and the lock: a loop of `synchronized (FINAL_STATIC) {}` is coarsened by C2 (the exit of
// one iteration and the enter of the next are merged, 4x faster than a real pair here), which
// is no per-call cost. Every loop here reads its lock from a non-final static field inside the
// loop: each enter has its own load of the object, and C2 only coarsens an exit and an enter of
// the same object node, so nothing merges. Checked by timing on both JDKs (docs/benchmarks.md):
// this loop costs the same under -XX:-EliminateLocks as without it, while the static-final loop
// drops to a quarter (-XX:+PrintEliminateLocks is absent from product VMs). The JVM therefore
// runs with its default options, as users run it.
//
//   java -cp OUT vmtbench.MonitorsBench [--quick] [--json]

package vmtbench;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

import static vmtbench.BenchSupport.*;

public final class MonitorsBench {
    /** Pairs per sample, as bench/monitors.c. */
    static final int BATCH = 1000;

    // Non-final on purpose (see the header): every iteration loads the lock anew.
    static Object uncontendedMonitor = new Object();
    static ReentrantLock uncontendedLock = new ReentrantLock();
    static Object contendedMonitor = new Object();
    static ReentrantLock contendedLock = new ReentrantLock();
    static int sink;

    static long batchSynchronized() {
        long t0 = System.nanoTime();
        for (int i = 0; i < BATCH; i++) {
            synchronized (uncontendedMonitor) {
                // empty, as bench/monitors.c: a pair with no critical section
            }
        }
        return System.nanoTime() - t0;
    }

    static long batchReentrantLock() {
        long t0 = System.nanoTime();
        for (int i = 0; i < BATCH; i++) {
            ReentrantLock l = uncontendedLock;
            l.lock();
            l.unlock();
        }
        return System.nanoTime() - t0;
    }

    static long batchEmpty() {
        long t0 = System.nanoTime();
        for (int i = 0; i < BATCH; i++) {
            sink++;
        }
        return System.nanoTime() - t0;
    }

    static long uncontendedBatch(int v) {
        switch (v) {
            case 0: return batchSynchronized();
            case 1: return batchReentrantLock();
            default: return batchEmpty();
        }
    }

    static void uncontended(int warmup, int samples) {
        String[] names = {"synchronized", "reentrant_lock", "timer_overhead"};
        long[][] raw = new long[names.length][samples];
        for (int r = -warmup; r < samples; r++) {
            for (int k = 0; k < names.length; k++) {
                int v = Math.floorMod(k + r, names.length); // rotate: no variant always first
                long ns = uncontendedBatch(v);
                if (r >= 0) {
                    raw[v][r] = ns;
                }
            }
        }
        for (int v = 0; v < names.length; v++) {
            emit(summarize("hotspot_monitors.uncontended", names[v], "ns/call", raw[v], BATCH)
                    .put("batch", BATCH));
        }
    }

    // ---- Contended: two threads, one lock, batches started together -------------------------

    /**
     * One turn of a wait for the other thread: spins for the first millisecond of the wait (a
     * yield on a loaded machine can give the CPU away for a whole time slice, and counts as a
     * preemption), then yields, so the other thread runs even when load put both on one CPU.
     */
    static void pause(int i, long since) {
        Thread.onSpinWait();
        if ((i & 63) == 63 && System.nanoTime() - since > 1_000_000) {
            Thread.yield();
        }
    }

    /**
     * The calling thread's involuntary context switches (preemptions), from
     * /proc/thread-self/status, the counter bench/monitors.c reads with getrusage(RUSAGE_THREAD).
     * One per thread, opened by that thread; reading allocates nothing.
     */
    static final class Preemptions {
        static final byte[] KEY = "nonvoluntary_ctxt_switches:".getBytes(StandardCharsets.US_ASCII);
        final RandomAccessFile file;
        final byte[] buf = new byte[4096];

        Preemptions() {
            RandomAccessFile f = null;
            try {
                f = new RandomAccessFile("/proc/thread-self/status", "r");
            } catch (IOException e) {
                // Not Linux, or no /proc: every sample counts (said in the row's kept_pct of 100).
            }
            file = f;
        }

        long read() {
            if (file == null) {
                return 0;
            }
            try {
                file.seek(0);
                int n = 0;
                for (int r; n < buf.length && (r = file.read(buf, n, buf.length - n)) > 0; ) {
                    n += r;
                }
                for (int i = 0; i + KEY.length < n; i++) {
                    int k = 0;
                    while (k < KEY.length && buf[i + k] == KEY[k]) {
                        k++;
                    }
                    if (k == KEY.length) {
                        long v = 0;
                        for (int j = i + k; j < n && buf[j] != '\n'; j++) {
                            if (buf[j] >= '0' && buf[j] <= '9') {
                                v = v * 10 + (buf[j] - '0');
                            }
                        }
                        return v;
                    }
                }
            } catch (IOException e) {
                return -1;
            }
            return -1;
        }
    }

    static void contendedBatch(int variant) {
        if (variant == 0) {
            for (int i = 0; i < BATCH; i++) {
                synchronized (contendedMonitor) {
                    // empty, as bench/monitors.c
                }
            }
        } else {
            for (int i = 0; i < BATCH; i++) {
                ReentrantLock l = contendedLock;
                l.lock();
                l.unlock();
            }
        }
    }

    static final class Partner extends Thread {
        volatile int ready;    // = round once the partner waits for the start
        volatile int go;       // the main thread's start signal for a round
        volatile int done;     // = round once t1 and preempted are stored
        volatile int variant;
        volatile long t1;
        volatile boolean preempted;

        Partner() {
            super(null, null, "monitors-partner", 256 * 1024);
            setDaemon(true);
        }

        @Override
        public void run() {
            Preemptions counter = new Preemptions();
            for (int round = 1; ; round++) {
                long before = counter.read();
                ready = round;
                long since = System.nanoTime();
                for (int i = 0; go != round; i++) {
                    pause(i, since);
                }
                if (variant < 0) {
                    return;
                }
                contendedBatch(variant);
                t1 = System.nanoTime();
                preempted = counter.read() != before;
                done = round;
            }
        }
    }

    /**
     * A sample counts only if neither thread was preempted from the start signal to the end of
     * its batch (as bench/monitors.c); samples are taken until each variant has its count or the
     * time budget is spent. kept_pct says how many attempts counted.
     */
    static void contended(int warmup, int samples, long budgetNs) throws InterruptedException {
        String[] names = {"synchronized", "reentrant_lock"};
        long[][] raw = new long[names.length][samples];
        int[] kept = new int[names.length];
        int[] attempts = new int[names.length];
        Preemptions counter = new Preemptions();
        Partner p = new Partner();
        p.start();
        int round = 0;
        long deadline = System.nanoTime() + budgetNs;
        for (int r = 0; ; r++) {
            boolean full = true;
            for (int v = 0; v < names.length; v++) {
                full &= kept[v] == samples;
            }
            if (full || (r >= warmup && System.nanoTime() > deadline)) {
                break;
            }
            for (int k = 0; k < names.length; k++) {
                int v = Math.floorMod(k + r, names.length); // rotate: no variant always first
                if (kept[v] == samples) {
                    continue;
                }
                round++;
                long since = System.nanoTime();
                for (int i = 0; p.ready != round; i++) {
                    pause(i, since);
                }
                p.variant = v;
                long before = counter.read();
                long t0 = System.nanoTime();
                p.go = round;
                contendedBatch(v);
                long tMain = System.nanoTime();
                boolean preempted = counter.read() != before;
                since = System.nanoTime();
                for (int i = 0; p.done != round; i++) {
                    pause(i, since);
                }
                if (r < warmup) {
                    continue;
                }
                attempts[v]++;
                if (!preempted && !p.preempted) {
                    raw[v][kept[v]++] = Math.max(tMain, p.t1) - t0;
                }
            }
        }
        round++;
        long since = System.nanoTime();
        for (int i = 0; p.ready != round; i++) {
            pause(i, since);
        }
        p.variant = -1;
        p.go = round;
        p.join();
        for (int v = 0; v < names.length; v++) {
            if (kept[v] == 0) {
                progress(names[v] + ": no sample without a preemption in " + attempts[v] + " attempts");
                continue;
            }
            emit(summarize("hotspot_monitors.contended", names[v], "ns/call",
                    Arrays.copyOf(raw[v], kept[v]), BATCH)
                    .put("batch", BATCH)
                    .put("kept_pct", Math.round(1000.0 * kept[v] / attempts[v]) / 10.0));
        }
    }

    // ---- Hand-offs: wait/notify and park/unpark round trips ---------------------------------

    static final Object HANDOFF = new Object();
    static int turn;               // guarded by HANDOFF
    static volatile int parkTurn;  // whose turn it is in the park/unpark round trips

    /** Holding HANDOFF: gives the turn to the other thread and waits until it comes back. */
    static void pass(int me) throws InterruptedException {
        turn = 1 - me;
        HANDOFF.notify();
        while (turn != me) {
            HANDOFF.wait();
        }
    }

    static long[] waitNotify(int rounds) throws InterruptedException {
        long[] out = new long[rounds];
        turn = 0;
        Thread pong = new Thread(null, () -> {
            try {
                synchronized (HANDOFF) {
                    while (turn != 1) {
                        HANDOFF.wait();
                    }
                    for (int i = 0; i < rounds; i++) {
                        pass(1);
                    }
                    turn = 0;
                    HANDOFF.notify();
                }
            } catch (InterruptedException e) {
                throw new IllegalStateException("interrupted", e);
            }
        }, "monitors-pong", 256 * 1024);
        pong.start();
        synchronized (HANDOFF) {
            for (int i = 0; i < rounds; i++) {
                long t0 = System.nanoTime();
                pass(0);
                out[i] = System.nanoTime() - t0;
            }
            turn = 1; // let pong finish its last pass
            HANDOFF.notify();
        }
        pong.join();
        return out;
    }

    static long[] parkUnpark(int rounds) throws InterruptedException {
        long[] out = new long[rounds];
        Thread main = Thread.currentThread();
        parkTurn = 0;
        Thread pong = new Thread(null, () -> {
            for (int i = 0; i < rounds; i++) {
                while (parkTurn != 1) {
                    LockSupport.park();
                }
                parkTurn = 0;
                LockSupport.unpark(main);
            }
        }, "monitors-pong", 256 * 1024);
        pong.start();
        for (int i = 0; i < rounds; i++) {
            long t0 = System.nanoTime();
            parkTurn = 1;
            LockSupport.unpark(pong);
            while (parkTurn != 0) {
                LockSupport.park();
            }
            out[i] = System.nanoTime() - t0;
        }
        pong.join();
        return out;
    }

    static void handoff(String variant, long[] raw) {
        int skip = raw.length / 10; // warm-up, as bench/monitors.c
        long[] kept = Arrays.copyOfRange(raw, skip, raw.length);
        emit(summarize("hotspot_monitors.handoff", variant, "ns/round trip", kept, 1));
    }

    public static void main(String[] args) throws Exception {
        parseArgs(args, "vmtbench.MonitorsBench");
        // Warm-up batches are cheap (microseconds) and must reach C2 for every loop.
        int warmup = 2000;
        int samples = quick ? 300 : 5000;
        int contendedSamples = quick ? 300 : 3000;
        int handoffRounds = quick ? 1000 : 20000;
        progress("java " + System.getProperty("java.version") + ", " + System.getProperty("java.vm.name") + " "
                + JVM_VERSION + ", " + (quick ? "quick" : "default") + " mode: " + samples
                + " uncontended and " + contendedSamples + " contended batches of " + BATCH + ", "
                + handoffRounds + " round trips per variant");
        uncontended(warmup, samples);
        contended(quick ? 20 : 100, contendedSamples, (quick ? 5 : 30) * 1_000_000_000L);
        handoff("wait_notify", waitNotify(handoffRounds));
        handoff("park_unpark", parkUnpark(handoffRounds));
        finish();
        progress("done (sink " + sink + ")");
    }
}
