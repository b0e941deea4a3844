/*
 * runtime/monitor_impl.h: what the monitor module keeps in each thread record, and what it
 * offers the management module. Hidden.
 */
#ifndef VMT_RUNTIME_MONITOR_IMPL_H
#define VMT_RUNTIME_MONITOR_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VMT__LOCK_DESC_NAME_MAX 288

struct vmt_monitor;
struct vmt_sync;
struct vmt__lock;   /* what monitors and synchronizers share (runtime/lock.h) */

/* Per-thread synchronization state. Written by the owning thread; read by management code
 * holding a registry snapshot. All zero in a fresh record (the thread module zero-fills it).
 *
 * seq is a sequence lock over everything a reader copies: the held list, blocked_on /
 * waiting_on / parked_on, the times and the state changes the monitor module makes. Only the
 * owning thread writes (seq odd while it does); readers copy and retry when seq moved, so the
 * writer never waits for a reader. */
struct vmt__thread_sync {
  _Atomic(struct vmt_monitor *) blocked_on;   /* contended enter in progress (BLOCKED) */
  _Atomic(struct vmt_monitor *) waiting_on;   /* in vmt_monitor_wait */
  _Atomic(struct vmt_sync *) parked_on;       /* waiting to acquire a synchronizer */
  _Atomic uint64_t blocked_count;
  _Atomic uint64_t waited_count;
  _Atomic int64_t blocked_ns;
  _Atomic int64_t waited_ns;
  _Atomic uint32_t park_permit;               /* futex word for park/unpark */
  _Atomic uint32_t seq;                       /* sequence lock, see above */
  _Atomic(struct vmt__lock *) held_head;      /* innermost held monitor or synchronizer */
  _Atomic uint64_t times_epoch;               /* contention-monitoring epoch of the times */
};

/* ---- What the management module reads (implemented by the monitor module) ------------- *
 * The monitor module owns all synchronization needed to read another thread's lock state
 * safely while that thread enters, exits, waits, and while monitors are destroyed: the
 * functions below return copies, never pointers into monitors. */
typedef struct vmt__lock_desc {
  char class_name[24];                  /* "vmt.Monitor" / "vmt.Synchronizer" */
  char name[VMT__LOCK_DESC_NAME_MAX];   /* "name@hexid" */
  int32_t identity;
  bool is_sync;
  int32_t depth;                        /* held locks: how many locks the thread held below
                                           this one (0 = outermost); -1 otherwise */
} vmt__lock_desc_t;

typedef struct vmt__thread_lock_info {
  int32_t state;            /* vmt_thread_state_t, read together with the fields below */
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
/* Enabling resets all threads' blocked/waited times (Java semantics). */
void vmt__set_contention_monitoring(bool enable);

#endif /* VMT_RUNTIME_MONITOR_IMPL_H */
