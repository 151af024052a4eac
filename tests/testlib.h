/* Minimal test harness: each TEST prints "PASS name", "FAIL name" or
   "SKIP name: why"; tests/run.sh adds the lines up over every binary.
   $MS_TESTS runs only the tests whose name contains one of its
   comma-separated words (a leading '!': none of them), e.g. for a slow
   platform (tests/ci/windows.sh). */
#ifndef MS_TESTLIB_H
#define MS_TESTLIB_H
#include <stdio.h>
#include <stdlib.h>
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
#define CHECK_EQ_STR(a, b) do { const char *t_a = (a), *t_b = (b); if (strcmp(t_a, t_b) != 0) { t_check_failures++; \
  printf("  check failed %s:%d: %s == %s (\"%s\" vs \"%s\")\n", __FILE__, __LINE__, #a, #b, t_a, t_b); } } while (0)
#define SKIP(why) do { t_skipped = 1; t_skip_reason = (why); return; } while (0)

/* The filter: $MS_TESTS unless the program set t_only first (test_cuda's
   --emu FILTER). */
static const char *t_only;
static int t_only_read;
static char t_only_copy[1024];   /* (a test that sets a variable may move the environment: Windows) */
static int t_selected(const char *name) {
  const char *f, *end;
  int neg, hit = 0;
  char word[64];
  if (!t_only_read) {
    t_only_read = 1;
    if (!t_only) t_only = getenv("MS_TESTS");
    if (t_only && !*t_only) t_only = NULL;
    if (t_only) { snprintf(t_only_copy, sizeof t_only_copy, "%s", t_only); t_only = t_only_copy; }
  }
  if (!(f = t_only)) return 1;
  neg = *f == '!';
  if (neg) f++;
  for (; *f; f = *end ? end + 1 : end) {
    size_t n;
    end = strchr(f, ',');
    if (!end) end = f + strlen(f);
    n = (size_t)(end - f) < sizeof word - 1 ? (size_t)(end - f) : sizeof word - 1;
    memcpy(word, f, n);
    word[n] = 0;
    if (n && strstr(name, word)) hit = 1;
  }
  return neg ? !hit : hit;
}

static void t_run(const char *name, void (*fn)(void)) {
  if (!t_selected(name)) return;
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
