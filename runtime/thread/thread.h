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

/* ---- Text (options.c) ------------------------------------------------------------------- */
/* Length of the well-formed UTF-8 sequence at s, at most n bytes (n >= 1), or 0: RFC 3629, no
 * overlong forms, no surrogates, nothing above U+10FFFF. An ASCII byte is a sequence of 1.
 * The one decoder of the runtime: names are checked with it (vmt__utf8_valid), and the JSON
 * dump and the flame graph replace what it refuses with U+FFFD. */
size_t vmt__utf8_sequence(const unsigned char *s, size_t n);

/* ---- Allocation counters (alloc.c) ------------------------------------------------------ */
/* Bytes allocated by t (a live, protected record); -1 if unsupported or t has ended. */
int64_t vmt__alloc_thread_bytes(const vmt_thread_t *t);
/* The same from a protected record's hot cell (snapshot.hot[i]), without reading the record. */
int64_t vmt__alloc_hot_bytes(struct vmt__thread_hot *h);
bool vmt__alloc_supported(void);
int64_t vmt__alloc_exited_total(void);

#endif /* VMT_RUNTIME_THREAD_THREAD_H */
