/*
 * test/fuzz/thread_dump_json_fuzz.c: fuzz target for the JSON thread dump
 * (vmt_mx_thread_dump_json_to_string) with hostile strings everywhere the dump copies one: the
 * thread's name, the name of a monitor it holds, and the function and file names of the frames
 * a stack walker reports (any bytes: quotes, backslashes, control characters, invalid UTF-8).
 *
 * Input: byte 0 says what to hold and how many frames (0..7) the walker reports, byte 1 which
 * frame holds the monitor and which frames have a line number; the rest, split at NUL bytes,
 * is the thread's name, the monitor's name, then each frame's function and file.
 *
 * Properties, each judged by code written here and not the runtime's: the dump is one strict
 * JSON value (test/json_check.h, RFC 8259); the thread's "name" decodes (escapes undone) to
 * exactly the name it was given (valid UTF-8 only, else the default name is used); each
 * "stack" element decodes to the frame as Java prints it, "fn(file:line)", "fn(file)" or "fn",
 * every byte that starts no well-formed UTF-8 sequence replaced by U+FFFD (the independent
 * check is fuzz_utf8_valid, RFC 3629's byte table); the monitor appears among the locks,
 * decoded to its display name likewise; and nothing leaks (LeakSanitizer).
 */
#include <errno.h>
#include <string.h>

#include "test/fuzz/fuzz.h"
#include "test/json_check.h"
#include "vmthread.h"

#define MAX_FRAMES 7
#define FIELD_MAX 600   /* bytes of a field kept; the rest of a long field is dropped */

typedef struct walk_input {
  int frames;
  const char *function[MAX_FRAMES];
  const char *file[MAX_FRAMES];
  int32_t line[MAX_FRAMES];
  int holds_at;                 /* frame that reports the monitor, -1 for none */
  vmt_monitor_t *monitor;
} walk_input_t;

static walk_input_t walk;

static int walker(vmt_thread_t *t, vmt_stack_frame_t *frames, int32_t max, void *ctx) {
  (void)t, (void)ctx;
  int n = walk.frames < max ? walk.frames : max;
  for (int i = 0; i < n; i++)
    frames[i] = (vmt_stack_frame_t){.function = (char *)walk.function[i],
                                    .file = (char *)walk.file[i],
                                    .line = walk.line[i],
                                    .pc = 0};
  if (walk.holds_at >= 0 && walk.holds_at < n && walk.monitor)
    FUZZ_REQUIRE(vmt_mx_frame_holds_monitor(walk.holds_at, walk.monitor) == 0);
  return n;
}

/* A growable byte string. */
typedef struct bytes {
  char *s;
  size_t n, cap;
} bytes_t;

static void put(bytes_t *b, const char *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    size_t cap = (b->n + n + 1) * 2;
    char *bigger = realloc(b->s, cap);
    FUZZ_REQUIRE(bigger != NULL);
    b->s = bigger;
    b->cap = cap;
  }
  memcpy(b->s + b->n, s, n);
  b->n += n;
  b->s[b->n] = '\0';
}

/* What the dump must show for str: each byte that starts no well-formed sequence becomes
 * U+FFFD (EF BF BD); the shortest prefix that is valid UTF-8 on its own is one character. */
static void put_replaced(bytes_t *b, const char *str) {
  const unsigned char *s = (const unsigned char *)str;
  size_t n = strlen(str);
  for (size_t i = 0; i < n;) {
    size_t k = 1;
    while (k <= 4 && (i + k > n || !fuzz_utf8_valid(s + i, k))) k++;
    if (k <= 4) {
      put(b, (const char *)s + i, k);
      i += k;
    } else {
      put(b, "\xEF\xBF\xBD", 3);
      i++;
    }
  }
}

static int hex(unsigned c) {
  return c <= '9' ? (int)c - '0' : (int)(c | 0x20) - 'a' + 10;
}

static void put_code_point(bytes_t *b, uint32_t cp) {
  char u[4];
  size_t n;
  if (cp < 0x80) {
    u[0] = (char)cp, n = 1;
  } else if (cp < 0x800) {
    u[0] = (char)(0xC0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
  } else if (cp < 0x10000) {
    u[0] = (char)(0xE0 | cp >> 12), u[1] = (char)(0x80 | (cp >> 6 & 0x3F));
    u[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
  } else {
    u[0] = (char)(0xF0 | cp >> 18), u[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    u[2] = (char)(0x80 | (cp >> 6 & 0x3F)), u[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
  }
  put(b, u, n);
}

/* Decodes the JSON string starting at *p (at its opening quote; json_check has accepted the
 * whole text) into out, and moves *p past its closing quote. */
static void decode_string(const char **p, bytes_t *out) {
  const char *s = *p;
  FUZZ_REQUIRE(*s == '"');
  s++;
  while (*s != '"') {
    if (*s != '\\') {
      put(out, s++, 1);
      continue;
    }
    s++;
    char e = *s++;
    switch (e) {
      case 'b': put(out, "\b", 1); break;
      case 'f': put(out, "\f", 1); break;
      case 'n': put(out, "\n", 1); break;
      case 'r': put(out, "\r", 1); break;
      case 't': put(out, "\t", 1); break;
      case 'u': {
        uint32_t cp = 0;
        for (int i = 0; i < 4; i++) cp = cp << 4 | (uint32_t)hex((unsigned char)*s++);
        FUZZ_REQUIRE(cp < 0xD800 || cp > 0xDFFF);   /* the dump never escapes above U+FFFF */
        put_code_point(out, cp);
        break;
      }
      default: put(out, &e, 1); break;   /* " \ / */
    }
  }
  *p = s + 1;
}

static void clear(bytes_t *b) {
  b->n = 0;
  put(b, "", 0);
}

/* Decodes into out the first string at or after the first occurrence of key at or after from
 * (the next string at all when key is ""); returns where the string ends. */
static const char *decode_next(const char *from, const char *key, bytes_t *out) {
  const char *at = strstr(from, key);
  FUZZ_REQUIRE(at != NULL);
  at = strchr(at + strlen(key), '"');
  FUZZ_REQUIRE(at != NULL);
  clear(out);
  decode_string(&at, out);
  return at;
}

/* Splits data at NUL bytes into at most max fields of at most FIELD_MAX bytes, each copied and
 * terminated. Returns how many; missing fields are "". */
static int split(const uint8_t *data, size_t size, char **fields, int max) {
  int k = 0;
  size_t start = 0;
  for (size_t i = 0; i <= size && k < max; i++) {
    if (i < size && data[i] != 0) continue;
    size_t n = i - start < FIELD_MAX ? i - start : FIELD_MAX;
    fields[k] = malloc(n + 1);
    FUZZ_REQUIRE(fields[k] != NULL);
    memcpy(fields[k], data + start, n);
    fields[k][n] = '\0';
    k++;
    start = i + 1;
  }
  for (int j = k; j < max; j++) fields[j] = calloc(1, 1);
  return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  uint8_t what = data[0], where = data[1];
  enum { FIELDS = 2 + 2 * MAX_FRAMES };
  char *field[FIELDS];
  split(data + 2, size - 2, field, FIELDS);

  const char *name = field[0];
  size_t name_len = strlen(name);
  bool named = name_len > 0 && name_len <= VMT_THREAD_NAME_MAX &&
               fuzz_utf8_valid((const unsigned char *)name, name_len);
  vmt_thread_options_t o = {.flags = named ? VMT_THREAD_OPT_NAME : 0u, .name = name};
  vmt_thread_t *self;
  FUZZ_REQUIRE(vmt_thread_attach(&o, &self) == 0);

  vmt_monitor_t *m = NULL;
  bool hold = (what & 1) != 0 && strlen(field[1]) <= VMT_MONITOR_NAME_MAX;
  if (hold) {
    FUZZ_REQUIRE(vmt_monitor_create(&m, field[1]) == 0);
    FUZZ_REQUIRE(vmt_monitor_enter(m) == 0);
  }
  walk.frames = (what >> 1) % (MAX_FRAMES + 1);
  for (int i = 0; i < walk.frames; i++) {
    /* An empty function stands for NULL ("??"), an empty file for none. */
    walk.function[i] = field[2 + 2 * i][0] ? field[2 + 2 * i] : NULL;
    walk.file[i] = field[3 + 2 * i][0] ? field[3 + 2 * i] : NULL;
    walk.line[i] = (where >> (i % 4)) & 1 ? (int32_t)(i * 1000 + where) : -1;
  }
  walk.holds_at = walk.frames ? (where >> 4) % walk.frames : -1;
  walk.monitor = m;
  vmt_mx_set_stack_walker(walker, NULL);

  char *dump = NULL;
  size_t len = 0;
  int rc = vmt_mx_thread_dump_json_to_string(&dump, &len);
  vmt_mx_set_stack_walker(NULL, NULL);
  FUZZ_REQUIRE(rc == 0 && dump != NULL && strlen(dump) == len);
  FUZZ_REQUIRE(json_check(dump) == -1);

  bytes_t got = {0}, want = {0};
  /* The only thread listed is this one. */
  const char *at = decode_next(dump, "\"name\": ", &got);
  if (named) {
    FUZZ_REQUIRE(got.n == name_len && memcmp(got.s, name, name_len) == 0);
  } else {
    FUZZ_REQUIRE(strcmp(got.s, vmt_thread_name(self)) == 0);
  }
  for (int i = 0; i < walk.frames; i++) {
    at = decode_next(at, i == 0 ? "\"stack\": [" : "", &got);
    clear(&want);
    put_replaced(&want, walk.function[i] ? walk.function[i] : "??");
    if (walk.file[i]) {
      put(&want, "(", 1);
      put_replaced(&want, walk.file[i]);
      if (walk.line[i] >= 0) {
        char line[16];
        put(&want, line, (size_t)snprintf(line, sizeof(line), ":%d", (int)walk.line[i]));
      }
      put(&want, ")", 1);
    }
    FUZZ_REQUIRE(got.n == want.n && memcmp(got.s, want.s, want.n) == 0);
  }
  if (hold) {
    char display[VMT_MONITOR_NAME_MAX + 32];
    FUZZ_REQUIRE(vmt_monitor_describe(m, display, sizeof(display)) > 0);
    at = decode_next(at, "\"locks\": [", &got);
    clear(&want);
    put_replaced(&want, display);
    FUZZ_REQUIRE(got.n == want.n && memcmp(got.s, want.s, want.n) == 0);
    FUZZ_REQUIRE(vmt_monitor_exit(m) == 0 && vmt_monitor_destroy(m) == 0);
  }
  free(got.s);
  free(want.s);
  free(dump);
  FUZZ_REQUIRE(vmt_thread_detach() == 0);
  for (int i = 0; i < FIELDS; i++) free(field[i]);
  return 0;
}
