/*
 * runtime/thread/access.c: the accessors of a thread record, the process-wide initialisation
 * (port probe, allocation counters) and the forking thread's fork handler.
 *
 * current() is one initial-exec TLS load of vmt__current (runtime/registry/record.c).
 */
#include <errno.h>
#include <string.h>

#include "runtime/thread/thread_impl.h"

vmt_thread_t *vmt_thread_current(void) { return vmt__current; }

const char *vmt_thread_state_name(vmt_thread_state_t state) {
  switch (state) {
    case VMT_THREAD_NEW: return "NEW";
    case VMT_THREAD_RUNNABLE: return "RUNNABLE";
    case VMT_THREAD_BLOCKED: return "BLOCKED";
    case VMT_THREAD_WAITING: return "WAITING";
    case VMT_THREAD_TIMED_WAITING: return "TIMED_WAITING";
    case VMT_THREAD_TERMINATED: return "TERMINATED";
    case VMT_THREAD_STATE_INVALID: break;
  }
  return "UNKNOWN";
}

int64_t vmt_thread_id(const vmt_thread_t *t) { return t ? t->id : -1; }
const char *vmt_thread_name(const vmt_thread_t *t) {
  return t ? atomic_load_explicit(&((vmt_thread_t *)t)->name, memory_order_acquire) : NULL;
}
const char *vmt_thread_os_name(const vmt_thread_t *t) { return t ? t->os_name : NULL; }
const char *vmt_thread_category(const vmt_thread_t *t) { return t ? t->category->name : NULL; }
bool vmt_thread_is_daemon(const vmt_thread_t *t) { return t ? t->daemon : false; }
int vmt_thread_priority(const vmt_thread_t *t) {
  return t ? atomic_load_explicit(&((vmt_thread_t *)t)->priority, memory_order_relaxed) : -1;
}

vmt_thread_state_t vmt_thread_state(const vmt_thread_t *t) {
  if (t == NULL) return VMT_THREAD_STATE_INVALID;
  return (vmt_thread_state_t)atomic_load_explicit(&((vmt_thread_t *)t)->state,
                                                  memory_order_acquire);
}

int vmt_thread_set_name(vmt_thread_t *t, const char *name) {
  if (t == NULL || name == NULL) return -EINVAL;
  size_t len = strnlen(name, VMT_THREAD_NAME_MAX + 1);
  if (len == 0 || len > VMT_THREAD_NAME_MAX || !vmt__utf8_valid(name, len)) return -EINVAL;
  if (!vmt__record_ref_if_live(t)) return -EINVAL;
  char os_name[VMT_THREAD_OS_NAME_MAX + 1];
  bool own_kernel_name = t == vmt__current && t->kind == VMT__KIND_STARTED;
  if (own_kernel_name) {
    vmt_os_native_name(name, os_name);
    own_kernel_name = vmt_os_set_native_name(os_name) == 0;
  }
  int rc = vmt__record_rename(t, name, len, own_kernel_name ? os_name : NULL);
  vmt__record_unref(t);
  return rc;
}

int vmt_thread_get_name(vmt_thread_t *t, char *buf, size_t len) {
  if (t == NULL || (buf == NULL && len > 0) || !vmt__record_ref_if_live(t)) return -EINVAL;
  size_t n = vmt__record_name_copy(t, buf, len);
  vmt__record_unref(t);
  return (int)n;
}

int vmt_thread_set_priority(vmt_thread_t *t, int priority) {
  if (t == NULL || priority < VMT_THREAD_MIN_PRIORITY || priority > VMT_THREAD_MAX_PRIORITY)
    return -EINVAL;
  if (!vmt__record_ref_if_live(t)) return -EINVAL;
  atomic_store_explicit(&t->priority, priority, memory_order_relaxed);
  vmt__record_unref(t);
  return 0;
}

/* ---- Timer slack ------------------------------------------------------------------------ */
static _Atomic int64_t default_timer_slack = VMT_THREAD_TIMER_SLACK_DEFAULT_NS;
VMT__PROCESS_STATE(timer_slack, .symbols = "default_timer_slack", .rule = VMT__FORK_KEEP,
                   .fork = "a setting: the child starts its threads with the same default");

int vmt_thread_set_default_timer_slack(int64_t ns) {
  if (ns < 0 || ns > VMT_THREAD_TIMER_SLACK_MAX_NS) return -EINVAL;
  atomic_store_explicit(&default_timer_slack, ns, memory_order_relaxed);
  return 0;
}

int64_t vmt_thread_default_timer_slack(void) {
  return atomic_load_explicit(&default_timer_slack, memory_order_relaxed);
}

int vmt_thread_set_timer_slack(int64_t ns) {
  if (ns < 0 || ns > VMT_THREAD_TIMER_SLACK_MAX_NS) return -EINVAL;
  return vmt_os_set_timer_slack(ns);
}

int64_t vmt_thread_timer_slack(void) { return vmt_os_timer_slack(); }

pid_t vmt_thread_tid(vmt_thread_t *t) {
  if (t == NULL || !vmt__handle_valid(t)) return -EINVAL;
  return vmt_os_thread_tid_wait(&t->os);
}

/* ---- Process-wide initialisation and fork ---------------------------------------------- */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* The forking thread survives as itself: its pthread_t stays valid in the child (it belongs to
 * the new generation the registry's handler has just started), and it gets the new process's
 * tid (the port's handler, of a higher rank, has already cleared its cached one). */
static void survivor_fork_child(void) {
  vmt_thread_t *self = vmt__current;
  if (self == NULL) return;
  self->fork_generation = atomic_load_explicit(&vmt__fork_generation, memory_order_relaxed);
  atomic_store_explicit(&self->os.tid, 0, memory_order_relaxed);
  vmt_os_thread_bind_self(&self->os);
}
VMT__PROCESS_STATE(runtime_init, .symbols = "init_once", .rule = VMT__FORK_KEEP,
                   .fork = "initialised stays initialised; the forking thread's record is "
                           "re-stamped with the child's generation and tid",
                   .rank = VMT__RANK_THREAD, .child = survivor_fork_child);

static void init(void) {
  vmt_os_init();
  /* Another copy of the runtime in this process (vmt_mx_get_other_runtime_count) can now tell
   * that this one has threads of its own. */
  vmt_os_copy_mark_in_use();
  /* Decide allocation-counter support here, in the thread that starts the first thread, while
   * nothing races it for memory (alloc.c). */
  vmt__alloc_supported();
}

void vmt__runtime_init(void) { pthread_once(&init_once, init); }
