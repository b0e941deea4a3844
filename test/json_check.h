/*
 * test/json_check.h: a strict JSON syntax check (RFC 8259) for the tests of the JSON thread
 * dump: one value, objects, arrays, strings with their escapes and well-formed UTF-8 (no
 * overlong forms, surrogates or code points above U+10FFFF), numbers, true/false/null, and
 * nothing but white space after the value. It answers "parses" or the offset where it stopped;
 * the tests check content with plain substring searches.
 */
#ifndef VMT_TEST_JSON_CHECK_H
#define VMT_TEST_JSON_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

typedef struct json_cursor {
  const unsigned char *s;
  size_t at, len;
  int depth;
} json_cursor_t;

static inline void json_ws(json_cursor_t *c) {
  while (c->at < c->len && strchr(" \t\r\n", c->s[c->at]) && c->s[c->at] != '\0') c->at++;
}

static inline bool json_lit(json_cursor_t *c, const char *lit) {
  size_t n = strlen(lit);
  if (c->len - c->at < n || memcmp(c->s + c->at, lit, n) != 0) return false;
  c->at += n;
  return true;
}

static inline bool json_utf8(json_cursor_t *c) {
  unsigned b = c->s[c->at];
  size_t n = b < 0xc2 ? 0 : b < 0xe0 ? 2 : b < 0xf0 ? 3 : b < 0xf5 ? 4 : 0;
  if (n == 0 || c->len - c->at < n) return false;
  for (size_t i = 1; i < n; i++)
    if ((c->s[c->at + i] & 0xc0) != 0x80) return false;
  unsigned b1 = c->s[c->at + 1];
  if ((b == 0xe0 && b1 < 0xa0) || (b == 0xed && b1 >= 0xa0) || (b == 0xf0 && b1 < 0x90) ||
      (b == 0xf4 && b1 >= 0x90))
    return false;
  c->at += n;
  return true;
}

static inline bool json_string_value(json_cursor_t *c) {
  if (!json_lit(c, "\"")) return false;
  while (c->at < c->len) {
    unsigned b = c->s[c->at];
    if (b == '"') {
      c->at++;
      return true;
    }
    if (b < 0x20) return false;
    if (b == '\\') {
      c->at++;
      if (c->at >= c->len) return false;
      unsigned e = c->s[c->at++];
      if (e == 'u') {
        for (int i = 0; i < 4; i++, c->at++)
          if (c->at >= c->len || !strchr("0123456789abcdefABCDEF", c->s[c->at]) ||
              c->s[c->at] == '\0')
            return false;
      } else if (!strchr("\"\\/bfnrt", (int)e) || e == '\0') {
        return false;
      }
    } else if (b >= 0x80) {
      if (!json_utf8(c)) return false;
    } else {
      c->at++;
    }
  }
  return false;
}

static inline bool json_number(json_cursor_t *c) {
  size_t start = c->at;
  if (c->at < c->len && c->s[c->at] == '-') c->at++;
  if (c->at < c->len && c->s[c->at] == '0') {
    c->at++;
  } else {
    if (c->at >= c->len || c->s[c->at] < '1' || c->s[c->at] > '9') return false;
    while (c->at < c->len && c->s[c->at] >= '0' && c->s[c->at] <= '9') c->at++;
  }
  return c->at > start; /* integers are all the dump writes */
}

static inline bool json_value(json_cursor_t *c);

static inline bool json_members(json_cursor_t *c, char close, bool keyed) {
  c->at++;
  json_ws(c);
  if (c->at < c->len && c->s[c->at] == close) {
    c->at++;
    return true;
  }
  for (;;) {
    json_ws(c);
    if (keyed) {
      if (!json_string_value(c)) return false;
      json_ws(c);
      if (!json_lit(c, ":")) return false;
    }
    if (!json_value(c)) return false;
    json_ws(c);
    if (c->at >= c->len) return false;
    if (c->s[c->at] == close) {
      c->at++;
      return true;
    }
    if (!json_lit(c, ",")) return false;
  }
}

static inline bool json_value(json_cursor_t *c) {
  json_ws(c);
  if (c->at >= c->len || ++c->depth > 64) return false;
  bool ok;
  switch (c->s[c->at]) {
    case '{': ok = json_members(c, '}', true); break;
    case '[': ok = json_members(c, ']', false); break;
    case '"': ok = json_string_value(c); break;
    case 't': ok = json_lit(c, "true"); break;
    case 'f': ok = json_lit(c, "false"); break;
    case 'n': ok = json_lit(c, "null"); break;
    default: ok = json_number(c); break;
  }
  c->depth--;
  return ok;
}

/* -1 if text is one well-formed JSON value, else the offset where the check stopped. */
static inline long json_check(const char *text) {
  json_cursor_t c = {(const unsigned char *)text, 0, strlen(text), 0};
  if (!json_value(&c)) return (long)c.at;
  json_ws(&c);
  return c.at == c.len ? -1 : (long)c.at;
}

#endif /* VMT_TEST_JSON_CHECK_H */
