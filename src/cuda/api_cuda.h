#ifndef MYSAMPLE_CUDA_H_INCLUDED
#define MYSAMPLE_CUDA_H_INCLUDED

#include "mysample.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- loading ------------------------------------------------------------- */
/* Loads NVRTC once per process (thread-safe) and remembers the outcome.
   `path` (may be NULL) names the library; otherwise $MYSAMPLE_NVRTC_PATH,
   otherwise the versioned names newest first. Only the first call's path
   counts. When NVRTC comes from a directory given by path, its
   libnvrtc-builtins is preloaded from the same directory. Writes a message
   into msg (NUL-terminated when msg_size > 0; msg may be NULL).
   Returns MS_OK or MS_ERR_NO_DEVICE. Thread safety: safe. */
MSDEF ms_result ms_cuda_load_nvrtc(const char *path, char *msg, size_t msg_size);

/* Loads the CUDA driver once per process and runs cuInit (thread-safe,
   remembered). `path` as above ($MYSAMPLE_CUDA_DRIVER_PATH, else
   libcuda.so.1 / nvcuda.dll). Returns MS_OK or MS_ERR_NO_DEVICE (no
   driver library, a stub library, an old driver, or no GPU: the message
   says which). Thread safety: safe. */
MSDEF ms_result ms_cuda_load_driver(const char *path, char *msg, size_t msg_size);

/* NVRTC's version into *major and *minor (either may be NULL) after a
   successful ms_cuda_load_nvrtc, else 0 and 0. Thread safety: safe. */
MSDEF void ms_cuda_nvrtc_version(int *major, int *minor);

/* ---- compiling ----------------------------------------------------------- */
typedef struct ms_cuda_compile_opts {
  const char *nvrtc_path;   /* NULL: see ms_cuda_load_nvrtc */
  const char *cache_dir;    /* NULL: $MYSAMPLE_CUDA_CACHE or the default; "" disables the disk cache */
  int32_t no_disk_cache;    /* 1: neither read nor write the disk cache */
  int32_t no_memory_cache;  /* 1: ignore the in-memory cache (a cold compile, for timing) */
  int32_t topp_bins;        /* 1: with top_p's bins (MS_CUDA_TOPP_BINS; ms_cuda_create sets it as its desc asks) */
} ms_cuda_compile_opts;

#define MS_CUDA_MAX_KERNELS 16
typedef struct ms_cuda_compile_info {
  char target[24];          /* "sm_90" (CUBIN) or "compute_90" (PTX) */
  int32_t is_ptx;
  int32_t source;           /* 0 = compiled now, 1 = in-memory cache, 2 = disk cache */
  double seconds;           /* wall time of this call */
  size_t binary_size;
  int32_t nvrtc_major, nvrtc_minor;
  char cache_file[512];     /* the disk cache file ("" when the disk cache is off) */
  int32_t n_kernels;        /* the kernels and whether each is in its binary */
  const char *kernel[MS_CUDA_MAX_KERNELS];
  int32_t kernel_found[MS_CUDA_MAX_KERNELS];
  int32_t kernel_program[MS_CUDA_MAX_KERNELS];   /* the NVRTC program it is compiled in (0..7; 8..10 with top_p's bins) */
  double kernel_seconds[MS_CUDA_MAX_KERNELS];    /* that program's compile time (0 from a cache) */
} ms_cuda_compile_info;

/* Compiles the kernels for compute capability `sm` (e.g. 90 for sm_90,
   80 for sm_80) with NVRTC; needs no GPU. The kernels form eight NVRTC
   programs (eleven with opts->topp_bins), compiled at once on threads of
   their own (one after another under MYSAMPLE_CUDA_NO_PTHREAD); info
   lists the build's kernels. Picks CUBIN when NVRTC supports
   sm_<sm> (nvrtcGetSupportedArchs), else PTX for the newest supported
   compute_XX below it; MS_ERR_COMPILE when NVRTC supports nothing at or
   below sm. Looks in the in-memory cache, then the disk cache (key: source
   hash, options, NVRTC version, target), then compiles and stores. opts
   and info may be NULL. On failure the NVRTC log (or the reason) goes to
   log (NUL-terminated, truncated to log_size). Returns MS_OK,
   MS_ERR_NO_DEVICE (no NVRTC), MS_ERR_COMPILE, MS_ERR_INVALID_PARAM or
   MS_ERR_OUT_OF_MEMORY. Thread safety: safe (compiles are serialised). */
MSDEF ms_result ms_cuda_compile(int32_t sm, const ms_cuda_compile_opts *opts,
                                ms_cuda_compile_info *info, char *log, size_t log_size);

/* ---- the GPU sampler ----------------------------------------------------- */
typedef struct ms_cuda ms_cuda;

typedef struct ms_cuda_desc {
  int32_t max_rows;         /* required: rows per call */
  int32_t max_vocab;        /* required: the largest vocab of a row */
  int32_t max_slots;        /* device-side sequences (penalties, min_tokens, positions); 0 = none */
  int32_t max_extra_words;  /* per-call room for masks/bias/stop lists, in 4-byte words; 0 = max_rows * (vocab/32 + 256) + 65536 */
  int32_t split;            /* blocks per row of each full-row pass: 0 = auto (several for small batches), -1 = one,
                               1..32 that many; other values: MS_ERR_INVALID_PARAM */
  int32_t device;           /* device ordinal when context is NULL and the thread has no current context */
  void *context;            /* the caller's CUcontext; NULL: the thread's current one, else the device's primary context */
  const char *nvrtc_path;   /* NULL: $MYSAMPLE_NVRTC_PATH or the default names */
  const char *driver_path;  /* NULL: $MYSAMPLE_CUDA_DRIVER_PATH or the default name */
  const char *cache_dir;    /* NULL: default (see ms_cuda_compile_opts); "" = no disk cache */
  int32_t topp;             /* top_p's threshold search: MS_CUDA_TOPP_DEFAULT ($MYSAMPLE_CUDA_TOPP = radix | bins,
                               else radix), MS_CUDA_TOPP_RADIX or MS_CUDA_TOPP_BINS (docs/CUDA.md) */
  int32_t max_history;      /* tokens of each slot's prompt + output kept on the device for bad words,
                               no_repeat_ngram and llama.cpp's penalties (0 = 64): a bad word may have
                               max_history + 1 ids; a no_repeat_ngram row fails with MS_ERR_CAPACITY once
                               its sequence is longer, a llama.cpp row once its penalty window is */
} ms_cuda_desc;

/* ms_cuda_desc.topp. Both give the same tokens and distributions. RADIX:
   three radix passes over the row's keys, then the draw's tile sums (four
   reads after the statistics). BINS: counts by distance below the max
   bound the threshold to a few bins, then the tile sums with those bins'
   tokens listed and the threshold selected exactly among them (two reads;
   the radix passes when the bins hold more than 4096 tokens). */
#define MS_CUDA_TOPP_DEFAULT 0
#define MS_CUDA_TOPP_RADIX 1
#define MS_CUDA_TOPP_BINS 2

/* Device bytes ms_cuda_create allocates for desc (0 for an invalid desc):
   logits work rows, mask bits, parameter blob, sequence counters, and a
   41 KB selection state per row (with top_p's bins, MS_CUDA_TOPP_BINS or
   $MYSAMPLE_CUDA_TOPP = bins, 32 KB more per row for their list).
   Pinned host memory: 2 staging buffers of the blob's size on top.
   Thread safety: pure (reads the environment). */
MSDEF size_t ms_cuda_workspace_size(const ms_cuda_desc *desc);

/* Loads the driver and NVRTC, picks the device's architecture, compiles
   (or loads from the caches) the kernels, and allocates the whole
   workspace once. Returns MS_OK, MS_ERR_NULL_ARGUMENT, MS_ERR_BAD_VOCAB /
   MS_ERR_INVALID_PARAM (desc), MS_ERR_NO_DEVICE, MS_ERR_COMPILE (the
   NVRTC log is in msg), MS_ERR_DEVICE or MS_ERR_OUT_OF_MEMORY; msg (may
   be NULL) gets the details. *out is NULL on failure.
   Thread safety: safe; the object belongs to the caller's context. */
MSDEF ms_result ms_cuda_create(ms_cuda **out, const ms_cuda_desc *desc, char *msg, size_t msg_size);

/* Frees everything ms_cuda_create made (synchronises with the device
   first: work still queued on cu's streams finishes). NULL is allowed.
   Thread safety: no other call on cu may run or follow. */
MSDEF void ms_cuda_destroy(ms_cuda *cu);

/* The compiled target ("sm_90", "compute_120", ...) and the device name:
   strings owned by cu, valid until ms_cuda_destroy ("" for NULL).
   Thread safety: safe (read only). */
MSDEF const char *ms_cuda_target(const ms_cuda *cu);
MSDEF const char *ms_cuda_device_name(const ms_cuda *cu);

/* 1 when cu launches its kernels with programmatic stream serialization
   (programmatic dependent launch: sm_90 or newer, a CUDA 12.3+ driver,
   $MYSAMPLE_CUDA_PDL not "0" when cu was created, and no launch of cu
   refused so far: one that is goes plain, and so does cu from then on),
   else 0: each kernel
   may then start while the previous one on the stream finishes, and waits
   for it inside, which hides the launch latency between the kernels of a
   call. Results are the same either way. Thread safety: as cu's other
   calls (a sampling call may turn it off: not during one on cu). */
MSDEF int ms_cuda_pdl(const ms_cuda *cu);

/* What the device writes per row (40 bytes; an array on the device). */
typedef struct ms_cuda_out {
  int32_t token;        /* the sampled token, -1 on a row error */
  float logprob;        /* its logprob in the row's mode (logprobs >= 0) */
  int32_t rank;         /* tokens whose logprob is >= this one's, itself and its
                           ties included (vLLM v1), as ms_output.rank */
  int32_t status;       /* an ms_result: MS_OK, MS_ERR_NAN_LOGIT, MS_ERR_INF_LOGIT,
                           MS_ERR_ALL_MASKED, MS_ERR_CAPACITY (no_repeat_ngram, or llama.cpp's
                           penalty window, reaching past max_history), or the host-side
                           validation error */
  int32_t n_top;        /* entries written to the row's top list */
  int32_t greedy;       /* 1 when the row took the argmax */
  uint64_t seed;        /* the draw's seed and position */
  uint64_t position;
} ms_cuda_out;

/* One batch. Device pointers are CUdeviceptr values cast to pointers (or
   cudaMalloc pointers). Row r's logits are logits + r * row_stride floats. */
typedef struct ms_cuda_batch {
  int32_t n_rows;                   /* 1..max_rows */
  int32_t vocab;                    /* 1..max_vocab */
  const void *logits;               /* device float[n_rows * row_stride]; not modified */
  size_t row_stride;                /* in floats, >= vocab */
  const ms_params *const *params;   /* host: n_rows pointers (may repeat) */
  const int32_t *slots;             /* host: NULL or n_rows device sequence slots (-1 = none) */
  const uint64_t *seeds;            /* host: NULL or n_rows seeds; NULL: params->seed when has_seed, else a fresh seed */
  const uint64_t *positions;        /* host: NULL or n_rows positions; NULL: the slot's output length (0 without a slot) */
  int32_t accept;                   /* 1: append each sampled token to its slot on the device */
  void *tokens;                     /* device int32[n_rows]: required */
  int32_t *host_tokens;             /* host: NULL or n_rows; an async copy of tokens (use pinned memory) */
  void *out;                        /* device ms_cuda_out[n_rows] or NULL */
  void *top;                        /* device ms_logprob[n_rows * top_stride] or NULL (top-N logprobs) */
  int32_t top_stride;               /* entries per row in top */
  ms_result *row_results;           /* host: NULL or n_rows; host-side validation result per row */
  const int32_t *score_tokens;      /* host: NULL, or n_rows tokens: ms_cuda_sample reports row r for
                                       score_tokens[r] as ms_score does (its logprob, rank and top list,
                                       -inf and rank vocab where dropped; logprobs -1 reads as 0), no
                                       draw; accept appends it. ms_cuda_probs ignores it */
} ms_cuda_batch;

/* Samples every row on `stream` (a CUstream; NULL = the legacy default
   stream): one upload of the packed row parameters (from pinned staging),
   a kernel launch per full-row pass the rows need (1 for greedy rows, 2
   for min_p, at most 11 with masks, top_k, top_p and logprobs, 2 more
   for HF's epsilon and eta), and the optional
   copy of the ids to host_tokens.
   No host synchronisation (the staging buffer of the call before last is
   waited for, normally long done). Rows that fail host validation
   (ms_params_validate; MS_ERR_UNSUPPORTED for what the kernels do not
   implement; MS_ERR_CAPACITY for a bad word of more than max_history + 1
   ids on a row with a slot; MS_ERR_INVALID_PARAM for a second row that
   would append to the same slot) get token -1 and their code in
   out->status and row_results; the other rows are still sampled. Returns
   MS_OK, the first failing row's code, or for the whole call
   MS_ERR_NULL_ARGUMENT, MS_ERR_BAD_VOCAB, MS_ERR_INVALID_PARAM (n_rows,
   stride), MS_ERR_CAPACITY (lists larger than max_extra_words) or
   MS_ERR_DEVICE. Device errors (NaN, all masked, a no_repeat_ngram row
   or a llama.cpp penalty window reaching past max_history) appear in
   out->status once the stream reaches them. Bad words, no_repeat_ngram,
   the length decay, llama.cpp's penalties and the reasoning budget read
   the row's slot (its history, output length and budget state); a row
   without a slot has an empty sequence, as the CPU with seq == NULL.
   Thread safety: one call at a time per ms_cuda. */
MSDEF ms_result ms_cuda_sample(ms_cuda *cu, void *stream, const ms_cuda_batch *batch);

/* The final distributions the rows' tokens are drawn from (for tests and
   tools): probs (device float, row r at probs + r * probs_stride) gets
   vocab values per row, 0 for dropped tokens; greedy rows get 1 at the
   argmax. Does not draw, does not accept; tokens (if given) receive the
   argmax. Same returns as ms_cuda_sample. Thread safety: as above. */
MSDEF ms_result ms_cuda_probs(ms_cuda *cu, void *stream, const ms_cuda_batch *batch,
                              void *probs, size_t probs_stride);

/* Why the last ms_cuda_sample or ms_cuda_probs call on cu refused
   something: the whole call ("vocab 0 is outside 1..128256 (max_vocab)"),
   or its first refused row ("row 3: llama.cpp's mirostat is not
   implemented on the GPU"; for bad parameters, ms_params_validate's
   message after "row N: "). "" after a call that
   refused nothing, and for NULL. Device errors found on the device (NaN
   logits, an all-masked row) are not here: they are in out->status once
   the stream reaches them. The string is cu's, valid until its next call.
   Thread safety: as cu's other calls (not during one on cu). */
MSDEF const char *ms_cuda_last_error(const ms_cuda *cu);

/* ---- device-side sequences ------------------------------------------------ */
/* Starts a request in slot `slot`, as ms_seq_reset does a host sequence:
   clears its counters, marks the prompt tokens (device int32[n_prompt],
   may be NULL when n_prompt is 0) for the repetition penalty, keeps the
   prompt's last max_history tokens as the start of its history and sets
   its output length to 0. params (host, may be NULL) gives the slot its
   reasoning budget (budget_tokens >= 0 with start and end sequences; the
   slot has none otherwise), whose state machine then runs over the prompt
   on the device and over every token the slot accepts; while it forces
   its end sequence, the slot's rows sample the forced token (the later
   rows' own budget fields are not read, as on the CPU). Asynchronous on
   stream (the budget travels in the kernel's arguments: nothing to keep
   alive). Returns MS_OK, MS_ERR_INVALID_PARAM (slot, n_prompt < 0),
   MS_ERR_NULL_ARGUMENT (those two change nothing), MS_ERR_CAPACITY (a
   budget sequence longer than MS_BUDGET_MAX_IDS), MS_ERR_TOKEN_OUT_OF_RANGE
   (a budget id outside [0, max_vocab)): as ms_seq_reset, the request then
   starts without a budget, or MS_ERR_DEVICE. Thread safety: one call at a time per ms_cuda. */
MSDEF ms_result ms_cuda_seq_reset(ms_cuda *cu, void *stream, int32_t slot, const void *prompt, int32_t n_prompt,
                                  const ms_params *params);

/* The reasoning budget's state of slot `slot` (ms_seq_budget_state's
   answer for the device sequence) and, while counting, the tokens left
   (0 otherwise; remaining may be NULL). Reads the device synchronously
   (the default stream): call once the slot's work is done (ms_cuda_sync),
   e.g. in tools and tests. Returns MS_OK, MS_ERR_NULL_ARGUMENT (cu,
   state), MS_ERR_INVALID_PARAM (slot) or MS_ERR_DEVICE. Thread safety:
   one call at a time per ms_cuda. */
MSDEF ms_result ms_cuda_seq_budget_state(ms_cuda *cu, int32_t slot, ms_budget_state *state, int32_t *remaining);

/* Appends tokens[j] to slot slots[j] for j < n (both device int32 arrays),
   for tokens chosen outside ms_cuda_sample (e.g. speculative decoding); a
   slot's tokens join its history in the order of j. Ids outside
   [0, max_vocab) and negative slots are skipped. Asynchronous (one block
   of 256 threads: meant for a step's tokens, not for bulk loads). Returns
   MS_OK, MS_ERR_NULL_ARGUMENT or MS_ERR_DEVICE. Thread safety: one call at
   a time per ms_cuda. */
MSDEF ms_result ms_cuda_seq_accept(ms_cuda *cu, void *stream, const void *slots, const void *tokens, int32_t n);

/* ---- small helpers (for programs that do not link the CUDA runtime) ------- */
/* cuMemAlloc / cuMemFree / synchronous copies / cuStreamSynchronize in
   cu's context. Return MS_OK or MS_ERR_DEVICE (MS_ERR_NULL_ARGUMENT for
   NULL pointers). Thread safety: as the driver's. */
MSDEF ms_result ms_cuda_malloc(ms_cuda *cu, void **ptr, size_t bytes);
MSDEF void ms_cuda_free(ms_cuda *cu, void *ptr);
MSDEF ms_result ms_cuda_upload(ms_cuda *cu, void *dst, const void *src, size_t bytes);
MSDEF ms_result ms_cuda_download(ms_cuda *cu, void *dst, const void *src, size_t bytes);
MSDEF ms_result ms_cuda_sync(ms_cuda *cu, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* MYSAMPLE_CUDA_H_INCLUDED */
