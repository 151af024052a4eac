/* libFuzzer target: the token lines `mysample stream` reads on stdin
   (tools/cli_stream.c, parse_tok_line) on any bytes. A refused line says
   why; an accepted one has what it claims (bytes within 0..255, ids within
   int32), and written back out as a canonical line it parses to the same
   token, top list and bytes. */
#define _POSIX_C_SOURCE 200809L   /* (cli_stream.c asks for it; mysample.h comes first here) */
#define MYSAMPLE_IMPLEMENTATION
#include "mysample.h"
#undef _POSIX_C_SOURCE
#include "../../tools/cli_stream.c"
#include <assert.h>

static size_t put_bytes(char *o, const unsigned char *b, size_t n) {
  size_t k = 0, i;
  o[k++] = '[';
  for (i = 0; i < n; i++) k += (size_t)sprintf(o + k, i ? ",%u" : "%u", (unsigned)b[i]);
  o[k++] = ']';
  return k;
}

/* A float as a JSON number that reads back as it (%.9g: every float; an
   infinity, from a number past the float range, as one past it again). */
static size_t put_float(char *o, float v) {
  if (v > 3.4028235e38f) return (size_t)sprintf(o, "1e999");
  if (v < -3.4028235e38f) return (size_t)sprintf(o, "-1e999");
  return (size_t)sprintf(o, "%.9g", (double)v);
}

static char *canonical(const tok_line *t, size_t *len) {
  size_t cap = 64 + 4 * t->n_bytes, i, k = 0;
  char *o;
  for (i = 0; i < (size_t)t->n_top; i++) cap += 64 + 4 * t->top[i].n_bytes;
  o = (char *)malloc(cap);
  if (!o) return NULL;
  k += (size_t)sprintf(o + k, "{\"id\": %d, \"bytes\": ", (int)t->id);
  k += put_bytes(o + k, t->bytes, t->n_bytes);
  if (t->has_logprob) { k += (size_t)sprintf(o + k, ", \"logprob\": "); k += put_float(o + k, t->logprob); }
  if (t->n_top > 0) {
    k += (size_t)sprintf(o + k, ", \"top\": [");
    for (i = 0; i < (size_t)t->n_top; i++) {
      k += (size_t)sprintf(o + k, "%s[%d, ", i ? ", " : "", (int)t->top[i].token);
      k += put_float(o + k, t->top[i].logprob);
      o[k++] = ','; o[k++] = ' ';
      k += put_bytes(o + k, t->top[i].bytes, t->top[i].n_bytes);
      o[k++] = ']';
    }
    o[k++] = ']';
  }
  o[k++] = '}';
  assert(k <= cap);
  *len = k;
  return o;
}

static int same_float(float a, float b) { return a == b || (a != a && b != b); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tok_line a, b;
  char err[160], *line;
  size_t n, i;
  err[0] = 'x'; err[1] = 0;
  if (!parse_tok_line((const char *)data, size, &a, err, sizeof err)) {
    assert(err[0] != 0 && strcmp(err, "x") != 0);   /* a refusal says why */
    assert(!a.bytes && !a.top && !a.top_bytes && a.n_top == 0);
    return 0;
  }
  assert(a.id >= 0 && a.n_top >= 0 && (a.n_top == 0 || a.top));
  assert(a.n_bytes <= size);
  for (i = 0; i < (size_t)a.n_top; i++) assert(a.top[i].token >= 0 && (a.top[i].n_bytes == 0 || a.top[i].bytes));
  line = canonical(&a, &n);
  if (line) {
    int ok = parse_tok_line(line, n, &b, err, sizeof err);
    assert(ok);
    assert(b.id == a.id && b.n_bytes == a.n_bytes && (a.n_bytes == 0 || memcmp(a.bytes, b.bytes, a.n_bytes) == 0));
    assert(b.has_logprob == a.has_logprob && (!a.has_logprob || same_float(a.logprob, b.logprob)));
    assert(b.n_top == a.n_top);
    for (i = 0; i < (size_t)a.n_top; i++) {
      assert(b.top[i].token == a.top[i].token && same_float(b.top[i].logprob, a.top[i].logprob));
      assert(b.top[i].n_bytes == a.top[i].n_bytes &&
             (a.top[i].n_bytes == 0 || memcmp(b.top[i].bytes, a.top[i].bytes, a.top[i].n_bytes) == 0));
    }
    tok_free(&b);
    free(line);
  }
  tok_free(&a);
  return 0;
}
