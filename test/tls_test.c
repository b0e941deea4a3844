/*
 * test/tls_test.c: TLS slots through the public API (vmthread/tls.h): keys and their errors
 * (bad key, exhaustion, double delete), the inline get and set on started and attached
 * threads, another thread's slot read while the owner runs and NULL once it ended, destructors
 * exactly once per non-NULL slot at every way out (return, vmt_thread_exit, cancellation, last
 * detach, a thread that ends while attached), on the thread itself while it is still current,
 * their bounded rounds, and deletion clearing the slot everywhere.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "test/thread_util.h"
#include "vmthread.h"

/* ---- Destructor bookkeeping ------------------------------------------------------------- */
#define MAX_CALLS 64
static pthread_mutex_t calls_lock = PTHREAD_MUTEX_INITIALIZER;
static void *calls[MAX_CALLS];
static int ncalls;
static vmt_thread_t *called_on[MAX_CALLS];

static void reset_calls(void) {
  pthread_mutex_lock(&calls_lock);
  ncalls = 0;
  pthread_mutex_unlock(&calls_lock);
}

static void record_call(void *v) {
  pthread_mutex_lock(&calls_lock);
  if (ncalls < MAX_CALLS) {
    called_on[ncalls] = vmt_thread_current();
    calls[ncalls++] = v;
  }
  pthread_mutex_unlock(&calls_lock);
}

/* How often value v was destructed. */
static int calls_of(void *v) {
  pthread_mutex_lock(&calls_lock);
  int n = 0;
  for (int i = 0; i < ncalls; i++) n += calls[i] == v;
  pthread_mutex_unlock(&calls_lock);
  return n;
}

static int total_calls(void) {
  pthread_mutex_lock(&calls_lock);
  int n = ncalls;
  pthread_mutex_unlock(&calls_lock);
  return n;
}

static char a_value, b_value, c_value;

/* ---- Keys ------------------------------------------------------------------------------ */
static void keys_exhaust_and_bad_keys_are_refused(void **state) {
  (void)state;
  assert_int_equal(vmt_tls_key_create(NULL, NULL), -EINVAL);
  vmt_tls_key_t k[VMT_TLS_KEYS_MAX];
  int n = 0;
  while (n < VMT_TLS_KEYS_MAX && vmt_tls_key_create(&k[n], NULL) == 0) {
    assert_true(k[n] > 0 && k[n] < VMT_TLS_KEYS_MAX);
    n++;
  }
  assert_int_equal(n, VMT_TLS_KEYS_MAX - 1);   /* key 0 is never handed out */
  vmt_tls_key_t extra;
  assert_int_equal(vmt_tls_key_create(&extra, NULL), -EAGAIN);
  for (int i = 0; i < n; i++) assert_int_equal(vmt_tls_key_delete(k[i]), 0);
  assert_int_equal(vmt_tls_key_delete(k[0]), -EINVAL);   /* twice */
  assert_int_equal(vmt_tls_key_delete(0), -EINVAL);
  assert_int_equal(vmt_tls_key_delete(VMT_TLS_KEYS_MAX), -EINVAL);
  assert_int_equal(vmt_tls_set(k[0], &a_value), -EINVAL);   /* deleted */
  assert_int_equal(vmt_tls_set(0, &a_value), -EINVAL);
  assert_int_equal(vmt_tls_set(VMT_TLS_KEYS_MAX + 7, &a_value), -EINVAL);
  assert_null(vmt_tls_get(0));
  assert_null(vmt_tls_get(VMT_TLS_KEYS_MAX));
  assert_null(vmt_tls_get(UINT32_MAX));
}

/* ---- A started thread: get, set, another thread's read, destructors at its end ------------- */
enum { END_RETURN, END_EXIT, END_CANCEL };

typedef struct worker {
  vmt_tls_key_t key, other, plain;
  latch_t set, go;
  pthread_t self;
  void *got_before, *got_after;
  int set_rc;
  int how;
} worker_t;

static void *set_and_wait(void *arg) {
  worker_t *w = arg;
  w->self = pthread_self();
  w->got_before = vmt_tls_get(w->key);
  w->set_rc = vmt_tls_set(w->key, &a_value);
  vmt_tls_set(w->other, &b_value);
  vmt_tls_set(w->plain, &c_value);   /* no destructor: dropped */
  w->got_after = vmt_tls_get(w->key);
  latch_open(&w->set);
  if (w->how == END_CANCEL) {
    for (;;) pthread_testcancel();   /* outside any interceptor: thread_test.c says why */
  }
  latch_wait(&w->go);
  if (w->how == END_EXIT) vmt_thread_exit(NULL);
  return NULL;
}

static void run_worker(int how) {
  worker_t w;
  memset(&w, 0, sizeof(w));
  assert_int_equal(vmt_tls_key_create(&w.key, record_call), 0);
  assert_int_equal(vmt_tls_key_create(&w.other, record_call), 0);
  assert_int_equal(vmt_tls_key_create(&w.plain, NULL), 0);
  reset_calls();
  w.how = how;
  latch_init(&w.set);
  latch_init(&w.go);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, set_and_wait, &w), 0);
  latch_wait(&w.set);
  void *v = NULL;
  assert_int_equal(vmt_thread_tls_get(t, w.key, &v), 0);
  assert_ptr_equal(v, &a_value);
  assert_int_equal(vmt_thread_tls_get(t, w.other, &v), 0);
  assert_ptr_equal(v, &b_value);
  /* The main thread is no runtime thread here: it has no slots. */
  assert_null(vmt_tls_get(w.key));
  assert_int_equal(vmt_tls_set(w.key, &c_value), -EPERM);
  if (how == END_CANCEL) assert_int_equal(pthread_cancel(w.self), 0);
  latch_open(&w.go);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_null(w.got_before);
  assert_int_equal(w.set_rc, 0);
  assert_ptr_equal(w.got_after, &a_value);
  assert_int_equal(calls_of(&a_value), 1);
  assert_int_equal(calls_of(&b_value), 1);
  assert_int_equal(total_calls(), 2);
  pthread_mutex_lock(&calls_lock);
  for (int i = 0; i < ncalls; i++) assert_ptr_equal(called_on[i], t);   /* on the thread */
  pthread_mutex_unlock(&calls_lock);
  /* Ended: every slot reads NULL. */
  assert_int_equal(vmt_thread_tls_get(t, w.key, &v), 0);
  assert_null(v);
  assert_int_equal(vmt_thread_tls_get(t, w.plain, &v), 0);
  assert_null(v);
  assert_int_equal(vmt_thread_tls_get(NULL, w.key, &v), -EINVAL);
  assert_int_equal(vmt_thread_tls_get(t, w.key, NULL), -EINVAL);
  assert_int_equal(vmt_thread_tls_get(t, 0, &v), -EINVAL);
  assert_int_equal(vmt_thread_release(t), 0);
  assert_int_equal(vmt_tls_key_delete(w.key), 0);
  assert_int_equal(vmt_tls_key_delete(w.other), 0);
  assert_int_equal(vmt_tls_key_delete(w.plain), 0);
  latch_destroy(&w.set);
  latch_destroy(&w.go);
}

static void destructors_run_once_at_return(void **state) {
  (void)state;
  run_worker(END_RETURN);
}

static void destructors_run_once_at_thread_exit(void **state) {
  (void)state;
  run_worker(END_EXIT);
}

static void destructors_run_once_at_cancellation(void **state) {
  (void)state;
  run_worker(END_CANCEL);
}

/* ---- Attached threads: detach, and ending while attached ---------------------------------- */
typedef struct attached {
  vmt_tls_key_t key;
  bool end_attached;   /* return without detaching: the runtime detaches it */
  int rc;
  void *after_detach;
  int calls_at_detach;
} attached_t;

static void *attach_set_leave(void *arg) {
  attached_t *a = arg;
  vmt_thread_t *self;
  a->rc = vmt_thread_attach(NULL, &self);
  if (a->rc) return NULL;
  a->rc = vmt_tls_set(a->key, &a_value);
  /* A nested attach and its detach are no ending: nothing is destructed. */
  vmt_thread_attach(NULL, &self);
  vmt_thread_detach();
  a->calls_at_detach = total_calls();
  if (a->end_attached) return NULL;
  vmt_thread_detach();
  a->after_detach = vmt_tls_get(a->key);
  return NULL;
}

static void run_attached(bool end_attached) {
  attached_t a;
  memset(&a, 0, sizeof(a));
  assert_int_equal(vmt_tls_key_create(&a.key, record_call), 0);
  reset_calls();
  a.end_attached = end_attached;
  pthread_t p;
  assert_int_equal(pthread_create(&p, NULL, attach_set_leave, &a), 0);
  assert_int_equal(pthread_join(p, NULL), 0);
  assert_int_equal(a.rc, 0);
  assert_int_equal(a.calls_at_detach, 0);
  assert_int_equal(calls_of(&a_value), 1);
  assert_int_equal(total_calls(), 1);
  assert_null(a.after_detach);
  assert_int_equal(vmt_tls_key_delete(a.key), 0);
}

static void destructors_run_once_at_last_detach(void **state) {
  (void)state;
  run_attached(false);
}

static void destructors_run_once_when_an_attached_thread_ends(void **state) {
  (void)state;
  run_attached(true);
}

/* ---- Rounds: a destructor that sets its slot again ----------------------------------------- */
static vmt_tls_key_t again_key;
static _Atomic int again_calls;

static void set_again(void *v) {
  atomic_fetch_add(&again_calls, 1);
  vmt_tls_set(again_key, v);   /* forever: only the round limit stops it */
}

static void *set_once(void *arg) {
  vmt_tls_set(again_key, arg);
  return NULL;
}

static void destructor_rounds_are_bounded(void **state) {
  (void)state;
  assert_int_equal(vmt_tls_key_create(&again_key, set_again), 0);
  atomic_store(&again_calls, 0);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, set_once, &a_value), 0);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_int_equal(atomic_load(&again_calls), VMT_TLS_DESTRUCTOR_ROUNDS);
  void *v = &b_value;
  assert_int_equal(vmt_thread_tls_get(t, again_key, &v), 0);
  assert_null(v);
  assert_int_equal(vmt_thread_release(t), 0);
  assert_int_equal(vmt_tls_key_delete(again_key), 0);
}

/* ---- Deletion clears the slot in every thread -------------------------------------------- */
typedef struct deleter {
  vmt_tls_key_t key;
  latch_t set, deleted;
  void *seen_after_delete;
} deleter_t;

static void *set_wait_read(void *arg) {
  deleter_t *d = arg;
  vmt_tls_set(d->key, &a_value);
  latch_open(&d->set);
  latch_wait(&d->deleted);
  d->seen_after_delete = vmt_tls_get(d->key);
  return NULL;
}

static void delete_clears_every_thread_and_calls_nothing(void **state) {
  (void)state;
  deleter_t d;
  memset(&d, 0, sizeof(d));
  assert_int_equal(vmt_tls_key_create(&d.key, record_call), 0);
  reset_calls();
  latch_init(&d.set);
  latch_init(&d.deleted);
  vmt_thread_t *t;
  assert_int_equal(vmt_thread_start(&t, set_wait_read, &d), 0);
  latch_wait(&d.set);
  assert_int_equal(vmt_tls_key_delete(d.key), 0);
  /* The same index comes back (the lowest free one) and starts NULL in the thread. */
  vmt_tls_key_t again;
  assert_int_equal(vmt_tls_key_create(&again, record_call), 0);
  assert_int_equal(again, d.key);
  void *v = &b_value;
  assert_int_equal(vmt_thread_tls_get(t, again, &v), 0);
  assert_null(v);
  latch_open(&d.deleted);
  assert_int_equal(vmt_thread_join(t, NULL), 0);
  assert_null(d.seen_after_delete);
  assert_int_equal(total_calls(), 0);
  assert_int_equal(vmt_thread_release(t), 0);
  assert_int_equal(vmt_tls_key_delete(again), 0);
  latch_destroy(&d.set);
  latch_destroy(&d.deleted);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(keys_exhaust_and_bad_keys_are_refused),
      cmocka_unit_test(destructors_run_once_at_return),
      cmocka_unit_test(destructors_run_once_at_thread_exit),
      cmocka_unit_test(destructors_run_once_at_cancellation),
      cmocka_unit_test(destructors_run_once_at_last_detach),
      cmocka_unit_test(destructors_run_once_when_an_attached_thread_ends),
      cmocka_unit_test(destructor_rounds_are_bounded),
      cmocka_unit_test(delete_clears_every_thread_and_calls_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
