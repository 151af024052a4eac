/* mysample cuda-compile: compiles every GPU kernel with NVRTC (no GPU
   needed) and prints each module's and kernel's status and compile time.
   This file holds the implementation of mysample_cuda.h for the tool
   (mysample.c holds mysample.h's). */
#define MYSAMPLE_CUDA_IMPLEMENTATION
#include "cli.h"
#include "mysample_cuda.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void ms__cli_cuda_usage(FILE *f) {
  fprintf(f,
    "usage: mysample cuda-compile [--arch sm_90] [--cache] [--cache-dir DIR] [--nvrtc PATH] [--topp-bins]\n"
    "  Compiles the kernels of mysample_cuda.h with NVRTC for each --arch\n"
    "  (repeatable; sm_XX or XX; default: sm_80 and sm_90) and prints each\n"
    "  kernel's status and the compile time. Cold by default (no caches);\n"
    "  --cache uses the disk cache ($MYSAMPLE_CUDA_CACHE, ~/.cache/mysample).\n"
    "  --topp-bins: the variant with top_p's bins (MS_CUDA_TOPP_BINS).\n"
    "  Exit status 0 when everything compiled, 1 on a compile error, 2 on\n"
    "  bad usage, 3 when NVRTC cannot be loaded.\n");
}

/* "sm_90", "compute_90" or "90" to 90; 0 for anything else (an
   arch-specific "sm_90a" too: NVRTC's programs are built for the plain one). */
static int ms__cli_cuda_arch(const char *s) {
  int sm = 0, digits = 0;
  if (!strncmp(s, "sm_", 3)) s += 3;
  else if (!strncmp(s, "compute_", 8)) s += 8;
  for (; *s >= '0' && *s <= '9' && digits < 4; s++, digits++) sm = sm * 10 + (*s - '0');
  return *s || digits == 0 ? 0 : sm;
}

int ms_cli_cuda_compile(int argc, char **argv) {
  static char log[65536];
  char msg[512];
  int archs[16], n_archs = 0, i, k, failed = 0, major, minor;
  ms_cuda_compile_opts o;
  ms_result rc;
  memset(&o, 0, sizeof o);
  o.no_disk_cache = 1;
  o.no_memory_cache = 1;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { ms__cli_cuda_usage(stdout); return 0; }
    else if (!strcmp(a, "--arch") && i + 1 < argc) {
      int sm = ms__cli_cuda_arch(argv[++i]);
      if (sm < 10 || n_archs == 16) { fprintf(stderr, "mysample cuda-compile: bad --arch '%s'\n", argv[i]); return 2; }
      archs[n_archs++] = sm;
    } else if (!strncmp(a, "--arch=", 7)) {
      int sm = ms__cli_cuda_arch(a + 7);
      if (sm < 10 || n_archs == 16) { fprintf(stderr, "mysample cuda-compile: bad --arch '%s'\n", a + 7); return 2; }
      archs[n_archs++] = sm;
    } else if (!strcmp(a, "--cache")) o.no_disk_cache = 0;
    else if (!strcmp(a, "--topp-bins")) o.topp_bins = 1;
    else if (!strcmp(a, "--cache-dir") && i + 1 < argc) { o.no_disk_cache = 0; o.cache_dir = argv[++i]; }
    else if (!strcmp(a, "--nvrtc") && i + 1 < argc) o.nvrtc_path = argv[++i];
    else { fprintf(stderr, "mysample cuda-compile: unknown argument '%s'\n", a); ms__cli_cuda_usage(stderr); return 2; }
  }
  if (n_archs == 0) { archs[0] = 80; archs[1] = 90; n_archs = 2; }
  rc = ms_cuda_load_nvrtc(o.nvrtc_path, msg, sizeof msg);
  if (rc != MS_OK) {
    fprintf(stderr, "mysample cuda-compile: %s: %s\n", ms_result_str(rc), msg);
    return 3;
  }
  ms_cuda_nvrtc_version(&major, &minor);
  printf("%s\n", msg);
  for (i = 0; i < n_archs; i++) {
    ms_cuda_compile_info info;
    rc = ms_cuda_compile(archs[i], &o, &info, log, sizeof log);
    if (rc != MS_OK) {
      printf("sm_%d  kernels.cu  FAIL  %s (%.3f s)\n%s\n", archs[i], ms_result_str(rc), info.seconds, log);
      failed = 1;
      continue;
    }
    printf("sm_%d  kernels.cu  ok  %s %s, %lu bytes, %.3f s%s\n", archs[i], info.target,
           info.is_ptx ? "PTX" : "CUBIN", (unsigned long)info.binary_size, info.seconds,
           info.source == 2 ? " (disk cache)" : info.source == 1 ? " (memory cache)" : " (compiled)");
    for (k = 0; k < info.n_kernels; k++) {
      printf("  %-16s %-7s program %d", info.kernel[k], info.kernel_found[k] ? "ok" : "MISSING", (int)info.kernel_program[k]);
      if (info.source == 0) printf(", %.3f s", info.kernel_seconds[k]);
      printf("\n");
      if (!info.kernel_found[k]) failed = 1;
    }
  }
  return failed ? 1 : 0;
}
