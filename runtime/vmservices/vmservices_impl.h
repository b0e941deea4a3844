/*
 * runtime/vmservices/vmservices_impl.h: what the files of the VM services package share: the
 * queued operation, the per-thread queue lock, the safepoint's process-wide state, and the
 * steps each file lends the others (a thread's own processing, the requester's processing on
 * a safe thread's behalf, the safepoint arrival). Hidden; nothing outside runtime/vmservices/
 * includes it.
 *
 * DESIGN
 * - One word per thread (t->exec, in the record's first cache line) holds the execution state
 *   and the pending-work flags, so one load answers both "is it safe?" and "has it work?", and
 *   one compare-and-swap by the thread changes its state only if no request arrived meanwhile
 *   (ART's state_and_flags). Requesters only OR and AND flags in.
 * - Handshakes (handshake.c): a requester queues its operation under the target's queue lock
 *   and sets HANDSHAKE. A target in an unsafe state runs its queue itself at its next poll or
 *   transition (a transition out of an unsafe state fails its CAS while HANDSHAKE is set). A
 *   target in a safe state is processed by the requester: it sets PROCESSING with a CAS that
 *   requires the safe state, so the target cannot leave until PROCESSING clears (HotSpot's
 *   HandshakeState::try_process holds the target with its lock instead). A processor runs every
 *   synchronous operation queued, including those queued while it runs, before it lets go, so
 *   no requester ever waits on a queue nobody will look at.
 * - Safepoints (safepoint.c): the coordinator sets the safepoint word (seq_cst), then reads
 *   every record's exec word once. Safe threads are not touched: when one leaves its safe state
 *   it announces LEAVING (seq_cst CAS, state bits still safe) and then reads the safepoint word,
 *   so of the two (coordinator, thread) at least one sees the other (Dekker); it takes its
 *   unsafe state only after that read, so a held thread never shows one. Only unsafe and
 *   leaving threads are armed (SAFEPOINT, by CAS) and counted; each arrival is one atomic decrement, and the last one wakes
 *   the coordinator's futex. The end clears the word and wakes every waiter with one broadcast.
 *   The cost of an idle thread is one load (loads of many records overlap their misses).
 * - Suspension (suspend.c): a count per reason under one lock, and SUSPEND in the word while
 *   the total is > 0. A thread with SUSPEND set cannot leave a safe state; a running one is
 *   stopped by a no-op handshake, after which it blocks itself at the same poll. Suspend-alls
   count the members (threads from their registration until they are exiting) under the same
   lock, and a registering thread takes the counts of those in effect, so newcomers begin
   suspended (ART's ThreadList::Register).
 * - The thread waits in one place (state.c, vmt__exec_move_slow): leaving a safe state waits on
 *   its own word (PROCESSING, SUSPEND; woken by whoever clears them when WAITER is set) or on the
 *   safepoint word (the end's broadcast). Every wait of a requester has a timeout.
 */
#ifndef VMT_RUNTIME_VMSERVICES_VMSERVICES_IMPL_H
#define VMT_RUNTIME_VMSERVICES_VMSERVICES_IMPL_H

#if !defined(VMT_IN_VMSERVICES) && !defined(VMT_TEST_OF_INTERNALS)
#error "this header is private to runtime/vmservices/ (runtime/vmservices/BUILD.bazel)"
#endif

#include <errno.h>
#include <sched.h>

#include "runtime/process.h"
#include "runtime/vmservices/vmservices.h"

_Static_assert(__builtin_offsetof(struct vmt_thread, exec) == VMT_POLL_OFFSET,
               "the poll word is where include/vmthread/vmservices.h says it is");
_Static_assert(VMT__SUSPEND_REASONS == VMT_SUSPEND_REASON_COUNT, "one count per reason");


/* A requester spins this long for an answer before it sleeps on a futex: a target running on
 * another CPU answers within a microsecond (the poll-word round trip is 0.2-0.4 us here,
 * //bench:handshake's poll_round_trip); one that is not on a CPU needs the scheduler, whose
 * wake-up costs more than the spin. Never a fixed sleep (HotSpot's 10 us nanosleep sleeps ~64 us here). */
#define VMT__VMS_SPIN_NS 10000

/* One turn of such a spin, started at `start` (vmt_os_elapsed_nanos): false once the spin is
 * over. The first VMT__VMS_PAUSE_NS are pure pauses, which is when a target that runs on
 * another CPU answers; after that every turn yields the CPU, because the thread waited for is
 * then most likely runnable on this very CPU (more runnable threads than CPUs: two spinners
 * and a safepoint coordinator on 2 CPUs, the coordinator woken onto the CPU of the spinner it
 * displaced), and it can only arrive once this thread lets the CPU go. A yield with nobody else
 * runnable is a system call (a few hundred ns here), so the spin still notices an answer within that.
 * Measured on 2 CPUs with 2 spinners in managed code (//bench:handshake, time to safepoint
 * with a woken coordinator, p50 per run, runs of the two builds alternated, 2026-12-02
 * 07:30-07:45 UTC): a yield every 64th turn 7.8 / 13.3 / 10.2 / 18.0 / 15.2 us, this 5.9 / 5.9 /
 * 6.5 / 11.1 / 16.3 us; later, the machine noisier, 14.2 / 14.4 / 18.6 against 11.3 / 13.0 /
 * 11.8 us. Sleeping on the futex after the pause instead was slower still (15-21 us in
 * those later runs): the coordinator's own wake-up then adds to it. Every other row of the
 * benchmark stayed within its run-to-run spread. */
#define VMT__VMS_PAUSE_NS 1000
static inline bool vmt__vms_spin_turn(int64_t start) {
  int64_t waited = vmt_os_elapsed_nanos() - start;
  if (waited >= VMT__VMS_SPIN_NS) return false;
  if (waited >= VMT__VMS_PAUSE_NS)
    sched_yield();
  else
    vmt_os_cpu_relax();
  return true;
}

/* ---- Operations ------------------------------------------------------------------------ */
enum { VMT__NODE_PENDING = 0, VMT__NODE_SLEEPING = 1, VMT__NODE_DONE = 2 };

/* Several targets, one requester (run_all, suspend_all): completions counted down. */
typedef struct vmt__hs_group {
  _Atomic uint32_t pending;        /* operations not yet completed; bit 31: requester sleeps */
  _Atomic int32_t by_targets;
  _Atomic int32_t by_requester;
} vmt__hs_group_t;
#define VMT__GROUP_SLEEPING (1u << 31)

struct vmt__hs_node {
  struct vmt__hs_node *next;       /* the target's queue (queue_lock) */
  vmt_handshake_fn fn;
  void *arg;
  vmt_thread_t *target;
  vmt__hs_group_t *group;          /* NULL for a single-target request */
  bool async;                      /* malloc'ed, run by the target only, freed after */
  bool by_target;                  /* written before done */
  int32_t result;                  /* 0 ran, -ESRCH target exited; written before done */
  _Atomic uint32_t done;           /* VMT__NODE_*: the requester's futex word */
};

/* Marks a synchronous node complete and wakes its requester; the node may vanish (it lives on
 * the requester's stack or in its array) the moment this returns. */
void vmt__hs_complete(struct vmt__hs_node *n, int32_t result, bool by_target);
/* Handshake operations the calling thread is inside (run by it as target or as a processor on
 * behalf, nested ones counted): a request from there that must wait for other threads answers
 * -EDEADLK instead (handshake.c, run_fn). */
extern _Thread_local int vmt__hs_op_depth __attribute__((tls_model("initial-exec")));
/* The calling thread t runs every operation queued for it (from an unsafe state). */
void vmt__hs_process_own(vmt_thread_t *t);
/* A thread inside one of its own operations (ops_depth > 0) that becomes safe with more
 * queued: their requesters may sleep, expecting the thread to run them; wake them to process
 * on its behalf instead. */
void vmt__hs_wake_requesters(vmt_thread_t *t);
/* Queues n for t: 0, or -ESRCH if t has exited. */
int vmt__hs_push(vmt_thread_t *t, struct vmt__hs_node *n);
/* Waits for n (queued for target) until the deadline, processing on the target's behalf when
 * it is safe; on timeout takes n back if nobody has started it. 0 (n completed: n->result
 * says how) or -ETIMEDOUT. */
int vmt__hs_wait(vmt_thread_t *self, struct vmt__hs_node *n, int64_t deadline);
/* Queues one node per target, processes the safe ones, waits for all; on timeout takes back
 * every node not started (nodes[i].done tells which ran). 0 or -ETIMEDOUT. */
int vmt__hs_run_group(vmt_thread_t *self, struct vmt__hs_node *nodes, size_t n,
                      vmt_handshake_fn fn, void *arg, int64_t deadline,
                      vmt_handshake_result_t *result);
/* Fills a straggler report for t (thread_id 0 when t is NULL). */
void vmt__straggler_fill(vmt_straggler_t *s, const vmt_thread_t *t, int64_t waited_ns);

/* ---- Safepoints (safepoint.c) ----------------------------------------------------------- */
/* The coordinator: its record, or for a thread without one the address of its own TLS slot
 * vmt__current (unique per thread); 0 when none. */
extern _Atomic uintptr_t vmt__sp_owner;
static inline uintptr_t vmt__sp_token(vmt_thread_t *self) {
  return self ? (uintptr_t)self : (uintptr_t)&vmt__current;
}
/* A safepoint is being reached or held by someone other than t (a thread with its record or
 * NULL). */
static inline bool vmt__sp_holds(vmt_thread_t *t) {
  return (atomic_load_explicit(&vmt__sp_word, memory_order_seq_cst) & VMT__SP_ACTIVE) &&
         atomic_load_explicit(&vmt__sp_owner, memory_order_relaxed) != vmt__sp_token(t);
}
/* t, armed and counted, has stopped: one decrement; the last one wakes the coordinator. */
void vmt__sp_arrive(vmt_thread_t *t);
/* Sleeps until no safepoint holds (one broadcast at the end) or the deadline; 0 or
 * -ETIMEDOUT. */
int vmt__sp_wait_end(int64_t deadline);
/* Processors on behalf of safe threads in progress: a coordinator waits for them to finish
 * (their operations must not overlap its safepoint); they back off while one holds. */
bool vmt__sp_processing_begin(vmt_thread_t *self);   /* false: a safepoint holds */
void vmt__sp_processing_end(vmt_thread_t *self);

/* ---- Suspension (suspend.c) ------------------------------------------------------------ */
extern _Atomic uint32_t vmt__suspend_lock;
/* t is exiting, or its start failed: it leaves the suspend-alls' members and every suspension
 * (its counts are dropped; later suspends and resumes answer -ESRCH). */
void vmt__suspend_leave(vmt_thread_t *t);

/* ---- Time ------------------------------------------------------------------------------- */
static inline void vmt__vms_mark_safe(vmt_thread_t *t) {
  atomic_store_explicit(&t->vms.last_safe_ns, vmt_os_elapsed_nanos(), memory_order_relaxed);
}
/* A deadline (vmt_os_java_time_nanos scale) from a timeout: 0 means none. */
static inline int64_t vmt__vms_deadline(int64_t timeout_ns) {
  if (timeout_ns <= 0) return VMT_OS_NO_DEADLINE;
  int64_t now = vmt_os_java_time_nanos();
  return timeout_ns >= VMT_OS_NO_DEADLINE - now ? VMT_OS_NO_DEADLINE : now + timeout_ns;
}

#endif /* VMT_RUNTIME_VMSERVICES_VMSERVICES_IMPL_H */
