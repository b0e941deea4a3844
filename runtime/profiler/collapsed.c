/*
 * runtime/profiler/collapsed.c: the collapsed-stack output, "frame;frame;frame value" per line,
 * root first: the format of Brendan Gregg's stackcollapse scripts, which flamegraph.pl,
 * speedscope (https://www.speedscope.app, "Import") and the Firefox profiler
 * (https://profiler.firefox.com, "Load a profile from file") read as they are.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/profiler/profiler_impl.h"

static int collect(uint32_t flags, vmt__prof_line_t **lines, size_t *n) {
  if (flags & ~(uint32_t)VMT__PROF_OUT_ALL) return -EINVAL;
  vmt__prof_profile_t *p;
  int rc = vmt__prof_output_begin(&p);
  if (rc) return rc;
  rc = vmt__prof_lines(p, flags, lines, n);
  vmt__prof_output_end(p);
  return rc;
}

int vmt_prof_write_collapsed(FILE *out, uint32_t flags) {
  if (out == NULL) return -EINVAL;
  vmt__prof_line_t *lines;
  size_t n;
  int rc = collect(flags, &lines, &n);
  if (rc) return rc;
  for (size_t i = 0; i < n && rc == 0; i++)
    if (fprintf(out, "%s %" PRId64 "\n", lines[i].text, lines[i].value) < 0) rc = -EIO;
  vmt__prof_lines_free(lines, n);
  if (rc == 0 && (fflush(out) != 0 || ferror(out))) rc = -EIO;
  return rc;
}

int vmt_prof_collapsed_to_string(uint32_t flags, char **out, size_t *len) {
  if (out == NULL || len == NULL) return -EINVAL;
  *out = NULL;
  *len = 0;
  vmt__prof_line_t *lines;
  size_t n;
  int rc = collect(flags, &lines, &n);
  if (rc) return rc;
  size_t total = 1;
  for (size_t i = 0; i < n; i++) total += strlen(lines[i].text) + 22;
  char *buf = vmt__fault_hit(VMT__FAULT_ALLOC) ? NULL : malloc(total);
  if (buf == NULL) {
    vmt__prof_lines_free(lines, n);
    return -ENOMEM;
  }
  size_t at = 0;
  for (size_t i = 0; i < n; i++)
    at += (size_t)snprintf(buf + at, total - at, "%s %" PRId64 "\n", lines[i].text,
                           lines[i].value);
  buf[at] = '\0';
  vmt__prof_lines_free(lines, n);
  *out = buf;
  *len = at;
  return 0;
}
