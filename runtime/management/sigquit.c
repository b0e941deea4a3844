/*
 * runtime/management/sigquit.c: the opt-in answer to SIGQUIT (kill -3), as HotSpot prints a thread
 * dump. Nothing that is unsafe in a signal handler runs in it: the handler writes one byte to a
 * pipe (write(2) is async-signal-safe, POSIX.1-2008 2.4.3) and an internal dump thread, blocked
 * reading the pipe, writes the dump. Signals that arrive while a dump is pending coalesce into
 * it (the write end is non-blocking; a full pipe means a dump is already due).
 *
 * Chaining: the host may own SIGQUIT already. A JVM does: HotSpot's handler wakes its Signal
 * Dispatcher thread, which starts the attach listener that jcmd, jstack and the attach API
 * connect to (they create .attach_pid<pid>, then send SIGQUIT), or else prints HotSpot's own
 * thread dump. Replacing that handler broke all three. So the handler found at enable runs
 * after ours, on every signal, with the siginfo and context the kernel gave us, and the mask
 * it asked for (ours is installed with its sa_mask). Only a function is chained: SIG_IGN needs
 * nothing, and SIG_DFL (terminate with a core) is what enabling the dump replaces, as in a JVM.
 * A previous handler with SA_RESETHAND runs once, as it would have.
 *
 * A host may install its own handler after ours (saving ours, to chain to it). Disabling then
 * leaves the disposition alone: restoring the one found at enable over the host's handler
 * removed it (with SIG_DFL found at enable, the next SIGQUIT killed the process). Ours stays
 * under the host's (sq_in_chain), forwarding to what it found at enable, and a later enable
 * only turns the dump back on: installing ours again would chain it to the host's handler,
 * which chains to ours, a loop. The disposition is only ever restored while ours is installed.
 *
 * DESIGN: disabling must not let a late handler write into a closed (and possibly reused) file
 * descriptor. The handler counts itself in sq_in_handler before it loads the descriptor;
 * disable restores the old disposition, clears the descriptor, then waits for the count to
 * drain. With sequentially consistent atomics, a handler that enters after the drain check
 * loads the cleared descriptor. The chained handler is read the same way; a handler that
 * started before the restore may still call it, which is what it would have run anyway.
 *
 * fork: the dump thread does not exist in the child and the pipe is the parent's, shared with
 * it: a SIGQUIT to the child, or the child writing the pipe to stop its thread, made the parent
 * print a dump. So the child starts with the dump off: its handler gives back the disposition
 * found at enable, closes its copies of the pipe, and forgets the thread and the handlers that
 * were running in vanished threads (sq_in_handler). SIGQUIT is blocked in the forking thread
 * across fork, so that none runs the dump's handler in the child before that; the child may
 * enable the dump again.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "runtime/management/management_impl.h"

_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the handler needs lock-free atomics");

static pthread_mutex_t sq_lock = PTHREAD_MUTEX_INITIALIZER;
static bool sq_enabled;                 /* under sq_lock, like everything below but the atomics */
static int sq_read_fd = -1;
static int sq_write_fd_owned = -1;
static struct sigaction sq_previous;    /* restored at disable */
static vmt_thread_t *sq_thread;
static FILE *sq_out;
static _Atomic int sq_write_fd = -1;    /* what the handler writes to; -1 when disabled */
static _Atomic int sq_in_handler;
static _Atomic bool sq_stop;
/* The previous handler to chain to, NULL for none; what the handler reads (set before our
 * handler is installed, cleared after it is removed). */
static void (*_Atomic sq_chain_action)(int, siginfo_t *, void *);
static void (*_Atomic sq_chain_handler)(int);
static _Atomic bool sq_chain_once;
static sigset_t sq_fork_saved_mask;     /* the forking thread's, while SIGQUIT is blocked */
static bool sq_fork_masked;
/* Our handler is still reachable under a host's, installed over it, and still forwards to
 * sq_chain_*: the dump was disabled without restoring the disposition (the opening comment). */
static bool sq_in_chain;

static void sq_handler(int sig, siginfo_t *info, void *context) {
  int saved_errno = errno;
  atomic_fetch_add(&sq_in_handler, 1);
  int fd = atomic_load(&sq_write_fd);
  if (fd >= 0) {
    char c = 'q';
    ssize_t r = write(fd, &c, 1);
    (void)r; /* EAGAIN: a dump is already pending */
  }
  void (*action)(int, siginfo_t *, void *) = atomic_load(&sq_chain_action);
  void (*handler)(int) = atomic_load(&sq_chain_handler);
  if ((action || handler) && atomic_load(&sq_chain_once)) {
    /* SA_RESETHAND: its first signal is its last; only one racing handler may call it. */
    action = atomic_exchange(&sq_chain_action, NULL);
    handler = atomic_exchange(&sq_chain_handler, NULL);
  }
  errno = saved_errno; /* the chained handler sees the errno of the interrupted code */
  if (action)
    action(sig, info, context);
  else if (handler)
    handler(sig);
  atomic_fetch_sub(&sq_in_handler, 1);
  errno = saved_errno;
}

/* What the handler chains to, from the disposition it replaces. */
static void set_chain(const struct sigaction *previous) {
  bool info = (previous->sa_flags & SA_SIGINFO) != 0;
  bool function = info ? previous->sa_sigaction != NULL
                       : previous->sa_handler != SIG_DFL && previous->sa_handler != SIG_IGN;
  atomic_store(&sq_chain_once, (previous->sa_flags & SA_RESETHAND) != 0);
  atomic_store(&sq_chain_action, function && info ? previous->sa_sigaction : NULL);
  atomic_store(&sq_chain_handler, function && !info ? previous->sa_handler : NULL);
}

static void clear_chain(void) {
  atomic_store(&sq_chain_action, NULL);
  atomic_store(&sq_chain_handler, NULL);
}

/* True if SIGQUIT's disposition is a handler, ours or another (not SIG_DFL, SIG_IGN). */
static bool installed_is_a_function(void) {
  struct sigaction cur;
  if (sigaction(SIGQUIT, NULL, &cur) != 0) return true;   /* unknown: do not install over it */
  if (cur.sa_flags & SA_SIGINFO) return cur.sa_sigaction != NULL;
  return cur.sa_handler != SIG_DFL && cur.sa_handler != SIG_IGN;
}

/* Takes our handler out if it is the one installed: the disposition found at enable comes
 * back and nothing is chained any more. If a host's handler was installed over ours, it stays,
 * and ours goes on forwarding for it (sq_in_chain). 0 or -errno. Async-signal-safe (the fork
 * child calls it). */
static int uninstall(void) {
  struct sigaction cur;
  if (sigaction(SIGQUIT, NULL, &cur) != 0) return -errno;
  if (!(cur.sa_flags & SA_SIGINFO) || cur.sa_sigaction != sq_handler) {
    sq_in_chain = true;
    return 0;
  }
  sq_in_chain = false;
  int rc = sigaction(SIGQUIT, &sq_previous, NULL) == 0 ? 0 : -errno;
  clear_chain();
  return rc;
}

static void *sq_main(void *arg) {
  FILE *out = arg;
  char buf[64];
  for (;;) {
    ssize_t r = read(sq_read_fd, buf, sizeof(buf));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0 || atomic_load(&sq_stop)) break;
    /* Nothing to report a failure to: the dump goes where the user asked, or nowhere. */
    (void)vmt__mx_write_dump(out, NULL);
  }
  return NULL;
}

static int set_flags(int fd, int fd_flags, int fl_flags) {
  int fdf = fcntl(fd, F_GETFD), flf = fcntl(fd, F_GETFL);
  if (fdf < 0 || flf < 0 || fcntl(fd, F_SETFD, fdf | fd_flags) < 0 ||
      fcntl(fd, F_SETFL, flf | fl_flags) < 0)
    return -errno;
  return 0;
}

static void close_pipe(void) {
  close(sq_read_fd);
  close(sq_write_fd_owned);
  sq_read_fd = sq_write_fd_owned = -1;
}

/* Wakes the dump thread for the last time and waits for it. */
static void stop_thread(void) {
  atomic_store(&sq_stop, true);
  char c = 's';
  while (write(sq_write_fd_owned, &c, 1) < 0 && errno == EINTR) {
  }
  /* A full pipe also wakes it: the thread sees sq_stop after its next read. */
  vmt_thread_join(sq_thread, NULL);
  vmt_thread_release(sq_thread);
  sq_thread = NULL;
}

/* fork (the opening comment says why). */
static void sq_fork_prepare(void) {
  pthread_mutex_lock(&sq_lock);
  sq_fork_masked = false;
  if (!sq_enabled) return;
  sigset_t quit;
  sigemptyset(&quit);
  sigaddset(&quit, SIGQUIT);
  sq_fork_masked = pthread_sigmask(SIG_BLOCK, &quit, &sq_fork_saved_mask) == 0;
}

static void sq_fork_parent(void) {
  if (sq_fork_masked) pthread_sigmask(SIG_SETMASK, &sq_fork_saved_mask, NULL);
  pthread_mutex_unlock(&sq_lock);
}

static void sq_fork_child(void) {
  pthread_mutex_init(&sq_lock, NULL);
  if (sq_enabled) {
    (void)uninstall();
    atomic_store(&sq_write_fd, -1);
    close_pipe();
    sq_enabled = false;
  }
  /* The dump thread's record is a vanished thread's; its reference is left (no free here). */
  sq_thread = NULL;
  sq_out = NULL;
  atomic_store(&sq_in_handler, 0);
  atomic_store(&sq_stop, false);
  if (sq_fork_masked) pthread_sigmask(SIG_SETMASK, &sq_fork_saved_mask, NULL);
}
VMT__PROCESS_STATE(sigquit,
                   .symbols = "sq_lock sq_enabled sq_read_fd sq_write_fd_owned sq_previous "
                              "sq_thread sq_out sq_write_fd sq_in_handler sq_stop "
                              "sq_chain_action sq_chain_handler sq_chain_once "
                              "sq_fork_saved_mask sq_fork_masked sq_in_chain",
                   .rule = VMT__FORK_DROP,
                   .fork = "off in the child: the disposition found at enable is back (with "
                           "nothing to chain to) unless a host's handler was installed over "
                           "ours, the parent's pipe closed, the dump thread and the handlers "
                           "running in vanished threads forgotten; the child may enable it "
                           "again",
                   .rank = VMT__RANK_MANAGEMENT, .prepare = sq_fork_prepare,
                   .parent = sq_fork_parent, .child = sq_fork_child);

int vmt_mx_enable_sigquit_dump(FILE *out) {
  int cancel = vmt__mx_cancel_off();   /* close on the error paths is a cancellation point */
  pthread_mutex_lock(&sq_lock);
  int rc = 0;
  if (sq_enabled) {
    rc = -EALREADY;
    goto out;
  }
  int fds[2];
  if (pipe(fds) != 0) {
    rc = -errno;
    goto out;
  }
  sq_read_fd = fds[0];
  sq_write_fd_owned = fds[1];
  if ((rc = set_flags(fds[0], FD_CLOEXEC, 0)) || (rc = set_flags(fds[1], FD_CLOEXEC, O_NONBLOCK))) {
    close_pipe();
    goto out;
  }
  sq_out = out ? out : stderr;
  atomic_store(&sq_stop, false);
  rc = vmt__thread_start_internal(&sq_thread, "vmt-sigquit", sq_main, sq_out);
  if (rc) {
    sq_thread = NULL;
    close_pipe();
    goto out;
  }
  if (sq_in_chain && installed_is_a_function()) {
    /* Ours is still under the host's (or installed again) and forwards as before: only the
     * dump is back (installing it again would chain it to the host's handler, which chains to
     * ours). Once the host has put SIG_DFL or SIG_IGN back, nothing reaches ours: install it. */
    atomic_store(&sq_write_fd, sq_write_fd_owned);
    sq_enabled = true;
    goto out;
  }
  sq_in_chain = false;
  clear_chain();
  /* The handler must know what to chain to before it can run: read the disposition, then
   * install ours and look at what it replaced, in case the host changed it in between. */
  struct sigaction seen;
  if (sigaction(SIGQUIT, NULL, &seen) != 0) {
    rc = -errno;
    stop_thread();
    close_pipe();
    goto out;
  }
  set_chain(&seen);
  atomic_store(&sq_write_fd, sq_write_fd_owned);
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = sq_handler;
  sa.sa_mask = seen.sa_mask;  /* the chained handler runs with the mask it asked for */
  sa.sa_flags = SA_SIGINFO | SA_RESTART | (seen.sa_flags & SA_ONSTACK);
  if (sigaction(SIGQUIT, &sa, &sq_previous) != 0) {
    rc = -errno;
    atomic_store(&sq_write_fd, -1);
    clear_chain();
    stop_thread();
    close_pipe();
    goto out;
  }
  if (sq_previous.sa_handler != seen.sa_handler || sq_previous.sa_flags != seen.sa_flags)
    set_chain(&sq_previous);
  sq_enabled = true;
out:
  pthread_mutex_unlock(&sq_lock);
  vmt__mx_cancel_restore(cancel);
  return rc;
}

int vmt_mx_disable_sigquit_dump(void) {
  /* Stopping the dump thread writes the pipe, joins the thread and closes the pipe, three
   * cancellation points under sq_lock. */
  int cancel = vmt__mx_cancel_off();
  pthread_mutex_lock(&sq_lock);
  if (!sq_enabled) {
    pthread_mutex_unlock(&sq_lock);
    vmt__mx_cancel_restore(cancel);
    return 0;
  }
  int rc = uninstall();
  atomic_store(&sq_write_fd, -1);
  while (atomic_load(&sq_in_handler) != 0) sched_yield();
  stop_thread();
  close_pipe();
  sq_enabled = false;
  pthread_mutex_unlock(&sq_lock);
  vmt__mx_cancel_restore(cancel);
  return rc;
}
