/*
 * runtime/registry/registry.h: what the registry package offers the packages above it (sync,
 * thread, management): the thread record, which holds every subsystem's per-thread fields
 * (HotSpot's thread.hpp is the model: one data model, many owners), the record pool and its
 * references, the registry's snapshots for readers and its writer side for the life cycle,
 * categories, and the calling thread's record. Hidden; tests of internals include it and say
 * so in their name.
 *
 * Ownership of the thread record's fields:
 *   runtime/registry/, runtime/thread/  identity, options, state, refs, join, os, category, kind
 *   runtime/sync/                       sync (struct vmt__thread_sync, below)
 *   runtime/vmservices/                 exec (the execution state and poll word) and vms
 *                                       (struct vmt__thread_vms, below)
 *   runtime/thread/alloc.c              the allocated-bytes fields of the hot cell
 *   the hot cell (struct vmt__thread_hot): each field's owner is named there
 *   the cold block (struct vmt__thread_cold): each field's owner is named there
 *   runtime/profiler/                   prof (struct vmt__thread_prof, below)
 */
#ifndef VMT_RUNTIME_REGISTRY_REGISTRY_H
#define VMT_RUNTIME_REGISTRY_REGISTRY_H

#include <pthread.h>
#include <stdatomic.h>

#include "vmthread.h"
#include "runtime/fault.h"
#include "runtime/os.h"

/* What kind of thread a record describes. Internal threads are never counted nor listed. */
typedef enum vmt__thread_kind {
  VMT__KIND_STARTED = 0,   /* created by vmt_thread_start* */
  VMT__KIND_ATTACHED,      /* a foreign thread, while attached */
  VMT__KIND_INTERNAL,      /* the runtime's own (e.g. the SIGQUIT dump thread) */
  VMT__KIND_IMPLICIT,      /* a lock identity only (runtime/sync/identity.c): never listed */
} vmt__thread_kind_t;

struct vmt_monitor;
struct vmt_sync;
struct vmt__lock;   /* what monitors and synchronizers share (runtime/sync/sync_impl.h) */
struct vmt__hs_node;   /* a queued handshake operation (runtime/vmservices/vmservices_impl.h) */

/* Per-thread synchronization state, owned by the sync package (runtime/sync/). Written by the
 * owning thread; read by management code holding a registry snapshot. All zero in a fresh
 * record (the record pool zero-fills it).
 *
 * seq is a sequence lock over everything a reader copies: the held list, blocked_on /
 * waiting_on / parked_on, the times and the state changes the sync package makes. Only the
 * owning thread writes (seq odd while it does), or a notifier for the waiter it picks, which
 * sleeps meanwhile (sync/monitor_wait.c); readers copy and retry when seq moved, so the writer
 * never waits for a reader. */
struct vmt__thread_sync {
  _Atomic(struct vmt_monitor *) blocked_on;   /* contended enter in progress (BLOCKED) */
  _Atomic(struct vmt_monitor *) waiting_on;   /* in vmt_monitor_wait */
  _Atomic(struct vmt_sync *) parked_on;       /* waiting to acquire a synchronizer */
  /* joining the thread named (an interruptible or timed join: Java's Object.wait on the
   * Thread, whose ThreadInfo names that Thread as its lock); the joiner holds a reference */
  _Atomic(struct vmt_thread *) joining;
  _Atomic uint64_t blocked_count;
  _Atomic uint64_t waited_count;
  _Atomic int64_t blocked_ns;
  _Atomic int64_t waited_ns;
  /* The thread's own futex word (its "event", HotSpot's ParkEvent): park and sleep sleep on
   * it. Bit 0 is unpark's permit (only park consumes it); bit 1 says the thread sleeps (set
   * by it before it sleeps, so a waker calls the kernel only then); every other waker
   * (interrupt) adds VMT__EVENT_POKE, so the word changes under any sleeper. */
  _Atomic uint32_t park_permit;
  /* Thread.interrupt's status: set by vmt_thread_interrupt, cleared by the thread itself. */
  _Atomic uint32_t interrupted;
  /* While an interruptible wait sleeps on a word other than park_permit (join: the target's
   * exit_event), that word, for vmt_thread_interrupt to poke; type-stable memory only. */
  _Atomic(_Atomic uint32_t *) wake_word;
  /* While the thread waits on a monitor, its wait node (on its stack), which an interrupt
   * claims for it; wait_users counts interrupters inside it, and the waiter does not return
   * (its node goes away) before they are out (monitor_wait.c, interrupt.c). */
  _Atomic(struct vmt__wait_node *) wait_node;
  _Atomic int32_t wait_users;
  _Atomic uint32_t seq;                       /* sequence lock, see above */
  _Atomic(struct vmt__lock *) held_head;      /* innermost held monitor or synchronizer */
  _Atomic uint64_t times_epoch;               /* contention-monitoring epoch of the times */
  /* The blocking episode in progress, so that readers add its time so far (ThreadInfo's
   * times include it, as HotSpot's do): its epoch (0: none, or not timed), its start, and its
   * kind (vmt__episode_kind_t + 1; 0: none), which says whether it is blocked (else waited)
   * time and what kind of wait ThreadInfo's state_bits name (sleeping, parked, in a monitor
   * wait, blocked on enter). The kind is written in the write section that sets the state,
   * so a reader sees the two together. */
  _Atomic uint64_t ep_epoch;
  _Atomic int64_t ep_start_ns;
  _Atomic uint8_t ep_kind;
  /* Owner only. A silent record is a lock identity and nothing else: it keeps its held list,
   * but no state, counts or times (nobody lists it): an implicit record, or an attached record
   * after its last detach while its thread still holds locks (runtime/sync/sync.h). */
  bool silent;
  _Atomic bool parking;                       /* in a park (its blocker is its lock) */
  /* A park blocker is set (vmt_thread_set_park_blocker; its contents are in the cold block):
   * here, so that a ThreadInfo of a thread parked without one never reads the cold block. */
  _Atomic bool blocker_set;
};

/* Per-thread state of the VM services (runtime/vmservices/), except the execution state and
 * poll word, which sit in the record's first cache line (`exec`). All zero in a fresh record:
 * a thread starts in native code (safe), with nothing queued and no suspension. Fork: the
 * forking thread's queue keeps only its own asynchronous operations, its counts are zeroed and
 * its exec word keeps its state (runtime/vmservices/lifecycle.c); the other records are the
 * registry's, tombstoned in the child. */
#define VMT__SUSPEND_REASONS 3    /* = VMT_SUSPEND_REASON_COUNT (include/vmthread/vmservices.h) */
struct vmt__thread_vms {
  _Atomic uint32_t queue_lock;              /* futex lock over the operation queue */
  struct vmt__hs_node *queue_head;          /* FIFO of handshake operations (queue_lock) */
  struct vmt__hs_node *queue_tail;
  int32_t ops_depth;                        /* owner only: > 0 while it runs its own ops */
  _Atomic int32_t suspend_total;            /* sum of suspend_counts, readable by anyone */
  int32_t suspend_counts[VMT__SUSPEND_REASONS];   /* under the suspension lock */
  bool exiting;                             /* under the suspension lock: past the last point
                                               its exit can stop at; no suspension from then
                                               (suspend.c, vmt__vms_thread_exiting) */
  bool member;                              /* under the suspension lock: on the list that
                                               suspend-alls count (suspend.c), from its
                                               registration until it is exiting */
  struct vmt_thread *member_prev, *member_next;
  _Atomic int64_t last_safe_ns;             /* vmt_os_elapsed_nanos() at its last slow-path
                                               safe point (poll, transition); 0 = never */
  struct vmt_thread *sp_next;               /* the safepoint coordinator's list of armed
                                               threads (under its lock) */
};

/* The bits of a thread's event word (sync.park_permit) and of a record's exit_event. */
#define VMT__EVENT_PERMIT 1u   /* park_permit: unpark's permit; exit_event: the thread has ended */
#define VMT__EVENT_SLEEPER 2u  /* park_permit: its thread is (about to be) asleep on it */
#define VMT__EVENT_POKE 4u     /* added by a waker that only wants the sleeper to look again */

/* Per-thread fields that no registry walk reads, in a block allocated apart from the record
 * and zeroed with it (record.c): a sweep that prefetches a whole record (management_impl.h) does
 * not fetch these 840 bytes too, and the records stay dense. Type-stable like the record. */
struct vmt__thread_cold {
  /* runtime/thread/: the block vmt_thread_fast points to while the thread is current (stack
   * limit: stack.c; TLS slots: tls.c). Other threads read it with atomic loads. */
  vmt_thread_fast_t fast;
  /* Guards the name (record.c: rename against readers that copy it) and the first
   * computation of the stack bounds (thread/stack.c). Initialised when the record is. */
  pthread_mutex_t lock;
  /* runtime/thread/stack.c: the stack as pthread_getattr_np gives it, once known
   * (stack_known, release; written under lock). */
  _Atomic bool stack_known;
  bool stack_reaping;        /* join is reaping the pthread: nobody may ask it any more */
  uintptr_t stack_lo, stack_hi;
  size_t stack_os_guard;
  /* runtime/thread/stack_guard.c: the guard zones, written by the thread itself before its
   * body runs and after it ends; read by its own signal handler. */
  vmt_stack_guard_t guard;           /* asked for (page rounded) */
  _Atomic bool zones_armed;          /* the zones are in place (release, after the fields) */
  _Atomic unsigned zones_disabled;   /* 1u << vmt_stack_zone_t, opened after a hit */
  vmt_os_altstack_t altstack;        /* the alternate signal stack the handler runs on */
  /* runtime/thread/start.c: the timer slack a started thread sets as it starts (0: none). */
  int64_t timer_slack_ns;
  /* runtime/thread/: a started thread's body and argument, and what it returned (or passed to
   * vmt_thread_exit) for its join. Here, not in the record: read once as the thread starts and
   * once by its join, and the record stays within jemalloc's 448-byte class (record.c). */
  vmt_thread_fn fn;
  void *arg;
  void *result;
  /* runtime/sync/park.c: the park blocker (vmt_thread_set_park_blocker), written by the thread
   * inside t->sync.seq's write sections, copied by readers under it (lock_info.c) when
   * t->sync.blocker_set says there is one. */
  _Atomic int32_t blocker_hash;
  _Atomic int64_t blocker_owner;
  _Atomic uint64_t blocker_class[(VMT_PARK_BLOCKER_CLASS_MAX + 1 + 7) / 8];
};

/* Per-thread fields of the walks that read nothing else of a thread (getAllThreadIds, the
 * allocated-bytes calls), in a 32-byte cell apart from the record, cells carved in order from
 * 8 KiB blocks (record.c), so that the cells of 10,000 threads are 313 KiB of consecutive lines
 * (two cells a line) where their records are 4.5 MB; a snapshot holds each entry's cell beside
 * its record and id (vmt__snapshot_t.hot), so these walks never touch a record. The cell stays
 * with its record in the pool (type-stable like it) and is zeroed with it. */
struct vmt__thread_hot {
  /* registry.c: what vmt__thread_is_listed() says, kept beside it: set as the thread is counted
   * (under the writer lock, before count_claimed is released, so the thread's own clear comes
   * after it), cleared as it becomes TERMINATED (vmt__thread_set_terminated) and as it is
   * uncounted (the writer lock). Never set again once cleared. */
  _Atomic uint32_t listed;
  /* runtime/thread/alloc.c. Readers of *allocatedp in progress: the owner waits for them (a
   * few ns) before its thread-local counters can go away. Zeroed for the forking thread in a
   * fork child. */
  _Atomic int32_t alloc_readers;
  /* jemalloc's per-thread allocated-bytes counter, published by the owner at start, cleared
   * at exit. */
  _Atomic(const uint64_t *) allocatedp;
  int64_t alloc_base;                /* allocated bytes at attach (not this thread's) */
} __attribute__((aligned(32)));

/* Per-thread state of the profiler (runtime/profiler/). All zero in a fresh record.
 * `state` is the arming protocol (runtime/profiler/arm.c): IDLE (0), BUSY (one thread is
 * creating or deleting the timer), ARMED. `slot` is the sample buffer the signal handler on
 * this thread writes to; NULL: the handler takes no sample. Fork: the forking thread's are
 * cleared by the profiler's child handler (session.c); a vanished thread's record keeps them
 * until the pool zeroes it for a new thread, and the profiler never acts on them (arm.c
 * checks fork_generation: a stale timer id may name one of the child's own timers). */
struct vmt__prof_slot;
struct vmt__thread_prof {
  _Atomic uint32_t state;
  _Atomic(struct vmt__prof_slot *) slot;
  /* Cooperative mode: 1 when the handler left weight for the thread's next poll, which calls
   * vmt__prof_poll (runtime/vmservices/handshake.c). */
  _Atomic uint32_t at_poll;
  /* vmt_prof_set_thread_excluded: never armed while set (arm.c checks it after its claim).
   * The thread's for its life; a fork child's survivor keeps it. */
  _Atomic bool excluded;
  /* The profiler session (vmt__prof.session) in which arming this thread last failed: a thread
   * the drainer's rescans try again counts once in arm_failures. */
  _Atomic uint32_t arm_failed_session;
};

/* Per-category figures (Eclipse OMR keeps these for GC/JIT/application threads). */
typedef struct vmt__category {
  struct vmt__category *next;
  char name[VMT_THREAD_CATEGORY_MAX + 1];
  _Atomic int32_t live;
  _Atomic int64_t started;         /* threads ever counted in it (started or attached) */
  /* CPU time of the category's threads that have exited (an attached thread's while it was
   * attached), added under the writer lock inside an odd exit sequence (registry.c). */
  _Atomic int64_t exited_cpu_ns;
} vmt__category_t;

struct vmt_thread {
  /* The first 64 bytes hold what a registry walk reads of every record (id, kind, the
   * states, counted), so a walk over 1000 threads touches one line per record; the safepoint
   * coordinator's walk reads `exec` and registry_state only. */
  uint32_t magic;                    /* VMT__THREAD_MAGIC while references exist */
  /* Execution state and poll flags in one word (runtime/vmservices/vmservices_impl.h), at the
   * offset the public poll reads (VMT_POLL_OFFSET, include/vmthread/vmservices.h). */
  _Atomic uint32_t exec;
  int64_t id;
  vmt__thread_kind_t kind;
  _Atomic int32_t registry_state;    /* VMT__REG_*; registry.c, under its writer lock */
  _Atomic int state;                 /* vmt_thread_state_t */
  _Atomic bool counted;              /* included in live/daemon/category counts (registry.c) */
  _Atomic bool count_claimed;        /* counted as started, by its starter or itself */
  bool daemon;
  _Atomic int priority;              /* Java priority (vmt_thread_set_priority) */
  /* Full name. Replaced by a rename under cold->lock (record.c), which readers that copy it
   * hold; the old string is freed after the swap. */
  _Atomic(char *) name;
  char os_name[VMT_THREAD_OS_NAME_MAX + 1];   /* changed only by the thread itself, likewise */
  vmt__category_t *category;         /* interned, lives for the process */
  int64_t start_time_ns;             /* vmt_os_java_time_nanos() at start/attach */
  vmt_os_thread_t os;
  struct vmt__thread_sync sync;      /* sync package */
  struct vmt__thread_vms vms;        /* VM services package */
  struct vmt__thread_prof prof;      /* profiler package */
  /* Runtime-private from here (thread module). */
  int32_t attach_count;
  /* Set by the thread itself as its exit path begins (thread/exit.c): vmt_thread_exit and a
   * nested attach refuse from there on, so an exit hook or TLS destructor can neither unwind
   * out of the bookkeeping nor count an attach on a record that is leaving. */
  bool finishing;
  _Atomic uint32_t done;             /* 1 once the exit bookkeeping is complete */
  /* The futex word joiners sleep on (thread/join.c): the exiting thread sets bit 0 after
   * `done` and wakes them if any sleeps (join_sleepers); an interrupt of a joiner adds
   * VMT__EVENT_POKE. */
  _Atomic uint32_t exit_event;
  _Atomic int32_t join_sleepers;
  _Atomic bool joined;               /* claimed by the one join allowed (thread/join.c) */
  /* References held by API users (start's, retain's). The first one holds one internal
   * reference in `refs`; the last release drops it. Kept apart from `refs` so that a user's
   * extra release is refused instead of dropping the running thread's own reference. */
  _Atomic int32_t user_refs;
  /* References that keep the record from being reused (the thread's own, the registry's, a
   * user's, and one per call in progress that names the thread: vmt__record_ref_if_live).
   * Not in the first line: every request to a thread (a handshake, a suspend, a ThreadInfo)
   * takes and drops one, and those two read-modify-writes on the line the thread's poll reads
   * cost a running target a miss each, and its requester two (//bench:handshake,
   * vmt_handshake_running). Only requesters write it while the thread runs. */
  _Atomic int32_t refs;
  pthread_t pthread;                 /* started/internal threads: for join and detach */
  /* `pthread` is ours to join or detach: set once pthread_create succeeded, cleared by the join
   * (never set for an attached thread, whose pthread is not the runtime's). */
  bool owns_pthread;
  bool default_name;                 /* "vmt-thread-<id>", written once the id is known */
  uint32_t fork_generation;          /* vmt__fork_generation at record_init (before publication) */
  int64_t cpu_at_begin_ns;           /* own CPU time at attach (0 for started threads) */
  /* Registry bookkeeping (registry.c), written under the registry's writer lock. */
  uint64_t inserted_generation;      /* generation of the first snapshot that held it */
  uint64_t removed_generation;       /* generation of the last snapshot that held it */
  size_t registry_slot;              /* index it was appended at (a later rebuild may move it) */
  /* The one list the record is on, in turn: the current snapshot's tombstones, the retired
   * records, the record pool. */
  struct vmt_thread *list_next;
  struct vmt__thread_cold *cold;     /* allocated with the record, never NULL */
  struct vmt__thread_hot *hot;       /* likewise, from a dense block (record.c) */
};

/* registry_state values. A tombstoned record has left (its thread exited) but is still in the
 * current snapshot; it counts as absent, and the next rebuild drops it (registry.c). */
enum { VMT__REG_NONE = 0, VMT__REG_IN, VMT__REG_TOMBSTONE };

#define VMT__THREAD_MAGIC 0x766d7474u   /* "vmtt" */

/* The calling thread's record (started, attached or internal), NULL for any other thread.
 * Defined beside the records (record.c), set by the thread package as a thread starts,
 * attaches, exits and detaches; read inline by the sync fast paths: one %fs-relative load
 * instead of a call to vmt_thread_current(), a fifth of the uncontended enter+exit budget
 * (docs/monitors.md). */
extern _Thread_local vmt_thread_t *vmt__current __attribute__((tls_model("initial-exec")));

/* ---- The end of a thread (thread_end.c) ------------------------------------------------ *
 * One hook per thread (runtime/os.h, "Thread end"), armed by whatever first needs it there (an
 * attach, a first lock, a first registry snapshot); each package hands in its piece as it
 * arms, and the hook runs the pieces in this order: an attached thread's detach (thread), the
 * safepoint a foreign coordinator still holds (vmservices), the locks of an implicit or kept
 * lock identity (sync), the hazard block (registry), which goes last since nothing after it
 * reads the registry. 0 or -errno (-ENOMEM, -EAGAIN): the caller fails its call, or does
 * without (hazard.c). */
typedef enum vmt__end_piece {
  VMT__END_ATTACHED = 0,
  VMT__END_SAFEPOINT,
  VMT__END_LOCKS,
  VMT__END_HAZARDS,
  VMT__END_PIECES,
} vmt__end_piece_t;
int vmt__thread_end_arm(vmt__end_piece_t piece, void (*fn)(void));

/* Makes t (or NULL) the calling thread's record: vmt__current and the public fast-path block
 * (vmt_thread_fast, defined beside it) change together. */
static inline void vmt__current_set(vmt_thread_t *t) {
  vmt__current = t;
  vmt_thread_fast = t ? &t->cold->fast : NULL;
}

/* ---- Registry (registry.c) -------------------------------------------------------------- *
 * A snapshot is an immutable, id-sorted view of the live threads (counted and internal):
 * threads[0..count), with each record's id and hot cell in arrays beside it (ids[i],
 * hot[i]: a walk that needs no more than those reads three dense arrays and the cells, never
 * the records). Walk it as an array; look ids up with vmt__snapshot_find() (or
 * vmt__ids_lower_bound() on ids/count). Snapshots share storage: a start appends past the
 * current count and publishes a new snapshot over the same entries, so the entries a snapshot
 * covers never change, but the arrays of two snapshots may be equal and nothing may be written
 * through them. An exit does not copy: it tombstones its record in place (the
 * record's registry_state), and a later rebuild drops it. So a snapshot may hold records that
 * have left: walkers skip what vmt__thread_is_listed() refuses, lookups go through
 * vmt__snapshot_find(). A reader protects the current snapshot with a hazard pointer; every
 * record in a protected snapshot, and its entries, stay allocated (and records are not
 * recycled) until the reader releases it. Starts and exits never wait for readers: retired
 * snapshots, arrays and records are reclaimed later.
 */
typedef struct vmt__snapshot {
  vmt_thread_t *const *threads;       /* count entries sorted by id; may hold tombstones */
  const int64_t *ids;                 /* threads[i]->id, in an array of their own */
  struct vmt__thread_hot *const *hot; /* threads[i]->hot, likewise */
  size_t count;
  uint64_t generation;
  struct vmt__snapshot *retire_next;  /* retired-snapshot list (registry.c) */
  struct vmt__registry_array *array;  /* the storage threads points into (registry.c) */
} vmt__snapshot_t;

/* Up to VMT__HAZARDS_PER_THREAD snapshots may be held at once by one thread. acquire returns
 * NULL when the calling thread's hazard block cannot be allocated (out of memory; the first 64
 * blocks are static) or all its slots are taken (queries nested in the host's stack walker,
 * which runs while the query that called it holds one): the caller answers -ENOMEM. A snapshot
 * must be released by the thread that acquired it. */
#define VMT__HAZARDS_PER_THREAD 4
const vmt__snapshot_t *vmt__registry_acquire(void);
void vmt__registry_release(const vmt__snapshot_t *snap);
/* Binary search; NULL if absent or no longer in the registry (tombstoned or dropped). */
vmt_thread_t *vmt__snapshot_find(const vmt__snapshot_t *snap, int64_t id);
/* Index of the first of ids[0..n) (a snapshot's, ascending) that is >= id; n if none. */
size_t vmt__ids_lower_bound(const int64_t *ids, size_t n, int64_t id);
/* What one snapshot entry costs in its array: the record pointer, the id and the hot cell. */
#define VMT__SNAPSHOT_ENTRY_BYTES \
  (sizeof(vmt_thread_t *) + sizeof(int64_t) + sizeof(struct vmt__thread_hot *))
/* Drops tombstoned records from the current snapshot (a rebuild, memory allowing), then
 * reclaims every retired snapshot, array and record no reader protects, waiting for a
 * concurrent reclamation to finish. Starts and exits do this themselves, amortised; tests call
 * it. */
void vmt__registry_reclaim(void);
/* True for a thread management code lists (started or attached, counted, not internal, still
 * in the registry, not TERMINATED). A walk that reads nothing else of the records reads the
 * same answer from the hot cell: vmt__hot_is_listed(snap->hot[i]). */
bool vmt__thread_is_listed(const vmt_thread_t *t);
static inline bool vmt__hot_is_listed(const struct vmt__thread_hot *h) {
  return atomic_load_explicit(&((struct vmt__thread_hot *)h)->listed, memory_order_acquire) != 0;
}
/* The thread is TERMINATED: its state, and its hot cell's listed flag, which must not say
 * otherwise from then on. The thread package calls it where a thread ends or a start fails. */
static inline void vmt__thread_set_terminated(vmt_thread_t *t) {
  atomic_store_explicit(&t->state, VMT_THREAD_TERMINATED, memory_order_release);
  atomic_store_explicit(&t->hot->listed, 0, memory_order_release);
}

typedef struct vmt__counts {
  int32_t live;
  int32_t peak;
  int32_t daemon;
  int64_t total_started;
} vmt__counts_t;
void vmt__registry_counts(vmt__counts_t *out);
void vmt__registry_reset_peak(void);
/* Walks all categories (never freed). */
vmt__category_t *vmt__categories(void);

/* ---- What the life cycle gives a record (resolved by runtime/thread/options.c) ---------- */
typedef struct vmt__thread_opts {
  const char *name;        /* NULL: the default "vmt-thread-<id>" */
  size_t name_len;
  const char *category;    /* never NULL after resolution */
  bool daemon;
  int priority;
  size_t stack_size;       /* 0 = the platform default, else already rounded and clamped */
  vmt_stack_guard_t guard; /* zone sizes, page rounded; all 0 without guard zones */
  bool timer_slack_set;    /* VMT_THREAD_OPT_TIMER_SLACK given */
  int64_t timer_slack_ns;  /* 0: inherit */
} vmt__thread_opts_t;

/* ---- Records (record.c) ---------------------------------------------------------------- */
/* A zeroed record with magic set, from the type-stable pool (records are never returned to
 * malloc, so a stale handle reads a cleared magic instead of freed memory). NULL on -ENOMEM. */
vmt_thread_t *vmt__record_alloc(void);
/* Fills the attributes (name, category, os name, kind). 0 or -ENOMEM; on failure the record is
 * returned to the pool. The id comes later, from vmt__registry_insert. */
int vmt__record_init(vmt_thread_t *t, const vmt__thread_opts_t *o, vmt__thread_kind_t kind);
/* Drops one internal reference; the last one frees the name and returns the record to the
 * pool (detaching its pthread if nobody joined it). */
void vmt__record_unref(vmt_thread_t *t);
/* Whether a public call may act on t: a record (magic set) that is not stale. A record is
 * stale once its thread has terminated with no user reference left (released by its creator
 * and not retained, or an attached thread detached for the last time): nobody may hold the
 * handle any more. The registry's own reference outlives that by a while (retired records are
 * reclaimed in batches, registry.c), so without this check a call through a released handle
 * would answer as for a live thread until the batch ran and -EINVAL after. A stale record
 * never becomes valid again (retain refuses zero user references of a terminated thread). */
bool vmt__handle_valid(const vmt_thread_t *t);
/* Takes an internal reference if the record is live (magic set and refs > 0) and not stale
 * (vmt__handle_valid). */
bool vmt__record_ref_if_live(vmt_thread_t *t);
/* Replaces t's name with name[0..len) (validated by the caller); with os_name, also the
 * kernel name kept in the record. 0 or -ENOMEM (the name is unchanged then). */
int vmt__record_rename(vmt_thread_t *t, const char *name, size_t len, const char *os_name);
/* A malloc'ed copy of t's name (t protected by a reference or a snapshot), NULL on -ENOMEM. */
char *vmt__record_name_dup(vmt_thread_t *t);
/* t's name, held still (renames of t wait) until vmt__record_name_release: for a caller that
 * copies it into memory of its own. */
const char *vmt__record_name_hold(vmt_thread_t *t);
void vmt__record_name_release(vmt_thread_t *t);
/* t's name into buf (snprintf's rule: always terminated when len > 0); the bytes it needs. */
size_t vmt__record_name_copy(vmt_thread_t *t, char *buf, size_t len);

/* ---- Registry writer side (registry.c) ------------------------------------------------- */
/* Gives t its id and makes it visible in a new snapshot (not yet counted). 0 or -ENOMEM
 * (nothing changed then). */
int vmt__registry_insert(vmt_thread_t *t);
/* Counts t as started and (unless it already left) live, once: a started thread's starter
 * calls it after pthread_create and the thread itself before its body, and the first call
 * counts, so no instruction of the body runs uncounted. Internal threads are never counted. */
void vmt__registry_count(vmt_thread_t *t);
/* Uncounts t and tombstones it in the current snapshot; never fails. A later rebuild drops
 * it (this call rebuilds, allocating, only when tombstones crowd the snapshot); the registry's
 * reference on t goes once no reader can see it. With `exiting` (t is the calling thread, on
 * its way out), in one step under the writer lock and inside an odd exit sequence, t's CPU
 * time since it began (its own clock, read there) joins its category's exited total and t's
 * port record is marked exiting: a reader that sweeps the live threads' clocks sees each
 * thread live or in the total, never both nor neither, and never a live reading above the
 * total it later joins (vmt__registry_exit_seq). A start that failed passes false. */
void vmt__registry_remove(vmt_thread_t *t, bool exiting);
/* The exit sequence: odd while an exit moves its CPU time into its category. A reader that
 * read it even, then the totals and the live clocks, then the same value again, read one
 * consistent state. */
uint64_t vmt__registry_exit_seq(void);
/* Holds off exits (and starts) for a reader that keeps seeing the sequence move: under it the
 * sequence does not change. Short: a sweep of clocks, no allocation. */
void vmt__registry_exits_hold(void);
void vmt__registry_exits_release(void);

/* ---- Profiler hooks (record.c holds them; runtime/profiler/ sets them) ------------------- *
 * The profiler sits above the thread package, which therefore cannot call it: it installs
 * these before it arms the first thread and never removes them. The life cycle calls the two
 * inline checks, one predicted branch each when no profile runs. */
extern _Atomic bool vmt__prof_arming;   /* a session arms threads as they start or attach */
extern void (*_Atomic vmt__prof_begin_hook)(vmt_thread_t *t);
extern void (*_Atomic vmt__prof_end_hook)(vmt_thread_t *t);
extern void (*_Atomic vmt__prof_poll_hook)(vmt_thread_t *t);

/* A thread that starts or attaches, on itself, once it is current and its tid is published.
 * seq_cst: pairs with the start of a session, which sets the flag, then walks the registry
 * (the thread is in it) — one of the two arms the thread (runtime/profiler/arm.c). */
static inline void vmt__prof_thread_begin(vmt_thread_t *t) {
  if (__builtin_expect(atomic_load_explicit(&vmt__prof_arming, memory_order_seq_cst), 0))
    atomic_load_explicit(&vmt__prof_begin_hook, memory_order_acquire)(t);
}
/* The cooperative mode's walk, by the thread itself at the poll that runs its own handshake
 * operations (the handler armed it): one load when nothing was left for it. */
static inline void vmt__prof_poll(vmt_thread_t *t) {
  if (__builtin_expect(atomic_load_explicit(&t->prof.at_poll, memory_order_acquire) != 0, 0))
    atomic_load_explicit(&vmt__prof_poll_hook, memory_order_acquire)(t);
}
/* A thread that ends, on itself, just after vmt__registry_remove marked it exiting (and took
 * it out of the registry), while it still holds its tid and its own reference: its timer is
 * deleted here. seq_cst: pairs with an armer, which claims the state, then checks `exiting`
 * (runtime/profiler/arm.c). A stop that walked the registry without it waits for this. */
static inline void vmt__prof_thread_end(vmt_thread_t *t) {
  if (__builtin_expect(atomic_load_explicit(&t->prof.state, memory_order_seq_cst) != 0, 0))
    atomic_load_explicit(&vmt__prof_end_hook, memory_order_acquire)(t);
}

/* ---- Fork generation (record.c: incremented in every fork child; runtime/process.h) ----- */
/* Incremented in every fork child. A record whose fork_generation differs describes a thread
 * of an ancestor process: it does not exist here, so nobody waits for it nor touches its
 * pthread_t (joining or detaching one is undefined behaviour after fork). */
extern _Atomic uint32_t vmt__fork_generation;
static inline bool vmt__thread_of_this_process(const vmt_thread_t *t) {
  return t->fork_generation == atomic_load_explicit(&vmt__fork_generation, memory_order_relaxed);
}

#endif /* VMT_RUNTIME_REGISTRY_REGISTRY_H */
