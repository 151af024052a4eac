/* mysample bench: the standard CPU benchmark matrix of DESIGN.md. Every
   figure comes with the floors (one max pass; max + sum of exp, with the
   widest SIMD this CPU has) and a naive sort-based implementation, all
   measured in the same run, so ratios survive noisy machines. */
#define _POSIX_C_SOURCE 200112L
#include "cli.h"
#include "naive.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <errno.h>

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) { qsort(v, (size_t)n, sizeof *v, cmp_double); return v[n / 2]; }

static uint64_t bench_rng = 88172645463325252ull;
static double bench_u(void) { bench_rng ^= bench_rng << 13; bench_rng ^= bench_rng >> 7; bench_rng ^= bench_rng << 17; return ((double)(bench_rng >> 11) + 0.5) / 9007199254740992.0; }
static float bench_n(void) { double u = bench_u(), v = bench_u(); return (float)(sqrt(-2 * log(u)) * cos(6.283185307179586 * v)); }

/* The batch floor: one max pass over each of the 64 rows, on one thread
   and on two, so the batch speedup can be read against what the machine's
   memory system allows for the same bytes. */
typedef struct floor_job { const ms_sampler *s; const float *x; int32_t V, r0, r1; double sink; } floor_job;
static void *floor_rows(void *arg) {
  floor_job *j = (floor_job *)arg;
  int32_t r;
  for (r = j->r0; r < j->r1; r++) j->sink += ms_floor_pass(j->s, j->x + (size_t)r * j->V, j->V, 0);
  return NULL;
}
static double floor_batch_us(const ms_sampler *s, const float *x, int32_t V, int threads) {
  floor_job a = {s, x, V, 0, 64, 0}, b = {s, x, V, 32, 64, 0};
  pthread_t th;
  double t0 = now_us();
  if (threads < 2) { floor_rows(&a); return now_us() - t0; }
  a.r1 = 32;
  if (pthread_create(&th, NULL, floor_rows, &b) != 0) { floor_rows(&b); }
  else { floor_rows(&a); pthread_join(th, NULL); }
  return now_us() - t0;
}

typedef struct bench_cfg { const char *name; float T; int k; float p, minp; int penalties, logprobs; } bench_cfg;
static const bench_cfg CONFIGS[] = {
  { "greedy",            0.0f, 0, 1.0f, 0.0f, 0, -1 },
  { "temperature_0.8",   0.8f, 0, 1.0f, 0.0f, 0, -1 },
  { "top_k_40",          1.0f, 40, 1.0f, 0.0f, 0, -1 },
  { "top_p_0.9",         1.0f, 0, 0.9f, 0.0f, 0, -1 },
  { "min_p_0.05",        1.0f, 0, 1.0f, 0.05f, 0, -1 },
  { "combo",             0.7f, 50, 0.95f, 0.05f, 0, -1 },
  { "combo_penalties",   0.7f, 50, 0.95f, 0.05f, 1, -1 },
  { "combo_logprobs20",  0.7f, 50, 0.95f, 0.05f, 0, 20 },
};
#define N_CONFIGS ((int)(sizeof CONFIGS / sizeof CONFIGS[0]))

/* The sampler catalogue (issue 6): each new sampler switched on alone on
   top of a base configuration, timed interleaved with that base, so the
   extra cost of the sampler reads in units of floor_softmax (target: at
   most 1x). Bases: llama.cpp's default chain (ms_params_profile_default:
   T 0.8 last, top-k 40, top-p 0.95, min-p 0.05), the same with top_k 0
   (the filters then see the full row), and HF's defaults (top_k 50) with
   and without top-k, for HF's typical warper. Every catalogue row runs over
   the 1024-token history (512 prompt + 512 output ids). */
typedef struct cat_base { const char *name; ms_profile profile; int top_k; /* -1 = the profile's default */ } cat_base;
static const cat_base CAT_BASES[] = {
  { "llamacpp",      MS_PROFILE_LLAMACPP, -1 },
  { "llamacpp_full", MS_PROFILE_LLAMACPP, 0 },
  { "hf",            MS_PROFILE_HF, -1 },
  { "hf_full",       MS_PROFILE_HF, 0 },
};
#define N_CAT_BASES ((int)(sizeof CAT_BASES / sizeof CAT_BASES[0]))
static const char *const CAT_SAMPLERS[] = {
  "typical_0.9", "top_n_sigma_1", "xtc_1_0.1", "dynatemp_0.5", "mirostat_1", "mirostat_2", "dry_0.8", "penalties_64_1.1",
  "epsilon_3e-4", "eta_3e-4",
};
#define N_CAT_SAMPLERS ((int)(sizeof CAT_SAMPLERS / sizeof CAT_SAMPLERS[0]))

/* Switches sampler `which` (an index of CAT_SAMPLERS) on in p; 0 when the
   base's profile does not have it (HF: typical, epsilon and eta only;
   epsilon and eta are HF's alone). */
static int cat_apply(ms_params *p, int which) {
  int hf_only = which == 8 || which == 9;
  if (p->profile == MS_PROFILE_HF ? which != 0 && !hf_only : hf_only) return 0;
  switch (which) {
    case 0: p->typical_p = 0.9f; break;
    case 1: p->top_n_sigma = 1.0f; break;
    case 2: p->xtc_probability = 1.0f; p->xtc_threshold = 0.1f; break;
    case 3: p->dynatemp_range = 0.5f; break;
    case 4: p->mirostat = 1; break;
    case 5: p->mirostat = 2; break;
    case 6: p->dry_multiplier = 0.8f; break;
    case 7: p->penalty_last_n = 64; p->repetition_penalty = 1.1f; break;
    case 8: p->epsilon_cutoff = 3e-4f; break;
    case 9: p->eta_cutoff = 3e-4f; break;
    default: return 0;
  }
  return 1;
}

/* Times `var` (and `base` on alternate calls when non-NULL, so both see
   the same machine state) over reps calls each; medians into *us_var and
   *us_base. Call i runs on row i % CAT_ROWS of x (rows of the same sigma,
   V apart), each read once untimed first so it is in cache as a single
   repeated row would be: a sampler whose cost depends on the row (typical's
   estimated bracket varies several-fold between rows of one sigma) is
   timed over many rows rather than on one row's luck, and branch
   predictors cannot learn a row that repeats. With base, the softmax
   floor is timed between the two calls on the same (warm) row, its median
   into *us_floor: the ratio of the extra cost to the floor then compares
   times taken in the same machine state (a floor timed once before, on a
   machine whose speed drifts by a third over seconds, moved it by 0.1).
   Returns the first failing result. t: room for 3 reps. */
#define CAT_ROWS 16
static ms_result cat_time(ms_sampler *s, const float *x, int32_t V, const ms_params *base, const ms_params *var,
                          ms_seq *seq, int reps, double *t, double *us_base, double *us_var, double *us_floor, double *sink) {
  double *t2 = t + reps, *t3 = t + 2 * reps;
  ms_output out;
  ms_result rc;
  int i;
  memset(&out, 0, sizeof out);
  if (base && (rc = ms_sample(s, x, V, base, seq, &out)) != MS_OK) return rc; /* warm-up */
  if ((rc = ms_sample(s, x, V, var, seq, &out)) != MS_OK) return rc;
  for (i = 0; i < reps; i++) {
    const float *row = x + (size_t)(i % CAT_ROWS) * (size_t)V;
    double t0;
    ms_seq_set_position(seq, (uint64_t)i);
    if (base) {
      *sink += ms_floor_pass(s, row, V, 0);
      t0 = now_us();
      if ((rc = ms_sample(s, row, V, base, seq, &out)) != MS_OK) return rc;
      t[i] = now_us() - t0;
      *sink += out.token;
    }
    if (base) {
      t0 = now_us();
      *sink += ms_floor_pass(s, row, V, 1);
      t3[i] = now_us() - t0;
    } else *sink += ms_floor_pass(s, row, V, 0);
    t0 = now_us();
    if ((rc = ms_sample(s, row, V, var, seq, &out)) != MS_OK) return rc;
    t2[i] = now_us() - t0;
    *sink += out.token;
  }
  if (base) { *us_base = median(t, reps); *us_floor = median(t3, reps); }
  *us_var = median(t2, reps);
  return MS_OK;
}

static void usage(FILE *f) {
  fprintf(f,
    "usage: mysample bench [--device cpu|cuda] [--vocab V] [--sigma S] [--config NAME] [--threads T] [--reps N] [--no-naive] [--json]\n"
    "  --device cuda: the GPU figures instead, with their own flags (mysample bench --device cuda --help).\n"
    "  Times the standard matrix (DESIGN.md) on N(0, sigma^2) logits, single thread,\n"
    "  plus 64-row batches on T threads (default 2) for combo, top_p_0.9 and\n"
    "  temperature_0.8 (--config batch64 for those alone). Defaults: every vocab of\n"
    "  32000 128256 151936 262144, sigma 1 and 3, 101 repetitions (median).\n"
    "  Keys: config vocab sigma threads us_per_row floor_max_us floor_softmax_us\n"
    "  naive_us x_floor_max x_floor_softmax x_naive simd. The penalty history is\n"
    "  1024 tokens drawn from a Zipf(1) law over the vocabulary (text-like repeats).\n"
    "  Catalogue rows (\"group\": \"catalogue\"; on V = 128256, or on the --vocab\n"
    "  given): bases llamacpp (llama.cpp's default chain), llamacpp_full (top_k 0),\n"
    "  hf, hf_full; each sampler alone on top of a base (typical_0.9, top_n_sigma_1,\n"
    "  xtc_1_0.1, dynatemp_0.5, mirostat_1, mirostat_2, dry_0.8, penalties_64_1.1;\n"
    "  hf: typical_0.9, epsilon_3e-4, eta_3e-4), timed interleaved with its base over the 1024-token\n"
    "  history, each call on the next of 16 rows of the sigma (read once untimed\n"
    "  first, so it is in cache). Extra keys: base sampler profile base_us extra_x_floor_softmax\n"
    "  (the sampler's cost over its base in floor_softmax units; target <= 1; on\n"
    "  these rows floor_softmax_us is timed between the base and the sampler, on\n"
    "  the same rows, so that the ratio survives a machine whose speed drifts),\n"
    "  floor_softmax_alone_us extra_x_floor_softmax_alone (the same against the\n"
    "  floor timed alone, before, on one repeated row).\n"
    "  --config catalogue runs them alone; --config BASE one base and its samplers.\n");
}

/* A whole decimal integer in [lo, hi] (atoi took "5x" as 5 and "abc" as 0). */
static int bench_int(const char *s, long lo, long hi, int *out) {
  char *end; long v;
  errno = 0; v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return 0;
  *out = (int)v; return 1;
}

/* Whether --config names a row this command prints: a config, batch64 or
   one of its rows, catalogue, a catalogue base or BASE+SAMPLER where the
   base's profile has the sampler (an unknown name printed nothing and
   exited 0). */
static int bench_config_known(const char *name) {
  int ci, w;
  char buf[96];
  if (!strcmp(name, "batch64") || !strcmp(name, "catalogue")) return 1;
  for (ci = 0; ci < N_CONFIGS; ci++) {
    if (!strcmp(name, CONFIGS[ci].name)) return 1;
    snprintf(buf, sizeof buf, "batch64_%s", CONFIGS[ci].name);
    if (!strcmp(name, buf) && (!strcmp(CONFIGS[ci].name, "combo") || !strcmp(CONFIGS[ci].name, "top_p_0.9") ||
                               !strcmp(CONFIGS[ci].name, "temperature_0.8"))) return 1;
  }
  for (ci = 0; ci < N_CAT_BASES; ci++) {
    if (!strcmp(name, CAT_BASES[ci].name)) return 1;
    for (w = 0; w < N_CAT_SAMPLERS; w++) {
      ms_params p = ms_params_profile_default(CAT_BASES[ci].profile);
      snprintf(buf, sizeof buf, "%s+%s", CAT_BASES[ci].name, CAT_SAMPLERS[w]);
      if (!strcmp(name, buf) && cat_apply(&p, w)) return 1;
    }
  }
  return 0;
}

int ms_cli_bench(int argc, char **argv) {
  int32_t vocabs[4] = {32000, 128256, 151936, 262144}, n_vocabs = 4, vi;
  float sigmas[2] = {1.0f, 3.0f};
  int n_sigmas = 2, si, ci, i, reps = 101, json = 0, threads = 2, naive_on = 1;
  const char *only = NULL;
  ms_sampler *s = NULL, *s2 = NULL;
  ms_sampler_desc d;
  /* --device cuda: the GPU figures, with their own flags (cli_bench_cuda.c) */
  for (i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], "--device")) {
      if (!strcmp(argv[i + 1], "cuda")) return ms_cli_bench_cuda(argc, argv);
      if (strcmp(argv[i + 1], "cpu")) { fprintf(stderr, "mysample bench: bad --device '%s' (cpu or cuda)\n", argv[i + 1]); return 2; }
    }
  for (i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int n;
    if (!strcmp(a, "--no-naive")) naive_on = 0;
    else if (!strcmp(a, "--json")) json = 1;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
    else if (strcmp(a, "--vocab") && strcmp(a, "--sigma") && strcmp(a, "--config") && strcmp(a, "--threads") &&
             strcmp(a, "--reps") && strcmp(a, "--device")) {
      fprintf(stderr, "mysample bench: unknown flag '%s'\n", a); usage(stderr); return 2;
    }
    else if (!v) { fprintf(stderr, "mysample bench: %s needs a value\n", a); return 2; }
    else {
      i++;
      /* V * 64 floats of logits are indexed with an int: V <= 2^24 */
      if (!strcmp(a, "--vocab")) { if (!bench_int(v, 2, 1L << 24, &n)) goto bad; vocabs[0] = n; n_vocabs = 1; }
      else if (!strcmp(a, "--threads")) { if (!bench_int(v, 1, 64, &threads)) goto bad; }
      else if (!strcmp(a, "--reps")) { if (!bench_int(v, 3, 100000, &reps)) goto bad; }
      else if (!strcmp(a, "--sigma")) {
        char *end; double x = strtod(v, &end);
        if (end == v || *end || !(x > 0.0) || !(x <= 1e30)) goto bad;
        sigmas[0] = (float)x; n_sigmas = 1;
      }
      else if (!strcmp(a, "--config")) { if (!bench_config_known(v)) goto bad; only = v; }
      /* --device cpu: the loop above took cuda */
      continue;
    bad:
      fprintf(stderr, "mysample bench: bad %s '%s' (see --help)\n", a, v);
      return 2;
    }
  }
  for (vi = 0; vi < n_vocabs; vi++) {
    int32_t V = vocabs[vi];
    float *x = (float *)malloc(sizeof(float) * (size_t)V * 64);
    float *probs = (float *)malloc(sizeof(float) * (size_t)V);
    double *t = (double *)malloc(sizeof(double) * (size_t)(3 * reps + 64));
    ms_seq *seq = NULL;
    int32_t hist[1024];
    if (!x || !probs || !t) { fprintf(stderr, "mysample bench: out of memory\n"); return 1; }
    memset(&d, 0, sizeof d); d.max_vocab = V; d.n_workers = 1; d.max_history = 2048;
    if (ms_sampler_create(&s, &d) != MS_OK) { fprintf(stderr, "mysample bench: sampler init failed\n"); return 1; }
    d.n_workers = threads; d.use_builtin_pool = 1;
    if (ms_sampler_create(&s2, &d) != MS_OK) { fprintf(stderr, "mysample bench: pool init failed\n"); return 1; }
    ms_seq_create(&seq, 2048);
    {
      /* a 1024-token history with text-like repeats: ranks drawn from a
         Zipf(1) law over the vocabulary, mapped to scattered ids */
      double hn = 0.0;
      int32_t r;
      for (r = 1; r <= V; r++) hn += 1.0 / r;
      for (i = 0; i < 1024; i++) {
        double u = bench_u() * hn, c = 0.0;
        for (r = 1; r < V; r++) { c += 1.0 / r; if (c >= u) break; }
        hist[i] = (int32_t)(((uint64_t)r * 2654435761u) % (uint64_t)V);
      }
    }
    for (si = 0; si < n_sigmas; si++) {
      double fmax, fsm, sink = 0;
      for (i = 0; i < V * 64; i++) x[i] = bench_n() * sigmas[si];
      /* floors */
      for (i = 0; i < reps; i++) { double t0 = now_us(); sink += ms_floor_pass(s, x, V, 0); t[i] = now_us() - t0; }
      fmax = median(t, reps);
      for (i = 0; i < reps; i++) { double t0 = now_us(); sink += ms_floor_pass(s, x, V, 1); t[i] = now_us() - t0; }
      fsm = median(t, reps);
      for (ci = 0; ci < N_CONFIGS; ci++) {
        const bench_cfg *c = &CONFIGS[ci];
        ms_params p = ms_params_default();
        ms_output out;
        ms_logprob top[20];
        double us, naive_us = 0;
        if (only && strcmp(only, c->name)) continue;
        p.temperature = c->T; p.top_k = c->k; p.top_p = c->p; p.min_p = c->minp; p.logprobs = c->logprobs;
        p.seed = 1; p.has_seed = 1;
        if (c->penalties) { p.repetition_penalty = 1.1f; p.frequency_penalty = 0.5f; p.presence_penalty = 0.5f; }
        ms_seq_reset(seq, hist, c->penalties ? 512 : 0, V, &p, 0);
        if (c->penalties) for (i = 512; i < 1024; i++) ms_seq_accept(seq, hist[i]);
        memset(&out, 0, sizeof out); out.top = top; out.top_capacity = 20;
        for (i = 0; i < reps; i++) {
          double t0;
          ms_seq_set_position(seq, (uint64_t)i);
          t0 = now_us();
          if (ms_sample(s, x, V, &p, seq, &out) != MS_OK) { fprintf(stderr, "mysample bench: sample failed\n"); return 1; }
          t[i] = now_us() - t0;
          sink += out.token;
        }
        us = median(t, reps);
        if (naive_on) {
          int nr = 5;
          for (i = 0; i < nr; i++) {
            double t0 = now_us();
            naive_probs(x, V, &p, ms_seq_tokens(seq), ms_seq_prompt_len(seq), ms_seq_tokens(seq) + ms_seq_prompt_len(seq), ms_seq_output_len(seq), probs);
            t[i] = now_us() - t0;
            sink += probs[0];
          }
          naive_us = median(t, nr);
        }
        if (json)
          printf("{\"config\": \"%s\", \"vocab\": %d, \"sigma\": %g, \"threads\": 1, \"us_per_row\": %.2f, \"floor_max_us\": %.2f, \"floor_softmax_us\": %.2f, \"naive_us\": %.1f, \"x_floor_max\": %.2f, \"x_floor_softmax\": %.2f, \"x_naive\": %.4f, \"simd\": \"%s\"}\n",
                 c->name, (int)V, (double)sigmas[si], us, fmax, fsm, naive_us, us / fmax, us / fsm, naive_us > 0 ? us / naive_us : 0.0, ms_sampler_simd(s));
        else
          printf("%-18s V=%-6d sigma=%g  %8.2f us/row  %5.2fx floor_max  %5.2fx floor_softmax  naive %9.1f us  [%s]\n",
                 c->name, (int)V, (double)sigmas[si], us, us / fmax, us / fsm, naive_us, ms_sampler_simd(s));
        fflush(stdout);
      }
      for (ci = 0; ci < N_CONFIGS; ci++) {
        /* 64 rows, 1 thread vs the pool, for the configs that bound the
           range: combo (one read of each row: memory-bound on a batch that
           lives in DRAM), top-p and temperature (compute-bound) */
        const bench_cfg *c = &CONFIGS[ci];
        const ms_params *pp[64];
        ms_output outs[64];
        ms_params p = ms_params_default();
        ms_batch b;
        double one, many, floor1, floor2;
        char name[64];
        int reps_b = reps / 4 > 5 ? reps / 4 : 5;
        if (strcmp(c->name, "combo") && strcmp(c->name, "top_p_0.9") && strcmp(c->name, "temperature_0.8")) continue;
        snprintf(name, sizeof name, "batch64_%s", c->name);
        if (only && strcmp(only, "batch64") && strcmp(only, name)) continue;
        p.temperature = c->T; p.top_k = c->k; p.top_p = c->p; p.min_p = c->minp; p.seed = 3; p.has_seed = 1;
        for (i = 0; i < 64; i++) pp[i] = &p;
        memset(&b, 0, sizeof b);
        b.n_rows = 64; b.vocab = V; b.logits = x; b.row_stride = (size_t)V; b.params = pp; b.out = outs;
        {
          /* interleaved, so both see the same cache and machine state */
          double *t2 = t + reps_b;
          ms_sample_batch(s, &b); ms_sample_batch(s2, &b); /* warm-up */
          for (i = 0; i < reps_b; i++) {
            double t0 = now_us(); ms_sample_batch(s, &b); t[i] = now_us() - t0;
            t0 = now_us(); ms_sample_batch(s2, &b); t2[i] = now_us() - t0;
          }
          one = median(t, reps_b);
          many = median(t2, reps_b);
          /* the memory floor of the same 64 rows, 1 and 2 threads */
          for (i = 0; i < reps_b; i++) { t[i] = floor_batch_us(s, x, V, 1); t2[i] = floor_batch_us(s, x, V, 2); }
          floor1 = median(t, reps_b);
          floor2 = median(t2, reps_b);
        }
        if (json)
          printf("{\"config\": \"%s\", \"vocab\": %d, \"sigma\": %g, \"threads\": %d, \"us_per_row\": %.2f, \"us_per_row_1thread\": %.2f, \"speedup\": %.2f, \"floor_batch_speedup\": %.2f, \"floor_max_us\": %.2f, \"floor_softmax_us\": %.2f, \"simd\": \"%s\"}\n",
                 name, (int)V, (double)sigmas[si], threads, many / 64, one / 64, one / many, floor1 / floor2, fmax, fsm, ms_sampler_simd(s));
        else
          printf("%-26s V=%-6d sigma=%g  %8.2f us/row on %d threads, %8.2f us/row on 1: %.2fx (a max pass over the same rows: %.2fx)\n",
                 name, (int)V, (double)sigmas[si], many / 64, threads, one / 64, one / many, floor1 / floor2);
        fflush(stdout);
      }
      for (ci = 0; ci < N_CAT_BASES && (V == 128256 || n_vocabs == 1); ci++) {
        const cat_base *cb = &CAT_BASES[ci];
        ms_params pb = ms_params_profile_default(cb->profile);
        int w, want_all = !only || !strcmp(only, "catalogue") || !strcmp(only, cb->name);
        double base_us = 0, us = 0, f_us = fsm;
        ms_result res;
        char name[96];
        if (cb->top_k >= 0) pb.top_k = cb->top_k;
        pb.seed = 1; pb.has_seed = 1;
        for (w = -1; w < N_CAT_SAMPLERS; w++) {
          ms_params pv = pb;
          if (w >= 0 && !cat_apply(&pv, w)) continue;
          if (w < 0) snprintf(name, sizeof name, "%s", cb->name);
          else snprintf(name, sizeof name, "%s+%s", cb->name, CAT_SAMPLERS[w]);
          if (!want_all && strcmp(only, name)) continue;
          ms_seq_reset(seq, hist, 512, V, &pv, 0);
          for (i = 512; i < 1024; i++) ms_seq_accept(seq, hist[i]);
          res = cat_time(s, x, V, w < 0 ? NULL : &pb, &pv, seq, reps, t, &base_us, &us, &f_us, &sink);
          if (w < 0) { base_us = us; f_us = fsm; }
          if (res != MS_OK) {
            if (json)
              printf("{\"group\": \"catalogue\", \"config\": \"%s\", \"base\": \"%s\", \"sampler\": \"%s\", \"profile\": \"%s\", \"vocab\": %d, \"sigma\": %g, \"threads\": 1, \"error\": \"%s\"}\n",
                     name, cb->name, w < 0 ? "none" : CAT_SAMPLERS[w], ms_profile_name(pv.profile), (int)V, (double)sigmas[si], ms_result_str(res));
            else
              printf("%-30s V=%-6d sigma=%g  failed: %s\n", name, (int)V, (double)sigmas[si], ms_result_str(res));
            fflush(stdout);
            continue;
          }
          if (json)
            printf("{\"group\": \"catalogue\", \"config\": \"%s\", \"base\": \"%s\", \"sampler\": \"%s\", \"profile\": \"%s\", \"vocab\": %d, \"sigma\": %g, \"threads\": 1, \"us_per_row\": %.2f, \"base_us\": %.2f, \"floor_max_us\": %.2f, \"floor_softmax_us\": %.2f, \"x_floor_max\": %.2f, \"x_floor_softmax\": %.2f, \"extra_x_floor_softmax\": %.3f, \"floor_softmax_alone_us\": %.2f, \"extra_x_floor_softmax_alone\": %.3f, \"simd\": \"%s\"}\n",
                   name, cb->name, w < 0 ? "none" : CAT_SAMPLERS[w], ms_profile_name(pv.profile), (int)V, (double)sigmas[si],
                   us, base_us, fmax, f_us, us / fmax, us / f_us, (us - base_us) / f_us, fsm, (us - base_us) / fsm, ms_sampler_simd(s));
          else if (w < 0)
            printf("%-30s V=%-6d sigma=%g  %8.2f us/row  %5.2fx floor_softmax\n", name, (int)V, (double)sigmas[si], us, us / fsm);
          else
            printf("%-30s V=%-6d sigma=%g  %8.2f us/row  %5.2fx floor_softmax  %+6.2fx floor_softmax over %s (%.2f us)\n",
                   name, (int)V, (double)sigmas[si], us, us / f_us, (us - base_us) / f_us, cb->name, base_us);
          fflush(stdout);
        }
      }
      if (sink == 12345.678) printf("#\n"); /* keep the work observable */
    }
    ms_seq_destroy(seq);
    ms_sampler_destroy(s); ms_sampler_destroy(s2);
    free(x); free(probs); free(t);
  }
  return 0;
}
