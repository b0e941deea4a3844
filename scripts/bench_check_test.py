#!/usr/bin/env python3
"""bench_check_test.py: tests of the results validator (scripts/bench_check.py).

scripts/bench trusts the validator to stop a run whose JSON would mislead the summary, the
HotSpot comparison or the plots, so the validator itself must reject each kind of bad row and
accept every shape our benchmarks really print (the C harness's and HotSpotBench's lines are
copied below in their exact formats). Run by `scripts/test` as //scripts:bench_check_test;
prints "N passed, M failed" like every script test.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_check  # noqa: E402
import script_test  # noqa: E402

# What bench/harness.c prints (vmtb_report, json mode): %.3f numbers, min always present.
HARNESS_LINE = ('{"bench":"cpu_time","variant":"proc_stat","unit":"ns","samples":20000,'
                '"mean":4125.310,"p50":3900.000,"p90":4500.000,"p99":6100.000,'
                '"p999":9800.000,"p9999":31000.000,"max":1030000.000,"min":3300.000}')
# What HotSpotBench.java prints: integers without a fraction, extra keys after the schema.
JAVA_LINE = ('{"bench":"hotspot","variant":"current_cpu_time","unit":"ns","samples":200000,'
             '"mean":251.5,"p50":240,"p90":262,"p99":400,"p999":1200,"p9999":9000,'
             '"max":88000,"min":210,"batch":16,"jvm":"17.0.15+6-Debian-1deb12u1"}')
# A thread-start row: p50 is the median over repeats, extras are per-thread rusage figures.
START_LINE = ('{"bench":"thread_start","variant":"vmthread","unit":"us/thread","samples":30,'
              '"mean":41.2,"p50":40.0,"p90":45.0,"p99":49.0,"p999":49.0,"p9999":49.0,'
              '"max":49.0,"min":35.5,"user_us":3.1,"sys_us":30.2,"ctx_switches":17.2}')


def base_row():
    return json.loads(HARNESS_LINE)


def problems_of(row):
    _, problems = bench_check.check_line(json.dumps(row))
    return problems


class GoodLines(unittest.TestCase):
    def test_real_formats_pass(self):
        for line in (HARNESS_LINE, JAVA_LINE, START_LINE):
            row, problems = bench_check.check_line(line)
            self.assertEqual(problems, [], line)
            self.assertIsInstance(row, dict)

    def test_min_is_optional_and_extras_allowed(self):
        row = base_row()
        del row["min"]
        row["threads"] = 1000
        row["note"] = {"nested": [1, 2]}
        self.assertEqual(problems_of(row), [])

    def test_equal_percentiles_pass(self):
        row = base_row()
        for key in bench_check.PERCENTILES + ("mean", "min"):
            row[key] = 7
        self.assertEqual(problems_of(row), [])

    def test_blank_line_is_ignored(self):
        self.assertEqual(bench_check.check_line("   \n"), (None, []))


class BadLines(unittest.TestCase):
    def assertProblem(self, row_or_text, fragment):
        text = row_or_text if isinstance(row_or_text, str) else json.dumps(row_or_text)
        row, problems = bench_check.check_line(text)
        self.assertIsNone(row, text)
        self.assertTrue(any(fragment in p for p in problems),
                        "expected a problem mentioning %r, got %r" % (fragment, problems))

    def test_each_required_key_missing(self):
        for key in ("bench", "variant", "unit", "samples") + bench_check.REQUIRED_NUMBERS:
            row = base_row()
            del row[key]
            self.assertProblem(row, "missing key %r" % key)

    def test_strings_must_be_non_empty_strings(self):
        for key in ("bench", "variant", "unit"):
            for bad in ("", "  ", 3, None, ["x"]):
                row = base_row()
                row[key] = bad
                self.assertProblem(row, repr(key))

    def test_samples_must_be_a_positive_integer(self):
        for bad in (0, -5, 1.5, 20000.0, "20000", True, None):
            row = base_row()
            row["samples"] = bad
            self.assertProblem(row, "'samples'")

    def test_numbers_must_be_finite_non_negative_numbers(self):
        for key in bench_check.REQUIRED_NUMBERS + ("min",):
            for bad in ("1.0", None, True, [1], -1.0):
                row = base_row()
                row[key] = bad
                self.assertProblem(row, repr(key))

    def test_nan_and_infinity_are_not_json(self):
        for token in ("NaN", "Infinity", "-Infinity"):
            self.assertProblem(HARNESS_LINE.replace('"p99":6100.000', '"p99":' + token),
                               "not JSON")

    def test_each_percentile_inversion(self):
        for lo, hi in zip(bench_check.PERCENTILES, bench_check.PERCENTILES[1:]):
            row = base_row()
            row[lo] = row[hi] + 1
            self.assertProblem(row, "%s (" % lo)

    def test_mean_above_max(self):
        row = base_row()
        row["mean"] = row["max"] + 0.001
        self.assertProblem(row, "mean")

    def test_min_above_p50_or_mean(self):
        row = base_row()
        row["min"] = row["p50"] + 1
        self.assertProblem(row, "min")
        row = base_row()
        row["mean"] = row["min"] - 1
        self.assertProblem(row, "min")

    def test_not_an_object(self):
        self.assertProblem("[1, 2, 3]", "not a JSON object")
        self.assertProblem('"cpu_time"', "not a JSON object")

    def test_not_json(self):
        self.assertProblem("cpu_time proc_stat 3900", "not JSON")
        self.assertProblem(HARNESS_LINE[:-1], "not JSON")  # truncated line

    def test_repeated_key(self):
        self.assertProblem(HARNESS_LINE[:-1] + ',"p50":1.0}', "appears twice")


class Files(unittest.TestCase):
    def test_duplicate_rows_are_reported(self):
        rows, problems = bench_check.check_lines([HARNESS_LINE, JAVA_LINE, HARNESS_LINE], "f")
        self.assertEqual(len(rows), 3)
        self.assertEqual(len(problems), 1)
        self.assertIn("f:3: duplicate of line 1", problems[0])

    def test_same_variant_with_other_extras_is_not_a_duplicate(self):
        lines = []
        for threads in (1, 100, 1000):
            row = base_row()
            row["threads"] = threads
            lines.append(json.dumps(row))
        rows, problems = bench_check.check_lines(lines, "f")
        self.assertEqual((len(rows), problems), (3, []))

    def test_problem_names_file_and_line(self):
        _, problems = bench_check.check_lines([HARNESS_LINE, "", "{}"], "r.jsonl")
        self.assertTrue(problems)
        self.assertTrue(all(p.startswith("r.jsonl:3: ") for p in problems), problems)

    def run_cli(self, content):
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            f.write(content)
        try:
            proc = subprocess.run([sys.executable, bench_check.__file__, f.name],
                                  capture_output=True, text=True, check=False)
        finally:
            os.unlink(f.name)
        return proc.returncode, proc.stdout

    def test_cli_accepts_a_good_file(self):
        rc, out = self.run_cli("\n".join([HARNESS_LINE, JAVA_LINE, START_LINE]) + "\n")
        self.assertEqual(rc, 0, out)
        self.assertIn("3 rows, 0 problems", out)

    def test_cli_rejects_a_bad_line_among_good_ones(self):
        bad = HARNESS_LINE.replace('"samples":20000', '"samples":0')
        rc, out = self.run_cli("\n".join([HARNESS_LINE.replace("proc_stat", "x"), bad]) + "\n")
        self.assertEqual(rc, 1, out)
        self.assertIn(":2: 'samples' must be > 0", out)

    def test_cli_rejects_an_empty_file(self):
        rc, out = self.run_cli("")
        self.assertEqual(rc, 1, out)
        self.assertIn("no result rows", out)


if __name__ == "__main__":
    script_test.run(__name__)
