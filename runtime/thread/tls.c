/*
 * runtime/thread/tls.c: TLS slots (vmthread/tls.h): the process-wide key table, set and the
 * reader for other threads, key deletion, and the destructors a thread runs as it ends.
 *
 * The slots live in the record's cold block (registry.h), in the public fast-path block that
 * vmt_thread_fast points to while the thread is current, so vmt_tls_get inlines to one
 * initial-exec TLS load, a compare and a load. Slot values are plain pointers read and written
 * with the __atomic builtins (relaxed): the owner writes, other threads may read. The key
 * table changes under keys_lock (create, delete); set and the readers check a key with one
 * relaxed load of its `used` flag.
 */
#include <errno.h>

#include "runtime/thread/thread_impl.h"

typedef struct tls_key {
  _Atomic bool used;
  _Atomic(vmt_tls_destructor_fn) destructor;
} tls_key_t;

static pthread_mutex_t keys_lock = PTHREAD_MUTEX_INITIALIZER;
static tls_key_t keys[VMT_TLS_KEYS_MAX];   /* index 0 is never used */

/* Not held across fork (a fork already holds dozens of locks, the allocator's among them, and
 * ThreadSanitizer tracks 64 per thread): a key's `used` flag is its last store when created
 * and its first when deleted, so the table a vanished thread left is whole but for a
 * deletion's clearing of the slots, which the child finishes for the one thread it has. */
static void keys_fork_child(void) {
  pthread_mutex_init(&keys_lock, NULL);
  vmt_thread_t *self = vmt__current;
  if (self == NULL) return;
  for (vmt_tls_key_t k = 1; k < VMT_TLS_KEYS_MAX; k++)
    if (!atomic_load_explicit(&keys[k].used, memory_order_relaxed))
      __atomic_store_n(&self->cold->fast.tls[k], NULL, __ATOMIC_RELAXED);
}
VMT__PROCESS_STATE(tls_keys, .symbols = "keys_lock keys", .rule = VMT__FORK_REINIT,
                   .fork = "keys and destructors stay allocated; the lock is re-initialised and "
                           "a deletion a vanished thread left half done is finished for the "
                           "forking thread (the only one whose slots are read)",
                   .rank = VMT__RANK_THREAD + 2, .child = keys_fork_child);

static bool key_live(vmt_tls_key_t key) {
  return key != 0 && key < VMT_TLS_KEYS_MAX &&
         atomic_load_explicit(&keys[key].used, memory_order_acquire);
}

int vmt_tls_key_create(vmt_tls_key_t *key, vmt_tls_destructor_fn destructor) {
  if (key == NULL) return -EINVAL;
  pthread_mutex_lock(&keys_lock);
  for (vmt_tls_key_t k = 1; k < VMT_TLS_KEYS_MAX; k++) {
    if (atomic_load_explicit(&keys[k].used, memory_order_relaxed)) continue;
    atomic_store_explicit(&keys[k].destructor, destructor, memory_order_relaxed);
    atomic_store_explicit(&keys[k].used, true, memory_order_release);
    pthread_mutex_unlock(&keys_lock);
    *key = k;
    return 0;
  }
  pthread_mutex_unlock(&keys_lock);
  return -EAGAIN;
}

int vmt_tls_key_delete(vmt_tls_key_t key) {
  /* The walk below needs a snapshot; ask for it first, so a failure deletes nothing. */
  const vmt__snapshot_t *snap = vmt__registry_acquire();
  if (snap == NULL) return -ENOMEM;
  pthread_mutex_lock(&keys_lock);
  int rc = -EINVAL;
  if (key_live(key)) {
    atomic_store_explicit(&keys[key].used, false, memory_order_relaxed);
    atomic_store_explicit(&keys[key].destructor, NULL, memory_order_relaxed);
    /* Every thread that can hold a value is in the snapshot: a thread is inserted before it
     * runs (start) or becomes current (attach), and clears its slots before it leaves. The
     * index is not handed out again before the slots are clear: we still hold keys_lock. */
    for (size_t i = 0; i < snap->count; i++)
      __atomic_store_n(&snap->threads[i]->cold->fast.tls[key], NULL, __ATOMIC_RELAXED);
    rc = 0;
  }
  pthread_mutex_unlock(&keys_lock);
  vmt__registry_release(snap);
  return rc;
}

int vmt_tls_set(vmt_tls_key_t key, void *value) {
  if (!key_live(key)) return -EINVAL;
  vmt_thread_fast_t *f = vmt_thread_fast;
  if (f == NULL) return -EPERM;
  __atomic_store_n(&f->tls[key], value, __ATOMIC_RELAXED);
  return 0;
}

int vmt_thread_tls_get(vmt_thread_t *t, vmt_tls_key_t key, void **value) {
  if (t == NULL || value == NULL || !key_live(key) || !vmt__record_ref_if_live(t)) return -EINVAL;
  *value = __atomic_load_n(&t->cold->fast.tls[key], __ATOMIC_RELAXED);
  vmt__record_unref(t);
  return 0;
}

void vmt__tls_thread_end(vmt_thread_t *t) {
  void **slots = t->cold->fast.tls;
  for (int round = 0; round < VMT_TLS_DESTRUCTOR_ROUNDS; round++) {
    bool ran = false;
    for (vmt_tls_key_t k = 1; k < VMT_TLS_KEYS_MAX; k++) {
      void *v = __atomic_load_n(&slots[k], __ATOMIC_RELAXED);
      if (v == NULL) continue;
      vmt_tls_destructor_fn fn = atomic_load_explicit(&keys[k].used, memory_order_acquire)
                                     ? atomic_load_explicit(&keys[k].destructor,
                                                            memory_order_relaxed)
                                     : NULL;
      /* NULL before the call, so the destructor sees its slot empty and may set it again. */
      __atomic_store_n(&slots[k], NULL, __ATOMIC_RELAXED);
      if (fn) {
        fn(v);
        ran = true;
      }
    }
    if (!ran) break;
  }
  for (vmt_tls_key_t k = 0; k < VMT_TLS_KEYS_MAX; k++)
    __atomic_store_n(&slots[k], NULL, __ATOMIC_RELAXED);
}

