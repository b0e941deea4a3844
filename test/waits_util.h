/*
 * test/waits_util.h: one thread in each way a thread can wait in the runtime, with what Java
 * reports for the same call: the JVMTI state bits HotSpot's GetThreadState gives (ThreadInfo's
 * state_bits) and the lines JDK 17.0.15 and Temurin 25.0.3 jstack / jcmd Thread.print print
 * (checked on a Java program with a thread in each state, 2026-12-02). Shared by the dump test
 * and the state-bits test, so both check the one table. Include it after <cmocka.h>.
 */
#ifndef VMT_TEST_WAITS_UTIL_H
#define VMT_TEST_WAITS_UTIL_H

#include "mx_util.h"

#define WAITS_LONG_NS (600LL * 1000 * 1000 * 1000)
#define WAITS_N 9

typedef struct waits {
  vmt_monitor_t *m;          /* waited on */
  vmt_monitor_t *held;       /* held by the test: entering it blocks */
  vmt_sync_t *sync;          /* held by the test: locking it parks (AQS) */
  vmt_thread_t *target[2];   /* what the two joiners join (one join at a time each) */
  gate_t gate;               /* where the targets wait */
  vmt_thread_t *t[WAITS_N];  /* one per wait_kinds() row */
} waits_t;

typedef struct wait_kind {
  const char *name;
  vmt_thread_fn fn;
  vmt_thread_state_t state;
  uint32_t bits;             /* ThreadInfo.state_bits */
  const char *status;        /* jstack's header word */
  const char *line;          /* jstack's state line, after "java.lang.Thread.State: " */
  const char *lock_class;    /* ThreadInfo.lock's class (Java: LockInfo), NULL for none; a
                                join waits on the joined thread (Java: the Thread object,
                                jstack's "- waiting on <...> (a java.lang.Thread)") */
} wait_kind_t;

static inline void *waits_sleep(void *arg) { (void)arg; vmt_sleep_ns(WAITS_LONG_NS); return NULL; }
static inline void *waits_park(void *arg) { (void)arg; vmt_park(0); return NULL; }
static inline void *waits_park_nanos(void *arg) {
  (void)arg;
  vmt_park_nanos(WAITS_LONG_NS);
  return NULL;
}
static inline void *waits_sync_lock(void *arg) {
  waits_t *w = arg;
  if (vmt_sync_lock(w->sync) == 0) vmt_sync_unlock(w->sync);
  return NULL;
}
static inline void *waits_join(void *arg) {
  vmt_thread_join(((waits_t *)arg)->target[0], NULL);
  return NULL;
}
static inline void *waits_timed_join(void *arg) {
  vmt_thread_timed_join(((waits_t *)arg)->target[1], WAITS_LONG_NS, NULL);
  return NULL;
}
static inline void *waits_wait(void *arg) {
  waits_t *w = arg;
  vmt_monitor_enter(w->m);
  vmt_monitor_wait(w->m, 0);
  vmt_monitor_exit(w->m);
  return NULL;
}
static inline void *waits_timed_wait(void *arg) {
  waits_t *w = arg;
  vmt_monitor_enter(w->m);
  vmt_monitor_wait(w->m, WAITS_LONG_NS);
  vmt_monitor_exit(w->m);
  return NULL;
}
static inline void *waits_enter(void *arg) {
  waits_t *w = arg;
  vmt_monitor_enter(w->held);
  vmt_monitor_exit(w->held);
  return NULL;
}

#define WAITS_ALIVE_WAITING (VMT_THREAD_STATE_ALIVE | VMT_THREAD_STATE_WAITING)
#define WAITS_UNTIMED (WAITS_ALIVE_WAITING | VMT_THREAD_STATE_WAITING_INDEFINITELY)
#define WAITS_TIMED (WAITS_ALIVE_WAITING | VMT_THREAD_STATE_WAITING_WITH_TIMEOUT)

/* The rows, in the order of waits_t.t. */
static inline const wait_kind_t *wait_kinds(void) {
  static const wait_kind_t kinds[WAITS_N] = {
      {"w-sleep", waits_sleep, VMT_THREAD_TIMED_WAITING, WAITS_TIMED | VMT_THREAD_STATE_SLEEPING,
       "waiting on condition", "TIMED_WAITING (sleeping)", NULL},
      {"w-park", waits_park, VMT_THREAD_WAITING, WAITS_UNTIMED | VMT_THREAD_STATE_PARKED,
       "waiting on condition", "WAITING (parking)", NULL},
      {"w-park-nanos", waits_park_nanos, VMT_THREAD_TIMED_WAITING,
       WAITS_TIMED | VMT_THREAD_STATE_PARKED, "waiting on condition", "TIMED_WAITING (parking)", NULL},
      {"w-sync", waits_sync_lock, VMT_THREAD_WAITING, WAITS_UNTIMED | VMT_THREAD_STATE_PARKED,
       "waiting on condition", "WAITING (parking)", "vmt.Synchronizer"},
      {"w-join", waits_join, VMT_THREAD_WAITING, WAITS_UNTIMED | VMT_THREAD_STATE_IN_OBJECT_WAIT,
       "in Object.wait()", "WAITING (on object monitor)", "vmt.Thread"},
      {"w-timed-join", waits_timed_join, VMT_THREAD_TIMED_WAITING,
       WAITS_TIMED | VMT_THREAD_STATE_IN_OBJECT_WAIT, "in Object.wait()",
       "TIMED_WAITING (on object monitor)", "vmt.Thread"},
      {"w-wait", waits_wait, VMT_THREAD_WAITING, WAITS_UNTIMED | VMT_THREAD_STATE_IN_OBJECT_WAIT,
       "in Object.wait()", "WAITING (on object monitor)", "vmt.Monitor"},
      {"w-timed-wait", waits_timed_wait, VMT_THREAD_TIMED_WAITING,
       WAITS_TIMED | VMT_THREAD_STATE_IN_OBJECT_WAIT, "in Object.wait()",
       "TIMED_WAITING (on object monitor)", "vmt.Monitor"},
      {"w-enter", waits_enter, VMT_THREAD_BLOCKED,
       VMT_THREAD_STATE_ALIVE | VMT_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER,
       "waiting for monitor entry", "BLOCKED (on object monitor)", "vmt.Monitor"},
  };
  return kinds;
}

/* Starts every row's thread and returns once each is in its state. */
static inline void waits_start(waits_t *w) {
  memset(w, 0, sizeof(*w));
  assert_int_equal(vmt_monitor_create(&w->m, "waits-wait"), 0);
  assert_int_equal(vmt_monitor_create(&w->held, "waits-held"), 0);
  assert_int_equal(vmt_sync_create(&w->sync, "waits-sync"), 0);
  assert_int_equal(vmt_monitor_enter(w->held), 0);
  assert_int_equal(vmt_sync_lock(w->sync), 0);
  gate_init(&w->gate);
  for (int i = 0; i < 2; i++) {
    w->target[i] = start_named("waits-target", false, gate_body, &w->gate);
    assert_non_null(w->target[i]);
  }
  gate_await(&w->gate, 2);
  const wait_kind_t *k = wait_kinds();
  for (int i = 0; i < WAITS_N; i++) {
    w->t[i] = start_named(k[i].name, false, k[i].fn, w);
    assert_non_null(w->t[i]);
    if (!await_state(w->t[i], k[i].state)) fail_msg("%s never reached its state", k[i].name);
  }
}

/* Ends them all (an interrupt ends every wait but the enter and the sync, released first). */
static inline void waits_finish(waits_t *w) {
  assert_int_equal(vmt_monitor_exit(w->held), 0);
  assert_int_equal(vmt_sync_unlock(w->sync), 0);
  for (int i = 0; i < WAITS_N; i++) {
    vmt_thread_interrupt(w->t[i]);
    assert_int_equal(vmt_thread_join(w->t[i], NULL), 0);
    vmt_thread_release(w->t[i]);
  }
  gate_open(&w->gate);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(vmt_thread_join(w->target[i], NULL), 0);
    vmt_thread_release(w->target[i]);
  }
  gate_destroy(&w->gate);
  assert_int_equal(vmt_monitor_destroy(w->m), 0);
  assert_int_equal(vmt_monitor_destroy(w->held), 0);
  assert_int_equal(vmt_sync_destroy(w->sync), 0);
}

#endif /* VMT_TEST_WAITS_UTIL_H */
