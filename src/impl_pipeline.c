/* ---- implementation: the per-row pipeline ---------------------------------- */

/* The effective row: the caller's logits (never written) seen through an
   enable bitmap (bit clear = not the raw value) plus a sparse list of
   touched ids whose values live in ws->ovr. Masks, bias, min_tokens and
   penalties only ever touch a few ids, so they cost O(touched), and the
   scans stay single passes over the caller's row. */
typedef struct ms__row {
  const float *x;
  const float *raw;        /* the caller's logits: x too, unless a hook took a copy */
  int32_t V;
  const ms_params *p;
  const ms_seq *seq;
  const ms__rules *r;
  const ms__kernels *K;
  ms__ws *w;
  const uint32_t *enable;  /* NULL: every raw logit is used as is */
  int sparse;              /* allowed-ids list: only touched ids exist */
  int32_t n_touched;
  int defer;               /* penalties wait for the scan (scan-only rows) */
  int lazy;                /* ... and only lower logits: applied to the scan's survivors only */
  int32_t n_pending;       /* deferred penalised ids (ws->pend), excluded from the raw scan */
  float m;                 /* max of the effective row */
  int32_t argmax;
  int overlay;             /* the caller will touch ids after the build: set up the overlay */
  int32_t given;           /* ms_score: the token reported instead of a draw's; -1: draw */
} ms__row;

#define MS__TOUCHED(w, id) (((w)->touched_bits[(id) >> 5] >> ((id) & 31)) & 1u)

MS__PRIVATE float ms__eff(const ms__row *R, int32_t id) {
  if (MS__TOUCHED(R->w, id)) return R->w->ovr[id];
  if (R->sparse) return -INFINITY;
  if (R->enable && !((R->enable[id >> 5] >> (id & 31)) & 1u)) return -INFINITY;
  return R->x[id];
}

/* Returns the slot of id in ovr, creating it from the effective base value. */
MS__PRIVATE float *ms__touch(ms__row *R, int32_t id) {
  ms__ws *w = R->w;
  if (!MS__TOUCHED(w, id)) {
    float base = ms__eff(R, id);
    w->touched_bits[id >> 5] |= 1u << (id & 31);
    if (R->enable) ((uint32_t *)R->enable)[id >> 5] &= ~(1u << (id & 31));
    w->touched[R->n_touched++] = id;
    w->ovr[id] = base;
  }
  return &w->ovr[id];
}

MS__PRIVATE void ms__row_cleanup(ms__row *R) {
  int32_t i;
  int restore = R->enable == R->w->enable;
  for (i = 0; i < R->n_touched; i++) {
    int32_t id = R->w->touched[i];
    R->w->touched_bits[id >> 5] &= ~(1u << (id & 31));
    if (restore) R->w->enable[id >> 5] |= 1u << (id & 31);
  }
  if (restore)
    for (i = 0; i < R->n_pending; i++) { int32_t id = R->w->pend[i]; R->w->enable[id >> 5] |= 1u << (id & 31); }
  R->n_touched = 0;
  R->n_pending = 0;
}

MS__PRIVATE int ms__penalties_active(const ms_params *p, const ms_seq *seq) {
  return seq && seq->n_distinct > 0 &&
         (p->repetition_penalty != 1.0f || p->frequency_penalty != 0.0f || p->presence_penalty != 0.0f);
}

/* The penalised value of l for token tok (vLLM apply_penalties:
   repetition (positive logits times 1/r in vLLM, divided by r in HF; the
   others times r), then frequency, then presence); *hit says whether any
   penalty applies to tok. O(1): one hash lookup in the sequence. */
/* The penalties of one distinct token (its output count, whether it is in
   the prompt) applied to l: vLLM apply_penalties order, repetition
   (positive logits times the float32 1/r in vLLM, divided by r in HF and
   SGLang; the others times r; SGLang counts the output only), then
   frequency, then presence. ms__penalty_hits says whether anything
   applies. */
MS__FORCEINLINE int ms__penalty_hits(const ms__row *R, int32_t cnt, int in_prompt) {
  const ms_params *p = R->p;
  return (p->repetition_penalty != 1.0f && (cnt > 0 || (in_prompt && !R->r->rep_output_only))) ||
         (cnt > 0 && (p->frequency_penalty != 0.0f || p->presence_penalty != 0.0f));
}
MS__FORCEINLINE float ms__penalty_apply(const ms__row *R, float l, int32_t cnt, int in_prompt) {
  const ms_params *p = R->p;
  float rp = p->repetition_penalty;
  if (rp != 1.0f && (cnt > 0 || (in_prompt && !R->r->rep_output_only)))
    l = l > 0.0f ? (R->r->rep_by_reciprocal ? l * (1.0f / rp) : l / rp) : l * rp;
  if (cnt > 0) { l -= p->frequency_penalty * (float)cnt; l -= p->presence_penalty; }
  return l;
}

/* ms__penalty_apply for a token looked up in the sequence: O(1). */
MS__PRIVATE float ms__penalise(const ms__row *R, int32_t tok, float l, int *hit) {
  const ms_seq *seq = R->seq;
  uint32_t h = ms__seq_find(seq, tok);
  int32_t k;
  *hit = 0;
  if (seq->slot_token[h] != tok) return l;
  k = seq->slot_index[h];
  *hit = ms__penalty_hits(R, seq->d_count[k], seq->d_prompt[k]);
  return *hit ? ms__penalty_apply(R, l, seq->d_count[k], seq->d_prompt[k]) : l;
}

/* Scan-only rows: exclude every penalised id from the raw scan and note it
   in ws->pend; ms__scan_row_from decides per id after the scan. */
MS__PRIVATE void ms__defer_penalties(ms__row *R) {
  const ms_seq *seq = R->seq;
  ms__ws *w = R->w;
  int32_t i;
  for (i = 0; i < seq->n_distinct; i++) {
    int32_t tok = seq->d_token[i];
    uint32_t bit;
    if (tok >= R->V || MS__TOUCHED(w, tok)) continue;
    if (!ms__penalty_hits(R, seq->d_count[i], seq->d_prompt[i])) continue;
    bit = 1u << (tok & 31);
    if (R->enable[tok >> 5] & bit) { ((uint32_t *)R->enable)[tok >> 5] &= ~bit; w->pend[R->n_pending++] = tok; }
  }
}

/* Builds the effective row: the pointwise stages, in the profile's order. */
MS__PRIVATE void ms__row_build(ms__row *R) {
  const ms_params *p = R->p;
  const ms_seq *seq = R->seq;
  ms__ws *w = R->w;
  int32_t words = (R->V + 31) / 32, i, st;
  int min_tokens_on = p->min_tokens > 0 && (seq ? seq->n_output : 0) < p->min_tokens;
  int hist = seq ? seq->n_prompt + seq->n_output : 0;
  int decay_on = p->exp_decay_start >= 0 && p->eos_token_id >= 0 && seq && seq->n_output > p->exp_decay_start;
  int seq_procs = (p->no_repeat_ngram_size > 0 && hist + 1 >= p->no_repeat_ngram_size) || p->n_bad_words > 0 || decay_on;
  int mods = p->allowed_ids || p->token_bitmask || p->n_banned_ids > 0 || p->n_logit_bias > 0 ||
             (min_tokens_on && (p->eos_token_id >= 0 || p->n_stop_token_ids > 0)) || ms__penalties_active(p, seq) || seq_procs;
  int32_t forced = seq && seq->bud_state == MS_BUDGET_FORCING ? seq->bud_end[seq->bud_force_pos] : -1;
  if (R->r->chain) mods = mods || R->overlay; /* llama.cpp penalties run in the chain */
  R->enable = NULL; R->sparse = 0; R->n_touched = 0; R->n_pending = 0;
  if (forced >= R->V) forced = -1;
  if (!mods && forced < 0) { R->defer = 0; R->lazy = 0; return; }
  if (p->allowed_ids || forced >= 0) R->defer = R->lazy = 0; /* sparse rows read only the allowed ids anyway */
  if (forced >= 0) {
    /* the reasoning budget forces the end sequence: the row is that one
       token (its logit, or 0 when the model gave it none) */
    float v = R->x[forced];
    R->sparse = 1;
    w->touched_bits[forced >> 5] |= 1u << (forced & 31);
    w->touched[R->n_touched++] = forced;
    w->ovr[forced] = v == v && v > -INFINITY && v < INFINITY ? v : 0.0f;
  } else if (p->allowed_ids) {
    R->sparse = 1;
    R->enable = NULL; /* raw scans are skipped: only touched ids exist */
    /* the allowed ids are the row: touch them first with their raw values */
    for (i = 0; i < p->n_allowed_ids; i++) {
      int32_t id = p->allowed_ids[i];
      if (!MS__TOUCHED(w, id)) {
        w->touched_bits[id >> 5] |= 1u << (id & 31);
        w->touched[R->n_touched++] = id;
        w->ovr[id] = (p->token_bitmask && !((p->token_bitmask[id >> 5] >> (id & 31)) & 1u)) ? -INFINITY : R->x[id];
      }
    }
  } else if (p->token_bitmask) {
    memcpy(w->mask, p->token_bitmask, (size_t)words * 4);
    if (R->V & 31) w->mask[words - 1] &= (1u << (R->V & 31)) - 1u;
    R->enable = w->mask;
  } else {
    /* all ones between calls: cleanup restores the bits it cleared */
    R->enable = w->enable;
  }
  for (st = 0; st < MS__P_COUNT_; st++) {
    switch (R->r->pointwise[st]) {
      case MS__P_MASK:
        for (i = 0; i < p->n_banned_ids; i++) *ms__touch(R, p->banned_ids[i]) = -INFINITY;
        break;
      case MS__P_MIN_TOKENS:
        if (min_tokens_on) {
          if (p->eos_token_id >= 0) *ms__touch(R, p->eos_token_id) = -INFINITY;
          for (i = 0; i < p->n_stop_token_ids; i++) *ms__touch(R, p->stop_token_ids[i]) = -INFINITY;
        }
        break;
      case MS__P_BIAS:
        /* a logit at -inf stays there whatever its bias: a mask (in
           whichever order the profile applies it) wins over a +inf bias,
           which would make it NaN (torch's -inf + inf), and a -inf entry
           is final; on both devices */
        for (i = 0; i < p->n_logit_bias; i++) {
          float b = p->logit_bias[i].bias, c = R->r->bias_clamp, *l;
          if (b > c) b = c;
          if (b < -c) b = -c;
          l = ms__touch(R, p->logit_bias[i].token);
          if (*l != -INFINITY) *l += b;
        }
        break;
      case MS__P_NGRAM:
        /* HF NoRepeatNGram over prompt + output: every earlier n-gram whose
           first n-1 ids equal the last n-1 ids bans its last id */
        if (p->no_repeat_ngram_size > 0 && seq && hist + 1 >= p->no_repeat_ngram_size) {
          int32_t n = p->no_repeat_ngram_size, j, q;
          const int32_t *tk = seq->tokens;
          for (j = 0; j + n <= hist; j++) {
            for (q = 0; q < n - 1 && tk[j + q] == tk[hist - n + 1 + q]; q++) {}
            if (q == n - 1 && tk[j + n - 1] < R->V) *ms__touch(R, tk[j + n - 1]) = -INFINITY;
          }
        }
        break;
      case MS__P_BAD_WORDS:
        if (p->n_bad_words > 0) {
          /* a word's last id is banned when its other ids end the history
             (output only in vLLM, prompt + output in HF); one-id words
             always; HF drops a one-id word equal to EOS */
          const int32_t *tk = seq ? seq->tokens + (R->r->bad_words_output ? seq->n_prompt : 0) : NULL;
          int32_t L = seq ? (R->r->bad_words_output ? seq->n_output : hist) : 0, wd, at = 0;
          for (wd = 0; wd < p->n_bad_words; wd++) {
            int32_t len = p->bad_words_lens[wd], q;
            const int32_t *word = p->bad_words + at;
            at += len;
            if (len == 1) {
              if (!R->r->bad_words_output && word[0] == p->eos_token_id) continue;
              *ms__touch(R, word[0]) = -INFINITY;
              continue;
            }
            if (L < len - 1) continue;
            for (q = 0; q < len - 1 && tk[L - len + 1 + q] == word[q]; q++) {}
            if (q == len - 1) *ms__touch(R, word[len - 1]) = -INFINITY;
          }
        }
        break;
      case MS__P_EXP_DECAY:
        if (decay_on) {
          /* HF ExponentialDecayLengthPenalty: EOS += |l| * (f^k - 1) */
          float *l = ms__touch(R, p->eos_token_id);
          int32_t kk = seq->n_output - p->exp_decay_start;
          if (*l == *l && *l != INFINITY && *l != -INFINITY)
            *l = *l + fabsf(*l) * (float)(pow((double)p->exp_decay_factor, (double)kk) - 1.0);
        }
        break;
      case MS__P_PENALTIES:
        if (R->r->chain || !ms__penalties_active(p, seq)) break;
        if (R->lazy || R->defer) {
          /* scan-only rows: the ids touched so far now; the others after
             the scan (lazy: only its survivors; defer: excluded from it) */
          int32_t n = R->n_touched;
          for (i = 0; i < n; i++) {
            int hit;
            int32_t tok = w->touched[i];
            w->ovr[tok] = ms__penalise(R, tok, w->ovr[tok], &hit);
          }
          if (!R->lazy) ms__defer_penalties(R);
          break;
        }
        {
          for (i = 0; i < seq->n_distinct; i++) {
            int32_t tok = seq->d_token[i];
            float *l;
            if (tok >= R->V) continue; /* a sequence from a larger vocab: ignore */
            if (!ms__penalty_hits(R, seq->d_count[i], seq->d_prompt[i])) continue;
            l = ms__touch(R, tok);
            *l = ms__penalty_apply(R, *l, seq->d_count[i], seq->d_prompt[i]);
          }
        }
        break;
      default: break;
    }
  }
}

/* Top-k scan over the effective row into t (raw lanes, then touched ids). */
/* Guess of a threshold that about 3k values of the row reach, from a
   strided sample (1024 values, fewer for short rows): admitting only those
   spares the scan the early phase where almost every value passes.
   -FLT_MAX when no guess helps. */
MS__PRIVATE float ms__guess_threshold(const float *x, int32_t V, int32_t k) {
  float top[33];
  int32_t r, i, n = 0, S = V / 8 < 1024 ? V / 8 : 1024;
  double step;
  if (k < 4 || S < 64) return -FLT_MAX;
  r = (int32_t)(3.0 * k * S / V);
  if (r < 1) r = 1;
  if (r > 32) return -FLT_MAX;
  step = (double)V / S;
  for (i = 0; i < S; i++) {
    float v = x[(int32_t)(i * step)];
    int32_t j;
    if (!(v > -INFINITY) || v == INFINITY) continue;
    if (n == r && !(v > top[r - 1])) continue;
    j = n < r ? n++ : r - 1;
    while (j > 0 && top[j - 1] < v) { top[j] = top[j - 1]; j--; }
    top[j] = v;
  }
  return n == r ? top[r - 1] : -FLT_MAX;
}

MS__PRIVATE ms_result ms__scan_row_from(ms__row *R, ms__topk *t) {
  int32_t i;
  if (!R->sparse && ms__scan_all(R->K, R->x, R->V, R->enable, t)) return MS_ERR_NAN_LOGIT;
  for (i = 0; i < R->n_touched; i++) {
    int32_t id = R->w->touched[i];
    float v = R->w->ovr[id];
    if (v != v) return MS_ERR_NAN_LOGIT;
    if (v >= t->thr) ms__topk_push(t, v, id);
  }
  if (R->n_pending) {
    /* deferred penalties: with penalties that can only lower a logit, a
       token whose raw logit is already below the k-th value cannot enter
       the top k; only the others are penalised and pushed. The row is in
       cache now, so these reads are cheap. */
    const ms_params *p = R->p;
    int lowering = p->repetition_penalty >= 1.0f && p->frequency_penalty >= 0.0f && p->presence_penalty >= 0.0f;
    ms__topk_compact(t); /* the tightest threshold before the lookups */
    for (i = 0; i < R->n_pending; i++) {
      int32_t tok = R->w->pend[i];
      float l = R->x[tok];
      int hit;
      if (MS__TOUCHED(R->w, tok)) continue; /* a later stage masked it (-inf), or done */
      /* t->n >= k: k values >= thr exist, so l < thr cannot make the cut */
      if (lowering && l < t->thr && t->n >= t->k) continue;
      l = ms__penalise(R, tok, l, &hit);
      *ms__touch(R, tok) = l;
      if (l >= t->thr) ms__topk_push(t, l, tok);
    }
  }
  return t->bad ? MS_ERR_INF_LOGIT : MS_OK;
}

/* Top-k scan over the effective row into t (raw lanes, then touched ids,
   then deferred penalties). Starts from a sampled threshold guess; if
   fewer than k values reach it, scans again from the bottom. */
MS__PRIVATE ms_result ms__scan_row(ms__row *R, ms__topk *t) {
  ms_result rc;
  float guess;
  int32_t k = t->k;
  if (R->lazy) t->k = k + 16; /* room for survivors the penalties push out */
  guess = R->sparse ? -FLT_MAX : ms__guess_threshold(R->x, R->V, t->k);
  t->thr = guess > t->thr ? guess : t->thr;
  rc = ms__scan_row_from(R, t);
  if (rc == MS_OK && R->lazy) {
    /* lazy penalties: penalise the survivors (k + 16 raw values) only.
       Every other token's raw logit is below thr, and penalties only lower
       logits, so if k survivors still reach thr the top k is among them. */
    int32_t i, reach = 0;
    ms__topk_compact(t);
    for (i = 0; i < t->n; i++) {
      int32_t id = t->bi[i];
      if (!MS__TOUCHED(R->w, id)) {
        int hit;
        float l = ms__penalise(R, id, t->bv[i], &hit);
        if (hit) { *ms__touch(R, id) = l; t->bv[i] = l; }
      }
      reach += t->bv[i] >= t->thr;
    }
    t->k = k;
    if (t->n >= t->k + 16 && reach >= k) return MS_OK;
    if (t->n < t->k + 16 && guess == -FLT_MAX) return MS_OK; /* the row holds fewer: all of them are here */
    /* too many survivors fell: exclude every penalised id and scan again */
    R->lazy = 0;
    ms__defer_penalties(R);
    t->n = 0; t->thr = -FLT_MAX;
    return ms__scan_row_from(R, t);
  }
  if (rc != MS_OK || guess == -FLT_MAX) return rc;
  ms__topk_compact(t);
  if (t->n >= t->k) return MS_OK;
  t->n = 0; t->thr = -FLT_MAX; /* the guess was too high: rare */
  return ms__scan_row_from(R, t);
}

/* Max and argmax of the effective row (lowest id among equal maxima). */
MS__PRIVATE ms_result ms__row_max(ms__row *R) {
  ms__topk t;
  ms_result rc;
  ms__ws *w = R->w;
  ms__topk_init(&t, 1, w->xv, w->xi, w->qs, w->qs2, w->cap, 0);
  rc = ms__scan_row(R, &t);
  if (rc != MS_OK) return rc;
  if (ms__topk_finish(&t, w->xv, w->xi, w->ka, w->kb, w->ki) == 0) return MS_ERR_ALL_MASKED;
  R->m = w->xv[0];
  R->argmax = w->xi[0];
  return MS_OK;
}

/* Sum of exp((l - m) * s) over the effective row; per-block sums into
   blocks and weights into out when given (touched ids patched in). */
MS__PRIVATE double ms__row_exp_sum(ms__row *R, float m, float s, float *out, float *blocks) {
  double z = 0.0;
  int32_t i;
  if (!R->sparse) z = R->K->exp_sum(R->x, R->V, R->enable, m, s, out, blocks);
  else {
    if (out) memset(out, 0, (size_t)R->V * 4);
    if (blocks) memset(blocks, 0, ((size_t)R->V / MS__BLOCK + 1) * 4);
  }
  for (i = 0; i < R->n_touched; i++) {
    int32_t id = R->w->touched[i];
    float e = R->K->exp1((R->w->ovr[id] - m) * s);
    if (out) out[id] = e;
    if (blocks) blocks[id / MS__BLOCK] += e;
    z += (double)e;
  }
  return z;
}

/* The positions marked in marks (16-bit halves of bit words, lane i: bit
   i % 16 of half i / 16, as the passes that mark them write them) into
   out, their weights e[id] into vals (room for cap each); returns how
   many, their weight in *sum. */
MS__PRIVATE int32_t ms__marks_expand(const ms__row *R, const uint16_t *marks, const float *e, int32_t *out, float *vals,
                                     int32_t cap, double *sum) {
  return R->K->expand_bits(marks, R->V, R->w->ki, e, out, vals, cap, sum);
}

/* Samples of a row's scaled logits y and weights e as the exp pass takes
   them: one lane in 16 (n of them; 0: none), and one in 16 of those (y1,
   e1: n1, one lane in 256, contiguous for the estimate's first stage). */
typedef struct ms__typ_sample {
  float *y, *e, *y1, *e1;
  int32_t n, n1;
} ms__typ_sample;

/* ms__row_exp_sum writing the weights to out, plus *ysum, the sum of
   e * (l - m) * s over the effective row (typical's centre); with marks,
   the ids whose weight is >= cut (> 0) marked (see ms__marks_expand) and
   a sample into *smp (touched ids, few, are left out of it). */
MS__PRIVATE double ms__row_exp_sum_y(ms__row *R, float m, float s, float *out, double *ysum, float cut, uint16_t *marks,
                                     ms__typ_sample *smp) {
  double z = 0.0;
  int32_t i;
  *ysum = 0.0;
  if (smp) smp->n = smp->n1 = 0;
  if (!R->sparse) {
    z = R->K->exp_sum_y(R->x, R->V, R->enable, m, s, out, ysum, cut, marks, smp ? smp->y : NULL, smp ? smp->e : NULL,
                        smp ? smp->y1 : NULL, smp ? smp->e1 : NULL, smp ? &smp->n : NULL, smp ? &smp->n1 : NULL);
  } else {
    memset(out, 0, (size_t)R->V * 4);
    if (marks) memset(marks, 0, (size_t)((R->V + 31) / 32) * 4);
  }
  for (i = 0; i < R->n_touched; i++) {
    int32_t id = R->w->touched[i];
    float y = (R->w->ovr[id] - m) * s, e = R->K->exp1(y);
    out[id] = e;
    z += (double)e;
    if (e > 0.0f) *ysum += (double)e * (double)y;
    /* the raw lane was disabled (weight 0, no bit) */
    if (marks && e >= cut) marks[id >> 4] = (uint16_t)(marks[id >> 4] | (1u << (id & 15)));
  }
  return z;
}

/* The float just below v (v finite): x > ms__below(v) is x >= v, so the
   kernels' strict count gives the rank's "at least v" count. */
MS__PRIVATE float ms__below(float v) { return nextafterf(v, -INFINITY); }

/* Number of effective logits >= v (v finite). */
MS__PRIVATE int32_t ms__row_count_ge(ms__row *R, float v) {
  int32_t c = 0, i;
  if (!R->sparse) c = R->K->count_gt(R->x, R->V, R->enable, ms__below(v));
  for (i = 0; i < R->n_touched; i++) if (R->w->ovr[R->w->touched[i]] >= v) c++;
  return c;
}

/* Gathers the effective row's finite logits >= cut into ws->ci / ws->cv
   (the raw lanes in one compact pass, then the touched ids); returns how
   many. */
MS__PRIVATE int32_t ms__row_gather_ge(ms__row *R, float cut) {
  ms__ws *w = R->w;
  int32_t c = 0, i;
  if (!R->sparse) c = R->K->compact_ge(R->x, R->V, R->enable, cut, w->ci, w->cv, R->V);
  if (c < 0) c = 0;
  for (i = 0; i < R->n_touched; i++) {
    int32_t id = w->touched[i];
    float v = w->ovr[id];
    if (v >= cut && v != -INFINITY) { w->ci[c] = id; w->cv[c] = v; c++; }
  }
  return c;
}

/* Sum of e * (l - m) * s over the effective row where e >= t > 0 (touched
   ids read their own value). */
MS__PRIVATE double ms__row_wdot(ms__row *R, const float *e, float t, float m, float s) {
  double y = 0.0;
  int32_t i;
  if (!R->sparse) y = R->K->wdot(e, R->x, R->V, R->enable, t, m, s);
  for (i = 0; i < R->n_touched; i++) {
    int32_t id = R->w->touched[i];
    if (e[id] >= t && e[id] > 0.0f) y += (double)e[id] * (double)((R->w->ovr[id] - m) * s);
  }
  return y;
}

/* -- typical on the full row --------------------------------------------------
   Typical's score is |y - yc|, y = (l - m) * s a token's scaled logit and
   yc = E_p[y]; it keeps the lowest scores up to a mass, which is a band of
   weights around ec = exp(yc): radius r keeps ec e^-r <= e <= ec e^r.
   The band is found without sorting the row: the heavy weights (those a
   sample would carry in lumps) and a sample of the rest estimate r; one
   pass over the weights marks the zones between radii [r_lo, r_hi] on
   both sides and sums what lies nearer the centre (the core); the marks
   are expanded into lists, narrowed in cache (8 radii per pass) to a few
   dozen tokens, which are sorted by exact score and walked. A bracket
   that misses is widened; the last resort takes every weight, which is
   always right. The weights, the centre, the heavy weights' marks and
   the sample come from one exp pass (ms__row_exp_sum_y). */
#define MS__TYP_PAD 1e-5f  /* zones are widened by this (relative), far above float error */
#define MS__TYP_HEAVY 16384 /* at most this many heavy weights (e >= z / 16384) */

typedef struct ms__typ_zone {
  float *v; int32_t *id; int32_t n; /* weights and their ids */
  int32_t *id_out;                  /* where narrowing puts the ids (the pass's list stays) */
  double w;                         /* their weight */
} ms__typ_zone;

/* Weight bounds of the radius range [rl, rh] on the light (A) and heavy (B)
   side of the centre; rl this small counts as 0 (the sides then meet at ec
   and must not overlap). */
MS__PRIVATE void ms__typ_bounds(float ec, double rl, double rh, float *alo, float *ahi, float *blo, float *bhi) {
  if (rl < 4.0 * MS__TYP_PAD) { *ahi = ec; *blo = nextafterf(ec, INFINITY); }
  else { *ahi = (float)((double)ec * exp(-rl)) * (1.0f + MS__TYP_PAD); *blo = (float)((double)ec * exp(rl)) * (1.0f - MS__TYP_PAD); }
  if (rh == INFINITY) { *alo = 1.40129846e-45f; *bhi = INFINITY; }
  else { *alo = (float)((double)ec * exp(-rh)) * (1.0f - MS__TYP_PAD); *bhi = (float)((double)ec * exp(rh)) * (1.0f + MS__TYP_PAD); }
}

/* An estimate of [r_lo, r_hi] around the radius where the mass reaches
   target, from the heavy weights (exactly, when one can exist) and a
   sample of the rest (the exp pass's one lane in 256, or strided reads),
   binned by radius (no sort), with a margin of 3 standard errors of the
   sample; then, with the exp pass's sample, narrowed by ms__typ_refine. */
#define MS__TYP_BINS 256

/* The estimate's heavy cut for a row of weight z: a weight whose sampled
   share would be lumpy, z / 16384; in a peaked row that would be
   thousands of tokens, so never below 1/64 of the top weight unless
   z / 2048 is. */
MS__PRIVATE float ms__typ_heavy_cut(double z) {
  double hc = z / 16384.0, hc2 = z / 2048.0 < 1.0 / 64.0 ? z / 2048.0 : 1.0 / 64.0;
  return (float)(hc > hc2 ? hc : hc2);
}

/* Where the estimate's mass cum (within some radius) stands against
   target, with k standard errors: -1 surely below, 1 surely at or
   above, 0 unsure. The sampled mass errs by sqrt(sum over the light
   sample of w^2 (in - f)^2), f = cum / z, in = 1 within the radius: in2
   is that sum of w^2 within, var over all. The heavy cut's grain (2
   hcut) comes off the gap first; squares are compared (no sqrt). */
MS__FORCEINLINE int ms__typ_side(double cum, double in2, double var, double inv_z, double target, float hcut, double k) {
  double f = cum * inv_z, q = k * k * ((1.0 - f) * (1.0 - f) * in2 + f * f * (var - in2));
  double gap = fabs(target - cum) - 2.0 * (double)hcut;
  if (cum < target) return gap > 0.0 && q < gap * gap ? -1 : 0;
  return gap >= 0.0 && q <= gap * gap ? 1 : 0;
}

/* The estimate's second stage: the bracket [r_lo, r_hi] that one lane in
   256 gave (3 standard errors), narrowed with the one-in-16 sample (a
   quarter of the standard error) to 2 of its standard errors. Only the
   samples inside the first bracket are binned (a few %); the mass within
   r_lo is summed in vector. The heavy weights (nh, their keys and
   weights; heavy: their sum) count exactly. Never widens. Measured at
   sigma 1 on V = 128256: zone A of about 1800 tokens instead of 5000. */
#define MS__TYP_BINS2 256
MS__PRIVATE void ms__typ_refine(ms__row *R, const float *key, const float *wt, int32_t nh, double heavy,
                                const ms__typ_sample *smp, double z, double yc, double target, float hcut, double *r_lo,
                                double *r_hi) {
  ms__ws *w = R->w;
  int32_t *ids = w->ti, nwh, nwl, i, b;
  float wlo = (float)*r_lo, whi = (float)*r_hi, ycf = (float)yc;
  double hs[5], ls[5], sc, sc2, var, cum, in2, inv_width, lo = *r_lo, hi = INFINITY, inv_z = 1.0 / z;
  /* float bins, unscaled (the scan scales them): heavy weights, sampled
     weights and their squares */
  float hh[MS__TYP_BINS2], hl[MS__TYP_BINS2], hl2[MS__TYP_BINS2], invf;
  if (!(whi > wlo)) return;
  nwh = R->K->typ_window(key, wt, nh, 0.0f, INFINITY, wlo, whi, hs, ids);
  nwl = R->K->typ_window(smp->y, smp->e, smp->n, ycf, hcut, wlo, whi, ls, ids + nwh);
  if (!(ls[0] > 0.0)) return;
  sc = (z - heavy > 0.0 ? z - heavy : 0.0) / ls[0];
  sc2 = sc * sc;
  var = ls[1] * sc2;
  cum = hs[2] + ls[2] * sc;
  in2 = ls[3] * sc2;
  inv_width = MS__TYP_BINS2 / ((double)whi - (double)wlo);
  invf = (float)inv_width;
  memset(hh, 0, sizeof hh);
  memset(hl, 0, sizeof hl);
  memset(hl2, 0, sizeof hl2);
  /* listed distances are >= wlo, so the bin truncates to >= 0; rounding
     can only push it past the top */
  for (i = 0; i < nwh; i++) {
    float d = key[ids[i]];
    b = (int32_t)(((d < 0.0f ? -d : d) - wlo) * invf);
    hh[b < MS__TYP_BINS2 ? b : MS__TYP_BINS2 - 1] += wt[ids[i]];
  }
  for (; i < nwh + nwl; i++) {
    float x = smp->e[ids[i]], d = smp->y[ids[i]] - ycf;
    b = (int32_t)(((d < 0.0f ? -d : d) - wlo) * invf);
    b = b < MS__TYP_BINS2 ? b : MS__TYP_BINS2 - 1;
    hl[b] += x;
    hl2[b] += x * x;
  }
  /* the same rule as the first stage, from the mass within r_lo */
  for (b = 0; b < MS__TYP_BINS2; b++) {
    double edge = (double)wlo + (b + 1) / inv_width;
    int side;
    cum += (double)hh[b] + (double)hl[b] * sc; in2 += (double)hl2[b] * sc2;
    side = ms__typ_side(cum, in2, var, inv_z, target, hcut, 2.0);
    if (side < 0) lo = edge;
    else if (side > 0) { hi = edge; break; }
  }
  /* a margin for the bins' float edges (1e-4: a 1e-3 one held about 7%
     of the zones) */
  lo *= 1.0 - 1e-4;
  if (lo > *r_lo) *r_lo = lo;
  if (hi != INFINITY && hi * (1.0 + 1e-4) + 1e-6 < *r_hi) *r_hi = hi * (1.0 + 1e-4) + 1e-6;
}

/* smp: the exp pass's sample (NULL or empty: a strided one is read here).
   heavy_marks: the ids with weight >= heavy_cut marked by the exp pass (the cut
   from an estimate of z made before it; see ms__marks_expand), or NULL:
   the heavy weights are gathered here at ms__typ_heavy_cut(z). The
   heavy weights are left in id order in ws->ci (ids) and ws->qs
   (weights): *heavy_n of them, every weight >= *heavy_at (-1: the list
   is not complete). */
MS__PRIVATE void ms__typ_estimate(ms__row *R, const float *e, float m, float s, double z, double yc, double target,
                                  const ms__typ_sample *smp, const uint16_t *heavy_marks, float heavy_cut, double *r_lo,
                                  double *r_hi, int32_t *heavy_n, float *heavy_at) {
  ms__ws *w = R->w;
  const int32_t V = R->V, S = MS__SAMPLE;
  const int plain = R->enable == NULL && R->n_touched == 0 && !R->sparse;
  float hcut = heavy_marks ? heavy_cut : ms__typ_heavy_cut(z);
  float *key = w->cv, *wt = w->qs;
  int32_t nh = 0, n, i, b;
  int complete = 1;
  double heavy = 0.0, light = 0.0, light2 = 0.0, var, in2 = 0.0, scale, scale2, cum, step = (double)V / S, dmax, inv_width;
  const double inv_z = 1.0 / z;
  float lo = 0.0f, hi = 0.0f; /* the keys' range */
  double hist[MS__TYP_BINS], hist2[MS__TYP_BINS];
  if (heavy_marks) {
    nh = ms__marks_expand(R, heavy_marks, e, w->ci, wt, MS__TYP_HEAVY + 64, &heavy);
    if (nh >= MS__TYP_HEAVY + 64) heavy_marks = NULL; /* the z estimate was far too low: gather at the true cut */
  }
  if (!heavy_marks) {
    hcut = ms__typ_heavy_cut(z);
    /* weights are at most 1: above that nothing can be heavy */
    nh = hcut <= 1.0f ? R->K->compact_ge(e, V, NULL, hcut, w->ci, wt, MS__TYP_HEAVY + 64) : 0;
    if (nh < 0) nh = 0, complete = 0; /* cannot happen (the weights sum to z); the sample still bounds r */
    heavy = 0.0;
    for (i = 0; i < nh; i++) heavy += (double)wt[i];
  }
  /* the list is every weight >= hcut unless it filled up */
  *heavy_n = complete ? nh : -1;
  *heavy_at = hcut;
  /* keys: the scaled logit (as the weight was computed from it: no log)
     less the centre, signed: below (A) or above (B) it. The sample's go
     to key[nh..n) first; the heavy ones' to key[0..nh) below, binned as
     they are computed */
  n = nh;
  if (smp && smp->n1 > 0) {
    /* the exp pass's one-in-256 sample, in cache (the one-in-16 refines the
       bracket below): the light ones listed, summed and their range taken
       in vector */
    double ls[5];
    int32_t *lid = w->ti, nl = R->K->typ_window(smp->y1, smp->e1, smp->n1, (float)yc, hcut, 0.0f, INFINITY, ls, lid);
    const float ycf = (float)yc;
    for (i = 0; i < nl; i++) { key[n + i] = smp->y1[lid[i]] - ycf; wt[n + i] = smp->e1[lid[i]]; }
    n += nl;
    light = ls[0]; light2 = ls[1];
    hi = (float)ls[4]; /* (only |key| counts below) */
  } else {
    for (i = 0; i < S; i++) {
      int32_t pos = (int32_t)(i * step);
      float x = e[pos];
      if (x > 0.0f && x < hcut) {
        float d = (float)((double)(((plain ? R->x[pos] : ms__eff(R, pos)) - m) * s) - yc);
        key[n] = d;
        lo = d < lo ? d : lo; hi = d > hi ? d : hi;
        wt[n++] = x;
        light += (double)x;
        light2 += (double)x * (double)x;
      }
    }
  }
  /* the heavy keys lie within [ln(hcut) - yc, -yc] (the top weight, 1,
     has y = 0; the lightest heavy one e >= hcut): that bounds the range
     without a pass over them, which then bins them as it computes them */
  dmax = -(double)lo > (double)hi ? -(double)lo : (double)hi;
  if (nh > 0) {
    double hd = yc - log((double)hcut) > -yc ? yc - log((double)hcut) : -yc;
    hd = hd * 1.0001 + 1e-6;
    if (hd > dmax) dmax = hd;
  }
  inv_width = MS__TYP_BINS / (dmax * 1.0001 + 1e-9);
  memset(hist, 0, sizeof hist);
  memset(hist2, 0, sizeof hist2);
  {
    /* the heavy keys crowd a few bins near the cut: alternate tokens add
       to two histograms (one chain through memory per bin was the loop's
       cost) */
    const float ycf = (float)yc, invf = (float)inv_width, *x = R->x;
    double hist_b[MS__TYP_BINS];
    memset(hist_b, 0, sizeof hist_b);
    for (i = 0; i < nh; i++) {
      float d = ((plain ? x[w->ci[i]] : ms__eff(R, w->ci[i])) - m) * s - ycf;
      key[i] = d;
    }
    for (i = 0; i + 1 < nh; i += 2) {
      int32_t b0 = (int32_t)(fabsf(key[i]) * invf), b1 = (int32_t)(fabsf(key[i + 1]) * invf);
      hist[b0 < MS__TYP_BINS ? b0 : MS__TYP_BINS - 1] += (double)wt[i];
      hist_b[b1 < MS__TYP_BINS ? b1 : MS__TYP_BINS - 1] += (double)wt[i + 1];
    }
    for (; i < nh; i++) {
      b = (int32_t)(fabsf(key[i]) * invf);
      hist[b < MS__TYP_BINS ? b : MS__TYP_BINS - 1] += (double)wt[i];
    }
    for (b = 0; b < MS__TYP_BINS; b++) hist[b] += hist_b[b];
  }
  /* the sampled light weights stand for all of them: z - heavy */
  scale = light > 0.0 ? (z - heavy > 0.0 ? z - heavy : 0.0) / light : 0.0;
  scale2 = scale * scale;
  var = light2 * scale2;
  for (; i < n; i++) {
    double x = (double)wt[i];
    b = (int32_t)(fabs((double)key[i]) * inv_width);
    if (b >= MS__TYP_BINS) b = MS__TYP_BINS - 1;
    hist[b] += x * scale;
    hist2[b] += x * x * scale2;
  }
  /* the heavy weights above the band weigh on the error too, not only
     those near the edge (ms__typ_side). 3 standard errors here: this
     bracket only bounds what the second stage bins; its own 2 (measured
     the cheapest on average: a bracket that misses costs another pass
     over the row, a wider one more gathering and narrowing). Bin b holds
     radii [b, b + 1) * width. */
  *r_lo = 0.0; *r_hi = INFINITY;
  cum = 0.0;
  for (b = 0; b < MS__TYP_BINS; b++) {
    int side;
    cum += hist[b]; in2 += hist2[b];
    side = ms__typ_side(cum, in2, var, inv_z, target, hcut, 3.0);
    if (side < 0) *r_lo = (b + 1) / inv_width;
    else if (side > 0) { *r_hi = (b + 1) / inv_width; break; }
  }
  *r_lo *= 0.999;
  if (*r_hi != INFINITY) *r_hi = *r_hi * 1.001 + 1e-6;
  if (smp && smp->n >= 1024 && *r_hi != INFINITY && light > 0.0)
    ms__typ_refine(R, key, wt, nh, heavy, smp, z, yc, target, hcut, r_lo, r_hi);
}

/* Gathers zone members of [lo, hi] from v[0..n) (ids[] maps v's positions
   to token ids, NULL: positions are ids) into out; returns W(v > hi). */
MS__PRIVATE double ms__typ_gather(ms__row *R, const float *v, const int32_t *ids, int32_t n, float lo, float hi, ms__typ_zone *out) {
  double above = 0.0;
  int32_t c, i, *pos = (int32_t *)R->w->ka;
  out->w = 0.0;
  /* the row's zones are a few % of it: gather with a branch per vector;
     slices of a zone are dense */
  c = R->K->bracket(v, n, lo, hi, 0, ids != NULL, &above, &out->w, ids ? pos : out->id, out->v, n);
  if (c < 0) c = 0; /* cap n: cannot happen */
  if (ids) for (i = 0; i < c; i++) out->id[i] = ids[pos[i]];
  out->n = c;
  return above;
}

/* A bracket the crossing lies beyond: the next range outward, twice as
   wide, up to r_max, then unbounded. */
MS__PRIVATE void ms__typ_widen_out(double *r_lo, double *r_hi, double r_max) {
  double wd = *r_hi - *r_lo;
  *r_lo = *r_hi;
  *r_hi = *r_hi + 2.0 * wd < r_max ? *r_hi + 2.0 * wd : (*r_hi < r_max ? r_max : INFINITY);
}

/* The state of a band search around the centre ec = exp(yc): the mass
   of the inner interval (ahi, blo), the zones [alo, ahi] and [blo, bhi]
   between radii r_lo and r_hi, and at the end the zone tokens sorted by
   exact score in ws->ci / ws->cv (-score), n of them, the first `kept`
   kept (-1: the target lies beyond the zones). */
typedef struct ms__typ_walk {
  double yc, target, inner, r_lo, r_hi;
  float ec, alo, ahi, blo, bhi;
  int32_t n, kept;
} ms__typ_walk;

/* Narrows the zones A (below the centre) and B (above) in cache, 8 radii
   per pass, down to a few dozen tokens; sorts those by exact score and
   walks them from the inner mass with the engine's rule (see
   ms__typical_row). Every inner token must lie nearer than every zone
   token that the walk can stop at, which the callers ensure. */
MS__PRIVATE void ms__typ_resolve(ms__row *R, const float *e, float m, float s, int hf, ms__typ_zone *A, ms__typ_zone *B,
                                 ms__typ_walk *T) {
  ms__ws *w = R->w;
  const ms__kernels *K = R->K;
  double cum;
  int32_t i, n, level;
  for (level = 0; T->r_hi != INFINITY && A->n + B->n > 48 && level < 8; level++) {
    float thA[8], thB[8];
    double aA[8], aB[8], rk[8], nl, nh;
    int32_t k;
    {
      /* evenly spaced radii: their weights are powers of one factor (two
         exps per level, not sixteen; the zones' padding dwarfs the error) */
      double step = (T->r_hi - T->r_lo) / 9.0, f = exp(step), a = (double)T->ec * exp(-T->r_lo), b = (double)T->ec * exp(T->r_lo);
      for (k = 0; k < 8; k++) {
        rk[k] = T->r_lo + step * (double)(k + 1);
        a /= f; b *= f;
        thA[k] = (float)a;
        thB[k] = (float)b;
      }
    }
    K->mass_above8(A->v, A->n, thA, 0, aA);
    K->mass_above8(B->v, B->n, thB, 0, aB);
    /* mass within radius rk: A's weights above thA, B's not above thB */
    for (k = 0; k < 8 && T->inner + aA[k] + (B->w - aB[k]) < T->target; k++) {}
    nl = k == 0 ? T->r_lo : rk[k - 1];
    nh = k == 8 ? T->r_hi : rk[k];
    if (nl == T->r_lo && nh == T->r_hi) break;
    ms__typ_bounds(T->ec, nl, nh, &T->alo, &T->ahi, &T->blo, &T->bhi);
    {
      /* the first level gathers into ws->qs, so the pass's lists stay
         whole for the draw (ms__typ_draw_aid); later ones in place (the
         gather never overtakes) */
      ms__typ_zone A2 = *A, B2 = *B;
      double upA, upB, wB = B->w;
      A2.id = A->id_out; B2.id = B->id_out;
      if (level == 0) { A2.v = w->qs; B2.v = w->qs + A->n; } /* disjoint zones: A->n + B->n <= V */
      upA = ms__typ_gather(R, A->v, A->id, A->n, T->alo, T->ahi, &A2);
      upB = ms__typ_gather(R, B->v, B->id, B->n, T->blo, T->bhi, &B2);
      T->inner += upA + (wB - upB - B2.w);                            /* what moved inside the new zones */
      *A = A2; *B = B2;
    }
    T->r_lo = nl; T->r_hi = nh;
  }
  /* exact scores of the zones, ascending; walk from the inner mass */
  n = 0;
  for (i = 0; i < B->n; i++) { w->ci[n] = B->id[i]; n++; }
  for (i = 0; i < A->n; i++) { w->ci[n] = A->id[i]; n++; }
  for (i = 0; i < n; i++) {
    float y = (ms__eff(R, w->ci[i]) - m) * s;
    w->cv[i] = (float)-fabs((double)y - T->yc);
  }
  ms__sort_desc(w, w->cv, w->ci, n);
  if (!hf) {
    /* equal scores: the likelier (larger y), then the lower id */
    int32_t a = 0;
    while (a < n) {
      int32_t b = a + 1, u, q;
      while (b < n && w->cv[b] == w->cv[a]) b++;
      for (u = a + 1; u < b; u++) {
        int32_t x = w->ci[u];
        float ex = e[x];
        for (q = u - 1; q >= a && (e[w->ci[q]] < ex || (e[w->ci[q]] == ex && w->ci[q] > x)); q--) w->ci[q + 1] = w->ci[q];
        w->ci[q + 1] = x;
      }
      a = b;
    }
  }
  cum = T->inner;
  T->n = n;
  T->kept = -1;
  for (i = 0; i < n; i++) {
    cum += (double)e[w->ci[i]];
    if (hf ? !(cum < T->target) : cum > T->target) {
      T->kept = i + 1;
      if (hf) while (T->kept < n && w->cv[T->kept] == w->cv[i]) T->kept++; /* every score <= the cut's */
      break;
    }
  }
}

/* The kept band of a finished walk in weights: the inner interval plus
   the kept zone weights. */
MS__PRIVATE void ms__typ_band(const ms__ws *w, const float *e, const ms__typ_walk *T, float *lo_w, float *hi_w) {
  int32_t i;
  if (T->ahi == T->ec) { *lo_w = INFINITY; *hi_w = 0.0f; } /* no inner interval */
  else { *lo_w = nextafterf(T->ahi, INFINITY); *hi_w = nextafterf(T->blo, 0.0f); }
  for (i = 0; i < T->kept; i++) {
    float v = e[w->ci[i]];
    if (v < *lo_w) *lo_w = v;
    if (v > *hi_w) *hi_w = v;
  }
}

/* The draw's aid after HF's floor mode (ms__typ_aid): the pass's
   cumulative weight above zone A is in ws->bcum; zone A's list (ids,
   values) and zone B's, then those above it, are left as the pass's
   expansion made them (narrowing gathers elsewhere). HF keeps every tie
   at the cut, so what the walk left out lies outside [lo_w, hi_w]. */
MS__PRIVATE void ms__typ_draw_aid(ms__ws *w, const ms__zone_out *zo, int32_t nb_all, float lo_w, float hi_w) {
  ms__typ_aid *a = &w->aid;
  a->n[0] = zo->na; a->id[0] = zo->ida; a->v[0] = zo->va; a->ge[0] = lo_w;
  a->n[1] = zo->nb; a->id[1] = zo->idb; a->v[1] = zo->vb; a->ge[1] = nextafterf(hi_w, INFINITY);
  a->n[2] = nb_all - zo->nb; a->id[2] = zo->idb + zo->nb; a->v[2] = zo->vb + zo->nb; a->ge[2] = 0.0f;
}

/* How ms__typical_row leaves the row of weights. */
enum {
  MS__TYP_BAND,  /* zero what is dropped, by a pass over the row at the end */
  MS__TYP_ZERO,  /* e is exactly the row's weights at (m, s): the zone pass
                    zeroes what lies beyond its zones at once (a bracket that
                    misses outward rebuilds e), then the zones are decided */
  MS__TYP_FLOOR  /* the kept set is e >= *floor: only what lies above the
                    band (few: the likeliest tokens) and split-off ties are
                    zeroed, nothing below */
};

/* Typical on the full row of weights e (taking part: e > 0; the rest 0),
   z their sum and ysum = sum e * y. p: the mass; hf: HF's rule (the cut is
   the first position whose running mass reaches p, every score <= the
   cut's stays), else llama.cpp's (the shortest prefix whose mass exceeds
   p; equal scores: the likelier, then the lower id first). mode: what
   happens to e (MS__TYP_*). smp, heavy, heavy_cut: what the exp pass
   left for the estimate (see ms__typ_estimate: smp, heavy_marks; NULL:
   it reads its own). aid_ok (or NULL): set when the draw's aid is left
   (HF's floor mode; ms__typ_draw_aid). *kmass: the weight kept; *kcount
   and *kmax (count and largest weight kept) except in MS__TYP_FLOOR,
   whose threshold goes to *floor (NULL in the other modes). */
MS__PRIVATE void ms__typical_row(ms__row *R, float *e, float m, float s, double z, double ysum, float p, int hf,
                                 int mode, const ms__typ_sample *smp, const uint16_t *heavy, float heavy_cut,
                                 int *aid_ok, double *kmass, int32_t *kcount,
                                 float *kmax, float *floor) {
  ms__ws *w = R->w;
  const ms__kernels *K = R->K;
  const int32_t V = R->V;
  double r_max;
  float lo_w, hi_w, bounds[4];
  ms__typ_zone A, B;
  ms__typ_walk T;
  ms__zone_out zo;
  int32_t attempt, i, j, nb_all = 0, heavy_n = -1;
  uint16_t *ma = (uint16_t *)w->kb, *mb = ma + (V + 31) / 32 * 2;
  float heavy_at = INFINITY;
  int ok = 0, zeroed = 0, heavy_b;
  if (aid_ok) *aid_ok = 0;
  memset(&T, 0, sizeof T);
  memset(&zo, 0, sizeof zo);
  T.yc = ysum / z; T.target = (double)p * z; T.r_hi = INFINITY; T.ec = (float)exp(T.yc);
  /* no score exceeds r_max: the top token has y = 0, the lightest
     weight y >= ln(2^-149) */
  r_max = (-T.yc > T.yc + 103.28 ? -T.yc : T.yc + 103.28) * 1.001 + 1e-6;
  if (V > 4 * MS__SAMPLE)
    ms__typ_estimate(R, e, m, s, z, T.yc, T.target, smp, heavy, heavy_cut, &T.r_lo, &T.r_hi, &heavy_n, &heavy_at);
#ifdef MS__TEST_TYP_SKEW
  /* tests only: a bracket off by this factor drives the retries */
  T.r_lo *= MS__TEST_TYP_SKEW; T.r_hi *= MS__TEST_TYP_SKEW;
#endif
  if (T.r_hi > r_max) T.r_hi = r_max;
  /* the pass marks the zones (in ws->kb), expanded into zone A
     (zi, tv) and B (zb, xv); narrowing keeps the values in place and puts
     the ids in ti / xi, so the pass's id lists stay for the end */
  zo.ida = w->zi; zo.va = w->tv; zo.idb = w->zb; zo.vb = w->xv;
  for (attempt = 0; !ok; attempt++) {
    if (attempt >= 3) { T.r_lo = 0.0; T.r_hi = INFINITY; }
    ms__typ_bounds(T.ec, T.r_lo, T.r_hi, &T.alo, &T.ahi, &T.blo, &T.bhi);
    /* one pass: the core (ahi, blo) summed, the zones [alo, ahi] and
       [blo, bhi] gathered (MS__TYP_FLOOR: all of [blo, inf), the few
       above the band included), and with MS__TYP_ZERO everything beyond
       zeroed */
    bounds[0] = T.alo; bounds[1] = T.ahi; bounds[2] = T.blo; bounds[3] = mode == MS__TYP_FLOOR ? INFINITY : T.bhi;
    /* MS__TYP_FLOOR's zone B, [blo, inf), is the likeliest tokens: when
       the estimate's heavy list (ws->ci, ws->qs) holds all of them, it is
       read from there and the pass marks zone A alone. The first attempt
       only: later ones expand their marks into the same place. */
    heavy_b = mode == MS__TYP_FLOOR && attempt == 0 && heavy_n >= 0 && T.blo >= heavy_at;
    K->zones(e, V, bounds, mode == MS__TYP_ZERO, mode == MS__TYP_ZERO, ma, heavy_b ? NULL : mb,
             mode == MS__TYP_FLOOR ? w->bcum : NULL, &zo);
    zeroed = mode == MS__TYP_ZERO;
    zo.na = ms__marks_expand(R, ma, e, zo.ida, zo.va, V, &A.w);
    if (mode != MS__TYP_FLOOR) {
      zo.nb = ms__marks_expand(R, mb, e, zo.idb, zo.vb, V, &B.w);
      nb_all = zo.nb;
      /* the pass summed (and counted) [alo, bhi] whole: the core is that
         less the zones; at bhi = inf without stats it took its floor
         form (ms__zones), all above zone A: less zone B */
      if (zo.core_plus_b) zo.core_mass -= B.w;
      else { zo.core_mass -= A.w + B.w; zo.core_count -= zo.na + zo.nb; }
      if (zo.core_mass < 0.0) zo.core_mass = 0.0;
    } else {
      /* the zone B proper first, what lies above it after, both in id
         order (gathered in vector from the list of [blo, inf): the
         heavy list filtered, or the pass's marks) */
      int32_t n_src = heavy_b ? heavy_n : ms__marks_expand(R, mb, e, w->ci, w->qs, V, &B.w), *pos = (int32_t *)w->ka, nab;
      double above, unused;
      j = K->bracket(w->qs, n_src, T.blo, T.bhi, 0, 1, &above, &B.w, pos, zo.vb, n_src);
      nab = K->bracket(w->qs, n_src, nextafterf(T.bhi, INFINITY), INFINITY, 0, 1, &unused, &unused, pos + j, zo.vb + j, n_src);
      if (j < 0 || nab < 0) j = nab = 0; /* (cap n_src: cannot happen) */
      for (i = 0; i < j + nab; i++) zo.idb[i] = w->ci[pos[i]];
      zo.nb = j;
      nb_all = j + nab;
      /* the pass summed all above zone A (ms__zones): the core is that
         less all of [blo, inf) */
      zo.core_mass -= B.w + above;
      if (zo.core_mass < 0.0) zo.core_mass = 0.0;
    }
    A.v = zo.va; A.id = zo.ida; A.id_out = w->ti; A.n = zo.na;
    B.v = zo.vb; B.id = zo.idb; B.id_out = w->xi; B.n = zo.nb;
    T.inner = zo.core_mass;
    /* a miss: the next bracket is the neighbouring range, twice as wide */
    if (attempt >= 3) {} /* the whole row: always decided below */
    else if (T.inner > T.target && T.r_lo > 0.0) {                         /* the crossing lies nearer */
      double wd = T.r_hi == INFINITY ? T.r_lo : T.r_hi - T.r_lo;
      T.r_hi = T.r_lo; T.r_lo = T.r_lo - 2.0 * wd > 0.0 ? T.r_lo - 2.0 * wd : 0.0;
      continue;
    }
    else if (T.inner + A.w + B.w < T.target && T.r_hi != INFINITY) {
      if (zeroed) { ms__row_exp_sum(R, m, s, e, NULL); zeroed = 0; } /* the weights beyond were zeroed */
      ms__typ_widen_out(&T.r_lo, &T.r_hi, r_max);
      continue;
    }
    ms__typ_resolve(R, e, m, s, hf, &A, &B, &T);
    if (T.kept < 0) {
      if (T.r_hi == INFINITY || attempt >= 3) { T.kept = T.n; ok = 1; } /* never reached: keep all */
      else {
        if (zeroed) { ms__row_exp_sum(R, m, s, e, NULL); zeroed = 0; }
        ms__typ_widen_out(&T.r_lo, &T.r_hi, r_max);
      }
      continue;
    }
    ok = 1;
  }
  ms__typ_band(w, e, &T, &lo_w, &hi_w);
  if (mode == MS__TYP_FLOOR && hf && zo.core_plus_b && aid_ok) { ms__typ_draw_aid(w, &zo, nb_all, lo_w, hi_w); *aid_ok = 1; }
  for (i = T.kept; i < T.n; i++) e[w->ci[i]] = 0.0f; /* ties split off (llama.cpp) or beyond the cut */
  if (mode == MS__TYP_FLOOR) {
    /* kept: the inner mass and the walk's prefix; dropped above the band:
       the pass's B tokens beyond hi_w; dropped below: e < lo_w */
    double km = T.inner;
    for (i = 0; i < T.kept; i++) km += (double)e[w->ci[i]];
    for (i = 0; i < nb_all; i++) if (e[zo.idb[i]] > hi_w) e[zo.idb[i]] = 0.0f;
    *kmass = km; *kcount = 0; *kmax = 0.0f; *floor = lo_w;
    return;
  }
  if (zeroed) {
    /* beyond the pass's zones e is zero already, and its core is kept
       whole: only the zone tokens are left to decide (branch-free: which
       of them stay is as good as random) */
    double km = zo.core_mass;
    int32_t kc = zo.core_count;
    float kx = 0.0f;
    int side;
    for (side = 0; side < 2; side++) {
      const int32_t *ids = side ? zo.idb : zo.ida, nn = side ? zo.nb : zo.na;
      for (i = 0; i < nn; i++) {
        int32_t id = ids[i];
        float v = e[id];
        int keep = v >= lo_w && v <= hi_w; /* lo_w > 0: a zeroed tie stays out */
        float kv = keep ? v : 0.0f;
        e[id] = kv;
        km += (double)kv;
        kc += keep;
        kx = kv > kx ? kv : kx;
      }
    }
    /* zone B lies above the core: the largest kept weight is a kept B
       token's, else the core's (or A's), read off the row, which now
       holds the kept set alone (rare: B keeps one unless it is empty) */
    if (!(kx >= T.blo)) kx = K->floor_max(e, V);
    *kmass = km; *kcount = kc; *kmax = kx;
    return;
  }
  {
    /* the band [lo_w, hi_w] over the whole row (the ties split off are 0 already) */
    float mx;
    K->band_keep(e, V, lo_w, hi_w, kmass, kcount, &mx);
    *kmax = mx;
  }
}

/* Typical on the whole row's weights at (m, s), with nothing cut before
   it (mode MS__TYP_ZERO or MS__TYP_FLOOR, see ms__typical_row); returns
   z, the weight of the whole row (0: nothing has weight). */
MS__PRIVATE double ms__typical_whole(ms__row *R, float m, float s, float p, int hf, int mode, double *kmass,
                                     int32_t *kcount, float *kmax, float *floor, int *aid_ok) {
  ms__ws *w = R->w;
  float *e = w->e, hcut = 0.0f;
  uint16_t *heavy = NULL;
  ms__typ_sample smp, *sp = NULL;
  double ysum = 0.0, z;
  if (R->V > 4 * MS__SAMPLE) {
    /* the estimate's heavy weights are marked by the exp pass, at a cut
       that needs z before that pass sums it: a strided sample of 256
       weights estimates it (a poor estimate only moves the cut) */
    enum { S0 = 256 };
    float *xs = w->sv;
    double step = (double)R->V / S0, zs;
    int32_t i;
    if (!R->enable && !R->sparse && R->n_touched == 0) for (i = 0; i < S0; i++) xs[i] = R->x[(int32_t)(i * step)];
    else for (i = 0; i < S0; i++) xs[i] = ms__eff(R, (int32_t)(i * step));
    zs = R->K->exp_sum(xs, S0, NULL, m, s, NULL, NULL) * step;
    hcut = ms__typ_heavy_cut(zs > 1.0 ? zs : 1.0); /* the top weight is 1 */
    heavy = (uint16_t *)w->kb;
    smp.y = w->qs2; smp.e = smp.y + (R->V + 15) / 16; smp.y1 = smp.e + (R->V + 15) / 16; smp.e1 = smp.y1 + (R->V + 255) / 256;
    smp.n = smp.n1 = 0;
    sp = &smp;
  }
  z = ms__row_exp_sum_y(R, m, s, e, &ysum, hcut, heavy, sp);
  *kmass = 0.0; *kcount = 0; *kmax = 0.0f;
  if (aid_ok) *aid_ok = 0;
  if (floor) *floor = 1.40129846e-45f;
  if (z > 0.0) ms__typical_row(R, e, m, s, z, ysum, p, hf, mode, sp, heavy, hcut, aid_ok, kmass, kcount, kmax, floor);
  return z;
}

/* -- the kept set ------------------------------------------------------------
   A random row ends as one of two shapes: a short list of candidates
   (cv/ci, sorted by descending value, the first n_kept kept; e = weights)
   or the full row of weights ws->e with a threshold t (kept: e >= t). */
typedef struct ms__kept {
  int list;          /* 1: candidate list, 0: full row */
  int id_order;      /* list: in token-id order instead of by value */
  int32_t n;         /* list: kept prefix length */
  int32_t n_cand;    /* list: candidates before the filters (cv/ci, sorted; 0 once a filter moved them) */
  float t;           /* full row: weight threshold */
  double mass;       /* sum of kept weights */
  float m, s;        /* max logit and 1/T: weight = exp((l - m) * s) */
  double z_full;     /* joint profiles: the weight of the whole row (0 = not needed) */
  int materialized;  /* full row: ws->e holds the weights */
  int blocks_ready;  /* full row: ws->blocks holds the kept block sums */
  int typ_aid;       /* full row: ws->bcum and ws->aid locate the draw's block */
  int32_t zero_k;    /* full row: top-k's k when its k-th weight underflowed to 0 and
                        no other filter ran: kept tokens of weight 0 (finite logprobs) */
} ms__kept;

/* Applies the profile's filters to a sorted candidate list with weights
   ce (computed here). Filters keep prefixes of the descending order. */
/* HF min_tokens_to_keep: the prefix a warper may not cut below (the first
   mtk positions; with ties, every value equal to the mtk-th too). */
MS__PRIVATE int32_t ms__keep_prefix(const float *cv, int32_t n, int32_t mtk, int ties) {
  int32_t j;
  if (mtk <= 1) return n > 0 ? 1 : 0;
  if (mtk >= n) return n;
  j = mtk;
  if (ties) while (j < n && cv[j] == cv[mtk - 1]) j++;
  return j;
}

MS__PRIVATE void ms__filter_list(const ms__row *R, ms__kept *k, float *cv, float *ce, int32_t c) {
  const ms_params *p = R->p;
  /* (any min_tokens_to_keep >= V keeps every token: capped at V, as the
     scans' buffers are) */
  int32_t n = c, j, f, mtk = p->min_tokens_to_keep > 1 ? (p->min_tokens_to_keep < R->V ? p->min_tokens_to_keep : R->V) : 1;
  R->K->exp_sum(cv, c, NULL, k->m, k->s, ce, NULL);
  for (f = 0; f < MS__F_COUNT_; f++) {
    int32_t n_in = n;
    switch (R->r->filters[f]) {
      case MS__F_MIN_P:
        /* prob < min_p * max_prob is dropped; the max has weight 1 */
        if (p->min_p > 0.0f) { j = 1; while (j < n && ce[j] >= p->min_p) j++; n = j; }
        break;
      case MS__F_EPSILON:
      case MS__F_ETA:
        /* HF: drop p < cutoff on the current distribution; eta's cutoff is
           min(eta, sqrt(eta) * exp(-entropy)) */
        if ((R->r->filters[f] == MS__F_EPSILON ? p->epsilon_cutoff : p->eta_cutoff) > 0.0f) {
          double z = 0.0, cut;
          for (j = 0; j < n; j++) z += (double)ce[j];
          if (R->r->filters[f] == MS__F_EPSILON) cut = (double)p->epsilon_cutoff;
          else {
            double sy = 0.0, h, eps = (double)p->eta_cutoff;
            for (j = 0; j < n; j++) sy += (double)ce[j] * (double)((cv[j] - k->m) * k->s);
            h = log(z) - sy / z;
            cut = eps < sqrt(eps) * exp(-h) ? eps : sqrt(eps) * exp(-h);
          }
          j = 0;
          while (j < n && (double)ce[j] >= cut * z) j++;
          n = j;
          j = ms__keep_prefix(cv, n_in, mtk, 1);
          if (n < j) n = j;
        }
        break;
      case MS__F_TYPICAL:
        if (p->typical_p < 1.0f && n > 1) {
          /* HF TypicalLogitsWarper on the current distribution: scores
             |-log p - H| ascending, cut where the running mass first
             reaches typical_p, every score <= the cut's stays, and the
             first min_tokens_to_keep by score. The scores fall then rise
             along the value order, so the kept set is a contiguous run of
             the list, built by merging outward from the lowest score. */
          double z = 0.0, h = 0.0, cum = 0.0, lz, cutsc;
          float *sc = R->w->tv;
          int32_t lo = 0, a, b, q, at = -1;
          /* log p_j = (l_j - m) s - ln z, so -log p_j - H = E_p[(l - m) s] - (l_j - m) s:
             no logarithm per token */
          for (j = 0; j < n; j++) { z += (double)ce[j]; h += (double)ce[j] * (double)((cv[j] - k->m) * k->s); }
          lz = h / z; /* the expected scaled logit */
          for (j = 0; j < n; j++) sc[j] = ce[j] > 0.0f ? (float)fabs(lz - (double)((cv[j] - k->m) * k->s)) : INFINITY;
          for (j = 1; j < n; j++) if (sc[j] < sc[lo]) lo = j;
          a = lo; b = lo;
          for (q = 0; q < n; q++) {
            int32_t jj;
            if (q == 0) { jj = lo; b = lo + 1; }
            else if (a > 0 && (b == n || sc[a - 1] <= sc[b])) jj = --a;
            else jj = b++;
            cum += (double)ce[jj] / z;
            if (at < 0 && !(cum < (double)p->typical_p)) at = jj;
            if (at >= 0 && q + 1 >= mtk) break; /* and the first min_tokens_to_keep by score */
          }
          cutsc = at >= 0 ? (double)sc[at] : INFINITY; /* never reached: HF clamps to the last */
          /* every token whose score is <= the cut's: widen [a, b) over ties */
          while (a > 0 && (double)sc[a - 1] <= cutsc) a--;
          while (b < n && (double)sc[b] <= cutsc) b++;
          if (a > 0) {
            memmove(cv, cv + a, (size_t)(b - a) * 4);
            memmove(ce, ce + a, (size_t)(b - a) * 4);
            memmove(R->w->ci, R->w->ci + a, (size_t)(b - a) * 4);
            /* the list no longer starts with the row's largest values:
               raw logprobs must not take their top from it */
            k->n_cand = 0;
          }
          n = b - a;
        }
        break;
      case MS__F_TOP_K:
        if (p->top_k > 0 && (p->top_k > mtk ? p->top_k : mtk) < n) {
          int32_t kk = p->top_k > mtk ? p->top_k : mtk; /* HF: k = max(k, min_tokens_to_keep) */
          j = kk;
          /* vLLM, HF: every token tied with the k-th value stays; SGLang
             keeps exactly k (the list is ordered by value, then id) */
          if (!R->r->topk_exact) while (j < n && cv[j] == cv[kk - 1]) j++;
          n = j;
        }
        break;
      case MS__F_TOP_P:
        if (p->top_p < 1.0f) {
          double z = 0.0, above = 0.0, lim;
          if (R->r->joint) {
            /* SGLang: on the un-renormalised distribution, per position of
               the sorted list, a token stays iff the mass above it <= p */
            lim = (double)p->top_p * k->z_full;
            for (j = 0; j < n && (j == 0 || above <= lim); j++) above += (double)ce[j];
            n = j;
            break;
          }
          for (j = 0; j < n; j++) z += (double)ce[j];
          lim = (double)p->top_p * z;
          j = 0;
          /* a token stays iff the mass strictly above it is < top_p */
          while (j < n && (j == 0 || above < lim)) {
            int32_t g = j;
            while (g < n && cv[g] == cv[j]) { above += (double)ce[g]; g++; }
            j = g;
          }
          n = j;
        }
        break;
      default: break;
    }
    if (mtk > 1 && (R->r->filters[f] == MS__F_TOP_P || R->r->filters[f] == MS__F_MIN_P)) {
      j = ms__keep_prefix(cv, n_in, mtk, 0); /* HF keeps the top mtk positions */
      if (n < j) n = j;
    }
  }
  k->list = 1;
  k->n = n;
  k->mass = 0.0;
  for (j = 0; j < n; j++) k->mass += (double)ce[j];
}

/* SGLang cuts its sorted list by position (ties ordered by id): top-k
   keeps exactly k, top-p keeps a position iff the mass before it is
   <= lim. On the full row the thresholds are weights, so the weights tied
   at t past the last kept position are zeroed here, in the list's order
   (logit descending, then id: equal weights can hide logits an ulp apart,
   which the list orders by logit). k: top-k's k when its threshold is t,
   else -1; top_p: top-p's threshold is t, lim its mass, km = W(>= t).
   Returns whether weights were zeroed. Rare: the cut must fall inside a
   tie. */
MS__PRIVATE int ms__joint_ties(ms__row *R, float t, int32_t k, int top_p, double lim, double km) {
  float *e = R->w->e;
  int32_t V = R->V, keep = INT32_MAX, n_eq = 0, i;
  double w_gt = 0.0, in_tie, c_gt;
  /* top-p: every tie stays while the last one's mass before it fits */
  if (k < 0 && !(km - (double)t > lim)) return 0;
  /* the ties (the bracket [t, t]) and what lies above them: a count for
     top-k, a weight for top-p */
  if (k >= 0) {
    n_eq = R->K->bracket(e, V, t, t, 1, 1, &c_gt, &in_tie, NULL, R->w->cv, V);
    if (k - (int32_t)c_gt < n_eq) keep = k - (int32_t)c_gt;
  }
  if (top_p) n_eq = R->K->bracket(e, V, t, t, 0, 1, &w_gt, &in_tie, NULL, R->w->cv, V);
  if (n_eq <= 1) return 0;
  if (top_p) {
    int32_t q = 0;
    while (q < n_eq && w_gt + (double)q * (double)t <= lim) q++;
    if (q < 1) q = 1; /* the threshold's first position always stays (rounding) */
    if (q < keep) keep = q;
  }
  if (keep >= n_eq) return 0;
  /* the positions past keep in the sorted order: logit descending, then
     id (logits an ulp apart can weigh the same: the heap's list and the
     other profiles order those by logit too) */
  n_eq = R->K->bracket(e, V, t, t, 1, 0, &c_gt, &in_tie, R->w->ci, R->w->cv, V);
  for (i = 0; i < n_eq; i++) { R->w->tv[i] = ms__eff(R, R->w->ci[i]); R->w->ti[i] = R->w->ci[i]; }
  ms__sort_desc(R->w, R->w->tv, R->w->ti, n_eq);
  for (i = keep; i < n_eq; i++) e[R->w->ti[i]] = 0.0f;
  return 1;
}

/* Top-k on the full row selects on weights exp((l - m) * s), and logits an
   ulp apart can round to one weight: a weight tie at the k-th place that
   the logits break. vLLM and HF keep every token whose logit reaches the
   k-th logit, so among the tokens weighing t (their logits sorted) those
   below the (k - above)-th logit are zeroed. Returns whether any were. */
MS__PRIVATE int ms__topk_weight_ties(ms__row *R, float t, int32_t k) {
  ms__ws *w = R->w;
  double c_gt, unused;
  int32_t n_eq, keep, i, zeroed = 0;
  float kth;
  n_eq = R->K->bracket(w->e, R->V, t, t, 1, 0, &c_gt, &unused, w->ci, w->cv, R->V);
  keep = k - (int32_t)c_gt;
  if (n_eq <= keep || keep < 1) return 0;
  for (i = 0; i < n_eq; i++) { w->tv[i] = ms__eff(R, w->ci[i]); w->ti[i] = w->ci[i]; }
  ms__sort_desc(w, w->tv, w->ti, n_eq);
  kth = w->tv[keep - 1];
  for (i = 0; i < n_eq; i++)
    if (ms__eff(R, w->ci[i]) < kth) { w->e[w->ci[i]] = 0.0f; zeroed = 1; }
  return zeroed;
}

/* Builds the kept set of a random row. */
MS__PRIVATE ms_result ms__row_kept(ms__row *R, ms__kept *k, float temperature) {
  const ms_params *p = R->p;
  ms__ws *w = R->w;
  /* min_tokens_to_keep capped at V (HF keeps every token from V on; a
     huge one overflowed the top-k scan's buffer size and hung it) */
  int32_t V = R->V, f, mtk = p->min_tokens_to_keep > 1 ? (p->min_tokens_to_keep < V ? p->min_tokens_to_keep : V) : 1;
  int32_t kk = p->top_k > mtk ? p->top_k : mtk; /* HF: k = max(k, min_tokens_to_keep) */
  ms_result rc;
  int k_on = p->top_k > 0 && kk < V;
  int hf_extra = p->epsilon_cutoff > 0.0f || p->eta_cutoff > 0.0f || mtk > 1;
  int typical = p->typical_p < 1.0f && R->r->has_typical;
  int minp_first = 0;
  float T = temperature;
  if (T < R->r->temp_floor) T = R->r->temp_floor;
  k->s = 1.0f / T;
  k->materialized = 0;
  for (f = 0; f < MS__F_COUNT_; f++) {
    if (R->r->filters[f] == MS__F_MIN_P) { minp_first = (f == 0) || p->top_p >= 1.0f; break; }
  }
  if (k_on && kk <= MS__HEAP_K_MAX) {
    /* heap path: one scan keeps the k best (and ties); all else is on k */
    ms__topk t;
    int32_t c;
    ms__topk_init(&t, kk, w->xv, w->xi, w->qs, w->qs2, w->cap, 1);
    rc = ms__scan_row(R, &t);
    if (rc != MS_OK) return rc;
    c = ms__topk_finish(&t, w->cv, w->ci, w->ka, w->kb, w->ki);
    if (c == 0) return MS_ERR_ALL_MASKED;
    k->m = w->cv[0];
    R->m = k->m; R->argmax = w->ci[0];
    /* joint top-p needs the weight of the whole row: one exp pass */
    if (R->r->joint && p->top_p < 1.0f) k->z_full = ms__row_exp_sum(R, k->m, k->s, NULL, NULL);
    k->n_cand = c;
    ms__filter_list(R, k, w->cv, w->e, c);
    return MS_OK;
  }
  rc = ms__row_max(R);
  if (rc != MS_OK) return rc;
  k->m = R->m;
  if (typical && mtk > 1) {
    /* typical with min_tokens_to_keep (the first positions by score):
       the list of every token with a weight, sorted, through the filters */
    float cut = R->m + (float)(-104.0) * (T > 0.0f ? T : 1.0f); /* exp underflows below this */
    int32_t c = ms__row_gather_ge(R, cut);
    ms__sort_desc(w, w->cv, w->ci, c);
    if (R->r->joint && p->top_p < 1.0f) k->z_full = ms__row_exp_sum(R, k->m, k->s, NULL, NULL);
    k->n_cand = c;
    ms__filter_list(R, k, w->cv, w->e, c);
    return MS_OK;
  }
  if (p->min_p > 0.0f && minp_first && mtk <= 1) { /* min_tokens_to_keep may keep tokens below the cut */
    /* min_p path: only tokens within T*ln(1/min_p) of the max can stay;
       gather them (the cut is loosened a hair, then checked exactly) */
    float cut = R->m + logf(p->min_p) * T;
    int32_t c, i, j;
    cut -= 1e-4f * (fabsf(cut) + 1.0f);
    c = ms__row_gather_ge(R, cut);
    /* exact min_p test on the weights (vectorised exp, then a filter
       that keeps the gathered order) */
    R->K->exp_sum(w->cv, c, NULL, k->m, k->s, w->e, NULL);
    /* the loosened cut lets in a few below min_p: their positions are
       found in vector (a branch per vector that rarely runs) and the
       runs between them moved down (a copy loop over the list cost 3
       cycles a token over sigma 1's ten thousand) */
    {
      double unused;
      int32_t *bad = (int32_t *)w->ka, nbad;
      nbad = R->K->bracket(w->e, c, 0.0f, nextafterf(p->min_p, 0.0f), 0, 0, &unused, &unused, bad, w->tv, c);
      if (nbad < 0) nbad = 0; /* (cap c: cannot happen) */
      for (i = 0, j = nbad > 0 ? bad[0] : c; i < nbad; i++) {
        int32_t from = bad[i] + 1, to = i + 1 < nbad ? bad[i + 1] : c;
        memmove(w->ci + j, w->ci + from, (size_t)(to - from) * 4);
        memmove(w->cv + j, w->cv + from, (size_t)(to - from) * 4);
        memmove(w->e + j, w->e + from, (size_t)(to - from) * 4);
        j += to - from;
      }
      if (nbad > 0) c = j;
    }
    if (!k_on && p->top_p >= 1.0f && !hf_extra) {
      /* min_p alone: the kept set is this list; the draw wants id order,
         which the gather already has unless touched ids were appended */
      k->list = 1; k->id_order = 1; k->n = c;
      if (R->n_touched) ms__sort_by_id3(w, w->ci, w->cv, w->e, c);
      /* in vector (a double add per token is a 4-cycle chain: 17 us
         over sigma 1's ten thousand tokens) */
      k->mass = R->K->block_sums_ge(w->e, c, 0.0f, w->blocks);
      return MS_OK;
    }
    if (c <= 8192) {
      ms__sort_desc(w, w->cv, w->ci, c);
      ms__filter_list(R, k, w->cv, w->e, c);
      return MS_OK;
    }
    /* a huge min_p set with more filters: fall through to the full row */
  }
  {
    /* full-row path: weights of the whole row, thresholds by selection
       (typical first on the whole row computes them itself) */
    int typ_whole = typical && !k_on && p->top_p >= 1.0f && !(p->min_p > 0.0f);
    double z = typ_whole ? 0.0 : ms__row_exp_sum(R, k->m, k->s, w->e, NULL);
    float t = 1.40129846e-45f; /* the smallest subnormal: keep every non-zero weight */
    double kept = z;       /* W(>= t), valid while kept_known */
    int kept_known = 1;
    int typ_blocks = 0;    /* typical on the whole row left the draw its aid at t_typ (ms__typ_aid) */
    float t_typ = 0.0f;
    float tie_k = -1.0f, tie_p = -1.0f; /* joint: top-k / top-p thresholds whose ties are cut by position */
    double tie_lim = 0.0, tie_km = 0.0;
    k->materialized = 1;
    for (f = 0; f < MS__F_COUNT_; f++) {
      switch (R->r->filters[f]) {
        case MS__F_MIN_P:
          if (p->min_p > 0.0f && p->min_p > t) { t = p->min_p; kept_known = 0; }
          break;
        case MS__F_TOP_K:
          if (k_on) {
            double cnt;
            float tk = ms__select(w, R->K, w->e, V, 1, t, (double)kk, 0.0, &cnt);
            if (R->r->topk_exact && cnt > (double)kk) { tie_k = tk; }
            else if (cnt > (double)kk && tk >= t && ms__topk_weight_ties(R, tk, kk)) kept_known = 0;
            if (tk > t) { t = tk; kept_known = 0; }
            /* fewer than k weights above 0 (a low temperature): the k-th
               weight is 0, and the kept tokens past the last weighted one
               weigh 0 but are kept; any other filter drops weight 0
               (top-p, min-p, typical, epsilon and eta cut by probability) */
            if (cnt < (double)kk && p->top_p >= 1.0f && !(p->min_p > 0.0f) && !typical && !hf_extra) k->zero_k = kk;
          }
          break;
        case MS__F_TYPICAL:
          if (typical) {
            /* on the current distribution: the weights below t leave first
               (zeroed), then the band is selected and the rest zeroed */
            double mass = kept_known ? kept : z, kmass;
            int32_t kc;
            float kx;
            if (typ_whole) {
              z = ms__typical_whole(R, k->m, k->s, p->typical_p, 1, MS__TYP_FLOOR, &kmass, &kc, &kx, &t, &typ_blocks);
              kept = kmass; kept_known = 1; t_typ = t;
              break;
            }
            if (t > 1.40129846e-45f) R->K->band_keep(w->e, V, t, INFINITY, &mass, &kc, &kx);
            if (mass > 0.0) {
              ms__typical_row(R, w->e, k->m, k->s, mass, ms__row_wdot(R, w->e, t, k->m, k->s), p->typical_p, 1,
                              MS__TYP_BAND, NULL, NULL, 0.0f, NULL, &kmass, &kc, &kx, NULL);
              kept = kmass; kept_known = 1;
            }
          }
          break;
        case MS__F_TOP_P:
          if (p->top_p < 1.0f) {
            /* joint (SGLang): p of the whole row, whatever was cut before */
            double mass = R->r->joint ? z : kept_known ? kept : R->K->block_sums_ge(w->e, V, t, w->blocks);
            double km, lim = (double)p->top_p * mass;
            /* SGLang keeps a position iff the mass before it is <= p: the
               last value kept is the largest whose W(>= v) exceeds p
               strictly (W(>= v) >= the next double up) */
            float tp = ms__select(w, R->K, w->e, V, 0, t, R->r->joint ? nextafter(lim, INFINITY) : lim, mass, &km);
            if (R->r->joint) { tie_p = tp; tie_lim = lim; tie_km = km; }
            if (tp > t) { t = tp; kept = km; kept_known = 1; }
            else if (R->r->joint) kept_known = 0; /* top-p did not bind: kept is what was there */
            else { kept = mass; kept_known = 1; }
          }
          break;
        default: break;
      }
    }
    if (t > 1.0f) { t = 1.0f; kept_known = 0; } /* the max (weight 1) always stays */
    if (R->r->joint && (tie_k == t || tie_p == t) && ms__joint_ties(R, t, tie_k == t ? kk : -1, tie_p == t, tie_lim, tie_km))
      kept_known = 0;
    if (hf_extra) {
      /* HF: min_tokens_to_keep floors top-p and min-p; then epsilon and eta
         cut the current distribution, floored the same way */
      float v_mtk = 1.0f;
      double mass;
      if (mtk > 1) {
        ms__topk tm;
        int32_t nm;
        typ_blocks = 0; /* the scan's buffers hold typical's lists for the draw */
        ms__topk_init(&tm, mtk, w->xv, w->xi, w->qs, w->qs2, w->cap, 1);
        ms__scan_all(R->K, w->e, V, NULL, &tm);
        nm = ms__topk_finish(&tm, w->tv, w->ti, w->ka, w->kb, w->ki);
        v_mtk = nm >= mtk ? w->tv[mtk - 1] : (nm > 0 ? w->tv[nm - 1] : 1.0f);
        if (t > v_mtk) { t = v_mtk; kept_known = 0; }
      } else if (typical) {
        /* one token stays, the likeliest left: typical may have dropped
           the top weight (1) with what lies above its band (zeroed; what
           lies below the band is lighter than all it kept) */
        v_mtk = R->K->floor_max(w->e, V);
      }
      for (f = 0; f < MS__F_COUNT_; f++) {
        int kind = R->r->filters[f];
        float cutoff = kind == MS__F_EPSILON ? p->epsilon_cutoff : kind == MS__F_ETA ? p->eta_cutoff : 0.0f;
        double cut;
        float tc;
        if (cutoff <= 0.0f) continue;
        mass = kept_known ? kept : R->K->block_sums_ge(w->e, V, t, w->blocks);
        if (kind == MS__F_EPSILON) cut = (double)cutoff;
        else {
          /* entropy of the survivors: ln Z - sum(e ln e) / Z, where ln e is
             the scaled logit (one vector pass, no log per token) */
          double se = ms__row_wdot(R, w->e, t > 1.40129846e-45f ? t : 1.40129846e-45f, k->m, k->s), h;
          h = log(mass) - se / mass;
          cut = (double)cutoff < sqrt((double)cutoff) * exp(-h) ? (double)cutoff : sqrt((double)cutoff) * exp(-h);
        }
        tc = (float)(cut * mass);
        if ((double)tc < cut * mass) tc = nextafterf(tc, INFINITY); /* keep p >= cut exactly */
        if (tc > v_mtk) tc = v_mtk;
        if (tc > t) { t = tc; kept_known = 0; }
      }
    }
    k->list = 0;
    k->t = t;
    /* the draw walks block sums: when the kept weight is summed here,
       those sums come with it; else the draw sums blocks as it walks */
    if (kept_known) { k->mass = kept; k->typ_aid = typ_blocks && t == t_typ; }
    else { k->mass = R->K->block_sums_ge(w->e, V, t, w->blocks); k->blocks_ready = 1; }
  }
  return MS_OK;
}

/* Temperature-only rows skip the filters: one exp pass with block sums. */
MS__PRIVATE int ms__no_filters(const ms_params *p, int32_t V) {
  return !(p->top_k > 0 && p->top_k < V) && p->top_p >= 1.0f && p->min_p <= 0.0f &&
         p->epsilon_cutoff <= 0.0f && p->eta_cutoff <= 0.0f && p->typical_p >= 1.0f;
}

/* The draw: the first kept token in id order whose running weight exceeds
   u * mass. Walks block sums, then one block. */
#define MS__DRAW_GROUP 8   /* blocks summed per call when the sums are not ready */
/* The first of a[0..n) (ascending) >= key: a branch-free bisection. */
MS__PRIVATE int32_t ms__lower_bound(const int32_t *a, int32_t n, int32_t key) {
  const int32_t *base = a;
  if (n <= 0) return 0;
  while (n > 1) {
    int32_t half = n / 2;
    base = base[half - 1] < key ? base + half : base;
    n -= half;
  }
  return (int32_t)(base - a) + (base[0] < key);
}

/* The kept weight before block b by typical's aid (ms__typ_aid): the
   pass's weight above zone A there, plus zone A's kept tokens before
   it, less zone B's and the above ones' dropped; pos[l]: where list l's
   ids reach the block. scratch: room for the per-block sums of a list. */
MS__PRIVATE double ms__typ_before(const ms__row *R, int32_t b, int32_t pos[3], float *scratch) {
  const ms__typ_aid *a = &R->w->aid;
  double c = R->w->bcum[b];
  int l;
  for (l = 0; l < 3; l++) {
    double part;
    pos[l] = ms__lower_bound(a->id[l], a->n[l], b * MS__BLOCK);
    part = pos[l] > 0 ? R->K->block_sums_ge(a->v[l], pos[l], a->ge[l], scratch) : 0.0;
    c += l == 0 ? part : -part;
  }
  return c;
}

/* The kept weight of block b by typical's aid, list positions pos[l]
   at the block's start moved to its end. */
MS__PRIVATE double ms__typ_block(const ms__ws *w, int32_t b, int32_t pos[3]) {
  const ms__typ_aid *a = &w->aid;
  double c = w->bcum[b + 1] - w->bcum[b];
  int32_t end = (b + 1) * MS__BLOCK;
  int l;
  for (l = 0; l < 3; l++) {
    int32_t p = pos[l];
    for (; p < a->n[l] && a->id[l][p] < end; p++)
      if (a->v[l][p] >= a->ge[l]) c += l == 0 ? (double)a->v[l][p] : -(double)a->v[l][p];
    pos[l] = p;
  }
  return c;
}

/* The block holding the draw's target by typical's aid: the one whose
   kept weight runs past target, its start's into *cum; -1: none found
   (rounding at the very end). Tokens of the zone lists spread evenly
   over the row, so the pass's cumulative weight scaled to the kept
   mass points at the block; the kept weight before it is then summed
   exactly and the block stepped from there (rarely more than one). */
MS__PRIVATE int32_t ms__typ_draw_block(const ms__row *R, int32_t nb, double target, double mass, double *cum) {
  const double *bc = R->w->bcum;
  double t = mass > 0.0 ? target * (bc[nb] / mass) : target, c, d;
  int32_t lo = 0, hi = nb, pos[3], step;
  /* the last block whose pass weight before it is <= t */
  while (hi - lo > 1) {
    int32_t mid = lo + (hi - lo) / 2;
    if (bc[mid] <= t) lo = mid; else hi = mid;
  }
  c = ms__typ_before(R, lo, pos, R->w->blocks);
  for (step = 0; c > target && lo > 0 && step < 64; step++) c = ms__typ_before(R, --lo, pos, R->w->blocks);
  if (c > target) return -1;
  for (; lo < nb; lo++) {
    d = ms__typ_block(R->w, lo, pos);
    if (c + d > target) { *cum = c; return lo; }
    c += d;
  }
  return -1;
}

/* v where v >= t, else 0; branch-free (a select compiled to a branch). */
MS__FORCEINLINE float ms__ge_or_0(float v, float t) {
  uint32_t b;
  memcpy(&b, &v, 4);
  b &= 0u - (uint32_t)(v >= t);
  memcpy(&v, &b, 4);
  return v;
}

/* The draw within block b of a full row, cum the kept weight before it:
   the kept token where the running weight passes target, else the
   block's last kept one (-1: none). */
MS__PRIVATE int32_t ms__draw_in_block(ms__row *R, const ms__kept *k, int32_t b, double cum, double target) {
  ms__ws *w = R->w;
  int32_t b0 = b * MS__BLOCK, len = R->V - b0 < MS__BLOCK ? R->V - b0 : MS__BLOCK, i;
  const float *e;
  float t = k->materialized ? k->t : 0.0f;
  int32_t pick = -1;
  if (k->materialized) e = w->e + b0;
  else {
    /* recompute this block's weights with the same kernel */
    float *blk = w->blk;
    if (!R->sparse) R->K->exp_sum(R->x + b0, len, R->enable ? R->enable + b0 / 32 : NULL, k->m, k->s, blk, NULL);
    else memset(blk, 0, (size_t)len * 4);
    for (i = 0; i < R->n_touched; i++) {
      int32_t id = w->touched[i];
      if (id >= b0 && id < b0 + len) blk[id - b0] = R->K->exp1((w->ovr[id] - k->m) * k->s);
    }
    e = blk;
  }
  /* eight weights at a time, summed branch-free (whether a weight is
     kept is a coin toss in a typical band: a test per token
     mispredicted), to the eight that pass target; then token by token */
  if (t < 1.40129846e-45f) t = 1.40129846e-45f; /* kept: > 0 too */
  for (i = 0; i + 8 <= len; i += 8) {
    const float *q = e + i;
    float g = ((ms__ge_or_0(q[0], t) + ms__ge_or_0(q[1], t)) + (ms__ge_or_0(q[2], t) + ms__ge_or_0(q[3], t))) +
              ((ms__ge_or_0(q[4], t) + ms__ge_or_0(q[5], t)) + (ms__ge_or_0(q[6], t) + ms__ge_or_0(q[7], t)));
    if (cum + (double)g > target) break;
    cum += (double)g;
  }
  for (; i < len; i++) {
    if (e[i] >= t) {
      pick = b0 + i;
      cum += (double)e[i];
      if (cum > target) return pick;
    }
  }
  /* rounding: target at the block's very end; its last kept token */
  for (i = len - 1; i >= 0 && pick < 0; i--) if (e[i] >= t) pick = b0 + i;
  return pick;
}

MS__PRIVATE int32_t ms__draw(ms__row *R, const ms__kept *k, double u) {
  ms__ws *w = R->w;
  double target = u * k->mass, cum = 0.0;
  int32_t last = -1;
  if (k->list) {
    int32_t i, n = k->n;
    const int32_t *ids = w->ci;
    const float *e = w->e;
    if (!k->id_order) {
      /* kept prefix (by value): copy and sort by id */
      for (i = 0; i < n; i++) { w->ti[i] = w->ci[i]; w->tv[i] = w->e[i]; }
      ms__sort_by_id_radix(w->ti, w->tv, n, w->xi, w->xv);
      ids = w->ti; e = w->tv;
    }
    /* eight weights at a time to the eight that pass target (a double
       add per token is a 4-cycle chain: long lists, min_p's, spent most
       of their draw on it), then token by token; a token where cum
       passes target has weight (cum moved) */
    for (i = 0; i + 8 <= n; i += 8) {
      const float *q = e + i;
      float g = ((q[0] + q[1]) + (q[2] + q[3])) + ((q[4] + q[5]) + (q[6] + q[7]));
      if (cum + (double)g > target) break;
      cum += (double)g;
    }
    for (; i < n; i++) {
      cum += (double)e[i];
      if (cum > target) return ids[i];
    }
    /* rounding: target at the very end; the last token of weight */
    for (i = n - 1; i >= 0 && last < 0; i--) if (e[i] > 0.0f) last = ids[i];
    return last;
  }
  {
    int32_t nb = (R->V + MS__BLOCK - 1) / MS__BLOCK, b;
    float *blocks = w->blocks;
    if (k->typ_aid) {
      /* the block by bisection; none, or one without a kept token
         (rounding at the very end): the walk below decides */
      b = ms__typ_draw_block(R, nb, target, k->mass, &cum);
      if (b >= 0) {
        int32_t pick = ms__draw_in_block(R, k, b, cum, target);
        if (pick >= 0) return pick;
      }
      cum = 0.0;
    }
    for (b = 0; b < nb; b++) {
      if (!k->blocks_ready && (b & (MS__DRAW_GROUP - 1)) == 0) {
        /* the kept weight of the next blocks on demand (the walk stops
           early), a group per kernel call: one call per block spent
           about as much on the call as on the block */
        int32_t b0 = b * MS__BLOCK, len = MS__DRAW_GROUP * MS__BLOCK;
        R->K->block_sums_ge(w->e + b0, R->V - b0 < len ? R->V - b0 : len, k->t, blocks + b);
      }
      if (blocks[b] > 0.0f) last = b;
      if (cum + (double)blocks[b] > target) break;
      cum += (double)blocks[b];
    }
    if (b == nb) { if (last < 0) return -1; b = last; cum -= (double)blocks[b]; }
    return ms__draw_in_block(R, k, b, cum, target);
  }
}

/* -- logprobs ---------------------------------------------------------------- */
MS__PRIVATE void ms__top_out(ms_output *out, int32_t n_want, const float *lp, const int32_t *ids, int32_t n) {
  int32_t i;
  out->n_top = 0;
  if (!out->top || n_want <= 0) return;
  if (n > n_want) n = n_want;
  if (n > out->top_capacity) n = out->top_capacity;
  for (i = 0; i < n; i++) {
    /* insertion by (logprob desc, id asc): the candidates come ordered by
       weight, and a weight and its logit can disagree by an ulp */
    int32_t j = i;
    while (j > 0 && (out->top[j - 1].logprob < lp[i] || (out->top[j - 1].logprob == lp[i] && out->top[j - 1].token > ids[i]))) {
      out->top[j] = out->top[j - 1];
      j--;
    }
    out->top[j].token = ids[i]; out->top[j].logprob = lp[i];
  }
  out->n_top = n;
}

/* A scored token the final distribution drops: logprob -inf, and every
   token's logprob is >= it (vLLM v1's rank counts the whole vocabulary). */
MS__PRIVATE void ms__logprob_dropped(const ms__row *R, ms_output *out) {
  out->logprob = -INFINITY;
  out->rank = R->V;
}

/* log_softmax of the effective row scaled by s (raw: the caller's row). */
MS__PRIVATE void ms__logprobs_softmax(ms__row *R, int use_raw, float s, int32_t token, ms_output *out) {
  ms__ws *w = R->w;
  ms__row raw = *R;
  ms__row *Q = R;
  int32_t n_top = R->p->logprobs, i, nt, above = 0;
  float m, ltok;
  double z;
  int nonfinite;
  ms__topk t;
  if (use_raw) {
    /* the caller's row as given: no masks, no touched ids, no penalties (a
       lazy or deferred scan must not touch ids into this copy) */
    raw.x = R->raw;   /* (not a hook's copy: raw means before every processor) */
    raw.enable = NULL; raw.sparse = 0; raw.n_touched = 0;
    raw.lazy = 0; raw.defer = 0; raw.n_pending = 0;
    Q = &raw;
  }
  /* max and top-N in one threshold scan */
  if (n_top > R->V) n_top = R->V; /* any N: the scan buffer holds the whole row if it must */
  ms__topk_init(&t, n_top > 0 ? n_top : 1, w->xv, w->xi, w->qs, w->qs2, w->cap, 0);
  /* the scan lists finite values only; a raw row that holds NaN or +Inf
     (where this row masks them, or it would have failed) has them left
     out of its normaliser and rank too: the log-softmax of its finite logits */
  nonfinite = ms__scan_row(Q, &t) != MS_OK && use_raw;
  if (nonfinite) {
    /* the scan's error ended it before ms__scan_row could start again
       from the bottom where its guessed threshold was too high (too few
       values reached it): list the finite logits again from the bottom,
       one by one (a row with a masked NaN or +Inf: rare) */
    ms__topk_init(&t, n_top > 0 ? n_top : 1, w->xv, w->xi, w->qs, w->qs2, w->cap, 0);
    for (i = 0; i < R->V; i++) {
      float v = Q->x[i];
      if (v > -INFINITY && v < INFINITY) ms__topk_push(&t, v, i);
    }
  }
  nt = ms__topk_finish(&t, w->tv, w->ti, w->ka, w->kb, w->ki);
  if (nt == 0) { out->logprob = -INFINITY; out->rank = 1; out->n_top = 0; return; }
  m = w->tv[0];
  ltok = use_raw ? Q->x[token] : ms__eff(R, token);
  if (nonfinite && !(ltok > -INFINITY && ltok < INFINITY)) ltok = -INFINITY;   /* (a forced token's own) */
  if (nonfinite) {
    z = 0.0;
    above = 0;
    for (i = 0; i < R->V; i++) {
      float v = Q->x[i];
      if (!(v > -INFINITY && v < INFINITY)) continue;
      z += (double)R->K->exp1((v - m) * s);
      above += v >= ltok;
    }
  } else z = ms__row_exp_sum(Q, m, s, NULL, NULL);
  {
    double logz = log(z);
    float last = w->tv[nt - 1];
    int32_t c = 0;
    for (i = 0; i < nt; i++) if (w->tv[i] >= ltok) c++;
    out->logprob = (ltok == -INFINITY) ? -INFINITY : (float)((double)((ltok - m) * s) - logz);
    /* rank: the count of logprobs >= the token's, itself and its ties
       included (vLLM v1's (x >= v).sum()); from the list when it holds
       them all (above its last value, whose ties may go on past it) */
    out->rank = nonfinite ? (ltok == -INFINITY ? 1 + above : above)
              : (nt == t.k && ltok > last) || nt < t.k ? c : ms__row_count_ge(Q, ltok);
    if (n_top > 0) {
      for (i = 0; i < nt; i++) w->tv[i] = (float)((double)((w->tv[i] - m) * s) - logz);
      ms__top_out(out, n_top, w->tv, w->ti, nt);
    } else out->n_top = 0;
    /* a token the row masks (scored, or forced): every logprob is >= -inf */
    if (ltok == -INFINITY && !nonfinite) out->rank = R->V;
  }
}

/* Raw logprobs when the effective row is the raw row and the candidate
   list (sorted, n_cand >= N) holds the top values: one exp pass for the
   normaliser; the rank comes from the list when the token is in it. */
MS__PRIVATE void ms__logprobs_from_candidates(ms__row *R, const ms__kept *k, int32_t token, ms_output *out) {
  ms__ws *w = R->w;
  int32_t n_top = R->p->logprobs, i, c = k->n_cand;
  float m = w->cv[0], lt = R->x[token];
  double logz = log(R->K->exp_sum(R->x, R->V, NULL, m, 1.0f, NULL, NULL));
  out->logprob = (float)((double)(lt - m) - logz);
  out->n_top = 0;
  if (n_top > 0 && out->top) {
    int32_t n = n_top < c ? n_top : c;
    if (n > out->top_capacity) n = out->top_capacity;
    for (i = 0; i < n; i++) { out->top[i].token = w->ci[i]; out->top[i].logprob = (float)((double)(w->cv[i] - m) - logz); }
    out->n_top = n;
  }
  if (lt > w->cv[c - 1]) {   /* (ties of the list's last value may go on past it) */
    int32_t r = 0;
    for (i = 0; i < c && w->cv[i] >= lt; i++) r++;
    out->rank = r;
  } else out->rank = R->K->count_gt(R->x, R->V, NULL, ms__below(lt));
}

/* Logprobs of the final distribution of a random row (kept set k); a
   scored token (R->given) may be one it drops. */
MS__PRIVATE void ms__logprobs_processed(ms__row *R, ms__kept *k, int32_t token, ms_output *out) {
  ms__ws *w = R->w;
  int32_t n_top = R->p->logprobs, i;
  double logk = log(k->mass);
  float ltok = ms__eff(R, token);
  if (n_top > R->V) n_top = R->V;
  out->logprob = (float)((double)((ltok - k->m) * k->s) - logk);
  if (k->list && k->id_order) {
    /* sort the (id-ordered) kept list by value for the top-N; its weights
       (ws->e) are not permuted along, which is fine: the draw is done and
       nothing reads them after the logprobs */
    ms__sort_desc(w, w->cv, w->ci, k->n);
    k->id_order = 0;
  }
  if (k->list) {
    /* kept prefix is sorted by descending value */
    int32_t n = k->n < n_top ? k->n : n_top, c = 0;
    for (i = 0; i < n; i++) { w->tv[i] = (float)((double)((w->cv[i] - k->m) * k->s) - logk); w->ti[i] = w->ci[i]; }
    ms__top_out(out, n_top, w->tv, w->ti, n);
    if (R->given >= 0) {
      /* a scored token need not be kept: look for it (its value is the
         list's, which a deferred penalty reached) */
      for (i = 0; i < k->n && w->ci[i] != token; i++) {}
      if (i == k->n) { ms__logprob_dropped(R, out); return; }
      ltok = w->cv[i];
      out->logprob = (float)((double)((ltok - k->m) * k->s) - logk);
    }
    for (i = 0; i < k->n; i++) if (w->cv[i] >= ltok) c++;
    out->rank = c;
    return;
  }
  {
    /* full row of weights: top-N by weight among kept (weights >= t) */
    ms__topk t;
    float etok = w->e[token];
    int32_t nt;
    ms__topk_init(&t, n_top > 0 ? n_top : 1, w->xv, w->xi, w->qs, w->qs2, w->cap, 0);
    t.thr = k->t;
    ms__scan_all(R->K, w->e, R->V, NULL, &t);
    nt = ms__topk_finish(&t, w->tv, w->ti, w->ka, w->kb, w->ki);
    for (i = 0; i < nt; i++) w->tv[i] = (float)((double)((ms__eff(R, w->ti[i]) - k->m) * k->s) - logk);
    if (k->zero_k > 0 && nt < n_top) {
      /* fewer weighted tokens than N, and top-k keeps tokens of weight 0
         (their exp underflowed): vLLM's processed logprobs are the
         log_softmax of the processed logits, finite for them, and they
         are the next largest logits: the list is the top N by logit
         (at most k of them) */
      ms__topk tl;
      ms__topk_init(&tl, n_top < k->zero_k ? n_top : k->zero_k, w->xv, w->xi, w->qs, w->qs2, w->cap, 0);
      if (ms__scan_row(R, &tl) == MS_OK) {
        nt = ms__topk_finish(&tl, w->tv, w->ti, w->ka, w->kb, w->ki);
        for (i = 0; i < nt; i++) w->tv[i] = (float)((double)((w->tv[i] - k->m) * k->s) - logk);
      }
    }
    if (n_top > 0) ms__top_out(out, n_top, w->tv, w->ti, nt); else out->n_top = 0;
    if (R->given >= 0 && !(etok >= k->t && etok > 0.0f)) {
      /* a scored token below the threshold is dropped, but for top-k's
         tokens of weight 0 (zero_k): kept when fewer than k logits are
         larger */
      if (!(k->zero_k > 0 && etok == 0.0f && ltok > -INFINITY &&
            ms__row_count_ge(R, nextafterf(ltok, INFINITY)) < k->zero_k)) { ms__logprob_dropped(R, out); return; }
    }
    out->rank = R->K->count_gt(w->e, R->V, NULL, ms__below(etok));
  }
}

/* -- the custom logits hook ---------------------------------------------------
   Materialises the effective row into ws->hrow, hands it to the caller's
   function, and makes it the row: the overlay is folded in and dropped. */
MS__PRIVATE ms_result ms__row_hook(ms__row *R) {
  ms__ws *w = R->w;
  const ms_params *p = R->p;
  float *h = w->hrow;
  int32_t i, V = R->V;
  ms_result rc;
  if (R->sparse) { for (i = 0; i < V; i++) h[i] = -INFINITY; }
  else if (R->enable) {
    for (i = 0; i < V; i++) h[i] = ((R->enable[i >> 5] >> (i & 31)) & 1u) ? R->x[i] : -INFINITY;
  } else if (h != R->x) memcpy(h, R->x, (size_t)V * 4);
  for (i = 0; i < R->n_touched; i++) h[w->touched[i]] = w->ovr[w->touched[i]];
  for (i = 0; i < R->n_pending; i++) {
    /* deferred penalties are not deferred past a hook */
    int hit;
    int32_t tok = w->pend[i];
    h[tok] = ms__penalise(R, tok, R->x[tok], &hit);
  }
  ms__row_cleanup(R);
  R->x = h; R->enable = NULL; R->sparse = 0; R->defer = 0; R->lazy = 0;
  rc = p->hook(p->hook_user, h, V, R->seq, p);
  return rc;
}

MS__PRIVATE ms_result ms__chain_run(ms__row *R, uint64_t seed, uint64_t pos, ms_output *out, float *probs);

/* -- the row entry points ------------------------------------------------------ */
typedef enum { MS__MODE_SAMPLE, MS__MODE_PROBS } ms__mode;

MS__PRIVATE ms_result ms__row_run(ms__ws *w, const ms__kernels *K, const float *x, int32_t V,
                                  const ms_params *p, const ms_seq *seq, ms_output *out, float *probs, int32_t given) {
  ms__row R;
  ms__kept k;
  ms_result rc;
  int greedy;
  uint64_t seed = seq ? seq->seed : p->seed;
  uint64_t pos = seq ? seq->position : 0;
  memset(&R, 0, sizeof R);
  memset(&k, 0, sizeof k);
  R.x = x; R.raw = x; R.V = V; R.p = p; R.seq = seq; R.r = &ms__profiles[p->profile]; R.K = K; R.w = w;
  R.given = given;
  {
    /* vLLM raises 0 < T < floor to the floor before its greedy test */
    float T = p->temperature;
    if (T > 0.0f && T < R.r->temp_floor) T = R.r->temp_floor;
    greedy = !(T >= R.r->greedy_below);
  }
  if (out) {
    out->seed = seed; out->position = pos; out->greedy = greedy; out->rank = 0; out->n_top = 0; out->logprob = 0.0f;
    out->mirostat_mu = NAN;
  }
  if (p->hook_stage == MS_HOOK_FIRST) {
    memcpy(w->hrow, x, (size_t)V * 4);
    R.x = w->hrow;
    rc = p->hook(p->hook_user, w->hrow, V, seq, p);
    if (rc != MS_OK) goto done;
  }
  if (R.r->chain) {
    /* llama.cpp: a chain over a candidate list (impl_chain.c) */
    const char *o = p->samplers ? p->samplers : "edskypmxt";
    if (out) out->greedy = 0;
    R.overlay = !p->mirostat && (o[0] == 'e' || o[0] == 'd');
    ms__row_build(&R);
    rc = ms__chain_run(&R, seed, pos, out, probs);
    goto done;
  }
  /* rows that only scan (greedy, or top-k within the heap) may defer the
     penalties until the scan has set the k-th value */
  R.defer = (greedy && !(p->logprobs >= 0 && p->logprobs_mode == MS_LOGPROBS_PROCESSED)) ||
            (!greedy && p->top_k > 0 && p->top_k < V && p->top_k <= MS__HEAP_K_MAX);
  {
    /* only when every stage after the penalties just masks (-inf): a
       deferred token touched later is then masked, whatever its penalty */
    int st, after = 0;
    for (st = 0; st < MS__P_COUNT_; st++) {
      int kind = R.r->pointwise[st];
      int masks_only = kind == MS__P_MASK || kind == MS__P_MIN_TOKENS || kind == MS__P_NGRAM || kind == MS__P_BAD_WORDS ||
                       (kind == MS__P_EXP_DECAY && p->exp_decay_start < 0);
      if (after && !masks_only) R.defer = 0;
      if (kind == MS__P_PENALTIES) after = 1;
    }
    R.lazy = R.defer && seq && p->repetition_penalty >= 1.0f && p->frequency_penalty >= 0.0f && p->presence_penalty >= 0.0f;
  }
  if (p->hook_stage != MS_HOOK_OFF) R.defer = R.lazy = 0;
  ms__row_build(&R);
  if (p->hook_stage == MS_HOOK_BEFORE_SAMPLING) {
    rc = ms__row_hook(&R);
    if (rc != MS_OK) goto done;
  }
  if (greedy) {
    rc = ms__row_max(&R);
    if (rc != MS_OK) goto done;
    if (probs) { memset(probs, 0, (size_t)V * 4); probs[R.argmax] = 1.0f; }
    if (out) {
      out->token = given >= 0 ? given : R.argmax;
      if (p->logprobs >= 0)
        ms__logprobs_softmax(&R, p->logprobs_mode == MS_LOGPROBS_RAW, 1.0f, out->token, out);
    }
    goto done;
  }
  if (ms__no_filters(p, V)) {
    float T = p->temperature < R.r->temp_floor ? R.r->temp_floor : p->temperature;
    rc = ms__row_max(&R);
    if (rc != MS_OK) goto done;
    k.list = 0; k.m = R.m; k.s = 1.0f / T; k.t = 0.0f;
    k.mass = ms__row_exp_sum(&R, k.m, k.s, probs ? w->e : NULL, w->blocks);
    k.blocks_ready = 1;
    if (probs) k.materialized = 1;
  } else {
    rc = ms__row_kept(&R, &k, p->temperature);
    if (rc != MS_OK) goto done;
  }
  if (!(k.mass > 0.0)) { rc = MS_ERR_ALL_MASKED; goto done; }
  if (probs) {
    int32_t i;
    double inv = 1.0 / k.mass;
    memset(probs, 0, (size_t)V * 4);
    if (k.list) { for (i = 0; i < k.n; i++) probs[w->ci[i]] = (float)((double)w->e[i] * inv); }
    else { for (i = 0; i < V; i++) if (w->e[i] >= k.t && w->e[i] > 0.0f) probs[i] = (float)((double)w->e[i] * inv); }
  }
  if (out) {
    int32_t tok = given >= 0 ? given : ms__draw(&R, &k, ms_uniform(seed, pos, MS_PURPOSE_DRAW));
    if (tok < 0) { rc = MS_ERR_ALL_MASKED; goto done; }
    out->token = tok;
    if (p->logprobs >= 0) {
      if (p->logprobs_mode == MS_LOGPROBS_RAW && k.list && !k.id_order && !R.enable && !R.sparse &&
          R.n_touched == 0 && R.x == R.raw && k.n_cand >= (p->logprobs > 0 ? p->logprobs : 1)) {
        /* nothing changed the logits: the top-k candidates are the raw top
           values, so only the normaliser needs a pass over the row */
        ms__logprobs_from_candidates(&R, &k, tok, out);
      } else if (p->logprobs_mode == MS_LOGPROBS_RAW) ms__logprobs_softmax(&R, 1, 1.0f, tok, out);
      else if (k.list || k.materialized) ms__logprobs_processed(&R, &k, tok, out);
      else ms__logprobs_softmax(&R, 0, k.s, tok, out);
    }
  }
  rc = MS_OK;
done:
  ms__row_cleanup(&R);
  return rc;
}
