/* mysample probs | sample | logprobs --device cuda: the GPU side of the
   sampling commands. A batch of one row through ms_cuda_probs /
   ms_cuda_sample (mysample_cuda.h, implemented in cli_cuda.c): the row is
   uploaded, device slot 0 holds the sequence (prompt and output ids for
   penalties and min_tokens, and the draws with --accept), the results are
   copied back, and cli_sampling.c prints them as it prints the CPU's. The
   seed and positions come from the caller (the CPU sequence's), so both
   devices draw from the same Philox numbers. */
#include "cli.h"
#include "mysample_cuda.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ms_cli_gpu {
  ms_cuda *cu;
  int32_t vocab, top_cap;
  void *d_row, *d_probs, *d_tokens, *d_out, *d_top;
  void *d_ids;        /* prompt ids, then slots (zeros) and output ids */
  size_t ids_cap;     /* in int32 */
  ms_logprob *h_top;
};

void ms_cli_gpu_close(ms_cli_gpu *g) {
  if (!g) return;
  if (g->cu) {
    ms_cuda_free(g->cu, g->d_row); ms_cuda_free(g->cu, g->d_probs); ms_cuda_free(g->cu, g->d_tokens);
    ms_cuda_free(g->cu, g->d_out); ms_cuda_free(g->cu, g->d_top); ms_cuda_free(g->cu, g->d_ids);
    ms_cuda_destroy(g->cu);
  }
  free(g->h_top);
  free(g);
}

ms_result ms_cli_gpu_open(ms_cli_gpu **out, int32_t vocab, int32_t top, int32_t history, char *msg, size_t msg_size) {
  ms_cli_gpu *g;
  ms_cuda_desc d;
  ms_result rc;
  size_t top_n;
  *out = NULL;
  g = (ms_cli_gpu *)calloc(1, sizeof *g);
  if (!g) { snprintf(msg, msg_size, "out of memory"); return MS_ERR_OUT_OF_MEMORY; }
  g->vocab = vocab;
  /* room for one entry more than the GPU gathers, so a row asking for more
     is refused by the library (MS_ERR_UNSUPPORTED), not silently cut */
  g->top_cap = top > 0 ? (top > 1025 ? 1025 : top) : 1;
  top_n = (size_t)g->top_cap;
  memset(&d, 0, sizeof d);
  d.max_rows = 1; d.max_vocab = vocab; d.max_slots = 1;
  d.max_history = history;   /* the whole sequence: no_repeat_ngram scans it all */
  rc = ms_cuda_create(&g->cu, &d, msg, msg_size);
  if (rc != MS_OK) { free(g); return rc; }
  g->h_top = (ms_logprob *)malloc(sizeof(ms_logprob) * top_n);
  if (!g->h_top ||
      ms_cuda_malloc(g->cu, &g->d_row, sizeof(float) * (size_t)vocab) != MS_OK ||
      ms_cuda_malloc(g->cu, &g->d_probs, sizeof(float) * (size_t)vocab) != MS_OK ||
      ms_cuda_malloc(g->cu, &g->d_tokens, sizeof(int32_t)) != MS_OK ||
      ms_cuda_malloc(g->cu, &g->d_out, sizeof(ms_cuda_out)) != MS_OK ||
      ms_cuda_malloc(g->cu, &g->d_top, sizeof(ms_logprob) * top_n) != MS_OK) {
    snprintf(msg, msg_size, "out of device memory for a row of %d", (int)vocab);
    ms_cli_gpu_close(g);
    return MS_ERR_OUT_OF_MEMORY;
  }
  *out = g;
  return MS_OK;
}

ms_result ms_cli_gpu_begin_row(ms_cli_gpu *g, const float *row, const int32_t *prompt, int32_t n_prompt,
                               const int32_t *output, int32_t n_output, const ms_params *p) {
  size_t need = (size_t)n_prompt + 2 * (size_t)n_output, i;
  ms_result rc;
  if ((rc = ms_cuda_upload(g->cu, g->d_row, row, sizeof(float) * (size_t)g->vocab)) != MS_OK) return rc;
  if (need > g->ids_cap) {
    ms_cuda_free(g->cu, g->d_ids);
    g->d_ids = NULL; g->ids_cap = 0;
    if ((rc = ms_cuda_malloc(g->cu, &g->d_ids, sizeof(int32_t) * need)) != MS_OK) return rc;
    g->ids_cap = need;
  }
  if (n_prompt > 0 && (rc = ms_cuda_upload(g->cu, g->d_ids, prompt, sizeof(int32_t) * (size_t)n_prompt)) != MS_OK) return rc;
  if ((rc = ms_cuda_seq_reset(g->cu, NULL, 0, g->d_ids, n_prompt, p)) != MS_OK) return rc;
  if (n_output > 0) {
    /* the output so far, as generated: every id into slot 0 */
    int32_t *h = (int32_t *)calloc(2 * (size_t)n_output, sizeof(int32_t));
    int32_t *d_slots = (int32_t *)g->d_ids + n_prompt;
    if (!h) return MS_ERR_OUT_OF_MEMORY;
    for (i = 0; i < (size_t)n_output; i++) h[(size_t)n_output + i] = output[i];
    rc = ms_cuda_upload(g->cu, d_slots, h, sizeof(int32_t) * 2 * (size_t)n_output);
    free(h);
    if (rc != MS_OK) return rc;
    if ((rc = ms_cuda_seq_accept(g->cu, NULL, d_slots, d_slots + n_output, n_output)) != MS_OK) return rc;
  }
  return ms_cuda_sync(g->cu, NULL);
}

ms_result ms_cli_gpu_budget_state(ms_cli_gpu *g, ms_budget_state *state, int32_t *remaining) {
  ms_result rc = ms_cuda_sync(g->cu, NULL);
  return rc != MS_OK ? rc : ms_cuda_seq_budget_state(g->cu, 0, state, remaining);
}

/* One row through the GPU: probs (non-NULL), a draw, or the score of
   token `given` (>= 0). */
static ms_result ms__cli_gpu_run(ms_cli_gpu *g, const ms_params *p, uint64_t seed, uint64_t position, int accept,
                                 float *probs, ms_output *o, int32_t given) {
  const ms_params *pp[1];
  int32_t slot[1] = {0}, score[1];
  uint64_t seeds[1], positions[1];
  ms_result row_res[1], rc;
  ms_cuda_batch b;
  ms_cuda_out co;
  pp[0] = p; seeds[0] = seed; positions[0] = position;
  memset(&b, 0, sizeof b);
  b.n_rows = 1; b.vocab = g->vocab; b.logits = g->d_row; b.row_stride = (size_t)g->vocab;
  b.params = pp; b.slots = slot; b.seeds = seeds; b.positions = positions;
  b.accept = accept; b.tokens = g->d_tokens; b.out = g->d_out;
  b.top = g->d_top; b.top_stride = g->top_cap;
  b.row_results = row_res;
  score[0] = given;
  if (given >= 0) b.score_tokens = score;
  rc = probs ? ms_cuda_probs(g->cu, NULL, &b, g->d_probs, (size_t)g->vocab) : ms_cuda_sample(g->cu, NULL, &b);
  if (rc != MS_OK) return rc;
  /* the synchronous copies wait for the stream */
  if ((rc = ms_cuda_download(g->cu, &co, g->d_out, sizeof co)) != MS_OK) return rc;
  if (co.status != MS_OK) return (ms_result)co.status;
  if (probs) return ms_cuda_download(g->cu, probs, g->d_probs, sizeof(float) * (size_t)g->vocab);
  o->token = co.token; o->logprob = co.logprob; o->rank = co.rank; o->greedy = co.greedy;
  o->seed = co.seed; o->position = co.position;
  o->n_top = 0;
  if (o->top && o->top_capacity > 0 && co.n_top > 0) {
    int32_t n = co.n_top < o->top_capacity ? co.n_top : o->top_capacity;
    if (n > g->top_cap) n = g->top_cap;
    if ((rc = ms_cuda_download(g->cu, g->h_top, g->d_top, sizeof(ms_logprob) * (size_t)n)) != MS_OK) return rc;
    memcpy(o->top, g->h_top, sizeof(ms_logprob) * (size_t)n);
    o->n_top = n;
  }
  return MS_OK;
}

ms_result ms_cli_gpu_probs(ms_cli_gpu *g, const ms_params *p, uint64_t seed, uint64_t position, float *probs) {
  return ms__cli_gpu_run(g, p, seed, position, 0, probs, NULL, -1);
}

ms_result ms_cli_gpu_sample(ms_cli_gpu *g, const ms_params *p, uint64_t seed, uint64_t position, int accept, ms_output *out,
                            int32_t given) {
  return ms__cli_gpu_run(g, p, seed, position, accept, NULL, out, given);
}

/* Mirrors the list of docs/CUDA.md "Semantics": what the kernels refuse. */
const char *ms_cli_gpu_error(const ms_cli_gpu *g) {
  const char *e = ms_cuda_last_error(g->cu);
  return strncmp(e, "row 0: ", 7) == 0 ? e + 7 : e;
}

const char *ms_cli_gpu_unsupported(const ms_params *p, int32_t top) {
  if (p->profile == MS_PROFILE_LLAMACPP) {
    if (p->mirostat) return "--mirostat";
    if (p->dry_multiplier != 0.0f) return "--dry-multiplier (DRY)";
    if (p->repetition_penalty != 1.0f || p->frequency_penalty != 0.0f || p->presence_penalty != 0.0f)
      return "llamacpp penalties that do not lead --samplers";
    return "a llamacpp chain whose first acting stage is not --top-k 1..1024 (below the vocab; --top-n-sigma may come first)";
  }
  if (p->min_tokens_to_keep > 1) return "--min-tokens-to-keep > 1";
  if (p->typical_p < 1.0f) return "--typical-p";
  if (top > 1024) return "--top above 1024";
  return "an option of this row";
}
