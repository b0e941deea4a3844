/*
 * test/os_names_linux_internal_test.c: how a thread's full name becomes the kernel's 15-byte
 * name (cut at a UTF-8 boundary) and how it is set, including the failure seam. Internal API.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/fault.h"
#include "runtime/os.h"

static int teardown(void **state) {
  (void)state;
  vmt__fault_disarm_all();
  return 0;
}

static void check_cut(const char *full, const char *expected) {
  char os_name[16];
  memset(os_name, 'X', sizeof(os_name));
  vmt_os_native_name(full, os_name);
  assert_string_equal(os_name, expected);
  assert_true(strlen(os_name) <= 15);
}

static void short_names_are_kept(void **state) {
  (void)state;
  check_cut("", "");
  check_cut("gc", "gc");
  check_cut("exactly-15-byte", "exactly-15-byte");
  check_cut(NULL, "");
}

static void long_ascii_names_are_cut_at_15_bytes(void **state) {
  (void)state;
  check_cut("0123456789abcdefghij", "0123456789abcde");
  check_cut("0123456789abcdef", "0123456789abcde");
}

static void cut_never_splits_a_utf8_character(void **state) {
  (void)state;
  /* 2-byte characters: 8 x "ä" = 16 bytes; the 8th would straddle byte 15. */
  check_cut("\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4",
            "\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4");
  /* 3-byte characters: 5 x "日" = 15 bytes exactly, then one more. */
  check_cut("\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5",
            "\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5");
  /* A 3-byte character at bytes 12..14 fits; at 13 (2 bytes fit) or 14 (1 fits) it goes. */
  check_cut("worker-pool-\xe6\x97\xa5\xe6\x97\xa5", "worker-pool-\xe6\x97\xa5");
  check_cut("worker-pool-1\xe6\x97\xa5", "worker-pool-1");
  check_cut("worker-pool-12\xe6\x97\xa5", "worker-pool-12");
  /* A 4-byte character (emoji) straddling the cut at each offset. */
  check_cut("0123456789abc\xf0\x9f\x98\x80", "0123456789abc");
  check_cut("0123456789ab\xf0\x9f\x98\x80", "0123456789ab");
  check_cut("0123456789a\xf0\x9f\x98\x80x", "0123456789a\xf0\x9f\x98\x80");
  /* Not UTF-8 (a run of continuation bytes): the plain byte cut stands, never more. */
  check_cut("0123456789\x80\x80\x80\x80\x80\x80\x80", "0123456789\x80\x80\x80\x80\x80");
}

static void set_native_name_reaches_the_kernel(void **state) {
  (void)state;
  char got[16];
  assert_int_equal(vmt_os_set_native_name("vmt-os-test"), 0);
  assert_int_equal(pthread_getname_np(pthread_self(), got, sizeof(got)), 0);
  assert_string_equal(got, "vmt-os-test");
  assert_int_equal(vmt_os_set_native_name("0123456789abcdef"), -ERANGE);
  assert_int_equal(vmt_os_set_native_name(NULL), -EINVAL);
  assert_int_equal(pthread_getname_np(pthread_self(), got, sizeof(got)), 0);
  assert_string_equal(got, "vmt-os-test");
}

static void setname_fault_leaves_the_old_name(void **state) {
  (void)state;
  char got[16];
  assert_int_equal(vmt_os_set_native_name("before"), 0);
  vmt__fault_arm(VMT__FAULT_SETNAME, 0, 1, EPERM);
  assert_int_equal(vmt_os_set_native_name("after"), -EPERM);
  assert_int_equal(pthread_getname_np(pthread_self(), got, sizeof(got)), 0);
  assert_string_equal(got, "before");
  assert_int_equal(vmt_os_set_native_name("after"), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(short_names_are_kept, teardown),
      cmocka_unit_test_teardown(long_ascii_names_are_cut_at_15_bytes, teardown),
      cmocka_unit_test_teardown(cut_never_splits_a_utf8_character, teardown),
      cmocka_unit_test_teardown(set_native_name_reaches_the_kernel, teardown),
      cmocka_unit_test_teardown(setname_fault_leaves_the_old_name, teardown),
  };
  return cmocka_run_group_tests_name("os_names_linux_internal", tests, NULL, NULL);
}
