/*
 * runtime/management/stack.c: the stack traces in ThreadInfo. The embedding VM knows its own frames
 * and registers a walker, which info.c calls inside a handshake with the thread (on that
 * thread at its poll, or here while it is held in a safe state); without one, the calling
 * thread reports its native frames (backtrace(3)) and other threads none: backtrace(3) walks
 * only the stack of the thread that calls it.
 *
 * The walker is read under a reader-writer lock held for a whole management call (one
 * vmt__mx_stacks_begin .. _end), so replacing it waits for calls in progress and the VM may
 * free the old walker's context once the setter returns. The walker fills a scratch buffer
 * that the call reuses for every thread; each thread's frames are then copied into one
 * allocation. A walk that a thread runs of itself, at its poll, runs on the call's stacks too
 * (vmt__mx_stacks_t: the walker pair, the buffer) without taking the lock: the calling thread
 * holds it and waits for the handshake's operation, and operations of one call run one at a
 * time, each ordered after the last by the handshake's queue lock and completion.
 *
 * Held monitors and frames: HotSpot finds the frame that locked each monitor by asking every
 * frame for its lock records (javaVFrame::locked_monitors). Here the walker may do the same
 * while it fills frames, with vmt_mx_frame_holds_monitor(frame, monitor); the reports of a
 * walk live in the current walk of the thread that runs the walker (a thread-local pointer,
 * set only during the walker call: the querying thread, or the walked one at its poll).
 * Nothing is recorded at monitor enter, so the uncontended path costs the same.
 *
 * fork: the lock cannot be held across fork (a call holds it while running the VM's code, which
 * may wait for anything, the forking thread included), so the child re-initialises it, and
 * takes it again for each call with stacks the forking thread itself is inside (a walker that
 * forks). A walker that forks while its thread runs it for another thread's call takes nothing
 * again: that call's thread, which held the lock, is not in the child. The walker and its
 * context are one pair in one of two slots, the setter fills the slot not in use and then
 * switches with one store, so a child forked in the middle of a replacement sees the old pair
 * or the new one, never half of each.
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
/* Calls with stacks the calling thread is inside, each holding the lock from
 * vmt__mx_stacks_begin to _end (a walker may query, and so walk, again). */
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
  /* The wait for the calls in progress is a safe region, as the runtime's other blocking
   * calls: such a call holds the lock while it handshakes thread after thread, and a replacer
   * in managed code, unable to poll, would cost it VMT_MX_WALK_TIMEOUT_NS and its stack. The
   * region is left after the lock is given back: a thread held there (a safepoint, a
   * suspension) holds no lock that a coordinator's dump would wait for. */
  vmt_thread_t *self = vmt__current;
  int saved = vmt__region_enter(self);
  pthread_rwlock_wrlock(&walker_lock);
  walker_pair_t *cur = atomic_load_explicit(&walker, memory_order_relaxed);
  walker_pair_t *next = cur == &walker_pairs[0] ? &walker_pairs[1] : &walker_pairs[0];
  next->fn = fn;
  next->ctx = ctx;
  atomic_store_explicit(&walker, next, memory_order_release);
  pthread_rwlock_unlock(&walker_lock);
  vmt__region_leave(self, saved, NULL);
}

void vmt__mx_frames_free(vmt_stack_frame_t *frames) { free(frames); }

/*
 * Copies n frames into one allocation: the array, then every string. A ThreadInfo of 20
 * frames was 41 allocations (the array, each frame's function and file) and as many frees;
 * one block is one of each, and a dump of 10,000 threads makes 10,000 instead of 410,000.
 * A NULL function becomes "??"; a NULL file stays NULL.
 */
static int pack_frames(const vmt_stack_frame_t *src, size_t n, vmt_stack_frame_t **frames,
                       size_t *count) {
  size_t bytes = (n ? n : 1) * sizeof(vmt_stack_frame_t);
  for (size_t i = 0; i < n; i++) {
    bytes += strlen(src[i].function ? src[i].function : "??") + 1;
    if (src[i].file) bytes += strlen(src[i].file) + 1;
  }
  vmt_stack_frame_t *out = vmt__mx_malloc(bytes);
  if (!out) return -ENOMEM;
  char *text = (char *)(out + (n ? n : 1));
  for (size_t i = 0; i < n; i++) {
    const char *fn = src[i].function ? src[i].function : "??";
    size_t len = strlen(fn) + 1;
    out[i].function = memcpy(text, fn, len);
    text += len;
    out[i].file = NULL;
    if (src[i].file) {
      len = strlen(src[i].file) + 1;
      out[i].file = memcpy(text, src[i].file, len);
      text += len;
    }
    out[i].line = src[i].line;
    out[i].pc = src[i].pc;
  }
  *frames = out;
  *count = n;
  return 0;
}

/* Asks the walker for t's frames in the call's scratch buffer, growing it while the walker
 * fills it (the larger buffer then serves the call's later threads too). */
static int walk_with(vmt__mx_stacks_t *s, vmt_thread_t *t, vmt_stack_frame_t **frames,
                     size_t *count, walk_reports_t *reports) {
  int32_t limit = s->max_depth < FRAMES_CAP ? s->max_depth : FRAMES_CAP;
  for (;;) {
    if (!s->buf) {
      if (!s->cap) s->cap = limit < WALK_FIRST_TRY ? limit : WALK_FIRST_TRY;
      s->buf = vmt__mx_calloc((size_t)s->cap, sizeof(*s->buf));
      if (!s->buf) return -ENOMEM;
    }
    /* Each call starts over: what an earlier, too small walk reported is stale. */
    reports->count = 0;
    reports->max = s->cap;
    reports->err = 0;
    walk_reports_t *outer = current_walk;
    current_walk = reports;
    int n = s->fn(t, s->buf, s->cap, s->ctx);
    current_walk = outer;
    if (n == s->cap && s->cap < limit) {
      /* The stack may be deeper than the buffer: ask again with room for more. */
      free(s->buf);
      s->buf = NULL;
      s->cap = s->cap > limit / 8 ? limit : s->cap * 8;
      continue;
    }
    /* A walker that fails (the thread left the VM's frames, say) leaves the trace empty: one
     * thread's missing trace must not fail a whole dump. It may have written frames before it
     * gave up, and no count says how many: the whole buffer is cleared (rare), or the next
     * thread's walk would find those fields set. */
    bool failed = n < 0;
    if (failed) n = 0;
    if (n > s->cap) n = s->cap;
    /* Reports about frames the walker did not return name no frame. */
    size_t kept = 0;
    for (size_t i = 0; i < reports->count; i++)
      if (reports->items[i].frame < n) reports->items[kept++] = reports->items[i];
    reports->count = kept;
    int rc = reports->err ? reports->err : pack_frames(s->buf, (size_t)n, frames, count);
    /* A walker may leave fields it does not know unset: they must read as zero for the next
     * thread too, as in a fresh buffer. Only the frames it counted are cleared (20 frames are
     * 640 bytes; the whole buffer, 2 KiB per thread). */
    memset(s->buf, 0, (size_t)(failed ? s->cap : n) * sizeof(*s->buf));
    return rc;
  }
}

#ifdef VMT_MX_HAVE_BACKTRACE
/* Splits one backtrace_symbols line, "module(function+0x1f) [0x55d0c0ffee00]", in place into
 * the frame's function ("??" when the symbol is not exported) and file (the module). */
static void parse_symbol(char *line, vmt_stack_frame_t *f) {
  char *open = strchr(line, '(');
  char *end = open ? strpbrk(open + 1, "+)") : NULL;
  size_t module_len = open ? (size_t)(open - line) : strcspn(line, " ");
  f->function = (char *)"??";
  if (open && end && end > open + 1) {
    *end = '\0';
    f->function = open + 1;
  }
  f->file = NULL;
  if (module_len) {
    line[module_len] = '\0';
    f->file = line;
  }
  f->line = -1;
}

static __attribute__((noinline)) int native_frames(int32_t max_depth, const void *caller_pc,
                                                   vmt_stack_frame_t **frames, size_t *count) {
  void *pcs[NATIVE_CAP + NATIVE_OWN_FRAMES];
  int32_t want = max_depth < NATIVE_CAP ? max_depth : NATIVE_CAP;
  /* backtrace(3) finds each frame's unwind tables through dl_iterate_phdr: a loader section
   * (runtime/os.h), so that a fork never leaves the loader's lock held in its child. */
  vmt_os_loader_enter(true);
  int n = backtrace(pcs, want + NATIVE_OWN_FRAMES);
  vmt_os_loader_exit();
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
  vmt_stack_frame_t parsed[NATIVE_CAP];
  for (int i = 0; i < n; i++) {
    parse_symbol(symbols[i], &parsed[i]);
    parsed[i].pc = (uintptr_t)pcs[start + i];
  }
  int rc = pack_frames(parsed, (size_t)n, frames, count);
  free(symbols);
  return rc;
}
#else
static int native_frames(int32_t max_depth, const void *caller_pc, vmt_stack_frame_t **frames,
                         size_t *count) {
  (void)max_depth, (void)caller_pc, (void)frames, (void)count;
  return 0;
}
#endif

void vmt__mx_stacks_begin(vmt__mx_stacks_t *s, int32_t max_depth, const void *caller_pc) {
  memset(s, 0, sizeof(*s));
  s->max_depth = max_depth;
  s->caller_pc = caller_pc;
  if (max_depth <= 0) return;
  s->cancel = vmt__mx_cancel_off();   /* the walker is the VM's code, held under the lock */
  pthread_rwlock_rdlock(&walker_lock);
  walks_in_progress++;
  s->locked = true;
  const walker_pair_t *w = atomic_load_explicit(&walker, memory_order_acquire);
  s->fn = w->fn;
  s->ctx = w->ctx;
}

void vmt__mx_stacks_end(vmt__mx_stacks_t *s) {
  if (s->locked) {
    walks_in_progress--;
    pthread_rwlock_unlock(&walker_lock);
    vmt__mx_cancel_restore(s->cancel);
  }
  free(s->buf);
  memset(s, 0, sizeof(*s));
}

int vmt__mx_capture_frames(vmt__mx_stacks_t *s, vmt_thread_t *t, vmt_stack_frame_t **frames,
                           size_t *count, vmt__mx_frame_lock_t **locks, size_t *lock_count) {
  *frames = NULL;
  *count = 0;
  if (locks) *locks = NULL;
  if (lock_count) *lock_count = 0;
  if (s->max_depth <= 0) return 0;
  int rc = 0;
  walk_reports_t reports = {0};
  if (s->fn)
    rc = walk_with(s, t, frames, count, &reports);
  else if (t == vmt_thread_current())
    rc = native_frames(s->max_depth, s->caller_pc, frames, count);
  if (rc == 0 && locks && lock_count && reports.count > 0) {
    *locks = reports.items;
    *lock_count = reports.count;
  } else {
    free(reports.items);
  }
  return rc;
}
