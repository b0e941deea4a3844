"""The JVMTI agent of bench/java/VmServicesBench.java (bench/jvmti_agent.c).

It is compiled against the JDK headers that //third_party:jdk.bzl found (@vmt_jdk), so it is
defined only when there is a JDK. Without one, scripts/bench skips every Java program anyway;
if it finds a java without headers, it skips the programs whose "bench-build" targets do not
exist and says which (scripts/bench_driver.py).
"""

load("@vmt_jdk//:defs.bzl", "HAVE_JDK")
load("//build:copts.bzl", "VMT_COPTS")

def vmt_jvmti_agent(name):
    if not HAVE_JDK:
        return
    native.cc_binary(
        name = name,
        srcs = ["jvmti_agent.c"],
        copts = VMT_COPTS + ["-fvisibility=hidden"],
        linkshared = True,
        # Bazel appends -lstdc++ -lm to every link; a C agent needs neither.
        linkopts = ["-Wl,--as-needed"],
        deps = ["@vmt_jdk//:jni"],
    )
