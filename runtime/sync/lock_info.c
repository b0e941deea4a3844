/*
 * runtime/sync/lock_info.c: vmt__thread_lock_info, the management module's view of another
 * thread's locks: its state, what it is blocked or waiting on and who owns that, its counts and
 * times, and (optionally) the monitors and synchronizers it holds.
 *
 * The copy is taken under the thread's sequence lock (runtime/sync/sync_impl.h, DESIGN): read the
 * sequence, copy, re-read; retry if the thread wrote in between. A validated copy is a state
 * the thread really was in: every lock in it was held (or waited for) by the thread for the
 * whole copy, so none of them can have been destroyed meanwhile, and the lock slots are
 * type-stable memory anyway. The thread is never stopped nor made to wait.
 *
 * The owner of the lock waited for is read inside the copy as a token (a record address) and
 * named through a registry snapshot acquired *before* the copy: a record that snapshot holds
 * cannot be recycled while it is protected, so the id found is the owner's at the time of the
 * read. With a snapshot taken after, the owner could have exited and its record been reused by
 * a thread that never owned the lock, which would then be named.
 *
 * The state and the kind of wait (wait_bits) are one such copy: both are written in the write
 * section that begins or ends an episode (episode.c), so a reader sees BLOCKED with
 * BLOCKED_ON_MONITOR_ENTER, WAITING or TIMED_WAITING with exactly one of SLEEPING (timed
 * only), PARKED and IN_OBJECT_WAIT, and RUNNABLE with none.
 *
 * Times include the episode in progress (the time so far of a thread still blocked or waiting),
 * as HotSpot's do, when it began under the current contention-monitoring epoch.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/sync/sync_impl.h"

/* The class a joined thread is named by as a lock (include/vmthread/management.h). */
#define VMT__THREAD_LOCK_CLASS "vmt.Thread"

/* Inside a read section: accumulated blocked and waited time, the running episode's included;
 * -1 while contention monitoring is off. */
static void read_times(vmt_thread_t *t, uint64_t epoch, int64_t *blocked, int64_t *waited) {
  if (epoch == 0) {
    *blocked = *waited = -1;
    return;
  }
  bool current = atomic_load_explicit(&t->sync.times_epoch, VMT__SEQ_R) == epoch;
  *blocked = current ? atomic_load_explicit(&t->sync.blocked_ns, VMT__SEQ_R) : 0;
  *waited = current ? atomic_load_explicit(&t->sync.waited_ns, VMT__SEQ_R) : 0;
  if (atomic_load_explicit(&t->sync.ep_epoch, VMT__SEQ_R) != epoch) return;
  int64_t so_far = vmt_os_elapsed_nanos() - atomic_load_explicit(&t->sync.ep_start_ns, VMT__SEQ_R);
  if (so_far < 0) so_far = 0;
  if (atomic_load_explicit(&t->sync.ep_kind, VMT__SEQ_R) == VMT__EP_ENTER + 1)
    *blocked += so_far;
  else
    *waited += so_far;
}

/* The JVMTI bit of a published episode kind (registry.h, sync.ep_kind): Java's join is an
 * Object.wait on the thread, and a synchronizer's waiters park (AbstractQueuedSynchronizer),
 * so jstack names both kinds that way. */
static uint32_t kind_bits(uint8_t kind) {
  switch (kind) {
    case VMT__EP_ENTER + 1:
      return VMT_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER;
    case VMT__EP_WAIT + 1:
    case VMT__EP_JOIN + 1:
      return VMT_THREAD_STATE_IN_OBJECT_WAIT;
    case VMT__EP_SYNC + 1:
    case VMT__EP_PARK + 1:
      return VMT_THREAD_STATE_PARKED;
    case VMT__EP_SLEEP + 1:
      return VMT_THREAD_STATE_SLEEPING;
    default:
      return 0;
  }
}

/* A park blocker as a lock descriptor (inside the reader's section); its owner's id. */
static int64_t fill_blocker(struct vmt__thread_cold *c, vmt__lock_desc_t *d) {
  enum { WORDS = sizeof(c->blocker_class) / sizeof(c->blocker_class[0]) };
  uint64_t words[WORDS];
  for (int i = 0; i < WORDS; i++) words[i] = atomic_load_explicit(&c->blocker_class[i], VMT__SEQ_R);
  memcpy(d->class_name, words, sizeof(d->class_name) - 1);
  d->class_name[sizeof(d->class_name) - 1] = '\0';   /* a torn copy stays a C string */
  d->identity = atomic_load_explicit(&c->blocker_hash, VMT__SEQ_R);
  snprintf(d->name, sizeof(d->name), "%s@%x", d->class_name, (unsigned)d->identity);
  d->is_sync = false;
  d->depth = -1;
  return atomic_load_explicit(&c->blocker_owner, VMT__SEQ_R);
}

/* A joined thread as the lock its joiner waits on: "vmt.Thread@<id in hex>", the id as its
 * identity (Java: java.lang.Thread@<identity hash>). */
static void fill_thread(const vmt_thread_t *joined, vmt__lock_desc_t *d) {
  snprintf(d->class_name, sizeof(d->class_name), "%s", VMT__THREAD_LOCK_CLASS);
  d->identity = (int32_t)joined->id;
  snprintf(d->name, sizeof(d->name), "%s@%llx", d->class_name, (unsigned long long)joined->id);
  d->is_sync = false;
  d->depth = -1;
}

int vmt__thread_lock_info(struct vmt_thread *t, bool want_held, vmt__thread_lock_info_t *out) {
  if (t == NULL || out == NULL) return -EINVAL;
  memset(out, 0, sizeof(*out));
  const vmt__snapshot_t *snap = vmt__registry_acquire();
  if (snap == NULL) return -ENOMEM;
  vmt__lock_desc_t *held = NULL;
  size_t cap = 0;
  uintptr_t owner_token = 0;
  int64_t blocker_owner = 0;
  vmt__thread_lock_info_t copy;

  for (unsigned attempts = 0;;) {
    uint32_t s1 = vmt__seq_read_begin(&t->sync.seq, &attempts);
    memset(&copy, 0, sizeof(copy));
    copy.state = atomic_load_explicit(&t->state, VMT__SEQ_R);
    copy.wait_bits = kind_bits(atomic_load_explicit(&t->sync.ep_kind, VMT__SEQ_R));
    struct vmt__lock *l = (struct vmt__lock *)atomic_load_explicit(&t->sync.blocked_on, VMT__SEQ_R);
    if (l == NULL)
      l = (struct vmt__lock *)atomic_load_explicit(&t->sync.waiting_on, VMT__SEQ_R);
    if (l == NULL)
      l = (struct vmt__lock *)atomic_load_explicit(&t->sync.parked_on, VMT__SEQ_R);
    owner_token = 0;
    blocker_owner = 0;
    vmt_thread_t *joined;
    if (l != NULL) {
      copy.has_lock = true;
      vmt__lock_fill_desc(l, &copy.lock);
      owner_token = atomic_load_explicit(&l->owner, VMT__SEQ_R);
    } else if ((joined = atomic_load_explicit(&t->sync.joining, VMT__SEQ_R)) != NULL) {
      /* Java's join waits on the Thread's monitor, which nobody owns meanwhile. The joiner
       * holds a reference on the record, and the sequence check below covers the id read. */
      copy.has_lock = true;
      fill_thread(joined, &copy.lock);
    } else if (atomic_load_explicit(&t->sync.parking, VMT__SEQ_R) &&
               atomic_load_explicit(&t->sync.blocker_set, VMT__SEQ_R)) {
      copy.has_lock = true;
      blocker_owner = fill_blocker(t->cold, &copy.lock);
    }
    copy.blocked_count = atomic_load_explicit(&t->sync.blocked_count, VMT__SEQ_R);
    copy.waited_count = atomic_load_explicit(&t->sync.waited_count, VMT__SEQ_R);
    read_times(t, vmt__contention_current_epoch(), &copy.blocked_ns, &copy.waited_ns);
    size_t n = 0;
    bool torn = false;
    if (want_held) {
      for (struct vmt__lock *h = atomic_load_explicit(&t->sync.held_head, VMT__SEQ_R);
           h != NULL; h = atomic_load_explicit(&h->held_next, VMT__SEQ_R)) {
        if (n < cap) vmt__lock_fill_desc(h, &held[n]);
        /* A torn walk may run in a cycle: the sequence has moved then, and a check ends it. */
        if (++n % VMT__HELD_WALK_CHECK == 0 &&
            atomic_load_explicit(&t->sync.seq, VMT__SEQ_R) != s1) {
          torn = true;
          break;
        }
      }
    }
    if (torn || atomic_load_explicit(&t->sync.seq, VMT__SEQ_R) != s1) continue;
    if (n > cap) {
      /* Grow outside the read and copy again: allocation never happens under the lock. */
      vmt__lock_desc_t *bigger = vmt__fault_hit(VMT__FAULT_ALLOC)
                                     ? NULL
                                     : realloc(held, (n + 4) * sizeof(*held));
      if (bigger == NULL) {
        free(held);
        vmt__registry_release(snap);
        return -ENOMEM;
      }
      held = bigger;
      cap = n + 4;
      continue;
    }
    copy.held_count = n;
    break;
  }

  /* Depth counts from the outermost lock, the list runs innermost first. */
  for (size_t i = 0; i < copy.held_count; i++) held[i].depth = (int32_t)(copy.held_count - 1 - i);
  if (copy.held_count == 0) {
    free(held);
    held = NULL;
  }
  copy.held = held;
  (void)vmt__fault_hit(VMT__FAULT_LOCK_OWNER);   /* a test may end the owner here */
  int64_t id = vmt__token_owner_id(snap, owner_token);
  vmt__registry_release(snap);
  copy.lock_owner_id = id > 0 ? id : blocker_owner > 0 ? blocker_owner : -1;
  /* Not part of the copy's consistent state: the status is set by other threads at any time,
   * as JVMTI's INTERRUPTED bit is. */
  copy.interrupted = atomic_load_explicit(&t->sync.interrupted, memory_order_relaxed) != 0;
  *out = copy;
  return 0;
}
