/* runtime/version.c: the version of the library that is actually loaded. */
#include "vmthread/common.h"

#define VMT_STR2(x) #x
#define VMT_STR(x) VMT_STR2(x)

const char *vmt_version(void) {
  return VMT_STR(VMTHREAD_VERSION_MAJOR) "." VMT_STR(VMTHREAD_VERSION_MINOR) "." VMT_STR(
      VMTHREAD_VERSION_PATCH);
}
