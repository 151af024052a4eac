/* Minimal test harness: each TEST prints "PASS name", "FAIL name" or
   "SKIP name: why"; tests/run.sh adds the lines up over every binary. */
#ifndef MS_TESTLIB_H
#define MS_TESTLIB_H
#include <stdio.h>
#include <string.h>
#include <math.h>

static int t_check_failures;
static int t_skipped;
static const char *t_skip_reason;
static int t_total_pass, t_total_fail, t_total_skip;

#define CHECK(c) do { if (!(c)) { t_check_failures++; \
  printf("  check failed %s:%d: %s\n", __FILE__, __LINE__, #c); } } while (0)
#define CHECK_MSG(c, ...) do { if (!(c)) { t_check_failures++; \
  printf("  check failed %s:%d: %s: ", __FILE__, __LINE__, #c); printf(__VA_ARGS__); printf("\n"); } } while (0)
#define CHECK_EQ_INT(a, b) do { long long t_a = (long long)(a), t_b = (long long)(b); if (t_a != t_b) { t_check_failures++; \
  printf("  check failed %s:%d: %s == %s (%lld vs %lld)\n", __FILE__, __LINE__, #a, #b, t_a, t_b); } } while (0)
#define CHECK_NEAR(a, b, tol) do { double t_a = (double)(a), t_b = (double)(b); if (!(fabs(t_a - t_b) <= (tol))) { t_check_failures++; \
  printf("  check failed %s:%d: |%s - %s| <= %g (%.9g vs %.9g)\n", __FILE__, __LINE__, #a, #b, (double)(tol), t_a, t_b); } } while (0)
#define SKIP(why) do { t_skipped = 1; t_skip_reason = (why); return; } while (0)

static void t_run(const char *name, void (*fn)(void)) {
  t_check_failures = 0; t_skipped = 0; t_skip_reason = "";
  fn();
  if (t_check_failures) { printf("FAIL %s\n", name); t_total_fail++; }
  else if (t_skipped) { printf("SKIP %s: %s\n", name, t_skip_reason); t_total_skip++; }
  else { printf("PASS %s\n", name); t_total_pass++; }
  fflush(stdout);
}
#define TEST(name) static void name(void)
#define RUN(fn) t_run(#fn, fn)
static int t_done(void) { return t_total_fail ? 1 : 0; }
#endif
