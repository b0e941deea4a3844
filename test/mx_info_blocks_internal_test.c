/*
 * test/mx_info_blocks_internal_test.c: the ThreadInfos of one call share 64 KiB blocks
 * (runtime/management/info.c), and each one is still a ThreadInfo of its own to the caller.
 *
 * - A call that returns many ThreadInfos makes a handful of allocations, not one per thread
 *   (counted through the allocation seam): 10,000 separate small objects are what made the
 *   call's cost per thread grow with the thread count (fresh pages for every call, issue #12).
 * - Freed one by one, in any order, on another thread, some kept after the array is gone,
 *   every ThreadInfo's strings stay valid until it is freed itself (AddressSanitizer reports a
 *   block freed under a live ThreadInfo; LeakSanitizer a block never freed).
 * - A name too long for a block's share (VMT_THREAD_NAME_MAX bytes) has its own allocation,
 *   beside block-carved ones in the same array.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mx_util.h"
#include "runtime/fault.h"

enum { N = 700 };   /* more than two blocks' worth of ThreadInfos */

typedef struct crowd {
  gate_t gate;
  vmt_thread_t *t[N];
  int64_t ids[N];
  char names[N][32];
} crowd_t;

static crowd_t crowd;
static char long_name[VMT_THREAD_NAME_MAX + 1];

static int setup(void **state) {
  (void)state;
  gate_init(&crowd.gate);
  memset(long_name, 'L', VMT_THREAD_NAME_MAX);
  long_name[VMT_THREAD_NAME_MAX] = '\0';
  for (int i = 0; i < N; i++) {
    /* Names of different lengths, so ThreadInfos are of different sizes; one of the longest
     * kind in the middle. */
    if (i == N / 2)
      crowd.t[i] = start_named(long_name, false, gate_body, &crowd.gate);
    else {
      snprintf(crowd.names[i], sizeof(crowd.names[i]), "crowd-%0*d", 1 + i % 17, i);
      crowd.t[i] = start_named(crowd.names[i], false, gate_body, &crowd.gate);
    }
    if (!crowd.t[i]) return -1;
    crowd.ids[i] = vmt_thread_id(crowd.t[i]);
  }
  gate_await(&crowd.gate, N);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  vmt__fault_disarm_all();
  gate_open(&crowd.gate);
  for (int i = 0; i < N; i++) {
    vmt_thread_join(crowd.t[i], NULL);
    vmt_thread_release(crowd.t[i]);
  }
  gate_destroy(&crowd.gate);
  return 0;
}

static const char *expected_name(int i) { return i == N / 2 ? long_name : crowd.names[i]; }

static void check_info(const vmt_thread_info_t *info, int i) {
  assert_non_null(info);
  assert_int_equal(info->id, crowd.ids[i]);
  assert_string_equal(info->name, expected_name(i));
  assert_non_null(info->category);
  assert_true(info->state == VMT_THREAD_RUNNABLE);   /* in pthread_cond_wait: native code */
}

static _Atomic int allocations;
static void count_allocation(void *arg) {
  (void)arg;
  atomic_fetch_add(&allocations, 1);
}

/* Before the blocks: N + 1 allocations (the pointer array and one per ThreadInfo). */
static void test_array_allocates_per_block_not_per_thread(void **state) {
  (void)state;
  vmt_thread_info_t **infos = NULL;
  atomic_store(&allocations, 0);
  vmt__fault_set_hook(VMT__FAULT_ALLOC, count_allocation, NULL);
  int rc = vmt_mx_get_thread_info_array_ex(crowd.ids, N, VMT_MX_INFO_NO_CPU_TIME, 0, &infos);
  vmt__fault_set_hook(VMT__FAULT_ALLOC, NULL, NULL);
  assert_int_equal(rc, 0);
  int made = atomic_load(&allocations);
  for (int i = 0; i < N; i++) check_info(infos[i], i);
  vmt_mx_thread_info_array_free(infos, N);
  /* ~280 ThreadInfos a block: 3 blocks, the long name's own, the array; some slack for what
   * a ThreadInfo of a waiting thread may copy, never one per thread. */
  print_message("allocations for %d ThreadInfos: %d\n", N, made);
  assert_true(made < N / 20);
}

static void test_dump_allocates_per_block_not_per_thread(void **state) {
  (void)state;
  vmt_thread_info_t **infos = NULL;
  size_t n = 0;
  atomic_store(&allocations, 0);
  vmt__fault_set_hook(VMT__FAULT_ALLOC, count_allocation, NULL);
  int rc = vmt_mx_dump_all_threads_ex(VMT_MX_INFO_NO_CPU_TIME, 0, &infos, &n);
  vmt__fault_set_hook(VMT__FAULT_ALLOC, NULL, NULL);
  assert_int_equal(rc, 0);
  int made = atomic_load(&allocations);
  assert_true(n >= N);
  vmt_mx_thread_info_array_free(infos, n);
  print_message("allocations for a dump of %zu threads: %d\n", n, made);
  assert_true(made < N / 20);
}

typedef struct freeing {
  vmt_thread_info_t **infos;
  int from, step;
} freeing_t;

static void *free_every_step(void *arg) {
  freeing_t *f = arg;
  for (int i = f->from; i < N; i += f->step) {
    vmt_mx_thread_info_free(f->infos[i]);
    f->infos[i] = NULL;
  }
  return NULL;
}

/* Every ThreadInfo is its own object: freed singly, out of order, concurrently with the
 * caller's frees on another thread, or kept after the array is freed. */
static void test_each_info_lives_until_freed_itself(void **state) {
  (void)state;
  for (int round = 0; round < 4; round++) {
    vmt_thread_info_t **infos = NULL;
    assert_int_equal(vmt_mx_get_thread_info_array(crowd.ids, N, false, false, 0, &infos), 0);
    /* Keep every 97th (the long name among them), then free the rest: a third on another
     * thread while this one frees from the end backwards. */
    enum { KEEP_EVERY = 97 };
    vmt_thread_info_t *kept[N / KEEP_EVERY + 2];
    int kept_at[N / KEEP_EVERY + 2], nkept = 0;
    for (int i = 0; i < N; i++) {
      if (i % KEEP_EVERY == round || i == N / 2) {
        kept[nkept] = infos[i];
        kept_at[nkept++] = i;
        infos[i] = NULL;
      }
    }
    freeing_t f = {.infos = infos, .from = round % 3, .step = 3};
    pthread_t other;
    assert_int_equal(pthread_create(&other, NULL, free_every_step, &f), 0);
    for (int i = N - 1; i >= 0; i--)
      if (i % 3 != f.from && infos[i]) {
        vmt_mx_thread_info_free(infos[i]);
        infos[i] = NULL;
      }
    assert_int_equal(pthread_join(other, NULL), 0);
    vmt_mx_thread_info_array_free(infos, N);   /* every element NULL by now: the array only */
    for (int k = 0; k < nkept; k++) check_info(kept[k], kept_at[k]);
    for (int k = nkept - 1; k >= 0; k--) vmt_mx_thread_info_free(kept[k]);
  }
}

/* A ThreadInfo kept from a dump outlives the dump's other ThreadInfos and its array. */
static void test_kept_dump_info_survives(void **state) {
  (void)state;
  vmt_thread_info_t **infos = NULL;
  size_t n = 0;
  assert_int_equal(vmt_mx_dump_all_threads(false, false, 0, &infos, &n), 0);
  vmt_thread_info_t *keep = NULL;
  int at = -1;
  for (size_t i = 0; i < n; i++)
    if (infos[i]->id == crowd.ids[N - 1]) {
      keep = infos[i];
      infos[i] = NULL;
      at = N - 1;
    }
  assert_non_null(keep);
  vmt_mx_thread_info_array_free(infos, n);
  check_info(keep, at);
  vmt_mx_thread_info_free(keep);
}

/* Every allocation of a many-thread call failed in turn: -ENOMEM, nothing leaked, and the
 * blocks already carved are freed (LeakSanitizer). */
static void test_failing_allocations_leak_nothing(void **state) {
  (void)state;
  for (int k = 0; k < 12; k++) {
    vmt__fault_arm(VMT__FAULT_ALLOC, k, 1, ENOMEM);
    vmt_thread_info_t **infos = (vmt_thread_info_t **)1;
    int rc = vmt_mx_get_thread_info_array_ex(crowd.ids, N, VMT_MX_INFO_NO_CPU_TIME, 0, &infos);
    bool injected = vmt__fault_injected(VMT__FAULT_ALLOC) > 0;
    vmt__fault_disarm_all();
    if (!injected) {
      assert_int_equal(rc, 0);
      vmt_mx_thread_info_array_free(infos, N);
      break;
    }
    assert_int_equal(rc, -ENOMEM);
    assert_ptr_equal(infos, (vmt_thread_info_t **)1);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_array_allocates_per_block_not_per_thread),
      cmocka_unit_test(test_dump_allocates_per_block_not_per_thread),
      cmocka_unit_test(test_each_info_lives_until_freed_itself),
      cmocka_unit_test(test_kept_dump_info_survives),
      cmocka_unit_test(test_failing_allocations_leak_nothing),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
