/*
 * runtime/management/dump.c: the text thread dump, in the layout Java users read from jstack (and
 * from kill -3): a header, one block per thread, then a section per deadlock cycle.
 *
 *   "worker-1" #12 daemon prio=5 cpu=0.52ms elapsed=1.20s tid=4242 category=app waiting for ...
 *      java.lang.Thread.State: BLOCKED (on object monitor)
 *   	at do_work(/usr/lib/libvm.so)
 *   	- waiting to lock <m1@1a2b> (owned by "worker-2" #13)
 *   	- locked <m0@99>
 *
 *      Locked ownable synchronizers:
 *   	- None
 *
 * The dump is built from dumpAllThreads (locked monitors and synchronizers, all frames) and
 * findDeadlockedThreads; each cycle is printed by following lock owners from its threads.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "runtime/management/management_impl.h"

static const char *status_word(const vmt_thread_info_t *ti) {
  switch (ti->state) {
    case VMT_THREAD_RUNNABLE:
      return "runnable";
    case VMT_THREAD_BLOCKED:
      return "waiting for monitor entry";
    case VMT_THREAD_WAITING:
    case VMT_THREAD_TIMED_WAITING:
      if (ti->lock && strcmp(ti->lock->class_name, "vmt.Monitor") == 0) return "in Object.wait()";
      return "waiting on condition";
    default:
      return "";
  }
}

static bool on_monitor(const vmt_thread_info_t *ti) {
  return ti->lock && strcmp(ti->lock->class_name, "vmt.Monitor") == 0;
}

/* jstack's state line: "BLOCKED (on object monitor)", "WAITING (parking)", ... */
static const char *state_detail(const vmt_thread_info_t *ti) {
  switch (ti->state) {
    case VMT_THREAD_BLOCKED:
      return " (on object monitor)";
    case VMT_THREAD_WAITING:
      /* Without a monitor, only park (on a synchronizer or bare) waits untimed. */
      return on_monitor(ti) ? " (on object monitor)" : " (parking)";
    case VMT_THREAD_TIMED_WAITING:
      if (on_monitor(ti)) return " (on object monitor)";
      return ti->lock ? " (parking)" : ""; /* sleep and parkNanos look alike here */
    default:
      return "";
  }
}

static void print_owner(FILE *out, const vmt_thread_info_t *ti) {
  if (ti->lock_owner_id > 0 && ti->lock_owner_name)
    fprintf(out, " (owned by \"%s\" #%lld)", ti->lock_owner_name, (long long)ti->lock_owner_id);
  fputc('\n', out);
}

static void print_blocker(FILE *out, const vmt_thread_info_t *ti) {
  if (!ti->lock) return;
  if (ti->state == VMT_THREAD_BLOCKED) {
    fprintf(out, "\t- waiting to lock <%s>", ti->lock->name);
    print_owner(out, ti);
  } else if (on_monitor(ti)) {
    fprintf(out, "\t- waiting on <%s>\n", ti->lock->name);
  } else {
    fprintf(out, "\t- parking to wait for <%s>", ti->lock->name);
    print_owner(out, ti);
  }
}

static void print_frame(FILE *out, const vmt_stack_frame_t *f) {
  fprintf(out, "\tat %s", f->function ? f->function : "??");
  if (f->file && f->line >= 0)
    fprintf(out, "(%s:%d)", f->file, f->line);
  else if (f->file)
    fprintf(out, "(%s)", f->file);
  if (f->pc) fprintf(out, " [0x%llx]", (unsigned long long)f->pc);
  fputc('\n', out);
}

static void print_locked_at(FILE *out, const vmt_thread_info_t *ti, int32_t depth) {
  for (size_t i = 0; i < ti->locked_monitor_count; i++)
    if (ti->locked_monitors[i].stack_depth == depth)
      fprintf(out, "\t- locked <%s>\n", ti->locked_monitors[i].lock.name);
}

static void print_thread(FILE *out, const vmt_thread_info_t *ti) {
  fprintf(out, "\"%s\" #%lld %sprio=%d", ti->name, (long long)ti->id,
          ti->daemon ? "daemon " : "", ti->priority);
  if (ti->cpu_time_ns >= 0) fprintf(out, " cpu=%.2fms", (double)ti->cpu_time_ns / 1e6);
  fprintf(out, " elapsed=%.2fs tid=%d category=%s %s\n", (double)ti->elapsed_ns / 1e9,
          (int)ti->tid, ti->category, status_word(ti));
  fprintf(out, "   java.lang.Thread.State: %s%s\n", vmt_thread_state_name(ti->state),
          state_detail(ti));
  /* jstack puts what the thread waits for under its top frame, and each "locked" under the
   * frame that took it; monitors whose frame is unknown (depth -1) go after the frames. */
  for (size_t i = 0; i < ti->frame_count; i++) {
    print_frame(out, &ti->frames[i]);
    if (i == 0) print_blocker(out, ti);
    print_locked_at(out, ti, (int32_t)i);
  }
  if (ti->frame_count == 0) print_blocker(out, ti);
  for (size_t i = 0; i < ti->locked_monitor_count; i++) {
    int32_t d = ti->locked_monitors[i].stack_depth;
    if (d < 0 || (size_t)d >= ti->frame_count)
      fprintf(out, "\t- locked <%s>\n", ti->locked_monitors[i].lock.name);
  }
  fputs("\n   Locked ownable synchronizers:\n", out);
  if (ti->locked_synchronizer_count == 0) fputs("\t- None\n", out);
  for (size_t i = 0; i < ti->locked_synchronizer_count; i++)
    fprintf(out, "\t- <%s>\n", ti->locked_synchronizers[i].name);
  fputc('\n', out);
}

static const vmt_thread_info_t *find_info(vmt_thread_info_t **infos, size_t n, int64_t id) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (infos[mid]->id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && infos[lo]->id == id ? infos[lo] : NULL;
}

/* HotSpot's deadlock report, one block per cycle. Each thread in a cycle waits for a lock its
 * successor owns; following owners from any deadlocked thread reaches the cycle. */
static int print_deadlocks(FILE *out, vmt_thread_info_t **infos, size_t n, const int64_t *ids,
                           size_t nids) {
  if (nids == 0) return 0;
  bool *done = vmt__mx_calloc(nids, sizeof(*done));
  const vmt_thread_info_t **path = vmt__mx_calloc(n + 1, sizeof(*path));
  if (!done || !path) {
    free(done);
    free(path);
    return -ENOMEM;
  }
  int cycles = 0;
  for (size_t k = 0; k < nids; k++) {
    if (done[k]) continue;
    /* Walk owners until a thread repeats; the cycle starts at its first occurrence. */
    size_t len = 0, start = 0;
    bool closed = false;
    for (const vmt_thread_info_t *ti = find_info(infos, n, ids[k]); ti && len <= n;
         ti = find_info(infos, n, ti->lock_owner_id)) {
      for (size_t j = 0; j < len && !closed; j++)
        if (path[j] == ti) {
          start = j;
          closed = true;
        }
      if (closed || !ti->lock || ti->lock_owner_id <= 0) break;
      path[len++] = ti;
    }
    for (size_t j = 0; j < len; j++)
      for (size_t m = 0; m < nids; m++)
        if (ids[m] == path[j]->id) done[m] = true;
    if (!closed) continue; /* the graph changed under us: no cycle any more */
    fputs("Found one Java-level deadlock:\n=============================\n", out);
    for (size_t j = start; j < len; j++) {
      const vmt_thread_info_t *ti = path[j];
      bool sync = !on_monitor(ti);
      fprintf(out, "\"%s\" #%lld:\n  %s <%s> (a %s),\n  which is held by \"%s\" #%lld\n",
              ti->name, (long long)ti->id,
              sync ? "waiting for ownable synchronizer" : "waiting to lock monitor",
              ti->lock->name, ti->lock->class_name,
              ti->lock_owner_name ? ti->lock_owner_name : "?", (long long)ti->lock_owner_id);
    }
    fputc('\n', out);
    cycles++;
  }
  if (cycles == 1)
    fputs("Found 1 deadlock.\n\n", out);
  else if (cycles > 1)
    fprintf(out, "Found %d deadlocks.\n\n", cycles);
  free(done);
  free(path);
  return 0;
}

/*
 * The dump's time stamp, in UTC, computed by hand. localtime_r and gmtime_r both take glibc's
 * time-zone lock, which fork() does not reset: a dump in a child forked while another thread
 * held it hung (29 of 300 children in the reproduction of docs/reliability.md).
 */
void vmt__mx_format_utc_now(char *buf, size_t len, bool iso8601) {
  struct timespec ts;
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0) {
    snprintf(buf, len, "(no time)");
    return;
  }
  int64_t secs = (int64_t)ts.tv_sec;
  int64_t days = secs / 86400, rem = secs % 86400;
  if (rem < 0) {
    rem += 86400;
    days--;
  }
  /* Civil date from days since 1970-01-01 (proleptic Gregorian; eras of 400 years). */
  int64_t z = days + 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  int64_t day = doy - (153 * mp + 2) / 5 + 1;
  int64_t month = mp < 10 ? mp + 3 : mp - 9;
  int64_t year = yoe + era * 400 + (month <= 2);
  snprintf(buf, len, iso8601 ? "%04lld-%02lld-%02lldT%02lld:%02lld:%02lldZ"
                             : "%04lld-%02lld-%02lld %02lld:%02lld:%02lld UTC",
           (long long)year, (long long)month, (long long)day, (long long)(rem / 3600),
           (long long)(rem % 3600 / 60), (long long)(rem % 60));
}

int vmt__mx_write_dump(FILE *out, const void *caller_pc) {
  /* Deadlocked threads stay put, so finding them first guarantees they are in the dump. */
  int64_t *dl = NULL;
  size_t ndl = 0;
  int rc = vmt__find_deadlocks(true, &dl, &ndl);
  if (rc) return rc;
  vmt_thread_info_t **infos = NULL;
  size_t n = 0;
  rc = vmt__mx_dump_all(true, true, VMT_MX_MAX_DEPTH_ALL, caller_pc, &infos, &n);
  if (rc) {
    free(dl);
    return rc;
  }
  /* Room for any int64 year: gcc -O2 checks snprintf against the widest value
   * (-Werror=format-truncation), and the opt build of the benchmarks fails otherwise. */
  char when[128];
  vmt__mx_format_utc_now(when, sizeof(when), false);
  fprintf(out, "%s\nFull thread dump vmthread %s (%zu threads):\n\n", when, vmt_version(), n);
  char other[512];
  int32_t others = vmt_mx_get_other_runtime_count(other, sizeof(other));
  if (others > 0)
    fprintf(out,
            "WARNING: %d other copy of vmthread in this process has threads (%s), not shown "
            "here: link every user of vmthread against libvmthread.so.0\n\n",
            (int)others, other[0] ? other : "the main program");
  for (size_t i = 0; i < n; i++) print_thread(out, infos[i]);
  rc = print_deadlocks(out, infos, n, dl, ndl);
  vmt_mx_thread_info_array_free(infos, n);
  free(dl);
  if (rc) return rc;
  if (fflush(out) != 0 || ferror(out)) return -EIO;
  return 0;
}

__attribute__((noinline)) int vmt_mx_print_thread_dump(FILE *out) {
  if (!out) return -EINVAL;
  int cancel = vmt__mx_cancel_off();   /* the stream's writes are cancellation points */
  int rc = vmt__mx_write_dump(out, VMT__MX_CALLER_PC());
  vmt__mx_cancel_restore(cancel);
  return rc;
}

int vmt__mx_dump_to_string(vmt__mx_dump_writer_fn write_dump, const void *caller_pc, char **out,
                           size_t *len) {
  if (!out || !len) return -EINVAL;
  char *buf = NULL;
  size_t size = 0;
  FILE *f = vmt__fault_hit(VMT__FAULT_ALLOC) ? NULL : open_memstream(&buf, &size);
  if (!f) return -ENOMEM;
  int cancel = vmt__mx_cancel_off();
  int rc = write_dump(f, caller_pc);
  /* open_memstream reports a failed buffer growth as a write error: -EIO becomes -ENOMEM. */
  if (fclose(f) != 0 && rc == 0) rc = -ENOMEM;
  vmt__mx_cancel_restore(cancel);
  if (rc == -EIO) rc = -ENOMEM;
  if (rc) {
    free(buf);
    return rc;
  }
  *out = buf;
  *len = size;
  return 0;
}

__attribute__((noinline)) int vmt_mx_thread_dump_to_string(char **out, size_t *len) {
  return vmt__mx_dump_to_string(vmt__mx_write_dump, VMT__MX_CALLER_PC(), out, len);
}
