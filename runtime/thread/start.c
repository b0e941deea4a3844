/*
 * runtime/thread/start.c: starting a thread without a handshake (Apache Kudu change 8257).
 *
 * The parent allocates and registers the record, calls pthread_create, binds the port record
 * (the kernel wrote the child's tid before pthread_create returned, CLONE_PARENT_SETTID), counts
 * the thread and returns. It never waits for the child, and the child never waits for it: the
 * child publishes its tid itself only if it ran before its parent could (the path platforms
 * where the parent cannot know the tid rely on), installs itself as the current thread, names
 * itself and runs the body. Kudu measured 1000 starts at
 * 0.071 s with a two-way handshake and 0.027 s without, with 40% fewer context switches.
 *
 * Counting happens after pthread_create (under the registry's writer lock), so a failed start
 * changes no counter, not even the peak. The child counts itself before its body if it runs
 * before its parent got there (vmt__registry_count counts once): a thread is live for
 * management from its first instruction, as HotSpot's is (Threads::add precedes the thread's
 * start), so one that asks about itself at once is listed, and one that ends at once is in the
 * peak. (Counted by the parent alone, a child that ran first was unlisted until its parent
 * counted it: about 3 in 1000 threads here got a NULL ThreadInfo of themselves.)
 */
#include <errno.h>
#include <string.h>

#include "runtime/thread/thread_impl.h"

/* Cancellation, pthread_exit or return: one exit path (exit.c). */
static void on_exit_path(void *arg) { vmt__thread_finish(arg, false); }

static void *trampoline(void *arg) {
  vmt_thread_t *t = arg;
  vmt__current_set(t);
  vmt__self = t;
  /* The parent has usually published the tid already (it needs no help from us); publish it
   * here only if we ran first, which costs a gettid. */
  if (vmt_os_thread_tid(&t->os) == 0) vmt_os_thread_bind_self(&t->os);
  vmt__registry_count(t);   /* if the parent has not yet: live before the body runs */
  vmt__prof_thread_begin(t);
  vmt__alloc_thread_begin(t);
  pthread_cleanup_push(on_exit_path, t);
  /* Best effort, as in HotSpot: a thread runs fine under its inherited kernel name, and with
   * the timer slack it inherited. */
  vmt_os_set_native_name(t->os_name);
  if (t->cold->timer_slack_ns > 0) vmt_os_set_timer_slack(t->cold->timer_slack_ns);
  /* Likewise: without the zones it asked for (the map count or memory ran out), a thread runs
   * and its stack info shows none. */
  vmt__stack_guard_begin(t);
  vmt__hooks_run(t, true);
  t->cold->result = t->cold->fn(t->cold->arg);
  pthread_cleanup_pop(1);
  /* t may be recycled by now (its last reference went in the cleanup handler). */
  return NULL;
}

static int start(vmt_thread_t **out, const vmt__thread_opts_t *o, vmt__thread_kind_t kind,
                 vmt_thread_fn fn, void *arg) {
  vmt__runtime_init();
  vmt_thread_t *t = vmt__record_alloc();
  if (t == NULL) return -ENOMEM;
  int rc = vmt__record_init(t, o, kind);
  if (rc) return rc;
  /* The running thread's, the registry's, and the users' (one) references. */
  atomic_store_explicit(&t->refs, 3, memory_order_relaxed);
  atomic_store_explicit(&t->user_refs, 1, memory_order_relaxed);
  t->cold->fn = fn;
  t->cold->arg = arg;
  t->cold->guard = o->guard;   /* the child protects them before its body runs */
  t->cold->timer_slack_ns = o->timer_slack_set ? o->timer_slack_ns
                                               : vmt_thread_default_timer_slack();
  t->cold->result = PTHREAD_CANCELED;  /* unless the body returns or calls vmt_thread_exit */
  t->start_time_ns = vmt_os_java_time_nanos();
  atomic_store_explicit(&t->state, VMT_THREAD_RUNNABLE, memory_order_relaxed);

  pthread_attr_t attr;
  rc = -pthread_attr_init(&attr);
  if (rc) {
    atomic_store_explicit(&t->refs, 1, memory_order_relaxed);
    vmt__record_unref(t);
    return rc;
  }
  /* The size is already clamped to what glibc accepts (options.c). */
  if (o->stack_size) rc = -pthread_attr_setstacksize(&attr, o->stack_size);
  if (rc == 0) rc = vmt__registry_insert(t);
  if (rc) {
    pthread_attr_destroy(&attr);
    atomic_store_explicit(&t->refs, 1, memory_order_relaxed);
    vmt__record_unref(t);
    return rc;
  }
  /* Before it can run: a suspend-all in effect counts it in, so it begins suspended. */
  if (kind != VMT__KIND_INTERNAL) vmt__vms_thread_registered(t);
  rc = vmt__fault_hit(VMT__FAULT_PTHREAD_CREATE);
  if (rc == 0) rc = -pthread_create(&t->pthread, &attr, trampoline, t);
  pthread_attr_destroy(&attr);
  if (rc) {
    vmt__vms_thread_start_failed(t);
    /* Readers may have seen the record: it leaves like an exiting thread, its registry
     * reference dropped once no snapshot holding it is protected. */
    vmt__thread_set_terminated(t);
    vmt__registry_remove(t, false);
    atomic_store_explicit(&t->done, 1, memory_order_release);
    atomic_store_explicit(&t->user_refs, 0, memory_order_relaxed);
    vmt__record_unref(t);  /* the users' */
    vmt__record_unref(t);  /* the thread that never ran */
    return rc;
  }
  /* Under the cold lock: another thread may ask the stack bounds of this record (stack.c) as
   * soon as the child published its tid (the profiler arms it then), before this line. */
  pthread_mutex_lock(&t->cold->lock);
  t->owns_pthread = true;
  pthread_mutex_unlock(&t->cold->lock);
  /* The tid, now (no wait). If the child already ended, glibc reports ESRCH and the child has
   * published the tid itself. */
  vmt_os_thread_bind(&t->os, t->pthread);
  vmt__registry_count(t);
  *out = t;
  return 0;
}

int vmt_thread_start_ex(vmt_thread_t **out, const vmt_thread_options_t *options,
                        vmt_thread_fn fn, void *arg) {
  if (out == NULL) return -EINVAL;
  *out = NULL;
  if (fn == NULL) return -EINVAL;
  vmt__thread_opts_t o;
  int rc = vmt__options_resolve(options, &o);
  if (rc) return rc;
  return start(out, &o, VMT__KIND_STARTED, fn, arg);
}

int vmt_thread_start(vmt_thread_t **out, vmt_thread_fn fn, void *arg) {
  return vmt_thread_start_ex(out, NULL, fn, arg);
}

int vmt__thread_start_internal(vmt_thread_t **out, const char *name, vmt_thread_fn fn,
                               void *arg) {
  if (out == NULL) return -EINVAL;
  *out = NULL;
  if (fn == NULL) return -EINVAL;
  vmt_thread_options_t opts = {.flags = name ? VMT_THREAD_OPT_NAME : 0u, .name = name};
  vmt__thread_opts_t o;
  int rc = vmt__options_resolve(&opts, &o);
  if (rc) return rc;
  o.daemon = true;
  return start(out, &o, VMT__KIND_INTERNAL, fn, arg);
}
