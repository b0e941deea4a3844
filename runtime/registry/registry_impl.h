/*
 * runtime/registry/registry_impl.h: what the files of the registry package share and nobody
 * above needs: category interning (record.c), ids given by the registry (record.c), the
 * hazard-pointer table the reclaimer scans (hazard.c for registry.c), and the counters tests
 * read. Hidden; nothing outside runtime/registry/ includes it, except tests of internals.
 */
#ifndef VMT_RUNTIME_REGISTRY_REGISTRY_IMPL_H
#define VMT_RUNTIME_REGISTRY_REGISTRY_IMPL_H

#if !defined(VMT_IN_REGISTRY) && !defined(VMT_TEST_OF_INTERNALS)
#error "this header is private to runtime/registry/ (runtime/registry/BUILD.bazel)"
#endif

#include "runtime/process.h"
#include "runtime/registry/registry.h"

/* ---- Categories (category.c) ----------------------------------------------------------- */
/* The interned category (created on first use, never freed); NULL on -ENOMEM. */
vmt__category_t *vmt__category_intern(const char *name);

/* ---- Records (record.c) ---------------------------------------------------------------- */
/* Records currently free in the pool (tests). */
size_t vmt__record_pool_free_count(void);
/* Gives t its id, and the default name ("vmt-thread-<id>", in the buffer record_init reserved)
 * if none was given. Called by the registry under its writer lock as the record becomes
 * visible, so that ids follow the order threads enter (registry.c). No allocation. */
void vmt__record_set_id(vmt_thread_t *t, int64_t id);

/* ---- What the registry holds now (registry.c; tests, and anyone watching its memory) --- */
typedef struct vmt__registry_stats {
  size_t count;        /* entries of the current snapshot, tombstones included */
  size_t tombstones;   /* of those */
  size_t capacity;     /* slots of the current snapshot's array */
  uint64_t generation; /* of the current snapshot */
  size_t snapshots;    /* headers allocated and not freed (the current one included) */
  size_t arrays;       /* arrays allocated and not freed (the current one included) */
  size_t bytes;        /* what both take */
  uint64_t rebuilds;   /* arrays built since the process started */
} vmt__registry_stats_t;
void vmt__registry_stats(vmt__registry_stats_t *out);

/* ---- Hazard pointers (hazard.c) -------------------------------------------------------- */
/* Copies every published hazard pointer into *out (malloc'ed, caller frees); -ENOMEM. */
int vmt__hazards_collect(const void ***out, size_t *count);
size_t vmt__hazard_block_count(void);

#endif /* VMT_RUNTIME_REGISTRY_REGISTRY_IMPL_H */
