/*
 * runtime/management/dump_json.c: the thread dump as JSON, for tools that parse rather than
 * read. The layout follows what `jcmd <pid> Thread.dump_to_file -format=json` writes on JDK 21
 * and later (jdk.internal.vm.ThreadDumper), so a tool written for HotSpot's finds its way:
 *
 *   {"threadDump": {"processId": "4242", "time": "2026-12-01T03:01:12Z",
 *                   "runtimeVersion": "vmthread 0.1.0",
 *                   "threadContainers": [{"container": "<root>", "parent": null, "owner": null,
 *                                         "threads": [THREAD...], "threadCount": "4"}]}}
 *   THREAD: {"tid": "12", "time": ..., "name": "worker-1", "state": "BLOCKED",
 *            "blockedOn" | "waitingOn": "name@hexid", or "parkBlocker": {"object": "name@hexid"},
 *            "stack": ["pkg.Class.method(File.vm:7)", ...],
 *            "monitorsOwned": [{"depth": 0, "locks": ["name@hexid", ...]}, ...],
 *            and vmthread's own: "category", "daemon", "priority", "cpuTimeNs",
 *            "ownableSynchronizersOwned": ["name@hexid", ...]}
 *
 * As in HotSpot's, 64-bit integers (ids, counts, the pid) are strings, since JSON numbers lose
 * precision beyond 2^53 in many readers; "depth" and "priority" are numbers. Every thread of
 * the runtime is in the one root container. Strings are escaped per RFC 8259; bytes that are
 * not UTF-8 (a native symbol, a VM's frame name) become U+FFFD, so the output always parses.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "runtime/management/management_impl.h"

/* The characters of str, escaped, without the quotes. */
static void json_chars(FILE *out, const char *str) {
  const unsigned char *s = (const unsigned char *)str;
  size_t n = strlen(str);
  for (size_t i = 0; i < n;) {
    unsigned c = s[i];
    if (c >= 0x80) {
      size_t len = vmt__utf8_sequence(s + i, n - i);
      if (len == 0) {
        fputs("\\ufffd", out);
        i++;
      } else {
        fwrite(s + i, 1, len, out);
        i += len;
      }
      continue;
    }
    switch (c) {
      case '"': fputs("\\\"", out); break;
      case '\\': fputs("\\\\", out); break;
      case '\n': fputs("\\n", out); break;
      case '\r': fputs("\\r", out); break;
      case '\t': fputs("\\t", out); break;
      case '\b': fputs("\\b", out); break;
      case '\f': fputs("\\f", out); break;
      default:
        if (c < 0x20)
          fprintf(out, "\\u%04x", c);
        else
          fputc((int)c, out);
    }
    i++;
  }
}

static void json_string(FILE *out, const char *str) {
  if (str == NULL) {
    fputs("null", out);
    return;
  }
  fputc('"', out);
  json_chars(out, str);
  fputc('"', out);
}

/* A frame as StackTraceElement.toString() prints one: "fn(file:line)", "fn(file)", "fn". */
static void json_frame(FILE *out, const vmt_stack_frame_t *f) {
  fputc('"', out);
  json_chars(out, f->function ? f->function : "??");
  if (f->file) {
    fputc('(', out);
    json_chars(out, f->file);
    if (f->line >= 0) fprintf(out, ":%d", (int)f->line);
    fputc(')', out);
  }
  fputc('"', out);
}

static void json_blocker(FILE *out, const vmt_thread_info_t *ti) {
  if (!ti->lock) return;
  if (ti->state == VMT_THREAD_BLOCKED) {
    fputs(",\n            \"blockedOn\": ", out);
    json_string(out, ti->lock->name);
  } else if (ti->state_bits & VMT_THREAD_STATE_IN_OBJECT_WAIT) {
    fputs(",\n            \"waitingOn\": ", out);
    json_string(out, ti->lock->name);
  } else {
    fputs(",\n            \"parkBlocker\": {\n              \"object\": ", out);
    json_string(out, ti->lock->name);
    fputs("\n            }", out);
  }
}

/* monitorsOwned: one entry per depth that holds monitors, outermost frames last, as HotSpot's;
 * monitors with no known frame (depth -1) come last. */
static void json_monitors(FILE *out, const vmt_thread_info_t *ti) {
  if (ti->locked_monitor_count == 0) return;
  fputs(",\n            \"monitorsOwned\": [", out);
  bool first_entry = true;
  for (int64_t depth = 0; depth <= (int64_t)ti->frame_count; depth++) {
    int32_t d = depth == (int64_t)ti->frame_count ? -1 : (int32_t)depth;
    bool any = false;
    for (size_t i = 0; i < ti->locked_monitor_count; i++) {
      const vmt_monitor_info_t *m = &ti->locked_monitors[i];
      bool here = d >= 0 ? m->stack_depth == d
                         : m->stack_depth < 0 || (size_t)m->stack_depth >= ti->frame_count;
      if (!here) continue;
      if (!any) {
        fprintf(out,
                "%s\n              {\n                \"depth\": %d,\n                \"locks\": [",
                first_entry ? "" : ",", (int)d);
        first_entry = false;
      }
      fprintf(out, "%s\n                  ", any ? "," : "");
      json_string(out, m->lock.name);
      any = true;
    }
    if (any) fputs("\n                ]\n              }", out);
  }
  fputs("\n            ]", out);
}

static void json_thread(FILE *out, const vmt_thread_info_t *ti, const char *when) {
  fprintf(out,
          "          {\n            \"tid\": \"%lld\",\n            \"time\": ", (long long)ti->id);
  json_string(out, when);
  fputs(",\n            \"name\": ", out);
  json_string(out, ti->name);
  fprintf(out, ",\n            \"state\": \"%s\"", vmt_thread_state_name(ti->state));
  json_blocker(out, ti);
  fputs(",\n            \"stack\": [", out);
  for (size_t i = 0; i < ti->frame_count; i++) {
    fputs(i ? ",\n              " : "\n              ", out);
    json_frame(out, &ti->frames[i]);
  }
  fputs(ti->frame_count ? "\n            ]" : "]", out);
  json_monitors(out, ti);
  fputs(",\n            \"category\": ", out);
  json_string(out, ti->category);
  fprintf(out, ",\n            \"daemon\": %s,\n            \"priority\": %d",
          ti->daemon ? "true" : "false", (int)ti->priority);
  if (ti->cpu_time_ns >= 0)
    fprintf(out, ",\n            \"cpuTimeNs\": \"%lld\"", (long long)ti->cpu_time_ns);
  fputs(",\n            \"ownableSynchronizersOwned\": [", out);
  for (size_t i = 0; i < ti->locked_synchronizer_count; i++) {
    fputs(i ? ",\n              " : "\n              ", out);
    json_string(out, ti->locked_synchronizers[i].name);
  }
  fputs(ti->locked_synchronizer_count ? "\n            ]\n          }" : "]\n          }", out);
}

int vmt__mx_write_dump_json(FILE *out, const void *caller_pc) {
  vmt_thread_info_t **infos = NULL;
  size_t n = 0;
  int rc = vmt__mx_dump_all(VMT_MX_INFO_LOCKED_MONITORS | VMT_MX_INFO_LOCKED_SYNCHRONIZERS,
                            VMT_MX_MAX_DEPTH_ALL, caller_pc, &infos, &n);
  if (rc) return rc;
  char when[128];
  vmt__mx_format_utc_now(when, sizeof(when), true);
  fprintf(out, "{\n  \"threadDump\": {\n    \"processId\": \"%lld\",\n    \"time\": ",
          (long long)getpid());
  json_string(out, when);
  fprintf(out, ",\n    \"runtimeVersion\": \"vmthread %s\",\n    \"threadContainers\": [\n",
          vmt_version());
  fputs(
      "      {\n        \"container\": \"<root>\",\n        \"parent\": null,\n"
      "        \"owner\": null,\n        \"threads\": [",
      out);
  for (size_t i = 0; i < n; i++) {
    fputs(i ? ",\n" : "\n", out);
    json_thread(out, infos[i], when);
  }
  fprintf(out, "%s],\n        \"threadCount\": \"%zu\"\n      }\n    ]\n  }\n}\n",
          n ? "\n        " : "", n);
  vmt_mx_thread_info_array_free(infos, n);
  if (fflush(out) != 0 || ferror(out)) return -EIO;
  return 0;
}

__attribute__((noinline)) int vmt_mx_print_thread_dump_json(FILE *out) {
  if (!out) return -EINVAL;
  int cancel = vmt__mx_cancel_off();   /* the stream's writes are cancellation points */
  int rc = vmt__mx_write_dump_json(out, VMT__MX_CALLER_PC());
  vmt__mx_cancel_restore(cancel);
  return rc;
}

__attribute__((noinline)) int vmt_mx_thread_dump_json_to_string(char **out, size_t *len) {
  return vmt__mx_dump_to_string(vmt__mx_write_dump_json, VMT__MX_CALLER_PC(), out, len);
}
