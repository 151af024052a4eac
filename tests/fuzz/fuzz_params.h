/* The fuzz targets' shared decoding of ms_params from bytes (fuzz_sampler.c,
   fuzz_cuda_sample.c): any bytes become parameters, NaN, Inf and negative
   values and out-of-range ids included, the catalogue's llama.cpp samplers
   and a reasoning budget sometimes. Missing bytes read as 0. */
#ifndef MS_FUZZ_PARAMS_H
#define MS_FUZZ_PARAMS_H
#include <stdint.h>
#include <string.h>

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

/* The lists a decoded ms_params points into (they must outlive it). */
#define FUZZ_MASK_WORDS 257   /* a bitmask for rows up to 8224 ids: ten words repeated */
typedef struct fuzz_lists {
  ms_bias bias[4];
  int32_t allowed[6], banned[4], stops[3];
  uint32_t mask[FUZZ_MASK_WORDS];
  int32_t bw[8], bl[4], br[6], brl[3], bs[2], be[2];
} fuzz_lists;

/* Decodes p (from ms_params_default()) for rows of V ids (1..); L holds its lists. */
static void fuzz_take_params(rd *r, int32_t V, ms_params *p, fuzz_lists *L) {
  int32_t i;
  p->profile = (ms_profile)(take(r, 1) % 4);
  p->temperature = take_float(r);
  p->top_k = (int32_t)(take(r, 2) % 400) - 2;
  p->top_p = take_float(r);
  p->min_p = take_float(r) * 0.1f;
  p->presence_penalty = take_float(r);
  p->frequency_penalty = take_float(r);
  p->repetition_penalty = take_float(r);
  p->seed = take(r, 4); p->has_seed = 1;
  p->logprobs = (int32_t)(take(r, 1) % 10) - 1;
  p->logprobs_mode = (ms_logprobs_mode)(take(r, 1) % 2);
  p->n_logit_bias = (int32_t)(take(r, 1) % 5);
  for (i = 0; i < p->n_logit_bias; i++) { L->bias[i].token = (int32_t)(take(r, 2) % 320) - 5; L->bias[i].bias = take_float(r); }
  p->logit_bias = L->bias;
  if (take(r, 1) % 4 == 0) { p->n_allowed_ids = (int32_t)(take(r, 1) % 7); for (i = 0; i < p->n_allowed_ids; i++) L->allowed[i] = (int32_t)(take(r, 2) % 310); p->allowed_ids = L->allowed; }
  p->n_banned_ids = (int32_t)(take(r, 1) % 5);
  for (i = 0; i < p->n_banned_ids; i++) L->banned[i] = (int32_t)(take(r, 2) % 305);
  p->banned_ids = L->banned;
  if (take(r, 1) % 4 == 0) {
    /* the mask covers the widest row: its ten words repeat */
    for (i = 0; i < 10; i++) L->mask[i] = take(r, 4);
    for (i = 10; i < FUZZ_MASK_WORDS; i++) L->mask[i] = L->mask[i % 10];
    p->token_bitmask = L->mask;
  }
  if (take(r, 1) % 4 == 0) {
    int32_t w, at = 0;
    p->n_bad_words = (int32_t)(take(r, 1) % 4);
    for (w = 0; w < p->n_bad_words; w++) { L->bl[w] = 1 + (int32_t)(take(r, 1) % 2); for (i = 0; i < L->bl[w]; i++) L->bw[at++] = (int32_t)(take(r, 2) % 305); }
    p->bad_words = L->bw; p->bad_words_lens = L->bl;
  }
  if (take(r, 1) % 4 == 0) p->no_repeat_ngram_size = (int32_t)(take(r, 1) % 5) - 1;
  if (take(r, 1) % 4 == 0) { p->exp_decay_start = (int32_t)(take(r, 1) % 5) - 1; p->exp_decay_factor = take_float(r); }
  if (take(r, 1) % 4 == 0) { p->epsilon_cutoff = take_float(r) * 0.01f; p->eta_cutoff = take_float(r) * 0.01f; p->min_tokens_to_keep = (int32_t)(take(r, 1) % 5) - 1; }
  if (take(r, 1) % 3 == 0) {
    /* the catalogue (llama.cpp samplers; refused by the other profiles) */
    static const char *const orders[] = { NULL, "edskypmxt", "kpmt", "tkp", "pmk", "xt", "ykt", "dept", "", "smxyt" };
    p->typical_p = take_float(r);
    p->top_n_sigma = take_float(r) * 0.5f;
    p->xtc_probability = take_float(r) * 0.1f; p->xtc_threshold = take_float(r) * 0.1f;
    p->dynatemp_range = take_float(r) * 0.1f; p->dynatemp_exponent = take_float(r) * 0.2f;
    p->mirostat = (int32_t)(take(r, 1) % 4) - (take(r, 1) % 8 == 0);
    p->mirostat_tau = take_float(r); p->mirostat_eta = take_float(r) * 0.1f;
    p->dry_multiplier = take_float(r) * 0.1f; p->dry_base = 1.0f + take_float(r) * 0.1f;
    p->dry_allowed_length = (int32_t)(take(r, 1) % 5) - 1; p->dry_last_n = (int32_t)(take(r, 1) % 40) - 2;
    p->n_dry_breakers = (int32_t)(take(r, 1) % 3);
    {
      int32_t at = 0, j;
      for (i = 0; i < p->n_dry_breakers; i++) {
        L->brl[i] = 1 + (int32_t)(take(r, 1) % 2);
        for (j = 0; j < L->brl[i]; j++) L->br[at++] = (int32_t)(take(r, 2) % 305);
      }
    }
    p->dry_breakers = L->br; p->dry_breakers_lens = L->brl;
    p->penalty_last_n = (int32_t)(take(r, 1) % 40) - 2;
    p->samplers = orders[take(r, 1) % 10];
    p->min_tokens_to_keep = (int32_t)(take(r, 1) % 4);
  }
  if (take(r, 1) % 6 == 0) {
    L->bs[0] = (int32_t)(take(r, 2) % (uint32_t)V); L->bs[1] = (int32_t)(take(r, 2) % (uint32_t)V);
    L->be[0] = (int32_t)(take(r, 2) % (uint32_t)V); L->be[1] = (int32_t)(take(r, 2) % (uint32_t)V);
    p->budget_start = L->bs; p->n_budget_start = 1 + (int32_t)(take(r, 1) % 2);
    p->budget_end = L->be; p->n_budget_end = 1 + (int32_t)(take(r, 1) % 2);
    p->budget_tokens = (int32_t)(take(r, 1) % 5) - 1;
  }
  p->min_tokens = (int32_t)(take(r, 1) % 8);
  p->eos_token_id = (int32_t)(take(r, 2) % 302) - 1;
  p->n_stop_token_ids = (int32_t)(take(r, 1) % 4);
  for (i = 0; i < p->n_stop_token_ids; i++) L->stops[i] = (int32_t)(take(r, 2) % 302);
  p->stop_token_ids = L->stops;
}

#endif
