/*
 * runtime/sync/lock.c: the parts of runtime/sync/sync_impl.h that are not inline: the
 * type-stable slot pool, identities and display names, the contended acquire, out-of-order
 * held-list removal.
 *
 * Slots are carved from chunks of VMT__POOL_CHUNK and never given back to malloc: a management
 * reader or a late FUTEX_WAKE may still touch a slot after its lock was destroyed, and must
 * find lock-shaped memory there (see DESIGN in sync_impl.h). The chunks stay reachable from
 * pool_chunks, so leak checkers see no leak.
 */
#include "runtime/sync/sync_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VMT__POOL_CHUNK 64

/* Spinning before a contended acquisition blocks (docs/monitors.md, "Spinning": the
 * measurements that chose these). A spin looks at the word, CASes when it reads FREE, and
 * pauses between two looks, VMT__SPIN_BACKOFF_MIN PAUSEs at first, twice as many each round up
 * to VMT__SPIN_BACKOFF_MAX. Every look takes the owner's cache line, and a look that catches the
 * word free between the owner's exit and its next enter hands the lock over, line and all: the
 * fewer looks, the fewer hand-overs. Two threads on an empty critical section (the model in
 * docs/monitors.md) took 47-51 ns per pair each looking at every PAUSE, 21 ns backing off from
 * 1 PAUSE (22 hand-overs per 1000 pairs), 14 ns backing off from 8 (9 hand-overs); a serial
 * run of both would take 9. A spin lasts at most the lock's spin_budget PAUSEs, never less than
 * VMT__SPIN_FLOOR (so a budget of zero recovers). The budget adapts as HotSpot's
 * ObjectMonitor::_SpinDuration does: it starts at the limit; a spin that takes the lock raises
 * it to at least VMT__SPIN_POVERTY plus VMT__SPIN_BONUS, one that fails lowers it by
 * VMT__SPIN_PENALTY, so a lock held longer than a spin lasts soon stops costing spinning CPU.
 * The limit, 256 PAUSEs, is about 9 us here (36-40 ns each on Zen 4), the order of a sleep and
 * a wake-up (monitors.handoff: a park/unpark round trip, two of each, takes 4-6 us). Races on
 * the budget are harmless: every value stays in range. */
#define VMT__SPIN_BACKOFF_MIN 8
#define VMT__SPIN_BACKOFF_MAX 32
#define VMT__SPIN_LIMIT 256
#define VMT__SPIN_FLOOR 16
#define VMT__SPIN_POVERTY 64
#define VMT__SPIN_BONUS 8
#define VMT__SPIN_PENALTY 16

typedef struct pool_chunk {
  struct pool_chunk *next;
  struct vmt__lock slots[VMT__POOL_CHUNK];
} pool_chunk_t;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pool_chunk_t *pool_chunks;
static struct vmt__lock *pool_free;
static _Atomic uint32_t identity_counter;

/* A fork while another thread holds pool_lock would leave it locked forever in the child, which
 * may go on using the runtime: hold it across fork. */
static void pool_fork_prepare(void) { pthread_mutex_lock(&pool_lock); }
static void pool_fork_parent(void) { pthread_mutex_unlock(&pool_lock); }

/* A live slot in the fork child, where only the forking thread exists. It cannot be waiting or
 * blocked on anything (it is inside fork), so every waiter is a vanished thread: the wait set
 * and the handed list, whose nodes are on vanished stacks (glibc gives those stacks to the
 * child's next threads), and the counts of threads inside wait or a contended enter, which no
 * vanished thread will ever bring down, are emptied. A lock the forking thread holds stays its own. One held by a vanished
 * thread is marked VMT__OWNER_VANISHED, for the next acquirer to take over with -EOWNERDEAD;
 * one whose word is taken but whose owner is not named yet (or no longer) was being acquired or
 * released by a vanished thread outside its critical section, and is free. Only slots that need
 * it are written: a child does not copy every page of the pool. */
static void slot_fork_child(struct vmt__lock *l, uintptr_t self) {
  if (atomic_load_explicit(&l->magic, memory_order_relaxed) == 0) {
    /* A free slot keeps its count across reuse (vmt__lock_create): a vanished thread may have
     * been backing out of an enter of it (vmt__lock_destroy). */
    if (atomic_load_explicit(&l->entry_waiters, memory_order_relaxed) != 0)
      atomic_store_explicit(&l->entry_waiters, 0, memory_order_relaxed);
    return;
  }
  uintptr_t owner = atomic_load_explicit(&l->owner, memory_order_relaxed);
  if (atomic_load_explicit(&l->state, memory_order_relaxed) != VMT__LOCK_FREE) {
    if (owner == 0) {
      atomic_store_explicit(&l->state, VMT__LOCK_FREE, memory_order_relaxed);
    } else if (owner != self && owner != VMT__OWNER_VANISHED) {
      atomic_store_explicit(&l->owner, VMT__OWNER_VANISHED, memory_order_relaxed);
      l->recursions = 0;
      atomic_store_explicit(&l->state, VMT__LOCK_LOCKED, memory_order_relaxed);
    }
  }
  if (l->wait_head != NULL || l->wait_tail != NULL) l->wait_head = l->wait_tail = NULL;
  if (l->handed != NULL) l->handed = NULL;
  if (atomic_load_explicit(&l->wait_waiters, memory_order_relaxed) != 0)
    atomic_store_explicit(&l->wait_waiters, 0, memory_order_relaxed);
  if (atomic_load_explicit(&l->entry_waiters, memory_order_relaxed) != 0)
    atomic_store_explicit(&l->entry_waiters, 0, memory_order_relaxed);
}

static void pool_fork_child(void) {
  pthread_mutex_init(&pool_lock, NULL);
  /* The forking thread's lock identity (0 without one: never a slot's owner). */
  uintptr_t self = (uintptr_t)vmt__self;
  for (pool_chunk_t *c = pool_chunks; c != NULL; c = c->next)
    for (int i = 0; i < VMT__POOL_CHUNK; i++) slot_fork_child(&c->slots[i], self);
  /* Interrupters that were inside its (absent) wait node vanished: its next wait must not
   * wait for them (monitor_wait.c). */
  if (vmt__self != NULL)
    atomic_store_explicit(&vmt__self->sync.wait_users, 0, memory_order_relaxed);
}
VMT__PROCESS_STATE(lock_pool, .symbols = "pool_lock pool_chunks pool_free",
                   .rule = VMT__FORK_HOLD,
                   .fork = "the free list and the chunks are whole (held across fork); every "
                           "live slot's wait set, handed list and waiter counts are emptied "
                           "(its waiters vanished), a slot a vanished thread owned is marked "
                           "for takeover (-EOWNERDEAD); slots have no lock of their own; the "
                           "forking thread's count of interrupters inside its wait node is "
                           "zeroed",
                   .rank = VMT__RANK_SYNC, .prepare = pool_fork_prepare,
                   .parent = pool_fork_parent, .child = pool_fork_child);
VMT__PROCESS_STATE(lock_identity, .symbols = "identity_counter", .rule = VMT__FORK_KEEP,
                   .fork = "identities go on counting");

static int pool_take(struct vmt__lock **out) {
  pthread_mutex_lock(&pool_lock);
  if (pool_free == NULL) {
    pool_chunk_t *c = vmt__fault_hit(VMT__FAULT_ALLOC) ? NULL : aligned_alloc(64, sizeof(*c));
    if (c == NULL) {
      pthread_mutex_unlock(&pool_lock);
      return -ENOMEM;
    }
    memset(c, 0, sizeof(*c));
    for (int i = VMT__POOL_CHUNK - 1; i >= 0; i--) {
      c->slots[i].free_next = pool_free;
      pool_free = &c->slots[i];
    }
    c->next = pool_chunks;
    pool_chunks = c;
  }
  struct vmt__lock *l = pool_free;
  pool_free = l->free_next;
  pthread_mutex_unlock(&pool_lock);
  *out = l;
  return 0;
}

static void pool_give(struct vmt__lock *l) {
  pthread_mutex_lock(&pool_lock);
  l->free_next = pool_free;
  pool_free = l;
  pthread_mutex_unlock(&pool_lock);
}

/* Java shows identityHashCode in hex; ours must be unique and look like one. Multiplying by an
 * odd constant modulo 2^31 is a bijection on 31-bit values, so identities repeat only after
 * 2^31 creations; 0 is skipped so that "no identity" stays distinguishable. */
static int32_t next_identity(void) {
  for (;;) {
    uint32_t c = atomic_fetch_add_explicit(&identity_counter, 1, memory_order_relaxed) + 1;
    uint32_t id = (c * 0x2545F491u) & 0x7fffffffu;
    if (id != 0) return (int32_t)id;
  }
}

int vmt__lock_create(struct vmt__lock **out, uint32_t magic, const char *name,
                     const char *default_name) {
  if (name == NULL) name = default_name;
  size_t n = strlen(name);
  if (n > VMT_MONITOR_NAME_MAX) return -EINVAL;
  struct vmt__lock *l;
  int rc = pool_take(&l);
  if (rc != 0) return rc;

  /* Owner-side fields: nobody else may look at them before the slot is published. */
  l->recursions = 0;
  l->wait_head = l->wait_tail = NULL;
  l->handed = NULL;
  atomic_store_explicit(&l->times_epoch, 0, memory_order_relaxed);
  atomic_store_explicit(&l->blocked_ns, 0, memory_order_relaxed);

  /* Reader-visible fields: release stores, so a reader that sees any of them and then re-checks
   * its sequence lock sees everything that came before this slot's recycling. */
  uint64_t words[VMT__LOCK_NAME_WORDS] = {0};
  memcpy(words, name, n);
  for (int i = 0; i < VMT__LOCK_NAME_WORDS; i++)
    atomic_store_explicit(&l->name[i], words[i], memory_order_release);
  atomic_store_explicit(&l->identity, next_identity(), memory_order_release);
  atomic_store_explicit(&l->enters, 0, memory_order_relaxed);
  atomic_store_explicit(&l->contended_enters, 0, memory_order_relaxed);
  atomic_store_explicit(&l->spin_budget, VMT__SPIN_LIMIT, memory_order_relaxed);
  atomic_store_explicit(&l->waits, 0, memory_order_relaxed);
  /* entry_waiters is not reset: it was 0 when the slot was destroyed, and an enter that raced
   * that destroy may still be giving its count back (vmt__lock_destroy). */
  atomic_store_explicit(&l->wait_waiters, 0, memory_order_relaxed);
  atomic_store_explicit(&l->held_next, NULL, memory_order_relaxed);
  atomic_store_explicit(&l->owner, 0, memory_order_relaxed);
  atomic_store_explicit(&l->state, VMT__LOCK_FREE, memory_order_relaxed);
  atomic_store_explicit(&l->magic, magic, memory_order_release);
  *out = l;
  return 0;
}

/* A destroy may race enters of the same lock (a VM deflating a monitor it found idle), and is
 * all-or-nothing: it takes the lock word first, so that no enter can acquire the slot any
 * more, then checks that nobody waits. An enter that counted itself in entry_waiters after
 * that check, or is about to sleep on the word, finds the magic gone and backs out with
 * -EINVAL (vmt__lock_acquire_contended); the ones asleep are woken for it. The word stays
 * taken while the slot is in the pool; vmt__lock_create frees it. (The destroy used to check
 * the word and free the slot without taking it: an enter in between owned a freed slot, and
 * one asleep on its word was never woken; test/monitor_internal_test.c,
 * an_enter_overtaken_by_a_destroy_takes_nothing.) All seq_cst: the enter's count, then its
 * exchange on the word and load of the magic, against the destroy's word, count and magic. */
int vmt__lock_destroy(struct vmt__lock *l, uint32_t magic) {
  if (l == NULL || atomic_load_explicit(&l->magic, memory_order_acquire) != magic)
    return -EINVAL;
  uint32_t free_word = VMT__LOCK_FREE;
  if (!atomic_compare_exchange_strong_explicit(&l->state, &free_word, VMT__LOCK_LOCKED,
                                               memory_order_seq_cst, memory_order_relaxed))
    return -EBUSY;
  int rc = 0;
  uint32_t expected = magic;
  if (atomic_load_explicit(&l->entry_waiters, memory_order_seq_cst) != 0 ||
      atomic_load_explicit(&l->wait_waiters, memory_order_seq_cst) != 0)
    rc = -EBUSY;
  else if (!atomic_compare_exchange_strong_explicit(&l->magic, &expected, 0,
                                                    memory_order_seq_cst, memory_order_relaxed))
    rc = -EINVAL;
  if (rc != 0) {
    if (vmt__lock_release_word(l)) vmt__lock_wake(l);
    return rc;
  }
  if (atomic_exchange_explicit(&l->state, VMT__LOCK_LOCKED, memory_order_seq_cst) ==
      VMT__LOCK_CONTENDED)
    vmt_os_futex_wake(&l->state, INT32_MAX);
  pool_give(l);
  return 0;
}

bool vmt__lock_claim_vanished(struct vmt__lock *l, vmt_thread_t *t) {
  uintptr_t expected = VMT__OWNER_VANISHED;
  if (__builtin_expect(atomic_load_explicit(&l->owner, memory_order_relaxed) != expected, 1) ||
      !atomic_compare_exchange_strong_explicit(&l->owner, &expected, vmt__token(t),
                                               memory_order_acquire,
                                               memory_order_relaxed))
    return false;
  /* The word stays taken (it was marked taken for us); the rest is what an acquisition does. */
  l->recursions = 0;
  vmt__lock_count_enter(l);
  vmt__held_push(t, l);
  return true;
}

static void copy_name(const struct vmt__lock *l, char *buf) {
  uint64_t words[VMT__LOCK_NAME_WORDS];
  for (int i = 0; i < VMT__LOCK_NAME_WORDS; i++)
    words[i] = atomic_load_explicit(&((struct vmt__lock *)l)->name[i], VMT__SEQ_R);
  memcpy(buf, words, sizeof(words));
  buf[VMT_MONITOR_NAME_MAX] = '\0';   /* a torn read of a recycled slot stays a C string */
}

int vmt__lock_describe(const struct vmt__lock *l, char *buf, size_t len) {
  char name[VMT__LOCK_NAME_WORDS * 8];
  copy_name(l, name);
  int32_t id = atomic_load_explicit(&((struct vmt__lock *)l)->identity, VMT__SEQ_R);
  int n = snprintf(buf, len, "%s@%x", name, (unsigned)id);
  return n < 0 ? -EINVAL : n;
}

void vmt__lock_fill_desc(const struct vmt__lock *l, vmt__lock_desc_t *d) {
  bool is_sync =
      atomic_load_explicit(&((struct vmt__lock *)l)->magic, VMT__SEQ_R) ==
      VMT__LOCK_MAGIC_SYNC;
  snprintf(d->class_name, sizeof(d->class_name), "%s",
           is_sync ? "vmt.Synchronizer" : "vmt.Monitor");
  vmt__lock_describe(l, d->name, sizeof(d->name));
  d->identity = atomic_load_explicit(&((struct vmt__lock *)l)->identity, VMT__SEQ_R);
  d->is_sync = is_sync;
  d->depth = -1;
}

static void held_unlink(_Atomic uint32_t *seq, _Atomic(struct vmt__lock *) *head,
                        struct vmt__lock *l) {
  _Atomic(struct vmt__lock *) *link = head;
  for (struct vmt__lock *p = atomic_load_explicit(link, memory_order_relaxed); p != NULL;
       p = atomic_load_explicit(link, memory_order_relaxed)) {
    if (p == l) {
      uint32_t s = vmt__seq_begin(seq);
      atomic_store_explicit(link, atomic_load_explicit(&l->held_next, memory_order_relaxed),
                            VMT__SEQ_W);
      vmt__seq_end(seq, s);
      return;
    }
    link = &p->held_next;
  }
}

void vmt__held_remove_slow(vmt_thread_t *t, struct vmt__lock *l) {
  held_unlink(&t->sync.seq, &t->sync.held_head, l);
}

int vmt__lock_wake(struct vmt__lock *l) {
  vmt_os_futex_wake(&l->state, 1);
  return 0;
}

/* Handed waiters whose wake-up waits until the word is free; more are woken before. */
#define VMT__HANDED_BATCH 8

int vmt__lock_release_handed(struct vmt__lock *l) {
  /* Woken after the release, so that a waiter on this CPU, which the wake-up may run at once,
   * finds the word free instead of spinning on a lock whose owner it has preempted. A handed
   * waiter returns only once it owns l again, so the nodes are read while we still own l; after
   * the release only their futex words' addresses are used. A waiter that woke by itself may
   * have re-entered and returned by then: the wake-up finds no sleeper there, or one that now
   * sleeps at that address, and every waiter absorbs a spurious wake-up (sync_impl.h, DESIGN). */
  _Atomic uint32_t *words[VMT__HANDED_BATCH];
  int n = 0;
  for (vmt__wait_node_t *w = l->handed; w != NULL; w = w->handed_next) {
    if (n < VMT__HANDED_BATCH) words[n++] = &w->state;
    else vmt_os_futex_wake(&w->state, 1);   /* rare: many notifies before one release */
  }
  l->handed = NULL;
  if (vmt__lock_release_word(l)) vmt__lock_wake(l);
  for (int i = 0; i < n; i++) vmt_os_futex_wake(words[i], 1);
  return 0;
}

int vmt__lock_exit_slow(vmt_thread_t *t, struct vmt__lock *l) {
  vmt__held_pop(t, l);
  vmt__lock_release(l);
  return 0;
}

bool vmt__lock_spin(struct vmt__lock *l) {
  vmt_thread_t *self = vmt__current;
  int32_t budget = atomic_load_explicit(&l->spin_budget, memory_order_relaxed);
  int32_t limit = budget > VMT__SPIN_FLOOR ? budget : VMT__SPIN_FLOOR;
  int32_t delay = VMT__SPIN_BACKOFF_MIN;
  for (int32_t spent = 0; spent < limit; spent += delay) {
    if (atomic_load_explicit(&l->state, memory_order_relaxed) == VMT__LOCK_FREE &&
        vmt__lock_try_acquire(l)) {
      if (budget < VMT__SPIN_LIMIT)
        atomic_store_explicit(&l->spin_budget,
                              (budget > VMT__SPIN_POVERTY ? budget : VMT__SPIN_POVERTY) +
                                  VMT__SPIN_BONUS,
                              memory_order_relaxed);
      return true;
    }
    /* A safepoint, handshake or suspension waits for us: stop here, without prejudice to the
     * budget, and block, which is a safe region (HotSpot's TrySpin aborts on a pending
     * safepoint too), so that a spin never delays the VM services by its length. */
    if (self != NULL && (atomic_load_explicit(&self->exec, memory_order_relaxed) & VMT_POLL_MASK))
      return false;
    for (int32_t i = 0; i < delay; i++) vmt_os_cpu_relax();
    if (delay < VMT__SPIN_BACKOFF_MAX) delay *= 2;
  }
  atomic_store_explicit(&l->spin_budget,
                        budget > VMT__SPIN_PENALTY ? budget - VMT__SPIN_PENALTY : 0,
                        memory_order_relaxed);
  return false;
}

/* The slot was destroyed while we waited (vmt__lock_destroy), or, once we hold the word, has
 * been reused for a lock of another kind: not ours to take. */
static bool destroyed(struct vmt__lock *l, uint32_t magic) {
  return atomic_load_explicit(&l->magic, memory_order_seq_cst) != magic;
}

/* We hold l's word but l is no longer the lock we were asked for: give the word back. */
static int back_out(struct vmt__lock *l) {
  if (vmt__lock_release_word(l)) vmt__lock_wake(l);
  return -EINVAL;
}

int vmt__lock_acquire_contended(struct vmt__lock *l, uint32_t magic, int64_t deadline_ns) {
  /* The word says CONTENDED whenever we may sleep, so the owner's exit wakes us. We acquire
   * with CONTENDED too: another sleeper may remain (mutex2 in Drepper's paper). */
  while (atomic_exchange_explicit(&l->state, VMT__LOCK_CONTENDED, memory_order_seq_cst) !=
         VMT__LOCK_FREE) {
    if (destroyed(l, magic)) return -EINVAL;
    if (vmt__wait_turn(&l->state, VMT__LOCK_CONTENDED, deadline_ns) != 0) return -ETIMEDOUT;
  }
  return __builtin_expect(destroyed(l, magic), 0) ? back_out(l) : 0;
}

int vmt__lock_enter_contended(struct vmt__lock *l, vmt_thread_t *t, vmt__episode_kind_t kind,
                              int64_t deadline_ns, bool count_enter) {
  uint32_t magic = kind == VMT__EP_SYNC ? VMT__LOCK_MAGIC_SYNC : VMT__LOCK_MAGIC_MONITOR;
  if (vmt__lock_spin(l)) {
    if (__builtin_expect(destroyed(l, magic), 0)) return back_out(l);   /* reused meanwhile */
    /* It never blocked: RUNNABLE throughout, no blocked or waited count, not in the lock's
     * contended_enters (include/vmthread/monitor.h: enters that had to block). HotSpot's
     * TrySpin runs before the BLOCKED transition and its counting alike. */
    if (count_enter) vmt__lock_took(l, t);
    else {
      atomic_store_explicit(&l->owner, vmt__token(t), memory_order_relaxed);
      vmt__held_push(t, l);
    }
    return 0;
  }
  atomic_fetch_add_explicit(&l->contended_enters, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&l->entry_waiters, 1, memory_order_seq_cst);   /* vmt__lock_destroy */
  vmt__episode_t ep;
  vmt__episode_begin(t, &ep, kind, l, deadline_ns != VMT_OS_NO_DEADLINE);
  int rc = vmt__lock_acquire_contended(l, magic, deadline_ns);
  if (rc == 0) {
    atomic_store_explicit(&l->owner, vmt__token(t), memory_order_relaxed);
    if (count_enter) vmt__lock_count_enter(l);
  }
  /* The push shares the episode's write section: readers never see it owned and unlisted. */
  vmt__episode_end(t, &ep, l, rc == 0 ? l : NULL);
  atomic_fetch_sub_explicit(&l->entry_waiters, 1, memory_order_release);
  return rc;
}

int64_t vmt__deadline_after_or_now(int64_t timeout_ns) {
  int64_t now = vmt_os_java_time_nanos();
  if (timeout_ns <= 0) return now;
  if (timeout_ns >= VMT_OS_NO_DEADLINE - now) return VMT_OS_NO_DEADLINE;
  return now + timeout_ns;
}

int64_t vmt__deadline_after(int64_t timeout_ns) {
  if (timeout_ns <= 0) return VMT_OS_NO_DEADLINE;
  int64_t now = vmt_os_java_time_nanos();
  if (timeout_ns >= VMT_OS_NO_DEADLINE - now) return VMT_OS_NO_DEADLINE;
  return now + timeout_ns;
}

/* The one turn every blocking wait of the runtime takes (monotonic or wall-clock deadline). */
static int wait_turn(_Atomic uint32_t *word, uint32_t expected, int64_t deadline_ns,
                     bool realtime) {
  if (deadline_ns != VMT_OS_NO_DEADLINE &&
      (realtime ? vmt_os_wall_time_nanos() : vmt_os_java_time_nanos()) >= deadline_ns)
    return -ETIMEDOUT;
  /* The sleep is a safe region (HotSpot's ThreadBlockInVM): a safepoint, a handshake or a
   * suspension need not wait for it, and the thread stays put until they let it go. If it
   * has to stay, it first passes on the wake-up it may have been given (a lock hand-off meant
   * for whoever can take the lock now; every waiter absorbs a spurious one). */
  vmt_thread_t *t = vmt__current;
  int saved = vmt__region_enter(t);
  /* Any result: the caller re-checks its condition. */
  if (realtime)
    vmt_os_futex_wait_realtime(word, expected, deadline_ns);
  else
    vmt_os_futex_wait(word, expected, deadline_ns);
  vmt__region_leave(t, saved, word);
  return 0;
}

int vmt__wait_turn(_Atomic uint32_t *word, uint32_t expected, int64_t deadline_ns) {
  return wait_turn(word, expected, deadline_ns, false);
}

int vmt__wait_turn_realtime(_Atomic uint32_t *word, uint32_t expected, int64_t deadline_ns) {
  return wait_turn(word, expected, deadline_ns, true);
}

int64_t vmt__token_owner_id(const vmt__snapshot_t *snap, uintptr_t token) {
  if (snap == NULL || token == 0) return 0;
  /* Compare addresses only: the token may name a thread that has gone. A record still in the
   * snapshot but already removed (tombstoned) is not found by id: its thread has left. */
  for (size_t i = 0; i < snap->count; i++) {
    vmt_thread_t *t = snap->threads[i];
    if ((uintptr_t)t == token) return vmt__snapshot_find(snap, t->id) == t ? t->id : 0;
  }
  return 0;
}

void vmt__monitor_thread_end(vmt_thread_t *t) {
  struct vmt__lock *l;
  while ((l = atomic_load_explicit(&t->sync.held_head, memory_order_relaxed)) != NULL) {
    l->recursions = 0;
    vmt__held_pop(t, l);
    vmt__lock_release(l);
  }
}

void vmt__monitor_adopt(vmt_thread_t *to, vmt_thread_t *from) {
  struct vmt__lock *head = atomic_load_explicit(&from->sync.held_head, memory_order_relaxed);
  if (head == NULL) return;
  /* Owner words first, then the lists: a reader that sees `to` own a lock and not list it yet
   * (deadlock.c's second read) only drops a cycle that is still being formed. */
  for (struct vmt__lock *l = head; l != NULL;
       l = atomic_load_explicit(&l->held_next, memory_order_relaxed))
    atomic_store_explicit(&l->owner, vmt__token(to), memory_order_relaxed);
  uint32_t s = vmt__seq_begin(&to->sync.seq);
  atomic_store_explicit(&to->sync.held_head, head, VMT__SEQ_W);
  vmt__seq_end(&to->sync.seq, s);
  s = vmt__seq_begin(&from->sync.seq);
  atomic_store_explicit(&from->sync.held_head, NULL, VMT__SEQ_W);
  vmt__seq_end(&from->sync.seq, s);
}

bool vmt__monitor_keep(vmt_thread_t *t) {
  if (atomic_load_explicit(&t->sync.held_head, memory_order_relaxed) == NULL) return false;
  t->sync.silent = true;
  return true;
}
