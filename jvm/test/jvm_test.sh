#!/usr/bin/env bash
# jvm/test/jvm_test.sh: runs vmthread's JMX bridge in a real JVM. It installs the library the
# way a Java host would ship it (scripts/install-lib --with-jvm into a temporary DESTDIR; the
# test's native library next to libvmthread.so.0, as a host's own runtime library would be),
# then runs io.vmthread.test.Main, which prints one line per check and "N passed, M failed";
# this script prints the total over its runs as its own closing line.
#
# Usage (Bazel sh_test, from the runfiles tree):
#   jvm_test.sh --java-home=DIR [--sanitizer=asan|tsan]
#   jvm_test.sh --no-jdk              (no JDK was found when Bazel configured the build)
# Skipped, with the reason printed, without a JDK and under TSan. Under ASan one run, with the
# sanitizer runtimes preloaded into the JVM (see run_jvm asan below).
set -uo pipefail

java_home="" sanitizer=""
for arg in "$@"; do
  case "$arg" in
    --java-home=*) java_home=${arg#--java-home=} ;;
    --no-jdk) java_home="" ;;
    --sanitizer=*) sanitizer=${arg#--sanitizer=} ;;
    *) echo "jvm_test: unknown argument $arg" >&2; exit 2 ;;
  esac
done

skip() {
  echo "SKIPPED: $*"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
}
[ -n "$java_home" ] && [ -x "$java_home/bin/java" ] ||
  skip "no JDK found (install one, e.g. openjdk-17-jdk-headless, and rebuild)"
[ "$sanitizer" != tsan ] ||
  skip "JVM tests do not run under --config=tsan (the JVM's own synchronization is not instrumented: TSan would report it as races)"

root=${TEST_TMPDIR:-$(mktemp -d)}
export TMPDIR=$root
stage=$root/stage
prefix=/opt/vmthread-jvm-test
rm -rf "$stage"
if ! DESTDIR=$stage PREFIX=$prefix scripts/install-lib --with-jvm --prebuilt . \
     >"$root/install.log" 2>&1; then
  cat "$root/install.log"
  echo "FAIL: install-lib"
  echo "0 passed, 1 failed"
  exit 1
fi
lib=$stage$prefix/lib
jar=$stage$prefix/share/java/vmthread.jar
# The test's "language runtime" goes where a host's own native library would: next to
# libvmthread.so.0, which it shares with the bridge.
install -m 0755 jvm/libvmthread_jni_test.so "$lib/"

version=$(sed -n 's/^#define VMTHREAD_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' \
  include/vmthread/common.h | paste -sd.)

# The JVM is started with no environment at all (env -i): System.loadLibrary must work in a
# stock JVM (the library has no DT_NEEDED on jemalloc, whose initial-exec TLS does not fit in
# a running JVM). Two runs:
#   noenv     nothing: malloc is glibc's, so allocated bytes are unsupported;
#   jemalloc  LD_PRELOAD=libjemalloc.so.2: jemalloc is the JVM's allocator, and the runtime
#             finds its mallctl, so the per-thread allocated-bytes counters are supported.
so=$lib/libvmthread.so.$(sed -n 's/^#define VMTHREAD_VERSION_MAJOR \([0-9]*\)$/\1/p' include/vmthread/common.h)
resolved() { ldd "$so" | sed -n "s/.*$1\\.so\\.[0-9]* => \\([^ ]*\\).*/\\1/p"; }
jemalloc=$(/sbin/ldconfig -p | awk '$1 == "libjemalloc.so.2" {print $NF; exit}')

passed=0 failed=0
run_jvm() {  # run_jvm MODE ENV...
  local mode=$1 out rc p f
  shift
  # -Xcheck:jni makes the JVM validate every JNI call the natives make; its complaints are
  # warnings, which count as failures here. -XX:-UsePerfData: no hsperfdata files in /tmp.
  out=$(env -i "$@" "$java_home/bin/java" -Xcheck:jni -XX:-UsePerfData \
    -Djava.library.path="$lib" -Dvmthread.expected.version="$version" \
    -cp "$jar":jvm/vmthread-tests.jar io.vmthread.test.Main 2>&1)
  rc=$?
  sed "s/^/  [$mode] /" <<<"$out"
  p=$(grep -c '^PASS: ' <<<"$out")
  f=$(grep -c '^FAIL: ' <<<"$out")
  passed=$((passed + p))
  failed=$((failed + f))
  if grep -q "WARNING in native method\|FATAL ERROR in native method" <<<"$out"; then
    echo "FAIL: [$mode] -Xcheck:jni reported a JNI misuse"
    failed=$((failed + 1))
  fi
  if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "FAIL: [$mode] the JVM exited with $rc"
    failed=$((failed + 1))
  fi
}

if [ "$sanitizer" = asan ]; then
  # The ASan-built library in an uninstrumented JVM: the sanitizer runtimes must come first
  # in the process, so they are preloaded. HotSpot handles SIGSEGV itself (implicit null
  # checks, safepoint polls), so ASan must leave that signal alone; leak checking is off
  # because the JVM never frees its own allocations at exit, and those reports would bury any
  # of ours.
  run_jvm asan LD_PRELOAD="$(resolved libasan):$(resolved libubsan)" \
    ASAN_OPTIONS=handle_segv=0:allow_user_segv_handler=1:detect_leaks=0:abort_on_error=1
else
  run_jvm noenv
  if [ -n "$jemalloc" ]; then
    run_jvm jemalloc LD_PRELOAD="$jemalloc"
  else
    echo "FAIL: no libjemalloc.so.2 found by ldconfig (scripts/install-deps installs it)"
    failed=$((failed + 1))
  fi
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
