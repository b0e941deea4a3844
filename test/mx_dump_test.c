/*
 * test/mx_dump_test.c: the jstack-style thread dump and deadlock detection, ported from what
 * OpenJDK's ThreadMXBean tests (MonitorDeadlock, SynchronizerDeadlock, FindDeadlocks) and
 * jstack's output check: no deadlock gives none (Java: null); a monitor cycle is found by both
 * finders, a cycle through a synchronizer only by findDeadlockedThreads; the dump shows each
 * thread's header, state, the lock it waits for and its owner, the locks it holds, and one
 * deadlock section per cycle.
 *
 * The deadlocked threads can never be released, so that test runs last and the process ends
 * with them blocked (as OpenJDK's tests leave theirs); their locks stay reachable from globals.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include "mx_util.h"
#include "waits_util.h"

static int count_of(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

static void bad_arguments(void **state) {
  (void)state;
  char *s;
  size_t len;
  int64_t *ids;
  size_t n;
  assert_int_equal(vmt_mx_print_thread_dump(NULL), -EINVAL);
  assert_int_equal(vmt_mx_thread_dump_to_string(NULL, &len), -EINVAL);
  assert_int_equal(vmt_mx_thread_dump_to_string(&s, NULL), -EINVAL);
  assert_int_equal(vmt_mx_find_deadlocked_threads(NULL, &n), -EINVAL);
  assert_int_equal(vmt_mx_find_monitor_deadlocked_threads(&ids, NULL), -EINVAL);
}

static void no_deadlock_gives_null_and_no_section(void **state) {
  (void)state;
  int64_t *ids = (int64_t *)1;
  size_t n = 7;
  assert_int_equal(vmt_mx_find_deadlocked_threads(&ids, &n), 0);
  assert_null(ids);
  assert_int_equal(n, 0);
  ids = (int64_t *)1;
  assert_int_equal(vmt_mx_find_monitor_deadlocked_threads(&ids, &n), 0);
  assert_null(ids);
  gate_t g;
  vmt_thread_t *t = start_gated(&g, "plain \"quoted\" name", true);
  char *s;
  size_t len;
  assert_int_equal(vmt_mx_thread_dump_to_string(&s, &len), 0);
  assert_int_equal(strlen(s), len);
  assert_non_null(strstr(s, "Full thread dump vmthread "));
  /* The first line is the UTC time stamp, formatted by hand (no time-zone lock): it must be
   * the civil date and time libc computes for the same second, give or take the seconds
   * between the two reads. */
  {
    int y, mo, d, h, mi, sec;
    char zone[8];
    assert_int_equal(sscanf(s, "%4d-%2d-%2d %2d:%2d:%2d %3s", &y, &mo, &d, &h, &mi, &sec, zone), 7);
    assert_string_equal(zone, "UTC");
    struct tm stamp = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d,
                       .tm_hour = h, .tm_min = mi, .tm_sec = sec};
    time_t printed = timegm(&stamp);
    /* The dump's clock, not time(NULL): glibc's time() is the kernel's coarse seconds, updated
     * at the tick, and can still show the previous second after the dump read the new one. */
    struct timespec now;
    assert_int_equal(clock_gettime(CLOCK_REALTIME, &now), 0);
    assert_true(printed <= now.tv_sec && now.tv_sec - printed <= 5);
  }
  char head[128];
  snprintf(head, sizeof(head), "\"plain \"quoted\" name\" #%lld daemon prio=5",
           (long long)vmt_thread_id(t));
  const char *line = strstr(s, head);
  assert_non_null(line);
  /* jstack's "nid=0x<native id>": the kernel tid in hex, which is how a thread seen in top -H
   * is found in a HotSpot dump. jstack's "tid=" is the address of HotSpot's thread object: a
   * decimal kernel tid under that name would mislead readers and parsers of jstack output. */
  char nid[32];
  snprintf(nid, sizeof(nid), " nid=0x%x ", (unsigned)vmt_thread_tid(t));
  const char *eol = strchr(line, '\n');
  const char *at = strstr(line, nid);
  assert_true(at != NULL && at < eol);
  const char *tid = strstr(line, " tid=");
  assert_true(tid == NULL || tid > eol);
  assert_non_null(strstr(s, "java.lang.Thread.State: RUNNABLE"));
  assert_null(strstr(s, "deadlock"));
  free(s);
  finish_gated(&g, t);
}

static void dump_shows_held_and_wanted_locks(void **state) {
  (void)state;
  vmt_thread_t *self;
  assert_int_equal(vmt_thread_attach(NULL, &self), 0);
  vmt_monitor_t *held, *wanted;
  assert_int_equal(vmt_monitor_create(&held, "held-one"), 0);
  assert_int_equal(vmt_monitor_create(&wanted, "wanted-one"), 0);
  assert_int_equal(vmt_monitor_enter(held), 0);
  assert_int_equal(vmt_monitor_enter(wanted), 0);
  vmt_thread_t *t = start_named("waiter", false, enter_and_leave, wanted);
  assert_true(await_state(t, VMT_THREAD_BLOCKED));

  FILE *f = tmpfile();
  assert_non_null(f);
  assert_int_equal(vmt_mx_print_thread_dump(f), 0);
  long size = ftell(f);
  assert_true(size > 0);
  char *s = calloc(1, (size_t)size + 1);
  rewind(f);
  assert_int_equal(fread(s, 1, (size_t)size, f), (size_t)size);
  fclose(f);

  char want[256], wanted_name[128], held_name[128];
  vmt_monitor_describe(wanted, wanted_name, sizeof(wanted_name));
  vmt_monitor_describe(held, held_name, sizeof(held_name));
  const char *block = strstr(s, "\"waiter\" #");
  assert_non_null(block);
  assert_non_null(strstr(block, "waiting for monitor entry"));
  assert_non_null(strstr(block, "java.lang.Thread.State: BLOCKED (on object monitor)"));
  snprintf(want, sizeof(want), "\t- waiting to lock <%s> (a vmt.Monitor) (owned by \"%s\" #%lld)\n",
           wanted_name,
           vmt_thread_name(self), (long long)vmt_thread_id(self));
  assert_non_null(strstr(block, want));
  /* The attached main thread holds both; its own native frames are in the dump. */
  snprintf(want, sizeof(want), "\"%s\" #%lld", vmt_thread_name(self),
           (long long)vmt_thread_id(self));
  const char *mine = strstr(s, want);
  assert_non_null(mine);
  snprintf(want, sizeof(want), "\t- locked <%s> (a vmt.Monitor)\n", held_name);
  assert_non_null(strstr(mine, want));
  snprintf(want, sizeof(want), "\t- locked <%s> (a vmt.Monitor)\n", wanted_name);
  assert_non_null(strstr(mine, want));
  assert_non_null(strstr(mine, "\tat "));
  free(s);

  assert_int_equal(vmt_monitor_exit(wanted), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  vmt_thread_release(t);
  assert_int_equal(vmt_monitor_exit(held), 0);
  assert_int_equal(vmt_monitor_destroy(held), 0);
  assert_int_equal(vmt_monitor_destroy(wanted), 0);
  assert_int_equal(vmt_thread_detach(), 0);
}

static void dump_shows_a_monitor_wait(void **state) {
  (void)state;
  waiter_t w = {.notified = false};
  assert_int_equal(vmt_monitor_create(&w.m, "cond"), 0);
  vmt_thread_t *t = start_named("in-wait", false, wait_on_monitor, &w);
  assert_true(await_state(t, VMT_THREAD_WAITING));
  char *s;
  size_t len;
  assert_int_equal(vmt_mx_thread_dump_to_string(&s, &len), 0);
  const char *blk = strstr(s, "\"in-wait\" #");
  assert_non_null(blk);
  assert_non_null(strstr(blk, "in Object.wait()"));
  assert_non_null(strstr(blk, "java.lang.Thread.State: WAITING (on object monitor)"));
  char name[128], want[192];
  vmt_monitor_describe(w.m, name, sizeof(name));
  snprintf(want, sizeof(want), "\t- waiting on <%s> (a vmt.Monitor)\n", name);
  assert_non_null(strstr(blk, want));
  free(s);
  waiter_release(&w);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  vmt_thread_release(t);
  assert_int_equal(vmt_monitor_destroy(w.m), 0);
}

/* ---- What kind of wait: jstack's state detail (test/waits_util.h has the table) ---------- */
static void dump_names_the_kind_of_each_wait(void **state) {
  (void)state;
  waits_t w;
  waits_start(&w);
  const wait_kind_t *k = wait_kinds();
  char *s;
  size_t len;
  assert_int_equal(vmt_mx_thread_dump_to_string(&s, &len), 0);
  int wrong = 0;
  for (int i = 0; i < WAITS_N; i++) {
    char head[64], line[96];
    snprintf(head, sizeof(head), "\"%s\" #", k[i].name);
    const char *blk = strstr(s, head);
    assert_non_null(blk);
    const char *end = strstr(blk, "\n\n");   /* the block ends at its first empty line */
    assert_non_null(end);
    snprintf(line, sizeof(line), "java.lang.Thread.State: %s\n", k[i].line);
    const char *at = strstr(blk, line), *status = strstr(blk, k[i].status);
    /* The lock it waits on, as jstack's "- waiting on <...> (a java.lang.Thread)" for a join. */
    char lock[64] = "";
    if (k[i].lock_class) snprintf(lock, sizeof(lock), "(a %s)", k[i].lock_class);
    const char *lk = lock[0] ? strstr(blk, lock) : blk;
    if (at == NULL || at > end || status == NULL || status > end || lk == NULL || lk > end) {
      print_message("%s: want \"%s\" and \"%s\" in:\n%.*s\n", k[i].name, k[i].status,
                    k[i].line, (int)(end - blk), blk);
      wrong++;
    }
  }
  free(s);
  assert_int_equal(wrong, 0);
  waits_finish(&w);
}

/* ---- Deadlocks (last: they never end) ----------------------------------------------------- */
static vmt_monitor_t *mon_a, *mon_b, *mon_c;
static vmt_sync_t *sync_d;
static pthread_barrier_t pair_ab, pair_cd;

static void *dl_a(void *arg) {
  (void)arg;
  vmt_monitor_enter(mon_a);
  pthread_barrier_wait(&pair_ab);
  vmt_monitor_enter(mon_b);
  return NULL;
}
static void *dl_b(void *arg) {
  (void)arg;
  vmt_monitor_enter(mon_b);
  pthread_barrier_wait(&pair_ab);
  vmt_monitor_enter(mon_a);
  return NULL;
}
static void *dl_c(void *arg) {
  (void)arg;
  vmt_monitor_enter(mon_c);
  pthread_barrier_wait(&pair_cd);
  vmt_sync_lock(sync_d);
  return NULL;
}
static void *dl_d(void *arg) {
  (void)arg;
  vmt_sync_lock(sync_d);
  pthread_barrier_wait(&pair_cd);
  vmt_monitor_enter(mon_c);
  return NULL;
}

static void deadlocks_are_found_and_dumped(void **state) {
  (void)state;
  assert_int_equal(vmt_monitor_create(&mon_a, "mon-a"), 0);
  assert_int_equal(vmt_monitor_create(&mon_b, "mon-b"), 0);
  assert_int_equal(vmt_monitor_create(&mon_c, "mon-c"), 0);
  assert_int_equal(vmt_sync_create(&sync_d, "sync-d"), 0);
  pthread_barrier_init(&pair_ab, NULL, 2);
  pthread_barrier_init(&pair_cd, NULL, 2);
  vmt_thread_t *a = start_named("dl-a", true, dl_a, NULL);
  vmt_thread_t *b = start_named("dl-b", true, dl_b, NULL);
  vmt_thread_t *c = start_named("dl-c", true, dl_c, NULL);
  vmt_thread_t *d = start_named("dl-d", true, dl_d, NULL);
  assert_true(await_state(a, VMT_THREAD_BLOCKED));
  assert_true(await_state(b, VMT_THREAD_BLOCKED));
  assert_true(await_state(c, VMT_THREAD_WAITING));
  assert_true(await_state(d, VMT_THREAD_BLOCKED));
  int64_t ia = vmt_thread_id(a), ib = vmt_thread_id(b), ic = vmt_thread_id(c),
          id = vmt_thread_id(d);

  int64_t *ids;
  size_t n;
  assert_int_equal(vmt_mx_find_monitor_deadlocked_threads(&ids, &n), 0);
  /* n ids holding each of the n wanted (distinct) ids: exactly that set, in any order. */
  assert_int_equal(n, 2);
  assert_true(ids_contain(ids, n, ia) && ids_contain(ids, n, ib));
  vmt_mx_ids_free(ids);
  assert_int_equal(vmt_mx_find_deadlocked_threads(&ids, &n), 0);
  assert_int_equal(n, 4);
  const int64_t want_ids[4] = {ia, ib, ic, id};
  for (int i = 0; i < 4; i++) assert_true(ids_contain(ids, n, want_ids[i]));
  vmt_mx_ids_free(ids);

  char *s;
  size_t len;
  assert_int_equal(vmt_mx_thread_dump_to_string(&s, &len), 0);
  assert_int_equal(count_of(s, "Found one Java-level deadlock:\n"), 2);
  assert_non_null(strstr(s, "Found 2 deadlocks.\n"));
  char mon[128], want[512];
  /* dl-a: blocked on mon-b, owned by dl-b, holding mon-a. */
  snprintf(want, sizeof(want), "\"dl-a\" #%lld daemon prio=5", (long long)ia);
  const char *blk = strstr(s, want);
  assert_non_null(blk);
  assert_non_null(strstr(blk, "java.lang.Thread.State: BLOCKED (on object monitor)"));
  vmt_monitor_describe(mon_b, mon, sizeof(mon));
  snprintf(want, sizeof(want), "\t- waiting to lock <%s> (a vmt.Monitor) (owned by \"dl-b\" #%lld)\n", mon,
           (long long)ib);
  assert_non_null(strstr(blk, want));
  vmt_monitor_describe(mon_a, mon, sizeof(mon));
  snprintf(want, sizeof(want), "\t- locked <%s> (a vmt.Monitor)\n", mon);
  assert_non_null(strstr(blk, want));
  /* dl-c: parked on sync-d owned by dl-d. */
  snprintf(want, sizeof(want), "\"dl-c\" #%lld", (long long)ic);
  blk = strstr(s, want);
  assert_non_null(blk);
  assert_non_null(strstr(blk, "java.lang.Thread.State: WAITING (parking)"));
  vmt_sync_describe(sync_d, mon, sizeof(mon));
  snprintf(want, sizeof(want), "\t- parking to wait for <%s> (a vmt.Synchronizer) (owned by \"dl-d\" #%lld)\n",
           mon,
           (long long)id);
  assert_non_null(strstr(blk, want));
  /* dl-d holds the synchronizer. */
  snprintf(want, sizeof(want), "\"dl-d\" #%lld", (long long)id);
  blk = strstr(s, want);
  snprintf(want, sizeof(want), "   Locked ownable synchronizers:\n\t- <%s> (a vmt.Synchronizer)\n",
           mon);
  assert_non_null(strstr(blk, want));
  /* The deadlock section names each edge of each cycle. */
  const char *sect = strstr(s, "Found one Java-level deadlock:");
  vmt_monitor_describe(mon_b, mon, sizeof(mon));
  snprintf(want, sizeof(want),
           "\"dl-a\" #%lld:\n  waiting to lock monitor <%s> (a vmt.Monitor),\n"
           "  which is held by \"dl-b\" #%lld\n",
           (long long)ia, mon, (long long)ib);
  assert_non_null(strstr(sect, want));
  vmt_sync_describe(sync_d, mon, sizeof(mon));
  snprintf(want, sizeof(want),
           "\"dl-c\" #%lld:\n  waiting for ownable synchronizer <%s> (a vmt.Synchronizer),\n"
           "  which is held by \"dl-d\" #%lld\n",
           (long long)ic, mon, (long long)id);
  assert_non_null(strstr(sect, want));
  free(s);

  /* The creator's references go; the threads stay blocked until the process ends. */
  vmt_thread_release(a);
  vmt_thread_release(b);
  vmt_thread_release(c);
  vmt_thread_release(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(bad_arguments),
      cmocka_unit_test(no_deadlock_gives_null_and_no_section),
      cmocka_unit_test(dump_shows_held_and_wanted_locks),
      cmocka_unit_test(dump_shows_a_monitor_wait),
      cmocka_unit_test(dump_names_the_kind_of_each_wait),
      cmocka_unit_test(deadlocks_are_found_and_dumped),
  };
  return cmocka_run_group_tests_name("mx_dump", tests, NULL, NULL);
}
