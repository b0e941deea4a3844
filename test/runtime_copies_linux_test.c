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
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* A third copy, loaded and unloaded again and again while this copy looks for copies. A copy
 * found by one search may be unloaded before the next, or during one: the search must never
 * read the marker or the file name of an object that is gone. It read them after
 * dl_iterate_phdr had returned, and this test crashed in vmt_os_other_copies_in_use (SIGSEGV)
 * within the first hundred unloads. The copy is a file of its own (a second name for the
 * library the first test keeps loaded would only bump that one's reference count). */
typedef struct churn {
  const char *path;
  int cycles;
  _Atomic bool done;
  const char *error;
} churn_t;

static void *load_and_unload(void *arg) {
  churn_t *c = arg;
  for (int i = 0; i < c->cycles; i++) {
    void *h = dlopen(c->path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
      c->error = "dlopen of the copy failed";
      break;
    }
    if (dlclose(h) != 0) {
      c->error = "dlclose of the copy failed";
      break;
    }
  }
  atomic_store(&c->done, true);
  return NULL;
}

static void copy_file(const char *from, const char *to) {
  int in = open(from, O_RDONLY | O_CLOEXEC);
  assert_true(in >= 0);
  struct stat st;
  assert_int_equal(fstat(in, &st), 0);
  int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
  assert_true(out >= 0);
  off_t off = 0;
  while (off < st.st_size) assert_true(sendfile(out, in, &off, (size_t)(st.st_size - off)) > 0);
  close(in);
  close(out);
}

static void a_copy_unloaded_during_the_search(void **state) {
  (void)state;
  char dir[] = "/tmp/vmt-copiesXXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[sizeof(dir) + 32];
  snprintf(path, sizeof(path), "%s/libvmthread-copy.so", dir);
  copy_file("./libvmthread.so", path);
  churn_t c = {.path = path, .cycles = 2000};
  pthread_t loader;
  assert_int_equal(pthread_create(&loader, NULL, load_and_unload, &c), 0);
  char found[4096];
  long searches = 0;
  while (!atomic_load(&c.done)) {
    int32_t n = vmt_mx_get_other_runtime_count(found, sizeof(found));
    assert_true(n >= 0);
    searches++;
  }
  assert_int_equal(pthread_join(loader, NULL), 0);
  if (c.error) fail_msg("%s: %s", c.error, dlerror());
  print_message("%ld searches during %d loads and unloads\n", searches, c.cycles);
  unlink(path);
  rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(two_copies_see_each_other_once_in_use),
      cmocka_unit_test(a_copy_unloaded_during_the_search),
  };
  return cmocka_run_group_tests_name("runtime_copies_linux", tests, NULL, NULL);
}
