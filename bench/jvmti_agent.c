/*
 * bench/jvmti_agent.c: the small JVMTI agent behind bench/java/VmServicesBench.java. It lets
 * the Java side time what a native agent (a profiler, a debugger) pays for JVMTI
 * GetStackTrace of another thread and for SuspendThread / ResumeThread, on whatever HotSpot
 * loads it (17 and 25 here: JVMTI's function table is binary compatible across versions, so
 * one build against the headers Bazel found serves every JDK of the run).
 *
 * Loaded with -agentpath (VmServicesBench's "bench-jvm-args" header line); HotSpot looks up
 * the class's native methods in agent libraries too, so the natives below need no
 * System.load. Agent_OnLoad never fails the JVM: a missing environment or capability is
 * recorded and handed to Java by jvmtiStatus(), which then skips the JVMTI rows and says why.
 *
 * Each native times the JVMTI call alone, with CLOCK_MONOTONIC (System.nanoTime's clock) read
 * on both sides in C: that is the cost an agent pays, without the Java -> native call and
 * return (a few tens of ns, and a safepoint/suspend check on the way back to Java) that a
 * timing in Java would add. It returns the elapsed ns, or -(jvmtiError) on failure.
 */
#include <jni.h>
#include <jvmti.h>
#include <stdio.h>
#include <time.h>

static jvmtiEnv *jvmti;
static char status[160] = "Agent_OnLoad never ran (start the JVM with -agentpath:...)";
static int ready;

/* JNIEXPORT makes these visible although the library is built with -fvisibility=hidden. */
JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved);
JNIEXPORT jstring JNICALL Java_vmtbench_VmServicesBench_jvmtiStatus(JNIEnv *env, jclass cls);
JNIEXPORT jlong JNICALL Java_vmtbench_VmServicesBench_jvmtiGetStackTrace(JNIEnv *env, jclass cls,
                                                                         jthread t, jint depth);
JNIEXPORT jlong JNICALL Java_vmtbench_VmServicesBench_jvmtiSuspend(JNIEnv *env, jclass cls,
                                                                   jthread t);
JNIEXPORT jlong JNICALL Java_vmtbench_VmServicesBench_jvmtiResume(JNIEnv *env, jclass cls,
                                                                  jthread t);

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
  (void)options;
  (void)reserved;
  /* 1.2 is the oldest version with every call used here; HotSpot 17 and 25 both serve it. */
  if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK || jvmti == NULL) {
    snprintf(status, sizeof(status), "GetEnv(JVMTI_VERSION_1_2) failed");
    return JNI_OK;
  }
  jvmtiCapabilities caps = {0};
  caps.can_suspend = 1;
  jvmtiError err = (*jvmti)->AddCapabilities(jvmti, &caps);
  if (err != JVMTI_ERROR_NONE) {
    snprintf(status, sizeof(status), "AddCapabilities(can_suspend) failed: JVMTI error %d", err);
    return JNI_OK;
  }
  ready = 1;
  return JNI_OK;
}

JNIEXPORT jstring JNICALL Java_vmtbench_VmServicesBench_jvmtiStatus(JNIEnv *env, jclass cls) {
  (void)cls;
  return ready ? NULL : (*env)->NewStringUTF(env, status);
}

static jlong now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (jlong)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Deep enough for the targets' stacks (a loop, park or a pipe read under a few frames). */
#define MAX_DEPTH 64

JNIEXPORT jlong JNICALL Java_vmtbench_VmServicesBench_jvmtiGetStackTrace(JNIEnv *env, jclass cls,
                                                                         jthread t, jint depth) {
  (void)env;
  (void)cls;
  if (!ready) return -JVMTI_ERROR_MUST_POSSESS_CAPABILITY;
  jvmtiFrameInfo frames[MAX_DEPTH];
  jint count = 0;
  if (depth < 1 || depth > MAX_DEPTH) depth = MAX_DEPTH;
  jlong t0 = now_ns();
  jvmtiError err = (*jvmti)->GetStackTrace(jvmti, t, 0, depth, frames, &count);
  jlong t1 = now_ns();
  if (err != JVMTI_ERROR_NONE) return -(jlong)err;
  /* A live target always has a frame: zero would mean we timed the wrong thread. */
  return count > 0 ? t1 - t0 : -JVMTI_ERROR_NO_MORE_FRAMES;
}

/* SuspendThread and ResumeThread share a signature: time one of them on t. */
typedef jvmtiError(JNICALL *thread_call_t)(jvmtiEnv *env, jthread t);

static jlong time_thread_call(thread_call_t call, jthread t) {
  jlong t0 = now_ns();
  jvmtiError err = call(jvmti, t);
  jlong t1 = now_ns();
  return err == JVMTI_ERROR_NONE ? t1 - t0 : -(jlong)err;
}

JNIEXPORT jlong JNICALL Java_vmtbench_VmServicesBench_jvmtiSuspend(JNIEnv *env, jclass cls,
                                                                   jthread t) {
  (void)env;
  (void)cls;
  return ready ? time_thread_call((*jvmti)->SuspendThread, t)
               : -JVMTI_ERROR_MUST_POSSESS_CAPABILITY;
}

JNIEXPORT jlong JNICALL Java_vmtbench_VmServicesBench_jvmtiResume(JNIEnv *env, jclass cls,
                                                                  jthread t) {
  (void)env;
  (void)cls;
  return ready ? time_thread_call((*jvmti)->ResumeThread, t)
               : -JVMTI_ERROR_MUST_POSSESS_CAPABILITY;
}
