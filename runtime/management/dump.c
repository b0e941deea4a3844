/*
 * runtime/management/dump.c: the text thread dump, in the layout Java users read from jstack (and
 * from kill -3): a header, one block per thread, then a section per deadlock cycle.
 *
 *   "worker-1" #12 daemon prio=5 cpu=0.52ms elapsed=1.20s nid=0x1092 category=app waiting for ...
 *      java.lang.Thread.State: BLOCKED (on object monitor)
 *   	at do_work(/usr/lib/libvm.so)
 *   	- waiting to lock <m1@1a2b> (a vmt.Monitor) (owned by "worker-2" #13)
 *   	- locked <m0@99> (a vmt.Monitor)
 *
 *      Locked ownable synchronizers:
 *   	- None
 *
 * The dump is built from the ThreadInfos of dumpAllThreads (locked monitors and synchronizers,
 * all frames), one thread at a time, and findDeadlockedThreads; each cycle is printed by
 * following lock owners from its threads.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "runtime/management/management_impl.h"

/*
 * The header's status and the state line's detail come from the ThreadInfo's state_bits, the
 * kind of wait the thread published with its state. JDK 17.0.15 and Temurin 25.0.3 print (jstack
 * and jcmd Thread.print, checked 2026-12-02): Thread.sleep "waiting on condition" /
 * "TIMED_WAITING (sleeping)"; LockSupport.park and parkNanos, with a blocker or not, and a
 * ReentrantLock's waiters "waiting on condition" / "WAITING (parking)" or "TIMED_WAITING
 * (parking)"; Object.wait and join (an Object.wait on the thread), timed or not, "in
 * Object.wait()" / "(TIMED_)WAITING (on object monitor)"; a contended enter "waiting for monitor
 * entry" / "BLOCKED (on object monitor)"; RUNNABLE has no detail.
 */
static const char *status_word(const vmt_thread_info_t *ti) {
  uint32_t b = ti->state_bits;
  if (b & VMT_THREAD_STATE_RUNNABLE) return "runnable";
  if (b & VMT_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER) return "waiting for monitor entry";
  if (b & VMT_THREAD_STATE_IN_OBJECT_WAIT) return "in Object.wait()";
  if (b & VMT_THREAD_STATE_WAITING) return "waiting on condition";
  return "";
}

static const char *state_detail(const vmt_thread_info_t *ti) {
  uint32_t b = ti->state_bits;
  if (b & VMT_THREAD_STATE_SLEEPING) return " (sleeping)";
  if (b & VMT_THREAD_STATE_PARKED) return " (parking)";
  if (b & (VMT_THREAD_STATE_IN_OBJECT_WAIT | VMT_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER))
    return " (on object monitor)";
  return "";
}

static bool on_monitor(const vmt_thread_info_t *ti) {
  return ti->lock && strcmp(ti->lock->class_name, "vmt.Monitor") == 0;
}

/*
 * The thread blocks are formatted with plain copies and integer conversions into one buffer,
 * written out every 64 KiB: the per-frame fprintf calls parsed their formats for every frame,
 * and stdio's formatting was 38% of a dump of 1000 threads of 20 frames here (perf,
 * vfprintf and the string copies it calls). Growth failure is remembered and reported as
 * -ENOMEM at the end.
 */
typedef struct text {
  char *buf;
  size_t len, cap;
  bool oom;
} text_t;

#define TEXT_FLUSH_AT ((size_t)64 * 1024)

static bool text_reserve(text_t *t, size_t more) {
  if (t->len + more <= t->cap) return true;
  if (t->oom) return false;
  size_t cap = t->cap ? t->cap : TEXT_FLUSH_AT * 2;
  while (cap < t->len + more) cap *= 2;
  char *nb = vmt__mx_malloc(cap);
  if (!nb) {
    t->oom = true;
    return false;
  }
  if (t->len) memcpy(nb, t->buf, t->len);
  free(t->buf);
  t->buf = nb;
  t->cap = cap;
  return true;
}

static void put(text_t *t, const char *s, size_t n) {
  if (n == 0 || !text_reserve(t, n)) return;   /* n == 0: the buffer may not exist yet */
  memcpy(t->buf + t->len, s, n);
  t->len += n;
}

static void put_str(text_t *t, const char *s) { put(t, s, strlen(s)); }
static void put_char(text_t *t, char c) { put(t, &c, 1); }

static void put_uint(text_t *t, uint64_t v, unsigned base) {
  char tmp[24];
  size_t k = sizeof(tmp);
  do {
    tmp[--k] = "0123456789abcdef"[v % base];
    v /= base;
  } while (v);
  put(t, tmp + k, sizeof(tmp) - k);
}

static void put_int(text_t *t, int64_t v) {
  if (v < 0) {
    put_char(t, '-');
    put_uint(t, -(uint64_t)v, 10);
  } else {
    put_uint(t, (uint64_t)v, 10);
  }
}

/* v / unit with two decimals, rounded half up (printf's "%.2f" of v / unit, but for the exact
 * halves). v >= 0. */
static void put_fixed2(text_t *t, int64_t v, int64_t unit) {
  int64_t hundredths = (v * 2 / (unit / 100) + 1) / 2;
  put_uint(t, (uint64_t)(hundredths / 100), 10);
  char frac[3] = {'.', (char)('0' + hundredths % 100 / 10), (char)('0' + hundredths % 10)};
  put(t, frac, 3);
}

/* Writes what the buffer holds once it is large enough (always, when last). */
static void text_flush(text_t *t, FILE *out, bool last) {
  if (!out || t->len == 0 || (!last && t->len < TEXT_FLUSH_AT)) return;
  fwrite(t->buf, 1, t->len, out);
  t->len = 0;
}

/* "<name> (a class)": the lock and its class, as jstack names an object ("<0x...> (a
 * java.lang.Object)"), so that tools reading jstack's layout find the class where they look. */
static void put_lock_ref(text_t *t, const vmt_lock_info_t *l) {
  put_char(t, '<');
  put_str(t, l->name);
  put_char(t, '>');
  if (l->class_name && l->class_name[0]) {
    put_str(t, " (a ");
    put_str(t, l->class_name);
    put_char(t, ')');
  }
}

static void put_owner(text_t *t, const vmt_thread_info_t *ti) {
  if (ti->lock_owner_id > 0 && ti->lock_owner_name) {
    put_str(t, " (owned by \"");
    put_str(t, ti->lock_owner_name);
    put_str(t, "\" #");
    put_int(t, ti->lock_owner_id);
    put_char(t, ')');
  }
  put_char(t, '\n');
}

static void put_blocker(text_t *t, const vmt_thread_info_t *ti) {
  if (!ti->lock) return;
  if (ti->state == VMT_THREAD_BLOCKED) {
    put_str(t, "\t- waiting to lock ");
    put_lock_ref(t, ti->lock);
    put_owner(t, ti);
  } else if (ti->state_bits & VMT_THREAD_STATE_IN_OBJECT_WAIT) {
    put_str(t, "\t- waiting on ");
    put_lock_ref(t, ti->lock);
    put_char(t, '\n');
  } else {
    put_str(t, "\t- parking to wait for ");
    put_lock_ref(t, ti->lock);
    put_owner(t, ti);
  }
}

static void put_frame(text_t *t, const vmt_stack_frame_t *f) {
  put_str(t, "\tat ");
  put_str(t, f->function ? f->function : "??");
  if (f->file) {
    put_char(t, '(');
    put_str(t, f->file);
    if (f->line >= 0) {
      put_char(t, ':');
      put_int(t, f->line);
    }
    put_char(t, ')');
  }
  if (f->pc) {
    put_str(t, " [0x");
    put_uint(t, (uint64_t)f->pc, 16);
    put_char(t, ']');
  }
  put_char(t, '\n');
}

static void put_locked(text_t *t, const vmt_lock_info_t *l) {
  put_str(t, "\t- locked ");
  put_lock_ref(t, l);
  put_char(t, '\n');
}

static void put_thread(text_t *t, const vmt_thread_info_t *ti) {
  put_char(t, '"');
  put_str(t, ti->name);
  put_str(t, "\" #");
  put_int(t, ti->id);
  put_str(t, ti->daemon ? " daemon prio=" : " prio=");
  put_int(t, ti->priority);
  if (ti->cpu_time_ns >= 0) {
    put_str(t, " cpu=");
    put_fixed2(t, ti->cpu_time_ns, 1000000);
    put_str(t, "ms");
  }
  put_str(t, " elapsed=");
  put_fixed2(t, ti->elapsed_ns > 0 ? ti->elapsed_ns : 0, 1000000000);
  /* nid: the kernel tid in hex, as jstack prints it (HotSpot's tid= is its thread object's
   * address, which a C runtime has no use for). */
  put_str(t, "s nid=0x");
  put_uint(t, (uint64_t)(uint32_t)ti->tid, 16);
  put_str(t, " category=");
  put_str(t, ti->category);
  put_char(t, ' ');
  put_str(t, status_word(ti));
  put_str(t, "\n   java.lang.Thread.State: ");
  put_str(t, vmt_thread_state_name(ti->state));
  put_str(t, state_detail(ti));
  put_char(t, '\n');
  /* jstack puts what the thread waits for under its top frame, and each "locked" under the
   * frame that took it; monitors whose frame is unknown (depth -1) go after the frames. */
  for (size_t i = 0; i < ti->frame_count; i++) {
    put_frame(t, &ti->frames[i]);
    if (i == 0) put_blocker(t, ti);
    for (size_t k = 0; k < ti->locked_monitor_count; k++)
      if (ti->locked_monitors[k].stack_depth == (int32_t)i)
        put_locked(t, &ti->locked_monitors[k].lock);
  }
  if (ti->frame_count == 0) put_blocker(t, ti);
  for (size_t i = 0; i < ti->locked_monitor_count; i++) {
    int32_t d = ti->locked_monitors[i].stack_depth;
    if (d < 0 || (size_t)d >= ti->frame_count) put_locked(t, &ti->locked_monitors[i].lock);
  }
  put_str(t, "\n   Locked ownable synchronizers:\n");
  if (ti->locked_synchronizer_count == 0) put_str(t, "\t- None\n");
  for (size_t i = 0; i < ti->locked_synchronizer_count; i++) {
    put_str(t, "\t- ");
    put_lock_ref(t, &ti->locked_synchronizers[i]);
    put_char(t, '\n');
  }
  put_char(t, '\n');
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
 * successor owns; following owners from any deadlocked thread reaches the cycle. infos are the
 * ThreadInfos of the deadlocked threads, in id order. */
static int put_deadlocks(text_t *t, vmt_thread_info_t **infos, size_t n, const int64_t *ids,
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
    put_str(t, "Found one Java-level deadlock:\n=============================\n");
    for (size_t j = start; j < len; j++) {
      const vmt_thread_info_t *ti = path[j];
      put_char(t, '"');
      put_str(t, ti->name);
      put_str(t, "\" #");
      put_int(t, ti->id);
      put_str(t, on_monitor(ti) ? ":\n  waiting to lock monitor <"
                                : ":\n  waiting for ownable synchronizer <");
      put_str(t, ti->lock->name);
      put_str(t, "> (a ");
      put_str(t, ti->lock->class_name);
      put_str(t, "),\n  which is held by \"");
      put_str(t, ti->lock_owner_name ? ti->lock_owner_name : "?");
      put_str(t, "\" #");
      put_int(t, ti->lock_owner_id);
      put_char(t, '\n');
    }
    put_char(t, '\n');
    cycles++;
  }
  if (cycles == 1) {
    put_str(t, "Found 1 deadlock.\n\n");
  } else if (cycles > 1) {
    put_str(t, "Found ");
    put_int(t, cycles);
    put_str(t, " deadlocks.\n\n");
  }
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

/*
 * The dump into t, and with a stream every 64 KiB of it to out (out NULL: all of it stays in t,
 * for vmt_mx_thread_dump_to_string). Each thread's ThreadInfo is taken, formatted and freed in
 * turn, so that the dump of 10,000 threads does not first hold 10,000 ThreadInfos (about 17 MB
 * with 20 frames each) and then read them back from memory; only the deadlocked threads' are kept
 * for the deadlock section. The header counts the threads listed when the dump begins (a thread
 * that ends during the dump is left out, as from dumpAllThreads).
 */
/* The last section: CPU time and counts per thread category (category.c). */
static int put_categories(text_t *t) {
  vmt_category_usage_t *u = NULL;
  size_t n = 0;
  int rc = vmt_mx_get_category_usage(&u, &n);
  if (rc) return rc;
  put_str(t, "Thread categories:\n");
  for (size_t i = 0; i < n; i++) {
    put_char(t, '\t');
    put_str(t, u[i].name);
    put_str(t, ": live=");
    put_int(t, u[i].live_count);
    put_str(t, " started=");
    put_int(t, u[i].started_count);
    if (u[i].cpu_time_ns >= 0) {
      put_str(t, " cpu=");
      put_fixed2(t, u[i].cpu_time_ns, 1000000);
      put_str(t, "ms (exited threads ");
      put_fixed2(t, u[i].exited_cpu_time_ns, 1000000);
      put_str(t, "ms)");
    }
    put_char(t, '\n');
  }
  put_char(t, '\n');
  vmt_mx_category_usage_free(u);
  return 0;
}

static int write_dump(text_t *t, FILE *out, const void *caller_pc) {
  /* Deadlocked threads stay put, so finding them first guarantees they are in the dump. */
  int64_t *dl = NULL;
  size_t ndl = 0;
  int rc = vmt__find_deadlocks(true, &dl, &ndl);
  if (rc) return rc;
  const vmt__snapshot_t *snap = vmt__registry_acquire();
  vmt_thread_info_t **kept = ndl ? vmt__mx_calloc(ndl, sizeof(*kept)) : NULL;
  if (!snap || (ndl && !kept)) {
    if (snap) vmt__registry_release(snap);
    free(kept);
    free(dl);
    return -ENOMEM;
  }
  /* The count for the header from the hot cells (dense, 32 bytes a thread), not the records:
   * at 10,000 threads a pass over the records, 4.5 MB, only to count them left them in L3 for
   * the pass that formats them, where at 1000 they stayed in L2. */
  size_t listed = 0;
  for (size_t i = 0; i < snap->count; i++) {
    vmt__mx_prefetch_hot_ahead(snap, i);
    listed += vmt__hot_is_listed(snap->hot[i]);
  }
  /* Room for any int64 year: gcc -O2 checks snprintf against the widest value
   * (-Werror=format-truncation), and the opt build of the benchmarks fails otherwise. */
  char when[128];
  vmt__mx_format_utc_now(when, sizeof(when), false);
  put_str(t, when);
  put_str(t, "\nFull thread dump vmthread ");
  put_str(t, vmt_version());
  put_str(t, " (");
  put_uint(t, listed, 10);
  put_str(t, " threads):\n\n");
  char other[512];
  int32_t others = vmt_mx_get_other_runtime_count(other, sizeof(other));
  if (others > 0) {
    put_str(t, "WARNING: ");
    put_int(t, others);
    put_str(t, " other copy of vmthread in this process has threads (");
    put_str(t, other[0] ? other : "the main program");
    put_str(t, "), not shown here: link every user of vmthread against libvmthread.so.0\n\n");
  }
  vmt__mx_stacks_t stacks;
  vmt__mx_stacks_begin(&stacks, VMT_MX_MAX_DEPTH_ALL, caller_pc);
  size_t nkept = 0, k = 0, printed = 0;
  /* ThreadInfos from blocks (a malloc per 64 KiB block, some 280 ThreadInfos); each is printed and freed before
   * the next is read, so a block goes back to malloc as soon as the pool has moved on. */
  vmt__mx_info_pool_t pool = {0};
  for (size_t i = 0; i < snap->count && rc == 0; i++) {
    vmt__mx_prefetch_info_ahead(snap, i);
    vmt_thread_info_t *info = NULL;
    rc = vmt__mx_thread_info(snap, snap->threads[i],
                             VMT_MX_INFO_LOCKED_MONITORS | VMT_MX_INFO_LOCKED_SYNCHRONIZERS |
                                 VMT__MX_INFO_NO_USER_TIME,
                             &stacks, &pool, &info);
    if (rc || !info) continue;
    size_t before = t->len;
    put_thread(t, info);
    /* In memory, size the buffer once from the first block instead of doubling it. */
    if (!out && ++printed == 1) text_reserve(t, (t->len - before) * (listed + listed / 4 + 1));
    text_flush(t, out, false);
    while (k < ndl && dl[k] < info->id) k++;
    if (k < ndl && dl[k] == info->id)
      kept[nkept++] = info;
    else
      vmt_mx_thread_info_free(info);
  }
  vmt__mx_info_pool_end(&pool);
  vmt__mx_stacks_end(&stacks);
  vmt__registry_release(snap);
  if (rc == 0) rc = put_deadlocks(t, kept, nkept, dl, ndl);
  if (rc == 0) rc = put_categories(t);
  if (out) text_flush(t, out, true);
  for (size_t i = 0; i < nkept; i++) vmt_mx_thread_info_free(kept[i]);
  free(kept);
  free(dl);
  if (rc == 0 && t->oom) rc = -ENOMEM;
  if (rc == 0 && out && (fflush(out) != 0 || ferror(out))) rc = -EIO;
  return rc;
}

int vmt__mx_write_dump(FILE *out, const void *caller_pc) {
  text_t t = {0};
  int rc = write_dump(&t, out, caller_pc);
  free(t.buf);
  return rc;
}

__attribute__((noinline)) int vmt_mx_print_thread_dump(FILE *out) {
  if (!out) return -EINVAL;
  int cancel = vmt__mx_cancel_off();   /* the stream's writes are cancellation points */
  int rc = vmt__mx_write_dump(out, VMT__MX_CALLER_PC());
  vmt__mx_cancel_restore(cancel);
  return rc;
}

/* The memstream form, for the JSON dump (dump_json.c). */
int vmt__mx_dump_to_string(vmt__mx_dump_writer_fn writer, const void *caller_pc, char **out,
                           size_t *len) {
  if (!out || !len) return -EINVAL;
  char *buf = NULL;
  size_t size = 0;
  FILE *f = vmt__fault_hit(VMT__FAULT_ALLOC) ? NULL : open_memstream(&buf, &size);
  if (!f) return -ENOMEM;
  int cancel = vmt__mx_cancel_off();
  int rc = writer(f, caller_pc);
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
  if (!out || !len) return -EINVAL;
  text_t t = {0};
  int rc = write_dump(&t, NULL, VMT__MX_CALLER_PC());
  if (rc == 0) {
    put_char(&t, '\0');
    if (t.oom) rc = -ENOMEM;
  }
  if (rc) {
    free(t.buf);
    return rc;
  }
  *out = t.buf;
  *len = t.len - 1;
  return 0;
}
