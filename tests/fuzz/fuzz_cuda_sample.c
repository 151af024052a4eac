/* libFuzzer target: mysample_cuda.h's whole GPU path (the host's packing
   of the rows, every kernel) on the CPU emulator (tests/cuda_emu, built
   with the same sanitizers: build/cuda_emu/libcuda_emu_fuzz.so), against
   the CPU sampler. Any bytes become 1 to 3 rows of a vocabulary of 1 to
   300 ids: each row's parameters as fuzz_sampler's (fuzz_params.h; half
   the time a row that fails validation gets its profile's default numbers
   and its lists' ids folded into the row, so that more rows reach the
   kernels: $FUZZ_CUDA_STATS prints how many did), its
   logits as scaled integers or raw float bits (NaN, Inf, subnormals), a
   device sequence (a prompt and an output) or none, and a choice of top_p
   path (radix or bins) and blocks per row. Invariants:
   - no crash and no sanitizer report;
   - a row the GPU refuses is refused for a reason of its own
     (MS_ERR_UNSUPPORTED: what the kernels do not implement) or the CPU's
     (validation's code); every other row ends as the CPU's does: the same
     error (NaN, +Inf, all masked), or a token in range whose final
     probability is positive, in a distribution that sums to 1 and is the
     CPU's within 1e-4 per id; where the token is the CPU's, its logprob
     (1e-4), rank and top list (logprobs within 1e-4; the same ids but
     where two logprobs are equal) are the CPU's;
   - ms_cuda_sample and ms_cuda_probs agree on each row's status;
   - each row scored for a given token (score_tokens) reports what the
     CPU's ms_score does: status, logprob, rank, top list.
   Needs NVRTC (the kernels are compiled once, to check them and for the
   cache; the emulator runs its own build of kernels.cu): without it every
   input returns at once and the run says so. */
#define _GNU_SOURCE
#define MYSAMPLE_IMPLEMENTATION
#define MYSAMPLE_CUDA_IMPLEMENTATION
#include "mysample_cuda.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_params.h"

#define MAXV 300
#define MAXR 3
#define FAIL(...) do { fprintf(stderr, "fuzz_cuda_sample: invariant at line %d: ", __LINE__); fprintf(stderr, __VA_ARGS__); \
                       fputc('\n', stderr); abort(); } while (0)

/* Four ms_cuda (top_p's radix path and its bins, each with one block a
   row and with three), one CPU sampler, device buffers: made once. */
static ms_cuda *g_cu[4];
static ms_sampler *g_cpu;
static void *g_logits, *g_probs, *g_tokens, *g_out, *g_top, *g_prompt, *g_acc_tokens, *g_acc_slots;
#define TOPN 8   /* top logprobs a row (the fuzzed rows ask for up to 8) */
static int g_ready;   /* 1 ready, -1 no GPU path here */

static void setup(void) {
  ms_cuda_desc d;
  ms_sampler_desc sd;
  char msg[8192];
  const char *drv = getenv("MYSAMPLE_CUDA_DRIVER_PATH");
  int k;
  g_ready = -1;
  memset(&sd, 0, sizeof sd);
  sd.max_vocab = MAXV;
  if (ms_sampler_create(&g_cpu, &sd) != MS_OK) FAIL("ms_sampler_create");
  for (k = 0; k < 4; k++) {
    ms_result rc;
    memset(&d, 0, sizeof d);
    d.max_rows = MAXR;
    d.max_vocab = MAXV;
    d.max_slots = MAXR;
    d.driver_path = drv ? drv : "build/cuda_emu/libcuda_emu_fuzz.so";
    d.topp = k & 1 ? MS_CUDA_TOPP_BINS : MS_CUDA_TOPP_RADIX;
    d.split = k & 2 ? 3 : -1;   /* (three: chunks past a small row's end are empty) */
    rc = ms_cuda_create(&g_cu[k], &d, msg, sizeof msg);
    if (rc != MS_OK) {
      fprintf(stderr, "fuzz_cuda_sample: no GPU path to fuzz (%s: %s)\n", ms_result_str(rc), msg);
      return;
    }
    if (strcmp(ms_cuda_device_name(g_cu[k]), "mysample CPU emulator") != 0)
      fprintf(stderr, "fuzz_cuda_sample: note: running on %s, not the emulator\n", ms_cuda_device_name(g_cu[k]));
  }
  if (ms_cuda_malloc(g_cu[0], &g_logits, (size_t)MAXR * MAXV * 4) != MS_OK ||
      ms_cuda_malloc(g_cu[0], &g_probs, (size_t)MAXR * MAXV * 4) != MS_OK ||
      ms_cuda_malloc(g_cu[0], &g_tokens, (size_t)MAXR * 4) != MS_OK ||
      ms_cuda_malloc(g_cu[0], &g_acc_tokens, 16 * 4) != MS_OK || ms_cuda_malloc(g_cu[0], &g_acc_slots, 16 * 4) != MS_OK ||
      ms_cuda_malloc(g_cu[0], &g_out, (size_t)MAXR * sizeof(ms_cuda_out)) != MS_OK ||
      ms_cuda_malloc(g_cu[0], &g_top, (size_t)MAXR * TOPN * sizeof(ms_logprob)) != MS_OK ||
      ms_cuda_malloc(g_cu[0], &g_prompt, 64 * 4) != MS_OK) FAIL("ms_cuda_malloc");
  g_ready = 1;
}

/* Rows by outcome ($FUZZ_CUDA_STATS: printed at exit, to see what a corpus reaches). */
static long g_rows[4];   /* refused by the GPU as unsupported, refused as the CPU, an error as the CPU's, sampled */
static void print_stats(void) {
  fprintf(stderr, "fuzz_cuda_sample: rows unsupported %ld, refused %ld, errors %ld, sampled and compared %ld\n",
          g_rows[0], g_rows[1], g_rows[2], g_rows[3]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static float logits[MAXR * MAXV], probs[MAXR * MAXV], cprobs[MAXV];
  static fuzz_lists L[MAXR];
  static ms_params ps[MAXR];
  const ms_params *pp[MAXR];
  int32_t slots[MAXR], prompt[MAXR][16], output[MAXR][16], n_prompt[MAXR], n_output[MAXR];
  ms_seq *q[MAXR];
  ms_result row_rc[MAXR], row_rc2[MAXR];
  ms_cuda_out out[MAXR], out2[MAXR];
  ms_logprob top[MAXR * TOPN], ctop[TOPN];
  ms_cuda_batch b;
  ms_cuda *cu;
  rd r = {data, size};
  int32_t V, R, i, k;
  if (!g_ready) { setup(); if (getenv("FUZZ_CUDA_STATS")) atexit(print_stats); }
  if (g_ready < 0) return 0;
  cu = g_cu[take(&r, 1) & 3];
  V = 1 + (int32_t)(take(&r, 2) % MAXV);
  R = 1 + (int32_t)(take(&r, 1) % MAXR);
  for (k = 0; k < R; k++) {
    ps[k] = ms_params_default();
    fuzz_take_params(&r, V, &ps[k], &L[k]);
    if (take(&r, 1) & 1) {
      /* most rows of wholly random numbers fail validation: half the time
         such a row's numbers become its profile's defaults (its lists,
         masks and sequence stay), so that more rows get to the kernels */
      char msg[256];
      if (ms_params_validate(&ps[k], V, msg, sizeof msg) != MS_OK) {
        const ms_params d = ms_params_profile_default(ps[k].profile);
        ms_params *p = &ps[k];
        p->temperature = take(&r, 1) & 1 ? d.temperature : 0.0f;
        p->top_k = d.top_k; p->top_p = d.top_p; p->min_p = d.min_p; p->typical_p = d.typical_p;
        p->presence_penalty = d.presence_penalty; p->frequency_penalty = d.frequency_penalty;
        p->repetition_penalty = d.repetition_penalty; p->epsilon_cutoff = d.epsilon_cutoff; p->eta_cutoff = d.eta_cutoff;
        p->exp_decay_factor = d.exp_decay_factor; p->min_tokens_to_keep = d.min_tokens_to_keep;
        p->top_n_sigma = d.top_n_sigma; p->xtc_probability = d.xtc_probability; p->dynatemp_range = d.dynatemp_range;
        p->mirostat = d.mirostat; p->dry_multiplier = d.dry_multiplier; p->samplers = d.samplers;
        p->no_repeat_ngram_size = d.no_repeat_ngram_size; p->budget_tokens = d.budget_tokens;
        /* the lists' ids into the row */
        for (i = 0; i < p->n_logit_bias; i++) L[k].bias[i].token = (int32_t)((uint32_t)L[k].bias[i].token % (uint32_t)V);
        /* biases within +-100, or +-inf from the largest magnitudes (a
           masked id stays masked, an unmasked one is +Inf, +inf then -inf
           NaN: the same on both devices); others (huge finite ones would
           reach the known extreme-gap differences) read as 1 */
        for (i = 0; i < p->n_logit_bias; i++) {
          float bv = L[k].bias[i].bias;
          L[k].bias[i].bias = fabsf(bv) <= 100.0f ? bv : fabsf(bv) >= 1e30f ? (bv > 0.0f ? INFINITY : -INFINITY) : 1.0f;
        }
        for (i = 0; i < p->n_allowed_ids; i++) L[k].allowed[i] = (int32_t)((uint32_t)L[k].allowed[i] % (uint32_t)V);
        for (i = 0; i < p->n_banned_ids; i++) L[k].banned[i] = (int32_t)((uint32_t)L[k].banned[i] % (uint32_t)V);
        for (i = 0; i < p->n_stop_token_ids; i++) L[k].stops[i] = (int32_t)((uint32_t)L[k].stops[i] % (uint32_t)V);
        for (i = 0; i < 8; i++) L[k].bw[i] = (int32_t)((uint32_t)L[k].bw[i] % (uint32_t)V);
        if (p->eos_token_id >= V) p->eos_token_id = V - 1;
        if (take(&r, 1) & 1) p->top_p = 0.9f;
        if (take(&r, 1) & 1) p->top_k = 40;
        if (take(&r, 1) & 1) p->min_p = 0.05f;
      }
    }
    pp[k] = &ps[k];
    n_prompt[k] = (int32_t)(take(&r, 1) % 17);
    n_output[k] = (int32_t)(take(&r, 1) % 17);
    for (i = 0; i < n_prompt[k]; i++) prompt[k][i] = (int32_t)(take(&r, 2) % (uint32_t)V);
    for (i = 0; i < n_output[k]; i++) output[k][i] = (int32_t)(take(&r, 2) % (uint32_t)V);
    slots[k] = take(&r, 1) % 3 ? k : -1;
    for (i = 0; i < V; i++) {
      const uint32_t kind = take(&r, 1);
      float *x = &logits[(size_t)k * MAXV + (size_t)i];
      if (kind < 230) *x = (float)((int32_t)take(&r, 2) - 32768) / 2048.0f;
      else { uint32_t bits = take(&r, 4); memcpy(x, &bits, 4); }
    }
  }
  /* the sequences, on both sides: the prompt, then the output accepted */
  for (k = 0; k < R; k++) {
    q[k] = NULL;
    if (slots[k] < 0) continue;
    if (ms_seq_create(&q[k], 40) != MS_OK) FAIL("ms_seq_create");
    if (ms_seq_reset(q[k], prompt[k], n_prompt[k], V, &ps[k], 0) != MS_OK) FAIL("ms_seq_reset");
    for (i = 0; i < n_output[k]; i++) if (ms_seq_accept(q[k], output[k][i]) != MS_OK) FAIL("ms_seq_accept");
    if (n_prompt[k] > 0 && ms_cuda_upload(cu, g_prompt, prompt[k], (size_t)n_prompt[k] * 4) != MS_OK) FAIL("upload");
    {
      const ms_result rc = ms_cuda_seq_reset(cu, NULL, slots[k], n_prompt[k] ? g_prompt : NULL, n_prompt[k], &ps[k]);
      /* a budget the device cannot hold is refused, and the slot is not the CPU's: leave the row */
      if (rc == MS_ERR_CAPACITY || rc == MS_ERR_TOKEN_OUT_OF_RANGE) { ms_seq_destroy(q[k]); q[k] = NULL; slots[k] = -1; continue; }
      if (rc != MS_OK) FAIL("ms_cuda_seq_reset: %s", ms_result_str(rc));
    }
    if (n_output[k] > 0) {
      int32_t sl[16];
      for (i = 0; i < n_output[k]; i++) sl[i] = slots[k];
      if (ms_cuda_upload(cu, g_acc_tokens, output[k], (size_t)n_output[k] * 4) != MS_OK ||
          ms_cuda_upload(cu, g_acc_slots, sl, (size_t)n_output[k] * 4) != MS_OK) FAIL("upload");
      if (ms_cuda_seq_accept(cu, NULL, g_acc_slots, g_acc_tokens, n_output[k]) != MS_OK) FAIL("ms_cuda_seq_accept");
      if (ms_cuda_sync(cu, NULL) != MS_OK) FAIL("sync");   /* (the buffers are the next row's) */
    }
  }
  for (k = 0; k < R; k++)
    if (ms_cuda_upload(cu, (char *)g_logits + (size_t)k * MAXV * 4, &logits[(size_t)k * MAXV], (size_t)V * 4) != MS_OK) FAIL("upload");
  memset(&b, 0, sizeof b);
  b.n_rows = R;
  b.vocab = V;
  b.logits = g_logits;
  b.row_stride = MAXV;
  b.params = pp;
  b.slots = slots;
  b.tokens = g_tokens;
  b.out = g_out;
  b.row_results = row_rc;
  (void)ms_cuda_probs(cu, NULL, &b, g_probs, MAXV);
  if (ms_cuda_sync(cu, NULL) != MS_OK) FAIL("sync after ms_cuda_probs");
  if (ms_cuda_download(cu, out2, g_out, (size_t)R * sizeof out2[0]) != MS_OK ||
      ms_cuda_download(cu, probs, g_probs, (size_t)R * MAXV * 4) != MS_OK) FAIL("download");
  b.row_results = row_rc2;
  b.top = g_top;
  b.top_stride = TOPN;
  (void)ms_cuda_sample(cu, NULL, &b);
  if (ms_cuda_sync(cu, NULL) != MS_OK) FAIL("sync after ms_cuda_sample");
  if (ms_cuda_download(cu, out, g_out, (size_t)R * sizeof out[0]) != MS_OK ||
      ms_cuda_download(cu, top, g_top, (size_t)R * TOPN * sizeof top[0]) != MS_OK) FAIL("download");
  for (k = 0; k < R; k++) {
    const float *x = &logits[(size_t)k * MAXV], *gp = &probs[(size_t)k * MAXV];
    ms_output o;
    ms_result crc;
    double sum = 0.0, e = 0.0;
    int32_t worst = -1;
    if (row_rc[k] != row_rc2[k] || out[k].status != out2[k].status)
      FAIL("row %d: sample %s/%s, probs %s/%s", (int)k, ms_result_str(row_rc2[k]), ms_result_str((ms_result)out[k].status),
           ms_result_str(row_rc[k]), ms_result_str((ms_result)out2[k].status));
    memset(&o, 0, sizeof o);
    o.top = ctop;
    o.top_capacity = TOPN;
    crc = ms_sample(g_cpu, x, V, &ps[k], q[k], &o);
    if (crc == MS_OK) crc = ms_probs(g_cpu, x, V, &ps[k], q[k], cprobs);
    if (getenv("FUZZ_CUDA_VERBOSE")) {   /* (to read a failing input) */
      const ms_params *p = &ps[k];
      fprintf(stderr, "row %d: V %d slot %d gpu %s/%s cpu %s; profile %d T %g top_k %d top_p %g min_p %g pen %g/%g/%g bias %d "
              "allowed %d banned %d mask %d bad %d min_tokens %d eos %d stops %d decay %d ngram %d eps %g eta %g samplers %s budget %d\n",
              (int)k, (int)V, (int)slots[k], ms_result_str(row_rc[k]), ms_result_str((ms_result)out[k].status), ms_result_str(crc),
              (int)p->profile, (double)p->temperature, (int)p->top_k, (double)p->top_p, (double)p->min_p, (double)p->repetition_penalty,
              (double)p->frequency_penalty, (double)p->presence_penalty, (int)p->n_logit_bias, (int)p->n_allowed_ids,
              (int)p->n_banned_ids, p->token_bitmask != NULL, (int)p->n_bad_words, (int)p->min_tokens, (int)p->eos_token_id,
              (int)p->n_stop_token_ids, (int)p->exp_decay_start, (int)p->no_repeat_ngram_size, (double)p->epsilon_cutoff,
              (double)p->eta_cutoff, p->samplers ? p->samplers : "-", (int)p->budget_tokens);
      for (i = 0; i < V; i++) if (!(x[i] < INFINITY) || x[i] == -INFINITY) fprintf(stderr, "  x[%d] = %g\n", (int)i, (double)x[i]);
      for (i = 0; i < p->n_logit_bias; i++) fprintf(stderr, "  bias %d %g (x %g)\n", (int)p->logit_bias[i].token, (double)p->logit_bias[i].bias,
                                                    p->logit_bias[i].token >= 0 && p->logit_bias[i].token < V ? (double)x[p->logit_bias[i].token] : 0.0);
      for (i = 0; i < p->n_allowed_ids; i++) fprintf(stderr, "  allowed %d (x %g)\n", (int)p->allowed_ids[i],
                                                     p->allowed_ids[i] >= 0 && p->allowed_ids[i] < V ? (double)x[p->allowed_ids[i]] : 0.0);
      for (i = 0; i < n_prompt[k]; i++) fprintf(stderr, " p%d", (int)prompt[k][i]);
      for (i = 0; i < n_output[k]; i++) fprintf(stderr, " o%d", (int)output[k][i]);
      fprintf(stderr, "\n");
    }
    if (row_rc[k] == MS_ERR_UNSUPPORTED) { g_rows[0]++; continue; }   /* not on the GPU (yet): refused, never ignored */
    if (row_rc[k] != MS_OK) {
      if (row_rc[k] != crc) FAIL("row %d: the GPU refused it with %s, the CPU says %s", (int)k, ms_result_str(row_rc[k]), ms_result_str(crc));
      if (out[k].token != -1) FAIL("row %d: refused, token %d", (int)k, (int)out[k].token);
      g_rows[1]++;
      continue;
    }
    if ((ms_result)out[k].status != crc)
      FAIL("row %d: the GPU ends with %s, the CPU with %s", (int)k, ms_result_str((ms_result)out[k].status), ms_result_str(crc));
    if (crc != MS_OK) { if (out[k].token != -1) FAIL("row %d: an error, token %d", (int)k, (int)out[k].token); g_rows[2]++; continue; }
    g_rows[3]++;
    if (out[k].token < 0 || out[k].token >= V) FAIL("row %d: token %d of %d", (int)k, (int)out[k].token, (int)V);
    for (i = 0; i < V; i++) {
      const double d = fabs((double)gp[i] - (double)cprobs[i]);
      if (!(gp[i] >= 0.0f && gp[i] <= 1.0f)) FAIL("row %d: probability %g at %d", (int)k, (double)gp[i], (int)i);
      sum += gp[i];
      if (d > e) { e = d; worst = i; }
    }
    if (fabs(sum - 1.0) > 1e-3) FAIL("row %d: the probabilities sum to %.6f", (int)k, sum);
    if (!(gp[out[k].token] > 0.0f)) FAIL("row %d: token %d has probability 0", (int)k, (int)out[k].token);
    if (e > 1e-4)
      FAIL("row %d: id %d probability %.7g on the GPU, %.7g on the CPU (profile %d, T %g, top_k %d, top_p %g, min_p %g)", (int)k,
           (int)worst, (double)gp[worst], (double)cprobs[worst], (int)ps[k].profile, (double)ps[k].temperature, (int)ps[k].top_k,
           (double)ps[k].top_p, (double)ps[k].min_p);
    /* the logprobs of the same token (a draw may differ from the CPU's
       where u * Z lies within ~1e-7 of a boundary: then nothing to compare) */
    if (ps[k].logprobs >= 0 && out[k].token == o.token) {
      const ms_logprob *gt = &top[(size_t)k * TOPN];
      int j;
      if (!(fabs((double)out[k].logprob - (double)o.logprob) <= 1e-4) && out[k].logprob != o.logprob)
        FAIL("row %d: token %d logprob %.7g on the GPU, %.7g on the CPU", (int)k, (int)o.token, (double)out[k].logprob, (double)o.logprob);
      if (out[k].rank != o.rank) FAIL("row %d: token %d rank %d on the GPU, %d on the CPU", (int)k, (int)o.token, (int)out[k].rank, (int)o.rank);
      if (out[k].n_top != o.n_top) FAIL("row %d: %d top logprobs on the GPU, %d on the CPU", (int)k, (int)out[k].n_top, (int)o.n_top);
      /* (among equal logprobs the order is not specified: distinct logits
         can round to one logprob, and the two sides need not break such a
         tie alike) */
      for (j = 0; j < o.n_top && j < TOPN; j++)
        if ((gt[j].token != ctop[j].token && gt[j].logprob != ctop[j].logprob) ||
            (!(fabs((double)gt[j].logprob - (double)ctop[j].logprob) <= 1e-4) && gt[j].logprob != ctop[j].logprob))
          FAIL("row %d: top %d is %d (%.7g) on the GPU, %d (%.7g) on the CPU", (int)k, j, (int)gt[j].token, (double)gt[j].logprob,
               (int)ctop[j].token, (double)ctop[j].logprob);
    }
  }
  {
    /* score_tokens: each row scored for a token of the input's choosing
       (now and then one outside the vocabulary), against ms_score: the
       same status, and the token's logprob, rank and top list */
    int32_t given[MAXR];
    for (k = 0; k < R; k++) given[k] = (take(&r, 1) & 15) == 0 ? V + (int32_t)(k & 1) * -(V + 1) : (int32_t)(take(&r, 2) % (uint32_t)V);
    b.score_tokens = given;
    b.row_results = row_rc2;
    (void)ms_cuda_sample(cu, NULL, &b);
    if (ms_cuda_sync(cu, NULL) != MS_OK) FAIL("sync after scoring");
    if (ms_cuda_download(cu, out, g_out, (size_t)R * sizeof out[0]) != MS_OK ||
        ms_cuda_download(cu, top, g_top, (size_t)R * TOPN * sizeof top[0]) != MS_OK) FAIL("download");
    for (k = 0; k < R; k++) {
      const ms_logprob *gt = &top[(size_t)k * TOPN];
      ms_output o;
      ms_result crc;
      int j;
      if (row_rc2[k] == MS_ERR_UNSUPPORTED) continue;
      memset(&o, 0, sizeof o);
      o.top = ctop;
      o.top_capacity = TOPN;
      crc = ms_score(g_cpu, &logits[(size_t)k * MAXV], V, &ps[k], q[k], given[k], &o);
      if (row_rc2[k] != MS_OK && row_rc2[k] != crc)
        FAIL("row %d: scoring %d refused with %s, the CPU says %s", (int)k, (int)given[k], ms_result_str(row_rc2[k]), ms_result_str(crc));
      if ((ms_result)out[k].status != crc)
        FAIL("row %d: scoring %d ends with %s on the GPU, %s on the CPU", (int)k, (int)given[k], ms_result_str((ms_result)out[k].status),
             ms_result_str(crc));
      if (crc != MS_OK) { if (out[k].token != -1) FAIL("row %d: scoring failed, token %d", (int)k, (int)out[k].token); continue; }
      if (out[k].token != given[k]) FAIL("row %d: scored %d, reported %d", (int)k, (int)given[k], (int)out[k].token);
      if (!(fabs((double)out[k].logprob - (double)o.logprob) <= 1e-4) && out[k].logprob != o.logprob)
        FAIL("row %d: scored %d logprob %.7g on the GPU, %.7g on the CPU", (int)k, (int)given[k], (double)out[k].logprob, (double)o.logprob);
      if (out[k].rank != o.rank) FAIL("row %d: scored %d rank %d on the GPU, %d on the CPU", (int)k, (int)given[k], (int)out[k].rank, (int)o.rank);
      if (out[k].n_top != o.n_top) FAIL("row %d: scored, %d top logprobs on the GPU, %d on the CPU", (int)k, (int)out[k].n_top, (int)o.n_top);
      for (j = 0; j < o.n_top && j < TOPN; j++)
        if ((gt[j].token != ctop[j].token && gt[j].logprob != ctop[j].logprob) ||
            (!(fabs((double)gt[j].logprob - (double)ctop[j].logprob) <= 1e-4) && gt[j].logprob != ctop[j].logprob))
          FAIL("row %d: scored, top %d is %d (%.7g) on the GPU, %d (%.7g) on the CPU", (int)k, j, (int)gt[j].token,
               (double)gt[j].logprob, (int)ctop[j].token, (double)ctop[j].logprob);
    }
  }
  for (k = 0; k < R; k++) ms_seq_destroy(q[k]);
  return 0;
}
