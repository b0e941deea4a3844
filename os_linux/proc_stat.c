/*
 * os_linux/proc_stat.c: thread times from /proc/self/task/<tid>/stat, the way OpenJDK before
 * JDK 26 read user time (an open, a read and a close per call: over 20x a clock read,
 * docs/cpu-time.md). Kept as the benchmarks' "before" and as the fallback when the clock-id
 * probe fails.
 *
 * The parser is pure (a buffer in, three fields out) so it can be fuzzed. Field 2, the command
 * name, may contain spaces and ')' (a thread may call itself "a) (b"): parsing starts after the
 * LAST ')' of the buffer, which the kernel guarantees is the one closing field 2 since no later
 * field contains one (fs/proc/array.c, do_task_stat).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "os_linux/os_impl.h"

/* Parses " <int>" at *p; signed fields (ppid, tty_nr, tpgid may be -1) are accepted and their
 * value dropped. A number must be followed by a separator inside the buffer: one that runs to
 * the end may have been cut by a short read. */
static int parse_field(const char **p, const char *end, bool want, uint64_t *out) {
  const char *s = *p;
  if (s >= end || *s != ' ') return -EINVAL;
  s++;
  bool negative = false;
  if (s < end && *s == '-') {
    negative = true;
    s++;
  }
  const char *digits = s;
  uint64_t v = 0;
  while (s < end && *s >= '0' && *s <= '9') {
    unsigned d = (unsigned)(*s - '0');
    if (v > (UINT64_MAX - d) / 10) return -EINVAL;
    v = v * 10 + d;
    s++;
  }
  if (s == digits || s >= end || (*s != ' ' && *s != '\n')) return -EINVAL;
  if (want) {
    if (negative) return -EINVAL;
    *out = v;
  }
  *p = s;
  return 0;
}

int vmt_os_proc_stat_parse(const char *buf, size_t len, vmt_os_proc_times_t *out) {
  if (buf == NULL || out == NULL) return -EINVAL;
  const char *end = buf + len;
  const char *close = NULL;
  for (const char *s = buf; s < end; s++)
    if (*s == ')') close = s;
  if (close == NULL) return -EINVAL;
  const char *p = close + 1;
  /* Field 3: " S" then the separator before field 4. */
  if (end - p < 3 || p[0] != ' ' || p[1] == ' ' || p[1] == '\n' || p[1] == '\0') return -EINVAL;
  char state = p[1];
  p += 2;
  uint64_t utime = 0, stime = 0, ignored;
  for (int field = 4; field <= 15; field++) {
    uint64_t *dst = field == 14 ? &utime : field == 15 ? &stime : &ignored;
    int err = parse_field(&p, end, field >= 14, dst);
    if (err) return err;
  }
  out->state = state;
  out->utime_ticks = utime;
  out->stime_ticks = stime;
  return 0;
}

int vmt_os_proc_thread_times(pid_t tid, int64_t *user_ns, int64_t *sys_ns) {
  if (tid <= 0 || user_ns == NULL || sys_ns == NULL) return -EINVAL;
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
  /* open, read and close are cancellation points, and this is the CPU-time fallback of calls
   * that are none: cancelled between the open and the close, a read leaked the descriptor
   * (test/proc_stat_internal_test.c, reads_are_no_cancellation_points). */
  int cancel;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno == ENOENT ? -ESRCH : -errno;
    pthread_setcancelstate(cancel, NULL);
    return err;
  }
  /* One stat line is ~350 bytes with a 15-byte name; 1 KiB leaves room for growth. Loop: the
   * kernel may return it in pieces. */
  char buf[1024];
  size_t len = 0;
  int err = 0;
  while (len < sizeof(buf)) {
    ssize_t n = read(fd, buf + len, sizeof(buf) - len);
    if (n < 0) {
      if (errno == EINTR) continue;
      err = -errno;
      break;
    }
    if (n == 0) break;
    len += (size_t)n;
  }
  close(fd);
  pthread_setcancelstate(cancel, NULL);
  if (err) return err;
  vmt_os_proc_times_t t;
  err = vmt_os_proc_stat_parse(buf, len, &t);
  if (err) return err;
  static _Atomic long ns_per_tick;
  VMT__PROCESS_STATE(proc_tick, .symbols = "ns_per_tick", .rule = VMT__FORK_KEEP,
                     .fork = "USER_HZ is the kernel's constant");
  long tick = atomic_load_explicit(&ns_per_tick, memory_order_relaxed);
  if (tick == 0) {
    long hz = sysconf(_SC_CLK_TCK);   /* USER_HZ: 100 on every Linux ABI */
    tick = 1000000000L / (hz > 0 ? hz : 100);
    atomic_store_explicit(&ns_per_tick, tick, memory_order_relaxed);
  }
  *user_ns = (int64_t)t.utime_ticks * tick;
  *sys_ns = (int64_t)t.stime_ticks * tick;
  return 0;
}

int vmt_os__proc_clock_read(pid_t tid, int type, int64_t *ns) {
  int64_t user, sys;
  int err = vmt_os_proc_thread_times(tid, &user, &sys);
  if (err) return err;
  *ns = type == VMT_OS_CPUCLOCK_VIRT ? user : user + sys;
  return 0;
}
