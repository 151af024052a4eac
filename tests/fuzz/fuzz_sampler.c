/* libFuzzer target for the sampler: any bytes become a vocabulary size,
   parameters (including NaN/Inf/negative values and out-of-range ids), a
   sequence and raw float bit patterns for the logits. Invariants: the
   sampler never crashes, agrees with ms_params_validate, returns a token
   in range whose final probability is non-zero, a distribution that sums
   to 1, and sorted logprobs; on error the token is -1. A byte may widen
   the row past 4096 tokens (copies of the given logits, each shifted by
   a step that may be 0: ties), where typical-p and top-p estimate their
   thresholds from samples before exact passes. */
#define MYSAMPLE_IMPLEMENTATION
#include "mysample.h"
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <stdio.h>
#define MAXV 8200
#define FAIL() do { fprintf(stderr, "fuzz_sampler: invariant at line %d\n", __LINE__); abort(); } while (0)

typedef struct rd { const uint8_t *p; size_t n; } rd;
static uint32_t take(rd *r, int bytes) {
  uint32_t v = 0; int i;
  for (i = 0; i < bytes; i++) { v = (v << 8) | (r->n ? *r->p : 0); if (r->n) { r->p++; r->n--; } }
  return v;
}
static float take_float(rd *r) {
  static const float pick[] = {0.0f, 1.0f, 0.5f, 0.7f, 1.3f, 2.0f, -1.0f, 1e-6f, 0.009f, 0.95f, 0.05f, 1e30f, -0.0f};
  uint32_t sel = take(r, 1);
  if (sel < 200) return pick[sel % (sizeof pick / sizeof pick[0])];
  { uint32_t bits = take(r, 4); float f; memcpy(&f, &bits, 4); return f; } /* any bit pattern: NaN, Inf, subnormal */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static ms_sampler *s;
  rd r = {data, size};
  int32_t V = 1 + (int32_t)(take(&r, 2) % 300), i;
  static float logits[MAXV], probs[MAXV];
  ms_params p = ms_params_default();
  ms_bias bias[4]; int32_t allowed[6], banned[4], stops[3], prompt[16], output[16];
  static uint32_t mask[(MAXV + 31) / 32];
  int32_t n_prompt, n_output;
  ms_seq *q = NULL;
  ms_output out; ms_logprob top[8];
  ms_result rv, rs, rp;
  char msg[256];
  if (!s) { ms_sampler_desc d; memset(&d, 0, sizeof d); d.max_vocab = MAXV; if (ms_sampler_create(&s, &d) != MS_OK) FAIL(); }
  p.profile = (ms_profile)(take(&r, 1) % 4);
  p.temperature = take_float(&r);
  p.top_k = (int32_t)(take(&r, 2) % 400) - 2;
  p.top_p = take_float(&r);
  p.min_p = take_float(&r) * 0.1f;
  p.presence_penalty = take_float(&r);
  p.frequency_penalty = take_float(&r);
  p.repetition_penalty = take_float(&r);
  p.seed = take(&r, 4); p.has_seed = 1;
  p.logprobs = (int32_t)(take(&r, 1) % 10) - 1;
  p.logprobs_mode = (ms_logprobs_mode)(take(&r, 1) % 2);
  p.n_logit_bias = (int32_t)(take(&r, 1) % 5);
  for (i = 0; i < p.n_logit_bias; i++) { bias[i].token = (int32_t)(take(&r, 2) % 320) - 5; bias[i].bias = take_float(&r); }
  p.logit_bias = bias;
  if (take(&r, 1) % 4 == 0) { p.n_allowed_ids = (int32_t)(take(&r, 1) % 7); for (i = 0; i < p.n_allowed_ids; i++) allowed[i] = (int32_t)(take(&r, 2) % 310); p.allowed_ids = allowed; }
  p.n_banned_ids = (int32_t)(take(&r, 1) % 5);
  for (i = 0; i < p.n_banned_ids; i++) banned[i] = (int32_t)(take(&r, 2) % 305);
  p.banned_ids = banned;
  if (take(&r, 1) % 4 == 0) {
    /* the mask covers the widest row: its ten words repeat */
    for (i = 0; i < 10; i++) mask[i] = take(&r, 4);
    for (i = 10; i < (MAXV + 31) / 32; i++) mask[i] = mask[i % 10];
    p.token_bitmask = mask;
  }
  if (take(&r, 1) % 4 == 0) {
    static int32_t bw[8], bl[4];
    int32_t w, at = 0;
    p.n_bad_words = (int32_t)(take(&r, 1) % 4);
    for (w = 0; w < p.n_bad_words; w++) { bl[w] = 1 + (int32_t)(take(&r, 1) % 2); for (i = 0; i < bl[w]; i++) bw[at++] = (int32_t)(take(&r, 2) % 305); }
    p.bad_words = bw; p.bad_words_lens = bl;
  }
  if (take(&r, 1) % 4 == 0) p.no_repeat_ngram_size = (int32_t)(take(&r, 1) % 5) - 1;
  if (take(&r, 1) % 4 == 0) { p.exp_decay_start = (int32_t)(take(&r, 1) % 5) - 1; p.exp_decay_factor = take_float(&r); }
  if (take(&r, 1) % 4 == 0) { p.epsilon_cutoff = take_float(&r) * 0.01f; p.eta_cutoff = take_float(&r) * 0.01f; p.min_tokens_to_keep = (int32_t)(take(&r, 1) % 5) - 1; }
  if (take(&r, 1) % 3 == 0) {
    /* the catalogue (llama.cpp samplers; refused by the other profiles) */
    static const char *const orders[] = { NULL, "edskypmxt", "kpmt", "tkp", "pmk", "xt", "ykt", "dept", "", "smxyt" };
    static int32_t br[6], brl[3];
    p.typical_p = take_float(&r);
    p.top_n_sigma = take_float(&r) * 0.5f;
    p.xtc_probability = take_float(&r) * 0.1f; p.xtc_threshold = take_float(&r) * 0.1f;
    p.dynatemp_range = take_float(&r) * 0.1f; p.dynatemp_exponent = take_float(&r) * 0.2f;
    p.mirostat = (int32_t)(take(&r, 1) % 4) - (take(&r, 1) % 8 == 0);
    p.mirostat_tau = take_float(&r); p.mirostat_eta = take_float(&r) * 0.1f;
    p.dry_multiplier = take_float(&r) * 0.1f; p.dry_base = 1.0f + take_float(&r) * 0.1f;
    p.dry_allowed_length = (int32_t)(take(&r, 1) % 5) - 1; p.dry_last_n = (int32_t)(take(&r, 1) % 40) - 2;
    p.n_dry_breakers = (int32_t)(take(&r, 1) % 3);
    {
      int32_t at = 0, j;
      for (i = 0; i < p.n_dry_breakers; i++) {
        brl[i] = 1 + (int32_t)(take(&r, 1) % 2);
        for (j = 0; j < brl[i]; j++) br[at++] = (int32_t)(take(&r, 2) % 305);
      }
    }
    p.dry_breakers = br; p.dry_breakers_lens = brl;
    p.penalty_last_n = (int32_t)(take(&r, 1) % 40) - 2;
    p.samplers = orders[take(&r, 1) % 10];
    p.min_tokens_to_keep = (int32_t)(take(&r, 1) % 4);
  }
  if (take(&r, 1) % 6 == 0) {
    static int32_t bs[2], be[2];
    bs[0] = (int32_t)(take(&r, 2) % (uint32_t)V); bs[1] = (int32_t)(take(&r, 2) % (uint32_t)V);
    be[0] = (int32_t)(take(&r, 2) % (uint32_t)V); be[1] = (int32_t)(take(&r, 2) % (uint32_t)V);
    p.budget_start = bs; p.n_budget_start = 1 + (int32_t)(take(&r, 1) % 2);
    p.budget_end = be; p.n_budget_end = 1 + (int32_t)(take(&r, 1) % 2);
    p.budget_tokens = (int32_t)(take(&r, 1) % 5) - 1;
  }
  p.min_tokens = (int32_t)(take(&r, 1) % 8);
  p.eos_token_id = (int32_t)(take(&r, 2) % 302) - 1;
  p.n_stop_token_ids = (int32_t)(take(&r, 1) % 4);
  for (i = 0; i < p.n_stop_token_ids; i++) stops[i] = (int32_t)(take(&r, 2) % 302);
  p.stop_token_ids = stops;
  n_prompt = (int32_t)(take(&r, 1) % 17); n_output = (int32_t)(take(&r, 1) % 17);
  for (i = 0; i < n_prompt; i++) prompt[i] = (int32_t)(take(&r, 2) % (uint32_t)V);
  for (i = 0; i < n_output; i++) output[i] = (int32_t)(take(&r, 2) % (uint32_t)V);
  for (i = 0; i < V; i++) {
    uint32_t kind = take(&r, 1);
    if (kind < 230) logits[i] = (float)((int32_t)take(&r, 2) - 32768) / 2048.0f;
    else { uint32_t bits = take(&r, 4); memcpy(&logits[i], &bits, 4); }
  }
  if (take(&r, 1) >= 192) {
    /* wide: copies of the row, copy c shifted by c * step */
    int32_t V2 = 4097 + (int32_t)(take(&r, 2) % (MAXV - 4097)), c;
    float step = (float)((int32_t)take(&r, 1) - 128) / 1024.0f;
    for (i = V; i < V2; i++) { c = i / V; logits[i] = logits[i % V] + (float)c * step; }
    V = V2;
  }
  if (take(&r, 1) % 3) {
    if (ms_seq_create(&q, 40) != MS_OK) FAIL();
    if (ms_seq_reset(q, prompt, n_prompt, V, &p, 0) != MS_OK) FAIL();
    for (i = 0; i < n_output; i++) if (ms_seq_accept(q, output[i]) != MS_OK) FAIL();
  }
  rv = ms_params_validate(&p, V, msg, sizeof msg);
  if (rv != MS_OK && msg[0] == '\0') FAIL();               /* every error names its reason */
  memset(&out, 0, sizeof out); out.top = top; out.top_capacity = 8;
  rs = ms_sample(s, logits, V, &p, q, &out);
  rp = ms_probs(s, logits, V, &p, q, probs);
  if (rv != MS_OK && (rs != rv || rp != rv)) FAIL();       /* validation decides first */
  if (rs != rp) FAIL();                                    /* the same row fails the same way */
  if (rs != MS_OK) { if (out.token != -1) FAIL(); }
  else {
    double sum = 0.0;
    if (out.token < 0 || out.token >= V) FAIL();
    for (i = 0; i < V; i++) { if (!(probs[i] >= 0.0f && probs[i] <= 1.0f)) FAIL(); sum += probs[i]; }
    if (fabs(sum - 1.0) > 1e-3) FAIL();
    if (!(probs[out.token] > 0.0f)) FAIL();
    if (p.logprobs >= 0) {
      if (!(out.logprob <= 1e-4f) && !(out.logprob != out.logprob)) FAIL();
      if (out.n_top < 0 || out.n_top > p.logprobs || out.n_top > 8) FAIL();
      for (i = 1; i < out.n_top; i++) if (out.top[i].logprob > out.top[i - 1].logprob) FAIL();
      for (i = 0; i < out.n_top; i++) if (out.top[i].token < 0 || out.top[i].token >= V) FAIL();
      if (out.rank < 1 || out.rank > V) FAIL();
    }
  }
  {
    /* the workspace invariants between calls (internals: this file holds
       the implementation): enable all ones, no touched bits left */
    const ms__ws *w = s->ws[0];
    int32_t words = (MAXV + 31) / 32;
    for (i = 0; i < words; i++) if (w->enable[i] != 0xffffffffu || w->touched_bits[i] != 0u) { fprintf(stderr, "word %d enable %08x touched %08x\n", (int)i, w->enable[i], w->touched_bits[i]); FAIL(); }
  }
  ms_seq_destroy(q);
  return 0;
}
