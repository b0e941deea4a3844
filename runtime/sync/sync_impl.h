/*
 * runtime/sync/sync_impl.h: what the files of the sync package share: monitors (monitor.c,
 * monitor_wait.c) and synchronizers (synchronizer.c) have the lock slot, the owner token, the
 * per-thread held list, blocking episodes (thread state and statistics) and the slot pool in
 * common; park.c the episodes and the blocking turn. Hidden; nothing outside runtime/sync/
 * includes it.
 *
 * DESIGN
 * - Lock word: a 32-bit futex word, 0 free, 1 locked, 2 locked and maybe contended (Drepper,
 *   "Futexes Are Tricky", mutex2). Uncontended enter is one CAS 0->1, exit one exchange to 0;
 *   only an exchange that returns 2 makes a FUTEX_WAKE. Next to it the owner token: the
 *   owner's lock identity (vmt__self), a vmt_thread_t * that is the same for the thread's whole
 *   life (sync.h: a started thread's record; an attached thread's record; for any
 *   other thread a record of kind IMPLICIT made at its first lock). No two live threads share
 *   one, and none is recycled while a lock names it (a thread's end releases what it holds).
 * - Held list: each thread keeps the locks it holds as an intrusive singly linked list through
 *   the lock slots (held_next), innermost first; no allocation, no capacity limit. Releases are
 *   LIFO in practice (Java monitors are block structured), so popping is O(1); an out-of-order
 *   release walks the list.
 * - Readers on other threads (management, deadlock detection) copy a thread's lock state under
 *   the thread's sequence lock (t->sync.seq; readers retry). The owner never waits for a
 *   reader. On x86-64 the writer's side is three plain stores and no fence. The writer is the
 *   thread itself, with one exception that never overlaps it: a notifier owning the monitor
 *   writes the state of the waiter it picks, which sleeps meanwhile (monitor_wait.c).
 * - Type-stable memory: lock slots come from chunks that are never returned to malloc. A reader
 *   that races with a destroy reads a recycled slot, never freed memory; every field a reader
 *   touches is atomic, and its sequence lock tells it to retry. A late FUTEX_WAKE on a recycled
 *   slot is a spurious wake-up, which every waiter absorbs. A destroy takes the lock word and
 *   leaves it taken in the pool (create frees it), so an enter that raced it acquires nothing
 *   and backs out with -EINVAL (lock.c, vmt__lock_destroy).
 * - Everything else (thread state, counts, times, per-lock statistics) is written on the slow
 *   path only: the uncontended path records ownership, the enter count and the held list.
 * - A contended enter first spins (vmt__lock_spin: load the word, CAS when it reads free, pause
 *   with exponential backoff in between) and writes nothing if the spin takes the lock: no
 *   thread state, no blocked count, no RMW on the lock, as HotSpot's TrySpin runs before the
 *   BLOCKED transition. Only a failed spin makes the enter a blocking one.
 * - notify hands the waiter to the lock instead of waking it (the handed list, which the
 *   owner's release wakes once the word is free); notify_all requeues the waiters onto the lock
 *   word (monitor_wait.c), so a thread may sleep on the word without having announced itself:
 *   whoever has slept there re-acquires with CONTENDED, as every sleeper does
 *   (vmt__lock_acquire_contended).
 */
#ifndef VMT_RUNTIME_SYNC_SYNC_IMPL_H
#define VMT_RUNTIME_SYNC_SYNC_IMPL_H

#if !defined(VMT_IN_SYNC) && !defined(VMT_TEST_OF_INTERNALS)
#error "this header is private to runtime/sync/ (runtime/sync/BUILD.bazel)"
#endif

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/process.h"
#include "runtime/registry/registry.h"
#include "runtime/sync/sync.h"
#include "runtime/vmservices/vmservices.h"

#define VMT__LOCK_MAGIC_MONITOR 0x766d6d6fu   /* "vmmo" */
#define VMT__LOCK_MAGIC_SYNC 0x766d7379u      /* "vmsy" */
#define VMT__LOCK_NAME_WORDS ((VMT_MONITOR_NAME_MAX + 1 + 7) / 8)

/* Lock word values. */
#define VMT__LOCK_FREE 0u
#define VMT__LOCK_LOCKED 1u
#define VMT__LOCK_CONTENDED 2u

/* A thread in vmt_monitor_wait (monitor_wait.c; defined below the episodes). */
typedef struct vmt__wait_node vmt__wait_node_t;

struct vmt__lock {
  /* Hot: the uncontended path touches only this cache line. */
  _Atomic uint32_t state;                   /* VMT__LOCK_FREE / LOCKED / CONTENDED */
  _Atomic uint32_t magic;                   /* VMT__LOCK_MAGIC_*, 0 in a free slot */
  _Atomic uintptr_t owner;                  /* owner token, 0 when free */
  uint32_t recursions;                      /* owner only: enters beyond the first */
  _Atomic uint64_t enters;                  /* owner only writes (load + store, no RMW) */
  _Atomic(struct vmt__lock *) held_next;    /* next outer lock in the owner's held list */
  vmt__wait_node_t *handed;                 /* owner only: notified waiters the release wakes */
  /* Owner only writes (wait counts itself in and out while it owns the lock), so they travel
   * with the lock's line instead of bouncing the next one between waiter and notifier. */
  _Atomic uint64_t waits;
  _Atomic uint32_t wait_waiters;            /* threads inside wait, until they have re-entered */
  /* Slow path, on the next cache line: contenders bump these while the owner works on the
   * first one. */
  _Alignas(64) _Atomic uint64_t contended_enters;   /* those that blocked (after a spin) */
  _Atomic int32_t spin_budget;       /* pauses the next spin may take (lock.c, adaptive) */
  /* Threads inside a contended enter (and wait_waiters above): zeroed in a fork child, with the
   * wait set (lock.c, slot_fork_child: their threads vanished), and a vanished owner marked. */
  _Atomic uint32_t entry_waiters;
  vmt__wait_node_t *wait_head;              /* owner only: FIFO wait set */
  vmt__wait_node_t *wait_tail;
  /* Blocked time and the contention-monitoring epoch it belongs to: written only by a thread
   * that has just entered after blocking, so while it owns the lock (episode.c); read by anyone.
   * No lock of their own: a per-lock mutex could be held by a thread that vanishes at fork. */
  _Atomic int64_t blocked_ns;
  _Atomic uint64_t times_epoch;
  /* Identity: written at create, read by anyone (atomics: a slot may be recycled under a
   * racing reader, whose sequence lock then makes it retry). */
  _Atomic int32_t identity;
  _Atomic uint64_t name[VMT__LOCK_NAME_WORDS];
  struct vmt__lock *free_next;              /* pool only, under the pool lock */
} __attribute__((aligned(64)));

struct vmt_monitor {
  struct vmt__lock lock;
};
struct vmt_sync {
  struct vmt__lock lock;
};

_Static_assert(offsetof(struct vmt__lock, wait_waiters) + sizeof(uint32_t) <= 64,
               "the owner's fields fit the lock's first cache line");

/* The lock behind a handle (the first member of vmt_monitor / vmt_sync, so the cast is exact
 * and NULL stays NULL) if it is a live lock of the kind magic says; else NULL (-EINVAL). */
static inline struct vmt__lock *vmt__lock_checked(const void *handle, uint32_t magic) {
  struct vmt__lock *l = (struct vmt__lock *)handle;
  if (__builtin_expect(l == NULL, 0) ||
      __builtin_expect(atomic_load_explicit(&l->magic, memory_order_relaxed) != magic, 0))
    return NULL;
  return l;
}

/* ---- Pool (lock.c) -------------------------------------------------------------------- */
/* A fresh slot with magic set, named and identified into *out (not NULL: the callers check);
 * -EINVAL for a name longer than VMT_MONITOR_NAME_MAX, -ENOMEM. */
int vmt__lock_create(struct vmt__lock **out, uint32_t magic, const char *name,
                     const char *default_name);
/* -EINVAL unless l carries magic, -EBUSY while owned or waited on; else frees the slot. */
int vmt__lock_destroy(struct vmt__lock *l, uint32_t magic);
/* Takes over l if its owner vanished at fork (VMT__OWNER_VANISHED): ownership at depth 1 and
 * the held-list push as for any acquisition; true if the caller now owns it. */
bool vmt__lock_claim_vanished(struct vmt__lock *l, vmt_thread_t *t);
/* "name@hexid" into buf (always terminated when len > 0); the length it needs. */
int vmt__lock_describe(const struct vmt__lock *l, char *buf, size_t len);
/* Copies class, display name and identity into a descriptor. Racing readers welcome. */
void vmt__lock_fill_desc(const struct vmt__lock *l, vmt__lock_desc_t *d);

/* ---- Owner token: the calling thread's lock identity ---------------------------------- *
 * The owner's lock identity (sync.h), or, in a fork child, VMT__OWNER_VANISHED for a lock whose
 * owner did not survive the fork (never an address: records are aligned). The next thread to
 * take such a lock takes it over with vmt__lock_claim_vanished and reports -EOWNERDEAD
 * (docs/design.md, "fork"). */
#define VMT__OWNER_VANISHED ((uintptr_t)1)
/* t's token; t is never NULL here (a thread without an identity owns nothing). */
static inline uintptr_t vmt__token(vmt_thread_t *t) { return (uintptr_t)t; }
/* True if tok names t, the caller's identity (NULL: it has none, so it owns nothing). */
static inline bool vmt__token_is_self(uintptr_t tok, vmt_thread_t *t) {
  return t != NULL && tok == (uintptr_t)t;
}
/* Gives the calling thread, which has none, an implicit identity (identity.c). 0, -ENOMEM,
 * -EAGAIN (no end hook: runtime/os.h). */
int vmt__identity_make(vmt_thread_t **out);
/* The caller's identity, made on its first lock if it has none; NULL with *err (-ENOMEM,
 * -EAGAIN) if it cannot be made. */
static inline vmt_thread_t *vmt__identity(int *err) {
  vmt_thread_t *t = vmt__self;
  if (__builtin_expect(t != NULL, 1)) return t;
  *err = vmt__identity_make(&t);
  return t;
}

/* ---- Sequence lock (writer: the owning thread only) ----------------------------------- *
 * Writer: odd store, data stores with release, even store with release. Reader: acquire load
 * of the sequence, data loads with acquire, relaxed re-load of the sequence. A reader that
 * sees any store of a write section thereby sees the odd value before it, so its re-load
 * differs. This is the fence-free variant of Boehm's ("Can Seqlocks Get Along with Programming
 * Language Memory Models?", MSPC 2012): on x86-64 a release store and an acquire load are plain
 * moves, and ThreadSanitizer, which models no fences, sees every ordering it relies on. */
#define VMT__SEQ_W memory_order_release   /* data stores inside a write section */
#define VMT__SEQ_R memory_order_acquire   /* data loads inside a read section */
static inline uint32_t vmt__seq_begin(_Atomic uint32_t *seq) {
  uint32_t s = atomic_load_explicit(seq, memory_order_relaxed);
  atomic_store_explicit(seq, s + 1, memory_order_relaxed);
  return s;
}
static inline void vmt__seq_end(_Atomic uint32_t *seq, uint32_t s) {
  atomic_store_explicit(seq, s + 2, memory_order_release);
}
/* Reader: the sequence to copy under, once it is even; re-load it with VMT__SEQ_R after the
 * copy and retry with the same *attempts if it moved. A writer holds it odd for a few stores,
 * so every 64th try yields the CPU: past that the writer was preempted mid-write. */
static inline uint32_t vmt__seq_read_begin(_Atomic uint32_t *seq, unsigned *attempts) {
  for (;;) {
    if (++*attempts % 64 == 0) sched_yield();
    uint32_t s = atomic_load_explicit(seq, memory_order_acquire);
    if ((s & 1) == 0) return s;
  }
}
/* A reader walking a held list re-checks the sequence every this many links: a recycled
 * slot's link (a torn read) can make a cycle, and the check ends such a walk; a real list is
 * walked to its end however long it is. */
#define VMT__HELD_WALK_CHECK 4096u

/* ---- Held list ------------------------------------------------------------------------ */
/* Links l in at the head; inside the caller's write section. */
static inline void vmt__held_link(_Atomic(struct vmt__lock *) *head, struct vmt__lock *l) {
  atomic_store_explicit(&l->held_next, atomic_load_explicit(head, memory_order_relaxed),
                        VMT__SEQ_W);
  atomic_store_explicit(head, l, VMT__SEQ_W);
}
static inline void vmt__held_push(vmt_thread_t *t, struct vmt__lock *l) {
  uint32_t s = vmt__seq_begin(&t->sync.seq);
  vmt__held_link(&t->sync.held_head, l);
  vmt__seq_end(&t->sync.seq, s);
}
/* Removes l from t's held list wherever it is. */
void vmt__held_remove_slow(vmt_thread_t *t, struct vmt__lock *l);
/* Unlinks l, which the caller has checked is the head of t's held list. */
static inline void vmt__held_unlink_head(vmt_thread_t *t, struct vmt__lock *l) {
  uint32_t s = vmt__seq_begin(&t->sync.seq);
  atomic_store_explicit(&t->sync.held_head,
                        atomic_load_explicit(&l->held_next, memory_order_relaxed), VMT__SEQ_W);
  vmt__seq_end(&t->sync.seq, s);
}
static inline bool vmt__held_is_head(vmt_thread_t *t, struct vmt__lock *l) {
  return atomic_load_explicit(&t->sync.held_head, memory_order_relaxed) == l;
}
static inline void vmt__held_pop(vmt_thread_t *t, struct vmt__lock *l) {
  if (__builtin_expect(!vmt__held_is_head(t, l), 0)) vmt__held_remove_slow(t, l);
  else vmt__held_unlink_head(t, l);
}


/* ---- Lock word ------------------------------------------------------------------------ */
static inline bool vmt__lock_try_acquire(struct vmt__lock *l) {
  uint32_t expected = VMT__LOCK_FREE;
  return atomic_compare_exchange_strong_explicit(&l->state, &expected, VMT__LOCK_LOCKED,
                                                 memory_order_acquire, memory_order_relaxed);
}
/* Spins for l before a contended acquisition blocks: true if it took the word (then the caller
 * records the acquisition; nothing else has been written). The spin's length adapts per lock
 * (lock.c, docs/monitors.md "Spinning"). */
bool vmt__lock_spin(struct vmt__lock *l);
/* Acquires after a failed try and a failed spin, sleeping on the word; 0, -ETIMEDOUT once
 * deadline (CLOCK_MONOTONIC ns, or VMT_OS_NO_DEADLINE) has passed, or -EINVAL if the lock was
 * destroyed meanwhile (its magic is no longer magic: vmt__lock_destroy), nothing held then. It
 * acquires with CONTENDED, never with a plain LOCKED: others may still sleep on the word (a
 * notified waiter requeued there among them), and only CONTENDED makes the next exit wake one
 * of them. */
int vmt__lock_acquire_contended(struct vmt__lock *l, uint32_t magic, int64_t deadline_ns);
/* Frees the word; true if a thread may sleep on it and must be woken (vmt__lock_wake). */
static inline bool vmt__lock_release_word(struct vmt__lock *l) {
  atomic_store_explicit(&l->owner, 0, memory_order_relaxed);
  return atomic_exchange_explicit(&l->state, VMT__LOCK_FREE, memory_order_release) ==
         VMT__LOCK_CONTENDED;
}
/* Wakes one sleeper on l's word; 0 (lock.c, out of line: see vmt__lock_exit). */
int vmt__lock_wake(struct vmt__lock *l);
/* Wakes the waiters notify handed l to (monitor_wait.c), then releases; 0 (lock.c). */
int vmt__lock_release_handed(struct vmt__lock *l);
/* Every release of a monitor by its owner goes through here (or vmt__lock_exit). */
static inline void vmt__lock_release(struct vmt__lock *l) {
  if (__builtin_expect(l->handed != NULL, 0)) vmt__lock_release_handed(l);
  else if (vmt__lock_release_word(l)) vmt__lock_wake(l);
}
/* Off t's held list wherever l is on it, then released (vmt__lock_release); 0 (lock.c). */
int vmt__lock_exit_slow(vmt_thread_t *t, struct vmt__lock *l);
/* The last exit of a monitor, the unlock of a synchronizer: l off t's held list, the word free,
 * a sleeper or a notified waiter woken; 0. Its rare cases (l not the innermost lock, a waiter
 * to wake) are calls in tail position, so the common case makes no call and needs no stack
 * frame: four stack accesses fewer per exit, which measured 0.97 -> 0.90-0.92x the mutex when
 * the core is shared (docs/monitors.md, "Why the uncontended ratio moves"). */
static inline int vmt__lock_exit(vmt_thread_t *t, struct vmt__lock *l) {
  if (__builtin_expect(!vmt__held_is_head(t, l) || l->handed != NULL, 0))
    return vmt__lock_exit_slow(t, l);
  vmt__held_unlink_head(t, l);
  if (__builtin_expect(vmt__lock_release_word(l), 0)) return vmt__lock_wake(l);
  return 0;
}
/* The owner bumps its own counter: no read-modify-write needed. */
static inline void vmt__lock_count_enter(struct vmt__lock *l) {
  atomic_store_explicit(&l->enters, atomic_load_explicit(&l->enters, memory_order_relaxed) + 1,
                        memory_order_relaxed);
}

/* What every successful acquisition records: the owner, the enter count, the held list. */
static inline void vmt__lock_took(struct vmt__lock *l, vmt_thread_t *t) {
  atomic_store_explicit(&l->owner, vmt__token(t), memory_order_relaxed);
  vmt__lock_count_enter(l);
  vmt__held_push(t, l);
}

/* ---- Blocking episodes: thread state, counts, times (episode.c) ----------------------- *
 * t is the blocking thread's lock identity; a silent one (an implicit record, or a record kept
 * after its last detach: runtime/registry/registry.h) and NULL (sleep on a thread without one)
 * record nothing but the time a monitor's blocked_ns needs. */
typedef enum vmt__episode_kind {
  VMT__EP_ENTER = 0,   /* contended monitor enter or re-enter: BLOCKED, blocked count */
  VMT__EP_WAIT,        /* vmt_monitor_wait: WAITING / TIMED_WAITING, waited count */
  VMT__EP_SYNC,        /* waiting for a synchronizer: WAITING / TIMED_WAITING, waited count */
  VMT__EP_PARK,        /* vmt_park* */
  VMT__EP_SLEEP,       /* vmt_sleep_ns */
  VMT__EP_JOIN,        /* an interruptible join: WAITING / TIMED_WAITING, waited count */
} vmt__episode_kind_t;

typedef struct vmt__episode {
  vmt__episode_kind_t kind;
  uint64_t epoch;      /* contention-monitoring epoch at the start; 0 if it was off */
  int64_t start_ns;    /* vmt_os_elapsed_nanos() at the start, when timed */
} vmt__episode_t;

/* Publishes the state change. */
void vmt__episode_begin(vmt_thread_t *t, vmt__episode_t *ep, vmt__episode_kind_t kind,
                        struct vmt__lock *l, bool timed);
/* A join's episode (VMT__EP_JOIN): the joined thread is published with the state, as the
 * lock the joiner's ThreadInfo names. */
void vmt__episode_begin_join(vmt_thread_t *t, vmt__episode_t *ep, vmt_thread_t *target,
                             bool timed);
/* Back to RUNNABLE; adds the time to t (and, for an enter, to l's blocked time); when push is
 * not NULL, pushes it on t's held list in the same write. */
void vmt__episode_end(vmt_thread_t *t, vmt__episode_t *ep, struct vmt__lock *l,
                      struct vmt__lock *push);
/* A notified waiter's wait on l ends and its re-entry begins, in one write: BLOCKED on l, a
 * blocked enter, the waited time so far kept, the blocked time starting now. Runs on the
 * notifier's thread, which owns l, while the waiter sleeps and writes nothing (HotSpot's
 * ObjectMonitor::INotify does the same on the waiter's behalf: wait_reenter_begin). */
void vmt__episode_reenter(vmt_thread_t *t, vmt__episode_t *ep, struct vmt__lock *l);

/* The contended acquisition, whole: counts it, publishes the episode (kind VMT__EP_ENTER for a
 * monitor, VMT__EP_SYNC for a synchronizer), acquires before the deadline, takes ownership as
 * t and pushes l on t's held list. count_enter is false for the re-entry after a wait, which is
 * no new enter. 0, -ETIMEDOUT, or -EINVAL if a destroy won the race (vmt__lock_destroy). */
int vmt__lock_enter_contended(struct vmt__lock *l, vmt_thread_t *t, vmt__episode_kind_t kind,
                              int64_t deadline_ns, bool count_enter);

/* A thread in vmt_monitor_wait: lives on the waiter's stack; linked into the wait set and
 * unlinked only by the monitor's owner, so the wait set needs no lock of its own. `state` is
 * the futex word the waiter sleeps on and decides who ends the wait: a notifier (WAITING ->
 * NOTIFYING -> NOTIFIED, writing the waiter's state in between) or the waiter itself (WAITING
 * -> LEFT: a timeout, or any other reason to stop waiting), never both. */
enum {
  VMT__WAIT_WAITING = 0,
  VMT__WAIT_NOTIFYING,   /* a notifier claimed it and is writing the waiter's state */
  VMT__WAIT_NOTIFIED,    /* BLOCKED re-entering, requeued onto the lock word (notify_all) */
  VMT__WAIT_HANDED,      /* BLOCKED re-entering, on the lock's handed list: the release wakes it */
  VMT__WAIT_LEFT,        /* the waiter stopped waiting on its own; it re-enters by itself */
};
struct vmt__wait_node {
  struct vmt__wait_node *next;
  struct vmt__wait_node *handed_next;   /* on the lock's handed list (owner only) */
  _Atomic uint32_t state;   /* VMT__WAIT_* */
  vmt_thread_t *thread;     /* the waiter's lock identity */
  vmt__episode_t ep;        /* its wait, then (once notified) its re-entry */
};

/* ---- Contention monitoring (contention.c) --------------------------------------------- *
 * One word: odd = enabled. Each enable starts a new epoch; times recorded under an older
 * epoch read as zero (Java: enabling resets every thread's times). */
extern _Atomic uint64_t vmt__contention_epoch;
static inline uint64_t vmt__contention_current_epoch(void) {
  uint64_t e = atomic_load_explicit(&vmt__contention_epoch, memory_order_acquire);
  return (e & 1) ? e : 0;
}

/* A deadline from a relative timeout, saturating; VMT_OS_NO_DEADLINE for timeout <= 0. */
int64_t vmt__deadline_after(int64_t timeout_ns);
/* One turn of every blocking loop here (lock word, wait, park, sleep): -ETIMEDOUT once the
 * deadline has passed; else sleeps while *word == expected until a wake-up, a signal or the
 * deadline, and returns 0 for the caller to re-check its condition. The sleep is a safe region
 * of the calling thread (runtime/vmservices/vmservices.h); leaving it may wait for a safepoint
 * to end, a handshake on the thread's behalf to finish or a suspension to be lifted. */
int vmt__wait_turn(_Atomic uint32_t *word, uint32_t expected, int64_t deadline_ns);
/* The same turn against a CLOCK_REALTIME deadline (ns since the epoch: parkUntil's wall time;
 * the kernel follows changes of the wall clock while the thread sleeps). */
int vmt__wait_turn_realtime(_Atomic uint32_t *word, uint32_t expected, int64_t deadline_ns);

/* The calling thread's interrupt status, tested and cleared (Thread.interrupted); false for a
 * thread without record (interrupt.c). */
bool vmt__interrupt_consume(vmt_thread_t *t);
static inline bool vmt__interrupt_pending(const vmt_thread_t *t) {
  /* seq_cst: against the publication of wake_word (interrupt.c); a plain load on x86-64. */
  return t != NULL &&
         atomic_load_explicit(&((vmt_thread_t *)t)->sync.interrupted, memory_order_seq_cst);
}

/* Maps an owner token to a thread id using snap (0 when it is no listed runtime thread). The
 * token must have been read after snap was acquired: a record the snapshot holds is not
 * recycled while it is protected, so the id is the owner's at the time of the read. */
int64_t vmt__token_owner_id(const vmt__snapshot_t *snap, uintptr_t token);

#endif /* VMT_RUNTIME_SYNC_SYNC_IMPL_H */
