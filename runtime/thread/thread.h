/*
 * runtime/thread/thread.h: what the thread package offers the packages above it (management):
 * runtime-internal threads and the per-thread allocation counters. Hidden.
 */
#ifndef VMT_RUNTIME_THREAD_THREAD_H
#define VMT_RUNTIME_THREAD_THREAD_H

#include "runtime/registry/registry.h"

/* Starts a runtime-internal thread (not counted, not listed; start.c). */
int vmt__thread_start_internal(vmt_thread_t **out, const char *name, vmt_thread_fn fn,
                               void *arg);

/* ---- Allocation counters (alloc.c) ------------------------------------------------------ */
/* Bytes allocated by t (a live, protected record); -1 if unsupported or t has ended. */
int64_t vmt__alloc_thread_bytes(const vmt_thread_t *t);
/* The same from a protected record's hot cell (snapshot.hot[i]), without reading the record. */
int64_t vmt__alloc_hot_bytes(struct vmt__thread_hot *h);
bool vmt__alloc_supported(void);
int64_t vmt__alloc_exited_total(void);

#endif /* VMT_RUNTIME_THREAD_THREAD_H */
