#!/usr/bin/env bash
# jvm/test/jvm_test.sh: runs vmthread's JMX bridge in real JVMs, the path docs/embedding.md
# section 6 describes. It installs the library the way a Java host would ship it
# (scripts/install-lib --with-jvm into a temporary DESTDIR), builds the test's "language
# runtime" (jvm/test/native/vmthread_jni_test.c) with cc and pkg-config into a directory of its
# own, with -Wl,-rpath,$(pkg-config --variable=libdir vmthread) as section 6 says, then:
#   host     a JVM started with no environment at all (env -i) loads the bridge and the test's
#            "language runtime" with System.loadLibrary, runs the in-process tests
#            (io.vmthread.test.Main: JmxTest, ApiTest), registers the bean and serves it on an
#            RMI connector bound to 127.0.0.1, with the SIGQUIT dump enabled;
#   client   a second JVM, without vmthread.jar, reads it over that connector
#            (io.vmthread.test.Client: every attribute and operation, ThreadInfo.from, HotSpot's
#            messages, held locks in toString(), lockName = lockInfo);
#   jcmd     `jcmd <pid> Thread.print` must still work with the dump enabled and print
#            HotSpot's dump, while vmthread's goes to its file; then `kill -3` prints both;
#   guest    last, the host loads a guest library linked statically against libvmthread.a (a
#            second runtime): the bean must refuse to answer;
#   modules  a JVM limited to java.base, java.management and jdk.management (what a jlink'ed
#            application may hold) makes an MXBean proxy of VmThreadMXBean (ModulesTest);
#   jemalloc the in-process tests once more with LD_PRELOAD=libjemalloc.so.2: allocated bytes
#            are supported when jemalloc is the JVM's allocator, unsupported otherwise.
#   oom      a JVM with a 16 MB heap (OomTest): the bean's first ThreadInfo fails and the
#            next answers; then the heap is filled before each call: OutOfMemoryError or an
#            answer, and full answers once there is memory again;
#   native   a JVM without --enable-native-access: JDK 24+ warn at System.loadLibrary, older
#            ones do not (every other JVM here gets the option where the JDK takes it, and a
#            warning about it in any of them is a failure).
# Each JVM prints one line per check and "N passed, M failed"; this script prints the total
# over all of them as its own closing line. jvm.bzl runs it once per JDK found (--java-home).
#
# Usage (Bazel sh_test, from the runfiles tree):
#   jvm_test.sh --java-home=DIR [--sanitizer=asan|tsan]
#   jvm_test.sh --no-jdk              (no JDK was found when Bazel configured the build)
# Skipped, with the reason printed, without a JDK and under TSan. Under ASan the host runs with
# the sanitizer runtimes preloaded (see asan_env below) and there is no jemalloc run (the
# sanitizer's malloc is the allocator).
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

# The JDK under test (jvm.bzl makes one target per JDK found), by its release file.
major=$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$java_home/release" 2>/dev/null)
echo "JDK $major: $("$java_home/bin/java" -version 2>&1 | sed -n 2p)"
# Every JVM gets --enable-native-access=ALL-UNNAMED where the JDK takes it (17 does, JEP 412's
# option; 24+ warn at System.loadLibrary without it, JEP 472), as docs/embedding.md tells a
# host to start its JVM: vmthread.jar and the tests' jar are on the class path, unnamed.
native_access=()
if "$java_home/bin/java" --enable-native-access=ALL-UNNAMED -version >/dev/null 2>&1; then
  native_access=(--enable-native-access=ALL-UNNAMED)
fi

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

version=$(sed -n 's/^#define VMTHREAD_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' \
  include/vmthread/common.h | paste -sd.)

so=$lib/libvmthread.so.$(sed -n 's/^#define VMTHREAD_VERSION_MAJOR \([0-9]*\)$/\1/p' include/vmthread/common.h)
resolved() { ldd "$so" | sed -n "s/.*$1\\.so\\.[0-9]* => \\([^ ]*\\).*/\\1/p"; }
jemalloc=$(/sbin/ldconfig -p | awk '$1 == "libjemalloc.so.2" {print $NF; exit}')

passed=0 failed=0
pass() { passed=$((passed + 1)); echo "PASS: $*"; }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
check() {  # check DESCRIPTION COMMAND...
  local what=$1; shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}

# Adds the PASS/FAIL lines of one JVM's output (in file $2) to the totals, prefixed by [$1].
count_jvm() {  # count_jvm LABEL OUTPUT_FILE EXIT_CODE
  local label=$1 file=$2 rc=$3 p f
  # HotSpot's own thread dump (kill -3 prints it on the JVM's stdout) is summed up in a line.
  awk -v label="$label" '
    /^Full thread dump (OpenJDK|Java)/ { skip = 1; n = 0 }
    skip && /^(PASS|FAIL): |^== |^[0-9]+ passed/ {
      skip = 0; print "  [" label "] (HotSpot'"'"'s thread dump: " n " lines)" }
    skip { n++; next }
    { print "  [" label "] " $0 }' "$file"
  p=$(grep -c '^PASS: ' "$file")
  f=$(grep -c '^FAIL: ' "$file")
  passed=$((passed + p))
  failed=$((failed + f))
  # -Xcheck:jni makes the JVM validate every JNI call the natives make; its complaints are
  # warnings, which count as failures here.
  # "JNI local refs: N, exceeds capacity" is its warning for a native that holds more local
  # references than it reserved (EnsureLocalCapacity/PushLocalFrame, 16 plus 32 by default).
  if grep -q "WARNING in native method\|FATAL ERROR in native method\|WARNING: JNI local refs" "$file"; then
    fail "[$label] -Xcheck:jni reported a JNI misuse"
  fi
  # JDK 24+ (JEP 472) warns at the first System.loadLibrary of a class whose module has no
  # native access: "WARNING: A restricted method in java.lang.System has been called", and
  # says to use --enable-native-access. A host's command line must not make it do that.
  if grep -q "^WARNING: A restricted method\|^WARNING: Use --enable-native-access" "$file"; then
    fail "[$label] the JVM warned that native access is not enabled"
  fi
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    fail "[$label] the JVM exited with $rc"
  fi
  [ "$p" -gt 0 ] || fail "[$label] no check ran"
}

# java ENV... -- ARGS...: a JVM with exactly the environment ENV (env -i). -XX:-UsePerfData:
# no hsperfdata files in /tmp (jcmd <pid> attaches without them).
java_cmd() {
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  env -i "${envs[@]}" "$java_home/bin/java" -XX:-UsePerfData "${native_access[@]}" "$@"
}
cp_host="$jar:jvm/vmthread-tests.jar"

# Polls (every 0.1 s, 600 times: a deadline for a hung test, not a timing check) until the
# command succeeds.
await() { local i; for i in $(seq 600); do "$@" && return 0; sleep 0.1; done; return 1; }
dumps_in() { grep -c "^Full thread dump $1" "$2" 2>/dev/null || true; }

asan_env=()
cflags=()
if [ "$sanitizer" = asan ]; then
  # The ASan-built library in an uninstrumented JVM: the sanitizer runtimes must come first
  # in the process, so they are preloaded. HotSpot handles SIGSEGV itself (implicit null
  # checks, safepoint polls), so ASan must leave that signal alone; leak checking is off
  # because the JVM never frees its own allocations at exit, and those reports would bury any
  # of ours.
  asan_env=(LD_PRELOAD="$(resolved libasan):$(resolved libubsan)"
    ASAN_OPTIONS=handle_segv=0:allow_user_segv_handler=1:detect_leaks=0:abort_on_error=1)
  cflags=(-fsanitize=address,undefined)
fi

# ---- the installed files, as a Java host gets them ----------------------------------------
runpath() { readelf -d "$1" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p'; }
check "the installed bridge's RUNPATH is \$ORIGIN only ($(runpath "$lib/libvmthread_jni.so"))" \
  test "$(runpath "$lib/libvmthread_jni.so")" = '$ORIGIN'
java_dir=$stage$prefix/share/java
check "vmthread-javadoc.jar documents the public API" \
  bash -c "'$java_home/bin/jar' tf '$java_dir/vmthread-javadoc.jar' | grep -qx 'io/vmthread/VmThreadMXBean.html'"
check "vmthread-sources.jar holds the sources" \
  bash -c "'$java_home/bin/jar' tf '$java_dir/vmthread-sources.jar' | grep -qx 'io/vmthread/VmThreadMXBean.java'"

# ---- the language runtime, built as section 6 says -----------------------------------------
# Only the staged .pc is visible; the sysroot maps its recorded paths into the stage, so
# pkg-config answers as it would for a real install under $prefix.
export PKG_CONFIG_LIBDIR=$lib/pkgconfig PKG_CONFIG_PATH="" PKG_CONFIG_SYSROOT_DIR=$stage
jni_cflags=(-I"$java_home/include" -I"$java_home/include/linux")
app=$root/app
mkdir -p "$app"
# shellcheck disable=SC2046
build_runtime() {  # build_runtime OUTPUT EXTRA_LDFLAGS...
  local out=$1; shift
  ${CC:-cc} -std=c11 -Wall -Wextra -Werror "${cflags[@]}" -shared -fPIC -o "$out" \
    jvm/test/native/vmthread_jni_test.c -Ijvm "${jni_cflags[@]}" \
    $(pkg-config --cflags --libs vmthread) "$@"
}
if build_runtime "$app/libvmthread_jni_test.so" \
     -Wl,-rpath,"$(pkg-config --variable=libdir vmthread)" >"$root/cc.log" 2>&1; then
  pass "cc \$(pkg-config --cflags --libs vmthread) -Wl,-rpath,\$(pkg-config --variable=libdir vmthread) builds the runtime"
else
  cat "$root/cc.log"
  fail "cc builds the test's runtime against the installed library"
fi
# java.library.path finds a library, not its dependencies: without the rpath the loader has no
# way to find libvmthread.so.0 from the runtime's own directory (System.loadLibrary would fail
# with "libvmthread.so.0: cannot open shared object file").
check "with the rpath, the runtime's libvmthread.so.0 resolves to the installed one" \
  bash -c "ldd '$app/libvmthread_jni_test.so' | grep -q 'libvmthread.so.0 => $lib/libvmthread.so.0'"
build_runtime "$root/norpath.so" >/dev/null 2>&1
check "without it, it does not resolve (what the rpath is for)" \
  bash -c "ldd '$root/norpath.so' | grep -q 'libvmthread.so.0 => not found'"
test_props=(-Djava.library.path="$lib:$app" -Dvmthread.expected.version="$version")

# ---- host, client, jcmd, guest -------------------------------------------------------------
scene=$root/scene
rm -rf "$scene"
mkdir -p "$scene"
# The guest links the installed archive with plain cc, as a VM's own build would.
guest=$root/libstatic_guest.so
# shellcheck disable=SC2046
if ! ${CC:-cc} "${cflags[@]}" -shared -fPIC -o "$guest" jvm/test/native/guest_static.c \
     "${jni_cflags[@]}" $(pkg-config --cflags vmthread) \
     $(pkg-config --static --libs vmthread | sed 's/-lvmthread/-l:libvmthread.a/') \
     >"$root/guest.log" 2>&1; then
  cat "$root/guest.log"
  fail "cc builds the static guest against libvmthread.a"
  guest=""
fi
java_cmd "${asan_env[@]}" -- -Xcheck:jni "${test_props[@]}" -Dvmthread.expect.allocated=false \
  -cp "$cp_host" io.vmthread.test.Main --serve "$scene" ${guest:+--guest "$guest"} \
  >"$root/host.log" 2>&1 &
host=$!
if await test -f "$scene/host.properties" -o ! -d "/proc/$host"; then :; fi
if [ -f "$scene/host.properties" ]; then
  pid=$(sed -n 's/^pid=//p' "$scene/host.properties")
  java_cmd -- -cp jvm/vmthread-tests.jar io.vmthread.test.Client "$scene" >"$root/client.log" 2>&1
  count_jvm client "$root/client.log" $?

  # jcmd attaches by sending SIGQUIT (after creating .attach_pid<pid>): HotSpot's handler must
  # still run behind vmthread's, or jcmd fails with "Unable to open socket file".
  timeout 120 env -i "$java_home/bin/jcmd" "$pid" Thread.print >"$root/jcmd.log" 2>&1
  rc=$?
  sed 's/^/  [jcmd] /' "$root/jcmd.log" | head -5
  if [ $rc -eq 0 ] && grep -q "^Full thread dump " "$root/jcmd.log" &&
     grep -q "io.vmthread.test.Host.awaitStop" "$root/jcmd.log"; then
    pass "jcmd <pid> Thread.print works with the SIGQUIT dump enabled: HotSpot's dump of the host"
  else
    fail "jcmd <pid> Thread.print with the SIGQUIT dump enabled (exit $rc)"
  fi
  vmt_dump=$scene/vmthread-dump.txt
  if await grep -q "Locked ownable synchronizers" "$vmt_dump"; then
    pass "and vmthread's dump was written too ($(dumps_in vmthread "$vmt_dump") so far)"
  else
    fail "vmthread's SIGQUIT dump was not written"
  fi
  before=$(dumps_in vmthread "$vmt_dump")
  another_dump() { [ "$(dumps_in vmthread "$vmt_dump")" -gt "$before" ]; }
  kill -QUIT "$pid"
  if await another_dump &&
     await grep -q "^Full thread dump OpenJDK\|^Full thread dump Java" "$root/host.log"; then
    pass "kill -3 prints both dumps: HotSpot's on the JVM's stdout, vmthread's to its file"
  else
    fail "kill -3 with the dump enabled: vmthread's $(dumps_in vmthread "$vmt_dump") (was $before), HotSpot's in the host log: $(grep -c '^Full thread dump' "$root/host.log")"
  fi
else
  fail "the host did not start serving"
fi
touch "$scene/stop"
wait "$host"
count_jvm host "$root/host.log" $?

# ---- modules: a JVM with only the modules vmthread.jar needs (a jlink'ed image) ------------
java_cmd "${asan_env[@]}" -- -Xcheck:jni \
  --limit-modules java.base,java.management,jdk.management "${test_props[@]}" \
  -cp "$cp_host" io.vmthread.test.ModulesTest >"$root/modules.log" 2>&1
count_jvm modules "$root/modules.log" $?

# ---- oom: the bean in a JVM whose heap runs out during its calls (OomTest) -----------------
java_cmd "${asan_env[@]}" -- -Xcheck:jni -Xmx16m -XX:+UseSerialGC "${test_props[@]}" \
  -cp "$cp_host" io.vmthread.test.OomTest >"$root/oom.log" 2>&1
count_jvm oom "$root/oom.log" $?

# ---- native access: what --enable-native-access is for --------------------------------------
# The same JVM without the option: JDK 24+ must warn with the text count_jvm looks for (so that
# check cannot go blind if a JDK rewords it), an older JDK must not warn at all.
env -i "${asan_env[@]}" "$java_home/bin/java" -XX:-UsePerfData -Xcheck:jni \
  --limit-modules java.base,java.management,jdk.management "${test_props[@]}" \
  -cp "$cp_host" io.vmthread.test.ModulesTest >"$root/native-access.log" 2>&1
rc=$?
if [ "${major:-0}" -ge 24 ]; then
  check "without --enable-native-access, JDK $major warns at the bridge's System.loadLibrary" \
    grep -q "^WARNING: A restricted method in java.lang.System has been called" \
    "$root/native-access.log"
else
  check "without --enable-native-access, JDK $major does not warn (it restricts nothing JNI uses)" \
    bash -c "! grep -q '^WARNING: A restricted method\|--enable-native-access' '$root/native-access.log'"
fi
check "and runs the bridge all the same (exit $rc, no FAIL)" \
  bash -c "[ $rc -eq 0 ] && ! grep -q '^FAIL: ' '$root/native-access.log'"

# ---- jemalloc: allocated bytes are supported when jemalloc is the allocator ----------------
if [ "$sanitizer" != asan ]; then
  if [ -n "$jemalloc" ]; then
    java_cmd LD_PRELOAD="$jemalloc" -- -Xcheck:jni "${test_props[@]}" \
      -Dvmthread.expect.allocated=true -cp "$cp_host" io.vmthread.test.Main \
      >"$root/jemalloc.log" 2>&1
    count_jvm jemalloc "$root/jemalloc.log" $?
  else
    fail "no libjemalloc.so.2 found by ldconfig (scripts/install-deps installs it)"
  fi
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
