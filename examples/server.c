/* server.c - a tiny OpenAI-compatible HTTP/1.1 server built on mysample.h.

   POST /v1/chat/completions, POST /v1/completions (stream or not), GET
   /v1/models, GET /health. One thread runs a poll() loop over the sockets
   and the decode loop; a small worker pool runs the model and the sampler.
   Every step: one model step per active sequence (in parallel), then ONE
   ms_sample_batch over all active rows with per-row parameters and
   sequences, then the egress (ms_text_push: UTF-8-safe deltas, stop
   strings, finish reasons; ms_chunk_write / ms_response_write: the JSON
   and SSE bytes). Continuous batching in miniature: requests join and leave
   between steps; a client that goes away is dropped between steps and its
   slots freed without touching the others.

   With --cuda the batch is sampled on the GPU instead (mysample_cuda.h:
   the same semantics and random numbers, device-side sequences for the
   penalties), falling back to the CPU where no GPU, driver or NVRTC is
   found.

   Models: by default an n-gram model trained at start-up on the embedded
   text (examples/ngram.h), so it answers with no download; with --model
   and --tokenizer a llama2.c checkpoint (examples/llama2.h).

   Limits (docs/SERVER.md): requests beyond the free slots wait in a FIFO
   queue; connections, header and body sizes, timeouts for slow senders and
   slow readers are bounded by the constants below or flags.

   Build: make server (or: cc -O2 -I. -Iexamples examples/server.c -lm -lpthread -ldl).
   C99 + POSIX (sockets, poll, pthreads). */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#define MYSAMPLE_IMPLEMENTATION
#define MYSAMPLE_CUDA_IMPLEMENTATION
#include "mysample_cuda.h"   /* mysample.h and the optional GPU sampler (loaded at run time) */
#include "ngram.h"
#include "llama2.h"
#include "json.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#ifdef MS_EMBEDDED_CORPUS
#include "corpus.inc"   /* static const unsigned char embedded_corpus[]: examples/data/corpus.txt */
#endif

/* ---- limits ------------------------------------------------------------ */
#define MAX_HEADER_BYTES   16384          /* request line + headers; beyond: 431 */
#define MAX_BODY_DEFAULT   (1u << 20)     /* request body; beyond: 413 (--max-body) */
#define MAX_OUT_BYTES      (8u << 20)     /* unsent output of a stream in progress; beyond: dropped */
#define REQUEST_TIMEOUT_MS 10000          /* a started request must arrive whole within this: 408 (--request-timeout) */
#define IDLE_TIMEOUT_MS    60000          /* keep-alive connection with no request: closed (--idle-timeout) */
#define WRITE_STALL_MS     30000          /* pending output with no progress: dropped (--write-timeout) */
#define MAX_CONNS_DEFAULT  256            /* open connections; beyond: 503 and close (--max-conns) */
#define SLOTS_DEFAULT      64             /* sequences decoded at once (--slots) */
#define MAX_QUEUE          1024           /* requests waiting for slots; beyond: 503 */
#define MAX_N              16             /* choices per request */
#define MAX_STOPS          16             /* stop strings per request */
#define MAX_STOP_BYTES     256            /* bytes per stop string */
#define MAX_STOP_IDS       64             /* stop_token_ids per request */
#define MAX_BIAS           1024           /* logit_bias entries per request */
#define MAX_TOP            20             /* top_logprobs / logprobs cap (vLLM's max_logprobs) */
#define NGRAM_CTX          4096           /* context length of the n-gram model */
#define NGRAM_VOCAB        1024           /* target vocabulary of the n-gram model */
#define PREFILL_CHUNK      32             /* llama2 prompt tokens per sequence per step */
#define MAX_TOKENS_DEFAULT_CAP 4096      /* default max_tokens when the request has none */

/* ---- small utilities --------------------------------------------------- */
static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct buf { char *p; size_t len, cap; } buf;
static int buf_reserve(buf *b, size_t extra) {
  size_t need, cap;
  char *np;
  if (extra > ((size_t)1 << 30) - b->len) return -1;
  need = b->len + extra + 1;
  if (need <= b->cap) return 0;
  cap = b->cap ? b->cap : 256;
  while (cap < need) cap *= 2;
  np = (char *)realloc(b->p, cap);
  if (!np) return -1;
  b->p = np; b->cap = cap;
  return 0;
}
static int buf_append(buf *b, const void *d, size_t n) {
  if (buf_reserve(b, n)) return -1;
  if (n) memcpy(b->p + b->len, d, n);
  b->len += n;
  b->p[b->len] = 0;
  return 0;
}
static int buf_printf(buf *b, const char *fmt, ...) {
  va_list ap;
  int n;
  char tmp[512];
  va_start(ap, fmt);
  n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return -1;
  if ((size_t)n < sizeof tmp) return buf_append(b, tmp, (size_t)n);
  if (buf_reserve(b, (size_t)n)) return -1;
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
  return 0;
}
static void buf_free(buf *b) { free(b->p); b->p = NULL; b->len = b->cap = 0; }
/* ms_write_fn appending to a buf: the writers stream straight into it. */
static int buf_write_cb(void *user, const char *bytes, size_t n) { return buf_append((buf *)user, bytes, n); }
static ms_out buf_out(buf *b) {
  ms_out o;
  memset(&o, 0, sizeof o);
  o.write = buf_write_cb;
  o.user = b;
  return o;
}
/* JSON string via the library's escaper (any bytes -> valid JSON). */
static void buf_json_str(buf *b, const char *s, size_t n) {
  ms_out o = buf_out(b);
  ms_json_string_write(&o, s, n);
}

/* ---- worker pool (also the sampler's parallel_for) ----------------------- */
typedef struct pool {
  pthread_t *th;
  int n;                 /* threads including the caller */
  pthread_mutex_t mu;
  pthread_cond_t go, done;
  int64_t gen;
  int32_t n_tasks, next, running;
  ms_task_fn fn;
  void *ctx;
  int quit;
} pool;
typedef struct pool_arg { pool *p; int id; } pool_arg;
static pool_arg pool_args[256];

static void pool_work(pool *p, int worker) {
  for (;;) {
    int32_t i;
    pthread_mutex_lock(&p->mu);
    i = p->next < p->n_tasks ? p->next++ : -1;
    pthread_mutex_unlock(&p->mu);
    if (i < 0) return;
    p->fn(p->ctx, i, worker);
  }
}
static void *pool_main(void *arg) {
  pool_arg *a = (pool_arg *)arg;
  pool *p = a->p;
  int64_t seen = 0;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    while (p->gen == seen && !p->quit) pthread_cond_wait(&p->go, &p->mu);
    if (p->quit) { pthread_mutex_unlock(&p->mu); return NULL; }
    seen = p->gen;
    pthread_mutex_unlock(&p->mu);
    pool_work(p, a->id);
    pthread_mutex_lock(&p->mu);
    if (--p->running == 0) pthread_cond_signal(&p->done);
    pthread_mutex_unlock(&p->mu);
  }
}
static void pool_for(void *user, int32_t n, ms_task_fn fn, void *ctx) {
  pool *p = (pool *)user;
  if (n <= 0) return;
  if (p->n <= 1 || n == 1) {
    int32_t i;
    for (i = 0; i < n; i++) fn(ctx, i, 0);
    return;
  }
  pthread_mutex_lock(&p->mu);
  p->fn = fn; p->ctx = ctx; p->n_tasks = n; p->next = 0;
  p->running = p->n - 1;
  p->gen++;
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->mu);
  pool_work(p, 0);
  pthread_mutex_lock(&p->mu);
  while (p->running > 0) pthread_cond_wait(&p->done, &p->mu);
  pthread_mutex_unlock(&p->mu);
}
static int pool_start(pool *p, int n) {
  int i;
  memset(p, 0, sizeof *p);
  if (n < 1) n = 1;
  if (n > 256) n = 256;
  p->n = n;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->go, NULL);
  pthread_cond_init(&p->done, NULL);
  p->th = (pthread_t *)calloc((size_t)n, sizeof(pthread_t));
  if (!p->th) return -1;
  for (i = 1; i < n; i++) {
    pool_args[i].p = p; pool_args[i].id = i;
    if (pthread_create(&p->th[i], NULL, pool_main, &pool_args[i]) != 0) { p->n = i; break; }
  }
  return 0;
}
static void pool_stop(pool *p) {
  int i;
  pthread_mutex_lock(&p->mu);
  p->quit = 1;
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->mu);
  for (i = 1; i < p->n; i++) pthread_join(p->th[i], NULL);
  free(p->th);
}

/* ---- the model: n-gram or llama2.c --------------------------------------- */
typedef struct model {
  int is_llama;
  const char *name;
  int32_t vocab, eos, ctx;
  ng_model *ng;
  l2_model *l2;
  l2_tokenizer *tk;
} model;

typedef struct mstate {
  ng_state ng;
  l2_state *l2;
} mstate;

/* Bytes a token adds to the text (prev: the token before, for llama2's
   space after BOS); NULL/0 for EOS. */
static const unsigned char *model_text(const model *m, int32_t prev, int32_t id, int32_t *len) {
  if (m->is_llama) return l2_piece(m->tk, prev, id, len);
  if (id == NG_EOS) { *len = 0; return (const unsigned char *)""; }
  return ng_piece(m->ng, id, len);
}
/* Bytes shown for a token in logprobs. */
static const unsigned char *model_lp_bytes(const model *m, int32_t id, int32_t *len) {
  if (m->is_llama) {
    if (id == L2_BOS || id == L2_EOS) return l2_raw_piece(m->tk, id, len);
    return l2_piece(m->tk, -1, id, len);
  }
  return ng_piece(m->ng, id, len);
}
/* Prompt text -> ids (llama2: BOS first). Returns the count (<= cap),
   cap + 1 when the prompt needs more than cap tokens, or -1 when out of
   memory. */
static int32_t model_encode(const model *m, const char *text, size_t len, int32_t *out, int32_t cap) {
  if (m->is_llama) {
    /* the whole prompt is counted (O(n log n)); a text too long for cap
       tokens is refused before its merges */
    return l2_encode_fit(m->tk, (const unsigned char *)text, len, 1, out, cap);
  } else {
    int32_t n = ng_encode(m->ng, (const unsigned char *)text, len, out, cap);
    return n > cap ? cap + 1 : n;
  }
}
static int mstate_init(const model *m, mstate *s) {
  ng_state_init(&s->ng);
  s->l2 = NULL;
  if (m->is_llama) {
    s->l2 = l2_state_new(m->l2);
    if (!s->l2) return -1;
  }
  return 0;
}
static void mstate_free(mstate *s) { l2_state_free(s->l2); s->l2 = NULL; }
/* Advances the state by token (token < 0: nothing) and writes the next
   logits when logits != NULL. */
static int model_feed(const model *m, mstate *s, int32_t token, float *logits) {
  if (m->is_llama) {
    if (token < 0) return -1;
    return l2_forward(m->l2, s->l2, token, logits);
  }
  if (token >= 0) ng_state_push(&s->ng, token);
  if (logits) ng_logits(m->ng, &s->ng, logits);
  return 0;
}

/* ---- requests, choices, connections --------------------------------------- */
typedef struct conn conn;
typedef struct request request;

typedef struct choice {
  request *req;
  int index;
  mstate st;
  ms_seq *seq;
  ms_text *text;
  void *text_mem;
  ms_params params;
  int32_t pending_pos;     /* prompt tokens fed so far */
  int32_t last_token, need_feed, prev_token;
  int32_t row;             /* row in this step's batch, -1 when not sampled */
  int32_t slot;            /* --cuda: its device-side sequence, -1 none */
  int feed_failed;
  int done;
  ms_finish finish;
  ms_stop_reason stop_reason; /* with finish, for the non-stream body (str points into text) */
  /* non-stream logprobs */
  ms_token_logprobs *lp;
  ms_token *lp_top;
  int32_t n_lp, cap_lp, n_lp_top, cap_lp_top;
  int32_t *lp_top_at;
} choice;

enum { API_CHAT = 0, API_COMPLETION = 1 };

struct request {
  conn *c;
  request *qnext;          /* waiting queue */
  int api;
  int stream, include_usage;
  int n;
  int32_t max_tokens;
  int logprobs;            /* -1 off, else the top count */
  ms_params params;
  ms_bias *bias; int32_t n_bias;
  int32_t *stop_ids; int32_t n_stop_ids;
  char *stops[MAX_STOPS]; size_t stop_lens[MAX_STOPS]; int n_stops;
  int32_t min_tokens, ignore_eos, include_stop;
  int32_t *prompt; int32_t n_prompt;
  choice *ch;
  int n_done;
  int admitted;
  char id[48];
  int64_t created;
  void *resp_mem;
  ms_response *resp;
  int failed;              /* a sampling error: the stream got an error event */
};

enum { C_READ = 0, C_BUSY = 1, C_WRITE = 2 };

struct conn {
  int fd;
  int state;
  buf in, out;
  size_t out_off;
  int64_t t_open, t_req, t_progress;
  int keep_alive;
  int http10;              /* the request in progress is HTTP/1.0: streams are close-delimited */
  int close_after;
  int in_eof;
  int sent_continue;
  size_t req_bytes;        /* header + body of the request in progress */
  request *req;
  conn *next, *prev;
};

/* ---- the server --------------------------------------------------------- */
typedef struct stats {
  uint64_t requests, tokens, steps, rows, disconnects, errors4xx, dropped_slow, rejected_conns;
  double t_model, t_sample, t_egress;
} stats;

typedef struct server {
  model m;
  ms_sampler *sampler;
  pool pl;
  int listen_fd;
  conn *conns; int n_conns, max_conns;
  size_t max_body;
  int slots;
  choice **active; int n_active;
  request *qhead, *qtail; int n_queued;
  float *logits;
  const ms_params **row_params;
  const ms_seq **row_seqs;
  ms_output *row_out;
  ms_result *row_res;
  ms_logprob *row_top;
  choice **row_choice;
  char *textbuf; size_t textbuf_cap;
  buf scratch;
  uint64_t req_counter;
  stats st;
  int quiet;
  /* --cuda: the GPU sampler and its device buffers; slots are device-side
     sequences (penalty counters, lengths), one per active choice */
  ms_cuda *cu;
  void *d_logits, *d_tokens, *d_out, *d_top, *d_prompt, *d_acc;
  int32_t d_prompt_cap;
  int32_t *free_slot; int n_free_slot;
  int32_t *row_slot, *acc_host;
  uint64_t *row_seed, *row_pos;
  ms_cuda_out *h_out;
  ms_logprob *h_top;
  int64_t request_timeout_ms, idle_timeout_ms, write_timeout_ms;
} server;

static volatile sig_atomic_t g_stop = 0;
static void on_signal(int sig) { (void)sig; g_stop = 1; }

/* ---- HTTP output -------------------------------------------------------- */
static const char *status_text(int code) {
  switch (code) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
  }
}

static void conn_try_write(server *S, conn *c);

/* A complete response with a body. close: the connection ends after it. */
static void respond(server *S, conn *c, int code, const char *ctype, const char *body, size_t n, int close_after) {
  if (close_after) c->keep_alive = 0;
  buf_printf(&c->out, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %lu\r\nConnection: %s\r\n\r\n",
             code, status_text(code), ctype, (unsigned long)n, c->keep_alive ? "keep-alive" : "close");
  buf_append(&c->out, body, n);
  c->state = C_WRITE;
  if (!c->keep_alive) c->close_after = 1;
  conn_try_write(S, c);
}

/* An OpenAI error object with HTTP status code. */
static void respond_error(server *S, conn *c, int code, const char *type, const char *msg, const char *param, int close_after) {
  ms_error e;
  ms_out o;
  S->scratch.len = 0;
  memset(&e, 0, sizeof e);
  e.message = msg;
  e.type = type;
  e.param = param;
  e.code_num = code;
  o = buf_out(&S->scratch);
  if (ms_error_write(&o, &e, 0) != MS_OK) {
    S->scratch.len = 0;
    buf_printf(&S->scratch, "{\"error\":{\"message\":\"error\",\"type\":\"%s\",\"param\":null,\"code\":%d}}", type, code);
  }
  if (code >= 400 && code < 500) S->st.errors4xx++;
  respond(S, c, code, "application/json", S->scratch.p, S->scratch.len, close_after);
}

/* Streams: chunked transfer encoding, one chunk per SSE event. An HTTP/1.0
   client must not get Transfer-Encoding (RFC 9112 6.1): its stream is the
   raw events, ended by closing the connection. */
static void stream_begin(server *S, conn *c) {
  (void)S;
  if (c->http10) {
    c->keep_alive = 0;
    buf_printf(&c->out, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                        "Connection: close\r\n\r\n");
    return;
  }
  buf_printf(&c->out, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                      "Transfer-Encoding: chunked\r\nConnection: %s\r\n\r\n", c->keep_alive ? "keep-alive" : "close");
}
static void stream_event(conn *c, const char *data, size_t n) {
  if (n == 0) return;
  if (c->http10) { buf_append(&c->out, data, n); return; }
  buf_printf(&c->out, "%lx\r\n", (unsigned long)n);
  buf_append(&c->out, data, n);
  buf_append(&c->out, "\r\n", 2);
}
static void stream_end(conn *c) { if (!c->http10) buf_append(&c->out, "0\r\n\r\n", 5); }

/* ---- connections ---------------------------------------------------------- */
static void request_free(server *S, request *r);

static void conn_close(server *S, conn *c) {
  if (c->req) {
    request *r = c->req;
    if (r->admitted) {
      if (r->n_done < r->n) S->st.disconnects++;
    } else {
      /* still queued: unlink it */
      request **pp = &S->qhead, *prev = NULL;
      while (*pp && *pp != r) { prev = *pp; pp = &(*pp)->qnext; }
      if (*pp) { *pp = r->qnext; if (S->qtail == r) S->qtail = prev; S->n_queued--; }
      S->st.disconnects++;
    }
    request_free(S, r);
    c->req = NULL;
  }
  close(c->fd);
  if (c->prev) c->prev->next = c->next; else S->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  S->n_conns--;
  buf_free(&c->in); buf_free(&c->out);
  free(c);
}

static void conn_try_write(server *S, conn *c) {
  (void)S;
  while (c->out_off < c->out.len) {
    ssize_t w = send(c->fd, c->out.p + c->out_off, c->out.len - c->out_off, MSG_NOSIGNAL);
    if (w > 0) { c->out_off += (size_t)w; c->t_progress = now_ms(); continue; }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    c->close_after = 1; c->in_eof = 1;   /* the peer is gone */
    c->out_off = c->out.len;
    break;
  }
  if (c->out_off == c->out.len) { c->out.len = 0; c->out_off = 0; }
  else if (c->out_off > (1u << 16) && c->out_off * 2 > c->out.len) {
    memmove(c->out.p, c->out.p + c->out_off, c->out.len - c->out_off);
    c->out.len -= c->out_off; c->out_off = 0;
  }
}

/* ---- request parsing -------------------------------------------------------- */
typedef struct perr { int code; char msg[512]; const char *param; } perr;

static int fail(perr *e, const char *param, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  e->code = 400;
  e->param = param;
  return -1;
}

/* A JSON double as the float ms_params holds. vLLM validates the double
   (sampling_params.py _verify_args): a value that rounds onto 0 or onto
   the field's bound (+-`bound`) must stay on its side of it, or
   2.0000000001 would pass "temperature in [0, 2]" and 1e-50 would become
   temperature 0 (greedy; vLLM raises it to 0.01) or top_p 0 (refused).
   Such a value moves one float further from zero; every other value
   rounds to nearest, as vLLM's float32 tensors do. */
static float narrow_float(double x, double bound) {
  float f = (float)x;
  double a = x < 0 ? -x : x, af = f < 0 ? -(double)f : (double)f;
  if (a > af && (af == 0.0 || af == bound)) f = nextafterf(f, x < 0 ? -FLT_MAX : FLT_MAX);
  return f;
}

/* Optional number field: absent or null keeps *out. `bound`: the field's
   range ends at +-bound (0: only at 0). */
static int get_float(const js_doc *d, const js_val *o, const char *k, double bound, float *out, perr *e) {
  const js_val *v = js_get(d, o, k);
  if (!v || v->type == JS_NULL) return 0;
  if (v->type != JS_NUMBER) return fail(e, k, "'%s' must be a number", k);
  if (v->num > 3.4e38 || v->num < -3.4e38) return fail(e, k, "'%s' is out of range", k);
  *out = narrow_float(v->num, bound);
  return 0;
}
static int get_int(const js_doc *d, const js_val *o, const char *k, int64_t *out, perr *e) {
  const js_val *v = js_get(d, o, k);
  if (!v || v->type == JS_NULL) return 0;
  if (v->type != JS_NUMBER || !v->is_int) return fail(e, k, "'%s' must be an integer", k);
  *out = v->i;
  return 0;
}
/* get_int that also says whether the field was given (not absent, not null). */
static int get_int_given(const js_doc *d, const js_val *o, const char *k, int64_t *out, int *given, perr *e) {
  const js_val *v = js_get(d, o, k);
  *given = v && v->type != JS_NULL;
  return get_int(d, o, k, out, e);
}
static int get_bool(const js_doc *d, const js_val *o, const char *k, int *out, perr *e) {
  const js_val *v = js_get(d, o, k);
  if (!v || v->type == JS_NULL) return 0;
  if (v->type != JS_TRUE && v->type != JS_FALSE) return fail(e, k, "'%s' must be a boolean", k);
  *out = v->type == JS_TRUE;
  return 0;
}

/* Is v the string s? By length: a decoded string may hold NUL bytes (from
   \u0000), and "user\u0000x" is not "user" (Python's == says so too). */
static int str_is(const js_val *v, const char *s) {
  return v && v->type == JS_STRING && v->len == strlen(s) && !memcmp(v->str, s, v->len);
}

/* A logit_bias key as vLLM reads it, with Python's int(): ASCII
   whitespace around, an optional sign, decimal digits with single '_'
   between them; all key_len bytes (a NUL from \u0000 is not a digit).
   *big: the value is past int64 (vLLM then calls it out of vocab). */
static int int_key(const char *k, size_t n, int64_t *out, int *big) {
  size_t i = 0;
  int neg = 0, digits = 0;
  uint64_t v = 0;
  *big = 0;
  while (i < n && strchr(" \t\n\v\f\r", k[i]) && k[i]) i++;
  while (n > i && strchr(" \t\n\v\f\r", k[n - 1]) && k[n - 1]) n--;
  if (i < n && (k[i] == '+' || k[i] == '-')) neg = k[i++] == '-';
  for (; i < n; i++) {
    if (k[i] == '_' && digits && i + 1 < n && k[i + 1] >= '0' && k[i + 1] <= '9') continue;
    if (k[i] < '0' || k[i] > '9') return 0;
    if (v > ((uint64_t)INT64_MAX - 9) / 10) *big = 1; else v = v * 10 + (uint64_t)(k[i] - '0');
    digits++;
  }
  if (!digits) return 0;
  *out = neg ? -(int64_t)v : (int64_t)v;
  return 1;
}

/* Appends a chat message's content (string or array of text parts). */
static int chat_content(const js_doc *d, const js_val *content, buf *text, perr *e) {
  const js_val *part;
  if (!content || content->type == JS_NULL) return 0;
  if (content->type == JS_STRING) return buf_append(text, content->str, content->len) ? fail(e, "messages", "out of memory") : 0;
  if (content->type != JS_ARRAY) return fail(e, "messages", "message content must be a string or an array of parts");
  for (part = js_at(d, content, 0); part; part = js_next(d, part)) {
    const js_val *type = js_get(d, part, "type"), *t = js_get(d, part, "text");
    if (!str_is(type, "text") || !t || t->type != JS_STRING)
      return fail(e, "messages", "only content parts of type 'text' are supported");
    if (buf_append(text, t->str, t->len)) return fail(e, "messages", "out of memory");
  }
  return 0;
}

/* ---- --cuda: sampling on the GPU ----------------------------------------------
   The model runs on the CPU, so each step uploads the batch's logits, samples
   with ms_cuda_sample (each row's seed and position taken from its CPU-side
   ms_seq, so the random numbers are the CPU path's) and copies back the
   outputs. The device-side sequence in each choice's slot carries the
   penalty counters; the kernel appends every sampled token to it. */

/* Frees the GPU sampler and its buffers (NULL-safe); sampling is on the CPU after. */
static void gpu_stop(server *S) {
  if (!S->cu) return;
  ms_cuda_free(S->cu, S->d_logits); ms_cuda_free(S->cu, S->d_tokens); ms_cuda_free(S->cu, S->d_out);
  ms_cuda_free(S->cu, S->d_top); ms_cuda_free(S->cu, S->d_acc); ms_cuda_free(S->cu, S->d_prompt);
  ms_cuda_destroy(S->cu);
  S->cu = NULL;
  S->d_logits = S->d_tokens = S->d_out = S->d_top = S->d_acc = S->d_prompt = NULL;
  free(S->free_slot); free(S->row_slot); free(S->acc_host); free(S->row_seed); free(S->row_pos); free(S->h_out); free(S->h_top);
  S->free_slot = S->row_slot = S->acc_host = NULL; S->row_seed = S->row_pos = NULL; S->h_out = NULL; S->h_top = NULL;
  S->n_free_slot = 0;
}

static int gpu_start(server *S) {
  ms_cuda_desc d;
  char msg[8192];
  ms_result res;
  const int32_t V = S->m.vocab, n = S->slots;
  int i;
  memset(&d, 0, sizeof d);
  d.max_rows = n; d.max_vocab = V; d.max_slots = n;
  res = ms_cuda_create(&S->cu, &d, msg, sizeof msg);
  if (res != MS_OK) {
    fprintf(stderr, "server: --cuda: %s (%s); sampling on the CPU\n", msg, ms_result_str(res));
    return 0;
  }
  S->d_prompt_cap = S->m.ctx > 0 ? S->m.ctx : 4096;
  S->free_slot = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
  S->row_slot = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
  S->acc_host = (int32_t *)malloc(sizeof(int32_t) * 2 * (size_t)n);
  S->row_seed = (uint64_t *)malloc(sizeof(uint64_t) * (size_t)n);
  S->row_pos = (uint64_t *)malloc(sizeof(uint64_t) * (size_t)n);
  S->h_out = (ms_cuda_out *)malloc(sizeof(ms_cuda_out) * (size_t)n);
  S->h_top = (ms_logprob *)malloc(sizeof(ms_logprob) * (size_t)n * MAX_TOP);
  if (!S->free_slot || !S->row_slot || !S->acc_host || !S->row_seed || !S->row_pos || !S->h_out || !S->h_top ||
      ms_cuda_malloc(S->cu, &S->d_logits, sizeof(float) * (size_t)n * (size_t)V) != MS_OK ||
      ms_cuda_malloc(S->cu, &S->d_tokens, sizeof(int32_t) * (size_t)n) != MS_OK ||
      ms_cuda_malloc(S->cu, &S->d_out, sizeof(ms_cuda_out) * (size_t)n) != MS_OK ||
      ms_cuda_malloc(S->cu, &S->d_top, sizeof(ms_logprob) * (size_t)n * MAX_TOP) != MS_OK ||
      ms_cuda_malloc(S->cu, &S->d_acc, sizeof(int32_t) * 2 * (size_t)n) != MS_OK ||
      ms_cuda_malloc(S->cu, &S->d_prompt, sizeof(int32_t) * (size_t)S->d_prompt_cap) != MS_OK) {
    fprintf(stderr, "server: --cuda: out of memory for the GPU buffers; sampling on the CPU\n");
    gpu_stop(S);   /* S->cu NULL: the CPU sampler (with no free slot every request would fail) */
    return 0;
  }
  for (i = 0; i < n; i++) S->free_slot[i] = n - 1 - i;
  S->n_free_slot = n;
  fprintf(stderr, "server: sampling on the GPU: %s (%s)\n", ms_cuda_device_name(S->cu), ms_cuda_target(S->cu));
  return 1;
}

/* A device-side sequence for a new choice: a free slot, cleared, with the
   prompt's tokens marked (the repetition penalty counts them). */
static ms_result gpu_slot_begin(server *S, choice *c, const int32_t *prompt, int32_t n_prompt) {
  ms_result res;
  if (S->n_free_slot == 0) return MS_ERR_CAPACITY; /* cannot happen: one slot per active choice */
  if (n_prompt > S->d_prompt_cap) {
    ms_cuda_free(S->cu, S->d_prompt);
    S->d_prompt = NULL;
    S->d_prompt_cap = n_prompt;
    res = ms_cuda_malloc(S->cu, &S->d_prompt, sizeof(int32_t) * (size_t)n_prompt);
    if (res != MS_OK) { S->d_prompt_cap = 0; return res; }
  }
  if (n_prompt > 0 && (res = ms_cuda_upload(S->cu, S->d_prompt, prompt, sizeof(int32_t) * (size_t)n_prompt)) != MS_OK) return res;
  c->slot = S->free_slot[--S->n_free_slot];
  return ms_cuda_seq_reset(S->cu, NULL, c->slot, S->d_prompt, n_prompt, NULL);
}

/* Samples the step's k rows (S->logits, S->row_*) on the GPU into
   S->row_out / S->row_res. Rows the GPU path refuses (MS_ERR_UNSUPPORTED)
   are sampled on the CPU and their tokens appended to their device
   sequences. Returns 0, or -1 when the device failed (the caller then
   samples the step on the CPU and stops using the GPU). */
static int gpu_sample(server *S, int k) {
  ms_cuda_batch b;
  ms_result res;
  const int32_t V = S->m.vocab;
  int i, n_acc = 0;
  for (i = 0; i < k; i++) {
    const ms_seq *q = S->row_seqs[i];
    S->row_slot[i] = S->row_choice[i]->slot;
    S->row_seed[i] = ms_seq_seed(q);
    S->row_pos[i] = ms_seq_position(q);
  }
  if (ms_cuda_upload(S->cu, S->d_logits, S->logits, sizeof(float) * (size_t)k * (size_t)V) != MS_OK) return -1;
  memset(&b, 0, sizeof b);
  b.n_rows = k; b.vocab = V; b.logits = S->d_logits; b.row_stride = (size_t)V;
  b.params = S->row_params; b.slots = S->row_slot; b.seeds = S->row_seed; b.positions = S->row_pos;
  b.accept = 1; b.tokens = S->d_tokens; b.out = S->d_out; b.top = S->d_top; b.top_stride = MAX_TOP;
  b.row_results = S->row_res;
  res = ms_cuda_sample(S->cu, NULL, &b);
  if (res == MS_ERR_NULL_ARGUMENT || res == MS_ERR_BAD_VOCAB || res == MS_ERR_INVALID_PARAM || res == MS_ERR_CAPACITY ||
      res == MS_ERR_DEVICE)
    return -1;
  /* the copies wait for the stream */
  if (ms_cuda_download(S->cu, S->h_out, S->d_out, sizeof(ms_cuda_out) * (size_t)k) != MS_OK ||
      ms_cuda_download(S->cu, S->h_top, S->d_top, sizeof(ms_logprob) * (size_t)k * MAX_TOP) != MS_OK)
    return -1;
  for (i = 0; i < k; i++) {
    ms_output *o = &S->row_out[i];
    const ms_cuda_out *g = &S->h_out[i];
    if (S->row_res[i] == MS_ERR_UNSUPPORTED) {
      /* a feature the kernels do not have: this row on the CPU */
      S->row_res[i] = ms_sample(S->sampler, S->logits + (size_t)i * (size_t)V, V, S->row_params[i], S->row_seqs[i], o);
      if (S->row_res[i] == MS_OK) { S->acc_host[n_acc] = S->row_slot[i]; S->acc_host[k + n_acc] = o->token; n_acc++; }
      continue;
    }
    S->row_res[i] = (ms_result)g->status;
    o->token = g->token;
    o->logprob = g->logprob;
    o->rank = g->rank;
    o->n_top = g->n_top < o->top_capacity ? g->n_top : o->top_capacity;
    if (o->n_top > 0) memcpy(o->top, S->h_top + (size_t)i * MAX_TOP, sizeof(ms_logprob) * (size_t)o->n_top);
    o->seed = g->seed; o->position = g->position; o->greedy = g->greedy;
    o->mirostat_mu = NAN;
  }
  if (n_acc > 0) {
    /* the CPU's tokens into the device sequences: slots, then tokens */
    memmove(S->acc_host + n_acc, S->acc_host + k, sizeof(int32_t) * (size_t)n_acc);
    if (ms_cuda_upload(S->cu, S->d_acc, S->acc_host, sizeof(int32_t) * 2 * (size_t)n_acc) != MS_OK ||
        ms_cuda_seq_accept(S->cu, NULL, S->d_acc, (int32_t *)S->d_acc + n_acc, n_acc) != MS_OK)
      return -1;
  }
  return 0;
}

static void request_free(server *S, request *r) {
  int i, k;
  if (!r) return;
  if (r->ch) {
    for (i = 0; i < r->n; i++) {
      choice *c = &r->ch[i];
      /* drop from the active set */
      for (k = 0; k < S->n_active; k++)
        if (S->active[k] == c) { S->active[k] = S->active[--S->n_active]; break; }
      mstate_free(&c->st);
      if (S->cu && c->slot >= 0) S->free_slot[S->n_free_slot++] = c->slot;
      ms_seq_destroy(c->seq);
      free(c->text_mem);
      free(c->lp); free(c->lp_top); free(c->lp_top_at);
    }
    free(r->ch);
  }
  for (i = 0; i < r->n_stops; i++) free(r->stops[i]);
  free(r->bias); free(r->stop_ids); free(r->prompt); free(r->resp_mem);
  free(r);
}

/* The ms_text capacities and rules of a request. */
static void request_text_rules(const server *S, const request *r, ms_text_desc *td, ms_text_params *tp) {
  const model *m = &S->m;
  memset(td, 0, sizeof *td);
  td->max_stops = MAX_STOPS;
  td->max_stop_bytes = MAX_STOP_BYTES;
  td->max_stop_ids = MAX_STOP_IDS;
  /* a token adds at most 3 bytes per byte of its piece (U+FFFD) */
  td->text_capacity = r->stream ? 0 : (size_t)r->max_tokens * 3 *
      (size_t)(m->is_llama ? (m->tk->max_len > 0 && m->tk->max_len < 4096 ? m->tk->max_len : 64) : m->ng->max_piece_len) + 16;
  *tp = ms_text_params_default();
  tp->stop = (const char *const *)r->stops;
  tp->stop_lens = r->stop_lens;
  tp->n_stop = r->n_stops;
  tp->stop_token_ids = r->stop_ids;
  tp->n_stop_token_ids = r->n_stop_ids;
  tp->eos_token_id = m->eos;
  tp->ignore_eos = r->ignore_eos;
  tp->include_stop_str_in_output = r->include_stop;
  tp->min_tokens = r->min_tokens;
  tp->max_tokens = r->max_tokens;
}

/* Parses and validates a completion request; fills r or e. */
static int parse_request(server *S, request *r, const char *body, size_t n, perr *e) {
  js_doc d;
  const js_val *root, *v;
  char err[128];
  buf text = { NULL, 0, 0 };
  int64_t iv;
  int rc = -1, logprobs_flag = 0;
  int64_t top_logprobs = 0;
  model *m = &S->m;
  e->code = 400; e->param = NULL; e->msg[0] = 0;
  if (js_parse(&d, body, n, err, sizeof err) != 0) {
    fail(e, NULL, "the request body is not valid JSON: %s", err);
    js_free(&d);
    return -1;
  }
  root = js_root(&d);
  if (!root || root->type != JS_OBJECT) { fail(e, NULL, "the request body must be a JSON object"); goto out; }
  r->params = ms_params_default();
  r->n = 1;
  r->max_tokens = -1;
  r->logprobs = -1;
  r->params.eos_token_id = m->eos;

  /* model: any name is accepted only when it is ours (OpenAI SDKs require the field) */
  v = js_get(&d, root, "model");
  if (v && v->type != JS_NULL) {
    if (v->type != JS_STRING) { fail(e, "model", "'model' must be a string"); goto out; }
    if (!str_is(v, m->name)) {
      fail(e, "model", "The model `%.200s` does not exist.", v->str);
      e->code = 404;
      goto out;
    }
  }
  /* prompt */
  if (r->api == API_CHAT) {
    const js_val *msgs = js_get(&d, root, "messages"), *msg;
    if (!msgs || msgs->type != JS_ARRAY || msgs->n == 0) { fail(e, "messages", "'messages' must be a non-empty array"); goto out; }
    for (msg = js_at(&d, msgs, 0); msg; msg = js_next(&d, msg)) {
      const js_val *role;
      if (msg->type != JS_OBJECT) { fail(e, "messages", "each message must be an object"); goto out; }
      role = js_get(&d, msg, "role");
      if (!str_is(role, "system") && !str_is(role, "user") && !str_is(role, "assistant") &&
          !str_is(role, "developer") && !str_is(role, "tool")) {
        fail(e, "messages", "each message needs a role: system, developer, user, assistant or tool"); goto out;
      }
      if (text.len) buf_append(&text, "\n", 1);
      if (chat_content(&d, js_get(&d, msg, "content"), &text, e)) goto out;
    }
  } else {
    const js_val *p = js_get(&d, root, "prompt");
    if (!p) { fail(e, "prompt", "'prompt' is required"); goto out; }
    if (p->type == JS_ARRAY && p->n == 1 && js_at(&d, p, 0)->type == JS_STRING) p = js_at(&d, p, 0);
    if (p->type == JS_STRING) buf_append(&text, p->str, p->len);
    else if (p->type == JS_ARRAY && p->n > 0 && js_at(&d, p, 0)->type == JS_NUMBER) {
      /* a list of token ids */
      const js_val *t;
      int32_t k = 0;
      if (p->n > m->ctx) { fail(e, "prompt", "the prompt has more tokens than the model's context (%d)", (int)m->ctx); goto out; }
      r->prompt = (int32_t *)malloc((size_t)p->n * sizeof(int32_t));
      if (!r->prompt) { fail(e, NULL, "out of memory"); e->code = 500; goto out; }
      for (t = js_at(&d, p, 0); t; t = js_next(&d, t)) {
        if (t->type != JS_NUMBER || !t->is_int || t->i < 0 || t->i >= m->vocab) {
          fail(e, "prompt", "prompt token ids must be integers in [0, %d)", (int)m->vocab); goto out;
        }
        r->prompt[k++] = (int32_t)t->i;
      }
      r->n_prompt = k;
    } else { fail(e, "prompt", "'prompt' must be a string, an array with one string, or an array of token ids"); goto out; }
  }
  if (!r->prompt) {
    int32_t cap = m->ctx * 4 + 8;   /* room to count a prompt somewhat over the context, for the message */
    r->prompt = (int32_t *)malloc(((size_t)cap + 2) * sizeof(int32_t));
    if (!r->prompt) { fail(e, NULL, "out of memory"); e->code = 500; goto out; }
    r->n_prompt = model_encode(m, text.p ? text.p : "", text.len, r->prompt, cap);
    if (r->n_prompt < 0) { fail(e, NULL, "out of memory"); e->code = 500; goto out; }
    if (r->n_prompt > cap) {
      fail(e, "messages", "This model's maximum context length is %d tokens. However, your prompt is longer.", (int)m->ctx);
      goto out;
    }
  }
  if (r->n_prompt >= m->ctx) {
    fail(e, "messages", "This model's maximum context length is %d tokens. However, you requested %d tokens in the prompt.",
         (int)m->ctx, (int)r->n_prompt);
    goto out;
  }

  /* flags */
  if (get_bool(&d, root, "stream", &r->stream, e)) goto out;
  v = js_get(&d, root, "stream_options");
  if (v && v->type != JS_NULL) {
    if (v->type != JS_OBJECT) { fail(e, "stream_options", "'stream_options' must be an object"); goto out; }
    if (!r->stream) { fail(e, "stream_options", "Stream options can only be defined when `stream=True`."); goto out; }
    if (get_bool(&d, v, "include_usage", &r->include_usage, e)) goto out;
  }
  iv = 1;
  if (get_int(&d, root, "n", &iv, e)) goto out;
  if (iv < 1 || iv > MAX_N) { fail(e, "n", "n must be in [1, %d], got %lld.", MAX_N, (long long)iv); goto out; }
  if (iv > S->slots) { fail(e, "n", "n must be at most the server's slots (%d), got %lld.", S->slots, (long long)iv); goto out; }
  r->n = (int)iv;
  {
    /* presence is tracked apart from the value: every integer a client
       sends is validated (-1 included) */
    int64_t mt = 0, mct = 0;
    int has_mt, has_mct;
    if (get_int_given(&d, root, "max_tokens", &mt, &has_mt, e)) goto out;
    has_mct = 0;
    if (r->api == API_CHAT && get_int_given(&d, root, "max_completion_tokens", &mct, &has_mct, e)) goto out;
    if (has_mct) { mt = mct; has_mt = 1; }   /* max_completion_tokens wins, as before */
    if (has_mt && mt < 1) { fail(e, "max_tokens", "max_tokens must be at least 1, got %lld.", (long long)mt); goto out; }
    if (has_mt && mt > m->ctx - r->n_prompt) {
      /* the sum in unsigned: mt may be INT64_MAX */
      fail(e, "max_tokens", "This model's maximum context length is %d tokens. However, you requested %llu tokens "
           "(%d in the messages, %lld in the completion). Please reduce the length of the messages or completion.",
           (int)m->ctx, (unsigned long long)mt + (unsigned long long)r->n_prompt, (int)r->n_prompt, (long long)mt);
      goto out;
    }
    r->max_tokens = has_mt ? (int32_t)mt : m->ctx - r->n_prompt;
    if (!has_mt && r->max_tokens > MAX_TOKENS_DEFAULT_CAP) r->max_tokens = MAX_TOKENS_DEFAULT_CAP;
  }

  /* sampling parameters: ms_params_validate gives vLLM's messages */
  if (get_float(&d, root, "temperature", 2, &r->params.temperature, e)) goto out;
  if (get_float(&d, root, "top_p", 1, &r->params.top_p, e)) goto out;
  if (get_float(&d, root, "min_p", 1, &r->params.min_p, e)) goto out;
  if (get_float(&d, root, "presence_penalty", 2, &r->params.presence_penalty, e)) goto out;
  if (get_float(&d, root, "frequency_penalty", 2, &r->params.frequency_penalty, e)) goto out;
  if (get_float(&d, root, "repetition_penalty", 0, &r->params.repetition_penalty, e)) goto out;
  iv = r->params.top_k;
  if (get_int(&d, root, "top_k", &iv, e)) goto out;
  if (iv < -1) { fail(e, "top_k", "top_k must be 0 (disable), or at least 1, got %lld.", (long long)iv); goto out; }
  r->params.top_k = iv > INT32_MAX ? INT32_MAX : (int32_t)iv;   /* vLLM takes any k; k >= vocab keeps every token */
  v = js_get(&d, root, "seed");
  if (v && v->type != JS_NULL) {
    if (v->type != JS_NUMBER || !v->is_int) { fail(e, "seed", "'seed' must be an integer"); goto out; }
    /* -1 asks for a random seed (vLLM's SamplingParams.__post_init__, as OpenAI) */
    r->params.seed = (uint64_t)v->i;
    r->params.has_seed = v->i != -1;
  }
  iv = 0;
  if (get_int(&d, root, "min_tokens", &iv, e)) goto out;
  if (iv < 0) { fail(e, "min_tokens", "min_tokens must be greater than or equal to 0, got %lld.", (long long)iv); goto out; }
  if (iv > r->max_tokens) {
    fail(e, "min_tokens", "min_tokens must be less than or equal to max_tokens=%d, got %lld.", (int)r->max_tokens, (long long)iv);
    goto out;
  }
  r->min_tokens = (int32_t)iv;
  r->params.min_tokens = r->min_tokens;
  if (get_bool(&d, root, "ignore_eos", &r->ignore_eos, e)) goto out;
  if (r->ignore_eos) r->params.min_tokens = 0;   /* EOS is an ordinary token: nothing to mask */
  if (get_bool(&d, root, "include_stop_str_in_output", &r->include_stop, e)) goto out;
  v = js_get(&d, root, "logit_bias");
  if (v && v->type != JS_NULL) {
    const js_val *b;
    if (v->type != JS_OBJECT) { fail(e, "logit_bias", "'logit_bias' must be an object of token id -> bias"); goto out; }
    if (v->n > MAX_BIAS) { fail(e, "logit_bias", "'logit_bias' has more than %d entries", MAX_BIAS); goto out; }
    r->bias = (ms_bias *)malloc(((size_t)v->n + 1) * sizeof(ms_bias));
    if (!r->bias) { fail(e, NULL, "out of memory"); e->code = 500; goto out; }
    for (b = js_at(&d, v, 0); b; b = js_next(&d, b)) {
      int64_t id;
      int big;
      if (!int_key(b->key, b->key_len, &id, &big)) {
        fail(e, "logit_bias", "logit_bias contains key(s) that cannot be converted to integer token IDs: ['%.64s']", b->key); goto out;
      }
      if (big || id < INT32_MIN || id > INT32_MAX) {
        fail(e, "logit_bias", "token_id(s) [%.64s] in logit_bias contain out-of-vocab token ids. Vocabulary size: %d", b->key, (int)m->vocab);
        goto out;
      }
      if (b->type != JS_NUMBER) { fail(e, "logit_bias", "logit_bias values must be numbers"); goto out; }
      {
        /* a repeated id ("32" twice, or "32" and "032") keeps its last value,
           as vLLM's dict does: the sampler would add the entries up */
        int32_t k;
        for (k = 0; k < r->n_bias && r->bias[k].token != (int32_t)id; k++) {}
        r->bias[k].token = (int32_t)id;
        r->bias[k].bias = (float)(b->num > 1e6 ? 1e6 : b->num < -1e6 ? -1e6 : b->num);
        if (k == r->n_bias) r->n_bias++;
      }
    }
    r->params.logit_bias = r->bias;
    r->params.n_logit_bias = r->n_bias;
  }
  v = js_get(&d, root, "stop_token_ids");
  if (v && v->type != JS_NULL) {
    const js_val *t;
    if (v->type != JS_ARRAY || v->n > MAX_STOP_IDS) { fail(e, "stop_token_ids", "'stop_token_ids' must be an array of at most %d token ids", MAX_STOP_IDS); goto out; }
    r->stop_ids = (int32_t *)malloc(((size_t)v->n + 1) * sizeof(int32_t));
    if (!r->stop_ids) { fail(e, NULL, "out of memory"); e->code = 500; goto out; }
    for (t = js_at(&d, v, 0); t; t = js_next(&d, t)) {
      if (t->type != JS_NUMBER || !t->is_int || t->i < 0 || t->i >= m->vocab) { fail(e, "stop_token_ids", "stop_token_ids must be token ids in [0, %d)", (int)m->vocab); goto out; }
      r->stop_ids[r->n_stop_ids++] = (int32_t)t->i;
    }
    r->params.stop_token_ids = r->stop_ids;
    r->params.n_stop_token_ids = r->n_stop_ids;
  }
  v = js_get(&d, root, "stop");
  if (v && v->type != JS_NULL) {
    const js_val *s;
    if (v->type == JS_STRING) s = v;
    else if (v->type == JS_ARRAY) {
      if (v->n > MAX_STOPS) { fail(e, "stop", "at most %d stop strings are supported", MAX_STOPS); goto out; }
      s = js_at(&d, v, 0);
    } else { fail(e, "stop", "'stop' must be a string or an array of strings"); goto out; }
    for (; s; s = (v->type == JS_ARRAY ? js_next(&d, s) : NULL)) {
      if (s->type != JS_STRING) { fail(e, "stop", "'stop' must be a string or an array of strings"); goto out; }
      if (s->len > MAX_STOP_BYTES) { fail(e, "stop", "stop strings are limited to %d bytes", MAX_STOP_BYTES); goto out; }
      if (s->len == 0) continue;   /* OpenAI ignores empty stop strings */
      r->stops[r->n_stops] = (char *)malloc(s->len + 1);
      if (!r->stops[r->n_stops]) { fail(e, NULL, "out of memory"); e->code = 500; goto out; }
      memcpy(r->stops[r->n_stops], s->str, s->len + 1);
      r->stop_lens[r->n_stops] = s->len;
      r->n_stops++;
    }
  }
  /* logprobs */
  if (r->api == API_CHAT) {
    if (get_bool(&d, root, "logprobs", &logprobs_flag, e)) goto out;
    /* vLLM's ChatCompletionRequest.check_logprobs: default 0, -1 = the
       whole vocabulary, which the max_logprobs cap then refuses (it was
       taken as 0, and without `logprobs` let through) */
    top_logprobs = 0;
    if (get_int(&d, root, "top_logprobs", &top_logprobs, e)) goto out;
    if (top_logprobs < -1) { fail(e, "top_logprobs", "`top_logprobs` must be a positive value or -1."); goto out; }
    if ((top_logprobs == -1 || top_logprobs > 0) && !logprobs_flag) {
      fail(e, "top_logprobs", "when using `top_logprobs`, `logprobs` must be set to true."); goto out;
    }
    if (logprobs_flag) {
      int64_t want = top_logprobs == -1 ? m->vocab : top_logprobs;
      if (want > MAX_TOP) {
        fail(e, "top_logprobs", "Requested sample logprobs of %lld, which is greater than max allowed: %d", (long long)want, MAX_TOP);
        goto out;
      }
      r->logprobs = (int)want;
    }
  } else {
    v = js_get(&d, root, "logprobs");
    if (v && v->type != JS_NULL) {
      if (v->type != JS_NUMBER || !v->is_int) { fail(e, "logprobs", "'logprobs' must be an integer"); goto out; }
      /* vLLM's CompletionRequest.check_logprobs refuses every negative value, -1 too */
      if (v->i < 0) { fail(e, "logprobs", "`logprobs` must be a positive value."); goto out; }
      if (v->i > MAX_TOP) { fail(e, "logprobs", "Requested sample logprobs of %lld, which is greater than max allowed: %d", (long long)v->i, MAX_TOP); goto out; }
      r->logprobs = (int)v->i;
    }
    {
      int echo = 0;
      if (get_bool(&d, root, "echo", &echo, e)) goto out;
      if (echo) { fail(e, "echo", "echo is not supported by this server"); goto out; }
    }
  }
  r->params.logprobs = r->logprobs;
  {
    char msg[512];
    ms_result res = ms_params_validate(&r->params, m->vocab, msg, sizeof msg);
    if (res != MS_OK) { fail(e, NULL, "%s", msg); goto out; }
  }
  /* vLLM's SamplingParams._verify_greedy_sampling: n identical greedy
     choices are refused (only temperature 0 is greedy there: (0, 0.01) is
     raised to 0.01 first) */
  if (r->n > 1 && r->params.temperature == 0.0f) { fail(e, "n", "n must be 1 when using greedy sampling, got %d.", r->n); goto out; }
  /* the stop/length rules are checked now (a trial reset), so a bad request
     is a 400 before it queues */
  {
    ms_text_desc td;
    ms_text_params tp;
    ms_text *t;
    void *mem;
    size_t sz;
    char msg[512];
    ms_result res;
    request_text_rules(S, r, &td, &tp);
    td.text_capacity = 0;
    sz = ms_text_size(&td);
    mem = malloc(sz ? sz : 1);
    if (!sz || !mem || ms_text_init(&t, &td, mem, sz) != MS_OK) { free(mem); fail(e, NULL, "out of memory"); e->code = 500; goto out; }
    msg[0] = 0;
    res = ms_text_reset(t, &tp, msg, sizeof msg);
    free(mem);
    if (res != MS_OK) { fail(e, "stop", "%s", msg[0] ? msg : ms_result_str(res)); goto out; }
  }
  rc = 0;
out:
  buf_free(&text);
  js_free(&d);
  return rc;
}

/* ---- the generation side ---------------------------------------------------- */
static int request_setup(server *S, request *r, perr *e) {
  int i;
  ms_text_desc td;
  ms_text_params tp;
  ms_response_desc rd;
  size_t sz;
  model *m = &S->m;
  S->req_counter++;
  r->created = (int64_t)time(NULL);
  snprintf(r->id, sizeof r->id, "%s-%08llx%08llx", r->api == API_CHAT ? "chatcmpl" : "cmpl",
           (unsigned long long)(ms_fresh_seed(S->req_counter) & 0xffffffffu), (unsigned long long)S->req_counter);
  memset(&rd, 0, sizeof rd);
  rd.object = r->api == API_CHAT ? MS_OBJECT_CHAT : MS_OBJECT_COMPLETION;
  rd.id = r->id;
  rd.model = m->name;
  rd.created = r->created;
  sz = ms_response_size(&rd);
  r->resp_mem = malloc(sz ? sz : 1);
  if (!sz || !r->resp_mem || ms_response_init(&r->resp, &rd, r->resp_mem, sz) != MS_OK)
    return fail(e, NULL, "could not set up the response");
  r->ch = (choice *)calloc((size_t)r->n, sizeof(choice));
  if (!r->ch) return fail(e, NULL, "out of memory");
  for (i = 0; i < r->n; i++) r->ch[i].slot = -1; /* request_free returns only the slots taken */
  request_text_rules(S, r, &td, &tp);
  for (i = 0; i < r->n; i++) {
    choice *c = &r->ch[i];
    char msg[512];
    ms_result res;
    c->req = r;
    c->index = i;
    c->row = -1;
    c->prev_token = r->n_prompt > 0 ? r->prompt[r->n_prompt - 1] : -1;
    c->params = r->params;
    if (r->params.has_seed) c->params.seed = r->params.seed + (uint64_t)i;   /* vLLM: child i of n gets seed + i */
    if (mstate_init(m, &c->st)) return fail(e, NULL, "out of memory for the model state");
    if (ms_seq_create(&c->seq, r->n_prompt + r->max_tokens + 1) != MS_OK) return fail(e, NULL, "out of memory for the sequence");
    res = ms_seq_reset(c->seq, r->prompt, r->n_prompt, m->vocab, &c->params, S->req_counter * MAX_N + (uint64_t)i);
    if (res != MS_OK) return fail(e, "prompt", "%s", ms_result_str(res));
    if (S->cu && (res = gpu_slot_begin(S, c, r->prompt, r->n_prompt)) != MS_OK)
      return fail(e, NULL, "GPU sequence: %s", ms_result_str(res));
    sz = ms_text_size(&td);
    c->text_mem = malloc(sz ? sz : 1);
    if (!sz || !c->text_mem || ms_text_init(&c->text, &td, c->text_mem, sz) != MS_OK) return fail(e, NULL, "out of memory for the text");
    res = ms_text_reset(c->text, &tp, msg, sizeof msg);
    if (res != MS_OK) return fail(e, "stop", "%s", msg[0] ? msg : ms_result_str(res));
  }
  return 0;
}

static void emit_event(server *S, request *r) {
  if (r->c) stream_event(r->c, S->scratch.p, S->scratch.len);
}

/* The role chunk of every choice, when a chat stream starts. */
static void stream_start(server *S, request *r) {
  int i;
  if (!r->c) return;
  stream_begin(S, r->c);
  if (r->api != API_CHAT) return;
  for (i = 0; i < r->n; i++) {
    ms_chunk ch;
    ms_out o;
    memset(&ch, 0, sizeof ch);
    ch.index = i;
    ch.role = 1;
    S->scratch.len = 0;
    o = buf_out(&S->scratch);
    ms_chunk_write(&o, r->resp, &ch);
    emit_event(S, r);
  }
}

/* Fills an ms_token_logprobs for a row's output. top: storage for entries. */
static void fill_logprobs(server *S, request *r, const ms_output *o, int64_t text_offset, ms_token_logprobs *lp, ms_token *top) {
  int32_t k, len, n = 0;
  const model *m = &S->m;
  memset(lp, 0, sizeof *lp);
  lp->tok.token = o->token;
  lp->tok.logprob = o->logprob;
  lp->tok.bytes = model_lp_bytes(m, o->token, &len);
  lp->tok.n_bytes = (size_t)len;
  for (k = 0; k < o->n_top && k < r->logprobs; k++) {
    top[n].token = o->top[k].token;
    top[n].logprob = o->top[k].logprob;
    top[n].bytes = model_lp_bytes(m, o->top[k].token, &len);
    top[n].n_bytes = (size_t)len;
    n++;
  }
  lp->top = top;
  lp->n_top = n;
  lp->text_offset = text_offset;
}

static void request_complete(server *S, request *r);

/* Handles one text step of a choice (a pushed token or a forced finish). */
static void choice_emit(server *S, choice *c, const ms_text_step *st, const ms_output *o) {
  request *r = c->req;
  ms_token_logprobs lp;
  ms_token top[MAX_TOP + 1];
  int with_lp = o && r->logprobs >= 0;
  if (with_lp) fill_logprobs(S, r, o, st->text_offset, &lp, top);
  if (r->stream) {
    if (st->delta_len > 0 || with_lp || st->finish != MS_FINISH_NONE) {
      ms_chunk ch;
      ms_out out;
      memset(&ch, 0, sizeof ch);
      ch.index = c->index;
      ch.text = st->delta;
      ch.text_len = st->delta_len;
      if (with_lp) { ch.logprobs = &lp; ch.n_logprobs = 1; }
      ch.finish = st->finish;
      ch.stop_reason = st->stop_reason;
      S->scratch.len = 0;
      out = buf_out(&S->scratch);
      ms_chunk_write(&out, r->resp, &ch);
      emit_event(S, r);
    }
  } else if (with_lp) {
    int32_t k;
    if (c->n_lp == c->cap_lp) {
      int32_t cap = c->cap_lp ? c->cap_lp * 2 : 64;
      ms_token_logprobs *np = (ms_token_logprobs *)realloc(c->lp, (size_t)cap * sizeof *np);
      int32_t *na = (int32_t *)realloc(c->lp_top_at, (size_t)cap * sizeof *na);
      if (np) c->lp = np;
      if (na) c->lp_top_at = na;
      if (!np || !na) return;
      c->cap_lp = cap;
    }
    if (c->n_lp_top + lp.n_top > c->cap_lp_top) {
      int32_t cap = c->cap_lp_top ? c->cap_lp_top * 2 : 256;
      ms_token *np;
      while (cap < c->n_lp_top + lp.n_top) cap *= 2;
      np = (ms_token *)realloc(c->lp_top, (size_t)cap * sizeof *np);
      if (!np) return;
      c->lp_top = np; c->cap_lp_top = cap;
    }
    for (k = 0; k < lp.n_top; k++) c->lp_top[c->n_lp_top + k] = top[k];
    c->lp_top_at[c->n_lp] = c->n_lp_top;
    c->n_lp_top += lp.n_top;
    c->lp[c->n_lp++] = lp;
  }
  if (st->finish != MS_FINISH_NONE && !c->done) {
    c->done = 1;
    c->finish = st->finish;
    c->stop_reason = st->stop_reason;
    r->n_done++;
    if (r->n_done == r->n) request_complete(S, r);
  }
}

/* All choices finished: usage + [DONE], or the whole non-stream body. */
static void request_complete(server *S, request *r) {
  conn *c = r->c;
  int64_t completion = 0;
  ms_usage u;
  int i;
  ms_out o;
  for (i = 0; i < r->n; i++) completion += ms_text_n_tokens(r->ch[i].text);
  u.prompt_tokens = r->n_prompt;
  u.completion_tokens = completion;
  S->st.requests++;
  if (!c) return;
  if (r->stream) {
    if (r->include_usage) {
      S->scratch.len = 0;
      o = buf_out(&S->scratch);
      ms_usage_chunk_write(&o, r->resp, &u);
      stream_event(c, S->scratch.p, S->scratch.len);
    }
    S->scratch.len = 0;
    o = buf_out(&S->scratch);
    ms_done_write(&o);
    stream_event(c, S->scratch.p, S->scratch.len);
    stream_end(c);
  } else {
    ms_choice chs[MAX_N];
    for (i = 0; i < r->n; i++) {
      choice *ch = &r->ch[i];
      size_t len = 0;
      memset(&chs[i], 0, sizeof chs[i]);
      chs[i].index = i;
      chs[i].text = ms_text_get(ch->text, &len);
      chs[i].text_len = len;
      chs[i].finish = ch->finish;
      chs[i].stop_reason = ch->stop_reason;
      if (r->logprobs >= 0) {
        /* top is never NULL (as in streams): logprobs 0 gives the sampled
           token's entry, not null */
        static const ms_token no_top[1];
        static const ms_token_logprobs none;   /* non-NULL with 0 entries: [] */
        int32_t k;
        for (k = 0; k < ch->n_lp; k++) ch->lp[k].top = ch->lp_top ? ch->lp_top + ch->lp_top_at[k] : no_top;
        chs[i].logprobs = ch->lp ? ch->lp : &none;
        chs[i].n_logprobs = ch->n_lp;
      }
    }
    S->scratch.len = 0;
    o = buf_out(&S->scratch);
    ms_response_write(&o, r->resp, chs, r->n, &u);
    buf_printf(&c->out, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %lu\r\nConnection: %s\r\n\r\n",
               (unsigned long)S->scratch.len, c->keep_alive ? "keep-alive" : "close");
    buf_append(&c->out, S->scratch.p, S->scratch.len);
  }
  c->state = C_WRITE;
  if (!c->keep_alive) c->close_after = 1;
  c->req = NULL;
  r->c = NULL;
  request_free(S, r);
}

/* Moves queued requests into free slots (FIFO: the head waits for room). */
static void admit(server *S) {
  while (S->qhead && S->n_active + S->qhead->n <= S->slots) {
    request *r = S->qhead;
    int i;
    perr e;
    S->qhead = r->qnext;
    if (!S->qhead) S->qtail = NULL;
    S->n_queued--;
    r->admitted = 1;
    if (request_setup(S, r, &e) != 0) {
      conn *c = r->c;
      c->req = NULL;
      request_free(S, r);
      respond_error(S, c, 500, "InternalServerError", e.msg, e.param, 0);
      continue;
    }
    for (i = 0; i < r->n; i++) S->active[S->n_active++] = &r->ch[i];
    if (r->stream) stream_start(S, r);
  }
}

/* One model step of a choice (runs on a pool worker). */
typedef struct step_ctx { server *S; } step_ctx;
static void model_task(void *ctx, int32_t i, int32_t worker) {
  server *S = ((step_ctx *)ctx)->S;
  choice *c = S->active[i];
  request *r = c->req;
  const model *m = &S->m;
  float *row = c->row >= 0 ? S->logits + (size_t)c->row * (size_t)m->vocab : NULL;
  (void)worker;
  if (c->pending_pos < r->n_prompt) {
    int32_t end = m->is_llama ? c->pending_pos + PREFILL_CHUNK : r->n_prompt;
    if (end > r->n_prompt) end = r->n_prompt;
    for (; c->pending_pos < end; c->pending_pos++)
      if (model_feed(m, &c->st, r->prompt[c->pending_pos], c->pending_pos + 1 == r->n_prompt ? row : NULL)) c->feed_failed = 1;
  } else if (c->need_feed) {
    if (model_feed(m, &c->st, c->last_token, row)) c->feed_failed = 1;
    c->need_feed = 0;
  } else if (row) {
    if (model_feed(m, &c->st, -1, row)) c->feed_failed = 1;   /* empty prompt: logits of the start state */
  }
}

static void step(server *S) {
  int i, k = 0;
  step_ctx ctx;
  double t0, t1, t2;
  const model *m = &S->m;
  /* plan: which choices produce a row this step */
  for (i = 0; i < S->n_active; i++) {
    choice *c = S->active[i];
    request *r = c->req;
    c->row = -1;
    if (c->pending_pos < r->n_prompt) {
      if (!m->is_llama || r->n_prompt - c->pending_pos <= PREFILL_CHUNK) c->row = k;
    } else c->row = k;
    if (c->row >= 0) {
      S->row_choice[k] = c;
      S->row_params[k] = &c->params;
      S->row_seqs[k] = c->seq;
      memset(&S->row_out[k], 0, sizeof(ms_output));
      S->row_out[k].top = S->row_top + (size_t)k * MAX_TOP;
      S->row_out[k].top_capacity = MAX_TOP;
      k++;
    }
  }
  t0 = now_s();
  ctx.S = S;
  pool_for(&S->pl, S->n_active, model_task, &ctx);
  t1 = now_s();
  if (k > 0) {
    int on_gpu = 0;
    if (S->cu) {
      if (gpu_sample(S, k) == 0) on_gpu = 1;
      else {
        /* the device failed: this step and the rest of the run on the CPU */
        fprintf(stderr, "server: GPU sampling failed; sampling on the CPU from now on\n");
        gpu_stop(S);
      }
    }
    if (!on_gpu) {
      ms_batch b;
      memset(&b, 0, sizeof b);
      b.n_rows = k;
      b.vocab = m->vocab;
      b.logits = S->logits;
      b.row_stride = (size_t)m->vocab;
      b.params = S->row_params;
      b.seqs = S->row_seqs;
      b.out = S->row_out;
      b.row_results = S->row_res;
      ms_sample_batch(S->sampler, &b);
    }
  }
  t2 = now_s();
  S->st.t_model += t1 - t0;
  S->st.t_sample += t2 - t1;
  S->st.steps++;
  S->st.rows += (uint64_t)k;
  /* egress, row by row; finished choices leave the active set afterwards */
  for (i = 0; i < k; i++) {
    choice *c = S->row_choice[i];
    request *r = c->req;
    ms_output *o = &S->row_out[i];
    ms_text_step st;
    ms_result res;
    int32_t len;
    const unsigned char *bytes;
    size_t need;
    if (c->done) continue;
    if (c->feed_failed || S->row_res[i] != MS_OK) {
      /* a model or sampling failure ends this choice (never a wrong token) */
      const char *why = c->feed_failed ? "the model failed on this sequence" : ms_result_str(S->row_res[i]);
      if (r->stream && r->c && !r->failed) {
        ms_error er;
        ms_out out;
        memset(&er, 0, sizeof er);
        er.message = why; er.type = "InternalServerError"; er.code_num = 500;
        S->scratch.len = 0;
        out = buf_out(&S->scratch);
        ms_error_write(&out, &er, 1);
        emit_event(S, r);
        r->failed = 1;
      }
      need = ms_text_out_bound(c->text, 0);
      if (need > S->textbuf_cap) { free(S->textbuf); S->textbuf_cap = need * 2; S->textbuf = (char *)malloc(S->textbuf_cap); }
      if (S->textbuf && ms_text_finish(c->text, MS_FINISH_ABORT, S->textbuf, S->textbuf_cap, &st) == MS_OK)
        choice_emit(S, c, &st, NULL);
      else { memset(&st, 0, sizeof st); st.finish = MS_FINISH_ABORT; st.delta = ""; choice_emit(S, c, &st, NULL); }
      continue;
    }
    ms_seq_accept(c->seq, o->token);
    S->st.tokens++;
    bytes = model_text(m, c->prev_token, o->token, &len);
    c->prev_token = o->token;
    c->last_token = o->token;
    c->need_feed = 1;
    need = ms_text_out_bound(c->text, (size_t)len);
    if (need > S->textbuf_cap) {
      free(S->textbuf);
      S->textbuf_cap = need * 2 + 4096;
      S->textbuf = (char *)malloc(S->textbuf_cap);
      if (!S->textbuf) { S->textbuf_cap = 0; continue; }
    }
    res = ms_text_push(c->text, o->token, bytes, (size_t)len, S->textbuf, S->textbuf_cap, &st);
    if (res != MS_OK) {
      memset(&st, 0, sizeof st);
      if (ms_text_finish(c->text, MS_FINISH_LENGTH, S->textbuf, S->textbuf_cap, &st) != MS_OK) { st.finish = MS_FINISH_LENGTH; st.delta = ""; }
      choice_emit(S, c, &st, o);
      continue;
    }
    if (st.finish == MS_FINISH_NONE && ms_seq_prompt_len(c->seq) + ms_seq_output_len(c->seq) >= m->ctx) {
      /* the context is full: emit this token's text, then finish with "length" */
      ms_text_step st2;
      choice_emit(S, c, &st, o);
      if (!c->done && ms_text_finish(c->text, MS_FINISH_LENGTH, S->textbuf, S->textbuf_cap, &st2) == MS_OK)
        choice_emit(S, c, &st2, NULL);
      continue;
    }
    choice_emit(S, c, &st, o);   /* may complete and free the request */
  }
  S->st.t_egress += now_s() - t2;
  /* drop finished choices from the active set (request_free did it for
     completed requests); a choice's device slot goes back with it, since
     admit() counts it free from now on */
  for (i = 0; i < S->n_active;) {
    choice *c = S->active[i];
    if (c->done) {
      if (S->cu && c->slot >= 0) { S->free_slot[S->n_free_slot++] = c->slot; c->slot = -1; }
      S->active[i] = S->active[--S->n_active];
    } else i++;
  }
}

/* ---- HTTP request handling ---------------------------------------------------- */
static void health(server *S, conn *c) {
  buf *b = &S->scratch;
  long rss_kb = -1;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f) {
    long pages, res;
    if (fscanf(f, "%ld %ld", &pages, &res) == 2) rss_kb = res * (sysconf(_SC_PAGESIZE) / 1024);
    fclose(f);
  }
  b->len = 0;
  buf_printf(b, "{\"status\":\"ok\",\"model\":");
  buf_json_str(b, S->m.name, strlen(S->m.name));
  buf_printf(b, ",\"vocab\":%d,\"context\":%d,\"slots\":%d,\"slots_used\":%d,\"queued\":%d,\"connections\":%d,"
                "\"requests_done\":%llu,\"tokens\":%llu,\"steps\":%llu,\"rows\":%llu,\"disconnects\":%llu,"
                "\"errors_4xx\":%llu,\"dropped_slow\":%llu,\"rejected_connections\":%llu,"
                "\"time_model_s\":%.6f,\"time_sample_s\":%.6f,\"time_egress_s\":%.6f,\"rss_kb\":%ld,"
                "\"simd\":\"%s\",\"threads\":%d,\"sampler\":\"%s\"}",
             (int)S->m.vocab, (int)S->m.ctx, S->slots, S->n_active, S->n_queued, S->n_conns,
             (unsigned long long)S->st.requests, (unsigned long long)S->st.tokens, (unsigned long long)S->st.steps,
             (unsigned long long)S->st.rows, (unsigned long long)S->st.disconnects, (unsigned long long)S->st.errors4xx,
             (unsigned long long)S->st.dropped_slow, (unsigned long long)S->st.rejected_conns,
             S->st.t_model, S->st.t_sample, S->st.t_egress, rss_kb, ms_sampler_simd(S->sampler), S->pl.n,
             S->cu ? "cuda" : "cpu");
  respond(S, c, 200, "application/json", b->p, b->len, 0);
}

static void models(server *S, conn *c) {
  buf *b = &S->scratch;
  b->len = 0;
  buf_printf(b, "{\"object\":\"list\",\"data\":[{\"id\":");
  buf_json_str(b, S->m.name, strlen(S->m.name));
  buf_printf(b, ",\"object\":\"model\",\"created\":0,\"owned_by\":\"mysample\",\"max_model_len\":%d}]}", (int)S->m.ctx);
  respond(S, c, 200, "application/json", b->p, b->len, 0);
}

static int hdr_eq(const char *a, size_t n, const char *b) {
  size_t i;
  if (strlen(b) != n) return 0;
  for (i = 0; i < n; i++) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = (char)(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = (char)(y - 'A' + 'a');
    if (x != y) return 0;
  }
  return 1;
}
static int is_tchar(unsigned char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         (ch != 0 && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}
/* Does a comma-separated header value contain token tok (case-insensitive)? */
static int hdr_has_token(const char *v, size_t n, const char *tok) {
  size_t i = 0;
  while (i < n) {
    size_t s, e;
    while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ',')) i++;
    s = i;
    while (i < n && v[i] != ',') i++;
    e = i;
    while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t')) e--;
    if (e > s && hdr_eq(v + s, e - s, tok)) return 1;
  }
  return 0;
}

/* Parses the request head and, once the body is in, dispatches it.
   Returns 1 when a request was consumed, 0 when more bytes are needed. */
static int handle_input(server *S, conn *c) {
  char *p = c->in.p, *end, *line, *le;
  size_t head_len, body_len = 0;
  int has_len = 0, http10 = 0, expect_continue = 0;
  char method[16], target[256];
  size_t ml, tl;
  const char *sp1, *sp2;
  if (c->in.len == 0) return 0;
  if (!c->t_req) c->t_req = now_ms();
  end = NULL;
  {
    size_t i, lim = c->in.len < MAX_HEADER_BYTES ? c->in.len : MAX_HEADER_BYTES;
    for (i = 3; i < lim; i++)
      if (p[i] == '\n' && p[i - 1] == '\r' && p[i - 2] == '\n' && p[i - 3] == '\r') { end = p + i + 1; break; }
  }
  if (!end) {
    if (c->in.len >= MAX_HEADER_BYTES) { respond_error(S, c, 431, "BadRequestError", "request headers are larger than 16384 bytes", NULL, 1); return 1; }
    return 0;
  }
  head_len = (size_t)(end - p);
  /* request line: METHOD SP target SP HTTP/1.x CRLF */
  le = memchr(p, '\r', head_len);
  if (!le || le[1] != '\n') goto bad;
  sp1 = memchr(p, ' ', (size_t)(le - p));
  if (!sp1) goto bad;
  sp2 = memchr(sp1 + 1, ' ', (size_t)(le - sp1 - 1));
  if (!sp2) goto bad;
  ml = (size_t)(sp1 - p); tl = (size_t)(sp2 - sp1 - 1);
  if (ml == 0 || ml >= sizeof method || tl == 0) goto bad;
  if (tl >= sizeof target) { respond_error(S, c, 404, "NotFoundError", "unknown path", NULL, 1); return 1; }
  memcpy(method, p, ml); method[ml] = 0;
  memcpy(target, sp1 + 1, tl); target[tl] = 0;
  {
    size_t i;
    for (i = 0; i < ml; i++) if (!is_tchar((unsigned char)method[i])) goto bad;
    for (i = 0; i < tl; i++) if ((unsigned char)target[i] <= 0x20 || (unsigned char)target[i] >= 0x7f) goto bad;
  }
  if ((size_t)(le - sp2 - 1) != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0) {
    if ((size_t)(le - sp2 - 1) == 8 && memcmp(sp2 + 1, "HTTP/", 5) == 0) { respond_error(S, c, 505, "BadRequestError", "only HTTP/1.0 and HTTP/1.1 are supported", NULL, 1); return 1; }
    goto bad;
  }
  if (sp2[8] == '0') http10 = 1; else if (sp2[8] != '1') { respond_error(S, c, 505, "BadRequestError", "only HTTP/1.0 and HTTP/1.1 are supported", NULL, 1); return 1; }
  c->keep_alive = !http10;
  c->http10 = http10;
  /* headers */
  line = le + 2;
  while (line < end - 2) {
    char *colon, *v, *ve;
    le = memchr(line, '\r', (size_t)(end - line));
    if (!le || le[1] != '\n') goto bad;
    if (line[0] == ' ' || line[0] == '\t') goto bad;   /* obsolete line folding */
    colon = memchr(line, ':', (size_t)(le - line));
    if (!colon || colon == line) goto bad;
    {
      char *q;
      for (q = line; q < colon; q++) if (!is_tchar((unsigned char)*q)) goto bad;
      for (q = colon + 1; q < le; q++) if ((unsigned char)*q < 0x20 && *q != '\t') goto bad;
    }
    v = colon + 1; ve = le;
    while (v < ve && (*v == ' ' || *v == '\t')) v++;
    while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
    if (hdr_eq(line, (size_t)(colon - line), "content-length")) {
      size_t n = 0;
      char *q;
      if (v == ve) goto bad;
      for (q = v; q < ve; q++) {
        if (*q < '0' || *q > '9') goto bad;
        if (n > ((size_t)1 << 40)) break;
        n = n * 10 + (size_t)(*q - '0');
      }
      if (has_len && n != body_len) goto bad;
      has_len = 1; body_len = n;
    } else if (hdr_eq(line, (size_t)(colon - line), "transfer-encoding")) {
      respond_error(S, c, 501, "BadRequestError", "Transfer-Encoding is not supported: send Content-Length", NULL, 1);
      return 1;
    } else if (hdr_eq(line, (size_t)(colon - line), "connection")) {
      if (hdr_has_token(v, (size_t)(ve - v), "close")) c->keep_alive = 0;
      else if (hdr_has_token(v, (size_t)(ve - v), "keep-alive")) c->keep_alive = 1;
    } else if (hdr_eq(line, (size_t)(colon - line), "expect")) {
      if (hdr_eq(v, (size_t)(ve - v), "100-continue")) expect_continue = 1;
      else { respond_error(S, c, 400, "BadRequestError", "unsupported Expect header", NULL, 1); return 1; }
    }
    line = le + 2;
  }
  if (body_len > S->max_body) {
    char msg[128];
    snprintf(msg, sizeof msg, "the request body is larger than the limit of %lu bytes", (unsigned long)S->max_body);
    respond_error(S, c, 413, "BadRequestError", msg, NULL, 1);
    return 1;
  }
  if (c->in.len - head_len < body_len) {
    if (expect_continue && !c->sent_continue) {
      buf_printf(&c->out, "HTTP/1.1 100 Continue\r\n\r\n");
      c->sent_continue = 1;
      conn_try_write(S, c);
    }
    return 0;
  }
  c->req_bytes = head_len + body_len;
  {
    char *q = strchr(target, '?');
    const char *body = p + head_len;
    int is_post = !strcmp(method, "POST"), is_get = !strcmp(method, "GET");
    if (q) *q = 0;
    if (!strcmp(target, "/health") || !strcmp(target, "/v1/models") || !strcmp(target, "/v1/chat/completions") ||
        !strcmp(target, "/v1/completions")) {
      int want_post = target[4] == 'c';   /* /v1/chat..., /v1/completions */
      if (!strcmp(target, "/health")) want_post = 0;
      if (want_post ? !is_post : !is_get) {
        respond_error(S, c, 405, "BadRequestError", want_post ? "use POST" : "use GET", NULL, 0);
        return 1;
      }
    } else {
      respond_error(S, c, 404, "NotFoundError", "unknown path: use /v1/chat/completions, /v1/completions, /v1/models or /health", NULL, 0);
      return 1;
    }
    if (!strcmp(target, "/health")) { health(S, c); return 1; }
    if (!strcmp(target, "/v1/models")) { models(S, c); return 1; }
    if (!has_len) { respond_error(S, c, 411, "BadRequestError", "Content-Length is required", NULL, 1); return 1; }
    {
      request *r = (request *)calloc(1, sizeof *r);
      perr e;
      if (!r) { respond_error(S, c, 500, "InternalServerError", "out of memory", NULL, 1); return 1; }
      r->api = !strcmp(target, "/v1/chat/completions") ? API_CHAT : API_COMPLETION;
      if (parse_request(S, r, body, body_len, &e) != 0) {
        request_free(S, r);
        respond_error(S, c, e.code, e.code == 404 ? "NotFoundError" : "BadRequestError", e.msg, e.param, 0);
        return 1;
      }
      if (S->n_queued >= MAX_QUEUE) {
        request_free(S, r);
        respond_error(S, c, 503, "ServiceUnavailableError", "the server is busy: too many queued requests", NULL, 0);
        return 1;
      }
      r->c = c;
      c->req = r;
      c->state = C_BUSY;
      if (S->qtail) S->qtail->qnext = r; else S->qhead = r;
      S->qtail = r;
      S->n_queued++;
      return 1;
    }
  }
bad:
  respond_error(S, c, 400, "BadRequestError", "malformed HTTP request", NULL, 1);
  return 1;
}

/* Removes the bytes of the request just handled from the input buffer. */
static void consume_request(conn *c) {
  size_t n = c->req_bytes;
  if (n > c->in.len) n = c->in.len;
  memmove(c->in.p, c->in.p + n, c->in.len - n);
  c->in.len -= n;
  c->req_bytes = 0;
  c->t_req = 0;
  c->sent_continue = 0;
}

static void conn_read(server *S, conn *c) {
  for (;;) {
    ssize_t n;
    size_t room;
    if (buf_reserve(&c->in, 16384)) { c->close_after = 1; c->in_eof = 1; return; }
    room = c->in.cap - c->in.len - 1;
    if (c->in.len >= MAX_HEADER_BYTES + S->max_body + 16384) return;  /* stop reading; the request will be rejected */
    n = recv(c->fd, c->in.p + c->in.len, room, 0);
    if (n > 0) { c->in.len += (size_t)n; c->in.p[c->in.len] = 0; if ((size_t)n < room) return; continue; }
    if (n == 0) { c->in_eof = 1; return; }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) c->in_eof = 1;
    return;
  }
}

/* Runs the per-connection state machine after I/O. Returns -1 if closed. */
static int conn_advance(server *S, conn *c) {
  int64_t t = now_ms();
  for (;;) {
    if (c->state == C_WRITE) {
      conn_try_write(S, c);
      if (c->out.len > 0) break;                         /* still flushing */
      if (c->close_after || !c->keep_alive) { conn_close(S, c); return -1; }
      consume_request(c);
      c->state = C_READ;
      c->t_progress = t;
      continue;
    }
    if (c->state == C_READ) {
      if (c->req_bytes == 0 && c->in.len > 0) {
        if (!handle_input(S, c)) break;
        if (c->state == C_READ) { consume_request(c); continue; } /* cannot happen: responses move to WRITE */
        if (c->state == C_WRITE && c->req_bytes == 0) c->req_bytes = c->in.len; /* error before the size was known: drop all */
        continue;
      }
      break;
    }
    break;   /* C_BUSY: the step loop moves it on */
  }
  if (c->in_eof && (c->state != C_WRITE || c->out.len == 0)) {
    /* the peer closed: a stream or a queued request is abandoned */
    conn_close(S, c);
    return -1;
  }
  return 0;
}

static void conn_timeouts(server *S) {
  conn *c, *next;
  int64_t t = now_ms();
  for (c = S->conns; c; c = next) {
    size_t unsent = c->out.len - c->out_off;
    next = c->next;
    /* slow readers: a stream still producing while more than MAX_OUT_BYTES
       wait unread (it is read slower than it is made), or output that made
       no progress for the write timeout. A complete response is never cut
       for its size: it is all made already. */
    if ((c->req && c->req->stream && unsent > MAX_OUT_BYTES) || (unsent > 0 && t - c->t_progress > S->write_timeout_ms)) {
      S->st.dropped_slow++;
      conn_close(S, c);
      continue;
    }
    if (c->state == C_READ) {
      if (c->in.len > 0 && c->t_req && t - c->t_req > S->request_timeout_ms) {
        respond_error(S, c, 408, "BadRequestError", "the request did not arrive in time", NULL, 1);
        c->req_bytes = c->in.len;
        continue;
      }
      if (c->in.len == 0 && t - c->t_progress > S->idle_timeout_ms) { conn_close(S, c); continue; }
    }
  }
}

static void accept_new(server *S) {
  int i;
  for (i = 0; i < 64; i++) {
    int fd = accept(S->listen_fd, NULL, NULL), one = 1;
    conn *c;
    if (fd < 0) return;
    if (S->n_conns >= S->max_conns) {
      static const char body[] = "{\"error\":{\"message\":\"too many connections\",\"type\":\"ServiceUnavailableError\",\"param\":null,\"code\":503}}";
      char msg[512];
      int len = snprintf(msg, sizeof msg, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                         "Content-Length: %lu\r\nConnection: close\r\n\r\n%s", (unsigned long)(sizeof body - 1), body);
      ssize_t w;
      fcntl(fd, F_SETFL, O_NONBLOCK);
      w = send(fd, msg, (size_t)len, MSG_NOSIGNAL);
      (void)w;
      close(fd);
      S->st.rejected_conns++;
      continue;
    }
    fcntl(fd, F_SETFL, O_NONBLOCK);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c = (conn *)calloc(1, sizeof *c);
    if (!c) { close(fd); continue; }
    c->fd = fd;
    c->t_open = c->t_progress = now_ms();
    c->keep_alive = 1;
    c->next = S->conns;
    if (S->conns) S->conns->prev = c;
    S->conns = c;
    S->n_conns++;
  }
}

/* ---- start-up ---------------------------------------------------------- */
static int read_text_file(const char *path, unsigned char **out, size_t *len) {
  FILE *f = fopen(path, "rb");
  size_t cap = 1 << 16, n = 0;
  unsigned char *b;
  if (!f) return -1;
  b = (unsigned char *)malloc(cap);
  while (b) {
    size_t r = fread(b + n, 1, cap - n, f);
    n += r;
    if (n < cap) break;
    if (cap >= ((size_t)64 << 20)) break;
    cap *= 2;
    {
      unsigned char *nb = (unsigned char *)realloc(b, cap);
      if (!nb) { free(b); b = NULL; }
      else b = nb;
    }
  }
  fclose(f);
  if (!b) return -1;
  *out = b; *len = n;
  return 0;
}

static void usage(FILE *f) {
  fprintf(f,
    "usage: server [flags]\n"
    "  --host ADDR        listen address (default 127.0.0.1)\n"
    "  --port N           port (default 8000; 0 = any free port)\n"
    "  --model PATH       llama2.c checkpoint (model.bin); default: the embedded n-gram model\n"
    "  --tokenizer PATH   llama2.c tokenizer.bin (with --model; default tokenizer.bin beside the model)\n"
    "  --corpus PATH      train the n-gram model on this text instead of the embedded one\n"
    "  --name NAME        model name served (default: mysample-ngram / the model file name)\n"
    "  --threads N        worker threads for the model and the sampler (default 1)\n"
    "  --slots N          sequences decoded together (default %d)\n"
    "  --max-conns N      open connections (default %d)\n"
    "  --max-body BYTES   request body limit (default %u)\n"
    "  --port-file PATH   write the bound port to PATH once listening\n"
    "  --request-timeout MS  a started request must arrive whole within MS (default %d): 408\n"
    "  --idle-timeout MS  close keep-alive connections idle this long (default %d)\n"
    "  --write-timeout MS drop a client that reads nothing this long while output waits (default %d)\n"
    "  --cuda             sample on the GPU through mysample_cuda.h (falls back to the CPU)\n"
    "  --quiet            no log lines\n", SLOTS_DEFAULT, MAX_CONNS_DEFAULT, MAX_BODY_DEFAULT,
    REQUEST_TIMEOUT_MS, IDLE_TIMEOUT_MS, WRITE_STALL_MS);
}

static int parse_int_arg(const char *s, long lo, long hi, long *out) {
  char *end;
  long v;
  errno = 0;
  v = strtol(s, &end, 10);
  if (errno || *end || end == s || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

int main(int argc, char **argv) {
  static server S;
  const char *host = "127.0.0.1", *model_path = NULL, *tok_path = NULL, *corpus = NULL, *name = NULL, *port_file = NULL;
  long port = 8000, threads = 1, slots = SLOTS_DEFAULT, max_conns = MAX_CONNS_DEFAULT, max_body = MAX_BODY_DEFAULT;
  long req_to = REQUEST_TIMEOUT_MS, idle_to = IDLE_TIMEOUT_MS, write_to = WRITE_STALL_MS;
  int i, cuda = 0;
  char err[256], portstr[16];
  struct addrinfo hints, *ai = NULL;
  char tokbuf[4096];
  double t_start = now_s();
  for (i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDV() do { if (!v) { fprintf(stderr, "server: %s needs a value\n", a); return 2; } i++; } while (0)
    if (!strcmp(a, "--host")) { NEEDV(); host = v; }
    else if (!strcmp(a, "--port")) { NEEDV(); if (parse_int_arg(v, 0, 65535, &port)) { fprintf(stderr, "server: bad --port\n"); return 2; } }
    else if (!strcmp(a, "--model")) { NEEDV(); model_path = v; }
    else if (!strcmp(a, "--tokenizer")) { NEEDV(); tok_path = v; }
    else if (!strcmp(a, "--corpus")) { NEEDV(); corpus = v; }
    else if (!strcmp(a, "--name")) { NEEDV(); name = v; }
    else if (!strcmp(a, "--threads")) { NEEDV(); if (parse_int_arg(v, 1, 256, &threads)) { fprintf(stderr, "server: bad --threads\n"); return 2; } }
    else if (!strcmp(a, "--slots")) { NEEDV(); if (parse_int_arg(v, 1, 4096, &slots)) { fprintf(stderr, "server: bad --slots\n"); return 2; } }
    else if (!strcmp(a, "--max-conns")) { NEEDV(); if (parse_int_arg(v, 1, 100000, &max_conns)) { fprintf(stderr, "server: bad --max-conns\n"); return 2; } }
    else if (!strcmp(a, "--max-body")) { NEEDV(); if (parse_int_arg(v, 1024, 1L << 30, &max_body)) { fprintf(stderr, "server: bad --max-body\n"); return 2; } }
    else if (!strcmp(a, "--port-file")) { NEEDV(); port_file = v; }
    else if (!strcmp(a, "--request-timeout")) { NEEDV(); if (parse_int_arg(v, 10, 3600000, &req_to)) { fprintf(stderr, "server: bad --request-timeout\n"); return 2; } }
    else if (!strcmp(a, "--idle-timeout")) { NEEDV(); if (parse_int_arg(v, 10, 3600000, &idle_to)) { fprintf(stderr, "server: bad --idle-timeout\n"); return 2; } }
    else if (!strcmp(a, "--write-timeout")) { NEEDV(); if (parse_int_arg(v, 10, 3600000, &write_to)) { fprintf(stderr, "server: bad --write-timeout\n"); return 2; } }
    else if (!strcmp(a, "--cuda")) cuda = 1;
    else if (!strcmp(a, "--quiet")) S.quiet = 1;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
    else { fprintf(stderr, "server: unknown flag %s\n", a); usage(stderr); return 2; }
#undef NEEDV
  }
  signal(SIGPIPE, SIG_IGN);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);

  /* the model */
  if (model_path) {
    const char *slash;
    if (!tok_path) {
      slash = strrchr(model_path, '/');
      snprintf(tokbuf, sizeof tokbuf, "%.*stokenizer.bin", slash ? (int)(slash - model_path + 1) : 0, model_path);
      tok_path = tokbuf;
    }
    if (l2_model_load(&S.m.l2, model_path, err, sizeof err)) { fprintf(stderr, "server: %s\n", err); return 1; }
    if (l2_tokenizer_load(&S.m.tk, tok_path, S.m.l2->c.vocab_size, err, sizeof err)) { fprintf(stderr, "server: %s\n", err); return 1; }
    S.m.is_llama = 1;
    S.m.vocab = S.m.l2->c.vocab_size;
    S.m.eos = L2_EOS;
    S.m.ctx = S.m.l2->c.seq_len;
    slash = strrchr(model_path, '/');
    S.m.name = name ? name : slash ? slash + 1 : model_path;
  } else {
    unsigned char *text = NULL;
    size_t len = 0;
    int owned = 0;
    if (corpus) {
      if (read_text_file(corpus, &text, &len)) { fprintf(stderr, "server: cannot read %s\n", corpus); return 1; }
      owned = 1;
    } else {
#ifdef MS_EMBEDDED_CORPUS
      text = (unsigned char *)embedded_corpus;
      len = sizeof embedded_corpus;
#else
      if (read_text_file("examples/data/corpus.txt", &text, &len)) {
        fprintf(stderr, "server: built without the embedded corpus and examples/data/corpus.txt is not here; use --corpus PATH or build with `make server`\n");
        return 1;
      }
      owned = 1;
#endif
    }
    if (ng_train(&S.m.ng, text, len, NGRAM_VOCAB, err, sizeof err)) { fprintf(stderr, "server: %s\n", err); return 1; }
    if (owned) free(text);
    S.m.vocab = S.m.ng->vocab;
    S.m.eos = NG_EOS;
    S.m.ctx = NGRAM_CTX;
    S.m.name = name ? name : "mysample-ngram";
  }
  if (strlen(S.m.name) > 200) { fprintf(stderr, "server: model name too long\n"); return 2; }

  /* the sampler, on our pool */
  if (pool_start(&S.pl, (int)threads)) { fprintf(stderr, "server: cannot start threads\n"); return 1; }
  {
    ms_sampler_desc d;
    ms_result res;
    memset(&d, 0, sizeof d);
    d.max_vocab = S.m.vocab;
    d.n_workers = S.pl.n;
    d.parallel_for = pool_for;
    d.parallel_user = &S.pl;
    res = ms_sampler_create(&S.sampler, &d);
    if (res != MS_OK) { fprintf(stderr, "server: ms_sampler_create: %s\n", ms_result_str(res)); return 1; }
  }
  S.slots = (int)slots;
  S.max_conns = (int)max_conns;
  S.max_body = (size_t)max_body;
  S.request_timeout_ms = req_to;
  S.idle_timeout_ms = idle_to;
  S.write_timeout_ms = write_to;
  S.active = (choice **)calloc((size_t)S.slots, sizeof(choice *));
  S.logits = (float *)malloc((size_t)S.slots * (size_t)S.m.vocab * sizeof(float));
  S.row_params = (const ms_params **)calloc((size_t)S.slots, sizeof(ms_params *));
  S.row_seqs = (const ms_seq **)calloc((size_t)S.slots, sizeof(ms_seq *));
  S.row_out = (ms_output *)calloc((size_t)S.slots, sizeof(ms_output));
  S.row_res = (ms_result *)calloc((size_t)S.slots, sizeof(ms_result));
  S.row_top = (ms_logprob *)calloc((size_t)S.slots * MAX_TOP, sizeof(ms_logprob));
  S.row_choice = (choice **)calloc((size_t)S.slots, sizeof(choice *));
  if (!S.active || !S.logits || !S.row_params || !S.row_seqs || !S.row_out || !S.row_res || !S.row_top || !S.row_choice) {
    fprintf(stderr, "server: out of memory for %d slots\n", S.slots);
    return 1;
  }
  if (cuda) gpu_start(&S); /* else, or when it fails: the CPU sampler */

  /* the socket */
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  snprintf(portstr, sizeof portstr, "%ld", port);
  if (getaddrinfo(host, portstr, &hints, &ai) != 0 || !ai) { fprintf(stderr, "server: cannot resolve %s\n", host); return 1; }
  S.listen_fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
  {
    int one = 1;
    if (S.listen_fd < 0) { perror("server: socket"); return 1; }
    setsockopt(S.listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(S.listen_fd, ai->ai_addr, ai->ai_addrlen) != 0) { perror("server: bind"); return 1; }
    if (listen(S.listen_fd, 512) != 0) { perror("server: listen"); return 1; }
    fcntl(S.listen_fd, F_SETFL, O_NONBLOCK);
  }
  freeaddrinfo(ai);
  {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(S.listen_fd, (struct sockaddr *)&ss, &sl) == 0)
      port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port) : ntohs(((struct sockaddr_in *)&ss)->sin_port);
  }
  if (port_file) {
    FILE *f = fopen(port_file, "w");
    if (f) { fprintf(f, "%ld\n", port); fclose(f); }
  }
  if (!S.quiet) {
    printf("mysample server: model %s (vocab %d, context %d), %d slots, %d threads, sampler %s, ready in %.2f s\n",
           S.m.name, (int)S.m.vocab, (int)S.m.ctx, S.slots, S.pl.n, ms_sampler_simd(S.sampler), now_s() - t_start);
    printf("listening on http://%s%s%s:%ld\n", strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", port);
    fflush(stdout);
  }

  /* the loop */
  {
    struct pollfd *pfd = (struct pollfd *)malloc(((size_t)S.max_conns + 1) * sizeof *pfd);
    conn **pc = (conn **)malloc(((size_t)S.max_conns + 1) * sizeof *pc);
    if (!pfd || !pc) { fprintf(stderr, "server: out of memory\n"); return 1; }
    while (!g_stop) {
      int n = 0, k;
      conn *c, *next;
      pfd[n].fd = S.listen_fd; pfd[n].events = POLLIN; pfd[n].revents = 0; pc[n] = NULL; n++;
      for (c = S.conns; c; c = c->next) {
        short ev = 0;
        if (c->in.len < MAX_HEADER_BYTES + S.max_body + 16384 && !c->in_eof) ev |= POLLIN;
        if (c->out.len > 0) ev |= POLLOUT;
        pfd[n].fd = c->fd; pfd[n].events = ev; pfd[n].revents = 0; pc[n] = c; n++;
      }
      k = poll(pfd, (nfds_t)n, S.n_active > 0 ? 0 : 100);
      if (k < 0 && errno != EINTR) { perror("server: poll"); break; }
      if (k > 0) {
        for (i = 1; i < n; i++) {
          c = pc[i];
          if (!pfd[i].revents) continue;
          if (pfd[i].revents & (POLLERR | POLLNVAL)) c->in_eof = 1;
          if (pfd[i].revents & POLLOUT) conn_try_write(&S, c);
          if (pfd[i].revents & (POLLIN | POLLHUP)) conn_read(&S, c);
        }
        if (pfd[0].revents & POLLIN) accept_new(&S);
      }
      for (c = S.conns; c; c = next) { next = c->next; conn_advance(&S, c); }
      conn_timeouts(&S);
      admit(&S);
      if (S.n_active > 0) step(&S);
      for (c = S.conns; c; c = next) {
        next = c->next;
        if (c->out.len > 0) conn_try_write(&S, c);
        if (c->state == C_WRITE) conn_advance(&S, c);
      }
    }
    free(pfd); free(pc);
  }
  if (!S.quiet) { printf("mysample server: shutting down\n"); fflush(stdout); }
  while (S.conns) conn_close(&S, S.conns);
  while (S.qhead) { request *r = S.qhead; S.qhead = r->qnext; request_free(&S, r); }
  close(S.listen_fd);
  pool_stop(&S.pl);
  gpu_stop(&S);
  ms_sampler_destroy(S.sampler);
  free(S.active); free(S.logits); free(S.row_params); free(S.row_seqs); free(S.row_out); free(S.row_res);
  free(S.row_top); free(S.row_choice); free(S.textbuf); buf_free(&S.scratch);
  ng_free(S.m.ng); l2_model_free(S.m.l2); l2_tokenizer_free(S.m.tk);
  return 0;
}
