#!/usr/bin/env python3
"""safepoint_log_test.py: tests of the -Xlog:safepoint reader (scripts/safepoint_log.py).

The records are real lines that HotSpot 17.0.15 (Debian) and Temurin 25.0.3 wrote on this
machine while bench/java/VmServicesBench.java ran (2026-12-01); the two JDKs order and name
the fields differently. Prints "N passed, M failed" like every script test.
"""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_check  # noqa: E402
import safepoint_log as sl  # noqa: E402
import script_test  # noqa: E402

JDK17 = [
    '[0.242s][info][safepoint] Safepoint "ThreadDump", Time since last: 198237636 ns, '
    'Reaching safepoint: 83664 ns, Cleanup: 17556 ns, At safepoint: 3007534 ns, '
    'Total: 3108754 ns',
    '[3.334s][info][safepoint] Safepoint "FindDeadlocks", Time since last: 7918697 ns, '
    'Reaching safepoint: 3064 ns, Cleanup: 10285 ns, At safepoint: 3075 ns, Total: 16424 ns',
    '[3.334s][info][safepoint] Safepoint "FindDeadlocks", Time since last: 44055 ns, '
    'Reaching safepoint: 291 ns, Cleanup: 320 ns, At safepoint: 701 ns, Total: 1312 ns',
    '[0.309s][info][safepoint] Safepoint "FindDeadlocks", Time since last: 384930 ns, '
    'Reaching safepoint: 78086 ns, Cleanup: 440 ns, At safepoint: 3576 ns, Total: 82102 ns',
]
JDK25 = [
    '[1.608s][info][safepoint] Safepoint "FindDeadlocks", Time since last: 1566741924 ns, '
    'Reaching safepoint: 3706 ns, At safepoint: 30415 ns, Leaving safepoint: 1903 ns, '
    'Total: 36024 ns, Threads: 0 runnable, 10 total',
    '[1.608s][info][safepoint] Safepoint "FindDeadlocks", Time since last: 83784 ns, '
    'Reaching safepoint: 390 ns, At safepoint: 1623 ns, Leaving safepoint: 490 ns, '
    'Total: 2503 ns, Threads: 0 runnable, 10 total',
]


def source_row(**keys):
    r = {"bench": "hotspot_safepoint", "variant": "find_deadlocks", "unit": "us", "samples": 2,
         "mean": 1, "p50": 1, "p90": 1, "p99": 1, "p999": 1, "p9999": 1, "max": 1, "min": 1,
         "idle_threads": 0, "running_threads": 0, "xlog": "sp.log", "xlog_op": "FindDeadlocks",
         "xlog_first": 0, "xlog_count": 2, "jvm": "17.0.15+6-Debian-1deb12u1"}
    r.update(keys)
    return r


class ParseLine(unittest.TestCase):
    def test_jdk17_record(self):
        op, f = sl.parse_line(JDK17[1])
        self.assertEqual(op, "FindDeadlocks")
        self.assertEqual(f["Reaching safepoint"], 3064)
        self.assertEqual(f["Cleanup"], 10285)
        self.assertEqual(f["At safepoint"], 3075)
        self.assertEqual(f["Total"], 16424)
        self.assertNotIn("Leaving safepoint", f)

    def test_jdk25_record(self):
        op, f = sl.parse_line(JDK25[0])
        self.assertEqual(op, "FindDeadlocks")
        self.assertEqual((f["Reaching safepoint"], f["At safepoint"], f["Leaving safepoint"],
                          f["Total"]), (3706, 30415, 1903, 36024))
        self.assertEqual(f["Time since last"], 1566741924)
        # "Threads: 0 runnable, 10 total" is not a time and must not become a field.
        self.assertNotIn("Threads", f)

    def test_other_lines_are_not_records(self):
        for line in ["", "[0.1s][info][gc] Using G1", "Safepoint without quotes, Total: 1 ns",
                     '[1s][info][safepoint] Safepoint "X", Time since last: 5 ns']:
            self.assertIsNone(sl.parse_line(line), line)

    def test_records_filters_by_operation_in_order(self):
        found = sl.records(JDK17 + ["noise"], "FindDeadlocks")
        self.assertEqual([r["Total"] for r in found], [16424, 1312, 82102])
        self.assertEqual(len(sl.records(JDK17, "ThreadDump")), 1)


class DeriveRows(unittest.TestCase):
    def derive(self, lines, rows):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "sp.log"), "w", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
            return sl.derive_rows(rows, d)

    def test_three_rows_per_source_row_from_the_right_records(self):
        # Records 1 and 2 of FindDeadlocks (the ThreadDump record does not count).
        rows, problems = self.derive(JDK17, [source_row(xlog_first=1, xlog_count=2)])
        self.assertEqual(problems, [])
        by = {r["variant"]: r for r in rows}
        self.assertEqual(sorted(by), ["find_deadlocks_at", "find_deadlocks_reach",
                                      "find_deadlocks_total"])
        reach = by["find_deadlocks_reach"]
        self.assertEqual((reach["samples"], reach["min"], reach["p50"], reach["max"]),
                         (2, 0.291, 0.291, 78.086))
        self.assertEqual(by["find_deadlocks_at"]["max"], 3.576)
        total = by["find_deadlocks_total"]
        self.assertEqual((total["p50"], total["max"]), (1.312, 82.102))
        self.assertEqual(total["cleanup_p50_us"], 0.32)
        for r in rows:
            self.assertEqual(r["unit"], "us")
            self.assertEqual(r["source"], "xlog")
            self.assertEqual((r["idle_threads"], r["running_threads"], r["jvm"]),
                             (0, 0, "17.0.15+6-Debian-1deb12u1"))
            for k in sl.LOG_KEYS:
                self.assertNotIn(k, r)
            self.assertEqual(bench_check.check_row(r), [], r)

    def test_jdk25_total_carries_leaving(self):
        rows, problems = self.derive(JDK25, [source_row(jvm="25.0.3+9-LTS")])
        self.assertEqual(problems, [])
        total = [r for r in rows if r["variant"] == "find_deadlocks_total"][0]
        self.assertEqual(total["leaving_p50_us"], 0.49)
        self.assertNotIn("cleanup_p50_us", total)
        self.assertEqual(total["p50"], 2.503)

    def test_rows_without_a_log_are_left_alone(self):
        plain = source_row()
        for k in sl.LOG_KEYS:
            del plain[k]
        self.assertEqual(self.derive(JDK17, [plain]), ([], []))

    def test_too_few_records_is_a_problem(self):
        rows, problems = self.derive(JDK17, [source_row(xlog_first=2, xlog_count=2)])
        self.assertEqual(rows, [])
        self.assertEqual(len(problems), 1)
        self.assertIn("has 1 'FindDeadlocks' records from #2 on, the row needs 2", problems[0])

    def test_missing_log_is_a_problem(self):
        rows, problems = self.derive(JDK17, [source_row(xlog="other.log")])
        self.assertEqual(rows, [])
        self.assertIn("cannot read safepoint log other.log", problems[0])

    def test_bad_keys_are_a_problem(self):
        for bad in ({"xlog": "../sp.log"}, {"xlog": "/tmp/sp.log"}, {"xlog_first": -1},
                    {"xlog_count": 0}, {"xlog_count": "2"}, {"xlog_op": None},
                    # Found by safepoint_log_fuzz_test: a NUL raised ValueError from open(),
                    # and JSON true was read as 1.
                    {"xlog": "sp\x00.log"}, {"xlog_first": True}, {"xlog_count": True}):
            rows, problems = self.derive(JDK17, [source_row(**bad)])
            self.assertEqual(rows, [], bad)
            self.assertEqual(len(problems), 1, bad)
            self.assertIn("bad safepoint log keys", problems[0])

    def test_summary_per_operation(self):
        self.assertEqual(sl.summary(JDK17), [
            "ThreadDump: 1 safepoints, p50 reach 83.66 us, at 3007.53 us, total 3108.75 us",
            "FindDeadlocks: 3 safepoints, p50 reach 3.06 us, at 3.08 us, total 16.42 us"])
        self.assertEqual(len(sl.summary(JDK17, {"ThreadDump"})), 1)
        self.assertEqual(sl.summary(["noise"]), [])

    def test_nearest_rank(self):
        values = list(range(1, 1001))
        self.assertEqual(sl.nearest_rank(values, 50), 500)
        self.assertEqual(sl.nearest_rank(values, 99.9), 999)
        self.assertEqual(sl.nearest_rank([7], 99.99), 7)


if __name__ == "__main__":
    script_test.run(__name__)
