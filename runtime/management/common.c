/*
 * runtime/management/common.c: helpers every management file uses: the switches, the sweep, the
 * id check Java performs before anything else, and the id lookup in a registry snapshot.
 */
#include <errno.h>

#include "runtime/management/management_impl.h"

int vmt__mx_switch_get(bool supported, _Atomic bool *sw, bool *out) {
  if (!out) return -EINVAL;
  if (!supported) return -ENOTSUP;
  *out = atomic_load_explicit(sw, memory_order_relaxed);
  return 0;
}

int vmt__mx_switch_set(bool supported, _Atomic bool *sw, bool value) {
  if (!supported) return -ENOTSUP;
  atomic_store_explicit(sw, value, memory_order_relaxed);
  return 0;
}

int vmt__mx_sweep(const int64_t *ids, size_t count, int64_t *out, bool measuring,
                  vmt__mx_query_fn query) {
  if (!measuring) {
    for (size_t i = 0; i < count; i++) out[i] = -1;
    return 0;
  }
  const vmt__snapshot_t *snap = vmt__registry_acquire();
  if (!snap) return -ENOMEM;
  size_t hint = 0;
  for (size_t i = 0; i < count; i++) {
    vmt_thread_t *t = vmt__mx_lookup(snap, ids[i], &hint);
    vmt__mx_prefetch_next(snap, hint);
    out[i] = t ? query(t) : -1;
  }
  vmt__registry_release(snap);
  return 0;
}

bool vmt__mx_ids_invalid(const int64_t *ids, size_t count) {
  for (size_t i = 0; i < count; i++)
    if (ids[i] <= 0) return true;
  return false;
}

vmt_thread_t *vmt__mx_lookup(const vmt__snapshot_t *snap, int64_t id, size_t *hint) {
  size_t n = snap->count;
  size_t at = hint && *hint < n && snap->threads[*hint]->id == id
                  ? *hint
                  : vmt__threads_lower_bound(snap->threads, n, id);
  if (hint) *hint = at + 1;
  if (at == n || snap->threads[at]->id != id) return NULL;
  vmt_thread_t *t = snap->threads[at];
  return vmt__thread_is_listed(t) ? t : NULL;
}
