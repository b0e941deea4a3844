/*
 * runtime/thread_impl.h: what the files of the thread module share (record pool and references,
 * options, categories, the registry's writer side, the current-thread slot, process-wide
 * initialisation). Hidden; nothing outside runtime/thread_*.c, registry.c, hazard.c,
 * category.c, options.c and alloc.c includes it, except tests of internals.
 */
#ifndef VMT_RUNTIME_THREAD_IMPL_H
#define VMT_RUNTIME_THREAD_IMPL_H

#include "runtime/internal.h"

/* ---- Options (options.c) --------------------------------------------------------------- */
typedef struct vmt__thread_opts {
  const char *name;        /* NULL: the default "vmt-thread-<id>" */
  size_t name_len;
  const char *category;    /* never NULL after resolution */
  bool daemon;
  int priority;
  size_t stack_size;       /* 0 = the platform default, else already rounded and clamped */
} vmt__thread_opts_t;

/* Validates options (NULL = all defaults) into *out. 0 or -EINVAL. */
int vmt__options_resolve(const vmt_thread_options_t *options, vmt__thread_opts_t *out);
/* The stack size rule (docs/design.md): 0 stays 0; else rounded up to the page size and
 * clamped to [VMT__STACK_MIN_BYTES or the platform minimum if larger, VMT__STACK_MAX_BYTES]. */
#define VMT__STACK_MIN_BYTES ((size_t)64 * 1024)
#define VMT__STACK_MAX_BYTES ((size_t)1 << 30)
size_t vmt__stack_size_rule(size_t requested);
/* True if s[0..len) is well-formed UTF-8 (no overlong forms, surrogates or > U+10FFFF). */
bool vmt__utf8_valid(const char *s, size_t len);

/* ---- Categories (category.c) ----------------------------------------------------------- */
/* The interned category (created on first use, never freed); NULL on -ENOMEM. */
vmt__category_t *vmt__category_intern(const char *name);

/* ---- Records (thread_record.c) --------------------------------------------------------- */
/* A zeroed record with magic set, from the type-stable pool (records are never returned to
 * malloc, so a stale handle reads a cleared magic instead of freed memory). NULL on -ENOMEM. */
vmt_thread_t *vmt__record_alloc(void);
/* Fills identity and attributes (id, name, category, os name). 0 or -ENOMEM; on failure the
 * record is returned to the pool. */
int vmt__record_init(vmt_thread_t *t, const vmt__thread_opts_t *o, vmt__thread_kind_t kind);
/* Drops one internal reference; the last one frees the name and returns the record to the
 * pool (detaching its pthread if nobody joined it). */
void vmt__record_unref(vmt_thread_t *t);
/* Takes an internal reference if the record is live (magic set and refs > 0). */
bool vmt__record_ref_if_live(vmt_thread_t *t);
/* Records currently in the pool's free list (tests). */
size_t vmt__record_pool_free_count(void);

/* ---- Registry writer side (registry.c) ------------------------------------------------- */
/* Makes t visible in a new snapshot (not yet counted). 0 or -ENOMEM. */
int vmt__registry_insert(vmt_thread_t *t);
/* Counts t as started and (unless it already left) live; internal threads are never counted. */
void vmt__registry_count(vmt_thread_t *t);
/* Uncounts t and tombstones it in the current snapshot; never fails. The next rebuild drops
 * it (this call rebuilds, allocating, only when tombstones crowd the snapshot); the registry's
 * reference on t goes once no reader can see it. */
void vmt__registry_remove(vmt_thread_t *t);

/* ---- Hazard pointers (hazard.c) -------------------------------------------------------- */
/* Copies every published hazard pointer into *out (malloc'ed, caller frees); -ENOMEM. */
int vmt__hazards_collect(const void ***out, size_t *count);
size_t vmt__hazard_block_count(void);

/* ---- Process-wide state (thread_access.c; vmt__current is in runtime/internal.h) ------- */
/* Incremented in every fork child. A record whose fork_generation differs describes a thread
 * of an ancestor process: it does not exist here, so nobody waits for it nor touches its
 * pthread_t (joining or detaching one is undefined behaviour after fork). */
extern _Atomic uint32_t vmt__fork_generation;
static inline bool vmt__thread_of_this_process(const vmt_thread_t *t) {
  return t->fork_generation == atomic_load_explicit(&vmt__fork_generation, memory_order_relaxed);
}
/* Idempotent: port init, fork handlers, the attached-thread key. */
void vmt__runtime_init(void);
/* The common exit bookkeeping of a started, internal or (last detach) attached thread, run by
 * the thread itself; drops the thread's own reference (thread_exit.c). */
void vmt__thread_finish(vmt_thread_t *t);
/* The registry's, pool's, categories' and hazards' pieces of the atfork handlers
 * (thread_access.c). */
void vmt__registry_fork_prepare(void);
void vmt__registry_fork_parent(void);
void vmt__registry_fork_child(vmt_thread_t *survivor);
void vmt__record_fork_prepare(void);
void vmt__record_fork_parent(void);
void vmt__record_fork_child(void);
void vmt__category_fork_prepare(void);
void vmt__category_fork_parent(void);
void vmt__category_fork_child(void);
void vmt__hazard_fork_child(void);

#endif /* VMT_RUNTIME_THREAD_IMPL_H */
