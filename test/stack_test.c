/*
 * test/stack_test.c: stack bounds through the public API (vmthread/stack.h): they equal what
 * pthread_getattr_np reports for started, attached and the main thread, whoever asks first;
 * the calling thread's bytes left fall as it recurses and stay inside the bounds; a started
 * thread joined before anyone asked has no bounds any more (-ESRCH), and bad input is -EINVAL.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(started_thread_asks_itself),
      cmocka_unit_test(other_thread_asks_a_started_thread),
      cmocka_unit_test(joined_before_anyone_asked_has_no_bounds),
      cmocka_unit_test(attached_thread_has_glibc_bounds),
      cmocka_unit_test(main_thread_has_glibc_bounds),
      cmocka_unit_test(foreign_thread_and_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
