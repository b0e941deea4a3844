#!/usr/bin/env python3
"""bench_driver_test.py: tests of the suite driver's arithmetic (scripts/bench_driver.py).

The summary, the HotSpot comparison and the published-figures table are what people quote, so
their ratios, verdicts and "n/a" reasons are checked here on synthetic rows whose answers are
known, and the declarative tables are checked for shape (a typo there would otherwise show
only as a silent "n/a"). Prints "N passed, M failed" like every script test.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_driver as d  # noqa: E402
import script_test  # noqa: E402


def row(bench, variant, p50, unit="ns", **extra):
    r = {"bench": bench, "variant": variant, "unit": unit, "samples": 100, "mean": p50,
         "p50": p50, "p90": p50, "p99": p50, "p999": p50 * 2, "p9999": p50 * 2,
         "max": p50 * 3}
    r.update(extra)
    return r


def summary_line(rows, label_start):
    found = [s for s in d.headline(rows) if s[0].startswith(label_start)]
    assert len(found) == 1, (label_start, found)
    return found[0]


class Tables(unittest.TestCase):
    def test_ratio_specs_are_well_formed(self):
        for label, num, den, op, limit, source in d.HEADLINE_RATIOS:
            for side in (num, den):
                self.assertIn(len(side), (3, 4), label)
                self.assertIn(side[2], d.STAT_NAMES, label)
            self.assertIn(op, (">=", "<=", None), label)
            self.assertEqual(op is None, limit is None, label)
            self.assertTrue(source.startswith("#"), label)

    def test_every_issue_threshold_has_a_line(self):
        wanted = {("cpu_time", ">=", 20), ("cpu_time", ">=", 10), ("cpu_time", "<=", 1.6),
                  ("cpu_time", "<=", 1.0), ("cpu_time", "<=", 1.2), ("timers", ">=", 1.4),
                  ("timers", "<=", 3), ("thread_start", ">=", 1.2),
                  ("thread_start", "<=", 1.15), ("thread_start", "<=", 1.10),
                  ("monitors.uncontended", "<=", 1.3), ("monitors.uncontended", "<=", 1.05),
                  ("management", "<=", 1.3), ("management", ">=", 15),
                  ("management", "<=", 1.1),
                  ("wake", "<=", 1.1), ("wake", "<=", 1.2), ("wake", "<=", 1.0),
                  ("monitors.contended", "<=", 1.0), ("monitors.uncontended", "<=", 1.0),
                  ("monitors.handoff", "<=", 1.0)}
        have = {(num[0], op, limit) for _, num, _, op, limit, _ in d.HEADLINE_RATIOS}
        self.assertLessEqual(wanted, have)
        # #3's drift bound and #15's overshoot bounds are single values, not ratios.
        values = {(ref[0], ref[2], op, limit) for _, ref, op, limit, _ in d.HEADLINE_VALUES}
        self.assertLessEqual({("timers", "drift_ppm", "<", 50),
                              ("wake.timed", "overshoot_p50_us", "<=", 20),
                              ("wake.timed", "overshoot_p99_us", "<=", 100)}, values)

        for variant, limit in (("accuracy_4ms", 1), ("accuracy_10ms", 1), ("accuracy_20ms", 1),
                               ("overhead_10ms", 100.5), ("overhead_4ms", 101),
                               ("arm_10000", 50)):
            self.assertIn(("profiler", variant, "<", limit),
                          {(ref[0], ref[1], op, limit) for _, ref, op, limit, _ in
                           d.HEADLINE_VALUES})

    def test_value_specs_are_well_formed(self):
        for label, ref, op, limit, source in d.HEADLINE_VALUES:
            self.assertIn(len(ref), (3, 4), label)
            self.assertIn(op, ("<", "<=", None), label)
            self.assertEqual(op is None, limit is None, label)
            self.assertTrue(source.startswith("#"), label)

    def test_comparison_specs_are_well_formed(self):
        for method, vside, hside in d.HOTSPOT_COMPARISON:
            for side in (vside, hside):
                self.assertIn(len(side), (2, 3), method)
                self.assertTrue(all(isinstance(x, str) for x in side[:2]), method)
            self.assertTrue(hside[0].startswith("hotspot"), method)


class Headline(unittest.TestCase):
    def test_pass_and_miss_against_the_threshold(self):
        rows = [row("cpu_time", "proc_stat", 4000), row("cpu_time", "vmt_user_fast", 200)]
        label, value, wanted, verdict, _ = summary_line(rows, "cpu_time: /proc parse / vmthread "
                                                        "fast user time, p50")
        self.assertEqual((verdict, wanted), ("PASS", ">= 20x"))
        self.assertTrue(value.startswith("20.0x"), value)
        rows[0]["p50"] = 3990
        self.assertEqual(summary_line(rows, "cpu_time: /proc parse / vmthread fast user time, "
                                      "p50")[3], "MISS")

    def test_live_thread_growth_is_a_ratio_of_growths(self):
        rows = [row("thread_start", "vmthread_over_pthread_10000_live", 1.5, unit="x"),
                row("thread_start", "vmthread_over_pthread_10_live", 1.4, unit="x")]
        line = summary_line(rows, "thread_start: start+join growth from 10 to 10,000")
        self.assertEqual((line[2], line[3], line[4]), ("<= 1.10x", "PASS", "#12"))
        rows[0]["p50"] = 1.55
        self.assertEqual(summary_line(rows, "thread_start: start+join growth")[3], "MISS")

    def test_upper_bound(self):
        rows = [row("thread_start", "vmthread", 46), row("thread_start", "pthread", 40)]
        self.assertEqual(summary_line(rows, "thread_start: vmthread start / raw")[3], "PASS")
        rows[0]["p50"] = 46.5
        self.assertEqual(summary_line(rows, "thread_start: vmthread start / raw")[3], "MISS")

    def test_the_statistic_named_is_the_one_used(self):
        # p99.9 line: row() puts p999 at 2 x p50 for both, so the ratio equals the p50 ratio.
        rows = [row("cpu_time", "proc_stat", 1000), row("cpu_time", "vmt_user_fast", 200)]
        rows[0]["p999"] = 30000
        line = summary_line(rows, "cpu_time: /proc parse / vmthread fast user time, p99.9")
        self.assertTrue(line[1].startswith("75.0x"), line)

    def test_missing_benchmark_is_na_not_failure(self):
        line = summary_line([], "monitors: uncontended enter+exit")
        self.assertEqual(line[3], "n/a")
        self.assertIn("benchmark monitors.uncontended not in this run", line[1])

    def test_missing_variant_names_the_row(self):
        rows = [row("cpu_time", "proc_stat", 4000)]
        line = summary_line(rows, "cpu_time: /proc parse / vmthread fast user time, p50")
        self.assertEqual(line[3], "n/a")
        self.assertIn("no row cpu_time/vmt_user_fast", line[1])

    def test_units_must_match(self):
        rows = [row("cpu_time", "proc_stat", 4, unit="us"), row("cpu_time", "vmt_user_fast", 200)]
        line = summary_line(rows, "cpu_time: /proc parse / vmthread fast user time, p50")
        self.assertEqual(line[3], "n/a")
        self.assertIn("units differ", line[1])

    def test_two_matching_rows_are_ambiguous(self):
        rows = [row("thread_start", "vmthread", 40, unit="us/thread", threads=1),
                row("thread_start", "vmthread", 50, unit="us/thread", threads=2),
                row("thread_start", "pthread", 40, unit="us/thread")]
        line = summary_line(rows, "thread_start: vmthread start / raw")
        self.assertEqual(line[3], "n/a")
        self.assertIn("2 rows match", line[1])

    def test_where_filter_picks_one_row(self):
        rows = [row("x", "v", 10, threads=1), row("x", "v", 30, threads=2), row("x", "w", 10)]
        self.assertEqual(d.lookup(rows, ("x", "v", "p50", {"threads": 2}))[0], 30)

    def test_zero_denominator_is_na(self):
        rows = [row("cpu_time", "proc_stat", 4000), row("cpu_time", "vmt_user_fast", 0)]
        line = summary_line(rows, "cpu_time: /proc parse / vmthread fast user time, p50")
        self.assertEqual(line[3], "n/a")

    def test_value_check_uses_magnitude(self):
        rows = [row("timers", "vmt_counter", 10, drift_ppm=-60.0)]
        line = summary_line(rows, "timers: TSC counter drift")
        self.assertEqual(line[3], "MISS")
        rows[0]["drift_ppm"] = -49.0
        self.assertEqual(summary_line(rows, "timers: TSC counter drift")[3], "PASS")
        rows[0]["drift_ppm"] = 50.0  # #3: "stays under 50 ppm"
        self.assertEqual(summary_line(rows, "timers: TSC counter drift")[3], "MISS")


class PerJdk(unittest.TestCase):
    # What the driver passes: the primary JDK's rows (17 here) and every JDK's.
    C = [row("wake", "futex_wake", 5.0, unit="us"), row("wake", "vmt_unpark", 5.4, unit="us")]
    HS17 = [row("hotspot_wake", "unpark", 4.0, unit="us", jvm="17.0.15+6-Debian-1deb12u1"),
            row("hotspot_wake", "interrupt_sleep", 10.0, unit="us",
                jvm="17.0.15+6-Debian-1deb12u1")]
    HS25 = [row("hotspot_wake", "unpark", 6.0, unit="us", jvm="25.0.3+9-LTS"),
            row("hotspot_wake", "interrupt_sleep", 15.0, unit="us", jvm="25.0.3+9-LTS")]

    def line(self, label, primary, every):
        found = [s for s in d.headline(primary, every) if s[0] == label]
        self.assertEqual(len(found), 1, label)
        return found[0]

    def test_jvm_major_picks_that_jdks_row(self):
        primary, every = self.C + self.HS17, self.C + self.HS17 + self.HS25
        l17 = self.line("wake: vmt_unpark / HotSpot 17 unpark, p50", primary, every)
        l25 = self.line("wake: vmt_unpark / HotSpot 25 unpark, p50", primary, every)
        self.assertEqual((l17[1][:5], l17[3]), ("1.35x", "MISS"))
        self.assertEqual((l25[1][:5], l25[3]), ("0.90x", "PASS"))
        report = self.line("wake: HotSpot 25 interrupt -> Thread.sleep throws / futex wake "
                           "floor, p50", primary, every)
        self.assertEqual((report[1][:5], report[2], report[3]), ("3.00x", "-", "report"))

    def test_a_jdk_not_in_the_run_is_na_and_named(self):
        line = self.line("wake: vmt_unpark / HotSpot 25 unpark, p50", self.C + self.HS17,
                         self.C + self.HS17)
        self.assertEqual(line[3], "n/a")
        self.assertIn("no row hotspot_wake/unpark (jvm_major=25)", line[1])

    def test_jvm_major_parses_the_version(self):
        self.assertEqual(d.jvm_major({"jvm": "25.0.3+9-LTS"}), 25)
        self.assertEqual(d.jvm_major({"jvm": "17.0.15+6-Debian-1deb12u1"}), 17)
        self.assertIsNone(d.jvm_major({}))

    def test_report_only_value(self):
        rows = [row("wake.timed", "nanosleep_1ms", 1083.0, unit="us", overshoot_p50_us=83.0)]
        line = self.line("wake.timed: nanosleep, default timer slack overshoot of 1 ms, p50 (us)",
                         rows, rows)
        self.assertEqual(line[1:4], ("83", "-", "report"))

    def test_comparison_side_may_pick_a_row(self):
        rows = [row("wake", "vmt_unpark", 2.0, unit="us"),
                row("hotspot_wake", "unpark", 4.0, unit="us", idle_threads=0),
                row("hotspot_wake", "unpark", 8.0, unit="us", idle_threads=1000)]
        saved = d.HOTSPOT_COMPARISON
        try:
            d.HOTSPOT_COMPARISON = [("m", ("wake", "vmt_unpark"),
                                     ("hotspot_wake", "unpark", {"idle_threads": 1000}))]
            self.assertEqual(d.comparison(rows)[0][0][5], "4.00x")
            d.HOTSPOT_COMPARISON = [("m", ("wake", "vmt_unpark"), ("hotspot_wake", "unpark"))]
            table, notes = d.comparison(rows)
            self.assertEqual(table[0][5], "n/a")
            self.assertIn("2 rows match hotspot_wake/unpark", notes[0])
        finally:
            d.HOTSPOT_COMPARISON = saved


def growth_row(variant, p50, rounds=7, small=1000, large=10000):
    return row("management", variant, p50, unit="x", rounds=rounds, small=small, large=large)


class Growth(unittest.TestCase):
    def test_clock_calls_are_read_net_of_their_floor(self):
        rows = [growth_row("growth_cpu_time_sweep_net_of_raw_clock_sweep", 1.04),
                growth_row("growth_cpu_time_sweep", 1.65),
                growth_row("growth_raw_clock_sweep", 1.58)]
        line = summary_line(rows, "management: cpu_time_sweep per thread, 10,000 / 1000 "
                            "threads, net of raw_clock_sweep")
        self.assertEqual((line[2], line[3]), ("<= 1.10x", "PASS"))
        self.assertTrue(line[1].startswith("1.04x (median of 7 paired rounds; raw: "
                                           "cpu_time_sweep 1.65x, raw_clock_sweep 1.58x"),
                        line[1])
        rows[0]["p50"] = 1.27
        self.assertEqual(summary_line(rows, "management: cpu_time_sweep per thread, 10,000 / "
                                      "1000 threads, net")[3], "MISS")
        raw = summary_line(rows, "management: cpu_time_sweep per thread, 10,000 / 1000 threads "
                           "(raw)")
        self.assertEqual((raw[1][:5], raw[3]), ("1.65x", "report"))
        floor = summary_line(rows, "management: raw_clock_sweep per thread, 10,000 / 1000 "
                             "threads (raw)")
        self.assertEqual((floor[1][:5], floor[3]), ("1.58x", "report"))

    def test_every_call_with_a_floor_is_held_net_of_the_floor_the_benchmark_measures(self):
        floors = dict(d.MANAGEMENT_FLOORS)
        self.assertEqual(floors["dump"], "dump_floor")
        self.assertEqual(floors["thread_info_all_stacks"], "walk_floor")
        self.assertEqual(floors["allocated_bytes_all"], "alloc_counter_floor")
        # bench/management.c emits one growth_<call>_net_of_<floor> row per pair listed here.
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench",
                               "management.c")) as f:
            src = f.read()
        for call, floor in d.MANAGEMENT_FLOORS:
            self.assertIn('{"%s", "%s"}' % (call, floor), src)

    def test_plain_calls_are_held_to_flat_and_missing_rows_are_na(self):
        rows = [growth_row("growth_all_ids", 1.05)]
        line = summary_line(rows, "management: all_ids per thread")
        self.assertEqual((line[1], line[2], line[3]),
                         ("1.05x (median of 7 paired rounds)", "<= 1.10x", "PASS"))
        rows[0]["p50"] = 1.2
        self.assertEqual(summary_line(rows, "management: all_ids per thread")[3], "MISS")
        line = summary_line([growth_row("growth_deadlock_scan", 1.0)],
                            "management: all_ids per thread")
        self.assertEqual(line[3], "n/a")
        self.assertIn("no row management/growth_all_ids", line[1])
        # a row of other sizes is not this threshold's
        line = summary_line([growth_row("growth_all_ids", 1.0, small=100)],
                            "management: all_ids per thread")
        self.assertEqual(line[3], "n/a")
        self.assertIn("of 100 to 10000 threads", line[1])
        line = summary_line(rows, "management: dump per thread, 10,000 / 1000 threads, net")
        self.assertEqual(line[3], "n/a")


class HotSpotThresholds(unittest.TestCase):
    JDKS = [{"label": "hotspot", "name": "OpenJDK 64-Bit Server VM 17.0.15+6"},
            {"label": "hotspot-jdk25", "name": "OpenJDK 64-Bit Server VM 25.0.3+9-LTS"}]

    def lines(self, c_rows, jdk_rows):
        return {l[0]: l for l in d.hotspot_summary(c_rows, jdk_rows)}

    def test_every_call_of_every_jdk_has_a_line_with_the_smallest_ratio(self):
        c_rows = [row("management", "thread_info_all_stacks_%d" % n, 100.0)
                  for n in d.MANAGEMENT_SIZES]
        hs17 = [row("hotspot_management", "thread_info_all_stacks_%d" % n, 100.0 * r,
                    jvm="17.0.15")
                for n, r in zip(d.MANAGEMENT_SIZES, (9, 6, 7, 8))]
        hs25 = [row("hotspot_management", "thread_info_all_stacks_%d" % n, 100.0 * r,
                    jvm="25.0.3")
                for n, r in zip(d.MANAGEMENT_SIZES, (9, 4, 7, 8))]
        lines = self.lines(c_rows, [(self.JDKS[0], hs17), (self.JDKS[1], hs25)])
        self.assertEqual(len(lines), 4 * len(d.MANAGEMENT_PAIRS))
        growth = lines["vs HotSpot 25: getThreadInfo(ids, MAX) per thread, 10,000 / 1000 "
                       "threads, HotSpot's own"]
        self.assertEqual((growth[1], growth[3]), ("0.11x (p50 per thread)", "report"))
        growth = lines["vs HotSpot 17: getAllThreadIds() per thread, 10,000 / 1000 threads, "
                       "HotSpot's own"]
        self.assertEqual(growth[3], "n/a")
        l17 = lines["vs HotSpot 17: getThreadInfo(ids, MAX), HotSpot / vmthread p50, every "
                    "thread count"]
        self.assertEqual((l17[2], l17[3]), (">= 5x", "PASS"))
        self.assertTrue(l17[1].startswith("6.00x at 100 threads"), l17[1])
        l25 = lines["vs HotSpot 25: getThreadInfo(ids, MAX), HotSpot / vmthread p50, every "
                    "thread count"]
        self.assertEqual(l25[3], "MISS")
        other = lines["vs HotSpot 17: getAllThreadIds(), HotSpot / vmthread p50, every thread "
                      "count"]
        self.assertEqual((other[2], other[3]), (">= 1x", "n/a"))

    def test_a_thread_count_one_side_lacks_is_named(self):
        c_rows = [row("management", "dump_%d" % n, 10.0) for n in d.MANAGEMENT_SIZES]
        hs = [row("hotspot_management", "dump_%d" % n, 100.0) for n in (1, 100, 1000)]
        line = self.lines(c_rows, [(self.JDKS[0], hs)])[
            "vs HotSpot 17: text dump (Thread.print -l), HotSpot / vmthread p50, every thread "
            "count"]
        self.assertEqual(line[3], "PASS")
        self.assertTrue(line[1].endswith("not measured at 10,000"), line[1])

    def test_the_pairs_are_in_the_comparison(self):
        methods = [m for m, _, _ in d.HOTSPOT_COMPARISON]
        self.assertEqual(len(methods), len(set(methods)))
        pairs = {(v[1], h[1]) for _, v, h in d.HOTSPOT_COMPARISON}
        for _, op, limit in d.MANAGEMENT_PAIRS:
            self.assertIn(limit, (1.0, 5.0))
            for n in d.MANAGEMENT_SIZES:
                self.assertIn(("%s_%d" % (op, n), "%s_%d" % (op, n)), pairs)


class Comparison(unittest.TestCase):
    def test_ratio_is_hotspot_over_vmthread(self):
        rows = [row("cpu_time", "vmt_user_consistent", 300), row("hotspot", "current_user_time",
                                                                 6000)]
        table, notes = d.comparison(rows)
        line = [t for t in table if t[1] == "cpu_time/vmt_user_consistent"][0]
        self.assertEqual((line[3], line[4], line[5]), ("300", "6,000", "20.0x"))
        self.assertTrue(any("benchmark timers not in this run" in n for n in notes))

    def test_no_tail_ratio_from_few_samples(self):
        rows = [row("thread_start", "vmthread", 40.0, unit="us/thread"),
                row("hotspot_thread_start", "start_join_1000", 120.0, unit="us/thread")]
        line = [t for t in d.comparison(rows)[0] if t[1] == "thread_start/vmthread"][0]
        self.assertEqual(line[5], "3.00x")
        self.assertEqual(line[8], "3.00x")   # p99: row() has 100 samples
        self.assertEqual(line[11], "- (< 1000 samples)")

    def test_published_converts_units(self):
        rows = [row("thread_start", "handshake", 60.0, unit="us/thread", csw=30.0),
                row("thread_start", "vmthread", 30.0, unit="us/thread", csw=15.0)]
        table = {t[0]: t for t in d.published(rows)}
        self.assertEqual(table["1000 thread starts"][3], "0.06 -> 0.03 s (2.00x)")
        self.assertEqual(table["context switches, 1000 starts"][3],
                         "30,000 -> 15,000 (2.00x)")
        self.assertIn("n/a", table["getCurrentThreadUserTime, p50"][3])


class JavaPrograms(unittest.TestCase):
    def test_finds_bench_classes_and_their_directives(self):
        with tempfile.TemporaryDirectory() as tmp:
            files = {
                "BenchSupport.java": "// shared code, not a benchmark\n",
                "ZedBench.java": "// Zed\n// bench-jvm-args: -Xlog:safepoint -agentpath:{bin}/a.so\n"
                                 "// bench-build: //bench:agent\npackage vmtbench;\n"
                                 "// bench-jvm-args: -Xignored-after-the-header\n",
                "HotSpotBench.java": "package vmtbench;\n",
                "AlphaBench.java": "// bench-jvm-args: -Xss1m\n",
            }
            for name, text in files.items():
                with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                    f.write(text)
            found = d.java_benchmarks(tmp)
        self.assertEqual([c["name"] for c in found], ["HotSpotBench", "AlphaBench", "ZedBench"])
        self.assertEqual(found[0]["jvm_args"], [])
        self.assertEqual(found[1]["jvm_args"], ["-Xss1m"])
        self.assertEqual(found[2]["jvm_args"], ["-Xlog:safepoint", "-agentpath:{bin}/a.so"])
        self.assertEqual(found[2]["build"], ["//bench:agent"])
        self.assertEqual(d.expand("-agentpath:{bin}/a.so", {"{bin}": "/b"}), "-agentpath:/b/a.so")

    @unittest.skipUnless(shutil.which("javac") and shutil.which("java"), "no JDK on PATH")
    def test_java_percentiles_are_the_c_harness_ranks(self):
        # bench/harness.c's nearest rank: p99.9 of 1000 samples is the 999th, not the maximum
        # (ceil(99.9 / 100.0 * 1000) is 1000 in binary floating point).
        probe = ("package vmtbench; public final class RankProbe { public static void main(String[] a) {"
                 " long[] s = new long[1000]; for (int i = 0; i < s.length; i++) s[i] = i + 1;"
                 " long[] t = new long[10000]; for (int i = 0; i < t.length; i++) t[i] = i + 1;"
                 " System.out.println(BenchSupport.nearestRank(s, 50) + \" \" + BenchSupport.nearestRank(s, 99.9)"
                 " + \" \" + BenchSupport.nearestRank(t, 99.99) + \" \" + BenchSupport.nearestRank(s, 100)); } }")
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "RankProbe.java"), "w", encoding="utf-8") as f:
                f.write(probe)
            subprocess.run(["javac", "-d", tmp, os.path.join(tmp, "RankProbe.java"),
                            os.path.join(d.JAVA_DIR, "BenchSupport.java")], check=True)
            # -XX:-UsePerfData: in Bazel's sandbox (a PID namespace per test, one /tmp) another
            # test's JVM may have this JVM's pid and hold /tmp/hsperfdata_<user>/<pid>; HotSpot
            # then prints a warning on stdout, which is what this test reads.
            out = subprocess.run(["java", "-XX:-UsePerfData", "-cp", tmp, "vmtbench.RankProbe"],
                                 check=True,
                                 capture_output=True, text=True).stdout.split()
        self.assertEqual(out, ["500", "999", "9999", "1000"])

    def test_the_repository_has_hotspotbench_first(self):
        self.assertEqual(d.java_benchmarks()[0]["name"], "HotSpotBench")


if __name__ == "__main__":
    script_test.run(__name__)
