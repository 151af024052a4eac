/* libFuzzer target: the list flags of mysample probs | sample | logprobs
   (tools/cli_sampling.c): ids ("5,6,7": --prompt-ids, --allowed-ids, ...),
   biases ("3=1.5,7=-2": --logit-bias) and id sequences ("1,2;3":
   --bad-words, --dry-breakers), on any bytes. An accepted list written
   back out parses to the same values; nothing reads or writes past what
   it allocated (ASan). The GPU side is stubbed: the harness never samples. */
#define _POSIX_C_SOURCE 200809L
#define MYSAMPLE_IMPLEMENTATION
#include "mysample.h"
#include "../../tools/cli_sampling.c"
#include <assert.h>

/* cli_device.c's functions, which only the sampling commands reach */
ms_result ms_cli_gpu_open(ms_cli_gpu **g, int32_t v, int32_t t, int32_t h, char *m, size_t n) {
  (void)g; (void)v; (void)t; (void)h; (void)m; (void)n; return MS_ERR_NO_DEVICE;
}
void ms_cli_gpu_close(ms_cli_gpu *g) { (void)g; }
ms_result ms_cli_gpu_begin_row(ms_cli_gpu *g, const float *r, const int32_t *p, int32_t np, const int32_t *o, int32_t no,
                               const ms_params *pp) {
  (void)g; (void)r; (void)p; (void)np; (void)o; (void)no; (void)pp; return MS_ERR_NO_DEVICE;
}
ms_result ms_cli_gpu_budget_state(ms_cli_gpu *g, ms_budget_state *s, int32_t *r) { (void)g; (void)s; (void)r; return MS_ERR_NO_DEVICE; }
ms_result ms_cli_gpu_probs(ms_cli_gpu *g, const ms_params *p, uint64_t s, uint64_t q, float *pr) {
  (void)g; (void)p; (void)s; (void)q; (void)pr; return MS_ERR_NO_DEVICE;
}
ms_result ms_cli_gpu_sample(ms_cli_gpu *g, const ms_params *p, uint64_t s, uint64_t q, int a, ms_output *o, int32_t gv) {
  (void)g; (void)p; (void)s; (void)q; (void)a; (void)o; (void)gv; return MS_ERR_NO_DEVICE;
}
const char *ms_cli_gpu_unsupported(const ms_params *p, int32_t t) { (void)p; (void)t; return ""; }
const char *ms_cli_gpu_error(const ms_cli_gpu *g) { (void)g; return ""; }

static void check_ids(const char *s) {
  int32_t *a = NULL, *b = NULL, na = -1, nb = -1, i;
  char *w;
  size_t k = 0;
  if (!parse_ids(s, &a, &na)) { free(a); return; }
  assert(na >= 0 && na <= (int32_t)strlen(s) / 2 + 1);
  w = (char *)malloc((size_t)na * 13 + 1);
  if (!w) { free(a); return; }
  for (i = 0; i < na; i++) k += (size_t)sprintf(w + k, i ? ",%d" : "%d", (int)a[i]);
  w[k] = 0;
  assert(parse_ids(w, &b, &nb) && nb == na);
  for (i = 0; i < na; i++) assert(a[i] == b[i]);
  free(a); free(b); free(w);
}

static void check_bias(const char *s) {
  ms_bias *a = NULL, *b = NULL;
  int32_t na = -1, nb = -1, i;
  char *w;
  size_t k = 0;
  if (!parse_bias(s, &a, &na)) { free(a); return; }
  assert(na >= 0);
  w = (char *)malloc((size_t)na * 40 + 1);
  if (!w) { free(a); return; }
  for (i = 0; i < na; i++) k += (size_t)sprintf(w + k, "%s%d=%.9g", i ? "," : "", (int)a[i].token, (double)a[i].bias);
  w[k] = 0;
  /* (a bias past the float range read as inf: written "inf", which strtod reads back) */
  assert(parse_bias(w, &b, &nb) && nb == na);
  for (i = 0; i < na; i++) assert(a[i].token == b[i].token && (a[i].bias == b[i].bias || (a[i].bias != a[i].bias && b[i].bias != b[i].bias)));
  free(a); free(b); free(w);
}

static void check_seqs(const char *s) {
  int32_t *ids = NULL, *lens = NULL, *ids2 = NULL, *lens2 = NULL, n = -1, n2 = -1, i, j, at = 0, total = 0;
  char *w;
  size_t k = 0;
  if (!parse_seqs(s, &ids, &lens, &n)) { free(ids); free(lens); return; }
  assert(n >= 1);
  for (i = 0; i < n; i++) { assert(lens[i] >= 1); total += lens[i]; }
  w = (char *)malloc((size_t)total * 13 + 1);
  if (!w) { free(ids); free(lens); return; }
  for (i = 0; i < n; i++)
    for (j = 0; j < lens[i]; j++, at++) k += (size_t)sprintf(w + k, "%s%d", at == 0 ? "" : j == 0 ? ";" : ",", (int)ids[at]);
  w[k] = 0;
  assert(parse_seqs(w, &ids2, &lens2, &n2) && n2 == n);
  for (i = 0; i < n; i++) assert(lens2[i] == lens[i]);
  for (i = 0; i < total; i++) assert(ids2[i] == ids[i]);
  free(ids); free(lens); free(ids2); free(lens2); free(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = (char *)malloc(size + 1);
  if (!s) return 0;
  memcpy(s, data, size);
  s[size] = 0;
  check_ids(s);
  check_bias(s);
  check_seqs(s);
  free(s);
  return 0;
}
