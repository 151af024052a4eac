/* Sampler behaviour beyond the distributions: error codes and messages,
   logprobs, seeded draws (chi-square), batch/thread invariance, sequence
   state. */
#define _POSIX_C_SOURCE 200112L
#include "mysample.h"
#include "testlib.h"
#include "chi2.h"
#include "../tools/naive.h"
#include <stdlib.h>

static uint64_t st = 0x9e3779b97f4a7c15ull;
static double ru(void) { st ^= st << 13; st ^= st >> 7; st ^= st << 17; return ((double)(st >> 11) + 0.5) / 9007199254740992.0; }
static float rn(void) { return (float)(sqrt(-2 * log(ru())) * cos(6.283185307179586 * ru())); }

static ms_sampler *sampler(int32_t V, int32_t workers) {
  ms_sampler_desc d; ms_sampler *s = NULL;
  memset(&d, 0, sizeof d); d.max_vocab = V; d.n_workers = workers; d.use_builtin_pool = workers > 1;
  return ms_sampler_create(&s, &d) == MS_OK ? s : NULL;
}

TEST(test_bad_input_codes) {
  ms_sampler *s = sampler(100, 1);
  float x[100]; ms_output out; ms_params p = ms_params_default(); float probs[100];
  int i; char msg[256];
  int32_t bad_ids[1] = {100};
  for (i = 0; i < 100; i++) x[i] = rn();
  memset(&out, 0, sizeof out);
  CHECK(ms_sample(NULL, x, 100, &p, NULL, &out) == MS_ERR_NULL_ARGUMENT);
  CHECK(ms_sample(s, NULL, 100, &p, NULL, &out) == MS_ERR_NULL_ARGUMENT);
  CHECK(ms_sample(s, x, 100, NULL, NULL, &out) == MS_ERR_NULL_ARGUMENT);
  CHECK(ms_sample(s, x, 100, &p, NULL, NULL) == MS_ERR_NULL_ARGUMENT);
  CHECK(ms_sample(s, x, 0, &p, NULL, &out) == MS_ERR_BAD_VOCAB && out.token == -1);
  CHECK(ms_sample(s, x, 101, &p, NULL, &out) == MS_ERR_BAD_VOCAB);
  x[37] = NAN;
  CHECK(ms_sample(s, x, 100, &p, NULL, &out) == MS_ERR_NAN_LOGIT && out.token == -1);
  p.temperature = 0; CHECK(ms_sample(s, x, 100, &p, NULL, &out) == MS_ERR_NAN_LOGIT);
  p.top_k = 5; p.temperature = 1; CHECK(ms_sample(s, x, 100, &p, NULL, &out) == MS_ERR_NAN_LOGIT);
  x[37] = INFINITY; p = ms_params_default();
  CHECK(ms_sample(s, x, 100, &p, NULL, &out) == MS_ERR_INF_LOGIT);
  p.temperature = 0; CHECK(ms_sample(s, x, 100, &p, NULL, &out) == MS_ERR_INF_LOGIT);
  for (i = 0; i < 100; i++) x[i] = -INFINITY;
  p = ms_params_default();
  CHECK(ms_sample(s, x, 100, &p, NULL, &out) == MS_ERR_ALL_MASKED && out.token == -1);
  CHECK(ms_probs(s, x, 100, &p, NULL, probs) == MS_ERR_ALL_MASKED);
  p.top_p = 0.5f; CHECK(ms_sample(s, x, 100, &p, NULL, &out) == MS_ERR_ALL_MASKED);
  p.top_k = 3; CHECK(ms_sample(s, x, 100, &p, NULL, &out) == MS_ERR_ALL_MASKED);
  p = ms_params_default(); p.temperature = 0; CHECK(ms_sample(s, x, 100, &p, NULL, &out) == MS_ERR_ALL_MASKED);
  /* every allowed id banned: all masked, not a crash */
  for (i = 0; i < 100; i++) x[i] = rn();
  p = ms_params_default();
  { int32_t al[2] = {3, 4}; p.allowed_ids = al; p.n_allowed_ids = 2; p.banned_ids = al; p.n_banned_ids = 2;
    CHECK(ms_sample(s, x, 100, &p, NULL, &out) == MS_ERR_ALL_MASKED); }
  p = ms_params_default(); p.banned_ids = bad_ids; p.n_banned_ids = 1;
  CHECK(ms_sample(s, x, 100, &p, NULL, &out) == MS_ERR_TOKEN_OUT_OF_RANGE);
  CHECK(ms_params_validate(&p, 100, msg, sizeof msg) == MS_ERR_TOKEN_OUT_OF_RANGE && strstr(msg, "banned_ids") != NULL);
  /* vocab 1 and 2 */
  p = ms_params_default(); p.top_p = 0.3f; p.top_k = 1;
  CHECK(ms_sample(s, x, 1, &p, NULL, &out) == MS_OK && out.token == 0);
  p.temperature = 0; CHECK(ms_sample(s, x, 2, &p, NULL, &out) == MS_OK && out.token == (x[1] > x[0]));
  /* the caller's logits are never modified */
  {
    float copy[100]; ms_bias b[2] = {{5, 3.0f}, {6, -100.0f}}; int32_t ban[1] = {7};
    ms_seq *q; int32_t prompt[3] = {1, 2, 3};
    memcpy(copy, x, sizeof copy);
    p = ms_params_default(); p.logit_bias = b; p.n_logit_bias = 2; p.banned_ids = ban; p.n_banned_ids = 1;
    p.repetition_penalty = 1.5f; p.top_p = 0.8f;
    ms_seq_create(&q, 16); ms_seq_reset(q, prompt, 3, 100, &p, 0); ms_seq_accept(q, 9);
    CHECK(ms_sample(s, x, 100, &p, q, &out) == MS_OK);
    CHECK(ms_probs(s, x, 100, &p, q, probs) == MS_OK);
    CHECK(memcmp(copy, x, sizeof copy) == 0);
    CHECK(probs[7] == 0.0f);
    ms_seq_destroy(q);
  }
  ms_sampler_destroy(s);
}

TEST(test_workspace_and_init_errors) {
  ms_sampler_desc d; ms_sampler *s; char buf[64]; ms_seq *q;
  memset(&d, 0, sizeof d);
  CHECK(ms_sampler_size(&d) == 0);
  CHECK(ms_sampler_create(&s, &d) == MS_ERR_BAD_VOCAB);
  d.max_vocab = 1000;
  CHECK(ms_sampler_init(&s, &d, buf, sizeof buf) == MS_ERR_WORKSPACE_TOO_SMALL);
  CHECK(ms_sampler_init(NULL, &d, buf, sizeof buf) == MS_ERR_NULL_ARGUMENT);
  d.n_workers = -1; CHECK(ms_sampler_size(&d) == 0);
  CHECK(ms_seq_size(0) == 0);
  CHECK(ms_seq_init(&q, 10, buf, sizeof buf) == MS_ERR_WORKSPACE_TOO_SMALL);
  CHECK(ms_seq_create(&q, 0) == MS_ERR_CAPACITY);
  CHECK(ms_seq_create(&q, 2) == MS_OK);
  { int32_t pr[3] = {1, 2, 3}, bad[1] = {50};
    CHECK(ms_seq_reset(q, pr, 3, 10, NULL, 0) == MS_ERR_CAPACITY);
    CHECK(ms_seq_reset(q, bad, 1, 10, NULL, 0) == MS_ERR_TOKEN_OUT_OF_RANGE);
    CHECK(ms_seq_reset(q, pr, 2, 10, NULL, 0) == MS_OK);
    CHECK(ms_seq_accept(q, 5) == MS_ERR_CAPACITY);
    CHECK(ms_seq_reset(q, pr, 1, 10, NULL, 0) == MS_OK);
    CHECK(ms_seq_accept(q, 10) == MS_ERR_TOKEN_OUT_OF_RANGE);
    CHECK(ms_seq_accept(q, 9) == MS_OK);
    CHECK(ms_seq_count(q, 9) == 1 && ms_seq_in_prompt(q, 1) && !ms_seq_in_prompt(q, 9));
  }
  ms_seq_destroy(q);
}

TEST(test_validation_messages) {
  /* vLLM's wording (sampling_params.py), HF's (logits_process.py) */
  static const struct { int profile; const char *field; float value; const char *want; } cases[] = {
    {0, "temperature", -0.5f, "temperature must be non-negative, got -0.5."},
    {0, "temperature", 2.5f, "temperature must be in [0, 2], got 2.5."},
    {0, "temperature", NAN, "temperature must be a finite number, got nan."},
    /* Python's repr: positional below 1e16 (it printed 1e+02 and -5e+01) */
    {0, "temperature", 100.0f, "temperature must be in [0, 2], got 100.0."},
    {0, "temperature", -50.0f, "temperature must be non-negative, got -50.0."},
    {0, "temperature", 12345678.0f, "temperature must be in [0, 2], got 12345678.0."},
    {0, "temperature", 1e16f, "temperature must be in [0, 2], got 1e+16."},
    {0, "presence_penalty", 10.0f, "presence_penalty must be in [-2, 2], got 10.0."},
    {0, "top_p", -1e-5f, "top_p must be in (0, 1], got -1e-05."},
    {0, "top_p", 0.0f, "top_p must be in (0, 1], got 0.0."},
    {0, "top_p", 1.1f, "top_p must be in (0, 1], got 1.1."},
    {0, "min_p", 1.5f, "min_p must be in [0, 1], got 1.5."},
    {0, "presence_penalty", 2.5f, "presence_penalty must be in [-2, 2], got 2.5."},
    {0, "frequency_penalty", -3.0f, "frequency_penalty must be in [-2, 2], got -3.0."},
    {0, "repetition_penalty", 0.0f, "repetition_penalty must be greater than zero, got 0.0."},
    {0, "repetition_penalty", INFINITY, "repetition_penalty must be a finite number, got inf."},
    {1, "temperature", -1.0f, "`temperature` (=-1.0) has to be a strictly positive float, otherwise your next token scores will be invalid."},
    {1, "top_p", 1.5f, "`top_p` has to be a float > 0 and < 1, but is 1.5"},
    {1, "min_p", -0.1f, "`min_p` has to be a float in the [0, 1] interval, but is -0.1"},
    {1, "repetition_penalty", -2.0f, "`penalty` has to be a strictly positive float, but is -2.0"},
    {2, "temperature", -1.0f, "temperature must be a non-negative finite number, got -1.0."},
    {2, "top_p", 0.0f, "top_p must be in (0, 1], got 0.0."},
    {2, "min_p", 2.0f, "min_p must be in [0, 1], got 2.0."},
    {2, "frequency_penalty", 2.5f, "frequency_penalty must be in [-2, 2], got 2.5."},
    {2, "repetition_penalty", 2.5f, "repetition_penalty must be in (0, 2] (1.0 = no penalty), got 2.5."},
  };
  size_t i;
  char msg[300];
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ms_params p = ms_params_default();
    p.profile = (ms_profile)cases[i].profile;
    if (!strcmp(cases[i].field, "temperature")) p.temperature = cases[i].value;
    if (!strcmp(cases[i].field, "top_p")) p.top_p = cases[i].value;
    if (!strcmp(cases[i].field, "min_p")) p.min_p = cases[i].value;
    if (!strcmp(cases[i].field, "presence_penalty")) p.presence_penalty = cases[i].value;
    if (!strcmp(cases[i].field, "frequency_penalty")) p.frequency_penalty = cases[i].value;
    if (!strcmp(cases[i].field, "repetition_penalty")) p.repetition_penalty = cases[i].value;
    CHECK(ms_params_validate(&p, 1000, msg, sizeof msg) == MS_ERR_INVALID_PARAM);
    CHECK_MSG(strcmp(msg, cases[i].want) == 0, "got '%s' want '%s'", msg, cases[i].want);
  }
  {
    ms_params p = ms_params_default();
    ms_bias b[1] = {{5000, 1.0f}};
    p.top_k = -2;
    CHECK(ms_params_validate(&p, 1000, msg, sizeof msg) == MS_ERR_INVALID_PARAM && !strcmp(msg, "top_k must be 0 (disable), or at least 1, got -2."));
    p = ms_params_default(); p.logprobs = 21;
    CHECK(ms_params_validate(&p, 1000, msg, sizeof msg) == MS_ERR_INVALID_PARAM && !strcmp(msg, "Requested sample logprobs of 21, which is greater than max allowed: 20"));
    p = ms_params_default(); p.logit_bias = b; p.n_logit_bias = 1;
    CHECK(ms_params_validate(&p, 1000, msg, sizeof msg) == MS_ERR_TOKEN_OUT_OF_RANGE && strstr(msg, "5000") && strstr(msg, "Vocabulary size: 1000"));
    p = ms_params_default(); p.min_tokens = -1;
    CHECK(ms_params_validate(&p, 1000, msg, sizeof msg) == MS_ERR_INVALID_PARAM && !strcmp(msg, "min_tokens must be greater than or equal to 0, got -1."));
    p = ms_params_default(); p.profile = MS_PROFILE_HF; p.presence_penalty = 0.5f;
    CHECK(ms_params_validate(&p, 1000, msg, sizeof msg) == MS_ERR_UNSUPPORTED);
    p = ms_params_profile_default(MS_PROFILE_LLAMACPP);
    CHECK(ms_params_validate(&p, 1000, msg, sizeof msg) == MS_OK && p.top_k == 40 && p.penalty_last_n == 64);
    p.temperature = NAN;
    CHECK(ms_params_validate(&p, 1000, msg, sizeof msg) == MS_ERR_INVALID_PARAM && !strcmp(msg, "temperature must be a finite number, got nan."));
    p = ms_params_profile_default(MS_PROFILE_LLAMACPP); p.mirostat = 3;
    CHECK(ms_params_validate(&p, 1000, msg, sizeof msg) == MS_ERR_INVALID_PARAM && !strcmp(msg, "mirostat must be 0 (off), 1 or 2, got 3."));
    p = ms_params_profile_default(MS_PROFILE_LLAMACPP); p.samplers = "kpz";
    CHECK(ms_params_validate(&p, 1000, msg, sizeof msg) == MS_ERR_INVALID_PARAM && strstr(msg, "unknown sampler 'z'"));
    p = ms_params_profile_default(MS_PROFILE_LLAMACPP); p.samplers = "kpk";
    CHECK(ms_params_validate(&p, 1000, msg, sizeof msg) == MS_ERR_INVALID_PARAM && !strcmp(msg, "samplers: 'k' appears twice."));
    /* llama.cpp takes any value: out of range means off or degenerate */
    p = ms_params_profile_default(MS_PROFILE_LLAMACPP); p.top_p = 7.0f; p.min_p = -1.0f; p.temperature = -2.0f; p.top_k = -5;
    CHECK(ms_params_validate(&p, 1000, msg, sizeof msg) == MS_OK);
    p = ms_params_default(); p.xtc_probability = 0.5f;
    CHECK(ms_params_validate(&p, 1000, msg, sizeof msg) == MS_ERR_UNSUPPORTED && !strcmp(msg, "XTC is not part of the vllm profile (it is a llama.cpp sampler; use the llamacpp profile)."));
    p = ms_params_default(); p.typical_p = 0.5f;
    CHECK(ms_params_validate(&p, 1000, msg, sizeof msg) == MS_ERR_UNSUPPORTED);
    p = ms_params_default(); p.profile = MS_PROFILE_HF; p.typical_p = 0.0f;
    CHECK(ms_params_validate(&p, 1000, msg, sizeof msg) == MS_ERR_INVALID_PARAM && !strcmp(msg, "`typical_p` has to be a float > 0 and < 1, but is 0.0"));
    p = ms_params_default(); p.profile = MS_PROFILE_HF; p.typical_p = 0.5f;
    CHECK(ms_params_validate(&p, 1000, msg, sizeof msg) == MS_OK);
    p = ms_params_default(); p.profile = MS_PROFILE_SGLANG; p.top_k = -1;
    CHECK(ms_params_validate(&p, 1000, msg, sizeof msg) == MS_OK);
    p.top_k = -3;
    CHECK(ms_params_validate(&p, 1000, msg, sizeof msg) == MS_ERR_INVALID_PARAM && !strcmp(msg, "top_k must be -1 (disable) or at least 1, got -3."));
    p = ms_params_default(); p.profile = MS_PROFILE_SGLANG; p.logit_bias = b; p.n_logit_bias = 1;
    CHECK(ms_params_validate(&p, 1000, msg, sizeof msg) == MS_ERR_TOKEN_OUT_OF_RANGE && !strcmp(msg, "logit_bias must has keys in [0, 999], got 5000."));
    p = ms_params_default();
    CHECK(ms_params_validate(&p, 1000, msg, sizeof msg) == MS_OK && msg[0] == '\0');
    CHECK(ms_params_validate(&p, 1000, NULL, 0) == MS_OK);
    p.temperature = 0.0f; p.top_k = -1;
    CHECK(ms_params_validate(&p, 1000, msg, sizeof msg) == MS_OK);
  }
}

/* Every other refusal of ms_params_validate: one bad field per case, the
   specific code and the message (its start, or the whole of it). */
TEST(test_validation_every_branch) {
  static const int32_t ids1[1] = { 3 }, far[1] = { 5000 }, len0[1] = { 0 }, len1[1] = { 1 };
  static ms_bias nan_bias[1];
  enum { N = 38 };
  int c;
  char msg[300];
  nan_bias[0].token = 3; nan_bias[0].bias = NAN;
  for (c = 0; c < N; c++) {
    ms_params p = ms_params_default();
    ms_result want = MS_ERR_INVALID_PARAM;
    const char *text = NULL;
    ms_result rc;
    switch (c) {
      case 0: p.profile = MS_PROFILE_SGLANG; p.presence_penalty = 2.5f; text = "presence_penalty must be in [-2, 2], got 2.5."; break;
      case 1: p = ms_params_profile_default(MS_PROFILE_LLAMACPP); p.dry_allowed_length = -1;
              text = "dry_allowed_length must be >= 0 and dry_last_n, penalty_last_n >= -1 (got -1, -1, 64)."; break;
      case 2: p = ms_params_profile_default(MS_PROFILE_LLAMACPP); p.penalty_last_n = -2; text = "dry_allowed_length must be >= 0"; break;
      case 3: p = ms_params_profile_default(MS_PROFILE_LLAMACPP); p.dry_last_n = -2; text = "dry_allowed_length must be >= 0"; break;
      case 4: p.n_dry_breakers = -1; text = "dry_breakers: NULL arrays or a negative count (-1)."; break;
      case 5: p.n_dry_breakers = 1; p.dry_breakers_lens = len1; want = MS_ERR_NULL_ARGUMENT; text = "dry_breakers: NULL arrays"; break;
      case 6: p.n_dry_breakers = 1; p.dry_breakers = ids1; p.dry_breakers_lens = len0; text = "dry_breakers: breaker 0 has length 0 (1 to 1024)."; break;
      case 7: p.n_dry_breakers = 1; p.dry_breakers = far; p.dry_breakers_lens = len1; want = MS_ERR_TOKEN_OUT_OF_RANGE;
              text = "dry_breakers: breaker 0 contains out-of-vocab token id 5000 (vocab size 1000)."; break;
      case 8: p.hook_stage = (ms_hook_stage)7; text = "hook_stage must be MS_HOOK_OFF, MS_HOOK_FIRST or MS_HOOK_BEFORE_SAMPLING, got 7."; break;
      case 9: p.hook_stage = MS_HOOK_FIRST; want = MS_ERR_NULL_ARGUMENT; text = "hook_stage is set but hook is NULL."; break;
      case 10: p.budget_tokens = 5; p.budget_start = ids1; p.n_budget_start = 1; p.budget_end = ids1; p.n_budget_end = 0;
               text = "the reasoning budget needs start and end sequences of 1 to"; break;
      case 11: p.budget_tokens = 5; p.n_budget_start = 1; p.budget_end = ids1; p.n_budget_end = 1; want = MS_ERR_NULL_ARGUMENT;
               text = "budget_start or budget_end is NULL."; break;
      case 12: p.budget_tokens = 0; p.budget_start = ids1; p.n_budget_start = 1; p.budget_end = far; p.n_budget_end = 1;
               want = MS_ERR_TOKEN_OUT_OF_RANGE; text = "budget_end"; break;
      case 13: p.budget_tokens = -2; text = "budget_tokens must be >= 0, or -1 (off), got -2."; break;
      case 14: p.epsilon_cutoff = 0.1f; want = MS_ERR_UNSUPPORTED;
               text = "epsilon_cutoff, eta_cutoff and min_tokens_to_keep are not part of the vllm profile (they are HF transformers warpers)."; break;
      case 15: p = ms_params_profile_default(MS_PROFILE_LLAMACPP); p.eta_cutoff = 0.1f; want = MS_ERR_UNSUPPORTED;
               text = "epsilon_cutoff and eta_cutoff are not part of the llamacpp profile (they are HF transformers warpers)."; break;
      case 16: p.min_tokens_to_keep = 2; want = MS_ERR_UNSUPPORTED; text = "epsilon_cutoff, eta_cutoff and min_tokens_to_keep are not part"; break;
      case 17: p.profile = MS_PROFILE_HF; p.epsilon_cutoff = 1.5f; text = "`epsilon_cutoff` has to be a float > 0 and < 1, but is 1.5"; break;
      case 18: p.profile = MS_PROFILE_HF; p.eta_cutoff = -0.5f; text = "`eta_cutoff` has to be a float > 0 and < 1, but is -0.5"; break;
      case 19: p.min_tokens_to_keep = -1; text = "`min_tokens_to_keep` has to be a strictly positive integer, but is -1"; break;
      case 20: p.no_repeat_ngram_size = -1; text = "`ngram_size` has to be a strictly positive integer, but is -1"; break;
      case 21: p.no_repeat_ngram_size = 2; want = MS_ERR_UNSUPPORTED; text = "no_repeat_ngram_size and exponential length decay are not part of the vllm profile"; break;
      case 22: p.profile = MS_PROFILE_HF; p.exp_decay_start = -2; text = "exponential decay needs start >= 0 (or -1 = off) and a finite factor."; break;
      case 23: p.profile = MS_PROFILE_HF; p.exp_decay_start = 3; p.exp_decay_factor = INFINITY; text = "exponential decay needs start"; break;
      case 24: p.n_bad_words = -1; text = "bad_words: NULL arrays or a negative count (-1)."; break;
      case 25: p.n_bad_words = 1; p.bad_words = ids1; want = MS_ERR_NULL_ARGUMENT; text = "bad_words: NULL arrays"; break;
      case 26: p.profile = MS_PROFILE_SGLANG; p.n_bad_words = 1; p.bad_words = ids1; p.bad_words_lens = len1; want = MS_ERR_UNSUPPORTED;
               text = "bad words are not part of the sglang profile."; break;
      case 27: p.n_bad_words = 1; p.bad_words = ids1; p.bad_words_lens = len0; text = "bad_words: word 0 has length 0."; break;
      case 28: p.n_bad_words = 1; p.bad_words = far; p.bad_words_lens = len1; want = MS_ERR_TOKEN_OUT_OF_RANGE;
               text = "bad_words: word 0 contains out-of-vocab token id 5000 (vocab size 1000)."; break;
      case 29: p.logprobs = -2; text = "logprobs must be non-negative or -1, got -2."; break;
      case 30: p.logprobs_mode = (ms_logprobs_mode)5; text = "logprobs_mode must be raw or processed, got 5."; break;
      case 31: p.allowed_ids = ids1; p.n_allowed_ids = 0; text = "allowed_token_ids is not None and empty!"; break;
      case 32: p.allowed_ids = far; p.n_allowed_ids = 1; want = MS_ERR_TOKEN_OUT_OF_RANGE; text = "allowed_token_ids contains out-of-vocab token id!"; break;
      case 33: p.n_allowed_ids = 3; want = MS_ERR_NULL_ARGUMENT; text = "allowed_ids is NULL but n_allowed_ids is 3."; break;
      case 34: p.eos_token_id = 1000; want = MS_ERR_TOKEN_OUT_OF_RANGE; text = "eos_token_id 1000 is out of vocab (vocab size 1000)."; break;
      case 35: p.n_logit_bias = -1; text = "logit_bias is NULL or its count (-1) is negative."; break;
      case 36: p.n_logit_bias = 1; want = MS_ERR_NULL_ARGUMENT; text = "logit_bias is NULL or its count (1) is negative."; break;
      default: p.logit_bias = nan_bias; p.n_logit_bias = 1; text = "logit_bias value for token 3 is NaN."; break;
    }
    msg[0] = '\0';
    rc = ms_params_validate(&p, 1000, msg, sizeof msg);
    CHECK_MSG(rc == want, "case %d: %s, want %s (%s)", c, ms_result_str(rc), ms_result_str(want), msg);
    CHECK_MSG(strncmp(msg, text, strlen(text)) == 0, "case %d: got '%s' want '%s'", c, msg, text);
  }
}

/* A logit at -inf stays there whatever its bias: a masked id (allowed ids,
   the bitmask, banned before or after the bias) with a +inf bias is still
   masked (-inf + inf would be NaN), and so is the model's -inf; +inf on an
   id no mask removed is an +Inf logit, and +inf then -inf on a finite
   logit a NaN (the entries add in the caller's order). Every profile. */
TEST(test_bias_on_minus_inf) {
  enum { V = 50 };
  static const ms_profile profs[] = { MS_PROFILE_VLLM, MS_PROFILE_HF, MS_PROFILE_SGLANG, MS_PROFILE_LLAMACPP };
  float x[V], pr[V];
  int32_t allowed[3] = { 1, 2, 3 }, banned[1] = { 9 };
  uint32_t mask[2] = { 0xffffffffu, 0xffffffffu };
  ms_bias b[3];
  ms_sampler *s = sampler(V, 1);
  int pi, c, i;
  mask[0] &= ~(1u << 11);
  for (pi = 0; pi < 4; pi++)
    for (c = 0; c < 6; c++) {
      ms_params p = ms_params_profile_default(profs[pi]);
      const int vllm = profs[pi] == MS_PROFILE_VLLM;   /* (its bias is clamped to +-100) */
      int32_t id = c == 0 ? 4 : c == 1 ? 11 : c == 2 ? 9 : 20;
      ms_result want = MS_OK;
      for (i = 0; i < V; i++) x[i] = (float)(i % 5) * 0.5f;
      x[20] = -INFINITY;
      b[0].token = id; b[0].bias = INFINITY; b[1].token = 2; b[1].bias = 0.5f;
      p.logit_bias = b; p.n_logit_bias = 2; p.seed = 3; p.has_seed = 1;
      if (c == 0) { p.allowed_ids = allowed; p.n_allowed_ids = 3; }
      if (c == 1) p.token_bitmask = mask;
      if (c == 2) { p.banned_ids = banned; p.n_banned_ids = 1; }
      if (c == 4) { id = 30; b[0].token = 30; if (!vllm) want = MS_ERR_INF_LOGIT; }
      if (c == 5) { id = 30; b[0].token = 30; b[2] = b[0]; b[2].bias = -INFINITY; p.n_logit_bias = 3; if (!vllm) want = MS_ERR_NAN_LOGIT; }
      CHECK_MSG(ms_probs(s, x, V, &p, NULL, pr) == want, "%s case %d", ms_profile_name(profs[pi]), c);
      if (want == MS_OK && c < 4) CHECK_MSG(pr[id] == 0.0f, "%s case %d: p[%d] = %g", ms_profile_name(profs[pi]), c, (int)id, (double)pr[id]);
    }
  ms_sampler_destroy(s);
}

/* logprobs against the naive reference: raw mode is log_softmax of the
   raw row, processed mode is the log of the final distribution */
TEST(test_logprobs) {
  int V = 3000, it, i;
  float *x = (float *)malloc(sizeof(float) * V), *want = (float *)malloc(sizeof(float) * V);
  ms_sampler *s = sampler(V, 1);
  for (it = 0; it < 60; it++) {
    ms_params p = ms_params_default();
    ms_output out; ms_logprob top[20];
    double m = -INFINITY, z = 0;
    int mode = it % 2;
    for (i = 0; i < V; i++) x[i] = rn() * (it % 3 ? 1.0f : 3.0f);
    p.temperature = (float[]){0.0f, 0.7f, 1.0f}[it % 3];
    if (it % 4 == 1) p.top_k = 50;
    if (it % 4 == 2) p.top_p = 0.9f;
    if (it % 4 == 3) { p.min_p = 0.05f; p.top_k = 200; }
    p.logprobs = 20; p.logprobs_mode = mode ? MS_LOGPROBS_PROCESSED : MS_LOGPROBS_RAW;
    p.seed = (uint64_t)it; p.has_seed = 1;
    memset(&out, 0, sizeof out); out.top = top; out.top_capacity = 20;
    CHECK(ms_sample(s, x, V, &p, NULL, &out) == MS_OK);
    if (!mode || p.temperature == 0.0f) {
      /* raw: log_softmax of x (processed greedy: no temperature, no filters) */
      for (i = 0; i < V; i++) if (x[i] > m) m = x[i];
      for (i = 0; i < V; i++) z += exp(x[i] - m);
      CHECK_NEAR(out.logprob, x[out.token] - m - log(z), 1e-4);
      { int rank = 0; for (i = 0; i < V; i++) if (x[i] >= x[out.token]) rank++; CHECK_EQ_INT(out.rank, rank); }
      CHECK_EQ_INT(out.n_top, 20);
      for (i = 0; i < out.n_top; i++) {
        int j, above = 0;
        CHECK_NEAR(out.top[i].logprob, x[out.top[i].token] - m - log(z), 1e-4);
        for (j = 0; j < V; j++) if (x[j] > x[out.top[i].token]) above++;
        CHECK_EQ_INT(above, i);
      }
    } else {
      int kept = 0, rank = 1;
      naive_probs(x, V, &p, NULL, 0, NULL, 0, want);
      CHECK(want[out.token] > 0);
      CHECK_NEAR(out.logprob, log(want[out.token]), 1e-4);
      for (i = 0; i < V; i++) { if (want[i] > 0) kept++; if (want[i] > want[out.token] * (1 + 1e-6)) rank++; }
      CHECK_EQ_INT(out.rank, rank);
      CHECK_EQ_INT(out.n_top, kept < 20 ? kept : 20);
      for (i = 0; i < out.n_top; i++) {
        CHECK_NEAR(out.top[i].logprob, log(want[out.top[i].token]), 1e-4);
        if (i) CHECK(out.top[i].logprob <= out.top[i - 1].logprob);
      }
    }
  }
  free(x); free(want); ms_sampler_destroy(s);
}

/* Chi-square of 100k seeded draws against the exact distribution (tests/chi2.h). */
static void chi2_config(ms_sampler *s, const float *x, int V, ms_params *p, const char *name) {
  t_chi2_draws(s, x, V, p, 1234, name);
}

TEST(test_chi_square_draws) {
  int V = 2000, i;
  float *x = (float *)malloc(sizeof(float) * V);
  ms_sampler *s = sampler(V, 1);
  ms_params p;
  for (i = 0; i < V; i++) x[i] = rn() * 2.0f;
  p = ms_params_default(); chi2_config(s, x, V, &p, "temperature 1");
  p = ms_params_default(); p.temperature = 0.6f; chi2_config(s, x, V, &p, "temperature 0.6");
  p = ms_params_default(); p.top_k = 40; chi2_config(s, x, V, &p, "top_k 40");
  p = ms_params_default(); p.top_p = 0.9f; chi2_config(s, x, V, &p, "top_p 0.9");
  p = ms_params_default(); p.min_p = 0.05f; chi2_config(s, x, V, &p, "min_p 0.05");
  p = ms_params_default(); p.top_k = 50; p.top_p = 0.95f; p.min_p = 0.05f; p.temperature = 0.7f; chi2_config(s, x, V, &p, "combo");
  p = ms_params_default(); p.profile = MS_PROFILE_HF; p.top_k = 50; p.top_p = 0.9f; p.min_p = 0.1f; chi2_config(s, x, V, &p, "hf combo");
  p = ms_params_default(); p.profile = MS_PROFILE_SGLANG; p.top_k = 50; p.top_p = 0.9f; p.min_p = 0.05f; chi2_config(s, x, V, &p, "sglang joint");
  { ms_bias b[2] = {{3, 5.0f}, {4, -3.0f}}; p = ms_params_default(); p.logit_bias = b; p.n_logit_bias = 2; p.top_p = 0.8f; chi2_config(s, x, V, &p, "bias + top_p"); }
  free(x); ms_sampler_destroy(s);
  /* the full-row paths of a large vocabulary */
  V = 40000; x = (float *)malloc(sizeof(float) * V); s = sampler(V, 1);
  for (i = 0; i < V; i++) x[i] = rn() * 3.0f;
  p = ms_params_default(); p.top_p = 0.7f; chi2_config(s, x, V, &p, "V=40000 top_p 0.7");
  p = ms_params_default(); p.top_k = 3000; p.temperature = 1.3f; chi2_config(s, x, V, &p, "V=40000 top_k 3000");
  free(x); ms_sampler_destroy(s);
}

/* The same seed gives the same tokens whatever the batch composition,
   row order and thread count; different seeds differ. */
TEST(test_batch_and_thread_invariance) {
  enum { R = 24, V = 5000 };
  float *x = (float *)malloc(sizeof(float) * R * V);
  ms_params ps[R]; const ms_params *pp[R], *pp_rev[R];
  ms_seq *seqs[R]; const ms_seq *qq[R], *qq_rev[R];
  ms_output single[R], b1[R], b2[R];
  ms_result rr[R];
  ms_sampler *s1 = sampler(V, 1), *s2 = sampler(V, 2);
  ms_batch b;
  int r, i;
  float *xr = (float *)malloc(sizeof(float) * R * V);
  for (i = 0; i < R * V; i++) x[i] = rn() * 2.0f;
  for (r = 0; r < R; r++) {
    ps[r] = ms_params_default();
    ps[r].temperature = (r % 4 == 0) ? 0.0f : 0.8f;            /* mixed greedy / random */
    ps[r].top_k = (r % 3 == 1) ? 40 : 0;
    ps[r].top_p = (r % 5 == 2) ? 0.9f : 1.0f;
    ps[r].seed = 100 + (uint64_t)r; ps[r].has_seed = 1;
    ps[r].repetition_penalty = (r % 2) ? 1.2f : 1.0f;
    ms_seq_create(&seqs[r], 64);
    { int32_t pr[3] = {r, r + 1, r + 2}; ms_seq_reset(seqs[r], pr, 3, V, &ps[r], 0); ms_seq_accept(seqs[r], 7 * r); }
    pp[r] = &ps[r]; qq[r] = seqs[r];
    pp_rev[R - 1 - r] = &ps[r]; qq_rev[R - 1 - r] = seqs[r];
    memcpy(xr + (size_t)(R - 1 - r) * V, x + (size_t)r * V, sizeof(float) * V);
    memset(&single[r], 0, sizeof single[r]);
    CHECK(ms_sample(s1, x + (size_t)r * V, V, &ps[r], seqs[r], &single[r]) == MS_OK);
  }
  memset(&b, 0, sizeof b);
  b.n_rows = R; b.vocab = V; b.logits = x; b.row_stride = V; b.params = pp; b.seqs = qq; b.out = b1; b.row_results = rr;
  CHECK(ms_sample_batch(s2, &b) == MS_OK);
  b.logits = xr; b.params = pp_rev; b.seqs = qq_rev; b.out = b2;
  CHECK(ms_sample_batch(s1, &b) == MS_OK);
  for (r = 0; r < R; r++) {
    CHECK_EQ_INT(b1[r].token, single[r].token);
    CHECK_EQ_INT(b2[R - 1 - r].token, single[r].token);
    CHECK_EQ_INT(rr[r], MS_OK);
    CHECK_EQ_INT(b1[r].greedy, ps[r].temperature == 0.0f);
  }
  /* a bad row fails alone */
  {
    ms_params bad = ms_params_default(); bad.top_p = 2.0f;
    pp[5] = &bad; b.logits = x; b.params = pp; b.seqs = qq; b.out = b1;
    CHECK(ms_sample_batch(s2, &b) == MS_ERR_INVALID_PARAM);
    CHECK_EQ_INT(rr[5], MS_ERR_INVALID_PARAM);
    CHECK_EQ_INT(b1[5].token, -1);
    CHECK_EQ_INT(b1[6].token, single[6].token);
    pp[5] = &ps[5];
  }
  /* without row_results the call still returns the failing row's code */
  {
    float keep = x[3 * V + 7];
    b.row_results = NULL; x[3 * V + 7] = NAN;
    CHECK(ms_sample_batch(s2, &b) == MS_ERR_NAN_LOGIT);
    CHECK_EQ_INT(b1[3].token, -1);
    x[3 * V + 7] = keep; b.row_results = rr;
  }
  /* stride smaller than vocab is refused */
  b.row_stride = V - 1;
  CHECK(ms_sample_batch(s1, &b) == MS_ERR_INVALID_PARAM);
  for (r = 0; r < R; r++) ms_seq_destroy(seqs[r]);
  ms_sampler_destroy(s1); ms_sampler_destroy(s2);
  free(x); free(xr);
}

TEST(test_seeds_and_replay) {
  int V = 1000, i, same = 0;
  float *x = (float *)malloc(sizeof(float) * V);
  ms_sampler *s = sampler(V, 1);
  ms_params p = ms_params_default();
  ms_seq *a, *b;
  for (i = 0; i < V; i++) x[i] = rn();
  ms_seq_create(&a, 300); ms_seq_create(&b, 300);
  /* unseeded: a fresh seed each request, readable for replay */
  ms_seq_reset(a, NULL, 0, V, &p, 1); ms_seq_reset(b, NULL, 0, V, &p, 2);
  CHECK(ms_seq_seed(a) != ms_seq_seed(b));
  ms_seq_set_seed(b, ms_seq_seed(a));
  for (i = 0; i < 200; i++) {
    ms_output oa, ob; memset(&oa, 0, sizeof oa); memset(&ob, 0, sizeof ob);
    ms_sample(s, x, V, &p, a, &oa); ms_sample(s, x, V, &p, b, &ob);
    CHECK_EQ_INT(oa.token, ob.token);
    CHECK(oa.position == (uint64_t)i && oa.seed == ms_seq_seed(a));
    ms_seq_accept(a, oa.token); ms_seq_accept(b, ob.token);
  }
  /* different seeds give different streams */
  p.seed = 1; p.has_seed = 1; ms_seq_reset(a, NULL, 0, V, &p, 0);
  p.seed = 2; ms_seq_reset(b, NULL, 0, V, &p, 0);
  for (i = 0; i < 200; i++) {
    ms_output oa, ob; memset(&oa, 0, sizeof oa); memset(&ob, 0, sizeof ob);
    ms_sample(s, x, V, &p, a, &oa); ms_sample(s, x, V, &p, b, &ob);
    same += oa.token == ob.token;
    ms_seq_accept(a, oa.token); ms_seq_accept(b, ob.token);
  }
  CHECK(same < 100);
  /* copy keeps counters, seed and position */
  {
    ms_seq *c; ms_seq_create(&c, 300);
    CHECK(ms_seq_copy(c, a) == MS_OK);
    CHECK(ms_seq_seed(c) == ms_seq_seed(a) && ms_seq_position(c) == ms_seq_position(a));
    for (i = 0; i < V; i++) CHECK(ms_seq_count(c, i) == ms_seq_count(a, i));
    ms_seq_destroy(c);
    ms_seq_create(&c, 10);
    CHECK(ms_seq_copy(c, a) == MS_ERR_CAPACITY);
    ms_seq_destroy(c);
  }
  ms_seq_destroy(a); ms_seq_destroy(b); ms_sampler_destroy(s); free(x);
}

/* A caller-provided parallel-for must give the same results. */
typedef struct pf_user { int calls; } pf_user;
static void my_parallel_for(void *user, int32_t n, ms_task_fn fn, void *ctx) {
  int32_t i;
  ((pf_user *)user)->calls++;
  for (i = n - 1; i >= 0; i--) fn(ctx, i, i % 2); /* reversed, two workspaces */
}
TEST(test_caller_parallel_for) {
  enum { R = 8, V = 700 };
  float x[R * V]; ms_params p = ms_params_default(); const ms_params *pp[R]; ms_output o1[R], o2[R];
  ms_sampler_desc d; ms_sampler *s, *s1 = sampler(V, 1); ms_batch b; pf_user u = {0}; int i;
  for (i = 0; i < R * V; i++) x[i] = rn();
  p.top_p = 0.9f; p.seed = 5; p.has_seed = 1;
  for (i = 0; i < R; i++) pp[i] = &p;
  memset(&d, 0, sizeof d); d.max_vocab = V; d.n_workers = 2; d.parallel_for = my_parallel_for; d.parallel_user = &u;
  CHECK(ms_sampler_create(&s, &d) == MS_OK);
  memset(&b, 0, sizeof b); b.n_rows = R; b.vocab = V; b.logits = x; b.row_stride = V; b.params = pp; b.out = o1;
  CHECK(ms_sample_batch(s, &b) == MS_OK);
  b.out = o2; CHECK(ms_sample_batch(s1, &b) == MS_OK);
  CHECK(u.calls == 1);
  for (i = 0; i < R; i++) CHECK_EQ_INT(o1[i].token, o2[i].token);
  ms_sampler_destroy(s); ms_sampler_destroy(s1);
}

TEST(test_min_tokens_and_penalties_scope) {
  int V = 50, i;
  float x[50]; float probs[50];
  ms_sampler *s = sampler(V, 1);
  ms_params p = ms_params_default();
  ms_seq *q; int32_t stops[1] = {7}; int32_t prompt[2] = {3, 4};
  for (i = 0; i < V; i++) x[i] = 0.0f;
  ms_seq_create(&q, 64);
  p.min_tokens = 2; p.eos_token_id = 5; p.stop_token_ids = stops; p.n_stop_token_ids = 1;
  ms_seq_reset(q, prompt, 2, V, &p, 0);
  CHECK(ms_probs(s, x, V, &p, q, probs) == MS_OK);
  CHECK(probs[5] == 0 && probs[7] == 0 && probs[6] > 0);
  ms_seq_accept(q, 1); ms_seq_accept(q, 1);
  CHECK(ms_probs(s, x, V, &p, q, probs) == MS_OK);
  CHECK(probs[5] > 0 && probs[7] > 0);
  /* frequency/presence count output only; repetition also the prompt */
  p = ms_params_default(); p.frequency_penalty = 1.0f; p.presence_penalty = 0.5f;
  CHECK(ms_probs(s, x, V, &p, q, probs) == MS_OK);
  CHECK_NEAR(probs[1] / probs[0], exp(-2.5), 1e-5);
  CHECK_NEAR(probs[3] / probs[0], 1.0, 1e-6);
  p = ms_params_default(); p.repetition_penalty = 2.0f;
  for (i = 0; i < V; i++) x[i] = 1.0f;
  CHECK(ms_probs(s, x, V, &p, q, probs) == MS_OK);
  CHECK_NEAR(probs[3] / probs[0], exp(-0.5), 1e-5);
  CHECK_NEAR(probs[1] / probs[0], exp(-0.5), 1e-5);
  ms_seq_destroy(q); ms_sampler_destroy(s);
}

/* Any number of logprobs: all V of them, sorted, summing to 1. */
TEST(test_logprobs_any_n) {
  int V = 3000, i, mode;
  float *x = (float *)malloc(sizeof(float) * V);
  ms_logprob *top = (ms_logprob *)malloc(sizeof(ms_logprob) * V);
  ms_sampler *s = sampler(V, 1);
  for (i = 0; i < V; i++) x[i] = rn();
  for (mode = 0; mode < 2; mode++) {
    ms_params p = ms_params_default();
    ms_output out; double sum = 0;
    p.logprobs = V; p.max_logprobs = -1; p.top_p = 0.9f; p.seed = 3; p.has_seed = 1;
    p.logprobs_mode = mode ? MS_LOGPROBS_PROCESSED : MS_LOGPROBS_RAW;
    memset(&out, 0, sizeof out); out.top = top; out.top_capacity = V;
    CHECK(ms_sample(s, x, V, &p, NULL, &out) == MS_OK);
    if (!mode) CHECK_EQ_INT(out.n_top, V);
    else CHECK(out.n_top > 1000 && out.n_top < V);           /* the kept set only */
    for (i = 0; i < out.n_top; i++) { sum += exp(out.top[i].logprob); if (i) CHECK(out.top[i].logprob <= out.top[i - 1].logprob); }
    CHECK_NEAR(sum, 1.0, 1e-4);
  }
  free(x); free(top); ms_sampler_destroy(s);
}

/* A NaN or +Inf that the row masks: the row samples the rest, and raw
   logprobs are the log-softmax of the finite logits (normaliser, rank and
   list leave the bad value out); unmasked, the row fails. */
TEST(test_masked_bad_values) {
  enum { V = 50 };
  float x[V];
  ms_logprob top[3];
  int32_t banned[1] = { 7 }, allowed[2] = { 3, 9 };
  ms_sampler *s = sampler(V, 1);
  int i, c, bad;
  for (i = 0; i < V; i++) x[i] = rn();
  x[3] = 5.0f; x[9] = 6.0f;   /* above the rest: the list is theirs */
  for (bad = 0; bad < 2; bad++) {
    for (c = 0; c < 3; c++) {
      ms_params p = ms_params_default();
      ms_output out;
      double z = 0.0;
      int above = 0;
      x[7] = bad ? (float)NAN : INFINITY;
      p.logprobs = 3; p.seed = 4; p.has_seed = 1;
      if (c == 0) { p.banned_ids = banned; p.n_banned_ids = 1; }
      if (c == 1) { p.allowed_ids = allowed; p.n_allowed_ids = 2; }
      memset(&out, 0, sizeof out); out.top = top; out.top_capacity = 3;
      if (c == 2 || (c == 0 && bad)) {   /* unmasked, or a NaN outside an allowed list's row */
        CHECK_EQ_INT(ms_sample(s, x, V, &p, NULL, &out), bad ? MS_ERR_NAN_LOGIT : MS_ERR_INF_LOGIT);
        continue;
      }
      CHECK_EQ_INT(ms_sample(s, x, V, &p, NULL, &out), MS_OK);
      CHECK(out.token >= 0 && out.token != 7);
      for (i = 0; i < V; i++) if (i != 7) { z += exp((double)x[i] - 6.0); above += x[i] > x[out.token]; }
      CHECK_NEAR(out.logprob, (double)x[out.token] - 6.0 - log(z), 1e-5);
      CHECK_EQ_INT(out.rank, 1 + above);
      CHECK_EQ_INT(out.n_top, 3);
      CHECK(top[0].token == 9 && top[1].token == 3 && top[2].token != 7);
      CHECK_NEAR(top[0].logprob, -log(z), 1e-5);
    }
  }
  ms_sampler_destroy(s);
}

/* The same on a long row, whose raw top-N scan starts from a threshold
   guessed from a sample of the row (every 8th id here): a sampled id far
   above the rest makes the guess too high, and the scan then starts again
   from the bottom. With a masked NaN or +Inf in the row it did not (the
   scan's error ended it), and the raw top list held the one value that
   reached the guess instead of the N largest finite logits (found by the
   GPU path's differential tests: ms_k_lp's list was right). */
TEST(test_masked_bad_values_top_list) {
  enum { V = 4096, N = 5 };
  static float x[V];
  ms_logprob top[N];
  int32_t banned[1] = { 1 }, allowed[3] = { 5, 2000, 4095 };
  ms_sampler *s = sampler(V, 1);
  int i, j, bad, c;
  for (i = 0; i < V; i++) x[i] = rn();
  x[8] = 10.0f;   /* a sampled id: the guess */
  for (bad = 0; bad < 2; bad++) {
    for (c = 0; c < 3; c++) {
      ms_params p = ms_params_default();
      ms_output out;
      double z = 0.0;
      float m = -INFINITY;
      x[1] = bad ? (float)NAN : INFINITY;
      p.logprobs = N; p.seed = 4; p.has_seed = 1;
      p.temperature = c == 2 ? 0.0f : 1.0f;   /* greedy: the raw list too */
      if (c == 1) { p.allowed_ids = allowed; p.n_allowed_ids = 3; }
      else { p.banned_ids = banned; p.n_banned_ids = 1; }
      if (bad && c != 1) continue;   /* a NaN outside an allowed list's row fails it */
      memset(&out, 0, sizeof out); out.top = top; out.top_capacity = N;
      CHECK_EQ_INT(ms_sample(s, x, V, &p, NULL, &out), MS_OK);
      for (i = 0; i < V; i++) if (i != 1 && x[i] > m) m = x[i];
      for (i = 0; i < V; i++) if (i != 1) z += exp((double)x[i] - (double)m);
      CHECK_EQ_INT(out.n_top, N);
      for (j = 0; j < out.n_top; j++) {
        int above = 0;
        const int32_t t = top[j].token;
        CHECK(t >= 0 && t < V && t != 1);
        if (t < 0 || t >= V) break;
        for (i = 0; i < V; i++) above += i != 1 && (x[i] > x[t] || (x[i] == x[t] && i < t));
        CHECK_MSG(above == j, "bad %d case %d: top %d is id %d, the %d-th largest", bad, c, j, (int)t, above);
        CHECK_NEAR(top[j].logprob, (double)x[t] - (double)m - log(z), 1e-5);
      }
    }
  }
  ms_sampler_destroy(s);
}

/* Bad words: vLLM matches the output only, HF prompt + output; one-id
   words always; no_repeat_ngram and decay are HF-only. */
TEST(test_bad_words_scope) {
  int V = 20, i;
  float x[20], probs[20];
  ms_sampler *s = sampler(V, 1);
  ms_params p = ms_params_default();
  int32_t words[5] = {3, 4, 9, 7, 8}, lens[3] = {2, 1, 2}, prompt[2] = {1, 3}, out1[1] = {7};
  ms_seq *q; char msg[200];
  for (i = 0; i < V; i++) x[i] = 0.0f;
  ms_seq_create(&q, 16);
  p.bad_words = words; p.bad_words_lens = lens; p.n_bad_words = 3;
  ms_seq_reset(q, prompt, 2, V, &p, 0);                       /* history: 1 3 | */
  CHECK(ms_probs(s, x, V, &p, q, probs) == MS_OK);
  CHECK(probs[9] == 0.0f);                                    /* one-id word */
  CHECK(probs[4] > 0.0f);                                     /* vLLM: "3 4" ends the prompt, not the output */
  p.profile = MS_PROFILE_HF;
  CHECK(ms_probs(s, x, V, &p, q, probs) == MS_OK);
  CHECK(probs[4] == 0.0f && probs[9] == 0.0f);                /* HF: prompt + output */
  ms_seq_accept(q, out1[0]);                                  /* history: 1 3 | 7 */
  p.profile = MS_PROFILE_VLLM;
  CHECK(ms_probs(s, x, V, &p, q, probs) == MS_OK);
  CHECK(probs[8] == 0.0f && probs[4] > 0.0f);                 /* "7 8": 7 ends the output */
  p.no_repeat_ngram_size = 2;
  CHECK(ms_params_validate(&p, V, msg, sizeof msg) == MS_ERR_UNSUPPORTED);
  p.profile = MS_PROFILE_HF;
  CHECK(ms_params_validate(&p, V, msg, sizeof msg) == MS_OK);
  p.no_repeat_ngram_size = -1;
  CHECK(ms_params_validate(&p, V, msg, sizeof msg) == MS_ERR_INVALID_PARAM && !strcmp(msg, "`ngram_size` has to be a strictly positive integer, but is -1"));
  p.no_repeat_ngram_size = 0; lens[1] = 0;
  CHECK(ms_params_validate(&p, V, msg, sizeof msg) == MS_ERR_INVALID_PARAM);
  lens[1] = 1; words[2] = 25;
  CHECK(ms_params_validate(&p, V, msg, sizeof msg) == MS_ERR_TOKEN_OUT_OF_RANGE);
  ms_seq_destroy(q); ms_sampler_destroy(s);
}

/* The rank counts the logprobs >= the token's, itself and its ties
   included, as vLLM v1 ((x >= v).sum()): greedy on {2, 2, 1, 0} is rank 2;
   in every mode, on rows of many ties (bf16-like logits). */
TEST(test_rank_counts_ties) {
  enum { V = 400 };
  static const float four[4] = {2.0f, 2.0f, 1.0f, 0.0f};
  float x[V], probs[V];
  ms_sampler *s = sampler(V, 1);
  ms_output out; ms_logprob top[5];
  int it, i;
  ms_params p = ms_params_default();
  p.temperature = 0.0f; p.logprobs = 2;
  memset(&out, 0, sizeof out); out.top = top; out.top_capacity = 5;
  CHECK_EQ_INT(ms_sample(s, four, 4, &p, NULL, &out), MS_OK);
  CHECK(out.token == 0 && out.rank == 2);
  for (it = 0; it < 60; it++) {
    int rank = 0;
    p = ms_params_default();
    for (i = 0; i < V; i++) x[i] = (float)(int)(rn() * 4.0f) * 0.5f;   /* a few distinct values */
    p.temperature = it % 3 ? 0.8f : 0.0f;
    if (it % 4 == 1) p.top_k = 30;
    if (it % 4 == 2) p.top_p = 0.8f;
    if (it % 4 == 3) { p.min_p = 0.1f; p.top_k = 100; }
    p.logprobs = 5; p.logprobs_mode = (it / 2) % 2 ? MS_LOGPROBS_PROCESSED : MS_LOGPROBS_RAW;
    p.seed = 40u + (uint64_t)it; p.has_seed = 1;
    memset(&out, 0, sizeof out); out.top = top; out.top_capacity = 5;
    CHECK_EQ_INT(ms_sample(s, x, V, &p, NULL, &out), MS_OK);
    if (p.logprobs_mode == MS_LOGPROBS_RAW || p.temperature == 0.0f) {
      for (i = 0; i < V; i++) rank += x[i] >= x[out.token];
    } else {
      CHECK_EQ_INT(ms_probs(s, x, V, &p, NULL, probs), MS_OK);
      for (i = 0; i < V; i++) rank += probs[i] > 0.0f && x[i] >= x[out.token];
    }
    CHECK_MSG(out.rank == rank, "it %d: rank %d, want %d", it, (int)out.rank, rank);
  }
  ms_sampler_destroy(s);
}

/* A hook (either stage) leaves raw logprobs raw: the caller's logits
   before every processor, as vLLM's raw_logprobs (the hook's copy, with the
   bias in it, once stood in for them). */
static ms_result t_noop_hook(void *user, float *logits, int32_t vocab, const struct ms_seq *seq, const struct ms_params *p) {
  (void)user; (void)logits; (void)vocab; (void)seq; (void)p;
  return MS_OK;
}
TEST(test_hook_keeps_raw_logprobs) {
  enum { V = 300 };
  float x[V];
  ms_sampler *s = sampler(V, 1);
  ms_output a, b; ms_logprob ta[4], tb[4];
  ms_bias bias = {3, 5.0f};
  int stage, i;
  for (i = 0; i < V; i++) x[i] = rn();
  for (stage = MS_HOOK_FIRST; stage <= MS_HOOK_BEFORE_SAMPLING; stage++) {
    ms_params p = ms_params_default();
    p.logit_bias = &bias; p.n_logit_bias = 1;
    p.top_k = 40; p.logprobs = 4; p.seed = 5; p.has_seed = 1;
    memset(&a, 0, sizeof a); a.top = ta; a.top_capacity = 4;
    memset(&b, 0, sizeof b); b.top = tb; b.top_capacity = 4;
    CHECK_EQ_INT(ms_sample(s, x, V, &p, NULL, &a), MS_OK);
    p.hook = t_noop_hook; p.hook_stage = (ms_hook_stage)stage;
    CHECK_EQ_INT(ms_sample(s, x, V, &p, NULL, &b), MS_OK);
    CHECK_EQ_INT(b.token, a.token);
    CHECK(b.logprob == a.logprob && b.rank == a.rank && b.n_top == a.n_top);
    for (i = 0; i < a.n_top && i < b.n_top; i++) CHECK(ta[i].token == tb[i].token && ta[i].logprob == tb[i].logprob);
  }
  ms_sampler_destroy(s);
}

/* HF's min_tokens_to_keep of any size keeps every token from V on (a huge
   one overflowed the scan's buffer size, and ms_sample never returned). */
TEST(test_hf_huge_min_tokens_to_keep) {
  enum { V = 500 };
  float x[V], pa[V], pb[V];
  ms_sampler *s = sampler(V, 1);
  ms_output out;
  int i;
  ms_params p = ms_params_profile_default(MS_PROFILE_HF);
  for (i = 0; i < V; i++) x[i] = rn();
  p.top_p = 0.5f; p.top_k = 20; p.min_tokens_to_keep = 0x7fffffff; p.seed = 1; p.has_seed = 1;
  memset(&out, 0, sizeof out);
  CHECK_EQ_INT(ms_sample(s, x, V, &p, NULL, &out), MS_OK);
  CHECK_EQ_INT(ms_probs(s, x, V, &p, NULL, pa), MS_OK);
  p.min_tokens_to_keep = V;
  CHECK_EQ_INT(ms_probs(s, x, V, &p, NULL, pb), MS_OK);
  for (i = 0; i < V; i++) CHECK(pa[i] == pb[i] && pa[i] > 0.0f);
  ms_sampler_destroy(s);
}

/* llama.cpp's chain on a sequence holding ids past the row's vocabulary
   (ms_seq_reset checks ids against its own vocab): they are left out of
   the penalty window and DRY, as the core pipeline leaves them out (they
   indexed a scratch array of the row's size). */
TEST(test_llamacpp_foreign_ids) {
  enum { V = 64 };
  static const int32_t with[6] = {5, 900, 7, 901, 5, 7000}, without[3] = {5, 7, 5};
  float x[V], pa[V], pb[V];
  ms_sampler *s = sampler(V, 1);
  ms_seq *qa = NULL, *qb = NULL;
  int i, n;
  ms_params p = ms_params_profile_default(MS_PROFILE_LLAMACPP);
  for (i = 0; i < V; i++) x[i] = rn();
  p.repetition_penalty = 1.3f; p.frequency_penalty = 0.2f; p.penalty_last_n = -1;
  p.dry_multiplier = 0.8f; p.dry_allowed_length = 1;
  CHECK(ms_seq_create(&qa, 64) == MS_OK && ms_seq_create(&qb, 64) == MS_OK);
  if (!qa || !qb) return;
  for (n = 0; n < 2; n++) {
    p.penalty_last_n = n ? 4 : -1;
    CHECK_EQ_INT(ms_seq_reset(qa, with, 6, 10000, &p, 0), MS_OK);
    CHECK_EQ_INT(ms_seq_reset(qb, without, 3, 10000, &p, 0), MS_OK);
    CHECK_EQ_INT(ms_probs(s, x, V, &p, qa, pa), MS_OK);
    CHECK_EQ_INT(ms_probs(s, x, V, &p, qb, pb), MS_OK);
    if (!n) for (i = 0; i < V; i++) CHECK(pa[i] == pb[i]);   /* (the whole sequence: the same counts) */
  }
  ms_seq_destroy(qa); ms_seq_destroy(qb);
  ms_sampler_destroy(s);
}

/* llama.cpp's typical_p over the whole row: the token drawn does not
   depend on whether processed logprobs are asked for (the band was drawn
   in id order, the sorted list in value order), and the processed rank
   counts the kept tokens at least as likely. */
TEST(test_llamacpp_typical_draw_order) {
  enum { V = 2000 };
  float x[V], probs[V];
  ms_sampler *s = sampler(V, 1);
  ms_output a, b; ms_logprob tb[3];
  int seed, i, differ = 0;
  for (i = 0; i < V; i++) x[i] = rn();
  for (seed = 0; seed < 20; seed++) {
    ms_params p = ms_params_profile_default(MS_PROFILE_LLAMACPP);
    int rank = 0;
    p.top_k = 0; p.typical_p = 0.9f; p.seed = (uint64_t)seed; p.has_seed = 1;
    memset(&a, 0, sizeof a);
    CHECK_EQ_INT(ms_sample(s, x, V, &p, NULL, &a), MS_OK);
    p.logprobs = 3; p.logprobs_mode = MS_LOGPROBS_PROCESSED;
    memset(&b, 0, sizeof b); b.top = tb; b.top_capacity = 3;
    CHECK_EQ_INT(ms_sample(s, x, V, &p, NULL, &b), MS_OK);
    differ += a.token != b.token;
    CHECK_EQ_INT(ms_probs(s, x, V, &p, NULL, probs), MS_OK);
    for (i = 0; i < V; i++) rank += probs[i] > 0.0f && probs[i] >= probs[b.token];
    CHECK_MSG(b.rank == rank, "seed %d: rank %d, want %d", seed, (int)b.rank, rank);
    CHECK(b.n_top == 3 && tb[0].logprob >= tb[1].logprob && tb[1].logprob >= tb[2].logprob);
    for (i = 0; i < V; i++) CHECK(!(probs[i] > expf(tb[0].logprob) * 1.0001f));
  }
  CHECK_EQ_INT(differ, 0);
  ms_sampler_destroy(s);
}

/* Processed logprobs at a low temperature, where exp((l - M) / T) of all
   but the top token underflows to 0: the tokens top-k keeps still have
   finite logprobs (vLLM's processed_logprobs are the log_softmax of the
   processed logits, HF's the processed scores), so the top list is the N
   largest logits with (l - M) / T - log Z, on the heap path (k <= 1024)
   and on the full row (k above 1024) alike. */
TEST(test_processed_top_list_underflowed_weights) {
  enum { V = 4096, N = 5 };
  static float x[V];
  int32_t i, kk, profile, want[N];
  ms_sampler *s = sampler(V, 1);
  for (i = 0; i < V; i++) {
    int32_t r = (int32_t)(((int64_t)i * 7919) % V); /* a permutation: rank r has logit -3r */
    x[i] = -3.0f * (float)r;
    if (r < N) want[r] = i;
  }
  for (profile = 0; profile < 3; profile++)
    for (kk = 0; kk < 2; kk++) {
      ms_params p = ms_params_default();
      ms_output out; ms_logprob top[N];
      p.profile = (ms_profile)profile;
      p.temperature = 0.01f; p.top_k = kk ? 2000 : 500;
      p.logprobs = N; p.logprobs_mode = MS_LOGPROBS_PROCESSED; p.seed = 5; p.has_seed = 1;
      memset(&out, 0, sizeof out); out.top = top; out.top_capacity = N;
      CHECK(ms_sample(s, x, V, &p, NULL, &out) == MS_OK);
      CHECK(out.token == want[0] && out.rank == 1 && fabs(out.logprob) < 1e-6);
      CHECK_MSG(out.n_top == N, "%s top_k %d: %d listed", ms_profile_name(p.profile), (int)p.top_k, (int)out.n_top);
      for (i = 0; i < out.n_top; i++)
        CHECK_MSG(top[i].token == want[i] && fabs(top[i].logprob + 300.0 * i) < 1e-3 * (1 + i),
                  "%s top_k %d: top[%d] = %d %g", ms_profile_name(p.profile), (int)p.top_k, (int)i, (int)top[i].token,
                  (double)top[i].logprob);
    }
  ms_sampler_destroy(s);
}

int main(void) {
  RUN(test_masked_bad_values);
  RUN(test_masked_bad_values_top_list);
  RUN(test_bad_words_scope);
  RUN(test_logprobs_any_n);
  RUN(test_processed_top_list_underflowed_weights);
  RUN(test_bad_input_codes);
  RUN(test_workspace_and_init_errors);
  RUN(test_validation_messages);
  RUN(test_validation_every_branch);
  RUN(test_bias_on_minus_inf);
  RUN(test_logprobs);
  RUN(test_chi_square_draws);
  RUN(test_batch_and_thread_invariance);
  RUN(test_seeds_and_replay);
  RUN(test_caller_parallel_for);
  RUN(test_min_tokens_and_penalties_scope);
  RUN(test_rank_counts_ties);
  RUN(test_hook_keeps_raw_logprobs);
  RUN(test_hf_huge_min_tokens_to_keep);
  RUN(test_llamacpp_foreign_ids);
  RUN(test_llamacpp_typical_draw_order);
  return t_done();
}
