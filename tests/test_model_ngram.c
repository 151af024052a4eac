/* The embedded n-gram model of the example server (examples/ngram.h):
   training is deterministic, the token table round-trips any bytes, some
   pieces split UTF-8 characters, every row of logits is a finite log
   distribution over the whole vocabulary. */
#include "testlib.h"
#include "../examples/ngram.h"

static unsigned char corpus[1 << 20];
static size_t corpus_len;

static int load_corpus(void) {
  FILE *f = fopen("examples/data/corpus.txt", "rb");
  if (!f) return -1;
  corpus_len = fread(corpus, 1, sizeof corpus, f);
  fclose(f);
  return corpus_len > 0 ? 0 : -1;
}

static ng_model *train(void) {
  ng_model *m = NULL;
  char err[128];
  if (ng_train(&m, corpus, corpus_len, 1024, err, sizeof err) != 0) printf("  train: %s\n", err);
  return m;
}

static void test_train_deterministic(void) {
  ng_model *a, *b;
  if (corpus_len == 0) SKIP("examples/data/corpus.txt not found (run from the repository root)");
  a = train(); b = train();
  CHECK(a && b);
  if (!a || !b) { ng_free(a); ng_free(b); return; }
  CHECK(a->vocab > 600 && a->vocab <= 1024);
  CHECK_EQ_INT(a->vocab, b->vocab);
  CHECK(memcmp(a->piece_bytes, b->piece_bytes, (size_t)a->piece_off[a->vocab]) == 0);
  CHECK(memcmp(a->p1, b->p1, (size_t)a->vocab * sizeof(float)) == 0);
  ng_free(a); ng_free(b);
}

static void decode(const ng_model *m, const int32_t *ids, int32_t n, unsigned char *out, size_t *len) {
  int32_t i, l;
  *len = 0;
  for (i = 0; i < n; i++) {
    const unsigned char *p = ng_piece(m, ids[i], &l);
    memcpy(out + *len, p, (size_t)l);
    *len += (size_t)l;
  }
}

static void test_roundtrip(void) {
  static int32_t ids[1 << 16];
  static unsigned char back[1 << 17];
  unsigned char rnd[4096];
  size_t len, i;
  int32_t n, need;
  uint32_t s = 7;
  ng_model *m;
  if (corpus_len == 0) SKIP("corpus not found");
  m = train();
  if (!m) { CHECK(0); return; }
  n = ng_encode(m, corpus, 4000, ids, 1 << 16);
  CHECK(n > 0 && n < 4000 / 2);   /* BPE compresses real text */
  decode(m, ids, n, back, &len);
  CHECK(len == 4000 && memcmp(back, corpus, 4000) == 0);
  /* arbitrary bytes, including invalid UTF-8 and NULs */
  for (i = 0; i < sizeof rnd; i++) { s = s * 1103515245u + 12345u; rnd[i] = (unsigned char)(s >> 16); }
  n = ng_encode(m, rnd, sizeof rnd, ids, 1 << 16);
  decode(m, ids, n, back, &len);
  CHECK(len == sizeof rnd && memcmp(back, rnd, sizeof rnd) == 0);
  /* a long run without boundaries is chunked (bounded work) */
  memset(rnd, 'a', sizeof rnd);
  n = ng_encode(m, rnd, sizeof rnd, ids, 1 << 16);
  decode(m, ids, n, back, &len);
  CHECK(len == sizeof rnd && memcmp(back, rnd, sizeof rnd) == 0);
  /* the count comes back when the output is short; nothing is written past cap */
  ids[3] = -77;
  need = ng_encode(m, corpus, 200, ids, 3);
  CHECK(need > 3 && ids[3] == -77);
  CHECK_EQ_INT(ng_encode(m, corpus, 0, ids, 10), 0);
  ng_free(m);
}

static int valid_utf8(const unsigned char *p, int32_t n) {
  int32_t i = 0;
  while (i < n) {
    unsigned char c = p[i];
    int k;
    if (c < 0x80) { i++; continue; }
    k = (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : -1;
    if (k < 0 || i + k >= n) return 0;
    for (i++; k > 0; k--, i++) if ((p[i] & 0xC0) != 0x80) return 0;
  }
  return 1;
}

static void test_pieces_split_utf8(void) {
  ng_model *m;
  int32_t ids[64], n, i, l, split = 0;
  const char *text = "Stra\xC3\x9F" "e \xF0\x9F\x99\x82 caf\xC3\xA9 \xE6\x97\xA5";  /* Straße 🙂 café 日 */
  if (corpus_len == 0) SKIP("corpus not found");
  m = train();
  if (!m) { CHECK(0); return; }
  n = ng_encode(m, (const unsigned char *)text, strlen(text), ids, 64);
  for (i = 0; i < n; i++) {
    const unsigned char *p = ng_piece(m, ids[i], &l);
    if (!valid_utf8(p, l)) split++;
  }
  CHECK_MSG(split >= 4, "only %d tokens split a character", (int)split);
  CHECK(ng_piece(m, -1, &l) == NULL && l == 0);
  CHECK(ng_piece(m, m->vocab, &l) == NULL);
  ng_free(m);
}

static void test_logits_distribution(void) {
  ng_model *m;
  float *lg;
  ng_state s;
  int32_t ids[256], n, i, w;
  if (corpus_len == 0) SKIP("corpus not found");
  m = train();
  if (!m) { CHECK(0); return; }
  lg = (float *)malloc((size_t)m->vocab * sizeof(float));
  n = ng_encode(m, corpus, 600, ids, 256);
  ng_state_init(&s);
  for (i = 0; i <= n; i++) {
    double sum = 0;
    int finite = 1;
    ng_logits(m, &s, lg);
    for (w = 0; w < m->vocab; w++) { if (!(lg[w] > -1e30f && lg[w] <= 0.0f)) finite = 0; sum += exp(lg[w]); }
    CHECK(finite);
    CHECK_NEAR(sum, 1.0, 1e-4);
    if (i < n) ng_state_push(&s, ids[i]);
  }
  /* the model has learnt something: the next training token is likely */
  ng_state_init(&s);
  ng_state_push(&s, ids[0]); ng_state_push(&s, ids[1]);
  ng_logits(m, &s, lg);
  CHECK(lg[ids[2]] > logf(0.05f));
  /* out-of-range state is clamped, not read out of bounds */
  s.u = -5; s.v = 1 << 20;
  ng_logits(m, &s, lg);
  CHECK(lg[0] == lg[0]);
  free(lg);
  ng_free(m);
}

static void test_train_edge_inputs(void) {
  ng_model *m = NULL;
  char err[128];
  CHECK(ng_train(&m, (const unsigned char *)"", 0, 512, err, sizeof err) == -1 && m == NULL);
  CHECK(ng_train(&m, (const unsigned char *)"\n\n\n", 3, 512, err, sizeof err) == -1 && m == NULL);
  CHECK(ng_train(&m, (const unsigned char *)"x", 1, 512, err, sizeof err) == 0 && m != NULL);
  if (m) { CHECK_EQ_INT(m->vocab, 257); ng_free(m); m = NULL; }
  CHECK(ng_train(&m, (const unsigned char *)"\xff\xfe\x00 abab abab", 14, 100000, err, sizeof err) == 0 && m != NULL);
  ng_free(m);
}

int main(void) {
  load_corpus();
  RUN(test_train_deterministic);
  RUN(test_roundtrip);
  RUN(test_pieces_split_utf8);
  RUN(test_logits_distribution);
  RUN(test_train_edge_inputs);
  return t_done();
}
