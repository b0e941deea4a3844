/*
 * test/thread_api_test.c: the java.lang.Thread parts of vmthread/thread.h beyond the life cycle,
 * through the public API: start and exit hooks (JVMTI ThreadStart / ThreadEnd: on the thread
 * itself, when it is current and listed, before the body and before the TLS destructors, in
 * order, for started and attached threads and every way out; removal waits for calls in
 * progress, refuses to run from a hook), rename (the full name, the kernel name only for a
 * started thread renaming itself, copies that race with renames), priority, holdsLock, and the
 * park blocker (LockSupport.park(blocker): ThreadInfo's lock and its owner, the dump's line).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "test/monitor_util.h"
#include "test/thread_util.h"
#include "vmthread.h"

/* ---- Hooks ------------------------------------------------------------------------------ */
#define EVENTS_MAX 64
typedef struct event {
  char what;             /* 'S' start, 'E' exit, 'B' body, 'D' TLS destructor */
  char hook;             /* 'a' or 'b' */
  vmt_thread_t *thread;  /* the record passed to the hook */
  vmt_thread_t *current; /* vmt_thread_current() when it ran */
  bool listed;           /* its id was in vmt_mx_get_thread_info */
  int holds;             /* vmt_monitor_holds_lock(held) at that moment */
} event_t;

static pthread_mutex_t events_lock = PTHREAD_MUTEX_INITIALIZER;
static event_t events[EVENTS_MAX];
static int nevents;
static vmt_monitor_t *held;   /* a monitor the body enters and never leaves */
static vmt_tls_key_t tls_key;

static void log_event(char what, char hook, vmt_thread_t *t) {
  vmt_thread_info_t *info = NULL;
  bool listed = t && vmt_mx_get_thread_info(vmt_thread_id(t), 0, &info) == 0 && info != NULL;
  vmt_mx_thread_info_free(info);
  int h = held ? vmt_monitor_holds_lock(held) : 0;
  pthread_mutex_lock(&events_lock);
  if (nevents < EVENTS_MAX)
    events[nevents++] = (event_t){what, hook, t, vmt_thread_current(), listed, h};
  pthread_mutex_unlock(&events_lock);
}

static void reset_events(void) {
  pthread_mutex_lock(&events_lock);
  nevents = 0;
  pthread_mutex_unlock(&events_lock);
}

/* The events as a string, "Sa Sb B Eb Ea D" style (what + hook). */
static const char *event_string(char *buf, size_t len) {
  pthread_mutex_lock(&events_lock);
  size_t n = 0;
  buf[0] = '\0';
  for (int i = 0; i < nevents && n + 4 < len; i++)
    n += (size_t)snprintf(buf + n, len - n, "%s%c%c", i ? " " : "", events[i].what,
                          events[i].hook);
  pthread_mutex_unlock(&events_lock);
  return buf;
}

static void start_a(vmt_thread_t *t, void *ctx) {
  (void)ctx;
  log_event('S', 'a', t);
}
static void exit_a(vmt_thread_t *t, void *ctx) {
  (void)ctx;
  log_event('E', 'a', t);
}
static void start_b(vmt_thread_t *t, void *ctx) {
  (void)ctx;
  log_event('S', 'b', t);
}
static void exit_b(vmt_thread_t *t, void *ctx) {
  (void)ctx;
  log_event('E', 'b', t);
}
static void destructor(void *v) {
  (void)v;
  log_event('D', '-', vmt_thread_current());
}

enum { OUT_RETURN, OUT_EXIT, OUT_CANCEL };
typedef struct body_arg {
  int how;
  pthread_t self;
  latch_t ready, go;
} body_arg_t;

static void *hooked_body(void *arg) {
  body_arg_t *b = arg;
  log_event('B', '-', vmt_thread_current());
  vmt_tls_set(tls_key, b);
  vmt_monitor_enter(held);   /* never left: the runtime releases it after the exit hooks */
  b->self = pthread_self();
  latch_open(&b->ready);
  /* Not cancelled inside the latch's condition wait (it would keep the latch's mutex). */
  int old_state;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old_state);
  latch_wait(&b->go);
  pthread_setcancelstate(old_state, NULL);
  if (b->how == OUT_CANCEL)
    for (;;) pthread_testcancel();
  if (b->how == OUT_EXIT) vmt_thread_exit(NULL);
  return NULL;
}

static void check_started(int how) {
  reset_events();
  body_arg_t b = {.how = how};
  latch_init(&b.ready);
  latch_init(&b.go);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, hooked_body, &b), 0);
  latch_wait(&b.ready);
  latch_open(&b.go);
  if (how == OUT_CANCEL) assert_int_equal(pthread_cancel(b.self), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  char buf[128];
  assert_string_equal(event_string(buf, sizeof(buf)), "Sa Sb B- Eb Ea D-");
  for (int i = 0; i < nevents; i++) {
    assert_ptr_equal(events[i].thread, t);
    assert_ptr_equal(events[i].current, t);   /* on the thread itself */
  }
  /* Start hooks find it counted live (it counts itself if its creator has not yet: start never
   * waits for the child); exit hooks and destructors run before it leaves the registry. */
  for (int i = 0; i < nevents; i++) assert_true(events[i].listed);
  assert_int_equal(events[3].holds, 1);   /* exit hooks: its locks are still its own */
  assert_int_equal(events[4].holds, 1);
  assert_int_equal(vmt_thread_release(t), 0);
  latch_destroy(&b.ready);
  latch_destroy(&b.go);
}

static int hooks_setup(void **state) {
  (void)state;
  if (vmt_monitor_create(&held, "held") != 0) return -1;
  if (vmt_tls_key_create(&tls_key, destructor) != 0) return -1;
  if (vmt_thread_hooks_add(start_a, exit_a, NULL) != 0) return -1;
  return vmt_thread_hooks_add(start_b, exit_b, &held);
}

static int hooks_teardown(void **state) {
  (void)state;
  vmt_thread_hooks_remove(start_b, exit_b, &held);
  vmt_thread_hooks_remove(start_a, exit_a, NULL);
  vmt_tls_key_delete(tls_key);
  int rc = vmt_monitor_destroy(held);
  held = NULL;
  return rc;
}

static void hooks_run_in_order_when_a_thread_returns(void **state) {
  (void)state;
  check_started(OUT_RETURN);
}

static void hooks_run_when_a_thread_exits(void **state) {
  (void)state;
  check_started(OUT_EXIT);
}

static void hooks_run_when_a_thread_is_cancelled(void **state) {
  (void)state;
  check_started(OUT_CANCEL);
}

static void *attach_twice_then(void *arg) {
  bool end_attached = *(bool *)arg;
  vmt_thread_t *self;
  vmt_thread_attach(NULL, &self);
  vmt_thread_attach(NULL, &self);   /* nested: no second start */
  vmt_thread_detach();              /* not the last: no exit */
  log_event('B', '-', self);
  if (!end_attached) vmt_thread_detach();
  return NULL;
}

static void hooks_run_for_attached_threads(void **state) {
  (void)state;
  for (int end_attached = 0; end_attached <= 1; end_attached++) {
    reset_events();
    bool arg = end_attached;
    pthread_t p;
    assert_int_equal(pthread_create(&p, NULL, attach_twice_then, &arg), 0);
    assert_int_equal(pthread_join(p, NULL), 0);
    char buf[128];
    assert_string_equal(event_string(buf, sizeof(buf)), "Sa Sb B- Eb Ea");
    for (int i = 0; i < nevents; i++) {
      assert_ptr_equal(events[i].current, events[0].thread);
      assert_true(events[i].listed);
    }
  }
}

/* A hook added while a thread runs: that thread runs its exit hook, not its start hook. */
static void exit_c(vmt_thread_t *t, void *ctx) {
  (void)ctx;
  log_event('E', 'c', t);
}

static void hook_added_later_runs_at_exit_only(void **state) {
  (void)state;
  assert_int_equal(hooks_teardown(NULL), 0);
  latch_t go;
  latch_init(&go);
  reset_events();
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, wait_for_latch, &go), 0);
  assert_int_equal(vmt_thread_hooks_add(NULL, exit_c, NULL), 0);
  latch_open(&go);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  char buf[64];
  assert_string_equal(event_string(buf, sizeof(buf)), "Ec");
  assert_int_equal(vmt_thread_hooks_remove(NULL, exit_c, NULL), 0);
  assert_int_equal(vmt_thread_release(t), 0);
  latch_destroy(&go);
  assert_int_equal(hooks_setup(NULL), 0);
}

/* ---- Removal waits for calls in progress; errors ---------------------------------------- */
static latch_t in_hook, leave_hook;
static _Atomic int remove_rc = 1;

static void blocking_exit(vmt_thread_t *t, void *ctx) {
  (void)t;
  (void)ctx;
  remove_rc = vmt_thread_hooks_remove(NULL, blocking_exit, NULL);   /* from a hook */
  latch_open(&in_hook);
  latch_wait(&leave_hook);
}

typedef struct remover {
  _Atomic bool returned;
  int rc;
} remover_t;

static void *remove_blocking(void *arg) {
  remover_t *r = arg;
  r->rc = vmt_thread_hooks_remove(NULL, blocking_exit, NULL);
  atomic_store(&r->returned, true);
  return NULL;
}

static void remove_waits_for_calls_in_progress(void **state) {
  (void)state;
  latch_init(&in_hook);
  latch_init(&leave_hook);
  assert_int_equal(vmt_thread_hooks_add(NULL, blocking_exit, NULL), 0);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, return_arg, NULL), 0);
  latch_wait(&in_hook);
  assert_int_equal(atomic_load(&remove_rc), -EDEADLK);
  remover_t r = {.rc = 1};
  pthread_t p;
  assert_int_equal(pthread_create(&p, NULL, remove_blocking, &r), 0);
  /* The hook is still running: remove must not have returned. Give it every chance to. */
  for (int i = 0; i < 20; i++) {
    mu_pause_1ms();
    assert_false(atomic_load(&r.returned));
  }
  latch_open(&leave_hook);
  assert_int_equal(pthread_join(p, NULL), 0);
  assert_int_equal(r.rc, 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(vmt_thread_release(t), 0);
  latch_destroy(&in_hook);
  latch_destroy(&leave_hook);
}

static void hook_errors(void **state) {
  (void)state;
  assert_int_equal(vmt_thread_hooks_add(NULL, NULL, NULL), -EINVAL);
  assert_int_equal(vmt_thread_hooks_remove(start_a, NULL, NULL), -ENOENT);
  assert_int_equal(vmt_thread_hooks_remove(start_a, exit_a, &held), -ENOENT);   /* ctx differs */
  int added = 0;
  char ctx[VMT_THREAD_HOOKS_MAX];
  while (vmt_thread_hooks_add(start_a, NULL, &ctx[added]) == 0) added++;
  assert_int_equal(added, VMT_THREAD_HOOKS_MAX - 2);   /* the group's two are registered */
  assert_int_equal(vmt_thread_hooks_add(start_a, NULL, ctx), -EAGAIN);
  for (int i = 0; i < added; i++)
    assert_int_equal(vmt_thread_hooks_remove(start_a, NULL, &ctx[i]), 0);
}

/* ---- Rename and priority ---------------------------------------------------------------- */
static void kernel_name(char *buf, size_t len) {
  assert_int_equal(pthread_getname_np(pthread_self(), buf, len), 0);
}

typedef struct rename_probe {
  latch_t renamed_self, renamed_by_other;
  char kernel_after_self[16], kernel_after_other[16];
  int rc;
} rename_probe_t;

static void *rename_self(void *arg) {
  rename_probe_t *r = arg;
  r->rc = vmt_thread_set_name(vmt_thread_current(), "worker \xc3\xa9t\xc3\xa9 number one");
  kernel_name(r->kernel_after_self, sizeof(r->kernel_after_self));
  latch_open(&r->renamed_self);
  latch_wait(&r->renamed_by_other);
  kernel_name(r->kernel_after_other, sizeof(r->kernel_after_other));
  return NULL;
}

static void rename_changes_the_name_and_the_own_kernel_name(void **state) {
  (void)state;
  rename_probe_t r;
  memset(&r, 0, sizeof(r));
  latch_init(&r.renamed_self);
  latch_init(&r.renamed_by_other);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, rename_self, &r), 0);
  latch_wait(&r.renamed_self);
  assert_int_equal(r.rc, 0);
  /* 15 bytes, cut before the two-byte character that would straddle the limit. */
  assert_string_equal(r.kernel_after_self, "worker \xc3\xa9t\xc3\xa9 nu");
  assert_string_equal(vmt_thread_os_name(t), "worker \xc3\xa9t\xc3\xa9 nu");
  char buf[64];
  assert_int_equal(vmt_thread_get_name(t, buf, sizeof(buf)),
                   (int)strlen("worker \xc3\xa9t\xc3\xa9 number one"));
  assert_string_equal(buf, "worker \xc3\xa9t\xc3\xa9 number one");
  /* Renamed by another thread: the full name changes, the kernel's does not. */
  assert_int_equal(vmt_thread_set_name(t, "renamed-from-outside"), 0);
  latch_open(&r.renamed_by_other);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_string_equal(r.kernel_after_other, "worker \xc3\xa9t\xc3\xa9 nu");
  assert_string_equal(vmt_thread_name(t), "renamed-from-outside");
  assert_string_equal(vmt_thread_os_name(t), "worker \xc3\xa9t\xc3\xa9 nu");
  /* Truncated copies say how long the name is. */
  char small[5];
  assert_int_equal(vmt_thread_get_name(t, small, sizeof(small)), 20);
  assert_string_equal(small, "rena");
  assert_int_equal(vmt_thread_get_name(t, NULL, 0), 20);
  assert_int_equal(vmt_thread_get_name(t, NULL, 4), -EINVAL);
  assert_int_equal(vmt_thread_get_name(NULL, buf, sizeof(buf)), -EINVAL);
  /* Terminated threads can be renamed too (Java allows it). */
  assert_int_equal(vmt_thread_set_name(t, "after-the-end"), 0);
  assert_string_equal(vmt_thread_name(t), "after-the-end");
  assert_int_equal(vmt_thread_release(t), 0);
  latch_destroy(&r.renamed_self);
  latch_destroy(&r.renamed_by_other);
}

static void *attached_renames_itself(void *arg) {
  char *kernel_after = arg;
  char before[16];
  kernel_name(before, sizeof(before));
  vmt_thread_t *self;
  vmt_thread_attach(NULL, &self);
  vmt_thread_set_name(self, "attached-renamed");
  kernel_name(kernel_after, 16);
  if (strcmp(before, kernel_after) != 0) kernel_after[0] = '!';
  if (strcmp(vmt_thread_name(self), "attached-renamed") != 0) kernel_after[0] = '?';
  vmt_thread_detach();
  return NULL;
}

static void attached_rename_leaves_the_kernel_name(void **state) {
  (void)state;
  char after[16] = {0};
  pthread_t p;
  assert_int_equal(pthread_create(&p, NULL, attached_renames_itself, after), 0);
  assert_int_equal(pthread_join(p, NULL), 0);
  assert_true(after[0] != '!' && after[0] != '?');
}

static void bad_names_and_priorities_are_refused(void **state) {
  (void)state;
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, return_arg, NULL), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(vmt_thread_set_name(NULL, "x"), -EINVAL);
  assert_int_equal(vmt_thread_set_name(t, NULL), -EINVAL);
  assert_int_equal(vmt_thread_set_name(t, ""), -EINVAL);
  assert_int_equal(vmt_thread_set_name(t, "bad \xc0\xaf utf-8"), -EINVAL);   /* overlong */
  static char too_long[VMT_THREAD_NAME_MAX + 2];
  memset(too_long, 'n', sizeof(too_long) - 1);
  assert_int_equal(vmt_thread_set_name(t, too_long), -EINVAL);
  too_long[VMT_THREAD_NAME_MAX] = '\0';
  assert_int_equal(vmt_thread_set_name(t, too_long), 0);   /* exactly the maximum */
  assert_int_equal(strlen(vmt_thread_name(t)), VMT_THREAD_NAME_MAX);
  assert_int_equal(vmt_thread_set_priority(t, 0), -EINVAL);
  assert_int_equal(vmt_thread_set_priority(t, 11), -EINVAL);
  assert_int_equal(vmt_thread_set_priority(NULL, 5), -EINVAL);
  assert_int_equal(vmt_thread_set_priority(t, VMT_THREAD_MAX_PRIORITY), 0);
  assert_int_equal(vmt_thread_priority(t), VMT_THREAD_MAX_PRIORITY);
  assert_int_equal(vmt_thread_release(t), 0);
}

static void thread_info_shows_the_new_name_and_priority(void **state) {
  (void)state;
  latch_t go;
  latch_init(&go);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, wait_for_latch, &go), 0);
  assert_int_equal(vmt_thread_set_name(t, "seen-by-management"), 0);
  assert_int_equal(vmt_thread_set_priority(t, 2), 0);
  vmt_thread_info_t *info = NULL;
  assert_int_equal(vmt_mx_get_thread_info(vmt_thread_id(t), 0, &info), 0);
  assert_non_null(info);
  assert_string_equal(info->name, "seen-by-management");
  assert_int_equal(info->priority, 2);
  vmt_mx_thread_info_free(info);
  latch_open(&go);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(vmt_thread_release(t), 0);
  latch_destroy(&go);
}

/* Readers copy while another thread renames in a loop: every copy is one of the names (the
 * sanitizers check that no reader touches a freed name). */
typedef struct rename_race {
  vmt_thread_t *target;
  _Atomic bool stop;
} rename_race_t;

static const char *const race_names[] = {"alpha", "beta-beta", "gamma-gamma-gamma"};

static void *rename_loop(void *arg) {
  rename_race_t *r = arg;
  for (int i = 0; !atomic_load(&r->stop); i++) vmt_thread_set_name(r->target, race_names[i % 3]);
  return NULL;
}

static void renames_race_with_readers(void **state) {
  (void)state;
  latch_t go;
  latch_init(&go);
  rename_race_t r = {0};
  assert_int_equal(vmt_thread_start(&r.target, wait_for_latch, &go), 0);
  assert_int_equal(vmt_thread_set_name(r.target, race_names[0]), 0);
  pthread_t p;
  assert_int_equal(pthread_create(&p, NULL, rename_loop, &r), 0);
  for (int i = 0; i < 2000; i++) {
    char buf[64];
    vmt_thread_get_name(r.target, buf, sizeof(buf));
    vmt_thread_info_t *info = NULL;
    assert_int_equal(vmt_mx_get_thread_info(vmt_thread_id(r.target), 0, &info), 0);
    bool known_copy = false, known_info = false;
    for (int k = 0; k < 3; k++) {
      known_copy |= strcmp(buf, race_names[k]) == 0;
      known_info |= strcmp(info->name, race_names[k]) == 0;
    }
    vmt_mx_thread_info_free(info);
    assert_true(known_copy && known_info);
  }
  atomic_store(&r.stop, true);
  assert_int_equal(pthread_join(p, NULL), 0);
  latch_open(&go);
  assert_int_equal(vmt_thread_join(r.target, NULL), 0);
  assert_int_equal(vmt_thread_release(r.target), 0);
  latch_destroy(&go);
}

/* ---- holdsLock -------------------------------------------------------------------------- */
typedef struct owner_arg {
  vmt_monitor_t *m;
  vmt_sync_t *s;
  latch_t owns, release;
} owner_arg_t;

static void *own_both(void *arg) {
  owner_arg_t *o = arg;
  vmt_monitor_enter(o->m);
  vmt_sync_lock(o->s);
  latch_open(&o->owns);
  latch_wait(&o->release);
  vmt_sync_unlock(o->s);
  vmt_monitor_exit(o->m);
  return NULL;
}

static void holds_lock_answers_for_the_calling_thread(void **state) {
  (void)state;
  vmt_monitor_t *m;
  vmt_sync_t *s;
  assert_int_equal(vmt_monitor_create(&m, "m"), 0);
  assert_int_equal(vmt_sync_create(&s, "s"), 0);
  assert_int_equal(vmt_monitor_holds_lock(m), 0);
  assert_int_equal(vmt_sync_holds_lock(s), 0);
  assert_int_equal(vmt_monitor_enter(m), 0);
  assert_int_equal(vmt_monitor_enter(m), 0);
  assert_int_equal(vmt_monitor_holds_lock(m), 1);
  assert_int_equal(vmt_monitor_exit(m), 0);
  assert_int_equal(vmt_monitor_holds_lock(m), 1);   /* still one level */
  assert_int_equal(vmt_monitor_exit(m), 0);
  assert_int_equal(vmt_monitor_holds_lock(m), 0);
  assert_int_equal(vmt_sync_lock(s), 0);
  assert_int_equal(vmt_sync_holds_lock(s), 1);
  assert_int_equal(vmt_sync_unlock(s), 0);
  /* Owned by another thread: not ours. */
  owner_arg_t o = {.m = m, .s = s};
  latch_init(&o.owns);
  latch_init(&o.release);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, own_both, &o), 0);
  latch_wait(&o.owns);
  assert_int_equal(vmt_monitor_holds_lock(m), 0);
  assert_int_equal(vmt_sync_holds_lock(s), 0);
  latch_open(&o.release);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(vmt_thread_release(t), 0);
  /* Bad handles: NULL, the other kind, destroyed. */
  assert_int_equal(vmt_monitor_holds_lock(NULL), -EINVAL);
  assert_int_equal(vmt_sync_holds_lock(NULL), -EINVAL);
  assert_int_equal(vmt_monitor_holds_lock((vmt_monitor_t *)s), -EINVAL);
  assert_int_equal(vmt_sync_holds_lock((vmt_sync_t *)m), -EINVAL);
  assert_int_equal(vmt_monitor_destroy(m), 0);
  assert_int_equal(vmt_sync_destroy(s), 0);
  assert_int_equal(vmt_monitor_holds_lock(m), -EINVAL);
  assert_int_equal(vmt_sync_holds_lock(s), -EINVAL);
  latch_destroy(&o.owns);
  latch_destroy(&o.release);
}

/* ---- Park blocker ------------------------------------------------------------------------ */
#define AQS_CLASS "java.util.concurrent.locks.ReentrantLock$NonfairSync"

typedef struct parker {
  int64_t owner;
  int rc_set, rc_long;
  latch_t parked_once;
} parker_t;

static void *park_with_blocker(void *arg) {
  parker_t *p = arg;
  vmt_park_blocker_t b = {.class_name = AQS_CLASS, .identity_hash = 0x1b6d3586,
                          .owner_id = p->owner};
  p->rc_set = vmt_thread_set_park_blocker(&b);
  vmt_park(0);   /* unparked by the test after it looked */
  /* Not parking: the blocker set is no lock. Then a class name too long, cut. */
  latch_open(&p->parked_once);
  char long_name[200];
  memset(long_name, 'x', sizeof(long_name));
  memcpy(long_name + 126, "\xc3\xa9", 2);   /* a 2-byte character across the 127-byte limit */
  long_name[sizeof(long_name) - 1] = '\0';
  b.class_name = long_name;
  b.owner_id = 0;
  p->rc_long = vmt_thread_set_park_blocker(&b);
  vmt_park(0);
  vmt_thread_set_park_blocker(NULL);
  vmt_park(0);   /* no blocker: no lock */
  return NULL;
}

static vmt_thread_info_t *info_of(vmt_thread_t *t) {
  vmt_thread_info_t *info = NULL;
  assert_int_equal(vmt_mx_get_thread_info(vmt_thread_id(t), 0, &info), 0);
  assert_non_null(info);
  return info;
}

static void wait_waiting(vmt_thread_t *t) {
  MU_POLL_UNTIL(vmt_thread_state(t) == VMT_THREAD_WAITING, "WAITING");
}

static void park_blocker_is_the_lock_of_a_parked_thread(void **state) {
  (void)state;
  vmt_thread_t *self;
  assert_int_equal(vmt_thread_attach(NULL, &self), 0);   /* the blocker's owner */
  parker_t p = {.owner = vmt_thread_id(self)};
  latch_init(&p.parked_once);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, park_with_blocker, &p), 0);
  wait_waiting(t);
  vmt_thread_info_t *info = info_of(t);
  assert_non_null(info->lock);
  assert_string_equal(info->lock->class_name, AQS_CLASS);
  assert_string_equal(info->lock->name, AQS_CLASS "@1b6d3586");
  assert_int_equal(info->lock->identity_hash, 0x1b6d3586);
  assert_int_equal(info->lock_owner_id, vmt_thread_id(self));
  assert_string_equal(info->lock_owner_name, vmt_thread_name(self));
  vmt_mx_thread_info_free(info);
  char *dump = NULL;
  size_t len = 0;
  assert_int_equal(vmt_mx_thread_dump_to_string(&dump, &len), 0);
  assert_non_null(strstr(dump, "- parking to wait for <" AQS_CLASS "@1b6d3586> (a " AQS_CLASS ") (owned by"));
  free(dump);
  assert_int_equal(p.rc_set, 0);
  vmt_unpark(t);
  latch_wait(&p.parked_once);
  wait_waiting(t);
  info = info_of(t);
  assert_non_null(info->lock);
  assert_int_equal(strlen(info->lock->class_name), 126);   /* cut before the character */
  assert_int_equal(info->lock_owner_id, -1);
  vmt_mx_thread_info_free(info);
  assert_int_equal(p.rc_long, 0);
  vmt_unpark(t);
  /* The third park has no blocker: wait until the thread is in it (its blocked state with no
   * lock), then look. */
  for (int tries = 0;; tries++) {
    info = info_of(t);
    bool none = info->state == VMT_THREAD_WAITING && info->lock == NULL;
    vmt_mx_thread_info_free(info);
    if (none) break;
    if (tries > 10000) fail_msg("the blocker was not cleared");
    mu_pause_1ms();
  }
  vmt_unpark(t);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(vmt_thread_release(t), 0);
  latch_destroy(&p.parked_once);
  /* Bad input. */
  vmt_park_blocker_t bad = {.class_name = NULL};
  assert_int_equal(vmt_thread_set_park_blocker(&bad), -EINVAL);
  bad.class_name = "x";
  bad.owner_id = -3;
  assert_int_equal(vmt_thread_set_park_blocker(&bad), -EINVAL);
  assert_int_equal(vmt_thread_set_park_blocker(NULL), 0);
  assert_int_equal(vmt_thread_detach(), 0);
  assert_int_equal(vmt_thread_set_park_blocker(NULL), -EPERM);
}

int main(void) {
  const struct CMUnitTest hook_tests[] = {
      cmocka_unit_test(hooks_run_in_order_when_a_thread_returns),
      cmocka_unit_test(hooks_run_when_a_thread_exits),
      cmocka_unit_test(hooks_run_when_a_thread_is_cancelled),
      cmocka_unit_test(hooks_run_for_attached_threads),
      cmocka_unit_test(hook_added_later_runs_at_exit_only),
      cmocka_unit_test(remove_waits_for_calls_in_progress),
      cmocka_unit_test(hook_errors),
  };
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(rename_changes_the_name_and_the_own_kernel_name),
      cmocka_unit_test(attached_rename_leaves_the_kernel_name),
      cmocka_unit_test(bad_names_and_priorities_are_refused),
      cmocka_unit_test(thread_info_shows_the_new_name_and_priority),
      cmocka_unit_test(renames_race_with_readers),
      cmocka_unit_test(holds_lock_answers_for_the_calling_thread),
      cmocka_unit_test(park_blocker_is_the_lock_of_a_parked_thread),
  };
  int failed = cmocka_run_group_tests_name("hooks", hook_tests, hooks_setup, hooks_teardown);
  return failed + cmocka_run_group_tests_name("thread", tests, NULL, NULL);
}
