/* mysample_cuda.h: NVRTC compile checks (run wherever NVRTC loads), the
   loader without a GPU, the caches, the RNG formula of the kernels, and
   the GPU execution tests against the CPU path (skipped without a GPU). */
#define MYSAMPLE_IMPLEMENTATION
#define MYSAMPLE_CUDA_IMPLEMENTATION
#include "mysample_cuda.h"
#include "testlib.h"
#include <stdlib.h>

/* ---- helpers ---------------------------------------------------------------- */
static uint64_t t_rng = 0x9E3779B97F4A7C15ULL;
static double t_unif(void) {
  t_rng ^= t_rng << 13; t_rng ^= t_rng >> 7; t_rng ^= t_rng << 17;
  return (double)(t_rng >> 11) * (1.0 / 9007199254740992.0);
}
static float t_normal(float sigma) {
  double u1 = t_unif(), u2 = t_unif();
  if (u1 < 1e-300) u1 = 1e-300;
  return (float)(sigma * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}
static void t_fill(float *x, int32_t n, float sigma) { int32_t i; for (i = 0; i < n; i++) x[i] = t_normal(sigma); }

static int t_have_nvrtc(void) {
  char msg[512];
  return ms_cuda_load_nvrtc(NULL, msg, sizeof msg) == MS_OK;
}

/* ---- NVRTC: every kernel compiles for sm_80 and sm_90 ---------------------- */
static void t_compile_arch(int sm) {
  static char log[16384];
  ms_cuda_compile_opts o;
  ms_cuda_compile_info info;
  ms_result rc;
  int i;
  if (!t_have_nvrtc()) SKIP("NVRTC could not be loaded (no CUDA toolkit)");
  memset(&o, 0, sizeof o);
  o.no_disk_cache = 1;
  o.no_memory_cache = 1;
  rc = ms_cuda_compile(sm, &o, &info, log, sizeof log);
  CHECK_MSG(rc == MS_OK, "sm_%d: %s\n%s", sm, ms_result_str(rc), log);
  if (rc != MS_OK) return;
  printf("  sm_%d: %s, %s %lu bytes, cold compile %.3f s (NVRTC %d.%d)\n", sm, info.target,
         info.is_ptx ? "PTX" : "CUBIN", (unsigned long)info.binary_size, info.seconds, info.nvrtc_major, info.nvrtc_minor);
  CHECK(info.source == 0);
  CHECK(info.n_kernels == 5);
  for (i = 0; i < info.n_kernels; i++) CHECK_MSG(info.kernel_found[i], "kernel %s missing from the binary", info.kernel[i]);
}
static void test_nvrtc_compile_sm80(void) { t_compile_arch(80); }
static void test_nvrtc_compile_sm90(void) { t_compile_arch(90); }

/* An architecture NVRTC does not know: a clear MS_ERR_COMPILE, never a crash. */
static void test_nvrtc_unsupported_arch(void) {
  char log[1024];
  ms_cuda_compile_info info;
  ms_result rc;
  if (!t_have_nvrtc()) SKIP("NVRTC could not be loaded (no CUDA toolkit)");
  rc = ms_cuda_compile(30, NULL, &info, log, sizeof log);
  CHECK_EQ_INT(rc, MS_ERR_COMPILE);
  CHECK(strstr(log, "sm_30") != NULL);
  rc = ms_cuda_compile(5, NULL, &info, log, sizeof log);
  CHECK_EQ_INT(rc, MS_ERR_INVALID_PARAM);
}

/* The disk cache: a miss compiles and writes, the next cold process-level
   lookup reads the file; the in-memory cache answers after that. */
static void test_compile_caches(void) {
  static char log[16384];
  char dir[256], path[600];
  ms_cuda_compile_opts o;
  ms_cuda_compile_info a, b, c;
  FILE *f;
  if (!t_have_nvrtc()) SKIP("NVRTC could not be loaded (no CUDA toolkit)");
  snprintf(dir, sizeof dir, "build/tests/cuda-cache-%lu/sub", (unsigned long)(uintptr_t)&o % 100000ul);
  memset(&o, 0, sizeof o);
  o.cache_dir = dir;
  o.no_memory_cache = 1;
  CHECK_EQ_INT(ms_cuda_compile(86, &o, &a, log, sizeof log), MS_OK);
  CHECK_EQ_INT(ms_cuda_compile(86, &o, &b, log, sizeof log), MS_OK);
  o.no_memory_cache = 0;
  CHECK_EQ_INT(ms_cuda_compile(86, &o, &c, log, sizeof log), MS_OK);
  printf("  compile %.3f s, disk hit %.4f s, memory hit %.6f s (%s)\n", a.seconds, b.seconds, c.seconds, b.cache_file);
  CHECK_EQ_INT(a.source, 0);
  CHECK_EQ_INT(b.source, 2);
  CHECK_EQ_INT(c.source, 1);
  CHECK(a.binary_size == b.binary_size);
  CHECK(strstr(a.cache_file, dir) == a.cache_file);
  f = fopen(a.cache_file, "rb");
  CHECK(f != NULL);
  if (f) fclose(f);
  /* a corrupt file is ignored (recompiled), never loaded */
  f = fopen(a.cache_file, "wb");
  if (f) { fputs("mysample-cuda-cache 1 garbage 5\nxxxxx", f); fclose(f); }
  o.no_memory_cache = 1;
  CHECK_EQ_INT(ms_cuda_compile(86, &o, &b, log, sizeof log), MS_OK);
  CHECK_EQ_INT(b.source, 0);
  /* disabled: no file name */
  o.cache_dir = "";
  CHECK_EQ_INT(ms_cuda_compile(86, &o, &b, log, sizeof log), MS_OK);
  CHECK(b.cache_file[0] == 0);
  remove(a.cache_file);
  snprintf(path, sizeof path, "%s", dir);
  remove(path);
}

/* The embedded source is src/cuda/kernels.cu byte for byte. */
static void test_embedded_source(void) {
  FILE *f = fopen("src/cuda/kernels.cu", "rb");
  const char *s;
  char *buf;
  long n;
  if (!f) SKIP("src/cuda/kernels.cu not found (run from the repository root)");
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = (char *)malloc((size_t)n + 1);
  CHECK(buf != NULL);
  if (!buf) { fclose(f); return; }
  CHECK(fread(buf, 1, (size_t)n, f) == (size_t)n);
  buf[n] = 0;
  fclose(f);
  ms__cu_lock(&ms__cu_compile_mu);
  s = ms__cu_get_source();
  ms__cu_unlock(&ms__cu_compile_mu);
  CHECK(s != NULL && strcmp(s, buf) == 0);
  {
    int i;
    for (i = 0; ms__cuda_src_kernels[i]; i++) CHECK(strlen(ms__cuda_src_kernels[i]) < 2000);
  }
  free(buf);
}

/* ---- the loader without a GPU --------------------------------------------- */
static void test_loader_without_gpu(void) {
  char msg[512], msg2[512];
  ms_cuda *cu = (ms_cuda *)&msg;  /* must be overwritten with NULL */
  ms_cuda_desc d;
  ms_result rc;
  rc = ms_cuda_load_driver(NULL, msg, sizeof msg);
  if (rc == MS_OK) {
    /* a working driver and GPU: this test is about machines without */
    SKIP("a CUDA driver and GPU are present");
  }
  CHECK_EQ_INT(rc, MS_ERR_NO_DEVICE);
  CHECK(msg[0] != 0);
  printf("  driver: %s\n", msg);
  memset(&d, 0, sizeof d);
  d.max_rows = 8; d.max_vocab = 1000;
  rc = ms_cuda_create(&cu, &d, msg2, sizeof msg2);
  CHECK_EQ_INT(rc, MS_ERR_NO_DEVICE);
  CHECK(cu == NULL);
  CHECK(strcmp(msg, msg2) == 0);        /* the remembered failure */
  rc = ms_cuda_create(&cu, &d, NULL, 0); /* no message buffer: fine */
  CHECK_EQ_INT(rc, MS_ERR_NO_DEVICE);
  CHECK_EQ_INT(ms_cuda_create(NULL, &d, msg, sizeof msg), MS_ERR_NULL_ARGUMENT);
  d.max_vocab = 0;
  CHECK_EQ_INT(ms_cuda_create(&cu, &d, msg, sizeof msg), MS_ERR_BAD_VOCAB);
  ms_cuda_destroy(NULL);
  CHECK(ms_cuda_workspace_size(&d) == 0);
  d.max_vocab = 1000;
  CHECK(ms_cuda_workspace_size(&d) > 8u * 1000u * 4u);
}

/* ---- the kernels' RNG formula equals ms_uniform ---------------------------- */
/* A host copy of ms_uniform_dev in kernels.cu (mulhi via 64-bit products). */
static double t_uniform_like_kernel(uint64_t seed, uint64_t position, uint32_t purpose) {
  uint32_t c0 = (uint32_t)position, c1 = (uint32_t)(position >> 32), c2 = purpose, c3 = 0;
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  int r;
  for (r = 0; r < 10; r++) {
    uint32_t lo0 = 0xD2511F53u * c0, hi0 = (uint32_t)(((uint64_t)0xD2511F53u * c0) >> 32);
    uint32_t lo1 = 0xCD9E8D57u * c2, hi1 = (uint32_t)(((uint64_t)0xCD9E8D57u * c2) >> 32);
    uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
    k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
  }
  return ((double)(c0 >> 5) * 67108864.0 + (double)(c1 >> 6)) * (1.0 / 9007199254740992.0);
}
static void test_rng_formula_matches_cpu(void) {
  int i, bad = 0;
  for (i = 0; i < 200000; i++) {
    uint64_t seed = ((uint64_t)(t_unif() * 4294967296.0) << 32) ^ (uint64_t)(t_unif() * 4294967296.0);
    uint64_t pos = i < 1000 ? (uint64_t)i : ((uint64_t)(t_unif() * 4294967296.0) << (i & 31));
    uint32_t purpose = (i % 7 == 0) ? MS_PURPOSE_USER + (uint32_t)i : MS_PURPOSE_DRAW;
    if (t_uniform_like_kernel(seed, pos, purpose) != ms_uniform(seed, pos, purpose)) bad++;
  }
  CHECK_EQ_INT(bad, 0);
}

/* ---- GPU execution (skipped without a GPU) --------------------------------- */
#define T_MAXV 32000
#define T_MAXB 64
static ms_cuda *t_cu;
static ms_sampler *t_cpu;
static char t_why[800], t_msg[512];
static int t_tried;

static ms_cuda *t_gpu(void) {
  ms_cuda_desc d;
  ms_sampler_desc sd;
  ms_result rc;
  if (t_tried) return t_cu;
  t_tried = 1;
  memset(&d, 0, sizeof d);
  d.max_rows = T_MAXB; d.max_vocab = T_MAXV; d.max_slots = 4;
  rc = ms_cuda_create(&t_cu, &d, t_msg, sizeof t_msg);
  if (rc != MS_OK) {
    snprintf(t_why, sizeof t_why, "no GPU: %s (%s)", ms_result_str(rc), t_msg);
    t_cu = NULL;
    return NULL;
  }
  memset(&sd, 0, sizeof sd);
  sd.max_vocab = T_MAXV;
  if (ms_sampler_create(&t_cpu, &sd) != MS_OK) { ms_cuda_destroy(t_cu); t_cu = NULL; snprintf(t_why, sizeof t_why, "CPU sampler failed"); }
  return t_cu;
}

/* Device buffers shared by the GPU tests. */
static void *t_dlogits, *t_dtokens, *t_dprobs, *t_dout, *t_dtop;
static float t_logits[T_MAXB * T_MAXV], t_probs[T_MAXB * T_MAXV], t_cprobs[T_MAXV];
static int t_bufs(ms_cuda *cu) {
  if (t_dlogits) return 1;
  return ms_cuda_malloc(cu, &t_dlogits, sizeof t_logits) == MS_OK &&
         ms_cuda_malloc(cu, &t_dtokens, T_MAXB * 4) == MS_OK &&
         ms_cuda_malloc(cu, &t_dprobs, sizeof t_probs) == MS_OK &&
         ms_cuda_malloc(cu, &t_dout, T_MAXB * sizeof(ms_cuda_out)) == MS_OK &&
         ms_cuda_malloc(cu, &t_dtop, T_MAXB * 20 * sizeof(ms_logprob)) == MS_OK;
}

/* A grid of parameter sets covering every filter and both profiles. */
static ms_params t_grid(int i) {
  static const float temps[] = { 0.0f, 0.005f, 0.7f, 1.0f, 1.5f };
  static const int32_t ks[] = { 0, 1, 5, 50, -1 };
  static const float ps[] = { 1.0f, 0.9f, 0.5f, 0.95f };
  static const float mps[] = { 0.0f, 0.05f, 0.2f };
  ms_params p = ms_params_default();
  p.temperature = temps[i % 5];
  p.top_k = ks[(i / 5) % 5];
  p.top_p = ps[(i / 25) % 4];
  p.min_p = mps[(i / 100) % 3];
  p.profile = (i / 300) % 2 ? MS_PROFILE_HF : MS_PROFILE_VLLM;
  p.seed = 1000u + (uint64_t)i; p.has_seed = 1;
  return p;
}

static void test_gpu_probs_match_cpu(void) {
  ms_cuda *cu = t_gpu();
  ms_params ps[T_MAXB];
  const ms_params *pp[T_MAXB];
  ms_cuda_batch b;
  int g, r, V, worst_g = -1;
  double worst = 0.0;
  if (!cu) SKIP(t_why);
  CHECK(t_bufs(cu));
  for (V = 1000; V <= T_MAXV; V += T_MAXV - 1000) {
    for (g = 0; g < 600; g += T_MAXB) {
      int n = 600 - g < T_MAXB ? 600 - g : T_MAXB;
      t_fill(t_logits, n * V, (g / T_MAXB) % 2 ? 3.0f : 1.0f);
      for (r = 0; r < n; r++) { ps[r] = t_grid(g + r); pp[r] = &ps[r]; }
      CHECK(ms_cuda_upload(cu, t_dlogits, t_logits, (size_t)n * (size_t)V * 4) == MS_OK);
      memset(&b, 0, sizeof b);
      b.n_rows = n; b.vocab = V; b.logits = t_dlogits; b.row_stride = (size_t)V; b.params = pp; b.tokens = t_dtokens;
      CHECK_EQ_INT(ms_cuda_probs(cu, NULL, &b, t_dprobs, (size_t)V), MS_OK);
      CHECK(ms_cuda_download(cu, t_probs, t_dprobs, (size_t)n * (size_t)V * 4) == MS_OK);
      for (r = 0; r < n; r++) {
        int32_t i;
        CHECK_EQ_INT(ms_probs(t_cpu, t_logits + (size_t)r * (size_t)V, V, &ps[r], NULL, t_cprobs), MS_OK);
        for (i = 0; i < V; i++) {
          double e = fabs((double)t_probs[(size_t)r * (size_t)V + (size_t)i] - (double)t_cprobs[i]);
          if (e > worst) { worst = e; worst_g = g + r; }
        }
      }
    }
  }
  printf("  max |gpu - cpu| = %.3g (grid %d)\n", worst, worst_g);
  CHECK(worst <= 1e-5);
}

static void test_gpu_draws_match_cpu(void) {
  ms_cuda *cu = t_gpu();
  ms_params ps[T_MAXB];
  const ms_params *pp[T_MAXB];
  uint64_t seeds[T_MAXB], pos[T_MAXB];
  int32_t tok[T_MAXB];
  ms_cuda_batch b;
  const int V = 4096;
  int it, r, same = 0, total = 0;
  if (!cu) SKIP(t_why);
  CHECK(t_bufs(cu));
  for (it = 0; it < 64; it++) {
    t_fill(t_logits, T_MAXB * V, it % 2 ? 3.0f : 1.0f);
    for (r = 0; r < T_MAXB; r++) {
      ps[r] = t_grid(it * T_MAXB + r);
      if (ps[r].temperature < 0.01f) ps[r].temperature = 0.8f;
      pp[r] = &ps[r];
      seeds[r] = (uint64_t)it * 7919u + (uint64_t)r; pos[r] = (uint64_t)r * 3u;
      ps[r].seed = seeds[r];
    }
    CHECK(ms_cuda_upload(cu, t_dlogits, t_logits, (size_t)T_MAXB * (size_t)V * 4) == MS_OK);
    memset(&b, 0, sizeof b);
    b.n_rows = T_MAXB; b.vocab = V; b.logits = t_dlogits; b.row_stride = (size_t)V; b.params = pp;
    b.seeds = seeds; b.positions = pos; b.tokens = t_dtokens;
    CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);
    CHECK(ms_cuda_download(cu, tok, t_dtokens, sizeof tok) == MS_OK);
    for (r = 0; r < T_MAXB; r++) {
      ms_output o;
      ms_seq *s = NULL;
      memset(&o, 0, sizeof o);
      /* the CPU draws at (seq seed, seq position) */
      CHECK(ms_seq_create(&s, 8) == MS_OK);
      if (!s) continue;
      CHECK(ms_seq_reset(s, NULL, 0, V, &ps[r], 0) == MS_OK);
      ms_seq_set_position(s, pos[r]);
      CHECK_EQ_INT(ms_sample(t_cpu, t_logits + (size_t)r * (size_t)V, V, &ps[r], s, &o), MS_OK);
      same += o.token == tok[r];
      total++;
      ms_seq_destroy(s);
    }
  }
  printf("  %d of %d draws equal the CPU's\n", same, total);
  CHECK(total > 0 && (double)same >= 0.999 * (double)total);
}

/* Chi-square of many seeded GPU draws against the GPU's own final
   distribution (itself checked against the CPU above). False-alarm rate
   1e-6 per test: the critical value is the Wilson-Hilferty quantile. */
static void test_gpu_chi_square(void) {
  ms_cuda *cu = t_gpu();
  ms_params p = ms_params_default();
  const ms_params *pp[T_MAXB];
  uint64_t pos[T_MAXB];
  int32_t tok[T_MAXB];
  static double count[64];
  ms_cuda_batch b;
  const int V = 64, draws = 64 * 400;
  int r, it, i, dof = -1;
  double chi = 0.0, crit, z = 4.753; /* one-sided normal quantile for 1e-6 */
  if (!cu) SKIP(t_why);
  CHECK(t_bufs(cu));
  t_fill(t_logits, V, 1.5f);
  for (r = 1; r < T_MAXB; r++) memcpy(t_logits + r * V, t_logits, (size_t)V * 4);
  CHECK(ms_cuda_upload(cu, t_dlogits, t_logits, (size_t)T_MAXB * (size_t)V * 4) == MS_OK);
  p.top_p = 0.9f; p.top_k = 40; p.min_p = 0.01f; p.seed = 77; p.has_seed = 1;
  for (r = 0; r < T_MAXB; r++) pp[r] = &p;
  memset(&b, 0, sizeof b);
  b.n_rows = T_MAXB; b.vocab = V; b.logits = t_dlogits; b.row_stride = (size_t)V; b.params = pp; b.tokens = t_dtokens;
  CHECK_EQ_INT(ms_cuda_probs(cu, NULL, &b, t_dprobs, (size_t)V), MS_OK);
  CHECK(ms_cuda_download(cu, t_probs, t_dprobs, (size_t)V * 4) == MS_OK);
  b.positions = pos;
  memset(count, 0, sizeof count);
  for (it = 0; it < draws / T_MAXB; it++) {
    for (r = 0; r < T_MAXB; r++) pos[r] = (uint64_t)(it * T_MAXB + r);
    CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);
    CHECK(ms_cuda_download(cu, tok, t_dtokens, sizeof tok) == MS_OK);
    for (r = 0; r < T_MAXB; r++) if (tok[r] >= 0 && tok[r] < V) count[tok[r]] += 1.0;
  }
  for (i = 0; i < V; i++) {
    double e = t_probs[i] * draws;
    if (t_probs[i] == 0.0f) { CHECK_MSG(count[i] == 0.0, "dropped token %d drawn %g times", i, count[i]); continue; }
    chi += (count[i] - e) * (count[i] - e) / e;
    dof++;
  }
  if (dof < 1) dof = 1;
  crit = dof * pow(1.0 - 2.0 / (9.0 * dof) + z * sqrt(2.0 / (9.0 * dof)), 3.0);
  printf("  chi2 = %.2f, dof %d, critical %.2f\n", chi, dof, crit);
  CHECK(chi < crit);
}

/* A row's token and distribution do not depend on the batch around it,
   nor on the split of rows over blocks. */
static void test_gpu_batch_invariance(void) {
  ms_cuda *cu = t_gpu();
  ms_params ps[T_MAXB];
  const ms_params *pp[T_MAXB];
  int32_t all[T_MAXB], one[1];
  ms_cuda_batch b;
  const int V = T_MAXV;
  int r;
  if (!cu) SKIP(t_why);
  CHECK(t_bufs(cu));
  t_fill(t_logits, T_MAXB * V, 2.0f);
  CHECK(ms_cuda_upload(cu, t_dlogits, t_logits, (size_t)T_MAXB * (size_t)V * 4) == MS_OK);
  for (r = 0; r < T_MAXB; r++) { ps[r] = t_grid(r * 37 + 3); if (ps[r].temperature < 0.01f) ps[r].temperature = 1.0f; pp[r] = &ps[r]; }
  memset(&b, 0, sizeof b);
  b.n_rows = T_MAXB; b.vocab = V; b.logits = t_dlogits; b.row_stride = (size_t)V; b.params = pp; b.tokens = t_dtokens;
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);
  CHECK(ms_cuda_download(cu, all, t_dtokens, sizeof all) == MS_OK);
  for (r = 0; r < T_MAXB; r += 7) {
    b.n_rows = 1; b.logits = (const float *)t_dlogits + (size_t)r * (size_t)V; b.params = pp + r;
    CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);   /* alone: the row is split over blocks */
    CHECK(ms_cuda_download(cu, one, t_dtokens, sizeof one) == MS_OK);
    CHECK_EQ_INT(one[0], all[r]);
  }
}

/* Logprobs (raw and processed): value, rank and the top list as the CPU. */
static void test_gpu_logprobs_match_cpu(void) {
  ms_cuda *cu = t_gpu();
  ms_params ps[8];
  const ms_params *pp[8];
  ms_cuda_out out[8];
  ms_logprob top[8 * 20], ctop[20];
  ms_cuda_batch b;
  const int V = 5000;
  int r, j;
  if (!cu) SKIP(t_why);
  CHECK(t_bufs(cu));
  t_fill(t_logits, 8 * V, 2.0f);
  CHECK(ms_cuda_upload(cu, t_dlogits, t_logits, (size_t)8 * (size_t)V * 4) == MS_OK);
  for (r = 0; r < 8; r++) {
    ps[r] = t_grid(r * 41 + 2);
    ps[r].logprobs = 5 + r;
    ps[r].logprobs_mode = r % 2 ? MS_LOGPROBS_PROCESSED : MS_LOGPROBS_RAW;
    pp[r] = &ps[r];
  }
  memset(&b, 0, sizeof b);
  b.n_rows = 8; b.vocab = V; b.logits = t_dlogits; b.row_stride = (size_t)V; b.params = pp; b.tokens = t_dtokens;
  b.out = t_dout; b.top = t_dtop; b.top_stride = 20;
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);
  CHECK(ms_cuda_download(cu, out, t_dout, sizeof out) == MS_OK);
  CHECK(ms_cuda_download(cu, top, t_dtop, sizeof top) == MS_OK);
  for (r = 0; r < 8; r++) {
    ms_output o;
    memset(&o, 0, sizeof o);
    o.top = ctop; o.top_capacity = 20;
    CHECK_EQ_INT(ms_sample(t_cpu, t_logits + (size_t)r * (size_t)V, V, &ps[r], NULL, &o), MS_OK);
    CHECK_EQ_INT(out[r].status, MS_OK);
    if (out[r].token != o.token) continue;   /* a rare boundary draw: compared elsewhere */
    CHECK_NEAR(out[r].logprob, o.logprob, 1e-4);
    CHECK_EQ_INT(out[r].rank, o.rank);
    CHECK_EQ_INT(out[r].n_top, o.n_top);
    for (j = 0; j < o.n_top && j < out[r].n_top; j++) {
      CHECK_EQ_INT(top[r * 20 + j].token, ctop[j].token);
      CHECK_NEAR(top[r * 20 + j].logprob, ctop[j].logprob, 1e-4);
    }
  }
}

/* Device-side sequences: penalties and min_tokens follow the CPU's ms_seq
   step by step, with the counters updated on the device. */
static void test_gpu_sequences_match_cpu(void) {
  ms_cuda *cu = t_gpu();
  ms_params p = ms_params_default();
  const ms_params *pp[1];
  int32_t slot[1] = { 2 }, prompt[6] = { 5, 9, 9, 100, 7, 3 }, tok[1];
  ms_cuda_batch b;
  ms_seq *s = NULL;
  void *dprompt = NULL;
  const int V = 2000;
  int step;
  if (!cu) SKIP(t_why);
  CHECK(t_bufs(cu));
  p.repetition_penalty = 1.3f; p.frequency_penalty = 0.4f; p.presence_penalty = 0.3f;
  p.min_tokens = 4; p.eos_token_id = 1; p.temperature = 0.9f; p.top_p = 0.95f; p.seed = 99; p.has_seed = 1;
  pp[0] = &p;
  CHECK(ms_seq_create(&s, 64) == MS_OK);
  if (!s) return;
  CHECK(ms_seq_reset(s, prompt, 6, V, &p, 0) == MS_OK);
  CHECK(ms_cuda_malloc(cu, &dprompt, sizeof prompt) == MS_OK);
  CHECK(ms_cuda_upload(cu, dprompt, prompt, sizeof prompt) == MS_OK);
  CHECK_EQ_INT(ms_cuda_seq_reset(cu, NULL, slot[0], dprompt, 6), MS_OK);
  memset(&b, 0, sizeof b);
  b.n_rows = 1; b.vocab = V; b.logits = t_dlogits; b.row_stride = (size_t)V; b.params = pp;
  b.slots = slot; b.accept = 1; b.tokens = t_dtokens;
  for (step = 0; step < 30; step++) {
    ms_output o;
    t_fill(t_logits, V, 1.0f);
    t_logits[1] = 8.0f;   /* EOS would win without min_tokens */
    t_logits[9] = 6.0f;   /* a prompt token: penalised */
    CHECK(ms_cuda_upload(cu, t_dlogits, t_logits, (size_t)V * 4) == MS_OK);
    CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_OK);
    CHECK(ms_cuda_download(cu, tok, t_dtokens, sizeof tok) == MS_OK);
    memset(&o, 0, sizeof o);
    CHECK_EQ_INT(ms_sample(t_cpu, t_logits, V, &p, s, &o), MS_OK);
    CHECK_EQ_INT(tok[0], o.token);
    CHECK(ms_seq_accept(s, o.token) == MS_OK);
    if (step < 4) CHECK(tok[0] != 1);
  }
  ms_cuda_free(cu, dprompt);
  ms_seq_destroy(s);
}

/* Bad rows: a validation error, NaN, every token masked. */
static void test_gpu_row_errors(void) {
  ms_cuda *cu = t_gpu();
  ms_params ps[4];
  const ms_params *pp[4];
  ms_cuda_out out[4];
  ms_result rr[4];
  int32_t allowed[1] = { 3 }, banned[1] = { 3 };
  ms_cuda_batch b;
  const int V = 100;
  int r;
  if (!cu) SKIP(t_why);
  CHECK(t_bufs(cu));
  t_fill(t_logits, 4 * V, 1.0f);
  t_logits[2 * V + 17] = (float)NAN;
  CHECK(ms_cuda_upload(cu, t_dlogits, t_logits, (size_t)4 * (size_t)V * 4) == MS_OK);
  for (r = 0; r < 4; r++) { ps[r] = ms_params_default(); ps[r].seed = 5; ps[r].has_seed = 1; pp[r] = &ps[r]; }
  ps[1].top_p = 0.0f;
  ps[3].allowed_ids = allowed; ps[3].n_allowed_ids = 1; ps[3].banned_ids = banned; ps[3].n_banned_ids = 1;
  memset(&b, 0, sizeof b);
  b.n_rows = 4; b.vocab = V; b.logits = t_dlogits; b.row_stride = (size_t)V; b.params = pp; b.tokens = t_dtokens;
  b.out = t_dout; b.row_results = rr;
  CHECK_EQ_INT(ms_cuda_sample(cu, NULL, &b), MS_ERR_INVALID_PARAM);
  CHECK_EQ_INT(rr[0], MS_OK);
  CHECK_EQ_INT(rr[1], MS_ERR_INVALID_PARAM);
  CHECK(ms_cuda_download(cu, out, t_dout, sizeof out) == MS_OK);
  CHECK_EQ_INT(out[0].status, MS_OK);
  CHECK(out[0].token >= 0 && out[0].token < V);
  CHECK_EQ_INT(out[1].status, MS_ERR_INVALID_PARAM);
  CHECK_EQ_INT(out[1].token, -1);
  CHECK_EQ_INT(out[2].status, MS_ERR_NAN_LOGIT);
  CHECK_EQ_INT(out[3].status, MS_ERR_ALL_MASKED);
  CHECK_EQ_INT(out[3].token, -1);
}

/* The disk cache on a GPU machine: a fresh directory misses, the next
   lookup hits, and an ms_cuda created from it works. */
static void test_gpu_disk_cache_hit(void) {
  static char log[8192];
  ms_cuda *cu = t_gpu(), *cu2 = NULL;
  ms_cuda_compile_opts o;
  ms_cuda_compile_info a, c;
  ms_cuda_desc d;
  const char *t;
  int sm;
  if (!cu) SKIP(t_why);
  t = ms_cuda_target(cu);
  sm = atoi(strchr(t, '_') ? strchr(t, '_') + 1 : t);
  memset(&o, 0, sizeof o);
  o.cache_dir = "build/tests/cuda-cache-gpu";
  o.no_memory_cache = 1;
  CHECK_EQ_INT(ms_cuda_compile(sm, &o, &a, log, sizeof log), MS_OK);
  CHECK_EQ_INT(ms_cuda_compile(sm, &o, &c, log, sizeof log), MS_OK);
  CHECK_EQ_INT(c.source, 2);
  memset(&d, 0, sizeof d);
  d.max_rows = 2; d.max_vocab = 100; d.cache_dir = o.cache_dir;
  CHECK_EQ_INT(ms_cuda_create(&cu2, &d, log, sizeof log), MS_OK);
  ms_cuda_destroy(cu2);
}

int main(void) {
  RUN(test_nvrtc_compile_sm80);
  RUN(test_nvrtc_compile_sm90);
  RUN(test_nvrtc_unsupported_arch);
  RUN(test_compile_caches);
  RUN(test_embedded_source);
  RUN(test_loader_without_gpu);
  RUN(test_rng_formula_matches_cpu);
  RUN(test_gpu_probs_match_cpu);
  RUN(test_gpu_draws_match_cpu);
  RUN(test_gpu_chi_square);
  RUN(test_gpu_batch_invariance);
  RUN(test_gpu_logprobs_match_cpu);
  RUN(test_gpu_sequences_match_cpu);
  RUN(test_gpu_row_errors);
  RUN(test_gpu_disk_cache_hit);
  if (t_cu) ms_cuda_destroy(t_cu);
  if (t_cpu) ms_sampler_destroy(t_cpu);
  return t_done();
}
