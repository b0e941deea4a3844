/*
 * runtime/thread/options.c: validation of vmt_thread_options_t. Every rule a caller can break gives
 * -EINVAL here, before anything is allocated, so start and attach fail without side effects.
 *
 * Stack size rule (docs/design.md, "Options"): 0 keeps the platform default (glibc: RLIMIT_STACK,
 * 8 MiB here). Anything else is rounded up to the page size, then clamped to at least 64 KiB
 * (or the platform's PTHREAD_STACK_MIN if larger; glibc's guard page and static TLS come out of
 * the requested size, and sanitizer builds need tens of KiB of their own) and at most 1 GiB (a
 * request larger than that is a unit mistake, not a stack).
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "runtime/thread/thread_impl.h"

#define KNOWN_FLAGS                                                                      \
  (VMT_THREAD_OPT_NAME | VMT_THREAD_OPT_CATEGORY | VMT_THREAD_OPT_DAEMON |               \
   VMT_THREAD_OPT_PRIORITY | VMT_THREAD_OPT_STACK_SIZE | VMT_THREAD_OPT_STACK_GUARD |   \
   VMT_THREAD_OPT_TIMER_SLACK)

size_t vmt__utf8_sequence(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  if (c < 0x80) return 1;
  size_t len = c < 0xc2 ? 0 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : c < 0xf5 ? 4 : 0;
  if (len == 0 || len > n) return 0;   /* a continuation byte first, C0/C1, F5..FF, cut short */
  for (size_t i = 1; i < len; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  if (c == 0xe0 && s[1] < 0xa0) return 0;   /* overlong */
  if (c == 0xed && s[1] >= 0xa0) return 0;  /* surrogate */
  if (c == 0xf0 && s[1] < 0x90) return 0;   /* overlong */
  if (c == 0xf4 && s[1] >= 0x90) return 0;  /* above U+10FFFF */
  return len;
}

bool vmt__utf8_valid(const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  for (size_t i = 0, n; i < len; i += n)
    if ((n = vmt__utf8_sequence(p + i, len - i)) == 0) return false;
  return true;
}

static bool category_valid(const char *c) {
  size_t len = strnlen(c, VMT_THREAD_CATEGORY_MAX + 1);
  if (len == 0 || len > VMT_THREAD_CATEGORY_MAX) return false;
  for (size_t i = 0; i < len; i++) {
    char ch = c[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-'))
      return false;
  }
  return true;
}

size_t vmt__stack_size_rule(size_t requested) {
  if (requested == 0) return 0;
  long page = sysconf(_SC_PAGESIZE);
  size_t pg = page > 0 ? (size_t)page : 4096;
  size_t lo = VMT__STACK_MIN_BYTES;
  long platform_min = sysconf(_SC_THREAD_STACK_MIN);
  if (platform_min > 0 && (size_t)platform_min > lo) lo = (size_t)platform_min;
  lo = (lo + pg - 1) / pg * pg;
  if (requested >= VMT__STACK_MAX_BYTES) return VMT__STACK_MAX_BYTES;
  size_t rounded = (requested + pg - 1) / pg * pg;
  return rounded < lo ? lo : rounded;
}

/* Rounds each zone up to pages and checks that they and VMT__STACK_GUARD_MIN_USABLE fit in the
 * stack the thread will get (its stack_size, or the platform default). */
static int guard_resolve(const vmt_stack_guard_t *g, vmt__thread_opts_t *out) {
  size_t pg = vmt_os_page_size();
  const size_t *in[3] = {&g->red_size, &g->yellow_size, &g->reserved_size};
  size_t *res[3] = {&out->guard.red_size, &out->guard.yellow_size, &out->guard.reserved_size};
  size_t total = 0;
  for (int i = 0; i < 3; i++) {
    if (*in[i] > VMT__STACK_MAX_BYTES) return -EINVAL;
    *res[i] = (*in[i] + pg - 1) / pg * pg;
    total += *res[i];
  }
  size_t stack = out->stack_size;
  if (stack == 0) {
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0 || pthread_attr_getstacksize(&attr, &stack) != 0)
      return -EINVAL;
    pthread_attr_destroy(&attr);
  }
  if (total + VMT__STACK_GUARD_MIN_USABLE > stack) return -EINVAL;
  return 0;
}

int vmt__options_resolve(const vmt_thread_options_t *options, vmt__thread_opts_t *out) {
  memset(out, 0, sizeof(*out));
  out->category = "app";
  out->priority = VMT_THREAD_NORM_PRIORITY;
  if (options == NULL) return 0;
  unsigned f = options->flags;
  if (f & ~(unsigned)KNOWN_FLAGS) return -EINVAL;
  if (f & VMT_THREAD_OPT_NAME) {
    if (options->name == NULL) return -EINVAL;
    size_t len = strnlen(options->name, VMT_THREAD_NAME_MAX + 1);
    if (len == 0 || len > VMT_THREAD_NAME_MAX || !vmt__utf8_valid(options->name, len))
      return -EINVAL;
    out->name = options->name;
    out->name_len = len;
  }
  if (f & VMT_THREAD_OPT_CATEGORY) {
    if (options->category == NULL || !category_valid(options->category)) return -EINVAL;
    out->category = options->category;
  }
  if (f & VMT_THREAD_OPT_DAEMON) out->daemon = options->daemon;
  if (f & VMT_THREAD_OPT_PRIORITY) {
    if (options->priority < VMT_THREAD_MIN_PRIORITY || options->priority > VMT_THREAD_MAX_PRIORITY)
      return -EINVAL;
    out->priority = options->priority;
  }
  if (f & VMT_THREAD_OPT_STACK_SIZE) out->stack_size = vmt__stack_size_rule(options->stack_size);
  if (f & VMT_THREAD_OPT_TIMER_SLACK) {
    if (options->timer_slack_ns < 0 || options->timer_slack_ns > VMT_THREAD_TIMER_SLACK_MAX_NS)
      return -EINVAL;
    out->timer_slack_set = true;
    out->timer_slack_ns = options->timer_slack_ns;
  }
  if (f & VMT_THREAD_OPT_STACK_GUARD) return guard_resolve(&options->stack_guard, out);
  return 0;
}
