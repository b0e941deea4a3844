/*
 * runtime/profiler/profiler_impl.h: what the files of the profiler share: the per-thread
 * sample buffer (a slot), the session, the profile the drainer aggregates into, and the
 * output helpers. Hidden; nothing outside runtime/profiler/ includes it, except tests of
 * internals.
 *
 * DESIGN (who touches what, and when it may be freed).
 * - A slot belongs to one armed thread. Its producer is the signal handler on that thread
 *   (head, the words, the lost counters); its consumer is the drainer, or the stopping thread
 *   once the drainer has ended (tail). One producer, one consumer: the ring needs no lock.
 * - The handler finds its slot through its own record (vmt__current->prof.slot), counted in
 *   vmt__prof_in_handler while it holds it. Whoever disarms a thread clears the pointer first.
 *   A thread that ends disarms itself (arm.c): no handler can then be inside its slot (a
 *   handler runs on the thread), so the slot goes straight to the drainer's retired list.
 *   The stopping thread disarms other threads: it frees their slots only after
 *   vmt__prof_in_handler has drained to zero (session.c).
 * - A slot with new samples is pushed, once, on the ready list (a lock-free stack the handler
 *   pushes to and the drainer empties whole, so it has no ABA problem).
 * - The profile (aggregate.c) is written by the drainer under profile->lock and read under it
 *   by the outputs; it lives from a start to the next start or clear, under vmt__prof.lock.
 */
#ifndef VMT_RUNTIME_PROFILER_PROFILER_IMPL_H
#define VMT_RUNTIME_PROFILER_PROFILER_IMPL_H

#if !defined(VMT_IN_PROFILER) && !defined(VMT_TEST_OF_INTERNALS)
#error "this header is private to runtime/profiler/ (runtime/profiler/BUILD.bazel)"
#endif

#include <pthread.h>
#include <signal.h>
#include <stdio.h>

#include "vmthread/profiler.h"
#include "runtime/process.h"
#include "runtime/thread/thread.h"
#include "runtime/vmservices/vmservices.h"

/* Arming states of a record (struct vmt__thread_prof, registry.h). */
enum { VMT__PROF_IDLE = 0, VMT__PROF_BUSY, VMT__PROF_ARMED };

/* What a sample's frames are: native program counters (the first one interrupted, the others
 * return addresses), the VM walker's values, or padding up to the ring's end. */
enum { VMT__PROF_KIND_NATIVE = 1, VMT__PROF_KIND_VM = 2, VMT__PROF_KIND_PAD = 3 };

/* A sample in a ring: one header word (weight, frame count, kind), then its frames. */
static inline uint64_t vmt__prof_header(uint32_t weight, uint32_t frames, uint32_t kind) {
  return (uint64_t)weight << 32 | (uint64_t)(frames & 0xffffu) << 8 | (kind & 0xffu);
}
static inline uint32_t vmt__prof_header_weight(uint64_t h) { return (uint32_t)(h >> 32); }
static inline uint32_t vmt__prof_header_frames(uint64_t h) { return (uint32_t)(h >> 8) & 0xffffu; }
static inline uint32_t vmt__prof_header_kind(uint64_t h) { return (uint32_t)h & 0xffu; }

struct vmt__prof_thread;

typedef struct vmt__prof_slot {
  /* The producer's (the handler on the thread). */
  _Atomic uint64_t head;                            /* words written (release) */
  _Atomic int64_t lost[VMT_PROF_LOST_COUNT];
  _Atomic int64_t lost_weight[VMT_PROF_LOST_COUNT];
  _Atomic int64_t handler_ns;                       /* time its handlers took (monotonic) */
  /* Cooperative mode: weight the handler left for the thread's next poll, and whether the
   * thread is writing a sample of its own at a poll (a handler then leaves its weight too). */
  _Atomic int64_t coop_weight;
  _Atomic uint32_t coop_writing;
  struct vmt__prof_slot *ready_next;                /* written before the push */
  /* The consumer's. */
  _Atomic uint64_t tail;                            /* words consumed (release) */
  _Atomic uint32_t queued;                          /* on the ready list */
  struct vmt__prof_thread *entry;                   /* the profile's thread (drainer) */
  int64_t drained_weight;                           /* weights drained from this slot */
  int64_t handler_ns_seen;                          /* handler time already in the profile */
  int64_t lost_seen[VMT_PROF_LOST_COUNT];           /* lost counts already in the profile */
  int64_t lost_weight_seen[VMT_PROF_LOST_COUNT];
  /* Fixed when armed; the disarmer writes the end. */
  int64_t thread_id;
  char *thread_name;                                /* owned until the profile takes it */
  const char *category;                             /* interned for the process */
  vmt_os_cpu_timer_t timer;
  uintptr_t stack_lo, stack_hi;                     /* the thread's stack; 0, 0 if unknown */
  int64_t cpu_at_arm_ns;                            /* -1 if unknown */
  int64_t cpu_at_disarm_ns;
  bool ended;                                       /* disarmed by its thread's end */
  struct vmt__prof_slot *list_next;                 /* retired / disarmed lists */
  uint64_t mask;                                    /* words - 1 (a power of two) */
  /* The ring, allocated apart from the header: a start arms thousands of threads, whose
   * headers share pages while their rings stay untouched (unmapped) until a first sample. */
  uint64_t *words;
} vmt__prof_slot_t;

/* What the handler reads of a session: set before any timer exists, immutable while it runs. */
typedef struct vmt__prof_config {
  int64_t period_ns;
  int32_t max_depth;
  uint32_t buffer_words;
  int signo;
  vmt_prof_mode_t mode;
  vmt_prof_walker_fn walker;
  vmt_prof_symbolizer_fn symbolizer;
  void *walker_ctx;
} vmt__prof_config_t;

typedef struct vmt__prof_profile vmt__prof_profile_t;

/* The process's profiler (session.c). `lock` serialises start, stop, clear, set_walker and the
 * outputs; the atomics are what the handler, the drainer and the life-cycle hooks share. */
typedef struct vmt__prof_state {
  pthread_mutex_t lock;
  bool running;
  vmt__prof_config_t cfg;
  /* What the next start takes: the VM's walker, written to the unpublished one of two entries
   * and published by index, so that a fork child always finds a whole one. */
  struct vmt__prof_walker {
    vmt_prof_walker_fn walker;
    vmt_prof_symbolizer_fn symbolizer;
    void *ctx;
  } walkers[2];
  _Atomic int walker_index;
  vmt__prof_profile_t *profile;                /* the running or last profile, or NULL */
  vmt__prof_profile_t *inherited;              /* a fork parent's, in the child: never freed */
  _Atomic(vmt__prof_slot_t *) ready;           /* slots with new samples */
  _Atomic(vmt__prof_slot_t *) retired;         /* slots of threads that ended */
  _Atomic uint32_t retired_count;              /* pushed since the drainer took the list */
  /* Slots of threads another thread excluded while the profile ran (under lock): a handler on
   * such a thread, on the other CPU, may still hold one, so they are freed by the stop, after
   * the handlers drained, as the stop's own disarmed slots are. */
  vmt__prof_slot_t *excluded_slots;
  _Atomic uint32_t wake;                       /* the drainer's futex word */
  _Atomic bool stopping;
  _Atomic bool rescan;                         /* the drainer arms what the start missed */
  _Atomic uint32_t helping;                    /* 1: the drainer arms from the end (futex) */
  _Atomic uint32_t drainer_active;             /* 1 during a profile; 0: parked (futex) */
  vmt_thread_t *drainer;
  _Atomic int64_t threads_ever;
  _Atomic int64_t arm_failures;                /* threads, each once per session */
  _Atomic uint32_t session;                    /* sessions started; never reset */
  _Atomic int32_t threads_armed;
  _Atomic int64_t lost_unattributed[VMT_PROF_LOST_COUNT];  /* no slot to count them in */
  _Atomic int64_t lost_unattributed_weight[VMT_PROF_LOST_COUNT];
  int32_t threads_at_start;
  int32_t threads_helped;                      /* of those, armed by the drainer */
  int64_t start_arm_ns;
} vmt__prof_state_t;

extern vmt__prof_state_t vmt__prof;
/* What the handler uses: the running session's configuration, or NULL. */
extern _Atomic(const vmt__prof_config_t *) vmt__prof_handler_cfg;
/* Handlers between their first and last access to a slot (session.c drains it at stop). */
extern _Atomic int32_t vmt__prof_in_handler;

/* SIGRTMIN + 6 (handler.c says why). */
int vmt__prof_default_signal(void);

/* ---- Arming (arm.c) --------------------------------------------------------------------- */
/* Arms t if it is a live, idle, non-internal thread and the session still arms: 1 if this
 * call armed it, VMT__PROF_ARM_CLAIMED if another party held t's claim or had armed it (t's
 * state was not IDLE), 0 if there was nothing to do, or the -errno of the buffer or the
 * timer (counted in arm_failures). */
#define VMT__PROF_ARM_CLAIMED 2
int vmt__prof_arm(vmt_thread_t *t);
/* Disarms t if armed (waiting while another thread is arming or disarming it). self: t is
 * the calling thread; ending: t is ending (its end hook). The slot goes to *disarmed (stop) or,
 * when disarmed is NULL, to the retired list. */
void vmt__prof_disarm(vmt_thread_t *t, bool self, bool ending, vmt__prof_slot_t **disarmed);
/* Arms every live thread of the registry, from its first or its last; returns how many this
 * call armed (two callers from both ends share the work: arm.c's claim makes each thread
 * one's). */
int32_t vmt__prof_arm_all(bool from_the_end);
void vmt__prof_slot_free(vmt__prof_slot_t *slot);
/* The life-cycle hooks (installed in registry.h's pointers). */
void vmt__prof_thread_begin_hook(vmt_thread_t *t);
void vmt__prof_thread_end_hook(vmt_thread_t *t);

/* ---- Signal handler (handler.c) --------------------------------------------------------- */
/* The cooperative mode's sample, taken by the thread at a poll (installed as
 * vmt__prof_poll_hook). */
void vmt__prof_coop_poll(vmt_thread_t *t);
/* Installs the handler on signo unless the host has one there (-EBUSY); idempotent. */
int vmt__prof_handler_install(int signo);
/* Discards pending signals of signo and restores the disposition found at install. */
void vmt__prof_handler_uninstall(void);
/* Is signo one the profiler (or its control) may take? */
bool vmt__prof_signal_usable(int signo);
/* Wakes the drainer (futex; async-signal-safe). */
void vmt__prof_wake_drainer(void);

/* ---- Drainer (drainer.c) ---------------------------------------------------------------- */
/* Every this many slots on the retired list, the pusher wakes the drainer (arm.c), which
 * otherwise sleeps up to a second: what ended threads' rings hold waiting is bounded (4 MiB of
 * default rings), and a storm of short threads wakes it no more often than the 100 ms sleep it
 * had did (11,000 ended threads in a 4 s profile: 43 wake-ups). */
#define VMT__PROF_RETIRED_WAKE 256
/* Starts the drainer (the first time) or wakes it for a new profile. 0 or -errno. */
int vmt__prof_drainer_start(void);
/* Parks the drainer, then drains what is left: `disarmed` slots (freed), the ready and retired
 * lists. Called with no handler able to reach any slot. */
void vmt__prof_drainer_stop(vmt__prof_slot_t *disarmed);
/* Drains the ready list now (the outputs of a running profile). */
void vmt__prof_drain_now(void);

/* ---- The profile (aggregate.c) ---------------------------------------------------------- */
typedef struct vmt__prof_thread {
  int64_t id;
  char *name;
  const char *category;
  int64_t samples, weight;
  int64_t lost[VMT_PROF_LOST_COUNT];
  int64_t lost_weight[VMT_PROF_LOST_COUNT];
  int64_t cpu_ns;          /* its CPU time while armed, over the armings that ended */
  bool cpu_unknown;        /* a clock read failed: cpu_ns is not the whole */
  int64_t unsignalled;     /* expirations no signal told of before the timer went */
  bool ended;
  uint32_t armings;        /* a thread armed again after a stop is the same entry */
  struct vmt__prof_thread *next;   /* in arming order */
} vmt__prof_thread_t;

typedef struct vmt__prof_stack {
  vmt__prof_thread_t *thread;
  uint64_t hash;
  int64_t samples, weight;
  uint32_t kind;
  uint32_t frame_count;
  uintptr_t frames[];      /* innermost first, as sampled */
} vmt__prof_stack_t;

struct vmt__prof_profile {
  pthread_mutex_t lock;
  vmt__prof_config_t cfg;
  const char *unwinder;
  vmt__prof_thread_t *threads, **threads_tail;
  vmt__prof_thread_t **thread_table;   /* open addressing by id */
  size_t thread_count, thread_cap;
  vmt__prof_stack_t **stack_table;     /* open addressing by hash */
  size_t stack_count, stack_cap;
  int64_t samples, weight;
  int64_t lost[VMT_PROF_LOST_COUNT];
  int64_t lost_weight[VMT_PROF_LOST_COUNT];
  int64_t unsignalled;                 /* the threads' unsignalled expirations, summed */
  int64_t handler_ns;                  /* time the handlers took, summed */
  int64_t drainer_cpu_ns;              /* the drainer thread's CPU time, once it ended */
  bool oom;                            /* a merge found no memory: samples were dropped */
  struct vmt__prof_names *names;       /* symbols.c's cache, built by the first output */
};

vmt__prof_profile_t *vmt__prof_profile_new(const vmt__prof_config_t *cfg);
void vmt__prof_profile_free(vmt__prof_profile_t *p);
/* Under p->lock: the profile's entry of a slot's thread (created on first use), NULL on
 * -ENOMEM. */
vmt__prof_thread_t *vmt__prof_profile_thread(vmt__prof_profile_t *p, vmt__prof_slot_t *slot);
vmt__prof_thread_t *vmt__prof_profile_find_thread(vmt__prof_profile_t *p, int64_t id);
/* Under p->lock: adds one sample. */
void vmt__prof_profile_add(vmt__prof_profile_t *p, vmt__prof_thread_t *th, uint32_t kind,
                           const uintptr_t *frames, uint32_t n, uint32_t weight);

/* ---- Names of frames (symbols.c) -------------------------------------------------------- */
/* Under p->lock: the name of frame i of stack s ("function" or, with lines, "function
 * (file:line)"); never NULL (an unknown frame is named by its module and offset, or its
 * address). Valid until the profile is freed. NULL only on -ENOMEM. */
const char *vmt__prof_frame_name(vmt__prof_profile_t *p, const vmt__prof_stack_t *s, uint32_t i,
                                 bool lines);
void vmt__prof_names_free(struct vmt__prof_names *names);

/* ---- Output (collapsed.c, flamegraph.c, table.c) ---------------------------------------- */
/* Takes vmt__prof.lock and the profile's lock, draining first: -ENOENT if there is no profile.
 * vmt__prof_output_end releases both. */
int vmt__prof_output_begin(vmt__prof_profile_t **p);
void vmt__prof_output_end(vmt__prof_profile_t *p);
/* The root frames an output flag asks for, then the frames root first: calls fn once per
 * frame of each stack, innermost last; returns -ENOMEM or fn's first non-zero answer. */
typedef int (*vmt__prof_frame_fn)(void *arg, const char *frame, size_t depth);
int vmt__prof_stack_frames(vmt__prof_profile_t *p, const vmt__prof_stack_t *s, uint32_t flags,
                           vmt__prof_frame_fn fn, void *arg, size_t *depth);
/* The value of a stack in an output (weight, or ns with VMT_PROF_OUT_NS). */
int64_t vmt__prof_stack_value(const vmt__prof_profile_t *p, const vmt__prof_stack_t *s,
                              uint32_t flags);
/* The profile as merged collapsed lines ("root;...;leaf" and its value), sorted by text. */
typedef struct vmt__prof_line {
  char *text;
  int64_t value;
} vmt__prof_line_t;
int vmt__prof_lines(vmt__prof_profile_t *p, uint32_t flags, vmt__prof_line_t **out,
                    size_t *count);
void vmt__prof_lines_free(vmt__prof_line_t *lines, size_t n);
#define VMT__PROF_OUT_ALL \
  (VMT_PROF_OUT_THREADS | VMT_PROF_OUT_CATEGORIES | VMT_PROF_OUT_LINES | VMT_PROF_OUT_NS)
/* Writes `prefix`.collapsed, .svg and .txt (control.c, and the JMX bridge through the API). */
int vmt__prof_write_files(const char *prefix);

#endif /* VMT_RUNTIME_PROFILER_PROFILER_IMPL_H */
