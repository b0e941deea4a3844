/*
 * test/mx_dump_json_test.c: the JSON thread dump (vmt_mx_print_thread_dump_json,
 * vmt_mx_thread_dump_json_to_string). The output must always parse (test/json_check.h), also
 * with names that need escaping or are not UTF-8, and carry what jcmd's JSON dump carries, in
 * its layout: the process id, one root container with every live thread and their count, each
 * thread's id, name, state, what it is blocked on / waiting on / parked on, its stack, and its
 * owned monitors by frame depth; and vmthread's category and ownable synchronizers.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "json_check.h"
#include "mx_util.h"

static void bad_arguments(void **state) {
  (void)state;
  char *s;
  size_t len;
  assert_int_equal(vmt_mx_print_thread_dump_json(NULL), -EINVAL);
  assert_int_equal(vmt_mx_thread_dump_json_to_string(NULL, &len), -EINVAL);
  assert_int_equal(vmt_mx_thread_dump_json_to_string(&s, NULL), -EINVAL);
}

static void assert_contains(const char *hay, const char *needle) {
  if (strstr(hay, needle) == NULL) fail_msg("missing in the JSON dump: %s", needle);
}

/* Where t's object starts in the dump (its fields follow until the next thread's). */
static const char *thread_in(const char *dump, vmt_thread_t *t) {
  char tid[64];
  snprintf(tid, sizeof(tid), "\"tid\": \"%lld\"", (long long)vmt_thread_id(t));
  const char *at = strstr(dump, tid);
  if (at == NULL) fail_msg("thread %s is not in the JSON dump", vmt_thread_name(t));
  return at;
}

/* The holder's frames: a name with a quote, a control character and a byte that is not UTF-8;
 * frame 1 entered the monitor "held". */
static vmt_monitor_t *held_by_frame_1;
static int walker(vmt_thread_t *t, vmt_stack_frame_t *frames, int32_t max, void *ctx) {
  (void)ctx;
  if (strcmp(vmt_thread_name(t), "holder") != 0 || max < 2) return 0;
  frames[0] = (vmt_stack_frame_t){(char *)"vm.Odd.\"q\"\x01\xff", NULL, -1, 0};
  frames[1] = (vmt_stack_frame_t){(char *)"vm.Main.main", (char *)"Main.vm", 7, 0};
  vmt_mx_frame_holds_monitor(1, held_by_frame_1);
  return 2;
}

typedef struct parker {
  vmt_sync_t *s;
} parker_t;

static void *lock_sync(void *arg) {
  parker_t *p = arg;
  vmt_sync_lock(p->s);
  vmt_sync_unlock(p->s);
  return NULL;
}

static void every_kind_of_thread_parses_and_is_described(void **state) {
  (void)state;
  vmt_thread_t *self;
  assert_int_equal(
      vmt_thread_attach(&(vmt_thread_options_t){.flags = VMT_THREAD_OPT_NAME, .name = "holder"},
                        &self),
      0);
  vmt_monitor_t *held, *wanted, *odd;
  assert_int_equal(vmt_monitor_create(&held, "held"), 0);
  assert_int_equal(vmt_monitor_create(&wanted, "wanted \"x\"\n"), 0);
  assert_int_equal(vmt_monitor_create(&odd, "odd\xc3\x28"), 0); /* not UTF-8 */
  vmt_sync_t *sync;
  assert_int_equal(vmt_sync_create(&sync, "sync"), 0);
  assert_int_equal(vmt_monitor_enter(held), 0);
  assert_int_equal(vmt_monitor_enter(wanted), 0);
  assert_int_equal(vmt_monitor_enter(odd), 0);
  assert_int_equal(vmt_sync_lock(sync), 0);
  held_by_frame_1 = held;
  vmt_mx_set_stack_walker(walker, NULL);

  vmt_thread_t *blocked = start_named("blocked", false, enter_and_leave, wanted);
  parker_t p = {sync};
  vmt_thread_t *parked = start_named("parked", true, lock_sync, &p);
  waiter_t w = {0};
  assert_int_equal(vmt_monitor_create(&w.m, "gate"), 0);
  vmt_thread_t *waiting = start_named("waiting", false, wait_on_monitor, &w);
  assert_true(await_state(blocked, VMT_THREAD_BLOCKED));
  assert_true(await_state(parked, VMT_THREAD_WAITING));
  assert_true(await_state(waiting, VMT_THREAD_WAITING));

  char *s = NULL;
  size_t len = 0;
  assert_int_equal(vmt_mx_thread_dump_json_to_string(&s, &len), 0);
  assert_int_equal(strlen(s), len);
  long bad = json_check(s);
  if (bad >= 0) fail_msg("not JSON at offset %ld: %.60s", bad, s + bad);

  char want[512], name[300];
  snprintf(want, sizeof(want), "\"processId\": \"%lld\"", (long long)getpid());
  assert_contains(s, want);
  assert_contains(s, "\"container\": \"<root>\"");
  snprintf(want, sizeof(want), "\"threadCount\": \"%d\"", (int)vmt_mx_get_thread_count());
  assert_contains(s, want);
  snprintf(want, sizeof(want), "\"runtimeVersion\": \"vmthread %s\"", vmt_version());
  assert_contains(s, want);

  const char *b = thread_in(s, blocked);
  assert_contains(b, "\"name\": \"blocked\"");
  assert_contains(b, "\"state\": \"BLOCKED\"");
  assert_contains(b, "\"blockedOn\": \"wanted \\\"x\\\"\\n@"); /* escaped */

  const char *pk = thread_in(s, parked);
  vmt_sync_describe(sync, name, sizeof(name));
  snprintf(want, sizeof(want), "\"parkBlocker\": {\n              \"object\": \"%s\"", name);
  assert_contains(pk, want);
  assert_contains(pk, "\"daemon\": true");

  const char *wt = thread_in(s, waiting);
  vmt_monitor_describe(w.m, name, sizeof(name));
  snprintf(want, sizeof(want), "\"waitingOn\": \"%s\"", name);
  assert_contains(wt, want);

  /* The holder: its frames as Java prints them, the odd bytes replaced, the monitor frame 1
   * entered at depth 1, the others at the top frame, its synchronizer. */
  const char *h = thread_in(s, self);
  assert_contains(h, "\"vm.Odd.\\\"q\\\"\\u0001\\ufffd\"");
  assert_contains(h, "\"vm.Main.main(Main.vm:7)\"");
  vmt_monitor_describe(held, name, sizeof(name));
  snprintf(want, sizeof(want),
           "\"depth\": 1,\n                \"locks\": [\n                  \"%s\"", name);
  assert_contains(h, want);
  assert_contains(h, "\"depth\": 0,");
  assert_contains(h, "\"odd\\ufffd(@");
  vmt_sync_describe(sync, name, sizeof(name));
  snprintf(want, sizeof(want), "\"ownableSynchronizersOwned\": [\n              \"%s\"", name);
  assert_contains(h, want);
  assert_contains(h, "\"category\": \"app\"");
  free(s);

  /* The FILE form writes the same layout. */
  FILE *f = tmpfile();
  assert_non_null(f);
  assert_int_equal(vmt_mx_print_thread_dump_json(f), 0);
  long size = ftell(f);
  char *t = calloc(1, (size_t)size + 1);
  rewind(f);
  assert_int_equal(fread(t, 1, (size_t)size, f), (size_t)size);
  fclose(f);
  assert_int_equal(json_check(t), -1);
  assert_contains(t, "\"threadContainers\": [");
  free(t);

  vmt_mx_set_stack_walker(NULL, NULL);
  waiter_release(&w);
  assert_int_equal(vmt_sync_unlock(sync), 0);
  assert_int_equal(vmt_monitor_exit(odd), 0);
  assert_int_equal(vmt_monitor_exit(wanted), 0);
  assert_int_equal(vmt_monitor_exit(held), 0);
  vmt_thread_t *all[] = {blocked, parked, waiting};
  for (int i = 0; i < 3; i++) {
    assert_int_equal(vmt_thread_join(all[i], NULL), 0);
    vmt_thread_release(all[i]);
  }
  vmt_monitor_destroy(w.m);
  vmt_monitor_destroy(held);
  vmt_monitor_destroy(wanted);
  vmt_monitor_destroy(odd);
  vmt_sync_destroy(sync);
  assert_int_equal(vmt_thread_detach(), 0);
}

/* With no thread at all the containers are still there, and empty. */
static void no_threads_is_an_empty_container(void **state) {
  (void)state;
  char *s;
  size_t len;
  assert_int_equal(vmt_mx_thread_dump_json_to_string(&s, &len), 0);
  assert_int_equal(json_check(s), -1);
  assert_contains(s, "\"threads\": [],");
  assert_contains(s, "\"threadCount\": \"0\"");
  free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(bad_arguments),
      cmocka_unit_test(no_threads_is_an_empty_container),
      cmocka_unit_test(every_kind_of_thread_parses_and_is_described),
  };
  return cmocka_run_group_tests_name("mx_dump_json", tests, NULL, NULL);
}
