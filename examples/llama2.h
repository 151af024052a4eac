/* llama2.h - loads llama2.c checkpoints (model.bin + tokenizer.bin) and
   runs their forward pass on the CPU, so the example server can serve a
   real small transformer (e.g. the TinyStories 15M/42M/110M models).

   File formats (facts of Karpathy's llama2.c "legacy" export, version 0):
   model.bin   7 little-endian int32: dim, hidden_dim, n_layers, n_heads,
               n_kv_heads, vocab_size, seq_len. A negative vocab_size means
               the classifier has its own weights (|vocab_size| is the
               vocabulary); otherwise it shares the embedding table. Then
               float32 arrays, in this order: token embedding [vocab][dim],
               rms_att [L][dim], wq [L][dim][dim], wk [L][kv_dim][dim],
               wv [L][kv_dim][dim], wo [L][dim][dim], rms_ffn [L][dim],
               w1 [L][hidden][dim], w2 [L][dim][hidden], w3 [L][hidden][dim],
               rms_final [dim], two unused RoPE tables of seq_len*head/2
               floats each, then (unshared only) wcls [vocab][dim].
               kv_dim = dim * n_kv_heads / n_heads, head = dim / n_heads.
   tokenizer.bin  int32 max_token_length, then per token: float32 score,
               int32 length, bytes. Ids 1 and 2 are BOS and EOS; pieces of
               the form <0xHH> are raw bytes; sentencepiece's word marker
               is already a space in the pieces.

   Forward pass (LLaMA): RMSNorm (eps 1e-5) -> q,k,v -> rotary position
   embedding on pairs (2i, 2i+1) with frequency 10000^(-(2i mod head)/head)
   -> causal multi-head attention with grouped k/v heads over a per-sequence
   cache -> wo -> residual -> RMSNorm -> SwiGLU (w2(silu(w1 x) * w3 x))
   -> residual; final RMSNorm and classifier.

   All input is checked: header ranges, size overflow, exact file size,
   tokenizer lengths. C99 + libc; functions are static (include in one
   file). Thread safety: a loaded model is read-only; each l2_state
   belongs to one thread at a time, so different sequences can run their
   forward passes in parallel. */
#ifndef EXAMPLES_LLAMA2_H
#define EXAMPLES_LLAMA2_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#if defined(__GNUC__) || defined(__clang__)
#  define L2_FN static __attribute__((unused))
#else
#  define L2_FN static
#endif

#define L2_BOS 1
#define L2_EOS 2

typedef struct l2_config {
  int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
} l2_config;

typedef struct l2_model {
  l2_config c;           /* vocab_size made positive */
  int shared_classifier;
  float *data;           /* the whole weight payload */
  const float *emb, *rms_att, *wq, *wk, *wv, *wo, *rms_ffn, *w1, *w2, *w3, *rms_final, *wcls;
  int32_t kv_dim, head;
} l2_model;

typedef struct l2_state {
  float *x, *xb, *xb2, *hb, *hb2, *q, *att, *kcache, *vcache;
  int32_t pos;           /* tokens in the cache */
} l2_state;

typedef struct l2_tokenizer {
  int32_t vocab;
  int32_t max_len;
  int32_t max_piece;     /* the longest piece in bytes (max_len is the file's unchecked claim) */
  float *score;
  int32_t *off;          /* vocab + 1 */
  unsigned char *bytes;
  int32_t *sorted;       /* ids sorted by piece, for lookup */
  unsigned char byte_piece[256];  /* byte_piece[b] == b: what a <0xHH> piece points at */
  int32_t byte_id[256];  /* id of <0xHH>, -1 when absent */
} l2_tokenizer;

static void l2__err(char *err, size_t n, const char *fmt, const char *a) {
  if (err && n) snprintf(err, n, fmt, a);
}

static int l2__read_file(const char *path, unsigned char **buf, size_t *len, size_t max, char *err, size_t errsz) {
  FILE *f = fopen(path, "rb");
  long sz;
  *buf = NULL; *len = 0;
  if (!f) { l2__err(err, errsz, "cannot open %s", path); return -1; }
  if (fseek(f, 0, SEEK_END) != 0 || (sz = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f); l2__err(err, errsz, "cannot size %s", path); return -1;
  }
  if ((unsigned long)sz > max) { fclose(f); l2__err(err, errsz, "%s is too large", path); return -1; }
  *buf = (unsigned char *)malloc((size_t)sz + 1);
  if (!*buf) { fclose(f); l2__err(err, errsz, "out of memory reading %s", path); return -1; }
  if (fread(*buf, 1, (size_t)sz, f) != (size_t)sz) {
    fclose(f); free(*buf); *buf = NULL; l2__err(err, errsz, "cannot read %s", path); return -1;
  }
  fclose(f);
  *len = (size_t)sz;
  return 0;
}

static int32_t l2__i32(const unsigned char *p) {
  uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
  return (int32_t)v;
}
static float l2__f32(const unsigned char *p) {
  uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
  float f;
  memcpy(&f, &v, sizeof f);
  return f;
}

L2_FN void l2_model_free(l2_model *m) { if (m) { free(m->data); free(m); } }

/* Loads model.bin. Returns 0 and *out, or -1 with a message in err. */
L2_FN int l2_model_load(l2_model **out, const char *path, char *err, size_t errsz) {
  unsigned char *buf;
  size_t len, need, i;
  l2_model *m;
  l2_config c;
  uint64_t L, D, H, KV, V, S, hs;
  float *w;
  *out = NULL;
  if (l2__read_file(path, &buf, &len, (size_t)1 << 40 > (size_t)-1 ? (size_t)-1 : (size_t)1 << 40, err, errsz)) return -1;
  if (len < 28) { free(buf); l2__err(err, errsz, "%s: too short for a llama2.c header", path); return -1; }
  c.dim = l2__i32(buf); c.hidden_dim = l2__i32(buf + 4); c.n_layers = l2__i32(buf + 8);
  c.n_heads = l2__i32(buf + 12); c.n_kv_heads = l2__i32(buf + 16); c.vocab_size = l2__i32(buf + 20);
  c.seq_len = l2__i32(buf + 24);
  if (c.dim <= 0 || c.dim > 65536 || c.hidden_dim <= 0 || c.hidden_dim > 262144 || c.n_layers <= 0 ||
      c.n_layers > 1024 || c.n_heads <= 0 || c.n_heads > c.dim || c.n_kv_heads <= 0 ||
      c.n_kv_heads > c.n_heads || c.vocab_size == 0 || c.vocab_size < -(1 << 22) || c.vocab_size > (1 << 22) ||
      c.seq_len <= 0 || c.seq_len > (1 << 20) || c.dim % c.n_heads != 0 || c.n_heads % c.n_kv_heads != 0 ||
      (c.dim / c.n_heads) % 2 != 0) {
    free(buf); l2__err(err, errsz, "%s: not a llama2.c checkpoint (bad header)", path); return -1;
  }
  m = (l2_model *)calloc(1, sizeof *m);
  if (!m) { free(buf); l2__err(err, errsz, "%s: out of memory", path); return -1; }
  m->shared_classifier = c.vocab_size > 0;
  if (c.vocab_size < 0) c.vocab_size = -c.vocab_size;
  m->c = c;
  m->head = c.dim / c.n_heads;
  m->kv_dim = c.dim / c.n_heads * c.n_kv_heads;
  L = (uint64_t)c.n_layers; D = (uint64_t)c.dim; H = (uint64_t)c.hidden_dim; KV = (uint64_t)m->kv_dim;
  V = (uint64_t)c.vocab_size; S = (uint64_t)c.seq_len; hs = (uint64_t)m->head;
  /* every factor is bounded above, so these products fit in 64 bits */
  {
    uint64_t n = V * D + L * D + L * D * D + 2 * L * D * KV + L * D * D + L * D + 3 * L * D * H + D +
                 S * hs + (m->shared_classifier ? 0 : V * D);
    if (n > ((uint64_t)1 << 40) || (size_t)n != n || (len - 28) / 4 != n || (len - 28) % 4 != 0) {
      free(buf); free(m);
      l2__err(err, errsz, "%s: file size does not match its header", path);
      return -1;
    }
    need = (size_t)n;
  }
  m->data = (float *)malloc(need * sizeof(float));
  if (!m->data) { free(buf); free(m); l2__err(err, errsz, "%s: out of memory", path); return -1; }
  for (i = 0; i < need; i++) m->data[i] = l2__f32(buf + 28 + 4 * i);
  free(buf);
  w = m->data;
  m->emb = w; w += V * D;
  m->rms_att = w; w += L * D;
  m->wq = w; w += L * D * D;
  m->wk = w; w += L * D * KV;
  m->wv = w; w += L * D * KV;
  m->wo = w; w += L * D * D;
  m->rms_ffn = w; w += L * D;
  m->w1 = w; w += L * D * H;
  m->w2 = w; w += L * D * H;
  m->w3 = w; w += L * D * H;
  m->rms_final = w; w += D;
  w += S * hs; /* the two legacy RoPE tables: recomputed, not read */
  m->wcls = m->shared_classifier ? m->emb : w;
  *out = m;
  return 0;
}

L2_FN void l2_state_free(l2_state *s) {
  if (!s) return;
  free(s->x); free(s->xb); free(s->xb2); free(s->hb); free(s->hb2); free(s->q);
  free(s->att); free(s->kcache); free(s->vcache);
  free(s);
}

/* A sequence's buffers and k/v cache (2 * n_layers * seq_len * kv_dim
   floats). NULL when out of memory. */
L2_FN l2_state *l2_state_new(const l2_model *m) {
  const l2_config *c = &m->c;
  size_t cache = (size_t)c->n_layers * (size_t)c->seq_len * (size_t)m->kv_dim;
  l2_state *s = (l2_state *)calloc(1, sizeof *s);
  if (!s) return NULL;
  s->x = (float *)calloc((size_t)c->dim, sizeof(float));
  s->xb = (float *)calloc((size_t)c->dim, sizeof(float));
  s->xb2 = (float *)calloc((size_t)c->dim, sizeof(float));
  s->hb = (float *)calloc((size_t)c->hidden_dim, sizeof(float));
  s->hb2 = (float *)calloc((size_t)c->hidden_dim, sizeof(float));
  s->q = (float *)calloc((size_t)c->dim, sizeof(float));
  s->att = (float *)calloc((size_t)c->n_heads * (size_t)c->seq_len, sizeof(float));
  s->kcache = (float *)calloc(cache, sizeof(float));
  s->vcache = (float *)calloc(cache, sizeof(float));
  if (!s->x || !s->xb || !s->xb2 || !s->hb || !s->hb2 || !s->q || !s->att || !s->kcache || !s->vcache) {
    l2_state_free(s);
    return NULL;
  }
  return s;
}

static void l2__rmsnorm(float *o, const float *x, const float *w, int32_t n) {
  double ss = 0;
  float scale;
  int32_t i;
  for (i = 0; i < n; i++) ss += (double)x[i] * x[i];
  scale = (float)(1.0 / sqrt(ss / n + 1e-5));
  for (i = 0; i < n; i++) o[i] = w[i] * (scale * x[i]);
}

/* o[r] = sum_k W[r][k] x[k], W row-major [rows][n]. */
static void l2__matvec(float *o, const float *x, const float *W, int32_t n, int32_t rows) {
  int32_t r, k;
  for (r = 0; r < rows; r++) {
    const float *row = W + (size_t)r * (size_t)n;
    float a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (k = 0; k + 4 <= n; k += 4) {
      a0 += row[k] * x[k]; a1 += row[k + 1] * x[k + 1];
      a2 += row[k + 2] * x[k + 2]; a3 += row[k + 3] * x[k + 3];
    }
    for (; k < n; k++) a0 += row[k] * x[k];
    o[r] = (a0 + a1) + (a2 + a3);
  }
}

/* Runs token at the sequence's next position. When logits is non-NULL it
   receives vocab floats (prompt tokens before the last can pass NULL and
   skip the classifier). Returns 0, or -1 when the token is out of range
   or the cache is full (seq_len tokens). */
L2_FN int l2_forward(const l2_model *m, l2_state *s, int32_t token, float *logits) {
  const l2_config *c = &m->c;
  const int32_t D = c->dim, KV = m->kv_dim, hs = m->head, H = c->hidden_dim, S = c->seq_len;
  const int32_t group = c->n_heads / c->n_kv_heads;
  const int32_t pos = s->pos;
  int32_t l, i, h, t;
  if (token < 0 || token >= c->vocab_size || pos >= S) return -1;
  memcpy(s->x, m->emb + (size_t)token * (size_t)D, (size_t)D * sizeof(float));
  for (l = 0; l < c->n_layers; l++) {
    size_t lo = (size_t)l * (size_t)S * (size_t)KV;
    float *kpos = s->kcache + lo + (size_t)pos * (size_t)KV;
    float *vpos = s->vcache + lo + (size_t)pos * (size_t)KV;
    l2__rmsnorm(s->xb, s->x, m->rms_att + (size_t)l * D, D);
    l2__matvec(s->q, s->xb, m->wq + (size_t)l * D * D, D, D);
    l2__matvec(kpos, s->xb, m->wk + (size_t)l * D * KV, D, KV);
    l2__matvec(vpos, s->xb, m->wv + (size_t)l * D * KV, D, KV);
    /* rotary embedding, pair by pair */
    for (i = 0; i < D; i += 2) {
      float freq = 1.0f / powf(10000.0f, (float)(i % hs) / (float)hs);
      float ang = (float)pos * freq, co = cosf(ang), si = sinf(ang);
      float a = s->q[i], b = s->q[i + 1];
      s->q[i] = a * co - b * si; s->q[i + 1] = a * si + b * co;
      if (i < KV) {
        a = kpos[i]; b = kpos[i + 1];
        kpos[i] = a * co - b * si; kpos[i + 1] = a * si + b * co;
      }
    }
    /* attention per head over positions 0..pos */
    for (h = 0; h < c->n_heads; h++) {
      const float *qh = s->q + (size_t)h * hs;
      float *att = s->att + (size_t)h * S;
      float mx = -INFINITY, sum = 0, inv;
      size_t koff = (size_t)(h / group) * (size_t)hs;
      float *out = s->xb + (size_t)h * hs;
      for (t = 0; t <= pos; t++) {
        const float *k = s->kcache + lo + (size_t)t * KV + koff;
        float d = 0;
        for (i = 0; i < hs; i++) d += qh[i] * k[i];
        att[t] = d / sqrtf((float)hs);
        if (att[t] > mx) mx = att[t];
      }
      for (t = 0; t <= pos; t++) { att[t] = expf(att[t] - mx); sum += att[t]; }
      inv = 1.0f / sum;
      memset(out, 0, (size_t)hs * sizeof(float));
      for (t = 0; t <= pos; t++) {
        const float *v = s->vcache + lo + (size_t)t * KV + koff;
        float a = att[t] * inv;
        for (i = 0; i < hs; i++) out[i] += a * v[i];
      }
    }
    l2__matvec(s->xb2, s->xb, m->wo + (size_t)l * D * D, D, D);
    for (i = 0; i < D; i++) s->x[i] += s->xb2[i];
    l2__rmsnorm(s->xb, s->x, m->rms_ffn + (size_t)l * D, D);
    l2__matvec(s->hb, s->xb, m->w1 + (size_t)l * D * H, D, H);
    l2__matvec(s->hb2, s->xb, m->w3 + (size_t)l * D * H, D, H);
    for (i = 0; i < H; i++) {
      float g = s->hb[i];
      s->hb[i] = g / (1.0f + expf(-g)) * s->hb2[i];
    }
    l2__matvec(s->xb, s->hb, m->w2 + (size_t)l * D * H, H, D);
    for (i = 0; i < D; i++) s->x[i] += s->xb[i];
  }
  s->pos = pos + 1;
  if (logits) {
    l2__rmsnorm(s->xb, s->x, m->rms_final, D);
    l2__matvec(logits, s->xb, m->wcls, D, c->vocab_size);
  }
  return 0;
}

/* ---- tokenizer -------------------------------------------------------- */
L2_FN void l2_tokenizer_free(l2_tokenizer *t) {
  if (!t) return;
  free(t->score); free(t->off); free(t->bytes); free(t->sorted); free(t);
}

static const l2_tokenizer *l2__sort_tok;
static int l2__cmp_piece(const void *x, const void *y) {
  const l2_tokenizer *t = l2__sort_tok;
  int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
  int32_t la = t->off[a + 1] - t->off[a], lb = t->off[b + 1] - t->off[b];
  int r = memcmp(t->bytes + t->off[a], t->bytes + t->off[b], (size_t)(la < lb ? la : lb));
  if (r) return r;
  if (la != lb) return la < lb ? -1 : 1;
  return a < b ? -1 : a > b;
}

static int l2__hex(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

/* Loads tokenizer.bin for a vocabulary of `vocab` pieces. */
L2_FN int l2_tokenizer_load(l2_tokenizer **out, const char *path, int32_t vocab, char *err, size_t errsz) {
  unsigned char *buf;
  size_t len, p = 4, total = 0;
  int32_t i;
  l2_tokenizer *t;
  *out = NULL;
  if (vocab <= 0 || vocab > (1 << 22)) { l2__err(err, errsz, "%s: bad vocabulary size", path); return -1; }
  if (l2__read_file(path, &buf, &len, (size_t)1 << 30, err, errsz)) return -1;
  t = (l2_tokenizer *)calloc(1, sizeof *t);
  if (!t || len < 4) goto bad;
  t->vocab = vocab;
  t->max_len = l2__i32(buf);
  t->score = (float *)malloc((size_t)vocab * sizeof(float));
  t->off = (int32_t *)malloc(((size_t)vocab + 1) * sizeof(int32_t));
  t->sorted = (int32_t *)malloc((size_t)vocab * sizeof(int32_t));
  t->bytes = (unsigned char *)malloc(len + 1);
  if (!t->score || !t->off || !t->sorted || !t->bytes) goto bad;
  for (i = 0; i < vocab; i++) {
    int32_t l;
    if (len - p < 8) goto bad;
    t->score[i] = l2__f32(buf + p);
    l = l2__i32(buf + p + 4);
    p += 8;
    if (l < 0 || (size_t)l > len - p) goto bad;
    t->off[i] = (int32_t)total;
    if (l > t->max_piece) t->max_piece = l;
    memcpy(t->bytes + total, buf + p, (size_t)l);
    total += (size_t)l; p += (size_t)l;
  }
  t->off[vocab] = (int32_t)total;
  for (i = 0; i < 256; i++) { t->byte_id[i] = -1; t->byte_piece[i] = (unsigned char)i; }
  for (i = 0; i < vocab; i++) {
    const unsigned char *s = t->bytes + t->off[i];
    int32_t l = t->off[i + 1] - t->off[i];
    t->sorted[i] = i;
    if (l == 6 && s[0] == '<' && s[1] == '0' && s[2] == 'x' && s[5] == '>' && l2__hex(s[3]) >= 0 && l2__hex(s[4]) >= 0) {
      int b = l2__hex(s[3]) * 16 + l2__hex(s[4]);
      if (t->byte_id[b] < 0) t->byte_id[b] = i;
    }
  }
  l2__sort_tok = t;   /* qsort has no context argument in C99; loading is single-threaded */
  qsort(t->sorted, (size_t)vocab, sizeof(int32_t), l2__cmp_piece);
  l2__sort_tok = NULL;
  free(buf);
  *out = t;
  return 0;
bad:
  free(buf);
  l2_tokenizer_free(t);
  l2__err(err, errsz, "%s: not a llama2.c tokenizer for this model", path);
  return -1;
}

/* The bytes token id stands for in output text: <0xHH> pieces become that
   byte, and a piece right after BOS loses its leading space (sentencepiece
   convention). BOS/EOS give "" here. Returns NULL for an out-of-range id. */
L2_FN const unsigned char *l2_piece(const l2_tokenizer *t, int32_t prev, int32_t id, int32_t *len) {
  const unsigned char *s;
  int32_t l;
  if (id < 0 || id >= t->vocab) { *len = 0; return NULL; }
  if (id == L2_BOS || id == L2_EOS) { *len = 0; return t->bytes; }
  s = t->bytes + t->off[id];
  l = t->off[id + 1] - t->off[id];
  if (l == 6 && s[0] == '<' && s[1] == '0' && s[2] == 'x' && s[5] == '>' && l2__hex(s[3]) >= 0 && l2__hex(s[4]) >= 0) {
    *len = 1;
    return t->byte_piece + (l2__hex(s[3]) * 16 + l2__hex(s[4]));
  }
  if (prev == L2_BOS && l > 0 && s[0] == ' ') { s++; l--; }
  *len = l;
  return s;
}

/* The raw piece of id (as stored), for logprob listings. */
L2_FN const unsigned char *l2_raw_piece(const l2_tokenizer *t, int32_t id, int32_t *len) {
  if (id < 0 || id >= t->vocab) { *len = 0; return NULL; }
  *len = t->off[id + 1] - t->off[id];
  return t->bytes + t->off[id];
}

static int32_t l2__lookup(const l2_tokenizer *t, const unsigned char *s, int32_t l) {
  int32_t lo = 0, hi = t->vocab - 1;
  while (lo <= hi) {
    int32_t mid = lo + (hi - lo) / 2, id = t->sorted[mid];
    int32_t lm = t->off[id + 1] - t->off[id];
    int r = memcmp(t->bytes + t->off[id], s, (size_t)(lm < l ? lm : l));
    if (r == 0) r = lm < l ? -1 : lm > l ? 1 : 0;
    if (r == 0) {
      /* first of equal pieces: walk left */
      while (mid > 0) {
        int32_t pid = t->sorted[mid - 1];
        if (t->off[pid + 1] - t->off[pid] != l || memcmp(t->bytes + t->off[pid], s, (size_t)l)) break;
        mid--;
      }
      return t->sorted[mid];
    }
    if (r < 0) lo = mid + 1; else hi = mid - 1;
  }
  return -1;
}

/* A candidate merge: the pieces at list nodes `at` and `right` into `id`. */
typedef struct l2__cand { float score; int32_t at, right, id; } l2__cand;

/* Heap order: the best score first, the leftmost of equal scores first (the
   order in which llama2.c's scan picks them). */
static int l2__cand_before(const l2__cand *a, const l2__cand *b) {
  return a->score > b->score || (a->score == b->score && a->at < b->at);
}
static void l2__heap_push(l2__cand *h, int32_t *n, l2__cand c) {
  int32_t i = (*n)++;
  while (i > 0) {
    int32_t p = (i - 1) / 2;
    if (!l2__cand_before(&c, &h[p])) break;
    h[i] = h[p];
    i = p;
  }
  h[i] = c;
}
static l2__cand l2__heap_pop(l2__cand *h, int32_t *n) {
  l2__cand top = h[0], last = h[--*n];
  int32_t i = 0;
  if (*n == 0) return top;
  for (;;) {
    int32_t k = 2 * i + 1;
    if (k >= *n) break;
    if (k + 1 < *n && l2__cand_before(&h[k + 1], &h[k])) k++;
    if (!l2__cand_before(&h[k], &last)) break;
    h[i] = h[k];
    i = k;
  }
  h[i] = last;
  return top;
}
static int32_t l2__plen(const l2_tokenizer *t, int32_t id) { return t->off[id + 1] - t->off[id]; }
/* Pushes the merge of nodes at and right when the vocabulary has it. */
static void l2__try_pair(const l2_tokenizer *t, const int32_t *tok, int32_t at, int32_t right, unsigned char *merged,
                         int32_t max_merged, l2__cand *h, int32_t *nh) {
  int32_t a = tok[at], b = tok[right], la = l2__plen(t, a), lb = l2__plen(t, b), id;
  if (la + lb > max_merged) return;
  memcpy(merged, t->bytes + t->off[a], (size_t)la);
  memcpy(merged + la, t->bytes + t->off[b], (size_t)lb);
  id = l2__lookup(t, merged, la + lb);
  if (id >= 0 && t->score[id] > -1e30f) {   /* llama2.c's scan starts from -1e30: lower (and NaN) never merge */
    l2__cand c;
    c.score = t->score[id]; c.at = at; c.right = right; c.id = id;
    l2__heap_push(h, nh, c);
  }
}

/* The whole text's ids (BOS first when bos) in a malloc'd array, *n_out
   their count. NULL with *n_out -1: out of memory; NULL with *n_out -2: the
   pieces before merging hold more than max_bytes bytes. */
static int32_t *l2__encode_all(const l2_tokenizer *t, const unsigned char *text, size_t len, int bos,
                               uint64_t max_bytes, int32_t *n_out) {
  int32_t n = 0, i, nh = 0, head, *ids = NULL, *tok, *prv, *nxt;
  int32_t max_merged = (t->max_len > 0 && t->max_len < (1 << 20) ? t->max_len : 64) * 2 + 16;
  uint64_t bytes = 0;
  size_t p = 0, cap;
  unsigned char *merged = NULL;
  l2__cand *h = NULL;
  *n_out = -1;
  if (len > (size_t)INT32_MAX / 4 - 8) return NULL;   /* the heap's int32 indices */
  cap = len + 2;   /* at most one piece per byte, plus the space */
  tok = (int32_t *)malloc(cap * 3 * sizeof(int32_t));
  if (!tok) return NULL;
  prv = tok + cap; nxt = prv + cap;
  if (len > 0) {
    int32_t id = l2__lookup(t, (const unsigned char *)" ", 1);
    if (id >= 0) { tok[n++] = id; bytes += (uint64_t)l2__plen(t, id); }
  }
  while (p < len) {
    size_t cl = 1, k;
    int32_t id;
    unsigned char c = text[p];
    if (c >= 0xC0) { while (p + cl < len && cl < 4 && (text[p + cl] & 0xC0) == 0x80) cl++; }
    id = l2__lookup(t, text + p, (int32_t)cl);
    if (id >= 0) { tok[n++] = id; bytes += (uint64_t)l2__plen(t, id); }
    else
      for (k = 0; k < cl; k++)
        if (t->byte_id[text[p + k]] >= 0) { tok[n++] = t->byte_id[text[p + k]]; bytes += (uint64_t)l2__plen(t, tok[n - 1]); }
    /* every final token is one piece, so it spans at most max_piece of these bytes */
    if (bytes > max_bytes) { free(tok); *n_out = -2; return NULL; }
    p += cl;
  }
  /* merges: a doubly linked list of the pieces and a heap of candidate pairs
     (O(n log n)). A merge keeps the left node and drops the right one; a
     candidate is stale when its nodes are no longer neighbours or either
     piece grew since (merged pieces are strictly longer, so the lengths
     tell) */
  merged = (unsigned char *)malloc((size_t)max_merged);
  h = (l2__cand *)malloc(((size_t)n * 3 + 1) * sizeof(l2__cand));
  ids = (int32_t *)malloc(((size_t)n + 1) * sizeof(int32_t));
  if (!merged || !h || !ids) { free(tok); free(merged); free(h); free(ids); return NULL; }
  for (i = 0; i < n; i++) { prv[i] = i - 1; nxt[i] = i + 1 < n ? i + 1 : -1; }
  for (i = 0; i + 1 < n; i++) l2__try_pair(t, tok, i, i + 1, merged, max_merged, h, &nh);
  while (nh > 0) {
    l2__cand c = l2__heap_pop(h, &nh);
    if (tok[c.at] < 0 || nxt[c.at] != c.right || l2__plen(t, tok[c.at]) + l2__plen(t, tok[c.right]) != l2__plen(t, c.id))
      continue;
    tok[c.at] = c.id;
    tok[c.right] = -1;
    nxt[c.at] = nxt[c.right];
    if (nxt[c.at] >= 0) prv[nxt[c.at]] = c.at;
    if (prv[c.at] >= 0) l2__try_pair(t, tok, prv[c.at], c.at, merged, max_merged, h, &nh);
    if (nxt[c.at] >= 0) l2__try_pair(t, tok, c.at, nxt[c.at], merged, max_merged, h, &nh);
  }
  *n_out = 0;
  if (bos) ids[(*n_out)++] = L2_BOS;
  for (head = n > 0 ? 0 : -1; head >= 0; head = nxt[head]) ids[(*n_out)++] = tok[head];  /* node 0 is never dropped */
  free(tok); free(merged); free(h);
  return ids;
}

/* Encodes text like llama2.c: optional BOS, a leading space (sentencepiece's
   dummy prefix) when text is non-empty, one piece per UTF-8 character where
   the vocabulary has it (else its bytes as <0xHH> pieces, else skipped),
   then merges of adjacent pairs, the best score first and the leftmost of
   equal scores, until none applies. Writes the first cap ids of the whole
   text's encoding and returns their number. O(n log n) in len. */
L2_FN int32_t l2_encode(const l2_tokenizer *t, const unsigned char *text, size_t len, int bos,
                        int32_t *out, int32_t cap) {
  int32_t n, *ids;
  if (cap <= 0) return 0;
  ids = l2__encode_all(t, text, len, bos, UINT64_MAX, &n);
  if (!ids) { if (bos) out[0] = L2_BOS; return bos ? 1 : 0; }
  if (n > cap) n = cap;
  memcpy(out, ids, (size_t)n * sizeof(int32_t));
  free(ids);
  return n;
}

/* Like l2_encode, for a prompt that must fit: returns the number of ids
   written (<= cap), cap + 1 when the text needs more than cap ids (then
   out's contents are unspecified; a text far too long is refused before it
   is merged), or -1 when out of memory. */
L2_FN int32_t l2_encode_fit(const l2_tokenizer *t, const unsigned char *text, size_t len, int bos,
                            int32_t *out, int32_t cap) {
  int32_t n, *ids, room = cap - (bos ? 1 : 0);
  if (cap < 0) return -1;
  if (room < 0) return cap + 1;
  ids = l2__encode_all(t, text, len, bos, (uint64_t)room * (uint64_t)(t->max_piece > 0 ? t->max_piece : 0), &n);
  if (!ids) return n == -2 ? cap + 1 : -1;
  if (n > cap) { free(ids); return cap + 1; }
  memcpy(out, ids, (size_t)n * sizeof(int32_t));
  free(ids);
  return n;
}

#endif /* EXAMPLES_LLAMA2_H */
