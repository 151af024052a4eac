/* libFuzzer target: text assembly. The input picks stop strings, options and
   a split of random bytes into tokens; invariants: every delta is valid
   UTF-8, streamed text never shows an excluded stop string, the result is
   the same for a second, different split, and it equals the slow reference
   (lossy decode + first-completing stop match) from tests/egress_ref.h. */
#define MYSAMPLE_IMPLEMENTATION
#include "mysample.h"
#include "egress_ref.h"
#include <stdio.h>
#include <stdlib.h>

typedef struct run { char *acc; size_t n; ms_finish fin; int which; } run;

static void feed(const uint8_t *bytes, size_t n, const uint8_t *splits, size_t ns, const ms_text_params *p, run *r) {
  ms_text_desc d = {4, 16, 0, 0};
  size_t sz = ms_text_size(&d), pos = 0, k = 0;
  void *mem = malloc(sz); ms_text *t; ms_text_step st; char *out;
  if (ms_text_init(&t, &d, mem, sz) != MS_OK || ms_text_reset(t, p, NULL, 0) != MS_OK) abort();
  out = (char *)malloc(ms_text_out_bound(t, n));
  r->acc = (char *)malloc(3 * n + 8); r->n = 0; r->fin = MS_FINISH_NONE; r->which = -1;
  memset(&st, 0, sizeof st);
  while (pos < n && st.finish == MS_FINISH_NONE) {
    size_t len = ns ? 1 + splits[k++ % ns] % 9 : n;
    if (len > n - pos) len = n - pos;
    if (ms_text_push(t, 1, bytes + pos, len, out, ms_text_out_bound(t, len), &st) != MS_OK) abort();
    if (ms_utf8_validate(st.delta, st.delta_len) != MS_OK) abort();
    memcpy(r->acc + r->n, st.delta, st.delta_len); r->n += st.delta_len;
    if (!p->include_stop_str_in_output) {
      int i;
      for (i = 0; i < p->n_stop; i++) if (ref_memmem(r->acc, r->n, p->stop[i], strlen(p->stop[i]))) abort();
    }
    pos += len;
  }
  if (st.finish == MS_FINISH_NONE) {
    if (ms_text_finish(t, MS_FINISH_LENGTH, out, ms_text_out_bound(t, 0), &st) != MS_OK) abort();
    memcpy(r->acc + r->n, st.delta, st.delta_len); r->n += st.delta_len;
  }
  r->fin = st.finish; r->which = st.stop_reason.kind == MS_STOP_STRING ? st.stop_reason.index : -1;
  free(out); free(mem);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char stops[4][17]; const char *sp[4]; int n_stops = 0, i, which;
  ms_text_params p = ms_text_params_default();
  size_t off = 0, ref_n, cut;
  char *ref;
  run a, b;
  if (size < 3) return 0;
  p.include_stop_str_in_output = data[0] & 1;
  p.holdback = (data[0] >> 1) & 1 ? MS_HOLDBACK_PREFIX : MS_HOLDBACK_VLLM;
  n_stops = (data[0] >> 2) % 5;
  off = 1;
  /* stop strings: length byte + bytes, made valid UTF-8 (sanitized) and non-empty */
  for (i = 0; i < n_stops && off < size; i++) {
    size_t l = data[off++] % 6 + 1, m;
    char tmp[24];
    if (l > size - off) l = size - off;
    m = ms_utf8_sanitize(data + off, l, tmp, sizeof tmp);
    off += l;
    if (m == 0 || m > 16) { n_stops = i; break; }
    memcpy(stops[i], tmp, m); stops[i][m] = 0;
    if (strlen(stops[i]) != m) { n_stops = i; break; }   /* no NUL inside */
    sp[i] = stops[i];
  }
  if (i < n_stops) n_stops = i;   /* input ran out */
  p.stop = sp; p.n_stop = n_stops;
  {
    const uint8_t *rest = data + off; size_t rn = size - off, half = rn / 4;
    const uint8_t *splits = rest, *bytes = rest + half; size_t nb = rn - half;
    feed(bytes, nb, splits, half, &p, &a);
    feed(bytes, nb, splits + (half ? 1 : 0), half ? half - 1 : 0, &p, &b);
    ref = ref_lossy(bytes, nb, &ref_n);
    cut = ref_final(ref, ref_n, sp, n_stops, p.include_stop_str_in_output, &which);
    if (a.n != cut || memcmp(a.acc, ref, cut) != 0) abort();
    if (b.n != a.n || memcmp(a.acc, b.acc, a.n) != 0) abort();
    if ((which >= 0) != (a.fin == MS_FINISH_STOP)) abort();
    if (which >= 0 && strcmp(sp[a.which], sp[which]) != 0) abort();
    free(ref); free(a.acc); free(b.acc);
  }
  return 0;
}
