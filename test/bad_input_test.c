/*
 * test/bad_input_test.c: every public function (include/vmthread/ headers) called with what a
 * careless or hostile caller passes: NULLs, invalid and unknown ids, negative depths and
 * timeouts, oversized and non-UTF-8 names, absurd stack sizes and priorities, unknown option
 * flags and enum values, stale handles (released threads, destroyed monitors and
 * synchronizers, deleted TLS keys, removed hooks, a stopped or cleared profile), double join
 * and release, objects of the wrong type, monitors exited, waited on or notified by a thread
 * that does not own them, calls from the wrong thread (one that is not a runtime thread, a
 * suspended one, one that did not begin the safepoint, a hook). Each call must give its
 * documented answer: a defined error (or the Java "no answer" value) every time, never a
 * crash, and nothing changed.
 *
 * Every export has a row: every_public_function_has_a_row reads the headers' exports
 * (test/public_functions.txt, made at build time) and fails naming each one that no row calls
 * and no commented exemption covers, as test/fork_calls_linux_test.c does for fork.
 *
 * The cases are a table: each row is the function, the input, the expected answer and the
 * actual one. The test fails on any difference and prints every row; scripts/reliability turns
 * the rows (published as figures, test/reliability.h) into the table of docs/reliability.md, so
 * the document lists exactly what this code was seen to answer. Public API only.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test/reliability.h"
#include "vmthread.h"

/* ---- the table ---------------------------------------------------------------------------- */
typedef struct row {
  const char *fn;
  char input[96];
  char expected[48];
  char actual[48];
} row_t;

static row_t rows[700];
static size_t nrows, mismatches;

static const char *errname(long rc) {
  switch (rc) {
    case 0: return "0";
    case -EINVAL: return "-EINVAL";
    case -EPERM: return "-EPERM";
    case -EBUSY: return "-EBUSY";
    case -EDEADLK: return "-EDEADLK";
    case -EALREADY: return "-EALREADY";
    case -ETIMEDOUT: return "-ETIMEDOUT";
    case -ENOTSUP: return "-ENOTSUP";
    case -ENOMEM: return "-ENOMEM";
    case -EAGAIN: return "-EAGAIN";
    case -ESRCH: return "-ESRCH";
    case -ERANGE: return "-ERANGE";
    case -EIO: return "-EIO";
    case -ENOENT:
      return "-ENOENT";
    case -EINTR:
      return "-EINTR";
    default: return NULL;
  }
}

static void add_row(const char *fn, const char *input, const char *expected, const char *actual) {
  if (nrows == sizeof(rows) / sizeof(rows[0])) fail_msg("bad-input table full");
  row_t *r = &rows[nrows++];
  r->fn = fn;
  snprintf(r->input, sizeof(r->input), "%s", input);
  snprintf(r->expected, sizeof(r->expected), "%s", expected);
  snprintf(r->actual, sizeof(r->actual), "%s", actual);
  if (strcmp(expected, actual) != 0) {
    mismatches++;
    printf("MISMATCH %s(%s): expected %s, got %s\n", fn, input, expected, actual);
  }
}

/* An errno-style int result. */
static void rc_is(const char *fn, const char *input, int expected, int actual) {
  char e[32], a[32];
  const char *en = errname(expected), *an = errname(actual);
  snprintf(e, sizeof(e), "%s", en ? en : "?");
  if (an)
    snprintf(a, sizeof(a), "%s", an);
  else
    snprintf(a, sizeof(a), "%d", actual);
  add_row(fn, input, e, a);
}

/* A plain value result (-1 times, counts, booleans). */
static void value_is(const char *fn, const char *input, long long expected, long long actual) {
  char e[32], a[32];
  snprintf(e, sizeof(e), "%lld", expected);
  snprintf(a, sizeof(a), "%lld", actual);
  add_row(fn, input, e, a);
}

static void ptr_is_null(const char *fn, const char *input, const void *actual) {
  add_row(fn, input, "NULL", actual == NULL ? "NULL" : "non-NULL");
}

static void str_is(const char *fn, const char *input, const char *expected, const char *actual) {
  add_row(fn, input, expected, actual ? actual : "NULL");
}

/* Calls that return nothing: surviving them is the answer. */
static void survives(const char *fn, const char *input) { add_row(fn, input, "no effect", "no effect"); }

/* ---- helpers ------------------------------------------------------------------------------ */
static void *return_arg(void *arg) { return arg; }
static void *park_body(void *arg) {
  (void)arg;
  vmt_park(0);
  return NULL;
}

static vmt_thread_t *running_thread(void) {
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, park_body, NULL), 0);
  return t;
}

static void finish(vmt_thread_t *t) {
  vmt_unpark(t);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(vmt_thread_release(t), 0);
}

static int start_with(const vmt_thread_options_t *o) {
  vmt_thread_t *t = (vmt_thread_t *)1;
  int rc = vmt_thread_start_ex(&t, o, return_arg, NULL);
  if (rc == 0) {
    assert_int_equal(vmt_thread_join(t, NULL), 0);
    assert_int_equal(vmt_thread_release(t), 0);
  } else if (t != NULL) {
    fail_msg("a failed start left *out set");
  }
  return rc;
}

static char long_name[VMT_THREAD_NAME_MAX + 2];

/* ---- threads ------------------------------------------------------------------------------ */
static void *self_calls(void *arg) {
  int *rc = arg;
  rc[0] = vmt_thread_join(vmt_thread_current(), NULL);
  vmt_thread_t *t;
  rc[1] = vmt_thread_attach(NULL, &t);
  rc[2] = vmt_thread_detach();
  return NULL;
}

static void *foreign_calls(void *arg) {
  int *rc = arg;
  rc[0] = vmt_thread_exit(NULL);
  rc[1] = vmt_park(1000);
  vmt_thread_t *me;
  rc[2] = vmt_thread_attach(NULL, &me);
  rc[3] = vmt_thread_exit(NULL);
  rc[4] = vmt_thread_join(me, NULL);
  rc[5] = vmt_thread_detach();
  rc[6] = vmt_thread_detach();
  return NULL;
}

static void thread_functions(void **state) {
  (void)state;
  vmt_thread_t *t = (vmt_thread_t *)1;
  rc_is("vmt_thread_start", "out NULL", -EINVAL, vmt_thread_start(NULL, return_arg, NULL));
  rc_is("vmt_thread_start", "fn NULL", -EINVAL, vmt_thread_start(&t, NULL, NULL));
  ptr_is_null("vmt_thread_start", "fn NULL: *out afterwards", t);
  rc_is("vmt_thread_start_ex", "out NULL", -EINVAL,
        vmt_thread_start_ex(NULL, NULL, return_arg, NULL));

  vmt_thread_options_t o = {.flags = 1u << 31};
  rc_is("vmt_thread_start_ex", "unknown option flag", -EINVAL, start_with(&o));
  o = (vmt_thread_options_t){.flags = VMT_THREAD_OPT_NAME, .name = NULL};
  rc_is("vmt_thread_start_ex", "name NULL", -EINVAL, start_with(&o));
  o.name = "";
  rc_is("vmt_thread_start_ex", "name \"\"", -EINVAL, start_with(&o));
  memset(long_name, 'n', VMT_THREAD_NAME_MAX + 1);
  long_name[VMT_THREAD_NAME_MAX + 1] = '\0';
  o.name = long_name;
  rc_is("vmt_thread_start_ex", "name of 4097 bytes", -EINVAL, start_with(&o));
  long_name[VMT_THREAD_NAME_MAX] = '\0';
  rc_is("vmt_thread_start_ex", "name of 4096 bytes (the limit)", 0, start_with(&o));
  static const struct { const char *bytes, *what; } bad_utf8[] = {
      {"\xff", "name 0xFF"},
      {"ab\xc0\xaf", "name with overlong '/' C0 AF"},
      {"\xed\xa0\x80", "name with surrogate ED A0 80"},
      {"\xf4\x90\x80\x80", "name above U+10FFFF"},
      {"abc\xe2\x82", "name with truncated 3-byte char"},
      {"\x80x", "name starting with a continuation byte"},
  };
  for (size_t i = 0; i < sizeof(bad_utf8) / sizeof(bad_utf8[0]); i++) {
    o.name = bad_utf8[i].bytes;
    rc_is("vmt_thread_start_ex", bad_utf8[i].what, -EINVAL, start_with(&o));
  }
  o = (vmt_thread_options_t){.flags = VMT_THREAD_OPT_CATEGORY};
  static const struct { const char *c, *what; } bad_cat[] = {
      {NULL, "category NULL"}, {"", "category \"\""}, {"GC", "category with upper case"},
      {"a b", "category with a space"},
      {"a123456789012345678901234567890123456789012345678901234567890123",
       "category of 64 bytes"},
  };
  for (size_t i = 0; i < sizeof(bad_cat) / sizeof(bad_cat[0]); i++) {
    o.category = bad_cat[i].c;
    rc_is("vmt_thread_start_ex", bad_cat[i].what, -EINVAL, start_with(&o));
  }
  o = (vmt_thread_options_t){.flags = VMT_THREAD_OPT_PRIORITY};
  static const int bad_prio[] = {0, 11, -1, INT_MIN, INT_MAX};
  for (size_t i = 0; i < sizeof(bad_prio) / sizeof(bad_prio[0]); i++) {
    char what[48];
    snprintf(what, sizeof(what), "priority %d", bad_prio[i]);
    o.priority = bad_prio[i];
    rc_is("vmt_thread_start_ex", what, -EINVAL, start_with(&o));
  }
  /* Stack sizes are clamped, never refused (docs/design.md): the thread starts. */
  o = (vmt_thread_options_t){.flags = VMT_THREAD_OPT_STACK_SIZE, .stack_size = 1};
  rc_is("vmt_thread_start_ex", "stack size 1 (clamped up)", 0, start_with(&o));
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
  /* 1 GiB of address space for the stack: the sanitizers' shadow mappings make it costly. */
  o.stack_size = SIZE_MAX;
  rc_is("vmt_thread_start_ex", "stack size SIZE_MAX (clamped to 1 GiB)", 0, start_with(&o));
#endif

  rc_is("vmt_thread_join", "NULL", -EINVAL, vmt_thread_join(NULL, NULL));
  vmt_thread_t *a = running_thread();
  vmt_unpark(a);
  void *res = (void *)1;
  assert_int_equal(vmt_thread_join(a, &res), 0);
  rc_is("vmt_thread_join", "second join", -EALREADY, vmt_thread_join(a, NULL));
  assert_int_equal(vmt_thread_release(a), 0);
  vmt_thread_t *b;
  assert_int_equal(vmt_thread_start(&b, return_arg, NULL), 0);
  assert_int_equal(vmt_thread_join(b, NULL), 0);
  assert_int_equal(vmt_thread_release(b), 0);
  /* b's record is back in the type-stable pool (nothing started since): a stale handle. */
  rc_is("vmt_thread_join", "released handle", -EINVAL, vmt_thread_join(b, NULL));
  rc_is("vmt_thread_retain", "NULL", -EINVAL, vmt_thread_retain(NULL));
  rc_is("vmt_thread_retain", "released handle", -EINVAL, vmt_thread_retain(b));
  rc_is("vmt_thread_release", "NULL", -EINVAL, vmt_thread_release(NULL));
  rc_is("vmt_thread_release", "released handle (double release)", -EINVAL,
        vmt_thread_release(b));
  value_is("vmt_thread_cpu_time", "released handle", -1, vmt_thread_cpu_time(b, VMT_CPU_TOTAL));

  int self_rc[3];
  assert_int_equal(vmt_thread_start(&t, self_calls, self_rc), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  rc_is("vmt_thread_join", "the calling thread itself", -EDEADLK, self_rc[0]);
  rc_is("vmt_thread_attach", "from a runtime-started thread", -EINVAL, self_rc[1]);
  rc_is("vmt_thread_detach", "from a runtime-started thread", -EINVAL, self_rc[2]);
  value_is("vmt_thread_cpu_time", "terminated (joined) thread", -1,
           vmt_thread_cpu_time(t, VMT_CPU_TOTAL));
  /* A permit for a thread that will never park again: harmless. */
  rc_is("vmt_unpark", "terminated (joined) thread", 0, vmt_unpark(t));
  assert_int_equal(vmt_thread_release(t), 0);

  int frc[7];
  pthread_t p;
  assert_int_equal(pthread_create(&p, NULL, foreign_calls, frc), 0);
  pthread_join(p, NULL);
  rc_is("vmt_thread_exit", "not a runtime thread", -EPERM, frc[0]);
  rc_is("vmt_park", "not a runtime thread", -EPERM, frc[1]);
  rc_is("vmt_thread_exit", "attached thread", -EPERM, frc[3]);
  rc_is("vmt_thread_join", "attached thread's handle", -EINVAL, frc[4]);
  rc_is("vmt_thread_detach", "one detach too many", -EINVAL, frc[6]);
  assert_int_equal(frc[2], 0);
  assert_int_equal(frc[5], 0);

  rc_is("vmt_thread_attach", "out NULL", -EINVAL, vmt_thread_attach(NULL, NULL));
  o = (vmt_thread_options_t){.flags = VMT_THREAD_OPT_NAME, .name = "\xff"};
  vmt_thread_t *me = (vmt_thread_t *)1;
  rc_is("vmt_thread_attach", "non-UTF-8 name", -EINVAL, vmt_thread_attach(&o, &me));
  ptr_is_null("vmt_thread_current", "after a refused attach", vmt_thread_current());
  rc_is("vmt_thread_detach", "thread never attached", -EINVAL, vmt_thread_detach());

  value_is("vmt_thread_id", "NULL", -1, vmt_thread_id(NULL));
  ptr_is_null("vmt_thread_name", "NULL", vmt_thread_name(NULL));
  ptr_is_null("vmt_thread_os_name", "NULL", vmt_thread_os_name(NULL));
  ptr_is_null("vmt_thread_category", "NULL", vmt_thread_category(NULL));
  value_is("vmt_thread_is_daemon", "NULL", 0, vmt_thread_is_daemon(NULL));
  value_is("vmt_thread_priority", "NULL", -1, vmt_thread_priority(NULL));
  /* The enum has no negative enumerator, so gcc makes it unsigned: compare as the type. */
  add_row("vmt_thread_state", "NULL", "VMT_THREAD_STATE_INVALID (< 0)",
          vmt_thread_state(NULL) == VMT_THREAD_STATE_INVALID && vmt_thread_state(NULL) < 0
              ? "VMT_THREAD_STATE_INVALID (< 0)"
              : "other");
  rc_is("vmt_thread_tid", "NULL", -EINVAL, vmt_thread_tid(NULL));
  str_is("vmt_thread_state_name", "99", "UNKNOWN", vmt_thread_state_name((vmt_thread_state_t)99));
  str_is("vmt_thread_state_name", "-1", "UNKNOWN", vmt_thread_state_name(VMT_THREAD_STATE_INVALID));
  assert_non_null(vmt_version());
  add_row("vmt_version", "(no input)", "non-NULL", vmt_version() ? "non-NULL" : "NULL");
}

/* ---- clocks ------------------------------------------------------------------------------- */
static void clock_functions(void **state) {
  (void)state;
  value_is("vmt_thread_cpu_time", "NULL", -1, vmt_thread_cpu_time(NULL, VMT_CPU_TOTAL));
  vmt_thread_t *t = running_thread();
  value_is("vmt_thread_cpu_time", "kind 99", -1, vmt_thread_cpu_time(t, (vmt_cpu_kind_t)99));
  value_is("vmt_thread_cpu_time", "kind -1", -1, vmt_thread_cpu_time(t, (vmt_cpu_kind_t)-1));
  finish(t);
  value_is("vmt_current_thread_cpu_time", "kind 99", -1,
           vmt_current_thread_cpu_time((vmt_cpu_kind_t)99));
  value_is("vmt_current_thread_cpu_time", "kind -1", -1,
           vmt_current_thread_cpu_time((vmt_cpu_kind_t)-1));
  add_row("vmt_nanotime", "(no input)", "> 0", vmt_nanotime() > 0 ? "> 0" : "<= 0");
  add_row("vmt_elapsed_nanos", "(no input)", "> 0", vmt_elapsed_nanos() > 0 ? "> 0" : "<= 0");
  add_row("vmt_elapsed_source", "(no input)", "non-NULL", vmt_elapsed_source() ? "non-NULL" : "NULL");
  add_row("vmt_elapsed_source_reason", "(no input)", "non-NULL",
          vmt_elapsed_source_reason() ? "non-NULL" : "NULL");
}

/* ---- monitors, synchronizers, park, sleep ------------------------------------------------ */
typedef struct foreign_owner {
  vmt_monitor_t *m;
  vmt_sync_t *s;
  int rc[6];
} foreign_owner_t;

static void *not_owner_calls(void *arg) {
  foreign_owner_t *f = arg;
  f->rc[0] = vmt_monitor_exit(f->m);
  f->rc[1] = vmt_monitor_wait(f->m, 1000);
  f->rc[2] = vmt_monitor_notify(f->m);
  f->rc[3] = vmt_monitor_notify_all(f->m);
  f->rc[4] = vmt_sync_unlock(f->s);
  f->rc[5] = vmt_monitor_try_enter(f->m);
  return NULL;
}

static void *sync_contender(void *arg) {
  foreign_owner_t *f = arg;
  f->rc[0] = vmt_sync_try_lock(f->s);
  f->rc[1] = vmt_sync_timed_lock(f->s, -1);
  f->rc[2] = vmt_sync_timed_lock(f->s, 1000);
  return NULL;
}

static void monitor_functions(void **state) {
  (void)state;
  char name256[VMT_MONITOR_NAME_MAX + 2];
  memset(name256, 'm', sizeof(name256) - 1);
  name256[sizeof(name256) - 1] = '\0';
  vmt_monitor_t *m = NULL;
  rc_is("vmt_monitor_create", "out NULL", -EINVAL, vmt_monitor_create(NULL, "x"));
  rc_is("vmt_monitor_create", "name of 256 bytes", -EINVAL, vmt_monitor_create(&m, name256));
  rc_is("vmt_monitor_create", "name NULL (default \"monitor\")", 0, vmt_monitor_create(&m, NULL));
  char buf[300];
  vmt_monitor_describe(m, buf, sizeof(buf));
  add_row("vmt_monitor_describe", "monitor created with name NULL", "monitor@<id>",
          strncmp(buf, "monitor@", 8) == 0 ? "monitor@<id>" : buf);
  rc_is("vmt_monitor_describe", "m NULL", -EINVAL, vmt_monitor_describe(NULL, buf, sizeof(buf)));
  rc_is("vmt_monitor_describe", "buf NULL, len 10", -EINVAL, vmt_monitor_describe(m, NULL, 10));
  int need = vmt_monitor_describe(m, NULL, 0);
  add_row("vmt_monitor_describe", "buf NULL, len 0", "bytes needed",
          need == (int)strlen(buf) ? "bytes needed" : "wrong length");
  char one[1] = {'x'};
  vmt_monitor_describe(m, one, 1);
  add_row("vmt_monitor_describe", "len 1", "\"\" (NUL-terminated)", one[0] == '\0' ? "\"\" (NUL-terminated)" : "unterminated");
  vmt_monitor_stats_t st;
  rc_is("vmt_monitor_get_stats", "m NULL", -EINVAL, vmt_monitor_get_stats(NULL, &st));
  rc_is("vmt_monitor_get_stats", "out NULL", -EINVAL, vmt_monitor_get_stats(m, NULL));

  rc_is("vmt_monitor_enter", "NULL", -EINVAL, vmt_monitor_enter(NULL));
  rc_is("vmt_monitor_try_enter", "NULL", -EINVAL, vmt_monitor_try_enter(NULL));
  rc_is("vmt_monitor_exit", "NULL", -EINVAL, vmt_monitor_exit(NULL));
  rc_is("vmt_monitor_exit", "not entered", -EPERM, vmt_monitor_exit(m));
  rc_is("vmt_monitor_wait", "NULL", -EINVAL, vmt_monitor_wait(NULL, 1));
  rc_is("vmt_monitor_wait", "not entered", -EPERM, vmt_monitor_wait(m, 1000));
  rc_is("vmt_monitor_notify", "NULL", -EINVAL, vmt_monitor_notify(NULL));
  rc_is("vmt_monitor_notify", "not entered", -EPERM, vmt_monitor_notify(m));
  rc_is("vmt_monitor_notify_all", "NULL", -EINVAL, vmt_monitor_notify_all(NULL));
  rc_is("vmt_monitor_notify_all", "not entered", -EPERM, vmt_monitor_notify_all(m));
  rc_is("vmt_monitor_destroy", "NULL", -EINVAL, vmt_monitor_destroy(NULL));

  vmt_sync_t *s = NULL;
  rc_is("vmt_sync_create", "out NULL", -EINVAL, vmt_sync_create(NULL, "s"));
  rc_is("vmt_sync_create", "name of 256 bytes", -EINVAL, vmt_sync_create(&s, name256));
  assert_int_equal(vmt_sync_create(&s, "s"), 0);

  /* Held by this thread; another thread tries to release, wait, notify. */
  assert_int_equal(vmt_monitor_enter(m), 0);
  assert_int_equal(vmt_sync_lock(s), 0);
  foreign_owner_t f = {.m = m, .s = s};
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, not_owner_calls, &f), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(vmt_thread_release(t), 0);
  rc_is("vmt_monitor_exit", "owned by another thread", -EPERM, f.rc[0]);
  rc_is("vmt_monitor_wait", "owned by another thread", -EPERM, f.rc[1]);
  rc_is("vmt_monitor_notify", "owned by another thread", -EPERM, f.rc[2]);
  rc_is("vmt_monitor_notify_all", "owned by another thread", -EPERM, f.rc[3]);
  rc_is("vmt_sync_unlock", "owned by another thread", -EPERM, f.rc[4]);
  rc_is("vmt_monitor_try_enter", "owned by another thread", -EBUSY, f.rc[5]);
  pthread_t p;
  assert_int_equal(pthread_create(&p, NULL, not_owner_calls, &f), 0);
  pthread_join(p, NULL);
  rc_is("vmt_monitor_exit", "owned by another, from a foreign thread", -EPERM, f.rc[0]);
  rc_is("vmt_sync_unlock", "owned by another, from a foreign thread", -EPERM, f.rc[4]);
  assert_int_equal(vmt_thread_start(&t, sync_contender, &f), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(vmt_thread_release(t), 0);
  rc_is("vmt_sync_try_lock", "owned by another thread", -EBUSY, f.rc[0]);
  rc_is("vmt_sync_timed_lock", "timeout -1, owned by another thread", -ETIMEDOUT, f.rc[1]);
  rc_is("vmt_sync_timed_lock", "timeout 1 us, owned by another thread", -ETIMEDOUT, f.rc[2]);
  rc_is("vmt_monitor_destroy", "entered", -EBUSY, vmt_monitor_destroy(m));
  rc_is("vmt_sync_destroy", "locked", -EBUSY, vmt_sync_destroy(s));
  rc_is("vmt_sync_lock", "already locked by the caller", -EDEADLK, vmt_sync_lock(s));
  rc_is("vmt_sync_timed_lock", "already locked by the caller", -EDEADLK, vmt_sync_timed_lock(s, 1));
  assert_int_equal(vmt_sync_unlock(s), 0);
  rc_is("vmt_sync_unlock", "not locked", -EPERM, vmt_sync_unlock(s));
  assert_int_equal(vmt_monitor_exit(m), 0);

  /* One type passed for the other: the magic tells them apart. */
  rc_is("vmt_sync_lock", "a monitor passed as a synchronizer", -EINVAL,
        vmt_sync_lock((vmt_sync_t *)m));
  rc_is("vmt_monitor_enter", "a synchronizer passed as a monitor", -EINVAL,
        vmt_monitor_enter((vmt_monitor_t *)s));
  rc_is("vmt_sync_destroy", "a monitor passed as a synchronizer", -EINVAL,
        vmt_sync_destroy((vmt_sync_t *)m));

  rc_is("vmt_sync_lock", "NULL", -EINVAL, vmt_sync_lock(NULL));
  rc_is("vmt_sync_try_lock", "NULL", -EINVAL, vmt_sync_try_lock(NULL));
  rc_is("vmt_sync_timed_lock", "NULL", -EINVAL, vmt_sync_timed_lock(NULL, 1));
  rc_is("vmt_sync_unlock", "NULL", -EINVAL, vmt_sync_unlock(NULL));
  rc_is("vmt_sync_describe", "NULL", -EINVAL, vmt_sync_describe(NULL, buf, sizeof(buf)));
  rc_is("vmt_sync_describe", "buf NULL, len 10", -EINVAL, vmt_sync_describe(s, NULL, 10));
  rc_is("vmt_sync_destroy", "NULL", -EINVAL, vmt_sync_destroy(NULL));

  /* Destroyed objects (their slots stay lock-shaped: a defined error, not a use after free). */
  assert_int_equal(vmt_monitor_destroy(m), 0);
  assert_int_equal(vmt_sync_destroy(s), 0);
  rc_is("vmt_monitor_destroy", "destroyed (double destroy)", -EINVAL, vmt_monitor_destroy(m));
  rc_is("vmt_monitor_enter", "destroyed", -EINVAL, vmt_monitor_enter(m));
  rc_is("vmt_monitor_exit", "destroyed", -EINVAL, vmt_monitor_exit(m));
  rc_is("vmt_monitor_wait", "destroyed", -EINVAL, vmt_monitor_wait(m, 1));
  rc_is("vmt_monitor_get_stats", "destroyed", -EINVAL, vmt_monitor_get_stats(m, &st));
  rc_is("vmt_sync_destroy", "destroyed (double destroy)", -EINVAL, vmt_sync_destroy(s));
  rc_is("vmt_sync_lock", "destroyed", -EINVAL, vmt_sync_lock(s));
  rc_is("vmt_monitor_try_enter", "destroyed", -EINVAL, vmt_monitor_try_enter(m));
  rc_is("vmt_monitor_notify", "destroyed", -EINVAL, vmt_monitor_notify(m));
  rc_is("vmt_monitor_notify_all", "destroyed", -EINVAL, vmt_monitor_notify_all(m));
  rc_is("vmt_monitor_describe", "destroyed", -EINVAL, vmt_monitor_describe(m, buf, sizeof(buf)));
  rc_is("vmt_sync_try_lock", "destroyed", -EINVAL, vmt_sync_try_lock(s));
  rc_is("vmt_sync_timed_lock", "destroyed", -EINVAL, vmt_sync_timed_lock(s, 1));
  rc_is("vmt_sync_unlock", "destroyed", -EINVAL, vmt_sync_unlock(s));
  rc_is("vmt_sync_describe", "destroyed", -EINVAL, vmt_sync_describe(s, buf, sizeof(buf)));
  rc_is("vmt_monitor_holds_lock", "destroyed", -EINVAL, vmt_monitor_holds_lock(m));
  rc_is("vmt_sync_holds_lock", "destroyed", -EINVAL, vmt_sync_holds_lock(s));

  /* Timeouts at the ends of int64. */
  vmt_sync_t *s2;
  assert_int_equal(vmt_sync_create(&s2, "limits"), 0);
  rc_is("vmt_sync_timed_lock", "INT64_MAX, free", 0, vmt_sync_timed_lock(s2, INT64_MAX));
  rc_is("vmt_sync_timed_lock", "INT64_MIN, already locked by the caller", -EDEADLK,
        vmt_sync_timed_lock(s2, INT64_MIN));
  assert_int_equal(vmt_sync_unlock(s2), 0);
  assert_int_equal(vmt_sync_destroy(s2), 0);
  vmt_monitor_t *m2;
  assert_int_equal(vmt_monitor_create(&m2, "limits"), 0);
  assert_int_equal(vmt_monitor_enter(m2), 0);
  rc_is("vmt_monitor_wait", "1 ns, nobody notifies", -ETIMEDOUT, vmt_monitor_wait(m2, 1));
  assert_int_equal(vmt_monitor_exit(m2), 0);
  assert_int_equal(vmt_monitor_destroy(m2), 0);
  char name255[VMT_MONITOR_NAME_MAX + 1];
  memset(name255, 0xff, VMT_MONITOR_NAME_MAX);   /* not UTF-8: monitor names are bytes */
  name255[VMT_MONITOR_NAME_MAX] = '\0';
  rc_is("vmt_monitor_create", "name of 255 bytes 0xFF (the limit)", 0,
        vmt_monitor_create(&m2, name255));
  int need255 = vmt_monitor_describe(m2, NULL, 0);
  add_row("vmt_monitor_describe", "255-byte name, buf NULL, len 0", "bytes needed",
          need255 > VMT_MONITOR_NAME_MAX + 1 ? "bytes needed" : "wrong length");
  assert_int_equal(vmt_monitor_destroy(m2), 0);

  rc_is("vmt_sleep_ns", "-1", -EINVAL, vmt_sleep_ns(-1));
  rc_is("vmt_sleep_ns", "INT64_MIN", -EINVAL, vmt_sleep_ns(INT64_MIN));
  rc_is("vmt_sleep_ns", "0 (returns at once)", 0, vmt_sleep_ns(0));
  rc_is("vmt_unpark", "NULL", -EINVAL, vmt_unpark(NULL));
  rc_is("vmt_park", "not a runtime thread (main)", -EPERM, vmt_park(1));
  vmt_thread_t *me;
  assert_int_equal(vmt_thread_attach(NULL, &me), 0);
  assert_int_equal(vmt_unpark(me), 0);
  rc_is("vmt_park", "INT64_MAX, permit available", 0, vmt_park(INT64_MAX));
  assert_int_equal(vmt_unpark(me), 0);
  rc_is("vmt_park", "INT64_MIN (no timeout), permit available", 0, vmt_park(INT64_MIN));
  assert_int_equal(vmt_thread_detach(), 0);
}

/* ---- frame_holds_monitor, inside and outside a walker ------------------------------------- */
static vmt_monitor_t *walk_live, *walk_dead;
static vmt_sync_t *walk_sync;
static int walk_rc[8];
static int walk_calls;

static int reporting_walker(vmt_thread_t *t, vmt_stack_frame_t *frames, int32_t max, void *ctx) {
  (void)t, (void)ctx;
  if (walk_calls++ == 0) {
    walk_rc[0] = vmt_mx_frame_holds_monitor(-1, walk_live);
    walk_rc[1] = vmt_mx_frame_holds_monitor(max, walk_live);
    walk_rc[2] = vmt_mx_frame_holds_monitor(INT32_MAX, walk_live);
    walk_rc[3] = vmt_mx_frame_holds_monitor(INT32_MIN, walk_live);
    walk_rc[4] = vmt_mx_frame_holds_monitor(0, NULL);
    walk_rc[5] = vmt_mx_frame_holds_monitor(0, walk_dead);
    walk_rc[6] = vmt_mx_frame_holds_monitor(0, (const vmt_monitor_t *)walk_sync);
    walk_rc[7] = vmt_mx_frame_holds_monitor(max - 1, walk_live);
  }
  if (max < 1) return 0;
  frames[0] = (vmt_stack_frame_t){.function = "walked", .file = NULL, .line = -1, .pc = 0};
  return 1;
}


/* ---- management --------------------------------------------------------------------------- */
static void management_functions(void **state) {
  (void)state;
  int64_t *ids = (int64_t *)1;
  size_t n = 7;
  rc_is("vmt_mx_get_all_thread_ids", "ids NULL", -EINVAL, vmt_mx_get_all_thread_ids(NULL, &n));
  rc_is("vmt_mx_get_all_thread_ids", "count NULL", -EINVAL,
        vmt_mx_get_all_thread_ids(&ids, NULL));
  vmt_mx_ids_free(NULL);
  survives("vmt_mx_ids_free", "NULL");

  vmt_thread_info_t *info = (vmt_thread_info_t *)1;
  rc_is("vmt_mx_get_thread_info", "id 0", -EINVAL, vmt_mx_get_thread_info(0, 0, &info));
  rc_is("vmt_mx_get_thread_info", "id -5", -EINVAL, vmt_mx_get_thread_info(-5, 0, &info));
  rc_is("vmt_mx_get_thread_info", "max_depth -1", -EINVAL, vmt_mx_get_thread_info(1, -1, &info));
  rc_is("vmt_mx_get_thread_info", "max_depth INT32_MIN", -EINVAL,
        vmt_mx_get_thread_info(1, INT32_MIN, &info));
  rc_is("vmt_mx_get_thread_info", "out NULL", -EINVAL, vmt_mx_get_thread_info(1, 0, NULL));
  rc_is("vmt_mx_get_thread_info", "unknown id INT64_MAX", 0,
        vmt_mx_get_thread_info(INT64_MAX, 0, &info));
  ptr_is_null("vmt_mx_get_thread_info", "unknown id INT64_MAX: *out", info);

  const int64_t bad_ids[] = {1, 0, 3};
  const int64_t neg_ids[] = {-1};
  const int64_t unknown_ids[] = {INT64_MAX, INT64_MAX - 1};
  vmt_thread_info_t **infos = (vmt_thread_info_t **)1;
  rc_is("vmt_mx_get_thread_info_array", "ids NULL, count 1", -EINVAL,
        vmt_mx_get_thread_info_array(NULL, 1, false, false, 0, &infos));
  rc_is("vmt_mx_get_thread_info_array", "an id 0 in the array", -EINVAL,
        vmt_mx_get_thread_info_array(bad_ids, 3, false, false, 0, &infos));
  rc_is("vmt_mx_get_thread_info_array", "an id -1 in the array", -EINVAL,
        vmt_mx_get_thread_info_array(neg_ids, 1, false, false, 0, &infos));
  rc_is("vmt_mx_get_thread_info_array", "max_depth -1", -EINVAL,
        vmt_mx_get_thread_info_array(unknown_ids, 2, false, false, -1, &infos));
  rc_is("vmt_mx_get_thread_info_array", "out NULL", -EINVAL,
        vmt_mx_get_thread_info_array(unknown_ids, 2, false, false, 0, NULL));
  infos = NULL;
  rc_is("vmt_mx_get_thread_info_array", "unknown ids", 0,
        vmt_mx_get_thread_info_array(unknown_ids, 2, true, true, 0, &infos));
  add_row("vmt_mx_get_thread_info_array", "unknown ids: elements", "NULL, NULL",
          infos && !infos[0] && !infos[1] ? "NULL, NULL" : "not NULL");
  vmt_mx_thread_info_array_free(infos, 2);
  infos = NULL;
  rc_is("vmt_mx_get_thread_info_array", "count 0", 0,
        vmt_mx_get_thread_info_array(unknown_ids, 0, false, false, 0, &infos));
  add_row("vmt_mx_get_thread_info_array", "count 0: *out", "non-NULL", infos ? "non-NULL" : "NULL");
  vmt_mx_thread_info_array_free(infos, 0);

  rc_is("vmt_mx_get_thread_info_array_ex", "an unknown flag", -EINVAL,
        vmt_mx_get_thread_info_array_ex(unknown_ids, 2, 0x80000000u, 0, &infos));
  rc_is("vmt_mx_get_thread_info_array_ex", "ids NULL, count 1", -EINVAL,
        vmt_mx_get_thread_info_array_ex(NULL, 1, 0, 0, &infos));
  rc_is("vmt_mx_get_thread_info_array_ex", "max_depth -1", -EINVAL,
        vmt_mx_get_thread_info_array_ex(unknown_ids, 2, 0, -1, &infos));
  rc_is("vmt_mx_dump_all_threads_ex", "an unknown flag", -EINVAL,
        vmt_mx_dump_all_threads_ex(0x8u, 0, &infos, &n));
  rc_is("vmt_mx_dump_all_threads_ex", "out NULL", -EINVAL,
        vmt_mx_dump_all_threads_ex(0, 0, NULL, &n));
  rc_is("vmt_mx_dump_all_threads", "max_depth -1", -EINVAL,
        vmt_mx_dump_all_threads(false, false, -1, &infos, &n));
  rc_is("vmt_mx_dump_all_threads", "out NULL", -EINVAL,
        vmt_mx_dump_all_threads(false, false, 0, NULL, &n));
  rc_is("vmt_mx_dump_all_threads", "count NULL", -EINVAL,
        vmt_mx_dump_all_threads(false, false, 0, &infos, NULL));
  rc_is("vmt_mx_dump_all_threads_at_safepoint", "an unknown flag", -EINVAL,
        vmt_mx_dump_all_threads_at_safepoint(0x8u, 0, 0, &infos, &n));
  rc_is("vmt_mx_dump_all_threads_at_safepoint", "max_depth -1", -EINVAL,
        vmt_mx_dump_all_threads_at_safepoint(0, -1, 0, &infos, &n));
  rc_is("vmt_mx_dump_all_threads_at_safepoint", "timeout_ns -1", -EINVAL,
        vmt_mx_dump_all_threads_at_safepoint(0, 0, -1, &infos, &n));
  rc_is("vmt_mx_dump_all_threads_at_safepoint", "out NULL", -EINVAL,
        vmt_mx_dump_all_threads_at_safepoint(0, 0, 0, NULL, &n));
  vmt_mx_thread_info_free(NULL);
  survives("vmt_mx_thread_info_free", "NULL");
  vmt_mx_thread_info_array_free(NULL, 5);
  survives("vmt_mx_thread_info_array_free", "NULL, count 5");
  vmt_mx_set_stack_walker(NULL, NULL);
  survives("vmt_mx_set_stack_walker", "NULL walker (none registered)");

  int64_t ns = 7;
  bool enabled;
  rc_is("vmt_mx_is_thread_cpu_time_enabled", "NULL", -EINVAL, vmt_mx_is_thread_cpu_time_enabled(NULL));
  rc_is("vmt_mx_get_current_thread_cpu_time", "NULL", -EINVAL,
        vmt_mx_get_current_thread_cpu_time(NULL));
  rc_is("vmt_mx_get_current_thread_user_time", "NULL", -EINVAL,
        vmt_mx_get_current_thread_user_time(NULL));
  rc_is("vmt_mx_get_thread_cpu_time", "id 0", -EINVAL, vmt_mx_get_thread_cpu_time(0, &ns));
  rc_is("vmt_mx_get_thread_cpu_time", "id -1", -EINVAL, vmt_mx_get_thread_cpu_time(-1, &ns));
  rc_is("vmt_mx_get_thread_cpu_time", "ns NULL", -EINVAL, vmt_mx_get_thread_cpu_time(1, NULL));
  rc_is("vmt_mx_get_thread_cpu_time", "unknown id", 0, vmt_mx_get_thread_cpu_time(INT64_MAX, &ns));
  value_is("vmt_mx_get_thread_cpu_time", "unknown id: *ns", -1, ns);
  rc_is("vmt_mx_get_thread_user_time", "id 0", -EINVAL, vmt_mx_get_thread_user_time(0, &ns));
  rc_is("vmt_mx_get_thread_user_time", "ns NULL", -EINVAL, vmt_mx_get_thread_user_time(1, NULL));
  ns = 7;
  rc_is("vmt_mx_get_thread_user_time", "unknown id", 0, vmt_mx_get_thread_user_time(INT64_MAX, &ns));
  value_is("vmt_mx_get_thread_user_time", "unknown id: *ns", -1, ns);
  int64_t out[3];
  rc_is("vmt_mx_get_thread_cpu_time_array", "ids NULL", -EINVAL,
        vmt_mx_get_thread_cpu_time_array(NULL, 1, out));
  rc_is("vmt_mx_get_thread_cpu_time_array", "out NULL", -EINVAL,
        vmt_mx_get_thread_cpu_time_array(unknown_ids, 2, NULL));
  rc_is("vmt_mx_get_thread_cpu_time_array", "an id 0 in the array", -EINVAL,
        vmt_mx_get_thread_cpu_time_array(bad_ids, 3, out));
  rc_is("vmt_mx_get_thread_user_time_array", "ids NULL", -EINVAL,
        vmt_mx_get_thread_user_time_array(NULL, 1, out));
  rc_is("vmt_mx_get_thread_user_time_array", "an id -1 in the array", -EINVAL,
        vmt_mx_get_thread_user_time_array(neg_ids, 1, out));
  out[0] = out[1] = 7;
  rc_is("vmt_mx_get_thread_cpu_time_array", "unknown ids", 0,
        vmt_mx_get_thread_cpu_time_array(unknown_ids, 2, out));
  add_row("vmt_mx_get_thread_cpu_time_array", "unknown ids: out[]", "-1, -1",
          out[0] == -1 && out[1] == -1 ? "-1, -1" : "other");

  rc_is("vmt_mx_find_monitor_deadlocked_threads", "ids NULL", -EINVAL,
        vmt_mx_find_monitor_deadlocked_threads(NULL, &n));
  rc_is("vmt_mx_find_monitor_deadlocked_threads", "count NULL", -EINVAL,
        vmt_mx_find_monitor_deadlocked_threads(&ids, NULL));
  rc_is("vmt_mx_find_deadlocked_threads", "ids NULL", -EINVAL,
        vmt_mx_find_deadlocked_threads(NULL, &n));
  rc_is("vmt_mx_find_deadlocked_threads", "count NULL", -EINVAL,
        vmt_mx_find_deadlocked_threads(&ids, NULL));
  rc_is("vmt_mx_find_deadlocked_threads_at_safepoint", "timeout_ns -1", -EINVAL,
        vmt_mx_find_deadlocked_threads_at_safepoint(-1, &ids, &n));
  rc_is("vmt_mx_find_deadlocked_threads_at_safepoint", "ids NULL", -EINVAL,
        vmt_mx_find_deadlocked_threads_at_safepoint(0, NULL, &n));

  /* Allocated bytes: -EINVAL before -ENOTSUP (the management.h convention). */
  int64_t bytes;
  rc_is("vmt_mx_is_thread_allocated_memory_enabled", "NULL", -EINVAL,
        vmt_mx_is_thread_allocated_memory_enabled(NULL));
  rc_is("vmt_mx_get_thread_allocated_bytes", "id 0", -EINVAL,
        vmt_mx_get_thread_allocated_bytes(0, &bytes));
  rc_is("vmt_mx_get_thread_allocated_bytes", "bytes NULL", -EINVAL,
        vmt_mx_get_thread_allocated_bytes(1, NULL));
  rc_is("vmt_mx_get_thread_allocated_bytes_array", "ids NULL", -EINVAL,
        vmt_mx_get_thread_allocated_bytes_array(NULL, 1, out));
  rc_is("vmt_mx_get_thread_allocated_bytes_array", "an id 0 in the array", -EINVAL,
        vmt_mx_get_thread_allocated_bytes_array(bad_ids, 3, out));
  rc_is("vmt_mx_get_current_thread_allocated_bytes", "NULL", -EINVAL,
        vmt_mx_get_current_thread_allocated_bytes(NULL));
  rc_is("vmt_mx_get_total_thread_allocated_bytes", "NULL", -EINVAL,
        vmt_mx_get_total_thread_allocated_bytes(NULL));
  if (vmt_mx_is_thread_allocated_memory_supported()) {
    rc_is("vmt_mx_get_thread_allocated_bytes", "unknown id", 0,
          vmt_mx_get_thread_allocated_bytes(INT64_MAX, &bytes));
    value_is("vmt_mx_get_thread_allocated_bytes", "unknown id: *bytes", -1, bytes);
  }

  rc_is("vmt_mx_print_thread_dump", "NULL", -EINVAL, vmt_mx_print_thread_dump(NULL));
  char *text = (char *)1;
  size_t len;
  rc_is("vmt_mx_thread_dump_to_string", "out NULL", -EINVAL, vmt_mx_thread_dump_to_string(NULL, &len));
  rc_is("vmt_mx_thread_dump_to_string", "len NULL", -EINVAL, vmt_mx_thread_dump_to_string(&text, NULL));
  rc_is("vmt_mx_print_thread_dump_json", "NULL", -EINVAL, vmt_mx_print_thread_dump_json(NULL));
  rc_is("vmt_mx_thread_dump_json_to_string", "out NULL", -EINVAL,
        vmt_mx_thread_dump_json_to_string(NULL, &len));
  rc_is("vmt_mx_thread_dump_json_to_string", "len NULL", -EINVAL,
        vmt_mx_thread_dump_json_to_string(&text, NULL));
  /* A stream that cannot be written: opened for reading only, and a full 8-byte buffer. */
  FILE *ro = fopen("/dev/null", "r");
  assert_non_null(ro);
  rc_is("vmt_mx_print_thread_dump", "stream opened for reading", -EIO, vmt_mx_print_thread_dump(ro));
  clearerr(ro);
  rc_is("vmt_mx_print_thread_dump_json", "stream opened for reading", -EIO,
        vmt_mx_print_thread_dump_json(ro));
  fclose(ro);
  char small[8];
  FILE *tiny = fmemopen(small, sizeof(small), "w");
  assert_non_null(tiny);
  setvbuf(tiny, NULL, _IONBF, 0);
  rc_is("vmt_mx_print_thread_dump_json", "8-byte buffer", -EIO, vmt_mx_print_thread_dump_json(tiny));
  fclose(tiny);
  tiny = fmemopen(small, sizeof(small), "w");
  assert_non_null(tiny);
  setvbuf(tiny, NULL, _IONBF, 0);
  rc_is("vmt_mx_print_thread_dump", "8-byte buffer", -EIO, vmt_mx_print_thread_dump(tiny));
  fclose(tiny);

  char other[4] = "xyz";
  rc_is("vmt_mx_get_other_runtime_count", "path NULL, len 1", -EINVAL,
        vmt_mx_get_other_runtime_count(NULL, 1));
  rc_is("vmt_mx_get_other_runtime_count", "path NULL, len 0 (one copy)", 0,
        vmt_mx_get_other_runtime_count(NULL, 0));
  vmt_mx_get_other_runtime_count(other, 1);
  add_row("vmt_mx_get_other_runtime_count", "len 1", "\"\" (NUL-terminated)",
          other[0] == '\0' ? "\"\" (NUL-terminated)" : "unterminated");

  rc_is("vmt_mx_frame_holds_monitor", "outside a walker", -EPERM,
        vmt_mx_frame_holds_monitor(0, NULL));
  assert_int_equal(vmt_monitor_create(&walk_live, "walked"), 0);
  assert_int_equal(vmt_monitor_create(&walk_dead, "gone"), 0);
  assert_int_equal(vmt_monitor_destroy(walk_dead), 0);
  assert_int_equal(vmt_sync_create(&walk_sync, "walked"), 0);
  vmt_thread_t *walked;
  assert_int_equal(vmt_thread_attach(NULL, &walked), 0);
  vmt_mx_set_stack_walker(reporting_walker, NULL);
  vmt_thread_info_t *wi = NULL;
  assert_int_equal(vmt_mx_get_thread_info(vmt_thread_id(walked), 4, &wi), 0);
  vmt_mx_thread_info_free(wi);
  vmt_mx_set_stack_walker(NULL, NULL);
  assert_int_equal(vmt_thread_detach(), 0);
  rc_is("vmt_mx_frame_holds_monitor", "frame -1", -EINVAL, walk_rc[0]);
  rc_is("vmt_mx_frame_holds_monitor", "frame == max", -EINVAL, walk_rc[1]);
  rc_is("vmt_mx_frame_holds_monitor", "frame INT32_MAX", -EINVAL, walk_rc[2]);
  rc_is("vmt_mx_frame_holds_monitor", "frame INT32_MIN", -EINVAL, walk_rc[3]);
  rc_is("vmt_mx_frame_holds_monitor", "monitor NULL", -EINVAL, walk_rc[4]);
  rc_is("vmt_mx_frame_holds_monitor", "destroyed monitor", -EINVAL, walk_rc[5]);
  rc_is("vmt_mx_frame_holds_monitor", "a synchronizer passed as a monitor", -EINVAL, walk_rc[6]);
  rc_is("vmt_mx_frame_holds_monitor", "frame max - 1, live monitor", 0, walk_rc[7]);
  assert_int_equal(vmt_monitor_destroy(walk_live), 0);
  assert_int_equal(vmt_sync_destroy(walk_sync), 0);

  /* Switches and the calls without input. */
  vmt_thread_t *t = running_thread();
  int64_t id = vmt_thread_id(t);
  rc_is("vmt_mx_set_thread_cpu_time_enabled", "false", 0, vmt_mx_set_thread_cpu_time_enabled(false));
  ns = 7;
  rc_is("vmt_mx_get_thread_cpu_time", "live id while disabled", 0, vmt_mx_get_thread_cpu_time(id, &ns));
  value_is("vmt_mx_get_thread_cpu_time", "live id while disabled: *ns", -1, ns);
  rc_is("vmt_mx_set_thread_cpu_time_enabled", "true", 0, vmt_mx_set_thread_cpu_time_enabled(true));
  bool alloc = vmt_mx_is_thread_allocated_memory_supported();
  const char *alloc_answer = "0 (-ENOTSUP without jemalloc)";
  add_row("vmt_mx_set_thread_allocated_memory_enabled", "false, then true", alloc_answer,
          vmt_mx_set_thread_allocated_memory_enabled(false) == (alloc ? 0 : -ENOTSUP) &&
                  vmt_mx_set_thread_allocated_memory_enabled(true) == (alloc ? 0 : -ENOTSUP)
              ? alloc_answer
              : "other");
  add_row("vmt_mx_is_thread_allocated_memory_enabled", "valid pointer", alloc_answer,
          vmt_mx_is_thread_allocated_memory_enabled(&enabled) == (alloc ? 0 : -ENOTSUP)
              ? alloc_answer
              : "other");
  rc_is("vmt_mx_set_thread_contention_monitoring_enabled", "true twice", 0,
        vmt_mx_set_thread_contention_monitoring_enabled(true) |
            vmt_mx_set_thread_contention_monitoring_enabled(true));
  value_is("vmt_mx_is_thread_contention_monitoring_enabled", "after enabling", 1,
           vmt_mx_is_thread_contention_monitoring_enabled());
  rc_is("vmt_mx_set_thread_contention_monitoring_enabled", "false", 0,
        vmt_mx_set_thread_contention_monitoring_enabled(false));
  finish(t);
  static const struct { const char *fn; bool (*f)(void); } flags[] = {
      {"vmt_mx_is_thread_cpu_time_supported", vmt_mx_is_thread_cpu_time_supported},
      {"vmt_mx_is_current_thread_cpu_time_supported", vmt_mx_is_current_thread_cpu_time_supported},
      {"vmt_mx_is_thread_contention_monitoring_supported",
       vmt_mx_is_thread_contention_monitoring_supported},
      {"vmt_mx_is_object_monitor_usage_supported", vmt_mx_is_object_monitor_usage_supported},
      {"vmt_mx_is_synchronizer_usage_supported", vmt_mx_is_synchronizer_usage_supported},
      {"vmt_mx_is_thread_allocated_memory_supported", vmt_mx_is_thread_allocated_memory_supported},
  };
  for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
    bool v = flags[i].f();
    add_row(flags[i].fn, "(no input)", "true or false", v == true || v == false ? "true or false" : "other");
  }
  add_row("vmt_mx_get_thread_count", "(no input)", ">= 0", vmt_mx_get_thread_count() >= 0 ? ">= 0" : "< 0");
  add_row("vmt_mx_get_daemon_thread_count", "(no input)", ">= 0",
          vmt_mx_get_daemon_thread_count() >= 0 ? ">= 0" : "< 0");
  add_row("vmt_mx_get_total_started_thread_count", "(no input)", ">= 0",
          vmt_mx_get_total_started_thread_count() >= 0 ? ">= 0" : "< 0");
  vmt_mx_reset_peak_thread_count();
  add_row("vmt_mx_reset_peak_thread_count", "(no input), then get_peak", "peak == live",
          vmt_mx_get_peak_thread_count() == vmt_mx_get_thread_count() ? "peak == live" : "other");
  add_row("vmt_mx_get_peak_thread_count", "(no input)", ">= live",
          vmt_mx_get_peak_thread_count() >= vmt_mx_get_thread_count() ? ">= live" : "< live");

  FILE *sink = fopen("/dev/null", "w");
  assert_non_null(sink);
  rc_is("vmt_mx_enable_sigquit_dump", "out /dev/null", 0, vmt_mx_enable_sigquit_dump(sink));
  rc_is("vmt_mx_enable_sigquit_dump", "already enabled", -EALREADY, vmt_mx_enable_sigquit_dump(NULL));
  rc_is("vmt_mx_disable_sigquit_dump", "enabled", 0, vmt_mx_disable_sigquit_dump());
  rc_is("vmt_mx_disable_sigquit_dump", "not enabled (idempotent)", 0, vmt_mx_disable_sigquit_dump());
  fclose(sink);
}

/* ---- VM services (vmthread/vmservices.h) -------------------------------------------------- */
static void hs_noop(vmt_thread_t *t, void *arg) { (void)t, (void)arg; }

/* A thread that spins in NATIVE (no runtime call) until it has been suspended, then asks to
 * suspend another thread: a suspended thread cannot (-EDEADLK). */
typedef struct suspended_asker {
  _Atomic int go, done;
  vmt_thread_t *other;
  int rc;
} suspended_asker_t;

static void *suspended_asker(void *arg) {
  suspended_asker_t *a = arg;
  while (atomic_load(&a->go) == 0) sched_yield();
  a->rc = vmt_thread_suspend(a->other, VMT_SUSPEND_VM, 0, NULL);
  atomic_store(&a->done, 1);
  return NULL;
}

static void *foreign_safepoint_end(void *arg) {
  *(int *)arg = vmt_safepoint_end(NULL);
  return NULL;
}

static void vms_functions(void **state) {
  (void)state;
  str_is("vmt_exec_state_name", "99", "UNKNOWN", vmt_exec_state_name((vmt_exec_state_t)99));
  str_is("vmt_exec_state_name", "-1", "UNKNOWN", vmt_exec_state_name((vmt_exec_state_t)-1));
  rc_is("vmt_exec_state", "NULL", -EINVAL, vmt_exec_state(NULL));
  rc_is("vmt_exec_enter", "not a runtime thread (main)", -EPERM, vmt_exec_enter(VMT_EXEC_MANAGED));
  ptr_is_null("vmt_poll_word", "NULL", vmt_poll_word(NULL));
  vmt_poll_slow(NULL);
  survives("vmt_poll_slow", "NULL");
  vmt_handshake_result_t res;
  vmt_straggler_t sg;
  rc_is("vmt_handshake_run", "target NULL", -EINVAL,
        vmt_handshake_run(NULL, hs_noop, NULL, 0, &res));
  rc_is("vmt_handshake_post", "target NULL", -EINVAL, vmt_handshake_post(NULL, hs_noop, NULL));
  rc_is("vmt_handshake_run_all", "fn NULL", -EINVAL, vmt_handshake_run_all(NULL, NULL, 0, &res));
  rc_is("vmt_handshake_run_all", "timeout_ns -1", -EINVAL,
        vmt_handshake_run_all(hs_noop, NULL, -1, &res));
  rc_is("vmt_handshake_run_all", "timeout_ns INT64_MIN", -EINVAL,
        vmt_handshake_run_all(hs_noop, NULL, INT64_MIN, NULL));
  rc_is("vmt_thread_suspend", "NULL", -EINVAL, vmt_thread_suspend(NULL, VMT_SUSPEND_VM, 0, &sg));
  rc_is("vmt_thread_resume", "NULL", -EINVAL, vmt_thread_resume(NULL, VMT_SUSPEND_VM));
  rc_is("vmt_thread_suspend_count", "NULL", -EINVAL, vmt_thread_suspend_count(NULL));
  rc_is("vmt_thread_suspend_all", "reason 3 (COUNT)", -EINVAL,
        vmt_thread_suspend_all(VMT_SUSPEND_REASON_COUNT, 0, &sg));
  rc_is("vmt_thread_suspend_all", "reason -1", -EINVAL,
        vmt_thread_suspend_all((vmt_suspend_reason_t)-1, 0, &sg));
  rc_is("vmt_thread_suspend_all", "timeout_ns -1", -EINVAL,
        vmt_thread_suspend_all(VMT_SUSPEND_VM, -1, &sg));
  rc_is("vmt_thread_resume_all", "reason 3 (COUNT)", -EINVAL,
        vmt_thread_resume_all(VMT_SUSPEND_REASON_COUNT));
  rc_is("vmt_thread_resume_all", "reason -1", -EINVAL,
        vmt_thread_resume_all((vmt_suspend_reason_t)-1));
  rc_is("vmt_thread_resume_all", "nobody suspended (resumes 0)", 0,
        vmt_thread_resume_all(VMT_SUSPEND_USER));

  /* A live target, then bad arguments around it. */
  vmt_thread_t *t = running_thread();
  rc_is("vmt_handshake_run", "fn NULL", -EINVAL, vmt_handshake_run(t, NULL, NULL, 0, &res));
  rc_is("vmt_handshake_run", "timeout_ns -1", -EINVAL,
        vmt_handshake_run(t, hs_noop, NULL, -1, &res));
  rc_is("vmt_handshake_post", "fn NULL", -EINVAL, vmt_handshake_post(t, NULL, NULL));
  rc_is("vmt_thread_suspend", "reason 3 (COUNT)", -EINVAL,
        vmt_thread_suspend(t, VMT_SUSPEND_REASON_COUNT, 0, &sg));
  rc_is("vmt_thread_suspend", "reason -1", -EINVAL,
        vmt_thread_suspend(t, (vmt_suspend_reason_t)-1, 0, &sg));
  rc_is("vmt_thread_suspend", "timeout_ns -1", -EINVAL,
        vmt_thread_suspend(t, VMT_SUSPEND_VM, -1, &sg));
  rc_is("vmt_thread_resume", "never suspended", -EINVAL, vmt_thread_resume(t, VMT_SUSPEND_VM));
  rc_is("vmt_thread_resume", "reason 3 (COUNT)", -EINVAL,
        vmt_thread_resume(t, VMT_SUSPEND_REASON_COUNT));
  value_is("vmt_thread_suspend_count", "after the refused calls", 0, vmt_thread_suspend_count(t));
  assert_int_equal(vmt_thread_suspend(t, VMT_SUSPEND_DEBUGGER, 0, NULL), 0);
  rc_is("vmt_thread_resume", "suspended for another reason", -EINVAL,
        vmt_thread_resume(t, VMT_SUSPEND_USER));
  assert_int_equal(vmt_thread_resume(t, VMT_SUSPEND_DEBUGGER), 0);
  rc_is("vmt_thread_resume", "one resume too many", -EINVAL,
        vmt_thread_resume(t, VMT_SUSPEND_DEBUGGER));
  vmt_poll_slow(t);
  survives("vmt_poll_slow", "another thread's handle (ignored)");

  /* A suspended thread asks to suspend another. */
  suspended_asker_t a = {.other = t};
  vmt_thread_t *asker;
  assert_int_equal(vmt_thread_start(&asker, suspended_asker, &a), 0);
  assert_int_equal(vmt_thread_suspend(asker, VMT_SUSPEND_VM, 0, NULL), 0);
  atomic_store(&a.go, 1);
  while (atomic_load(&a.done) == 0) sched_yield();
  rc_is("vmt_thread_suspend", "the caller is suspended", -EDEADLK, a.rc);
  value_is("vmt_thread_suspend_count", "target of the refused suspend", 0,
           vmt_thread_suspend_count(t));
  assert_int_equal(vmt_thread_resume(asker, VMT_SUSPEND_VM), 0);
  assert_int_equal(vmt_thread_join(asker, NULL), 0);
  assert_int_equal(vmt_thread_release(asker), 0);
  finish(t);

  /* Safepoints: one at a time per coordinator, ended only by it. */
  rc_is("vmt_safepoint_begin", "timeout_ns -1", -EINVAL, vmt_safepoint_begin(-1, NULL));
  rc_is("vmt_safepoint_begin", "timeout_ns INT64_MIN", -EINVAL,
        vmt_safepoint_begin(INT64_MIN, NULL));
  rc_is("vmt_safepoint_end", "none in progress", -EPERM, vmt_safepoint_end(NULL));
  value_is("vmt_safepoint_in_progress", "after the refused calls", 0, vmt_safepoint_in_progress());
  assert_int_equal(vmt_safepoint_begin(0, NULL), 0);
  rc_is("vmt_safepoint_begin", "the caller holds one", -EDEADLK, vmt_safepoint_begin(0, NULL));
  int end_rc = 0;
  pthread_t p;
  assert_int_equal(pthread_create(&p, NULL, foreign_safepoint_end, &end_rc), 0);
  pthread_join(p, NULL);
  rc_is("vmt_safepoint_end", "from a thread that did not begin it", -EPERM, end_rc);
  value_is("vmt_safepoint_in_progress", "held", 1, vmt_safepoint_in_progress());
  assert_int_equal(vmt_safepoint_end(NULL), 0);
  rc_is("vmt_safepoint_end", "second end", -EPERM, vmt_safepoint_end(NULL));

  /* An exited thread (joined, still referenced), then the same record released. */
  vmt_thread_t *e;
  assert_int_equal(vmt_thread_start(&e, return_arg, NULL), 0);
  assert_int_equal(vmt_thread_join(e, NULL), 0);
  value_is("vmt_exec_state", "exited thread (EXITED)", VMT_EXEC_EXITED, vmt_exec_state(e));
  rc_is("vmt_handshake_run", "exited thread", -ESRCH, vmt_handshake_run(e, hs_noop, NULL, 0, &res));
  rc_is("vmt_handshake_post", "exited thread", -ESRCH, vmt_handshake_post(e, hs_noop, NULL));
  rc_is("vmt_thread_suspend", "exited thread", -ESRCH,
        vmt_thread_suspend(e, VMT_SUSPEND_VM, 0, &sg));
  value_is("vmt_thread_suspend_count", "exited thread, after the refused suspend", 0,
           vmt_thread_suspend_count(e));
  rc_is("vmt_thread_resume", "exited thread", -ESRCH, vmt_thread_resume(e, VMT_SUSPEND_VM));
  assert_int_equal(vmt_thread_release(e), 0);
  rc_is("vmt_exec_state", "released handle", -EINVAL, vmt_exec_state(e));
  ptr_is_null("vmt_poll_word", "released handle", vmt_poll_word(e));
  rc_is("vmt_handshake_run", "released handle", -EINVAL,
        vmt_handshake_run(e, hs_noop, NULL, 0, &res));
  rc_is("vmt_handshake_post", "released handle", -EINVAL, vmt_handshake_post(e, hs_noop, NULL));
  rc_is("vmt_thread_suspend", "released handle", -EINVAL,
        vmt_thread_suspend(e, VMT_SUSPEND_VM, 0, &sg));
  rc_is("vmt_thread_resume", "released handle", -EINVAL, vmt_thread_resume(e, VMT_SUSPEND_VM));
  rc_is("vmt_thread_suspend_count", "released handle", -EINVAL, vmt_thread_suspend_count(e));
  vmt_poll_slow(e);
  survives("vmt_poll_slow", "released handle");

  vmt_thread_t *me;
  assert_int_equal(vmt_thread_attach(NULL, &me), 0);
  rc_is("vmt_exec_enter", "EXITED", -EINVAL, vmt_exec_enter(VMT_EXEC_EXITED));
  rc_is("vmt_exec_enter", "99", -EINVAL, vmt_exec_enter((vmt_exec_state_t)99));
  rc_is("vmt_exec_enter", "-1", -EINVAL, vmt_exec_enter((vmt_exec_state_t)-1));
  value_is("vmt_exec_state", "self, after the refused enters (NATIVE)", VMT_EXEC_NATIVE,
           vmt_exec_state(me));
  assert_int_equal(vmt_thread_detach(), 0);
}

/* ---- the thread API of #15: interrupts, timed join, park, slack, stacks, TLS, hooks ------- */
static int hook_remove_rc = 1;
static void remover_hook(vmt_thread_t *t, void *ctx) {
  (void)t;
  hook_remove_rc = vmt_thread_hooks_remove(remover_hook, NULL, ctx);
}
static void quiet_hook(vmt_thread_t *t, void *ctx) { (void)t, (void)ctx; }

static vmt_tls_key_t ended_key;
static void *set_slot(void *arg) {
  vmt_tls_set(ended_key, arg);
  return NULL;
}

static void *timed_self_join(void *arg) {
  *(int *)arg = vmt_thread_timed_join(vmt_thread_current(), 1000, NULL);
  return NULL;
}

static void thread_api_functions(void **state) {
  (void)state;
  /* Interrupts. */
  rc_is("vmt_thread_interrupt", "NULL", -EINVAL, vmt_thread_interrupt(NULL));
  value_is("vmt_thread_is_interrupted", "NULL", 0, vmt_thread_is_interrupted(NULL));
  value_is("vmt_thread_interrupted", "not a runtime thread (main)", 0, vmt_thread_interrupted());

  /* Timed join. */
  rc_is("vmt_thread_timed_join", "NULL", -EINVAL, vmt_thread_timed_join(NULL, 1000, NULL));
  vmt_thread_t *t = running_thread();
  rc_is("vmt_thread_timed_join", "timeout -1, alive", -ETIMEDOUT,
        vmt_thread_timed_join(t, -1, NULL));
  rc_is("vmt_thread_timed_join", "timeout INT64_MIN, alive", -ETIMEDOUT,
        vmt_thread_timed_join(t, INT64_MIN, NULL));
  rc_is("vmt_thread_timed_join", "timeout 1 us, alive", -ETIMEDOUT,
        vmt_thread_timed_join(t, 1000, NULL));
  rc_is("vmt_thread_set_name", "t NULL", -EINVAL, vmt_thread_set_name(NULL, "x"));
  rc_is("vmt_thread_set_name", "name NULL", -EINVAL, vmt_thread_set_name(t, NULL));
  rc_is("vmt_thread_set_name", "name \"\"", -EINVAL, vmt_thread_set_name(t, ""));
  rc_is("vmt_thread_set_name", "name 0xFF", -EINVAL, vmt_thread_set_name(t, "\xff"));
  memset(long_name, 'n', VMT_THREAD_NAME_MAX + 1);
  long_name[VMT_THREAD_NAME_MAX + 1] = '\0';
  rc_is("vmt_thread_set_name", "name of 4097 bytes", -EINVAL, vmt_thread_set_name(t, long_name));
  char before[64], buf[64];
  snprintf(before, sizeof(before), "%s", vmt_thread_name(t));
  vmt_thread_get_name(t, buf, sizeof(buf));
  add_row("vmt_thread_get_name", "after the refused renames", "the old name",
          strcmp(buf, before) == 0 ? "the old name" : buf);
  rc_is("vmt_thread_get_name", "t NULL", -EINVAL, vmt_thread_get_name(NULL, buf, sizeof(buf)));
  rc_is("vmt_thread_get_name", "buf NULL, len 10", -EINVAL, vmt_thread_get_name(t, NULL, 10));
  value_is("vmt_thread_get_name", "buf NULL, len 0 (the length)", (long long)strlen(before),
           vmt_thread_get_name(t, NULL, 0));
  char one[1] = {'x'};
  vmt_thread_get_name(t, one, 1);
  add_row("vmt_thread_get_name", "len 1", "\"\" (NUL-terminated)",
          one[0] == '\0' ? "\"\" (NUL-terminated)" : "unterminated");
  rc_is("vmt_thread_set_priority", "t NULL", -EINVAL, vmt_thread_set_priority(NULL, 5));
  static const int bad_prio[] = {0, 11, -1, INT_MIN, INT_MAX};
  for (size_t i = 0; i < sizeof(bad_prio) / sizeof(bad_prio[0]); i++) {
    char what[48];
    snprintf(what, sizeof(what), "priority %d", bad_prio[i]);
    rc_is("vmt_thread_set_priority", what, -EINVAL, vmt_thread_set_priority(t, bad_prio[i]));
  }
  value_is("vmt_thread_priority", "after the refused sets", VMT_THREAD_NORM_PRIORITY,
           vmt_thread_priority(t));
  vmt_stack_info_t si;
  rc_is("vmt_thread_stack_info", "t NULL", -EINVAL, vmt_thread_stack_info(NULL, &si));
  rc_is("vmt_thread_stack_info", "out NULL", -EINVAL, vmt_thread_stack_info(t, NULL));
  void *v = (void *)1;
  rc_is("vmt_thread_tls_get", "t NULL", -EINVAL, vmt_thread_tls_get(NULL, 1, &v));
  finish(t);

  /* A thread that times out joining itself is refused first (-EDEADLK). */
  int self_rc = 0;
  assert_int_equal(vmt_thread_start(&t, timed_self_join, &self_rc), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  rc_is("vmt_thread_timed_join", "the calling thread itself", -EDEADLK, self_rc);
  rc_is("vmt_thread_timed_join", "second join", -EALREADY, vmt_thread_timed_join(t, 1000, NULL));
  /* Interrupting a terminated thread sets its status (Java's isInterrupted of a dead thread). */
  rc_is("vmt_thread_interrupt", "terminated (joined) thread", 0, vmt_thread_interrupt(t));
  value_is("vmt_thread_is_interrupted", "terminated, interrupted", 1, vmt_thread_is_interrupted(t));
  /* Nobody asked for its stack before the join: the stack is gone. */
  rc_is("vmt_thread_stack_info", "joined before anyone asked", -ESRCH,
        vmt_thread_stack_info(t, &si));
  assert_int_equal(vmt_thread_release(t), 0);
  /* t has terminated and its last user reference is gone: a stale handle, whether the
   * registry still holds the record or it is back in the pool (nothing started since). */
  rc_is("vmt_thread_interrupt", "released handle", -EINVAL, vmt_thread_interrupt(t));
  value_is("vmt_thread_is_interrupted", "released handle", 0, vmt_thread_is_interrupted(t));
  rc_is("vmt_thread_timed_join", "released handle", -EINVAL, vmt_thread_timed_join(t, 1000, NULL));
  rc_is("vmt_thread_set_name", "released handle", -EINVAL, vmt_thread_set_name(t, "x"));
  rc_is("vmt_thread_get_name", "released handle", -EINVAL,
        vmt_thread_get_name(t, buf, sizeof(buf)));
  rc_is("vmt_thread_set_priority", "released handle", -EINVAL, vmt_thread_set_priority(t, 5));
  rc_is("vmt_thread_stack_info", "released handle", -EINVAL, vmt_thread_stack_info(t, &si));
  rc_is("vmt_thread_tls_get", "released handle", -EINVAL, vmt_thread_tls_get(t, 1, &v));
  rc_is("vmt_thread_tid", "released handle", -EINVAL, vmt_thread_tid(t));
  rc_is("vmt_unpark", "released handle", -EINVAL, vmt_unpark(t));

  /* Park and the park blocker, on a thread that is not a runtime thread (main)... */
  rc_is("vmt_park_nanos", "not a runtime thread (main)", -EPERM, vmt_park_nanos(1000));
  rc_is("vmt_park_until", "not a runtime thread (main)", -EPERM,
        vmt_park_until(0, VMT_CLOCK_MONOTONIC));
  rc_is("vmt_park_until", "clock 2, not a runtime thread", -EINVAL,
        vmt_park_until(0, (vmt_clock_t)2));
  vmt_park_blocker_t pb = {.class_name = "java.lang.Object", .identity_hash = 1, .owner_id = 0};
  rc_is("vmt_thread_set_park_blocker", "not a runtime thread (main)", -EPERM,
        vmt_thread_set_park_blocker(&pb));
  rc_is("vmt_stack_guard_reenable", "not a runtime thread (main)", -EPERM,
        vmt_stack_guard_reenable());
  add_row("vmt_stack_bytes_left_slow", "not a runtime thread (main)", "SIZE_MAX",
          vmt_stack_bytes_left_slow() == SIZE_MAX ? "SIZE_MAX" : "other");
  add_row("vmt_stack_bytes_left", "not a runtime thread (main)", "SIZE_MAX",
          vmt_stack_bytes_left() == SIZE_MAX ? "SIZE_MAX" : "other");
  /* ...and on an attached one. */
  vmt_thread_t *me;
  assert_int_equal(vmt_thread_attach(NULL, &me), 0);
  rc_is("vmt_park_nanos", "0 (returns at once)", -ETIMEDOUT, vmt_park_nanos(0));
  rc_is("vmt_park_nanos", "-1", -ETIMEDOUT, vmt_park_nanos(-1));
  rc_is("vmt_park_nanos", "INT64_MIN", -ETIMEDOUT, vmt_park_nanos(INT64_MIN));
  assert_int_equal(vmt_unpark(me), 0);
  rc_is("vmt_park_nanos", "-1, permit available (kept)", -ETIMEDOUT, vmt_park_nanos(-1));
  rc_is("vmt_park_until", "deadline passed, permit available (consumed)", 0,
        vmt_park_until(0, VMT_CLOCK_MONOTONIC));
  rc_is("vmt_park_until", "deadline -1, monotonic", -ETIMEDOUT,
        vmt_park_until(-1, VMT_CLOCK_MONOTONIC));
  rc_is("vmt_park_until", "deadline INT64_MIN, realtime", -ETIMEDOUT,
        vmt_park_until(INT64_MIN, VMT_CLOCK_REALTIME));
  rc_is("vmt_park_until", "clock 2", -EINVAL, vmt_park_until(INT64_MAX, (vmt_clock_t)2));
  rc_is("vmt_park_until", "clock -1", -EINVAL, vmt_park_until(INT64_MAX, (vmt_clock_t)-1));
  pb.class_name = NULL;
  rc_is("vmt_thread_set_park_blocker", "class_name NULL", -EINVAL,
        vmt_thread_set_park_blocker(&pb));
  pb = (vmt_park_blocker_t){.class_name = "x", .owner_id = -1};
  rc_is("vmt_thread_set_park_blocker", "owner_id -1", -EINVAL, vmt_thread_set_park_blocker(&pb));
  rc_is("vmt_thread_set_park_blocker", "NULL (clears)", 0, vmt_thread_set_park_blocker(NULL));
  rc_is("vmt_stack_guard_reenable", "no guard zones", 0, vmt_stack_guard_reenable());
  value_is("vmt_thread_interrupted", "never interrupted", 0, vmt_thread_interrupted());
  rc_is("vmt_thread_set_timer_slack", "-1", -EINVAL, vmt_thread_set_timer_slack(-1));
  rc_is("vmt_thread_set_timer_slack", "1 s + 1 ns", -EINVAL,
        vmt_thread_set_timer_slack(VMT_THREAD_TIMER_SLACK_MAX_NS + 1));
  rc_is("vmt_thread_set_timer_slack", "INT64_MIN", -EINVAL, vmt_thread_set_timer_slack(INT64_MIN));
  add_row("vmt_thread_timer_slack", "after the refused sets", ">= 0",
          vmt_thread_timer_slack() >= 0 ? ">= 0" : "< 0");
  assert_int_equal(vmt_thread_detach(), 0);
  rc_is("vmt_thread_set_default_timer_slack", "-1", -EINVAL,
        vmt_thread_set_default_timer_slack(-1));
  rc_is("vmt_thread_set_default_timer_slack", "1 s + 1 ns", -EINVAL,
        vmt_thread_set_default_timer_slack(VMT_THREAD_TIMER_SLACK_MAX_NS + 1));
  rc_is("vmt_thread_set_default_timer_slack", "INT64_MAX", -EINVAL,
        vmt_thread_set_default_timer_slack(INT64_MAX));
  value_is("vmt_thread_default_timer_slack", "after the refused sets",
           VMT_THREAD_TIMER_SLACK_DEFAULT_NS, vmt_thread_default_timer_slack());

  /* Options of #15: timer slack and guard zones. */
  vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_TIMER_SLACK, .timer_slack_ns = -1};
  rc_is("vmt_thread_start_ex", "timer slack -1", -EINVAL, start_with(&o));
  o.timer_slack_ns = VMT_THREAD_TIMER_SLACK_MAX_NS + 1;
  rc_is("vmt_thread_start_ex", "timer slack 1 s + 1 ns", -EINVAL, start_with(&o));
  me = (vmt_thread_t *)1;
  rc_is("vmt_thread_attach", "timer slack -1", -EINVAL, vmt_thread_attach(&o, &me));
  o = (vmt_thread_options_t){.flags = VMT_THREAD_OPT_STACK_GUARD,
                             .stack_guard = {.red_size = SIZE_MAX}};
  rc_is("vmt_thread_start_ex", "red zone SIZE_MAX", -EINVAL, start_with(&o));
  o.stack_guard = (vmt_stack_guard_t){
      .red_size = SIZE_MAX / 2, .yellow_size = SIZE_MAX / 2, .reserved_size = SIZE_MAX / 2};
  rc_is("vmt_thread_start_ex", "zones SIZE_MAX / 2 each (sum wraps)", -EINVAL, start_with(&o));
  o = (vmt_thread_options_t){.flags = VMT_THREAD_OPT_STACK_GUARD | VMT_THREAD_OPT_STACK_SIZE,
                             .stack_size = 256 * 1024,
                             .stack_guard = {.yellow_size = 256 * 1024}};
  rc_is("vmt_thread_start_ex", "zones larger than the stack", -EINVAL, start_with(&o));
  o = (vmt_thread_options_t){.flags = VMT_THREAD_OPT_STACK_GUARD,
                             .stack_guard = {.red_size = 4096}};
  rc_is("vmt_thread_attach", "guard zones (started threads only)", -EINVAL,
        vmt_thread_attach(&o, &me));
  ptr_is_null("vmt_thread_current", "after the refused attaches", vmt_thread_current());
  str_is("vmt_stack_zone_name", "99", "none", vmt_stack_zone_name((vmt_stack_zone_t)99));
  str_is("vmt_stack_zone_name", "-1", "none", vmt_stack_zone_name((vmt_stack_zone_t)-1));
  vmt_stack_overflow_handler_set(NULL, NULL);
  survives("vmt_stack_overflow_handler_set", "NULL (none set)");

  /* TLS keys: NULL, out of range, deleted, all in use, from a thread without slots. */
  rc_is("vmt_tls_key_create", "key NULL", -EINVAL, vmt_tls_key_create(NULL, NULL));
  rc_is("vmt_tls_key_delete", "key 0", -EINVAL, vmt_tls_key_delete(0));
  rc_is("vmt_tls_key_delete", "key VMT_TLS_KEYS_MAX", -EINVAL,
        vmt_tls_key_delete(VMT_TLS_KEYS_MAX));
  rc_is("vmt_tls_key_delete", "key UINT32_MAX", -EINVAL, vmt_tls_key_delete(UINT32_MAX));
  rc_is("vmt_tls_set", "key 0", -EINVAL, vmt_tls_set(0, &v));
  rc_is("vmt_tls_set", "key UINT32_MAX", -EINVAL, vmt_tls_set(UINT32_MAX, &v));
  vmt_tls_key_t k;
  assert_int_equal(vmt_tls_key_create(&k, NULL), 0);
  rc_is("vmt_tls_set", "not a runtime thread (main)", -EPERM, vmt_tls_set(k, &v));
  ptr_is_null("vmt_tls_get", "not a runtime thread (main)", vmt_tls_get(k));
  assert_int_equal(vmt_thread_attach(NULL, &me), 0);
  assert_int_equal(vmt_tls_set(k, &v), 0);
  /* A thread that set its slot and ended: "NULL once t has ended". */
  ended_key = k;
  vmt_thread_t *ended;
  assert_int_equal(vmt_thread_start(&ended, set_slot, &v), 0);
  assert_int_equal(vmt_thread_join(ended, NULL), 0);
  void *slot = &v;
  rc_is("vmt_thread_tls_get", "ended thread", 0, vmt_thread_tls_get(ended, k, &slot));
  ptr_is_null("vmt_thread_tls_get", "ended thread: *value", slot);
  assert_int_equal(vmt_thread_release(ended), 0);
  rc_is("vmt_thread_tls_get", "value NULL", -EINVAL, vmt_thread_tls_get(me, k, NULL));
  rc_is("vmt_thread_tls_get", "key 0", -EINVAL, vmt_thread_tls_get(me, 0, &v));
  ptr_is_null("vmt_tls_get", "key 0", vmt_tls_get(0));
  ptr_is_null("vmt_tls_get", "key VMT_TLS_KEYS_MAX", vmt_tls_get(VMT_TLS_KEYS_MAX));
  ptr_is_null("vmt_tls_get", "key UINT32_MAX", vmt_tls_get(UINT32_MAX));
  assert_int_equal(vmt_tls_key_delete(k), 0);
  rc_is("vmt_tls_key_delete", "deleted key (double delete)", -EINVAL, vmt_tls_key_delete(k));
  rc_is("vmt_tls_set", "deleted key", -EINVAL, vmt_tls_set(k, &v));
  ptr_is_null("vmt_tls_get", "deleted key", vmt_tls_get(k));
  rc_is("vmt_thread_tls_get", "deleted key", -EINVAL, vmt_thread_tls_get(me, k, &v));
  vmt_tls_key_t keys[VMT_TLS_KEYS_MAX];
  size_t created = 0;
  int rc;
  while ((rc = vmt_tls_key_create(&keys[created], NULL)) == 0 && created < VMT_TLS_KEYS_MAX - 1)
    created++;
  rc_is("vmt_tls_key_create", "all 63 keys in use", -EAGAIN, rc);
  for (size_t i = 0; i < created; i++) assert_int_equal(vmt_tls_key_delete(keys[i]), 0);
  assert_int_equal(vmt_thread_detach(), 0);

  /* Hooks: neither function, all slots in use, removing what is not there, from a hook. */
  rc_is("vmt_thread_hooks_add", "both functions NULL", -EINVAL,
        vmt_thread_hooks_add(NULL, NULL, NULL));
  rc_is("vmt_thread_hooks_remove", "never added", -ENOENT,
        vmt_thread_hooks_remove(quiet_hook, NULL, NULL));
  rc_is("vmt_thread_hooks_remove", "both functions NULL", -ENOENT,
        vmt_thread_hooks_remove(NULL, NULL, NULL));
  int added = 0;
  while ((rc = vmt_thread_hooks_add(quiet_hook, NULL, &keys[added])) == 0 && added < 64) added++;
  rc_is("vmt_thread_hooks_add", "all VMT_THREAD_HOOKS_MAX slots in use", -EAGAIN, rc);
  for (int i = 0; i < added; i++)
    assert_int_equal(vmt_thread_hooks_remove(quiet_hook, NULL, &keys[i]), 0);
  rc_is("vmt_thread_hooks_remove", "removed (double remove)", -ENOENT,
        vmt_thread_hooks_remove(quiet_hook, NULL, &keys[0]));
  rc_is("vmt_thread_hooks_remove", "another ctx than added", -ENOENT,
        vmt_thread_hooks_remove(quiet_hook, NULL, &keys[1]));
  assert_int_equal(vmt_thread_hooks_add(remover_hook, NULL, &hook_remove_rc), 0);
  assert_int_equal(vmt_thread_start(&t, return_arg, NULL), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(vmt_thread_release(t), 0);
  assert_int_equal(vmt_thread_hooks_remove(remover_hook, NULL, &hook_remove_rc), 0);
  rc_is("vmt_thread_hooks_remove", "from inside a hook", -EDEADLK, hook_remove_rc);

  /* holds_lock: NULL, the other kind, held by nobody, held by another thread. */
  rc_is("vmt_monitor_holds_lock", "NULL", -EINVAL, vmt_monitor_holds_lock(NULL));
  rc_is("vmt_sync_holds_lock", "NULL", -EINVAL, vmt_sync_holds_lock(NULL));
  vmt_monitor_t *m;
  vmt_sync_t *s;
  assert_int_equal(vmt_monitor_create(&m, "holds"), 0);
  assert_int_equal(vmt_sync_create(&s, "holds"), 0);
  rc_is("vmt_monitor_holds_lock", "a synchronizer passed as a monitor", -EINVAL,
        vmt_monitor_holds_lock((const vmt_monitor_t *)s));
  rc_is("vmt_sync_holds_lock", "a monitor passed as a synchronizer", -EINVAL,
        vmt_sync_holds_lock((const vmt_sync_t *)m));
  value_is("vmt_monitor_holds_lock", "not entered", 0, vmt_monitor_holds_lock(m));
  value_is("vmt_sync_holds_lock", "not locked", 0, vmt_sync_holds_lock(s));
  assert_int_equal(vmt_monitor_destroy(m), 0);
  assert_int_equal(vmt_sync_destroy(s), 0);

  /* Category usage. */
  vmt_category_usage_t *usage = (vmt_category_usage_t *)1;
  size_t n;
  rc_is("vmt_mx_get_category_usage", "out NULL", -EINVAL, vmt_mx_get_category_usage(NULL, &n));
  rc_is("vmt_mx_get_category_usage", "count NULL", -EINVAL,
        vmt_mx_get_category_usage(&usage, NULL));
  vmt_mx_category_usage_free(NULL);
  survives("vmt_mx_category_usage_free", "NULL");
}

/* ---- the profiler (vmthread/profiler.h) ------------------------------------------------- */
static void host_handler(int sig) { (void)sig; }

static void profiler_functions(void **state) {
  (void)state;
  struct {
    vmt_prof_options_t o;
    const char *what;
  } bad[] = {
      {{.flags = 1u << 20}, "unknown flag"},
      {{.flags = VMT_PROF_OPT_PERIOD, .period_ns = 0}, "period 0"},
      {{.flags = VMT_PROF_OPT_PERIOD, .period_ns = -1}, "period -1"},
      {{.flags = VMT_PROF_OPT_PERIOD, .period_ns = VMT_PROF_PERIOD_MAX_NS + 1},
       "period 1 s + 1 ns"},
      {{.flags = VMT_PROF_OPT_MAX_DEPTH, .max_depth = 0}, "max_depth 0"},
      {{.flags = VMT_PROF_OPT_MAX_DEPTH, .max_depth = VMT_PROF_MAX_DEPTH_LIMIT + 1},
       "max_depth 1025"},
      {{.flags = VMT_PROF_OPT_BUFFER, .buffer_bytes = VMT_PROF_BUFFER_MIN - 1},
       "buffer 4095 bytes"},
      {{.flags = VMT_PROF_OPT_BUFFER, .buffer_bytes = UINT32_MAX}, "buffer UINT32_MAX bytes"},
      {{.flags = VMT_PROF_OPT_SIGNAL, .signal = SIGKILL}, "signal SIGKILL"},
      {{.flags = VMT_PROF_OPT_SIGNAL, .signal = SIGSEGV}, "signal SIGSEGV"},
      {{.flags = VMT_PROF_OPT_SIGNAL, .signal = 0}, "signal 0"},
      {{.flags = VMT_PROF_OPT_SIGNAL, .signal = -1}, "signal -1"},
      {{.flags = VMT_PROF_OPT_SIGNAL, .signal = 33}, "signal 33 (glibc's own)"},
      {{.flags = VMT_PROF_OPT_SIGNAL, .signal = NSIG}, "signal NSIG"},
      {{.flags = VMT_PROF_OPT_MODE, .mode = (vmt_prof_mode_t)7}, "mode 7"},
      {{.flags = VMT_PROF_OPT_MODE, .mode = (vmt_prof_mode_t)-1}, "mode -1"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    rc_is("vmt_prof_start", bad[i].what, -EINVAL, vmt_prof_start(&bad[i].o));
  value_is("vmt_prof_is_running", "after the refused starts", 0, vmt_prof_is_running());
  str_is("vmt_prof_lost_cause_name", "VMT_PROF_LOST_BUFFER_FULL (a known cause)", "buffer_full",
         vmt_prof_lost_cause_name(VMT_PROF_LOST_BUFFER_FULL));
  str_is("vmt_prof_lost_cause_name", "VMT_PROF_LOST_COUNT", "NULL",
         vmt_prof_lost_cause_name(VMT_PROF_LOST_COUNT));
  str_is("vmt_prof_lost_cause_name", "-1", "NULL",
         vmt_prof_lost_cause_name((vmt_prof_lost_cause_t)-1));
  rc_is("vmt_prof_stop", "not running", 0, vmt_prof_stop());
  rc_is("vmt_prof_clear", "no profile", 0, vmt_prof_clear());
  vmt_prof_stats_t st;
  vmt_prof_thread_stats_t ts;
  char *text = (char *)1;
  size_t len = 1;
  rc_is("vmt_prof_get_stats", "NULL", -EINVAL, vmt_prof_get_stats(NULL));
  rc_is("vmt_prof_get_stats", "no profile (all zero)", 0, vmt_prof_get_stats(&st));
  rc_is("vmt_prof_get_thread_stats", "id 0", -EINVAL, vmt_prof_get_thread_stats(0, &ts));
  rc_is("vmt_prof_get_thread_stats", "id -1", -EINVAL, vmt_prof_get_thread_stats(-1, &ts));
  rc_is("vmt_prof_get_thread_stats", "out NULL", -EINVAL, vmt_prof_get_thread_stats(1, NULL));
  rc_is("vmt_prof_get_thread_stats", "no profile", -ENOENT, vmt_prof_get_thread_stats(1, &ts));
  rc_is("vmt_prof_write_collapsed", "out NULL", -EINVAL, vmt_prof_write_collapsed(NULL, 0));
  rc_is("vmt_prof_write_collapsed", "an unknown flag", -EINVAL,
        vmt_prof_write_collapsed(stdout, 1u << 9));
  rc_is("vmt_prof_write_collapsed", "no profile", -ENOENT, vmt_prof_write_collapsed(stdout, 0));
  rc_is("vmt_prof_collapsed_to_string", "out NULL", -EINVAL,
        vmt_prof_collapsed_to_string(0, NULL, &len));
  rc_is("vmt_prof_collapsed_to_string", "len NULL", -EINVAL,
        vmt_prof_collapsed_to_string(0, &text, NULL));
  rc_is("vmt_prof_collapsed_to_string", "an unknown flag", -EINVAL,
        vmt_prof_collapsed_to_string(1u << 9, &text, &len));
  rc_is("vmt_prof_collapsed_to_string", "no profile", -ENOENT,
        vmt_prof_collapsed_to_string(0, &text, &len));
  ptr_is_null("vmt_prof_collapsed_to_string", "no profile: *out", text);
  rc_is("vmt_prof_write_flamegraph", "out NULL", -EINVAL, vmt_prof_write_flamegraph(NULL, NULL, 0));
  rc_is("vmt_prof_write_flamegraph", "an unknown flag", -EINVAL,
        vmt_prof_write_flamegraph(stdout, NULL, 1u << 9));
  rc_is("vmt_prof_write_flamegraph", "no profile", -ENOENT,
        vmt_prof_write_flamegraph(stdout, "t", 0));
  rc_is("vmt_prof_write_table", "out NULL", -EINVAL, vmt_prof_write_table(NULL));
  rc_is("vmt_prof_write_table", "no profile", -ENOENT, vmt_prof_write_table(stdout));
  rc_is("vmt_prof_set_thread_excluded", "NULL", -EINVAL, vmt_prof_set_thread_excluded(NULL, true));
  vmt_thread_t *gone;
  assert_int_equal(vmt_thread_start(&gone, return_arg, NULL), 0);
  assert_int_equal(vmt_thread_join(gone, NULL), 0);
  rc_is("vmt_prof_set_thread_excluded", "a terminated thread (nothing to do)", 0,
        vmt_prof_set_thread_excluded(gone, true));
  assert_int_equal(vmt_thread_release(gone), 0);
  rc_is("vmt_prof_set_thread_excluded", "released handle", -EINVAL,
        vmt_prof_set_thread_excluded(gone, false));

  /* Signal control: unusable signals, the sampling signal, a host's handler, twice. */
  rc_is("vmt_prof_disable_signal_control", "not enabled", 0, vmt_prof_disable_signal_control());
  rc_is("vmt_prof_enable_signal_control", "signal 0", -EINVAL,
        vmt_prof_enable_signal_control(0, NULL));
  rc_is("vmt_prof_enable_signal_control", "SIGKILL", -EINVAL,
        vmt_prof_enable_signal_control(SIGKILL, NULL));
  rc_is("vmt_prof_enable_signal_control", "NSIG", -EINVAL,
        vmt_prof_enable_signal_control(NSIG, NULL));
  rc_is("vmt_prof_enable_signal_control", "the default sampling signal", -EINVAL,
        vmt_prof_enable_signal_control(SIGRTMIN + 6, NULL));
  /* SIGQUIT is the thread dump's: control there would leave kill -3 ignored after both are
   * disabled in the order they were enabled (each restores what it found). */
  rc_is("vmt_prof_enable_signal_control", "SIGQUIT", -EINVAL,
        vmt_prof_enable_signal_control(SIGQUIT, NULL));
  rc_is("vmt_prof_disable_signal_control", "not enabled after SIGQUIT", 0,
        vmt_prof_disable_signal_control());
  struct sigaction host = {.sa_handler = host_handler}, old;
  assert_int_equal(sigaction(SIGUSR2, &host, &old), 0);
  rc_is("vmt_prof_enable_signal_control", "the host has a handler on it", -EBUSY,
        vmt_prof_enable_signal_control(SIGUSR2, NULL));
  assert_int_equal(sigaction(SIGUSR2, &old, NULL), 0);
  assert_int_equal(vmt_prof_enable_signal_control(SIGUSR2, "/tmp/vmt-badinput-unused"), 0);
  rc_is("vmt_prof_enable_signal_control", "already enabled", -EALREADY,
        vmt_prof_enable_signal_control(SIGUSR1, NULL));
  rc_is("vmt_prof_disable_signal_control", "enabled", 0, vmt_prof_disable_signal_control());

  /* A running profile, then a stopped one. */
  int started = vmt_prof_start(NULL);
  const char *start_answer = "0 (-ENOTSUP without CPU timers)";
  add_row("vmt_prof_start", "defaults", start_answer,
          started == 0 || started == -ENOTSUP ? start_answer : "other");
  if (started == 0) {
    rc_is("vmt_prof_start", "running", -EALREADY, vmt_prof_start(NULL));
    rc_is("vmt_prof_set_walker", "running", -EBUSY, vmt_prof_set_walker(NULL, NULL, NULL));
    rc_is("vmt_prof_clear", "running", -EBUSY, vmt_prof_clear());
    rc_is("vmt_prof_enable_signal_control", "the running profile's signal", -EINVAL,
          vmt_prof_enable_signal_control(SIGRTMIN + 6, NULL));
    rc_is("vmt_prof_stop", "running", 0, vmt_prof_stop());
    rc_is("vmt_prof_stop", "stopped (idempotent)", 0, vmt_prof_stop());
    value_is("vmt_prof_is_running", "stopped", 0, vmt_prof_is_running());
    rc_is("vmt_prof_get_thread_stats", "stopped, unknown id", -ENOENT,
          vmt_prof_get_thread_stats(INT64_MAX, &ts));
    FILE *ro = fopen("/dev/null", "r");
    assert_non_null(ro);
    rc_is("vmt_prof_write_table", "stopped, stream opened for reading", -EIO,
          vmt_prof_write_table(ro));
    clearerr(ro);
    rc_is("vmt_prof_write_flamegraph", "stopped, stream opened for reading", -EIO,
          vmt_prof_write_flamegraph(ro, NULL, 0));
    fclose(ro);
    assert_int_equal(vmt_prof_clear(), 0);
    rc_is("vmt_prof_write_table", "cleared", -ENOENT, vmt_prof_write_table(stdout));
  }
  rc_is("vmt_prof_set_walker", "NULL, NULL (none)", 0, vmt_prof_set_walker(NULL, NULL, NULL));
}

/* ---- every public function has a row ------------------------------------------------------ */
/* Functions with no input that could be bad, so no row: each says why. A function named here
 * that has a row, or that is no export, fails the check as much as an export without a row. */
static const struct {
  const char *fn, *why;
} exempt[] = {
    {NULL, NULL}, /* none today: every export has at least one row */
};

/* The headers' static inline calls: rows may name them although they are no exports. */
static const char *const inline_calls[] = {"vmt_tls_get", "vmt_stack_bytes_left", "vmt_poll",
                                           "vmt_poll_armed"};

static bool has_row(const char *fn) {
  for (size_t r = 0; r < nrows; r++)
    if (strcmp(rows[r].fn, fn) == 0) return true;
  return false;
}

static bool is_exempt(const char *fn) {
  for (size_t i = 0; i < sizeof(exempt) / sizeof(exempt[0]); i++)
    if (exempt[i].fn && strcmp(exempt[i].fn, fn) == 0) return true;
  return false;
}

/* test/public_functions.txt: the headers' VMT_EXPORTs, one per line, made at build time. */
static char exports[512][64];
static size_t nexports;

static bool is_export(const char *fn) {
  for (size_t i = 0; i < nexports; i++)
    if (strcmp(exports[i], fn) == 0) return true;
  return false;
}

static void every_public_function_has_a_row(void **state) {
  (void)state;
  FILE *f = fopen("test/public_functions.txt", "r");
  assert_non_null(f);
  char line[128];
  while (nexports < 512 && fgets(line, sizeof(line), f)) {
    line[strcspn(line, "\n")] = '\0';
    size_t len = strlen(line);
    if (len > 0 && len < 64) memcpy(exports[nexports++], line, len + 1);
  }
  fclose(f);
  assert_true(nexports > 50);
  size_t missing = 0;
  for (size_t i = 0; i < nexports; i++) {
    if (has_row(exports[i]) || is_exempt(exports[i])) continue;
    printf("MISSING public function %s has no row in test/bad_input_test.c\n", exports[i]);
    missing++;
  }
  for (size_t i = 0; i < sizeof(exempt) / sizeof(exempt[0]); i++) {
    if (exempt[i].fn == NULL) continue;
    if (!is_export(exempt[i].fn) || has_row(exempt[i].fn)) {
      printf("MISSING exemption %s: %s\n", exempt[i].fn,
             is_export(exempt[i].fn) ? "has a row: drop the exemption" : "is no export");
      missing++;
    }
  }
  for (size_t r = 0; r < nrows; r++) {
    bool known = is_export(rows[r].fn);
    for (size_t i = 0; i < sizeof(inline_calls) / sizeof(inline_calls[0]) && !known; i++)
      known = strcmp(inline_calls[i], rows[r].fn) == 0;
    if (!known && (r == 0 || strcmp(rows[r - 1].fn, rows[r].fn) != 0)) {
      printf("MISSING row %s(%s) names no public function\n", rows[r].fn, rows[r].input);
      missing++;
    }
  }
  print_message("%zu public functions, %zu rows\n", nexports, nrows);
  assert_int_equal(missing, 0);
}

/* ---- the table, published ----------------------------------------------------------------- */
static void publish(void **state) {
  (void)state;
  size_t functions = 0;
  for (size_t i = 0; i < nrows; i++) {
    bool first = true;
    for (size_t j = 0; j < i; j++)
      if (strcmp(rows[j].fn, rows[i].fn) == 0) first = false;
    if (first) functions++;
    rel_figure_text("badinput", "row", "%s\t%s\t%s", rows[i].fn, rows[i].input, rows[i].actual);
  }
  rel_figure_text("badinput", "build", "%s", rel_build_flavour());
  rel_figure("badinput", "calls", (long long)nrows);
  rel_figure("badinput", "functions", (long long)functions);
  rel_figure("badinput", "mismatches", (long long)mismatches);
  assert_int_equal(mismatches, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(thread_functions),
      cmocka_unit_test(clock_functions),
      cmocka_unit_test(monitor_functions),
      cmocka_unit_test(management_functions),
      cmocka_unit_test(vms_functions),
      cmocka_unit_test(thread_api_functions),
      cmocka_unit_test(profiler_functions),
      cmocka_unit_test(every_public_function_has_a_row),
      cmocka_unit_test(publish),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
