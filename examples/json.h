/* json.h - a small strict JSON parser (RFC 8259) for the example server's
   request bodies. Bounded by construction: the caller gives the byte
   limit, nesting is at most JS_MAX_DEPTH, the node count at most one per
   input byte (and JS_MAX_NODES), decoded strings fit in one arena of the
   input's size. Rejects: trailing garbage, comments, trailing commas,
   leading zeros, NaN/Infinity, raw control characters in strings, invalid
   UTF-8, lone surrogates in \u escapes. Objects keep duplicate keys;
   js_get returns the last one (as Python's json module does).

   Strings are decoded into the arena and NUL-terminated, but may contain
   NUL bytes themselves (from \u0000): use the length.

   C99 + libc. Functions are static (include in one file). */
#ifndef EXAMPLES_JSON_H
#define EXAMPLES_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#if defined(__GNUC__) || defined(__clang__)
#  define JS_FN static __attribute__((unused))
#else
#  define JS_FN static
#endif

#define JS_MAX_DEPTH 64
#define JS_MAX_NODES 200000

typedef enum js_type { JS_NULL = 0, JS_FALSE, JS_TRUE, JS_NUMBER, JS_STRING, JS_ARRAY, JS_OBJECT } js_type;

typedef struct js_val {
  js_type type;
  int32_t n;          /* array / object: number of children */
  int32_t first;      /* first child, -1 if none */
  int32_t next;       /* next sibling, -1 at the end */
  const char *key;    /* key when this is an object member */
  size_t key_len;
  const char *str;    /* string value (decoded) */
  size_t len;
  double num;         /* number value */
  int is_int;         /* the number is integral and fits int64 (no fraction/exponent needed) */
  int64_t i;          /* its integer value when is_int */
} js_val;

typedef struct js_doc {
  js_val *v;
  int32_t n, cap;
  char *arena;
  size_t used, arena_cap;
} js_doc;

typedef struct js__p {
  const unsigned char *s;
  size_t len, pos;
  js_doc *d;
  char *err;
  size_t errsz;
  int failed;
} js__p;

static int js__fail(js__p *p, const char *what) {
  if (!p->failed && p->err && p->errsz)
    snprintf(p->err, p->errsz, "%s at byte %lu", what, (unsigned long)p->pos);
  p->failed = 1;
  return -1;
}

static void js__ws(js__p *p) {
  while (p->pos < p->len) {
    unsigned char c = p->s[p->pos];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') p->pos++; else break;
  }
}

static int32_t js__node(js__p *p, js_type t) {
  js_val *v;
  if (p->d->n >= p->d->cap) return js__fail(p, "too many JSON values");
  v = &p->d->v[p->d->n];
  memset(v, 0, sizeof *v);
  v->type = t; v->first = -1; v->next = -1;
  return p->d->n++;
}

static int js__hex4(js__p *p, uint32_t *out) {
  uint32_t v = 0;
  int k;
  if (p->len - p->pos < 4) return js__fail(p, "truncated \\u escape");
  for (k = 0; k < 4; k++) {
    unsigned char c = p->s[p->pos++];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
    else return js__fail(p, "bad \\u escape");
  }
  *out = v;
  return 0;
}

/* Length of a valid UTF-8 sequence starting at s (n bytes available), 0 if invalid. */
static size_t js__utf8_len(const unsigned char *s, size_t n) {
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return n >= 2 && (s[1] & 0xC0) == 0x80 ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0;
    if (c == 0xE0 && s[1] < 0xA0) return 0;      /* overlong */
    if (c == 0xED && s[1] >= 0xA0) return 0;     /* surrogate */
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80) return 0;
    if (c == 0xF0 && s[1] < 0x90) return 0;
    if (c == 0xF4 && s[1] >= 0x90) return 0;
    return 4;
  }
  return 0;
}

static size_t js__put_utf8(char *o, uint32_t cp) {
  if (cp < 0x80) { o[0] = (char)cp; return 1; }
  if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
  if (cp < 0x10000) {
    o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Parses a string at p->pos (the opening quote) into the arena. */
static int js__string(js__p *p, const char **out, size_t *out_len) {
  char *o = p->d->arena + p->d->used, *start = o;
  p->pos++;
  for (;;) {
    unsigned char c;
    if (p->pos >= p->len) return js__fail(p, "unterminated string");
    c = p->s[p->pos];
    if (c == '"') { p->pos++; break; }
    if (c < 0x20) return js__fail(p, "control character in string");
    if (c == '\\') {
      unsigned char e;
      if (p->pos + 1 >= p->len) return js__fail(p, "unterminated string");
      e = p->s[p->pos + 1];
      p->pos += 2;
      switch (e) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
          uint32_t cp, lo;
          if (js__hex4(p, &cp)) return -1;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return js__fail(p, "lone low surrogate");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (p->len - p->pos < 6 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
              return js__fail(p, "lone high surrogate");
            p->pos += 2;
            if (js__hex4(p, &lo)) return -1;
            if (lo < 0xDC00 || lo > 0xDFFF) return js__fail(p, "bad surrogate pair");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          /* an escape is >= 6 input bytes and decodes to <= 4 (<= 4 for a 12-byte pair) */
          o += js__put_utf8(o, cp);
          break;
        }
        default: p->pos--; return js__fail(p, "bad escape");
      }
      continue;
    }
    {
      size_t l = js__utf8_len(p->s + p->pos, p->len - p->pos);
      if (l == 0) return js__fail(p, "invalid UTF-8 in string");
      memcpy(o, p->s + p->pos, l);
      o += l; p->pos += l;
    }
  }
  *o++ = 0;
  *out = start;
  *out_len = (size_t)(o - start - 1);
  p->d->used += (size_t)(o - start);
  return 0;
}

static int js__number(js__p *p, js_val *v) {
  size_t st = p->pos;
  int neg = 0, frac = 0, overflow = 0;
  uint64_t mag = 0;
  char tmp[64], *text = tmp;
  size_t n;
  if (p->s[p->pos] == '-') { neg = 1; p->pos++; }
  if (p->pos >= p->len) return js__fail(p, "bad number");
  if (p->s[p->pos] == '0') p->pos++;
  else if (p->s[p->pos] >= '1' && p->s[p->pos] <= '9') {
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
      unsigned d = (unsigned)(p->s[p->pos] - '0');
      if (mag > (UINT64_MAX - d) / 10) overflow = 1; else mag = mag * 10 + d;
      p->pos++;
    }
  } else return js__fail(p, "bad number");
  if (p->pos < p->len && p->s[p->pos] == '.') {
    frac = 1; p->pos++;
    if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9') return js__fail(p, "bad number");
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
  }
  if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
    frac = 1; p->pos++;
    if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-')) p->pos++;
    if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9') return js__fail(p, "bad number");
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
  }
  /* RFC 8259 puts no limit on a number's digits (0.5000...0001 is 0.5, as
     Python reads it): a long one is copied to the heap for strtod */
  n = p->pos - st;
  if (n >= sizeof tmp && (text = (char *)malloc(n + 1)) == NULL) return js__fail(p, "out of memory");
  memcpy(text, p->s + st, n);
  text[n] = 0;
  v->num = strtod(text, NULL);
  if (text != tmp) free(text);
  if (!frac && !overflow && (neg ? mag <= (uint64_t)INT64_MAX + 1 : mag <= (uint64_t)INT64_MAX)) {
    v->is_int = 1;
    v->i = neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
  } else if (v->num == v->num && v->num >= -9.2e18 && v->num <= 9.2e18 && (double)(int64_t)v->num == v->num) {
    v->is_int = 1;       /* 10.0 or 1e3: an integral value */
    v->i = (int64_t)v->num;
  }
  return 0;
}

static int32_t js__value(js__p *p, int depth) {
  unsigned char c;
  int32_t id;
  js__ws(p);
  if (p->pos >= p->len) return js__fail(p, "unexpected end of input");
  if (depth > JS_MAX_DEPTH) return js__fail(p, "nesting too deep");
  c = p->s[p->pos];
  if (c == '{' || c == '[') {
    int obj = c == '{';
    int32_t last = -1;
    id = js__node(p, obj ? JS_OBJECT : JS_ARRAY);
    if (id < 0) return -1;
    p->pos++;
    js__ws(p);
    if (p->pos < p->len && p->s[p->pos] == (obj ? '}' : ']')) { p->pos++; return id; }
    for (;;) {
      const char *key = NULL;
      size_t key_len = 0;
      int32_t child;
      if (obj) {
        js__ws(p);
        if (p->pos >= p->len || p->s[p->pos] != '"') return js__fail(p, "expected a string key");
        if (js__string(p, &key, &key_len)) return -1;
        js__ws(p);
        if (p->pos >= p->len || p->s[p->pos] != ':') return js__fail(p, "expected ':'");
        p->pos++;
      }
      child = js__value(p, depth + 1);
      if (child < 0) return -1;
      p->d->v[child].key = key;
      p->d->v[child].key_len = key_len;
      if (last < 0) p->d->v[id].first = child; else p->d->v[last].next = child;
      last = child;
      p->d->v[id].n++;
      js__ws(p);
      if (p->pos >= p->len) return js__fail(p, "unexpected end of input");
      if (p->s[p->pos] == ',') { p->pos++; continue; }
      if (p->s[p->pos] == (obj ? '}' : ']')) { p->pos++; return id; }
      return js__fail(p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
  }
  if (c == '"') {
    id = js__node(p, JS_STRING);
    if (id < 0) return -1;
    if (js__string(p, &p->d->v[id].str, &p->d->v[id].len)) return -1;
    return id;
  }
  if (c == '-' || (c >= '0' && c <= '9')) {
    id = js__node(p, JS_NUMBER);
    if (id < 0) return -1;
    if (js__number(p, &p->d->v[id])) return -1;
    return id;
  }
  if (p->len - p->pos >= 4 && !memcmp(p->s + p->pos, "true", 4)) { p->pos += 4; return js__node(p, JS_TRUE); }
  if (p->len - p->pos >= 5 && !memcmp(p->s + p->pos, "false", 5)) { p->pos += 5; return js__node(p, JS_FALSE); }
  if (p->len - p->pos >= 4 && !memcmp(p->s + p->pos, "null", 4)) { p->pos += 4; return js__node(p, JS_NULL); }
  return js__fail(p, "unexpected character");
}

JS_FN void js_free(js_doc *d) {
  if (!d) return;
  free(d->v); free(d->arena);
  memset(d, 0, sizeof *d);
}

/* Parses text[0..len). Returns 0 with the root at d->v[0], or -1 with a
   message ("... at byte N") in err. Free with js_free either way. */
JS_FN int js_parse(js_doc *d, const char *text, size_t len, char *err, size_t errsz) {
  js__p p;
  size_t cap = len + 2;
  memset(d, 0, sizeof *d);
  if (cap > JS_MAX_NODES) cap = JS_MAX_NODES;
  d->cap = (int32_t)cap;
  d->v = (js_val *)malloc(cap * sizeof(js_val));
  d->arena = (char *)malloc(len + 1);
  d->arena_cap = len + 1;
  memset(&p, 0, sizeof p);
  p.s = (const unsigned char *)text; p.len = len; p.d = d; p.err = err; p.errsz = errsz;
  if (!d->v || !d->arena) { js__fail(&p, "out of memory"); return -1; }
  if (js__value(&p, 0) < 0) return -1;
  js__ws(&p);
  if (p.pos != len) { js__fail(&p, "trailing characters after the JSON value"); return -1; }
  return 0;
}

JS_FN const js_val *js_root(const js_doc *d) { return d->n > 0 ? &d->v[0] : NULL; }

/* The member `key` of object o (the last one when repeated), or NULL. */
JS_FN const js_val *js_get(const js_doc *d, const js_val *o, const char *key) {
  const js_val *found = NULL;
  size_t kl = strlen(key);
  int32_t c;
  if (!o || o->type != JS_OBJECT) return NULL;
  for (c = o->first; c >= 0; c = d->v[c].next)
    if (d->v[c].key_len == kl && !memcmp(d->v[c].key, key, kl)) found = &d->v[c];
  return found;
}

/* The i-th child of an array or object (O(i)), or NULL. */
JS_FN const js_val *js_at(const js_doc *d, const js_val *a, int32_t i) {
  int32_t c;
  if (!a || (a->type != JS_ARRAY && a->type != JS_OBJECT) || i < 0 || i >= a->n) return NULL;
  for (c = a->first; c >= 0 && i > 0; c = d->v[c].next) i--;
  return c >= 0 ? &d->v[c] : NULL;
}
/* The next sibling (iteration: for (e = js_at(d, a, 0); e; e = js_next(d, e))). */
JS_FN const js_val *js_next(const js_doc *d, const js_val *v) {
  return v && v->next >= 0 ? &d->v[v->next] : NULL;
}

#endif /* EXAMPLES_JSON_H */
