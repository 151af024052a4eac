/* ---- implementation: common ------------------------------------------------ */
#include <string.h>
#include <math.h>
#include <float.h>
#include <stdio.h>
#include <time.h>

#if defined(MYSAMPLE_MALLOC) || defined(MYSAMPLE_FREE)
#  if !defined(MYSAMPLE_MALLOC) || !defined(MYSAMPLE_FREE)
#    error "define both MYSAMPLE_MALLOC and MYSAMPLE_FREE, or neither"
#  endif
#else
#  include <stdlib.h>
#  define MYSAMPLE_MALLOC(size, user) ((void)(user), malloc(size))
#  define MYSAMPLE_FREE(ptr, user) ((void)(user), free(ptr))
#endif
#ifndef MYSAMPLE_ASSERT
#  include <assert.h>
#  define MYSAMPLE_ASSERT(c) assert(c)
#endif

/* Private functions are static: the implementation adds no global names
   beyond the ms_ API. */
#define MS__PRIVATE static

/* Scalar helpers the SIMD kernels use are forced inline: compiled inside a
   target("avx512f") function they are VEX-encoded, while a call to legacy
   SSE code from AVX-512 code costs ~100 ns per call on some CPUs. */
#if defined(__GNUC__) || defined(__clang__)
#  define MS__FORCEINLINE static inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#  define MS__FORCEINLINE static __forceinline
#else
#  define MS__FORCEINLINE static inline
#endif
#if defined(__GNUC__) || defined(__clang__)
#  define MS__LIKELY(x) __builtin_expect(!!(x), 1)
#  define MS__UNLIKELY(x) __builtin_expect(!!(x), 0)
#  define MS__UNUSED __attribute__((unused))
#else
#  define MS__LIKELY(x) (x)
#  define MS__UNLIKELY(x) (x)
#  define MS__UNUSED
#endif

MSDEF const char *ms_result_str(ms_result code) {
  switch (code) {
#define MS__RESULT_CASE(name, value, text) case name: return text;
    MS__RESULT_LIST(MS__RESULT_CASE)
#undef MS__RESULT_CASE
    default: return "unknown result code";
  }
}

MSDEF const char *ms_version(void) { return MYSAMPLE_VERSION_STRING; }

/* Formats a float the way Python's repr prints the same value parsed from
   JSON, so our messages read like vLLM's: the shortest decimal that reads
   back as this float, ".0" on integral values, and exponents only below
   1e-4 or from 1e16 up (repr's rule: 100.0, not 1e+02). ms_json_float
   writes exactly that, without the C locale's decimal point. */
MS__PRIVATE void ms__fmt_float(char *buf, size_t size, float v) {
  char tmp[24];
  size_t len;
  if (v != v) { snprintf(buf, size, "nan"); return; }
  if (v == (float)INFINITY) { snprintf(buf, size, "inf"); return; }
  if (v == -(float)INFINITY) { snprintf(buf, size, "-inf"); return; }
  len = ms_json_float(tmp, v);
  if (size) { if (len >= size) len = size - 1; memcpy(buf, tmp, len); buf[len] = '\0'; }
}

/* Writes a formatted message into the caller's optional buffer. */
MS__PRIVATE void ms__msg(char *msg, size_t size, const char *fmt, ...);
#include <stdarg.h>
MS__PRIVATE void ms__msg(char *msg, size_t size, const char *fmt, ...) {
  va_list ap;
  if (!msg || size == 0) return;
  va_start(ap, fmt);
  vsnprintf(msg, size, fmt, ap);
  va_end(ap);
}

MS__PRIVATE size_t ms__align_up(size_t n, size_t a) { return (n + a - 1) & ~(a - 1); }
/* acc + n * ms__align_up(bytes, a), or 0 once it does not fit in a size_t
   (acc 0 stays 0): the size queries of huge vocabularies and capacities on
   32-bit targets wrapped to small sizes, and init then laid its arrays out
   past the block. */
MS__PRIVATE size_t ms__size_add(size_t acc, size_t n, size_t bytes, size_t a) {
  size_t max = (size_t)-1, b;
  if (!acc || bytes > max - (a - 1)) return 0;
  b = ms__align_up(bytes, a);
  if (b && n > (max - acc) / b) return 0;
  return acc + n * b;
}
