/* libFuzzer target: the JSON/SSE writer. Random bytes become the text, the
   id, the model, token bytes and logprobs of a chunk and of a non-stream
   object; invariants: the strict parser in tests/json_check.h accepts every
   object, strings decode to the lossy UTF-8 of the input, a size query gives
   the same length, and the callback path gives the same bytes. */
#define MYSAMPLE_IMPLEMENTATION
#include "mysample.h"
#include "json_check.h"
#include "egress_ref.h"
#include <stdlib.h>

static char g_cb[1 << 20]; static size_t g_cbn;
static int cb(void *u, const char *b, size_t n) { (void)u; if (g_cbn + n <= sizeof g_cb) memcpy(g_cb + g_cbn, b, n); g_cbn += n; return 0; }

static void check_obj(const char *s, size_t n, int sse) {
  jc_val *v;
  if (sse) {
    if (n < 8 || memcmp(s, "data: ", 6) != 0 || s[n - 1] != '\n' || s[n - 2] != '\n') abort();
    s += 6; n -= 8;
  }
  v = jc_parse(s, n, NULL, 0);
  if (!v) abort();
  jc_free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char buf[1 << 20]; static char rmem[1 << 12];
  ms_response_desc rd; ms_response *r; ms_token top[8]; ms_token_logprobs lp[3]; ms_chunk c; ms_choice ch; ms_usage u;
  ms_out o, q; char id[32], model[32]; size_t i, cut; int j;
  float f[12];
  if (size < sizeof(float) * 12 + 64) return 0;
  memcpy(f, data, sizeof f); data += sizeof f; size -= sizeof f;   /* raw float bits: NaN, Inf, subnormals */
  memcpy(id, data, 31); id[31] = 0; memcpy(model, data + 8, 16); model[16] = 0;
  memset(&rd, 0, sizeof rd);
  rd.object = (data[0] & 1) ? MS_OBJECT_COMPLETION : MS_OBJECT_CHAT; rd.id = id; rd.model = model;
  rd.created = (int64_t)data[1] * 1000003; rd.no_sse = (data[2] & 1); rd.no_stop_reason = (data[2] >> 1) & 1;
  if (ms_response_size(&rd) > sizeof rmem || ms_response_init(&r, &rd, rmem, sizeof rmem) != MS_OK) abort();
  cut = size / 2;
  for (j = 0; j < 8; j++) { top[j].token = j; top[j].logprob = f[j]; top[j].bytes = data + j; top[j].n_bytes = (size_t)(data[j] % 9); }
  memset(lp, 0, sizeof lp);
  for (j = 0; j < 3; j++) { lp[j].tok = top[j]; lp[j].tok.logprob = f[8 + j]; lp[j].top = (data[3] >> j) & 1 ? top : NULL; lp[j].n_top = lp[j].top ? data[4 + j] % 9 : 0; lp[j].text_offset = j; }
  memset(&c, 0, sizeof c);
  c.index = data[5] % 4; c.role = data[6] & 1; c.text = (const char *)data + 16; c.text_len = cut > 16 ? cut - 16 : 0;
  if (data[7] & 1) c.text = NULL, c.text_len = 0;
  c.logprobs = (data[7] & 2) ? lp : NULL; c.n_logprobs = c.logprobs ? 3 : 0;
  c.finish = (ms_finish)(data[8] % MS__FINISH_COUNT_);
  c.stop_reason.kind = (ms_stop_kind)(data[9] % 3); c.stop_reason.token = (int32_t)data[10] - 5;
  c.stop_reason.str = (const char *)data + cut; c.stop_reason.len = size - cut;
  memset(&q, 0, sizeof q);
  if (ms_chunk_write(&q, r, &c) != MS_ERR_BUFFER_TOO_SMALL) abort();
  memset(&o, 0, sizeof o); o.buf = buf; o.size = sizeof buf;
  if (ms_chunk_write(&o, r, &c) != MS_OK || o.len != q.len) abort();
  check_obj(buf, o.len, !rd.no_sse);
  g_cbn = 0; memset(&q, 0, sizeof q); q.write = cb;
  if (ms_chunk_write(&q, r, &c) != MS_OK || g_cbn != o.len || memcmp(g_cb, buf, o.len) != 0) abort();
  /* a short buffer: too small, same length, a NUL-terminated prefix */
  if (o.len > 0) {
    size_t sz = (size_t)data[11] % o.len;
    char *sb = (char *)malloc(sz + 1);
    q.buf = sb; q.size = sz; q.write = NULL;
    if (ms_chunk_write(&q, r, &c) != MS_ERR_BUFFER_TOO_SMALL || q.len != o.len) abort();
    if (sz && memcmp(sb, buf, strlen(sb)) != 0) abort();
    free(sb);
  }
  memset(&ch, 0, sizeof ch);
  ch.text = c.text; ch.text_len = c.text_len; ch.logprobs = c.logprobs; ch.n_logprobs = c.n_logprobs; ch.finish = c.finish; ch.stop_reason = c.stop_reason;
  u.prompt_tokens = data[12]; u.completion_tokens = data[13];
  if (ms_response_write(&o, r, &ch, 1, (data[14] & 1) ? &u : NULL) != MS_OK) abort();
  check_obj(buf, o.len, 0);
  /* the text itself: a string that decodes to the lossy input */
  if (ms_json_string_write(&o, data + 16, cut > 16 ? cut - 16 : 0) != MS_OK) abort();
  {
    size_t rn; char *ref = ref_lossy(data + 16, cut > 16 ? cut - 16 : 0, &rn);
    jc_val *v = jc_parse(buf, o.len, NULL, 0);
    if (!v || !jc_str_is(v, ref, rn)) abort();
    jc_free(v); free(ref);
  }
  for (i = 0; i < 12; i++) {
    char fb[24]; size_t n = ms_json_float(fb, f[i]);
    if (n >= 24 || strlen(fb) != n) abort();
    if (f[i] == f[i] && f[i] - f[i] == 0.0f) { float back = strtof(fb, NULL); if (memcmp(&back, &f[i], 4) != 0) abort(); }
  }
  return 0;
}
