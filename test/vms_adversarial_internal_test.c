/*
 * test/vms_adversarial_internal_test.c: the VM services' limits that no test can reach through
 * the public API in its time budget: suspend counts near INT32_MAX (2^31 suspensions would
 * take minutes), set directly under the suspension lock. Internal: it writes the counts.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/vmservices/vmservices_impl.h"
#include "test/vms_util.h"

/* Sets t's count for reason (and the total to match the counts), keeping SUSPEND in step. */
static void set_count(vmt_thread_t *t, vmt_suspend_reason_t reason, int32_t count) {
  vmt_os_futex_lock(&vmt__suspend_lock);
  t->vms.suspend_counts[reason] = count;
  int64_t total = 0;
  for (int i = 0; i < VMT_SUSPEND_REASON_COUNT; i++) total += t->vms.suspend_counts[i];
  atomic_store(&t->vms.suspend_total, (int32_t)total);
  if (total > 0) atomic_fetch_or(&t->exec, VMT__EXEC_SUSPEND);
  vmt_os_futex_unlock(&vmt__suspend_lock);
}

/* vmthread/vmservices.h: vmt_thread_suspend_count is "t's total suspend count over all reasons
 * (>= 0)", and a suspend answers -EOVERFLOW rather than overflow a count. */
static void the_total_count_never_overflows(void **state) {
  (void)state;
  alarm(60);
  parker_t p;
  parker_start(&p);
  set_count(p.thread, VMT_SUSPEND_VM, INT32_MAX);
  assert_int_equal(vmt_thread_suspend_count(p.thread), INT32_MAX);
  /* Another reason's count is 0, but the total is at its limit. */
  assert_int_equal(vmt_thread_suspend(p.thread, VMT_SUSPEND_DEBUGGER, 0, NULL), -EOVERFLOW);
  assert_int_equal(vmt_thread_suspend_count(p.thread), INT32_MAX);
  assert_int_equal(vmt_thread_suspend_all(VMT_SUSPEND_USER, 0, NULL), -EOVERFLOW);
  assert_int_equal(vmt_thread_suspend_count(p.thread), INT32_MAX);
  assert_int_equal(p.thread->vms.suspend_counts[VMT_SUSPEND_DEBUGGER], 0);
  assert_int_equal(p.thread->vms.suspend_counts[VMT_SUSPEND_USER], 0);
  /* Back to one count, resumed by the public call: the thread goes. */
  set_count(p.thread, VMT_SUSPEND_VM, 1);
  assert_int_equal(vmt_thread_resume(p.thread, VMT_SUSPEND_VM), 0);
  assert_int_equal(vmt_thread_suspend_count(p.thread), 0);
  parker_stop(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_total_count_never_overflows),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
