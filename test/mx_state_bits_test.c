/*
 * test/mx_state_bits_test.c: ThreadInfo's state_bits, JVMTI's GetThreadState for each way a
 * thread waits (vmthread/management.h): what each blocking call publishes (the values
 * HotSpot's JVMTI gives: sleep SLEEPING with timeout; park and a synchronizer acquire PARKED;
 * Object.wait and join IN_OBJECT_WAIT; a contended enter BLOCKED_ON_MONITOR_ENTER), the bits
 * read beside it (INTERRUPTED, IN_NATIVE, SUSPENDED), and the rule a reader relies on: Java's
 * state and the kind of wait are one read, so no reader ever sees RUNNABLE with a kind, nor a
 * waiting state without exactly one, even while the threads change state as fast as they can.
 */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "mx_util.h"
#include "waits_util.h"

#define KINDS                                                                      \
  (VMT_THREAD_STATE_SLEEPING | VMT_THREAD_STATE_PARKED |                           \
   VMT_THREAD_STATE_IN_OBJECT_WAIT | VMT_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER)
/* JVMTI_JAVA_LANG_THREAD_STATE_MASK */
#define JAVA_MASK                                                                  \
  (VMT_THREAD_STATE_TERMINATED | VMT_THREAD_STATE_ALIVE | VMT_THREAD_STATE_RUNNABLE | \
   VMT_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER | VMT_THREAD_STATE_WAITING |          \
   VMT_THREAD_STATE_WAITING_INDEFINITELY | VMT_THREAD_STATE_WAITING_WITH_TIMEOUT)

/* The JVMTI_JAVA_LANG_THREAD_STATE_* value of a Java state. */
static uint32_t java_bits(vmt_thread_state_t s) {
  switch (s) {
    case VMT_THREAD_RUNNABLE:
      return VMT_THREAD_STATE_ALIVE | VMT_THREAD_STATE_RUNNABLE;
    case VMT_THREAD_BLOCKED:
      return VMT_THREAD_STATE_ALIVE | VMT_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER;
    case VMT_THREAD_WAITING:
      return VMT_THREAD_STATE_ALIVE | VMT_THREAD_STATE_WAITING |
             VMT_THREAD_STATE_WAITING_INDEFINITELY;
    case VMT_THREAD_TIMED_WAITING:
      return VMT_THREAD_STATE_ALIVE | VMT_THREAD_STATE_WAITING |
             VMT_THREAD_STATE_WAITING_WITH_TIMEOUT;
    default:
      return 0;
  }
}

/* The rule of vmthread/management.h for one ThreadInfo; NULL if it holds, else what broke. */
static const char *rule_broken(const vmt_thread_info_t *ti) {
  uint32_t b = ti->state_bits, kind = b & KINDS & ~VMT_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER;
  if ((b & JAVA_MASK) != java_bits(ti->state)) return "Java state bits differ from the state";
  switch (ti->state) {
    case VMT_THREAD_RUNNABLE:
      return (b & KINDS) ? "RUNNABLE with a kind of wait" : NULL;
    case VMT_THREAD_BLOCKED:
      return kind ? "BLOCKED with a kind of wait" : NULL;
    case VMT_THREAD_WAITING:
    case VMT_THREAD_TIMED_WAITING:
      if (kind == 0 || (kind & (kind - 1)) != 0) return "waiting without exactly one kind";
      if (kind == VMT_THREAD_STATE_SLEEPING && ti->state != VMT_THREAD_TIMED_WAITING)
        return "sleeping without a timeout";
      return NULL;
    default:
      return "a state a ThreadInfo never has";
  }
}

static vmt_thread_info_t *info_of(vmt_thread_t *t) {
  vmt_thread_info_t *ti = NULL;
  assert_int_equal(vmt_mx_get_thread_info(vmt_thread_id(t), 0, &ti), 0);
  assert_non_null(ti);
  const char *broken = rule_broken(ti);
  if (broken) fail_msg("%s: %s (state %d, bits 0x%x)", ti->name, broken, ti->state, ti->state_bits);
  return ti;
}

/* ---- One thread in each kind of wait (test/waits_util.h has the table) ------------------ */
static void each_wait_has_its_bits(void **state) {
  (void)state;
  waits_t w;
  waits_start(&w);
  const wait_kind_t *k = wait_kinds();
  for (int i = 0; i < WAITS_N; i++) {
    vmt_thread_info_t *ti = info_of(w.t[i]);
    if (ti->state_bits != k[i].bits)
      fail_msg("%s: bits 0x%x, want 0x%x", k[i].name, ti->state_bits, k[i].bits);
    const char *cls = ti->lock ? ti->lock->class_name : NULL;
    if ((cls == NULL) != (k[i].lock_class == NULL) || (cls && strcmp(cls, k[i].lock_class)))
      fail_msg("%s: lock %s, want %s", k[i].name, cls ? cls : "none",
               k[i].lock_class ? k[i].lock_class : "none");
    if (i == 4 || i == 5) {
      /* A joiner names the thread it joins, a lock nobody owns (Java: join is wait() on the
       * Thread, whose monitor the waiter released). */
      vmt_thread_t *joined = w.target[i - 4];
      assert_int_equal(ti->lock->identity_hash, (int32_t)vmt_thread_id(joined));
      assert_int_equal(ti->lock_owner_id, -1);
    }
    vmt_mx_thread_info_free(ti);
  }
  /* A pending interrupt is in the bits whatever the state: the targets are RUNNABLE (in a
   * pthread wait, outside the runtime, so in native code too). */
  assert_int_equal(vmt_thread_interrupt(w.target[0]), 0);
  vmt_thread_info_t *ti = info_of(w.target[0]);
  assert_int_equal(ti->state_bits, VMT_THREAD_STATE_ALIVE | VMT_THREAD_STATE_RUNNABLE |
                                       VMT_THREAD_STATE_IN_NATIVE |
                                       VMT_THREAD_STATE_INTERRUPTED);
  vmt_mx_thread_info_free(ti);
  ti = info_of(w.target[1]);
  assert_int_equal(ti->state_bits, VMT_THREAD_STATE_ALIVE | VMT_THREAD_STATE_RUNNABLE |
                                       VMT_THREAD_STATE_IN_NATIVE);
  vmt_mx_thread_info_free(ti);
  /* The sleeper (row 0), suspended: SUSPENDED beside its wait. */
  assert_int_equal(vmt_thread_suspend(w.t[0], VMT_SUSPEND_DEBUGGER, 0, NULL), 0);
  ti = info_of(w.t[0]);
  assert_int_equal(ti->state_bits, k[0].bits | VMT_THREAD_STATE_SUSPENDED);
  vmt_mx_thread_info_free(ti);
  assert_int_equal(vmt_thread_resume(w.t[0], VMT_SUSPEND_DEBUGGER), 0);
  waits_finish(&w);
}

/* ---- A racing reader --------------------------------------------------------------------- *
 * Each worker goes in and out of one kind of wait, 1 us at a time, as fast as it can; a reader
 * takes every thread's ThreadInfo over and over and checks the rule on each, and that each
 * worker only ever shows its own kind. It reads until it has seen every worker waiting at
 * least SEEN times (or gives up after READS_MAX passes, a bound for a hung run only). */
#define SEEN 200
#define READS_MAX 200000
#define SHORT_NS 1000

typedef struct racer {
  vmt_monitor_t *m;          /* its own, for wait; shared by the two enterers */
  _Atomic bool stop;
  uint32_t kind;             /* the one kind it may show */
  int seen;                  /* times the reader saw it waiting (reader only) */
} racer_t;

static void *race_sleep(void *arg) {
  racer_t *r = arg;
  while (!atomic_load(&r->stop)) vmt_sleep_ns(SHORT_NS);
  return NULL;
}
static void *race_park(void *arg) {
  racer_t *r = arg;
  while (!atomic_load(&r->stop)) vmt_park_nanos(SHORT_NS);
  return NULL;
}
static void *race_wait(void *arg) {
  racer_t *r = arg;
  vmt_monitor_enter(r->m);
  while (!atomic_load(&r->stop)) vmt_monitor_wait(r->m, SHORT_NS);
  vmt_monitor_exit(r->m);
  return NULL;
}
static void *race_enter(void *arg) {
  racer_t *r = arg;
  while (!atomic_load(&r->stop)) {
    vmt_monitor_enter(r->m);
    sched_yield();   /* while holding it: the other enterer blocks (vmt_sleep_ns(0) would sleep) */
    vmt_monitor_exit(r->m);
  }
  return NULL;
}
static void *return_null(void *arg) {
  (void)arg;
  return NULL;
}
static void *race_join(void *arg) {
  racer_t *r = arg;
  while (!atomic_load(&r->stop)) {
    vmt_thread_t *t = NULL;
    if (vmt_thread_start(&t, return_null, NULL) != 0) continue;
    /* The stop's interrupt ends a join with -EINTR (status cleared, nothing joined): again. */
    while (vmt_thread_join(t, NULL) == -EINTR) {
    }
    vmt_thread_release(t);
  }
  return NULL;
}

static void a_racing_reader_sees_state_and_kind_together(void **state) {
  (void)state;
  vmt_monitor_t *shared;
  assert_int_equal(vmt_monitor_create(&shared, "race-enter"), 0);
  enum { N = 6 };
  racer_t r[N];
  memset(r, 0, sizeof(r));
  static const struct {
    const char *name;
    vmt_thread_fn fn;
    uint32_t kind;
  } who[N] = {
      {"race-sleep", race_sleep, VMT_THREAD_STATE_SLEEPING},
      {"race-park", race_park, VMT_THREAD_STATE_PARKED},
      /* A timed-out waiter re-enters its own monitor at once: never blocked. */
      {"race-wait", race_wait, VMT_THREAD_STATE_IN_OBJECT_WAIT},
      {"race-enter-1", race_enter, VMT_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER},
      {"race-enter-2", race_enter, VMT_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER},
      {"race-join", race_join, VMT_THREAD_STATE_IN_OBJECT_WAIT},
  };
  vmt_thread_t *t[N];
  int64_t ids[N];
  for (int i = 0; i < N; i++) {
    r[i].kind = who[i].kind;
    if (who[i].fn == race_enter)
      r[i].m = shared;
    else
      assert_int_equal(vmt_monitor_create(&r[i].m, "race"), 0);
    t[i] = start_named(who[i].name, false, who[i].fn, &r[i]);
    assert_non_null(t[i]);
    ids[i] = vmt_thread_id(t[i]);
  }
  int reads = 0;
  for (bool done = false; !done && reads < READS_MAX; reads++) {
    vmt_thread_info_t **infos = NULL;
    assert_int_equal(vmt_mx_get_thread_info_array_ex(ids, N, VMT_MX_INFO_NO_CPU_TIME, 0, &infos), 0);
    done = true;
    for (int i = 0; i < N; i++) {
      vmt_thread_info_t *ti = infos[i];
      assert_non_null(ti);
      const char *broken = rule_broken(ti);
      if (broken)
        fail_msg("%s, read %d: %s (state %s, bits 0x%x)", ti->name, reads, broken,
                 vmt_thread_state_name(ti->state), ti->state_bits);
      uint32_t kind = ti->state_bits & KINDS;
      if (kind != 0 && kind != r[i].kind)
        fail_msg("%s, read %d: bits 0x%x, a kind it never waits in", ti->name, reads,
                 ti->state_bits);
      if (kind != 0) r[i].seen++;
      if (r[i].seen < SEEN) done = false;
    }
    vmt_mx_thread_info_array_free(infos, N);
  }
  for (int i = 0; i < N; i++) {
    atomic_store(&r[i].stop, true);
    vmt_thread_interrupt(t[i]);
    assert_int_equal(vmt_thread_join(t[i], NULL), 0);
    vmt_thread_release(t[i]);
    if (r[i].m != shared) assert_int_equal(vmt_monitor_destroy(r[i].m), 0);
  }
  assert_int_equal(vmt_monitor_destroy(shared), 0);
  for (int i = 0; i < N; i++)
    if (r[i].seen < SEEN)
      fail_msg("%s seen waiting %d times in %d reads", who[i].name, r[i].seen, reads);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(each_wait_has_its_bits),
      cmocka_unit_test(a_racing_reader_sees_state_and_kind_together),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
