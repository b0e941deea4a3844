/*
 * os_linux/tsc.c: the elapsed counter. Placeholder: CLOCK_MONOTONIC until the TSC path lands.
 */
#include "os_linux/os_impl.h"

void vmt_os__elapsed_init(void) {}

int64_t vmt_os_elapsed_nanos(void) { return vmt_os_java_time_nanos(); }
const char *vmt_os_elapsed_source(void) { return "clock_monotonic"; }
const char *vmt_os_elapsed_source_reason(void) { return "tsc not probed yet"; }
