/*
 * runtime/vmservices/lifecycle.c: a thread's last steps in the VM services, and their fork
 * rule.
 *
 * Exit. begin ends a safepoint the thread still holds, then moves it into VM code (unsafe)
 * before the exit bookkeeping: what is queued runs, a suspended thread stays until resumed, and
 * no thread exits while another's safepoint holds (its bookkeeping releases monitors and leaves
 * the registry, which a safepoint's consistent dump must not see change). exiting, after the
 * exit hooks and TLS destructors, ends a safepoint one of them began and left held, and makes
 * the thread no longer alive for suspension (suspend.c). end, once the thread is TERMINATED but before it
 * leaves the registry (so a safepoint coordinator still finds and counts it), runs what was
 * queued meanwhile and, under its queue lock with the queue empty, makes it EXITED: from then
 * a push answers -ESRCH. Every operation queued before is thus run exactly once, by the thread
 * itself; none is dropped, none runs after the thread is gone.
 *
 * Fork (the package's rows of runtime/process.h: here the forking thread's record, in
 * safepoint.c and suspend.c the rest). The child has only the forking thread. prepare holds its
 * queue lock (held for a few stores at a time) so that the child finds the queue consistent;
 * the child then drops what other threads were doing to it or with it.
 */
#include "runtime/vmservices/vmservices_impl.h"

void vmt__vms_thread_exit_begin(vmt_thread_t *t) {
  /* A coordinator that exits with its safepoint held ends it: nobody else can, and every
   * later begin would wait for its lock forever. */
  if (atomic_load_explicit(&vmt__sp_owner, memory_order_relaxed) == vmt__sp_token(t))
    vmt_safepoint_end(NULL);
  vmt__exec_move(t, VMT_EXEC_VM, NULL);
}

void vmt__vms_thread_exiting(vmt_thread_t *t) {
  /* A safepoint begun in an exit hook or TLS destructor (after exit_begin looked) is ended
   * here, the last point where the thread runs the VM's code: else nobody could. */
  if (atomic_load_explicit(&vmt__sp_owner, memory_order_relaxed) == vmt__sp_token(t))
    vmt_safepoint_end(NULL);
  /* Back in VM code if a hook left the thread in a safe state: a suspension taken there
   * holds it here, as leaving any safe state would (HotSpot's native-to-VM transition). */
  if (vmt__exec_is_safe((uint32_t)vmt__exec_state_of(t))) vmt__exec_move(t, VMT_EXEC_VM, NULL);
  vmt__suspend_leave(t);
}

void vmt__vms_thread_exit_end(vmt_thread_t *t) {
  for (;;) {
    vmt_os_futex_lock(&t->vms.queue_lock);
    if (t->vms.queue_head == NULL) break;
    vmt_os_futex_unlock(&t->vms.queue_lock);
    vmt__hs_process_own(t);   /* still in VM code: a safe point like any poll */
  }
  uint32_t w = atomic_load_explicit(&t->exec, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(
      &t->exec, &w, (w & ~(VMT__EXEC_STATE_MASK | VMT__EXEC_SAFEPOINT | VMT__EXEC_HANDSHAKE)) |
                        VMT_EXEC_EXITED,
      memory_order_seq_cst, memory_order_relaxed)) {
  }
  vmt_os_futex_unlock(&t->vms.queue_lock);
  if (w & VMT__EXEC_SAFEPOINT) vmt__sp_arrive(t);
}

static void queue_fork_prepare(void) {
  vmt_thread_t *self = vmt__current;
  if (self) vmt_os_futex_lock(&self->vms.queue_lock);
}

static void queue_fork_parent(void) {
  vmt_thread_t *self = vmt__current;
  if (self) vmt_os_futex_unlock(&self->vms.queue_lock);
}

static void queue_fork_child(void) {
  vmt_thread_t *self = vmt__current;
  if (self == NULL) return;
  /* Synchronous operations were asked by threads of the parent: nobody waits for them here.
   * The forker's own asynchronous ones stay queued (copied with the rest of memory). */
  struct vmt__hs_node *keep = NULL, *tail = NULL;
  for (struct vmt__hs_node *p = self->vms.queue_head, *next; p; p = next) {
    next = p->next;
    if (!p->async) continue;
    p->next = NULL;
    if (tail)
      tail->next = p;
    else
      keep = p;
    tail = p;
  }
  self->vms.queue_head = keep;
  self->vms.queue_tail = tail;
  atomic_store_explicit(&self->vms.queue_lock, 0, memory_order_relaxed);
  for (int i = 0; i < VMT_SUSPEND_REASON_COUNT; i++) self->vms.suspend_counts[i] = 0;
  atomic_store_explicit(&self->vms.suspend_total, 0, memory_order_relaxed);
  uint32_t w = atomic_load_explicit(&self->exec, memory_order_relaxed) & VMT__EXEC_STATE_MASK;
  if (keep) w |= VMT__EXEC_HANDSHAKE;
  atomic_store_explicit(&self->exec, w, memory_order_relaxed);
}
/* Records of the threads that vanished are the registry's (tombstoned in its child handler);
 * the safepoint walk skips records not in the registry. */
VMT__PROCESS_STATE(vms_record_fields, .symbols = "", .rule = VMT__FORK_RESET,
                   .fork = "the forking thread's exec word keeps its state and loses every flag "
                           "but HANDSHAKE for its own asynchronous operations, which stay queued "
                           "(its queue lock is held across fork); synchronous ones, asked by "
                           "threads that are not there, are dropped; its suspend counts are 0",
                   .rank = VMT__RANK_VMSERVICES, .prepare = queue_fork_prepare,
                   .parent = queue_fork_parent, .child = queue_fork_child);
