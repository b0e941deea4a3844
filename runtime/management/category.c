/*
 * runtime/management/category.c: CPU time per thread category (Eclipse OMR's
 * omrthread_get_jvm_cpu_usage_info: how much CPU the GC, the JIT and the application used,
 * exited threads included); the thread dump prints it last (dump.c).
 *
 * A category's CPU time is the exited total the registry keeps plus the clocks of its threads
 * in a snapshot. An exit moves a thread from one side to the other inside an odd exit
 * sequence (registry.c, exit.c), so a sweep that reads the sequence even before and the same
 * after saw each thread exactly once; one that saw it move sweeps again. After
 * OPTIMISTIC_SWEEPS lost races (an exit storm) the sweep holds exits off while it reads the
 * clocks: under the registry's writer lock the sequence cannot move, at the price of delaying
 * starts and exits by one sweep (one clock read per thread, ~0.25 us each here).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>

#include "runtime/management/management_impl.h"

#define OPTIMISTIC_SWEEPS 8
#define INTERNAL_CATEGORY "vmt-internal"

static bool is_internal(const vmt__category_t *c) {
  return strcmp(c->name, INTERNAL_CATEGORY) == 0;
}

static size_t index_of(vmt__category_t *const *cats, size_t n, const vmt__category_t *c) {
  for (size_t i = 0; i < n; i++)
    if (cats[i] == c) return i;
  return n;
}

/* One pass: counts and exited totals, then the live clocks. */
static void sweep(const vmt__snapshot_t *snap, vmt__category_t *const *cats, size_t n,
                  bool cpu, vmt_category_usage_t *out) {
  for (size_t i = 0; i < n; i++) {
    snprintf(out[i].name, sizeof(out[i].name), "%s", cats[i]->name);
    out[i].live_count = atomic_load_explicit(&cats[i]->live, memory_order_relaxed);
    out[i].started_count = atomic_load_explicit(&cats[i]->started, memory_order_relaxed);
    out[i].exited_cpu_time_ns =
        cpu ? atomic_load_explicit(&cats[i]->exited_cpu_ns, memory_order_acquire) : -1;
    out[i].cpu_time_ns = out[i].exited_cpu_time_ns;
  }
  if (!cpu) return;
  for (size_t k = 0; k < snap->count; k++) {
    vmt_thread_t *t = snap->threads[k];
    vmt__mx_prefetch_ahead(snap, k, VMT__MX_RECORD_ALL);
    if (t->kind == VMT__KIND_INTERNAL) continue;
    /* Every record of the snapshot, listed or not: a thread between TERMINATED and its exit
     * accounting is still live on the clock's side. One that has been accounted for is marked
     * exiting, and the port refuses its clock. */
    bool ok = false;
    int64_t ns = vmt_os_thread_cpu_time(&t->os, false, &ok);
    size_t i = index_of(cats, n, t->category);
    if (!ok || i == n) continue;
    ns -= t->cpu_at_begin_ns;   /* an attached thread's CPU from before its attach is not ours */
    if (ns > 0) out[i].cpu_time_ns += ns;
  }
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const vmt_category_usage_t *)a)->name, ((const vmt_category_usage_t *)b)->name);
}

int vmt_mx_get_category_usage(vmt_category_usage_t **out, size_t *count) {
  if (out == NULL || count == NULL) return -EINVAL;
  *out = NULL;
  *count = 0;
  size_t n = 0;
  for (vmt__category_t *c = vmt__categories(); c; c = c->next) n += !is_internal(c);
  vmt__category_t **cats = vmt__mx_calloc(n ? n : 1, sizeof(*cats));
  vmt_category_usage_t *res = vmt__mx_calloc(n ? n : 1, sizeof(*res));
  const vmt__snapshot_t *snap = cats && res ? vmt__registry_acquire() : NULL;
  if (snap == NULL) {
    free(cats);
    free(res);
    return -ENOMEM;
  }
  /* A category created after this walk is not reported; a thread of it in the snapshot is
   * skipped (index_of), and both show in the next call. */
  size_t k = 0;
  for (vmt__category_t *c = vmt__categories(); c && k < n; c = c->next)
    if (!is_internal(c)) cats[k++] = c;
  n = k;
  bool cpu = vmt_mx_is_thread_cpu_time_supported() && vmt__mx_cpu_time_enabled();
  for (int attempt = 0;; attempt++) {
    bool hold = attempt >= OPTIMISTIC_SWEEPS;
    if (hold) vmt__registry_exits_hold();
    uint64_t s1 = vmt__registry_exit_seq();
    if ((s1 & 1) == 0) sweep(snap, cats, n, cpu, res);
    bool same = (s1 & 1) == 0 && vmt__registry_exit_seq() == s1;
    if (hold) vmt__registry_exits_release();
    if (same) break;
    sched_yield();
  }
  vmt__registry_release(snap);
  free(cats);
  qsort(res, n, sizeof(*res), by_name);
  *out = res;
  *count = n;
  return 0;
}

void vmt_mx_category_usage_free(vmt_category_usage_t *usage) { free(usage); }
