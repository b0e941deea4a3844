#!/usr/bin/env python3
"""harness_json_test.py: the C harness's JSON lines against the validator and known figures.

scripts/bench rejects a run whose rows fail scripts/bench_check.py, so every row that
bench/harness.c can print for real samples must pass it, and its statistics must be the
nearest-rank percentiles the schema promises (docs/benchmarks.md). bench/harness_emit prints
rows for sample sets whose percentiles are known; this test checks both. Prints
"N passed, M failed" like every script test.
"""
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_check  # noqa: E402
import script_test  # noqa: E402


def find_emitter():
    # Under `bazel test` the binary is a runfile next to this script's package.
    srcdir = os.environ.get("TEST_SRCDIR")
    if srcdir:
        return os.path.join(srcdir, os.environ.get("TEST_WORKSPACE", "vmthread"),
                            "bench", "harness_emit")
    return os.path.join(HERE, "..", "bazel-bin", "bench", "harness_emit")


class HarnessJson(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        proc = subprocess.run([find_emitter(), "--json"], capture_output=True, text=True,
                              check=True)
        cls.lines = proc.stdout.splitlines()
        cls.rows, cls.problems = bench_check.check_lines(cls.lines, "harness_emit")
        cls.by_variant = {r["variant"]: r for r in cls.rows}

    def test_every_line_validates(self):
        self.assertEqual(self.problems, [])
        self.assertEqual(len(self.rows), 4)
        self.assertEqual(len(self.lines), 4, "stdout must hold JSON lines only")

    def test_ramp_percentiles_are_nearest_rank(self):
        r = self.by_variant["ramp_1000"]
        self.assertEqual(r["samples"], 1000)
        self.assertEqual((r["min"], r["p50"], r["p90"], r["p99"], r["p999"], r["p9999"],
                          r["max"]), (1, 500, 900, 990, 999, 1000, 1000))
        self.assertAlmostEqual(r["mean"], 500.5, places=3)

    def test_constant_and_single(self):
        for variant, n, v in (("constant", 10000, 42.5), ("single", 1, 7)):
            r = self.by_variant[variant]
            self.assertEqual(r["samples"], n)
            for key in ("min", "mean") + bench_check.PERCENTILES:
                self.assertEqual(r[key], v, "%s %s" % (variant, key))

    def test_heavy_tail_and_extra_keys(self):
        r = self.by_variant["heavy_tail"]
        self.assertEqual((r["p50"], r["p999"], r["p9999"], r["max"]), (100, 100, 100, 1e9))
        self.assertEqual((r["threads"], r["note"]), (1000, "x"))

    def test_table_mode_prints_no_json(self):
        proc = subprocess.run([find_emitter()], capture_output=True, text=True, check=True)
        self.assertIn("ramp_1000", proc.stdout)
        self.assertNotIn("{", proc.stdout)


if __name__ == "__main__":
    script_test.run(__name__)
