/* mysample bench --device cuda: the GPU figures in one run. Batches 1, 32
   and 256 x vocab 128256 and 151936 of N(0,1) logits resident on the
   device, configurations greedy, top_p_0.9, min_p_0.05 and
   top_k_50_top_p_0.95, each timed with CUDA events around groups of
   back-to-back ms_cuda_sample calls (median over the groups); the
   one-read floor (B*V*4 bytes at the device-to-device copy bandwidth
   measured with cuMemcpyDtoD in the same run) and the ratio to it; and the
   first (cold) and warm ms_cuda_create times. The events and the copy need
   driver calls mysample_cuda.h does not expose, so this file loads the
   same driver library (the handle is shared) and makes the device's
   primary context current, which ms_cuda_create then adopts. Runs on the
   CPU emulator too (tests), where the device name says so and the numbers
   mean nothing. */
#define _POSIX_C_SOURCE 200112L
#include "cli.h"
#include "mysample_cuda.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <math.h>
#include <time.h>
#include <dlfcn.h>
#include <sys/stat.h>

/* ---- the few driver entry points the bench needs -------------------------- */
typedef unsigned long long gb_dptr;
static struct gb_drv {
  void *lib;
  int (*dev_get)(int *, int);
  int (*primary_retain)(void **, int);
  int (*primary_release)(int);
  int (*ctx_push)(void *);
  int (*ctx_pop)(void **);
  int (*ctx_sync)(void);
  int (*ev_create)(void **, unsigned);
  int (*ev_destroy)(void *);
  int (*ev_record)(void *, void *);
  int (*ev_sync)(void *);
  int (*ev_elapsed)(float *, void *, void *);
  int (*dtod_async)(gb_dptr, gb_dptr, size_t, void *);
  int (*driver_version)(int *);
} gb;

/* dlsym into a function pointer without an object-to-function cast
   (ISO C has none; POSIX guarantees the sizes match) */
static int gb_sym(void *fp, size_t fp_size, const char *a, const char *b) {
  void *s = dlsym(gb.lib, a);
  if (!s && b) s = dlsym(gb.lib, b);
  if (!s) return 0;
  memcpy(fp, &s, fp_size);
  return 1;
}
#define GB_SYM(field, a, b) gb_sym(&gb.field, sizeof gb.field, a, b)

static int gb_load(const char *path, char *msg, size_t n) {
  gb.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!gb.lib) { snprintf(msg, n, "cannot load %s: %s", path, dlerror()); return 0; }
  if (!GB_SYM(dev_get, "cuDeviceGet", NULL) || !GB_SYM(primary_retain, "cuDevicePrimaryCtxRetain", NULL) ||
      !GB_SYM(primary_release, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease") ||
      !GB_SYM(ctx_push, "cuCtxPushCurrent_v2", NULL) || !GB_SYM(ctx_pop, "cuCtxPopCurrent_v2", NULL) ||
      !GB_SYM(ctx_sync, "cuCtxSynchronize", NULL) || !GB_SYM(ev_create, "cuEventCreate", NULL) ||
      !GB_SYM(ev_destroy, "cuEventDestroy_v2", "cuEventDestroy") || !GB_SYM(ev_record, "cuEventRecord", NULL) ||
      !GB_SYM(ev_sync, "cuEventSynchronize", NULL) || !GB_SYM(ev_elapsed, "cuEventElapsedTime", NULL) ||
      !GB_SYM(dtod_async, "cuMemcpyDtoDAsync_v2", NULL) || !GB_SYM(driver_version, "cuDriverGetVersion", NULL)) {
    snprintf(msg, n, "%s lacks a driver entry point the bench needs (events, cuMemcpyDtoDAsync)", path);
    return 0;
  }
  return 1;
}

/* ---- helpers --------------------------------------------------------------- */
static double gb_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
static int gb_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double gb_median(double *v, int n) { qsort(v, (size_t)n, sizeof *v, gb_cmp); return v[n / 2]; }

static uint64_t gb_rng = 0x2545F4914F6CDD1DULL;
static double gb_u(void) {
  gb_rng ^= gb_rng << 13; gb_rng ^= gb_rng >> 7; gb_rng ^= gb_rng << 17;
  return ((double)(gb_rng >> 11) + 0.5) / 9007199254740992.0;
}

/* "1,32,256" into v (at most cap values in [lo, hi]); 0 on a bad list */
static int gb_list(const char *s, int32_t *v, int cap, long lo, long hi) {
  int n = 0;
  while (*s) {
    char *end; long x;
    errno = 0; x = strtol(s, &end, 10);
    if (end == s || errno || x < lo || x > hi || n == cap || (*end && *end != ',')) return 0;
    v[n++] = (int32_t)x;
    s = *end ? end + 1 : end;
  }
  return n;
}

static void gb_json_str(const char *s) {
  putchar('"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') printf("\\%c", *s);
    else if ((unsigned char)*s < 0x20) printf("\\u%04x", (unsigned)(unsigned char)*s);
    else putchar(*s);
  }
  putchar('"');
}

typedef struct gb_cfg { const char *name; float T, top_p, min_p; int32_t top_k; } gb_cfg;
/* the configurations; top_k_50_top_p_0.95 is FlashInfer's
   top_k_top_p_sampling_from_logits case (temperature 1, no min-p), not
   the CPU bench's "combo" */
static const gb_cfg GB_CFGS[] = {
  { "greedy",              0.0f, 1.0f,  0.0f,  0 },
  { "top_p_0.9",           1.0f, 0.9f,  0.0f,  0 },
  { "min_p_0.05",          1.0f, 1.0f,  0.05f, 0 },
  { "top_k_50_top_p_0.95", 1.0f, 0.95f, 0.0f,  50 },
};
#define GB_N_CFGS ((int)(sizeof GB_CFGS / sizeof GB_CFGS[0]))

static void gb_usage(FILE *f) {
  fprintf(f,
    "usage: mysample bench --device cuda [--batch B,...] [--vocab V,...] [--config NAME,...]\n"
    "                      [--reps N] [--inner K] [--sigma S] [--working-set-mb M] [--copy-mb M]\n"
    "                      [--cache-dir DIR|off] [--topp radix|bins] [--split G] [--min-tokens N]\n"
    "                      [--logprobs N] [--penalties N] [--no-check] [--no-cold-compile] [--json]\n"
    "  The GPU figures, in one run: every batch (default 1,32,256) x vocab (default\n"
    "  128256,151936) x configuration (greedy, top_p_0.9, min_p_0.05,\n"
    "  top_k_50_top_p_0.95) on N(0, sigma^2) logits resident on the device (sigma 1).\n"
    "  Each figure is the median over N groups (default 31) of K back-to-back\n"
    "  ms_cuda_sample calls (default 20) timed with CUDA events: us per batch, ids\n"
    "  left on the device. The calls rotate over copies of the logits filling\n"
    "  M MB (default 256; 0 = one copy), so a batch smaller than the L2 cache is\n"
    "  read from memory as in a server, not from the cache.\n"
    "  The floor: one read of B*V*4 bytes at the device-to-device copy bandwidth,\n"
    "  measured in the same run with cuMemcpyDtoDAsync of M MB (--copy-mb,\n"
    "  default 256; bandwidth counts the bytes read and written).\n"
    "  --topp: top_p's threshold search (ms_cuda_desc.topp; default\n"
    "  $MYSAMPLE_CUDA_TOPP, else radix); the cuda lines say which (\"topp\").\n"
    "  --split: blocks per row of the full-row passes (ms_cuda_desc.split;\n"
    "  default 0, automatic); the cuda lines say which (\"split\").\n"
    "  --min-tokens: every row with min_tokens N and EOS id 0 (no sequence: EOS\n"
    "  masked), so the rows take the mask path (ms_k_mask, the work row; default\n"
    "  0); the cuda lines say which (\"min_tokens\").\n"
    "  --logprobs: every row asks for its token's raw logprob, rank and the top N\n"
    "  (0 .. 1024; default -1, none), results left on the device (ms_k_lp); the\n"
    "  cuda lines say which (\"logprobs\").\n"
    "  --penalties: every row on a device sequence of its own (slot = row) whose\n"
    "  prompt is N random ids, with repetition 1.1, frequency 0.2 and presence\n"
    "  0.1 (the tokens are not accepted, so the sequences stay as they are):\n"
    "  the penalised rows' path (default 0, none); the cuda lines say which\n"
    "  (\"penalties\").\n"
    "  host us: the host's time per call (median over the groups, from the first\n"
    "  call's start to the last call's return; a call may wait for the upload of\n"
    "  the call before last, so where the device is slower this is the device's\n"
    "  pace). With a driver that runs no kernels (the emulator's\n"
    "  MYSAMPLE_CUDA_EMU_NOEXEC=1) it is the host's work alone: packing the rows,\n"
    "  the upload and the launches; --no-check then skips the check of the tokens\n"
    "  after each case (which would fail: nothing sampled them).\n"
    "  Also: the first ms_cuda_create of the process on an existing context (loads\n"
    "  NVRTC, compiles or reads the disk cache, allocates) and the warm one\n"
    "  (in-memory cache), a cold NVRTC compile and a disk-cache load\n"
    "  (--no-cold-compile leaves the cold compile out, compile_ms null: it\n"
    "  costs seconds of CPU, which the tests' runs at toy sizes need not pay).\n"
    "  JSON keys (--json, one object per line): group cuda_device | cuda_create |\n"
    "  cuda_floor | cuda; the cuda lines: impl config batch vocab sigma us_per_batch\n"
    "  us_per_row host_us_per_batch floor_us x_floor copy_gbps device target\n"
    "  emulator reps inner working_set_mb. On the CPU emulator (tests/cuda_emu) the device name says\n"
    "  so and the timings are the emulator's, meaningless for a GPU.\n"
    "  Exit status 2 on bad flags, 3 without a usable driver, GPU or NVRTC.\n");
}

int ms_cli_bench_cuda(int argc, char **argv) {
  int32_t batches[16] = {1, 32, 256}, vocabs[16] = {128256, 151936};
  int n_batches = 3, n_vocabs = 2, cfg_on[GB_N_CFGS];
  int reps = 31, inner = 20, json = 0, i, k, rc = 0, cache_off = 0, topp = MS_CUDA_TOPP_DEFAULT, split = 0, min_tokens = 0, logprobs = -1, check = 1, penalties = 0, cold_compile = 1;
  double ws_mb = 256.0, copy_mb = 256.0;
  float sigma = 1.0f;
  const char *cache_dir = NULL, *env, *drv_path;
  char msg[8192], target[32];
  ms_cuda_desc desc;
  ms_cuda *cu = NULL;
  void *ctx = NULL, *ev0 = NULL, *ev1 = NULL;
  int dev = 0, pushed = 0, emulator, sm = 0, drv_ver = 0;
  int32_t maxB = 0, maxV = 0;
  double t_first, t_warm = 0, t_ctx, compile_ms = -1, disk_ms = -1, copy_us = 0, copy_gbps = 0;
  const char *first_source = "compile";
  /* NVRTC 12.9+ caches compiled programs beside the driver's JIT cache
     unless CUDA_CACHE_DISABLE is set: the "cold" compile may then be a hit */
  const char *ccd = getenv("CUDA_CACHE_DISABLE");
  const int nvrtc_cache = !(ccd && *ccd && strcmp(ccd, "0"));
  double *t = NULL, *th = NULL;
  time_t start = time(NULL);
  ms_result res;

  for (i = 0; i < GB_N_CFGS; i++) cfg_on[i] = 1;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    char *end;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { gb_usage(stdout); return 0; }
    else if (!strcmp(a, "--json")) json = 1;
    else if (!strcmp(a, "--no-check")) check = 0;
    else if (!strcmp(a, "--no-cold-compile")) cold_compile = 0;
    else if (!v) {
      /* the last word: a flag that wants a value, or none this command knows */
      static const char *const value_flags[] = { "--device", "--batch", "--vocab", "--config", "--reps", "--inner", "--sigma",
                                                 "--working-set-mb", "--topp", "--split", "--logprobs", "--penalties",
                                                 "--min-tokens", "--copy-mb", "--cache-dir" };
      for (k = 0; k < (int)(sizeof value_flags / sizeof value_flags[0]); k++) if (!strcmp(a, value_flags[k])) break;
      if (k < (int)(sizeof value_flags / sizeof value_flags[0])) fprintf(stderr, "mysample bench: %s needs a value\n", a);
      else { fprintf(stderr, "mysample bench: unknown flag '%s' with --device cuda\n", a); gb_usage(stderr); }
      return 2;
    }
    else if (!strcmp(a, "--device")) { i++; if (strcmp(v, "cuda")) { fprintf(stderr, "mysample bench: bad --device '%s'\n", v); return 2; } }
    else if (!strcmp(a, "--batch")) { i++; if (!(n_batches = gb_list(v, batches, 16, 1, 1 << 20))) { fprintf(stderr, "mysample bench: bad --batch '%s'\n", v); return 2; } }
    else if (!strcmp(a, "--vocab")) { i++; if (!(n_vocabs = gb_list(v, vocabs, 16, 2, 1 << 28))) { fprintf(stderr, "mysample bench: bad --vocab '%s'\n", v); return 2; } }
    else if (!strcmp(a, "--config")) {
      const char *s = v;
      i++;
      for (k = 0; k < GB_N_CFGS; k++) cfg_on[k] = 0;
      while (*s) {
        size_t len = strcspn(s, ",");
        for (k = 0; k < GB_N_CFGS; k++) if (strlen(GB_CFGS[k].name) == len && !strncmp(GB_CFGS[k].name, s, len)) break;
        if (k == GB_N_CFGS) { fprintf(stderr, "mysample bench: unknown --config '%.*s' (greedy, top_p_0.9, min_p_0.05, top_k_50_top_p_0.95)\n", (int)len, s); return 2; }
        cfg_on[k] = 1;
        s += len; if (*s) s++;
      }
    }
    else if (!strcmp(a, "--reps")) { i++; reps = (int)strtol(v, &end, 10); if (*end || reps < 1 || reps > 100000) { fprintf(stderr, "mysample bench: bad --reps '%s'\n", v); return 2; } }
    else if (!strcmp(a, "--inner")) { i++; inner = (int)strtol(v, &end, 10); if (*end || inner < 1 || inner > 100000) { fprintf(stderr, "mysample bench: bad --inner '%s'\n", v); return 2; } }
    else if (!strcmp(a, "--sigma")) { i++; sigma = (float)strtod(v, &end); if (*end || !(sigma > 0.0f)) { fprintf(stderr, "mysample bench: bad --sigma '%s'\n", v); return 2; } }
    else if (!strcmp(a, "--working-set-mb")) { i++; ws_mb = strtod(v, &end); if (*end || !(ws_mb >= 0) || ws_mb > 1e6) { fprintf(stderr, "mysample bench: bad --working-set-mb '%s'\n", v); return 2; } }
    else if (!strcmp(a, "--topp")) {
      i++;
      if (!strcmp(v, "radix")) topp = MS_CUDA_TOPP_RADIX;
      else if (!strcmp(v, "bins")) topp = MS_CUDA_TOPP_BINS;
      else { fprintf(stderr, "mysample bench: bad --topp '%s' (radix or bins)\n", v); return 2; }
    }
    else if (!strcmp(a, "--split")) { i++; split = (int)strtol(v, &end, 10); if (*end || split < -1 || split > 32) { fprintf(stderr, "mysample bench: bad --split '%s' (-1 .. 32)\n", v); return 2; } }
    else if (!strcmp(a, "--logprobs")) { i++; logprobs = (int)strtol(v, &end, 10); if (*end || logprobs < 0 || logprobs > 1024) { fprintf(stderr, "mysample bench: bad --logprobs '%s' (0 .. 1024)\n", v); return 2; } }
    else if (!strcmp(a, "--penalties")) { i++; penalties = (int)strtol(v, &end, 10); if (*end || penalties < 0 || penalties > 1000000) { fprintf(stderr, "mysample bench: bad --penalties '%s' (0 .. 1000000)\n", v); return 2; } }
    else if (!strcmp(a, "--min-tokens")) { i++; min_tokens = (int)strtol(v, &end, 10); if (*end || min_tokens < 0 || min_tokens > 1000000) { fprintf(stderr, "mysample bench: bad --min-tokens '%s' (0 .. 1000000)\n", v); return 2; } }
    else if (!strcmp(a, "--copy-mb")) { i++; copy_mb = strtod(v, &end); if (*end || !(copy_mb > 0) || copy_mb > 1e6) { fprintf(stderr, "mysample bench: bad --copy-mb '%s'\n", v); return 2; } }
    else if (!strcmp(a, "--cache-dir")) { i++; cache_dir = v; }
    else { fprintf(stderr, "mysample bench: unknown flag '%s' with --device cuda\n", a); gb_usage(stderr); return 2; }
  }
  for (i = 0; i < n_batches; i++) if (batches[i] > maxB) maxB = batches[i];
  for (i = 0; i < n_vocabs; i++) if (vocabs[i] > maxV) maxV = vocabs[i];
  if (cache_dir && (!strcmp(cache_dir, "off") || !*cache_dir)) { cache_dir = ""; cache_off = 1; }
  env = getenv("MYSAMPLE_CUDA_CACHE");
  /* the library's rule (ms__cu_cache_dir): off, OFF and 0 disable it */
  if (!cache_dir && env && (!strcmp(env, "off") || !strcmp(env, "OFF") || !strcmp(env, "0"))) cache_off = 1;

  /* the driver as the library loads it, then the same library here */
  if ((res = ms_cuda_load_driver(NULL, msg, sizeof msg)) != MS_OK) {
    fprintf(stderr, "mysample bench: --device cuda: %s (%s)\n", msg, ms_result_str(res));
    return 3;
  }
  drv_path = getenv("MYSAMPLE_CUDA_DRIVER_PATH");
  if (!drv_path || !*drv_path) drv_path = "libcuda.so.1";
  t_ctx = gb_now_ms();
  if (!gb_load(drv_path, msg, sizeof msg)) { fprintf(stderr, "mysample bench: --device cuda: %s\n", msg); return 3; }
  if (gb.dev_get(&dev, 0) != 0 || gb.primary_retain(&ctx, dev) != 0) {
    fprintf(stderr, "mysample bench: --device cuda: no usable device 0\n");
    return 3;
  }
  if (gb.ctx_push(ctx) != 0) { fprintf(stderr, "mysample bench: --device cuda: cannot make the context current\n"); gb.primary_release(dev); return 3; }
  pushed = 1;
  t_ctx = gb_now_ms() - t_ctx;
  gb.driver_version(&drv_ver);

  /* first and warm ms_cuda_create, on this (current) context */
  memset(&desc, 0, sizeof desc);
  desc.max_rows = maxB; desc.max_vocab = maxV; desc.cache_dir = cache_dir;
  if (penalties > 0) desc.max_slots = maxB;
  if (topp == MS_CUDA_TOPP_DEFAULT) {   /* as ms_cuda_create reads it, to say which */
    const char *e = getenv("MYSAMPLE_CUDA_TOPP");
    topp = e && !strcmp(e, "bins") ? MS_CUDA_TOPP_BINS : MS_CUDA_TOPP_RADIX;
  }
  desc.topp = topp;
  desc.split = split;
  t_first = gb_now_ms();
  res = ms_cuda_create(&cu, &desc, msg, sizeof msg);
  t_first = gb_now_ms() - t_first;
  if (res != MS_OK) {
    fprintf(stderr, "mysample bench: --device cuda: %s (%s)\n", msg, ms_result_str(res));
    rc = 3;
    goto done;
  }
  snprintf(target, sizeof target, "%s", ms_cuda_target(cu));
  emulator = strstr(ms_cuda_device_name(cu), "emulator") != NULL;
  {
    const char *d = strchr(target, '_');
    sm = d ? atoi(d + 1) : 0;
  }
  {
    double w[3];
    for (k = 0; k < 3; k++) {
      ms_cuda *c2 = NULL;
      double t0 = gb_now_ms();
      if (ms_cuda_create(&c2, &desc, msg, sizeof msg) != MS_OK) { fprintf(stderr, "mysample bench: warm ms_cuda_create: %s\n", msg); rc = 1; goto done; }
      w[k] = gb_now_ms() - t0;
      ms_cuda_destroy(c2);
    }
    t_warm = gb_median(w, 3);
  }
  if (sm > 0) {
    /* the disk cache as ms_cuda_create used it (a file written after this
       run began means the first create compiled), then a cold compile */
    static char log[16384];
    ms_cuda_compile_opts co;
    ms_cuda_compile_info info;
    memset(&co, 0, sizeof co);
    if (!cache_off) {
      struct stat st;
      co.cache_dir = cache_dir; co.no_memory_cache = 1;
      if (ms_cuda_compile(sm, &co, &info, log, sizeof log) == MS_OK && info.source == 2) {
        disk_ms = info.seconds * 1e3;
        first_source = stat(info.cache_file, &st) == 0 && st.st_mtime < start ? "disk cache" : "compile";
      } else first_source = "unknown";
    }
    memset(&co, 0, sizeof co);
    co.no_disk_cache = 1; co.no_memory_cache = 1;
    if (cold_compile && ms_cuda_compile(sm, &co, &info, log, sizeof log) == MS_OK) compile_ms = info.seconds * 1e3;
  }

  if (json) {
    printf("{\"group\": \"cuda_device\", \"impl\": \"mysample\", \"device\": "); gb_json_str(ms_cuda_device_name(cu));
    printf(", \"target\": \"%s\", \"emulator\": %s, \"driver_version\": %d, \"version\": \"%s\"}\n",
           target, emulator ? "true" : "false", drv_ver, ms_version());
    printf("{\"group\": \"cuda_create\", \"impl\": \"mysample\", \"device\": "); gb_json_str(ms_cuda_device_name(cu));
    printf(", \"create_first_ms\": %.3f, \"first_source\": \"%s\", \"create_warm_ms\": %.3f, \"context_ms\": %.3f",
           t_first, first_source, t_warm, t_ctx);
    if (compile_ms >= 0) printf(", \"compile_ms\": %.3f", compile_ms); else printf(", \"compile_ms\": null");
    if (disk_ms >= 0) printf(", \"disk_load_ms\": %.3f", disk_ms); else printf(", \"disk_load_ms\": null");
    printf(", \"nvrtc_cache\": %s", nvrtc_cache ? "true" : "false");
    printf(", \"max_batch\": %d, \"max_vocab\": %d}\n", (int)maxB, (int)maxV);
  } else {
    printf("device: %s (%s), driver %d, mysample %s\n", ms_cuda_device_name(cu), target, drv_ver, ms_version());
    if (emulator) printf("NOTE: this is the CPU emulator of the CUDA driver (tests/cuda_emu): the timings below are the emulator's and mean nothing for a GPU\n");
    printf("ms_cuda_create: first %.1f ms (%s), warm %.2f ms", t_first, first_source, t_warm);
    if (compile_ms >= 0)
      printf("; cold NVRTC compile %.1f ms%s", compile_ms, nvrtc_cache ? " (NVRTC's own cache on: CUDA_CACHE_DISABLE=1 for a cold one)" : "");
    if (disk_ms >= 0) printf(", disk-cache load %.2f ms", disk_ms);
    printf(" (the context, made current before: %.1f ms)\n", t_ctx);
  }
  fflush(stdout);

  t = (double *)malloc(sizeof(double) * (size_t)(reps > 5 ? reps : 5));
  th = (double *)malloc(sizeof(double) * (size_t)(reps > 5 ? reps : 5));
  if (!t || !th || gb.ev_create(&ev0, 0) != 0 || gb.ev_create(&ev1, 0) != 0) { fprintf(stderr, "mysample bench: events: failed\n"); rc = 1; goto done; }

  /* the floor's bandwidth: device-to-device copies, bytes read + written */
  {
    size_t bytes = (size_t)(copy_mb * 1048576.0) & ~(size_t)255;
    void *src = NULL, *dst = NULL;
    if (bytes < 256) bytes = 256;
    if (ms_cuda_malloc(cu, &src, bytes) != MS_OK || ms_cuda_malloc(cu, &dst, bytes) != MS_OK) {
      fprintf(stderr, "mysample bench: cannot allocate 2 x %.0f MB for the copy (--copy-mb)\n", copy_mb);
      ms_cuda_free(cu, src); rc = 1; goto done;
    }
    for (k = -2; k < reps; k++) {
      float ms = 0;
      int j;
      gb.ev_record(ev0, NULL);
      for (j = 0; j < inner; j++) gb.dtod_async((gb_dptr)(uintptr_t)dst, (gb_dptr)(uintptr_t)src, bytes, NULL);
      gb.ev_record(ev1, NULL);
      if (gb.ev_sync(ev1) != 0 || gb.ev_elapsed(&ms, ev0, ev1) != 0) { fprintf(stderr, "mysample bench: copy timing failed\n"); rc = 1; break; }
      if (k >= 0) t[k] = (double)ms * 1e3 / inner;
    }
    ms_cuda_free(cu, src); ms_cuda_free(cu, dst);
    if (rc) goto done;
    copy_us = gb_median(t, reps);
    copy_gbps = copy_us > 0 ? 2.0 * (double)bytes / (copy_us * 1e3) : 0.0;   /* bytes/us / 1e3 = GB/s */
    if (json)
      printf("{\"group\": \"cuda_floor\", \"impl\": \"mysample\", \"copy_bytes\": %lu, \"copy_us\": %.3f, \"copy_gbps\": %.1f}\n",
             (unsigned long)bytes, copy_us, copy_gbps);
    else
      printf("device-to-device copy of %.0f MB: %.1f us, %.0f GB/s (read + written); floor = B*V*4 bytes / that\n",
             (double)bytes / 1048576.0, copy_us, copy_gbps);
    if (!json) printf("\n%-20s %6s %7s %11s %10s %10s %8s %10s\n", "config", "batch", "vocab", "us/batch", "us/row", "floor us", "x floor", "host us");
    fflush(stdout);
  }

  for (i = 0; i < n_vocabs && rc == 0; i++) {
    const int32_t V = vocabs[i];
    size_t unit_rows = (size_t)maxB, dev_rows, r;
    float *host = (float *)malloc(sizeof(float) * (size_t)maxB * (size_t)V);
    void *d_logits = NULL, *d_tokens = NULL, *d_out = NULL, *d_top = NULL, *d_prompt = NULL;
    int32_t *h_tokens = (int32_t *)malloc(sizeof(int32_t) * (size_t)maxB);
    /* --penalties: row r's prompt ids, and which ids they are (the check's argmax) */
    int32_t *prompt = penalties > 0 ? (int32_t *)malloc(sizeof(int32_t) * (size_t)maxB * (size_t)penalties) : NULL;
    unsigned char *in_prompt = penalties > 0 ? (unsigned char *)calloc((size_t)maxB * (size_t)V, 1) : NULL;
    int32_t *slots = penalties > 0 ? (int32_t *)malloc(sizeof(int32_t) * (size_t)maxB) : NULL;
    const ms_params **pp = (const ms_params **)malloc(sizeof(ms_params *) * (size_t)maxB);
    uint64_t *seeds = (uint64_t *)malloc(sizeof(uint64_t) * (size_t)maxB), *pos = (uint64_t *)malloc(sizeof(uint64_t) * (size_t)maxB);
    int b, c;
    dev_rows = (size_t)(ws_mb * 1048576.0 / (4.0 * (double)V));
    if (dev_rows < unit_rows) dev_rows = unit_rows;
    if (!host || !h_tokens || !pp || !seeds || !pos || (penalties > 0 && (!prompt || !in_prompt || !slots))) { fprintf(stderr, "mysample bench: out of memory\n"); rc = 1; }
    if (rc == 0) {
      for (r = 0; r < unit_rows * (size_t)V; r += 2) {
        /* Box-Muller, both values */
        double u = gb_u(), w = gb_u(), m = sqrt(-2.0 * log(u)) * sigma;
        host[r] = (float)(m * cos(6.283185307179586 * w));
        if (r + 1 < unit_rows * (size_t)V) host[r + 1] = (float)(m * sin(6.283185307179586 * w));
      }
      if (ms_cuda_malloc(cu, &d_logits, sizeof(float) * dev_rows * (size_t)V) != MS_OK ||
          ms_cuda_malloc(cu, &d_tokens, sizeof(int32_t) * (size_t)maxB) != MS_OK ||
          (logprobs >= 0 && ms_cuda_malloc(cu, &d_out, sizeof(ms_cuda_out) * (size_t)maxB) != MS_OK) ||
          (logprobs > 0 && ms_cuda_malloc(cu, &d_top, sizeof(ms_logprob) * (size_t)maxB * (size_t)logprobs) != MS_OK)) {
        fprintf(stderr, "mysample bench: cannot allocate %.0f MB of logits (--working-set-mb)\n", 4.0 * (double)dev_rows * V / 1048576.0);
        rc = 1;
      }
    }
    /* the device buffer: copies of the host block, whole rows */
    for (r = 0; rc == 0 && r < dev_rows; r += unit_rows) {
      size_t n = dev_rows - r < unit_rows ? dev_rows - r : unit_rows;
      if (ms_cuda_upload(cu, (float *)d_logits + r * (size_t)V, host, sizeof(float) * n * (size_t)V) != MS_OK) { fprintf(stderr, "mysample bench: upload failed\n"); rc = 1; }
    }
    /* --penalties: slot r holds a prompt of random ids (not accepted into
       afterwards: every call sees the same sequences) */
    if (rc == 0 && penalties > 0) {
      const size_t n = (size_t)maxB * (size_t)penalties;
      for (r = 0; r < n; r++) {
        prompt[r] = (int32_t)(gb_u() * V) % V;
        in_prompt[(r / (size_t)penalties) * (size_t)V + (size_t)prompt[r]] = 1;
      }
      if (ms_cuda_malloc(cu, &d_prompt, sizeof(int32_t) * n) != MS_OK || ms_cuda_upload(cu, d_prompt, prompt, sizeof(int32_t) * n) != MS_OK) {
        fprintf(stderr, "mysample bench: --penalties: cannot upload the prompts\n"); rc = 1;
      }
      for (k = 0; rc == 0 && k < maxB; k++) {
        slots[k] = k;
        if ((res = ms_cuda_seq_reset(cu, NULL, k, (const int32_t *)d_prompt + (size_t)k * (size_t)penalties, penalties, NULL)) != MS_OK) {
          fprintf(stderr, "mysample bench: --penalties: ms_cuda_seq_reset: %s\n", ms_result_str(res)); rc = 1;
        }
      }
    }
    for (b = 0; b < n_batches && rc == 0; b++) {
      const int32_t B = batches[b];
      const size_t units = dev_rows / (size_t)B;
      for (c = 0; c < GB_N_CFGS && rc == 0; c++) {
        const gb_cfg *g = &GB_CFGS[c];
        ms_params p = ms_params_default();
        ms_cuda_batch bt;
        unsigned long call = 0;
        double us, host_us, floor_us;
        if (!cfg_on[c]) continue;
        p.temperature = g->T; p.top_p = g->top_p; p.min_p = g->min_p; p.top_k = g->top_k;
        if (min_tokens > 0) { p.min_tokens = min_tokens; p.eos_token_id = 0; }
        if (penalties > 0) { p.repetition_penalty = 1.1f; p.frequency_penalty = 0.2f; p.presence_penalty = 0.1f; }
        p.logprobs = logprobs;
        for (k = 0; k < B; k++) { pp[k] = &p; seeds[k] = 1000u + (uint64_t)k; pos[k] = 0; }
        memset(&bt, 0, sizeof bt);
        bt.n_rows = B; bt.vocab = V; bt.row_stride = (size_t)V; bt.params = pp;
        bt.seeds = seeds; bt.positions = pos; bt.tokens = d_tokens;
        bt.slots = slots;   /* (NULL without --penalties) */
        if (logprobs >= 0) { bt.out = d_out; bt.top = logprobs > 0 ? d_top : NULL; bt.top_stride = logprobs; }
        for (k = -3; k < reps && rc == 0; k++) {   /* 3 warm-up groups */
          float ms = 0;
          int j;
          double h0;
          gb.ev_record(ev0, NULL);
          h0 = gb_now_ms();
          for (j = 0; j < inner; j++, call++) {
            int q;
            bt.logits = (const float *)d_logits + (size_t)(call % units) * (size_t)B * (size_t)V;
            for (q = 0; q < B; q++) pos[q] = call;   /* fresh numbers each call */
            if ((res = ms_cuda_sample(cu, NULL, &bt)) != MS_OK) { fprintf(stderr, "mysample bench: %s B=%d V=%d: %s\n", g->name, (int)B, (int)V, ms_result_str(res)); rc = 1; break; }
          }
          if (k >= 0) th[k] = (gb_now_ms() - h0) * 1e3 / inner;
          gb.ev_record(ev1, NULL);
          if (rc == 0 && (gb.ev_sync(ev1) != 0 || gb.ev_elapsed(&ms, ev0, ev1) != 0)) { fprintf(stderr, "mysample bench: timing failed (device error?)\n"); rc = 1; }
          if (k >= 0) t[k] = (double)ms * 1e3 / inner;
        }
        if (rc) break;
        us = gb_median(t, reps);
        host_us = gb_median(th, reps);
        /* a check that the figures timed real sampling: the first rows of
           the block, greedy rows at the host's argmax, others in range */
        bt.logits = d_logits;
        if ((res = ms_cuda_sample(cu, NULL, &bt)) != MS_OK ||
            ms_cuda_download(cu, h_tokens, d_tokens, sizeof(int32_t) * (size_t)B) != MS_OK) {
          fprintf(stderr, "mysample bench: %s: check call failed\n", g->name); rc = 1; break;
        }
        for (k = 0; check && k < B; k++) {
          const float *x = host + (size_t)k * (size_t)V;
          const int32_t first = min_tokens > 0 ? 1 : 0;   /* (EOS, id 0, masked) */
          int32_t am = first, j;
          /* (--penalties: the prompt's ids penalised as vLLM does, 1.1 dividing
             positive logits through its reciprocal; their counts are 0, so
             frequency and presence do not apply) */
          const unsigned char *pr = in_prompt ? in_prompt + (size_t)k * (size_t)V : NULL;
          float best = -INFINITY;
          for (j = first; j < V; j++) {
            const float y = pr && pr[j] ? (x[j] > 0.0f ? x[j] * (1.0f / 1.1f) : x[j] * 1.1f) : x[j];
            if (y > best) { best = y; am = j; }
          }
          if (h_tokens[k] < first || h_tokens[k] >= V || (g->T == 0.0f && h_tokens[k] != am)) {
            fprintf(stderr, "mysample bench: %s B=%d V=%d: row %d sampled %d (argmax %d): wrong\n", g->name, (int)B, (int)V, (int)k, (int)h_tokens[k], (int)am);
            rc = 1; break;
          }
        }
        if (rc) break;
        /* ... and, with --logprobs, each row's result: its token, a logprob <= 0, a rank */
        if (check && logprobs >= 0) {
          ms_cuda_out o;
          for (k = 0; k < B && rc == 0; k++) {
            if (ms_cuda_download(cu, &o, (const ms_cuda_out *)d_out + k, sizeof o) != MS_OK) { fprintf(stderr, "mysample bench: %s: check call failed\n", g->name); rc = 1; }
            else if (o.token != h_tokens[k] || o.status != 0 || !(o.logprob <= 0.0f) || o.rank < 1 || o.n_top != logprobs) {
              fprintf(stderr, "mysample bench: %s B=%d V=%d: row %d: token %d (%d) logprob %g rank %d top %d: wrong\n", g->name, (int)B, (int)V,
                      (int)k, (int)o.token, (int)h_tokens[k], (double)o.logprob, (int)o.rank, (int)o.n_top);
              rc = 1;
            }
          }
          if (rc) break;
        }
        floor_us = copy_gbps > 0 ? 4.0 * (double)B * (double)V / (copy_gbps * 1e3) : 0.0;
        if (json) {
          printf("{\"group\": \"cuda\", \"impl\": \"mysample\", \"config\": \"%s\", \"batch\": %d, \"vocab\": %d, \"sigma\": %g, "
                 "\"us_per_batch\": %.3f, \"us_per_row\": %.4f, \"host_us_per_batch\": %.3f, \"floor_us\": %.6f, \"x_floor\": %.3f, \"copy_gbps\": %.1f, \"device\": ",
                 g->name, (int)B, (int)V, (double)sigma, us, us / B, host_us, floor_us, floor_us > 0 ? us / floor_us : 0.0, copy_gbps);
          gb_json_str(ms_cuda_device_name(cu));
          printf(", \"target\": \"%s\", \"emulator\": %s, \"reps\": %d, \"inner\": %d, \"working_set_mb\": %.0f, \"topp\": \"%s\", \"split\": %d, "
                 "\"min_tokens\": %d, \"penalties\": %d, \"logprobs\": %d}\n",
                 target, emulator ? "true" : "false", reps, inner, 4.0 * (double)units * B * V / 1048576.0,
                 topp == MS_CUDA_TOPP_BINS ? "bins" : "radix", split, min_tokens, penalties, logprobs);
        } else {
          printf("%-20s %6d %7d %11.2f %10.3f %10.2f %8.2f %10.2f\n", g->name, (int)B, (int)V, us, us / B, floor_us, floor_us > 0 ? us / floor_us : 0.0, host_us);
        }
        fflush(stdout);
      }
    }
    ms_cuda_free(cu, d_logits); ms_cuda_free(cu, d_tokens); ms_cuda_free(cu, d_out); ms_cuda_free(cu, d_top); ms_cuda_free(cu, d_prompt);
    free(host); free(h_tokens); free(pp); free(seeds); free(pos); free(prompt); free(in_prompt); free(slots);
  }

done:
  if (ev0) gb.ev_destroy(ev0);
  if (ev1) gb.ev_destroy(ev1);
  ms_cuda_destroy(cu);
  free(t);
  free(th);
  if (pushed) { void *c; gb.ctx_sync(); gb.ctx_pop(&c); gb.primary_release(dev); }
  return rc;
}
