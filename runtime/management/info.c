/*
 * runtime/management/info.c: ThreadInfo (getThreadInfo in all its forms, dumpAllThreads, and
 * dumpAllThreads at a safepoint).
 *
 * Without a stack (max_depth 0) a ThreadInfo is a copy taken while the thread runs on. What
 * Java promises to be consistent is: the state, the lock the thread is blocked or waiting on,
 * its owner and the held locks come from one read of the monitor module's per-thread sequence
 * lock (vmt__thread_lock_info), so a BLOCKED thread always reports the monitor it is blocked
 * on. With a stack, the whole copy is made inside a handshake with the thread (HotSpot 25's
 * getStackTrace is one): the stack the VM's walker reports and the locks are of one moment at
 * a safe point, and the thread cannot exit while it is read. A dump at a safepoint makes every
 * thread's copy at one moment. The thread's record and its strings are protected by the
 * registry snapshot the caller holds.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/management/management_impl.h"

static void lock_info_clear(vmt_lock_info_t *l) {
  free(l->class_name);
  free(l->name);
}

/* ---- ThreadInfo blocks (management_impl.h) ------------------------------------------- *
 * Every ThreadInfo is preceded by a head naming the block it was carved from, or NULL for one
 * that has an allocation of its own; a head is max_align_t-aligned (16 bytes here) so the
 * ThreadInfo after it is as aligned as malloc's memory. */
typedef struct info_head {
  _Alignas(max_align_t) vmt__mx_info_block_t *block;
} info_head_t;

enum {
  /* A block's size, header included: one of jemalloc's size classes and below glibc's mmap
   * threshold, so a freed block is reused by the next call's blocks. */
  INFO_BLOCK_BYTES = 64 * 1024,
  /* A ThreadInfo larger than this (a long name) gets an allocation of its own. */
  INFO_IN_BLOCK_MAX = INFO_BLOCK_BYTES / 16,
};

struct vmt__mx_info_block {
  /* ThreadInfos carved from it that are still alive, plus one while it is the pool's cur. */
  _Atomic size_t refs;
  size_t used;   /* bytes of data[] handed out */
  _Alignas(max_align_t) unsigned char data[];
};
#define INFO_BLOCK_DATA (INFO_BLOCK_BYTES - offsetof(vmt__mx_info_block_t, data))
_Static_assert(sizeof(info_head_t) == _Alignof(max_align_t), "a head is one alignment unit");

static void block_unref(vmt__mx_info_block_t *b) {
  if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1) free(b);
}

void vmt__mx_info_pool_end(vmt__mx_info_pool_t *pool) {
  if (pool->cur) block_unref(pool->cur);
  pool->cur = NULL;
}

/* A zeroed ThreadInfo with `extra` bytes after it, or NULL (-ENOMEM). */
static vmt_thread_info_t *info_alloc(vmt__mx_info_pool_t *pool, size_t extra) {
  size_t need = sizeof(info_head_t) + sizeof(vmt_thread_info_t) + extra;
  info_head_t *h;
  if (!pool || need > INFO_IN_BLOCK_MAX) {
    if (!(h = vmt__mx_calloc(1, need))) return NULL;
    h->block = NULL;
    return (vmt_thread_info_t *)(h + 1);
  }
  need = (need + _Alignof(max_align_t) - 1) & ~(_Alignof(max_align_t) - 1);
  vmt__mx_info_block_t *b = pool->cur;
  if (!b || b->used + need > INFO_BLOCK_DATA) {
    /* malloc, not calloc: only what is handed out is cleared. */
    vmt__mx_info_block_t *fresh = vmt__mx_malloc(INFO_BLOCK_BYTES);
    if (!fresh) return NULL;
    atomic_init(&fresh->refs, 1);
    fresh->used = 0;
    if (b) block_unref(b);
    pool->cur = b = fresh;
  }
  h = (info_head_t *)(b->data + b->used);
  b->used += need;
  atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
  memset(h, 0, need);
  h->block = b;
  return (vmt_thread_info_t *)(h + 1);
}

static void info_release(vmt_thread_info_t *info) {
  info_head_t *h = (info_head_t *)info - 1;
  if (h->block)
    block_unref(h->block);
  else
    free(h);
}

void vmt_mx_thread_info_free(vmt_thread_info_t *info) {
  if (!info) return;
  /* name and category live in info's own allocation (info_alloc). */
  if (info->lock) lock_info_clear(info->lock);
  free(info->lock);
  free(info->lock_owner_name);
  vmt__mx_frames_free(info->frames);
  for (size_t i = 0; i < info->locked_monitor_count; i++)
    lock_info_clear(&info->locked_monitors[i].lock);
  free(info->locked_monitors);
  for (size_t i = 0; i < info->locked_synchronizer_count; i++)
    lock_info_clear(&info->locked_synchronizers[i]);
  free(info->locked_synchronizers);
  info_release(info);
}

void vmt_mx_thread_info_array_free(vmt_thread_info_t **infos, size_t count) {
  if (!infos) return;
  for (size_t i = 0; i < count; i++) vmt_mx_thread_info_free(infos[i]);
  free(infos);
}

static int copy_lock(const vmt__lock_desc_t *d, vmt_lock_info_t *l) {
  l->class_name = vmt__mx_strdup(d->class_name);
  l->name = vmt__mx_strdup(d->name);
  l->identity_hash = d->identity;
  return l->class_name && l->name ? 0 : -ENOMEM;
}

/* The owner's id and name, from the caller's snapshot or, when the owner started after it
 * was taken, from a fresh one. */
static int owner_of(const vmt__snapshot_t *snap, int64_t owner_id, vmt_thread_info_t *info) {
  info->lock_owner_id = -1;
  if (owner_id <= 0) return 0;
  vmt_thread_t *owner = vmt__mx_lookup(snap, owner_id, NULL);
  const vmt__snapshot_t *fresh = NULL;
  if (!owner) {
    fresh = vmt__registry_acquire();
    if (!fresh) return -ENOMEM;
    owner = vmt__mx_lookup(fresh, owner_id, NULL);
  }
  int rc = 0;
  if (owner) {
    info->lock_owner_id = owner_id;
    info->lock_owner_name = vmt__record_name_dup(owner);
    if (!info->lock_owner_name) rc = -ENOMEM;
  }
  if (fresh) vmt__registry_release(fresh);
  return rc;
}

static int copy_held(const vmt__thread_lock_info_t *li, bool monitors, bool syncs,
                     vmt_thread_info_t *info) {
  size_t nm = 0, ns = 0;
  for (size_t i = 0; i < li->held_count; i++) {
    if (li->held[i].is_sync)
      ns += syncs;
    else
      nm += monitors;
  }
  if (nm && !(info->locked_monitors = vmt__mx_calloc(nm, sizeof(vmt_monitor_info_t))))
    return -ENOMEM;
  if (ns && !(info->locked_synchronizers = vmt__mx_calloc(ns, sizeof(vmt_lock_info_t))))
    return -ENOMEM;
  for (size_t i = 0; i < li->held_count; i++) {
    const vmt__lock_desc_t *d = &li->held[i];
    int rc = 0;
    if (d->is_sync && syncs) {
      rc = copy_lock(d, &info->locked_synchronizers[info->locked_synchronizer_count++]);
    } else if (!d->is_sync && monitors) {
      vmt_monitor_info_t *m = &info->locked_monitors[info->locked_monitor_count++];
      m->stack_depth = -1;  /* until the frames are known (locked_depths) */
      rc = copy_lock(d, &m->lock);
    }
    if (rc) return rc;
  }
  return 0;
}

/*
 * The frame that entered each locked monitor (Java's MonitorInfo.getLockedStackDepth). The
 * monitor module knows the nesting order of held locks, not frames; the walker may tell
 * (vmt_mx_frame_holds_monitor), and a monitor reported by several frames (re-entered deeper
 * down) was entered by the outermost of them. A monitor no frame reports is given frame 0 of
 * the walked stack, so that tools which print locks under frames (ThreadInfo.toString, jstack
 * layouts) still show who holds it; with no frames at all it stays -1 (unknown).
 */
static void locked_depths(vmt_thread_info_t *info, const vmt__mx_frame_lock_t *locks,
                          size_t nlocks) {
  for (size_t i = 0; i < info->locked_monitor_count; i++) {
    vmt_monitor_info_t *m = &info->locked_monitors[i];
    int32_t depth = info->frame_count > 0 ? 0 : -1;
    bool reported = false;
    for (size_t k = 0; k < nlocks; k++) {
      if (locks[k].identity != m->lock.identity_hash) continue;
      if (!reported || locks[k].frame > depth) depth = locks[k].frame;
      reported = true;
    }
    m->stack_depth = depth;
  }
}

/* JVMTI's thread state bits (vmthread/management.h): Java's state and the kind of wait from
 * the one copy li, then the bits read beside it. */
static uint32_t state_bits(const vmt__thread_lock_info_t *li, const vmt_thread_info_t *info) {
  uint32_t bits = VMT_THREAD_STATE_ALIVE;
  switch (li->state) {
    case VMT_THREAD_RUNNABLE:
      bits |= VMT_THREAD_STATE_RUNNABLE;
      break;
    case VMT_THREAD_BLOCKED:
      break;
    case VMT_THREAD_WAITING:
      bits |= VMT_THREAD_STATE_WAITING | VMT_THREAD_STATE_WAITING_INDEFINITELY;
      break;
    case VMT_THREAD_TIMED_WAITING:
      bits |= VMT_THREAD_STATE_WAITING | VMT_THREAD_STATE_WAITING_WITH_TIMEOUT;
      break;
    default:   /* NEW: never listed; TERMINATED: no ThreadInfo */
      return 0;
  }
  bits |= li->wait_bits;
  if (info->in_native) bits |= VMT_THREAD_STATE_IN_NATIVE;
  if (info->suspended) bits |= VMT_THREAD_STATE_SUSPENDED;
  if (li->interrupted) bits |= VMT_THREAD_STATE_INTERRUPTED;
  return bits;
}

/* Everything a ThreadInfo holds, read from t now: called by the querying thread, or inside a
 * handshake with t (on t itself at its poll, or on the querying thread while t is held).
 * stacks NULL: no frames. */
static int read_thread_info(const vmt__snapshot_t *snap, vmt_thread_t *t, unsigned flags,
                            vmt__mx_stacks_t *stacks, vmt__mx_info_pool_t *pool,
                            vmt_thread_info_t **out) {
  bool locked_monitors = flags & VMT_MX_INFO_LOCKED_MONITORS;
  bool locked_synchronizers = flags & VMT_MX_INFO_LOCKED_SYNCHRONIZERS;
  *out = NULL;
  if (!vmt__thread_is_listed(t)) return 0;
  vmt__thread_lock_info_t li;
  memset(&li, 0, sizeof(li));
  int rc = vmt__thread_lock_info(t, locked_monitors || locked_synchronizers, &li);
  if (rc) return rc;
  int state = li.state;
  if (state == VMT_THREAD_TERMINATED) {
    free(li.held);
    return 0;
  }
  /* One allocation for the ThreadInfo and its two strings: three mallocs and frees fewer per
   * thread in a dump. */
  /* The name is read under the record's lock, which a rename takes (registry/record.c). */
  const char *name = vmt__record_name_hold(t);
  size_t name_len = strlen(name) + 1, category_len = strlen(t->category->name) + 1;
  vmt_thread_info_t *info = info_alloc(pool, name_len + category_len);
  if (info) info->name = memcpy((char *)(info + 1), name, name_len);
  vmt__record_name_release(t);
  if (!info) {
    free(li.held);
    return -ENOMEM;
  }
  info->category = memcpy(info->name + name_len, t->category->name, category_len);
  info->id = t->id;
  info->state = (vmt_thread_state_t)state;
  info->daemon = t->daemon;
  info->priority = atomic_load_explicit(&t->priority, memory_order_relaxed);
  info->tid = vmt_os_thread_tid(&t->os);
  if (flags & VMT_MX_INFO_NO_CPU_TIME) {
    info->user_time_ns = info->cpu_time_ns = -1;
  } else if (flags & VMT__MX_INFO_NO_USER_TIME) {
    info->user_time_ns = -1;
    info->cpu_time_ns = vmt__mx_thread_cpu_ns(t);
  } else {
    vmt__mx_thread_user_and_cpu_ns(t, &info->user_time_ns, &info->cpu_time_ns);
  }
  info->elapsed_ns = vmt_os_java_time_nanos() - t->start_time_ns;
  info->blocked_count = (int64_t)li.blocked_count;
  info->blocked_time_ns = li.blocked_ns;
  info->waited_count = (int64_t)li.waited_count;
  info->waited_time_ns = li.waited_ns;
  info->lock_owner_id = -1;
  /* In native code only while RUNNABLE: a blocking call publishes its Java state before it
   * enters its safe region and leaves the region before it is RUNNABLE again, and a thread
   * blocked or waiting in the runtime is not executing native code (HotSpot's waiting threads
   * are never isInNative; test/mx_conformance_test.c, a_waiting_thread_is_never_in_native). */
  info->in_native = info->state == VMT_THREAD_RUNNABLE && vmt__exec_state_of(t) == VMT_EXEC_NATIVE;
  info->suspended = vmt__is_suspended(t);
  info->state_bits = state_bits(&li, info);
  if (li.has_lock) {
    info->lock = vmt__mx_calloc(1, sizeof(*info->lock));
    rc = info->lock ? copy_lock(&li.lock, info->lock) : -ENOMEM;
    if (!rc) rc = owner_of(snap, li.lock_owner_id, info);
  }
  if (!rc) rc = copy_held(&li, locked_monitors, locked_synchronizers, info);
  vmt__mx_frame_lock_t *locks = NULL;
  size_t nlocks = 0;
  if (!rc && stacks)
    rc = vmt__mx_capture_frames(stacks, t, &info->frames, &info->frame_count,
                                locked_monitors ? &locks : NULL, &nlocks);
  if (!rc) locked_depths(info, locks, nlocks);
  free(locks);
  free(li.held);
  if (rc) {
    vmt_mx_thread_info_free(info);
    return rc;
  }
  *out = info;
  return 0;
}

typedef struct info_request {
  const vmt__snapshot_t *snap;
  unsigned flags;
  vmt__mx_stacks_t *stacks;
  vmt__mx_info_pool_t *pool;
  vmt_thread_info_t *info;
  int rc;
} info_request_t;

static void read_in_handshake(vmt_thread_t *t, void *arg) {
  info_request_t *r = arg;
  /* On t itself, at its poll, the walker is the VM's code run on a thread that is not in a
   * management call: cancelled there, it would never complete the operation the requester
   * waits for. On the requester, the call has cancellation off already (stacks). */
  bool on_target = t == vmt__current;
  int cancel = on_target ? vmt__mx_cancel_off() : 0;
  r->rc = read_thread_info(r->snap, t, r->flags, r->stacks, r->pool, &r->info);
  if (on_target) vmt__mx_cancel_restore(cancel);
}

int vmt__mx_thread_info(const vmt__snapshot_t *snap, vmt_thread_t *t, unsigned flags,
                        vmt__mx_stacks_t *stacks, vmt__mx_info_pool_t *pool,
                        vmt_thread_info_t **out) {
  *out = NULL;
  if (!t || !vmt__thread_is_listed(t)) return 0;
  /* Without a walker another thread has no frames (backtrace(3) walks only its caller's
   * stack, and must not run at the thread's poll either): nothing to hold still. */
  if (stacks->max_depth == 0 || !stacks->fn || t == vmt__current)
    return read_thread_info(snap, t, flags, stacks, pool, out);
  /* With a stack: inside a handshake, so the walker sees the thread stopped at a safe point,
   * its stack and its locks as one state, and the thread cannot exit meanwhile (HotSpot 25's
   * getStackTrace is a handshake too; dumps are its safepoints). The call's walker lock and
   * scratch buffer (stacks) serve the handshake wherever it runs: the caller holds the lock
   * and waits, and the operation runs on one thread at a time, ordered by the handshake's
   * queue lock and completion. */
  info_request_t r = {.snap = snap, .flags = flags, .stacks = stacks, .pool = pool};
  /* The snapshot keeps t's record from reuse: no reference per thread. */
  int rc = vmt__hs_run_kept(t, read_in_handshake, &r, VMT_MX_WALK_TIMEOUT_NS, NULL);
  if (rc == 0) {
    *out = r.info;
    return r.rc;
  }
  if (rc == -ESRCH) return 0;   /* it exited: Java's null */
  /* Managed code that did not poll in time: its ThreadInfo without a stack. */
  return read_thread_info(snap, t, flags, NULL, pool, out);
}

/* -EINVAL for unknown flags, -ENOTSUP for usage this runtime cannot report (never here). */
static int check_flags(uint32_t flags) {
  if (flags & ~(uint32_t)VMT__MX_INFO_PUBLIC_FLAGS) return -EINVAL;
  if ((flags & VMT_MX_INFO_LOCKED_MONITORS) && !vmt_mx_is_object_monitor_usage_supported())
    return -ENOTSUP;
  if ((flags & VMT_MX_INFO_LOCKED_SYNCHRONIZERS) && !vmt_mx_is_synchronizer_usage_supported())
    return -ENOTSUP;
  return 0;
}

static uint32_t locked_flags(bool locked_monitors, bool locked_synchronizers) {
  return (locked_monitors ? VMT_MX_INFO_LOCKED_MONITORS : 0) |
         (locked_synchronizers ? VMT_MX_INFO_LOCKED_SYNCHRONIZERS : 0);
}

static int info_array(const int64_t *ids, size_t count, uint32_t flags, int32_t max_depth,
                      const void *caller_pc, vmt_thread_info_t ***out) {
  if (!ids || !out || max_depth < 0 || vmt__mx_ids_invalid(ids, count)) return -EINVAL;
  int rc = check_flags(flags);
  if (rc) return rc;
  vmt_thread_info_t **infos = vmt__mx_calloc(count ? count : 1, sizeof(*infos));
  if (!infos) return -ENOMEM;
  const vmt__snapshot_t *snap = vmt__registry_acquire();
  if (!snap) {
    free(infos);
    return -ENOMEM;
  }
  vmt__mx_stacks_t stacks;
  vmt__mx_stacks_begin(&stacks, max_depth, caller_pc);
  /* One ThreadInfo alone (getThreadInfo(id)) gets an allocation of its own: a block would
   * hold 64 KiB for it. */
  vmt__mx_info_pool_t pool = {0};
  size_t hint = 0;
  for (size_t i = 0; i < count && rc == 0; i++) {
    vmt_thread_t *t = vmt__mx_lookup(snap, ids[i], &hint);
    vmt__mx_prefetch_info_ahead(snap, hint);
    rc = vmt__mx_thread_info(snap, t, flags, &stacks, count > 1 ? &pool : NULL, &infos[i]);
  }
  vmt__mx_info_pool_end(&pool);
  vmt__mx_stacks_end(&stacks);
  vmt__registry_release(snap);
  if (rc) {
    vmt_mx_thread_info_array_free(infos, count);
    return rc;
  }
  *out = infos;
  return 0;
}

__attribute__((noinline)) int vmt_mx_get_thread_info(int64_t id, int32_t max_depth,
                                                     vmt_thread_info_t **out) {
  if (id <= 0 || max_depth < 0 || !out) return -EINVAL;
  vmt_thread_info_t **one;
  int rc = info_array(&id, 1, 0, max_depth, VMT__MX_CALLER_PC(), &one);
  if (rc) return rc;
  *out = one[0];
  free(one);
  return 0;
}

__attribute__((noinline)) int vmt_mx_get_thread_info_array(const int64_t *ids, size_t count,
                                                           bool locked_monitors,
                                                           bool locked_synchronizers,
                                                           int32_t max_depth,
                                                           vmt_thread_info_t ***out) {
  return info_array(ids, count, locked_flags(locked_monitors, locked_synchronizers), max_depth,
                    VMT__MX_CALLER_PC(), out);
}

__attribute__((noinline)) int vmt_mx_get_thread_info_array_ex(const int64_t *ids, size_t count,
                                                              uint32_t flags, int32_t max_depth,
                                                              vmt_thread_info_t ***out) {
  return info_array(ids, count, flags, max_depth, VMT__MX_CALLER_PC(), out);
}

int vmt__mx_dump_all(unsigned flags, int32_t max_depth, const void *caller_pc,
                     vmt_thread_info_t ***out, size_t *count) {
  if (!out || !count || max_depth < 0) return -EINVAL;
  int rc = check_flags(flags);
  if (rc) return rc;
  const vmt__snapshot_t *snap = vmt__registry_acquire();
  if (!snap) return -ENOMEM;
  vmt_thread_info_t **infos = vmt__mx_calloc(snap->count + 1, sizeof(*infos));
  if (!infos) {
    vmt__registry_release(snap);
    return -ENOMEM;
  }
  vmt__mx_stacks_t stacks;
  vmt__mx_stacks_begin(&stacks, max_depth, caller_pc);
  vmt__mx_info_pool_t pool = {0};
  size_t n = 0;
  for (size_t i = 0; i < snap->count && rc == 0; i++) {
    vmt__mx_prefetch_info_ahead(snap, i);
    /* Threads that ended since the snapshot was taken are left out, not reported as NULL. */
    rc = vmt__mx_thread_info(snap, snap->threads[i], flags, &stacks, &pool, &infos[n]);
    if (infos[n]) n++;
  }
  vmt__mx_info_pool_end(&pool);
  vmt__mx_stacks_end(&stacks);
  vmt__registry_release(snap);
  if (rc) {
    vmt_mx_thread_info_array_free(infos, n);
    return rc;
  }
  *out = infos;
  *count = n;
  return 0;
}

__attribute__((noinline)) int vmt_mx_dump_all_threads(bool locked_monitors,
                                                      bool locked_synchronizers,
                                                      int32_t max_depth,
                                                      vmt_thread_info_t ***out, size_t *count) {
  return vmt__mx_dump_all(locked_flags(locked_monitors, locked_synchronizers), max_depth,
                          VMT__MX_CALLER_PC(), out, count);
}

__attribute__((noinline)) int vmt_mx_dump_all_threads_ex(uint32_t flags, int32_t max_depth,
                                                         vmt_thread_info_t ***out,
                                                         size_t *count) {
  return vmt__mx_dump_all(flags, max_depth, VMT__MX_CALLER_PC(), out, count);
}

__attribute__((noinline)) int vmt_mx_dump_all_threads_at_safepoint(uint32_t flags,
                                                                   int32_t max_depth,
                                                                   int64_t timeout_ns,
                                                                   vmt_thread_info_t ***out,
                                                                   size_t *count) {
  if (!out || !count || max_depth < 0 || timeout_ns < 0) return -EINVAL;
  int rc = check_flags(flags);   /* before stopping anybody for a call that cannot run */
  if (rc) return rc;
  rc = vmt_safepoint_begin(timeout_ns, NULL);
  if (rc) return rc;
  /* Every other thread is stopped: the handshakes of the dump are the coordinator's, run on
   * the spot for each thread. */
  rc = vmt__mx_dump_all(flags, max_depth, VMT__MX_CALLER_PC(), out, count);
  vmt_safepoint_end(NULL);
  return rc;
}
