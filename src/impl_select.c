#if MS__INTRIN_DIAG /* the SIMD layers' kernels end here (simd_dispatch.c) */
#  pragma GCC diagnostic pop
#endif
/* ---- implementation: kernel dispatch, top-k heap, sorting, selection ------ */

#if MS__HAVE_X86_SIMD
#  if defined(_MSC_VER) && !defined(__clang__)
MS__PRIVATE void ms__cpuid(int leaf, int sub, unsigned r[4]) { int o[4]; __cpuidex(o, leaf, sub); r[0] = (unsigned)o[0]; r[1] = (unsigned)o[1]; r[2] = (unsigned)o[2]; r[3] = (unsigned)o[3]; }
MS__PRIVATE unsigned long long ms__xgetbv(void) { return _xgetbv(0); }
#  else
MS__PRIVATE void ms__cpuid(int leaf, int sub, unsigned r[4]) {
  unsigned a, b, c, d;
  __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(leaf), "c"(sub));
  r[0] = a; r[1] = b; r[2] = c; r[3] = d;
}
MS__PRIVATE unsigned long long ms__xgetbv(void) {
  unsigned a, d;
  __asm__ __volatile__("xgetbv" : "=a"(a), "=d"(d) : "c"(0));
  return ((unsigned long long)d << 32) | a;
}
#  endif
#endif

/* The widest kernel set this CPU and build support. MYSAMPLE_SIMD=scalar|
   sse2|avx2|avx512|neon in the environment caps the choice (tests run every
   path; a user can rule out a path they distrust). Any other value is
   ignored: a misspelt name once capped the choice at scalar, 8-16x slower. */
MS__PRIVATE const ms__kernels *ms__pick_kernels(void) {
  const char *cap = getenv("MYSAMPLE_SIMD");
  int allow_avx512 = 1, allow_avx2 = 1, allow_sse2 = 1, allow_neon = 1;
  if (cap && strcmp(cap, "scalar") && strcmp(cap, "sse2") && strcmp(cap, "avx2") && strcmp(cap, "avx512") && strcmp(cap, "neon"))
    cap = NULL;
  if (cap) {
    allow_avx512 = !strcmp(cap, "avx512");
    allow_avx2 = allow_avx512 || !strcmp(cap, "avx2");
    allow_sse2 = allow_avx2 || !strcmp(cap, "sse2");
    allow_neon = !strcmp(cap, "neon");
  }
  (void)allow_avx512; (void)allow_avx2; (void)allow_sse2; (void)allow_neon;
#if MS__HAVE_X86_SIMD
  {
    unsigned r1[4], r7[4], r0[4];
    int avx = 0, avx2 = 0, avx512 = 0;
    ms__cpuid(0, 0, r0);
    ms__cpuid(1, 0, r1);
    if ((r1[2] & (1u << 27)) && (r1[2] & (1u << 28))) { /* OSXSAVE, AVX */
      unsigned long long xcr0 = ms__xgetbv();
      avx = (xcr0 & 0x6) == 0x6;
      if (avx && r0[0] >= 7) {
        ms__cpuid(7, 0, r7);
        avx2 = (r7[1] & (1u << 5)) && (r1[2] & (1u << 12)); /* AVX2 and FMA */
        avx512 = avx2 && (r7[1] & (1u << 16)) && (xcr0 & 0xE0) == 0xE0;
      }
    }
#  if MS__HAVE_AVX512
    if (avx512 && allow_avx512) return &ms__kernel_table_avx512;
#  else
    (void)avx512;
#  endif
    if (avx2 && allow_avx2) return &ms__kernel_table_avx2;
    if (allow_sse2) return &ms__kernel_table_sse2;
  }
#endif
#if MS__HAVE_NEON
  if (allow_neon || !cap) return &ms__kernel_table_neon;
#endif
  return &ms__kernel_table_scalar;
}

/* -- top-k with ties ---------------------------------------------------------
   The scans append every value >= thr; each time the buffer holds `soft`
   entries a selection finds the k-th largest, which becomes thr, and the
   entries below it are dropped. Appends are cheap and predictable, unlike
   heap sifts, and ties with the k-th value are kept for free. */
/* The k-th largest of a[0..n) (a is clobbered; b is scratch of n).
   Quickselect whose partition is branch-free: each value is written to
   both sides and only the side counters advance, so random data costs no
   mispredictions. */
MS__PRIVATE float ms__kth_largest(float *a, float *b, int32_t n, int32_t k) {
  int32_t want = k - 1;
  while (n > 16) {
    float x = a[n / 2], y = a[0], z = a[n - 1], pivot;
    int32_t i, g = 0, l = 0;
    pivot = (x > y) == (x < z) ? x : ((y > x) == (y < z) ? y : z);
    for (i = 0; i < n; i++) {
      float v = a[i];
      a[g] = v; b[l] = v;      /* g <= i: writing a in place is safe */
      g += v > pivot;
      l += v < pivot;
    }
    if (want < g) n = g;
    else if (want < n - l) return pivot;           /* among the values equal to the pivot */
    else { float *t = a; want -= n - l; a = b; b = t; n = l; }
  }
  {
    int32_t i, j;
    for (i = 1; i < n; i++) { float v = a[i]; j = i - 1; while (j >= 0 && a[j] < v) { a[j + 1] = a[j]; j--; } a[j + 1] = v; }
    return a[want];
  }
}

MS__PRIVATE void ms__topk_init(ms__topk *t, int32_t k, float *bv, int32_t *bi, float *scratch, float *scratch2, int32_t hard, int keep_ties) {
  t->k = k; t->n = 0; t->bv = bv; t->bi = bi; t->scratch = scratch; t->scratch2 = scratch2; t->hard = hard;
  t->soft = k > 16 ? (k > hard / 4 ? hard : 4 * k) : 64;   /* 4k, 64 at least, hard at most (no 4k overflow) */
  if (t->soft > hard) t->soft = hard;
  t->keep_ties = keep_ties; t->bad = 0;
  t->thr = -FLT_MAX;
}

/* Raises thr to the k-th largest entry and drops the entries below it. */
MS__PRIVATE void ms__topk_compact(ms__topk *t) {
  int32_t i, j;
  float vk;
  if (t->n <= t->k) return;
  memcpy(t->scratch, t->bv, (size_t)t->n * sizeof(float));
  vk = ms__kth_largest(t->scratch, t->scratch2, t->n, t->k);
  for (i = 0, j = 0; i < t->n; i++)
    if (t->bv[i] >= vk) { t->bv[j] = t->bv[i]; t->bi[j] = t->bi[i]; j++; }
  t->n = j;
  t->thr = vk;
  /* many ties with the k-th value: give the buffer room before the next round */
  if (t->n * 2 > t->soft) t->soft = t->n * 2 < t->hard ? t->n * 2 : t->hard;
}

MS__PRIVATE float ms__topk_push(ms__topk *t, float v, int32_t id) {
  if (v == INFINITY) { t->bad = 1; return t->thr; }
  if (!(v >= t->thr)) return t->thr; /* below, masked (-inf) or NaN */
  t->bv[t->n] = v; t->bi[t->n] = id; t->n++;
  if (t->n >= t->soft) ms__topk_compact(t);
  return t->thr;
}

/* Runs the scan kernel over x, compacting the buffer between its calls
   (scalar work stays out of the vector code). Returns 1 on a NaN. */
MS__PRIVATE int ms__scan_all(const ms__kernels *K, const float *x, int32_t n, const uint32_t *enable, ms__topk *t) {
  int nan = 0;
  int32_t i = 0;
  while (i < n) {
    i = K->scan_topk(x, i, n, enable, t, &nan);
    if (t->n >= t->soft) ms__topk_compact(t);
  }
  return nan;
}

/* The result, sorted by descending value then ascending id: the k best,
   plus every entry tied with the k-th when keep_ties. Returns the count;
   out arrays may be the buffer itself. */
MS__PRIVATE int32_t ms__topk_finish(ms__topk *t, float *ov, int32_t *oi, uint32_t *ka, uint32_t *kb, int32_t *ki);
/* -- sorting ---------------------------------------------------------------- */
MS__PRIVATE uint32_t ms__desc_key(float f) {
  union { float f; uint32_t u; } c;
  c.f = f;
  /* order-preserving map to unsigned, then inverted for descending order */
  c.u = (c.u & 0x80000000u) ? ~c.u : (c.u | 0x80000000u);
  return ~c.u;
}

MS__PRIVATE float ms__key_float(uint32_t k) {
  union { float f; uint32_t u; } c;
  k = ~k;
  c.u = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
  return c.f;
}

/* Sorts (v, id) pairs by descending value, ties by ascending id. Small
   inputs use insertion sort; larger ones an LSD radix sort on digits of up
   to 11 bits of the value's order-preserving key, skipping digits every
   key shares (candidates from a narrow bracket share their top bits), then put each
   run of ties in id order. ka/kb/ki: scratch of n. */
MS__PRIVATE void ms__sort_desc_with(float *v, int32_t *id, int32_t n, uint32_t *ka, uint32_t *kb, int32_t *ki) {
  int32_t i;
  int shift;
  uint32_t *a = ka, *b = kb;
  int32_t *ai = id, *bi = ki;
  if (n <= 48) {
    for (i = 1; i < n; i++) {
      float x = v[i]; int32_t xi = id[i]; int32_t j = i - 1;
      while (j >= 0 && (v[j] < x || (v[j] == x && id[j] > xi))) { v[j + 1] = v[j]; id[j + 1] = id[j]; j--; }
      v[j + 1] = x; id[j + 1] = xi;
    }
    return;
  }
  {
    /* keys relative to the smallest: a narrow bracket needs few digits;
       up to 11-bit digits spread the buckets, so the counting and the
       scatter do not serialise on one hot bucket */
    uint32_t kmin = 0xffffffffu, kmax = 0, range;
    int nbits = 0, passes, width, p;
    for (i = 0; i < n; i++) { uint32_t k = ms__desc_key(v[i]); a[i] = k; if (k < kmin) kmin = k; if (k > kmax) kmax = k; }
    range = kmax - kmin;
    while (nbits < 32 && (range >> nbits) != 0) nbits++;
    passes = (nbits + 10) / 11;
    width = passes ? (nbits + passes - 1) / passes : 0;
    for (p = 0; p < passes; p++) {
      uint32_t count[2048], sum = 0, mask = (1u << width) - 1u;
      int d;
      shift = p * width;
      memset(count, 0, sizeof(uint32_t) << width);
      for (i = 0; i < n; i++) count[((a[i] - kmin) >> shift) & mask]++;
      for (d = 0; d <= (int)mask; d++) { uint32_t c = count[d]; count[d] = sum; sum += c; }
      for (i = 0; i < n; i++) {
        uint32_t dst = count[((a[i] - kmin) >> shift) & mask]++;
        b[dst] = a[i]; bi[dst] = ai[i];
      }
      { uint32_t *t1 = a; a = b; b = t1; }
      { int32_t *t2 = ai; ai = bi; bi = t2; }
    }
  }
  for (i = 0; i < n; i++) v[i] = ms__key_float(a[i]);
  if (ai != id) memcpy(id, ai, (size_t)n * 4);
  /* ties by ascending id: the radix passes keep the input's order, and a
     candidate list is not in id order where touched ids (penalised,
     biased) were appended after the scan; a tie between a touched and an
     untouched id then came out by position (SGLang's exact top-k kept the
     wrong one, logprob lists listed it late). Runs of equal values are
     short and mostly in order already: an insertion sort of the ids. */
  for (i = 0; i < n;) {
    int32_t j = i + 1, q;
    while (j < n && v[j] == v[i]) j++;
    for (q = i + 1; q < j; q++) {
      int32_t x = id[q], r = q - 1;
      while (r >= i && id[r] > x) { id[r + 1] = id[r]; r--; }
      id[r + 1] = x;
    }
    i = j;
  }
}
#define ms__sort_desc(w, v, id, n) ms__sort_desc_with((v), (id), (n), (w)->ka, (w)->kb, (w)->ki)

MS__PRIVATE int32_t ms__topk_finish(ms__topk *t, float *ov, int32_t *oi, uint32_t *ka, uint32_t *kb, int32_t *ki) {
  int32_t i, n;
  ms__topk_compact(t);
  n = t->n;
  if (ov != t->bv) for (i = 0; i < n; i++) { ov[i] = t->bv[i]; oi[i] = t->bi[i]; }
  ms__sort_desc_with(ov, oi, n, ka, kb, ki);
  if (!t->keep_ties && n > t->k) n = t->k; /* ties broken by the lower id */
  return n;
}

/* Sorts ids ascending (with their values) - the draw walks in id order. */
MS__PRIVATE void ms__sort_by_id(int32_t *id, float *v, int32_t n) {
  int32_t i;
  for (i = 1; i < n; i++) {
    int32_t xi = id[i]; float x = v[i]; int32_t j = i - 1;
    while (j >= 0 && id[j] > xi) { id[j + 1] = id[j]; v[j + 1] = v[j]; j--; }
    id[j + 1] = xi; v[j + 1] = x;
  }
}

/* -- workspace ---------------------------------------------------------------- */
#define MS__HEAP_K_MAX 1024   /* top-k up to this uses the threshold scan */
#define MS__SAMPLE 1024       /* sample size of the threshold estimate */

/* What HF's typical on the whole row leaves the draw (ms__typ_draw_aid):
   the kept weight before block b is bcum[b] (the zone pass's weight above
   zone A) plus list 0's, less lists 1's and 2's, over their ids before
   b * MS__BLOCK with values >= ge[l]. Lists (ascending ids, values):
   zone A (its kept tokens), zone B (its dropped ones) and those above
   zone B (all dropped). */
typedef struct ms__typ_aid {
  int32_t n[3];
  const int32_t *id[3];
  const float *v[3];
  float ge[3];
} ms__typ_aid;

typedef struct ms__ws {
  int32_t cap;              /* max_vocab */
  float *e;                 /* exp weights of the row (cap) */
  float *ovr;               /* values of touched ids (cap, valid where touched) */
  uint32_t *enable;         /* all ones between calls (bits cleared for touched ids, then restored) */
  uint32_t *mask;           /* a row's copy of the caller's token bitmask */
  uint32_t *touched_bits;   /* bit set: the value lives in ovr */
  int32_t *touched;         /* list of touched ids (cap) */
  float *cv; int32_t *ci;   /* candidates (cap) */
  float *tv; int32_t *ti;   /* sort scratch (cap) */
  float *xv; int32_t *xi;   /* top-k tie buffer (cap) */
  float *qs, *qs2;          /* selection scratch (cap each) */
  float *blocks;            /* per-block sums (cap / MS__BLOCK + 1) */
  double *bcum;             /* typical: cumulative block sums (cap / MS__BLOCK + 2) */
  ms__typ_aid aid;          /* typical: the draw's lists (see ms__typ_aid) */
  float *sv;                /* a strided sample of a row (2 * MS__SAMPLE) */
  float *blk;               /* one block of weights (MS__BLOCK) */
  uint32_t *ka, *kb; int32_t *ki; /* radix sort scratch (cap) */
  int32_t *pend;            /* deferred penalised ids (cap) */
  int32_t *zi, *zb;         /* typical: the ids of a zone pass's two zones (cap each) */
  float *hrow;              /* the row materialised for a custom hook (cap) */
  int32_t hist_cap;         /* DRY: the longest window the scratch below holds */
  int32_t *hz;              /* DRY: match lengths of the window (hist_cap) */
} ms__ws;

/* 0 when the size does not fit in a size_t (32-bit targets) */
MS__PRIVATE size_t ms__ws_size(int32_t cap, int32_t hist) {
  size_t v = (size_t)cap, words = ((size_t)cap + 31) / 32, nb = (size_t)cap / MS__BLOCK + 1;
  size_t s = ms__align_up(sizeof(ms__ws), 64);
  s = ms__size_add(s, 16, v * 4, 64);         /* e, ovr, touched, cv, ci, tv, ti, xv, xi, ka, kb, ki, pend, zi, zb, hrow */
  s = ms__size_add(s, 3, words * 4, 64);      /* enable, mask, touched_bits */
  s = ms__size_add(s, 2, v * 4, 64);          /* qs, qs2 */
  s = ms__size_add(s, 1, nb * 4, 64);
  s = ms__size_add(s, 1, (nb + 1) * 8, 64);
  s = ms__size_add(s, 1, 2 * MS__SAMPLE * 4, 64);
  s = ms__size_add(s, 1, MS__BLOCK * 4, 64);
  s = ms__size_add(s, 1, (size_t)hist * 4, 64);
  return s;
}

MS__PRIVATE ms__ws *ms__ws_layout(void *mem, int32_t cap, int32_t hist) {
  char *p = (char *)mem;
  ms__ws *w = (ms__ws *)p;
  size_t v = (size_t)cap, words = ((size_t)cap + 31) / 32, nb = (size_t)cap / MS__BLOCK + 1;
#define MS__TAKE(field, type, count) do { w->field = (type *)p; p += ms__align_up((size_t)(count) * 4, 64); } while (0)
  p += ms__align_up(sizeof(ms__ws), 64);
  w->cap = cap;
  MS__TAKE(e, float, v); MS__TAKE(ovr, float, v); MS__TAKE(touched, int32_t, v);
  MS__TAKE(cv, float, v); MS__TAKE(ci, int32_t, v); MS__TAKE(tv, float, v); MS__TAKE(ti, int32_t, v);
  MS__TAKE(xv, float, v); MS__TAKE(xi, int32_t, v);
  MS__TAKE(ka, uint32_t, v); MS__TAKE(kb, uint32_t, v); MS__TAKE(ki, int32_t, v);
  MS__TAKE(pend, int32_t, v); MS__TAKE(zi, int32_t, v); MS__TAKE(zb, int32_t, v); MS__TAKE(hrow, float, v);
  MS__TAKE(enable, uint32_t, words); MS__TAKE(mask, uint32_t, words); MS__TAKE(touched_bits, uint32_t, words);
  MS__TAKE(qs, float, v); MS__TAKE(qs2, float, v);
  MS__TAKE(blocks, float, nb);
  MS__TAKE(bcum, double, 2 * (nb + 1));
  MS__TAKE(sv, float, 2 * MS__SAMPLE);
  MS__TAKE(blk, float, MS__BLOCK);
  MS__TAKE(hz, int32_t, hist);
  w->hist_cap = hist;
#undef MS__TAKE
  /* touched_bits is kept all-clear between calls (each call clears what it set) */
  memset(w->touched_bits, 0, words * 4);
  memset(w->enable, 0xff, words * 4);
  return w;
}

/* -- threshold selection -----------------------------------------------------
   Finds the value t of v[0..n) (only values >= lo_floor and > 0 take part)
   such that W(> t) < target <= W(>= t), where W sums the values themselves
   (top-p mass) or counts them (count_mode, top-k); *kept gets W(>= t).
   total is W of every value taking part (0 if unknown). Never sorts the row:
   1. a strided sample estimates the boundary's rank, walked from the
      lighter side (a top-heavy mass is estimated from its many-small-
      weights complement);
   2. one branch-free pass gathers the values within +-4 sigma of it
      (about a quarter of the row at most) and sums the weight above;
   3. the slice is narrowed in cache, 8 evenly spaced thresholds per
      pass, until a few dozen values remain, which are sorted and walked.
   A slice that misses (skewed rows) is widened; the last resort gathers
   every value, which is always correct. */
MS__PRIVATE float ms__walk_sorted(const float *cv, int32_t c, int count_mode, double above, double target, double *kept) {
  int32_t i = 0;
  double cum = above;
  *kept = above;
  while (i < c) {
    float val = cv[i];
    double g = 0.0;
    int32_t j = i;
    while (j < c && cv[j] == val) { g += count_mode ? 1.0 : (double)val; j++; }
    cum += g;
    *kept = cum;
    if (cum >= target) return val;
    i = j;
  }
  return c > 0 ? cv[c - 1] : 0.0f; /* rounding: the target lay a hair above the total */
}

/* Picks the slice of th[0] > ... > th[7] holding the boundary, given
   a8[j] = W(> th[j]) within the current bracket and `above` = W(> hi). */
MS__PRIVATE void ms__narrow(const float th[8], const double a8[8], double target, float *lo, float *hi, double *above) {
  int i;
  for (i = 0; i < 8 && *above + a8[i] < target; i++) {}
  if (i == 0) { *lo = nextafterf(th[0], INFINITY); }
  else if (i == 8) { *hi = th[7]; *above += a8[7]; }
  else { *lo = nextafterf(th[i], INFINITY); *hi = th[i - 1]; *above += a8[i - 1]; }
}

/* From a sample of the weights (sv, s values > 0), a bracket [*lo, *hi]
   that holds the boundary with high probability: the rank estimate walks
   from the lighter side, and the margin is +-4 sigma of it. want_fraction
   is target / total. *dense says whether the bracket holds enough of the
   row for a branch-free gather. The sample is binned, not sorted: at most
   1024 bins of equal width in the floats' bits between its least and its
   largest (positive floats order as their bits: an even split of the
   log scale, finer the narrower the sample); a radix sort of 1024 floats
   cost 21k cycles on chains through its hot buckets. Ranks are found in
   the bins' counts and the bracket takes the outer edges of the bins that
   hold its two ranks, so it is at most a bin wider each side. */
MS__PRIVATE void ms__sample_bracket(ms__ws *w, const float *sv, int32_t s, int count_mode, double want_fraction,
                                    float lo_floor, float *lo, float *hi, int *dense) {
  uint32_t umin = 0xffffffffu, umax = 0u, *cnt = w->ka, key;
  float *wt = (float *)w->kb;
  double ssum = 0.0, want, cum = 0.0;
  int32_t i, jt, jb, d, nb, b, r, below, shift = 0;
  for (i = 0; i < s; i++) {
    uint32_t u;
    memcpy(&u, &sv[i], 4);
    umin = u < umin ? u : umin;
    umax = u > umax ? u : umax;
  }
  while (((umax - umin) >> shift) >= 1024u) shift++;
  nb = (int32_t)((umax - umin) >> shift) + 1;
  memset(cnt, 0, (size_t)nb * 4);
  memset(wt, 0, (size_t)nb * 4);
  for (i = 0; i < s; i++) {
    uint32_t u;
    memcpy(&u, &sv[i], 4);
    u = (u - umin) >> shift;
    cnt[u]++;
    wt[u] += count_mode ? 1.0f : sv[i];
  }
  for (b = 0; b < nb; b++) ssum += (double)wt[b];
  want = want_fraction * ssum;
  /* the boundary's bin b: its samples take descending ranks jt..jb */
  if (want <= 0.5 * ssum) {
    for (b = nb - 1, r = 0; b > 0; b--) { cum += (double)wt[b]; if (cum >= want) break; r += (int32_t)cnt[b]; }
    jt = r;
    jb = r + (int32_t)cnt[b] - 1;
  } else {
    for (b = 0, r = 0; b < nb - 1; b++) { cum += (double)wt[b]; if (cum >= ssum - want) break; r += (int32_t)cnt[b]; }
    jb = s - 1 - r;
    jt = jb - (int32_t)cnt[b] + 1;
  }
  /* the gather is branch-free and the narrowing runs in cache, so a wide
     bracket is cheap */
  d = 16 + (int32_t)(4.0 * sqrt((double)(jt + jb) / 2.0 + 1.0));
  /* hi: the top edge of the bin of rank jt - d (descending); lo: the
     bottom edge of the bin of rank jb + d */
  *hi = INFINITY;
  if (jt - d >= 0) {
    for (b = nb - 1, r = 0; b >= 0; b--) { r += (int32_t)cnt[b]; if (r > jt - d) break; }
    key = umin + ((((uint32_t)b + 1u) << shift) - 1u);
    memcpy(hi, &key, 4);
  }
  *lo = lo_floor;
  if (jb + d < s) {
    below = s - 1 - (jb + d); /* samples lighter than rank jb + d */
    for (b = 0, r = 0; b < nb; b++) { r += (int32_t)cnt[b]; if (r > below) break; }
    key = umin + ((uint32_t)b << shift);
    memcpy(lo, &key, 4);
  }
  if (*lo < lo_floor) *lo = lo_floor;
  /* a few % of the row or less: gather with a branch per vector */
  *dense = 2 * d > MS__SAMPLE / 16;
}

/* Narrows a gathered slice vals[0..c) (all in [lo, hi], weight wc, with
   weight `above` above hi) in place until it is short: 8 thresholds at
   quantiles of a small sorted sample of the slice, around where the sample
   puts the boundary (rank-based, so skewed weights, like a language
   model's long tail, narrow as fast as even ones); then sorts and walks
   what is left. ids is scratch of c. Returns t; *kept = W(>= t). */
MS__PRIVATE float ms__narrow_walk(ms__ws *w, const ms__kernels *K, float *vals, int32_t *ids, int32_t c,
                                  float lo, float hi, double above, double wc, int count_mode,
                                  double target, double *kept) {
  int32_t level;
  for (level = 0; c > 32 && level < 8; level++) {
    float th[8], sv[32];
    double a8[8], cum = above, scale;
    int32_t k, j, S = 32;
    double step = (double)c / S;
    for (k = 0; k < S; k++) sv[k] = vals[(int32_t)(k * step)];
    for (k = 1; k < S; k++) { float v0 = sv[k]; j = k - 1; while (j >= 0 && sv[j] < v0) { sv[j + 1] = sv[j]; j--; } sv[j + 1] = v0; }
    scale = step;
    if (target - above <= 0.5 * wc) {
      for (j = 0; j < S - 1; j++) { cum += (count_mode ? 1.0 : (double)sv[j]) * scale; if (cum >= target) break; }
    } else {
      /* the lighter side: the slice's weight below the boundary */
      double rest = wc - (target - above);
      cum = 0.0;
      for (j = S - 1; j > 0; j--) { cum += (count_mode ? 1.0 : (double)sv[j]) * scale; if (cum >= rest) break; }
    }
    for (k = 0; k < 8; k++) {
      int32_t q = j - 4 + k;
      th[k] = sv[q < 0 ? 0 : (q >= S ? S - 1 : q)];
    }
    K->mass_above8(vals, c, th, count_mode, a8);
    ms__narrow(th, a8, target, &lo, &hi, &above);
    {
      double ignore;
      int32_t c2 = K->bracket(vals, c, lo, hi, count_mode, 1, &ignore, &wc, NULL, vals, c);
      if (c2 == c) break; /* no progress (ties): sort what is left */
      c = c2;
    }
  }
  {
    /* positions were never gathered (only the threshold is wanted): the
       sort's ties read them */
    int32_t i;
    for (i = 0; i < c; i++) ids[i] = i;
  }
  ms__sort_desc(w, vals, ids, c);
  return ms__walk_sorted(vals, c, count_mode, above, target, kept);
}

MS__PRIVATE float ms__select(ms__ws *w, const ms__kernels *K, const float *v, int32_t n,
                             int count_mode, float lo_floor, double target, double total, double *kept) {
  float lo = lo_floor, hi = INFINITY;
  int attempt, dense = 1;
  if (n > 4 * MS__SAMPLE) {
    int32_t s = 0, i;
    double step = (double)n / MS__SAMPLE;
    for (i = 0; i < MS__SAMPLE; i++) {
      float x = v[(int32_t)(i * step)];
      if (x >= lo_floor && x > 0.0f) w->sv[s++] = x;
    }
    if (s > 0) ms__sample_bracket(w, w->sv, s, count_mode, total > 0.0 ? target / total : target / step / s,
                                  lo_floor, &lo, &hi, &dense);
  }
  for (attempt = 0; attempt < 4; attempt++) {
    double above = 0.0, wc = 0.0;
    int32_t cap = attempt < 3 ? (n / 3 > 4096 ? n / 3 : (n < 4096 ? n : 4096)) : n;
    int32_t c;
    if (attempt == 3) { lo = lo_floor; hi = INFINITY; }
    c = K->bracket(v, n, lo, hi, count_mode, attempt == 0 ? dense : 1, &above, &wc, NULL, w->cv, cap);
    if (c < 0) { attempt = 2; continue; } /* the sample misled us: gather everything */
    if (above >= target && hi != INFINITY) { lo = hi; hi = INFINITY; continue; }
    if (above + wc < target && lo > lo_floor) { hi = lo; lo = lo_floor; continue; }
    if (c == 0) { *kept = above; return hi; } /* degenerate: nothing inside (target rounding) */
    return ms__narrow_walk(w, K, w->cv, w->ci, c, lo, hi, above, wc, count_mode, target, kept);
  }
  *kept = total;
  return lo_floor;
}

/* Sorts ids ascending with their values: insertion sort for short lists,
   LSD radix (8-bit digits, as many as the largest id needs) otherwise.
   si/sv are scratch of n entries. */
MS__PRIVATE void ms__sort_by_id_radix(int32_t *id, float *v, int32_t n, int32_t *si, float *sv) {
  int32_t i, maxid = 0;
  int shift;
  int32_t *a = id, *b = si; float *av = v, *bv = sv;
  if (n <= 64) { ms__sort_by_id(id, v, n); return; }
  for (i = 0; i < n; i++) if (id[i] > maxid) maxid = id[i];
  for (shift = 0; shift < 32 && (shift == 0 || (maxid >> shift) != 0); shift += 8) {
    uint32_t cnt[257];
    int32_t d;
    memset(cnt, 0, sizeof cnt);
    for (i = 0; i < n; i++) cnt[(((uint32_t)a[i] >> shift) & 0xffu) + 1]++;
    for (d = 0; d < 256; d++) cnt[d + 1] += cnt[d];
    for (i = 0; i < n; i++) { uint32_t o = cnt[((uint32_t)a[i] >> shift) & 0xffu]++; b[o] = a[i]; bv[o] = av[i]; }
    { int32_t *t = a; a = b; b = t; }
    { float *t = av; av = bv; bv = t; }
  }
  if (a != id) { memcpy(id, a, (size_t)n * 4); memcpy(v, av, (size_t)n * 4); }
}

/* Sorts three parallel arrays by id (the touched ids appended to a gather
   break its id order). Insertion sort: touched lists are short and the
   gathered part is already ordered. */
MS__PRIVATE void ms__sort_by_id3(ms__ws *w, int32_t *id, float *v, float *e, int32_t n) {
  int32_t i;
  (void)w;
  for (i = 1; i < n; i++) {
    int32_t xi = id[i]; float xv = v[i], xe = e[i]; int32_t j = i - 1;
    while (j >= 0 && id[j] > xi) { id[j + 1] = id[j]; v[j + 1] = v[j]; e[j + 1] = e[j]; j--; }
    id[j + 1] = xi; v[j + 1] = xv; e[j + 1] = xe;
  }
}
