/* JSON/SSE writer: every object is parsed back by the independent strict
   parser in json_check.h and its fields are checked. */
#include "mysample.h"
#include "testlib.h"
#include "json_check.h"
#include "egress_ref.h"
#include <stdlib.h>
#include <locale.h>

static char g_buf[1 << 16];

static ms_response *make_resp(ms_object obj, int no_sse, void **mem) {
  ms_response_desc d; ms_response *r = NULL; size_t sz;
  memset(&d, 0, sizeof d);
  d.object = obj; d.id = "chatcmpl-\x01q\"id"; d.model = "llama\xFF-3"; d.created = 1700000000; d.no_sse = no_sse;
  sz = ms_response_size(&d);
  *mem = malloc(sz);
  CHECK_EQ_INT(ms_response_init(&r, &d, *mem, sz), MS_OK);
  return r;
}

/* Writes with a size query first, checks the length matches, strips the SSE
   frame and parses. */
static jc_val *parse_sse(const char *s, size_t n) {
  char err[128]; jc_val *v;
  CHECK(n > 8 && memcmp(s, "data: ", 6) == 0 && s[n - 1] == '\n' && s[n - 2] == '\n');
  CHECK(memchr(s, '\n', n - 2) == NULL);      /* one line: SSE events cannot hold raw newlines */
  v = jc_parse(s + 6, n - 8, err, sizeof err);
  CHECK_MSG(v != NULL, "%s in %.*s", err, (int)n, s);
  return v;
}
static jc_val *parse_plain(const char *s, size_t n) {
  char err[128]; jc_val *v = jc_parse(s, n, err, sizeof err);
  CHECK_MSG(v != NULL, "%s in %.*s", err, (int)n, s);
  return v;
}

static size_t write_chunk(const ms_response *r, const ms_chunk *c) {
  ms_out q, o;
  memset(&q, 0, sizeof q);
  CHECK_EQ_INT(ms_chunk_write(&q, r, c), MS_ERR_BUFFER_TOO_SMALL);   /* size query */
  o = q; o.buf = g_buf; o.size = sizeof g_buf;
  CHECK_EQ_INT(ms_chunk_write(&o, r, c), MS_OK);
  CHECK_EQ_INT(o.len, q.len);
  CHECK_EQ_INT(strlen(g_buf), o.len);
  return o.len;
}

static void check_head(jc_val *v, const char *object) {
  static const char *const keys[] = {"id", "object", "created", "model", "choices"};
  int i;
  CHECK(v && v->t == JC_OBJ && v->n >= 5 && v->n <= 6);   /* + "usage" on the non-stream object */
  for (i = 0; v && i < 5 && i < v->n; i++) CHECK(strcmp(v->keys[i], keys[i]) == 0);
  if (v && v->n == 6) CHECK(strcmp(v->keys[5], "usage") == 0);
  CHECK(jc_is(jc_get(v, "id"), "chatcmpl-\x01q\"id"));
  CHECK(jc_is(jc_get(v, "object"), object));
  CHECK(jc_num(jc_get(v, "created")) == 1700000000.0);
  CHECK(jc_is(jc_get(v, "model"), "llama\xEF\xBF\xBD-3"));
}

static void test_chat_chunks(void) {
  void *mem; ms_response *r = make_resp(MS_OBJECT_CHAT, 0, &mem);
  ms_chunk c; jc_val *v, *ch; size_t n;
  static const char *const ck[] = {"index", "delta", "logprobs", "finish_reason", NULL};
  static const char *const ckf[] = {"index", "delta", "logprobs", "finish_reason", "stop_reason", NULL};
  /* first chunk: the role */
  memset(&c, 0, sizeof c); c.role = 1;
  n = write_chunk(r, &c);
  v = parse_sse(g_buf, n);
  check_head(v, "chat.completion.chunk");
  ch = jc_at(jc_get(v, "choices"), 0);
  CHECK(jc_keys_are(ch, ck));
  CHECK(jc_num(jc_get(ch, "index")) == 0);
  CHECK(jc_is(jc_get(jc_get(ch, "delta"), "role"), "assistant"));
  CHECK(jc_is(jc_get(jc_get(ch, "delta"), "content"), ""));
  CHECK(jc_get(ch, "logprobs")->t == JC_NULL && jc_get(ch, "finish_reason")->t == JC_NULL);
  jc_free(v);
  /* content with control characters, invalid bytes, U+2028/2029, quotes */
  memset(&c, 0, sizeof c); c.index = 2;
  c.text = "q\"\\\n\t\x01\x1f\x7f\xE2\x80\xA8\xE2\x80\xA9\xC3(\xF0\x9F\x98\x80/"; c.text_len = strlen(c.text);
  n = write_chunk(r, &c);
  CHECK(strstr(g_buf, "\\u2028\\u2029") != NULL);   /* escaped, never raw */
  CHECK(strstr(g_buf, "\xE2\x80\xA8") == NULL);
  v = parse_sse(g_buf, n);
  ch = jc_at(jc_get(v, "choices"), 0);
  CHECK(jc_num(jc_get(ch, "index")) == 2);
  {
    const char want[] = "q\"\\\n\t\x01\x1f\x7f\xE2\x80\xA8\xE2\x80\xA9\xEF\xBF\xBD(\xF0\x9F\x98\x80/";
    CHECK(jc_str_is(jc_get(jc_get(ch, "delta"), "content"), want, sizeof want - 1));
  }
  CHECK(jc_get(jc_get(ch, "delta"), "role") == NULL);
  jc_free(v);
  /* the final chunk: empty delta, finish_reason, vLLM stop_reason */
  memset(&c, 0, sizeof c); c.finish = MS_FINISH_STOP;
  c.stop_reason.kind = MS_STOP_STRING; c.stop_reason.str = "</s\x01>"; c.stop_reason.len = 5;
  n = write_chunk(r, &c);
  v = parse_sse(g_buf, n);
  ch = jc_at(jc_get(v, "choices"), 0);
  CHECK(jc_keys_are(ch, ckf));
  CHECK(jc_get(ch, "delta")->t == JC_OBJ && jc_get(ch, "delta")->n == 0);
  CHECK(jc_is(jc_get(ch, "finish_reason"), "stop"));
  CHECK(jc_is(jc_get(ch, "stop_reason"), "</s\x01>"));
  jc_free(v);
  c.finish = MS_FINISH_STOP; c.stop_reason.kind = MS_STOP_TOKEN; c.stop_reason.token = 128009;
  n = write_chunk(r, &c);
  v = parse_sse(g_buf, n);
  CHECK(jc_num(jc_get(jc_at(jc_get(v, "choices"), 0), "stop_reason")) == 128009.0);
  jc_free(v);
  c.finish = MS_FINISH_LENGTH; c.stop_reason.kind = MS_STOP_NONE;
  n = write_chunk(r, &c);
  v = parse_sse(g_buf, n);
  CHECK(jc_is(jc_get(jc_at(jc_get(v, "choices"), 0), "finish_reason"), "length"));
  CHECK(jc_get(jc_at(jc_get(v, "choices"), 0), "stop_reason")->t == JC_NULL);
  jc_free(v);
  free(mem);
}

/* A hand-written expected chunk (the OpenAI reference's shape), so the test
   does not only compare the writer with itself. */
static void test_exact_bytes(void) {
  ms_response_desc d; ms_response *r; char mem[512]; ms_chunk c; ms_out o; ms_usage u;
  union { char c[1024]; double align; } m;
  memset(&d, 0, sizeof d);
  d.id = "chatcmpl-123"; d.model = "gpt-4o-mini"; d.created = 1694268190; d.system_fingerprint = "fp_44709d6fcb";
  (void)mem;
  CHECK(ms_response_size(&d) <= sizeof m.c);
  CHECK_EQ_INT(ms_response_init(&r, &d, m.c, sizeof m.c), MS_OK);
  memset(&c, 0, sizeof c); c.text = "Hello"; c.text_len = 5;
  memset(&o, 0, sizeof o); o.buf = g_buf; o.size = sizeof g_buf;
  CHECK_EQ_INT(ms_chunk_write(&o, r, &c), MS_OK);
  CHECK(strcmp(g_buf, "data: {\"id\":\"chatcmpl-123\",\"object\":\"chat.completion.chunk\",\"created\":1694268190,"
                      "\"model\":\"gpt-4o-mini\",\"system_fingerprint\":\"fp_44709d6fcb\",\"choices\":[{\"index\":0,"
                      "\"delta\":{\"content\":\"Hello\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n") == 0);
  u.prompt_tokens = 9; u.completion_tokens = 12;
  CHECK_EQ_INT(ms_usage_chunk_write(&o, r, &u), MS_OK);
  CHECK(strcmp(g_buf, "data: {\"id\":\"chatcmpl-123\",\"object\":\"chat.completion.chunk\",\"created\":1694268190,"
                      "\"model\":\"gpt-4o-mini\",\"system_fingerprint\":\"fp_44709d6fcb\",\"choices\":[],"
                      "\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":12,\"total_tokens\":21}}\n\n") == 0);
  /* a total past int64 is refused, not wrapped */
  u.prompt_tokens = INT64_MAX; u.completion_tokens = 1;
  CHECK_EQ_INT(ms_usage_chunk_write(&o, r, &u), MS_ERR_INVALID_PARAM);
  CHECK_EQ_INT(ms_response_write(&o, r, NULL, 0, &u), MS_ERR_INVALID_PARAM);
  u.prompt_tokens = INT64_MAX - 1;
  CHECK_EQ_INT(ms_usage_chunk_write(&o, r, &u), MS_OK);
  CHECK(strstr(g_buf, "\"total_tokens\":9223372036854775807}") != NULL);
  CHECK_EQ_INT(ms_done_write(&o), MS_OK);
  CHECK(strcmp(g_buf, "data: [DONE]\n\n") == 0);
  CHECK_EQ_INT(o.len, 14);
}

static void make_top(ms_token *top, int n, unsigned char (*bytes)[4]) {
  int j;
  for (j = 0; j < n; j++) {
    bytes[j][0] = (unsigned char)('a' + j); bytes[j][1] = (unsigned char)(j == 3 ? 0xE2 : 'x');
    top[j].token = 1000 + j; top[j].logprob = -0.1f * (float)(j + 1) - 0.0123f;
    top[j].bytes = bytes[j]; top[j].n_bytes = 2;
  }
}

static void test_chat_logprobs(void) {
  void *mem; ms_response *r = make_resp(MS_OBJECT_CHAT, 1, &mem);
  ms_token top[20]; unsigned char tb[20][4]; ms_token_logprobs lp[2]; ms_chunk c; ms_out o;
  jc_val *v, *content, *e, *t; int j;
  static const char *const ek[] = {"token", "logprob", "bytes", "top_logprobs", NULL};
  static const char *const tk[] = {"token", "logprob", "bytes", NULL};
  make_top(top, 20, tb);
  memset(lp, 0, sizeof lp);
  lp[0].tok.token = 5; lp[0].tok.logprob = -0.3132617f; lp[0].tok.bytes = (const unsigned char *)"\xE2\x82"; lp[0].tok.n_bytes = 2;
  lp[0].top = top; lp[0].n_top = 20;
  lp[1].tok.token = 6; lp[1].tok.logprob = -(float)INFINITY; lp[1].tok.bytes = (const unsigned char *)"\xAC"; lp[1].tok.n_bytes = 1;
  lp[1].top = NULL; lp[1].n_top = 0;
  top[5].logprob = (float)NAN; top[6].logprob = -12345.0f; top[7].logprob = (float)INFINITY;
  memset(&c, 0, sizeof c); c.text = "\xE2\x82\xAC"; c.text_len = 3; c.logprobs = lp; c.n_logprobs = 2;
  memset(&o, 0, sizeof o); o.buf = g_buf; o.size = sizeof g_buf;
  CHECK_EQ_INT(ms_chunk_write(&o, r, &c), MS_OK);
  CHECK(strstr(g_buf, "NaN") == NULL && strstr(g_buf, "Infinity") == NULL);
  v = parse_plain(g_buf, o.len);        /* no_sse: bare JSON */
  content = jc_get(jc_get(jc_at(jc_get(v, "choices"), 0), "logprobs"), "content");
  CHECK(content && content->t == JC_ARR && content->n == 2);
  e = jc_at(content, 0);
  CHECK(jc_keys_are(e, ek));
  CHECK(jc_is(jc_get(e, "token"), "\xEF\xBF\xBD"));      /* a piece of a character: U+FFFD */
  CHECK((float)jc_num(jc_get(e, "logprob")) == -0.3132617f);
  CHECK(jc_get(e, "bytes")->n == 2 && jc_num(jc_at(jc_get(e, "bytes"), 0)) == 0xE2 && jc_num(jc_at(jc_get(e, "bytes"), 1)) == 0x82);
  CHECK(jc_get(e, "top_logprobs")->n == 20);
  for (j = 0; j < 20; j++) {
    t = jc_at(jc_get(e, "top_logprobs"), j);
    CHECK(jc_keys_are(t, tk));
    if (j >= 5 && j <= 7) CHECK(jc_num(jc_get(t, "logprob")) == -9999.0);
    else CHECK((float)jc_num(jc_get(t, "logprob")) == top[j].logprob);
    CHECK(jc_num(jc_at(jc_get(t, "bytes"), 0)) == 'a' + j);
  }
  e = jc_at(content, 1);
  CHECK(jc_num(jc_get(e, "logprob")) == -9999.0);
  CHECK(jc_get(e, "top_logprobs")->t == JC_ARR && jc_get(e, "top_logprobs")->n == 0);
  jc_free(v);
  free(mem);
}

static void test_completion_objects(void) {
  void *mem; ms_response *r = make_resp(MS_OBJECT_COMPLETION, 0, &mem);
  ms_token top[4]; ms_token_logprobs lp[2]; ms_chunk c; ms_choice ch[2]; ms_usage u; ms_out o;
  jc_val *v, *l, *tl; char err[100];
  static const char *const lk[] = {"text_offset", "token_logprobs", "tokens", "top_logprobs", NULL};
  static const char *const ck[] = {"index", "text", "logprobs", "finish_reason", "stop_reason", NULL};
  memset(top, 0, sizeof top); memset(lp, 0, sizeof lp);
  top[0].bytes = (const unsigned char *)"Hi"; top[0].n_bytes = 2; top[0].logprob = -0.5f;
  top[1].bytes = (const unsigned char *)"\xFF"; top[1].n_bytes = 1; top[1].logprob = -1.5f;
  top[2].bytes = (const unsigned char *)"\xFE"; top[2].n_bytes = 1; top[2].logprob = -2.5f;   /* same decoded key */
  top[3].bytes = (const unsigned char *)"Hi"; top[3].n_bytes = 2; top[3].logprob = -3.5f;    /* repeated key */
  lp[0].tok = top[0]; lp[0].top = top; lp[0].n_top = 4; lp[0].text_offset = 0;
  lp[1].tok.bytes = (const unsigned char *)" there"; lp[1].tok.n_bytes = 6; lp[1].tok.logprob = -1e-7f; lp[1].text_offset = 2;
  memset(&c, 0, sizeof c); c.text = "Hi there"; c.text_len = 8; c.logprobs = lp; c.n_logprobs = 2;
  memset(&o, 0, sizeof o); o.buf = g_buf; o.size = sizeof g_buf;
  CHECK_EQ_INT(ms_chunk_write(&o, r, &c), MS_OK);
  v = parse_sse(g_buf, o.len);
  check_head(v, "text_completion");
  l = jc_get(jc_at(jc_get(v, "choices"), 0), "logprobs");
  CHECK(jc_keys_are(l, lk));
  CHECK(jc_num(jc_at(jc_get(l, "text_offset"), 1)) == 2);
  CHECK((float)jc_num(jc_at(jc_get(l, "token_logprobs"), 1)) == -1e-7f);
  CHECK(jc_is(jc_at(jc_get(l, "tokens"), 1), " there"));
  tl = jc_at(jc_get(l, "top_logprobs"), 0);
  /* the sampled token, then the alternatives, one key per decoded string
     (the parser rejects repeats) at its first place with its last value,
     as vLLM's dict comprehension */
  CHECK(tl && tl->t == JC_OBJ && tl->n == 2);
  CHECK(tl && tl->n == 2 && strcmp(tl->keys[0], "Hi") == 0);
  CHECK(jc_num(jc_get(tl, "Hi")) == -3.5 && jc_num(jc_get(tl, "\xEF\xBF\xBD")) == -2.5);
  CHECK(jc_at(jc_get(l, "top_logprobs"), 1)->t == JC_NULL);
  jc_free(v);
  /* a sampled token outside the alternatives comes first: logprobs + 1 keys */
  lp[1].top = top + 1; lp[1].n_top = 1;
  CHECK_EQ_INT(ms_chunk_write(&o, r, &c), MS_OK);
  v = parse_sse(g_buf, o.len);
  tl = jc_at(jc_get(jc_get(jc_at(jc_get(v, "choices"), 0), "logprobs"), "top_logprobs"), 1);
  CHECK(tl && tl->t == JC_OBJ && tl->n == 2 && strcmp(tl->keys[0], " there") == 0);
  CHECK((float)jc_num(jc_get(tl, " there")) == -1e-7f && jc_num(jc_get(tl, "\xEF\xBF\xBD")) == -1.5);
  jc_free(v);
  lp[1].top = NULL; lp[1].n_top = 0;
  /* non-stream with two choices and usage */
  memset(ch, 0, sizeof ch);
  ch[0].index = 0; ch[0].text = "Hi there"; ch[0].text_len = 8; ch[0].logprobs = lp; ch[0].n_logprobs = 2; ch[0].finish = MS_FINISH_LENGTH;
  ch[1].index = 1; ch[1].text = NULL; ch[1].finish = MS_FINISH_STOP; ch[1].stop_reason.kind = MS_STOP_TOKEN; ch[1].stop_reason.token = 7;
  u.prompt_tokens = 3; u.completion_tokens = 4;
  CHECK_EQ_INT(ms_response_write(&o, r, ch, 2, &u), MS_OK);
  v = jc_parse(g_buf, o.len, err, sizeof err);
  CHECK_MSG(v != NULL, "%s", err);
  check_head(v, "text_completion");
  CHECK(jc_keys_are(jc_at(jc_get(v, "choices"), 0), ck));
  CHECK(jc_is(jc_get(jc_at(jc_get(v, "choices"), 0), "text"), "Hi there"));
  CHECK(jc_is(jc_get(jc_at(jc_get(v, "choices"), 1), "text"), ""));
  CHECK(jc_num(jc_get(jc_at(jc_get(v, "choices"), 1), "index")) == 1);
  CHECK(jc_num(jc_get(jc_at(jc_get(v, "choices"), 1), "stop_reason")) == 7);
  CHECK(jc_num(jc_get(jc_get(v, "usage"), "total_tokens")) == 7);
  jc_free(v);
  free(mem);
}

/* Legacy top_logprobs keys are decoded strings: distinct characters that
   share their leading bytes (2-, 3- and 4-byte sequences) stay distinct
   keys, byte strings that decode alike (a character then different
   invalid bytes: both end in U+FFFD) are one key with the last value. */
static void test_completion_top_keys_decoded(void) {
  void *mem; ms_response *r = make_resp(MS_OBJECT_COMPLETION, 0, &mem);
  static const char *const want[] = { "\xC3\xA9", "\xC3\xA8", "\xE2\x82\xAC", "\xE2\x82\xAD", "\xF0\x9F\x98\x80",
                                      "\xF0\x9F\x98\x81", "\xC3\xA9\xEF\xBF\xBD" };
  static const char *const tops[] = { "\xC3\xA8", "\xE2\x82\xAC", "\xE2\x82\xAD", "\xF0\x9F\x98\x80", "\xF0\x9F\x98\x81",
                                      "\xC3\xA9\xFF", "\xC3\xA9\xFE" };
  ms_token top[7]; ms_token_logprobs lp; ms_chunk c; ms_out o;
  jc_val *v, *tl;
  int i;
  memset(top, 0, sizeof top); memset(&lp, 0, sizeof lp); memset(&c, 0, sizeof c);
  for (i = 0; i < 7; i++) {
    top[i].bytes = (const unsigned char *)tops[i]; top[i].n_bytes = (int32_t)strlen(tops[i]); top[i].logprob = -1.0f - (float)i;
  }
  lp.tok.bytes = (const unsigned char *)"\xC3\xA9"; lp.tok.n_bytes = 2; lp.tok.logprob = -0.25f;
  lp.top = top; lp.n_top = 7;
  c.text = "\xC3\xA9"; c.text_len = 2; c.logprobs = &lp; c.n_logprobs = 1;
  memset(&o, 0, sizeof o); o.buf = g_buf; o.size = sizeof g_buf;
  CHECK_EQ_INT(ms_chunk_write(&o, r, &c), MS_OK);
  v = parse_sse(g_buf, o.len);
  tl = jc_at(jc_get(jc_get(jc_at(jc_get(v, "choices"), 0), "logprobs"), "top_logprobs"), 0);
  CHECK_MSG(tl && tl->t == JC_OBJ && tl->n == 7, "%d keys", tl ? (int)tl->n : -1);
  for (i = 0; tl && i < 7 && i < (int)tl->n; i++) CHECK_MSG(strcmp(tl->keys[i], want[i]) == 0, "key %d", i);
  CHECK(jc_num(jc_get(tl, want[0])) == -0.25 && jc_num(jc_get(tl, want[5])) == -5.0);
  CHECK(jc_num(jc_get(tl, want[6])) == -7.0);   /* the last of the two that decode alike */
  jc_free(v);
  free(mem);
}

static void test_chat_completion_nonstream(void) {
  void *mem; ms_response *r = make_resp(MS_OBJECT_CHAT, 0, &mem);
  ms_choice ch; ms_usage u; ms_out o; jc_val *v, *c0;
  static const char *const top[] = {"id", "object", "created", "model", "choices", "usage", NULL};
  static const char *const ck[] = {"index", "message", "logprobs", "finish_reason", "stop_reason", NULL};
  static const char *const mk[] = {"role", "content", NULL};
  memset(&ch, 0, sizeof ch); ch.text = "line1\nline2\xE2\x80\xA9"; ch.text_len = strlen(ch.text); ch.finish = MS_FINISH_STOP;
  u.prompt_tokens = 10; u.completion_tokens = 2;
  memset(&o, 0, sizeof o); o.buf = g_buf; o.size = sizeof g_buf;
  CHECK_EQ_INT(ms_response_write(&o, r, &ch, 1, &u), MS_OK);
  v = parse_plain(g_buf, o.len);
  CHECK(jc_keys_are(v, top));
  CHECK(jc_is(jc_get(v, "object"), "chat.completion"));
  c0 = jc_at(jc_get(v, "choices"), 0);
  CHECK(jc_keys_are(c0, ck));
  CHECK(jc_keys_are(jc_get(c0, "message"), mk));
  CHECK(jc_is(jc_get(jc_get(c0, "message"), "content"), "line1\nline2\xE2\x80\xA9"));
  CHECK(jc_get(c0, "logprobs")->t == JC_NULL);
  CHECK(jc_get(c0, "stop_reason")->t == JC_NULL);
  CHECK(jc_num(jc_get(jc_get(v, "usage"), "prompt_tokens")) == 10);
  jc_free(v);
  CHECK_EQ_INT(ms_response_write(&o, r, &ch, 1, NULL), MS_OK);   /* no usage */
  v = parse_plain(g_buf, o.len);
  CHECK(jc_get(v, "usage") == NULL);
  jc_free(v);
  free(mem);
}

static void test_error_object(void) {
  ms_error e; ms_out o; jc_val *v, *er;
  static const char *const ek[] = {"message", "type", "param", "code", NULL};
  memset(&e, 0, sizeof e); e.message = "temperature must be non-negative, got -1.0.\n\xFF"; e.param = "temperature"; e.code_num = 400;
  memset(&o, 0, sizeof o); o.buf = g_buf; o.size = sizeof g_buf;
  CHECK_EQ_INT(ms_error_write(&o, &e, 0), MS_OK);
  v = parse_plain(g_buf, o.len);
  er = jc_get(v, "error");
  CHECK(v->n == 1 && jc_keys_are(er, ek));
  CHECK(jc_is(jc_get(er, "message"), "temperature must be non-negative, got -1.0.\n\xEF\xBF\xBD"));
  CHECK(jc_is(jc_get(er, "type"), "invalid_request_error"));
  CHECK(jc_is(jc_get(er, "param"), "temperature"));
  CHECK(jc_num(jc_get(er, "code")) == 400);
  jc_free(v);
  e.param = NULL; e.code = NULL; e.code_num = 0; e.type = "BadRequestError";
  CHECK_EQ_INT(ms_error_write(&o, &e, 1), MS_OK);
  v = parse_sse(g_buf, o.len);
  CHECK(jc_get(jc_get(v, "error"), "param")->t == JC_NULL && jc_get(jc_get(v, "error"), "code")->t == JC_NULL);
  jc_free(v);
  CHECK_EQ_INT(ms_error_write(&o, NULL, 0), MS_ERR_NULL_ARGUMENT);
}

/* Buffer edges and the callback: the same bytes whatever the sink. */
typedef struct cbacc { char b[1 << 14]; size_t n; int calls, stop_after; } cbacc;
static int cb(void *u, const char *s, size_t n) {
  cbacc *a = (cbacc *)u;
  memcpy(a->b + a->n, s, n); a->n += n; a->calls++;
  return a->stop_after && a->calls >= a->stop_after;
}
static void test_sinks(void) {
  void *mem; ms_response *r = make_resp(MS_OBJECT_CHAT, 0, &mem);
  ms_chunk c; ms_out o; size_t full, sz; char *exact; cbacc *a = (cbacc *)calloc(1, sizeof(cbacc)); char stage[64];
  char text[300]; int i;
  for (i = 0; i < 300; i++) text[i] = (char)(i % 7 == 0 ? 0xE2 : i % 7 == 1 ? 0x80 : i % 7 == 2 ? 0xA8 : i % 11 == 0 ? 1 : 'a' + i % 26);
  memset(&c, 0, sizeof c); c.text = text; c.text_len = sizeof text;
  memset(&o, 0, sizeof o); o.buf = g_buf; o.size = sizeof g_buf;
  CHECK_EQ_INT(ms_chunk_write(&o, r, &c), MS_OK);
  full = o.len;
  /* every short size: too small, and the length is still right */
  for (sz = 0; sz <= full; sz++) {
    exact = (char *)malloc(sz + 1);
    o.buf = exact; o.size = sz;
    CHECK_EQ_INT(ms_chunk_write(&o, r, &c), MS_ERR_BUFFER_TOO_SMALL);
    CHECK_EQ_INT(o.len, full);
    if (sz) CHECK(memcmp(exact, g_buf, strlen(exact)) == 0);   /* a prefix, NUL-terminated */
    free(exact);
  }
  exact = (char *)malloc(full + 1);
  o.buf = exact; o.size = full + 1;
  CHECK_EQ_INT(ms_chunk_write(&o, r, &c), MS_OK);
  CHECK(memcmp(exact, g_buf, full + 1) == 0);
  free(exact);
  /* callback with a 64-byte stage, and with the internal one */
  o.buf = stage; o.size = sizeof stage; o.write = cb; o.user = a;
  CHECK_EQ_INT(ms_chunk_write(&o, r, &c), MS_OK);
  CHECK(a->n == full && memcmp(a->b, g_buf, full) == 0 && o.len == full);
  CHECK(a->calls > 1);
  memset(a, 0, sizeof *a); o.buf = NULL; o.size = 0;
  CHECK_EQ_INT(ms_chunk_write(&o, r, &c), MS_OK);
  CHECK(a->n == full && memcmp(a->b, g_buf, full) == 0);
  memset(a, 0, sizeof *a); a->stop_after = 1; o.buf = stage; o.size = sizeof stage;
  CHECK_EQ_INT(ms_chunk_write(&o, r, &c), MS_ERR_CALLBACK);
  CHECK_EQ_INT(a->calls, 1);
  /* bad arguments are caught before any byte goes out */
  memset(a, 0, sizeof *a); c.n_logprobs = 1;
  CHECK_EQ_INT(ms_chunk_write(&o, r, &c), MS_ERR_INVALID_PARAM);
  CHECK_EQ_INT(a->calls, 0);
  c.n_logprobs = 0; c.finish = (ms_finish)99;
  CHECK_EQ_INT(ms_chunk_write(&o, r, &c), MS_ERR_INVALID_PARAM);
  c.finish = MS_FINISH_NONE; c.index = -1;
  CHECK_EQ_INT(ms_chunk_write(&o, r, &c), MS_ERR_INVALID_PARAM);
  CHECK_EQ_INT(ms_chunk_write(NULL, r, &c), MS_ERR_NULL_ARGUMENT);
  free(a); free(mem);
}

/* Any bytes give a valid JSON string whose content is the lossy decode. */
static uint64_t rs = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return (uint32_t)rs; }
static void test_strings_any_bytes(void) {
  int iter, b, bad = 0;
  unsigned char in[70];
  ms_out o; memset(&o, 0, sizeof o); o.buf = g_buf; o.size = sizeof g_buf;
  for (b = 0; b < 256; b++) {
    jc_val *v; size_t rn; char *ref;
    in[0] = (unsigned char)b;
    CHECK_EQ_INT(ms_json_string_write(&o, in, 1), MS_OK);
    v = parse_plain(g_buf, o.len);
    ref = ref_lossy(in, 1, &rn);
    CHECK_MSG(v && jc_str_is(v, ref, rn), "byte %d", b);
    jc_free(v); free(ref);
  }
  for (iter = 0; iter < 20000 && bad < 5; iter++) {
    size_t n = rnd() % 70, i, rn; jc_val *v; char *ref, err[100];
    for (i = 0; i < n; i++) {
      uint32_t k = rnd() % 10;
      in[i] = (unsigned char)(k < 3 ? 0x80 + rnd() % 64 : k < 5 ? 0xC0 + rnd() % 64 : k < 7 ? rnd() % 256 : k < 8 ? rnd() % 32 : 'a');
    }
    CHECK_EQ_INT(ms_json_string_write(&o, in, n), MS_OK);
    v = jc_parse(g_buf, o.len, err, sizeof err);
    ref = ref_lossy(in, n, &rn);
    if (!v || !jc_str_is(v, ref, rn)) { bad++; CHECK_MSG(0, "iteration %d: %s", iter, v ? "content differs" : err); }
    jc_free(v); free(ref);
  }
}

/* Floats: shortest digits that read back as the same float. printf/strtof in
   the "C" locale serve as the oracle here (the library never uses them). */
static void test_floats(void) {
  static const struct { float v; const char *s; } fixed[] = {
    {0.0f, "0.0"}, {-0.25f, "-0.25"}, {1e-5f, "1e-05"}, {0.0001f, "0.0001"}, {-9999.0f, "-9999.0"},
    {3.4028235e38f, "3.4028235e+38"}, {1e16f, "1e+16"}, {123.0f, "123.0"}, {0.1f, "0.1"},
    {1.17549435e-38f, "1.1754944e-38"}, {1e-45f, "1e-45"}, {-0.31326166f, "-0.31326166"}
  };
  unsigned i; int bad = 0; char b[24];
  for (i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
    ms_json_float(b, fixed[i].v);
    CHECK_MSG(strcmp(b, fixed[i].s) == 0, "%s vs %s", b, fixed[i].s);
  }
  ms_json_float(b, -0.0f); CHECK(strcmp(b, "-0.0") == 0);
  /* non-finite values as Python's json writes them (ms__w_logprob never
     passes them: -9999.0) */
  CHECK(ms_json_float(b, NAN) == 3 && strcmp(b, "NaN") == 0);
  CHECK(ms_json_float(b, INFINITY) == 8 && strcmp(b, "Infinity") == 0);
  CHECK(ms_json_float(b, -INFINITY) == 9 && strcmp(b, "-Infinity") == 0);
  for (i = 0; i < 300000 && bad < 5; i++) {
    uint32_t bits = rnd(); float v, back; int p, nd = 0; const char *q;
    memcpy(&v, &bits, 4);
    if (v != v || v - v != 0.0f) continue;
    ms_json_float(b, v);
    back = strtof(b, NULL);
    if (memcmp(&back, &v, 4) != 0) { bad++; CHECK_MSG(0, "%08x -> %s does not read back", (unsigned)bits, b); }
    {   /* significant digits: all digits of the mantissa without leading and trailing zeros */
      char dg[32]; int k = 0, lo = 0, hi;
      for (q = b; *q && *q != 'e'; q++) if (*q >= '0' && *q <= '9') dg[k++] = *q;
      hi = k;
      while (lo < hi && dg[lo] == '0') lo++;
      while (hi > lo && dg[hi - 1] == '0') hi--;
      nd = hi - lo;
    }
    for (p = 1; p < nd; p++) {
      char t[48]; snprintf(t, sizeof t, "%.*e", p - 1, (double)v);
      if (strtof(t, NULL) == v) { bad++; CHECK_MSG(0, "%s is longer than %s", b, t); break; }
    }
  }
}

static void test_locale_independent(void) {
  char b[24]; const char *ok = setlocale(LC_NUMERIC, "de_DE.UTF-8");
  if (!ok) ok = setlocale(LC_NUMERIC, "fr_FR.UTF-8");
  if (!ok) SKIP("no locale with a decimal comma is installed");
  ms_json_float(b, -0.5f);
  CHECK(strcmp(b, "-0.5") == 0);
  setlocale(LC_NUMERIC, "C");
}

int main(void) {
  RUN(test_chat_chunks);
  RUN(test_exact_bytes);
  RUN(test_chat_logprobs);
  RUN(test_completion_objects);
  RUN(test_completion_top_keys_decoded);
  RUN(test_chat_completion_nonstream);
  RUN(test_error_object);
  RUN(test_sinks);
  RUN(test_strings_any_bytes);
  RUN(test_floats);
  RUN(test_locale_independent);
  return t_done();
}
