/* ms_score and ms_batch.tokens: a given token's logprob, rank and top
   list, for every profile and the samplers' paths (greedy, the full row,
   candidate lists, typical's band, mirostat), against
   - ms_sample's own output for the token it drew (the same bits),
   - ms_probs' final distribution (processed mode: log p, -inf and rank
     vocab where p = 0),
   - a double log_softmax of the raw row (raw mode). */
#include "mysample.h"
#include "testlib.h"
#include <stdlib.h>

#define V 600
#define NTOP 7

static uint64_t st = 0x51ed2701a3b4c5d6ull;
static double ru(void) { st ^= st << 13; st ^= st >> 7; st ^= st << 17; return ((double)(st >> 11) + 0.5) / 9007199254740992.0; }
static float rn(void) { return (float)(sqrt(-2 * log(ru())) * cos(6.283185307179586 * ru())); }
/* bfloat16's rounding (ties of equal logits, as a model's upcast output) */
static float bf16(float x) { uint32_t u; memcpy(&u, &x, 4); u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u; memcpy(&x, &u, 4); return x; }

static ms_sampler *sampler(int32_t workers) {
  ms_sampler_desc d; ms_sampler *s = NULL;
  memset(&d, 0, sizeof d); d.max_vocab = V; d.n_workers = workers; d.use_builtin_pool = workers > 1;
  return ms_sampler_create(&s, &d) == MS_OK ? s : NULL;
}

/* the rows: N(0, 1), N(0, 3) rounded to bfloat16, and a peaked one */
static void make_row(float *x, int kind) {
  int i;
  for (i = 0; i < V; i++) {
    float v = rn();
    x[i] = kind == 0 ? v : kind == 1 ? bf16(3.0f * v) : 0.5f * v;
  }
  if (kind == 2) { x[17] = 9.0f; x[401] = 8.5f; x[3] = 8.0f; }
}

static const int32_t banned[3] = {5, 17, 250};
static const int32_t allowed[40] = {0, 3, 5, 8, 17, 21, 30, 44, 50, 61, 77, 80, 99, 101, 120, 133, 150, 170, 199, 200,
                                    230, 250, 260, 290, 301, 333, 350, 380, 401, 420, 444, 450, 480, 500, 520, 540, 560, 580, 590, 599};
static const ms_bias bias[3] = {{3, 2.5f}, {77, -100.0f}, {401, 1.0f}};

/* Config c of the list (0 when past its end), for profile prof. */
static int config(int c, ms_profile prof, ms_params *p, int *with_seq) {
  *p = ms_params_profile_default(prof);
  p->seed = 1234 + (uint64_t)c; p->has_seed = 1;
  p->max_logprobs = -1;
  *with_seq = 0;
  switch (c) {
    case 0: p->temperature = 0.0f; break;                                   /* greedy */
    case 1: p->temperature = 0.8f; p->top_k = 0; p->top_p = 1.0f; p->min_p = 0.0f; break;   /* the full row, no filter */
    case 2: p->top_k = 5; p->top_p = 1.0f; p->min_p = 0.0f; break;          /* a short candidate list */
    case 3: p->top_k = 300; p->top_p = 1.0f; p->min_p = 0.0f; break;        /* a long one */
    case 4: p->top_k = 0; p->top_p = 0.9f; p->min_p = 0.0f; break;          /* top-p on the whole row */
    case 5: p->top_k = 0; p->top_p = 1.0f; p->min_p = 0.1f; break;          /* min-p */
    case 6: p->top_k = 50; p->top_p = 0.95f; p->min_p = 0.05f; p->temperature = 0.7f; break;
    case 7: /* masks, bias and penalties over a sequence */
      p->banned_ids = banned; p->n_banned_ids = 3;
      p->logit_bias = bias; p->n_logit_bias = 3;
      p->repetition_penalty = 1.3f;
      if (prof != MS_PROFILE_HF) { p->frequency_penalty = 0.5f; p->presence_penalty = 0.4f; }
      p->top_p = 0.8f;
      *with_seq = 1;
      break;
    case 8: p->allowed_ids = allowed; p->n_allowed_ids = 40; p->top_k = 0; p->top_p = 1.0f; p->min_p = 0.0f; break;
    case 9: p->temperature = 0.0f; p->banned_ids = banned; p->n_banned_ids = 3; break;   /* greedy, masked */
    default: break;
  }
  if (c <= 9) return 1;
  /* the profiles' own samplers */
  switch (prof) {
    case MS_PROFILE_HF:
      if (c == 10) { p->typical_p = 0.9f; return 1; }
      if (c == 11) { p->epsilon_cutoff = 0.002f; p->top_k = 0; return 1; }
      if (c == 12) { p->eta_cutoff = 0.002f; p->top_k = 0; return 1; }
      if (c == 13) { p->typical_p = 0.5f; p->top_k = 0; p->min_tokens_to_keep = 4; return 1; }
      return 0;
    case MS_PROFILE_LLAMACPP:
      if (c == 10) { p->typical_p = 0.9f; p->top_k = 0; return 1; }               /* typical's band */
      if (c == 11) { p->typical_p = 0.9f; p->top_k = 0; p->samplers = "yk"; p->top_k = 20; return 1; }
      if (c == 12) { p->mirostat = 1; p->temperature = 0.9f; *with_seq = 1; return 1; }
      if (c == 13) { p->mirostat = 2; p->temperature = 0.9f; *with_seq = 1; return 1; }
      if (c == 14) { p->xtc_probability = 1.0f; p->xtc_threshold = 0.02f; return 1; }
      if (c == 15) { p->top_n_sigma = 1.0f; return 1; }
      if (c == 16) { p->samplers = "pmt"; p->top_k = 0; return 1; }
      if (c == 17) { p->samplers = "t"; return 1; }
      if (c == 18) { p->dynatemp_range = 0.5f; return 1; }
      if (c == 19) { p->dry_multiplier = 0.8f; p->penalty_last_n = 64; p->repetition_penalty = 1.2f; *with_seq = 1; return 1; }
      return 0;
    default: return 0;
  }
}

/* out == ms_sample's output, field by field (the top list's bits too) */
static int same_output(const ms_output *a, const ms_output *b) {
  int i;
  if (a->token != b->token || a->rank != b->rank || a->n_top != b->n_top || a->greedy != b->greedy) return 0;
  if (memcmp(&a->logprob, &b->logprob, 4) != 0) return 0;
  if (a->seed != b->seed || a->position != b->position) return 0;
  if (!(a->mirostat_mu == b->mirostat_mu || (a->mirostat_mu != a->mirostat_mu && b->mirostat_mu != b->mirostat_mu))) return 0;
  for (i = 0; i < a->n_top; i++)
    if (a->top[i].token != b->top[i].token || memcmp(&a->top[i].logprob, &b->top[i].logprob, 4) != 0) return 0;
  return 1;
}

/* Every token of every config, profile, row kind and mode. */
TEST(test_score_against_sample_and_probs) {
  static float x[V], probs[V], lp[V];
  static ms_logprob top_s[NTOP], top_c[NTOP];
  static int32_t ranks[V];
  ms_sampler *s = sampler(1);
  ms_seq *q = NULL;
  const int32_t prompt[6] = {3, 17, 3, 401, 99, 17};
  int prof, c, kind, mode, t, configs = 0, dropped = 0, kept = 0;
  CHECK(s != NULL && ms_seq_create(&q, 64) == MS_OK);
  if (!s || !q) return;
  for (prof = 0; prof < MS__PROFILE_COUNT_; prof++) {
    for (c = 0; c < 32; c++) {
      ms_params p;
      int with_seq;
      if (!config(c, (ms_profile)prof, &p, &with_seq)) break;
      for (kind = 0; kind < 3; kind++) {
        make_row(x, kind);
        for (mode = 0; mode < 2; mode++) {
          ms_output os, oc;
          const ms_seq *seq = NULL;
          ms_result rs;
          double z = 0.0, mx = -INFINITY;
          int greedy_row;
          p.logprobs = NTOP;
          p.logprobs_mode = mode ? MS_LOGPROBS_PROCESSED : MS_LOGPROBS_RAW;
          if (with_seq) {
            CHECK(ms_seq_reset(q, prompt, 6, V, &p, 0) == MS_OK);
            ms_seq_accept(q, 401); ms_seq_accept(q, 3);
            seq = q;
          }
          configs++;
          memset(&os, 0, sizeof os); memset(&oc, 0, sizeof oc);
          os.top = top_s; os.top_capacity = NTOP; oc.top = top_c; oc.top_capacity = NTOP;
          rs = ms_sample(s, x, V, &p, seq, &os);
          CHECK_MSG(rs == MS_OK, "profile %d config %d kind %d: %s", prof, c, kind, ms_result_str(rs));
          if (rs != MS_OK) continue;
          /* (a) the drawn token scores as it was reported */
          CHECK_MSG(ms_score(s, x, V, &p, seq, os.token, &oc) == MS_OK && same_output(&os, &oc),
                    "profile %d config %d kind %d mode %d: token %d lp %.9g/%.9g rank %d/%d n_top %d/%d mu %g/%g", prof, c,
                    kind, mode, os.token, os.logprob, oc.logprob, os.rank, oc.rank, os.n_top, oc.n_top, os.mirostat_mu,
                    oc.mirostat_mu);
          /* every token */
          greedy_row = os.greedy;
          CHECK(ms_probs(s, x, V, &p, seq, probs) == MS_OK);
          for (t = 0; t < V; t++) mx = x[t] > mx ? x[t] : mx;
          for (t = 0; t < V; t++) z += exp((double)x[t] - mx);
          for (t = 0; t < V; t++) {
            if (ms_score(s, x, V, &p, seq, t, &oc) != MS_OK || oc.token != t) { CHECK_MSG(0, "score %d", t); break; }
            lp[t] = oc.logprob; ranks[t] = oc.rank;
            if (mode == 0) {
              /* raw: the row's log_softmax, whatever the params drop */
              CHECK_NEAR(oc.logprob, (double)x[t] - mx - log(z), 2e-5);
            } else if (!greedy_row) {
              /* processed: log of the final distribution */
              if (probs[t] > 0.0f) { CHECK_NEAR(oc.logprob, log((double)probs[t]), 2e-5 + 1e-6 * fabs(log((double)probs[t]))); kept++; }
              else {
                CHECK_MSG(oc.logprob == -INFINITY && oc.rank == V, "profile %d config %d kind %d: dropped %d: %g rank %d",
                          prof, c, kind, t, oc.logprob, oc.rank);
                dropped++;
              }
            }
            /* the top list is the row's whatever the token */
            CHECK(oc.n_top == os.n_top && (oc.n_top == 0 || memcmp(oc.top, os.top, sizeof(ms_logprob) * (size_t)oc.n_top) == 0));
          }
          /* the top list: the N largest raw logits (raw), or the N likeliest
             kept tokens (processed), by value, ties by id */
          if (mode == 0 || !greedy_row) {
            int32_t want[NTOP], nw = 0, u, j;
            float wv[NTOP];
            for (u = 0; u < V; u++) {
              float v = mode == 0 ? x[u] : probs[u];
              if (mode == 1 && !(v > 0.0f)) continue;
              for (j = nw < NTOP ? nw++ : NTOP; j > 0 && (mode == 0 ? x[want[j - 1]] : probs[want[j - 1]]) < v; j--) {
                if (j < NTOP) { want[j] = want[j - 1]; wv[j] = wv[j - 1]; }
              }
              if (j < NTOP) { want[j] = u; wv[j] = v; }
            }
            CHECK_MSG(os.n_top == nw, "profile %d config %d kind %d mode %d: n_top %d, want %d", prof, c, kind, mode, os.n_top, nw);
            for (j = 0; j < nw && j < os.n_top; j++) {
              double e = mode == 0 ? (double)wv[j] - mx - log(z) : log((double)wv[j]);
              CHECK_MSG(fabs(os.top[j].logprob - e) <= 2e-5 + 1e-6 * fabs(e) &&
                        (os.top[j].token == want[j] || (mode == 0 ? x[os.top[j].token] : probs[os.top[j].token]) == wv[j]),
                        "profile %d config %d kind %d mode %d: top %d: %d %.9g, want %d %.9g", prof, c, kind, mode, j,
                        os.top[j].token, os.top[j].logprob, want[j], e);
            }
          }
          /* ranks: the logprobs >= the token's, itself and its ties (up to
             distinct values a float logprob rounds together) */
          for (t = 0; t < V; t++) {
            int u, ge = 0, gt = 0;
            if (lp[t] == -INFINITY) { CHECK_EQ_INT(ranks[t], V); continue; }
            for (u = 0; u < V; u++) { ge += lp[u] >= lp[t]; gt += lp[u] > lp[t]; }
            CHECK_MSG(ranks[t] > gt && ranks[t] <= ge, "profile %d config %d kind %d mode %d: rank of %d: %d not in (%d, %d]",
                      prof, c, kind, mode, t, ranks[t], gt, ge);
          }
        }
      }
    }
  }
  /* the paths ran, and the processed checks met both cases */
  CHECK(configs > 200 && kept > 1000 && dropped > 10000);
  ms_seq_destroy(q);
  ms_sampler_destroy(s);
}

/* Mirostat: mu after a scored token is the draw's rule for it; a token
   the list drops leaves it NaN (ms_seq_accept_output keeps mu). */
TEST(test_score_mirostat_mu) {
  static float x[V];
  ms_sampler *s = sampler(1);
  ms_seq *q = NULL;
  ms_params p = ms_params_profile_default(MS_PROFILE_LLAMACPP);
  ms_output o;
  int v;
  CHECK(s != NULL && ms_seq_create(&q, 16) == MS_OK);
  if (!s || !q) return;
  make_row(x, 2);
  for (v = 1; v <= 2; v++) {
    float mu0;
    p.mirostat = v; p.temperature = 1.0f; p.logprobs = 0; p.logprobs_mode = MS_LOGPROBS_PROCESSED;
    CHECK(ms_seq_reset(q, NULL, 0, V, &p, 0) == MS_OK);
    memset(&o, 0, sizeof o);
    /* the top token is always in the list */
    CHECK(ms_score(s, x, V, &p, q, 17, &o) == MS_OK && o.mirostat_mu == o.mirostat_mu && o.logprob > -INFINITY);
    CHECK(ms_seq_accept_output(q, &o) == MS_OK);
    mu0 = ms_seq_mirostat_mu(q);
    CHECK(mu0 == o.mirostat_mu);
    /* a token far in the tail is not */
    x[250] = -30.0f;
    CHECK(ms_score(s, x, V, &p, q, 250, &o) == MS_OK && o.logprob == -INFINITY && o.rank == V && o.mirostat_mu != o.mirostat_mu);
    CHECK(ms_seq_accept_output(q, &o) == MS_OK && ms_seq_mirostat_mu(q) == mu0);
  }
  ms_seq_destroy(q);
  ms_sampler_destroy(s);
}

/* Errors, logprobs -1, and the seed fields. */
TEST(test_score_errors) {
  static float x[V];
  ms_sampler *s = sampler(1);
  ms_params p = ms_params_default();
  ms_output o;
  int i;
  if (!s) { CHECK(0); return; }
  make_row(x, 0);
  memset(&o, 0, sizeof o);
  CHECK(ms_score(s, x, V, &p, NULL, -1, &o) == MS_ERR_TOKEN_OUT_OF_RANGE && o.token == -1);
  CHECK(ms_score(s, x, V, &p, NULL, V, &o) == MS_ERR_TOKEN_OUT_OF_RANGE && o.token == -1);
  CHECK(ms_score(s, x, V, &p, NULL, 3, NULL) == MS_ERR_NULL_ARGUMENT);
  CHECK(ms_score(NULL, x, V, &p, NULL, 3, &o) == MS_ERR_NULL_ARGUMENT && o.token == -1);
  CHECK(ms_score(s, x, V + 1, &p, NULL, 3, &o) == MS_ERR_BAD_VOCAB);
  p.top_p = 0.0f;
  CHECK(ms_score(s, x, V, &p, NULL, 3, &o) == MS_ERR_INVALID_PARAM);
  p = ms_params_default();
  x[9] = NAN;
  CHECK(ms_score(s, x, V, &p, NULL, 3, &o) == MS_ERR_NAN_LOGIT && o.token == -1);
  make_row(x, 0);
  /* logprobs -1: the token's logprob and rank all the same, no list */
  p.logprobs = -1; p.seed = 77; p.has_seed = 1;
  o.rank = 0; o.n_top = 5;
  CHECK(ms_score(s, x, V, &p, NULL, 3, &o) == MS_OK && o.token == 3 && o.rank >= 1 && o.n_top == 0 && o.logprob < 0.0f);
  CHECK(o.seed == 77 && o.position == 0 && o.greedy == 0);
  {
    double mx = -INFINITY, z = 0.0;
    for (i = 0; i < V; i++) mx = x[i] > mx ? x[i] : mx;
    for (i = 0; i < V; i++) z += exp((double)x[i] - mx);
    CHECK_NEAR(o.logprob, (double)x[3] - mx - log(z), 2e-5);
  }
  ms_sampler_destroy(s);
}

/* ms_batch.tokens: every row scored as ms_score scores it, on 2 workers,
   a bad token failing its row only. */
TEST(test_score_batch) {
  enum { B = 24 };
  static float x[B * V];
  static ms_logprob tops[B][NTOP], top1[NTOP];
  ms_sampler *s2 = sampler(2), *s1 = sampler(1);
  ms_params p[2];
  const ms_params *pp[B];
  ms_output out[B], o1;
  ms_result rr[B];
  int32_t tok[B];
  ms_batch b;
  int r;
  if (!s1 || !s2) { CHECK(0); return; }
  p[0] = ms_params_default(); p[0].top_p = 0.9f; p[0].logprobs = NTOP; p[0].logprobs_mode = MS_LOGPROBS_PROCESSED;
  p[1] = ms_params_default(); p[1].logprobs = 3;
  for (r = 0; r < B; r++) {
    make_row(x + r * V, r % 3);
    pp[r] = &p[r % 2];
    tok[r] = (r * 37) % V;
    memset(&out[r], 0, sizeof out[r]);
    out[r].top = tops[r]; out[r].top_capacity = NTOP;
  }
  tok[5] = V;   /* out of range: that row fails */
  memset(&b, 0, sizeof b);
  b.n_rows = B; b.vocab = V; b.logits = x; b.row_stride = V; b.params = pp; b.out = out; b.row_results = rr; b.tokens = tok;
  CHECK(ms_sample_batch(s2, &b) == MS_ERR_TOKEN_OUT_OF_RANGE);
  for (r = 0; r < B; r++) {
    ms_result rc;
    memset(&o1, 0, sizeof o1); o1.top = top1; o1.top_capacity = NTOP;
    rc = ms_score(s1, x + r * V, V, pp[r], NULL, tok[r], &o1);
    CHECK_EQ_INT(rr[r], rc);
    if (r == 5) { CHECK(rc == MS_ERR_TOKEN_OUT_OF_RANGE && out[r].token == -1); continue; }
    CHECK_MSG(rc == MS_OK && same_output(&out[r], &o1), "row %d", r);
  }
  ms_sampler_destroy(s1);
  ms_sampler_destroy(s2);
}

int main(void) {
  RUN(test_score_errors);
  RUN(test_score_mirostat_mu);
  RUN(test_score_batch);
  RUN(test_score_against_sample_and_probs);
  return t_done();
}
