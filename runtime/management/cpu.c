/*
 * runtime/management/cpu.c: thread CPU and user time (getThreadCpuTime, getThreadUserTime, their
 * current-thread and com.sun.management array forms) and the measurement switch.
 *
 * A read never trusts a pthread_t: it goes through the thread's record in a protected registry
 * snapshot and the port layer's vmt_os_thread_cpu_time, which answers -1 once the thread is
 * exiting (before the kernel can recycle its tid). An array sweep protects one snapshot for all
 * its ids. The CPU-time sweep resolves a chunk of ids (a walk when they come sorted, as from
 * getAllThreadIds), then hands the chunk's port records to the port, which reads their clocks
 * in one loop with the syscall inline (vmt_os_threads_cpu_time): no function returns between
 * one thread's syscall and the next, each of which costs ~110 ns here (os_linux/os_impl.h).
 * docs/management.md has the figures. User time is the port layer's consistent user time,
 * never above the total.
 */
#include <errno.h>

#include "runtime/management/management_impl.h"

/* HotSpot enables thread CPU time by default (ThreadService::_thread_cpu_time_enabled). */
static _Atomic bool cpu_time_enabled = true;
VMT__PROCESS_STATE(cpu_switch, .symbols = "cpu_time_enabled", .rule = VMT__FORK_KEEP,
                   .fork = "the setting holds in the child");

bool vmt__mx_cpu_time_enabled(void) {
  return atomic_load_explicit(&cpu_time_enabled, memory_order_relaxed);
}

/* vmt_os_caps() probes the port once (a failed probe leaves the capabilities false, which
 * the queries report as -ENOTSUP). */
bool vmt_mx_is_thread_cpu_time_supported(void) { return vmt_os_caps()->thread_cpu_time; }

bool vmt_mx_is_current_thread_cpu_time_supported(void) {
  return vmt_os_caps()->current_thread_cpu_time;
}

static bool any_cpu_time_supported(void) {
  return vmt_mx_is_thread_cpu_time_supported() || vmt_mx_is_current_thread_cpu_time_supported();
}

int vmt_mx_is_thread_cpu_time_enabled(bool *enabled) {
  return vmt__mx_switch_get(any_cpu_time_supported(), &cpu_time_enabled, enabled);
}

int vmt_mx_set_thread_cpu_time_enabled(bool enable) {
  return vmt__mx_switch_set(any_cpu_time_supported(), &cpu_time_enabled, enable);
}

int vmt_mx_get_current_thread_cpu_time(int64_t *ns) {
  if (!ns) return -EINVAL;
  if (!vmt_mx_is_current_thread_cpu_time_supported()) return -ENOTSUP;
  *ns = vmt__mx_cpu_time_enabled() ? vmt_os_current_thread_cpu_time(false) : -1;
  return 0;
}

int vmt_mx_get_current_thread_user_time(int64_t *ns) {
  if (!ns) return -EINVAL;
  if (!vmt_mx_is_current_thread_cpu_time_supported()) return -ENOTSUP;
  if (!vmt__mx_cpu_time_enabled()) {
    *ns = -1;
    return 0;
  }
  vmt_thread_t *self = vmt_thread_current();
  *ns = vmt_os_current_thread_user_time_consistent(self ? &self->os : NULL);
  return 0;
}

int64_t vmt__mx_thread_cpu_ns(vmt_thread_t *t) {
  if (!vmt__mx_cpu_time_enabled()) return -1;
  /* The calling thread's own pid-0 clock skips the kernel's pid lookup. */
  if (t == vmt__current) return vmt_os_current_thread_cpu_time(false);
  if (!vmt_os_caps()->thread_cpu_time) return -1;
  bool ok = false;
  int64_t ns = vmt_os_thread_cpu_time(&t->os, false, &ok);
  return ok ? ns : -1;
}

int64_t vmt__mx_thread_user_ns(vmt_thread_t *t) {
  if (!vmt__mx_cpu_time_enabled()) return -1;
  if (t == vmt__current) return vmt_os_current_thread_user_time_consistent(&t->os);
  if (!vmt_os_caps()->thread_cpu_time) return -1;
  bool ok = false;
  int64_t ns = vmt_os_thread_user_time_consistent(&t->os, &ok);
  return ok ? ns : -1;
}

void vmt__mx_thread_user_and_cpu_ns(vmt_thread_t *t, int64_t *user, int64_t *cpu) {
  if (t == vmt__current || !vmt__mx_cpu_time_enabled() || !vmt_os_caps()->thread_cpu_time) {
    /* User time first: the consistent user time never exceeds a total read after it. */
    *user = vmt__mx_thread_user_ns(t);
    *cpu = vmt__mx_thread_cpu_ns(t);
    return;
  }
  bool ok = false;
  *user = vmt_os_thread_user_and_total_time(&t->os, cpu, &ok);
  if (!ok) *user = *cpu = -1;
}

/* Java's verifyThreadCpuTime: ids first, then support; only the calling thread may be asked
 * about when just current-thread CPU time is supported. */
static int check_cpu_query(const int64_t *ids, size_t count, const int64_t *out) {
  if (!ids || (!out && count) || vmt__mx_ids_invalid(ids, count)) return -EINVAL;
  if (!any_cpu_time_supported()) return -ENOTSUP;
  if (!vmt_mx_is_thread_cpu_time_supported()) {
    vmt_thread_t *self = vmt_thread_current();
    for (size_t i = 0; i < count; i++)
      if (!self || ids[i] != self->id) return -ENOTSUP;
  }
  return 0;
}

/* Ids resolved per chunk: the port records of 64 threads (512 bytes on the stack) are read in
 * one port call, at most 64 syscalls after their lookup (the port's exiting check covers a
 * thread that ends in between). */
#define SWEEP_CHUNK 64

static int cpu_time_sweep(const int64_t *ids, size_t count, int64_t *out) {
  const vmt__snapshot_t *snap = vmt__registry_acquire();
  if (!snap) return -ENOMEM;
  vmt_thread_t *self = vmt__current;
  const vmt_os_thread_t *ots[SWEEP_CHUNK];
  size_t hint = 0;
  for (size_t base = 0; base < count; base += SWEEP_CHUNK) {
    size_t m = count - base < SWEEP_CHUNK ? count - base : SWEEP_CHUNK;
    uint64_t own = 0;   /* bit k: ids[base + k] is the calling thread (its pid-0 clock) */
    for (size_t k = 0; k < m; k++) {
      vmt_thread_t *t = vmt__mx_lookup(snap, ids[base + k], &hint);
      vmt__mx_prefetch_ahead(snap, hint, VMT__MX_RECORD_TO_OS);
      if (t && t == self) {
        own |= (uint64_t)1 << k;
        t = NULL;
      }
      ots[k] = t ? &t->os : NULL;
    }
    /* The next chunk's records, when the ids come in the snapshot's order, warm up during
     * this chunk's syscalls. */
    size_t warm = hint < snap->count ? snap->count - hint : 0;
    vmt_os_threads_cpu_time(ots, m, out + base, (const void *const *)&snap->threads[hint],
                            warm < SWEEP_CHUNK ? warm : SWEEP_CHUNK);
    for (size_t k = 0; own; k++, own >>= 1)
      if (own & 1) out[base + k] = vmt_os_current_thread_cpu_time(false);
  }
  vmt__registry_release(snap);
  return 0;
}

static int time_array(const int64_t *ids, size_t count, int64_t *out, bool user) {
  int rc = check_cpu_query(ids, count, out);
  if (rc) return rc;
  bool enabled = vmt__mx_cpu_time_enabled();
  if (!user && enabled && vmt_os_caps()->thread_cpu_time)
    return cpu_time_sweep(ids, count, out);
  return vmt__mx_sweep(ids, count, out, enabled,
                       user ? vmt__mx_thread_user_ns : vmt__mx_thread_cpu_ns, NULL, NULL);
}

int vmt_mx_get_thread_cpu_time(int64_t id, int64_t *ns) {
  if (!ns) return -EINVAL;
  return time_array(&id, 1, ns, false);
}

int vmt_mx_get_thread_user_time(int64_t id, int64_t *ns) {
  if (!ns) return -EINVAL;
  return time_array(&id, 1, ns, true);
}

int vmt_mx_get_thread_cpu_time_array(const int64_t *ids, size_t count, int64_t *out) {
  return time_array(ids, count, out, false);
}

int vmt_mx_get_thread_user_time_array(const int64_t *ids, size_t count, int64_t *out) {
  return time_array(ids, count, out, true);
}
