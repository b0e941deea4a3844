// BenchSupport: what every Java benchmark of the suite shares (bench/java/*Bench.java).
//
// A result row in the schema of bench/harness.c and scripts/bench_check.py (bench, variant,
// unit, samples, mean, nearest-rank percentiles, max, then extra keys), the summary of raw
// samples into a row, JSON output, and progress lines on stderr. scripts/bench compiles every
// file of bench/java together and runs each *Bench class with --json (and --quick in quick
// mode); a class may name the JVM options it needs in a header comment line
//   // bench-jvm-args: -Xlog:safepoint:file={run_dir}/x.log ...
// and the Bazel targets the driver must build first (an agent, a native library) in
//   // bench-build: //bench:some_target
// ({bin} is the optimised bazel-bin directory, {run_dir} the run's directory; see
// scripts/bench_driver.py).

package vmtbench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

final class BenchSupport {
    private BenchSupport() {
    }

    static final String JVM_VERSION = System.getProperty("java.vm.version", "unknown");

    /** --json: JSON lines only on stdout (progress goes to stderr). */
    static boolean json;
    /** --quick: fewer samples. */
    static boolean quick;

    /** Reads --quick and --json; anything else prints "usage: java USAGE [--quick] [--json]", exits 2. */
    static void parseArgs(String[] args, String usage) {
        for (String a : args) {
            switch (a) {
                case "--quick": quick = true; break;
                case "--json": json = true; break;
                default:
                    System.err.println("usage: java " + usage + " [--quick] [--json]");
                    System.exit(2);
            }
        }
    }

    private static final List<Row> EMITTED = new ArrayList<>();

    /** A finished row: its JSON line now with --json, else a line of the table finish() prints. */
    static void emit(Row r) {
        EMITTED.add(r);
        if (json) {
            emitJson(r);
        }
    }

    /** Without --json, the table of every row emit() got. */
    static void finish() {
        if (!json) {
            printRows(EMITTED);
        }
    }

    // Results are folded in here by the benchmarks so the JIT cannot prove a call's result
    // unused and drop it (nanoTime is an intrinsic; the MXBean calls are native).
    static volatile long blackhole;

    /** Summary of one row; values are per call (or per thread) in the row's unit. */
    static final class Row {
        String bench;
        String variant;
        String unit;
        int samples;
        double mean, p50, p90, p99, p999, p9999, max;
        Double min;
        /** Extra keys, printed after the fixed schema in insertion order. */
        final Map<String, Object> extra = new LinkedHashMap<>();

        Row put(String key, Object value) {
            extra.put(key, value);
            return this;
        }
    }

    /** Nearest-rank percentile of an ascending array: the smallest value with at least p% at or below it. */
    static long nearestRank(long[] sorted, double p) {
        // bench/harness.c's rule: ceil would turn 99.9 / 100.0 * 1000 (999.0000000000001 in
        // binary floating point) into rank 1000, the maximum, instead of the 999th sample.
        int rank = (int) (p / 100.0 * sorted.length + 0.999999);
        if (rank < 1) {
            rank = 1;
        }
        return sorted[Math.min(rank, sorted.length) - 1];
    }

    /** A row from raw samples (any order), each divided by divisor to reach the row's unit. */
    static Row summarize(String bench, String variant, String unit, long[] raw, double divisor) {
        long[] s = raw.clone();
        Arrays.sort(s);
        double sum = 0;
        for (long v : s) {
            sum += v;
        }
        Row r = new Row();
        r.bench = bench;
        r.variant = variant;
        r.unit = unit;
        r.samples = s.length;
        r.mean = sum / s.length / divisor;
        r.p50 = nearestRank(s, 50) / divisor;
        r.p90 = nearestRank(s, 90) / divisor;
        r.p99 = nearestRank(s, 99) / divisor;
        r.p999 = nearestRank(s, 99.9) / divisor;
        r.p9999 = nearestRank(s, 99.99) / divisor;
        r.max = s[s.length - 1] / divisor;
        r.min = s[0] / divisor;
        return r;
    }

    static void progress(String msg) {
        // stderr in both modes: in --json mode stdout must hold JSON lines only.
        System.err.println("# " + msg);
    }

    /** A JSON number: integers without a fraction, otherwise two decimals; never NaN. */
    static String num(double v) {
        if (Double.isNaN(v) || Double.isInfinite(v)) {
            return "0";
        }
        if (v == Math.rint(v) && Math.abs(v) < 1e15) {
            return Long.toString((long) v);
        }
        return String.format(Locale.ROOT, "%.2f", v);
    }

    static String jsonString(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    private static String jsonValue(Object v) {
        if (v instanceof Double || v instanceof Float) {
            return num(((Number) v).doubleValue());
        }
        if (v instanceof Number || v instanceof Boolean) {
            return v.toString();
        }
        return jsonString(String.valueOf(v));
    }

    /** The row as one JSON line: the fixed schema first, in its order, then the extra keys and "jvm". */
    static String toJson(Row r) {
        StringBuilder b = new StringBuilder();
        b.append("{\"bench\":").append(jsonString(r.bench));
        b.append(",\"variant\":").append(jsonString(r.variant));
        b.append(",\"unit\":").append(jsonString(r.unit));
        b.append(",\"samples\":").append(r.samples);
        b.append(",\"mean\":").append(num(r.mean));
        b.append(",\"p50\":").append(num(r.p50));
        b.append(",\"p90\":").append(num(r.p90));
        b.append(",\"p99\":").append(num(r.p99));
        b.append(",\"p999\":").append(num(r.p999));
        b.append(",\"p9999\":").append(num(r.p9999));
        b.append(",\"max\":").append(num(r.max));
        if (r.min != null) {
            b.append(",\"min\":").append(num(r.min));
        }
        for (Map.Entry<String, Object> e : r.extra.entrySet()) {
            if (e.getValue() != null) {
                b.append(',').append(jsonString(e.getKey())).append(':').append(jsonValue(e.getValue()));
            }
        }
        b.append(",\"jvm\":").append(jsonString(JVM_VERSION));
        b.append('}');
        return b.toString();
    }

    static void emitJson(Row r) {
        System.out.println(toJson(r));
    }

    /** Rows for people: one line each, the statistics in the row's unit, then the extra keys. */
    static void printRows(List<Row> rows) {
        System.out.println(String.format(Locale.ROOT, "%-22s %-30s %-5s %7s %10s %10s %10s %10s %10s %10s  %s",
                "bench", "variant", "unit", "samples", "min", "p50", "p90", "p99", "p99.9", "max", "extra"));
        for (Row r : rows) {
            StringBuilder extra = new StringBuilder();
            for (Map.Entry<String, Object> e : r.extra.entrySet()) {
                extra.append(' ').append(e.getKey()).append('=').append(e.getValue());
            }
            System.out.println(String.format(Locale.ROOT, "%-22s %-30s %-5s %7d %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %s",
                    r.bench, r.variant, r.unit, r.samples, r.min == null ? 0 : r.min, r.p50, r.p90, r.p99, r.p999,
                    r.max, extra));
        }
    }
}
