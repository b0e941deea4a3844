/*
 * test/profiler_internal_test.c: the profiler's failure paths and its arming protocol, with
 * the fault seams and the record's prof state (a test of internals, hence the name).
 *
 * - timer_create failing (VMT__FAULT_TIMER): the start succeeds, every thread is counted in
 *   arm_failures and none is armed; nothing is left behind.
 * - allocation failing at the start: -ENOMEM, nothing left (not running, the signal's
 *   disposition untouched).
 * - a thread that ends while its arming is in progress (prof.state BUSY) waits for it, and
 *   then deletes the timer itself: it cannot finish its exit (nor give up its tid) with a
 *   timer.
 * - a thread put back (vmt_prof_set_thread_excluded false) while another party holds its claim
 *   having read the exclusion mark before it was cleared (its own start hook, the drainer's
 *   rescan) is armed once that party lets go, before the call returns.
 * - no POSIX timer is left in the process (/proc/self/timers) after a run in which threads
 *   started and ended, nor after a stop.
 * - a fork child never acts on the arming a vanished thread's record carries over (ARMED with
 *   a timer id of the parent's, or BUSY with a party that does not exist in the child): its
 *   stop and its exclusions neither wait for it, nor delete a timer by that id (the child's
 *   own timers get the same ids), nor put the parent's samples in the child's profile.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/fault.h"
#include "runtime/profiler/profiler_impl.h"
#include "test/cpu_burn.h"
#include "test/mx_util.h"
#include "test/thread_util.h"

/* POSIX timers of this process ("ID: n" per timer; -1 if the kernel does not list them). */
static int timers_in_process(void) {
  FILE *f = fopen("/proc/self/timers", "r");
  if (f == NULL) return -1;
  char line[256];
  int n = 0;
  while (fgets(line, sizeof(line), f))
    if (strncmp(line, "ID:", 3) == 0) n++;
  fclose(f);
  return n;
}

static int teardown(void **state) {
  (void)state;
  vmt__fault_disarm_all();
  vmt_prof_stop();
  return 0;
}

static void test_timer_failure_arms_nothing(void **state) {
  (void)state;
  /* The threads are held at a gate they have reached, not at a latch they may not have: a
   * thread's own start hook arms it (start.c, before its body), and one the scheduler ran
   * late armed itself once the faults below were disarmed (CI, 1 run in ~300 here: its claim
   * was BUSY at the check of its state). */
  gate_t hold;
  gate_init(&hold);
  enum { N = 3 };
  vmt_thread_t *t[N];
  for (int i = 0; i < N; i++) assert_int_equal(vmt_thread_start(&t[i], gate_body, &hold), 0);
  gate_await(&hold, N);
  vmt__fault_arm(VMT__FAULT_TIMER, 0, -1, EAGAIN);
  assert_int_equal(vmt_prof_start(NULL), 0);
  vmt_prof_stats_t st;
  assert_int_equal(vmt_prof_get_stats(&st), 0);
  assert_true(st.arm_failures >= N);
  assert_int_equal(st.threads_armed, 0);
  assert_int_equal(st.threads, 0);
  assert_true(vmt__fault_injected(VMT__FAULT_TIMER) >= N);
  vmt__fault_disarm_all();
  for (int i = 0; i < N; i++)
    assert_int_equal(atomic_load(&t[i]->prof.state), VMT__PROF_IDLE);
  assert_int_equal(vmt_prof_stop(), 0);
  if (timers_in_process() >= 0) assert_int_equal(timers_in_process(), 0);
  gate_open(&hold);
  for (int i = 0; i < N; i++) {
    assert_int_equal(vmt_thread_join(t[i], NULL), 0);
    vmt_thread_release(t[i]);
  }
  gate_destroy(&hold);
  assert_int_equal(vmt_prof_clear(), 0);
}

static void test_alloc_failure_at_start(void **state) {
  (void)state;
  struct sigaction before, after;
  assert_int_equal(sigaction(SIGRTMIN + 6, NULL, &before), 0);
  vmt__fault_arm(VMT__FAULT_ALLOC, 0, 1, ENOMEM);
  assert_int_equal(vmt_prof_start(NULL), -ENOMEM);
  vmt__fault_disarm_all();
  assert_false(vmt_prof_is_running());
  assert_int_equal(sigaction(SIGRTMIN + 6, NULL, &after), 0);
  assert_ptr_equal(after.sa_handler, before.sa_handler);
  assert_int_equal(vmt_prof_write_table(stdout), -ENOENT);
  /* And the next start works. */
  assert_int_equal(vmt_prof_start(NULL), 0);
  assert_int_equal(vmt_prof_stop(), 0);
  assert_int_equal(vmt_prof_clear(), 0);
}

static void *end_at_once(void *arg) {
  latch_wait((latch_t *)arg);
  return NULL;
}

static void test_exit_waits_for_arming_in_progress(void **state) {
  (void)state;
  latch_t go;
  latch_init(&go);
  assert_int_equal(vmt_prof_start(NULL), 0);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, end_at_once, &go), 0);
  /* Armed by itself as it started: now pretend another party is between its claim and its
   * timer (what vmt__prof_arm and vmt__prof_disarm hold the state BUSY for). */
  while (atomic_load(&t->prof.state) != VMT__PROF_ARMED) usleep(100);
  uint32_t armed = VMT__PROF_ARMED;
  assert_true(atomic_compare_exchange_strong(&t->prof.state, &armed, VMT__PROF_BUSY));
  latch_open(&go);
  /* It marks itself exiting as it leaves the registry (a liveness bound, not a timing: 30 s),
   * then cannot finish its exit while the state is BUSY: 20 ms later it is not done, and its
   * tid still names it (the timer the other party creates names that tid). The state is given
   * back before anything is asserted, so that a failure cannot leave the stop waiting. */
  for (int i = 0; i < 30000 && atomic_load(&t->os.exiting) == 0; i++) usleep(1000);
  int exiting = atomic_load(&t->os.exiting);
  usleep(20 * 1000);
  uint32_t done = atomic_load(&t->done);
  int alive = (int)syscall(SYS_tgkill, getpid(), vmt_os_thread_tid(&t->os), 0);
  atomic_store(&t->prof.state, VMT__PROF_ARMED);   /* the "other party" is done */
  assert_int_equal(exiting, 1);
  assert_int_equal(done, 0);
  assert_int_equal(alive, 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(atomic_load(&t->prof.state), VMT__PROF_IDLE);
  assert_null(atomic_load(&t->prof.slot));
  if (timers_in_process() >= 0) assert_int_equal(timers_in_process(), 0);
  assert_int_equal(vmt_prof_stop(), 0);
  vmt_prof_thread_stats_t ts;
  assert_int_equal(vmt_prof_get_thread_stats(vmt_thread_id(t), &ts), 0);
  assert_true(ts.ended);
  vmt_thread_release(t);
  latch_destroy(&go);
  assert_int_equal(vmt_prof_clear(), 0);
}

typedef struct include_call {
  vmt_thread_t *t;
  _Atomic int done;
  int rc;
} include_call_t;

static void *include_body(void *arg) {
  include_call_t *c = arg;
  c->rc = vmt_prof_set_thread_excluded(c->t, false);
  atomic_store(&c->done, 1);
  return NULL;
}

/* A thread that waits on go, excluded, with a session running; then a party (the drainer's
 * rescan, say) claims it and reads the mark: excluded. */
static vmt_thread_t *start_excluded_and_claim(latch_t *go) {
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, end_at_once, go), 0);
  assert_int_equal(vmt_prof_set_thread_excluded(t, true), 0);
  assert_int_equal(vmt_prof_start(NULL), 0);
  assert_int_equal(atomic_load(&t->prof.state), VMT__PROF_IDLE);
  uint32_t idle = VMT__PROF_IDLE;
  assert_true(atomic_compare_exchange_strong(&t->prof.state, &idle, VMT__PROF_BUSY));
  return t;
}

static void test_include_while_another_party_claims(void **state) {
  (void)state;
  latch_t go;
  latch_init(&go);
  vmt_thread_t *t = start_excluded_and_claim(&go);
  include_call_t c = {.t = t};
  pthread_t helper;
  assert_int_equal(pthread_create(&helper, NULL, include_body, &c), 0);
  /* The put-back runs meanwhile (given 200 ms to get past its arming attempt); then the party
   * does what it decided on the mark it read, and gives t back unarmed. */
  for (int i = 0; i < 200 && !atomic_load(&c.done); i++) usleep(1000);
  atomic_store(&t->prof.state, VMT__PROF_IDLE);
  assert_int_equal(pthread_join(helper, NULL), 0);
  uint32_t after = atomic_load(&t->prof.state);
  bool slot = atomic_load(&t->prof.slot) != NULL;
  print_message("put back during another party's claim: state %u after the call (%u = armed)\n",
                after, VMT__PROF_ARMED);
  /* t ends before anything is asserted: a failure leaves no live thread to the next test. */
  assert_int_equal(vmt_prof_stop(), 0);
  latch_open(&go);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(c.rc, 0);
  assert_int_equal(after, VMT__PROF_ARMED);
  assert_true(slot);
  vmt_thread_release(t);
  latch_destroy(&go);
  assert_int_equal(vmt_prof_clear(), 0);
}

/* The other party lets go of its claim exactly between the put-back's arming attempt (which
 * found the claim) and its second look at t's state: the hook at VMT__FAULT_PROF_ARM_CLAIMED
 * is that party. A put-back that stopped at the IDLE it then read left t unarmed (a TSan CI
 * run of test_include_while_another_party_claims, its helper late). */
static vmt_thread_t *_Atomic let_go_of;
static void let_go_once(void *arg) {
  (void)arg;
  vmt_thread_t *t = atomic_exchange(&let_go_of, NULL);
  if (t) atomic_store(&t->prof.state, VMT__PROF_IDLE);
}

static void test_include_when_the_claim_goes_between_two_looks(void **state) {
  (void)state;
  latch_t go;
  latch_init(&go);
  vmt_thread_t *t = start_excluded_and_claim(&go);
  atomic_store(&let_go_of, t);
  vmt__fault_set_hook(VMT__FAULT_PROF_ARM_CLAIMED, let_go_once, NULL);
  int rc = vmt_prof_set_thread_excluded(t, false);
  vmt__fault_disarm_all();
  uint32_t after = atomic_load(&t->prof.state);
  bool slot = atomic_load(&t->prof.slot) != NULL;
  bool hooked = atomic_load(&let_go_of) == NULL;
  /* t ends before anything is asserted: a failure leaves no live thread to the next test. */
  assert_int_equal(vmt_prof_stop(), 0);
  latch_open(&go);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(rc, 0);
  assert_true(hooked);
  assert_int_equal(after, VMT__PROF_ARMED);
  assert_true(slot);
  vmt_thread_release(t);
  latch_destroy(&go);
  assert_int_equal(vmt_prof_clear(), 0);
}

static void *short_burn(void *arg) {
  (void)arg;
  burn_cpu_ns(200 * 1000);
  return NULL;
}

static void test_no_timer_left_behind(void **state) {
  (void)state;
  if (timers_in_process() < 0) {
    print_message("/proc/self/timers is not there: nothing to count\n");
    skip();
  }
  vmt_prof_options_t o = {.flags = VMT_PROF_OPT_PERIOD, .period_ns = VMT_PROF_PERIOD_MIN_NS};
  assert_int_equal(vmt_prof_start(&o), 0);
  latch_t hold;
  latch_init(&hold);
  vmt_thread_t *waiting;
  assert_int_equal(vmt_thread_start(&waiting, wait_for_latch, &hold), 0);
  for (int i = 0; i < 500; i++) {
    vmt_thread_t *t;
    assert_int_equal(vmt_thread_start(&t, short_burn, NULL), 0);
    assert_int_equal(vmt_thread_join(t, NULL), 0);
    vmt_thread_release(t);
  }
  /* The waiting thread's timer is the only one. */
  while (atomic_load(&waiting->prof.state) != VMT__PROF_ARMED) usleep(100);
  assert_int_equal(timers_in_process(), 1);
  assert_int_equal(vmt_prof_stop(), 0);
  assert_int_equal(timers_in_process(), 0);
  latch_open(&hold);
  assert_int_equal(vmt_thread_join(waiting, NULL), 0);
  vmt_thread_release(waiting);
  latch_destroy(&hold);
  assert_int_equal(vmt_prof_clear(), 0);
}

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#define UNDER_TSAN 0
#endif

/* A thread the fork child attaches while its session runs: armed as it attaches, it waits
 * for the stop, then detaches. */
typedef struct {
  latch_t armed, stopped;
  int rc;
} child_attach_t;

static void *child_attached(void *arg) {
  child_attach_t *a = arg;
  vmt_thread_t *me;
  a->rc = vmt_thread_attach(NULL, &me);
  if (a->rc == 0)
    while (atomic_load(&me->prof.state) != VMT__PROF_ARMED) usleep(100);
  latch_open(&a->armed);
  latch_wait(&a->stopped);
  if (a->rc == 0) vmt_thread_detach();
  return NULL;
}

/* The fork child's checks; 0 or the number of the check that failed. */
static int vanished_arming_child(vmt_thread_t *armed, vmt_thread_t *busy) {
  /* A hang is a failure too: the parent sees SIGALRM. */
  alarm(20);
  /* A stale handle's exclusion: the thread is not here, nothing to wait for nor delete. */
  if (vmt_prof_set_thread_excluded(busy, true) != 0) return 20;
  if (vmt_prof_set_thread_excluded(armed, true) != 0) return 21;
  if (vmt_prof_set_thread_excluded(armed, false) != 0) return 22;
  /* Not under TSan, which cannot start a thread (the drainer) in the child of a threaded
   * process. */
  if (UNDER_TSAN) return 0;
  if (vmt_prof_start(NULL) != 0) return 23;
  /* A put-back while it runs: a vanished party's BUSY is nothing to wait for. */
  if (vmt_prof_set_thread_excluded(busy, false) != 0) return 31;
  /* A thread of the child's own, attached while the session runs: the stop disarms it. */
  child_attach_t a = {.rc = -1};
  latch_init(&a.armed);
  latch_init(&a.stopped);
  pthread_t pt;
  if (pthread_create(&pt, NULL, child_attached, &a) != 0) return 29;
  latch_wait(&a.armed);
  if (a.rc != 0) return 30;
  burn_cpu_ms(20);
  /* The child's two threads, so its only timers. */
  int timers = timers_in_process();
  if (timers >= 0 && timers != 2) return 24;
  if (vmt_prof_stop() != 0) return 25;
  if (timers_in_process() > 0) return 26;
  latch_open(&a.stopped);
  pthread_join(pt, NULL);
  vmt_prof_thread_stats_t ts;
  if (vmt_prof_get_thread_stats(vmt_thread_id(armed), &ts) != -ENOENT) return 27;
  if (vmt_prof_get_thread_stats(vmt_thread_id(busy), &ts) != -ENOENT) return 28;
  return 0;
}

static void test_fork_child_ignores_vanished_armings(void **state) {
  (void)state;
  vmt_thread_t *self;
  assert_int_equal(vmt_thread_attach(NULL, &self), 0);
  vmt_prof_options_t o = {.flags = VMT_PROF_OPT_PERIOD, .period_ns = VMT_PROF_PERIOD_MIN_NS};
  assert_int_equal(vmt_prof_start(&o), 0);
  latch_t hold;
  latch_init(&hold);
  vmt_thread_t *armed, *busy;
  assert_int_equal(vmt_thread_start(&armed, wait_for_latch, &hold), 0);
  assert_int_equal(vmt_thread_start(&busy, wait_for_latch, &hold), 0);
  while (atomic_load(&armed->prof.state) != VMT__PROF_ARMED) usleep(100);
  while (atomic_load(&busy->prof.state) != VMT__PROF_ARMED) usleep(100);
  /* The fork comes while a party is between its claim of `busy` and its timer call. */
  uint32_t expect = VMT__PROF_ARMED;
  assert_true(atomic_compare_exchange_strong(&busy->prof.state, &expect, VMT__PROF_BUSY));
  pid_t child = fork();
  if (child == 0) _exit(vanished_arming_child(armed, busy));
  atomic_store(&busy->prof.state, VMT__PROF_ARMED);   /* the "other party" is done */
  assert_true(child > 0);
  int status = 0;
  assert_int_equal(waitpid(child, &status, 0), child);
  latch_open(&hold);
  assert_int_equal(vmt_prof_stop(), 0);
  assert_int_equal(vmt_thread_join(armed, NULL), 0);
  assert_int_equal(vmt_thread_join(busy, NULL), 0);
  vmt_thread_release(armed);
  vmt_thread_release(busy);
  latch_destroy(&hold);
  assert_int_equal(vmt_prof_clear(), 0);
  vmt_thread_detach();
  if (WIFSIGNALED(status)) fail_msg("fork child killed by signal %d", WTERMSIG(status));
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) != 0) fail_msg("fork child failed check %d", WEXITSTATUS(status));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_timer_failure_arms_nothing, teardown),
      cmocka_unit_test_teardown(test_alloc_failure_at_start, teardown),
      cmocka_unit_test_teardown(test_exit_waits_for_arming_in_progress, teardown),
      cmocka_unit_test_teardown(test_include_while_another_party_claims, teardown),
      cmocka_unit_test_teardown(test_include_when_the_claim_goes_between_two_looks, teardown),
      cmocka_unit_test_teardown(test_no_timer_left_behind, teardown),
      cmocka_unit_test_teardown(test_fork_child_ignores_vanished_armings, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
