/*
 * os_linux/symbols.c: names, files and lines of code addresses of this process, for the
 * profiler's output (runtime/profiler/symbols.c caches the answers).
 *
 * elfutils' libdwfl (Debian's libdw1; headers in libdw-dev) reads every loaded object from
 * /proc/self/maps: its symbol tables, the static functions' included (dladdr sees only the
 * dynamic symbols, so a hidden or static function is named after the exported one below it),
 * and its DWARF line tables where it has them (or separate debug files under /usr/lib/debug).
 * It is dlopen'ed RTLD_LOCAL, as the unwinder is (os_linux/unwind.c): libvmthread.so.0 needs
 * libc alone. Without it, or for an address it cannot place, dladdr answers.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "os_linux/os_impl.h"
#include "runtime/fault.h"
#include "runtime/process.h"

#if defined(__has_include)
#if __has_include(<elfutils/libdwfl.h>)
#include <elfutils/libdwfl.h>
#define VMT_OS_HAVE_LIBDW 1
#endif
#endif

#ifdef VMT_OS_HAVE_LIBDW
static struct {
  Dwfl *(*begin)(const Dwfl_Callbacks *);
  void (*end)(Dwfl *);
  void (*report_begin)(Dwfl *);
  int (*report_end)(Dwfl *, int (*)(Dwfl_Module *, void *, const char *, Dwarf_Addr, void *),
                    void *);
  int (*linux_proc_report)(Dwfl *, pid_t);
  Dwfl_Module *(*addrmodule)(Dwfl *, Dwarf_Addr);
  const char *(*module_addrinfo)(Dwfl_Module *, GElf_Addr, GElf_Off *, GElf_Sym *, GElf_Word *,
                                 Elf **, Dwarf_Addr *);
  Dwfl_Line *(*module_getsrc)(Dwfl_Module *, Dwarf_Addr);
  const char *(*lineinfo)(Dwfl_Line *, Dwarf_Addr *, int *, int *, Dwarf_Word *, Dwarf_Word *);
  const char *(*module_info)(Dwfl_Module *, void ***, Dwarf_Addr *, Dwarf_Addr *, Dwarf_Addr *,
                             Dwarf_Addr *, const char **, const char **);
  Dwfl_Callbacks callbacks;
} dw;
static bool have_dw;
static char *debuginfo_path;   /* NULL: the default search path */
#endif

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
#ifdef VMT_OS_HAVE_LIBDW
#define SYMBOLIZER_SYMBOLS "dw have_dw debuginfo_path load_once"
#else
#define SYMBOLIZER_SYMBOLS "load_once"
#endif
VMT__PROCESS_STATE(symbolizer, .symbols = SYMBOLIZER_SYMBOLS,
                   .rule = VMT__FORK_KEEP,
                   .fork = "the loaded libdw and its functions are the child's too");

#ifdef VMT_OS_HAVE_LIBDW
#define DW_SYM(field, name)                                  \
  do {                                                       \
    *(void **)&dw.field = dlsym(lib, name);                  \
    if (dw.field == NULL) ok = false;                        \
  } while (0)

static void load(void) {
  vmt_os_loader_enter(true);
  void *lib = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
  vmt_os_loader_exit();
  if (lib == NULL) return;
  bool ok = true;
  DW_SYM(begin, "dwfl_begin");
  DW_SYM(end, "dwfl_end");
  DW_SYM(report_begin, "dwfl_report_begin");
  DW_SYM(report_end, "dwfl_report_end");
  DW_SYM(linux_proc_report, "dwfl_linux_proc_report");
  DW_SYM(addrmodule, "dwfl_addrmodule");
  DW_SYM(module_addrinfo, "dwfl_module_addrinfo");
  DW_SYM(module_getsrc, "dwfl_module_getsrc");
  DW_SYM(lineinfo, "dwfl_lineinfo");
  DW_SYM(module_info, "dwfl_module_info");
  DW_SYM(callbacks.find_elf, "dwfl_linux_proc_find_elf");
  DW_SYM(callbacks.find_debuginfo, "dwfl_standard_find_debuginfo");
  if (!ok) {
    vmt_os_loader_enter(true);
    dlclose(lib);
    vmt_os_loader_exit();
    return;
  }
  dw.callbacks.debuginfo_path = &debuginfo_path;
  have_dw = true;
}
#else
static void load(void) {}
#endif

struct vmt_os_symbolizer {
  void *dwfl;   /* Dwfl *; NULL: dladdr only */
  /* The stack of the thread that last asked (callers serialise their use of a symbolizer). */
  bool stack_known;
  pthread_t stack_thread;
  uintptr_t stack_lo;   /* UINTPTR_MAX: unknown */
};

/* libdw's line-table reader (dwarf_getsrclines, elfutils 0.188) keeps its tables on the
 * stack: between 160 and 192 KiB here. With less left it overflowed: SIGSEGV in a main thread
 * under ulimit -s 160, and in a runtime thread started with the 64 KiB the options allow
 * (test/port_adversarial_linux_test.c). Lines are read only with this much left; the name
 * still comes from the symbol table. */
#define LINES_STACK_NEEDED ((size_t)256 * 1024)

static bool stack_allows_lines(vmt_os_symbolizer_t *s) {
  pthread_t self = pthread_self();
  if (!s->stack_known || !pthread_equal(s->stack_thread, self)) {
    s->stack_thread = self;
    s->stack_known = true;
    uintptr_t hi = 0;
    size_t guard = 0;
    if (vmt_os_thread_stack(self, &s->stack_lo, &hi, &guard) != 0) s->stack_lo = UINTPTR_MAX;
  }
  uintptr_t here = (uintptr_t)__builtin_frame_address(0);
  return s->stack_lo != UINTPTR_MAX && here > s->stack_lo &&
         here - s->stack_lo >= LINES_STACK_NEEDED;
}

vmt_os_symbolizer_t *vmt_os_symbolizer_open(void) {
  pthread_once(&load_once, load);
  if (vmt__fault_hit(VMT__FAULT_ALLOC)) return NULL;
  vmt_os_symbolizer_t *s = calloc(1, sizeof(*s));
  if (s == NULL) return NULL;
#ifdef VMT_OS_HAVE_LIBDW
  if (have_dw) {
    Dwfl *d = dw.begin(&dw.callbacks);
    if (d) {
      dw.report_begin(d);
      if (dw.linux_proc_report(d, getpid()) == 0 && dw.report_end(d, NULL, NULL) == 0)
        s->dwfl = d;
      else
        dw.end(d);
    }
  }
#endif
  return s;
}

void vmt_os_symbolizer_close(vmt_os_symbolizer_t *s) {
  if (s == NULL) return;
#ifdef VMT_OS_HAVE_LIBDW
  if (s->dwfl) dw.end((Dwfl *)s->dwfl);
#endif
  free(s);
}

const char *vmt_os_symbolizer_kind(vmt_os_symbolizer_t *s) {
#ifdef VMT_OS_HAVE_LIBDW
  if (s && s->dwfl) return "libdw";
#endif
  (void)s;
  return "dladdr";
}

static void copy(char *dst, size_t cap, const char *src) {
  if (src == NULL) src = "";
  size_t n = strlen(src);
  if (n >= cap) n = cap - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

static const char *base_name(const char *path) {
  const char *slash = path ? strrchr(path, '/') : NULL;
  return slash ? slash + 1 : path;
}

int vmt_os_symbolize(vmt_os_symbolizer_t *s, uintptr_t pc, bool return_address,
                     vmt_os_symbol_t *out) {
  memset(out, 0, sizeof(*out));
  out->line = -1;
  if (pc == 0) return -ENOENT;
  /* A return address is the instruction after the call: the call's own line is before it. */
  uintptr_t at = return_address ? pc - 1 : pc;
#ifdef VMT_OS_HAVE_LIBDW
  if (s && s->dwfl) {
    Dwfl_Module *m = dw.addrmodule((Dwfl *)s->dwfl, at);
    if (m) {
      const char *main_file = NULL;
      Dwarf_Addr base = 0;
      const char *mod = dw.module_info(m, NULL, &base, NULL, NULL, NULL, &main_file, NULL);
      copy(out->module, sizeof(out->module), base_name(main_file ? main_file : mod));
      GElf_Off off = 0;
      GElf_Sym sym;
      const char *fn = dw.module_addrinfo(m, at, &off, &sym, NULL, NULL, NULL);
      if (fn) {
        copy(out->function, sizeof(out->function), fn);
        out->offset = (uintptr_t)off;
      } else {
        out->offset = pc - (uintptr_t)base;
      }
      Dwfl_Line *line = stack_allows_lines(s) ? dw.module_getsrc(m, at) : NULL;
      int lineno = 0;
      const char *src = line ? dw.lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
      if (src) {
        copy(out->file, sizeof(out->file), src);
        out->line = lineno;
      }
      if (fn) return 0;
    }
  }
#else
  (void)s;
#endif
  Dl_info info;
  if (dladdr((void *)at, &info) == 0) return out->module[0] ? 0 : -ENOENT;
  if (out->module[0] == '\0') copy(out->module, sizeof(out->module), base_name(info.dli_fname));
  if (info.dli_sname) {
    copy(out->function, sizeof(out->function), info.dli_sname);
    out->offset = pc - (uintptr_t)info.dli_saddr;
  } else if (out->offset == 0) {
    out->offset = pc - (uintptr_t)info.dli_fbase;
  }
  return 0;
}
