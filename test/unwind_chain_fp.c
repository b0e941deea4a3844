/* test/unwind_chain_fp.c: the chain (unwind_chain.inc) with frame pointers, -O2. */
#define UNW_NAME(x) unwfp_##x
#include "test/unwind_chain.inc"
