/*
 * os_linux/names.c: the kernel's name of a thread. The kernel keeps 15 bytes plus the NUL
 * (TASK_COMM_LEN = 16; pthread_setname_np fails with ERANGE beyond that). The runtime keeps the
 * full name; the OS name is its first 15 bytes, cut back to a UTF-8 character boundary so that
 * top, ps and /proc never show half a character.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "os_linux/os_impl.h"
#include "runtime/fault.h"

#define OS_NAME_MAX 15

static bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

void vmt_os_native_name(const char *full, char os_name[16]) {
  if (full == NULL) {
    os_name[0] = '\0';
    return;
  }
  size_t n = strnlen(full, OS_NAME_MAX + 1);
  if (n > OS_NAME_MAX) {
    n = OS_NAME_MAX;
    /* The byte after the cut continues a character: back up to that character's lead byte
     * (at most 3 continuation bytes in UTF-8) and cut before it. A run of more than 3
     * continuation bytes is not UTF-8 at all; then the plain byte cut stands. */
    size_t lead = n;
    while (lead > 0 && n - lead < 3 && is_continuation((unsigned char)full[lead])) lead--;
    if (lead < n && !is_continuation((unsigned char)full[lead])) n = lead;
  }
  memcpy(os_name, full, n);
  os_name[n] = '\0';
}

int vmt_os_set_native_name(const char *os_name) {
  if (os_name == NULL) return -EINVAL;
  if (strnlen(os_name, OS_NAME_MAX + 1) > OS_NAME_MAX) return -ERANGE;
  int err = vmt__fault_hit(VMT__FAULT_SETNAME);
  if (err) return err;
  int rc = pthread_setname_np(pthread_self(), os_name);
  return rc == 0 ? 0 : -rc;
}
