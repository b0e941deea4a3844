/*
 * runtime/registry/record.c: thread records, their references and their pool, the calling
 * thread's record, and the fork generation records are stamped with.
 *
 * References. `refs` counts internal references: one for the running thread (dropped as it
 * ends), one for the registry (dropped when no reader can still see the record, registry.c),
 * and one standing for all user references together (`user_refs`: start's and retain's). A
 * user's release can therefore never drop the running thread's reference; one release too
 * many is refused with -EINVAL.
 *
 * Type-stable pool. A record is never returned to malloc while the process lives: a freed
 * record has its magic cleared and goes back to the pool, from which a start takes it.
 * A join or release through a stale handle then reads a cleared magic (or zero references) and
 * fails with -EINVAL instead of touching freed memory. The residual case: once a record has been
 * recycled for a new thread, a stale handle to the old one names the new thread, and nothing
 * can tell them apart (docs/design.md, "Reclamation"). Memory held: the peak number of records
 * ever live at once, 448 bytes each on x86-64 (jemalloc's 448-byte size class) plus an 840-byte
 * cold block allocated apart (TLS slots, stack bounds, guard zones, park blocker: registry.h;
 * the 896-byte class) and a 32-byte hot cell (what the id and allocated-bytes walks read).
 *
 * vmt__current is one initial-exec TLS load (a %fs-relative mov on x86-64); the library's
 * static TLS need is one pointer per variable, well inside glibc's surplus for dlopen'ed
 * libraries. vmt_thread_fast, the public fast-path block of the inline calls in
 * vmthread/tls.h and vmthread/stack.h, is one more pointer beside it, the only exported TLS.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/registry/registry_impl.h"

_Thread_local vmt_thread_t *vmt__current __attribute__((tls_model("initial-exec")));
__thread vmt_thread_fast_t *vmt_thread_fast VMT_TLS_INITIAL_EXEC;
_Atomic uint32_t vmt__fork_generation;
_Atomic bool vmt__prof_arming;
void (*_Atomic vmt__prof_begin_hook)(vmt_thread_t *t);
void (*_Atomic vmt__prof_end_hook)(vmt_thread_t *t);
void (*_Atomic vmt__prof_poll_hook)(vmt_thread_t *t);
VMT__PROCESS_STATE(profiler_hooks,
                   .symbols = "vmt__prof_arming vmt__prof_begin_hook vmt__prof_end_hook "
                              "vmt__prof_poll_hook",
                   .rule = VMT__FORK_RESET,
                   .fork = "the hooks stay installed (they do nothing without a session); "
                           "arming is turned off by the profiler's child handler "
                           "(runtime/profiler/session.c): the child is not profiled");

/* The free records, a binary min-heap by address: a start takes the lowest-addressed free
 * record. Taken last in, first out, the records of 9000 threads that ended in whatever order
 * the scheduler let them were handed to the next 9000 starts in that order, and a walk in
 * start order (every snapshot's) went from page to page at random: a benchmark's rounds of
 * starting and ending them again raised thread_info_all's cost per thread at 10,000 threads
 * round by round (387 to 540 ns over 11 rounds, 2026-12-02 19:50 UTC), where records
 * allocated fresh each round kept it flat. Lowest address first gives threads started one
 * after another neighbouring records again, as a fresh allocation does. pool_cap is at least
 * pool_records, every record ever allocated, so a put never allocates. pool_lock. */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static vmt_thread_t **pool_heap;
static size_t pool_free_count, pool_records, pool_cap;

static bool heap_below(const vmt_thread_t *a, const vmt_thread_t *b) {
  return (uintptr_t)a < (uintptr_t)b;
}

static void heap_push(vmt_thread_t *t) {
  size_t i = pool_free_count++;
  while (i > 0) {
    size_t up = (i - 1) / 2;
    if (!heap_below(t, pool_heap[up])) break;
    pool_heap[i] = pool_heap[up];
    i = up;
  }
  pool_heap[i] = t;
}

static vmt_thread_t *heap_pop(void) {
  vmt_thread_t *top = pool_heap[0], *last = pool_heap[--pool_free_count];
  size_t i = 0, n = pool_free_count;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && heap_below(pool_heap[c + 1], pool_heap[c])) c++;
    if (!heap_below(pool_heap[c], last)) break;
    pool_heap[i] = pool_heap[c];
    i = c;
  }
  if (n > 0) pool_heap[i] = last;
  return top;
}

/* Counts a fresh record in, growing the heap first when it could not hold one more; false:
 * out of memory. The array is allocated outside pool_lock, which the fork handlers hold. */
static bool pool_admit(void) {
  vmt_thread_t **spare = NULL;
  size_t spare_cap = 0;
  for (;;) {
    pthread_mutex_lock(&pool_lock);
    if (pool_records < pool_cap) {
      pool_records++;
      pthread_mutex_unlock(&pool_lock);
      free(spare);
      return true;
    }
    if (spare != NULL && spare_cap > pool_cap) {
      if (pool_free_count) memcpy(spare, pool_heap, pool_free_count * sizeof(*spare));
      vmt_thread_t **old = pool_heap;
      pool_heap = spare;
      pool_cap = spare_cap;
      pool_records++;
      pthread_mutex_unlock(&pool_lock);
      free(old);
      return true;
    }
    size_t want = pool_cap < 64 ? 64 : pool_cap * 2;
    pthread_mutex_unlock(&pool_lock);
    free(spare);
    spare = vmt__fault_hit(VMT__FAULT_ALLOC) == 0 ? malloc(want * sizeof(*spare)) : NULL;
    if (spare == NULL) return false;
    spare_cap = want;
  }
}
/* Hot cells (registry.h) are carved in order from blocks of HOT_BLOCK_CELLS, never freed (each
 * stays with its record): the cells of records allocated one after another are neighbours,
 * and a walk over a snapshot's cells reads consecutive lines. pool_lock. */
#define HOT_BLOCK_CELLS 256
static struct vmt__thread_hot *hot_next;
static size_t hot_left;

/* A fresh hot cell, or NULL (out of memory). A block is allocated outside pool_lock, which the
 * fork handlers hold. */
static struct vmt__thread_hot *hot_cell(void) {
  struct vmt__thread_hot *spare = NULL;
  for (;;) {
    pthread_mutex_lock(&pool_lock);
    if (hot_left == 0 && spare != NULL) {
      hot_next = spare;
      hot_left = HOT_BLOCK_CELLS;
      spare = NULL;
    }
    if (hot_left != 0) {
      struct vmt__thread_hot *h = hot_next++;
      hot_left--;
      pthread_mutex_unlock(&pool_lock);
      free(spare);   /* another thread installed a block meanwhile */
      return h;
    }
    pthread_mutex_unlock(&pool_lock);
    spare = aligned_alloc(64, HOT_BLOCK_CELLS * sizeof(*spare));
    if (spare == NULL) return NULL;
  }
}

vmt_thread_t *vmt__record_alloc(void) {
  if (vmt__fault_hit(VMT__FAULT_ALLOC) != 0) return NULL;
  pthread_mutex_lock(&pool_lock);
  vmt_thread_t *t = pool_free_count ? heap_pop() : NULL;
  pthread_mutex_unlock(&pool_lock);
  struct vmt__thread_cold *cold;
  struct vmt__thread_hot *hot;
  if (t != NULL) {
    cold = t->cold;
    hot = t->hot;
  } else {
    /* The cold block is an allocation of its own (it stays with the record in the pool): the
     * records then lie in jemalloc's 448-byte slabs, nine to a page, and a walk of 10,000 of
     * them touches about 1,100 pages, which the second-level TLB holds (464 bytes, the 512-byte
     * class and 1,250 pages, before the body and result moved to the cold block). Behind each record, in one
     * 1,280-byte allocation, they were three to a page, and at 10,000 threads the ids walk cost
     * 30.0 ns per thread against 7.2 at 1000 (4.17x; docs/management.md). */
    if (!pool_admit()) return NULL;
    t = malloc(sizeof(*t));
    cold = t ? malloc(sizeof(*cold)) : NULL;
    hot = cold ? hot_cell() : NULL;
    if (hot == NULL) {
      free(cold);
      free(t);
      pthread_mutex_lock(&pool_lock);
      pool_records--;
      pthread_mutex_unlock(&pool_lock);
      return NULL;
    }
  }
  memset(t, 0, sizeof(*t));
  memset(cold, 0, sizeof(*cold));
  memset(hot, 0, sizeof(*hot));
  t->cold = cold;
  t->hot = hot;
  pthread_mutex_init(&t->cold->lock, NULL);
  __atomic_store_n(&t->magic, VMT__THREAD_MAGIC, __ATOMIC_RELAXED);
  return t;
}

static void pool_put(vmt_thread_t *t) {
  __atomic_store_n(&t->magic, 0, __ATOMIC_RELAXED);
  pthread_mutex_lock(&pool_lock);
  heap_push(t);   /* pool_cap >= pool_records > pool_free_count: room for it */
  pthread_mutex_unlock(&pool_lock);
}

size_t vmt__record_pool_free_count(void) {
  pthread_mutex_lock(&pool_lock);
  size_t n = pool_free_count;
  pthread_mutex_unlock(&pool_lock);
  return n;
}

/* "vmt-thread-" and an int64 in decimal, with its NUL. */
#define DEFAULT_NAME_BYTES 32

int vmt__record_init(vmt_thread_t *t, const vmt__thread_opts_t *o, vmt__thread_kind_t kind) {
  t->kind = kind;
  t->daemon = o->daemon;
  t->priority = o->priority;
  t->category = vmt__category_intern(kind == VMT__KIND_INTERNAL ? "vmt-internal" : o->category);
  t->default_name = o->name == NULL;
  size_t bytes = t->default_name ? DEFAULT_NAME_BYTES : o->name_len + 1;
  t->name = vmt__fault_hit(VMT__FAULT_ALLOC) == 0 ? malloc(bytes) : NULL;
  if (t->name == NULL || t->category == NULL) {
    free(t->name);
    pool_put(t);
    return -ENOMEM;
  }
  if (t->default_name) {
    t->name[0] = '\0';  /* written with the id */
  } else {
    memcpy(t->name, o->name, o->name_len);
    t->name[o->name_len] = '\0';
    vmt_os_native_name(t->name, t->os_name);
  }
  atomic_store_explicit(&t->state, VMT_THREAD_NEW, memory_order_relaxed);
  /* Stamped before the record is published: readers that find it in a snapshot (the
   * profiler's stop, a stack query) read it. A started thread's pthread is created in this
   * generation; an attached thread is the caller, of this process. */
  t->fork_generation = atomic_load_explicit(&vmt__fork_generation, memory_order_relaxed);
  return 0;
}

void vmt__record_set_id(vmt_thread_t *t, int64_t id) {
  t->id = id;
  if (!t->default_name) return;
  snprintf(t->name, DEFAULT_NAME_BYTES, "vmt-thread-%lld", (long long)id);
  /* An attached thread keeps its kernel name unless it was given one (thread_attach.c). */
  if (t->kind != VMT__KIND_ATTACHED) vmt_os_native_name(t->name, t->os_name);
}

bool vmt__handle_valid(const vmt_thread_t *t) {
  if (__atomic_load_n(&t->magic, __ATOMIC_RELAXED) != VMT__THREAD_MAGIC) return false;
  vmt_thread_t *w = (vmt_thread_t *)t;
  return atomic_load_explicit(&w->state, memory_order_acquire) != VMT_THREAD_TERMINATED ||
         atomic_load_explicit(&w->user_refs, memory_order_acquire) > 0;
}

#if defined(__x86_64__)
/* The records a walk reads lie nine to a page in jemalloc's 448-byte class (above): a field
 * added to struct vmt_thread that no walk reads belongs in the cold block. */
_Static_assert(sizeof(struct vmt_thread) <= 448, "struct vmt_thread outgrew its 448-byte class");
#endif

bool vmt__record_ref_if_live(vmt_thread_t *t) {
  if (!vmt__handle_valid(t)) return false;
  int32_t r = atomic_load_explicit(&t->refs, memory_order_relaxed);
  do {
    if (r <= 0) return false;
  } while (!atomic_compare_exchange_weak_explicit(&t->refs, &r, r + 1, memory_order_acquire,
                                                  memory_order_relaxed));
  return true;
}

void vmt__record_unref(vmt_thread_t *t) {
  if (atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1) return;
  /* Nobody joined a started thread: its pthread is detached so that glibc frees its stack. It
   * has ended (the thread's own reference is gone), so this only releases the descriptor. A
   * thread of the parent process seen in a fork child has no descriptor to release. */
  if (t->owns_pthread && vmt__thread_of_this_process(t)) pthread_detach(t->pthread);
  free(t->name);
  t->name = NULL;
  pool_put(t);
}

int vmt__record_rename(vmt_thread_t *t, const char *name, size_t len, const char *os_name) {
  char *fresh = vmt__fault_hit(VMT__FAULT_ALLOC) == 0 ? malloc(len + 1) : NULL;
  if (fresh == NULL) return -ENOMEM;
  memcpy(fresh, name, len);
  fresh[len] = '\0';
  pthread_mutex_lock(&t->cold->lock);
  char *old = atomic_exchange(&t->name, fresh);
  if (os_name) snprintf(t->os_name, sizeof(t->os_name), "%s", os_name);
  pthread_mutex_unlock(&t->cold->lock);
  free(old);   /* nobody copies it any more: copies are made under the lock */
  return 0;
}

char *vmt__record_name_dup(vmt_thread_t *t) {
  if (vmt__fault_hit(VMT__FAULT_ALLOC) != 0) return NULL;
  pthread_mutex_lock(&t->cold->lock);
  char *copy = strdup(atomic_load(&t->name));
  pthread_mutex_unlock(&t->cold->lock);
  return copy;
}

const char *vmt__record_name_hold(vmt_thread_t *t) {
  pthread_mutex_lock(&t->cold->lock);
  return atomic_load(&t->name);
}

void vmt__record_name_release(vmt_thread_t *t) { pthread_mutex_unlock(&t->cold->lock); }

size_t vmt__record_name_copy(vmt_thread_t *t, char *buf, size_t len) {
  pthread_mutex_lock(&t->cold->lock);
  const char *name = atomic_load(&t->name);
  size_t n = strlen(name);
  if (len > 0) {
    size_t k = n < len - 1 ? n : len - 1;
    memcpy(buf, name, k);
    buf[k] = '\0';
  }
  pthread_mutex_unlock(&t->cold->lock);
  return n;
}


static void pool_fork_prepare(void) { pthread_mutex_lock(&pool_lock); }
static void pool_fork_parent(void) { pthread_mutex_unlock(&pool_lock); }
static void pool_fork_child(void) { pthread_mutex_init(&pool_lock, NULL); }
VMT__PROCESS_STATE(record_pool,
                   .symbols = "pool_lock pool_heap pool_free_count pool_records pool_cap "
                              "hot_next hot_left",
                   .rule = VMT__FORK_HOLD,
                   .fork = "the free heap is whole (held across fork); references a vanished "
                           "thread held are never dropped: those records stay out of the pool",
                   .rank = VMT__RANK_REGISTRY + 2, .prepare = pool_fork_prepare,
                   .parent = pool_fork_parent, .child = pool_fork_child);
VMT__PROCESS_STATE(current, .symbols = "vmt__current vmt_thread_fast", .rule = VMT__FORK_KEEP,
                   .fork = "the forking thread keeps its record, and its fast-path block "
                           "(TLS slots, stack limit) with it");

/* Runs before the thread package stamps the surviving thread with the new generation. */
static void generation_fork_child(void) {
  atomic_fetch_add_explicit(&vmt__fork_generation, 1, memory_order_relaxed);
}
VMT__PROCESS_STATE(fork_generation, .symbols = "vmt__fork_generation", .rule = VMT__FORK_RESET,
                   .fork = "incremented: a record of an older generation is a thread of an "
                           "ancestor process, whose pthread_t must not be joined nor detached",
                   .rank = VMT__RANK_REGISTRY + 4, .child = generation_fork_child);
