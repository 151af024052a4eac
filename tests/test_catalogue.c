/* The custom logits hook, the reasoning budget, and the llama.cpp
   penalty window and DRY checked against values worked out by hand from
   llama.cpp's rules (docs/ENGINES.md 1.3). */
#include "mysample.h"
#include "testlib.h"
#include <stdlib.h>

#define V 16
static ms_sampler *g_s;
static float g_x[V], g_probs[V];

static void setup_row(void) {
  int i;
  for (i = 0; i < V; i++) g_x[i] = 0.25f * (float)((i * 7) % V) - 1.0f;
}

/* -- the hook --------------------------------------------------------------- */
typedef struct hook_ctx {
  int calls;
  float seen[V];
  int32_t ban;
  float add;
  int32_t add_to;
  ms_result ret;
  int write_nan;
} hook_ctx;

static ms_result hook_fn(void *user, float *logits, int32_t vocab, const ms_seq *seq, const ms_params *params) {
  hook_ctx *h = (hook_ctx *)user;
  int i;
  (void)seq; (void)params;
  h->calls++;
  for (i = 0; i < vocab && i < V; i++) h->seen[i] = logits[i];
  if (h->ban >= 0) logits[h->ban] = -INFINITY;
  if (h->add_to >= 0) logits[h->add_to] += h->add;
  if (h->write_nan) logits[3] = NAN;
  return h->ret;
}

static void hook_init(hook_ctx *h) {
  memset(h, 0, sizeof *h);
  h->ban = -1; h->add_to = -1; h->ret = MS_OK;
}

TEST(test_hook_stages) {
  hook_ctx h;
  ms_params p = ms_params_default();
  ms_bias b = { 5, 2.0f };
  float ref[V];
  int i;
  setup_row();
  p.logit_bias = &b; p.n_logit_bias = 1;
  p.hook = hook_fn; p.hook_user = &h;
  /* FIRST sees the caller's logits, before the bias */
  hook_init(&h); p.hook_stage = MS_HOOK_FIRST; h.ban = 2;
  CHECK(ms_probs(g_s, g_x, V, &p, NULL, g_probs) == MS_OK);
  CHECK(h.calls == 1 && h.seen[5] == g_x[5] && g_probs[2] == 0.0f);
  /* BEFORE_SAMPLING sees them after the bias */
  hook_init(&h); p.hook_stage = MS_HOOK_BEFORE_SAMPLING; h.add_to = 7; h.add = 1.5f;
  CHECK(ms_probs(g_s, g_x, V, &p, NULL, g_probs) == MS_OK);
  CHECK(h.calls == 1 && h.seen[5] == g_x[5] + 2.0f && h.seen[4] == g_x[4]);
  {
    /* the result is the softmax of the hooked row */
    double z = 0.0;
    for (i = 0; i < V; i++) { ref[i] = g_x[i] + (i == 5 ? 2.0f : 0.0f) + (i == 7 ? 1.5f : 0.0f); z += exp((double)ref[i]); }
    for (i = 0; i < V; i++) CHECK_NEAR(g_probs[i], exp((double)ref[i]) / z, 1e-6);
  }
  /* the caller's row is never written */
  setup_row();
  { float y[V]; memcpy(y, g_x, sizeof y); hook_init(&h); h.ban = 1; ms_probs(g_s, g_x, V, &p, NULL, g_probs); CHECK(!memcmp(y, g_x, sizeof y)); }
  /* the hook's error fails the row; NaN written by it is caught */
  hook_init(&h); h.ret = MS_ERR_CALLBACK;
  { ms_output o; memset(&o, 0, sizeof o); CHECK(ms_sample(g_s, g_x, V, &p, NULL, &o) == MS_ERR_CALLBACK && o.token == -1); }
  {
    /* in a batch without row_results: the call returns the first failing
       row's code, each row's hook having run once (the failing row was
       once run a second time for its code) */
    hook_ctx h2;
    ms_params q = p;
    const ms_params *pp[3];
    ms_output o[3];
    float rows[3 * V];
    ms_batch bt;
    for (i = 0; i < 3 * V; i++) rows[i] = g_x[i % V];
    hook_init(&h); hook_init(&h2); h2.ret = MS_ERR_CALLBACK;
    q.hook_user = &h2;
    pp[0] = &p; pp[1] = &q; pp[2] = &p;
    memset(o, 0, sizeof o);
    memset(&bt, 0, sizeof bt);
    bt.n_rows = 3; bt.vocab = V; bt.logits = rows; bt.row_stride = V; bt.params = pp; bt.out = o;
    CHECK_EQ_INT(ms_sample_batch(g_s, &bt), MS_ERR_CALLBACK);
    CHECK_EQ_INT(h.calls, 2);
    CHECK_EQ_INT(h2.calls, 1);
    CHECK(o[0].token >= 0 && o[1].token == -1 && o[2].token >= 0);
  }
  hook_init(&h); h.write_nan = 1;
  CHECK(ms_probs(g_s, g_x, V, &p, NULL, g_probs) == MS_ERR_NAN_LOGIT);
  /* greedy rows and the other profiles run it too */
  hook_init(&h); h.ban = 0; p.temperature = 0.0f;
  {
    int32_t am = 0;
    ms_output o; memset(&o, 0, sizeof o);
    for (i = 1; i < V; i++) if (g_x[i] + (i == 5 ? 2.0f : 0.0f) > g_x[am] + (am == 5 ? 2.0f : 0.0f)) am = i;
    h.ban = am;
    CHECK(ms_sample(g_s, g_x, V, &p, NULL, &o) == MS_OK && o.token != am && h.calls == 1);
  }
  {
    int prof;
    for (prof = 0; prof < 4; prof++) {
      ms_params q = ms_params_profile_default((ms_profile)prof);
      hook_init(&h); h.ban = 9;
      q.hook = hook_fn; q.hook_user = &h; q.hook_stage = MS_HOOK_BEFORE_SAMPLING; q.top_k = 0; q.min_p = 0.0f; q.top_p = 1.0f;
      CHECK(ms_probs(g_s, g_x, V, &q, NULL, g_probs) == MS_OK && h.calls == 1 && g_probs[9] == 0.0f);
    }
  }
  /* validation */
  {
    char msg[200];
    ms_params q = ms_params_default();
    q.hook_stage = MS_HOOK_FIRST;
    CHECK(ms_params_validate(&q, V, msg, sizeof msg) == MS_ERR_NULL_ARGUMENT);
    q.hook = hook_fn; q.hook_stage = (ms_hook_stage)9;
    CHECK(ms_params_validate(&q, V, msg, sizeof msg) == MS_ERR_INVALID_PARAM);
  }
}

/* -- the reasoning budget ------------------------------------------------------ */
TEST(test_budget_forces_end_sequence) {
  ms_seq *q = NULL, *fork = NULL;
  ms_params p = ms_params_default();
  const int32_t start[1] = { 12 }, end[2] = { 13, 14 };
  const int32_t prompt[3] = { 1, 2, 12 }; /* the template opened the span */
  int32_t rem = -1;
  ms_output o;
  int i;
  setup_row();
  p.budget_start = start; p.n_budget_start = 1; p.budget_end = end; p.n_budget_end = 2; p.budget_tokens = 2;
  p.has_seed = 1; p.seed = 3;
  CHECK(ms_params_validate(&p, V, NULL, 0) == MS_OK);
  CHECK(ms_seq_create(&q, 64) == MS_OK && ms_seq_create(&fork, 64) == MS_OK);
  CHECK(ms_seq_reset(q, prompt, 3, V, &p, 0) == MS_OK);
  CHECK(ms_seq_budget_state(q, &rem) == MS_BUDGET_COUNTING && rem == 2);
  ms_seq_accept(q, 4);
  CHECK(ms_seq_budget_state(q, &rem) == MS_BUDGET_COUNTING && rem == 1);
  ms_seq_accept(q, 5);
  CHECK(ms_seq_budget_state(q, &rem) == MS_BUDGET_FORCING);
  /* a clone carries the state */
  CHECK(ms_seq_copy(fork, q) == MS_OK && ms_seq_budget_state(fork, NULL) == MS_BUDGET_FORCING);
  memset(&o, 0, sizeof o);
  CHECK(ms_sample(g_s, g_x, V, &p, q, &o) == MS_OK && o.token == 13);
  CHECK(ms_probs(g_s, g_x, V, &p, q, g_probs) == MS_OK && g_probs[13] == 1.0f);
  ms_seq_accept(q, 13);
  CHECK(ms_sample(g_s, g_x, V, &p, q, &o) == MS_OK && o.token == 14);
  ms_seq_accept(q, 14);
  CHECK(ms_seq_budget_state(q, NULL) == MS_BUDGET_DONE);
  /* free again afterwards: the draw spreads over the row */
  CHECK(ms_probs(g_s, g_x, V, &p, q, g_probs) == MS_OK && g_probs[13] < 1.0f && g_probs[0] > 0.0f);
  /* the fork is still forcing, separately, also inside one batch */
  {
    const ms_params *pp[2] = { &p, &p };
    const ms_seq *ss[2] = { q, fork };
    ms_output outs[2];
    float rows[2 * V];
    ms_batch b;
    memcpy(rows, g_x, sizeof g_x); memcpy(rows + V, g_x, sizeof g_x);
    memset(&b, 0, sizeof b); memset(outs, 0, sizeof outs);
    b.n_rows = 2; b.vocab = V; b.logits = rows; b.row_stride = V; b.params = pp; b.seqs = ss; b.out = outs;
    CHECK(ms_sample_batch(g_s, &b) == MS_OK && outs[1].token == 13);
  }
  /* the end sequence written by the model itself closes the span */
  CHECK(ms_seq_reset(q, prompt, 3, V, &p, 0) == MS_OK);
  ms_seq_accept(q, 13); ms_seq_accept(q, 14);
  CHECK(ms_seq_budget_state(q, NULL) == MS_BUDGET_DONE);
  /* budget 0 forces at once; reset without a budget clears it */
  p.budget_tokens = 0;
  CHECK(ms_seq_reset(q, prompt, 3, V, &p, 0) == MS_OK && ms_seq_budget_state(q, NULL) == MS_BUDGET_FORCING);
  CHECK(ms_seq_reset(q, prompt, 3, V, NULL, 0) == MS_OK && ms_seq_budget_state(q, NULL) == MS_BUDGET_IDLE);
  /* no span opened: nothing happens */
  p.budget_tokens = 1;
  CHECK(ms_seq_reset(q, prompt, 2, V, &p, 0) == MS_OK);
  for (i = 0; i < 5; i++) ms_seq_accept(q, 3);
  CHECK(ms_seq_budget_state(q, NULL) == MS_BUDGET_IDLE);
  ms_seq_destroy(q);
  ms_seq_destroy(fork);
}

/* -- llama.cpp penalties over a window -------------------------------------------- */
TEST(test_llamacpp_penalty_window) {
  ms_seq *q = NULL;
  ms_params p = ms_params_profile_default(MS_PROFILE_LLAMACPP);
  const int32_t hist[6] = { 3, 3, 4, 5, 3, 6 };
  float want[V];
  double z = 0.0;
  int i;
  setup_row();
  p.temperature = 1.0f; p.top_k = 0; p.top_p = 1.0f; p.min_p = 0.0f;
  p.repetition_penalty = 1.5f; p.frequency_penalty = 0.25f; p.presence_penalty = 0.5f;
  p.penalty_last_n = 3; /* the window is 5, 3, 6 */
  p.samplers = "et";
  CHECK(ms_seq_create(&q, 32) == MS_OK && ms_seq_reset(q, hist, 6, V, &p, 0) == MS_OK);
  for (i = 0; i < V; i++) {
    float l = g_x[i];
    int c = (i == 5 || i == 3 || i == 6) ? 1 : 0;
    if (c) { l = l <= 0.0f ? l * 1.5f : l / 1.5f; l -= (float)c * 0.25f + 0.5f; }
    want[i] = l; z += exp((double)l);
  }
  CHECK(ms_probs(g_s, g_x, V, &p, q, g_probs) == MS_OK);
  for (i = 0; i < V; i++) CHECK_NEAR(g_probs[i], exp((double)want[i]) / z, 1e-6);
  /* -1: the whole history, prompt included, counts (token 3 three times) */
  p.penalty_last_n = -1; z = 0.0;
  for (i = 0; i < V; i++) {
    float l = g_x[i];
    int c = i == 3 ? 3 : (i == 4 || i == 5 || i == 6) ? 1 : 0;
    if (c) { l = l <= 0.0f ? l * 1.5f : l / 1.5f; l -= (float)c * 0.25f + 0.5f; }
    want[i] = l; z += exp((double)l);
  }
  CHECK(ms_probs(g_s, g_x, V, &p, q, g_probs) == MS_OK);
  for (i = 0; i < V; i++) CHECK_NEAR(g_probs[i], exp((double)want[i]) / z, 1e-6);
  /* 0: off */
  p.penalty_last_n = 0; z = 0.0;
  for (i = 0; i < V; i++) z += exp((double)g_x[i]);
  CHECK(ms_probs(g_s, g_x, V, &p, q, g_probs) == MS_OK);
  for (i = 0; i < V; i++) CHECK_NEAR(g_probs[i], exp((double)g_x[i]) / z, 1e-6);
  ms_seq_destroy(q);
}

/* A masked id (or a -inf logit) in the penalty window stays -inf whatever
   the repetition penalty: llama.cpp accepts any r, and its arithmetic
   would turn -inf into +inf for r < 0 (the row then an error, or the
   banned token sampled) and into NaN for r = 0. The finite logits in the
   window take the penalty as llama.cpp computes it. */
TEST(test_llamacpp_penalty_keeps_masks) {
  static const float rs[3] = { -2.0f, 0.0f, -1e30f };
  ms_seq *q = NULL;
  ms_params p = ms_params_profile_default(MS_PROFILE_LLAMACPP);
  const int32_t hist[3] = { 3, 4, 5 };
  const int32_t banned[1] = { 3 };
  float x[V];
  int i, k;
  setup_row();
  memcpy(x, g_x, sizeof x);
  for (i = 0; i < V; i++) if (x[i] > 0.0f) x[i] = -x[i];   /* every logit <= 0: l * r */
  x[4] = -INFINITY;                                          /* the model's -inf, in the window too */
  p.temperature = 1.0f; p.top_k = 0; p.top_p = 1.0f; p.min_p = 0.0f;
  p.penalty_last_n = -1;
  p.samplers = "et";
  p.banned_ids = banned; p.n_banned_ids = 1;
  CHECK(ms_seq_create(&q, 32) == MS_OK && ms_seq_reset(q, hist, 3, V, &p, 0) == MS_OK);
  for (k = 0; k < 3; k++) {
    double z = 0.0, m = -INFINITY;
    float want[V];
    ms_output o;
    p.repetition_penalty = rs[k];
    for (i = 0; i < V; i++) {
      want[i] = i == 3 ? -INFINITY : i == 5 ? x[i] * rs[k] : x[i];   /* (id 5: -0.25 r) */
      if (want[i] > m) m = want[i];
    }
    for (i = 0; i < V; i++) z += exp((double)want[i] - m);
    CHECK_EQ_INT(ms_probs(g_s, x, V, &p, q, g_probs), MS_OK);
    for (i = 0; i < V; i++) CHECK_NEAR(g_probs[i], exp((double)want[i] - m) / z, 1e-6);
    memset(&o, 0, sizeof o);
    CHECK_EQ_INT(ms_sample(g_s, x, V, &p, q, &o), MS_OK);
    CHECK(o.token != 3 && o.token != 4);
  }
  ms_seq_destroy(q);
}

/* -- DRY ------------------------------------------------------------------------ */
TEST(test_llamacpp_dry_by_hand) {
  ms_seq *q = NULL;
  ms_params p = ms_params_profile_default(MS_PROFILE_LLAMACPP);
  /* history a b c x a b: the suffix "a b" (length 2) occurred before,
     followed by c, so c would extend a repeat of 2: penalty
     multiplier * base^(2 - allowed) with allowed 2 = multiplier.
     A breaker (x) between them stops nothing here because it is older
     than the suffix. */
  const int32_t hist[6] = { 1, 2, 3, 9, 1, 2 };
  const int32_t breaker[1] = { 9 }, blen[1] = { 1 };
  float want[V];
  double z = 0.0;
  int i;
  setup_row();
  p.temperature = 1.0f; p.top_k = 0; p.top_p = 1.0f; p.min_p = 0.0f; p.penalty_last_n = 0;
  p.dry_multiplier = 0.8f; p.dry_base = 1.75f; p.dry_allowed_length = 2;
  p.dry_breakers = breaker; p.dry_breakers_lens = blen; p.n_dry_breakers = 1;
  p.samplers = "dt";
  CHECK(ms_seq_create(&q, 32) == MS_OK && ms_seq_reset(q, hist, 6, V, &p, 0) == MS_OK);
  for (i = 0; i < V; i++) { want[i] = g_x[i] - (i == 3 ? 0.8f : 0.0f); z += exp((double)want[i]); }
  CHECK(ms_probs(g_s, g_x, V, &p, q, g_probs) == MS_OK);
  for (i = 0; i < V; i++) CHECK_NEAR(g_probs[i], exp((double)want[i]) / z, 1e-6);
  /* allowed length 1: "b" (1) -> c gets 0.8 * 1.75^(2-1) from "a b" */
  p.dry_allowed_length = 1; z = 0.0;
  for (i = 0; i < V; i++) { want[i] = g_x[i] - (i == 3 ? 0.8f * 1.75f : 0.0f); z += exp((double)want[i]); }
  CHECK(ms_probs(g_s, g_x, V, &p, q, g_probs) == MS_OK);
  for (i = 0; i < V; i++) CHECK_NEAR(g_probs[i], exp((double)want[i]) / z, 1e-6);
  /* a breaker inside the repeat caps its length: 9 2 3 7 9 2 3 repeats
     "9 2 3" (3 tokens, 7 follows); the breaker 9 two tokens back caps it
     at 2, so 7 pays multiplier * base^0 instead of base^1 */
  {
    const int32_t h2[7] = { 9, 2, 3, 7, 9, 2, 3 };
    int with;
    p.dry_allowed_length = 2;
    CHECK(ms_seq_reset(q, h2, 7, V, &p, 0) == MS_OK);
    for (with = 0; with < 2; with++) {
      p.n_dry_breakers = with;
      z = 0.0;
      for (i = 0; i < V; i++) { want[i] = g_x[i] - (i == 7 ? (with ? 0.8f : 0.8f * 1.75f) : 0.0f); z += exp((double)want[i]); }
      CHECK(ms_probs(g_s, g_x, V, &p, q, g_probs) == MS_OK);
      for (i = 0; i < V; i++) CHECK_NEAR(g_probs[i], exp((double)want[i]) / z, 1e-6);
    }
  }
  /* a window longer than the sampler's max_history is an error, not a
     silent cut */
  {
    ms_sampler *small = NULL;
    ms_sampler_desc d;
    memset(&d, 0, sizeof d);
    d.max_vocab = V; d.max_history = 4;
    CHECK(ms_sampler_create(&small, &d) == MS_OK);
    CHECK(ms_seq_reset(q, hist, 6, V, &p, 0) == MS_OK);
    CHECK(ms_probs(small, g_x, V, &p, q, g_probs) == MS_ERR_CAPACITY);
    p.dry_last_n = 4;
    CHECK(ms_probs(small, g_x, V, &p, q, g_probs) == MS_OK);
    ms_sampler_destroy(small);
  }
  ms_seq_destroy(q);
}

/* The llama.cpp chain with temperature last: top-p sees untempered
   probabilities (so T changes nothing about which tokens stay). */
TEST(test_llamacpp_temperature_last) {
  ms_params p = ms_params_profile_default(MS_PROFILE_LLAMACPP);
  float a[V], b[V];
  int i, na = 0, nb = 0;
  setup_row();
  p.top_k = 0; p.min_p = 0.0f; p.top_p = 0.6f; p.penalty_last_n = 0;
  p.temperature = 0.3f;
  CHECK(ms_probs(g_s, g_x, V, &p, NULL, a) == MS_OK);
  p.temperature = 3.0f;
  CHECK(ms_probs(g_s, g_x, V, &p, NULL, b) == MS_OK);
  for (i = 0; i < V; i++) { na += a[i] > 0.0f; nb += b[i] > 0.0f; CHECK((a[i] > 0.0f) == (b[i] > 0.0f)); }
  CHECK(na == nb && na > 1 && na < V);
  /* the vLLM profile applies T first: the kept sets differ */
  {
    ms_params q = ms_params_default();
    int n1 = 0, n2 = 0;
    q.top_p = 0.6f; q.temperature = 0.3f;
    CHECK(ms_probs(g_s, g_x, V, &q, NULL, a) == MS_OK);
    q.temperature = 1.9f;
    CHECK(ms_probs(g_s, g_x, V, &q, NULL, b) == MS_OK);
    for (i = 0; i < V; i++) { n1 += a[i] > 0.0f; n2 += b[i] > 0.0f; }
    CHECK(n1 < n2);
  }
  /* temperature 0: the argmax, and out->greedy says so */
  {
    ms_output o;
    int32_t am = 0;
    memset(&o, 0, sizeof o);
    p.temperature = 0.0f;
    for (i = 1; i < V; i++) if (g_x[i] > g_x[am]) am = i;
    CHECK(ms_sample(g_s, g_x, V, &p, NULL, &o) == MS_OK && o.token == am && o.greedy == 1);
  }
}

int main(void) {
  ms_sampler_desc d;
  memset(&d, 0, sizeof d);
  d.max_vocab = V;
  if (ms_sampler_create(&g_s, &d) != MS_OK) { printf("FAIL setup\n"); return 1; }
  RUN(test_hook_stages);
  RUN(test_budget_forces_end_sequence);
  RUN(test_llamacpp_penalty_window);
  RUN(test_llamacpp_penalty_keeps_masks);
  RUN(test_llamacpp_dry_by_hand);
  RUN(test_llamacpp_temperature_last);
  ms_sampler_destroy(g_s);
  return t_done();
}
