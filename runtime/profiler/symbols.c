/*
 * runtime/profiler/symbols.c: the names of a profile's frames, each distinct frame named once
 * and cached for the profile's life.
 *
 * A VM frame is named by the VM's symbolizer (vmt_prof_set_walker); a value it does not know
 * (-ENOENT), and every native frame, by the port (libdw, else dladdr: os_linux/symbols.c):
 * "function", or "function (file.c:42)" when lines are asked for and known; an address no
 * symbol covers is "module+0x1f0", or "0x7f..." outside every object. Names never contain ';'
 * or a line break, which would break the collapsed format: those become ':' and ' '.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/profiler/profiler_impl.h"

typedef struct name_entry {
  uintptr_t value;
  uint32_t key;      /* kind, return address, lines */
  char *name;
} name_entry_t;

struct vmt__prof_names {
  vmt_os_symbolizer_t *sym;
  name_entry_t *table;
  size_t count, cap;
};

void vmt__prof_names_free(struct vmt__prof_names *names) {
  if (names == NULL) return;
  for (size_t i = 0; i < names->cap; i++) free(names->table[i].name);
  free(names->table);
  vmt_os_symbolizer_close(names->sym);
  free(names);
}

static size_t slot_of(uintptr_t value, uint32_t key, size_t cap) {
  uint64_t h = ((uint64_t)value ^ ((uint64_t)key << 56)) * 0x9e3779b97f4a7c15ull;
  return (size_t)(h >> 17) & (cap - 1);
}

static bool grow(struct vmt__prof_names *n) {
  size_t cap = n->cap ? n->cap * 2 : 256;
  name_entry_t *t = vmt__fault_hit(VMT__FAULT_ALLOC) ? NULL : calloc(cap, sizeof(*t));
  if (t == NULL) return false;
  for (size_t i = 0; i < n->cap; i++) {
    if (n->table[i].name == NULL) continue;
    size_t j = slot_of(n->table[i].value, n->table[i].key, cap);
    while (t[j].name) j = (j + 1) & (cap - 1);
    t[j] = n->table[i];
  }
  free(n->table);
  n->table = t;
  n->cap = cap;
  return true;
}

static void sanitize(char *s) {
  for (; *s; s++)
    if (*s == ';') *s = ':';
    else if (*s == '\n' || *s == '\r') *s = ' ';
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

static void native_name(struct vmt__prof_names *n, uintptr_t pc, bool return_address, bool lines,
                        char *buf, size_t len) {
  vmt_os_symbol_t s;
  int rc = vmt_os_symbolize(n->sym, pc, return_address, &s);
  if (rc != 0) {
    snprintf(buf, len, "0x%" PRIxPTR, pc);
  } else if (s.function[0] == '\0') {
    snprintf(buf, len, "%s+0x%" PRIxPTR, s.module[0] ? s.module : "??", s.offset);
  } else if (lines && s.file[0] && s.line > 0) {
    snprintf(buf, len, "%s (%s:%d)", s.function, base_name(s.file), (int)s.line);
  } else {
    snprintf(buf, len, "%s", s.function);
  }
}

const char *vmt__prof_frame_name(vmt__prof_profile_t *p, const vmt__prof_stack_t *s, uint32_t i,
                                 bool lines) {
  struct vmt__prof_names *n = p->names;
  if (n == NULL) {
    n = vmt__fault_hit(VMT__FAULT_ALLOC) ? NULL : calloc(1, sizeof(*n));
    if (n == NULL) return NULL;
    n->sym = vmt_os_symbolizer_open();
    if (n->sym == NULL) {
      free(n);
      return NULL;
    }
    p->names = n;
  }
  uintptr_t value = s->frames[i];
  /* Native frames below the innermost are return addresses: their call is the byte before. */
  bool return_address = s->kind == VMT__PROF_KIND_NATIVE && i > 0;
  uint32_t key = s->kind | (return_address ? 16u : 0u) | (lines ? 32u : 0u);
  if (n->cap) {
    for (size_t j = slot_of(value, key, n->cap);; j = (j + 1) & (n->cap - 1)) {
      name_entry_t *e = &n->table[j];
      if (e->name == NULL) break;
      if (e->value == value && e->key == key) return e->name;
    }
  }
  if (2 * (n->count + 1) > n->cap && !grow(n)) return NULL;
  char buf[600];
  buf[0] = '\0';
  bool named = false;
  if (s->kind == VMT__PROF_KIND_VM) {
    if (p->cfg.symbolizer) {
      named = p->cfg.symbolizer(value, buf, sizeof(buf), p->cfg.walker_ctx) == 0;
      buf[sizeof(buf) - 1] = '\0';
    }
    /* A value the VM does not name is taken for a code address. */
    if (!named) native_name(n, value, false, lines, buf, sizeof(buf));
  } else {
    native_name(n, value, return_address, lines, buf, sizeof(buf));
  }
  sanitize(buf);
  char *copy = vmt__fault_hit(VMT__FAULT_ALLOC) ? NULL : strdup(buf);
  if (copy == NULL) return NULL;
  size_t j = slot_of(value, key, n->cap);
  while (n->table[j].name) j = (j + 1) & (n->cap - 1);
  n->table[j] = (name_entry_t){.value = value, .key = key, .name = copy};
  n->count++;
  return copy;
}
