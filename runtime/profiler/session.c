/*
 * runtime/profiler/session.c: starting and stopping the profiler, its figures, the VM's
 * walker, and its fork rule.
 *
 * Start: options validated; the previous profile freed; the configuration fixed and published
 * to the handler; the handler installed (or -EBUSY); the drainer started (the first time) or
 * woken; the life-cycle hooks installed (once per process); vmt__prof_arming set; then every
 * live thread of the registry armed (arm.c), by this thread from the registry's first thread
 * and by the drainer from its last. Threads that start meanwhile arm themselves.
 *
 * Stop, in this order: arming off (no new timer; a thread starting now arms nothing); every
 * armed thread disarmed (its timer deleted, its clock read, its slot pointer cleared); the
 * handler's configuration withdrawn; vmt__prof_in_handler drained to zero, so no handler
 * holds a slot; the signal's disposition restored (pending signals discarded); the drainer
 * parked and every slot drained and freed. Nothing of the profiler is touched by a handler
 * after that.
 *
 * Fork (docs/design.md, "fork"; rows in runtime/process.h): timers are not inherited (POSIX),
 * the drainer is not there, and the slots belong to threads that do not exist in the child.
 * The child is not profiled unless it asks: the child handler resets the state to "not
 * running", sets the parent's profile aside for good (memory the fork copied, never freed),
 * and clears the forking thread's arming (not its exclusion, which is the thread's). The
 * disposition stays ours in the child: harmless without timers, and the next start keeps it.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/profiler/profiler_impl.h"

vmt__prof_state_t vmt__prof = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int resolve(const vmt_prof_options_t *o, vmt__prof_config_t *cfg) {
  memset(cfg, 0, sizeof(*cfg));
  cfg->period_ns = VMT_PROF_PERIOD_DEFAULT_NS;
  cfg->max_depth = VMT_PROF_MAX_DEPTH_DEFAULT;
  uint32_t bytes = VMT_PROF_BUFFER_DEFAULT;
  cfg->signo = vmt__prof_default_signal();
  cfg->mode = VMT_PROF_MODE_SIGNAL;
  if (o) {
    const uint32_t known = VMT_PROF_OPT_PERIOD | VMT_PROF_OPT_MAX_DEPTH | VMT_PROF_OPT_BUFFER |
                           VMT_PROF_OPT_SIGNAL | VMT_PROF_OPT_MODE;
    if (o->flags & ~known) return -EINVAL;
    if (o->flags & VMT_PROF_OPT_PERIOD) {
      if (o->period_ns < VMT_PROF_PERIOD_MIN_NS || o->period_ns > VMT_PROF_PERIOD_MAX_NS)
        return -EINVAL;
      cfg->period_ns = o->period_ns;
    }
    if (o->flags & VMT_PROF_OPT_MAX_DEPTH) {
      if (o->max_depth < 1 || o->max_depth > VMT_PROF_MAX_DEPTH_LIMIT) return -EINVAL;
      cfg->max_depth = o->max_depth;
    }
    if (o->flags & VMT_PROF_OPT_BUFFER) {
      if (o->buffer_bytes < VMT_PROF_BUFFER_MIN || o->buffer_bytes > VMT_PROF_BUFFER_MAX)
        return -EINVAL;
      bytes = o->buffer_bytes;
    }
    if (o->flags & VMT_PROF_OPT_SIGNAL) {
      if (!vmt__prof_signal_usable(o->signal)) return -EINVAL;
      cfg->signo = o->signal;
    }
    if (o->flags & VMT_PROF_OPT_MODE) {
      if (o->mode != VMT_PROF_MODE_SIGNAL && o->mode != VMT_PROF_MODE_COOPERATIVE)
        return -EINVAL;
      cfg->mode = o->mode;
    }
  }
  uint32_t words = 1;
  while (words * sizeof(uint64_t) < bytes) words <<= 1;
  /* Room for two samples of the deepest stack at least, so that one always fits. */
  while (words < 2 * (1 + (uint32_t)cfg->max_depth)) words <<= 1;
  cfg->buffer_words = words;
  return 0;
}

static void free_profiles(void) {
  vmt__prof_profile_free(vmt__prof.profile);
  vmt__prof.profile = NULL;
}

static void reset_counters(void) {
  atomic_store(&vmt__prof.threads_ever, 0);
  atomic_store(&vmt__prof.arm_failures, 0);
  atomic_store(&vmt__prof.threads_armed, 0);
  for (int c = 0; c < VMT_PROF_LOST_COUNT; c++) {
    atomic_store(&vmt__prof.lost_unattributed[c], 0);
    atomic_store(&vmt__prof.lost_unattributed_weight[c], 0);
  }
  vmt__prof.threads_at_start = 0;
  vmt__prof.threads_helped = 0;
  vmt__prof.start_arm_ns = 0;
}

static void install_hooks(void) {
  if (atomic_load_explicit(&vmt__prof_poll_hook, memory_order_relaxed)) return;
  atomic_store_explicit(&vmt__prof_begin_hook, vmt__prof_thread_begin_hook, memory_order_release);
  atomic_store_explicit(&vmt__prof_end_hook, vmt__prof_thread_end_hook, memory_order_release);
  atomic_store_explicit(&vmt__prof_poll_hook, vmt__prof_coop_poll, memory_order_release);
}

int vmt_prof_start(const vmt_prof_options_t *options) {
  vmt__prof_config_t cfg;
  int rc = resolve(options, &cfg);
  if (rc) return rc;
  if (!vmt_os_caps()->thread_cpu_time) return -ENOTSUP;
  pthread_mutex_lock(&vmt__prof.lock);
  if (vmt__prof.running) {
    pthread_mutex_unlock(&vmt__prof.lock);
    return -EALREADY;
  }
  const struct vmt__prof_walker *w = &vmt__prof.walkers[atomic_load(&vmt__prof.walker_index)];
  cfg.walker = w->walker;
  cfg.symbolizer = w->symbolizer;
  cfg.walker_ctx = w->ctx;
  free_profiles();
  reset_counters();
  atomic_fetch_add(&vmt__prof.session, 1);   /* before any thread is armed */
  vmt__prof_profile_t *profile = vmt__prof_profile_new(&cfg);
  if (profile == NULL) {
    pthread_mutex_unlock(&vmt__prof.lock);
    return -ENOMEM;
  }
  /* The unwinder's first walk, outside any handler (os_linux/unwind.c). */
  (void)vmt_os_native_unwind_init();
  profile->unwinder = cfg.walker ? "vm walker" : vmt_os_native_unwinder();
  rc = vmt__prof_handler_install(cfg.signo);
  if (rc) {
    vmt__prof_profile_free(profile);
    pthread_mutex_unlock(&vmt__prof.lock);
    return rc;
  }
  vmt__prof.cfg = cfg;
  vmt__prof.profile = profile;
  atomic_store(&vmt__prof.stopping, false);
  rc = vmt__prof_drainer_start();
  if (rc) {
    vmt__prof_handler_uninstall();
    vmt__prof.profile = NULL;
    vmt__prof_profile_free(profile);
    pthread_mutex_unlock(&vmt__prof.lock);
    return rc;
  }
  install_hooks();
  atomic_store_explicit(&vmt__prof_handler_cfg, &vmt__prof.cfg, memory_order_seq_cst);
  vmt__prof.running = true;
  int64_t t0 = vmt_os_java_time_nanos();
  atomic_store_explicit(&vmt__prof_arming, true, memory_order_seq_cst);
  /* Two armers, one from each end of the registry: three system calls a thread (timer_create,
   * timer_settime, a clock read), which a second CPU halves. */
  vmt__prof.threads_helped = 0;
  atomic_store_explicit(&vmt__prof.helping, 1, memory_order_seq_cst);
  vmt__prof_wake_drainer();
  int32_t armed = vmt__prof_arm_all(false);
  uint32_t h;
  while ((h = atomic_load_explicit(&vmt__prof.helping, memory_order_seq_cst)) != 0)
    vmt_os_futex_wait(&vmt__prof.helping, h, VMT_OS_NO_DEADLINE);
  vmt__prof.threads_at_start = armed + vmt__prof.threads_helped;
  vmt__prof.start_arm_ns = vmt_os_java_time_nanos() - t0;
  /* A thread the walk found unbound arms itself, or the drainer's one rescan arms it. */
  atomic_store(&vmt__prof.rescan, true);
  vmt__prof_wake_drainer();
  pthread_mutex_unlock(&vmt__prof.lock);
  return 0;
}

/* Disarms every thread still armed; the slots go to *disarmed. A thread that was arming itself
 * when arming stopped is in the snapshot (it was inserted before it ran): disarm waits for its
 * BUSY and takes the timer back. A thread that ends meanwhile disarms itself, just after it
 * left the registry (runtime/thread/exit.c): a snapshot may no longer hold it, so the count
 * is checked after the walk, and the walk repeated until it is zero. */
static void disarm_all(vmt__prof_slot_t **disarmed) {
  for (;;) {
    const vmt__snapshot_t *snap = vmt__registry_acquire();
    if (snap) {
      for (size_t i = 0; i < snap->count; i++)
        vmt__prof_disarm(snap->threads[i], false, false, disarmed);
      vmt__registry_release(snap);
    }
    if (atomic_load_explicit(&vmt__prof.threads_armed, memory_order_seq_cst) <= 0) return;
    sched_yield();
  }
}

int vmt_prof_stop(void) {
  pthread_mutex_lock(&vmt__prof.lock);
  if (!vmt__prof.running) {
    pthread_mutex_unlock(&vmt__prof.lock);
    return 0;
  }
  atomic_store_explicit(&vmt__prof_arming, false, memory_order_seq_cst);
  vmt__prof_slot_t *disarmed = vmt__prof.excluded_slots;
  vmt__prof.excluded_slots = NULL;
  disarm_all(&disarmed);
  atomic_store_explicit(&vmt__prof_handler_cfg, NULL, memory_order_seq_cst);
  while (atomic_load_explicit(&vmt__prof_in_handler, memory_order_seq_cst) != 0) sched_yield();
  vmt_os_native_unwind_quiesce();   /* no handler holds a replaced table of objects now */
  vmt__prof_handler_uninstall();
  vmt__prof_drainer_stop(disarmed);
  vmt__prof.running = false;
  pthread_mutex_unlock(&vmt__prof.lock);
  return 0;
}

bool vmt_prof_is_running(void) {
  pthread_mutex_lock(&vmt__prof.lock);
  bool running = vmt__prof.running;
  pthread_mutex_unlock(&vmt__prof.lock);
  return running;
}

int vmt_prof_clear(void) {
  pthread_mutex_lock(&vmt__prof.lock);
  int rc = vmt__prof.running ? -EBUSY : 0;
  if (rc == 0) free_profiles();
  pthread_mutex_unlock(&vmt__prof.lock);
  return rc;
}

int vmt_prof_set_walker(vmt_prof_walker_fn walker, vmt_prof_symbolizer_fn symbolizer, void *ctx) {
  pthread_mutex_lock(&vmt__prof.lock);
  int rc = vmt__prof.running ? -EBUSY : 0;
  if (rc == 0) {
    int next = 1 - atomic_load(&vmt__prof.walker_index);
    vmt__prof.walkers[next] = (struct vmt__prof_walker){
        .walker = walker, .symbolizer = walker ? symbolizer : NULL, .ctx = walker ? ctx : NULL};
    atomic_store(&vmt__prof.walker_index, next);
  }
  pthread_mutex_unlock(&vmt__prof.lock);
  return rc;
}

/* Arms t before returning. Another party may hold t's claim (BUSY) having read the mark before
 * it was cleared: t's own start hook, or the drainer's rescan after a start. That party gives t
 * back unarmed, and nobody would arm it for the rest of the session: so this waits for the
 * claim to go (a few us: two system calls at most) and tries again. A failure counts in
 * arm_failures, as at a start. */
static void arm_now(vmt_thread_t *t) {
  /* An ancestor's record (fork) may carry a BUSY of a party that is not here (arm.c). */
  if (!vmt__thread_of_this_process(t)) return;
  /* Until this call armed t, declined it, failed, or finds it armed. A claim seen here that
   * is let go before the state is read again (IDLE then) is tried again at once: stopping at
   * IDLE left a put-back thread unarmed for the rest of the session (a TSan CI run). */
  while (vmt__prof_arm(t) == VMT__PROF_ARM_CLAIMED) {
    (void)vmt__fault_hit(VMT__FAULT_PROF_ARM_CLAIMED);   /* a hook point only */
    uint32_t s = atomic_load_explicit(&t->prof.state, memory_order_seq_cst);
    if (s == VMT__PROF_ARMED) break;
    if (s == VMT__PROF_BUSY) sched_yield();
  }
}

int vmt_prof_set_thread_excluded(vmt_thread_t *t, bool excluded) {
  if (t == NULL || !vmt__handle_valid(t)) return -EINVAL;
  pthread_mutex_lock(&vmt__prof.lock);
  /* Before the arming state is read (seq_cst both): an armer that claimed t before this store
   * is waited for (its BUSY) and undone; one that claims after it sees the mark. */
  atomic_store_explicit(&t->prof.excluded, excluded, memory_order_seq_cst);
  if (vmt__prof.running) {
    /* A thread excluding itself holds no handler (one that interrupted it has returned): its
     * slot goes to the drainer as an ending thread's does. Another thread's handler may still
     * be in its slot on the other CPU: the stop frees that one. */
    bool self = t == vmt__current;
    if (excluded)
      vmt__prof_disarm(t, self, false, self ? NULL : &vmt__prof.excluded_slots);
    else
      arm_now(t);
  }
  pthread_mutex_unlock(&vmt__prof.lock);
  return 0;
}

const char *vmt_prof_lost_cause_name(vmt_prof_lost_cause_t cause) {
  switch (cause) {
    case VMT_PROF_LOST_BUFFER_FULL: return "buffer_full";
    case VMT_PROF_LOST_UNSAFE: return "unsafe";
    case VMT_PROF_LOST_WALK_FAILED: return "walk_failed";
    case VMT_PROF_LOST_DISARMED: return "disarmed";
    case VMT_PROF_LOST_COUNT: break;
  }
  return NULL;
}

int vmt_prof_get_stats(vmt_prof_stats_t *out) {
  if (out == NULL) return -EINVAL;
  memset(out, 0, sizeof(*out));
  vmt__prof_profile_t *p;
  int rc = vmt__prof_output_begin(&p);
  if (rc == -ENOENT) {
    out->unwinder = vmt_os_native_unwinder();
    return 0;   /* no profile: all zero */
  }
  if (rc) return rc;
  out->running = vmt__prof.running;
  out->mode = p->cfg.mode;
  out->period_ns = p->cfg.period_ns;
  out->max_depth = p->cfg.max_depth;
  out->signal = p->cfg.signo;
  out->samples = p->samples;
  out->weight = p->weight;
  for (int c = 0; c < VMT_PROF_LOST_COUNT; c++) {
    out->lost_samples[c] = p->lost[c];
    out->lost_weight[c] = p->lost_weight[c];
  }
  out->threads = atomic_load(&vmt__prof.threads_ever);
  out->threads_armed = atomic_load(&vmt__prof.threads_armed);
  out->arm_failures = atomic_load(&vmt__prof.arm_failures);
  out->threads_at_start = vmt__prof.threads_at_start;
  out->start_arm_ns = vmt__prof.start_arm_ns;
  out->stacks = (int64_t)p->stack_count;
  out->unsignalled = p->unsignalled;
  out->handler_ns = p->handler_ns;
  out->drainer_cpu_ns = p->drainer_cpu_ns;
  for (vmt__prof_thread_t *th = p->threads; th; th = th->next) out->cpu_ns += th->cpu_ns;
  out->unwinder = p->unwinder;
  vmt__prof_output_end(p);
  return 0;
}

int vmt_prof_get_thread_stats(int64_t id, vmt_prof_thread_stats_t *out) {
  if (out == NULL || id <= 0) return -EINVAL;
  memset(out, 0, sizeof(*out));
  vmt__prof_profile_t *p;
  int rc = vmt__prof_output_begin(&p);
  if (rc == -ENOENT) return -ENOENT;
  if (rc) return rc;
  vmt__prof_thread_t *th = vmt__prof_profile_find_thread(p, id);
  if (th == NULL) {
    rc = -ENOENT;
  } else {
    out->id = th->id;
    out->name = th->name;
    out->category = th->category;
    out->samples = th->samples;
    out->weight = th->weight;
    for (int c = 0; c < VMT_PROF_LOST_COUNT; c++) {
      out->lost_samples[c] = th->lost[c];
      out->lost_weight[c] = th->lost_weight[c];
    }
    out->cpu_ns = th->cpu_unknown ? -1 : th->cpu_ns;
    out->unsignalled = th->unsignalled;
    out->ended = th->ended;
  }
  vmt__prof_output_end(p);
  return rc;
}

/* ---- Fork ------------------------------------------------------------------------------- */
/* No lock is held across fork: ThreadSanitizer's deadlock detector allows a thread 64 locks at
 * once, which the other atfork handlers (jemalloc's arenas, the runtime's) come to; with this
 * one and the control's held too, fork_calls_linux_test failed under TSan
 * ("n_all_locks_ < 64", in jemalloc's prepare). So the child handler assumes nothing a start,
 * stop or clear of a vanished thread may have left half done: the lock is re-initialised, the
 * profile set aside for good (never freed: it may be one a start was freeing), everything else
 * reset; the walker is published whole (walker_index). */
static void fork_child(void) {
  vmt_thread_t *survivor = vmt__current;
  /* Only async-signal-safe work: no free (the parent's memory is kept aside instead). */
  pthread_mutex_init(&vmt__prof.lock, NULL);
  atomic_store(&vmt__prof_arming, false);
  atomic_store(&vmt__prof_handler_cfg, NULL);
  atomic_store(&vmt__prof_in_handler, 0);
  /* The parent's profile: its slots belong to threads that are not here, its timers do not
   * exist here, the drainer may have held its lock, a start may have been freeing it. It is
   * forgotten, never freed (memory the fork copied; the pointer keeps it reachable for leak
   * checkers). */
  vmt__prof.inherited = vmt__prof.profile;
  vmt__prof.profile = NULL;
  vmt__prof.running = false;
  atomic_store(&vmt__prof.ready, NULL);
  atomic_store(&vmt__prof.retired, NULL);
  atomic_store(&vmt__prof.retired_count, 0);
  vmt__prof.excluded_slots = NULL;   /* set aside with the profile */
  atomic_store(&vmt__prof.wake, 0);
  atomic_store(&vmt__prof.helping, 0);
  atomic_store(&vmt__prof.drainer_active, 0);
  vmt__prof.drainer = NULL;   /* a vanished thread's record: its reference is left */
  reset_counters();
  if (survivor) {
    atomic_store(&survivor->prof.slot, NULL);
    atomic_store(&survivor->prof.state, VMT__PROF_IDLE);
  }
}

VMT__PROCESS_STATE(profiler,
                   .symbols = "vmt__prof", .rule = VMT__FORK_DROP,
                   .fork = "not running in the child: no timer is inherited (POSIX) and the "
                           "drainer is not there; the lock re-initialised, the parent's profile "
                           "set aside and never freed, the forking thread disarmed (its "
                           "exclusion kept); the walker kept; the child may start its own",
                   .rank = VMT__RANK_PROFILER + 10, .child = fork_child);
