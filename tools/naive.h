/* A straightforward, sort-based statement of the sampling semantics: the
   reference the tests compare mysample with, and the "naive" baseline of
   the benchmark. Written for clarity, not speed: full copies, full sorts,
   softmax in double. Needs mysample.h (for ms_params) and <stdlib.h>. */
#ifndef MS_NAIVE_H
#define MS_NAIVE_H
#include <stdlib.h>
#include <string.h>
#include <math.h>

typedef struct naive_pair { double v; int id; } naive_pair;

static int naive_cmp_desc(const void *a, const void *b) {
  const naive_pair *x = (const naive_pair *)a, *y = (const naive_pair *)b;
  if (x->v > y->v) return -1;
  if (x->v < y->v) return 1;
  return x->id - y->id;
}

/* Softmax of l into p (double), -inf gives 0. */
static void naive_softmax(const double *l, int V, double *p) {
  double m = -INFINITY, z = 0.0;
  int i;
  for (i = 0; i < V; i++) if (l[i] > m) m = l[i];
  for (i = 0; i < V; i++) { p[i] = l[i] == -INFINITY ? 0.0 : exp(l[i] - m); z += p[i]; }
  for (i = 0; i < V; i++) p[i] /= z;
}

/* Entropy of the softmax q of l (nats), over the tokens with q > 0. */
static double naive_entropy(const double *q, int V) {
  double h = 0.0;
  int i;
  for (i = 0; i < V; i++) if (q[i] > 0.0) h -= q[i] * log(q[i]);
  return h;
}

/* The k-th largest of l (k clamped to [1, V]); s is scratch (V). */
static double naive_kth_largest(const double *l, int V, int k, naive_pair *s) {
  int i;
  for (i = 0; i < V; i++) { s[i].v = l[i]; s[i].id = i; }
  qsort(s, (size_t)V, sizeof *s, naive_cmp_desc);
  return s[(k < V ? (k > 1 ? k : 1) : V) - 1].v;
}

static int naive_cmp_asc(const void *a, const void *b) {
  const naive_pair *x = (const naive_pair *)a, *y = (const naive_pair *)b;
  if (x->v < y->v) return -1;
  if (x->v > y->v) return 1;
  return x->id - y->id;
}

/* HF's warpers after min-p, in generate()'s order: typical (scores
   |-log p - H| ascending; the cut is the first position whose running
   mass reaches typical_p, every score <= the cut's stays, and the first
   mtk positions), epsilon (drop p < epsilon) and eta (drop
   p < min(eta, sqrt(eta) e^-H)), each on the distribution the previous
   left; epsilon and eta keep the mtk largest logits (and their ties).
   mtk: min_tokens_to_keep. q and s are scratch (V each). */
static void naive_hf_catalogue(double *l, int V, const ms_params *p, int mtk, double *q, naive_pair *s) {
  int i;
  if (p->typical_p < 1.0f) {
    double h, cum = 0.0, cut;
    int n = 0, last = 0;
    naive_softmax(l, V, q);
    h = naive_entropy(q, V);
    for (i = 0; i < V; i++) { s[i].v = q[i] > 0.0 ? fabs(-log(q[i]) - h) : INFINITY; s[i].id = i; }
    qsort(s, (size_t)V, sizeof *s, naive_cmp_asc);
    for (i = 0; i < V; i++) { cum += q[s[i].id]; if (cum < p->typical_p) n++; }
    last = n < V - 1 ? n : V - 1;
    cut = s[last].v;
    for (i = mtk; i < V; i++) if (s[i].v > cut) l[s[i].id] = -INFINITY; /* the first mtk positions stay */
  }
  for (i = 0; i < 2; i++) {
    float c = i == 0 ? p->epsilon_cutoff : p->eta_cutoff;
    double thr, keep_v;
    int j;
    if (!(c > 0.0f)) continue;
    naive_softmax(l, V, q);
    thr = c;
    if (i == 1) { double e2 = sqrt((double)c) * exp(-naive_entropy(q, V)); if (e2 < thr) thr = e2; }
    keep_v = naive_kth_largest(l, V, mtk, s);
    for (j = 0; j < V; j++) if (q[j] < thr && l[j] < keep_v) l[j] = -INFINITY;
  }
}

/* Final distribution of one row. prompt/output are the sequence so far.
   Returns 0, or -1 when every token is masked. probs gets V floats. */
static int naive_probs(const float *x, int V, const ms_params *p, const int *prompt, int n_prompt,
                       const int *output, int n_output, float *probs) {
  double *l = (double *)malloc(sizeof(double) * (size_t)V);
  double *q = (double *)malloc(sizeof(double) * (size_t)V);
  naive_pair *s = (naive_pair *)malloc(sizeof(naive_pair) * (size_t)V);
  int *count = (int *)calloc((size_t)V, sizeof(int));
  char *inprompt = (char *)calloc((size_t)V, 1);
  int i, j, hf = p->profile == MS_PROFILE_HF, sg = p->profile == MS_PROFILE_SGLANG, stage, rc = 0, k_eff;
  int mtk = hf && p->min_tokens_to_keep > 1 ? p->min_tokens_to_keep : 1; /* HF's min_tokens_to_keep */
  /* pointwise stages: 0 mask, 1 min_tokens, 2 bias, 3 penalties */
  static const int order_vllm[4] = {0, 1, 2, 3}, order_hf[4] = {2, 3, 1, 0}, order_sg[4] = {3, 1, 0, 2};
  const int *order = hf ? order_hf : sg ? order_sg : order_vllm;
  double T;
  for (i = 0; i < V; i++) l[i] = x[i];
  for (i = 0; i < n_prompt; i++) inprompt[prompt[i]] = 1;
  for (i = 0; i < n_output; i++) count[output[i]]++;
  for (stage = 0; stage < 4; stage++) {
    int what = order[stage];
    if (what == 0) {
      if (p->allowed_ids) {
        char *ok = (char *)calloc((size_t)V, 1);
        for (i = 0; i < p->n_allowed_ids; i++) ok[p->allowed_ids[i]] = 1;
        for (i = 0; i < V; i++) if (!ok[i]) l[i] = -INFINITY;
        free(ok);
      }
      if (p->token_bitmask) for (i = 0; i < V; i++) if (!((p->token_bitmask[i / 32] >> (i % 32)) & 1u)) l[i] = -INFINITY;
      for (i = 0; i < p->n_banned_ids; i++) l[p->banned_ids[i]] = -INFINITY;
    } else if (what == 1) {
      if (n_output < p->min_tokens) {
        if (p->eos_token_id >= 0) l[p->eos_token_id] = -INFINITY;
        for (i = 0; i < p->n_stop_token_ids; i++) l[p->stop_token_ids[i]] = -INFINITY;
      }
    } else if (what == 2) {
      for (i = 0; i < p->n_logit_bias; i++) {
        double b = p->logit_bias[i].bias;
        if (!hf && !sg) { if (b > 100) b = 100; if (b < -100) b = -100; }
        l[p->logit_bias[i].token] = (float)(l[p->logit_bias[i].token] + b);
      }
    } else {
      for (i = 0; i < V; i++) {
        if (p->repetition_penalty != 1.0f && ((inprompt[i] && !sg) || count[i] > 0))
          l[i] = l[i] > 0 ? (hf || sg ? (float)(l[i] / p->repetition_penalty) : (float)(l[i] * (1.0f / p->repetition_penalty)))
                          : (float)(l[i] * p->repetition_penalty);
        if (count[i] > 0) l[i] = (float)((float)(l[i] - (double)p->frequency_penalty * count[i]) - p->presence_penalty);
      }
    }
  }
  for (i = 0; i < V; i++) if (l[i] > -INFINITY) break;
  if (i == V) { rc = -1; goto out; }
  if (!(p->temperature > 0.0f) || (sg && p->temperature < 1e-6f)) {
    int best = 0;
    for (i = 1; i < V; i++) if (l[i] > l[best]) best = i;
    for (i = 0; i < V; i++) probs[i] = i == best ? 1.0f : 0.0f;
    goto out;
  }
  T = p->temperature;
  if (!hf && T < 0.01) T = 0.01;
  for (i = 0; i < V; i++) l[i] /= T;
  if (sg) {
    /* SGLang (PyTorch sampler): top-k, top-p and min-p on the same
       un-renormalised softmax, sorted by value (ties by lower id): zero
       ranks >= k, zero where the mass before the position > top_p, zero
       p < min_p * p_max; renormalise */
    double cum = 0.0, pmax;
    naive_softmax(l, V, q);
    for (i = 0; i < V; i++) { s[i].v = l[i]; s[i].id = i; }
    qsort(s, (size_t)V, sizeof *s, naive_cmp_desc);
    pmax = q[s[0].id];
    for (i = 0; i < V; i++) {
      int id = s[i].id, drop = 0;
      if (p->top_k > 0 && p->top_k < V && i >= p->top_k) drop = 1;
      if (p->top_p < 1.0f && cum > p->top_p) drop = 1;
      if (p->min_p > 0 && q[id] < p->min_p * pmax) drop = 1;
      cum += q[id];
      if (drop) l[id] = -INFINITY;
    }
    naive_softmax(l, V, q);
    for (i = 0; i < V; i++) probs[i] = (float)q[i];
    goto out;
  }
  for (stage = 0; stage < 3; stage++) {
    /* vLLM: min_p, top_k, top_p; HF: top_k, top_p, min_p */
    int what = hf ? (stage == 0 ? 1 : stage == 1 ? 2 : 0) : stage;
    if (what == 0 && p->min_p > 0) {
      double mx = 0, keep_v = INFINITY;
      naive_softmax(l, V, q);
      for (i = 0; i < V; i++) if (q[i] > mx) mx = q[i];
      if (mtk > 1) keep_v = naive_kth_largest(l, V, mtk, s); /* HF: the first min_tokens_to_keep by logit stay */
      for (i = 0; i < V; i++) if (q[i] < p->min_p * mx && !(l[i] >= keep_v)) l[i] = -INFINITY;
    } else if (what == 1 && p->top_k > 0 && (k_eff = p->top_k > mtk ? p->top_k : mtk) < V) {
      double kth = naive_kth_largest(l, V, k_eff, s);
      for (i = 0; i < V; i++) if (l[i] < kth) l[i] = -INFINITY;
    } else if (what == 2 && p->top_p < 1.0f) {
      double above = 0;
      naive_softmax(l, V, q);
      for (i = 0; i < V; i++) { s[i].v = l[i]; s[i].id = i; }
      qsort(s, (size_t)V, sizeof *s, naive_cmp_desc);
      for (i = 0; i < V; ) {
        double g = 0;
        int keep = i < mtk || above < p->top_p; /* mtk >= 1: the first group always stays */
        for (j = i; j < V && s[j].v == s[i].v; j++) g += q[s[j].id];
        if (!keep) for (; i < j; i++) l[s[i].id] = -INFINITY;
        above += g;
        i = j;
      }
    }
  }
  if (hf) naive_hf_catalogue(l, V, p, mtk, q, s);
  naive_softmax(l, V, q);
  for (i = 0; i < V; i++) probs[i] = (float)q[i];
out:
  free(l); free(q); free(s); free(count); free(inprompt);
  return rc;
}
#endif
