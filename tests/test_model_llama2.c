/* The llama2.c loader and forward pass (examples/llama2.h) against an
   independent reference: this test writes a tiny random checkpoint and
   tokenizer, loads them, runs the forward pass token by token (k/v cache,
   float) and compares the logits with a reference that recomputes the
   whole prefix from scratch in double precision, without a cache, with
   the rotary embedding written as a complex rotation. Also: shared and
   unshared classifiers, grouped k/v heads, malformed files, the BPE
   tokenizer. */
#include "testlib.h"
#include "../examples/llama2.h"
#include <stdlib.h>

typedef struct cfg { int dim, hidden, layers, heads, kv_heads, vocab, seq; int shared; } cfg;

static uint32_t rng_state = 12345u;
static float frand(void) { /* uniform in [-1, 1) */
  rng_state = rng_state * 1664525u + 1013904223u;
  return (float)((rng_state >> 8) / 8388608.0 - 1.0);
}

static const char *model_path = "build/tests/tiny_llama2_model.bin";
static const char *tok_path = "build/tests/tiny_llama2_tokenizer.bin";

static void put_i32(FILE *f, int32_t v) { unsigned char b[4]; b[0] = (unsigned char)v; b[1] = (unsigned char)(v >> 8); b[2] = (unsigned char)(v >> 16); b[3] = (unsigned char)(v >> 24); fwrite(b, 1, 4, f); }
static void put_f32(FILE *f, float x) { uint32_t v; memcpy(&v, &x, 4); put_i32(f, (int32_t)v); }

/* weights in file order, kept for the reference */
typedef struct ref { cfg c; float *emb, *rms_att, *wq, *wk, *wv, *wo, *rms_ffn, *w1, *w2, *w3, *rms_final, *wcls; } ref;

static float *fill(FILE *f, size_t n, float scale, float offset) {
  float *p = (float *)malloc(n * sizeof(float));
  size_t i;
  for (i = 0; i < n; i++) { p[i] = offset + scale * frand(); if (f) put_f32(f, p[i]); }
  return p;
}

static int write_model(const char *path, cfg c, ref *r) {
  FILE *f = fopen(path, "wb");
  size_t D = (size_t)c.dim, H = (size_t)c.hidden, L = (size_t)c.layers, V = (size_t)c.vocab;
  size_t KV = D / (size_t)c.heads * (size_t)c.kv_heads, hs = D / (size_t)c.heads;
  float *tmp;
  if (!f) return -1;
  put_i32(f, c.dim); put_i32(f, c.hidden); put_i32(f, c.layers); put_i32(f, c.heads);
  put_i32(f, c.kv_heads); put_i32(f, c.shared ? c.vocab : -c.vocab); put_i32(f, c.seq);
  r->c = c;
  r->emb = fill(f, V * D, 1.0f, 0);
  r->rms_att = fill(f, L * D, 0.2f, 1.0f);
  r->wq = fill(f, L * D * D, 0.5f, 0);
  r->wk = fill(f, L * D * KV, 0.5f, 0);
  r->wv = fill(f, L * D * KV, 0.5f, 0);
  r->wo = fill(f, L * D * D, 0.3f, 0);
  r->rms_ffn = fill(f, L * D, 0.2f, 1.0f);
  r->w1 = fill(f, L * D * H, 0.3f, 0);
  r->w2 = fill(f, L * D * H, 0.3f, 0);
  r->w3 = fill(f, L * D * H, 0.3f, 0);
  r->rms_final = fill(f, D, 0.2f, 1.0f);
  tmp = fill(f, (size_t)c.seq * hs, 1.0f, 0); free(tmp);  /* unused RoPE tables */
  r->wcls = c.shared ? r->emb : fill(f, V * D, 0.5f, 0);
  fclose(f);
  return 0;
}
static void free_ref(ref *r) {
  free(r->emb); free(r->rms_att); free(r->wq); free(r->wk); free(r->wv); free(r->wo); free(r->rms_ffn);
  free(r->w1); free(r->w2); free(r->w3); free(r->rms_final); if (!r->c.shared) free(r->wcls);
}

/* Reference: whole prefix tok[0..n) at once, double precision, no cache.
   Returns the logits at the last position in out[vocab]. */
static void reference(const ref *r, const int32_t *tok, int n, double *out) {
  int D = r->c.dim, H = r->c.hidden, L = r->c.layers, NH = r->c.heads, NKV = r->c.kv_heads, V = r->c.vocab;
  int hs = D / NH, KV = hs * NKV;
  double *X = calloc((size_t)n * D, sizeof(double)), *Xn = calloc((size_t)n * D, sizeof(double));
  double *Q = calloc((size_t)n * D, sizeof(double)), *K = calloc((size_t)n * KV, sizeof(double));
  double *Vv = calloc((size_t)n * KV, sizeof(double)), *A = calloc((size_t)n * D, sizeof(double));
  double *G = calloc((size_t)H, sizeof(double)), *U = calloc((size_t)H, sizeof(double));
  int t, l, i, j, h, s;
  for (t = 0; t < n; t++) for (i = 0; i < D; i++) X[t * D + i] = r->emb[(size_t)tok[t] * D + i];
  for (l = 0; l < L; l++) {
    for (t = 0; t < n; t++) { /* rmsnorm */
      double ss = 0; for (i = 0; i < D; i++) ss += X[t * D + i] * X[t * D + i];
      ss = 1.0 / sqrt(ss / D + 1e-5);
      for (i = 0; i < D; i++) Xn[t * D + i] = r->rms_att[l * D + i] * X[t * D + i] * ss;
    }
    for (t = 0; t < n; t++) {
      for (i = 0; i < D; i++) { double a = 0; for (j = 0; j < D; j++) a += r->wq[((size_t)l * D + i) * D + j] * Xn[t * D + j]; Q[t * D + i] = a; }
      for (i = 0; i < KV; i++) {
        double a = 0, b = 0;
        for (j = 0; j < D; j++) { a += r->wk[((size_t)l * KV + i) * D + j] * Xn[t * D + j]; b += r->wv[((size_t)l * KV + i) * D + j] * Xn[t * D + j]; }
        K[t * KV + i] = a; Vv[t * KV + i] = b;
      }
      /* rotary: pair p of head h is the complex number (x[2p], x[2p+1]) */
      for (h = 0; h < NH; h++) for (i = 0; i < hs / 2; i++) {
        double theta = t * pow(10000.0, -(2.0 * i) / hs), c = cos(theta), sn = sin(theta);
        double *q = &Q[t * D + h * hs + 2 * i], re = q[0], im = q[1];
        q[0] = re * c - im * sn; q[1] = re * sn + im * c;
        if (h < NKV) { double *k = &K[t * KV + h * hs + 2 * i]; re = k[0]; im = k[1]; k[0] = re * c - im * sn; k[1] = re * sn + im * c; }
      }
    }
    for (t = 0; t < n; t++) for (h = 0; h < NH; h++) {
      int kh = h / (NH / NKV);
      double w[64], mx = -1e300, sum = 0;
      for (s = 0; s <= t; s++) {
        double d = 0; for (i = 0; i < hs; i++) d += Q[t * D + h * hs + i] * K[s * KV + kh * hs + i];
        w[s] = d / sqrt((double)hs); if (w[s] > mx) mx = w[s];
      }
      for (s = 0; s <= t; s++) { w[s] = exp(w[s] - mx); sum += w[s]; }
      for (i = 0; i < hs; i++) { double a = 0; for (s = 0; s <= t; s++) a += w[s] / sum * Vv[s * KV + kh * hs + i]; A[t * D + h * hs + i] = a; }
    }
    for (t = 0; t < n; t++) {
      double o[64];
      for (i = 0; i < D; i++) { double a = 0; for (j = 0; j < D; j++) a += r->wo[((size_t)l * D + i) * D + j] * A[t * D + j]; o[i] = a; }
      for (i = 0; i < D; i++) X[t * D + i] += o[i];
      {
        double ss = 0; for (i = 0; i < D; i++) ss += X[t * D + i] * X[t * D + i];
        ss = 1.0 / sqrt(ss / D + 1e-5);
        for (i = 0; i < D; i++) o[i] = r->rms_ffn[l * D + i] * X[t * D + i] * ss;
      }
      for (i = 0; i < H; i++) {
        double a = 0, b = 0;
        for (j = 0; j < D; j++) { a += r->w1[((size_t)l * H + i) * D + j] * o[j]; b += r->w3[((size_t)l * H + i) * D + j] * o[j]; }
        G[i] = a; U[i] = b;
      }
      for (i = 0; i < H; i++) G[i] = G[i] / (1.0 + exp(-G[i])) * U[i];
      for (i = 0; i < D; i++) { double a = 0; for (j = 0; j < H; j++) a += r->w2[((size_t)l * D + i) * H + j] * G[j]; X[t * D + i] += a; }
    }
  }
  {
    double ss = 0, xn[64]; int last = n - 1;
    for (i = 0; i < D; i++) ss += X[last * D + i] * X[last * D + i];
    ss = 1.0 / sqrt(ss / D + 1e-5);
    for (i = 0; i < D; i++) xn[i] = r->rms_final[i] * X[last * D + i] * ss;
    for (i = 0; i < V; i++) { double a = 0; for (j = 0; j < D; j++) a += r->wcls[(size_t)i * D + j] * xn[j]; out[i] = a; }
  }
  free(X); free(Xn); free(Q); free(K); free(Vv); free(A); free(G); free(U);
}

static void check_config(cfg c) {
  ref r;
  l2_model *m = NULL;
  l2_state *s;
  char err[256];
  int32_t tok[16];
  float *logits;
  double *want;
  int t, i, n = c.seq < 16 ? c.seq : 16;
  double maxdiff = 0;
  memset(&r, 0, sizeof r);
  CHECK(write_model(model_path, c, &r) == 0);
  CHECK_MSG(l2_model_load(&m, model_path, err, sizeof err) == 0, "%s", err);
  if (!m) { free_ref(&r); return; }
  CHECK_EQ_INT(m->c.vocab_size, c.vocab);
  CHECK_EQ_INT(m->shared_classifier, c.shared);
  s = l2_state_new(m);
  CHECK(s != NULL);
  logits = (float *)malloc((size_t)c.vocab * sizeof(float));
  want = (double *)malloc((size_t)c.vocab * sizeof(double));
  for (t = 0; t < n; t++) tok[t] = (int32_t)((unsigned)(t * 7 + 3) % (unsigned)c.vocab);
  for (t = 0; t < n; t++) {
    CHECK(l2_forward(m, s, tok[t], logits) == 0);
    reference(&r, tok, t + 1, want);
    for (i = 0; i < c.vocab; i++) {
      double d = fabs(logits[i] - want[i]) / (1.0 + fabs(want[i]));
      if (d > maxdiff) maxdiff = d;
    }
  }
  CHECK_MSG(maxdiff < 1e-4, "max relative difference %g", maxdiff);
  /* the cache is full after seq_len tokens */
  if (n == c.seq) CHECK(l2_forward(m, s, 0, logits) == -1);
  CHECK(l2_forward(m, s, -1, logits) == -1);
  free(logits); free(want);
  l2_state_free(s);
  l2_model_free(m);
  free_ref(&r);
}

static void test_forward_shared_mha(void) {
  cfg c = { 16, 40, 2, 4, 4, 37, 12, 1 };
  check_config(c);
}
static void test_forward_unshared_gqa(void) {
  cfg c = { 24, 56, 3, 6, 2, 53, 10, 0 };
  check_config(c);
}
static void test_forward_mqa_one_layer(void) {
  cfg c = { 8, 16, 1, 2, 1, 11, 6, 1 };
  check_config(c);
}

static int write_bytes(const char *path, const unsigned char *b, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  fwrite(b, 1, n, f);
  fclose(f);
  return 0;
}

static void test_malformed_models(void) {
  const char *p = "build/tests/tiny_llama2_bad.bin";
  unsigned char hdr[28 + 64];
  l2_model *m = NULL;
  char err[256];
  int32_t good[7] = { 8, 16, 1, 2, 1, 11, 6 };
  int k, i;
  /* missing file, empty file, short header */
  CHECK(l2_model_load(&m, "build/tests/does_not_exist.bin", err, sizeof err) == -1 && m == NULL);
  CHECK(write_bytes(p, hdr, 0) == 0);
  CHECK(l2_model_load(&m, p, err, sizeof err) == -1 && m == NULL);
  /* each header field broken in turn: zero, negative, huge */
  for (k = 0; k < 7; k++) {
    int32_t bad[3] = { 0, -5, 0x7fffffff };
    for (i = 0; i < 3; i++) {
      int32_t h[7]; int j;
      memcpy(h, good, sizeof h);
      h[k] = bad[i];
      if (k == 5 && i == 1) continue; /* a negative vocab is legal (unshared classifier) */
      for (j = 0; j < 7; j++) { hdr[4*j] = (unsigned char)h[j]; hdr[4*j+1] = (unsigned char)(h[j] >> 8); hdr[4*j+2] = (unsigned char)(h[j] >> 16); hdr[4*j+3] = (unsigned char)(h[j] >> 24); }
      memset(hdr + 28, 0, 64);
      CHECK(write_bytes(p, hdr, sizeof hdr) == 0);
      CHECK_MSG(l2_model_load(&m, p, err, sizeof err) == -1 && m == NULL, "field %d value %d", k, bad[i]);
    }
  }
  /* a good header with a truncated payload */
  {
    cfg c = { 8, 16, 1, 2, 1, 11, 6, 1 };
    ref r; FILE *f; unsigned char *buf; long sz;
    memset(&r, 0, sizeof r);
    write_model(model_path, c, &r); free_ref(&r);
    f = fopen(model_path, "rb"); fseek(f, 0, SEEK_END); sz = ftell(f); fseek(f, 0, SEEK_SET);
    buf = (unsigned char *)malloc((size_t)sz + 8);
    CHECK(fread(buf, 1, (size_t)sz, f) == (size_t)sz); fclose(f);
    CHECK(write_bytes(p, buf, (size_t)sz - 4) == 0);
    CHECK(l2_model_load(&m, p, err, sizeof err) == -1 && m == NULL);
    memset(buf + sz, 0, 8);
    CHECK(write_bytes(p, buf, (size_t)sz + 4) == 0);   /* trailing bytes */
    CHECK(l2_model_load(&m, p, err, sizeof err) == -1 && m == NULL);
    CHECK(write_bytes(p, buf, (size_t)sz) == 0);
    CHECK(l2_model_load(&m, p, err, sizeof err) == 0 && m != NULL);
    l2_model_free(m);
    free(buf);
  }
  remove(p);
}

/* tokenizer: <unk> <s> </s>, 256 byte pieces, then a few pieces with scores */
static const char *extra[] = { " ", "a", "b", "c", " a", "ab", " ab", "abc", " abc", "\xC3\xA9" };
static const float extra_score[] = { -1, -2, -3, -4, -5, -6, -7, -20, -8, -9 };
#define N_EXTRA ((int)(sizeof extra / sizeof *extra))

static int write_tokenizer(const char *path) {
  FILE *f = fopen(path, "wb");
  int i;
  if (!f) return -1;
  put_i32(f, 8);
  put_f32(f, 0); put_i32(f, 5); fwrite("<unk>", 1, 5, f);
  put_f32(f, 0); put_i32(f, 3); fwrite("<s>", 1, 3, f);
  put_f32(f, 0); put_i32(f, 4); fwrite("</s>", 1, 4, f);
  for (i = 0; i < 256; i++) { char b[8]; snprintf(b, sizeof b, "<0x%02X>", i); put_f32(f, 0); put_i32(f, 6); fwrite(b, 1, 6, f); }
  for (i = 0; i < N_EXTRA; i++) { put_f32(f, extra_score[i]); put_i32(f, (int32_t)strlen(extra[i])); fwrite(extra[i], 1, strlen(extra[i]), f); }
  fclose(f);
  return 0;
}

static void test_tokenizer(void) {
  l2_tokenizer *t = NULL;
  char err[256];
  int32_t ids[32], n, l, V = 3 + 256 + N_EXTRA;
  const unsigned char *p;
  CHECK(write_tokenizer(tok_path) == 0);
  CHECK_MSG(l2_tokenizer_load(&t, tok_path, V, err, sizeof err) == 0, "%s", err);
  if (!t) return;
  /* " abc": pieces " ", a, b, c; merges by score: " a" (-5) vs ab (-6):
     " a" first, then " ab" (-7), then " abc" (-8) */
  n = l2_encode(t, (const unsigned char *)"abc", 3, 1, ids, 32);
  CHECK_EQ_INT(n, 2);
  CHECK_EQ_INT(ids[0], L2_BOS);
  CHECK_EQ_INT(ids[1], 259 + 8);
  /* "é" is a piece; "ü" is not, so its two bytes come as <0xC3><0xBC> */
  n = l2_encode(t, (const unsigned char *)"\xC3\xA9\xC3\xBC", 4, 0, ids, 32);
  CHECK_EQ_INT(n, 4);
  CHECK_EQ_INT(ids[0], 259);          /* " " (no merge " é") */
  CHECK_EQ_INT(ids[1], 259 + 9);
  CHECK_EQ_INT(ids[2], 3 + 0xC3);
  CHECK_EQ_INT(ids[3], 3 + 0xBC);
  p = l2_piece(t, 5, 3 + 0xC3, &l);
  CHECK(l == 1 && p[0] == 0xC3);
  p = l2_piece(t, L2_BOS, 259 + 4, &l);  /* " a" after BOS loses its space */
  CHECK(l == 1 && p[0] == 'a');
  p = l2_piece(t, 7, 259 + 4, &l);
  CHECK(l == 2 && p[0] == ' ');
  CHECK(l2_piece(t, 0, V, &l) == NULL);
  /* capacity is respected */
  n = l2_encode(t, (const unsigned char *)"cccccccc", 8, 1, ids, 3);
  CHECK(n <= 3);
  l2_tokenizer_free(t);
  /* a tokenizer with fewer pieces than the model's vocab is rejected */
  CHECK(l2_tokenizer_load(&t, tok_path, V + 1, err, sizeof err) == -1 && t == NULL);
  remove(tok_path);
}

int main(void) {
  RUN(test_forward_shared_mha);
  RUN(test_forward_unshared_gqa);
  RUN(test_forward_mqa_one_layer);
  RUN(test_malformed_models);
  RUN(test_tokenizer);
  remove(model_path);
  return t_done();
}
