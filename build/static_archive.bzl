"""cc_static_archive: one installable static library from a cc_library's transitive objects.

Bazel writes one archive per package (libruntime.lo, libos_linux.lo, ...), which is right for
linking inside the build and wrong for installing: a VM's makefile wants one libvmthread.a.
This rule takes the PIC objects of every library under `deps` (PIC, so that a host can link
the archive into its own shared object), and, like the shared library's version script,
keeps the internals out of the archive's symbol table:

  ld -r                     all objects into one relocatable object (internal references are
                            resolved here, while the symbols are still global),
  objcopy --localize-hidden the hidden ones (vmt__*, vmt_os_*: -fvisibility=hidden) become
                            local, so they cannot clash with the host's symbols,
  ar rcs                    the archive, with that single member.

Libraries that contribute no objects (system libraries reached through linkopts, such as
-ljemalloc) are not included; the pkg-config file lists them in Libs.private.
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")
load("//build:cc_objects.bzl", "cc_transitive_objects")

def _cc_static_archive_impl(ctx):
    cc_toolchain = find_cpp_toolchain(ctx)
    objs = cc_transitive_objects(ctx.attr.deps)
    if not objs:
        fail("cc_static_archive: no objects found in deps")
    out = ctx.outputs.out
    combined = ctx.actions.declare_file(ctx.label.name + ".o")
    args = ctx.actions.args()
    args.add(cc_toolchain.ld_executable)
    args.add(cc_toolchain.objcopy_executable)
    args.add(cc_toolchain.ar_executable)
    args.add(combined)
    args.add(out)
    args.add_all(objs)
    ctx.actions.run_shell(
        inputs = depset(objs, transitive = [cc_toolchain.all_files]),
        outputs = [out, combined],
        arguments = [args],
        command = """set -eu
ld=$1; objcopy=$2; ar=$3; combined=$4; out=$5; shift 5
"$ld" -r -o "$combined" "$@"
"$objcopy" --localize-hidden "$combined"
rm -f "$out"
"$ar" rcsD "$out" "$combined"
""",
        mnemonic = "CcStaticArchive",
        progress_message = "Archiving %s" % out.short_path,
    )
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

cc_static_archive = rule(
    implementation = _cc_static_archive_impl,
    attrs = {
        "deps": attr.label_list(providers = [CcInfo]),
        "out": attr.output(mandatory = True),
        "_cc_toolchain": attr.label(default = Label("@bazel_tools//tools/cpp:current_cc_toolchain")),
    },
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
    incompatible_use_toolchain_transition = True,
)
