/*
 * runtime/thread/hooks.c: the VM's thread start and exit hooks (JVMTI's ThreadStart and
 * ThreadEnd events), run on the thread itself: a started thread's start hooks once it is
 * current, in the registry, counted live and named, before its body; an attached thread's at
 * its first attach, once it is current; the exit hooks first in the exit path (exit.c), while
 * the thread is still current, listed and holds its locks, before its TLS destructors. Internal
 * threads run none.
 *
 * Hooks are process-wide state: a small table of slots changed under hooks_lock and read
 * without it. A thread that runs a slot's hook counts itself in the slot's `active` before it
 * loads the function, and removal clears the function before it waits for `active` to drain
 * (both seq_cst, Dekker's pattern): a call either sees the function cleared or is waited for,
 * so once remove returns the VM may free the hook's context. A call that never returns (a
 * start hook that ends its thread with vmt_thread_exit, or is cancelled) is counted out by the
 * thread's exit path (vmt__hooks_unwound), from the slots it was inside. A slot is handed out
 * again only
 * once nobody is inside it, so a call never pairs one hook's function with another's context.
 * With no hook registered a start or exit pays one relaxed load.
 */
#include <errno.h>
#include <sched.h>

#include "runtime/thread/thread_impl.h"

typedef struct hook {
  _Atomic bool used;
  _Atomic(vmt_thread_hook_fn) on_start;
  _Atomic(vmt_thread_hook_fn) on_exit;
  _Atomic(void *) ctx;
  _Atomic int active;      /* threads inside one of this slot's hooks */
} hook_t;

static pthread_mutex_t hooks_lock = PTHREAD_MUTEX_INITIALIZER;
static hook_t hooks[VMT_THREAD_HOOKS_MAX];
static _Atomic int hooks_used;
/* The slots the calling thread is inside (a bit each): remove from a hook is refused, and a
 * fork child keeps the forker's own calls counted. */
static _Thread_local unsigned inside_hooks;

/* Not held across fork (ThreadSanitizer tracks 64 locks per thread, and a fork holds dozens):
 * an add publishes `used` last and a remove clears the functions first, so a slot a vanished
 * thread left half changed is either whole or has no function left, which the child frees. */
static void hooks_fork_child(void) {
  pthread_mutex_init(&hooks_lock, NULL);
  int used = 0;
  for (int i = 0; i < VMT_THREAD_HOOKS_MAX; i++) {
    hook_t *h = &hooks[i];
    if (atomic_load_explicit(&h->on_start, memory_order_relaxed) == NULL &&
        atomic_load_explicit(&h->on_exit, memory_order_relaxed) == NULL)
      atomic_store_explicit(&h->used, false, memory_order_relaxed);
    used += atomic_load_explicit(&h->used, memory_order_relaxed);
    /* The threads inside hooks did not come along, except the forker itself. */
    atomic_store_explicit(&h->active, (inside_hooks >> i) & 1u ? 1 : 0, memory_order_relaxed);
  }
  atomic_store_explicit(&hooks_used, used, memory_order_relaxed);
}
VMT__PROCESS_STATE(thread_hooks, .symbols = "hooks_lock hooks hooks_used inside_hooks",
                   .rule = VMT__FORK_RESET,
                   .fork = "the hooks stay registered; the lock is re-initialised, a slot a "
                           "vanished remover left without functions is freed, the calls in "
                           "progress of vanished threads are forgotten, the forking thread's "
                           "own stay counted (inside_hooks)",
                   .rank = VMT__RANK_THREAD + 4, .child = hooks_fork_child);

int vmt_thread_hooks_add(vmt_thread_hook_fn on_start, vmt_thread_hook_fn on_exit, void *ctx) {
  if (on_start == NULL && on_exit == NULL) return -EINVAL;
  pthread_mutex_lock(&hooks_lock);
  int rc = -EAGAIN;
  for (int i = 0; i < VMT_THREAD_HOOKS_MAX; i++) {
    hook_t *h = &hooks[i];
    if (atomic_load(&h->used) || atomic_load(&h->active) != 0) continue;
    atomic_store(&h->ctx, ctx);
    atomic_store(&h->on_start, on_start);
    atomic_store(&h->on_exit, on_exit);
    atomic_store(&h->used, true);
    atomic_fetch_add(&hooks_used, 1);
    rc = 0;
    break;
  }
  pthread_mutex_unlock(&hooks_lock);
  return rc;
}

int vmt_thread_hooks_remove(vmt_thread_hook_fn on_start, vmt_thread_hook_fn on_exit, void *ctx) {
  if (inside_hooks != 0) return -EDEADLK;
  pthread_mutex_lock(&hooks_lock);
  hook_t *found = NULL;
  for (int i = 0; i < VMT_THREAD_HOOKS_MAX && found == NULL; i++) {
    hook_t *h = &hooks[i];
    if (atomic_load(&h->used) && atomic_load(&h->on_start) == on_start &&
        atomic_load(&h->on_exit) == on_exit && atomic_load(&h->ctx) == ctx)
      found = h;
  }
  if (found) {
    atomic_store(&found->on_start, NULL);
    atomic_store(&found->on_exit, NULL);
    atomic_store(&found->used, false);
    atomic_fetch_sub(&hooks_used, 1);
  }
  pthread_mutex_unlock(&hooks_lock);
  if (found == NULL) return -ENOENT;
  /* A hook is VM code and may block for long; yielding is all a remover can do meanwhile. */
  while (atomic_load(&found->active) != 0) sched_yield();
  return 0;
}

static void run_slot(int i, vmt_thread_t *t, bool start) {
  hook_t *h = &hooks[i];
  if (!atomic_load_explicit(&h->used, memory_order_relaxed)) return;
  atomic_fetch_add(&h->active, 1);
  vmt_thread_hook_fn fn = atomic_load(start ? &h->on_start : &h->on_exit);
  if (fn != NULL) {
    inside_hooks |= 1u << i;
    fn(t, atomic_load(&h->ctx));
    inside_hooks &= ~(1u << i);
  }
  atomic_fetch_sub_explicit(&h->active, 1, memory_order_release);
}

void vmt__hooks_run(vmt_thread_t *t, bool start) {
  if (t->kind == VMT__KIND_INTERNAL) return;
  if (atomic_load_explicit(&hooks_used, memory_order_relaxed) == 0) return;
  /* Start hooks in the order they were added, exit hooks in the reverse order (a later hook
   * may build on an earlier one's state, as with atexit). */
  if (start)
    for (int i = 0; i < VMT_THREAD_HOOKS_MAX; i++) run_slot(i, t, true);
  else
    for (int i = VMT_THREAD_HOOKS_MAX - 1; i >= 0; i--) run_slot(i, t, false);
}

void vmt__hooks_unwound(void) {
  unsigned inside = inside_hooks;
  inside_hooks = 0;
  for (int i = 0; i < VMT_THREAD_HOOKS_MAX; i++)
    if (inside & (1u << i)) atomic_fetch_sub_explicit(&hooks[i].active, 1, memory_order_release);
}
