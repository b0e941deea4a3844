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

bool vmt__mx_ids_invalid(const int64_t *ids, size_t count) {
  for (size_t i = 0; i < count; i++)
    if (ids[i] <= 0) return true;
  return false;
}

size_t vmt__mx_find(const vmt__snapshot_t *snap, int64_t id, size_t *hint) {
  const int64_t *ids = snap->ids;
  size_t n = snap->count, at;
  if (hint && *hint < n && ids[*hint] <= id) {
    size_t lo = *hint, step = 1;
    if (ids[lo] == id) {
      at = lo;
    } else {
      /* ids[lo] < id: gallop until an entry is >= id, then search the last stride. */
      while (lo + step < n && ids[lo + step] < id) {
        lo += step;
        step *= 2;
      }
      size_t end = lo + step < n ? lo + step + 1 : n;
      at = lo + 1 + vmt__ids_lower_bound(ids + lo + 1, end - lo - 1, id);
    }
  } else {
    at = vmt__ids_lower_bound(ids, n, id);
  }
  bool found = at < n && ids[at] == id;
  if (hint) *hint = found ? at + 1 : at;
  return found ? at : VMT__MX_NOT_FOUND;
}

vmt_thread_t *vmt__mx_lookup(const vmt__snapshot_t *snap, int64_t id, size_t *hint) {
  size_t at = vmt__mx_find(snap, id, hint);
  if (at == VMT__MX_NOT_FOUND) return NULL;
  vmt_thread_t *t = snap->threads[at];
  return vmt__thread_is_listed(t) ? t : NULL;
}
