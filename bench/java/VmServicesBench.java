// VmServicesBench: what HotSpot pays to act on another thread (issue #14's HotSpot side).
// bench-jvm-args: -agentpath:{bin}/bench/libvmt_jvmti_agent.so -Xlog:async -Xlog:safepoint=info:file={run_dir}/{label}-safepoint.log::filecount=0
// bench-build: //bench:libvmt_jvmti_agent.so
//
// Requests from the main thread to one target thread that is running (spinning), parked
// (LockSupport.park) or in native (a blocking read on a pipe that never gets data):
//   bench hotspot_stack_trace  get_stack_trace_<target>        Thread.getStackTrace(): a global
//                                                                safepoint on 17, a handshake on 25
//                              jvmti_get_stack_trace_<target>  JVMTI GetStackTrace (a handshake)
//   bench hotspot_suspend      jvmti_suspend_<target>          JVMTI SuspendThread (handshake)
//                              jvmti_resume_<target>           JVMTI ResumeThread right after it
// and a near-empty global safepoint, ThreadMXBean.findDeadlockedThreads():
//   bench hotspot_safepoint    find_deadlocks                  the call, timed by the caller
// with idle_threads = 0, 1,000, 10,000 parked threads (10,000 not in --quick) and
// running_threads = 0, 1, 2 spinning threads besides the requester and the target (1 and 2
// at 0 idle threads only, with fewer samples: on 2 CPUs they take the CPU the target and the
// VM thread need). Every row carries idle_threads, running_threads and threads (the JVM's
// live thread count, its own threads included). Unit: us per call.
//
// The find_deadlocks rows also name the JVM's safepoint log (-Xlog:safepoint above, written
// asynchronously so that the write is not in the VM thread's path) and which of its
// "FindDeadlocks" records are theirs (xlog, xlog_op, xlog_first, xlog_count); scripts/bench
// (scripts/safepoint_log.py) turns those records into rows find_deadlocks_reach,
// find_deadlocks_at and find_deadlocks_total: HotSpot's own time to safepoint, time at
// safepoint and total; the caller's figure adds the hand-off of the VM operation to the VM
// thread and back.
//
// vmthread's rows of the same questions (issue #14, bench/handshake.c's header): bench
// handshake, vmt_handshake_<target> and vmt_stack_trace_<target>; bench handshake.suspend,
// vmt_suspend_<target> and vmt_resume_<target>; with the same idle_threads and
// running_threads keys, so the pairs line up row by row.
//
// The running target spins in `while (!stop) v = v * A + C;` on a volatile `stop`: a loop whose
// exit depends on a volatile load is not a counted loop, so C2 keeps the safepoint poll in its
// back edge (a counted int loop may have it removed or strip-mined). JVMTI calls are timed in
// C by the agent (bench/jvmti_agent.c: the call alone, as an agent pays it, without the JNI
// call and return); getStackTrace and findDeadlockedThreads by System.nanoTime around the
// call. Each kind of target runs alone; the operations on it are interleaved sample by sample
// (rotating order), so load from elsewhere falls on all of them alike.
//
//   java -agentpath:bazel-bin/bench/libvmt_jvmti_agent.so -cp OUT vmtbench.VmServicesBench
//        [--quick] [--json]
// Without the agent the JVMTI rows are skipped with a message; without -Xlog:safepoint the
// find_deadlocks rows carry no log keys.

package vmtbench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.channels.Pipe;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

import static vmtbench.BenchSupport.*;

public final class VmServicesBench {
    // The agent's natives (bench/jvmti_agent.c): elapsed ns of the JVMTI call, or -(jvmtiError).
    static native String jvmtiStatus();

    static native long jvmtiGetStackTrace(Thread t, int depth);

    static native long jvmtiSuspend(Thread t);

    static native long jvmtiResume(Thread t);

    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    // Idle and target threads need little stack; 10,000 of them at the default 8 MB would be
    // 80 GB of address space. HotSpot raises a value below its minimum to the minimum.
    static final long STACK = 256 * 1024;
    static final int JVMTI_DEPTH = 64;

    static final long START = System.nanoTime();

    static double elapsed() {
        return (System.nanoTime() - START) / 1e9;
    }


    // ---- threads -------------------------------------------------------------------------

    /** A thread the requester acts on; halt() ends it whatever it is blocked in. */
    abstract static class Target extends Thread {
        final String kind;
        volatile boolean stop;

        Target(String kind) {
            super(null, null, "vms-" + kind, STACK);
            this.kind = kind;
            setDaemon(true);
        }

        /** Returns once the thread is in the state it is measured in. */
        abstract void awaitReady() throws InterruptedException;

        /** Called before each request: returns when the target is back in that state. */
        void beforeRequest() {
        }

        void halt() throws InterruptedException {
            stop = true;
            join();
        }
    }

    /**
     * Running: an uncounted loop (its exit is a volatile load), so it keeps a safepoint poll.
     * It publishes its progress every 1024 iterations (about 1.5 us), which lets the requester
     * wait until it is back in the loop after a safepoint or a suspension before the next
     * request: otherwise the next request could find it still blocked, a safe target.
     */
    static final class Spinner extends Target {
        volatile long progress;

        Spinner(String kind) {
            super(kind);
        }

        @Override
        public void run() {
            long v = 1;
            long i = 0;
            while (!stop) {
                v = v * 6364136223846793005L + 1442695040888963407L;
                if ((++i & 1023) == 0) {
                    progress = i;
                }
            }
            blackhole ^= v;
        }

        @Override
        void awaitReady() {
            beforeRequest();
        }

        @Override
        void beforeRequest() {
            long seen = progress;
            long deadline = System.nanoTime() + 10_000_000_000L;
            for (int i = 0; progress == seen; i++) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(getName() + " made no progress for 10 s");
                }
                // A short spin, then yield: the spinner may be waiting for this very CPU.
                if (i < 100) {
                    Thread.onSpinWait();
                } else {
                    Thread.yield();
                }
            }
        }
    }

    static final class Parker extends Target {
        Parker() {
            super("parked");
        }

        @Override
        public void run() {
            while (!stop) {
                LockSupport.park(this);
            }
        }

        @Override
        void awaitReady() throws InterruptedException {
            while (getState() != State.WAITING) {
                Thread.sleep(1);
            }
        }

        @Override
        void halt() throws InterruptedException {
            stop = true;
            LockSupport.unpark(this);
            join();
        }
    }

    /** In native: blocked in read(2) on a pipe nobody writes to until halt(). */
    static final class NativeReader extends Target {
        final Pipe pipe;
        volatile boolean reading;

        NativeReader() throws IOException {
            super("native");
            pipe = Pipe.open();
        }

        @Override
        public void run() {
            ByteBuffer b = ByteBuffer.allocate(1);
            try {
                while (!stop) {
                    b.clear();
                    reading = true;
                    pipe.source().read(b);
                }
            } catch (IOException e) {
                throw new IllegalStateException("pipe read failed", e);
            }
        }

        @Override
        void awaitReady() throws InterruptedException {
            // Java cannot see a thread enter read(2); the flag is set just before the call.
            while (!reading) {
                Thread.sleep(1);
            }
            Thread.sleep(10);
        }

        @Override
        void halt() throws InterruptedException {
            stop = true;
            try {
                pipe.sink().write(ByteBuffer.wrap(new byte[1]));
                join();
                pipe.sink().close();
                pipe.source().close();
            } catch (IOException e) {
                throw new IllegalStateException("pipe write failed", e);
            }
        }
    }

    static void awaitRunning(Spinner[] spinners) {
        for (Spinner x : spinners) {
            x.awaitReady();
        }
    }

    static Spinner[] startSpinners(int n) {
        Spinner[] s = new Spinner[n];
        for (int i = 0; i < n; i++) {
            s[i] = new Spinner("spinner-" + i);
            s[i].start();
        }
        awaitRunning(s);
        return s;
    }

    static void halt(Target[] ts) throws InterruptedException {
        for (Target t : ts) {
            t.halt();
        }
    }

    /** Parked threads that only make the JVM bigger: the thread list a safepoint walks. */
    static final class IdlePool {
        final List<Thread> threads = new ArrayList<>();
        final AtomicInteger parked = new AtomicInteger();
        volatile boolean stop;

        /** Grows the pool to n threads; false (and a message) if the JVM cannot start them. */
        boolean growTo(int n) throws InterruptedException {
            Runnable body = () -> {
                parked.incrementAndGet();
                while (!stop) {
                    LockSupport.park(this);
                }
            };
            try {
                while (threads.size() < n) {
                    Thread t = new Thread(null, body, "vms-idle-" + threads.size(), STACK);
                    t.setDaemon(true);
                    t.start();
                    threads.add(t);
                }
            } catch (OutOfMemoryError e) {
                progress("cannot start " + n + " idle threads (" + e.getMessage() + ", at "
                        + threads.size() + "): rows at " + n + " idle threads skipped");
                return false;
            }
            while (parked.get() < threads.size()) {
                Thread.sleep(1);
            }
            Thread.sleep(20); // the last ones reach park itself
            return true;
        }

        void close() throws InterruptedException {
            stop = true;
            for (Thread t : threads) {
                LockSupport.unpark(t);
            }
            for (Thread t : threads) {
                t.join();
            }
        }
    }

    // ---- requests to one target ----------------------------------------------------------

    static long check(long ns, String what, Target t) {
        if (ns < 0) {
            throw new IllegalStateException(what + " of " + t.getName() + " failed: JVMTI error " + -ns);
        }
        return ns;
    }

    static long getStackTrace(Target t) {
        long t0 = System.nanoTime();
        StackTraceElement[] st = t.getStackTrace();
        long t1 = System.nanoTime();
        if (st.length == 0) {
            // An empty trace is what a dead thread gives: we would have timed nothing.
            throw new IllegalStateException(t.getName() + " has no stack: not alive?");
        }
        blackhole ^= st.length;
        return t1 - t0;
    }

    static Target newTarget(String kind) throws IOException {
        switch (kind) {
            case "running": return new Spinner(kind);
            case "parked": return new Parker();
            default: return new NativeReader();
        }
    }

    /**
     * One configuration: for each kind of target in turn (alone, so that a spinning target
     * never stands in a parked one's safepoint), every operation interleaved with the others,
     * then one row per operation.
     */
    static void stackAndSuspend(boolean withJvmti, int idle, int running, int warmup, int samples)
            throws Exception {
        progress(String.format("stack traces and suspension: %d idle, %d running threads, %d samples (%.1f s)",
                idle, running, samples, elapsed()));
        int ops = withJvmti ? 3 : 1; // getStackTrace, JVMTI GetStackTrace, Suspend+Resume
        for (String kind : new String[] {"running", "parked", "native"}) {
            Target t = newTarget(kind);
            t.start();
            t.awaitReady();
            Spinner[] spinners = startSpinners(running);
            long[][] raw = new long[ops + 1][samples]; // the last one: resume
            for (int r = -warmup; r < samples; r++) {
                for (int k = 0; k < ops; k++) {
                    int op = Math.floorMod(k + r, ops); // rotate: no operation always runs first
                    t.beforeRequest(); // a spinning target is back in its loop
                    long ns;
                    switch (op) {
                        case 0:
                            ns = getStackTrace(t);
                            break;
                        case 1:
                            ns = check(jvmtiGetStackTrace(t, JVMTI_DEPTH), "GetStackTrace", t);
                            break;
                        default:
                            ns = check(jvmtiSuspend(t), "SuspendThread", t);
                            long rs = check(jvmtiResume(t), "ResumeThread", t);
                            if (r >= 0) {
                                raw[ops][r] = rs;
                            }
                            break;
                    }
                    if (r >= 0) {
                        raw[op][r] = ns;
                    }
                }
            }
            int threads = MX.getThreadCount();
            halt(spinners);
            t.halt();
            emit(config(summarize("hotspot_stack_trace", "get_stack_trace_" + kind, "us", raw[0], 1000.0),
                    idle, running, threads));
            if (withJvmti) {
                emit(config(summarize("hotspot_stack_trace", "jvmti_get_stack_trace_" + kind, "us", raw[1],
                        1000.0), idle, running, threads));
                emit(config(summarize("hotspot_suspend", "jvmti_suspend_" + kind, "us", raw[2], 1000.0),
                        idle, running, threads));
                emit(config(summarize("hotspot_suspend", "jvmti_resume_" + kind, "us", raw[3], 1000.0),
                        idle, running, threads));
            }
        }
    }

    static Row config(Row r, int idle, int running, int threads) {
        return r.put("idle_threads", idle).put("running_threads", running).put("threads", threads);
    }

    // ---- near-empty safepoint ------------------------------------------------------------

    /** The -Xlog:safepoint file this JVM writes (from its own arguments), or null. */
    static String safepointLog() {
        for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            int f = a.indexOf("file=");
            if (a.startsWith("-Xlog:safepoint") && f > 0) {
                int end = a.indexOf(':', f);
                return a.substring(f + "file=".length(), end < 0 ? a.length() : end);
            }
        }
        return null;
    }

    static final String LOG = safepointLog();
    // FindDeadlocks VM operations this JVM has run: one per findDeadlockedThreads() call, so
    // the log's n-th "FindDeadlocks" record is the n-th call.
    static int findDeadlocksCalls;

    static void findDeadlocks(int idle, int running, int warmup, int samples) throws Exception {
        Spinner[] spinners = startSpinners(running);
        progress(String.format("findDeadlockedThreads: %d idle, %d running threads, %d samples (%.1f s)",
                idle, running, samples, elapsed()));
        for (int i = 0; i < warmup; i++) {
            blackhole ^= MX.findDeadlockedThreads() == null ? 0 : 1;
            findDeadlocksCalls++;
        }
        int first = findDeadlocksCalls;
        long[] raw = new long[samples];
        for (int i = 0; i < samples; i++) {
            awaitRunning(spinners); // each spinner is out of the previous safepoint
            long t0 = System.nanoTime();
            long[] found = MX.findDeadlockedThreads();
            raw[i] = System.nanoTime() - t0;
            findDeadlocksCalls++;
            if (found != null) {
                throw new IllegalStateException("findDeadlockedThreads found a deadlock");
            }
        }
        int threads = MX.getThreadCount();
        halt(spinners);
        Row r = config(summarize("hotspot_safepoint", "find_deadlocks", "us", raw, 1000.0), idle, running,
                threads);
        if (LOG != null) {
            r.put("xlog", Path.of(LOG).getFileName().toString()).put("xlog_op", "FindDeadlocks")
                    .put("xlog_first", first).put("xlog_count", samples);
        }
        emit(r);
    }

    // ---- main ----------------------------------------------------------------------------

    public static void main(String[] args) throws Exception {
        parseArgs(args, "-agentpath:.../libvmt_jvmti_agent.so vmtbench.VmServicesBench");
        String agent;
        try {
            agent = jvmtiStatus();
        } catch (UnsatisfiedLinkError e) {
            agent = "the JVMTI agent is not loaded (-agentpath:bazel-bin/bench/libvmt_jvmti_agent.so)";
        }
        boolean withJvmti = agent == null;
        if (!withJvmti) {
            progress("JVMTI rows skipped: " + agent);
        }
        if (LOG == null) {
            progress("no -Xlog:safepoint file: find_deadlocks rows without HotSpot's own times");
        }
        // Sized for the suite's budgets on a loaded 2-CPU machine (default: about 30 s per
        // JDK): a sample that stops every thread takes 0.1-4 ms at 10,000 threads, and with
        // running threads competing for the CPUs a sample takes milliseconds.
        int samples = quick ? 200 : 1000;
        int warmup = quick ? 50 : 200;
        int contended = quick ? 20 : 50;
        int crowded = quick ? 0 : 200; // samples at 10,000 idle threads
        int maxRunning = quick ? 1 : 2;
        int[] idleLevels = quick ? new int[] {0, 1000} : new int[] {0, 1000, 10000};
        progress("java " + System.getProperty("java.version") + ", " + System.getProperty("java.vm.name") + " "
                + JVM_VERSION + ", " + Runtime.getRuntime().availableProcessors() + " cpus, "
                + (quick ? "quick" : "default") + " mode");

        IdlePool pool = new IdlePool();
        for (int idle : idleLevels) {
            if (!pool.growTo(idle)) {
                break;
            }
            int n = idle >= 10000 ? crowded : samples;
            stackAndSuspend(withJvmti, idle, 0, idle >= 10000 ? warmup / 4 : warmup, n);
            findDeadlocks(idle, 0, idle >= 10000 ? warmup / 4 : warmup, n);
            if (idle == 0) {
                for (int running = 1; running <= maxRunning; running++) {
                    stackAndSuspend(withJvmti, idle, running, warmup / 4, contended);
                    findDeadlocks(idle, running, warmup / 4, contended);
                }
            }
        }
        pool.close();
        finish();
        progress(String.format("done in %.1f s (blackhole %d)", elapsed(), blackhole & 1));
    }
}
