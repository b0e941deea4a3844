/*
 * runtime/sync/episode.c: what a thread records when it blocks (runtime/sync/sync_impl.h, "blocking
 * episodes"): its state (BLOCKED, WAITING, TIMED_WAITING, then RUNNABLE), what it blocks on,
 * the blocked and waited counts (always), and the time spent (only while contention monitoring
 * is enabled). Called on slow paths only; the uncontended enter never gets here.
 *
 * Java's definitions (java.lang.management.ThreadInfo): the blocked count is the number of
 * times a thread blocked to enter or re-enter a monitor; the waited count the number of times
 * it waited for notification (Object.wait, LockSupport.park, Thread.sleep, which HotSpot counts
 * alike). A notified waiter's re-entry is blocked time from the notify on (episode_reenter).
 * The episode in progress is published (sync.ep_*) so that readers add its time so far, as
 * HotSpot's ThreadStatistics do: a thread blocked for 3 s reports about 3 s while still blocked.
 * Its kind is published too, in the write section that sets the state, and ThreadInfo's
 * state_bits report it (JVMTI's SLEEPING, PARKED, IN_OBJECT_WAIT, BLOCKED_ON_MONITOR_ENTER,
 * which jstack's "(sleeping)", "(parking)", "(on object monitor)" come from): one store that
 * took the place of a flag (blocked or waited time) the same section stored before.
 * An episode that straddles a change of the contention-monitoring setting adds no time: its
 * start belongs to another epoch (HotSpot instead keeps a partial interval; either is within
 * the specification, which only promises times since monitoring was enabled).
 */
#include "runtime/sync/sync_impl.h"

static inline void bump(_Atomic uint64_t *counter) {
  uint64_t v = atomic_load_explicit(counter, memory_order_relaxed);
  atomic_store_explicit(counter, v + 1, VMT__SEQ_W);
}

static void start_timer(vmt__episode_t *ep, vmt__episode_kind_t kind) {
  ep->kind = kind;
  ep->epoch = vmt__contention_current_epoch();
  ep->start_ns = ep->epoch ? vmt_os_elapsed_nanos() : 0;
}

/* The episode's time, and whether it still counts (its epoch is the current one). */
static bool stop_timer(const vmt__episode_t *ep, int64_t *d) {
  *d = 0;
  if (ep->epoch == 0) return false;
  *d = vmt_os_elapsed_nanos() - ep->start_ns;
  if (*d < 0) *d = 0;
  return ep->epoch == vmt__contention_current_epoch();
}

/* A silent identity (runtime/registry/registry.h) and NULL (a sleep on a thread without one)
 * record nothing but the time a monitor's blocked_ns needs. */
static inline bool records(const vmt_thread_t *t) { return t != NULL && !t->sync.silent; }

/* Inside t's write section: the published start of ep (or none). */
static void publish(vmt_thread_t *t, const vmt__episode_t *ep) {
  atomic_store_explicit(&t->sync.ep_epoch, ep ? ep->epoch : 0, VMT__SEQ_W);
  atomic_store_explicit(&t->sync.ep_start_ns, ep ? ep->start_ns : 0, VMT__SEQ_W);
  atomic_store_explicit(&t->sync.ep_kind, ep ? (uint8_t)(ep->kind + 1) : 0, VMT__SEQ_W);
}

/* Inside t's write section: what begin() publishes for kind. */
static void enter_state(vmt_thread_t *t, const vmt__episode_t *ep, struct vmt__lock *l,
                        vmt_thread_t *target, bool timed) {
  int state = timed ? VMT_THREAD_TIMED_WAITING : VMT_THREAD_WAITING;
  switch (ep->kind) {
    case VMT__EP_ENTER:
      atomic_store_explicit(&t->sync.blocked_on, (struct vmt_monitor *)l, VMT__SEQ_W);
      bump(&t->sync.blocked_count);
      state = VMT_THREAD_BLOCKED;
      break;
    case VMT__EP_WAIT:
      atomic_store_explicit(&t->sync.waiting_on, (struct vmt_monitor *)l, VMT__SEQ_W);
      bump(&t->sync.waited_count);
      break;
    case VMT__EP_SYNC:
      atomic_store_explicit(&t->sync.parked_on, (struct vmt_sync *)l, VMT__SEQ_W);
      bump(&t->sync.waited_count);
      break;
    case VMT__EP_PARK:
      atomic_store_explicit(&t->sync.parking, true, VMT__SEQ_W);
      bump(&t->sync.waited_count);
      break;
    case VMT__EP_JOIN:
      atomic_store_explicit(&t->sync.joining, target, VMT__SEQ_W);
      bump(&t->sync.waited_count);
      break;
    case VMT__EP_SLEEP:
      bump(&t->sync.waited_count);
      state = VMT_THREAD_TIMED_WAITING;
      break;
  }
  publish(t, ep);
  atomic_store_explicit(&t->state, state, VMT__SEQ_W);
}

/* Inside t's write section: undoes enter_state's "on" pointer and adds d to the kind's time. */
static void leave_state(vmt_thread_t *t, const vmt__episode_t *ep, bool keep_time, int64_t d) {
  switch (ep->kind) {
    case VMT__EP_ENTER:
      atomic_store_explicit(&t->sync.blocked_on, NULL, VMT__SEQ_W);
      break;
    case VMT__EP_WAIT:
      atomic_store_explicit(&t->sync.waiting_on, NULL, VMT__SEQ_W);
      break;
    case VMT__EP_SYNC:
      atomic_store_explicit(&t->sync.parked_on, NULL, VMT__SEQ_W);
      break;
    case VMT__EP_PARK:
      atomic_store_explicit(&t->sync.parking, false, VMT__SEQ_W);
      break;
    case VMT__EP_JOIN:
      atomic_store_explicit(&t->sync.joining, NULL, VMT__SEQ_W);
      break;
    case VMT__EP_SLEEP:
      break;
  }
  if (keep_time) {
    if (atomic_load_explicit(&t->sync.times_epoch, memory_order_relaxed) != ep->epoch) {
      atomic_store_explicit(&t->sync.blocked_ns, 0, VMT__SEQ_W);
      atomic_store_explicit(&t->sync.waited_ns, 0, VMT__SEQ_W);
      atomic_store_explicit(&t->sync.times_epoch, ep->epoch, VMT__SEQ_W);
    }
    _Atomic int64_t *acc = ep->kind == VMT__EP_ENTER ? &t->sync.blocked_ns : &t->sync.waited_ns;
    atomic_store_explicit(acc, atomic_load_explicit(acc, memory_order_relaxed) + d, VMT__SEQ_W);
  }
  publish(t, NULL);
}

static void begin(vmt_thread_t *t, vmt__episode_t *ep, vmt__episode_kind_t kind,
                  struct vmt__lock *l, vmt_thread_t *target, bool timed) {
  start_timer(ep, kind);
  if (!records(t)) return;
  uint32_t s = vmt__seq_begin(&t->sync.seq);
  enter_state(t, ep, l, target, timed);
  vmt__seq_end(&t->sync.seq, s);
}

void vmt__episode_begin(vmt_thread_t *t, vmt__episode_t *ep, vmt__episode_kind_t kind,
                        struct vmt__lock *l, bool timed) {
  begin(t, ep, kind, l, NULL, timed);
}

void vmt__episode_begin_join(vmt_thread_t *t, vmt__episode_t *ep, vmt_thread_t *target,
                             bool timed) {
  begin(t, ep, VMT__EP_JOIN, NULL, target, timed);
}

/* An enter episode ends with the lock acquired (it has no deadline): only the owner writes, so
 * no read-modify-write. The epoch is stored after the time it goes with, with release: a reader
 * that sees the new epoch sees the new epoch's time. */
static void add_blocked_to_lock(struct vmt__lock *l, uint64_t epoch, int64_t d) {
  if (atomic_load_explicit(&l->times_epoch, memory_order_relaxed) != epoch) {
    atomic_store_explicit(&l->blocked_ns, d, memory_order_relaxed);
    atomic_store_explicit(&l->times_epoch, epoch, memory_order_release);
  } else {
    atomic_store_explicit(&l->blocked_ns,
                          atomic_load_explicit(&l->blocked_ns, memory_order_relaxed) + d,
                          memory_order_relaxed);
  }
}

void vmt__episode_end(vmt_thread_t *t, vmt__episode_t *ep, struct vmt__lock *l,
                      struct vmt__lock *push) {
  int64_t d;
  bool keep_time = stop_timer(ep, &d);
  if (keep_time && ep->kind == VMT__EP_ENTER && l != NULL) add_blocked_to_lock(l, ep->epoch, d);
  if (!records(t)) {
    if (push != NULL) vmt__held_push(t, push);
    return;
  }
  uint32_t s = vmt__seq_begin(&t->sync.seq);
  leave_state(t, ep, keep_time, d);
  if (push != NULL) vmt__held_link(&t->sync.held_head, push);
  atomic_store_explicit(&t->state, VMT_THREAD_RUNNABLE, VMT__SEQ_W);
  vmt__seq_end(&t->sync.seq, s);
}

void vmt__episode_reenter(vmt_thread_t *t, vmt__episode_t *ep, struct vmt__lock *l) {
  int64_t d;
  bool keep_time = stop_timer(ep, &d);
  vmt__episode_t wait = *ep;
  start_timer(ep, VMT__EP_ENTER);
  if (!records(t)) return;
  uint32_t s = vmt__seq_begin(&t->sync.seq);
  leave_state(t, &wait, keep_time, d);
  enter_state(t, ep, l, NULL, false);
  vmt__seq_end(&t->sync.seq, s);
}
