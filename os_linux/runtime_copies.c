/*
 * os_linux/runtime_copies.c: finding the other copies of the runtime in this process (os.h,
 * "Copies of the runtime"). A JVM that loads libvmthread.so.0 for the JMX bridge and a guest
 * library that linked libvmthread.a holds two registries; the bridge's bean read its own, empty
 * one and said ThreadCount = 0 with no error. The copies cannot find each other by symbol:
 * libvmthread.a's internals are local (build/static_archive.bzl), and System.loadLibrary
 * loads with RTLD_LOCAL, which hides even exported symbols from dlsym(RTLD_DEFAULT).
 *
 * So each copy puts an ELF note in its object (owner "vmthread", type VMT_COPY_NOTE) whose
 * descriptor is the 32-bit distance from the descriptor to the copy's marker, a link-time
 * constant (a PC-relative relocation that needs no dynamic relocation, in a shared object as in
 * an archive linked into one). dl_iterate_phdr walks every loaded object whatever its scope;
 * its PT_NOTE segments are read only where they lie inside one of its PT_LOAD segments (mapped
 * memory). A marker found is another copy's if it is not ours and carries the magic and layout.
 *
 * The scan runs only when an object was loaded or unloaded since the last one (dl_phdr_info's
 * dlpi_adds and dlpi_subs, glibc 2.4): otherwise the markers found last time are read again,
 * which costs one dl_iterate_phdr callback. The cache is under cache_lock, held across fork
 * (runtime/process.h): a fork while another thread scanned must not leave it held.
 *
 * Every marker and file name is read inside a dl_iterate_phdr callback, never after it
 * returned: glibc holds its loader lock across the iteration, so an object it visits (or, with
 * dlpi_subs unchanged, any object the cache names) cannot be unmapped meanwhile. Read once the
 * iteration was over, a copy that another thread unloaded in between crashed the search
 * (test/runtime_copies_linux_test.c, a_copy_unloaded_during_the_search).
 */
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "runtime/os.h"
#include "runtime/process.h"

#define VMT_COPY_MAGIC 0x766d7463u   /* "vmtc" */
#define VMT_COPY_LAYOUT 1u           /* bump when the marker's layout changes */
#define VMT_COPY_NOTE 0x766d7401u
#define CACHE_MAX 8

typedef struct copy_marker {
  uint32_t magic;
  uint32_t layout;
  _Atomic uint32_t in_use;
} copy_marker_t;

/* Hidden (and local once in libvmthread.a): only the note names it. */
__attribute__((visibility("hidden"))) copy_marker_t vmt_os__copy_marker = {
    VMT_COPY_MAGIC, VMT_COPY_LAYOUT, 0};

/* The note: namesz 9 ("vmthread" and its NUL, padded to 12), descsz 4, type, name, and the
 * descriptor: the marker's address minus the descriptor's. */
__asm__(".pushsection .note.vmthread,\"a\",%note\n"
        ".balign 4\n"
        ".long 9\n"
        ".long 4\n"
        ".long 0x766d7401\n"
        ".asciz \"vmthread\"\n"
        ".balign 4\n"
        "1: .long vmt_os__copy_marker - 1b\n"
        ".popsection\n");

typedef struct found {
  const copy_marker_t *marker;
  const char *path;   /* dlpi_name: valid while the object stays loaded */
} found_t;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long cache_adds = ~0ull, cache_subs = ~0ull;
static found_t cache[CACHE_MAX];
static size_t cache_count;
static bool cache_complete;   /* false: more copies than CACHE_MAX, scan every time */

static void fork_prepare(void) { pthread_mutex_lock(&cache_lock); }
static void fork_parent(void) { pthread_mutex_unlock(&cache_lock); }
static void fork_child(void) { pthread_mutex_init(&cache_lock, NULL); }
VMT__PROCESS_STATE(copies_cache,
                   .symbols = "cache_lock cache_adds cache_subs cache cache_count cache_complete",
                   .rule = VMT__FORK_HOLD,
                   .fork = "the cache is whole (held across fork) and still true: the child has "
                           "the parent's objects loaded",
                   .rank = VMT__RANK_PORT + 2, .prepare = fork_prepare, .parent = fork_parent,
                   .child = fork_child);
VMT__PROCESS_STATE(copies_marker, .symbols = "vmt_os__copy_marker", .rule = VMT__FORK_KEEP,
                   .fork = "this copy's marker: in use stays in use (the forking thread may be a "
                           "runtime thread, and the child may start more)");

void vmt_os_copy_mark_in_use(void) {
  atomic_store_explicit(&vmt_os__copy_marker.in_use, 1, memory_order_release);
}

/* True if [addr, addr+len) lies inside one of the object's PT_LOAD segments. */
static bool mapped(const struct dl_phdr_info *info, ElfW(Addr) vaddr, ElfW(Xword) len) {
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && vaddr >= ph->p_vaddr && len <= ph->p_memsz &&
        vaddr - ph->p_vaddr <= ph->p_memsz - len)
      return true;
  }
  return false;
}

typedef struct scan {
  bool first;
  bool cached;               /* nothing loaded or unloaded since the cache was filled */
  unsigned long long adds, subs;
  found_t found[CACHE_MAX];
  size_t count;              /* copies found, may exceed CACHE_MAX */
  int32_t in_use;            /* of them, those with threads */
  char *path;                /* the first of those's file, len bytes */
  size_t len;
} scan_t;

/* Inside a callback only (the opening comment says why). */
static void count_in_use(scan_t *s, const copy_marker_t *m, const char *name) {
  if (!atomic_load_explicit(&((copy_marker_t *)m)->in_use, memory_order_acquire)) return;
  if (s->in_use++ == 0 && s->len > 0) snprintf(s->path, s->len, "%s", name ? name : "");
}

static void scan_notes(const struct dl_phdr_info *info, const ElfW(Phdr) *ph, scan_t *s) {
  const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
  size_t align = ph->p_align == 8 ? 8 : 4;
  size_t left = ph->p_filesz;
  while (left >= sizeof(ElfW(Nhdr))) {
    ElfW(Nhdr) nh;
    memcpy(&nh, p, sizeof(nh));
    size_t name_len = (nh.n_namesz + align - 1) & ~(align - 1);
    size_t desc_len = (nh.n_descsz + align - 1) & ~(align - 1);
    if (name_len > left - sizeof(nh) || desc_len > left - sizeof(nh) - name_len) return;
    const unsigned char *name = p + sizeof(nh), *desc = name + name_len;
    if (nh.n_type == VMT_COPY_NOTE && nh.n_namesz == 9 && nh.n_descsz == 4 &&
        memcmp(name, "vmthread", 9) == 0) {
      int32_t offset;
      memcpy(&offset, desc, sizeof(offset));
      const copy_marker_t *m = (const copy_marker_t *)(desc + offset);
      ElfW(Addr) vaddr = (ElfW(Addr))m - info->dlpi_addr;
      if (m != &vmt_os__copy_marker && mapped(info, vaddr, sizeof(*m)) &&
          m->magic == VMT_COPY_MAGIC && m->layout == VMT_COPY_LAYOUT) {
        if (s->count < CACHE_MAX) s->found[s->count] = (found_t){m, info->dlpi_name};
        s->count++;
        count_in_use(s, m, info->dlpi_name);
      }
    }
    p += sizeof(nh) + name_len + desc_len;
    left -= sizeof(nh) + name_len + desc_len;
  }
}

static int scan_object(struct dl_phdr_info *info, size_t size, void *arg) {
  scan_t *s = arg;
  if (s->first) {
    s->first = false;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
      s->adds = info->dlpi_adds;
      s->subs = info->dlpi_subs;
      if (cache_complete && s->adds == cache_adds && s->subs == cache_subs) {
        /* The objects are the ones the cache describes, all still mapped: read them, stop. */
        s->cached = true;
        for (size_t i = 0; i < cache_count; i++) count_in_use(s, cache[i].marker, cache[i].path);
        return 1;
      }
    }
  }
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_NOTE && mapped(info, ph->p_vaddr, ph->p_filesz)) scan_notes(info, ph, s);
  }
  return 0;
}

int32_t vmt_os_other_copies_in_use(char *path, size_t len) {
  pthread_mutex_lock(&cache_lock);
  scan_t s = {.first = true, .path = path, .len = len};
  vmt_os_loader_enter(true);
  dl_iterate_phdr(scan_object, &s);
  vmt_os_loader_exit();
  if (!s.cached) {
    cache_count = s.count < CACHE_MAX ? s.count : CACHE_MAX;
    memcpy(cache, s.found, cache_count * sizeof(cache[0]));
    cache_complete = s.count <= CACHE_MAX;
    cache_adds = s.adds;
    cache_subs = s.subs;
  }
  pthread_mutex_unlock(&cache_lock);
  if (s.in_use == 0 && len > 0) path[0] = '\0';
  return s.in_use;
}
