#!/usr/bin/env bash
# test/install_test.sh: the library as a VM built without Bazel sees it. Installs vmthread with
# scripts/install-lib into a temporary DESTDIR (PREFIX /opt/vmthread-test, to show PREFIX and
# DESTDIR are honoured), then, with nothing but pkg-config and cc:
#   - checks the layout (soname chain, .a, headers, .pc) and what the .pc records,
#   - checks the exported ABI: only vmt_* in the dynamic symbol table, no vmt__* / vmt_os_*,
#     no internal symbol global in the archive, and that a program calling one cannot link,
#   - builds test/install_program.c against the shared and against the static library, and
#     as a CMake project (pkg_check_modules; skipped with a message where cmake is absent),
#     and runs each build (each "ok - ..." line the program prints is one check).
# Prints one line per check and a closing "N passed, M failed".
#
# Usage (Bazel sh_test, run from the runfiles tree): install_test.sh [EXTRA_CFLAGS...]
# EXTRA_CFLAGS are the sanitizer flags of the build under test (an ASan-built library can only
# be loaded by an ASan-built program).
set -uo pipefail

extra_cflags=("$@")
root=${TEST_TMPDIR:-$(mktemp -d)}
export TMPDIR=$root
stage=$root/stage
prefix=/opt/vmthread-test
rm -rf "$stage" "$root/build"
mkdir -p "$stage" "$root/build"

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "PASS: $*"; }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
check() {  # check DESCRIPTION COMMAND...
  local what=$1; shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
}

header_version() {
  sed -n "s/^#define VMTHREAD_VERSION_$1 \\([0-9][0-9]*\\)\$/\\1/p" include/vmthread/common.h
}
major=$(header_version MAJOR)
version=$major.$(header_version MINOR).$(header_version PATCH)

# ---- install ------------------------------------------------------------------------------
if ! DESTDIR=$stage PREFIX=$prefix scripts/install-lib --prebuilt . ; then
  fail "install-lib --prebuilt into DESTDIR"
  finish
fi
pass "install-lib --prebuilt into DESTDIR"
lib=$stage$prefix/lib
inc=$stage$prefix/include

check "libvmthread.so.$version is a regular file" test -f "$lib/libvmthread.so.$version" -a ! -L "$lib/libvmthread.so.$version"
check "libvmthread.so.$major -> libvmthread.so.$version" \
  test "$(readlink "$lib/libvmthread.so.$major")" = "libvmthread.so.$version"
check "libvmthread.so -> libvmthread.so.$major" test "$(readlink "$lib/libvmthread.so")" = "libvmthread.so.$major"
check "libvmthread.a installed" test -f "$lib/libvmthread.a"
want_headers=$(cd include && find . -name '*.h' | sort)
got_headers=$(cd "$inc" && find . -name '*.h' | sort)
check "every public header installed, nothing else" test "$want_headers" = "$got_headers"
outside=$(find "$stage" -mindepth 1 -not -path "$stage/opt" -not -path "$stage$prefix" -not -path "$stage$prefix/*")
check "nothing written outside DESTDIR/PREFIX" test -z "$outside"
pc=$lib/pkgconfig/vmthread.pc
check "vmthread.pc records PREFIX, not DESTDIR" \
  bash -c "grep -qx 'prefix=$prefix' '$pc' && ! grep -q '$stage' '$pc'"

# ---- pkg-config ---------------------------------------------------------------------------
# Only the staged .pc is visible; the sysroot maps the recorded /opt paths into the stage.
export PKG_CONFIG_LIBDIR=$lib/pkgconfig PKG_CONFIG_PATH="" PKG_CONFIG_SYSROOT_DIR=$stage
check "pkg-config finds vmthread" pkg-config --exists vmthread
check "pkg-config --modversion is the headers' version ($version)" \
  test "$(pkg-config --modversion vmthread)" = "$version"
trim() { sed 's/^ *//; s/ *$//'; }  # pkg-config pads its output with a space
cflags=$(pkg-config --cflags vmthread | trim)
libs=$(pkg-config --libs vmthread | trim)
static_libs=$(pkg-config --static --libs vmthread | trim)
check "--cflags points at the installed headers ($cflags)" test "$cflags" = "-I$inc"
check "--libs is -L<libdir> -lvmthread ($libs)" test "$libs" = "-L$lib -lvmthread"
# No allocator: the library finds jemalloc's mallctl at run time when the program has one.
check "--static --libs adds pthread and no allocator ($static_libs)" \
  bash -c "[[ ' $static_libs ' == *' -lpthread '* && ' $static_libs ' != *jemalloc* ]]"

# ---- ABI ----------------------------------------------------------------------------------
so=$lib/libvmthread.so.$version
# Exported = global or weak definitions (upper-case nm types; "A" is the version node).
# Local entries (lower case: e.g. hidden TLS variables, which gold lists) are not exported.
dynsyms=$(nm -D --defined-only "$so" | awk '$2 ~ /^[A-Z]$/ && $2 != "A" {print $3}' |
  sed 's/@.*//' | sort)
check "the shared library exports symbols" test -n "$dynsyms"
# What the headers promise: every VMT_EXPORT declaration (one per line): functions (the name
# before "("), and the one variable, vmt_thread_fast ("VMT_EXPORT extern <type> <name> ...;").
declared=$( (grep -h '^VMT_EXPORT ' include/vmthread.h include/vmthread/*.h | grep -v '^VMT_EXPORT extern' |
  sed -E 's/^([^(]*[^A-Za-z0-9_(])([A-Za-z0-9_]+) *\(.*/\2/'
  grep -h '^VMT_EXPORT extern ' include/vmthread.h include/vmthread/*.h |
  sed -E -e 's/ VMT_[A-Z_]+;$/;/' -e 's/^.*[^A-Za-z0-9_]([A-Za-z0-9_]+);$/\1/') | sort)
missing=$(comm -23 <(echo "$declared") <(echo "$dynsyms") | tr '\n' ' ')
extra=$(comm -13 <(echo "$declared") <(echo "$dynsyms") | tr '\n' ' ')
check "every VMT_EXPORT function of the headers is exported${missing:+ (missing: $missing)}" \
  test -z "$missing"
check "nothing is exported that the headers do not declare${extra:+ (extra: $extra)}" \
  test -z "$extra"
check "no vmt__* or vmt_os_* exported (nm -D)" bash -c "! grep -E '^(vmt__|vmt_os_)' <<<'$dynsyms'"
# gold misplaces the library's file-local initial-exec TLS variables (one overlays another's
# slot; BUILD.bazel says how it showed): the library must come from GNU ld, and gold leaves
# its mark in every output it links.
check "the shared library is not linked by gold (no .note.gnu.gold-version)" \
  bash -c "! readelf -SW '$so' | grep -q 'gnu.gold-version'"
check "every exported symbol is vmt_* (no jemalloc, libc or toolchain leakage)" \
  bash -c "! grep -v '^vmt_' <<<'$dynsyms'"
soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
check "soname is libvmthread.so.$major" test "$soname" = "libvmthread.so.$major"
check "no DT_NEEDED on libstdc++ (a C library)" bash -c "! readelf -d '$so' | grep -q 'libstdc++'"
# dlopen into a running JVM: a NEEDED libjemalloc.so.2 (2632 bytes of initial-exec TLS) made
# System.loadLibrary fail with "cannot allocate memory in static TLS block".
check "no DT_NEEDED on libjemalloc (loadable by dlopen into a running JVM)" \
  bash -c "! readelf -d '$so' | grep -q 'NEEDED.*jemalloc'"
# Its own initial-exec TLS comes out of the same static TLS surplus: a stock JVM 17 or 25 here
# still had room for a 1664-byte block and none for 1792 (docs/embedding.md); keep ours small.
tls_bytes=$(( $(readelf -lW "$so" | awk '$1 == "TLS" {print $6}') ))
check "the library's TLS block is at most 256 bytes ($tls_bytes)" test "$tls_bytes" -le 256
check "the archive has no global internal symbol (nm -g)" \
  bash -c "! nm -g --defined-only '$lib/libvmthread.a' | grep -E ' (vmt__|vmt_os_)'"

cc_=${CC:-cc}
cd_build=$root/build
# shellcheck disable=SC2086
if $cc_ "${extra_cflags[@]}" -o "$cd_build/probe_shared" test/install_probe.c $libs \
     >"$cd_build/probe_shared.log" 2>&1; then
  fail "a program calling vmt__* must not link against the shared library"
else
  check "a program calling vmt__* does not link against the shared library" \
    grep -q "undefined reference to .vmt__fault_disarm_all" "$cd_build/probe_shared.log"
fi
# shellcheck disable=SC2086
if $cc_ "${extra_cflags[@]}" -o "$cd_build/probe_static" test/install_probe.c \
     ${static_libs/-lvmthread/-l:libvmthread.a} >"$cd_build/probe_static.log" 2>&1; then
  fail "a program calling vmt__* must not link against the static library"
else
  check "a program calling vmt__* does not link against the static library" \
    grep -q "undefined reference to .vmt__fault_disarm_all" "$cd_build/probe_static.log"
fi

# ---- build and run the program ------------------------------------------------------------
run_program() {  # run_program LABEL BINARY
  local label=$1 bin=$2 out rc
  out=$(LD_LIBRARY_PATH=$lib "$bin" 2>&1)
  rc=$?
  echo "$out" | sed "s/^/  [$label] /"
  local ok nok
  ok=$(grep -c '^ok - ' <<<"$out")
  nok=$(grep -c '^not ok - ' <<<"$out")
  passed=$((passed + ok))
  failed=$((failed + nok))
  if [ $rc -eq 0 ] && [ "$nok" -eq 0 ] && [ "$ok" -gt 0 ]; then
    pass "$label program exits 0"
  else
    fail "$label program exits 0 (rc=$rc)"
  fi
}

strict=(-std=c11 -Wall -Wextra -Werror -pedantic)
# shellcheck disable=SC2086
if $cc_ "${strict[@]}" "${extra_cflags[@]}" -o "$cd_build/program_shared" test/install_program.c \
     $cflags $libs; then
  pass "cc \$(pkg-config --cflags --libs vmthread) builds the program"
  check "the program needs libvmthread.so.$major" \
    bash -c "readelf -d '$cd_build/program_shared' | grep -q 'NEEDED.*\\[libvmthread.so.$major\\]'"
  run_program shared "$cd_build/program_shared"
else
  fail "cc \$(pkg-config --cflags --libs vmthread) builds the program"
fi

# shellcheck disable=SC2086
if $cc_ "${strict[@]}" "${extra_cflags[@]}" -o "$cd_build/program_static" test/install_program.c \
     $cflags ${static_libs/-lvmthread/-l:libvmthread.a}; then
  pass "cc with libvmthread.a and pkg-config --static builds the program"
  check "the static program does not need libvmthread.so" \
    bash -c "! readelf -d '$cd_build/program_static' | grep -q 'libvmthread'"
  run_program static "$cd_build/program_static"
else
  fail "cc with libvmthread.a and pkg-config --static builds the program"
fi

# ---- a CMake project, as a VM built with CMake would consume it ---------------------------
if command -v cmake >/dev/null 2>&1; then
  src=$root/cmake-src
  mkdir -p "$src"
  cp test/install_program.c "$src/"
  cat >"$src/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.13)
project(vmthread_consumer C)
find_package(PkgConfig REQUIRED)
pkg_check_modules(VMTHREAD REQUIRED IMPORTED_TARGET vmthread)
add_executable(program install_program.c)
set_property(TARGET program PROPERTY C_STANDARD 11)
target_link_libraries(program PRIVATE PkgConfig::VMTHREAD)
CMAKE
  # shellcheck disable=SC2086
  if CFLAGS="${extra_cflags[*]}" LDFLAGS="${extra_cflags[*]}" \
       cmake -S "$src" -B "$root/cmake-build" >"$root/cmake.log" 2>&1 &&
     cmake --build "$root/cmake-build" >>"$root/cmake.log" 2>&1; then
    pass "a CMake project finds vmthread with pkg_check_modules(IMPORTED_TARGET) and builds"
    run_program cmake "$root/cmake-build/program"
  else
    cat "$root/cmake.log"
    fail "a CMake project finds vmthread with pkg_check_modules(IMPORTED_TARGET) and builds"
  fi
else
  echo "SKIP: no cmake on this machine: the CMake consumer check did not run"
fi

finish
