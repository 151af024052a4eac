/* mysample stream: token JSON lines on stdin -> OpenAI SSE stream on stdout.
   mysample bench-egress: speed of the JSON/SSE writer.
   The tool may allocate (input lines, the non-stream record); the library
   calls it makes do not. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>

/* ---- a token line: {"id": 17, "bytes": [72, 105], "logprob": -0.3,
        "top": [[id, logprob, [bytes]], ...]} ---------------------------------- */
typedef struct tok_line {
  int32_t id;
  unsigned char *bytes; size_t n_bytes;
  int has_logprob; float logprob;
  ms_token *top; int32_t n_top;
  unsigned char *top_bytes;       /* all top tokens' bytes, back to back */
} tok_line;

typedef struct lp { const char *s; size_t i, n; char err[160]; } lp;

static void lp_ws(lp *p) { while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\r' || p->s[p->i] == '\n')) p->i++; }
static int lp_fail(lp *p, const char *what) {
  if (!p->err[0]) snprintf(p->err, sizeof p->err, "%s at column %lu", what, (unsigned long)p->i + 1);
  return 0;
}
static int lp_eat(lp *p, char c) {
  lp_ws(p);
  if (p->i < p->n && p->s[p->i] == c) { p->i++; return 1; }
  return 0;
}
/* A JSON number (strict grammar); strtod runs in the "C" locale (the tool
   never calls setlocale). */
static int lp_num(lp *p, double *out, int integer) {
  size_t st, k; char tmp[64];
  lp_ws(p); st = p->i;
  if (p->i < p->n && p->s[p->i] == '-') p->i++;
  if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9') return lp_fail(p, "expected a number");
  if (p->s[p->i] == '0') p->i++; else while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
  if (p->i < p->n && p->s[p->i] == '.') {
    if (integer) return lp_fail(p, "expected an integer");
    p->i++;
    if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9') return lp_fail(p, "bad number");
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
  }
  if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
    if (integer) return lp_fail(p, "expected an integer");
    p->i++;
    if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-')) p->i++;
    if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9') return lp_fail(p, "bad number");
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
  }
  k = p->i - st;
  if (k >= sizeof tmp) return lp_fail(p, "number too long");
  memcpy(tmp, p->s + st, k); tmp[k] = 0;
  *out = strtod(tmp, NULL);
  return 1;
}
static int lp_int(lp *p, long lo, long hi, long *out, const char *what) {
  double d;
  if (!lp_num(p, &d, 1)) return 0;
  if (d < (double)lo || d > (double)hi) { char m[96]; snprintf(m, sizeof m, "%s out of range [%ld, %ld]", what, lo, hi); return lp_fail(p, m); }
  *out = (long)d;
  return 1;
}
/* [b, b, ...] of integers 0..255, appended to *buf. */
static int lp_bytes(lp *p, unsigned char **buf, size_t *len, size_t *cap) {
  if (!lp_eat(p, '[')) return lp_fail(p, "expected '[' (a list of byte values)");
  if (lp_eat(p, ']')) return 1;
  for (;;) {
    long v;
    if (!lp_int(p, 0, 255, &v, "byte")) return 0;
    if (*len == *cap) {
      unsigned char *nb = (unsigned char *)realloc(*buf, *cap * 2 + 16);
      if (!nb) return lp_fail(p, "out of memory");
      *buf = nb; *cap = *cap * 2 + 16;
    }
    (*buf)[(*len)++] = (unsigned char)v;
    if (lp_eat(p, ',')) continue;
    if (lp_eat(p, ']')) return 1;
    return lp_fail(p, "expected ',' or ']'");
  }
}
static int lp_key(lp *p, char *key, size_t cap) {
  size_t k = 0;
  if (!lp_eat(p, '"')) return lp_fail(p, "expected a key");
  while (p->i < p->n && p->s[p->i] != '"') {
    if (p->s[p->i] == '\\' || k + 1 >= cap) return lp_fail(p, "unknown key");
    key[k++] = p->s[p->i++];
  }
  if (p->i >= p->n) return lp_fail(p, "unterminated key");
  p->i++; key[k] = 0;
  if (!lp_eat(p, ':')) return lp_fail(p, "expected ':'");
  return 1;
}
static void tok_free(tok_line *t) { free(t->bytes); free(t->top); free(t->top_bytes); memset(t, 0, sizeof *t); }

static int parse_tok_line(const char *s, size_t n, tok_line *t, char *err, size_t errsz) {
  lp p; int seen_id = 0, seen_bytes = 0, seen_top = 0;
  size_t bcap = 0, tbcap = 0, tblen = 0, *offs = NULL, *lens = NULL; int32_t tcap = 0, j;
  char key[16];
  memset(t, 0, sizeof *t);
  p.s = s; p.n = n; p.i = 0; p.err[0] = 0;
  if (!lp_eat(&p, '{')) { lp_fail(&p, "expected a JSON object"); goto bad; }
  if (!lp_eat(&p, '}')) for (;;) {
    if (!lp_key(&p, key, sizeof key)) goto bad;
    if (!strcmp(key, "id")) {
      long v;
      if (seen_id++) { lp_fail(&p, "repeated key \"id\""); goto bad; }
      if (!lp_int(&p, 0, 2147483647L, &v, "id")) goto bad;
      t->id = (int32_t)v;
    } else if (!strcmp(key, "bytes")) {
      if (seen_bytes++) { lp_fail(&p, "repeated key \"bytes\""); goto bad; }
      if (!lp_bytes(&p, &t->bytes, &t->n_bytes, &bcap)) goto bad;
    } else if (!strcmp(key, "logprob")) {
      double d;
      if (t->has_logprob++) { lp_fail(&p, "repeated key \"logprob\""); goto bad; }
      if (!lp_num(&p, &d, 0)) goto bad;
      t->logprob = (float)d;
    } else if (!strcmp(key, "top")) {
      if (seen_top++) { lp_fail(&p, "repeated key \"top\""); goto bad; }
      if (!lp_eat(&p, '[')) { lp_fail(&p, "\"top\" must be a list of [id, logprob, [bytes]]"); goto bad; }
      if (!lp_eat(&p, ']')) for (;;) {
        long id; double d; size_t before = tblen;
        if (!lp_eat(&p, '[')) { lp_fail(&p, "expected [id, logprob, [bytes]]"); goto bad; }
        if (!lp_int(&p, 0, 2147483647L, &id, "top id")) goto bad;
        if (!lp_eat(&p, ',')) { lp_fail(&p, "expected ','"); goto bad; }
        if (!lp_num(&p, &d, 0)) goto bad;
        if (!lp_eat(&p, ',')) { lp_fail(&p, "expected ','"); goto bad; }
        if (!lp_bytes(&p, &t->top_bytes, &tblen, &tbcap)) goto bad;
        if (!lp_eat(&p, ']')) { lp_fail(&p, "expected ']'"); goto bad; }
        if (t->n_top == tcap) {
          ms_token *nt;
          size_t *no, *nl;
          if (tcap > 0x3fffffff / 2) { lp_fail(&p, "too many top entries"); goto bad; }
          tcap = tcap * 2 + 8;
          nt = (ms_token *)realloc(t->top, (size_t)tcap * sizeof(ms_token));
          if (nt) t->top = nt;
          no = (size_t *)realloc(offs, (size_t)tcap * sizeof(size_t));
          if (no) offs = no;
          nl = (size_t *)realloc(lens, (size_t)tcap * sizeof(size_t));
          if (nl) lens = nl;
          if (!nt || !no || !nl) { lp_fail(&p, "out of memory"); goto bad; }
        }
        t->top[t->n_top].token = (int32_t)id; t->top[t->n_top].logprob = (float)d;
        offs[t->n_top] = before; lens[t->n_top] = tblen - before;
        t->n_top++;
        if (lp_eat(&p, ',')) continue;
        if (lp_eat(&p, ']')) break;
        lp_fail(&p, "expected ',' or ']'"); goto bad;
      }
    } else { char m[64]; snprintf(m, sizeof m, "unknown key \"%s\"", key); lp_fail(&p, m); goto bad; }
    if (lp_eat(&p, ',')) continue;
    if (lp_eat(&p, '}')) break;
    lp_fail(&p, "expected ',' or '}'"); goto bad;
  }
  lp_ws(&p);
  if (p.i != p.n) { lp_fail(&p, "trailing characters after the object"); goto bad; }
  if (!seen_id) { lp_fail(&p, "missing \"id\""); goto bad; }
  if (!seen_bytes) { lp_fail(&p, "missing \"bytes\""); goto bad; }
  for (j = 0; j < t->n_top; j++) {
    /* (top entries that all have no bytes leave top_bytes NULL, and
       NULL + 0 is undefined: fuzz_stream_line found it) */
    t->top[j].bytes = t->top_bytes ? t->top_bytes + offs[j] : NULL;
    t->top[j].n_bytes = lens[j];
  }
  free(offs); free(lens);
  return 1;
bad:
  snprintf(err, errsz, "%s", p.err);
  free(offs); free(lens); tok_free(t);
  return 0;
}

/* ---- output ----------------------------------------------------------------- */
static int write_stdout(void *user, const char *b, size_t n) {
  (void)user;
  return fwrite(b, 1, n, stdout) != n;
}

typedef struct stream_opts {
  ms_object object; int stream, include_stop, ignore_eos, include_usage, logprobs;
  int32_t max_tokens, min_tokens, eos_id; long long n_prompt, created;
  const char *model, *id;
  const char **stops; int n_stops;
  int32_t *stop_ids; int n_stop_ids;
} stream_opts;

static void stream_help(FILE *f) {
  fprintf(f,
    "usage: mysample stream [flags] < tokens.jsonl\n"
    "\n"
    "Reads one sampled token per line on stdin and writes what an OpenAI-compatible\n"
    "server sends for it: the SSE stream (data: {...} events, then data: [DONE]),\n"
    "or with --stream false the one non-stream JSON object.\n"
    "\n"
    "Input line:  {\"id\": 17, \"bytes\": [72, 105]}\n"
    "  optional   \"logprob\": -0.3, \"top\": [[id, logprob, [bytes]], ...]\n"
    "  \"bytes\" are the token's raw bytes (a piece of a UTF-8 character is fine);\n"
    "  blank lines are skipped; any other malformed line is an error (exit 1).\n"
    "  The stream ends at EOS, a stop token, a stop string or --max-tokens;\n"
    "  input that ends first finishes with \"length\" (as a full context would).\n"
    "\n"
    "Flags:\n"
    "  --object chat|completion  chat.completion(.chunk) (default) or text_completion\n"
    "  --stream true|false       SSE chunks (default true) or one non-stream object\n"
    "  --stop STR                a stop string (repeatable); not part of the output\n"
    "  --include-stop            keep the matched stop string (and a stop/EOS token's text)\n"
    "  --stop-token-id ID        a stop token id (repeatable); stop_reason is the id\n"
    "  --max-tokens N            finish with \"length\" after N tokens (default: none)\n"
    "  --min-tokens N            no stop (EOS, stop ids, stop strings) before N tokens\n"
    "  --eos-id ID               the EOS token id (default: none)\n"
    "  --ignore-eos              treat the EOS id as an ordinary token\n"
    "  --logprobs N              write logprobs with the top N alternatives from \"top\"\n"
    "                            (chat: logprobs + top_logprobs=N; completion: logprobs=N)\n"
    "  --n-prompt-tokens N       prompt_tokens in the usage object (default 0)\n"
    "  --include-usage           stream: end with the usage chunk (\"choices\": [])\n"
    "  --model NAME              \"model\" (default \"mysample\")\n"
    "  --id ID                   \"id\" (default \"chatcmpl-mysample\" / \"cmpl-mysample\")\n"
    "  --created T               \"created\" Unix time (default: now; fix it for tests)\n"
    "  --help                    this text\n");
}

static int parse_long(const char *s, long long lo, long long hi, long long *out) {
  char *e; long long v;
  if (!s || !*s) return 0;
  v = strtoll(s, &e, 10);
  if (*e || v < lo || v > hi) return 0;
  *out = v;
  return 1;
}

/* A growable record of every token, for logprobs and the non-stream object. */
typedef struct rec {
  ms_token_logprobs *lp; int32_t n, cap;
  tok_line *lines;
  char *text; size_t text_n, text_cap;
} rec;

static const ms_token no_top[1] = {{0, 0.0f, NULL, 0}};

static void rec_text(rec *r, const char *s, size_t n) {
  if (r->text_n + n + 1 > r->text_cap) { r->text_cap = 2 * (r->text_n + n + 1); r->text = (char *)realloc(r->text, r->text_cap); }
  memcpy(r->text + r->text_n, s, n); r->text_n += n; r->text[r->text_n] = 0;
}

static int emit(ms_result rc) {
  if (rc != MS_OK) { fprintf(stderr, "mysample stream: writing failed: %s\n", ms_result_str(rc)); return 0; }
  return 1;
}

int ms_cli_stream(int argc, char **argv) {
  stream_opts o;
  int i, status = 0, finished = 0;
  long long v;
  ms_text_desc td; ms_text_params tp; ms_text *text = NULL; void *tmem = NULL;
  ms_response_desc rd; ms_response *resp = NULL; void *rmem = NULL;
  char stage[4096], msg[256];
  ms_out out;
  char *line = NULL; size_t line_cap = 0; long lineno = 0;
  char *delta = NULL; size_t delta_cap = 0;
  rec R; ms_text_step st; int32_t ntok = 0;
  ms_finish fin = MS_FINISH_NONE; ms_stop_reason sr;

  memset(&o, 0, sizeof o); memset(&R, 0, sizeof R); memset(&sr, 0, sizeof sr);
  o.stream = 1; o.eos_id = -1; o.logprobs = -1; o.model = "mysample"; o.created = (long long)time(NULL);
  o.stops = (const char **)calloc((size_t)argc + 1, sizeof(char *));
  o.stop_ids = (int32_t *)calloc((size_t)argc + 1, sizeof(int32_t));
  for (i = 1; i < argc; i++) {
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { stream_help(stdout); status = 0; goto done; }
    else if (!strcmp(a, "--include-stop")) o.include_stop = 1;
    else if (!strcmp(a, "--ignore-eos")) o.ignore_eos = 1;
    else if (!strcmp(a, "--include-usage")) o.include_usage = 1;
    else if (!val) { fprintf(stderr, "mysample stream: unknown flag or missing value: %s (see --help)\n", a); status = 2; goto done; }
    else {
      i++;
      if (!strcmp(a, "--object")) {
        if (!strcmp(val, "chat")) o.object = MS_OBJECT_CHAT;
        else if (!strcmp(val, "completion")) o.object = MS_OBJECT_COMPLETION;
        else { fprintf(stderr, "mysample stream: --object must be chat or completion, got '%s'\n", val); status = 2; goto done; }
      } else if (!strcmp(a, "--stream")) {
        if (!strcmp(val, "true")) o.stream = 1;
        else if (!strcmp(val, "false")) o.stream = 0;
        else { fprintf(stderr, "mysample stream: --stream must be true or false, got '%s'\n", val); status = 2; goto done; }
      } else if (!strcmp(a, "--stop")) o.stops[o.n_stops++] = val;
      else if (!strcmp(a, "--model")) o.model = val;
      else if (!strcmp(a, "--id")) o.id = val;
      else {
        long long lo = 0, hi = 2147483647LL;
        if (!strcmp(a, "--created")) { lo = -(1LL << 62); hi = 1LL << 62; }
        else if (!strcmp(a, "--n-prompt-tokens")) hi = 1LL << 62;
        else if (!strcmp(a, "--logprobs")) hi = 20;
        else if (strcmp(a, "--max-tokens") && strcmp(a, "--min-tokens") && strcmp(a, "--eos-id") && strcmp(a, "--stop-token-id")) {
          fprintf(stderr, "mysample stream: unknown flag %s (see --help)\n", a); status = 2; goto done;
        }
        if (!parse_long(val, lo, hi, &v)) {
          fprintf(stderr, "mysample stream: %s needs an integer in [%lld, %lld], got '%s'\n", a, lo, hi, val); status = 2; goto done;
        }
        if (!strcmp(a, "--created")) o.created = v;
        else if (!strcmp(a, "--n-prompt-tokens")) o.n_prompt = v;
        else if (!strcmp(a, "--logprobs")) o.logprobs = (int)v;
        else if (!strcmp(a, "--max-tokens")) { if (v < 1) { fprintf(stderr, "mysample stream: max_tokens must be at least 1, got %lld.\n", v); status = 2; goto done; } o.max_tokens = (int32_t)v; }
        else if (!strcmp(a, "--min-tokens")) o.min_tokens = (int32_t)v;
        else if (!strcmp(a, "--eos-id")) o.eos_id = (int32_t)v;
        else o.stop_ids[o.n_stop_ids++] = (int32_t)v;
      }
    }
  }
  if (!o.id) o.id = o.object == MS_OBJECT_CHAT ? "chatcmpl-mysample" : "cmpl-mysample";

  /* the text state, sized for exactly these stops */
  memset(&td, 0, sizeof td);
  td.max_stops = o.n_stops; td.max_stop_ids = o.n_stop_ids;
  for (i = 0; i < o.n_stops; i++) if ((int32_t)strlen(o.stops[i]) > td.max_stop_bytes) td.max_stop_bytes = (int32_t)strlen(o.stops[i]);
  /* at least 1, so that only "" stops are refused, by ms_text_reset with vLLM's message */
  if (o.n_stops > 0 && td.max_stop_bytes < 1) td.max_stop_bytes = 1;
  tmem = malloc(ms_text_size(&td) ? ms_text_size(&td) : 1);
  if (ms_text_init(&text, &td, tmem, ms_text_size(&td)) != MS_OK) { fprintf(stderr, "mysample stream: bad limits\n"); status = 2; goto done; }
  tp = ms_text_params_default();
  tp.stop = o.stops; tp.n_stop = o.n_stops; tp.stop_token_ids = o.stop_ids; tp.n_stop_token_ids = o.n_stop_ids;
  tp.eos_token_id = o.eos_id; tp.ignore_eos = o.ignore_eos; tp.include_stop_str_in_output = o.include_stop;
  tp.min_tokens = o.min_tokens; tp.max_tokens = o.max_tokens;
  if (ms_text_reset(text, &tp, msg, sizeof msg) != MS_OK) { fprintf(stderr, "mysample stream: %s\n", msg); status = 2; goto done; }

  memset(&rd, 0, sizeof rd);
  rd.object = o.object; rd.id = o.id; rd.model = o.model; rd.created = o.created;
  rmem = malloc(ms_response_size(&rd));
  if (ms_response_init(&resp, &rd, rmem, ms_response_size(&rd)) != MS_OK) { status = 2; goto done; }
  memset(&out, 0, sizeof out);
  out.buf = stage; out.size = sizeof stage; out.write = write_stdout;

  if (o.stream && o.object == MS_OBJECT_CHAT) {
    ms_chunk c; memset(&c, 0, sizeof c); c.role = 1;
    if (!emit(ms_chunk_write(&out, resp, &c))) { status = 1; goto done; }
  }

  /* one token per line */
  while (!finished) {
    size_t len = 0; int ch; tok_line tl; char err[200]; size_t need; ms_result rc;
    while ((ch = getchar()) != EOF && ch != '\n') {
      if (len + 2 > line_cap) { line_cap = line_cap * 2 + 256; line = (char *)realloc(line, line_cap); }
      line[len++] = (char)ch;
    }
    if (ch == EOF && len == 0) break;
    lineno++;
    { size_t k = 0; while (k < len && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r')) k++; if (k == len) continue; }
    if (!parse_tok_line(line, len, &tl, err, sizeof err)) {
      fprintf(stderr, "mysample stream: stdin line %ld: %s\n", lineno, err); status = 1; goto done;
    }
    if (o.logprobs >= 0 && !tl.has_logprob) {
      fprintf(stderr, "mysample stream: stdin line %ld: --logprobs needs \"logprob\" on every token\n", lineno);
      tok_free(&tl); status = 1; goto done;
    }
    need = ms_text_out_bound(text, tl.n_bytes);
    if (need > delta_cap) { delta_cap = need; delta = (char *)realloc(delta, delta_cap); }
    rc = ms_text_push(text, tl.id, tl.bytes, tl.n_bytes, delta, delta_cap, &st);
    if (rc != MS_OK) { fprintf(stderr, "mysample stream: %s\n", ms_result_str(rc)); tok_free(&tl); status = 1; goto done; }
    ntok++;
    /* record the token */
    if (R.n == R.cap) {
      R.cap = R.cap * 2 + 16;
      R.lp = (ms_token_logprobs *)realloc(R.lp, (size_t)R.cap * sizeof *R.lp);
      R.lines = (tok_line *)realloc(R.lines, (size_t)R.cap * sizeof *R.lines);
    }
    R.lines[R.n] = tl;
    memset(&R.lp[R.n], 0, sizeof R.lp[R.n]);
    R.lp[R.n].tok.token = tl.id; R.lp[R.n].tok.logprob = tl.logprob;
    R.lp[R.n].tok.bytes = tl.bytes; R.lp[R.n].tok.n_bytes = tl.n_bytes;
    R.lp[R.n].top = tl.top ? tl.top : no_top;   /* non-NULL: "[]" / "{}" */
    R.lp[R.n].n_top = tl.n_top < o.logprobs ? tl.n_top : (o.logprobs > 0 ? o.logprobs : 0);
    R.lp[R.n].text_offset = st.text_offset;
    R.n++;
    rec_text(&R, st.delta, st.delta_len);
    if (st.finish != MS_FINISH_NONE) { finished = 1; fin = st.finish; sr = st.stop_reason; }
    if (o.stream && (st.delta_len > 0 || o.logprobs >= 0)) {
      ms_chunk c; memset(&c, 0, sizeof c);
      c.text = st.delta; c.text_len = st.delta_len;
      if (o.logprobs >= 0) { c.logprobs = &R.lp[R.n - 1]; c.n_logprobs = 1; }
      if (!emit(ms_chunk_write(&out, resp, &c))) { status = 1; goto done; }
    }
  }
  if (!finished) {
    size_t need = ms_text_out_bound(text, 0);
    if (need > delta_cap) { delta_cap = need; delta = (char *)realloc(delta, delta_cap); }
    if (ms_text_finish(text, MS_FINISH_LENGTH, delta, delta_cap, &st) != MS_OK) { status = 1; goto done; }
    fin = st.finish; sr = st.stop_reason;
    rec_text(&R, st.delta, st.delta_len);
    if (o.stream && st.delta_len > 0) {
      ms_chunk c; memset(&c, 0, sizeof c); c.text = st.delta; c.text_len = st.delta_len;
      if (!emit(ms_chunk_write(&out, resp, &c))) { status = 1; goto done; }
    }
  }
  {
    ms_usage u; u.prompt_tokens = o.n_prompt; u.completion_tokens = ntok;
    if (o.stream) {
      ms_chunk c; memset(&c, 0, sizeof c);
      c.finish = fin; c.stop_reason = sr;
      if (!emit(ms_chunk_write(&out, resp, &c))) { status = 1; goto done; }
      if (o.include_usage && !emit(ms_usage_chunk_write(&out, resp, &u))) { status = 1; goto done; }
      if (!emit(ms_done_write(&out))) { status = 1; goto done; }
    } else {
      ms_choice c; memset(&c, 0, sizeof c);
      c.text = R.text ? R.text : ""; c.text_len = R.text_n;
      if (o.logprobs >= 0) { c.logprobs = R.lp; c.n_logprobs = R.n; }
      c.finish = fin; c.stop_reason = sr;
      if (!emit(ms_response_write(&out, resp, &c, 1, &u))) { status = 1; goto done; }
      fputc('\n', stdout);
    }
  }
  if (fflush(stdout) != 0) status = 1;
done:
  for (i = 0; i < R.n; i++) tok_free(&R.lines[i]);
  free(R.lp); free(R.lines); free(R.text);
  free(line); free(delta); free(tmem); free(rmem); free(o.stops); free(o.stop_ids);
  return status;
}

/* ---- bench-egress ------------------------------------------------------------- */
static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}
static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct bench_case { const char *name; double target_ns; } bench_case;

int ms_cli_bench_egress(int argc, char **argv) {
  enum { REPS = 301, INNER = 2000 };
  int json = 0, i, r, k, all_ok = 1;
  static char buf[16384];
  double *times = (double *)malloc(REPS * sizeof(double));
  void *rmem; ms_response *resp; ms_response_desc rd;
  ms_token top[20]; unsigned char tb[20][8]; ms_token_logprobs lp; ms_chunk c; ms_out o;
  ms_text_desc td; ms_text_params tp; ms_text *text; void *tmem; char tout[512]; ms_text_step st;
  const char *stops[] = {"</s>", "\n\nUser:"};
  static const bench_case cases[] = {
    {"content_chunk", 500.0}, {"chunk_top20_logprobs", 3000.0}, {"text_push_2_stops", 0.0}, {"float_format", 0.0}
  };
  volatile size_t sink = 0;
  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) json = 1;
    else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf("usage: mysample bench-egress [--json]\n\n"
             "Times the egress on this machine, single thread: a chat content chunk\n"
             "(target <= 500 ns), a chunk with one token and 20 top logprobs (target\n"
             "<= 3000 ns), one ms_text_push with two stop strings, one float format.\n"
             "Each figure is the median over %d runs of %d repetitions, in ns per call.\n"
             "--json prints one JSON object per line.\n", REPS, INNER);
      free(times); return 0;
    } else { fprintf(stderr, "mysample bench-egress: unknown flag %s\n", argv[i]); free(times); return 2; }
  }
  memset(&rd, 0, sizeof rd);
  rd.id = "chatcmpl-8f2d1c3e4b5a69788a9b0c1d2e3f4a5b"; rd.model = "meta-llama/Llama-3.1-8B-Instruct"; rd.created = 1700000000;
  rmem = malloc(ms_response_size(&rd));
  ms_response_init(&resp, &rd, rmem, ms_response_size(&rd));
  for (i = 0; i < 20; i++) {
    memcpy(tb[i], " token", 6); tb[i][6] = (unsigned char)('a' + i);
    top[i].token = 1000 + i; top[i].logprob = -0.0123456f - 0.731f * (float)i; top[i].bytes = tb[i]; top[i].n_bytes = 7;
  }
  memset(&lp, 0, sizeof lp);
  lp.tok = top[0]; lp.top = top; lp.n_top = 20;
  memset(&o, 0, sizeof o); o.buf = buf; o.size = sizeof buf;
  memset(&td, 0, sizeof td); td.max_stops = 2; td.max_stop_bytes = 16;
  tmem = malloc(ms_text_size(&td));
  ms_text_init(&text, &td, tmem, ms_text_size(&td));
  tp = ms_text_params_default(); tp.stop = stops; tp.n_stop = 2;
  ms_text_reset(text, &tp, NULL, 0);
  for (k = 0; k < 4; k++) {
    double med;
    for (r = 0; r < REPS; r++) {
      double t0 = now_ns();
      for (i = 0; i < INNER; i++) {
        if (k == 0) {
          memset(&c, 0, sizeof c); c.text = " world"; c.text_len = 6;
          ms_chunk_write(&o, resp, &c); sink += o.len;
        } else if (k == 1) {
          memset(&c, 0, sizeof c); c.text = " token"; c.text_len = 6; c.logprobs = &lp; c.n_logprobs = 1;
          ms_chunk_write(&o, resp, &c); sink += o.len;
        } else if (k == 2) {
          if (ms_text_push(text, 5, " word", 5, tout, sizeof tout, &st) != MS_OK || ms_text_n_tokens(text) > 100000)
            ms_text_reset(text, &tp, NULL, 0);
          sink += st.delta_len;
        } else {
          char fb[24]; sink += ms_json_float(fb, top[i % 20].logprob - (float)r * 1e-3f);
        }
      }
      times[r] = (now_ns() - t0) / INNER;
    }
    qsort(times, REPS, sizeof(double), cmp_d);
    med = times[REPS / 2];
    if (cases[k].target_ns > 0 && med > cases[k].target_ns) all_ok = 0;
    if (json)
      printf("{\"bench\":\"egress\",\"case\":\"%s\",\"ns_per_call\":%.1f,\"p10_ns\":%.1f,\"p90_ns\":%.1f,\"target_ns\":%s,\"bytes\":%lu}\n",
             cases[k].name, med, times[REPS / 10], times[REPS * 9 / 10],
             cases[k].target_ns > 0 ? (cases[k].target_ns == 500.0 ? "500" : "3000") : "null",
             (unsigned long)(k < 2 ? o.len : 0));
    else
      printf("%-22s %8.1f ns  (p10 %.1f, p90 %.1f)%s\n", cases[k].name, med, times[REPS / 10], times[REPS * 9 / 10],
             cases[k].target_ns > 0 ? (med <= cases[k].target_ns ? "  target met" : "  TARGET MISSED") : "");
  }
  (void)sink;
  free(times); free(rmem); free(tmem);
  return all_ok ? 0 : 1;
}
