/*
 * runtime/vmservices/vmservices.h: what the VM services package offers the packages above it:
 * the safe-region transitions that sync and thread wrap around every blocking call (HotSpot's
 * ThreadBlockInVM), the thread's exit steps, the fork rule, and the per-thread queries
 * management reports (execution state, suspension). Management calls the public handshake and
 * safepoint API (include/vmthread/vmservices.h) like any host. Hidden.
 *
 * The fast path of a transition is inline: one compare-and-swap on the record's `exec` word
 * (execution state in the low bits, pending work in the flag bits) and, into an unsafe state
 * from a safe one, one load of the safepoint word. Anything pending (a flag set, a safepoint in
 * progress, a lost race) takes vmt__exec_move_slow, which does the waiting and the work.
 */
#ifndef VMT_RUNTIME_VMSERVICES_VMSERVICES_H
#define VMT_RUNTIME_VMSERVICES_VMSERVICES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "vmthread/vmservices.h"
#include "runtime/registry/registry.h"

/* ---- The exec word (t->exec) ------------------------------------------------------------ *
 * Bits 0-2: vmt_exec_state_t. Flags: HANDSHAKE (operations queued), SUSPEND (suspend count >
 * 0), SAFEPOINT (armed and counted by the safepoint coordinator), PROCESSING (a requester runs
 * operations on the thread's behalf; only ever set while the state is safe), WAITER (the
 * thread sleeps on this word for PROCESSING or SUSPEND to clear), LEAVING (the thread, still in
 * its safe state, is on its way out to an unsafe one: it reads the safepoint word next; only
 * the thread sets and clears it). The poll tests the first three (VMT_POLL_MASK). Only the
 * thread changes its state bits; others set and clear flags with atomic OR/AND, so every write
 * of the thread is a compare-and-swap of the whole word. */
#define VMT__EXEC_STATE_MASK 0x7u
#define VMT__EXEC_HANDSHAKE (1u << 8)
#define VMT__EXEC_SUSPEND (1u << 9)
#define VMT__EXEC_SAFEPOINT (1u << 10)
#define VMT__EXEC_PROCESSING (1u << 11)
#define VMT__EXEC_WAITER (1u << 12)
#define VMT__EXEC_LEAVING (1u << 13)
#define VMT__EXEC_FLAGS (VMT__EXEC_HANDSHAKE | VMT__EXEC_SUSPEND | VMT__EXEC_SAFEPOINT | \
                         VMT__EXEC_PROCESSING | VMT__EXEC_WAITER | VMT__EXEC_LEAVING)
_Static_assert(VMT_POLL_MASK == (VMT__EXEC_HANDSHAKE | VMT__EXEC_SUSPEND | VMT__EXEC_SAFEPOINT),
               "the public poll mask is the pending-work flags");

/* Safe states: the thread touches no managed state there (NATIVE, BLOCKED, EXITED). */
static inline bool vmt__exec_is_safe(uint32_t state) {
  return state != VMT_EXEC_MANAGED && state != VMT_EXEC_VM;
}
/* What a safepoint must wait for: a thread in an unsafe state, or one on its way out of a safe
 * state (which may not have seen the safepoint). */
static inline bool vmt__exec_may_run(uint32_t word) {
  return !vmt__exec_is_safe(word & VMT__EXEC_STATE_MASK) || (word & VMT__EXEC_LEAVING);
}

/* The safepoint word: bit 0 set while a safepoint is being reached or held, bit 1 when
 * threads sleep on it for the end, an epoch above (safepoint.c). */
#define VMT__SP_ACTIVE 1u
#define VMT__SP_WAITERS 2u
extern _Atomic uint32_t vmt__sp_word;

/* The calling thread t (never NULL) to state `to`; returns the state it left. See
 * vmt_exec_enter for what waits. pass_wake, when not NULL, is a futex word the caller was just
 * woken on: if the move has to wait, it first wakes one other sleeper there, so that a wake-up
 * meant for whoever takes a lock is not held by a thread that cannot take it now (a suspended
 * monitor contender). */
void vmt__exec_move_slow(vmt_thread_t *t, uint32_t to, _Atomic uint32_t *pass_wake);

/* Out of a safe state (word w, no flag set) into the unsafe state `to`, in three steps
 * (HotSpot's _thread_blocked_trans and _thread_in_native_trans): announce LEAVING with the
 * state bits still safe, read the safepoint word, then take the new state. seq_cst on the
 * first two: they pair with the coordinator's store of the safepoint word, then its load of
 * ours (Dekker): if it read us without LEAVING, we read its safepoint. The state bits never
 * show an unsafe state the thread is not allowed in, so a thread held by a safepoint reads safe
 * throughout and never runs operations queued for it meanwhile. false: a safepoint is on, or a
 * flag came in between; the slow path takes LEAVING back and waits. */
static inline bool vmt__exec_leave_safe(vmt_thread_t *t, uint32_t w, uint32_t to) {
  uint32_t lw = w | VMT__EXEC_LEAVING;
  return atomic_compare_exchange_strong_explicit(&t->exec, &w, lw, memory_order_seq_cst,
                                                 memory_order_relaxed) &&
         (atomic_load_explicit(&vmt__sp_word, memory_order_seq_cst) & VMT__SP_ACTIVE) == 0 &&
         atomic_compare_exchange_strong_explicit(
             &t->exec, &lw, (lw & ~(VMT__EXEC_STATE_MASK | VMT__EXEC_LEAVING)) | to,
             memory_order_seq_cst, memory_order_relaxed);
}

static inline int vmt__exec_move(vmt_thread_t *t, uint32_t to, _Atomic uint32_t *pass_wake) {
  uint32_t w = atomic_load_explicit(&t->exec, memory_order_relaxed);
  uint32_t from = w & VMT__EXEC_STATE_MASK;
  if ((w & VMT__EXEC_FLAGS) == 0) {
    /* Into a safe state, or between unsafe ones: nothing to check, the coordinator already
     * waits for an unsafe thread. */
    if (vmt__exec_is_safe(to) || !vmt__exec_is_safe(from)) {
      if (atomic_compare_exchange_strong_explicit(&t->exec, &w, (w & ~VMT__EXEC_STATE_MASK) | to,
                                                  memory_order_seq_cst, memory_order_relaxed))
        return (int)from;
    } else if (vmt__exec_leave_safe(t, w, to)) {
      return (int)from;
    }
  }
  vmt__exec_move_slow(t, to, pass_wake);
  return (int)from;
}

/* A safe region around a blocking call of the runtime: enter returns the state to restore
 * (-1 for a thread without record, which takes no part), leave restores it, waiting while a
 * safepoint, a handshake on the thread's behalf or a suspension holds it. */
static inline int vmt__region_enter(vmt_thread_t *t) {
  return t ? vmt__exec_move(t, VMT_EXEC_BLOCKED, NULL) : -1;
}
static inline void vmt__region_leave(vmt_thread_t *t, int saved, _Atomic uint32_t *pass_wake) {
  if (saved >= 0) vmt__exec_move(t, (uint32_t)saved, pass_wake);
}

/* vmt_handshake_run for a caller that already keeps target's record from reuse (it holds a
 * registry snapshot that lists it, or a reference): no reference taken and dropped per call,
 * two read-modify-writes less for each thread of a sweep (management's ThreadInfo with
 * stacks). target is a valid record, fn non-NULL, timeout_ns >= 0. */
int vmt__hs_run_kept(vmt_thread_t *target, vmt_handshake_fn fn, void *arg, int64_t timeout_ns,
                     vmt_handshake_result_t *result);

/* ---- Queries (management) -------------------------------------------------------------- */
static inline int vmt__exec_state_of(const vmt_thread_t *t) {
  return (int)(atomic_load_explicit(&((vmt_thread_t *)t)->exec, memory_order_acquire) &
               VMT__EXEC_STATE_MASK);
}
static inline bool vmt__is_suspended(const vmt_thread_t *t) {
  return atomic_load_explicit(&((vmt_thread_t *)t)->vms.suspend_total, memory_order_acquire) > 0;
}

/* ---- The thread's life cycle (called by the thread itself, runtime/thread/exit.c) ------- *
 * begin: before the exit bookkeeping; the thread moves into VM code (runs what is pending,
 * waits while suspended or stopped at a safepoint), so it exits only outside safepoints.
 * end: once TERMINATED, before it leaves the registry; the thread runs what was queued
 * meanwhile and becomes EXITED: from then a request answers -ESRCH. */
void vmt__vms_thread_exit_begin(vmt_thread_t *t);
/* A started (not internal) or attached thread has been registered and has not run yet (or, an
 * attach, has not returned to its caller): it joins the threads suspend-alls count, and begins
 * with the counts of every suspend-all in effect (ART's ThreadList::Register). A start that
 * fails after this calls vmt__vms_thread_start_failed instead of the exit steps. */
void vmt__vms_thread_registered(vmt_thread_t *t);
void vmt__vms_thread_start_failed(vmt_thread_t *t);
/* exiting: after the exit hooks and TLS destructors (the last code of the VM's that the thread
 * runs), before the monitors are released; ends a safepoint they began and left held; back in
 * VM code if they left it in a safe state (a suspension taken there holds it here), then no
 * longer alive for suspension: it leaves the suspend-alls' members, its counts (of suspends
 * still waiting for it) are dropped, and later suspends and resumes answer -ESRCH (HotSpot's
 * set_terminated(_thread_exiting), suspend.c). */
void vmt__vms_thread_exiting(vmt_thread_t *t);
void vmt__vms_thread_exit_end(vmt_thread_t *t);
/* A foreign thread has just become t (vmt_thread_attach, right after vmt__current_set): a
 * safepoint it began before is now t's, so that t can end it (and does as it detaches). */
void vmt__vms_thread_attached(vmt_thread_t *t);

/* Fork: the package's rows in runtime/process.h's table (lifecycle.c, safepoint.c,
 * suspend.c), ranked between sync's and the registry's: a safepoint begun by another thread is
 * over in the child, one the forking thread holds stays held; the forker keeps only its own
 * asynchronous operations and no suspension. */

#endif /* VMT_RUNTIME_VMSERVICES_VMSERVICES_H */
