/* The library on 32-bit x86 (tests/m32.test.sh): a size that does not fit
   in a size_t is refused (0, and an error from init/create), never wrapped
   to a small block that init then overruns; and the scalar kernels under
   x87 math (FLT_EVAL_METHOD 2) compute exp right. */
#define MYSAMPLE_IMPLEMENTATION
#include "mysample.h"
#include "testlib.h"

TEST(test_sampler_size_refuses_wrap) {
  ms_sampler_desc d;
  ms_sampler *s = (ms_sampler *)1;
  memset(&d, 0, sizeof d);
  CHECK(sizeof(size_t) == 4);
  /* 2^26 tokens need about 72 * 2^26 bytes a workspace: over 4 GiB */
  d.max_vocab = 1 << 26;
  CHECK_EQ_INT(ms_sampler_size(&d), 0);
  CHECK_EQ_INT(ms_sampler_create(&s, &d), MS_ERR_INVALID_PARAM);
  CHECK(s == NULL);
  d.max_vocab = 1 << 28;
  CHECK_EQ_INT(ms_sampler_size(&d), 0);
  /* each workspace fits, the workers' together do not */
  d.max_vocab = 1 << 22; d.n_workers = 200;
  CHECK_EQ_INT(ms_sampler_size(&d), 0);
  /* the DRY window alone past 4 GiB */
  d.max_vocab = 1000; d.n_workers = 1; d.max_history = 1 << 28;
  CHECK(ms_sampler_size(&d) > 0); /* 2^30 bytes: fits */
  d.n_workers = 8;
  CHECK_EQ_INT(ms_sampler_size(&d), 0);
  /* what fits is sized as before: at least the 18 per-token arrays */
  d.max_vocab = 1 << 20; d.n_workers = 2; d.max_history = 0;
  CHECK(ms_sampler_size(&d) >= (size_t)2 * 18 * 4 * (1u << 20));
}

TEST(test_seq_size_refuses_wrap) {
  ms_seq *q = (ms_seq *)1;
  static char mem[4096];
  CHECK_EQ_INT(ms_seq_size(1 << 28), 0);
  CHECK_EQ_INT(ms_seq_size(1 << 27), 0);
  CHECK_EQ_INT(ms_seq_create(&q, 1 << 28), MS_ERR_CAPACITY);
  CHECK(q == NULL);
  CHECK_EQ_INT(ms_seq_init(&q, 1 << 27, mem, sizeof mem), MS_ERR_CAPACITY);
  CHECK(ms_seq_size(1 << 24) >= (size_t)(1u << 24) * 29);
}

TEST(test_small_sampler_still_works) {
  ms_sampler_desc d;
  ms_sampler *s = NULL;
  float x[300];
  int i;
  ms_params p = ms_params_default();
  ms_output o;
  memset(&d, 0, sizeof d); d.max_vocab = 300; d.n_workers = 2; d.use_builtin_pool = 1;
  for (i = 0; i < 300; i++) x[i] = (float)(i % 17) * 0.1f;
  CHECK_EQ_INT(ms_sampler_create(&s, &d), MS_OK);
  memset(&o, 0, sizeof o);
  p.temperature = 0.0f;
  CHECK_EQ_INT(ms_sample(s, x, 300, &p, NULL, &o), MS_OK);
  CHECK_EQ_INT(o.token, 16);
  ms_sampler_destroy(s);
}

/* x87 keeps float expressions in extended precision: exp's round-to-
   nearest by adding 1.5 * 2^23 did not round there, and every weight was
   off (probabilities like 0.5 for 0.73) */
TEST(test_scalar_exp_under_x87) {
  ms_sampler_desc d;
  ms_sampler *s = NULL;
  float x[64], probs[64];
  ms_params p = ms_params_default();
  double z = 0.0;
  int i, bad = 0;
  memset(&d, 0, sizeof d); d.max_vocab = 64;
  CHECK_EQ_INT(ms_sampler_create(&s, &d), MS_OK);
  /* two tokens: e / (1 + e) */
  x[0] = 0.0f; x[1] = 1.0f;
  CHECK_EQ_INT(ms_probs(s, x, 2, &p, NULL, probs), MS_OK);
  CHECK_NEAR(probs[1], exp(1.0) / (1.0 + exp(1.0)), 1e-6);
  /* a row of 37 (vector steps and scalar tails on any path) at T = 0.7 */
  p.temperature = 0.7f;
  for (i = 0; i < 37; i++) x[i] = (float)((i * 7) % 37) * 0.23f - 4.0f;
  for (i = 0; i < 37; i++) z += exp(((double)x[i] - (double)x[0]) / 0.7);
  CHECK_EQ_INT(ms_probs(s, x, 37, &p, NULL, probs), MS_OK);
  for (i = 0; i < 37; i++) bad += fabs(probs[i] - exp(((double)x[i] - (double)x[0]) / 0.7) / z) > 1e-6;
  CHECK_EQ_INT(bad, 0);
  ms_sampler_destroy(s);
}

int main(void) {
  RUN(test_sampler_size_refuses_wrap);
  RUN(test_seq_size_refuses_wrap);
  RUN(test_small_sampler_still_works);
  RUN(test_scalar_exp_under_x87);
  return t_done();
}
