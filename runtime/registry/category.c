/*
 * runtime/registry/category.c: thread categories ("app", "gc", "compiler", ...), interned for the
 * life of the process. Eclipse OMR keeps per-category CPU time for GC, JIT and application threads;
 * a VM asks "how much CPU did the GC use" without walking threads that have long exited.
 *
 * The list only grows (a VM has a handful of categories) and entries are never freed, so
 * readers walk it without any protection: a new entry is fully written before the release
 * store that links it at the head. Creation takes a mutex (one allocation, rare).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/registry/registry_impl.h"

static pthread_mutex_t category_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(vmt__category_t *) categories;

static vmt__category_t *find(const char *name) {
  for (vmt__category_t *c = atomic_load_explicit(&categories, memory_order_acquire); c;
       c = c->next)
    if (strcmp(c->name, name) == 0) return c;
  return NULL;
}

vmt__category_t *vmt__category_intern(const char *name) {
  vmt__category_t *c = find(name);
  if (c) return c;
  pthread_mutex_lock(&category_lock);
  c = find(name);
  if (c == NULL && vmt__fault_hit(VMT__FAULT_ALLOC) == 0 && (c = calloc(1, sizeof(*c)))) {
    snprintf(c->name, sizeof(c->name), "%s", name);
    c->next = atomic_load_explicit(&categories, memory_order_relaxed);
    atomic_store_explicit(&categories, c, memory_order_release);
  }
  pthread_mutex_unlock(&category_lock);
  return c;
}

vmt__category_t *vmt__categories(void) {
  return atomic_load_explicit(&categories, memory_order_acquire);
}

static void category_fork_prepare(void) { pthread_mutex_lock(&category_lock); }
static void category_fork_parent(void) { pthread_mutex_unlock(&category_lock); }
/* Runs before the registry's child handler, which counts the surviving thread back in. */
static void category_fork_child(void) {
  pthread_mutex_init(&category_lock, NULL);
  for (vmt__category_t *c = vmt__categories(); c; c = c->next)
    atomic_store_explicit(&c->live, 0, memory_order_relaxed);
}
VMT__PROCESS_STATE(categories, .symbols = "category_lock categories", .rule = VMT__FORK_HOLD,
                   .fork = "the list is whole (held across fork) and kept, with the exited CPU "
                           "totals; live counts are zeroed, then the registry counts the forking "
                           "thread back in",
                   .rank = VMT__RANK_REGISTRY + 3, .prepare = category_fork_prepare,
                   .parent = category_fork_parent, .child = category_fork_child);
