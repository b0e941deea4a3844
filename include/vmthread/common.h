/*
 * vmthread/common.h: conventions shared by every public header.
 *
 * Errors: a fallible call returns 0 or a negative errno (-EINVAL for bad arguments, -ENOMEM,
 * -EAGAIN, ...) and passes results through out-parameters. The management API mirrors Java
 * instead where its header says so (-1 for "not alive / disabled", NULL for "no such thread").
 */
#ifndef VMTHREAD_COMMON_H
#define VMTHREAD_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VMTHREAD_VERSION_MAJOR 0
#define VMTHREAD_VERSION_MINOR 1
#define VMTHREAD_VERSION_PATCH 0

/* Library code is built with -fvisibility=hidden; only what carries VMT_EXPORT is public. */
#if defined(VMT_BUILDING_LIBRARY)
#define VMT_EXPORT __attribute__((visibility("default")))
#else
#define VMT_EXPORT
#endif

/* A timeout that never expires, for the calls that take "timeout_ns <= 0: do not wait"
 * (docs/thread-api.md has every call's rule). Any timeout whose deadline would fall beyond
 * the monotonic clock's range means the same. */
#define VMT_TIMEOUT_INFINITE INT64_MAX

/* The TLS model of the few thread-local variables the inline calls of the headers read: an
 * initial-exec access is a %fs-relative load through one GOT entry, with no __tls_get_addr
 * call, also from a host's own shared object (the library's TLS is static TLS). */
#define VMT_TLS_INITIAL_EXEC __attribute__((tls_model("initial-exec")))

#ifdef __cplusplus
#define VMT_EXTERN_C_BEGIN extern "C" {
#define VMT_EXTERN_C_END }
#else
#define VMT_EXTERN_C_BEGIN
#define VMT_EXTERN_C_END
#endif

VMT_EXTERN_C_BEGIN

/* "0.1.0": the version of the library actually loaded (may differ from the header's). */
VMT_EXPORT const char *vmt_version(void);

VMT_EXTERN_C_END

#endif /* VMTHREAD_COMMON_H */
