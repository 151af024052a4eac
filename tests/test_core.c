/* Core sampler tests: RNG, every pipeline path against the naive
   sort-based reference (tools/naive.h) on every SIMD path, error codes,
   validation messages, logprobs, batches and threads. */
#define _POSIX_C_SOURCE 200112L
#include "mysample.h"
#include "testlib.h"
#include "tenv.h"
#include "../tools/naive.h"
#include <stdlib.h>

static uint64_t rng_state = 0x12345678abcdefull;
static uint32_t rnd(void) { rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull; return (uint32_t)(rng_state >> 33); }
static double rndu(void) { return (rnd() + 0.5) / 2147483648.0; }
static float rndn(void) { double u = rndu(), v = rndu(); return (float)(sqrt(-2 * log(u)) * cos(6.283185307179586 * v)); }

static const char *simd_paths[] = { "scalar", "sse2", "avx2", "avx512", "neon" };
#define N_SIMD_PATHS 5

static ms_sampler *make_sampler(const char *simd, int32_t max_vocab) {
  ms_sampler_desc d; ms_sampler *s = NULL;
  memset(&d, 0, sizeof d); d.max_vocab = max_vocab;
  t_setenv("MYSAMPLE_SIMD", simd);
  if (ms_sampler_create(&s, &d) != MS_OK) return NULL;
  t_setenv("MYSAMPLE_SIMD", NULL);
  return s;
}

/* MYSAMPLE_SIMD caps the path; a value that names none is ignored (a
   typo once meant the scalar kernels, 8-16x slower). */
TEST(test_simd_env_unknown_value_ignored) {
  ms_sampler *a = make_sampler(NULL, 64), *b = make_sampler("avx-2", 64), *c = make_sampler("scalar", 64);
  CHECK(a && b && c);
  if (a && b && c) {
    CHECK_EQ_STR(ms_sampler_simd(b), ms_sampler_simd(a));
    CHECK_EQ_STR(ms_sampler_simd(c), "scalar");
  }
  ms_sampler_destroy(a); ms_sampler_destroy(b); ms_sampler_destroy(c);
}

TEST(test_philox_known_answers) {
  /* Random123's published known-answer vectors for philox4x32-10 */
  uint32_t c0[4] = {0, 0, 0, 0}, k0[2] = {0, 0}, o[4];
  uint32_t c1[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, k1[2] = {0xffffffffu, 0xffffffffu};
  uint32_t c2[4] = {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, k2[2] = {0xa4093822u, 0x299f31d0u};
  ms_philox4x32(c0, k0, o);
  CHECK(o[0] == 0x6627e8d5u && o[1] == 0xe169c58du && o[2] == 0xbc57ac4cu && o[3] == 0x9b00dbd8u);
  ms_philox4x32(c1, k1, o);
  CHECK(o[0] == 0x408f276du && o[1] == 0x41c83b0eu && o[2] == 0xa20bc7c6u && o[3] == 0x6d5451fdu);
  ms_philox4x32(c2, k2, o);
  CHECK(o[0] == 0xd16cfe09u && o[1] == 0x94fdccebu && o[2] == 0x5001e420u && o[3] == 0x24126ea1u);
}

TEST(test_uniform_range_and_independence) {
  int i, same = 0;
  double sum = 0;
  for (i = 0; i < 100000; i++) {
    double u = ms_uniform(7, (uint64_t)i, MS_PURPOSE_DRAW);
    CHECK(u >= 0.0 && u < 1.0);
    sum += u;
    if (u == ms_uniform(8, (uint64_t)i, MS_PURPOSE_DRAW)) same++;
  }
  CHECK_NEAR(sum / 100000, 0.5, 0.005);
  CHECK(same == 0);
  CHECK(ms_uniform(1, 2, 0) == ms_uniform(1, 2, 0));
  CHECK(ms_uniform(1, 2, 0) != ms_uniform(1, 2, 1));
  CHECK(ms_fresh_seed(1) != ms_fresh_seed(2));
}

/* Unseeded requests on two sequences reset with different salts in the
   same clock tick get different seeds: the sequence's address once went
   into the salt by XOR, so salt 0x10000 on one sequence and salt 0 on one
   0x10000 bytes further gave the same key and seed (a third of the resets
   here) */
TEST(test_fresh_seeds_of_two_sequences) {
  char *raw = (char *)malloc(0x40000), *base;
  ms_seq *a = NULL, *b = NULL;
  ms_params p = ms_params_default();
  int i, same = 0;
  base = (char *)(((uintptr_t)raw + 0x1ffff) & ~(uintptr_t)0x1ffff);
  CHECK(ms_seq_init(&a, 16, base, 0x10000) == MS_OK);
  CHECK(ms_seq_init(&b, 16, base + 0x10000, 0x10000) == MS_OK);
  for (i = 0; i < 2000; i++) {
    ms_seq_reset(a, NULL, 0, 10, &p, 0x10000);
    ms_seq_reset(b, NULL, 0, 10, &p, 0);
    same += ms_seq_seed(a) == ms_seq_seed(b);
    ms_seq_reset(a, NULL, 0, 10, &p, 7);   /* one salt, two sequences */
    ms_seq_reset(b, NULL, 0, 10, &p, 7);
    same += ms_seq_seed(a) == ms_seq_seed(b);
  }
  CHECK_EQ_INT(same, 0);
  free(raw);
}

/* A refused reset leaves an empty sequence with the new request's seed
   that takes no token until a reset succeeds (it kept the previous
   request's seed and vocabulary: a caller going on drew its numbers again
   and appended to it). */
TEST(test_refused_reset_leaves_nothing_of_the_last_request) {
  ms_seq *s = NULL;
  ms_params p = ms_params_default(), q = ms_params_default();
  const int32_t good[2] = { 1, 2 }, bad[2] = { 1, 99 };
  CHECK(ms_seq_create(&s, 8) == MS_OK);
  p.seed = 11; p.has_seed = 1;
  q.seed = 22; q.has_seed = 1;
  CHECK_EQ_INT(ms_seq_reset(s, good, 2, 10, &p, 0), MS_OK);
  CHECK_EQ_INT(ms_seq_accept(s, 3), MS_OK);
  CHECK_EQ_INT(ms_seq_reset(s, bad, 2, 10, &q, 0), MS_ERR_TOKEN_OUT_OF_RANGE);
  CHECK(ms_seq_seed(s) == 22);
  CHECK_EQ_INT(ms_seq_position(s), 0);
  CHECK_EQ_INT(ms_seq_accept(s, 3), MS_ERR_TOKEN_OUT_OF_RANGE);
  CHECK_EQ_INT(ms_seq_reset(s, good, 2, 0, &q, 0), MS_ERR_BAD_VOCAB);
  CHECK_EQ_INT(ms_seq_accept(s, 3), MS_ERR_TOKEN_OUT_OF_RANGE);
  CHECK_EQ_INT(ms_seq_reset(s, good, 2, 10, &q, 0), MS_OK);
  CHECK_EQ_INT(ms_seq_accept(s, 3), MS_OK);
  ms_seq_destroy(s);
}

TEST(test_result_strings_and_version) {
  CHECK(strcmp(ms_result_str(MS_OK), "ok") == 0);
  CHECK(strstr(ms_result_str(MS_ERR_NAN_LOGIT), "NaN") != NULL);
  CHECK(strcmp(ms_result_str((ms_result)999), "unknown result code") == 0);
  CHECK(strcmp(ms_version(), MYSAMPLE_VERSION_STRING) == 0);
  CHECK(ms_profile_from_name("hf") == MS_PROFILE_HF);
  CHECK(ms_profile_from_name("nope") == -1);
}

/* One random case: fills x and params (arrays live in the case struct). */
typedef struct tcase {
  int V;
  float *x;
  ms_params p;
  int prompt[64], n_prompt, output[64], n_output;
  ms_bias bias[8]; int32_t allowed[64], banned[8], stops[4];
  uint32_t bitmask[4096];
} tcase;

static void make_case(tcase *c, int V, int profile, int kind) {
  int i;
  float sigma = (rnd() % 2) ? 1.0f : 3.0f;
  c->V = V;
  for (i = 0; i < V; i++) c->x[i] = rndn() * sigma;
  if (rnd() % 8 == 0) for (i = 0; i < V / 10; i++) c->x[rnd() % V] = -INFINITY;
  c->p = ms_params_default();
  c->p.profile = (ms_profile)profile;
  c->p.temperature = (float[]){0.0f, 0.005f, 0.5f, 0.7f, 1.0f, 1.5f}[rnd() % 6];
  if (profile == MS_PROFILE_SGLANG && c->p.temperature == 0.005f) c->p.temperature = 1e-7f;
  if (profile == MS_PROFILE_HF && c->p.temperature == 0.005f) c->p.temperature = 0.05f;
  switch (kind) {
    case 0: break;                                         /* temperature only */
    case 1: c->p.top_k = (int32_t[]){1, 5, 40, 50, 2000}[rnd() % 5]; break;
    case 2: c->p.top_p = (float[]){0.1f, 0.5f, 0.9f, 0.95f}[rnd() % 4]; break;
    case 3: c->p.min_p = (float[]){0.05f, 0.3f}[rnd() % 2]; break;
    case 4: c->p.top_k = 50; c->p.top_p = 0.95f; c->p.min_p = 0.05f; break;
    case 5: c->p.top_p = 0.9f; c->p.min_p = 0.02f; c->p.top_k = (rnd() % 2) ? 3000 : 0; break;
    /* HF's catalogue (kinds 6..8, every other HF case): typical, epsilon
       and eta, alone, together and after top-k / top-p, on whole rows */
    case 6: c->p.typical_p = (float[]){0.2f, 0.5f, 0.9f, 0.95f}[rnd() % 4]; c->p.top_k = 0; break;
    case 7:
      if (rnd() % 2) c->p.epsilon_cutoff = (float[]){3e-4f, 1e-3f, 0.05f, 0.3f}[rnd() % 4];
      else c->p.eta_cutoff = (float[]){3e-4f, 2e-3f, 0.05f}[rnd() % 3];
      c->p.top_k = 0;
      break;
    case 8:
      c->p.typical_p = (float[]){0.5f, 0.9f}[rnd() % 2];
      c->p.epsilon_cutoff = (float[]){0.0f, 3e-4f, 0.3f}[rnd() % 3];
      c->p.eta_cutoff = (float[]){0.0f, 2e-3f}[rnd() % 2];
      c->p.top_k = (int32_t[]){0, 0, 50, 3000}[rnd() % 4];
      c->p.top_p = (float[]){1.0f, 0.95f}[rnd() % 2];
      break;
  }
  /* HF: min_tokens_to_keep on a third of its cases (every warper keeps that many) */
  if (profile == MS_PROFILE_HF && rnd() % 3 == 0) c->p.min_tokens_to_keep = (int32_t[]){2, 5, 50}[rnd() % 3];
  c->n_prompt = 0; c->n_output = 0;
  if (rnd() % 2) {
    c->n_prompt = (int)(rnd() % 20); c->n_output = (int)(rnd() % 40);
    for (i = 0; i < c->n_prompt; i++) c->prompt[i] = (int)(rnd() % (unsigned)V);
    for (i = 0; i < c->n_output; i++) c->output[i] = (int)(rnd() % (unsigned)(V < 50 ? V : 50));
    c->p.repetition_penalty = (float[]){1.0f, 1.3f, 0.8f}[rnd() % 3];
    if (profile != MS_PROFILE_HF) {
      c->p.frequency_penalty = (float[]){0.0f, 0.5f, -0.5f, 2.0f}[rnd() % 4];
      c->p.presence_penalty = (float[]){0.0f, 0.5f, -0.5f}[rnd() % 3];
    }
  }
  if (rnd() % 3 == 0) {
    c->p.n_logit_bias = 1 + (int)(rnd() % 8);
    for (i = 0; i < c->p.n_logit_bias; i++) { c->bias[i].token = (int32_t)(rnd() % (unsigned)V); c->bias[i].bias = (float)((int)(rnd() % 400) - 200) / 4.0f; }
    c->p.logit_bias = c->bias;
  }
  if (rnd() % 5 == 0) {
    c->p.n_allowed_ids = 1 + (int)(rnd() % 64);
    for (i = 0; i < c->p.n_allowed_ids; i++) c->allowed[i] = (int32_t)(rnd() % (unsigned)V);
    c->p.allowed_ids = c->allowed;
  }
  if (rnd() % 4 == 0) {
    c->p.n_banned_ids = 1 + (int)(rnd() % 8);
    for (i = 0; i < c->p.n_banned_ids; i++) c->banned[i] = (int32_t)(rnd() % (unsigned)V);
    c->p.banned_ids = c->banned;
  }
  if (rnd() % 5 == 0 && V <= 4096 * 32) {
    for (i = 0; i < (V + 31) / 32; i++) c->bitmask[i] = rnd() | rnd() | 1u;
    c->p.token_bitmask = c->bitmask;
  }
  if (rnd() % 4 == 0) {
    c->p.min_tokens = (int32_t)(rnd() % 50);
    c->p.eos_token_id = (int32_t)(rnd() % (unsigned)V);
    c->stops[0] = (int32_t)(rnd() % (unsigned)V); c->stops[1] = (int32_t)(rnd() % (unsigned)V);
    c->p.stop_token_ids = c->stops; c->p.n_stop_token_ids = 2;
  }
}

static ms_seq *case_seq(const tcase *c) {
  ms_seq *q = NULL;
  int i;
  if (ms_seq_create(&q, 256) != MS_OK) return NULL;
  ms_seq_reset(q, c->prompt, c->n_prompt, c->V, &c->p, 1);
  for (i = 0; i < c->n_output; i++) ms_seq_accept(q, c->output[i]);
  return q;
}

static int compare_probs(const float *a, const float *b, int V, double tol, int verbose) {
  int i, bad = 0;
  for (i = 0; i < V; i++) {
    /* the support must match, except for the last few subnormal steps
       where float rounding of exp and of the division decides */
    int support_differs = (a[i] > 0) != (b[i] > 0) && (a[i] > 1e-44f || b[i] > 1e-44f);
    if (support_differs || fabs((double)a[i] - (double)b[i]) > tol) {
      if (verbose && bad < 3) printf("    id %d: got %.9g want %.9g\n", i, (double)a[i], (double)b[i]);
      bad++;
    }
  }
  return bad;
}

/* A case is borderline when a float rounding could flip the support:
   rerun the reference with slightly shifted cut-offs and skip if the
   support moves. */
static int borderline(tcase *c, const float *want) {
  ms_params save = c->p;
  float *alt = (float *)malloc(sizeof(float) * (size_t)c->V);
  int flip = 0, d;
  for (d = -1; d <= 1; d += 2) {
    c->p.top_p = save.top_p < 1.0f ? save.top_p * (1.0f + d * 2e-5f) : save.top_p;
    c->p.min_p = save.min_p * (1.0f + d * 2e-5f);
    c->p.typical_p = save.typical_p < 1.0f ? save.typical_p * (1.0f + d * 2e-5f) : save.typical_p;
    c->p.epsilon_cutoff = save.epsilon_cutoff * (1.0f + d * 2e-5f);
    c->p.eta_cutoff = save.eta_cutoff * (1.0f + d * 2e-5f);
    if (c->p.top_p > 1.0f) c->p.top_p = 1.0f;
    naive_probs(c->x, c->V, &c->p, c->prompt, c->n_prompt, c->output, c->n_output, alt);
    if (compare_probs(alt, want, c->V, 1.0, 0)) flip = 1;
  }
  c->p = save;
  free(alt);
  return flip;
}

/* Rows of a few distinct values, each held by a crowd of tokens at
   random ids (the rest -inf or far below), so the cuts of top-k and top-p
   fall inside ties: where the profiles differ (vLLM and HF keep every
   tie of the cut value; SGLang cuts its list by position, ties by id).
   Thresholds are chosen around the crowds' boundaries. */
static void make_tie_case(tcase *c, int V, int profile) {
  int i, lv, n_levels = 1 + (int)(rnd() % 4), sizes[4], total = 0;
  float levels[4];
  c->V = V;
  for (i = 0; i < V; i++) c->x[i] = (rnd() % 3 == 0) ? -INFINITY : -40.0f - (float)(rnd() % 8);
  for (lv = 0; lv < n_levels; lv++) {
    levels[lv] = (lv == 0 ? 0.0f : levels[lv - 1]) - (float)(rnd() % 5 + 1) * 0.37f;
    sizes[lv] = 1 + (int)(rnd() % (unsigned)(V / (2 * n_levels) > 1 ? V / (2 * n_levels) : 1));
    if (rnd() % 4 == 0) sizes[lv] = 1 + (int)(rnd() % 4);
    for (i = 0; i < sizes[lv]; i++) c->x[rnd() % (unsigned)V] = levels[lv];
    total += sizes[lv];
  }
  c->p = ms_params_default();
  c->p.profile = (ms_profile)profile;
  c->p.temperature = (float[]){0.5f, 1.0f, 1.3f}[rnd() % 3];
  c->n_prompt = 0; c->n_output = 0;
  switch (rnd() % 4) {
    case 0: c->p.top_k = 1 + (int32_t)(rnd() % (unsigned)(total + 1)); break;
    case 1: c->p.top_p = (float)(1 + rnd() % 63) / 64.0f; break;
    case 2: c->p.top_k = 1 + (int32_t)(rnd() % (unsigned)(total + 1)); c->p.top_p = (float)(1 + rnd() % 63) / 64.0f; break;
    default: c->p.top_k = 1 + (int32_t)(rnd() % (unsigned)(total + 1)); c->p.top_p = (float)(1 + rnd() % 63) / 64.0f;
             c->p.min_p = (float[]){0.05f, 0.3f, 0.6f}[rnd() % 3]; break;
  }
  if (c->p.top_k >= V) c->p.top_k = 0;
}

/* MS_TEST_BIG=1 (a CI step): the vocabularies of real models instead of
   the two largest, 160 cases per path (the sorts of the reference make a
   128k row slow). ties: the rows of make_tie_case. */
static void run_against_naive_rows(int profile, int ties) {
  static const int vocabs_std[] = {1, 2, 7, 33, 100, 1000, 5000, 40000};
  static const int vocabs_big[] = {1, 2, 7, 33, 100, 1000, 128256, 151936};
  const int big = getenv("MS_TEST_BIG") && atoi(getenv("MS_TEST_BIG")) > 0;
  const int *vocabs = big ? vocabs_big : vocabs_std, V_MAX = big ? 151936 : 40000, n_iter = ties ? 150 : big ? 160 : 600;
  int path, iter;
  tcase c;
  float *got = (float *)malloc(sizeof(float) * (size_t)V_MAX), *want = (float *)malloc(sizeof(float) * (size_t)V_MAX);
  c.x = (float *)malloc(sizeof(float) * (size_t)V_MAX);
  if (big) printf("  MS_TEST_BIG: vocabularies up to %d\n", V_MAX);
  for (path = 0; path < N_SIMD_PATHS; path++) {
    ms_sampler *s = make_sampler(simd_paths[path], V_MAX);
    int fails = 0, skipped = 0, n = 0;
    CHECK(s != NULL);
    if (!s) continue;
    /* paths this CPU or build lacks fall back to another: test each once */
    if (strcmp(ms_sampler_simd(s), simd_paths[path]) != 0) { ms_sampler_destroy(s); continue; }
    printf("  simd path %s\n", simd_paths[path]);
    for (iter = 0; iter < n_iter; iter++) {
      int V = vocabs[iter % 8];
      ms_seq *q;
      int rc_ref;
      ms_result rc;
      if (ties) make_tie_case(&c, V, profile);
      else make_case(&c, V, profile, profile == MS_PROFILE_HF && iter % 2 ? 6 + (int)(rnd() % 3) : (int)(rnd() % 6));
      q = case_seq(&c);
      rc_ref = naive_probs(c.x, V, &c.p, c.prompt, c.n_prompt, c.output, c.n_output, want);
      rc = ms_probs(s, c.x, V, &c.p, q, got);
      if (rc_ref != 0) { CHECK_MSG(rc == MS_ERR_ALL_MASKED, "rc %d", (int)rc); ms_seq_destroy(q); continue; }
      if (borderline(&c, want)) { skipped++; ms_seq_destroy(q); continue; }
      n++;
      CHECK_MSG(rc == MS_OK, "rc %d (%s)", (int)rc, ms_result_str(rc));
      if (rc == MS_OK && compare_probs(got, want, V, 1e-5, fails < 3)) {
        if (fails < 3) printf("    case %d: %s V=%d T=%g k=%d p=%g minp=%g typ=%g eps=%g eta=%g mtk=%d rep=%g freq=%g pres=%g bias=%d allowed=%d banned=%d mask=%d mintok=%d\n",
                              iter, simd_paths[path], V, (double)c.p.temperature, c.p.top_k, (double)c.p.top_p, (double)c.p.min_p,
                              (double)c.p.typical_p, (double)c.p.epsilon_cutoff, (double)c.p.eta_cutoff, c.p.min_tokens_to_keep,
                              (double)c.p.repetition_penalty, (double)c.p.frequency_penalty, (double)c.p.presence_penalty,
                              c.p.n_logit_bias, c.p.n_allowed_ids, c.p.n_banned_ids, c.p.token_bitmask != NULL, c.p.min_tokens);
        fails++;
      }
      if (rc == MS_OK) {
        /* the sampled token must lie in the support */
        ms_output out; memset(&out, 0, sizeof out);
        CHECK(ms_sample(s, c.x, V, &c.p, q, &out) == MS_OK);
        CHECK(out.token >= 0 && out.token < V && want[out.token] > 0);
      }
      ms_seq_destroy(q);
    }
    printf("    %d cases compared, %d borderline skipped\n", n, skipped);
    CHECK_MSG(fails == 0, "%s: %d of %d cases differ (%d borderline skipped)", simd_paths[path], fails, n, skipped);
    ms_sampler_destroy(s);
  }
  free(got); free(want); free(c.x);
}

TEST(test_vllm_profile_matches_reference) { run_against_naive_rows(MS_PROFILE_VLLM, 0); }
TEST(test_hf_profile_matches_reference) { run_against_naive_rows(MS_PROFILE_HF, 0); }
TEST(test_sglang_profile_matches_reference) { run_against_naive_rows(MS_PROFILE_SGLANG, 0); }
/* cuts inside ties, on every path (heap, min-p list, full row) */
TEST(test_vllm_ties_match_reference) { run_against_naive_rows(MS_PROFILE_VLLM, 1); }
TEST(test_hf_ties_match_reference) { run_against_naive_rows(MS_PROFILE_HF, 1); }
TEST(test_sglang_ties_match_reference) { run_against_naive_rows(MS_PROFILE_SGLANG, 1); }

/* A top_k above 1024 selects on the full row's weights exp(l - M), where
   l - M rounds logits an ulp apart to one value (-2 - 14 and the next
   float below -2, minus 14, are both -16): the k-th and (k+1)-th logits
   tie there, and only the k-th may stay (vLLM and HF keep the logits that
   reach the k-th logit). Every SIMD path, both profiles. */
TEST(test_topk_weight_tie_broken_by_logit) {
  enum { V = 4096, K = 1100 };
  static float x[V], probs[V];
  int path, profile, i;
  for (i = 0; i < V; i++) x[i] = i < K - 1 ? 1.0f + 0.001f * (float)i : -8.0f;
  x[0] = 14.0f;                            /* M */
  x[K - 1] = -2.0f;                        /* the k-th */
  x[3000] = nextafterf(-2.0f, -INFINITY);  /* an ulp below: the same weight */
  for (path = 0; path < N_SIMD_PATHS; path++) {
    ms_sampler *s = make_sampler(simd_paths[path], V);
    if (!s) continue;
    if (strcmp(ms_sampler_simd(s), simd_paths[path]) != 0) { ms_sampler_destroy(s); continue; }
    for (profile = 0; profile < 2; profile++) {
      ms_params p = ms_params_default();
      int32_t n = 0;
      p.profile = profile ? MS_PROFILE_HF : MS_PROFILE_VLLM;
      p.top_k = K;
      CHECK(ms_probs(s, x, V, &p, NULL, probs) == MS_OK);
      for (i = 0; i < V; i++) n += probs[i] > 0.0f;
      CHECK_MSG(n == K && probs[K - 1] > 0.0f && probs[3000] == 0.0f, "%s %s: %d kept, p[k-1] %g, p[3000] %g",
                simd_paths[path], ms_profile_name(p.profile), (int)n, (double)probs[K - 1], (double)probs[3000]);
    }
    ms_sampler_destroy(s);
  }
}

/* A touched id (penalised here: repetition 0.8 lifts 2.0 to exactly 2.5)
   tying with untouched ones, in a candidate list long enough for the
   radix sort (61 ties at top-k 40): ties go by id wherever the touched id
   was appended. SGLang's exact top-k keeps the lowest 40 ids of the tie,
   39 among them; the processed logprob lists start with id 39. */
TEST(test_touched_ties_by_id) {
  enum { V = 1000 };
  static float x[V], probs[V], want[V];
  int32_t hist[1] = { 39 };
  int profile, i, path;
  for (i = 0; i < V; i++) x[i] = -5.0f;
  for (i = 100; i < 160; i++) x[i] = 2.5f;
  x[39] = 2.0f;
  for (path = 0; path < N_SIMD_PATHS; path++) {
    ms_sampler *s = make_sampler(simd_paths[path], V);
    if (!s) continue;
    if (strcmp(ms_sampler_simd(s), simd_paths[path]) != 0) { ms_sampler_destroy(s); continue; }
    for (profile = 0; profile < 3; profile++) {
      ms_params p = ms_params_default();
      ms_seq *q = NULL;
      ms_output o;
      ms_logprob top[5];
      p.profile = (ms_profile)profile;
      p.repetition_penalty = 0.8f;
      p.top_k = 40;
      p.logprobs = 5; p.logprobs_mode = MS_LOGPROBS_PROCESSED;
      CHECK(ms_seq_create(&q, 16) == MS_OK);
      if (!q) break;
      /* SGLang counts the output only: 39 is an output token there, a prompt token elsewhere */
      CHECK(ms_seq_reset(q, profile == MS_PROFILE_SGLANG ? NULL : hist, profile == MS_PROFILE_SGLANG ? 0 : 1, V, &p, 1) == MS_OK);
      if (profile == MS_PROFILE_SGLANG) CHECK(ms_seq_accept(q, 39) == MS_OK);
      CHECK(ms_probs(s, x, V, &p, q, probs) == MS_OK);
      CHECK(naive_probs(x, V, &p, profile == MS_PROFILE_SGLANG ? NULL : hist, profile == MS_PROFILE_SGLANG ? 0 : 1,
                        profile == MS_PROFILE_SGLANG ? hist : NULL, profile == MS_PROFILE_SGLANG ? 1 : 0, want) == 0);
      CHECK_MSG(compare_probs(probs, want, V, 1e-6, 1) == 0, "%s %s", simd_paths[path], ms_profile_name(p.profile));
      CHECK(probs[39] > 0.0f);
      memset(&o, 0, sizeof o);
      o.top = top; o.top_capacity = 5;
      p.seed = 1; p.has_seed = 1;
      CHECK(ms_sample(s, x, V, &p, q, &o) == MS_OK);
      CHECK_MSG(o.n_top == 5 && top[0].token == 39 && top[1].token == 100 && top[4].token == 103,
                "%s %s: top %d %d %d %d %d", simd_paths[path], ms_profile_name(p.profile), top[0].token, top[1].token,
                top[2].token, top[3].token, top[4].token);
      ms_seq_destroy(q);
    }
    ms_sampler_destroy(s);
  }
}

int main(void) {
  RUN(test_philox_known_answers);
  RUN(test_uniform_range_and_independence);
  RUN(test_simd_env_unknown_value_ignored);
  RUN(test_fresh_seeds_of_two_sequences);
  RUN(test_refused_reset_leaves_nothing_of_the_last_request);
  RUN(test_result_strings_and_version);
  RUN(test_vllm_profile_matches_reference);
  RUN(test_hf_profile_matches_reference);
  RUN(test_sglang_profile_matches_reference);
  RUN(test_vllm_ties_match_reference);
  RUN(test_hf_ties_match_reference);
  RUN(test_sglang_ties_match_reference);
  RUN(test_touched_ties_by_id);
  RUN(test_topk_weight_tie_broken_by_logit);
  return t_done();
}
