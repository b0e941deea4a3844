/*
 * runtime/process.c: runs the rows of runtime/process.h around fork(). The linker gathers every
 * row of every package into the section vmt_process_state and defines its bounds; one
 * pthread_atfork registration, made by a constructor when the library is loaded (before any
 * thread of the runtime exists, and whichever package is used first), runs their handlers.
 *
 * Ordering. glibc runs prepare handlers in the reverse order of their registration and the
 * others in order. The runtime allocates while holding locks that prepare takes (the monitor
 * pool grows under its lock, a category is created under the categories' lock), so the
 * allocator's locks are inner to ours and its prepare handler must run after ours: jemalloc
 * registers its handlers when it initialises, and allocating once before registering ours makes
 * sure it has (glibc's own malloc is locked by fork itself, after every prepare handler).
 */
#include "runtime/process.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

/* Defined by the linker; hidden, so the shared library binds them to its own section. */
extern const vmt__process_state_t __start_vmt_process_state[] __attribute__((visibility("hidden")));
extern const vmt__process_state_t __stop_vmt_process_state[] __attribute__((visibility("hidden")));

const vmt__process_state_t *vmt__process_states(size_t *count) {
  *count = (size_t)(__stop_vmt_process_state - __start_vmt_process_state);
  return __start_vmt_process_state;
}

enum phase { PREPARE, PARENT, CHILD };

static void (*handler(const vmt__process_state_t *s, enum phase p))(void) {
  return p == PREPARE ? s->prepare : p == PARENT ? s->parent : s->child;
}

/* Each handler once, by rank: ascending for prepare, descending after fork. No allocation and
 * no sorting buffer (the child may not allocate): one pass per rank over a few dozen rows. */
static void run(enum phase p) {
  bool ascending = p == PREPARE;
  bool have_last = false;
  int last = 0;
  for (;;) {
    const vmt__process_state_t *next = NULL;
    for (const vmt__process_state_t *s = __start_vmt_process_state; s < __stop_vmt_process_state;
         s++) {
      if (handler(s, p) == NULL) continue;
      if (have_last && (ascending ? s->rank <= last : s->rank >= last)) continue;
      if (next == NULL || (ascending ? s->rank < next->rank : s->rank > next->rank)) next = s;
    }
    if (next == NULL) return;
    handler(next, p)();
    last = next->rank;
    have_last = true;
  }
}

static void prepare(void) { run(PREPARE); }
static void parent(void) { run(PARENT); }
static void child(void) { run(CHILD); }

__attribute__((constructor)) static void install(void) {
  void *volatile first = malloc(1);   /* the allocator's handlers first (above); volatile: gcc
                                         would drop a malloc/free pair */
  free(first);
  /* Fails only with ENOMEM while the library loads; nothing could run then anyway. */
  (void)pthread_atfork(prepare, parent, child);
}
