/* Text assembly: UTF-8 safety, stop strings, stop tokens, lengths, offsets,
   and the round-trip property against the slow reference in egress_ref.h. */
#include "mysample.h"
#include "testlib.h"
#include "egress_ref.h"
#include <stdlib.h>

/* A sequence with its memory, fed token by token; collects the deltas. */
typedef struct seqt {
  ms_text *t; void *mem;
  char *acc; size_t acc_n, acc_cap;
  ms_text_step last;
  ms_result last_rc;
} seqt;

static void seq_open(seqt *s, const ms_text_params *p, size_t text_cap) {
  ms_text_desc d; size_t sz; char msg[200];
  d.max_stops = 8; d.max_stop_bytes = 64; d.max_stop_ids = 8; d.text_capacity = text_cap;
  sz = ms_text_size(&d);
  s->mem = malloc(sz);
  CHECK_EQ_INT(ms_text_init(&s->t, &d, s->mem, sz), MS_OK);
  CHECK_EQ_INT(ms_text_reset(s->t, p, msg, sizeof msg), MS_OK);
  s->acc_cap = 1 << 10; s->acc = (char *)malloc(s->acc_cap); s->acc_n = 0; s->acc[0] = 0;
  memset(&s->last, 0, sizeof s->last); s->last_rc = MS_OK;
}
static void seq_take(seqt *s) {
  if (s->acc_n + s->last.delta_len + 1 > s->acc_cap) { s->acc_cap = 2 * (s->acc_n + s->last.delta_len + 1); s->acc = (char *)realloc(s->acc, s->acc_cap); }
  memcpy(s->acc + s->acc_n, s->last.delta, s->last.delta_len);
  s->acc_n += s->last.delta_len; s->acc[s->acc_n] = 0;
}
static ms_result seq_push(seqt *s, int32_t tok, const char *b, size_t n) {
  size_t cap = ms_text_out_bound(s->t, n);
  char *out;
  if (cap > ((size_t)1 << 40)) { CHECK(0); return MS_ERR_CAPACITY; }
  out = (char *)malloc(cap);
  s->last_rc = ms_text_push(s->t, tok, b, n, out, cap, &s->last);
  if (s->last_rc == MS_OK) {
    CHECK(ms_utf8_validate(s->last.delta, s->last.delta_len) == MS_OK);
    CHECK(s->last.delta[s->last.delta_len] == 0);
    seq_take(s);
  }
  free(out);
  return s->last_rc;
}
static ms_result seq_pushs(seqt *s, int32_t tok, const char *str) { return seq_push(s, tok, str, strlen(str)); }
static ms_result seq_end(seqt *s, ms_finish why) {
  size_t cap = ms_text_out_bound(s->t, 0);
  char *out = (char *)malloc(cap);
  s->last_rc = ms_text_finish(s->t, why, out, cap, &s->last);
  if (s->last_rc == MS_OK) seq_take(s);
  free(out);
  return s->last_rc;
}
static void seq_close(seqt *s) { free(s->mem); free(s->acc); }
#define ACC_IS(s, lit) CHECK_MSG((s)->acc_n == sizeof(lit) - 1 && memcmp((s)->acc, lit, sizeof(lit) - 1) == 0, "got [%s]", (s)->acc)

static void test_ascii_no_stops(void) {
  seqt s; ms_text_params p = ms_text_params_default();
  seq_open(&s, &p, 0);
  seq_pushs(&s, 1, "Hello");
  CHECK_EQ_INT(s.last.delta_len, 5);      /* nothing held without stops */
  seq_pushs(&s, 2, ", world");
  CHECK_EQ_INT(s.last.text_offset, 5);
  CHECK_EQ_INT(s.last.finish, MS_FINISH_NONE);
  CHECK_EQ_INT(seq_end(&s, MS_FINISH_LENGTH), MS_OK);
  CHECK_EQ_INT(s.last.finish, MS_FINISH_LENGTH);
  ACC_IS(&s, "Hello, world");
  CHECK_EQ_INT(seq_pushs(&s, 3, "x"), MS_ERR_STATE);
  seq_close(&s);
}

static void test_empty_tokens_and_content(void) {
  seqt s; ms_text_params p = ms_text_params_default();
  p.eos_token_id = 2;
  seq_open(&s, &p, 16);
  seq_push(&s, 7, "", 0);
  CHECK_EQ_INT(s.last.delta_len, 0);
  seq_pushs(&s, 2, "</s>");            /* EOS first: the whole output is "" */
  CHECK_EQ_INT(s.last.finish, MS_FINISH_STOP);
  CHECK_EQ_INT(s.last.stop_reason.kind, MS_STOP_NONE);   /* vLLM: EOS has stop_reason null */
  CHECK_EQ_INT(s.last.token_text_used, 0);
  CHECK_EQ_INT(s.acc_n, 0);
  { size_t n; ms_text_get(s.t, &n); CHECK_EQ_INT(n, 0); }
  seq_close(&s);
}

static void test_four_byte_char_over_four_tokens(void) {
  /* U+1F600 = F0 9F 98 80, one byte per token. */
  seqt s; ms_text_params p = ms_text_params_default();
  const char emoji[] = "\xF0\x9F\x98\x80";
  int i;
  seq_open(&s, &p, 0);
  seq_pushs(&s, 1, "a");
  for (i = 0; i < 4; i++) {
    seq_push(&s, 10 + i, emoji + i, 1);
    CHECK_EQ_INT(s.last.text_offset, 1);      /* the character starts after "a" */
    CHECK_EQ_INT(s.last.delta_len, i < 3 ? 0 : 4);
  }
  seq_pushs(&s, 20, "b");
  CHECK_EQ_INT(s.last.text_offset, 2);        /* one code point */
  CHECK_EQ_INT(s.last.text_offset_bytes, 5);
  seq_end(&s, MS_FINISH_STOP);
  ACC_IS(&s, "a\xF0\x9F\x98\x80" "b");
  seq_close(&s);
}

static void test_invalid_bytes(void) {
  seqt s; ms_text_params p = ms_text_params_default();
  seq_open(&s, &p, 0);
  seq_push(&s, 1, "\xFF", 1);                 /* never valid: U+FFFD now */
  CHECK_EQ_INT(s.last.delta_len, 3);
  seq_push(&s, 2, "\xE2\x82", 2);             /* incomplete: waits */
  CHECK_EQ_INT(s.last.delta_len, 0);
  seq_push(&s, 3, "A", 1);                    /* breaks it: one U+FFFD for the subpart, then A */
  seq_push(&s, 4, "\xF0\x80", 2);             /* F0 80: two subparts (80 is not allowed after F0) */
  seq_push(&s, 5, "\xED\xA0\x80", 3);         /* a surrogate: three subparts */
  seq_push(&s, 6, "\xC0\xAF", 2);             /* overlong: two */
  seq_push(&s, 7, "\xE2\x82", 2);             /* incomplete at the end: flushed as one */
  seq_end(&s, MS_FINISH_LENGTH);
  ACC_IS(&s, "\xEF\xBF\xBD" "\xEF\xBF\xBD" "A" "\xEF\xBF\xBD\xEF\xBF\xBD" "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
             "\xEF\xBF\xBD\xEF\xBF\xBD" "\xEF\xBF\xBD");
  /* the same bytes through the library's one-shot sanitizer and the slow reference */
  {
    const char all[] = "\xFF\xE2\x82" "A\xF0\x80\xED\xA0\x80\xC0\xAF\xE2\x82";
    size_t rn, n = ms_utf8_sanitize(all, sizeof all - 1, NULL, 0);
    char *ref = ref_lossy((const unsigned char *)all, sizeof all - 1, &rn), buf[64];
    CHECK_EQ_INT(n, rn);
    CHECK_EQ_INT(ms_utf8_sanitize(all, sizeof all - 1, buf, sizeof buf), rn);
    CHECK(memcmp(buf, ref, rn) == 0);
    CHECK(s.acc_n == rn && memcmp(s.acc, ref, rn) == 0);
    free(ref);
  }
  seq_close(&s);
}

static void test_stop_split_over_three_tokens(void) {
  seqt s; ms_text_params p = ms_text_params_default();
  const char *stops[] = {"STOP"};
  p.stop = stops; p.n_stop = 1;
  seq_open(&s, &p, 64);
  seq_pushs(&s, 1, "Hello ");
  CHECK_EQ_INT(s.last.delta_len, 3);        /* vLLM holds back len("STOP") - 1 = 3 chars */
  seq_pushs(&s, 2, "S");
  seq_pushs(&s, 3, "TO");
  CHECK_EQ_INT(s.last.finish, MS_FINISH_NONE);
  seq_pushs(&s, 4, "P and more");
  CHECK_EQ_INT(s.last.finish, MS_FINISH_STOP);
  CHECK_EQ_INT(s.last.stop_reason.kind, MS_STOP_STRING);
  CHECK_EQ_INT(s.last.stop_reason.index, 0);
  CHECK(s.last.stop_reason.len == 4 && memcmp(s.last.stop_reason.str, "STOP", 4) == 0);
  ACC_IS(&s, "Hello ");
  { size_t n; const char *k = ms_text_get(s.t, &n); CHECK(n == 6 && memcmp(k, "Hello ", 6) == 0); }
  seq_close(&s);
}

static void test_only_a_stop_string(void) {
  seqt s; ms_text_params p = ms_text_params_default();
  const char *stops[] = {"</end>"};
  p.stop = stops; p.n_stop = 1;
  seq_open(&s, &p, 0);
  seq_pushs(&s, 1, "</end>");
  CHECK_EQ_INT(s.last.finish, MS_FINISH_STOP);
  CHECK_EQ_INT(s.acc_n, 0);
  seq_close(&s);
  p.include_stop_str_in_output = 1;
  seq_open(&s, &p, 0);
  seq_pushs(&s, 1, "</end>tail");
  ACC_IS(&s, "</end>");                       /* included, the rest cut */
  seq_close(&s);
}

static void test_include_stop_no_holdback(void) {
  seqt s; ms_text_params p = ms_text_params_default();
  const char *stops[] = {"STOP"};
  p.stop = stops; p.n_stop = 1; p.include_stop_str_in_output = 1;
  seq_open(&s, &p, 0);
  seq_pushs(&s, 1, "abcST");                  /* vLLM: no holdback when the stop is included */
  CHECK_EQ_INT(s.last.delta_len, 5);
  seq_pushs(&s, 2, "OP!");
  CHECK_EQ_INT(s.last.finish, MS_FINISH_STOP);
  ACC_IS(&s, "abcSTOP");
  seq_close(&s);
}

static void test_earliest_match_wins(void) {
  seqt s; ms_text_params p = ms_text_params_default();
  const char *stops[] = {"abcd", "bc"};
  const char *stops2[] = {"c", "bc"};
  p.stop = stops; p.n_stop = 2;
  seq_open(&s, &p, 0);
  seq_pushs(&s, 1, "xabcd");                  /* "bc" completes first */
  ACC_IS(&s, "xa");
  CHECK_EQ_INT(s.last.stop_reason.index, 1);
  seq_close(&s);
  p.stop = stops2;
  seq_open(&s, &p, 0);
  seq_pushs(&s, 1, "xabc");                   /* both end at 'c': the longer wins */
  ACC_IS(&s, "xa");
  CHECK_EQ_INT(s.last.stop_reason.index, 1);
  seq_close(&s);
}

static void test_stop_tokens_and_eos(void) {
  seqt s; ms_text_params p = ms_text_params_default();
  int32_t ids[] = {50, 51};
  p.stop_token_ids = ids; p.n_stop_token_ids = 2; p.eos_token_id = 2;
  seq_open(&s, &p, 0);
  seq_pushs(&s, 1, "hi");
  seq_pushs(&s, 51, "<|im_end|>");
  CHECK_EQ_INT(s.last.finish, MS_FINISH_STOP);
  CHECK_EQ_INT(s.last.stop_reason.kind, MS_STOP_TOKEN);
  CHECK_EQ_INT(s.last.stop_reason.token, 51);
  ACC_IS(&s, "hi");
  seq_close(&s);
  p.include_stop_str_in_output = 1;           /* asked for: the token's text stays */
  seq_open(&s, &p, 0);
  seq_pushs(&s, 1, "hi");
  seq_pushs(&s, 2, "</s>");
  CHECK_EQ_INT(s.last.stop_reason.kind, MS_STOP_NONE);
  ACC_IS(&s, "hi</s>");
  seq_close(&s);
  p.include_stop_str_in_output = 0; p.ignore_eos = 1; p.max_tokens = 3;
  seq_open(&s, &p, 0);
  seq_pushs(&s, 2, "a");
  CHECK_EQ_INT(s.last.finish, MS_FINISH_NONE);   /* EOS ignored */
  seq_pushs(&s, 2, "b");
  seq_pushs(&s, 2, "c");
  CHECK_EQ_INT(s.last.finish, MS_FINISH_LENGTH);
  ACC_IS(&s, "abc");
  seq_close(&s);
}

static void test_max_tokens_and_pending(void) {
  seqt s; ms_text_params p = ms_text_params_default();
  const char *stops[] = {"zz"};
  p.max_tokens = 2; p.stop = stops; p.n_stop = 1;
  seq_open(&s, &p, 0);
  seq_pushs(&s, 1, "ab");
  seq_push(&s, 2, "c\xE2\x82", 3);           /* length: holdback and the piece are flushed */
  CHECK_EQ_INT(s.last.finish, MS_FINISH_LENGTH);
  ACC_IS(&s, "abc\xEF\xBF\xBD");
  seq_close(&s);
  /* a stop string in the last allowed token wins over length */
  seq_open(&s, &p, 0);
  seq_pushs(&s, 1, "ab");
  seq_pushs(&s, 2, "zzc");
  CHECK_EQ_INT(s.last.finish, MS_FINISH_STOP);
  ACC_IS(&s, "ab");
  seq_close(&s);
}

static void test_min_tokens(void) {
  seqt s; ms_text_params p = ms_text_params_default();
  const char *stops[] = {"e"};
  p.stop = stops; p.n_stop = 1; p.min_tokens = 2; p.eos_token_id = 9;
  seq_open(&s, &p, 0);
  seq_pushs(&s, 9, "e1");                     /* EOS and "e" before min_tokens: ignored */
  CHECK_EQ_INT(s.last.finish, MS_FINISH_NONE);
  seq_pushs(&s, 3, "e2");                     /* token 2 == min_tokens: strings not yet checked */
  CHECK_EQ_INT(s.last.finish, MS_FINISH_NONE);
  seq_pushs(&s, 4, "xe3");                    /* token 3: checked */
  CHECK_EQ_INT(s.last.finish, MS_FINISH_STOP);
  ACC_IS(&s, "e1e2x");
  seq_close(&s);
  /* vLLM check_stop: EOS counts once num_output_tokens >= min_tokens */
  seq_open(&s, &p, 0);
  seq_pushs(&s, 1, "a");
  seq_pushs(&s, 9, "</s>");
  CHECK_EQ_INT(s.last.finish, MS_FINISH_STOP);
  ACC_IS(&s, "a");
  seq_close(&s);
}

static void test_holdback_modes(void) {
  seqt s; ms_text_params p = ms_text_params_default();
  const char *stops[] = {"STOP", "\xE2\x82\xAC\xE2\x82\xAC"};   /* "€€": 2 characters, 6 bytes */
  p.stop = stops; p.n_stop = 2;
  seq_open(&s, &p, 0);
  seq_pushs(&s, 1, "abcdef");
  ACC_IS(&s, "abc");                          /* vLLM: max 4 chars - 1 held */
  seq_pushs(&s, 2, "\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC");   /* "€€€": a stop */
  CHECK_EQ_INT(s.last.finish, MS_FINISH_STOP);
  ACC_IS(&s, "abcdef");
  seq_close(&s);
  p.holdback = MS_HOLDBACK_PREFIX;
  seq_open(&s, &p, 0);
  seq_pushs(&s, 1, "abcdef");
  ACC_IS(&s, "abcdef");                       /* no tail could start a stop */
  seq_pushs(&s, 2, "xST");
  ACC_IS(&s, "abcdefx");                      /* "ST" could */
  seq_pushs(&s, 3, "Ay");
  ACC_IS(&s, "abcdefxSTAy");
  seq_pushs(&s, 4, "\xE2\x82\xAC");
  ACC_IS(&s, "abcdefxSTAy");                  /* "€" could start "€€" */
  seq_end(&s, MS_FINISH_ABORT);
  CHECK_EQ_INT(s.last.finish, MS_FINISH_ABORT);
  ACC_IS(&s, "abcdefxSTAy\xE2\x82\xAC");
  seq_close(&s);
}

static void test_huge_token(void) {
  seqt s; ms_text_params p = ms_text_params_default();
  const char *stops[] = {"<<END>>"};
  size_t n = (size_t)3 << 20, i;
  char *big = (char *)malloc(n + 16);
  for (i = 0; i < n; i++) big[i] = (char)('a' + (int)(i % 26));
  memcpy(big + n - 100, "<<END>>", 7);
  p.stop = stops; p.n_stop = 1;
  seq_open(&s, &p, 0);
  seq_push(&s, 1, big, n);
  CHECK_EQ_INT(s.last.finish, MS_FINISH_STOP);
  CHECK_EQ_INT(s.acc_n, n - 100);
  CHECK(memcmp(s.acc, big, n - 100) == 0);
  seq_close(&s);
  free(big);
}

static void test_control_and_2028_pass_through(void) {
  /* Text assembly keeps every valid character; escaping is the writer's job. */
  seqt s; ms_text_params p = ms_text_params_default();
  seq_open(&s, &p, 0);
  seq_push(&s, 1, "a\0b\n\x1f\xE2\x80\xA8", 8);
  seq_end(&s, MS_FINISH_STOP);
  CHECK(s.acc_n == 8 && memcmp(s.acc, "a\0b\n\x1f\xE2\x80\xA8", 8) == 0);
  seq_close(&s);
}

static void test_errors(void) {
  ms_text_desc d; size_t sz; void *mem; ms_text *t; char msg[200], out[256];
  ms_text_params p = ms_text_params_default();
  const char *empty[] = {""}, *bad[] = {"\xC3"}, *longs[] = {"0123456789abcdefX"}, *many[] = {"a", "b", "c"};
  ms_text_step st;
  d.max_stops = 2; d.max_stop_bytes = 16; d.max_stop_ids = 1; d.text_capacity = 4;
  sz = ms_text_size(&d);
  CHECK(sz > 0);
  mem = malloc(sz);
  CHECK_EQ_INT(ms_text_init(&t, &d, mem, sz - 1), MS_ERR_WORKSPACE_TOO_SMALL);
  CHECK_EQ_INT(ms_text_init(NULL, &d, mem, sz), MS_ERR_NULL_ARGUMENT);
  d.max_stops = -1; CHECK_EQ_INT(ms_text_init(&t, &d, mem, sz), MS_ERR_INVALID_PARAM); CHECK_EQ_INT(ms_text_size(&d), 0);
  d.max_stops = 2;
  CHECK_EQ_INT(ms_text_init(&t, &d, mem, sz), MS_OK);
  p.stop = empty; p.n_stop = 1;
  CHECK_EQ_INT(ms_text_reset(t, &p, msg, sizeof msg), MS_ERR_INVALID_PARAM);
  CHECK(strcmp(msg, "stop cannot contain an empty string.") == 0);
  p.stop = bad; CHECK_EQ_INT(ms_text_reset(t, &p, msg, sizeof msg), MS_ERR_INVALID_UTF8);
  p.stop = longs; CHECK_EQ_INT(ms_text_reset(t, &p, msg, sizeof msg), MS_ERR_CAPACITY);
  p.stop = many; p.n_stop = 3; CHECK_EQ_INT(ms_text_reset(t, &p, msg, sizeof msg), MS_ERR_CAPACITY);
  p.n_stop = 0; p.min_tokens = 5; p.max_tokens = 3;
  CHECK_EQ_INT(ms_text_reset(t, &p, msg, sizeof msg), MS_ERR_INVALID_PARAM);
  CHECK(strcmp(msg, "min_tokens must be less than or equal to max_tokens=3, got 5.") == 0);
  p.min_tokens = -1; p.max_tokens = 0;
  CHECK_EQ_INT(ms_text_reset(t, &p, NULL, 0), MS_ERR_INVALID_PARAM);
  /* every other refusal, with its message */
  {
    static const int32_t ids[2] = { 1, 2 };
    ms_text_params q;
    q = ms_text_params_default(); q.n_stop = -1;
    CHECK_EQ_INT(ms_text_reset(t, &q, msg, sizeof msg), MS_ERR_INVALID_PARAM);
    CHECK(strcmp(msg, "n_stop and n_stop_token_ids must be >= 0") == 0);
    q = ms_text_params_default(); q.n_stop_token_ids = -2;
    CHECK_EQ_INT(ms_text_reset(t, &q, msg, sizeof msg), MS_ERR_INVALID_PARAM);
    q = ms_text_params_default(); q.n_stop = 1;
    CHECK_EQ_INT(ms_text_reset(t, &q, msg, sizeof msg), MS_ERR_NULL_ARGUMENT);
    CHECK(strcmp(msg, "stop or stop_token_ids is NULL with a non-zero count") == 0);
    q = ms_text_params_default(); q.n_stop_token_ids = 1;
    CHECK_EQ_INT(ms_text_reset(t, &q, msg, sizeof msg), MS_ERR_NULL_ARGUMENT);
    q = ms_text_params_default(); q.max_tokens = -4;
    CHECK_EQ_INT(ms_text_reset(t, &q, msg, sizeof msg), MS_ERR_INVALID_PARAM);
    CHECK(strcmp(msg, "max_tokens must be at least 1, got -4.") == 0);
    q = ms_text_params_default(); q.holdback = (ms_holdback)9;
    CHECK_EQ_INT(ms_text_reset(t, &q, msg, sizeof msg), MS_ERR_INVALID_PARAM);
    CHECK(strcmp(msg, "holdback must be MS_HOLDBACK_VLLM or MS_HOLDBACK_PREFIX") == 0);
    q = ms_text_params_default(); q.stop_token_ids = ids; q.n_stop_token_ids = 2;   /* max_stop_ids 1 */
    CHECK_EQ_INT(ms_text_reset(t, &q, msg, sizeof msg), MS_ERR_CAPACITY);
    CHECK(strcmp(msg, "2 stop_token_ids given, this ms_text holds at most 1") == 0);
  }
  CHECK_EQ_INT(ms_text_reset(t, NULL, msg, sizeof msg), MS_OK);
  /* a short out buffer changes nothing */
  out[0] = 'Z';
  CHECK_EQ_INT(ms_text_push(t, 1, "ab", 2, out, ms_text_out_bound(t, 2) - 1, &st), MS_ERR_BUFFER_TOO_SMALL);
  CHECK_EQ_INT(ms_text_n_tokens(t), 0);
  CHECK(st.delta == out && st.delta_len == 0 && out[0] == 0);   /* an error's delta is "" */
  CHECK_EQ_INT(ms_text_push(t, 1, NULL, 2, out, sizeof out, &st), MS_ERR_NULL_ARGUMENT);
  /* text capacity 4: "abc" fits, "de" would not; the failed push is undone */
  CHECK_EQ_INT(ms_text_push(t, 1, "abc", 3, out, sizeof out, &st), MS_OK);
  CHECK_EQ_INT(ms_text_push(t, 2, "de", 2, out, sizeof out, &st), MS_ERR_CAPACITY);
  CHECK_EQ_INT(ms_text_n_tokens(t), 1);
  CHECK(st.delta == out && st.delta_len == 0 && out[0] == 0);   /* not the decoded "de" left in out */
  CHECK_EQ_INT(ms_text_push(t, 2, "d", 1, out, sizeof out, &st), MS_OK);
  CHECK_EQ_INT(ms_text_finish(t, MS_FINISH_NONE, out, sizeof out, &st), MS_ERR_INVALID_PARAM);
  CHECK_EQ_INT(ms_text_finish(t, MS_FINISH_LENGTH, out, sizeof out, &st), MS_OK);
  CHECK_EQ_INT(ms_text_finish(t, MS_FINISH_LENGTH, out, sizeof out, &st), MS_ERR_STATE);
  /* finished: a zero-size out buffer is not written either */
  out[0] = 'Z';
  CHECK_EQ_INT(ms_text_push(t, 3, "e", 1, out, 0, &st), MS_ERR_STATE);
  CHECK_EQ_INT(ms_text_finish(t, MS_FINISH_ABORT, out, 0, &st), MS_ERR_STATE);
  CHECK(out[0] == 'Z');
  { size_t n; CHECK(strcmp(ms_text_get(t, &n), "abcd") == 0 && n == 4); }
  free(mem);
}

/* vLLM corner rules checked one by one (vllm/v1/core/sched/utils.py
   check_stop; vllm/v1/engine/detokenizer.py update/check_stop_strings). */
static void test_vllm_corner_rules(void) {
  seqt s; ms_text_params p = ms_text_params_default();
  int32_t ids[] = {7};
  const char *stops[] = {"XYZW"}, *pre[] = {"abc", "ab"}, *lng[] = {"0123456789"}, *u[] = {"\xC3\xA9!"};
  /* a stop token on the max_tokens step: "stop" with the id (stop ids are
     checked before the length cap) */
  p.stop_token_ids = ids; p.n_stop_token_ids = 1; p.max_tokens = 2;
  seq_open(&s, &p, 0);
  seq_pushs(&s, 1, "a"); seq_pushs(&s, 7, "<eot>");
  CHECK_EQ_INT(s.last.finish, MS_FINISH_STOP);
  CHECK_EQ_INT(s.last.stop_reason.kind, MS_STOP_TOKEN); CHECK_EQ_INT(s.last.stop_reason.token, 7);
  ACC_IS(&s, "a");
  seq_close(&s);
  /* with include_stop_str_in_output the stop token's text is kept, and a stop
     string in it turns stop_reason into the string */
  p.include_stop_str_in_output = 1; p.max_tokens = 0; p.stop = stops; p.n_stop = 1;
  seq_open(&s, &p, 0);
  seq_pushs(&s, 1, "a"); seq_pushs(&s, 7, "XYZWq");
  CHECK_EQ_INT(s.last.stop_reason.kind, MS_STOP_STRING);
  ACC_IS(&s, "aXYZW");
  seq_close(&s);
  /* min_tokens: a match inside the first min_tokens' text is never found
     later, one that ends after it is (the window reaches len(stop)-1 back) */
  p = ms_text_params_default(); p.stop = stops; p.n_stop = 1; p.min_tokens = 2;
  seq_open(&s, &p, 0);
  seq_pushs(&s, 1, "XYZW"); seq_pushs(&s, 2, "XY"); seq_pushs(&s, 3, "q");
  CHECK_EQ_INT(s.last.finish, MS_FINISH_NONE);
  seq_pushs(&s, 4, "XY"); seq_pushs(&s, 5, "ZW");
  CHECK_EQ_INT(s.last.finish, MS_FINISH_STOP);
  ACC_IS(&s, "XYZWXYq");
  seq_close(&s);
  seq_open(&s, &p, 0);
  seq_pushs(&s, 1, "q"); seq_pushs(&s, 2, "XYZ"); seq_pushs(&s, 3, "W");   /* straddles token 2 | 3 */
  CHECK_EQ_INT(s.last.finish, MS_FINISH_STOP);
  ACC_IS(&s, "q");
  seq_close(&s);
  /* a stop that is a prefix of another completes first and wins */
  p = ms_text_params_default(); p.stop = pre; p.n_stop = 2;
  seq_open(&s, &p, 0);
  seq_pushs(&s, 1, "xabc");
  CHECK_EQ_INT(s.last.stop_reason.index, 1);
  ACC_IS(&s, "x");
  seq_close(&s);
  /* a stop longer than the whole output: held back while streaming, all
     flushed at the end */
  p.stop = lng; p.n_stop = 1;
  seq_open(&s, &p, 0);
  seq_pushs(&s, 1, "01234");
  CHECK_EQ_INT(s.acc_n, 0);
  seq_end(&s, MS_FINISH_LENGTH);
  CHECK_EQ_INT(s.last.finish, MS_FINISH_LENGTH);
  ACC_IS(&s, "01234");
  seq_close(&s);
  /* a stop string whose first character is split over two tokens */
  p.stop = u;
  seq_open(&s, &p, 0);
  seq_push(&s, 1, "x\xC3", 2); seq_push(&s, 2, "\xA9", 1);
  CHECK_EQ_INT(s.last.finish, MS_FINISH_NONE);
  seq_pushs(&s, 3, "!tail");
  CHECK_EQ_INT(s.last.finish, MS_FINISH_STOP);
  ACC_IS(&s, "x");
  seq_close(&s);
}

/* ---- the round-trip property over random cases ---- */
static uint64_t rng_state = 88172645463325252ull;
static uint32_t rnd(void) { rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17; return (uint32_t)rng_state; }

static void random_bytes(char *b, size_t n, const char *const *stops, int n_stops) {
  /* A mix of ASCII from a tiny alphabet (so stops occur), multi-byte
     characters, stop strings and raw garbage. */
  static const char *pieces[] = {"a", "b", "S", "T", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\xE2\x80\xA8"};
  size_t i = 0;
  while (i < n) {
    uint32_t r = rnd() % 100;
    const char *pc; size_t l;
    if (r < 60) pc = pieces[rnd() % 8];
    else if (r < 70 && n_stops) pc = stops[rnd() % (uint32_t)n_stops];
    else { b[i++] = (char)(rnd() & 0xFF); continue; }
    l = strlen(pc);
    if (l > n - i) l = n - i;
    memcpy(b + i, pc, l); i += l;
  }
}

static void test_round_trip_random(void) {
  static const char *pool[] = {"ST", "a\xC3\xA9", "TaS", "\xE2\x82\xAC\xE2\x82\xAC", "bbb", "\xF0\x9F\x98\x80" "a", "Sa", "\xEF\xBF\xBD" "b"};
  int iter, failures = 0;
  for (iter = 0; iter < 4000 && failures < 5; iter++) {
    const char *stops[4];
    int n_stops = (int)(rnd() % 4), i, include = (int)(rnd() % 2), which, split;
    size_t n = rnd() % 80, ref_n, cut;
    char *bytes = (char *)malloc(n + 1), *ref;
    ms_text_params p = ms_text_params_default();
    for (i = 0; i < n_stops; i++) stops[i] = pool[rnd() % 8];
    random_bytes(bytes, n, stops, n_stops);
    ref = ref_lossy((const unsigned char *)bytes, n, &ref_n);
    cut = ref_final(ref, ref_n, stops, n_stops, include, &which);
    p.stop = stops; p.n_stop = n_stops; p.include_stop_str_in_output = include;
    p.holdback = (ms_holdback)(rnd() % 2);
    /* Two different random tokenizations must both give the reference. */
    for (split = 0; split < 2; split++) {
      seqt s; size_t pos = 0; int tok = 0;
      seq_open(&s, &p, 256);
      while (pos < n && s.last.finish == MS_FINISH_NONE) {
        size_t k = 1 + rnd() % 6;
        if (k > n - pos) k = n - pos;
        seq_push(&s, tok++, bytes + pos, k);
        pos += k;
        /* streamed text never shows a stop string unless included */
        for (i = 0; !include && i < n_stops; i++)
          if (ref_memmem(s.acc, s.acc_n, stops[i], strlen(stops[i]))) { CHECK_MSG(0, "stop string streamed"); failures++; }
      }
      if (s.last.finish == MS_FINISH_NONE) seq_end(&s, MS_FINISH_LENGTH);
      {
        size_t kn; const char *kept = ms_text_get(s.t, &kn);
        int ok = s.acc_n == cut && memcmp(s.acc, ref, cut) == 0 && kn == s.acc_n && memcmp(kept, s.acc, kn) == 0;
        CHECK_MSG(ok, "iter %d split %d: streamed %lu bytes, reference %lu", iter, split, (unsigned long)s.acc_n, (unsigned long)cut);
        if (!ok) failures++;
        CHECK_EQ_INT(s.last.finish, which >= 0 ? MS_FINISH_STOP : MS_FINISH_LENGTH);
        if (which >= 0) CHECK(s.last.stop_reason.len == strlen(stops[which]) && memcmp(s.last.stop_reason.str, stops[which], s.last.stop_reason.len) == 0);
      }
      seq_close(&s);
    }
    free(bytes); free(ref);
  }
}

int main(void) {
  RUN(test_ascii_no_stops);
  RUN(test_empty_tokens_and_content);
  RUN(test_four_byte_char_over_four_tokens);
  RUN(test_invalid_bytes);
  RUN(test_stop_split_over_three_tokens);
  RUN(test_only_a_stop_string);
  RUN(test_include_stop_no_holdback);
  RUN(test_earliest_match_wins);
  RUN(test_stop_tokens_and_eos);
  RUN(test_max_tokens_and_pending);
  RUN(test_min_tokens);
  RUN(test_holdback_modes);
  RUN(test_huge_token);
  RUN(test_control_and_2028_pass_through);
  RUN(test_errors);
  RUN(test_vllm_corner_rules);
  RUN(test_round_trip_random);
  return t_done();
}
