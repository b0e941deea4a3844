// WakeBench: how fast HotSpot wakes a blocked thread, and how long a 1 ms timed block really
// lasts (issue #15's HotSpot side; the C floors are //bench:wake, with the same definitions).
//
// A wake-up latency is the time from the waker's action (System.nanoTime just before the
// call) to the woken thread's first instruction after its blocking call returned (nanoTime
// there). bench hotspot_wake, unit us:
//   interrupt_sleep  Thread.interrupt()            -> Thread.sleep throws InterruptedException
//   interrupt_park   Thread.interrupt()            -> LockSupport.park returns
//   interrupt_wait   Thread.interrupt()            -> Object.wait throws (monitor re-entered)
//   interrupt_join   Thread.interrupt()            -> Thread.join throws
//   unpark           LockSupport.unpark()          -> park returns
//   notify           Object.notify(), then exit    -> wait returns (monitor re-entered)
//   exit_join        a thread's last statement     -> join() of it returns
// bench hotspot_wake.timed, unit us: the actual duration of Thread.sleep(1) (sleep_1ms),
// Object.wait(1) (wait_1ms), LockSupport.parkNanos(1_000_000) (park_nanos_1ms) and join(1)
// of a thread that stays alive (join_1ms); extra keys requested_us (1000), overshoot_p50_us
// and overshoot_p99_us (the percentile minus the 1 ms asked for).
//
// The rows they pair with (bench/wake.c): wake/vmt_unpark, vmt_notify, vmt_exit_join,
// vmt_interrupt_sleep, _park, _wait, _join; wake.timed/vmt_sleep_1ms, vmt_park_1ms,
// vmt_wait_1ms, vmt_join_1ms; and the floors futex_wake, condvar_signal,
// pthread_kill_nanosleep, pthread_exit_join, nanosleep_1ms.
//
// Method, per sample: the waiter announces (a volatile write just before its blocking call);
// the waker waits for the announcement, then lets SETTLE_NS more pass (yielding its CPU, in
// case load from elsewhere put both threads on one) so that the waiter is asleep in the kernel
// and its CPU idle, as in real use, then acts. The variants are interleaved sample by sample
// in a rotating order. One waiter thread serves every wake-up variant (between rounds it
// waits on a monitor of its own); for exit_join a thread is started per sample (not timed)
// and the main thread joins it.
//
//   java -cp OUT vmtbench.WakeBench [--quick] [--json]

package vmtbench;

import java.util.concurrent.locks.LockSupport;

import static vmtbench.BenchSupport.*;

public final class WakeBench {
    /** Same as bench/wake.c: long enough for the waiter to block in the kernel, 50 us. */
    static final long SETTLE_NS = 50_000;
    static final long STACK = 256 * 1024;
    static final String[] WAKE = {"interrupt_sleep", "interrupt_park", "interrupt_wait", "interrupt_join",
        "unpark", "notify"};
    static final String[] TIMED = {"sleep_1ms", "wait_1ms", "park_nanos_1ms", "join_1ms"};


    /**
     * Lets SETTLE_NS pass, yielding the CPU: a waiter that load from elsewhere put on this CPU
     * gets to block in the kernel (a pure spin would hold it off for a time slice).
     */
    static void settle() {
        long end = System.nanoTime() + SETTLE_NS;
        while (System.nanoTime() < end) {
            Thread.yield();
        }
    }

    /** A short spin, then yields: the thread this one waits for runs even on the same CPU. */
    static void pause(int i) {
        if (i < 100) {
            Thread.onSpinWait();
        } else {
            Thread.yield();
        }
    }

    /** A thread that stays alive (parked) until the end: what join() and join(1) wait for. */
    static final Thread FOREVER = new Thread(null, () -> {
        while (true) {
            LockSupport.park();
        }
    }, "wake-forever", STACK);

    /** Runs one blocking call per round, for the variant the waker names. */
    static final class Waiter extends Thread {
        final Object lock = new Object();
        final Object rounds = new Object();
        volatile int variant;
        volatile int round;     // the waker's request: a new value starts a sample
        volatile int announced; // = round just before the blocking call
        volatile int finished;  // = round once t1 is stored
        volatile long t1;
        volatile boolean flag;  // the condition unpark and notify make true

        Waiter() {
            super(null, null, "wake-waiter", STACK);
            setDaemon(true);
        }

        @Override
        public void run() {
            int seen = 0;
            while (true) {
                // Between rounds it sleeps: the timed part runs meanwhile and needs no competitor.
                synchronized (rounds) {
                    while (round == seen) {
                        try {
                            rounds.wait();
                        } catch (InterruptedException e) {
                            throw new IllegalStateException("interrupted between rounds", e);
                        }
                    }
                }
                seen = round;
                t1 = block(WAKE[variant], seen);
                finished = seen;
            }
        }

        void nextRound(int r) {
            synchronized (rounds) {
                round = r;
                rounds.notify();
            }
        }

        /** Blocks as the variant says; returns nanoTime taken right after the call returned. */
        long block(String v, int r) {
            long t;
            switch (v) {
                case "interrupt_sleep":
                    announced = r;
                    try {
                        Thread.sleep(60_000);
                    } catch (InterruptedException e) {
                        return System.nanoTime();
                    }
                    throw new IllegalStateException("sleep was not interrupted");
                case "interrupt_park":
                    announced = r;
                    do {
                        LockSupport.park();
                        t = System.nanoTime();
                    } while (!Thread.interrupted()); // a leftover permit returns at once
                    return t;
                case "interrupt_wait":
                    synchronized (lock) {
                        announced = r;
                        while (true) {
                            try {
                                lock.wait();
                            } catch (InterruptedException e) {
                                return System.nanoTime();
                            }
                        }
                    }
                case "interrupt_join":
                    announced = r;
                    try {
                        FOREVER.join();
                    } catch (InterruptedException e) {
                        return System.nanoTime();
                    }
                    throw new IllegalStateException("join returned");
                case "unpark":
                    announced = r;
                    do {
                        LockSupport.park();
                        t = System.nanoTime();
                    } while (!flag);
                    flag = false;
                    return t;
                default: // notify
                    synchronized (lock) {
                        announced = r;
                        do {
                            try {
                                lock.wait();
                            } catch (InterruptedException e) {
                                throw new IllegalStateException("interrupted", e);
                            }
                            t = System.nanoTime();
                        } while (!flag);
                        flag = false;
                        return t;
                    }
            }
        }
    }

    /** One wake-up of the waiter; returns the latency in ns. */
    static long wake(Waiter w, int variant, int r) {
        w.variant = variant;
        w.nextRound(r);
        for (int i = 0; w.announced != r; i++) {
            pause(i);
        }
        settle();
        long t0;
        switch (WAKE[variant]) {
            case "unpark":
                w.flag = true;
                t0 = System.nanoTime();
                LockSupport.unpark(w);
                break;
            case "notify":
                synchronized (w.lock) {
                    w.flag = true;
                    t0 = System.nanoTime();
                    w.lock.notify();
                }
                break;
            default: // the interrupt variants
                t0 = System.nanoTime();
                w.interrupt();
                break;
        }
        for (int i = 0; w.finished != r; i++) {
            pause(i);
        }
        return w.t1 - t0;
    }

    static volatile boolean joining;
    static volatile long exitT0;

    /** A thread's last statement -> join() returns in the main thread; latency in ns. */
    static long exitJoin() throws InterruptedException {
        joining = false;
        Thread t = new Thread(null, () -> {
            for (int i = 0; !joining; i++) {
                pause(i);
            }
            settle(); // the main thread is blocked in join by now
            exitT0 = System.nanoTime();
        }, "wake-exit", STACK);
        t.start();
        joining = true; // announced just before the blocking call, as for the waiter
        t.join();
        return System.nanoTime() - exitT0;
    }

    /** One 1 ms timed block on the calling thread; returns its duration in ns. */
    static long timed(String v, Object lock) throws InterruptedException {
        long t0 = System.nanoTime();
        switch (v) {
            case "sleep_1ms":
                Thread.sleep(1);
                break;
            case "wait_1ms":
                synchronized (lock) {
                    lock.wait(1);
                }
                break;
            case "park_nanos_1ms":
                LockSupport.parkNanos(1_000_000);
                break;
            default: // join_1ms
                FOREVER.join(1);
                break;
        }
        return System.nanoTime() - t0;
    }

    public static void main(String[] args) throws Exception {
        parseArgs(args, "vmtbench.WakeBench");
        int samples = quick ? 200 : 2000;
        int warmup = quick ? 50 : 300;
        int timedSamples = quick ? 100 : 1000; // each about 1.07 ms
        progress("java " + System.getProperty("java.version") + ", " + System.getProperty("java.vm.name") + " "
                + JVM_VERSION + ", " + (quick ? "quick" : "default") + " mode: " + samples + " wake-ups and "
                + timedSamples + " timed blocks per variant");
        FOREVER.setDaemon(true);
        FOREVER.start();
        Waiter w = new Waiter();
        w.start();

        int n = WAKE.length + 1; // the waiter's variants, then exit_join
        long[][] raw = new long[n][samples];
        int round = 0;
        for (int r = -warmup; r < samples; r++) {
            for (int k = 0; k < n; k++) {
                int v = Math.floorMod(k + r, n); // rotate: no variant always runs first
                long ns = v < WAKE.length ? wake(w, v, ++round) : exitJoin();
                if (r >= 0) {
                    raw[v][r] = ns;
                }
            }
        }
        for (int v = 0; v < n; v++) {
            emit(summarize("hotspot_wake", v < WAKE.length ? WAKE[v] : "exit_join", "us", raw[v], 1000.0));
        }

        Object lock = new Object();
        long[][] dur = new long[TIMED.length][timedSamples];
        for (int r = -warmup / 5; r < timedSamples; r++) {
            for (int k = 0; k < TIMED.length; k++) {
                int v = Math.floorMod(k + r, TIMED.length);
                long ns = timed(TIMED[v], lock);
                if (r >= 0) {
                    dur[v][r] = ns;
                }
            }
        }
        for (int v = 0; v < TIMED.length; v++) {
            Row row = summarize("hotspot_wake.timed", TIMED[v], "us", dur[v], 1000.0);
            emit(row.put("requested_us", 1000).put("overshoot_p50_us", row.p50 - 1000)
                    .put("overshoot_p99_us", row.p99 - 1000));
        }
        finish();
        progress("done");
    }
}
