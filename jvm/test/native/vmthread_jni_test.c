/*
 * jvm/test/native/vmthread_jni_test.c: the "language runtime" of the JVM tests. It stands for
 * a native library that runs vmthread threads inside a Java process: it starts groups of
 * threads that burn some CPU and then wait on a monitor, a contention pair (one thread owning
 * a monitor, one blocked entering it), a stack walker for one category, and it reads the C
 * API directly so that the tests can compare what JMX shows with what the C side reports.
 *
 * It links libvmthread.so.0 like the bridge does, so both see the same runtime.
 */
#include <errno.h>
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
  vmt_monitor_t *contended;  /* contention pair: held by the owner */
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
      wait_at_gate(g);
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
  if (rc < 0) {
    if (g->gate) vmt_monitor_destroy(g->gate);
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

/* Thread 0 owns monitor "jvm-test-contended" and waits at the gate; thread 1 is blocked
 * entering it (or about to be: the test polls for BLOCKED). */
NATIVE(jlong, startContention)(JNIEnv *env, jclass cls) {
  (void)cls;
  group_t *g = group_new(env, 2, true);
  if (g == NULL) return 0;
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
  return group_stop((group_t *)(intptr_t)handle);
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

/* Threads of category "interp" are "interpreting" two frames of a guest language. */
static int interp_walker(vmt_thread_t *t, vmt_stack_frame_t *frames, int32_t max, void *ctx) {
  (void)ctx;
  static const vmt_stack_frame_t guest[] = {
      {.function = "demo.Interpreter.run", .file = "Interpreter.vm", .line = 42, .pc = 0},
      {.function = "demo.Main.main", .file = "Main.vm", .line = 7, .pc = 0},
  };
  if (strcmp(vmt_thread_category(t), "interp") != 0) return 0;
  int32_t n = max < 2 ? max : 2;
  for (int32_t i = 0; i < n; i++) frames[i] = guest[i];
  return n;
}

NATIVE(void, setStackWalker)(JNIEnv *env, jclass cls, jboolean on) {
  (void)env, (void)cls;
  vmt_mx_set_stack_walker(on ? interp_walker : NULL, NULL);
}
