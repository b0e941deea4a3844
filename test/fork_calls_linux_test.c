/*
 * test/fork_calls_linux_test.c: fork() while other threads are inside each public call. One row
 * per function the headers export (VMT_EXPORT): its workers call it in a loop, runtime threads
 * or foreign ones as the call needs, contending with each other where the call can block, while
 * the attached main thread forks again and again; each child then checks that the runtime it
 * inherited is whole and usable (the fork contract, docs/design.md "fork"). A function without
 * a row fails the test (test/public_functions.txt lists the headers' exports at build time), so
 * a new public call cannot be forgotten: add its row to `rows` below.
 *
 * The child reports where it is in a page shared with the parent; the parent kills a child
 * that hangs and names the row, the check and its line. Public API only.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "test/reliability.h"
#include "vmthread.h"

/* As in test/fork_linux_test.c: under ASan and TSan an allocator lock a vanished thread held
 * stays held in the child, and TSan's runtime refuses threads in a multi-threaded process's fork
 * child, so there the child checks only what allocates nothing. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define CHILD_MAY_ALLOCATE 0
#define DEFAULT_FORKS 3
#else
#define CHILD_MAY_ALLOCATE 1
#define DEFAULT_FORKS 10
#endif

/* ---- What every row shares -------------------------------------------------------------- */
static vmt_thread_t *me;        /* the forking thread, attached */
static vmt_thread_t *peer;      /* a runtime thread parked for the whole test */
static vmt_monitor_t *mon;      /* what the rows' workers enter, wait on, notify */
static vmt_sync_t *sync1;
static FILE *devnull;
static _Atomic bool stop_peer;
static _Atomic bool stop_workers;

/* SIGQUIT: the disposition the test installs before the dump is enabled (the dump must give it
 * back), and the dump's pipe in the parent, found by its descriptors' inodes. */
static _Atomic int quits_seen;
static void count_quit(int sig) {
  (void)sig;
  atomic_fetch_add(&quits_seen, 1);
}
enum { MAX_PIPES = 8 };
static int dump_pipe_fd[MAX_PIPES];
static ino_t dump_pipe_ino[MAX_PIPES];
static int dump_pipe_count;

typedef struct row {
  const char *fn;                 /* the public function (or, not vmt_*, a place) covered */
  void (*call)(int worker);       /* one call; each worker loops on it */
  int workers;                    /* threads looping (default 1) */
  bool foreign;                   /* workers are plain pthreads (attach, detach) */
  void (*setup)(void);            /* in the parent, around the row */
  void (*teardown)(void);
  int fork_weight;                /* forks = weight x VMT_FORKS_PER_CALL (default 1) */
} row_t;

/* ---- The child ---------------------------------------------------------------------------- */
typedef struct stage {
  _Atomic int line;
  char what[256];
} stage_t;
static stage_t *stage;   /* MAP_SHARED: the parent reads it after a child hung or failed */

static void stage_set(int line, const char *what) {
  atomic_store(&stage->line, line);
  size_t n = strlen(what);
  if (n >= sizeof(stage->what)) n = sizeof(stage->what) - 1;
  memcpy(stage->what, what, n);   /* no snprintf: the child must not allocate */
  stage->what[n] = '\0';
}

#define CHECK(cond)                                 \
  do {                                              \
    stage_set(__LINE__, #cond);                     \
    if (!(cond)) _exit(1);                          \
  } while (0)
/* A call that answers nothing to check, but must return. */
#define DO(call)                                    \
  do {                                              \
    stage_set(__LINE__, #call);                     \
    call;                                           \
  } while (0)

#if CHILD_MAY_ALLOCATE
static void *child_thread(void *arg) {
  vmt_monitor_t *m = arg;
  vmt_monitor_enter(m);
  vmt_monitor_notify_all(m);
  vmt_monitor_exit(m);
  return m;
}
#endif

static int slow_walker(vmt_thread_t *t, vmt_stack_frame_t *frames, int32_t max, void *ctx);
static void row_hook(vmt_thread_t *t, void *ctx);

/* A handshake operation: counts its calls. */
static _Atomic long ops_run;
static void count_op(vmt_thread_t *t, void *arg) {
  (void)t, (void)arg;
  atomic_fetch_add_explicit(&ops_run, 1, memory_order_relaxed);
}

/* What the child of any row must find and be able to do. */
static void child_checks(void) {
  alarm(20);   /* a hang ends the child (SIGALRM), or the parent kills it */
  CHECK(vmt_thread_current() == me);
  CHECK(vmt_thread_tid(me) == getpid());
  CHECK(vmt_mx_get_thread_count() == 1);
  CHECK(vmt_thread_state(peer) == VMT_THREAD_TERMINATED);
  int64_t ns = 0;
  CHECK(vmt_mx_get_thread_cpu_time(vmt_thread_id(peer), &ns) == 0 && ns == -1);
  CHECK(vmt_thread_cpu_time(me, VMT_CPU_TOTAL) >= 0);
  CHECK(vmt_elapsed_nanos() > 0);
  vmt_unpark(me);
  CHECK(vmt_park(1000 * 1000 * 1000) == 0);
  CHECK(vmt_sleep_ns(1000) == 0);

  /* The shared monitor and synchronizer, which a vanished worker may have owned, waited on or
   * blocked on. Their statistics read (with contention monitoring on, under the monitor's own
   * statistics); nobody owns them, or a vanished owner's are taken over (-EOWNERDEAD); nobody
   * waits on them (the waiters' nodes were on their stacks): notify wakes no one, and they can
   * be destroyed. */
  vmt_monitor_stats_t st;
  CHECK(vmt_monitor_get_stats(mon, &st) == 0 && st.owner_id == 0);
  int r = vmt_monitor_try_enter(mon);
  CHECK(r == 0 || r == -EOWNERDEAD);
  CHECK(vmt_monitor_get_stats(mon, &st) == 0 && st.owner_id == vmt_thread_id(me));
  CHECK(st.wait_waiters == 0 && st.entry_waiters == 0);
  CHECK(vmt_monitor_notify_all(mon) == 0);
  CHECK(vmt_monitor_wait(mon, 1000) == -ETIMEDOUT);
  CHECK(vmt_monitor_exit(mon) == 0);
  CHECK(vmt_monitor_exit(mon) == -EPERM);
  CHECK(vmt_monitor_destroy(mon) == 0);
  r = vmt_sync_try_lock(sync1);
  CHECK(r == 0 || r == -EOWNERDEAD);
  CHECK(vmt_sync_unlock(sync1) == 0);
  CHECK(vmt_sync_destroy(sync1) == 0);

  /* The SIGQUIT dump is off in the child: the parent's handler and pipe are not inherited (a
   * SIGQUIT to the child must not make the parent print), the disposition found at enable is
   * back, and the dump can be turned off (nothing to wait for) and on again. */
  struct sigaction sa;
  CHECK(sigaction(SIGQUIT, NULL, &sa) == 0 && sa.sa_handler == count_quit);
  for (int i = 0; i < dump_pipe_count; i++) {
    struct stat sb;
    CHECK(fstat(dump_pipe_fd[i], &sb) != 0 || sb.st_ino != dump_pipe_ino[i]);
  }
  int quits = atomic_load(&quits_seen);
  CHECK(raise(SIGQUIT) == 0 && atomic_load(&quits_seen) == quits + 1);
  CHECK(vmt_mx_disable_sigquit_dump() == 0);
#if CHILD_MAY_ALLOCATE
  FILE *quit_sink = tmpfile();
  CHECK(quit_sink != NULL);
  CHECK(vmt_mx_enable_sigquit_dump(quit_sink) == 0);
  CHECK(raise(SIGQUIT) == 0);
  /* Read through the descriptor (the dump thread owns the stream; it flushes at the end). */
  char head[512];
  bool dumped = false;
  for (int tries = 0; tries < 10000 && !dumped; tries++) {
    ssize_t got = pread(fileno(quit_sink), head, sizeof(head) - 1, 0);
    head[got > 0 ? got : 0] = '\0';
    dumped = strstr(head, "Full thread dump") != NULL;
    if (!dumped) vmt_sleep_ns(1000 * 1000);
  }
  CHECK(dumped);
  CHECK(vmt_mx_disable_sigquit_dump() == 0);
  CHECK(sigaction(SIGQUIT, NULL, &sa) == 0 && sa.sa_handler == count_quit);
#endif

  /* The VM services: no safepoint holds (a vanished worker's is over), the forking thread is
   * not suspended, enters and leaves managed code, runs a handshake on itself and holds a
   * safepoint of its own. */
  CHECK(!vmt_safepoint_in_progress());
  CHECK(vmt_thread_suspend_count(me) == 0);
  CHECK(vmt_exec_enter(VMT_EXEC_MANAGED) == VMT_EXEC_NATIVE);
  DO(vmt_poll(me));
  CHECK(vmt_exec_enter(VMT_EXEC_NATIVE) == VMT_EXEC_MANAGED);
  CHECK(vmt_handshake_run(me, count_op, NULL, 1000 * 1000 * 1000, NULL) == 0);
  vmt_safepoint_stats_t sp;
  CHECK(vmt_safepoint_begin(1000 * 1000 * 1000, &sp) == 0 && sp.running == 0);
  CHECK(vmt_safepoint_end(NULL) == 0);
  /* The profiler is not running in the child, whatever the parent's was doing (no timer is
   * inherited); its signal control is off; the child may profile itself. */
  CHECK(!vmt_prof_is_running());
  CHECK(vmt_prof_disable_signal_control() == 0);
  CHECK(vmt_prof_set_walker(NULL, NULL, NULL) == 0);
#if CHILD_MAY_ALLOCATE
  CHECK(vmt_prof_start(NULL) == 0);
  CHECK(vmt_prof_is_running());
  CHECK(vmt_prof_stop() == 0);
  vmt_prof_stats_t pst;
  CHECK(vmt_prof_get_stats(&pst) == 0 && !pst.running && pst.threads_armed == 0);
  CHECK(vmt_prof_clear() == 0);
#endif

  /* Issue 15's process-wide state: the TLS key table, the hooks and the guard zones' handler
   * install are usable whatever a vanished thread was doing with them; the forking thread's
   * interrupt status, name and stack bounds are its own. */
  vmt_tls_key_t key;
  CHECK(vmt_tls_key_create(&key, NULL) == 0);
  CHECK(vmt_tls_set(key, &key) == 0 && vmt_tls_get(key) == &key);
  CHECK(vmt_tls_key_delete(key) == 0 && vmt_tls_get(key) == NULL);
  static char child_ctx;
  CHECK(vmt_thread_hooks_add(row_hook, NULL, &child_ctx) == 0);
  CHECK(vmt_thread_hooks_remove(row_hook, NULL, &child_ctx) == 0);
  CHECK(vmt_thread_interrupt(me) == 0 && vmt_thread_interrupted());
  char self_name[64];
  CHECK(vmt_thread_get_name(me, self_name, sizeof(self_name)) > 0);
  char peer_name[64];
  CHECK(vmt_thread_get_name(peer, peer_name, sizeof(peer_name)) > 0);   /* its lock was reset */
  CHECK(vmt_stack_bytes_left() > 0 && vmt_stack_bytes_left() != SIZE_MAX);
  vmt_stack_overflow_handler_set(NULL, NULL);

  /* The stack walker can be replaced, whatever a vanished thread was doing with it. */
  DO(vmt_mx_set_stack_walker(slow_walker, NULL));
  DO(vmt_mx_set_stack_walker(NULL, NULL));

#if CHILD_MAY_ALLOCATE
  /* New threads start, meet on a new monitor, are counted and joined. */
  vmt_monitor_t *fresh;
  CHECK(vmt_monitor_create(&fresh, "fork-child") == 0);
  vmt_thread_t *t[2];
  for (int i = 0; i < 2; i++) CHECK(vmt_thread_start(&t[i], child_thread, fresh) == 0);
  CHECK(vmt_mx_get_thread_count() >= 1);
  for (int i = 0; i < 2; i++) {
    void *res = NULL;
    CHECK(vmt_thread_join(t[i], &res) == 0 && res == fresh && vmt_thread_release(t[i]) == 0);
  }
  CHECK(vmt_mx_get_thread_count() == 1);
  CHECK(vmt_monitor_destroy(fresh) == 0);
  int64_t *ids = NULL;
  size_t n = 0;
  CHECK(vmt_mx_get_all_thread_ids(&ids, &n) == 0 && n == 1 && ids[0] == vmt_thread_id(me));
  vmt_mx_ids_free(ids);
  vmt_thread_info_t *info = NULL;
  CHECK(vmt_mx_get_thread_info(vmt_thread_id(me), 8, &info) == 0 && info != NULL);
  vmt_mx_thread_info_free(info);
  char *dump = NULL;
  size_t len = 0;
  CHECK(vmt_mx_thread_dump_to_string(&dump, &len) == 0 && strstr(dump, "fork-calls-main"));
  free(dump);
  CHECK(vmt_mx_find_deadlocked_threads(&ids, &n) == 0 && n == 0);
#endif
  /* The forking thread leaves the runtime: its exit path waits for nobody (a vanished reader
   * of its allocation counter included). */
  CHECK(vmt_thread_detach() == 0);
  CHECK(vmt_mx_get_thread_count() == 0 && vmt_thread_current() == NULL);
  _exit(0);
}

/* ---- Row bodies --------------------------------------------------------------------------- */
static _Atomic uintptr_t sink_value;   /* keeps pure calls from being dropped */
#define KEEP(expr) atomic_fetch_add_explicit(&sink_value, (uintptr_t)(expr), memory_order_relaxed)

static void *body_return(void *arg) { return arg; }
static void *body_exit(void *arg) {
  vmt_thread_exit(arg);
  return NULL;
}
static void *body_sleep(void *arg) {
  vmt_sleep_ns(200 * 1000);
  return arg;
}

static void spin_ns(int64_t ns) {
  int64_t until = vmt_nanotime() + ns;
  while (vmt_nanotime() < until) {
  }
}

static void start_join(vmt_thread_fn fn) {
  vmt_thread_t *t;
  if (vmt_thread_start(&t, fn, NULL) != 0) return;
  vmt_thread_join(t, NULL);
  vmt_thread_release(t);
}

static void call_start(int w) { (void)w, start_join(body_return); }
static void call_start_ex(int w) {
  (void)w;
  vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_NAME | VMT_THREAD_OPT_CATEGORY |
                                     VMT_THREAD_OPT_DAEMON | VMT_THREAD_OPT_STACK_SIZE,
                            .name = "fork-row-ex",
                            .category = "forkrow",
                            .daemon = true,
                            .stack_size = 256 * 1024};
  vmt_thread_t *t;
  if (vmt_thread_start_ex(&t, &o, body_return, NULL) != 0) return;
  vmt_thread_join(t, NULL);
  vmt_thread_release(t);
}
static void call_join(int w) { (void)w, start_join(body_sleep); }
static void call_exit(int w) { (void)w, start_join(body_exit); }
static void call_retain_release(int w) {
  (void)w;
  if (vmt_thread_retain(peer) == 0) vmt_thread_release(peer);
}
static void call_attach_detach(int w) {
  (void)w;
  vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_NAME, .name = "fork-row-foreign"};
  vmt_thread_t *t;
  if (vmt_thread_attach(&o, &t) == 0) vmt_thread_detach();
}
static void call_current(int w) { (void)w, KEEP(vmt_thread_current()); }
static void call_state_name(int w) { (void)w, KEEP(vmt_thread_state_name(VMT_THREAD_BLOCKED)); }
static void call_id(int w) { (void)w, KEEP(vmt_thread_id(peer)); }
static void call_name(int w) { (void)w, KEEP(vmt_thread_name(peer)); }
static void call_os_name(int w) { (void)w, KEEP(vmt_thread_os_name(peer)); }
static void call_category(int w) { (void)w, KEEP(vmt_thread_category(peer)); }
static void call_is_daemon(int w) { (void)w, KEEP(vmt_thread_is_daemon(peer)); }
static void call_priority(int w) { (void)w, KEEP(vmt_thread_priority(peer)); }
static void call_state(int w) { (void)w, KEEP(vmt_thread_state(peer)); }
static void call_tid(int w) { (void)w, KEEP(vmt_thread_tid(peer)); }

static void call_thread_cpu_time(int w) {
  KEEP(vmt_thread_cpu_time(peer, (vmt_cpu_kind_t)(w % 3)));
}
static void call_current_thread_cpu_time(int w) {
  KEEP(vmt_current_thread_cpu_time((vmt_cpu_kind_t)(w % 3)));
}
static void call_nanotime(int w) { (void)w, KEEP(vmt_nanotime()); }
static void call_elapsed_nanos(int w) { (void)w, KEEP(vmt_elapsed_nanos()); }
static void call_elapsed_source(int w) { (void)w, KEEP(vmt_elapsed_source()); }
static void call_elapsed_source_reason(int w) { (void)w, KEEP(vmt_elapsed_source_reason()); }
static void call_version(int w) { (void)w, KEEP(vmt_version()); }

static void call_monitor_create_destroy(int w) {
  (void)w;
  vmt_monitor_t *m;
  if (vmt_monitor_create(&m, "fork-row") == 0) vmt_monitor_destroy(m);
}
/* Enter, hold a little, exit: two workers contend, so enters block. */
static void call_monitor_enter_exit(int w) {
  (void)w;
  if (vmt_monitor_enter(mon) != 0) return;
  spin_ns(2000);
  vmt_monitor_exit(mon);
}
static void call_monitor_try_enter(int w) {
  (void)w;
  if (vmt_monitor_try_enter(mon) != 0) return;
  spin_ns(2000);
  vmt_monitor_exit(mon);
}
static void call_monitor_wait(int w) {
  (void)w;
  vmt_monitor_enter(mon);
  vmt_monitor_wait(mon, 200 * 1000);
  vmt_monitor_exit(mon);
}
/* Worker 0 waits, the others notify. */
static void notify_row(int w, bool all) {
  if (w == 0) {
    call_monitor_wait(w);
    return;
  }
  vmt_monitor_enter(mon);
  if (all) vmt_monitor_notify_all(mon);
  else vmt_monitor_notify(mon);
  vmt_monitor_exit(mon);
}
static void call_monitor_notify(int w) { notify_row(w, false); }
static void call_monitor_notify_all(int w) { notify_row(w, true); }
static void call_monitor_describe(int w) {
  (void)w;
  char buf[64];
  KEEP(vmt_monitor_describe(mon, buf, sizeof(buf)));
}
/* Workers 0 and 1 contend on the monitor (with contention monitoring on, so the blocked time
 * is added at each contended enter), worker 2 reads the statistics. */
static void call_monitor_get_stats(int w) {
  if (w < 2) {
    call_monitor_enter_exit(w);
    return;
  }
  vmt_monitor_stats_t st;
  KEEP(vmt_monitor_get_stats(mon, &st));
}
static void contention_on(void) { vmt_mx_set_thread_contention_monitoring_enabled(true); }
static void contention_off(void) { vmt_mx_set_thread_contention_monitoring_enabled(false); }

static void call_sync_create_destroy(int w) {
  (void)w;
  vmt_sync_t *s;
  if (vmt_sync_create(&s, "fork-row") == 0) vmt_sync_destroy(s);
}
static void call_sync_lock_unlock(int w) {
  (void)w;
  if (vmt_sync_lock(sync1) != 0) return;
  spin_ns(2000);
  vmt_sync_unlock(sync1);
}
static void call_sync_try_lock(int w) {
  (void)w;
  if (vmt_sync_try_lock(sync1) != 0) return;
  spin_ns(2000);
  vmt_sync_unlock(sync1);
}
static void call_sync_timed_lock(int w) {
  (void)w;
  if (vmt_sync_timed_lock(sync1, 100 * 1000) != 0) return;
  spin_ns(2000);
  vmt_sync_unlock(sync1);
}
static void call_sync_describe(int w) {
  (void)w;
  char buf[64];
  KEEP(vmt_sync_describe(sync1, buf, sizeof(buf)));
}
static void call_sleep(int w) { (void)w, vmt_sleep_ns(100 * 1000); }
static void call_park(int w) { (void)w, vmt_park(100 * 1000); }
static void call_unpark(int w) { (void)w, vmt_unpark(peer); }

static void call_park_nanos(int w) { (void)w, vmt_park_nanos(100 * 1000); }
static void call_park_until(int w) {
  if (w % 2)
    vmt_park_until(vmt_nanotime() + 100 * 1000, VMT_CLOCK_MONOTONIC);
  else
    vmt_park_until(0, VMT_CLOCK_REALTIME);   /* passed: at once */
}
static void call_park_blocker(int w) {
  vmt_park_blocker_t b = {.class_name = "fork.Row$Blocker", .identity_hash = w};
  vmt_thread_set_park_blocker(&b);
  vmt_park_nanos(50 * 1000);
  vmt_thread_set_park_blocker(NULL);
}
static void call_monitor_holds(int w) { (void)w, KEEP(vmt_monitor_holds_lock(mon) + 1); }
static void call_sync_holds(int w) { (void)w, KEEP(vmt_sync_holds_lock(sync1) + 1); }

/* vmthread/thread.h beyond the life cycle (issue 15). */
static void call_timed_join(int w) {
  (void)w;
  vmt_thread_t *t;
  if (vmt_thread_start(&t, body_sleep, NULL) != 0) return;
  if (vmt_thread_timed_join(t, 50 * 1000, NULL) != 0) vmt_thread_join(t, NULL);
  vmt_thread_release(t);
}
/* Workers interrupt themselves and clear it: the peer parks for the whole test and must not
 * be woken into a loop. */
static void call_interrupt(int w) {
  (void)w;
  vmt_thread_interrupt(vmt_thread_current());
  vmt_sleep_ns(10 * 1000);   /* -EINTR, cleared */
  vmt_thread_interrupt(vmt_thread_current());
  KEEP(vmt_thread_interrupted());
}
static void call_is_interrupted(int w) { (void)w, KEEP(vmt_thread_is_interrupted(peer)); }
static const char *const row_names[2] = {"fork-calls-peer", "fork-calls-peer-renamed"};
static void call_set_name(int w) { vmt_thread_set_name(peer, row_names[w % 2]); }
static void call_get_name(int w) {
  (void)w;
  char buf[64];
  KEEP(vmt_thread_get_name(peer, buf, sizeof(buf)));
}
static void call_set_priority(int w) { vmt_thread_set_priority(peer, 1 + w % 10); }
static void call_timer_slack(int w) {
  (void)w;
  vmt_thread_set_timer_slack(vmt_thread_timer_slack() > 0 ? 2000 : 1000);
  KEEP(vmt_thread_timer_slack());
}
static void call_default_timer_slack(int w) {
  (void)w;
  vmt_thread_set_default_timer_slack(VMT_THREAD_TIMER_SLACK_DEFAULT_NS);
  KEEP(vmt_thread_default_timer_slack());
}
static char hook_ctx[8];
static void row_hook(vmt_thread_t *t, void *ctx) { KEEP((uintptr_t)t + (uintptr_t)ctx); }
static void call_hooks(int w) {
  if (vmt_thread_hooks_add(row_hook, row_hook, &hook_ctx[w % 8]) != 0) return;
  if (w == 0) start_join(body_return);   /* a thread that runs them */
  vmt_thread_hooks_remove(row_hook, row_hook, &hook_ctx[w % 8]);
}
static vmt_tls_key_t row_key;
static void row_key_on(void) { vmt_tls_key_create(&row_key, NULL); }
static void row_key_off(void) { vmt_tls_key_delete(row_key); }
static void row_destructor(void *v) { KEEP(v); }
static void call_tls_key(int w) {
  (void)w;
  vmt_tls_key_t k;
  if (vmt_tls_key_create(&k, row_destructor) != 0) return;
  vmt_tls_set(k, &k);
  vmt_tls_key_delete(k);
}
static void call_tls_set(int w) {
  (void)w;
  vmt_tls_set(row_key, &row_key);
  KEEP(vmt_tls_get(row_key));
}
static void call_thread_tls_get(int w) {
  (void)w;
  void *v = NULL;
  vmt_thread_tls_get(peer, row_key, &v);
  KEEP(v);
}
/* Another thread's bounds (asked through its pthread_t under its record's lock) and the
 * caller's own. */
static void call_stack_info(int w) {
  vmt_stack_info_t info;
  KEEP(vmt_thread_stack_info(w % 2 ? peer : vmt_thread_current(), &info) + 1);
}
static void call_stack_bytes_left(int w) {
  (void)w;
  KEEP(vmt_stack_bytes_left_slow());
  KEEP(vmt_stack_bytes_left());
}
static void call_stack_zone_name(int w) { (void)w, KEEP(vmt_stack_zone_name(VMT_STACK_ZONE_RED)); }
static void call_stack_guard_reenable(int w) { (void)w, KEEP(vmt_stack_guard_reenable() + 1); }
static void row_overflow(const vmt_stack_overflow_t *ev, void *ctx) { (void)ev, (void)ctx; }
/* Sets the handler, and starts threads with guard zones (the first one installs the SIGSEGV
 * handler, under its lock) that undo them as they end. */
static void call_overflow_handler(int w) {
  vmt_stack_overflow_handler_set(w % 2 ? row_overflow : NULL, NULL);
  vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_STACK_SIZE | VMT_THREAD_OPT_STACK_GUARD,
                            .stack_size = 256 * 1024,
                            .stack_guard = {.red_size = 4096, .yellow_size = 8192,
                                            .reserved_size = 4096}};
  vmt_thread_t *t;
  if (vmt_thread_start_ex(&t, &o, body_return, NULL) != 0) return;
  vmt_thread_join(t, NULL);
  vmt_thread_release(t);
}
static void call_category_usage(int w) {
  (void)w;
  vmt_category_usage_t *u = NULL;
  size_t n = 0;
  if (vmt_mx_get_category_usage(&u, &n) == 0) vmt_mx_category_usage_free(u);
}

static void call_thread_count(int w) { (void)w, KEEP(vmt_mx_get_thread_count()); }
static void call_peak_count(int w) { (void)w, KEEP(vmt_mx_get_peak_thread_count()); }
static void call_total_started(int w) { (void)w, KEEP(vmt_mx_get_total_started_thread_count()); }
static void call_daemon_count(int w) { (void)w, KEEP(vmt_mx_get_daemon_thread_count()); }
static void call_reset_peak(int w) { (void)w, vmt_mx_reset_peak_thread_count(); }
static void call_all_ids(int w) {
  (void)w;
  int64_t *ids;
  size_t n;
  if (vmt_mx_get_all_thread_ids(&ids, &n) == 0) vmt_mx_ids_free(ids);
}
static void call_thread_info(int w) {
  vmt_thread_info_t *info;
  if (vmt_mx_get_thread_info(vmt_thread_id(peer), w % 2 ? 8 : 0, &info) == 0)
    vmt_mx_thread_info_free(info);
}
static void call_thread_info_array(int w) {
  (void)w;
  int64_t ids[2] = {vmt_thread_id(peer), vmt_thread_id(me)};
  vmt_thread_info_t **infos;
  if (vmt_mx_get_thread_info_array(ids, 2, true, true, 8, &infos) == 0)
    vmt_mx_thread_info_array_free(infos, 2);
}
static void call_dump_all(int w) {
  (void)w;
  vmt_thread_info_t **infos;
  size_t n;
  if (vmt_mx_dump_all_threads(true, true, 8, &infos, &n) == 0)
    vmt_mx_thread_info_array_free(infos, n);
}
static void call_thread_info_array_ex(int w) {
  int64_t ids[2] = {vmt_thread_id(peer), vmt_thread_id(me)};
  vmt_thread_info_t **infos;
  uint32_t flags = VMT_MX_INFO_LOCKED_MONITORS | (w % 2 ? VMT_MX_INFO_NO_CPU_TIME : 0);
  if (vmt_mx_get_thread_info_array_ex(ids, 2, flags, 8, &infos) == 0)
    vmt_mx_thread_info_array_free(infos, 2);
}
static void call_dump_all_ex(int w) {
  vmt_thread_info_t **infos;
  size_t n;
  uint32_t flags = VMT_MX_INFO_LOCKED_SYNCHRONIZERS | (w % 2 ? VMT_MX_INFO_NO_CPU_TIME : 0);
  if (vmt_mx_dump_all_threads_ex(flags, 8, &infos, &n) == 0)
    vmt_mx_thread_info_array_free(infos, n);
}

/* A VM's walker that takes a while (it would stop the thread and read its frames). */
static int slow_walker(vmt_thread_t *t, vmt_stack_frame_t *frames, int32_t max, void *ctx) {
  (void)t, (void)ctx;
  spin_ns(20 * 1000);
  if (max < 1) return 0;
  frames[0] = (vmt_stack_frame_t){.function = "fork_row_frame", .file = NULL, .line = 1, .pc = 0};
  return 1;
}
/* Worker 0 swaps the walker in and out, worker 1 walks through it. */
static void call_set_stack_walker(int w) {
  if (w == 0) {
    vmt_mx_set_stack_walker(slow_walker, NULL);
    spin_ns(50 * 1000);
    vmt_mx_set_stack_walker(NULL, NULL);
    return;
  }
  call_thread_info(1);
}
static void walker_on(void) { vmt_mx_set_stack_walker(slow_walker, NULL); }
static void walker_off(void) { vmt_mx_set_stack_walker(NULL, NULL); }
/* A walker whose frame reports the monitor it holds, as a VM's frames know their locks. */
static int reporting_walker(vmt_thread_t *t, vmt_stack_frame_t *frames, int32_t max, void *ctx) {
  (void)t, (void)ctx;
  if (max < 1) return 0;
  vmt_mx_frame_holds_monitor(0, mon);
  frames[0] = (vmt_stack_frame_t){.function = "fork_row_frame", .file = NULL, .line = 1, .pc = 0};
  return 1;
}
static void reporting_walker_on(void) { vmt_mx_set_stack_walker(reporting_walker, NULL); }

static void call_cpu_supported(int w) { (void)w, KEEP(vmt_mx_is_thread_cpu_time_supported()); }
static void call_current_cpu_supported(int w) {
  (void)w, KEEP(vmt_mx_is_current_thread_cpu_time_supported());
}
static void call_cpu_enabled(int w) {
  (void)w;
  bool b;
  KEEP(vmt_mx_is_thread_cpu_time_enabled(&b));
}
static void call_set_cpu_enabled(int w) {
  (void)w;
  vmt_mx_set_thread_cpu_time_enabled(false);
  vmt_mx_set_thread_cpu_time_enabled(true);
}
static void call_current_cpu(int w) {
  (void)w;
  int64_t ns;
  KEEP(vmt_mx_get_current_thread_cpu_time(&ns));
}
static void call_current_user(int w) {
  (void)w;
  int64_t ns;
  KEEP(vmt_mx_get_current_thread_user_time(&ns));
}
static void call_thread_cpu(int w) {
  (void)w;
  int64_t ns;
  KEEP(vmt_mx_get_thread_cpu_time(vmt_thread_id(peer), &ns));
}
static void call_thread_user(int w) {
  (void)w;
  int64_t ns;
  KEEP(vmt_mx_get_thread_user_time(vmt_thread_id(peer), &ns));
}
static void call_thread_cpu_array(int w) {
  (void)w;
  int64_t ids[2] = {vmt_thread_id(peer), vmt_thread_id(me)}, out[2];
  KEEP(vmt_mx_get_thread_cpu_time_array(ids, 2, out));
}
static void call_thread_user_array(int w) {
  (void)w;
  int64_t ids[2] = {vmt_thread_id(peer), vmt_thread_id(me)}, out[2];
  KEEP(vmt_mx_get_thread_user_time_array(ids, 2, out));
}
static void call_contention_supported(int w) {
  (void)w, KEEP(vmt_mx_is_thread_contention_monitoring_supported());
}
static void call_contention_enabled(int w) {
  (void)w, KEEP(vmt_mx_is_thread_contention_monitoring_enabled());
}
static void call_set_contention(int w) {
  (void)w;
  vmt_mx_set_thread_contention_monitoring_enabled(true);
  vmt_mx_set_thread_contention_monitoring_enabled(false);
}
static void call_monitor_usage(int w) { (void)w, KEEP(vmt_mx_is_object_monitor_usage_supported()); }
static void call_sync_usage(int w) { (void)w, KEEP(vmt_mx_is_synchronizer_usage_supported()); }
static void call_find_monitor_deadlocks(int w) {
  (void)w;
  int64_t *ids;
  size_t n;
  if (vmt_mx_find_monitor_deadlocked_threads(&ids, &n) == 0) vmt_mx_ids_free(ids);
}
static void call_find_deadlocks(int w) {
  (void)w;
  int64_t *ids;
  size_t n;
  if (vmt_mx_find_deadlocked_threads(&ids, &n) == 0) vmt_mx_ids_free(ids);
}
static void call_alloc_supported(int w) {
  (void)w, KEEP(vmt_mx_is_thread_allocated_memory_supported());
}
static void call_alloc_enabled(int w) {
  (void)w;
  bool b;
  KEEP(vmt_mx_is_thread_allocated_memory_enabled(&b));
}
static void call_set_alloc_enabled(int w) {
  (void)w;
  vmt_mx_set_thread_allocated_memory_enabled(false);
  vmt_mx_set_thread_allocated_memory_enabled(true);
}
/* Another thread reading the forking thread's own counter. */
static void call_alloc_bytes(int w) {
  (void)w;
  int64_t b;
  KEEP(vmt_mx_get_thread_allocated_bytes(vmt_thread_id(me), &b));
}
static void call_alloc_bytes_array(int w) {
  (void)w;
  int64_t ids[2] = {vmt_thread_id(me), vmt_thread_id(peer)}, out[2];
  KEEP(vmt_mx_get_thread_allocated_bytes_array(ids, 2, out));
}
static void call_current_alloc_bytes(int w) {
  (void)w;
  int64_t b;
  KEEP(vmt_mx_get_current_thread_allocated_bytes(&b));
}
static void call_total_alloc_bytes(int w) {
  (void)w;
  int64_t b;
  KEEP(vmt_mx_get_total_thread_allocated_bytes(&b));
}
static void call_print_dump(int w) { (void)w, vmt_mx_print_thread_dump(devnull); }
static void call_dump_to_string(int w) {
  (void)w;
  char *s;
  size_t n;
  if (vmt_mx_thread_dump_to_string(&s, &n) == 0) free(s);
}
static void call_print_dump_json(int w) { (void)w, vmt_mx_print_thread_dump_json(devnull); }
static void call_dump_json_to_string(int w) {
  (void)w;
  char *s;
  size_t n;
  if (vmt_mx_thread_dump_json_to_string(&s, &n) == 0) free(s);
}
static void call_other_runtime_count(int w) {
  (void)w;
  char path[64];
  KEEP(vmt_mx_get_other_runtime_count(path, sizeof(path)));
}
static void call_sigquit_toggle(int w) {
  (void)w;
  if (vmt_mx_enable_sigquit_dump(devnull) == 0) vmt_mx_disable_sigquit_dump();
}
static void sigquit_off(void) {
  vmt_mx_disable_sigquit_dump();
  dump_pipe_count = 0;
}
/* The pipes open in this process, as (descriptor, inode). */
static int list_pipes(int *fds, ino_t *inos, int cap) {
  DIR *d = opendir("/proc/self/fd");
  assert_non_null(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL && n < cap;) {
    int fd = atoi(e->d_name);
    struct stat sb;
    if (e->d_name[0] == '.' || fd == dirfd(d) || fstat(fd, &sb) != 0 || !S_ISFIFO(sb.st_mode))
      continue;
    fds[n] = fd;
    inos[n++] = sb.st_ino;
  }
  closedir(d);
  return n;
}
static void sigquit_on(void) {
  int before_fd[MAX_PIPES];
  ino_t before_ino[MAX_PIPES];
  int before = list_pipes(before_fd, before_ino, MAX_PIPES);
  assert_int_equal(vmt_mx_enable_sigquit_dump(devnull), 0);
  int fds[MAX_PIPES];
  ino_t inos[MAX_PIPES];
  int n = list_pipes(fds, inos, MAX_PIPES);
  dump_pipe_count = 0;
  for (int i = 0; i < n; i++) {
    bool old = false;
    for (int j = 0; j < before && !old; j++) old = before_ino[j] == inos[i];
    if (old) continue;
    dump_pipe_fd[dump_pipe_count] = fds[i];
    dump_pipe_ino[dump_pipe_count++] = inos[i];
  }
  assert_int_equal(dump_pipe_count, 2);   /* its two ends */
}
/* SIGQUIT to the worker itself: it runs the dump's signal handler over and over. */
static void call_sigquit_handler(int w) {
  (void)w;
  pthread_kill(pthread_self(), SIGQUIT);
}

/* vmthread/vmservices.h. The workers are runtime threads; the peer is parked (a safe region)
 * and the forking thread is attached, in native code: requests to either are run on their
 * behalf, the forking thread's while it forks. */
#define VMS_TIMEOUT_NS (1000LL * 1000 * 1000)
static void call_exec_enter(int w) {
  vmt_thread_t *self = vmt_thread_current();
  vmt_exec_enter(VMT_EXEC_MANAGED);
  for (int i = 0; i < 64; i++) vmt_poll(self);
  vmt_exec_enter(w % 2 ? VMT_EXEC_VM : VMT_EXEC_BLOCKED);
  vmt_exec_enter(VMT_EXEC_NATIVE);
}
static void call_exec_state(int w) { (void)w, KEEP(vmt_exec_state(peer) + vmt_exec_state(me)); }
static void call_exec_state_name(int w) { (void)w, KEEP(vmt_exec_state_name(VMT_EXEC_VM)); }
static void call_poll_slow(int w) {
  (void)w;
  vmt_thread_t *self = vmt_thread_current();
  vmt_exec_enter(VMT_EXEC_MANAGED);
  vmt_handshake_post(self, count_op, NULL);
  vmt_poll_slow(self);
  vmt_exec_enter(VMT_EXEC_NATIVE);
}
static void call_poll_word(int w) { (void)w, KEEP(vmt_poll_word(peer)); }
/* Worker 0 asks the parked peer, worker 1 the forking thread, worker 2 (in managed code,
 * polling) is asked by both others in turn. */
static _Atomic(vmt_thread_t *) polled_worker;
static void call_handshake_run(int w) {
  if (w == 2) {
    vmt_thread_t *self = vmt_thread_current();
    atomic_store(&polled_worker, self);
    vmt_exec_enter(VMT_EXEC_MANAGED);
    for (int i = 0; i < 1000; i++) vmt_poll(self);
    vmt_exec_enter(VMT_EXEC_NATIVE);
    return;
  }
  vmt_handshake_run(w == 0 ? peer : me, count_op, NULL, VMS_TIMEOUT_NS, NULL);
  vmt_thread_t *other = atomic_load(&polled_worker);
  if (other) vmt_handshake_run(other, count_op, NULL, VMS_TIMEOUT_NS, NULL);
}
static void polled_off(void) { atomic_store(&polled_worker, NULL); }
static void call_handshake_post(int w) {
  (void)w;
  vmt_thread_t *self = vmt_thread_current();
  vmt_handshake_post(self, count_op, NULL);
  vmt_exec_enter(VMT_EXEC_MANAGED);   /* runs it */
  vmt_exec_enter(VMT_EXEC_NATIVE);
}
static void call_handshake_run_all(int w) {
  (void)w;
  vmt_handshake_run_all(count_op, NULL, VMS_TIMEOUT_NS, NULL);
}
/* Worker 0 holds safepoints, worker 1 polls in managed code (stopped at each). */
static void call_safepoint(int w) {
  if (w == 1) {
    call_exec_enter(w);
    return;
  }
  vmt_safepoint_stats_t st;
  if (vmt_safepoint_begin(VMS_TIMEOUT_NS, &st) != 0) return;
  KEEP(vmt_safepoint_in_progress());
  spin_ns(20 * 1000);
  vmt_safepoint_end(&st);
}
/* Worker 0 suspends and resumes worker 1, which runs managed code with polls. */
static _Atomic(vmt_thread_t *) suspendee;
static void call_suspend_resume(int w) {
  if (w == 1) {
    atomic_store(&suspendee, vmt_thread_current());
    call_exec_enter(w);
    return;
  }
  vmt_thread_t *t = atomic_load(&suspendee);
  if (t == NULL) return;
  if (vmt_thread_suspend(t, VMT_SUSPEND_DEBUGGER, VMS_TIMEOUT_NS, NULL) == 0) {
    KEEP(vmt_thread_suspend_count(t));
    vmt_thread_resume(t, VMT_SUSPEND_DEBUGGER);
  }
  if (vmt_thread_suspend(peer, VMT_SUSPEND_VM, VMS_TIMEOUT_NS, NULL) == 0)
    vmt_thread_resume(peer, VMT_SUSPEND_VM);
}
static void suspendee_off(void) { atomic_store(&suspendee, NULL); }
/* Every thread but the caller, the forking one included (in native code it forks on). */
static void call_suspend_all(int w) {
  if (w == 1) {
    call_exec_enter(w);
    return;
  }
  if (vmt_thread_suspend_all(VMT_SUSPEND_USER, VMS_TIMEOUT_NS, NULL) == 0)
    vmt_thread_resume_all(VMT_SUSPEND_USER);
}
static void call_dump_at_safepoint(int w) {
  if (w == 1) {
    call_exec_enter(w);
    return;
  }
  vmt_thread_info_t **infos;
  size_t n;
  uint32_t flags = VMT_MX_INFO_LOCKED_MONITORS | VMT_MX_INFO_LOCKED_SYNCHRONIZERS;
  if (vmt_mx_dump_all_threads_at_safepoint(flags, 8, VMS_TIMEOUT_NS, &infos, &n) == 0)
    vmt_mx_thread_info_array_free(infos, n);
}
static void call_deadlocks_at_safepoint(int w) {
  if (w == 1) {
    call_exec_enter(w);
    return;
  }
  int64_t *ids;
  size_t n;
  if (vmt_mx_find_deadlocked_threads_at_safepoint(VMS_TIMEOUT_NS, &ids, &n) == 0)
    vmt_mx_ids_free(ids);
}

/* The profiler: toggled, read while it runs, its outputs, its signal control. */
static const vmt_prof_options_t prof_fast = {.flags = VMT_PROF_OPT_PERIOD,
                                             .period_ns = VMT_PROF_PERIOD_MIN_NS};
static void prof_on(void) { assert_int_equal(vmt_prof_start(&prof_fast), 0); }
static void prof_off(void) {
  assert_int_equal(vmt_prof_stop(), 0);
  assert_int_equal(vmt_prof_clear(), 0);
}
static void call_prof_toggle(int w) {
  (void)w;
  if (vmt_prof_start(&prof_fast) == 0) vmt_prof_stop();
}
static void call_prof_is_running(int w) { (void)w, KEEP(vmt_prof_is_running()); }
static void call_prof_clear(int w) { (void)w, KEEP(vmt_prof_clear()); }
static void call_prof_cause_name(int w) {
  (void)w;
  KEEP(vmt_prof_lost_cause_name(VMT_PROF_LOST_UNSAFE));
}
static void call_prof_stats(int w) {
  (void)w;
  vmt_prof_stats_t st;
  KEEP(vmt_prof_get_stats(&st));
  vmt_prof_thread_stats_t ts;
  KEEP(vmt_prof_get_thread_stats(vmt_thread_id(me), &ts));
}
static int prof_walker(vmt_thread_t *t, const void *uc, uintptr_t *frames, int32_t max,
                       void *ctx) {
  (void)t, (void)uc, (void)frames, (void)max, (void)ctx;
  return 0;
}
static void call_prof_set_walker(int w) {
  (void)w;
  vmt_prof_set_walker(prof_walker, NULL, NULL);
  vmt_prof_set_walker(NULL, NULL, NULL);
}
/* Out and back in, under a running profile: a disarm and an arm of the worker's own thread. */
static void call_prof_exclude(int w) {
  (void)w;
  vmt_thread_t *self = vmt_thread_current();
  KEEP(vmt_prof_set_thread_excluded(self, true));
  KEEP(vmt_prof_set_thread_excluded(self, false));
}
static void call_prof_collapsed(int w) { (void)w, vmt_prof_write_collapsed(devnull, 0); }
static void call_prof_collapsed_string(int w) {
  (void)w;
  char *s;
  size_t n;
  if (vmt_prof_collapsed_to_string(VMT_PROF_OUT_THREADS, &s, &n) == 0) free(s);
}
static void call_prof_flamegraph(int w) { (void)w, vmt_prof_write_flamegraph(devnull, NULL, 0); }
static void call_prof_table(int w) { (void)w, vmt_prof_write_table(devnull); }
static void call_prof_control_toggle(int w) {
  (void)w;
  if (vmt_prof_enable_signal_control(SIGRTMIN + 10, "/dev/null/never") == 0)
    vmt_prof_disable_signal_control();
}
/* A worker that burns CPU under a 1 ms profile: it runs the profiler's signal handler. */
static void call_prof_handler(int w) {
  (void)w;
  spin_ns(1000 * 1000);
}

/* One row per public function (the same body may serve several: a pair such as create and
 * destroy is inside one or the other). */
static const row_t rows[] = {
    /* vmthread/common.h, vmthread/clock.h */
    {.fn = "vmt_version", .call = call_version},
    {.fn = "vmt_thread_cpu_time", .call = call_thread_cpu_time, .workers = 3},
    {.fn = "vmt_current_thread_cpu_time", .call = call_current_thread_cpu_time, .workers = 3},
    {.fn = "vmt_nanotime", .call = call_nanotime},
    {.fn = "vmt_elapsed_nanos", .call = call_elapsed_nanos, .workers = 2},
    {.fn = "vmt_elapsed_source", .call = call_elapsed_source},
    {.fn = "vmt_elapsed_source_reason", .call = call_elapsed_source_reason},
    /* vmthread/thread.h */
    {.fn = "vmt_thread_state_name", .call = call_state_name},
    {.fn = "vmt_thread_start", .call = call_start, .workers = 2},
    {.fn = "vmt_thread_start_ex", .call = call_start_ex, .workers = 2},
    {.fn = "vmt_thread_join", .call = call_join, .workers = 2},
    {.fn = "vmt_thread_retain", .call = call_retain_release, .workers = 2},
    {.fn = "vmt_thread_release", .call = call_retain_release, .workers = 2},
    {.fn = "vmt_thread_exit", .call = call_exit, .workers = 2},
    {.fn = "vmt_thread_current", .call = call_current},
    {.fn = "vmt_thread_attach", .call = call_attach_detach, .workers = 2, .foreign = true},
    {.fn = "vmt_thread_detach", .call = call_attach_detach, .workers = 2, .foreign = true},
    {.fn = "vmt_thread_id", .call = call_id},
    {.fn = "vmt_thread_name", .call = call_name},
    {.fn = "vmt_thread_os_name", .call = call_os_name},
    {.fn = "vmt_thread_category", .call = call_category},
    {.fn = "vmt_thread_is_daemon", .call = call_is_daemon},
    {.fn = "vmt_thread_priority", .call = call_priority},
    {.fn = "vmt_thread_state", .call = call_state},
    {.fn = "vmt_thread_tid", .call = call_tid},
    {.fn = "vmt_thread_timed_join", .call = call_timed_join, .workers = 2},
    {.fn = "vmt_thread_interrupt", .call = call_interrupt, .workers = 2},
    {.fn = "vmt_thread_interrupted", .call = call_interrupt, .workers = 2},
    {.fn = "vmt_thread_is_interrupted", .call = call_is_interrupted},
    {.fn = "vmt_thread_set_name", .call = call_set_name, .workers = 2},
    {.fn = "vmt_thread_get_name", .call = call_get_name, .workers = 2},
    {.fn = "vmt_thread_set_priority", .call = call_set_priority},
    {.fn = "vmt_thread_set_timer_slack", .call = call_timer_slack},
    {.fn = "vmt_thread_timer_slack", .call = call_timer_slack},
    {.fn = "vmt_thread_set_default_timer_slack", .call = call_default_timer_slack},
    {.fn = "vmt_thread_default_timer_slack", .call = call_default_timer_slack},
    {.fn = "vmt_thread_hooks_add", .call = call_hooks, .workers = 2},
    {.fn = "vmt_thread_hooks_remove", .call = call_hooks, .workers = 2},
    /* vmthread/tls.h */
    {.fn = "vmt_tls_key_create", .call = call_tls_key, .workers = 2},
    {.fn = "vmt_tls_key_delete", .call = call_tls_key, .workers = 2},
    {.fn = "vmt_tls_set", .call = call_tls_set, .setup = row_key_on, .teardown = row_key_off},
    {.fn = "vmt_thread_tls_get", .call = call_thread_tls_get, .setup = row_key_on,
     .teardown = row_key_off},
    /* vmthread/stack.h */
    {.fn = "vmt_thread_stack_info", .call = call_stack_info, .workers = 2},
    {.fn = "vmt_stack_bytes_left_slow", .call = call_stack_bytes_left},
    {.fn = "vmt_stack_zone_name", .call = call_stack_zone_name},
    {.fn = "vmt_stack_guard_reenable", .call = call_stack_guard_reenable},
    {.fn = "vmt_stack_overflow_handler_set", .call = call_overflow_handler, .workers = 2},
    /* vmthread/monitor.h */
    {.fn = "vmt_monitor_create", .call = call_monitor_create_destroy, .workers = 2},
    {.fn = "vmt_monitor_destroy", .call = call_monitor_create_destroy, .workers = 2},
    {.fn = "vmt_monitor_enter", .call = call_monitor_enter_exit, .workers = 3, .setup = contention_on, .teardown = contention_off},
    {.fn = "vmt_monitor_try_enter", .call = call_monitor_try_enter, .workers = 2},
    {.fn = "vmt_monitor_exit", .call = call_monitor_enter_exit, .workers = 3},
    {.fn = "vmt_monitor_wait", .call = call_monitor_wait, .workers = 2, .fork_weight = 2},
    {.fn = "vmt_monitor_notify", .call = call_monitor_notify, .workers = 2},
    {.fn = "vmt_monitor_notify_all", .call = call_monitor_notify_all, .workers = 3},
    {.fn = "vmt_monitor_describe", .call = call_monitor_describe},
    {.fn = "vmt_monitor_get_stats", .call = call_monitor_get_stats, .workers = 3, .setup = contention_on, .teardown = contention_off, .fork_weight = 3},
    {.fn = "vmt_sync_create", .call = call_sync_create_destroy, .workers = 2},
    {.fn = "vmt_sync_destroy", .call = call_sync_create_destroy, .workers = 2},
    {.fn = "vmt_sync_lock", .call = call_sync_lock_unlock, .workers = 3},
    {.fn = "vmt_sync_try_lock", .call = call_sync_try_lock, .workers = 2},
    {.fn = "vmt_sync_timed_lock", .call = call_sync_timed_lock, .workers = 3},
    {.fn = "vmt_sync_unlock", .call = call_sync_lock_unlock, .workers = 3},
    {.fn = "vmt_sync_describe", .call = call_sync_describe},
    {.fn = "vmt_sleep_ns", .call = call_sleep, .workers = 2},
    {.fn = "vmt_park", .call = call_park, .workers = 2},
    {.fn = "vmt_unpark", .call = call_unpark, .workers = 2},
    {.fn = "vmt_park_nanos", .call = call_park_nanos, .workers = 2},
    {.fn = "vmt_thread_set_park_blocker", .call = call_park_blocker, .workers = 2},
    {.fn = "vmt_park_until", .call = call_park_until, .workers = 2},
    {.fn = "vmt_monitor_holds_lock", .call = call_monitor_holds, .workers = 2},
    {.fn = "vmt_sync_holds_lock", .call = call_sync_holds, .workers = 2},
    /* vmthread/management.h */
    {.fn = "vmt_mx_get_thread_count", .call = call_thread_count},
    {.fn = "vmt_mx_get_peak_thread_count", .call = call_peak_count},
    {.fn = "vmt_mx_get_total_started_thread_count", .call = call_total_started},
    {.fn = "vmt_mx_get_daemon_thread_count", .call = call_daemon_count},
    {.fn = "vmt_mx_reset_peak_thread_count", .call = call_reset_peak, .workers = 2},
    {.fn = "vmt_mx_get_all_thread_ids", .call = call_all_ids, .workers = 2},
    {.fn = "vmt_mx_ids_free", .call = call_all_ids, .workers = 2},
    {.fn = "vmt_mx_get_thread_info", .call = call_thread_info, .workers = 2, .setup = walker_on,
     .teardown = walker_off},
    {.fn = "vmt_mx_get_thread_info_array", .call = call_thread_info_array, .workers = 2},
    {.fn = "vmt_mx_dump_all_threads", .call = call_dump_all, .workers = 2, .setup = walker_on,
     .teardown = walker_off},
    {.fn = "vmt_mx_get_thread_info_array_ex", .call = call_thread_info_array_ex, .workers = 2,
     .setup = walker_on, .teardown = walker_off},
    {.fn = "vmt_mx_dump_all_threads_ex", .call = call_dump_all_ex, .workers = 2},
    {.fn = "vmt_mx_thread_info_free", .call = call_thread_info, .workers = 2},
    {.fn = "vmt_mx_thread_info_array_free", .call = call_thread_info_array, .workers = 2},
    {.fn = "vmt_mx_set_stack_walker", .call = call_set_stack_walker, .workers = 2, .fork_weight = 2},
    {.fn = "vmt_mx_frame_holds_monitor", .call = call_thread_info_array, .workers = 2,
     .setup = reporting_walker_on, .teardown = walker_off},
    {.fn = "vmt_mx_is_thread_cpu_time_supported", .call = call_cpu_supported},
    {.fn = "vmt_mx_is_current_thread_cpu_time_supported", .call = call_current_cpu_supported},
    {.fn = "vmt_mx_is_thread_cpu_time_enabled", .call = call_cpu_enabled},
    {.fn = "vmt_mx_set_thread_cpu_time_enabled", .call = call_set_cpu_enabled},
    {.fn = "vmt_mx_get_current_thread_cpu_time", .call = call_current_cpu},
    {.fn = "vmt_mx_get_current_thread_user_time", .call = call_current_user},
    {.fn = "vmt_mx_get_thread_cpu_time", .call = call_thread_cpu, .workers = 2},
    {.fn = "vmt_mx_get_thread_user_time", .call = call_thread_user, .workers = 2},
    {.fn = "vmt_mx_get_thread_cpu_time_array", .call = call_thread_cpu_array, .workers = 2},
    {.fn = "vmt_mx_get_thread_user_time_array", .call = call_thread_user_array, .workers = 2},
    {.fn = "vmt_mx_is_thread_contention_monitoring_supported", .call = call_contention_supported},
    {.fn = "vmt_mx_is_thread_contention_monitoring_enabled", .call = call_contention_enabled},
    {.fn = "vmt_mx_set_thread_contention_monitoring_enabled", .call = call_set_contention, .teardown = contention_off},
    {.fn = "vmt_mx_is_object_monitor_usage_supported", .call = call_monitor_usage},
    {.fn = "vmt_mx_is_synchronizer_usage_supported", .call = call_sync_usage},
    {.fn = "vmt_mx_find_monitor_deadlocked_threads", .call = call_find_monitor_deadlocks, .workers = 2},
    {.fn = "vmt_mx_find_deadlocked_threads", .call = call_find_deadlocks, .workers = 2},
    {.fn = "vmt_mx_is_thread_allocated_memory_supported", .call = call_alloc_supported},
    {.fn = "vmt_mx_is_thread_allocated_memory_enabled", .call = call_alloc_enabled},
    {.fn = "vmt_mx_set_thread_allocated_memory_enabled", .call = call_set_alloc_enabled},
    {.fn = "vmt_mx_get_thread_allocated_bytes", .call = call_alloc_bytes, .workers = 3, .fork_weight = 3},
    {.fn = "vmt_mx_get_thread_allocated_bytes_array", .call = call_alloc_bytes_array, .workers = 3},
    {.fn = "vmt_mx_get_current_thread_allocated_bytes", .call = call_current_alloc_bytes},
    {.fn = "vmt_mx_get_total_thread_allocated_bytes", .call = call_total_alloc_bytes, .workers = 2},
    {.fn = "vmt_mx_get_category_usage", .call = call_category_usage, .workers = 2},
    {.fn = "vmt_mx_category_usage_free", .call = call_category_usage, .workers = 2},
    {.fn = "vmt_mx_get_other_runtime_count", .call = call_other_runtime_count, .workers = 2},
    {.fn = "vmt_mx_print_thread_dump", .call = call_print_dump, .workers = 2},
    {.fn = "vmt_mx_thread_dump_to_string", .call = call_dump_to_string, .workers = 2},
    {.fn = "vmt_mx_print_thread_dump_json", .call = call_print_dump_json, .workers = 2},
    {.fn = "vmt_mx_thread_dump_json_to_string", .call = call_dump_json_to_string, .workers = 2},
    {.fn = "vmt_mx_enable_sigquit_dump", .call = call_sigquit_toggle, .setup = sigquit_off, .teardown = sigquit_on},
    {.fn = "vmt_mx_disable_sigquit_dump", .call = call_sigquit_toggle, .setup = sigquit_off, .teardown = sigquit_on},
    {.fn = "vmt_mx_dump_all_threads_at_safepoint", .call = call_dump_at_safepoint, .workers = 2,
     .setup = walker_on, .teardown = walker_off},
    {.fn = "vmt_mx_find_deadlocked_threads_at_safepoint", .call = call_deadlocks_at_safepoint,
     .workers = 2},
    /* vmthread/vmservices.h */
    {.fn = "vmt_exec_enter", .call = call_exec_enter, .workers = 2},
    {.fn = "vmt_exec_state", .call = call_exec_state},
    {.fn = "vmt_exec_state_name", .call = call_exec_state_name},
    {.fn = "vmt_poll_slow", .call = call_poll_slow, .workers = 2},
    {.fn = "vmt_poll_word", .call = call_poll_word},
    {.fn = "vmt_handshake_run", .call = call_handshake_run, .workers = 3, .teardown = polled_off,
     .fork_weight = 2},
    {.fn = "vmt_handshake_post", .call = call_handshake_post, .workers = 2},
    {.fn = "vmt_handshake_run_all", .call = call_handshake_run_all, .workers = 2},
    {.fn = "vmt_safepoint_begin", .call = call_safepoint, .workers = 2, .fork_weight = 2},
    {.fn = "vmt_safepoint_end", .call = call_safepoint, .workers = 2},
    {.fn = "vmt_safepoint_in_progress", .call = call_safepoint, .workers = 2},
    {.fn = "vmt_thread_suspend", .call = call_suspend_resume, .workers = 2,
     .teardown = suspendee_off, .fork_weight = 2},
    {.fn = "vmt_thread_resume", .call = call_suspend_resume, .workers = 2,
     .teardown = suspendee_off},
    {.fn = "vmt_thread_suspend_count", .call = call_suspend_resume, .workers = 2,
     .teardown = suspendee_off},
    {.fn = "vmt_thread_suspend_all", .call = call_suspend_all, .workers = 2},
    {.fn = "vmt_thread_resume_all", .call = call_suspend_all, .workers = 2},
    /* Not a call: a thread inside the SIGQUIT handler (the dump is on for every row). */
    {.fn = "SIGQUIT handler", .call = call_sigquit_handler, .workers = 2, .fork_weight = 3},
    /* vmthread/profiler.h */
    {.fn = "vmt_prof_start", .call = call_prof_toggle, .workers = 2, .fork_weight = 2},
    {.fn = "vmt_prof_stop", .call = call_prof_toggle, .workers = 2},
    {.fn = "vmt_prof_is_running", .call = call_prof_is_running, .setup = prof_on, .teardown = prof_off},
    {.fn = "vmt_prof_clear", .call = call_prof_clear},
    {.fn = "vmt_prof_lost_cause_name", .call = call_prof_cause_name},
    {.fn = "vmt_prof_get_stats", .call = call_prof_stats, .workers = 2, .setup = prof_on, .teardown = prof_off},
    {.fn = "vmt_prof_get_thread_stats", .call = call_prof_stats, .workers = 2, .setup = prof_on, .teardown = prof_off},
    {.fn = "vmt_prof_set_walker", .call = call_prof_set_walker, .workers = 2},
    {.fn = "vmt_prof_set_thread_excluded", .call = call_prof_exclude, .workers = 2, .setup = prof_on, .teardown = prof_off},
    {.fn = "vmt_prof_write_collapsed", .call = call_prof_collapsed, .workers = 2, .setup = prof_on, .teardown = prof_off},
    {.fn = "vmt_prof_collapsed_to_string", .call = call_prof_collapsed_string, .workers = 2, .setup = prof_on, .teardown = prof_off},
    {.fn = "vmt_prof_write_flamegraph", .call = call_prof_flamegraph, .workers = 2, .setup = prof_on, .teardown = prof_off},
    {.fn = "vmt_prof_write_table", .call = call_prof_table, .workers = 2, .setup = prof_on, .teardown = prof_off},
    {.fn = "vmt_prof_enable_signal_control", .call = call_prof_control_toggle, .workers = 2},
    {.fn = "vmt_prof_disable_signal_control", .call = call_prof_control_toggle, .workers = 2},
    /* Not a call: threads inside the profiler's signal handler. */
    {.fn = "profiler signal handler", .call = call_prof_handler, .workers = 2, .setup = prof_on, .teardown = prof_off, .fork_weight = 3},
};
#define ROW_COUNT (sizeof(rows) / sizeof(rows[0]))

/* ---- The parent ----------------------------------------------------------------------------- */
typedef struct worker {
  const row_t *row;
  int index;
  _Atomic long calls;
  vmt_thread_t *thread;   /* runtime workers */
  pthread_t pthread;      /* foreign workers */
} worker_t;

static void *worker_main(void *arg) {
  worker_t *w = arg;
  while (!atomic_load(&stop_workers)) {
    w->row->call(w->index);
    atomic_fetch_add(&w->calls, 1);
  }
  return NULL;
}

static void *peer_main(void *arg) {
  (void)arg;
  while (!atomic_load(&stop_peer)) vmt_park(0);
  return NULL;
}

/* Waits for the child for at most limit_s seconds; then kills it and answers -1. */
static int wait_child(pid_t pid, int limit_s, int *status) {
  for (int waited_ms = 0; waited_ms < limit_s * 1000; waited_ms++) {
    pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid) return 0;
    if (r < 0) return -1;
    nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
  }
  kill(pid, SIGKILL);
  waitpid(pid, status, 0);
  return -1;
}

static long forks_done;

static void run_row(const row_t *row, int forks) {
  if (row->setup) row->setup();
  int n = row->workers > 0 ? row->workers : 1;
  worker_t workers[4];
  assert_true(n <= 4);
  atomic_store(&stop_workers, false);
  for (int i = 0; i < n; i++) {
    workers[i] = (worker_t){.row = row, .index = i};
    if (row->foreign)
      assert_int_equal(pthread_create(&workers[i].pthread, NULL, worker_main, &workers[i]), 0);
    else
      assert_int_equal(vmt_thread_start(&workers[i].thread, worker_main, &workers[i]), 0);
  }
  for (int i = 0; i < n; i++)
    while (atomic_load(&workers[i].calls) == 0) sched_yield();

  int weight = row->fork_weight > 0 ? row->fork_weight : 1;
  for (int k = 0; k < forks * weight; k++) {
    atomic_store(&stage->line, 0);
    stage->what[0] = '\0';
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) child_checks();
    int status = 0;
    bool hung = wait_child(pid, 30, &status) != 0;
    forks_done++;
    if (hung || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      fail_msg("%s: fork child %d %s at line %d: %s", row->fn, k,
               hung ? "hung (killed after 30 s)"
               : WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? "hung (its alarm fired)"
               : WIFSIGNALED(status) ? "died of a signal"
                                     : "failed a check",
               atomic_load(&stage->line), stage->what);
  }

  atomic_store(&stop_workers, true);
  for (int i = 0; i < n; i++) {
    if (row->foreign) {
      assert_int_equal(pthread_join(workers[i].pthread, NULL), 0);
    } else {
      assert_int_equal(vmt_thread_join(workers[i].thread, NULL), 0);
      assert_int_equal(vmt_thread_release(workers[i].thread), 0);
    }
  }
  if (row->teardown) row->teardown();
  /* The parent is untouched: the shared objects are free again. */
  vmt_monitor_stats_t st;
  assert_int_equal(vmt_monitor_get_stats(mon, &st), 0);
  assert_int_equal(st.owner_id, 0);
  assert_int_equal(st.wait_waiters, 0);
  assert_int_equal(vmt_monitor_try_enter(mon), 0);
  assert_int_equal(vmt_monitor_exit(mon), 0);
  assert_int_equal(vmt_sync_try_lock(sync1), 0);
  assert_int_equal(vmt_sync_unlock(sync1), 0);
}

/* Reads the headers' exports (test/public_functions.txt, one per line). */
static size_t read_exports(char names[][64], size_t cap) {
  FILE *f = fopen("test/public_functions.txt", "r");
  assert_non_null(f);
  size_t n = 0;
  char line[128];
  while (n < cap && fgets(line, sizeof(line), f)) {
    line[strcspn(line, "\n")] = '\0';
    size_t len = strlen(line);
    if (len > 0 && len < 64) memcpy(names[n++], line, len + 1);
  }
  fclose(f);
  return n;
}

static void every_public_function_has_a_row(void **state) {
  (void)state;
  static char names[512][64];
  size_t n = read_exports(names, 512);
  assert_true(n > 50);
  size_t missing = 0;
  for (size_t i = 0; i < n; i++) {
    bool found = false;
    for (size_t r = 0; r < ROW_COUNT && !found; r++) found = strcmp(rows[r].fn, names[i]) == 0;
    if (!found) {
      fprintf(stderr, "public function %s has no row in test/fork_calls_linux_test.c\n",
              names[i]);
      missing++;
    }
  }
  for (size_t r = 0; r < ROW_COUNT; r++) {
    if (strncmp(rows[r].fn, "vmt_", 4) != 0) continue;   /* a place, not a call */
    bool found = false;
    for (size_t i = 0; i < n && !found; i++) found = strcmp(rows[r].fn, names[i]) == 0;
    if (!found) {
      fprintf(stderr, "row %s names no public function\n", rows[r].fn);
      missing++;
    }
  }
  assert_int_equal(missing, 0);
  print_message("%zu public functions, %zu rows\n", n, ROW_COUNT);
}

static void fork_inside_every_public_call(void **state) {
  (void)state;
  vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_NAME, .name = "fork-calls-main"};
  assert_int_equal(vmt_thread_attach(&o, &me), 0);
  assert_int_equal(vmt_monitor_create(&mon, "fork-calls-mon"), 0);
  assert_int_equal(vmt_sync_create(&sync1, "fork-calls-sync"), 0);
  assert_int_equal(vmt_thread_start(&peer, peer_main, NULL), 0);
  devnull = fopen("/dev/null", "w");
  assert_non_null(devnull);
  struct sigaction quit = {.sa_handler = count_quit}, previous;
  sigemptyset(&quit.sa_mask);
  assert_int_equal(sigaction(SIGQUIT, &quit, &previous), 0);
  sigquit_on();
  stage = mmap(NULL, sizeof(*stage), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  assert_true(stage != MAP_FAILED);

  int forks = (int)rel_env_number("VMT_FORKS_PER_CALL", DEFAULT_FORKS);
  const char *only = getenv("VMT_FORK_ROW");   /* one row, to chase a failure */
  for (size_t r = 0; r < ROW_COUNT; r++)
    if (only == NULL || strcmp(only, rows[r].fn) == 0) run_row(&rows[r], forks);

  assert_int_equal(vmt_mx_disable_sigquit_dump(), 0);
  assert_int_equal(sigaction(SIGQUIT, &previous, NULL), 0);
  atomic_store(&stop_peer, true);
  vmt_unpark(peer);
  assert_int_equal(vmt_thread_join(peer, NULL), 0);
  assert_int_equal(vmt_thread_release(peer), 0);
  assert_int_equal(vmt_monitor_destroy(mon), 0);
  assert_int_equal(vmt_sync_destroy(sync1), 0);
  assert_int_equal(vmt_thread_detach(), 0);
  fclose(devnull);
  munmap(stage, sizeof(*stage));
  print_message("%zu rows, %ld fork children checked\n", ROW_COUNT, forks_done);
}

/* The forking thread itself inside a walk: a VM's walker that forks. The walk goes on in both
 * processes; in the child it must end as it began, holding what it held, so that the walker
 * can be replaced afterwards. */
#if CHILD_MAY_ALLOCATE
static _Atomic pid_t walker_child = -1;
static int forking_walker(vmt_thread_t *t, vmt_stack_frame_t *frames, int32_t max, void *ctx) {
  (void)t, (void)ctx;
  if (atomic_load(&walker_child) == -1) {
    fflush(NULL);
    atomic_store(&walker_child, fork());
  }
  if (max < 1) return 0;
  frames[0] = (vmt_stack_frame_t){.function = "forking_walker", .file = NULL, .line = 1, .pc = 0};
  return 1;
}
#endif

static void fork_inside_a_walker(void **state) {
  (void)state;
#if !CHILD_MAY_ALLOCATE
  skip();   /* the walk's copy allocates, in the child: see CHILD_MAY_ALLOCATE */
#else
  vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_NAME, .name = "fork-walker-main"};
  assert_int_equal(vmt_thread_attach(&o, &me), 0);
  vmt_mx_set_stack_walker(forking_walker, NULL);
  vmt_thread_info_t *info = NULL;
  int rc = vmt_mx_get_thread_info(vmt_thread_id(me), 4, &info);
  if (atomic_load(&walker_child) == 0) {
    alarm(20);
    bool ok = rc == 0 && info != NULL && info->frame_count == 1 &&
              strcmp(info->frames[0].function, "forking_walker") == 0;
    vmt_mx_thread_info_free(info);
    vmt_mx_set_stack_walker(NULL, NULL);   /* hangs if the child's walk was not accounted */
    _exit(ok ? 0 : 1);
  }
  assert_int_equal(rc, 0);
  vmt_mx_thread_info_free(info);
  assert_true(atomic_load(&walker_child) > 0);
  int status = 0;
  if (wait_child(atomic_load(&walker_child), 30, &status) != 0)
    fail_msg("the child forked inside a walker hung");
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  vmt_mx_set_stack_walker(NULL, NULL);
  assert_int_equal(vmt_thread_detach(), 0);
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_public_function_has_a_row),
      cmocka_unit_test(fork_inside_every_public_call),
      cmocka_unit_test(fork_inside_a_walker),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
