"""The JVM host's targets: the Java side (javac/jar from the installed JDK, see
//third_party:jdk.bzl), the JNI bridge, and the tests that run real JVMs: jvm_test_jdk<N> on
each JDK found (JDKS: 17 and 25 here), and the suite jvm_test of them all. The jars and the
bridge are built once, with JAVA_HOME's JDK, and run on every one.

Everything is defined only when a JDK was found; otherwise only jvm_test is, and it prints
that it is skipped. Bazel's java_* rules are not used: their toolchains are downloads.
"""

load("@vmt_jdk//:defs.bzl", "HAVE_JDK", "JAVA_HOME", "JDKS")
load("//build:copts.bzl", "VMT_COPTS")

# Class files for Java 17 (the oldest JDK with every ThreadMXBean method we implement);
# reproducible jars (fixed entry dates).
_JAVAC_FLAGS = "--release 17 -encoding UTF-8 -Xlint:all -Werror"
_JAR_DATE = "2000-01-01T00:00:00Z"

def _java_jar(name, srcs, jar, header, classpath = []):
    """A jar compiled from srcs, plus the JNI header javac -h writes for its natives."""
    cp = " ".join(["$(location %s)" % c for c in classpath])
    native.genrule(
        name = name,
        srcs = srcs + classpath,
        outs = [jar, header],
        cmd = """set -e
classes=$(@D)/{name}_classes
rm -rf $$classes && mkdir -p $$classes
cp=$$(echo {cp} | tr ' ' ':')
{home}/bin/javac {flags} $${{cp:+-cp $$cp}} -h $(@D) -d $$classes {srcs}
{home}/bin/jar --create --date={date} --file $(location {jar}) -C $$classes .
rm -rf $$classes
""".format(
            name = name,
            cp = cp,
            home = JAVA_HOME,
            flags = _JAVAC_FLAGS,
            srcs = " ".join(["$(location %s)" % s for s in srcs]),
            date = _JAR_DATE,
            jar = jar,
        ),
    )

def _javadoc_and_sources(name, srcs, javadoc_jar, sources_jar):
    """The javadoc of srcs' public API, and srcs themselves, as the two jars a Java build
    tool (Maven's -javadoc.jar and -sources.jar) looks for next to vmthread.jar."""
    native.genrule(
        name = name,
        srcs = srcs,
        outs = [javadoc_jar, sources_jar],
        cmd = """set -e
docs=$(@D)/{name}_docs
rm -rf $$docs && mkdir -p $$docs
{home}/bin/javadoc -quiet -notimestamp --release 17 -encoding UTF-8 -Xdoclint:all -Werror \\
  -d $$docs {srcs} >$$docs.log 2>&1 || {{ cat $$docs.log; exit 1; }}
{home}/bin/jar --create --date={date} --file $(location {javadoc}) -C $$docs .
{home}/bin/jar --create --date={date} --file $(location {sources}) -C jvm/src io
rm -rf $$docs $$docs.log
""".format(
            name = name,
            home = JAVA_HOME,
            srcs = " ".join(["$(location %s)" % s for s in srcs]),
            date = _JAR_DATE,
            javadoc = javadoc_jar,
            sources = sources_jar,
        ),
    )

def _jni_library(name, srcs, header):
    native.cc_binary(
        name = name,
        srcs = srcs + [header],
        copts = VMT_COPTS + ["-fvisibility=hidden", "-iquote", "$(GENDIR)/jvm"],
        linkshared = True,
        # libvmthread.so.0 is linked by its path, not as a cc dependency: Bazel gives every
        # shared-library dependency a RUNPATH entry into its own tree
        # ($ORIGIN/../_solib_k8/...), which would be installed too. The bridge's only RUNPATH is
        # $ORIGIN, where scripts/install-lib puts libvmthread.so.0 (NEEDED by its soname).
        # --as-needed: Bazel appends -lstdc++ -lm to every link; a C library needs neither.
        linkopts = [
            "-Wl,-rpath,'$$ORIGIN'",
            "-Wl,--as-needed",
            "$(location //:libvmthread.so)",
        ],
        additional_linker_inputs = ["//:libvmthread.so"],
        deps = [
            "//:headers",
            "@vmt_jdk//:jni",
        ],
    )

def vmthread_jvm():
    test_data = [
        "//:libvmthread.so",
        "//:libvmthread_a",
        "//:public_headers",
        "//:vmthread.pc.in",
        "//scripts:install-lib",
        "test/native/guest_static.c",
    ]
    if HAVE_JDK:
        _java_jar(
            name = "vmthread_jar",
            srcs = native.glob(["src/**/*.java"]),
            jar = "vmthread.jar",
            header = "io_vmthread_NativeThreads.h",
        )
        _javadoc_and_sources(
            name = "vmthread_docs",
            srcs = native.glob(["src/**/*.java"]),
            javadoc_jar = "vmthread-javadoc.jar",
            sources_jar = "vmthread-sources.jar",
        )
        _java_jar(
            name = "vmthread_tests_jar",
            srcs = native.glob(["test/**/*.java"]),
            jar = "vmthread-tests.jar",
            header = "io_vmthread_test_TestNatives.h",
            classpath = [":vmthread.jar"],
        )
        _jni_library(
            name = "libvmthread_jni.so",
            srcs = ["native/vmthread_jni.c"],
            header = ":io_vmthread_NativeThreads.h",
        )
        # The test's "language runtime" (test/native/vmthread_jni_test.c) is not built here:
        # jvm_test.sh builds it with cc and pkg-config against the installed library, as a
        # VM's own build would (docs/embedding.md, section 6).
        test_data += [
            ":io_vmthread_test_TestNatives.h",
            ":libvmthread_jni.so",
            ":vmthread.jar",
            ":vmthread-javadoc.jar",
            ":vmthread-sources.jar",
            ":vmthread-tests.jar",
            "test/native/vmthread_jni_test.c",
        ]
    if not HAVE_JDK:
        _jvm_test("jvm_test", ["--no-jdk"], test_data)
        return
    tests = []
    for home, major in JDKS:
        name = "jvm_test_jdk%d" % major
        _jvm_test(name, ["--java-home=" + home], test_data)
        tests.append(":" + name)
    native.test_suite(
        name = "jvm_test",
        tests = tests,
    )

def _jvm_test(name, args, data):
    native.sh_test(
        name = name,
        size = "medium",  # five JVMs (host, client, jcmd, jemalloc run), about 10 s here
        srcs = ["test/jvm_test.sh"],
        # Outside the sandbox, in the machine's PID namespace. HotSpot puts its attach socket at
        # /tmp/.java_pid<pid> whatever TMPDIR says, and each sandbox is a PID namespace of its
        # own, so two sandboxed runs at once (--runs_per_test, another checkout's suite) had
        # JVMs with the same small pid and one socket path between them: jcmd reached the other
        # JVM or lost its own ("Premature EOF"). Here pids, and so the paths, are unique. (A
        # private tmpfs /tmp for every test, tried before, breaks a checkout under /tmp: the
        # sandbox then cannot mount the source tree.)
        tags = ["no-sandbox"],
        args = args + select({
            "//build:asan": ["--sanitizer=asan"],
            "//build:tsan": ["--sanitizer=tsan"],
            "//conditions:default": [],
        }),
        data = data,
    )
