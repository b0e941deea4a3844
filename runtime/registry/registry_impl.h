/*
 * runtime/registry/registry_impl.h: what the files of the registry package share and nobody
 * above needs: category interning (record.c), the hazard-pointer table the reclaimer scans
 * (hazard.c for registry.c), and the counters tests read. Hidden; nothing outside
 * runtime/registry/ includes it, except tests of internals.
 */
#ifndef VMT_RUNTIME_REGISTRY_REGISTRY_IMPL_H
#define VMT_RUNTIME_REGISTRY_REGISTRY_IMPL_H

#if !defined(VMT_IN_REGISTRY) && !defined(VMT_TEST_OF_INTERNALS)
#error "this header is private to runtime/registry/ (runtime/registry/BUILD.bazel)"
#endif

#include "runtime/registry/registry.h"

/* ---- Categories (category.c) ----------------------------------------------------------- */
/* The interned category (created on first use, never freed); NULL on -ENOMEM. */
vmt__category_t *vmt__category_intern(const char *name);

/* ---- Records (record.c) ---------------------------------------------------------------- */
/* Records currently in the pool's free list (tests). */
size_t vmt__record_pool_free_count(void);

/* ---- Hazard pointers (hazard.c) -------------------------------------------------------- */
/* Copies every published hazard pointer into *out (malloc'ed, caller frees); -ENOMEM. */
int vmt__hazards_collect(const void ***out, size_t *count);
size_t vmt__hazard_block_count(void);
/* The hazards' piece of the fork child handler (called by vmt__registry_fork_child). */
void vmt__hazard_fork_child(void);

#endif /* VMT_RUNTIME_REGISTRY_REGISTRY_IMPL_H */
