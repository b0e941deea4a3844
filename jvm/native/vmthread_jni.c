/*
 * jvm/native/vmthread_jni.c: the JNI bridge between io.vmthread.NativeThreads and the C
 * management API (include/vmthread/management.h). One function per native method, each a thin
 * translation: Java arrays in, the C call, Java objects out, and the C error turned into the
 * exception java.lang.management.ThreadMXBean specifies:
 *   -EINVAL  IllegalArgumentException       (id <= 0, negative maxDepth)
 *   -ENOTSUP UnsupportedOperationException  (CPU time, allocated bytes, locked monitors...)
 *   -ENOMEM  OutOfMemoryError
 *   other    IllegalStateException naming the call and the errno
 *
 * The library links libvmthread.so.0 dynamically (RUNPATH $ORIGIN), so it reads the one
 * runtime every native library of the process shares. Strings cross as UTF-8: pure ASCII goes
 * through NewStringUTF; anything else through new String(bytes, "UTF-8"), because JNI's
 * "modified UTF-8" differs from UTF-8 for NUL and characters outside the BMP.
 *
 * Threads: every function may be called from any Java thread concurrently (the C API is
 * thread-safe); nothing here keeps state beyond the class and field ids cached at load.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jni.h>

#include <vmthread.h>

#include "io_vmthread_NativeThreads.h"

_Static_assert(sizeof(jlong) == sizeof(int64_t), "jlong is int64_t");

static struct {
  jclass string;
  jclass info;
  jclass lock;
  jmethodID string_from_bytes;   /* String(byte[], String charsetName) */
  jobject utf8;                  /* "UTF-8" */
  jmethodID info_init;
  jmethodID lock_init;
  struct {
    jfieldID id, name, category, state, daemon, in_native, suspended, priority, tid,
        elapsed_ns, blocked_count, blocked_time_ns, waited_count, waited_time_ns, lock,
        lock_owner_id, lock_owner_name, frame_functions, frame_files, frame_lines,
        locked_monitors, locked_synchronizers;
  } f;
  struct {
    jfieldID class_name, name, identity_hash, stack_depth;
  } l;
} J;

/* ---- Errors ----------------------------------------------------------------------------- */

static void throw_class(JNIEnv *env, const char *cls, const char *msg) {
  jclass c = (*env)->FindClass(env, cls);
  if (c != NULL) (*env)->ThrowNew(env, c, msg);
}

/* Throws the exception for the C error rc (< 0) of call. */
static void throw_rc(JNIEnv *env, int rc, const char *call) {
  char msg[256];
  snprintf(msg, sizeof msg, "%s: %s", call, strerror(-rc));
  switch (rc) {
    case -EINVAL:
      throw_class(env, "java/lang/IllegalArgumentException", msg);
      break;
    case -ENOTSUP:
      throw_class(env, "java/lang/UnsupportedOperationException", msg);
      break;
    case -ENOMEM:
      throw_class(env, "java/lang/OutOfMemoryError", msg);
      break;
    default:
      throw_class(env, "java/lang/IllegalStateException", msg);
      break;
  }
}

/* ---- Conversions ------------------------------------------------------------------------ */

static jstring new_string(JNIEnv *env, const char *s) {
  if (s == NULL) return NULL;
  size_t n = strlen(s);
  size_t i = 0;
  while (i < n && (unsigned char)s[i] < 0x80) i++;
  if (i == n) return (*env)->NewStringUTF(env, s);
  if (n > (size_t)INT32_MAX) {
    throw_class(env, "java/lang/OutOfMemoryError", "string too long");
    return NULL;
  }
  jbyteArray bytes = (*env)->NewByteArray(env, (jsize)n);
  if (bytes == NULL) return NULL;
  (*env)->SetByteArrayRegion(env, bytes, 0, (jsize)n, (const jbyte *)s);
  jstring str = (*env)->NewObject(env, J.string, J.string_from_bytes, bytes, J.utf8);
  (*env)->DeleteLocalRef(env, bytes);
  return str;
}

/* Copies a Java long[] into a malloc'ed int64_t[] (NULL + exception on failure; a zero-length
 * array gives a valid one-element buffer so that the C side never sees NULL for "empty"). */
static int64_t *ids_in(JNIEnv *env, jlongArray array, size_t *count) {
  if (array == NULL) {
    throw_class(env, "java/lang/NullPointerException", "ids");
    return NULL;
  }
  jsize n = (*env)->GetArrayLength(env, array);
  int64_t *ids = malloc((size_t)(n > 0 ? n : 1) * sizeof(*ids));
  if (ids == NULL) {
    throw_class(env, "java/lang/OutOfMemoryError", "ids");
    return NULL;
  }
  (*env)->GetLongArrayRegion(env, array, 0, n, (jlong *)ids);
  *count = (size_t)n;
  return ids;
}

static jlongArray longs_out(JNIEnv *env, const int64_t *values, size_t count) {
  if (count > (size_t)INT32_MAX) {
    throw_class(env, "java/lang/OutOfMemoryError", "array too long");
    return NULL;
  }
  jlongArray out = (*env)->NewLongArray(env, (jsize)count);
  if (out != NULL && count > 0)
    (*env)->SetLongArrayRegion(env, out, 0, (jsize)count, (const jlong *)values);
  return out;
}

/* One RawLock: one new local reference (the result); its strings' are deleted, so that a
 * thread holding hundreds of monitors stays within the capacity info_out reserved. */
static jobject lock_out(JNIEnv *env, const vmt_lock_info_t *lock, int32_t stack_depth) {
  jobject o = (*env)->NewObject(env, J.lock, J.lock_init);
  if (o == NULL) return NULL;
  jstring cls = new_string(env, lock->class_name);
  if ((*env)->ExceptionCheck(env)) return NULL;
  (*env)->SetObjectField(env, o, J.l.class_name, cls);
  if (cls != NULL) (*env)->DeleteLocalRef(env, cls);
  jstring name = new_string(env, lock->name);
  if ((*env)->ExceptionCheck(env)) return NULL;
  (*env)->SetObjectField(env, o, J.l.name, name);
  if (name != NULL) (*env)->DeleteLocalRef(env, name);
  (*env)->SetIntField(env, o, J.l.identity_hash, lock->identity_hash);
  (*env)->SetIntField(env, o, J.l.stack_depth, stack_depth);
  return o;
}

/* RawLock[] from monitors (with depths) or from plain locks (depth -1). */
static jobjectArray locks_out(JNIEnv *env, const vmt_monitor_info_t *monitors,
                              const vmt_lock_info_t *locks, size_t count) {
  jobjectArray out = (*env)->NewObjectArray(env, (jsize)count, J.lock, NULL);
  if (out == NULL) return NULL;
  for (size_t i = 0; i < count; i++) {
    jobject o = monitors ? lock_out(env, &monitors[i].lock, monitors[i].stack_depth)
                         : lock_out(env, &locks[i], -1);
    if (o == NULL) return NULL;
    (*env)->SetObjectArrayElement(env, out, (jsize)i, o);
    (*env)->DeleteLocalRef(env, o);
  }
  return out;
}

static int frames_out(JNIEnv *env, jobject o, const vmt_thread_info_t *info) {
  jsize n = (jsize)info->frame_count;
  jobjectArray functions = (*env)->NewObjectArray(env, n, J.string, NULL);
  jobjectArray files = functions ? (*env)->NewObjectArray(env, n, J.string, NULL) : NULL;
  jintArray lines = files ? (*env)->NewIntArray(env, n) : NULL;
  if (lines == NULL) return -1;
  for (jsize i = 0; i < n; i++) {
    const vmt_stack_frame_t *f = &info->frames[i];
    jstring fn = new_string(env, f->function ? f->function : "??");
    if (fn == NULL) return -1;
    (*env)->SetObjectArrayElement(env, functions, i, fn);
    (*env)->DeleteLocalRef(env, fn);
    if (f->file != NULL) {
      jstring file = new_string(env, f->file);
      if (file == NULL) return -1;
      (*env)->SetObjectArrayElement(env, files, i, file);
      (*env)->DeleteLocalRef(env, file);
    }
    jint line = f->line;
    (*env)->SetIntArrayRegion(env, lines, i, 1, &line);
  }
  (*env)->SetObjectField(env, o, J.f.frame_functions, functions);
  (*env)->SetObjectField(env, o, J.f.frame_files, files);
  (*env)->SetObjectField(env, o, J.f.frame_lines, lines);
  return 0;
}

/* One RawThreadInfo; NULL with an exception pending on failure. Uses its own local frame so
 * that a dump of thousands of threads does not pile up local references. */
static jobject info_out(JNIEnv *env, const vmt_thread_info_t *info) {
  if ((*env)->PushLocalFrame(env, 32) != 0) return NULL;
  jobject o = (*env)->NewObject(env, J.info, J.info_init);
  if (o == NULL) goto fail;
  jstring name = new_string(env, info->name);
  if ((*env)->ExceptionCheck(env)) goto fail;
  jstring category = new_string(env, info->category);
  if ((*env)->ExceptionCheck(env)) goto fail;
  jstring owner = new_string(env, info->lock_owner_name);
  if ((*env)->ExceptionCheck(env)) goto fail;
  (*env)->SetLongField(env, o, J.f.id, info->id);
  (*env)->SetObjectField(env, o, J.f.name, name);
  (*env)->SetObjectField(env, o, J.f.category, category);
  (*env)->SetIntField(env, o, J.f.state, (jint)info->state);
  (*env)->SetBooleanField(env, o, J.f.daemon, info->daemon ? JNI_TRUE : JNI_FALSE);
  (*env)->SetBooleanField(env, o, J.f.in_native, info->in_native ? JNI_TRUE : JNI_FALSE);
  (*env)->SetBooleanField(env, o, J.f.suspended, info->suspended ? JNI_TRUE : JNI_FALSE);
  (*env)->SetIntField(env, o, J.f.priority, info->priority);
  (*env)->SetIntField(env, o, J.f.tid, (jint)info->tid);
  (*env)->SetLongField(env, o, J.f.elapsed_ns, info->elapsed_ns);
  (*env)->SetLongField(env, o, J.f.blocked_count, info->blocked_count);
  (*env)->SetLongField(env, o, J.f.blocked_time_ns, info->blocked_time_ns);
  (*env)->SetLongField(env, o, J.f.waited_count, info->waited_count);
  (*env)->SetLongField(env, o, J.f.waited_time_ns, info->waited_time_ns);
  (*env)->SetLongField(env, o, J.f.lock_owner_id, info->lock_owner_id);
  (*env)->SetObjectField(env, o, J.f.lock_owner_name, owner);
  if (info->lock != NULL) {
    jobject lock = lock_out(env, info->lock, -1);
    if (lock == NULL) goto fail;
    (*env)->SetObjectField(env, o, J.f.lock, lock);
  }
  if (frames_out(env, o, info) != 0) goto fail;
  if (info->locked_monitors != NULL) {
    jobjectArray m = locks_out(env, info->locked_monitors, NULL, info->locked_monitor_count);
    if (m == NULL) goto fail;
    (*env)->SetObjectField(env, o, J.f.locked_monitors, m);
  }
  if (info->locked_synchronizers != NULL) {
    jobjectArray s =
        locks_out(env, NULL, info->locked_synchronizers, info->locked_synchronizer_count);
    if (s == NULL) goto fail;
    (*env)->SetObjectField(env, o, J.f.locked_synchronizers, s);
  }
  return (*env)->PopLocalFrame(env, o);
fail:
  (*env)->PopLocalFrame(env, NULL);
  return NULL;
}

/* RawThreadInfo[] with null for NULL entries. */
static jobjectArray infos_out(JNIEnv *env, vmt_thread_info_t **infos, size_t count) {
  if (count > (size_t)INT32_MAX) {
    throw_class(env, "java/lang/OutOfMemoryError", "too many threads");
    return NULL;
  }
  jobjectArray out = (*env)->NewObjectArray(env, (jsize)count, J.info, NULL);
  if (out == NULL) return NULL;
  for (size_t i = 0; i < count; i++) {
    if (infos[i] == NULL) continue;
    jobject o = info_out(env, infos[i]);
    if (o == NULL) return NULL;
    (*env)->SetObjectArrayElement(env, out, (jsize)i, o);
    (*env)->DeleteLocalRef(env, o);
  }
  return out;
}

/* ---- Load ------------------------------------------------------------------------------- */

static jclass global_class(JNIEnv *env, const char *name) {
  jclass local = (*env)->FindClass(env, name);
  if (local == NULL) return NULL;
  jclass global = (*env)->NewGlobalRef(env, local);
  (*env)->DeleteLocalRef(env, local);
  return global;
}

#define FIELD(cls, var, name, sig)                               \
  do {                                                           \
    (var) = (*env)->GetFieldID(env, (cls), (name), (sig));       \
    if ((var) == NULL) return JNI_ERR;                           \
  } while (0)

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
  (void)reserved;
  JNIEnv *env;
  if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
  J.string = global_class(env, "java/lang/String");
  J.info = global_class(env, "io/vmthread/RawThreadInfo");
  J.lock = global_class(env, "io/vmthread/RawThreadInfo$RawLock");
  if (J.string == NULL || J.info == NULL || J.lock == NULL) return JNI_ERR;
  J.string_from_bytes = (*env)->GetMethodID(env, J.string, "<init>", "([BLjava/lang/String;)V");
  J.info_init = (*env)->GetMethodID(env, J.info, "<init>", "()V");
  J.lock_init = (*env)->GetMethodID(env, J.lock, "<init>", "()V");
  if (J.string_from_bytes == NULL || J.info_init == NULL || J.lock_init == NULL) return JNI_ERR;
  jstring utf8 = (*env)->NewStringUTF(env, "UTF-8");
  if (utf8 == NULL) return JNI_ERR;
  J.utf8 = (*env)->NewGlobalRef(env, utf8);
  (*env)->DeleteLocalRef(env, utf8);

  const char *str = "Ljava/lang/String;";
  FIELD(J.info, J.f.id, "id", "J");
  FIELD(J.info, J.f.name, "name", str);
  FIELD(J.info, J.f.category, "category", str);
  FIELD(J.info, J.f.state, "state", "I");
  FIELD(J.info, J.f.daemon, "daemon", "Z");
  FIELD(J.info, J.f.in_native, "inNative", "Z");
  FIELD(J.info, J.f.suspended, "suspended", "Z");
  FIELD(J.info, J.f.priority, "priority", "I");
  FIELD(J.info, J.f.tid, "tid", "I");
  FIELD(J.info, J.f.elapsed_ns, "elapsedNs", "J");
  FIELD(J.info, J.f.blocked_count, "blockedCount", "J");
  FIELD(J.info, J.f.blocked_time_ns, "blockedTimeNs", "J");
  FIELD(J.info, J.f.waited_count, "waitedCount", "J");
  FIELD(J.info, J.f.waited_time_ns, "waitedTimeNs", "J");
  FIELD(J.info, J.f.lock, "lock", "Lio/vmthread/RawThreadInfo$RawLock;");
  FIELD(J.info, J.f.lock_owner_id, "lockOwnerId", "J");
  FIELD(J.info, J.f.lock_owner_name, "lockOwnerName", str);
  FIELD(J.info, J.f.frame_functions, "frameFunctions", "[Ljava/lang/String;");
  FIELD(J.info, J.f.frame_files, "frameFiles", "[Ljava/lang/String;");
  FIELD(J.info, J.f.frame_lines, "frameLines", "[I");
  FIELD(J.info, J.f.locked_monitors, "lockedMonitors", "[Lio/vmthread/RawThreadInfo$RawLock;");
  FIELD(J.info, J.f.locked_synchronizers, "lockedSynchronizers",
        "[Lio/vmthread/RawThreadInfo$RawLock;");
  FIELD(J.lock, J.l.class_name, "className", str);
  FIELD(J.lock, J.l.name, "name", str);
  FIELD(J.lock, J.l.identity_hash, "identityHash", "I");
  FIELD(J.lock, J.l.stack_depth, "stackDepth", "I");
  return JNI_VERSION_1_8;
}

JNIEXPORT void JNICALL JNI_OnUnload(JavaVM *vm, void *reserved) {
  (void)reserved;
  JNIEnv *env;
  if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK) return;
  (*env)->DeleteGlobalRef(env, J.string);
  (*env)->DeleteGlobalRef(env, J.info);
  (*env)->DeleteGlobalRef(env, J.lock);
  (*env)->DeleteGlobalRef(env, J.utf8);
}

/* ---- Natives ---------------------------------------------------------------------------- */

#define NATIVE(ret, name) JNIEXPORT ret JNICALL Java_io_vmthread_NativeThreads_##name

NATIVE(jstring, version)(JNIEnv *env, jclass cls) {
  (void)cls;
  return new_string(env, vmt_version());
}

NATIVE(jint, threadCount)(JNIEnv *env, jclass cls) {
  (void)env, (void)cls;
  return vmt_mx_get_thread_count();
}

NATIVE(jint, peakThreadCount)(JNIEnv *env, jclass cls) {
  (void)env, (void)cls;
  return vmt_mx_get_peak_thread_count();
}

NATIVE(jlong, totalStartedThreadCount)(JNIEnv *env, jclass cls) {
  (void)env, (void)cls;
  return vmt_mx_get_total_started_thread_count();
}

NATIVE(jint, daemonThreadCount)(JNIEnv *env, jclass cls) {
  (void)env, (void)cls;
  return vmt_mx_get_daemon_thread_count();
}

NATIVE(void, resetPeakThreadCount)(JNIEnv *env, jclass cls) {
  (void)env, (void)cls;
  vmt_mx_reset_peak_thread_count();
}

NATIVE(jlongArray, allThreadIds)(JNIEnv *env, jclass cls) {
  (void)cls;
  int64_t *ids = NULL;
  size_t n = 0;
  int rc = vmt_mx_get_all_thread_ids(&ids, &n);
  if (rc < 0) {
    throw_rc(env, rc, "vmt_mx_get_all_thread_ids");
    return NULL;
  }
  jlongArray out = longs_out(env, ids, n);
  vmt_mx_ids_free(ids);
  return out;
}

/* The flags of the _ex calls for a Java ThreadInfo: the locks asked for, and no CPU times
 * (java.lang.management.ThreadInfo has none; reading them is three clock reads per thread, most
 * of what a ThreadInfo without stacks costs the C side: docs/management.md). */
static uint32_t info_flags(jboolean locked_monitors, jboolean locked_synchronizers) {
  return VMT_MX_INFO_NO_CPU_TIME | (locked_monitors ? VMT_MX_INFO_LOCKED_MONITORS : 0u) |
         (locked_synchronizers ? VMT_MX_INFO_LOCKED_SYNCHRONIZERS : 0u);
}

NATIVE(jobjectArray, threadInfo)(JNIEnv *env, jclass cls, jlongArray ids_array,
                                 jboolean locked_monitors, jboolean locked_synchronizers,
                                 jint max_depth) {
  (void)cls;
  size_t n = 0;
  int64_t *ids = ids_in(env, ids_array, &n);
  if (ids == NULL) return NULL;
  vmt_thread_info_t **infos = NULL;
  int rc = vmt_mx_get_thread_info_array_ex(ids, n, info_flags(locked_monitors,
                                           locked_synchronizers), max_depth, &infos);
  free(ids);
  if (rc < 0) {
    throw_rc(env, rc, "vmt_mx_get_thread_info_array_ex");
    return NULL;
  }
  jobjectArray out = infos_out(env, infos, n);
  vmt_mx_thread_info_array_free(infos, n);
  return out;
}

NATIVE(jobjectArray, dumpAllThreads)(JNIEnv *env, jclass cls, jboolean locked_monitors,
                                     jboolean locked_synchronizers, jint max_depth) {
  (void)cls;
  vmt_thread_info_t **infos = NULL;
  size_t n = 0;
  int rc = vmt_mx_dump_all_threads_ex(info_flags(locked_monitors, locked_synchronizers),
                                      max_depth, &infos, &n);
  if (rc < 0) {
    throw_rc(env, rc, "vmt_mx_dump_all_threads_ex");
    return NULL;
  }
  jobjectArray out = infos_out(env, infos, n);
  vmt_mx_thread_info_array_free(infos, n);
  return out;
}

NATIVE(jboolean, isThreadCpuTimeSupported)(JNIEnv *env, jclass cls) {
  (void)env, (void)cls;
  return vmt_mx_is_thread_cpu_time_supported();
}

NATIVE(jboolean, isCurrentThreadCpuTimeSupported)(JNIEnv *env, jclass cls) {
  (void)env, (void)cls;
  return vmt_mx_is_current_thread_cpu_time_supported();
}

NATIVE(jboolean, isThreadCpuTimeEnabled)(JNIEnv *env, jclass cls) {
  (void)cls;
  bool enabled = false;
  int rc = vmt_mx_is_thread_cpu_time_enabled(&enabled);
  if (rc < 0) throw_rc(env, rc, "vmt_mx_is_thread_cpu_time_enabled");
  return enabled;
}

NATIVE(void, setThreadCpuTimeEnabled)(JNIEnv *env, jclass cls, jboolean enable) {
  (void)cls;
  int rc = vmt_mx_set_thread_cpu_time_enabled(enable);
  if (rc < 0) throw_rc(env, rc, "vmt_mx_set_thread_cpu_time_enabled");
}

/* The Java result of a C "fills *out, returns 0 or -errno" query. */
static jlong long_result(JNIEnv *env, int rc, int64_t value, const char *call) {
  if (rc < 0) {
    throw_rc(env, rc, call);
    return -1;
  }
  return value;
}

NATIVE(jlong, currentThreadCpuTime)(JNIEnv *env, jclass cls) {
  (void)cls;
  int64_t ns = -1;
  int rc = vmt_mx_get_current_thread_cpu_time(&ns);
  return long_result(env, rc, ns, "vmt_mx_get_current_thread_cpu_time");
}

NATIVE(jlong, currentThreadUserTime)(JNIEnv *env, jclass cls) {
  (void)cls;
  int64_t ns = -1;
  int rc = vmt_mx_get_current_thread_user_time(&ns);
  return long_result(env, rc, ns, "vmt_mx_get_current_thread_user_time");
}

NATIVE(jlong, threadCpuTime)(JNIEnv *env, jclass cls, jlong id) {
  (void)cls;
  int64_t ns = -1;
  int rc = vmt_mx_get_thread_cpu_time(id, &ns);
  return long_result(env, rc, ns, "vmt_mx_get_thread_cpu_time");
}

NATIVE(jlong, threadUserTime)(JNIEnv *env, jclass cls, jlong id) {
  (void)cls;
  int64_t ns = -1;
  int rc = vmt_mx_get_thread_user_time(id, &ns);
  return long_result(env, rc, ns, "vmt_mx_get_thread_user_time");
}

/* The Java result of a C array query: ids in, one value per id out. */
typedef int (*array_query_fn)(const int64_t *ids, size_t count, int64_t *out);

static jlongArray array_query(JNIEnv *env, jlongArray ids_array, array_query_fn fn,
                              const char *call) {
  size_t n = 0;
  int64_t *ids = ids_in(env, ids_array, &n);
  if (ids == NULL) return NULL;
  int64_t *values = malloc((n ? n : 1) * sizeof(*values));
  if (values == NULL) {
    free(ids);
    throw_class(env, "java/lang/OutOfMemoryError", call);
    return NULL;
  }
  int rc = fn(ids, n, values);
  jlongArray out = NULL;
  if (rc < 0)
    throw_rc(env, rc, call);
  else
    out = longs_out(env, values, n);
  free(values);
  free(ids);
  return out;
}

NATIVE(jlongArray, threadCpuTimes)(JNIEnv *env, jclass cls, jlongArray ids) {
  (void)cls;
  return array_query(env, ids, vmt_mx_get_thread_cpu_time_array,
                     "vmt_mx_get_thread_cpu_time_array");
}

NATIVE(jlongArray, threadUserTimes)(JNIEnv *env, jclass cls, jlongArray ids) {
  (void)cls;
  return array_query(env, ids, vmt_mx_get_thread_user_time_array,
                     "vmt_mx_get_thread_user_time_array");
}

NATIVE(jboolean, isThreadContentionMonitoringSupported)(JNIEnv *env, jclass cls) {
  (void)env, (void)cls;
  return vmt_mx_is_thread_contention_monitoring_supported();
}

NATIVE(jboolean, isThreadContentionMonitoringEnabled)(JNIEnv *env, jclass cls) {
  (void)env, (void)cls;
  return vmt_mx_is_thread_contention_monitoring_enabled();
}

NATIVE(void, setThreadContentionMonitoringEnabled)(JNIEnv *env, jclass cls, jboolean enable) {
  (void)cls;
  int rc = vmt_mx_set_thread_contention_monitoring_enabled(enable);
  if (rc < 0) throw_rc(env, rc, "vmt_mx_set_thread_contention_monitoring_enabled");
}

NATIVE(jboolean, isObjectMonitorUsageSupported)(JNIEnv *env, jclass cls) {
  (void)env, (void)cls;
  return vmt_mx_is_object_monitor_usage_supported();
}

NATIVE(jboolean, isSynchronizerUsageSupported)(JNIEnv *env, jclass cls) {
  (void)env, (void)cls;
  return vmt_mx_is_synchronizer_usage_supported();
}

/* Java's findDeadlockedThreads: null when there is none. */
static jlongArray deadlock_result(JNIEnv *env, int rc, int64_t *ids, size_t n,
                                  const char *call) {
  jlongArray out = NULL;
  if (rc < 0)
    throw_rc(env, rc, call);
  else if (n > 0)
    out = longs_out(env, ids, n);
  vmt_mx_ids_free(ids);
  return out;
}

NATIVE(jlongArray, findMonitorDeadlockedThreads)(JNIEnv *env, jclass cls) {
  (void)cls;
  int64_t *ids = NULL;
  size_t n = 0;
  int rc = vmt_mx_find_monitor_deadlocked_threads(&ids, &n);
  return deadlock_result(env, rc, ids, n, "vmt_mx_find_monitor_deadlocked_threads");
}

NATIVE(jlongArray, findDeadlockedThreads)(JNIEnv *env, jclass cls) {
  (void)cls;
  int64_t *ids = NULL;
  size_t n = 0;
  int rc = vmt_mx_find_deadlocked_threads(&ids, &n);
  return deadlock_result(env, rc, ids, n, "vmt_mx_find_deadlocked_threads");
}

NATIVE(jboolean, isThreadAllocatedMemorySupported)(JNIEnv *env, jclass cls) {
  (void)env, (void)cls;
  return vmt_mx_is_thread_allocated_memory_supported();
}

NATIVE(jboolean, isThreadAllocatedMemoryEnabled)(JNIEnv *env, jclass cls) {
  (void)cls;
  bool enabled = false;
  int rc = vmt_mx_is_thread_allocated_memory_enabled(&enabled);
  if (rc < 0) throw_rc(env, rc, "vmt_mx_is_thread_allocated_memory_enabled");
  return enabled;
}

NATIVE(void, setThreadAllocatedMemoryEnabled)(JNIEnv *env, jclass cls, jboolean enable) {
  (void)cls;
  int rc = vmt_mx_set_thread_allocated_memory_enabled(enable);
  if (rc < 0) throw_rc(env, rc, "vmt_mx_set_thread_allocated_memory_enabled");
}

NATIVE(jlong, threadAllocatedBytes)(JNIEnv *env, jclass cls, jlong id) {
  (void)cls;
  int64_t bytes = -1;
  int rc = vmt_mx_get_thread_allocated_bytes(id, &bytes);
  return long_result(env, rc, bytes, "vmt_mx_get_thread_allocated_bytes");
}

NATIVE(jlongArray, threadAllocatedBytesArray)(JNIEnv *env, jclass cls, jlongArray ids) {
  (void)cls;
  return array_query(env, ids, vmt_mx_get_thread_allocated_bytes_array,
                     "vmt_mx_get_thread_allocated_bytes_array");
}

NATIVE(jlong, currentThreadAllocatedBytes)(JNIEnv *env, jclass cls) {
  (void)cls;
  int64_t bytes = -1;
  int rc = vmt_mx_get_current_thread_allocated_bytes(&bytes);
  return long_result(env, rc, bytes, "vmt_mx_get_current_thread_allocated_bytes");
}

NATIVE(jlong, totalThreadAllocatedBytes)(JNIEnv *env, jclass cls) {
  (void)cls;
  int64_t bytes = -1;
  int rc = vmt_mx_get_total_thread_allocated_bytes(&bytes);
  return long_result(env, rc, bytes, "vmt_mx_get_total_thread_allocated_bytes");
}

/* A dump into a Java string, from one of the C calls that write one into memory. */
static jstring dump_out(JNIEnv *env, int (*dump)(char **, size_t *), const char *call) {
  char *text = NULL;
  size_t len = 0;
  int rc = dump(&text, &len);
  if (rc < 0) {
    throw_rc(env, rc, call);
    return NULL;
  }
  jstring out = new_string(env, text);
  free(text);
  return out;
}

NATIVE(jstring, threadDump)(JNIEnv *env, jclass cls) {
  (void)cls;
  return dump_out(env, vmt_mx_thread_dump_to_string, "vmt_mx_thread_dump_to_string");
}

NATIVE(jstring, threadDumpJson)(JNIEnv *env, jclass cls) {
  (void)cls;
  return dump_out(env, vmt_mx_thread_dump_json_to_string, "vmt_mx_thread_dump_json_to_string");
}

/* The profiler: start with a period (0: the default), stop returning the collapsed stacks. */
NATIVE(void, profilerStart)(JNIEnv *env, jclass cls, jlong period_ns) {
  (void)cls;
  vmt_prof_options_t o = {.flags = period_ns ? VMT_PROF_OPT_PERIOD : 0u, .period_ns = period_ns};
  int rc = vmt_prof_start(&o);
  if (rc < 0) throw_rc(env, rc, "vmt_prof_start");
}

static int collapsed_by_thread(char **out, size_t *len) {
  return vmt_prof_collapsed_to_string(VMT_PROF_OUT_THREADS, out, len);
}

/* Never started (or cleared): the profile is empty. */
static int empty_if_none(char **out, size_t *len) {
  int rc = collapsed_by_thread(out, len);
  if (rc == -ENOENT && (*out = calloc(1, 1)) != NULL) rc = 0;
  return rc;
}

NATIVE(jstring, profilerStop)(JNIEnv *env, jclass cls) {
  (void)cls;
  int rc = vmt_prof_stop();
  if (rc < 0) {
    throw_rc(env, rc, "vmt_prof_stop");
    return NULL;
  }
  return dump_out(env, empty_if_none, "vmt_prof_collapsed_to_string");
}

/* The file of another copy of the runtime that has threads ("" for the main program), or
 * null when this one is the only one in use. */
NATIVE(jstring, otherRuntime)(JNIEnv *env, jclass cls) {
  (void)cls;
  char path[4096];
  return vmt_mx_get_other_runtime_count(path, sizeof path) > 0 ? new_string(env, path) : NULL;
}

/* {String[] names, long[] figures}: 4 figures per category (live, started, CPU, exited CPU),
 * one consistent read of vmt_mx_get_category_usage. */
NATIVE(jobjectArray, categoryUsage)(JNIEnv *env, jclass cls) {
  (void)cls;
  vmt_category_usage_t *u = NULL;
  size_t n = 0;
  int rc = vmt_mx_get_category_usage(&u, &n);
  if (rc < 0) {
    throw_rc(env, rc, "vmt_mx_get_category_usage");
    return NULL;
  }
  jobjectArray out = NULL;
  jobjectArray names = (*env)->NewObjectArray(env, (jsize)n, J.string, NULL);
  jlongArray figures = names ? (*env)->NewLongArray(env, (jsize)(4 * n)) : NULL;
  jclass object = figures ? (*env)->FindClass(env, "java/lang/Object") : NULL;
  if (object != NULL) out = (*env)->NewObjectArray(env, 2, object, NULL);
  for (size_t i = 0; out != NULL && i < n; i++) {
    jstring name = new_string(env, u[i].name);
    if (name == NULL) {
      out = NULL;
      break;
    }
    (*env)->SetObjectArrayElement(env, names, (jsize)i, name);
    (*env)->DeleteLocalRef(env, name);
    jlong f[4] = {u[i].live_count, u[i].started_count, u[i].cpu_time_ns,
                  u[i].exited_cpu_time_ns};
    (*env)->SetLongArrayRegion(env, figures, (jsize)(4 * i), 4, f);
  }
  vmt_mx_category_usage_free(u);
  if (out == NULL) return NULL;   /* an OutOfMemoryError is pending */
  (*env)->SetObjectArrayElement(env, out, 0, names);
  (*env)->SetObjectArrayElement(env, out, 1, figures);
  return out;
}

NATIVE(jstring, threadCategory)(JNIEnv *env, jclass cls, jlong id) {
  (void)cls;
  int64_t ids[1] = {id};
  vmt_thread_info_t **infos = NULL;
  int rc = vmt_mx_get_thread_info_array_ex(ids, 1, VMT_MX_INFO_NO_CPU_TIME, 0, &infos);
  if (rc < 0) {
    throw_rc(env, rc, "vmt_mx_get_thread_info_array_ex");
    return NULL;
  }
  jstring out = infos[0] == NULL ? NULL : new_string(env, infos[0]->category);
  vmt_mx_thread_info_array_free(infos, 1);
  return out;
}
