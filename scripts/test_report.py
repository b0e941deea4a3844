#!/usr/bin/env python3
"""Prints each test target's results from Bazel's test logs and one final line
'N passed, M failed' over all test cases.

A cmocka suite contributes its own counts ("[  PASSED  ] N test(s)." / "[  FAILED  ] N
test(s)"); a script test contributes the 'N passed, M failed' line it prints; a target with
neither, a crash, or no log at all counts as one failure (or one pass if Bazel says it passed).
"""
import os
import re
import sys
import xml.etree.ElementTree as ET

PASSED = re.compile(r"^\[  PASSED  \] (\d+) test\(s\)\.", re.M)
FAILED = re.compile(r"^\[  FAILED  \] (\d+) test\(s\), listed below", re.M)
SKIPPED = re.compile(r"^\[  SKIPPED \] (\d+) test\(s\), listed below", re.M)
PLAIN = re.compile(r"^(?:\w+: )?(\d+) passed, (\d+) failed(?:, (\d+) skipped)?$", re.M)


def bazel_status(logdir):
    """True if Bazel recorded the target as passing (test.xml without failures/errors)."""
    xml = os.path.join(logdir, "test.xml")
    if not os.path.exists(xml):
        return None
    try:
        root = ET.parse(xml).getroot()
    except ET.ParseError:
        return False
    for node in root.iter():
        if node.tag in ("failure", "error"):
            return False
    return True


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        print("\nUsage: test_report.py BAZEL_TESTLOGS_DIR TARGET...  (scripts/test runs it)")
        return 0 if len(sys.argv) > 1 else 2
    testlogs, targets = sys.argv[1], sys.argv[2:]
    total_pass = total_fail = total_skip = 0
    for target in targets:
        pkg, name = target.lstrip("/").split(":")
        logdir = os.path.join(testlogs, pkg, name)
        log_path = os.path.join(logdir, "test.log")
        text = open(log_path, errors="replace").read() if os.path.exists(log_path) else ""
        ok = bazel_status(logdir)
        p = sum(int(n) for n in PASSED.findall(text))
        f = sum(int(n) for n in FAILED.findall(text))
        s = sum(int(n) for n in SKIPPED.findall(text))
        plain = PLAIN.findall(text)
        if p + f + s == 0 and plain:
            p = sum(int(a) for a, _, _ in plain)
            f = sum(int(b) for _, b, _ in plain)
            s = sum(int(c or 0) for _, _, c in plain)
        if p + f + s == 0:
            # No result lines: a crash before the summary, a build failure, or no log.
            p, f = (1, 0) if ok else (0, 1)
        elif ok is False and f == 0:
            f = 1  # e.g. a crash after the summary, a leak report, a sanitizer exit code
        total_pass += p
        total_fail += f
        total_skip += s
        verdict = "ok" if ok and f == 0 else "FAILED"
        print(f"\n=== {target}: {verdict} ({p} passed, {f} failed, {s} skipped)")
        for line in re.findall(r"^\[ +(?:FAILED|SKIPPED|ERROR|  PASSED  ) +\].*$|^\[==========\].*$", text, re.M):
            print("  " + line)
        if verdict != "ok":
            tail = text.strip().splitlines()[-25:]
            print("  --- last lines of the log:")
            for line in tail:
                print("  | " + line)
    print()
    if total_skip:
        print(f"{total_skip} skipped (listed above: not applicable to this build)")
    print(f"{total_pass} passed, {total_fail} failed")
    return 1 if total_fail else 0


if __name__ == "__main__":
    sys.exit(main())
