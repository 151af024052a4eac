/* mysample probs | sample | logprobs: the sampler over raw little-endian
   float32 logits files (rows x vocab), one JSON object per row per line,
   on the CPU (mysample.h) or, with --device cuda, on the GPU
   (mysample_cuda.h, through cli_device.c) with the same flags and output. */
#include "cli.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <math.h>

typedef struct cli_opts {
  const char *logits_path;
  int32_t vocab, rows;
  ms_params p;
  int32_t *prompt, n_prompt, *output, n_output;
  int32_t *allowed, *banned, *stops, *bad_ids, *bad_lens;
  int32_t *dry_ids, *dry_lens, *budget_start, *budget_end;
  ms_bias *bias;
  uint64_t seed; int has_seed;
  uint64_t position;
  int32_t draws, top;
  int32_t token;           /* logprobs --token: the token scored (ms_score) instead of a draw; -1: draw */
  int accept;              /* sample: each draw is accepted into the sequence before the next */
  float mirostat_mu; int has_mu;
  int cuda;                /* --device cuda */
} cli_opts;

static void usage(const char *cmd, FILE *f) {
  fprintf(f,
    "usage: mysample %s --logits FILE --vocab V [--rows R] [sampling flags]%s\n"
    "\n"
    "FILE holds R x V little-endian float32 logits (R defaults to size / (4 V)).\n"
    "Output: one JSON object per row per line:\n"
    "  probs     {\"row\": r, \"probs\": {\"<id>\": p, ...}}   the final distribution, p = 0 omitted\n"
    "  sample    {\"row\": r, \"seed\": s, \"tokens\": [...]}  N draws, draw i at output position P+i\n"
    "            (+ \"mirostat_mu\": [...] with --mirostat, the mu after each draw;\n"
    "             + \"budget\": {\"state\": ..., \"remaining\": n} with --budget, after the row)\n"
    "  logprobs  {\"row\": r, \"token\": t, \"logprob\": x, \"rank\": k, \"top\": [[id, logprob], ...]}\n"
    "            (the drawn token's, or with --token T that token's: -9999.0 and rank V where dropped)\n"
    "\n"
    "sampling flags; unset ones take the profile's own defaults\n"
    "(ms_params_profile_default: vllm and sglang the OpenAI defaults, hf top_k 50,\n"
    "llamacpp temperature 0.8, top_k 40, top_p 0.95, min_p 0.05, penalty_last_n 64);\n"
    "the order of the flags does not matter:\n"
    "  --profile vllm|hf|sglang|llamacpp  semantics to follow (default vllm)\n"
    "  --temperature T              0 = greedy (default 1; llamacpp 0.8, applied last)\n"
    "  --top-k K                    0 or -1 = off\n"
    "  --top-p P                    (0, 1], 1 = off\n"
    "  --min-p P                    [0, 1], 0 = off\n"
    "  --presence-penalty X         [-2, 2], counts the output ids\n"
    "  --frequency-penalty X        [-2, 2], counts the output ids\n"
    "  --repetition-penalty X       > 0, over prompt and output ids\n"
    "  --prompt-ids a,b,...         the prompt (repetition penalty scope)\n"
    "  --output-ids a,b,...         the output generated so far (penalties, min_tokens)\n"
    "  --logit-bias id=v,...        added to the logits (vLLM clamps to [-100, 100])\n"
    "  --allowed-ids a,b,...        only these can be sampled\n"
    "  --banned-ids a,b,...         these are never sampled\n"
    "  --min-tokens N               EOS and stop ids are masked while the output is shorter\n"
    "  --stop-token-ids a,b,...     stop ids for --min-tokens\n"
    "  --eos-token-id ID            the EOS id for --min-tokens (default none)\n"
    "  --bad-words \"1,2;3\"         token-id sequences; a word's last id is banned when the rest ends the history\n"
    "  --no-repeat-ngram N          (hf) ban the token that would repeat an n-gram of prompt + output\n"
    "  --epsilon E                  (hf) drop tokens with probability < E\n"
    "  --eta E                      (hf) drop p < min(E, sqrt(E) * exp(-entropy))\n"
    "  --min-tokens-to-keep N       (hf, llamacpp) every truncation keeps at least N tokens\n"
    "  --exp-decay START,FACTOR     (hf) exponential length decay of the EOS logit\n",
    cmd, !strcmp(cmd, "sample") ? " [--seed S] [--position P] [--draws N] [--accept]" :
          !strcmp(cmd, "logprobs") ? " --top N [--mode raw|processed] [--seed S] [--token T]" : "");
  fputs(
    "  --typical-p P                (hf, llamacpp) locally typical sampling mass, 1 = off\n"
    "  --top-n-sigma N              (llamacpp) keep logits >= max - N * stddev, <= 0 = off\n"
    "  --xtc-probability P          (llamacpp) chance XTC runs on a token, 0 = off\n"
    "  --xtc-threshold P            (llamacpp) XTC drops the tokens with p >= this but the least likely (0.1)\n"
    "  --dynatemp-range R           (llamacpp) entropy-scaled temperature in [T - R, T + R], 0 = off\n"
    "  --dynatemp-exponent X        (llamacpp) dynamic temperature exponent (1)\n"
    "  --mirostat 0|1|2             (llamacpp) mirostat v1 or v2; replaces the chain (bias, temperature, mirostat)\n"
    "  --mirostat-tau X             (llamacpp) target surprise (5)\n"
    "  --mirostat-eta X             (llamacpp) learning rate (0.1)\n"
    "  --mirostat-mu X              (llamacpp) the sequence's mu before the first draw (default 2 * tau)\n"
    "  --dry-multiplier X           (llamacpp) DRY repetition penalty, 0 = off\n"
    "  --dry-base X                 (llamacpp) DRY base (1.75)\n"
    "  --dry-allowed-length N       (llamacpp) repeats longer than this are penalised (2)\n"
    "  --dry-last-n N               (llamacpp) tokens of prompt + output DRY scans, -1 = all, 0 = off\n"
    "  --dry-breakers \"1,2;3\"       (llamacpp) DRY sequence breakers as token-id sequences\n"
    "  --penalty-last-n N           (llamacpp) penalties count the last N tokens of prompt + output, -1 = all, 0 = off\n"
    "  --samplers LETTERS           (llamacpp) chain order in llama.cpp's letters (default edskypmxt:\n"
    "                               e penalties, d DRY, s top-n-sigma, k top-k, y typical, p top-p,\n"
    "                               m min-p, x XTC, t temperature); a stage left out does not run\n"
    "  --budget N                   reasoning budget: after N tokens inside start..end, force the end sequence (-1 = off)\n"
    "  --budget-start a,b,...       the budget's start sequence (e.g. the ids of <think>)\n"
    "  --budget-end a,b,...         the budget's end sequence (e.g. the ids of </think>)\n"
    "  --seed S                     the draw seed (default: a fresh one, which sample prints)\n"
    "  --position P                 output position of the first draw (default: number of output ids)\n"
    "  --draws N                    (sample) draws per row (default 1)\n"
    "  --accept                     (sample) accept each draw into the sequence before the next, as a\n"
    "                               generation does (penalties, DRY, mirostat's mu and the budget advance;\n"
    "                               each row starts again from --prompt-ids / --output-ids)\n"
    "  --top N                      (logprobs) how many top logprobs (default 0)\n"
    "  --mode raw|processed         (logprobs) before any processing, or of the final distribution\n"
    "  --token T                    (logprobs) score token T instead of drawing one (ms_score: prompt\n"
    "                               logprobs, a forced token)\n"
    "  --device cpu|cuda            where to sample (default cpu). cuda: the GPU path of\n"
    "                               mysample_cuda.h (driver and NVRTC loaded at run time), same\n"
    "                               flags and output; what it does not implement (hf typical and\n"
    "                               min-tokens-to-keep > 1; llamacpp mirostat, DRY and\n"
    "                               chains without a leading --top-k; --top above 1024) exits with\n"
    "                               status 2 and says so; no usable\n"
    "                               driver, GPU or NVRTC: status 3 ($MYSAMPLE_CUDA_DRIVER_PATH and\n"
    "                               $MYSAMPLE_NVRTC_PATH pick the libraries)\n"
    "A flag of another profile is refused with the profile's message (MS_ERR_UNSUPPORTED).\n"
    "Invalid flags or parameters exit with status 2 and the validation message;\n"
    "a row the sampler cannot sample (NaN logits, everything masked) with status 3.\n", f);
}

static int parse_i64(const char *s, long long lo, long long hi, long long *out) {
  char *end; long long v;
  errno = 0;
  v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return 0;
  *out = v; return 1;
}
static int parse_float(const char *s, float *out) {
  char *end; double v;
  errno = 0;
  v = strtod(s, &end);
  if (errno == ERANGE || end == s || *end) return 0;
  *out = (float)v; return 1;
}
/* "a,b,c" into a fresh array; an empty string gives an empty list. */
static int parse_ids(const char *s, int32_t **out, int32_t *n) {
  int32_t cap = 1, k = 0;
  const char *q;
  for (q = s; *q; q++) if (*q == ',') cap++;
  *out = (int32_t *)malloc(sizeof(int32_t) * (size_t)cap);
  if (!*out) return 0;
  while (*s) {
    char buf[32]; size_t len = strcspn(s, ","); long long v;
    if (len == 0 || len >= sizeof buf) return 0;
    memcpy(buf, s, len); buf[len] = '\0';
    if (!parse_i64(buf, -2147483647LL - 1, 2147483647LL, &v)) return 0;
    (*out)[k++] = (int32_t)v;
    s += len;
    if (*s == ',' && !*++s) return 0; /* a trailing comma: an empty last entry */
  }
  *n = k; return 1;
}
static int parse_bias(const char *s, ms_bias **out, int32_t *n) {
  int32_t cap = 1, k = 0;
  const char *q;
  for (q = s; *q; q++) if (*q == ',') cap++;
  *out = (ms_bias *)malloc(sizeof(ms_bias) * (size_t)cap);
  if (!*out) return 0;
  while (*s) {
    char buf[64], *eq; size_t len = strcspn(s, ","); long long id;
    if (len == 0 || len >= sizeof buf) return 0;
    memcpy(buf, s, len); buf[len] = '\0';
    eq = strchr(buf, '=');
    if (!eq) return 0;
    *eq = '\0';
    if (!parse_i64(buf, -2147483647LL - 1, 2147483647LL, &id) || !parse_float(eq + 1, &(*out)[k].bias)) return 0;
    (*out)[k].token = (int32_t)id; k++;
    s += len;
    if (*s == ',' && !*++s) return 0; /* a trailing comma: an empty last entry */
  }
  *n = k; return 1;
}

static int bad_flag(const char *cmd, const char *flag, const char *val) {
  fprintf(stderr, "mysample %s: invalid value for %s: '%s'\n", cmd, flag, val ? val : "(missing)");
  return 2;
}

/* "1,2;3" (sequences of ids, ';' between sequences) into the ids and the
   lengths, fresh arrays. */
static int parse_seqs(const char *s, int32_t **ids, int32_t **lens, int32_t *n_seqs) {
  const char *q; int32_t cap = 2, n = 0, nw = 0, len = 0;
  for (q = s; *q; q++) if (*q == ',' || *q == ';') cap++;
  *ids = (int32_t *)malloc(sizeof(int32_t) * (size_t)cap); *lens = (int32_t *)malloc(sizeof(int32_t) * (size_t)cap);
  if (!*ids || !*lens) return 0;
  for (q = s; ; ) {
    char *end; long long id;
    errno = 0; id = strtoll(q, &end, 10);
    if (end == q || errno || id < -2147483647LL || id > 2147483647LL) return 0;
    (*ids)[n++] = (int32_t)id; len++;
    if (*end == ',') { q = end + 1; continue; }
    (*lens)[nw++] = len; len = 0;
    if (*end == ';') { q = end + 1; continue; }
    if (*end) return 0;
    break;
  }
  *n_seqs = nw; return 1;
}

/* Flags that take no value (everything else takes exactly one). */
static int is_switch(const char *f) {
  return !strcmp(f, "--help") || !strcmp(f, "-h") || !strcmp(f, "--accept");
}

static int parse_opts(const char *cmd, int argc, char **argv, cli_opts *o) {
  int i, pos_set = 0, profile = MS_PROFILE_VLLM;
  memset(o, 0, sizeof *o);
  /* the profile first, wherever it stands: the other flags change its
     defaults (ms_params_profile_default), so their order does not matter */
  for (i = 1; i < argc; i++) {
    if (is_switch(argv[i])) continue;
    if (!strcmp(argv[i], "--profile") && i + 1 < argc) {
      profile = ms_profile_from_name(argv[i + 1]);
      if (profile < 0) return bad_flag(cmd, argv[i], argv[i + 1]);
    }
    i++; /* skip the value */
  }
  o->p = ms_params_profile_default((ms_profile)profile);
  o->draws = 1;
  o->token = -1;
  for (i = 1; i < argc; i++) {
    const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    long long n;
    if (!strcmp(f, "--help") || !strcmp(f, "-h")) { usage(cmd, stdout); return 1; }
#define NEED_VALUE() do { if (!v) return bad_flag(cmd, f, v); i++; } while (0)
#define FLOAT_FLAG(name, field) else if (!strcmp(f, name)) { NEED_VALUE(); if (!parse_float(v, &o->p.field)) return bad_flag(cmd, f, v); }
#define INT_FLAG(name, field) else if (!strcmp(f, name)) { NEED_VALUE(); if (!parse_i64(v, -2147483647LL - 1, 2147483647LL, &n)) return bad_flag(cmd, f, v); o->p.field = (int32_t)n; }
    if (!strcmp(f, "--logits")) { NEED_VALUE(); o->logits_path = v; }
    else if (!strcmp(f, "--vocab")) { NEED_VALUE(); if (!parse_i64(v, 1, 1 << 28, &n)) return bad_flag(cmd, f, v); o->vocab = (int32_t)n; }
    else if (!strcmp(f, "--rows")) { NEED_VALUE(); if (!parse_i64(v, 1, 1 << 30, &n)) return bad_flag(cmd, f, v); o->rows = (int32_t)n; }
    else if (!strcmp(f, "--profile")) { NEED_VALUE(); /* read by the first pass */ }
    else if (!strcmp(f, "--device")) {
      NEED_VALUE();
      if (!strcmp(v, "cuda")) o->cuda = 1;
      else if (!strcmp(v, "cpu")) o->cuda = 0;
      else return bad_flag(cmd, f, v);
    }
    FLOAT_FLAG("--temperature", temperature)
    INT_FLAG("--top-k", top_k)
    FLOAT_FLAG("--top-p", top_p)
    FLOAT_FLAG("--min-p", min_p)
    FLOAT_FLAG("--presence-penalty", presence_penalty)
    FLOAT_FLAG("--frequency-penalty", frequency_penalty)
    FLOAT_FLAG("--repetition-penalty", repetition_penalty)
    else if (!strcmp(f, "--prompt-ids")) { NEED_VALUE(); free(o->prompt); if (!parse_ids(v, &o->prompt, &o->n_prompt)) return bad_flag(cmd, f, v); }
    else if (!strcmp(f, "--output-ids")) { NEED_VALUE(); free(o->output); if (!parse_ids(v, &o->output, &o->n_output)) return bad_flag(cmd, f, v); }
    else if (!strcmp(f, "--logit-bias")) { NEED_VALUE(); free(o->bias); if (!parse_bias(v, &o->bias, &o->p.n_logit_bias)) return bad_flag(cmd, f, v); o->p.logit_bias = o->bias; }
    else if (!strcmp(f, "--allowed-ids")) { NEED_VALUE(); free(o->allowed); if (!parse_ids(v, &o->allowed, &o->p.n_allowed_ids)) return bad_flag(cmd, f, v); o->p.allowed_ids = o->allowed; }
    else if (!strcmp(f, "--banned-ids")) { NEED_VALUE(); free(o->banned); if (!parse_ids(v, &o->banned, &o->p.n_banned_ids)) return bad_flag(cmd, f, v); o->p.banned_ids = o->banned; }
    else if (!strcmp(f, "--stop-token-ids")) { NEED_VALUE(); free(o->stops); if (!parse_ids(v, &o->stops, &o->p.n_stop_token_ids)) return bad_flag(cmd, f, v); o->p.stop_token_ids = o->stops; }
    else if (!strcmp(f, "--bad-words")) {
      NEED_VALUE(); free(o->bad_ids); free(o->bad_lens);
      if (!parse_seqs(v, &o->bad_ids, &o->bad_lens, &o->p.n_bad_words)) return bad_flag(cmd, f, v);
      o->p.bad_words = o->bad_ids; o->p.bad_words_lens = o->bad_lens;
    }
    FLOAT_FLAG("--epsilon", epsilon_cutoff)
    FLOAT_FLAG("--eta", eta_cutoff)
    INT_FLAG("--min-tokens-to-keep", min_tokens_to_keep)
    INT_FLAG("--no-repeat-ngram", no_repeat_ngram_size)
    else if (!strcmp(f, "--exp-decay")) {
      char *end; long long st;
      NEED_VALUE();
      errno = 0; st = strtoll(v, &end, 10);
      if (end == v || errno || *end != ',' || st < -1 || st > 2147483647LL || !parse_float(end + 1, &o->p.exp_decay_factor)) return bad_flag(cmd, f, v);
      o->p.exp_decay_start = (int32_t)st;
    }
    /* the sampler catalogue: parsed as given; ms_params_validate judges the
       values and whether the profile has the sampler */
    FLOAT_FLAG("--typical-p", typical_p)
    FLOAT_FLAG("--top-n-sigma", top_n_sigma)
    FLOAT_FLAG("--xtc-probability", xtc_probability)
    FLOAT_FLAG("--xtc-threshold", xtc_threshold)
    FLOAT_FLAG("--dynatemp-range", dynatemp_range)
    FLOAT_FLAG("--dynatemp-exponent", dynatemp_exponent)
    INT_FLAG("--mirostat", mirostat)
    FLOAT_FLAG("--mirostat-tau", mirostat_tau)
    FLOAT_FLAG("--mirostat-eta", mirostat_eta)
    else if (!strcmp(f, "--mirostat-mu")) { NEED_VALUE(); if (!parse_float(v, &o->mirostat_mu)) return bad_flag(cmd, f, v); o->has_mu = 1; }
    FLOAT_FLAG("--dry-multiplier", dry_multiplier)
    FLOAT_FLAG("--dry-base", dry_base)
    INT_FLAG("--dry-allowed-length", dry_allowed_length)
    INT_FLAG("--dry-last-n", dry_last_n)
    else if (!strcmp(f, "--dry-breakers")) {
      NEED_VALUE(); free(o->dry_ids); free(o->dry_lens);
      if (!parse_seqs(v, &o->dry_ids, &o->dry_lens, &o->p.n_dry_breakers)) return bad_flag(cmd, f, v);
      o->p.dry_breakers = o->dry_ids; o->p.dry_breakers_lens = o->dry_lens;
    }
    INT_FLAG("--penalty-last-n", penalty_last_n)
    else if (!strcmp(f, "--samplers")) { NEED_VALUE(); o->p.samplers = v; }
    INT_FLAG("--budget", budget_tokens)
    else if (!strcmp(f, "--budget-start")) { NEED_VALUE(); free(o->budget_start); if (!parse_ids(v, &o->budget_start, &o->p.n_budget_start)) return bad_flag(cmd, f, v); o->p.budget_start = o->budget_start; }
    else if (!strcmp(f, "--budget-end")) { NEED_VALUE(); free(o->budget_end); if (!parse_ids(v, &o->budget_end, &o->p.n_budget_end)) return bad_flag(cmd, f, v); o->p.budget_end = o->budget_end; }
    INT_FLAG("--min-tokens", min_tokens)
    INT_FLAG("--eos-token-id", eos_token_id)
    else if (!strcmp(f, "--seed")) { NEED_VALUE(); { char *end; errno = 0; o->seed = strtoull(v, &end, 10); if (errno || end == v || *end || *v == '-') return bad_flag(cmd, f, v); } o->has_seed = 1; }
    else if (!strcmp(f, "--position")) { NEED_VALUE(); if (!parse_i64(v, 0, (long long)1 << 62, &n)) return bad_flag(cmd, f, v); o->position = (uint64_t)n; pos_set = 1; }
    else if (!strcmp(f, "--draws") && !strcmp(cmd, "sample")) { NEED_VALUE(); if (!parse_i64(v, 1, 100000000, &n)) return bad_flag(cmd, f, v); o->draws = (int32_t)n; }
    else if (!strcmp(f, "--accept") && !strcmp(cmd, "sample")) o->accept = 1;
    else if (!strcmp(f, "--token") && !strcmp(cmd, "logprobs")) { NEED_VALUE(); if (!parse_i64(v, 0, 2147483647LL, &n)) return bad_flag(cmd, f, v); o->token = (int32_t)n; }
    else if (!strcmp(f, "--top") && !strcmp(cmd, "logprobs")) { NEED_VALUE(); if (!parse_i64(v, 0, 1 << 20, &n)) return bad_flag(cmd, f, v); o->top = (int32_t)n; }
    else if (!strcmp(f, "--mode") && !strcmp(cmd, "logprobs")) {
      NEED_VALUE();
      if (!strcmp(v, "raw")) o->p.logprobs_mode = MS_LOGPROBS_RAW;
      else if (!strcmp(v, "processed")) o->p.logprobs_mode = MS_LOGPROBS_PROCESSED;
      else return bad_flag(cmd, f, v);
    }
    else { fprintf(stderr, "mysample %s: unknown flag '%s' (see --help)\n", cmd, f); return 2; }
#undef INT_FLAG
#undef FLOAT_FLAG
#undef NEED_VALUE
  }
  if (!o->logits_path) { fprintf(stderr, "mysample %s: --logits is required\n", cmd); return 2; }
  if (!o->vocab) { fprintf(stderr, "mysample %s: --vocab is required\n", cmd); return 2; }
  if (!pos_set) o->position = (uint64_t)o->n_output;
  if (!strcmp(cmd, "logprobs")) { o->p.logprobs = o->top; o->p.max_logprobs = -1; }
  o->p.seed = o->seed; o->p.has_seed = o->has_seed;
  return 0;
}

/* JSON number for a float: shortest form that reads back, -9999.0 for
   non-finite values (as the OpenAI API does). */
static void put_float(float x) {
  char buf[32]; int prec;
  if (!(x == x) || x == INFINITY || x == -INFINITY) { fputs("-9999.0", stdout); return; }
  for (prec = 1; prec <= 9; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, (double)x);
    if ((float)strtod(buf, NULL) == x) break;
  }
  fputs(buf, stdout);
}

static const char *budget_state_name(ms_budget_state st) {
  return st == MS_BUDGET_COUNTING ? "counting" : st == MS_BUDGET_FORCING ? "forcing" : st == MS_BUDGET_DONE ? "done" : "idle";
}

/* A row that failed: the message, and the exit status (2 for what the GPU
   path refuses, as for a refused flag; 3 for a row the sampler cannot
   sample or a device error). */
static int row_failed(const char *cmd, int32_t r, ms_result res, const cli_opts *o, const ms_cli_gpu *gpu) {
  const char *why = gpu ? ms_cli_gpu_error(gpu) : "";
  if (o->cuda && res == MS_ERR_UNSUPPORTED) {
    fprintf(stderr, "mysample %s: --device cuda: the GPU path does not implement %s (%s: %s%s%s); use --device cpu\n",
            cmd, ms_cli_gpu_unsupported(&o->p, o->top), "MS_ERR_UNSUPPORTED", ms_result_str(res), *why ? ": " : "", why);
    return 2;
  }
  fprintf(stderr, "mysample %s: row %d: %s%s%s%s\n", cmd, (int)r, o->cuda ? "--device cuda: " : "", ms_result_str(res),
          *why ? ": " : "", why);
  return 3;
}

int ms_cli_sampling(const char *cmd, int argc, char **argv) {
  cli_opts o;
  FILE *f;
  long size;
  float *row = NULL, *probs = NULL, *mus = NULL;
  ms_sampler *s = NULL;
  ms_seq *base = NULL, *seq = NULL;
  ms_sampler_desc d;
  ms_logprob *top = NULL;
  ms_cli_gpu *gpu = NULL;
  char msg[4096];
  int32_t r, i, cap;
  ms_result vr;
  int rc = parse_opts(cmd, argc, argv, &o);
  if (rc) return rc == 1 ? 0 : rc;
  if ((vr = ms_params_validate(&o.p, o.vocab, msg, sizeof msg)) != MS_OK) {
    if (vr == MS_ERR_UNSUPPORTED) fprintf(stderr, "mysample %s: %s (%s)\n", cmd, msg, ms_result_str(vr));
    else fprintf(stderr, "mysample %s: %s\n", cmd, msg);
    return 2;
  }
  f = fopen(o.logits_path, "rb");
  if (!f) { fprintf(stderr, "mysample %s: cannot open %s: %s\n", cmd, o.logits_path, strerror(errno)); return 2; }
  /* a pipe has no size and a directory opens (its size read as LONG_MAX):
     say so, rather than report -1 or 9223372036854775807 bytes */
  if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fprintf(stderr, "mysample %s: cannot take the size of %s (%s): --logits needs a regular file\n", cmd, o.logits_path, strerror(errno));
    fclose(f); return 2;
  }
  if (getc(f) == EOF && ferror(f)) { fprintf(stderr, "mysample %s: cannot read %s: %s\n", cmd, o.logits_path, strerror(errno)); fclose(f); return 2; }
  fseek(f, 0, SEEK_SET);
  if (size <= 0 || size % ((long)o.vocab * 4) != 0) { fprintf(stderr, "mysample %s: %s holds %ld bytes, not a whole number of %d-float rows\n", cmd, o.logits_path, size, (int)o.vocab); fclose(f); return 2; }
  if (!o.rows) o.rows = (int32_t)(size / ((long)o.vocab * 4));
  if ((long)o.rows * o.vocab * 4 > size) { fprintf(stderr, "mysample %s: --rows %d needs %ld bytes, the file has %ld\n", cmd, (int)o.rows, (long)o.rows * o.vocab * 4, size); fclose(f); return 2; }
  /* the sequence holds the prompt, the output so far and, with --accept,
     every draw of a row; DRY may scan all of it */
  if ((long long)o.n_prompt + o.n_output + (o.accept ? o.draws : 0) + 1 > (1 << 28)) {
    fprintf(stderr, "mysample %s: prompt + output + draws exceed %d tokens\n", cmd, 1 << 28); fclose(f); return 2;
  }
  cap = o.n_prompt + o.n_output + (o.accept ? o.draws : 0) + 1;
  row = (float *)malloc(sizeof(float) * (size_t)o.vocab);
  probs = (float *)malloc(sizeof(float) * (size_t)o.vocab);
  top = (ms_logprob *)malloc(sizeof(ms_logprob) * (size_t)(o.top > 0 ? o.top : 1));
  if (o.p.mirostat) mus = (float *)malloc(sizeof(float) * (size_t)o.draws);
  memset(&d, 0, sizeof d); d.max_vocab = o.vocab; d.max_history = cap;
  if (!row || !probs || !top || (o.p.mirostat && !mus) || ms_sampler_create(&s, &d) != MS_OK ||
      ms_seq_create(&base, cap) != MS_OK || ms_seq_create(&seq, cap) != MS_OK) { fprintf(stderr, "mysample %s: out of memory\n", cmd); fclose(f); return 1; }
  /* the CPU sequence also serves the GPU path: it checks the ids and gives
     the seed both devices draw with */
  if ((rc = ms_seq_reset(base, o.prompt, o.n_prompt, o.vocab, &o.p, 0)) != MS_OK) { fprintf(stderr, "mysample %s: --prompt-ids: %s\n", cmd, ms_result_str((ms_result)rc)); fclose(f); return 2; }
  for (i = 0; i < o.n_output; i++)
    if ((rc = ms_seq_accept(base, o.output[i])) != MS_OK) { fprintf(stderr, "mysample %s: --output-ids: %s\n", cmd, ms_result_str((ms_result)rc)); fclose(f); return 2; }
  if (o.has_mu) ms_seq_set_mirostat_mu(base, o.mirostat_mu);
  if (o.cuda && (vr = ms_cli_gpu_open(&gpu, o.vocab, o.top, cap, msg, sizeof msg)) != MS_OK) {
    fprintf(stderr, "mysample %s: --device cuda: %s (%s)\n", cmd, msg, ms_result_str(vr));
    fclose(f);
    rc = 3;
    goto out;
  }
  rc = 0;
  for (r = 0; r < o.rows && rc == 0; r++) {
    ms_result res;
    if (fread(row, 4, (size_t)o.vocab, f) != (size_t)o.vocab) { fprintf(stderr, "mysample %s: short read\n", cmd); rc = 1; break; }
    /* every row starts from the same state (seed included) */
    if (ms_seq_copy(seq, base) != MS_OK) { fprintf(stderr, "mysample %s: sequence copy failed\n", cmd); rc = 1; break; }
    if (gpu && (res = ms_cli_gpu_begin_row(gpu, row, o.prompt, o.n_prompt, o.output, o.n_output, &o.p)) != MS_OK) { rc = row_failed(cmd, r, res, &o, gpu); break; }
    if (!strcmp(cmd, "probs")) {
      int first = 1;
      /* the sequence's seed and position: XTC's coin reads them */
      res = gpu ? ms_cli_gpu_probs(gpu, &o.p, ms_seq_seed(seq), ms_seq_position(seq), probs)
                : ms_probs(s, row, o.vocab, &o.p, seq, probs);
      if (res != MS_OK) { rc = row_failed(cmd, r, res, &o, gpu); break; }
      printf("{\"row\": %d, \"probs\": {", (int)r);
      for (i = 0; i < o.vocab; i++) if (probs[i] > 0.0f) { printf(first ? "\"%d\": " : ", \"%d\": ", (int)i); put_float(probs[i]); first = 0; }
      printf("}}\n");
    } else if (!strcmp(cmd, "sample")) {
      /* the line opens with the first token, so a row refused at its first
         draw prints nothing on stdout */
      for (i = 0; i < o.draws; i++) {
        ms_output out; memset(&out, 0, sizeof out);
        ms_seq_set_position(seq, o.position + (uint64_t)i);
        res = gpu ? ms_cli_gpu_sample(gpu, &o.p, ms_seq_seed(seq), o.position + (uint64_t)i, o.accept, &out, -1)
                  : ms_sample(s, row, o.vocab, &o.p, seq, &out);
        if (res != MS_OK) { if (i) printf("]}\n"); rc = row_failed(cmd, r, res, &o, gpu); break; }
        if (i == 0) printf("{\"row\": %d, \"seed\": %llu, \"tokens\": [", (int)r, (unsigned long long)ms_seq_seed(seq));
        printf(i ? ", %d" : "%d", (int)out.token);
        if (mus) mus[i] = out.mirostat_mu;
        /* a generation step: the token joins the history; mirostat's mu
           and the budget's state move with it (on the GPU the kernel
           appended it to the device slot) */
        if (o.accept && !gpu && (res = ms_seq_accept_output(seq, &out)) != MS_OK) {
          printf("]}\n"); fprintf(stderr, "mysample %s: row %d: accept: %s\n", cmd, (int)r, ms_result_str(res)); rc = 3; break;
        }
      }
      if (rc == 0) {
        printf("]");
        if (mus) {
          printf(", \"mirostat_mu\": [");
          for (i = 0; i < o.draws; i++) { if (i) printf(", "); put_float(mus[i]); }
          printf("]");
        }
        if (o.p.budget_tokens >= 0) {
          int32_t left = 0;
          ms_budget_state st = ms_seq_budget_state(seq, &left);
          if (gpu && ms_cli_gpu_budget_state(gpu, &st, &left) != MS_OK) st = MS_BUDGET_IDLE;   /* the device slot's */
          printf(", \"budget\": {\"state\": \"%s\", \"remaining\": %d}", budget_state_name(st), (int)left);
        }
        printf("}\n");
      }
    } else {
      ms_output out; memset(&out, 0, sizeof out);
      out.top = top; out.top_capacity = o.top;
      ms_seq_set_position(seq, o.position);
      res = gpu ? ms_cli_gpu_sample(gpu, &o.p, ms_seq_seed(seq), o.position, 0, &out, o.token)
          : o.token >= 0 ? ms_score(s, row, o.vocab, &o.p, seq, o.token, &out)
                         : ms_sample(s, row, o.vocab, &o.p, seq, &out);
      if (res != MS_OK) { rc = row_failed(cmd, r, res, &o, gpu); break; }
      printf("{\"row\": %d, \"token\": %d, \"logprob\": ", (int)r, (int)out.token);
      put_float(out.logprob);
      printf(", \"rank\": %d, \"top\": [", (int)out.rank);
      for (i = 0; i < out.n_top; i++) { printf(i ? ", [%d, " : "[%d, ", (int)out.top[i].token); put_float(out.top[i].logprob); printf("]"); }
      printf("]}\n");
    }
  }
  fclose(f);
out:
  ms_cli_gpu_close(gpu);
  ms_seq_destroy(seq); ms_seq_destroy(base); ms_sampler_destroy(s);
  free(row); free(probs); free(top); free(mus);
  free(o.prompt); free(o.output); free(o.allowed); free(o.banned); free(o.stops); free(o.bias);
  free(o.bad_ids); free(o.bad_lens); free(o.dry_ids); free(o.dry_lens); free(o.budget_start); free(o.budget_end);
  return rc;
}
