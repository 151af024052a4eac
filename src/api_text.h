/* ---- egress: text assembly, stop strings, JSON/SSE writer ---------------- */
/* From sampled token ids to correct bytes on the wire, for any input:

     token bytes --ms_text_push--> UTF-8-safe delta text, finish reason
                 --ms_chunk_write / ms_response_write--> OpenAI JSON / SSE

   Nothing here allocates: ms_text lives in caller memory sized by
   ms_text_size(desc), ms_response likewise; writers write into a caller
   buffer (snprintf-style: they report the bytes needed when it is short)
   or hand the bytes to a callback. */

#ifdef __cplusplus
extern "C" {
#endif

/* Why a choice finished. The names are the OpenAI `finish_reason` strings
   (ms_finish_name). Zero is "not finished" so a zeroed struct means that. */
typedef enum ms_finish {
  MS_FINISH_NONE = 0,           /* still running: finish_reason null        */
  MS_FINISH_STOP = 1,           /* "stop": EOS, a stop token or stop string  */
  MS_FINISH_LENGTH = 2,         /* "length": max_tokens (or context) reached */
  MS_FINISH_ABORT = 3,          /* "abort" (vLLM: the client went away)      */
  MS_FINISH_CONTENT_FILTER = 4, /* "content_filter"                          */
  MS_FINISH_TOOL_CALLS = 5,     /* "tool_calls"                              */
  MS__FINISH_COUNT_
} ms_finish;

/* The finish_reason string of f ("stop", "length", ...); NULL for
   MS_FINISH_NONE and unknown values. Thread safety: pure. */
MSDEF const char *ms_finish_name(ms_finish f);

/* vLLM's `stop_reason`: which stop string (a JSON string) or which stop
   token id (a JSON number) ended the choice; null for EOS, length and
   everything else. Zero-initialised means none. */
typedef enum ms_stop_kind {
  MS_STOP_NONE = 0,
  MS_STOP_STRING = 1,
  MS_STOP_TOKEN = 2
} ms_stop_kind;
typedef struct ms_stop_reason {
  ms_stop_kind kind;
  int32_t token;        /* MS_STOP_TOKEN: the stop token id                  */
  int32_t index;        /* MS_STOP_STRING: index into the request's stop list */
  const char *str;      /* MS_STOP_STRING: the stop string (not NUL-terminated) */
  size_t len;
} ms_stop_reason;

/* ======================================================================== */
/* Text assembly: one ms_text per generated sequence (choice).               */
/* ======================================================================== */

/* How much text a streaming sequence holds back while stop strings may still
   match. MS_HOLDBACK_VLLM (default) is vLLM's rule: the last
   max(len(stop)) - 1 characters always wait, so deltas are chunked exactly as
   vLLM chunks them. MS_HOLDBACK_PREFIX holds back only the longest tail that
   is a prefix of some stop string: same final text, lower latency. */
typedef enum ms_holdback {
  MS_HOLDBACK_VLLM = 0,
  MS_HOLDBACK_PREFIX = 1
} ms_holdback;

/* Capacities fixed when the memory is laid out; every request reset on that
   memory must fit in them. */
typedef struct ms_text_desc {
  int32_t max_stops;       /* most stop strings one request may set (>= 0)      */
  int32_t max_stop_bytes;  /* longest stop string, in bytes (>= 1 if max_stops) */
  int32_t max_stop_ids;    /* most stop token ids one request may set (>= 0)    */
  size_t text_capacity;    /* bytes of emitted text kept for ms_text_get
                              (non-stream responses); 0 keeps none             */
} ms_text_desc;

/* Per-request stop and length rules (vLLM SamplingParams names). Start from
   ms_text_params_default(): eos_token_id -1 means "no EOS". Strings and
   arrays are copied by ms_text_reset; they need not outlive the call. */
typedef struct ms_text_params {
  const char *const *stop;        /* n_stop stop strings (valid UTF-8, non-empty) */
  const size_t *stop_lens;        /* their lengths; NULL = NUL-terminated strings */
  int32_t n_stop;
  const int32_t *stop_token_ids;  /* finish with "stop", stop_reason = the id */
  int32_t n_stop_token_ids;
  int32_t eos_token_id;           /* finish with "stop", stop_reason null; -1 = none */
  int32_t ignore_eos;             /* non-zero: EOS is an ordinary token */
  int32_t include_stop_str_in_output; /* keep the matched stop string, and the
                                         text of a stop/EOS token, in the output */
  int32_t min_tokens;             /* no stop (token or string) before this many tokens */
  int32_t max_tokens;             /* finish with "length" after this many; 0 = no limit */
  ms_holdback holdback;
} ms_text_params;

/* One push's result. `delta` points into the caller's `out` buffer. */
typedef struct ms_text_step {
  const char *delta;        /* text safe to emit now: complete, valid UTF-8, NUL-terminated */
  size_t delta_len;         /* bytes of delta (may be 0)                        */
  ms_finish finish;         /* MS_FINISH_NONE while the sequence goes on         */
  ms_stop_reason stop_reason; /* vLLM stop_reason (str points into the ms_text) */
  int64_t text_offset;      /* characters (code points) of decoded text before this
                               token's text: the legacy completions text_offset */
  int64_t text_offset_bytes;/* the same in UTF-8 bytes                          */
  int32_t n_tokens;         /* output tokens pushed so far, this one included   */
  int32_t token_text_used;  /* 0 when the token's bytes were dropped (a stop/EOS
                               token without include_stop_str_in_output)        */
} ms_text_step;

typedef struct ms_text ms_text;

/* The defaults: no stops, no EOS (-1), no limits, vLLM holdback.
   Thread safety: pure. */
MSDEF ms_text_params ms_text_params_default(void);

/* Bytes of memory an ms_text for desc needs; 0 when desc is NULL or a field
   is negative or absurdly large. Thread safety: pure. */
MSDEF size_t ms_text_size(const ms_text_desc *desc);

/* Lays an ms_text out in `mem` (8-byte aligned, `bytes` >= ms_text_size)
   and returns it through *out, reset to ms_text_params_default().
   Returns MS_OK, MS_ERR_NULL_ARGUMENT, MS_ERR_INVALID_PARAM (bad desc) or
   MS_ERR_WORKSPACE_TOO_SMALL. Thread safety: touches only mem. */
MSDEF ms_result ms_text_init(ms_text **out, const ms_text_desc *desc, void *mem, size_t bytes);

/* Starts a new sequence with params (NULL = defaults): copies the stop
   strings and ids, clears the text. On error the ms_text is left reset to
   the defaults and a message naming the bad field (vLLM's wording where
   vLLM has one) goes to msg (NUL-terminated when msg_size > 0; msg may be
   NULL). Returns MS_OK, MS_ERR_NULL_ARGUMENT, MS_ERR_INVALID_PARAM (empty
   stop string, negative or inconsistent min/max_tokens), MS_ERR_INVALID_UTF8
   (a stop string is not valid UTF-8) or MS_ERR_CAPACITY (more or longer
   stops than the desc allows). Thread safety: one thread per ms_text. */
MSDEF ms_result ms_text_reset(ms_text *t, const ms_text_params *params, char *msg, size_t msg_size);

/* The size `out` must have for a push of n_bytes token bytes (or for
   ms_text_finish with n_bytes = 0): the held-back text, the decoded bytes
   (an invalid byte becomes the 3-byte U+FFFD) and a NUL. Thread safety:
   pure. */
MSDEF size_t ms_text_out_bound(const ms_text *t, size_t n_bytes);

/* Appends one sampled token: its id and its raw bytes exactly as the
   tokenizer gives them (a piece of a UTF-8 character is fine). Writes the
   text safe to emit now to out (see ms_text_step) and finishes the sequence
   when a rule says so, in vLLM's order: no stop before min_tokens; EOS
   (unless ignore_eos) and stop token ids ("stop"); max_tokens ("length");
   then stop strings, which override: the match that completes first in the
   text wins (ties: the longer one), the text is cut before it (or after it
   with include_stop_str_in_output). Stop strings are matched only against
   text added by tokens after the first min_tokens. On finish all held text
   is flushed and an incomplete trailing UTF-8 sequence becomes U+FFFD.
   The push is atomic: on error nothing changes but out, where step->delta
   is then "" (out[0] = 0 when out_size > 0). Returns MS_OK,
   MS_ERR_NULL_ARGUMENT (t, step, out, or bytes with n_bytes > 0),
   MS_ERR_BUFFER_TOO_SMALL (out_size < ms_text_out_bound(t, n_bytes)),
   MS_ERR_STATE (already finished) or MS_ERR_CAPACITY (the kept text would
   exceed desc.text_capacity). Thread safety: one thread per ms_text. */
MSDEF ms_result ms_text_push(ms_text *t, int32_t token, const void *bytes, size_t n_bytes,
                             char *out, size_t out_size, ms_text_step *step);

/* Finishes a sequence for a reason outside the token rules (an abort, the
   context length, the end of the caller's input): flushes the held text
   (incomplete UTF-8 becomes U+FFFD, which is still checked against the stop
   strings) with finish = reason (MS_FINISH_LENGTH, MS_FINISH_ABORT, ...;
   a stop string found in the flushed text turns it into MS_FINISH_STOP).
   Returns as ms_text_push; MS_ERR_INVALID_PARAM when reason is
   MS_FINISH_NONE or unknown. Thread safety: one thread per ms_text. */
MSDEF ms_result ms_text_finish(ms_text *t, ms_finish reason, char *out, size_t out_size,
                               ms_text_step *step);

/* The text emitted so far (concatenated deltas, NUL-terminated) when
   desc.text_capacity > 0, else "" (length 0). *len may be NULL.
   Thread safety: read-only. */
MSDEF const char *ms_text_get(const ms_text *t, size_t *len);
/* MS_FINISH_NONE while running, else the finish reason. */
MSDEF ms_finish ms_text_finished(const ms_text *t);
/* Output tokens pushed since the last reset. */
MSDEF int32_t ms_text_n_tokens(const ms_text *t);

/* Checks that bytes are valid UTF-8 (RFC 3629: no overlongs, surrogates or
   values above U+10FFFF). Returns MS_OK, MS_ERR_INVALID_UTF8 or
   MS_ERR_NULL_ARGUMENT. Thread safety: pure. */
MSDEF ms_result ms_utf8_validate(const void *bytes, size_t n);

/* Lossy UTF-8 decode: copies bytes to out, each maximal ill-formed
   subsequence replaced by U+FFFD (Unicode's "maximal subpart" practice, as
   Python's errors="replace" and Rust's from_utf8_lossy). Writes at most
   out_size bytes plus nothing else (no NUL); returns the length the whole
   result has, so out may be NULL for a size query (at most 3 * n).
   Thread safety: pure. */
MSDEF size_t ms_utf8_sanitize(const void *bytes, size_t n, char *out, size_t out_size);

/* ======================================================================== */
/* JSON / SSE writer.                                                        */
/* ======================================================================== */

/* A write callback: receives the next `n` bytes of the object; returns 0 to
   go on, non-zero to stop (the writer then returns MS_ERR_CALLBACK). */
typedef int (*ms_write_fn)(void *user, const char *bytes, size_t n);

/* Where a writer puts its bytes.
   Buffer mode (write == NULL): like snprintf, the object and a NUL go to
   buf when len < size; else MS_ERR_BUFFER_TOO_SMALL and nothing useful is
   in buf. In both cases `len` is set to the object's length (without the
   NUL), so buf = NULL, size = 0 is a size query.
   Callback mode (write != NULL): bytes go to write() in pieces, staged in
   buf when size >= 64 (bigger is fewer calls), else in a small stack buffer;
   no NUL; `len` is the total handed over. */
typedef struct ms_out {
  char *buf;
  size_t size;
  ms_write_fn write;
  void *user;
  size_t len;         /* out: the object's length in bytes */
} ms_out;

/* Which OpenAI API a response answers. */
typedef enum ms_object {
  MS_OBJECT_CHAT = 0,        /* chat.completion / chat.completion.chunk */
  MS_OBJECT_COMPLETION = 1   /* text_completion (legacy completions)    */
} ms_object;

/* The request-constant part of every object of one response. Strings are
   NUL-terminated, any bytes (escaped and made valid UTF-8 when written). */
typedef struct ms_response_desc {
  ms_object object;
  const char *id;                 /* e.g. "chatcmpl-abc"; required */
  const char *model;              /* required */
  int64_t created;                /* Unix seconds */
  const char *system_fingerprint; /* NULL: the field is left out */
  int32_t no_stop_reason;         /* non-zero: leave out vLLM's stop_reason (plain OpenAI) */
  int32_t no_sse;                 /* non-zero: chunk writers write bare JSON, no "data: "/"\n\n" */
} ms_response_desc;

typedef struct ms_response ms_response;

/* Bytes an ms_response for desc needs (its id and model are escaped once
   and kept); 0 for a NULL desc or NULL id/model. Thread safety: pure. */
MSDEF size_t ms_response_size(const ms_response_desc *desc);
/* Lays an ms_response out in mem (any alignment >= 8; bytes >=
   ms_response_size). Returns MS_OK, MS_ERR_NULL_ARGUMENT,
   MS_ERR_INVALID_PARAM (unknown object) or MS_ERR_WORKSPACE_TOO_SMALL.
   Immutable afterwards: threads may share it. */
MSDEF ms_result ms_response_init(ms_response **out, const ms_response_desc *desc, void *mem, size_t bytes);

/* One token as the logprobs objects show it. */
typedef struct ms_token {
  int32_t token;                /* id (not written; for the caller's bookkeeping) */
  float logprob;                /* non-finite (and < -9999) written as -9999.0 */
  const unsigned char *bytes;   /* the raw token bytes; the JSON "token" string is
                                   their lossy UTF-8 decode, "bytes" the raw list */
  size_t n_bytes;
} ms_token;

/* One output token's logprobs entry. */
typedef struct ms_token_logprobs {
  ms_token tok;                 /* the sampled token */
  const ms_token *top;          /* its alternatives, best first; NULL: chat writes
                                   [], completions write null (else completions
                                   write tok, then these: "up to logprobs+1") */
  int32_t n_top;
  int64_t text_offset;          /* legacy completions: characters before this token */
} ms_token_logprobs;

/* One streamed choice delta (one choice per chunk, as OpenAI and vLLM send;
   n > 1 gives one chunk per choice with its index). */
typedef struct ms_chunk {
  int32_t index;                /* choice index */
  int32_t role;                 /* chat: non-zero adds "role":"assistant" (first chunk);
                                   with text NULL it also writes "content":"" */
  const char *text;             /* chat delta content / completion text; any bytes.
                                   NULL: chat leaves "content" out (final chunk:
                                   "delta":{}), completions write "" */
  size_t text_len;
  const ms_token_logprobs *logprobs; /* the tokens of this chunk; NULL: "logprobs":null */
  int32_t n_logprobs;
  ms_finish finish;             /* NONE: "finish_reason":null */
  ms_stop_reason stop_reason;   /* written with a finish (unless desc.no_stop_reason) */
} ms_chunk;

/* Token counts for the "usage" object; total = prompt + completion (both
   non-negative, their sum at most INT64_MAX: else MS_ERR_INVALID_PARAM). */
typedef struct ms_usage {
  int64_t prompt_tokens;
  int64_t completion_tokens;
} ms_usage;

/* One choice of a non-streamed response. */
typedef struct ms_choice {
  int32_t index;
  const char *text;             /* the whole output text; any bytes; NULL = "" */
  size_t text_len;
  const ms_token_logprobs *logprobs; /* one entry per output token; NULL: "logprobs":null */
  int32_t n_logprobs;
  ms_finish finish;
  ms_stop_reason stop_reason;
} ms_choice;

/* The OpenAI error object {"error":{"message","type","param","code"}}. */
typedef struct ms_error {
  const char *message;          /* required */
  const char *type;             /* e.g. "BadRequestError"; NULL = "invalid_request_error" */
  const char *param;            /* NULL: null */
  const char *code;             /* NULL: code_num if > 0 (vLLM's HTTP status), else null */
  int32_t code_num;
} ms_error;

/* Writes one streamed chunk: chat.completion.chunk or text_completion, as
   `data: {...}\n\n` (bare JSON with desc.no_sse). Field order: id, object,
   created, model, [system_fingerprint], choices[{index, delta|text,
   logprobs, finish_reason, [stop_reason]}]. Chat logprobs are
   {"content":[{token, logprob, bytes, top_logprobs:[{token, logprob,
   bytes}]}]}, completion logprobs {text_offset, token_logprobs, tokens,
   top_logprobs:[{str: num}]} (the sampled token, then its alternatives, as
   vLLM's dict: a key repeated after decoding keeps its first place and its
   last value).
   Returns MS_OK, MS_ERR_NULL_ARGUMENT, MS_ERR_INVALID_PARAM (negative
   counts or index, NULL arrays with counts, unknown finish), MS_ERR_BUFFER_TOO_SMALL
   or MS_ERR_CALLBACK. Thread safety: reentrant (touches only out). */
MSDEF ms_result ms_chunk_write(ms_out *out, const ms_response *r, const ms_chunk *chunk);

/* Writes the usage chunk that ends a stream when stream_options.include_usage
   is set: the same header with "choices":[] and "usage":{prompt_tokens,
   completion_tokens, total_tokens}. Returns as ms_chunk_write.
   Thread safety: reentrant (touches only out). */
MSDEF ms_result ms_usage_chunk_write(ms_out *out, const ms_response *r, const ms_usage *usage);

/* Writes the stream terminator "data: [DONE]\n\n". Returns MS_OK,
   MS_ERR_NULL_ARGUMENT, MS_ERR_BUFFER_TOO_SMALL or MS_ERR_CALLBACK.
   Thread safety: reentrant (touches only out). */
MSDEF ms_result ms_done_write(ms_out *out);

/* Writes the non-stream object (chat.completion with "message":{"role":
   "assistant","content":...}, or text_completion with "text"), choices in
   the given order, then "usage" (left out when usage is NULL). Never SSE
   framed. Returns as ms_chunk_write. Thread safety: reentrant. */
MSDEF ms_result ms_response_write(ms_out *out, const ms_response *r, const ms_choice *choices,
                                  int32_t n_choices, const ms_usage *usage);

/* Writes the error object; with sse non-zero framed as `data: {...}\n\n`
   (how vLLM reports an error in the middle of a stream). Returns as
   ms_done_write, or MS_ERR_NULL_ARGUMENT without a message.
   Thread safety: reentrant. */
MSDEF ms_result ms_error_write(ms_out *out, const ms_error *err, int sse);

/* Writes bytes as a JSON string with quotes: control characters escaped,
   invalid UTF-8 as U+FFFD, U+2028/U+2029 as \u2028/\u2029. Returns as
   ms_done_write. Thread safety: reentrant. */
MSDEF ms_result ms_json_string_write(ms_out *out, const void *bytes, size_t n);

/* Formats v as the shortest decimal that reads back as the same float
   (round-to-nearest), in Python's repr style ("-0.25", "1e-05", "-9999.0",
   "3.4028235e+38"), independent of the C locale. Non-finite values give
   "NaN", "Infinity", "-Infinity" (not JSON: callers map them first).
   Writes a NUL; needs at most 24 bytes. Returns the length.
   Thread safety: pure. */
MSDEF size_t ms_json_float(char buf[24], float v);

#ifdef __cplusplus
}
#endif
