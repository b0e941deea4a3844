/*
 * test/process_state_internal_test.c: the home of the process-wide state (runtime/process.h) is
 * complete. Every writable variable that an object file of the library defines (nm: data, bss,
 * thread-local) must be named by a row of that file; every name a row gives must exist; the rows
 * with fork handlers have distinct ranks in the layer their file belongs to, and a lock held
 * across fork is released on both sides. The listing (test/process_state_symbols.txt) is made
 * at build time from the objects //:vmthread links (build/object_symbols.bzl), so a new file or
 * package is covered without anyone adding it here.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/process.h"

#define LISTING "test/process_state_symbols.txt"

typedef struct symbol {
  char file[256];   /* the source file, as __FILE__ gives it: runtime/sync/lock.c */
  char name[256];
  bool covered;
} symbol_t;

static symbol_t *symbols;
static size_t symbol_count;

/* "<...>/bin/runtime/sync/_objs/sync/lock.pic.o" -> "runtime/sync/lock.c" (0), else -1. */
static int source_of(const char *object, char *out, size_t len) {
  const char *bin = strstr(object, "/bin/");
  const char *objs = strstr(object, "/_objs/");
  if (bin == NULL || objs == NULL || objs < bin) return -1;
  const char *base = strrchr(objs + strlen("/_objs/"), '/');
  if (base == NULL) return -1;
  base++;
  size_t base_len = strcspn(base, ".");
  const char *pkg = bin + strlen("/bin/");
  int n = snprintf(out, len, "%.*s/%.*s.c", (int)(objs - pkg), pkg, (int)base_len, base);
  return n > 0 && (size_t)n < len ? 0 : -1;
}

/* What the sanitizers and the compiler add of their own; and the rows themselves. */
static bool ignored(const char *name) {
  static const char *const prefixes[] = {".", "__asan", "__odr_asan", "__tsan", "__ubsan",
                                         "__sancov", "vmt__process_state_"};
  for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
    if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0) return true;
  return false;
}

/* nm types of writable storage: b/B bss and tbss, d/D data and tdata, g/G s/S small data,
 * v/V weak objects, u unique globals, C common. Text (t/T) and read-only data (r/R) are not
 * state. */
static bool writable(char type) { return strchr("bBdDgGsSvVuC", type) != NULL; }

static int setup(void **state) {
  (void)state;
  FILE *f = fopen(LISTING, "r");
  if (f == NULL) {
    fprintf(stderr, "cannot open %s: %s\n", LISTING, strerror(errno));
    return -1;
  }
  size_t cap = 0;
  char line[1024];
  while (fgets(line, sizeof(line), f)) {
    /* "<object>:<value> <type> <name>" */
    char *colon = strrchr(line, ':');
    if (colon == NULL) continue;
    *colon = '\0';
    char value[64], type[8], name[256];
    if (sscanf(colon + 1, "%63s %7s %255s", value, type, name) != 3) continue;
    if (!writable(type[0]) || ignored(name)) continue;
    /* A function-scope static is "name.N". */
    char *dot = strchr(name, '.');
    if (dot) *dot = '\0';
    if (symbol_count == cap) {
      cap = cap ? 2 * cap : 128;
      symbols = realloc(symbols, cap * sizeof(*symbols));
      if (symbols == NULL) return -1;
    }
    symbol_t *s = &symbols[symbol_count];
    if (source_of(line, s->file, sizeof(s->file)) != 0) {
      fprintf(stderr, "object path not understood: %s\n", line);
      return -1;
    }
    snprintf(s->name, sizeof(s->name), "%s", name);
    s->covered = false;
    symbol_count++;
  }
  fclose(f);
  return symbol_count > 0 ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  free(symbols);
  return 0;
}

/* True if the space-separated list names name. */
static bool names(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
    if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return true;
  return false;
}

static void every_writable_symbol_has_a_row(void **state) {
  (void)state;
  size_t count;
  const vmt__process_state_t *rows = vmt__process_states(&count);
  assert_true(count > 0);
  size_t missing = 0;
  for (size_t i = 0; i < symbol_count; i++) {
    for (size_t r = 0; r < count && !symbols[i].covered; r++)
      if (strcmp(rows[r].file, symbols[i].file) == 0 && names(rows[r].symbols, symbols[i].name))
        symbols[i].covered = true;
    if (!symbols[i].covered) {
      fprintf(stderr, "no row in runtime/process.h's table for %s (%s): declare one with "
                      "VMT__PROCESS_STATE beside it (docs/design.md, \"fork\")\n",
              symbols[i].name, symbols[i].file);
      missing++;
    }
  }
  print_message("%zu writable symbols in %zu rows\n", symbol_count, count);
  assert_int_equal(missing, 0);
}

static void every_name_in_a_row_exists(void **state) {
  (void)state;
  size_t count;
  const vmt__process_state_t *rows = vmt__process_states(&count);
  size_t stale = 0;
  for (size_t r = 0; r < count; r++) {
    char list[1024];
    snprintf(list, sizeof(list), "%s", rows[r].symbols);
    for (char *save = NULL, *name = strtok_r(list, " ", &save); name;
         name = strtok_r(NULL, " ", &save)) {
      bool found = false;
      for (size_t i = 0; i < symbol_count && !found; i++)
        found = strcmp(symbols[i].file, rows[r].file) == 0 && strcmp(symbols[i].name, name) == 0;
      if (!found) {
        fprintf(stderr, "row of %s names %s, which that file does not define\n", rows[r].file,
                name);
        stale++;
      }
    }
  }
  assert_int_equal(stale, 0);
}

/* The layer a file belongs to, as its block of ranks [*base, *end) (runtime/process.h): from
 * its base to the next layer's, top to bottom. */
static bool layer_block(const char *file, int *base, int *end) {
  static const struct {
    const char *prefix;
    int rank;
  } layers[] = {
      {"runtime/profiler/", VMT__RANK_PROFILER},
      {"runtime/management/", VMT__RANK_MANAGEMENT}, {"runtime/thread/", VMT__RANK_THREAD},
      {"runtime/sync/", VMT__RANK_SYNC},             {"runtime/vmservices/", VMT__RANK_VMSERVICES},
      {"runtime/registry/", VMT__RANK_REGISTRY},     {"os_linux/", VMT__RANK_PORT},
      {"runtime/fault.c", VMT__RANK_FAULT},
  };
  size_t n = sizeof(layers) / sizeof(layers[0]);
  for (size_t i = 0; i < n; i++)
    if (strncmp(file, layers[i].prefix, strlen(layers[i].prefix)) == 0) {
      *base = layers[i].rank;
      *end = i + 1 < n ? layers[i + 1].rank : layers[i].rank + 100;
      return true;
    }
  return false;
}

static void rows_are_well_formed(void **state) {
  (void)state;
  size_t count;
  const vmt__process_state_t *rows = vmt__process_states(&count);
  for (size_t r = 0; r < count; r++) {
    const vmt__process_state_t *s = &rows[r];
    print_message("%-28s %-6d %s\n", s->file, s->rank, s->symbols);
    assert_non_null(s->symbols);
    assert_non_null(s->fork);
    assert_true(s->rule >= VMT__FORK_KEEP && s->rule <= VMT__FORK_DROP);
    bool handlers = s->prepare || s->parent || s->child;
    if (s->rule == VMT__FORK_HOLD) {
      /* Taken before fork, released on both sides. */
      assert_non_null(s->prepare);
      assert_non_null(s->parent);
      assert_non_null(s->child);
    }
    if (s->prepare) assert_non_null(s->parent);
    if (!handlers) continue;
    /* Its layer's block of ranks: upper layers' locks are taken first. */
    int base = -1, end = -1;
    if (!layer_block(s->file, &base, &end) || s->rank < base || s->rank >= end)
      fail_msg("%s: rank %d outside its layer's block %d..%d", s->file, s->rank, base, end - 1);
    for (size_t o = 0; o < r; o++)
      if ((rows[o].prepare || rows[o].parent || rows[o].child) && rows[o].rank == s->rank)
        fail_msg("%s and %s share rank %d: their order would depend on the link", s->file,
                 rows[o].file, s->rank);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_writable_symbol_has_a_row),
      cmocka_unit_test(every_name_in_a_row_exists),
      cmocka_unit_test(rows_are_well_formed),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
