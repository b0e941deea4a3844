/*
 * os_linux/cfi_unwind.c: vmthread's own native unwinder for x86-64 Linux, for the profiler's
 * signal handler: it walks the interrupted thread's stack from the signal's context with the
 * call-frame information every object carries (.eh_frame_hdr's sorted table, then the CIE and
 * FDE in .eh_frame), interpreting the FDE's CFA program on the fly. unwind.c says when it is
 * used and when libunwind is.
 *
 * DESIGN (what the handler may do). The walk takes no lock, allocates nothing and makes no
 * system call: it reads the immutable object table (published with release, read with acquire),
 * the mapped read-only .eh_frame_hdr/.eh_frame of the object a pc falls in, and the interrupted
 * thread's stack. Every read is checked: .eh_frame bytes against the PT_LOAD segment that holds
 * the object's .eh_frame_hdr (the FDEs and CIEs must lie in it too), stack words against
 * [the interrupted rsp, the thread's stack top), and a step must raise the CFA strictly. What
 * does not pass ends the walk; the frames found so far are the sample.
 *
 * The table is built outside any handler (vmt__cfi_prepare, at the profiler's start) from
 * dl_iterate_phdr: for each object its load bias, PT_GNU_EH_FRAME and executable PT_LOAD ranges,
 * one entry per executable range, sorted. A pc in no object (code dlopen'ed since, or JIT code)
 * ends the walk and is counted; the profiler's drainer calls vmt__cfi_refresh every round, which
 * compares glibc's dlpi_adds/dlpi_subs with the table's (one dl_iterate_phdr callback) and
 * rebuilds only when they moved. A replaced table is never freed while a handler may hold it: it
 * waits on the retired list until the profiler's stop, after the handlers drained
 * (vmt__cfi_release_retired). A library dlclose'd since the last round keeps its entry until the
 * next round (the drainer's, at most 1 s): a pc still in it then reads its unmapped .eh_frame.
 * Only a return address into unloaded code, which would crash the thread itself on return,
 * leads there, or code another dlopen maps at the same addresses within that round (its pcs
 * then meet the old object's tables): a known limit.
 *
 * Rules interpreted: def_cfa(_sf/_register/_offset/_offset_sf), def_cfa_expression,
 * offset(_extended/_extended_sf), val_offset(_sf), register, expression, val_expression,
 * restore(_extended), undefined, same_value, remember/restore_state, advance_loc(1/2/4),
 * set_loc, GNU_args_size, GNU_negative_offset_extended, nop. DWARF expressions (the PLT's
 * "rsp + 8 + ((rip & 15) >= 11) << 3", gcc's realigned frames "deref(rbp - 8)") run in a small
 * stack machine over the tracked registers; an operator outside its set ends the walk (no
 * frame-pointer guess: a guess is what makes profiles lie). The return address undefined is the
 * outermost frame. Caller frames look up pc - 1 (the call may be a function's last
 * instruction); the interrupted frame and the frame below a signal frame look up pc itself.
 * glibc's signal trampoline (__restore_rt: mov $15,%rax; syscall) is recognised by its bytes,
 * as libunwind does, and the walk continues from the ucontext the kernel saved on the stack.
 */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "os_linux/os_impl.h"
#include "runtime/fault.h"
#include "runtime/process.h"

#if VMT__CFI_UNWINDER

/* No instrumentation where the walk reads other frames' stack words (ASan's redzones are not
 * what it reads, but a garbage context may point anywhere in the stack) or runs in a handler. */
#define CFI_NOSAN __attribute__((no_sanitize_address, no_sanitize_thread))

typedef struct cfi_object {
  uintptr_t text_lo, text_hi;   /* one executable PT_LOAD */
  uintptr_t data_lo, data_hi;   /* the PT_LOAD holding .eh_frame_hdr (and .eh_frame) */
  uintptr_t hdr;                /* .eh_frame_hdr */
  const int32_t *table;         /* its (initial location, FDE) pairs, hdr-relative */
  uint32_t count;
} cfi_object_t;

typedef struct cfi_table {
  struct cfi_table *retired_next;
  unsigned long long adds, subs;   /* glibc's load and unload counts when it was built */
  uint32_t count;
  cfi_object_t objects[];          /* sorted by text_lo */
} cfi_table_t;

static _Atomic(cfi_table_t *) current;
static cfi_table_t *retired;      /* under build_lock */
/* The port's futex lock (runtime/os.h), not a pthread mutex: not held across fork (the
 * profiler's rows hold none), so reset in the child while a refresh may hold it in the parent
 * (test/loader_fork_linux_internal_test.c forks then). */
static _Atomic uint32_t build_lock;
static _Atomic int64_t unknown_pcs;
static void build_fork_child(void) { atomic_store_explicit(&build_lock, 0, memory_order_relaxed); }
VMT__PROCESS_STATE(cfi_unwind, .symbols = "current retired build_lock unknown_pcs",
                   .rule = VMT__FORK_REINIT,
                   .fork = "the child has the parent's mappings: the published table (always a "
                           "whole one) is as valid there; the build lock is re-initialised, and "
                           "a rebuild a vanished thread left half done only leaks its memory",
                   .rank = VMT__RANK_PORT + 3, .child = build_fork_child);

/* ---- The object table (outside handlers) ------------------------------------------------ */

typedef struct builder {
  cfi_object_t *objects;
  uint32_t count, cap;
  unsigned long long adds, subs;
  bool oom;
} builder_t;

/* An encoded pointer of .eh_frame_hdr (absptr, udata4/sdata4, pcrel, datarel): false if
 * another encoding or past end. */
static bool hdr_pointer(uint8_t enc, const uint8_t **p, const uint8_t *end, uintptr_t hdr,
                        uintptr_t *out) {
  uintptr_t at = (uintptr_t)*p, v;
  switch (enc & 0x0f) {
    case 0x00: /* absptr */
    case 0x04: /* udata8 */
    case 0x0c: /* sdata8 */
      if (end - *p < 8) return false;
      memcpy(&v, *p, 8);
      *p += 8;
      break;
    case 0x03: { /* udata4 */
      uint32_t u;
      if (end - *p < 4) return false;
      memcpy(&u, *p, 4);
      v = u;
      *p += 4;
      break;
    }
    case 0x0b: { /* sdata4 */
      int32_t s;
      if (end - *p < 4) return false;
      memcpy(&s, *p, 4);
      v = (uintptr_t)(intptr_t)s;
      *p += 4;
      break;
    }
    default:
      return false;
  }
  switch (enc & 0x70) {
    case 0x00: break;
    case 0x10: v += at; break;
    case 0x30: v += hdr; break;
    default: return false;
  }
  *out = v;
  return true;
}

static int add_object(struct dl_phdr_info *info, size_t size, void *arg) {
  builder_t *b = arg;
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs) &&
      b->count == 0 && b->adds == 0) {
    b->adds = info->dlpi_adds;
    b->subs = info->dlpi_subs;
  }
  const ElfW(Phdr) *eh = NULL;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME) eh = &info->dlpi_phdr[i];
  if (eh == NULL) return 0;
  uintptr_t bias = info->dlpi_addr, hdr = bias + eh->p_vaddr;
  uintptr_t data_lo = 0, data_hi = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_R) && eh->p_vaddr >= ph->p_vaddr &&
        eh->p_vaddr + eh->p_memsz <= ph->p_vaddr + ph->p_filesz) {
      data_lo = bias + ph->p_vaddr;
      data_hi = data_lo + ph->p_filesz;
    }
  }
  if (data_lo == 0) return 0;
  /* version 1, eh_frame_ptr_enc, fde_count_enc, table_enc (ld, gold and lld all write
   * datarel|sdata4 pairs: the binary search needs fixed-size entries). */
  const uint8_t *p = (const uint8_t *)hdr, *end = (const uint8_t *)data_hi;
  if (end - p < 4 || p[0] != 1 || p[3] != 0x3b) return 0;
  uint8_t ptr_enc = p[1], count_enc = p[2];
  p += 4;
  uintptr_t eh_frame, count;
  if (!hdr_pointer(ptr_enc, &p, end, hdr, &eh_frame) ||
      !hdr_pointer(count_enc, &p, end, hdr, &count))
    return 0;
  if (eh_frame < data_lo || eh_frame >= data_hi || count == 0 ||
      count > (uintptr_t)(end - p) / 8)
    return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || ph->p_memsz == 0) continue;
    if (b->count == b->cap) {
      uint32_t cap = b->cap ? b->cap * 2 : 64;
      cfi_object_t *o = realloc(b->objects, cap * sizeof(*o));
      if (o == NULL) {
        b->oom = true;
        return 1;
      }
      b->objects = o;
      b->cap = cap;
    }
    b->objects[b->count++] = (cfi_object_t){
        .text_lo = bias + ph->p_vaddr, .text_hi = bias + ph->p_vaddr + ph->p_memsz,
        .data_lo = data_lo, .data_hi = data_hi, .hdr = hdr,
        .table = (const int32_t *)(const void *)p, .count = (uint32_t)count};
  }
  return 0;
}

static int counts_only(struct dl_phdr_info *info, size_t size, void *arg) {
  builder_t *b = arg;
  (void)vmt__fault_hit(VMT__FAULT_LOADER_HELD);   /* a hook point only */
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
    b->adds = info->dlpi_adds;
    b->subs = info->dlpi_subs;
  }
  return 1;   /* the first object tells the counts: stop there */
}

static int by_text(const void *a, const void *b) {
  uintptr_t x = ((const cfi_object_t *)a)->text_lo, y = ((const cfi_object_t *)b)->text_lo;
  return x < y ? -1 : x > y;
}

/* Under build_lock: a new table, published; the old one retired. 0 or -ENOMEM. */
static int rebuild_locked(void) {
  builder_t b = {0};
  vmt_os_loader_enter(true);
  dl_iterate_phdr(add_object, &b);
  vmt_os_loader_exit();
  if (b.oom) {
    free(b.objects);
    return -ENOMEM;
  }
  cfi_table_t *t = malloc(sizeof(*t) + (size_t)b.count * sizeof(cfi_object_t));
  if (t == NULL) {
    free(b.objects);
    return -ENOMEM;
  }
  t->retired_next = NULL;
  t->adds = b.adds;
  t->subs = b.subs;
  t->count = b.count;
  if (b.count) memcpy(t->objects, b.objects, (size_t)b.count * sizeof(cfi_object_t));
  free(b.objects);
  qsort(t->objects, t->count, sizeof(cfi_object_t), by_text);
  cfi_table_t *old = atomic_exchange_explicit(&current, t, memory_order_acq_rel);
  if (old) {
    old->retired_next = retired;
    retired = old;
  }
  return 0;
}

int vmt__cfi_prepare(void) {
  vmt_os_futex_lock(&build_lock);
  int rc = atomic_load_explicit(&current, memory_order_relaxed) ? 0 : rebuild_locked();
  vmt_os_futex_unlock(&build_lock);
  return rc;
}

bool vmt__cfi_refresh(void) {
  vmt_os_futex_lock(&build_lock);
  cfi_table_t *t = atomic_load_explicit(&current, memory_order_relaxed);
  bool rebuilt = false;
  if (t) {
    builder_t b = {0};
    vmt_os_loader_enter(true);
    dl_iterate_phdr(counts_only, &b);
    vmt_os_loader_exit();
    if (b.adds != t->adds || b.subs != t->subs) rebuilt = rebuild_locked() == 0;
  }
  vmt_os_futex_unlock(&build_lock);
  return rebuilt;
}

void vmt__cfi_release_retired(void) {
  vmt_os_futex_lock(&build_lock);
  cfi_table_t *r = retired;
  retired = NULL;
  vmt_os_futex_unlock(&build_lock);
  while (r) {
    cfi_table_t *next = r->retired_next;
    free(r);
    r = next;
  }
}

int64_t vmt__cfi_unknown_pcs(void) {
  return atomic_load_explicit(&unknown_pcs, memory_order_relaxed);
}

bool vmt__cfi_ready(void) { return atomic_load_explicit(&current, memory_order_acquire) != NULL; }

/* ---- The walk (async-signal-safe) -------------------------------------------------------- */

enum { NREGS = 17, REG_RBP_DW = 6, REG_RSP_DW = 7, REG_RA_DW = 16, STATES = 8 };

/* DWARF register numbers (x86-64 psABI) to the kernel's gregs. */
static const uint8_t greg_of[NREGS] = {
    REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP, REG_RSP, REG_R8,
    REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP};

typedef struct regs {
  uintptr_t r[NREGS];
  uint32_t known;   /* bit per register */
} regs_t;

enum { RULE_SAME = 0, RULE_UNDEF, RULE_OFFSET, RULE_VAL_OFFSET, RULE_REG, RULE_EXPR,
       RULE_VAL_EXPR };

typedef struct rule {
  uint8_t kind;
  uint8_t reg;
  int64_t off;
  const uint8_t *expr;   /* an expression's bytes, expr_len of them */
  uint32_t expr_len;
} rule_t;

/* A register's rule is reg[r] if bit r of `set` is on, else "same value": a row is set up
 * without clearing all the rules (copies of whole rows were most of a step's time). */
typedef struct row {
  uint32_t set;
  rule_t reg[NREGS];
  uint8_t cfa_reg;
  int64_t cfa_off;
  const uint8_t *cfa_expr;   /* non-NULL: the CFA is this expression's value */
  uint32_t cfa_expr_len;
} row_t;

typedef struct walk_ctx {
  uintptr_t stack_lo, stack_hi;   /* stack words readable: [lo, hi) */
} walk_ctx_t;

typedef struct reader {
  const uint8_t *p, *end;
  bool bad;
} reader_t;

CFI_NOSAN static bool stack_read(const walk_ctx_t *w, uintptr_t addr, uintptr_t *out) {
  if (addr < w->stack_lo || addr > w->stack_hi - sizeof(uintptr_t)) return false;
  *out = *(const volatile uintptr_t *)addr;
  return true;
}

static uint8_t rd_u8(reader_t *r) {
  if (r->p >= r->end) {
    r->bad = true;
    return 0;
  }
  return *r->p++;
}

static uint64_t rd_fixed(reader_t *r, int bytes) {
  if (r->end - r->p < bytes) {
    r->bad = true;
    r->p = r->end;
    return 0;
  }
  uint64_t v = 0;
  memcpy(&v, r->p, (size_t)bytes);
  r->p += bytes;
  return v;
}

static uint64_t rd_uleb(reader_t *r) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    uint8_t b = rd_u8(r);
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  r->bad = true;
  return 0;
}

static int64_t rd_sleb(reader_t *r) {
  uint64_t v = 0;
  int shift = 0;
  uint8_t b;
  do {
    if (shift >= 64) {
      r->bad = true;
      return 0;
    }
    b = rd_u8(r);
    v |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
  } while (b & 0x80);
  if (shift < 64 && (b & 0x40)) v |= ~(uint64_t)0 << shift;
  return (int64_t)v;
}

/* An encoded pointer of .eh_frame (DW_EH_PE_*): absptr/udata/sdata of 2, 4, 8 bytes or leb128,
 * absolute or pc-relative. `value_only` reads a length (the FDE's address range): the format
 * without the application. Indirect pointers (personality) are only skipped by the caller. */
static uintptr_t rd_encoded(reader_t *r, uint8_t enc, bool value_only) {
  if (enc == 0xff) return 0;   /* omit */
  uintptr_t at = (uintptr_t)r->p, v;
  switch (enc & 0x0f) {
    case 0x00: v = (uintptr_t)rd_fixed(r, 8); break;
    case 0x01: v = (uintptr_t)rd_uleb(r); break;
    case 0x02: v = (uintptr_t)rd_fixed(r, 2); break;
    case 0x03: v = (uintptr_t)rd_fixed(r, 4); break;
    case 0x04: v = (uintptr_t)rd_fixed(r, 8); break;
    case 0x09: v = (uintptr_t)rd_sleb(r); break;
    case 0x0a: v = (uintptr_t)(intptr_t)(int16_t)rd_fixed(r, 2); break;
    case 0x0b: v = (uintptr_t)(intptr_t)(int32_t)rd_fixed(r, 4); break;
    case 0x0c: v = (uintptr_t)rd_fixed(r, 8); break;
    default: r->bad = true; return 0;
  }
  if (value_only) return v;
  switch (enc & 0x70) {
    case 0x00: break;
    case 0x10: v += at; break;
    default: r->bad = true; return 0;   /* textrel, datarel, funcrel: not in .eh_frame FDEs */
  }
  return v;
}

static bool reg_get(const regs_t *g, uint64_t reg, uintptr_t *out) {
  if (reg >= NREGS || !(g->known & (1u << reg))) return false;
  *out = g->r[reg];
  return true;
}

/* A DWARF expression over the registers and the stack (deref reads stack words only). */
static bool eval_expr(const walk_ctx_t *w, const regs_t *g, const uint8_t *expr, uint32_t len,
                      bool push_cfa, uintptr_t cfa, uintptr_t *out) {
  uintptr_t st[16];
  int sp = 0;
  if (push_cfa) st[sp++] = cfa;
  reader_t r = {expr, expr + len, false};
  while (r.p < r.end) {
    uint8_t op = rd_u8(&r);
    uintptr_t a, b, v;
    if (op >= 0x30 && op <= 0x4f) {   /* lit0..31 */
      v = op - 0x30;
      goto push;
    }
    if (op >= 0x50 && op <= 0x6f) {   /* reg0..31 */
      if (!reg_get(g, op - 0x50, &v)) return false;
      goto push;
    }
    if (op >= 0x70 && op <= 0x8f) {   /* breg0..31 */
      int64_t off = rd_sleb(&r);
      if (!reg_get(g, op - 0x70, &v)) return false;
      v += (uintptr_t)off;
      goto push;
    }
    switch (op) {
      case 0x03: v = (uintptr_t)rd_fixed(&r, 8); goto push;            /* addr */
      case 0x08: v = (uintptr_t)rd_fixed(&r, 1); goto push;            /* const1u */
      case 0x09: v = (uintptr_t)(intptr_t)(int8_t)rd_fixed(&r, 1); goto push;
      case 0x0a: v = (uintptr_t)rd_fixed(&r, 2); goto push;
      case 0x0b: v = (uintptr_t)(intptr_t)(int16_t)rd_fixed(&r, 2); goto push;
      case 0x0c: v = (uintptr_t)rd_fixed(&r, 4); goto push;
      case 0x0d: v = (uintptr_t)(intptr_t)(int32_t)rd_fixed(&r, 4); goto push;
      case 0x0e: case 0x0f: v = (uintptr_t)rd_fixed(&r, 8); goto push;
      case 0x10: v = (uintptr_t)rd_uleb(&r); goto push;                /* constu */
      case 0x11: v = (uintptr_t)rd_sleb(&r); goto push;                /* consts */
      case 0x92: {                                                     /* bregx */
        uint64_t reg = rd_uleb(&r);
        int64_t off = rd_sleb(&r);
        if (!reg_get(g, reg, &v)) return false;
        v += (uintptr_t)off;
        goto push;
      }
      case 0x96: continue;                                             /* nop */
      case 0x12:                                                       /* dup */
        if (sp < 1) return false;
        v = st[sp - 1];
        goto push;
      case 0x14:                                                       /* over */
        if (sp < 2) return false;
        v = st[sp - 2];
        goto push;
      case 0x13:                                                       /* drop */
        if (sp < 1) return false;
        sp--;
        continue;
      case 0x16:                                                       /* swap */
        if (sp < 2) return false;
        a = st[sp - 1];
        st[sp - 1] = st[sp - 2];
        st[sp - 2] = a;
        continue;
      case 0x06:                                                       /* deref */
        if (sp < 1 || !stack_read(w, st[sp - 1], &st[sp - 1])) return false;
        continue;
      case 0x1f: if (sp < 1) return false; st[sp - 1] = -st[sp - 1]; continue;   /* neg */
      case 0x20: if (sp < 1) return false; st[sp - 1] = ~st[sp - 1]; continue;   /* not */
      case 0x23:                                                       /* plus_uconst */
        if (sp < 1) return false;
        st[sp - 1] += (uintptr_t)rd_uleb(&r);
        continue;
      case 0x1a: case 0x1c: case 0x1e: case 0x21: case 0x22: case 0x24: case 0x25: case 0x26:
      case 0x27: case 0x29: case 0x2a: case 0x2b: case 0x2c: case 0x2d: case 0x2e:
        if (sp < 2) return false;
        b = st[--sp];
        a = st[sp - 1];
        switch (op) {
          case 0x1a: v = a & b; break;
          case 0x1c: v = a - b; break;
          case 0x1e: v = a * b; break;
          case 0x21: v = a | b; break;
          case 0x22: v = a + b; break;
          case 0x24: v = b >= 64 ? 0 : a << b; break;
          case 0x25: v = b >= 64 ? 0 : a >> b; break;
          case 0x26: v = b >= 64 ? (uintptr_t)((intptr_t)a >> 63) : (uintptr_t)((intptr_t)a >> b);
                     break;
          case 0x27: v = a ^ b; break;
          case 0x29: v = a == b; break;
          case 0x2a: v = (intptr_t)a >= (intptr_t)b; break;
          case 0x2b: v = (intptr_t)a > (intptr_t)b; break;
          case 0x2c: v = (intptr_t)a <= (intptr_t)b; break;
          case 0x2d: v = (intptr_t)a < (intptr_t)b; break;
          default: v = a != b; break;
        }
        st[sp - 1] = v;
        continue;
      default:
        return false;   /* branches, calls, pieces, TLS: not in any CFI we unwind */
    }
  push:
    if (r.bad || sp == (int)(sizeof(st) / sizeof(st[0]))) return false;
    st[sp++] = v;
  }
  if (r.bad || sp < 1) return false;
  *out = st[sp - 1];
  return true;
}

/* The object whose executable range holds pc, or NULL. */
static const cfi_object_t *find_object(const cfi_table_t *t, uintptr_t pc) {
  uint32_t lo = 0, hi = t->count;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (t->objects[mid].text_lo <= pc) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return NULL;
  const cfi_object_t *o = &t->objects[lo - 1];
  return pc < o->text_hi ? o : NULL;
}

/* The FDE whose initial location is the greatest <= pc (.eh_frame_hdr's sorted table). */
static uintptr_t find_fde(const cfi_object_t *o, uintptr_t pc) {
  intptr_t rel = (intptr_t)(pc - o->hdr);
  if (rel != (intptr_t)(int32_t)rel) return 0;
  uint32_t lo = 0, hi = o->count;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (o->table[2 * mid] <= (int32_t)rel) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return 0;
  return o->hdr + (uintptr_t)(intptr_t)o->table[2 * (lo - 1) + 1];
}

typedef struct cie_info {
  uint64_t code_align;
  int64_t data_align;
  uint64_t ra_reg;
  uint8_t fde_enc;
  bool has_z;
  bool signal_frame;
  const uint8_t *insns, *insns_end;
} cie_info_t;

/* One CIE or FDE record at p: its length and where it ends, inside [lo, hi). */
static bool record_bounds(uintptr_t p, uintptr_t lo, uintptr_t hi, reader_t *r) {
  if (p < lo || p > hi - 4) return false;
  uint32_t len;
  memcpy(&len, (const void *)p, 4);
  if (len == 0 || len == 0xffffffffu) return false;   /* terminator, or 64-bit DWARF */
  if ((uintptr_t)len > hi - (p + 4)) return false;
  r->p = (const uint8_t *)(p + 4);
  r->end = r->p + len;
  r->bad = false;
  return true;
}

static bool parse_cie(uintptr_t cie, const cfi_object_t *o, cie_info_t *c) {
  reader_t r;
  if (!record_bounds(cie, o->data_lo, o->data_hi, &r)) return false;
  if (rd_fixed(&r, 4) != 0) return false;   /* a CIE's id is 0 */
  uint8_t version = rd_u8(&r);
  if (version != 1 && version != 3) return false;
  const char *aug = (const char *)r.p;
  size_t n = 0;
  while (r.p < r.end && *r.p) r.p++, n++;
  if (rd_u8(&r) != 0 || r.bad) return false;
  c->code_align = rd_uleb(&r);
  c->data_align = rd_sleb(&r);
  c->ra_reg = version == 1 ? rd_u8(&r) : rd_uleb(&r);
  c->fde_enc = 0;   /* absptr */
  c->has_z = false;
  c->signal_frame = false;
  const uint8_t *aug_end = NULL;
  for (size_t i = 0; i < n && !r.bad; i++) {
    switch (aug[i]) {
      case 'z': {
        if (i != 0) return false;
        uint64_t len = rd_uleb(&r);
        if (len > (uint64_t)(r.end - r.p)) return false;
        c->has_z = true;
        aug_end = r.p + len;
        break;
      }
      case 'R': c->fde_enc = rd_u8(&r); break;
      case 'L': (void)rd_u8(&r); break;
      case 'P': {
        uint8_t enc = rd_u8(&r);
        (void)rd_encoded(&r, enc & 0x7f, true);   /* skipped, never followed */
        break;
      }
      case 'S': c->signal_frame = true; break;
      default:
        /* Unknown letters: with 'z' the data can be skipped, else nothing after is known. */
        if (!c->has_z) return false;
        i = n;
        break;
    }
  }
  if (aug_end) r.p = aug_end;
  if (r.bad || c->ra_reg >= NREGS || c->code_align == 0) return false;
  c->insns = r.p;
  c->insns_end = r.end;
  return true;
}

static inline void set_rule(row_t *row, uint64_t reg, rule_t rule) {
  if (reg >= NREGS) return;   /* vector registers: not tracked */
  row->reg[reg] = rule;
  row->set |= 1u << reg;
}

static inline void restore_rule(row_t *row, uint64_t reg, const row_t *initial) {
  if (reg >= NREGS) return;
  if (initial->set & (1u << reg)) row->reg[reg] = initial->reg[reg];
  row->set = (row->set & ~(1u << reg)) | (initial->set & (1u << reg));
}

/* Runs a CFA program from loc until the row that covers target; false on malformed input. */
static bool run_program(const cie_info_t *c, const uint8_t *p, const uint8_t *end, uintptr_t *loc,
                        uintptr_t target, row_t *row, const row_t *initial, row_t *saved,
                        int *nsaved) {
  reader_t r = {p, end, false};
  while (r.p < r.end && !r.bad) {
    uint8_t op = rd_u8(&r);
    uint64_t reg = 0, delta;
    int64_t off;
    switch (op & 0xc0) {
      case 0x40:
        delta = (op & 0x3f) * c->code_align;
        goto advance;
      case 0x80:
        reg = op & 0x3f;
        off = (int64_t)rd_uleb(&r) * c->data_align;
        set_rule(row, reg, (rule_t){.kind = RULE_OFFSET, .off = off});
        continue;
      case 0xc0:
        reg = op & 0x3f;
        if (initial == NULL) return false;
        restore_rule(row, reg, initial);
        continue;
      default:
        break;
    }
    switch (op) {
      case 0x00: continue;   /* nop */
      case 0x01: {           /* set_loc */
        uintptr_t to = rd_encoded(&r, c->fde_enc, false);
        if (r.bad || to < *loc) return false;
        if (to > target) return true;
        *loc = to;
        continue;
      }
      case 0x02: delta = rd_fixed(&r, 1) * c->code_align; goto advance;
      case 0x03: delta = rd_fixed(&r, 2) * c->code_align; goto advance;
      case 0x04: delta = rd_fixed(&r, 4) * c->code_align; goto advance;
      case 0x05:   /* offset_extended */
      case 0x11:   /* offset_extended_sf */
      case 0x2f:   /* GNU_negative_offset_extended */
      case 0x14:   /* val_offset */
      case 0x15: { /* val_offset_sf */
        reg = rd_uleb(&r);
        off = op == 0x11 || op == 0x15 ? rd_sleb(&r) : (int64_t)rd_uleb(&r);
        if (op == 0x2f) off = -off;
        set_rule(row, reg,
                 (rule_t){.kind = op == 0x14 || op == 0x15 ? RULE_VAL_OFFSET : RULE_OFFSET,
                          .off = off * c->data_align});
        continue;
      }
      case 0x06:   /* restore_extended */
        reg = rd_uleb(&r);
        if (initial == NULL) return false;
        restore_rule(row, reg, initial);
        continue;
      case 0x07:   /* undefined */
        reg = rd_uleb(&r);
        set_rule(row, reg, (rule_t){.kind = RULE_UNDEF});
        continue;
      case 0x08:   /* same_value */
        reg = rd_uleb(&r);
        set_rule(row, reg, (rule_t){.kind = RULE_SAME});
        continue;
      case 0x09: { /* register */
        reg = rd_uleb(&r);
        uint64_t from = rd_uleb(&r);
        if (reg < NREGS && from >= NREGS) return false;
        set_rule(row, reg, (rule_t){.kind = RULE_REG, .reg = (uint8_t)from});
        continue;
      }
      case 0x0a:   /* remember_state */
        if (*nsaved == STATES) return false;
        saved[(*nsaved)++] = *row;
        continue;
      case 0x0b:   /* restore_state: the whole row, the CFA rule with it (as libgcc does) */
        if (*nsaved == 0) return false;
        *row = saved[--(*nsaved)];
        continue;
      case 0x0c:   /* def_cfa */
        reg = rd_uleb(&r);
        row->cfa_off = (int64_t)rd_uleb(&r);
        goto cfa_reg;
      case 0x12:   /* def_cfa_sf */
        reg = rd_uleb(&r);
        row->cfa_off = rd_sleb(&r) * c->data_align;
        goto cfa_reg;
      case 0x0d:   /* def_cfa_register */
        reg = rd_uleb(&r);
      cfa_reg:
        if (reg >= NREGS) return false;
        row->cfa_reg = (uint8_t)reg;
        row->cfa_expr = NULL;
        continue;
      case 0x0e:   /* def_cfa_offset */
        row->cfa_off = (int64_t)rd_uleb(&r);
        continue;
      case 0x13:   /* def_cfa_offset_sf */
        row->cfa_off = rd_sleb(&r) * c->data_align;
        continue;
      case 0x0f: { /* def_cfa_expression */
        uint64_t len = rd_uleb(&r);
        if (len > (uint64_t)(r.end - r.p)) return false;
        row->cfa_expr = r.p;
        row->cfa_expr_len = (uint32_t)len;
        r.p += len;
        continue;
      }
      case 0x10:   /* expression */
      case 0x16: { /* val_expression */
        reg = rd_uleb(&r);
        uint64_t len = rd_uleb(&r);
        if (len > (uint64_t)(r.end - r.p)) return false;
        set_rule(row, reg, (rule_t){.kind = op == 0x10 ? RULE_EXPR : RULE_VAL_EXPR,
                                    .expr = r.p, .expr_len = (uint32_t)len});
        r.p += len;
        continue;
      }
      case 0x2e:   /* GNU_args_size */
        (void)rd_uleb(&r);
        continue;
      default:
        return false;
    }
  advance:
    if (r.bad) return false;
    if (target - *loc < delta) return true;   /* the next row starts past target */
    *loc += delta;
  }
  return !r.bad;
}

/* The row of the frame at target: false if there is no FDE for it or the CFI is malformed.
 * *signal_frame: the FDE's CIE marks a signal frame (its caller is looked up at pc). */
static bool find_row(const cfi_object_t *o, uintptr_t target, row_t *row, bool *signal_frame,
                     uint64_t *ra_reg) {
  uintptr_t fde = find_fde(o, target);
  reader_t r;
  if (fde == 0 || !record_bounds(fde, o->data_lo, o->data_hi, &r)) return false;
  uintptr_t id_at = (uintptr_t)r.p;
  uint32_t cie_off = (uint32_t)rd_fixed(&r, 4);
  if (cie_off == 0 || cie_off > id_at) return false;   /* a CIE, not an FDE */
  cie_info_t c;
  if (!parse_cie(id_at - cie_off, o, &c)) return false;
  uintptr_t begin = rd_encoded(&r, c.fde_enc, false);
  uintptr_t range = rd_encoded(&r, c.fde_enc & 0x0f, true);
  if (r.bad || target < begin || target - begin >= range) return false;
  if (c.has_z) {
    uint64_t len = rd_uleb(&r);
    if (r.bad || len > (uint64_t)(r.end - r.p)) return false;
    r.p += len;
  }
  row->set = 0;
  row->cfa_reg = REG_RSP_DW;
  row->cfa_off = 0;
  row->cfa_expr = NULL;
  row->cfa_expr_len = 0;
  row_t initial, saved[STATES];
  int nsaved = 0;
  uintptr_t loc = begin;
  if (!run_program(&c, c.insns, c.insns_end, &loc, target, row, NULL, saved, &nsaved))
    return false;
  /* The CIE's rules (restore goes back to them): the set ones only. */
  initial.set = row->set;
  initial.cfa_reg = row->cfa_reg;
  initial.cfa_off = row->cfa_off;
  initial.cfa_expr = row->cfa_expr;
  initial.cfa_expr_len = row->cfa_expr_len;
  for (uint32_t m = row->set; m; m &= m - 1) {
    int k = __builtin_ctz(m);
    initial.reg[k] = row->reg[k];
  }
  loc = begin;
  if (!run_program(&c, r.p, r.end, &loc, target, row, &initial, saved, &nsaved)) return false;
  *signal_frame = c.signal_frame;
  *ra_reg = c.ra_reg;
  return true;
}

/* glibc's x86-64 __restore_rt: mov $15,%rax; syscall. */
static const uint8_t restore_rt_code[9] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};

/* Read in place, byte by byte: no libc call (nor a sanitizer's interceptor) in the walk. */
static bool is_restore_rt(const cfi_object_t *o, uintptr_t pc) {
  if (pc < o->text_lo || pc > o->text_hi - sizeof(restore_rt_code)) return false;
  const volatile uint8_t *code = (const volatile uint8_t *)pc;
  for (size_t i = 0; i < sizeof(restore_rt_code); i++)
    if (code[i] != restore_rt_code[i]) return false;
  return true;
}

static bool from_ucontext(const walk_ctx_t *w, uintptr_t uc, regs_t *g) {
  uintptr_t gregs = uc + offsetof(ucontext_t, uc_mcontext.gregs);
  regs_t n = {.known = (1u << NREGS) - 1};
  for (int i = 0; i < NREGS; i++)
    if (!stack_read(w, gregs + (uintptr_t)greg_of[i] * sizeof(greg_t), &n.r[i])) return false;
  *g = n;
  return true;
}

/* One step from the frame in g (its pc looked up at target): the caller's registers. */
static bool step_cfi(const walk_ctx_t *w, const cfi_object_t *o, uintptr_t target, regs_t *g,
                     bool *caller_exact, bool *outermost) {
  row_t row;
  bool sig = false;
  uint64_t ra_reg = REG_RA_DW;
  if (!find_row(o, target, &row, &sig, &ra_reg)) return false;
  uintptr_t cfa;
  if (row.cfa_expr) {
    if (!eval_expr(w, g, row.cfa_expr, row.cfa_expr_len, false, 0, &cfa)) return false;
  } else {
    uintptr_t base;
    if (!reg_get(g, row.cfa_reg, &base)) return false;
    cfa = base + (uintptr_t)row.cfa_off;
  }
  if ((row.set & (1u << ra_reg)) && row.reg[ra_reg].kind == RULE_UNDEF) {
    *outermost = true;
    return true;
  }
  regs_t n;   /* every r[i] is written below (no memset: it showed in the profile) */
  n.known = g->known;
  for (int i = 0; i < NREGS; i++) {
    const rule_t *ru = &row.reg[i];
    uintptr_t v = g->r[i], a;
    switch ((row.set & (1u << i)) ? ru->kind : RULE_SAME) {
      case RULE_SAME: break;
      case RULE_UNDEF: n.known &= ~(1u << i); break;
      case RULE_OFFSET:
        /* An epilogue's rows keep the saved registers' rules after their pops (gcc emits no
         * restore for them): a slot below rsp was popped already, and the register holds what
         * the slot holds (libunwind reads the dead slot). Past the stack: unknown. */
        a = cfa + (uintptr_t)ru->off;
        if (a < g->r[REG_RSP_DW]) break;
        if (stack_read(w, a, &v)) n.known |= 1u << i;
        else n.known &= ~(1u << i);
        break;
      case RULE_VAL_OFFSET: v = cfa + (uintptr_t)ru->off; n.known |= 1u << i; break;
      case RULE_REG:
        if (!reg_get(g, ru->reg, &v)) n.known &= ~(1u << i);
        break;
      case RULE_EXPR:
        if (eval_expr(w, g, ru->expr, ru->expr_len, true, cfa, &a) && stack_read(w, a, &v))
          n.known |= 1u << i;
        else
          n.known &= ~(1u << i);
        break;
      default: /* RULE_VAL_EXPR */
        if (eval_expr(w, g, ru->expr, ru->expr_len, true, cfa, &v)) n.known |= 1u << i;
        else n.known &= ~(1u << i);
        break;
    }
    n.r[i] = v;
  }
  if (!(n.known & (1u << ra_reg))) return false;
  n.r[REG_RA_DW] = n.r[ra_reg];
  n.known |= 1u << REG_RA_DW;
  /* The caller's rsp is the CFA; it must move up the stack (a loop or garbage otherwise). */
  if (cfa <= g->r[REG_RSP_DW] || cfa > w->stack_hi) return false;
  n.r[REG_RSP_DW] = cfa;
  n.known |= 1u << REG_RSP_DW;
  *caller_exact = sig;
  *g = n;
  return true;
}

CFI_NOSAN int32_t vmt__cfi_walk(const void *ucontext, uintptr_t stack_lo, uintptr_t stack_hi,
                                uintptr_t *pcs, int32_t max) {
  if (ucontext == NULL || pcs == NULL || max <= 0) return -EINVAL;
  const ucontext_t *uc = ucontext;
  regs_t g = {.known = (1u << NREGS) - 1};
  for (int i = 0; i < NREGS; i++) g.r[i] = (uintptr_t)uc->uc_mcontext.gregs[greg_of[i]];
  uintptr_t pc = g.r[REG_RA_DW];
  if (pc == 0) return -ENOENT;
  pcs[0] = pc;
  const cfi_table_t *t = atomic_load_explicit(&current, memory_order_acquire);
  uintptr_t rsp = g.r[REG_RSP_DW];
  if (t == NULL || stack_hi <= stack_lo || rsp < stack_lo || rsp >= stack_hi) return 1;
  walk_ctx_t w = {.stack_lo = rsp, .stack_hi = stack_hi};
  int32_t n = 1;
  bool exact = true;   /* the interrupted pc is the instruction itself, not a return address */
  while (n < max) {
    /* A caller's pc is a return address: its call is the byte before, which may be the last
     * of a function (a call to a noreturn one), or of the object's text. */
    uintptr_t target = exact ? pc : pc - 1;
    const cfi_object_t *o = find_object(t, target);
    if (o == NULL) {
      atomic_fetch_add_explicit(&unknown_pcs, 1, memory_order_relaxed);
      break;
    }
    bool caller_exact = false, outermost = false;
    if (is_restore_rt(o, pc)) {
      /* The kernel's rt_sigframe: the handler returned to here with rsp at its ucontext. */
      uintptr_t old_sp = g.r[REG_RSP_DW];
      if (!from_ucontext(&w, old_sp, &g) || g.r[REG_RSP_DW] <= old_sp ||
          g.r[REG_RSP_DW] >= stack_hi)
        break;
      caller_exact = true;
    } else if (!step_cfi(&w, o, target, &g, &caller_exact, &outermost) ||
               outermost) {
      break;
    }
    pc = g.r[REG_RA_DW];
    if (pc == 0) break;
    pcs[n++] = pc;
    exact = caller_exact;
  }
  return n;
}

#endif /* VMT__CFI_UNWINDER */
