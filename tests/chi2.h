/* Chi-square tests of seeded draws, shared by the test programs: the
   critical value is the chi-square quantile at p = 1e-6 (Wilson-Hilferty),
   so a correct sampler fails one configuration in a million runs. Needs
   testlib.h and mysample.h first. */
#ifndef MS_TEST_CHI2_H
#define MS_TEST_CHI2_H
#include <stdlib.h>

static inline double t_chi2_crit(int df) {
  double z = 4.753424, h = 2.0 / (9.0 * df);
  return df * pow(1 - h + z * sqrt(h), 3);
}

/* counts of n draws against the probabilities expect[0..V) (cells with an
   expectation below 5 pooled); a draw of a p = 0 token fails */
static inline void t_chi2_check(const int *count, const double *expect, int V, int n, const char *name) {
  int i, df = -1;
  double chi = 0, pool_e = 0, pool_o = 0;
  for (i = 0; i < V; i++) {
    double e = expect[i] * (double)n;
    if (expect[i] == 0) { CHECK_MSG(count[i] == 0, "%s: token %d has p = 0 but was drawn %d times", name, i, count[i]); continue; }
    if (e < 5) { pool_e += e; pool_o += count[i]; continue; }
    chi += (count[i] - e) * (count[i] - e) / e; df++;
  }
  if (pool_e > 0) { chi += (pool_o - pool_e) * (pool_o - pool_e) / (pool_e > 1e-9 ? pool_e : 1e-9); df++; }
  if (df < 1) df = 1;
  CHECK_MSG(chi < t_chi2_crit(df), "%s: chi2 %.1f with %d df (critical %.1f)", name, chi, df, t_chi2_crit(df));
}

/* n seeded draws of ms_sample (positions 0..n-1) against ms_probs of the
   same row. n: $MS_TEST_DRAWS when set (fewer under emulation), else
   100000. */
static inline void t_chi2_draws(ms_sampler *s, const float *x, int V, ms_params *p, uint64_t seed, const char *name) {
  int n = getenv("MS_TEST_DRAWS") ? atoi(getenv("MS_TEST_DRAWS")) : 100000, i;
  float *probs = (float *)malloc(sizeof(float) * (size_t)V);
  double *expect = (double *)malloc(sizeof(double) * (size_t)V);
  int *count = (int *)calloc((size_t)V, sizeof(int));
  ms_seq *q;
  ms_seq_create(&q, 4);
  p->seed = seed; p->has_seed = 1;
  ms_seq_reset(q, NULL, 0, V, p, 0);
  CHECK(ms_probs(s, x, V, p, q, probs) == MS_OK);
  for (i = 0; i < n; i++) {
    ms_output out;
    memset(&out, 0, sizeof out);
    ms_seq_set_position(q, (uint64_t)i);
    if (ms_sample(s, x, V, p, q, &out) != MS_OK) { CHECK(0); break; }
    count[out.token]++;
  }
  for (i = 0; i < V; i++) expect[i] = (double)probs[i];
  t_chi2_check(count, expect, V, n, name);
  ms_seq_destroy(q); free(probs); free(expect); free(count);
}
#endif
