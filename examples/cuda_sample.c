/* cuda_sample: samples a batch of rows on the GPU with mysample_cuda.h and
   compares each token with the CPU path of mysample.h (same seeds, same
   positions: the same token, up to rare float rounding at a boundary).
   Without a GPU (or driver, or NVRTC) it says why and samples on the CPU.
   Build: cc -O2 -I. examples/cuda_sample.c -lm -lpthread -ldl */
#define MYSAMPLE_IMPLEMENTATION
#define MYSAMPLE_CUDA_IMPLEMENTATION
#include "mysample_cuda.h"
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#define ROWS 8
#define VOCAB 32000

static uint64_t rng = 88172645463325252ULL;
static float normal(void) {
  double u1, u2;
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; u1 = (double)(rng >> 11) / 9007199254740992.0 + 1e-300;
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; u2 = (double)(rng >> 11) / 9007199254740992.0;
  return (float)(2.0 * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

int main(void) {
  static float logits[ROWS * VOCAB];
  ms_params params[ROWS];
  const ms_params *pp[ROWS];
  int32_t gpu_tokens[ROWS];
  ms_sampler *cpu = NULL;
  ms_sampler_desc sd;
  ms_cuda *cu = NULL;
  ms_cuda_desc cd;
  char msg[4096];
  int r, same = 0;
  ms_result rc;

  for (r = 0; r < ROWS * VOCAB; r++) logits[r] = normal();
  for (r = 0; r < ROWS; r++) {
    params[r] = ms_params_default();
    params[r].seed = 1234 + (uint64_t)r;
    params[r].has_seed = 1;
    params[r].temperature = r == 0 ? 0.0f : 0.7f + 0.1f * (float)r;   /* row 0 greedy */
    params[r].top_k = r % 3 == 1 ? 50 : 0;
    params[r].top_p = r % 2 ? 0.9f : 1.0f;
    params[r].min_p = r % 4 == 3 ? 0.05f : 0.0f;
    pp[r] = &params[r];
  }
  memset(&sd, 0, sizeof sd);   /* not = {0}: C++ warns about it under -Wextra */
  sd.max_vocab = VOCAB;
  if (ms_sampler_create(&cpu, &sd) != MS_OK) { fprintf(stderr, "cpu sampler: failed\n"); return 1; }

  memset(&cd, 0, sizeof cd);
  cd.max_rows = ROWS;
  cd.max_vocab = VOCAB;
  rc = ms_cuda_create(&cu, &cd, msg, sizeof msg);
  if (rc != MS_OK) {
    printf("GPU unavailable (%s: %s); sampling on the CPU instead.\n", ms_result_str(rc), msg);
  } else {
    void *d_logits = NULL, *d_tokens = NULL;
    ms_cuda_batch b;
    printf("GPU: %s\n", msg);
    if (ms_cuda_malloc(cu, &d_logits, sizeof logits) != MS_OK || ms_cuda_malloc(cu, &d_tokens, sizeof gpu_tokens) != MS_OK ||
        ms_cuda_upload(cu, d_logits, logits, sizeof logits) != MS_OK) {
      fprintf(stderr, "device memory: failed\n");
      return 1;
    }
    memset(&b, 0, sizeof b);
    b.n_rows = ROWS; b.vocab = VOCAB; b.logits = d_logits; b.row_stride = VOCAB;
    b.params = pp; b.tokens = d_tokens;
    b.host_tokens = gpu_tokens;   /* pageable here; pinned memory keeps the copy asynchronous */
    rc = ms_cuda_sample(cu, NULL, &b);
    if (rc != MS_OK || ms_cuda_sync(cu, NULL) != MS_OK) {
      fprintf(stderr, "ms_cuda_sample: %s: %s\n", ms_result_str(rc), ms_cuda_last_error(cu));
      return 1;
    }
    ms_cuda_free(cu, d_logits);
    ms_cuda_free(cu, d_tokens);
  }

  for (r = 0; r < ROWS; r++) {
    ms_output out;
    memset(&out, 0, sizeof out);
    rc = ms_sample(cpu, logits + (size_t)r * VOCAB, VOCAB, &params[r], NULL, &out);
    if (rc != MS_OK) { fprintf(stderr, "row %d: %s\n", r, ms_result_str(rc)); return 1; }
    if (cu) {
      printf("row %d: gpu %6d  cpu %6d%s\n", r, (int)gpu_tokens[r], (int)out.token, gpu_tokens[r] == out.token ? "" : "  (differs)");
      same += gpu_tokens[r] == out.token;
    } else {
      printf("row %d: cpu %6d%s\n", r, (int)out.token, out.greedy ? " (greedy)" : "");
    }
  }
  if (cu) printf("%d of %d rows agree\n", same, ROWS);
  ms_cuda_destroy(cu);
  ms_sampler_destroy(cpu);
  return 0;
}
