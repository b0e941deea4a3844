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

vmt_thread_t *vmt__mx_lookup(const vmt__snapshot_t *snap, int64_t id, size_t *hint) {
  vmt_thread_t *const *th = snap->threads;
  size_t n = snap->count, at;
  if (hint && *hint < n && th[*hint]->id <= id) {
    size_t lo = *hint, step = 1;
    if (th[lo]->id == id) {
      at = lo;
    } else {
      /* th[lo]->id < id: gallop until an entry is >= id, then search the last stride. */
      while (lo + step < n && th[lo + step]->id < id) {
        lo += step;
        step *= 2;
      }
      size_t end = lo + step < n ? lo + step + 1 : n;
      at = lo + 1 + vmt__threads_lower_bound(th + lo + 1, end - lo - 1, id);
    }
  } else {
    at = vmt__threads_lower_bound(th, n, id);
  }
  bool found = at < n && th[at]->id == id;
  if (hint) *hint = found ? at + 1 : at;
  if (!found) return NULL;
  vmt_thread_t *t = th[at];
  return vmt__thread_is_listed(t) ? t : NULL;
}
