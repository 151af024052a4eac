/* hello.c - the smallest use of mysample.h: sample one token from a row of
   logits with top-p and a seed, and print it with its logprob.

     cc -I. examples/hello.c -lm && ./a.out                                 */
#define MYSAMPLE_IMPLEMENTATION
#include "mysample.h"
#include <stdio.h>
#include <string.h>

int main(void) {
  static const char *vocab[8] = { "the", "a", "cat", "dog", "sat", "ran", ".", "!" };
  const float logits[8] = { 2.0f, 1.5f, 0.5f, 0.4f, -1.0f, -1.2f, 0.0f, -3.0f };
  ms_sampler_desc desc;
  ms_sampler *sampler;
  ms_params params = ms_params_default();   /* OpenAI defaults: temperature 1, top_p 1 */
  ms_output out;
  ms_result res;
  char msg[256];

  /* memset rather than = { 0 }: C++ compilers warn about { 0 } under -Wextra */
  memset(&desc, 0, sizeof desc);
  memset(&out, 0, sizeof out);
  desc.max_vocab = 8;
  res = ms_sampler_create(&sampler, &desc);
  if (res != MS_OK) { fprintf(stderr, "ms_sampler_create: %s\n", ms_result_str(res)); return 1; }

  params.top_p = 0.9f;        /* nucleus sampling */
  params.seed = 42;           /* reproducible: same seed, same token */
  params.has_seed = 1;
  params.logprobs = 0;        /* report the sampled token's logprob */
  if (ms_params_validate(&params, 8, msg, sizeof msg) != MS_OK) { fprintf(stderr, "%s\n", msg); return 1; }

  res = ms_sample(sampler, logits, 8, &params, NULL, &out);
  if (res != MS_OK) { fprintf(stderr, "ms_sample: %s\n", ms_result_str(res)); return 1; }
  printf("token %d \"%s\" logprob %.4f\n", (int)out.token, vocab[out.token], (double)out.logprob);

  ms_sampler_destroy(sampler);
  return 0;
}
