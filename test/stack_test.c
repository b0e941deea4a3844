/*
 * test/stack_test.c: stack bounds through the public API (vmthread/stack.h): they equal what
 * pthread_getattr_np reports for started, attached and the main thread, whoever asks first;
 * the calling thread's bytes left fall as it recurses and stay inside the bounds; a started
 * thread joined before anyone asked has no bounds any more (-ESRCH), and bad input is -EINVAL.
 * Guard zones, each case in a child process (this binary run again: an overflow that goes wrong
 * kills only the child):
 * an overflow into a zone reaches the VM's handler on the alternate stack with the zone named,
 * in order (reserved, yellow, red) when the handler lets the thread run on; a handler that
 * leaves by siglongjmp can re-arm the zones and meet them again; without a handler the process
 * dies of SIGSEGV after a report naming the zone; other faults reach the handler that was
 * installed before ours; a stack that had zones is plain memory for the next thread.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "test/thread_util.h"
#include "vmthread.h"

typedef struct expected_stack {
  uintptr_t lo, hi;
  size_t guard;
} expected_stack_t;

/* What pthread_getattr_np says about the calling thread. */
static void glibc_stack(expected_stack_t *e) {
  pthread_attr_t attr;
  assert_int_equal(pthread_getattr_np(pthread_self(), &attr), 0);
  void *addr;
  size_t size;
  assert_int_equal(pthread_attr_getstack(&attr, &addr, &size), 0);
  assert_int_equal(pthread_attr_getguardsize(&attr, &e->guard), 0);
  pthread_attr_destroy(&attr);
  e->lo = (uintptr_t)addr;
  e->hi = (uintptr_t)addr + size;
}

static void assert_same(const vmt_stack_info_t *got, const expected_stack_t *want) {
  assert_int_equal(got->lo, want->lo);
  assert_int_equal(got->hi, want->hi);
  assert_int_equal(got->os_guard_size, want->guard);
  assert_int_equal(got->limit, want->lo);   /* no guard zones asked */
}

/* ---- Started threads: the thread asks, or another thread asks ---------------------------- */
typedef struct self_report {
  expected_stack_t want;
  vmt_stack_info_t got;
  int rc;
  size_t left_shallow, left_deep;
  uintptr_t frame;
} self_report_t;

static __attribute__((noinline)) size_t left_at_depth(int depth) {
  volatile char pad[512];
  pad[0] = (char)depth;
  size_t left = depth > 0 ? left_at_depth(depth - 1) : vmt_stack_bytes_left();
  return left + (size_t)pad[0] * 0;
}

static void *report_own_stack(void *arg) {
  self_report_t *r = arg;
  glibc_stack(&r->want);
  r->rc = vmt_thread_stack_info(vmt_thread_current(), &r->got);
  r->left_shallow = vmt_stack_bytes_left();
  r->left_deep = left_at_depth(64);
  char here;
  r->frame = (uintptr_t)&here;
  return NULL;
}

static void started_thread_asks_itself(void **state) {
  (void)state;
  self_report_t r;
  memset(&r, 0, sizeof(r));
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, report_own_stack, &r), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(r.rc, 0);
  assert_same(&r.got, &r.want);
  /* The frame is inside the bounds, the bytes left are what lies below it. */
  assert_true(r.frame > r.got.lo && r.frame < r.got.hi);
  assert_true(r.left_shallow > 0 && r.left_shallow < r.got.hi - r.got.lo);
  /* 64 frames of 512+ bytes deeper, at least 32 KiB fewer bytes left. */
  assert_true(r.left_deep + 64 * 512 <= r.left_shallow);
  /* Bounds asked once stay with the record after the join. */
  vmt_stack_info_t again;
  assert_int_equal(vmt_thread_stack_info(t, &again), 0);
  assert_same(&again, &r.want);
  assert_int_equal(vmt_thread_release(t), 0);
}

typedef struct held_thread {
  latch_t asked, done;
  expected_stack_t want;
} held_thread_t;

static void *report_then_wait(void *arg) {
  held_thread_t *h = arg;
  glibc_stack(&h->want);
  latch_open(&h->asked);
  latch_wait(&h->done);
  return NULL;
}

static void other_thread_asks_a_started_thread(void **state) {
  (void)state;
  held_thread_t h;
  latch_init(&h.asked);
  latch_init(&h.done);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, report_then_wait, &h), 0);
  latch_wait(&h.asked);
  vmt_stack_info_t got;
  assert_int_equal(vmt_thread_stack_info(t, &got), 0);
  assert_same(&got, &h.want);
  latch_open(&h.done);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(vmt_thread_release(t), 0);
  latch_destroy(&h.asked);
  latch_destroy(&h.done);
}

static void joined_before_anyone_asked_has_no_bounds(void **state) {
  (void)state;
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, return_arg, NULL), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  vmt_stack_info_t got;
  assert_int_equal(vmt_thread_stack_info(t, &got), -ESRCH);
  assert_int_equal(vmt_thread_release(t), 0);
}

/* ---- Attached threads and the main thread ------------------------------------------------ */
static void *attach_and_report(void *arg) {
  self_report_t *r = arg;
  vmt_thread_t *self;
  r->rc = vmt_thread_attach(NULL, &self);
  if (r->rc) return NULL;
  glibc_stack(&r->want);
  r->rc = vmt_thread_stack_info(self, &r->got);
  r->left_shallow = vmt_stack_bytes_left();
  vmt_thread_detach();
  return NULL;
}

static void attached_thread_has_glibc_bounds(void **state) {
  (void)state;
  self_report_t r;
  memset(&r, 0, sizeof(r));
  pthread_t p;
  assert_int_equal(pthread_create(&p, NULL, attach_and_report, &r), 0);
  assert_int_equal(pthread_join(p, NULL), 0);
  assert_int_equal(r.rc, 0);
  assert_same(&r.got, &r.want);
  assert_true(r.left_shallow > 0 && r.left_shallow < r.got.hi - r.got.lo);
}

static void main_thread_has_glibc_bounds(void **state) {
  (void)state;
  vmt_thread_t *self;
  assert_int_equal(vmt_thread_attach(NULL, &self), 0);
  expected_stack_t want;
  glibc_stack(&want);   /* glibc reads /proc/self/maps and RLIMIT_STACK for the main thread */
  vmt_stack_info_t got;
  assert_int_equal(vmt_thread_stack_info(self, &got), 0);
  assert_same(&got, &want);
  char here;
  assert_true((uintptr_t)&here > got.lo && (uintptr_t)&here < got.hi);
  assert_int_equal(vmt_thread_detach(), 0);
}

/* ---- Threads without a record, bad input --------------------------------------------------- */
static void *bytes_left_without_record(void *arg) {
  *(size_t *)arg = vmt_stack_bytes_left();
  return NULL;
}

static void foreign_thread_and_bad_input(void **state) {
  (void)state;
  size_t left = 0;
  pthread_t p;
  assert_int_equal(pthread_create(&p, NULL, bytes_left_without_record, &left), 0);
  assert_int_equal(pthread_join(p, NULL), 0);
  assert_int_equal(left, SIZE_MAX);
  vmt_stack_info_t got;
  assert_int_equal(vmt_thread_stack_info(NULL, &got), -EINVAL);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, return_arg, NULL), 0);
  assert_int_equal(vmt_thread_stack_info(t, NULL), -EINVAL);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(vmt_thread_release(t), 0);
}


/* ---- Guard zones (each case runs in a child process) ------------------------------------- */
#define PAGE ((size_t)sysconf(_SC_PAGESIZE))
#define ZONE (4 * PAGE)
#define GUARDED_STACK ((size_t)512 * 1024)

static vmt_thread_options_t guarded_options(void) {
  vmt_thread_options_t o;
  memset(&o, 0, sizeof(o));
  o.flags = VMT_THREAD_OPT_STACK_SIZE | VMT_THREAD_OPT_STACK_GUARD;
  o.stack_size = GUARDED_STACK;
  o.stack_guard.red_size = ZONE;
  o.stack_guard.yellow_size = ZONE;
  o.stack_guard.reserved_size = ZONE;
  return o;
}

static volatile sig_atomic_t stop_recursion;

/* Recurses until the stack runs out (or stop_recursion): 1 KiB a frame. */
static __attribute__((noinline)) int recurse(int depth) {
  volatile char pad[1024];
  pad[0] = (char)depth;
  pad[sizeof(pad) - 1] = 0;
  if (stop_recursion) return 0;
  return recurse(depth + 1) + pad[0] + pad[sizeof(pad) - 1];
}

/* Runs body() in a fresh process: this binary again (fork, then exec of /proc/self/exe with
 * "--child <name>", which main() dispatches), so that the child starts threads in a process of
 * its own, not in a fork of a threaded one (the sanitizers' allocators and TSan's lock model do
 * not survive a fork: test/fork_linux_test.c). The parent returns the wait status; the child's
 * stderr goes to err_out (read until it ends) if err_out is not NULL. */
typedef struct child_case {
  const char *name;
  int (*body)(void);
} child_case_t;
static const child_case_t *child_cases;
static size_t child_case_count;

static int in_child(int (*body)(void), char *err_out, size_t err_len) {
  const char *name = NULL;
  for (size_t i = 0; i < child_case_count; i++)
    if (child_cases[i].body == body) name = child_cases[i].name;
  assert_non_null(name);
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], STDERR_FILENO);
    execl("/proc/self/exe", "stack_test", "--child", name, (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  size_t n = 0;
  ssize_t r;
  char sink[256];
  for (;;) {
    bool keep = err_out && n < err_len - 1;
    r = read(fds[0], keep ? err_out + n : sink, keep ? err_len - 1 - n : sizeof(sink));
    if (r <= 0) break;
    if (keep) n += (size_t)r;
  }
  if (err_out) err_out[n] = '\0';
  close(fds[0]);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  return status;
}

static void assert_child_ok(int status) {
  if (WIFSIGNALED(status)) fail_msg("child killed by signal %d", WTERMSIG(status));
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) != 0) fail_msg("child check %d failed", WEXITSTATUS(status));
}

/* -- The handler leaves by siglongjmp; the thread re-arms and meets the zone again -- */
static sigjmp_buf escape;
static volatile sig_atomic_t events;
static volatile sig_atomic_t last_zone;
static vmt_thread_t *volatile event_thread;
static void *volatile event_ucontext;

static void longjmp_handler(const vmt_stack_overflow_t *ev, void *ctx) {
  (void)ctx;
  events++;
  last_zone = ev->zone;
  event_thread = ev->thread;
  event_ucontext = ev->ucontext;
  siglongjmp(escape, 1);
}

static void *overflow_twice(void *arg) {
  int *check = arg;
  vmt_stack_info_t info;
  if (vmt_thread_stack_info(vmt_thread_current(), &info) != 0) return *check = 10, NULL;
  if (info.red_size != ZONE || info.yellow_size != ZONE || info.reserved_size != ZONE)
    return *check = 11, NULL;
  if (info.limit != info.lo + 3 * ZONE || info.disabled_zones != 0) return *check = 12, NULL;
  for (int round = 1; round <= 2; round++) {
    if (sigsetjmp(escape, 1) == 0) {
      recurse(0);
      return *check = 13, NULL;   /* the stack cannot be endless */
    }
    if (events != round || last_zone != VMT_STACK_ZONE_RESERVED) return *check = 14, NULL;
    if (event_thread != vmt_thread_current() || event_ucontext == NULL) return *check = 15, NULL;
    vmt_thread_stack_info(vmt_thread_current(), &info);
    if (info.disabled_zones != (1u << VMT_STACK_ZONE_RESERVED)) return *check = 16, NULL;
    if (vmt_stack_guard_reenable() != 0) return *check = 17, NULL;
    vmt_thread_stack_info(vmt_thread_current(), &info);
    if (info.disabled_zones != 0) return *check = 18, NULL;
  }
  return NULL;
}

static int child_overflow_twice(void) {
  vmt_stack_overflow_handler_set(longjmp_handler, NULL);
  vmt_thread_options_t o = guarded_options();
  vmt_thread_t *t;
  int check = 0;
  if (vmt_thread_start_ex(&t, &o, overflow_twice, &check) != 0) return 1;
  if (vmt_thread_join(t, NULL) != 0) return 2;
  return check;
}

static void overflow_is_reported_and_zones_rearm(void **state) {
  (void)state;
  assert_child_ok(in_child(child_overflow_twice, NULL, 0));
}

/* -- The handler returns: the thread runs on into yellow, then red -- */
static volatile sig_atomic_t zone_order[8];

static void returning_handler(const vmt_stack_overflow_t *ev, void *ctx) {
  (void)ctx;
  if (events < 8) zone_order[events] = ev->zone;
  events++;
  if (ev->zone == VMT_STACK_ZONE_RED) {
    bool ok = events == 3 && zone_order[0] == VMT_STACK_ZONE_RESERVED &&
              zone_order[1] == VMT_STACK_ZONE_YELLOW;
    _exit(ok ? 42 : 43);
  }
}

static void *overflow_forever(void *arg) {
  (void)arg;
  recurse(0);
  return NULL;
}

static int child_runs_into_red(void) {
  vmt_stack_overflow_handler_set(returning_handler, NULL);
  vmt_thread_options_t o = guarded_options();
  vmt_thread_t *t;
  if (vmt_thread_start_ex(&t, &o, overflow_forever, NULL) != 0) return 1;
  vmt_thread_join(t, NULL);
  return 2;   /* never: the red zone's handler exits */
}

static void zones_are_met_in_order_when_the_handler_returns(void **state) {
  (void)state;
  int status = in_child(child_runs_into_red, NULL, 0);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 42);
}

/* -- No handler: a report, then the default action -- */
static int child_without_handler(void) {
  vmt_thread_options_t o = guarded_options();
  vmt_thread_t *t;
  if (vmt_thread_start_ex(&t, &o, overflow_forever, NULL) != 0) return 1;
  vmt_thread_join(t, NULL);
  return 2;
}

static void without_a_handler_the_process_dies_with_a_report(void **state) {
  (void)state;
  char err[4096];
  int status = in_child(child_without_handler, err, sizeof(err));
  assert_non_null(strstr(err, "reached its reserved zone"));
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  /* The sanitizer's SIGSEGV handler was there first: the fault is passed on to it, and it
   * reports the overflow at the same address and ends the process its way. */
  assert_non_null(strstr(err, "stack-overflow on address"));
  assert_false(WIFEXITED(status) && WEXITSTATUS(status) == 0);
#else
  assert_true(WIFSIGNALED(status));
  assert_int_equal(WTERMSIG(status), SIGSEGV);
#endif
}

/* -- Another fault goes to the handler that was there before -- */
static char *volatile trap_page;
static volatile sig_atomic_t host_faults;

static void host_handler(int sig, siginfo_t *info, void *uc) {
  (void)sig;
  (void)uc;
  if ((char *)info->si_addr == trap_page) {
    host_faults++;
    mprotect(trap_page, PAGE, PROT_READ | PROT_WRITE);
    return;
  }
  _exit(30);
}

static void *return_at_once(void *arg) { return arg; }

static int child_chains(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = host_handler;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSEGV, &sa, NULL) != 0) return 1;
  /* A thread with zones makes the runtime install its handler over the host's. */
  vmt_thread_options_t o = guarded_options();
  vmt_thread_t *t;
  if (vmt_thread_start_ex(&t, &o, return_at_once, NULL) != 0) return 2;
  if (vmt_thread_join(t, NULL) != 0) return 3;
  struct sigaction now;
  sigaction(SIGSEGV, NULL, &now);
  if (now.sa_sigaction == host_handler) return 4;   /* ours is not in place: nothing tested */
  trap_page = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (trap_page == MAP_FAILED) return 5;
  trap_page[0] = 1;   /* faults once; the host's handler opens the page */
  return host_faults == 1 && trap_page[0] == 1 ? 0 : 6;
}

static void other_faults_reach_the_previous_handler(void **state) {
  (void)state;
  int status = in_child(child_chains, NULL, 0);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  if (WIFEXITED(status) && WEXITSTATUS(status) == 4)
    skip();   /* the sanitizer keeps SIGSEGV to itself: there is no chain to test */
#endif
  assert_child_ok(status);
}

/* -- A stack that had zones is plain memory for whoever gets it next -- */
static __attribute__((noinline)) int use_stack_until(size_t keep) {
  volatile char pad[1024];
  pad[0] = 1;
  if (vmt_stack_bytes_left() < keep) return pad[0];
  return use_stack_until(keep) + pad[0];
}

static void *walk_own_stack(void *arg) {
  (void)arg;
  use_stack_until(2 * PAGE);   /* through where the previous thread's zones were */
  return NULL;
}

static int child_reuses_stacks(void) {
  for (int i = 0; i < 8; i++) {
    vmt_thread_options_t o = guarded_options();
    vmt_thread_t *t;
    if (vmt_thread_start_ex(&t, &o, return_at_once, NULL) != 0) return 1;
    if (vmt_thread_join(t, NULL) != 0 || vmt_thread_release(t) != 0) return 2;
    /* The same stack size, no zones: glibc hands out the cached stack. */
    o.flags &= ~(unsigned)VMT_THREAD_OPT_STACK_GUARD;
    if (vmt_thread_start_ex(&t, &o, walk_own_stack, NULL) != 0) return 3;
    if (vmt_thread_join(t, NULL) != 0 || vmt_thread_release(t) != 0) return 4;
  }
  return 0;
}

static void zones_are_undone_when_the_thread_ends(void **state) {
  (void)state;
  assert_child_ok(in_child(child_reuses_stacks, NULL, 0));
}

static void bad_guard_options_are_refused(void **state) {
  (void)state;
  vmt_thread_options_t o = guarded_options();
  vmt_thread_t *t = NULL;
  o.stack_guard.yellow_size = GUARDED_STACK;   /* leaves nothing to run on */
  assert_int_equal(vmt_thread_start_ex(&t, &o, return_at_once, NULL), -EINVAL);
  o = guarded_options();
  o.stack_guard.red_size = (size_t)1 << 40;
  assert_int_equal(vmt_thread_start_ex(&t, &o, return_at_once, NULL), -EINVAL);
  assert_null(t);
  o = guarded_options();
  o.flags = VMT_THREAD_OPT_STACK_GUARD;
  assert_int_equal(vmt_thread_attach(&o, &t), -EINVAL);   /* an attached stack is not ours */
  assert_null(vmt_thread_current());
  assert_string_equal(vmt_stack_zone_name(VMT_STACK_ZONE_YELLOW), "yellow");
  assert_string_equal(vmt_stack_zone_name((vmt_stack_zone_t)99), "none");
  assert_int_equal(vmt_stack_guard_reenable(), -EPERM);   /* no runtime thread here */
}

static const child_case_t cases[] = {
    {"overflow_twice", child_overflow_twice},
    {"runs_into_red", child_runs_into_red},
    {"without_handler", child_without_handler},
    {"chains", child_chains},
    {"reuses_stacks", child_reuses_stacks},
};

int main(int argc, char **argv) {
  child_cases = cases;
  child_case_count = sizeof(cases) / sizeof(cases[0]);
  if (argc == 3 && strcmp(argv[1], "--child") == 0) {
    for (size_t i = 0; i < child_case_count; i++)
      if (strcmp(argv[2], cases[i].name) == 0) return cases[i].body();
    return 126;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(started_thread_asks_itself),
      cmocka_unit_test(other_thread_asks_a_started_thread),
      cmocka_unit_test(joined_before_anyone_asked_has_no_bounds),
      cmocka_unit_test(attached_thread_has_glibc_bounds),
      cmocka_unit_test(main_thread_has_glibc_bounds),
      cmocka_unit_test(foreign_thread_and_bad_input),
      cmocka_unit_test(overflow_is_reported_and_zones_rearm),
      cmocka_unit_test(zones_are_met_in_order_when_the_handler_returns),
      cmocka_unit_test(without_a_handler_the_process_dies_with_a_report),
      cmocka_unit_test(other_faults_reach_the_previous_handler),
      cmocka_unit_test(zones_are_undone_when_the_thread_ends),
      cmocka_unit_test(bad_guard_options_are_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
