/* test/unwind_chain_nofp.c: the chain (unwind_chain.inc) without frame pointers, -O2. */
#define UNW_NAME(x) unwnofp_##x
#include "test/unwind_chain.inc"
