/*
 * test/fuzz/proc_stat_fuzz.c: fuzz target for the /proc/<pid>/task/<tid>/stat parser
 * (vmt_os_proc_stat_parse). The input is the file's content, in an exact-size buffer without a
 * terminating NUL (ASan sees any read past the end). Properties: no crash, no read out of
 * bounds, and the answer agrees with a second, deliberately naive parser written here from
 * proc(5): after the LAST ')', " <state char>" then fields 4..15 as decimal integers separated by
 * single spaces (fields 4..13 may be negative, 14 and 15 may not, none may overflow 64 bits),
 * field 15 followed by a space or a newline inside the buffer.
 */
#include <errno.h>
#include <string.h>

#include "runtime/os.h"
#include "test/fuzz/fuzz.h"

/* Reference: 0 and the fields, or -1 where the input is not a well-formed stat line. */
static int reference(const char *b, size_t n, char *state, uint64_t *ut, uint64_t *st) {
  size_t close = n;
  for (size_t i = 0; i < n; i++)
    if (b[i] == ')') close = i;
  if (close == n) return -1;
  size_t p = close + 1;
  if (n - p < 3 || b[p] != ' ') return -1;
  char s = b[p + 1];
  if (s == ' ' || s == '\n' || s == '\0') return -1;
  p += 2;
  uint64_t v[16] = {0};
  for (int field = 4; field <= 15; field++) {
    if (p >= n || b[p] != ' ') return -1;
    p++;
    int neg = 0;
    if (p < n && b[p] == '-') {
      if (field >= 14) return -1;
      neg = 1;
      p++;
    }
    size_t start = p;
    uint64_t x = 0;
    while (p < n && b[p] >= '0' && b[p] <= '9') {
      unsigned d = (unsigned)(b[p] - '0');
      if (x > (UINT64_MAX - d) / 10) return -1;
      x = x * 10 + d;
      p++;
    }
    if (p == start || p >= n || (b[p] != ' ' && b[p] != '\n')) return -1;
    v[field] = neg ? 0 : x;
  }
  *state = s;
  *ut = v[14];
  *st = v[15];
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* calloc: for size 0 the one byte is never read, but gcc -O1 cannot tell. */
  char *buf = calloc(size ? size : 1, 1);
  if (buf == NULL) return 0;
  if (size) memcpy(buf, data, size);
  vmt_os_proc_times_t out;
  memset(&out, 0xAB, sizeof(out));
  int rc = vmt_os_proc_stat_parse(buf, size, &out);
  char state = 0;
  uint64_t ut = 0, st = 0;
  int ref = reference(buf, size, &state, &ut, &st);
  FUZZ_REQUIRE(rc == 0 || rc == -EINVAL);
  FUZZ_REQUIRE((rc == 0) == (ref == 0));
  if (rc == 0) {
    FUZZ_REQUIRE(out.state == state);
    FUZZ_REQUIRE(out.utime_ticks == ut);
    FUZZ_REQUIRE(out.stime_ticks == st);
  }
  FUZZ_REQUIRE(vmt_os_proc_stat_parse(NULL, size, &out) == -EINVAL);
  FUZZ_REQUIRE(vmt_os_proc_stat_parse(buf, size, NULL) == -EINVAL);
  free(buf);
  return 0;
}
