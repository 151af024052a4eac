/* Tests of the CPU emulator itself (libcuda_emu.so, loaded with dlopen as
   mysample_cuda.h loads a driver): the driver API's error codes, the warp
   intrinsics and barriers against known answers, broken kernels whose
   launches must fail instead of hanging, the random schedule finding a
   missing __syncthreads, the shared-memory poison, deferred asynchronous
   work, and launches from two host threads.
   Usage: test_emu path/to/libcuda_emu.so */
#include "testlib.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/time.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

static struct {
  CUresult (*init)(unsigned);
  CUresult (*count)(int *);
  CUresult (*get)(int *, int);
  CUresult (*name)(char *, int, int);
  CUresult (*attr)(int *, int, int);
  CUresult (*retain)(void **, int);
  CUresult (*release)(int);
  CUresult (*push)(void *);
  CUresult (*pop)(void **);
  CUresult (*current)(void **);
  CUresult (*load)(void **, const void *);
  CUresult (*unload)(void *);
  CUresult (*getfn)(void **, void *, const char *);
  CUresult (*fattr)(int *, int, void *);
  CUresult (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **, void **);
  CUresult (*alloc)(CUdeviceptr *, size_t);
  CUresult (*free_)(CUdeviceptr);
  CUresult (*alloc_host)(void **, size_t);
  CUresult (*free_host)(void *);
  CUresult (*htod)(CUdeviceptr, const void *, size_t);
  CUresult (*dtoh)(void *, CUdeviceptr, size_t);
  CUresult (*htod_async)(CUdeviceptr, const void *, size_t, void *);
  CUresult (*memset32)(CUdeviceptr, unsigned, size_t);
  CUresult (*stream_create)(void **, unsigned);
  CUresult (*stream_destroy)(void *);
  CUresult (*stream_sync)(void *);
  CUresult (*event_create)(void **, unsigned);
  CUresult (*event_record)(void *, void *);
  CUresult (*event_sync)(void *);
  CUresult (*event_destroy)(void *);
  CUresult (*errstr)(CUresult, const char **);
  int (*set_option)(const char *, const char *);
  void (*stats)(unsigned long long *, unsigned long long *, unsigned long long *);
  const char *(*fiber_kind)(void);
  unsigned long long (*check_fx)(unsigned long long *, uint32_t *);
  void (*prefetches)(unsigned long long *, unsigned long long *);
} D;

static void *lib, *ctx, *mod;
static const char *const ptx =
  "// emulator self-test module: names only\n.version 8.0\n.target sm_90\n"
  ".entry emu_t_intrinsics(\n.entry emu_t_grid(\n.entry emu_t_exit_before_barrier(\n"
  ".entry emu_t_divergent_barrier(\n.entry emu_t_exit_in_shuffle(\n.entry emu_t_barrier_vs_shuffle(\n"
  ".entry emu_t_missing_barrier(\n.entry emu_t_uninit_shared(\n.entry emu_t_bounded(\n.entry emu_t_args(\n"
  ".entry emu_t_not_compiled_in(\n.entry emu_t_prefetch(\n.entry emu_t_fenced_partials(\n.entry emu_t_uninit_shared_tpl(\n.entry emu_t_unfenced_partials(\n";

#define SYM(f, n) do { void *s_ = dlsym(lib, n); memcpy(&(f), &s_, sizeof s_); if (!s_) { printf("  missing %s\n", n); ok = 0; } } while (0)
static int load_lib(const char *path) {
  int ok = 1;
  lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) { printf("  dlopen %s: %s\n", path, dlerror()); return 0; }
  SYM(D.init, "cuInit"); SYM(D.count, "cuDeviceGetCount"); SYM(D.get, "cuDeviceGet");
  SYM(D.name, "cuDeviceGetName"); SYM(D.attr, "cuDeviceGetAttribute");
  SYM(D.retain, "cuDevicePrimaryCtxRetain"); SYM(D.release, "cuDevicePrimaryCtxRelease_v2");
  SYM(D.push, "cuCtxPushCurrent_v2"); SYM(D.pop, "cuCtxPopCurrent_v2"); SYM(D.current, "cuCtxGetCurrent");
  SYM(D.load, "cuModuleLoadData"); SYM(D.unload, "cuModuleUnload"); SYM(D.getfn, "cuModuleGetFunction");
  SYM(D.fattr, "cuFuncGetAttribute"); SYM(D.launch, "cuLaunchKernel");
  SYM(D.alloc, "cuMemAlloc_v2"); SYM(D.free_, "cuMemFree_v2"); SYM(D.alloc_host, "cuMemAllocHost_v2");
  SYM(D.free_host, "cuMemFreeHost"); SYM(D.htod, "cuMemcpyHtoD_v2"); SYM(D.dtoh, "cuMemcpyDtoH_v2");
  SYM(D.htod_async, "cuMemcpyHtoDAsync_v2"); SYM(D.memset32, "cuMemsetD32_v2");
  SYM(D.stream_create, "cuStreamCreate"); SYM(D.stream_destroy, "cuStreamDestroy_v2"); SYM(D.stream_sync, "cuStreamSynchronize");
  SYM(D.event_create, "cuEventCreate"); SYM(D.event_record, "cuEventRecord"); SYM(D.event_sync, "cuEventSynchronize");
  SYM(D.event_destroy, "cuEventDestroy_v2"); SYM(D.errstr, "cuGetErrorString");
  SYM(D.set_option, "msEmuSetOption"); SYM(D.stats, "msEmuGetStats"); SYM(D.fiber_kind, "msEmuFiberKind");
  SYM(D.check_fx, "msEmuCheckFx"); SYM(D.prefetches, "msEmuGetPrefetches");
  return ok;
}

static void *fn(const char *name) {
  void *f = NULL;
  CHECK_EQ_INT(D.getfn(&f, mod, name), 0);
  return f;
}

/* one pointer argument */
static CUresult launch1(void *f, unsigned gx, unsigned gy, unsigned threads, CUdeviceptr p) {
  void *args[1];
  args[0] = &p;
  return D.launch(f, gx, gy, 1, threads, 1, 1, 0, NULL, args, NULL);
}

static double now(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
}

/* ---- initialisation, device, contexts ---------------------------------------- */
static void test_device(void) {
  int n = -1, dev = -1, v = 0;
  char name[64];
  const char *s = NULL;
  CHECK_EQ_INT(D.count(&n), 3);               /* CUDA_ERROR_NOT_INITIALIZED */
  CHECK_EQ_INT(D.init(1), 1);                 /* flags must be 0 */
  CHECK_EQ_INT(D.init(0), 0);
  CHECK_EQ_INT(D.count(&n), 0);
  CHECK_EQ_INT(n, 1);
  CHECK_EQ_INT(D.get(&dev, 1), 101);          /* CUDA_ERROR_INVALID_DEVICE */
  CHECK_EQ_INT(D.get(&dev, 0), 0);
  CHECK_EQ_INT(D.name(name, sizeof name, dev), 0);
  CHECK(strcmp(name, "mysample CPU emulator") == 0);
  CHECK_EQ_INT(D.attr(&v, 75, dev), 0); CHECK_EQ_INT(v, 9);
  CHECK_EQ_INT(D.attr(&v, 76, dev), 0); CHECK_EQ_INT(v, 0);
  CHECK_EQ_INT(D.attr(&v, 10, dev), 0); CHECK_EQ_INT(v, 32);
  CHECK_EQ_INT(D.attr(&v, 9999, dev), 1);
  CHECK_EQ_INT(D.errstr(500, &s), 0);
  CHECK(s && strcmp(s, "named symbol not found") == 0);
  CHECK_EQ_INT(D.errstr(123456, &s), 1);
}

static void test_contexts(void) {
  void *c = NULL;
  CUdeviceptr p = 0;
  CHECK_EQ_INT(D.current(&c), 0);
  CHECK(c == NULL);
  CHECK_EQ_INT(D.alloc(&p, 16), 201);         /* no current context */
  CHECK_EQ_INT(D.pop(&c), 201);
  CHECK_EQ_INT(D.retain(&ctx, 0), 0);
  CHECK_EQ_INT(D.push(ctx), 0);
  CHECK_EQ_INT(D.current(&c), 0);
  CHECK(c == ctx);
  CHECK_EQ_INT(D.push((void *)&c), 201);      /* not a context */
}

/* ---- memory -------------------------------------------------------------------------- */
static void test_memory_errors(void) {
  CUdeviceptr p = 0, q = 0;
  unsigned buf[64];
  void *h = NULL, *s = NULL;
  memset(buf, 0, sizeof buf);
  CHECK_EQ_INT(D.alloc(&p, 0), 1);
  CHECK_EQ_INT(D.alloc(&p, 256), 0);
  CHECK(p % 256 == 0);
  CHECK_EQ_INT(D.htod(p, buf, 256), 0);
  CHECK_EQ_INT(D.htod(p + 16, buf, 240), 0);  /* inside */
  CHECK_EQ_INT(D.htod(p + 16, buf, 241), 1);  /* one byte over */
  CHECK_EQ_INT(D.htod(p, NULL, 4), 1);
  CHECK_EQ_INT(D.htod((CUdeviceptr)(uintptr_t)buf, buf, 4), 1);  /* host memory is not device memory */
  CHECK_EQ_INT(D.dtoh(buf, p + 255, 2), 1);
  CHECK_EQ_INT(D.dtoh(buf, 0, 4), 1);
  CHECK_EQ_INT(D.memset32(p + 2, 0u, 4), 1); /* misaligned */
  CHECK_EQ_INT(D.memset32(p, 7u, 64), 0);
  CHECK_EQ_INT(D.memset32(p, 7u, 65), 1);
  CHECK_EQ_INT(D.dtoh(buf, p, 256), 0);
  CHECK_EQ_INT(buf[63], 7);
  CHECK_EQ_INT(D.free_(p + 16), 1);           /* not the start */
  CHECK_EQ_INT(D.alloc(&q, 100), 0);
  CHECK_EQ_INT(D.free_(p), 0);
  CHECK_EQ_INT(D.free_(p), 1);                /* twice */
  CHECK_EQ_INT(D.free_(q), 0);
  CHECK_EQ_INT(D.free_host(buf), 1);          /* not pinned */
  CHECK_EQ_INT(D.alloc_host(&h, 64), 0);
  CHECK_EQ_INT(D.free_host(h), 0);
  CHECK_EQ_INT(D.htod_async(p, buf, 4, (void *)buf), 1);  /* freed: invalid value first */
  CHECK_EQ_INT(D.alloc(&p, 64), 0);
  CHECK_EQ_INT(D.htod_async(p, buf, 4, (void *)buf), 400);  /* not a stream */
  CHECK_EQ_INT(D.stream_create(&s, 0), 0);
  CHECK_EQ_INT(D.htod_async(p, buf, 4, s), 0);
  CHECK_EQ_INT(D.stream_sync(s), 0);
  CHECK_EQ_INT(D.stream_destroy(s), 0);
  CHECK_EQ_INT(D.stream_sync(s), 400);
  CHECK_EQ_INT(D.free_(p), 0);
}

/* ---- modules ---------------------------------------------------------------------------- */
static void test_modules(void) {
  void *f = NULL, *m2 = NULL;
  int v = 0;
  static const char garbage[] = "not a module";
  CHECK_EQ_INT(D.load(&m2, garbage), 200);    /* CUDA_ERROR_INVALID_IMAGE */
  CHECK_EQ_INT(D.load(&mod, ptx), 0);
  CHECK_EQ_INT(D.getfn(&f, mod, "no_such_kernel"), 500);           /* CUDA_ERROR_NOT_FOUND */
  CHECK_EQ_INT(D.getfn(&f, mod, "emu_t_not_compiled_in"), 500);    /* in the image only */
  CHECK_EQ_INT(D.getfn(&f, mod, "ms_k_row"), 500);                 /* compiled in, not in this image */
  CHECK_EQ_INT(D.getfn(&f, mod, "emu_t_bounded"), 0);
  CHECK_EQ_INT(D.fattr(&v, 0, f), 0);
  CHECK_EQ_INT(v, 64);                        /* its __launch_bounds__ */
  CHECK_EQ_INT(D.fattr(&v, 0, (void *)&v), 400);
}

/* ---- intrinsics and barriers against known answers ----------------------------------------- */
static void check_intrinsics(unsigned n) {
  static unsigned out[7 * 1024];
  CUdeviceptr d = 0;
  unsigned t, bad = 0, block_total = 0;
  for (t = 0; t < n; t++) block_total += t;
  CHECK_EQ_INT(D.alloc(&d, sizeof out), 0);
  CHECK_EQ_INT(launch1(fn("emu_t_intrinsics"), 1, 1, n, d), 0);
  CHECK_EQ_INT(D.dtoh(out, d, sizeof out), 0);
  for (t = 0; t < n; t++) {
    unsigned lane = t & 31, base = t - lane, pre = 0, sum = 0, ballot = 0, l, g = 0;
    for (l = 0; l <= lane; l++) pre += base + l;
    for (l = 0; l < 32; l++) { sum += base + l; if (l % 3 == 0) ballot |= 1u << l; }
    for (l = 0; l < 8; l++) g += (t & ~7u) + l;
    bad += out[t] != pre;
    bad += out[n + t] != sum;
    bad += out[2 * n + t] != ballot;
    bad += out[3 * n + t] != base + 7;
    bad += out[4 * n + t] != (lane == 31 ? t : t + 1);
    bad += out[5 * n + t] != block_total;
    bad += out[6 * n + t] != g;
  }
  CHECK_MSG(bad == 0, "%u wrong values with %u threads", bad, n);
  CHECK_EQ_INT(D.free_(d), 0);
}
static void test_intrinsics(void) {
  unsigned long long l0, b0, s0, l1, b1, s1;
  double t0, t1;
  int i;
  check_intrinsics(32);
  check_intrinsics(256);
  check_intrinsics(1024);
  /* the cost of a fiber switch (each lane: 31 shuffles, 1 barrier) */
  D.stats(&l0, &b0, &s0);
  t0 = now();
  for (i = 0; i < 50; i++) check_intrinsics(1024);
  t1 = now();
  D.stats(&l1, &b1, &s1);
  printf("  %llu fiber switches in %.3f s: %.1f ns per switch (%s fibers)\n", s1 - s0, t1 - t0,
         1e9 * (t1 - t0) / (double)(s1 - s0 ? s1 - s0 : 1), D.fiber_kind());
}

static void test_grid_and_args(void) {
  unsigned out[4 * 6], b, x, y;
  CUdeviceptr d = 0;
  struct { unsigned long long a; unsigned b, c; } pair;
  void *args[2];
  CHECK_EQ_INT(D.alloc(&d, sizeof out), 0);
  CHECK_EQ_INT(launch1(fn("emu_t_grid"), 3, 2, 64, d), 0);
  CHECK_EQ_INT(D.dtoh(out, d, sizeof out), 0);
  for (y = 0; y < 2; y++)
    for (x = 0; x < 3; x++) {
      b = y * 3 + x;
      CHECK_EQ_INT(out[4 * b], x); CHECK_EQ_INT(out[4 * b + 1], y);
      CHECK_EQ_INT(out[4 * b + 2], 3002); CHECK_EQ_INT(out[4 * b + 3], 64);
    }
  pair.a = 0x1122334455667788ull; pair.b = 99; pair.c = 7;
  args[0] = &d; args[1] = &pair;
  CHECK_EQ_INT(D.launch(fn("emu_t_args"), 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL), 0);
  CHECK_EQ_INT(D.dtoh(out, d, 16), 0);
  CHECK_EQ_INT(out[0], 0x55667788u); CHECK_EQ_INT(out[1], 0x11223344u); CHECK_EQ_INT(out[2], 99); CHECK_EQ_INT(out[3], 7);
  CHECK_EQ_INT(D.free_(d), 0);
}

static void test_launch_errors(void) {
  CUdeviceptr d = 0;
  void *f = fn("emu_t_bounded"), *args[1];
  void *extra[1] = { NULL };
  CHECK_EQ_INT(D.alloc(&d, 4096), 0);
  args[0] = &d;
  CHECK_EQ_INT(launch1(f, 1, 1, 64, d), 0);
  CHECK_EQ_INT(launch1(f, 1, 1, 128, d), 701);  /* over __launch_bounds__(64): CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES */
  CHECK_EQ_INT(launch1(f, 0, 1, 32, d), 1);     /* empty grid */
  CHECK_EQ_INT(launch1(fn("emu_t_grid"), 1, 1, 2048, d), 1);
  CHECK_EQ_INT(launch1(fn("emu_t_grid"), 1, 70000, 32, d), 1);
  CHECK_EQ_INT(D.launch(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), 1);   /* no arguments */
  CHECK_EQ_INT(D.launch(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, extra), 801);
  CHECK_EQ_INT(D.launch((void *)&d, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL), 400);
  CHECK_EQ_INT(D.launch(f, 1, 1, 1, 32, 1, 1, 0, (void *)&d, args, NULL), 400);   /* not a stream */
  CHECK_EQ_INT(D.free_(d), 0);
}

/* Broken kernels: each launch fails (CUDA_ERROR_LAUNCH_FAILED, a message on
   stderr) quickly, and the emulator still runs good kernels afterwards. */
static void test_barrier_errors(void) {
  static const char *const broken[] = { "emu_t_exit_before_barrier", "emu_t_divergent_barrier",
                                        "emu_t_exit_in_shuffle", "emu_t_barrier_vs_shuffle" };
  CUdeviceptr d = 0;
  int i;
  double t0 = now();
  CHECK_EQ_INT(D.alloc(&d, 4096 * 4), 0);
  for (i = 0; i < 4; i++) {
    CHECK_MSG(launch1(fn(broken[i]), 2, 1, 256, d) == 719, "%s", broken[i]);
    CHECK_MSG(launch1(fn(broken[i]), 1, 1, 1024, d) == 719, "%s", broken[i]);
  }
  CHECK(now() - t0 < 10.0);
  CHECK_EQ_INT(D.free_(d), 0);
  check_intrinsics(1024);
}

/* A missing __syncthreads passes under the default schedule (thread 0
   runs first) and fails under the random one. */
static void test_random_schedule(void) {
  static unsigned out[1024];
  CUdeviceptr d = 0;
  int i, wrong = 0, seed;
  char s[32];
  CHECK_EQ_INT(D.alloc(&d, sizeof out), 0);
  CHECK_EQ_INT(launch1(fn("emu_t_missing_barrier"), 1, 1, 1024, d), 0);
  CHECK_EQ_INT(D.dtoh(out, d, sizeof out), 0);
  for (i = 0; i < 1024; i++) wrong += out[i] != 42u;
  CHECK_EQ_INT(wrong, 0);
  for (seed = 1; seed <= 3; seed++) {
    snprintf(s, sizeof s, "random:%d", seed);
    CHECK_EQ_INT(D.set_option("schedule", s), 0);
    CHECK_EQ_INT(launch1(fn("emu_t_missing_barrier"), 1, 1, 1024, d), 0);
    CHECK_EQ_INT(D.dtoh(out, d, sizeof out), 0);
    wrong = 0;
    for (i = 0; i < 1024; i++) wrong += out[i] != 42u;
    CHECK_MSG(wrong > 0, "seed %d: the random schedule did not expose the missing barrier", seed);
    check_intrinsics(256);   /* correct kernels stay correct under any schedule */
  }
  CHECK_EQ_INT(D.set_option("schedule", "rr"), 0);
  CHECK_EQ_INT(D.set_option("schedule", "sometimes"), -1);
  CHECK_EQ_INT(D.free_(d), 0);
}

static void test_shared_poison(void) {
  unsigned out[4];
  CUdeviceptr d = 0;
  int i;
  CHECK_EQ_INT(D.alloc(&d, sizeof out), 0);
  CHECK_EQ_INT(launch1(fn("emu_t_uninit_shared"), 1, 1, 32, d), 0);
  CHECK_EQ_INT(D.dtoh(out, d, sizeof out), 0);
  CHECK_EQ_INT(out[0], 0xffffffffu);
  CHECK_EQ_INT(out[3], 0xffffffffu);
  for (i = 0; i < 2; i++) {   /* (the second launch after the first's 7s) */
    CHECK_EQ_INT(launch1(fn("emu_t_uninit_shared_tpl"), 1, 1, 32, d), 0);
    CHECK_EQ_INT(D.dtoh(out, d, sizeof out), 0);
    CHECK_MSG(out[0] == 0xffffffffu && out[3] == 0xffffffffu, "launch %d: a template function's __shared__ read 0x%x, "
              "0x%x before any write, not the poison (tests/cuda_emu/shared.ld)", i, out[0], out[3]);
  }
  CHECK_EQ_INT(D.free_(d), 0);
}

/* Deferred mode: an asynchronous copy reads its source when the host
   synchronises, so a host that rewrites the source too early is seen. */
static void test_deferred(void) {
  CUdeviceptr d = 0;
  unsigned h = 1, r = 0;
  void *ev = NULL;
  CHECK_EQ_INT(D.alloc(&d, 4), 0);
  CHECK_EQ_INT(D.event_create(&ev, 2), 0);
  CHECK_EQ_INT(D.set_option("async", "defer"), 0);
  CHECK_EQ_INT(D.htod_async(d, &h, 4, NULL), 0);
  CHECK_EQ_INT(D.event_record(ev, NULL), 0);
  h = 2;                                     /* too early: the copy has not run */
  CHECK_EQ_INT(D.event_sync(ev), 0);
  h = 3;
  CHECK_EQ_INT(D.dtoh(&r, d, 4), 0);
  CHECK_EQ_INT(r, 2);
  /* a failing kernel is reported at the synchronisation */
  CHECK_EQ_INT(launch1(fn("emu_t_exit_before_barrier"), 1, 1, 64, d), 0);
  CHECK_EQ_INT(D.stream_sync(NULL), 719);
  CHECK_EQ_INT(D.set_option("async", "sync"), 0);
  h = 1;
  CHECK_EQ_INT(D.htod_async(d, &h, 4, NULL), 0);
  h = 2;
  CHECK_EQ_INT(D.dtoh(&r, d, 4), 0);
  CHECK_EQ_INT(r, 1);
  CHECK_EQ_INT(D.event_destroy(ev), 0);
  CHECK_EQ_INT(D.free_(d), 0);
}

/* Two host threads launch at once (the driver serialises them). */
static int thread_bad;
static void *thread_main(void *arg) {
  static unsigned out[2][7 * 256];
  int which = *(int *)arg, i;
  CUdeviceptr d = 0;
  void *f = NULL;
  if (D.push(ctx) != 0 || D.alloc(&d, sizeof out[0]) != 0 || D.getfn(&f, mod, "emu_t_intrinsics") != 0) { thread_bad = 1; return NULL; }
  for (i = 0; i < 20; i++) {
    if (launch1(f, 1, 1, 256, d) != 0 || D.dtoh(out[which], d, sizeof out[which]) != 0) thread_bad = 1;
    if (out[which][5 * 256] != 255u * 256u / 2u) thread_bad = 1;
  }
  if (D.free_(d) != 0) thread_bad = 1;
  D.pop(NULL);
  return NULL;
}
static void test_two_threads(void) {
  pthread_t a, b;
  int ia = 0, ib = 1;
  CHECK(pthread_create(&a, NULL, thread_main, &ia) == 0);
  CHECK(pthread_create(&b, NULL, thread_main, &ib) == 0);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  CHECK_EQ_INT(thread_bad, 0);
}

/* ---- the L2 prefetch's checks ---------------------------------------------------- */
/* cp.async.bulk.prefetch.L2 wants a 16-byte aligned address, a positive
   multiple of 16 bytes, and (here) a range inside one allocation: a
   launch whose prefetch breaks a rule fails with a message; each one is
   counted. */
static CUresult launch_prefetch(CUdeviceptr p, unsigned off, unsigned bytes) {
  void *args[3];
  args[0] = &p; args[1] = &off; args[2] = &bytes;
  return D.launch(fn("emu_t_prefetch"), 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL);
}
static void test_prefetch(void) {
  CUdeviceptr p = 0;
  unsigned long long n0 = 0, b0 = 0, n1 = 0, b1 = 0;
  CHECK_EQ_INT(D.alloc(&p, 256), 0);
  D.prefetches(&n0, &b0);
  CHECK_EQ_INT(launch_prefetch(p, 0, 256), 0);
  CHECK_EQ_INT(launch_prefetch(p, 16, 240), 0);
  D.prefetches(&n1, &b1);
  CHECK(n1 == n0 + 2 && b1 == b0 + 496);
  CHECK(launch_prefetch(p, 8, 16) != 0);     /* misaligned */
  CHECK(launch_prefetch(p, 0, 24) != 0);     /* not a multiple of 16 */
  CHECK(launch_prefetch(p, 0, 0) != 0);      /* empty */
  CHECK(launch_prefetch(p, 16, 256) != 0);   /* past the end */
  CHECK_EQ_INT(launch_prefetch(p, 240, 16), 0);
  CHECK_EQ_INT(D.free_(p), 0);
}

/* ---- helpers of kernels.cu run on the host ------------------------------------ */
/* The integer mass of a logit (fxw: no exp under e^-32, one rounding of
   w * 2^44 in float) equals the exact weight's in double, over ~30
   million floats in [-40, 0]. */
static void test_fxw(void) {
  unsigned long long n = 0;
  uint32_t first = 0;
  const unsigned long long bad = D.check_fx(&n, &first);
  if (bad) printf("  %llu of %llu weights differ, first bits 0x%08x\n", bad, n, (unsigned)first);
  CHECK(n > 25000000ull);
  CHECK(bad == 0);
}

/* The last block to arrive sums the others' partials: right on the
   emulator with the fence and without (blocks run one after another);
   under the race check across blocks the fenceless one is a race
   (tests/ci/cuda_race.sh's control). */
static void test_partials(void) {
  unsigned out[2 + 5];
  const char *k[2] = { "emu_t_fenced_partials", "emu_t_unfenced_partials" };
  CUdeviceptr d = 0;
  int i;
  CHECK_EQ_INT(D.alloc(&d, sizeof out), 0);
  for (i = 0; i < 2; i++) {
    CHECK_EQ_INT(D.memset32(d, 0u, 2), 0);
    CHECK_EQ_INT(launch1(fn(k[i]), 1, 5, 64, d), 0);   /* (a row's blocks along y) */
    CHECK_EQ_INT(D.dtoh(out, d, sizeof out), 0);
    CHECK_MSG(out[0] == 5u && out[1] == 15u, "%s: %u arrivals, sum %u", k[i], out[0], out[1]);
  }
  CHECK_EQ_INT(D.free_(d), 0);
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : getenv("MYSAMPLE_CUDA_DRIVER_PATH");
  if (!path || !load_lib(path)) {
    printf("FAIL cuda-emu:load: %s\n", path ? path : "give the library's path");
    return 1;
  }
  t_run("cuda-emu:device", test_device);
  t_run("cuda-emu:contexts", test_contexts);
  t_run("cuda-emu:memory_errors", test_memory_errors);
  t_run("cuda-emu:modules", test_modules);
  if (!mod) { printf("FAIL cuda-emu: no module, the rest cannot run\n"); return 1; }
  t_run("cuda-emu:intrinsics", test_intrinsics);
  t_run("cuda-emu:grid_and_args", test_grid_and_args);
  t_run("cuda-emu:launch_errors", test_launch_errors);
  t_run("cuda-emu:barrier_errors", test_barrier_errors);
  t_run("cuda-emu:random_schedule", test_random_schedule);
  t_run("cuda-emu:shared_poison", test_shared_poison);
  t_run("cuda-emu:deferred", test_deferred);
  t_run("cuda-emu:two_threads", test_two_threads);
  t_run("cuda-emu:fxw", test_fxw);
  t_run("cuda-emu:prefetch", test_prefetch);
  t_run("cuda-emu:partials", test_partials);
  D.unload(mod);
  D.pop(NULL);
  D.release(0);
  return t_done();
}
