/*
 * jvm/test/native/guest_static.c: a guest language runtime built the way docs/embedding.md
 * says not to inside a JVM that also has the JMX bridge: linked statically against
 * libvmthread.a, so the process holds a second copy of the runtime with its own registry.
 * jvm_test.sh compiles it with plain cc against the installed archive; loaded with System.load,
 * it starts one daemon thread that waits for the process to end. The bridge's bean must then
 * refuse to answer (it would show none of this copy's threads) instead of reporting zero.
 */
#include <jni.h>

#include <vmthread.h>

static vmt_monitor_t *forever;

static void *wait_forever(void *arg) {
  (void)arg;
  vmt_monitor_enter(forever);
  for (;;) vmt_monitor_wait(forever, 0);
  return NULL;
}

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
  (void)vm, (void)reserved;
  vmt_thread_options_t o = {
      .flags = VMT_THREAD_OPT_NAME | VMT_THREAD_OPT_DAEMON,
      .name = "static-guest-worker",
      .daemon = true,
  };
  vmt_thread_t *t;
  if (vmt_monitor_create(&forever, "static-guest-forever") != 0) return JNI_ERR;
  if (vmt_thread_start_ex(&t, &o, wait_forever, NULL) != 0) return JNI_ERR;
  vmt_thread_release(t);
  return JNI_VERSION_1_8;
}
