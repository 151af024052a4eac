/* Golden vectors: ms_probs() against the reference engines.

   tests/data/golden_vllm.txt and tests/data/golden_hf.txt are written by
   tools/golden/gen.py (vLLM v1's sampler re-stated in PyTorch, and HF
   transformers' own logits processors). Each case holds the logits, the
   parameters, the prompt/output history and the exact final distribution
   the row is drawn from. For every case this test builds the same
   parameters and sequence with the C API and requires
     |p - ref| <= 1e-5 for every id, and p > 0 exactly where ref > 0.
   One PASS/FAIL line per group of cases (the middle part of the case
   name, e.g. vllm_topk); failing cases are printed with their first
   mismatching ids. Run from the repository root. */
#include "mysample.h"
#include "testlib.h"

#include <stdlib.h>
#include <errno.h>

#define G_TOL 1e-5
#define G_MAX_PRINTED_CASES 8
#define G_MAX_PRINTED_IDS 6

typedef struct g_case {
  char name[128];
  char group[128];
  int profile;            /* MS_PROFILE_VLLM or MS_PROFILE_HF */
  int32_t vocab;
  float temperature, top_p, min_p;
  float presence, frequency, repetition;
  int32_t top_k, min_tokens, eos;
  int32_t *stop; int32_t n_stop;
  int32_t *prompt; int32_t n_prompt;
  int32_t *output; int32_t n_output;
  ms_bias *bias; int32_t n_bias;
  int32_t *allowed; int32_t n_allowed;   /* n_allowed = -1: no list */
  int32_t *banned; int32_t n_banned;
  float *logits; int32_t n_logits;
  float *probs; int32_t n_probs;
  /* catalogue keys (golden_catalogue_hf.txt) */
  float typical_p, epsilon, eta;
  int32_t min_keep, ngram, exp_start;
  float exp_factor;
  int32_t *bad_ids; int32_t *bad_lens; int32_t n_bad;
} g_case;

typedef struct g_file {
  g_case *cases;
  int n_cases;
  int cap;
  int32_t max_vocab;
  char error[256];
} g_file;

static char *g_read_all(const char *path) {
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

/* Token cursor over one line (tokens separated by spaces/tabs). */
typedef struct g_cur { char *p; } g_cur;

static char *g_next(g_cur *c) {
  char *s = c->p;
  while (*s == ' ' || *s == '\t' || *s == '\r') s++;
  if (*s == '\0') { c->p = s; return NULL; }
  c->p = s;
  while (*c->p && *c->p != ' ' && *c->p != '\t' && *c->p != '\r') c->p++;
  if (*c->p) { *c->p = '\0'; c->p++; }
  return s;
}

static int g_int(g_cur *c, long *out) {
  char *t = g_next(c), *end;
  if (!t) return 0;
  errno = 0;
  *out = strtol(t, &end, 10);
  return errno == 0 && *end == '\0';
}

static int g_float(g_cur *c, float *out) {
  char *t = g_next(c), *end;
  if (!t) return 0;
  *out = strtof(t, &end);   /* accepts "inf" / "-inf"; exact for shortest float32 reprs */
  return *end == '\0';
}

/* "n a b ..." -> malloc'd array; n = -1 allowed when allow_none. */
static int g_ids(g_cur *c, int32_t **arr, int32_t *n, int allow_none) {
  long cnt, v;
  int32_t i;
  if (!g_int(c, &cnt)) return 0;
  if (cnt < 0) {
    if (!allow_none || cnt != -1) return 0;
    *arr = NULL; *n = -1;
    return 1;
  }
  *arr = (int32_t *)malloc(sizeof(int32_t) * (size_t)(cnt > 0 ? cnt : 1));
  if (!*arr) return 0;
  *n = (int32_t)cnt;
  for (i = 0; i < *n; i++) {
    if (!g_int(c, &v)) return 0;
    (*arr)[i] = (int32_t)v;
  }
  return 1;
}

static int g_floats(g_cur *c, float **arr, int32_t *n, int32_t vocab) {
  int32_t i;
  *arr = (float *)malloc(sizeof(float) * (size_t)(vocab > 0 ? vocab : 1));
  if (!*arr) return 0;
  for (i = 0; i < vocab; i++)
    if (!g_float(c, &(*arr)[i])) return 0;
  *n = vocab;
  return g_next(c) == NULL;   /* exactly vocab values */
}

static void g_free_case(g_case *k) {
  free(k->stop); free(k->prompt); free(k->output); free(k->bias);
  free(k->allowed); free(k->banned); free(k->logits); free(k->probs); free(k->bad_ids); free(k->bad_lens);
}

static void g_free_file(g_file *gf) {
  int i;
  for (i = 0; i < gf->n_cases; i++) g_free_case(&gf->cases[i]);
  free(gf->cases);
  memset(gf, 0, sizeof(*gf));
}

/* Group = case name without its profile prefix and numeric suffix:
   "vllm_topk_07" -> "vllm_topk". */
static void g_set_group(g_case *k) {
  char *u;
  size_t n = strlen(k->name);
  memcpy(k->group, k->name, n + 1);
  u = strrchr(k->group, '_');
  if (u && u != k->group) *u = '\0';
}

static int g_parse(char *text, g_file *gf) {
  char *line = text;
  int lineno = 0;
  g_case *k = NULL;
  memset(gf, 0, sizeof(*gf));
  while (line && *line) {
    char *nl = strchr(line, '\n');
    char *key;
    g_cur c;
    int ok = 1;
    if (nl) *nl = '\0';
    lineno++;
    c.p = line;
    key = g_next(&c);
    if (!key || key[0] == '#') { line = nl ? nl + 1 : NULL; continue; }
    if (strcmp(key, "case") == 0) {
      char *nm = g_next(&c);
      if (k || !nm || strlen(nm) >= sizeof(k->name)) ok = 0;
      else {
        if (gf->n_cases == gf->cap) {
          int ncap = gf->cap ? gf->cap * 2 : 64;
          g_case *nc = (g_case *)realloc(gf->cases, sizeof(g_case) * (size_t)ncap);
          if (!nc) return 0;
          gf->cases = nc; gf->cap = ncap;
        }
        k = &gf->cases[gf->n_cases++];
        memset(k, 0, sizeof(*k));
        k->n_allowed = -1;
        k->eos = -1;
        k->typical_p = 1.0f; k->min_keep = 1; k->exp_start = -1;
        k->repetition = 1.0f;
        k->top_p = 1.0f;
        k->temperature = 1.0f;
        strcpy(k->name, nm);
        g_set_group(k);
      }
    } else if (!k) {
      ok = 0;
    } else if (strcmp(key, "end") == 0) {
      if (k->n_logits != k->vocab || k->n_probs != k->vocab || k->vocab < 1) ok = 0;
      if (k->vocab > gf->max_vocab) gf->max_vocab = k->vocab;
      k = NULL;
    } else if (strcmp(key, "profile") == 0) {
      char *v = g_next(&c);
      if (v && strcmp(v, "vllm") == 0) k->profile = MS_PROFILE_VLLM;
      else if (v && strcmp(v, "hf") == 0) k->profile = MS_PROFILE_HF;
      else ok = 0;
    } else if (strcmp(key, "vocab") == 0) {
      long v; ok = g_int(&c, &v) && v > 0 && v < 100000000L; k->vocab = (int32_t)v;
    } else if (strcmp(key, "temperature") == 0) { ok = g_float(&c, &k->temperature);
    } else if (strcmp(key, "top_k") == 0) {
      long v; ok = g_int(&c, &v); k->top_k = (int32_t)v;
    } else if (strcmp(key, "top_p") == 0) { ok = g_float(&c, &k->top_p);
    } else if (strcmp(key, "min_p") == 0) { ok = g_float(&c, &k->min_p);
    } else if (strcmp(key, "presence_penalty") == 0) { ok = g_float(&c, &k->presence);
    } else if (strcmp(key, "frequency_penalty") == 0) { ok = g_float(&c, &k->frequency);
    } else if (strcmp(key, "repetition_penalty") == 0) { ok = g_float(&c, &k->repetition);
    } else if (strcmp(key, "min_tokens") == 0) {
      long v; ok = g_int(&c, &v); k->min_tokens = (int32_t)v;
    } else if (strcmp(key, "eos_token_id") == 0) {
      long v; ok = g_int(&c, &v); k->eos = (int32_t)v;
    } else if (strcmp(key, "stop_token_ids") == 0) { ok = g_ids(&c, &k->stop, &k->n_stop, 0);
    } else if (strcmp(key, "prompt") == 0) { ok = g_ids(&c, &k->prompt, &k->n_prompt, 0);
    } else if (strcmp(key, "output") == 0) { ok = g_ids(&c, &k->output, &k->n_output, 0);
    } else if (strcmp(key, "allowed_ids") == 0) { ok = g_ids(&c, &k->allowed, &k->n_allowed, 1);
    } else if (strcmp(key, "banned_ids") == 0) { ok = g_ids(&c, &k->banned, &k->n_banned, 0);
    } else if (strcmp(key, "logit_bias") == 0) {
      long n, id; int32_t i;
      ok = g_int(&c, &n) && n >= 0;
      if (ok) {
        k->bias = (ms_bias *)malloc(sizeof(ms_bias) * (size_t)(n > 0 ? n : 1));
        k->n_bias = (int32_t)n;
        ok = k->bias != NULL;
        for (i = 0; ok && i < k->n_bias; i++) {
          ok = g_int(&c, &id) && g_float(&c, &k->bias[i].bias);
          k->bias[i].token = (int32_t)id;
        }
      }
    } else if (strcmp(key, "logits") == 0) { ok = k->vocab > 0 && g_floats(&c, &k->logits, &k->n_logits, k->vocab);
    } else if (strcmp(key, "probs") == 0) { ok = k->vocab > 0 && g_floats(&c, &k->probs, &k->n_probs, k->vocab);
    } else if (strcmp(key, "typical_p") == 0) { ok = g_float(&c, &k->typical_p);
    } else if (strcmp(key, "epsilon_cutoff") == 0) { ok = g_float(&c, &k->epsilon);
    } else if (strcmp(key, "eta_cutoff") == 0) { ok = g_float(&c, &k->eta);
    } else if (strcmp(key, "min_tokens_to_keep") == 0) { long v; ok = g_int(&c, &v); k->min_keep = (int32_t)v;
    } else if (strcmp(key, "no_repeat_ngram_size") == 0) { long v; ok = g_int(&c, &v); k->ngram = (int32_t)v;
    } else if (strcmp(key, "exp_decay") == 0) { long v; ok = g_int(&c, &v) && g_float(&c, &k->exp_factor); k->exp_start = (int32_t)v;
    } else if (strcmp(key, "bad_words") == 0) {
      /* bad_words n w1 ... wn, each word its ids joined by commas */
      long n, w;
      size_t cap = strlen(c.p) / 2 + 2, total = 0;
      ok = g_int(&c, &n) && n >= 0 && n < 100000;
      k->bad_ids = (int32_t *)malloc(sizeof(int32_t) * cap);
      k->bad_lens = (int32_t *)malloc(sizeof(int32_t) * ((size_t)(n > 0 ? n : 0) + 1));
      k->n_bad = 0;
      for (w = 0; ok && w < n; w++) {
        char *t2 = g_next(&c), *end;
        int32_t len = 0;
        if (!t2) { ok = 0; break; }
        while (*t2) {
          long v = strtol(t2, &end, 10);
          if (end == t2 || total >= cap) { ok = 0; break; }
          k->bad_ids[total++] = (int32_t)v; len++;
          t2 = *end == ',' ? end + 1 : end;
        }
        k->bad_lens[k->n_bad++] = len;
      }
    } else {
      ok = 0;
    }
    if (!ok) {
      sprintf(gf->error, "parse error at line %d (key '%.40s')", lineno, key);
      return 0;
    }
    line = nl ? nl + 1 : NULL;
  }
  if (k) { sprintf(gf->error, "case '%.60s' has no 'end'", k->name); return 0; }
  return 1;
}

/* Runs one case; returns 1 when it matches. Prints the mismatch when
   `verbose`. */
static int g_check_case(ms_sampler *s, const g_case *k, float *probs, int verbose) {
  ms_params p = ms_params_default();
  ms_seq *q = NULL;
  ms_result r;
  int32_t i, cap, bad = 0, printed = 0;
  double worst = 0.0;

  p.profile = (ms_profile)k->profile;
  p.temperature = k->temperature;
  p.top_k = k->top_k;
  p.top_p = k->top_p;
  p.min_p = k->min_p;
  p.presence_penalty = k->presence;
  p.frequency_penalty = k->frequency;
  p.repetition_penalty = k->repetition;
  p.min_tokens = k->min_tokens;
  p.eos_token_id = k->eos;
  p.stop_token_ids = k->n_stop > 0 ? k->stop : NULL;
  p.n_stop_token_ids = k->n_stop;
  p.logit_bias = k->n_bias > 0 ? k->bias : NULL;
  p.n_logit_bias = k->n_bias;
  p.allowed_ids = k->n_allowed >= 0 ? k->allowed : NULL;
  p.n_allowed_ids = k->n_allowed >= 0 ? k->n_allowed : 0;
  p.banned_ids = k->n_banned > 0 ? k->banned : NULL;
  p.n_banned_ids = k->n_banned;
  p.has_seed = 1;
  p.seed = 1;
  p.no_repeat_ngram_size = k->ngram;
  p.epsilon_cutoff = k->epsilon;
  p.typical_p = k->typical_p;
  p.eta_cutoff = k->eta;
  p.min_tokens_to_keep = k->min_keep;
  p.bad_words = k->n_bad > 0 ? k->bad_ids : NULL;
  p.bad_words_lens = k->n_bad > 0 ? k->bad_lens : NULL;
  p.n_bad_words = k->n_bad;
  p.exp_decay_start = k->exp_start;
  p.exp_decay_factor = k->exp_factor;

  cap = k->n_prompt + k->n_output + 1;
  r = ms_seq_create(&q, cap);
  if (r != MS_OK) {
    if (verbose) printf("  %s: ms_seq_create: %s\n", k->name, ms_result_str(r));
    return 0;
  }
  r = ms_seq_reset(q, k->prompt, k->n_prompt, k->vocab, &p, 0);
  for (i = 0; r == MS_OK && i < k->n_output; i++) r = ms_seq_accept(q, k->output[i]);
  if (r != MS_OK) {
    if (verbose) printf("  %s: building the sequence: %s\n", k->name, ms_result_str(r));
    ms_seq_destroy(q);
    return 0;
  }
  for (i = 0; i < k->vocab; i++) probs[i] = -1.0f;
  r = ms_probs(s, k->logits, k->vocab, &p, q, probs);
  ms_seq_destroy(q);
  if (r != MS_OK) {
    if (verbose) printf("  %s: ms_probs returned %s\n", k->name, ms_result_str(r));
    return 0;
  }
  for (i = 0; i < k->vocab; i++) {
    double a = probs[i], b = k->probs[i], d = fabs(a - b);
    int support_differs = (a > 0.0) != (b > 0.0);
    if (!(d <= G_TOL) || support_differs) {
      bad++;
      if (d > worst || d != d) worst = d;
      if (verbose && printed < G_MAX_PRINTED_IDS) {
        if (printed == 0)
          printf("  %s (vocab %d, T %g, top_k %d, top_p %g, min_p %g, rep %g, freq %g, pres %g):\n",
                 k->name, (int)k->vocab, (double)k->temperature, (int)k->top_k,
                 (double)k->top_p, (double)k->min_p, (double)k->repetition,
                 (double)k->frequency, (double)k->presence);
        printf("    id %d: got %.9g, want %.9g%s\n", (int)i, a, b,
               support_differs ? " (support differs)" : "");
        printed++;
      }
    }
  }
  if (bad && verbose)
    printf("    %d of %d ids differ, worst |diff| %.3g\n", (int)bad, (int)k->vocab, worst);
  return bad == 0;
}

/* Cases that use samplers mysample does not have would be counted as
   skipped; every sampler in the golden data is implemented now. */
static int g_unsupported(const g_case *k) {
  (void)k;
  return 0;
}

/* State handed to the per-group test function (testlib's RUN takes no
   arguments). */
static const g_file *g_cur_file;
static ms_sampler *g_cur_sampler;
static float *g_cur_probs;
static const char *g_cur_group;

static void g_test_group(void) {
  int i, failed = 0, total = 0, skipped = 0;
  for (i = 0; i < g_cur_file->n_cases; i++) {
    const g_case *k = &g_cur_file->cases[i];
    if (strcmp(k->group, g_cur_group) != 0) continue;
    if (g_unsupported(k)) { skipped++; continue; }
    total++;
    if (!g_check_case(g_cur_sampler, k, g_cur_probs, failed < G_MAX_PRINTED_CASES)) failed++;
  }
  if (total == 0 && skipped > 0) SKIP("every case needs a sampler not implemented yet (typical)");
  CHECK(total > 0);
  if (skipped) printf("  %d cases of %s skipped (samplers not implemented yet)\n", skipped, g_cur_group);
  if (failed) printf("  %d of %d cases of %s differ\n", failed, total, g_cur_group);
  CHECK(failed == 0);
}

static const char *g_file_path;
static g_file g_loaded;
static int g_loaded_ok;

static void g_test_load(void) {
  char *text = g_read_all(g_file_path);
  g_loaded_ok = 0;
  if (!text) {
    printf("  cannot read %s (run the tests from the repository root)\n", g_file_path);
    CHECK(text != NULL);
    return;
  }
  if (!g_parse(text, &g_loaded)) {
    printf("  %s: %s\n", g_file_path, g_loaded.error);
    CHECK(0);
  } else {
    CHECK(g_loaded.n_cases > 0);
    g_loaded_ok = g_loaded.n_cases > 0;
  }
  free(text);
}

static void g_run_file(const char *path, const char *label) {
  char name[200];
  ms_sampler_desc d;
  ms_sampler *s = NULL;
  ms_result r;
  int i, j;
  g_file_path = path;
  sprintf(name, "golden_%s_load", label);
  t_run(name, g_test_load);
  if (!g_loaded_ok) { g_free_file(&g_loaded); return; }

  memset(&d, 0, sizeof(d));
  d.max_vocab = g_loaded.max_vocab;
  r = ms_sampler_create(&s, &d);
  if (r != MS_OK) {
    printf("  ms_sampler_create(max_vocab %d): %s\n", (int)d.max_vocab, ms_result_str(r));
    t_total_fail++;
    printf("FAIL golden_%s_sampler\n", label);
    g_free_file(&g_loaded);
    return;
  }
  g_cur_probs = (float *)malloc(sizeof(float) * (size_t)g_loaded.max_vocab);
  g_cur_sampler = s;
  g_cur_file = &g_loaded;
  for (i = 0; g_cur_probs && i < g_loaded.n_cases; i++) {
    int seen = 0;
    for (j = 0; j < i; j++)
      if (strcmp(g_loaded.cases[j].group, g_loaded.cases[i].group) == 0) { seen = 1; break; }
    if (seen) continue;
    g_cur_group = g_loaded.cases[i].group;
    sprintf(name, "golden_%.150s", g_cur_group);
    t_run(name, g_test_group);
  }
  free(g_cur_probs);
  g_cur_probs = NULL;
  ms_sampler_destroy(s);
  g_free_file(&g_loaded);
}

int main(void) {
  g_run_file("tests/data/golden_vllm.txt", "vllm");
  g_run_file("tests/data/golden_hf.txt", "hf");
  g_run_file("tests/data/golden_catalogue_hf.txt", "catalogue_hf");
  return t_done();
}
