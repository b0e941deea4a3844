/*
 * test/vms_fork_linux_test.c: fork() and the VM services (the rule in
 * runtime/vmservices/vmservices.h, "Fork"). A child forked while another thread holds a
 * safepoint is sane: no safepoint holds there, its thread enters and leaves managed code,
 * begins and ends safepoints of its own. A child forked by the coordinator itself still holds
 * the safepoint and can end it. A child of a suspended thread is not suspended. A synchronous
 * handshake another thread was waiting for is not run in the child (its requester is not
 * there), an asynchronous one queued for the forker is (it was the forker's own work, copied
 * with memory), and neither disturbs the parent, which runs each once.
 *
 * The child makes no allocating call and starts no thread, so the checks hold under the
 * sanitizers too (test/fork_linux_test.c says why). It reports the first failed check as its
 * exit code; a hang is a SIGALRM exit naming the check.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "test/vms_util.h"

static _Atomic int *child_stage;

static void on_alarm(int sig) {
  (void)sig;
  _exit(100 + atomic_load(child_stage) % 100);
}

#define CHECK(code, cond)                                                  \
  do {                                                                     \
    atomic_store(child_stage, code);                                       \
    if (!(cond)) {                                                         \
      fprintf(stderr, "fork child check %d failed: %s\n", code, #cond);    \
      _exit(code);                                                         \
    }                                                                      \
  } while (0)

static void child_prologue(void) {
  signal(SIGALRM, on_alarm);
  alarm(30);
}

/* Forks; in the child runs fn and exits 0 (or the failed check's code); in the parent waits
 * and checks the child's verdict. */
static void fork_and_check(void (*fn)(void *), void *arg) {
  atomic_store(child_stage, 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    child_prologue();
    fn(arg);
    _exit(0);
  }
  int status;
  for (int waited = 0;; waited++) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (waited > 60000) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      fail_msg("fork child hung at check %d", atomic_load(child_stage));
    }
    mu_pause_1ms();
  }
  if (!WIFEXITED(status)) fail_msg("fork child died of signal %d", WTERMSIG(status));
  if (WEXITSTATUS(status) >= 100)
    fail_msg("fork child hung at check %d", WEXITSTATUS(status) - 100);
  if (WEXITSTATUS(status) != 0) fail_msg("fork child failed check %d", WEXITSTATUS(status));
}

static void noop(vmt_thread_t *t, void *arg) {
  (void)t;
  atomic_fetch_add((_Atomic int *)arg, 1);
}

/* ---- Another thread holds a safepoint ---------------------------------------------------- */
typedef struct holder {
  _Atomic int phase;   /* 1 holding, 2 asked to end, 3 ended */
  _Atomic int rc;
} holder_t;

static void *hold_safepoint(void *arg) {
  holder_t *h = arg;
  atomic_store(&h->rc, vmt_safepoint_begin(10 * VMS_SECOND, NULL));
  atomic_store(&h->phase, 1);
  while (atomic_load(&h->phase) != 2) mu_pause_1ms();
  atomic_store(&h->rc, vmt_safepoint_end(NULL));
  atomic_store(&h->phase, 3);
  return NULL;
}

static void child_of_a_bystander(void *arg) {
  (void)arg;
  vmt_thread_t *self = vmt_thread_current();
  CHECK(10, self != NULL);
  CHECK(11, !vmt_safepoint_in_progress());
  CHECK(12, vmt_exec_enter(VMT_EXEC_MANAGED) == VMT_EXEC_NATIVE);
  vmt_poll(self);
  CHECK(13, vmt_exec_enter(VMT_EXEC_NATIVE) == VMT_EXEC_MANAGED);
  vmt_safepoint_stats_t st;
  CHECK(14, vmt_safepoint_begin(VMS_SECOND, &st) == 0);
  CHECK(15, st.running == 0);   /* the parent's threads are not here to stop */
  CHECK(16, vmt_safepoint_end(NULL) == 0);
  _Atomic int calls = 0;
  CHECK(17, vmt_handshake_run(self, noop, &calls, VMS_SECOND, NULL) == 0 && calls == 1);
  CHECK(18, vmt_thread_suspend_count(self) == 0);
}

static void fork_while_another_thread_holds_a_safepoint(void **state) {
  (void)state;
  mutator_t m;
  mutator_start(&m, true);
  holder_t h = {.rc = 1};
  vmt_thread_t *ht = mu_start(hold_safepoint, &h);
  MU_POLL_UNTIL(atomic_load(&h.phase) == 1, "the safepoint");
  assert_int_equal(atomic_load(&h.rc), 0);
  for (int k = 0; k < 5; k++) fork_and_check(child_of_a_bystander, NULL);
  /* The parent's safepoint is untouched. */
  assert_true(vmt_safepoint_in_progress());
  assert_true(mutator_stalled(&m));
  atomic_store(&h.phase, 2);
  mu_join(ht);
  assert_int_equal(atomic_load(&h.rc), 0);
  assert_false(vmt_safepoint_in_progress());
  mutator_stop(&m);
}

/* ---- The coordinator forks ---------------------------------------------------------------- */
static void child_of_the_coordinator(void *arg) {
  (void)arg;
  CHECK(20, vmt_safepoint_in_progress());
  CHECK(21, vmt_safepoint_begin(0, NULL) == -EDEADLK);
  CHECK(22, vmt_safepoint_end(NULL) == 0);
  CHECK(23, !vmt_safepoint_in_progress());
  CHECK(24, vmt_exec_enter(VMT_EXEC_MANAGED) == VMT_EXEC_NATIVE);
  CHECK(25, vmt_exec_enter(VMT_EXEC_NATIVE) == VMT_EXEC_MANAGED);
}

static void fork_by_the_coordinator(void **state) {
  (void)state;
  mutator_t m;
  mutator_start(&m, true);
  assert_int_equal(vmt_safepoint_begin(10 * VMS_SECOND, NULL), 0);
  fork_and_check(child_of_the_coordinator, NULL);
  assert_true(vmt_safepoint_in_progress());
  assert_int_equal(vmt_safepoint_end(NULL), 0);
  mutator_stop(&m);
}

/* ---- A suspended forker ------------------------------------------------------------------- */
static void child_of_a_suspended_thread(void *arg) {
  (void)arg;
  CHECK(30, vmt_thread_suspend_count(vmt_thread_current()) == 0);
  CHECK(31, vmt_exec_enter(VMT_EXEC_MANAGED) == VMT_EXEC_NATIVE);
  CHECK(32, vmt_exec_enter(VMT_EXEC_NATIVE) == VMT_EXEC_MANAGED);
}

static void fork_by_a_suspended_thread(void **state) {
  (void)state;
  vmt_thread_t *self = vmt_thread_current();
  assert_int_equal(vmt_thread_suspend(self, VMT_SUSPEND_DEBUGGER, 0, NULL), 0);
  fork_and_check(child_of_a_suspended_thread, NULL);
  assert_int_equal(vmt_thread_suspend_count(self), 1);
  assert_int_equal(vmt_thread_resume(self, VMT_SUSPEND_DEBUGGER), 0);
}

/* ---- Handshakes pending on the forker ----------------------------------------------------- */
typedef struct pending {
  vmt_thread_t *main_thread;
  _Atomic int sync_calls, async_calls;
  _Atomic int rc;
} pending_t;

static void *request_of_main(void *arg) {
  pending_t *p = arg;
  atomic_store(&p->rc, vmt_handshake_run(p->main_thread, noop, &p->sync_calls, 10 * VMS_SECOND,
                                         NULL));
  return NULL;
}

static void child_with_pending_operations(void *arg) {
  pending_t *p = arg;
  vmt_thread_t *self = vmt_thread_current();
  vmt_poll(self);   /* still in managed code: the poll runs what the child kept */
  CHECK(40, atomic_load(&p->sync_calls) == 0);
  CHECK(41, atomic_load(&p->async_calls) == 1);
  CHECK(42, !vmt_poll_armed(self));
  CHECK(43, vmt_exec_enter(VMT_EXEC_NATIVE) == VMT_EXEC_MANAGED);
}

static void fork_with_operations_pending(void **state) {
  (void)state;
  vmt_thread_t *self = vmt_thread_current();
  pending_t p = {.main_thread = self, .rc = 1};
  vmt_exec_enter(VMT_EXEC_MANAGED);
  vmt_thread_t *r = mu_start(request_of_main, &p);
  /* In managed code without a poll: the requester's operation gets queued, not run. */
  MU_POLL_UNTIL(vmt_poll_armed(self), "the requester's operation");
  assert_int_equal(vmt_handshake_post(self, noop, &p.async_calls), 0);
  fork_and_check(child_with_pending_operations, &p);
  assert_int_equal(atomic_load(&p.sync_calls), 0);
  assert_int_equal(atomic_load(&p.async_calls), 0);
  vmt_poll(self);
  vmt_exec_enter(VMT_EXEC_NATIVE);
  mu_join(r);
  assert_int_equal(atomic_load(&p.rc), 0);
  assert_int_equal(atomic_load(&p.sync_calls), 1);
  assert_int_equal(atomic_load(&p.async_calls), 1);
}

static int setup(void **state) {
  child_stage = mmap(NULL, sizeof(*child_stage), PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (child_stage == MAP_FAILED) return -1;
  return mu_attach_main(state);
}

static int teardown(void **state) {
  munmap((void *)child_stage, sizeof(*child_stage));
  return mu_detach_main(state);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fork_while_another_thread_holds_a_safepoint),
      cmocka_unit_test(fork_by_the_coordinator),
      cmocka_unit_test(fork_by_a_suspended_thread),
      cmocka_unit_test(fork_with_operations_pending),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
