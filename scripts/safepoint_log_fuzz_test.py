#!/usr/bin/env python3
"""safepoint_log_fuzz_test.py: random logs and rows for the -Xlog:safepoint reader.

A property test in the manner of Hypothesis (which is not installed here), with a fixed seed so
that a failure repeats: thousands of random logs, mixing records in the field orders and names
of JDK 17 and 25 with noise, other tags, CRLF endings, bytes that are not UTF-8 and lines cut
short, and random source rows whose log keys are sometimes hostile (paths, NUL bytes, booleans,
floats, huge or negative numbers). The reader must never raise; every record written whole is
parsed back to exactly its operation and fields; a derived row's statistics are those of the
records the row names, computed here independently; every derived row passes bench_check; a
row it cannot serve is reported as a problem, never dropped silently. VMT_FUZZ_ITERATIONS
scales the run (default 1000 logs). Prints "N passed, M failed" like every script test.
"""
import json
import os
import random
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_check  # noqa: E402
import safepoint_log as sl  # noqa: E402
import script_test  # noqa: E402

ITERATIONS = int(os.environ.get("VMT_FUZZ_ITERATIONS", "1000"))
OPS = ["FindDeadlocks", "ThreadDump", "G1CollectForAllocation", "Cleanup", "X", "a b",
       "Op\u00e9", "HandshakeAllThreads"]
JDK17 = ("Time since last", "Reaching safepoint", "Cleanup", "At safepoint", "Total")
JDK25 = ("Time since last", "Reaching safepoint", "At safepoint", "Leaving safepoint", "Total")


def record(rng, op):
    """A record line and the fields it carries (ns), in one JDK's layout."""
    names = rng.choice((JDK17, JDK25))
    fields = {n: rng.choice((0, rng.randrange(1, 10**4), rng.randrange(10**9, 10**13)))
              for n in names}
    text = ", ".join("%s: %d ns" % (n, fields[n]) for n in names)
    if names is JDK25 and rng.random() < 0.7:
        text += ", Threads: %d runnable, %d total" % (rng.randrange(9), rng.randrange(99))
    deco = rng.choice(("[%.3fs][info][safepoint] " % rng.random(), "", "[info][safepoint] ",
                       "[2026-12-01T03:01:12.345+0000][0.1s][info][safepoint   ] "))
    return '%sSafepoint "%s", %s' % (deco, op, text), fields


NOISE = ["", "[0.1s][info][gc] Using G1", "Safepoint without quotes, Total: 1 ns",
         '[1s][info][safepoint] Safepoint "X", Time since last: 5 ns',
         '[1s][info][safepoint] Safepoint "Y", Reaching safepoint: -3 ns, At safepoint: 1 ns, '
         'Total: 2 ns', "\x00\x01garbage \ufffd", '[1s] Safepoint "Z" Total: 1 ns']


def random_log(rng):
    """(lines as written, {op: [fields of each whole record, in order]})."""
    lines, expected = [], {}
    for _ in range(rng.randrange(0, 40)):
        roll = rng.random()
        if roll < 0.6:
            op = rng.choice(OPS)
            line, fields = record(rng, op)
            expected.setdefault(op, []).append(fields)
            lines.append(line)
        elif roll < 0.8:
            lines.append(rng.choice(NOISE))
        else:
            line, _ = record(rng, rng.choice(OPS))
            lines.append(line[:rng.randrange(len(line))] + "\u00ff\ud7ff")   # cut short
            if sl.parse_line(lines[-1]) is not None:   # a cut that still reads whole counts
                op, fields = sl.parse_line(lines[-1])
                expected.setdefault(op, []).append(fields)
    return lines, expected


HOSTILE = [None, True, False, -1, 0, 2**63, 1.5, "", ".", "..", "../sp.log", "/tmp/sp.log",
           "a\x00b", "sp.log\n", [], {}, "x" * 300, "sp.log\x00"]


def source_row(rng):
    """A row of valid keys (every other one), or with one key hostile."""
    row = {"bench": "hotspot_safepoint", "variant": "v%d" % rng.randrange(5), "unit": "us",
           "samples": 1, "mean": 1, "p50": 1, "p90": 1, "p99": 1, "p999": 1, "p9999": 1,
           "max": 1, "min": 1, "jvm": "17", "idle_threads": rng.randrange(3),
           "xlog": "sp.log", "xlog_op": rng.choice(OPS), "xlog_first": rng.randrange(0, 4),
           "xlog_count": rng.randrange(1, 4)}
    if rng.random() < 0.5:
        row[rng.choice(sl.LOG_KEYS)] = rng.choice(HOSTILE)
    return row


def valid_keys(row):
    first, count = row["xlog_first"], row["xlog_count"]
    return (row["xlog"] == "sp.log" and isinstance(row["xlog_op"], str)
            and type(first) is int and type(count) is int and first >= 0 and count > 0)


class RandomLogs(unittest.TestCase):
    def test_records_parse_back_and_rows_derive_from_the_right_ones(self):
        rng = random.Random(20261201)
        derived_total = problems_total = 0
        with tempfile.TemporaryDirectory() as d:
            for it in range(ITERATIONS):
                lines, expected = random_log(rng)
                crlf = rng.random() < 0.2
                data = ("\r\n" if crlf else "\n").join(lines).encode("utf-8", "surrogatepass")
                if rng.random() < 0.2:
                    data += b"\xff\xfe\xc3"   # not UTF-8: read with errors="replace"
                with open(os.path.join(d, "sp.log"), "wb") as f:
                    f.write(data)
                with open(os.path.join(d, "sp.log"), encoding="utf-8", errors="replace") as f:
                    read = f.readlines()
                for op in OPS:
                    self.assertEqual(sl.records(read, op), expected.get(op, []),
                                     "iteration %d, op %r" % (it, op))
                sl.summary(read)
                sl.summary(read, set(rng.sample(OPS, 2)))
                rows = [source_row(rng) for _ in range(rng.randrange(1, 4))]
                try:
                    derived, problems = sl.derive_rows(rows, d)
                except Exception as e:   # noqa: BLE001: any exception is the failure
                    self.fail("iteration %d: derive_rows raised %r for rows %s"
                              % (it, e, json.dumps(rows)[:400]))
                derived_total += len(derived)
                problems_total += len(problems)
                self.check(rows, derived, problems, expected, it)
        print("%d logs: %d rows derived, %d problems reported" % (ITERATIONS, derived_total,
                                                                   problems_total))
        self.assertGreater(derived_total, 0)
        self.assertGreater(problems_total, 0)

    def check(self, rows, derived, problems, expected, it):
        """Each source row: three rows with the right statistics, or exactly one problem."""
        at = 0
        served = 0
        for src in rows:
            if not valid_keys(src):
                continue
            found = expected.get(src["xlog_op"], [])
            chosen = found[src["xlog_first"]:src["xlog_first"] + src["xlog_count"]]
            if len(chosen) != src["xlog_count"]:
                continue
            served += 1
            mine = derived[at:at + 3]
            at += 3
            self.assertEqual([r["variant"] for r in mine],
                             [src["variant"] + "_" + p for p, _ in sl.PARTS], it)
            for r, (_, field) in zip(mine, sl.PARTS):
                values = sorted(f[field] / 1000.0 for f in chosen)
                self.assertEqual(r["samples"], len(values), it)
                self.assertEqual((r["min"], r["max"]), (values[0], values[-1]), it)
                rank = max(1, -(-len(values) // 2))   # nearest rank of p50, ceil(n / 2)
                self.assertEqual(r["p50"], values[rank - 1], it)
                self.assertEqual(bench_check.check_row(r), [], r)
        self.assertEqual(len(derived), 3 * served, it)
        self.assertEqual(len(problems), len(rows) - served, (it, problems))


if __name__ == "__main__":
    script_test.run(__name__)
