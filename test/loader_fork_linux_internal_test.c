/*
 * test/loader_fork_linux_internal_test.c: a fork while one of the runtime's threads is inside
 * the loader's object list (dl_iterate_phdr) leaves the child able to use it (os_linux/loader.c).
 *
 * glibc does not re-initialise its dl_load_write_lock in a fork child, so a child forked while
 * a runtime thread was in dl_iterate_phdr hung in its own next dl_iterate_phdr (a SIGQUIT dump
 * in 2 of 600 children of test/fork_calls_linux_test.c's profiler output row). Here a thread refreshes the
 * unwinder's table of loaded objects and is held inside the loader's callback (the
 * VMT__FAULT_LOADER_HELD hook) while the main thread forks: the child must get through a
 * dl_iterate_phdr and the dump header's count of other runtime copies
 * (vmt_mx_get_other_runtime_count, a dl_iterate_phdr itself), and exit.
 * Also: a fork from inside a section of the forking thread itself does not wait for itself,
 * and a section that cannot wait is refused inside another.
 */
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "os_linux/os_impl.h"
#include "runtime/fault.h"
#include "runtime/os.h"
#include "vmthread/management.h"

static _Atomic int held;          /* the refreshing thread is inside the loader's callback */
static _Atomic int hold_ms = 300; /* how long the hook keeps it there */

static void hold_inside(void *arg) {
  (void)arg;
  atomic_store(&held, 1);
  struct timespec ts = {0, (long)atomic_load(&hold_ms) * 1000 * 1000};
  nanosleep(&ts, NULL);
}

static _Atomic int refreshed;

/* Detached, its end told by `refreshed`: under ThreadSanitizer a fork child sees the parent's
 * other threads as ended, and one that nobody joins there would be reported as leaked. */
static void *refresh(void *arg) {
  (void)arg;
  (void)vmt__cfi_refresh();
  atomic_store(&refreshed, 1);
  return NULL;
}

static int count_object(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)info, (void)size;
  ++*(int *)arg;
  return 0;
}

/* Waits up to 10 s for pid; true if it exited with status 0. A child that hangs is killed. */
static bool child_ok(pid_t pid) {
  for (int i = 0; i < 1000; i++) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return false;
}

static void child_uses_the_loader(void) {
  alarm(5);
  int objects = 0;
  dl_iterate_phdr(count_object, &objects);
  if (objects <= 0) _exit(2);
  char other[64];
  if (vmt_mx_get_other_runtime_count(other, sizeof(other)) < 0) _exit(3);
  _exit(0);
}

static void test_fork_while_a_thread_is_inside_the_loader(void **state) {
  (void)state;
#if !VMT__CFI_UNWINDER
  skip();
#endif
  assert_int_equal(vmt__cfi_prepare(), 0);
  for (int round = 0; round < 3; round++) {
    atomic_store(&held, 0);
    atomic_store(&refreshed, 0);
    vmt__fault_set_hook(VMT__FAULT_LOADER_HELD, hold_inside, NULL);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    assert_int_equal(pthread_create(&t, &attr, refresh, NULL), 0);
    pthread_attr_destroy(&attr);
    while (!atomic_load(&held)) sched_yield();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) child_uses_the_loader();
    while (!atomic_load(&refreshed)) sched_yield();
    vmt__fault_set_hook(VMT__FAULT_LOADER_HELD, NULL, NULL);
    assert_true(child_ok(pid));
  }
}

/* The forking thread inside a section of its own (a fork from a handler that interrupted
 * one): prepare does not wait for it, and the child has exactly that section open. */
static void test_fork_from_inside_a_section(void **state) {
  (void)state;
  assert_true(vmt_os_loader_enter(true));
  assert_true(vmt_os_loader_enter(true));    /* nested */
  /* A walk that cannot wait refuses inside a section: a handler there might walk into the
   * loader's lock its own thread holds. */
  assert_false(vmt_os_loader_enter(false));
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    alarm(5);
    vmt_os_loader_exit();
    vmt_os_loader_exit();
    if (!vmt_os_loader_enter(false)) _exit(4);
    vmt_os_loader_exit();
    int objects = 0;
    dl_iterate_phdr(count_object, &objects);
    _exit(objects > 0 ? 0 : 2);
  }
  vmt_os_loader_exit();
  vmt_os_loader_exit();
  assert_true(child_ok(pid));
  assert_false(vmt_os__loader_fork_pending());
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fork_while_a_thread_is_inside_the_loader),
      cmocka_unit_test(test_fork_from_inside_a_section),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
