/*
 * runtime/profiler/output.c: what the outputs share: access to the profile (the profiler's lock,
 * a fresh drain, the profile's lock), a stack's frames root first with the root frames the
 * flags ask for, and the merged, sorted lines of the collapsed format, which the flame graph
 * is built from too. Distinct stacks can have the same names (two pcs in one function): their
 * lines are merged, so every line of the output is unique.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/profiler/profiler_impl.h"

int vmt__prof_output_begin(vmt__prof_profile_t **out) {
  pthread_mutex_lock(&vmt__prof.lock);
  vmt__prof_profile_t *p = vmt__prof.profile;
  if (p == NULL) {
    pthread_mutex_unlock(&vmt__prof.lock);
    return -ENOENT;
  }
  if (vmt__prof.running) vmt__prof_drain_now();
  pthread_mutex_lock(&p->lock);
  *out = p;
  return 0;
}

void vmt__prof_output_end(vmt__prof_profile_t *p) {
  pthread_mutex_unlock(&p->lock);
  pthread_mutex_unlock(&vmt__prof.lock);
}

int64_t vmt__prof_stack_value(const vmt__prof_profile_t *p, const vmt__prof_stack_t *s,
                              uint32_t flags) {
  return (flags & VMT_PROF_OUT_NS) ? s->weight * p->cfg.period_ns : s->weight;
}

/* A root frame's label: no ';' nor line break (a thread's name may hold anything). */
static void label(char *dst, size_t cap, const char *src) {
  snprintf(dst, cap, "%s", src);
  for (char *c = dst; *c; c++)
    if (*c == ';') *c = ':';
    else if (*c == '\n' || *c == '\r') *c = ' ';
}

int vmt__prof_stack_frames(vmt__prof_profile_t *p, const vmt__prof_stack_t *s, uint32_t flags,
                           vmt__prof_frame_fn fn, void *arg, size_t *depth) {
  size_t d = 0;
  int rc;
  char buf[VMT_THREAD_NAME_MAX + 32];
  if (flags & VMT_PROF_OUT_CATEGORIES) {
    label(buf, sizeof(buf), s->thread->category);
    if ((rc = fn(arg, buf, d++))) return rc;
  }
  if (flags & VMT_PROF_OUT_THREADS) {
    char named[VMT_THREAD_NAME_MAX + 32];
    snprintf(named, sizeof(named), "%s [%" PRId64 "]", s->thread->name, s->thread->id);
    label(buf, sizeof(buf), named);
    if ((rc = fn(arg, buf, d++))) return rc;
  }
  for (uint32_t i = s->frame_count; i-- > 0;) {
    const char *name = vmt__prof_frame_name(p, s, i, (flags & VMT_PROF_OUT_LINES) != 0);
    if (name == NULL) return -ENOMEM;
    if ((rc = fn(arg, name, d++))) return rc;
  }
  if (depth) *depth = d;
  return 0;
}

/* ---- Lines ------------------------------------------------------------------------------ */
typedef struct builder {
  char *buf;
  size_t len, cap;
} builder_t;

static int put(builder_t *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (b->len + n + 1 > cap) cap *= 2;
    char *bigger = vmt__fault_hit(VMT__FAULT_ALLOC) ? NULL : realloc(b->buf, cap);
    if (bigger == NULL) return -ENOMEM;
    b->buf = bigger;
    b->cap = cap;
  }
  memcpy(b->buf + b->len, s, n);
  b->len += n;
  b->buf[b->len] = '\0';
  return 0;
}

static int add_frame(void *arg, const char *frame, size_t depth) {
  builder_t *b = arg;
  int rc = depth ? put(b, ";", 1) : 0;
  return rc ? rc : put(b, frame, strlen(frame));
}

/* Frame by frame: ';' (which no name contains) sorts below every other byte, so the lines
 * through one frame are adjacent, as the flame graph's tree building needs (flamegraph.c,
 * insert). With strcmp, "foo;bar" sorted after "foo.cold" ('.' < ';') and "foo" became two
 * boxes. Equal texts still compare equal, for the merge below. */
static int by_text(const void *a, const void *b) {
  const unsigned char *x = (const unsigned char *)((const vmt__prof_line_t *)a)->text;
  const unsigned char *y = (const unsigned char *)((const vmt__prof_line_t *)b)->text;
  while (*x && *x == *y) x++, y++;
  if (*x == *y) return 0;
  if (*x == '\0' || *y == '\0') return *x == '\0' ? -1 : 1;
  if (*x == ';' || *y == ';') return *x == ';' ? -1 : 1;
  return *x < *y ? -1 : 1;
}

void vmt__prof_lines_free(vmt__prof_line_t *lines, size_t n) {
  if (lines == NULL) return;
  for (size_t i = 0; i < n; i++) free(lines[i].text);
  free(lines);
}

int vmt__prof_lines(vmt__prof_profile_t *p, uint32_t flags, vmt__prof_line_t **out, size_t *count) {
  *out = NULL;
  *count = 0;
  size_t n = 0;
  vmt__prof_line_t *lines =
      vmt__fault_hit(VMT__FAULT_ALLOC) ? NULL
                                       : calloc(p->stack_count ? p->stack_count : 1, sizeof(*lines));
  if (lines == NULL) return -ENOMEM;
  for (size_t i = 0; i < p->stack_cap; i++) {
    const vmt__prof_stack_t *s = p->stack_table[i];
    if (s == NULL) continue;
    builder_t b = {0};
    int rc = vmt__prof_stack_frames(p, s, flags, add_frame, &b, NULL);
    if (rc == 0 && b.buf == NULL) rc = put(&b, "", 0);
    if (rc) {
      free(b.buf);
      vmt__prof_lines_free(lines, n);
      return rc;
    }
    lines[n].text = b.buf;
    lines[n].value = vmt__prof_stack_value(p, s, flags);
    n++;
  }
  qsort(lines, n, sizeof(*lines), by_text);
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    if (kept && strcmp(lines[kept - 1].text, lines[i].text) == 0) {
      lines[kept - 1].value += lines[i].value;
      free(lines[i].text);
      continue;
    }
    lines[kept++] = lines[i];
  }
  *out = lines;
  *count = kept;
  return 0;
}

/* ---- Files ------------------------------------------------------------------------------ */
static int write_one(const char *prefix, const char *ext, int (*fn)(FILE *, const char *),
                     const char *title) {
  char path[4096];
  if ((size_t)snprintf(path, sizeof(path), "%s.%s", prefix, ext) >= sizeof(path))
    return -ENAMETOOLONG;
  FILE *f = fopen(path, "w");
  if (f == NULL) return -errno;
  int rc = fn(f, title);
  if (fclose(f) != 0 && rc == 0) rc = -EIO;
  return rc;
}

static int collapsed(FILE *f, const char *title) {
  (void)title;
  return vmt_prof_write_collapsed(f, VMT_PROF_OUT_THREADS);
}
static int flamegraph(FILE *f, const char *title) {
  return vmt_prof_write_flamegraph(f, title, VMT_PROF_OUT_CATEGORIES | VMT_PROF_OUT_THREADS);
}
static int table(FILE *f, const char *title) {
  (void)title;
  return vmt_prof_write_table(f);
}

int vmt__prof_write_files(const char *prefix) {
  int rc = write_one(prefix, "collapsed", collapsed, NULL);
  if (rc == 0) rc = write_one(prefix, "svg", flamegraph, prefix);
  if (rc == 0) rc = write_one(prefix, "txt", table, NULL);
  return rc;
}
