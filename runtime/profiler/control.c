/*
 * runtime/profiler/control.c: profiling a running process from outside: `kill -<sig> <pid>`
 * starts the profiler, the next one stops it and writes the profile's three files. As the
 * SIGQUIT dump does (runtime/management/sigquit.c), the handler only writes a byte to a pipe
 * and an internal thread, blocked reading it, does the work; signals that arrive while one is
 * pending coalesce into it. Unlike the dump, the control signal is chosen by the host and is
 * one it does not use: a handler already there makes enable fail (-EBUSY), never chained.
 *
 * DESIGN (disable never lets a late handler write into a closed descriptor): the handler counts
 * itself in ctl_in_handler before it loads the descriptor; disable restores the disposition,
 * clears the descriptor, then waits for the count to drain (seq_cst throughout).
 *
 * A host may install its own handler over ours after enable (saving ours, perhaps to chain to
 * it). Disable then leaves the disposition alone, as the SIGQUIT dump's does: putting back the
 * one found at enable over the host's would take the host's away (SIG_DFL found there, and its
 * next signal kills the process). Ours, if the host still calls it, is inert (no descriptor),
 * and the signal is the host's: a later enable refuses it (-EBUSY) as any host handler.
 *
 * Fork: off in the child (its row below): the disposition found at enable is back (unless a
 * host's handler is over ours) and the parent's pipe closed; the child may enable it again.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/profiler/profiler_impl.h"

static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static bool ctl_enabled;               /* under ctl_lock, like the five below */
static int ctl_signo;
static int ctl_fds[2] = {-1, -1};
static struct sigaction ctl_previous;
static vmt_thread_t *ctl_thread;
static char *ctl_prefix;
static _Atomic int ctl_write_fd = -1;  /* what the handler writes to */
static _Atomic int ctl_in_handler;
static _Atomic bool ctl_stop;
static int ctl_runs;                   /* the control thread's */

static void close_pipe(void);
static int uninstall(void);

/* Fork: off in the child, as the SIGQUIT dump is (management/sigquit.c). No lock is held across
 * fork (session.c says why): the child undoes the control in whatever state it finds it; an
 * enable cut short leaves at most an inert handler (the descriptor it writes to is cleared),
 * which a later enable takes for its own. */
static void ctl_fork_child(void) {
  pthread_mutex_init(&ctl_lock, NULL);
  atomic_store(&ctl_write_fd, -1);
  if (ctl_enabled) {
    (void)uninstall();
    close_pipe();
    ctl_enabled = false;
  }
  /* The control thread's record is a vanished thread's; the prefix is freed by the child's
   * next enable (no free here). */
  ctl_thread = NULL;
  atomic_store(&ctl_in_handler, 0);
  atomic_store(&ctl_stop, false);
}
VMT__PROCESS_STATE(profiler_control,
                   .symbols = "ctl_lock ctl_enabled ctl_signo ctl_fds ctl_previous ctl_thread "
                              "ctl_prefix ctl_write_fd ctl_in_handler ctl_stop ctl_runs",
                   .rule = VMT__FORK_DROP,
                   .fork = "off in the child: the disposition found at enable is back (unless "
                           "a host's handler is over ours), the parent's pipe closed, the "
                           "control thread forgotten, the lock re-initialised; the child may "
                           "enable it again",
                   .rank = VMT__RANK_PROFILER + 20, .child = ctl_fork_child);

static void ctl_handler(int sig, siginfo_t *info, void *context) {
  (void)sig, (void)info, (void)context;
  int saved_errno = errno;
  atomic_fetch_add(&ctl_in_handler, 1);
  int fd = atomic_load(&ctl_write_fd);
  if (fd >= 0) {
    char c = 't';
    ssize_t r = write(fd, &c, 1);
    (void)r;   /* EAGAIN: a toggle is already pending */
  }
  atomic_fetch_sub(&ctl_in_handler, 1);
  errno = saved_errno;
}

static bool is_ours(const struct sigaction *sa) {
  return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == ctl_handler;
}

/* Puts back the disposition found at enable if ours is the one installed; a host's handler
 * installed over ours stays (the opening comment). Clears the descriptor the handler writes
 * to either way. 0 or -errno. Async-signal-safe (the fork child calls it). */
static int uninstall(void) {
  struct sigaction now;
  int rc = 0;
  if (sigaction(ctl_signo, NULL, &now) != 0)
    rc = -errno;
  else if (is_ours(&now) && sigaction(ctl_signo, &ctl_previous, NULL) != 0)
    rc = -errno;
  atomic_store(&ctl_write_fd, -1);
  return rc;
}

static void toggle(void) {
  if (!vmt_prof_is_running()) {
    (void)vmt_prof_start(NULL);
    return;
  }
  vmt_prof_stop();
  ctl_runs++;
  char prefix[4096];
  if (ctl_runs == 1)
    snprintf(prefix, sizeof(prefix), "%s", ctl_prefix);
  else
    snprintf(prefix, sizeof(prefix), "%s-%d", ctl_prefix, ctl_runs);
  /* Nothing to report a failure to: the files are written where the host asked, or not. */
  (void)vmt__prof_write_files(prefix);
}

static void *ctl_main(void *arg) {
  (void)arg;
  char buf[64];
  for (;;) {
    ssize_t r = read(ctl_fds[0], buf, sizeof(buf));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0 || atomic_load(&ctl_stop)) break;
    toggle();
  }
  return NULL;
}

static void close_pipe(void) {
  for (int i = 0; i < 2; i++) {
    if (ctl_fds[i] >= 0) close(ctl_fds[i]);
    ctl_fds[i] = -1;
  }
}

static void stop_thread(void) {
  atomic_store(&ctl_stop, true);
  char c = 's';
  while (write(ctl_fds[1], &c, 1) < 0 && errno == EINTR) {
  }
  vmt_thread_join(ctl_thread, NULL);
  vmt_thread_release(ctl_thread);
  ctl_thread = NULL;
}

int vmt_prof_enable_signal_control(int sig, const char *prefix) {
  if (!vmt__prof_signal_usable(sig)) return -EINVAL;
  pthread_mutex_lock(&vmt__prof.lock);
  bool sampling = vmt__prof.running && vmt__prof.cfg.signo == sig;
  pthread_mutex_unlock(&vmt__prof.lock);
  if (sampling || sig == vmt__prof_default_signal()) return -EINVAL;   /* a sampling signal */
  pthread_mutex_lock(&ctl_lock);
  int rc = 0;
  if (ctl_enabled) {
    rc = -EALREADY;
    goto out;
  }
  struct sigaction seen;
  if (sigaction(sig, NULL, &seen) != 0) {
    rc = -errno;
    goto out;
  }
  bool function = (seen.sa_flags & SA_SIGINFO) ? seen.sa_sigaction != NULL
                                               : seen.sa_handler != SIG_DFL &&
                                                     seen.sa_handler != SIG_IGN;
  /* Ours is no host's: one a fork left inert (ctl_fork_child). */
  if (function && !is_ours(&seen)) {
    rc = -EBUSY;
    goto out;
  }
  char def[64];
  snprintf(def, sizeof(def), "vmthread-profile-%d", (int)getpid());
  free(ctl_prefix);   /* a fork parent's, left by the child handler */
  ctl_prefix = strdup(prefix ? prefix : def);
  if (ctl_prefix == NULL) {
    rc = -ENOMEM;
    goto out;
  }
  if (pipe2(ctl_fds, O_CLOEXEC) != 0 || fcntl(ctl_fds[1], F_SETFL, O_NONBLOCK) != 0) {
    rc = -errno;
    close_pipe();
    goto fail_prefix;
  }
  atomic_store(&ctl_stop, false);
  ctl_runs = 0;
  rc = vmt__thread_start_internal(&ctl_thread, "vmt-prof-control", ctl_main, NULL);
  if (rc) {
    ctl_thread = NULL;
    close_pipe();
    goto fail_prefix;
  }
  atomic_store(&ctl_write_fd, ctl_fds[1]);
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = ctl_handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  struct sigaction replaced;
  if (sigaction(sig, &sa, &replaced) != 0) {
    rc = -errno;
    atomic_store(&ctl_write_fd, -1);
    stop_thread();
    close_pipe();
    goto fail_prefix;
  }
  /* Ours replaced an inert one of ours (a fork's, or one a host put back): what that one
   * replaced is still the one to put back, never ours. */
  if (!is_ours(&replaced)) ctl_previous = replaced;
  ctl_signo = sig;
  ctl_enabled = true;
  goto out;
fail_prefix:
  free(ctl_prefix);
  ctl_prefix = NULL;
out:
  pthread_mutex_unlock(&ctl_lock);
  return rc;
}

int vmt_prof_disable_signal_control(void) {
  pthread_mutex_lock(&ctl_lock);
  if (!ctl_enabled) {
    pthread_mutex_unlock(&ctl_lock);
    return 0;
  }
  int rc = uninstall();
  while (atomic_load(&ctl_in_handler) != 0) sched_yield();
  stop_thread();
  close_pipe();
  free(ctl_prefix);
  ctl_prefix = NULL;
  ctl_enabled = false;
  pthread_mutex_unlock(&ctl_lock);
  return rc;
}
