/*
 * test/mx_util.h: what the management tests share: a gate that holds threads at a known point
 * (a plain pthread condition, so the runtime under test is not what holds them), thread start
 * helpers with options, one idle thread held at a gate (start_gated, finish_gated), a body that
 * enters and leaves a monitor, a CPU burner (test/cpu_burn.h), and polling for a thread state
 * with a generous deadline (a polled condition, never a timing assertion).
 */
#ifndef VMT_TEST_MX_UTIL_H
#define VMT_TEST_MX_UTIL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <vmthread.h>

#include "test/cpu_burn.h"

typedef struct gate {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int arrived;
  int opened; /* generation: threads wait for it to exceed what they saw */
} gate_t;

static inline void gate_init(gate_t *g) {
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->cv, NULL);
  g->arrived = 0;
  g->opened = 0;
}

static inline void gate_destroy(gate_t *g) {
  pthread_mutex_destroy(&g->mu);
  pthread_cond_destroy(&g->cv);
}

/* Called by a held thread: counts itself in, then waits for the next opening. */
static inline void gate_pass(gate_t *g) {
  pthread_mutex_lock(&g->mu);
  int seen = g->opened;
  g->arrived++;
  pthread_cond_broadcast(&g->cv);
  while (g->opened == seen) pthread_cond_wait(&g->cv, &g->mu);
  pthread_mutex_unlock(&g->mu);
}

/* Called by the test: waits until n threads in total have arrived. */
static inline void gate_await(gate_t *g, int n) {
  pthread_mutex_lock(&g->mu);
  while (g->arrived < n) pthread_cond_wait(&g->cv, &g->mu);
  pthread_mutex_unlock(&g->mu);
}

static inline void gate_open(gate_t *g) {
  pthread_mutex_lock(&g->mu);
  g->opened++;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
}

static inline void *gate_body(void *arg) {
  gate_pass((gate_t *)arg);
  return NULL;
}

/* A thread in vmt_monitor_wait (WAITING on w->m) until waiter_release. */
typedef struct waiter {
  vmt_monitor_t *m;
  _Atomic bool notified;
} waiter_t;

static inline void *wait_on_monitor(void *arg) {
  waiter_t *w = arg;
  vmt_monitor_enter(w->m);
  while (!atomic_load(&w->notified)) vmt_monitor_wait(w->m, 0);
  vmt_monitor_exit(w->m);
  return NULL;
}

static inline void waiter_release(waiter_t *w) {
  vmt_monitor_enter(w->m);
  atomic_store(&w->notified, true);
  vmt_monitor_notify_all(w->m);
  vmt_monitor_exit(w->m);
}

static inline vmt_thread_t *start_named(const char *name, bool daemon, vmt_thread_fn fn,
                                        void *arg) {
  vmt_thread_options_t o;
  memset(&o, 0, sizeof(o));
  o.flags = VMT_THREAD_OPT_NAME | VMT_THREAD_OPT_DAEMON;
  o.name = name;
  o.daemon = daemon;
  vmt_thread_t *t = NULL;
  if (vmt_thread_start_ex(&t, &o, fn, arg) != 0) return NULL;
  return t;
}

/* Initializes g and starts one thread held at it (a live, idle thread to query); returns once
 * the thread has arrived. finish_gated ends both. */
static inline vmt_thread_t *start_gated(gate_t *g, const char *name, bool daemon) {
  gate_init(g);
  vmt_thread_t *t = start_named(name, daemon, gate_body, g);
  gate_await(g, 1);
  return t;
}

/* Opens g, joins and releases t, the thread start_gated held at it, and destroys g. */
static inline void finish_gated(gate_t *g, vmt_thread_t *t) {
  gate_open(g);
  vmt_thread_join(t, NULL);
  vmt_thread_release(t);
  gate_destroy(g);
}

static inline void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* Polls until t reaches state (true) or 10 s pass (false): a deadline for a hung test, far
 * beyond any expected delay. */
static inline bool await_state(vmt_thread_t *t, vmt_thread_state_t state) {
  for (int i = 0; i < 10000; i++) {
    if (vmt_thread_state(t) == state) return true;
    sleep_ms(1);
  }
  return false;
}

static inline bool ids_contain(const int64_t *ids, size_t n, int64_t id) {
  for (size_t i = 0; i < n; i++)
    if (ids[i] == id) return true;
  return false;
}

/* Enters and leaves the monitor arg (blocks while another thread holds it). */
static inline void *enter_and_leave(void *arg) {
  vmt_monitor_enter(arg);
  vmt_monitor_exit(arg);
  return NULL;
}

#endif /* VMT_TEST_MX_UTIL_H */
