/*
 * vmthread/tls.h: thread-local slots of runtime threads (started or attached), the layer under
 * a VM's own thread-locals (OMR's omrthread_tls_*; POSIX's pthread_key_* with a faster get and
 * a reader for other threads). The contract is in docs/thread-api.md ("TLS slots").
 *
 * - A key (1..VMT_TLS_KEYS_MAX-1; 0 is never a key) names one slot in every runtime thread; a
 *   slot starts NULL in every thread, including threads started before the key was created.
 * - vmt_tls_get is inline: one initial-exec TLS load, one compare and one load (docs/thread-
 *   api.md has its cost beside __thread and pthread_getspecific). vmt_tls_set is a call: it
 *   checks that the key is allocated.
 * - At a thread's exit (return, vmt_thread_exit, cancellation) and at its last detach, on the
 *   thread itself, before it leaves the registry: each non-NULL slot whose key has a destructor
 *   is set to NULL and the destructor is called with the old value, exactly once per value. A
 *   destructor that sets a slot again gets another round, up to VMT_TLS_DESTRUCTOR_ROUNDS in
 *   all (PTHREAD_DESTRUCTOR_ITERATIONS' rule); what is left after them is dropped, and then
 *   every slot reads NULL.
 * - Deleting a key calls no destructor (POSIX's rule): it sets the key's slot to NULL in every
 *   thread, so a key created later on the same index starts NULL everywhere. Using a key while
 *   another thread deletes it is the caller's race.
 */
#ifndef VMTHREAD_TLS_H
#define VMTHREAD_TLS_H

#include "vmthread/common.h"
#include "vmthread/thread.h"

VMT_EXTERN_C_BEGIN

typedef uint32_t vmt_tls_key_t;
typedef void (*vmt_tls_destructor_fn)(void *value);

#define VMT_TLS_DESTRUCTOR_ROUNDS 4

/* A new key whose slot is NULL in every thread; destructor may be NULL. Errors: -EINVAL (NULL
 * key), -EAGAIN (all VMT_TLS_KEYS_MAX - 1 keys are in use). */
VMT_EXPORT int vmt_tls_key_create(vmt_tls_key_t *key, vmt_tls_destructor_fn destructor);
/* Frees key (no destructor runs). -EINVAL if key is not allocated. */
VMT_EXPORT int vmt_tls_key_delete(vmt_tls_key_t key);

/* The calling thread's value of key's slot. NULL when unset, for a key out of range (0 or
 * >= VMT_TLS_KEYS_MAX), and on a thread that is not a runtime thread. A key that was deleted
 * reads NULL until its index is handed out again. */
static inline void *vmt_tls_get(vmt_tls_key_t key) {
  vmt_thread_fast_t *f = vmt_thread_fast;
  if (__builtin_expect(f == NULL || key >= VMT_TLS_KEYS_MAX, 0)) return NULL;
  return __atomic_load_n(&f->tls[key], __ATOMIC_RELAXED);
}

/* Sets the calling thread's value. Errors: -EINVAL (key not allocated), -EPERM (the calling
 * thread is not a runtime thread: it has no slots). */
VMT_EXPORT int vmt_tls_set(vmt_tls_key_t key, void *value);

/* Another thread's value (OMR's omrthread_tls_get): t is a thread the caller holds a reference
 * to; the value may change or be destructed right after the read (the caller and the owner
 * agree on its lifetime). NULL once t has ended. Errors: -EINVAL (NULL t or value, a released
 * handle, key not allocated). */
VMT_EXPORT int vmt_thread_tls_get(vmt_thread_t *t, vmt_tls_key_t key, void **value);

VMT_EXTERN_C_END

#endif /* VMTHREAD_TLS_H */
