/*
 * test/vms_util.h: what the VM-services tests share: a mutator (a runtime thread that runs
 * "managed code" in a loop, polling or not), threads that park or sit in a native system call,
 * and a probe handshake operation that records who ran it, on which thread, how often. Bodies
 * never assert (cmocka's checks belong to the main thread): they publish what they saw in
 * atomics that the test checks. Include after <cmocka.h>.
 */
#ifndef VMT_TEST_VMS_UTIL_H
#define VMT_TEST_VMS_UTIL_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include "test/monitor_util.h"
#include "vmthread.h"

/* Scale for loops whose count the issue fixes (10^6 suspend/resume pairs): the sanitizers
 * run the same code 10-50x slower, so they run a fraction of it (said in each test). */
#if defined(__SANITIZE_THREAD__)
#define VMS_SCALE_DIVISOR 50
#elif defined(__SANITIZE_ADDRESS__)
#define VMS_SCALE_DIVISOR 10
#else
#define VMS_SCALE_DIVISOR 1
#endif

#define VMS_SECOND (1000LL * 1000 * 1000)

/* Waits (in a thread that is not cmocka's) until cond or 10 s; false on the deadline. */
#define WAIT_UNTIL(cond)                                                            \
  ({                                                                                \
    int64_t wu_deadline_ = test_clock_ns(CLOCK_MONOTONIC) + 10 * VMS_SECOND;        \
    while (!(cond) && test_clock_ns(CLOCK_MONOTONIC) < wu_deadline_) sched_yield();  \
    (bool)(cond);                                                                   \
  })

typedef struct mutator {
  _Atomic bool stop;
  _Atomic bool poll;            /* poll between chunks of work, or never */
  _Atomic bool exit_managed;    /* return from the body still in MANAGED */
  _Atomic bool running;         /* in the loop, in MANAGED */
  _Atomic bool busy;            /* inside a chunk of managed work (between two polls) */
  _Atomic uint64_t iterations;
  vmt_thread_t *thread;
} mutator_t;

static inline void *mutate(void *arg) {
  mutator_t *m = arg;
  vmt_thread_t *self = vmt_thread_current();
  vmt_exec_enter(VMT_EXEC_MANAGED);
  atomic_store(&m->running, true);
  while (!atomic_load_explicit(&m->stop, memory_order_relaxed)) {
    atomic_store_explicit(&m->busy, true, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->iterations, 1, memory_order_relaxed);
    atomic_store_explicit(&m->busy, false, memory_order_release);
    if (atomic_load_explicit(&m->poll, memory_order_relaxed)) vmt_poll(self);
  }
  atomic_store(&m->running, false);
  if (!atomic_load(&m->exit_managed)) vmt_exec_enter(VMT_EXEC_NATIVE);
  return NULL;
}

static inline void mutator_start(mutator_t *m, bool poll) {
  memset(m, 0, sizeof(*m));
  atomic_store(&m->poll, poll);
  m->thread = mu_start(mutate, m);
  MU_POLL_UNTIL(atomic_load(&m->running), "the mutator to run managed code");
}

static inline void mutator_stop(mutator_t *m) {
  atomic_store(&m->poll, true);
  atomic_store(&m->stop, true);
  mu_join(m->thread);
}

/* True if the mutator does not advance over about 20 ms (a stopped thread). A thread that is
 * not stopped advances within microseconds, so this never passes for a running one by
 * accident; it can only miss a stop, not invent one. */
static inline bool mutator_stalled(mutator_t *m) {
  uint64_t before = atomic_load(&m->iterations);
  for (int i = 0; i < 20; i++) mu_pause_1ms();
  return atomic_load(&m->iterations) == before;
}

/* A thread in MANAGED that parks (a safe region) until unparked, then says so. */
typedef struct parker {
  _Atomic int phase;            /* 1 parking, 2 back from park */
  _Atomic bool stop;
  vmt_thread_t *thread;
} parker_t;

static inline void *park_managed(void *arg) {
  parker_t *p = arg;
  vmt_exec_enter(VMT_EXEC_MANAGED);
  atomic_store(&p->phase, 1);
  while (!atomic_load(&p->stop)) vmt_park(0);
  atomic_store(&p->phase, 2);
  vmt_exec_enter(VMT_EXEC_NATIVE);
  return NULL;
}

static inline void parker_start(parker_t *p) {
  memset(p, 0, sizeof(*p));
  p->thread = mu_start(park_managed, p);
  MU_POLL_UNTIL(atomic_load(&p->phase) == 1 && vmt_exec_state(p->thread) == VMT_EXEC_BLOCKED,
                "the parker to park");
}

static inline void parker_stop(parker_t *p) {
  atomic_store(&p->stop, true);
  vmt_unpark(p->thread);
  mu_join(p->thread);
}

/* A thread that stays NATIVE, blocked in read(2) on a pipe until a byte comes; with
 * then_managed it enters managed code after the read (and says so), then leaves it. */
typedef struct native_reader {
  int fds[2];
  bool then_managed;
  _Atomic int phase;            /* 1 about to read, 2 read done, 3 in managed code */
  vmt_thread_t *thread;
} native_reader_t;

static inline void *read_native(void *arg) {
  native_reader_t *r = arg;
  atomic_store(&r->phase, 1);
  char c;
  ssize_t n = read(r->fds[0], &c, 1);
  (void)n;
  atomic_store(&r->phase, 2);
  if (r->then_managed) {
    vmt_exec_enter(VMT_EXEC_MANAGED);
    atomic_store(&r->phase, 3);
    vmt_exec_enter(VMT_EXEC_NATIVE);
  }
  return NULL;
}

static inline void reader_start_ex(native_reader_t *r, bool then_managed) {
  memset(r, 0, sizeof(*r));
  r->then_managed = then_managed;
  assert_int_equal(pipe(r->fds), 0);
  r->thread = mu_start(read_native, r);
  MU_POLL_UNTIL(atomic_load(&r->phase) == 1, "the reader to block");
}

static inline void reader_start(native_reader_t *r) { reader_start_ex(r, false); }

/* Lets the reader's read(2) return. */
static inline void reader_feed(native_reader_t *r) {
  assert_int_equal(write(r->fds[1], "x", 1), 1);
}

static inline void reader_stop(native_reader_t *r) {
  if (atomic_load(&r->phase) == 1) reader_feed(r);
  mu_join(r->thread);
  close(r->fds[0]);
  close(r->fds[1]);
}

/* A handshake operation that records its calls. */
typedef struct probe {
  _Atomic int calls;
  _Atomic(vmt_thread_t *) ran_on;     /* vmt_thread_current() inside fn */
  _Atomic(vmt_thread_t *) target;     /* fn's target argument */
  _Atomic int target_exec_state;      /* the target's state as fn saw it */
} probe_t;

static inline void probe_fn(vmt_thread_t *target, void *arg) {
  probe_t *p = arg;
  atomic_store(&p->ran_on, vmt_thread_current());
  atomic_store(&p->target, target);
  atomic_store(&p->target_exec_state, vmt_exec_state(target));
  atomic_fetch_add(&p->calls, 1);
}

#endif /* VMT_TEST_VMS_UTIL_H */
