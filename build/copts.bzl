"""Compiler flags shared by every vmthread target: one place, so no target drifts."""

# C11 and the strict warning set. -Werror everywhere: a warning is a bug we have not read.
VMT_COPTS = [
    "-std=c11",
    "-D_GNU_SOURCE",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wstrict-prototypes",
    "-Wmissing-prototypes",
    "-Wold-style-definition",
    "-Wshadow",
    "-Wpointer-arith",
    "-Wvla",
    "-Wformat=2",
]

# Library code: everything hidden unless marked VMT_EXPORT (include/vmthread/common.h).
VMT_LIB_COPTS = VMT_COPTS + [
    "-fvisibility=hidden",
    "-DVMT_BUILDING_LIBRARY",
]

# Tests and benchmarks: cmocka's macros trip -Wshadow/-Wformat=2 in places, so relax only those.
VMT_TEST_COPTS = [c for c in VMT_COPTS if c not in ("-Wshadow", "-Wformat=2")]
