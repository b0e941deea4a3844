/*
 * test/fuzz/thread_options_fuzz.c: fuzz target for the validation of vmt_thread_options_t
 * (runtime/thread/options.c) and the kernel-name cut (vmt_os_native_name). The input encodes one
 * options struct:
 *   byte 0..3   flags (little endian; unknown bits included)
 *   byte 4      priority (signed)
 *   byte 5..12  stack size (little endian)
 *   byte 13     name length n (255: name NULL)
 *   n bytes     the name (may contain NUL, which ends it as a C string)
 *   the rest    the category (255 as its first byte: NULL)
 * Properties: resolution accepts exactly what the header's rules allow (checked against the
 * independent UTF-8 check of fuzz.h and the category alphabet), the stack size follows the
 * documented rule (0, or a page multiple in [64 KiB, 1 GiB] at or above the request up to the
 * cap), and the kernel name of any accepted name is a prefix of at most 15 bytes that is itself
 * valid UTF-8 and loses no whole character it had room for.
 */
#include <errno.h>
#include <string.h>

#include "runtime/thread/thread_impl.h"
#include "test/fuzz/fuzz.h"

static int category_ok(const char *c) {
  if (c == NULL) return 0;
  size_t n = strlen(c);
  if (n == 0 || n > VMT_THREAD_CATEGORY_MAX) return 0;
  for (size_t i = 0; i < n; i++)
    if (!((c[i] >= 'a' && c[i] <= 'z') || (c[i] >= '0' && c[i] <= '9') || c[i] == '_' ||
          c[i] == '-'))
      return 0;
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 14) return 0;
  vmt_thread_options_t o;
  memset(&o, 0, sizeof(o));
  o.flags = (unsigned)data[0] | (unsigned)data[1] << 8 | (unsigned)data[2] << 16 |
            (unsigned)data[3] << 24;
  o.priority = (int8_t)data[4];
  uint64_t stack = 0;
  for (int i = 0; i < 8; i++) stack |= (uint64_t)data[5 + i] << (8 * i);
  o.stack_size = (size_t)stack;
  size_t n = data[13], p = 14;
  char *name = NULL, *category = NULL;
  if (n != 255) {
    if (n > size - p) n = size - p;
    name = malloc(n + 1);
    if (name == NULL) return 0;
    memcpy(name, data + p, n);
    name[n] = '\0';
    p += n;
  }
  if (!(p < size && data[p] == 255)) {
    size_t m = size - p;
    category = malloc(m + 1);
    if (category == NULL) {
      free(name);
      return 0;
    }
    memcpy(category, data + p, m);
    category[m] = '\0';
  }
  o.name = name;
  o.category = category;

  vmt__thread_opts_t r;
  int rc = vmt__options_resolve(&o, &r);
  FUZZ_REQUIRE(rc == 0 || rc == -EINVAL);
  /* The input sets no guard zones and no timer slack (all 0): those flags alone are always
   * acceptable. */
  const unsigned known = VMT_THREAD_OPT_NAME | VMT_THREAD_OPT_CATEGORY | VMT_THREAD_OPT_DAEMON |
                         VMT_THREAD_OPT_PRIORITY | VMT_THREAD_OPT_STACK_SIZE |
                         VMT_THREAD_OPT_STACK_GUARD | VMT_THREAD_OPT_TIMER_SLACK;
  int ok = (o.flags & ~known) == 0;
  if (o.flags & VMT_THREAD_OPT_NAME) {
    size_t len = name ? strlen(name) : 0;
    ok = ok && name != NULL && len >= 1 && len <= VMT_THREAD_NAME_MAX &&
         fuzz_utf8_valid((const unsigned char *)name, len);
  }
  if (o.flags & VMT_THREAD_OPT_CATEGORY) ok = ok && category_ok(category);
  if (o.flags & VMT_THREAD_OPT_PRIORITY)
    ok = ok && o.priority >= VMT_THREAD_MIN_PRIORITY && o.priority <= VMT_THREAD_MAX_PRIORITY;
  FUZZ_REQUIRE((rc == 0) == ok);
  FUZZ_REQUIRE(vmt__utf8_valid(name ? name : "", name ? strlen(name) : 0) ==
               fuzz_utf8_valid((const unsigned char *)(name ? name : ""), name ? strlen(name) : 0));
  if (rc == 0) {
    if (o.flags & VMT_THREAD_OPT_STACK_SIZE) {
      size_t s = r.stack_size, req = o.stack_size;
      if (req == 0) {
        FUZZ_REQUIRE(s == 0);
      } else {
        FUZZ_REQUIRE(s % 4096 == 0 && s >= VMT__STACK_MIN_BYTES && s <= VMT__STACK_MAX_BYTES);
        FUZZ_REQUIRE(s >= req || s == VMT__STACK_MAX_BYTES);
      }
    } else {
      FUZZ_REQUIRE(r.stack_size == 0);
    }
    if (o.flags & VMT_THREAD_OPT_NAME) {
      char os_name[16];
      memset(os_name, 0x55, sizeof(os_name));
      vmt_os_native_name(name, os_name);
      size_t k = strnlen(os_name, sizeof(os_name));
      FUZZ_REQUIRE(k < sizeof(os_name));
      FUZZ_REQUIRE(k <= VMT_THREAD_OS_NAME_MAX && memcmp(os_name, name, k) == 0);
      FUZZ_REQUIRE(fuzz_utf8_valid((const unsigned char *)os_name, k));
      size_t len = strlen(name);
      FUZZ_REQUIRE(len > VMT_THREAD_OS_NAME_MAX || k == len);
      FUZZ_REQUIRE(len <= VMT_THREAD_OS_NAME_MAX || k >= VMT_THREAD_OS_NAME_MAX - 3);
    }
  }
  free(name);
  free(category);
  return 0;
}
