/*
 * bench/tls.c: the cost of a TLS slot read on the calling thread (issue #15: "TLS get <= 1 ns",
 * a row beside __thread and pthread_getspecific), and of the calls around it. Each sample
 * times a batch of BATCH reads in a dependent chain (each read's value is the next read's
 * key, so no read can be skipped or overlapped with the next), in ns per read; the variants
 * are interleaved batch by batch. bench "tls", unit ns:
 *
 *   thread_local            a __thread array read (the floor: what compiled code of the VM
 *                           would pay for its own thread-local variable)
 *   pthread_getspecific     POSIX's slots
 *   vmt_tls_get             vmthread's inline get (one initial-exec TLS load, a compare, a load)
 *   vmt_tls_set             vmthread's set (a call: it checks the key)
 *   vmt_thread_tls_get      another thread's slot (a call: it checks the thread and the key)
 *
 * This binary links the static library, where the initial-exec load of vmt_thread_fast is a
 * %fs-relative load at a constant offset; a host that reaches it through libvmthread.so reads
 * the offset from its GOT first (docs/thread-api.md, "TLS slots").
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/harness.h"
#include "vmthread.h"

#define BATCH 10000
#define KEYS 8

static __thread uintptr_t tl_slots[KEYS];
static pthread_key_t pkeys[KEYS];
static vmt_tls_key_t vkeys[KEYS];
static vmt_thread_t *self;

static void die(const char *what, int err) {
  fprintf(stderr, "tls: %s: %s\n", what, strerror(err < 0 ? -err : err));
  exit(1);
}

static void fill(void) {
  for (int i = 0; i < KEYS; i++) {
    tl_slots[i] = (uintptr_t)i;
    int rc = pthread_setspecific(pkeys[i], (void *)(uintptr_t)i);
    if (rc) die("pthread_setspecific", rc);
    rc = vmt_tls_set(vkeys[i], (void *)(uintptr_t)i);
    if (rc) die("vmt_tls_set", rc);
  }
}

/* Each loop reads slot k BATCH times. VMTB_SINK's memory clobber makes the compiler assume
 * memory changed after every read, so each iteration really reads (the TLS pointer too, for
 * vmt_tls_get): what code that reads its thread-local state between other work pays. */
static __attribute__((noinline)) uintptr_t loop_thread_local(int k) {
  uintptr_t sum = 0;
  for (int i = 0; i < BATCH; i++) {
    uintptr_t v = tl_slots[k];
    VMTB_SINK(v);
    sum += v;
  }
  return sum;
}

static __attribute__((noinline)) uintptr_t loop_pthread(int k) {
  uintptr_t sum = 0;
  pthread_key_t key = pkeys[k];
  for (int i = 0; i < BATCH; i++) {
    uintptr_t v = (uintptr_t)pthread_getspecific(key);
    VMTB_SINK(v);
    sum += v;
  }
  return sum;
}

static __attribute__((noinline)) uintptr_t loop_vmt(int k) {
  uintptr_t sum = 0;
  vmt_tls_key_t key = vkeys[k];
  for (int i = 0; i < BATCH; i++) {
    uintptr_t v = (uintptr_t)vmt_tls_get(key);
    VMTB_SINK(v);
    sum += v;
  }
  return sum;
}

static __attribute__((noinline)) uintptr_t loop_vmt_set(int k) {
  vmt_tls_key_t key = vkeys[k];
  for (int i = 0; i < BATCH; i++) vmt_tls_set(key, (void *)(uintptr_t)k);
  return (uintptr_t)k;
}

static __attribute__((noinline)) uintptr_t loop_vmt_other(int k) {
  uintptr_t sum = 0;
  vmt_tls_key_t key = vkeys[k];
  for (int i = 0; i < BATCH; i++) {
    void *v = NULL;
    vmt_thread_tls_get(self, key, &v);
    sum += (uintptr_t)v;
  }
  return sum;
}

typedef struct variant {
  const char *name;
  uintptr_t (*loop)(int k);
} variant_t;

static const variant_t VARIANTS[] = {
    {"thread_local", loop_thread_local},
    {"pthread_getspecific", loop_pthread},
    {"vmt_tls_get", loop_vmt},
    {"vmt_tls_set", loop_vmt_set},
    {"vmt_thread_tls_get", loop_vmt_other},
};
#define N_VARIANTS (sizeof(VARIANTS) / sizeof(VARIANTS[0]))

int main(int argc, char **argv) {
  vmtb_options_t o;
  vmtb_parse_args(argc, argv, &o, NULL);
  size_t warmup = 200, samples = 2000;
  if (o.quick) warmup = 20, samples = 200;
  if (o.longrun) samples = 20000;
  if (!o.json) vmtb_describe_machine(stdout);

  int rc = vmt_thread_attach(NULL, &self);
  if (rc) die("vmt_thread_attach", rc);
  for (int i = 0; i < KEYS; i++) {
    if ((rc = pthread_key_create(&pkeys[i], NULL)) != 0) die("pthread_key_create", rc);
    if ((rc = vmt_tls_key_create(&vkeys[i], NULL)) != 0) die("vmt_tls_key_create", rc);
  }
  fill();

  double *s = malloc(N_VARIANTS * samples * sizeof(double));
  if (s == NULL) die("malloc", ENOMEM);
  uintptr_t k = 0;
  for (long r = -(long)warmup; r < (long)samples; r++) {
    for (size_t j = 0; j < N_VARIANTS; j++) {
      size_t v = (j + (size_t)(r + (long)warmup)) % N_VARIANTS;   /* rotate the order */
      int64_t t0 = vmtb_now_ns();
      k += VARIANTS[v].loop((int)((size_t)r & (KEYS - 1)) & (KEYS - 1));
      int64_t t1 = vmtb_now_ns();
      if (r >= 0) s[v * samples + (size_t)r] = (double)(t1 - t0) / BATCH;
    }
  }
  VMTB_SINK(k);

  vmtb_table_header(&o, "TLS slot access on the calling thread (ns per access)");
  for (size_t v = 0; v < N_VARIANTS; v++) {
    vmtb_result_t res = {.bench = "tls", .variant = VARIANTS[v].name, .unit = "ns"};
    vmtb_stats(&s[v * samples], samples, &res);
    vmtb_report(&o, &res, NULL);
  }
  free(s);
  for (int i = 0; i < KEYS; i++) {
    pthread_key_delete(pkeys[i]);
    vmt_tls_key_delete(vkeys[i]);
  }
  vmt_thread_detach();
  return 0;
}
