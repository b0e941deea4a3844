/*
 * runtime/vmservices/state.c: execution states and their transitions, the poll, and the one
 * place a thread waits for what holds it (a safepoint, a handshake on its behalf, a
 * suspension). The fast path is inline in vmservices.h; this is where a transition goes when
 * its word has a flag set or it raced a safepoint.
 *
 * The slow path is a loop over the thread's own word, one step per turn:
 *   unsafe now  run queued operations (it is at a safe point: the VM called us); stop here
 *               (become BLOCKED) when suspended, armed or a safepoint holds and `to` is unsafe;
 *               else CAS to `to` (a move into a safe state clears SAFEPOINT in the same CAS and
 *               counts the arrival).
 *   safe now    a move to another safe state is a CAS of the state bits whatever the flags; a
 *               move to an unsafe one waits for PROCESSING and SUSPEND to clear (own word),
 *               counts an arrival if armed, waits out a safepoint (safepoint word), then
 *               announces LEAVING, reads the safepoint word again (Dekker, see
 *               vmservices_impl.h) and only then CASes to `to`; anything in between takes the
 *               announcement back and goes round again.
 */
#include "runtime/fault.h"
#include "runtime/vmservices/vmservices_impl.h"

/* Sleeps on the thread's own word until PROCESSING and SUSPEND are clear; w is the value
 * last read. Whoever clears them wakes us when WAITER is set. */
static void wait_own(vmt_thread_t *t, uint32_t w) {
  if ((w & VMT__EXEC_WAITER) == 0) {
    uint32_t nw = w | VMT__EXEC_WAITER;
    if (!atomic_compare_exchange_strong_explicit(&t->exec, &w, nw, memory_order_acq_rel,
                                                 memory_order_relaxed))
      return;   /* the word moved: the caller re-reads it */
    w = nw;
  }
  vmt_os_futex_wait(&t->exec, w, VMT_OS_NO_DEADLINE);
}

/* Takes back the thread's announcement that it leaves its safe state (it stays there). A
 * coordinator that armed it meanwhile counted it as one to wait for: it arrives now. */
static void take_back_leaving(vmt_thread_t *t) {
  uint32_t old = atomic_fetch_and_explicit(&t->exec, ~(VMT__EXEC_LEAVING | VMT__EXEC_SAFEPOINT),
                                           memory_order_seq_cst);
  if (old & VMT__EXEC_SAFEPOINT) vmt__sp_arrive(t);
}

void vmt__exec_move_slow(vmt_thread_t *t, uint32_t to, _Atomic uint32_t *pass_wake) {
  (void)vmt__fault_hit(VMT__FAULT_EXEC_SLOW);   /* a hook point only */
  vmt__vms_mark_safe(t);
  /* The fast path's way out (vmt__exec_leave_safe) met a safepoint or a flag. */
  if (atomic_load_explicit(&t->exec, memory_order_relaxed) & VMT__EXEC_LEAVING)
    take_back_leaving(t);
  for (;;) {
    uint32_t w = atomic_load_explicit(&t->exec, memory_order_acquire);
    uint32_t s = w & VMT__EXEC_STATE_MASK;
    uint32_t keep = w & ~VMT__EXEC_STATE_MASK;
    if (!vmt__exec_is_safe(s)) {
      if ((w & VMT__EXEC_HANDSHAKE) && t->vms.ops_depth == 0) {
        vmt__hs_process_own(t);
        continue;
      }
      bool stop = !vmt__exec_is_safe(to) &&
                  ((w & (VMT__EXEC_SUSPEND | VMT__EXEC_SAFEPOINT)) || vmt__sp_holds(t));
      uint32_t dest = stop ? VMT_EXEC_BLOCKED : to;
      if (vmt__exec_is_safe(dest)) keep &= ~VMT__EXEC_SAFEPOINT;
      /* A poll that ran its operations and stays where it is: nothing to write. A CAS of the
       * same value would still take the line from a requester reading it (a miss for both). */
      if (!stop && (keep | dest) == w) return;
      if (!atomic_compare_exchange_strong_explicit(&t->exec, &w, keep | dest,
                                                   memory_order_seq_cst, memory_order_relaxed))
        continue;
      if (vmt__exec_is_safe(dest) && (w & VMT__EXEC_SAFEPOINT)) vmt__sp_arrive(t);
      if (vmt__exec_is_safe(dest) && (w & VMT__EXEC_HANDSHAKE)) vmt__hs_wake_requesters(t);
      if (!stop) return;
      continue;   /* now BLOCKED: the safe branch below waits, then moves on to `to` */
    }
    if (vmt__exec_is_safe(to)) {
      if (atomic_compare_exchange_strong_explicit(&t->exec, &w, keep | to, memory_order_seq_cst,
                                                  memory_order_relaxed))
        return;
      continue;
    }
    if (w & (VMT__EXEC_PROCESSING | VMT__EXEC_SUSPEND)) {
      if (pass_wake) {
        vmt_os_futex_wake(pass_wake, 1);
        pass_wake = NULL;
      }
      wait_own(t, w);
      continue;
    }
    if (w & VMT__EXEC_SAFEPOINT) {
      /* Armed while unsafe and safe again before it polled: that is an arrival. */
      if (atomic_compare_exchange_strong_explicit(&t->exec, &w, w & ~VMT__EXEC_SAFEPOINT,
                                                  memory_order_seq_cst, memory_order_relaxed))
        vmt__sp_arrive(t);
      continue;
    }
    if (vmt__sp_holds(t)) {
      if (pass_wake) {
        vmt_os_futex_wake(pass_wake, 1);
        pass_wake = NULL;
      }
      vmt__sp_wait_end(VMT_OS_NO_DEADLINE);
      continue;
    }
    /* Free to go: the way out of vmt__exec_leave_safe, with the flags kept. */
    uint32_t lw = (w & ~VMT__EXEC_WAITER) | VMT__EXEC_LEAVING;
    if (!atomic_compare_exchange_strong_explicit(&t->exec, &w, lw, memory_order_seq_cst,
                                                 memory_order_relaxed))
      continue;
    if (vmt__sp_holds(t) ||
        !atomic_compare_exchange_strong_explicit(
            &t->exec, &lw, (lw & ~(VMT__EXEC_STATE_MASK | VMT__EXEC_LEAVING)) | to,
            memory_order_seq_cst, memory_order_relaxed)) {
      take_back_leaving(t);
      continue;
    }
    /* Unsafe now. Done unless operations are queued: the unsafe branch runs them. */
    if ((lw & VMT__EXEC_HANDSHAKE) == 0) return;
  }
}

int vmt_exec_enter(vmt_exec_state_t to) {
  vmt_thread_t *t = vmt__current;
  if (t == NULL) return -EPERM;
  if ((unsigned)to > VMT_EXEC_BLOCKED) return -EINVAL;
  return vmt__exec_move(t, (uint32_t)to, NULL);
}

void vmt_poll_slow(vmt_thread_t *self) {
  if (self == NULL || self != vmt__current) return;
  uint32_t s = atomic_load_explicit(&self->exec, memory_order_relaxed) & VMT__EXEC_STATE_MASK;
  if (vmt__exec_is_safe(s)) return;
  vmt__exec_move_slow(self, s, NULL);
}

const uint32_t *vmt_poll_word(vmt_thread_t *t) {
  if (t == NULL || !vmt__handle_valid(t)) return NULL;
  return (const uint32_t *)&t->exec;
}

int vmt_exec_state(const vmt_thread_t *t) {
  if (t == NULL || !vmt__handle_valid(t)) return -EINVAL;
  return vmt__exec_state_of(t);
}

const char *vmt_exec_state_name(vmt_exec_state_t state) {
  switch (state) {
    case VMT_EXEC_NATIVE: return "NATIVE";
    case VMT_EXEC_MANAGED: return "MANAGED";
    case VMT_EXEC_VM: return "VM";
    case VMT_EXEC_BLOCKED: return "BLOCKED";
    case VMT_EXEC_EXITED: return "EXITED";
  }
  return "UNKNOWN";
}
