#!/usr/bin/env python3
"""doc_figures.py: the figures docs/*.md quote, rewritten from one run of scripts/bench.

docs/benchmarks.md is generated whole by `scripts/bench --publish`; the other docs quote its
figures in their prose and tables. Each quoted figure carries a marker naming the row it comes
from, and this script rewrites every marked figure from one run directory (results.jsonl,
machine.json, report.md), so a publishing run leaves no doc quoting an older run.
`scripts/bench --publish` calls it after writing docs/benchmarks.md; --check says whether the
docs already hold a run's figures (exit 1 if not) without writing.

Markers (HTML comments: invisible where the Markdown is rendered):

  <!--fig:REF-->401.0          the number after the marker is REF's value (fmt_num, as the
                               tables of docs/benchmarks.md print it)
  <!--fig:REF as ms-->1,098    the same, converted from the row's unit (ns, us, ms, s)
  <!--fig:A over B-->1.03x     a ratio (fmt_ratio, as the summary prints it); A and B are REFs
                               or parenthesised ratios: (A over B) over (C over D)
  <!--fig:run-->...<!--/fig-->      "the run" sentence: command, run, commit, date, load
  <!--fig:machine-->...<!--/fig-->  the machine the run describes (machine.json)
  <!-- BEGIN fig-table BENCH[@WHERE] [variants=V1|V2|...] -->
  ...                          the rows of one benchmark in docs/benchmarks.md's table format
  <!-- END fig-table -->

REF is BENCH/VARIANT/KEY[@k=v,k=v]: a row's bench, its variant (which may contain "/"), one of
its keys (p50, p999, max, cpu_per_thread_ns, drift_ppm, ...); @ picks one row among several of
a variant by extra keys, jvm_major=17 by the JDK's major version (scripts/bench_driver.py's
matches()). A marker naming no row, or several, or a key the row lacks, or one that does not
parse, is an error: the docs are then left as they were, never half rewritten. Markers inside
code (a fenced block, or an inline code span that begins with the marker) are text.

Usage: see USAGE below.
"""
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import bench_driver  # noqa: E402

USAGE = """scripts/doc_figures.py RUN [--docs DIR]          rewrite the marked figures from RUN
       scripts/doc_figures.py --check RUN [--docs DIR]  exit 1 unless the docs hold RUN's figures
       scripts/doc_figures.py --lint [--docs DIR]       exit 1 if a marker does not parse

  RUN    a run directory of scripts/bench (results/<UTC stamp>, results/latest)
  --docs the directory of Markdown files (default: docs/ of this checkout)

`scripts/bench --publish` runs the rewrite itself on the run it made."""

UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}

INLINE = re.compile(r"<!--fig:(.*?)-->")
# The figure a marker stands before: a number as fmt_num / fmt_ratio print it (a comma only
# between groups of three digits: "1,062" is one figure, "40.8, park" ends at the 8).
FIGURE = re.compile(r"-?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?x?")
SPAN_END = "<!--/fig-->"
TABLE = re.compile(r"<!-- BEGIN fig-table (.*?) -->\n(.*?)<!-- END fig-table -->", re.S)
ANY_MARKER = re.compile(r"<!--\s*(?:/?fig\b|BEGIN fig|END fig)")


# Code is not scanned for markers, so a doc can show the syntax: fenced blocks, and inline
# code spans that begin with "<!--" (which may wrap, but not across a blank line). Only those:
# a stray backtick elsewhere must not hide a real marker by pairing with the next one.
CODE = re.compile(r"^```.*?^```|(?<!`)`<!--(?:[^`\n]|\n(?!\s*\n))*?`", re.M | re.S)


def code_ranges(text):
    return [(m.start(), m.end()) for m in CODE.finditer(text)]


def in_code(ranges, pos):
    return any(a <= pos < b for a, b in ranges)


class FigureError(Exception):
    pass


class Run:
    """One run directory: its rows, machine.json and the command report.md names."""

    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(os.path.normpath(os.path.realpath(path)))
        try:
            with open(os.path.join(path, "results.jsonl"), encoding="utf-8") as f:
                self.rows = [json.loads(line) for line in f if line.strip()]
            with open(os.path.join(path, "machine.json"), encoding="utf-8") as f:
                self.machine = json.load(f)
            with open(os.path.join(path, "report.md"), encoding="utf-8") as f:
                first = f.readline()
        except (OSError, ValueError) as e:
            raise FigureError("run %s: %s" % (path, e))
        m = re.match(r"## Results of `(.*)`", first)
        if not m:
            raise FigureError("run %s: report.md does not begin with '## Results of `...`'"
                              % path)
        self.command = m.group(1)


# ---- references and expressions ---------------------------------------------------------------


def parse_ref(text):
    """'bench/variant/key@k=v,...' -> (bench, variant, key, where)."""
    text = text.strip()
    where = {}
    if "@" in text:
        text, _, extra = text.rpartition("@")
        for kv in extra.split(","):
            k, eq, v = kv.partition("=")
            if not eq or not k.strip() or not v.strip():
                raise FigureError("bad filter %r (want key=value)" % kv)
            v = v.strip()
            where[k.strip()] = int(v) if re.fullmatch(r"-?[0-9]+", v) else v
    parts = text.split("/")
    if len(parts) < 3 or not all(p for p in (parts[0], parts[-1])) or not "/".join(parts[1:-1]):
        raise FigureError("bad reference %r (want bench/variant/key)" % text)
    return parts[0], "/".join(parts[1:-1]), parts[-1], where


def ref_value(run, ref):
    bench, variant, key, where = ref
    row, why = bench_driver.find_row(run.rows, bench, variant, where)
    if row is None:
        raise FigureError(why)
    v = row.get(key)
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise FigureError("row %s/%s has no numeric %s" % (bench, variant, key))
    return v, row


def tokenize(expr):
    return [t for t in re.split(r"(\(|\)|\s+over\s+)", " %s " % expr) if t and t.strip()]


def resolver(run):
    """A function from one term ('REF' or 'REF as UNIT') to its value; run None: parse only."""
    def resolve(term):
        m = re.fullmatch(r"(.*?)\s+as\s+(\w+)", term)
        ref = parse_ref(m.group(1) if m else term)
        if m and m.group(2) not in UNITS:
            raise FigureError("unknown unit %r (have %s)" % (m.group(2), ", ".join(UNITS)))
        if run is None:
            return 1.0
        v, row = ref_value(run, ref)
        if m:
            if row["unit"] not in UNITS:
                raise FigureError("cannot convert %s to %s" % (row["unit"], m.group(2)))
            v = v * UNITS[row["unit"]] / UNITS[m.group(2)]
        return v
    return resolve


def evaluate(expr, resolve):
    """(value, is_ratio) of a marker's expression: terms joined by 'over', with parentheses."""
    tokens = [t.strip() for t in re.split(r"(\(|\)|\s+over\s+)", " %s " % expr)
              if t and t.strip()]
    pos = [0]

    def term():
        if pos[0] >= len(tokens):
            raise FigureError("expression %r ends early" % expr)
        t = tokens[pos[0]]
        pos[0] += 1
        if t == "(":
            v = ratio()
            if pos[0] >= len(tokens) or tokens[pos[0]] != ")":
                raise FigureError("expression %r: missing )" % expr)
            pos[0] += 1
            return v[0], True
        if t in (")", "over"):
            raise FigureError("expression %r: unexpected %r" % (expr, t))
        return resolve(t), False

    def ratio():
        v, is_ratio = term()
        while pos[0] < len(tokens) and tokens[pos[0]] == "over":
            pos[0] += 1
            d, _ = term()
            if d <= 0:
                raise FigureError("expression %r: denominator is %s" % (expr, d))
            v, is_ratio = v / d, True
        return v, is_ratio

    result = ratio()
    if pos[0] != len(tokens):
        raise FigureError("expression %r: unexpected %r" % (expr, tokens[pos[0]]))
    return result


# ---- rendering ----------------------------------------------------------------------------------


def run_sentence(run):
    m = run.machine
    return "`%s`, run %s (vmthread %s, %s, load average %s at start)" % (
        run.command, run.name, m.get("commit", "unknown"), m.get("date_utc", "unknown"),
        m.get("loadavg_at_start", "unknown"))


def machine_sentence(run):
    m = run.machine
    return ("%s, %s cores, Linux %s, clocksource %s, HZ %s, glibc %s, %s; JVM: %s"
            % (m.get("cpu"), m.get("cores"), m.get("kernel"), m.get("clocksource"), m.get("hz"),
               m.get("glibc"), m.get("compiler"), m.get("jvm") or "none"))


def table_spec(spec):
    """'BENCH[@WHERE] [variants=V1|V2]' -> (bench, where, variants or None)."""
    words = spec.split()
    if not words:
        raise FigureError("fig-table names no benchmark")
    bench, _, where_text = words[0].partition("@")
    where = parse_ref("x/x/x@" + where_text)[3] if where_text else {}
    variants = None
    for w in words[1:]:
        k, eq, v = w.partition("=")
        if k != "variants" or not eq:
            raise FigureError("fig-table: unknown option %r" % w)
        variants = v.split("|")
    return bench, where, variants


def render_table(run, spec):
    bench, where, variants = table_spec(spec)
    rows = [r for r in run.rows if r["bench"] == bench and bench_driver.matches(r, where)]
    if not rows:
        raise FigureError("fig-table: no rows of %s in this run" % spec.split()[0])
    if variants is not None:
        picked = []
        for v in variants:
            found = [r for r in rows if r["variant"] == v]
            if not found:
                raise FigureError("fig-table: no row %s/%s in this run" % (bench, v))
            picked += found
        rows = picked
    if len({bench_driver.table_title(r) for r in rows}) > 1:
        raise FigureError("fig-table %s: rows of several JVMs (add @jvm_major=N)"
                          % spec.split()[0])
    out = bench_driver.Output()
    bench_driver.bench_table(out, rows, md_only=True)
    return "\n".join(out.md).rstrip("\n")


def render(text, run, where="doc"):
    """(new text, [errors], figures, [changes]) of one doc; a change is (place, marker, old
    figure, new figure). run None: only parse the markers (--lint)."""
    errors, changes, count = [], [], [0]

    def place(src, pos):
        return "%s:%d" % (where, src.count("\n", 0, pos) + 1)

    def table(m):
        if in_code(code, m.start()):
            return m.group(0)
        count[0] += 1
        try:
            table_spec(m.group(1))
            body = m.group(2).rstrip("\n") if run is None else render_table(run, m.group(1))
        except FigureError as e:
            errors.append("%s: %s" % (place(text, m.start()), e))
            return m.group(0)
        if body != m.group(2).rstrip("\n"):
            changes.append((place(text, m.start()), "fig-table " + m.group(1), "(table)",
                            "(table)"))
        return "<!-- BEGIN fig-table %s -->\n%s\n<!-- END fig-table -->" % (m.group(1), body)

    code = code_ranges(text)
    text = TABLE.sub(table, text)
    code = code_ranges(text)
    out, pos = [], 0
    for m in INLINE.finditer(text):
        if m.start() < pos or in_code(code, m.start()):
            continue
        out.append(text[pos:m.end()])
        pos = m.end()
        expr = m.group(1).strip()
        count[0] += 1
        try:
            if expr in ("run", "machine"):
                end = text.find(SPAN_END, pos)
                if end < 0 or "<!--fig:" in text[pos:end]:
                    raise FigureError("<!--fig:%s--> without its %s" % (expr, SPAN_END))
                new = text[pos:end] if run is None else (
                    run_sentence(run) if expr == "run" else machine_sentence(run))
                if new != text[pos:end]:
                    changes.append((place(text, m.start()), expr, text[pos:end], new))
                out.append(new)
                pos = end
                continue
            fig = FIGURE.match(text, pos)
            if not fig:
                raise FigureError("<!--fig:%s--> is not followed by a figure" % expr)
            value, is_ratio = evaluate(expr, resolver(run))
            if run is None:
                continue
            new = bench_driver.fmt_ratio(value) if is_ratio else bench_driver.fmt_num(value)
            if new != fig.group(0):
                changes.append((place(text, m.start()), expr, fig.group(0), new))
            out.append(new)
            pos = fig.end()
        except FigureError as e:
            errors.append("%s: %s" % (place(text, m.start()), e))
    out.append(text[pos:])
    new = "".join(out)
    # A marker the grammar above did not take (a typo) must not pass for a kept figure.
    code = code_ranges(new)
    for m in ANY_MARKER.finditer(new):
        if in_code(code, m.start()):
            continue
        at = new[m.start():]
        if not (INLINE.match(at) or at.startswith(SPAN_END) or TABLE.match(at)
                or at.startswith("<!-- END fig-table -->")):
            errors.append("%s: marker not understood: %s" % (place(new, m.start()),
                                                              at.split("\n", 1)[0][:80]))
    return new, errors, count[0], changes


# ---- the docs -----------------------------------------------------------------------------------


def doc_paths(docs_dir):
    return sorted(os.path.join(docs_dir, f) for f in os.listdir(docs_dir) if f.endswith(".md"))


def process(run, docs_dir, write):
    """(ok, report lines). write: rewrite the files when every marker resolved; else compare."""
    lines, errors, changed = [], [], {}
    for path in doc_paths(docs_dir):
        with open(path, encoding="utf-8") as f:
            old = f.read()
        name = os.path.relpath(path, ROOT) if path.startswith(ROOT + os.sep) else path
        new, errs, count, changes = render(old, run, name)
        errors += errs
        if count:
            lines.append("%s: %d markers parse" % (name, count) if run is None else
                         "%s: %d figures, %d changed" % (name, count, len(changes)))
        if not write:
            lines += ["  %s: %s: %s -> %s" % c for c in changes[:10]]
            if len(changes) > 10:
                lines.append("  ... and %d more" % (len(changes) - 10))
        if new != old:
            changed[path] = new
    lines += errors
    if errors:
        lines.append("%d marker errors%s" % (len(errors), ": no doc rewritten" if write else ""))
        return False, lines
    if write:
        for path, new in changed.items():
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
        return True, lines
    if run is not None and changed:
        lines.append("stale: %s do not hold the figures of run %s (scripts/doc_figures.py %s "
                     "rewrites them)" % (", ".join(sorted(os.path.basename(p) for p in changed)),
                                         run.name, run.path))
        return False, lines
    return True, lines


def main(argv):
    args = list(argv)
    if not args or "-h" in args or "--help" in args:
        print("usage: " + USAGE)
        return 0 if args else 2
    docs = os.path.join(ROOT, "docs")
    if "--docs" in args:
        i = args.index("--docs")
        if i + 1 >= len(args):
            print("doc_figures.py: --docs needs a directory", file=sys.stderr)
            return 2
        docs = args[i + 1]
        del args[i:i + 2]
    check = "--check" in args
    lint = "--lint" in args
    args = [a for a in args if a not in ("--check", "--lint")]
    if (lint and (check or args)) or (not lint and len(args) != 1):
        print("usage: " + USAGE, file=sys.stderr)
        return 2
    try:
        run = None if lint else Run(args[0])
    except FigureError as e:
        print("doc_figures.py: %s" % e, file=sys.stderr)
        return 2
    ok, lines = process(run, docs, write=not (check or lint))
    for line in lines:
        print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
