/*
 * runtime/sync/sync.h: what the sync package (monitors, synchronizers, park, sleep) offers the
 * packages above it: a thread's lock identity and the release of its locks as it ends
 * (thread), and copies of a thread's lock state, deadlock cycles and the contention-monitoring
 * switch (management). The per-thread state it keeps in each record is declared with the
 * record (runtime/registry/registry.h). Hidden.
 */
#ifndef VMT_RUNTIME_SYNC_SYNC_H
#define VMT_RUNTIME_SYNC_SYNC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/registry/registry.h"

#define VMT__LOCK_DESC_NAME_MAX 288

/* ---- Lock identity: what the thread package sets and calls (identity.c, lock.c) -------- *
 * The owner token of every lock a thread holds, one for the thread's whole life: its record
 * while it is started, internal or attached (the thread package sets vmt__self as it starts,
 * attaches and ends); for any other thread (one that has not attached, or no longer is) a
 * record of kind IMPLICIT, made at its first lock, never in the registry, never counted nor
 * listed, and given back at the thread's end (ART and OMR attach a thread on first use the
 * same way). An attach makes the new record the identity and hands it the locks of the old
 * one (vmt__monitor_adopt); a last detach while the thread still holds locks keeps the record
 * as a silent identity (vmt__monitor_keep) until the thread ends. So a lock never changes
 * hands without its owner's exit, and no thread inherits another's (a later thread on the
 * same stack and TLS starts with no identity). Read inline by the lock fast paths: one
 * %fs-relative load, like vmt__current. */
extern _Thread_local vmt_thread_t *vmt__self __attribute__((tls_model("initial-exec")));
/* Arms the calling thread's end hook with the sync package's piece, which releases what its
 * identity still holds when it ends and gives the record back (identity.c). The attach calls
 * it: a last detach may leave a kept identity. 0 or -errno, as vmt__thread_end_arm. */
int vmt__identity_arm_end(void);

/* Called by a thread itself as it ends, with its identity t (thread/exit.c, identity.c):
 * releases every monitor and synchronizer it still holds, whatever the recursion, and wakes
 * their waiters, so that no lock stays owned by a thread that is gone, nor passes to the next
 * thread that gets t's recycled record. HotSpot does the same for monitors a thread entered
 * through JNI and never exited (ObjectSynchronizer::release_monitors_owned_by_thread, at
 * JavaThread::exit). A last detach does not release (vmt__monitor_keep): the thread may still
 * be inside them. */
void vmt__monitor_thread_end(vmt_thread_t *t);
/* Called by the thread itself as `to` (a fresh record, holding nothing) becomes its identity in
 * place of `from`: every lock from holds is now owned by to and on to's held list. */
void vmt__monitor_adopt(vmt_thread_t *to, vmt_thread_t *from);
/* Called by the thread itself at its last detach, when it goes on without a record: if t still
 * holds locks, t stays their owner as a silent identity (no state, counts or times any more)
 * and the answer is true; else false. */
bool vmt__monitor_keep(vmt_thread_t *t);

/* ---- What the thread package calls for join (interrupt.c) ------------------------------ *
 * Waits until (target->exit_event & VMT__EVENT_PERMIT) != 0 (a record's word: type-stable),
 * the deadline (CLOCK_MONOTONIC ns, VMT_OS_NO_DEADLINE) passes, or self is interrupted
 * (self may be NULL: a thread without record cannot be). While it sleeps, self is WAITING
 * (TIMED_WAITING with a deadline), the wait counts in its waited count, as Java's join (an
 * Object.wait on the Thread) does, and its ThreadInfo names target as the lock it waits on.
 * self holds a reference on target. 0, -ETIMEDOUT, -EINTR (the interrupt status cleared). */
int vmt__wait_for_exit(vmt_thread_t *self, vmt_thread_t *target, int64_t deadline_ns);
/* The deadline of a relative timeout: VMT_OS_NO_DEADLINE for VMT_TIMEOUT_INFINITE or past the
 * clock's range; now for timeout_ns <= 0 (lock.c). */
int64_t vmt__deadline_after_or_now(int64_t timeout_ns);

/* ---- What the management package reads ----------------------------------------------- *
 * The sync package owns all synchronization needed to read another thread's lock state
 * safely while that thread enters, exits, waits, and while monitors are destroyed: the
 * functions below return copies, never pointers into monitors. */
typedef struct vmt__lock_desc {
  /* "vmt.Monitor" / "vmt.Synchronizer", or a park blocker's class (VM-given, cut) */
  char class_name[VMT_PARK_BLOCKER_CLASS_MAX + 1];
  char name[VMT__LOCK_DESC_NAME_MAX];   /* "name@hexid" */
  int32_t identity;
  bool is_sync;
  int32_t depth;                        /* held locks: how many locks the thread held below
                                           this one (0 = outermost); -1 otherwise */
} vmt__lock_desc_t;

typedef struct vmt__thread_lock_info {
  int32_t state;            /* vmt_thread_state_t, read together with the fields below */
  uint32_t wait_bits;       /* the episode's VMT_THREAD_STATE_SLEEPING, _PARKED, _IN_OBJECT_WAIT
                               or _BLOCKED_ON_MONITOR_ENTER (vmthread/management.h), 0 none */
  bool interrupted;         /* its interrupt status, read after the copy */
  bool has_lock;            /* blocked on / waiting on / parked on a lock */
  vmt__lock_desc_t lock;
  int64_t lock_owner_id;    /* -1 if none or not a runtime thread */
  uint64_t blocked_count;
  uint64_t waited_count;
  int64_t blocked_ns;       /* -1 while contention monitoring is disabled */
  int64_t waited_ns;        /* -1 while contention monitoring is disabled */
  size_t held_count;
  vmt__lock_desc_t *held;   /* malloc'ed when want_held, caller frees; innermost first */
} vmt__thread_lock_info_t;

struct vmt_thread;
/* t must be protected (registry snapshot or a reference). 0 or -ENOMEM. */
int vmt__thread_lock_info(struct vmt_thread *t, bool want_held, vmt__thread_lock_info_t *out);
/* Ids of threads in deadlock cycles; include_syncs adds synchronizer edges. *ids malloc'ed
 * (NULL when none). */
int vmt__find_deadlocks(bool include_syncs, int64_t **ids, size_t *count);
bool vmt__contention_monitoring_enabled(void);
/* The identity a live monitor shows (vmt__lock_desc_t.identity), 0 if m is none. */
int32_t vmt__monitor_identity(const struct vmt_monitor *m);
/* Enabling resets all threads' blocked/waited times (Java semantics). */
void vmt__set_contention_monitoring(bool enable);

#endif /* VMT_RUNTIME_SYNC_SYNC_H */
