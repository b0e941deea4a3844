"""cc_object_symbols: the defined symbols of every object file of a library, as nm lists them.

One line per symbol, "<object path>:<value> <type> <name>" (nm -A --defined-only), over the
objects of every cc_library under `deps` (build/cc_objects.bzl). The home of the process-wide
state is checked against it (//test:process_state_internal_test): every writable variable of
the library must have a row there, so the listing has to cover every package, including one
added later; taking the objects from the library's own link inputs makes sure it does.
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")
load("//build:cc_objects.bzl", "cc_transitive_objects")

def _cc_object_symbols_impl(ctx):
    cc_toolchain = find_cpp_toolchain(ctx)
    objs = cc_transitive_objects(ctx.attr.deps)
    if not objs:
        fail("cc_object_symbols: no objects found in deps")
    out = ctx.outputs.out
    args = ctx.actions.args()
    args.add(cc_toolchain.nm_executable)
    args.add(out)
    args.add_all(objs)
    ctx.actions.run_shell(
        inputs = depset(objs, transitive = [cc_toolchain.all_files]),
        outputs = [out],
        arguments = [args],
        command = """set -eu
nm=$1; out=$2; shift 2
"$nm" -A --defined-only "$@" > "$out"
""",
        mnemonic = "CcObjectSymbols",
        progress_message = "Listing the symbols of %s" % out.short_path,
    )
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

cc_object_symbols = rule(
    implementation = _cc_object_symbols_impl,
    attrs = {
        "deps": attr.label_list(providers = [CcInfo]),
        "out": attr.output(mandatory = True),
        "_cc_toolchain": attr.label(default = Label("@bazel_tools//tools/cpp:current_cc_toolchain")),
    },
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
    incompatible_use_toolchain_transition = True,
)
