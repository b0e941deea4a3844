#!/usr/bin/env bash
# scripts/help_test.sh: every script under scripts/ answers --help with its usage and exit 0,
# without starting Bazel, installing packages or running anything else (scripts/install-lib
# --help used to start a Bazel build). Bazel, apt-get, sudo and dpkg-query are replaced on
# PATH by stubs that record being called. Prints one line per script and "N passed, M failed".
#
# Usage: scripts/help_test.sh [--help]   (a Bazel sh_test: //scripts:help_test)
set -uo pipefail
case "${1:-}" in -h|--help) sed -n '2,7p' "$0"; exit 0 ;; esac
cd "$(dirname "$0")/.."

root=${TEST_TMPDIR:-$(mktemp -d)}
stubs=$root/stubs
calls=$root/calls
mkdir -p "$stubs"
for tool in bazel apt-get sudo dpkg-query; do
  printf '#!/bin/sh\necho "%s $*" >>"%s"\nexit 97\n' "$tool" "$calls" >"$stubs/$tool"
  chmod +x "$stubs/$tool"
done

passed=0 failed=0
for script in scripts/*; do
  name=${script#scripts/}
  case "$name" in BUILD.bazel | *.md) continue ;; esac
  [ -f "$script" ] || continue
  rm -f "$calls"
  if head -1 "$script" | grep -q python || [ "${name%.py}" != "$name" ]; then
    out=$(PATH=$stubs:$PATH timeout 60 python3 "$script" --help 2>&1)
  else
    out=$(PATH=$stubs:$PATH timeout 60 bash "$script" --help 2>&1)
  fi
  rc=$?
  problem=""
  [ $rc -eq 0 ] || problem="exit $rc"
  [ -f "$calls" ] && problem="${problem:+$problem, }ran $(tr '\n' ';' <"$calls")"
  grep -qi "usage\|$name" <<<"$out" || problem="${problem:+$problem, }no usage text"
  if [ -z "$problem" ]; then
    passed=$((passed + 1))
    echo "PASS: $name --help"
  else
    failed=$((failed + 1))
    echo "FAIL: $name --help: $problem"
    sed 's/^/  | /' <<<"$out" | head -5
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
