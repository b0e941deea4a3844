/*
 * test/fuzz/replay_main.c: runs a fuzz target's LLVMFuzzerTestOneInput over every file of the
 * directories given as arguments (the committed seed corpus and the regression inputs), so the
 * inputs that once broke a property stay tested in every build configuration without clang.
 * Prints "N passed, 0 failed" (a broken property aborts).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/fuzz/fuzz.h"

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return -1;
  size_t cap = 4096, n = 0;
  uint8_t *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      uint8_t *bigger = realloc(buf, cap * 2);
      if (bigger == NULL) break;
      buf = bigger;
      cap *= 2;
    }
  }
  fclose(f);
  if (buf == NULL) return -1;
  LLVMFuzzerTestOneInput(buf, n);
  free(buf);
  return 0;
}

int main(int argc, char **argv) {
  int passed = 0, failed = 0;
  for (int a = 1; a < argc; a++) {
    DIR *d = opendir(argv[a]);
    if (d == NULL) continue;   /* a target may have no regression inputs yet */
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.') continue;
      char path[4096];
      snprintf(path, sizeof(path), "%s/%s", argv[a], e->d_name);
      if (replay_file(path) == 0)
        passed++;
      else
        failed++;
    }
    closedir(d);
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0 || passed == 0;
}
