/*
 * test/fuzz/fuzz.h: what the fuzz targets share. Each target defines LLVMFuzzerTestOneInput;
 * scripts/fuzz links it with libFuzzer (clang -fsanitize=fuzzer,address,undefined), and the
 * Bazel replay tests (replay_main.c) run the same function over the committed corpus and the
 * regression inputs with gcc, under every test configuration. A broken property aborts with a
 * message (libFuzzer then saves the input as a crash).
 */
#ifndef VMT_TEST_FUZZ_H
#define VMT_TEST_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_REQUIRE(cond)                                                          \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      fprintf(stderr, "%s:%d: property violated: %s\n", __FILE__, __LINE__, #cond); \
      abort();                                                                      \
    }                                                                               \
  } while (0)

/* An independent UTF-8 check (RFC 3629 table 3-7, byte ranges), to judge the runtime's own. */
static inline int fuzz_utf8_valid(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned char c = s[i];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c <= 0x7F) {
      i++;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c == 0xE0) {
      len = 3, lo = 0xA0;
    } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
      len = 3;
    } else if (c == 0xED) {
      len = 3, hi = 0x9F;
    } else if (c == 0xF0) {
      len = 4, lo = 0x90;
    } else if (c >= 0xF1 && c <= 0xF3) {
      len = 4;
    } else if (c == 0xF4) {
      len = 4, hi = 0x8F;
    } else {
      return 0;
    }
    if (n - i < len) return 0;
    if (s[i + 1] < lo || s[i + 1] > hi) return 0;
    for (size_t k = 2; k < len; k++)
      if (s[i + k] < 0x80 || s[i + k] > 0xBF) return 0;
    i += len;
  }
  return 1;
}

#endif /* VMT_TEST_FUZZ_H */
