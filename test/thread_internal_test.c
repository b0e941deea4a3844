/*
 * test/thread_internal_test.c: the thread module's internals: exact counters through start and
 * exit sequences (peak reset included), the registry's snapshots, lookups and reclamation,
 * internal threads, the detaching of unjoined threads, injected pthread_create and allocation
 * failures, tombstones, the stack size rule, the fork child, and the allocation counters.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jemalloc/jemalloc.h>

#include "runtime/registry/registry_impl.h"
#include "runtime/thread/thread_impl.h"
#include "test/cpu_burn.h"
#include "test/reliability.h"
#include "test/thread_util.h"

static vmt__counts_t counts(void) {
  vmt__counts_t c;
  vmt__registry_counts(&c);
  return c;
}

static size_t snapshot_size(void) {
  const vmt__snapshot_t *s = vmt__registry_acquire();
  size_t n = 0;
  for (size_t i = 0; i < s->count; i++)
    if (atomic_load(&s->threads[i]->registry_state) == VMT__REG_IN) n++;
  vmt__registry_release(s);
  return n;
}

static vmt__category_t *category(const char *name) {
  for (vmt__category_t *c = vmt__categories(); c; c = c->next)
    if (strcmp(c->name, name) == 0) return c;
  return NULL;
}

static int teardown(void **state) {
  (void)state;
  vmt__fault_disarm_all();
  return 0;
}

/* ---- counters -------------------------------------------------------------------------- */
static void counters_are_exact_through_starts_and_exits(void **state) {
  (void)state;
  vmt__counts_t c0 = counts();
  latch_t g;
  latch_init(&g);
  enum { N = 5 };
  vmt_thread_t *t[N];
  for (int i = 0; i < N; i++) {
    vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_DAEMON | VMT_THREAD_OPT_CATEGORY,
                              .daemon = i % 2 == 0,
                              .category = "counted"};
    assert_int_equal(vmt_thread_start_ex(&t[i], &o, wait_for_latch, &g), 0);
    vmt__counts_t c = counts();
    /* Counted the moment start returns, whether or not the child ran. */
    assert_int_equal(c.live, c0.live + i + 1);
    assert_int_equal(c.total_started, c0.total_started + i + 1);
    assert_int_equal(c.daemon, c0.daemon + (i + 2) / 2);
    assert_true(c.peak >= c.live);
    assert_int_equal(atomic_load(&category("counted")->live), i + 1);
    const vmt__snapshot_t *s = vmt__registry_acquire();
    vmt_thread_t *found = vmt__snapshot_find(s, vmt_thread_id(t[i]));
    assert_ptr_equal(found, t[i]);
    assert_true(vmt__thread_is_listed(found));
    vmt__registry_release(s);
  }
  assert_int_equal(counts().peak, c0.live + N > c0.peak ? c0.live + N : c0.peak);
  latch_open(&g);
  for (int i = 0; i < N; i++) {
    /* join returns only after the bookkeeping: the counters have moved already. */
    assert_int_equal(vmt_thread_join(t[i], NULL), 0);
    vmt__counts_t c = counts();
    assert_true(c.live <= c0.live + N - 1 - i);
    const vmt__snapshot_t *s = vmt__registry_acquire();
    assert_null(vmt__snapshot_find(s, vmt_thread_id(t[i])));
    vmt__registry_release(s);
  }
  vmt__counts_t c = counts();
  assert_int_equal(c.live, c0.live);
  assert_int_equal(c.daemon, c0.daemon);
  assert_int_equal(c.total_started, c0.total_started + N);
  assert_int_equal(atomic_load(&category("counted")->live), 0);
  assert_true(atomic_load(&category("counted")->exited_cpu_ns) > 0);
  assert_true(c.peak >= c0.live + N);
  vmt__registry_reset_peak();
  assert_int_equal(counts().peak, c0.live);
  /* A new start raises the peak from the reset value. */
  vmt_thread_t *u;
  latch_t g2;
  latch_init(&g2);
  assert_int_equal(vmt_thread_start(&u, wait_for_latch, &g2), 0);
  assert_int_equal(counts().peak, c0.live + 1);
  latch_open(&g2);
  assert_int_equal(vmt_thread_join(u, NULL), 0);
  assert_int_equal(counts().peak, c0.live + 1);
  for (int i = 0; i < N; i++) vmt_thread_release(t[i]);
  vmt_thread_release(u);
}

static void *attached_body(void *arg) {
  vmt__counts_t *seen = arg;
  vmt_thread_t *me;
  vmt_thread_attach(NULL, &me);
  vmt__registry_counts(&seen[0]);
  vmt_thread_attach(NULL, &me);
  vmt__registry_counts(&seen[1]);  /* nested: counted once */
  vmt_thread_detach();
  vmt_thread_detach();
  vmt__registry_counts(&seen[2]);
  return NULL;
}

static void attach_counts_once(void **state) {
  (void)state;
  vmt__counts_t c0 = counts(), seen[3];
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, attached_body, seen), 0);
  pthread_join(th, NULL);
  assert_int_equal(seen[0].live, c0.live + 1);
  assert_int_equal(seen[0].total_started, c0.total_started + 1);
  assert_int_equal(seen[1].live, c0.live + 1);
  assert_int_equal(seen[1].total_started, c0.total_started + 1);
  assert_int_equal(seen[2].live, c0.live);
  assert_int_equal(counts().total_started, c0.total_started + 1);
}

/* The end hook an attach arms (runtime/os.h; pthread_setspecific, whose failure the attach
 * once ignored): an attach that cannot arm it must fail, or the thread stays listed after it
 * ends, since nothing would detach it. */
typedef struct unarmed {
  int rc;
  vmt__counts_t attached;
} unarmed_t;

static void *attach_without_end_hook(void *arg) {
  unarmed_t *u = arg;
  vmt_thread_t *me = NULL;
  u->rc = vmt_thread_attach(NULL, &me);
  vmt__registry_counts(&u->attached);
  return NULL;   /* ends attached, if the attach succeeded */
}

static void attach_fails_when_its_end_hook_cannot_be_armed(void **state) {
  (void)state;
  vmt__counts_t c0 = counts();
  unarmed_t u = {0};
  vmt__fault_arm(VMT__FAULT_THREAD_END, 0, 1, ENOMEM);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, attach_without_end_hook, &u), 0);
  assert_int_equal(pthread_join(th, NULL), 0);
  bool injected = vmt__fault_injected(VMT__FAULT_THREAD_END) == 1;
  vmt__fault_disarm_all();
  assert_true(injected);
  assert_int_equal(counts().live, c0.live);   /* not listed after its end */
  assert_int_equal(u.rc, -ENOMEM);
  assert_int_equal(u.attached.live, c0.live);
  assert_int_equal(counts().total_started, c0.total_started);
  /* And with the hook armed, a thread that ends attached leaves the registry. */
  assert_int_equal(pthread_create(&th, NULL, attach_without_end_hook, &u), 0);
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_int_equal(u.rc, 0);
  assert_int_equal(u.attached.live, c0.live + 1);
  assert_int_equal(counts().live, c0.live);
}

typedef struct cpu_probe {
  int64_t before_attach, after_attach, before_detach, after_detach;
} cpu_probe_t;

static void *attached_burner(void *arg) {
  cpu_probe_t *p = arg;
  burn_cpu_ms(10);  /* before attach: not the category's */
  p->before_attach = vmt_current_thread_cpu_time(VMT_CPU_TOTAL);
  vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_CATEGORY, .category = "attached-cpu"};
  vmt_thread_t *me;
  vmt_thread_attach(&o, &me);
  p->after_attach = vmt_current_thread_cpu_time(VMT_CPU_TOTAL);
  burn_cpu_ms(10);
  p->before_detach = vmt_current_thread_cpu_time(VMT_CPU_TOTAL);
  vmt_thread_detach();
  p->after_detach = vmt_current_thread_cpu_time(VMT_CPU_TOTAL);
  return NULL;
}

static void category_cpu_counts_only_the_attached_span(void **state) {
  (void)state;
  cpu_probe_t p;
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, attached_burner, &p), 0);
  pthread_join(th, NULL);
  vmt__category_t *c = category("attached-cpu");
  assert_non_null(c);
  int64_t added = atomic_load(&c->exited_cpu_ns);
  /* At least what ran between attach and detach, at most what ran from just before the attach
   * to just after the detach: the 10 ms burnt before attaching are not the category's. */
  assert_true(added >= p.before_detach - p.after_attach);
  assert_true(added <= p.after_detach - p.before_attach);
  assert_int_equal(atomic_load(&c->live), 0);
}

/* ---- internal threads ------------------------------------------------------------------ */
static void internal_threads_are_neither_counted_nor_listed(void **state) {
  (void)state;
  vmt__counts_t c0 = counts();
  latch_t g;
  latch_init(&g);
  vmt_thread_t *t;
  assert_int_equal(vmt__thread_start_internal(&t, "vmt-dump", wait_for_latch, &g), 0);
  vmt__counts_t c = counts();
  assert_int_equal(c.live, c0.live);
  assert_int_equal(c.total_started, c0.total_started);
  const vmt__snapshot_t *s = vmt__registry_acquire();
  vmt_thread_t *found = vmt__snapshot_find(s, vmt_thread_id(t));
  assert_ptr_equal(found, t);          /* in the snapshot ... */
  assert_false(vmt__thread_is_listed(found));  /* ... but never listed */
  vmt__registry_release(s);
  latch_open(&g);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(counts().total_started, c0.total_started);
  vmt_thread_release(t);
}

/* ---- references ------------------------------------------------------------------------ */
/* Tasks of this process that the kernel still has (their tids not yet cleared). */
static int task_count(void) {
  DIR *d = opendir("/proc/self/task");
  if (d == NULL) return -1;
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

static void released_unjoined_threads_are_detached(void **state) {
  (void)state;
  /* Nobody joins these: the record's last reference must detach each pthread, or glibc keeps
   * its stack (8 MiB of address space here) mapped for good. Detached, an ended thread's stack
   * is cached by glibc and reused by the next round's threads. */
  enum { ROUNDS = 8, N = 32 };
  const size_t stack = 8 * 1024 * 1024, stacks = N * stack;
  vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_STACK_SIZE, .stack_size = stack};
  int tasks0 = task_count();
  assert_true(tasks0 > 0);
  size_t vm[ROUNDS];
  for (int r = 0; r < ROUNDS; r++) {
    for (int i = 0; i < N; i++) {
      vmt_thread_t *t;
      assert_int_equal(vmt_thread_start_ex(&t, &o, return_arg, NULL), 0);
      assert_int_equal(vmt_thread_release(t), 0);
    }
    for (int spins = 0; task_count() > tasks0 && spins < 10000; spins++) {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    }
    vmt__registry_reclaim();  /* drops the registry's references (the last, or the thread's is) */
    vm[r] = rel_vm_size();
  }
  /* Never detached, each round adds N stacks: 6 * 256 MiB from the end of round 2 to the last. */
  print_message("VmSize after round 2: %zu MiB, after round %d: %zu MiB\n", vm[1] >> 20, ROUNDS,
                vm[ROUNDS - 1] >> 20);
  assert_true(vm[ROUNDS - 1] < vm[1] + 2 * stacks);
}

/* ---- injected failures ----------------------------------------------------------------- */
static void pthread_create_failure_leaves_nothing_behind(void **state) {
  (void)state;
  int errs[] = {EAGAIN, ENOMEM};
  for (int k = 0; k < 2; k++) {
    vmt__registry_reclaim();
    vmt__counts_t c0 = counts();
    size_t n0 = snapshot_size();
    size_t pool0 = vmt__record_pool_free_count();
    vmt__fault_arm(VMT__FAULT_PTHREAD_CREATE, 0, 1, errs[k]);
    vmt_thread_t *t = (vmt_thread_t *)&t;
    assert_int_equal(vmt_thread_start(&t, return_arg, NULL), -errs[k]);
    assert_null(t);
    assert_int_equal(vmt__fault_injected(VMT__FAULT_PTHREAD_CREATE), 1);
    vmt__counts_t c = counts();
    assert_int_equal(c.live, c0.live);
    assert_int_equal(c.peak, c0.peak);
    assert_int_equal(c.daemon, c0.daemon);
    assert_int_equal(c.total_started, c0.total_started);
    assert_int_equal(snapshot_size(), n0);
    /* The record goes back to the pool once no reader can see it (it came from the pool, or
     * from malloc when the pool was empty). */
    vmt__registry_reclaim();
    assert_int_equal(vmt__record_pool_free_count(), pool0 > 0 ? pool0 : 1);
  }
}

static void allocation_failures_leave_nothing_behind(void **state) {
  (void)state;
  /* Fail the 1st, 2nd, ... allocation of a start until one start succeeds. */
  bool succeeded = false;
  for (int skip = 0; skip < 10 && !succeeded; skip++) {
    vmt__registry_reclaim();
    vmt__counts_t c0 = counts();
    size_t n0 = snapshot_size();
    size_t pool0 = vmt__record_pool_free_count();
    vmt__fault_arm(VMT__FAULT_ALLOC, skip, 1, ENOMEM);
    vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_CATEGORY, .category = "fresh-category"};
    if (skip > 0) o.flags = 0;  /* only the first round asks for a new category */
    vmt_thread_t *t;
    latch_t g;  /* keeps a started child from reaching its exit path while the seam is armed */
    latch_init(&g);
    int rc = vmt_thread_start_ex(&t, &o, wait_for_latch, &g);
    bool injected = vmt__fault_injected(VMT__FAULT_ALLOC) == 1;
    vmt__fault_disarm_all();
    if (rc == 0) {
      assert_false(injected);  /* every allocation of a start is behind the seam */
      assert_true(skip >= 3);  /* record, name, snapshot at least */
      succeeded = true;
      latch_open(&g);
      assert_int_equal(vmt_thread_join(t, NULL), 0);
      vmt_thread_release(t);
      break;
    }
    assert_int_equal(rc, -ENOMEM);
    assert_true(injected);
    vmt__counts_t c = counts();
    assert_int_equal(c.live, c0.live);
    assert_int_equal(c.peak, c0.peak);
    assert_int_equal(c.total_started, c0.total_started);
    assert_int_equal(snapshot_size(), n0);
    vmt__registry_reclaim();
    /* skip 0 fails the record itself; later failures give the record back. */
    assert_int_equal(vmt__record_pool_free_count(), skip == 0 || pool0 > 0 ? pool0 : 1);
  }
  assert_true(succeeded);
}

/* The pool hands out its lowest-addressed free record first (record.c): threads that end in
 * any order and are started again get records in address order, as fresh allocations are, so
 * a walk in start order reads neighbouring records. Taken last in, first out, they came back
 * in the order the records were given back, here a shuffle. */
static void recycled_records_come_back_in_address_order(void **state) {
  (void)state;
  enum { K = 48 };
  vmt_thread_t *t[K];
  latch_t g;
  latch_init(&g);
  for (int i = 0; i < K; i++) assert_int_equal(vmt_thread_start(&t[i], wait_for_latch, &g), 0);
  latch_open(&g);
  for (int i = 0; i < K; i++) assert_int_equal(vmt_thread_join(t[i], NULL), 0);
  uint64_t rng = 0x2545f4914f6cdd1dull;
  for (int i = K - 1; i > 0; i--) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    int j = (int)(rng % (uint64_t)(i + 1));
    vmt_thread_t *x = t[i];
    t[i] = t[j];
    t[j] = x;
  }
  size_t pool0 = vmt__record_pool_free_count();
  for (int i = 0; i < K; i++) {
    vmt_thread_release(t[i]);
    vmt__registry_reclaim();   /* each record reaches the pool in the shuffled order */
  }
  assert_true(vmt__record_pool_free_count() >= pool0 + K);
  latch_init(&g);
  for (int i = 0; i < K; i++) assert_int_equal(vmt_thread_start(&t[i], wait_for_latch, &g), 0);
  int out_of_order = 0;
  for (int i = 1; i < K; i++) out_of_order += (uintptr_t)t[i] <= (uintptr_t)t[i - 1];
  latch_open(&g);
  for (int i = 0; i < K; i++) {
    assert_int_equal(vmt_thread_join(t[i], NULL), 0);
    vmt_thread_release(t[i]);
  }
  assert_int_equal(out_of_order, 0);
}

static void exits_tombstone_until_a_rebuild(void **state) {
  (void)state;
  /* A rebuild first (a tombstone to drop makes one): then the array has room for the appends
   * below (64 slots at least). */
  vmt_thread_t *x;
  assert_int_equal(vmt_thread_start(&x, return_arg, NULL), 0);
  assert_int_equal(vmt_thread_join(x, NULL), 0);
  vmt_thread_release(x);
  vmt__registry_reclaim();
  vmt__registry_stats_t st;
  vmt__registry_stats(&st);
  assert_int_equal(st.tombstones, 0);
  assert_true(st.capacity >= st.count + 64);
  vmt__counts_t c0 = counts();
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, return_arg, NULL), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(counts().live, c0.live);
  const vmt__snapshot_t *s = vmt__registry_acquire();
  bool present = false;
  for (size_t i = 0; i < s->count; i++) present |= s->threads[i] == t;
  assert_true(present);                                  /* still in the array ... */
  assert_null(vmt__snapshot_find(s, vmt_thread_id(t)));  /* ... but not found */
  assert_false(vmt__thread_is_listed(t));
  vmt__registry_release(s);
  /* The next rebuild drops it; without memory for one, it simply stays a tombstone. */
  vmt__fault_arm(VMT__FAULT_ALLOC, 0, -1, ENOMEM);
  vmt__registry_reclaim();
  vmt__fault_disarm_all();
  s = vmt__registry_acquire();
  present = false;
  for (size_t i = 0; i < s->count; i++) present |= s->threads[i] == t;
  assert_true(present);
  vmt__registry_release(s);
  /* A start appends over the same entries (no copy): the tombstone stays ... */
  const vmt__snapshot_t *before = vmt__registry_acquire();
  vmt_thread_t *u;
  latch_t g;
  latch_init(&g);
  assert_int_equal(vmt_thread_start(&u, wait_for_latch, &g), 0);
  s = vmt__registry_acquire();
  assert_ptr_equal(s->threads, before->threads);
  assert_int_equal(s->count, before->count + 1);
  assert_ptr_equal(s->threads[s->count - 1], u);
  present = false;
  for (size_t i = 0; i < s->count; i++) present |= s->threads[i] == t;
  assert_true(present);
  vmt__registry_release(s);
  vmt__registry_release(before);
  /* ... until a rebuild drops it. */
  vmt__registry_reclaim();
  s = vmt__registry_acquire();
  for (size_t i = 0; i < s->count; i++) assert_ptr_not_equal(s->threads[i], t);
  assert_ptr_equal(vmt__snapshot_find(s, vmt_thread_id(u)), u);
  vmt__registry_release(s);
  latch_open(&g);
  assert_int_equal(vmt_thread_join(u, NULL), 0);
  vmt_thread_release(u);
  vmt_thread_release(t);
}

static void many_exits_compact_without_a_start(void **state) {
  (void)state;
  enum { N = 200 };
  static vmt_thread_t *t[N];
  latch_t g;
  latch_init(&g);
  for (int i = 0; i < N; i++) assert_int_equal(vmt_thread_start(&t[i], wait_for_latch, &g), 0);
  latch_open(&g);
  for (int i = 0; i < N; i++) assert_int_equal(vmt_thread_join(t[i], NULL), 0);
  /* Exits alone rebuilt the snapshot once tombstones outnumbered live entries 2:1. */
  const vmt__snapshot_t *s = vmt__registry_acquire();
  size_t dead = 0;
  for (size_t i = 0; i < s->count; i++)
    dead += atomic_load(&s->threads[i]->registry_state) == VMT__REG_TOMBSTONE;
  assert_true(dead < N);
  assert_true(dead <= 64 || dead <= 2 * (s->count - dead));
  vmt__registry_release(s);
  for (int i = 0; i < N; i++) vmt_thread_release(t[i]);
}

static void *read_kernel_name(void *arg) {
  pthread_getname_np(pthread_self(), arg, 16);
  return NULL;
}

static void *report_tid(void *arg) {
  *(pid_t *)arg = (pid_t)syscall(SYS_gettid);
  return NULL;
}

static void tid_waits_for_the_child_when_the_parent_cannot_know_it(void **state) {
  (void)state;
  /* As on a platform without CLONE_PARENT_SETTID: the parent's bind fails, the child publishes
   * its own tid, and tid() waits for that (or finds it published). */
  for (int i = 0; i < 20; i++) {
    vmt__fault_arm(VMT__FAULT_GETCPUCLOCKID, 0, 1, ESRCH);
    pid_t seen = 0;
    vmt_thread_t *t;
    assert_int_equal(vmt_thread_start(&t, report_tid, &seen), 0);
    pid_t tid = vmt_thread_tid(t);
    assert_int_equal(vmt_thread_join(t, NULL), 0);
    assert_int_equal(vmt__fault_injected(VMT__FAULT_GETCPUCLOCKID), 1);
    assert_true(tid > 0);
    assert_int_equal(tid, seen);
    vmt_thread_release(t);
    vmt__fault_disarm_all();
  }
}

static void naming_failure_is_not_fatal(void **state) {
  (void)state;
  vmt__fault_arm(VMT__FAULT_SETNAME, 0, 1, EPERM);
  vmt_thread_options_t o = {.flags = VMT_THREAD_OPT_NAME, .name = "never-named"};
  char kernel_name[16] = "";
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start_ex(&t, &o, read_kernel_name, kernel_name), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(vmt__fault_injected(VMT__FAULT_SETNAME), 1);
  /* The thread ran under its inherited kernel name; the runtime kept the names it was given. */
  assert_string_not_equal(kernel_name, "never-named");
  assert_string_equal(vmt_thread_name(t), "never-named");
  assert_string_equal(vmt_thread_os_name(t), "never-named");
  vmt_thread_release(t);
}

/* ---- reclamation ----------------------------------------------------------------------- */
static void a_protected_snapshot_keeps_its_records(void **state) {
  (void)state;
  vmt_thread_t *t;
  latch_t g;
  latch_init(&g);
  assert_int_equal(vmt_thread_start(&t, wait_for_latch, &g), 0);
  int64_t id = vmt_thread_id(t);
  const vmt__snapshot_t *held = vmt__registry_acquire();
  assert_ptr_equal(vmt__snapshot_find(held, id), t);
  latch_open(&g);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(vmt_thread_release(t), 0);
  vmt__registry_reclaim();
  /* The exited thread is gone from the current snapshot; the held one still holds its
   * record, intact (not back in the pool, not recycled), though lookups say it has left. */
  bool held_has_it = false;
  for (size_t i = 0; i < held->count; i++) held_has_it |= held->threads[i] == t;
  assert_true(held_has_it);
  assert_int_equal(__atomic_load_n(&t->magic, __ATOMIC_RELAXED), VMT__THREAD_MAGIC);
  assert_int_equal(vmt_thread_id(t), id);
  assert_null(vmt__snapshot_find(held, id));
  /* A thread that came and went after the held snapshot is not kept for it. */
  vmt_thread_t *later;
  assert_int_equal(vmt_thread_start(&later, return_arg, NULL), 0);
  assert_int_equal(vmt_thread_join(later, NULL), 0);
  assert_int_equal(vmt_thread_release(later), 0);
  vmt__registry_reclaim();
  assert_int_equal(__atomic_load_n(&later->magic, __ATOMIC_RELAXED), 0);
  assert_int_equal(__atomic_load_n(&t->magic, __ATOMIC_RELAXED), VMT__THREAD_MAGIC);
  const vmt__snapshot_t *now = vmt__registry_acquire();
  assert_null(vmt__snapshot_find(now, id));
  vmt__registry_release(now);
  vmt__registry_release(held);
  vmt__registry_reclaim();
  assert_int_equal(__atomic_load_n(&t->magic, __ATOMIC_RELAXED), 0);  /* pooled now */
}

static void snapshots_nest_and_stay_sorted(void **state) {
  (void)state;
  enum { N = 8 };
  vmt_thread_t *t[N];
  latch_t g;
  latch_init(&g);
  for (int i = 0; i < N; i++) assert_int_equal(vmt_thread_start(&t[i], wait_for_latch, &g), 0);
  const vmt__snapshot_t *s[VMT__HAZARDS_PER_THREAD];
  for (int i = 0; i < VMT__HAZARDS_PER_THREAD; i++) {
    s[i] = vmt__registry_acquire();
    assert_non_null(s[i]);
    for (size_t k = 1; k < s[i]->count; k++)
      assert_true(s[i]->threads[k - 1]->id < s[i]->threads[k]->id);
    for (int j = 0; j < N; j++) assert_ptr_equal(vmt__snapshot_find(s[i], t[j]->id), t[j]);
  }
  assert_null(vmt__snapshot_find(s[0], 0));
  assert_null(vmt__snapshot_find(s[0], INT64_MAX));
  for (int i = VMT__HAZARDS_PER_THREAD - 1; i >= 0; i--) vmt__registry_release(s[i]);
  latch_open(&g);
  for (int i = 0; i < N; i++) {
    assert_int_equal(vmt_thread_join(t[i], NULL), 0);
    vmt_thread_release(t[i]);
  }
}

static pthread_barrier_t readers_barrier;
static void *hold_a_snapshot(void *arg) {
  const vmt__snapshot_t *s = vmt__registry_acquire();
  *(bool *)arg = s != NULL;
  pthread_barrier_wait(&readers_barrier);  /* all hold one at once */
  vmt__registry_release(s);
  return NULL;
}

static void more_readers_than_static_hazard_blocks(void **state) {
  (void)state;
  enum { READERS = 80 };  /* 64 blocks are static; the rest are allocated, then reused */
  for (int round = 0; round < 2; round++) {
    pthread_t th[READERS];
    bool ok[READERS];
    pthread_barrier_init(&readers_barrier, NULL, READERS);
    for (int i = 0; i < READERS; i++)
      assert_int_equal(pthread_create(&th[i], NULL, hold_a_snapshot, &ok[i]), 0);
    for (int i = 0; i < READERS; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&readers_barrier);
    for (int i = 0; i < READERS; i++) assert_true(ok[i]);
  }
  /* Blocks of ended threads are reused: the second round needed no new ones. */
  assert_true(vmt__hazard_block_count() <= READERS + 8);
  /* And reclamation still runs (no stale slot pins anything). */
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, return_arg, NULL), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(vmt_thread_release(t), 0);
  vmt__registry_reclaim();
  assert_int_equal(__atomic_load_n(&t->magic, __ATOMIC_RELAXED), 0);
}

/* ---- options ----------------------------------------------------------------------------- */
static void stack_size_rule(void **state) {
  (void)state;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  long platform = sysconf(_SC_THREAD_STACK_MIN);
  size_t lo = VMT__STACK_MIN_BYTES > (size_t)platform ? VMT__STACK_MIN_BYTES : (size_t)platform;
  assert_int_equal(vmt__stack_size_rule(0), 0);
  assert_int_equal(vmt__stack_size_rule(1), lo);
  assert_int_equal(vmt__stack_size_rule(lo + 1), lo + page);
  assert_int_equal(vmt__stack_size_rule(1 << 20), 1 << 20);
  assert_int_equal(vmt__stack_size_rule((1 << 20) + 1), (1 << 20) + page);
  assert_int_equal(vmt__stack_size_rule(VMT__STACK_MAX_BYTES), VMT__STACK_MAX_BYTES);
  assert_int_equal(vmt__stack_size_rule(SIZE_MAX), VMT__STACK_MAX_BYTES);
}

static void utf8_validation(void **state) {
  (void)state;
  assert_true(vmt__utf8_valid("plain", 5));
  assert_true(vmt__utf8_valid("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9));  /* é € 😀 */
  assert_false(vmt__utf8_valid("\x80", 1));
  assert_false(vmt__utf8_valid("\xe2\x82", 2));          /* truncated */
  assert_false(vmt__utf8_valid("\xe0\x80\x80", 3));      /* overlong */
  assert_false(vmt__utf8_valid("\xed\xbf\xbf", 3));      /* surrogate */
  assert_false(vmt__utf8_valid("\xf5\x80\x80\x80", 4));  /* beyond U+10FFFF */
}

/* ---- fork ------------------------------------------------------------------------------ */
static _Atomic int arrived;
static void *arrive_then_wait(void *arg) {
  atomic_fetch_add(&arrived, 1);
  return wait_for_latch(arg);
}

static void fork_child_keeps_only_the_forking_thread(void **state) {
  (void)state;
  latch_t g;
  latch_init(&g);
  enum { N = 3 };
  vmt_thread_t *t[N];
  for (int i = 0; i < N; i++)
    assert_int_equal(vmt_thread_start(&t[i], arrive_then_wait, &g), 0);
  /* Fork only once the threads are parked: a thread still inside the sanitizers' thread start
   * holds their internal locks, which gcc 12's ASan does not reset in the child (a hang). */
  while (atomic_load(&arrived) < N) sched_yield();
  /* One more that has ended but is not joined: its pthread exists only in the parent. */
  vmt_thread_t *ended;
  assert_int_equal(vmt_thread_start(&ended, return_arg, NULL), 0);
  while (vmt_thread_state(ended) != VMT_THREAD_TERMINATED) sched_yield();
  vmt_thread_t *me;
  assert_int_equal(vmt_thread_attach(NULL, &me), 0);
  pid_t pid = fork();
  if (pid == 0) {
    /* Exit codes say which check failed (no cmocka in the child). */
    vmt__counts_t c;
    vmt__registry_counts(&c);
    if (c.live != 1) _exit(10);
    if (snapshot_size() != 1) _exit(11);
    const vmt__snapshot_t *s = vmt__registry_acquire();
    if (vmt__snapshot_find(s, vmt_thread_id(me)) != me) _exit(12);
    for (int i = 0; i < N; i++)
      if (vmt__snapshot_find(s, vmt_thread_id(t[i])) != NULL) _exit(13);
    vmt__registry_release(s);
    if (vmt_thread_tid(me) != getpid()) _exit(14);
    for (int i = 0; i < N; i++) {
      if (vmt_thread_state(t[i]) != VMT_THREAD_TERMINATED) _exit(15);
      if (vmt_thread_join(t[i], NULL) != 0) _exit(16);  /* returns: nothing to wait for */
    }
    if (vmt_thread_join(ended, NULL) != 0) _exit(20);  /* no pthread_join of a parent's thread */
#ifndef __SANITIZE_THREAD__
    /* The runtime works in the child. (TSan kills a multi-threaded process's fork child that
     * starts threads: die_after_fork.) */
    vmt_thread_t *u;
    if (vmt_thread_start(&u, return_arg, NULL) != 0) _exit(17);
    if (vmt_thread_join(u, NULL) != 0) _exit(18);
    vmt__registry_counts(&c);
    if (c.live != 1) _exit(19);
#endif
    _exit(0);
  }
  assert_true(pid > 0);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  /* The parent is untouched. */
  assert_int_equal(vmt_thread_state(t[0]), VMT_THREAD_RUNNABLE);
  assert_int_equal(vmt_thread_join(ended, NULL), 0);
  vmt_thread_release(ended);
  latch_open(&g);
  for (int i = 0; i < N; i++) {
    assert_int_equal(vmt_thread_join(t[i], NULL), 0);
    vmt_thread_release(t[i]);
  }
  assert_int_equal(vmt_thread_detach(), 0);
}

/* ---- allocation counters --------------------------------------------------------------- */
static void *allocate_and_report(void *arg) {
  int64_t *out = arg;
  vmt_thread_t *me = vmt_thread_current();
  /* out[2]: the pointer the runtime found (from its TLS offset) is jemalloc's own. */
  uint64_t *mine = NULL;
  size_t sz = sizeof(mine);
  out[2] = mallctl("thread.allocatedp", &mine, &sz, NULL, 0) == 0 &&
           (const uint64_t *)mine == atomic_load(&me->hot->allocatedp);
  out[0] = vmt__alloc_thread_bytes(me);
  void *volatile p = malloc(100000);
  out[1] = vmt__alloc_thread_bytes(me);
  free(p);
  return NULL;
}

static void allocation_counters_follow_the_allocator(void **state) {
  (void)state;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  /* The sanitizer's malloc replaces jemalloc's: the runtime must notice. */
  assert_false(vmt__alloc_supported());
  int64_t bytes[3];
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, allocate_and_report, bytes), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  vmt_thread_release(t);
  assert_int_equal(bytes[0], -1);
  assert_int_equal(bytes[1], -1);
#else
  assert_true(vmt__alloc_supported());
  int64_t bytes[3];
  int64_t exited0 = vmt__alloc_exited_total();
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, allocate_and_report, bytes), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(bytes[2], 1);
  assert_true(bytes[0] >= 0);
  assert_true(bytes[1] >= bytes[0] + 100000);
  assert_true(vmt__alloc_exited_total() >= exited0 + 100000);
  assert_int_equal(vmt__alloc_thread_bytes(t), -1);  /* ended */
  vmt_thread_release(t);
  /* mallctl failing: the thread runs, its counter is simply unavailable. */
  vmt__fault_arm(VMT__FAULT_MALLCTL, 0, -1, EIO);
  assert_int_equal(vmt_thread_start(&t, allocate_and_report, bytes), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  vmt__fault_disarm_all();
  vmt_thread_release(t);
  assert_int_equal(bytes[0], -1);
  assert_int_equal(bytes[1], -1);
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(counters_are_exact_through_starts_and_exits, teardown),
      cmocka_unit_test_teardown(attach_counts_once, teardown),
      cmocka_unit_test_teardown(attach_fails_when_its_end_hook_cannot_be_armed, teardown),
      cmocka_unit_test_teardown(category_cpu_counts_only_the_attached_span, teardown),
      cmocka_unit_test_teardown(internal_threads_are_neither_counted_nor_listed, teardown),
      cmocka_unit_test_teardown(released_unjoined_threads_are_detached, teardown),
      cmocka_unit_test_teardown(pthread_create_failure_leaves_nothing_behind, teardown),
      cmocka_unit_test_teardown(allocation_failures_leave_nothing_behind, teardown),
      cmocka_unit_test_teardown(exits_tombstone_until_a_rebuild, teardown),
      cmocka_unit_test_teardown(many_exits_compact_without_a_start, teardown),
      cmocka_unit_test_teardown(tid_waits_for_the_child_when_the_parent_cannot_know_it,
                                teardown),
      cmocka_unit_test_teardown(naming_failure_is_not_fatal, teardown),
      cmocka_unit_test_teardown(a_protected_snapshot_keeps_its_records, teardown),
      cmocka_unit_test_teardown(snapshots_nest_and_stay_sorted, teardown),
      cmocka_unit_test_teardown(more_readers_than_static_hazard_blocks, teardown),
      cmocka_unit_test_teardown(stack_size_rule, teardown),
      cmocka_unit_test_teardown(utf8_validation, teardown),
      cmocka_unit_test_teardown(fork_child_keeps_only_the_forking_thread, teardown),
      cmocka_unit_test_teardown(allocation_counters_follow_the_allocator, teardown),
      cmocka_unit_test_teardown(recycled_records_come_back_in_address_order, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
