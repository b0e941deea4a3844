/*
 * runtime/management/stack.c: the stack traces in ThreadInfo. The embedding VM knows its own frames
 * and registers a walker; without one, the calling thread reports its native frames
 * (backtrace(3)) and other threads none, since reading another thread's native stack safely
 * would need to stop it (HotSpot does that at a safepoint; a C runtime has none).
 *
 * The walker is read under a reader-writer lock held across the call, so replacing it waits
 * for calls in progress and the VM may free the old walker's context once the setter returns.
 *
 * Held monitors and frames: HotSpot finds the frame that locked each monitor by asking every
 * frame for its lock records (javaVFrame::locked_monitors). Here the walker may do the same
 * while it fills frames, with vmt_mx_frame_holds_monitor(frame, monitor); the reports of a
 * walk live in the querying thread's current walk (a thread-local pointer, set only during the
 * walker call). Nothing is recorded at monitor enter, so the uncontended path costs the same.
 *
 * fork: the lock cannot be held across fork (a walk holds it while running the VM's code, which
 * may wait for anything, the forking thread included), so the child re-initialises it, and
 * takes it again for each walk the forking thread itself is inside (a walker that forks). The
 * walker and its context are one pair in one of two slots, the setter fills the slot not in
 * use and then switches with one store, so a child forked in the middle of a replacement sees
 * the old pair or the new one, never half of each.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#if defined(__has_include)
#if __has_include(<execinfo.h>)
#include <execinfo.h>
#define VMT_MX_HAVE_BACKTRACE 1
#endif
#endif

#include "runtime/management/management_impl.h"

/* Frames asked of a walker at first, and the most ever kept: deeper stacks are cut, as
 * HotSpot's MaxJavaStackTraceDepth cuts exception traces (default 1024; ours is larger because
 * a dump is where a deep recursion is looked for). */
#define WALK_FIRST_TRY 64
#define FRAMES_CAP 65536
/* Native frames: backtrace(3) walks with the unwinder, about 1 us per frame; beyond a few
 * hundred frames a dump only shows recursion. */
#define NATIVE_CAP 256
/* Frames of the runtime itself between the public call and backtrace(), with slack. */
#define NATIVE_OWN_FRAMES 16

typedef struct walker_pair {
  vmt_mx_stack_walker_fn fn;
  void *ctx;
} walker_pair_t;

static pthread_rwlock_t walker_lock = PTHREAD_RWLOCK_INITIALIZER;
static walker_pair_t walker_pairs[2];
static _Atomic(walker_pair_t *) walker = &walker_pairs[0];   /* under walker_lock */
/* Walks the calling thread is inside (a walker may query, and so walk, again). */
static _Thread_local int walks_in_progress __attribute__((tls_model("initial-exec")));

static void walker_fork_child(void) {
  pthread_rwlock_init(&walker_lock, NULL);
  for (int i = 0; i < walks_in_progress; i++) pthread_rwlock_rdlock(&walker_lock);
}
VMT__PROCESS_STATE(walker,
                   .symbols = "walker_lock walker_pairs walker walks_in_progress current_walk",
                   .rule = VMT__FORK_REINIT,
                   .fork = "the lock is re-initialised, held again for the forking thread's own "
                           "walks (whose reports go on); the VM's walker stays registered (its "
                           "code is the child's too)",
                   .rank = VMT__RANK_MANAGEMENT + 1, .child = walker_fork_child);

/* The reports of the walker call in progress on this thread. Not initial-exec: it is touched
 * once per walker call, and the model the library's hot variables need is no use here. */
typedef struct walk_reports {
  vmt__mx_frame_lock_t *items;
  size_t count, cap;
  int32_t max;      /* frames the walker was offered */
  int err;          /* the first allocation failure */
} walk_reports_t;
static _Thread_local walk_reports_t *current_walk;

int vmt_mx_frame_holds_monitor(int32_t frame, const vmt_monitor_t *monitor) {
  walk_reports_t *w = current_walk;
  if (w == NULL) return -EPERM;
  int32_t identity = vmt__monitor_identity(monitor);
  if (frame < 0 || frame >= w->max || identity == 0) return -EINVAL;
  if (w->count == w->cap) {
    size_t cap = w->cap ? 2 * w->cap : 8;
    vmt__mx_frame_lock_t *bigger =
        vmt__fault_hit(VMT__FAULT_ALLOC) ? NULL : realloc(w->items, cap * sizeof(*bigger));
    if (bigger == NULL) {
      if (w->err == 0) w->err = -ENOMEM;
      return -ENOMEM;
    }
    w->items = bigger;
    w->cap = cap;
  }
  w->items[w->count++] = (vmt__mx_frame_lock_t){.identity = identity, .frame = frame};
  return 0;
}

void vmt_mx_set_stack_walker(vmt_mx_stack_walker_fn fn, void *ctx) {
  pthread_rwlock_wrlock(&walker_lock);
  walker_pair_t *cur = atomic_load_explicit(&walker, memory_order_relaxed);
  walker_pair_t *next = cur == &walker_pairs[0] ? &walker_pairs[1] : &walker_pairs[0];
  next->fn = fn;
  next->ctx = ctx;
  atomic_store_explicit(&walker, next, memory_order_release);
  pthread_rwlock_unlock(&walker_lock);
}

void vmt__mx_frames_free(vmt_stack_frame_t *frames, size_t count) {
  if (!frames) return;
  for (size_t i = 0; i < count; i++) {
    free(frames[i].function);
    free(frames[i].file);
  }
  free(frames);
}

/* Copies the walker's frames (strings it owns) into frames the caller owns. */
static int copy_frames(const vmt_stack_frame_t *src, size_t n, vmt_stack_frame_t **frames,
                       size_t *count) {
  vmt_stack_frame_t *out = vmt__mx_calloc(n ? n : 1, sizeof(*out));
  if (!out) return -ENOMEM;
  for (size_t i = 0; i < n; i++) {
    const char *fn = src[i].function ? src[i].function : "??";
    out[i].function = vmt__mx_strdup(fn);
    out[i].file = src[i].file ? vmt__mx_strdup(src[i].file) : NULL;
    out[i].line = src[i].line;
    out[i].pc = src[i].pc;
    if (!out[i].function || (src[i].file && !out[i].file)) {
      vmt__mx_frames_free(out, i + 1);
      return -ENOMEM;
    }
  }
  *frames = out;
  *count = n;
  return 0;
}

static int walk_with(vmt_mx_stack_walker_fn fn, void *ctx, vmt_thread_t *t, int32_t max_depth,
                     vmt_stack_frame_t **frames, size_t *count, walk_reports_t *reports) {
  int32_t limit = max_depth < FRAMES_CAP ? max_depth : FRAMES_CAP;
  int32_t cap = limit < WALK_FIRST_TRY ? limit : WALK_FIRST_TRY;
  for (;;) {
    vmt_stack_frame_t *buf = vmt__mx_calloc((size_t)cap, sizeof(*buf));
    if (!buf) return -ENOMEM;
    /* Each call starts over: what an earlier, too small walk reported is stale. */
    reports->count = 0;
    reports->max = cap;
    reports->err = 0;
    walk_reports_t *outer = current_walk;
    current_walk = reports;
    int n = fn(t, buf, cap, ctx);
    current_walk = outer;
    if (n == cap && cap < limit) {
      /* The stack may be deeper than the buffer: ask again with room for more. */
      free(buf);
      cap = cap > limit / 8 ? limit : cap * 8;
      continue;
    }
    /* A walker that fails (the thread left the VM's frames, say) leaves the trace empty: one
     * thread's missing trace must not fail a whole dump. */
    if (n < 0) n = 0;
    if (n > cap) n = cap;
    /* Reports about frames the walker did not return name no frame. */
    size_t kept = 0;
    for (size_t i = 0; i < reports->count; i++)
      if (reports->items[i].frame < n) reports->items[kept++] = reports->items[i];
    reports->count = kept;
    int rc = reports->err ? reports->err : copy_frames(buf, (size_t)n, frames, count);
    free(buf);
    return rc;
  }
}

#ifdef VMT_MX_HAVE_BACKTRACE
/* Splits one backtrace_symbols line, "module(function+0x1f) [0x55d0c0ffee00]", into the
 * frame's function ("??" when the symbol is not exported) and file (the module). */
static int parse_symbol(const char *line, vmt_stack_frame_t *f) {
  const char *open = strchr(line, '(');
  const char *end = open ? strpbrk(open + 1, "+)") : NULL;
  size_t module_len = open ? (size_t)(open - line) : strcspn(line, " ");
  if (open && end && end > open + 1)
    f->function = vmt__mx_strndup(open + 1, (size_t)(end - open - 1));
  else
    f->function = vmt__mx_strdup("??");
  f->file = module_len ? vmt__mx_strndup(line, module_len) : NULL;
  f->line = -1;
  if (!f->function || (module_len && !f->file)) return -ENOMEM;
  return 0;
}

static __attribute__((noinline)) int native_frames(int32_t max_depth, const void *caller_pc,
                                                   vmt_stack_frame_t **frames, size_t *count) {
  void *pcs[NATIVE_CAP + NATIVE_OWN_FRAMES];
  int32_t want = max_depth < NATIVE_CAP ? max_depth : NATIVE_CAP;
  int n = backtrace(pcs, want + NATIVE_OWN_FRAMES);
  /* Skip the runtime's own frames: keep from the application's frame that called us. */
  int start = 0;
  for (int i = 0; i < n && i < NATIVE_OWN_FRAMES; i++)
    if (pcs[i] == caller_pc) {
      start = i;
      break;
    }
  n -= start;
  if (n > want) n = want;
  if (n <= 0) return 0;
  if (vmt__fault_hit(VMT__FAULT_ALLOC)) return -ENOMEM;
  char **symbols = backtrace_symbols(pcs + start, n);
  if (!symbols) return -ENOMEM;
  vmt_stack_frame_t *out = vmt__mx_calloc((size_t)n, sizeof(*out));
  int rc = out ? 0 : -ENOMEM;
  for (int i = 0; i < n && rc == 0; i++) {
    out[i].pc = (uintptr_t)pcs[start + i];
    rc = parse_symbol(symbols[i], &out[i]);
  }
  free(symbols);
  if (rc) {
    vmt__mx_frames_free(out, out ? (size_t)n : 0);
    return rc;
  }
  *frames = out;
  *count = (size_t)n;
  return 0;
}
#else
static int native_frames(int32_t max_depth, const void *caller_pc, vmt_stack_frame_t **frames,
                         size_t *count) {
  (void)max_depth, (void)caller_pc, (void)frames, (void)count;
  return 0;
}
#endif

int vmt__mx_capture_frames(vmt_thread_t *t, int32_t max_depth, const void *caller_pc,
                           vmt_stack_frame_t **frames, size_t *count, vmt__mx_frame_lock_t **locks,
                           size_t *lock_count) {
  *frames = NULL;
  *count = 0;
  if (locks) *locks = NULL;
  if (lock_count) *lock_count = 0;
  if (max_depth <= 0) return 0;
  int rc = 0;
  walk_reports_t reports = {0};
  int cancel = vmt__mx_cancel_off();   /* the walker is the VM's code, held under the lock */
  pthread_rwlock_rdlock(&walker_lock);
  walks_in_progress++;
  const walker_pair_t *w = atomic_load_explicit(&walker, memory_order_acquire);
  if (w->fn)
    rc = walk_with(w->fn, w->ctx, t, max_depth, frames, count, &reports);
  else if (t == vmt_thread_current())
    rc = native_frames(max_depth, caller_pc, frames, count);
  walks_in_progress--;
  pthread_rwlock_unlock(&walker_lock);
  vmt__mx_cancel_restore(cancel);
  if (rc == 0 && locks && lock_count && reports.count > 0) {
    *locks = reports.items;
    *lock_count = reports.count;
  } else {
    free(reports.items);
  }
  return rc;
}
