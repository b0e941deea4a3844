/*
 * test/proc_stat_internal_test.c: the /proc/<pid>/task/<tid>/stat reader (os_linux/proc_stat.c):
 * the pure parser on real-format lines, hostile thread names ("a) (b"), every truncation of a
 * valid line, malformed numbers, and a fuzz loop over exact-length heap buffers (no NUL: ASan
 * catches any read past the end); then the reader on live and gone threads, and as the CPU-time
 * fallback of a cancelled thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "os_linux/os_impl.h"
#include "runtime/os.h"
#include "test/clock_util.h"
#include "test/cpu_burn.h"
#include "vmthread.h"

/* fields 4..13, then utime (14), stime (15), then the rest of a real line. */
#define MIDDLE " 1 4242 4242 0 -1 4194368 1503 0 7 0 "
#define TAIL " 0 0 20 0 3 0 1873 11239424 2810 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0\n"

static int parse_exact(const char *text, size_t len, vmt_os_proc_times_t *out) {
  /* An exact-size heap copy without a terminating NUL: reading past len is an ASan error. */
  char *buf = malloc(len ? len : 1);
  assert_non_null(buf);
  memcpy(buf, text, len);
  int rc = vmt_os_proc_stat_parse(buf, len, out);
  free(buf);
  return rc;
}

static void parses_a_real_format_line(void **state) {
  (void)state;
  const char *line = "4243 (java) S" MIDDLE "250 37" TAIL;
  vmt_os_proc_times_t t;
  assert_int_equal(parse_exact(line, strlen(line), &t), 0);
  assert_int_equal(t.state, 'S');
  assert_int_equal(t.utime_ticks, 250);
  assert_int_equal(t.stime_ticks, 37);
}

static void names_with_parentheses_and_spaces(void **state) {
  (void)state;
  const char *names[] = {"a) (b", ") R 1 2 3 4 5 6 7 8 9 10 11 12 13 (", "x y", "((", "))", ""};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    char line[512];
    snprintf(line, sizeof(line), "77 (%s) R" MIDDLE "12345 678" TAIL, names[i]);
    vmt_os_proc_times_t t;
    assert_int_equal(parse_exact(line, strlen(line), &t), 0);
    assert_int_equal(t.state, 'R');
    assert_int_equal(t.utime_ticks, 12345);
    assert_int_equal(t.stime_ticks, 678);
  }
}

static void every_truncation_is_an_error_until_stime_is_complete(void **state) {
  (void)state;
  const char *line = "4243 (a) (b) D" MIDDLE "9876543 210" TAIL;
  size_t full = strlen(line);
  /* The parse needs stime's digits and the separator after them. */
  size_t needed = (size_t)(strstr(line, " 210 ") - line) + strlen(" 210 ");
  for (size_t len = 0; len <= full; len++) {
    vmt_os_proc_times_t t = {0, 0, 0};
    int rc = parse_exact(line, len, &t);
    if (len < needed) {
      assert_int_equal(rc, -EINVAL);
    } else {
      assert_int_equal(rc, 0);
      assert_int_equal(t.utime_ticks, 9876543);
      assert_int_equal(t.stime_ticks, 210);
      assert_int_equal(t.state, 'D');
    }
  }
}

static void malformed_content_is_rejected(void **state) {
  (void)state;
  const char *bad[] = {
      "",
      "no parenthesis at all 1 2 3",
      "1 (x)",
      "1 (x) ",
      "1 (x)  S" MIDDLE "1 2" TAIL,                       /* empty state field */
      "1 (x)S" MIDDLE "1 2" TAIL,                         /* no separator */
      "1 (x) S 1 4242 4242 0 -1 4194368 1503 0 7 0 1x 2" TAIL,  /* letter in utime */
      "1 (x) S" MIDDLE "-5 2" TAIL,                       /* negative utime */
      "1 (x) S" MIDDLE "5 -2" TAIL,                       /* negative stime */
      "1 (x) S" MIDDLE "99999999999999999999999 2" TAIL,  /* overflow */
      "1 (x) S" MIDDLE " 5 2" TAIL,                       /* double space */
      "1 (x) S 1 2 3 4 5 6\n",                            /* the line ends before utime */
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    vmt_os_proc_times_t t;
    assert_int_equal(parse_exact(bad[i], strlen(bad[i]), &t), -EINVAL);
  }
  vmt_os_proc_times_t t;
  assert_int_equal(vmt_os_proc_stat_parse(NULL, 10, &t), -EINVAL);
  assert_int_equal(vmt_os_proc_stat_parse("1 (x) S", 7, NULL), -EINVAL);
}

static void fuzzed_input_never_crashes(void **state) {
  (void)state;
  const char *line = "4243 (a) (b) S" MIDDLE "250 37" TAIL;
  size_t n = strlen(line);
  const char alphabet[] = "0123456789 ()-\nSRx\xff";
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  int ok = 0;
  for (int iter = 0; iter < 20000; iter++) {
    char buf[256];
    memcpy(buf, line, n);
    /* Mutate 1..4 bytes, and cut at a random length. */
    int mutations = 1 + (int)(seed % 4);
    for (int m = 0; m < mutations; m++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      buf[(seed >> 33) % n] = alphabet[(seed >> 17) % (sizeof(alphabet) - 1)];
    }
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    size_t len = (seed >> 40) % (n + 1);
    vmt_os_proc_times_t t;
    int rc = parse_exact(buf, len, &t);
    assert_true(rc == 0 || rc == -EINVAL);
    if (rc == 0) ok++;
  }
  /* Both outcomes were exercised (a loop that rejects everything would prove little). */
  assert_true(ok > 0);
}

/* ---- The reader ------------------------------------------------------------------------ */

static void *burn_named(void *arg) {
  (void)arg;
  prctl(PR_SET_NAME, "a) (b", 0, 0, 0);
  burn_cpu_ms(30);
  int64_t total = test_clock_ns(CLOCK_THREAD_CPUTIME_ID);
  int64_t user, sys;
  int rc = vmt_os_proc_thread_times((pid_t)syscall(SYS_gettid), &user, &sys);
  /* /proc is tick-scaled to the precise runtime: user + sys never exceeds it by a tick. */
  bool good = rc == 0 && user >= 0 && sys >= 0 && user + sys <= total + 10000000 &&
              user + sys >= 10000000;
  return good ? (void *)1 : NULL;
}

static void reads_a_live_thread_with_a_hostile_name(void **state) {
  (void)state;
  pthread_t th;
  void *good = NULL;
  assert_int_equal(pthread_create(&th, NULL, burn_named, NULL), 0);
  assert_int_equal(pthread_join(th, &good), 0);
  assert_non_null(good);
}

static void *report_tid(void *arg) {
  *(pid_t *)arg = (pid_t)syscall(SYS_gettid);
  return NULL;
}

static void gone_threads_and_bad_arguments_fail(void **state) {
  (void)state;
  pid_t tid = 0;
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, report_tid, &tid), 0);
  assert_int_equal(pthread_join(th, NULL), 0);
  int64_t user = 1, sys = 1;
  assert_int_equal(vmt_os_proc_thread_times(tid, &user, &sys), -ESRCH);
  assert_int_equal(vmt_os_proc_thread_times(0, &user, &sys), -EINVAL);
  assert_int_equal(vmt_os_proc_thread_times(-4, &user, &sys), -EINVAL);
  assert_int_equal(vmt_os_proc_thread_times(vmt_os_current_tid(), NULL, &sys), -EINVAL);
  assert_int_equal(vmt_os_proc_thread_times(vmt_os_current_tid(), &user, &sys), 0);
}

/* With the /proc fallback on (clocks the probe found unusable), every CPU-time read goes through
 * the reader: its open, read and close must not be cancellation points, since no CPU-time call
 * is one (docs/design.md, "Cancellation"), and a cancellation between the open and the close
 * would leak the descriptor. A thread cancelled before the call was cancelled inside it. */
typedef struct cancelled_reader {
  _Atomic bool go;
  _Atomic int returned;   /* reads that came back */
  int64_t user, sys, cpu;
  int rc;
} cancelled_reader_t;

static void *read_with_cancel_pending(void *arg) {
  cancelled_reader_t *r = arg;
  while (!atomic_load(&r->go)) {
  }
  r->rc = vmt_os_proc_thread_times(vmt_os_current_tid(), &r->user, &r->sys);
  atomic_fetch_add(&r->returned, 1);
  r->cpu = vmt_current_thread_cpu_time(VMT_CPU_TOTAL);
  atomic_fetch_add(&r->returned, 1);
  pthread_testcancel();
  return NULL;
}

static int open_descriptors(void) {
  int n = 0;
  for (int fd = 0; fd < 1024; fd++) n += fcntl(fd, F_GETFD) >= 0;
  return n;
}

static void reads_are_no_cancellation_points(void **state) {
  (void)state;
  unsigned old = vmt_os__set_proc_fallback(VMT_OS__PROC_THREAD_TOTAL | VMT_OS__PROC_THREAD_USER |
                                           VMT_OS__PROC_CURRENT_TOTAL |
                                           VMT_OS__PROC_CURRENT_USER);
  int fds = open_descriptors();
  cancelled_reader_t r = {.rc = 1, .cpu = -2};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, read_with_cancel_pending, &r), 0);
  assert_int_equal(pthread_cancel(th), 0);
  atomic_store(&r.go, true);
  void *res = NULL;
  assert_int_equal(pthread_join(th, &res), 0);
  vmt_os__set_proc_fallback(old);
  assert_ptr_equal(res, PTHREAD_CANCELED);
  assert_int_equal(atomic_load(&r.returned), 2);   /* cancelled after the reads, not inside */
  assert_int_equal(r.rc, 0);
  assert_true(r.cpu >= 0);
  assert_int_equal(open_descriptors(), fds);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(parses_a_real_format_line),
      cmocka_unit_test(names_with_parentheses_and_spaces),
      cmocka_unit_test(every_truncation_is_an_error_until_stime_is_complete),
      cmocka_unit_test(malformed_content_is_rejected),
      cmocka_unit_test(fuzzed_input_never_crashes),
      cmocka_unit_test(reads_a_live_thread_with_a_hostile_name),
      cmocka_unit_test(gone_threads_and_bad_arguments_fail),
      cmocka_unit_test(reads_are_no_cancellation_points),
  };
  return cmocka_run_group_tests_name("proc_stat_internal", tests, NULL, NULL);
}
