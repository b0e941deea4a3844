/*
 * test/regression_linux_internal_test.c: regression tests for bugs the reliability work
 * (docs/reliability.md) found in other modules, one test per bug, named after what broke.
 * Internal: each reaches the module where the bug was.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/os.h"

/*
 * Found by the lifecycle storm (1 run in 2): a started thread read its own CPU time as -1.
 * The parent and the child both bind the record (vmt_os_thread_bind / bind_self); when the
 * parent had claimed it but not yet stored the tid, the child's bind_self returned at once with
 * the tid unpublished, and the child, not recognised as the caller, was read as a thread that
 * has not started. bind_self must return only once the tid is published.
 */
typedef struct bind_probe {
  vmt_os_thread_t *ot;
  _Atomic int32_t tid_after_bind;
} bind_probe_t;

static void *bind_self_and_look(void *arg) {
  bind_probe_t *p = arg;
  vmt_os_thread_bind_self(p->ot);
  atomic_store(&p->tid_after_bind, atomic_load(&p->ot->tid));
  return NULL;
}

static void bind_self_returns_only_once_the_tid_is_published(void **state) {
  (void)state;
  vmt_os_thread_t ot;
  memset(&ot, 0, sizeof(ot));
  /* The other binder (the parent) has claimed the record and is about to publish. */
  atomic_store(&ot.tid, -1);
  bind_probe_t p = {.ot = &ot, .tid_after_bind = 0};
  pthread_t child;
  assert_int_equal(pthread_create(&child, NULL, bind_self_and_look, &p), 0);
  usleep(20 * 1000);   /* give a wrong bind_self every chance to return early */
  /* The claimant publishes (what publish() does: exchange in the tid, wake waiters). */
  int32_t before = atomic_exchange(&ot.tid, 4242);
  if (before != -1) vmt_os_futex_wake((_Atomic uint32_t *)&ot.tid, INT32_MAX);
  pthread_join(child, NULL);
  assert_int_equal(atomic_load(&p.tid_after_bind), 4242);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(bind_self_returns_only_once_the_tid_is_published),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
