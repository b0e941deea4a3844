/*
 * test/fuzz/monitor_name_fuzz.c: fuzz target for monitor and synchronizer names
 * (vmt_monitor_create / vmt_sync_create and their describe). The input, cut at its first NUL,
 * is the name. Properties: a name of at most VMT_MONITOR_NAME_MAX bytes is accepted and comes
 * back in describe as "name@<hex>", truncated to the caller's buffer and always terminated,
 * with the returned length equal to what a large buffer receives; a longer one is -EINVAL and
 * allocates nothing; every object is destroyed again (LeakSanitizer checks the rest).
 */
#include <errno.h>
#include <string.h>

#include "test/fuzz/fuzz.h"
#include "vmthread.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *name = malloc(size + 1);
  if (name == NULL) return 0;
  memcpy(name, data, size);
  name[size] = '\0';
  size_t len = strlen(name);
  vmt_monitor_t *m = NULL;
  vmt_sync_t *s = NULL;
  int rc = vmt_monitor_create(&m, name);
  int src = vmt_sync_create(&s, name);
  if (len > VMT_MONITOR_NAME_MAX) {
    FUZZ_REQUIRE(rc == -EINVAL && src == -EINVAL);
    free(name);
    return 0;
  }
  FUZZ_REQUIRE(rc == 0 && src == 0);
  char big[VMT_MONITOR_NAME_MAX + 32];
  int need = vmt_monitor_describe(m, big, sizeof(big));
  FUZZ_REQUIRE(need > 0 && (size_t)need == strlen(big));
  FUZZ_REQUIRE(strncmp(big, name, len) == 0 && big[len] == '@');
  FUZZ_REQUIRE(vmt_monitor_describe(m, NULL, 0) == need);
  size_t cut = size % (sizeof(big) - 1) + 1;
  char small[VMT_MONITOR_NAME_MAX + 32];
  memset(small, 0x55, sizeof(small));
  FUZZ_REQUIRE(vmt_monitor_describe(m, small, cut) == need);
  FUZZ_REQUIRE(strnlen(small, cut) < cut && strncmp(small, big, cut - 1) == 0);
  int sneed = vmt_sync_describe(s, big, sizeof(big));
  FUZZ_REQUIRE(sneed > 0 && strncmp(big, name, len) == 0 && big[len] == '@');
  FUZZ_REQUIRE(vmt_monitor_enter(m) == 0 && vmt_monitor_exit(m) == 0);
  FUZZ_REQUIRE(vmt_monitor_destroy(m) == 0 && vmt_sync_destroy(s) == 0);
  free(name);
  return 0;
}
