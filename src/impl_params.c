/* ---- implementation: parameters, profiles, validation --------------------- */

/* Stages of a row's pipeline that change single logits (pointwise), and
   the filters, as the profiles order them. */
enum { MS__P_MASK, MS__P_MIN_TOKENS, MS__P_BIAS, MS__P_PENALTIES, MS__P_NGRAM, MS__P_BAD_WORDS, MS__P_EXP_DECAY, MS__P_COUNT_ };
enum { MS__F_MIN_P, MS__F_TOP_K, MS__F_TOP_P, MS__F_TYPICAL, MS__F_EPSILON, MS__F_ETA, MS__F_COUNT_ };

/* A profile is this table: the one code path in impl_pipeline.c reads it. */
typedef struct ms__rules {
  const char *name;
  int supported;
  float greedy_below;     /* temperature below this is greedy (vLLM _SAMPLING_EPS) */
  float temp_floor;       /* 0 < T < floor is raised to floor (vLLM _MAX_TEMP) */
  float temp_max;         /* validation upper bound, INFINITY = none */
  float bias_clamp;       /* |bias| clamp, INFINITY = none */
  int freq_presence;      /* the profile has frequency/presence penalties */
  int rep_by_reciprocal;  /* repetition multiplies by 1/r (vLLM) instead of dividing (HF) */
  int rep_output_only;    /* repetition counts output tokens only (SGLang), not the prompt */
  int joint;              /* filters cut the same un-renormalised distribution (SGLang) */
  int topk_exact;         /* top-k keeps exactly k (ties by lower id) instead of every tie */
  int bad_words_output;   /* bad words match the output only (vLLM), not prompt + output (HF) */
  int has_ngram_decay;    /* the profile has no_repeat_ngram and exponential length decay (HF) */
  int has_typical;        /* the profile has typical-p (HF, llama.cpp) */
  int chain;              /* llama.cpp: a chain of samplers over a candidate list, temperature last */
  int pointwise[MS__P_COUNT_];
  int filters[MS__F_COUNT_];
} ms__rules;

static const ms__rules ms__profiles[MS__PROFILE_COUNT_] = {
  /* vLLM v1 (vllm/v1/sample/sampler.py): allowed-ids mask and bad words,
     then the non-argmax-invariant processors (min_tokens, logit_bias), then
     penalties; greedy rows stop there; temperature; min_p (a logits
     processor on the full softmax); then apply_top_k_top_p: top-k keeps
     every logit >= the k-th largest, top-p runs on the softmax of what is
     left (sampling_params.py: 0 < T < 0.01 is raised to 0.01 before the
     greedy test T < 1e-5, so only T = 0 is greedy; logit_bias clamped to
     [-100, 100]; temperature in [0, 2]; penalties.py multiplies positive
     logits by 1/r computed in float32). */
  { "vllm", 1, 1e-5f, 0.01f, 2.0f, 100.0f, 1, 1, 0, 0, 0, 1, 0, 0, 0,
    { MS__P_MASK, MS__P_BAD_WORDS, MS__P_MIN_TOKENS, MS__P_BIAS, MS__P_PENALTIES, MS__P_NGRAM, MS__P_EXP_DECAY },
    { MS__F_MIN_P, MS__F_TOP_K, MS__F_TOP_P, MS__F_TYPICAL, MS__F_EPSILON, MS__F_ETA } },
  /* HF transformers generate() (generation/utils.py _get_logits_processor):
     sequence bias, repetition penalty over all input ids, min_new_tokens,
     suppress tokens; then the warpers temperature -> top-k -> top-p ->
     min-p, each on the output of the previous one (checked against
     transformers 5.23 by tools/golden). Greedy means do_sample=False,
     which we map to temperature 0; no bias clamp; no presence/frequency
     penalties; repetition divides (s < 0 ? s * r : s / r). */
  { "hf", 1, 1e-30f, 0.0f, INFINITY, INFINITY, 0, 0, 0, 0, 0, 0, 1, 1, 0,
    { MS__P_BIAS, MS__P_PENALTIES, MS__P_NGRAM, MS__P_BAD_WORDS, MS__P_MIN_TOKENS, MS__P_EXP_DECAY, MS__P_MASK },
    { MS__F_TOP_K, MS__F_TOP_P, MS__F_MIN_P, MS__F_TYPICAL, MS__F_EPSILON, MS__F_ETA } },
  /* SGLang (srt/sampling/sampling_batch_info.py apply_logits_bias,
     layers/sampler.py, penaltylib): penalties over the output only (the
     repetition penalty too, divide/multiply like HF), then the grammar
     mask, then logit_bias (no clamp); greedy below 1e-6; then top-k
     (exactly k), top-p (a token stays iff the mass strictly above it is
     <= p) and min-p all cut the same un-renormalised softmax, as its
     PyTorch sampler does (top_k_top_p_min_p_sampling_from_probs_torch). */
  { "sglang", 1, 1e-6f, 0.0f, INFINITY, INFINITY, 1, 0, 1, 1, 1, 0, 0, 0, 0,
    { MS__P_PENALTIES, MS__P_MIN_TOKENS, MS__P_MASK, MS__P_BIAS, MS__P_BAD_WORDS, MS__P_NGRAM, MS__P_EXP_DECAY },
    { MS__F_TOP_K, MS__F_TOP_P, MS__F_MIN_P, MS__F_TYPICAL, MS__F_EPSILON, MS__F_ETA } },
  /* llama.cpp common sampler (common/sampling.cpp, src/llama-sampling.cpp;
     docs/ENGINES.md section 1): logit bias (with masks), then the chain
     in `samplers` order over a candidate list: penalties over the last N
     tokens of prompt + output (l <= 0 ? l * r : l / r, then
     l -= c * freq + pres), DRY, top-n-sigma, top-k (exactly k), typical,
     top-p, min-p, XTC, each probability filter on the softmax of the
     survivors, then temperature LAST (T <= 0 keeps the first maximum);
     mirostat replaces the chain. The library never rejects a value: out
     of range means off or degenerate, as in llama.cpp. */
  { "llamacpp", 1, 0.0f, 0.0f, INFINITY, INFINITY, 1, 0, 0, 0, 1, 0, 0, 1, 1,
    { MS__P_MASK, MS__P_BIAS, MS__P_MIN_TOKENS, MS__P_BAD_WORDS, MS__P_PENALTIES, MS__P_NGRAM, MS__P_EXP_DECAY },
    { MS__F_TOP_K, MS__F_TOP_P, MS__F_MIN_P, MS__F_TYPICAL, MS__F_EPSILON, MS__F_ETA } },
};

MSDEF const char *ms_profile_name(ms_profile profile) {
  return ((unsigned)profile < MS__PROFILE_COUNT_) ? ms__profiles[profile].name : NULL;
}

MSDEF int ms_profile_from_name(const char *name) {
  int i;
  if (!name) return -1;
  for (i = 0; i < MS__PROFILE_COUNT_; i++) if (!strcmp(name, ms__profiles[i].name)) return i;
  return -1;
}

MSDEF ms_params ms_params_default(void) {
  ms_params p;
  memset(&p, 0, sizeof p);
  p.profile = MS_PROFILE_VLLM;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.repetition_penalty = 1.0f;
  p.eos_token_id = -1;
  p.logprobs = -1;
  p.logprobs_mode = MS_LOGPROBS_RAW;
  p.max_logprobs = 20;
  p.exp_decay_start = -1;
  p.typical_p = 1.0f;
  p.xtc_threshold = 0.1f;
  p.dynatemp_exponent = 1.0f;
  p.mirostat_tau = 5.0f;
  p.mirostat_eta = 0.1f;
  p.dry_base = 1.75f;
  p.dry_allowed_length = 2;
  p.dry_last_n = -1;
  p.penalty_last_n = -1;
  p.budget_tokens = -1;
  return p;
}

MSDEF ms_params ms_params_profile_default(ms_profile profile) {
  ms_params p = ms_params_default();
  if ((unsigned)profile < MS__PROFILE_COUNT_) p.profile = profile;
  if (profile == MS_PROFILE_HF) p.top_k = 50;
  if (profile == MS_PROFILE_LLAMACPP) {
    /* common/common.h common_params_sampling */
    p.temperature = 0.8f;
    p.top_k = 40;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    p.penalty_last_n = 64;
  }
  return p;
}

MS__PRIVATE int ms__finite(float x) { return x == x && x != INFINITY && x != -INFINITY; }

/* Checks an id list; writes the message on the first bad id. */
MS__PRIVATE ms_result ms__check_ids(const int32_t *ids, int32_t n, int32_t vocab, const char *what,
                                    char *msg, size_t size) {
  int32_t i;
  if (n < 0) { ms__msg(msg, size, "%s count must be >= 0, got %d.", what, (int)n); return MS_ERR_INVALID_PARAM; }
  if (n > 0 && !ids) { ms__msg(msg, size, "%s is NULL but its count is %d.", what, (int)n); return MS_ERR_NULL_ARGUMENT; }
  for (i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= vocab) {
      ms__msg(msg, size, "%s contains out-of-vocab token id %d (vocab size %d).", what, (int)ids[i], (int)vocab);
      return MS_ERR_TOKEN_OUT_OF_RANGE;
    }
  return MS_OK;
}

MSDEF ms_result ms_params_validate(const ms_params *p, int32_t vocab, char *msg, size_t size) {
  char f[48];
  const ms__rules *r;
  ms_result rc;
  int32_t i;
  if (msg && size) msg[0] = '\0';
  if (!p) { ms__msg(msg, size, "params is NULL."); return MS_ERR_NULL_ARGUMENT; }
  if (vocab < 1) { ms__msg(msg, size, "vocab size must be at least 1, got %d.", (int)vocab); return MS_ERR_BAD_VOCAB; }
  if ((unsigned)p->profile >= MS__PROFILE_COUNT_) { ms__msg(msg, size, "unknown profile %d.", (int)p->profile); return MS_ERR_INVALID_PARAM; }
  r = &ms__profiles[p->profile];
  if (!r->supported) { ms__msg(msg, size, "the %s profile is not available in this version.", r->name); return MS_ERR_UNSUPPORTED; }
  if (p->profile == MS_PROFILE_HF) {
    /* transformers' own wording (generation/logits_process.py) */
    if (!(p->temperature >= 0.0f) || !ms__finite(p->temperature)) {
      ms__fmt_float(f, sizeof f, p->temperature);
      ms__msg(msg, size, "`temperature` (=%s) has to be a strictly positive float, otherwise your next token scores will be invalid.", f);
      return MS_ERR_INVALID_PARAM;
    }
    if (p->top_k < 0) { ms__msg(msg, size, "`top_k` has to be a strictly positive integer, but is %d", (int)p->top_k); return MS_ERR_INVALID_PARAM; }
    if (!(p->top_p >= 0.0f && p->top_p <= 1.0f)) {
      ms__fmt_float(f, sizeof f, p->top_p);
      ms__msg(msg, size, "`top_p` has to be a float > 0 and < 1, but is %s", f);
      return MS_ERR_INVALID_PARAM;
    }
    if (!(p->min_p >= 0.0f && p->min_p <= 1.0f)) {
      ms__fmt_float(f, sizeof f, p->min_p);
      ms__msg(msg, size, "`min_p` has to be a float in the [0, 1] interval, but is %s", f);
      return MS_ERR_INVALID_PARAM;
    }
    if (!(p->repetition_penalty > 0.0f) || !ms__finite(p->repetition_penalty)) {
      ms__fmt_float(f, sizeof f, p->repetition_penalty);
      ms__msg(msg, size, "`penalty` has to be a strictly positive float, but is %s", f);
      return MS_ERR_INVALID_PARAM;
    }
    if (p->presence_penalty != 0.0f || p->frequency_penalty != 0.0f) {
      ms__msg(msg, size, "presence_penalty and frequency_penalty are not part of the hf profile (transformers has no such processors); use the vllm profile.");
      return MS_ERR_UNSUPPORTED;
    }
  } else if (p->profile == MS_PROFILE_SGLANG) {
    /* SGLang's wording (srt/sampling/sampling_params.py verify) */
    if (!ms__finite(p->temperature) || p->temperature < 0.0f) {
      ms__fmt_float(f, sizeof f, p->temperature);
      ms__msg(msg, size, "temperature must be a non-negative finite number, got %s.", f);
      return MS_ERR_INVALID_PARAM;
    }
    if (!(p->top_p > 0.0f && p->top_p <= 1.0f)) {
      ms__fmt_float(f, sizeof f, p->top_p);
      ms__msg(msg, size, "top_p must be in (0, 1], got %s.", f);
      return MS_ERR_INVALID_PARAM;
    }
    if (!(p->min_p >= 0.0f && p->min_p <= 1.0f)) {
      ms__fmt_float(f, sizeof f, p->min_p);
      ms__msg(msg, size, "min_p must be in [0, 1], got %s.", f);
      return MS_ERR_INVALID_PARAM;
    }
    /* SGLang itself rejects top_k = 0; in ms_params 0 means "off" for every
       profile (the zero default), so only values below -1 are refused */
    if (p->top_k < -1) { ms__msg(msg, size, "top_k must be -1 (disable) or at least 1, got %d.", (int)p->top_k); return MS_ERR_INVALID_PARAM; }
    if (!(p->frequency_penalty >= -2.0f && p->frequency_penalty <= 2.0f)) {
      ms__fmt_float(f, sizeof f, p->frequency_penalty);
      ms__msg(msg, size, "frequency_penalty must be in [-2, 2], got %s.", f);
      return MS_ERR_INVALID_PARAM;
    }
    if (!(p->presence_penalty >= -2.0f && p->presence_penalty <= 2.0f)) {
      ms__fmt_float(f, sizeof f, p->presence_penalty);
      ms__msg(msg, size, "presence_penalty must be in [-2, 2], got %s.", f);
      return MS_ERR_INVALID_PARAM;
    }
    if (!(p->repetition_penalty > 0.0f && p->repetition_penalty <= 2.0f)) {
      ms__fmt_float(f, sizeof f, p->repetition_penalty);
      ms__msg(msg, size, "repetition_penalty must be in (0, 2] (1.0 = no penalty), got %s.", f);
      return MS_ERR_INVALID_PARAM;
    }
  } else if (p->profile == MS_PROFILE_LLAMACPP) {
    /* llama.cpp's samplers reject nothing: out-of-range values switch a
       sampler off or make it degenerate. Only values no branch handles
       (NaN, infinities where arithmetic follows) are refused. */
    const float vals[] = { p->temperature, p->top_p, p->min_p, p->presence_penalty, p->frequency_penalty,
                           p->repetition_penalty, p->typical_p, p->top_n_sigma, p->xtc_probability, p->xtc_threshold,
                           p->dynatemp_range, p->dynatemp_exponent, p->mirostat_tau, p->mirostat_eta,
                           p->dry_multiplier, p->dry_base };
    static const char *const names[] = { "temperature", "top_p", "min_p", "presence_penalty", "frequency_penalty",
                                         "repetition_penalty", "typical_p", "top_n_sigma", "xtc_probability", "xtc_threshold",
                                         "dynatemp_range", "dynatemp_exponent", "mirostat_tau", "mirostat_eta",
                                         "dry_multiplier", "dry_base" };
    size_t j;
    for (j = 0; j < sizeof vals / sizeof vals[0]; j++)
      if (!ms__finite(vals[j])) {
        ms__fmt_float(f, sizeof f, vals[j]);
        ms__msg(msg, size, "%s must be a finite number, got %s.", names[j], f);
        return MS_ERR_INVALID_PARAM;
      }
    if (p->mirostat < 0 || p->mirostat > 2) {
      ms__msg(msg, size, "mirostat must be 0 (off), 1 or 2, got %d.", (int)p->mirostat);
      return MS_ERR_INVALID_PARAM;
    }
    if (p->samplers) {
      const char *c;
      int seen[128];
      memset(seen, 0, sizeof seen);
      for (c = p->samplers; *c; c++) {
        if (!strchr("edskypmxt", *c)) {
          ms__msg(msg, size, "samplers: unknown sampler '%c' (known: e penalties, d dry, s top_n_sigma, k top_k, y typ_p, p top_p, m min_p, x xtc, t temperature).", *c);
          return MS_ERR_INVALID_PARAM;
        }
        if (seen[(unsigned char)*c]++) { ms__msg(msg, size, "samplers: '%c' appears twice.", *c); return MS_ERR_INVALID_PARAM; }
      }
    }
  } else {
    /* vLLM's wording (vllm/sampling_params.py _verify_args) */
    if (!(p->presence_penalty >= -2.0f && p->presence_penalty <= 2.0f)) {
      ms__fmt_float(f, sizeof f, p->presence_penalty);
      ms__msg(msg, size, "presence_penalty must be in [-2, 2], got %s.", f);
      return MS_ERR_INVALID_PARAM;
    }
    if (!(p->frequency_penalty >= -2.0f && p->frequency_penalty <= 2.0f)) {
      ms__fmt_float(f, sizeof f, p->frequency_penalty);
      ms__msg(msg, size, "frequency_penalty must be in [-2, 2], got %s.", f);
      return MS_ERR_INVALID_PARAM;
    }
    if (!ms__finite(p->repetition_penalty)) {
      ms__fmt_float(f, sizeof f, p->repetition_penalty);
      ms__msg(msg, size, "repetition_penalty must be a finite number, got %s.", f);
      return MS_ERR_INVALID_PARAM;
    }
    if (!(p->repetition_penalty > 0.0f)) {
      ms__fmt_float(f, sizeof f, p->repetition_penalty);
      ms__msg(msg, size, "repetition_penalty must be greater than zero, got %s.", f);
      return MS_ERR_INVALID_PARAM;
    }
    if (!ms__finite(p->temperature)) {
      ms__fmt_float(f, sizeof f, p->temperature);
      ms__msg(msg, size, "temperature must be a finite number, got %s.", f);
      return MS_ERR_INVALID_PARAM;
    }
    if (p->temperature < 0.0f) {
      ms__fmt_float(f, sizeof f, p->temperature);
      ms__msg(msg, size, "temperature must be non-negative, got %s.", f);
      return MS_ERR_INVALID_PARAM;
    }
    if (p->temperature > r->temp_max) {
      ms__fmt_float(f, sizeof f, p->temperature);
      ms__msg(msg, size, "temperature must be in [0, 2], got %s.", f);
      return MS_ERR_INVALID_PARAM;
    }
    if (!(p->top_p > 0.0f && p->top_p <= 1.0f)) {
      ms__fmt_float(f, sizeof f, p->top_p);
      ms__msg(msg, size, "top_p must be in (0, 1], got %s.", f);
      return MS_ERR_INVALID_PARAM;
    }
    if (p->top_k < -1) { ms__msg(msg, size, "top_k must be 0 (disable), or at least 1, got %d.", (int)p->top_k); return MS_ERR_INVALID_PARAM; }
    if (!(p->min_p >= 0.0f && p->min_p <= 1.0f)) {
      ms__fmt_float(f, sizeof f, p->min_p);
      ms__msg(msg, size, "min_p must be in [0, 1], got %s.", f);
      return MS_ERR_INVALID_PARAM;
    }
  }
  /* the catalogue: each sampler only where its engine has it */
  if (!r->chain) {
    const char *which = p->top_n_sigma > 0.0f ? "top_n_sigma" : p->xtc_probability > 0.0f ? "XTC"
                      : p->dynatemp_range != 0.0f ? "dynamic temperature" : p->mirostat != 0 ? "mirostat"
                      : p->dry_multiplier != 0.0f ? "DRY" : p->penalty_last_n != -1 ? "penalty_last_n"
                      : p->samplers ? "samplers" : NULL;
    if (which) {
      ms__msg(msg, size, "%s is not part of the %s profile (it is a llama.cpp sampler; use the llamacpp profile).", which, r->name);
      return MS_ERR_UNSUPPORTED;
    }
    if (p->typical_p != 1.0f && !r->has_typical) {
      ms__msg(msg, size, "typical_p is not part of the %s profile (HF transformers and llama.cpp have it).", r->name);
      return MS_ERR_UNSUPPORTED;
    }
    if (p->profile == MS_PROFILE_HF && !(p->typical_p > 0.0f)) {
      /* generate() adds the warper for typical_p < 1 only; it rejects <= 0 */
      ms__fmt_float(f, sizeof f, p->typical_p);
      ms__msg(msg, size, "`typical_p` has to be a float > 0 and < 1, but is %s", f);
      return MS_ERR_INVALID_PARAM;
    }
  } else {
    if (p->dry_allowed_length < 0 || p->dry_last_n < -1 || p->penalty_last_n < -1) {
      ms__msg(msg, size, "dry_allowed_length must be >= 0 and dry_last_n, penalty_last_n >= -1 (got %d, %d, %d).",
              (int)p->dry_allowed_length, (int)p->dry_last_n, (int)p->penalty_last_n);
      return MS_ERR_INVALID_PARAM;
    }
  }
  if (p->n_dry_breakers < 0 || (p->n_dry_breakers > 0 && (!p->dry_breakers || !p->dry_breakers_lens))) {
    ms__msg(msg, size, "dry_breakers: NULL arrays or a negative count (%d).", (int)p->n_dry_breakers);
    return p->n_dry_breakers < 0 ? MS_ERR_INVALID_PARAM : MS_ERR_NULL_ARGUMENT;
  }
  {
    int32_t b, at = 0;
    for (b = 0; b < p->n_dry_breakers; b++) {
      int32_t len = p->dry_breakers_lens[b], j;
      if (len < 1 || len > 1024) { ms__msg(msg, size, "dry_breakers: breaker %d has length %d (1 to 1024).", (int)b, (int)len); return MS_ERR_INVALID_PARAM; }
      for (j = 0; j < len; j++)
        if (p->dry_breakers[at + j] < 0 || p->dry_breakers[at + j] >= vocab) {
          ms__msg(msg, size, "dry_breakers: breaker %d contains out-of-vocab token id %d (vocab size %d).", (int)b, (int)p->dry_breakers[at + j], (int)vocab);
          return MS_ERR_TOKEN_OUT_OF_RANGE;
        }
      at += len;
    }
  }
  if (p->hook_stage != MS_HOOK_OFF && p->hook_stage != MS_HOOK_FIRST && p->hook_stage != MS_HOOK_BEFORE_SAMPLING) {
    ms__msg(msg, size, "hook_stage must be MS_HOOK_OFF, MS_HOOK_FIRST or MS_HOOK_BEFORE_SAMPLING, got %d.", (int)p->hook_stage);
    return MS_ERR_INVALID_PARAM;
  }
  if (p->hook_stage != MS_HOOK_OFF && !p->hook) { ms__msg(msg, size, "hook_stage is set but hook is NULL."); return MS_ERR_NULL_ARGUMENT; }
  if (p->budget_tokens >= 0) {
    if (p->n_budget_start < 1 || p->n_budget_start > MS_BUDGET_MAX_IDS || p->n_budget_end < 1 || p->n_budget_end > MS_BUDGET_MAX_IDS) {
      ms__msg(msg, size, "the reasoning budget needs start and end sequences of 1 to %d ids (got %d and %d).",
              MS_BUDGET_MAX_IDS, (int)p->n_budget_start, (int)p->n_budget_end);
      return MS_ERR_INVALID_PARAM;
    }
    if (!p->budget_start || !p->budget_end) { ms__msg(msg, size, "budget_start or budget_end is NULL."); return MS_ERR_NULL_ARGUMENT; }
    if ((rc = ms__check_ids(p->budget_start, p->n_budget_start, vocab, "budget_start", msg, size)) != MS_OK) return rc;
    if ((rc = ms__check_ids(p->budget_end, p->n_budget_end, vocab, "budget_end", msg, size)) != MS_OK) return rc;
  } else if (p->budget_tokens < -1) {
    ms__msg(msg, size, "budget_tokens must be >= 0, or -1 (off), got %d.", (int)p->budget_tokens);
    return MS_ERR_INVALID_PARAM;
  }
  /* HF truncation warpers (transformers' wording) */
  if (p->epsilon_cutoff != 0.0f || p->eta_cutoff != 0.0f || (p->min_tokens_to_keep > 1 && !r->chain)) {
    if (p->profile != MS_PROFILE_HF) {
      ms__msg(msg, size, r->chain ? "epsilon_cutoff and eta_cutoff are not part of the %s profile (they are HF transformers warpers)."
                                  : "epsilon_cutoff, eta_cutoff and min_tokens_to_keep are not part of the %s profile (they are HF transformers warpers).", r->name);
      return MS_ERR_UNSUPPORTED;
    }
    if (!(p->epsilon_cutoff >= 0.0f && p->epsilon_cutoff < 1.0f)) {
      ms__fmt_float(f, sizeof f, p->epsilon_cutoff);
      ms__msg(msg, size, "`epsilon_cutoff` has to be a float > 0 and < 1, but is %s", f);
      return MS_ERR_INVALID_PARAM;
    }
    if (!(p->eta_cutoff >= 0.0f && p->eta_cutoff < 1.0f)) {
      ms__fmt_float(f, sizeof f, p->eta_cutoff);
      ms__msg(msg, size, "`eta_cutoff` has to be a float > 0 and < 1, but is %s", f);
      return MS_ERR_INVALID_PARAM;
    }
  }
  if (p->min_tokens_to_keep < 0) {
    ms__msg(msg, size, "`min_tokens_to_keep` has to be a strictly positive integer, but is %d", (int)p->min_tokens_to_keep);
    return MS_ERR_INVALID_PARAM;
  }
  /* sequence processors */
  if (p->no_repeat_ngram_size < 0) {
    ms__msg(msg, size, "`ngram_size` has to be a strictly positive integer, but is %d", (int)p->no_repeat_ngram_size);
    return MS_ERR_INVALID_PARAM;
  }
  if ((p->no_repeat_ngram_size > 0 || p->exp_decay_start >= 0) && !r->has_ngram_decay) {
    ms__msg(msg, size, "no_repeat_ngram_size and exponential length decay are not part of the %s profile (they are HF transformers processors).", r->name);
    return MS_ERR_UNSUPPORTED;
  }
  if (p->exp_decay_start < -1 || (p->exp_decay_start >= 0 && !ms__finite(p->exp_decay_factor))) {
    ms__msg(msg, size, "exponential decay needs start >= 0 (or -1 = off) and a finite factor.");
    return MS_ERR_INVALID_PARAM;
  }
  if (p->n_bad_words < 0 || (p->n_bad_words > 0 && (!p->bad_words || !p->bad_words_lens))) {
    ms__msg(msg, size, "bad_words: NULL arrays or a negative count (%d).", (int)p->n_bad_words);
    return p->n_bad_words < 0 ? MS_ERR_INVALID_PARAM : MS_ERR_NULL_ARGUMENT;
  }
  if (p->n_bad_words > 0 && p->profile == MS_PROFILE_SGLANG) {
    ms__msg(msg, size, "bad words are not part of the sglang profile.");
    return MS_ERR_UNSUPPORTED;
  }
  {
    int32_t w, at = 0;
    for (w = 0; w < p->n_bad_words; w++) {
      int32_t len = p->bad_words_lens[w], j;
      if (len < 1 || len > (1 << 20)) { ms__msg(msg, size, "bad_words: word %d has length %d.", (int)w, (int)len); return MS_ERR_INVALID_PARAM; }
      for (j = 0; j < len; j++)
        if (p->bad_words[at + j] < 0 || p->bad_words[at + j] >= vocab) {
          ms__msg(msg, size, "bad_words: word %d contains out-of-vocab token id %d (vocab size %d).", (int)w, (int)p->bad_words[at + j], (int)vocab);
          return MS_ERR_TOKEN_OUT_OF_RANGE;
        }
      at += len;
    }
  }
  if (p->min_tokens < 0) { ms__msg(msg, size, "min_tokens must be greater than or equal to 0, got %d.", (int)p->min_tokens); return MS_ERR_INVALID_PARAM; }
  if (p->logprobs < -1) { ms__msg(msg, size, "logprobs must be non-negative or -1, got %d.", (int)p->logprobs); return MS_ERR_INVALID_PARAM; }
  if (p->max_logprobs >= 0 && p->logprobs > p->max_logprobs) {
    ms__msg(msg, size, "Requested sample logprobs of %d, which is greater than max allowed: %d", (int)p->logprobs, (int)p->max_logprobs);
    return MS_ERR_INVALID_PARAM;
  }
  if (p->logprobs_mode != MS_LOGPROBS_RAW && p->logprobs_mode != MS_LOGPROBS_PROCESSED) {
    ms__msg(msg, size, "logprobs_mode must be raw or processed, got %d.", (int)p->logprobs_mode);
    return MS_ERR_INVALID_PARAM;
  }
  if (p->allowed_ids) {
    if (p->n_allowed_ids <= 0) { ms__msg(msg, size, "allowed_token_ids is not None and empty!"); return MS_ERR_INVALID_PARAM; }
    if (ms__check_ids(p->allowed_ids, p->n_allowed_ids, vocab, "allowed_token_ids", msg, size) != MS_OK) {
      ms__msg(msg, size, "allowed_token_ids contains out-of-vocab token id!");
      return MS_ERR_TOKEN_OUT_OF_RANGE;
    }
  } else if (p->n_allowed_ids != 0) {
    ms__msg(msg, size, "allowed_ids is NULL but n_allowed_ids is %d.", (int)p->n_allowed_ids);
    return MS_ERR_NULL_ARGUMENT;
  }
  if ((rc = ms__check_ids(p->banned_ids, p->n_banned_ids, vocab, "banned_ids", msg, size)) != MS_OK) return rc;
  if ((rc = ms__check_ids(p->stop_token_ids, p->n_stop_token_ids, vocab, "stop_token_ids", msg, size)) != MS_OK) return rc;
  if (p->eos_token_id < -1 || p->eos_token_id >= vocab) {
    ms__msg(msg, size, "eos_token_id %d is out of vocab (vocab size %d).", (int)p->eos_token_id, (int)vocab);
    return MS_ERR_TOKEN_OUT_OF_RANGE;
  }
  if (p->n_logit_bias < 0 || (p->n_logit_bias > 0 && !p->logit_bias)) {
    ms__msg(msg, size, "logit_bias is NULL or its count (%d) is negative.", (int)p->n_logit_bias);
    return p->n_logit_bias < 0 ? MS_ERR_INVALID_PARAM : MS_ERR_NULL_ARGUMENT;
  }
  for (i = 0; i < p->n_logit_bias; i++) {
    if ((p->logit_bias[i].token < 0 || p->logit_bias[i].token >= vocab) && p->profile == MS_PROFILE_SGLANG) {
      ms__msg(msg, size, "logit_bias must has keys in [0, %d], got %d.", (int)vocab - 1, (int)p->logit_bias[i].token);
      return MS_ERR_TOKEN_OUT_OF_RANGE;
    }
    if (p->logit_bias[i].token < 0 || p->logit_bias[i].token >= vocab) {
      ms__msg(msg, size, "token_id(s) [%d] in logit_bias contain out-of-vocab token ids. Vocabulary size: %d",
              (int)p->logit_bias[i].token, (int)vocab);
      return MS_ERR_TOKEN_OUT_OF_RANGE;
    }
    if (p->logit_bias[i].bias != p->logit_bias[i].bias) {
      ms__msg(msg, size, "logit_bias value for token %d is NaN.", (int)p->logit_bias[i].token);
      return MS_ERR_INVALID_PARAM;
    }
  }
  return MS_OK;
}
