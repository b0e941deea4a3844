#!/usr/bin/env python3
"""bench_check.py: validates benchmark results (JSON lines) against vmthread's result schema.

Every benchmark in bench/ (through bench/harness.c) and bench/java/*Bench.java (BenchSupport.toJson) prints one
JSON object per line with `--json`. scripts/bench collects them into results.jsonl and refuses
a run whose file does not pass this check, because the summary ratios, the HotSpot comparison
and the plots all read that file: a malformed row would silently become "n/a" or a wrong bar.

The schema (docs/benchmarks.md, "Results file"):
  bench, variant, unit   non-empty strings
  samples                integer > 0
  mean, p50, p90, p99,   finite numbers >= 0 (JSON numbers: not strings, not booleans,
  p999, p9999, max       not NaN/Infinity), with p50 <= p90 <= p99 <= p999 <= p9999 <= max
                         and mean <= max
  min (optional)         finite number >= 0, min <= p50 and min <= mean
  any other key          allowed (extra figures such as user_us, ctx_switches, jvm, batch)
A line is one JSON object; keys may not repeat within it. Blank lines are ignored.
Two rows with the same (bench, variant) and the same extra keys' values are reported as
duplicates: the summary could not tell which one to use.

Usage:
  scripts/bench_check.py FILE...     prints each problem as FILE:LINE: message, then one line
                                     "bench_check: N rows, M problems"; exit 1 on any problem
  import bench_check; bench_check.check_line(text) -> (row or None, [problems])
"""
import json
import math
import sys

REQUIRED_STRINGS = ("bench", "variant", "unit")
# In the order the schema requires them to be non-decreasing.
PERCENTILES = ("p50", "p90", "p99", "p999", "p9999", "max")
REQUIRED_NUMBERS = ("mean",) + PERCENTILES
SCHEMA_KEYS = set(REQUIRED_STRINGS) | {"samples"} | set(REQUIRED_NUMBERS) | {"min"}


class _DuplicateKey(ValueError):
    pass


def _no_duplicate_keys(pairs):
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise _DuplicateKey("key %r appears twice" % key)
        obj[key] = value
    return obj


def _reject_constant(name):
    # json accepts NaN, Infinity and -Infinity by default; JSON itself does not.
    raise ValueError("%s is not a JSON number" % name)


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def check_row(row):
    """Problems with one decoded row (a list of strings; empty when the row is valid)."""
    if not isinstance(row, dict):
        return ["not a JSON object"]
    problems = []
    for key in REQUIRED_STRINGS:
        v = row.get(key)
        if key not in row:
            problems.append("missing key %r" % key)
        elif not isinstance(v, str) or not v.strip():
            problems.append("%r must be a non-empty string, got %r" % (key, v))
    samples = row.get("samples")
    if "samples" not in row:
        problems.append("missing key 'samples'")
    elif isinstance(samples, bool) or not isinstance(samples, int):
        problems.append("'samples' must be an integer, got %r" % (samples,))
    elif samples <= 0:
        problems.append("'samples' must be > 0, got %d" % samples)
    numbers_ok = True
    for key in REQUIRED_NUMBERS + (("min",) if "min" in row else ()):
        v = row.get(key)
        if key not in row:
            problems.append("missing key %r" % key)
            numbers_ok = False
        elif not _is_number(v):
            problems.append("%r must be a finite number, got %r" % (key, v))
            numbers_ok = False
        elif v < 0:
            problems.append("%r must be >= 0, got %r" % (key, v))
    if numbers_ok:
        for lo, hi in zip(PERCENTILES, PERCENTILES[1:]):
            if row[lo] > row[hi]:
                problems.append("%s (%r) > %s (%r): percentiles must not decrease"
                                % (lo, row[lo], hi, row[hi]))
        if row["mean"] > row["max"]:
            problems.append("mean (%r) > max (%r)" % (row["mean"], row["max"]))
        if "min" in row:
            if row["min"] > row["p50"]:
                problems.append("min (%r) > p50 (%r)" % (row["min"], row["p50"]))
            if row["min"] > row["mean"]:
                problems.append("min (%r) > mean (%r)" % (row["min"], row["mean"]))
    return problems


def check_line(text):
    """Decodes and checks one line: (row or None, problems). A blank line gives (None, [])."""
    if not text.strip():
        return None, []
    try:
        row = json.loads(text, object_pairs_hook=_no_duplicate_keys,
                         parse_constant=_reject_constant)
    except _DuplicateKey as e:
        return None, ["invalid JSON object: %s" % e]
    except ValueError as e:
        return None, ["not JSON: %s" % e]
    problems = check_row(row)
    return (row if not problems else None), problems


def row_identity(row):
    """What tells two rows apart: bench, variant, and every extra key's value."""
    extras = tuple(sorted((k, json.dumps(v, sort_keys=True)) for k, v in row.items()
                          if k not in SCHEMA_KEYS))
    return (row["bench"], row["variant"], extras)


def check_lines(lines, name="<input>"):
    """Checks an iterable of lines: (valid rows, ["name:line: problem", ...])."""
    rows, problems, seen = [], [], {}
    for n, text in enumerate(lines, 1):
        row, found = check_line(text)
        problems.extend("%s:%d: %s" % (name, n, p) for p in found)
        if row is None:
            continue
        ident = row_identity(row)
        if ident in seen:
            problems.append("%s:%d: duplicate of line %d (%s/%s)"
                            % (name, n, seen[ident], row["bench"], row["variant"]))
        else:
            seen[ident] = n
        rows.append(row)
    return rows, problems


def check_file(path):
    with open(path, encoding="utf-8") as f:
        return check_lines(f, path)


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.split("Usage:")[1].rstrip(), file=sys.stderr if len(argv) < 2 else sys.stdout)
        return 2 if len(argv) < 2 else 0
    total_rows, total_problems = 0, 0
    for path in argv[1:]:
        try:
            rows, problems = check_file(path)
        except OSError as e:
            print("bench_check: %s: %s" % (path, e.strerror), file=sys.stderr)
            return 2
        for p in problems:
            print(p)
        if not rows and not problems:
            print("%s: no result rows" % path)
            problems = ["empty"]
        total_rows += len(rows)
        total_problems += len(problems)
    print("bench_check: %d rows, %d problems" % (total_rows, total_problems))
    return 1 if total_problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
