/*
 * test/thread_util.h: what the thread module's tests share: a latch that holds threads until it
 * is opened and stays open (a plain pthread condition, so the runtime under test is not what
 * holds them), and bodies that return at once, wait on a latch, or join another thread.
 */
#ifndef VMT_TEST_THREAD_UTIL_H
#define VMT_TEST_THREAD_UTIL_H

#include <pthread.h>
#include <stdbool.h>

#include "vmthread.h"

typedef struct latch {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  bool open;
} latch_t;

static inline void latch_init(latch_t *l) {
  pthread_mutex_init(&l->lock, NULL);
  pthread_cond_init(&l->cond, NULL);
  l->open = false;
}

static inline void latch_open(latch_t *l) {
  pthread_mutex_lock(&l->lock);
  l->open = true;
  pthread_cond_broadcast(&l->cond);
  pthread_mutex_unlock(&l->lock);
}

static inline void latch_wait(latch_t *l) {
  pthread_mutex_lock(&l->lock);
  while (!l->open) pthread_cond_wait(&l->cond, &l->lock);
  pthread_mutex_unlock(&l->lock);
}

static inline void latch_destroy(latch_t *l) {
  pthread_mutex_destroy(&l->lock);
  pthread_cond_destroy(&l->cond);
}

/* Thread bodies: return the argument; wait until the latch `arg` opens. */
static inline void *return_arg(void *arg) { return arg; }
static inline void *wait_for_latch(void *arg) {
  latch_wait((latch_t *)arg);
  return NULL;
}

/* A body that joins j->target and keeps what the join returned. */
typedef struct joiner {
  vmt_thread_t *target;
  int rc;
} joiner_t;

static inline void *join_target(void *arg) {
  joiner_t *j = arg;
  j->rc = vmt_thread_join(j->target, NULL);
  return NULL;
}

#endif /* VMT_TEST_THREAD_UTIL_H */
