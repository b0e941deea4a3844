/*
 * jvm/test/native/vmthread_jni_test.c: the "language runtime" of the JVM tests. It stands for
 * a native library that runs vmthread threads inside a Java process: it starts groups of
 * threads that burn some CPU and then wait on a monitor, a contention pair (one thread owning
 * two monitors, one blocked entering one of them), a stack walker that gives them guest frames
 * and says which frame entered which monitor, the SIGQUIT dump, and it reads the C API directly
 * so that the tests can compare what JMX shows with what the C side reports.
 *
 * It links libvmthread.so.0 like the bridge does, so both see the same runtime.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jni.h>

#include <vmthread.h>

#include "io_vmthread_test_TestNatives.h"

#define NATIVE(ret, name) JNIEXPORT ret JNICALL Java_io_vmthread_test_TestNatives_##name

static void throw_state(JNIEnv *env, const char *what, int rc) {
  char msg[256];
  snprintf(msg, sizeof msg, "%s: %s", what, strerror(rc < 0 ? -rc : rc));
  jclass c = (*env)->FindClass(env, "java/lang/IllegalStateException");
  if (c != NULL) (*env)->ThrowNew(env, c, msg);
}

/* ---- Thread groups ------------------------------------------------------------------------ */

typedef enum role { ROLE_WORKER, ROLE_OWNER, ROLE_BLOCKED } role_t;

typedef struct group {
  vmt_monitor_t *gate;       /* workers and the owner wait here until released */
  vmt_monitor_t *contended;  /* contention pair: held by the owner, entered at its frame 1 */
  vmt_monitor_t *inner;      /* contention pair: held by the owner, no frame reports it */
  int ready;                 /* guarded by gate */
  int released;              /* guarded by gate */
  int64_t burn_ns;
  size_t alloc_bytes;
  size_t count;
  vmt_thread_t *threads[];
} group_t;

typedef struct member {
  group_t *group;
  role_t role;
} member_t;

static void burn_cpu(int64_t ns) {
  int64_t start = vmt_current_thread_cpu_time(VMT_CPU_TOTAL);
  volatile uint64_t sink = 0;
  while (vmt_current_thread_cpu_time(VMT_CPU_TOTAL) - start < ns)
    for (int i = 0; i < 10000; i++) sink += (uint64_t)i * 2654435761u;
}

/* Allocates (and frees) bytes in 64 KiB blocks, each written so the allocation cannot be
 * elided; the per-thread allocated-bytes counter counts them all. */
static void allocate(size_t bytes) {
  static char *volatile sink;
  for (size_t done = 0; done < bytes; done += 65536) {
    char *p = malloc(65536);
    if (p == NULL) return;
    p[0] = p[65535] = 1;
    sink = p;
    free(sink);
  }
}

static void wait_at_gate(group_t *g) {
  vmt_monitor_enter(g->gate);
  g->ready++;
  vmt_monitor_notify_all(g->gate);
  while (!g->released) vmt_monitor_wait(g->gate, 0);
  vmt_monitor_exit(g->gate);
}

static void *member_main(void *arg) {
  member_t m = *(member_t *)arg;
  free(arg);
  group_t *g = m.group;
  switch (m.role) {
    case ROLE_WORKER:
      burn_cpu(g->burn_ns);
      allocate(g->alloc_bytes);
      wait_at_gate(g);
      break;
    case ROLE_OWNER:
      vmt_monitor_enter(g->contended);
      vmt_monitor_enter(g->inner);
      wait_at_gate(g);
      vmt_monitor_exit(g->inner);
      vmt_monitor_exit(g->contended);
      break;
    case ROLE_BLOCKED:
      vmt_monitor_enter(g->contended);  /* blocks until the owner is released */
      vmt_monitor_exit(g->contended);
      break;
  }
  return NULL;
}

/* Releases the gate and joins everyone started so far; frees the group. */
static int group_stop(group_t *g) {
  vmt_monitor_enter(g->gate);
  g->released = 1;
  vmt_monitor_notify_all(g->gate);
  vmt_monitor_exit(g->gate);
  int joined = 0;
  for (size_t i = 0; i < g->count; i++) {
    if (g->threads[i] == NULL) continue;
    if (vmt_thread_join(g->threads[i], NULL) == 0) joined++;
    vmt_thread_release(g->threads[i]);
  }
  vmt_monitor_destroy(g->gate);
  if (g->contended) vmt_monitor_destroy(g->contended);
  if (g->inner) vmt_monitor_destroy(g->inner);
  free(g);
  return joined;
}

static int group_start_one(group_t *g, size_t i, role_t role, const char *name,
                           const char *category, bool daemon) {
  member_t *m = malloc(sizeof *m);
  if (m == NULL) return -ENOMEM;
  m->group = g;
  m->role = role;
  vmt_thread_options_t opts = {
      .flags = VMT_THREAD_OPT_NAME | VMT_THREAD_OPT_CATEGORY | VMT_THREAD_OPT_DAEMON,
      .name = name,
      .category = category,
      .daemon = daemon,
  };
  int rc = vmt_thread_start_ex(&g->threads[i], &opts, member_main, m);
  if (rc < 0) free(m);
  return rc;
}

static void group_await_ready(group_t *g, int n) {
  vmt_monitor_enter(g->gate);
  while (g->ready < n) vmt_monitor_wait(g->gate, 0);
  vmt_monitor_exit(g->gate);
}

static group_t *group_new(JNIEnv *env, size_t count, bool contention) {
  group_t *g = calloc(1, sizeof *g + count * sizeof(vmt_thread_t *));
  if (g == NULL) {
    throw_state(env, "calloc", ENOMEM);
    return NULL;
  }
  g->count = count;
  int rc = vmt_monitor_create(&g->gate, "jvm-test-gate");
  if (rc == 0 && contention) rc = vmt_monitor_create(&g->contended, "jvm-test-contended");
  if (rc == 0 && contention) rc = vmt_monitor_create(&g->inner, "jvm-test-inner");
  if (rc < 0) {
    if (g->gate) vmt_monitor_destroy(g->gate);
    if (g->contended) vmt_monitor_destroy(g->contended);
    free(g);
    throw_state(env, "vmt_monitor_create", rc);
    return NULL;
  }
  return g;
}

NATIVE(jlong, startWorkers)(JNIEnv *env, jclass cls, jint n, jstring jcategory, jboolean daemon,
                            jlong burn_ns, jlong alloc_bytes) {
  (void)cls;
  if (n <= 0 || jcategory == NULL || burn_ns < 0 || alloc_bytes < 0) {
    throw_state(env, "startWorkers: bad arguments", EINVAL);
    return 0;
  }
  const char *category = (*env)->GetStringUTFChars(env, jcategory, NULL);
  if (category == NULL) return 0;
  group_t *g = group_new(env, (size_t)n, false);
  if (g == NULL) {
    (*env)->ReleaseStringUTFChars(env, jcategory, category);
    return 0;
  }
  g->burn_ns = burn_ns;
  g->alloc_bytes = (size_t)alloc_bytes;
  int rc = 0;
  for (jint i = 0; i < n && rc == 0; i++) {
    char name[96];
    snprintf(name, sizeof name, "%s-worker-%d", category, (int)i);
    rc = group_start_one(g, (size_t)i, ROLE_WORKER, name, category, daemon);
  }
  (*env)->ReleaseStringUTFChars(env, jcategory, category);
  if (rc < 0) {
    group_stop(g);
    throw_state(env, "vmt_thread_start_ex", rc);
    return 0;
  }
  group_await_ready(g, n);
  return (jlong)(intptr_t)g;
}

/* The contention pair the walker describes (one at a time). */
static _Atomic(vmt_monitor_t *) walked_contended;

/* Thread 0 owns monitors "jvm-test-contended" and "jvm-test-inner" and waits at the gate;
 * thread 1 is blocked entering the first (or about to be: the test polls for BLOCKED). */
NATIVE(jlong, startContention)(JNIEnv *env, jclass cls) {
  (void)cls;
  group_t *g = group_new(env, 2, true);
  if (g == NULL) return 0;
  atomic_store(&walked_contended, g->contended);
  int rc = group_start_one(g, 0, ROLE_OWNER, "jvm-test-owner", "app", false);
  if (rc == 0) {
    group_await_ready(g, 1);  /* the owner holds the monitor now */
    rc = group_start_one(g, 1, ROLE_BLOCKED, "jvm-test-blocked", "app", false);
  }
  if (rc < 0) {
    group_stop(g);
    throw_state(env, "vmt_thread_start_ex", rc);
    return 0;
  }
  return (jlong)(intptr_t)g;
}

NATIVE(jlongArray, workerIds)(JNIEnv *env, jclass cls, jlong handle) {
  (void)cls;
  group_t *g = (group_t *)(intptr_t)handle;
  jlongArray out = (*env)->NewLongArray(env, (jsize)g->count);
  for (size_t i = 0; out != NULL && i < g->count; i++) {
    jlong id = vmt_thread_id(g->threads[i]);
    (*env)->SetLongArrayRegion(env, out, (jsize)i, 1, &id);
  }
  return out;
}

/* The C clock API's view of member i, independent of the management path. */
NATIVE(jlong, workerCpuTime)(JNIEnv *env, jclass cls, jlong handle, jint i) {
  (void)env, (void)cls;
  group_t *g = (group_t *)(intptr_t)handle;
  return vmt_thread_cpu_time(g->threads[i], VMT_CPU_TOTAL);
}

NATIVE(jint, stopWorkers)(JNIEnv *env, jclass cls, jlong handle) {
  (void)env, (void)cls;
  group_t *g = (group_t *)(intptr_t)handle;
  vmt_monitor_t *mine = g->contended;
  atomic_compare_exchange_strong(&walked_contended, &mine, NULL);
  return group_stop(g);
}

/* ---- The C side's own answers ---------------------------------------------------------- */

NATIVE(jint, threadCount)(JNIEnv *env, jclass cls) {
  (void)env, (void)cls;
  return vmt_mx_get_thread_count();
}

NATIVE(jint, peakThreadCount)(JNIEnv *env, jclass cls) {
  (void)env, (void)cls;
  return vmt_mx_get_peak_thread_count();
}

NATIVE(jint, daemonThreadCount)(JNIEnv *env, jclass cls) {
  (void)env, (void)cls;
  return vmt_mx_get_daemon_thread_count();
}

NATIVE(jlong, totalStartedThreadCount)(JNIEnv *env, jclass cls) {
  (void)env, (void)cls;
  return vmt_mx_get_total_started_thread_count();
}

NATIVE(jlongArray, allThreadIds)(JNIEnv *env, jclass cls) {
  (void)cls;
  int64_t *ids = NULL;
  size_t n = 0;
  int rc = vmt_mx_get_all_thread_ids(&ids, &n);
  if (rc < 0) {
    throw_state(env, "vmt_mx_get_all_thread_ids", rc);
    return NULL;
  }
  jlongArray out = (*env)->NewLongArray(env, (jsize)n);
  if (out != NULL && n > 0) (*env)->SetLongArrayRegion(env, out, 0, (jsize)n, (jlong *)ids);
  vmt_mx_ids_free(ids);
  return out;
}

NATIVE(jstring, version)(JNIEnv *env, jclass cls) {
  (void)cls;
  return (*env)->NewStringUTF(env, vmt_version());
}

/* ---- Attaching the calling Java thread -------------------------------------------------- */

NATIVE(jlong, attachCurrent)(JNIEnv *env, jclass cls, jstring jname) {
  (void)cls;
  const char *name = (*env)->GetStringUTFChars(env, jname, NULL);
  if (name == NULL) return 0;
  vmt_thread_options_t opts = {
      .flags = VMT_THREAD_OPT_NAME | VMT_THREAD_OPT_CATEGORY,
      .name = name,
      .category = "java",
  };
  vmt_thread_t *self = NULL;
  int rc = vmt_thread_attach(&opts, &self);
  (*env)->ReleaseStringUTFChars(env, jname, name);
  if (rc < 0) {
    throw_state(env, "vmt_thread_attach", rc);
    return 0;
  }
  return vmt_thread_id(self);
}

NATIVE(void, detachCurrent)(JNIEnv *env, jclass cls) {
  (void)cls;
  int rc = vmt_thread_detach();
  if (rc < 0) throw_state(env, "vmt_thread_detach", rc);
}

/* ---- A VM's stack walker ------------------------------------------------------------------ */

/* Guest frames: threads of category "interp" run two frames of a guest language; the
 * contention pair's owner holds "jvm-test-contended" from its frame 1 (which the walker says)
 * and "jvm-test-inner" (which it does not, so the runtime puts it at frame 0); the blocked
 * thread has one frame; threads of category "noline" a guest frame without a line over a native
 * one. */
static int guest_walker(vmt_thread_t *t, vmt_stack_frame_t *frames, int32_t max, void *ctx) {
  (void)ctx;
  static const vmt_stack_frame_t interp[] = {
      {.function = "demo.Interpreter.run", .file = "Interpreter.vm", .line = 42, .pc = 0},
      {.function = "demo.Main.main", .file = "Main.vm", .line = 7, .pc = 0},
  };
  static const vmt_stack_frame_t owner[] = {
      {.function = "demo.Owner.hold", .file = "Owner.vm", .line = 12, .pc = 0},
      {.function = "demo.Main.main", .file = "Main.vm", .line = 7, .pc = 0},
  };
  static const vmt_stack_frame_t blocked[] = {
      {.function = "demo.Blocked.enter", .file = "Blocked.vm", .line = 3, .pc = 0},
  };
  /* Category "noline": a guest method without line information over a native helper. */
  static const vmt_stack_frame_t noline[] = {
      {.function = "demo.Interpreter.loop", .file = "Interpreter.vm", .line = -1, .pc = 0},
      {.function = "vm_native_helper", .file = NULL, .line = -1, .pc = 0},
  };
  const vmt_stack_frame_t *guest = NULL;
  int32_t depth = 0;
  if (strcmp(vmt_thread_category(t), "interp") == 0) {
    guest = interp, depth = 2;
  } else if (strcmp(vmt_thread_category(t), "noline") == 0) {
    guest = noline, depth = 2;
  } else if (strcmp(vmt_thread_name(t), "jvm-test-owner") == 0) {
    guest = owner, depth = 2;
  } else if (strcmp(vmt_thread_name(t), "jvm-test-blocked") == 0) {
    guest = blocked, depth = 1;
  }
  int32_t n = max < depth ? max : depth;
  for (int32_t i = 0; i < n; i++) frames[i] = guest[i];
  vmt_monitor_t *contended = atomic_load(&walked_contended);
  if (guest == owner && n == 2 && contended != NULL) vmt_mx_frame_holds_monitor(1, contended);
  return n;
}

NATIVE(void, setStackWalker)(JNIEnv *env, jclass cls, jboolean on) {
  (void)env, (void)cls;
  vmt_mx_set_stack_walker(on ? guest_walker : NULL, NULL);
}

/* ---- The SIGQUIT dump, as a VM would enable it ------------------------------------------ */

static FILE *sigquit_out;

NATIVE(void, enableSigquitDump)(JNIEnv *env, jclass cls, jstring jpath) {
  (void)cls;
  const char *path = (*env)->GetStringUTFChars(env, jpath, NULL);
  if (path == NULL) return;
  FILE *f = fopen(path, "w");
  (*env)->ReleaseStringUTFChars(env, jpath, path);
  if (f == NULL) {
    throw_state(env, "fopen", errno);
    return;
  }
  setvbuf(f, NULL, _IOLBF, 0);  /* each line reaches the file as it is written */
  int rc = vmt_mx_enable_sigquit_dump(f);
  if (rc < 0) {
    fclose(f);
    throw_state(env, "vmt_mx_enable_sigquit_dump", rc);
    return;
  }
  sigquit_out = f;
}

NATIVE(void, disableSigquitDump)(JNIEnv *env, jclass cls) {
  (void)cls;
  int rc = vmt_mx_disable_sigquit_dump();
  if (sigquit_out != NULL) fclose(sigquit_out);
  sigquit_out = NULL;
  if (rc < 0) throw_state(env, "vmt_mx_disable_sigquit_dump", rc);
}

/* The text dump from C (this library shares libvmthread.so.0 with the bridge). */
NATIVE(jstring, threadDump)(JNIEnv *env, jclass cls) {
  (void)cls;
  char *text = NULL;
  size_t len = 0;
  int rc = vmt_mx_thread_dump_to_string(&text, &len);
  if (rc < 0) {
    throw_state(env, "vmt_mx_thread_dump_to_string", rc);
    return NULL;
  }
  jstring out = (*env)->NewStringUTF(env, text);
  free(text);
  return out;
}

/* ---- A thread with exact bytes for its name, holding many monitors ------------------------ */

typedef struct holder {
  vmt_thread_t *thread;
  vmt_monitor_t *gate;
  int ready, released;  /* guarded by gate */
  size_t count;
  vmt_monitor_t *monitors[];
} holder_t;

static void *holder_main(void *arg) {
  holder_t *h = arg;
  for (size_t i = 0; i < h->count; i++) vmt_monitor_enter(h->monitors[i]);
  vmt_monitor_enter(h->gate);
  h->ready = 1;
  vmt_monitor_notify_all(h->gate);
  while (!h->released) vmt_monitor_wait(h->gate, 0);
  vmt_monitor_exit(h->gate);
  for (size_t i = h->count; i > 0; i--) vmt_monitor_exit(h->monitors[i - 1]);
  return NULL;
}

static void holder_free(holder_t *h) {
  for (size_t i = 0; i < h->count; i++)
    if (h->monitors[i]) vmt_monitor_destroy(h->monitors[i]);
  if (h->gate) vmt_monitor_destroy(h->gate);
  free(h);
}

/* A byte[] as a NUL-terminated C string, the bytes exactly (not modified UTF-8). */
static char *bytes_in(JNIEnv *env, jbyteArray a) {
  jsize n = (*env)->GetArrayLength(env, a);
  char *s = malloc((size_t)n + 1);
  if (s == NULL) return NULL;
  (*env)->GetByteArrayRegion(env, a, 0, n, (jbyte *)s);
  s[n] = '\0';
  return s;
}

NATIVE(jlong, startHolder)(JNIEnv *env, jclass cls, jbyteArray jname, jbyteArray jmonitor,
                           jint n) {
  (void)cls;
  if (jname == NULL || jmonitor == NULL || n < 0) {
    throw_state(env, "startHolder: bad arguments", EINVAL);
    return 0;
  }
  holder_t *h = calloc(1, sizeof *h + (size_t)n * sizeof(vmt_monitor_t *));
  char *name = bytes_in(env, jname), *monitor = bytes_in(env, jmonitor);
  int rc = h && name && monitor ? vmt_monitor_create(&h->gate, "jvm-test-holder-gate") : -ENOMEM;
  if (h) h->count = (size_t)n;
  for (jint i = 0; rc == 0 && i < n; i++) rc = vmt_monitor_create(&h->monitors[i], monitor);
  if (rc == 0) {
    vmt_thread_options_t opts = {.flags = VMT_THREAD_OPT_NAME, .name = name};
    rc = vmt_thread_start_ex(&h->thread, &opts, holder_main, h);
  }
  free(name);
  free(monitor);
  if (rc < 0) {
    if (h) holder_free(h);
    throw_state(env, "startHolder", rc);
    return 0;
  }
  vmt_monitor_enter(h->gate);
  while (!h->ready) vmt_monitor_wait(h->gate, 0);
  vmt_monitor_exit(h->gate);
  return (jlong)(intptr_t)h;
}

NATIVE(jlong, holderId)(JNIEnv *env, jclass cls, jlong handle) {
  (void)env, (void)cls;
  return vmt_thread_id(((holder_t *)(intptr_t)handle)->thread);
}

NATIVE(void, stopHolder)(JNIEnv *env, jclass cls, jlong handle) {
  (void)env, (void)cls;
  holder_t *h = (holder_t *)(intptr_t)handle;
  vmt_monitor_enter(h->gate);
  h->released = 1;
  vmt_monitor_notify_all(h->gate);
  vmt_monitor_exit(h->gate);
  vmt_thread_join(h->thread, NULL);
  vmt_thread_release(h->thread);
  holder_free(h);
}
