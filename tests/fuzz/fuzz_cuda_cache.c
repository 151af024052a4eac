/* libFuzzer target: mysample_cuda.h's readers of untrusted bytes, with no
   GPU and no NVRTC needed.
   - The disk-cache reader on any file contents (fmemopen): it returns
     NULL, or the units of exactly the header it was asked for, laid out as
     the writer lays them (every size as the header says, in bounds).
   - A write-then-read round trip of units cut from the input under a key
     from it: the same bytes come back.
   - The symbol scan of a binary (ms__cu_has_symbol) on any bytes against
     a plain reference.
   - $MYSAMPLE_CUDA_NVRTC_OPTIONS split into at most 6 options: each a
     run of non-space characters of the value, in order; a 7th refused. */
#define _GNU_SOURCE
#define MYSAMPLE_IMPLEMENTATION
#define MYSAMPLE_CUDA_IMPLEMENTATION
#include "mysample_cuda.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const KEY = "v0.1.0-nvrtc13.0-sm_90-src0123456789abcdef-optfedcba9876543210";

/* The reader on the input as a file, for a build of n_units programs. */
static void fuzz_reader(const uint8_t *data, size_t size, int n_units) {
  size_t len[MS__CU_UNITS], off[MS__CU_UNITS], total = 0, n = 0;
  char *units, want[512];
  int u;
  FILE *f = fmemopen((void *)data, size, "rb");
  if (!f) return;
  units = ms__cu_read_cache_f(f, KEY, n_units, len, off, &total);
  fclose(f);
  if (!units) return;
  /* accepted: the first line is this key's header, the units follow it
     and hash to its value */
  ms__cu_cache_head(want, sizeof want, KEY, n_units, len, ms__cu_units_hash(units, n_units, len, off));
  if (size < strlen(want) || memcmp(data, want, strlen(want)) != 0) abort();
  n = strlen(want);
  for (u = n_units; u < MS__CU_UNITS; u++) if (len[u] != 0) abort();   /* (not the build's) */
  for (u = 0; u < n_units; u++) {
    if (len[u] == 0 || off[u] + len[u] > total || off[u] % 16 != 0) abort();
    if (u > 0 && off[u] < off[u - 1] + len[u - 1]) abort();
    if (n + len[u] > size || memcmp(units + off[u], data + n, len[u]) != 0) abort();
    n += len[u];
  }
  MS__CU_FREE(units);
}

/* Units cut from the input, written under a key from it, read back. */
static void fuzz_round_trip(const uint8_t *data, size_t size) {
  static char dir[64];
  char key[80], file[160];
  size_t len[MS__CU_UNITS], off[MS__CU_UNITS], len2[MS__CU_UNITS], off2[MS__CU_UNITS], total, total2 = 0, pos = 0;
  char *buf, *back;
  int u, i, n_units;
  if (size < 8) return;
  n_units = ms__cu_n_units(data[size - 1] & 1);
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "/tmp/ms-fuzz-cache-XXXXXX");
    if (!mkdtemp(dir)) abort();
  }
  /* a key of printable non-space characters (as the real keys are) */
  for (i = 0; i < 24; i++) key[i] = (char)('!' + data[i % size] % 94);
  key[i] = 0;
  for (u = 0; u < MS__CU_UNITS; u++) len[u] = u < n_units ? 1 + data[(size_t)u % size] % 64 : 0;
  total = ms__cu_layout(len, off);
  buf = (char *)calloc(1, total);
  if (!buf) return;
  for (u = 0; u < MS__CU_UNITS; u++)
    for (i = 0; i < (int)len[u]; i++) buf[off[u] + (size_t)i] = (char)data[pos++ % size];
  snprintf(file, sizeof file, "%s/cuda-round-trip.bin", dir);
  ms__cu_write_cache(dir, file, key, n_units, buf, len, off);
  back = ms__cu_read_cache(file, key, n_units, len2, off2, &total2);
  if (!back) abort();
  for (u = 0; u < MS__CU_UNITS; u++)
    if (len2[u] != len[u] || off2[u] != off[u] || memcmp(back + off2[u], buf + off[u], len[u]) != 0) abort();
  /* another key never reads it */
  key[0] = key[0] == '!' ? '"' : '!';
  if (ms__cu_read_cache(file, key, n_units, len2, off2, &total2)) abort();
  /* nor does the other build (a count of units other than the file's) */
  key[0] = key[0] == '!' ? '"' : '!';
  if (ms__cu_read_cache(file, key, ms__cu_n_units(n_units == MS__CU_BASE_UNITS), len2, off2, &total2)) abort();
  remove(file);
  MS__CU_FREE(back);
  free(buf);
}

/* The reference symbol test: name with a separator (start, NUL, space or
   tab) before and NUL, '(' or space after, wholly before the last byte. */
static int ref_has_symbol(const char *d, size_t size, const char *name) {
  size_t n = strlen(name), i, j;
  for (i = 0; i + n < size; i++) {
    for (j = 0; j < n && d[i + j] == name[j]; j++) {}
    if (j < n) continue;
    if ((d[i + n] == 0 || d[i + n] == '(' || d[i + n] == ' ') && (i == 0 || d[i - 1] == 0 || d[i - 1] == ' ' || d[i - 1] == '\t'))
      return 1;
  }
  return 0;
}

static void fuzz_symbols(const uint8_t *data, size_t size) {
  int k;
  for (k = 0; ms__cu_kernel_names[k]; k++)
    if (ms__cu_has_symbol((const char *)data, size, ms__cu_kernel_names[k]) !=
        ref_has_symbol((const char *)data, size, ms__cu_kernel_names[k])) abort();
}

static void fuzz_options(const uint8_t *data, size_t size) {
  char value[200];
  const char *opts[16];
  size_t n = size < sizeof value - 1 ? size : sizeof value - 1, i;
  int got, want = 0, k;
  /* the variable's value: the input up to its first NUL, spaces and
     printable characters only (an environment string) */
  for (i = 0; i < n && data[i]; i++) value[i] = data[i] % 3 == 0 ? ' ' : (char)('!' + data[i] % 94);
  value[i] = 0;
  setenv("MYSAMPLE_CUDA_NVRTC_OPTIONS", value, 1);
  got = ms__cu_extra_opts(opts, 16);
  /* the reference: the runs of non-spaces, in order; more than 6 refused */
  for (i = 0; value[i];) {
    size_t start;
    while (value[i] == ' ') i++;
    if (!value[i]) break;
    start = i;
    while (value[i] && value[i] != ' ') i++;
    if (want < 6 && got >= 0 && (want >= got || strlen(opts[want]) != i - start || memcmp(opts[want], value + start, i - start) != 0))
      abort();
    want++;
  }
  if (want > 6 ? got != -1 : got != want) abort();
  for (k = 0; k < got; k++) if (!opts[k][0] || strchr(opts[k], ' ')) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  switch (data[0] % 4) {
    case 0: fuzz_reader(data + 1, size - 1, ms__cu_n_units((data[0] >> 2) & 1)); break;   /* (bit 2: a build with the bins) */
    case 1: fuzz_round_trip(data + 1, size - 1); break;
    case 2: fuzz_symbols(data + 1, size - 1); break;
    default: fuzz_options(data + 1, size - 1); break;
  }
  return 0;
}
