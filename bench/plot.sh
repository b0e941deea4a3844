#!/usr/bin/env bash
# plot.sh: render SVG plots from a vmthread benchmark results file.
#
#   bench/plot.sh RESULTS.jsonl OUTDIR
#
# RESULTS.jsonl holds one JSON object per line, as printed by `--json` of our C benchmarks
# (bench "cpu_time", "timers", "thread_start", "monitors", "management") and of
# bench/java/*Bench.java (bench "hotspot", "hotspot_thread_start", "hotspot_management"):
#   {"bench":..,"variant":..,"unit":..,"samples":N,"mean":..,"p50":..,"p90":..,"p99":..,
#    "p999":..,"p9999":..,"max":..}   plus optional extra keys (min, user_us, sys_us, jvm...).
# Thread-start rows carry us/thread with p50 = median over repeats and min/max over repeats.
#
# It writes into OUTDIR:
#   cpu_time_latency.svg        percentile profile (p50..max, log ns) of each method reading
#                               the calling thread's CPU time: bench cpu_time rows, HotSpot's
#                               current_user_time and current_cpu_time
#   cpu_time_other_latency.svg  the same for another thread's CPU time (cpu_time rows whose
#                               variant names "other", HotSpot's other_*_time)
#   thread_start.svg            median us/thread per variant of the 1000-thread start+join
#                               (rows without "live_threads"), min/max error bars
#   timer_tails.svg             percentile profile of the bench "timers" variants
#   management_sweeps.svg       ns per thread of each management sweep (p50 / threads) against
#                               the number of live threads (bench management, variants
#                               <operation>_<threads> carrying a "threads" key)
#   management_vs_hotspot.svg   one panel per management call: vmthread's ns per thread against
#                               the number of live threads, and HotSpot's (bench
#                               hotspot_management, bench/java/ManagementBench.java) on every
#                               JDK of the file
#   wake_latency.svg            percentile profile (us) of every bench "wake" row and HotSpot's
#                               interrupt_sleep, unpark and exit_join (bench hotspot_wake)
#   handshake_latency.svg       percentile profile (us) of the requests to a running target at
#                               0 idle and 0 running threads: bench "handshake" (the poll-word
#                               floor, vmthread's *_running rows), HotSpot's *_running rows of
#                               hotspot_stack_trace and hotspot_suspend
# In the profiles, vmthread's own methods (variant vmt_*) are solid thick lines, HotSpot's
# dashed, the baselines (system calls, /proc) thin, the measuring overhead grey dotted: about
# a dozen lines share one plot, and colour alone would not tell them apart.
# A plot whose rows are absent from the file is skipped with a message, not an error.
#
# Needs gnuplot (Debian: gnuplot-nox) and python3 (stdlib only: it turns the JSON into
# gnuplot's tab-separated data files, which is easier to get right than parsing JSON in
# shell).
set -euo pipefail

die() {
    echo "plot.sh: $*" >&2
    exit 1
}

[[ $# -eq 2 ]] || die "usage: bench/plot.sh RESULTS.jsonl OUTDIR"
results=$1
outdir=$2
[[ -r $results ]] || die "cannot read results file '$results'"
command -v gnuplot >/dev/null 2>&1 ||
    die "gnuplot not found; install it (Debian: apt-get install gnuplot-nox)"
command -v python3 >/dev/null 2>&1 || die "python3 not found"
mkdir -p "$outdir"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# JSON lines -> one data file per plot. A data file is written only when it has rows, so
# the shell below can tell "nothing to plot" by its absence.
python3 - "$results" "$tmp" <<'PY'
import json
import math
import os
import re
import sys

results, tmp = sys.argv[1], sys.argv[2]
PCTS = [("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p999", "p99.9"),
        ("p9999", "p99.99"), ("max", "max")]
HOTSPOT_CPU = {"current_user_time", "current_cpu_time", "other_user_time", "other_cpu_time"}


def warn(msg):
    print("plot.sh: " + msg, file=sys.stderr)


def number(v):
    """A finite float, or None for anything else (missing, string, NaN)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def label(row):
    # A file may hold HotSpot rows of several JDKs: name the JDK's major version so
    # their lines do not collapse into one.
    name = "%s/%s" % (row["bench"], row["variant"])
    jvm = row.get("jvm")
    if isinstance(jvm, str):
        m = re.match(r"(\d+)", jvm)
        if m:
            name += " (jdk%s)" % m.group(1)
    return name.replace("\t", " ")


rows = []
with open(results, encoding="utf-8") as f:
    for n, line in enumerate(f, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            row = json.loads(line)
        except ValueError:
            warn("%s:%d: not JSON, skipped" % (results, n))
            continue
        if not isinstance(row, dict) or not isinstance(row.get("bench"), str) \
                or not isinstance(row.get("variant"), str):
            warn("%s:%d: no bench/variant, skipped" % (results, n))
            continue
        rows.append(row)


def pick(pred):
    """Rows matching pred, one per label; a later row of the same label replaces an earlier."""
    chosen = {}
    for row in rows:
        if pred(row):
            key = label(row)
            if key in chosen:
                warn("two rows for %s: the later one is plotted" % key)
            chosen[key] = row
    return chosen


# Distinct colours (Okabe-Ito, then darker companions): enough for one profile plot.
COLOURS = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000",
           "#7f3c8d", "#11a579", "#b8860b", "#3969ac", "#e73f74", "#80ba5a", "#4b4b8f"]


def style(row, colour):
    """gnuplot line style for a row: what kind of line it is shows in the dash and width."""
    if row["variant"] == "timer_overhead":
        return 'lc rgb "#999999" dt 3 lw 1.5 pt 1'
    if row["bench"].startswith("hotspot"):
        return 'lc rgb "%s" dt 2 lw 2 pt 6' % colour
    if row["variant"].startswith("vmt_"):
        return 'lc rgb "%s" dt 1 lw 3 pt 7' % colour
    return 'lc rgb "%s" dt 1 lw 1.2 pt 2' % colour


def write_profile(name, chosen):
    """Percentile profile: name.dat (one line per percentile, one column per method) and
    name.plot (gnuplot's plot command, one styled line per column)."""
    if not chosen:
        return
    labels = list(chosen)
    dat = os.path.join(tmp, name + ".dat")
    with open(dat, "w") as out:
        out.write("percentile\t" + "\t".join(labels) + "\n")
        for key, text in PCTS:
            cells = []
            for lab in labels:
                v = number(chosen[lab].get(key))
                # Log axis: zero or negative cannot be drawn, so it is left out.
                cells.append("NaN" if v is None or v <= 0 else repr(v))
            out.write(text + "\t" + "\t".join(cells) + "\n")
    lines = []
    for i, lab in enumerate(labels):
        lines.append('"%s" using 0:%d:xtic(1) with linespoints ps 0.8 %s title columnheader(%d)'
                     % (dat, i + 2, style(chosen[lab], COLOURS[i % len(COLOURS)]), i + 2))
    with open(os.path.join(tmp, name + ".plot"), "w") as out:
        out.write("plot " + ", \\\n     ".join(lines) + "\n")


def is_cpu_time(r):
    return r["bench"] == "cpu_time" or (r["bench"] == "hotspot" and r["variant"] in HOTSPOT_CPU)


def names_other(r):
    return "other" in r["variant"]


write_profile("cpu_time", pick(lambda r: is_cpu_time(r) and not names_other(r)))
# The other-thread plot gets the measuring overhead too (it is inside every sample of
# either), but only when there is something else to draw.
others = pick(lambda r: is_cpu_time(r) and names_other(r))
if others:
    others.update(pick(lambda r: r["bench"] == "cpu_time" and r["variant"] == "timer_overhead"))
write_profile("cpu_time_other", others)
write_profile("timers", pick(lambda r: r["bench"] == "timers"))
# Wake-ups: every C row, and the HotSpot rows that have a C floor or a vmthread row to face.
write_profile("wake", pick(lambda r: r["bench"] == "wake" or (
    r["bench"] == "hotspot_wake" and r["variant"] in ("interrupt_sleep", "unpark", "exit_join"))))
# Requests to one running target with no idle and no other running threads.
QUIET = {"idle_threads": 0, "running_threads": 0}
write_profile("handshake", pick(lambda r: all(r.get(k) == v for k, v in QUIET.items()) and (
    (r["bench"] == "handshake" and r["variant"].endswith("running")
     or r["variant"] == "poll_round_trip")
    or (r["bench"] in ("hotspot_stack_trace", "hotspot_suspend")
        and r["variant"].endswith("_running")))))

# Kudu's experiment only: rows that carry "live_threads" time single starts next to 1000
# parked threads (the registry under readers), another question on another scale.
starts = pick(lambda r: r["bench"] in ("thread_start", "hotspot_thread_start")
              and "live_threads" not in r)
bars = []
for lab, row in starts.items():
    med = number(row.get("p50"))
    if med is None:
        warn("%s has no p50, skipped" % lab)
        continue
    lo = number(row.get("min"))
    hi = number(row.get("max"))
    # Fill colour as gnuplot's integer RGB: vmthread blue, the C baselines grey, HotSpot orange.
    colour = 0xE69F00 if row["bench"].startswith("hotspot") else \
        0x0072B2 if row["variant"].startswith("vmt") else 0x8C8C8C
    bars.append((lab, med, med if lo is None else lo, med if hi is None else hi, colour))
if bars:
    # No header line: gnuplot would count it in column 0 and shift every bar by one.
    with open(os.path.join(tmp, "thread_start.dat"), "w") as out:
        for b in bars:
            out.write("%s\t%r\t%r\t%r\t%d\n" % b)

# Management sweeps: ns per thread (p50 of one sweep / threads) against the live thread
# count, one line per operation. Variants are "<operation>_<threads>" with a "threads" key.
sweeps = {}
for row in rows:
    n = row.get("threads")
    m = re.match(r"(.+)_(\d+)$", row["variant"])
    med = number(row.get("p50"))
    if row["bench"] != "management" or not isinstance(n, int) or n <= 0 or not m \
            or int(m.group(2)) != n or med is None or med <= 0 or row.get("unit") != "ns":
        continue
    sweeps.setdefault(m.group(1), {})[n] = med / n
if sweeps:
    counts = sorted({n for per in sweeps.values() for n in per})
    ops = list(sweeps)
    dat = os.path.join(tmp, "management.dat")
    with open(dat, "w") as out:
        out.write("threads\t" + "\t".join(ops) + "\n")
        for n in counts:
            out.write("%d\t%s\n" % (n, "\t".join(repr(sweeps[op][n]) if n in sweeps[op]
                                                 else "NaN" for op in ops)))
    lines = []
    for i, op in enumerate(ops):
        # The CPU-time sweep is vmthread's headline; the bare loop and /proc are its baselines.
        kind = {"cpu_time_sweep": "vmt_", "bare_clock_sweep": "", "raw_clock_sweep": "",
                "proc_sweep": ""}.get(op, "vmt_")
        fake = {"bench": "management", "variant": kind + op}
        lines.append('"%s" using 1:%d with linespoints ps 0.8 %s title columnheader(%d)'
                     % (dat, i + 2, style(fake, COLOURS[i % len(COLOURS)]), i + 2))
    with open(os.path.join(tmp, "management.plot"), "w") as out:
        out.write("plot " + ", \\\n     ".join(lines) + "\n")
# vmthread against HotSpot, one panel per call that both sides measured: per-thread p50
# against the thread count, vmthread thick, each JDK dashed.
def per_thread_series(bench):
    """{operation: {series label: {threads: ns per thread}}} for one bench."""
    out = {}
    for row in rows:
        n = row.get("threads")
        m = re.match(r"(.+)_(\d+)$", row["variant"])
        med = number(row.get("p50"))
        if row["bench"] != bench or not isinstance(n, int) or n <= 0 or not m \
                or int(m.group(2)) != n or med is None or med <= 0 or row.get("unit") != "ns":
            continue
        series = "vmthread"
        if bench != "management":
            jvm = row.get("jvm")
            major = re.match(r"(\d+)", jvm) if isinstance(jvm, str) else None
            series = "HotSpot " + (major.group(1) if major else "?")
        out.setdefault(m.group(1), {}).setdefault(series, {})[n] = med / n
    return out


ours, theirs = per_thread_series("management"), per_thread_series("hotspot_management")
panels = [op for op in theirs if op in ours]
if panels:
    plot = ['set multiplot layout %d,%d title "Management calls: p50 per thread by live threads '
            '(thick: vmthread, dashed: HotSpot)"' % ((len(panels) + 3) // 4, min(4, len(panels)))]
    for op in panels:
        series = dict(ours[op])
        series.update(sorted(theirs[op].items()))
        names = list(series)
        counts = sorted({n for per in series.values() for n in per})
        dat = os.path.join(tmp, "vs_%s.dat" % op)
        with open(dat, "w") as out:
            out.write("threads\t" + "\t".join(names) + "\n")
            for n in counts:
                out.write("%d\t%s\n" % (n, "\t".join(repr(series[s][n]) if n in series[s]
                                                     else "NaN" for s in names)))
        lines = []
        for i, name in enumerate(names):
            fake = {"bench": "management" if name == "vmthread" else "hotspot", "variant": "vmt_"}
            lines.append('"%s" using 1:%d with linespoints ps 0.6 %s title columnheader(%d)'
                         % (dat, i + 2, style(fake, COLOURS[i % len(COLOURS)]), i + 2))
        plot.append('set title "%s"' % op)
        plot.append("plot " + ", ".join(lines))
    plot.append("unset multiplot")
    with open(os.path.join(tmp, "management_vs_hotspot.plot"), "w") as out:
        out.write("\n".join(plot) + "\n")
PY

# Settings every plot shares. noenhanced: variant names hold underscores, which gnuplot
# would otherwise typeset as subscripts.
common='
set terminal svg size 1000,560 dynamic noenhanced font "sans,12" background rgb "white"
set datafile separator "\t"
set datafile missing "NaN"
set grid ytics mytics lc rgb "#dddddd"
set key outside right top noenhanced
'

# Percentile profile on a log axis: the x positions are the rows of the table.
profile() { # NAME OUTFILE TITLE [YLABEL]
    gnuplot <<EOF
$common
set output "$2"
set title "$3"
set xlabel "percentile"
set ylabel "${4:-ns per call} (log scale)"
set logscale y
set format y "%g"
set xrange [-0.3:5.3]
$(cat "$tmp/$1.plot")
EOF
    echo "plot.sh: wrote $2"
}

made=0
if [[ -f $tmp/cpu_time.dat ]]; then
    profile cpu_time "$outdir/cpu_time_latency.svg" \
        "Current thread's CPU time: percentiles per method (thick: vmthread, dashed: HotSpot)"
    made=$((made + 1))
else
    echo "plot.sh: no cpu_time or hotspot CPU-time rows: cpu_time_latency.svg skipped"
fi
if [[ -f $tmp/cpu_time_other.dat ]]; then
    profile cpu_time_other "$outdir/cpu_time_other_latency.svg" \
        "Another thread's CPU time: percentiles per method (thick: vmthread, dashed: HotSpot)"
    made=$((made + 1))
else
    echo "plot.sh: no other-thread CPU-time rows: cpu_time_other_latency.svg skipped"
fi

if [[ -f $tmp/thread_start.dat ]]; then
    nbars=$(wc -l <"$tmp/thread_start.dat")
    gnuplot <<EOF
$common
set output "$outdir/thread_start.svg"
set title "Start + join of 1000 empty threads: median over repeats, min/max bars"
set ylabel "us per thread"
set yrange [0:*]
set style fill solid 0.5 border -1
# Room on the right of the last bar for its value label, and above the tallest error bar.
set xrange [-0.6:$nbars - 0.1]
set offsets 0, 0, graph 0.08, 0
# Labels end at their tick and hang down-left, so long variant names stay clear of the bars.
set xtics rotate by 25 right nomirror
set bmargin 10
set key off
set lmargin 14
# Columns x, y, ylow, yhigh, box width, colour: the box and its min/max bar in one style
# (a separate yerrorbars plot would also draw a point on each median).
plot "$tmp/thread_start.dat" using 0:2:3:4:(0.6):5:xtic(1) with boxerrorbars lc rgb variable lw 1.5, \
     "" using (\$0 + 0.32):2:(sprintf("%.1f", \$2)) with labels left offset 0,0.6
EOF
    echo "plot.sh: wrote $outdir/thread_start.svg"
    made=$((made + 1))
else
    echo "plot.sh: no thread_start or hotspot_thread_start rows: thread_start.svg skipped"
fi

if [[ -f $tmp/timers.dat ]]; then
    profile timers "$outdir/timer_tails.svg" \
        "Time sources: percentiles per call (samples are batches of calls; thick: vmthread)"
    made=$((made + 1))
else
    echo "plot.sh: no timers rows: timer_tails.svg skipped"
fi

if [[ -f $tmp/wake.dat ]]; then
    profile wake "$outdir/wake_latency.svg" \
        "Wake-up latency, waker's call -> the woken thread runs (thin: C floors, dashed: HotSpot)" \
        "us"
    made=$((made + 1))
else
    echo "plot.sh: no wake rows: wake_latency.svg skipped"
fi
if [[ -f $tmp/handshake.dat ]]; then
    profile handshake "$outdir/handshake_latency.svg" \
        "One request to a running thread, no other threads (thin: C floor, dashed: HotSpot)" "us"
    made=$((made + 1))
else
    echo "plot.sh: no handshake rows: handshake_latency.svg skipped"
fi

if [[ -f $tmp/management.dat ]]; then
    gnuplot <<EOF
$common
set output "$outdir/management_sweeps.svg"
set title "Management API: one sweep's p50 per thread, by live threads (thin: baselines)"
set xlabel "live threads (log scale)"
set ylabel "ns per thread (log scale)"
set logscale xy
set format y "%g"
set xrange [0.7:15000]
$(cat "$tmp/management.plot")
EOF
    echo "plot.sh: wrote $outdir/management_sweeps.svg"
    made=$((made + 1))
else
    echo "plot.sh: no management rows: management_sweeps.svg skipped"
fi

if [[ -f $tmp/management_vs_hotspot.plot ]]; then
    gnuplot <<EOF
$common
set terminal svg size 1600,900 dynamic noenhanced font "sans,11" background rgb "white"
set output "$outdir/management_vs_hotspot.svg"
set xlabel "live threads"
set ylabel "ns per thread"
set logscale xy
set format y "%g"
set xrange [0.7:15000]
set key inside left top font "sans,9"
$(cat "$tmp/management_vs_hotspot.plot")
EOF
    echo "plot.sh: wrote $outdir/management_vs_hotspot.svg"
    made=$((made + 1))
else
    echo "plot.sh: no hotspot_management rows next to management rows: management_vs_hotspot.svg skipped"
fi

echo "plot.sh: $made plot(s) in $outdir"
