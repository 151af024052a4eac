/* ---- implementation: egress JSON / SSE writer ------------------------------- */
/* Field sets and orders follow the OpenAI API reference and vLLM's protocol
   classes (vllm/entrypoints/openai/protocol.py): chunks carry id, object,
   created, model, choices[{index, delta|text, logprobs, finish_reason}] and,
   on the finishing chunk, vLLM's stop_reason. The writer reserves the worst
   case once per value where it can (6 bytes per input byte for a string) and
   only falls back to sliced writes near the end of the buffer. */

/* ---- the sink ---------------------------------------------------------------- */
typedef struct ms__w {
  char *p, *end;        /* cursor and end of the writable area */
  char *base;           /* start of the area */
  size_t done;          /* bytes handed to the callback, or counted past the buffer */
  ms_write_fn fn;
  void *user;
  int over;             /* buffer mode: out of room, only counting now */
  int failed;           /* callback mode: the callback said stop */
  char stack[256];
} ms__w;

MS__PRIVATE void ms__w_begin(ms__w *w, ms_out *o) {
  w->done = 0; w->fn = o->write; w->user = o->user; w->over = 0; w->failed = 0;
  if (w->fn) {
    if (o->buf && o->size >= 64) { w->base = o->buf; w->end = o->buf + o->size; }
    else { w->base = w->stack; w->end = w->stack + sizeof w->stack; }
  } else if (o->buf && o->size > 0) {
    w->base = o->buf; w->end = o->buf + o->size - 1;   /* room for the NUL */
  } else {
    w->base = w->stack; w->end = w->stack; w->over = 1;
  }
  w->p = w->base;
}

MS__PRIVATE void ms__w_flush(ms__w *w) {
  size_t n = (size_t)(w->p - w->base);
  if (n && !w->failed && w->fn(w->user, w->base, n) != 0) w->failed = 1;
  w->done += n;
  w->p = w->base;
}

MS__PRIVATE void ms__w_put_slow(ms__w *w, const char *s, size_t n) {
  if (w->fn) {
    while (n) {
      size_t room = (size_t)(w->end - w->p), k;
      if (room == 0) { ms__w_flush(w); continue; }
      k = n < room ? n : room;
      memcpy(w->p, s, k); w->p += k; s += k; n -= k;
    }
  } else {
    /* Buffer mode: stop writing at the first piece that does not fit, so
       the buffer never holds bytes out of order; keep counting. */
    w->over = 1; w->end = w->p; w->done += n;
  }
}

static inline void ms__w_put(ms__w *w, const char *s, size_t n) {
  if (MS__LIKELY((size_t)(w->end - w->p) >= n)) { memcpy(w->p, s, n); w->p += n; return; }
  ms__w_put_slow(w, s, n);
}
#define MS__LIT(w, s) ms__w_put((w), s, sizeof(s) - 1)

/* A pointer with n writable bytes, or NULL (then write to a temporary and
   ms__w_put it). */
static inline char *ms__w_reserve(ms__w *w, size_t n) {
  if (MS__LIKELY((size_t)(w->end - w->p) >= n)) return w->p;
  if (w->fn) { ms__w_flush(w); if ((size_t)(w->end - w->p) >= n) return w->p; }
  return NULL;
}

MS__PRIVATE ms_result ms__w_end(ms__w *w, ms_out *o) {
  if (w->fn) {
    ms__w_flush(w);
    o->len = w->done;
    return w->failed ? MS_ERR_CALLBACK : MS_OK;
  }
  o->len = (size_t)(w->p - w->base) + w->done;
  if (o->buf && o->size > 0) *w->p = 0;
  return w->over ? MS_ERR_BUFFER_TOO_SMALL : MS_OK;
}

/* ---- strings ----------------------------------------------------------------- */
/* 0: copy as is; 1: escape (control, '"', '\\'); 2: non-ASCII, check UTF-8. */
static const unsigned char ms__esc_class[256] = {
  1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,
  0,0,1,0,0,0,0,0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
  0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0,0,0,0,1,0,0,0,
  0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
  2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2, 2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,
  2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2, 2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,
  2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2, 2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,
  2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2, 2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2
};
static const char ms__hex[16] = {'0','1','2','3','4','5','6','7','8','9','a','b','c','d','e','f'};

/* Length of the UTF-8 sequence at s[0..n) (s[0] >= 0x80): returns its byte
   count with *ok = 1 when valid, else the length of its maximal ill-formed
   subpart (>= 1) with *ok = 0. */
MS__PRIVATE size_t ms__u8_seq(const unsigned char *s, size_t n, int *ok) {
  ms__u8 d;
  size_t i = 1;
  if (!ms__u8_lead(&d, s[0])) { *ok = 0; return 1; }
  while (d.need) {
    if (i >= n || s[i] < d.lo || s[i] > d.hi) { *ok = 0; return i; }
    d.lo = 0x80; d.hi = 0xBF; d.need--; i++;
  }
  *ok = 1;
  return i;
}

/* The next code point of a lossy decode of s[0..n) at *i (U+FFFD for an
   ill-formed subpart). */
MS__PRIVATE uint32_t ms__u8_next(const unsigned char *s, size_t n, size_t *i) {
  const unsigned char *p = s + *i;
  size_t k;
  int ok;
  if (p[0] < 0x80) { (*i)++; return p[0]; }
  k = ms__u8_seq(p, n - *i, &ok);
  *i += k;
  if (!ok) return 0xFFFD;
  if (k == 2) return ((uint32_t)(p[0] & 0x1F) << 6) | (p[1] & 0x3F);
  if (k == 3) return ((uint32_t)(p[0] & 0x0F) << 12) | ((uint32_t)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
  return ((uint32_t)(p[0] & 0x07) << 18) | ((uint32_t)(p[1] & 0x3F) << 12) |
         ((uint32_t)(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
}

/* Escapes s[0..n) (no quotes) to o, which has room for 6 * n bytes. */
MS__PRIVATE char *ms__esc(char *o, const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned char b = s[i];
    unsigned char c = ms__esc_class[b];
    if (MS__LIKELY(c == 0)) { *o++ = (char)b; i++; continue; }
    if (c == 1) {
      *o++ = '\\';
      switch (b) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '\n': *o++ = 'n'; break;
        case '\r': *o++ = 'r'; break;
        case '\t': *o++ = 't'; break;
        case '\b': *o++ = 'b'; break;
        case '\f': *o++ = 'f'; break;
        default: o[0] = 'u'; o[1] = '0'; o[2] = '0'; o[3] = ms__hex[b >> 4]; o[4] = ms__hex[b & 15]; o += 5;
      }
      i++;
      continue;
    }
    {
      int ok;
      size_t k = ms__u8_seq(s + i, n - i, &ok);
      if (!ok) o = ms__put_fffd(o);
      else if (k == 3 && b == 0xE2 && s[i + 1] == 0x80 && (s[i + 2] == 0xA8 || s[i + 2] == 0xA9)) {
        /* U+2028/2029 are valid JSON but end lines in JavaScript. */
        memcpy(o, s[i + 2] == 0xA8 ? "\\u2028" : "\\u2029", 6); o += 6;
      } else { memcpy(o, s + i, k); o += k; }
      i += k;
    }
  }
  return o;
}

/* Writes "..." for any bytes. */
MS__PRIVATE void ms__w_str(ms__w *w, const void *bytes, size_t n) {
  const unsigned char *s = (const unsigned char *)bytes;
  char *o;
  if (n < ((size_t)-1) / 8 && (o = ms__w_reserve(w, 6 * n + 2)) != NULL) {
    *o++ = '"';
    o = ms__esc(o, s, n);
    *o++ = '"';
    w->p = o;
    return;
  }
  /* Near the end of the buffer: escape in slices through a temporary. A
     slice ends before a byte that is not a continuation byte, or after
     three continuation bytes in a row; no sequence is split either way. */
  {
    char tmp[6 * 64];
    size_t i = 0;
    MS__LIT(w, "\"");
    while (i < n) {
      size_t k = n - i < 64 ? n - i : 64, back = 0;
      while (i + k < n && back < 3 && (s[i + k] & 0xC0) == 0x80 && k > 1) { k--; back++; }
      if (back == 3 && (s[i + k] & 0xC0) == 0x80) k += 3;   /* all continuations: split as is */
      ms__w_put(w, tmp, (size_t)(ms__esc(tmp, s + i, k) - tmp));
      i += k;
    }
    MS__LIT(w, "\"");
  }
}

MS__PRIVATE void ms__w_cstr(ms__w *w, const char *s) { ms__w_str(w, s, strlen(s)); }

/* ---- numbers ----------------------------------------------------------------- */
MS__PRIVATE void ms__w_i64(ms__w *w, int64_t v) {
  char tmp[24];
  char *e = tmp + sizeof tmp, *p = e;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do { *--p = (char)('0' + (int)(u % 10)); u /= 10; } while (u);
  if (v < 0) *--p = '-';
  ms__w_put(w, p, (size_t)(e - p));
}

/* Exact big integers for the rare float comparisons that double arithmetic
   cannot decide: at most ~2^160 here, 10 limbs of 32 bits is plenty. */
typedef struct ms__big { uint32_t d[10]; int n; } ms__big;
MS__PRIVATE void ms__big_set(ms__big *b, uint64_t v) {
  b->n = 0;
  while (v) { b->d[b->n++] = (uint32_t)v; v >>= 32; }
}
MS__PRIVATE void ms__big_mul(ms__big *b, uint32_t m) {
  uint64_t carry = 0;
  int i;
  for (i = 0; i < b->n; i++) {
    uint64_t t = (uint64_t)b->d[i] * m + carry;
    b->d[i] = (uint32_t)t; carry = t >> 32;
  }
  if (carry && b->n < 10) b->d[b->n++] = (uint32_t)carry;
}
MS__PRIVATE void ms__big_pow5(ms__big *b, int k) {
  while (k >= 13) { ms__big_mul(b, 1220703125u); k -= 13; }
  { uint32_t m = 1; while (k-- > 0) m *= 5; if (m > 1) ms__big_mul(b, m); }
}
MS__PRIVATE void ms__big_shl(ms__big *b, int k) {
  int words = k / 32, bits = k % 32, i;
  if (b->n == 0) return;
  if (bits) {
    uint32_t carry = 0;
    for (i = 0; i < b->n; i++) {
      uint32_t t = b->d[i];
      b->d[i] = (t << bits) | carry; carry = t >> (32 - bits);
    }
    if (carry && b->n < 10) b->d[b->n++] = carry;
  }
  if (words) {
    int nn = b->n + words > 10 ? 10 : b->n + words;
    for (i = nn - 1; i >= words; i--) b->d[i] = b->d[i - words];
    for (i = 0; i < words; i++) b->d[i] = 0;
    b->n = nn;
  }
}
MS__PRIVATE int ms__big_cmp(const ms__big *a, const ms__big *b) {
  int i;
  if (a->n != b->n) return a->n < b->n ? -1 : 1;
  for (i = a->n - 1; i >= 0; i--)
    if (a->d[i] != b->d[i]) return a->d[i] < b->d[i] ? -1 : 1;
  return 0;
}
/* Sign of d * 10^s - N * 2^f, exactly. */
MS__PRIVATE int ms__cmp_dec_bin(uint64_t d, int s, uint64_t N, int f) {
  ms__big a, b;
  int t = s - f;
  ms__big_set(&a, d); ms__big_set(&b, N);
  if (s > 0) ms__big_pow5(&a, s); else ms__big_pow5(&b, -s);
  if (t > 0) ms__big_shl(&a, t); else ms__big_shl(&b, -t);
  return ms__big_cmp(&a, &b);
}

static const double ms__p10[23] = {
  1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
  1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22
};
/* 10^k as a double for k in [-70, 70]: exact for 0 <= k <= 22, else within
   a few ulps (the callers' margins allow for that). */
MS__PRIVATE double ms__pow10(int k) {
  double r = 1.0;
  if (k >= 0) { while (k > 22) { r *= 1e22; k -= 22; } return r * ms__p10[k]; }
  k = -k;
  while (k > 22) { r /= 1e22; k -= 22; }
  return r / ms__p10[k];
}
/* 2^e as a double (e in the normal double range), built from its bits. */
MS__PRIVATE double ms__pow2(int e) {
  uint64_t b = (uint64_t)(e + 1023) << 52;
  double d;
  memcpy(&d, &b, 8);
  return d;
}

/* The rounding interval of a float m * 2^e: [lo, hi] = [(2m - 1 or 4m - 1
   at a binade edge) * 2^flo, (2m + 1) * 2^fhi], ends included when m is
   even (round half to even). All exact in double. */
typedef struct ms__fint {
  double x, lo, hi;
  uint64_t nlo, nhi; int flo, fhi;
  int incl;
} ms__fint;

/* Which side of an interval end e (= N * 2^f) the integer d lies on at
   resolution 10^s, where dq, eq are d and e scaled by 10^-s in double:
   double decides unless they are within a relative 1e-13; then the exact
   big-integer comparison does. */
MS__PRIVATE int ms__side(double dq, double eq, uint64_t d, int s, uint64_t N, int f) {
  double margin = dq * 1e-13;
  if (dq - eq > margin) return 1;
  if (eq - dq > margin) return -1;
  return ms__cmp_dec_bin(d, s, N, f);
}

/* The candidate at resolution 10^s: the multiple of 10^s in the interval
   nearest to x (ties to even), or 0 when there is none. */
MS__PRIVATE int ms__cand(const ms__fint *I, int s, uint64_t *out) {
  double sc = ms__pow10(-s);
  double q = I->x * sc, lq = I->lo * sc, hq = I->hi * sc;
  uint64_t f = (uint64_t)q, c = f + 1;
  int inf = 0, inc = 0, k;
  if (f > 0) {
    k = ms__side((double)f, lq, f, s, I->nlo, I->flo);
    inf = k > 0 || (k == 0 && I->incl);
    if (inf) { k = ms__side((double)f, hq, f, s, I->nhi, I->fhi); inf = k < 0 || (k == 0 && I->incl); }
  }
  k = ms__side((double)c, hq, c, s, I->nhi, I->fhi);
  inc = k < 0 || (k == 0 && I->incl);
  if (inc) { k = ms__side((double)c, lq, c, s, I->nlo, I->flo); inc = k > 0 || (k == 0 && I->incl); }
  if (inf && inc) {
    double df = q - (double)f, dc = (double)c - q;
    *out = df < dc ? f : dc < df ? c : ((f & 1) ? c : f);
  } else if (inf) *out = f;
  else if (inc) *out = c;
  else return 0;
  return 1;
}

MSDEF size_t ms_json_float(char buf[24], float v) {
  uint32_t bits, mant;
  int exp, e, E, lo_s, nd, X, i;
  uint64_t m, d = 0;
  ms__fint I;
  char dig[24], *o = buf;
  memcpy(&bits, &v, 4);
  mant = bits & 0x7FFFFFu;
  exp = (int)((bits >> 23) & 0xFF);
  if (exp == 0xFF) {
    const char *s = mant ? "NaN" : (bits >> 31) ? "-Infinity" : "Infinity";
    size_t n = strlen(s);
    memcpy(buf, s, n + 1);
    return n;
  }
  if (bits >> 31) *o++ = '-';
  if (exp == 0 && mant == 0) { memcpy(o, "0.0", 4); return (size_t)(o - buf) + 3; }
  if (exp == 0) { m = mant; e = -149; } else { m = mant | 0x800000u; e = exp - 150; }
  I.x = (double)m * ms__pow2(e);
  I.incl = (m & 1) == 0;
  I.nhi = 2 * m + 1; I.fhi = e - 1;
  if (mant == 0 && exp > 1) { I.nlo = 4 * m - 1; I.flo = e - 2; }
  else { I.nlo = 2 * m - 1; I.flo = e - 1; }
  I.lo = (double)I.nlo * ms__pow2(I.flo);
  I.hi = (double)I.nhi * ms__pow2(I.fhi);
  /* Decimal exponent estimate from the binary one (may be one too low). */
  {
    int k = e + 23;                       /* floor(log2(x)) for normal floats */
    if (exp == 0) { int t = (int)m; k = e; while (t > 1) { t >>= 1; k++; } }
    E = (k * 78913) >> 18;                /* floor(k * log10(2)) for |k| < 1650; >> of a
                                             negative value is arithmetic on every target
                                             we build for, but keep it portable: */
    if (k < 0) E = -(((-k) * 78913 + (1 << 18) - 1) >> 18);
  }
  /* Find the coarsest resolution 10^s with a multiple of it in the
     interval. A multiple of 10^(s+1) is one of 10^s too, so "works" is
     monotone in s; 10^(E-9) always works (>= 10 digits). Random floats
     need 7 to 9 digits, so look there first, then search upwards. */
  if (ms__cand(&I, E - 6, &d)) {
    /* Coarser: strip zeros, then step up while a coarser multiple works
       (rarely more than one step: the interval is ~1e-7 wide). */
    lo_s = E - 6;
    for (;;) {
      uint64_t dm;
      while (d % 10 == 0) { d /= 10; lo_s++; }
      if (lo_s + 1 > E + 1 || !ms__cand(&I, lo_s + 1, &dm)) break;
      d = dm; lo_s++;
    }
  } else if (ms__cand(&I, E - 7, &d)) lo_s = E - 7;
  /* (a safety net: no float reaches the next two lines; every one of the
     2^31 - 2^23 finite non-negative floats was run through in session 34) */
  else if (ms__cand(&I, E - 8, &d)) lo_s = E - 8;
  else { lo_s = E - 9; if (!ms__cand(&I, lo_s, &d)) { lo_s = E - 10; ms__cand(&I, lo_s, &d); } }
  /* Digits, without trailing zeros. */
  while (d && d % 10 == 0) { d /= 10; lo_s++; }
  nd = 0;
  dig[0] = '0';   /* (the loop below always writes it; gcc -O1 cannot tell: -Wmaybe-uninitialized) */
  { char r[24]; int k = 0; do { r[k++] = (char)('0' + (int)(d % 10)); d /= 10; } while (d);
    while (k) dig[nd++] = r[--k]; }
  X = lo_s + nd - 1;   /* decimal exponent of the first digit */
  if (X >= -4 && X < 16) {   /* Python repr's switch to exponents */
    if (X >= 0) {
      for (i = 0; i <= X; i++) *o++ = i < nd ? dig[i] : '0';
      *o++ = '.';
      if (nd > X + 1) { for (i = X + 1; i < nd; i++) *o++ = dig[i]; }
      else *o++ = '0';
    } else {
      *o++ = '0'; *o++ = '.';
      for (i = -1; i > X; i--) *o++ = '0';
      for (i = 0; i < nd; i++) *o++ = dig[i];
    }
  } else {
    int ax = X < 0 ? -X : X;
    *o++ = dig[0];
    if (nd > 1) { *o++ = '.'; for (i = 1; i < nd; i++) *o++ = dig[i]; }
    *o++ = 'e'; *o++ = X < 0 ? '-' : '+';
    if (ax >= 100) *o++ = (char)('0' + ax / 100);
    *o++ = (char)('0' + ax / 10 % 10); *o++ = (char)('0' + ax % 10);
  }
  *o = 0;
  return (size_t)(o - buf);
}

/* A logprob as OpenAI/vLLM print it: non-finite and below -9999 become
   -9999.0 (vLLM: max(logprob, -9999.0)), so the JSON never holds NaN/Inf. */
MS__PRIVATE void ms__w_logprob(ms__w *w, float v) {
  char tmp[24];
  if (!(v >= -9999.0f) || v > 3.4028235e38f) { MS__LIT(w, "-9999.0"); return; }
  ms__w_put(w, tmp, ms_json_float(tmp, v));
}

MS__PRIVATE void ms__w_bytes(ms__w *w, const unsigned char *b, size_t n) {
  size_t i;
  char *o = ms__w_reserve(w, n < ((size_t)-1) / 8 ? 4 * n + 2 : (size_t)-1);
  if (o) {
    *o++ = '[';
    for (i = 0; i < n; i++) {
      unsigned v = b[i];
      if (i) *o++ = ',';
      if (v >= 100) { *o++ = (char)('0' + v / 100); *o++ = (char)('0' + v / 10 % 10); }
      else if (v >= 10) *o++ = (char)('0' + v / 10);
      *o++ = (char)('0' + v % 10);
    }
    *o++ = ']';
    w->p = o;
    return;
  }
  MS__LIT(w, "[");
  for (i = 0; i < n; i++) {
    if (i) MS__LIT(w, ",");
    ms__w_i64(w, b[i]);
  }
  MS__LIT(w, "]");
}

/* ---- validation (before any byte is written, so a callback never sees half
   an object) ------------------------------------------------------------------ */
MS__PRIVATE int ms__tok_ok(const ms_token *t) { return t->bytes || t->n_bytes == 0; }
MS__PRIVATE int ms__lps_ok(const ms_token_logprobs *lp, int32_t n) {
  int32_t i, j;
  if (n < 0 || (n > 0 && !lp)) return 0;
  for (i = 0; i < n; i++) {
    if (!ms__tok_ok(&lp[i].tok) || lp[i].n_top < 0 || (lp[i].n_top > 0 && !lp[i].top)) return 0;
    for (j = 0; j < lp[i].n_top; j++) if (!ms__tok_ok(&lp[i].top[j])) return 0;
  }
  return 1;
}
MS__PRIVATE int ms__finish_ok(ms_finish f, const ms_stop_reason *r) {
  if ((int)f < 0 || f >= MS__FINISH_COUNT_) return 0;
  if (r->kind != MS_STOP_NONE && r->kind != MS_STOP_STRING && r->kind != MS_STOP_TOKEN) return 0;
  if (r->kind == MS_STOP_STRING && !r->str && r->len) return 0;
  return 1;
}

/* ---- the response header --------------------------------------------------- */
struct ms_response {
  ms_object object;
  int32_t no_stop_reason, no_sse;
  char *chunk_prefix; size_t chunk_prefix_len;   /* data: {"id":...,"choices":[ */
  char *full_prefix; size_t full_prefix_len;     /* {"id":...,"object":"chat.completion",...,"choices":[ */
};

/* Writes the header fields up to and including "choices":[ */
MS__PRIVATE void ms__w_head(ms__w *w, const ms_response_desc *d, int chunk, int sse) {
  if (sse) MS__LIT(w, "data: ");
  MS__LIT(w, "{\"id\":");
  ms__w_cstr(w, d->id);
  if (d->object == MS_OBJECT_CHAT)
    { if (chunk) MS__LIT(w, ",\"object\":\"chat.completion.chunk\""); else MS__LIT(w, ",\"object\":\"chat.completion\""); }
  else MS__LIT(w, ",\"object\":\"text_completion\"");
  MS__LIT(w, ",\"created\":");
  ms__w_i64(w, d->created);
  MS__LIT(w, ",\"model\":");
  ms__w_cstr(w, d->model);
  if (d->system_fingerprint) { MS__LIT(w, ",\"system_fingerprint\":"); ms__w_cstr(w, d->system_fingerprint); }
  MS__LIT(w, ",\"choices\":[");
}

MS__PRIVATE size_t ms__head_len(const ms_response_desc *d, int chunk, int sse) {
  ms__w w; ms_out o;
  memset(&o, 0, sizeof o);
  ms__w_begin(&w, &o);
  ms__w_head(&w, d, chunk, sse);
  ms__w_end(&w, &o);
  return o.len;
}

MSDEF size_t ms_response_size(const ms_response_desc *desc) {
  if (!desc || !desc->id || !desc->model) return 0;
  return ms__align_up(sizeof(struct ms_response), 8) + ms__head_len(desc, 1, !desc->no_sse) + 1 +
         ms__head_len(desc, 0, 0) + 1;
}

MSDEF ms_result ms_response_init(ms_response **out, const ms_response_desc *desc, void *mem, size_t bytes) {
  ms_response *r;
  size_t a, b;
  ms__w w; ms_out o;
  if (!out || !desc || !mem || !desc->id || !desc->model) return MS_ERR_NULL_ARGUMENT;
  *out = NULL;
  if (desc->object != MS_OBJECT_CHAT && desc->object != MS_OBJECT_COMPLETION) return MS_ERR_INVALID_PARAM;
  if (bytes < ms_response_size(desc)) return MS_ERR_WORKSPACE_TOO_SMALL;
  if (((uintptr_t)mem & 7u) != 0) return MS_ERR_INVALID_PARAM;
  r = (ms_response *)mem;
  r->object = desc->object;
  r->no_stop_reason = desc->no_stop_reason != 0;
  r->no_sse = desc->no_sse != 0;
  a = ms__head_len(desc, 1, !desc->no_sse);
  b = ms__head_len(desc, 0, 0);
  r->chunk_prefix = (char *)mem + ms__align_up(sizeof(struct ms_response), 8);
  r->full_prefix = r->chunk_prefix + a + 1;
  o.buf = r->chunk_prefix; o.size = a + 1; o.write = NULL; o.user = NULL;
  ms__w_begin(&w, &o); ms__w_head(&w, desc, 1, !desc->no_sse); ms__w_end(&w, &o);
  r->chunk_prefix_len = o.len;
  o.buf = r->full_prefix; o.size = b + 1;
  ms__w_begin(&w, &o); ms__w_head(&w, desc, 0, 0); ms__w_end(&w, &o);
  r->full_prefix_len = o.len;
  *out = r;
  return MS_OK;
}

/* ---- the objects -------------------------------------------------------------- */
MS__PRIVATE void ms__w_tok_fields(ms__w *w, const ms_token *t) {
  MS__LIT(w, "{\"token\":");
  ms__w_str(w, t->bytes, t->n_bytes);
  MS__LIT(w, ",\"logprob\":");
  ms__w_logprob(w, t->logprob);
  MS__LIT(w, ",\"bytes\":");
  ms__w_bytes(w, t->bytes, t->n_bytes);
}

/* Chat: {"content":[{token, logprob, bytes, top_logprobs:[...]}, ...]} */
MS__PRIVATE void ms__w_chat_logprobs(ms__w *w, const ms_token_logprobs *lp, int32_t n) {
  int32_t i, j;
  MS__LIT(w, "{\"content\":[");
  for (i = 0; i < n; i++) {
    if (i) MS__LIT(w, ",");
    ms__w_tok_fields(w, &lp[i].tok);
    MS__LIT(w, ",\"top_logprobs\":[");
    for (j = 0; j < lp[i].n_top; j++) {
      if (j) MS__LIT(w, ",");
      ms__w_tok_fields(w, &lp[i].top[j]);
      MS__LIT(w, "}");
    }
    MS__LIT(w, "]}");
  }
  MS__LIT(w, "]}");
}

/* Do two byte strings decode (lossily) to the same text? */
MS__PRIVATE int ms__lossy_eq(const ms_token *a, const ms_token *b) {
  size_t i = 0, j = 0;
  if (a->n_bytes == b->n_bytes && (a->n_bytes == 0 || memcmp(a->bytes, b->bytes, a->n_bytes) == 0)) return 1;
  while (i < a->n_bytes && j < b->n_bytes)
    if (ms__u8_next(a->bytes, a->n_bytes, &i) != ms__u8_next(b->bytes, b->n_bytes, &j)) return 0;
  return i == a->n_bytes && j == b->n_bytes;
}

/* Legacy: {text_offset, token_logprobs, tokens, top_logprobs:[{str: num}]} */
MS__PRIVATE void ms__w_legacy_logprobs(ms__w *w, const ms_token_logprobs *lp, int32_t n) {
  int32_t i;
  MS__LIT(w, "{\"text_offset\":[");
  for (i = 0; i < n; i++) { if (i) MS__LIT(w, ","); ms__w_i64(w, lp[i].text_offset); }
  MS__LIT(w, "],\"token_logprobs\":[");
  for (i = 0; i < n; i++) { if (i) MS__LIT(w, ","); ms__w_logprob(w, lp[i].tok.logprob); }
  MS__LIT(w, "],\"tokens\":[");
  for (i = 0; i < n; i++) { if (i) MS__LIT(w, ","); ms__w_str(w, lp[i].tok.bytes, lp[i].tok.n_bytes); }
  MS__LIT(w, "],\"top_logprobs\":[");
  for (i = 0; i < n; i++) {
    /* vLLM (and OpenAI: "up to logprobs+1 elements") put the sampled token
       in the dict too, first, then the alternatives; its dict comprehension
       over decoded strings keeps a repeated key at its first place with
       its last value. Entry 0 is the sampled token, entry a > 0 top[a - 1]. */
    const int64_t m = (int64_t)lp[i].n_top + 1;
    int64_t a, b;
    int first = 1;
    if (i) MS__LIT(w, ",");
    if (!lp[i].top) { MS__LIT(w, "null"); continue; }
    MS__LIT(w, "{");
    for (a = 0; a < m; a++) {
      const ms_token *e = a ? &lp[i].top[a - 1] : &lp[i].tok, *last = e;
      for (b = 0; b < a; b++) if (ms__lossy_eq(b ? &lp[i].top[b - 1] : &lp[i].tok, e)) break;
      if (b < a) continue;
      for (b = a + 1; b < m; b++) if (ms__lossy_eq(&lp[i].top[b - 1], e)) last = &lp[i].top[b - 1];
      if (!first) MS__LIT(w, ",");
      first = 0;
      ms__w_str(w, e->bytes, e->n_bytes);
      MS__LIT(w, ":");
      ms__w_logprob(w, last->logprob);
    }
    MS__LIT(w, "}");
  }
  MS__LIT(w, "]}");
}

MS__PRIVATE void ms__w_finish(ms__w *w, const ms_response *r, ms_finish f, const ms_stop_reason *sr) {
  MS__LIT(w, ",\"finish_reason\":");
  if (f == MS_FINISH_NONE) { MS__LIT(w, "null"); return; }
  MS__LIT(w, "\""); ms__w_put(w, ms_finish_name(f), strlen(ms_finish_name(f))); MS__LIT(w, "\"");
  if (r->no_stop_reason) return;
  MS__LIT(w, ",\"stop_reason\":");
  if (sr->kind == MS_STOP_STRING) ms__w_str(w, sr->str, sr->len);
  else if (sr->kind == MS_STOP_TOKEN) ms__w_i64(w, sr->token);
  else MS__LIT(w, "null");
}

MS__PRIVATE void ms__w_logprobs_field(ms__w *w, const ms_response *r, const ms_token_logprobs *lp, int32_t n) {
  MS__LIT(w, ",\"logprobs\":");
  if (!lp) MS__LIT(w, "null");
  else if (r->object == MS_OBJECT_CHAT) ms__w_chat_logprobs(w, lp, n);
  else ms__w_legacy_logprobs(w, lp, n);
}

/* Counts a usage object can carry: non-negative, their total an int64. */
MS__PRIVATE int ms__usage_ok(const ms_usage *u) {
  return u->prompt_tokens >= 0 && u->completion_tokens >= 0 && u->prompt_tokens <= INT64_MAX - u->completion_tokens;
}

MS__PRIVATE void ms__w_usage(ms__w *w, const ms_usage *u) {
  MS__LIT(w, "\"usage\":{\"prompt_tokens\":");
  ms__w_i64(w, u->prompt_tokens);
  MS__LIT(w, ",\"completion_tokens\":");
  ms__w_i64(w, u->completion_tokens);
  MS__LIT(w, ",\"total_tokens\":");
  ms__w_i64(w, u->prompt_tokens + u->completion_tokens);
  MS__LIT(w, "}");
}

MSDEF ms_result ms_chunk_write(ms_out *out, const ms_response *r, const ms_chunk *c) {
  ms__w w;
  if (!out || !r || !c) return MS_ERR_NULL_ARGUMENT;
  out->len = 0;
  if (c->index < 0 || !ms__lps_ok(c->logprobs, c->logprobs ? c->n_logprobs : 0) ||
      (!c->logprobs && c->n_logprobs > 0) || (!c->text && c->text_len) ||
      !ms__finish_ok(c->finish, &c->stop_reason))
    return MS_ERR_INVALID_PARAM;
  ms__w_begin(&w, out);
  ms__w_put(&w, r->chunk_prefix, r->chunk_prefix_len);
  MS__LIT(&w, "{\"index\":");
  ms__w_i64(&w, c->index);
  if (r->object == MS_OBJECT_CHAT) {
    MS__LIT(&w, ",\"delta\":{");
    if (c->role) {
      MS__LIT(&w, "\"role\":\"assistant\",\"content\":");
      if (c->text) ms__w_str(&w, c->text, c->text_len); else MS__LIT(&w, "\"\"");
    } else if (c->text) {
      MS__LIT(&w, "\"content\":");
      ms__w_str(&w, c->text, c->text_len);
    }
    MS__LIT(&w, "}");
  } else {
    MS__LIT(&w, ",\"text\":");
    if (c->text) ms__w_str(&w, c->text, c->text_len); else MS__LIT(&w, "\"\"");
  }
  ms__w_logprobs_field(&w, r, c->logprobs, c->n_logprobs);
  ms__w_finish(&w, r, c->finish, &c->stop_reason);
  if (r->no_sse) MS__LIT(&w, "}]}"); else MS__LIT(&w, "}]}\n\n");
  return ms__w_end(&w, out);
}

MSDEF ms_result ms_usage_chunk_write(ms_out *out, const ms_response *r, const ms_usage *u) {
  ms__w w;
  if (!out || !r || !u) return MS_ERR_NULL_ARGUMENT;
  out->len = 0;
  if (!ms__usage_ok(u)) return MS_ERR_INVALID_PARAM;
  ms__w_begin(&w, out);
  ms__w_put(&w, r->chunk_prefix, r->chunk_prefix_len);
  MS__LIT(&w, "],");
  ms__w_usage(&w, u);
  if (r->no_sse) MS__LIT(&w, "}"); else MS__LIT(&w, "}\n\n");
  return ms__w_end(&w, out);
}

MSDEF ms_result ms_done_write(ms_out *out) {
  ms__w w;
  if (!out) return MS_ERR_NULL_ARGUMENT;
  ms__w_begin(&w, out);
  MS__LIT(&w, "data: [DONE]\n\n");
  return ms__w_end(&w, out);
}

MSDEF ms_result ms_response_write(ms_out *out, const ms_response *r, const ms_choice *choices,
                                  int32_t n_choices, const ms_usage *usage) {
  ms__w w;
  int32_t i;
  if (!out || !r || (!choices && n_choices)) return MS_ERR_NULL_ARGUMENT;
  out->len = 0;
  if (n_choices < 0) return MS_ERR_INVALID_PARAM;
  for (i = 0; i < n_choices; i++) {
    const ms_choice *c = &choices[i];
    if (c->index < 0 || !ms__lps_ok(c->logprobs, c->logprobs ? c->n_logprobs : 0) ||
        (!c->logprobs && c->n_logprobs > 0) || (!c->text && c->text_len) ||
        !ms__finish_ok(c->finish, &c->stop_reason))
      return MS_ERR_INVALID_PARAM;
  }
  if (usage && !ms__usage_ok(usage)) return MS_ERR_INVALID_PARAM;
  ms__w_begin(&w, out);
  ms__w_put(&w, r->full_prefix, r->full_prefix_len);
  for (i = 0; i < n_choices; i++) {
    const ms_choice *c = &choices[i];
    if (i) MS__LIT(&w, ",");
    MS__LIT(&w, "{\"index\":");
    ms__w_i64(&w, c->index);
    if (r->object == MS_OBJECT_CHAT) MS__LIT(&w, ",\"message\":{\"role\":\"assistant\",\"content\":");
    else MS__LIT(&w, ",\"text\":");
    if (c->text) ms__w_str(&w, c->text, c->text_len); else MS__LIT(&w, "\"\"");
    if (r->object == MS_OBJECT_CHAT) MS__LIT(&w, "}");
    ms__w_logprobs_field(&w, r, c->logprobs, c->n_logprobs);
    ms__w_finish(&w, r, c->finish, &c->stop_reason);
    MS__LIT(&w, "}");
  }
  MS__LIT(&w, "]");
  if (usage) { MS__LIT(&w, ","); ms__w_usage(&w, usage); }
  MS__LIT(&w, "}");
  return ms__w_end(&w, out);
}

MSDEF ms_result ms_error_write(ms_out *out, const ms_error *err, int sse) {
  ms__w w;
  if (!out || !err || !err->message) return MS_ERR_NULL_ARGUMENT;
  ms__w_begin(&w, out);
  if (sse) MS__LIT(&w, "data: ");
  MS__LIT(&w, "{\"error\":{\"message\":");
  ms__w_cstr(&w, err->message);
  MS__LIT(&w, ",\"type\":");
  ms__w_cstr(&w, err->type ? err->type : "invalid_request_error");
  MS__LIT(&w, ",\"param\":");
  if (err->param) ms__w_cstr(&w, err->param); else MS__LIT(&w, "null");
  MS__LIT(&w, ",\"code\":");
  if (err->code) ms__w_cstr(&w, err->code);
  else if (err->code_num > 0) ms__w_i64(&w, err->code_num);
  else MS__LIT(&w, "null");
  if (sse) MS__LIT(&w, "}}\n\n"); else MS__LIT(&w, "}}");
  return ms__w_end(&w, out);
}

MSDEF ms_result ms_json_string_write(ms_out *out, const void *bytes, size_t n) {
  ms__w w;
  if (!out || (!bytes && n)) return MS_ERR_NULL_ARGUMENT;
  ms__w_begin(&w, out);
  ms__w_str(&w, bytes, n);
  return ms__w_end(&w, out);
}
