#!/usr/bin/env python3
"""bench_driver.py: the benchmark suite behind `scripts/bench` (the README's first command).

It builds every benchmark with --config=opt, describes the machine, runs each benchmark
(every cc_binary in //bench tagged "benchmark", so a new one is picked up without editing this
file) and, when java and javac exist, every bench/java/*Bench.java class in the same run; prints one
table per benchmark, the vmthread/HotSpot comparison and the summary of headline ratios;
writes the run's JSON lines to results.jsonl, validates them (scripts/bench_check.py) and
renders the plots (bench/plot.sh) from that file.

Every figure printed comes from this run's rows: the ratios below name rows and statistics,
never values. A ratio whose rows are missing prints "n/a" and why, so a partial suite (a
benchmark that does not exist yet, --only, --no-java) still runs. A MISS is a finding, not a
breakage: the run exits non-zero only when the build fails, a benchmark fails or times out,
or the results file does not validate.

Usage: see `scripts/bench --help` (USAGE below).
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import bench_check  # noqa: E402
import safepoint_log  # noqa: E402

USAGE = """scripts/bench [--quick | --long] [--no-java | --jdk DIR ...] [--out DIR] [--publish]
                     [--only NAME,...]

  --quick      short runs (fewer samples and repeats): whole suite in under 2 minutes
  --long       more samples and repeats, for tails you want to trust
  --no-java    skip the HotSpot side (it is skipped anyway without java and javac)
  --jdk DIR    run the HotSpot side on this JDK (repeatable; the first one is the one the
               comparison and the summary use). Default: the java and javac on PATH, then
               every other JDK under /usr/lib/jvm, each a row set of its own (key "jvm")
  --out DIR    write the run into DIR instead of results/<timestamp>/ (results/latest is
               then left alone)
  --publish    also render the plots into docs/img/, replace the generated section of
               docs/benchmarks.md with this run's tables, comparison and summary, and rewrite
               the figures the other docs quote from this run (scripts/doc_figures.py)
  --only LIST  run only these benchmarks (target names such as cpu_time,timers; "hotspot"
               names the whole Java side, a class name such as HotSpotBench one program)

Writes into the run directory: results.jsonl (every JSON line of the run), report.md (the
tables, comparison and summary as Markdown), machine.json, one log per benchmark
(<name>.log: its stderr), and the plots (*.svg)."""

# Benchmarks run in this order; others found by the query run after them, by name.
PREFERRED_ORDER = ["cpu_time", "timers", "thread_start", "monitors", "management", "profiler"]

# Wall-clock budgets the issue sets for the whole suite (issue 7), and a per-benchmark
# timeout far above any sane run so that a hang ends the run instead of blocking it.
SUITE_BUDGET_S = {"quick": 120, "default": 600, "long": None}
BENCH_TIMEOUT_S = {"quick": 300, "default": 900, "long": 3600}

# ---------------------------------------------------------------------------------------------
# The headline ratios: (label, numerator, denominator, comparison, limit, source). A side is
# (bench, variant, statistic) or (bench, variant, statistic, {extra key: value}) to pick one
# row among several that share a variant; the key "jvm_major" picks a JDK's rows by the major
# version in their "jvm" key (17, 25) instead of the run's primary JDK, which the sides
# without it use. comparison None means "reported, no threshold".
# Thresholds are the issues' "done when" figures; the denominator is always the row the
# issue compares against, so ">= 20" reads "numerator is at least 20x the denominator".
HS17, HS25 = {"jvm_major": 17}, {"jvm_major": 25}
# One request to a target at 0 idle and 0 running threads (bench/handshake.c,
# bench/java/VmServicesBench.java).
QUIET = {"idle_threads": 0, "running_threads": 0}
HEADLINE_RATIOS = [
    ("cpu_time: /proc parse / vmthread fast user time, p50",
     ("cpu_time", "proc_stat", "p50"), ("cpu_time", "vmt_user_fast", "p50"), ">=", 20, "#3"),
    ("cpu_time: /proc parse / vmthread fast user time, p99.9",
     ("cpu_time", "proc_stat", "p999"), ("cpu_time", "vmt_user_fast", "p999"), ">=", 10, "#3"),
    ("cpu_time: consistent user / fast user time, p50",
     ("cpu_time", "vmt_user_consistent", "p50"), ("cpu_time", "vmt_user_fast", "p50"),
     "<=", 1.6, "#3"),
    ("cpu_time: pid-0 VIRT / pthread_getcpuclockid VIRT, p50",
     ("cpu_time", "virt_pid0", "p50"), ("cpu_time", "virt_pthread_clock", "p50"),
     "<=", 1.0, "#3"),
    ("cpu_time: other thread's CPU time / bare clock_gettime, p50",
     ("cpu_time", "vmt_other_cpu", "p50"), ("cpu_time", "sched_other_clock", "p50"),
     "<=", 1.2, "#3"),
    ("timers: vDSO CLOCK_MONOTONIC / cached TSC counter, p50",
     ("timers", "clock_monotonic", "p50"), ("timers", "vmt_counter_cached", "p50"),
     ">=", 1.4, "#3"),
    ("timers: cached TSC counter p99.9 / its p50",
     ("timers", "vmt_counter_cached", "p999"), ("timers", "vmt_counter_cached", "p50"),
     "<=", 3, "#3"),
    ("thread_start: handshake start / vmthread start, median",
     ("thread_start", "handshake", "p50"), ("thread_start", "vmthread", "p50"), ">=", 1.2, "#4"),
    ("thread_start: vmthread start / raw pthread_create, median",
     ("thread_start", "vmthread", "p50"), ("thread_start", "pthread", "p50"), "<=", 1.15, "#4"),
    ("thread_start: starts beside a registry walker / beside the same walk on private copies",
     ("thread_start", "starts_1000_live_walker", "p50"),
     ("thread_start", "starts_1000_live_private_walk", "p50"), "<=", 1.10, "#4"),
    ("thread_start: the same, walker every 1 ms",
     ("thread_start", "starts_1000_live_walker_1ms", "p50"),
     ("thread_start", "starts_1000_live_private_walk_1ms", "p50"), "<=", 1.10, "#4"),
    # The sentence read literally (against no reader): reported next to the two lines
    # above, whose control takes out what any busy or waking thread costs the starts on 2 cores.
    ("thread_start: starts beside a registry walker / beside no reader",
     ("thread_start", "starts_1000_live_walker", "p50"),
     ("thread_start", "starts_1000_live", "p50"), None, None, "#4"),
    ("thread_start: starts beside a walker every 1 ms / beside no reader",
     ("thread_start", "starts_1000_live_walker_1ms", "p50"),
     ("thread_start", "starts_1000_live", "p50"), None, None, "#4"),
    # #12 item 17: vmthread(10,000 live) / vmthread(10 live) against the same for raw pthread
    # (the kernel and glibc also slow down with more threads). Written as (vmthread / pthread
    # at 10,000) / (vmthread / pthread at 10): the same quantity, each row's sample being one
    # vmthread round / the pthread round run back to back with it, which load from elsewhere
    # hits alike.
    ("thread_start: start+join growth from 10 to 10,000 live threads, vmthread / raw pthread",
     ("thread_start", "vmthread_over_pthread_10000_live", "p50"),
     ("thread_start", "vmthread_over_pthread_10_live", "p50"), "<=", 1.10, "#12"),
    ("thread_start: vmthread start+join, 10,000 live / 10 live",
     ("thread_start", "start_join_10000_live", "p50"),
     ("thread_start", "start_join_10_live", "p50"), None, None, "#12"),
    ("thread_start: raw pthread start+join, 10,000 live / 10 live",
     ("thread_start", "start_join_10000_live_pthread", "p50"),
     ("thread_start", "start_join_10_live_pthread", "p50"), None, None, "#12"),
    ("monitors: uncontended enter+exit / pthread mutex, p50",
     ("monitors.uncontended", "monitor enter+exit", "p50"),
     ("monitors.uncontended", "pthread_mutex lock+unlock", "p50"),
     "<=", 1.3, "#5"),
    # "Adds nothing measurable": we read that as within 5%, the run-to-run noise of this row.
    ("monitors: uncontended, contention monitoring on / off, p50",
     ("monitors.uncontended", "monitor enter+exit, monitoring on", "p50"),
     ("monitors.uncontended", "monitor enter+exit", "p50"), "<=", 1.05, "#5"),
    # #16: the contended monitor at least as fast as a mutex and as HotSpot's synchronized (same
    # definition of a sample on both sides: bench/monitors.c, bench/java/MonitorsBench.java),
    # the uncontended path no slower than the mutex, wait/notify no slower than HotSpot's.
    ("monitors: contended enter+exit / pthread mutex, p50",
     ("monitors.contended", "monitor enter+exit", "p50"),
     ("monitors.contended", "pthread_mutex lock+unlock", "p50"), "<=", 1.0, "#16"),
    ("monitors: contended enter+exit / HotSpot 17 synchronized, p50",
     ("monitors.contended", "monitor enter+exit", "p50"),
     ("hotspot_monitors.contended", "synchronized", "p50", HS17), "<=", 1.0, "#16"),
    ("monitors: contended enter+exit / HotSpot 25 synchronized, p50",
     ("monitors.contended", "monitor enter+exit", "p50"),
     ("hotspot_monitors.contended", "synchronized", "p50", HS25), "<=", 1.0, "#16"),
    ("monitors: uncontended path within the mutex's cost, enter+exit / pthread mutex, p50",
     ("monitors.uncontended", "monitor enter+exit", "p50"),
     ("monitors.uncontended", "pthread_mutex lock+unlock", "p50"), "<=", 1.0, "#16"),
    ("monitors: wait/notify round trip / HotSpot 17 wait/notify, p50",
     ("monitors.handoff", "monitor wait/notify round trip", "p50"),
     ("hotspot_monitors.handoff", "wait_notify", "p50", HS17), "<=", 1.0, "#16"),
    ("monitors: wait/notify round trip / HotSpot 25 wait/notify, p50",
     ("monitors.handoff", "monitor wait/notify round trip", "p50"),
     ("hotspot_monitors.handoff", "wait_notify", "p50", HS25), "<=", 1.0, "#16"),
    ("management: CPU-time sweep / bare clock_gettime loop, 1000 threads",
     ("management", "cpu_time_sweep_1000", "p50"), ("management", "bare_clock_sweep_1000", "p50"),
     "<=", 1.3, "#6"),
    ("management: CPU-time sweep / bare clock_gettime loop, 1000 threads (#16)",
     ("management", "cpu_time_sweep_1000", "p50"), ("management", "bare_clock_sweep_1000", "p50"),
     "<=", 1.1, "#16"),
    ("management: CPU-time sweep / bare clock_gettime loop, 10,000 threads",
     ("management", "cpu_time_sweep_10000", "p50"),
     ("management", "bare_clock_sweep_10000", "p50"), "<=", 1.1, "#16"),
    # The floor the sweep's own syscalls are issued at (inline, no return after each): what
    # its validation and lookups add on top. Reported.
    ("management: CPU-time sweep / the same syscalls inline, 10,000 threads",
     ("management", "cpu_time_sweep_10000", "p50"),
     ("management", "raw_clock_sweep_10000", "p50"), None, None, "#16"),
    ("management: /proc sweep / CPU-time sweep, 1000 threads",
     ("management", "proc_sweep_1000", "p50"), ("management", "cpu_time_sweep_1000", "p50"),
     ">=", 15, "#6"),
    ("cpu_time: own consistent user time right after another thread's read / alone, p50",
     ("cpu_time", "vmt_user_consistent_after_other", "p50"),
     ("cpu_time", "vmt_user_consistent", "p50"), None, None, "#12"),
    ("HotSpot getCurrentThreadUserTime / vmthread consistent user time, p50",
     ("hotspot", "current_user_time", "p50"), ("cpu_time", "vmt_user_consistent", "p50"),
     None, None, "#7"),
    ("HotSpot Thread.start+join / vmthread start+join, median",
     ("hotspot_thread_start", "start_join_1000", "p50"), ("thread_start", "vmthread", "p50"),
     None, None, "#7"),
    # #14: HotSpot's requests to a running thread against the C floor (a poll-word round trip
    # with a spinning requester); the poll check's own cost on a loop.
    ("handshake: HotSpot 17 getStackTrace (a safepoint) of a running thread / poll-word "
     "round trip, p50",
     ("hotspot_stack_trace", "get_stack_trace_running", "p50", dict(QUIET, **HS17)),
     ("handshake", "poll_round_trip", "p50", QUIET), None, None, "#14"),
    ("handshake: HotSpot 25 getStackTrace (a handshake) of a running thread / poll-word "
     "round trip, p50",
     ("hotspot_stack_trace", "get_stack_trace_running", "p50", dict(QUIET, **HS25)),
     ("handshake", "poll_round_trip", "p50", QUIET), None, None, "#14"),
    ("handshake: HotSpot 25 JVMTI SuspendThread of a running thread / poll-word round trip, p50",
     ("hotspot_suspend", "jvmti_suspend_running", "p50", dict(QUIET, **HS25)),
     ("handshake", "poll_round_trip", "p50", QUIET), None, None, "#14"),
    ("handshake: a loop with a poll-word check / without, p50",
     ("handshake.poll_cost", "loop_poll_word", "p50"),
     ("handshake.poll_cost", "loop_plain", "p50"), None, None, "#14"),
    # #14's "done when" for vmthread's VM services (bench/handshake.c's vmt_* rows).
    ("handshake: HotSpot 25 getStackTrace of a running thread / vmt_handshake_run to one, p50",
     ("hotspot_stack_trace", "get_stack_trace_running", "p50", dict(QUIET, **HS25)),
     ("handshake", "vmt_handshake_running", "p50", QUIET), ">=", 8, "#14"),
    ("handshake: HotSpot 17 getStackTrace of a running thread / vmt_handshake_run to one, p50",
     ("hotspot_stack_trace", "get_stack_trace_running", "p50", dict(QUIET, **HS17)),
     ("handshake", "vmt_handshake_running", "p50", QUIET), None, None, "#14"),
    ("handshake: vmt_handshake_run to a running thread / poll-word round trip, p50",
     ("handshake", "vmt_handshake_running", "p50", QUIET),
     ("handshake", "poll_round_trip", "p50", QUIET), None, None, "#14"),
    # A resume finds its thread asleep on its word: its floor is the kernel's wake of a
    # sleeper, as the waker sees it (bench/handshake.c, futex_wake_sleeper).
    ("resume: vmt_thread_resume of a running thread / FUTEX_WAKE of a sleeper, p50",
     ("handshake.suspend", "vmt_resume_running", "p50", QUIET),
     ("handshake.suspend", "futex_wake_sleeper", "p50", QUIET), None, None, "#14"),
    ("handshake: a loop with vmt_poll / without, p50",
     ("handshake.poll_cost", "loop_vmt_poll", "p50"),
     ("handshake.poll_cost", "loop_plain", "p50"), "<=", 1.01, "#14"),
    ("handshake: a loop with vmt_poll(vmt_thread_current()) / without, p50",
     ("handshake.poll_cost", "loop_vmt_poll_current", "p50"),
     ("handshake.poll_cost", "loop_plain", "p50"), None, None, "#14"),
    ("safepoint: HotSpot 25 findDeadlockedThreads, 1,000 idle / vmthread's at a safepoint, p50",
     ("hotspot_safepoint", "find_deadlocks", "p50",
      dict(HS25, idle_threads=1000, running_threads=0)),
     ("handshake.safepoint", "vmt_find_deadlocks_at_safepoint", "p50",
      {"idle_threads": 1000, "running_threads": 0}), None, None, "#14"),
    # #15: wake-ups against the C floors, vmthread's calls of today against HotSpot.
    ("wake: vmt_unpark -> vmt_park returns / futex wake floor, p50",
     ("wake", "vmt_unpark", "p50"), ("wake", "futex_wake", "p50"), "<=", 1.1, "#15"),
    ("wake: a thread's exit -> vmt_thread_join returns / raw pthread_join, p50",
     ("wake", "vmt_exit_join", "p50"), ("wake", "pthread_exit_join", "p50"), "<=", 1.2, "#15"),
    ("wake: vmt_unpark / HotSpot 17 unpark, p50",
     ("wake", "vmt_unpark", "p50"), ("hotspot_wake", "unpark", "p50", HS17), "<=", 1.0, "#15"),
    ("wake: vmt_unpark / HotSpot 25 unpark, p50",
     ("wake", "vmt_unpark", "p50"), ("hotspot_wake", "unpark", "p50", HS25), "<=", 1.0, "#15"),
    ("wake: exit -> vmt_thread_join / HotSpot 17 exit -> join, p50",
     ("wake", "vmt_exit_join", "p50"), ("hotspot_wake", "exit_join", "p50", HS17),
     "<=", 1.0, "#15"),
    ("wake: exit -> vmt_thread_join / HotSpot 25 exit -> join, p50",
     ("wake", "vmt_exit_join", "p50"), ("hotspot_wake", "exit_join", "p50", HS25),
     "<=", 1.0, "#15"),
] + [
    # #15's interrupt -> wake for sleep, park, wait, join: against the futex floor and HotSpot.
    line
    for call, variant, java in (("sleep", "vmt_interrupt_sleep", "interrupt_sleep"),
                                ("park", "vmt_interrupt_park", "interrupt_park"),
                                ("wait", "vmt_interrupt_wait", "interrupt_wait"),
                                ("join", "vmt_interrupt_join", "interrupt_join"))
    for line in (
        ("wake: interrupt -> %s returns / futex wake floor, p50" % call,
         ("wake", variant, "p50"), ("wake", "futex_wake", "p50"), "<=", 1.2, "#15"),
        ("wake: interrupt -> %s / HotSpot 17 interrupt -> %s, p50" % (call, call),
         ("wake", variant, "p50"), ("hotspot_wake", java, "p50", HS17), "<=", 1.0, "#15"),
        ("wake: interrupt -> %s / HotSpot 25 interrupt -> %s, p50" % (call, call),
         ("wake", variant, "p50"), ("hotspot_wake", java, "p50", HS25), "<=", 1.0, "#15"))
] + [
    # #15: "TLS get <= 1 ns" beside __thread (the floor) and pthread_getspecific.
    ("tls: vmt_tls_get / __thread read, p50",
     ("tls", "vmt_tls_get", "p50"), ("tls", "thread_local", "p50"), None, None, "#15"),
    ("tls: vmt_tls_get / pthread_getspecific, p50",
     ("tls", "vmt_tls_get", "p50"), ("tls", "pthread_getspecific", "p50"), None, None, "#15"),
    ("wake: HotSpot 17 interrupt -> Thread.sleep throws / futex wake floor, p50",
     ("hotspot_wake", "interrupt_sleep", "p50", HS17), ("wake", "futex_wake", "p50"),
     None, None, "#15"),
    ("wake: HotSpot 25 interrupt -> Thread.sleep throws / futex wake floor, p50",
     ("hotspot_wake", "interrupt_sleep", "p50", HS25), ("wake", "futex_wake", "p50"),
     None, None, "#15"),
    ("wake: pthread_kill -> nanosleep EINTR / futex wake floor, p50",
     ("wake", "pthread_kill_nanosleep", "p50"), ("wake", "futex_wake", "p50"), None, None, "#15"),
    ("wake: HotSpot 17 exit -> join / raw pthread_join, p50",
     ("hotspot_wake", "exit_join", "p50", HS17), ("wake", "pthread_exit_join", "p50"),
     None, None, "#15"),
    ("wake: HotSpot 25 exit -> join / raw pthread_join, p50",
     ("hotspot_wake", "exit_join", "p50", HS25), ("wake", "pthread_exit_join", "p50"),
     None, None, "#15"),
]

# Growth with the thread count (issue #12 item 18: "per-thread cost at 10,000 <= 1.1x that at
# 1,000"): (label, bench, operation, floor operation or None, small n, large n, limit,
# source). bench/management.c measures it in paired rounds (run_growth): 1000 threads stay
# parked while 9000 more start and end every round, and each round measures every call at both
# sizes within a few seconds (the sizes' own rows, measured once each some seconds apart, moved
# by 1.03x to 1.64x between runs of the same code with what else ran). The cost is the calling
# thread's CPU time per thread (the calls run on the calling thread alone: a preempted call
# would otherwise count whatever else ran). The value is the median over the rounds of the
# round's ratio (row growth_<op>); with a floor, of the ratio with the floor's extra cost per
# thread taken off the 10,000 side (row growth_<op>_net_of_<floor>). A floor is the kernel's
# or the memory's part of the call, the same reads with no runtime in between, which grows
# with the thread count whatever the runtime does: every clock read is a syscall whose kernel
# side costs more with 10,000 tasks (the pid lookup and the task_structs miss the caches), so
# the calls that read thread clocks are held net of raw_clock_sweep (the same syscalls inline);
# the calls with stacks net of walk_floor (the benchmark's walker reading each thread's frame
# records on that thread's own stack, one mapping per thread); the text dump net of dump_floor
# (both, and a block of the dump's size written and freed: its result string, ~20 MB at 10,000
# threads, which jemalloc's oversize arena faults in afresh every call); allocated bytes net of alloc_counter_floor (each thread's jemalloc
# counter, in its TLS). The calls that read nothing of the threads' own memory (ThreadInfo as
# Java's, without CPU times; ids; the deadlock scan) are held to 1.1x flat. What is left over
# the limit is the runtime's own work growing faster than the thread count.
MANAGEMENT_FLOORS = [("cpu_time_sweep", "raw_clock_sweep"),
                     ("thread_info_all_cpu", "raw_clock_sweep"),
                     ("dump", "dump_floor"),
                     ("thread_info_all_stacks", "walk_floor"),
                     ("dump_all_threads", "walk_floor"),
                     ("allocated_bytes_all", "alloc_counter_floor")]
MANAGEMENT_PLAIN_CALLS = ["thread_info_all", "all_ids", "deadlock_scan"]
HEADLINE_GROWTH = (
    [("management: %s per thread, 10,000 / 1000 threads, net of %s's growth" % (op, floor),
      "management", op, floor, 1000, 10000, 1.1, "#12")
     for op, floor in MANAGEMENT_FLOORS]
    + [("management: %s per thread, 10,000 / 1000 threads" % op,
        "management", op, None, 1000, 10000, 1.1, "#12")
       for op in MANAGEMENT_PLAIN_CALLS]
    # The raw growth of the calls held to a floor and of the floors, for the record.
    + [("management: %s per thread, 10,000 / 1000 threads (raw)" % op,
        "management", op, None, 1000, 10000, None, "#12")
       for op in [c for c, _ in MANAGEMENT_FLOORS]
       + sorted(set(f for _, f in MANAGEMENT_FLOORS))])

# Single values an issue bounds (an extra key of one row): (label, (bench, variant, key) or
# (bench, variant, key, {extra key: value}), comparison, limit, source); comparison None:
# reported, no threshold.
HEADLINE_VALUES = [
    ("timers: TSC counter drift against CLOCK_MONOTONIC, |ppm|",
     ("timers", "vmt_counter", "drift_ppm"), "<", 50, "#3"),
    ("tls: vmt_tls_get, p50 (ns)", ("tls", "vmt_tls_get", "p50"), "<=", 1, "#15"),
] + [
    # #14: the VM services' absolute bounds (bench/handshake.c; a shared machine moves them:
    # read them next to the floors of the same run).
    (label, (bench, variant, stat, where), "<=", limit, "#14")
    for label, bench, variant, stat, where, limit in (
        ("handshake: to a running thread, p50 (us)", "handshake", "vmt_handshake_running",
         "p50", QUIET, 8),
        ("handshake: to a running thread, p99 (us)", "handshake", "vmt_handshake_running",
         "p99", QUIET, 30),
        ("handshake: to a parked thread, p50 (us)", "handshake", "vmt_handshake_parked", "p50",
         QUIET, 2),
        ("handshake: to a thread in native code, p50 (us)", "handshake",
         "vmt_handshake_native", "p50", QUIET, 2),
        ("handshake: to a running thread, 10,000 idle minus 0 idle, p50 (us)", "handshake",
         "vmt_handshake_running", "p50_delta_us", {"idle_threads": 10000, "running_threads": 0},
         1),
        ("handshake: to a parked thread, 10,000 idle minus 0 idle, p50 (us)", "handshake",
         "vmt_handshake_parked", "p50_delta_us", {"idle_threads": 10000, "running_threads": 0},
         1),
        ("safepoint: time to safepoint, 1 running thread, p50 (us)", "handshake.safepoint",
         "vmt_safepoint_reach", "p50", {"idle_threads": 0, "running_threads": 1}, 10),
        # A coordinator woken from a sleep, as a VM's is (docs/benchmarks.md, the _woken rows);
        # the spinning coordinator's figure is reported below, without a bound.
        ("safepoint: time to safepoint, 2 running threads (ncpu), coordinator woken, p50 (us)",
         "handshake.safepoint", "vmt_safepoint_reach_woken", "p50",
         {"idle_threads": 0, "running_threads": 2}, 10),
        ("safepoint: empty safepoint, 1,000 idle threads, p50 (us)", "handshake.safepoint",
         "vmt_safepoint_total", "p50", {"idle_threads": 1000, "running_threads": 0}, 20),
        ("safepoint: empty safepoint, 10,000 idle threads, p50 (us)", "handshake.safepoint",
         "vmt_safepoint_total", "p50", {"idle_threads": 10000, "running_threads": 0}, 150),
        ("suspend: a running thread, p50 (us)", "handshake.suspend", "vmt_suspend_running",
         "p50", QUIET, 8),
        ("suspend: a parked thread, p50 (us)", "handshake.suspend", "vmt_suspend_parked", "p50",
         QUIET, 1),
        ("resume: a running thread, p50 (us)", "handshake.suspend", "vmt_resume_running", "p50",
         QUIET, 1),
        ("resume: a parked thread, p50 (us)", "handshake.suspend", "vmt_resume_parked", "p50",
         QUIET, 1),
    )
] + [
    ("safepoint: time to safepoint, 2 running threads, spinning coordinator, p50 (us)",
     ("handshake.safepoint", "vmt_safepoint_reach", "p50",
      {"idle_threads": 0, "running_threads": 2}), None, None, "#14"),
] + [
    # #15: "1 ms timed blocking overshoot <= 20 us at p50 and <= 100 us at p99".
    ("wake.timed: %s overshoot of 1 ms, %s (us)" % (call, stat),
     ("wake.timed", variant, "overshoot_%s_us" % stat), "<=", limit, "#15")
    for call, variant in (("vmt_sleep_ns", "vmt_sleep_1ms"), ("vmt_park", "vmt_park_1ms"),
                          ("vmt_monitor_wait", "vmt_wait_1ms"),
                          ("vmt_thread_timed_join", "vmt_join_1ms"))
    for stat, limit in (("p50", 20), ("p99", 100))
] + [
    ("wake.timed: %s overshoot of 1 ms, p50 (us)" % what, ref, None, None, "#15")
    for what, ref in (
        ("nanosleep, default timer slack", ("wake.timed", "nanosleep_1ms", "overshoot_p50_us")),
        ("nanosleep, timer slack 1 ns",
         ("wake.timed", "nanosleep_1ms_slack_1ns", "overshoot_p50_us")),
        ("HotSpot 17 Thread.sleep", ("hotspot_wake.timed", "sleep_1ms", "overshoot_p50_us", HS17)),
        ("HotSpot 25 Thread.sleep", ("hotspot_wake.timed", "sleep_1ms", "overshoot_p50_us", HS25)))
] + [
    # Issue 18: the profiler's weights against each thread's CPU time (the worst of three
    # threads), its overhead in steady state (two identical workers taking one-tick turns on
    # one CPU, one profiled, the roles swapped within one profile: its CPU per unit of work,
    # each burst against its twin's on either side, with the drainer's CPU, in % of its
    # unprofiled twin's in the same round; median of the rounds, the spread in the row's p10,
    # p90, min and max), the method's own checks (A/A: neither profiled; a known cost injected
    # per sample), the start's and the stop's one-time cost, the drainer's CPU a second,
    # arming 10,000 threads.
    ("profiler: |weight x period - thread CPU| / thread CPU at 4 ms, worst thread, %",
     ("profiler", "accuracy_4ms", "max"), "<", 1, "#18"),
    ("profiler: the same at 10 ms, %", ("profiler", "accuracy_10ms", "max"), "<", 1, "#18"),
    ("profiler: the same at 20 ms, %", ("profiler", "accuracy_20ms", "max"), "<", 1, "#18"),
    ("profiler: profiled CPU per unit of work in % of its unprofiled twin's at 10 ms, median",
     ("profiler", "overhead_10ms", "p50"), "<", 100.5, "#18"),
    ("profiler: the same at 10 ms, p10 of the rounds",
     ("profiler", "overhead_10ms", "p10"), None, None, "#18"),
    ("profiler: the same at 10 ms, p90 of the rounds",
     ("profiler", "overhead_10ms", "p90"), None, None, "#18"),
    ("profiler: profiled CPU per unit of work in % of its unprofiled twin's at 4 ms, median",
     ("profiler", "overhead_4ms", "p50"), "<", 101, "#18"),
    ("profiler: the same at 4 ms, p10 of the rounds",
     ("profiler", "overhead_4ms", "p10"), None, None, "#18"),
    ("profiler: the same at 4 ms, p90 of the rounds",
     ("profiler", "overhead_4ms", "p90"), None, None, "#18"),
    ("profiler: the method's A/A check (neither twin profiled), median (100 = no bias)",
     ("profiler", "overhead_aa", "p50"), None, None, "#18"),
    ("profiler: the A/A check, p10 of the rounds", ("profiler", "overhead_aa", "p10"), None,
     None, "#18"),
    ("profiler: the A/A check, p90 of the rounds", ("profiler", "overhead_aa", "p90"), None,
     None, "#18"),
    ("profiler: the injected-cost check at 4 ms, the cost injected, % of the work",
     ("profiler", "overhead_4ms_injected", "expected_added_pct"), None, None, "#18"),
    ("profiler: the injected-cost check at 4 ms, the cost measured (median over overhead_4ms's)",
     ("profiler", "overhead_4ms_injected", "measured_added_pct"), None, None, "#18"),
    ("profiler: the injected-cost check's tolerance (two standard errors of the difference)",
     ("profiler", "overhead_4ms_injected", "tolerance_pct"), None, None, "#18"),
    ("profiler: the drainer's CPU in % of the workload's CPU at 10 ms (in overhead_10ms)",
     ("profiler", "overhead_10ms", "drainer_pct"), None, None, "#18"),
    ("profiler: a start in steady state (one-time, not in the rate), us of the caller's CPU",
     ("profiler", "overhead_10ms", "start_us"), None, None, "#18"),
    ("profiler: a stop (one-time), us of the caller's CPU",
     ("profiler", "overhead_10ms", "stop_us"), None, None, "#18"),
    ("profiler: the drainer's CPU, us a second, 10 ms, one busy thread",
     ("profiler", "drainer_10ms_1t", "p50"), None, None, "#18"),
    ("profiler: the same, 4 ms, one busy thread", ("profiler", "drainer_4ms_1t", "p50"), None,
     None, "#18"),
    ("profiler: the same, 10 ms, 64 busy threads", ("profiler", "drainer_10ms_64t", "p50"),
     None, None, "#18"),
    ("profiler: the same, 4 ms, 64 busy threads", ("profiler", "drainer_4ms_64t", "p50"), None,
     None, "#18"),
    ("profiler: its own time (handlers, drainer) in % of the workload's CPU at 10 ms",
     ("profiler", "overhead_10ms", "self_cost_pct"), None, None, "#18"),
    ("profiler: its own time (handlers, drainer) in % of the workload's CPU at 4 ms",
     ("profiler", "overhead_4ms", "self_cost_pct"), None, None, "#18"),
    ("profiler: signal mode, % of the weight on a non-polling function that used half the CPU",
     ("profiler", "bias_signal", "p50"), None, None, "#18"),
    ("profiler: cooperative mode (JEP 518's idea), the same (its bias: put on poll sites)",
     ("profiler", "bias_cooperative", "p50"), None, None, "#18"),
    ("profiler: arming 10,000 threads (vmt_prof_start), ms, median",
     ("profiler", "arm_10000", "p50"), "<", 50, "#18"),
    # The process CPU the same start used: what a loaded machine does not inflate.
    ("profiler: the same, process CPU the arming used, ms, median",
     ("profiler", "arm_10000", "cpu_ms"), None, None, "#18"),
    ("profiler: lost samples at 10 ms (all causes; by cause in the row)",
     ("profiler", "accuracy_10ms", "lost"), None, None, "#18"),
    ("profiler: vmthread at 10 ms, samples / (thread CPU / period)",
     ("profiler", "accuracy_10ms", "samples_per_expected"), None, None, "#18"),
    ("profiler: vmthread at 10 ms, weight x period / process CPU",
     ("profiler", "accuracy_10ms", "weight_per_process_cpu"), None, None, "#18"),
    # HotSpot 25's JFR CPU-time sampler (JEP 509) on the same kind of workload, in the same run
    # (bench/java/ProfilerBench.java; HotSpot 17 has no such event: its row says so).
    ("HotSpot 25 JFR jdk.CPUTimeSample at 10 ms, samples / (thread CPU / period)",
     ("hotspot_profiler", "jfr_accuracy_10ms", "samples_per_expected", HS25), None, None, "#18"),
    ("HotSpot 25 JFR jdk.CPUTimeSample at 10 ms, sum of samplingPeriod / thread CPU",
     ("hotspot_profiler", "jfr_accuracy_10ms", "weight_per_thread_cpu", HS25), None, None, "#18"),
    ("HotSpot 25 JFR jdk.CPUTimeSample at 10 ms, sum of samplingPeriod / process CPU",
     ("hotspot_profiler", "jfr_accuracy_10ms", "weight_per_process_cpu", HS25), None, None, "#18"),
    ("HotSpot 25 JFR jdk.CPUTimeSample at 10 ms, |weight - thread CPU| / thread CPU, worst, %",
     ("hotspot_profiler", "jfr_accuracy_10ms", "max", HS25), None, None, "#18"),
    ("HotSpot 25 JFR jdk.CPUTimeSample at 10 ms, profiled process CPU in % of unprofiled, median",
     ("hotspot_profiler", "jfr_overhead_10ms", "p50", HS25), None, None, "#18"),
    ("HotSpot 25 JFR at 10 ms, lost samples (jdk.CPUTimeSamplesLost)",
     ("hotspot_profiler", "jfr_accuracy_10ms", "lost", HS25), None, None, "#18"),
]

# vmthread next to HotSpot, per method: (method, vmthread (bench, variant), HotSpot (bench,
# variant)); either side may add {extra key: value} to pick one row among several of a
# variant. The ratio printed is HotSpot / vmthread: how many times faster vmthread is.
HOTSPOT_COMPARISON = [
    ("current thread user time", ("cpu_time", "vmt_user_consistent"),
     ("hotspot", "current_user_time")),
    ("current thread user time (fast)", ("cpu_time", "vmt_user_fast"),
     ("hotspot", "current_user_time")),
    ("current thread CPU time", ("cpu_time", "vmt_cpu"), ("hotspot", "current_cpu_time")),
    ("other thread user time", ("cpu_time", "vmt_other_user"), ("hotspot", "other_user_time")),
    ("other thread CPU time", ("cpu_time", "vmt_other_cpu"), ("hotspot", "other_cpu_time")),
    ("monotonic nanoseconds", ("timers", "vmt_counter_cached"), ("hotspot", "nano_time")),
    ("start+join, 1000 threads (us/thread)", ("thread_start", "vmthread"),
     ("hotspot_thread_start", "start_join_1000")),
    ("unpark -> park returns (us)", ("wake", "vmt_unpark"), ("hotspot_wake", "unpark")),
    ("notify -> wait returns (us)", ("wake", "vmt_notify"), ("hotspot_wake", "notify")),
    ("a thread's exit -> join returns (us)", ("wake", "vmt_exit_join"),
     ("hotspot_wake", "exit_join")),
    ("synchronized enter+exit, uncontended", ("monitors.uncontended", "monitor enter+exit"),
     ("hotspot_monitors.uncontended", "synchronized")),
    ("synchronized enter+exit, two threads contending",
     ("monitors.contended", "monitor enter+exit"), ("hotspot_monitors.contended", "synchronized")),
    ("ReentrantLock lock+unlock, uncontended", ("monitors.uncontended", "sync lock+unlock"),
     ("hotspot_monitors.uncontended", "reentrant_lock")),
    ("ReentrantLock lock+unlock, two threads contending",
     ("monitors.contended", "sync lock+unlock"), ("hotspot_monitors.contended", "reentrant_lock")),
    ("wait/notify round trip", ("monitors.handoff", "monitor wait/notify round trip"),
     ("hotspot_monitors.handoff", "wait_notify")),
    ("park/unpark round trip", ("monitors.handoff", "park/unpark round trip"),
     ("hotspot_monitors.handoff", "park_unpark")),
    ("1 ms sleep, actual duration (us)", ("wake.timed", "vmt_sleep_1ms"),
     ("hotspot_wake.timed", "sleep_1ms")),
    ("1 ms park, actual duration (us)", ("wake.timed", "vmt_park_1ms"),
     ("hotspot_wake.timed", "park_nanos_1ms")),
    ("1 ms monitor wait, actual duration (us)", ("wake.timed", "vmt_wait_1ms"),
     ("hotspot_wake.timed", "wait_1ms")),
    ("1 ms join, actual duration (us)", ("wake.timed", "vmt_join_1ms"),
     ("hotspot_wake.timed", "join_1ms")),
    ("interrupt -> sleep returns (us)", ("wake", "vmt_interrupt_sleep"),
     ("hotspot_wake", "interrupt_sleep")),
    ("interrupt -> park returns (us)", ("wake", "vmt_interrupt_park"),
     ("hotspot_wake", "interrupt_park")),
    ("interrupt -> wait returns (us)", ("wake", "vmt_interrupt_wait"),
     ("hotspot_wake", "interrupt_wait")),
    ("interrupt -> join returns (us)", ("wake", "vmt_interrupt_join"),
     ("hotspot_wake", "interrupt_join")),
] + [
    # #14: vmthread's VM services next to HotSpot's, target by target (bench/handshake.c,
    # bench/java/VmServicesBench.java), at 0 idle and 0 running threads unless said.
    (method, ("handshake" if b is None else b, v, where), (hb, hv, where))
    for method, b, v, hb, hv, where in (
        ("stack trace of a running thread (us)", None, "vmt_stack_trace_running",
         "hotspot_stack_trace", "get_stack_trace_running", QUIET),
        ("stack trace of a parked thread (us)", None, "vmt_stack_trace_parked",
         "hotspot_stack_trace", "get_stack_trace_parked", QUIET),
        ("stack trace, 10,000 idle threads (us)", None, "vmt_stack_trace_parked",
         "hotspot_stack_trace", "get_stack_trace_parked",
         {"idle_threads": 10000, "running_threads": 0}),
        ("handshake vs JVMTI GetStackTrace, running (us)", None, "vmt_handshake_running",
         "hotspot_stack_trace", "jvmti_get_stack_trace_running", QUIET),
        ("handshake vs JVMTI GetStackTrace, parked (us)", None, "vmt_handshake_parked",
         "hotspot_stack_trace", "jvmti_get_stack_trace_parked", QUIET),
        ("SuspendThread of a running thread (us)", "handshake.suspend", "vmt_suspend_running",
         "hotspot_suspend", "jvmti_suspend_running", QUIET),
        ("SuspendThread of a parked thread (us)", "handshake.suspend", "vmt_suspend_parked",
         "hotspot_suspend", "jvmti_suspend_parked", QUIET),
        ("ResumeThread of a parked thread (us)", "handshake.suspend", "vmt_resume_parked",
         "hotspot_suspend", "jvmti_resume_parked", QUIET),
        ("findDeadlockedThreads at a safepoint, 1 running (us)", "handshake.safepoint",
         "vmt_find_deadlocks_at_safepoint", "hotspot_safepoint", "find_deadlocks",
         {"idle_threads": 0, "running_threads": 1}),
        ("findDeadlockedThreads at a safepoint, 1,000 idle (us)", "handshake.safepoint",
         "vmt_find_deadlocks_at_safepoint", "hotspot_safepoint", "find_deadlocks",
         {"idle_threads": 1000, "running_threads": 0}),
        ("empty safepoint vs HotSpot's total, 10,000 idle (us)", "handshake.safepoint",
         "vmt_safepoint_total", "hotspot_safepoint", "find_deadlocks_total",
         {"idle_threads": 10000, "running_threads": 0}),
        ("time to safepoint vs HotSpot's reach, 1 running (us)", "handshake.safepoint",
         "vmt_safepoint_reach", "hotspot_safepoint", "find_deadlocks_reach",
         {"idle_threads": 0, "running_threads": 1}),
        ("time to safepoint, woken coordinator, vs HotSpot's reach, 2 running (us)",
         "handshake.safepoint", "vmt_safepoint_reach_woken", "hotspot_safepoint",
         "find_deadlocks_reach", {"idle_threads": 0, "running_threads": 2}),
    )
]

# Issue #16's management rows: bench/management.c against bench/java/ManagementBench.java,
# the same call over every thread at each thread count (variants <operation>_<threads> on
# both sides). (Java call, operation, HotSpot / vmthread must be at least this.) HotSpot stops
# the world for the calls with stacks; vmthread reads thread by thread: #16 asks 5x for those,
# and to be ahead (1x) on every other.
MANAGEMENT_SIZES = (1, 100, 1000, 10000)
MANAGEMENT_PAIRS = [
    ("getThreadCpuTime(long[])", "cpu_time_sweep", 1),
    ("getThreadInfo(ids, 0)", "thread_info_all", 1),
    ("getThreadInfo(ids, MAX)", "thread_info_all_stacks", 5),
    ("dumpAllThreads(true, true)", "dump_all_threads", 5),
    ("getAllThreadIds()", "all_ids", 1),
    ("findDeadlockedThreads()", "deadlock_scan", 1),
    ("getThreadAllocatedBytes(long[])", "allocated_bytes_all", 1),
    ("text dump (Thread.print -l)", "dump", 5),
]
HOTSPOT_COMPARISON += [
    ("%s, %s threads" % (call, "{:,}".format(n)), ("management", "%s_%d" % (op, n)),
     ("hotspot_management", "%s_%d" % (op, n)))
    for call, op, _ in MANAGEMENT_PAIRS for n in MANAGEMENT_SIZES]

# Published figures next to this run's: (figure, source, unit, published before, published
# after, this run's "before" side, this run's "after" side, factor from the rows' unit to the
# figure's unit). A side is (bench, variant, statistic-or-extra-key). The published numbers
# are quotations of their sources, not results of ours.
PUBLISHED = [
    ("getCurrentThreadUserTime, p50", "JDK-8372584, JMH sample mode", "us", 8.0, 1.0,
     ("hotspot", "current_user_time", "p50"), ("cpu_time", "vmt_user_fast", "p50"), 1e-3),
    ("getCurrentThreadUserTime, max", "JDK-8372584, JMH sample mode", "ms", 1.030, 0.054,
     ("hotspot", "current_user_time", "max"), ("cpu_time", "vmt_user_fast", "max"), 1e-6),
    ("1000 thread starts", "Kudu", "s", 0.071, 0.027,
     ("thread_start", "handshake", "p50"), ("thread_start", "vmthread", "p50"), 1e-3),
    ("context switches, 1000 starts", "Kudu", "", 29552, 17178,
     ("thread_start", "handshake", "csw"), ("thread_start", "vmthread", "csw"),
     1000),
]

STAT_NAMES = {"p50": "p50", "p90": "p90", "p99": "p99", "p999": "p99.9", "p9999": "p99.99",
              "max": "max", "mean": "mean", "min": "min",
              "per_thread_ns": "p50 per thread"}

# ---------------------------------------------------------------------------------------------


def fmt_num(v):
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return "{:,}".format(v)
    if abs(v) >= 1000:
        return "{:,.0f}".format(v)
    if abs(v) >= 10:
        return "%.1f" % v
    return "%.2f" % v


def rel(path):
    """A path for printing: relative to the repository when inside it."""
    return os.path.relpath(path, ROOT) if path.startswith(ROOT + os.sep) else path


def fmt_sig(v):
    """Three significant digits (published figures run from 0.027 s to 29,552)."""
    if v == 0:
        return "0"  # also for -0.0, which a C "%.3f" of a tiny negative drift gives
    return "{:,.0f}".format(v) if abs(v) >= 1000 else "%.3g" % v


def fmt_ratio(r):
    return ("%.0fx" if r >= 100 else "%.1fx" if r >= 10 else "%.2fx") % r


def fmt_elapsed(seconds):
    seconds = int(round(seconds))
    return "%d:%02d" % (seconds // 60, seconds % 60)


class Output:
    """Prints for people and keeps a Markdown copy of the parts that go into report.md."""

    def __init__(self):
        self.md = []

    @staticmethod
    def say(text=""):
        print(text, flush=True)

    def section(self, title):
        self.say("\n" + "=" * 100 + "\n" + title + "\n" + "=" * 100)
        self.md.append("\n### " + title + "\n")

    def table(self, header, rows, align=None, md_only=False):
        """header: list of column names; rows: lists of cells (strings). align: 'l'/'r'."""
        align = align or ["l"] + ["r"] * (len(header) - 1)
        if not md_only:
            widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
            for line in [header] + rows:
                cells = []
                for cell, w, a in zip(line, widths, align):
                    cells.append(str(cell).ljust(w) if a == "l" else str(cell).rjust(w))
                self.say("  ".join(cells).rstrip())
        self.md.append("| " + " | ".join(header) + " |")
        self.md.append("|" + "|".join("---" if a == "l" else "---:" for a in align) + "|")
        for line in rows:
            self.md.append("| " + " | ".join(str(c).replace("|", "\\|") for c in line) + " |")
        self.md.append("")

    def text(self, line):
        self.say(line)
        self.md.append(line + "\n")


# ---- machine ---------------------------------------------------------------------------------


def read_first(path, prefix=None):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if prefix is None:
                    return line.strip()
                if line.startswith(prefix):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def first_line(cmd):
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (proc.stdout + proc.stderr).strip()
    return text.splitlines()[0] if proc.returncode == 0 and text else None


def jvm_name(java):
    """'OpenJDK 64-Bit Server VM 17.0.15+6-...' for a java binary, or its path."""
    try:
        proc = subprocess.run([java, "-XshowSettings:properties", "-version"],
                              capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return java
    props = dict(re.findall(r"^\s*(java\.vm\.name|java\.vm\.version) = (.*)$",
                            proc.stderr, re.M))
    if not props:
        return java
    return "%s %s" % (props.get("java.vm.name", "?"), props.get("java.vm.version", "?"))


def find_jdks(explicit):
    """The JDKs to run the Java benchmarks on: [{java, javac, name, label}], the first one primary.
    explicit: --jdk directories, or None for PATH's java first, then every other JDK found
    under /usr/lib/jvm (told apart by the real path of bin/java)."""
    candidates = []
    if explicit:
        for d in explicit:
            candidates.append((os.path.join(d, "bin", "java"), os.path.join(d, "bin", "javac")))
    else:
        candidates.append((shutil.which("java"), shutil.which("javac")))
        base = "/usr/lib/jvm"
        if os.path.isdir(base):
            for d in sorted(os.listdir(base)):
                candidates.append((os.path.join(base, d, "bin", "java"),
                                   os.path.join(base, d, "bin", "javac")))
    jdks, seen = [], set()
    for java, javac in candidates:
        if not java or not javac or not os.access(java, os.X_OK) or not os.access(javac, os.X_OK):
            if explicit:
                raise ValueError("no bin/java and bin/javac under %s"
                                 % os.path.dirname(os.path.dirname(java)))
            continue
        real = os.path.realpath(java)
        if real in seen:
            continue
        seen.add(real)
        name = jvm_name(java)
        major = re.search(r" (\d+)[.+]", name + " ")
        jdks.append({"java": java, "javac": javac, "name": name,
                     "label": "hotspot" if not jdks else
                     "hotspot-jdk%s" % (major.group(1) if major else len(jdks))})
    return jdks


def describe_machine(jdks):
    """What every figure of the run depends on (issue 7: CPU model, cores, kernel,
    clocksource, HZ, glibc, compiler), plus the JVM and the load when the run started."""
    try:
        # CLOCK_MONOTONIC_COARSE (clock id 6; Python has no name for it) advances once per
        # tick: its resolution is 1/HZ.
        hz = round(1 / time.clock_getres(getattr(time, "CLOCK_MONOTONIC_COARSE", 6)))
    except (AttributeError, OSError, ZeroDivisionError):
        hz = None
    flags = read_first("/proc/cpuinfo", "flags").split()
    m = {
        "cpu": read_first("/proc/cpuinfo", "model name"),
        "cores": os.sysconf("SC_NPROCESSORS_ONLN"),
        "kernel": platform.release(),
        "clocksource": read_first(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        "hz": hz,
        "tsc_flags": " ".join(f for f in ("constant_tsc", "nonstop_tsc", "rdtscp",
                                          "tsc_known_freq") if f in flags) or "none",
        "glibc": (os.confstr("CS_GNU_LIBC_VERSION") or "unknown").replace("glibc ", ""),
        "compiler": first_line(["gcc", "--version"]) or "unknown",
        # Debian's bazel-bootstrap calls itself "no_version": ask the package instead.
        "bazel": "bazel " + (first_line(["dpkg-query", "-W", "-f=${Version}", "bazel-bootstrap"])
                             or first_line(["bazel", "--version"]) or "unknown"),
        "jvm": None,
        "loadavg_at_start": round(os.getloadavg()[0], 2),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    if jdks:
        m["jvm"] = " + ".join(j["name"] for j in jdks)
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, check=False).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=False).stdout.strip()
        m["commit"] = (commit + ("+uncommitted" if dirty else "")) if commit else "unknown"
    except OSError:
        m["commit"] = "unknown"
    return m


def machine_lines(m):
    return [
        "machine: %s | %s cores | Linux %s | clocksource %s | HZ %s | TSC flags: %s"
        % (m["cpu"], m["cores"], m["kernel"], m["clocksource"], m["hz"], m["tsc_flags"]),
        "toolchain: glibc %s | %s | %s | JVM: %s"
        % (m["glibc"], m["compiler"], m["bazel"], m["jvm"] or "none"),
        "run: %s | vmthread %s | load average at start %s (other work on the machine shows in "
        "the tails; ratios are taken within one process run)"
        % (m["date_utc"], m["commit"], m["loadavg_at_start"]),
    ]


# ---- running ---------------------------------------------------------------------------------


class Progress:
    """'[n/N] name' lines, the suite's elapsed time, and a heartbeat while a step is silent."""

    def __init__(self, total):
        self.total = total
        self.index = 0
        self.suite_start = time.monotonic()

    def elapsed(self):
        return fmt_elapsed(time.monotonic() - self.suite_start)

    def start(self, name, what):
        self.index += 1
        print("\n[%d/%d] %s: %s (suite elapsed %s)" % (self.index, self.total, name, what,
                                                    self.elapsed()), flush=True)


def run_streaming(cmd, name, progress, timeout, log_path, cwd=ROOT):
    """Runs cmd; returns (rc, stdout lines, timed_out). stderr is shown as it comes (indented)
    and saved to log_path; a heartbeat line appears after 30 s without output."""
    start = time.monotonic()
    last_output = [start]
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, bufsize=1)
    out_lines = []

    def pump_stdout():
        for line in proc.stdout:
            out_lines.append(line)

    def pump_stderr():
        with open(log_path, "w", encoding="utf-8") as log:
            for line in proc.stderr:
                log.write(line)
                log.flush()
                last_output[0] = time.monotonic()
                print("    | " + line.rstrip("\n"), flush=True)

    readers = [threading.Thread(target=pump_stdout, daemon=True),
               threading.Thread(target=pump_stderr, daemon=True)]
    for r in readers:
        r.start()
    timed_out = False
    while True:
        try:
            proc.wait(timeout=1)
            break
        except subprocess.TimeoutExpired:
            now = time.monotonic()
            if timeout and now - start > timeout:
                proc.kill()
                proc.wait()
                timed_out = True
                break
            if now - last_output[0] >= 30:
                last_output[0] = now
                print("    ... %s running for %s (%d/%d, suite elapsed %s)"
                      % (name, fmt_elapsed(now - start), progress.index, progress.total,
                         progress.elapsed()), flush=True)
    for r in readers:
        r.join(timeout=5)
    return proc.returncode, out_lines, timed_out, time.monotonic() - start


def bazel(*args, capture=True):
    return subprocess.run(["bazel"] + list(args), cwd=ROOT, check=False, text=True,
                          stdout=subprocess.PIPE if capture else None,
                          stderr=subprocess.DEVNULL if capture else None)


def discover_benchmarks():
    # \b: a tag list like "[benchmark, manual]" matches, "benchmarks_helper" does not.
    proc = bazel("query", r'attr(tags, "\bbenchmark\b", kind(cc_binary, //bench:*))',
                 "--output=label")
    if proc.returncode != 0:
        return None
    names = [l.split(":", 1)[1] for l in proc.stdout.split() if l.startswith("//bench:")]
    order = {n: i for i, n in enumerate(PREFERRED_ORDER)}
    return sorted(names, key=lambda n: (order.get(n, len(order)), n))


JAVA_DIR = os.path.join(ROOT, "bench", "java")


def java_sources(java_dir=JAVA_DIR):
    return sorted(f for f in os.listdir(java_dir) if f.endswith(".java"))


def java_benchmarks(java_dir=JAVA_DIR):
    """The Java benchmark programs: every bench/java/*Bench.java, HotSpotBench first, each
    with the JVM options and the Bazel targets its header comment asks for
    ("// bench-jvm-args: ..." and "// bench-build: ..." lines, BenchSupport.java)."""
    found = []
    for f in java_sources(java_dir):
        if not f.endswith("Bench.java"):
            continue
        jvm_args, build = [], []
        with open(os.path.join(java_dir, f), encoding="utf-8") as src:
            for line in src:
                if not line.startswith("//"):
                    break
                m = re.match(r"//\s*bench-(jvm-args|build):\s*(.*)$", line.strip())
                if m:
                    (jvm_args if m.group(1) == "jvm-args" else build).extend(m.group(2).split())
        found.append({"name": f[:-len(".java")], "jvm_args": jvm_args, "build": build})
    return sorted(found, key=lambda c: (c["name"] != "HotSpotBench", c["name"]))


def with_build_targets(classes):
    """The classes whose "bench-build" targets exist; the others are skipped with a message.
    A target may exist only on some machines (the JVMTI agent needs the JDK headers that
    //third_party:jdk.bzl looks for), and a missing one would fail the whole build."""
    kept = []
    for c in classes:
        missing = [t for t in c["build"] if bazel("query", t).returncode != 0]
        if missing:
            print("scripts/bench: %s skipped: %s not defined here (no JDK headers found by "
                  "//third_party:jdk.bzl?)" % (c["name"], ", ".join(missing)), flush=True)
        else:
            kept.append(c)
    return kept


def expand(arg, subst):
    for k, v in subst.items():
        arg = arg.replace(k, v)
    return arg


def parse_rows(lines, source, problems):
    """JSON rows from a program's stdout; every line must be a valid row."""
    rows = []
    for n, text in enumerate(lines, 1):
        if not text.strip():
            continue
        row, found = bench_check.check_line(text)
        problems.extend("%s: stdout line %d: %s" % (source, n, p) for p in found)
        if row is not None:
            rows.append(row)
    return rows


# ---- reporting -------------------------------------------------------------------------------

TABLE_STATS = ["min", "p50", "p90", "p99", "p999", "p9999", "max", "mean"]
NOT_EXTRA = bench_check.SCHEMA_KEYS


def table_title(row):
    """One table per bench, and per JVM for HotSpot's rows (several JDKs may have run)."""
    jvm = row.get("jvm")
    return row["bench"] + (" on JVM %s" % jvm if isinstance(jvm, str) else "")


def print_bench_tables(out, rows):
    titles = []
    for r in rows:
        if table_title(r) not in titles:
            titles.append(table_title(r))
    for title in titles:
        out.section(title)
        bench_table(out, [r for r in rows if table_title(r) == title])


def bench_table(out, rows, md_only=False):
    """One benchmark's table (rows of one table_title); scripts/doc_figures.py renders the
    tables it copies into other docs with it, so that they read as docs/benchmarks.md's."""
    header = ["variant", "unit", "samples"] + [STAT_NAMES[s] for s in TABLE_STATS] + ["extra"]
    table = []
    for r in rows:
        extras = " ".join("%s=%s" % (k, fmt_num(v) if isinstance(v, float) else v)
                          for k, v in r.items() if k not in NOT_EXTRA and k != "jvm")
        table.append([r["variant"], r["unit"], str(r["samples"])]
                     + [fmt_num(r[s]) if s in r else "-" for s in TABLE_STATS] + [extras])
    out.table(header, table, align=["l", "l"] + ["r"] * (len(TABLE_STATS) + 1) + ["l"],
              md_only=md_only)


def jvm_major(row):
    """The major version of the JVM a row comes from (its "jvm" key, java.vm.version), or None."""
    m = re.match(r"(\d+)", str(row.get("jvm", "")))
    return int(m.group(1)) if m else None


def matches(row, where):
    return all((jvm_major(row) if k == "jvm_major" else row.get(k)) == v
               for k, v in (where or {}).items())


def find_row(rows, bench, variant, where=None):
    """(row, None) or (None, reason) for a (bench, variant[, extras]) reference."""
    if not any(r["bench"] == bench for r in rows):
        return None, "benchmark %s not in this run" % bench
    found = [r for r in rows if r["bench"] == bench and r["variant"] == variant
             and matches(r, where)]
    name = "%s/%s%s" % (bench, variant, " (%s)" % ", ".join(
        "%s=%s" % kv for kv in sorted(where.items())) if where else "")
    if not found:
        return None, "no row %s in this run" % name
    if len(found) > 1:
        return None, "%d rows match %s" % (len(found), name)
    return found[0], None


def rows_for(ref, primary_rows, all_rows):
    """The rows a reference is looked up in: every JDK's when it names one, else the primary's."""
    where = ref[3] if len(ref) > 3 else {}
    return all_rows if all_rows is not None and "jvm_major" in where else primary_rows


def lookup(rows, ref):
    bench, variant, stat = ref[:3]
    where = ref[3] if len(ref) > 3 else None
    row, why = find_row(rows, bench, variant, where)
    if row is None:
        return None, None, why
    v = row.get(stat)
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return None, None, "row %s/%s has no numeric %s" % (bench, variant, stat)
    return v, row, None


def verdict(value, op, limit):
    if op is None:
        return "report"
    ok = {">=": value >= limit, "<=": value <= limit, "<": value < limit}[op]
    return "PASS" if ok else "MISS"


def headline(rows, all_rows=None):
    """[(label, value text, wanted text, verdict, source)] computed from this run's rows: the
    primary JDK's (rows), and every JDK's (all_rows) for references that name one."""
    lines = []
    for label, num, den, op, limit, source in HEADLINE_RATIOS:
        nv, nrow, why = lookup(rows_for(num, rows, all_rows), num)
        dv = drow = None
        if why is None:
            dv, drow, why = lookup(rows_for(den, rows, all_rows), den)
        if why is None and nrow["unit"] != drow["unit"]:
            why = "units differ (%s vs %s)" % (nrow["unit"], drow["unit"])
        if why is None and dv <= 0:
            why = "denominator %s/%s %s is %s" % (den[0], den[1], den[2], dv)
        wanted = "%s %sx" % (op, fmt_num(limit)) if op else "-"
        if why is not None:
            lines.append((label, "n/a (%s)" % why, wanted, "n/a", source))
            continue
        ratio = nv / dv
        lines.append((label, "%s (%s / %s %s)" % (fmt_ratio(ratio), fmt_num(nv), fmt_num(dv),
                                                      nrow["unit"]),
                      wanted, verdict(ratio, op, limit), source))
    for label, bench, op_name, floor, small, large, limit, source in HEADLINE_GROWTH:
        lines.append(growth_line(rows, label, bench, op_name, floor, small, large, limit, source))
    for label, ref, op, limit, source in HEADLINE_VALUES:
        v, row, why = lookup(rows_for(ref, rows, all_rows), ref)
        wanted = "%s %s" % (op, fmt_num(limit)) if op else "-"
        if why is not None:
            lines.append((label, "n/a (%s)" % why, wanted, "n/a", source))
            continue
        # Four significant digits: a ratio near 1 (1.003) must not print as 1.
        shown = "{:,.0f}".format(v) if abs(v) >= 1000 else "%.4g" % v
        lines.append((label, shown, wanted, verdict(abs(v), op, limit), source))
    return lines


def published(rows):
    """Rows of the published-figures table: theirs before -> after, ours before -> after."""
    table = []
    for figure, source, unit, before, after, ours_before, ours_after, factor in PUBLISHED:
        b, _, why = lookup(rows, ours_before)
        a = None
        if why is None:
            a, _, why = lookup(rows, ours_after)
        theirs = ("%s -> %s %s" % (fmt_sig(before), fmt_sig(after), unit)).rstrip() \
            + " (%s)" % fmt_ratio(before / after)
        if why is not None:
            ours = "n/a (%s)" % why
        elif a <= 0:
            ours = "n/a (%s/%s %s is %s)" % (ours_after[0], ours_after[1], ours_after[2], a)
        else:
            ours = ("%s -> %s %s" % (fmt_sig(b * factor), fmt_sig(a * factor), unit)).rstrip() \
                + " (%s)" % fmt_ratio(b / a)
        table.append([figure, source, theirs, ours,
                      "%s/%s -> %s/%s, %s" % (ours_before[0], ours_before[1], ours_after[0],
                                              ours_after[1], STAT_NAMES.get(ours_after[2],
                                                                            ours_after[2]))])
    return table


def growth_line(rows, label, bench, op_name, floor, small, large, limit, source):
    """A summary line for one HEADLINE_GROWTH entry: the p50 of the paired rounds' row."""
    wanted = "<= %sx" % fmt_num(limit) if limit is not None else "-"
    variant = "growth_%s" % op_name + ("_net_of_%s" % floor if floor else "")
    value, row, why = lookup(rows, (bench, variant, "p50"))
    if why is None and (row.get("small"), row.get("large")) != (small, large):
        why = "%s/%s is of %s to %s threads" % (bench, variant, row.get("small"),
                                                row.get("large"))
    if why is not None:
        return (label, "n/a (%s)" % why, wanted, "n/a", source)
    text = fmt_ratio(value)
    rounds = "median of %s paired rounds" % row.get("rounds", "?")
    if floor:
        g, _, _ = lookup(rows, (bench, "growth_%s" % op_name, "p50"))
        fg, _, _ = lookup(rows, (bench, "growth_%s" % floor, "p50"))
        raw = ", ".join("%s %s" % (n, fmt_ratio(v)) for n, v in ((op_name, g), (floor, fg))
                        if v is not None)
        text += " (%s%s)" % (rounds, "; raw: " + raw if raw else "")
    else:
        text += " (%s)" % rounds
    return (label, text, wanted, verdict(value, "<=" if limit is not None else None, limit),
            source)


def hotspot_growth_line(jdk, rows, call, op_name):
    """HotSpot's own growth per thread from 1000 to 10,000 threads (p50 of each size's one
    measurement), a report line beside #12's lines for vmthread's."""
    label = "vs HotSpot %s: %s per thread, 10,000 / 1000 threads, HotSpot's own" % (jdk, call)
    small, _, why = lookup(rows, ("hotspot_management", "%s_1000" % op_name, "p50"))
    large = None
    if why is None:
        large, _, why = lookup(rows, ("hotspot_management", "%s_10000" % op_name, "p50"))
    if why is None and small <= 0:
        why = "HotSpot's p50 at 1000 threads is %s" % small
    if why is not None:
        return (label, "n/a (%s)" % why, "-", "n/a", "#12")
    return (label, "%s (p50 per thread)" % fmt_ratio((large / 10000) / (small / 1000)), "-",
            "report", "#12")


def hotspot_summary(c_rows, jdk_rows):
    """Summary lines of #16's management thresholds, one per JDK and call: HotSpot / vmthread
    at p50 for every thread count both sides measured, the smallest of them against the
    threshold (every row must be ahead)."""
    lines = []
    for jdk, rows in jdk_rows:
        both = c_rows + rows
        for call, op_name, limit in MANAGEMENT_PAIRS:
            major = re.search(r" (\d+)[.+]", jdk.get("name", "") + " ")
            name = major.group(1) if major else jdk["label"]
            lines.append(hotspot_growth_line(name, rows, call, op_name))
            label = "vs HotSpot %s: %s, HotSpot / vmthread p50, every thread count" % (name,
                                                                                        call)
            wanted = ">= %sx" % fmt_num(limit)
            ratios, missing = [], []
            for n in MANAGEMENT_SIZES:
                vv, _, why = lookup(both, ("management", "%s_%d" % (op_name, n), "p50"))
                hv = None
                if why is None:
                    hv, _, why = lookup(both, ("hotspot_management", "%s_%d" % (op_name, n),
                                               "p50"))
                if why is None and vv <= 0:
                    why = "vmthread p50 is %s" % vv
                if why is not None:
                    missing.append("{:,}".format(n))
                    continue
                ratios.append((hv / vv, n))
            if not ratios:
                lines.append((label, "n/a (no thread count on both sides)", wanted, "n/a",
                              "#16"))
                continue
            worst, at = min(ratios)
            text = "%s at %s threads (%s)" % (
                fmt_ratio(worst), "{:,}".format(at),
                ", ".join("%s: %s" % ("{:,}".format(n), fmt_ratio(r)) for r, n in
                          sorted(ratios, key=lambda x: x[1])))
            if missing:
                text += "; not measured at %s" % ", ".join(missing)
            lines.append((label, text, wanted, verdict(worst, ">=", limit), "#16"))
    return lines


def comparison(rows):
    """(table rows, notes on the methods that could not be compared)."""
    table, notes = [], []
    for method, vside, hside in HOTSPOT_COMPARISON:
        (vb, vv), (hb, hv) = vside[:2], hside[:2]
        vrow, why = find_row(rows, vb, vv, vside[2] if len(vside) > 2 else None)
        hrow = None
        if why is None:
            hrow, why = find_row(rows, hb, hv, hside[2] if len(hside) > 2 else None)
        if why is None and vrow["unit"] != hrow["unit"]:
            why = "units differ"
        if why is not None:
            table.append([method, "%s/%s" % (vb, vv), "-"] + ["n/a"] * 9)
            notes.append("n/a: %s: %s" % (method, why))
            continue

        def ratio(stat):
            if vrow[stat] <= 0:
                return "n/a"
            return fmt_ratio(hrow[stat] / vrow[stat])

        # A p99 of fewer than 100 samples, or a p99.9 of fewer than 1000, is only their max
        # (thread start: 5-61 rounds; management at 10,000 threads: a few calls).
        fewest = min(vrow["samples"], hrow["samples"])

        def tail(stat, need):
            if fewest < need:
                return ["-", "-", "- (< %d samples)" % need]
            return [fmt_num(vrow[stat]), fmt_num(hrow[stat]), ratio(stat)]

        table.append([method, "%s/%s" % (vb, vv), vrow["unit"],
                      fmt_num(vrow["p50"]), fmt_num(hrow["p50"]), ratio("p50")]
                     + tail("p99", 100) + tail("p999", 1000))
    return table, notes


# ---- main ------------------------------------------------------------------------------------


def publish_docs(report_md, run_label):
    """Replaces the generated section of docs/benchmarks.md with this run's report."""
    path = os.path.join(ROOT, "docs", "benchmarks.md")
    begin, end = "<!-- bench:results:begin -->", "<!-- bench:results:end -->"
    try:
        with open(path, encoding="utf-8") as f:
            doc = f.read()
    except OSError:
        return "docs/benchmarks.md not found: not updated"
    if begin not in doc or end not in doc:
        return "docs/benchmarks.md has no %s ... %s section: not updated" % (begin, end)
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    body = ("\n<!-- Generated by `%s`; do not edit by hand. -->\n" % run_label
            + report_md.strip() + "\n")
    with open(path, "w", encoding="utf-8") as f:
        f.write(head + begin + body + end + tail)
    return "docs/benchmarks.md: results section replaced"


def publish_doc_figures(run_dir, docs_dir=None):
    """(ok, report lines): the figures the other docs quote, rewritten from this run
    (scripts/doc_figures.py); on any marker error no doc is rewritten."""
    import doc_figures  # noqa: E402 (here: it imports this module)
    try:
        return doc_figures.process(doc_figures.Run(run_dir),
                                   docs_dir or os.path.join(ROOT, "docs"), write=True)
    except doc_figures.FigureError as e:
        return False, [str(e)]


def main(argv):
    ap = argparse.ArgumentParser(prog="scripts/bench", usage=USAGE, add_help=False)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true")
    mode.add_argument("--long", action="store_true")
    ap.add_argument("--no-java", action="store_true")
    ap.add_argument("--jdk", action="append")
    ap.add_argument("--out")
    ap.add_argument("--publish", action="store_true")
    ap.add_argument("--only")
    ap.add_argument("-h", "--help", action="store_true")
    args = ap.parse_args(argv)
    if args.help:
        print("usage: " + USAGE)
        return 0
    mode_name = "quick" if args.quick else "long" if args.long else "default"
    mode_flags = ["--quick"] if args.quick else ["--long"] if args.long else []
    run_label = "scripts/bench" + "".join(" " + a for a in argv if a != "--publish")
    out = Output()
    suite_start = time.monotonic()

    if args.no_java and args.jdk:
        print("scripts/bench: --no-java and --jdk exclude each other", file=sys.stderr)
        return 2
    only = set(args.only.split(",")) if args.only else None
    java_classes = java_benchmarks()
    if only is not None and "hotspot" not in only:
        java_classes = [c for c in java_classes if c["name"] in only]
    jdks = []
    if not args.no_java and java_classes:
        try:
            jdks = find_jdks(args.jdk)
        except ValueError as e:
            print("scripts/bench: --jdk: %s" % e, file=sys.stderr)
            return 2
    if jdks:
        java_classes = with_build_targets(java_classes)

    # Run directory.
    results_root = os.path.join(ROOT, "results")
    if args.out:
        run_dir = os.path.abspath(args.out)
    else:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        run_dir = os.path.join(results_root, stamp)
    os.makedirs(run_dir, exist_ok=True)
    results_path = os.path.join(run_dir, "results.jsonl")
    open(results_path, "w").close()

    # Build.
    print("scripts/bench: %s mode; run directory %s" % (mode_name, rel(run_dir)), flush=True)
    names = discover_benchmarks()
    if names is None:
        print("scripts/bench: `bazel query` failed; run it by hand to see why", file=sys.stderr)
        return 1
    if only is not None:
        java_names = [c["name"] for c in java_benchmarks()]
        unknown = only - set(names) - {"hotspot"} - set(java_names)
        if unknown:
            print("scripts/bench: --only names unknown benchmarks: %s (have: %s)"
                  % (", ".join(sorted(unknown)), ", ".join(names + ["hotspot"] + java_names)),
                  file=sys.stderr)
            return 2
        names = [n for n in names if n in only]
    print("scripts/bench: benchmarks: %s" % (", ".join("//bench:" + n for n in names) or "none"),
          flush=True)
    bin_dir = None
    targets = ["//bench:" + n for n in names]
    targets += sorted({t for c in java_classes for t in c["build"]}) if jdks else []
    if targets:
        print("scripts/bench: building with --config=opt ...", flush=True)
        build = subprocess.run(["bazel", "build", "--config=opt"] + targets, cwd=ROOT,
                               check=False)
        if build.returncode != 0:
            print("scripts/bench: build failed", file=sys.stderr)
            return 1
        bin_dir = bazel("info", "--config=opt", "bazel-bin").stdout.strip()
    m = describe_machine(jdks)
    with open(os.path.join(run_dir, "machine.json"), "w", encoding="utf-8") as f:
        json.dump(m, f, indent=2)
    out.say("")
    for line in machine_lines(m):
        out.say(line)

    steps = len(names) + len(jdks) * len(java_classes)
    progress = Progress(steps)
    progress.suite_start = suite_start
    all_rows, failures = [], []

    def collect(name, cmd, timeout):
        """Runs one program; returns its rows (also added to all_rows and the file)."""
        rc, lines, timed_out, took = run_streaming(cmd, name, progress, timeout,
                                                   os.path.join(run_dir, name + ".log"))
        found = []
        rows = parse_rows(lines, name, found)
        # Rows that name a -Xlog:safepoint file get HotSpot's own times as companion rows.
        derived, log_problems = safepoint_log.derive_rows(rows, run_dir)
        failures.extend("%s: %s" % (name, p) for p in log_problems)
        rows += derived
        with open(results_path, "a", encoding="utf-8") as f:
            for line in lines:
                if line.strip():
                    f.write(line if line.endswith("\n") else line + "\n")
            for r in derived:
                f.write(json.dumps(r) + "\n")
        status = "done"
        if timed_out:
            failures.append("%s timed out after %s" % (name, fmt_elapsed(took)))
            status = "TIMED OUT"
        elif rc != 0:
            failures.append("%s exited with status %s" % (name, rc))
            status = "FAILED (exit %s)" % rc
        elif not rows:
            failures.append("%s printed no result rows" % name)
            status = "FAILED (no rows)"
        print("[%d/%d] %s: %s in %s, %d rows%s (suite elapsed %s)"
              % (progress.index, progress.total, name, status, fmt_elapsed(took), len(rows),
                 ", %d invalid lines" % len(found) if found else "", progress.elapsed()),
              flush=True)
        all_rows.extend(rows)
        return rows

    for name in names:
        progress.start(name, " ".join(["//bench:" + name] + mode_flags))
        collect(name, [os.path.join(bin_dir, "bench", name), "--json"] + mode_flags,
                BENCH_TIMEOUT_S[mode_name])

    java_note = None
    jdk_rows = []  # (jdk, its rows), the primary JDK first
    for jdk in jdks:
        # Each JDK compiles with its own javac: an older JDK cannot run a newer class file.
        with tempfile.TemporaryDirectory(prefix="vmt-hotspot-") as classes:
            jc = subprocess.run([jdk["javac"], "-d", classes]
                                + [os.path.join(JAVA_DIR, f) for f in java_sources()],
                                cwd=ROOT, capture_output=True, text=True, check=False)
            if jc.returncode != 0:
                print(jc.stdout + jc.stderr, flush=True)
                failures.append("%s failed on bench/java/*.java" % jdk["javac"])
                progress.index += len(java_classes)
                continue
            rows = []
            for cls in java_classes:
                name = jdk["label"] if cls["name"] == "HotSpotBench" else \
                    "%s-%s" % (jdk["label"], cls["name"])
                progress.start(name, "bench/java/%s.java on %s" % (cls["name"], jdk["name"]))
                subst = {"{bin}": bin_dir or "", "{run_dir}": run_dir, "{label}": name}
                jvm_args = [expand(a, subst) for a in cls["jvm_args"]]
                # The Java benchmarks have no --long: their default runs are already long.
                rows += collect(name, [jdk["java"]] + jvm_args
                                + ["-cp", classes, "vmtbench." + cls["name"], "--json"]
                                + (["--quick"] if args.quick else []),
                                BENCH_TIMEOUT_S[mode_name])
            jdk_rows.append((jdk, rows))
    if not jdks:
        if args.no_java or not java_classes:
            java_note = "HotSpot side skipped (--no-java or --only)."
        else:
            java_note = ("HotSpot side skipped: no java and javac on PATH (install a JDK, e.g. "
                         "Debian's openjdk-17-jdk-headless, to compare).")
        print("\n" + java_note, flush=True)
    # The comparison and the summary use the primary JDK's rows; the other JDKs' rows are in
    # the tables, the results file and the plots, and get a comparison table of their own.
    extra_ids = {id(r) for _, rows in jdk_rows[1:] for r in rows}
    primary_rows = [r for r in all_rows if id(r) not in extra_ids]

    # Tables, comparison, summary: from this run's rows only.
    print_bench_tables(out, all_rows)

    if java_note:
        out.section("vmthread vs HotSpot")
        out.text(java_note)
    c_rows = [r for r in all_rows if not r["bench"].startswith("hotspot")]
    for jdk, rows in jdk_rows:
        out.section("vmthread vs HotSpot %s (same run; ratio = HotSpot / vmthread, >1 means "
                    "vmthread is faster)" % jdk["name"])
        table, notes = comparison(c_rows + rows)
        out.table(["method", "vmthread row", "unit", "vmthread p50", "HotSpot p50", "ratio p50",
                   "vmthread p99", "HotSpot p99", "ratio p99",
                   "vmthread p99.9", "HotSpot p99.9", "ratio p99.9"],
                  table, align=["l", "l", "l"] + ["r"] * 9)
        for note in notes:
            out.text(note)
        overhead, _, why = lookup(c_rows, ("cpu_time", "timer_overhead", "p50"))
        if why is None:
            batched = sorted(r["variant"] for r in rows
                             if r["bench"] == "hotspot" and isinstance(r.get("batch"), int)
                             and r["batch"] > 1)
            hs_overhead, _, _ = lookup(rows, ("hotspot", "timer_overhead", "p50"))
            out.text("Method: each cpu_time sample is one call between two CLOCK_MONOTONIC "
                     "reads, so every vmthread figure above includes cpu_time/timer_overhead "
                     "(p50 %s ns this run). HotSpot rows %s are means over batches of calls, "
                     "which divides that overhead by the batch size and smooths the tail: both "
                     "make those ratios understate vmthread's lead. The other HotSpot rows are "
                     "single calls that include a System.nanoTime pair (hotspot/timer_overhead "
                     "p50 %s ns)."
                     % (fmt_num(overhead), ", ".join(batched) or "(none)",
                        fmt_num(hs_overhead) if hs_overhead is not None else "n/a"))

    out.section("Published figures next to this run's (before -> after, ratio)")
    out.table(["figure", "source", "published", "this run", "this run's rows"],
              published(primary_rows), align=["l"] * 5)

    out.section("Summary: headline ratios of this run (thresholds from the issues)")
    summary = headline(primary_rows, all_rows) + hotspot_summary(c_rows, jdk_rows)
    out.table(["ratio", "this run", "wanted", "verdict", "issue"],
              [list(s) for s in summary], align=["l", "l", "l", "l", "l"])
    counts = {v: sum(1 for s in summary if s[3] == v) for v in ("PASS", "MISS", "n/a")}
    out.text("%d PASS, %d MISS, %d n/a" % (counts["PASS"], counts["MISS"], counts["n/a"]))

    # Validation of the whole file (every line each program printed, and rows repeated across
    # programs), then plots from it.
    print("\nscripts/bench: validating %s" % rel(results_path), flush=True)
    _, file_problems = bench_check.check_file(results_path)
    for p in file_problems:
        print("  invalid: " + p, flush=True)
    valid = not file_problems and all_rows
    print("scripts/bench: results %s (%d rows)" % ("valid" if valid else "INVALID",
                                                   len(all_rows)), flush=True)

    plot_dirs = [run_dir] + ([os.path.join(ROOT, "docs", "img")] if args.publish else [])
    if shutil.which("gnuplot") and all_rows:
        for d in plot_dirs:
            pl = subprocess.run([os.path.join(ROOT, "bench", "plot.sh"), results_path, d],
                                cwd=ROOT, check=False)
            if pl.returncode != 0:
                failures.append("bench/plot.sh failed for %s" % d)
    else:
        print("scripts/bench: gnuplot not found: plots skipped", flush=True)

    report = ["## Results of `%s`\n" % run_label, "```"] + machine_lines(m) + ["```"] + out.md
    with open(os.path.join(run_dir, "report.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(report) + "\n")
    if args.publish:
        print("scripts/bench: " + publish_docs("\n".join(report), run_label), flush=True)
        ok, lines = publish_doc_figures(run_dir)
        for line in lines:
            print("scripts/bench: doc figures: " + line, flush=True)
        if not ok:
            failures.append("the figures of docs/*.md were not regenerated (see 'doc figures:')")

    if not args.out:
        link = os.path.join(results_root, "latest")
        tmp = link + ".tmp"
        if os.path.lexists(tmp):
            os.unlink(tmp)
        os.symlink(os.path.basename(run_dir), tmp)
        os.replace(tmp, link)

    total = time.monotonic() - suite_start
    budget = SUITE_BUDGET_S[mode_name]
    print("\nscripts/bench: %s mode took %s%s; results in %s" % (
        mode_name, fmt_elapsed(total),
        (" (over the %s budget of %s)" % (mode_name, fmt_elapsed(budget))
         if budget and total > budget else ""),
        rel(run_dir)), flush=True)
    for f in failures:
        print("scripts/bench: FAILED: " + f, file=sys.stderr)
    if not valid:
        print("scripts/bench: FAILED: the results do not validate (see 'invalid:' above)",
              file=sys.stderr)
    return 0 if valid and not failures else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
