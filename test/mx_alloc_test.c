/*
 * test/mx_alloc_test.c: allocated bytes (com.sun.management.ThreadMXBean), ported from what
 * OpenJDK's ThreadAllocatedMemory and ThreadAllocatedMemoryArray check: a thread that allocates
 * 10 MiB grows by at least that, the total never drops when threads exit, unknown and ended
 * threads give -1, disabled measurement gives -1, invalid ids are rejected first. And that each
 * thread's figure is its own while records (and the hot cells that hold the counter pointers)
 * are recycled for new threads and the registry's arrays rebuilt under the reader.
 *
 * Both branches are checked according to vmt_mx_is_thread_allocated_memory_supported(), and
 * the answer itself is checked against the build: jemalloc is the allocator in the default
 * build, and a sanitizer's malloc replaces it under ASan and TSan, where every call must say
 * -ENOTSUP rather than return zeros.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "mx_util.h"

#define UNKNOWN_ID 999999
#define TEN_MIB (10 * 1024 * 1024)

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZER_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZER_MALLOC 1
#endif
#endif

static void support_matches_the_build(void **state) {
  (void)state;
#ifdef SANITIZER_MALLOC
  assert_false(vmt_mx_is_thread_allocated_memory_supported());
#else
  assert_true(vmt_mx_is_thread_allocated_memory_supported());
#endif
}

static void invalid_ids_rejected_before_support(void **state) {
  (void)state;
  int64_t v = 5;
  const int64_t bad[] = {0, -1, INT64_MIN};
  for (int i = 0; i < 3; i++) {
    assert_int_equal(vmt_mx_get_thread_allocated_bytes(bad[i], &v), -EINVAL);
    int64_t ids[2] = {UNKNOWN_ID, bad[i]}, out[2];
    assert_int_equal(vmt_mx_get_thread_allocated_bytes_array(ids, 2, out), -EINVAL);
  }
  int64_t out[1];
  assert_int_equal(vmt_mx_get_thread_allocated_bytes_array(NULL, 1, out), -EINVAL);
  assert_int_equal(vmt_mx_get_thread_allocated_bytes(1, NULL), -EINVAL);
  assert_int_equal(vmt_mx_get_total_thread_allocated_bytes(NULL), -EINVAL);
  assert_int_equal(vmt_mx_get_current_thread_allocated_bytes(NULL), -EINVAL);
  assert_int_equal(vmt_mx_is_thread_allocated_memory_enabled(NULL), -EINVAL);
  assert_int_equal(v, 5);
}

static void unsupported_says_so_everywhere(void **state) {
  (void)state;
  if (vmt_mx_is_thread_allocated_memory_supported()) {
    print_message("jemalloc is the allocator: the unsupported branch does not apply\n");
    skip();
  }
  int64_t v = 5, id = UNKNOWN_ID, out[1] = {5};
  bool en;
  assert_int_equal(vmt_mx_is_thread_allocated_memory_enabled(&en), -ENOTSUP);
  assert_int_equal(vmt_mx_set_thread_allocated_memory_enabled(true), -ENOTSUP);
  assert_int_equal(vmt_mx_get_thread_allocated_bytes(id, &v), -ENOTSUP);
  assert_int_equal(vmt_mx_get_thread_allocated_bytes_array(&id, 1, out), -ENOTSUP);
  assert_int_equal(vmt_mx_get_current_thread_allocated_bytes(&v), -ENOTSUP);
  assert_int_equal(vmt_mx_get_total_thread_allocated_bytes(&v), -ENOTSUP);
  assert_int_equal(v, 5);
  assert_int_equal(out[0], 5);
}

typedef struct allocator {
  gate_t before, after;
} allocator_t;

static void *allocate_ten_mib(void *arg) {
  allocator_t *a = arg;
  gate_pass(&a->before);
  for (int i = 0; i < 10; i++) {
    char *p = malloc(1024 * 1024);
    if (p) p[i] = (char)i;
    __asm__ __volatile__("" : : "r"(p) : "memory");
    free(p);
  }
  gate_pass(&a->after);
  return NULL;
}

static void allocating_thread_grows_and_total_never_drops(void **state) {
  (void)state;
  if (!vmt_mx_is_thread_allocated_memory_supported()) {
    print_message("jemalloc is not the allocator (sanitizer build): counts unsupported\n");
    skip();
  }
  bool enabled = false;
  assert_int_equal(vmt_mx_is_thread_allocated_memory_enabled(&enabled), 0);
  assert_true(enabled); /* on by default */

  allocator_t a;
  gate_init(&a.before);
  gate_init(&a.after);
  vmt_thread_t *t = start_named("allocator", false, allocate_ten_mib, &a);
  gate_await(&a.before, 1);
  int64_t id = vmt_thread_id(t), start, end, total_before, total_mid, total_after;
  assert_int_equal(vmt_mx_get_thread_allocated_bytes(id, &start), 0);
  assert_true(start >= 0);
  assert_int_equal(vmt_mx_get_total_thread_allocated_bytes(&total_before), 0);
  gate_open(&a.before);
  gate_await(&a.after, 1);
  assert_int_equal(vmt_mx_get_thread_allocated_bytes(id, &end), 0);
  assert_true(end - start >= TEN_MIB);
  int64_t ids[3] = {id, UNKNOWN_ID, id}, out[3];
  assert_int_equal(vmt_mx_get_thread_allocated_bytes_array(ids, 3, out), 0);
  assert_true(out[0] >= end && out[2] >= end);
  assert_int_equal(out[1], -1);
  assert_int_equal(vmt_mx_get_total_thread_allocated_bytes(&total_mid), 0);
  assert_true(total_mid - total_before >= TEN_MIB);

  gate_open(&a.after);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  /* Its bytes move into the exited total: the total keeps them. */
  assert_int_equal(vmt_mx_get_total_thread_allocated_bytes(&total_after), 0);
  assert_true(total_after >= total_mid);
  assert_int_equal(vmt_mx_get_thread_allocated_bytes(id, &end), 0);
  assert_int_equal(end, -1); /* terminated */
  vmt_thread_release(t);
  gate_destroy(&a.before);
  gate_destroy(&a.after);
}

/* ---- each thread's own bytes, through recycled records ----------------------------------- *
 * Rounds of ROUND_LIVE threads, thread k allocating and holding (k % 32 + 1) * 16 blocks of
 * 4 KiB (a jemalloc size class: counted exactly), so that neighbours differ by 64 KiB or more,
 * far more than a thread allocates besides. Each round's first thread lives on through the next
 * round; the others are joined in reverse order of start. So tombstones lie between live
 * entries when a start rebuilds the registry's arrays, and records (with their hot cells, which
 * hold the counter pointers) are recycled for the next threads. Each round's array call covers
 * the round's threads, the previous round's survivor and the previous round's ended ids: every
 * live thread gets its own figure (never a neighbour's, nor that of the thread whose record it
 * took over), every ended one -1. */
enum { ROUNDS = 150, ROUND_LIVE = 6, BLOCK = 4096, BLOCKS_PER_STEP = 16 };
#define SLACK (32 * 1024)

typedef struct holder {
  int blocks;
  gate_t gate;   /* its own: a survivor outlives its round */
  vmt_thread_t *t;
  int64_t id;
} holder_t;

static void *allocate_and_hold(void *arg) {
  holder_t *h = arg;
  void **p = malloc((size_t)h->blocks * sizeof(*p));
  for (int i = 0; p && i < h->blocks; i++) p[i] = malloc(BLOCK);
  gate_pass(&h->gate);   /* arrives (the test's cue), then waits for the opening */
  for (int i = 0; p && i < h->blocks; i++) free(p[i]);
  free(p);
  return NULL;
}

static void holder_end(holder_t *h) {
  gate_open(&h->gate);
  assert_int_equal(vmt_thread_join(h->t, NULL), 0);
  vmt_thread_release(h->t);
  gate_destroy(&h->gate);
}

static void bytes_are_its_own(const holder_t *h, int64_t got, int round) {
  int64_t want = (int64_t)h->blocks * BLOCK;
  if (got < want || got > want + SLACK)
    fail_msg("round %d: thread %lld holds %lld bytes, the call says %lld", round,
             (long long)h->id, (long long)want, (long long)got);
}

static void each_thread_reads_its_own_bytes_through_recycled_records(void **state) {
  (void)state;
  if (!vmt_mx_is_thread_allocated_memory_supported()) {
    print_message("jemalloc is not the allocator (sanitizer build): counts unsupported\n");
    skip();
  }
  static holder_t h[2][ROUND_LIVE];   /* this round's and the previous one's */
  int64_t ended[ROUND_LIVE - 1];
  for (int i = 0; i < ROUND_LIVE - 1; i++) ended[i] = UNKNOWN_ID;
  enum { N = 2 * ROUND_LIVE };
  int k = 0;
  for (int r = 0; r < ROUNDS; r++) {
    holder_t *cur = h[r % 2], *prev = h[(r + 1) % 2];
    int64_t ids[N], out[N];
    for (int i = 0; i < ROUND_LIVE; i++, k++) {
      cur[i].blocks = (k % 32 + 1) * BLOCKS_PER_STEP;
      gate_init(&cur[i].gate);
      assert_non_null(cur[i].t = start_named("holder", false, allocate_and_hold, &cur[i]));
      ids[i] = cur[i].id = vmt_thread_id(cur[i].t);
      gate_await(&cur[i].gate, 1);
    }
    ids[ROUND_LIVE] = r > 0 ? prev[0].id : UNKNOWN_ID;
    for (int i = 0; i < ROUND_LIVE - 1; i++) ids[ROUND_LIVE + 1 + i] = ended[i];
    assert_int_equal(vmt_mx_get_thread_allocated_bytes_array(ids, N, out), 0);
    for (int i = 0; i < ROUND_LIVE; i++) bytes_are_its_own(&cur[i], out[i], r);
    if (r > 0) bytes_are_its_own(&prev[0], out[ROUND_LIVE], r);
    for (int i = ROUND_LIVE + 1; i < N; i++) assert_int_equal(out[i], -1);
    if (r > 0) holder_end(&prev[0]);
    for (int i = ROUND_LIVE - 1; i >= 1; i--) {
      holder_end(&cur[i]);
      ended[i - 1] = cur[i].id;
    }
  }
  holder_end(&h[(ROUNDS - 1) % 2][0]);
}

static void current_thread_counts_only_when_known_to_the_runtime(void **state) {
  (void)state;
  if (!vmt_mx_is_thread_allocated_memory_supported()) {
    print_message("jemalloc is not the allocator (sanitizer build): counts unsupported\n");
    skip();
  }
  int64_t v = 0;
  assert_int_equal(vmt_mx_get_current_thread_allocated_bytes(&v), 0);
  assert_int_equal(v, -1); /* the test's main thread is not attached */
  vmt_thread_t *self;
  assert_int_equal(vmt_thread_attach(NULL, &self), 0);
  int64_t before, after;
  assert_int_equal(vmt_mx_get_current_thread_allocated_bytes(&before), 0);
  assert_true(before >= 0);
  void *p = malloc(TEN_MIB);
  __asm__ __volatile__("" : : "r"(p) : "memory");
  free(p);
  assert_int_equal(vmt_mx_get_current_thread_allocated_bytes(&after), 0);
  assert_true(after - before >= TEN_MIB);
  int64_t by_id;
  assert_int_equal(vmt_mx_get_thread_allocated_bytes(vmt_thread_id(self), &by_id), 0);
  assert_true(by_id >= after);
  assert_int_equal(vmt_thread_detach(), 0);
}

static void disabled_gives_minus_one(void **state) {
  (void)state;
  if (!vmt_mx_is_thread_allocated_memory_supported()) {
    print_message("jemalloc is not the allocator (sanitizer build): counts unsupported\n");
    skip();
  }
  gate_t g;
  vmt_thread_t *t = start_gated(&g, "idle", false);
  int64_t id = vmt_thread_id(t), v;
  assert_int_equal(vmt_mx_set_thread_allocated_memory_enabled(false), 0);
  bool en = true;
  assert_int_equal(vmt_mx_is_thread_allocated_memory_enabled(&en), 0);
  assert_false(en);
  assert_int_equal(vmt_mx_get_thread_allocated_bytes(id, &v), 0);
  assert_int_equal(v, -1);
  assert_int_equal(vmt_mx_get_total_thread_allocated_bytes(&v), 0);
  assert_int_equal(v, -1);
  assert_int_equal(vmt_mx_set_thread_allocated_memory_enabled(true), 0);
  assert_int_equal(vmt_mx_get_thread_allocated_bytes(id, &v), 0);
  assert_true(v >= 0);
  finish_gated(&g, t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(support_matches_the_build),
      cmocka_unit_test(invalid_ids_rejected_before_support),
      cmocka_unit_test(unsupported_says_so_everywhere),
      cmocka_unit_test(allocating_thread_grows_and_total_never_drops),
      cmocka_unit_test(each_thread_reads_its_own_bytes_through_recycled_records),
      cmocka_unit_test(current_thread_counts_only_when_known_to_the_runtime),
      cmocka_unit_test(disabled_gives_minus_one),
  };
  return cmocka_run_group_tests_name("mx_alloc", tests, NULL, NULL);
}
