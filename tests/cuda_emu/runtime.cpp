/* The CPU emulator's execution engine: runs a grid of CUDA blocks one
   block after another, each CUDA thread of a block as a cooperative fiber
   on its own stack. A fiber runs until it reaches a barrier
   (__syncthreads, a warp intrinsic) or exits; then the next runnable fiber
   runs (lanes of the same warp first, then the next warp; or a random one
   with MYSAMPLE_CUDA_EMU_SCHEDULE=random[:seed]). Barriers that cannot
   complete (a thread exited while others wait, a warp intrinsic whose
   lanes diverge, a lane at __syncthreads while its warp waits for it at a
   shuffle) fail the launch with a message instead of hanging.
   Fibers switch with a few lines of assembly on x86-64 and AArch64
   (ucontext elsewhere, or with MYSAMPLE_CUDA_EMU_FIBERS=ucontext: it
   saves the signal mask with a system call per switch, ~10x slower). */
#include "shim.h"
#include "runtime.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#ifdef MS_EMU_ASAN
#  include <sanitizer/common_interface_defs.h>
#  include <sanitizer/asan_interface.h>
#endif

/* The race check (MS_EMU_TSAN: libcuda_emu_race.so, the kernels compiled
   with ThreadSanitizer, this file without): each CUDA thread is a TSan
   fiber, and the switches between fibers carry no ordering of their own,
   so TSan orders two threads' accesses only where a GPU would: across a
   __syncthreads or a __syncwarp of both (a release when a thread arrives,
   an acquire when it leaves, on a sync object of that barrier's
   generation: a thread that runs on to the next barrier before another
   has left this one must not order that one after its new writes), and
   across blocks and launches (which the emulator runs one after another;
   the GPU's need atomics and fences, checked on request below). Shuffles
   and ballots order nothing, as on a GPU. A shared or global location
   written by one thread and read or written by another between the same
   two barriers, not both atomically, is reported as a data race.

   Across blocks (MYSAMPLE_CUDA_EMU_RACE=blocks): the blocks of a launch
   are not ordered either, only a launch after the one before. What orders
   them is what orders them on a GPU, a __threadfence before a global
   atomic that another block's atomic then observes: a fence releases
   everything its thread did before it, and a global atomic acquires what
   every fence so far released (more order than a GPU promises: an atomic
   that observed nothing of the fenced block still acquires). So a block
   that reads what another wrote once an atomic count says it is done
   (the last block of a row, say) races unless the writer fenced between
   its writes and its count. A row's blocks run on fibers (and stacks) of
   their own, and each block gets fresh shared memory and barrier sync
   objects (race_fresh_block), since the GPU's blocks have their own.
   MYSAMPLE_CUDA_EMU_RACE=blocks,nofence drops every fence's release: the
   control, whose races must be found. */
#ifdef MS_EMU_TSAN
#  include <sanitizer/tsan_interface.h>
#  define MS_EMU_RELEASE(p) __tsan_release((void *)(p))
#  define MS_EMU_ACQUIRE(p) __tsan_acquire((void *)(p))
#else
#  define MS_EMU_RELEASE(p) ((void)(p))
#  define MS_EMU_ACQUIRE(p) ((void)(p))
#endif

#if defined(__x86_64__) || defined(__aarch64__)
#  define MS_EMU_HAVE_ASM 1
#  if defined(__x86_64__)
#    include <xmmintrin.h>
#  endif
#endif

/* The linker's bounds of the ms_emu_shared section (see __shared__ in shim.h). */
extern "C" char __start_ms_emu_shared[] __attribute__((weak, visibility("hidden")));
extern "C" char __stop_ms_emu_shared[] __attribute__((weak, visibility("hidden")));
static char *const ms_emu_shared_start = __start_ms_emu_shared;
static char *const ms_emu_shared_stop = __stop_ms_emu_shared;

/* ---- fibers ------------------------------------------------------------- */

/* A thread's state lives in its warp's lane masks: live (not exited),
   run (runnable), arrived (waiting at a warp intrinsic), at_block
   (waiting at __syncthreads). */

struct ms_emu_fiber {
  ms_emu_thread_ids ids;       /* what threadIdx reads */
  void *sp;                    /* saved stack pointer (assembly switch) */
  ucontext_t *uc;              /* ucontext switch */
  char *stack_lo;
  size_t stack_size;
  const char *wait_what;       /* the barrier it waits at, for messages */
  uint64_t value, result;      /* warp exchange */
  int arg;
  void *asan_fake;
  void *tsan;                  /* its TSan fiber (MS_EMU_TSAN) */
};

struct ms_emu_warp {
  unsigned exists;             /* lanes that exist in the block */
  unsigned live;               /* lanes that have not exited */
  unsigned run;                /* lanes that are runnable */
  unsigned arrived;            /* lanes waiting at the pending exchange */
  unsigned at_block;           /* lanes waiting at __syncthreads */
  unsigned mask;               /* that exchange's mask, op and width */
  int op, width;
  unsigned gen;                /* exchanges completed (the race check's sync objects) */
};

ms_emu_thread_ids *ms_emu_cur_ids;
ms_emu_dim3 ms_emu_block_idx, ms_emu_block_dim, ms_emu_grid_dim;

namespace {

/* A pool of fibers and their stacks, grown to the largest block seen. */
struct fiber_pool {
  ms_emu_fiber *fib;
  ucontext_t *ucs;
  char *stacks;
  size_t stack_size, stride, mapped;
  unsigned capacity;
};
/* The race check across blocks: a pool per blockIdx.y (modulo this, or
   fewer pools for large blocks: TSan counts each fiber as a thread and
   dies past 8128 of them, so the pools hold at most MS_EMU_RACE_FIBERS
   fibers in all, the rest left for the process's real threads) */
#define MS_EMU_RACE_POOLS 64
#define MS_EMU_RACE_FIBERS 6144

struct engine {
  /* the fiber pool in use (the race check across blocks swaps it) */
  ms_emu_fiber *fib;
  ucontext_t *ucs;
  char *stacks;
  size_t stack_size, stride, mapped;
  unsigned capacity;
  fiber_pool pools[MS_EMU_RACE_POOLS];
  unsigned pool;
  /* the block being run */
  unsigned n_threads, n_warps, n_live, block_arrived;
  ms_emu_warp warps[32];
  ms_emu_fiber *cur;
  const ms_emu_kernel *kernel;
  void *const *params;
  /* the scheduler's (host thread's) context */
  void *sched_sp;
  ucontext_t sched_uc;
  const void *sched_stack_lo;
  size_t sched_stack_size;
  void *sched_fake;
  int from_sched;
  /* options */
  int use_ucontext, random_schedule, options_read;
  uint64_t rng;
  /* a failed launch */
  int failed;
  char error[1024];
  /* the race check's sync objects (their addresses): the block's
     barriers by generation parity, each warp's __syncwarp likewise,
     the scheduler to a block's threads and back */
  unsigned bar_gen;
  char bar_sync_static[2 + 64], block_in, block_out, fence;
  char *bar_sync, *warp_sync;   /* bar_sync[gen], warp_sync[2 * warp + gen] (a block's own across blocks) */
  void *sched_tsan;
  int race_blocks, race_nofence;   /* MYSAMPLE_CUDA_EMU_RACE (MS_EMU_TSAN) */
  /* counters (MYSAMPLE_CUDA_EMU_STATS) */
  unsigned long long n_switches, n_blocks, n_launches;
  unsigned long long n_prefetches, prefetch_bytes;
};

engine E;

int parse_schedule(const char *s) {
  if (!strcmp(s, "rr")) { E.random_schedule = 0; return 0; }
  if (strncmp(s, "random", 6) != 0 || (s[6] != 0 && s[6] != ':')) return -1;
  E.random_schedule = 1;
  E.rng = s[6] == ':' ? strtoull(s + 7, NULL, 0) : 0x9E3779B97F4A7C15ull;
  if (!E.rng) E.rng = 1;
  return 0;
}

void read_options() {
  if (E.options_read) return;
  E.options_read = 1;
  const char *f = getenv("MYSAMPLE_CUDA_EMU_FIBERS");
#ifdef MS_EMU_HAVE_ASM
  E.use_ucontext = f && !strcmp(f, "ucontext");
#else
  (void)f;
  E.use_ucontext = 1;
#endif
  const char *s = getenv("MYSAMPLE_CUDA_EMU_SCHEDULE");
  if (s && *s && parse_schedule(s) != 0) fprintf(stderr, "[cuda-emu] MYSAMPLE_CUDA_EMU_SCHEDULE=%s: want rr or random[:seed]\n", s);
  E.bar_sync = E.bar_sync_static;
  E.warp_sync = E.bar_sync_static + 2;
  const char *r = getenv("MYSAMPLE_CUDA_EMU_RACE");
  if (r && *r) {
#ifdef MS_EMU_TSAN
    E.race_blocks = !strcmp(r, "blocks") || !strcmp(r, "blocks,nofence");
    E.race_nofence = !strcmp(r, "blocks,nofence");
    if (!E.race_blocks) fprintf(stderr, "[cuda-emu] MYSAMPLE_CUDA_EMU_RACE=%s: want blocks or blocks,nofence\n", r);
#else
    fprintf(stderr, "[cuda-emu] MYSAMPLE_CUDA_EMU_RACE=%s: only the race check's library (libcuda_emu_race.so) checks races\n", r);
#endif
  }
}

uint64_t next_rand() {
  E.rng ^= E.rng << 13; E.rng ^= E.rng >> 7; E.rng ^= E.rng << 17;
  return E.rng;
}

void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fail(const char *fmt, ...) {
  if (E.failed) return;
  E.failed = 1;
  int n = snprintf(E.error, sizeof E.error, "block (%u,%u,%u): ", ms_emu_block_idx.x, ms_emu_block_idx.y, ms_emu_block_idx.z);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(E.error + n, sizeof E.error - (size_t)n, fmt, ap);
  va_end(ap);
}

/* ---- the raw switch ------------------------------------------------------ */
#ifdef MS_EMU_HAVE_ASM
extern "C" void ms_emu_switch_raw(void **save_sp, void *new_sp);
extern "C" void ms_emu_fiber_start(void);
#  if defined(__x86_64__)
/* Saves the callee-saved registers, MXCSR and the x87 control word on the
   current stack, stores the stack pointer, loads the other one, restores. */
asm(R"(
  .text
  .globl ms_emu_switch_raw
  .hidden ms_emu_switch_raw
  .type ms_emu_switch_raw,@function
  .p2align 4
ms_emu_switch_raw:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size ms_emu_switch_raw, .-ms_emu_switch_raw

  .globl ms_emu_fiber_start
  .hidden ms_emu_fiber_start
  .type ms_emu_fiber_start,@function
  .p2align 4
ms_emu_fiber_start:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size ms_emu_fiber_start, .-ms_emu_fiber_start
)");
#  else
/* AArch64: x19-x30, d8-d15 and FPCR. */
asm(R"(
  .text
  .globl ms_emu_switch_raw
  .hidden ms_emu_switch_raw
  .type ms_emu_switch_raw,%function
  .p2align 4
ms_emu_switch_raw:
  sub sp, sp, #176
  stp x19, x20, [sp, #0]
  stp x21, x22, [sp, #16]
  stp x23, x24, [sp, #32]
  stp x25, x26, [sp, #48]
  stp x27, x28, [sp, #64]
  stp x29, x30, [sp, #80]
  stp d8, d9, [sp, #96]
  stp d10, d11, [sp, #112]
  stp d12, d13, [sp, #128]
  stp d14, d15, [sp, #144]
  mrs x9, fpcr
  str x9, [sp, #160]
  mov x9, sp
  str x9, [x0]
  mov sp, x1
  ldp x19, x20, [sp, #0]
  ldp x21, x22, [sp, #16]
  ldp x23, x24, [sp, #32]
  ldp x25, x26, [sp, #48]
  ldp x27, x28, [sp, #64]
  ldp x29, x30, [sp, #80]
  ldp d8, d9, [sp, #96]
  ldp d10, d11, [sp, #112]
  ldp d12, d13, [sp, #128]
  ldp d14, d15, [sp, #144]
  ldr x9, [sp, #160]
  msr fpcr, x9
  add sp, sp, #176
  ret
  .size ms_emu_switch_raw, .-ms_emu_switch_raw

  .globl ms_emu_fiber_start
  .hidden ms_emu_fiber_start
  .type ms_emu_fiber_start,%function
  .p2align 4
ms_emu_fiber_start:
  mov x0, x19
  blr x20
  brk #0
  .size ms_emu_fiber_start, .-ms_emu_fiber_start
)");
#  endif
#endif

void fiber_main(ms_emu_fiber *f);
void fiber_main_uc(void) { fiber_main(E.cur); }

/* A fresh initial frame at the top of f's stack: the first switch to it
   "returns" into ms_emu_fiber_start, which calls fiber_main(f). */
void fiber_prepare(ms_emu_fiber *f) {
#ifdef MS_EMU_ASAN
  /* the frames a fiber exits through (fiber_main, block_current, ...)
     never return, so their redzones stay poisoned: clear the top (the
     colour offset below, and 32 KB under it) */
  __asan_unpoison_memory_region(f->stack_lo + f->stack_size - f->stack_size / 8 - 32768, f->stack_size / 8 + 32768);
#endif
  if (E.use_ucontext) {
    getcontext(f->uc);
    f->uc->uc_stack.ss_sp = f->stack_lo;
    f->uc->uc_stack.ss_size = f->stack_size;
    f->uc->uc_link = NULL;
    makecontext(f->uc, fiber_main_uc, 0);
    return;
  }
#ifdef MS_EMU_HAVE_ASM
  /* stack tops staggered by a "colour" so the hot top lines of 1024
     stacks do not all fall into the same cache sets */
  uintptr_t top = ((uintptr_t)(f->stack_lo + f->stack_size - (f->ids.linear * 704u) % (f->stack_size / 8))) & ~(uintptr_t)15;
#  if defined(__x86_64__)
  uint64_t *ret = (uint64_t *)(top - 24);     /* after ret: rsp = 16k, as before a call */
  ret[0] = (uint64_t)(uintptr_t)&ms_emu_fiber_start;
  ret[-1] = 0;                                /* rbp */
  ret[-2] = 0;                                /* rbx */
  ret[-3] = (uint64_t)(uintptr_t)f;           /* r12: the argument */
  ret[-4] = (uint64_t)(uintptr_t)&fiber_main; /* r13: the function */
  ret[-5] = 0;                                /* r14 */
  ret[-6] = 0;                                /* r15 */
  uint32_t *csr = (uint32_t *)(ret - 7);
  csr[0] = _mm_getcsr();
  csr[1] = 0x037f;                            /* x87 default control word */
  f->sp = (void *)(ret - 7);
#  else
  uint64_t *fr = (uint64_t *)(top - 176);
  memset(fr, 0, 176);
  fr[0] = (uint64_t)(uintptr_t)f;             /* x19: the argument */
  fr[1] = (uint64_t)(uintptr_t)&fiber_main;   /* x20: the function */
  fr[11] = (uint64_t)(uintptr_t)&ms_emu_fiber_start; /* x30 */
  uint64_t fpcr;
  asm volatile("mrs %0, fpcr" : "=r"(fpcr));
  fr[20] = fpcr;
  f->sp = (void *)fr;
#  endif
#endif
}

/* Switches from `from` (NULL: the scheduler) to `to` (NULL: the
   scheduler). `exiting`: `from` never runs again (ASan frees its fake stack). */
inline __attribute__((always_inline)) void switch_to(ms_emu_fiber *from, ms_emu_fiber *to, int exiting) {
  E.n_switches++;
  E.cur = to;
  if (to) ms_emu_cur_ids = &to->ids;
#ifdef MS_EMU_ASAN
  E.from_sched = from == NULL;
  __sanitizer_start_switch_fiber(exiting ? NULL : (from ? &from->asan_fake : &E.sched_fake),
                                 to ? to->stack_lo : E.sched_stack_lo, to ? to->stack_size : E.sched_stack_size);
#else
  (void)exiting;
#endif
#ifdef MS_EMU_TSAN
  __tsan_switch_to_fiber(to ? to->tsan : E.sched_tsan, __tsan_switch_to_fiber_no_sync);
#endif
  if (E.use_ucontext) {
    swapcontext(from ? from->uc : &E.sched_uc, to ? to->uc : &E.sched_uc);
  } else {
#ifdef MS_EMU_HAVE_ASM
    ms_emu_switch_raw(from ? &from->sp : &E.sched_sp, to ? to->sp : E.sched_sp);
#endif
  }
#ifdef MS_EMU_ASAN
  __sanitizer_finish_switch_fiber(from ? from->asan_fake : E.sched_fake, NULL, NULL);
#endif
}

/* The next runnable fiber after f: lanes of f's warp first (cyclic), then
   the following warps; a random one in the random schedule. NULL if none. */
inline __attribute__((always_inline)) ms_emu_fiber *pick_next(const ms_emu_fiber *f) {
  const unsigned nw = E.n_warps;
  if (E.random_schedule) {
    unsigned start = (unsigned)(next_rand() % nw);
    for (unsigned k = 0; k < nw; k++) {
      unsigned w = (start + k) % nw;
      unsigned m = E.warps[w].run;
      if (!m) continue;
      unsigned n = (unsigned)__builtin_popcount(m), pick = (unsigned)(next_rand() % n);
      while (pick--) m &= m - 1;
      return &E.fib[w * 32 + (unsigned)__builtin_ctz(m)];
    }
    return NULL;
  }
  const unsigned w0 = f->ids.warp, l = f->ids.lane;
  unsigned m = E.warps[w0].run;
  if (m) {
    unsigned after = l == 31 ? 0u : m & ~((2u << l) - 1u);
    return &E.fib[w0 * 32 + (unsigned)__builtin_ctz(after ? after : m)];
  }
  for (unsigned k = 1; k < nw; k++) {
    unsigned w = (w0 + k) % nw;
    if (E.warps[w].run) return &E.fib[w * 32 + (unsigned)__builtin_ctz(E.warps[w].run)];
  }
  return NULL;
}

/* Describes who waits where, for a deadlock message. */
__attribute__((noinline, cold)) void describe_waits(char *buf, size_t size) {
  unsigned at_block = 0, at_warp = 0, done = 0, first_warp = ~0u, first_done = ~0u;
  const char *what = "";
  for (unsigned i = 0; i < E.n_threads; i++) {
    const ms_emu_fiber *f = &E.fib[i];
    const ms_emu_warp &W = E.warps[i >> 5];
    const unsigned bit = 1u << (i & 31);
    if (!(W.live & bit)) { if (!done++) first_done = i; }
    else if (W.at_block & bit) at_block++;
    else if (W.arrived & bit) { if (!at_warp++) { first_warp = i; what = f->wait_what; } }
  }
  int n = snprintf(buf, size, "%u of %u threads wait at __syncthreads, %u at warp intrinsics", at_block, E.n_threads, at_warp);
  if (at_warp && n > 0 && (size_t)n < size) n += snprintf(buf + n, size - (size_t)n, " (first: thread %u in %s)", first_warp, what);
  if (done && n > 0 && (size_t)n < size) snprintf(buf + n, size - (size_t)n, ", %u exited (first: thread %u)", done, first_done);
}

__attribute__((noinline, cold)) void report_deadlock() {
  char why[400];
  describe_waits(why, sizeof why);
  fail("deadlock: no thread can proceed: %s", why);
}

/* Leaves the current fiber, which waits (or has exited): runs the next
   runnable one, or returns to the scheduler when all are done or when
   nothing can run any more (a deadlock: the launch fails). */
inline __attribute__((always_inline)) void block_current(int exiting) {
  ms_emu_fiber *f = E.cur;
  ms_emu_fiber *n = E.failed ? NULL : pick_next(f);
  if (!n && !E.failed && E.n_live > 0) report_deadlock();
  if (n == f) return;   /* (random schedule: itself again) */
  switch_to(f, n, exiting);
  /* resumed: released (or the launch failed, and the scheduler never resumes us) */
}

void fiber_main(ms_emu_fiber *f) {
#ifdef MS_EMU_ASAN
  {
    /* only the scheduler starts a block's first fiber: learn its stack */
    const void *lo = NULL;
    size_t size = 0;
    int from_sched = E.from_sched;
    __sanitizer_finish_switch_fiber(NULL, &lo, &size);
    if (from_sched) { E.sched_stack_lo = lo; E.sched_stack_size = size; }
  }
#endif
  MS_EMU_ACQUIRE(&E.block_in);
  E.kernel->entry(E.params);
  MS_EMU_RELEASE(&E.block_out);
  /* the thread exits */
  ms_emu_warp &W = E.warps[f->ids.warp];
  const unsigned bit = 1u << f->ids.lane;
  W.live &= ~bit;
  W.run &= ~bit;
  E.n_live--;
  if (!E.failed && W.arrived && (W.mask & bit))
    fail("thread %u exited while lanes 0x%08x of its warp wait for it in a warp intrinsic (mask 0x%08x)",
         f->ids.linear, W.arrived, W.mask);
  if (!E.failed && E.block_arrived)
    fail("thread %u exited while %u threads wait at __syncthreads (a barrier not every thread reaches)",
         f->ids.linear, E.block_arrived);
  block_current(1);
  /* never resumed: every later switch goes to another fiber or the scheduler */
  abort();
}

/* The random schedule also lets another fiber run after a release, so the
   order of the code between barriers varies as much as possible. */
void maybe_yield() {
  if (!E.random_schedule || E.failed) return;
  ms_emu_fiber *f = E.cur, *n = pick_next(f);
  if (n && n != f) switch_to(f, n, 0);
}

/* The fiber arrays of pools freed during a launch (the race check's
   budget): their fibers read them in blocks the host has not come after
   yet (it does at the launch's end), so they are freed then. */
void *deferred_free[4 * MS_EMU_RACE_POOLS];
unsigned n_deferred_free;
void free_deferred() {
  for (unsigned i = 0; i < n_deferred_free; i++) free(deferred_free[i]);
  n_deferred_free = 0;
}
void free_later(void *p) {
  if (!p) return;
  if (n_deferred_free < sizeof deferred_free / sizeof deferred_free[0]) deferred_free[n_deferred_free++] = p;
  /* (else left allocated: more pools freed in one launch than exist) */
}

/* Frees a pool's fibers and stacks (it grows again when next used). */
void free_pool(ms_emu_fiber *&fib, ucontext_t *&ucs, char *&stacks, size_t mapped, unsigned &capacity) {
  if (stacks) munmap(stacks, mapped);
#ifdef MS_EMU_TSAN
  for (unsigned i = 0; i < capacity; i++) __tsan_destroy_fiber(fib[i].tsan);
#endif
  free_later(fib);
  free_later(ucs);
  stacks = NULL; fib = NULL; ucs = NULL; capacity = 0;
}

int grow_pool(unsigned n) {
  if (n <= E.capacity) return 0;
  free_pool(E.fib, E.ucs, E.stacks, E.mapped, E.capacity);
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
#ifdef MS_EMU_ASAN
  E.stack_size = 512 * 1024;
#else
  E.stack_size = 128 * 1024;
#endif
  const char *env = getenv("MYSAMPLE_CUDA_EMU_STACK_KB");
  if (env && atoi(env) >= 16) E.stack_size = (size_t)atoi(env) * 1024;
  E.stack_size = (E.stack_size + page - 1) / page * page;
  E.stride = E.stack_size + page;            /* one guard page below each stack */
  E.mapped = E.stride * n;
  void *m = mmap(NULL, E.mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return -1;
  E.stacks = (char *)m;
  E.fib = (ms_emu_fiber *)calloc(n, sizeof(ms_emu_fiber));
  E.ucs = (ucontext_t *)calloc(n, sizeof(ucontext_t));
  if (!E.fib || !E.ucs) return -1;
  for (unsigned i = 0; i < n; i++) {
    ms_emu_fiber *f = &E.fib[i];
    mprotect(E.stacks + (size_t)i * E.stride, page, PROT_NONE);
    f->stack_lo = E.stacks + (size_t)i * E.stride + page;
    f->stack_size = E.stack_size;
    f->uc = &E.ucs[i];
#ifdef MS_EMU_TSAN
    f->tsan = __tsan_create_fiber(0);
#endif
  }
  E.capacity = n;
  return 0;
}

/* Fills all shared memory (every __shared__ variable of every kernel
   translation unit: the ms_emu_shared section) with 0xff bytes. */
void poison_shared() {
  const uintptr_t a = (uintptr_t)ms_emu_shared_start, b = (uintptr_t)ms_emu_shared_stop;
  if (a && b > a) memset(ms_emu_shared_start, 0xff, (size_t)(b - a));
}

#ifdef MS_EMU_TSAN
/* The race check across blocks: memory a new block gets as its own, its
   contents and what TSan knew of it replaced (an anonymous mapping over
   it: TSan's mmap marks the range written by the scheduler, which the
   block's threads come after). */
int race_remap(void *p, size_t n) {
  void *m = mmap(p, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  return m == p ? 0 : -1;
}
/* Makes pool k the one in use (the engine's fields). */
void use_pool(unsigned k) {
  if (k == E.pool) return;
  fiber_pool &o = E.pools[E.pool], &n = E.pools[k];
  o.fib = E.fib; o.ucs = E.ucs; o.stacks = E.stacks; o.stack_size = E.stack_size; o.stride = E.stride;
  o.mapped = E.mapped; o.capacity = E.capacity;
  E.fib = n.fib; E.ucs = n.ucs; E.stacks = n.stacks; E.stack_size = n.stack_size; E.stride = n.stride;
  E.mapped = n.mapped; E.capacity = n.capacity;
  E.pool = k;
}
/* A block's own threads, shared memory and barrier objects, as far as
   TSan can tell; -1 with E.error set. The threads: a pool of fibers (and
   stacks) per blockIdx.y, the chunk of a row, so that the blocks of a
   row share no fiber (a fiber orders what it runs: one fresh TSan fiber
   a thread a block, the simple way, made the check 20 times slower) up
   to the budget's pools (MS_EMU_RACE_FIBERS / the block's threads: 24
   chunks of 256 threads, 6 of 1024; chunks that many apart share theirs);
   blocks with the same chunk of different rows are ordered by theirs,
   so what passes between rows is not checked (nothing should).
   Shared memory: remapped (the section is whole pages of its own:
   tests/cuda_emu/shared.ld). The barriers' sync objects: malloc'd (TSan
   forgets a sync object with its memory). */
int race_fresh_block(unsigned n) {
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  const uintptr_t a = (uintptr_t)ms_emu_shared_start, b = (uintptr_t)ms_emu_shared_stop;
  /* as many pools as the budget holds blocks of this size (so chunks
     that many apart share fibers: their order is not checked) */
  unsigned n_pools = MS_EMU_RACE_FIBERS / (n ? n : 1);
  if (n_pools > MS_EMU_RACE_POOLS) n_pools = MS_EMU_RACE_POOLS;
  if (n_pools < 1) n_pools = 1;
  use_pool(ms_emu_block_idx.y % n_pools);
  if (n > E.capacity) {
    /* room in the budget: the other pools' fibers freed, the unused
       pools' (index n_pools and up) first */
    unsigned total = n;
    for (unsigned k = 0; k < MS_EMU_RACE_POOLS; k++) if (k != E.pool) total += E.pools[k].capacity;
    for (unsigned pass = 0; pass < 2 && total > MS_EMU_RACE_FIBERS; pass++)
      for (unsigned k = MS_EMU_RACE_POOLS; k-- > 0 && total > MS_EMU_RACE_FIBERS;) {
        fiber_pool &q = E.pools[k];
        if (k == E.pool || !q.capacity || (pass == 0 && k < n_pools)) continue;
        total -= q.capacity;
        free_pool(q.fib, q.ucs, q.stacks, q.mapped, q.capacity);
      }
  }
  if (grow_pool(n) != 0) { snprintf(E.error, sizeof E.error, "cannot allocate %u fiber stacks", n); return -1; }
  if (a && b > a) {
    if ((a % page) || (b % page)) {
      snprintf(E.error, sizeof E.error, "MYSAMPLE_CUDA_EMU_RACE=blocks: the shared section [%p, %p) is not whole pages "
               "(link with tests/cuda_emu/shared.ld)", (void *)a, (void *)b);
      return -1;
    }
    if (race_remap((void *)a, (size_t)(b - a)) != 0) { snprintf(E.error, sizeof E.error, "remapping shared memory failed"); return -1; }
  }
  if (E.bar_sync != E.bar_sync_static) free(E.bar_sync);
  E.bar_sync = (char *)malloc(sizeof E.bar_sync_static);
  if (!E.bar_sync) { E.bar_sync = E.bar_sync_static; snprintf(E.error, sizeof E.error, "out of memory"); return -1; }
  E.warp_sync = E.bar_sync + 2;
  return 0;
}
#endif

int run_block() {
  const unsigned n = E.n_threads;
#ifdef MS_EMU_TSAN
  if (E.race_blocks && race_fresh_block(n) != 0) { E.failed = 1; return -1; }
#endif
  poison_shared();
  E.n_live = n;
  E.block_arrived = 0;
  E.bar_gen = 0;
  for (unsigned w = 0; w < E.n_warps; w++) {
    unsigned lanes = n - w * 32 >= 32 ? 32 : n - w * 32;
    ms_emu_warp &W = E.warps[w];
    W.exists = W.live = W.run = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;
    W.arrived = 0; W.at_block = 0; W.mask = 0; W.op = 0; W.width = 32; W.gen = 0;
  }
  for (unsigned i = 0; i < n; i++) {
    ms_emu_fiber *f = &E.fib[i];
    f->ids.linear = i;
    f->ids.tidx.x = i % ms_emu_block_dim.x;
    f->ids.tidx.y = (i / ms_emu_block_dim.x) % ms_emu_block_dim.y;
    f->ids.tidx.z = i / (ms_emu_block_dim.x * ms_emu_block_dim.y);
    f->ids.lane = i & 31;
    f->ids.warp = i >> 5;
    f->wait_what = "";
    f->asan_fake = NULL;
    fiber_prepare(f);
  }
  ms_emu_fiber *first = E.random_schedule ? pick_next(&E.fib[0]) : &E.fib[0];
  MS_EMU_RELEASE(&E.block_in);
  switch_to(NULL, first, 0);
  /* back on the host stack: every thread exited, or the launch failed */
#ifdef MS_EMU_TSAN
  if (E.failed) {
    /* threads abandoned mid-kernel never released block_out: release it
       as each of them (TSan's notion of the running fiber only), so the
       host's reading of the error and freeing of the arguments is not a race */
    for (unsigned i = 0; i < n; i++) {
      __tsan_switch_to_fiber(E.fib[i].tsan, __tsan_switch_to_fiber_no_sync);
      MS_EMU_RELEASE(&E.block_out);
    }
    __tsan_switch_to_fiber(E.sched_tsan, __tsan_switch_to_fiber_no_sync);
  }
  /* across blocks: the scheduler comes after the launch's blocks only at
     its end (ms_emu_run), so the next block's threads, which come after
     the scheduler, do not come after this one's */
  if (!E.race_blocks || E.failed) MS_EMU_ACQUIRE(&E.block_out);
#else
  MS_EMU_ACQUIRE(&E.block_out);
#endif
  E.n_blocks++;
  if (E.failed) {
#ifdef MS_EMU_ASAN
    /* abandoned frames keep their poisoned redzones */
    for (unsigned i = 0; i < n; i++) __asan_unpoison_memory_region(E.fib[i].stack_lo, E.fib[i].stack_size);
#endif
    return -1;
  }
  return 0;
}

}  // namespace

/* ---- what the shim calls ---------------------------------------------------- */

static const char *op_name(int op) {
  switch (op) {
    case MS_EMU_SHFL_XOR: return "__shfl_xor_sync";
    case MS_EMU_SHFL_UP: return "__shfl_up_sync";
    case MS_EMU_SHFL_DOWN: return "__shfl_down_sync";
    case MS_EMU_SHFL_IDX: return "__shfl_sync";
    case MS_EMU_BALLOT: return "__ballot_sync";
    case MS_EMU_SYNCWARP: return "__syncwarp";
  }
  return "?";
}

void ms_emu_syncthreads(void) {
  ms_emu_fiber *f = E.cur;
  if (E.failed) { block_current(0); return; }
  const ms_emu_warp &W = E.warps[f->ids.warp];
  if (W.arrived && (W.mask & (1u << f->ids.lane))) {
    fail("thread %u reached __syncthreads while lanes 0x%08x of its warp wait for it in %s",
         f->ids.linear, W.arrived, op_name(W.op));
    block_current(0);
    return;
  }
  const unsigned gen = E.bar_gen & 1u;
  MS_EMU_RELEASE(E.bar_sync + gen);
  E.block_arrived++;
  if (E.block_arrived == E.n_threads) {
    /* the last one: release everyone (all threads are alive and here) */
    E.block_arrived = 0;
    E.bar_gen++;
    MS_EMU_ACQUIRE(E.bar_sync + gen);
    for (unsigned w = 0; w < E.n_warps; w++) { E.warps[w].run = E.warps[w].live; E.warps[w].at_block = 0; }
    maybe_yield();
    return;
  }
  if (E.block_arrived == E.n_live) {
    fail("__syncthreads: every remaining thread waits, but %u of %u threads have exited "
         "(a barrier not every thread reaches)", E.n_threads - E.n_live, E.n_threads);
    block_current(0);
    return;
  }
  f->wait_what = "__syncthreads";
  E.warps[f->ids.warp].run &= ~(1u << f->ids.lane);
  E.warps[f->ids.warp].at_block |= 1u << f->ids.lane;
  block_current(0);
  MS_EMU_ACQUIRE(E.bar_sync + gen);
}

uint64_t ms_emu_warp_op(int op, unsigned mask, uint64_t value, int arg, int width) {
  ms_emu_fiber *f = E.cur;
  ms_emu_warp &W = E.warps[f->ids.warp];
  const unsigned lane = f->ids.lane, bit = 1u << lane;
  if (E.failed) { block_current(0); return 0; }
  if (!(mask & bit)) {
    fail("thread %u calls %s with mask 0x%08x, which does not include its lane %u", f->ids.linear, op_name(op), mask, lane);
    block_current(0);
    return 0;
  }
  if (width < 1 || width > 32 || (width & (width - 1))) {
    fail("thread %u calls %s with width %d (a power of 2 up to 32)", f->ids.linear, op_name(op), width);
    block_current(0);
    return 0;
  }
  if (mask & ~W.exists) {
    fail("thread %u calls %s with mask 0x%08x, naming lanes the block does not have (0x%08x)", f->ids.linear, op_name(op), mask, W.exists);
    block_current(0);
    return 0;
  }
  if (W.arrived == 0) { W.op = op; W.mask = mask; W.width = width; }
  else if (W.op != op || W.mask != mask || W.width != width) {
    fail("divergent warp: thread %u calls %s (mask 0x%08x) while lanes 0x%08x wait in %s (mask 0x%08x)",
         f->ids.linear, op_name(op), mask, W.arrived, op_name(W.op), W.mask);
    block_current(0);
    return 0;
  }
  if (mask & ~W.live) {
    fail("thread %u calls %s with mask 0x%08x, but lanes 0x%08x of the mask have exited", f->ids.linear, op_name(op), mask, mask & ~W.live);
    block_current(0);
    return 0;
  }
  if (mask & W.at_block) {
    fail("thread %u waits in %s for lane %d, which waits at __syncthreads", f->ids.linear, op_name(op),
         __builtin_ctz(mask & W.at_block));
    block_current(0);
    return 0;
  }
  f->value = value;
  f->arg = arg;
  W.arrived |= bit;
  /* (only __syncwarp orders memory among the lanes) */
  char *const wsync = E.warp_sync + 2 * f->ids.warp + (W.gen & 1u);
  if (op == MS_EMU_SYNCWARP) MS_EMU_RELEASE(wsync);
  if (W.arrived != mask) {
    f->wait_what = op_name(op);
    W.run &= ~bit;
    block_current(0);
    if (op == MS_EMU_SYNCWARP) MS_EMU_ACQUIRE(wsync);
    return f->result;
  }
  W.gen++;
  if (op == MS_EMU_SYNCWARP) MS_EMU_ACQUIRE(wsync);
  /* the last lane: every result, then release */
  ms_emu_fiber *lanes = &E.fib[f->ids.warp * 32];
  unsigned ballot = 0;
  if (op == MS_EMU_BALLOT)
    for (unsigned m = mask; m; m &= m - 1) { unsigned l = (unsigned)__builtin_ctz(m); if (lanes[l].value) ballot |= 1u << l; }
  for (unsigned m = mask; m; m &= m - 1) {
    const unsigned l = (unsigned)__builtin_ctz(m), base = l & ~(unsigned)(width - 1);
    ms_emu_fiber *t = &lanes[l];
    unsigned src = l;
    switch (op) {
      case MS_EMU_SHFL_XOR: src = l ^ (unsigned)t->arg; if (src >= base + (unsigned)width) src = l; break;
      case MS_EMU_SHFL_UP: src = (l - base) >= (unsigned)t->arg ? l - (unsigned)t->arg : l; break;
      case MS_EMU_SHFL_DOWN: src = (l - base) + (unsigned)t->arg < (unsigned)width ? l + (unsigned)t->arg : l; break;
      case MS_EMU_SHFL_IDX: src = base + ((unsigned)t->arg & (unsigned)(width - 1)); break;
      default: break;
    }
    if (op == MS_EMU_BALLOT) t->result = ballot;
    else if (op == MS_EMU_SYNCWARP) t->result = 0;
    else {
      if (src > 31 || !(mask & (1u << src))) {
        fail("lane %u of warp %u reads lane %u in %s, which is not in the mask 0x%08x (undefined on a GPU)",
             l, f->ids.warp, src, op_name(op), mask);
        block_current(0);
        return 0;
      }
      t->result = lanes[src].value;
    }
  }
  W.arrived = 0;
  W.run |= mask;
  maybe_yield();
  return f->result;
}

/* ---- faults inside a kernel ---------------------------------------------------- */
/* Device allocations end at a guard page (driver.cpp), so a kernel that
   reads or writes past the end of one faults here, as a GPU reports an
   illegal address: say where (kernel, block, thread, which allocation)
   and end the process with the signal. */
static struct sigaction ms_emu_old_segv, ms_emu_old_bus;

static void ms_emu_on_fault(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  char buf[700], where[300];
  const uintptr_t a = (uintptr_t)si->si_addr, lo = (uintptr_t)E.stacks;
  if (E.stacks && a >= lo && a < lo + E.mapped && (a - lo) % E.stride < E.stride - E.stack_size)
    snprintf(where, sizeof where, "a fiber's stack overflowed (%zu KB; MYSAMPLE_CUDA_EMU_STACK_KB sets it)", E.stack_size / 1024);
  else
    ms_emu_describe_address(a, where, sizeof where);
  int n = snprintf(buf, sizeof buf,
                   "[cuda-emu] illegal address %p in kernel %s, block (%u,%u,%u), thread %u: %s\n",
                   si->si_addr, E.kernel ? E.kernel->name : "?", ms_emu_block_idx.x, ms_emu_block_idx.y,
                   ms_emu_block_idx.z, E.cur ? E.cur->ids.linear : 0u, where);
  if (n > 0) { ssize_t w = write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1); (void)w; }
  sigaction(SIGSEGV, &ms_emu_old_segv, NULL);
  sigaction(SIGBUS, &ms_emu_old_bus, NULL);
  raise(sig);
}

static void ms_emu_catch_faults(int on) {
#ifndef MS_EMU_ASAN   /* ASan reports these itself, more precisely */
  static thread_local char *alt;
  if (on) {
    if (!alt) {   /* a fiber stack overflow needs another stack to report on */
      alt = (char *)malloc(1 << 16);
      stack_t st;
      memset(&st, 0, sizeof st);
      st.ss_sp = alt; st.ss_size = 1 << 16;
      if (alt) sigaltstack(&st, NULL);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = ms_emu_on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &ms_emu_old_segv);
    sigaction(SIGBUS, &sa, &ms_emu_old_bus);
  } else {
    sigaction(SIGSEGV, &ms_emu_old_segv, NULL);
    sigaction(SIGBUS, &ms_emu_old_bus, NULL);
  }
#else
  (void)on;
  (void)ms_emu_on_fault;
#endif
}

/* ---- the driver's entry ------------------------------------------------------ */

int ms_emu_run(const ms_emu_kernel *k, const ms_emu_dim3 grid, const ms_emu_dim3 block, void *const *params,
               char *err, size_t err_size) {
  read_options();
  const unsigned n = block.x * block.y * block.z;
  if (err && err_size) err[0] = 0;
  if (n == 0 || n > 1024) { snprintf(err, err_size, "bad block size %u", n); return -1; }
  if (grow_pool(n) != 0) { snprintf(err, err_size, "cannot allocate %u fiber stacks", n); return -1; }
  E.kernel = k;
  E.params = params;
  E.n_threads = n;
#ifdef MS_EMU_TSAN
  E.sched_tsan = __tsan_get_current_fiber();
#endif
  E.n_warps = (n + 31) / 32;
  E.failed = 0;
  E.error[0] = 0;
  E.n_launches++;
  ms_emu_block_dim = block;
  ms_emu_grid_dim = grid;
  ms_emu_catch_faults(1);
  int rc = 0;
  for (unsigned z = 0; z < grid.z && !rc; z++)
    for (unsigned y = 0; y < grid.y && !rc; y++)
      for (unsigned x = 0; x < grid.x && !rc; x++) {
        ms_emu_block_idx.x = x; ms_emu_block_idx.y = y; ms_emu_block_idx.z = z;
        if (run_block() != 0) {
          snprintf(err, err_size, "%s: %s", k->name, E.error);
          rc = -1;
        }
      }
  ms_emu_catch_faults(0);
  E.cur = NULL;
#ifdef MS_EMU_TSAN
  if (E.race_blocks) MS_EMU_ACQUIRE(&E.block_out);   /* the host after every block */
#endif
  free_deferred();
  return rc;
}

#ifdef MS_EMU_TSAN
/* shim.h's fences and atomics in the race check across blocks (above) */
void ms_emu_race_fence(void) {
  if (E.race_blocks && !E.race_nofence) MS_EMU_RELEASE(&E.fence);
}
void ms_emu_race_atomic(const void *p) {
  const char *c = (const char *)p;
  if (E.race_blocks && !(c >= ms_emu_shared_start && c < ms_emu_shared_stop)) MS_EMU_ACQUIRE(&E.fence);
}
#endif

void ms_emu_stats(unsigned long long *launches, unsigned long long *blocks, unsigned long long *switches) {
  if (launches) *launches = E.n_launches;
  if (blocks) *blocks = E.n_blocks;
  if (switches) *switches = E.n_switches;
}

void ms_emu_l2_prefetch(const void *p, unsigned bytes) {
  const uintptr_t a = (uintptr_t)p;
  E.n_prefetches++;
  E.prefetch_bytes += bytes;
  if ((a & 15u) || bytes == 0 || (bytes & 15u))
    fail("thread %u: cp.async.bulk.prefetch.L2 [%p], %u: the address must be 16-byte aligned and the size a positive "
         "multiple of 16", E.cur ? E.cur->ids.linear : 0u, p, bytes);
  else if (!ms_emu_in_allocation(a, bytes))
    fail("thread %u: cp.async.bulk.prefetch.L2 [%p], %u: not inside one allocation", E.cur ? E.cur->ids.linear : 0u, p,
         bytes);
}

void ms_emu_prefetch_stats(unsigned long long *n, unsigned long long *bytes) {
  if (n) *n = E.n_prefetches;
  if (bytes) *bytes = E.prefetch_bytes;
}

int ms_emu_set_schedule(const char *how) {
  read_options();
  return parse_schedule(how);
}

const char *ms_emu_fiber_kind(void) {
  read_options();
  return E.use_ucontext ? "ucontext" : "assembly";
}
