/*
 * test/os_thread_linux_internal_test.c: the Linux port's thread identity and CPU-time reads
 * (runtime/os.h), driven on raw pthreads so that every life-cycle point can be held still: never
 * started, running, exiting, exited. Internal API, Linux-specific, hence the name.
 *
 * Wherever a read must fail, the caller has burned CPU first: an implementation that fell back
 * to the caller's clock (what glibc and musl do for an exited thread) would return a large
 * positive number instead of -1.
 *
 * Last, the end hook's fallback (__cxa_thread_atexit_impl, for a library loaded after the host
 * took every thread-specific-data key), forced through its test seam: a thread that ends
 * holding a monitor, or attached, must still be torn down.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "os_linux/os_impl.h"
#include "runtime/fault.h"
#include "runtime/os.h"
#include "test/cpu_burn.h"
#include "vmthread.h"

/* A raw pthread that reports its tid, optionally marks itself exiting, then parks until
 * released. It parks blocked on a condition variable, not in a sleep loop: the tests compare
 * its CPU time with the caller's, and a loop that wakes every few hundred microseconds costs
 * CPU in proportion to wall-clock time (under TSan on a loaded machine, as much as the 60 ms
 * the caller burns: live_thread_reads_its_own_time_not_the_callers failed 1 run in 20). */
typedef struct child {
  pthread_t handle;
  vmt_os_thread_t ot;
  _Atomic pid_t gettid;
  pthread_mutex_t lock;
  pthread_cond_t changed;
  int stage;                /* 1: ready (after its own work), 2: may leave; under lock */
  bool mark_exiting;
  int burn_ms;
} child_t;

static void child_set_stage(child_t *c, int stage) {
  pthread_mutex_lock(&c->lock);
  c->stage = stage;
  pthread_cond_broadcast(&c->changed);
  pthread_mutex_unlock(&c->lock);
}

static void child_await_stage(child_t *c, int stage) {
  pthread_mutex_lock(&c->lock);
  while (c->stage != stage) pthread_cond_wait(&c->changed, &c->lock);
  pthread_mutex_unlock(&c->lock);
}

static void *child_main(void *arg) {
  child_t *c = arg;
  atomic_store(&c->gettid, (pid_t)syscall(SYS_gettid));
  if (c->burn_ms) burn_cpu_ms(c->burn_ms);
  if (c->mark_exiting) vmt_os_thread_mark_exiting(&c->ot);
  child_set_stage(c, 1);
  child_await_stage(c, 2);
  return NULL;
}

static void child_start(child_t *c, bool mark_exiting, int burn_ms) {
  memset(c, 0, sizeof(*c));
  c->mark_exiting = mark_exiting;
  c->burn_ms = burn_ms;
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->changed, NULL);
  assert_int_equal(pthread_create(&c->handle, NULL, child_main, c), 0);
  assert_int_equal(vmt_os_thread_bind(&c->ot, c->handle), 0);
}

static void child_wait_ready(child_t *c) { child_await_stage(c, 1); }

static void child_finish(child_t *c) {
  child_wait_ready(c);   /* else its "ready" store could overwrite the release */
  child_set_stage(c, 2);
  assert_int_equal(pthread_join(c->handle, NULL), 0);
  pthread_cond_destroy(&c->changed);
  pthread_mutex_destroy(&c->lock);
}

static int setup(void **state) {
  (void)state;
  return vmt_os_init();
}

static int teardown(void **state) {
  (void)state;
  vmt__fault_disarm_all();
  return 0;
}

static void bind_publishes_the_kernel_tid_before_the_child_runs(void **state) {
  (void)state;
  child_t c;
  child_start(&c, false, 0);
  pid_t tid = vmt_os_thread_tid_wait(&c.ot);
  assert_true(tid > 0);
  child_wait_ready(&c);
  assert_int_equal(tid, atomic_load(&c.gettid));
  /* The clock ids computed from the published tid are that thread's. */
  clockid_t expected;
  assert_int_equal(pthread_getcpuclockid(c.handle, &expected), 0);
  assert_int_equal(vmt_os__thread_clock(tid, VMT_OS_CPUCLOCK_SCHED), expected);
  child_finish(&c);
}

static void binding_twice_keeps_the_first_publication(void **state) {
  (void)state;
  child_t c;
  child_start(&c, false, 0);
  pid_t tid = vmt_os_thread_tid_wait(&c.ot);
  assert_int_equal(vmt_os_thread_bind(&c.ot, c.handle), 0);
  assert_int_equal(vmt_os_thread_tid_wait(&c.ot), tid);
  child_finish(&c);
}

static void bind_self_matches_gettid(void **state) {
  (void)state;
  vmt_os_thread_t ot;
  memset(&ot, 0, sizeof(ot));
  assert_int_equal(vmt_os_thread_bind_self(&ot), 0);
  assert_int_equal(vmt_os_thread_tid_wait(&ot), (pid_t)syscall(SYS_gettid));
  assert_int_equal(vmt_os_current_tid(), (pid_t)syscall(SYS_gettid));
  bool ok = false;
  assert_true(vmt_os_thread_cpu_time(&ot, false, &ok) > 0);
  assert_true(ok);
}

static void rebinding_starts_a_new_cpu_time_history(void **state) {
  (void)state;
  /* What the runtime does for the surviving thread after fork: tid back to 0, bind again. */
  vmt_os_thread_t ot;
  memset(&ot, 0, sizeof(ot));
  atomic_store(&ot.user_time_floor_ns, INT64_MAX / 4);
  assert_int_equal(vmt_os_thread_bind_self(&ot), 0);
  assert_int_equal(atomic_load(&ot.user_time_floor_ns), 0);
  int64_t user = vmt_os_current_thread_user_time_consistent(&ot);
  int64_t total = vmt_os_current_thread_cpu_time(false);
  assert_true(user >= 0 && user <= total);
}

static bool clock_reads(clockid_t c) {
  struct timespec ts;
  return clock_gettime(c, &ts) == 0;
}

static void capabilities_match_the_clocks(void **state) {
  (void)state;
  const vmt_os_caps_t *caps = vmt_os_caps();
  assert_non_null(caps);
  pid_t tid = vmt_os_current_tid();
  clockid_t sched = (clockid_t)((~(uint32_t)tid << 3) | 6u);
  clockid_t virt = (clockid_t)((~(uint32_t)tid << 3) | 5u);
  assert_int_equal(caps->thread_cpu_time, clock_reads(sched));
  assert_int_equal(caps->current_thread_cpu_time, clock_reads(-2));
  assert_int_equal(caps->user_time, clock_reads(virt) && clock_reads(-3));
  /* Working clocks mean no /proc fallback. */
  if (caps->thread_cpu_time && caps->current_thread_cpu_time && caps->user_time)
    assert_int_equal(atomic_load(&vmt_os__proc_fallback), 0);
}

static void null_records_are_rejected(void **state) {
  (void)state;
  assert_int_equal(vmt_os_thread_bind(NULL, pthread_self()), -EINVAL);
  assert_int_equal(vmt_os_thread_bind_self(NULL), -EINVAL);
  assert_int_equal(vmt_os_thread_tid_wait(NULL), -EINVAL);
  vmt_os_thread_mark_exiting(NULL);
  bool ok = true;
  assert_int_equal(vmt_os_thread_cpu_time(NULL, false, &ok), -1);
  assert_false(ok);
}

/* A waiter blocked in tid_wait is woken by the publication. */
typedef struct waiter {
  vmt_os_thread_t *ot;
  _Atomic pid_t seen;
} waiter_t;

static void *wait_for_tid(void *arg) {
  waiter_t *w = arg;
  atomic_store(&w->seen, vmt_os_thread_tid_wait(w->ot));
  return NULL;
}

static void tid_wait_blocks_until_published(void **state) {
  (void)state;
  vmt_os_thread_t ot;
  memset(&ot, 0, sizeof(ot));
  waiter_t w = {.ot = &ot};
  pthread_t waiter;
  assert_int_equal(pthread_create(&waiter, NULL, wait_for_tid, &w), 0);
  usleep(20000);   /* let it block; correctness does not depend on it */
  assert_int_equal(atomic_load(&w.seen), 0);
  assert_int_equal(vmt_os_thread_bind_self(&ot), 0);
  assert_int_equal(pthread_join(waiter, NULL), 0);
  assert_int_equal(atomic_load(&w.seen), vmt_os_current_tid());
}

/* Publication against waiters that arrive before, during and after it, many times over: a
 * lost wake-up would hang the join (and the test's timeout would report it). */
static void publication_never_loses_a_waiter(void **state) {
  (void)state;
  for (int round = 0; round < 300; round++) {
    vmt_os_thread_t ot;
    memset(&ot, 0, sizeof(ot));
    waiter_t w[2] = {{.ot = &ot}, {.ot = &ot}};
    pthread_t th[2];
    assert_int_equal(pthread_create(&th[0], NULL, wait_for_tid, &w[0]), 0);
    if (round % 3 == 0) sched_yield();
    assert_int_equal(pthread_create(&th[1], NULL, wait_for_tid, &w[1]), 0);
    if (round % 2 == 0) sched_yield();
    assert_int_equal(vmt_os_thread_bind_self(&ot), 0);
    for (int i = 0; i < 2; i++) {
      assert_int_equal(pthread_join(th[i], NULL), 0);
      assert_int_equal(atomic_load(&w[i].seen), vmt_os_current_tid());
    }
  }
}

static void unpublished_states_read_as_no_tid(void **state) {
  (void)state;
  /* The binding states of the word (os_linux/thread_id.c) are all "not yet". */
  const int32_t states[] = {0, -1, -2, -3};
  for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
    vmt_os_thread_t ot;
    memset(&ot, 0, sizeof(ot));
    atomic_store(&ot.tid, states[i]);
    assert_int_equal(vmt_os_thread_tid(&ot), 0);
    bool ok = true;
    assert_int_equal(vmt_os_thread_cpu_time(&ot, false, &ok), -1);
    assert_false(ok);
  }
  assert_int_equal(vmt_os_thread_tid(NULL), 0);
}

static void never_started_thread_reads_minus_one(void **state) {
  (void)state;
  vmt_os_thread_t ot;
  memset(&ot, 0, sizeof(ot));
  burn_cpu_ms(20);
  for (int user_only = 0; user_only <= 1; user_only++) {
    bool ok = true;
    assert_int_equal(vmt_os_thread_cpu_time(&ot, user_only, &ok), -1);
    assert_false(ok);
  }
  bool ok = true;
  assert_int_equal(vmt_os_thread_user_time_consistent(&ot, &ok), -1);
  assert_false(ok);
}

static void live_thread_reads_its_own_time_not_the_callers(void **state) {
  (void)state;
  child_t c;
  child_start(&c, false, 30);
  child_wait_ready(&c);   /* it burned 30 ms and now sleeps */
  bool ok = false;
  int64_t before = vmt_os_thread_cpu_time(&c.ot, false, &ok);
  assert_true(ok);
  assert_true(before >= 30 * 1000000);
  int64_t caller_before = vmt_os_current_thread_cpu_time(false);
  burn_cpu_ms(60);
  int64_t caller_grew = vmt_os_current_thread_cpu_time(false) - caller_before;
  ok = false;
  int64_t after = vmt_os_thread_cpu_time(&c.ot, false, &ok);
  assert_true(ok);
  /* The sleeping child gained far less than the 60 ms the caller burned. */
  assert_true(after >= before);
  assert_true(after - before < caller_grew / 2);
  ok = false;
  int64_t user = vmt_os_thread_cpu_time(&c.ot, true, &ok);
  assert_true(ok);
  assert_true(user >= 0);
  child_finish(&c);
}

static void exiting_thread_reads_minus_one(void **state) {
  (void)state;
  child_t c;
  child_start(&c, true, 0);
  child_wait_ready(&c);   /* marked exiting, still alive and parked */
  burn_cpu_ms(20);
  for (int user_only = 0; user_only <= 1; user_only++) {
    bool ok = true;
    assert_int_equal(vmt_os_thread_cpu_time(&c.ot, user_only, &ok), -1);
    assert_false(ok);
  }
  bool ok = true;
  assert_int_equal(vmt_os_thread_user_time_consistent(&c.ot, &ok), -1);
  assert_false(ok);
  child_finish(&c);
}

/* The fault seam of the clock read runs this: the thread starts to exit after the read checked
 * `exiting` and before the clock is read (a real exit would recycle the tid next). */
static void mark_exiting_hook(void *arg) { vmt_os_thread_mark_exiting(&((child_t *)arg)->ot); }

/* What only the check after the syscall catches: the thread alive and its tid still its own,
 * but leaving, so the value read may already belong to a recycled tid. */
static void thread_that_starts_exiting_during_the_read_reads_minus_one(void **state) {
  (void)state;
  for (int kind = 0; kind < 3; kind++) {   /* total, fast user, consistent user */
    child_t c;
    child_start(&c, false, 0);
    child_wait_ready(&c);
    vmt__fault_set_hook(VMT__FAULT_CLOCK, mark_exiting_hook, &c);
    bool ok = true;
    int64_t ns = kind < 2 ? vmt_os_thread_cpu_time(&c.ot, kind == 1, &ok)
                          : vmt_os_thread_user_time_consistent(&c.ot, &ok);
    vmt__fault_set_hook(VMT__FAULT_CLOCK, NULL, NULL);
    assert_int_equal(ns, -1);
    assert_false(ok);
    child_finish(&c);
  }
}

/* The sweep's form (vmt_os_threads_cpu_time) answers each element as one read would: a live
 * thread's own time, -1 for no record, a never-bound record, an exiting, an exited thread and
 * one that starts to exit during its read (the seam's hook), while its neighbours are read. */
static void batch_read_answers_each_thread_as_one_read_does(void **state) {
  (void)state;
  child_t live, exiting, gone, leaving;
  child_start(&live, false, 30);
  child_start(&exiting, true, 0);
  child_start(&gone, false, 0);
  child_start(&leaving, false, 0);
  child_wait_ready(&live);
  child_wait_ready(&exiting);
  child_wait_ready(&leaving);
  child_finish(&gone);
  vmt_os_thread_t unbound;
  memset(&unbound, 0, sizeof(unbound));
  burn_cpu_ms(60);
  const vmt_os_thread_t *ots[6] = {&live.ot, NULL, &unbound, &exiting.ot, &gone.ot, &live.ot};
  int64_t out[6];
  vmt_os_threads_cpu_time(ots, 6, out, (const void *const *)ots, 1);
  bool ok = false;
  int64_t one = vmt_os_thread_cpu_time(&live.ot, false, &ok);
  assert_true(ok);
  /* The live child's 30 ms and more, but not the caller's 60 ms on top. */
  assert_true(out[0] >= 30 * 1000000 && out[0] <= one && out[5] >= out[0] && out[5] <= one);
  assert_true(one < 60 * 1000000);
  for (int k = 1; k <= 4; k++) assert_int_equal(out[k], -1);
  /* The thread begins to leave between its check and its syscall: only the check after the
   * syscall catches it; the threads around it are still read. */
  const vmt_os_thread_t *around[3] = {&live.ot, &leaving.ot, &live.ot};
  vmt__fault_set_hook(VMT__FAULT_CLOCK, mark_exiting_hook, &leaving);
  vmt_os_threads_cpu_time(around, 3, out, NULL, 0);
  vmt__fault_set_hook(VMT__FAULT_CLOCK, NULL, NULL);
  assert_int_equal(out[1], -1);
  assert_true(out[0] >= 30 * 1000000 && out[2] >= out[0]);
  /* A failing clock read fails that element only (the seam counts each read once). */
  const vmt_os_thread_t *three[3] = {&live.ot, &live.ot, &live.ot};
  vmt__fault_arm(VMT__FAULT_CLOCK, 1, 1, EIO);
  vmt_os_threads_cpu_time(three, 3, out, NULL, 0);
  assert_int_equal(vmt__fault_injected(VMT__FAULT_CLOCK), 1);
  assert_int_equal(out[1], -1);
  assert_true(out[0] >= 30 * 1000000 && out[2] >= out[0]);
  vmt__fault_disarm_all();
  vmt_os_threads_cpu_time(ots, 0, out, NULL, 0);   /* nothing to do */
  child_finish(&live);
  child_finish(&exiting);
  child_finish(&leaving);
}

static void exited_thread_reads_minus_one(void **state) {
  (void)state;
  /* With the flag (what the runtime does) and without it (the kernel's EINVAL for a gone
   * task is then what must be turned into -1). */
  for (int marked = 0; marked <= 1; marked++) {
    child_t c;
    child_start(&c, marked, 0);
    child_wait_ready(&c);
    child_finish(&c);
    burn_cpu_ms(20);
    for (int user_only = 0; user_only <= 1; user_only++) {
      bool ok = true;
      assert_int_equal(vmt_os_thread_cpu_time(&c.ot, user_only, &ok), -1);
      assert_false(ok);
    }
  }
}

static void current_thread_times_are_sane(void **state) {
  (void)state;
  int64_t t0 = vmt_os_current_thread_cpu_time(false);
  burn_cpu_ms(10);
  int64_t t1 = vmt_os_current_thread_cpu_time(false);
  assert_true(t0 >= 0);
  assert_true(t1 - t0 >= 10 * 1000000);
  assert_true(vmt_os_current_thread_cpu_time(true) >= 0);
  /* pid-0 ids: VIRT = -3, SCHED = -2 (kernel ABI). */
  assert_int_equal(vmt_os_current_cpu_clockid(true), -3);
  assert_int_equal(vmt_os_current_cpu_clockid(false), -2);
}

static void clockid_mask_never_yields_fd_or_invalid_types(void **state) {
  (void)state;
  const int32_t pids[] = {0, 1, 77, 4194304, 0x0fffffff};
  for (size_t i = 0; i < sizeof(pids) / sizeof(pids[0]); i++) {
    for (uint32_t bits = 0; bits < 8; bits++) {
      clockid_t base = (clockid_t)((~(uint32_t)pids[i] << 3) | bits);
      bool valid = (bits & 4) != 0 && bits != 7;
      for (int user_only = 0; user_only <= 1; user_only++) {
        clockid_t out = 12345;
        int rc = vmt_os_cpu_clockid(base, user_only, &out);
        if (!valid) {
          assert_int_equal(rc, -EINVAL);
          assert_int_equal(out, 12345);
          continue;
        }
        assert_int_equal(rc, 0);
        assert_int_not_equal(out & 3, 3);
        assert_int_equal(out & 7, user_only ? 5 : 6);
        assert_int_equal(out >> 3, base >> 3);   /* the pid field is untouched */
      }
    }
  }
  clockid_t out;
  assert_int_equal(vmt_os_cpu_clockid(CLOCK_MONOTONIC, false, &out), -EINVAL);
  assert_int_equal(vmt_os_cpu_clockid(-2, false, NULL), -EINVAL);
  /* The real thing: this thread's clock, turned into VIRT, reads. */
  clockid_t sched, virt;
  assert_int_equal(pthread_getcpuclockid(pthread_self(), &sched), 0);
  assert_int_equal(vmt_os_cpu_clockid(sched, true, &virt), 0);
  struct timespec ts;
  assert_int_equal(clock_gettime(virt, &ts), 0);
}

static void clock_fault_fails_the_read_cleanly(void **state) {
  (void)state;
  child_t c;
  child_start(&c, false, 0);
  vmt__fault_arm(VMT__FAULT_CLOCK, 0, 1, EIO);
  bool ok = true;
  assert_int_equal(vmt_os_thread_cpu_time(&c.ot, false, &ok), -1);
  assert_false(ok);
  assert_int_equal(vmt__fault_injected(VMT__FAULT_CLOCK), 1);
  /* The next read works again. */
  assert_true(vmt_os_thread_cpu_time(&c.ot, false, &ok) >= 0);
  assert_true(ok);
  vmt__fault_arm(VMT__FAULT_CLOCK, 0, 1, EIO);
  assert_int_equal(vmt_os_current_thread_cpu_time(false), -1);
  child_finish(&c);
}

static void getcpuclockid_fault_leaves_the_record_unbound(void **state) {
  (void)state;
  child_t c;
  memset(&c, 0, sizeof(c));
  pthread_mutex_init(&c.lock, NULL);
  pthread_cond_init(&c.changed, NULL);
  assert_int_equal(pthread_create(&c.handle, NULL, child_main, &c), 0);
  vmt__fault_arm(VMT__FAULT_GETCPUCLOCKID, 0, 1, ESRCH);
  assert_int_equal(vmt_os_thread_bind(&c.ot, c.handle), -ESRCH);
  assert_int_equal(atomic_load(&c.ot.tid), 0);
  bool ok = true;
  assert_int_equal(vmt_os_thread_cpu_time(&c.ot, false, &ok), -1);
  assert_false(ok);
  /* A retry binds. */
  assert_int_equal(vmt_os_thread_bind(&c.ot, c.handle), 0);
  assert_true(vmt_os_thread_tid_wait(&c.ot) > 0);
  child_finish(&c);
}

static void forked_child_sees_its_own_tid(void **state) {
  (void)state;
  pid_t before = vmt_os_current_tid();   /* fills this thread's cache */
  assert_int_equal(before, (pid_t)syscall(SYS_gettid));
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(vmt_os_current_tid() == getpid() ? 0 : 1);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

/* When the clock-id probe fails, reads go through /proc: same answers (to the tick), same
 * validation. Forced through the test seam. */
static void proc_fallback_keeps_the_contract(void **state) {
  (void)state;
  unsigned old = vmt_os__set_proc_fallback(VMT_OS__PROC_THREAD_TOTAL | VMT_OS__PROC_THREAD_USER |
                                           VMT_OS__PROC_CURRENT_TOTAL | VMT_OS__PROC_CURRENT_USER);
  child_t live, exiting, gone;
  child_start(&live, false, 40);
  child_start(&exiting, true, 0);
  child_start(&gone, false, 0);
  child_wait_ready(&live);
  child_wait_ready(&exiting);
  child_finish(&gone);
  burn_cpu_ms(20);
  bool ok = false;
  int64_t total = vmt_os_thread_cpu_time(&live.ot, false, &ok);
  assert_true(ok);
  /* 40 ms burned; /proc counts 10 ms ticks scaled to the runtime. */
  assert_true(total >= 20 * 1000000 && total < 1000 * 1000000);
  int64_t user = vmt_os_thread_user_time_consistent(&live.ot, &ok);
  assert_true(ok);
  assert_true(user >= 0 && user <= vmt_os_thread_cpu_time(&live.ot, false, &ok));
  assert_true(vmt_os_thread_cpu_time(&live.ot, true, &ok) >= 0);
  assert_true(ok);
  for (int user_only = 0; user_only <= 1; user_only++) {
    ok = true;
    assert_int_equal(vmt_os_thread_cpu_time(&exiting.ot, user_only, &ok), -1);
    assert_false(ok);
    ok = true;
    assert_int_equal(vmt_os_thread_cpu_time(&gone.ot, user_only, &ok), -1);
    assert_false(ok);
  }
  assert_true(vmt_os_current_thread_cpu_time(false) >= 20 * 1000000);
  assert_true(vmt_os_current_thread_cpu_time(true) >= 0);
  /* The sweep's form takes the same path. */
  const vmt_os_thread_t *ots[3] = {&live.ot, &exiting.ot, &gone.ot};
  int64_t out[3];
  vmt_os_threads_cpu_time(ots, 3, out, NULL, 0);
  assert_true(out[0] >= 20 * 1000000 && out[0] < 1000 * 1000000);
  assert_int_equal(out[1], -1);
  assert_int_equal(out[2], -1);
  vmt_os__set_proc_fallback(old);
  child_finish(&live);
  child_finish(&exiting);
}

#if defined(__GLIBC__)
static void *enter_and_end(void *arg) {
  return (void *)(intptr_t)vmt_monitor_enter(arg);   /* still inside: its end releases it */
}

static void *attach_and_end(void *arg) {
  (void)arg;
  vmt_thread_t *self;
  return (void *)(intptr_t)vmt_thread_attach(NULL, &self);   /* its end detaches it */
}
#endif

static void the_end_hook_fallback_tears_threads_down(void **state) {
  (void)state;
#if !defined(__GLIBC__)
  print_message("skipped: the fallback is glibc's __cxa_thread_atexit_impl\n");
  skip();
#else
  bool old = vmt_os__thread_end_force_fallback(true);
  vmt_monitor_t *m;
  assert_int_equal(vmt_monitor_create(&m, "fallback"), 0);
  int32_t live0 = vmt_mx_get_thread_count();
  for (int i = 0; i < 8; i++) {
    pthread_t p;
    void *rc = (void *)1;
    assert_int_equal(pthread_create(&p, NULL, enter_and_end, m), 0);
    assert_int_equal(pthread_join(p, &rc), 0);
    assert_null(rc);
    assert_int_equal(vmt_monitor_try_enter(m), 0);   /* released at its end */
    assert_int_equal(vmt_monitor_exit(m), 0);
    assert_int_equal(pthread_create(&p, NULL, attach_and_end, NULL), 0);
    assert_int_equal(pthread_join(p, &rc), 0);
    assert_null(rc);
    assert_int_equal(vmt_mx_get_thread_count(), live0);   /* detached at its end */
  }
  assert_int_equal(vmt_monitor_destroy(m), 0);
  vmt_os__thread_end_force_fallback(old);
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(the_end_hook_fallback_tears_threads_down, teardown),
      cmocka_unit_test_teardown(bind_publishes_the_kernel_tid_before_the_child_runs, teardown),
      cmocka_unit_test_teardown(binding_twice_keeps_the_first_publication, teardown),
      cmocka_unit_test_teardown(bind_self_matches_gettid, teardown),
      cmocka_unit_test_teardown(rebinding_starts_a_new_cpu_time_history, teardown),
      cmocka_unit_test_teardown(capabilities_match_the_clocks, teardown),
      cmocka_unit_test_teardown(null_records_are_rejected, teardown),
      cmocka_unit_test_teardown(tid_wait_blocks_until_published, teardown),
      cmocka_unit_test_teardown(publication_never_loses_a_waiter, teardown),
      cmocka_unit_test_teardown(unpublished_states_read_as_no_tid, teardown),
      cmocka_unit_test_teardown(never_started_thread_reads_minus_one, teardown),
      cmocka_unit_test_teardown(live_thread_reads_its_own_time_not_the_callers, teardown),
      cmocka_unit_test_teardown(exiting_thread_reads_minus_one, teardown),
      cmocka_unit_test_teardown(thread_that_starts_exiting_during_the_read_reads_minus_one,
                                teardown),
      cmocka_unit_test_teardown(batch_read_answers_each_thread_as_one_read_does, teardown),
      cmocka_unit_test_teardown(exited_thread_reads_minus_one, teardown),
      cmocka_unit_test_teardown(current_thread_times_are_sane, teardown),
      cmocka_unit_test_teardown(clockid_mask_never_yields_fd_or_invalid_types, teardown),
      cmocka_unit_test_teardown(clock_fault_fails_the_read_cleanly, teardown),
      cmocka_unit_test_teardown(getcpuclockid_fault_leaves_the_record_unbound, teardown),
      cmocka_unit_test_teardown(forked_child_sees_its_own_tid, teardown),
      cmocka_unit_test_teardown(proc_fallback_keeps_the_contract, teardown),
  };
  return cmocka_run_group_tests_name("os_thread_linux_internal", tests, setup, NULL);
}
