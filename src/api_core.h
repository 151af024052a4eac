/* ---- version, linkage ------------------------------------------------- */
#define MYSAMPLE_VERSION_MAJOR 0
#define MYSAMPLE_VERSION_MINOR 1
#define MYSAMPLE_VERSION_PATCH 0
#define MYSAMPLE_VERSION_STRING "0.1.0"

#include <stddef.h>
#include <stdint.h>

/* MSDEF marks every public function. MYSAMPLE_STATIC makes them static (the
   implementation private to one translation unit); MYSAMPLE_DLL_EXPORT /
   MYSAMPLE_DLL_IMPORT add the Windows DLL attributes. */
#ifndef MSDEF
#  if defined(MYSAMPLE_STATIC) && (defined(__GNUC__) || defined(__clang__))
#    define MSDEF static __attribute__((unused)) /* a file may use only part of the API */
#  elif defined(MYSAMPLE_STATIC)
#    define MSDEF static
#  elif defined(_WIN32) && defined(MYSAMPLE_DLL_EXPORT)
#    define MSDEF extern __declspec(dllexport)
#  elif defined(_WIN32) && defined(MYSAMPLE_DLL_IMPORT)
#    define MSDEF extern __declspec(dllimport)
#  else
#    define MSDEF extern
#  endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- result codes ------------------------------------------------------- */
/* One list generates the enum and the messages, so they cannot drift apart.
   Codes are stable: new ones are only ever appended. */
#define MS__RESULT_LIST(X) \
  X(MS_OK,                    0, "ok") \
  X(MS_ERR_NULL_ARGUMENT,     1, "a required pointer argument is NULL") \
  X(MS_ERR_INVALID_PARAM,     2, "a sampling parameter is out of range") \
  X(MS_ERR_BAD_VOCAB,         3, "vocab size must be at least 1 and at most the sampler's max_vocab") \
  X(MS_ERR_TOKEN_OUT_OF_RANGE,4, "a token id is outside [0, vocab)") \
  X(MS_ERR_NAN_LOGIT,         5, "the logits row contains NaN") \
  X(MS_ERR_INF_LOGIT,         6, "the logits row contains +Inf") \
  X(MS_ERR_ALL_MASKED,        7, "every token of the row is masked (-inf): nothing can be sampled") \
  X(MS_ERR_WORKSPACE_TOO_SMALL,8, "the memory given is smaller than the size query asked for") \
  X(MS_ERR_OUT_OF_MEMORY,     9, "MYSAMPLE_MALLOC returned NULL") \
  X(MS_ERR_CAPACITY,         10, "the sequence holds more tokens than its capacity") \
  X(MS_ERR_UNSUPPORTED,      11, "the option is not supported by this profile or build") \
  X(MS_ERR_BUFFER_TOO_SMALL, 12, "the output buffer is too small; the return value says how much is needed") \
  X(MS_ERR_THREADS,          13, "the thread pool could not be started") \
  X(MS_ERR_INVALID_UTF8,     14, "the bytes are not valid UTF-8") \
  X(MS_ERR_STATE,            15, "the object is not in a state that allows this call") \
  X(MS_ERR_PARSE,            16, "the input could not be parsed") \
  X(MS_ERR_NO_DEVICE,        17, "no usable CUDA driver, GPU or NVRTC was found") \
  X(MS_ERR_DEVICE,           18, "a CUDA driver call failed") \
  X(MS_ERR_COMPILE,          19, "NVRTC failed to compile the kernels (see the log)") \
  X(MS_ERR_CALLBACK,         20, "the write callback returned non-zero; the output is cut short")

typedef enum ms_result {
#define MS__RESULT_ENUM(name, value, text) name = value,
  MS__RESULT_LIST(MS__RESULT_ENUM)
#undef MS__RESULT_ENUM
  MS__RESULT_END_
} ms_result;

/* The fixed message of a result code ("unknown result code" for others).
   Thread safety: pure. */
MSDEF const char *ms_result_str(ms_result code);

/* The library version as a string ("0.1.0"), the runtime twin of
   MYSAMPLE_VERSION_STRING. Thread safety: pure. */
MSDEF const char *ms_version(void);

/* ---- profiles ----------------------------------------------------------- */
/* Which engine's semantics a row follows: order of stages, tie and boundary
   rules, penalty scope, greedy threshold, validation ranges and messages.
   A profile is data (a table of rules) read by one code path. */
typedef enum ms_profile {
  MS_PROFILE_VLLM = 0,     /* default: vLLM v1 / OpenAI API semantics        */
  MS_PROFILE_HF = 1,       /* HF transformers generate() processors/warpers  */
  MS_PROFILE_SGLANG = 2,   /* SGLang: output-only penalties, joint top-k/top-p/min-p */
  MS_PROFILE_LLAMACPP = 3, /* llama.cpp's common sampler chain (temperature last) */
  MS__PROFILE_COUNT_
} ms_profile;

/* Name of a profile ("vllm", "hf", "sglang", "llamacpp": a static
   string), NULL if unknown. Thread safety: pure. */
MSDEF const char *ms_profile_name(ms_profile profile);
/* Profile from its name (as ms_profile_name writes it; NULL allowed);
   returns -1 when the name is unknown. Thread safety: pure. */
MSDEF int ms_profile_from_name(const char *name);

/* ---- parameters --------------------------------------------------------- */
typedef enum ms_logprobs_mode {
  MS_LOGPROBS_RAW = 0,       /* log_softmax of the logits as given (vLLM default) */
  MS_LOGPROBS_PROCESSED = 1  /* log of the final distribution the token is drawn from */
} ms_logprobs_mode;

typedef struct ms_bias {
  int32_t token;
  float bias;
} ms_bias;

struct ms_seq;
struct ms_params;

/* Where a custom logits processor (ms_params.hook) runs in a row's
   pipeline. The row is materialised into a writable float array of `vocab`
   entries for the call (one extra pass over the row; nothing is copied when
   no hook is set). */
typedef enum ms_hook_stage {
  MS_HOOK_OFF = 0,
  /* on the caller's logits, before every other stage */
  MS_HOOK_FIRST = 1,
  /* after the logits processors (masks, bias, penalties, bad words,
     min_tokens, no_repeat_ngram, DRY, the budget) and before temperature
     and the truncation samplers: SGLang's custom_logit_processor position
     and HF's user logits_processor position */
  MS_HOOK_BEFORE_SAMPLING = 2
} ms_hook_stage;

/* A custom logits processor: may change `logits` in place (-INFINITY
   removes a token; NaN and +inf are errors). `seq` is the row's sequence
   (NULL when the call has none). Return MS_OK, or any other code to fail
   the row with it. Called on the sampler's worker threads, possibly
   concurrently for different rows: it must be safe for that. */
typedef ms_result (*ms_logits_hook)(void *user, float *logits, int32_t vocab,
                                    const struct ms_seq *seq, const struct ms_params *params);

/* Sampling parameters of one row. Start from ms_params_default() (the
   OpenAI defaults); a zero-initialised struct is NOT valid (top_p = 0).
   The struct only points at caller arrays: they must stay valid for the
   duration of every call that uses the params. */
typedef struct ms_params {
  ms_profile profile;
  float temperature;          /* 0 = greedy (vLLM raises values in (0, 0.01) to 0.01 first, so only 0 is greedy) */
  int32_t top_k;              /* 0 or -1 = off */
  float top_p;                /* (0, 1]; 1 = off */
  float min_p;                /* [0, 1]; 0 = off */
  float presence_penalty;     /* [-2, 2] */
  float frequency_penalty;    /* [-2, 2] */
  float repetition_penalty;   /* > 0; 1 = off */
  uint64_t seed;              /* used when has_seed != 0 (see ms_seq_reset) */
  int32_t has_seed;
  /* masks and bias */
  const ms_bias *logit_bias;  int32_t n_logit_bias;    /* vLLM clamps each to [-100, 100] */
  const int32_t *allowed_ids; int32_t n_allowed_ids;   /* when non-NULL only these may be sampled */
  const int32_t *banned_ids;  int32_t n_banned_ids;    /* never sampled */
  const uint32_t *token_bitmask;                       /* (vocab+31)/32 words, bit set = allowed (xgrammar/llguidance layout) */
  /* min_tokens: EOS and stop ids are masked while the output is shorter */
  int32_t min_tokens;
  int32_t eos_token_id;       /* -1 = none */
  const int32_t *stop_token_ids; int32_t n_stop_token_ids;
  /* HF truncation warpers */
  float epsilon_cutoff;           /* HF: drop p < epsilon; 0 = off */
  float eta_cutoff;               /* HF: drop p < min(eta, sqrt(eta) * exp(-entropy)); 0 = off */
  int32_t min_tokens_to_keep;     /* HF: every warper keeps at least this many; 0 or 1 = 1 */
  /* sequence processors (need the sequence for the history) */
  int32_t no_repeat_ngram_size;   /* HF: ban the token that would repeat an n-gram of prompt+output; 0 = off */
  const int32_t *bad_words;       /* the bad words' token ids, concatenated (vLLM, HF) */
  const int32_t *bad_words_lens;  /* n_bad_words lengths (>= 1): a word's last id is banned when its others end the history */
  int32_t n_bad_words;
  int32_t exp_decay_start;        /* HF exponential_decay_length_penalty: -1 = off */
  float exp_decay_factor;         /* EOS logit += |l| * (factor^(output_len - start) - 1) once output_len > start */
  /* the sampler catalogue (docs/SAMPLER.md says which profile has which;
     a profile without one returns MS_ERR_UNSUPPORTED when it is set) */
  float typical_p;                /* hf, llamacpp: locally typical sampling mass; 1 = off */
  float top_n_sigma;              /* llamacpp: keep logits >= max - n * stddev; <= 0 = off */
  float xtc_probability;          /* llamacpp: XTC chance per token; 0 = off */
  float xtc_threshold;            /* llamacpp: XTC removes tokens with p >= this but the least likely (0.1; > 0.5 = off) */
  float dynatemp_range;           /* llamacpp: entropy-scaled temperature in [T - r, T + r]; 0 = off */
  float dynatemp_exponent;        /* llamacpp: dynamic temperature exponent (1) */
  int32_t mirostat;               /* llamacpp: 0 = off, 1 or 2 (replaces the chain: bias, temperature, mirostat) */
  float mirostat_tau;             /* target surprise (5) */
  float mirostat_eta;             /* learning rate (0.1) */
  float dry_multiplier;           /* llamacpp: DRY repetition penalty; 0 = off */
  float dry_base;                 /* (1.75) */
  int32_t dry_allowed_length;     /* repeats longer than this are penalised (2) */
  int32_t dry_last_n;             /* tokens of prompt + output DRY looks at; -1 = all (default), 0 = off */
  const int32_t *dry_breakers;    /* sequence breakers as token-id sequences, concatenated */
  const int32_t *dry_breakers_lens; /* n_dry_breakers lengths (>= 1) */
  int32_t n_dry_breakers;
  int32_t penalty_last_n;         /* llamacpp: penalties count the last N tokens of prompt + output; -1 = all (default), 0 = off */
  const char *samplers;           /* llamacpp: chain order in llama.cpp's --samplers letters, NULL = "edskypmxt"
                                     (e penalties, d DRY, s top-n-sigma, k top-k, y typical, p top-p, m min-p,
                                     x XTC, t temperature); a stage missing from the string does not run */
  /* a custom logits processor (any profile) */
  ms_logits_hook hook;
  void *hook_user;
  ms_hook_stage hook_stage;
  /* a reasoning budget (any profile): once budget_tokens tokens have
     followed the start sequence without the end sequence, the end sequence
     is forced token by token. Read by ms_seq_reset, which copies the
     sequences into the ms_seq (at most MS_BUDGET_MAX_IDS ids each); the
     state advances in ms_seq_accept */
  const int32_t *budget_start; int32_t n_budget_start;
  const int32_t *budget_end;   int32_t n_budget_end;
  int32_t budget_tokens;          /* -1 = off */
  /* logprobs */
  int32_t logprobs;           /* -1 = off, 0 = the sampled token only, N = also the top N */
  ms_logprobs_mode logprobs_mode;
  int32_t max_logprobs;       /* validation cap on logprobs, default 20 (vLLM's max_logprobs) */
} ms_params;

/* OpenAI/vLLM defaults: temperature 1, top_k 0, top_p 1, min_p 0, no
   penalties (repetition 1), no seed, no masks, logprobs off (-1), raw mode,
   max_logprobs 20, eos_token_id -1, profile vLLM; every catalogue sampler
   off, with llama.cpp's defaults for its secondary knobs (xtc_threshold
   0.1, dynatemp_exponent 1, mirostat tau 5 / eta 0.1, DRY base 1.75 and
   allowed length 2, windows -1 = all, budget -1 = off). Thread safety: pure. */
MSDEF ms_params ms_params_default(void);
/* The defaults of an engine's own front end for `profile`: vLLM, SGLang and
   HF as ms_params_default (HF: top_k 50, as GenerationConfig); llamacpp as
   llama.cpp's common_params_sampling: temperature 0.8, top_k 40, top_p
   0.95, min_p 0.05, penalty_last_n 64. Thread safety: pure. */
MSDEF ms_params ms_params_profile_default(ms_profile profile);

/* Validates params for a vocabulary of `vocab` tokens, the check a server
   runs once when a request arrives. On error writes a human message naming
   the parameter (vLLM's wording in the vLLM profile, HF's in the HF profile)
   into msg (always NUL-terminated when msg_size > 0; msg may be NULL).
   Returns MS_OK, MS_ERR_INVALID_PARAM, MS_ERR_TOKEN_OUT_OF_RANGE,
   MS_ERR_BAD_VOCAB, MS_ERR_UNSUPPORTED or MS_ERR_NULL_ARGUMENT.
   Thread safety: pure (reads params and the arrays it points to). */
MSDEF ms_result ms_params_validate(const ms_params *params, int32_t vocab,
                                   char *msg, size_t msg_size);

/* ---- counter-based random numbers --------------------------------------- */
/* Philox4x32-10 (Salmon et al., SC'11). Every random number mysample uses
   is a pure function of (seed, output position, purpose): results do not
   depend on batch composition, row order, thread count or device. */
enum {
  MS_PURPOSE_DRAW = 0,   /* the categorical draw of a token (mirostat's too) */
  MS_PURPOSE_XTC = 1,    /* XTC's coin: is the cut applied for this token */
  MS_PURPOSE_USER = 16   /* first purpose free for callers' own streams */
};
/* Philox4x32-10 of counter {c0,c1,c2,c3} under key {k0,k1}; writes 4 words.
   Thread safety: pure. */
MSDEF void ms_philox4x32(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
/* A uniform double in [0, 1) with 53 random bits for (seed, position,
   purpose): counter = {pos lo, pos hi, purpose, 0}, key = {seed lo, seed hi}.
   Thread safety: pure. */
MSDEF double ms_uniform(uint64_t seed, uint64_t position, uint32_t purpose);
/* A fresh seed for an unseeded request: mixes the clock, an address and a
   caller-supplied salt (e.g. a request counter) through Philox. Never
   returns the same value for different salts within one clock tick.
   Thread safety: safe (no shared state). */
MSDEF uint64_t ms_fresh_seed(uint64_t salt);

/* ---- per-sequence state ------------------------------------------------- */
/* Penalty counters, prompt token set, output history, seed and position of
   one generated sequence. Lives in caller memory: size it with
   ms_seq_size(capacity) where capacity bounds prompt + output tokens.
   Accepting a token is O(1); applying penalties is O(distinct tokens). */
typedef struct ms_seq ms_seq;

/* Bytes needed for a sequence of at most `capacity` tokens (prompt plus
   output); 0 if capacity < 1 or too large (over 2^28, or a size that does
   not fit in a size_t). Thread safety: pure. */
MSDEF size_t ms_seq_size(int32_t capacity);
/* Lays a sequence out in `mem` (8-byte aligned, `bytes` >= ms_seq_size)
   and returns it through *out. The sequence is empty until ms_seq_reset.
   Returns MS_OK, MS_ERR_NULL_ARGUMENT, MS_ERR_WORKSPACE_TOO_SMALL or
   MS_ERR_CAPACITY. Thread safety: touches only mem. */
MSDEF ms_result ms_seq_init(ms_seq **out, int32_t capacity, void *mem, size_t bytes);
/* ms_seq_size + MYSAMPLE_MALLOC + ms_seq_init. Returns MS_OK,
   MS_ERR_NULL_ARGUMENT, MS_ERR_CAPACITY or MS_ERR_OUT_OF_MEMORY.
   ms_seq_destroy frees a sequence made by ms_seq_create (NULL and
   preallocated sequences are ignored). Thread safety: touch only the
   sequence. */
MSDEF ms_result ms_seq_create(ms_seq **out, int32_t capacity);
MSDEF void ms_seq_destroy(ms_seq *seq);
/* Starts a new request: records the prompt (repetition penalty scope),
   clears the output, sets the position to 0 and the seed to params->seed
   when params->has_seed, else to a fresh seed as ms_fresh_seed(salt)
   makes, with the sequence's address mixed in (two sequences reset in one
   clock tick differ for any salts; one sequence needs a new salt per
   request, e.g. a request counter). `params` may be NULL
   (fresh seed). Ids must lie in [0, vocab). Returns MS_OK,
   MS_ERR_NULL_ARGUMENT, MS_ERR_BAD_VOCAB, MS_ERR_TOKEN_OUT_OF_RANGE (a
   prompt id: the sequence is then empty, with the new seed, and
   ms_seq_accept refuses every token until a reset succeeds; a
   reasoning-budget id: the request starts, with its prompt, without a
   budget) or MS_ERR_CAPACITY (the prompt: empty, as for a prompt id; a
   budget sequence over MS_BUDGET_MAX_IDS: no budget, as before).
   Thread safety: one thread per sequence. */
MSDEF ms_result ms_seq_reset(ms_seq *seq, const int32_t *prompt, int32_t n_prompt,
                             int32_t vocab, const ms_params *params, uint64_t salt);
/* Appends a sampled token to the output: updates the counters in O(1) and
   advances the position by one. Returns MS_OK, MS_ERR_NULL_ARGUMENT,
   MS_ERR_TOKEN_OUT_OF_RANGE or MS_ERR_CAPACITY. Thread safety: one thread
   per sequence. */
MSDEF ms_result ms_seq_accept(ms_seq *seq, int32_t token);
/* Copies src into dst (which must have at least src's capacity): a fork of
   a sequence (n > 1, beam-like uses) keeps its counters. Returns MS_OK,
   MS_ERR_NULL_ARGUMENT or MS_ERR_CAPACITY. */
MSDEF ms_result ms_seq_copy(ms_seq *dst, const ms_seq *src);
/* ms_seq_accept(seq, out->token), then keeps the per-sequence sampler
   state the call left in out (mirostat's mu). Use it instead of
   ms_seq_accept when the params use mirostat. Same results. Thread
   safety: one thread per sequence. */
struct ms_output;
MSDEF ms_result ms_seq_accept_output(ms_seq *seq, const struct ms_output *out);
/* Mirostat's mu of the sequence (NaN until set: the first call then uses
   2 * tau, as llama.cpp's init and reset do) and its setter. */
MSDEF float ms_seq_mirostat_mu(const ms_seq *seq);
MSDEF void ms_seq_set_mirostat_mu(ms_seq *seq, float mu);
/* The reasoning budget's state: MS_BUDGET_IDLE (no span open or no budget),
   MS_BUDGET_COUNTING (inside the span: *remaining tokens left),
   MS_BUDGET_FORCING (the next tokens are forced: the end sequence),
   MS_BUDGET_DONE. remaining may be NULL. */
typedef enum ms_budget_state { MS_BUDGET_IDLE = 0, MS_BUDGET_COUNTING = 1, MS_BUDGET_FORCING = 2, MS_BUDGET_DONE = 3 } ms_budget_state;
#define MS_BUDGET_MAX_IDS 32
MSDEF ms_budget_state ms_seq_budget_state(const ms_seq *seq, int32_t *remaining);
/* Accessors of a sequence. All are O(1), take a sequence from ms_seq_init
   or ms_seq_create (NULL is tolerated: getters return 0/NULL, setters do
   nothing) and follow the sequence's rule: one thread at a time.
   ms_seq_seed: the seed the draws use (read it back to replay a request).
   ms_seq_set_seed: overrides it (e.g. per-choice seeds derived by the
   caller for n > 1).
   ms_seq_position: the output position the next draw uses, by default the
   number of accepted output tokens; ms_seq_set_position overrides it
   (replay, tools); ms_seq_accept advances it by one.
   ms_seq_output_len / ms_seq_prompt_len: tokens accepted / in the prompt.
   ms_seq_count: output occurrences of a token (frequency penalty), 0 for
   ids never seen or out of range; ms_seq_in_prompt: 1 if it is in the
   prompt.
   ms_seq_tokens: prompt then output, ms_seq_prompt_len + ms_seq_output_len
   ids, valid until the next reset/accept. */
MSDEF uint64_t ms_seq_seed(const ms_seq *seq);
MSDEF void ms_seq_set_seed(ms_seq *seq, uint64_t seed);
MSDEF uint64_t ms_seq_position(const ms_seq *seq);
MSDEF void ms_seq_set_position(ms_seq *seq, uint64_t position);
MSDEF int32_t ms_seq_output_len(const ms_seq *seq);
MSDEF int32_t ms_seq_prompt_len(const ms_seq *seq);
MSDEF int32_t ms_seq_count(const ms_seq *seq, int32_t token);
MSDEF int ms_seq_in_prompt(const ms_seq *seq, int32_t token);
MSDEF const int32_t *ms_seq_tokens(const ms_seq *seq);

/* ---- the sampler -------------------------------------------------------- */
/* Holds the workspace (sized for max_vocab up front) and the worker
   threads. No allocation happens after init. One call at a time per
   sampler; create one per thread that samples independently. */
typedef struct ms_sampler ms_sampler;

/* A parallel-for provided by the caller (its own thread pool): must call
   fn(ctx, i) once for every i in [0, n) and return when all calls are done.
   Calls may run concurrently on up to n_workers threads; `worker` in
   [0, n_workers) identifies the workspace the call may use: two calls in
   flight at the same time must have different worker numbers. */
typedef void (*ms_task_fn)(void *ctx, int32_t i, int32_t worker);
typedef void (*ms_parallel_for_fn)(void *user, int32_t n, ms_task_fn fn, void *ctx);

typedef struct ms_sampler_desc {
  int32_t max_vocab;                 /* required: the largest vocab any row will have */
  int32_t n_workers;                 /* workspaces (threads) for batches; 0 = 1 */
  ms_parallel_for_fn parallel_for;   /* optional: the caller's pool */
  void *parallel_user;
  int32_t use_builtin_pool;          /* start n_workers-1 threads (needs MYSAMPLE_THREADS) */
  int32_t max_history;               /* longest prompt + output DRY scans (its window); 0 = max_vocab.
                                        A longer window fails the row with MS_ERR_CAPACITY */
} ms_sampler_desc;

/* Bytes of memory a sampler for desc needs (0 for an invalid desc, and
   for one whose size does not fit in a size_t: 32-bit targets).
   Thread safety: pure. */
MSDEF size_t ms_sampler_size(const ms_sampler_desc *desc);
/* Lays a sampler out in caller memory (64-byte alignment is best; any
   8-byte aligned block works). Returns MS_OK, MS_ERR_NULL_ARGUMENT,
   MS_ERR_BAD_VOCAB, MS_ERR_INVALID_PARAM (a desc ms_sampler_size gives 0
   for), MS_ERR_WORKSPACE_TOO_SMALL, MS_ERR_UNSUPPORTED (pool asked for
   without MYSAMPLE_THREADS) or MS_ERR_THREADS. */
MSDEF ms_result ms_sampler_init(ms_sampler **out, const ms_sampler_desc *desc, void *mem, size_t bytes);
/* ms_sampler_size + MYSAMPLE_MALLOC + ms_sampler_init: same results, plus
   MS_ERR_OUT_OF_MEMORY. Thread safety: touches only the new sampler. */
MSDEF ms_result ms_sampler_create(ms_sampler **out, const ms_sampler_desc *desc);
/* Stops the built-in pool (joins its threads) and frees the memory if
   ms_sampler_create made it; NULL is ignored. Not while a call is running
   on the sampler. */
MSDEF void ms_sampler_destroy(ms_sampler *sampler);
/* Which SIMD path the kernels run on: "avx512", "avx2", "sse2", "neon" or
   "scalar" (chosen once at init from CPUID; MYSAMPLE_SIMD = scalar, sse2,
   avx2, avx512 or neon in the environment caps it, other values are
   ignored). "none" for NULL. Thread safety: pure. */
MSDEF const char *ms_sampler_simd(const ms_sampler *sampler);

/* The benchmark floors, with the widest kernels of this CPU: one max pass
   over x (softmax = 0), or a max pass plus a sum of exp (softmax = 1).
   Returns the max, or the sum. For tools/benchmarks; thread safety: pure. */
MSDEF double ms_floor_pass(const ms_sampler *sampler, const float *x, int32_t n, int softmax);

typedef struct ms_logprob {
  int32_t token;
  float logprob;   /* -inf where masked (writers print -9999.0) */
} ms_logprob;

/* What one row's call produces. Set `top` to an array of `top_capacity`
   entries when params->logprobs > 0 (NULL means: do not report the top). */
typedef struct ms_output {
  int32_t token;        /* the sampled (or greedy) token */
  float logprob;        /* its logprob in the params' mode (when logprobs >= 0) */
  int32_t rank;         /* tokens whose logprob is >= this one's, itself and its
                           ties included (vLLM v1); 0 without logprobs */
  int32_t n_top;        /* entries written to top (descending, ties by id) */
  ms_logprob *top;
  int32_t top_capacity;
  uint64_t seed;        /* the seed the draw used */
  uint64_t position;    /* the position the draw used */
  int32_t greedy;       /* 1 when the row took the argmax path */
  float mirostat_mu;    /* mirostat: mu after this token (ms_seq_accept_output keeps it); NaN otherwise */
} ms_output;

/* Samples one row. `logits` has `vocab` floats and is never modified; seq
   may be NULL (no penalties, no min_tokens; the draw then uses
   params->seed at position 0). Does not update seq: call ms_seq_accept
   with out->token when the token is kept. Returns MS_OK or the error of
   the first bad input (MS_ERR_NAN_LOGIT, MS_ERR_INF_LOGIT,
   MS_ERR_ALL_MASKED, MS_ERR_INVALID_PARAM, MS_ERR_TOKEN_OUT_OF_RANGE,
   MS_ERR_BAD_VOCAB, MS_ERR_NULL_ARGUMENT); on error out->token is -1.
   Thread safety: one call at a time per sampler (uses worker 0). */
MSDEF ms_result ms_sample(ms_sampler *sampler, const float *logits, int32_t vocab,
                          const ms_params *params, const ms_seq *seq, ms_output *out);

/* The exact final distribution the row's token is drawn from: probs[i]
   for every i in [0, vocab), 0 for dropped tokens, summing to 1. For a
   greedy row: 1 at the argmax. Same errors as ms_sample.
   Thread safety: one call at a time per sampler. */
MSDEF ms_result ms_probs(ms_sampler *sampler, const float *logits, int32_t vocab,
                         const ms_params *params, const ms_seq *seq, float *probs);

/* Scores a given token: fills `out` as ms_sample would had it sampled
   `token` (its logprob in params->logprobs_mode, its rank, the top
   params->logprobs entries, the row's seed / position / greedy), without
   a draw. For prompt logprobs (vLLM's prompt_logprobs, OpenAI's echo),
   and for a token chosen elsewhere (a forced or a speculative one). A
   token the final distribution drops gets logprob -inf and rank `vocab`
   (in processed mode; raw logprobs drop nothing the raw row keeps).
   params->logprobs -1 is read as 0: the token's logprob and rank are
   always written. Mirostat: out->mirostat_mu is mu after this token, NaN
   when the token is dropped (ms_seq_accept_output then keeps mu). Same
   errors as ms_sample, and MS_ERR_TOKEN_OUT_OF_RANGE for a token outside
   [0, vocab); on error out->token is -1. Thread safety: one call at a
   time per sampler (uses worker 0). */
MSDEF ms_result ms_score(ms_sampler *sampler, const float *logits, int32_t vocab,
                         const ms_params *params, const ms_seq *seq, int32_t token, ms_output *out);

/* Many rows in one call: row r's logits start at logits + r * row_stride.
   params[r] and seqs[r] (seqs may be NULL, or hold NULL entries) per row;
   out[r] and row_results[r] receive the row's output and result.
   Rows are spread over the sampler's workers (parallel_for or the built-in
   pool); the results do not depend on that. Returns MS_OK when every row
   succeeded, else the first failing row's code (the others are still
   sampled; every row runs once, a logits hook too). Thread safety: one
   call at a time per sampler. */
typedef struct ms_batch {
  int32_t n_rows;
  int32_t vocab;
  const float *logits;
  size_t row_stride;               /* in floats, >= vocab */
  const ms_params *const *params;  /* n_rows pointers (may repeat) */
  const ms_seq *const *seqs;       /* NULL or n_rows pointers (entries may be NULL) */
  ms_output *out;                  /* n_rows */
  ms_result *row_results;          /* NULL or n_rows */
  const int32_t *tokens;           /* NULL: sample every row; else n_rows tokens, row r scored
                                      for tokens[r] as ms_score does (prompt logprobs) */
} ms_batch;
MSDEF ms_result ms_sample_batch(ms_sampler *sampler, const ms_batch *batch);

#ifdef __cplusplus
}
#endif
