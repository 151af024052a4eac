/* A straightforward, sort-based statement of llama.cpp's common sampler
   chain (the llamacpp profile): the reference tests/test_llamacpp_ref.c
   compares mysample with. Written from docs/ENGINES.md section 1 and
   checked against llama.cpp's src/llama-sampling.cpp (e19fb5f-era
   revision) and common/sampling.cpp where the doc is silent. Clarity over
   speed: full copies, full qsorts, O(n^2) DRY.

   Data model, as llama.cpp: an array of {id, logit, p} entries in an
   order, a `size` and a `sorted` flag. Truncating samplers (top-k, top-p,
   min-p, typical, XTC, mirostat) shorten the array; masking ones
   (temperature <= 0, top-n-sigma) set logits to -inf and the entries stay
   (they count in `size`: dynamic temperature's log(size), XTC's size < 2
   and min_keep tests). Every probability filter recomputes the softmax
   over the entries still in the array. Logits are float, as in llama.cpp;
   every pointwise change (penalties, DRY, temperature) is rounded to float.

   Deterministic tie rule (llama.cpp's sorts are unstable, so its order of
   equal logits is unspecified): a sort puts higher logits first and, among
   equal logits, the lower id first. Hence: top-k keeps exactly k, ties to
   the lower id; temperature <= 0 keeps the first maximum of the array,
   which is always the lowest-id maximum. Typical orders by shifted score
   with a stable sort of the (sorted) array: equal scores keep the
   logit-descending, id-ascending order.

   Arithmetic: two modes. NLC_F32 emulates llama.cpp's float32 arithmetic
   (softmax p = expf(l - max) summed in float in array order, the float
   running sums of top-p and typical, float entropy, float accumulations of
   top-n-sigma, powf in mirostat and dynamic temperature); NLC_EXACT does
   the same steps in double. Every cut decision is computed both ways in
   either mode: the mode picks which one is used, and the decision is
   reported "near" (out->near) when the two disagree or when the deciding
   quantity lies within the rounding band of its cut: there a correct
   implementation may fall on either side by float rounding. The band is
   NLC_REL (1e-6) relative for quantities computed in a few operations
   (logits, min-p's cut, XTC's coin); for quantities llama.cpp accumulates
   in float32 over k terms (its softmax normaliser, the top-p and typical
   running sums, the entropy, top-n-sigma's mean and deviation) it is
   nlc_acc_tol(k) = max(1e-6, 8 sqrt(k) 2^-24) relative: float32 sums of
   32000 softmax terms are off by ~3e-5 relative in llama.cpp itself
   (measured: sorted-order sum of expf over a 32000-token row, 2.6e-5).
   Ties that llama.cpp leaves unspecified and mysample may break otherwise
   are reported in out->tie (typical's cut through tokens of equal logit).
   in->dyn_h_scale perturbs dynamic temperature's entropy by that relative
   amount (0 normally): the test uses it to bracket llama.cpp's float32
   entropy noise.

   Where llama.cpp's own result is ill-defined the reference follows the
   evident intent and says so in out->undefined:
   - typical with a p = 0 candidate in the array (-inf entries or
     underflow): llama.cpp computes 0 * logf(0) = NaN, its entropy is NaN
     and its order unspecified; here 0 * log 0 = 0 and the shifted score of
     p = 0 is +inf (last);
   - mirostat v1 when int(k) is UB: k NaN (two p = 0 ranks give 0/0;
     here 1 token, what x86 does) or k >= 2^31 (here the size). One p = 0
     rank is defined: b = +inf, s_hat = +inf, k = powf(inf, 0) = 1;
   - a softmax over entries that are all -inf (NaN upstream).
   Output probabilities are always a double softmax of the final array
   (dist's float weights / double sum agree to ~1e-7).

   Needs mysample.h (ms_params) first. */
#ifndef MS_NAIVE_LLAMACPP_H
#define MS_NAIVE_LLAMACPP_H
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <math.h>
#include <float.h>

#define NLC_REL 1e-6
enum { NLC_EXACT = 0, NLC_F32 = 1 };

typedef struct nlc_ent { int32_t id; float l; double pe; float pf; } nlc_ent;
typedef struct nlc_arr { nlc_ent *d; int32_t n; int sorted; } nlc_arr;

typedef struct nlc_in {
  const float *logits; int32_t V;
  const ms_params *p;
  const int32_t *history; int32_t n_history; /* prompt then output, oldest first */
  double xtc_coin;   /* XTC's uniform for this step: XTC acts iff !(coin > probability) */
  float mu;          /* mirostat's mu; NaN = 2 * tau (llama.cpp's init/reset) */
  int mode;          /* NLC_EXACT or NLC_F32 */
  double dyn_h_scale;/* dynamic temperature: H *= 1 + dyn_h_scale (0 = exact) */
} nlc_in;

typedef struct nlc_out {
  double *probs;             /* V: the distribution dist (or mirostat) draws from */
  int32_t *ids; int32_t n;   /* optional (NULL): the final array's ids in array order */
  int near; char near_what[200];
  int undefined; char undefined_what[200];
  int tie; char tie_what[200];   /* an unspecified tie order upstream decided the result */
  int dynatemp;              /* dynamic temperature ran */
  int hits[10];              /* per stage of "edskypmxt" and mirostat: it changed something */
  int xtc_fired;             /* the coin said yes (and XTC was enabled) */
  int xtc_removed;           /* tokens XTC removed */
  float mu_used;             /* mirostat: the mu the step used */
  double mirostat_k;         /* mirostat v1: k before int() */
} nlc_out;

static void nlc_flag(int *cnt, char *what, size_t cap, const char *fmt, double a, double b) {
  if (*cnt == 0) snprintf(what, cap, fmt, a, b);
  (*cnt)++;
}
#define NLC_NEAR(o, fmt, a, b) nlc_flag(&(o)->near, (o)->near_what, sizeof (o)->near_what, fmt, (double)(a), (double)(b))
#define NLC_UNDEF(o, fmt, a, b) nlc_flag(&(o)->undefined, (o)->undefined_what, sizeof (o)->undefined_what, fmt, (double)(a), (double)(b))
#define NLC_TIE(o, fmt, a, b) nlc_flag(&(o)->tie, (o)->tie_what, sizeof (o)->tie_what, fmt, (double)(a), (double)(b))

/* relative rounding band of a float32 accumulation of k terms */
static double nlc_acc_tol(int32_t k) {
  double t = 8.0 * sqrt((double)(k > 1 ? k : 1)) / 16777216.0;
  return t > NLC_REL ? t : NLC_REL;
}
static int nlc_close_rel(double a, double cut, double rel) { return fabs(a - cut) <= rel * fabs(cut); }

/* |a - cut| within NLC_REL of max(|a|, |cut|, floor) */
static int nlc_close(double a, double cut, double floor_) {
  double s = fabs(a) > fabs(cut) ? fabs(a) : fabs(cut);
  if (s < floor_) s = floor_;
  return fabs(a - cut) <= NLC_REL * s;
}

static int nlc_cmp(const void *a, const void *b) {
  const nlc_ent *x = (const nlc_ent *)a, *y = (const nlc_ent *)b;
  if (x->l > y->l) return -1;
  if (x->l < y->l) return 1;
  return x->id < y->id ? -1 : x->id > y->id;
}
static void nlc_sort(nlc_arr *a) {
  if (a->sorted) return;
  qsort(a->d, (size_t)a->n, sizeof *a->d, nlc_cmp);
  a->sorted = 1;
}

/* llama_sampler_softmax_impl: both p's at once (pf: float exp, float sum
   in array order, float division; pe: double). */
static void nlc_softmax(nlc_arr *a, int do_sort, nlc_out *o) {
  int32_t i;
  float mx = -INFINITY, sf = 0.0f;
  double se = 0.0;
  if (do_sort) nlc_sort(a);
  for (i = 0; i < a->n; i++) if (a->d[i].l > mx) mx = a->d[i].l;
  if (mx == -INFINITY) {
    NLC_UNDEF(o, "softmax over %g entries that are all -inf (%g)", a->n, 0);
    for (i = 0; i < a->n; i++) { a->d[i].pe = 0; a->d[i].pf = 0; }
    return;
  }
  for (i = 0; i < a->n; i++) {
    float d = a->d[i].l - mx;
    a->d[i].pf = expf(d); sf += a->d[i].pf;
    a->d[i].pe = exp((double)a->d[i].l - (double)mx); se += a->d[i].pe;
  }
  for (i = 0; i < a->n; i++) { a->d[i].pf = a->d[i].pf / sf; a->d[i].pe /= se; }
}

/* llama_sampler_temp_impl */
static void nlc_temp_impl(nlc_arr *a, float T) {
  int32_t i, best = 0;
  if (T <= 0.0f) {
    for (i = 1; i < a->n; i++) if (a->d[i].l > a->d[best].l) best = i;
    for (i = 0; i < a->n; i++) if (i != best) a->d[i].l = -INFINITY;
    return;
  }
  for (i = 0; i < a->n; i++) a->d[i].l = a->d[i].l / T;
}

/* penalties over the last penalty_last_n tokens (-1 = all, 0 = off) */
static void nlc_penalties(nlc_arr *a, const nlc_in *in) {
  const ms_params *p = in->p;
  int32_t i, start, last_n = p->penalty_last_n;
  int32_t *count;
  if (last_n == 0 || (p->repetition_penalty == 1.0f && p->frequency_penalty == 0.0f && p->presence_penalty == 0.0f)) return;
  start = (last_n < 0 || last_n >= in->n_history) ? 0 : in->n_history - last_n;
  count = (int32_t *)calloc((size_t)in->V, sizeof *count);
  for (i = start; i < in->n_history; i++) count[in->history[i]]++;
  for (i = 0; i < a->n; i++) {
    int32_t c = count[a->d[i].id];
    float l = a->d[i].l, pen;
    if (c == 0) continue;
    l = l <= 0.0f ? l * p->repetition_penalty : l / p->repetition_penalty;
    pen = (float)c * p->frequency_penalty + p->presence_penalty;
    a->d[i].l = l - pen;
  }
  a->sorted = 0;
  free(count);
}

/* DRY, with token-id breakers; plain O(N^2) match lengths instead of the
   reverse Z-algorithm (the same numbers: min(longest match, rep_limit)) */
static void nlc_dry(nlc_arr *a, const nlc_in *in) {
  const ms_params *p = in->p;
  int32_t N = in->n_history, allowed = p->dry_allowed_length, rep_limit, i, k, b, max_exp = 0;
  const int32_t *w;
  int32_t *cnt, *maxlen;
  if (p->dry_multiplier == 0.0f || p->dry_base < 1.0f || p->dry_last_n == 0) return;
  if (p->dry_last_n > 0 && p->dry_last_n < N) N = p->dry_last_n;
  if (N <= allowed) return;
  w = in->history + (in->n_history - N);
  /* restart limit: scanning back from the newest token, the first token
     that heads a breaker whose tail follows it (longest tail wins) */
  rep_limit = N;
  for (i = 0; i < N; i++) {
    int32_t tok = w[N - 1 - i], longest = -1, at = 0;
    for (b = 0; b < p->n_dry_breakers; at += p->dry_breakers_lens[b], b++) {
      int32_t len = p->dry_breakers_lens[b], tail = len - 1, o, match = 1;
      if (p->dry_breakers[at] != tok || tail <= longest || tail > i) continue;
      for (o = 0; o < tail; o++) if (p->dry_breakers[at + 1 + o] != w[N - i + o]) { match = 0; break; }
      if (match) longest = tail;
    }
    if (longest >= 0) { rep_limit = i - longest; break; }
  }
  if (rep_limit < allowed) return;
  /* cnt[j]: length of the longest suffix of the window that also ends at
     position j (< N - 1), capped at rep_limit */
  cnt = (int32_t *)calloc((size_t)N, sizeof *cnt);
  maxlen = (int32_t *)malloc(sizeof *maxlen * (size_t)in->V);
  for (i = 0; i < in->V; i++) maxlen[i] = -1;
  for (k = 1; k < N; k++) {
    int32_t n = 0;
    while (n + k < N && w[N - 1 - n] == w[N - 1 - n - k]) n++;
    cnt[N - 1 - k] = n < rep_limit ? n : rep_limit;
  }
  for (i = 0; i + 1 < N; i++)
    if (cnt[i] >= allowed && cnt[i] > maxlen[w[i + 1]]) maxlen[w[i + 1]] = cnt[i];
  if (p->dry_base > 1.000001f) max_exp = (int32_t)(88.7228391f / logf(p->dry_base));
  for (i = 0; i < a->n; i++) {
    int32_t id = a->d[i].id, e, single = 0, at = 0;
    float pen;
    if (maxlen[id] < 0) continue;
    for (b = 0; b < p->n_dry_breakers; at += p->dry_breakers_lens[b], b++)
      if (p->dry_breakers_lens[b] == 1 && p->dry_breakers[at] == id) single = 1;
    if (single) continue;
    e = maxlen[id] - allowed;
    if (max_exp > 0 && e > max_exp) e = max_exp;
    pen = (float)((double)p->dry_multiplier * pow((double)p->dry_base, (double)e));
    a->d[i].l = a->d[i].l - pen;
  }
  a->sorted = 0;
  free(cnt); free(maxlen);
}

/* top-n-sigma: mask (keep the entries) logit < max - n * std over the
   finite logits; then softmax with sort */
static void nlc_top_n_sigma(nlc_arr *a, const nlc_in *in, nlc_out *o) {
  float n = in->p->top_n_sigma, mxf, sumf = 0.0f, meanf, accf = 0.0f, stdf, thrf;
  double sume = 0.0, meane, acce = 0.0, thre;
  int32_t i, cnt = 0;
  if (n <= 0.0f || a->n <= 1) return;
  mxf = a->d[0].l;
  for (i = 0; i < a->n; i++)
    if (a->d[i].l != -INFINITY) { if (a->d[i].l > mxf) mxf = a->d[i].l; sumf += a->d[i].l; sume += a->d[i].l; cnt++; }
  meanf = cnt ? sumf / (float)cnt : 0.0f;
  meane = cnt ? sume / cnt : 0.0;
  for (i = 0; i < a->n; i++)
    if (a->d[i].l != -INFINITY) {
      float d = a->d[i].l - meanf;
      accf = (float)((double)accf + (double)d * (double)d);
      acce += ((double)a->d[i].l - meane) * ((double)a->d[i].l - meane);
    }
  stdf = cnt ? sqrtf(accf / (float)cnt) : 0.0f;
  thrf = mxf - n * stdf;
  thre = (double)mxf - (double)n * (cnt ? sqrt(acce / cnt) : 0.0);
  for (i = 0; i < a->n; i++) {
    float l = a->d[i].l;
    int cut_f = l < thrf, cut_e = (double)l < thre;
    /* the cut's own float noise: n * std accumulated over cnt terms */
    double band = NLC_REL * (fabs(thre) > 1.0 ? fabs(thre) : 1.0) + nlc_acc_tol(cnt) * ((double)mxf - thre);
    if (l == -INFINITY) continue;
    if (cut_f != cut_e || fabs((double)l - thre) <= band) NLC_NEAR(o, "top-n-sigma: logit %.9g vs cut %.9g", l, thre);
    if (in->mode == NLC_F32 ? cut_f : cut_e) a->d[i].l = -INFINITY;
  }
  nlc_softmax(a, 1, o);
}

/* top-k: exactly k (ties to the lower id), k <= 0 = off */
static void nlc_top_k(nlc_arr *a, int32_t k, nlc_out *o) {
  if (k <= 0) return;
  if (k > a->n) k = a->n;
  nlc_sort(a);
  if (k < a->n && a->d[k - 1].l != a->d[k].l && nlc_close(a->d[k - 1].l, a->d[k].l, 1.0))
    NLC_NEAR(o, "top-k: k-th logit %.9g vs next %.9g", a->d[k - 1].l, a->d[k].l);
  a->n = k;
}

typedef struct nlc_score { double s; int32_t at; } nlc_score;
static int nlc_cmp_score(const void *a, const void *b) {
  const nlc_score *x = (const nlc_score *)a, *y = (const nlc_score *)b;
  if (x->s < y->s) return -1;
  if (x->s > y->s) return 1;
  return x->at - y->at;  /* stable: keeps the sorted array's order */
}

/* typical: softmax with sort, entropy, order by |-ln p - H|, keep the
   shortest prefix whose (float) running sum is > p, at least min_keep */
static int32_t nlc_typical_cut(const nlc_arr *a, const nlc_in *in, int f32, nlc_score *sc, double *H_out) {
  float Hf = 0.0f, cumf = 0.0f, typ = in->p->typical_p;
  double He = 0.0, cume = 0.0;
  int32_t i, mk = in->p->min_tokens_to_keep;
  for (i = 0; i < a->n; i++) {
    if (a->d[i].pf > 0.0f) Hf += -a->d[i].pf * logf(a->d[i].pf);
    if (a->d[i].pe > 0.0) He += -a->d[i].pe * log(a->d[i].pe);
  }
  for (i = 0; i < a->n; i++) {
    sc[i].at = i;
    if (f32) sc[i].s = a->d[i].pf > 0.0f ? (double)fabsf(-logf(a->d[i].pf) - Hf) : INFINITY;
    else sc[i].s = a->d[i].pe > 0.0 ? fabs(-log(a->d[i].pe) - He) : INFINITY;
  }
  qsort(sc, (size_t)a->n, sizeof *sc, nlc_cmp_score);
  *H_out = f32 ? Hf : He;
  for (i = 0; i < a->n; i++) {
    int32_t at = sc[i].at;
    if (f32) cumf += a->d[at].pf; else cume += a->d[at].pe;
    if ((f32 ? (double)cumf : cume) > (double)typ && (mk <= 0 || i >= mk - 1)) return i + 1;
  }
  return a->n;
}

static void nlc_typical(nlc_arr *a, const nlc_in *in, nlc_out *o) {
  nlc_score *se, *sf, *use;
  nlc_ent *tmp;
  int32_t i, ke, kf, keep;
  double He, Hf, cum = 0.0, typ = in->p->typical_p;
  if (in->p->typical_p >= 1.0f) return;
  nlc_softmax(a, 1, o);
  for (i = 0; i < a->n; i++)
    if (a->d[i].pe == 0.0 || a->d[i].pf == 0.0f) { NLC_UNDEF(o, "typical: a p = 0 candidate (llama.cpp: NaN entropy), rank %g of %g", i, a->n); break; }
  se = (nlc_score *)malloc(sizeof *se * (size_t)a->n);
  sf = (nlc_score *)malloc(sizeof *sf * (size_t)a->n);
  ke = nlc_typical_cut(a, in, 0, se, &He);
  kf = nlc_typical_cut(a, in, 1, sf, &Hf);
  use = in->mode == NLC_F32 ? sf : se;
  keep = in->mode == NLC_F32 ? kf : ke;
  /* near: the two arithmetics disagree on the set, the running sum is
     within its float band of p at the cut, or the scores at the cut
     nearly tie */
  {
    int differ = ke != kf;
    char *in_e = (char *)calloc((size_t)a->n, 1);
    for (i = 0; i < ke; i++) in_e[se[i].at] = 1;
    for (i = 0; i < kf && !differ; i++) if (!in_e[sf[i].at]) differ = 1;
    free(in_e);
    if (differ) NLC_NEAR(o, "typical: float and double keep different sets (%g vs %g)", ke, kf);
  }
  for (i = 0; i < ke; i++) cum += a->d[se[i].at].pe;
  {
    /* the running sum carries the softmax normaliser's and its own float
       noise; the scores carry the entropy's (a shift of H moves the two
       sides of exp(-H) in opposite directions) */
    double rel = nlc_acc_tol(a->n) + nlc_acc_tol(ke);
    if (nlc_close_rel(cum, typ, rel) || nlc_close_rel(cum - a->d[se[ke - 1].at].pe, typ, rel))
      NLC_NEAR(o, "typical: running sum %.9g vs p %.9g", cum, typ);
    if (ke < a->n && se[ke].s != INFINITY && a->d[se[ke].at].l != a->d[se[ke - 1].at].l &&
        fabs(se[ke].s - se[ke - 1].s) <= 2.0 * nlc_acc_tol(a->n) * (fabs(He) + 1.0) + NLC_REL * (fabs(se[ke].s) + 1.0))
      NLC_NEAR(o, "typical: shifted scores %.9g and %.9g nearly tie at the cut", se[ke - 1].s, se[ke].s);
    /* equal logits have equal scores: llama.cpp's std::sort leaves their
       order unspecified, so which of them the cut keeps is too */
    if (keep < a->n && a->d[use[keep].at].l == a->d[use[keep - 1].at].l)
      NLC_TIE(o, "typical: the cut splits tokens of equal logit %.9g (%g kept)", a->d[use[keep].at].l, keep);
  }
  (void)Hf;
  tmp = (nlc_ent *)malloc(sizeof *tmp * (size_t)(keep ? keep : 1));
  for (i = 0; i < keep; i++) tmp[i] = a->d[use[i].at];
  memcpy(a->d, tmp, sizeof *tmp * (size_t)keep);
  a->n = keep;
  a->sorted = 0;
  free(tmp); free(se); free(sf);
}

/* top-p: softmax (no sort), walk in descending order with a float running
   sum; keep up to the first entry where cum >= p and i + 1 >= min_keep */
static void nlc_top_p(nlc_arr *a, const nlc_in *in, nlc_out *o) {
  float P = in->p->top_p, cumf = 0.0f;
  double cume = 0.0;
  int32_t i, mk = in->p->min_tokens_to_keep, kf = -1, ke = -1, keep;
  if (P >= 1.0f) return;
  nlc_softmax(a, 0, o);
  nlc_sort(a);
  for (i = 0; i < a->n && (kf < 0 || ke < 0); i++) {
    double before = cume;
    cumf += a->d[i].pf; cume += a->d[i].pe;
    if (kf < 0 && cumf >= P && i + 1 >= mk) kf = i + 1;
    if (ke < 0 && cume >= P && i + 1 >= mk) {
      double rel = nlc_acc_tol(a->n) + nlc_acc_tol(i + 1);
      ke = i + 1;
      if (nlc_close_rel(cume, P, rel) || (i > 0 && nlc_close_rel(before, P, rel)))
        NLC_NEAR(o, "top-p: running sum %.9g vs p %.9g", nlc_close_rel(cume, P, rel) ? cume : before, P);
    }
  }
  if (kf < 0) kf = a->n;
  if (ke < 0) ke = a->n;
  if (kf != ke) NLC_NEAR(o, "top-p: float sum keeps %g, double sum %g", kf, ke);
  keep = in->mode == NLC_F32 ? kf : ke;
  a->n = keep;
}

/* min-p in the logit domain: keep logit >= max + log(p) (inclusive) */
static void nlc_min_p(nlc_arr *a, const nlc_in *in, nlc_out *o) {
  float P = in->p->min_p, mx = -FLT_MAX, thrf;
  double thre;
  int32_t i, mk = in->p->min_tokens_to_keep, cf = 0, ce = 0, applied = 0;
  if (P <= 0.0f || a->n == 0) return;
  for (i = 0; i < a->n; i++) if (a->d[i].l > mx) mx = a->d[i].l;
  thrf = mx + logf(P);
  thre = (double)mx + log((double)P);
  for (i = 0; i < a->n; i++) {
    float l = a->d[i].l;
    cf += l >= thrf; ce += (double)l >= thre;
    if (l != -INFINITY && ((l >= thrf) != ((double)l >= thre) || nlc_close(l, thre, 1.0)))
      NLC_NEAR(o, "min-p: logit %.9g vs cut %.9g", l, thre);
  }
  if (!a->sorted) {
    /* the one-pass filter (keeps the order) when it keeps >= 1 and >= min_keep */
    int32_t c = in->mode == NLC_F32 ? cf : ce, j = 0;
    if (c > 0 && c >= mk) {
      for (i = 0; i < a->n; i++) {
        float l = a->d[i].l;
        if (in->mode == NLC_F32 ? l >= thrf : (double)l >= thre) a->d[j++] = a->d[i];
      }
      a->n = j;
      applied = 1;
    }
  }
  if (!applied) {
    nlc_sort(a);
    for (i = 1; i < a->n; i++) {
      float l = a->d[i].l;
      int below = in->mode == NLC_F32 ? l < thrf : (double)l < thre;
      if (below && i >= mk) break;
    }
    a->n = i;
  }
}

/* XTC given the coin */
static void nlc_xtc(nlc_arr *a, const nlc_in *in, nlc_out *o) {
  float prob = in->p->xtc_probability, thr = in->p->xtc_threshold;
  int fire_e, fire_f, fire;
  int32_t i, pos_e = 0, pos_f = 0, pos, mk = in->p->min_tokens_to_keep;
  if (prob <= 0.0f || thr > 0.5f || a->n < 2) return;
  fire_e = !(in->xtc_coin > (double)prob);
  fire_f = !((float)in->xtc_coin > prob);
  if (fire_e != fire_f || nlc_close_rel(in->xtc_coin, prob, NLC_REL)) NLC_NEAR(o, "xtc: coin %.9g vs probability %.9g", in->xtc_coin, prob);
  fire = in->mode == NLC_F32 ? fire_f : fire_e;
  if (!fire) return;
  o->xtc_fired = 1;
  nlc_softmax(a, 1, o);
  for (i = 0; i < a->n; i++) { if (a->d[i].pe >= (double)thr) pos_e = i; else break; }
  for (i = 0; i < a->n; i++) { if (a->d[i].pf >= thr) pos_f = i; else break; }
  for (i = 0; i < a->n; i++) {
    if (nlc_close_rel(a->d[i].pe, thr, nlc_acc_tol(a->n))) NLC_NEAR(o, "xtc: p %.9g vs threshold %.9g", a->d[i].pe, thr);
    if (a->d[i].pe < (double)thr * 0.5) break;
  }
  if (pos_e != pos_f) NLC_NEAR(o, "xtc: float and double runs end at %g and %g", pos_f, pos_e);
  pos = in->mode == NLC_F32 ? pos_f : pos_e;
  if (a->n - pos >= mk && pos > 0) {
    memmove(a->d, a->d + pos, sizeof *a->d * (size_t)(a->n - pos));
    a->n -= pos;
    o->xtc_removed = pos;
  }
}

/* temperature as the chain's 't' stage: temp_ext(T, range, exponent) */
static void nlc_temperature(nlc_arr *a, const nlc_in *in, nlc_out *o) {
  float T = in->p->temperature, delta = in->p->dynatemp_range, ex = in->p->dynatemp_exponent;
  if (delta > 0.0f) {
    float minf = T - delta > 0.0f ? T - delta : 0.0f, maxf = T + delta, Hmaxf, Hf = 0.0f, Tf;
    double mine = (double)T - delta > 0.0 ? (double)T - delta : 0.0, maxe = (double)T + delta, Hmaxe, He = 0.0, Te;
    int32_t i;
    if (a->n <= 1) return;
    Hmaxf = -logf(1.0f / (float)a->n);
    Hmaxe = log((double)a->n);
    nlc_softmax(a, 1, o);
    for (i = 0; i < a->n; i++) {
      if (a->d[i].pf > 0.0f) Hf -= a->d[i].pf * logf(a->d[i].pf);
      if (a->d[i].pe > 0.0) He -= a->d[i].pe * log(a->d[i].pe);
    }
    Hf = (float)(Hf * (1.0 + in->dyn_h_scale));
    He *= 1.0 + in->dyn_h_scale;
    o->dynatemp = 1;
    Tf = minf + (maxf - minf) * powf(Hf / Hmaxf, ex);
    Te = mine + (maxe - mine) * pow(He / Hmaxe, (double)ex);
    if ((Tf <= 0.0f) != (Te <= 0.0)) NLC_NEAR(o, "dynatemp: T %.9g (float) vs %.9g", Tf, Te);
    nlc_temp_impl(a, in->mode == NLC_F32 ? Tf : (float)Te);
    return;
  }
  nlc_temp_impl(a, T);
}

/* mirostat (v1: m = 100, n_vocab = V; v2), after plain temp(T) */
static void nlc_mirostat(nlc_arr *a, const nlc_in *in, nlc_out *o) {
  float tau = in->p->mirostat_tau, mu = in->mu != in->mu ? 2.0f * tau : in->mu;
  int32_t i;
  o->mu_used = mu;
  nlc_temp_impl(a, in->p->temperature);
  nlc_softmax(a, 1, o);
  if (in->p->mirostat == 1) {
    const int32_t m = 100;
    float tb = 0.0f, tt = 0.0f, sf, epsf, kf;
    double tbe = 0.0, tte = 0.0, s, eps, ke, k;
    int32_t kk, kkf, kke;
    for (i = 0; i < m - 1 && i < a->n - 1; i++) {
      float t = logf((float)(i + 2) / (float)(i + 1));
      float b = logf(a->d[i].pf / a->d[i + 1].pf);
      tb += t * b; tt += t * t;
      tbe += log((double)(i + 2) / (i + 1)) * log(a->d[i].pe / a->d[i + 1].pe);
      tte += log((double)(i + 2) / (i + 1)) * log((double)(i + 2) / (i + 1));
    }
    sf = tb / tt; epsf = sf - 1.0f;
    kf = powf((epsf * powf(2.0f, mu)) / (1.0f - powf((float)in->V, -epsf)), 1.0f / sf);
    s = tbe / tte; eps = s - 1.0;
    ke = pow((eps * pow(2.0, (double)mu)) / (1.0 - pow((double)in->V, -eps)), 1.0 / s);
    k = in->mode == NLC_F32 ? kf : ke;
    o->mirostat_k = k;
    /* IEEE arithmetic as llama.cpp: a p = 0 among the ranks makes s_hat
       inf and k = powf(inf, 0) = 1. int(k) is UB for NaN and k >= 2^31:
       NaN (0/0 ratios) -> 1, as x86's cvttss2si then max(INT_MIN, 1)
       gives; an overflow -> the size (the evident intent; x86 would give
       1) */
    if (k != k) { NLC_UNDEF(o, "mirostat v1: k is NaN (int(NaN) is UB upstream; 1 here, as x86) (%g, %g)", k, a->n); kk = 1; }
    else if (!(k < 2147483647.0)) { NLC_UNDEF(o, "mirostat v1: k = %g overflows int (UB upstream; clamped to size %g)", k, a->n); kk = a->n; }
    else kk = (int32_t)k < 1 ? 1 : (int32_t)k;
    kkf = kf != kf ? 1 : kf < 2147483647.0f ? ((int32_t)kf < 1 ? 1 : (int32_t)kf) : a->n;
    kke = ke != ke ? 1 : ke < 2147483647.0 ? ((int32_t)ke < 1 ? 1 : (int32_t)ke) : a->n;
    if (kkf > a->n) kkf = a->n;
    if (kke > a->n) kke = a->n;
    if (kkf != kke || (ke < 2147483647.0 && ke >= 1.0 && nlc_close(ke, floor(ke + 0.5), 1.0) && fabs(ke - floor(ke + 0.5)) > 0))
      NLC_NEAR(o, "mirostat v1: k %.9g (float) vs %.9g", kf, ke);
    nlc_top_k(a, kk, o);
    nlc_softmax(a, 1, o);
  } else {
    int32_t cf = a->n, ce = a->n, c;
    for (i = 0; i < a->n; i++) if (-log2f(a->d[i].pf) > mu) { cf = i; break; }
    for (i = 0; i < a->n; i++) if (-log2(a->d[i].pe) > (double)mu) { ce = i; break; }
    for (i = 0; i < a->n; i++) {
      double sv = -log2(a->d[i].pe);
      if (fabs(sv - mu) <= NLC_REL * (fabs(mu) + 1.0) + nlc_acc_tol(a->n) / log(2.0)) NLC_NEAR(o, "mirostat v2: surprise %.9g vs mu %.9g", sv, mu);
      if (sv > (double)mu + 1.0) break;
    }
    if (cf != ce) NLC_NEAR(o, "mirostat v2: float keeps %g, double %g", cf, ce);
    c = in->mode == NLC_F32 ? cf : ce;
    a->n = c ? c : 1;
    nlc_softmax(a, 1, o);
  }
}

/* mu after drawing a token of probability p (float, as llama.cpp) */
static float nlc_mirostat_mu_next(float mu, float tau, float eta, float p_selected) {
  float surprise = -log2f(p_selected);
  float e = surprise - tau;
  return mu - eta * e;
}

/* The final distribution of one step. Returns 0, or -1 when the row is
   all -inf. */
static int nlc_probs(const nlc_in *in, nlc_out *o) {
  nlc_arr a;
  int32_t i;
  const char *s = in->p->samplers ? in->p->samplers : "edskypmxt";
  double mx = -INFINITY, z = 0.0;
  o->near = 0; o->undefined = 0; o->near_what[0] = 0; o->undefined_what[0] = 0;
  o->tie = 0; o->tie_what[0] = 0; o->dynatemp = 0;
  memset(o->hits, 0, sizeof o->hits);
  o->xtc_fired = 0; o->xtc_removed = 0; o->mu_used = NAN; o->mirostat_k = NAN; o->n = 0;
  if (in->V <= 0) return -1;
  for (i = 0; i < in->V; i++) o->probs[i] = 0.0;
  for (i = 0; i < in->V; i++) if (in->logits[i] != -INFINITY) break;
  if (i == in->V) return -1;
  a.d = (nlc_ent *)malloc(sizeof *a.d * (size_t)in->V);
  a.n = in->V; a.sorted = 0;
  for (i = 0; i < in->V; i++) { a.d[i].id = i; a.d[i].l = in->logits[i]; a.d[i].pe = 0; a.d[i].pf = 0; }
  if (in->p->mirostat == 1 || in->p->mirostat == 2) {
    nlc_mirostat(&a, in, o);  /* the samplers list is ignored */
    o->hits[9] = a.n < in->V;
  } else {
    for (; *s; s++) {
      int32_t n0 = a.n, j, changed = 0;
      float *before = (float *)malloc(sizeof(float) * (size_t)a.n);
      int32_t *bid = (int32_t *)malloc(sizeof(int32_t) * (size_t)a.n);
      for (j = 0; j < a.n; j++) { before[j] = a.d[j].l; bid[j] = a.d[j].id; }
      switch (*s) {
        case 'e': nlc_penalties(&a, in); break;
        case 'd': nlc_dry(&a, in); break;
        case 's': nlc_top_n_sigma(&a, in, o); break;
        case 'k': nlc_top_k(&a, in->p->top_k, o); break;
        case 'y': nlc_typical(&a, in, o); break;
        case 'p': nlc_top_p(&a, in, o); break;
        case 'm': nlc_min_p(&a, in, o); break;
        case 'x': nlc_xtc(&a, in, o); break;
        case 't': nlc_temperature(&a, in, o); break;
        default: break;
      }
      /* coverage: did the stage drop, mask or move anything (temperature
         1 is no change; any other T is) */
      if (a.n != n0) changed = 1;
      else {
        int32_t inf0 = 0, inf1 = 0;
        for (j = 0; j < a.n; j++) {
          inf0 += before[j] == -INFINITY; inf1 += a.d[j].l == -INFINITY;
          if (bid[j] == a.d[j].id && before[j] != a.d[j].l) changed = 1;  /* same place, new logit */
        }
        if (inf0 != inf1) changed = 1;
      }
      if (changed && strchr("edskypmxt", *s)) o->hits[strchr("edskypmxt", *s) - "edskypmxt"] = 1;
      free(before); free(bid);
    }
  }
  /* dist: softmax of what is left (size 1: that token, whatever its logit) */
  for (i = 0; i < a.n; i++) if (a.d[i].l > mx) mx = a.d[i].l;
  if (a.n == 1) o->probs[a.d[0].id] = 1.0;
  else if (mx == -INFINITY) NLC_UNDEF(o, "dist over %g entries that are all -inf (%g)", a.n, 0);
  else {
    for (i = 0; i < a.n; i++) z += exp((double)a.d[i].l - mx);
    for (i = 0; i < a.n; i++) o->probs[a.d[i].id] = exp((double)a.d[i].l - mx) / z;
  }
  if (o->ids) for (i = 0; i < a.n; i++) o->ids[i] = a.d[i].id;
  o->n = a.n;
  free(a.d);
  return 0;
}
#endif
