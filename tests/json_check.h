/* A small strict JSON parser for the tests, written independently of the
   writer in src/impl_json.c: RFC 8259 grammar, nothing more. It rejects
   trailing commas, leading zeros, raw control characters in strings, bad
   escapes, lone or misordered surrogates, invalid UTF-8, duplicate keys
   (mysample never writes them) and anything after the value. Strings are
   decoded to UTF-8 so tests can compare contents. Test code: allocates. */
#ifndef MS_JSON_CHECK_H
#define MS_JSON_CHECK_H
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

enum { JC_NULL, JC_FALSE, JC_TRUE, JC_NUM, JC_STR, JC_ARR, JC_OBJ };

typedef struct jc_val {
  int t;
  char *s; size_t slen;          /* JC_STR: decoded UTF-8; JC_NUM: the literal text */
  struct jc_val *items; int n;   /* JC_ARR / JC_OBJ */
  char **keys; size_t *keylens;  /* JC_OBJ */
} jc_val;

typedef struct jc_p { const unsigned char *s; size_t n, i; char *err; size_t errsz; int depth; } jc_p;

static inline int jc_fail(jc_p *p, const char *what) {
  if (p->err && p->errsz) snprintf(p->err, p->errsz, "%s at byte %lu", what, (unsigned long)p->i);
  return 0;
}
static inline void jc_ws(jc_p *p) {
  while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r')) p->i++;
}
static inline void jc_free_val(jc_val *v) {
  int i;
  if (!v) return;
  free(v->s);
  for (i = 0; i < v->n; i++) { jc_free_val(&v->items[i]); if (v->keys) free(v->keys[i]); }
  free(v->items); free(v->keys); free(v->keylens);
}
static inline void jc_put(char **b, size_t *len, size_t *cap, unsigned long cp) {
  unsigned char u[4]; int k, n;
  if (cp < 0x80) { u[0] = (unsigned char)cp; n = 1; }
  else if (cp < 0x800) { u[0] = (unsigned char)(0xC0 | (cp >> 6)); u[1] = (unsigned char)(0x80 | (cp & 63)); n = 2; }
  else if (cp < 0x10000) { u[0] = (unsigned char)(0xE0 | (cp >> 12)); u[1] = (unsigned char)(0x80 | ((cp >> 6) & 63)); u[2] = (unsigned char)(0x80 | (cp & 63)); n = 3; }
  else { u[0] = (unsigned char)(0xF0 | (cp >> 18)); u[1] = (unsigned char)(0x80 | ((cp >> 12) & 63)); u[2] = (unsigned char)(0x80 | ((cp >> 6) & 63)); u[3] = (unsigned char)(0x80 | (cp & 63)); n = 4; }
  if (*len + 5 > *cap) { *cap = *cap * 2 + 16; *b = (char *)realloc(*b, *cap); }
  for (k = 0; k < n; k++) (*b)[(*len)++] = (char)u[k];
  (*b)[*len] = 0;
}
static inline int jc_hex4(jc_p *p, unsigned long *out) {
  int k; unsigned long v = 0;
  if (p->i + 4 > p->n) return jc_fail(p, "short \\u escape");
  for (k = 0; k < 4; k++) {
    unsigned char c = p->s[p->i + k];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (unsigned long)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (unsigned long)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (unsigned long)(c - 'A' + 10);
    else return jc_fail(p, "bad hex digit");
  }
  p->i += 4; *out = v; return 1;
}
/* Parses a string at p->i (on the quote); the decoded bytes go to *out. */
static inline int jc_string(jc_p *p, char **out, size_t *olen) {
  char *b = NULL; size_t len = 0, cap = 0;
  p->i++;
  jc_put(&b, &len, &cap, 0); len = 0;   /* allocate */
  for (;;) {
    unsigned char c;
    if (p->i >= p->n) { free(b); return jc_fail(p, "unterminated string"); }
    c = p->s[p->i];
    if (c == '"') { p->i++; break; }
    if (c < 0x20) { free(b); return jc_fail(p, "raw control character in string"); }
    if (c == '\\') {
      unsigned long cp;
      if (p->i + 1 >= p->n) { free(b); return jc_fail(p, "bad escape"); }
      c = p->s[p->i + 1]; p->i += 2;
      switch (c) {
        case '"': cp = '"'; break; case '\\': cp = '\\'; break; case '/': cp = '/'; break;
        case 'b': cp = 8; break; case 'f': cp = 12; break; case 'n': cp = 10; break;
        case 'r': cp = 13; break; case 't': cp = 9; break;
        case 'u':
          if (!jc_hex4(p, &cp)) { free(b); return 0; }
          if (cp >= 0xDC00 && cp <= 0xDFFF) { free(b); return jc_fail(p, "lone low surrogate"); }
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned long lo;
            if (p->i + 2 > p->n || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u') { free(b); return jc_fail(p, "lone high surrogate"); }
            p->i += 2;
            if (!jc_hex4(p, &lo)) { free(b); return 0; }
            if (lo < 0xDC00 || lo > 0xDFFF) { free(b); return jc_fail(p, "bad surrogate pair"); }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          break;
        default: free(b); return jc_fail(p, "unknown escape");
      }
      jc_put(&b, &len, &cap, cp);
      continue;
    }
    if (c < 0x80) { jc_put(&b, &len, &cap, c); p->i++; continue; }
    {
      /* Raw UTF-8: strict (no overlongs, surrogates or > U+10FFFF). */
      int need; unsigned long cp, min; unsigned char lo = 0x80, hi = 0xBF; int k;
      if (c >= 0xC2 && c <= 0xDF) { need = 1; cp = c & 0x1F; min = 0x80; }
      else if (c >= 0xE0 && c <= 0xEF) { need = 2; cp = c & 0x0F; min = 0x800; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
      else if (c >= 0xF0 && c <= 0xF4) { need = 3; cp = c & 0x07; min = 0x10000; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
      else { free(b); return jc_fail(p, "invalid UTF-8 lead byte"); }
      for (k = 1; k <= need; k++) {
        unsigned char d;
        if (p->i + (size_t)k >= p->n) { free(b); return jc_fail(p, "truncated UTF-8"); }
        d = p->s[p->i + (size_t)k];
        if (d < (k == 1 ? lo : 0x80) || d > (k == 1 ? hi : 0xBF)) { free(b); return jc_fail(p, "invalid UTF-8 continuation"); }
        cp = (cp << 6) | (d & 0x3F);
      }
      if (cp < min) { free(b); return jc_fail(p, "overlong UTF-8"); }
      p->i += (size_t)need + 1;
      jc_put(&b, &len, &cap, cp);
    }
  }
  *out = b; *olen = len;
  return 1;
}
static inline int jc_value(jc_p *p, jc_val *v);
static inline int jc_number(jc_p *p, jc_val *v) {
  size_t st = p->i;
  const unsigned char *s = p->s;
  if (p->i < p->n && s[p->i] == '-') p->i++;
  if (p->i >= p->n) return jc_fail(p, "bad number");
  if (s[p->i] == '0') p->i++;
  else if (s[p->i] >= '1' && s[p->i] <= '9') { while (p->i < p->n && s[p->i] >= '0' && s[p->i] <= '9') p->i++; }
  else return jc_fail(p, "bad number");
  if (p->i < p->n && s[p->i] == '.') {
    p->i++;
    if (p->i >= p->n || s[p->i] < '0' || s[p->i] > '9') return jc_fail(p, "bad fraction");
    while (p->i < p->n && s[p->i] >= '0' && s[p->i] <= '9') p->i++;
  }
  if (p->i < p->n && (s[p->i] == 'e' || s[p->i] == 'E')) {
    p->i++;
    if (p->i < p->n && (s[p->i] == '+' || s[p->i] == '-')) p->i++;
    if (p->i >= p->n || s[p->i] < '0' || s[p->i] > '9') return jc_fail(p, "bad exponent");
    while (p->i < p->n && s[p->i] >= '0' && s[p->i] <= '9') p->i++;
  }
  v->t = JC_NUM;
  v->slen = p->i - st;
  v->s = (char *)malloc(v->slen + 1);
  memcpy(v->s, s + st, v->slen); v->s[v->slen] = 0;
  return 1;
}
static inline int jc_lit(jc_p *p, const char *lit, int t, jc_val *v) {
  size_t k = strlen(lit);
  if (p->i + k > p->n || memcmp(p->s + p->i, lit, k) != 0) return jc_fail(p, "unexpected character");
  p->i += k; v->t = t; return 1;
}
static inline int jc_value(jc_p *p, jc_val *v) {
  memset(v, 0, sizeof *v);
  jc_ws(p);
  if (p->i >= p->n) return jc_fail(p, "unexpected end");
  if (++p->depth > 200) return jc_fail(p, "too deep");
  switch (p->s[p->i]) {
    case '"': v->t = JC_STR; if (!jc_string(p, &v->s, &v->slen)) return 0; break;
    case 'n': if (!jc_lit(p, "null", JC_NULL, v)) return 0; break;
    case 't': if (!jc_lit(p, "true", JC_TRUE, v)) return 0; break;
    case 'f': if (!jc_lit(p, "false", JC_FALSE, v)) return 0; break;
    case '[': case '{': {
      int obj = p->s[p->i] == '{', cap = 0;
      v->t = obj ? JC_OBJ : JC_ARR;
      p->i++; jc_ws(p);
      if (p->i < p->n && p->s[p->i] == (obj ? '}' : ']')) { p->i++; break; }
      for (;;) {
        char *key = NULL; size_t klen = 0; int k;
        if (v->n == cap) {
          cap = cap * 2 + 4;
          v->items = (jc_val *)realloc(v->items, (size_t)cap * sizeof(jc_val));
          if (obj) { v->keys = (char **)realloc(v->keys, (size_t)cap * sizeof(char *)); v->keylens = (size_t *)realloc(v->keylens, (size_t)cap * sizeof(size_t)); }
        }
        if (obj) {
          jc_ws(p);
          if (p->i >= p->n || p->s[p->i] != '"') return jc_fail(p, "expected a key");
          if (!jc_string(p, &key, &klen)) return 0;
          for (k = 0; k < v->n; k++)
            if (v->keylens[k] == klen && memcmp(v->keys[k], key, klen) == 0) { free(key); return jc_fail(p, "duplicate key"); }
          jc_ws(p);
          if (p->i >= p->n || p->s[p->i] != ':') { free(key); return jc_fail(p, "expected ':'"); }
          p->i++;
          v->keys[v->n] = key; v->keylens[v->n] = klen;
        }
        if (!jc_value(p, &v->items[v->n])) { v->n++; return 0; }
        v->n++;
        jc_ws(p);
        if (p->i < p->n && p->s[p->i] == ',') { p->i++; continue; }
        if (p->i < p->n && p->s[p->i] == (obj ? '}' : ']')) { p->i++; break; }
        return jc_fail(p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
      }
      break;
    }
    default:
      if (p->s[p->i] == '-' || (p->s[p->i] >= '0' && p->s[p->i] <= '9')) { if (!jc_number(p, v)) return 0; }
      else return jc_fail(p, "unexpected character");
  }
  p->depth--;
  return 1;
}

/* Parses exactly one JSON value (surrounding whitespace allowed); NULL and a
   message in err on any error. Free with jc_free. */
static inline jc_val *jc_parse(const char *s, size_t n, char *err, size_t errsz) {
  jc_p p; jc_val *v = (jc_val *)calloc(1, sizeof(jc_val));
  p.s = (const unsigned char *)s; p.n = n; p.i = 0; p.err = err; p.errsz = errsz; p.depth = 0;
  if (err && errsz) err[0] = 0;
  if (!jc_value(&p, v)) { jc_free_val(v); free(v); return NULL; }
  jc_ws(&p);
  if (p.i != n) { jc_fail(&p, "trailing bytes"); jc_free_val(v); free(v); return NULL; }
  return v;
}
static inline void jc_free(jc_val *v) { if (v) { jc_free_val(v); free(v); } }
/* The member `key` of an object, NULL when absent or v is not an object. */
static inline jc_val *jc_get(jc_val *v, const char *key) {
  int i; size_t k = strlen(key);
  if (!v || v->t != JC_OBJ) return NULL;
  for (i = 0; i < v->n; i++) if (v->keylens[i] == k && memcmp(v->keys[i], key, k) == 0) return &v->items[i];
  return NULL;
}
static inline jc_val *jc_at(jc_val *v, int i) {
  if (!v || (v->t != JC_ARR && v->t != JC_OBJ) || i < 0 || i >= v->n) return NULL;
  return &v->items[i];
}
/* Is v a string equal to the n bytes s? */
static inline int jc_str_is(jc_val *v, const char *s, size_t n) { return v && v->t == JC_STR && v->slen == n && memcmp(v->s, s, n) == 0; }
static inline int jc_is(jc_val *v, const char *s) { return jc_str_is(v, s, strlen(s)); }
static inline double jc_num(jc_val *v) { return v && v->t == JC_NUM ? strtod(v->s, NULL) : -1e300; }
/* Are the object's keys exactly these, in this order? (NULL-terminated list) */
static inline int jc_keys_are(jc_val *v, const char *const *keys) {
  int i = 0;
  if (!v || v->t != JC_OBJ) return 0;
  for (; keys[i]; i++) if (i >= v->n || strlen(keys[i]) != v->keylens[i] || memcmp(keys[i], v->keys[i], v->keylens[i]) != 0) return 0;
  return i == v->n;
}
#endif
