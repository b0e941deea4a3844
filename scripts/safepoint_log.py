#!/usr/bin/env python3
"""safepoint_log.py: HotSpot's own safepoint times, read from its -Xlog:safepoint file.

A Java benchmark measures a safepoint from the caller's side (the VM operation is handed to
the VM thread, run at a safepoint, and handed back); HotSpot logs its own view of each one.
A row that names the log (extra keys xlog: the file, in the run directory; xlog_op: the VM
operation; xlog_first, xlog_count: which of that operation's records, counted from 0 in log
order, belong to the row's samples) gets three companion rows from those records, in us:

  <variant>_reach   "Reaching safepoint": arming until every thread is safe (time to safepoint)
  <variant>_at      "At safepoint": the operation itself, every thread stopped
  <variant>_total   "Total": reach + at + the rest of HotSpot's bookkeeping (cleanup on 17,
                    leaving on 25), which the _total row also carries as an extra key

with the source row's extra keys (idle_threads, jvm, ...) so that they pair like it, and
source = "xlog". The record format differs between JDKs (unified logging, tag safepoint,
level info), so fields are read by name, not position:

  JDK 17  Safepoint "FindDeadlocks", Time since last: 3745186 ns, Reaching safepoint: 83163 ns,
          Cleanup: 2183 ns, At safepoint: 4467 ns, Total: 89813 ns
  JDK 25  Safepoint "FindDeadlocks", Time since last: 98987 ns, Reaching safepoint: 319804 ns,
          At safepoint: 6129 ns, Leaving safepoint: 3194 ns, Total: 329127 ns,
          Threads: 1 runnable, 12 total

scripts/bench_driver.py calls derive_rows() on each Java program's rows; the test is
//scripts:safepoint_log_test (lines captured from both JDKs on this machine).

Usage:
  scripts/safepoint_log.py LOG [OPERATION...]   per VM operation in LOG (or the ones named):
                                                 count and p50 of reach, at and total, in us
"""
import os
import re
import sys

# The message part of a record; the decorations before it ([0.3s][info][safepoint]) vary.
RECORD = re.compile(r'Safepoint "([^"]+)", (.*)$')
FIELD = re.compile(r"([A-Za-z][A-Za-z ]*): (\d+) ns")
PARTS = (("reach", "Reaching safepoint"), ("at", "At safepoint"), ("total", "Total"))
# Fields besides the three parts that end up in the _total row as "<name>_p50_us".
OTHER_FIELDS = (("cleanup", "Cleanup"), ("leaving", "Leaving safepoint"))
LOG_KEYS = ("xlog", "xlog_op", "xlog_first", "xlog_count")
SCHEMA = ("bench", "variant", "unit", "samples", "mean", "p50", "p90", "p99", "p999", "p9999",
          "max", "min")


def parse_line(line):
    """(operation, {field name: ns}) for a safepoint record, else None."""
    m = RECORD.search(line)
    if not m:
        return None
    fields = {name: int(ns) for name, ns in FIELD.findall(m.group(2))}
    if not all(field in fields for _, field in PARTS):
        return None
    return m.group(1), fields


def records(lines, op):
    """The field maps of every record of operation op, in log order."""
    found = []
    for line in lines:
        parsed = parse_line(line)
        if parsed and parsed[0] == op:
            found.append(parsed[1])
    return found


def nearest_rank(sorted_values, pct):
    """The smallest value with at least pct% of the values at or below it: bench/harness.c's
    rule, whose + 0.999999 (not a ceil) keeps 99.9% of 1000 at rank 999 despite rounding."""
    rank = max(1, int(pct / 100.0 * len(sorted_values) + 0.999999))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def stats_row(values_us, template):
    """A results row of values (us): the schema's statistics, then template's other keys."""
    s = sorted(values_us)
    row = {"samples": len(s), "mean": round(sum(s) / len(s), 3)}
    for key, pct in (("p50", 50), ("p90", 90), ("p99", 99), ("p999", 99.9), ("p9999", 99.99)):
        row[key] = nearest_rank(s, pct)
    row["max"], row["min"] = s[-1], s[0]
    out = {k: template[k] for k in ("bench", "variant", "unit")}
    out.update(row)
    out.update({k: v for k, v in template.items() if k not in out})
    return out


def derive_rows(rows, run_dir):
    """(new rows, problems) for the rows of one program that name a safepoint log."""
    derived, problems, cache = [], [], {}
    for src in rows:
        if "xlog" not in src:
            continue
        name, op = src.get("xlog"), src.get("xlog_op")
        first, count = src.get("xlog_first"), src.get("xlog_count")
        where = "%s/%s" % (src["bench"], src["variant"])
        # A file name in the run directory (a NUL made open() raise ValueError, not OSError),
        # and integers that are no booleans (JSON true would have read as 1).
        if (not isinstance(name, str) or os.path.basename(name) != name or name in ("", ".", "..")
                or "\0" in name or not isinstance(op, str) or type(first) is not int
                or type(count) is not int or first < 0 or count <= 0):
            problems.append("%s: bad safepoint log keys %r" % (
                where, {k: src.get(k) for k in LOG_KEYS}))
            continue
        path = os.path.join(run_dir, name)
        if path not in cache:
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    cache[path] = f.readlines()
            except OSError as e:
                cache[path] = e
        if isinstance(cache[path], OSError):
            problems.append("%s: cannot read safepoint log %s: %s" % (where, name, cache[path]))
            continue
        found = records(cache[path], op)[first:first + count]
        if len(found) != count:
            problems.append("%s: %s has %d %r records from #%d on, the row needs %d"
                            % (where, name, len(found), op, first, count))
            continue
        extra = {k: v for k, v in src.items() if k not in SCHEMA and k not in LOG_KEYS}
        for part, field in PARTS:
            template = dict(extra, bench=src["bench"], variant="%s_%s" % (src["variant"], part),
                            unit="us", source="xlog")
            row = stats_row([r[field] / 1000.0 for r in found], template)
            if part == "total":
                for key, other in OTHER_FIELDS:
                    values = sorted(r[other] / 1000.0 for r in found if other in r)
                    if values:
                        row["%s_p50_us" % key] = nearest_rank(values, 50)
            derived.append(row)
    return derived, problems


def summary(lines, ops=None):
    """One line per VM operation of the log (in order of first appearance): count and p50s."""
    by_op = {}
    for line in lines:
        parsed = parse_line(line)
        if parsed and (not ops or parsed[0] in ops):
            by_op.setdefault(parsed[0], []).append(parsed[1])
    out = []
    for op, found in by_op.items():
        p50 = [nearest_rank(sorted(r[field] / 1000.0 for r in found), 50) for _, field in PARTS]
        out.append("%s: %d safepoints, p50 reach %.2f us, at %.2f us, total %.2f us"
                   % ((op, len(found)) + tuple(p50)))
    return out


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.split("Usage:")[1].rstrip(), file=sys.stderr if len(argv) < 2 else sys.stdout)
        return 2 if len(argv) < 2 else 0
    try:
        with open(argv[1], encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except OSError as e:
        print("safepoint_log: %s: %s" % (argv[1], e.strerror), file=sys.stderr)
        return 2
    found = summary(lines, set(argv[2:]))
    print("\n".join(found) if found else "%s: no safepoint records" % argv[1])
    return 0 if found else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
