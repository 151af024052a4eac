/* The CPU emulator's fake CUDA driver: libcuda_emu.so exports the driver
   API entry points mysample_cuda.h resolves (same names, same ABI: the
   _v2 versions where the real libcuda has them), for one emulated device,
   "mysample CPU emulator", compute capability 9.0. Device memory is host
   memory; modules are accepted (a CUBIN or PTX image is checked and kept
   only to look names up), and each function name maps to a kernel
   compiled into this library from src/cuda/kernels.cu (runtime.cpp runs
   it). Asynchronous operations run at once, or, with
   MYSAMPLE_CUDA_EMU_ASYNC=defer, are queued and run only when the host
   synchronises (a stream, an event, the context, a synchronous copy):
   that shows a host that reads or reuses memory before it waited.
   Bad handles, pointers, sizes and launch shapes return CUDA error codes
   (and say why on stderr); nothing here aborts. */
#include "shim.h"
#include "runtime.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

#include <deque>
#include <map>
#include <set>
#include <vector>

#define MS_EMU_API extern "C" __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;
typedef void *CUevent;

/* Result codes (values of the driver's CUresult). */
enum {
  CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1, CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3, CUDA_ERROR_NO_DEVICE = 100, CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200, CUDA_ERROR_INVALID_CONTEXT = 201, CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500, CUDA_ERROR_NOT_READY = 600, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
  CUDA_ERROR_LAUNCH_FAILED = 719, CUDA_ERROR_NOT_SUPPORTED = 801, CUDA_ERROR_UNKNOWN = 999
};

namespace {

const char *const k_device_name = "mysample CPU emulator";
const int k_cc_major = 9, k_cc_minor = 0;
const unsigned long long k_total_mem = 16ull << 30;

/* ---- state -------------------------------------------------------------- */

struct ctx_t { int primary, refcount, active; };
struct module_t { ctx_t *ctx; std::vector<char> image; std::vector<struct func_t *> funcs; };
struct func_t { module_t *mod; const ms_emu_kernel *k; };
struct stream_t { ctx_t *ctx; unsigned flags; };
struct event_t { unsigned flags; int recorded; unsigned long long pending; double time; };
struct alloc_t { size_t size; int pinned; ctx_t *ctx; void *map; size_t map_size; };

/* A queued asynchronous operation (deferred mode). */
struct op_t {
  enum { COPY, SET8, SET32, LAUNCH, EVENT } kind;
  unsigned long long seq;
  void *stream;
  void *dst; const void *src; size_t n; unsigned value;
  const ms_emu_kernel *k; ms_emu_dim3 grid, block; std::vector<char> args; std::vector<void *> argp;
  event_t *ev;
};

struct driver {
  pthread_mutex_t mu;
  int initialized;
  int defer, log, noexec, options_read;
  ctx_t primary;
  std::set<const void *> contexts, modules, functions, streams, events;
  std::map<uintptr_t, alloc_t> allocs;
  size_t bytes_in_use;
  std::deque<op_t *> queue;
  unsigned long long next_seq;
  std::vector<const ms_emu_kernel *> kernels;
};

driver &D() {
  static driver *d = [] {
    driver *x = new driver();
    pthread_mutex_init(&x->mu, NULL);
    x->primary.primary = 1;
    return x;
  }();
  return *d;
}

thread_local std::vector<ctx_t *> t_stack;  /* the thread's context stack (top = current) */

struct lock_guard {
  lock_guard() { pthread_mutex_lock(&D().mu); }
  ~lock_guard() { pthread_mutex_unlock(&D().mu); }
};

void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "[cuda-emu] ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
}

/* Reports a failing call on stderr and returns its code. */
CUresult err(CUresult e, const char *fn, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
CUresult err(CUresult e, const char *fn, const char *fmt, ...) {
  char buf[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  say("%s: %s (error %d)", fn, buf, e);
  return e;
}

void read_options() {
  driver &d = D();
  if (d.options_read) return;
  d.options_read = 1;
  const char *a = getenv("MYSAMPLE_CUDA_EMU_ASYNC");
  d.defer = a && !strcmp(a, "defer");
  const char *l = getenv("MYSAMPLE_CUDA_EMU_LOG");
  d.log = l && *l && strcmp(l, "0");
  const char *x = getenv("MYSAMPLE_CUDA_EMU_NOEXEC");
  d.noexec = x && *x && strcmp(x, "0");
}

double now_ms() {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (double)tv.tv_sec * 1e3 + (double)tv.tv_usec * 1e-3;
}

ctx_t *current() { return t_stack.empty() ? NULL : t_stack.back(); }

/* The checks most calls start with: initialised, a live current context. */
CUresult need_ctx(const char *fn) {
  if (!D().initialized) return err(CUDA_ERROR_NOT_INITIALIZED, fn, "cuInit has not been called");
  ctx_t *c = current();
  if (!c) return err(CUDA_ERROR_INVALID_CONTEXT, fn, "no current context on this thread");
  if (!c->active) return err(CUDA_ERROR_INVALID_CONTEXT, fn, "the current context has been released or destroyed");
  return CUDA_SUCCESS;
}

/* The allocation holding [p, p + n), or NULL. Pinned host memory counts
   (unified addressing: the device reads it too). */
const alloc_t *find_range(uintptr_t p, size_t n) {
  driver &d = D();
  std::map<uintptr_t, alloc_t>::const_iterator it = d.allocs.upper_bound(p);
  if (it == d.allocs.begin()) return NULL;
  --it;
  if (p < it->first || p - it->first > it->second.size || n > it->second.size - (p - it->first)) return NULL;
  return &it->second;
}

CUresult check_dev(const char *fn, const char *what, uintptr_t p, size_t n) {
  if (n == 0) return CUDA_SUCCESS;
  if (!p) return err(CUDA_ERROR_INVALID_VALUE, fn, "%s is NULL", what);
  if (!find_range(p, n))
    return err(CUDA_ERROR_INVALID_VALUE, fn, "%s [0x%llx, +%zu) is not inside one device allocation",
               what, (unsigned long long)p, n);
  return CUDA_SUCCESS;
}

CUresult check_stream(const char *fn, CUstream s) {
  if (s == NULL || s == (CUstream)1 || s == (CUstream)2) return CUDA_SUCCESS;  /* legacy / per-thread default */
  if (!D().streams.count(s)) return err(CUDA_ERROR_INVALID_HANDLE, fn, "stream %p is not a live stream", s);
  return CUDA_SUCCESS;
}

/* ---- executing queued work (deferred mode) -------------------------------- */

CUresult g_deferred_error;

void exec(op_t *o) {
  switch (o->kind) {
    case op_t::COPY: memmove(o->dst, o->src, o->n); break;
    case op_t::SET8: memset(o->dst, (int)(o->value & 0xff), o->n); break;
    case op_t::SET32: { unsigned *p = (unsigned *)o->dst; for (size_t i = 0; i < o->n; i++) p[i] = o->value; } break;
    case op_t::LAUNCH: {
      char msg[1200];
      if (ms_emu_run(o->k, o->grid, o->block, o->argp.data(), msg, sizeof msg) != 0) {
        say(D().defer ? "kernel failed (reported at the next synchronisation): %s" : "kernel failed: %s", msg);
        if (!g_deferred_error) g_deferred_error = CUDA_ERROR_LAUNCH_FAILED;
      }
    } break;
    case op_t::EVENT: o->ev->time = now_ms(); o->ev->pending = 0; break;
  }
}

/* Runs queued work in order, up to and including operation `upto`
   (everything: ~0ull). Returns the error of a failed kernel among them. */
CUresult flush(unsigned long long upto) {
  driver &d = D();
  while (!d.queue.empty() && d.queue.front()->seq <= upto) {
    op_t *o = d.queue.front();
    d.queue.pop_front();
    exec(o);
    delete o;
  }
  CUresult e = g_deferred_error;
  g_deferred_error = CUDA_SUCCESS;
  return e;
}
CUresult flush_all() { return flush(~0ull); }

/* The last queued operation of a stream (the legacy default stream waits
   for everything). */
unsigned long long last_of(CUstream s) {
  driver &d = D();
  if (s == NULL || s == (CUstream)1) return d.queue.empty() ? 0 : d.queue.back()->seq;
  for (std::deque<op_t *>::reverse_iterator it = d.queue.rbegin(); it != d.queue.rend(); ++it)
    if ((*it)->stream == s) return (*it)->seq;
  return 0;
}

/* Runs o now (synchronous mode) or queues it. */
CUresult submit(op_t *o, CUstream s) {
  driver &d = D();
  o->stream = s;
  o->seq = ++d.next_seq;
  if (o->kind == op_t::EVENT) o->ev->pending = o->seq;
  if (!d.defer) {
    exec(o);
    delete o;
    return flush(0);   /* picks up a kernel failure */
  }
  d.queue.push_back(o);
  return CUDA_SUCCESS;
}

CUresult copy_async(const char *fn, void *dst, const void *src, size_t n, CUstream s) {
  if (n == 0) return CUDA_SUCCESS;
  CUresult e = check_stream(fn, s);
  if (e) return e;
  op_t *o = new op_t();
  o->kind = op_t::COPY; o->dst = dst; o->src = src; o->n = n;
  return submit(o, s);
}

/* Device memory: n bytes, 256-byte aligned, ending less than 256 bytes
   before an inaccessible guard page (one more guards the start), so a
   kernel running past the end of an allocation faults (runtime.cpp
   reports it as an illegal address). Under ASan: plain heap memory,
   whose redzones ASan checks more precisely. */
void *dev_alloc(size_t n, alloc_t *a) {
  a->map = NULL; a->map_size = 0;
#ifdef MS_EMU_ASAN
  void *m = NULL;
  return posix_memalign(&m, 256, n) == 0 ? m : NULL;
#else
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t body = (n + page - 1) / page * page;
  char *base = (char *)mmap(NULL, body + 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == (char *)MAP_FAILED) return NULL;
  if (mprotect(base + page, body, PROT_READ | PROT_WRITE) != 0) { munmap(base, body + 2 * page); return NULL; }
  a->map = base; a->map_size = body + 2 * page;
  return (void *)((uintptr_t)(base + page + body - n) & ~(uintptr_t)255);
#endif
}
void dev_free(void *p, const alloc_t *a) {
  if (a->map) munmap(a->map, a->map_size);
  else free(p);
}

/* Frees what a context still holds when it goes away, and says so (a
   leak in the caller's cleanup). */
void reap(ctx_t *c, const char *why) {
  driver &d = D();
  size_t n = 0, bytes = 0, mods = 0;
  for (std::map<uintptr_t, alloc_t>::iterator it = d.allocs.begin(); it != d.allocs.end();) {
    if (it->second.ctx == c && !it->second.pinned) {
      n++; bytes += it->second.size; d.bytes_in_use -= it->second.size;
      dev_free((void *)it->first, &it->second);
      it = d.allocs.erase(it);
    } else ++it;
  }
  for (std::set<const void *>::iterator it = d.modules.begin(); it != d.modules.end();) {
    module_t *m = (module_t *)*it;
    if (m->ctx == c) {
      mods++;
      for (size_t i = 0; i < m->funcs.size(); i++) { d.functions.erase(m->funcs[i]); delete m->funcs[i]; }
      delete m;
      it = d.modules.erase(it);
    } else ++it;
  }
  if (n || mods) say("%s with %zu device allocations (%zu bytes) and %zu modules still live: freed", why, n, bytes, mods);
}

/* The size of an ELF image from its headers (for copying a CUBIN). */
size_t elf_size(const unsigned char *p) {
  if (p[4] != 2) return 0;  /* ELFCLASS64 only */
  unsigned long long shoff, phoff;
  unsigned short shentsize, shnum, phentsize, phnum;
  memcpy(&phoff, p + 32, 8); memcpy(&shoff, p + 40, 8);
  memcpy(&phentsize, p + 54, 2); memcpy(&phnum, p + 56, 2);
  memcpy(&shentsize, p + 58, 2); memcpy(&shnum, p + 60, 2);
  if (shentsize < 64 || shoff == 0 || shoff > (1ull << 32) || phoff > (1ull << 32)) return 0;
  unsigned long long end = shoff + (unsigned long long)shnum * shentsize;
  if (phoff + (unsigned long long)phnum * phentsize > end) end = phoff + (unsigned long long)phnum * phentsize;
  for (unsigned i = 0; i < shnum; i++) {
    const unsigned char *sh = p + shoff + (unsigned long long)i * shentsize;
    unsigned type;
    unsigned long long off, size;
    memcpy(&type, sh + 4, 4); memcpy(&off, sh + 24, 8); memcpy(&size, sh + 32, 8);
    if (type != 8 /* SHT_NOBITS */ && off + size > end) end = off + size;
  }
  return end > (1ull << 30) ? 0 : (size_t)end;
}

/* Is `name` a whole symbol in the image (NUL- or PTX-delimited)? */
bool image_has(const std::vector<char> &img, const char *name) {
  const size_t n = strlen(name);
  for (size_t i = 0; i + n <= img.size(); i++) {
    if (img[i] != name[0] || memcmp(&img[i], name, n) != 0) continue;
    char before = i ? img[i - 1] : 0, after = i + n < img.size() ? img[i + n] : 0;
    bool b = before == 0 || before == ' ' || before == '\t' || before == '.';
    bool a = after == 0 || after == '(' || after == ' ' || after == '\n';
    if (b && a) return true;
  }
  return false;
}

}  // namespace

int ms_emu_in_allocation(uintptr_t a, size_t n) { return find_range(a, n) != NULL; }

void ms_emu_describe_address(uintptr_t p, char *buf, size_t size) {
  /* (in a fault handler: reads the map, allocates nothing) */
  const std::map<uintptr_t, alloc_t> &m = D().allocs;
  std::map<uintptr_t, alloc_t>::const_iterator it = m.upper_bound(p);
  if (it != m.begin()) {
    --it;
    if (p - it->first < it->second.size) {
      snprintf(buf, size, "inside the %zu-byte allocation at 0x%llx (offset %llu): a protection fault", it->second.size,
               (unsigned long long)it->first, (unsigned long long)(p - it->first));
      return;
    }
    if (p - it->first - it->second.size < (1u << 20)) {
      snprintf(buf, size, "%llu bytes past the end of the %zu-byte %s allocation at 0x%llx",
               (unsigned long long)(p - it->first - it->second.size), it->second.size,
               it->second.pinned ? "pinned host" : "device", (unsigned long long)it->first);
      return;
    }
  }
  snprintf(buf, size, "not in or next to any device allocation");
}

void ms_emu_register_kernels(const ms_emu_kernel *k, int n) {
  for (int i = 0; i < n; i++) D().kernels.push_back(&k[i]);
}

const ms_emu_kernel *ms_emu_find_kernel(const char *name) {
  const std::vector<const ms_emu_kernel *> &v = D().kernels;
  for (size_t i = 0; i < v.size(); i++) if (!strcmp(v[i]->name, name)) return v[i];
  return NULL;
}

/* ---- initialisation, device -------------------------------------------------- */

MS_EMU_API CUresult cuInit(unsigned flags) {
  lock_guard g;
  read_options();
  if (flags != 0) return err(CUDA_ERROR_INVALID_VALUE, "cuInit", "flags must be 0, got %u", flags);
  if (!D().initialized && D().log) say("cuInit: one device, %s, sm_%d%d, fibers: %s, async: %s", k_device_name,
                                       k_cc_major, k_cc_minor, ms_emu_fiber_kind(), D().defer ? "deferred" : "synchronous");
  D().initialized = 1;
  return CUDA_SUCCESS;
}

MS_EMU_API CUresult cuDriverGetVersion(int *v) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = 13000;
  return CUDA_SUCCESS;
}

MS_EMU_API CUresult cuDeviceGetCount(int *n) {
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  *n = 1;
  return CUDA_SUCCESS;
}

MS_EMU_API CUresult cuDeviceGet(CUdevice *dev, int ordinal) {
  if (!dev) return CUDA_ERROR_INVALID_VALUE;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (ordinal != 0) return err(CUDA_ERROR_INVALID_DEVICE, "cuDeviceGet", "ordinal %d: the emulator has one device", ordinal);
  *dev = 0;
  return CUDA_SUCCESS;
}

MS_EMU_API CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  snprintf(name, (size_t)len, "%s", k_device_name);
  return CUDA_SUCCESS;
}

MS_EMU_API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = (size_t)k_total_mem;
  return CUDA_SUCCESS;
}

/* An H100-like device: 132 SMs (MYSAMPLE_CUDA_EMU_SMS changes it, which
   changes how mysample_cuda.h splits small batches over blocks). */
MS_EMU_API CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice dev) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  const char *sms = getenv("MYSAMPLE_CUDA_EMU_SMS");
  int n_sm = sms && atoi(sms) > 0 ? atoi(sms) : 132;
  switch (attr) {
    case 1: *v = 1024; break;              /* max threads per block */
    case 2: case 3: *v = 1024; break;      /* max block dim x, y */
    case 4: *v = 64; break;                /* max block dim z */
    case 5: *v = 0x7fffffff; break;        /* max grid dim x */
    case 6: case 7: *v = 65535; break;     /* max grid dim y, z */
    case 8: *v = 49152; break;             /* max shared memory per block */
    case 9: *v = 65536; break;             /* total constant memory */
    case 10: *v = 32; break;               /* warp size */
    case 12: *v = 65536; break;            /* max registers per block */
    case 13: *v = 1980000; break;          /* clock rate (kHz) */
    case 16: *v = n_sm; break;             /* multiprocessor count */
    case 17: case 18: case 20: *v = 0; break;  /* exec timeout, integrated, compute mode */
    case 19: case 31: case 41: *v = 1; break;  /* map host memory, concurrent kernels, unified addressing */
    case 39: *v = 2048; break;             /* max threads per multiprocessor */
    case 75: *v = k_cc_major; break;
    case 76: *v = k_cc_minor; break;
    case 81: *v = 233472; break;           /* max shared memory per multiprocessor */
    case 97: *v = 232448; break;           /* max shared memory per block (opt-in) */
    default: return err(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetAttribute", "attribute %d is not emulated", attr);
  }
  return CUDA_SUCCESS;
}

/* ---- contexts ------------------------------------------------------------------ */

MS_EMU_API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  lock_guard g;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  ctx_t *c = &D().primary;
  c->refcount++;
  c->active = 1;
  D().contexts.insert(c);
  *pctx = c;
  return CUDA_SUCCESS;
}

MS_EMU_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  lock_guard g;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  ctx_t *c = &D().primary;
  if (c->refcount <= 0) return err(CUDA_ERROR_INVALID_CONTEXT, "cuDevicePrimaryCtxRelease", "the primary context is not retained");
  if (--c->refcount == 0) {
    flush_all();
    reap(c, "primary context released");
    c->active = 0;
  }
  return CUDA_SUCCESS;
}
MS_EMU_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return cuDevicePrimaryCtxRelease_v2(dev); }

MS_EMU_API CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned *flags, int *active) {
  lock_guard g;
  if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  *flags = 0;
  *active = D().primary.active;
  return CUDA_SUCCESS;
}

MS_EMU_API CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned flags, CUdevice dev) {
  lock_guard g;
  (void)flags;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  ctx_t *c = new ctx_t();
  c->active = 1;
  D().contexts.insert(c);
  t_stack.push_back(c);   /* a created context becomes current */
  *pctx = c;
  return CUDA_SUCCESS;
}

MS_EMU_API CUresult cuCtxDestroy_v2(CUcontext ctx) {
  lock_guard g;
  ctx_t *c = (ctx_t *)ctx;
  if (!D().contexts.count(ctx) || c->primary) return err(CUDA_ERROR_INVALID_CONTEXT, "cuCtxDestroy", "%p is not a created context", ctx);
  flush_all();
  reap(c, "context destroyed");
  for (size_t i = 0; i < t_stack.size();) { if (t_stack[i] == c) t_stack.erase(t_stack.begin() + (long)i); else i++; }
  D().contexts.erase(ctx);
  delete c;
  return CUDA_SUCCESS;
}

MS_EMU_API CUresult cuCtxGetCurrent(CUcontext *pctx) {
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  *pctx = current();
  return CUDA_SUCCESS;
}

MS_EMU_API CUresult cuCtxSetCurrent(CUcontext ctx) {
  lock_guard g;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (ctx && !D().contexts.count(ctx)) return err(CUDA_ERROR_INVALID_CONTEXT, "cuCtxSetCurrent", "%p is not a context", ctx);
  if (!ctx) { if (!t_stack.empty()) t_stack.pop_back(); return CUDA_SUCCESS; }
  if (t_stack.empty()) t_stack.push_back((ctx_t *)ctx);
  else t_stack.back() = (ctx_t *)ctx;
  return CUDA_SUCCESS;
}

MS_EMU_API CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  lock_guard g;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ctx || !D().contexts.count(ctx)) return err(CUDA_ERROR_INVALID_CONTEXT, "cuCtxPushCurrent", "%p is not a context", ctx);
  if (t_stack.size() >= 64) return err(CUDA_ERROR_INVALID_VALUE, "cuCtxPushCurrent", "context stack overflow (a push without its pop?)");
  t_stack.push_back((ctx_t *)ctx);
  return CUDA_SUCCESS;
}

MS_EMU_API CUresult cuCtxPopCurrent_v2(CUcontext *pctx) {
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (t_stack.empty()) return err(CUDA_ERROR_INVALID_CONTEXT, "cuCtxPopCurrent", "no current context to pop");
  if (pctx) *pctx = t_stack.back();
  t_stack.pop_back();
  return CUDA_SUCCESS;
}

MS_EMU_API CUresult cuCtxGetDevice(CUdevice *dev) {
  lock_guard g;
  if (!dev) return CUDA_ERROR_INVALID_VALUE;
  CUresult e = need_ctx("cuCtxGetDevice");
  if (e) return e;
  *dev = 0;
  return CUDA_SUCCESS;
}

MS_EMU_API CUresult cuCtxSynchronize(void) {
  lock_guard g;
  CUresult e = need_ctx("cuCtxSynchronize");
  if (e) return e;
  return flush_all();
}

/* ---- modules and kernels -------------------------------------------------------- */

MS_EMU_API CUresult cuModuleLoadData(CUmodule *mod, const void *image) {
  lock_guard g;
  static const char *fn = "cuModuleLoadData";
  if (!mod || !image) return err(CUDA_ERROR_INVALID_VALUE, fn, "NULL module or image");
  CUresult e = need_ctx(fn);
  if (e) return e;
  const unsigned char *p = (const unsigned char *)image;
  size_t n = 0;
  if (!memcmp(p, "\x7f" "ELF", 4)) {
    unsigned short machine;
    memcpy(&machine, p + 18, 2);
    if (machine != 190) return err(CUDA_ERROR_INVALID_IMAGE, fn, "an ELF image for machine %u, not a CUBIN (EM_CUDA = 190)", machine);
    n = elf_size(p);
    if (!n) return err(CUDA_ERROR_INVALID_IMAGE, fn, "a malformed CUBIN");
  } else {
    n = strnlen((const char *)p, 1u << 28);
    if (!strstr((const char *)p, ".version") || !strstr((const char *)p, ".target"))
      return err(CUDA_ERROR_INVALID_IMAGE, fn, "neither a CUBIN nor PTX text");
    n++;
  }
  module_t *m = new module_t();
  m->ctx = current();
  m->image.assign((const char *)p, (const char *)p + n);
  D().modules.insert(m);
  *mod = m;
  return CUDA_SUCCESS;
}

MS_EMU_API CUresult cuModuleLoadDataEx(CUmodule *mod, const void *image, unsigned n, void *options, void **values) {
  (void)n; (void)options; (void)values;
  return cuModuleLoadData(mod, image);
}

MS_EMU_API CUresult cuModuleUnload(CUmodule mod) {
  lock_guard g;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!D().modules.count(mod)) return err(CUDA_ERROR_INVALID_HANDLE, "cuModuleUnload", "%p is not a loaded module", mod);
  flush_all();
  module_t *m = (module_t *)mod;
  for (size_t i = 0; i < m->funcs.size(); i++) { D().functions.erase(m->funcs[i]); delete m->funcs[i]; }
  D().modules.erase(mod);
  delete m;
  return CUDA_SUCCESS;
}

/* A name must be in the module's image and be a kernel compiled into the
   emulator; otherwise CUDA_ERROR_NOT_FOUND, as the driver answers. */
MS_EMU_API CUresult cuModuleGetFunction(CUfunction *f, CUmodule mod, const char *name) {
  lock_guard g;
  static const char *fn = "cuModuleGetFunction";
  if (!f || !name) return err(CUDA_ERROR_INVALID_VALUE, fn, "NULL function or name");
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!D().modules.count(mod)) return err(CUDA_ERROR_INVALID_HANDLE, fn, "%p is not a loaded module", mod);
  module_t *m = (module_t *)mod;
  if (!image_has(m->image, name)) return err(CUDA_ERROR_NOT_FOUND, fn, "%s is not in the module image", name);
  const ms_emu_kernel *k = ms_emu_find_kernel(name);
  if (!k) return err(CUDA_ERROR_NOT_FOUND, fn, "%s is in the image but not compiled into the emulator", name);
  for (size_t i = 0; i < m->funcs.size(); i++) if (m->funcs[i]->k == k) { *f = m->funcs[i]; return CUDA_SUCCESS; }
  func_t *h = new func_t();
  h->mod = m;
  h->k = k;
  m->funcs.push_back(h);
  D().functions.insert(h);
  *f = h;
  return CUDA_SUCCESS;
}

MS_EMU_API CUresult cuFuncGetAttribute(int *v, int attr, CUfunction f) {
  lock_guard g;
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  if (!D().functions.count(f)) return err(CUDA_ERROR_INVALID_HANDLE, "cuFuncGetAttribute", "%p is not a function", f);
  const ms_emu_kernel *k = ((func_t *)f)->k;
  switch (attr) {
    case 0: *v = (int)k->max_threads; break;   /* max threads per block */
    case 1: case 2: case 3: *v = 0; break;     /* static shared, const, local bytes: not tracked */
    case 4: *v = 32; break;                    /* registers */
    case 5: case 6: *v = k_cc_major * 10 + k_cc_minor; break;
    default: return err(CUDA_ERROR_INVALID_VALUE, "cuFuncGetAttribute", "attribute %d is not emulated", attr);
  }
  return CUDA_SUCCESS;
}

MS_EMU_API CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                   unsigned bz, unsigned shmem, CUstream stream, void **params, void **extra) {
  lock_guard g;
  static const char *fn = "cuLaunchKernel";
  CUresult e = need_ctx(fn);
  if (e) return e;
  if (!D().functions.count(f)) return err(CUDA_ERROR_INVALID_HANDLE, fn, "%p is not a function handle", f);
  func_t *h = (func_t *)f;
  const ms_emu_kernel *k = h->k;
  if (h->mod->ctx != current()) return err(CUDA_ERROR_INVALID_CONTEXT, fn, "%s belongs to another context", k->name);
  if ((e = check_stream(fn, stream)) != CUDA_SUCCESS) return e;
  if (!gx || !gy || !gz || !bx || !by || !bz)
    return err(CUDA_ERROR_INVALID_VALUE, fn, "%s: a zero dimension (grid %u x %u x %u, block %u x %u x %u)", k->name, gx, gy, gz, bx, by, bz);
  if (gx > 0x7fffffffu || gy > 65535u || gz > 65535u)
    return err(CUDA_ERROR_INVALID_VALUE, fn, "%s: grid %u x %u x %u exceeds the device's limits", k->name, gx, gy, gz);
  if (bx > 1024u || by > 1024u || bz > 64u || (unsigned long long)bx * by * bz > 1024u)
    return err(CUDA_ERROR_INVALID_VALUE, fn, "%s: block %u x %u x %u exceeds 1024 threads", k->name, bx, by, bz);
  const unsigned threads = bx * by * bz;
  if (threads > k->max_threads)
    return err(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, fn, "%s: %u threads per block, over its __launch_bounds__ of %u",
               k->name, threads, k->max_threads);
  if (shmem > 49152u) return err(CUDA_ERROR_INVALID_VALUE, fn, "%s: %u bytes of dynamic shared memory", k->name, shmem);
  if (extra) return err(CUDA_ERROR_NOT_SUPPORTED, fn, "%s: the `extra` argument buffer is not emulated", k->name);
  if (k->n_params > 0 && !params) return err(CUDA_ERROR_INVALID_VALUE, fn, "%s takes %d arguments, kernelParams is NULL", k->name, k->n_params);
  for (int i = 0; i < k->n_params; i++)
    if (!params[i]) return err(CUDA_ERROR_INVALID_VALUE, fn, "%s: kernelParams[%d] is NULL", k->name, i);
  if (D().log) say("launch %s grid %u x %u x %u block %u x %u x %u", k->name, gx, gy, gz, bx, by, bz);
  /* the arguments are copied now, as the driver does */
  op_t *o = new op_t();
  o->kind = op_t::LAUNCH; o->k = k;
  o->grid.x = gx; o->grid.y = gy; o->grid.z = gz;
  o->block.x = bx; o->block.y = by; o->block.z = bz;
  size_t total = 0;
  for (int i = 0; i < k->n_params; i++) total += (k->param_sizes[i] + 15u) & ~15u;
  o->args.resize(total + 16);
  char *base = (char *)(((uintptr_t)o->args.data() + 15u) & ~(uintptr_t)15u);
  for (int i = 0; i < k->n_params; i++) {
    memcpy(base, params[i], k->param_sizes[i]);
    o->argp.push_back(base);
    base += (k->param_sizes[i] + 15u) & ~15u;
  }
  if (o->argp.empty()) o->argp.push_back(NULL);
  /* MYSAMPLE_CUDA_EMU_NOEXEC=1: checked and dropped, so a timing measures
     the host's side of a call alone (tools/cuda_host_bench.sh); every
     result is then garbage */
  if (D().noexec) { delete o; return CUDA_SUCCESS; }
  e = submit(o, stream);
  if (e) return err(e, fn, "%s failed (see above)", k->name);
  return CUDA_SUCCESS;
}

/* cuLaunchKernelEx (CUDA 12): cuda.h's CUlaunchConfig and CUlaunchAttribute
   layouts. Programmatic stream serialization (attribute 6, 0 or 1) is
   accepted: it lets a kernel start before the previous one ends, and
   launches here run one after another, which it allows. Any other
   attribute is refused, so a launch that asks for more fails loudly;
   MYSAMPLE_CUDA_EMU_NO_PDL=1 refuses that one too. */
struct emu_launch_attr { int id; char pad[4]; union { char bytes[64]; int i; void *p; } v; };
struct emu_launch_config {
  unsigned gx, gy, gz, bx, by, bz, shmem;
  CUstream stream;
  emu_launch_attr *attrs;
  unsigned n_attrs;
};
MS_EMU_API CUresult cuLaunchKernelEx(const emu_launch_config *c, CUfunction f, void **params, void **extra) {
  static const char *fn = "cuLaunchKernelEx";
  {
    lock_guard g;
    if (!c) return err(CUDA_ERROR_INVALID_VALUE, fn, "NULL config");
    if (c->n_attrs && !c->attrs) return err(CUDA_ERROR_INVALID_VALUE, fn, "%u attributes at NULL", c->n_attrs);
    /* MYSAMPLE_CUDA_EMU_NO_PDL=1: refuse it, as a driver that cannot take it would (quietly: the caller recovers) */
    const char *no = getenv("MYSAMPLE_CUDA_EMU_NO_PDL");
    if (no && !strcmp(no, "1") && c->n_attrs) return CUDA_ERROR_NOT_SUPPORTED;
    for (unsigned i = 0; i < c->n_attrs; i++) {
      if (c->attrs[i].id != 6) return err(CUDA_ERROR_NOT_SUPPORTED, fn, "launch attribute %d is not emulated", c->attrs[i].id);
      if (c->attrs[i].v.i != 0 && c->attrs[i].v.i != 1)
        return err(CUDA_ERROR_INVALID_VALUE, fn, "programmatic stream serialization %d (0 or 1)", c->attrs[i].v.i);
    }
  }
  return cuLaunchKernel(f, c->gx, c->gy, c->gz, c->bx, c->by, c->bz, c->shmem, c->stream, params, extra);
}

/* ---- memory ------------------------------------------------------------------------ */

MS_EMU_API CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  lock_guard g;
  static const char *fn = "cuMemAlloc";
  if (!p) return err(CUDA_ERROR_INVALID_VALUE, fn, "NULL pointer");
  CUresult e = need_ctx(fn);
  if (e) return e;
  if (n == 0) return err(CUDA_ERROR_INVALID_VALUE, fn, "0 bytes");
  if (n > k_total_mem - D().bytes_in_use) return err(CUDA_ERROR_OUT_OF_MEMORY, fn, "%zu bytes: over the emulated %llu", n, k_total_mem);
  alloc_t a;
  void *m = dev_alloc(n, &a);
  if (!m) return err(CUDA_ERROR_OUT_OF_MEMORY, fn, "%zu bytes: host allocation failed", n);
  a.size = n; a.pinned = 0; a.ctx = current();
  D().allocs[(uintptr_t)m] = a;
  D().bytes_in_use += n;
  *p = (CUdeviceptr)(uintptr_t)m;
  return CUDA_SUCCESS;
}

MS_EMU_API CUresult cuMemFree_v2(CUdeviceptr p) {
  lock_guard g;
  static const char *fn = "cuMemFree";
  CUresult e = need_ctx(fn);
  if (e) return e;
  if (!p) return CUDA_SUCCESS;
  std::map<uintptr_t, alloc_t>::iterator it = D().allocs.find((uintptr_t)p);
  if (it == D().allocs.end() || it->second.pinned)
    return err(CUDA_ERROR_INVALID_VALUE, fn, "0x%llx is not the start of a device allocation", p);
  e = flush_all();   /* the driver waits for the device before freeing */
  D().bytes_in_use -= it->second.size;
  dev_free((void *)it->first, &it->second);
  D().allocs.erase(it);
  return e;
}

MS_EMU_API CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  lock_guard g;
  if (!free_bytes || !total) return CUDA_ERROR_INVALID_VALUE;
  CUresult e = need_ctx("cuMemGetInfo");
  if (e) return e;
  *total = (size_t)k_total_mem;
  *free_bytes = (size_t)k_total_mem - D().bytes_in_use;
  return CUDA_SUCCESS;
}

MS_EMU_API CUresult cuMemAllocHost_v2(void **p, size_t n) {
  lock_guard g;
  static const char *fn = "cuMemAllocHost";
  if (!p) return err(CUDA_ERROR_INVALID_VALUE, fn, "NULL pointer");
  CUresult e = need_ctx(fn);
  if (e) return e;
  if (n == 0) return err(CUDA_ERROR_INVALID_VALUE, fn, "0 bytes");
  void *m = NULL;
  if (posix_memalign(&m, 4096, n) != 0 || !m) return err(CUDA_ERROR_OUT_OF_MEMORY, fn, "%zu bytes", n);
  alloc_t a;
  a.size = n; a.pinned = 1; a.ctx = current(); a.map = NULL; a.map_size = 0;
  D().allocs[(uintptr_t)m] = a;
  *p = m;
  return CUDA_SUCCESS;
}

MS_EMU_API CUresult cuMemFreeHost(void *p) {
  lock_guard g;
  static const char *fn = "cuMemFreeHost";
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  std::map<uintptr_t, alloc_t>::iterator it = D().allocs.find((uintptr_t)p);
  if (!p || it == D().allocs.end() || !it->second.pinned)
    return err(CUDA_ERROR_INVALID_VALUE, fn, "%p is not pinned memory from cuMemAllocHost", p);
  CUresult e = flush_all();
  free(p);
  D().allocs.erase(it);
  return e;
}

MS_EMU_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
  lock_guard g;
  static const char *fn = "cuMemcpyHtoD";
  CUresult e = need_ctx(fn);
  if (e) return e;
  if ((e = check_dev(fn, "destination", (uintptr_t)dst, n)) != CUDA_SUCCESS) return e;
  if (n && !src) return err(CUDA_ERROR_INVALID_VALUE, fn, "NULL source");
  e = flush_all();   /* the legacy default stream: after all earlier work */
  if (n) memmove((void *)(uintptr_t)dst, src, n);
  return e;
}

MS_EMU_API CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
  lock_guard g;
  static const char *fn = "cuMemcpyDtoH";
  CUresult e = need_ctx(fn);
  if (e) return e;
  if ((e = check_dev(fn, "source", (uintptr_t)src, n)) != CUDA_SUCCESS) return e;
  if (n && !dst) return err(CUDA_ERROR_INVALID_VALUE, fn, "NULL destination");
  e = flush_all();
  if (n) memmove(dst, (const void *)(uintptr_t)src, n);
  return e;
}

MS_EMU_API CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  lock_guard g;
  static const char *fn = "cuMemcpyDtoD";
  CUresult e = need_ctx(fn);
  if (e) return e;
  if ((e = check_dev(fn, "destination", (uintptr_t)dst, n)) != CUDA_SUCCESS) return e;
  if ((e = check_dev(fn, "source", (uintptr_t)src, n)) != CUDA_SUCCESS) return e;
  e = flush_all();
  if (n) memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
  return e;
}

MS_EMU_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
  lock_guard g;
  static const char *fn = "cuMemcpyHtoDAsync";
  CUresult e = need_ctx(fn);
  if (e) return e;
  if ((e = check_dev(fn, "destination", (uintptr_t)dst, n)) != CUDA_SUCCESS) return e;
  if (n && !src) return err(CUDA_ERROR_INVALID_VALUE, fn, "NULL source");
  return copy_async(fn, (void *)(uintptr_t)dst, src, n, s);
}

MS_EMU_API CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s) {
  lock_guard g;
  static const char *fn = "cuMemcpyDtoHAsync";
  CUresult e = need_ctx(fn);
  if (e) return e;
  if ((e = check_dev(fn, "source", (uintptr_t)src, n)) != CUDA_SUCCESS) return e;
  if (n && !dst) return err(CUDA_ERROR_INVALID_VALUE, fn, "NULL destination");
  return copy_async(fn, dst, (const void *)(uintptr_t)src, n, s);
}

MS_EMU_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  lock_guard g;
  static const char *fn = "cuMemcpyDtoDAsync";
  CUresult e = need_ctx(fn);
  if (e) return e;
  if ((e = check_dev(fn, "destination", (uintptr_t)dst, n)) != CUDA_SUCCESS) return e;
  if ((e = check_dev(fn, "source", (uintptr_t)src, n)) != CUDA_SUCCESS) return e;
  return copy_async(fn, (void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, s);
}

static CUresult memset_any(const char *fn, CUdeviceptr dst, unsigned value, size_t n, unsigned elem, CUstream s, int async) {
  CUresult e = need_ctx(fn);
  if (e) return e;
  if (n > (~(size_t)0) / elem) return err(CUDA_ERROR_INVALID_VALUE, fn, "%zu elements overflow", n);
  if (elem == 4 && (dst & 3u)) return err(CUDA_ERROR_INVALID_VALUE, fn, "0x%llx is not 4-byte aligned", dst);
  if ((e = check_dev(fn, "destination", (uintptr_t)dst, n * elem)) != CUDA_SUCCESS) return e;
  if ((e = check_stream(fn, s)) != CUDA_SUCCESS) return e;
  if (n == 0) return CUDA_SUCCESS;
  op_t *o = new op_t();
  o->kind = elem == 4 ? op_t::SET32 : op_t::SET8;
  o->dst = (void *)(uintptr_t)dst; o->n = elem == 4 ? n : n; o->value = value;
  if (!async) { e = flush_all(); exec(o); delete o; return e; }
  return submit(o, s);
}
MS_EMU_API CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t n) { lock_guard g; return memset_any("cuMemsetD8", dst, v, n, 1, NULL, 0); }
MS_EMU_API CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned v, size_t n) { lock_guard g; return memset_any("cuMemsetD32", dst, v, n, 4, NULL, 0); }
MS_EMU_API CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) { lock_guard g; return memset_any("cuMemsetD8Async", dst, v, n, 1, s, 1); }
MS_EMU_API CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned v, size_t n, CUstream s) { lock_guard g; return memset_any("cuMemsetD32Async", dst, v, n, 4, s, 1); }

/* ---- streams and events ----------------------------------------------------------- */

MS_EMU_API CUresult cuStreamCreate(CUstream *s, unsigned flags) {
  lock_guard g;
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  CUresult e = need_ctx("cuStreamCreate");
  if (e) return e;
  stream_t *st = new stream_t();
  st->ctx = current(); st->flags = flags;
  D().streams.insert(st);
  *s = st;
  return CUDA_SUCCESS;
}

MS_EMU_API CUresult cuStreamDestroy_v2(CUstream s) {
  lock_guard g;
  if (!D().streams.count(s)) return err(CUDA_ERROR_INVALID_HANDLE, "cuStreamDestroy", "%p is not a live stream", s);
  CUresult e = flush(last_of(s));   /* pending work still completes */
  D().streams.erase(s);
  delete (stream_t *)s;
  return e;
}

MS_EMU_API CUresult cuStreamSynchronize(CUstream s) {
  lock_guard g;
  static const char *fn = "cuStreamSynchronize";
  CUresult e = need_ctx(fn);
  if (e) return e;
  if ((e = check_stream(fn, s)) != CUDA_SUCCESS) return e;
  return flush(last_of(s));
}

MS_EMU_API CUresult cuStreamQuery(CUstream s) {
  lock_guard g;
  CUresult e = check_stream("cuStreamQuery", s);
  if (e) return e;
  return flush(last_of(s));   /* the emulated device finishes when asked */
}

MS_EMU_API CUresult cuStreamWaitEvent(CUstream s, CUevent ev, unsigned flags) {
  lock_guard g;
  (void)flags;
  CUresult e = check_stream("cuStreamWaitEvent", s);
  if (e) return e;
  if (!D().events.count(ev)) return err(CUDA_ERROR_INVALID_HANDLE, "cuStreamWaitEvent", "%p is not an event", ev);
  return CUDA_SUCCESS;   /* one queue in submission order: already ordered */
}

MS_EMU_API CUresult cuEventCreate(CUevent *ev, unsigned flags) {
  lock_guard g;
  if (!ev) return CUDA_ERROR_INVALID_VALUE;
  CUresult e = need_ctx("cuEventCreate");
  if (e) return e;
  if (flags & ~0xfu) return err(CUDA_ERROR_INVALID_VALUE, "cuEventCreate", "flags 0x%x", flags);
  event_t *x = new event_t();
  x->flags = flags;
  D().events.insert(x);
  *ev = x;
  return CUDA_SUCCESS;
}

MS_EMU_API CUresult cuEventDestroy_v2(CUevent ev) {
  lock_guard g;
  if (!D().events.count(ev)) return err(CUDA_ERROR_INVALID_HANDLE, "cuEventDestroy", "%p is not an event", ev);
  event_t *x = (event_t *)ev;
  if (x->pending) flush(x->pending);
  D().events.erase(ev);
  delete x;
  return CUDA_SUCCESS;
}

MS_EMU_API CUresult cuEventRecord(CUevent ev, CUstream s) {
  lock_guard g;
  static const char *fn = "cuEventRecord";
  CUresult e = need_ctx(fn);
  if (e) return e;
  if (!D().events.count(ev)) return err(CUDA_ERROR_INVALID_HANDLE, fn, "%p is not an event", ev);
  if ((e = check_stream(fn, s)) != CUDA_SUCCESS) return e;
  event_t *x = (event_t *)ev;
  x->recorded = 1;
  op_t *o = new op_t();
  o->kind = op_t::EVENT; o->ev = x;
  return submit(o, s);
}

MS_EMU_API CUresult cuEventSynchronize(CUevent ev) {
  lock_guard g;
  if (!D().events.count(ev)) return err(CUDA_ERROR_INVALID_HANDLE, "cuEventSynchronize", "%p is not an event", ev);
  event_t *x = (event_t *)ev;
  return x->pending ? flush(x->pending) : CUDA_SUCCESS;
}

MS_EMU_API CUresult cuEventQuery(CUevent ev) {
  lock_guard g;
  if (!D().events.count(ev)) return err(CUDA_ERROR_INVALID_HANDLE, "cuEventQuery", "%p is not an event", ev);
  event_t *x = (event_t *)ev;
  return x->pending ? flush(x->pending) : CUDA_SUCCESS;
}

MS_EMU_API CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
  lock_guard g;
  if (!ms) return CUDA_ERROR_INVALID_VALUE;
  if (!D().events.count(a) || !D().events.count(b)) return CUDA_ERROR_INVALID_HANDLE;
  event_t *x = (event_t *)a, *y = (event_t *)b;
  if ((x->flags | y->flags) & 2u) return err(CUDA_ERROR_INVALID_HANDLE, "cuEventElapsedTime", "an event created with CU_EVENT_DISABLE_TIMING");
  if (!x->recorded || !y->recorded || x->pending || y->pending) return CUDA_ERROR_NOT_READY;
  *ms = (float)(y->time - x->time);
  return CUDA_SUCCESS;
}

/* ---- errors ------------------------------------------------------------------------- */

namespace {
struct err_name { int code; const char *name, *text; };
const err_name k_errors[] = {
  { 0, "CUDA_SUCCESS", "no error" },
  { 1, "CUDA_ERROR_INVALID_VALUE", "invalid argument" },
  { 2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory" },
  { 3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error" },
  { 100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected" },
  { 101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal" },
  { 200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid" },
  { 201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context" },
  { 400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle" },
  { 500, "CUDA_ERROR_NOT_FOUND", "named symbol not found" },
  { 600, "CUDA_ERROR_NOT_READY", "device not ready" },
  { 701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch" },
  { 719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure" },
  { 801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported" },
  { 999, "CUDA_ERROR_UNKNOWN", "unknown error" },
};
const err_name *find_err(int e) {
  for (size_t i = 0; i < sizeof k_errors / sizeof k_errors[0]; i++) if (k_errors[i].code == e) return &k_errors[i];
  return NULL;
}
}  // namespace

MS_EMU_API CUresult cuGetErrorString(CUresult e, const char **s) {
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  const err_name *x = find_err(e);
  *s = x ? x->text : NULL;
  return x ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

MS_EMU_API CUresult cuGetErrorName(CUresult e, const char **s) {
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  const err_name *x = find_err(e);
  *s = x ? x->name : NULL;
  return x ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- the emulator's own ---------------------------------------------------------------- */

/* Options at run time (tests): "schedule" = "rr" | "random[:seed]",
   "async" = "sync" | "defer". Returns 0, or -1 for an unknown option. */
MS_EMU_API int msEmuSetOption(const char *name, const char *value) {
  lock_guard g;
  read_options();
  if (!name || !value) return -1;
  if (!strcmp(name, "schedule")) return ms_emu_set_schedule(value);
  if (!strcmp(name, "async")) {
    if (!strcmp(value, "defer")) D().defer = 1;
    else if (!strcmp(value, "sync")) { flush_all(); D().defer = 0; }
    else return -1;
    return 0;
  }
  return -1;
}

/* "assembly" or "ucontext": how fibers switch (MYSAMPLE_CUDA_EMU_FIBERS). */
MS_EMU_API const char *msEmuFiberKind(void) { return ms_emu_fiber_kind(); }

/* Counters since the library was loaded (for timing reports). */
MS_EMU_API void msEmuGetStats(unsigned long long *launches, unsigned long long *blocks, unsigned long long *switches) {
  lock_guard g;
  ms_emu_stats(launches, blocks, switches);
}

/* The L2 prefetches the kernels asked for (each checked: kernels.cu's
   l2_prefetch) and their bytes, since the library was loaded. */
MS_EMU_API void msEmuGetPrefetches(unsigned long long *n, unsigned long long *bytes) {
  lock_guard g;
  ms_emu_prefetch_stats(n, bytes);
}

namespace {
struct at_exit_stats {
  ~at_exit_stats() {
    const char *s = getenv("MYSAMPLE_CUDA_EMU_STATS");
    if (!s || !*s || !strcmp(s, "0")) return;
    unsigned long long l, b, w;
    ms_emu_stats(&l, &b, &w);
    fprintf(stderr, "[cuda-emu] %llu launches, %llu blocks, %llu fiber switches (%s)\n", l, b, w, ms_emu_fiber_kind());
  }
} g_at_exit;
}  // namespace
