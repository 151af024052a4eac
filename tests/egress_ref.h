/* Reference models for the egress tests, written independently of
   src/impl_text.c: slow and obvious on purpose. */
#ifndef MS_EGRESS_REF_H
#define MS_EGRESS_REF_H
#include <stdlib.h>
#include <string.h>

/* Is s[0..n) a complete, valid UTF-8 encoding of one code point? Decodes the
   value and checks its range, rather than using the byte table. */
static inline int ref_valid_seq(const unsigned char *s, size_t n) {
  unsigned long cp; size_t k;
  if (n == 1) return s[0] < 0x80;
  if (n == 2) { if ((s[0] & 0xE0) != 0xC0) return 0; cp = s[0] & 0x1Fu; }
  else if (n == 3) { if ((s[0] & 0xF0) != 0xE0) return 0; cp = s[0] & 0x0Fu; }
  else if (n == 4) { if ((s[0] & 0xF8) != 0xF0) return 0; cp = s[0] & 0x07u; }
  else return 0;
  for (k = 1; k < n; k++) { if ((s[k] & 0xC0) != 0x80) return 0; cp = (cp << 6) | (s[k] & 0x3Fu); }
  if (n == 2 && cp < 0x80) return 0;
  if (n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return 0;
  if (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
  return 1;
}
/* Is s[0..n) a proper prefix of some valid sequence? The lead byte's bit
   pattern gives the length; only the second byte has range rules, so trying
   every second byte with 0x80 after it settles it. */
static inline int ref_valid_prefix(const unsigned char *s, size_t n) {
  unsigned char t[4]; size_t total, k; unsigned c1;
  if ((s[0] & 0xE0) == 0xC0) total = 2;
  else if ((s[0] & 0xF0) == 0xE0) total = 3;
  else if ((s[0] & 0xF8) == 0xF0) total = 4;
  else return 0;
  if (n >= total) return 0;
  memcpy(t, s, n);
  for (k = n; k < total; k++) t[k] = 0x80;
  if (n >= 2) return ref_valid_seq(t, total);
  for (c1 = 0x80; c1 <= 0xBF; c1++) { t[1] = (unsigned char)c1; if (ref_valid_seq(t, total)) return 1; }
  return 0;
}
/* Lossy decode with the "maximal subpart" rule, the slow way. Returns a
   malloc'd buffer of *out_n bytes. */
static inline char *ref_lossy(const unsigned char *s, size_t n, size_t *out_n) {
  char *o = (char *)malloc(3 * n + 1); size_t i = 0, k = 0;
  while (i < n) {
    size_t len, best = 0;
    for (len = 1; len <= 4 && i + len <= n; len++) if (ref_valid_seq(s + i, len)) { best = len; break; }
    if (best) { memcpy(o + k, s + i, best); k += best; i += best; continue; }
    /* the longest prefix that could still become valid is one subpart */
    len = 1;
    while (i + len < n && len < 3 && ref_valid_prefix(s + i, len + 1)) len++;
    if (!ref_valid_prefix(s + i, 1)) len = 1;
    o[k++] = (char)0xEF; o[k++] = (char)0xBF; o[k++] = (char)0xBD;
    i += len;
  }
  o[k] = 0; *out_n = k;
  return o;
}
static inline const char *ref_memmem(const char *h, size_t hn, const char *nd, size_t nn) {
  size_t i;
  if (nn == 0 || nn > hn) return NULL;
  for (i = 0; i + nn <= hn; i++) if (memcmp(h + i, nd, nn) == 0) return h + i;
  return NULL;
}
/* The final text a sequence must give: the lossy decode of all its bytes,
   cut at the stop match that completes first (ties: the longer one). Returns
   the cut length and the stop's index (-1 for none) through *which. */
static inline size_t ref_final(const char *text, size_t n, const char *const *stops, int n_stops, int include, int *which) {
  size_t end;
  *which = -1;
  for (end = 1; end <= n; end++) {
    int i, best = -1; size_t best_len = 0;
    for (i = 0; i < n_stops; i++) {
      size_t l = strlen(stops[i]);
      if (l <= end && memcmp(text + end - l, stops[i], l) == 0 && l > best_len) { best = i; best_len = l; }
    }
    if (best >= 0) { *which = best; return include ? end : end - best_len; }
  }
  return n;
}
#endif
