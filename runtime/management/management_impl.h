/*
 * runtime/management/management_impl.h: what the files of the management package (the
 * ThreadMXBean mirror) share. The package sits on top of the registry, sync and thread
 * packages and the port, and only reads them: every query protects one registry snapshot,
 * looks threads up in it, copies what it reports, and releases the snapshot before returning.
 * Hidden; nothing outside runtime/management/ includes it. Nothing in the runtime depends on
 * this package.
 */
#ifndef VMT_RUNTIME_MANAGEMENT_MANAGEMENT_IMPL_H
#define VMT_RUNTIME_MANAGEMENT_MANAGEMENT_IMPL_H

#if !defined(VMT_IN_MANAGEMENT) && !defined(VMT_TEST_OF_INTERNALS)
#error "this header is private to runtime/management/ (runtime/management/BUILD.bazel)"
#endif

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/process.h"
#include "runtime/registry/registry.h"
#include "runtime/sync/sync.h"
#include "runtime/thread/thread.h"
#include "runtime/vmservices/vmservices.h"


/* Cancellation. A management call that can reach a cancellation point (a write to the caller's
 * stream, a VM's stack walker, joining the SIGQUIT dump thread) is none itself: cancellation is
 * off while it runs and a pending one is acted upon at the caller's next cancellation point
 * (docs/design.md, "Cancellation"). Cancelled inside, it would leave a lock held (the walker's,
 * the SIGQUIT switch's) or its allocations unfreed. */
static inline int vmt__mx_cancel_off(void) {
  int old = PTHREAD_CANCEL_ENABLE;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
  return old;
}
static inline void vmt__mx_cancel_restore(int old) { pthread_setcancelstate(old, NULL); }

/* malloc/calloc behind the VMT__FAULT_ALLOC seam, so tests can fail any allocation. */
static inline void *vmt__mx_malloc(size_t n) {
  if (vmt__fault_hit(VMT__FAULT_ALLOC)) return NULL;
  return malloc(n);
}
static inline void *vmt__mx_calloc(size_t n, size_t size) {
  if (vmt__fault_hit(VMT__FAULT_ALLOC)) return NULL;
  return calloc(n, size);
}
/* A malloc'ed, NUL-terminated copy of the first n bytes of s (through vmt__mx_malloc). */
static inline char *vmt__mx_strndup(const char *s, size_t n) {
  char *d = vmt__mx_malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}
static inline char *vmt__mx_strdup(const char *s) { return vmt__mx_strndup(s, strlen(s)); }

/*
 * The listed thread with this id in snap, or NULL (unknown, internal, or terminated). *hint is
 * the index where the previous lookup ended: id arrays usually come sorted (they come from
 * vmt_mx_get_all_thread_ids, in the snapshot's own order), and a lookup then walks forward from
 * the hint instead of binary-searching (galloping past tombstones and unknown ids, so a gap of
 * g entries costs log g steps). It reads the snapshot's id array, not the records: a binary
 * search of 10,000 threads makes 14 dependent loads in 80 KB instead of in records all over
 * memory, and the one record read per id is the caller's is_listed check. hint may be NULL (a
 * binary search).
 */
vmt_thread_t *vmt__mx_lookup(const vmt__snapshot_t *snap, int64_t id, size_t *hint);
/* The same search, to the entry: its index in snap whether or not it is listed, or
 * VMT__MX_NOT_FOUND. For walks that read the hot cells (snap->hot[at]) and not the records. */
#define VMT__MX_NOT_FOUND SIZE_MAX
size_t vmt__mx_find(const vmt__snapshot_t *snap, int64_t id, size_t *hint);

/*
 * Starts loading the first bytes of a record. A sweep alternates CPU-clock syscalls (~400 ns
 * each, during which the kernel walks one of the task_structs and evicts much of the cache)
 * with reads of a record (id and kind; state and the port fields; the registry's flags).
 * Missed on demand, those reads made the sweep of 1000 threads 1.34-1.39x the bare
 * clock_gettime loop here, before the sweep prefetched (//bench:management, three runs each).
 */
static inline void vmt__mx_prefetch(const vmt_thread_t *t, size_t bytes) {
  for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch((const char *)t + off);
}

/* What a walk reads of each record, from its start: the whole record (ThreadInfo), or up to
 * the end of the port fields (a CPU-time sweep: id, kind, states, tid, exiting; two lines). The
 * walks that need only ids and listed flags read the hot cells instead. */
#define VMT__MX_RECORD_ALL sizeof(vmt_thread_t)
#define VMT__MX_RECORD_TO_OS (offsetof(vmt_thread_t, os) + sizeof(vmt_os_thread_t))

/*
 * How far ahead of a walk in snapshot order records are prefetched. Walks without a syscall
 * per thread (ids, allocated bytes, the deadlock scan, the lookups of a CPU-time sweep) spend
 * a few ns per record when it is cached, and 40-100 ns when it comes from L3 or memory, which
 * at 10,000 threads (3.9 MB of records, more than this machine's 1 MB L2) is the common case:
 * one ahead, the allocated-bytes sweep cost 21.7 ns per thread at 10,000 against 9.4 at 1000
 * here (best of 10 calls). 32 ahead covers ~100 ns of such walking; against 8 ahead it took
 * getAllThreadIds of 10,000 cold records from 18-21 to 12-17 ns per thread (three runs each,
 * the caches flushed before every call).
 */
#define VMT__MX_PREFETCH_AHEAD 32

/* The first bytes of the record a walk in snapshot order reaches VMT__MX_PREFETCH_AHEAD
 * lookups after hint. */
static inline void vmt__mx_prefetch_ahead(const vmt__snapshot_t *snap, size_t hint,
                                          size_t bytes) {
  if (hint + VMT__MX_PREFETCH_AHEAD < snap->count)
    vmt__mx_prefetch(snap->threads[hint + VMT__MX_PREFETCH_AHEAD], bytes);
}

/*
 * For the walks that copy a ThreadInfo of each record (info.c, dump.c): besides the record
 * VMT__MX_PREFETCH_AHEAD entries ahead, what a ThreadInfo reads outside it, for the record
 * half as far ahead, whose own prefetch has had time to land: the line of the cold block that
 * holds the name's lock (written: fetched exclusive) and the name itself.
 */
static inline void vmt__mx_prefetch_info_ahead(const vmt__snapshot_t *snap, size_t i) {
  vmt__mx_prefetch_ahead(snap, i, VMT__MX_RECORD_ALL);
  if (i + VMT__MX_PREFETCH_AHEAD / 2 >= snap->count) return;
  vmt_thread_t *t = snap->threads[i + VMT__MX_PREFETCH_AHEAD / 2];
  const void *lock = &t->cold->lock;
#if defined(__x86_64__)
  __asm__ volatile("prefetchw %0" : : "m"(*(const char *)lock));
#else
  __builtin_prefetch(lock, 1);
#endif
  /* A rename may free it meanwhile: a prefetch never faults. */
  __builtin_prefetch(atomic_load_explicit(&t->name, memory_order_relaxed));
}

/* The hot cell a walk in snapshot order reaches VMT__MX_PREFETCH_AHEAD entries after i, for
 * reading, or for writing when the walk will write it (the allocated-bytes reader count: a
 * locked add on a line fetched shared must wait for it again, exclusive). The cells are
 * consecutive lines when the threads were started one after another, which the hardware
 * prefetcher follows too; after recycled records they are not. */
static inline void vmt__mx_prefetch_hot_ahead(const vmt__snapshot_t *snap, size_t i) {
  if (i + VMT__MX_PREFETCH_AHEAD < snap->count)
    __builtin_prefetch(snap->hot[i + VMT__MX_PREFETCH_AHEAD]);
}
static inline void vmt__mx_prefetch_hot_ahead_w(const vmt__snapshot_t *snap, size_t i) {
  if (i + VMT__MX_PREFETCH_AHEAD >= snap->count) return;
  const void *p = snap->hot[i + VMT__MX_PREFETCH_AHEAD];
#if defined(__x86_64__)
  /* PREFETCHW, which gcc emits for __builtin_prefetch(p, 1) only under -mprfchw; x86 CPUs
   * without it (Intel before Broadwell) execute it as a no-op. */
  __asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
#else
  __builtin_prefetch(p, 1);
#endif
}

/* A measurement switch (HotSpot's ThreadService flags): a plain boolean behind a capability.
 * get: -EINVAL on NULL, -ENOTSUP when unsupported. set: -ENOTSUP when unsupported. */
int vmt__mx_switch_get(bool supported, _Atomic bool *sw, bool *out);
int vmt__mx_switch_set(bool supported, _Atomic bool *sw, bool value);

/*
 * The per-id sweep behind every array query: out[i] = query(thread of ids[i]), or -1 for an
 * unknown or ended element, or -1 for all when measuring is false. One snapshot protects the
 * whole sweep. Arguments are checked by the caller. 0 or -ENOMEM. With hot_query, the sweep
 * reads the hot cells instead of the records (out[i] = hot_query(cell of ids[i])), and
 * prefetch, if any, replaces the records' prefetch.
 */
typedef int64_t (*vmt__mx_query_fn)(vmt_thread_t *t);
typedef int64_t (*vmt__mx_hot_query_fn)(struct vmt__thread_hot *h);
/* What the sweep prefetches for the lookups ahead of hint (NULL: the records). */
typedef void (*vmt__mx_prefetch_fn)(const vmt__snapshot_t *snap, size_t hint);
/* Inline, so that each caller's query and prefetch are direct calls the compiler can inline. */
static inline int vmt__mx_sweep(const int64_t *ids, size_t count, int64_t *out,
                                bool measuring, vmt__mx_query_fn query,
                                vmt__mx_hot_query_fn hot_query, vmt__mx_prefetch_fn prefetch) {
  if (!measuring) {
    for (size_t i = 0; i < count; i++) out[i] = -1;
    return 0;
  }
  const vmt__snapshot_t *snap = vmt__registry_acquire();
  if (!snap) return -ENOMEM;
  size_t hint = 0;
  for (size_t i = 0; i < count; i++) {
    size_t at = vmt__mx_find(snap, ids[i], &hint);
    if (prefetch)
      prefetch(snap, hint);
    else
      vmt__mx_prefetch_ahead(snap, hint, VMT__MX_RECORD_ALL);
    if (at == VMT__MX_NOT_FOUND) {
      out[i] = -1;
    } else if (hot_query) {
      struct vmt__thread_hot *h = snap->hot[at];
      out[i] = vmt__hot_is_listed(h) ? hot_query(h) : -1;
    } else {
      vmt_thread_t *t = snap->threads[at];
      out[i] = vmt__thread_is_listed(t) ? query(t) : -1;
    }
  }
  vmt__registry_release(snap);
  return 0;
}

/* True if any of the count ids is <= 0 (Java: IllegalArgumentException). */
bool vmt__mx_ids_invalid(const int64_t *ids, size_t count);

/* CPU time switch (cpu.c): enabled by default, as in HotSpot. */
bool vmt__mx_cpu_time_enabled(void);
/* CPU and consistent user time of a protected, listed thread; -1 when disabled, unsupported
 * or when the thread is exiting. */
int64_t vmt__mx_thread_cpu_ns(vmt_thread_t *t);
int64_t vmt__mx_thread_user_ns(vmt_thread_t *t);
/* Both for ThreadInfo: user <= cpu; another thread's from one set of three clock reads. */
void vmt__mx_thread_user_and_cpu_ns(vmt_thread_t *t, int64_t *user, int64_t *cpu);

/*
 * Stack capture (stack.c) for one management call: begin takes the walker (under its lock, held
 * until end, so a replacement waits for the call, with cancellation off in between: the walker is
 * the VM's code) and end releases it and the call's scratch buffer. max_depth <= 0 takes nothing.
 * Between the two, capture may also run on the thread being walked, inside the call's handshake
 * with it (info.c), while the calling thread waits: one thread at a time uses the stacks.
 * capture gives t's frames, at most max_depth, as one malloc'ed block holding the array and its
 * strings (free with vmt__mx_frames_free): with a registered walker the walker's frames; else, for
 * the calling thread, its native frames above caller_pc (the return address into the application
 * of the public call, so the runtime's own frames are not shown); else none. When locks is not
 * NULL, *locks gets what the walker reported with vmt_mx_frame_holds_monitor (malloc'ed, free();
 * NULL and 0 when nothing), each report naming a frame that was returned. 0 or -ENOMEM.
 */
typedef struct vmt__mx_frame_lock {
  int32_t identity;   /* the monitor's (vmt__lock_desc_t.identity) */
  int32_t frame;      /* index into the captured frames */
} vmt__mx_frame_lock_t;
typedef struct vmt__mx_stacks {
  int32_t max_depth;
  const void *caller_pc;
  bool locked;
  vmt_mx_stack_walker_fn fn;
  void *ctx;
  vmt_stack_frame_t *buf;   /* the walker's scratch buffer, cap frames */
  int32_t cap;
  int cancel;               /* the cancellation state to restore at end */
} vmt__mx_stacks_t;
void vmt__mx_stacks_begin(vmt__mx_stacks_t *s, int32_t max_depth, const void *caller_pc);
void vmt__mx_stacks_end(vmt__mx_stacks_t *s);
int vmt__mx_capture_frames(vmt__mx_stacks_t *s, vmt_thread_t *t, vmt_stack_frame_t **frames,
                           size_t *count, vmt__mx_frame_lock_t **locks, size_t *lock_count);
void vmt__mx_frames_free(vmt_stack_frame_t *frames);

/* What a ThreadInfo holds besides what it always does: the public VMT_MX_INFO_* flags, and
 * for the text dump, which prints the total only, its CPU time without the user time (one
 * clock read instead of three). */
#define VMT__MX_INFO_PUBLIC_FLAGS                                                     \
  (VMT_MX_INFO_LOCKED_MONITORS | VMT_MX_INFO_LOCKED_SYNCHRONIZERS | VMT_MX_INFO_NO_CPU_TIME)
#define VMT__MX_INFO_NO_USER_TIME 0x100u

/*
 * Where the ThreadInfos of one call are allocated (info.c). A call that returns many of them
 * (an array, a dump) carves them with their two strings out of 64 KiB blocks, each block
 * counting the ThreadInfos still alive in it, instead of one malloc per thread: 10,000
 * ThreadInfos are 40 blocks, not 10,000 allocations. Each one stays freeable on its own
 * (vmt_mx_thread_info_free), in any order, on any thread; its block goes when its last one
 * does. Why it matters beyond the 10,000 mallocs and frees: 10,000 separate ThreadInfos are
 * 2.4 MB of small-object slabs, which jemalloc (its lg_extent_max_active_fit) would not carve
 * from the one big extent the previous call freed, so a call at 10,000 threads took fresh
 * pages and paid ~450 page faults where the same call at 1000 threads paid none
 * (//bench:management's growth rounds, getrusage minor faults per call, 2026-12-02).
 * A NULL pool gives each ThreadInfo its own allocation. Not shared between threads: the
 * handshake that reads a ThreadInfo on the target's side uses it while the caller waits.
 */
typedef struct vmt__mx_info_block vmt__mx_info_block_t;
typedef struct vmt__mx_info_pool {
  vmt__mx_info_block_t *cur;   /* the block being carved, or NULL */
} vmt__mx_info_pool_t;
/* Ends carving: the blocks now go with their ThreadInfos. */
void vmt__mx_info_pool_end(vmt__mx_info_pool_t *pool);

/* ThreadInfo of a protected thread (info.c), what it holds chosen by flags, its frames
 * through stacks, allocated from pool (may be NULL): *out NULL if t is not listed. 0 or
 * -ENOMEM. */
int vmt__mx_thread_info(const vmt__snapshot_t *snap, vmt_thread_t *t, unsigned flags,
                        vmt__mx_stacks_t *stacks, vmt__mx_info_pool_t *pool,
                        vmt_thread_info_t **out);
/* dumpAllThreads, what each ThreadInfo holds chosen by flags (checked: public flags only),
 * with the application's return address for the native-frame fallback. */
int vmt__mx_dump_all(unsigned flags, int32_t max_depth, const void *caller_pc,
                     vmt_thread_info_t ***out, size_t *count);

/* The jstack-style text dump (dump.c) and the JSON dump (dump_json.c) to a stream; 0 or
 * -errno (-EIO for a stream error). */
int vmt__mx_write_dump(FILE *out, const void *caller_pc);
int vmt__mx_write_dump_json(FILE *out, const void *caller_pc);
/* Either dump into a malloc'ed, NUL-terminated string (the *_to_string calls). */
typedef int (*vmt__mx_dump_writer_fn)(FILE *out, const void *caller_pc);
int vmt__mx_dump_to_string(vmt__mx_dump_writer_fn write_dump, const void *caller_pc, char **out,
                           size_t *len);
/* Now, UTC: "2026-12-01 03:01:12 UTC", or ISO 8601 "2026-12-01T03:01:12Z". Takes no lock
 * (safe in a fork child). */
void vmt__mx_format_utc_now(char *buf, size_t len, bool iso8601);

/* The application's return address of the public call that is running (see capture). */
#define VMT__MX_CALLER_PC() __builtin_extract_return_addr(__builtin_return_address(0))

#endif /* VMT_RUNTIME_MANAGEMENT_MANAGEMENT_IMPL_H */
