/* ==== implementation (MYSAMPLE_CUDA_IMPLEMENTATION) ======================== */
/* This guard opens here and closes at the end of src/cuda/impl_launch.c. */
#if defined(MYSAMPLE_CUDA_IMPLEMENTATION) && !defined(MYSAMPLE_CUDA_IMPLEMENTATION_DONE)
#define MYSAMPLE_CUDA_IMPLEMENTATION_DONE

/* ---- implementation: platform, loading the driver and NVRTC --------------- */
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>

#ifdef _WIN32
#  ifndef WIN32_LEAN_AND_MEAN
#    define WIN32_LEAN_AND_MEAN
#  endif
#  include <windows.h>
#  include <direct.h>
#  include <process.h>
#  include <io.h>
#  include <fcntl.h>
#  include <sys/stat.h>
#else
#  include <dlfcn.h>
#  include <fcntl.h>
#  include <sys/stat.h>
#  include <sys/time.h>
#  include <sys/types.h>
#  include <unistd.h>
#  ifndef MYSAMPLE_CUDA_NO_PTHREAD
#    include <pthread.h>
#  endif
#endif

#if defined(MYSAMPLE_MALLOC)
#  define MS__CU_MALLOC(sz) MYSAMPLE_MALLOC(sz, NULL)
#  define MS__CU_FREE(p) MYSAMPLE_FREE(p, NULL)
#else
#  define MS__CU_MALLOC(sz) malloc(sz)
#  define MS__CU_FREE(p) free(p)
#endif

/* -- locks, libraries, clocks -------------------------------------------------- */
#ifdef _WIN32
typedef SRWLOCK ms__cu_mutex;
#  define MS__CU_MUTEX_INIT SRWLOCK_INIT
static void ms__cu_lock(ms__cu_mutex *m) { AcquireSRWLockExclusive(m); }
static void ms__cu_unlock(ms__cu_mutex *m) { ReleaseSRWLockExclusive(m); }
static void *ms__cu_dlopen(const char *name) { return (void *)LoadLibraryA(name); }
static void *ms__cu_dlsym(void *lib, const char *name) {
  FARPROC f = GetProcAddress((HMODULE)lib, name);
  void *p;
  memcpy(&p, &f, sizeof p);
  return p;
}
static double ms__cu_now(void) {
  LARGE_INTEGER f, c;
  QueryPerformanceFrequency(&f);
  QueryPerformanceCounter(&c);
  return (double)c.QuadPart / (double)f.QuadPart;
}
#else
#  ifndef MYSAMPLE_CUDA_NO_PTHREAD
typedef pthread_mutex_t ms__cu_mutex;
#    define MS__CU_MUTEX_INIT PTHREAD_MUTEX_INITIALIZER
static void ms__cu_lock(ms__cu_mutex *m) { pthread_mutex_lock(m); }
static void ms__cu_unlock(ms__cu_mutex *m) { pthread_mutex_unlock(m); }
#  else
typedef int ms__cu_mutex;
#    define MS__CU_MUTEX_INIT 0
static void ms__cu_lock(ms__cu_mutex *m) { (void)m; }
static void ms__cu_unlock(ms__cu_mutex *m) { (void)m; }
#  endif
static void *ms__cu_dlopen(const char *name) { return dlopen(name, RTLD_NOW | RTLD_LOCAL); }
static void *ms__cu_dlsym(void *lib, const char *name) { return dlsym(lib, name); }
static double ms__cu_now(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
}
#endif

/* Resolves a symbol into a function pointer without a cast between object
   and function pointers (valid C and C++). */
#define MS__CU_SYM(lib, fp, name) do { void *ms__s = ms__cu_dlsym((lib), (name)); \
  memcpy(&(fp), &ms__s, sizeof ms__s); } while (0)

static void ms__cu_msg(char *msg, size_t size, const char *fmt, ...);
#include <stdarg.h>
static void ms__cu_msg(char *msg, size_t size, const char *fmt, ...) {
  va_list ap;
  if (!msg || size == 0) return;
  va_start(ap, fmt);
  vsnprintf(msg, size, fmt, ap);
  va_end(ap);
}

static const char *ms__cu_getenv(const char *name) {
  const char *v = getenv(name);
  return (v && *v) ? v : NULL;
}

/* -- the few CUDA driver types and values used (no cuda.h) ------------------- */
typedef int ms__CUresult;
typedef unsigned long long ms__CUdeviceptr;
typedef void *ms__CUhandle;  /* CUcontext, CUmodule, CUfunction, CUstream, CUevent */
#define MS__CUDA_SUCCESS 0
#define MS__CUDA_ERROR_STUB_LIBRARY 34
#define MS__CUDA_ERROR_INSUFFICIENT_DRIVER 35
#define MS__CUDA_ERROR_NO_DEVICE 100
#define MS__CUDA_ERROR_NOT_READY 600
#define MS__CU_ATTR_SM_COUNT 16
#define MS__CU_ATTR_CC_MAJOR 75
#define MS__CU_ATTR_CC_MINOR 76
#define MS__CU_EVENT_DISABLE_TIMING 2

/* cuLaunchKernelEx's configuration (CUDA 12.0+), laid out as cuda.h's
   CUlaunchConfig and CUlaunchAttribute (tests/cuda_abi.test.sh compares
   them where the toolkit is installed): one attribute, programmatic
   stream serialization (id 6), which lets a kernel launch while the one
   before it on the stream still runs; its griddepcontrol.wait then holds
   it until that one's memory is visible (ms_pdl_wait in kernels.cu). */
#define MS__CU_LAUNCH_ATTR_PROGRAMMATIC_SERIALIZATION 6
typedef struct ms__cu_launch_attr {
  int id;
  char pad[4];
  union { char bytes[64]; int allowed; void *align; } value;
} ms__cu_launch_attr;
typedef struct ms__cu_launch_config {
  unsigned grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes;
  ms__CUhandle stream;
  ms__cu_launch_attr *attrs;
  unsigned n_attrs;
} ms__cu_launch_config;

/* Function pointers of the driver API: private, never under CUDA's names. */
typedef struct ms__cu_driver {
  ms__CUresult (*init)(unsigned);
  ms__CUresult (*driver_version)(int *);
  ms__CUresult (*device_count)(int *);
  ms__CUresult (*device_get)(int *, int);
  ms__CUresult (*device_attr)(int *, int, int);
  ms__CUresult (*device_name)(char *, int, int);
  ms__CUresult (*ctx_get_current)(ms__CUhandle *);
  ms__CUresult (*ctx_get_device)(int *);
  ms__CUresult (*ctx_push)(ms__CUhandle);
  ms__CUresult (*ctx_pop)(ms__CUhandle *);
  ms__CUresult (*primary_retain)(ms__CUhandle *, int);
  ms__CUresult (*primary_release)(int);
  ms__CUresult (*module_load_data)(ms__CUhandle *, const void *);
  ms__CUresult (*module_unload)(ms__CUhandle);
  ms__CUresult (*module_get_function)(ms__CUhandle *, ms__CUhandle, const char *);
  ms__CUresult (*launch)(ms__CUhandle, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, ms__CUhandle, void **, void **);
  ms__CUresult (*launch_ex)(const ms__cu_launch_config *, ms__CUhandle, void **, void **);   /* (optional: CUDA 12+) */
  ms__CUresult (*mem_alloc)(ms__CUdeviceptr *, size_t);
  ms__CUresult (*mem_free)(ms__CUdeviceptr);
  ms__CUresult (*mem_alloc_host)(void **, size_t);
  ms__CUresult (*mem_free_host)(void *);
  ms__CUresult (*memcpy_htod)(ms__CUdeviceptr, const void *, size_t);
  ms__CUresult (*memcpy_dtoh)(void *, ms__CUdeviceptr, size_t);
  ms__CUresult (*memcpy_htod_async)(ms__CUdeviceptr, const void *, size_t, ms__CUhandle);
  ms__CUresult (*memcpy_dtoh_async)(void *, ms__CUdeviceptr, size_t, ms__CUhandle);
  ms__CUresult (*memset_d32_async)(ms__CUdeviceptr, unsigned, size_t, ms__CUhandle);
  ms__CUresult (*event_create)(ms__CUhandle *, unsigned);
  ms__CUresult (*event_destroy)(ms__CUhandle);
  ms__CUresult (*event_record)(ms__CUhandle, ms__CUhandle);
  ms__CUresult (*event_synchronize)(ms__CUhandle);
  ms__CUresult (*stream_synchronize)(ms__CUhandle);
  ms__CUresult (*ctx_synchronize)(void);
  ms__CUresult (*get_error_string)(ms__CUresult, const char **);
} ms__cu_driver;

/* NVRTC's entry points. */
typedef void *ms__nvrtcProgram;
typedef struct ms__cu_nvrtc {
  const char *(*error_string)(int);
  int (*version)(int *, int *);
  int (*num_archs)(int *);
  int (*archs)(int *);
  int (*create)(ms__nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *);
  int (*destroy)(ms__nvrtcProgram *);
  int (*compile)(ms__nvrtcProgram, int, const char *const *);
  int (*log_size)(ms__nvrtcProgram, size_t *);
  int (*log)(ms__nvrtcProgram, char *);
  int (*cubin_size)(ms__nvrtcProgram, size_t *);
  int (*cubin)(ms__nvrtcProgram, char *);
  int (*ptx_size)(ms__nvrtcProgram, size_t *);
  int (*ptx)(ms__nvrtcProgram, char *);
} ms__cu_nvrtc;

/* Process-wide load state: written once under the mutex, then read-only. */
typedef struct ms__cu_global {
  int drv_tried, drv_ok;
  ms_result drv_rc;
  char drv_msg[512];
  void *drv_lib;
  ms__cu_driver drv;
  int rtc_tried, rtc_ok;
  ms_result rtc_rc;
  char rtc_msg[512];
  void *rtc_lib, *builtins_lib;
  ms__cu_nvrtc rtc;
  int rtc_major, rtc_minor;
  int n_archs;
  int archs[64];
} ms__cu_global;

static ms__cu_global ms__cu_g;
static ms__cu_mutex ms__cu_load_mu = MS__CU_MUTEX_INIT;

static const char *ms__cu_errstr(ms__CUresult e) {
  const char *s = NULL;
  if (ms__cu_g.drv.get_error_string && ms__cu_g.drv.get_error_string(e, &s) == MS__CUDA_SUCCESS && s) return s;
  return "unknown CUDA error";
}

/* Loads the driver library and resolves the entry points by their
   versioned names (the _v2 ABI of 64-bit device pointers). */
static ms_result ms__cu_load_driver_locked(const char *path) {
  ms__cu_global *g = &ms__cu_g;
  ms__cu_driver *d = &g->drv;
  const char *name;
  ms__CUresult e;
  int n = 0, ver = 0;
  if (g->drv_tried) return g->drv_rc;
  g->drv_tried = 1;
  g->drv_rc = MS_ERR_NO_DEVICE;
  if (!path) path = ms__cu_getenv("MYSAMPLE_CUDA_DRIVER_PATH");
#ifdef _WIN32
  name = path ? path : "nvcuda.dll";
#else
  name = path ? path : "libcuda.so.1";
#endif
  g->drv_lib = ms__cu_dlopen(name);
  if (!g->drv_lib) {
    ms__cu_msg(g->drv_msg, sizeof g->drv_msg, "no CUDA driver: %s could not be loaded (no NVIDIA driver installed?)", name);
    return g->drv_rc;
  }
  MS__CU_SYM(g->drv_lib, d->init, "cuInit");
  MS__CU_SYM(g->drv_lib, d->driver_version, "cuDriverGetVersion");
  MS__CU_SYM(g->drv_lib, d->device_count, "cuDeviceGetCount");
  MS__CU_SYM(g->drv_lib, d->device_get, "cuDeviceGet");
  MS__CU_SYM(g->drv_lib, d->device_attr, "cuDeviceGetAttribute");
  MS__CU_SYM(g->drv_lib, d->device_name, "cuDeviceGetName");
  MS__CU_SYM(g->drv_lib, d->ctx_get_current, "cuCtxGetCurrent");
  MS__CU_SYM(g->drv_lib, d->ctx_get_device, "cuCtxGetDevice");
  MS__CU_SYM(g->drv_lib, d->ctx_push, "cuCtxPushCurrent_v2");
  MS__CU_SYM(g->drv_lib, d->ctx_pop, "cuCtxPopCurrent_v2");
  MS__CU_SYM(g->drv_lib, d->primary_retain, "cuDevicePrimaryCtxRetain");
  MS__CU_SYM(g->drv_lib, d->primary_release, "cuDevicePrimaryCtxRelease_v2");
  if (!d->primary_release) MS__CU_SYM(g->drv_lib, d->primary_release, "cuDevicePrimaryCtxRelease");
  MS__CU_SYM(g->drv_lib, d->module_load_data, "cuModuleLoadData");
  MS__CU_SYM(g->drv_lib, d->module_unload, "cuModuleUnload");
  MS__CU_SYM(g->drv_lib, d->module_get_function, "cuModuleGetFunction");
  MS__CU_SYM(g->drv_lib, d->launch, "cuLaunchKernel");
  MS__CU_SYM(g->drv_lib, d->launch_ex, "cuLaunchKernelEx");
  MS__CU_SYM(g->drv_lib, d->mem_alloc, "cuMemAlloc_v2");
  MS__CU_SYM(g->drv_lib, d->mem_free, "cuMemFree_v2");
  MS__CU_SYM(g->drv_lib, d->mem_alloc_host, "cuMemAllocHost_v2");
  MS__CU_SYM(g->drv_lib, d->mem_free_host, "cuMemFreeHost");
  MS__CU_SYM(g->drv_lib, d->memcpy_htod, "cuMemcpyHtoD_v2");
  MS__CU_SYM(g->drv_lib, d->memcpy_dtoh, "cuMemcpyDtoH_v2");
  MS__CU_SYM(g->drv_lib, d->memcpy_htod_async, "cuMemcpyHtoDAsync_v2");
  MS__CU_SYM(g->drv_lib, d->memcpy_dtoh_async, "cuMemcpyDtoHAsync_v2");
  MS__CU_SYM(g->drv_lib, d->memset_d32_async, "cuMemsetD32Async");
  MS__CU_SYM(g->drv_lib, d->event_create, "cuEventCreate");
  MS__CU_SYM(g->drv_lib, d->event_destroy, "cuEventDestroy_v2");
  MS__CU_SYM(g->drv_lib, d->event_record, "cuEventRecord");
  MS__CU_SYM(g->drv_lib, d->event_synchronize, "cuEventSynchronize");
  MS__CU_SYM(g->drv_lib, d->stream_synchronize, "cuStreamSynchronize");
  MS__CU_SYM(g->drv_lib, d->ctx_synchronize, "cuCtxSynchronize");
  MS__CU_SYM(g->drv_lib, d->get_error_string, "cuGetErrorString");
  if (!d->init || !d->driver_version || !d->device_count || !d->device_get || !d->device_attr ||
      !d->device_name || !d->ctx_get_current || !d->ctx_get_device || !d->ctx_push || !d->ctx_pop ||
      !d->primary_retain || !d->primary_release || !d->module_load_data || !d->module_unload ||
      !d->module_get_function || !d->launch || !d->mem_alloc || !d->mem_free || !d->mem_alloc_host ||
      !d->mem_free_host || !d->memcpy_htod || !d->memcpy_dtoh || !d->memcpy_htod_async ||
      !d->memcpy_dtoh_async || !d->memset_d32_async || !d->event_create || !d->event_destroy ||
      !d->event_record || !d->event_synchronize || !d->stream_synchronize || !d->ctx_synchronize) {
    ms__cu_msg(g->drv_msg, sizeof g->drv_msg, "%s lacks CUDA driver API entry points (driver older than CUDA 4.0, or not a driver)", name);
    return g->drv_rc;
  }
  e = d->init(0);
  if (e != MS__CUDA_SUCCESS) {
    if (e == MS__CUDA_ERROR_STUB_LIBRARY)
      ms__cu_msg(g->drv_msg, sizeof g->drv_msg, "%s is the CUDA toolkit's stub library, not a driver", name);
    else if (e == MS__CUDA_ERROR_NO_DEVICE)
      ms__cu_msg(g->drv_msg, sizeof g->drv_msg, "the CUDA driver found no GPU (cuInit: %s)", ms__cu_errstr(e));
    else if (e == MS__CUDA_ERROR_INSUFFICIENT_DRIVER)
      ms__cu_msg(g->drv_msg, sizeof g->drv_msg, "the CUDA driver is too old for this system (cuInit: %s)", ms__cu_errstr(e));
    else
      ms__cu_msg(g->drv_msg, sizeof g->drv_msg, "cuInit failed: %s (error %d)", ms__cu_errstr(e), e);
    return g->drv_rc;
  }
  if (d->device_count(&n) != MS__CUDA_SUCCESS || n < 1) {
    ms__cu_msg(g->drv_msg, sizeof g->drv_msg, "the CUDA driver reports no GPU");
    return g->drv_rc;
  }
  d->driver_version(&ver);
  ms__cu_msg(g->drv_msg, sizeof g->drv_msg, "CUDA driver %d.%d, %d GPU(s)", ver / 1000, (ver % 1000) / 10, n);
  g->drv_ok = 1;
  g->drv_rc = MS_OK;
  return MS_OK;
}

/* Preloads libnvrtc-builtins from NVRTC's own directory, so NVRTC finds it
   when that directory is not on the loader's search path. */
static void ms__cu_preload_builtins(const char *nvrtc_path, int major, int minor) {
  char buf[1024];
  const char *slash = strrchr(nvrtc_path, '/');
  size_t dir;
#ifdef _WIN32
  const char *bs = strrchr(nvrtc_path, '\\');
  if (!slash || (bs && bs > slash)) slash = bs;
#endif
  if (!slash) return;
  dir = (size_t)(slash - nvrtc_path) + 1;
  if (dir + 64 >= sizeof buf) return;
  memcpy(buf, nvrtc_path, dir);
#ifdef _WIN32
  snprintf(buf + dir, sizeof buf - dir, "nvrtc-builtins64_%d%d.dll", major, minor);
  ms__cu_g.builtins_lib = ms__cu_dlopen(buf);
#else
  snprintf(buf + dir, sizeof buf - dir, "libnvrtc-builtins.so.%d.%d", major, minor);
  ms__cu_g.builtins_lib = dlopen(buf, RTLD_NOW | RTLD_GLOBAL);
  if (!ms__cu_g.builtins_lib) {
    snprintf(buf + dir, sizeof buf - dir, "libnvrtc-builtins.so");
    ms__cu_g.builtins_lib = dlopen(buf, RTLD_NOW | RTLD_GLOBAL);
  }
#endif
}

static ms_result ms__cu_load_nvrtc_locked(const char *path) {
  ms__cu_global *g = &ms__cu_g;
  ms__cu_nvrtc *r = &g->rtc;
#ifdef _WIN32
  static const char *const names[] = { "nvrtc64_130_0.dll", "nvrtc64_120_0.dll", "nvrtc64_112_0.dll", NULL };
#else
  static const char *const names[] = { "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so", NULL };
#endif
  const char *used = NULL;
  int i;
  if (g->rtc_tried) return g->rtc_rc;
  g->rtc_tried = 1;
  g->rtc_rc = MS_ERR_NO_DEVICE;
  if (!path) path = ms__cu_getenv("MYSAMPLE_NVRTC_PATH");
  if (path) {
    g->rtc_lib = ms__cu_dlopen(path);
    used = path;
  } else {
    for (i = 0; names[i] && !g->rtc_lib; i++) { g->rtc_lib = ms__cu_dlopen(names[i]); used = names[i]; }
  }
  if (!g->rtc_lib) {
    if (path) ms__cu_msg(g->rtc_msg, sizeof g->rtc_msg, "no NVRTC: %s could not be loaded", path);
    else ms__cu_msg(g->rtc_msg, sizeof g->rtc_msg, "no NVRTC: none of %s, %s, %s, %s could be loaded (install the CUDA toolkit's NVRTC or set MYSAMPLE_NVRTC_PATH)",
                    names[0], names[1], names[2], names[3] ? names[3] : "");
    return g->rtc_rc;
  }
  MS__CU_SYM(g->rtc_lib, r->error_string, "nvrtcGetErrorString");
  MS__CU_SYM(g->rtc_lib, r->version, "nvrtcVersion");
  MS__CU_SYM(g->rtc_lib, r->num_archs, "nvrtcGetNumSupportedArchs");
  MS__CU_SYM(g->rtc_lib, r->archs, "nvrtcGetSupportedArchs");
  MS__CU_SYM(g->rtc_lib, r->create, "nvrtcCreateProgram");
  MS__CU_SYM(g->rtc_lib, r->destroy, "nvrtcDestroyProgram");
  MS__CU_SYM(g->rtc_lib, r->compile, "nvrtcCompileProgram");
  MS__CU_SYM(g->rtc_lib, r->log_size, "nvrtcGetProgramLogSize");
  MS__CU_SYM(g->rtc_lib, r->log, "nvrtcGetProgramLog");
  MS__CU_SYM(g->rtc_lib, r->cubin_size, "nvrtcGetCUBINSize");
  MS__CU_SYM(g->rtc_lib, r->cubin, "nvrtcGetCUBIN");
  MS__CU_SYM(g->rtc_lib, r->ptx_size, "nvrtcGetPTXSize");
  MS__CU_SYM(g->rtc_lib, r->ptx, "nvrtcGetPTX");
  if (!r->error_string || !r->version || !r->num_archs || !r->archs || !r->create || !r->destroy ||
      !r->compile || !r->log_size || !r->log || !r->cubin_size || !r->cubin || !r->ptx_size || !r->ptx) {
    ms__cu_msg(g->rtc_msg, sizeof g->rtc_msg, "%s lacks NVRTC entry points (NVRTC 11.2 or newer is needed)", used);
    return g->rtc_rc;
  }
  if (r->version(&g->rtc_major, &g->rtc_minor) != 0 || r->num_archs(&g->n_archs) != 0 ||
      g->n_archs < 1 || g->n_archs > 64 || r->archs(g->archs) != 0) {
    ms__cu_msg(g->rtc_msg, sizeof g->rtc_msg, "%s: nvrtcVersion/nvrtcGetSupportedArchs failed", used);
    return g->rtc_rc;
  }
  if (path) ms__cu_preload_builtins(path, g->rtc_major, g->rtc_minor);
  ms__cu_msg(g->rtc_msg, sizeof g->rtc_msg, "NVRTC %d.%d (%s), sm_%d..sm_%d", g->rtc_major, g->rtc_minor, used,
             g->archs[0], g->archs[g->n_archs - 1]);
  g->rtc_ok = 1;
  g->rtc_rc = MS_OK;
  return MS_OK;
}

MSDEF ms_result ms_cuda_load_nvrtc(const char *path, char *msg, size_t msg_size) {
  ms_result rc;
  ms__cu_lock(&ms__cu_load_mu);
  rc = ms__cu_load_nvrtc_locked(path);
  ms__cu_msg(msg, msg_size, "%s", ms__cu_g.rtc_msg);
  ms__cu_unlock(&ms__cu_load_mu);
  return rc;
}

MSDEF ms_result ms_cuda_load_driver(const char *path, char *msg, size_t msg_size) {
  ms_result rc;
  ms__cu_lock(&ms__cu_load_mu);
  rc = ms__cu_load_driver_locked(path);
  ms__cu_msg(msg, msg_size, "%s", ms__cu_g.drv_msg);
  ms__cu_unlock(&ms__cu_load_mu);
  return rc;
}

MSDEF void ms_cuda_nvrtc_version(int *major, int *minor) {
  int ok;
  ms__cu_lock(&ms__cu_load_mu);
  ok = ms__cu_g.rtc_ok;
  if (major) *major = ok ? ms__cu_g.rtc_major : 0;
  if (minor) *minor = ok ? ms__cu_g.rtc_minor : 0;
  ms__cu_unlock(&ms__cu_load_mu);
}
