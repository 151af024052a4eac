/* ---- implementation: the GPU sampler object, packing, launches ------------- */

/* Row flags: keep in sync with F_* in src/cuda/kernels.cu. */
#define MS__CUDA_F_GREEDY   1
#define MS__CUDA_F_HF       2
#define MS__CUDA_F_WORK     4
#define MS__CUDA_F_MASK     8
#define MS__CUDA_F_POS_SLOT 16
#define MS__CUDA_F_ACCEPT   32
#define MS__CUDA_F_LP_PROC  64
#define MS__CUDA_F_PEN      128
#define MS__CUDA_F_BIAS     256
#define MS__CUDA_F_ALLOWED  512
#define MS__CUDA_F_MINTOK   1024
#define MS__CUDA_F_RAW_LSE  2048
#define MS__CUDA_F_END      4096   /* a pass writes the row's result (ms_k_row skips it) */
#define MS__CUDA_F_TOPP_BINS 16384 /* top_p by bins (P_PBIN, P_PGATHER) */
#define MS__CUDA_F_JOINT    8192   /* the SGLang profile (with F_HF: repetition divides, top_k on the whole row) */
#define MS__CUDA_F_BADW     32768  /* bad words of two ids or more (matched on the device) */
#define MS__CUDA_F_NGRAM    65536  /* HF no_repeat_ngram */
#define MS__CUDA_F_DECAY    131072 /* HF exponential length decay */
#define MS__CUDA_F_BW_ALL   524288 /* bad words match prompt + output */
#define MS__CUDA_F_LLPEN    1048576 /* llama.cpp penalties over a window of the slot's history */
#define MS__CUDA_F_LLAMA    262144 /* llama.cpp: exactly top_k, then its list stages in ms_k_row */
#define MS__CUDA_F_SIGMA    2097152 /* llama.cpp: top-n-sigma on the whole row before top_k (ms_k_list) */
#define MS__CUDA_F_BUDGET   4194304 /* the slot has a reasoning budget (ms_k_mask may force a token) */
#define MS__CUDA_F_KFAST    8388608 /* top_k <= MS__CUDA_KFAST_MAX: candidates from the statistics' lists (ms_k_tail) */
#define MS__CUDA_F_PB_STATS 16777216 /* F_TOPP_BINS counted by ms_k_stats (no P_PBIN) */
#define MS__CUDA_KFAST_MAX  256     /* MS_KFAST_MAX in kernels.cu */
#define MS__CUDA_BUD_WORDS  (8 + 2 * MS_BUDGET_MAX_IDS)   /* MS_BUD_WORDS in kernels.cu */

#define MS__CUDA_MAX_PARTS 32
#define MS__CUDA_SEL_BYTES 41160   /* sizeof(struct Sel) in kernels.cu */
#define MS__CUDA_PCAND 4096        /* MS_PCAND in kernels.cu: P_PGATHER's listed keys per row */
#define MS__CUDA_MAX_TILES 2048    /* MS_MAXT in kernels.cu */

/* Passes of ms_k_pass: keep in sync with P_* in kernels.cu. */
#define MS__CUDA_P_COUNT 0
#define MS__CUDA_P_CAND 3
#define MS__CUDA_P_MASS 4
#define MS__CUDA_P_SUMS 7
#define MS__CUDA_P_PBIN 8      /* top_p by bins (F_TOPP_BINS), before P_MASS */
#define MS__CUDA_P_PGATHER 9
#define MS__CUDA_P_EPS 10      /* HF epsilon, then eta (ms_k_eps): before P_SUMS */
#define MS__CUDA_P_ETA 11

/* What the rows of a batch need (ms__cuda_pack), so that launches no row
   needs are skipped. */
#define MS__CUDA_N_MASK 1
#define MS__CUDA_N_ROW 2     /* some row needs ms_k_row (logprobs, top_k, a refused row) */
#define MS__CUDA_N_TOPK 4
#define MS__CUDA_N_TOPP 8
#define MS__CUDA_N_SUMS 16
#define MS__CUDA_N_TIES 32   /* an SGLang row with top_k or top_p: its cut may fall inside a tie */
#define MS__CUDA_N_LIST 64   /* a llama.cpp row: ms_k_list runs its chain */
#define MS__CUDA_N_EPS 128   /* an HF row with epsilon or eta: P_EPS, P_ETA */
#define MS__CUDA_N_KFAST 256 /* a row with F_KFAST: ms_k_tail */
#define MS__CUDA_N_FULL 512  /* a row that needs the passes (not F_KFAST) */
#define MS__CUDA_N_PBIN 1024 /* an F_TOPP_BINS row without F_PB_STATS: P_PBIN */
#define MS__CUDA_N_LP 2048   /* a row with logprobs: ms_k_lp after ms_k_row */
#define MS__CUDA_N_STATS 4096   /* a row ms_k_stats reads (not F_PB_STATS) */
#define MS__CUDA_N_PBSTATS 8192 /* a row ms_k_pbstats reads (F_PB_STATS) */
#define MS__CUDA_MAX_TOP 1024   /* MS_CAND in kernels.cu */
#define MS__CUDA_ROW_THREADS 1024
#define MS__CUDA_THREADS 256

/* Packed row parameters: struct Row in kernels.cu (200 bytes). Offsets are
   in 4-byte words from the start of the parameter blob. */
typedef struct ms__cuda_row {
  uint64_t seed, position;
  float inv_temp, top_p, min_p, presence, frequency, repetition;
  int32_t top_k, flags, slot, min_tokens, eos, logprobs;
  int32_t allowed_off, n_allowed, banned_off, n_banned, stop_off, n_stop;
  int32_t bias_tok_off, n_bias, bias_val_off, bitmask_off, status;
  int32_t bw_off, n_bw, ngram, decay_start;
  float decay_factor;
  float ll_top_p, ll_log_min_p, ll_temp;
  int32_t ll_stages, ll_last_n, ll_pen_off, ll_n_pen;
  float ll_typical, ll_xtc_p, ll_xtc_t, ll_dyn_range, ll_dyn_exp;
  int32_t ll_min_keep;
  float ll_sigma;
  int32_t forced;
  float eps_cut, eta_cut;
  int32_t given;   /* score_tokens[r], -1: draw */
} ms__cuda_row;

/* Kernel arguments: struct Args in kernels.cu (passed by value). */
typedef struct ms__cuda_args {
  uint64_t logits, stride, blob, allow_bits, bias_bits, work, parts;
  uint64_t seq_state, seq_len, seq_stride, tokens, out, top, probs, probs_stride;
  int32_t n_rows, vocab, words, n_parts, chunk, top_stride, n_slots, pass;
  uint64_t sel;
  uint64_t hist;
  int32_t hist_cap, hist_pad;
  uint64_t budget;
  uint64_t pcand;         /* top_p's bins: per row, MS__CUDA_PCAND keys, then their ids */
} ms__cuda_args;

/* struct SeqArgs in kernels.cu. */
typedef struct ms__cuda_seq_args {
  uint64_t seq_state, seq_len, seq_stride, ids, slots;
  int32_t slot, n, vocab, n_slots;
  uint64_t hist;
  int32_t hist_cap, hist_pad;
  uint64_t budget;
  int32_t bud_tokens, bud_n_start, bud_n_end, bud_pad;
  int32_t bud_ids[2 * MS_BUDGET_MAX_IDS];
} ms__cuda_seq_args;

/* Layout checks (a negative array size fails the build). */
typedef char ms__cuda_check_row[(sizeof(ms__cuda_row) == 200) ? 1 : -1];
typedef char ms__cuda_check_args[(sizeof(ms__cuda_args) == 192) ? 1 : -1];
typedef char ms__cuda_check_seq[(sizeof(ms__cuda_seq_args) == 352) ? 1 : -1];
typedef char ms__cuda_check_out[(sizeof(ms_cuda_out) == 40) ? 1 : -1];
typedef char ms__cuda_check_lp[(sizeof(ms_logprob) == 8) ? 1 : -1];

/* The profile numbers the packing needs, by ms_profile (vLLM, HF,
   SGLang): keep in sync with ms__profiles in src/impl_params.c
   (greedy_below, temp_floor, bias_clamp). */
static const float ms__cuda_greedy_below[3] = { 1e-5f, 1e-30f, 1e-6f };
static const float ms__cuda_temp_floor[3] = { 0.01f, 0.0f, 0.0f };
static const float ms__cuda_bias_clamp[4] = { 100.0f, 0.0f /* none */, 0.0f, 0.0f };

/* The llama.cpp rows the kernels take (src/impl_chain.c is the
   reference): a chain whose first acting stage is top_k, with 1 <= k <=
   1024 and k < vocab, followed by any of top_p, min_p, typical, XTC and
   the temperature (plain or dynamic), or a chain whose temperature is <=
   0 with no typical or XTC before it (the argmax, as the CPU takes it).
   Penalties (they act only on a row with a slot) must lead the chain, as
   the CPU applies them to the whole row only there. Refused: mirostat,
   top-n-sigma, and DRY on a row with a slot. Returns NULL when the row is
   taken, with *stages (3 bits per stage after top_k, from the lowest: 1
   top_p, 2 min_p, 3 temperature, 4 typical, 5 XTC), *greedy and *pen
   (penalties to apply), else why it is refused. */
static const char *ms__cuda_llama_plan(const ms_params *p, int32_t slot, int32_t V, int32_t *stages, int *greedy, int *pen,
                               int *row_sigma) {
  const char *order = p->samplers ? p->samplers : "edskypmxt", *q;
  const int dry = slot >= 0 && p->dry_multiplier != 0.0f && p->dry_base >= 1.0f && p->dry_last_n != 0;
  const int typ = p->typical_p < 1.0f, xtc = p->xtc_probability > 0.0f && p->xtc_threshold <= 0.5f;
  int seen_k = 0, shift = 0;
  *stages = 0;
  *greedy = 0;
  *row_sigma = 0;
  *pen = slot >= 0 && p->penalty_last_n != 0 &&
         (p->repetition_penalty != 1.0f || p->frequency_penalty != 0.0f || p->presence_penalty != 0.0f);
  if (*pen) {
    for (q = order; *q == 'd'; q++) {}   /* the leading run of penalties and DRY */
    if (*q != 'e') return "llama.cpp's penalties run first on the GPU: `samplers` must start with them ('e', after any 'd')";
  }
  if (p->mirostat) return "llama.cpp's mirostat is not implemented on the GPU";
  if (dry) return "llama.cpp's DRY is not implemented on the GPU";
  if (strchr(order, 't') && p->temperature <= 0.0f && p->dynatemp_range <= 0.0f) {
    /* the argmax, unless typical or XTC (which can drop the maximum) come
       first; top-n-sigma never drops it */
    for (q = order; *q && *q != 't'; q++)
      if ((*q == 'y' && typ) || (*q == 'x' && xtc)) break;
    if (*q == 't') { *greedy = 1; return NULL; }
  }
  for (q = order; *q; q++) {
    int code = 0;
    if (*q == 'k' && p->top_k > 0) { seen_k = 1; continue; }
    if (*q == 's' && p->top_n_sigma > 0.0f && !seen_k && !*row_sigma) {
      /* the first stage that acts: its cut is over the whole row, then the
         top_k list keeps what is above it (ms_k_list) */
      *row_sigma = 1;
      continue;
    }
    if (*q == 'p' && p->top_p < 1.0f) code = 1;
    else if (*q == 'm' && p->min_p > 0.0f) code = 2;
    else if (*q == 't') code = 3;
    else if (*q == 'y' && typ) code = 4;
    else if (*q == 'x' && xtc) code = 5;
    else if (*q == 's' && p->top_n_sigma > 0.0f) code = 6;
    else continue;   /* a stage that does nothing with these parameters */
    if (!seen_k) return "a llama.cpp chain on the GPU needs top_k before its other samplers";   /* the list would be unbounded */
    *stages |= code << shift;
    shift += 3;
  }
  return seen_k && p->top_k <= MS__CUDA_MAX_TOP && p->top_k < V
             ? NULL : "a llama.cpp chain on the GPU needs top_k in 1..1024, below the vocabulary";
}

struct ms_cuda {
  ms__CUhandle ctx;
  int device, owns_primary;
  ms__CUhandle module[MS__CU_UNITS];
  ms__CUhandle fn[MS__K_COUNT_];
  char target[24];
  char name[128];
  int sm_count;
  int32_t max_rows, max_vocab, max_slots, words, split;
  int32_t hist_cap;       /* tokens of history per slot (ms_cuda_desc.max_history) */
  uint32_t *slot_mark;    /* host: per slot, the last call whose rows accept into it (one accepting row per slot) */
  uint8_t *slot_budget;   /* host: per slot, 1 when its last ms_cuda_seq_reset gave it a reasoning budget */
  uint32_t call_no;
  int topp_bins;          /* top_p rows take the bins first (MS_CUDA_TOPP_BINS) */
  int pdl;                /* launches with programmatic stream serialization (ms__cuda_launch) */
  int nopass;             /* no pass launch when no row needs one ($MYSAMPLE_CUDA_NOPASS = 0: launched, to compare) */
  int kfast;              /* top_k <= 256 by the statistics' lists and ms_k_tail ($MYSAMPLE_CUDA_KFAST = 0: by the passes) */
  int pb_stats;           /* top_p's bins counted by the statistics ($MYSAMPLE_CUDA_PBSTATS = 0: by P_PBIN) */
  int32_t extra_words;
  size_t blob_bytes;
  ms__CUdeviceptr d_blob, d_allow, d_bias, d_work, d_parts, d_sel, d_tokens, d_seq_state, d_seq_len, d_hist, d_budget, d_pcand;
  void *stage[2];
  ms__CUhandle ev[2];
  int ev_used[2];
  int stage_next;
  uint64_t salt;
  char err[256];          /* why the last sampling call refused something (ms_cuda_last_error) */
};

static int32_t ms__cuda_words(int32_t vocab) { return (vocab + 31) / 32; }

static int32_t ms__cuda_extra_words(const ms_cuda_desc *d) {
  long long w;
  if (d->max_extra_words > 0) return d->max_extra_words;
  w = (long long)d->max_rows * (ms__cuda_words(d->max_vocab) + 256) + 65536;
  return w > 0x3fffffff ? 0x3fffffff : (int32_t)w;
}

static int ms__cuda_desc_ok(const ms_cuda_desc *d) {
  return d && d->max_rows >= 1 && d->max_rows <= (1 << 20) && d->max_vocab >= 1 &&
         d->max_vocab <= (1 << 28) && d->max_slots >= 0 && d->max_extra_words >= 0 &&
         d->topp >= MS_CUDA_TOPP_DEFAULT && d->topp <= MS_CUDA_TOPP_BINS &&
         d->max_history >= 0 && d->max_history <= (1 << 24) && d->split >= -1 && d->split <= MS__CUDA_MAX_PARTS;
}

/* Whether top_p takes the bins first: ms_cuda_desc.topp, or by default
   $MYSAMPLE_CUDA_TOPP = bins (radix, or unset: no); -1 for another value
   (refused, not taken for radix: a typo would time the wrong build). */
static int ms__cuda_topp_bins(const ms_cuda_desc *d) {
  const char *e;
  if (d->topp != MS_CUDA_TOPP_DEFAULT) return d->topp == MS_CUDA_TOPP_BINS;
  e = ms__cu_getenv("MYSAMPLE_CUDA_TOPP");
  if (!e || !*e || !strcmp(e, "radix")) return 0;
  return !strcmp(e, "bins") ? 1 : -1;
}

/* An on/off switch of the environment (the routes' A/B switches): unset
   or empty, the default; "1" on, "0" off; -1 for another value. */
static int ms__cuda_env_switch(const char *name, int def) {
  const char *e = ms__cu_getenv(name);
  if (!e || !*e) return def;
  if (!strcmp(e, "0") || !strcmp(e, "1")) return e[0] - '0';
  return -1;
}

/* Tokens of history per slot: ms_cuda_desc.max_history, 64 by default. */
static int32_t ms__cuda_hist_cap(const ms_cuda_desc *d) { return d->max_history > 0 ? d->max_history : 64; }

MSDEF size_t ms_cuda_workspace_size(const ms_cuda_desc *d) {
  size_t rows, V, W, S, n;
  if (!ms__cuda_desc_ok(d)) return 0;
  rows = (size_t)d->max_rows; V = (size_t)d->max_vocab; W = (size_t)ms__cuda_words(d->max_vocab);
  S = (size_t)d->max_slots;
  n = rows * sizeof(ms__cuda_row) + (size_t)ms__cuda_extra_words(d) * 4; /* blob */
  n += 2 * rows * W * 4;                                                 /* allow + bias bits */
  n += rows * V * 4;                                                     /* work rows */
  n += rows * MS__CUDA_MAX_PARTS * 24;                                   /* partials */
  n += rows * MS__CUDA_SEL_BYTES;                                        /* selection states */
  n += rows * 4;                                                         /* tokens */
  n += S * (V + W) * 4 + S * 4;                                          /* sequences: counters, seen bits, lengths */
  n += S * ((size_t)ms__cuda_hist_cap(d) + 1) * 4;                       /* their histories */
  n += S * MS__CUDA_BUD_WORDS * 4;                                       /* their reasoning budgets */
  if (ms__cuda_topp_bins(d) < 0) return 0;                              /* ($MYSAMPLE_CUDA_TOPP: neither) */
  if (ms__cuda_topp_bins(d)) n += rows * MS__CUDA_PCAND * 8;             /* top_p's listed keys */
  return n;
}

/* Makes cu's context current for the duration of a call. */
static ms_result ms__cuda_enter(ms_cuda *cu, int *pushed) {
  ms__CUhandle cur = NULL;
  *pushed = 0;
  if (ms__cu_g.drv.ctx_get_current(&cur) != MS__CUDA_SUCCESS) return MS_ERR_DEVICE;
  if (cur == cu->ctx) return MS_OK;
  if (ms__cu_g.drv.ctx_push(cu->ctx) != MS__CUDA_SUCCESS) return MS_ERR_DEVICE;
  *pushed = 1;
  return MS_OK;
}
static void ms__cuda_leave(int pushed) {
  ms__CUhandle c;
  if (pushed) ms__cu_g.drv.ctx_pop(&c);
}

MSDEF void ms_cuda_destroy(ms_cuda *cu) {
  const ms__cu_driver *d = &ms__cu_g.drv;
  int pushed = 0, i;
  if (!cu) return;
  if (cu->ctx && ms__cuda_enter(cu, &pushed) == MS_OK) {
    d->ctx_synchronize();
    if (cu->d_blob) d->mem_free(cu->d_blob);
    if (cu->d_allow) d->mem_free(cu->d_allow);
    if (cu->d_bias) d->mem_free(cu->d_bias);
    if (cu->d_work) d->mem_free(cu->d_work);
    if (cu->d_parts) d->mem_free(cu->d_parts);
    if (cu->d_sel) d->mem_free(cu->d_sel);
    if (cu->d_tokens) d->mem_free(cu->d_tokens);
    if (cu->d_seq_state) d->mem_free(cu->d_seq_state);
    if (cu->d_seq_len) d->mem_free(cu->d_seq_len);
    if (cu->d_hist) d->mem_free(cu->d_hist);
    if (cu->d_budget) d->mem_free(cu->d_budget);
    if (cu->d_pcand) d->mem_free(cu->d_pcand);
    for (i = 0; i < 2; i++) {
      if (cu->stage[i]) d->mem_free_host(cu->stage[i]);
      if (cu->ev[i]) d->event_destroy(cu->ev[i]);
    }
    for (i = 0; i < MS__CU_UNITS; i++) if (cu->module[i]) d->module_unload(cu->module[i]);
    ms__cuda_leave(pushed);
  }
  if (cu->owns_primary) d->primary_release(cu->device);
  MS__CU_FREE(cu->slot_mark);
  MS__CU_FREE(cu->slot_budget);
  MS__CU_FREE(cu);
}

MSDEF ms_result ms_cuda_create(ms_cuda **out, const ms_cuda_desc *desc, char *msg, size_t msg_size) {
  const ms__cu_driver *d = &ms__cu_g.drv;
  ms_cuda *cu;
  ms_result rc;
  ms__CUresult e;
  int pushed = 0, major = 0, minor = 0, i;
  const ms__cu_bin *bin = NULL;
  ms_cuda_compile_opts co;
  size_t V, W, rows;
  if (msg && msg_size) msg[0] = 0;
  if (!out || !desc) { ms__cu_msg(msg, msg_size, "out and desc must not be NULL"); return MS_ERR_NULL_ARGUMENT; }
  *out = NULL;
  if (!ms__cuda_desc_ok(desc)) {
    ms__cu_msg(msg, msg_size, "bad ms_cuda_desc: max_rows %d (1..2^20), max_vocab %d (1..2^28), max_slots %d, max_extra_words %d, "
               "topp %d (0..2), max_history %d (0..2^24), split %d (-1..%d)", (int)desc->max_rows, (int)desc->max_vocab,
               (int)desc->max_slots, (int)desc->max_extra_words, (int)desc->topp, (int)desc->max_history, (int)desc->split,
               MS__CUDA_MAX_PARTS);
    return desc->max_vocab < 1 || desc->max_vocab > (1 << 28) ? MS_ERR_BAD_VOCAB : MS_ERR_INVALID_PARAM;
  }
  if (ms__cuda_topp_bins(desc) < 0) {
    ms__cu_msg(msg, msg_size, "MYSAMPLE_CUDA_TOPP: '%s' is not radix or bins", ms__cu_getenv("MYSAMPLE_CUDA_TOPP"));
    return MS_ERR_INVALID_PARAM;
  }
  {
    static const char *const sw[] = {"MYSAMPLE_CUDA_PDL", "MYSAMPLE_CUDA_NOPASS", "MYSAMPLE_CUDA_KFAST", "MYSAMPLE_CUDA_PBSTATS"};
    for (i = 0; i < 4; i++)
      if (ms__cuda_env_switch(sw[i], 1) < 0) {
        ms__cu_msg(msg, msg_size, "%s: '%s' is not 0 or 1", sw[i], ms__cu_getenv(sw[i]));
        return MS_ERR_INVALID_PARAM;
      }
  }
  rc = ms_cuda_load_driver(desc->driver_path, msg, msg_size);
  if (rc != MS_OK) return rc;
  rc = ms_cuda_load_nvrtc(desc->nvrtc_path, msg, msg_size);
  if (rc != MS_OK) return rc;
  cu = (ms_cuda *)MS__CU_MALLOC(sizeof *cu);
  if (!cu) { ms__cu_msg(msg, msg_size, "out of memory"); return MS_ERR_OUT_OF_MEMORY; }
  memset(cu, 0, sizeof *cu);
  cu->max_rows = desc->max_rows; cu->max_vocab = desc->max_vocab; cu->max_slots = desc->max_slots;
  cu->words = ms__cuda_words(desc->max_vocab); cu->split = desc->split;
  cu->hist_cap = ms__cuda_hist_cap(desc);
  if (cu->max_slots > 0) {
    cu->slot_mark = (uint32_t *)MS__CU_MALLOC((size_t)cu->max_slots * sizeof *cu->slot_mark);
    cu->slot_budget = (uint8_t *)MS__CU_MALLOC((size_t)cu->max_slots);
    if (!cu->slot_mark || !cu->slot_budget) {
      MS__CU_FREE(cu->slot_mark); MS__CU_FREE(cu->slot_budget); MS__CU_FREE(cu);
      ms__cu_msg(msg, msg_size, "out of memory");
      return MS_ERR_OUT_OF_MEMORY;
    }
    memset(cu->slot_mark, 0, (size_t)cu->max_slots * sizeof *cu->slot_mark);
    memset(cu->slot_budget, 0, (size_t)cu->max_slots);
  }
  cu->topp_bins = ms__cuda_topp_bins(desc);
  cu->extra_words = ms__cuda_extra_words(desc);
  cu->salt = (uint64_t)(uintptr_t)cu;

  /* the context: the caller's, the thread's current one, or the primary */
  if (desc->context) cu->ctx = desc->context;
  else {
    ms__CUhandle cur = NULL;
    if (d->ctx_get_current(&cur) == MS__CUDA_SUCCESS && cur) cu->ctx = cur;
    else {
      int dev = 0;
      e = d->device_get(&dev, desc->device);
      if (e == MS__CUDA_SUCCESS) e = d->primary_retain(&cu->ctx, dev);
      if (e != MS__CUDA_SUCCESS) {
        ms__cu_msg(msg, msg_size, "device %d: %s", (int)desc->device, ms__cu_errstr(e));
        MS__CU_FREE(cu->slot_mark); MS__CU_FREE(cu->slot_budget); MS__CU_FREE(cu);
        return MS_ERR_NO_DEVICE;
      }
      cu->device = dev;
      cu->owns_primary = 1;
    }
  }
  rc = MS_ERR_DEVICE;
  if (ms__cuda_enter(cu, &pushed) != MS_OK) { ms__cu_msg(msg, msg_size, "cannot make the CUDA context current"); goto fail; }
  if ((e = d->ctx_get_device(&cu->device)) != MS__CUDA_SUCCESS ||
      (e = d->device_attr(&major, MS__CU_ATTR_CC_MAJOR, cu->device)) != MS__CUDA_SUCCESS ||
      (e = d->device_attr(&minor, MS__CU_ATTR_CC_MINOR, cu->device)) != MS__CUDA_SUCCESS ||
      (e = d->device_attr(&cu->sm_count, MS__CU_ATTR_SM_COUNT, cu->device)) != MS__CUDA_SUCCESS) {
    ms__cu_msg(msg, msg_size, "device query: %s", ms__cu_errstr(e));
    goto fail;
  }
  if (d->device_name(cu->name, (int)sizeof cu->name, cu->device) != MS__CUDA_SUCCESS) snprintf(cu->name, sizeof cu->name, "CUDA device %d", cu->device);
  if (major * 10 + minor < 70) {
    ms__cu_msg(msg, msg_size, "%s is sm_%d%d; mysample_cuda.h needs sm_70 or newer", cu->name, major, minor);
    rc = MS_ERR_NO_DEVICE;
    goto fail;
  }

  /* programmatic dependent launches: sm_90+, a CUDA 12.3+ driver (the
     first whose graphs capture them), and not turned off
     ($MYSAMPLE_CUDA_PDL = 0) */
  {
    int drv = 0;
    cu->pdl = major >= 9 && d->launch_ex != NULL && d->driver_version(&drv) == MS__CUDA_SUCCESS && drv >= 12030;
    if (!ms__cuda_env_switch("MYSAMPLE_CUDA_PDL", 1)) cu->pdl = 0;
  }
  cu->nopass = ms__cuda_env_switch("MYSAMPLE_CUDA_NOPASS", 1);
  cu->kfast = ms__cuda_env_switch("MYSAMPLE_CUDA_KFAST", 1);
  cu->pb_stats = ms__cuda_env_switch("MYSAMPLE_CUDA_PBSTATS", 1);

  /* kernels: caches, else NVRTC */
  memset(&co, 0, sizeof co);
  co.nvrtc_path = desc->nvrtc_path;
  co.cache_dir = desc->cache_dir;
  co.topp_bins = cu->topp_bins;   /* the bins' passes are compiled in only when asked for */
  rc = ms_cuda_compile(major * 10 + minor, &co, NULL, msg, msg_size);
  if (rc != MS_OK) goto fail;
  ms__cu_lock(&ms__cu_compile_mu);
  rc = ms__cu_compile_locked(major * 10 + minor, &co, NULL, &bin, msg, msg_size);  /* memory hit */
  ms__cu_unlock(&ms__cu_compile_mu);
  if (rc != MS_OK) goto fail;
  rc = MS_ERR_DEVICE;
  snprintf(cu->target, sizeof cu->target, "%s", bin->target);
  for (i = 0; i < bin->n_units; i++) {   /* (the bins' programs only in a build with them) */
    if ((e = d->module_load_data(&cu->module[i], bin->data + bin->off[i])) != MS__CUDA_SUCCESS) {
      ms__cu_msg(msg, msg_size, "cuModuleLoadData (%s, unit %d): %s", bin->target, i, ms__cu_errstr(e));
      goto fail;
    }
  }
  for (i = 0; i < MS__K_COUNT_; i++) {
    if (ms__cu_kernel_unit[i] >= bin->n_units) continue;
    if ((e = d->module_get_function(&cu->fn[i], cu->module[ms__cu_kernel_unit[i]], ms__cu_kernel_names[i])) != MS__CUDA_SUCCESS) {
      ms__cu_msg(msg, msg_size, "cuModuleGetFunction %s: %s", ms__cu_kernel_names[i], ms__cu_errstr(e));
      goto fail;
    }
  }

  /* the workspace, once */
  rows = (size_t)cu->max_rows; V = (size_t)cu->max_vocab; W = (size_t)cu->words;
  cu->blob_bytes = rows * sizeof(ms__cuda_row) + (size_t)cu->extra_words * 4;
  rc = MS_ERR_OUT_OF_MEMORY;
  if ((e = d->mem_alloc(&cu->d_blob, cu->blob_bytes)) != MS__CUDA_SUCCESS ||
      (e = d->mem_alloc(&cu->d_allow, rows * W * 4)) != MS__CUDA_SUCCESS ||
      (e = d->mem_alloc(&cu->d_bias, rows * W * 4)) != MS__CUDA_SUCCESS ||
      (e = d->mem_alloc(&cu->d_work, rows * V * 4)) != MS__CUDA_SUCCESS ||
      (e = d->mem_alloc(&cu->d_parts, rows * MS__CUDA_MAX_PARTS * 24)) != MS__CUDA_SUCCESS ||
      (e = d->mem_alloc(&cu->d_sel, rows * MS__CUDA_SEL_BYTES)) != MS__CUDA_SUCCESS ||
      (e = d->mem_alloc(&cu->d_tokens, rows * 4)) != MS__CUDA_SUCCESS ||
      (cu->max_slots > 0 && (e = d->mem_alloc(&cu->d_seq_state, (size_t)cu->max_slots * (V + W) * 4)) != MS__CUDA_SUCCESS) ||
      (cu->max_slots > 0 && (e = d->mem_alloc(&cu->d_seq_len, (size_t)cu->max_slots * 4)) != MS__CUDA_SUCCESS) ||
      (cu->max_slots > 0 && (e = d->mem_alloc(&cu->d_hist, (size_t)cu->max_slots * ((size_t)cu->hist_cap + 1) * 4)) != MS__CUDA_SUCCESS) ||
      (cu->max_slots > 0 && (e = d->mem_alloc(&cu->d_budget, (size_t)cu->max_slots * MS__CUDA_BUD_WORDS * 4)) != MS__CUDA_SUCCESS) ||
      (cu->topp_bins && (e = d->mem_alloc(&cu->d_pcand, rows * MS__CUDA_PCAND * 8)) != MS__CUDA_SUCCESS)) {
    ms__cu_msg(msg, msg_size, "cuMemAlloc (%llu bytes in all): %s", (unsigned long long)ms_cuda_workspace_size(desc), ms__cu_errstr(e));
    goto fail;
  }
  for (i = 0; i < 2; i++) {
    if ((e = d->mem_alloc_host(&cu->stage[i], cu->blob_bytes)) != MS__CUDA_SUCCESS ||
        (e = d->event_create(&cu->ev[i], MS__CU_EVENT_DISABLE_TIMING)) != MS__CUDA_SUCCESS) {
      ms__cu_msg(msg, msg_size, "pinned staging / events: %s", ms__cu_errstr(e));
      goto fail;
    }
  }
  /* the rows' selection states start zero (their arrival counts and
     histograms return to zero after every use); empty sequences until ms_cuda_seq_reset */
  if ((e = d->memset_d32_async(cu->d_sel, 0u, rows * MS__CUDA_SEL_BYTES / 4, NULL)) != MS__CUDA_SUCCESS ||
      (cu->max_slots > 0 && (e = d->memset_d32_async(cu->d_seq_state, 0u, (size_t)cu->max_slots * (V + W), NULL)) != MS__CUDA_SUCCESS) ||
      (cu->max_slots > 0 && (e = d->memset_d32_async(cu->d_seq_len, 0u, (size_t)cu->max_slots, NULL)) != MS__CUDA_SUCCESS) ||
      (cu->max_slots > 0 && (e = d->memset_d32_async(cu->d_hist, 0u, (size_t)cu->max_slots * ((size_t)cu->hist_cap + 1), NULL)) != MS__CUDA_SUCCESS) ||
      /* no budgets: word 0 of each is -1 */
      (cu->max_slots > 0 && (e = d->memset_d32_async(cu->d_budget, 0xffffffffu, (size_t)cu->max_slots * MS__CUDA_BUD_WORDS, NULL)) != MS__CUDA_SUCCESS) ||
      (e = d->ctx_synchronize()) != MS__CUDA_SUCCESS) {
    ms__cu_msg(msg, msg_size, "clearing the workspace: %s", ms__cu_errstr(e));
    rc = MS_ERR_DEVICE;
    goto fail;
  }
  ms__cuda_leave(pushed);
  ms__cu_msg(msg, msg_size, "%s (%s, %d SMs)", cu->name, cu->target, cu->sm_count);
  *out = cu;
  return MS_OK;
fail:
  ms__cuda_leave(pushed);
  ms_cuda_destroy(cu);
  return rc;
}

MSDEF const char *ms_cuda_target(const ms_cuda *cu) { return cu ? cu->target : ""; }
MSDEF const char *ms_cuda_device_name(const ms_cuda *cu) { return cu ? cu->name : ""; }
MSDEF int ms_cuda_pdl(const ms_cuda *cu) { return cu ? cu->pdl : 0; }
MSDEF const char *ms_cuda_last_error(const ms_cuda *cu) { return cu ? cu->err : ""; }

/* -- packing ------------------------------------------------------------------ */

/* Sorts the indices idx[0..n) of the bias entries by (token, index): one
   token's entries stay in the caller's order (shell sort, in place; the
   index makes every key distinct, so the result is the stable order). */
static void ms__cuda_sort_bias(int32_t *idx, const ms_bias *bias, int32_t n) {
  int32_t gap, i, j;
  for (gap = n / 2; gap > 0; gap /= 2) {
    for (i = gap; i < n; i++) {
      int32_t x = idx[i], t = bias[x].token;
      for (j = i; j >= gap && (bias[idx[j - gap]].token > t || (bias[idx[j - gap]].token == t && idx[j - gap] > x)); j -= gap)
        idx[j] = idx[j - gap];
      idx[j] = x;
    }
  }
}

/* The message of the last call's first refusal (ms_cuda_last_error). */
static ms_result ms__cuda_refuse(ms_cuda *cu, ms_result rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cu->err, sizeof cu->err, fmt, ap);
  va_end(ap);
  return rc;
}

/* Packs the rows into the staging buffer: rows, then the lists; *needs
   gets the MS__CUDA_N_* of the valid rows. Returns the bytes used, or 0
   when the lists do not fit. */
static size_t ms__cuda_pack(ms_cuda *cu, const ms_cuda_batch *b, void *stage, int accept_ok, int ends_ok,
                            int *needs, ms_result *first_err) {
  ms__cuda_row *rows = (ms__cuda_row *)stage;
  int32_t *words = (int32_t *)stage;
  const int32_t V = b->vocab, nw = ms__cuda_words(b->vocab);
  size_t used = (size_t)b->n_rows * sizeof(ms__cuda_row) / 4;   /* in words */
  const size_t cap = cu->blob_bytes / 4;
  int32_t r, j;
  *needs = 0;
  *first_err = MS_OK;
  for (r = 0; r < b->n_rows; r++) {
    ms__cuda_row *R = &rows[r];
    const ms_params *p = b->params[r];
    ms_result rc;
    char why[200];
    const char *plan;
    int prof, flags = 0, ll_greedy = 0, ll_pen = 0, ll_sigma = 0;
    int32_t slot = b->slots ? b->slots[r] : -1, ll_stages = 0;
    float T;
    memset(R, 0, sizeof *R);
    R->slot = -1; R->eos = -1; R->logprobs = -1; R->bitmask_off = -1; R->repetition = 1.0f; R->top_p = 1.0f; R->forced = -1;
    R->given = -1;
    /* a refused row's reason goes into why (cold: refused rows only) */
    why[0] = '\0';
    rc = p ? ms_params_validate(p, V, why, sizeof why) : MS_ERR_NULL_ARGUMENT;
    if (!p) snprintf(why, sizeof why, "params is NULL.");
    if (rc == MS_OK && (slot < -1 || slot >= cu->max_slots)) {
      rc = MS_ERR_INVALID_PARAM;
      snprintf(why, sizeof why, "slot %d is outside -1..%d (max_slots - 1)", (int)slot, (int)cu->max_slots - 1);
    }
    if (rc == MS_OK && p->profile == MS_PROFILE_LLAMACPP &&
        (plan = ms__cuda_llama_plan(p, slot, V, &ll_stages, &ll_greedy, &ll_pen, &ll_sigma)) != NULL) {
      rc = MS_ERR_UNSUPPORTED;
      snprintf(why, sizeof why, "%s", plan);
    }
    /* what the kernels do not implement yet is refused, never ignored */
    if (rc == MS_OK && p->hook_stage != MS_HOOK_OFF) {
      rc = MS_ERR_UNSUPPORTED;
      snprintf(why, sizeof why, "logits hooks run on the CPU only");
    }
    if (rc == MS_OK && p->profile != MS_PROFILE_LLAMACPP && p->min_tokens_to_keep > 1) {
      rc = MS_ERR_UNSUPPORTED;
      snprintf(why, sizeof why, "min_tokens_to_keep > 1 is not implemented on the GPU (but in the llama.cpp profile)");
    }
    if (rc == MS_OK && p->profile != MS_PROFILE_LLAMACPP && p->typical_p < 1.0f) {
      rc = MS_ERR_UNSUPPORTED;
      snprintf(why, sizeof why, "typical_p is not implemented on the GPU (but in the llama.cpp profile)");
    }
    /* the kernels gather at most MS__CUDA_MAX_TOP top logprobs per row */
    if (rc == MS_OK && b->top && p->logprobs > MS__CUDA_MAX_TOP && b->top_stride > MS__CUDA_MAX_TOP) {
      rc = MS_ERR_UNSUPPORTED;
      snprintf(why, sizeof why, "the GPU gathers at most %d top logprobs a row", MS__CUDA_MAX_TOP);
    }
    /* a bad word is matched against the last hist_cap tokens the device keeps */
    if (rc == MS_OK && slot >= 0) {
      int32_t w;
      for (w = 0; w < p->n_bad_words && rc == MS_OK; w++)
        if (p->bad_words_lens[w] - 1 > cu->hist_cap) {
          rc = MS_ERR_CAPACITY;
          snprintf(why, sizeof why, "bad word %d has %d ids; the device keeps max_history (%d) + 1", (int)w,
                   (int)p->bad_words_lens[w], (int)cu->hist_cap);
        }
    }
    /* a scored row's token (sampling calls only: probs ignore score_tokens) */
    if (rc == MS_OK && b->score_tokens && ends_ok && (b->score_tokens[r] < 0 || b->score_tokens[r] >= V)) {
      rc = MS_ERR_TOKEN_OUT_OF_RANGE;
      snprintf(why, sizeof why, "score token %d is outside [0, %d)", (int)b->score_tokens[r], (int)V);
    }
    /* one row per slot may append to it (two would race for its history) */
    if (rc == MS_OK && slot >= 0 && accept_ok) {
      if (cu->slot_mark[slot] == cu->call_no) {
        rc = MS_ERR_INVALID_PARAM;
        snprintf(why, sizeof why, "another row of this call already appends its token to slot %d", (int)slot);
      } else cu->slot_mark[slot] = cu->call_no;
    }
    if (b->row_results) b->row_results[r] = rc;
    if (rc != MS_OK) {
      R->status = (int32_t)rc;
      if (*first_err == MS_OK) *first_err = ms__cuda_refuse(cu, rc, "row %d: %s", (int)r, why);   /* the call's message */
      *needs |= MS__CUDA_N_ROW;
      continue;
    }
    prof = p->profile == MS_PROFILE_HF ? 1 : p->profile == MS_PROFILE_SGLANG ? 2 : p->profile == MS_PROFILE_LLAMACPP ? 3 : 0;
    if (prof == 1 || prof == 2) flags |= MS__CUDA_F_HF;
    if (prof == 2) flags |= MS__CUDA_F_JOINT;
    R->top_k = (p->top_k > 0 && p->top_k < V) ? p->top_k : 0;
    R->top_p = p->top_p;
    R->min_p = p->min_p;
    if (prof == 3) {
      /* llama.cpp: the passes find top_k's threshold and nothing else (no
         top_p or min_p on the row, weights at T = 1); ms_k_row runs the
         rest of the chain on the list */
      R->top_p = 1.0f; R->min_p = 0.0f; R->inv_temp = 1.0f;
      R->ll_top_p = p->top_p; R->ll_log_min_p = p->min_p > 0.0f ? logf(p->min_p) : 0.0f;
      R->ll_temp = p->temperature; R->ll_stages = ll_stages;
      R->ll_typical = p->typical_p; R->ll_xtc_p = p->xtc_probability; R->ll_xtc_t = p->xtc_threshold;
      R->ll_dyn_range = p->dynatemp_range; R->ll_dyn_exp = p->dynatemp_exponent;
      R->ll_min_keep = p->min_tokens_to_keep > 0 ? p->min_tokens_to_keep : 0;
      R->ll_sigma = p->top_n_sigma;
      flags |= ll_greedy ? MS__CUDA_F_GREEDY : MS__CUDA_F_LLAMA;
      if (ll_sigma && !ll_greedy) flags |= MS__CUDA_F_SIGMA;
      if (ll_pen) {
        /* room for the window's (token, count) pairs: ms_k_mask fills them
           (a window longer than max_history or MS__CUDA_MAX_TOP fails
           the row on the device with MS_ERR_CAPACITY), at most one a
           token of the window: penalty_last_n's when it is shorter (a
           large max_history once reserved 2048 words a row whatever
           the window, and batches failed with MS_ERR_CAPACITY) */
        int32_t w = cu->hist_cap < MS__CUDA_MAX_TOP ? cu->hist_cap : MS__CUDA_MAX_TOP;
        if (p->penalty_last_n > 0 && p->penalty_last_n < w) w = p->penalty_last_n;
        if (used + 2 * (size_t)w > cap) return 0;
        R->ll_last_n = p->penalty_last_n; R->ll_pen_off = (int32_t)used;
        used += 2 * (size_t)w;
        flags |= MS__CUDA_F_LLPEN;
      }
    } else {
      /* vLLM raises 0 < T < 0.01 to 0.01 before its greedy test, so only
         T = 0 is greedy there (as ms_sample does) */
      T = p->temperature;
      if (T > 0.0f && T < ms__cuda_temp_floor[prof]) T = ms__cuda_temp_floor[prof];
      if (!(T >= ms__cuda_greedy_below[prof])) flags |= MS__CUDA_F_GREEDY;
      else R->inv_temp = 1.0f / T;
    }
    R->presence = p->presence_penalty;
    R->frequency = p->frequency_penalty;
    R->repetition = p->repetition_penalty;
    R->slot = slot;
    R->min_tokens = p->min_tokens;
    R->eos = p->eos_token_id;
    R->logprobs = p->logprobs;
    if (b->score_tokens && ends_ok) {
      /* a scored row reports the token's logprob and rank whatever its
         logprobs (-1 reads as 0, as ms_score) */
      R->given = b->score_tokens[r];
      if (R->logprobs < 0) R->logprobs = 0;
    }
    R->seed = b->seeds ? b->seeds[r] : (p->has_seed ? p->seed : ms_fresh_seed(cu->salt++));
    R->position = b->positions ? b->positions[r] : 0;
    if (!b->positions && slot >= 0) flags |= MS__CUDA_F_POS_SLOT;
    if (slot >= 0 && accept_ok) flags |= MS__CUDA_F_ACCEPT;
    /* (llama.cpp's penalties, over a window, are refused when they act) */
    if (prof != 3 && slot >= 0 && (p->repetition_penalty != 1.0f || p->frequency_penalty != 0.0f || p->presence_penalty != 0.0f))
      flags |= MS__CUDA_F_PEN;
    if (p->min_tokens > 0 && (p->eos_token_id >= 0 || p->n_stop_token_ids > 0)) flags |= MS__CUDA_F_MINTOK;
    if (R->logprobs >= 0) flags |= p->logprobs_mode == MS_LOGPROBS_PROCESSED ? MS__CUDA_F_LP_PROC : MS__CUDA_F_RAW_LSE;
    if (p->allowed_ids) {
      flags |= MS__CUDA_F_ALLOWED;
      if (used + (size_t)p->n_allowed_ids > cap) return 0;
      R->allowed_off = (int32_t)used; R->n_allowed = p->n_allowed_ids;
      if (p->n_allowed_ids > 0) memcpy(words + used, p->allowed_ids, (size_t)p->n_allowed_ids * 4);
      used += (size_t)p->n_allowed_ids;
    }
    if (p->n_banned_ids > 0 || p->n_bad_words > 0) {
      /* the banned ids, then the one-id bad words (always banned; HF and
         llama.cpp, which match prompt + output, drop one equal to EOS) */
      int32_t w, at = 0;
      if (used + (size_t)p->n_banned_ids + (size_t)p->n_bad_words > cap) return 0;
      R->banned_off = (int32_t)used;
      if (p->n_banned_ids > 0) memcpy(words + used, p->banned_ids, (size_t)p->n_banned_ids * 4);
      R->n_banned = p->n_banned_ids;
      for (w = 0; w < p->n_bad_words; at += p->bad_words_lens[w], w++)
        if (p->bad_words_lens[w] == 1 && !((prof == 1 || prof == 3) && p->bad_words[at] == p->eos_token_id))
          words[used + (size_t)R->n_banned++] = p->bad_words[at];
      used += (size_t)R->n_banned;
    }
    if (p->n_bad_words > 0 && slot >= 0) {
      /* the longer words: (offset, length) pairs, then their ids */
      int32_t w, at = 0, n = 0;
      size_t ids = 0;
      for (w = 0; w < p->n_bad_words; w++)
        if (p->bad_words_lens[w] > 1) { n++; ids += (size_t)p->bad_words_lens[w]; }
      if (n > 0) {
        size_t pos;
        if (used + 2 * (size_t)n + ids > cap) return 0;
        R->bw_off = (int32_t)used; R->n_bw = n;
        pos = used + 2 * (size_t)n;
        for (w = 0, n = 0; w < p->n_bad_words; at += p->bad_words_lens[w], w++) {
          if (p->bad_words_lens[w] == 1) continue;
          words[used + 2 * (size_t)n] = (int32_t)pos;
          words[used + 2 * (size_t)n + 1] = p->bad_words_lens[w];
          memcpy(words + pos, p->bad_words + at, (size_t)p->bad_words_lens[w] * 4);
          pos += (size_t)p->bad_words_lens[w];
          n++;
        }
        used = pos;
        flags |= MS__CUDA_F_BADW;
        if (prof == 1 || prof == 3) flags |= MS__CUDA_F_BW_ALL;
      }
    }
    /* HF's no_repeat_ngram and length decay need the sequence (without a
       slot the CPU has none either, and they do nothing) */
    if (p->no_repeat_ngram_size > 0 && slot >= 0) { flags |= MS__CUDA_F_NGRAM; R->ngram = p->no_repeat_ngram_size; }
    if (p->exp_decay_start >= 0 && p->eos_token_id >= 0 && slot >= 0) {
      flags |= MS__CUDA_F_DECAY; R->decay_start = p->exp_decay_start; R->decay_factor = p->exp_decay_factor;
    }
    if ((flags & MS__CUDA_F_MINTOK) && p->n_stop_token_ids > 0) {
      if (used + (size_t)p->n_stop_token_ids > cap) return 0;
      R->stop_off = (int32_t)used; R->n_stop = p->n_stop_token_ids;
      memcpy(words + used, p->stop_token_ids, (size_t)p->n_stop_token_ids * 4);
      used += (size_t)p->n_stop_token_ids;
    }
    if (p->token_bitmask) {
      if (used + (size_t)nw > cap) return 0;
      R->bitmask_off = (int32_t)used;
      memcpy(words + used, p->token_bitmask, (size_t)nw * 4);
      used += (size_t)nw;
    }
    if (p->n_logit_bias > 0) {
      /* sorted by token, a token's entries in the caller's order: the
         kernel adds them one after another, rounding as the CPU does
         ((l + b1) + b2, never l + (b1 + b2)); each clamped (vLLM) */
      const int32_t n = p->n_logit_bias;
      int32_t *tok = words + used, *idx = words + used + n;
      float c = ms__cuda_bias_clamp[prof];
      if (used + 2 * (size_t)n > cap) return 0;
      for (j = 0; j < n; j++) idx[j] = j;
      ms__cuda_sort_bias(idx, p->logit_bias, n);
      for (j = 0; j < n; j++) {
        const ms_bias *e = &p->logit_bias[idx[j]];
        float v = e->bias;
        if (c > 0.0f) { if (v > c) v = c; if (v < -c) v = -c; }
        tok[j] = e->token;
        memcpy(&idx[j], &v, 4);   /* the values replace the indices */
      }
      R->bias_tok_off = (int32_t)used; R->n_bias = n; R->bias_val_off = (int32_t)used + n;
      used += 2 * (size_t)n;
      flags |= MS__CUDA_F_BIAS;
    }
    /* a slot with a reasoning budget: ms_k_mask decides each step whether
       it forces a token, and only then puts the row on the mask path (the
       budget itself came with ms_cuda_seq_reset, as the CPU's with
       ms_seq_reset: this row's budget fields are not read) */
    if (slot >= 0 && cu->slot_budget[slot]) flags |= MS__CUDA_F_BUDGET;
    if (p->allowed_ids || p->token_bitmask || R->n_banned > 0 || (flags & (MS__CUDA_F_MINTOK | MS__CUDA_F_BADW | MS__CUDA_F_NGRAM)))
      flags |= MS__CUDA_F_MASK;
    if (flags & (MS__CUDA_F_MASK | MS__CUDA_F_BIAS | MS__CUDA_F_PEN | MS__CUDA_F_DECAY | MS__CUDA_F_LLPEN)) flags |= MS__CUDA_F_WORK;
    if (flags & (MS__CUDA_F_MASK | MS__CUDA_F_BIAS | MS__CUDA_F_LLPEN | MS__CUDA_F_BUDGET)) *needs |= MS__CUDA_N_MASK;
    if (flags & MS__CUDA_F_LLAMA) {
      *needs |= MS__CUDA_N_TOPK | MS__CUDA_N_LIST | MS__CUDA_N_ROW;   /* the count passes, the list, the row's end */
    } else if (!(flags & MS__CUDA_F_GREEDY)) {
      *needs |= MS__CUDA_N_SUMS;
      if (R->top_k > 0) *needs |= MS__CUDA_N_TOPK;
      if (R->top_p < 1.0f) *needs |= MS__CUDA_N_TOPP;
      if ((flags & MS__CUDA_F_JOINT) && (R->top_k > 0 || R->top_p < 1.0f)) *needs |= MS__CUDA_N_TIES;
      /* HF epsilon and eta (validation leaves them to the HF profile): cuts
         on what top_k, top_p and min_p kept, by the radix path's thresholds */
      R->eps_cut = p->epsilon_cutoff > 0.0f ? p->epsilon_cutoff : 0.0f;
      R->eta_cut = p->eta_cutoff > 0.0f ? p->eta_cutoff : 0.0f;
      if (R->eps_cut > 0.0f || R->eta_cut > 0.0f) *needs |= MS__CUDA_N_EPS;
      else if (R->top_p < 1.0f && cu->topp_bins && !(flags & MS__CUDA_F_JOINT)) {
        flags |= MS__CUDA_F_TOPP_BINS;
        /* the statistics count the bins of a row they read as it is, whose
           top_p stands first (no top_k, no vLLM min_p before it) */
        if (cu->pb_stats && R->top_k <= 0 && (R->min_p <= 0.0f || (flags & MS__CUDA_F_HF)) &&
            !(flags & (MS__CUDA_F_WORK | MS__CUDA_F_RAW_LSE | MS__CUDA_F_MASK | MS__CUDA_F_BIAS | MS__CUDA_F_PEN | MS__CUDA_F_BUDGET |
                       MS__CUDA_F_DECAY | MS__CUDA_F_LLPEN)))
          flags |= MS__CUDA_F_PB_STATS;
        else *needs |= MS__CUDA_N_PBIN;
      }
      /* a small top_k: its candidates straight from the statistics (the
         rows that may resolve on candidates: not SGLang's, nor epsilon's
         or eta's) */
      if (cu->kfast && R->top_k > 0 && R->top_k <= MS__CUDA_KFAST_MAX && !(flags & MS__CUDA_F_JOINT) &&
          !(R->eps_cut > 0.0f || R->eta_cut > 0.0f)) {
        flags |= MS__CUDA_F_KFAST;
        *needs |= MS__CUDA_N_KFAST;
      }
    }
    if (flags & MS__CUDA_F_LP_PROC) *needs |= MS__CUDA_N_SUMS;
    if (R->logprobs >= 0 && b->out) *needs |= MS__CUDA_N_LP;
    /* rows without logprobs end before ms_k_row: greedy ones in
       ms_k_stats, a small top_k's in ms_k_tail, the others without top_k
       in P_SUMS (a larger top_k's resolve on their candidates in
       ms_k_row; SGLang's never do) */
    if (ends_ok && R->logprobs < 0 && !(flags & MS__CUDA_F_LLAMA) &&
        ((flags & (MS__CUDA_F_GREEDY | MS__CUDA_F_JOINT | MS__CUDA_F_KFAST)) || R->top_k <= 0))
      flags |= MS__CUDA_F_END;
    else *needs |= MS__CUDA_N_ROW;
    /* a greedy row that ends in the statistics: nothing reads its processed
       logits after them, so they are not stored (a masked or penalised
       greedy row, JSON mode at temperature 0 say, then moves 4 bytes an
       id instead of 8) */
    if ((flags & MS__CUDA_F_GREEDY) && (flags & MS__CUDA_F_END)) flags &= ~MS__CUDA_F_WORK;
    /* rows the passes read (a small top_k's are ms_k_tail's; a greedy
       row's processed logprobs need the tile sums) */
    if ((flags & MS__CUDA_F_LLAMA) || ((flags & MS__CUDA_F_GREEDY) ? (flags & MS__CUDA_F_LP_PROC) != 0 : !(flags & MS__CUDA_F_KFAST)))
      *needs |= MS__CUDA_N_FULL;
    *needs |= (flags & MS__CUDA_F_PB_STATS) ? MS__CUDA_N_PBSTATS : MS__CUDA_N_STATS;
    R->flags = flags;
  }
  return used * 4;
}

/* One kernel on the stream. On sm_90 and newer with cuLaunchKernelEx
   (cu->pdl), with programmatic stream serialization: the kernel may
   launch while the one before it still runs and waits for it inside
   (griddepcontrol.wait, the first thing every kernel does), which hides
   the launch latency between the dozen kernels of a call. */
static ms_result ms__cuda_launch(ms_cuda *cu, ms__CUhandle fn, unsigned gx, unsigned gy, unsigned threads,
                                 ms__CUhandle stream, void *args) {
  void *params[1];
  params[0] = args;
  if (cu->pdl) {
    ms__cu_launch_attr attr;
    ms__cu_launch_config cfg;
    memset(&attr, 0, sizeof attr);
    attr.id = MS__CU_LAUNCH_ATTR_PROGRAMMATIC_SERIALIZATION;
    attr.value.allowed = 1;
    memset(&cfg, 0, sizeof cfg);
    cfg.grid_x = gx; cfg.grid_y = gy; cfg.grid_z = 1;
    cfg.block_x = threads; cfg.block_y = 1; cfg.block_z = 1;
    cfg.stream = stream;
    cfg.attrs = &attr;
    cfg.n_attrs = 1;
    if (ms__cu_g.drv.launch_ex(&cfg, fn, params, NULL) == MS__CUDA_SUCCESS) return MS_OK;
    /* refused (a capture or a driver that cannot take the attribute): a
       refused launch leaves nothing behind, so launch plainly, from now on */
    if (ms__cu_g.drv.launch(fn, gx, gy, 1, threads, 1, 1, 0, stream, params, NULL) != MS__CUDA_SUCCESS) return MS_ERR_DEVICE;
    cu->pdl = 0;
    return MS_OK;
  }
  return ms__cu_g.drv.launch(fn, gx, gy, 1, threads, 1, 1, 0, stream, params, NULL) == MS__CUDA_SUCCESS
             ? MS_OK : MS_ERR_DEVICE;
}

static ms_result ms__cuda_run(ms_cuda *cu, void *stream, const ms_cuda_batch *b, void *probs, size_t probs_stride) {
  const ms__cu_driver *d = &ms__cu_g.drv;
  ms__cuda_args A;
  ms_result rc = MS_OK, first_err;
  int pushed = 0, needs = 0, nopass, s, pass;
  size_t bytes;
  int32_t G = 0, tile;
  if (!cu) return MS_ERR_NULL_ARGUMENT;
  cu->err[0] = '\0';
  if (!b || !b->params || !b->logits || (!b->tokens && !probs))
    return ms__cuda_refuse(cu, MS_ERR_NULL_ARGUMENT, "%s is NULL", !b ? "batch" : !b->params ? "batch->params"
                           : !b->logits ? "batch->logits" : "batch->tokens");
  if (b->vocab < 1 || b->vocab > cu->max_vocab)
    return ms__cuda_refuse(cu, MS_ERR_BAD_VOCAB, "vocab %d is outside 1..%d (max_vocab)", (int)b->vocab, (int)cu->max_vocab);
  if (b->n_rows < 1 || b->n_rows > cu->max_rows)
    return ms__cuda_refuse(cu, MS_ERR_INVALID_PARAM, "n_rows %d is outside 1..%d (max_rows)", (int)b->n_rows, (int)cu->max_rows);
  if (b->row_stride < (size_t)b->vocab)
    return ms__cuda_refuse(cu, MS_ERR_INVALID_PARAM, "row_stride %lu is below the vocab (%d)", (unsigned long)b->row_stride,
                           (int)b->vocab);
  if (probs && probs_stride < (size_t)b->vocab)
    return ms__cuda_refuse(cu, MS_ERR_INVALID_PARAM, "probs_stride %lu is below the vocab (%d)", (unsigned long)probs_stride,
                           (int)b->vocab);
  if (b->top && b->top_stride < 1)
    return ms__cuda_refuse(cu, MS_ERR_INVALID_PARAM, "top_stride %d: top needs at least 1 entry a row", (int)b->top_stride);
  if (ms__cuda_enter(cu, &pushed) != MS_OK) return ms__cuda_refuse(cu, MS_ERR_DEVICE, "cannot make the sampler's context current");

  /* blocks per row: small batches split every full-row pass over G
     blocks (chunks of whole draw tiles, see tile_e in kernels.cu) */
  if (cu->split > 0) G = cu->split;
  else if (cu->split == 0) {
    /* about 3 blocks of 256 threads per SM in all, at most one per 4096
       logits of a row; large batches fill the one wave of 6 per SM that
       the passes' registers allow (a second, partial wave would leave
       most SMs idle while it runs). On an H200, 128256 logits: batch 32
       ran 25-37% faster at 8 or 12 blocks per row than at 24 (6 per SM),
       batch 256 slower at 6 per row than at 3, batch 1 best at 31. */
    G = 3 * cu->sm_count / b->n_rows;
    if (G < 3) G = 6 * cu->sm_count / b->n_rows < 3 ? 6 * cu->sm_count / b->n_rows : 3;
    if (G > b->vocab / 4096) G = b->vocab / 4096;
  }
  if (G > MS__CUDA_MAX_PARTS) G = MS__CUDA_MAX_PARTS;
  if (G < 1) G = 1;
  /* staging: wait for the upload of two calls ago (normally long done) */
  s = cu->stage_next;
  cu->stage_next ^= 1;
  if (cu->ev_used[s] && d->event_synchronize(cu->ev[s]) != MS__CUDA_SUCCESS) { rc = MS_ERR_DEVICE; goto done; }
  if (++cu->call_no == 0) {   /* the marks wrapped: forget them */
    if (cu->slot_mark) memset(cu->slot_mark, 0, (size_t)cu->max_slots * sizeof *cu->slot_mark);
    cu->call_no = 1;
  }
  bytes = ms__cuda_pack(cu, b, cu->stage[s], b->accept && !probs, !probs, &needs, &first_err);
  if (bytes == 0) {
    rc = ms__cuda_refuse(cu, MS_ERR_CAPACITY, "the rows' lists, masks and bias need more than max_extra_words (%d words)",
                         (int)cu->extra_words);
    goto done;
  }
  if (d->memcpy_htod_async(cu->d_blob, cu->stage[s], bytes, stream) != MS__CUDA_SUCCESS ||
      d->event_record(cu->ev[s], stream) != MS__CUDA_SUCCESS) { rc = MS_ERR_DEVICE; goto done; }
  cu->ev_used[s] = 1;

  tile = 256 * ((b->vocab + 256 * MS__CUDA_MAX_TILES - 1) / (256 * MS__CUDA_MAX_TILES));   /* 32 * tile_e */

  memset(&A, 0, sizeof A);
  A.logits = (uint64_t)(uintptr_t)b->logits;
  A.stride = (uint64_t)b->row_stride;
  A.blob = (uint64_t)cu->d_blob;
  A.allow_bits = (uint64_t)cu->d_allow;
  A.bias_bits = (uint64_t)cu->d_bias;
  A.work = (uint64_t)cu->d_work;
  A.parts = (uint64_t)cu->d_parts;
  A.sel = (uint64_t)cu->d_sel;
  A.seq_state = (uint64_t)cu->d_seq_state;
  A.seq_len = (uint64_t)cu->d_seq_len;
  A.seq_stride = (uint64_t)cu->max_vocab;
  A.tokens = b->tokens ? (uint64_t)(uintptr_t)b->tokens : (uint64_t)cu->d_tokens;
  A.out = (uint64_t)(uintptr_t)b->out;
  A.top = (uint64_t)(uintptr_t)b->top;
  A.probs = (uint64_t)(uintptr_t)probs;
  A.probs_stride = (uint64_t)probs_stride;
  A.n_rows = b->n_rows;
  A.vocab = b->vocab;
  A.words = cu->words;
  A.n_parts = G;
  A.chunk = (((b->vocab + G - 1) / G + tile - 1) / tile) * tile;
  A.top_stride = b->top ? b->top_stride : 0;
  A.n_slots = cu->max_slots;
  A.hist = (uint64_t)cu->d_hist;
  A.hist_cap = cu->hist_cap;
  A.budget = (uint64_t)cu->d_budget;
  A.pcand = (uint64_t)cu->d_pcand;
  /* every sampled row a small top_k's (ms_k_tail's): none of the dozen
     pass launches would find anything to do */
  nopass = cu->nopass && !(needs & MS__CUDA_N_FULL);
  if (nopass) needs &= MS__CUDA_N_MASK | MS__CUDA_N_ROW | MS__CUDA_N_KFAST | MS__CUDA_N_LP | MS__CUDA_N_STATS | MS__CUDA_N_PBSTATS;

  if ((needs & MS__CUDA_N_MASK) &&
      (rc = ms__cuda_launch(cu, cu->fn[MS__K_MASK], (unsigned)b->n_rows, 1, MS__CUDA_THREADS, stream, &A)) != MS_OK) goto done;
  /* the statistics, then each full-row pass some row needs, in the
     pipeline's order (A is copied at every launch); the rows whose
     statistics count top_p's bins have a kernel of their own (ms_k_stats
     leaves them, and is not launched when they are all there are) */
  if ((needs & MS__CUDA_N_PBSTATS) &&
      (rc = ms__cuda_launch(cu, cu->fn[MS__K_PBSTATS], (unsigned)b->n_rows, (unsigned)G, MS__CUDA_THREADS, stream, &A)) != MS_OK)
    goto done;
  if ((needs & MS__CUDA_N_STATS || !(needs & MS__CUDA_N_PBSTATS)) &&
      (rc = ms__cuda_launch(cu, cu->fn[MS__K_STATS], (unsigned)b->n_rows, (unsigned)G, MS__CUDA_THREADS, stream, &A)) != MS_OK) goto done;
  /* a small top_k's rows: their ends, and what their lists left */
  if ((needs & MS__CUDA_N_KFAST) &&
      (rc = ms__cuda_launch(cu, cu->fn[MS__K_TAIL], (unsigned)b->n_rows, 1, MS__CUDA_THREADS, stream, &A)) != MS_OK) goto done;
  for (pass = MS__CUDA_P_COUNT; pass <= MS__CUDA_P_SUMS; pass++) {
    int need = pass < MS__CUDA_P_MASS ? MS__CUDA_N_TOPK
             : pass < MS__CUDA_P_SUMS ? MS__CUDA_N_TOPP : MS__CUDA_N_SUMS;
    /* an SGLang row's cut inside a tie: after the thresholds, before the sums */
    if (pass == MS__CUDA_P_SUMS && (needs & MS__CUDA_N_TIES) &&
        (rc = ms__cuda_launch(cu, cu->fn[MS__K_TIES], (unsigned)b->n_rows, (unsigned)G, MS__CUDA_THREADS, stream, &A)) != MS_OK) goto done;
    /* HF epsilon, then eta, on what the thresholds kept */
    if (pass == MS__CUDA_P_SUMS && (needs & MS__CUDA_N_EPS)) {
      for (A.pass = MS__CUDA_P_EPS; A.pass <= MS__CUDA_P_ETA; A.pass++)
        if ((rc = ms__cuda_launch(cu, cu->fn[MS__K_EPS], (unsigned)b->n_rows, (unsigned)G, MS__CUDA_THREADS, stream, &A)) != MS_OK) goto done;
    }
    if (!(needs & need)) continue;
    /* top_p by bins first (rows it leaves undecided take the radix passes) */
    if (pass == MS__CUDA_P_MASS && cu->topp_bins) {
      for (A.pass = MS__CUDA_P_PBIN; A.pass <= MS__CUDA_P_PGATHER; A.pass++)
        if ((A.pass == MS__CUDA_P_PGATHER || (needs & MS__CUDA_N_PBIN)) &&
            (rc = ms__cuda_launch(cu, cu->fn[A.pass == MS__CUDA_P_PGATHER ? MS__K_PGATHER : MS__K_PBIN], (unsigned)b->n_rows,
                                  (unsigned)G, MS__CUDA_THREADS, stream, &A)) != MS_OK) goto done;
    }
    A.pass = pass;
    if ((rc = ms__cuda_launch(cu, cu->fn[pass == MS__CUDA_P_SUMS ? MS__K_SUMS : MS__K_PASS], (unsigned)b->n_rows, (unsigned)G,
                              MS__CUDA_THREADS, stream, &A)) != MS_OK) goto done;
  }
  /* llama.cpp rows: their chain on the top_k list (ms_k_row writes the result, ms_k_lp after it with raw logprobs) */
  if ((needs & MS__CUDA_N_LIST) &&
      (rc = ms__cuda_launch(cu, cu->fn[MS__K_LIST], (unsigned)b->n_rows, 1, MS__CUDA_ROW_THREADS, stream, &A)) != MS_OK) goto done;
  /* every row ended in a pass (F_END): no ms_k_row launch (probs calls
     never set F_END, so they always set N_ROW) */
  if ((needs & MS__CUDA_N_ROW) &&
      (rc = ms__cuda_launch(cu, cu->fn[MS__K_ROW], (unsigned)b->n_rows, 1, MS__CUDA_ROW_THREADS, stream, &A)) != MS_OK) goto done;
  /* the logprobs of the rows ms_k_row left them to, and their results */
  if ((needs & (MS__CUDA_N_ROW | MS__CUDA_N_LP)) == (MS__CUDA_N_ROW | MS__CUDA_N_LP) &&
      (rc = ms__cuda_launch(cu, cu->fn[MS__K_LP], (unsigned)b->n_rows, 1, MS__CUDA_ROW_THREADS, stream, &A)) != MS_OK) goto done;
  if (b->host_tokens && b->tokens &&
      d->memcpy_dtoh_async(b->host_tokens, (ms__CUdeviceptr)(uintptr_t)b->tokens, (size_t)b->n_rows * 4, stream) != MS__CUDA_SUCCESS) {
    rc = MS_ERR_DEVICE;
    goto done;
  }
  rc = first_err;
done:
  if (rc == MS_ERR_DEVICE && !cu->err[0]) ms__cuda_refuse(cu, rc, "a CUDA driver call failed (upload, launch or copy)");
  ms__cuda_leave(pushed);
  return rc;
}

MSDEF ms_result ms_cuda_sample(ms_cuda *cu, void *stream, const ms_cuda_batch *batch) {
  /* (ms__cuda_run refuses a batch without tokens, and says so in
     ms_cuda_last_error: an early return here left the last call's) */
  return ms__cuda_run(cu, stream, batch, NULL, 0);
}

MSDEF ms_result ms_cuda_probs(ms_cuda *cu, void *stream, const ms_cuda_batch *batch, void *probs, size_t probs_stride) {
  if (!probs) return cu ? ms__cuda_refuse(cu, MS_ERR_NULL_ARGUMENT, "probs is NULL") : MS_ERR_NULL_ARGUMENT;
  return ms__cuda_run(cu, stream, batch, probs, probs_stride);
}

/* -- device-side sequences ----------------------------------------------------- */

MSDEF ms_result ms_cuda_seq_reset(ms_cuda *cu, void *stream, int32_t slot, const void *prompt, int32_t n_prompt,
                                  const ms_params *params) {
  const ms__cu_driver *d = &ms__cu_g.drv;
  ms__cuda_seq_args S;
  ms_result rc = MS_OK, bud_rc = MS_OK;
  int pushed = 0, i;
  unsigned grid;
  if (!cu) return MS_ERR_NULL_ARGUMENT;
  if (slot < 0 || slot >= cu->max_slots || n_prompt < 0) return MS_ERR_INVALID_PARAM;
  if (n_prompt > 0 && !prompt) return MS_ERR_NULL_ARGUMENT;
  memset(&S, 0, sizeof S);
  S.bud_tokens = -1;
  const int has_budget = params && params->budget_tokens >= 0 && params->n_budget_start > 0 && params->n_budget_end > 0 &&
                         params->budget_start && params->budget_end;
  if (has_budget) {
    /* the reasoning budget, as ms_seq_reset takes it: a bad one still
       starts the request (the prompt, no budget) and returns its error,
       so that no earlier request's state outlives a failed reset */
    if (params->n_budget_start > MS_BUDGET_MAX_IDS || params->n_budget_end > MS_BUDGET_MAX_IDS) bud_rc = MS_ERR_CAPACITY;
    for (i = 0; bud_rc == MS_OK && i < params->n_budget_start; i++)
      if (params->budget_start[i] < 0 || params->budget_start[i] >= cu->max_vocab) bud_rc = MS_ERR_TOKEN_OUT_OF_RANGE;
    for (i = 0; bud_rc == MS_OK && i < params->n_budget_end; i++)
      if (params->budget_end[i] < 0 || params->budget_end[i] >= cu->max_vocab) bud_rc = MS_ERR_TOKEN_OUT_OF_RANGE;
  }
  if (has_budget && bud_rc == MS_OK) {
    S.bud_tokens = params->budget_tokens;
    S.bud_n_start = params->n_budget_start;
    S.bud_n_end = params->n_budget_end;
    memcpy(S.bud_ids, params->budget_start, (size_t)params->n_budget_start * 4);
    memcpy(S.bud_ids + MS_BUDGET_MAX_IDS, params->budget_end, (size_t)params->n_budget_end * 4);
  }
  if (ms__cuda_enter(cu, &pushed) != MS_OK) return MS_ERR_DEVICE;
  /* the slot's counters, then its seen bits (after every slot's counters:
     slot_seen in kernels.cu) */
  if (d->memset_d32_async(cu->d_seq_state + (ms__CUdeviceptr)slot * (ms__CUdeviceptr)cu->max_vocab * 4u, 0u,
                          (size_t)cu->max_vocab, stream) != MS__CUDA_SUCCESS ||
      d->memset_d32_async(cu->d_seq_state + ((ms__CUdeviceptr)cu->max_slots * (ms__CUdeviceptr)cu->max_vocab +
                                             (ms__CUdeviceptr)slot * (ms__CUdeviceptr)ms__cuda_words(cu->max_vocab)) * 4u, 0u,
                          (size_t)ms__cuda_words(cu->max_vocab), stream) != MS__CUDA_SUCCESS) rc = MS_ERR_DEVICE;
  if (rc == MS_OK) {
    S.seq_state = (uint64_t)cu->d_seq_state; S.seq_len = (uint64_t)cu->d_seq_len;
    S.seq_stride = (uint64_t)cu->max_vocab; S.ids = (uint64_t)(uintptr_t)prompt;
    S.slot = slot; S.n = n_prompt; S.vocab = cu->max_vocab; S.n_slots = cu->max_slots;
    S.hist = (uint64_t)cu->d_hist; S.hist_cap = cu->hist_cap;
    S.budget = (uint64_t)cu->d_budget;
    grid = (unsigned)((n_prompt + MS__CUDA_THREADS - 1) / MS__CUDA_THREADS);
    if (grid < 1) grid = 1;
    if (grid > 1024) grid = 1024;
    rc = ms__cuda_launch(cu, cu->fn[MS__K_SEQ_PROMPT], grid, 1, MS__CUDA_THREADS, stream, &S);
  }
  if (rc == MS_OK) cu->slot_budget[slot] = S.bud_tokens >= 0;
  ms__cuda_leave(pushed);
  return rc != MS_OK ? rc : bud_rc;
}

MSDEF ms_result ms_cuda_seq_budget_state(ms_cuda *cu, int32_t slot, ms_budget_state *state, int32_t *remaining) {
  int32_t b[8];
  ms_result rc;
  if (!cu || !state) return MS_ERR_NULL_ARGUMENT;
  if (slot < 0 || slot >= cu->max_slots) return MS_ERR_INVALID_PARAM;
  rc = ms_cuda_download(cu, b, (const void *)(uintptr_t)(cu->d_budget + (ms__CUdeviceptr)slot * MS__CUDA_BUD_WORDS * 4u), sizeof b);
  if (rc != MS_OK) return rc;
  *state = b[0] < 0 ? MS_BUDGET_IDLE : (ms_budget_state)b[3];
  if (remaining) *remaining = b[0] >= 0 && b[3] == MS_BUDGET_COUNTING ? b[4] : 0;
  return MS_OK;
}

MSDEF ms_result ms_cuda_seq_accept(ms_cuda *cu, void *stream, const void *slots, const void *tokens, int32_t n) {
  ms__cuda_seq_args S;
  ms_result rc;
  int pushed = 0;
  if (!cu || (n > 0 && (!slots || !tokens))) return MS_ERR_NULL_ARGUMENT;
  if (n <= 0 || cu->max_slots == 0) return MS_OK;
  if (ms__cuda_enter(cu, &pushed) != MS_OK) return MS_ERR_DEVICE;
  memset(&S, 0, sizeof S);
  S.seq_state = (uint64_t)cu->d_seq_state; S.seq_len = (uint64_t)cu->d_seq_len;
  S.seq_stride = (uint64_t)cu->max_vocab; S.ids = (uint64_t)(uintptr_t)tokens; S.slots = (uint64_t)(uintptr_t)slots;
  S.slot = -1; S.n = n; S.vocab = cu->max_vocab; S.n_slots = cu->max_slots;
  S.hist = (uint64_t)cu->d_hist; S.hist_cap = cu->hist_cap;
  S.budget = (uint64_t)cu->d_budget;
  /* one block: a slot's tokens enter its history in order */
  rc = ms__cuda_launch(cu, cu->fn[MS__K_SEQ_ACCEPT], 1, 1, MS__CUDA_THREADS, stream, &S);
  ms__cuda_leave(pushed);
  return rc;
}

/* -- helpers -------------------------------------------------------------------- */

MSDEF ms_result ms_cuda_malloc(ms_cuda *cu, void **ptr, size_t bytes) {
  ms__CUdeviceptr p = 0;
  int pushed = 0;
  ms__CUresult e;
  if (!cu || !ptr) return MS_ERR_NULL_ARGUMENT;
  *ptr = NULL;
  if (ms__cuda_enter(cu, &pushed) != MS_OK) return MS_ERR_DEVICE;
  e = ms__cu_g.drv.mem_alloc(&p, bytes ? bytes : 1);
  ms__cuda_leave(pushed);
  if (e != MS__CUDA_SUCCESS) return MS_ERR_DEVICE;
  *ptr = (void *)(uintptr_t)p;
  return MS_OK;
}

MSDEF void ms_cuda_free(ms_cuda *cu, void *ptr) {
  int pushed = 0;
  if (!cu || !ptr) return;
  if (ms__cuda_enter(cu, &pushed) != MS_OK) return;
  ms__cu_g.drv.mem_free((ms__CUdeviceptr)(uintptr_t)ptr);
  ms__cuda_leave(pushed);
}

MSDEF ms_result ms_cuda_upload(ms_cuda *cu, void *dst, const void *src, size_t bytes) {
  int pushed = 0;
  ms__CUresult e;
  if (!cu || !dst || !src) return MS_ERR_NULL_ARGUMENT;
  if (ms__cuda_enter(cu, &pushed) != MS_OK) return MS_ERR_DEVICE;
  e = ms__cu_g.drv.memcpy_htod((ms__CUdeviceptr)(uintptr_t)dst, src, bytes);
  ms__cuda_leave(pushed);
  return e == MS__CUDA_SUCCESS ? MS_OK : MS_ERR_DEVICE;
}

MSDEF ms_result ms_cuda_download(ms_cuda *cu, void *dst, const void *src, size_t bytes) {
  int pushed = 0;
  ms__CUresult e;
  if (!cu || !dst || !src) return MS_ERR_NULL_ARGUMENT;
  if (ms__cuda_enter(cu, &pushed) != MS_OK) return MS_ERR_DEVICE;
  e = ms__cu_g.drv.memcpy_dtoh(dst, (ms__CUdeviceptr)(uintptr_t)src, bytes);
  ms__cuda_leave(pushed);
  return e == MS__CUDA_SUCCESS ? MS_OK : MS_ERR_DEVICE;
}

MSDEF ms_result ms_cuda_sync(ms_cuda *cu, void *stream) {
  int pushed = 0;
  ms__CUresult e;
  if (!cu) return MS_ERR_NULL_ARGUMENT;
  if (ms__cuda_enter(cu, &pushed) != MS_OK) return MS_ERR_DEVICE;
  e = ms__cu_g.drv.stream_synchronize(stream);
  ms__cuda_leave(pushed);
  return e == MS__CUDA_SUCCESS ? MS_OK : MS_ERR_DEVICE;
}

#endif /* MYSAMPLE_CUDA_IMPLEMENTATION */
