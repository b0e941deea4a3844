/*
 * runtime/process.h: the one home of the runtime's process-wide state. Every lock, counter,
 * list, descriptor, switch and thread-local variable that a file of the library defines at file
 * scope has a row here, declared beside the variables it covers with VMT__PROCESS_STATE, naming
 * them and saying what fork() does to them (the fork rule). The rows of every package land in
 * one linker section, so this file, at the bottom of the layers, sees all of them without
 * depending on any package above it, and without any package having to register anything at run
 * time (docs/design.md, "fork"). One pthread_atfork registration, made when the library is
 * loaded, runs the rows' handlers in rank order around every fork.
 *
 * Completeness is checked, not hoped for: //test:process_state_internal_test lists the writable
 * symbols of every object file of the library (nm) and fails for one that no row names, and
 * for a row that names a symbol that no longer exists.
 *
 * Handlers. prepare runs in the forking thread before fork, in ascending rank; parent and child
 * run after it, in descending rank. A row of rank r may hold its locks across fork only if no
 * thread that holds them ever waits for state of a lower rank (or for a thread that does), so
 * that prepare never waits for a thread that waits for the forking thread: the ranks follow the
 * layers, top first, because upper layers call down while holding their locks. child runs in a
 * process whose only thread is the forking one, before fork returns there: it may do only what
 * is async-signal-safe (POSIX), in particular it neither allocates nor frees (under ASan and TSan
 * an allocator lock held by a vanished thread stays held; test/fork_linux_test.c).
 * Hidden; every layer, the port included, may use it.
 */
#ifndef VMT_RUNTIME_PROCESS_H
#define VMT_RUNTIME_PROCESS_H

#include <stddef.h>

/* What a fork child makes of a row's state. */
typedef enum vmt__fork_rule {
  VMT__FORK_KEEP = 0,   /* valid as inherited: settings, probe results, ids, interned names */
  VMT__FORK_HOLD,       /* a lock prepare takes and both sides release: never half-written */
  VMT__FORK_REINIT,     /* a lock or structure the child re-initialises (it cannot be held) */
  VMT__FORK_RESET,      /* brought back to what the forking thread alone accounts for */
  VMT__FORK_DROP,       /* given up in the child: closed, turned off (the child may set it up
                           again) */
} vmt__fork_rule_t;

/* Ranks: prepare ascending, parent and child descending. Unique among the rows with handlers
 * (the completeness test checks), so the order never depends on the link. */
enum {
  /* The profiler, beside management: nothing below waits for its lock, and the thread that
   * holds it may wait for the drainer, whose exit takes the registry's locks (ranks after it). */
  VMT__RANK_PROFILER = 0,
  VMT__RANK_MANAGEMENT = 100,
  VMT__RANK_THREAD = 200,
  VMT__RANK_SYNC = 300,
  VMT__RANK_VMSERVICES = 350,   /* between sync and the registry, as the package is */
  VMT__RANK_REGISTRY = 400,
  VMT__RANK_PORT = 500,
  VMT__RANK_FAULT = 600,
};

typedef struct vmt__process_state {
  const char *file;      /* the defining file, as __FILE__ gives it */
  const char *symbols;   /* the file-scope variables covered, space-separated, as nm names them
                            (a function-scope static: its name without gcc's ".N" suffix);
                            "" for a row whose state is fields of records or lock slots,
                            which .fork then names */
  vmt__fork_rule_t rule;
  const char *fork;      /* what the child has, and why that is right */
  int rank;              /* VMT__RANK_* + a small offset; 0 for a row without handlers */
  void (*prepare)(void);
  void (*parent)(void);
  void (*child)(void);
} vmt__process_state_t;

/* Declares a row (at file scope, beside its variables): VMT__PROCESS_STATE(tag, .symbols = ...,
 * .rule = ..., .fork = "...", [.rank, .prepare, .parent, .child]). aligned(8) is the struct's
 * own alignment, and being user-given it stops gcc from padding rows apart: the section is an
 * array. retain keeps rows through --gc-sections, in our links and a host's. */
#define VMT__PROCESS_STATE(tag, ...)                                                         \
  static const vmt__process_state_t vmt__process_state_##tag                                 \
      __attribute__((used, retain, section("vmt_process_state"), aligned(8))) = {            \
          .file = __FILE__, __VA_ARGS__}

/* All rows, in link order (tests). */
const vmt__process_state_t *vmt__process_states(size_t *count);

#endif /* VMT_RUNTIME_PROCESS_H */
