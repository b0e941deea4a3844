/*
 * runtime/management/runtimes.c: vmt_mx_get_other_runtime_count, how many other copies of the
 * runtime in this process have threads. Each copy has its own registry and answers only for
 * its own threads, so a management view (a JMX bean, a dump) of one of two copies in use is
 * silently about half of the process; the view says so instead (docs/embedding.md, "One
 * runtime per process"). The search is the port's (vmt_os_other_copies_in_use).
 */
#include <errno.h>

#include "runtime/management/management_impl.h"

int32_t vmt_mx_get_other_runtime_count(char *path, size_t len) {
  if (path == NULL && len > 0) return -EINVAL;
  return vmt_os_other_copies_in_use(path, len);
}
