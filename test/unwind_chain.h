/*
 * test/unwind_chain.h: known chains of noinline functions for the unwinder's tests of internals
 * (unwind_linux_internal_test.c), built at -O2 with frame pointers (unwfp_*) and without
 * (unwnofp_*): unwfp_chain(leaf, arg) calls unwfp_c1, which calls c2 ... c6, which calls leaf.
 */
#ifndef VMT_TEST_UNWIND_CHAIN_H
#define VMT_TEST_UNWIND_CHAIN_H

typedef void (*unw_leaf_fn)(void *arg);
void unwfp_chain(unw_leaf_fn leaf, void *arg);
void unwnofp_chain(unw_leaf_fn leaf, void *arg);
/* In test/unwind_probe_dso.c (libunwind_probe.so, dlopen'ed by the test): calls leaf(arg). */
typedef void (*unw_probe_fn)(unw_leaf_fn leaf, void *arg);

#endif /* VMT_TEST_UNWIND_CHAIN_H */
