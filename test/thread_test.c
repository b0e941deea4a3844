/*
 * test/thread_test.c: the public thread API (include/vmthread/thread.h): start, join, exit,
 * cancellation, tid before the child ran, states, names, options, attach/detach, references.
 * Counters, the registry and injected failures are in thread_internal_test.c.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "test/thread_util.h"
#include "vmthread.h"

/* ---- start / join ---------------------------------------------------------------------- */
static void start_join_returns_the_result(void **state) {
  (void)state;
  vmt_thread_t *t;
  int token;
  assert_int_equal(vmt_thread_start(&t, return_arg, &token), 0);
  assert_true(vmt_thread_id(t) > 0);
  void *result = NULL;
  assert_int_equal(vmt_thread_join(t, &result), 0);
  assert_ptr_equal(result, &token);
  assert_int_equal(vmt_thread_state(t), VMT_THREAD_TERMINATED);
  assert_int_equal(vmt_thread_release(t), 0);
}

static void ids_are_unique_and_increasing(void **state) {
  (void)state;
  int64_t last = 0;
  for (int i = 0; i < 20; i++) {
    vmt_thread_t *t;
    assert_int_equal(vmt_thread_start(&t, return_arg, NULL), 0);
    assert_true(vmt_thread_id(t) > last);
    last = vmt_thread_id(t);
    assert_int_equal(vmt_thread_join(t, NULL), 0);
    assert_int_equal(vmt_thread_release(t), 0);
  }
}

static void bad_arguments_are_refused(void **state) {
  (void)state;
  vmt_thread_t *t = (vmt_thread_t *)&t;
  assert_int_equal(vmt_thread_start(NULL, return_arg, NULL), -EINVAL);
  assert_int_equal(vmt_thread_start(&t, NULL, NULL), -EINVAL);
  assert_null(t);
  assert_int_equal(vmt_thread_join(NULL, NULL), -EINVAL);
  assert_int_equal(vmt_thread_release(NULL), -EINVAL);
  assert_int_equal(vmt_thread_retain(NULL), -EINVAL);
  assert_int_equal(vmt_thread_tid(NULL), -EINVAL);
  assert_int_equal(vmt_thread_id(NULL), -1);
  assert_null(vmt_thread_name(NULL));
  assert_null(vmt_thread_os_name(NULL));
  assert_null(vmt_thread_category(NULL));
  assert_false(vmt_thread_is_daemon(NULL));
  assert_int_equal(vmt_thread_priority(NULL), -1);
  assert_int_equal(vmt_thread_attach(NULL, NULL), -EINVAL);
}

/* ---- tid ------------------------------------------------------------------------------- */
typedef struct tid_probe {
  latch_t go;
  pid_t seen;
} tid_probe_t;

static void *report_tid_after_gate(void *arg) {
  tid_probe_t *p = arg;
  latch_wait(&p->go);
  p->seen = (pid_t)syscall(SYS_gettid);
  return NULL;
}

static void tid_is_known_before_the_child_runs(void **state) {
  (void)state;
  tid_probe_t p;
  latch_init(&p.go);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, report_tid_after_gate, &p), 0);
  /* The child is parked before it could report anything; the tid must already be right. */
  pid_t tid = vmt_thread_tid(t);
  assert_true(tid > 0);
  assert_int_not_equal(tid, (pid_t)syscall(SYS_gettid));
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/task/%d", (int)tid);
  assert_int_equal(access(path, F_OK), 0);
  latch_open(&p.go);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(p.seen, tid);
  assert_int_equal(vmt_thread_tid(t), tid);  /* still answers after the end */
  assert_int_equal(vmt_thread_release(t), 0);
  latch_destroy(&p.go);
}

/* ---- join semantics -------------------------------------------------------------------- */
static vmt_thread_t *volatile self_join_target;
static void *join_self(void *arg) {
  (void)arg;
  return (void *)(intptr_t)vmt_thread_join(vmt_thread_current(), NULL);
}

static void join_refuses_self_and_second_join(void **state) {
  (void)state;
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, join_self, NULL), 0);
  void *result;
  assert_int_equal(vmt_thread_join(t, &result), 0);
  assert_int_equal((int)(intptr_t)result, -EDEADLK);
  assert_int_equal(vmt_thread_join(t, &result), -EALREADY);
  assert_int_equal(vmt_thread_release(t), 0);
}

static void concurrent_joins_get_one_success(void **state) {
  (void)state;
  latch_t l;
  latch_init(&l);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, wait_for_latch, &l), 0);
  joiner_t j[3];
  pthread_t th[3];
  for (int i = 0; i < 3; i++) {
    j[i] = (joiner_t){.target = t, .rc = 1};
    assert_int_equal(pthread_create(&th[i], NULL, join_target, &j[i]), 0);
  }
  latch_open(&l);
  int ok = 0, already = 0;
  for (int i = 0; i < 3; i++) {
    pthread_join(th[i], NULL);
    ok += j[i].rc == 0;
    already += j[i].rc == -EALREADY;
  }
  assert_int_equal(ok, 1);
  assert_int_equal(already, 2);
  assert_int_equal(vmt_thread_release(t), 0);
  latch_destroy(&l);
}

static void released_handles_are_refused(void **state) {
  (void)state;
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, return_arg, NULL), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(vmt_thread_release(t), 0);
  /* The record is back in the runtime's pool (or about to be): never freed memory. */
  assert_int_equal(vmt_thread_release(t), -EINVAL);
  assert_int_equal(vmt_thread_join(t, NULL), -EINVAL);
  assert_int_equal(vmt_thread_retain(t), -EINVAL);
}

static void retain_keeps_the_record(void **state) {
  (void)state;
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, return_arg, NULL), 0);
  assert_int_equal(vmt_thread_retain(t), 0);
  assert_int_equal(vmt_thread_release(t), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);   /* still one reference */
  assert_int_equal(vmt_thread_id(t) > 0, true);
  assert_int_equal(vmt_thread_release(t), 0);
  assert_int_equal(vmt_thread_release(t), -EINVAL);
}

static void release_before_the_end_leaves_the_thread_running(void **state) {
  (void)state;
  /* Static: the released thread may still be inside latch_wait() when this test returns, so
   * the latch must outlive the test (and is never destroyed under it). */
  static latch_t g;
  latch_init(&g);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, wait_for_latch, &g), 0);
  assert_int_equal(vmt_thread_release(t), 0);
  latch_open(&g);
  /* The thread ends on its own; the runtime keeps working. (That its pthread is detached, so
   * that glibc frees the stack, no leak check sees: thread_internal_test measures it.) */
  vmt_thread_t *u;
  assert_int_equal(vmt_thread_start(&u, return_arg, NULL), 0);
  assert_int_equal(vmt_thread_join(u, NULL), 0);
  assert_int_equal(vmt_thread_release(u), 0);
  assert_int_equal(vmt_thread_release(t), -EINVAL);  /* no reference left to drop */
}

/* ---- exit and cancellation ------------------------------------------------------------- */
static void *exit_early(void *arg) {
  vmt_thread_exit(arg);
  return NULL;  /* not reached */
}

static void explicit_exit_gives_its_result(void **state) {
  (void)state;
  vmt_thread_t *t;
  int token;
  assert_int_equal(vmt_thread_start(&t, exit_early, &token), 0);
  void *result = NULL;
  assert_int_equal(vmt_thread_join(t, &result), 0);
  assert_ptr_equal(result, &token);
  assert_int_equal(vmt_thread_state(t), VMT_THREAD_TERMINATED);
  assert_int_equal(vmt_thread_release(t), 0);
  /* Not a runtime thread. */
  assert_int_equal(vmt_thread_exit(NULL), -EPERM);
}

typedef struct cancel_probe {
  latch_t started;
  pthread_t self;
} cancel_probe_t;

static void *wait_to_be_cancelled(void *arg) {
  cancel_probe_t *p = arg;
  p->self = pthread_self();
  latch_open(&p->started);
#ifndef __SANITIZE_THREAD__
  for (;;) pause();  /* cancelled inside a blocking call, the common case */
#else
  /* TSan runs the cleanup handlers of a thread cancelled inside an intercepted blocking call
   * (pause, sleep) with its interceptors still disabled, so it misses the exit path's mutexes
   * and reports races that are not there (google/sanitizers#646). Here the cancellation is
   * taken at a cancellation point outside any interceptor. */
  for (;;) pthread_testcancel();
#endif
  return NULL;
}

static void cancellation_runs_the_exit_path(void **state) {
  (void)state;
  cancel_probe_t p;
  latch_init(&p.started);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, wait_to_be_cancelled, &p), 0);
  latch_wait(&p.started);
  assert_int_equal(pthread_cancel(p.self), 0);
  void *result = NULL;
  assert_int_equal(vmt_thread_join(t, &result), 0);
  assert_ptr_equal(result, PTHREAD_CANCELED);
  assert_int_equal(vmt_thread_state(t), VMT_THREAD_TERMINATED);
  assert_int_equal(vmt_thread_release(t), 0);
  latch_destroy(&p.started);
}

/* ---- states ---------------------------------------------------------------------------- */
static void states_and_their_names(void **state) {
  (void)state;
  latch_t g;
  latch_init(&g);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, wait_for_latch, &g), 0);
  assert_int_equal(vmt_thread_state(t), VMT_THREAD_RUNNABLE);  /* as soon as start returns */
  latch_open(&g);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(vmt_thread_state(t), VMT_THREAD_TERMINATED);
  assert_int_equal(vmt_thread_release(t), 0);
  latch_destroy(&g);
  assert_string_equal(vmt_thread_state_name(VMT_THREAD_NEW), "NEW");
  assert_string_equal(vmt_thread_state_name(VMT_THREAD_RUNNABLE), "RUNNABLE");
  assert_string_equal(vmt_thread_state_name(VMT_THREAD_BLOCKED), "BLOCKED");
  assert_string_equal(vmt_thread_state_name(VMT_THREAD_WAITING), "WAITING");
  assert_string_equal(vmt_thread_state_name(VMT_THREAD_TIMED_WAITING), "TIMED_WAITING");
  assert_string_equal(vmt_thread_state_name(VMT_THREAD_TERMINATED), "TERMINATED");
  assert_string_equal(vmt_thread_state_name((vmt_thread_state_t)42), "UNKNOWN");
}

/* ---- names and options ----------------------------------------------------------------- */
typedef struct name_probe {
  char kernel_name[32];
  vmt_thread_t *current;
} name_probe_t;

static void *read_kernel_name(void *arg) {
  name_probe_t *p = arg;
  p->current = vmt_thread_current();
  pthread_getname_np(pthread_self(), p->kernel_name, sizeof(p->kernel_name));
  return NULL;
}

static void start_named(const char *name, vmt_thread_t **t, name_probe_t *p) {
  vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_NAME, .name = name};
  memset(p, 0, sizeof(*p));
  assert_int_equal(vmt_thread_start_ex(t, &o, read_kernel_name, p), 0);
  assert_int_equal(vmt_thread_join(*t, NULL), 0);
  assert_ptr_equal(p->current, *t);
}

static void names_at_and_beyond_15_bytes(void **state) {
  (void)state;
  vmt_thread_t *t;
  name_probe_t p;
  start_named("exactly-15-byte", &t, &p);  /* 15 bytes: kept whole */
  assert_string_equal(vmt_thread_name(t), "exactly-15-byte");
  assert_string_equal(vmt_thread_os_name(t), "exactly-15-byte");
  assert_string_equal(p.kernel_name, "exactly-15-byte");
  vmt_thread_release(t);

  start_named("sixteen-bytes-xx", &t, &p);  /* 16 bytes: the kernel keeps 15 */
  assert_string_equal(vmt_thread_name(t), "sixteen-bytes-xx");
  assert_string_equal(vmt_thread_os_name(t), "sixteen-bytes-x");
  assert_string_equal(p.kernel_name, "sixteen-bytes-x");
  vmt_thread_release(t);

  /* "compiler-" (9) + three 2-byte "é" (6) = 15, then more: the cut stays on a character. */
  start_named("compiler-\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", &t, &p);
  assert_string_equal(vmt_thread_os_name(t), "compiler-\xc3\xa9\xc3\xa9\xc3\xa9");
  vmt_thread_release(t);
  /* 14 bytes then a 2-byte character straddling byte 15: cut before it. */
  start_named("abcdefghijklmn\xc3\xa9", &t, &p);
  assert_string_equal(vmt_thread_os_name(t), "abcdefghijklmn");
  assert_string_equal(p.kernel_name, "abcdefghijklmn");
  vmt_thread_release(t);

  /* The longest allowed name is kept in full. */
  char *longest = malloc(VMT_THREAD_NAME_MAX + 2);
  memset(longest, 'n', VMT_THREAD_NAME_MAX);
  longest[VMT_THREAD_NAME_MAX] = '\0';
  start_named(longest, &t, &p);
  assert_int_equal(strlen(vmt_thread_name(t)), VMT_THREAD_NAME_MAX);
  vmt_thread_release(t);
  longest[VMT_THREAD_NAME_MAX] = 'n';
  longest[VMT_THREAD_NAME_MAX + 1] = '\0';
  vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_NAME, .name = longest};
  assert_int_equal(vmt_thread_start_ex(&t, &o, return_arg, NULL), -EINVAL);
  free(longest);
}

static void default_name_and_category(void **state) {
  (void)state;
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, return_arg, NULL), 0);
  char expected[64];
  snprintf(expected, sizeof(expected), "vmt-thread-%lld", (long long)vmt_thread_id(t));
  assert_string_equal(vmt_thread_name(t), expected);
  assert_string_equal(vmt_thread_category(t), "app");
  assert_false(vmt_thread_is_daemon(t));
  assert_int_equal(vmt_thread_priority(t), VMT_THREAD_NORM_PRIORITY);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  vmt_thread_release(t);
}

static void invalid_options_are_refused(void **state) {
  (void)state;
  vmt_thread_t *t;
  const char *bad_names[] = {"", "\xff", "\xc3", "\xc0\xaf" /* overlong '/' */,
                             "\xed\xa0\x80" /* surrogate */, "\xf4\x90\x80\x80" /* > U+10FFFF */};
  for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
    vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_NAME, .name = bad_names[i]};
    assert_int_equal(vmt_thread_start_ex(&t, &o, return_arg, NULL), -EINVAL);
  }
  vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_NAME, .name = NULL};
  assert_int_equal(vmt_thread_start_ex(&t, &o, return_arg, NULL), -EINVAL);
  const char *bad_categories[] = {"", "GC", "gc thread", "g/c", NULL};
  for (size_t i = 0; i < sizeof(bad_categories) / sizeof(bad_categories[0]); i++) {
    o = (vmt_thread_options_t){.flags = VMT_THREAD_OPT_CATEGORY, .category = bad_categories[i]};
    assert_int_equal(vmt_thread_start_ex(&t, &o, return_arg, NULL), -EINVAL);
  }
  char long_category[VMT_THREAD_CATEGORY_MAX + 2];
  memset(long_category, 'c', sizeof(long_category) - 1);
  long_category[sizeof(long_category) - 1] = '\0';
  o = (vmt_thread_options_t){.flags = VMT_THREAD_OPT_CATEGORY, .category = long_category};
  assert_int_equal(vmt_thread_start_ex(&t, &o, return_arg, NULL), -EINVAL);
  int bad_priorities[] = {0, 11, -1};
  for (size_t i = 0; i < 3; i++) {
    o = (vmt_thread_options_t){.flags = VMT_THREAD_OPT_PRIORITY, .priority = bad_priorities[i]};
    assert_int_equal(vmt_thread_start_ex(&t, &o, return_arg, NULL), -EINVAL);
  }
  o = (vmt_thread_options_t){.flags = 1u << 20};
  assert_int_equal(vmt_thread_start_ex(&t, &o, return_arg, NULL), -EINVAL);
  assert_null(t);
}

static void options_are_kept(void **state) {
  (void)state;
  vmt_thread_options_t o = {
      .flags = VMT_THREAD_OPT_NAME | VMT_THREAD_OPT_CATEGORY | VMT_THREAD_OPT_DAEMON |
               VMT_THREAD_OPT_PRIORITY,
      .name = "gc-worker-0",
      .category = "gc",
      .daemon = true,
      .priority = VMT_THREAD_MAX_PRIORITY,
  };
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start_ex(&t, &o, return_arg, NULL), 0);
  assert_string_equal(vmt_thread_name(t), "gc-worker-0");
  assert_string_equal(vmt_thread_category(t), "gc");
  assert_true(vmt_thread_is_daemon(t));
  assert_int_equal(vmt_thread_priority(t), VMT_THREAD_MAX_PRIORITY);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  vmt_thread_release(t);
}

static void *report_stack_size(void *arg) {
  pthread_attr_t attr;
  size_t *size = arg;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    pthread_attr_getstacksize(&attr, size);
    pthread_attr_destroy(&attr);
  }
  return NULL;
}

static void stack_sizes_are_rounded_and_clamped(void **state) {
  (void)state;
  long page = sysconf(_SC_PAGESIZE);
  struct {
    size_t requested, min_expected, max_expected;
  } cases[] = {
      /* glibc may report the size without its guard page: allow one page below. */
      {1, 64 * 1024 - (size_t)page, 1024 * 1024},          /* clamped up to the minimum */
      {256 * 1024 + 1, 256 * 1024, 300 * 1024},            /* rounded up to a page */
  };
  for (size_t i = 0; i < 2; i++) {
    vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_STACK_SIZE,
                              .stack_size = cases[i].requested};
    size_t got = 0;
    vmt_thread_t *t;
    assert_int_equal(vmt_thread_start_ex(&t, &o, report_stack_size, &got), 0);
    assert_int_equal(vmt_thread_join(t, NULL), 0);
    vmt_thread_release(t);
    assert_true(got >= cases[i].min_expected);
#ifndef __SANITIZE_THREAD__
    /* TSan's pthread_create interceptor enlarges small stacks for its own use. */
    assert_true(got <= cases[i].max_expected);
#endif
  }
}

/* ---- attach / detach ------------------------------------------------------------------- */
typedef struct attach_probe {
  bool before;
  int rc[8];
  vmt_thread_t *t, *again;
  int64_t id;
  char name[64], category[64], os_name[32];
} attach_probe_t;

static void *foreign_thread(void *arg) {
  attach_probe_t *p = arg;
  /* No cmocka assertions off the main thread: record, check after the join. */
  p->before = vmt_thread_current() == NULL && vmt_thread_detach() == -EINVAL;
  vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_NAME | VMT_THREAD_OPT_CATEGORY,
                            .name = "foreign-worker",
                            .category = "native"};
  p->rc[0] = vmt_thread_attach(&o, &p->t);
  p->id = vmt_thread_id(p->t);
  snprintf(p->name, sizeof(p->name), "%s", vmt_thread_name(p->t));
  snprintf(p->category, sizeof(p->category), "%s", vmt_thread_category(p->t));
  pthread_getname_np(pthread_self(), p->os_name, sizeof(p->os_name));
  p->rc[1] = vmt_thread_current() == p->t;
  p->rc[2] = vmt_thread_attach(NULL, &p->again);  /* nested */
  p->rc[3] = vmt_thread_detach();
  p->rc[4] = vmt_thread_current() == p->t;          /* still attached once */
  p->rc[5] = vmt_thread_state(p->t) == VMT_THREAD_RUNNABLE;
  p->rc[6] = vmt_thread_detach();
  p->rc[7] = vmt_thread_detach();                   /* no longer attached */
  if (vmt_thread_current() != NULL) p->rc[7] = 99;
  return NULL;
}

static void attach_and_detach_a_foreign_thread(void **state) {
  (void)state;
  attach_probe_t p;
  memset(&p, 0, sizeof(p));
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, foreign_thread, &p), 0);
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_true(p.before);
  assert_int_equal(p.rc[0], 0);
  assert_true(p.id > 0);
  assert_string_equal(p.name, "foreign-worker");
  assert_string_equal(p.category, "native");
  assert_string_equal(p.os_name, "foreign-worker");
  assert_int_equal(p.rc[1], 1);
  assert_int_equal(p.rc[2], 0);
  assert_ptr_equal(p.again, p.t);
  assert_int_equal(p.rc[3], 0);
  assert_int_equal(p.rc[4], 1);
  assert_int_equal(p.rc[5], 1);
  assert_int_equal(p.rc[6], 0);
  assert_int_equal(p.rc[7], -EINVAL);
}

static void *attach_inside_runtime_thread(void *arg) {
  (void)arg;
  vmt_thread_t *t;
  int a = vmt_thread_attach(NULL, &t);
  int d = vmt_thread_detach();
  return (void *)(intptr_t)(a == -EINVAL && d == -EINVAL);
}

static void runtime_threads_neither_attach_nor_detach(void **state) {
  (void)state;
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, attach_inside_runtime_thread, NULL), 0);
  void *ok;
  assert_int_equal(vmt_thread_join(t, &ok), 0);
  assert_int_equal((intptr_t)ok, 1);
  vmt_thread_release(t);
}

static void attached_threads_cannot_be_joined(void **state) {
  (void)state;
  vmt_thread_t *me;
  assert_int_equal(vmt_thread_attach(NULL, &me), 0);
  assert_int_equal(vmt_thread_join(me, NULL), -EINVAL);
  assert_int_equal(vmt_thread_exit(NULL), -EPERM);
  assert_int_equal(vmt_thread_detach(), 0);
}

static void *forget_to_detach(void *arg) {
  vmt_thread_t **out = arg;
  vmt_thread_attach(NULL, out);
  vmt_thread_retain(*out);
  return NULL;
}

static void a_thread_ending_attached_is_detached(void **state) {
  (void)state;
  vmt_thread_t *t = NULL;
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, forget_to_detach, &t), 0);
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_non_null(t);
  assert_int_equal(vmt_thread_state(t), VMT_THREAD_TERMINATED);
  assert_int_equal(vmt_thread_release(t), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(start_join_returns_the_result),
      cmocka_unit_test(ids_are_unique_and_increasing),
      cmocka_unit_test(bad_arguments_are_refused),
      cmocka_unit_test(tid_is_known_before_the_child_runs),
      cmocka_unit_test(join_refuses_self_and_second_join),
      cmocka_unit_test(concurrent_joins_get_one_success),
      cmocka_unit_test(released_handles_are_refused),
      cmocka_unit_test(retain_keeps_the_record),
      cmocka_unit_test(release_before_the_end_leaves_the_thread_running),
      cmocka_unit_test(explicit_exit_gives_its_result),
      cmocka_unit_test(cancellation_runs_the_exit_path),
      cmocka_unit_test(states_and_their_names),
      cmocka_unit_test(names_at_and_beyond_15_bytes),
      cmocka_unit_test(default_name_and_category),
      cmocka_unit_test(invalid_options_are_refused),
      cmocka_unit_test(options_are_kept),
      cmocka_unit_test(stack_sizes_are_rounded_and_clamped),
      cmocka_unit_test(attach_and_detach_a_foreign_thread),
      cmocka_unit_test(runtime_threads_neither_attach_nor_detach),
      cmocka_unit_test(attached_threads_cannot_be_joined),
      cmocka_unit_test(a_thread_ending_attached_is_detached),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
