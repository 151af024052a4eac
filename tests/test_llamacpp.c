/* llama.cpp's sampler unit tests (tests/test-sampling.cpp) through the
   public API, in the llamacpp profile.

   tests/data/llamacpp_cases.txt holds every case of test-sampling.cpp as
   data (its header comment gives the format). Every `case` and every
   `queue` block is one test here, named llamacpp_NAME, printed as
   "PASS name", "FAIL name: reason" (details on indented lines below) or
   "SKIP name: reason"; the exit status is non-zero when a case fails
   (tests/run.sh adds the lines up). Run from the repository root; an
   optional argument names another data file (used to check that the test
   can fail).

   How a `case` is run:
   - the row: logits[i] = logf(p_i) (p_i = 0 -> -inf), vocab = n;
   - params = ms_params_default() in MS_PROFILE_LLAMACPP with every sampler
     off (temperature 1, top_k 0, top_p 1, min_p 0, typical_p 1,
     top_n_sigma 0, XTC probability 0, dynatemp_range 0, mirostat 0, DRY
     multiplier 0, penalty_last_n 0, repetition 1, frequency and presence
     0), then only the sampler under test is set, and params.samplers is its
     llama.cpp letter followed by "t" (temperature 1 there is a no-op;
     the temperature cases use "t" alone). min_keep -> min_tokens_to_keep.
   - penalties / DRY: the history is the PROMPT of an ms_seq (llama.cpp
     accepts the prompt tokens into the windows too); last_n from the case.
     DRY's `context` (n_ctx, 1024) is larger than every history here; the
     sampler is created with max_history = 1024 so the window fits.
   - ms_probs gives the exact final distribution, renormalised over the
     kept tokens. It is compared with the case's `expect` list:
       * an id absent from the list (removed by the sampler) must get
         exactly 0;
       * an id listed with p > 0 must get p > 0 and match the expected p
         within 1e-5 (for `dist no` cases, XTC and typical, the file's p are
         the sampler's un-renormalised softmax: they are renormalised over
         the listed ids first);
       * an id listed with p = 0 stays in llama.cpp's array; llama.cpp only
         asserts |p| < 1e-5 for it, so that is the check, except where the
         sampler sets the logit to -inf (temperature 0, top-n-sigma), where
         the probability must be exactly 0. (The penalty cases list 0 for
         tokens whose true probability is ~1e-35 or ~1e-9, not -inf: an
         exact-0 rule there would reject the correct answer.)
   - queue blocks: vocab 10000, token i has logit logf(i); the chain letters
     k, p, m map to params.samplers, with top_k / top_p / min_p from the
     block and min_tokens_to_keep 1 (top_p(P, 1), min_p(M, 1)). Stage j is
     checked by running ms_probs with params.samplers = the first j+1
     letters of the chain: the kept ids must be exactly min_id..9999
     (size N): p > 0 for each of them, p = 0 below, except token 0, whose
     logit is -inf: when min_id is 0 it is in llama.cpp's array with p 0,
     so it must get exactly 0 and counts in N. */
#include "mysample.h"
#include "testlib.h"

#include <stdlib.h>
#include <errno.h>
#include <stdarg.h>

#define LC_TOL 1e-5
#define LC_MAX_KV 12
#define LC_MAX_STAGES 8
#define LC_QUEUE_VOCAB 10000
#define LC_DRY_CONTEXT 1024
/* 41 `case` + 24 `queue` blocks: a parser that silently drops one fails */
#define LC_EXPECTED_TESTS 65

typedef struct lc_case {
  char name[96];
  int is_queue;
  int line;
  /* case */
  char kind[24];
  char keys[LC_MAX_KV][24];
  char vals[LC_MAX_KV][64];
  int n_kv;
  int dist;                 /* 1 yes, 0 no, -1 not given */
  int32_t n_probs; float *probs;
  int32_t n_hist; int32_t *hist; int has_hist;
  int32_t n_expect; int32_t *exp_ids; double *exp_p;
  /* queue */
  int32_t vocab;
  char chain[16];
  int32_t top_k; float top_p, min_p; int has_chain;
  int n_stages;
  char stage_letter[LC_MAX_STAGES];
  int32_t stage_size[LC_MAX_STAGES], stage_min_id[LC_MAX_STAGES];
} lc_case;

typedef struct lc_file {
  lc_case *cases;
  int n, cap;
  char error[256];
} lc_file;

/* ---- reporting: one line per test, in testlib's counters --------------- */
static char lc_reason[512];
static char lc_details[8192];
static size_t lc_details_len;

static void lc_fail(const char *fmt, ...) {
  va_list ap;
  if (lc_reason[0]) return;   /* the first reason goes on the FAIL line */
  va_start(ap, fmt);
  vsnprintf(lc_reason, sizeof lc_reason, fmt, ap);
  va_end(ap);
}

static void lc_detail(const char *fmt, ...) {
  va_list ap;
  int w;
  if (lc_details_len + 2 >= sizeof lc_details) return;
  va_start(ap, fmt);
  w = vsnprintf(lc_details + lc_details_len, sizeof lc_details - lc_details_len, fmt, ap);
  va_end(ap);
  if (w > 0) {
    lc_details_len += (size_t)w;
    if (lc_details_len >= sizeof lc_details) lc_details_len = sizeof lc_details - 1;
  }
}

static void lc_begin(void) { lc_reason[0] = '\0'; lc_details[0] = '\0'; lc_details_len = 0; }

/* skip_reason != NULL: SKIP; else PASS when no failure was recorded. */
static void lc_end(const char *name, const char *skip_reason) {
  if (lc_reason[0]) { printf("FAIL %s: %s\n", name, lc_reason); t_total_fail++; }
  else if (skip_reason) { printf("SKIP %s: %s\n", name, skip_reason); t_total_skip++; }
  else { printf("PASS %s\n", name); t_total_pass++; }
  if (lc_reason[0] && lc_details_len) fputs(lc_details, stdout);
  fflush(stdout);
}

/* ---- parsing ------------------------------------------------------------ */
static char *lc_read_all(const char *path) {
  FILE *f = fopen(path, "rb");
  char *buf;
  long n;
  size_t got;
  if (!f) return NULL;
  if (fseek(f, 0, SEEK_END) != 0) { fclose(f); return NULL; }
  n = ftell(f);
  if (n < 0) { fclose(f); return NULL; }
  rewind(f);
  buf = (char *)malloc((size_t)n + 1);
  if (!buf) { fclose(f); return NULL; }
  got = fread(buf, 1, (size_t)n, f);
  fclose(f);
  buf[got] = '\0';
  return buf;
}

typedef struct lc_cur { char *p; } lc_cur;

static char *lc_next(lc_cur *c) {
  char *s = c->p;
  while (*s == ' ' || *s == '\t' || *s == '\r') s++;
  if (*s == '\0') { c->p = s; return NULL; }
  c->p = s;
  while (*c->p && *c->p != ' ' && *c->p != '\t' && *c->p != '\r') c->p++;
  if (*c->p) { *c->p = '\0'; c->p++; }
  return s;
}

static int lc_parse_long(const char *t, long *out) {
  char *end;
  if (!t || !*t) return 0;
  errno = 0;
  *out = strtol(t, &end, 10);
  return errno == 0 && *end == '\0';
}

static int lc_parse_double(const char *t, double *out) {
  char *end;
  if (!t || !*t) return 0;
  *out = strtod(t, &end);
  return *end == '\0';
}

static int lc_int(lc_cur *c, long *out) { return lc_parse_long(lc_next(c), out); }

static const char *lc_get(const lc_case *k, const char *key) {
  int i;
  for (i = 0; i < k->n_kv; i++) if (strcmp(k->keys[i], key) == 0) return k->vals[i];
  return NULL;
}

static void lc_free_file(lc_file *f) {
  int i;
  for (i = 0; i < f->n; i++) {
    free(f->cases[i].probs); free(f->cases[i].hist);
    free(f->cases[i].exp_ids); free(f->cases[i].exp_p);
  }
  free(f->cases);
  memset(f, 0, sizeof *f);
}

static int lc_parse(char *text, lc_file *f) {
  char *line = text;
  int lineno = 0;
  lc_case *k = NULL;
  memset(f, 0, sizeof *f);
  while (line && *line) {
    char *nl = strchr(line, '\n');
    char *key;
    lc_cur c;
    int ok = 1;
    if (nl) *nl = '\0';
    lineno++;
    c.p = line;
    key = lc_next(&c);
    if (!key || key[0] == '#') { line = nl ? nl + 1 : NULL; continue; }
    if (strcmp(key, "case") == 0 || strcmp(key, "queue") == 0) {
      char *nm = lc_next(&c);
      if (k || !nm || strlen(nm) >= sizeof k->name - 10) ok = 0;
      else {
        if (f->n == f->cap) {
          int ncap = f->cap ? f->cap * 2 : 64;
          lc_case *nc = (lc_case *)realloc(f->cases, sizeof(lc_case) * (size_t)ncap);
          if (!nc) return 0;
          f->cases = nc; f->cap = ncap;
        }
        k = &f->cases[f->n++];
        memset(k, 0, sizeof *k);
        k->is_queue = key[0] == 'q';
        k->dist = -1;
        k->line = lineno;
        sprintf(k->name, "llamacpp_%s", nm);
      }
    } else if (!k) {
      ok = 0;
    } else if (strcmp(key, "end") == 0) {
      if (k->is_queue) ok = k->vocab > 0 && k->has_chain && k->n_stages == (int)strlen(k->chain);
      else ok = k->kind[0] && k->dist >= 0 && k->probs && k->has_hist && k->exp_ids;
      k = NULL;
    } else if (strcmp(key, "note") == 0) {
      /* free text */
    } else if (!k->is_queue && strcmp(key, "sampler") == 0) {
      char *kind = lc_next(&c), *kv;
      ok = kind && strlen(kind) < sizeof k->kind;
      if (ok) strcpy(k->kind, kind);
      while (ok && (kv = lc_next(&c)) != NULL) {
        char *eq = strchr(kv, '=');
        if (!eq || k->n_kv >= LC_MAX_KV || (size_t)(eq - kv) >= sizeof k->keys[0] || strlen(eq + 1) >= sizeof k->vals[0]) { ok = 0; break; }
        *eq = '\0';
        strcpy(k->keys[k->n_kv], kv);
        strcpy(k->vals[k->n_kv], eq + 1);
        k->n_kv++;
      }
    } else if (!k->is_queue && strcmp(key, "dist") == 0) {
      char *v = lc_next(&c);
      if (v && strcmp(v, "yes") == 0) k->dist = 1;
      else if (v && strcmp(v, "no") == 0) k->dist = 0;
      else ok = 0;
    } else if (!k->is_queue && strcmp(key, "probs") == 0) {
      long n; int32_t i;
      ok = lc_int(&c, &n) && n >= 1 && n <= LC_QUEUE_VOCAB;
      if (ok) {
        k->n_probs = (int32_t)n;
        k->probs = (float *)malloc(sizeof(float) * (size_t)n);
        ok = k->probs != NULL;
        for (i = 0; ok && i < k->n_probs; i++) {
          double v;
          ok = lc_parse_double(lc_next(&c), &v) && v >= 0.0 && v <= 1.0;
          if (ok) k->probs[i] = (float)v;
        }
        if (ok) ok = lc_next(&c) == NULL;
      }
    } else if (!k->is_queue && strcmp(key, "history") == 0) {
      long n, v; int32_t i;
      ok = lc_int(&c, &n) && n >= 0 && n < 100000;
      if (ok) {
        k->n_hist = (int32_t)n;
        k->hist = (int32_t *)malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
        ok = k->hist != NULL;
        for (i = 0; ok && i < k->n_hist; i++) { ok = lc_int(&c, &v); k->hist[i] = (int32_t)v; }
        if (ok) ok = lc_next(&c) == NULL;
        k->has_hist = ok;
      }
    } else if (!k->is_queue && strcmp(key, "expect") == 0) {
      long n; int32_t i;
      ok = lc_int(&c, &n) && n >= 1 && n < 100000;
      if (ok) {
        k->n_expect = (int32_t)n;
        k->exp_ids = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
        k->exp_p = (double *)malloc(sizeof(double) * (size_t)n);
        ok = k->exp_ids && k->exp_p;
        for (i = 0; ok && i < k->n_expect; i++) {
          char *t = lc_next(&c), *colon;
          long id = -1;
          ok = t && (colon = strchr(t, ':')) != NULL;
          if (!ok) break;
          *colon = '\0';
          ok = lc_parse_long(t, &id) && lc_parse_double(colon + 1, &k->exp_p[i]) && k->exp_p[i] >= 0.0;
          k->exp_ids[i] = (int32_t)id;
        }
        if (ok) ok = lc_next(&c) == NULL;   /* exactly n entries */
      }
    } else if (k->is_queue && strcmp(key, "vocab") == 0) {
      long v; ok = lc_int(&c, &v) && v > 0 && v <= LC_QUEUE_VOCAB; k->vocab = (int32_t)v;
    } else if (k->is_queue && strcmp(key, "chain") == 0) {
      char *chars = lc_next(&c), *kv;
      int got = 0;
      ok = chars && strlen(chars) < sizeof k->chain && strlen(chars) <= LC_MAX_STAGES;
      if (ok) strcpy(k->chain, chars);
      while (ok && (kv = lc_next(&c)) != NULL) {
        double v;
        char *eq = strchr(kv, '=');
        if (!eq) { ok = 0; break; }
        *eq = '\0';
        ok = lc_parse_double(eq + 1, &v);
        if (!ok) break;
        if (strcmp(kv, "top_k") == 0) { k->top_k = (int32_t)v; got |= 1; }
        else if (strcmp(kv, "top_p") == 0) { k->top_p = (float)v; got |= 2; }
        else if (strcmp(kv, "min_p") == 0) { k->min_p = (float)v; got |= 4; }
        else ok = 0;
      }
      k->has_chain = ok && got == 7;
      ok = ok && got == 7;
    } else if (k->is_queue && strcmp(key, "stage") == 0) {
      char *letter = lc_next(&c), *w1, *w2;
      long size, min_id;
      ok = letter && strlen(letter) == 1 && k->n_stages < LC_MAX_STAGES;
      w1 = ok ? lc_next(&c) : NULL;
      ok = ok && w1 && strcmp(w1, "size") == 0 && lc_int(&c, &size);
      w2 = ok ? lc_next(&c) : NULL;
      ok = ok && w2 && strcmp(w2, "min_id") == 0 && lc_int(&c, &min_id) && lc_next(&c) == NULL;
      if (ok) {
        k->stage_letter[k->n_stages] = letter[0];
        k->stage_size[k->n_stages] = (int32_t)size;
        k->stage_min_id[k->n_stages] = (int32_t)min_id;
        k->n_stages++;
      }
    } else {
      ok = 0;
    }
    if (!ok) {
      snprintf(f->error, sizeof f->error, "parse error at line %d (key '%.40s')", lineno, key);
      return 0;
    }
    line = nl ? nl + 1 : NULL;
  }
  if (k) { snprintf(f->error, sizeof f->error, "block '%.60s' has no 'end'", k->name); return 0; }
  return 1;
}

/* ---- running ------------------------------------------------------------ */
/* Every sampler of the chain off; the test then turns one on. */
static ms_params lc_params_off(void) {
  ms_params p = ms_params_default();
  p.profile = MS_PROFILE_LLAMACPP;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.typical_p = 1.0f;
  p.top_n_sigma = 0.0f;
  p.xtc_probability = 0.0f;
  p.dynatemp_range = 0.0f;
  p.mirostat = 0;
  p.dry_multiplier = 0.0f;
  p.dry_last_n = 0;
  p.penalty_last_n = 0;
  p.repetition_penalty = 1.0f;
  p.frequency_penalty = 0.0f;
  p.presence_penalty = 0.0f;
  p.min_tokens_to_keep = 0;   /* llama.cpp's default min_keep */
  p.has_seed = 1;
  p.seed = 0;
  return p;
}

/* A required numeric key of the sampler line; records a failure if absent. */
static int lc_num(const lc_case *k, const char *key, double *out) {
  const char *v = lc_get(k, key);
  if (!v || !lc_parse_double(v, out)) { lc_fail("the data file's '%s' sampler has no numeric '%s'", k->kind, key); return 0; }
  return 1;
}

/* "a,b;c" -> ids and lengths; "-" = none. Returns 0 on a malformed list. */
static int lc_breakers(const char *s, int32_t *ids, int32_t *lens, int32_t cap, int32_t *n_out) {
  int32_t total = 0, n = 0, len = 0;
  const char *q = s;
  *n_out = 0;
  if (strcmp(s, "-") == 0) return 1;
  while (*q) {
    char *end;
    long v = strtol(q, &end, 10);
    if (end == q || total >= cap || n >= cap) return 0;
    ids[total++] = (int32_t)v; len++;
    if (*end == ',') q = end + 1;
    else if (*end == ';' || *end == '\0') { lens[n++] = len; len = 0; q = *end ? end + 1 : end; }
    else return 0;
  }
  *n_out = n;
  return n > 0;
}

static void lc_print_dist(const char *label, const float *probs, int32_t vocab) {
  int32_t i;
  lc_detail("    %s {", label);
  for (i = 0; i < vocab; i++) lc_detail("%s%d:%.9g", i ? ", " : "", (int)i, (double)probs[i]);
  lc_detail("}\n");
}

static void lc_run_case(ms_sampler *s, const lc_case *k, float *probs) {
  ms_params p = lc_params_off();
  ms_seq *q = NULL;
  ms_result r;
  float *logits = NULL;
  int32_t vocab = k->n_probs, i, j;
  int32_t br_ids[64], br_lens[64], n_br = 0;
  int zero_is_neg_inf = 0, use_seq = 0;
  double v, sum_listed = 0.0;
  char msg[256];
  const char *skip = NULL;
  char samplers[4];

  lc_begin();
  samplers[0] = '\0';

  if (strcmp(k->kind, "temp") == 0) {
    if (lc_num(k, "t", &v)) p.temperature = (float)v;
    strcpy(samplers, "t");
    zero_is_neg_inf = 1;   /* T <= 0: every entry but the first maximum gets -inf */
  } else if (strcmp(k->kind, "temp_ext") == 0) {
    double d, e;
    if (lc_num(k, "t", &v) && lc_num(k, "delta", &d) && lc_num(k, "exponent", &e)) {
      p.temperature = (float)v; p.dynatemp_range = (float)d; p.dynatemp_exponent = (float)e;
    }
    strcpy(samplers, "t");
    zero_is_neg_inf = 1;
  } else if (strcmp(k->kind, "top_k") == 0) {
    if (lc_num(k, "k", &v)) p.top_k = (int32_t)v;
    strcpy(samplers, "kt");
  } else if (strcmp(k->kind, "top_p") == 0) {
    double m;
    if (lc_num(k, "p", &v) && lc_num(k, "min_keep", &m)) { p.top_p = (float)v; p.min_tokens_to_keep = (int32_t)m; }
    strcpy(samplers, "pt");
  } else if (strcmp(k->kind, "min_p") == 0) {
    double m;
    if (lc_num(k, "p", &v) && lc_num(k, "min_keep", &m)) { p.min_p = (float)v; p.min_tokens_to_keep = (int32_t)m; }
    strcpy(samplers, "mt");
  } else if (strcmp(k->kind, "xtc") == 0) {
    double t, m, seed;
    if (lc_num(k, "p", &v) && lc_num(k, "t", &t) && lc_num(k, "min_keep", &m) && lc_num(k, "seed", &seed)) {
      /* llama.cpp draws chance ~ uniform_real_distribution<float>(0, 1)
         from its own std::mt19937(seed) and XTC acts when chance <=
         probability. With seed 0 the first mt19937 output is 2357136044,
         so chance = 2357136044 / 2^32 = 0.5488 <= 0.99: every xtc case of
         the file was computed with XTC ACTING (xtc_should_not_0.39 keeps
         everything because only one token reaches the threshold, not
         because of the draw). mysample draws from its own Philox stream
         (docs/ENGINES.md 1.4), which cannot reproduce that value, so the
         outcome is emulated with probability 1.0 (always acts). */
      p.xtc_probability = v > 0.0 ? 1.0f : 0.0f;
      p.xtc_threshold = (float)t;
      p.min_tokens_to_keep = (int32_t)m;
      p.seed = (uint64_t)seed;
    }
    strcpy(samplers, "xt");
  } else if (strcmp(k->kind, "typical") == 0) {
    double m;
    if (lc_num(k, "p", &v) && lc_num(k, "min_keep", &m)) { p.typical_p = (float)v; p.min_tokens_to_keep = (int32_t)m; }
    strcpy(samplers, "yt");
  } else if (strcmp(k->kind, "penalties") == 0) {
    double rep, fr, pr;
    if (lc_num(k, "last_n", &v) && lc_num(k, "repeat", &rep) && lc_num(k, "freq", &fr) && lc_num(k, "present", &pr)) {
      p.penalty_last_n = (int32_t)v;
      p.repetition_penalty = (float)rep;
      p.frequency_penalty = (float)fr;
      p.presence_penalty = (float)pr;
    }
    strcpy(samplers, "et");
    use_seq = 1;
  } else if (strcmp(k->kind, "dry") == 0) {
    double mult, base, allowed, ctx;
    const char *b = lc_get(k, "breakers");
    if (lc_num(k, "multiplier", &mult) && lc_num(k, "base", &base) && lc_num(k, "allowed_length", &allowed) &&
        lc_num(k, "last_n", &v) && lc_num(k, "context", &ctx)) {
      p.dry_multiplier = (float)mult;
      p.dry_base = (float)base;
      p.dry_allowed_length = (int32_t)allowed;
      p.dry_last_n = (int32_t)v;
      /* n_ctx only caps the window (N = min(ring, last_n, n_ctx)); it is
         above every history here, and the sampler's max_history covers it */
      if (ctx < k->n_hist || ctx > LC_DRY_CONTEXT) skip = "DRY context size below the history or above the sampler's max_history";
      if (!b || !lc_breakers(b, br_ids, br_lens, 64, &n_br)) lc_fail("malformed breakers list");
      p.dry_breakers = n_br ? br_ids : NULL;
      p.dry_breakers_lens = n_br ? br_lens : NULL;
      p.n_dry_breakers = n_br;
    }
    strcpy(samplers, "dt");
    use_seq = 1;
  } else if (strcmp(k->kind, "top_n_sigma") == 0) {
    if (lc_num(k, "n", &v)) p.top_n_sigma = (float)v;
    strcpy(samplers, "st");
    zero_is_neg_inf = 1;   /* masked entries get -inf and stay */
  } else {
    skip = "sampler kind not known to this test";
  }
  p.samplers = samplers;
  if (lc_reason[0] || skip) { lc_end(k->name, skip); return; }
  if (k->n_hist > 0 && !use_seq) { lc_fail("history given for a sampler that does not use it"); lc_end(k->name, NULL); return; }

  /* the expected list: ids in range, no duplicates */
  for (i = 0; i < k->n_expect; i++) {
    if (k->exp_ids[i] < 0 || k->exp_ids[i] >= vocab) { lc_fail("expected id %d out of range", (int)k->exp_ids[i]); break; }
    for (j = 0; j < i; j++) if (k->exp_ids[j] == k->exp_ids[i]) lc_fail("expected id %d listed twice", (int)k->exp_ids[i]);
    sum_listed += k->exp_p[i];
  }
  if (!(sum_listed > 0.0)) lc_fail("the expected list has no positive probability");
  if (lc_reason[0]) { lc_end(k->name, NULL); return; }

  if (ms_params_validate(&p, vocab, msg, sizeof msg) != MS_OK) {
    lc_fail("ms_params_validate: %s", msg);
    lc_end(k->name, NULL);
    return;
  }

  logits = (float *)malloc(sizeof(float) * (size_t)vocab);
  if (!logits) { lc_fail("out of memory"); lc_end(k->name, NULL); return; }
  for (i = 0; i < vocab; i++) logits[i] = k->probs[i] > 0.0f ? logf(k->probs[i]) : -INFINITY;

  if (use_seq) {
    r = ms_seq_create(&q, k->n_hist + 1);
    if (r == MS_OK) r = ms_seq_reset(q, k->hist, k->n_hist, vocab, &p, 0);
    if (r != MS_OK) {
      lc_fail("building the sequence: %s", ms_result_str(r));
      ms_seq_destroy(q); free(logits); lc_end(k->name, NULL); return;
    }
  }
  for (i = 0; i < vocab; i++) probs[i] = -1.0f;
  r = ms_probs(s, logits, vocab, &p, q, probs);
  ms_seq_destroy(q);
  free(logits);
  if (r != MS_OK) { lc_fail("ms_probs returned %s", ms_result_str(r)); lc_end(k->name, NULL); return; }

  /* dist yes: the file's p are the final softmax; dist no: renormalise */
  for (i = 0; i < vocab; i++) {
    int32_t at = -1;
    double got = probs[i];
    for (j = 0; j < k->n_expect; j++) if (k->exp_ids[j] == i) { at = j; break; }
    if (at < 0) {
      if (got != 0.0) lc_fail("id %d was removed by llama.cpp but got p = %.9g", (int)i, got);
    } else if (k->exp_p[at] == 0.0) {
      if (zero_is_neg_inf ? got != 0.0 : !(fabs(got) < LC_TOL))
        lc_fail("id %d: got %.9g, want %s", (int)i, got, zero_is_neg_inf ? "exactly 0 (logit -inf)" : "|p| < 1e-5");
    } else {
      double want = k->dist ? k->exp_p[at] : k->exp_p[at] / sum_listed;
      if (!(got > 0.0)) lc_fail("id %d was kept by llama.cpp (want p = %.6f) but got p = %.9g", (int)i, want, got);
      else if (!(fabs(got - want) < LC_TOL)) lc_fail("id %d: got %.9g, want %.9g (|diff| %.3g)", (int)i, got, want, fabs(got - want));
    }
  }
  if (lc_reason[0]) {
    float *want = (float *)malloc(sizeof(float) * (size_t)vocab);
    lc_detail("    samplers \"%s\", %s\n", samplers, k->dist ? "dist yes" : "dist no (expected renormalised over the listed ids)");
    lc_print_dist("got ", probs, vocab);
    if (want) {
      for (i = 0; i < vocab; i++) want[i] = 0.0f;
      for (j = 0; j < k->n_expect; j++) want[k->exp_ids[j]] = (float)(k->dist ? k->exp_p[j] : k->exp_p[j] / sum_listed);
      lc_print_dist("want", want, vocab);
      free(want);
    }
  }
  lc_end(k->name, NULL);
}

static void lc_run_queue(ms_sampler *s, const lc_case *k, float *logits, float *probs) {
  ms_params p = lc_params_off();
  char prefix[16], msg[256];
  int st;
  int32_t i;
  lc_begin();
  if (k->vocab != LC_QUEUE_VOCAB) { lc_end(k->name, "queue vocab other than 10000"); return; }
  for (st = 0; st < k->n_stages; st++)
    if (k->stage_letter[st] != k->chain[st] || !strchr("kpm", k->chain[st])) {
      lc_fail("stage %d letter '%c' does not match chain '%s' (or is not k, p, m)", st, k->stage_letter[st], k->chain);
      lc_end(k->name, NULL);
      return;
    }
  p.top_k = k->top_k;
  p.top_p = k->top_p;
  p.min_p = k->min_p;
  p.min_tokens_to_keep = 1;   /* top_p(P, 1), min_p(M, 1) */
  for (i = 0; i < k->vocab; i++) logits[i] = i > 0 ? logf((float)i) : -INFINITY;
  for (st = 0; st < k->n_stages; st++) {
    ms_result r;
    int32_t kept = 0, lo = -1, bad_in = -1, bad_out = -1;
    memcpy(prefix, k->chain, (size_t)st + 1);
    prefix[st + 1] = '\0';
    p.samplers = prefix;
    if (ms_params_validate(&p, k->vocab, msg, sizeof msg) != MS_OK) { lc_fail("stage %d (\"%s\"): ms_params_validate: %s", st, prefix, msg); break; }
    for (i = 0; i < k->vocab; i++) probs[i] = -1.0f;
    r = ms_probs(s, logits, k->vocab, &p, NULL, probs);
    if (r != MS_OK) { lc_fail("stage %d (\"%s\"): ms_probs returned %s", st, prefix, ms_result_str(r)); break; }
    /* token 0 (logit -inf) stays in llama.cpp's array when a stage keeps
       every entry down to it (min_id 0); through ms_probs it shows as
       p = 0 like a removed token, so it is expected at exactly 0 and
       counted in the stage's size when it lies in min_id..9999 */
    for (i = 0; i < k->vocab; i++) {
      int in = probs[i] > 0.0f, want_in = i >= k->stage_min_id[st] && logits[i] != -INFINITY;
      if (probs[i] < 0.0f || probs[i] != probs[i]) { lc_fail("stage %d (\"%s\"): id %d got p = %.9g", st, prefix, (int)i, (double)probs[i]); break; }
      if (in || (logits[i] == -INFINITY && i >= k->stage_min_id[st])) { kept++; if (lo < 0) lo = i; }
      if (in && !want_in && bad_in < 0) bad_in = i;
      if (!in && want_in && bad_out < 0) bad_out = i;
    }
    if (lc_reason[0]) break;
    if (kept != k->stage_size[st] || bad_in >= 0 || bad_out >= 0) {
      lc_fail("stage %d (\"%s\", top_k %d top_p %.9g min_p %.9g): kept %d ids (lowest %d), want %d ids %d..%d",
              st, prefix, (int)k->top_k, (double)k->top_p, (double)k->min_p, (int)kept, (int)lo,
              (int)k->stage_size[st], (int)k->stage_min_id[st], (int)(k->vocab - 1));
      if (bad_in >= 0) lc_detail("    id %d got p = %.9g, want 0 (below min_id %d, or logit -inf)\n", (int)bad_in, (double)probs[bad_in], (int)k->stage_min_id[st]);
      if (bad_out >= 0) lc_detail("    id %d dropped, at or above min_id %d\n", (int)bad_out, (int)k->stage_min_id[st]);
      break;
    }
  }
  lc_end(k->name, NULL);
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "tests/data/llamacpp_cases.txt";
  char *text;
  lc_file f;
  ms_sampler_desc d;
  ms_sampler *s = NULL;
  ms_result r;
  float *probs, *logits;
  int i;
  (void)t_run;   /* testlib's counters are used; its runner is not */

  text = lc_read_all(path);
  if (!text) {
    printf("FAIL llamacpp_load: cannot read %s (run the tests from the repository root)\n", path);
    return 1;
  }
  if (!lc_parse(text, &f)) {
    printf("FAIL llamacpp_load: %s: %s\n", path, f.error);
    free(text); lc_free_file(&f);
    return 1;
  }
  free(text);
  if (f.n != LC_EXPECTED_TESTS && argc <= 1) {
    printf("FAIL llamacpp_load: %s holds %d cases, this test expects %d\n", path, f.n, LC_EXPECTED_TESTS);
    t_total_fail++;
  }

  memset(&d, 0, sizeof d);
  d.max_vocab = LC_QUEUE_VOCAB;
  d.max_history = LC_DRY_CONTEXT;
  r = ms_sampler_create(&s, &d);
  probs = (float *)malloc(sizeof(float) * LC_QUEUE_VOCAB);
  logits = (float *)malloc(sizeof(float) * LC_QUEUE_VOCAB);
  if (r != MS_OK || !probs || !logits) {
    printf("FAIL llamacpp_sampler: ms_sampler_create: %s\n", ms_result_str(r));
    free(probs); free(logits); lc_free_file(&f);
    return 1;
  }
  for (i = 0; i < f.n; i++) {
    if (f.cases[i].is_queue) lc_run_queue(s, &f.cases[i], logits, probs);
    else lc_run_case(s, &f.cases[i], probs);
  }
  ms_sampler_destroy(s);
  free(probs); free(logits);
  lc_free_file(&f);
  return t_done();
}
