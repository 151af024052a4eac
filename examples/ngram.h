/* ngram.h - the server's embedded default model: a byte-level BPE token
   table and an interpolated Kneser-Ney trigram language model, both
   trained at start-up on a few KB of text (examples/data/corpus.txt).

   Why: the demo server must answer on a fresh machine with no download,
   with a real token table. Token ids 0..255 are the single bytes, 256 is
   <|endoftext|> (EOS; also the start-of-document context), 257.. are BPE
   merges learnt from the text. Pieces are bytes, not characters: a
   character such as "é" (2 bytes) or "🙂" (4 bytes) is often two or four
   tokens, so the server's text assembly has to hold back partial UTF-8
   sequences, and sampling at a high temperature can produce invalid UTF-8
   (a lone continuation byte), which it has to survive too.

   Model: P(w | u v) by interpolated absolute discounting (D = 0.75) over
   trigram counts, backing off to bigram continuation counts (the number
   of distinct left contexts a pair follows: Kneser-Ney), backing off to
   unigram continuation counts mixed with 1% uniform mass, so every token
   has a finite logit. ng_logits writes log P for the whole vocabulary.

   Everything is deterministic (integer counting, fixed tie rules), so two
   builds on any platform train the same model from the same text.

   C99, no dependencies. All functions are static: include it in the one
   file that uses it. Thread safety: after ng_train the model is read-only;
   ng_logits / ng_encode may run concurrently on one model. */
#ifndef EXAMPLES_NGRAM_H
#define EXAMPLES_NGRAM_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <stdio.h>

#if defined(__GNUC__) || defined(__clang__)
#  define NG_FN static __attribute__((unused))
#else
#  define NG_FN static
#endif

#define NG_EOS 256
#define NG_FIRST_MERGE 257
#define NG_MAX_VOCAB 2048      /* cap on the vocabulary the trainer may build */
#define NG_MAX_CHUNK 64        /* pre-tokenizer chunks are split at this many bytes */
#define NG_DISCOUNT 0.75f
#define NG_UNIFORM 0.01f

typedef struct ng_pair { uint32_t key; int32_t id; } ng_pair;       /* (a<<16|b) -> merged id */
typedef struct ng_ctx3 { uint32_t ctx; int32_t start, end, total; } ng_ctx3; /* trigram context (u<<16|v) */

typedef struct ng_model {
  int32_t vocab;
  int32_t n_merges;
  /* pieces */
  int32_t *piece_off;     /* vocab + 1 offsets into piece_bytes */
  unsigned char *piece_bytes;
  int32_t max_piece_len;
  /* merges sorted by key, for encoding */
  ng_pair *merges;
  /* unigram: dense probabilities */
  float *p1;
  /* bigram continuation counts: successors of v in bi_w/bi_c[bi_off[v] .. bi_off[v+1]) */
  int32_t *bi_off, *bi_w, *bi_c, *bi_total;
  /* trigram counts: contexts sorted by ctx, successors in tri_w/tri_c */
  ng_ctx3 *ctx3; int32_t n_ctx3;
  int32_t *tri_w, *tri_c;
  int32_t n_train_tokens;
} ng_model;

typedef struct ng_state { int32_t u, v; } ng_state;

/* ---- pre-tokenizer --------------------------------------------------- */
/* 0 word byte (letters, digits, any byte >= 0x80), 1 space, 2 other
   whitespace, 3 ASCII punctuation / control. */
static int ng__cls(unsigned char c) {
  if (c == ' ') return 1;
  if (c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f') return 2;
  if (c >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return 0;
  return 3;
}
/* Whether a new chunk starts at text[i] (i > 0); run = bytes in the current chunk. */
static int ng__boundary(const unsigned char *t, size_t i, size_t run) {
  int a = ng__cls(t[i - 1]), b = ng__cls(t[i]);
  if (run >= NG_MAX_CHUNK) return 1;
  if (b == 1 || b == 2 || a == 2 || a == 3) return 1;
  if (b == 3 && a != 1) return 1;
  return 0;
}

/* ---- helpers --------------------------------------------------------- */
static int ng__cmp_u32(const void *x, const void *y) {
  uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
  return a < b ? -1 : a > b;
}
static int ng__cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}
static int ng__cmp_pair(const void *x, const void *y) {
  return ng__cmp_u32(&((const ng_pair *)x)->key, &((const ng_pair *)y)->key);
}
static int32_t ng__merge_lookup(const ng_model *m, int32_t a, int32_t b) {
  uint32_t key = ((uint32_t)a << 16) | (uint32_t)b;
  int32_t lo = 0, hi = m->n_merges - 1;
  while (lo <= hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (m->merges[mid].key == key) return m->merges[mid].id;
    if (m->merges[mid].key < key) lo = mid + 1; else hi = mid - 1;
  }
  return -1;
}

NG_FN void ng_free(ng_model *m) {
  if (!m) return;
  free(m->piece_off); free(m->piece_bytes); free(m->merges); free(m->p1);
  free(m->bi_off); free(m->bi_w); free(m->bi_c); free(m->bi_total);
  free(m->ctx3); free(m->tri_w); free(m->tri_c);
  free(m);
}

NG_FN int32_t ng_vocab(const ng_model *m) { return m->vocab; }

/* The bytes of token id (len in *len); NULL for an id outside the vocab.
   EOS has the piece "<|endoftext|>" for logprob listings; callers do not
   print it as text. */
NG_FN const unsigned char *ng_piece(const ng_model *m, int32_t id, int32_t *len) {
  if (id < 0 || id >= m->vocab) { *len = 0; return NULL; }
  *len = m->piece_off[id + 1] - m->piece_off[id];
  return m->piece_bytes + m->piece_off[id];
}

/* Encodes one chunk (<= NG_MAX_CHUNK bytes) by BPE: repeatedly merges the
   adjacent pair with the lowest merge id (the earliest learnt). */
static int32_t ng__encode_chunk(const ng_model *m, const unsigned char *c, size_t n, int32_t *tok) {
  int32_t len = (int32_t)n, i;
  for (i = 0; i < len; i++) tok[i] = c[i];
  for (;;) {
    int32_t best = -1, best_at = -1;
    for (i = 0; i + 1 < len; i++) {
      int32_t id = ng__merge_lookup(m, tok[i], tok[i + 1]);
      if (id >= 0 && (best < 0 || id < best)) { best = id; best_at = i; }
    }
    if (best < 0) break;
    tok[best_at] = best;
    memmove(tok + best_at + 1, tok + best_at + 2, (size_t)(len - best_at - 2) * sizeof *tok);
    len--;
  }
  return len;
}

/* Encodes text into token ids. Writes at most cap ids to out (out may be
   NULL with cap 0) and returns how many the whole text needs (like
   snprintf). Work is O(len * NG_MAX_CHUNK * log merges): bounded. */
NG_FN int32_t ng_encode(const ng_model *m, const unsigned char *text, size_t len, int32_t *out, int32_t cap) {
  int32_t tmp[NG_MAX_CHUNK];
  int64_t total = 0;
  size_t start = 0, i;
  if (!text || len == 0) return 0;
  for (i = 1; i <= len; i++) {
    if (i == len || ng__boundary(text, i, i - start)) {
      int32_t k, n = ng__encode_chunk(m, text + start, i - start, tmp);
      for (k = 0; k < n; k++) {
        if (total < cap) out[total] = tmp[k];
        total++;
      }
      if (total > INT32_MAX / 2) return INT32_MAX / 2;
      start = i;
    }
  }
  return (int32_t)total;
}

NG_FN void ng_state_init(ng_state *s) { s->u = NG_EOS; s->v = NG_EOS; }
NG_FN void ng_state_push(ng_state *s, int32_t tok) { s->u = s->v; s->v = tok; }

/* log P(w | state) for every w in [0, vocab) into out. Read-only on m. */
NG_FN void ng_logits(const ng_model *m, const ng_state *s, float *out) {
  const float D = NG_DISCOUNT;
  int32_t V = m->vocab, w, k;
  float lam3 = 1.0f, lam2 = 1.0f;
  const ng_ctx3 *c3 = NULL;
  int32_t u = s->u, v = s->v;
  if (v < 0 || v >= V) v = NG_EOS;
  if (u < 0 || u >= V) u = NG_EOS;
  /* trigram context */
  {
    uint32_t key = ((uint32_t)u << 16) | (uint32_t)v;
    int32_t lo = 0, hi = m->n_ctx3 - 1;
    while (lo <= hi) {
      int32_t mid = lo + (hi - lo) / 2;
      if (m->ctx3[mid].ctx == key) { c3 = &m->ctx3[mid]; break; }
      if (m->ctx3[mid].ctx < key) lo = mid + 1; else hi = mid - 1;
    }
  }
  if (c3) lam3 = D * (float)(c3->end - c3->start) / (float)c3->total;
  if (m->bi_total[v] > 0) lam2 = D * (float)(m->bi_off[v + 1] - m->bi_off[v]) / (float)m->bi_total[v];
  {
    float l = lam3 * lam2;
    for (w = 0; w < V; w++) out[w] = l * m->p1[w];
  }
  if (m->bi_total[v] > 0) {
    float inv = lam3 / (float)m->bi_total[v];
    for (k = m->bi_off[v]; k < m->bi_off[v + 1]; k++) out[m->bi_w[k]] += ((float)m->bi_c[k] - D) * inv;
  }
  if (c3) {
    float inv = 1.0f / (float)c3->total;
    for (k = c3->start; k < c3->end; k++) out[m->tri_w[k]] += ((float)m->tri_c[k] - D) * inv;
  }
  for (w = 0; w < V; w++) out[w] = logf(out[w]);
}

/* ---- training -------------------------------------------------------- */
static void ng__seterr(char *err, size_t n, const char *msg) {
  if (err && n) { strncpy(err, msg, n - 1); err[n - 1] = 0; }
}

/* Trains the token table and the trigram model on text (any bytes; blank
   lines separate documents). target_vocab in [257, NG_MAX_VOCAB]; merges
   stop earlier when no pair occurs twice. Returns 0 and *out, or -1 with
   a message in err. Takes well under a second for tens of KB. */
NG_FN int ng_train(ng_model **out, const unsigned char *text, size_t len, int32_t target_vocab,
                   char *err, size_t errsz) {
  ng_model *m = NULL;
  int32_t *tok = NULL, *counts = NULL, (*mg)[2] = NULL;
  unsigned char *bnd = NULL;     /* 1: a chunk starts here; 2: a document starts here */
  uint64_t *keys = NULL;
  int32_t n, i, k, V, n_tri = 0;
  size_t j;
  *out = NULL;
  if (!text || len == 0) { ng__seterr(err, errsz, "training text is empty"); return -1; }
  if (len > (size_t)64 << 20) { ng__seterr(err, errsz, "training text is larger than 64 MiB"); return -1; }
  if (target_vocab < NG_FIRST_MERGE) target_vocab = NG_FIRST_MERGE;
  if (target_vocab > NG_MAX_VOCAB) target_vocab = NG_MAX_VOCAB;
  m = (ng_model *)calloc(1, sizeof *m);
  tok = (int32_t *)malloc(len * sizeof *tok);
  bnd = (unsigned char *)malloc(len);
  mg = (int32_t (*)[2])malloc((size_t)target_vocab * sizeof *mg);
  counts = (int32_t *)calloc((size_t)target_vocab * (size_t)target_vocab, sizeof *counts);
  if (!m || !tok || !bnd || !mg || !counts) goto oom;

  /* 1. Bytes with chunk and document boundaries. Documents are separated
        by blank lines; the newlines between them are not tokens. */
  n = 0;
  {
    size_t run = 0;
    int newdoc = 1;
    for (j = 0; j < len; j++) {
      unsigned char c = text[j];
      if (c == '\r') continue;
      if (c == '\n') {
        /* a blank line (or the end) after this newline ends the document */
        size_t t = j + 1;
        while (t < len && (text[t] == '\r' || text[t] == ' ' || text[t] == '\t')) t++;
        if (t >= len || text[t] == '\n') { newdoc = 1; j = t < len ? t : len; continue; }
      }
      if (newdoc && (c == ' ' || c == '\t' || c == '\n')) continue;
      tok[n] = c;
      if (newdoc) { bnd[n] = 2; run = 0; }
      else bnd[n] = (unsigned char)(ng__boundary(text, j, run) ? 1 : 0);
      if (bnd[n]) run = 0;
      run++;
      newdoc = 0;
      n++;
    }
  }
  if (n == 0) { ng__seterr(err, errsz, "training text has no content"); goto fail; }

  /* 2. BPE merges: the most frequent adjacent pair inside a chunk, ties to
        the smaller (a, b); stop when the best pair occurs once. */
  V = NG_FIRST_MERGE;
  while (V < target_vocab) {
    int32_t best = 0; uint32_t best_key = 0; int32_t a, b, w;
    for (i = 0; i + 1 < n; i++) {
      int32_t *c;
      if (bnd[i + 1]) continue;
      c = &counts[(size_t)tok[i] * (size_t)target_vocab + (size_t)tok[i + 1]];
      (*c)++;
      {
        uint32_t key = ((uint32_t)tok[i] << 16) | (uint32_t)tok[i + 1];
        if (*c > best || (*c == best && key < best_key)) { best = *c; best_key = key; }
      }
    }
    for (i = 0; i + 1 < n; i++) counts[(size_t)tok[i] * (size_t)target_vocab + (size_t)tok[i + 1]] = 0;
    if (best < 2) break;
    a = (int32_t)(best_key >> 16); b = (int32_t)(best_key & 0xffff);
    mg[V][0] = a; mg[V][1] = b;
    for (i = 0, w = 0; i < n; i++) {
      if (i + 1 < n && tok[i] == a && tok[i + 1] == b && !bnd[i + 1]) {
        tok[w] = V; bnd[w] = bnd[i]; w++; i++;
      } else { tok[w] = tok[i]; bnd[w] = bnd[i]; w++; }
    }
    n = w;
    V++;
  }
  free(counts); counts = NULL;
  m->vocab = V;
  m->n_merges = V - NG_FIRST_MERGE;
  m->n_train_tokens = n;

  /* 3. Pieces. */
  {
    int32_t total = 0;
    m->piece_off = (int32_t *)malloc(((size_t)V + 1) * sizeof(int32_t));
    if (!m->piece_off) goto oom;
    for (i = 0; i < V; i++) {
      int32_t l = i < 256 ? 1 : i == NG_EOS ? 13 :
                  (m->piece_off[mg[i][0] + 1] - m->piece_off[mg[i][0]]) + (m->piece_off[mg[i][1] + 1] - m->piece_off[mg[i][1]]);
      m->piece_off[i] = total;
      m->piece_off[i + 1] = total + l; /* provisional, fixed on the next pass */
      total += l;
    }
    m->piece_bytes = (unsigned char *)malloc((size_t)total + 1);
    if (!m->piece_bytes) goto oom;
    for (i = 0; i < V; i++) {
      unsigned char *p = m->piece_bytes + m->piece_off[i];
      if (i < 256) p[0] = (unsigned char)i;
      else if (i == NG_EOS) memcpy(p, "<|endoftext|>", 13);
      else {
        int32_t a = mg[i][0], b = mg[i][1];
        int32_t la = m->piece_off[a + 1] - m->piece_off[a];
        memcpy(p, m->piece_bytes + m->piece_off[a], (size_t)la);
        memcpy(p + la, m->piece_bytes + m->piece_off[b], (size_t)(m->piece_off[b + 1] - m->piece_off[b]));
      }
      if (m->piece_off[i + 1] - m->piece_off[i] > m->max_piece_len) m->max_piece_len = m->piece_off[i + 1] - m->piece_off[i];
    }
    m->merges = (ng_pair *)malloc(((size_t)m->n_merges + 1) * sizeof(ng_pair));
    if (!m->merges) goto oom;
    for (i = 0; i < m->n_merges; i++) {
      m->merges[i].key = ((uint32_t)mg[NG_FIRST_MERGE + i][0] << 16) | (uint32_t)mg[NG_FIRST_MERGE + i][1];
      m->merges[i].id = NG_FIRST_MERGE + i;
    }
    qsort(m->merges, (size_t)m->n_merges, sizeof(ng_pair), ng__cmp_pair);
  }

  /* 4. Trigrams: each document is [EOS EOS t1 .. tn EOS]. Keys pack
        u, v, w in 21 bits each (V <= 2048 fits). */
  {
    int32_t docs = 0, t = 0;
    for (i = 0; i < n; i++) if (bnd[i] == 2) docs++;
    keys = (uint64_t *)malloc(((size_t)n + (size_t)docs + 1) * sizeof *keys);
    if (!keys) goto oom;
    for (i = 0; i < n; i = k) {
      int32_t u = NG_EOS, v = NG_EOS;
      for (k = i; k < n && (k == i || bnd[k] != 2); k++) {
        keys[t++] = ((uint64_t)u << 42) | ((uint64_t)v << 21) | (uint64_t)tok[k];
        u = v; v = tok[k];
      }
      keys[t++] = ((uint64_t)u << 42) | ((uint64_t)v << 21) | (uint64_t)NG_EOS;
    }
    n_tri = t;
    qsort(keys, (size_t)n_tri, sizeof *keys, ng__cmp_u64);
  }
  {
    /* unique trigrams with counts; contexts */
    int32_t n_uni = 0, n_ctx = 0, a;
    uint32_t *bikeys;
    int32_t *cc1;
    m->tri_w = (int32_t *)malloc((size_t)n_tri * sizeof(int32_t));
    m->tri_c = (int32_t *)malloc((size_t)n_tri * sizeof(int32_t));
    m->ctx3 = (ng_ctx3 *)malloc((size_t)n_tri * sizeof(ng_ctx3));
    bikeys = (uint32_t *)malloc((size_t)n_tri * sizeof(uint32_t));
    if (!m->tri_w || !m->tri_c || !m->ctx3 || !bikeys) { free(bikeys); goto oom; }
    for (a = 0; a < n_tri; ) {
      int32_t b = a;
      uint64_t key = keys[a];
      uint32_t ctx;
      while (b < n_tri && keys[b] == key) b++;
      ctx = (uint32_t)(((key >> 42) & 0x1fffff) << 16 | ((key >> 21) & 0x1fffff));
      if (n_ctx == 0 || m->ctx3[n_ctx - 1].ctx != ctx) {
        m->ctx3[n_ctx].ctx = ctx; m->ctx3[n_ctx].start = n_uni; m->ctx3[n_ctx].end = n_uni;
        m->ctx3[n_ctx].total = 0; n_ctx++;
      }
      m->tri_w[n_uni] = (int32_t)(key & 0x1fffff);
      m->tri_c[n_uni] = b - a;
      m->ctx3[n_ctx - 1].end = n_uni + 1;
      m->ctx3[n_ctx - 1].total += b - a;
      /* bigram (v, w) gains one distinct left context */
      bikeys[n_uni] = (uint32_t)(((key >> 21) & 0x1fffff) << 16 | (key & 0x1fffff));
      n_uni++;
      a = b;
    }
    m->n_ctx3 = n_ctx;
    /* bigram continuation counts */
    qsort(bikeys, (size_t)n_uni, sizeof *bikeys, ng__cmp_u32);
    m->bi_off = (int32_t *)calloc((size_t)V + 1, sizeof(int32_t));
    m->bi_total = (int32_t *)calloc((size_t)V, sizeof(int32_t));
    m->bi_w = (int32_t *)malloc((size_t)n_uni * sizeof(int32_t));
    m->bi_c = (int32_t *)malloc((size_t)n_uni * sizeof(int32_t));
    cc1 = (int32_t *)calloc((size_t)V, sizeof(int32_t));
    m->p1 = (float *)malloc((size_t)V * sizeof(float));
    if (!m->bi_off || !m->bi_total || !m->bi_w || !m->bi_c || !cc1 || !m->p1) { free(bikeys); free(cc1); goto oom; }
    {
      int32_t nb = 0, b;
      int64_t s1 = 0;
      for (a = 0; a < n_uni; a = b) {
        int32_t v, w;
        b = a;
        while (b < n_uni && bikeys[b] == bikeys[a]) b++;
        v = (int32_t)(bikeys[a] >> 16); w = (int32_t)(bikeys[a] & 0xffff);
        m->bi_w[nb] = w; m->bi_c[nb] = b - a; nb++;
        m->bi_off[v + 1]++;
        m->bi_total[v] += b - a;
        cc1[w]++;
      }
      for (i = 0; i < V; i++) m->bi_off[i + 1] += m->bi_off[i];
      for (i = 0; i < V; i++) s1 += cc1[i];
      for (i = 0; i < V; i++)
        m->p1[i] = (1.0f - NG_UNIFORM) * (float)cc1[i] / (float)(s1 > 0 ? s1 : 1) + NG_UNIFORM / (float)V;
    }
    free(bikeys); free(cc1);
  }
  free(keys); free(tok); free(bnd); free(mg);
  *out = m;
  return 0;
oom:
  ng__seterr(err, errsz, "out of memory while training the n-gram model");
fail:
  free(keys); free(tok); free(bnd); free(mg); free(counts);
  ng_free(m);
  return -1;
}

#endif /* EXAMPLES_NGRAM_H */
