"""The object files a cc_library links: for the installable archive and the symbol listing."""

def cc_transitive_objects(deps):
    """The PIC objects (else the plain ones) of every library under deps, each once, in order.

    Libraries that contribute no objects (system libraries reached through linkopts, such as
    -ljemalloc) contribute nothing.
    """
    objs = []
    seen = {}
    for dep in deps:
        for linker_input in dep[CcInfo].linking_context.linker_inputs.to_list():
            for lib in linker_input.libraries:
                for obj in (lib.pic_objects or lib.objects or []):
                    if obj.path not in seen:
                        seen[obj.path] = True
                        objs.append(obj)
    return objs
