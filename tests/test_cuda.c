/* mysample_cuda.h: NVRTC compile checks (run wherever NVRTC loads), the
   loader without a GPU, the caches, the RNG formula of the kernels, and
   the GPU execution tests against the CPU path (skipped without a GPU).
   `test_cuda --emu` runs only the execution tests, against the CPU
   emulator of tests/cuda_emu (tests/cuda_emu.test.sh sets
   MYSAMPLE_CUDA_DRIVER_PATH); their names then start with "cuda-emu:" so
   an emulated run never reads as a GPU run. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L   /* setenv */
#endif
#define MYSAMPLE_IMPLEMENTATION
#define MYSAMPLE_CUDA_IMPLEMENTATION
#include "mysample_cuda.h"
#include "testlib.h"
#include "tenv.h"
#include <stdlib.h>
#include <sys/time.h>
#ifndef _WIN32
#include <dlfcn.h>   /* the emulator's counters (test_gpu_l2_prefetch) */
#endif

/* ---- helpers ---------------------------------------------------------------- */
static uint64_t t_rng = 0x9E3779B97F4A7C15ULL;
static double t_unif(void) {
  t_rng ^= t_rng << 13; t_rng ^= t_rng >> 7; t_rng ^= t_rng << 17;
  return (double)(t_rng >> 11) * (1.0 / 9007199254740992.0);
}
static float t_normal(float sigma) {
  double u1 = t_unif(), u2 = t_unif();
  if (u1 < 1e-300) u1 = 1e-300;
  return (float)(sigma * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}
static void t_fill(float *x, int32_t n, float sigma) { int32_t i; for (i = 0; i < n; i++) x[i] = t_normal(sigma); }
static int t_cmp_float_desc(const void *a, const void *b) {
  const float u = *(const float *)a, v = *(const float *)b;
  return u > v ? -1 : u < v ? 1 : 0;
}

static int t_have_nvrtc(void) {
  char msg[512];
  return ms_cuda_load_nvrtc(NULL, msg, sizeof msg) == MS_OK;
}

/* ---- NVRTC: every kernel compiles for sm_80 and sm_90 ---------------------- */
static void t_compile_arch_opt(int sm, int topp_bins) {
  static char log[16384];
  ms_cuda_compile_opts o;
  ms_cuda_compile_info info;
  ms_result rc;
  int i;
  if (!t_have_nvrtc()) SKIP("NVRTC could not be loaded (no CUDA toolkit)");
  memset(&o, 0, sizeof o);
  o.no_disk_cache = 1;
  o.no_memory_cache = 1;
  o.topp_bins = topp_bins;
  rc = ms_cuda_compile(sm, &o, &info, log, sizeof log);
  CHECK_MSG(rc == MS_OK, "sm_%d: %s\n%s", sm, ms_result_str(rc), log);
  if (rc != MS_OK) return;
  printf("  sm_%d: %s, %s %lu bytes, cold compile %.3f s (NVRTC %d.%d)\n", sm, info.target,
         info.is_ptx ? "PTX" : "CUBIN", (unsigned long)info.binary_size, info.seconds, info.nvrtc_major, info.nvrtc_minor);
  CHECK(info.source == 0);
  /* mask, stats, pass, row, seq_prompt, seq_accept, ties, list, eps, sums, tail, lp; with the bins pbstats, pgather, pbin */
  CHECK_EQ_INT(info.n_kernels, topp_bins ? 15 : 12);
  for (i = 0; i < info.n_kernels; i++) {
    /* each kernel is found in the binary of the program it is said to be in */
    CHECK_MSG(info.kernel_found[i], "kernel %s missing from the binary of program %d", info.kernel[i], (int)info.kernel_program[i]);
    CHECK(info.kernel_program[i] >= 0 && info.kernel_program[i] < (topp_bins ? 11 : 8));   /* eight programs, eleven */
    CHECK(info.kernel_seconds[i] > 0.0 && info.kernel_seconds[i] <= info.seconds);
  }
  CHECK(info.n_kernels > 2 && !strcmp(info.kernel[2], "ms_k_pass"));
  /* the draw's pass has a program of its own, apart from the radix passes' */
  CHECK(info.n_kernels > 9 && !strcmp(info.kernel[9], "ms_k_sums") && info.kernel_program[9] != info.kernel_program[2]);
  /* a small top_k's rows end in a program of their own (fast compile), apart from the small one's */
  CHECK(info.n_kernels > 10 && !strcmp(info.kernel[10], "ms_k_tail") && info.kernel_program[10] != info.kernel_program[0]);
  /* the logprobs have a program of their own, apart from ms_k_row's */
  CHECK(info.n_kernels > 11 && !strcmp(info.kernel[11], "ms_k_lp") && info.kernel_program[11] != info.kernel_program[3]);
  /* the bins' kernels have a program each, apart from every other kernel's */
  if (topp_bins && info.n_kernels == 15) {
    int j;
    CHECK(!strcmp(info.kernel[12], "ms_k_pbstats") && !strcmp(info.kernel[13], "ms_k_pgather") && !strcmp(info.kernel[14], "ms_k_pbin"));
    for (i = 12; i < 15; i++)
      for (j = 0; j < 15; j++) CHECK(j == i || info.kernel_program[j] != info.kernel_program[i]);
  }
  /* the bins' variant holds more code than the default (the same sm) */
  {
    static unsigned long default_size[200];
    if (sm > 0 && sm < 200 && !topp_bins) default_size[sm] = (unsigned long)info.binary_size;
    if (sm > 0 && sm < 200 && topp_bins && default_size[sm])
      CHECK_MSG(info.binary_size > default_size[sm], "sm_%d: %lu bytes with the bins, %lu without", sm,
                (unsigned long)info.binary_size, default_size[sm]);
  }
}
static void t_compile_arch(int sm) { t_compile_arch_opt(sm, 0); }
static void test_nvrtc_compile_sm80(void) { t_compile_arch(80); }
/* the variant with top_p's bins (MS_CUDA_TOPP_BINS: -DMS_TOPP_BINS=1) */
static void test_nvrtc_compile_sm90_topp_bins(void) { t_compile_arch_opt(90, 1); }
static void test_nvrtc_compile_sm90(void) { t_compile_arch(90); }

/* An architecture NVRTC does not know: a clear MS_ERR_COMPILE, never a crash. */
static void test_nvrtc_unsupported_arch(void) {
  char log[1024];
  ms_cuda_compile_info info;
  ms_result rc;
  if (!t_have_nvrtc()) SKIP("NVRTC could not be loaded (no CUDA toolkit)");
  rc = ms_cuda_compile(30, NULL, &info, log, sizeof log);
  CHECK_EQ_INT(rc, MS_ERR_COMPILE);
  CHECK(strstr(log, "sm_30") != NULL);
  rc = ms_cuda_compile(5, NULL, &info, log, sizeof log);
  CHECK_EQ_INT(rc, MS_ERR_INVALID_PARAM);
}

/* $MYSAMPLE_CUDA_NVRTC_OPTIONS: split at spaces into at most 6 options,
   each ending where its run of non-spaces ends (the 6th once kept the
   rest of the value, spaces and all: found by fuzz_cuda_cache); a 7th
   option, or a value of 256 characters, is refused (they were dropped
   and cut: -DMS_L2PF=32 became -DMS_L2PF=3), and fails the compile with
   the variable's name. */
static void test_nvrtc_options_env(void) {
  const char *opts[16];
  char log[512], longv[300];
  int n;
  t_setenv("MYSAMPLE_CUDA_NVRTC_OPTIONS", "  -a --bb  -c -d -e -f ");
  n = ms__cu_extra_opts(opts, 16);
  CHECK_EQ_INT(n, 6);
  if (n == 6) {
    CHECK(!strcmp(opts[0], "-a") && !strcmp(opts[1], "--bb") && !strcmp(opts[2], "-c"));
    CHECK(!strcmp(opts[5], "-f"));
  }
  t_setenv("MYSAMPLE_CUDA_NVRTC_OPTIONS", "  -a --bb  -c -d -e -f -g ");
  CHECK_EQ_INT(ms__cu_extra_opts(opts, 16), -1);
  t_setenv("MYSAMPLE_CUDA_NVRTC_OPTIONS", "-x");
  n = ms__cu_extra_opts(opts, 16);
  CHECK(n == 1 && !strcmp(opts[0], "-x"));
  CHECK_EQ_INT(ms__cu_extra_opts(opts, 0), -1);   /* (no room left) */
  memset(longv, 'x', sizeof longv);
  memcpy(longv, "-DPAD=", 6);
  longv[255] = 0;   /* 255 characters: taken */
  t_setenv("MYSAMPLE_CUDA_NVRTC_OPTIONS", longv);
  CHECK_EQ_INT(ms__cu_extra_opts(opts, 16), 1);
  longv[255] = 'x'; longv[256] = 0;
  t_setenv("MYSAMPLE_CUDA_NVRTC_OPTIONS", longv);
  CHECK_EQ_INT(ms__cu_extra_opts(opts, 16), -1);
  if (t_have_nvrtc()) {
    CHECK_EQ_INT(ms_cuda_compile(90, NULL, NULL, log, sizeof log), MS_ERR_INVALID_PARAM);
    CHECK(strstr(log, "MYSAMPLE_CUDA_NVRTC_OPTIONS") != NULL);
  }
  t_setenv("MYSAMPLE_CUDA_NVRTC_OPTIONS", "");   /* empty: none */
  CHECK_EQ_INT(ms__cu_extra_opts(opts, 16), 0);
  t_setenv("MYSAMPLE_CUDA_NVRTC_OPTIONS", NULL);
}

/* The routes' switches ($MYSAMPLE_CUDA_TOPP radix|bins, the A/B switches
   0|1): another value fails ms_cuda_create with the variable's name,
   before any library loads (PDL=off once left PDL on). */
static void test_route_env(void) {
  static const char *const names[] = { "MYSAMPLE_CUDA_TOPP", "MYSAMPLE_CUDA_PDL", "MYSAMPLE_CUDA_NOPASS",
                                       "MYSAMPLE_CUDA_KFAST", "MYSAMPLE_CUDA_PBSTATS" };
  static const char *const bad[] = { "BINS", "off", "false", "2", "yes" };
  char msg[256];
  ms_cuda *cu = NULL;
  ms_cuda_desc d;
  int i;
  memset(&d, 0, sizeof d);
  d.max_rows = 1; d.max_vocab = 10;
  for (i = 0; i < 5; i++) {
    t_setenv(names[i], bad[i]);
    CHECK_EQ_INT(ms_cuda_create(&cu, &d, msg, sizeof msg), MS_ERR_INVALID_PARAM);
    CHECK_MSG(strstr(msg, names[i]) != NULL, "%s", msg);
    CHECK(cu == NULL);
    if (i == 0) CHECK_EQ_INT((int)ms_cuda_workspace_size(&d), 0);
    t_setenv(names[i], NULL);
  }
  /* (and ms_cuda_desc.split outside -1..32, which was taken as -1 or 32) */
  d.split = 33;
  CHECK_EQ_INT(ms_cuda_create(&cu, &d, msg, sizeof msg), MS_ERR_INVALID_PARAM);
  CHECK(strstr(msg, "split 33") != NULL);
  d.split = -2;
  CHECK_EQ_INT(ms_cuda_create(&cu, &d, msg, sizeof msg), MS_ERR_INVALID_PARAM);
  d.split = 0;
  t_setenv("MYSAMPLE_CUDA_TOPP", "radix");
  CHECK(ms__cuda_topp_bins(&d) == 0);
  t_setenv("MYSAMPLE_CUDA_TOPP", "bins");
  CHECK(ms__cuda_topp_bins(&d) == 1);
  t_setenv("MYSAMPLE_CUDA_TOPP", NULL);
  t_setenv("MYSAMPLE_CUDA_PDL", "0");
  CHECK(ms__cuda_env_switch("MYSAMPLE_CUDA_PDL", 1) == 0);
  t_setenv("MYSAMPLE_CUDA_PDL", "");
  CHECK(ms__cuda_env_switch("MYSAMPLE_CUDA_PDL", 1) == 1);
  t_setenv("MYSAMPLE_CUDA_PDL", NULL);
}

/* $MYSAMPLE_CUDA_FAST_UNITS: the programs that get NVRTC's fast compile
   (default 3, 5 and 6); a bad value fails the compile with its name,
   before any program compiles. */
static void test_fast_units_env(void) {
  char log[512];
  ms_result rc;
  t_setenv("MYSAMPLE_CUDA_FAST_UNITS", NULL);
  CHECK_EQ_INT((int)ms__cu_fast_units(), (1 << 3) | (1 << 5) | (1 << 6));
  t_setenv("MYSAMPLE_CUDA_FAST_UNITS", "all");
  CHECK_EQ_INT((int)ms__cu_fast_units(), (1 << 11) - 1);
  t_setenv("MYSAMPLE_CUDA_FAST_UNITS", "none");
  CHECK_EQ_INT((int)ms__cu_fast_units(), 0);
  t_setenv("MYSAMPLE_CUDA_FAST_UNITS", "2,0,7");
  CHECK_EQ_INT((int)ms__cu_fast_units(), (1 << 2) | 1 | (1 << 7));
  t_setenv("MYSAMPLE_CUDA_FAST_UNITS", "4");
  CHECK_EQ_INT((int)ms__cu_fast_units(), 1 << 4);
  t_setenv("MYSAMPLE_CUDA_FAST_UNITS", "10,1,8");   /* (the bins' programs: 8-10) */
  CHECK_EQ_INT((int)ms__cu_fast_units(), (1 << 10) | (1 << 1) | (1 << 8));
  {
    const char *bad[] = { "11", "100", "2,", ",2", "2;3", "23", "x", "all,1", " 2", "-1" };
    int i;
    for (i = 0; i < (int)(sizeof bad / sizeof bad[0]); i++) {
      t_setenv("MYSAMPLE_CUDA_FAST_UNITS", bad[i]);
      CHECK_MSG(ms__cu_fast_units() == -1, "'%s' accepted", bad[i]);
    }
  }
  /* (the mask decides only where NVRTC has the option: 12.8 and newer) */
  CHECK(ms__cu_unit_fast_ok(NULL, 0, 12, 8, 1 << 2, 2) && !ms__cu_unit_fast_ok(NULL, 0, 12, 8, 1 << 2, 3));
  CHECK(!ms__cu_unit_fast_ok(NULL, 0, 12, 6, 1 << 2, 2));
  /* $MYSAMPLE_CUDA_FAST_LEVEL: their level */
  t_setenv("MYSAMPLE_CUDA_FAST_LEVEL", NULL);
  CHECK(!strcmp(ms__cu_fast_level(), "--Ofast-compile=min"));
  t_setenv("MYSAMPLE_CUDA_FAST_LEVEL", "max");
  CHECK(!strcmp(ms__cu_fast_level(), "--Ofast-compile=max"));
  t_setenv("MYSAMPLE_CUDA_FAST_LEVEL", "mid");
  CHECK(!strcmp(ms__cu_fast_level(), "--Ofast-compile=mid"));
  t_setenv("MYSAMPLE_CUDA_FAST_LEVEL", "0");
  CHECK(ms__cu_fast_level() == NULL);
  if (t_have_nvrtc()) {
    t_setenv("MYSAMPLE_CUDA_FAST_UNITS", "11");
    t_setenv("MYSAMPLE_CUDA_FAST_LEVEL", NULL);
    rc = ms_cuda_compile(90, NULL, NULL, log, sizeof log);
    CHECK_EQ_INT(rc, MS_ERR_INVALID_PARAM);
    CHECK(strstr(log, "MYSAMPLE_CUDA_FAST_UNITS") != NULL);
    t_setenv("MYSAMPLE_CUDA_FAST_UNITS", NULL);
    t_setenv("MYSAMPLE_CUDA_FAST_LEVEL", "fastest");
    rc = ms_cuda_compile(90, NULL, NULL, log, sizeof log);
    CHECK_EQ_INT(rc, MS_ERR_INVALID_PARAM);
    CHECK(strstr(log, "MYSAMPLE_CUDA_FAST_LEVEL") != NULL);
  }
  t_setenv("MYSAMPLE_CUDA_FAST_UNITS", NULL);
  t_setenv("MYSAMPLE_CUDA_FAST_LEVEL", NULL);
}

/* The disk cache: a miss compiles and writes, the next cold process-level
   lookup reads the file; the in-memory cache answers after that. */
static void test_compile_caches(void) {
  static char log[16384];
  char dir[256], path[600];
  ms_cuda_compile_opts o;
  ms_cuda_compile_info a, b, c;
  FILE *f;
  if (!t_have_nvrtc()) SKIP("NVRTC could not be loaded (no CUDA toolkit)");
  snprintf(dir, sizeof dir, "build/tests/cuda-cache-%lu/sub", (unsigned long)(uintptr_t)&o % 100000ul);
  memset(&o, 0, sizeof o);
  o.cache_dir = dir;
  o.no_memory_cache = 1;
  CHECK_EQ_INT(ms_cuda_compile(86, &o, &a, log, sizeof log), MS_OK);
  CHECK_EQ_INT(ms_cuda_compile(86, &o, &b, log, sizeof log), MS_OK);
  o.no_memory_cache = 0;
  CHECK_EQ_INT(ms_cuda_compile(86, &o, &c, log, sizeof log), MS_OK);
  printf("  compile %.3f s, disk hit %.4f s, memory hit %.6f s (%s)\n", a.seconds, b.seconds, c.seconds, b.cache_file);
  CHECK_EQ_INT(a.source, 0);
  CHECK_EQ_INT(b.source, 2);
  CHECK_EQ_INT(c.source, 1);
  CHECK(a.binary_size == b.binary_size);
  CHECK(strstr(a.cache_file, dir) == a.cache_file);
  f = fopen(a.cache_file, "rb");
  CHECK(f != NULL);
  if (f) fclose(f);
  /* a truncated file (its header intact) is not read: the reader itself
     (a compile per case took 4-5 s of the suite; a corrupt file below
     takes the whole way) */
  f = fopen(a.cache_file, "rb");
  if (f) {
    static char whole[1 << 20];
    char key[256];
    size_t n = fread(whole, 1, sizeof whole, f), len[MS__CU_UNITS], off[MS__CU_UNITS], size;
    char *data;
    fclose(f);
    CHECK(n > 1000 && n < sizeof whole);
    /* the key is the header's third field */
    CHECK(sscanf(whole, "mysample-cuda-cache 4 %255s", key) == 1);
    data = ms__cu_read_cache(a.cache_file, key, MS__CU_BASE_UNITS, len, off, &size);   /* intact: read */
    CHECK(data != NULL);
    MS__CU_FREE(data);
    /* as the bins' build's file (eleven programs) it is not: a count of
       sizes other than the build's is another file's */
    CHECK(ms__cu_read_cache(a.cache_file, key, MS__CU_UNITS, len, off, &size) == NULL);
    f = fopen(a.cache_file, "wb");
    if (f) { fwrite(whole, 1, n - 1000, f); fclose(f); }
    CHECK(ms__cu_read_cache(a.cache_file, key, MS__CU_BASE_UNITS, len, off, &size) == NULL);
    /* one byte of a unit changed, the header intact: its hash is not
       the header's (such a file was once handed to the driver, and the
       failed load stuck for the process) */
    whole[n - 500] ^= 0x20;
    f = fopen(a.cache_file, "wb");
    if (f) { fwrite(whole, 1, n, f); fclose(f); }
    CHECK(ms__cu_read_cache(a.cache_file, key, MS__CU_BASE_UNITS, len, off, &size) == NULL);
    whole[n - 500] ^= 0x20;
    key[0] ^= 1;                                                      /* another key: not read */
    f = fopen(a.cache_file, "wb");
    if (f) { fwrite(whole, 1, n, f); fclose(f); }
    CHECK(ms__cu_read_cache(a.cache_file, key, MS__CU_BASE_UNITS, len, off, &size) == NULL);
    key[0] ^= 1;
    CHECK((data = ms__cu_read_cache(a.cache_file, key, MS__CU_BASE_UNITS, len, off, &size)) != NULL);
    MS__CU_FREE(data);
  }
  /* no_memory_cache times the compile but keeps one memory entry a key
     (an entry a call was added before) */
  {
    int before = 0, after = 0;
    const ms__cu_bin *e;
    o.no_memory_cache = 1;
    for (e = ms__cu_bins; e; e = e->next) before++;
    CHECK_EQ_INT(ms_cuda_compile(86, &o, &b, log, sizeof log), MS_OK);
    CHECK_EQ_INT(ms_cuda_compile(86, &o, &b, log, sizeof log), MS_OK);
    for (e = ms__cu_bins; e; e = e->next) after++;
    CHECK_EQ_INT(after, before);
  }
#ifndef _WIN32
  /* the temporary file is created exclusively: a link planted at its
     name is not written through (the write is skipped; the target keeps
     its bytes) */
  {
    char link[700], victim[640], file[640];
    static const char unit[16] = "0123456789abcde";
    size_t ulen[MS__CU_UNITS], uoff[MS__CU_UNITS];
    char *units;
    int k, u;
    for (u = 0; u < MS__CU_UNITS; u++) ulen[u] = u < MS__CU_BASE_UNITS ? 16 : 0;
    units = (char *)calloc(1, ms__cu_layout(ulen, uoff));
    for (u = 0; units && u < MS__CU_BASE_UNITS; u++) memcpy(units + uoff[u], unit, 16);
    snprintf(victim, sizeof victim, "%s/victim.txt", dir);
    snprintf(file, sizeof file, "%s/cuda-links.bin", dir);
    f = fopen(victim, "wb");
    if (f) { fputs("precious", f); fclose(f); }
    for (k = 0; k < 256; k++) {
      snprintf(link, sizeof link, "%s.%ld.%d.tmp", file, (long)getpid(), k);
      CHECK(symlink("victim.txt", link) == 0);
    }
    if (units) ms__cu_write_cache(dir, file, "k", MS__CU_BASE_UNITS, units, ulen, uoff);
    f = fopen(victim, "rb");
    if (f) { char got[32] = {0}; CHECK(fread(got, 1, sizeof got - 1, f) == 8 && !strcmp(got, "precious")); fclose(f); }
    { FILE *g = fopen(file, "rb"); CHECK(g == NULL); if (g) fclose(g); }
    for (k = 0; k < 256; k++) {
      snprintf(link, sizeof link, "%s.%ld.%d.tmp", file, (long)getpid(), k);
      remove(link);
    }
    /* with the names free it writes, and the file reads back */
    if (units) ms__cu_write_cache(dir, file, "k", MS__CU_BASE_UNITS, units, ulen, uoff);
    {
      size_t len[MS__CU_UNITS], off[MS__CU_UNITS], size;
      char *back = ms__cu_read_cache(file, "k", MS__CU_BASE_UNITS, len, off, &size);
      CHECK(back != NULL && len[0] == 16 && !memcmp(back + off[MS__CU_BASE_UNITS - 1], unit, 16));
      if (back) MS__CU_FREE(back);
    }
    remove(file);
    remove(victim);
    free(units);
  }
#endif
  /* a corrupt file is ignored (recompiled and rewritten), never loaded */
  f = fopen(a.cache_file, "wb");
  if (f) { fputs("mysample-cuda-cache 1 garbage 5\nxxxxx", f); fclose(f); }
  o.no_memory_cache = 1;
  CHECK_EQ_INT(ms_cuda_compile(86, &o, &b, log, sizeof log), MS_OK);
  CHECK_EQ_INT(b.source, 0);
  CHECK_EQ_INT(ms_cuda_compile(86, &o, &b, log, sizeof log), MS_OK);
  CHECK_EQ_INT(b.source, 2);
  /* disabled: by an empty directory or the flag (the environment's
     "off" and "0": test_cache_dir_env) */
  o.cache_dir = "";
  CHECK(ms__cu_cache_dir(&o, path, sizeof path) == 0);
  o.cache_dir = dir;
  o.no_disk_cache = 1;
  CHECK(ms__cu_cache_dir(&o, path, sizeof path) == 0);
  o.no_disk_cache = 0;
  CHECK(ms__cu_cache_dir(&o, path, sizeof path) == 1 && !strcmp(path, dir));
  /* a directory longer than the buffer is refused, never cut (a cut path
     named a directory nobody asked for, which was then created) */
  {
    static char longdir[700];
    memset(longdir, 'd', sizeof longdir - 1);
    longdir[0] = '/';
    o.cache_dir = longdir;
    CHECK(ms__cu_cache_dir(&o, path, 400) == -1);
    CHECK_EQ_INT(ms_cuda_compile(86, &o, &b, log, sizeof log), MS_ERR_INVALID_PARAM);
    CHECK(strstr(log, "directory") != NULL);
    o.cache_dir = dir;
  }
  remove(a.cache_file);
  remove(dir);
  snprintf(path, sizeof path, "%s", dir);
  *strrchr(path, '/') = 0; /* the per-run parent too: runs leave nothing behind */
  remove(path);
}

/* Where the disk cache lives: an explicit directory, then
   $MYSAMPLE_CUDA_CACHE ("off" or "0": none), $XDG_CACHE_HOME/mysample,
   on Windows %LOCALAPPDATA%\mysample, $HOME/.cache/mysample
   (docs/CUDA.md). */
static void test_cache_dir_env(void) {
  enum { N_NAMES = 4 };
  char saved[N_NAMES][512], buf[600];
  const char *names[N_NAMES] = { "MYSAMPLE_CUDA_CACHE", "XDG_CACHE_HOME", "HOME", "LOCALAPPDATA" };
  int had[N_NAMES], i;
  ms_cuda_compile_opts o;
  for (i = 0; i < N_NAMES; i++) {
    const char *v = getenv(names[i]);
    had[i] = v != NULL;
    snprintf(saved[i], sizeof saved[i], "%s", v ? v : "");
  }
  t_setenv("MYSAMPLE_CUDA_CACHE", "off");
  CHECK(ms__cu_cache_dir(NULL, buf, sizeof buf) == 0);
  t_setenv("MYSAMPLE_CUDA_CACHE", "0");
  CHECK(ms__cu_cache_dir(NULL, buf, sizeof buf) == 0);
  memset(&o, 0, sizeof o);
  o.cache_dir = "/opt/explicit";   /* the caller's directory wins over the environment */
  CHECK(ms__cu_cache_dir(&o, buf, sizeof buf) == 1 && !strcmp(buf, "/opt/explicit"));
  t_setenv("MYSAMPLE_CUDA_CACHE", "/tmp/ms-cache-x");
  CHECK(ms__cu_cache_dir(NULL, buf, sizeof buf) == 1 && !strcmp(buf, "/tmp/ms-cache-x"));
  t_setenv("MYSAMPLE_CUDA_CACHE", NULL);
  t_setenv("XDG_CACHE_HOME", "/tmp/xdg");
  t_setenv("LOCALAPPDATA", "C:\\Users\\u\\AppData\\Local");
  CHECK(ms__cu_cache_dir(NULL, buf, sizeof buf) == 1 && !strcmp(buf, "/tmp/xdg/mysample"));
  t_setenv("MYSAMPLE_CUDA_CACHE", "");   /* empty: as unset */
  CHECK(ms__cu_cache_dir(NULL, buf, sizeof buf) == 1 && !strcmp(buf, "/tmp/xdg/mysample"));
  t_setenv("MYSAMPLE_CUDA_CACHE", NULL);
  t_setenv("XDG_CACHE_HOME", NULL);
  t_setenv("HOME", "/home/u");
#ifdef _WIN32
  CHECK(ms__cu_cache_dir(NULL, buf, sizeof buf) == 1 && !strcmp(buf, "C:\\Users\\u\\AppData\\Local\\mysample"));
#else
  CHECK(ms__cu_cache_dir(NULL, buf, sizeof buf) == 1 && !strcmp(buf, "/home/u/.cache/mysample"));
#endif
  t_setenv("LOCALAPPDATA", NULL);
  CHECK(ms__cu_cache_dir(NULL, buf, sizeof buf) == 1 && !strcmp(buf, "/home/u/.cache/mysample"));
  t_setenv("HOME", NULL);
  CHECK(ms__cu_cache_dir(NULL, buf, sizeof buf) == 0);   /* nowhere to put it: off */
  for (i = 0; i < N_NAMES; i++) t_setenv(names[i], had[i] ? saved[i] : NULL);
}

/* The embedded source is src/cuda/kernels.cu byte for byte. */
static void test_embedded_source(void) {
  FILE *f = fopen("src/cuda/kernels.cu", "rb");
  const char *s;
  char *buf;
  long n;
  if (!f) SKIP("src/cuda/kernels.cu not found (run from the repository root)");
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = (char *)malloc((size_t)n + 1);
  CHECK(buf != NULL);
  if (!buf) { fclose(f); return; }
  CHECK(fread(buf, 1, (size_t)n, f) == (size_t)n);
  buf[n] = 0;
  fclose(f);
  ms__cu_lock(&ms__cu_compile_mu);
  s = ms__cu_get_source();
  ms__cu_unlock(&ms__cu_compile_mu);
  CHECK(s != NULL && strcmp(s, buf) == 0);
  {
    int i;
    for (i = 0; ms__cuda_src_kernels[i]; i++) CHECK(strlen(ms__cuda_src_kernels[i]) < 2000);
  }
  free(buf);
}

/* ---- the loader without a GPU --------------------------------------------- */
static void test_loader_without_gpu(void) {
  char msg[512], msg2[512];
  ms_cuda *cu = (ms_cuda *)&msg;  /* must be overwritten with NULL */
  ms_cuda_desc d;
  ms_result rc;
  rc = ms_cuda_load_driver(NULL, msg, sizeof msg);
  if (rc == MS_OK) {
    /* a working driver and GPU: this test is about machines without */
    SKIP("a CUDA driver and GPU are present");
  }
  CHECK_EQ_INT(rc, MS_ERR_NO_DEVICE);
  CHECK(msg[0] != 0);
  printf("  driver: %s\n", msg);
  memset(&d, 0, sizeof d);
  d.max_rows = 8; d.max_vocab = 1000;
  rc = ms_cuda_create(&cu, &d, msg2, sizeof msg2);
  CHECK_EQ_INT(rc, MS_ERR_NO_DEVICE);
  CHECK(cu == NULL);
  CHECK(strcmp(msg, msg2) == 0);        /* the remembered failure */
  rc = ms_cuda_create(&cu, &d, NULL, 0); /* no message buffer: fine */
  CHECK_EQ_INT(rc, MS_ERR_NO_DEVICE);
  CHECK_EQ_INT(ms_cuda_create(NULL, &d, msg, sizeof msg), MS_ERR_NULL_ARGUMENT);
  d.max_vocab = 0;
  CHECK_EQ_INT(ms_cuda_create(&cu, &d, msg, sizeof msg), MS_ERR_BAD_VOCAB);
  ms_cuda_destroy(NULL);
  CHECK(ms_cuda_workspace_size(&d) == 0);
  d.max_vocab = 1000;
  CHECK(ms_cuda_workspace_size(&d) > 8u * 1000u * 4u);
}

/* ---- the kernels' RNG formula equals ms_uniform ---------------------------- */
/* A host copy of ms_uniform_dev in kernels.cu (mulhi via 64-bit products). */
static double t_uniform_like_kernel(uint64_t seed, uint64_t position, uint32_t purpose) {
  uint32_t c0 = (uint32_t)position, c1 = (uint32_t)(position >> 32), c2 = purpose, c3 = 0;
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  int r;
  for (r = 0; r < 10; r++) {
    uint32_t lo0 = 0xD2511F53u * c0, hi0 = (uint32_t)(((uint64_t)0xD2511F53u * c0) >> 32);
    uint32_t lo1 = 0xCD9E8D57u * c2, hi1 = (uint32_t)(((uint64_t)0xCD9E8D57u * c2) >> 32);
    uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
    k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
  }
  return ((double)(c0 >> 5) * 67108864.0 + (double)(c1 >> 6)) * (1.0 / 9007199254740992.0);
}
static void test_rng_formula_matches_cpu(void) {
  int i, bad = 0;
  for (i = 0; i < 200000; i++) {
    uint64_t seed = ((uint64_t)(t_unif() * 4294967296.0) << 32) ^ (uint64_t)(t_unif() * 4294967296.0);
    uint64_t pos = i < 1000 ? (uint64_t)i : ((uint64_t)(t_unif() * 4294967296.0) << (i & 31));
    uint32_t purpose = (i % 7 == 0) ? MS_PURPOSE_USER + (uint32_t)i : MS_PURPOSE_DRAW;
    if (t_uniform_like_kernel(seed, pos, purpose) != ms_uniform(seed, pos, purpose)) bad++;
  }
  CHECK_EQ_INT(bad, 0);
}

/* ---- GPU execution (skipped without a GPU) --------------------------------- */
#define T_MAXV 32000
#define T_MAXB 64
static ms_cuda *t_cu;
static ms_sampler *t_cpu;
static char t_why[800], t_msg[512];
static int t_tried;
static int t_emu;   /* the device is the CPU emulator (tests/cuda_emu) */

/* Under the emulator every CUDA thread is a fiber and a 1024-thread row
   block costs milliseconds, so the execution tests take smaller sizes
   there (MYSAMPLE_CUDA_EMU_FULL=1 keeps the GPU sizes). */
static int t_small(void) { return t_emu && !getenv("MYSAMPLE_CUDA_EMU_FULL"); }

static ms_cuda *t_gpu(void) {
  ms_cuda_desc d;
  ms_sampler_desc sd;
  ms_result rc;
  if (t_tried) return t_cu;
  t_tried = 1;
  memset(&d, 0, sizeof d);
  d.max_rows = T_MAXB; d.max_vocab = T_MAXV; d.max_slots = 4;
  rc = ms_cuda_create(&t_cu, &d, t_msg, sizeof t_msg);
  if (rc != MS_OK) {
    snprintf(t_why, sizeof t_why, "no GPU: %s (%s)", ms_result_str(rc), t_msg);
    t_cu = NULL;
    return NULL;
  }
  t_emu = strstr(ms_cuda_device_name(t_cu), "CPU emulator") != NULL;
  memset(&sd, 0, sizeof sd);
  sd.max_vocab = T_MAXV;
  if (ms_sampler_create(&t_cpu, &sd) != MS_OK) { ms_cuda_destroy(t_cu); t_cu = NULL; snprintf(t_why, sizeof t_why, "CPU sampler failed"); }
  return t_cu;
}

/* Device buffers shared by the GPU tests. */
static void *t_dlogits, *t_dtokens, *t_dprobs, *t_dout, *t_dtop;
static float t_logits[T_MAXB * T_MAXV], t_probs[T_MAXB * T_MAXV], t_cprobs[T_MAXV];
static int t_bufs(ms_cuda *cu) {
  if (t_dlogits) return 1;
  return ms_cuda_malloc(cu, &t_dlogits, sizeof t_logits) == MS_OK &&
         ms_cuda_malloc(cu, &t_dtokens, T_MAXB * 4) == MS_OK &&
         ms_cuda_malloc(cu, &t_dprobs, sizeof t_probs) == MS_OK &&
         ms_cuda_malloc(cu, &t_dout, T_MAXB * sizeof(ms_cuda_out)) == MS_OK &&
         ms_cuda_malloc(cu, &t_dtop, T_MAXB * 20 * sizeof(ms_logprob)) == MS_OK;
}

/* A grid of parameter sets covering every filter and both profiles. */
static ms_params t_grid(int i) {
  static const float temps[] = { 0.0f, 0.005f, 0.7f, 1.0f, 1.5f };
  static const int32_t ks[] = { 0, 1, 5, 50, -1 };
  static const float ps[] = { 1.0f, 0.9f, 0.5f, 0.95f };
  static const float mps[] = { 0.0f, 0.05f, 0.2f };
  ms_params p = ms_params_default();
  p.temperature = temps[i % 5];
  p.top_k = ks[(i / 5) % 5];
  p.top_p = ps[(i / 25) % 4];
  p.min_p = mps[(i / 100) % 3];
  p.profile = (i / 300) % 2 ? MS_PROFILE_HF : MS_PROFILE_VLLM;
  p.seed = 1000u + (uint64_t)i; p.has_seed = 1;
  return p;
}

/* The grid without the rows validation refuses (HF has no top_k = -1). */
static ms_params t_grid_valid(int i) {
  ms_params p = t_grid(i);
  if (p.profile == MS_PROFILE_HF && p.top_k < 0) p.top_k = 0;
  return p;
}

/* Every row of the grid (both profiles, every filter combination), rows
   the validation refuses included: those get the CPU's code and a zero
   distribution, the others the CPU's distribution. */
static void test_gpu_probs_match_cpu(void) {
  ms_cuda *cu = t_gpu();
  ms_params ps[T_MAXB];
  const ms_params *pp[T_MAXB];
  ms_result rr[T_MAXB];
  ms_cuda_batch b;
  int g, r, vi, V, worst_g = -1, refused = 0;
  const int vocabs[2] = { 1000, t_small() ? 12000 : T_MAXV };   /* 12000: still split over 2 blocks */
  double worst = 0.0;
  if (!cu) SKIP(t_why);
  CHECK(t_bufs(cu));
  for (vi = 0; vi < 2; vi++) {
    V = vocabs[vi];
    for (g = 0; g < 600; g += T_MAXB) {
      int n = 600 - g < T_MAXB ? 600 - g : T_MAXB;
      ms_result first = MS_OK;
      t_fill(t_logits, n * V, (g / T_MAXB) % 2 ? 3.0f : 1.0f);
      for (r = 0; r < n; r++) {
        ps[r] = t_grid(g + r); pp[r] = &ps[r];
        if (first == MS_OK) first = ms_params_validate(&ps[r], V, NULL, 0);
      }
      CHECK(ms_cuda_upload(cu, t_dlogits, t_logits, (size_t)n * (size_t)V * 4) == MS_OK);
      memset(&b, 0, sizeof b);
      b.n_rows = n; b.vocab = V; b.logits = t_dlogits; b.row_stride = (size_t)V; b.params = pp; b.tokens = t_dtokens;
      b.row_results = rr;
      CHECK_EQ_INT(ms_cuda_probs(cu, NULL, &b, t_dprobs, (size_t)V), first);
      CHECK(ms_cuda_download(cu, t_probs, t_dprobs, (size_t)n * (size_t)V * 4) == MS_OK);
      for (r = 0; r < n; r++) {
        int32_t i;
        ms_result want = ms_params_validate(&ps[r], V, NULL, 0);
        CHECK_EQ_INT(rr[r], want);
        if (want != MS_OK) {
          int nz = 0;
          for (i = 0; i < V; i++) nz += t_probs[(size_t)r * (size_t)V + (size_t)i] != 0.0f;
          CHECK_EQ_INT(nz, 0);
          refused++;
          continue;
        }
        CHECK_EQ_INT(ms_probs(t_cpu, t_logits + (size_t)r * (size_t)V, V, &ps[r], NULL, t_cprobs), MS_OK);
        for (i = 0; i < V; i++) {
          double e = fabs((double)t_probs[(size_t)r * (size_t)V + (size_t)i] - (double)t_cprobs[i]);
          if (e > worst) { worst = e; worst_g = g + r; }
        }
      }
    }
  }
  printf("  max |gpu - cpu| = %.3g (grid %d), vocab %d and %d, %d refused rows\n", worst, worst_g, vocabs[0], vocabs[1], refused);
  CHECK(worst <= 1e-5);
}

static void test_gpu_draws_match_cpu(void) {
  ms_cuda *cu = t_gpu();
  ms_params ps[T_MAXB];
  const ms_params *pp[T_MAXB];
  uint64_t seeds[T_MAXB], pos[T_MAXB];
  int32_t tok[T_MAXB];
  ms_cuda_batch b;
  const int V = 4096;
  int it, r, same = 0, total = 0;
  const int iters = t_small() ? 16 : 64;
  if (!cu) SKIP(t_why);
  CHECK(t_bufs(cu));
  for (it = 0; it < iters; it++) {
    t_fill(t_logits, T_MAXB * V, it % 2 ? 3.0f : 1.0f);
    for (r = 0; r < T_MAXB; r++) {
      ps[r] = t_grid_valid(it * T_MAXB + r);
      if (ps[r].temperature < 0.01f) ps[r].temperature = 0.8f;
      pp[r] = &ps[r];
      seeds[r] = (uint64_t)it * 7919u + (uint64_t)r; pos[r] = (uint64_t)r * 3u;
      ps[r].seed = seeds[r];
    }
    CHECK(ms_cuda_upload(cu, t_dlogits, t_logits, (size_t)T_MAXB * (size_t)V * 4) == MS_OK);
    memset(&b, 0, sizeof b);
    b.n_rows = T_MAXB; b.vocab = V; b.logits = t_dlogits; b.row_stride = (size_t)V; b.params = pp;
    b.seeds = seeds; b.positions = pos; b.tokens = t_dtokens;
    CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);
    CHECK(ms_cuda_download(cu, tok, t_dtokens, sizeof tok) == MS_OK);
    for (r = 0; r < T_MAXB; r++) {
      ms_output o;
      ms_seq *s = NULL;
      memset(&o, 0, sizeof o);
      /* the CPU draws at (seq seed, seq position) */
      CHECK(ms_seq_create(&s, 8) == MS_OK);
      if (!s) continue;
      CHECK(ms_seq_reset(s, NULL, 0, V, &ps[r], 0) == MS_OK);
      ms_seq_set_position(s, pos[r]);
      CHECK_EQ_INT(ms_sample(t_cpu, t_logits + (size_t)r * (size_t)V, V, &ps[r], s, &o), MS_OK);
      same += o.token == tok[r];
      total++;
      ms_seq_destroy(s);
    }
  }
  printf("  %d of %d draws equal the CPU's\n", same, total);
  CHECK(total > 0 && (double)same >= 0.999 * (double)total);
}

/* Chi-square of many seeded GPU draws against the GPU's own final
   distribution (itself checked against the CPU above). False-alarm rate
   1e-6 per test: the critical value is the Wilson-Hilferty quantile. */
static void test_gpu_chi_square(void) {
  ms_cuda *cu = t_gpu();
  ms_params p = ms_params_default();
  const ms_params *pp[T_MAXB];
  uint64_t pos[T_MAXB];
  int32_t tok[T_MAXB];
  static double count[64];
  ms_cuda_batch b;
  const int V = 64;
  int r, it, i, dof = -1, draws;
  double chi = 0.0, crit, z = 4.753, min_e = 1e300; /* one-sided normal quantile for 1e-6 */
  if (!cu) SKIP(t_why);
  draws = t_small() ? 64 * 25 : 64 * 400;   /* the smallest expected count stays above 5 */
  CHECK(t_bufs(cu));
  t_fill(t_logits, V, 1.5f);
  for (r = 1; r < T_MAXB; r++) memcpy(t_logits + r * V, t_logits, (size_t)V * 4);
  CHECK(ms_cuda_upload(cu, t_dlogits, t_logits, (size_t)T_MAXB * (size_t)V * 4) == MS_OK);
  p.top_p = 0.9f; p.top_k = 40; p.min_p = 0.01f; p.seed = 77; p.has_seed = 1;
  for (r = 0; r < T_MAXB; r++) pp[r] = &p;
  memset(&b, 0, sizeof b);
  b.n_rows = T_MAXB; b.vocab = V; b.logits = t_dlogits; b.row_stride = (size_t)V; b.params = pp; b.tokens = t_dtokens;
  CHECK_EQ_INT(ms_cuda_probs(cu, NULL, &b, t_dprobs, (size_t)V), MS_OK);
  CHECK(ms_cuda_download(cu, t_probs, t_dprobs, (size_t)V * 4) == MS_OK);
  b.positions = pos;
  memset(count, 0, sizeof count);
  for (it = 0; it < draws / T_MAXB; it++) {
    for (r = 0; r < T_MAXB; r++) pos[r] = (uint64_t)(it * T_MAXB + r);
    CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);
    CHECK(ms_cuda_download(cu, tok, t_dtokens, sizeof tok) == MS_OK);
    for (r = 0; r < T_MAXB; r++) if (tok[r] >= 0 && tok[r] < V) count[tok[r]] += 1.0;
  }
  for (i = 0; i < V; i++) {
    double e = t_probs[i] * draws;
    if (t_probs[i] == 0.0f) { CHECK_MSG(count[i] == 0.0, "dropped token %d drawn %g times", i, count[i]); continue; }
    chi += (count[i] - e) * (count[i] - e) / e;
    if (e < min_e) min_e = e;
    dof++;
  }
  if (dof < 1) dof = 1;
  crit = dof * pow(1.0 - 2.0 / (9.0 * dof) + z * sqrt(2.0 / (9.0 * dof)), 3.0);
  printf("  chi2 = %.2f, dof %d, critical %.2f, %d draws, smallest expected count %.1f\n", chi, dof, crit, draws, min_e);
  CHECK(chi < crit);
}

/* A row's token and distribution do not depend on the batch around it,
   nor on the split of rows over blocks. */
static void test_gpu_batch_invariance(void) {
  ms_cuda *cu = t_gpu();
  ms_params ps[T_MAXB];
  const ms_params *pp[T_MAXB];
  int32_t all[T_MAXB], one[1];
  ms_cuda_batch b;
  const int V = T_MAXV;
  int r;
  if (!cu) SKIP(t_why);
  CHECK(t_bufs(cu));
  t_fill(t_logits, T_MAXB * V, 2.0f);
  CHECK(ms_cuda_upload(cu, t_dlogits, t_logits, (size_t)T_MAXB * (size_t)V * 4) == MS_OK);
  for (r = 0; r < T_MAXB; r++) { ps[r] = t_grid_valid(r * 37 + 3); if (ps[r].temperature < 0.01f) ps[r].temperature = 1.0f; pp[r] = &ps[r]; }
  memset(&b, 0, sizeof b);
  b.n_rows = T_MAXB; b.vocab = V; b.logits = t_dlogits; b.row_stride = (size_t)V; b.params = pp; b.tokens = t_dtokens;
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);
  CHECK(ms_cuda_download(cu, all, t_dtokens, sizeof all) == MS_OK);
  for (r = 0; r < T_MAXB; r += 7) {
    b.n_rows = 1; b.logits = (const float *)t_dlogits + (size_t)r * (size_t)V; b.params = pp + r;
    CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);   /* alone: the row is split over blocks */
    CHECK(ms_cuda_download(cu, one, t_dtokens, sizeof one) == MS_OK);
    CHECK_EQ_INT(one[0], all[r]);
  }
}

/* Logprobs (raw and processed): value, rank and the top list as the CPU. */
static void test_gpu_logprobs_match_cpu(void) {
  ms_cuda *cu = t_gpu();
  ms_params ps[8];
  const ms_params *pp[8];
  ms_cuda_out out[8];
  ms_logprob top[8 * 20], ctop[20];
  ms_cuda_batch b;
  const int V = 5000;
  int r, j;
  if (!cu) SKIP(t_why);
  CHECK(t_bufs(cu));
  t_fill(t_logits, 8 * V, 2.0f);
  CHECK(ms_cuda_upload(cu, t_dlogits, t_logits, (size_t)8 * (size_t)V * 4) == MS_OK);
  for (r = 0; r < 8; r++) {
    ps[r] = t_grid(r * 41 + 2);
    ps[r].logprobs = 5 + r;
    ps[r].logprobs_mode = r % 2 ? MS_LOGPROBS_PROCESSED : MS_LOGPROBS_RAW;
    pp[r] = &ps[r];
  }
  memset(&b, 0, sizeof b);
  b.n_rows = 8; b.vocab = V; b.logits = t_dlogits; b.row_stride = (size_t)V; b.params = pp; b.tokens = t_dtokens;
  b.out = t_dout; b.top = t_dtop; b.top_stride = 20;
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);
  CHECK(ms_cuda_download(cu, out, t_dout, sizeof out) == MS_OK);
  CHECK(ms_cuda_download(cu, top, t_dtop, sizeof top) == MS_OK);
  for (r = 0; r < 8; r++) {
    ms_output o;
    memset(&o, 0, sizeof o);
    o.top = ctop; o.top_capacity = 20;
    CHECK_EQ_INT(ms_sample(t_cpu, t_logits + (size_t)r * (size_t)V, V, &ps[r], NULL, &o), MS_OK);
    CHECK_EQ_INT(out[r].status, MS_OK);
    if (out[r].token != o.token) continue;   /* a rare boundary draw: compared elsewhere */
    CHECK_NEAR(out[r].logprob, o.logprob, 1e-4);
    CHECK_EQ_INT(out[r].rank, o.rank);
    CHECK_EQ_INT(out[r].n_top, o.n_top);
    for (j = 0; j < o.n_top && j < out[r].n_top; j++) {
      CHECK_EQ_INT(top[r * 20 + j].token, ctop[j].token);
      CHECK_NEAR(top[r * 20 + j].logprob, ctop[j].logprob, 1e-4);
    }
  }
}

/* Device-side sequences: penalties and min_tokens follow the CPU's ms_seq
   step by step, with the counters updated on the device. */
/* Every slot's seen bits (after its counters in the sequences'
   allocation: slot_seen in kernels.cu) are set exactly where its counter
   is not zero, whatever set them (the prompt, a row that accepted, a
   ms_cuda_seq_accept). Returns the number of slots and tokens that differ. */
static int t_seen_bits_differ(ms_cuda *cu) {
  const size_t S = (size_t)cu->max_slots, V = (size_t)cu->max_vocab, W = (V + 31) / 32;
  uint32_t *st = (uint32_t *)malloc((S * V + S * W) * 4);
  size_t s, t;
  int bad = 0;
  if (!st || !S) { free(st); return st ? 0 : 1; }
  if (ms_cuda_download(cu, st, (const void *)(uintptr_t)cu->d_seq_state, (S * V + S * W) * 4) != MS_OK) { free(st); return 1; }
  for (s = 0; s < S; s++)
    for (t = 0; t < V; t++) {
      const int bit = (int)((st[S * V + s * W + t / 32] >> (t % 32)) & 1u);
      if (bit != (st[s * V + t] != 0u)) bad++;
    }
  free(st);
  return bad;
}

static void test_gpu_sequences_match_cpu(void) {
  ms_cuda *cu = t_gpu();
  ms_params p = ms_params_default();
  const ms_params *pp[1];
  int32_t slot[1] = { 2 }, prompt[6] = { 5, 9, 9, 100, 7, 3 }, tok[1];
  ms_cuda_batch b;
  ms_seq *s = NULL;
  void *dprompt = NULL;
  const int V = 2000;
  int step;
  if (!cu) SKIP(t_why);
  CHECK(t_bufs(cu));
  p.repetition_penalty = 1.3f; p.frequency_penalty = 0.4f; p.presence_penalty = 0.3f;
  p.min_tokens = 4; p.eos_token_id = 1; p.temperature = 0.9f; p.top_p = 0.95f; p.seed = 99; p.has_seed = 1;
  pp[0] = &p;
  CHECK(ms_seq_create(&s, 64) == MS_OK);
  if (!s) return;
  CHECK(ms_seq_reset(s, prompt, 6, V, &p, 0) == MS_OK);
  CHECK(ms_cuda_malloc(cu, &dprompt, sizeof prompt) == MS_OK);
  CHECK(ms_cuda_upload(cu, dprompt, prompt, sizeof prompt) == MS_OK);
  CHECK_EQ_INT(ms_cuda_seq_reset(cu, NULL, slot[0], dprompt, 6, NULL), MS_OK);
  memset(&b, 0, sizeof b);
  b.n_rows = 1; b.vocab = V; b.logits = t_dlogits; b.row_stride = (size_t)V; b.params = pp;
  b.slots = slot; b.accept = 1; b.tokens = t_dtokens;
  for (step = 0; step < 30; step++) {
    ms_output o;
    t_fill(t_logits, V, 1.0f);
    t_logits[1] = 8.0f;   /* EOS would win without min_tokens */
    t_logits[9] = 6.0f;   /* a prompt token: penalised */
    CHECK(ms_cuda_upload(cu, t_dlogits, t_logits, (size_t)V * 4) == MS_OK);
    CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);
    CHECK(ms_cuda_download(cu, tok, t_dtokens, sizeof tok) == MS_OK);
    memset(&o, 0, sizeof o);
    CHECK_EQ_INT(ms_sample(t_cpu, t_logits, V, &p, s, &o), MS_OK);
    CHECK_EQ_INT(tok[0], o.token);
    CHECK(ms_seq_accept(s, o.token) == MS_OK);
    if (step < 4) CHECK(tok[0] != 1);
  }
  CHECK_EQ_INT(t_seen_bits_differ(cu), 0);
  ms_cuda_free(cu, dprompt);
  ms_seq_destroy(s);
}

/* A batch of greedy rows without logprobs ends in ms_k_stats (its last
   block per split row writes the token and accepts it; ms_k_row is not
   launched): tokens, statuses and the device sequence follow the CPU's,
   with NaN, all -inf and refused rows among them. */
static void test_gpu_greedy_batch_ends_in_stats(void) {
  enum { R = 5, V = 9000 };
  static float x[R * V];
  ms_cuda *cu = NULL;
  ms_cuda_desc d;
  ms_params ps[R];
  const ms_params *pp[R];
  int32_t slots[R] = { -1, 1, -1, -1, -1 }, prompt[3] = { 7, 8, 9 }, tok[R];
  ms_cuda_out out[R];
  ms_cuda_batch b;
  ms_seq *s = NULL;
  void *dl = NULL, *dt = NULL, *dout = NULL, *dprompt = NULL;
  int r, j, step, bad = 0;
  if (!t_gpu()) SKIP(t_why);
  memset(&d, 0, sizeof d);
  d.max_rows = R; d.max_vocab = V; d.max_slots = 2; d.split = 7;
  CHECK_EQ_INT(ms_cuda_create(&cu, &d, t_msg, sizeof t_msg), MS_OK);
  if (!cu) return;
  CHECK(ms_cuda_malloc(cu, &dl, sizeof x) == MS_OK && ms_cuda_malloc(cu, &dt, sizeof tok) == MS_OK &&
        ms_cuda_malloc(cu, &dout, sizeof out) == MS_OK && ms_cuda_malloc(cu, &dprompt, sizeof prompt) == MS_OK);
  for (r = 0; r < R; r++) { ps[r] = ms_params_default(); ps[r].temperature = 0.0f; pp[r] = &ps[r]; }
  ps[1].repetition_penalty = 1.5f; ps[1].frequency_penalty = 0.5f; ps[1].min_tokens = 3; ps[1].eos_token_id = 2;
  ps[4].top_p = 0.0f;   /* refused by the validation */
  CHECK(ms_seq_create(&s, 64) == MS_OK);
  if (!s) return;
  CHECK(ms_seq_reset(s, prompt, 3, V, &ps[1], 0) == MS_OK);
  CHECK(ms_cuda_upload(cu, dprompt, prompt, sizeof prompt) == MS_OK);
  CHECK_EQ_INT(ms_cuda_seq_reset(cu, NULL, 1, dprompt, 3, NULL), MS_OK);
  memset(&b, 0, sizeof b);
  b.n_rows = R; b.vocab = V; b.logits = dl; b.row_stride = V; b.params = pp; b.slots = slots; b.accept = 1;
  b.tokens = dt; b.out = dout;
  /* the work rows hold a mark: the masked and penalised greedy row (1)
     ends in the statistics, so its processed logits are never stored */
  for (j = 0; j < R * V; j++) x[j] = 12345.0f;
  CHECK(ms_cuda_upload(cu, (void *)(uintptr_t)cu->d_work, x, sizeof x) == MS_OK);
  for (step = 0; step < 8; step++) {
    for (r = 0; r < R; r++) t_fill(x + (size_t)r * V, V, 1.0f);
    x[1 * V + 2] = 9.0f;                                      /* EOS: held back by min_tokens */
    x[1 * V + 8] = 5.0f; x[1 * V + 100 + step] = 4.8f;        /* a prompt token, penalised */
    for (j = 0; j < V; j++) x[2 * V + j] = -INFINITY;
    x[3 * V + V - 1] = (float)NAN;
    x[0 * V + 4321] = 7.0f; x[0 * V + 4322] = 7.0f;           /* a tie: the lower id */
    CHECK(ms_cuda_upload(cu, dl, x, sizeof x) == MS_OK);
    /* the call reports the refused row's code; the other rows are sampled */
    CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_ERR_INVALID_PARAM);
    CHECK(ms_cuda_download(cu, tok, dt, sizeof tok) == MS_OK && ms_cuda_download(cu, out, dout, sizeof out) == MS_OK);
    for (r = 0; r < R; r++) {
      ms_output o;
      ms_result crc;
      memset(&o, 0, sizeof o);
      crc = ms_sample(t_cpu, x + (size_t)r * V, V, &ps[r], r == 1 ? s : NULL, &o);
      if (crc != MS_OK) o.token = -1;
      if (out[r].status != (int32_t)crc || tok[r] != o.token || out[r].token != o.token ||
          out[r].greedy != (crc == MS_OK) || (crc == MS_OK && out[r].logprob != 0.0f)) {
        if (++bad <= 5) printf("  step %d row %d: status %d / cpu %d, token %d / %d, greedy %d\n", step, r,
                               out[r].status, (int)crc, tok[r], o.token, out[r].greedy);
      }
      if (r == 1 && crc == MS_OK) CHECK(ms_seq_accept(s, o.token) == MS_OK);
    }
  }
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(t_seen_bits_differ(cu), 0);   /* (accepted in ms_k_stats's last blocks) */
  CHECK(ms_cuda_download(cu, x, (const void *)(uintptr_t)cu->d_work, sizeof x) == MS_OK);
  for (j = 0, bad = 0; j < V; j++) bad += x[1 * V + j] != 12345.0f;
  CHECK_EQ_INT(bad, 0);
  ms_seq_destroy(s);
  ms_cuda_free(cu, dl); ms_cuda_free(cu, dt); ms_cuda_free(cu, dout); ms_cuda_free(cu, dprompt);
  ms_cuda_destroy(cu);
}

/* ---- randomized rows with every feature the kernels implement ------------- */
/* Per row: a profile, temperature (greedy included), top-k / top-p / min-p,
   allowed ids, banned ids, a grammar bitmask, a logit bias (duplicates,
   values beyond the clamp), penalties and min_tokens over a device-side
   sequence (prompt by ms_cuda_seq_reset, output by ms_cuda_seq_accept),
   raw or processed logprobs; logits with bf16-rounded ties and -inf
   entries; vocabularies that are not multiples of 32. Each row's final
   distribution (within 1e-6), token, logprob, rank and top list are
   compared with the CPU (ms_probs / ms_sample on an ms_seq with the same
   history). */
#define T_FR 16          /* rows per batch */
#define T_FV 12000       /* largest vocab */
typedef struct t_frow {
  ms_params p;
  int32_t allowed[64], banned[16], stops[4], prompt[24], hist[40], bw[40], bw_lens[8];
  ms_bias bias[12];
  uint32_t bitmask[(T_FV + 31) / 32];
  int32_t n_prompt, n_hist, slot;
  ms_seq *seq;
} t_frow;
static t_frow t_fr[T_FR];

static uint32_t t_rand(uint32_t n) { return (uint32_t)(t_unif() * (double)n) % (n ? n : 1u); }
static float t_bf16(float x) {   /* round to bfloat16 precision: many exact ties */
  uint32_t u;
  memcpy(&u, &x, 4);
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  memcpy(&x, &u, 4);
  return x;
}

static void t_frow_make(t_frow *f, int r, int V, int slot_ok) {
  static const float temps[] = { 0.0f, 0.5f, 1.0f, 1.3f, 0.8f };
  static const int32_t ks[] = { 0, 0, 1, 3, 40 };
  static const float tps[] = { 1.0f, 1.0f, 0.8f, 0.95f };
  ms_params p = ms_params_default();
  int j;
  p.profile = (ms_profile)(const int[]){ MS_PROFILE_VLLM, MS_PROFILE_VLLM, MS_PROFILE_HF, MS_PROFILE_SGLANG }[t_rand(4)];
  p.temperature = temps[t_rand(5)];
  p.top_k = ks[t_rand(5)];
  p.top_p = tps[t_rand(4)];
  p.min_p = t_rand(4) == 0 ? 0.05f : 0.0f;
  p.seed = 500u + (uint64_t)t_rand(100000); p.has_seed = 1;
  if (t_rand(10) < 3) {   /* allowed ids: a random subset, duplicates and out-of-range-free */
    int n = 1 + (int)t_rand(63);
    for (j = 0; j < n; j++) f->allowed[j] = (int32_t)t_rand((uint32_t)V);
    p.allowed_ids = f->allowed; p.n_allowed_ids = n;
  }
  if (t_rand(10) < 3) {
    int n = 1 + (int)t_rand(15);
    for (j = 0; j < n; j++) f->banned[j] = (int32_t)t_rand((uint32_t)V);
    p.banned_ids = f->banned; p.n_banned_ids = n;
  }
  if (t_rand(10) < 2) {
    for (j = 0; j < (V + 31) / 32; j++) f->bitmask[j] = (uint32_t)(t_unif() * 4294967296.0) | (uint32_t)(t_unif() * 4294967296.0);
    p.token_bitmask = f->bitmask;
  }
  if (t_rand(10) < 3) {
    int n = 1 + (int)t_rand(12);
    for (j = 0; j < n; j++) {
      f->bias[j].token = j > 0 && t_rand(4) == 0 ? f->bias[j - 1].token : (int32_t)t_rand((uint32_t)V);
      f->bias[j].bias = (float)(t_unif() * 300.0 - 150.0) * (t_rand(2) ? 1.0f : 0.02f);
    }
    p.logit_bias = f->bias; p.n_logit_bias = n;
  }
  f->slot = -1; f->n_prompt = 0; f->n_hist = 0;
  if (slot_ok && t_rand(10) < 5) {
    f->slot = r;
    f->n_prompt = (int32_t)t_rand(24);
    f->n_hist = (int32_t)t_rand(t_rand(4) ? 40 : 4);   /* short outputs too: HF's words reach into the prompt */
    for (j = 0; j < f->n_prompt; j++) f->prompt[j] = (int32_t)t_rand((uint32_t)(V < 200 ? V : 200));
    for (j = 0; j < f->n_hist; j++) f->hist[j] = (int32_t)t_rand((uint32_t)(V < 200 ? V : 200));
    if (t_rand(3)) p.repetition_penalty = t_rand(2) ? 1.3f : 0.8f;
    if (p.profile != MS_PROFILE_HF && t_rand(2)) p.frequency_penalty = (float)(t_unif() * 2.0 - 0.5);
    if (p.profile != MS_PROFILE_HF && t_rand(2)) p.presence_penalty = (float)(t_unif() * 2.0 - 0.5);
    if (t_rand(3) == 0) {
      p.min_tokens = (int32_t)t_rand(60);
      p.eos_token_id = (int32_t)t_rand((uint32_t)V);
      f->stops[0] = (int32_t)t_rand((uint32_t)V); f->stops[1] = (int32_t)t_rand((uint32_t)V);
      p.stop_token_ids = f->stops; p.n_stop_token_ids = 2;
    }
  }
  if (t_rand(4) == 0) {
    /* bad words: one id, or 2-5 ids whose first ones end the history
       (output for vLLM, prompt + output for HF) half the time, else random */
    int n = 1 + (int)t_rand(5), at = 0;
    const int hf = p.profile == MS_PROFILE_HF, L = hf ? f->n_prompt + f->n_hist : f->n_hist;
    for (j = 0; j < n; j++) {
      int len = t_rand(3) ? 2 + (int)t_rand(4) : 1, q, match = (int)t_rand(2);
      for (q = 0; q < len; q++) {
        int a = L - (len - 1) + q;   /* the history's token a (prompt + output for HF) */
        int32_t v = (int32_t)t_rand((uint32_t)V);
        if (q < len - 1 && a >= 0 && match) {
          if (!hf) v = f->hist[a];
          else v = a < f->n_prompt ? f->prompt[a] : f->hist[a - f->n_prompt];
        }
        f->bw[at + q] = v;
      }
      f->bw_lens[j] = len;
      at += len;
    }
    p.bad_words = f->bw; p.bad_words_lens = f->bw_lens; p.n_bad_words = n;
  }
  if (p.profile == MS_PROFILE_HF && f->slot >= 0 && t_rand(3) == 0) p.no_repeat_ngram_size = 1 + (int32_t)t_rand(4);
  if (p.profile == MS_PROFILE_HF && f->slot >= 0 && t_rand(3) == 0) {
    if (p.eos_token_id < 0) p.eos_token_id = (int32_t)t_rand((uint32_t)V);
    p.exp_decay_start = f->n_hist - (int32_t)t_rand(4);   /* 0-3 tokens past the start: the first step counts */
    if (p.exp_decay_start < 0) p.exp_decay_start = 0;
    p.exp_decay_factor = 1.0f + (float)t_unif() * 0.5f;
  }
  if (t_rand(2)) {
    p.logprobs = (int32_t)t_rand(21);
    p.logprobs_mode = t_rand(2) ? MS_LOGPROBS_PROCESSED : MS_LOGPROBS_RAW;
  }
  f->p = p;
}

static void t_frow_logits(float *x, int V) {
  int i, kind = (int)t_rand(4);
  t_fill(x, V, t_rand(2) ? 3.0f : 1.0f);
  if (kind == 1) for (i = 0; i < V; i++) x[i] = t_bf16(x[i]);
  if (kind == 2) for (i = 0; i < V; i++) x[i] = (float)floor(x[i] * 2.0f) * 0.5f;   /* heavy ties */
  if (kind == 3) for (i = 0; i < V / 10; i++) x[t_rand((uint32_t)V)] = -INFINITY;
}

static void test_gpu_features_match_cpu(void) {
  ms_cuda *cu = NULL;
  ms_cuda_desc d;
  const ms_params *pp[T_FR];
  int32_t slots[T_FR], tok[T_FR];
  uint64_t seeds[T_FR], pos[T_FR];
  ms_cuda_out out[T_FR];
  static ms_logprob top[T_FR * 20], ctop[20];
  static float logits[T_FR * T_FV], probs[T_FR * T_FV], cprobs[T_FV];
  void *dl = NULL, *dp = NULL, *dt = NULL, *dout = NULL, *dtop = NULL, *dids = NULL, *dslots = NULL;
  static const int vocabs[] = { 37, 1000, 4099, T_FV };
  int it, r, j, iters, rows = 0, prob_bad = 0, tok_bad = 0, lp_bad = 0;
  double worst = 0.0;
  char worst_at[96] = "";
  ms_cuda_batch b;
  if (!t_gpu()) SKIP(t_why);
  memset(&d, 0, sizeof d);
  d.max_rows = T_FR; d.max_vocab = T_FV; d.max_slots = T_FR;
  CHECK_EQ_INT(ms_cuda_create(&cu, &d, t_msg, sizeof t_msg), MS_OK);
  if (!cu) return;
  CHECK(ms_cuda_malloc(cu, &dl, sizeof logits) == MS_OK && ms_cuda_malloc(cu, &dp, sizeof probs) == MS_OK &&
        ms_cuda_malloc(cu, &dt, sizeof tok) == MS_OK && ms_cuda_malloc(cu, &dout, sizeof out) == MS_OK &&
        ms_cuda_malloc(cu, &dtop, sizeof top) == MS_OK && ms_cuda_malloc(cu, &dids, 64 * 4) == MS_OK &&
        ms_cuda_malloc(cu, &dslots, 64 * 4) == MS_OK);
  iters = t_small() ? 12 : 60;
  if (getenv("MYSAMPLE_TEST_ITERS")) iters = atoi(getenv("MYSAMPLE_TEST_ITERS"));
  for (it = 0; it < iters; it++) {
    const int V = vocabs[it % 4];
    const int n = 1 + (int)t_rand(T_FR);
    for (r = 0; r < n; r++) {
      t_frow *f = &t_fr[r];
      t_frow_make(f, r, V, 1);
      pp[r] = &f->p;
      slots[r] = f->slot;
      t_frow_logits(logits + (size_t)r * (size_t)V, V);
      /* the CPU's sequence and the device's: the same prompt and output */
      if (!f->seq) CHECK(ms_seq_create(&f->seq, 128) == MS_OK);
      CHECK_EQ_INT(ms_seq_reset(f->seq, f->n_prompt ? f->prompt : NULL, f->n_prompt, V, &f->p, 0), MS_OK);
      for (j = 0; j < f->n_hist; j++) CHECK_EQ_INT(ms_seq_accept(f->seq, f->hist[j]), MS_OK);
      if (f->slot >= 0) {
        int32_t sl[40];
        for (j = 0; j < f->n_hist; j++) sl[j] = f->slot;
        CHECK(ms_cuda_upload(cu, dids, f->prompt, 24 * 4) == MS_OK);
        CHECK_EQ_INT(ms_cuda_seq_reset(cu, NULL, f->slot, f->n_prompt ? dids : NULL, f->n_prompt, NULL), MS_OK);
        if (f->n_hist) {
          CHECK(ms_cuda_upload(cu, dids, f->hist, (size_t)f->n_hist * 4) == MS_OK);
          CHECK(ms_cuda_upload(cu, dslots, sl, (size_t)f->n_hist * 4) == MS_OK);
          CHECK_EQ_INT(ms_cuda_seq_accept(cu, NULL, dslots, dids, f->n_hist), MS_OK);
        }
      }
      seeds[r] = f->p.seed;
      pos[r] = ms_seq_position(f->seq);
    }
    CHECK(ms_cuda_upload(cu, dl, logits, (size_t)n * (size_t)V * 4) == MS_OK);
    memset(&b, 0, sizeof b);
    b.n_rows = n; b.vocab = V; b.logits = dl; b.row_stride = (size_t)V; b.params = pp; b.slots = slots;
    b.seeds = seeds; b.positions = pos; b.tokens = dt; b.out = dout; b.top = dtop; b.top_stride = 20;
    {
      ms_result first = MS_OK;
      for (r = 0; r < n && first == MS_OK; r++) first = ms_params_validate(pp[r], V, NULL, 0);
      CHECK_EQ_INT(ms_cuda_probs(cu, NULL, &b, dp, (size_t)V), first);
      CHECK(ms_cuda_download(cu, probs, dp, (size_t)n * (size_t)V * 4) == MS_OK);
      CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), first);
    }
    CHECK(ms_cuda_download(cu, tok, dt, (size_t)n * 4) == MS_OK);
    CHECK(ms_cuda_download(cu, out, dout, (size_t)n * sizeof(ms_cuda_out)) == MS_OK);
    CHECK(ms_cuda_download(cu, top, dtop, (size_t)n * 20 * sizeof(ms_logprob)) == MS_OK);
    for (r = 0; r < n; r++) {
      t_frow *f = &t_fr[r];
      const float *x = logits + (size_t)r * (size_t)V;
      ms_output o;
      ms_result crc;
      double e = 0.0;
      int32_t i, bad_here = 0;
      rows++;
      crc = ms_probs(t_cpu, x, V, &f->p, f->seq, cprobs);
      memset(&o, 0, sizeof o);
      o.top = ctop; o.top_capacity = 20;
      if (crc == MS_OK) crc = ms_sample(t_cpu, x, V, &f->p, f->seq, &o);
      CHECK_EQ_INT(out[r].status, crc);
      if (crc != MS_OK || out[r].status != MS_OK) { CHECK_EQ_INT(tok[r], -1); continue; }
      for (i = 0; i < V; i++) {
        double q = fabs((double)probs[(size_t)r * (size_t)V + (size_t)i] - (double)cprobs[i]);
        if (q > e) e = q;
      }
      if (e > worst) {
        worst = e;
        snprintf(worst_at, sizeof worst_at, "iteration %d row %d, vocab %d", it, r, V);
      }
      /* 1e-6, tighter than elsewhere: the weights are the CPU's bit for bit,
         only the normalisation rounds differently; a processed logit one
         ulp off (near 100, 8e-6) shows here */
      if (e > 1e-6) { prob_bad++; bad_here = 1; }
      if (tok[r] != o.token) { tok_bad++; bad_here = 1; }
      if (!bad_here && f->p.logprobs >= 0) {
        int lb = 0;
        if (!(fabs((double)out[r].logprob - (double)o.logprob) <= 1e-4) && !(isinf(out[r].logprob) && out[r].logprob == o.logprob)) lb = 1;
        if (out[r].rank != o.rank || out[r].n_top != o.n_top) lb = 1;
        for (j = 0; j < o.n_top && j < out[r].n_top; j++)
          if (top[r * 20 + j].token != ctop[j].token ||
              !(fabs((double)top[r * 20 + j].logprob - (double)ctop[j].logprob) <= 1e-4 || top[r * 20 + j].logprob == ctop[j].logprob)) lb = 1;
        if (lb) {
          lp_bad++; bad_here = 1;
          printf("  logprobs differ: lp %.6g / %.6g, rank %d / %d, n_top %d / %d",
                 (double)out[r].logprob, (double)o.logprob, out[r].rank, o.rank, out[r].n_top, o.n_top);
          for (j = 0; j < o.n_top && j < out[r].n_top && j < 20; j++)
            printf(" [%d %.5g / %d %.5g]", top[r * 20 + j].token, (double)top[r * 20 + j].logprob, ctop[j].token, (double)ctop[j].logprob);
          printf("\n");
        }
      }
      if (bad_here && prob_bad + tok_bad + lp_bad <= 12) {
        const ms_params *q = &f->p;
        printf("  row it %d r %d V %d: max |dp| %.3g, token %d / cpu %d; %s T %g k %d p %g minp %g allowed %d banned %d "
               "bitmask %d bias %d slot %d (prompt %d, out %d) rep %g freq %g pres %g min_tokens %d lp %d mode %d\n",
               it, r, V, e, tok[r], o.token, q->profile == MS_PROFILE_HF ? "hf" : "vllm", (double)q->temperature, q->top_k,
               (double)q->top_p, (double)q->min_p, q->n_allowed_ids, q->n_banned_ids, q->token_bitmask != NULL, q->n_logit_bias,
               f->slot, f->n_prompt, f->n_hist, (double)q->repetition_penalty, (double)q->frequency_penalty,
               (double)q->presence_penalty, q->min_tokens, q->logprobs, (int)q->logprobs_mode);
      }
    }
  }
  printf("  %d rows: max |gpu - cpu| = %.3g (%s); %d distributions, %d tokens, %d logprob lists differ\n", rows, worst, worst_at,
         prob_bad, tok_bad, lp_bad);
  CHECK_EQ_INT(prob_bad, 0);
  CHECK_EQ_INT(tok_bad, 0);
  CHECK_EQ_INT(lp_bad, 0);
  for (r = 0; r < T_FR; r++) { ms_seq_destroy(t_fr[r].seq); t_fr[r].seq = NULL; }
  ms_cuda_free(cu, dl); ms_cuda_free(cu, dp); ms_cuda_free(cu, dt); ms_cuda_free(cu, dout);
  ms_cuda_free(cu, dtop); ms_cuda_free(cu, dids); ms_cuda_free(cu, dslots);
  ms_cuda_destroy(cu);
}

/* ---- the slots' histories: bad words, no_repeat_ngram, length decay ---------- */
/* Loads row r's sequence into the CPU's seq and the device's slot r. */
#define T_HCAP 8   /* tokens of history per slot in these tests (ms_cuda_desc.max_history) */
typedef struct t_hrow {
  ms_params p;
  int32_t prompt[16], out[400], bw[64], bw_lens[6];
  int32_t n_prompt, n_out;
  ms_seq *seq;
} t_hrow;

/* A word of len ids: with `match`, its first len - 1 are the last ones of
   the history h[0..L) (where it has them); its last id and the rest
   random among the first 8 ids (the likely tokens). */
static void t_word(int32_t *w, int len, const int32_t *h, int L, int match) {
  int q;
  for (q = 0; q < len; q++) {
    int a = L - (len - 1) + q;
    w[q] = (q < len - 1 && match && a >= 0) ? h[a] : (int32_t)t_rand(8);
  }
}

/* A sampler with T_HCAP tokens of history per slot against the CPU's
   whole sequences. Batches of 3 rows (slots 0-2): prompts and outputs of
   0-12 tokens over a 6-id alphabet (many matches; the ring wraps), now and
   then an output of 250-350 (a ms_cuda_seq_accept call of several chunks);
   each slot's output goes in with one ms_cuda_seq_accept call, interleaved
   with slot 3's tokens (a slot's tokens must keep their order); bad words
   of 1 to T_HCAP + 1 ids that end the output (vLLM) or prompt + output
   (HF) half the time; HF's no_repeat_ngram (MS_ERR_CAPACITY from the
   device once the sequence is longer than T_HCAP) and length decay 0-3
   tokens past its start. Then: a word of T_HCAP + 2 ids (refused with a
   slot, ignored without one, as the CPU without a sequence), two accepting
   rows on one slot (the second refused), and 40 generation steps whose
   tokens join the histories on the device, against the CPU's. */
static void test_gpu_history_matches_cpu(void) {
  enum { R = 3, V = 500 };
  static t_hrow hr[R];
  static float x[R * V], probs[R * V], cprobs[V];
  static int32_t acc_slot[R * 400 + 400], acc_tok[R * 400 + 400];
  ms_cuda *cu = NULL;
  ms_cuda_desc d;
  const ms_params *pp[R];
  int32_t slots[R] = { 0, 1, 2 }, tok[R];
  uint64_t seeds[R], pos[R];
  ms_cuda_out out[R];
  ms_result rr[R];
  void *dl = NULL, *dp = NULL, *dt = NULL, *dout = NULL, *dids = NULL, *dsl = NULL;
  ms_cuda_batch b;
  int trial, trials, r, j, n_acc, cap_rows = 0, bad = 0, compared = 0;
  if (!t_gpu()) SKIP(t_why);
  memset(&d, 0, sizeof d);
  d.max_rows = R; d.max_vocab = V; d.max_slots = 4; d.max_history = T_HCAP;
  CHECK_EQ_INT(ms_cuda_create(&cu, &d, t_msg, sizeof t_msg), MS_OK);
  if (!cu) return;
  CHECK(ms_cuda_malloc(cu, &dl, sizeof x) == MS_OK && ms_cuda_malloc(cu, &dp, sizeof probs) == MS_OK &&
        ms_cuda_malloc(cu, &dt, sizeof tok) == MS_OK && ms_cuda_malloc(cu, &dout, sizeof out) == MS_OK &&
        ms_cuda_malloc(cu, &dids, sizeof acc_tok) == MS_OK && ms_cuda_malloc(cu, &dsl, sizeof acc_slot) == MS_OK);
  for (r = 0; r < R; r++) { CHECK(ms_seq_create(&hr[r].seq, 512) == MS_OK); pp[r] = &hr[r].p; }
  memset(&b, 0, sizeof b);
  b.n_rows = R; b.vocab = V; b.logits = dl; b.row_stride = V; b.params = pp; b.slots = slots;
  b.seeds = seeds; b.positions = pos; b.tokens = dt; b.out = dout; b.row_results = rr;

  trials = t_small() ? 150 : 600;
  for (trial = 0; trial < trials; trial++) {
    for (r = 0; r < R; r++) {
      t_hrow *h = &hr[r];
      ms_params p = ms_params_default();
      int32_t hist[16 + 400];
      int hf = (int)t_rand(2), L, at = 0, nw = 1 + (int)t_rand(5);
      int ng = hf && t_rand(2) ? 1 + (int)t_rand(4) : 0;
      p.profile = hf ? MS_PROFILE_HF : MS_PROFILE_VLLM;
      /* no top_p: its cut is where the CPU's float block sums (about 1e-7
         relative) and the GPU's exact ones may disagree; the bans are what
         this test is about */
      p.temperature = 1.0f;
      p.seed = 77u + (uint64_t)trial; p.has_seed = 1;
      h->n_prompt = (int32_t)t_rand(13);
      h->n_out = t_rand(12) ? (int32_t)t_rand(13) : 250 + (int32_t)t_rand(101);
      if (ng && t_rand(4)) { h->n_prompt = (int32_t)t_rand(5); h->n_out = (int32_t)t_rand(5); }   /* mostly within the ring */
      for (j = 0; j < h->n_prompt; j++) h->prompt[j] = (int32_t)t_rand(6);
      for (j = 0; j < h->n_out; j++) h->out[j] = (int32_t)t_rand(6);
      memcpy(hist, h->prompt, (size_t)h->n_prompt * 4);
      memcpy(hist + h->n_prompt, h->out, (size_t)h->n_out * 4);
      L = hf ? h->n_prompt + h->n_out : h->n_out;
      for (j = 0; j < nw; j++) {
        int len = t_rand(3) ? 1 + (int)t_rand(T_HCAP + 1) : T_HCAP + 1;   /* the longest reads the ring's oldest */
        t_word(h->bw + at, len, hf ? hist : h->out, L, (int)t_rand(2));
        h->bw_lens[j] = len;
        at += len;
      }
      p.bad_words = h->bw; p.bad_words_lens = h->bw_lens; p.n_bad_words = nw;
      p.no_repeat_ngram_size = ng;
      if (hf && t_rand(2)) {
        p.eos_token_id = (int32_t)t_rand(6);
        p.exp_decay_start = h->n_out - (int32_t)t_rand(4);
        if (p.exp_decay_start < 0) p.exp_decay_start = 0;
        p.exp_decay_factor = 1.0f + (float)t_unif() * 0.5f;
      }
      h->p = p;
      CHECK_EQ_INT(ms_seq_reset(h->seq, h->prompt, h->n_prompt, V, &h->p, 0), MS_OK);
      for (j = 0; j < h->n_out; j++) CHECK_EQ_INT(ms_seq_accept(h->seq, h->out[j]), MS_OK);
      CHECK(ms_cuda_upload(cu, dids, h->prompt, sizeof h->prompt) == MS_OK);
      CHECK_EQ_INT(ms_cuda_seq_reset(cu, NULL, r, h->n_prompt ? dids : NULL, h->n_prompt, NULL), MS_OK);
      seeds[r] = h->p.seed; pos[r] = ms_seq_position(h->seq);
      t_fill(x + r * V, V, 1.0f);
      for (j = 0; j < 8; j++) x[r * V + j] += 2.0f;   /* the history's ids are likely */
    }
    /* the outputs in one call: step by step, the rows' tokens and one of slot 3's */
    n_acc = 0;
    for (j = 0; j < 400; j++) {
      for (r = 0; r < R; r++)
        if (j < hr[r].n_out) { acc_slot[n_acc] = r; acc_tok[n_acc++] = hr[r].out[j]; }
      if (j < 20) { acc_slot[n_acc] = 3; acc_tok[n_acc++] = (int32_t)t_rand(6); }
    }
    CHECK(ms_cuda_upload(cu, dsl, acc_slot, (size_t)n_acc * 4) == MS_OK && ms_cuda_upload(cu, dids, acc_tok, (size_t)n_acc * 4) == MS_OK);
    CHECK_EQ_INT(ms_cuda_seq_accept(cu, NULL, dsl, dids, n_acc), MS_OK);
    CHECK_EQ_INT(t_seen_bits_differ(cu), 0);   /* (the prompts, then the accepted ids) */
    CHECK(ms_cuda_upload(cu, dl, x, sizeof x) == MS_OK);
    b.accept = 0;
    CHECK_EQ_INT(ms_cuda_probs(cu, NULL, &b, dp, V), MS_OK);
    CHECK(ms_cuda_download(cu, probs, dp, sizeof probs) == MS_OK);
    CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);
    CHECK(ms_cuda_download(cu, tok, dt, sizeof tok) == MS_OK && ms_cuda_download(cu, out, dout, sizeof out) == MS_OK);
    for (r = 0; r < R; r++) {
      t_hrow *h = &hr[r];
      const int total = h->n_prompt + h->n_out, ng = h->p.no_repeat_ngram_size;
      ms_output o;
      double e = 0.0;
      CHECK_EQ_INT(rr[r], MS_OK);
      if (ng > 0 && total > T_HCAP && total + 1 >= ng) {
        /* the ring lost the sequence's start: the device refuses the row */
        cap_rows++;
        CHECK_EQ_INT(out[r].status, MS_ERR_CAPACITY);
        CHECK_EQ_INT(tok[r], -1);
        continue;
      }
      CHECK_EQ_INT(ms_probs(t_cpu, x + r * V, V, &h->p, h->seq, cprobs), MS_OK);
      memset(&o, 0, sizeof o);
      CHECK_EQ_INT(ms_sample(t_cpu, x + r * V, V, &h->p, h->seq, &o), MS_OK);
      for (j = 0; j < V; j++) { double q = fabs((double)probs[r * V + j] - (double)cprobs[j]); if (q > e) e = q; }
      compared++;
      if (out[r].status != MS_OK || e > 1e-6 || tok[r] != o.token) {
        if (++bad <= 8)
          printf("  trial %d row %d (%s, prompt %d, output %d, %d words, ngram %d, decay %d): status %d, max |dp| %.3g, token %d / cpu %d\n",
                 trial, r, h->p.profile == MS_PROFILE_HF ? "hf" : "vllm", h->n_prompt, h->n_out, h->p.n_bad_words, ng,
                 h->p.exp_decay_start, out[r].status, e, tok[r], o.token);
      }
    }
  }
  printf("  %d rows against the CPU, %d refused for capacity; %d differ\n", compared, cap_rows, bad);
  CHECK_EQ_INT(bad, 0);
  CHECK(cap_rows > 0);

  {
    /* a word longer than the history + 1: refused with a slot, nothing to
       match without one (as the CPU without a sequence) */
    static int32_t longw[T_HCAP + 2];
    int32_t len1 = T_HCAP + 2, noslot[R] = { -1, 0, -1 };
    ms_params q = ms_params_default();
    for (j = 0; j < T_HCAP + 2; j++) longw[j] = j;
    q.bad_words = longw; q.bad_words_lens = &len1; q.n_bad_words = 1;
    for (r = 0; r < R; r++) pp[r] = &q;
    b.slots = noslot;
    CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_ERR_CAPACITY);
    CHECK_EQ_INT(rr[0], MS_OK); CHECK_EQ_INT(rr[1], MS_ERR_CAPACITY); CHECK_EQ_INT(rr[2], MS_OK);
    /* two rows appending to one slot: the second is refused; without
       accepting (or in ms_cuda_probs) they may share it */
    q.n_bad_words = 0;
    noslot[0] = 2; noslot[1] = 1; noslot[2] = 2;
    b.accept = 1;
    CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_ERR_INVALID_PARAM);
    CHECK_EQ_INT(rr[0], MS_OK); CHECK_EQ_INT(rr[1], MS_OK); CHECK_EQ_INT(rr[2], MS_ERR_INVALID_PARAM);
    CHECK_EQ_INT(ms_cuda_probs(cu, NULL, &b, dp, V), MS_OK);
    b.accept = 0;
    CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);
    b.slots = slots;
    for (r = 0; r < R; r++) pp[r] = &hr[r].p;
  }

  {
    /* generation: each step's token joins the history on the device
       (vLLM and HF words, HF decay; row 2's no_repeat_ngram until its
       sequence outgrows the ring) */
    static int32_t w0[] = { 1, 2, 2, 1, 3, 4 }, l0[] = { 2, 3, 1 }, w1[] = { 0, 1, 3, 3, 3 }, l1[] = { 2, 3 };
    int step, steps_ok = 0;
    for (r = 0; r < R; r++) {
      ms_params p = ms_params_default();
      p.profile = r ? MS_PROFILE_HF : MS_PROFILE_VLLM;
      p.seed = 900u + (uint64_t)r; p.has_seed = 1;
      if (r == 0) { p.bad_words = w0; p.bad_words_lens = l0; p.n_bad_words = 3; }
      if (r == 1) { p.bad_words = w1; p.bad_words_lens = l1; p.n_bad_words = 2; p.eos_token_id = 4; p.exp_decay_start = 5; p.exp_decay_factor = 1.3f; }
      if (r == 2) p.no_repeat_ngram_size = 2;
      hr[r].p = p;
      hr[r].n_prompt = 2; hr[r].prompt[0] = 1; hr[r].prompt[1] = 3;
      CHECK_EQ_INT(ms_seq_reset(hr[r].seq, hr[r].prompt, 2, V, &hr[r].p, 0), MS_OK);
      CHECK(ms_cuda_upload(cu, dids, hr[r].prompt, 8) == MS_OK);
      CHECK_EQ_INT(ms_cuda_seq_reset(cu, NULL, r, dids, 2, NULL), MS_OK);
    }
    b.positions = NULL; b.seeds = NULL; b.accept = 1;
    for (step = 0; step < 40; step++) {
      for (r = 0; r < R; r++) {
        t_fill(x + r * V, V, 1.0f);
        for (j = 0; j < 5; j++) x[r * V + j] += 4.0f;
      }
      CHECK(ms_cuda_upload(cu, dl, x, sizeof x) == MS_OK);
      CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);
      CHECK(ms_cuda_download(cu, tok, dt, sizeof tok) == MS_OK && ms_cuda_download(cu, out, dout, sizeof out) == MS_OK);
      for (r = 0; r < R; r++) {
        ms_output o;
        const int total = 2 + step;   /* the sequence before this step */
        if (r == 2 && total > T_HCAP) { CHECK_EQ_INT(out[r].status, MS_ERR_CAPACITY); continue; }
        memset(&o, 0, sizeof o);
        CHECK_EQ_INT(ms_sample(t_cpu, x + r * V, V, &hr[r].p, hr[r].seq, &o), MS_OK);
        CHECK_EQ_INT(out[r].status, MS_OK);
        CHECK_EQ_INT(tok[r], o.token);
        steps_ok += tok[r] == o.token;
        CHECK_EQ_INT(ms_seq_accept(hr[r].seq, o.token), MS_OK);
      }
    }
    printf("  generation: %d tokens equal the CPU's\n", steps_ok);
  }
  for (r = 0; r < R; r++) { ms_seq_destroy(hr[r].seq); hr[r].seq = NULL; }
  ms_cuda_free(cu, dl); ms_cuda_free(cu, dp); ms_cuda_free(cu, dt); ms_cuda_free(cu, dout);
  ms_cuda_free(cu, dids); ms_cuda_free(cu, dsl);
  ms_cuda_destroy(cu);
}

/* ---- one batch through both calls, rows against the CPU ----------------------- */
/* Device buffers for t_batch_run: logits, probs, tokens, outputs, top lists. */
typedef struct t_dev { void *dl, *dp, *dt, *dout, *dtop; } t_dev;
static int t_dev_alloc(ms_cuda *cu, t_dev *g, size_t logits_bytes, int rows, int top_stride) {
  memset(g, 0, sizeof *g);
  return ms_cuda_malloc(cu, &g->dl, logits_bytes) == MS_OK && ms_cuda_malloc(cu, &g->dp, logits_bytes) == MS_OK &&
         ms_cuda_malloc(cu, &g->dt, (size_t)rows * 4) == MS_OK &&
         ms_cuda_malloc(cu, &g->dout, (size_t)rows * sizeof(ms_cuda_out)) == MS_OK &&
         ms_cuda_malloc(cu, &g->dtop, (size_t)rows * (size_t)top_stride * sizeof(ms_logprob)) == MS_OK;
}
/* A sampler of its own (split: ms_cuda_desc.split, topp: .topp) with t_dev
   buffers for rows x max_vocab logits; 0 (checks failed) when it cannot. */
static int t_make(ms_cuda **cu, t_dev *g, int rows, int max_vocab, int split, int topp, int top_stride) {
  ms_cuda_desc d;
  memset(&d, 0, sizeof d);
  d.max_rows = rows; d.max_vocab = max_vocab; d.split = split; d.topp = topp;
  *cu = NULL;
  CHECK_EQ_INT(ms_cuda_create(cu, &d, t_msg, sizeof t_msg), MS_OK);
  if (!*cu) return 0;
  CHECK(t_dev_alloc(*cu, g, (size_t)rows * (size_t)max_vocab * 4, rows, top_stride));
  return 1;
}
static void t_dev_free(ms_cuda *cu, t_dev *g) {
  ms_cuda_free(cu, g->dl); ms_cuda_free(cu, g->dp); ms_cuda_free(cu, g->dt); ms_cuda_free(cu, g->dout); ms_cuda_free(cu, g->dtop);
}
/* Rows pp[0..R) of R x V logits through ms_cuda_probs, then ms_cuda_sample
   (no slots); the distributions, tokens, outputs and top lists come back. */
static void t_batch_run(ms_cuda *cu, t_dev *g, const float *logits, int R, int V, const ms_params **pp, int top_stride,
                        float *probs, int32_t *tok, ms_cuda_out *out, ms_logprob *top) {
  ms_cuda_batch b;
  CHECK(ms_cuda_upload(cu, g->dl, logits, (size_t)R * (size_t)V * 4) == MS_OK);
  memset(&b, 0, sizeof b);
  b.n_rows = R; b.vocab = V; b.logits = g->dl; b.row_stride = (size_t)V; b.params = pp;
  b.tokens = g->dt; b.out = g->dout; b.top = g->dtop; b.top_stride = top_stride;
  CHECK(ms_cuda_probs(cu, NULL, &b, g->dp, (size_t)V) == MS_OK);
  CHECK(ms_cuda_download(cu, probs, g->dp, (size_t)R * (size_t)V * 4) == MS_OK);
  CHECK(ms_cuda_sample(cu, NULL, &b) == MS_OK);
  CHECK(ms_cuda_download(cu, tok, g->dt, (size_t)R * 4) == MS_OK);
  CHECK(ms_cuda_download(cu, out, g->dout, (size_t)R * sizeof(ms_cuda_out)) == MS_OK);
  CHECK(ms_cuda_download(cu, top, g->dtop, (size_t)R * (size_t)top_stride * sizeof(ms_logprob)) == MS_OK);
}
/* One row of t_batch_run's results against ms_probs / ms_sample (no
   sequence): the status, the distribution within 1e-5 (*e: the largest
   difference), the token, and with logprobs the token's logprob, rank and
   top list. cprobs: V floats of scratch, the CPU's distribution after;
   *o: the CPU's output (its top list in ctop). Returns 1 when they differ. */
static int t_row_differs(ms_sampler *cpu, const float *x, int V, const ms_params *p, const float *probs, int32_t tok,
                         const ms_cuda_out *out, const ms_logprob *top, int top_stride, float *cprobs, ms_logprob *ctop,
                         ms_output *o, ms_result *crc, double *e) {
  int j, here = 0;
  *e = 0.0;
  *crc = ms_probs(cpu, x, V, p, NULL, cprobs);
  memset(o, 0, sizeof *o);
  o->top = ctop; o->top_capacity = top_stride;
  if (*crc == MS_OK) *crc = ms_sample(cpu, x, V, p, NULL, o);
  if (out->status != (int32_t)*crc) return 1;
  if (*crc != MS_OK) return tok != -1;
  for (j = 0; j < V; j++) { double q = fabs((double)probs[j] - (double)cprobs[j]); if (q > *e) *e = q; }
  if (*e > 1e-5 || tok != o->token) here = 1;
  if (p->logprobs >= 0) {
    if (!(fabs((double)out->logprob - (double)o->logprob) <= 1e-4) || out->rank != o->rank || out->n_top != o->n_top) here = 1;
    for (j = 0; j < o->n_top && j < out->n_top; j++)
      if (top[j].token != ctop[j].token || !(fabs((double)top[j].logprob - (double)ctop[j].logprob) <= 1e-4)) here = 1;
  }
  return here;
}

/* Every row of a t_batch_run against the CPU (t_row_differs), the first
   few that differ printed under `what`. Returns how many differ; *ok (if
   given) counts the rows the CPU sampled. top_stride <= 32. */
static int t_rows_differ(const float *logits, int R, int V, const ms_params *ps, const float *probs, const int32_t *tok,
                         const ms_cuda_out *out, const ms_logprob *top, int top_stride, const char *what, int *ok) {
  static ms_logprob ctop[32];
  int r, bad = 0;
  for (r = 0; r < R; r++) {
    ms_output o;
    ms_result crc;
    double e;
    if (t_row_differs(t_cpu, logits + (size_t)r * V, V, &ps[r], probs + (size_t)r * V, tok[r], &out[r], top + (size_t)r * top_stride,
                      top_stride, t_cprobs, ctop, &o, &crc, &e) && bad++ < 6)
      printf("  %s row %d: status %d / %d, token %d / %d, max |dp| %.3g, rank %d / %d\n", what, r, out[r].status, (int)crc, tok[r],
             o.token, e, out[r].rank, o.rank);
    if (ok) *ok += crc == MS_OK;
  }
  return bad;
}

/* Equal logits (0) but 48 distinct larger ones in thread 0's groups of
   four ids (0-3, 1024-1027, ...: on one or two blocks of a 12000-id row,
   one thread of the statistics holds them all). */
static void t_spikes_in_thread0(float *x, int V) {
  int j;
  for (j = 0; j < V; j++) x[j] = 0.0f;
  for (j = 0; j < 48; j++) x[(j & 3) + 1024 * (j >> 2)] = 5.0f + 0.01f * (float)j;
}

/* ---- splits, vocabulary edges, bad rows in split rows ---------------------- */
/* Every split of a row over blocks (one, 2, 7, 32: chunks past the end of
   a small row are empty) and vocabularies from 1 to 150001 (> 65536: the
   draw's tiles hold several 32-id groups), with raw and processed
   logprobs, rows that are mostly -inf, and NaN / +Inf in the last chunk.
   Rows 8-11 take top_k's two routes: the candidates (few keys from the
   k-th largest's radix bin up) and the full radix selection (k > 1024, or
   ties that fill the bin: logits in steps of 0.5, all equal). */
static void test_gpu_splits_and_vocab_edges(void) {
  static const int32_t splits[] = { -1, 2, 7, 32 };
  static const int vocabs[] = { 1, 2, 33, 37, 1000, 5000, 150001 };
  enum { R = 12, VMAX = 150001 };
  static float logits[R * VMAX], probs[R * VMAX], cprobs[VMAX];
  static ms_logprob top[R * 8], ctop[8];
  ms_sampler *cpu = NULL;
  ms_sampler_desc sd;
  ms_params ps[R];
  const ms_params *pp[R];
  int32_t tok[R];
  ms_cuda_out out[R];
  int si, vi, r, j, rows = 0, bad = 0;
  if (!t_gpu()) SKIP(t_why);
  memset(&sd, 0, sizeof sd);
  sd.max_vocab = VMAX;
  CHECK(ms_sampler_create(&cpu, &sd) == MS_OK);
  if (!cpu) return;
  for (si = 0; si < 4; si++) {
    ms_cuda *cu;
    t_dev g;
    if (!t_make(&cu, &g, R, VMAX, splits[si], MS_CUDA_TOPP_DEFAULT, 8)) break;
    for (vi = 0; vi < 7; vi++) {
      const int V = vocabs[vi];
      /* emulator time: the largest vocabulary (several ids per draw tile)
         in one block and over 7 only */
      if (t_small() && V > 65536 && (splits[si] == 2 || splits[si] == 32)) continue;
      for (r = 0; r < R; r++) {
        float *x = logits + (size_t)r * (size_t)V;
        ps[r] = ms_params_default();
        ps[r].temperature = r == 0 ? 0.0f : 0.6f + 0.2f * (float)(r % 8);   /* vLLM: T <= 2 */
        ps[r].top_k = r == 2 ? 5 : 0;
        ps[r].top_p = r == 3 ? 0.9f : 1.0f;
        ps[r].min_p = r == 4 ? 0.05f : 0.0f;
        ps[r].profile = r == 5 ? MS_PROFILE_HF : MS_PROFILE_VLLM;
        ps[r].logprobs = r % 3 == 0 ? -1 : 1 + r % 8;
        ps[r].logprobs_mode = r % 2 ? MS_LOGPROBS_RAW : MS_LOGPROBS_PROCESSED;
        ps[r].seed = (uint64_t)(si * 100 + vi * 10 + r); ps[r].has_seed = 1;
        pp[r] = &ps[r];
        t_fill(x, V, 2.0f);
        if (r == 6) { for (j = 0; j < V; j++) x[j] = -INFINITY; x[V - 1] = 1.0f; x[V / 2] = 0.5f; }
        if (r == 7 && V > 1) x[V - 1] = vi % 2 ? (float)NAN : INFINITY;
        if (r == 8) { ps[r].top_k = 50; ps[r].top_p = 0.9f; for (j = 0; j < V; j++) x[j] = floorf(x[j] * 2.0f) * 0.5f; }
        if (r == 9) { ps[r].top_k = 1500; ps[r].top_p = 0.95f; }
        if (r == 10) { ps[r].top_k = 40; ps[r].top_p = 0.8f; ps[r].min_p = 0.1f; ps[r].profile = MS_PROFILE_HF; }
        if (r == 11) { ps[r].top_k = 3; ps[r].min_p = 0.05f; for (j = 0; j < V; j++) x[j] = 0.25f; }
      }
      t_batch_run(cu, &g, logits, R, V, pp, 8, probs, tok, out, top);
      for (r = 0; r < R; r++) {
        ms_output o;
        ms_result crc;
        double e;
        rows++;
        if (t_row_differs(cpu, logits + (size_t)r * (size_t)V, V, &ps[r], probs + (size_t)r * (size_t)V, tok[r], &out[r],
                          top + r * 8, 8, cprobs, ctop, &o, &crc, &e)) {
          bad++;
          if (bad <= 10)
            printf("  split %d vocab %d row %d: status %d / cpu %d, token %d / %d, max |dp| %.3g, lp %.6g / %.6g, rank %d / %d, n_top %d / %d\n",
                   splits[si], V, r, out[r].status, crc, tok[r], o.token, e, (double)out[r].logprob, (double)o.logprob,
                   out[r].rank, o.rank, out[r].n_top, o.n_top);
        }
      }
    }
    t_dev_free(cu, &g);
    ms_cuda_destroy(cu);
  }
  printf("  %d rows, %d differ from the CPU\n", rows, bad);
  CHECK_EQ_INT(bad, 0);
  ms_sampler_destroy(cpu);
}

/* ---- cuts inside ties: the SGLang profile's positions ----------------------
   Rows of a few distinct logits, each held by a crowd of tokens at random
   ids (the rest -inf or far below), so top_k's and top_p's cuts fall
   inside ties: SGLang keeps the lower ids of the tie up to its position
   (ms_k_ties finds the last one), vLLM and HF keep the whole tie. k up to
   past 1024, p in 64ths, min_p; one block per row and split rows; every
   distribution, token and processed logprob list equal to the CPU's. */
static void test_gpu_tie_cuts_match_cpu(void) {
  static const int32_t splits[] = { -1, 1, 5 };
  static const ms_profile profs[] = { MS_PROFILE_SGLANG, MS_PROFILE_SGLANG, MS_PROFILE_VLLM, MS_PROFILE_HF };
  enum { R = 8, VMAX = T_MAXV };
  static float logits[R * VMAX], probs[R * VMAX], cprobs[VMAX];
  static ms_logprob top[R * 8], ctop[8];
  ms_params ps[R];
  const ms_params *pp[R];
  int32_t tok[R];
  ms_cuda_out out[R];
  int si, it, r, j, rows = 0, bad = 0, cut_inside = 0;
  const int iters = t_small() ? 3 : 12, V = t_small() ? 5000 : VMAX;
  if (!t_gpu()) SKIP(t_why);
  for (si = 0; si < 3; si++) {
    ms_cuda *cu;
    t_dev g;
    if (!t_make(&cu, &g, R, VMAX, splits[si], MS_CUDA_TOPP_DEFAULT, 8)) break;
    for (it = 0; it < iters; it++) {
      for (r = 0; r < R; r++) {
        float *x = logits + (size_t)r * (size_t)V, level = 0.0f;
        int lv, n_levels = 1 + (int)t_rand(4), total = 0;
        /* even rows: nothing else, and often one crowd of 64 n equal
           weights, so that p * Z falls exactly on a position (where
           SGLang's <= and vLLM's < differ) */
        const int exact = r % 2 == 0 && t_rand(2);
        if (exact) n_levels = 1;
        for (j = 0; j < V; j++) x[j] = (r % 2 == 0 || t_rand(3) == 0) ? -INFINITY : -40.0f - (float)t_rand(8);
        for (lv = 0; lv < n_levels; lv++) {
          int size = 1 + (int)t_rand((uint32_t)(V / (2 * n_levels)));
          if (t_rand(4) == 0) size = 1 + (int)t_rand(4);
          if (exact) { size = 64 * (1 + (int)t_rand(20)); for (j = 0; j < size; j++) x[j] = level; break; }
          level -= (float)(t_rand(5) + 1) * 0.37f;
          for (j = 0; j < size; j++) x[t_rand((uint32_t)V)] = level;
          total += size;
        }
        ps[r] = ms_params_default();
        ps[r].profile = profs[r % 4];
        ps[r].temperature = (const float[]){ 0.5f, 1.0f, 1.3f }[t_rand(3)];
        ps[r].top_k = t_rand(4) ? 1 + (int32_t)t_rand((uint32_t)(r % 2 ? total + 1 : 1500)) : 0;
        ps[r].top_p = t_rand(4) ? (float)(1 + t_rand(63)) / 64.0f : 1.0f;
        ps[r].min_p = t_rand(3) == 0 ? (const float[]){ 0.05f, 0.3f, 0.6f }[t_rand(3)] : 0.0f;
        if (ps[r].top_k >= V) ps[r].top_k = 0;
        ps[r].logprobs = r % 3 == 0 ? -1 : 8;
        ps[r].logprobs_mode = MS_LOGPROBS_PROCESSED;
        ps[r].seed = (uint64_t)(si * 1000 + it * 10 + r); ps[r].has_seed = 1;
        pp[r] = &ps[r];
      }
      t_batch_run(cu, &g, logits, R, V, pp, 8, probs, tok, out, top);
      for (r = 0; r < R; r++) {
        const float *x = logits + (size_t)r * (size_t)V;
        ms_output o;
        ms_result crc;
        double e;
        int here, kept = 0, last = -1;
        rows++;
        here = t_row_differs(t_cpu, x, V, &ps[r], probs + (size_t)r * (size_t)V, tok[r], &out[r], top + r * 8, 8, cprobs,
                             ctop, &o, &crc, &e);
        if (crc == MS_OK) {
          /* a kept value whose tie continues past the last kept id: the cut fell inside */
          for (j = 0; j < V; j++) if (cprobs[j] > 0.0f) { kept++; last = j; }
          for (j = last + 1; j < V && last >= 0; j++) if (cprobs[j] == 0.0f && x[j] == x[last]) { cut_inside++; break; }
        }
        if (here) {
          bad++;
          if (bad <= 10)
            printf("  split %d row %d (%s k %d p %g min_p %g T %g): status %d / cpu %d, token %d / %d, max |dp| %.3g, kept %d, rank %d / %d\n",
                   splits[si], r, ms_profile_name(ps[r].profile), ps[r].top_k, (double)ps[r].top_p, (double)ps[r].min_p,
                   (double)ps[r].temperature, out[r].status, crc, tok[r], o.token, e, kept, out[r].rank, o.rank);
        }
      }
    }
    t_dev_free(cu, &g);
    ms_cuda_destroy(cu);
  }
  printf("  %d rows (%d with a cut inside a tie), %d differ from the CPU\n", rows, cut_inside, bad);
  CHECK_EQ_INT(bad, 0);
  CHECK(cut_inside > 0);   /* the rows must reach the tie cuts */
}

/* ---- top_p by bins (MS_CUDA_TOPP_BINS) and its fallback -----------------------
   The same rows through a radix and a bins sampler: both equal the CPU
   (distributions, tokens, processed logprobs). The route each row took is
   read from the end of its selection state (pbins, sums_done: the last
   two words of Sel): smooth rows, top_k + top_p, HF with min_p, a cold
   temperature, a logprobs row (which ms_k_row finishes) and a row of
   logits in steps of 1/8 (the bins that may hold its threshold hold a tie
   of a few hundred: vLLM keeps it whole) take the bins; a row of equal
   logits (all 12000 in the bins, more than the list's 4096) falls back to
   the radix passes. The rows whose top_p stands first (no top_k, no vLLM
   min_p) take the statistics' bins (pbins 2), the others P_PBIN's (1);
   all P_PBIN's with $MYSAMPLE_CUDA_PBSTATS=0 (make test runs both). */
static int t_pbstats(void) { const char *e = getenv("MYSAMPLE_CUDA_PBSTATS"); return !(e && !strcmp(e, "0")); }
static void test_gpu_topp_bins_route(void) {
  enum { R = 8, V = 12000 };
  static float logits[R * V], probs[2][R * V], cprobs[V];
  static ms_logprob top[2][R * 5], ctop[5];
  ms_params ps[R];
  const ms_params *pp[R];
  int32_t tok[2][R], sel_tail[2];
  ms_cuda_out out[2][R];
  int mode, r, j, bad = 0;
  int want_bins[R] = { 2, 0, 1, 2, 2, 2, 1, 2 };
  if (!t_gpu()) SKIP(t_why);
  for (r = 0; r < R && !t_pbstats(); r++) if (want_bins[r] == 2) want_bins[r] = 1;
  for (r = 0; r < R; r++) {
    float *x = logits + (size_t)r * V;
    ps[r] = ms_params_default();
    ps[r].top_p = 0.9f;
    ps[r].seed = 900u + (uint64_t)r; ps[r].has_seed = 1;
    t_fill(x, V, r == 5 ? 3.0f : 1.0f);
    if (r == 1) { for (j = 0; j < V; j++) x[j] = 0.5f; ps[r].top_p = 0.5f; }
    if (r == 2) { ps[r].top_k = 2000; ps[r].top_p = 0.8f; }
    if (r == 3) { ps[r].profile = MS_PROFILE_HF; ps[r].min_p = 0.05f; }
    if (r == 4) ps[r].temperature = 0.3f;
    if (r == 5) { ps[r].top_p = 0.97f; ps[r].logprobs = 5; ps[r].logprobs_mode = MS_LOGPROBS_PROCESSED; }
    if (r == 6) { ps[r].top_p = 0.2f; ps[r].min_p = 0.01f; }
    if (r == 7) for (j = 0; j < V; j++) x[j] = floorf(x[j] * 8.0f) * 0.125f;
    pp[r] = &ps[r];
  }
  for (mode = 0; mode < 2; mode++) {
    ms_cuda *cu;
    t_dev g;
    if (!t_make(&cu, &g, R, V, 0, mode ? MS_CUDA_TOPP_BINS : MS_CUDA_TOPP_RADIX, 5)) return;
    t_batch_run(cu, &g, logits, R, V, pp, 5, probs[mode], tok[mode], out[mode], top[mode]);
    for (r = 0; r < R; r++) {
      const void *tail = (const void *)(uintptr_t)(cu->d_sel + (ms__CUdeviceptr)((size_t)(r + 1) * MS__CUDA_SEL_BYTES - 8));
      CHECK(ms_cuda_download(cu, sel_tail, tail, 8) == MS_OK);
      if (mode == 0) CHECK_MSG(sel_tail[0] == 0 && sel_tail[1] == 0, "row %d radix: pbins %d sums_done %d", r, sel_tail[0], sel_tail[1]);
      else CHECK_MSG(sel_tail[0] == want_bins[r] && sel_tail[1] == (want_bins[r] != 0), "row %d bins: pbins %d sums_done %d, want %d",
                     r, sel_tail[0], sel_tail[1], want_bins[r]);
    }
    t_dev_free(cu, &g);
    ms_cuda_destroy(cu);
  }
  for (r = 0; r < R; r++) {
    for (mode = 0; mode < 2; mode++) {
      ms_output o;
      ms_result crc;
      double e;
      if (t_row_differs(t_cpu, logits + (size_t)r * V, V, &ps[r], probs[mode] + (size_t)r * V, tok[mode][r], &out[mode][r],
                        top[mode] + r * 5, 5, cprobs, ctop, &o, &crc, &e) && bad++ < 6)
        printf("  %s row %d: token %d / cpu %d, max |dp| %.3g, rank %d / %d\n", mode ? "bins" : "radix", r, tok[mode][r], o.token, e,
               out[mode][r].rank, o.rank);
    }
  }
  CHECK_EQ_INT(bad, 0);
}

/* ---- top_p by bins on 128k vocabularies ---------------------------------------
   The bins' range of keys (P_PBIN) must hold the threshold for the exact
   selection on its list (P_PGATHER) to decide: on real-sized rows of
   several spreads, temperatures and top_p (with top_k, min_p, HF) every
   row takes the bins (pbins and sums_done set, read from the end of its
   selection state: the statistics' but for the top_k row) and equals the
   CPU. */
static void test_gpu_topp_bins_large(void) {
  enum { R = 6, V = 128256 };
  static float logits[R * V], probs[R * V], cprobs[V];
  static ms_logprob top[R * 5], ctop[5];
  const float sigma[R] = { 1.0f, 2.0f, 3.0f, 1.0f, 5.0f, 0.5f };
  const float top_p[R] = { 0.9f, 0.95f, 0.5f, 0.99f, 0.9f, 0.8f };
  ms_params ps[R];
  const ms_params *pp[R];
  int32_t tok[R], sel_tail[2];
  ms_cuda_out out[R];
  ms_cuda *cu;
  ms_sampler *cpu = NULL;
  ms_sampler_desc sd;
  t_dev g;
  int r, bad = 0;
  if (!t_gpu()) SKIP(t_why);
  memset(&sd, 0, sizeof sd);
  sd.max_vocab = V;
  CHECK_EQ_INT(ms_sampler_create(&cpu, &sd), MS_OK);
  if (!cpu) return;
  for (r = 0; r < R; r++) {
    ps[r] = ms_params_default();
    ps[r].top_p = top_p[r];
    ps[r].seed = 1300u + (uint64_t)r; ps[r].has_seed = 1;
    t_fill(logits + (size_t)r * V, V, sigma[r]);
    if (r == 1) ps[r].temperature = 0.7f;
    if (r == 3) { ps[r].temperature = 1.5f; ps[r].top_k = 20000; }
    if (r == 4) { ps[r].profile = MS_PROFILE_HF; ps[r].min_p = 0.001f; }
    if (r == 5) { ps[r].logprobs = 5; ps[r].logprobs_mode = MS_LOGPROBS_PROCESSED; }
    pp[r] = &ps[r];
  }
  if (!t_make(&cu, &g, R, V, 0, MS_CUDA_TOPP_BINS, 5)) { ms_sampler_destroy(cpu); return; }
  t_batch_run(cu, &g, logits, R, V, pp, 5, probs, tok, out, top);
  for (r = 0; r < R; r++) {
    const void *tail = (const void *)(uintptr_t)(cu->d_sel + (ms__CUdeviceptr)((size_t)(r + 1) * MS__CUDA_SEL_BYTES - 8));
    ms_output o;
    ms_result crc;
    double e;
    CHECK(ms_cuda_download(cu, sel_tail, tail, 8) == MS_OK);
    CHECK_MSG(sel_tail[0] == (r == 3 || !t_pbstats() ? 1 : 2) && sel_tail[1] == 1, "row %d: pbins %d sums_done %d", r, sel_tail[0],
              sel_tail[1]);
    if (t_row_differs(cpu, logits + (size_t)r * V, V, &ps[r], probs + (size_t)r * V, tok[r], &out[r], top + r * 5, 5,
                      cprobs, ctop, &o, &crc, &e) && bad++ < 6)
      printf("  row %d: token %d / cpu %d, max |dp| %.3g, rank %d / %d\n", r, tok[r], o.token, e, out[r].rank, o.rank);
  }
  t_dev_free(cu, &g);
  ms_cuda_destroy(cu);
  ms_sampler_destroy(cpu);
  CHECK_EQ_INT(bad, 0);
}

/* ---- top_p's bins counted by the statistics (F_PB_STATS) ----------------------
   Rows at their edges, against the CPU, and the same bits with the bins
   counted by P_PBIN ($MYSAMPLE_CUDA_PBSTATS=0). The statistics bin
   relative to the largest of 1024 sampled logits (runs of 8 at 128
   places: t_pb_sampled, as pb_sample in kernels.cu) and list the keys
   above it: a smooth row; five spikes 12 above the rest (the threshold
   among the listed keys, the bins 16 scaled logits below them); a row
   whose sampled ids are all low (every other key above the anchor: too
   many to list, so the radix passes decide); a row of -inf but for 100
   unsampled ids (no finite sample: all of them listed); logits in steps
   of 1/4 (ties at the anchor); a cold temperature. */
static int t_pb_sampled(int i, int V) {
  int g;
  for (g = 0; g < 128; g++) {
    const int base = (int)(((long long)g * (V - 8)) / 127);
    if (i >= base && i < base + 8) return 1;
  }
  return 0;
}
static void test_gpu_topp_bins_stats(void) {
  enum { R = 6, V = 12000 };
  static float logits[R * V], probs[2][R * V], cprobs[V];
  static ms_logprob top[2][R * 5], ctop[5];
  const int want_bins[R] = { 2, 2, 0, 2, 2, 2 };
  ms_params ps[R];
  const ms_params *pp[R];
  int32_t tok[2][R], sel_tail[2];
  ms_cuda_out out[2][R];
  int m, r, j, k, bad = 0;
  if (!t_gpu()) SKIP(t_why);
  for (r = 0; r < R; r++) {
    float *x = logits + (size_t)r * V;
    ps[r] = ms_params_default();
    ps[r].top_p = 0.9f;
    ps[r].seed = 4200u + (uint64_t)r; ps[r].has_seed = 1;
    t_fill(x, V, 1.0f);
    pp[r] = &ps[r];
  }
  for (k = 0; k < 5; k++) logits[1 * V + 7 + 2399 * k] += 12.0f;
  for (j = 0; j < V; j++) if (t_pb_sampled(j, V)) logits[2 * V + j] = -10.0f;
  for (j = 0, k = 0; j < V; j++) {
    if (k < 100 && j % 97 == 50 && !t_pb_sampled(j, V)) k++;
    else logits[3 * V + j] = -INFINITY;
  }
  CHECK_EQ_INT(k, 100);
  for (j = 0; j < V; j++) logits[4 * V + j] = floorf(logits[4 * V + j] * 4.0f) * 0.25f;
  ps[5].temperature = 0.05f; ps[5].top_p = 0.5f;
  for (m = 0; m < 2; m++) {
    ms_cuda *cu;
    t_dev g;
    if (m) t_setenv("MYSAMPLE_CUDA_PBSTATS", "0");
    if (!t_make(&cu, &g, R, V, 0, MS_CUDA_TOPP_BINS, 5)) { t_setenv("MYSAMPLE_CUDA_PBSTATS", NULL); return; }
    t_batch_run(cu, &g, logits, R, V, pp, 5, probs[m], tok[m], out[m], top[m]);
    for (r = 0; r < R; r++) {
      const void *tail = (const void *)(uintptr_t)(cu->d_sel + (ms__CUdeviceptr)((size_t)(r + 1) * MS__CUDA_SEL_BYTES - 8));
      CHECK(ms_cuda_download(cu, sel_tail, tail, 8) == MS_OK);
      if (m == 0) CHECK_MSG(sel_tail[0] == want_bins[r] && sel_tail[1] == (want_bins[r] != 0), "row %d: pbins %d sums_done %d, want %d",
                            r, sel_tail[0], sel_tail[1], want_bins[r]);
      else CHECK_MSG(sel_tail[0] <= 1, "row %d without the statistics' bins: pbins %d", r, sel_tail[0]);
    }
    t_dev_free(cu, &g);
    ms_cuda_destroy(cu);
  }
  t_setenv("MYSAMPLE_CUDA_PBSTATS", NULL);
  for (r = 0; r < R; r++) {
    /* (row 2: the radix passes' Z, not the bins' exact one, so other bits) */
    if (r != 2) CHECK_MSG(memcmp(probs[0] + (size_t)r * V, probs[1] + (size_t)r * V, (size_t)V * sizeof(float)) == 0 &&
                          tok[0][r] == tok[1][r], "row %d: other bits without the statistics' bins", r);
  }
  for (r = 0; r < R; r++) {
    ms_output o;
    ms_result crc;
    double e;
    if (t_row_differs(t_cpu, logits + (size_t)r * V, V, &ps[r], probs[0] + (size_t)r * V, tok[0][r], &out[0][r], top[0] + r * 5, 5,
                      cprobs, ctop, &o, &crc, &e) && bad++ < 6)
      printf("  row %d: token %d / cpu %d, max |dp| %.3g, status %d / %d\n", r, tok[0][r], o.token, e, out[0][r].status, (int)crc);
  }
  CHECK_EQ_INT(bad, 0);
}

/* Six rows over the GPU's routes, for tests that compare two builds or
   launch modes bit for bit: greedy, top_p, top_k + top_p (candidates),
   min_p, processed logprobs (5), a large top_k with a temperature; logits
   at three spreads. run[m] holds t_batch_run's results of mode m. */
enum { T_ROUTES = 6, T_ROUTES_MAXV = 9001 };
typedef struct {
  int V;
  float logits[T_ROUTES * T_ROUTES_MAXV];
  ms_params ps[T_ROUTES];
  const ms_params *pp[T_ROUTES];
  struct {
    float probs[T_ROUTES * T_ROUTES_MAXV];
    int32_t tok[T_ROUTES];
    ms_cuda_out out[T_ROUTES];
    ms_logprob top[T_ROUTES * 5];
  } run[2];
} t_routes;
/* The rows at vocabulary V (<= T_ROUTES_MAXV), seeds from seed. */
static void t_routes_init(t_routes *t, int V, uint64_t seed) {
  ms_params *ps = t->ps;
  int r;
  t->V = V;
  for (r = 0; r < T_ROUTES; r++) {
    ps[r] = ms_params_default();
    ps[r].seed = seed + (uint64_t)r; ps[r].has_seed = 1;
    t_fill(t->logits + (size_t)r * V, V, 1.0f + 0.5f * (float)(r % 3));
    t->pp[r] = &ps[r];
  }
  ps[0].temperature = 0.0f;
  ps[1].top_p = 0.9f;
  ps[2].top_k = 50; ps[2].top_p = 0.95f;
  ps[3].min_p = 0.05f;
  ps[4].top_p = 0.8f; ps[4].logprobs = 5; ps[4].logprobs_mode = MS_LOGPROBS_PROCESSED;
  ps[5].top_k = 300; ps[5].temperature = 0.7f;
}
/* t_batch_run of the rows into run[m] (cu made by t_make for T_ROUTES rows
   of t->V, top stride 5). */
static void t_routes_run(ms_cuda *cu, t_dev *g, t_routes *t, int m) {
  t_batch_run(cu, g, t->logits, T_ROUTES, t->V, t->pp, 5, t->run[m].probs, t->run[m].tok, t->run[m].out, t->run[m].top);
}
/* The two runs gave the same bits. */
static void t_routes_same(const t_routes *t) {
  int r;
  CHECK(memcmp(t->run[0].probs, t->run[1].probs, (size_t)T_ROUTES * (size_t)t->V * sizeof(float)) == 0);
  CHECK(memcmp(t->run[0].tok, t->run[1].tok, sizeof t->run[0].tok) == 0);
  CHECK(memcmp(t->run[0].top, t->run[1].top, sizeof t->run[0].top) == 0);
  for (r = 0; r < T_ROUTES; r++)
    CHECK(t->run[0].out[r].token == t->run[1].out[r].token && t->run[0].out[r].logprob == t->run[1].out[r].logprob);
}

/* Launches with programmatic stream serialization (ms_cuda_pdl: the
   kernels start while the previous one finishes, griddepcontrol.wait
   inside) give the same distributions, tokens and logprobs as plain
   launches ($MYSAMPLE_CUDA_PDL = 0), over every route: greedy, top_p,
   top_k + top_p (candidates), min_p, processed logprobs, several blocks
   per row and one. The emulator reports sm_90 and takes cuLaunchKernelEx,
   so there PDL must be on; so on a GPU of sm_90 or newer. On the
   emulator, a driver that refuses the attribute too. */
static void test_gpu_pdl_matches_plain(void) {
  enum { R = T_ROUTES, V = 9000 };
  static t_routes t;
  int m, si;
  if (!t_gpu()) SKIP(t_why);
  t_routes_init(&t, V, 90u);
  for (si = 0; si < 2; si++) {
    for (m = 0; m < 2; m++) {
      ms_cuda *cu;
      t_dev g;
      t_setenv("MYSAMPLE_CUDA_PDL", m ? "0" : "1");
      if (!t_make(&cu, &g, R, V, si ? 1 : 0, MS_CUDA_TOPP_DEFAULT, 5)) { t_setenv("MYSAMPLE_CUDA_PDL", NULL); return; }
      if (m) CHECK_EQ_INT(ms_cuda_pdl(cu), 0);
      else if (t_emu || (strncmp(ms_cuda_target(cu), "sm_", 3) == 0 && atoi(ms_cuda_target(cu) + 3) >= 90))
        CHECK_EQ_INT(ms_cuda_pdl(cu), 1);
      t_routes_run(cu, &g, &t, m);
      t_dev_free(cu, &g);
      ms_cuda_destroy(cu);
    }
    t_routes_same(&t);
  }
  t_setenv("MYSAMPLE_CUDA_PDL", NULL);
  if (t_emu) {
    /* a driver that refuses the attribute: the launch goes plain, and so
       does the ms_cuda from then on, with the same results */
    ms_cuda *cu;
    t_dev g;
    t_setenv("MYSAMPLE_CUDA_EMU_NO_PDL", "1");
    if (t_make(&cu, &g, R, V, 0, MS_CUDA_TOPP_DEFAULT, 5)) {
      CHECK_EQ_INT(ms_cuda_pdl(cu), 1);
      t_routes_run(cu, &g, &t, 0);
      CHECK_EQ_INT(ms_cuda_pdl(cu), 0);
      CHECK(memcmp(t.run[0].probs, t.run[1].probs, (size_t)R * V * sizeof(float)) == 0);
      CHECK(memcmp(t.run[0].tok, t.run[1].tok, sizeof t.run[0].tok) == 0);
      t_dev_free(cu, &g);
      ms_cuda_destroy(cu);
    }
    t_setenv("MYSAMPLE_CUDA_EMU_NO_PDL", NULL);
  }
}

/* The full-row passes' L2 prefetches (-DMS_L2PF=32 among NVRTC's options:
   cp.async.bulk.prefetch.L2 a step ahead on sm_90) change no bit of a
   result: distributions, tokens and logprobs over every route, several
   blocks per row and one, rows that do not start on 16 bytes (V odd). On
   a GPU this runs the prefetching build; the emulator always prefetches
   (its kernels are compiled with MS_L2PF) and fails a launch whose
   prefetch is misaligned or leaves its allocation, so there the test also
   reads its counters: the passes asked for some bytes, and no more than
   a few reads of the batch. */
static void test_gpu_l2_prefetch(void) {
  enum { R = T_ROUTES, V = T_ROUTES_MAXV };
  static t_routes t;
  int m, si;
  void (*emu_prefetches)(unsigned long long *, unsigned long long *) = NULL;
  if (!t_gpu()) SKIP(t_why);
#ifndef _WIN32   /* (the emulator is a Linux library) */
  if (t_emu) {
    const char *path = getenv("MYSAMPLE_CUDA_DRIVER_PATH");
    void *h = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    void *sym = h ? dlsym(h, "msEmuGetPrefetches") : NULL;
    memcpy(&emu_prefetches, &sym, sizeof sym);
    CHECK_MSG(emu_prefetches != NULL, "the emulator (%s) has no msEmuGetPrefetches", path ? path : "?");
  }
#endif
  t_routes_init(&t, V, 70u);
  for (si = 0; si < 2; si++) {
    unsigned long long n0 = 0, b0 = 0, n1 = 0, b1 = 0;   /* the emulator's counters around the prefetching run */
    for (m = 0; m < 2; m++) {
      ms_cuda *cu;
      t_dev g;
      if (m) t_setenv("MYSAMPLE_CUDA_NVRTC_OPTIONS", "-DMS_L2PF=32");
      else t_setenv("MYSAMPLE_CUDA_NVRTC_OPTIONS", NULL);
      if (!t_make(&cu, &g, R, V, si ? 1 : 0, MS_CUDA_TOPP_DEFAULT, 5)) { t_setenv("MYSAMPLE_CUDA_NVRTC_OPTIONS", NULL); return; }
      if (emu_prefetches && m) emu_prefetches(&n0, &b0);
      t_routes_run(cu, &g, &t, m);
      if (emu_prefetches && m) emu_prefetches(&n1, &b1);
      t_dev_free(cu, &g);
      ms_cuda_destroy(cu);
    }
    t_setenv("MYSAMPLE_CUDA_NVRTC_OPTIONS", NULL);
    t_routes_same(&t);
    if (emu_prefetches) {
      /* t_batch_run samples the batch once and takes its distributions once */
      const unsigned long long batch = (unsigned long long)R * V * 4u;
      printf("  split %d: %llu prefetches, %llu bytes (%.2f x the batch)\n", si, n1 - n0, b1 - b0,
             (double)(b1 - b0) / (double)batch);
      CHECK(n1 > n0 && b1 > b0);
      CHECK(b1 - b0 <= 16u * batch);
    }
  }
}

/* ---- top_k's candidates from the statistics (F_KFAST) ---------------------------
   top_k <= 256 takes its candidates from the statistics' read: each
   thread keeps its four largest keys, each block writes those that may be
   among the row's k largest, and ms_k_tail finds the k-th largest of
   them; unless some thread or block may have left out a key that large,
   the lists hold the k largest and no pass reads the row again. The route
   is read from the row's selection state (Sel.cand at byte 68: 3 for the
   lists, 2 when ms_k_tail gathered above the lists' bound, 1 for the
   counting pass's candidates, 0 for the full radix selection): small and
   large k, min_p below it (vLLM), HF,
   logprobs, and allowed ids, fewer than k included, take the lists; k =
   257 does not; eight of the largest in thread 0's first two groups of
   four ids (a thread keeps four and the fifth as its bound) send the row
   to the tail's gather; 3000 ties at
   the top overflow its list (the tail's count radix and top_p by masses
   take the row: cand 0). Every row equals the CPU, split over 1 to 32
   blocks; and again without top_k, top_p 0.8 on the same selection
   states: the radix passes' histograms, the lists' scratch before, are
   zero again. Equal logits but for 48 in thread 0's groups send the tail
   from its gather (the whole row is above the lists' bound) to the count
   radix's 40 candidates (cand 1). */
#define T_SEL_CAND 68   /* offsetof(Sel, cand) in src/cuda/kernels.cu (tests/cuda_emu/kernels.cpp checks it) */
#define T_SEL_HIST 112        /* offsetof(Sel, hist), ... */
#define T_SEL_HIST_WORDS 2048 /* ... and its u64 words (the same check) */
static void test_gpu_topk_fast_route(void) {
  enum { R = 12, V = 12000 };
  static float logits[R * V], probs[R * V], cprobs[V];
  static ms_logprob top[R * 5], ctop[5];
  static int32_t allowed[2][40];
  static const int32_t splits[] = { 1, 2, 0, 32 };
  const int32_t want[R] = { 3, 3, 3, 1, 0, 3, 3, 3, 3, 3, 2, 1 };
  ms_params ps[R];
  const ms_params *pp[R];
  int32_t tok[R], cand;
  ms_cuda_out out[R];
  int r, j, si, bad = 0;
  if (!t_gpu()) SKIP(t_why);
  for (r = 0; r < R; r++) {
    float *x = logits + (size_t)r * V;
    ps[r] = ms_params_default();
    ps[r].top_k = 50;
    ps[r].seed = 700u + (uint64_t)r; ps[r].has_seed = 1;
    t_fill(x, V, 1.0f + 0.5f * (float)(r % 3));
    if (r == 1) ps[r].top_k = 1;
    if (r == 2) { ps[r].top_k = 256; ps[r].top_p = 0.9f; }
    if (r == 3) ps[r].top_k = 257;
    if (r == 4) for (j = 0; j < 3000; j++) x[(j * 7919) % V] = 9.0f;   /* ties at the top */
    if (r == 5) ps[r].min_p = 0.1f;
    if (r == 6) { ps[r].profile = MS_PROFILE_HF; ps[r].top_k = 40; ps[r].top_p = 0.9f; ps[r].min_p = 0.05f; }
    if (r == 7) { ps[r].logprobs = 5; ps[r].logprobs_mode = MS_LOGPROBS_PROCESSED; ps[r].temperature = 0.7f; }
    if (r == 8 || r == 9) {
      for (j = 0; j < 40; j++) allowed[r - 8][j] = (j * 293 + 11) % V;
      ps[r].allowed_ids = allowed[r - 8];
      ps[r].n_allowed_ids = r == 8 ? 40 : 10;
      ps[r].top_k = 20;
    }
    if (r == 10) for (j = 0; j < 8; j++) x[(j & 3) + 1024 * (j >> 2)] = 20.0f + (float)j;
    if (r == 11) {
      /* a row of equal logits but 48 in thread 0's groups of four ids (on
         one or two blocks): the lists fall short and their bound, 0, lets
         the whole row in (more than the tail's gather holds); the count
         radix finds the 40th largest, 40 candidates */
      t_spikes_in_thread0(x, V);
      ps[r].top_k = 40;
    }
    pp[r] = &ps[r];
  }
  for (si = 0; si < 4; si++) {
    ms_cuda *cu;
    t_dev g;
    if (!t_make(&cu, &g, R, V, splits[si], MS_CUDA_TOPP_DEFAULT, 5)) return;
    t_batch_run(cu, &g, logits, R, V, pp, 5, probs, tok, out, top);
    for (r = 0; r < R; r++) {
      ms_output o;
      ms_result crc;
      double e;
      const void *at = (const void *)(uintptr_t)(cu->d_sel + (ms__CUdeviceptr)((size_t)r * MS__CUDA_SEL_BYTES + T_SEL_CAND));
      CHECK(ms_cuda_download(cu, &cand, at, 4) == MS_OK);
      /* k = 256 of 12000: on one or two blocks a thread sees 23 to 47 ids,
         and whether one of them holds five of the 256 (the tail's gather) depends on
         the draw of the logits; on 32 no thread sees more than four */
      if (r == 2 && splits[si] != 32) CHECK_MSG(cand == 2 || cand == 3, "split %d row 2: cand %d", splits[si], cand);
      /* row 10 on 32 blocks of 512 ids: thread 0 of block 0 sees ids 0-3
         only, and ids 1024-1027 are another block's */
      else if ((r == 10 || r == 11) && splits[si] == 32) CHECK_MSG(cand == 3, "split 32 row %d: cand %d", r, cand);
      else CHECK_MSG(cand == want[r], "split %d row %d: cand %d, want %d", splits[si], r, cand, want[r]);
      {
        /* the lists' scratch (Sel.hist) is zero again: the passes' histograms */
        static uint64_t hist[T_SEL_HIST_WORDS];
        const void *h = (const void *)(uintptr_t)(cu->d_sel + (ms__CUdeviceptr)((size_t)r * MS__CUDA_SEL_BYTES + T_SEL_HIST));
        int nz = 0;
        CHECK(ms_cuda_download(cu, hist, h, sizeof hist) == MS_OK);
        for (j = 0; j < T_SEL_HIST_WORDS; j++) nz += hist[j] != 0;
        CHECK_MSG(nz == 0, "split %d row %d: %d words of Sel.hist not zero after the call", splits[si], r, nz);
      }
      if (t_row_differs(t_cpu, logits + (size_t)r * V, V, &ps[r], probs + (size_t)r * V, tok[r], &out[r], top + r * 5, 5, cprobs,
                        ctop, &o, &crc, &e) && bad++ < 6)
        printf("  split %d row %d: token %d / cpu %d, max |dp| %.3g, rank %d / %d\n", splits[si], r, tok[r], o.token, e,
               out[r].rank, o.rank);
    }
    {
      ms_params again[R];
      const ms_params *pa[R];
      for (r = 0; r < R; r++) { again[r] = ps[r]; again[r].top_k = 0; again[r].top_p = 0.8f; pa[r] = &again[r]; }
      t_batch_run(cu, &g, logits, R, V, pa, 5, probs, tok, out, top);
      for (r = 0; r < R; r++) {
        ms_output o;
        ms_result crc;
        double e;
        if (t_row_differs(t_cpu, logits + (size_t)r * V, V, &again[r], probs + (size_t)r * V, tok[r], &out[r], top + r * 5, 5,
                          cprobs, ctop, &o, &crc, &e) && bad++ < 6)
          printf("  split %d row %d, top_p 0.8 after: token %d / cpu %d, max |dp| %.3g\n", splits[si], r, tok[r], o.token, e);
      }
    }
    t_dev_free(cu, &g);
    ms_cuda_destroy(cu);
  }
  CHECK_EQ_INT(bad, 0);
}

/* ---- a batch of small top_k rows launches no pass ------------------------------
   Rows with top_k <= 256 (F_KFAST) never go through the passes: the
   statistics' lists give their candidates, and ms_k_tail (one block a
   row) ends them, or first does what the lists left, by the passes'
   rules; a batch of such rows launches no pass. Rows of each kind: plain,
   with top_p and min_p (vLLM, HF), eight of the largest in thread 0's
   first groups (the lists fall short: the tail gathers above their
   bound), 1000 ties at the top (the same, with a tie of 1000
   candidates), 3000 ties (more than the candidates hold: the tail's count
   radix, top_p by masses and its own tile sums: Sel.sums_done, the last
   word, is 1 for that row only), fewer allowed ids than k, processed
   logprobs (ms_k_row finishes it), a greedy row and k = 256; split over
   1, 2 and 32 blocks. Every row equals the CPU, with and without the
   pass launches (MYSAMPLE_CUDA_NOPASS=0: launched, finding nothing to
   do; the same tokens), and with the route off (MYSAMPLE_CUDA_KFAST=0:
   the counting passes and ms_k_row). */
static void test_gpu_kfast_nopass(void) {
  enum { R = 10, V = 12000 };
  static float logits[R * V], probs[3][R * V], cprobs[V];
  static ms_logprob top[3][R * 5], ctop[5];
  static int32_t allowed[12];
  static const int32_t splits[] = { 1, 2, 32 };
  ms_params ps[R];
  const ms_params *pp[R];
  int32_t tok[3][R], sums_done;
  ms_cuda_out out[3][R];
  static const char *const names[3] = { "no pass", "passes", "no lists" };
  static const char *const envs[3] = { NULL, "MYSAMPLE_CUDA_NOPASS", "MYSAMPLE_CUDA_KFAST" };
  int r, j, si, mode, bad = 0;
  if (!t_gpu()) SKIP(t_why);
  for (r = 0; r < R; r++) {
    float *x = logits + (size_t)r * V;
    ps[r] = ms_params_default();
    ps[r].top_k = 50;
    ps[r].seed = 1300u + (uint64_t)r; ps[r].has_seed = 1;
    t_fill(x, V, 1.0f + 0.5f * (float)(r % 3));
    if (r == 1) { ps[r].top_p = 0.9f; ps[r].min_p = 0.05f; }
    if (r == 2) { ps[r].profile = MS_PROFILE_HF; ps[r].top_k = 40; ps[r].top_p = 0.9f; ps[r].min_p = 0.05f; }
    if (r == 3) for (j = 0; j < 8; j++) x[(j & 3) + 1024 * (j >> 2)] = 20.0f + (float)j;
    if (r == 4) { for (j = 0; j < 1000; j++) x[(j * 7919) % V] = 9.0f; ps[r].top_p = 0.95f; }
    if (r == 5) { for (j = 0; j < 3000; j++) x[(j * 7919) % V] = 9.0f; ps[r].top_p = 0.5f; }
    if (r == 6) {
      for (j = 0; j < 12; j++) allowed[j] = (j * 977 + 5) % V;
      ps[r].allowed_ids = allowed; ps[r].n_allowed_ids = 12; ps[r].top_k = 20;
    }
    if (r == 7) { ps[r].logprobs = 5; ps[r].logprobs_mode = MS_LOGPROBS_PROCESSED; ps[r].temperature = 0.7f; ps[r].top_p = 0.8f; }
    if (r == 8) ps[r].temperature = 0.0f;
    if (r == 9) { ps[r].top_k = 256; ps[r].temperature = 1.3f; }
    pp[r] = &ps[r];
  }
  for (si = 0; si < 3; si++) {
    for (mode = 0; mode < 3; mode++) {
      ms_cuda *cu;
      t_dev g;
      int made;
      if (envs[mode]) t_setenv(envs[mode], "0");
      made = t_make(&cu, &g, R, V, splits[si], MS_CUDA_TOPP_DEFAULT, 5);
      if (envs[mode]) t_setenv(envs[mode], NULL);
      if (!made) return;
      t_batch_run(cu, &g, logits, R, V, pp, 5, probs[mode], tok[mode], out[mode], top[mode]);
      for (r = 0; r < R; r++) {
        const void *at = (const void *)(uintptr_t)(cu->d_sel + (ms__CUdeviceptr)((size_t)(r + 1) * MS__CUDA_SEL_BYTES - 4));
        CHECK(ms_cuda_download(cu, &sums_done, at, 4) == MS_OK);
        CHECK_MSG(sums_done == (r == 5 && mode < 2), "split %d %s row %d: sums_done %d", splits[si], names[mode], r, sums_done);
      }
      t_dev_free(cu, &g);
      ms_cuda_destroy(cu);
    }
    for (r = 0; r < R; r++) {
      CHECK_MSG(tok[0][r] == tok[1][r], "split %d row %d: token %d without passes, %d with", splits[si], r, tok[0][r], tok[1][r]);
      for (mode = 0; mode < 3; mode++) {
        ms_output o;
        ms_result crc;
        double e;
        if (t_row_differs(t_cpu, logits + (size_t)r * V, V, &ps[r], probs[mode] + (size_t)r * V, tok[mode][r], &out[mode][r],
                          top[mode] + r * 5, 5, cprobs, ctop, &o, &crc, &e) && bad++ < 6)
          printf("  split %d %s row %d: token %d / cpu %d, max |dp| %.3g\n", splits[si], names[mode], r,
                 tok[mode][r], o.token, e);
      }
    }
  }
  CHECK_EQ_INT(bad, 0);
}

/* ---- llama.cpp's top-n-sigma when float sums overflow ------------------------------
   Rows with logits of 1e19 to 3e38 beside ordinary ones: llama.cpp's
   float mean or sum of squares goes to inf, and so does its deviation:
   top-n-sigma cuts nothing. ms_k_list sums in double, so it once cut
   where the CPU (float lanes: inf - inf) masked the whole row
   (fuzz_cuda_sample). Top-n-sigma first, then top_k 40; both devices. */
static void test_gpu_llamacpp_sigma_overflow(void) {
  enum { R = 12, V = 100 };
  static const float big[] = { 3.0e38f, -3.0e38f, 1.0e30f, -2.0e38f, 5.0e19f, -4.0e25f };
  static float x[R * V], probs[R * V];
  static ms_logprob top[R * 2];
  ms_cuda *cu = NULL;
  t_dev g;
  ms_params ps[R];
  const ms_params *pp[R];
  int32_t tok[R];
  ms_cuda_out out[R];
  int r, bad = 0, ok_rows = 0;
  if (!t_gpu()) SKIP(t_why);
  if (!t_make(&cu, &g, R, V, 0, 0, 2)) return;
  t_fill(x, R * V, 1.0f);
  for (r = 0; r < R; r++) {
    ms_params p = ms_params_profile_default(MS_PROFILE_LLAMACPP);
    float *xr = x + (size_t)r * V;
    xr[7] = big[r % 6];
    if (r >= 6) { xr[40] = big[(r + 1) % 6]; xr[41] = -big[(r + 2) % 6]; }
    p.samplers = "skt"; p.top_k = 40;
    p.top_n_sigma = r % 3 == 0 ? 0.5f : r % 3 == 1 ? 1.0f : 6e12f;
    p.temperature = 1.0f;   /* (3e38 / 0.8 would overflow the temperature stage instead) */
    p.seed = 600u + (uint64_t)r; p.has_seed = 1;
    ps[r] = p;
    pp[r] = &ps[r];
  }
  t_batch_run(cu, &g, x, R, V, pp, 2, probs, tok, out, top);
  bad = t_rows_differ(x, R, V, ps, probs, tok, out, top, 2, "top-n-sigma overflow", &ok_rows);
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(ok_rows, R);
  t_dev_free(cu, &g);
  ms_cuda_destroy(cu);
}

/* ---- llama.cpp's typical on runs of equal logits ----------------------------------
   Its band grows from the token nearest the entropy, the likelier side
   first on equal scores; a run of equal logits can be cut where the band
   reached it from below, and the kept part of the run is then the run's
   lowest ids (the list is ordered by logit, then id), as on the CPU.
   Rows of logits in steps of 0.5 and 0.25 (runs everywhere), top_k then
   typical at several masses, against the CPU. */
static void test_gpu_llamacpp_typical_runs(void) {
  enum { R = 16, V = 300, ROUNDS = 6 };
  static float x[R * V], probs[R * V];
  static ms_logprob top[R * 4];
  ms_cuda *cu = NULL;
  t_dev g;
  ms_params ps[R];
  const ms_params *pp[R];
  int32_t tok[R];
  ms_cuda_out out[R];
  int it, r, i, bad = 0;
  if (!t_gpu()) SKIP(t_why);
  if (!t_make(&cu, &g, R, V, 0, 0, 4)) return;
  for (it = 0; it < ROUNDS; it++) {
    for (r = 0; r < R; r++) {
      ms_params p = ms_params_profile_default(MS_PROFILE_LLAMACPP);
      const float step = (r & 1) ? 0.25f : 0.5f;
      float *xr = x + (size_t)r * V;
      p.samplers = "kyt";   /* (the GPU runs llama.cpp's chain on a top_k's list) */
      p.top_k = (r & 2) ? 40 : 150;
      p.typical_p = 0.15f + 0.05f * (float)((r + 3 * it) % 16);
      p.temperature = 0.8f;
      p.seed = 77u + (uint64_t)(it * R + r); p.has_seed = 1;
      p.logprobs = 3; p.logprobs_mode = MS_LOGPROBS_PROCESSED;
      t_fill(xr, V, 1.0f + 0.5f * (float)(it % 3));
      for (i = 0; i < V; i++) xr[i] = (float)floor(xr[i] / step) * step;
      ps[r] = p;
      pp[r] = &ps[r];
    }
    t_batch_run(cu, &g, x, R, V, pp, 4, probs, tok, out, top);
    bad += t_rows_differ(x, R, V, ps, probs, tok, out, top, 4, "typical on runs", NULL);
  }
  CHECK_EQ_INT(bad, 0);
  t_dev_free(cu, &g);
  ms_cuda_destroy(cu);
}

/* ---- the tail's one-block passes on unaligned rows ------------------------------
   ms_k_tail's own reads (its gather above the lists' bound, the count
   radix, top_p by masses, the tile sums) on rows of 12001 logits, so that
   rows 1 and 2 start off a 16-byte boundary and every row ends in a
   partial vector: the unaligned head and tail of each read. Ties at the
   top (the count radix and masses) and equal logits with a few large ones
   (the count radix's candidates), split over 1 and 32 blocks, against
   the CPU. */
static void test_gpu_tail_unaligned_rows(void) {
  enum { R = 4, V = 12001 };
  static float logits[R * V], probs[R * V];
  static ms_logprob top[R * 5];
  static const int32_t splits[] = { 1, 32 };
  ms_params ps[R];
  const ms_params *pp[R];
  int32_t tok[R];
  ms_cuda_out out[R];
  int r, j, si, bad = 0;
  if (!t_gpu()) SKIP(t_why);
  for (r = 0; r < R; r++) {
    float *x = logits + (size_t)r * V;
    ps[r] = ms_params_default();
    ps[r].seed = 1900u + (uint64_t)r; ps[r].has_seed = 1; ps[r].logprobs = 5;
    t_fill(x, V, 1.0f);
    if (r < 3) {
      for (j = 0; j < 3000; j++) x[(j * 7919 + r) % V] = 9.0f;   /* a crowd of ties at the top */
      ps[r].top_k = 50; ps[r].top_p = r == 2 ? 1.0f : 0.5f;
      if (r == 1) ps[r].profile = MS_PROFILE_HF;
    } else {
      t_spikes_in_thread0(x, V);   /* (rows 1-3 start unaligned: other threads may hold them; only the CPU is compared) */
      ps[r].top_k = 40;
    }
    pp[r] = &ps[r];
  }
  for (si = 0; si < 2; si++) {
    ms_cuda *cu;
    t_dev g;
    if (!t_make(&cu, &g, R, V, splits[si], MS_CUDA_TOPP_DEFAULT, 5)) return;
    t_batch_run(cu, &g, logits, R, V, pp, 5, probs, tok, out, top);
    bad += t_rows_differ(logits, R, V, ps, probs, tok, out, top, 5, splits[si] == 1 ? "split 1" : "split 32", NULL);
    t_dev_free(cu, &g);
    ms_cuda_destroy(cu);
  }
  CHECK_EQ_INT(bad, 0);
}

/* ---- a grammar bitmask on a row smaller than max_vocab ----------------------
   The bitmask holds (vocab + 31) / 32 words; ms_k_mask read max_vocab's
   count of words from it, past the parameter blob when the bitmask was the
   last list in it (an illegal address on a GPU, a fault under the
   emulator). Here the blob holds exactly this row's bitmask. */
static void test_gpu_bitmask_small_vocab(void) {
  ms_cuda *cu = NULL;
  ms_cuda_desc d;
  ms_params p = ms_params_default();
  const ms_params *pp[1];
  uint32_t mask[4] = { 0, 0, 0, 0 };
  float x[100], pr[100], cp[100];
  void *dl = NULL, *dp = NULL, *dt = NULL;
  ms_cuda_batch b;
  int i;
  if (!t_gpu()) SKIP(t_why);
  memset(&d, 0, sizeof d);
  d.max_rows = 1; d.max_vocab = 50000; d.max_extra_words = 4;
  CHECK_EQ_INT(ms_cuda_create(&cu, &d, t_msg, sizeof t_msg), MS_OK);
  if (!cu) return;
  mask[0] = 1u << 3; mask[1] = 1u << (50 - 32); mask[3] = 1u << (99 - 96);
  p.token_bitmask = mask; p.seed = 3; p.has_seed = 1;
  pp[0] = &p;
  t_fill(x, 100, 1.0f);
  CHECK(ms_cuda_malloc(cu, &dl, sizeof x) == MS_OK && ms_cuda_malloc(cu, &dp, sizeof pr) == MS_OK && ms_cuda_malloc(cu, &dt, 4) == MS_OK);
  CHECK(ms_cuda_upload(cu, dl, x, sizeof x) == MS_OK);
  memset(&b, 0, sizeof b);
  b.n_rows = 1; b.vocab = 100; b.logits = dl; b.row_stride = 100; b.params = pp; b.tokens = dt;
  CHECK_EQ_INT(ms_cuda_probs(cu, NULL, &b, dp, 100), MS_OK);
  CHECK(ms_cuda_download(cu, pr, dp, sizeof pr) == MS_OK);
  CHECK_EQ_INT(ms_probs(t_cpu, x, 100, &p, NULL, cp), MS_OK);
  for (i = 0; i < 100; i++) CHECK_NEAR(pr[i], cp[i], 1e-6);
  CHECK(pr[3] > 0.0f && pr[50] > 0.0f && pr[99] > 0.0f);
  ms_cuda_free(cu, dl); ms_cuda_free(cu, dp); ms_cuda_free(cu, dt);
  ms_cuda_destroy(cu);
}

/* ---- penalties bit for bit ----------------------------------------------------
   The frequency penalty as the CPU computes it, l - f * count with two
   roundings: a GPU compiler fuses the product into the subtraction (FMA)
   unless told not to, which moves the logit by an ulp. Token 5 (count 3)
   and token 9 are set up to tie exactly on the CPU, where a greedy row
   takes the lower id; a fused subtraction breaks the tie the other way.
   (The plain emulator never fuses; its FMA build, tests/ci/cuda_emu.sh,
   does what NVRTC does.) */
static void test_gpu_penalty_rounding(void) {
  ms_cuda *cu = t_gpu();
  ms_params p = ms_params_default();
  const ms_params *pp[1];
  int32_t slot[1] = { 1 }, hist[3] = { 5, 5, 5 }, sl3[3] = { 1, 1, 1 }, tok[1];
  float x[64];
  void *dl = NULL, *dh = NULL, *ds = NULL;
  ms_cuda_batch b;
  ms_seq *s = NULL;
  ms_output o;
  int i, found = 0;
  volatile float xa = 0.0f, f = 0.0f, prod, plain = 0.0f;
  if (!cu) SKIP(t_why);
  /* a logit and a penalty whose fused result lies below the plain one */
  for (i = 0; i < 20000 && !found; i++) {
    xa = 1.0f + (float)i * 0.0137f;
    f = 0.1f + (float)(i % 97) * 0.00731f;
    prod = f * 3.0f;
    plain = xa - prod;
    if (fmaf(-f, 3.0f, xa) < plain) found = 1;
  }
  CHECK(found);
  for (i = 0; i < 64; i++) x[i] = -10.0f;
  x[5] = xa; x[9] = plain;
  p.temperature = 0.0f; p.frequency_penalty = f;
  pp[0] = &p;
  CHECK(ms_seq_create(&s, 16) == MS_OK);
  if (!s) return;
  CHECK_EQ_INT(ms_seq_reset(s, NULL, 0, 64, &p, 0), MS_OK);
  for (i = 0; i < 3; i++) CHECK_EQ_INT(ms_seq_accept(s, 5), MS_OK);
  memset(&o, 0, sizeof o);
  CHECK_EQ_INT(ms_sample(t_cpu, x, 64, &p, s, &o), MS_OK);
  CHECK_EQ_INT(o.token, 5);
  CHECK(ms_cuda_malloc(cu, &dl, sizeof x) == MS_OK && ms_cuda_malloc(cu, &dh, sizeof hist) == MS_OK &&
        ms_cuda_malloc(cu, &ds, sizeof sl3) == MS_OK);
  CHECK(ms_cuda_upload(cu, dl, x, sizeof x) == MS_OK);
  CHECK(ms_cuda_upload(cu, dh, hist, sizeof hist) == MS_OK);
  CHECK(ms_cuda_upload(cu, ds, sl3, sizeof sl3) == MS_OK);
  CHECK_EQ_INT(ms_cuda_seq_reset(cu, NULL, 1, NULL, 0, NULL), MS_OK);
  CHECK_EQ_INT(ms_cuda_seq_accept(cu, NULL, ds, dh, 3), MS_OK);
  memset(&b, 0, sizeof b);
  b.n_rows = 1; b.vocab = 64; b.logits = dl; b.row_stride = 64; b.params = pp; b.slots = slot; b.tokens = t_dtokens;
  CHECK(t_bufs(cu));
  b.tokens = t_dtokens;
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);
  CHECK(ms_cuda_download(cu, tok, t_dtokens, 4) == MS_OK);
  CHECK_EQ_INT(tok[0], 5);
  ms_cuda_free(cu, dl); ms_cuda_free(cu, dh); ms_cuda_free(cu, ds);
  ms_seq_destroy(s);
}

/* ---- the pointwise stages' order per profile ------------------------------------
   Repetition, frequency and a bias on the same tokens: vLLM and HF add
   the bias before the penalties and count the prompt for repetition;
   SGLang penalises first, over the output only, then adds the bias. Token
   3 is in the prompt, token 7 twice in the output; the GPU's final
   distribution equals the CPU's in each profile, and the profiles'
   distributions differ (so the order is what is tested). */
static void test_gpu_stage_order_per_profile(void) {
  static const ms_profile profs[3] = { MS_PROFILE_VLLM, MS_PROFILE_HF, MS_PROFILE_SGLANG };
  ms_cuda *cu = t_gpu();
  ms_params p[3];
  const ms_params *pp[3];
  ms_bias bias[2] = { { 3, 1.0f }, { 7, 1.0f } };
  int32_t slot[3] = { 0, 1, 2 }, prompt[1] = { 3 }, out2[2] = { 7, 7 }, sl2[2];
  float x[3 * 64], probs[3 * 64], cprobs[3][64];
  void *dl = NULL, *dp = NULL, *dh = NULL, *ds = NULL;
  ms_cuda_batch b;
  int i, r, bad = 0;
  if (!cu) SKIP(t_why);
  CHECK(ms_cuda_malloc(cu, &dl, sizeof x) == MS_OK && ms_cuda_malloc(cu, &dp, sizeof probs) == MS_OK &&
        ms_cuda_malloc(cu, &dh, 8) == MS_OK && ms_cuda_malloc(cu, &ds, 8) == MS_OK);
  for (r = 0; r < 3; r++) {
    ms_seq *s = NULL;
    for (i = 0; i < 64; i++) x[r * 64 + i] = (float)(i % 5) * 0.1f;
    x[r * 64 + 3] = 2.0f; x[r * 64 + 7] = 2.0f;
    p[r] = ms_params_default();
    p[r].profile = profs[r];
    p[r].repetition_penalty = 2.0f;
    if (profs[r] != MS_PROFILE_HF) p[r].frequency_penalty = 0.5f;
    p[r].logit_bias = bias; p[r].n_logit_bias = 2;
    pp[r] = &p[r];
    CHECK(ms_seq_create(&s, 16) == MS_OK);
    if (!s) return;
    CHECK_EQ_INT(ms_seq_reset(s, prompt, 1, 64, &p[r], 0), MS_OK);
    CHECK_EQ_INT(ms_seq_accept(s, 7), MS_OK);
    CHECK_EQ_INT(ms_seq_accept(s, 7), MS_OK);
    CHECK_EQ_INT(ms_probs(t_cpu, x + r * 64, 64, &p[r], s, cprobs[r]), MS_OK);
    ms_seq_destroy(s);
    /* the device sequence of slot r */
    CHECK(ms_cuda_upload(cu, dh, prompt, 4) == MS_OK);
    CHECK_EQ_INT(ms_cuda_seq_reset(cu, NULL, r, dh, 1, NULL), MS_OK);
    sl2[0] = sl2[1] = r;
    CHECK(ms_cuda_upload(cu, dh, out2, 8) == MS_OK && ms_cuda_upload(cu, ds, sl2, 8) == MS_OK);
    CHECK_EQ_INT(ms_cuda_seq_accept(cu, NULL, ds, dh, 2), MS_OK);
  }
  CHECK(fabs((double)cprobs[0][3] - (double)cprobs[2][3]) > 0.1 && fabs((double)cprobs[0][7] - (double)cprobs[2][7]) > 0.005);
  CHECK(ms_cuda_upload(cu, dl, x, sizeof x) == MS_OK);
  memset(&b, 0, sizeof b);
  b.n_rows = 3; b.vocab = 64; b.logits = dl; b.row_stride = 64; b.params = pp; b.slots = slot;
  CHECK_EQ_INT(ms_cuda_probs(cu, NULL, &b, dp, 64), MS_OK);
  CHECK(ms_cuda_download(cu, probs, dp, sizeof probs) == MS_OK);
  for (r = 0; r < 3; r++)
    for (i = 0; i < 64; i++)
      if (fabs((double)probs[r * 64 + i] - (double)cprobs[r][i]) > 1e-6) {
        if (bad++ < 5) printf("  %s id %d: gpu %.9g cpu %.9g\n", ms_profile_name(profs[r]), i, (double)probs[r * 64 + i], (double)cprobs[r][i]);
      }
  CHECK_EQ_INT(bad, 0);
  ms_cuda_free(cu, dl); ms_cuda_free(cu, dp); ms_cuda_free(cu, dh); ms_cuda_free(cu, ds);
}

/* Cuts whose threshold the CPU sums in float (top-n-sigma's standard
   deviation over the whole row, as llama.cpp sums in float in order;
   epsilon's and eta's kept mass and entropy, in float blocks) and the
   device in double agree to about 1e-6. A row that differs passes when
   the CPU with those parameters moved by 2e-5 either way gives the
   device's result: a value sat between the two cuts. */
static int t_cut_rounding(const float *x, int V, const ms_params *p, const float *probs, int32_t tok, const ms_cuda_out *out,
                          const ms_logprob *top, int top_stride, float *cprobs, ms_logprob *ctop) {
  int side;
  for (side = -1; side <= 1; side += 2) {
    const float f = 1.0f + (float)side * 2e-5f;
    ms_params q = *p;
    ms_output o;
    ms_result crc;
    double e;
    q.top_n_sigma *= f; q.epsilon_cutoff *= f; q.eta_cutoff *= f;
    if (!t_row_differs(t_cpu, x, V, &q, probs, tok, out, top, top_stride, cprobs, ctop, &o, &crc, &e)) return 1;
  }
  return 0;
}

/* How many ids of a row have probability above 0. */
static int t_kept(const float *probs, int V) {
  int i, n = 0;
  for (i = 0; i < V; i++) n += probs[i] > 0.0f;
  return n;
}

/* ---- the llama.cpp profile -------------------------------------------------------
   Rows of the llamacpp profile the kernels take (docs/CUDA.md): top_k of
   1 to 1024 first (top-n-sigma on the whole row may come before it), then
   top_p, min_p, typical, XTC, top-n-sigma and the temperature (plain or
   dynamic) in the orders `samplers` gives, min_keep 0-5, on rows with many exact ties (bfloat16, steps of 0.5,
   all equal: top_k's cut inside a tie keeps the lowest ids), masks, bias,
   min_p above 1, top_p at 0, T <= 0 (the argmax), and raw and processed
   logprobs, against ms_probs / ms_sample; then rows with a slot (bad words
   over prompt + output, min_tokens); then what is refused, per row, with
   MS_ERR_UNSUPPORTED while the other rows are sampled. */
static void test_gpu_llamacpp_matches_cpu(void) {
  enum { R = 8, VMAX = 5000 };
  static const char *const orders[] = { NULL, "kpmt", "kmpt", "ktpm", "ktmp", "kt", "kp", "km", "k", "edskypmxt", "kxpyt",
                                        "kyxt", "kmyxpt", "kty", "ekxtmy" };
  /* top-n-sigma's: first (its cut on the whole row), or on the list */
  static const char *const sigma_orders[] = { NULL, "skpt", "kspt", "ktsp", "ktsy", "kpsmt", "skyt", "kxst" };
  static const int32_t ks[] = { 1, 2, 5, 40, 40, 100, 1024 };
  static const int vocabs[] = { 7, 300, 1100, VMAX };
  static float x[R * VMAX], probs[R * VMAX], cprobs[VMAX];
  static ms_logprob top[R * 16], ctop[16];
  static int32_t allowed[R][40], banned[R][4];
  static ms_bias bias[R][3];
  ms_cuda *cu = NULL;
  t_dev g;
  ms_params ps[R];
  const ms_params *pp[R];
  int32_t tok[R];
  ms_cuda_out out[R];
  int it, r, i, iters, rows = 0, bad = 0, greedy_rows = 0, tie_rows = 0;
  if (!t_gpu()) SKIP(t_why);
  if (!t_make(&cu, &g, R, VMAX, 0, 0, 16)) return;
  iters = t_small() ? 25 : 120;
  for (it = 0; it < iters; it++) {
    const int V = vocabs[it % 4];
    for (r = 0; r < R; r++) {
      ms_params p = ms_params_profile_default(MS_PROFILE_LLAMACPP);
      float *xr = x + (size_t)r * (size_t)V;
      int kind = (int)t_rand(5);
      p.samplers = orders[t_rand(sizeof orders / sizeof orders[0])];
      p.top_k = ks[t_rand(sizeof ks / sizeof ks[0])];
      if (p.top_k >= V) p.top_k = V > 1 ? V - 1 : 1;
      if (t_rand(3) == 0) p.top_p = (float)t_unif();
      if (t_rand(8) == 0) p.top_p = 0.0f;
      if (t_rand(3) == 0) p.min_p = (float)(t_unif() * 0.3);
      if (t_rand(10) == 0) p.min_p = 1.5f;   /* keeps the first maximum */
      if (t_rand(4) == 0) p.typical_p = (float)(0.3 + 0.69 * t_unif());
      if (t_rand(5) == 0) { p.xtc_probability = (float)(0.3 + 0.7 * t_unif()); p.xtc_threshold = (float)(0.01 + 0.3 * t_unif()); }
      if (t_rand(5) == 0) { p.dynatemp_range = (float)(0.1 + 0.9 * t_unif()); p.dynatemp_exponent = (float)(0.5 + 1.5 * t_unif()); }
      if (t_rand(5) == 0) p.min_tokens_to_keep = (int32_t)t_rand(6);
      if (t_rand(2) == 0) {
        p.top_n_sigma = (float)(0.3 + 2.5 * t_unif());
        p.samplers = sigma_orders[t_rand(sizeof sigma_orders / sizeof sigma_orders[0])];
      }
      p.temperature = t_rand(6) == 0 ? 0.0f : (float)(0.2 + 1.5 * t_unif());
      p.seed = 40u + (uint64_t)it * 97u + (uint64_t)r; p.has_seed = 1;
      if (t_rand(4) == 0) { for (i = 0; i < 40; i++) allowed[r][i] = (int32_t)t_rand((uint32_t)V); p.allowed_ids = allowed[r]; p.n_allowed_ids = 40; }
      if (t_rand(4) == 0) { for (i = 0; i < 4; i++) banned[r][i] = (int32_t)t_rand((uint32_t)V); p.banned_ids = banned[r]; p.n_banned_ids = 4; }
      if (t_rand(4) == 0) {
        for (i = 0; i < 3; i++) { bias[r][i].token = (int32_t)t_rand((uint32_t)V); bias[r][i].bias = (float)(t_unif() * 20.0 - 10.0); }
        p.logit_bias = bias[r]; p.n_logit_bias = 3;
      }
      if (t_rand(2)) { p.logprobs = (int32_t)t_rand(17); p.logprobs_mode = t_rand(2) ? MS_LOGPROBS_PROCESSED : MS_LOGPROBS_RAW; }
      t_fill(xr, V, t_rand(2) ? 3.0f : 1.0f);
      if (kind == 1) for (i = 0; i < V; i++) xr[i] = t_bf16(xr[i]);
      if (kind == 2) for (i = 0; i < V; i++) xr[i] = (float)floor(xr[i] * 2.0f) * 0.5f;
      if (kind == 3) for (i = 0; i < V; i++) xr[i] = 1.0f;   /* one tie: top_k keeps ids 0..k-1 */
      if (kind == 4) for (i = 0; i < V / 3; i++) xr[t_rand((uint32_t)V)] = -INFINITY;
      tie_rows += kind == 3;
      greedy_rows += p.temperature <= 0.0f;
      ps[r] = p;
      pp[r] = &ps[r];
    }
    t_batch_run(cu, &g, x, R, V, pp, 16, probs, tok, out, top);
    for (r = 0; r < R; r++) {
      ms_output o;
      ms_result crc;
      double e;
      rows++;
      if (t_row_differs(t_cpu, x + (size_t)r * (size_t)V, V, &ps[r], probs + (size_t)r * (size_t)V, tok[r], &out[r],
                        top + r * 16, 16, cprobs, ctop, &o, &crc, &e) &&
          !(ps[r].top_n_sigma > 0.0f && t_cut_rounding(x + (size_t)r * (size_t)V, V, &ps[r], probs + (size_t)r * (size_t)V,
                                                       tok[r], &out[r], top + r * 16, 16, cprobs, ctop))) {
        if (++bad <= 8)
          printf("  it %d row %d V %d (%s k %d p %g minp %g T %g lp %d/%d): status %d / %d, max |dp| %.3g, token %d / %d, "
                 "lp %.6g / %.6g, rank %d / %d, n_top %d / %d\n",
                 it, r, V, ps[r].samplers ? ps[r].samplers : "default", ps[r].top_k, (double)ps[r].top_p, (double)ps[r].min_p,
                 (double)ps[r].temperature, ps[r].logprobs, (int)ps[r].logprobs_mode, out[r].status, (int)crc, e, tok[r],
                 o.token, (double)out[r].logprob, (double)o.logprob, out[r].rank, o.rank, out[r].n_top, o.n_top);
      }
    }
  }
  printf("  %d llamacpp rows (%d greedy, %d all tied): %d differ from the CPU\n", rows, greedy_rows, tie_rows, bad);
  CHECK_EQ_INT(bad, 0);

  {
    /* the boundaries, exactly: min_keep against each stage; then top_p
       reached exactly by the running sum (two equal logits, p = 0.5: one
       kept), min_p = 1 with three tied maxima (all three kept), and each
       after the temperature */
    const int V = 16;
    for (r = 0; r < R; r++) pp[r] = &ps[r];
    /* min_keep = 4 holding top_p (row 0), typical (1), XTC (2: it would
       leave one of five) and min_p (3) back; rows 4-7 plain */
    for (r = 0; r < R; r++) {
      float *xr = x + r * V;
      for (i = 0; i < V; i++) xr[i] = 3.0f - 0.4f * (float)i;
      ps[r] = ms_params_profile_default(MS_PROFILE_LLAMACPP);
      ps[r].top_k = 5; ps[r].seed = 21u + (uint64_t)r; ps[r].has_seed = 1; ps[r].min_tokens_to_keep = 4;
      if (r >= 4) continue;
      ps[r].top_p = r == 0 ? 0.05f : 1.0f;
      ps[r].min_p = r == 3 ? 0.9f : 0.0f;
      if (r == 1) ps[r].typical_p = 0.05f;
      if (r == 2) { ps[r].xtc_probability = 1.0f; ps[r].xtc_threshold = 0.01f; }
    }
    t_batch_run(cu, &g, x, R, V, pp, 16, probs, tok, out, top);
    for (r = 0; r < 4; r++) {
      ms_output o;
      ms_result crc;
      double e;
      CHECK(!t_row_differs(t_cpu, x + r * V, V, &ps[r], probs + r * V, tok[r], &out[r], top + r * 16, 16, cprobs, ctop, &o, &crc, &e));
      CHECK_EQ_INT(t_kept(probs + r * V, V), r == 2 ? 5 : 4);
    }
    for (r = 0; r < R; r++) {
      float *xr = x + r * V;
      for (i = 0; i < V; i++) xr[i] = -40.0f - 0.1f * (float)i;   /* weights under 1e-18: p = 0.5 exactly */
      xr[3] = xr[9] = 2.0f;
      if (r >= 4) xr[12] = 2.0f;
      ps[r] = ms_params_profile_default(MS_PROFILE_LLAMACPP);
      ps[r].top_k = 8; ps[r].seed = 11u + (uint64_t)r; ps[r].has_seed = 1;
      ps[r].samplers = (r & 1) ? "ktpm" : "kpmt";
      ps[r].top_p = r < 4 ? 0.5f : 1.0f;
      ps[r].min_p = r < 4 ? 0.0f : 1.0f;
      ps[r].temperature = (r & 2) ? 0.7f : 1.0f;
    }
    t_batch_run(cu, &g, x, R, V, pp, 16, probs, tok, out, top);
    for (r = 0; r < R; r++) {
      ms_output o;
      ms_result crc;
      double e;
      CHECK(!t_row_differs(t_cpu, x + r * V, V, &ps[r], probs + r * V, tok[r], &out[r], top + r * 16, 16, cprobs, ctop, &o, &crc, &e));
      CHECK_EQ_INT(t_kept(probs + r * V, V), r < 4 ? 1 : 3);
    }
  }

  {
    /* top-n-sigma's kept count against the definition, in double: rows
       0-3 cut the whole row's max - n * stddev ahead of a top_k of 1024
       ("skt"; n 0.5 to 2), rows 4-7 the list's ("kst"; 1.5 to 3). A row with
       a logit within 1e-3 of its cut is drawn again. */
    const int V = VMAX, K = 1024;
    static float srt[VMAX];
    int checked = 0, multi = 0;
    for (r = 0; r < R; r++) {
      ps[r] = ms_params_profile_default(MS_PROFILE_LLAMACPP);
      ps[r].samplers = r < 4 ? "skt" : "kst";
      ps[r].top_k = K; ps[r].top_n_sigma = 0.5f * (float)(1 + (r & 3) + (r < 4 ? 0 : 2)); ps[r].temperature = 1.0f;
      ps[r].seed = 70u + (uint64_t)r; ps[r].has_seed = 1;
      pp[r] = &ps[r];
    }
    for (it = 0; it < 4; it++) {
      int expect[R];
      for (r = 0; r < R; r++) {
        float *xr = x + (size_t)r * V;
        for (;;) {
          double s1 = 0.0, s2 = 0.0, mean, sd, cut;
          int n = r < 4 ? V : K, near_cut = 0, j;
          t_fill(xr, V, 1.0f);
          memcpy(srt, xr, (size_t)V * 4);
          qsort(srt, (size_t)V, 4, t_cmp_float_desc);
          for (j = 0; j < n; j++) { s1 += srt[j]; s2 += (double)srt[j] * srt[j]; }
          mean = s1 / n;
          sd = sqrt(s2 / n - mean * mean);
          cut = (double)srt[0] - (double)ps[r].top_n_sigma * sd;
          expect[r] = 0;
          for (j = 0; j < K; j++) {
            if (fabs((double)srt[j] - cut) < 1e-3) near_cut = 1;
            expect[r] += (double)srt[j] >= cut;
          }
          if (!near_cut) break;
        }
      }
      t_batch_run(cu, &g, x, R, V, pp, 16, probs, tok, out, top);
      for (r = 0; r < R; r++) {
        CHECK_EQ_INT(t_kept(probs + (size_t)r * V, V), expect[r]);
        CHECK(expect[r] >= 1 && expect[r] < K);
        multi += expect[r] > 1;
        checked++;
      }
    }
    printf("  %d top-n-sigma rows (%d keep more than one): kept counts as defined\n", checked, multi);
    CHECK(2 * multi >= checked);
  }

  {
    /* what the kernels refuse, row by row (the rows between are sampled) */
    ms_result rr[R];
    ms_cuda_batch b;
    const int V = 300;
    for (r = 0; r < R; r++) { ps[r] = ms_params_profile_default(MS_PROFILE_LLAMACPP); ps[r].seed = 5; ps[r].has_seed = 1; pp[r] = &ps[r]; }
    ps[0].typical_p = 0.9f; ps[0].samplers = "ykpt";   /* typical on the whole row */
    ps[1].top_k = 0;                       /* the list would be the whole row */
    ps[2].samplers = "tkpm";               /* the temperature before top_k */
    ps[3].mirostat = 2;
    ps[4].samplers = "pkmt";               /* top_p on the whole row */
    ps[5].top_k = 1025;
    ps[6].samplers = "spt";                /* top-n-sigma on the whole row, then top_p: no top_k */
    ps[6].top_n_sigma = 1.0f;
    /* row 7: the defaults, sampled */
    t_fill(x, R * V, 1.0f);
    CHECK(ms_cuda_upload(cu, g.dl, x, (size_t)R * V * 4) == MS_OK);
    memset(&b, 0, sizeof b);
    b.n_rows = R; b.vocab = V; b.logits = g.dl; b.row_stride = V; b.params = pp; b.tokens = g.dt; b.out = g.dout; b.row_results = rr;
    CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_ERR_UNSUPPORTED);
    CHECK(ms_cuda_download(cu, out, g.dout, sizeof out) == MS_OK);
    for (r = 0; r < 7; r++) { CHECK_EQ_INT(rr[r], MS_ERR_UNSUPPORTED); CHECK_EQ_INT(out[r].token, -1); }
    CHECK_EQ_INT(rr[7], MS_OK);
    /* the first refused row's reason */
    CHECK_EQ_STR(ms_cuda_last_error(cu), "row 0: a llama.cpp chain on the GPU needs top_k before its other samplers");
    {
      ms_output o;
      memset(&o, 0, sizeof o);
      CHECK_EQ_INT(ms_sample(t_cpu, x + 7 * V, V, &ps[7], NULL, &o), MS_OK);
      CHECK_EQ_INT(out[7].token, o.token);
    }
  }
  t_dev_free(cu, &g);
  ms_cuda_destroy(cu);
}

/* llama.cpp rows with a slot, generating 40 steps against the CPU: row 0
   bad words over prompt + output (a one-id word equal to EOS dropped, as
   HF) and min_tokens; row 1 penalties over the last 6 tokens (repeat,
   frequency, presence: ms_k_mask lists the window's counts); row 2 the
   same over the whole sequence (penalty_last_n -1) on a sampler that
   keeps 16 tokens of history, so the device fails the row with
   MS_ERR_CAPACITY once the sequence is longer; row 3 row 1's penalties at
   T = 0 (the argmax of the penalised row). Then penalties that do not
   lead the chain (applied to the top_k list on the CPU) are refused. */
static void test_gpu_llamacpp_slots(void) {
  enum { V = 64, R = 4 };
  static int32_t w[] = { 3, 9, 7, 9, 4, 3 }, wl[] = { 2, 1, 3 }, prompt[2] = { 3, 9 };
  ms_cuda *cu = NULL;
  ms_cuda_desc d;
  ms_params ps[R];
  const ms_params *pp[R];
  int32_t slots[R] = { 0, 1, 2, 3 }, tok[R];
  ms_cuda_out out[R];
  ms_result rr[R];
  float x[R * V];
  void *dl = NULL, *dt = NULL, *dout = NULL, *dh = NULL;
  ms_seq *s[R] = { NULL, NULL, NULL, NULL };
  ms_cuda_batch b;
  int step, i, r, same = 0, cap_seen = 0;
  if (!t_gpu()) SKIP(t_why);
  memset(&d, 0, sizeof d);
  d.max_rows = R; d.max_vocab = V; d.max_slots = R; d.max_history = 16;
  CHECK_EQ_INT(ms_cuda_create(&cu, &d, t_msg, sizeof t_msg), MS_OK);
  if (!cu) return;
  CHECK(ms_cuda_malloc(cu, &dl, sizeof x) == MS_OK && ms_cuda_malloc(cu, &dt, sizeof tok) == MS_OK &&
        ms_cuda_malloc(cu, &dout, sizeof out) == MS_OK && ms_cuda_malloc(cu, &dh, 8) == MS_OK);
  for (r = 0; r < R; r++) {
    ps[r] = ms_params_profile_default(MS_PROFILE_LLAMACPP);
    ps[r].top_k = 8; ps[r].seed = 77u + (uint64_t)r; ps[r].has_seed = 1;
    pp[r] = &ps[r];
  }
  ps[0].bad_words = w; ps[0].bad_words_lens = wl; ps[0].n_bad_words = 3;
  ps[0].eos_token_id = 9;        /* the one-id word 9 is EOS: dropped, as llama.cpp matches prompt + output */
  ps[0].min_tokens = 3;
  ps[1].repetition_penalty = 1.5f; ps[1].frequency_penalty = 0.3f; ps[1].presence_penalty = 0.2f; ps[1].penalty_last_n = 6;
  ps[2].repetition_penalty = 1.3f; ps[2].penalty_last_n = -1;
  ps[3] = ps[1]; ps[3].temperature = 0.0f; ps[3].seed = 80; ps[3].logprobs = 3; ps[3].logprobs_mode = MS_LOGPROBS_PROCESSED;
  CHECK(ms_cuda_upload(cu, dh, prompt, 8) == MS_OK);
  for (r = 0; r < R; r++) {
    CHECK(ms_seq_create(&s[r], 64) == MS_OK);
    if (!s[r]) return;
    CHECK_EQ_INT(ms_seq_reset(s[r], prompt, 2, V, &ps[r], 0), MS_OK);
    CHECK_EQ_INT(ms_cuda_seq_reset(cu, NULL, r, dh, 2, NULL), MS_OK);
  }
  memset(&b, 0, sizeof b);
  b.n_rows = R; b.vocab = V; b.logits = dl; b.row_stride = V; b.params = pp; b.slots = slots; b.accept = 1;
  b.tokens = dt; b.out = dout; b.row_results = rr;
  for (step = 0; step < 40; step++) {
    t_fill(x, R * V, 1.0f);
    for (r = 0; r < R; r++) for (i = 0; i < 10; i++) x[r * V + i] += 3.0f;   /* the words' ids, EOS, repeats: likely */
    CHECK(ms_cuda_upload(cu, dl, x, sizeof x) == MS_OK);
    CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);
    CHECK(ms_cuda_download(cu, tok, dt, sizeof tok) == MS_OK && ms_cuda_download(cu, out, dout, sizeof out) == MS_OK);
    for (r = 0; r < R; r++) {
      ms_output o;
      if (r == 2 && 2 + step > 16) { CHECK_EQ_INT(out[r].status, MS_ERR_CAPACITY); cap_seen++; continue; }
      memset(&o, 0, sizeof o);
      CHECK_EQ_INT(ms_sample(t_cpu, x + r * V, V, &ps[r], s[r], &o), MS_OK);
      CHECK_EQ_INT(out[r].status, MS_OK);
      CHECK_EQ_INT(tok[r], o.token);
      if (r == 3) CHECK(out[r].greedy && fabs((double)out[r].logprob - (double)o.logprob) <= 1e-4);
      same += tok[r] == o.token;
      CHECK_EQ_INT(ms_seq_accept(s[r], o.token), MS_OK);
    }
    if (step < 3) CHECK(tok[0] != 9);   /* min_tokens holds EOS back */
  }
  printf("  %d tokens equal the CPU's; row 2 refused for capacity %d times\n", same, cap_seen);
  CHECK_EQ_INT(same, 40 * 3 + 15);
  CHECK(cap_seen > 0);
  /* penalties after top_k in the chain: the CPU applies them to the list */
  ps[1].samplers = "kepmt";
  CHECK_EQ_INT(ms_cuda_probs(cu, NULL, &b, dt, 1), MS_ERR_INVALID_PARAM);   /* (probs_stride below the vocab) */
  CHECK(strstr(ms_cuda_last_error(cu), "probs_stride 1 is below the vocab") != NULL);
  b.accept = 0;
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_ERR_UNSUPPORTED);
  CHECK_EQ_INT(rr[0], MS_OK);
  CHECK_EQ_INT(rr[1], MS_ERR_UNSUPPORTED);
  CHECK(strstr(ms_cuda_last_error(cu), "row 1: llama.cpp's penalties run first") == ms_cuda_last_error(cu));
  ps[1].samplers = NULL;
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);
  CHECK_EQ_STR(ms_cuda_last_error(cu), "");   /* a call that refused nothing */
  for (r = 0; r < R; r++) ms_seq_destroy(s[r]);
  ms_cuda_free(cu, dl); ms_cuda_free(cu, dt); ms_cuda_free(cu, dout); ms_cuda_free(cu, dh);
  ms_cuda_destroy(cu);
}

/* llama.cpp rows with penalties reserve room in the packed lists for
   their window's pairs, not for the whole max_history: with a long
   history a batch of them once failed with MS_ERR_CAPACITY under the
   default max_extra_words. */
static void test_gpu_llamacpp_room(void) {
  enum { V = 64, R = 64 };
  ms_cuda *cu = NULL;
  ms_cuda_desc d;
  ms_params ps[R];
  const ms_params *pp[R];
  int32_t slots[R];
  ms_result rr[R];
  static float x[R * V];
  void *dl = NULL, *dt = NULL;
  ms_cuda_batch b;
  int r;
  if (!t_gpu()) SKIP(t_why);
  memset(&d, 0, sizeof d);
  d.max_rows = R; d.max_vocab = V; d.max_slots = R; d.max_history = 4096;
  CHECK_EQ_INT(ms_cuda_create(&cu, &d, t_msg, sizeof t_msg), MS_OK);
  if (!cu) return;
  CHECK(ms_cuda_malloc(cu, &dl, sizeof x) == MS_OK && ms_cuda_malloc(cu, &dt, R * 4) == MS_OK);
  t_fill(x, R * V, 1.0f);
  CHECK(ms_cuda_upload(cu, dl, x, sizeof x) == MS_OK);
  for (r = 0; r < R; r++) {
    ps[r] = ms_params_profile_default(MS_PROFILE_LLAMACPP);
    ps[r].repetition_penalty = 1.1f;   /* penalty_last_n: llama.cpp's 64 */
    ps[r].seed = 9u + (uint64_t)r; ps[r].has_seed = 1;
    pp[r] = &ps[r];
    slots[r] = r;
    CHECK_EQ_INT(ms_cuda_seq_reset(cu, NULL, r, NULL, 0, NULL), MS_OK);
  }
  memset(&b, 0, sizeof b);
  b.n_rows = R; b.vocab = V; b.logits = dl; b.row_stride = V; b.params = pp; b.slots = slots; b.accept = 1;
  b.tokens = dt; b.row_results = rr;
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);
  CHECK_EQ_INT(rr[R - 1], MS_OK);
  ms_cuda_free(cu, dl); ms_cuda_free(cu, dt);
  ms_cuda_destroy(cu);
}

/* ---- HF epsilon and eta ------------------------------------------------------------
   Random HF rows with epsilon and / or eta after top_k (both routes),
   top_p and min_p, raw and processed logprobs, against ms_probs /
   ms_sample (a row within the cuts' rounding passes: t_cut_rounding);
   then kept counts against the definition in double, away from the cut. */
static void test_gpu_hf_epsilon_eta(void) {
  enum { R = 8, VMAX = 6000 };
  static const int vocabs[] = { 40, 900, VMAX };
  static const int32_t ks[] = { 0, 0, 5, 50, 1500 };
  static float x[R * VMAX], probs[R * VMAX], cprobs[VMAX];
  static ms_logprob top[R * 4], ctop[4];
  ms_cuda *cu = NULL;
  t_dev g;
  ms_params ps[R];
  const ms_params *pp[R];
  int32_t tok[R];
  ms_cuda_out out[R];
  int it, r, i, rows = 0, bad = 0, tolerated = 0, cut_rows = 0, iters;
  if (!t_gpu()) SKIP(t_why);
  if (!t_make(&cu, &g, R, VMAX, 0, 0, 4)) return;
  iters = t_small() ? 16 : 80;
  for (it = 0; it < iters; it++) {
    const int V = vocabs[it % 3];
    for (r = 0; r < R; r++) {
      ms_params p = ms_params_profile_default(MS_PROFILE_HF);
      const int which = (int)t_rand(3);   /* epsilon, eta, both */
      p.top_k = ks[t_rand(5)];
      if (t_rand(3) == 0) p.top_p = (float)(0.5 + 0.5 * t_unif());
      if (t_rand(4) == 0) p.min_p = (float)(0.02 * t_unif());
      if (which != 1) p.epsilon_cutoff = (float)exp(log(1e-4) + t_unif() * (log(0.05) - log(1e-4)));
      if (which != 0) p.eta_cutoff = (float)exp(log(1e-4) + t_unif() * (log(0.05) - log(1e-4)));
      p.temperature = (float)(0.4 + 1.2 * t_unif());
      p.seed = 500u + (uint64_t)(it * R + r); p.has_seed = 1;
      if (t_rand(2)) { p.logprobs = (int32_t)t_rand(5); p.logprobs_mode = t_rand(2) ? MS_LOGPROBS_PROCESSED : MS_LOGPROBS_RAW; }
      t_fill(x + (size_t)r * V, V, t_rand(2) ? 2.5f : 1.0f);
      if (t_rand(4) == 0) for (i = 0; i < V; i++) x[(size_t)r * V + i] = t_bf16(x[(size_t)r * V + i]);
      ps[r] = p;
      pp[r] = &ps[r];
    }
    t_batch_run(cu, &g, x, R, V, pp, 4, probs, tok, out, top);
    for (r = 0; r < R; r++) {
      ms_output o;
      ms_result crc;
      double e;
      const float *xr = x + (size_t)r * V, *pr = probs + (size_t)r * V;
      rows++;
      if (!t_row_differs(t_cpu, xr, V, &ps[r], pr, tok[r], &out[r], top + r * 4, 4, cprobs, ctop, &o, &crc, &e)) continue;
      if (t_cut_rounding(xr, V, &ps[r], pr, tok[r], &out[r], top + r * 4, 4, cprobs, ctop)) { tolerated++; continue; }
      if (++bad <= 8)
        printf("  it %d row %d V %d (k %d p %g minp %g eps %g eta %g T %g): status %d / %d, max |dp| %.3g, token %d / %d\n", it, r, V,
               ps[r].top_k, (double)ps[r].top_p, (double)ps[r].min_p, (double)ps[r].epsilon_cutoff, (double)ps[r].eta_cutoff,
               (double)ps[r].temperature, out[r].status, (int)crc, e, tok[r], o.token);
    }
  }
  printf("  %d HF rows with epsilon / eta: %d differ (%d within the cut's rounding)\n", rows, bad, tolerated);
  CHECK_EQ_INT(bad, 0);
  CHECK(tolerated * 50 <= rows);

  /* the kept count by the definition: epsilon alone (rows 0-3), eta alone
     (4-7), on the whole row at T = 1 */
  for (it = 0; it < 3; it++) {
    const int V = VMAX;
    int expect[R];
    for (r = 0; r < R; r++) {
      float *xr = x + (size_t)r * V;
      ps[r] = ms_params_profile_default(MS_PROFILE_HF);
      ps[r].top_k = 0; ps[r].seed = 9; ps[r].has_seed = 1;
      if (r < 4) ps[r].epsilon_cutoff = 0.0005f * (float)(1 + r); else ps[r].eta_cutoff = 0.002f * (float)(r - 3);
      pp[r] = &ps[r];
      for (;;) {
        double z = 0.0, zy = 0.0, cut, m = -1e30;
        int near_cut = 0;
        t_fill(xr, V, 2.0f);
        for (i = 0; i < V; i++) if (xr[i] > m) m = xr[i];
        for (i = 0; i < V; i++) { double w = exp((double)xr[i] - m); z += w; zy += w * ((double)xr[i] - m); }
        cut = r < 4 ? (double)ps[r].epsilon_cutoff : fmin((double)ps[r].eta_cutoff, sqrt((double)ps[r].eta_cutoff) * exp(-(log(z) - zy / z)));
        expect[r] = 0;
        for (i = 0; i < V; i++) {
          double w = exp((double)xr[i] - m);
          if (fabs(w / (cut * z) - 1.0) < 1e-4) near_cut = 1;
          expect[r] += w >= cut * z;
        }
        if (!near_cut) break;
      }
    }
    t_batch_run(cu, &g, x, R, V, pp, 4, probs, tok, out, top);
    for (r = 0; r < R; r++) {
      CHECK_EQ_INT(t_kept(probs + (size_t)r * V, V), expect[r]);
      cut_rows += expect[r] > 1 && expect[r] < V;
    }
  }
  printf("  %d rows cut as defined\n", cut_rows);
  CHECK(cut_rows >= 20);
  t_dev_free(cu, &g);
  ms_cuda_destroy(cu);
}

/* ---- the reasoning budget --------------------------------------------------------
   Six slots with budgets (start 5, end 6 7; 0 to 4 tokens), generating 80
   steps of a 16-token vocabulary against ms_seq / ms_sample, so spans open
   and close in the prompt and the output, end sequences start and break
   off, and forcing holds: every profile, greedy and sampled rows, a row
   whose allowed ids leave the forced id out (they do not apply while it
   is forced), raw and processed logprobs; the forced id's logit is -inf,
   +Inf or NaN in some steps (it then counts as 0) with a NaN elsewhere
   in the row (a forced row holds one id, so only the banned-free ones
   fail). The state and tokens left against ms_seq_budget_state at the
   end; then a slot reset without a budget stops forcing, and bad budgets
   are refused. */
static void test_gpu_budget_matches_cpu(void) {
  enum { V = 16, R = 6, STEPS = 80 };
  static const ms_profile profs[R] = { MS_PROFILE_VLLM, MS_PROFILE_VLLM, MS_PROFILE_HF, MS_PROFILE_SGLANG,
                                       MS_PROFILE_LLAMACPP, MS_PROFILE_VLLM };
  static const int32_t start[1] = { 5 }, end[2] = { 6, 7 }, allowed[3] = { 1, 2, 5 };
  static const int32_t prompt[R][4] = { { 1, 5, 2, 3 }, { 2, 2, 2, 5 }, { 5, 6, 3, 4 }, { 0, 1, 2, 3 }, { 5, 1, 6, 1 }, { 3, 5, 1, 1 } };
  ms_cuda *cu = NULL;
  ms_cuda_desc d;
  ms_params ps[R];
  const ms_params *pp[R];
  int32_t slots[R], tok[R], big[MS_BUDGET_MAX_IDS + 1];
  ms_cuda_out out[R];
  ms_result rr[R];
  ms_logprob top[R * 2], ctop[2];
  float x[R * V];
  void *dl = NULL, *dt = NULL, *dout = NULL, *dh = NULL, *dtop = NULL;
  ms_seq *s[R];
  ms_cuda_batch b;
  int step, i, r, same = 0, forced_steps = 0, states[4] = { 0, 0, 0, 0 };
  if (!t_gpu()) SKIP(t_why);
  memset(&d, 0, sizeof d);
  d.max_rows = R; d.max_vocab = V; d.max_slots = R;
  CHECK_EQ_INT(ms_cuda_create(&cu, &d, t_msg, sizeof t_msg), MS_OK);
  if (!cu) return;
  CHECK(ms_cuda_malloc(cu, &dl, sizeof x) == MS_OK && ms_cuda_malloc(cu, &dt, sizeof tok) == MS_OK &&
        ms_cuda_malloc(cu, &dout, sizeof out) == MS_OK && ms_cuda_malloc(cu, &dh, sizeof prompt) == MS_OK &&
        ms_cuda_malloc(cu, &dtop, sizeof top) == MS_OK);
  CHECK(ms_cuda_upload(cu, dh, prompt, sizeof prompt) == MS_OK);
  for (r = 0; r < R; r++) {
    ms_params p = ms_params_profile_default(profs[r]);
    p.budget_start = start; p.n_budget_start = 1; p.budget_end = end; p.n_budget_end = 2;
    p.budget_tokens = r % 5;   /* 0: forcing from the start sequence on */
    p.seed = 300u + (uint64_t)r; p.has_seed = 1;
    if (r == 1) p.temperature = 0.0f;
    if (r == 2) { p.logprobs = 2; p.logprobs_mode = MS_LOGPROBS_PROCESSED; }
    if (r == 4) p.top_k = 6;
    if (r == 5) { p.allowed_ids = allowed; p.n_allowed_ids = 3; p.logprobs = 2; }
    ps[r] = p;
    pp[r] = &ps[r];
    slots[r] = r;
    s[r] = NULL;
    CHECK(ms_seq_create(&s[r], STEPS + 8) == MS_OK);
    if (!s[r]) return;
    CHECK_EQ_INT(ms_seq_reset(s[r], prompt[r], 4, V, &ps[r], 0), MS_OK);
    CHECK_EQ_INT(ms_cuda_seq_reset(cu, NULL, r, (const int32_t *)dh + 4 * r, 4, &ps[r]), MS_OK);
  }
  memset(&b, 0, sizeof b);
  b.n_rows = R; b.vocab = V; b.logits = dl; b.row_stride = V; b.params = pp; b.slots = slots; b.accept = 1;
  b.tokens = dt; b.out = dout; b.row_results = rr; b.top = dtop; b.top_stride = 2;
  for (step = 0; step < STEPS; step++) {
    t_fill(x, R * V, 1.0f);
    for (r = 0; r < R; r++) {
      x[r * V + 5] += 1.5f; x[r * V + 6] += 1.0f; x[r * V + 7] += 1.0f;   /* spans open and close often */
      if (step % 7 == 3) { x[r * V + 6] = -INFINITY; x[r * V + 7] = (step & 1) ? INFINITY : (float)NAN; x[r * V + 12] = (float)NAN; }
    }
    CHECK(ms_cuda_upload(cu, dl, x, sizeof x) == MS_OK);
    ms_cuda_sample(cu, NULL, &b);
    CHECK(ms_cuda_download(cu, tok, dt, sizeof tok) == MS_OK && ms_cuda_download(cu, out, dout, sizeof out) == MS_OK &&
          ms_cuda_download(cu, top, dtop, sizeof top) == MS_OK);
    for (r = 0; r < R; r++) {
      ms_output o;
      ms_result crc;
      const int forcing = ms_seq_budget_state(s[r], NULL) == MS_BUDGET_FORCING;
      memset(&o, 0, sizeof o);
      o.top = ctop; o.top_capacity = 2;
      crc = ms_sample(t_cpu, x + r * V, V, &ps[r], s[r], &o);
      CHECK_EQ_INT(out[r].status, (int)crc);
      forced_steps += forcing && crc == MS_OK;
      if (crc != MS_OK) continue;   /* a NaN the row can see: nothing accepted on either side */
      CHECK_EQ_INT(tok[r], o.token);
      if (ps[r].logprobs >= 0) {
        /* (a forced token whose raw logit is not finite: -inf on both) */
        CHECK(out[r].logprob == o.logprob || fabs((double)out[r].logprob - (double)o.logprob) <= 1e-4);
        CHECK_EQ_INT(out[r].rank, o.rank);
        CHECK_EQ_INT(out[r].n_top, o.n_top);
        for (i = 0; i < o.n_top && i < out[r].n_top; i++) CHECK_EQ_INT(top[r * 2 + i].token, ctop[i].token);
      }
      same += tok[r] == o.token;
      CHECK_EQ_INT(ms_seq_accept(s[r], o.token), MS_OK);
    }
    for (r = 0; r < R; r++) states[ms_seq_budget_state(s[r], NULL)]++;
  }
  for (r = 0; r < R; r++) {
    ms_budget_state gs = MS_BUDGET_IDLE, cs;
    int32_t gl = -1, cl = -1;
    cs = ms_seq_budget_state(s[r], &cl);
    CHECK_EQ_INT(ms_cuda_seq_budget_state(cu, r, &gs, &gl), MS_OK);
    CHECK_EQ_INT((int)gs, (int)cs);
    CHECK_EQ_INT(gl, cl);
  }
  printf("  %d tokens equal the CPU's, %d of them forced; states idle %d, counting %d, forcing %d, done %d\n", same,
         forced_steps, states[0], states[1], states[2], states[3]);
  CHECK(forced_steps >= 20 && states[1] >= 20 && states[3] >= 20 && same >= R * STEPS * 3 / 4);
  /* a slot reset without a budget: nothing is forced, the state is idle */
  {
    ms_budget_state gs = MS_BUDGET_COUNTING;
    int32_t left = -1;
    CHECK_EQ_INT(ms_cuda_seq_reset(cu, NULL, 1, (const int32_t *)dh + 4, 4, NULL), MS_OK);   /* prompt ends in 5 */
    CHECK_EQ_INT(ms_cuda_seq_budget_state(cu, 1, &gs, NULL), MS_OK);
    CHECK_EQ_INT((int)gs, (int)MS_BUDGET_IDLE);
    CHECK_EQ_INT(ms_cuda_seq_reset(cu, NULL, 1, (const int32_t *)dh + 4, 4, &ps[1]), MS_OK);
    CHECK_EQ_INT(ms_cuda_seq_budget_state(cu, 1, &gs, &left), MS_OK);
    CHECK_EQ_INT((int)gs, (int)MS_BUDGET_COUNTING);   /* a budget of 1, opened by the prompt */
    CHECK_EQ_INT(left, 1);
    CHECK_EQ_INT(ms_cuda_seq_budget_state(cu, R, &gs, NULL), MS_ERR_INVALID_PARAM);
    CHECK_EQ_INT(ms_cuda_seq_budget_state(cu, 0, NULL, NULL), MS_ERR_NULL_ARGUMENT);
  }
  /* bad budgets, as ms_seq_reset refuses them */
  for (i = 0; i <= MS_BUDGET_MAX_IDS; i++) big[i] = 1;
  /* a failed reset still starts the request, without a budget, as
     ms_seq_reset does: no state of the request before outlives it (the
     slot once kept it) */
  for (i = 0; i < 2; i++) {
    ms_budget_state gs = MS_BUDGET_IDLE, cs;
    int32_t grem = -5, crem = -5;
    CHECK_EQ_INT(ms_cuda_seq_reset(cu, NULL, 0, dh, 4, &ps[0]), MS_OK);
    CHECK(ms_cuda_seq_budget_state(cu, 0, &gs, &grem) == MS_OK && gs != MS_BUDGET_IDLE);
    ps[0].budget_end = big; ps[0].n_budget_end = i ? 2 : MS_BUDGET_MAX_IDS + 1;
    big[0] = i ? V : 1;
    CHECK_EQ_INT(ms_cuda_seq_reset(cu, NULL, 0, dh, 4, &ps[0]), i ? MS_ERR_TOKEN_OUT_OF_RANGE : MS_ERR_CAPACITY);
    CHECK_EQ_INT(ms_seq_reset(s[0], prompt[0], 4, V, &ps[0], 0), i ? MS_ERR_TOKEN_OUT_OF_RANGE : MS_ERR_CAPACITY);
    cs = ms_seq_budget_state(s[0], &crem);
    CHECK(ms_cuda_seq_budget_state(cu, 0, &gs, &grem) == MS_OK);
    CHECK_EQ_INT((int)gs, (int)cs);
    CHECK_EQ_INT((int)gs, (int)MS_BUDGET_IDLE);
    ps[0].budget_end = end; ps[0].n_budget_end = 2;
  }
  for (r = 0; r < R; r++) ms_seq_destroy(s[r]);
  ms_cuda_free(cu, dl); ms_cuda_free(cu, dt); ms_cuda_free(cu, dout); ms_cuda_free(cu, dh); ms_cuda_free(cu, dtop);
  ms_cuda_destroy(cu);
}


/* ms_cuda_batch.score_tokens: each row reports its given token as the CPU's
   ms_score does (logprob, rank, top list; -inf and rank V where the final
   distribution drops it), for every profile and route: greedy, the full
   row (top_p), top_k's candidates (small and large k), min_p, SGLang's
   joint cuts, HF epsilon, llama.cpp's chain (raw and processed), masks;
   the tokens scored are the CPU's draw, a banned id, the last id and
   random ones. accept appends the given token to the slot. */
static void test_gpu_score_matches_cpu(void) {
  enum { R = 12, VMAX = 3000 };
  static float x[R * VMAX];
  static ms_logprob top[R * 16], ctop[16];
  static const int32_t banned[2] = {7, 11};
  ms_cuda *cu = NULL;
  t_dev g;
  ms_params ps[R];
  const ms_params *pp[R];
  int32_t tok[R], given[R];
  ms_cuda_out out[R];
  ms_result rr[R];
  ms_cuda_batch b;
  int it, r, j, iters, rows = 0, bad = 0, dropped = 0;
  if (!t_gpu()) SKIP(t_why);
  if (!t_make(&cu, &g, R, VMAX, 0, 0, 16)) return;
  iters = t_small() ? 4 : 24;
  for (it = 0; it < iters; it++) {
    const int V = it % 2 ? VMAX : 700;
    for (r = 0; r < R; r++) {
      ms_params p;
      ms_output o;
      int kind = (it + r) % 4;
      float *xr = x + (size_t)r * (size_t)V;
      switch (r) {
        case 0: p = ms_params_default(); p.temperature = 0.0f; break;
        case 1: p = ms_params_default(); p.top_p = 0.9f; break;
        case 2: p = ms_params_default(); p.top_k = 5; break;
        case 3: p = ms_params_default(); p.top_k = 1500; p.top_p = 0.95f; break;
        case 4: p = ms_params_default(); p.min_p = 0.1f; p.temperature = 0.7f; break;
        case 5: p = ms_params_profile_default(MS_PROFILE_SGLANG); p.top_k = 20; p.top_p = 0.8f; p.min_p = 0.02f; break;
        case 6: p = ms_params_profile_default(MS_PROFILE_HF); p.epsilon_cutoff = 0.001f; p.top_k = 0; break;
        case 7: p = ms_params_profile_default(MS_PROFILE_LLAMACPP); break;
        case 8: p = ms_params_profile_default(MS_PROFILE_LLAMACPP); p.typical_p = 0.8f; p.samplers = "kypmt"; break;
        case 9: p = ms_params_default(); p.banned_ids = banned; p.n_banned_ids = 2; p.top_p = 0.7f; break;
        case 10: p = ms_params_profile_default(MS_PROFILE_LLAMACPP); p.temperature = 0.0f; break;
        default: p = ms_params_default(); p.temperature = 1.3f; break;
      }
      p.seed = 500u + (uint64_t)(it * R + r); p.has_seed = 1;
      p.logprobs = (it + r) % 3 == 0 ? -1 : 5 + r % 7;   /* -1 reads as 0 */
      p.logprobs_mode = (it / 2 + r) % 2 ? MS_LOGPROBS_PROCESSED : MS_LOGPROBS_RAW;
      t_fill(xr, V, kind == 1 ? 3.0f : 1.0f);
      if (kind == 2) for (j = 0; j < V; j++) xr[j] = t_bf16(xr[j]);
      if (kind == 3) { xr[3] = 9.0f; xr[5] = 8.5f; }
      ps[r] = p;
      pp[r] = &ps[r];
      /* the token: the CPU's draw, a banned one, the last, random */
      memset(&o, 0, sizeof o);
      switch ((it + 3 * r) % 4) {
        case 0: given[r] = ms_sample(t_cpu, xr, V, &p, NULL, &o) == MS_OK ? o.token : 0; break;
        case 1: given[r] = 7; break;
        case 2: given[r] = V - 1; break;
        default: given[r] = (int32_t)t_rand((uint32_t)V); break;
      }
    }
    CHECK(ms_cuda_upload(cu, g.dl, x, (size_t)R * (size_t)V * 4) == MS_OK);
    memset(&b, 0, sizeof b);
    b.n_rows = R; b.vocab = V; b.logits = g.dl; b.row_stride = (size_t)V; b.params = pp;
    b.tokens = g.dt; b.out = g.dout; b.top = g.dtop; b.top_stride = 16; b.row_results = rr; b.score_tokens = given;
    CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);
    CHECK(ms_cuda_download(cu, tok, g.dt, sizeof tok) == MS_OK);
    CHECK(ms_cuda_download(cu, out, g.dout, sizeof out) == MS_OK);
    CHECK(ms_cuda_download(cu, top, g.dtop, sizeof top) == MS_OK);
    for (r = 0; r < R; r++) {
      ms_output o;
      ms_result crc;
      int here = 0;
      memset(&o, 0, sizeof o);
      o.top = ctop; o.top_capacity = 16;
      crc = ms_score(t_cpu, x + (size_t)r * (size_t)V, V, &ps[r], NULL, given[r], &o);
      rows++;
      dropped += crc == MS_OK && o.logprob == -INFINITY;
      if (out[r].status != (int32_t)crc || tok[r] != o.token) here = 1;
      else if (crc == MS_OK) {
        if (!(out[r].logprob == o.logprob || fabs((double)out[r].logprob - (double)o.logprob) <= 1e-4) ||
            out[r].rank != o.rank || out[r].n_top != o.n_top)
          here = 1;
        for (j = 0; j < o.n_top && j < out[r].n_top; j++)
          if (top[r * 16 + j].token != ctop[j].token || !(fabs((double)top[r * 16 + j].logprob - (double)ctop[j].logprob) <= 1e-4))
            here = 1;
      }
      if (here && ++bad <= 8)
        printf("  it %d row %d V %d (profile %d lp %d/%d) token %d: status %d / %d, token %d / %d, lp %.6g / %.6g, rank %d / %d, "
               "n_top %d / %d\n", it, r, V, (int)ps[r].profile, ps[r].logprobs, (int)ps[r].logprobs_mode, given[r], out[r].status,
               (int)crc, tok[r], o.token, (double)out[r].logprob, (double)o.logprob, out[r].rank, o.rank, out[r].n_top, o.n_top);
    }
  }
  printf("  %d scored rows (%d dropped by their distribution): %d differ from the CPU\n", rows, dropped, bad);
  CHECK_EQ_INT(bad, 0);
  CHECK(dropped > 0);
  /* a token outside the vocabulary fails its row only, on the host */
  given[2] = -3;
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_ERR_TOKEN_OUT_OF_RANGE);
  CHECK_EQ_INT(rr[2], MS_ERR_TOKEN_OUT_OF_RANGE);
  CHECK_EQ_INT(rr[1], MS_OK);
  CHECK(strstr(ms_cuda_last_error(cu), "score token -3") != NULL);
  t_dev_free(cu, &g);
  ms_cuda_destroy(cu);
  {
    /* accept: the scored token joins its slot (a presence penalty on the
       next step sees it), as ms_seq_accept after ms_score */
    ms_cuda_desc d;
    ms_params q = ms_params_default();
    const ms_params *qp[1] = { &q };
    int32_t slot0[1] = { 0 }, t1[1] = { 42 }, tk[1];
    ms_seq *seq = NULL;
    ms_output o;
    const int V = 300;
    memset(&d, 0, sizeof d);
    d.max_rows = 1; d.max_vocab = V; d.max_slots = 1;
    CHECK_EQ_INT(ms_cuda_create(&cu, &d, t_msg, sizeof t_msg), MS_OK);
    if (!cu || !t_dev_alloc(cu, &g, (size_t)V * 4, 1, 16)) { CHECK(0); if (cu) ms_cuda_destroy(cu); return; }
    for (j = 0; j < V; j++) x[j] = 0.01f * (float)(j % 97);
    x[42] = 5.0f; x[43] = 4.5f;   /* 42 leads until its presence penalty (2) */
    CHECK(ms_cuda_upload(cu, g.dl, x, (size_t)V * 4) == MS_OK);
    CHECK(ms_cuda_seq_reset(cu, NULL, 0, NULL, 0, NULL) == MS_OK);
    q.presence_penalty = 2.0f; q.temperature = 0.0f;
    memset(&b, 0, sizeof b);
    b.n_rows = 1; b.vocab = V; b.logits = g.dl; b.row_stride = (size_t)V; b.params = qp; b.slots = slot0;
    b.tokens = g.dt; b.out = g.dout; b.accept = 1; b.score_tokens = t1;
    t1[0] = 7;   /* a token other than the argmax, accepted */
    CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);
    t1[0] = 42;
    CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);
    b.score_tokens = NULL;   /* then a draw: 42 and 7 carry the penalty */
    CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);
    CHECK(ms_cuda_download(cu, tk, g.dt, 4) == MS_OK);
    CHECK(ms_seq_create(&seq, 16) == MS_OK && ms_seq_reset(seq, NULL, 0, V, &q, 0) == MS_OK);
    CHECK(ms_seq_accept(seq, 7) == MS_OK && ms_seq_accept(seq, 42) == MS_OK);
    memset(&o, 0, sizeof o);
    CHECK(ms_sample(t_cpu, x, V, &q, seq, &o) == MS_OK);
    CHECK_EQ_INT(tk[0], o.token);
    CHECK_EQ_INT(tk[0], 43);
    ms_seq_destroy(seq);
    t_dev_free(cu, &g);
    ms_cuda_destroy(cu);
  }
}

/* ---- top lists leave -inf out -----------------------------------------------------
   A row with fewer finite logits than the logprobs asked for: the top list
   holds the finite ones only (raw: the caller's -inf; processed: what the
   masks dropped), as the CPU lists them, in every profile. */
static void test_gpu_top_list_skips_neg_inf(void) {
  enum { R = 8, V = 7 };
  static const ms_profile profs[4] = { MS_PROFILE_VLLM, MS_PROFILE_HF, MS_PROFILE_SGLANG, MS_PROFILE_LLAMACPP };
  static float x[R * V], probs[R * V], cprobs[V];
  static ms_logprob top[R * 12], ctop[12];
  int32_t banned[1] = { 5 }, tok[R];
  ms_cuda_out out[R];
  ms_params ps[R];
  const ms_params *pp[R];
  ms_cuda *cu = NULL;
  t_dev g;
  int r, i, bad = 0;
  if (!t_gpu()) SKIP(t_why);
  if (!t_make(&cu, &g, R, V, 0, 0, 12)) return;
  for (r = 0; r < R; r++) {
    for (i = 0; i < V; i++) x[r * V + i] = (float)((i * 7 + r) % 5) * 0.3f;
    x[r * V + 1] = -INFINITY; x[r * V + 4] = -INFINITY;
    ps[r] = ms_params_profile_default(profs[r % 4]);
    if (profs[r % 4] == MS_PROFILE_LLAMACPP) ps[r].top_k = 4;
    ps[r].seed = 3; ps[r].has_seed = 1;
    ps[r].logprobs = 10;
    ps[r].logprobs_mode = r < 4 ? MS_LOGPROBS_RAW : MS_LOGPROBS_PROCESSED;
    ps[r].banned_ids = banned; ps[r].n_banned_ids = 1;
    pp[r] = &ps[r];
  }
  t_batch_run(cu, &g, x, R, V, pp, 12, probs, tok, out, top);
  for (r = 0; r < R; r++) {
    ms_output o;
    ms_result crc;
    double e;
    if (t_row_differs(t_cpu, x + r * V, V, &ps[r], probs + r * V, tok[r], &out[r], top + r * 12, 12, cprobs, ctop, &o, &crc, &e)) {
      bad++;
      printf("  %s %s: n_top %d / cpu %d, token %d / %d\n", ms_profile_name(ps[r].profile), r < 4 ? "raw" : "processed",
             out[r].n_top, o.n_top, tok[r], o.token);
    }
    CHECK(out[r].n_top <= 5);
    for (i = 0; i < out[r].n_top; i++) CHECK(top[r * 12 + i].logprob > -INFINITY);
  }
  CHECK_EQ_INT(bad, 0);
  t_dev_free(cu, &g);
  ms_cuda_destroy(cu);
}

/* ---- a token with several bias entries ------------------------------------------
   The CPU adds a token's bias entries to its logit one after another, in
   the order given ((l + b1) + b2); the GPU summed the entries first
   (l + (b1 + b2)), a different rounding. Token 7 (two entries) and token 9
   are set up to tie exactly on the CPU, where a greedy row takes the lower
   id; the pre-summed bias breaks the tie the other way. */
static void test_gpu_bias_duplicates(void) {
  ms_cuda *cu = t_gpu();
  ms_params p = ms_params_default();
  const ms_params *pp[1];
  ms_bias bias[3];
  int32_t tok[1];
  float x[64];
  void *dl = NULL;
  ms_cuda_batch b;
  ms_output o;
  int i, found = 0;
  volatile float l = 0.0f, b1 = 0.0f, b2 = 0.0f, seq = 0.0f, pre;
  if (!cu) SKIP(t_why);
  for (i = 0; i < 20000 && !found; i++) {
    l = 1.0f + (float)i * 0.0173f;
    b1 = 3.0f + (float)(i % 89) * 0.01171f;
    b2 = 0.25f + (float)(i % 61) * 0.00937f;
    seq = l + b1; seq = seq + b2;
    pre = b1 + b2; pre = l + pre;
    if (pre < seq) found = 1;
  }
  CHECK(found);
  for (i = 0; i < 64; i++) x[i] = -10.0f;
  x[7] = l; x[9] = seq;
  bias[0].token = 7; bias[0].bias = b1;
  bias[1].token = 30; bias[1].bias = -1.0f;
  bias[2].token = 7; bias[2].bias = b2;
  p.temperature = 0.0f; p.logit_bias = bias; p.n_logit_bias = 3;
  pp[0] = &p;
  memset(&o, 0, sizeof o);
  CHECK_EQ_INT(ms_sample(t_cpu, x, 64, &p, NULL, &o), MS_OK);
  CHECK_EQ_INT(o.token, 7);
  CHECK(t_bufs(cu));
  CHECK(ms_cuda_malloc(cu, &dl, sizeof x) == MS_OK);
  CHECK(ms_cuda_upload(cu, dl, x, sizeof x) == MS_OK);
  memset(&b, 0, sizeof b);
  b.n_rows = 1; b.vocab = 64; b.logits = dl; b.row_stride = 64; b.params = pp; b.tokens = t_dtokens;
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);
  CHECK(ms_cuda_download(cu, tok, t_dtokens, 4) == MS_OK);
  CHECK_EQ_INT(tok[0], 7);
  ms_cuda_free(cu, dl);
}

/* ---- many top logprobs ------------------------------------------------------------
   Hundreds of top entries over a row with heavy ties (the selection's
   tie path: more equal values than places), raw and processed (with
   top-k), as the CPU lists them. The kernels gather at most 1024 per row:
   a row asking for more (with room for more) is refused with
   MS_ERR_UNSUPPORTED, never cut short. */
static void test_gpu_logprobs_many(void) {
  enum { R = 4, V = 5000, S = 1500 };
  static const int32_t want[R] = { 300, 1000, 1024, 1500 };
  ms_cuda *cu = NULL;
  ms_cuda_desc d;
  static float x[R * V];
  static ms_logprob top[R * S], ctop[S];
  ms_cuda_out out[R];
  ms_params ps[R];
  const ms_params *pp[R];
  ms_result rr[R];
  void *dl = NULL, *dt = NULL, *dout = NULL, *dtop = NULL;
  ms_cuda_batch b;
  int r, j;
  if (!t_gpu()) SKIP(t_why);
  memset(&d, 0, sizeof d);
  d.max_rows = R; d.max_vocab = V;
  CHECK_EQ_INT(ms_cuda_create(&cu, &d, t_msg, sizeof t_msg), MS_OK);
  if (!cu) return;
  for (r = 0; r < R * V; r++) x[r] = (float)floor(t_unif() * 40.0) * 0.25f - 5.0f;
  for (r = 0; r < R; r++) {
    ps[r] = ms_params_default();
    ps[r].max_logprobs = S; ps[r].logprobs = want[r];
    ps[r].logprobs_mode = r % 2 ? MS_LOGPROBS_PROCESSED : MS_LOGPROBS_RAW;
    ps[r].top_k = r == 1 ? 700 : 0;
    ps[r].seed = (uint64_t)r; ps[r].has_seed = 1;
    pp[r] = &ps[r];
  }
  CHECK(ms_cuda_malloc(cu, &dl, sizeof x) == MS_OK && ms_cuda_malloc(cu, &dt, R * 4) == MS_OK &&
        ms_cuda_malloc(cu, &dout, sizeof out) == MS_OK && ms_cuda_malloc(cu, &dtop, sizeof top) == MS_OK);
  CHECK(ms_cuda_upload(cu, dl, x, sizeof x) == MS_OK);
  memset(&b, 0, sizeof b);
  b.n_rows = R; b.vocab = V; b.logits = dl; b.row_stride = V; b.params = pp; b.tokens = dt;
  b.out = dout; b.top = dtop; b.top_stride = S; b.row_results = rr;
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_ERR_UNSUPPORTED);
  CHECK(ms_cuda_download(cu, out, dout, sizeof out) == MS_OK);
  CHECK(ms_cuda_download(cu, top, dtop, sizeof top) == MS_OK);
  for (r = 0; r < R; r++) {
    ms_output o;
    int bad = 0;
    if (want[r] > 1024) {
      CHECK_EQ_INT(rr[r], MS_ERR_UNSUPPORTED);
      CHECK_EQ_INT(out[r].status, MS_ERR_UNSUPPORTED);
      continue;
    }
    memset(&o, 0, sizeof o);
    o.top = ctop; o.top_capacity = S;
    CHECK_EQ_INT(ms_sample(t_cpu, x + (size_t)r * V, V, &ps[r], NULL, &o), MS_OK);
    CHECK_EQ_INT(rr[r], MS_OK);
    CHECK_EQ_INT(out[r].token, o.token);
    CHECK_EQ_INT(out[r].rank, o.rank);
    CHECK_NEAR(out[r].logprob, o.logprob, 1e-4);
    CHECK_EQ_INT(out[r].n_top, o.n_top);
    for (j = 0; j < o.n_top && j < out[r].n_top; j++)
      bad += top[r * S + j].token != ctop[j].token || !(fabs((double)top[r * S + j].logprob - (double)ctop[j].logprob) <= 1e-4);
    CHECK_MSG(bad == 0, "row %d: %d of %d top entries differ", r, bad, o.n_top);
  }
  /* a smaller top list is no reason to refuse: the row gets top_stride entries */
  b.top_stride = 1000;
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);
  CHECK(ms_cuda_download(cu, out, dout, sizeof out) == MS_OK);
  CHECK_EQ_INT(out[3].n_top, 1000);
  ms_cuda_free(cu, dl); ms_cuda_free(cu, dt); ms_cuda_free(cu, dout); ms_cuda_free(cu, dtop);
  ms_cuda_destroy(cu);
}

/* ---- calls back to back, one synchronisation -----------------------------------
   Six batches queued without waiting (each with its own logits buffer and
   an asynchronous copy of its ids to the host), then one ms_cuda_sync: the
   parameter staging must not be reused before its upload ran. Meaningful
   on a GPU and with the emulator's deferred mode
   (MYSAMPLE_CUDA_EMU_ASYNC=defer), which runs queued work only when the
   host synchronises. */
static void test_gpu_back_to_back(void) {
  enum { N = 6, R = 8, V = 1000 };
  ms_cuda *cu = t_gpu();
  static float x[N][R * V];
  static int32_t host[N][R];
  ms_params ps[N][R];
  const ms_params *pp[N][R];
  void *dl[N], *dt[N];
  ms_cuda_batch b;
  int c, r, same = 0;
  if (!cu) SKIP(t_why);
  for (c = 0; c < N; c++) {
    dl[c] = dt[c] = NULL;
    CHECK(ms_cuda_malloc(cu, &dl[c], sizeof x[c]) == MS_OK && ms_cuda_malloc(cu, &dt[c], sizeof host[c]) == MS_OK);
    t_fill(x[c], R * V, 2.0f);
    CHECK(ms_cuda_upload(cu, dl[c], x[c], sizeof x[c]) == MS_OK);
    for (r = 0; r < R; r++) {
      ps[c][r] = t_grid_valid(c * 53 + r * 7 + 2);
      if (ps[c][r].temperature < 0.01f) ps[c][r].temperature = 0.9f;
      ps[c][r].seed = (uint64_t)(c * 1000 + r); ps[c][r].has_seed = 1;
      pp[c][r] = &ps[c][r];
      host[c][r] = -7;
    }
  }
  for (c = 0; c < N; c++) {
    memset(&b, 0, sizeof b);
    b.n_rows = R; b.vocab = V; b.logits = dl[c]; b.row_stride = V; b.params = pp[c];
    b.tokens = dt[c]; b.host_tokens = host[c];
    CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);
  }
  CHECK_EQ_INT(ms_cuda_sync(cu, NULL), MS_OK);
  for (c = 0; c < N; c++)
    for (r = 0; r < R; r++) {
      ms_output o;
      memset(&o, 0, sizeof o);
      CHECK_EQ_INT(ms_sample(t_cpu, x[c] + r * V, V, &ps[c][r], NULL, &o), MS_OK);
      same += o.token == host[c][r];
    }
  printf("  %d of %d tokens equal the CPU's\n", same, N * R);
  CHECK_EQ_INT(same, N * R);
  for (c = 0; c < N; c++) { ms_cuda_free(cu, dl[c]); ms_cuda_free(cu, dt[c]); }
}

/* Bad rows: a validation error, NaN, every token masked. */
static void test_gpu_row_errors(void) {
  ms_cuda *cu = t_gpu();
  ms_params ps[4];
  const ms_params *pp[4];
  ms_cuda_out out[4];
  ms_result rr[4];
  int32_t allowed[1] = { 3 }, banned[1] = { 3 };
  ms_cuda_batch b;
  const int V = 100;
  int r;
  if (!cu) SKIP(t_why);
  CHECK(t_bufs(cu));
  t_fill(t_logits, 4 * V, 1.0f);
  t_logits[2 * V + 17] = (float)NAN;
  CHECK(ms_cuda_upload(cu, t_dlogits, t_logits, (size_t)4 * (size_t)V * 4) == MS_OK);
  for (r = 0; r < 4; r++) { ps[r] = ms_params_default(); ps[r].seed = 5; ps[r].has_seed = 1; pp[r] = &ps[r]; }
  ps[1].top_p = 0.0f;
  ps[3].allowed_ids = allowed; ps[3].n_allowed_ids = 1; ps[3].banned_ids = banned; ps[3].n_banned_ids = 1;
  memset(&b, 0, sizeof b);
  b.n_rows = 4; b.vocab = V; b.logits = t_dlogits; b.row_stride = (size_t)V; b.params = pp; b.tokens = t_dtokens;
  b.out = t_dout; b.row_results = rr;
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_ERR_INVALID_PARAM);
  CHECK_EQ_INT(rr[0], MS_OK);
  CHECK_EQ_INT(rr[1], MS_ERR_INVALID_PARAM);
  CHECK(ms_cuda_download(cu, out, t_dout, sizeof out) == MS_OK);
  CHECK_EQ_INT(out[0].status, MS_OK);
  CHECK(out[0].token >= 0 && out[0].token < V);
  CHECK_EQ_INT(out[1].status, MS_ERR_INVALID_PARAM);
  CHECK_EQ_INT(out[1].token, -1);
  CHECK_EQ_INT(out[2].status, MS_ERR_NAN_LOGIT);
  CHECK_EQ_INT(out[3].status, MS_ERR_ALL_MASKED);
  CHECK_EQ_INT(out[3].token, -1);
}

/* Calls the GPU sampler refuses, each with its code and a message that
   names the cause (ms_cuda_last_error): the batch's arguments, and rows
   that ask for what the kernels do not implement (refused, never
   ignored), with the other rows still sampled. */
static ms_result t_hook_noop(void *user, float *logits, int32_t vocab, const ms_seq *seq, const ms_params *params) {
  (void)user; (void)logits; (void)vocab; (void)seq; (void)params;
  return MS_OK;
}
static void test_gpu_call_refusals(void) {
  ms_cuda *cu = t_gpu();
  ms_params ps[5];
  const ms_params *pp[5];
  ms_cuda_out out[5];
  ms_result rr[5];
  int32_t slots[5] = { -1, -1, -1, -1, 4 };   /* max_slots is 4 */
  ms_cuda_batch b, g;
  const int V = 100;
  int r;
  if (!cu) SKIP(t_why);
  CHECK(t_bufs(cu));
  t_fill(t_logits, 5 * V, 1.0f);
  CHECK(ms_cuda_upload(cu, t_dlogits, t_logits, (size_t)5 * (size_t)V * 4) == MS_OK);
  for (r = 0; r < 5; r++) { ps[r] = ms_params_default(); ps[r].seed = 3; ps[r].has_seed = 1; pp[r] = &ps[r]; }
  memset(&g, 0, sizeof g);
  g.n_rows = 1; g.vocab = V; g.logits = t_dlogits; g.row_stride = (size_t)V; g.params = pp; g.tokens = t_dtokens;
  /* the batch's arguments */
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, NULL), MS_ERR_NULL_ARGUMENT);
  CHECK(strstr(ms_cuda_last_error(cu), "batch is NULL") != NULL);
  b = g; b.params = NULL;
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_ERR_NULL_ARGUMENT);
  CHECK(strstr(ms_cuda_last_error(cu), "batch->params") != NULL);
  b = g; b.logits = NULL;
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_ERR_NULL_ARGUMENT);
  CHECK(strstr(ms_cuda_last_error(cu), "batch->logits") != NULL);
  b = g; b.tokens = NULL;
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_ERR_NULL_ARGUMENT);
  CHECK(strstr(ms_cuda_last_error(cu), "batch->tokens") != NULL);
  b = g; b.vocab = T_MAXV + 1;
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_ERR_BAD_VOCAB);
  CHECK(strstr(ms_cuda_last_error(cu), "(max_vocab)") != NULL);
  b = g; b.vocab = 0;
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_ERR_BAD_VOCAB);
  b = g; b.n_rows = 0;
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_ERR_INVALID_PARAM);
  CHECK(strstr(ms_cuda_last_error(cu), "n_rows 0 is outside") != NULL);
  b = g; b.n_rows = T_MAXB + 1;
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_ERR_INVALID_PARAM);
  b = g; b.row_stride = (size_t)V - 1;
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_ERR_INVALID_PARAM);
  CHECK(strstr(ms_cuda_last_error(cu), "row_stride 99 is below the vocab") != NULL);
  b = g;
  CHECK_EQ_INT(ms_cuda_probs(cu, NULL, &b, t_dprobs, (size_t)V - 1), MS_ERR_INVALID_PARAM);
  CHECK(strstr(ms_cuda_last_error(cu), "probs_stride 99") != NULL);
  CHECK_EQ_INT(ms_cuda_probs(cu, NULL, &b, NULL, (size_t)V), MS_ERR_NULL_ARGUMENT);
  CHECK(strcmp(ms_cuda_last_error(cu), "probs is NULL") == 0);
  CHECK_EQ_INT(ms_cuda_probs(NULL, NULL, &b, t_dprobs, (size_t)V), MS_ERR_NULL_ARGUMENT);
  b = g; b.top = t_dtop; b.top_stride = 0;
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_ERR_INVALID_PARAM);
  CHECK(strstr(ms_cuda_last_error(cu), "top_stride 0") != NULL);
  CHECK_EQ_INT(ms_cuda_sample(NULL, NULL, &g), MS_ERR_NULL_ARGUMENT);
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &g), MS_OK);   /* and the sampler still works */
  CHECK(ms_cuda_last_error(cu)[0] == '\0');
  /* rows the kernels cannot run: a hook, HF's min_tokens_to_keep and
     typical_p, a slot past max_slots; row 0 is sampled */
  ps[1].hook = t_hook_noop; ps[1].hook_stage = MS_HOOK_FIRST;
  ps[2].profile = MS_PROFILE_HF; ps[2].min_tokens_to_keep = 3;
  ps[3].profile = MS_PROFILE_HF; ps[3].typical_p = 0.5f;
  b = g; b.n_rows = 5; b.slots = slots; b.out = t_dout; b.row_results = rr;
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_ERR_UNSUPPORTED);   /* the first failing row's */
  CHECK(strstr(ms_cuda_last_error(cu), "row 1: logits hooks run on the CPU only") != NULL);
  CHECK_EQ_INT(rr[0], MS_OK);
  CHECK_EQ_INT(rr[1], MS_ERR_UNSUPPORTED);
  CHECK_EQ_INT(rr[2], MS_ERR_UNSUPPORTED);
  CHECK_EQ_INT(rr[3], MS_ERR_UNSUPPORTED);
  CHECK_EQ_INT(rr[4], MS_ERR_INVALID_PARAM);
  CHECK(ms_cuda_download(cu, out, t_dout, sizeof out) == MS_OK);
  CHECK_EQ_INT(out[0].status, MS_OK);
  CHECK(out[0].token >= 0 && out[0].token < V);
  for (r = 1; r < 5; r++) { CHECK_EQ_INT(out[r].status, (int)rr[r]); CHECK_EQ_INT(out[r].token, -1); }
  /* each reason, alone */
  b.n_rows = 1;
  for (r = 2; r < 5; r++) {
    static const char *const why[] = { "min_tokens_to_keep > 1 is not implemented on the GPU", "typical_p is not implemented on the GPU",
                                       "slot 4 is outside -1..3 (max_slots - 1)" };
    b.params = pp + r; b.slots = slots + r;
    CHECK(ms_cuda_sample(cu, NULL, &b) != MS_OK);
    CHECK_MSG(strstr(ms_cuda_last_error(cu), why[r - 2]) != NULL, "row %d: %s", r, ms_cuda_last_error(cu));
  }
}

/* NaN and +Inf where masks reach them, in every profile, against the CPU
   (status, distribution, token): +Inf fails a row only where it survives
   the masks (a banned, not allowed or min_tokens-masked +Inf does not;
   biased by -100 it does), NaN anywhere in the row except outside a row's
   allowed ids (the CPU reads only those). */
static void test_gpu_bad_values_where_masked(void) {
  enum { R = 10, V = 300 };
  static const ms_profile profs[] = { MS_PROFILE_VLLM, MS_PROFILE_HF, MS_PROFILE_SGLANG, MS_PROFILE_LLAMACPP };
  static float x[R * V], probs[R * V], cprobs[V];
  static ms_logprob top[R * 4], ctop[4];
  static uint32_t mask[(V + 31) / 32];
  int32_t allowed[3] = { 7, 40, 41 }, banned[1] = { 41 }, tok[R];
  ms_bias bias[1];
  ms_params ps[R];
  const ms_params *pp[R];
  ms_cuda_out out[R];
  ms_result rr[R];
  ms_cuda *cu = NULL;
  t_dev g;
  ms_cuda_batch b;
  int pi, r, i, bad = 0, errors = 0;
  if (!t_gpu()) SKIP(t_why);
  if (!t_make(&cu, &g, R, V, 0, 0, 4)) return;
  for (i = 0; i < (V + 31) / 32; i++) mask[i] = 0xffffffffu;
  mask[41 >> 5] &= ~(1u << (41 & 31));   /* the bitmask leaves 41 out */
  bias[0].token = 41; bias[0].bias = -100.0f;
  for (pi = 0; pi < 4; pi++) {
    t_fill(x, R * V, 1.0f);
    for (r = 0; r < R; r++) {
      ms_params p = ms_params_profile_default(profs[pi]);
      const int nan = r & 1;   /* odd rows NaN at 41, even rows +Inf */
      p.seed = 9u + (uint64_t)r; p.has_seed = 1; p.logprobs = 2;
      x[r * V + 41] = nan ? (float)NAN : INFINITY;
      switch (r >> 1) {
        case 0: p.banned_ids = banned; p.n_banned_ids = 1; break;
        case 1: p.allowed_ids = allowed; p.n_allowed_ids = 2; break;   /* 7 and 40: 41 is not allowed */
        case 2: p.min_tokens = 3; p.eos_token_id = 41; break;
        case 3: p.logit_bias = bias; p.n_logit_bias = 1; break;
        default: p.token_bitmask = mask; break;
      }
      ps[r] = p;
      pp[r] = &ps[r];
    }
    CHECK(ms_cuda_upload(cu, g.dl, x, sizeof x) == MS_OK);
    memset(&b, 0, sizeof b);
    b.n_rows = R; b.vocab = V; b.logits = g.dl; b.row_stride = V; b.params = pp; b.row_results = rr;
    b.tokens = g.dt; b.out = g.dout; b.top = g.dtop; b.top_stride = 4;
    ms_cuda_probs(cu, NULL, &b, g.dp, V);
    CHECK(ms_cuda_download(cu, probs, g.dp, sizeof probs) == MS_OK);
    ms_cuda_sample(cu, NULL, &b);
    CHECK(ms_cuda_download(cu, tok, g.dt, sizeof tok) == MS_OK && ms_cuda_download(cu, out, g.dout, sizeof out) == MS_OK &&
          ms_cuda_download(cu, top, g.dtop, sizeof top) == MS_OK);
    for (r = 0; r < R; r++) {
      ms_output o;
      ms_result crc;
      double e;
      if (t_row_differs(t_cpu, x + r * V, V, &ps[r], probs + r * V, tok[r], &out[r], top + r * 4, 4, cprobs, ctop, &o, &crc, &e)) {
        if (++bad <= 8)
          printf("  %s row %d (%s at 41, case %d): status %d / %d, token %d / %d, max |dp| %.3g, lp %g / %g, rank %d / %d, n_top %d / %d\n", ms_profile_name(profs[pi]), r,
                 (r & 1) ? "NaN" : "+Inf", r >> 1, out[r].status, (int)crc, tok[r], o.token, e, (double)out[r].logprob, (double)o.logprob, out[r].rank, o.rank, out[r].n_top, o.n_top);
      }
      errors += crc != MS_OK;
    }
  }
  printf("  %d rows, %d of them errors on the CPU: %d differ\n", 4 * R, errors, bad);
  CHECK_EQ_INT(bad, 0);
  CHECK(errors > 0 && errors < 4 * R);
  t_dev_free(cu, &g);
  ms_cuda_destroy(cu);
}

/* A logit_bias of +inf on a masked id: the mask wins on both devices,
   whichever order the profile puts them in (-inf + inf would be NaN; the
   CPU once failed a row so with MS_ERR_NAN_LOGIT, but only where no later
   mask overwrote the NaN, and the GPU kept the id masked). Every profile,
   against the CPU: not allowed, off in the bitmask, banned (before the
   bias in SGLang and llama.cpp, after it in HF), min_tokens' EOS and stop
   ids, a one-id bad word (not in SGLang), a model logit of -inf with a
   -inf entry before the +inf one (in the caller's order: -inf is final),
   any id but the forced one while a reasoning budget forces; +Inf (an
   error on both) on an allowed id and on the forced one. vLLM clamps the
   bias to 100. Id 41 never has a probability. */
static void test_gpu_inf_bias_where_masked(void) {
  enum { R = 9, V = 64, NB = 2 };
  static const ms_profile profs[] = { MS_PROFILE_VLLM, MS_PROFILE_HF, MS_PROFILE_SGLANG, MS_PROFILE_LLAMACPP };
  static float x[R * V], probs[R * V], cprobs[V];
  static ms_logprob top[R * 2], ctop[2];
  static uint32_t mask[(V + 31) / 32];
  static const int32_t prompt[2] = { 1, 5 }, start[1] = { 5 }, end_other[1] = { 6 }, end_41[1] = { 41 };
  int32_t allowed[2] = { 7, 40 }, allowed41[2] = { 7, 41 }, banned[1] = { 41 }, stops[1] = { 41 }, bw[1] = { 41 }, bwl[1] = { 1 };
  int32_t tok[R], slots[NB] = { 0, 1 }, btok[NB];
  ms_bias bias[2], bias3[3];
  ms_params ps[R], pb[NB];
  const ms_params *pp[R], *ppb[NB];
  ms_cuda_out out[R], bout[NB];
  ms_cuda *cu = NULL;
  ms_cuda_desc d;
  t_dev g;
  ms_cuda_batch b;
  ms_seq *seq = NULL;
  int pi, r, i, bad = 0, nan_rows = 0, ok_rows = 0, p41 = 0;
  if (!t_gpu()) SKIP(t_why);
  memset(&d, 0, sizeof d);
  d.max_rows = R; d.max_vocab = V; d.max_slots = NB;
  CHECK_EQ_INT(ms_cuda_create(&cu, &d, t_msg, sizeof t_msg), MS_OK);
  if (!cu) return;
  CHECK(t_dev_alloc(cu, &g, sizeof x, R, 2));
  CHECK(ms_seq_create(&seq, 16) == MS_OK);
  if (!seq) return;
  for (i = 0; i < (V + 31) / 32; i++) mask[i] = 0xffffffffu;
  mask[41 >> 5] &= ~(1u << (41 & 31));
  bias[0].token = 3; bias[0].bias = -1.0f;
  bias[1].token = 41; bias[1].bias = INFINITY;
  bias3[0].token = 41; bias3[0].bias = -INFINITY;   /* (row 7's: -inf first, then +inf) */
  bias3[1].token = 41; bias3[1].bias = INFINITY;
  bias3[2].token = 3; bias3[2].bias = 2.0f;
  t_fill(x, R * V, 1.0f);
  x[7 * V + 41] = -INFINITY;
  for (pi = 0; pi < 4; pi++) {
    for (r = 0; r < R; r++) {
      ms_params p = ms_params_profile_default(profs[pi]);
      p.seed = 40u + (uint64_t)r; p.has_seed = 1; p.logprobs = 1;
      p.logit_bias = bias; p.n_logit_bias = 2;
      switch (r) {
        case 0: p.banned_ids = banned; p.n_banned_ids = 1; break;
        case 1: p.allowed_ids = allowed; p.n_allowed_ids = 2; break;
        case 2: p.min_tokens = 3; p.eos_token_id = 41; break;
        case 3: p.min_tokens = 3; p.eos_token_id = 5; p.stop_token_ids = stops; p.n_stop_token_ids = 1; break;
        case 4: p.token_bitmask = mask; break;
        case 5: if (profs[pi] != MS_PROFILE_SGLANG) { p.bad_words = bw; p.bad_words_lens = bwl; p.n_bad_words = 1; } break;
        case 6: p.allowed_ids = allowed41; p.n_allowed_ids = 2; break;
        case 7: p.logit_bias = bias3; p.n_logit_bias = 3; break;
        default: p.temperature = 0.0f; p.token_bitmask = mask; break;   /* a greedy row */
      }
      ps[r] = p;
      pp[r] = &ps[r];
    }
    t_batch_run(cu, &g, x, R, V, pp, 2, probs, tok, out, top);
    for (r = 0; r < R; r++) {
      ms_output o;
      ms_result crc;
      double e;
      if (t_row_differs(t_cpu, x + r * V, V, &ps[r], probs + r * V, tok[r], &out[r], top + r * 2, 2, cprobs, ctop, &o, &crc, &e)) {
        if (++bad <= 8)
          printf("  %s row %d: status %d / %d, token %d / %d, max |dp| %.3g\n", ms_profile_name(profs[pi]), r, out[r].status, (int)crc,
                 tok[r], o.token, e);
      }
      nan_rows += crc == MS_ERR_NAN_LOGIT;
      ok_rows += crc == MS_OK;
      p41 += crc == MS_OK && r != 6 && (probs[r * V + 41] != 0.0f || cprobs[41] != 0.0f);   /* (row 6 allows 41) */
    }
    /* a budget forcing its end token from the first step: 6 (41 masked)
       or 41 itself */
    for (r = 0; r < NB; r++) {
      ms_params p = ms_params_profile_default(profs[pi]);
      p.seed = 7u; p.has_seed = 1; p.logit_bias = bias; p.n_logit_bias = 2;
      p.budget_start = start; p.n_budget_start = 1; p.budget_end = r ? end_41 : end_other; p.n_budget_end = 1; p.budget_tokens = 0;
      pb[r] = p;
      ppb[r] = &pb[r];
      CHECK(ms_cuda_upload(cu, g.dt, prompt, sizeof prompt) == MS_OK);
      CHECK_EQ_INT(ms_cuda_seq_reset(cu, NULL, r, g.dt, 2, &pb[r]), MS_OK);
    }
    CHECK(ms_cuda_upload(cu, g.dl, x, (size_t)NB * V * 4) == MS_OK);
    memset(&b, 0, sizeof b);
    b.n_rows = NB; b.vocab = V; b.logits = g.dl; b.row_stride = V; b.params = ppb; b.slots = slots;
    b.tokens = g.dt; b.out = g.dout;
    ms_cuda_sample(cu, NULL, &b);
    CHECK(ms_cuda_download(cu, btok, g.dt, sizeof btok) == MS_OK && ms_cuda_download(cu, bout, g.dout, sizeof bout) == MS_OK);
    for (r = 0; r < NB; r++) {
      ms_output o;
      ms_result crc;
      CHECK_EQ_INT(ms_seq_reset(seq, prompt, 2, V, &pb[r], 0), MS_OK);
      CHECK(ms_seq_budget_state(seq, NULL) == MS_BUDGET_FORCING);
      memset(&o, 0, sizeof o);
      crc = ms_sample(t_cpu, x + r * V, V, &pb[r], seq, &o);
      if (bout[r].status != (int32_t)crc || (crc == MS_OK && btok[r] != o.token)) {
        if (++bad <= 8)
          printf("  %s budget row %d: status %d / %d, token %d / %d\n", ms_profile_name(profs[pi]), r, bout[r].status, (int)crc, btok[r], o.token);
      }
      nan_rows += crc == MS_ERR_NAN_LOGIT;
      ok_rows += crc == MS_OK;
    }
  }
  printf("  %d rows: %d sampled, %d NaN on the CPU; %d differ\n", 4 * (R + NB), ok_rows, nan_rows, bad);
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(nan_rows, 0);
  CHECK_EQ_INT(p41, 0);
  CHECK(ok_rows >= 4 * (R + NB) - 10);   /* (+Inf on an allowed or forced 41: rows 6 and budget 1, but vLLM's) */
  ms_seq_destroy(seq);
  t_dev_free(cu, &g);
  ms_cuda_destroy(cu);
}

/* Raw top lists of rows whose masks hide a NaN or +Inf, on a row long
   enough that the CPU's top-N scan starts from a sampled threshold (too
   high here: a sampled id far above the rest), against the CPU: the N
   largest finite logits on both (the CPU's scan once kept the one value
   above its guess; ms_k_lp was right). Both profiles' greedy and random
   rows, over one block and several. */
static void test_gpu_raw_top_masked_bad(void) {
  enum { R = 8, V = 8192, N = 5 };
  static float x[R * V], probs[R * V], cprobs[V];
  static ms_logprob top[R * N], ctop[N];
  int32_t banned[1] = { 1 }, allowed[4] = { 5, 2000, 4095, 8000 }, tok[R];
  ms_params ps[R];
  const ms_params *pp[R];
  ms_cuda_out out[R];
  int si, r, bad = 0;
  if (!t_gpu()) SKIP(t_why);
  for (si = 0; si < 2; si++) {
    ms_cuda *cu = NULL;
    t_dev g;
    if (!t_make(&cu, &g, R, V, si ? 2 : -1, MS_CUDA_TOPP_DEFAULT, N)) return;
    t_fill(x, R * V, 1.0f);
    for (r = 0; r < R; r++) {
      ms_params p = ms_params_default();
      x[r * V + 8] = 10.0f;                                  /* sampled by the CPU's guess */
      x[r * V + 1] = (r & 1) ? (float)NAN : INFINITY;
      if (r & 1) { p.allowed_ids = allowed; p.n_allowed_ids = 4; }   /* a NaN: outside an allowed list */
      else { p.banned_ids = banned; p.n_banned_ids = 1; }
      p.profile = (r & 4) ? MS_PROFILE_HF : MS_PROFILE_VLLM;
      p.temperature = (r & 2) ? 0.0f : 0.8f;
      p.logprobs = N; p.seed = 11u + (uint64_t)r; p.has_seed = 1;
      ps[r] = p; pp[r] = &ps[r];
    }
    t_batch_run(cu, &g, x, R, V, pp, N, probs, tok, out, top);
    for (r = 0; r < R; r++) {
      ms_output o;
      ms_result crc;
      double e;
      if (t_row_differs(t_cpu, x + (size_t)r * V, V, &ps[r], probs + (size_t)r * V, tok[r], &out[r], top + r * N, N, cprobs, ctop, &o,
                        &crc, &e)) {
        bad++;
        printf("  split %d row %d: status %d / %d, token %d / %d, n_top %d / %d, top[1] %d / %d\n", si ? 2 : -1, r, out[r].status,
               (int)crc, tok[r], o.token, out[r].n_top, o.n_top, top[r * N + 1].token, ctop[1].token);
      }
      CHECK_EQ_INT(out[r].n_top, N);
    }
    t_dev_free(cu, &g);
    ms_cuda_destroy(cu);
  }
  CHECK_EQ_INT(bad, 0);
}

/* The disk cache on a GPU machine: a fresh directory misses, the next
   lookup hits, and an ms_cuda created from it works. */
static void test_gpu_disk_cache_hit(void) {
  static char log[8192];
  ms_cuda *cu = t_gpu(), *cu2 = NULL;
  ms_cuda_compile_opts o;
  ms_cuda_compile_info a, c;
  ms_cuda_desc d;
  const char *t;
  int sm;
  if (!cu) SKIP(t_why);
  t = ms_cuda_target(cu);
  sm = atoi(strchr(t, '_') ? strchr(t, '_') + 1 : t);
  memset(&o, 0, sizeof o);
  o.cache_dir = "build/tests/cuda-cache-gpu";
  o.no_memory_cache = 1;
  CHECK_EQ_INT(ms_cuda_compile(sm, &o, &a, log, sizeof log), MS_OK);
  CHECK_EQ_INT(ms_cuda_compile(sm, &o, &c, log, sizeof log), MS_OK);
  CHECK_EQ_INT(c.source, 2);
  memset(&d, 0, sizeof d);
  d.max_rows = 2; d.max_vocab = 100; d.cache_dir = o.cache_dir;
  CHECK_EQ_INT(ms_cuda_create(&cu2, &d, log, sizeof log), MS_OK);
  ms_cuda_destroy(cu2);
}

/* An execution test under its name, "cuda-emu:" first when the device is
   the emulator (or --emu asked for it), with its wall time. */
static int t_emu_flag;
/* test_cuda --emu FILTER: only the tests whose name contains one of the
   comma-separated words of FILTER, or with a leading '!' none of them
   (testlib.h's t_only, as $MS_TESTS) */
static void t_run_gpu(const char *name, void (*fn)(void)) {
  char full[128];
  struct timeval a, z;
  if (!t_selected(name)) return;
  t_gpu();
  snprintf(full, sizeof full, "%s%s", (t_emu || t_emu_flag) ? "cuda-emu:" : "", name);
  gettimeofday(&a, NULL);
  t_run(full, fn);
  gettimeofday(&z, NULL);
  if (t_cu) printf("  (%.2f s)\n", (double)(z.tv_sec - a.tv_sec) + 1e-6 * (double)(z.tv_usec - a.tv_usec));
}
#define RUN_GPU(fn) t_run_gpu(#fn, fn)

int main(int argc, char **argv) {
  t_emu_flag = argc > 1 && !strcmp(argv[1], "--emu");
  if (t_emu_flag && argc > 2) t_only = argv[2];
  if (!t_emu_flag) {
    RUN(test_nvrtc_compile_sm80);
    RUN(test_nvrtc_compile_sm90);
    RUN(test_nvrtc_compile_sm90_topp_bins);
    RUN(test_nvrtc_unsupported_arch);
    RUN(test_nvrtc_options_env);
    RUN(test_route_env);
    RUN(test_fast_units_env);
    RUN(test_compile_caches);
    RUN(test_cache_dir_env);
    RUN(test_embedded_source);
    RUN(test_loader_without_gpu);
    RUN(test_rng_formula_matches_cpu);
  }
  RUN_GPU(test_gpu_probs_match_cpu);
  RUN_GPU(test_gpu_draws_match_cpu);
  RUN_GPU(test_gpu_chi_square);
  RUN_GPU(test_gpu_batch_invariance);
  RUN_GPU(test_gpu_logprobs_match_cpu);
  RUN_GPU(test_gpu_sequences_match_cpu);
  RUN_GPU(test_gpu_greedy_batch_ends_in_stats);
  RUN_GPU(test_gpu_features_match_cpu);
  RUN_GPU(test_gpu_history_matches_cpu);
  RUN_GPU(test_gpu_splits_and_vocab_edges);
  RUN_GPU(test_gpu_tie_cuts_match_cpu);
  RUN_GPU(test_gpu_topp_bins_route);
  RUN_GPU(test_gpu_topp_bins_large);
  RUN_GPU(test_gpu_topp_bins_stats);
  RUN_GPU(test_gpu_topk_fast_route);
  RUN_GPU(test_gpu_kfast_nopass);
  RUN_GPU(test_gpu_tail_unaligned_rows);
  RUN_GPU(test_gpu_pdl_matches_plain);
  RUN_GPU(test_gpu_l2_prefetch);
  RUN_GPU(test_gpu_bitmask_small_vocab);
  RUN_GPU(test_gpu_penalty_rounding);
  RUN_GPU(test_gpu_stage_order_per_profile);
  RUN_GPU(test_gpu_llamacpp_matches_cpu);
  RUN_GPU(test_gpu_llamacpp_typical_runs);
  RUN_GPU(test_gpu_llamacpp_sigma_overflow);
  RUN_GPU(test_gpu_llamacpp_slots);
  RUN_GPU(test_gpu_llamacpp_room);
  RUN_GPU(test_gpu_bad_values_where_masked);
  RUN_GPU(test_gpu_inf_bias_where_masked);
  RUN_GPU(test_gpu_raw_top_masked_bad);
  RUN_GPU(test_gpu_budget_matches_cpu);
  RUN_GPU(test_gpu_hf_epsilon_eta);
  RUN_GPU(test_gpu_top_list_skips_neg_inf);
  RUN_GPU(test_gpu_score_matches_cpu);
  RUN_GPU(test_gpu_bias_duplicates);
  RUN_GPU(test_gpu_logprobs_many);
  RUN_GPU(test_gpu_back_to_back);
  RUN_GPU(test_gpu_row_errors);
  RUN_GPU(test_gpu_call_refusals);
  RUN_GPU(test_gpu_disk_cache_hit);
  if (t_emu_flag && t_cu && !t_emu) {
    printf("FAIL cuda-emu: --emu, but the device is %s, not the emulator\n", ms_cuda_device_name(t_cu));
    t_total_fail++;
  }
  if (t_cu) {
    ms_cuda_free(t_cu, t_dlogits); ms_cuda_free(t_cu, t_dtokens); ms_cuda_free(t_cu, t_dprobs);
    ms_cuda_free(t_cu, t_dout); ms_cuda_free(t_cu, t_dtop);
    ms_cuda_destroy(t_cu);
  }
  if (t_cpu) ms_sampler_destroy(t_cpu);
  return t_done();
}
