/*
 * test/mx_sigquit_linux_test.c: the opt-in SIGQUIT dump (kill -3). Enabling installs a handler
 * and starts one internal dump thread that is neither counted nor listed and takes no thread
 * id; a SIGQUIT makes it write a dump to the chosen stream and then runs the handler that was
 * installed before (a JVM's attach mechanism lives there), with its siginfo; SIG_DFL is not
 * chained (the process survives); disabling restores the disposition found at enable (but
 * never over a handler the host installed since) and stops the thread. Linux-specific: the dump thread is seen through /proc/self/task, the only place
 * an internal thread shows up.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "mx_util.h"

static int os_threads(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

static volatile sig_atomic_t previous_handler_calls;
static void previous_handler(int sig) {
  (void)sig;
  previous_handler_calls++;
}

/* An SA_SIGINFO handler, as HotSpot installs for SIGQUIT: it must get the sender's siginfo. */
static volatile sig_atomic_t siginfo_calls;
static volatile sig_atomic_t siginfo_from_self;
static void previous_siginfo_handler(int sig, siginfo_t *info, void *context) {
  (void)context;
  siginfo_from_self = sig == SIGQUIT && info != NULL && info->si_signo == SIGQUIT &&
                      info->si_pid == getpid();
  siginfo_calls++;
}

/* Polls (10 s deadline for a hung test, not a timing check) until *calls reaches n. */
static bool await_calls(volatile sig_atomic_t *calls, int n) {
  for (int i = 0; i < 10000 && *calls < n; i++) sleep_ms(1);
  return *calls >= n;
}

/* The dump thread writes through its own FILE; the test reads the file by name, so the two
 * never share a file position. */
static char path[64];

static char *read_all(void) {
  FILE *f = fopen(path, "r");
  size_t cap = 1 << 16, len = 0;
  char *s = calloc(1, cap + 1);
  if (f) {
    size_t r;
    while ((r = fread(s + len, 1, cap - len, f)) > 0) {
      len += r;
      if (len == cap) {
        s = realloc(s, 2 * cap + 1);
        cap *= 2;
      }
    }
    fclose(f);
  }
  s[len] = '\0';
  return s;
}

static int dumps_written(void) {
  char *s = read_all();
  int n = 0;
  for (const char *p = strstr(s, "Full thread dump"); p; p = strstr(p + 1, "Full thread dump"))
    n++;
  free(s);
  return n;
}

/* Polls until the process has n OS threads (10 s deadline for a hung test). A joined thread
 * can stay in /proc/self/task a moment after pthread_join returns: the kernel clears the tid
 * word that join waits on before it removes the task. */
static bool await_os_threads(int n) {
  for (int i = 0; i < 1000; i++) {
    if (os_threads() == n) return true;
    sleep_ms(10);
  }
  return false;
}

/* Polls until n dumps are in the file (10 s deadline for a hung test, not a timing check). */
static bool await_dumps(int n) {
  for (int i = 0; i < 1000; i++) {
    if (dumps_written() >= n) return true;
    sleep_ms(10);
  }
  return false;
}

static void sigquit_dump_round_trip(void **state) {
  (void)state;
  struct sigaction mine = {0}, seen;
  mine.sa_handler = previous_handler;
  sigemptyset(&mine.sa_mask);
  assert_int_equal(sigaction(SIGQUIT, &mine, NULL), 0);

  gate_t g;
  vmt_thread_t *t = start_gated(&g, "visible worker", false);
  int32_t live = vmt_mx_get_thread_count();
  int os_before = os_threads();

  snprintf(path, sizeof(path), "/tmp/vmt-sigquit-XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *out = fdopen(fd, "w");
  assert_non_null(out);
  assert_int_equal(vmt_mx_enable_sigquit_dump(out), 0);
  assert_int_equal(vmt_mx_enable_sigquit_dump(out), -EALREADY);
  /* One more OS thread, but not one the management API counts or lists. */
  assert_int_equal(os_threads(), os_before + 1);
  assert_int_equal(vmt_mx_get_thread_count(), live);
  vmt_thread_info_t **infos;
  size_t n;
  assert_int_equal(vmt_mx_dump_all_threads(false, false, 0, &infos, &n), 0);
  assert_int_equal(n, (size_t)live);
  for (size_t i = 0; i < n; i++) assert_string_not_equal(infos[i]->name, "vmt-sigquit");
  vmt_mx_thread_info_array_free(infos, n);

  assert_int_equal(kill(getpid(), SIGQUIT), 0);
  assert_true(await_dumps(1));
  char *s = NULL;
  for (int i = 0; i < 1000; i++) { /* the dump may reach the file in more than one write */
    free(s);
    s = read_all();
    if (strstr(s, "Locked ownable synchronizers")) break;
    sleep_ms(10);
  }
  assert_non_null(strstr(s, "\"visible worker\" #"));
  assert_null(strstr(s, "vmt-sigquit"));
  free(s);
  /* The host's handler still runs, after ours, once per signal. */
  assert_true(await_calls(&previous_handler_calls, 1));
  /* A later signal gives another dump. */
  assert_int_equal(kill(getpid(), SIGQUIT), 0);
  assert_true(await_dumps(2));
  assert_true(await_calls(&previous_handler_calls, 2));

  assert_int_equal(vmt_mx_disable_sigquit_dump(), 0);
  assert_int_equal(sigaction(SIGQUIT, NULL, &seen), 0);
  assert_ptr_equal(seen.sa_handler, previous_handler);
  assert_true(await_os_threads(os_before));
  assert_int_equal(kill(getpid(), SIGQUIT), 0);
  assert_true(await_calls(&previous_handler_calls, 3));
  assert_int_equal(dumps_written(), 2); /* disabled: the host's handler alone */
  assert_int_equal(vmt_mx_disable_sigquit_dump(), 0); /* not enabled: nothing to do */

  /* It can be enabled again (to stderr by default) and disabled again. */
  assert_int_equal(vmt_mx_enable_sigquit_dump(NULL), 0);
  assert_int_equal(vmt_mx_disable_sigquit_dump(), 0);
  assert_true(await_os_threads(os_before));

  fclose(out);
  unlink(path);
  finish_gated(&g, t);
  signal(SIGQUIT, SIG_DFL);
}

static FILE *open_dump_file(void) {
  snprintf(path, sizeof(path), "/tmp/vmt-sigquit-XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *out = fdopen(fd, "w");
  assert_non_null(out);
  return out;
}

/* HotSpot's SIGQUIT handler is an SA_SIGINFO one (and jcmd's attach depends on it running):
 * it is chained with the kernel's siginfo. */
static void chains_an_sa_siginfo_handler(void **state) {
  (void)state;
  struct sigaction host = {0};
  host.sa_sigaction = previous_siginfo_handler;
  host.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&host.sa_mask);
  assert_int_equal(sigaction(SIGQUIT, &host, NULL), 0);
  FILE *out = open_dump_file();
  siginfo_calls = 0;
  assert_int_equal(vmt_mx_enable_sigquit_dump(out), 0);
  assert_int_equal(kill(getpid(), SIGQUIT), 0);
  assert_true(await_dumps(1));
  assert_true(await_calls(&siginfo_calls, 1));
  assert_true(siginfo_from_self);
  assert_int_equal(vmt_mx_disable_sigquit_dump(), 0);
  struct sigaction seen;
  assert_int_equal(sigaction(SIGQUIT, NULL, &seen), 0);
  assert_true((seen.sa_flags & SA_SIGINFO) && seen.sa_sigaction == previous_siginfo_handler);
  fclose(out);
  unlink(path);
  signal(SIGQUIT, SIG_DFL);
}

/* With SIG_DFL before (terminate with a core), the dump replaces it: the process lives on, as a
 * JVM does on kill -3. SIG_IGN stays ignored once disabled. */
static void default_and_ignore_are_not_chained(void **state) {
  (void)state;
  int dispositions[] = {0, 1};
  for (int i = 0; i < 2; i++) {
    signal(SIGQUIT, dispositions[i] ? SIG_IGN : SIG_DFL);
    FILE *out = open_dump_file();
    assert_int_equal(vmt_mx_enable_sigquit_dump(out), 0);
    assert_int_equal(kill(getpid(), SIGQUIT), 0);
    assert_true(await_dumps(1)); /* and still alive to see it */
    assert_int_equal(vmt_mx_disable_sigquit_dump(), 0);
    struct sigaction seen;
    assert_int_equal(sigaction(SIGQUIT, NULL, &seen), 0);
    assert_ptr_equal(seen.sa_handler, dispositions[i] ? SIG_IGN : SIG_DFL);
    fclose(out);
    unlink(path);
  }
  signal(SIGQUIT, SIG_DFL);
}

/* A host that installs its own handler after the dump was enabled (saving ours, to chain to it,
 * as libjsig-style chaining does) must keep it: disabling restored the disposition found at
 * enable over it, and the host's handler was gone (with SIG_DFL found at enable, the next
 * SIGQUIT killed the process). Ours, left under the host's, goes on forwarding to the handler
 * it found; enabling again turns the dump back on there, without chaining ours to the host's
 * (which chains to ours: a loop). */
static volatile sig_atomic_t over_calls;
static struct sigaction over_saved;   /* what the host's handler replaced: ours */
static void over_handler(int sig, siginfo_t *info, void *context) {
  over_calls++;
  if ((over_saved.sa_flags & SA_SIGINFO) && over_saved.sa_sigaction)
    over_saved.sa_sigaction(sig, info, context);
}

static void a_handler_installed_over_the_dump_survives_disable(void **state) {
  (void)state;
  signal(SIGQUIT, previous_handler);   /* what the dump finds at enable */
  FILE *out = open_dump_file();
  previous_handler_calls = over_calls = 0;
  assert_int_equal(vmt_mx_enable_sigquit_dump(out), 0);
  struct sigaction host = {0};
  host.sa_sigaction = over_handler;
  host.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&host.sa_mask);
  assert_int_equal(sigaction(SIGQUIT, &host, &over_saved), 0);
  assert_int_equal(kill(getpid(), SIGQUIT), 0);
  assert_true(await_dumps(1));
  assert_true(await_calls(&over_calls, 1) && await_calls(&previous_handler_calls, 1));

  assert_int_equal(vmt_mx_disable_sigquit_dump(), 0);
  struct sigaction seen;
  assert_int_equal(sigaction(SIGQUIT, NULL, &seen), 0);
  assert_true((seen.sa_flags & SA_SIGINFO) && seen.sa_sigaction == over_handler);
  assert_int_equal(kill(getpid(), SIGQUIT), 0);   /* the host's, then ours, then the first */
  assert_true(await_calls(&over_calls, 2) && await_calls(&previous_handler_calls, 2));

  assert_int_equal(vmt_mx_enable_sigquit_dump(out), 0);
  assert_int_equal(kill(getpid(), SIGQUIT), 0);
  assert_true(await_dumps(2));
  assert_true(await_calls(&over_calls, 3) && await_calls(&previous_handler_calls, 3));
  assert_int_equal(vmt_mx_disable_sigquit_dump(), 0);
  assert_int_equal(sigaction(SIGQUIT, NULL, &seen), 0);
  assert_true(seen.sa_sigaction == over_handler);
  assert_int_equal(over_calls, 3);   /* one call per signal: no loop */
  assert_int_equal(previous_handler_calls, 3);
  /* The host puts SIG_DFL back: nothing reaches ours any more, so enabling installs it. */
  signal(SIGQUIT, SIG_DFL);
  assert_int_equal(vmt_mx_enable_sigquit_dump(out), 0);
  assert_int_equal(sigaction(SIGQUIT, NULL, &seen), 0);
  assert_true(seen.sa_sigaction != over_handler && seen.sa_handler != SIG_DFL);
  assert_int_equal(kill(getpid(), SIGQUIT), 0);   /* a dump, and the process lives */
  assert_true(await_dumps(3));
  assert_int_equal(vmt_mx_disable_sigquit_dump(), 0);
  assert_int_equal(sigaction(SIGQUIT, NULL, &seen), 0);
  assert_ptr_equal(seen.sa_handler, SIG_DFL);
  assert_int_equal(over_calls, 3);
  fclose(out);
  unlink(path);
  signal(SIGQUIT, SIG_DFL);
}

/* The dump thread is internal: it takes no thread id, so the threads started around it get
 * consecutive ids (it took id 1 before, making an application's first thread #2). */
static void dump_thread_takes_no_thread_id(void **state) {
  (void)state;
  gate_t g1, g2;
  vmt_thread_t *t1 = start_gated(&g1, "before", false);
  assert_int_equal(vmt_mx_enable_sigquit_dump(NULL), 0);
  vmt_thread_t *t2 = start_gated(&g2, "after", false);
  assert_int_equal(vmt_thread_id(t2), vmt_thread_id(t1) + 1);
  assert_int_equal(vmt_mx_disable_sigquit_dump(), 0);
  finish_gated(&g2, t2);
  finish_gated(&g1, t1);
  signal(SIGQUIT, SIG_DFL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sigquit_dump_round_trip),
      cmocka_unit_test(chains_an_sa_siginfo_handler),
      cmocka_unit_test(default_and_ignore_are_not_chained),
      cmocka_unit_test(dump_thread_takes_no_thread_id),
      cmocka_unit_test(a_handler_installed_over_the_dump_survives_disable),
  };
  return cmocka_run_group_tests_name("mx_sigquit_linux", tests, NULL, NULL);
}
