/* ---- implementation: the sampler, batches and the worker pool ----------- */
#define MS__MAX_WORKERS 256

#if defined(MYSAMPLE_THREADS)
#  if defined(_WIN32)
#    ifndef WIN32_LEAN_AND_MEAN
#      define WIN32_LEAN_AND_MEAN
#    endif
#    include <windows.h>
typedef HANDLE ms__thread;
typedef CRITICAL_SECTION ms__mutex;
typedef CONDITION_VARIABLE ms__cond;
#    define ms__mutex_init(m) (InitializeCriticalSection(m), 0)
#    define ms__mutex_destroy(m) DeleteCriticalSection(m)
#    define ms__lock(m) EnterCriticalSection(m)
#    define ms__unlock(m) LeaveCriticalSection(m)
#    define ms__cond_init(c) (InitializeConditionVariable(c), 0)
#    define ms__cond_destroy(c) ((void)(c))
#    define ms__cond_wait(c, m) SleepConditionVariableCS((c), (m), INFINITE)
#    define ms__cond_broadcast(c) WakeAllConditionVariable(c)
#  else
#    include <pthread.h>
typedef pthread_t ms__thread;
typedef pthread_mutex_t ms__mutex;
typedef pthread_cond_t ms__cond;
#    define ms__mutex_init(m) pthread_mutex_init((m), NULL)
#    define ms__mutex_destroy(m) pthread_mutex_destroy(m)
#    define ms__lock(m) pthread_mutex_lock(m)
#    define ms__unlock(m) pthread_mutex_unlock(m)
#    define ms__cond_init(c) pthread_cond_init((c), NULL)
#    define ms__cond_destroy(c) pthread_cond_destroy(c)
#    define ms__cond_wait(c, m) pthread_cond_wait((c), (m))
#    define ms__cond_broadcast(c) pthread_cond_broadcast(c)
#  endif

/* A fixed pool: n_workers - 1 threads plus the calling thread. Work items
   are handed out by a shared counter, so uneven rows balance themselves. */
typedef struct ms__pool {
  ms__thread threads[MS__MAX_WORKERS];
  int32_t n_threads;
  ms__mutex mu;
  ms__cond wake, done;
  uint64_t generation;
  int stop;
  int32_t n_items, finished;
  int32_t next;           /* claimed with ms__fetch_add */
  ms_task_fn fn;
  void *ctx;
} ms__pool;

typedef struct ms__pool_arg { ms__pool *pool; int32_t worker; } ms__pool_arg;

/* Work items are claimed with an atomic counter: a contended mutex would
   put the losing thread to sleep in the kernel for every row. */
#  if defined(_MSC_VER) && !defined(__clang__)
#    define ms__fetch_add(p) (InterlockedIncrement((volatile LONG *)(p)) - 1)
#  else
#    define ms__fetch_add(p) __atomic_fetch_add((p), 1, __ATOMIC_RELAXED)
#  endif
MS__PRIVATE void ms__pool_work(ms__pool *p, int32_t worker) {
  for (;;) {
    int32_t i = ms__fetch_add(&p->next);
    if (i >= p->n_items) return;
    p->fn(p->ctx, i, worker);
  }
}

#  if defined(_WIN32)
static DWORD WINAPI ms__pool_main(LPVOID raw)
#  else
static void *ms__pool_main(void *raw)
#  endif
{
  ms__pool_arg *a = (ms__pool_arg *)raw;
  ms__pool *p = a->pool;
  uint64_t seen = 0;
  for (;;) {
    ms__lock(&p->mu);
    while (!p->stop && p->generation == seen) ms__cond_wait(&p->wake, &p->mu);
    if (p->stop) { ms__unlock(&p->mu); break; }
    seen = p->generation;
    ms__unlock(&p->mu);
    ms__pool_work(p, a->worker);
    ms__lock(&p->mu);
    if (++p->finished == p->n_threads) ms__cond_broadcast(&p->done);
    ms__unlock(&p->mu);
  }
  return 0;
}
#endif /* MYSAMPLE_THREADS */

struct ms_sampler {
  int32_t max_vocab;
  int32_t n_workers;
  const ms__kernels *K;
  ms_parallel_for_fn parallel_for;
  void *parallel_user;
  ms__ws **ws;
  void *owned;
#if defined(MYSAMPLE_THREADS)
  ms__pool *pool;
  ms__pool_arg *pool_args;
#endif
};

/* DRY's scratch: max_history entries, max_vocab when unset. */
MS__PRIVATE int32_t ms__hist_cap(const ms_sampler_desc *d) {
  return d->max_history > 0 ? d->max_history : d->max_vocab;
}

MSDEF size_t ms_sampler_size(const ms_sampler_desc *d) {
  int32_t nw;
  size_t s, ws;
  if (!d || d->max_vocab < 1 || d->max_vocab > (1 << 28) || d->n_workers < 0 || d->n_workers > MS__MAX_WORKERS ||
      d->max_history < 0 || d->max_history > (1 << 28)) return 0;
  nw = d->n_workers ? d->n_workers : 1;
  /* 0 as well when the size does not fit in a size_t (32-bit targets):
     a wrapped size would have had init lay the workspaces out past the block */
  ws = ms__ws_size(d->max_vocab, ms__hist_cap(d));
  if (!ws) return 0;
  s = ms__align_up(sizeof(ms_sampler), 64) + ms__align_up((size_t)nw * sizeof(ms__ws *), 64);
  s = ms__size_add(s, (size_t)nw, ws, 64);
#if defined(MYSAMPLE_THREADS)
  s = ms__size_add(s, 1, sizeof(ms__pool), 64);
  s = ms__size_add(s, 1, (size_t)nw * sizeof(ms__pool_arg), 64);
#endif
  return ms__size_add(s, 1, 64, 64); /* room to align the caller's block */
}

MSDEF ms_result ms_sampler_init(ms_sampler **out, const ms_sampler_desc *d, void *mem, size_t bytes) {
  size_t need;
  char *p;
  ms_sampler *s;
  int32_t i, nw;
  if (!out || !d || !mem) return MS_ERR_NULL_ARGUMENT;
  *out = NULL;
  if (d->max_vocab < 1 || d->max_vocab > (1 << 28)) return MS_ERR_BAD_VOCAB;
  need = ms_sampler_size(d);
  if (!need) return MS_ERR_INVALID_PARAM;
  if (bytes < need) return MS_ERR_WORKSPACE_TOO_SMALL;
#if !defined(MYSAMPLE_THREADS)
  if (d->use_builtin_pool) return MS_ERR_UNSUPPORTED;
#endif
  nw = d->n_workers ? d->n_workers : 1;
  p = (char *)(((uintptr_t)mem + 63) & ~(uintptr_t)63);
  s = (ms_sampler *)p; p += ms__align_up(sizeof(ms_sampler), 64);
  memset(s, 0, sizeof *s);
  s->max_vocab = d->max_vocab;
  s->n_workers = nw;
  s->K = ms__pick_kernels();
  s->parallel_for = d->parallel_for;
  s->parallel_user = d->parallel_user;
  s->ws = (ms__ws **)p; p += ms__align_up((size_t)nw * sizeof(ms__ws *), 64);
  for (i = 0; i < nw; i++) {
    s->ws[i] = ms__ws_layout(p, d->max_vocab, ms__hist_cap(d));
    p += ms__align_up(ms__ws_size(d->max_vocab, ms__hist_cap(d)), 64);
  }
#if defined(MYSAMPLE_THREADS)
  s->pool = NULL;
  if (d->use_builtin_pool && nw > 1) {
    ms__pool *pl = (ms__pool *)p;
    p += ms__align_up(sizeof(ms__pool), 64);
    s->pool_args = (ms__pool_arg *)p;
    memset(pl, 0, sizeof *pl);
    if (ms__mutex_init(&pl->mu) != 0) return MS_ERR_THREADS;
    if (ms__cond_init(&pl->wake) != 0 || ms__cond_init(&pl->done) != 0) { ms__mutex_destroy(&pl->mu); return MS_ERR_THREADS; }
    for (i = 1; i < nw; i++) {
      int ok;
      s->pool_args[i].pool = pl;
      s->pool_args[i].worker = i;
#  if defined(_WIN32)
      pl->threads[i - 1] = CreateThread(NULL, 0, ms__pool_main, &s->pool_args[i], 0, NULL);
      ok = pl->threads[i - 1] != NULL;
#  else
      ok = pthread_create(&pl->threads[i - 1], NULL, ms__pool_main, &s->pool_args[i]) == 0;
#  endif
      if (!ok) { s->pool = pl; pl->n_threads = i - 1; ms_sampler_destroy(s); return MS_ERR_THREADS; }
    }
    pl->n_threads = nw - 1;
    s->pool = pl;
  }
#endif
  *out = s;
  return MS_OK;
}

MSDEF ms_result ms_sampler_create(ms_sampler **out, const ms_sampler_desc *d) {
  size_t need;
  void *mem;
  ms_result rc;
  if (!out || !d) return MS_ERR_NULL_ARGUMENT;
  *out = NULL;
  if (d->max_vocab < 1 || d->max_vocab > (1 << 28)) return MS_ERR_BAD_VOCAB;
  need = ms_sampler_size(d);
  if (!need) return MS_ERR_INVALID_PARAM;
  mem = MYSAMPLE_MALLOC(need, NULL);
  if (!mem) return MS_ERR_OUT_OF_MEMORY;
  rc = ms_sampler_init(out, d, mem, need);
  if (rc != MS_OK) { MYSAMPLE_FREE(mem, NULL); return rc; }
  (*out)->owned = mem;
  return MS_OK;
}

MSDEF void ms_sampler_destroy(ms_sampler *s) {
  if (!s) return;
#if defined(MYSAMPLE_THREADS)
  if (s->pool) {
    ms__pool *pl = s->pool;
    int32_t i;
    ms__lock(&pl->mu);
    pl->stop = 1;
    ms__cond_broadcast(&pl->wake);
    ms__unlock(&pl->mu);
    for (i = 0; i < pl->n_threads; i++) {
#  if defined(_WIN32)
      WaitForSingleObject(pl->threads[i], INFINITE);
      CloseHandle(pl->threads[i]);
#  else
      pthread_join(pl->threads[i], NULL);
#  endif
    }
    ms__cond_destroy(&pl->wake);
    ms__cond_destroy(&pl->done);
    ms__mutex_destroy(&pl->mu);
    s->pool = NULL;
  }
#endif
  if (s->owned) MYSAMPLE_FREE(s->owned, NULL);
}

MSDEF const char *ms_sampler_simd(const ms_sampler *s) { return s ? s->K->name : "none"; }

MSDEF double ms_floor_pass(const ms_sampler *s, const float *x, int32_t n, int softmax) {
  if (!s || !x || n < 1) return 0.0;
  return softmax ? s->K->floor_softmax(x, n) : (double)s->K->floor_max(x, n);
}

/* Checks everything a row needs before any work; NULL msg is fine. */
MS__PRIVATE ms_result ms__row_check(const ms_sampler *s, const float *logits, int32_t V,
                                    const ms_params *p, const ms_seq *seq) {
  ms_result rc;
  if (!s || !logits || !p) return MS_ERR_NULL_ARGUMENT;
  if (V < 1 || V > s->max_vocab) return MS_ERR_BAD_VOCAB;
  rc = ms_params_validate(p, V, NULL, 0);
  if (rc != MS_OK) return rc;
  (void)seq;
  return MS_OK;
}

/* ms_score's row: the token checked, and logprobs -1 read as 0 (the
   token's logprob and rank are what a score is for). */
MS__PRIVATE ms_result ms__score_row(ms__ws *w, const ms__kernels *K, const float *logits, int32_t V, const ms_params *p,
                                    const ms_seq *seq, int32_t token, ms_output *out) {
  ms_params q;
  if (token < 0 || token >= V) return MS_ERR_TOKEN_OUT_OF_RANGE;
  if (p->logprobs < 0) { q = *p; q.logprobs = 0; p = &q; }
  return ms__row_run(w, K, logits, V, p, seq, out, NULL, token);
}

/* ms_sample (scoring 0) and ms_score: one row on worker 0. */
MS__PRIVATE ms_result ms__one_row(ms_sampler *s, const float *logits, int32_t V, const ms_params *p, const ms_seq *seq,
                                  int scoring, int32_t token, ms_output *out) {
  ms_result rc;
  if (!out) return MS_ERR_NULL_ARGUMENT;
  out->token = -1;
  rc = ms__row_check(s, logits, V, p, seq);
  if (rc == MS_OK) rc = scoring ? ms__score_row(s->ws[0], s->K, logits, V, p, seq, token, out)
                                : ms__row_run(s->ws[0], s->K, logits, V, p, seq, out, NULL, -1);
  if (rc != MS_OK) out->token = -1;
  return rc;
}

MSDEF ms_result ms_sample(ms_sampler *s, const float *logits, int32_t V, const ms_params *p,
                          const ms_seq *seq, ms_output *out) {
  return ms__one_row(s, logits, V, p, seq, 0, -1, out);
}

MSDEF ms_result ms_score(ms_sampler *s, const float *logits, int32_t V, const ms_params *p, const ms_seq *seq,
                         int32_t token, ms_output *out) {
  return ms__one_row(s, logits, V, p, seq, 1, token, out);
}

MSDEF ms_result ms_probs(ms_sampler *s, const float *logits, int32_t V, const ms_params *p,
                         const ms_seq *seq, float *probs) {
  ms_result rc;
  if (!probs) return MS_ERR_NULL_ARGUMENT;
  rc = ms__row_check(s, logits, V, p, seq);
  if (rc != MS_OK) return rc;
  return ms__row_run(s->ws[0], s->K, logits, V, p, seq, NULL, probs, -1);
}

/* Each worker notes its first (lowest) failing row and that row's code
   in its own slot: the call's code then needs no second run of the row
   (which ran a logits hook twice) and no atomics. */
typedef struct ms__batch_ctx {
  ms_sampler *s;
  const ms_batch *b;
  int32_t bad_row[MS__MAX_WORKERS];
  ms_result bad_rc[MS__MAX_WORKERS];
} ms__batch_ctx;

MS__PRIVATE void ms__batch_row(void *raw, int32_t r, int32_t worker) {
  ms__batch_ctx *c = (ms__batch_ctx *)raw;
  const ms_batch *b = c->b;
  const ms_seq *seq = b->seqs ? b->seqs[r] : NULL;
  const float *x = b->logits + (size_t)r * b->row_stride;
  ms_output *out = &b->out[r];
  ms_result rc;
  out->token = -1;
  rc = ms__row_check(c->s, x, b->vocab, b->params[r], seq);
  if (rc == MS_OK && b->tokens) rc = ms__score_row(c->s->ws[worker], c->s->K, x, b->vocab, b->params[r], seq, b->tokens[r], out);
  else if (rc == MS_OK) rc = ms__row_run(c->s->ws[worker], c->s->K, x, b->vocab, b->params[r], seq, out, NULL, -1);
  if (rc != MS_OK) {
    out->token = -1;
    if (r < c->bad_row[worker]) { c->bad_row[worker] = r; c->bad_rc[worker] = rc; }
  }
  if (b->row_results) b->row_results[r] = rc;
}

MSDEF ms_result ms_sample_batch(ms_sampler *s, const ms_batch *b) {
  ms__batch_ctx ctx;
  int32_t r, wk, bad = INT32_MAX;
  ms_result rc = MS_OK;
  if (!s || !b || !b->logits || !b->params || !b->out) return MS_ERR_NULL_ARGUMENT;
  if (b->n_rows < 0) return MS_ERR_INVALID_PARAM;
  if (b->vocab < 1 || b->vocab > s->max_vocab) return MS_ERR_BAD_VOCAB;
  if (b->row_stride < (size_t)b->vocab) return MS_ERR_INVALID_PARAM;
  for (r = 0; r < b->n_rows; r++) if (!b->params[r]) return MS_ERR_NULL_ARGUMENT;
  ctx.s = s; ctx.b = b;
  for (wk = 0; wk < s->n_workers && wk < MS__MAX_WORKERS; wk++) { ctx.bad_row[wk] = INT32_MAX; ctx.bad_rc[wk] = MS_OK; }
  if (s->parallel_for && s->n_workers > 1 && b->n_rows > 1) {
    s->parallel_for(s->parallel_user, b->n_rows, ms__batch_row, &ctx);
  }
#if defined(MYSAMPLE_THREADS)
  else if (s->pool && b->n_rows > 1) {
    ms__pool *pl = s->pool;
    ms__lock(&pl->mu);
    pl->fn = ms__batch_row; pl->ctx = &ctx; pl->n_items = b->n_rows; pl->next = 0; pl->finished = 0;
    pl->generation++;
    ms__cond_broadcast(&pl->wake);
    ms__unlock(&pl->mu);
    ms__pool_work(pl, 0);
    ms__lock(&pl->mu);
    while (pl->finished < pl->n_threads) ms__cond_wait(&pl->done, &pl->mu);
    ms__unlock(&pl->mu);
  }
#endif
  else {
    for (r = 0; r < b->n_rows; r++) ms__batch_row(&ctx, r, 0);
  }
  /* the first failing row's code, after every row ran (the workers' own
     notes: the calls are done, so their writes are seen) */
  for (wk = 0; wk < s->n_workers && wk < MS__MAX_WORKERS; wk++)
    if (ctx.bad_row[wk] < bad) { bad = ctx.bad_row[wk]; rc = ctx.bad_rc[wk]; }
  return rc;
}
