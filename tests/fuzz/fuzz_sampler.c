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

#include "fuzz_params.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static ms_sampler *s;
  rd r = {data, size};
  int32_t V = 1 + (int32_t)(take(&r, 2) % 300), i;
  static float logits[MAXV], probs[MAXV];
  ms_params p = ms_params_default();
  static fuzz_lists L;
  int32_t prompt[16], output[16];
  int32_t n_prompt, n_output;
  ms_seq *q = NULL;
  ms_output out; ms_logprob top[8];
  ms_result rv, rs, rp;
  char msg[256];
  if (!s) { ms_sampler_desc d; memset(&d, 0, sizeof d); d.max_vocab = MAXV; if (ms_sampler_create(&s, &d) != MS_OK) FAIL(); }
  fuzz_take_params(&r, V, &p, &L);
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
    /* ms_score: the drawn token scores as ms_sample reported it (logprobs
       on), and any token scores on the rows that sample */
    ms_output sc;
    ms_logprob top2[8];
    int32_t tok = (int32_t)(take(&r, 2) % (uint32_t)V);
    memset(&sc, 0, sizeof sc); sc.top = top2; sc.top_capacity = 8;
    if (rs == MS_OK && p.logprobs >= 0) {
      if (ms_score(s, logits, V, &p, q, out.token, &sc) != MS_OK) FAIL();
      if (sc.token != out.token || sc.rank != out.rank || sc.n_top != out.n_top || memcmp(&sc.logprob, &out.logprob, 4) != 0) FAIL();
      if (sc.n_top > 0 && memcmp(sc.top, out.top, sizeof(ms_logprob) * (size_t)sc.n_top) != 0) FAIL();
    }
    if (ms_score(s, logits, V, &p, q, tok, &sc) != rs) FAIL();
    if (rs == MS_OK) {
      if (sc.token != tok || sc.rank < 1 || sc.rank > V) FAIL();
      if (!(sc.logprob <= 1e-4f) && !(sc.logprob != sc.logprob)) FAIL();
      if (sc.logprob == -INFINITY && sc.rank != V && p.logprobs_mode == MS_LOGPROBS_PROCESSED) FAIL();
    } else if (sc.token != -1) FAIL();
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
