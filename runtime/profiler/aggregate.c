/*
 * runtime/profiler/aggregate.c: the profile: one entry per profiled thread (by id, in arming
 * order) and one per distinct (thread, stack), each with its samples and summed weights. Two
 * open-addressing tables, kept at most half full. Written by the drainer under p->lock, read by
 * the outputs under the same lock. Frames are kept as sampled (addresses or the VM's values):
 * naming them is the outputs' work (symbols.c), done once per distinct frame.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/profiler/profiler_impl.h"

#define TABLE_MIN 64

static void *alloc_zeroed(size_t n, size_t size) {
  if (vmt__fault_hit(VMT__FAULT_ALLOC)) return NULL;
  return calloc(n, size);
}

vmt__prof_profile_t *vmt__prof_profile_new(const vmt__prof_config_t *cfg) {
  vmt__prof_profile_t *p = alloc_zeroed(1, sizeof(*p));
  if (p == NULL) return NULL;
  p->thread_table = alloc_zeroed(TABLE_MIN, sizeof(*p->thread_table));
  p->stack_table = alloc_zeroed(TABLE_MIN, sizeof(*p->stack_table));
  if (!p->thread_table || !p->stack_table) {
    free(p->thread_table);
    free(p->stack_table);
    free(p);
    return NULL;
  }
  p->thread_cap = p->stack_cap = TABLE_MIN;
  p->threads_tail = &p->threads;
  p->cfg = *cfg;
  pthread_mutex_init(&p->lock, NULL);
  return p;
}

void vmt__prof_profile_free(vmt__prof_profile_t *p) {
  if (p == NULL) return;
  for (size_t i = 0; i < p->stack_cap; i++) free(p->stack_table[i]);
  free(p->stack_table);
  for (vmt__prof_thread_t *th = p->threads, *next; th; th = next) {
    next = th->next;
    free(th->name);
    free(th);
  }
  free(p->thread_table);
  vmt__prof_names_free(p->names);
  pthread_mutex_destroy(&p->lock);
  free(p);
}

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

static size_t id_slot(int64_t id, size_t cap) { return (size_t)mix(0, (uint64_t)id) & (cap - 1); }

/* Doubles a table of pointers, placing each entry by its key. */
static bool grow(void ***table, size_t *cap, size_t (*place)(const void *e, size_t cap)) {
  size_t ncap = *cap * 2;
  void **bigger = alloc_zeroed(ncap, sizeof(*bigger));
  if (bigger == NULL) return false;
  for (size_t i = 0; i < *cap; i++) {
    void *e = (*table)[i];
    if (e == NULL) continue;
    size_t j = place(e, ncap);
    while (bigger[j]) j = (j + 1) & (ncap - 1);
    bigger[j] = e;
  }
  free(*table);
  *table = bigger;
  *cap = ncap;
  return true;
}

static size_t place_thread(const void *e, size_t cap) {
  return id_slot(((const vmt__prof_thread_t *)e)->id, cap);
}

static size_t place_stack(const void *e, size_t cap) {
  return (size_t)((const vmt__prof_stack_t *)e)->hash & (cap - 1);
}

vmt__prof_thread_t *vmt__prof_profile_find_thread(vmt__prof_profile_t *p, int64_t id) {
  for (size_t i = id_slot(id, p->thread_cap);; i = (i + 1) & (p->thread_cap - 1)) {
    vmt__prof_thread_t *th = p->thread_table[i];
    if (th == NULL || th->id == id) return th;
  }
}

vmt__prof_thread_t *vmt__prof_profile_thread(vmt__prof_profile_t *p, vmt__prof_slot_t *slot) {
  vmt__prof_thread_t *th = vmt__prof_profile_find_thread(p, slot->thread_id);
  if (th) {
    th->armings++;
    return th;
  }
  if (2 * (p->thread_count + 1) > p->thread_cap &&
      !grow((void ***)&p->thread_table, &p->thread_cap, place_thread))
    return NULL;
  th = alloc_zeroed(1, sizeof(*th));
  if (th == NULL) return NULL;
  th->id = slot->thread_id;
  th->name = slot->thread_name;   /* the slot's copy changes hands */
  slot->thread_name = NULL;
  th->category = slot->category;
  th->armings = 1;
  size_t i = id_slot(th->id, p->thread_cap);
  while (p->thread_table[i]) i = (i + 1) & (p->thread_cap - 1);
  p->thread_table[i] = th;
  p->thread_count++;
  *p->threads_tail = th;
  p->threads_tail = &th->next;
  return th;
}

void vmt__prof_profile_add(vmt__prof_profile_t *p, vmt__prof_thread_t *th, uint32_t kind,
                           const uintptr_t *frames, uint32_t n, uint32_t weight) {
  uint64_t h = mix(mix((uint64_t)(uintptr_t)th, kind), n);
  for (uint32_t i = 0; i < n; i++) h = mix(h, frames[i]);
  size_t i = (size_t)h & (p->stack_cap - 1);
  for (;; i = (i + 1) & (p->stack_cap - 1)) {
    vmt__prof_stack_t *s = p->stack_table[i];
    if (s == NULL) break;
    if (s->hash == h && s->thread == th && s->kind == kind && s->frame_count == n &&
        memcmp(s->frames, frames, n * sizeof(*frames)) == 0) {
      s->samples++;
      s->weight += weight;
      goto counted;
    }
  }
  if (2 * (p->stack_count + 1) > p->stack_cap) {
    if (!grow((void ***)&p->stack_table, &p->stack_cap, place_stack)) goto no_memory;
    i = (size_t)h & (p->stack_cap - 1);
    while (p->stack_table[i]) i = (i + 1) & (p->stack_cap - 1);
  }
  vmt__prof_stack_t *s = vmt__fault_hit(VMT__FAULT_ALLOC)
                             ? NULL
                             : malloc(sizeof(*s) + n * sizeof(*frames));
  if (s == NULL) goto no_memory;
  s->thread = th;
  s->hash = h;
  s->samples = 1;
  s->weight = weight;
  s->kind = kind;
  s->frame_count = n;
  memcpy(s->frames, frames, n * sizeof(*frames));
  p->stack_table[i] = s;
  p->stack_count++;
counted:
  th->samples++;
  th->weight += weight;
  p->samples++;
  p->weight += weight;
  return;
no_memory:
  p->oom = true;
}
