/*
 * test/runtime_copies_linux_test.c: two copies of the runtime in one process, as when a JVM
 * loads libvmthread.so.0 for the JMX bridge and a guest library that linked libvmthread.a.
 * This test program is the static copy; it dlopens the shared library (RTLD_LOCAL, as
 * System.loadLibrary does) as the second one. Each copy must see the other once the other has
 * a thread (vmt_mx_get_other_runtime_count, with the other's file), and not before; the text
 * dump warns about it. Linux-specific: the copies find each other through dl_iterate_phdr.
 */
#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "mx_util.h"

typedef int32_t (*count_fn)(char *path, size_t len);
typedef int (*attach_fn)(const vmt_thread_options_t *options, vmt_thread_t **out);
typedef int (*detach_fn)(void);

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

static void two_copies_see_each_other_once_in_use(void **state) {
  (void)state;
  char path[4096] = "x";
  assert_int_equal(vmt_mx_get_other_runtime_count(NULL, 1), -EINVAL);
  assert_int_equal(vmt_mx_get_other_runtime_count(NULL, 0), 0);
  /* Alone: none (and this fills the port's cache, which the dlopen below must invalidate). */
  assert_int_equal(vmt_mx_get_other_runtime_count(path, sizeof(path)), 0);
  assert_string_equal(path, "");

  /* Bazel puts //:libvmthread.so into the runfiles, where the test runs. */
  void *other = dlopen("./libvmthread.so", RTLD_NOW | RTLD_LOCAL);
  if (other == NULL) fail_msg("dlopen ./libvmthread.so: %s", dlerror());
  count_fn other_count = (count_fn)dlsym(other, "vmt_mx_get_other_runtime_count");
  attach_fn other_attach = (attach_fn)dlsym(other, "vmt_thread_attach");
  detach_fn other_detach = (detach_fn)dlsym(other, "vmt_thread_detach");
  assert_non_null(other_count);
  assert_non_null(other_attach);
  assert_non_null(other_detach);
  assert_true((void *)other_count != (void *)vmt_mx_get_other_runtime_count);

  /* Loaded but without threads: not in use. */
  assert_int_equal(vmt_mx_get_other_runtime_count(path, sizeof(path)), 0);
  assert_int_equal(other_count(path, sizeof(path)), 0);

  /* The shared copy gets a thread: the static one (this program) sees it, and its file. */
  vmt_thread_t *in_other;
  assert_int_equal(other_attach(NULL, &in_other), 0);
  assert_int_equal(vmt_mx_get_other_runtime_count(path, sizeof(path)), 1);
  assert_true(ends_with(path, "libvmthread.so"));
  assert_int_equal(vmt_mx_get_other_runtime_count(path, 4), 1); /* cut, still terminated */
  assert_int_equal(strlen(path), 3);
  assert_int_equal(other_count(path, sizeof(path)), 0); /* this copy has no thread yet */

  /* This copy gets one too: each sees the other; the other sees the main program. */
  vmt_thread_t *self;
  assert_int_equal(vmt_thread_attach(NULL, &self), 0);
  assert_int_equal(other_count(path, sizeof(path)), 1);
  assert_string_equal(path, "");
  char *dump;
  size_t len;
  assert_int_equal(vmt_mx_thread_dump_to_string(&dump, &len), 0);
  assert_non_null(strstr(dump, "WARNING: 1 other copy of vmthread in this process has threads"));
  assert_non_null(strstr(dump, "libvmthread.so), not shown here"));
  free(dump);

  /* A copy that had threads stays a second registry: the count does not go back. */
  assert_int_equal(vmt_thread_detach(), 0);
  assert_int_equal(other_detach(), 0);
  assert_int_equal(vmt_mx_get_other_runtime_count(NULL, 0), 1);
  /* The shared copy stays loaded: its thread-specific-data destructor is registered. */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(two_copies_see_each_other_once_in_use),
  };
  return cmocka_run_group_tests_name("runtime_copies_linux", tests, NULL, NULL);
}
