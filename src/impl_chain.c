/* ---- implementation: the llama.cpp sampler chain -------------------------- */

/* llama.cpp's samplers work on an array of (id, logit) entries: filters
   either drop entries or set them to -inf and keep them (they still count
   in the array's size, which dynamic temperature and XTC read), and each
   probability filter takes the softmax of what is left. Here the finite
   entries live in ws->cv/ci sorted by descending logit (ties: lower id
   first) and `size` counts the -inf entries too. The row is only scanned
   once (max, top-k or a gather); every stage after that runs on the list.
   docs/ENGINES.md section 1 has the rules and their sources. */

#define MS__CHAIN_DEFAULT "edskypmxt"

typedef struct ms__chain {
  ms__row *R;
  const char *order;   /* the stages, llama.cpp --samplers letters */
  int32_t n;           /* finite candidates in cv/ci */
  int32_t size;        /* llama.cpp's array size (n plus -inf entries) */
  int32_t min_keep;
  double z_extra;      /* weight (relative to the list's max) of entries a prefilter left out */
  uint64_t seed, pos;
} ms__chain;

/* Equal values in id order (the sorts are stable, but touched ids are
   appended out of order). */
MS__PRIVATE void ms__ties_by_id(float *v, int32_t *id, int32_t n) {
  int32_t i = 0;
  while (i < n) {
    int32_t j = i + 1, a, b;
    while (j < n && v[j] == v[i]) j++;
    for (a = i + 1; a < j; a++) {
      int32_t x = id[a];
      for (b = a - 1; b >= i && id[b] > x; b--) id[b + 1] = id[b];
      id[b + 1] = x;
    }
    i = j;
  }
}

MS__PRIVATE void ms__chain_sort(ms__chain *C) {
  ms__ws *w = C->R->w;
  ms__sort_desc(w, w->cv, w->ci, C->n);
  ms__ties_by_id(w->cv, w->ci, C->n);
}

/* p[i] = softmax of the list (float, as llama_sampler_softmax_impl). */
MS__PRIVATE float ms__chain_softmax(ms__chain *C, float *p) {
  ms__ws *w = C->R->w;
  int32_t i;
  float z;
  if (C->n == 0) return 0.0f;
  z = (float)(C->R->K->exp_sum(w->cv, C->n, NULL, w->cv[0], 1.0f, p, NULL) + C->z_extra);
  for (i = 0; i < C->n; i++) p[i] /= z;
  return z;
}

/* -- penalties over a window (llama_sampler_penalties) ------------------------
   Distinct tokens of the last N history tokens with their counts. The whole
   history reads the sequence's dense counters; a shorter window counts into
   a sparse set (ws->ka maps token -> slot; a slot is valid when it points
   back at the token, so nothing needs clearing). */
MS__PRIVATE int ms__chain_pen_on(const ms__row *R) {
  const ms_params *p = R->p;
  return R->seq && p->penalty_last_n != 0 &&
         (p->repetition_penalty != 1.0f || p->frequency_penalty != 0.0f || p->presence_penalty != 0.0f) &&
         R->seq->n_prompt + R->seq->n_output > 0;
}

MS__PRIVATE int32_t ms__chain_window(const ms__row *R, int32_t last_n, int32_t *toks, int32_t *cnt) {
  const ms_seq *seq = R->seq;
  uint32_t *map = R->w->ka;
  int32_t hist = seq->n_prompt + seq->n_output, n = 0, i;
  /* (a token of a larger vocabulary than this row's, which ms_seq_reset
     and ms_seq_accept took against theirs, is left out: as the core
     pipeline does; map has a slot per id of the row only) */
  if (last_n < 0 || last_n >= hist) {
    for (i = 0; i < seq->n_distinct; i++) {
      if (seq->d_token[i] >= R->V) continue;
      toks[n] = seq->d_token[i];
      cnt[n] = seq->d_count[i] + seq->d_pcount[i];
      map[toks[n]] = (uint32_t)n;
      n++;
    }
    return n;
  }
  for (i = hist - last_n; i < hist; i++) {
    int32_t t = seq->tokens[i];
    uint32_t s;
    if (t >= R->V) continue;
    s = map[t];
    if (s < (uint32_t)n && toks[s] == t) cnt[s]++;
    else { map[t] = (uint32_t)n; toks[n] = t; cnt[n] = 1; n++; }
  }
  return n;
}

MS__FORCEINLINE float ms__chain_pen(const ms_params *p, float l, int32_t c) {
  /* l <= 0 ? l * r : l / r, then l -= c * freq + (c > 0) * present; -inf
     (a masked id, or the model's) stays -inf: llama.cpp's arithmetic would
     make it +inf for r < 0 and NaN for r = 0 (its samplers accept any r),
     reviving a token a mask removed */
  if (l == -INFINITY) return l;
  l = l <= 0.0f ? l * p->repetition_penalty : l / p->repetition_penalty;
  return l - ((float)c * p->frequency_penalty + (float)(c > 0) * p->presence_penalty);
}

/* -- DRY (llama_sampler_dry_apply) -------------------------------------------
   Writes the tokens that would extend a repeat and the repeat's length
   (ws->ti / ws->xi, map in ws->ka); *np = 0 when DRY does nothing. */
MS__PRIVATE int ms__chain_dry_on(const ms__row *R) {
  const ms_params *p = R->p;
  return R->seq && p->dry_multiplier != 0.0f && p->dry_base >= 1.0f && p->dry_last_n != 0;
}

MS__PRIVATE ms_result ms__chain_dry_pairs(const ms__row *R, int32_t *np) {
  const ms_params *p = R->p;
  const ms_seq *seq = R->seq;
  ms__ws *w = R->w;
  const int32_t *tk = seq->tokens;
  int32_t hist = seq->n_prompt + seq->n_output, N, i, rep_limit, allowed = p->dry_allowed_length;
  int32_t *z = w->hz, *toks = w->ti, *lens = w->xi, n = 0;
  uint32_t *map = w->ka;
  *np = 0;
  N = p->dry_last_n < 0 || p->dry_last_n > hist ? hist : p->dry_last_n;
  if (N <= allowed) return MS_OK;
  if (N > w->hist_cap) return MS_ERR_CAPACITY;
#define MS__RAT(i) tk[hist - 1 - (i)]
  /* 1. the newest breaker (head plus tail in time order) limits the
        length a repeat may have */
  rep_limit = N;
  for (i = 0; i < N; i++) {
    int32_t tok = MS__RAT(i), longest = -1, b, at = 0;
    for (b = 0; b < p->n_dry_breakers; b++) {
      int32_t len = p->dry_breakers_lens[b], L = len - 1, o;
      const int32_t *br = p->dry_breakers + at;
      at += len;
      if (br[0] != tok || L <= longest || L > i) continue;
      for (o = 0; o < L && br[1 + o] == MS__RAT(i - o - 1); o++) {}
      if (o == L) longest = L;
    }
    if (longest >= 0) { rep_limit = i - longest; break; }
  }
  if (rep_limit < allowed) return MS_OK;
  /* 2. reverse Z-algorithm: z[N-1-k] = length of the longest suffix of the
        window that also ends k tokens earlier, capped at rep_limit */
  {
    int32_t last = N - 1, lt = 0, rt = 0, k;
    z[last] = 0;
    for (k = 1; k < N; k++) {
      if (k > rt) {
        int32_t m = 0;
        while (m + k < N && MS__RAT(m) == MS__RAT(m + k)) m++;
        z[last - k] = m < rep_limit ? m : rep_limit;
        if (m > 0) { lt = k; rt = k + m - 1; }
      } else {
        int32_t q = k - lt, right = rt - k + 1;
        if (z[last - q] < right) z[last - k] = z[last - q] < rep_limit ? z[last - q] : rep_limit;
        else {
          int32_t j = rt + 1;
          while (j < N && MS__RAT(j) == MS__RAT(j - k)) j++;
          z[last - k] = j - k < rep_limit ? j - k : rep_limit;
          lt = k; rt = j - 1;
        }
      }
    }
  }
  /* 3. the token after each repeat would extend it: keep the longest */
  for (i = 0; i < N - 1; i++) {
    int32_t len = z[i];
    if (len >= allowed && MS__RAT(N - 2 - i) < R->V) {   /* (another vocabulary's id: as above) */
      int32_t tok = MS__RAT(N - 2 - i);
      uint32_t s = map[tok];
      if (s < (uint32_t)n && toks[s] == tok) { if (lens[s] < len) lens[s] = len; }
      else { map[tok] = (uint32_t)n; toks[n] = tok; lens[n] = len; n++; }
    }
  }
#undef MS__RAT
  *np = n;
  return MS_OK;
}

/* DRY's penalty for a repeat of `len`; 0 for single-token breakers. */
MS__PRIVATE float ms__chain_dry_penalty(const ms_params *p, int32_t tok, int32_t len) {
  int32_t b, at = 0, e = len - p->dry_allowed_length, max_e = 0;
  for (b = 0; b < p->n_dry_breakers; b++) {
    if (p->dry_breakers_lens[b] == 1 && p->dry_breakers[at] == tok) return 0.0f;
    at += p->dry_breakers_lens[b];
  }
  /* pow(base, e) overflows float past ln(FLT_MAX) / ln(base) */
  if (p->dry_base > 1.000001f) max_e = (int32_t)(88.7228391f / logf(p->dry_base));
  if (max_e > 0 && e > max_e) e = max_e;
  return (float)((double)p->dry_multiplier * pow((double)p->dry_base, (double)e));
}

/* Penalties or DRY on the overlay (stages before any truncation). */
MS__PRIVATE ms_result ms__chain_pointwise(ms__row *R, char stage) {
  ms__ws *w = R->w;
  int32_t n, i;
  if (stage == 'e') {
    if (!ms__chain_pen_on(R)) return MS_OK;
    n = ms__chain_window(R, R->p->penalty_last_n, w->ti, w->xi);
    for (i = 0; i < n; i++) {
      float *l;
      if (w->ti[i] >= R->V) continue;
      l = ms__touch(R, w->ti[i]);
      *l = ms__chain_pen(R->p, *l, w->xi[i]);
    }
    return MS_OK;
  }
  if (!ms__chain_dry_on(R)) return MS_OK;
  {
    ms_result rc = ms__chain_dry_pairs(R, &n);
    if (rc != MS_OK) return rc;
    for (i = 0; i < n; i++) {
      float pen;
      if (w->ti[i] >= R->V) continue;
      pen = ms__chain_dry_penalty(R->p, w->ti[i], w->xi[i]);
      if (pen != 0.0f) *ms__touch(R, w->ti[i]) -= pen;
    }
  }
  return MS_OK;
}

/* The same on the candidate list (a custom order put them after a filter). */
MS__PRIVATE ms_result ms__chain_list_pointwise(ms__chain *C, char stage) {
  ms__row *R = C->R;
  ms__ws *w = R->w;
  int32_t n, i;
  if (stage == 'e') {
    if (!ms__chain_pen_on(R)) return MS_OK;
    n = ms__chain_window(R, R->p->penalty_last_n, w->ti, w->xi);
    for (i = 0; i < C->n; i++) {
      int32_t t = w->ci[i];
      uint32_t s = w->ka[t];
      if (s < (uint32_t)n && w->ti[s] == t) w->cv[i] = ms__chain_pen(R->p, w->cv[i], w->xi[s]);
    }
  } else {
    ms_result rc;
    if (!ms__chain_dry_on(R)) return MS_OK;
    rc = ms__chain_dry_pairs(R, &n);
    if (rc != MS_OK) return rc;
    for (i = 0; i < C->n; i++) {
      int32_t t = w->ci[i];
      uint32_t s = w->ka[t];
      if (s < (uint32_t)n && w->ti[s] == t) w->cv[i] -= ms__chain_dry_penalty(R->p, t, w->xi[s]);
    }
  }
  /* a penalty may reach -inf (r * -large): such entries stay in size */
  {
    int32_t j = 0;
    for (i = 0; i < C->n; i++)
      if (w->cv[i] != -INFINITY) { w->cv[j] = w->cv[i]; w->ci[j] = w->ci[i]; j++; }
    C->n = j;
  }
  ms__chain_sort(C);
  return MS_OK;
}

/* -- top-n-sigma: the cut max - n * stddev over the finite logits ------------ */
MS__PRIVATE float ms__sigma_cut(float n_sigma, const float *v, int32_t cnt, float mx) {
  float sum = 0.0f, mean, acc = 0.0f, sd;
  int32_t i;
  /* llama.cpp: float sums, the square through double pow */
  for (i = 0; i < cnt; i++) sum += v[i];
  mean = cnt > 0 ? sum / (float)cnt : 0.0f;
  for (i = 0; i < cnt; i++) acc += (float)pow((double)(v[i] - mean), 2.0);
  sd = cnt > 0 ? (float)sqrt((double)(acc / (float)cnt)) : 0.0f;
  return mx - n_sigma * sd;
}

/* The same over the effective row (top-n-sigma before any truncation):
   one vectorised moments pass (double sums of values shifted by the max,
   where llama.cpp sums floats in order: the cut agrees to float rounding),
   then the touched ids. */
MS__PRIVATE float ms__sigma_cut_row(ms__row *R) {
  ms__ws *w = R->w;
  double mo[3] = { 0.0, 0.0, 0.0 }, mean, var;
  int32_t i;
  float c = R->m;
  if (!R->sparse) R->K->moments(R->x, R->V, R->enable, c, mo);
  for (i = 0; i < R->n_touched; i++) {
    float v = w->ovr[w->touched[i]];
    if (v != -INFINITY) { double d = (double)v - (double)c; mo[0] += 1.0; mo[1] += d; mo[2] += d * d; }
  }
  if (mo[0] <= 0.0) return -FLT_MAX;
  mean = mo[1] / mo[0];
  var = mo[2] / mo[0] - mean * mean;
  /* llama.cpp sums the logits and the squared deviations in float: past
     FLT_MAX its standard deviation is inf and nothing is cut (the float
     lanes here overflowed into inf - inf, a NaN cut that kept nothing) */
  if (!(var * mo[0] <= (double)FLT_MAX) || !(fabs((double)c + mean) * mo[0] <= (double)FLT_MAX)) return -FLT_MAX;
  if (var < 0.0) var = 0.0;
  return R->m - R->p->top_n_sigma * (float)sqrt(var);
}

/* -- the list stages ----------------------------------------------------------- */
MS__PRIVATE void ms__chain_top_k(ms__chain *C, int32_t k) {
  if (k <= 0) return;
  if (k > C->size) k = C->size;
  if (C->n > k) C->n = k;
  C->size = k;
}

/* llama_sampler_typical_apply: tokens in ascending |-ln p - H| until the
   mass exceeds p (strict), at least min_keep. The scores fall then rise
   along the value order, so the order is a merge outward from the
   minimum, and the kept tokens are a contiguous run of the list. */
MS__PRIVATE void ms__chain_typical(ms__chain *C, float mass) {
  ms__ws *w = C->R->w;
  float *p = w->e, *sc = w->tv, h = 0.0f, cum = 0.0f;
  int32_t n = C->n, i, lo, hi, a, b, kept;
  (void)hi;
  if (mass >= 1.0f || n == 0) return;
  ms__chain_softmax(C, p);
  {
    /* -ln p_i - H = E_p[l] - l_i: the scores need no log per token */
    double el = 0.0, pz = 0.0;
    for (i = 0; i < n; i++) { el += (double)p[i] * (double)w->cv[i]; pz += (double)p[i]; }
    el /= pz;
    for (i = 0; i < n; i++) sc[i] = p[i] > 0.0f ? (float)fabs(el - (double)w->cv[i]) : INFINITY;
    (void)h;
  }
  lo = 0;
  for (i = 1; i < n; i++) if (sc[i] < sc[lo]) lo = i;
  a = lo; b = lo; /* taken so far: [a, b) */
  kept = -1;
  for (i = 0; i < n; i++) {
    int32_t j;
    if (i == 0) { j = lo; b = lo + 1; }
    else if (a > 0 && (b == n || sc[a - 1] <= sc[b])) j = --a; /* equal scores: the likelier first */
    else j = b++;
    cum += p[j];
    if (cum > mass && (C->min_keep == 0 || i >= C->min_keep - 1)) { kept = i + 1; break; }
  }
  if (kept < 0) return; /* the sum never passed p: llama.cpp keeps everything */
  lo = a; hi = b;
  if (lo > 0 && w->cv[lo - 1] == w->cv[lo]) {
    /* the cut split a run of equal logits reached from below, whose ids
       were taken from the highest; equal scores go lower id first, so the
       kept part of the run takes the run's lowest ids (rotated in place) */
    int32_t r0 = lo, r1 = lo, shift, j;
    while (r0 > 0 && w->cv[r0 - 1] == w->cv[lo]) r0--;
    while (r1 + 1 < hi && w->cv[r1 + 1] == w->cv[lo]) r1++;
    shift = r1 - lo + 1; /* kept members of the run */
    for (j = r0; j <= r1; j++) w->ti[j - r0] = w->ci[j];
    for (j = 0; j <= r1 - r0; j++) w->ci[j < shift ? lo + j : r0 + j - shift] = w->ti[j];
  }
  if (lo > 0) {
    memmove(w->cv, w->cv + lo, (size_t)(hi - lo) * 4);
    memmove(w->ci, w->ci + lo, (size_t)(hi - lo) * 4);
  }
  C->n = hi - lo;
  C->size = kept;
}

/* llama_sampler_top_p_apply: the first prefix whose float running sum
   reaches p, at least min_keep. */
MS__PRIVATE void ms__chain_top_p(ms__chain *C, float top_p) {
  float *p = C->R->w->e, cum = 0.0f;
  int32_t i;
  if (top_p >= 1.0f || C->n == 0) return;
  ms__chain_softmax(C, p);
  C->z_extra = 0.0; /* a prefilter only ever leaves out what top-p drops */
  for (i = 0; i < C->n; i++) {
    cum += p[i];
    if (cum >= top_p && i + 1 >= C->min_keep) { C->n = i + 1; C->size = i + 1; return; }
  }
  /* the walk ended among the -inf entries (min_keep) or never reached p:
     the finite list stays whole */
  if (cum >= top_p && C->min_keep > C->n && C->min_keep < C->size) C->size = C->min_keep;
}

/* llama_sampler_min_p_apply: logits >= max + ln(p), at least min_keep. */
MS__PRIVATE void ms__chain_min_p(ms__chain *C, float min_p) {
  ms__ws *w = C->R->w;
  float cut;
  int32_t c = 0, kept, mk;
  if (min_p <= 0.0f || C->n == 0) return;
  cut = w->cv[0] + logf(min_p);
  while (c < C->n && w->cv[c] >= cut) c++;
  mk = C->min_keep < C->size ? C->min_keep : C->size;
  kept = c > mk ? c : mk;
  if (kept < 1) kept = 1;
  if (C->n > kept) C->n = kept;
  C->size = kept;
}

/* llama_sample_xtc_apply: with probability `probability`, every token with
   p >= threshold except the least likely of them is removed. */
MS__PRIVATE void ms__chain_xtc(ms__chain *C) {
  const ms_params *pr = C->R->p;
  ms__ws *w = C->R->w;
  float *p = w->e, coin;
  int32_t last = 0, i;
  if (pr->xtc_probability <= 0.0f || pr->xtc_threshold > 0.5f || C->size < 2) return;
  coin = (float)ms_uniform(C->seed, C->pos, MS_PURPOSE_XTC);
  if (coin > pr->xtc_probability || C->n == 0) return;
  ms__chain_softmax(C, p);
  for (i = 0; i < C->n && p[i] >= pr->xtc_threshold; i++) last = i;
  if (last > 0 && C->size - last >= C->min_keep) {
    memmove(w->cv, w->cv + last, (size_t)(C->n - last) * 4);
    memmove(w->ci, w->ci + last, (size_t)(C->n - last) * 4);
    C->n -= last;
    C->size -= last;
  }
}

/* Temperature, llama_sampler_temp_impl: T <= 0 keeps the first maximum
   (the others stay as -inf entries). */
MS__PRIVATE void ms__chain_temp(ms__chain *C, float T) {
  ms__ws *w = C->R->w;
  int32_t i;
  if (T <= 0.0f) { if (C->n > 1) C->n = 1; return; }
  for (i = 0; i < C->n; i++) w->cv[i] /= T;
}

/* llama_sampler_temp_ext_apply: T scaled by the entropy of the list
   relative to the uniform over `size` entries. */
MS__PRIVATE void ms__chain_dynatemp(ms__chain *C) {
  const ms_params *pr = C->R->p;
  float *p = C->R->w->e, T = pr->temperature, d = pr->dynatemp_range, lo, hi, hmax, h = 0.0f, t_dyn;
  if (d <= 0.0f) { ms__chain_temp(C, T); return; }
  if (C->size <= 1) return;
  lo = T - d > 0.0f ? T - d : 0.0f;
  hi = T + d;
  hmax = -logf(1.0f / (float)C->size);
  {
    /* -sum p ln p with ln p = (l - l_max) - ln z (the list is sorted:
       l_max first): the mass and a weighted sum in vector, no log per
       token (a logf per token was the stage's whole cost, about 1x
       floor_softmax on llama.cpp's full-row chain) */
    const float tiny = 1.40129846e-45f;
    ms__ws *w = C->R->w;
    double z = (double)ms__chain_softmax(C, p), mass;
    if (C->n > 0 && z > 0.0) {
      mass = C->R->K->block_sums_ge(p, C->n, tiny, w->blocks);
      h = (float)(log(z) * mass - C->R->K->wdot(p, w->cv, C->n, NULL, tiny, w->cv[0], 1.0f));
    }
  }
  t_dyn = lo + (hi - lo) * powf(h / hmax, pr->dynatemp_exponent);
  ms__chain_temp(C, t_dyn);
}

/* -- outputs from the final list ------------------------------------------------ */
/* Weights of the list into ws->e, returns their sum. */
MS__PRIVATE double ms__chain_weights(ms__chain *C) {
  ms__ws *w = C->R->w;
  if (C->n == 0) return 0.0;
  /* relative to the list's maximum (a band's list is in id order) */
  return C->R->K->exp_sum(w->cv, C->n, NULL, C->R->K->floor_max(w->cv, C->n), 1.0f, w->e, NULL);
}

/* Draws from list weights ws->e (mass z) in list order; returns the index. */
MS__PRIVATE int32_t ms__chain_draw_index(const float *e, int32_t n, double z, double u) {
  double target = u * z, cum = 0.0;
  int32_t i, last = -1;
  for (i = 0; i < n; i++) {
    if (e[i] > 0.0f) last = i;
    cum += (double)e[i];
    if (cum > target) return i;
  }
  return last;
}

/* Processed logprobs from the list (weights e, mass z), in value order or
   in id order (typical's band): the draw is done, so an id-ordered list
   is sorted here, by weight, ties by id, for its first N. */
MS__PRIVATE void ms__chain_logprobs(ms__row *R, int32_t n, double z, int32_t pick, ms_output *out) {
  ms__ws *w = R->w;
  int32_t n_top = R->p->logprobs, i, m, sorted = 1;
  double logz = log(z);
  const float ep = pick >= 0 ? w->e[pick] : 0.0f;
  out->logprob = pick >= 0 && ep > 0.0f ? (float)(log((double)ep) - logz) : -INFINITY;
  /* rank: the kept tokens whose weight is >= the token's, itself and its
     ties included (vLLM v1); whatever the list's order */
  out->rank = R->V;   /* (a scored token the list dropped: ms__logprob_dropped's) */
  if (pick >= 0 && ep > 0.0f) for (i = 0, out->rank = 0; i < n; i++) out->rank += w->e[i] >= ep;
  for (i = 1; i < n && sorted; i++) sorted = w->e[i] <= w->e[i - 1];
  if (!sorted && n_top > 0) ms__sort_desc(w, w->e, w->ci, n);
  m = n < n_top ? n : n_top;
  for (i = 0; i < m; i++) {
    w->tv[i] = w->e[i] > 0.0f ? (float)(log((double)w->e[i]) - logz) : -INFINITY;
    w->ti[i] = w->ci[i];
  }
  ms__top_out(out, n_top, w->tv, w->ti, m);
}

/* Sampled token, probabilities and logprobs of a finished list. */
MS__PRIVATE ms_result ms__chain_finish(ms__row *R, int32_t n, uint64_t seed, uint64_t pos, ms_output *out, float *probs,
                                       float *p_sel) {
  ms__ws *w = R->w;
  double z;
  int32_t i, pick = -1;
  ms__chain C0;
  memset(&C0, 0, sizeof C0);
  C0.R = R; C0.n = n;
  z = ms__chain_weights(&C0);
  if (!(z > 0.0)) return MS_ERR_ALL_MASKED;
  if (probs) {
    memset(probs, 0, (size_t)R->V * 4);
    for (i = 0; i < n; i++) probs[w->ci[i]] = (float)((double)w->e[i] / z);
  }
  if ((out || p_sel) && R->given >= 0) {
    /* scored: the token's place in the list, or -1 (dropped: mirostat's
       mu then stays, p_sel NaN) */
    for (i = 0; i < n && w->ci[i] != R->given; i++) {}
    pick = i < n && w->e[i] > 0.0f ? i : -1;   /* (a weight of 0: its logprob -inf, as dropped) */
    if (p_sel) *p_sel = pick >= 0 ? (float)((double)w->e[pick] / z) : NAN;
  } else if (out || p_sel) {
    pick = n == 1 ? 0 : ms__chain_draw_index(w->e, n, z, ms_uniform(seed, pos, MS_PURPOSE_DRAW));
    if (pick < 0) return MS_ERR_ALL_MASKED;
    if (p_sel) *p_sel = (float)((double)w->e[pick] / z);
  }
  if (out) {
    out->token = R->given >= 0 ? R->given : w->ci[pick];
    if (R->p->logprobs >= 0) {
      if (R->p->logprobs_mode == MS_LOGPROBS_RAW) ms__logprobs_softmax(R, 1, 1.0f, out->token, out);
      else ms__chain_logprobs(R, n, z, pick, out);
    }
  }
  return MS_OK;
}

/* Mirostat v2's one pass over the row: the normaliser z of exp((l - m) s)
   (returned), and on the way the candidates for its cut into ws->ci / cv
   (*count of them). The cut l >= m + T (ln z - mu ln 2) needs z, so the
   pass gathers against a lower bound of it: the first chunk's sum (that
   chunk is gathered again from L1 against it), which with the top token's
   weight of 1 puts the bound a few T below the final cut. The overlay's
   ids count first and are gathered last, against the final cut. */
#define MS__MIRO_FIRST 8192 /* a multiple of MS__BLOCK: the same block sums as one call */
MS__PRIVATE float ms__mirostat2_bound(float c0, float T, double z) {
  float cut = c0 + T * logf((float)(z > 1.0 ? z : 1.0)); /* the top token alone weighs 1 */
  return cut - 1e-4f * (fabsf(cut) + 1.0f);
}
MS__PRIVATE double ms__mirostat2_pass(ms__row *R, float s, float T, float mu, int32_t *count) {
  ms__ws *w = R->w;
  const ms__kernels *K = R->K;
  const float c0 = R->m - T * (float)((double)mu * 0.69314718055994531);
  double z = 0.0;
  int32_t i, c = 0, V = R->V;
  float cut;
  for (i = 0; i < R->n_touched; i++) z += (double)R->K->exp1((w->ovr[w->touched[i]] - R->m) * s);
  if (!R->sparse) {
    int32_t len = V < MS__MIRO_FIRST ? V : MS__MIRO_FIRST, got = 0;
    z += K->exp_sum(R->x, len, R->enable, R->m, s, NULL, NULL);
    cut = ms__mirostat2_bound(c0, T, z);
    c = K->compact_ge(R->x, len, R->enable, cut, w->ci, w->cv, V);
    if (c < 0) c = 0; /* cap V: cannot happen */
    if (len < V) {
      z += K->exp_sum_ge(R->x + len, V - len, R->enable ? R->enable + len / 32 : NULL, R->m, s, cut,
                         w->ci + c, w->cv + c, V - c, &got);
      if (got < 0) got = 0; /* cap: cannot happen */
      for (i = 0; i < got; i++) w->ci[c + i] += len;
      c += got;
    }
  }
  cut = ms__mirostat2_bound(c0, T, z);
  for (i = 0; i < R->n_touched; i++) {
    int32_t id = w->touched[i];
    float v = w->ovr[id];
    if (v >= cut && v != -INFINITY) { w->ci[c] = id; w->cv[c] = v; c++; }
  }
  *count = c;
  return z;
}

/* -- mirostat (llama_sampler_mirostat_apply / _v2_apply) --------------------------
   Replaces the chain: logit bias, temperature, then mirostat picks the
   token; mu moves by eta * (surprise - tau) and travels in out. */
MS__PRIVATE ms_result ms__chain_mirostat(ms__row *R, uint64_t seed, uint64_t pos, ms_output *out, float *probs) {
  const ms_params *p = R->p;
  ms__ws *w = R->w;
  float mu = R->seq ? R->seq->mirostat_mu : NAN, T = p->temperature, p_sel = 1.0f;
  int32_t n, i, V = R->V;
  ms_result rc;
  double z;
  if (mu != mu) mu = 2.0f * p->mirostat_tau;
  if (p->hook_stage == MS_HOOK_BEFORE_SAMPLING) {
    rc = ms__row_hook(R);
    if (rc != MS_OK) return rc;
  }
  rc = ms__row_max(R);
  if (rc != MS_OK) return rc;
  if (T <= 0.0f) {
    /* temperature 0 leaves one finite entry: it is picked with p = 1 */
    w->cv[0] = R->m; w->ci[0] = R->argmax;
    rc = ms__chain_finish(R, 1, seed, pos, out, probs, &p_sel);
  } else {
    float s = 1.0f / T;
    if (p->mirostat == 2) {
      /* the prefix with surprise -log2(p) <= mu (at least one token):
         p >= 2^-mu, i.e. l >= m + T * (ln z - mu ln 2) */
      float cut;
      int32_t c, j = 0;
      z = ms__mirostat2_pass(R, s, T, mu, &c);
      cut = R->m + T * (float)(log(z) - (double)mu * 0.69314718055994531);
      cut -= 1e-4f * (fabsf(cut) + 1.0f);
      for (i = 0; i < c; i++) {
        float pi;
        if (w->cv[i] < cut) continue; /* gathered against a lower bound of z */
        pi = (float)((double)R->K->exp1((w->cv[i] - R->m) * s) / z);
        if (-log2f(pi) <= mu) { w->ci[j] = w->ci[i]; w->cv[j] = w->cv[i]; j++; }
      }
      n = j;
      if (n == 0) { n = 1; w->ci[0] = R->argmax; w->cv[0] = R->m; }
      ms__sort_desc(w, w->cv, w->ci, n);
    } else {
      /* v1: estimate s_hat from the top 100 probabilities (over every
         entry, -inf ones included as p = 0, as llama.cpp), then top-k.
         Both come from scans of the logits (the order of the weights);
         one scan of the top 128 usually holds the top k as well. */
      ms__topk t;
      int32_t m = 100, c, kk, lim, last;
      float sum_tb = 0.0f, sum_tt = 0.0f, s_hat, eps, k;
      ms__topk_init(&t, 128, w->xv, w->xi, w->qs, w->qs2, w->cap, 1);
      rc = ms__scan_row(R, &t);
      if (rc != MS_OK) return rc;
      c = ms__topk_finish(&t, w->cv, w->ci, w->ka, w->kb, w->ki);
      ms__ties_by_id(w->cv, w->ci, c);
      lim = m - 1 < V - 1 ? m - 1 : V - 1;
      /* only ratios of probabilities enter s_hat: the normaliser z cancels
         while every p stays a normal float (1 <= z <= V, so a weight
         above 2^-124 V is one); a row whose top 100 reach lower pays the
         exp pass for llama.cpp's p = 0 and subnormal cases */
      last = lim < c - 1 ? lim : c - 1;
      z = 1.0;
      if (last >= 0 && (w->cv[last] - R->m) * s < -86.0f + logf((float)V))
        z = ms__row_exp_sum(R, R->m, s, NULL, NULL);
      for (i = 0; i < lim; i++) {
        /* p as llama.cpp's float softmax has it (over z, or unnormalised
           when z cancels); past the finite entries p = 0 (its log ratio
           is then infinite, as upstream) */
        float p0 = i < c ? (float)((double)R->K->exp1((w->cv[i] - R->m) * s) / z) : 0.0f;
        float p1 = i + 1 < c ? (float)((double)R->K->exp1((w->cv[i + 1] - R->m) * s) / z) : 0.0f;
        float t_i = logf((float)(i + 2) / (float)(i + 1));
        float b_i = logf(p0 / p1);
        sum_tb += t_i * b_i;
        sum_tt += t_i * t_i;
      }
      s_hat = sum_tb / sum_tt;
      eps = s_hat - 1.0f;
      k = powf((eps * powf(2.0f, mu)) / (1.0f - powf((float)V, -eps)), 1.0f / s_hat);
      kk = k >= 1.0f && k < (float)V ? (int32_t)k : (k >= (float)V ? V : 1); /* NaN: 1 */
      if (kk > c && c >= 128) {
        /* the top k reaches past the first scan */
        ms__topk_init(&t, kk, w->xv, w->xi, w->qs, w->qs2, w->cap, 1);
        rc = ms__scan_row(R, &t);
        if (rc != MS_OK) return rc;
        c = ms__topk_finish(&t, w->cv, w->ci, w->ka, w->kb, w->ki);
        ms__ties_by_id(w->cv, w->ci, c);
      }
      n = c < kk ? c : kk;
    }
    /* the list holds logits of the row: temper them */
    for (i = 0; i < n; i++) w->cv[i] = (w->cv[i] - R->m) * s;
    ms__ties_by_id(w->cv, w->ci, n);
    rc = ms__chain_finish(R, n, seed, pos, out, probs, &p_sel);
  }
  if (rc != MS_OK) return rc;
  if (out && p_sel == p_sel) out->mirostat_mu = mu - p->mirostat_eta * (-log2f(p_sel) - p->mirostat_tau);
  return MS_OK;
}

/* -- the chain ----------------------------------------------------------------- */
/* Whether a list stage does anything with these params (disabled stages
   are skipped when the list is planned). */
MS__PRIVATE int ms__stage_on(const ms__row *R, char c) {
  const ms_params *p = R->p;
  switch (c) {
    case 's': return p->top_n_sigma > 0.0f;
    case 'k': return p->top_k > 0;
    case 'y': return p->typical_p < 1.0f;
    case 'p': return p->top_p < 1.0f;
    case 'm': return p->min_p > 0.0f;
    case 'x': return p->xtc_probability > 0.0f && p->xtc_threshold <= 0.5f;
    case 'e': return ms__chain_pen_on(R);
    case 'd': return ms__chain_dry_on(R);
    default: return 1;
  }
}

/* The largest logit among the weights of ws->e near their maximum wmax
   (a margin for a weight and its logit disagreeing by an ulp): the
   largest logit of a band, which top-p keeps. -inf when none. */
MS__PRIVATE float ms__band_top_logit(ms__row *R, float wmax) {
  ms__ws *w = R->w;
  float mx = -INFINITY;
  int32_t i, n = R->K->compact_ge(w->e, R->V, NULL, wmax * (1.0f - 1e-5f), w->ci, w->cv, R->V);
  for (i = 0; i < n; i++) { float v = ms__eff(R, w->ci[i]); if (v > mx) mx = v; }
  return mx;
}

/* ms__chain_band_finish on the row itself when nothing is overlaid (no
   touched ids): top-p keeps e >= tp unless a tie at tp is split (then the
   list path must order it by id), min-p and the temperature apply to the
   logits under that mask, and the draw walks block sums in id order, as
   the list's draw does. Returns 0 when the list path must decide (ws->e
   below tp may be zeroed by then, which that path never reads). */
MS__PRIVATE int ms__chain_band_row(ms__chain *C, const char *act, float tp, float mx, float cut, uint64_t seed, uint64_t pos,
                                   ms_output *out, float *probs, ms_result *rc) {
  ms__row *R = C->R;
  const ms_params *p = R->p;
  const ms__kernels *K = R->K;
  ms__ws *w = R->w;
  double mass, z;
  int32_t cnt, i;
  float mxw, s = 1.0f;
  ms__kept k;
  K->band_keep(w->e, R->V, tp, INFINITY, &mass, &cnt, &mxw);
  if (cnt == 0 || !(mxw > 0.0f)) return 0;
  if (strchr(act, 'p') && cnt - K->count_gt(w->e, R->V, NULL, tp) > 1) return 0;
  if (!(mx > -INFINITY)) mx = ms__band_top_logit(R, mxw); /* no min-p computed it */
  if (!(mx > -INFINITY)) return 0;
  if (strchr(act, 't')) s = 1.0f / p->temperature; /* T > 0 here */
  z = K->exp_where(R->x, w->e, R->V, mx, s, cut, w->e, w->blocks);
  *rc = MS_OK;
  if (!(z > 0.0)) { *rc = MS_ERR_ALL_MASKED; return 1; }
  memset(&k, 0, sizeof k);
  k.mass = z; k.m = mx; k.s = s; k.materialized = 1; k.blocks_ready = 1;
  if (probs) {
    double inv = 1.0 / z;
    memset(probs, 0, (size_t)R->V * 4);
    for (i = 0; i < R->V; i++) if (w->e[i] > 0.0f) probs[i] = (float)((double)w->e[i] * inv);
  }
  if (out) {
    int32_t tok = R->given >= 0 ? R->given : ms__draw(R, &k, ms_uniform(seed, pos, MS_PURPOSE_DRAW));
    if (tok < 0) { *rc = MS_ERR_ALL_MASKED; return 1; }
    out->token = tok;
    if (p->logprobs >= 0) {
      if (p->logprobs_mode == MS_LOGPROBS_RAW) ms__logprobs_softmax(R, 1, 1.0f, tok, out);
      else { k.t = 1.40129846e-45f; ms__logprobs_processed(R, &k, tok, out); }   /* (weights > 0: kept) */
    }
  }
  return 1;
}

/* The end of the chain over typical's band in ws->e (weights, zero where
   dropped, kmass in all, kmax the largest), for the stages in act (a
   subsequence of "pmt"), in token-id order: see ms__chain_run. Top-p's
   threshold tp comes from a selection over the weights; min-p's cut on
   the logits (the band's largest logit + ln min_p) is known before any
   gather, so only what passes both is gathered, unless that is a large
   part of the row, which is then masked instead (ms__chain_band_row). */
MS__PRIVATE ms_result ms__chain_band_finish(ms__chain *C, const char *act, double kmass, float kmax, uint64_t seed,
                                            uint64_t pos, ms_output *out, float *probs) {
  ms__row *R = C->R;
  const ms_params *p = R->p;
  ms__ws *w = R->w;
  const float tiny = 1.40129846e-45f;
  float tp = tiny, gcut, mx = -INFINITY, cut_m = -FLT_MAX;
  double target = 0.0, above = 0.0, km;
  int32_t c, i, j;
  if (strchr(act, 'p')) {
    target = (double)p->top_p * kmass;
    tp = ms__select(w, R->K, w->e, R->V, 0, tiny, target, kmass, &km);
    if (!(tp > tiny)) tp = tiny;
  }
  gcut = tp;
  if (strchr(act, 'm') && kmax > 0.0f) {
    float wm;
    mx = ms__band_top_logit(R, kmax);
    cut_m = mx + logf(p->min_p);
    if (cut_m > mx) cut_m = mx; /* min_p > 1 keeps the first maximum: gather the maxima */
    wm = R->K->exp1(cut_m - R->m) * (1.0f - 1e-5f);
    if (wm > gcut) gcut = wm; /* what min-p drops is dropped whatever top-p's ties do */
  }
  if (R->n_touched == 0 && !R->sparse &&
      !(strchr(act, 't') && p->temperature <= 0.0f) && !(strchr(act, 'm') && p->min_p > 1.0f)) {
    /* a set of more than a few % of the row is cheaper to mask than to
       gather: a strided sample of the weights tells */
    int32_t hits = 0, S = 512;
    double step = (double)R->V / S;
    for (i = 0; i < S; i++) hits += w->e[(int32_t)(i * step)] >= gcut;
    if (hits > S / 16) {
      ms_result rc;
      if (ms__chain_band_row(C, act, tp, mx, cut_m, seed, pos, out, probs, &rc)) return rc;
    }
  }
  c = R->K->compact_ge(w->e, R->V, NULL, gcut, w->ci, w->cv, R->V);
  if (c < 0) c = 0;
  if (tp > tiny && gcut == tp) {
    /* the shortest prefix of the sorted order reaching p: everything above
       the threshold, then its ties while the mass is short, in the sorted
       order: logit descending, then id (equal weights can hide logits an
       ulp apart, which the list's sort orders by logit) */
    int32_t nt = 0, q = 0, kid = -1;
    float kl = INFINITY;
    for (i = 0; i < c; i++) {
      if (w->cv[i] > tp) above += (double)w->cv[i];
      else if (w->cv[i] == tp) { w->ti[nt] = w->ci[i]; w->tv[nt] = ms__eff(R, w->ci[i]); nt++; }
    }
    for (i = 0; i < nt; i++) {
      if (above >= target && (c > nt || q > 0)) break;
      above += (double)tp;
      q++;
    }
    if (q > 0 && q < nt) {
      /* the last kept tie: the q-th by logit, then id */
      ms__sort_desc(w, w->tv, w->ti, nt);
      kl = w->tv[q - 1]; kid = w->ti[q - 1];
    }
    for (i = 0, j = 0; i < c; i++) {
      if (w->cv[i] == tp && q < nt) {
        float l;
        if (q == 0) continue;
        l = ms__eff(R, w->ci[i]);
        if (l < kl || (l == kl && w->ci[i] > kid)) continue;
      }
      w->ci[j] = w->ci[i]; w->cv[j] = w->cv[i]; j++;
    }
    c = j;
  }
  for (i = 0; i < c; i++) w->cv[i] = ms__eff(R, w->ci[i]);
  if (c > 0 && strchr(act, 'm')) {
    float mx = R->K->floor_max(w->cv, c), cut = mx + logf(p->min_p);
    if (cut > mx) cut = mx; /* min_p > 1: min-p still keeps one token, the first maximum */
    for (i = 0, j = 0; i < c; i++) if (w->cv[i] >= cut && (cut < mx || j == 0)) { w->ci[j] = w->ci[i]; w->cv[j] = w->cv[i]; j++; }
    c = j;
  }
  if (c == 0) return MS_ERR_ALL_MASKED;
  if (strchr(act, 't')) {
    if (p->temperature <= 0.0f) {
      /* the first maximum of the sorted order: the lowest id among the maxima */
      float mx = R->K->floor_max(w->cv, c);
      for (i = 0; w->cv[i] != mx; i++) {}
      w->cv[0] = w->cv[i]; w->ci[0] = w->ci[i];
      c = 1;
    } else {
      C->n = c;
      ms__chain_temp(C, p->temperature);
    }
  }
  return ms__chain_finish(R, c, seed, pos, out, probs, NULL);
}

/* The whole row of the llamacpp profile, after ms__row_build. */
MS__PRIVATE ms_result ms__chain_run(ms__row *R, uint64_t seed, uint64_t pos, ms_output *out, float *probs) {
  const ms_params *p = R->p;
  ms__ws *w = R->w;
  const char *order = p->samplers ? p->samplers : MS__CHAIN_DEFAULT, *st;
  ms__chain C;
  ms_result rc;
  float cut = -FLT_MAX;
  int32_t i;
  memset(&C, 0, sizeof C);
  C.R = R; C.order = order; C.seed = seed; C.pos = pos; C.size = R->V;
  C.min_keep = p->min_tokens_to_keep > 0 ? p->min_tokens_to_keep : 0;
  if (p->mirostat) return ms__chain_mirostat(R, seed, pos, out, probs);
  /* penalties and DRY ahead of every truncation change single logits */
  for (st = order; *st == 'e' || *st == 'd'; st++) {
    rc = ms__chain_pointwise(R, *st);
    if (rc != MS_OK) return rc;
  }
  if (p->hook_stage == MS_HOOK_BEFORE_SAMPLING) {
    rc = ms__row_hook(R);
    if (rc != MS_OK) return rc;
  }
  rc = ms__row_max(R);
  if (rc != MS_OK) return rc;
  {
    /* temperature <= 0 keeps the maximum; when nothing before it can drop
       the maximum (typical and XTC can) and nothing changes logits after
       the first truncation, that is the argmax of this row */
    const char *t = strchr(st, 't'), *q;
    int greedy = t && p->temperature <= 0.0f && p->dynatemp_range <= 0.0f;
    for (q = st; greedy && q < t; q++) {
      if (*q == 'y' && p->typical_p < 1.0f) greedy = 0;
      if (*q == 'x' && p->xtc_probability > 0.0f && p->xtc_threshold <= 0.5f) greedy = 0;
      if ((*q == 'e' && ms__chain_pen_on(R)) || (*q == 'd' && ms__chain_dry_on(R))) greedy = 0;
    }
    if (greedy) {
      if (out) {
        out->greedy = 1;
        out->token = R->given >= 0 ? R->given : R->argmax;
        if (p->logprobs >= 0) ms__logprobs_softmax(R, p->logprobs_mode == MS_LOGPROBS_RAW, 1.0f, out->token, out);
      }
      if (probs) { memset(probs, 0, (size_t)R->V * 4); probs[R->argmax] = 1.0f; }
      return MS_OK;
    }
  }
  /* the candidate list: top-n-sigma first cuts on the whole row; a top-k
     right after it (or first) is the scan itself */
  while (*st && *st != 't' && !ms__stage_on(R, *st)) st++;
  if (*st == 's') {
    if (C.size > 1) cut = ms__sigma_cut_row(R);
    st++;
    while (*st && *st != 't' && !ms__stage_on(R, *st)) st++;
  }
  if (*st == 'k' && p->top_k > 0 && p->top_k < R->V && p->top_k <= MS__HEAP_K_MAX) {
    ms__topk t;
    int32_t c, j = 0;
    /* every tie at the k-th value comes back; the lower ids win */
    ms__topk_init(&t, p->top_k, w->xv, w->xi, w->qs, w->qs2, w->cap, 1);
    rc = ms__scan_row(R, &t);
    if (rc != MS_OK) return rc;
    c = ms__topk_finish(&t, w->cv, w->ci, w->ka, w->kb, w->ki);
    ms__ties_by_id(w->cv, w->ci, c);
    if (c > p->top_k) c = p->top_k;
    for (i = 0; i < c; i++)
      if (w->cv[i] >= cut && w->cv[i] != -INFINITY) { w->cv[j] = w->cv[i]; w->ci[j] = w->ci[i]; j++; }
    C.n = j;
    C.size = p->top_k;
    st++;
  } else if (*st == 'y' && cut == -FLT_MAX && C.min_keep <= 1 && !R->sparse) {
    /* typical on the whole row keeps a band, found by selection over the
       weights (ms__typical_row, which zeroes what it drops); a top-p or
       min-p right after it cuts that band by weight, and only what can
       survive them is gathered and sorted. What typical kept but the
       gather left out still counts in top-p's softmax (z_extra). */
    const float tiny = 1.40129846e-45f;
    double kmass, km, lm = 0.0;
    int32_t kcount, c;
    float kmax, cw = tiny;
    const char *q;
    if (!(ms__typical_whole(R, R->m, 1.0f, p->typical_p, 0, MS__TYP_ZERO, &kmass, &kcount, &kmax, NULL, NULL) > 0.0)) return MS_ERR_ALL_MASKED;
    C.size = kcount;
    st++;
    {
      /* the band can be most of the row; when only top-p, min-p and a plain
         temperature follow (llama.cpp's default order), they run on the
         band in token-id order and nothing is sorted: top-p's threshold
         comes from a selection over the weights (ties at it: the lower ids,
         as the sorted prefix takes them), min-p compares logits with the
         band's maximum, and the draw walks the kept tokens in id order */
      char act[8];
      int na = 0, unsorted;
      for (q = st; *q && na < 7; q++) if (ms__stage_on(R, *q)) act[na++] = *q;
      act[na] = 0;
      /* (whatever the logprobs: a request's draw walks the same order
         whether or not it asks for processed logprobs) */
      unsorted = !*q && p->dynatemp_range <= 0.0f &&
                 (!strcmp(act, "") || !strcmp(act, "p") || !strcmp(act, "m") || !strcmp(act, "t") || !strcmp(act, "pm") ||
                  !strcmp(act, "pt") || !strcmp(act, "mt") || !strcmp(act, "pmt"));
      if (unsorted) return ms__chain_band_finish(&C, act, kmass, kmax, seed, pos, out, probs);
    }
    for (q = st; *q && *q != 't' && !ms__stage_on(R, *q); q++) {}
    if (*q == 'p') {
      float tp = ms__select(w, R->K, w->e, R->V, 0, tiny, (double)p->top_p * kmass, kmass, &km);
      if (tp > 0.0f) cw = tp * 0.4965853f; /* half the weight (e^-0.7), as the row prefilter */
      for (q++; *q && *q != 't' && !ms__stage_on(R, *q); q++) {}
    }
    if (*q == 'm') {
      /* min-p is relative to the band's largest weight */
      float cmw = kmax * p->min_p * (1.0f - 1e-4f);
      if (cmw > kmax) cmw = kmax;
      if (cmw > cw) cw = cmw;
    }
    c = R->K->compact_ge(w->e, R->V, NULL, cw, w->ci, w->cv, R->V);
    if (c < 0) c = 0;
    for (i = 0; i < c; i++) { lm += (double)w->cv[i]; w->cv[i] = ms__eff(R, w->ci[i]); }
    C.n = c;
    ms__chain_sort(&C);
    if (c > 0 && kmass > lm) C.z_extra = (kmass - lm) / (double)R->K->exp1(w->cv[0] - R->m);
  } else {
    int32_t c = 0;
    double zin = 0.0, zall = 0.0;
    int pre_p = 0;
    /* a leading min-p or top-p only keeps logits above a cut: gather just
       those (min-p: max + ln p; top-p: half the weight of the token where
       the mass reaches p, from a selection over the row's weights; what
       is left out still counts in top-p's softmax through z_extra) */
    const char *q = st;
    float cm = -FLT_MAX;
    if (*q == 'p' && cut == -FLT_MAX && C.min_keep <= 1 && !R->sparse) {
      double km;
      float tp;
      zall = ms__row_exp_sum(R, R->m, 1.0f, w->e, NULL);
      tp = ms__select(w, R->K, w->e, R->V, 0, 1.40129846e-45f, (double)p->top_p * zall, zall, &km);
      if (tp > 0.0f) { cm = R->m + logf(tp) - 0.7f; pre_p = 1; }
      for (q++; *q && *q != 't' && !ms__stage_on(R, *q); q++) {}
    }
    if (*q == 'm' && C.min_keep <= 1) {
      /* a min-p right after top-p cuts the same prefix further */
      float cmp = R->m + logf(p->min_p);
      cmp -= 1e-4f * (fabsf(cmp) + 1.0f);
      if (cmp > R->m) cmp = R->m; /* min_p > 1 keeps the top token */
      if (cmp > cm) cm = cmp;
    }
    if (cm > cut) cut = cm;
    c = ms__row_gather_ge(R, cut);
    C.n = c;
    ms__chain_sort(&C);
    if (pre_p && c > 0) {
      zin = R->K->exp_sum(w->cv, c, NULL, w->cv[0], 1.0f, NULL, NULL);
      C.z_extra = zall > zin ? zall - zin : 0.0;
    }
  }
  for (; *st; st++) {
    switch (*st) {
      case 'e': case 'd':
        rc = ms__chain_list_pointwise(&C, *st);
        if (rc != MS_OK) return rc;
        break;
      case 's':
        if (p->top_n_sigma > 0.0f && C.size > 1 && C.n > 0) {
          float c2 = ms__sigma_cut(p->top_n_sigma, w->cv, C.n, w->cv[0]);
          while (C.n > 0 && w->cv[C.n - 1] < c2) C.n--;
        }
        break;
      case 'k': ms__chain_top_k(&C, p->top_k); break;
      case 'y': ms__chain_typical(&C, p->typical_p); break;
      case 'p': ms__chain_top_p(&C, p->top_p); break;
      case 'm': ms__chain_min_p(&C, p->min_p); break;
      case 'x': ms__chain_xtc(&C); break;
      case 't': ms__chain_dynatemp(&C); break;
      default: break;
    }
  }
  if (C.n == 0) return MS_ERR_ALL_MASKED;
  return ms__chain_finish(R, C.n, seed, pos, out, probs, NULL);
}
