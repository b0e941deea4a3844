/*
 * test/install_program.c: a host VM in miniature, built by test/install_test.sh with plain
 * `cc $(pkg-config --cflags --libs vmthread)` against an installed copy of the library (no
 * Bazel flags, no internal headers). It attaches its main thread, starts one thread with a
 * category, parks it on a monitor, reads it back through the management API, forks (the fork
 * handlers are rows in a linker section: they must survive the archive's and the shared
 * library's links), then lets it go and joins it. Prints one "ok"/"not ok" line per check and
 * exits 1 if any failed.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vmthread.h>

static int failures;

static void check(int ok, const char *what) {
  printf("%s - %s\n", ok ? "ok" : "not ok", what);
  if (!ok) failures++;
}

typedef struct worker_ctx {
  vmt_monitor_t *mon;
  int started;   /* guarded by mon */
  int released;  /* guarded by mon */
} worker_ctx_t;

static void *worker(void *arg) {
  worker_ctx_t *ctx = arg;
  vmt_monitor_enter(ctx->mon);
  ctx->started = 1;
  vmt_monitor_notify_all(ctx->mon);
  while (!ctx->released) vmt_monitor_wait(ctx->mon, 0);
  vmt_monitor_exit(ctx->mon);
  return ctx;
}

static int contains(const int64_t *ids, size_t n, int64_t id) {
  for (size_t i = 0; i < n; i++)
    if (ids[i] == id) return 1;
  return 0;
}

int main(void) {
  char version[32];
  snprintf(version, sizeof version, "%d.%d.%d", VMTHREAD_VERSION_MAJOR, VMTHREAD_VERSION_MINOR,
           VMTHREAD_VERSION_PATCH);
  check(strcmp(vmt_version(), version) == 0, "the loaded library has the headers' version");

  vmt_thread_options_t main_opts = {
      .flags = VMT_THREAD_OPT_NAME | VMT_THREAD_OPT_CATEGORY,
      .name = "main",
      .category = "vm",
  };
  vmt_thread_t *self = NULL;
  check(vmt_thread_attach(&main_opts, &self) == 0 && self != NULL, "attach the main thread");
  check(vmt_thread_current() == self, "vmt_thread_current() is the attached record");

  int64_t started_before = vmt_mx_get_total_started_thread_count();
  int32_t live_before = vmt_mx_get_thread_count();

  worker_ctx_t ctx = {0};
  check(vmt_monitor_create(&ctx.mon, "install-test-lock") == 0, "create a monitor");
  vmt_thread_options_t opts = {
      .flags = VMT_THREAD_OPT_NAME | VMT_THREAD_OPT_CATEGORY,
      .name = "gc-worker-0",
      .category = "gc",
  };
  vmt_thread_t *t = NULL;
  check(vmt_thread_start_ex(&t, &opts, worker, &ctx) == 0 && t != NULL, "start a gc thread");
  if (t == NULL) return 1;

  vmt_monitor_enter(ctx.mon);
  while (!ctx.started) vmt_monitor_wait(ctx.mon, 0);
  vmt_monitor_exit(ctx.mon);

  int64_t id = vmt_thread_id(t);
  check(id > 0, "the thread has a Java-style id");
  check(strcmp(vmt_thread_category(t), "gc") == 0, "the thread has its category");
  check(vmt_mx_get_total_started_thread_count() == started_before + 1,
        "management: total started grew by one");
  check(vmt_mx_get_thread_count() == live_before + 1, "management: live count grew by one");

  int64_t *ids = NULL;
  size_t n = 0;
  check(vmt_mx_get_all_thread_ids(&ids, &n) == 0 && contains(ids, n, id) &&
            contains(ids, n, vmt_thread_id(self)),
        "management: all thread ids list the worker and the main thread");
  vmt_mx_ids_free(ids);

  vmt_thread_info_t *info = NULL;
  check(vmt_mx_get_thread_info(id, 0, &info) == 0 && info != NULL && info->id == id &&
            strcmp(info->name, "gc-worker-0") == 0 && strcmp(info->category, "gc") == 0,
        "management: thread info names the worker and its category");
  vmt_mx_thread_info_free(info);

  int64_t cpu = -2;
  check(vmt_mx_get_thread_cpu_time(id, &cpu) == 0 && cpu >= 0,
        "management: the live worker has a CPU time");
  check(vmt_mx_get_thread_cpu_time(0, &cpu) == -EINVAL, "management: id 0 is -EINVAL");

  /* The child has only the forking thread, re-bound to its new tid; nothing it calls here
   * allocates (a sanitizer's allocator is not reset at fork). */
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0)
    _exit(vmt_thread_tid(self) == getpid() && vmt_mx_get_thread_count() == live_before &&
                  vmt_thread_state(t) == VMT_THREAD_TERMINATED
              ? 0
              : 1);
  int status = 0;
  check(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
            WEXITSTATUS(status) == 0,
        "fork: the child counts only the forking thread, under its new tid");

  vmt_monitor_enter(ctx.mon);
  ctx.released = 1;
  vmt_monitor_notify_all(ctx.mon);
  vmt_monitor_exit(ctx.mon);
  void *result = NULL;
  check(vmt_thread_join(t, &result) == 0 && result == &ctx, "join returns the body's result");
  check(vmt_thread_state(t) == VMT_THREAD_TERMINATED, "the joined thread is TERMINATED");
  check(vmt_mx_get_thread_count() == live_before, "management: live count is back");
  check(vmt_thread_release(t) == 0, "release the creator's reference");
  check(vmt_monitor_destroy(ctx.mon) == 0, "destroy the monitor");
  check(vmt_thread_detach() == 0, "detach the main thread");
  check(vmt_thread_current() == NULL, "no current thread after detach");

  printf("install_program: %s\n", failures ? "FAILED" : "all checks passed");
  return failures ? 1 : 0;
}
