/*
 * test/monitor_test.c: monitors, synchronizers, park and sleep through the public API only:
 * ownership and reentrancy, errors instead of undefined behaviour (non-owner exit, wait and
 * notify; destroyed and busy monitors), wait/notify hand-offs, timeouts, mutual exclusion under
 * contention, per-monitor statistics, and the thread states a blocked thread shows.
 * The OpenJDK-style checks of lock info, contention times and deadlocks are in
 * monitor_internal_test.c and deadlock_internal_test.c; every wait under EINTR in
 * signals_linux_test.c.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "test/monitor_util.h"
#include "vmthread.h"


/* Polls (never a fixed sleep) until t is in state, or fails after a generous deadline. */
static void wait_for_state(vmt_thread_t *t, vmt_thread_state_t state) {
  MU_POLL_UNTIL(vmt_thread_state(t) == state, vmt_thread_state_name(state));
}

/* ---- Creation, identity, bad input ---------------------------------------------------- */

static void create_rejects_bad_input(void **state) {
  (void)state;
  vmt_monitor_t *m = NULL;
  assert_int_equal(vmt_monitor_create(NULL, "x"), -EINVAL);
  char long_name[VMT_MONITOR_NAME_MAX + 2];
  memset(long_name, 'a', sizeof(long_name) - 1);
  long_name[sizeof(long_name) - 1] = '\0';
  assert_int_equal(vmt_monitor_create(&m, long_name), -EINVAL);
  long_name[VMT_MONITOR_NAME_MAX] = '\0';   /* exactly the maximum is fine */
  assert_int_equal(vmt_monitor_create(&m, long_name), 0);
  assert_int_equal(vmt_monitor_destroy(m), 0);
  vmt_sync_t *s = NULL;
  assert_int_equal(vmt_sync_create(NULL, "x"), -EINVAL);
  assert_int_equal(vmt_sync_create(&s, NULL), 0);
  assert_int_equal(vmt_sync_destroy(s), 0);
  assert_int_equal(vmt_monitor_destroy(NULL), -EINVAL);
  assert_int_equal(vmt_sync_destroy(NULL), -EINVAL);
  assert_int_equal(vmt_monitor_enter(NULL), -EINVAL);
  assert_int_equal(vmt_monitor_try_enter(NULL), -EINVAL);
  assert_int_equal(vmt_monitor_exit(NULL), -EINVAL);
  assert_int_equal(vmt_monitor_wait(NULL, 0), -EINVAL);
  assert_int_equal(vmt_monitor_notify(NULL), -EINVAL);
  assert_int_equal(vmt_monitor_notify_all(NULL), -EINVAL);
  assert_int_equal(vmt_monitor_get_stats(NULL, NULL), -EINVAL);
  assert_int_equal(vmt_sync_lock(NULL), -EINVAL);
  assert_int_equal(vmt_sync_try_lock(NULL), -EINVAL);
  assert_int_equal(vmt_sync_timed_lock(NULL, 1), -EINVAL);
  assert_int_equal(vmt_sync_unlock(NULL), -EINVAL);
  assert_int_equal(vmt_unpark(NULL), -EINVAL);
  assert_int_equal(vmt_sleep_ns(-1), -EINVAL);
}

static void describe_shows_name_and_unique_identity(void **state) {
  (void)state;
  vmt_monitor_t *a, *b, *d;
  assert_int_equal(vmt_monitor_create(&a, "table-lock"), 0);
  assert_int_equal(vmt_monitor_create(&b, "table-lock"), 0);
  assert_int_equal(vmt_monitor_create(&d, NULL), 0);
  char da[300], db[300], dd[300];
  int na = vmt_monitor_describe(a, da, sizeof(da));
  int nb = vmt_monitor_describe(b, db, sizeof(db));
  int nd = vmt_monitor_describe(d, dd, sizeof(dd));
  assert_int_equal(na, (int)strlen(da));
  assert_int_equal(nb, (int)strlen(db));
  assert_int_equal(nd, (int)strlen(dd));
  assert_memory_equal(da, "table-lock@", 11);
  assert_memory_equal(dd, "monitor@", 8);
  assert_string_not_equal(da, db);   /* same name, different identities */
  unsigned hex;
  assert_int_equal(sscanf(da + 11, "%x", &hex), 1);
  assert_true(hex != 0);
  /* The identity is stable across calls. */
  char again[300];
  vmt_monitor_describe(a, again, sizeof(again));
  assert_string_equal(da, again);
  /* Truncation: always terminated, returns what it needs. */
  char small[5];
  assert_int_equal(vmt_monitor_describe(a, small, sizeof(small)), na);
  assert_int_equal(strlen(small), 4);
  assert_int_equal(vmt_monitor_describe(a, NULL, 0), na);
  assert_int_equal(vmt_monitor_describe(a, NULL, 3), -EINVAL);
  vmt_sync_t *s;
  assert_int_equal(vmt_sync_create(&s, "rw"), 0);
  assert_true(vmt_sync_describe(s, da, sizeof(da)) > 3);
  assert_memory_equal(da, "rw@", 3);
  assert_int_equal(vmt_sync_destroy(s), 0);
  assert_int_equal(vmt_monitor_destroy(a), 0);
  assert_int_equal(vmt_monitor_destroy(b), 0);
  assert_int_equal(vmt_monitor_destroy(d), 0);
}

static void destroyed_monitor_is_rejected_not_undefined(void **state) {
  (void)state;
  vmt_monitor_t *m;
  assert_int_equal(vmt_monitor_create(&m, "gone"), 0);
  assert_int_equal(vmt_monitor_destroy(m), 0);
  assert_int_equal(vmt_monitor_destroy(m), -EINVAL);
  assert_int_equal(vmt_monitor_enter(m), -EINVAL);
  assert_int_equal(vmt_monitor_exit(m), -EINVAL);
  /* A monitor handle is not a synchronizer and vice versa. */
  vmt_sync_t *s;
  assert_int_equal(vmt_sync_create(&s, "s"), 0);
  assert_int_equal(vmt_monitor_enter((vmt_monitor_t *)s), -EINVAL);
  assert_int_equal(vmt_sync_destroy(s), 0);
}

/* ---- Ownership ------------------------------------------------------------------------ */

/* A destroy racing an enter of the same object (a VM deflating a monitor it found idle while a
 * thread is about to enter it, as HotSpot's async deflation does) must be all-or-nothing:
 * either the enter wins and the destroy answers -EBUSY, or the destroy wins and the enter
 * answers -EINVAL (or, once the slot is reused, enters the new object). An enter that
 * succeeds must therefore always be followed by a successful exit. Before destroy took the
 * lock word itself, 99 of 20,000 such races (a scratch run of this loop) had an enter succeed
 * and its exit answer -EINVAL or -EPERM (the destroy freed the slot under its owner, or the
 * enter took a slot already freed), and some runs hung (an enter asleep on a freed slot's
 * word, never woken). One racer, on the other CPU, makes one call per round; the destroy
 * comes after a delay that varies from round to round. */
typedef struct destroy_race {
  _Atomic(void *) current;     /* this round's object */
  _Atomic long round;          /* the racer makes one call per round */
  _Atomic long attempts;       /* calls made, over all rounds */
  _Atomic bool stop;
  bool sync;
  _Atomic long entered, refused, broken;
} destroy_race_t;

static void *enter_what_may_be_destroyed(void *arg) {
  destroy_race_t *r = arg;
  long done = 0, idle = 0;
  while (!atomic_load(&r->stop)) {
    long round = atomic_load(&r->round);
    if (round == done) {
      if (++idle % 4096 == 0) sched_yield();
      continue;
    }
    done = round;
    idle = 0;
    void *o = atomic_load(&r->current);
    int rc = r->sync ? vmt_sync_lock(o) : vmt_monitor_enter(o);
    if (rc == 0) {
      atomic_fetch_add(&r->entered, 1);
      int out = r->sync ? vmt_sync_unlock(o) : vmt_monitor_exit(o);
      if (out != 0) atomic_fetch_add(&r->broken, 1);
    } else if (rc == -EINVAL) {
      atomic_fetch_add(&r->refused, 1);
    } else {
      atomic_fetch_add(&r->broken, 1);
    }
    atomic_fetch_add(&r->attempts, 1);
  }
  return NULL;
}

static void destroy_racing_enters_is_all_or_nothing(void **state) {
  (void)state;
  alarm(120);   /* a racer asleep on a destroyed slot hangs the round: fail, not stall */
  enum { ROUNDS = 5000 };
  for (int kind = 0; kind < 2; kind++) {
    destroy_race_t r = {.sync = kind == 1};
    pthread_t racer;
    assert_int_equal(pthread_create(&racer, NULL, enter_what_may_be_destroyed, &r), 0);
    for (long round = 1; round <= ROUNDS; round++) {
      void *o;
      if (kind == 0) assert_int_equal(vmt_monitor_create((vmt_monitor_t **)&o, "deflated"), 0);
      else assert_int_equal(vmt_sync_create((vmt_sync_t **)&o, "deflated"), 0);
      atomic_store(&r.current, o);
      atomic_store(&r.round, round);
      for (volatile long spin = 0; spin < (round * 7) % 2000; spin++) {
      }
      int rc;
      while ((rc = kind == 0 ? vmt_monitor_destroy(o) : vmt_sync_destroy(o)) == -EBUSY) {
      }
      assert_int_equal(rc, 0);
      while (atomic_load(&r.attempts) < round) sched_yield();
    }
    atomic_store(&r.stop, true);
    assert_int_equal(pthread_join(racer, NULL), 0);
    print_message("%s: %ld entered, %ld refused, %ld broken\n", kind ? "synchronizer" : "monitor",
                  atomic_load(&r.entered), atomic_load(&r.refused), atomic_load(&r.broken));
    assert_int_equal(atomic_load(&r.broken), 0);
  }
  alarm(0);
}

static void reentrant_enter_and_exit_balance(void **state) {
  (void)state;
  vmt_monitor_t *m;
  assert_int_equal(vmt_monitor_create(&m, "re"), 0);
  assert_int_equal(vmt_monitor_exit(m), -EPERM);   /* not owned at all */
  for (int i = 0; i < 3; i++) assert_int_equal(vmt_monitor_enter(m), 0);
  assert_int_equal(vmt_monitor_try_enter(m), 0);   /* the owner re-enters */
  assert_int_equal(vmt_monitor_destroy(m), -EBUSY);
  for (int i = 0; i < 4; i++) assert_int_equal(vmt_monitor_exit(m), 0);
  assert_int_equal(vmt_monitor_exit(m), -EPERM);
  vmt_monitor_stats_t st;
  assert_int_equal(vmt_monitor_get_stats(m, &st), 0);
  assert_int_equal(st.enters, 4);
  assert_int_equal(st.contended_enters, 0);
  assert_int_equal(st.owner_id, 0);
  assert_int_equal(vmt_monitor_destroy(m), 0);
}

typedef struct shared {
  vmt_monitor_t *m;
  vmt_sync_t *s;
  _Atomic int step;
  int rc[8];
  int64_t counter;
} shared_t;

static void *non_owner_calls(void *arg) {
  shared_t *sh = arg;
  sh->rc[0] = vmt_monitor_exit(sh->m);
  sh->rc[1] = vmt_monitor_wait(sh->m, 1000);
  sh->rc[2] = vmt_monitor_notify(sh->m);
  sh->rc[3] = vmt_monitor_notify_all(sh->m);
  sh->rc[4] = vmt_monitor_try_enter(sh->m);
  sh->rc[5] = vmt_sync_unlock(sh->s);
  sh->rc[6] = vmt_sync_try_lock(sh->s);
  sh->rc[7] = vmt_sync_timed_lock(sh->s, 2 * 1000 * 1000);
  return NULL;
}

static void non_owners_get_errors(void **state) {
  (void)state;
  shared_t sh = {0};
  assert_int_equal(vmt_monitor_create(&sh.m, "owned"), 0);
  assert_int_equal(vmt_sync_create(&sh.s, "owned-sync"), 0);
  assert_int_equal(vmt_monitor_enter(sh.m), 0);
  assert_int_equal(vmt_sync_lock(sh.s), 0);
  mu_join(mu_start(non_owner_calls, &sh));
  assert_int_equal(sh.rc[0], -EPERM);
  assert_int_equal(sh.rc[1], -EPERM);
  assert_int_equal(sh.rc[2], -EPERM);
  assert_int_equal(sh.rc[3], -EPERM);
  assert_int_equal(sh.rc[4], -EBUSY);
  assert_int_equal(sh.rc[5], -EPERM);
  assert_int_equal(sh.rc[6], -EBUSY);
  assert_int_equal(sh.rc[7], -ETIMEDOUT);
  /* The owner's state is untouched by all that. */
  assert_int_equal(vmt_sync_destroy(sh.s), -EBUSY);
  assert_int_equal(vmt_sync_unlock(sh.s), 0);
  assert_int_equal(vmt_monitor_exit(sh.m), 0);
  assert_int_equal(vmt_monitor_destroy(sh.m), 0);
  assert_int_equal(vmt_sync_destroy(sh.s), 0);
}

static void synchronizer_is_not_reentrant(void **state) {
  (void)state;
  vmt_sync_t *s;
  assert_int_equal(vmt_sync_create(&s, "s"), 0);
  assert_int_equal(vmt_sync_unlock(s), -EPERM);
  assert_int_equal(vmt_sync_lock(s), 0);
  assert_int_equal(vmt_sync_lock(s), -EDEADLK);
  assert_int_equal(vmt_sync_timed_lock(s, 1000), -EDEADLK);
  assert_int_equal(vmt_sync_try_lock(s), -EBUSY);
  assert_int_equal(vmt_sync_unlock(s), 0);
  assert_int_equal(vmt_sync_timed_lock(s, 0), 0);   /* free: a zero timeout still takes it */
  assert_int_equal(vmt_sync_unlock(s), 0);
  assert_int_equal(vmt_sync_try_lock(s), 0);
  assert_int_equal(vmt_sync_unlock(s), 0);
  assert_int_equal(vmt_sync_destroy(s), 0);
}

/* ---- Mutual exclusion ----------------------------------------------------------------- */

#define WORKERS 4
#define ROUNDS 5000

static void *increment(void *arg) {
  shared_t *sh = arg;
  for (int i = 0; i < ROUNDS; i++) {
    if (i % 2) {
      vmt_monitor_enter(sh->m);
      vmt_monitor_enter(sh->m);   /* reentrant on every other round */
      sh->counter++;
      vmt_monitor_exit(sh->m);
      vmt_monitor_exit(sh->m);
    } else {
      vmt_sync_lock(sh->s);
      vmt_monitor_enter(sh->m);
      sh->counter++;
      vmt_monitor_exit(sh->m);
      vmt_sync_unlock(sh->s);
    }
  }
  return NULL;
}

static void contended_enters_exclude_each_other(void **state) {
  (void)state;
  shared_t sh = {0};
  assert_int_equal(vmt_monitor_create(&sh.m, "counter"), 0);
  assert_int_equal(vmt_sync_create(&sh.s, "counter-sync"), 0);
  vmt_thread_t *t[WORKERS];
  for (int i = 0; i < WORKERS - 1; i++) t[i] = mu_start(increment, &sh);
  /* A plain pthread (no record) competes too: it has an identity but no statistics. */
  pthread_t foreign;
  assert_int_equal(pthread_create(&foreign, NULL, increment, &sh), 0);
  for (int i = 0; i < WORKERS - 1; i++) mu_join(t[i]);
  assert_int_equal(pthread_join(foreign, NULL), 0);
  assert_int_equal(sh.counter, (int64_t)WORKERS * ROUNDS);
  vmt_monitor_stats_t st;
  assert_int_equal(vmt_monitor_get_stats(sh.m, &st), 0);
  assert_int_equal(st.enters, (uint64_t)WORKERS * ROUNDS * 3 / 2);
  assert_true(st.contended_enters <= st.enters);
  assert_int_equal(st.entry_waiters, 0);
  assert_int_equal(st.owner_id, 0);
  assert_int_equal(vmt_monitor_destroy(sh.m), 0);
  assert_int_equal(vmt_sync_destroy(sh.s), 0);
}

static void *enter_and_return(void *arg) {
  shared_t *sh = arg;
  vmt_monitor_enter(sh->m);
  vmt_monitor_enter(sh->m);
  vmt_sync_lock(sh->s);
  atomic_store(&sh->step, 1);
  while (atomic_load(&sh->step) < 2) mu_pause_1ms();
  return NULL;   /* without exiting either */
}

static void *enter_blocked(void *arg) {
  shared_t *sh = arg;
  sh->rc[0] = vmt_monitor_enter(sh->m);
  sh->rc[1] = vmt_monitor_exit(sh->m);
  return NULL;
}

static void ending_thread_releases_what_it_holds(void **state) {
  (void)state;
  shared_t sh = {0};
  assert_int_equal(vmt_monitor_create(&sh.m, "abandoned"), 0);
  assert_int_equal(vmt_sync_create(&sh.s, "abandoned-sync"), 0);
  vmt_thread_t *holder = mu_start(enter_and_return, &sh);
  while (atomic_load(&sh.step) < 1) mu_pause_1ms();
  vmt_thread_t *waiter = mu_start(enter_blocked, &sh);
  wait_for_state(waiter, VMT_THREAD_BLOCKED);
  atomic_store(&sh.step, 2);
  mu_join(holder);
  mu_join(waiter);   /* it got the monitor the holder left behind */
  assert_int_equal(sh.rc[0], 0);
  assert_int_equal(sh.rc[1], 0);
  vmt_monitor_stats_t st;
  assert_int_equal(vmt_monitor_get_stats(sh.m, &st), 0);
  assert_int_equal(st.owner_id, 0);
  assert_int_equal(vmt_sync_try_lock(sh.s), 0);
  assert_int_equal(vmt_sync_unlock(sh.s), 0);
  assert_int_equal(vmt_monitor_destroy(sh.m), 0);
  assert_int_equal(vmt_sync_destroy(sh.s), 0);
}

/* ---- One identity per thread ---------------------------------------------------------- *
 * A thread's locks belong to that thread for its whole life, whether it is attached or not,
 * and to no other thread: not to a later thread that gets its stack and TLS (glibc reuses
 * both), and not to nobody while it is still inside (a detach does not release them). */

static _Thread_local int tls_probe;

typedef struct ended {
  vmt_monitor_t *m;
  vmt_sync_t *s;
  uintptr_t tls[2];
  int rc[3];
} ended_t;

static void *enter_twice_and_end(void *arg) {
  ended_t *e = arg;
  e->tls[0] = (uintptr_t)&tls_probe;
  e->rc[0] = vmt_monitor_enter(e->m);
  e->rc[1] = vmt_monitor_enter(e->m);
  e->rc[2] = vmt_sync_lock(e->s);
  return NULL;   /* a foreign thread that ends holding both */
}

static void *exit_what_it_never_entered(void *arg) {
  ended_t *e = arg;
  e->tls[1] = (uintptr_t)&tls_probe;
  e->rc[0] = vmt_monitor_exit(e->m);
  e->rc[1] = vmt_sync_unlock(e->s);
  e->rc[2] = vmt_monitor_wait(e->m, 1000);
  return NULL;
}

static void ended_foreign_thread_passes_nothing_on(void **state) {
  (void)state;
  ended_t e = {0};
  assert_int_equal(vmt_monitor_create(&e.m, "left-behind"), 0);
  assert_int_equal(vmt_sync_create(&e.s, "left-behind-sync"), 0);
  pthread_t p;
  assert_int_equal(pthread_create(&p, NULL, enter_twice_and_end, &e), 0);
  assert_int_equal(pthread_join(p, NULL), 0);
  for (int i = 0; i < 3; i++) assert_int_equal(e.rc[i], 0);
  /* The next thread of the same size usually gets the same stack and TLS block back. */
  assert_int_equal(pthread_create(&p, NULL, exit_what_it_never_entered, &e), 0);
  assert_int_equal(pthread_join(p, NULL), 0);
  if (e.tls[0] != e.tls[1])
    print_message("note: glibc gave the second thread another TLS block\n");
  assert_int_equal(e.rc[0], -EPERM);
  assert_int_equal(e.rc[1], -EPERM);
  assert_int_equal(e.rc[2], -EPERM);
  /* The thread's end released both, as HotSpot releases what an exiting thread still holds. */
  vmt_monitor_stats_t st;
  assert_int_equal(vmt_monitor_get_stats(e.m, &st), 0);
  assert_int_equal(st.owner_id, 0);
  assert_int_equal(vmt_monitor_try_enter(e.m), 0);
  assert_int_equal(vmt_monitor_exit(e.m), 0);
  assert_int_equal(vmt_monitor_exit(e.m), -EPERM);   /* no recursion left over */
  assert_int_equal(vmt_sync_try_lock(e.s), 0);
  assert_int_equal(vmt_sync_unlock(e.s), 0);
  assert_int_equal(vmt_monitor_destroy(e.m), 0);
  assert_int_equal(vmt_sync_destroy(e.s), 0);
}

typedef struct straddle {
  vmt_monitor_t *m;
  _Atomic int step;
  int rc[5];
} straddle_t;

static void *enter_attach_wait_detach(void *arg) {
  straddle_t *x = arg;
  x->rc[0] = vmt_monitor_enter(x->m);   /* before the attach */
  vmt_thread_t *self;
  x->rc[1] = vmt_thread_attach(NULL, &self);
  x->rc[2] = vmt_monitor_wait(x->m, 1000 * 1000);   /* releases and re-enters, attached */
  x->rc[3] = vmt_thread_detach();
  atomic_store(&x->step, 1);
  while (atomic_load(&x->step) < 2) mu_pause_1ms();
  x->rc[4] = vmt_monitor_exit(x->m);   /* still inside until here */
  return NULL;
}

static void detach_leaves_a_thread_inside_its_monitors(void **state) {
  (void)state;
  straddle_t x = {0};
  assert_int_equal(vmt_monitor_create(&x.m, "straddled"), 0);
  pthread_t p;
  assert_int_equal(pthread_create(&p, NULL, enter_attach_wait_detach, &x), 0);
  while (atomic_load(&x.step) < 1) mu_pause_1ms();
  assert_int_equal(x.rc[0], 0);
  assert_int_equal(x.rc[1], 0);
  assert_int_equal(x.rc[2], -ETIMEDOUT);
  assert_int_equal(x.rc[3], 0);
  assert_int_equal(vmt_monitor_try_enter(x.m), -EBUSY);   /* the thread is still inside */
  assert_int_equal(vmt_monitor_exit(x.m), -EPERM);
  atomic_store(&x.step, 2);
  assert_int_equal(pthread_join(p, NULL), 0);
  assert_int_equal(x.rc[4], 0);
  assert_int_equal(vmt_monitor_try_enter(x.m), 0);
  assert_int_equal(vmt_monitor_exit(x.m), 0);
  assert_int_equal(vmt_monitor_destroy(x.m), 0);
}

/* ---- Wait and notify ------------------------------------------------------------------ */

static void wait_times_out_and_restores_depth(void **state) {
  (void)state;
  vmt_monitor_t *m;
  assert_int_equal(vmt_monitor_create(&m, "w"), 0);
  assert_int_equal(vmt_monitor_wait(m, 1000), -EPERM);
  assert_int_equal(vmt_monitor_enter(m), 0);
  assert_int_equal(vmt_monitor_enter(m), 0);
  int64_t t0 = test_clock_ns(CLOCK_MONOTONIC);
  assert_int_equal(vmt_monitor_wait(m, 20 * 1000 * 1000), -ETIMEDOUT);
  /* the deadline is honoured */
  assert_true(test_clock_ns(CLOCK_MONOTONIC) - t0 >= 20 * 1000 * 1000);
  /* Still owned, twice. */
  assert_int_equal(vmt_monitor_exit(m), 0);
  assert_int_equal(vmt_monitor_exit(m), 0);
  assert_int_equal(vmt_monitor_exit(m), -EPERM);
  vmt_monitor_stats_t st;
  assert_int_equal(vmt_monitor_get_stats(m, &st), 0);
  assert_int_equal(st.waits, 1);
  assert_int_equal(st.wait_waiters, 0);
  assert_int_equal(vmt_monitor_destroy(m), 0);
}

typedef struct waiters {
  vmt_monitor_t *m;
  _Atomic int waiting;
  _Atomic int woken;
  int rc[WORKERS];
  _Atomic int next;
} waiters_t;

static void *waiter(void *arg) {
  waiters_t *w = arg;
  int me = atomic_fetch_add(&w->next, 1);
  vmt_monitor_enter(w->m);
  atomic_fetch_add(&w->waiting, 1);
  w->rc[me] = vmt_monitor_wait(w->m, 0);
  atomic_fetch_add(&w->woken, 1);
  vmt_monitor_exit(w->m);
  return NULL;
}

static void wait_until_waiters(waiters_t *w, uint32_t n) {
  int64_t deadline = test_clock_ns(CLOCK_MONOTONIC) + MU_POLL_DEADLINE_NS;
  for (;;) {
    vmt_monitor_stats_t st;
    assert_int_equal(vmt_monitor_get_stats(w->m, &st), 0);
    if (st.wait_waiters == n) return;
    if (test_clock_ns(CLOCK_MONOTONIC) > deadline)
      fail_msg("%u waiters, expected %u", st.wait_waiters, n);
    mu_pause_1ms();
  }
}

static void notify_wakes_one_notify_all_wakes_the_rest(void **state) {
  (void)state;
  waiters_t w = {0};
  assert_int_equal(vmt_monitor_create(&w.m, "cond"), 0);
  vmt_thread_t *t[WORKERS];
  for (int i = 0; i < WORKERS; i++) t[i] = mu_start(waiter, &w);
  wait_until_waiters(&w, WORKERS);
  assert_int_equal(vmt_monitor_destroy(w.m), -EBUSY);   /* waiters pin it */
  for (int i = 0; i < WORKERS; i++) wait_for_state(t[i], VMT_THREAD_WAITING);

  assert_int_equal(vmt_monitor_enter(w.m), 0);
  assert_int_equal(vmt_monitor_notify(w.m), 0);
  assert_int_equal(vmt_monitor_exit(w.m), 0);
  wait_until_waiters(&w, WORKERS - 1);
  MU_POLL_UNTIL(atomic_load(&w.woken) >= 1, "the notified waiter");
  assert_int_equal(atomic_load(&w.woken), 1);   /* one, not more */

  assert_int_equal(vmt_monitor_enter(w.m), 0);
  assert_int_equal(vmt_monitor_notify_all(w.m), 0);
  assert_int_equal(vmt_monitor_exit(w.m), 0);
  for (int i = 0; i < WORKERS; i++) mu_join(t[i]);
  assert_int_equal(atomic_load(&w.woken), WORKERS);
  for (int i = 0; i < WORKERS; i++) assert_int_equal(w.rc[i], 0);
  /* Nobody left waiting: a notify now is a no-op, not an error. */
  assert_int_equal(vmt_monitor_enter(w.m), 0);
  assert_int_equal(vmt_monitor_notify(w.m), 0);
  assert_int_equal(vmt_monitor_exit(w.m), 0);
  assert_int_equal(vmt_monitor_destroy(w.m), 0);
}

/* A token passed around a ring of threads through one monitor, thousands of times: every
 * hand-off is a notify_all and a wait, so a lost wake-up (a notified waiter left asleep on the
 * lock word) hangs this test. */
#define RING 3
#define PASSES 400

typedef struct ring {
  vmt_monitor_t *m;
  int token;
  _Atomic int next_id;
} ring_t;

static void *ring_member(void *arg) {
  ring_t *r = arg;
  int me = atomic_fetch_add(&r->next_id, 1);
  vmt_monitor_enter(r->m);
  for (int i = 0; i < PASSES; i++) {
    while (r->token != me) vmt_monitor_wait(r->m, 0);
    r->token = (me + 1) % RING;
    vmt_monitor_notify_all(r->m);
  }
  vmt_monitor_exit(r->m);
  return NULL;
}

static void no_wake_up_is_lost_around_a_ring(void **state) {
  (void)state;
  ring_t r = {0};
  assert_int_equal(vmt_monitor_create(&r.m, "ring"), 0);
  vmt_thread_t *t[RING];
  for (int i = 0; i < RING; i++) t[i] = mu_start(ring_member, &r);
  for (int i = 0; i < RING; i++) mu_join(t[i]);
  assert_int_equal(r.token, 0);   /* RING * PASSES hand-offs, back to the first */
  vmt_monitor_stats_t st;
  assert_int_equal(vmt_monitor_get_stats(r.m, &st), 0);
  assert_int_equal(st.wait_waiters, 0);
  assert_int_equal(st.entry_waiters, 0);
  assert_int_equal(vmt_monitor_destroy(r.m), 0);
}

/* The same with notify: two threads, each hand-off a notify and then a wait, so that the
 * notified waiter is woken by its notifier's wait, which releases the monitor: a waiter left
 * asleep hangs the test. */
static void *pair_member(void *arg) {
  ring_t *r = arg;
  int me = atomic_fetch_add(&r->next_id, 1);
  vmt_monitor_enter(r->m);
  for (int i = 0; i < PASSES; i++) {
    while (r->token != me) vmt_monitor_wait(r->m, 0);
    r->token = 1 - me;
    vmt_monitor_notify(r->m);
  }
  vmt_monitor_exit(r->m);
  return NULL;
}

static void no_wake_up_is_lost_between_two_notifiers(void **state) {
  (void)state;
  ring_t r = {0};
  assert_int_equal(vmt_monitor_create(&r.m, "pair"), 0);
  vmt_thread_t *t[2];
  for (int i = 0; i < 2; i++) t[i] = mu_start(pair_member, &r);
  for (int i = 0; i < 2; i++) mu_join(t[i]);
  assert_int_equal(r.token, 0);
  vmt_monitor_stats_t st;
  assert_int_equal(vmt_monitor_get_stats(r.m, &st), 0);
  assert_int_equal(st.wait_waiters, 0);
  assert_int_equal(st.entry_waiters, 0);
  assert_int_equal(vmt_monitor_destroy(r.m), 0);
}

/* A notifier whose thread ends while it still owns the monitor: the end's release (not an exit)
 * must wake the notified waiter, which then owns the monitor. */
static void *notify_and_end(void *arg) {
  waiters_t *w = arg;
  vmt_monitor_enter(w->m);
  vmt_monitor_notify(w->m);
  return NULL;   /* still inside: the thread's end releases it */
}

static void a_notifier_that_ends_inside_wakes_its_waiter(void **state) {
  (void)state;
  waiters_t w = {0};
  assert_int_equal(vmt_monitor_create(&w.m, "end"), 0);
  vmt_thread_t *waiter_thread = mu_start(waiter, &w);
  wait_until_waiters(&w, 1);
  wait_for_state(waiter_thread, VMT_THREAD_WAITING);
  mu_join(mu_start(notify_and_end, &w));
  mu_join(waiter_thread);
  assert_int_equal(w.rc[0], 0);
  assert_int_equal(atomic_load(&w.woken), 1);
  assert_int_equal(vmt_monitor_destroy(w.m), 0);
}

/* ---- States ----------------------------------------------------------------------------- */

static void *enter_once(void *arg) {
  shared_t *sh = arg;
  sh->rc[0] = vmt_monitor_enter(sh->m);
  vmt_monitor_exit(sh->m);
  sh->rc[1] = vmt_sync_timed_lock(sh->s, 30LL * 1000 * 1000 * 1000);
  vmt_sync_unlock(sh->s);
  return NULL;
}

static void blocked_thread_shows_blocked_then_waiting(void **state) {
  (void)state;
  shared_t sh = {0};
  assert_int_equal(vmt_monitor_create(&sh.m, "state"), 0);
  assert_int_equal(vmt_sync_create(&sh.s, "state-sync"), 0);
  assert_int_equal(vmt_monitor_enter(sh.m), 0);
  assert_int_equal(vmt_sync_lock(sh.s), 0);
  vmt_thread_t *t = mu_start(enter_once, &sh);
  wait_for_state(t, VMT_THREAD_BLOCKED);
  vmt_monitor_stats_t st;
  assert_int_equal(vmt_monitor_get_stats(sh.m, &st), 0);
  assert_int_equal(st.entry_waiters, 1);
  assert_int_equal(st.contended_enters, 1);
  assert_int_equal(vmt_monitor_destroy(sh.m), -EBUSY);
  assert_int_equal(vmt_monitor_exit(sh.m), 0);
  /* A timed synchronizer acquisition is a timed wait (a park in Java). */
  wait_for_state(t, VMT_THREAD_TIMED_WAITING);
  assert_int_equal(vmt_sync_destroy(sh.s), -EBUSY);
  assert_int_equal(vmt_sync_unlock(sh.s), 0);
  mu_join(t);
  assert_int_equal(sh.rc[0], 0);
  assert_int_equal(sh.rc[1], 0);
  assert_int_equal(vmt_monitor_destroy(sh.m), 0);
  assert_int_equal(vmt_sync_destroy(sh.s), 0);
}

/* ---- Park and sleep --------------------------------------------------------------------- */

static void *park_forever(void *arg) {
  (void)arg;
  return (void *)(intptr_t)vmt_park(0);
}

static void *park_then_sleep(void *arg) {
  (void)arg;
  intptr_t rc = vmt_park(30LL * 1000 * 1000 * 1000);
  vmt_sleep_ns(1000 * 1000);
  return (void *)rc;
}

static void *park_foreign(void *arg) {
  (void)arg;
  return (void *)(intptr_t)vmt_park(1000);
}

static void park_and_unpark(void **state) {
  (void)state;
  vmt_thread_t *t = mu_start(park_forever, NULL);
  wait_for_state(t, VMT_THREAD_WAITING);
  assert_int_equal(vmt_unpark(t), 0);
  assert_int_equal((intptr_t)mu_join(t), 0);

  t = mu_start(park_then_sleep, NULL);
  wait_for_state(t, VMT_THREAD_TIMED_WAITING);
  assert_int_equal(vmt_unpark(t), 0);
  assert_int_equal((intptr_t)mu_join(t), 0);

  /* A thread without a record has no permit. */
  pthread_t p;
  void *rc;
  assert_int_equal(pthread_create(&p, NULL, park_foreign, NULL), 0);
  assert_int_equal(pthread_join(p, &rc), 0);
  assert_int_equal((intptr_t)rc, -EPERM);
}

static void *permit_then_park(void *arg) {
  (void)arg;
  vmt_unpark(vmt_thread_current());   /* a permit given before park is kept */
  int first = vmt_park(0);
  int second = vmt_park(5 * 1000 * 1000);   /* consumed: this one times out */
  return (void *)(intptr_t)(first == 0 && second == -ETIMEDOUT);
}

static void park_consumes_one_permit(void **state) {
  (void)state;
  vmt_thread_t *t = mu_start(permit_then_park, NULL);
  assert_int_equal((intptr_t)mu_join(t), 1);
}

static void sleep_honours_its_deadline(void **state) {
  (void)state;
  assert_int_equal(vmt_sleep_ns(0), 0);
  int64_t t0 = test_clock_ns(CLOCK_MONOTONIC);
  assert_int_equal(vmt_sleep_ns(15 * 1000 * 1000), 0);
  assert_true(test_clock_ns(CLOCK_MONOTONIC) - t0 >= 15 * 1000 * 1000);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(create_rejects_bad_input),
      cmocka_unit_test(describe_shows_name_and_unique_identity),
      cmocka_unit_test(destroyed_monitor_is_rejected_not_undefined),
      cmocka_unit_test(destroy_racing_enters_is_all_or_nothing),
      cmocka_unit_test(reentrant_enter_and_exit_balance),
      cmocka_unit_test(non_owners_get_errors),
      cmocka_unit_test(synchronizer_is_not_reentrant),
      cmocka_unit_test(contended_enters_exclude_each_other),
      cmocka_unit_test(ending_thread_releases_what_it_holds),
      cmocka_unit_test(ended_foreign_thread_passes_nothing_on),
      cmocka_unit_test(detach_leaves_a_thread_inside_its_monitors),
      cmocka_unit_test(wait_times_out_and_restores_depth),
      cmocka_unit_test(notify_wakes_one_notify_all_wakes_the_rest),
      cmocka_unit_test(no_wake_up_is_lost_around_a_ring),
      cmocka_unit_test(no_wake_up_is_lost_between_two_notifiers),
      cmocka_unit_test(a_notifier_that_ends_inside_wakes_its_waiter),
      cmocka_unit_test(blocked_thread_shows_blocked_then_waiting),
      cmocka_unit_test(park_and_unpark),
      cmocka_unit_test(park_consumes_one_permit),
      cmocka_unit_test(sleep_honours_its_deadline),
  };
  return cmocka_run_group_tests_name("monitor", tests, NULL, NULL);
}
