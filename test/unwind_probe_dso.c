/* test/unwind_probe_dso.c: libunwind_probe.so, a library the unwinder's test dlopens after the
 * unwinder's table was built (unwind_linux_internal_test.c). */
#include "test/unwind_chain.h"

volatile int unw_probe_sink;

__attribute__((noinline, visibility("default"))) void unw_probe_call(unw_leaf_fn leaf,
                                                                     void *arg);
__attribute__((noinline, visibility("default"))) void unw_probe_call(unw_leaf_fn leaf,
                                                                     void *arg) {
  volatile char buf[64];
  buf[0] = (char)unw_probe_sink;
  leaf(arg);
  unw_probe_sink += buf[0];
}
