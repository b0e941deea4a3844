#!/usr/bin/env python3
"""doc_figures_test.py: tests of the doc figure rewriter (scripts/doc_figures.py).

The run is a fixture (scripts/testdata/doc_figures_run: nine rows in the shape scripts/bench
writes, a machine.json, a report.md heading), not a measurement. Each test writes docs into a
temporary directory and runs the script's rewrite, --check and --lint on them; the last one
lints the project's own docs/*.md, so a marker there that no longer parses fails the suite.
Prints "N passed, M failed" like every script test.
"""
import io
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import doc_figures as df  # noqa: E402
import script_test  # noqa: E402

RUN = os.path.join(HERE, "testdata", "doc_figures_run")
DOCS = os.path.join(os.path.dirname(HERE), "docs")


class Docs(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, text, name="a.md"):
        with open(os.path.join(self.dir, name), "w", encoding="utf-8") as f:
            f.write(text)

    def read(self, name="a.md"):
        with open(os.path.join(self.dir, name), encoding="utf-8") as f:
            return f.read()

    def main(self, *args):
        """(exit status, printed text) of the script on the temporary docs."""
        buf = io.StringIO()
        with redirect_stdout(buf):
            rc = df.main(list(args) + ["--docs", self.dir])
        return rc, buf.getvalue()

    def rewrite(self, text):
        self.write(text)
        rc, out = self.main(RUN)
        self.assertEqual(rc, 0, out)
        return self.read()


class Inline(Docs):
    def test_value_is_rewritten_in_the_tables_format(self):
        self.assertEqual(self.rewrite("a <!--fig:cpu_time/vmt_other_cpu/p50-->999 ns\n"),
                         "a <!--fig:cpu_time/vmt_other_cpu/p50-->401.0 ns\n")

    def test_punctuation_after_a_figure_is_kept(self):
        self.assertEqual(self.rewrite("<!--fig:cpu_time/vmt_other_cpu/p90-->1, then "
                                      "<!--fig:cpu_time/vmt_other_cpu/max-->1,500, end"),
                         "<!--fig:cpu_time/vmt_other_cpu/p90-->431.0, then "
                         "<!--fig:cpu_time/vmt_other_cpu/max-->2,100, end")

    def test_ratio_as_the_summary_prints_it(self):
        self.assertEqual(
            self.rewrite("<!--fig:cpu_time/vmt_other_cpu/p50 over "
                         "cpu_time/sched_other_clock/p50-->2x faster"),
            "<!--fig:cpu_time/vmt_other_cpu/p50 over cpu_time/sched_other_clock/p50-->1.03x"
            " faster")

    def test_ratio_of_ratios(self):
        # (26.0 / 8.7) / (401 / 390) = 2.906...
        text = self.rewrite("<!--fig:(management/all_ids_10000/cpu_per_thread_ns over "
                            "management/all_ids_1000/cpu_per_thread_ns) over "
                            "(cpu_time/vmt_other_cpu/p50 over cpu_time/sched_other_clock/p50)"
                            "-->1x")
        self.assertTrue(text.endswith("-->2.91x"), text)

    def test_unit_conversion(self):
        text = self.rewrite("<!--fig:hotspot_management/all_ids_10000/p50@jvm_major=25 as ms-->"
                            "9 ms")
        self.assertTrue(text.endswith("-->1.71 ms"), text)

    def test_filters_pick_one_row(self):
        text = self.rewrite(
            "<!--fig:handshake/vmt_handshake_running/p50@idle_threads=0,running_threads=0-->1;"
            "<!--fig:handshake/vmt_handshake_running/p50_delta_us@idle_threads=10000-->1;"
            "<!--fig:hotspot_management/all_ids_10000/per_thread_ns@jvm_major=17-->1")
        self.assertEqual([p.split("-->")[1] for p in text.split(";")], ["0.24", "0.19", "189.1"])

    def test_variant_with_a_slash_and_spaces(self):
        text = self.rewrite("<!--fig:monitors.handoff/monitor wait/notify round trip/p50-->1 us")
        self.assertTrue(text.endswith("-->4.90 us"), text)

    def test_run_and_machine_sentences(self):
        text = self.rewrite("From <!--fig:run-->an old run<!--/fig-->, on "
                            "<!--fig:machine-->?<!--/fig-->.")
        self.assertIn("`scripts/bench`, run doc_figures_run (vmthread b8ca017, "
                      "2026-12-02 00:28 UTC, load average 4.34 at start)<!--/fig-->", text)
        self.assertIn("AMD EPYC, 2 cores, Linux 6.18.44-fc-v669, clocksource tsc, HZ 250", text)

    def test_rewrite_is_idempotent_and_check_agrees(self):
        first = self.rewrite("<!--fig:cpu_time/vmt_other_cpu/p99-->1 and <!--fig:run-->x<!--/fig-->")
        rc, out = self.main(RUN)
        self.assertEqual((rc, self.read()), (0, first))
        rc, out = self.main("--check", RUN)
        self.assertEqual(rc, 0, out)


    def test_markers_in_code_are_text(self):
        text = ("Write `<!--fig:A over B-->` before a ratio, `<!--fig:run-->\n...<!--/fig-->`\n"
                "```\n<!--fig:no/such/row-->1\n<!-- BEGIN fig-table gone -->\n```\n"
                "and <!--fig:cpu_time/vmt_other_cpu/p50-->1 ns")
        self.assertEqual(self.rewrite(text), text.replace("-->1 ns", "-->401.0 ns"))

    def test_a_stray_backtick_hides_no_marker(self):
        self.write("a `b and <!--fig:no/such/row-->1 and `c`")
        rc, out = self.main(RUN)
        self.assertEqual(rc, 1, out)
        self.assertIn("benchmark no not in this run", out)


class Tables(Docs):
    def test_table_in_benchmarks_md_format(self):
        text = self.rewrite("x\n<!-- BEGIN fig-table cpu_time -->\nold\n<!-- END fig-table -->\ny")
        self.assertIn("<!-- BEGIN fig-table cpu_time -->\n| variant | unit | samples | min | p50 |",
                      text)
        self.assertIn("| sched_other_clock | ns | 1000 | 300.0 | 390.0 | 411.0 |", text)
        self.assertIn("| vmt_other_cpu | ns |", text)
        self.assertTrue(text.endswith("|\n<!-- END fig-table -->\ny"), text)

    def test_table_picks_variants_in_the_order_given(self):
        text = self.rewrite("<!-- BEGIN fig-table cpu_time variants=vmt_other_cpu|"
                            "sched_other_clock -->\n<!-- END fig-table -->")
        self.assertLess(text.index("| vmt_other_cpu"), text.index("| sched_other_clock"))

    def test_table_of_one_jdk(self):
        text = self.rewrite("<!-- BEGIN fig-table hotspot_management@jvm_major=17 -->\n"
                            "<!-- END fig-table -->")
        self.assertIn("1,890,960", text)
        self.assertNotIn("1,713,638", text)


class Errors(Docs):
    """A marker that cannot be resolved fails the run and leaves every doc as it was."""

    def assert_fails(self, text, message, *extra_docs):
        self.write(text)
        for name, body in extra_docs:
            self.write(body, name)
        before = {n: self.read(n) for n in os.listdir(self.dir)}
        rc, out = self.main(RUN)
        self.assertEqual(rc, 1, out)
        self.assertIn(message, out)
        self.assertIn("no doc rewritten", out)
        self.assertEqual({n: self.read(n) for n in os.listdir(self.dir)}, before)
        rc, out = self.main("--check", RUN)
        self.assertEqual(rc, 1, out)

    def test_missing_row_is_an_error_and_nothing_is_written(self):
        self.assert_fails("<!--fig:cpu_time/no_such_variant/p50-->1 ns",
                          "a.md:1: no row cpu_time/no_such_variant in this run",
                          ("b.md", "<!--fig:cpu_time/vmt_other_cpu/p50-->1 ns"))

    def test_missing_benchmark(self):
        self.assert_fails("\n<!--fig:timers/rdtsc/p50-->1", "a.md:2: benchmark timers not in")

    def test_missing_key(self):
        self.assert_fails("<!--fig:cpu_time/vmt_other_cpu/cpu_per_thread_ns-->1",
                          "has no numeric cpu_per_thread_ns")

    def test_ambiguous_row(self):
        self.assert_fails("<!--fig:hotspot_management/all_ids_10000/p50-->1",
                          "2 rows match hotspot_management/all_ids_10000")

    def test_marker_without_a_figure(self):
        self.assert_fails("<!--fig:cpu_time/vmt_other_cpu/p50--> ns", "is not followed by a figure")

    def test_span_without_end(self):
        self.assert_fails("<!--fig:run-->text", "without its <!--/fig-->")

    def test_bad_reference(self):
        self.assert_fails("<!--fig:cpu_time/p50-->1", "bad reference")

    def test_bad_expression(self):
        self.assert_fails("<!--fig:(cpu_time/vmt_other_cpu/p50 over-->1", "ends early")

    def test_unknown_unit(self):
        self.assert_fails("<!--fig:cpu_time/vmt_other_cpu/p50 as furlongs-->1", "unknown unit")

    def test_misspelt_marker(self):
        self.assert_fails("<!-- fig:cpu_time/vmt_other_cpu/p50-->1", "marker not understood")

    def test_table_of_a_missing_benchmark(self):
        self.assert_fails("<!-- BEGIN fig-table timers -->\n<!-- END fig-table -->",
                          "no rows of timers")

    def test_table_missing_variant(self):
        self.assert_fails("<!-- BEGIN fig-table cpu_time variants=vmt_other_cpu|gone -->\n"
                          "<!-- END fig-table -->", "no row cpu_time/gone")

    def test_table_mixing_jvms(self):
        self.assert_fails("<!-- BEGIN fig-table hotspot_management -->\n<!-- END fig-table -->",
                          "rows of several JVMs")

    def test_table_without_end(self):
        self.assert_fails("<!-- BEGIN fig-table cpu_time -->\n", "marker not understood")

    def test_unreadable_run(self):
        self.write("<!--fig:cpu_time/vmt_other_cpu/p50-->1")
        rc, out = self.main(os.path.join(self.dir, "no-run"))
        self.assertEqual(rc, 2)


class Publish(Docs):
    """scripts/bench --publish calls bench_driver.publish_doc_figures on the run it made."""

    def test_publish_rewrites_the_docs(self):
        import bench_driver
        self.write("<!--fig:cpu_time/vmt_other_cpu/p50-->1 ns")
        ok, lines = bench_driver.publish_doc_figures(RUN, self.dir)
        self.assertTrue(ok, lines)
        self.assertEqual(self.read(), "<!--fig:cpu_time/vmt_other_cpu/p50-->401.0 ns")

    def test_publish_reports_a_missing_row(self):
        import bench_driver
        self.write("<!--fig:cpu_time/gone/p50-->1 ns")
        ok, lines = bench_driver.publish_doc_figures(RUN, self.dir)
        self.assertFalse(ok)
        self.assertIn("no row cpu_time/gone", "\n".join(lines))
        self.assertEqual(self.read(), "<!--fig:cpu_time/gone/p50-->1 ns")

    def test_publish_reports_an_unreadable_run(self):
        import bench_driver
        ok, lines = bench_driver.publish_doc_figures(os.path.join(self.dir, "none"), self.dir)
        self.assertFalse(ok)


class Check(Docs):
    def test_stale_figure_fails_the_check(self):
        self.write("<!--fig:cpu_time/vmt_other_cpu/p50-->400.0 ns")
        rc, out = self.main("--check", RUN)
        self.assertEqual(rc, 1)
        self.assertIn("a.md:1: cpu_time/vmt_other_cpu/p50: 400.0 -> 401.0", out)
        self.assertIn("stale: a.md", out)
        self.assertEqual(self.read(), "<!--fig:cpu_time/vmt_other_cpu/p50-->400.0 ns")

    def test_lint_needs_no_run(self):
        self.write("<!--fig:any/row/p50 over other/row/p50@jvm_major=17-->1x <!--fig:run-->"
                   "r<!--/fig-->")
        rc, out = self.main("--lint")
        self.assertEqual(rc, 0, out)
        self.write("<!--fig:any/p50-->1x")
        rc, out = self.main("--lint")
        self.assertEqual(rc, 1, out)

    def test_project_docs_markers_parse(self):
        buf = io.StringIO()
        with redirect_stdout(buf):
            rc = df.main(["--lint", "--docs", DOCS])
        self.assertEqual(rc, 0, buf.getvalue())


if __name__ == "__main__":
    script_test.run(__name__)
