/*
 * runtime/sync/holds.c: Thread.holdsLock for monitors, and ReentrantLock.isHeldByCurrentThread
 * for synchronizers: one load of the owner token, compared with the calling thread's lock
 * identity (its record, or the implicit one of a thread neither started nor attached:
 * sync_impl.h).
 */
#include <errno.h>

#include "runtime/sync/sync_impl.h"

static int holds(const void *handle, uint32_t magic) {
  struct vmt__lock *l = vmt__lock_checked(handle, magic);
  if (l == NULL) return -EINVAL;
  return vmt__token_is_self(atomic_load_explicit(&l->owner, memory_order_relaxed), vmt__self) ? 1
                                                                                               : 0;
}

int vmt_monitor_holds_lock(const vmt_monitor_t *m) { return holds(m, VMT__LOCK_MAGIC_MONITOR); }
int vmt_sync_holds_lock(const vmt_sync_t *s) { return holds(s, VMT__LOCK_MAGIC_SYNC); }
