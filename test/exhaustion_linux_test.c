/*
 * test/exhaustion_linux_test.c: starting threads until the OS refuses, in a child process so
 * the machine stays safe, three ways:
 *
 *  - pid_max: the child is pid 1 of a new PID namespace whose pid_max is 400 (per-namespace
 *    pid_max, Linux 6.14; needs CAP_SYS_ADMIN). Every thread takes a pid, so clone fails with
 *    EAGAIN after ~395 threads, whatever the user.
 *  - RLIMIT_NPROC: root ignores it (the kernel skips the check with CAP_SYS_RESOURCE or
 *    CAP_SYS_ADMIN, kernel/fork.c), so the child sets it to 64 and then becomes `nobody`.
 *  - RLIMIT_AS: address space for 16 MiB stacks runs out (mmap ENOMEM, which glibc's
 *    pthread_create reports as EAGAIN; a record allocation that fails first gives ENOMEM).
 *    Not under ASan/TSan: their shadow memory reserves terabytes of address space. With
 *    jemalloc's thread cache off (MALLOC_CONF=tcache:false): jemalloc itself crashes otherwise.
 *
 * And a fourth resource, pthread keys: the child takes all of glibc's 1024 before its first
 * call into the runtime, which must neither abort nor need one (runtime/os.h, "Thread end").
 *
 * At the limit: the failed start returns -EAGAIN or -ENOMEM, leaves *out NULL and changes no
 * counter; attaching the calling thread, monitors, the management API and a dump still work;
 * the SIGQUIT dump (which needs a thread) fails cleanly; once the threads end, starting works
 * again and the counts are back where they were. Each role runs in a fresh image of this
 * binary (fork, then exec), which then lowers its own limit. Public API only.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "test/reliability.h"
#include "vmthread.h"

enum { MAX_THREADS = 4000 };
enum { ROLE_OK = 0, ROLE_SETUP_FAILED = 3, ROLE_NEVER_REFUSED = 4, ROLE_NO_OTHER_USER = 5 };
/* Exit codes 10.. name the check that failed (CHECK). */

static void *park_body(void *arg) {
  (void)arg;
  while (vmt_park(0) != 0) {
  }
  return NULL;
}

static vmt_thread_t *threads[MAX_THREADS];

#define CHECK(code, cond)                                                                    \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      fprintf(stderr, "exhaustion check %d failed: %s\n", code, #cond);                     \
      return code;                                                                           \
    }                                                                                        \
  } while (0)

/* Runs in the child, after its limit is set. Exit code: ROLE_OK or the failed check. */
static int exhaust(const char *how, size_t stack_size) {
  vmt_thread_options_t o = {.flags = stack_size ? VMT_THREAD_OPT_STACK_SIZE : 0u,
                            .stack_size = stack_size};
  int32_t live0 = vmt_mx_get_thread_count();
  int64_t total0 = vmt_mx_get_total_started_thread_count();
  int n = 0, rc = 0;
  for (; n < MAX_THREADS; n++) {
    vmt_thread_t *t = (vmt_thread_t *)1;
    rc = vmt_thread_start_ex(&t, &o, park_body, NULL);
    if (rc != 0) {
      CHECK(10, t == NULL);
      break;
    }
    threads[n] = t;
  }
  if (n == MAX_THREADS) return ROLE_NEVER_REFUSED;
  CHECK(11, rc == -EAGAIN || rc == -ENOMEM);
  CHECK(12, vmt_mx_get_thread_count() == live0 + n);
  CHECK(13, vmt_mx_get_total_started_thread_count() == total0 + n);

  /* Still refused, still nothing counted. */
  int refusals = 1;
  for (int k = 0; k < 3; k++) {
    vmt_thread_t *t = NULL;
    int again = vmt_thread_start(&t, park_body, NULL);
    if (again == 0) {   /* a slot came free (a sanitizer's helper thread ended): use it */
      threads[n++] = t;
      continue;
    }
    CHECK(14, again == -EAGAIN || again == -ENOMEM);
    refusals++;
  }
  CHECK(15, vmt_mx_get_thread_count() == live0 + n);
  CHECK(16, vmt_mx_get_total_started_thread_count() == total0 + n);

  /* What needs no new thread keeps working (or reports ENOMEM when memory is the limit). */
  vmt_thread_t *me = NULL;
  int arc = vmt_thread_attach(NULL, &me);
  CHECK(17, arc == 0 || arc == -ENOMEM);
  vmt_monitor_t *m = NULL;
  int mrc = vmt_monitor_create(&m, "at-the-limit");
  CHECK(18, mrc == 0 || mrc == -ENOMEM);
  if (mrc == 0) {
    CHECK(19, vmt_monitor_enter(m) == 0 && vmt_monitor_exit(m) == 0 && vmt_monitor_destroy(m) == 0);
  }
  char *dump = NULL;
  size_t len = 0;
  int drc = vmt_mx_thread_dump_to_string(&dump, &len);
  CHECK(20, drc == 0 || drc == -ENOMEM);
  if (drc == 0) CHECK(21, len > 0 && strstr(dump, "vmt-thread-") != NULL);
  free(dump);
  int64_t *ids = NULL;
  size_t count = 0;
  int irc = vmt_mx_get_all_thread_ids(&ids, &count);
  CHECK(22, irc == 0 || irc == -ENOMEM);
  if (irc == 0) CHECK(23, count == (size_t)(live0 + n + (arc == 0 ? 1 : 0)));
  vmt_mx_ids_free(ids);
  if (arc == 0) CHECK(24, vmt_thread_detach() == 0);

  /* The SIGQUIT dump needs a thread of its own: a clean error, the old disposition kept. */
  struct sigaction before, after;
  sigaction(SIGQUIT, NULL, &before);
  FILE *sink = fopen("/dev/null", "w");
  int src = vmt_mx_enable_sigquit_dump(sink);
  CHECK(25, src == 0 || src == -EAGAIN || src == -ENOMEM);
  if (src == 0) {
    vmt_mx_disable_sigquit_dump();
  } else {
    sigaction(SIGQUIT, NULL, &after);
    CHECK(26, after.sa_handler == before.sa_handler);
  }
  if (sink) fclose(sink);

  /* Let them all go; the runtime is as before and starts threads again. */
  for (int i = 0; i < n; i++) vmt_unpark(threads[i]);
  for (int i = 0; i < n; i++) {
    CHECK(27, vmt_thread_join(threads[i], NULL) == 0);
    CHECK(28, vmt_thread_release(threads[i]) == 0);
  }
  CHECK(29, vmt_mx_get_thread_count() == live0);
  for (int i = 0; i < 8; i++) {
    vmt_thread_t *t;
    CHECK(30, vmt_thread_start(&t, park_body, NULL) == 0);
    vmt_unpark(t);
    CHECK(31, vmt_thread_join(t, NULL) == 0 && vmt_thread_release(t) == 0);
  }
  CHECK(32, vmt_mx_get_thread_count() == live0);

  /* The figure goes back to the test process through a pipe: this child may have become a
   * user that cannot write the figures file. */
  char line[256];
  int n_line = snprintf(line, sizeof(line), "%s threads_before_refusal=%d refusal=%s refusals=%d "
                     "sigquit_dump=%s",
                     how, n, rc == -EAGAIN ? "EAGAIN" : "ENOMEM", refusals,
                     src == 0 ? "started" : src == -EAGAIN ? "EAGAIN" : "ENOMEM");
  const char *fd = getenv("VMT_EXHAUSTION_FD");
  if (fd && n_line > 0 && write(atoi(fd), line, (size_t)n_line) != n_line)
    return ROLE_SETUP_FAILED;
  return ROLE_OK;
}

/* ---- Out of pthread keys ---------------------------------------------------------------- *
 * A host may have used all of glibc's 1024 thread-specific-data keys before the runtime's
 * first call (the runtime's own key is made when the library is loaded; one loaded after the
 * host took every key uses glibc's __cxa_thread_atexit_impl instead, which
 * os_thread_linux_internal_test forces through a seam). Nothing may abort: every call works,
 * or, on a C library without another per-thread exit hook, answers -EAGAIN. */

#ifdef __GLIBC__
#define KEYS_OK(rc) ((rc) == 0)
#else
#define KEYS_OK(rc) ((rc) == 0 || (rc) == -EAGAIN)
#endif

typedef struct keyless {
  vmt_monitor_t *m;
  int rc[3];
} keyless_t;

static void *enter_and_end(void *arg) {
  keyless_t *k = arg;
  k->rc[0] = vmt_monitor_enter(k->m);
  return NULL;   /* still inside: its end must release it */
}

static void *attach_and_end(void *arg) {
  keyless_t *k = arg;
  vmt_thread_t *self;
  k->rc[1] = vmt_thread_attach(NULL, &self);
  int64_t *ids = NULL;
  size_t count = 0;
  k->rc[2] = vmt_mx_get_all_thread_ids(&ids, &count);
  vmt_mx_ids_free(ids);
  return NULL;   /* still attached: its end must detach it */
}

static int keys_exhausted(void) {
  pthread_key_t key;
  int made = 0;
  while (pthread_key_create(&key, NULL) == 0) made++;
  CHECK(40, made > 0);
  int32_t live0 = vmt_mx_get_thread_count();

  int64_t *ids = NULL;
  size_t count = 0;
  CHECK(41, KEYS_OK(vmt_mx_get_all_thread_ids(&ids, &count)));
  vmt_mx_ids_free(ids);

  keyless_t k = {0};
  CHECK(42, vmt_monitor_create(&k.m, "keyless") == 0);
  pthread_t p;
  CHECK(43, pthread_create(&p, NULL, enter_and_end, &k) == 0 && pthread_join(p, NULL) == 0);
  CHECK(44, KEYS_OK(k.rc[0]));
  if (k.rc[0] == 0) CHECK(45, vmt_monitor_try_enter(k.m) == 0 && vmt_monitor_exit(k.m) == 0);
  vmt_monitor_stats_t st;
  CHECK(46, vmt_monitor_get_stats(k.m, &st) == 0 && st.owner_id == 0);

  CHECK(47, pthread_create(&p, NULL, attach_and_end, &k) == 0 && pthread_join(p, NULL) == 0);
  CHECK(48, KEYS_OK(k.rc[1]) && KEYS_OK(k.rc[2]));
  CHECK(49, vmt_mx_get_thread_count() == live0);

  vmt_thread_t *me = NULL;
  int arc = vmt_thread_attach(NULL, &me);
  CHECK(50, KEYS_OK(arc));
  if (arc == 0) CHECK(51, vmt_mx_get_thread_count() == live0 + 1 && vmt_thread_detach() == 0);
  for (int i = 0; i < 8; i++) {
    vmt_thread_t *t;
    CHECK(52, vmt_thread_start(&t, park_body, NULL) == 0);
    vmt_unpark(t);
    CHECK(53, vmt_thread_join(t, NULL) == 0 && vmt_thread_release(t) == 0);
  }
  char *dump = NULL;
  size_t len = 0;
  CHECK(54, KEYS_OK(vmt_mx_thread_dump_to_string(&dump, &len)));
  free(dump);
  CHECK(55, vmt_mx_get_thread_count() == live0);
  CHECK(56, vmt_monitor_destroy(k.m) == 0);
  return ROLE_OK;
}

/* The host's own thread-specific data, whose destructor attaches its thread (to report its
 * end through the VM, say) and then returns attached: the runtime's end hook, armed there,
 * must still run in a later destructor round. With every key taken before the runtime's first
 * call, the hook fell back to __cxa_thread_atexit_impl, whose destructors glibc runs before
 * any key's and never again: such a thread stayed counted and listed after its end (live
 * count 1 instead of 0, and its record read a recycled tid as its own). */
static pthread_key_t host_key;
static void host_destructor(void *value) {
  (void)value;
  vmt_thread_t *self;
  if (vmt_thread_attach(NULL, &self) != 0) abort();
}

static void *set_host_key(void *arg) {
  (void)arg;
  pthread_setspecific(host_key, (void *)1);
  return NULL;
}

static int keys_taken_by_a_host_destructor(void) {
  CHECK(60, pthread_key_create(&host_key, host_destructor) == 0);
  pthread_key_t key;
  while (pthread_key_create(&key, NULL) == 0) {
  }
  int32_t live0 = vmt_mx_get_thread_count();
  for (int i = 0; i < 4; i++) {
    pthread_t p;
    CHECK(61, pthread_create(&p, NULL, set_host_key, NULL) == 0 && pthread_join(p, NULL) == 0);
    CHECK(62, vmt_mx_get_thread_count() == live0);
  }
  int64_t *ids = NULL;
  size_t count = 0;
  CHECK(63, vmt_mx_get_all_thread_ids(&ids, &count) == 0 && count == (size_t)live0);
  vmt_mx_ids_free(ids);
  return ROLE_OK;
}

static int role_main(const char *role) {
  if (strcmp(role, "keys") == 0) return keys_exhausted();
  if (strcmp(role, "keys_destructor") == 0) return keys_taken_by_a_host_destructor();
  if (strcmp(role, "pid_max") == 0) {
    if (rel_write_sysctl("/proc/sys/kernel/pid_max", 400) != 0) return ROLE_SETUP_FAILED;
    return exhaust("pid_max_400_in_a_pid_namespace", 64 * 1024);
  }
  if (strcmp(role, "nproc") == 0) {
    struct rlimit rl = {64, 64};
    if (setrlimit(RLIMIT_NPROC, &rl) != 0) return ROLE_SETUP_FAILED;
    if (setgid(65534) != 0 || setuid(65534) != 0) return ROLE_NO_OTHER_USER;
    return exhaust("rlimit_nproc_64_as_nobody", 64 * 1024);
  }
  if (strcmp(role, "as") == 0) {
    size_t cur = rel_vm_size();
    if (cur == 0) return ROLE_SETUP_FAILED;
    struct rlimit rl = {cur + 512 * 1024 * 1024, cur + 512 * 1024 * 1024};
    if (setrlimit(RLIMIT_AS, &rl) != 0) return ROLE_SETUP_FAILED;
    return exhaust("rlimit_as_plus_512_mib_16_mib_stacks", 16 * 1024 * 1024);
  }
  return ROLE_SETUP_FAILED;
}

static char **self_argv;

/* Forks; the child (optionally in a new PID namespace) runs this binary again in `role`. */
static int run_role(const char *role, bool new_pid_namespace) {
  int figure_pipe[2];
  if (pipe(figure_pipe) != 0) return -1;
  pid_t outer = fork();
  if (outer < 0) return -1;
  if (outer == 0) {
    close(figure_pipe[0]);
    char fd[16];
    snprintf(fd, sizeof(fd), "%d", figure_pipe[1]);
    setenv("VMT_EXHAUSTION_FD", fd, 1);
    if (new_pid_namespace && unshare(CLONE_NEWPID) != 0) _exit(100 + errno);
    pid_t inner = fork();
    if (inner < 0) _exit(2);
    if (inner == 0) {
      setenv("VMT_EXHAUSTION_ROLE", role, 1);
      /* jemalloc 5.3 (Debian) segfaults in a new thread's first allocation, setting up its
       * thread cache, when the address space is exhausted: 1 run in ~30 of the RLIMIT_AS case,
       * inside malloc or mallctl (a NULL arena's mutex); never in 100 runs without the thread
       * cache. That is the allocator's failure, not the runtime's (docs/reliability.md). */
      if (strcmp(role, "as") == 0) setenv("MALLOC_CONF", "tcache:false", 1);
      execv("/proc/self/exe", self_argv);
      _exit(2);
    }
    int st;
    if (waitpid(inner, &st, 0) != inner) _exit(2);
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
  }
  close(figure_pipe[1]);
  char line[256];
  ssize_t got = read(figure_pipe[0], line, sizeof(line) - 1);
  close(figure_pipe[0]);
  int status;
  if (waitpid(outer, &status, 0) != outer || !WIFEXITED(status)) return -1;
  if (got > 0 && WEXITSTATUS(status) == ROLE_OK) {
    line[got] = '\0';
    char *rest = strchr(line, ' ');
    if (rest) {
      *rest++ = '\0';
      rel_figure_text("exhaustion", line, "%s", rest);
    }
  }
  return WEXITSTATUS(status);
}

static void pid_namespace_limit(void **state) {
  (void)state;
  int code = run_role("pid_max", true);
  if (code >= 100 && code < 128) {
    printf("skip: unshare(CLONE_NEWPID) failed (%s): needs CAP_SYS_ADMIN\n", strerror(code - 100));
    skip();
  }
  if (code == ROLE_SETUP_FAILED) {
    printf("skip: no per-namespace pid_max here (Linux >= 6.14)\n");
    skip();
  }
  assert_int_equal(code, ROLE_OK);
}

static void nproc_limit(void **state) {
  (void)state;
  if (geteuid() != 0) {
    /* Without root the test cannot become a user with no processes of its own. */
    printf("skip: lowering RLIMIT_NPROC safely needs root (to switch to an unused user)\n");
    skip();
  }
  /* RLIMIT_NPROC counts every thread of the user, in every process: two runs of this test at
   * once (bazel test --runs_per_test) would take each other's slots. One at a time. */
  int lock = open("/tmp/vmthread-exhaustion-nproc.lock", O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  assert_true(lock >= 0);
  assert_int_equal(flock(lock, LOCK_EX), 0);
  int code = run_role("nproc", false);
  close(lock);
  if (code == ROLE_NO_OTHER_USER) {
    printf("skip: user 65534 is not mapped in this user namespace (a sandbox?)\n");
    skip();
  }
  assert_int_equal(code, ROLE_OK);
}

static void address_space_limit(void **state) {
  (void)state;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  printf("skip: the sanitizer's shadow memory needs an unlimited address space\n");
  skip();
#else
  assert_int_equal(run_role("as", false), ROLE_OK);
#endif
}

static void pthread_keys_exhausted(void **state) {
  (void)state;
  assert_int_equal(run_role("keys", false), ROLE_OK);
}

static void pthread_keys_exhausted_with_a_host_destructor(void **state) {
  (void)state;
  assert_int_equal(run_role("keys_destructor", false), ROLE_OK);
}

int main(int argc, char **argv) {
  (void)argc;
  self_argv = argv;
  const char *role = getenv("VMT_EXHAUSTION_ROLE");
  if (role) return role_main(role);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(pid_namespace_limit),
      cmocka_unit_test(nproc_limit),
      cmocka_unit_test(address_space_limit),
      cmocka_unit_test(pthread_keys_exhausted),
      cmocka_unit_test(pthread_keys_exhausted_with_a_host_destructor),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
