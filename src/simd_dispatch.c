/* ---- implementation: SIMD kernels and their dispatch ---------------------- */
/* The hot scans are written once (kernels.inc) against a small macro layer
   (simd_*.h) and instantiated per instruction set with target attributes,
   so a header compiled at plain -O2 still runs AVX-512 or AVX2 code where
   the CPU has it. The choice is made once per sampler from CPUID. */
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
#  define MS__X86 1
#else
#  define MS__X86 0
#endif
#if defined(__aarch64__) || defined(_M_ARM64)
#  define MS__ARM64 1
#else
#  define MS__ARM64 0
#endif
#if (defined(__GNUC__) && !defined(__clang__) && (__GNUC__ >= 6)) || defined(__clang__)
#  define MS__GNU_TARGETS 1
#else
#  define MS__GNU_TARGETS 0
#endif
#if !defined(MYSAMPLE_NO_SIMD) && MS__X86 && (MS__GNU_TARGETS || defined(_MSC_VER)) && (defined(__x86_64__) || defined(_M_X64) || defined(__SSE2__))
#  define MS__HAVE_X86_SIMD 1
#  include <immintrin.h>
#  if defined(_MSC_VER)
#    include <intrin.h>
#  endif
#else
#  define MS__HAVE_X86_SIMD 0
#endif
/* g++ (C++ only) reports the intrinsic headers' deliberately undefined
   vectors (`__m512 __Y = __Y;` in _mm512_undefined_ps, ...) as used
   uninitialised wherever a kernel inlines them (GCC bug 105593, g++ 12):
   hundreds of false warnings at -O1 and above, errors under -Wall -Werror.
   Those two warnings are off from here to the end of the SIMD layers'
   kernels (the pop opens impl_select.c); C builds, and so the test suite,
   keep them. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__cplusplus)
#  define MS__INTRIN_DIAG 1
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#  pragma GCC diagnostic ignored "-Wuninitialized"
#else
#  define MS__INTRIN_DIAG 0
#endif
#if !defined(MYSAMPLE_NO_SIMD) && MS__ARM64 && defined(__ARM_NEON)
#  define MS__HAVE_NEON 1
#  include <arm_neon.h>
#else
#  define MS__HAVE_NEON 0
#endif

/* Elements per block of the block sums the draw uses to find its token
   without a second pass over the row. */
#define MS__BLOCK 512

/* Cephes-style expf: range reduction by ln 2 and a degree-5 polynomial,
   about 1 ulp. The scalar twin of MSV_EXP, used for tails and small sets. */
#define MS__EXP_LO (-87.3365f)
#define MS__EXP_HI 88.3762f
#define MS__EXP_P0 1.9875691500e-4f
#define MS__EXP_P1 1.3981999507e-3f
#define MS__EXP_P2 8.3334519073e-3f
#define MS__EXP_P3 4.1665795894e-2f
#define MS__EXP_P4 1.6666665459e-1f
#define MS__EXP_P5 5.0000001201e-1f
#define MS__LOG2E 1.44269504088896341f
#define MS__LN2_HI 0.693359375f
#define MS__LN2_LO (-2.12194440e-4f)
/* v rounded to float. Where float expressions are evaluated wider
   (FLT_EVAL_METHOD 1 or 2: 32-bit x86 with x87 math), adding and taking
   off 1.5 * 2^23 leaves the fraction in place instead of rounding it off,
   and exp came out wrong by up to a factor of 2 (a volatile store rounds;
   elsewhere this is v itself, the same code as before). */
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
#  define MS__FLT(v) (v)
#else
MS__FORCEINLINE float ms__flt(float v) { volatile float t = v; return t; }
#  define MS__FLT(v) ms__flt(v)
#endif
MS__FORCEINLINE float ms__expf_core(float x) { /* x in [MS__EXP_LO, MS__EXP_HI] */
  float n, r, p;
  union { uint32_t u; float f; } s;
  n = MS__FLT(x * MS__LOG2E + 12582912.0f) - 12582912.0f; /* round to nearest */
  r = x - n * MS__LN2_HI;
  r = r - n * MS__LN2_LO;
  p = MS__EXP_P0;
  p = p * r + MS__EXP_P1;
  p = p * r + MS__EXP_P2;
  p = p * r + MS__EXP_P3;
  p = p * r + MS__EXP_P4;
  p = p * r + MS__EXP_P5;
  p = p * r * r + r + 1.0f;
  s.u = (uint32_t)((int32_t)n + 127) << 23;
  return p * s.f;
}
/* Below MS__EXP_LO the result is subnormal: compute exp(x + 32 ln 2) and
   scale by 2^-32 so tiny probabilities stay non-zero exactly where float32
   softmax (PyTorch) keeps them; below -104 it rounds to 0. */
#define MS__EXP_SUB (-104.0f)
#define MS__LN2_X32 22.18070977791825f
#define MS__TWO_M32 2.3283064365386963e-10f
MS__FORCEINLINE float ms__expf(float x) {
  if (x >= MS__EXP_LO) return ms__expf_core(x > MS__EXP_HI ? MS__EXP_HI : x);
  if (x >= MS__EXP_SUB) return ms__expf_core(x + MS__LN2_X32) * MS__TWO_M32;
  return 0.0f; /* also -inf (masked) and NaN */
}

/* Top-k state for the threshold scans (see impl_select.c): a buffer of
   candidates >= thr; when it fills, a selection raises thr to the k-th
   value and drops what fell below. Declared here because the kernels call
   ms__topk_push on the rare lanes that pass. */
typedef struct ms__topk {
  int32_t k;             /* how many to keep (ties with the k-th may add more) */
  int32_t n;             /* entries in the buffer */
  int32_t soft, hard;    /* compaction trigger; capacity */
  float *bv; int32_t *bi;/* the buffer */
  float *scratch, *scratch2; /* hard floats each, for the selection */
  int32_t keep_ties;     /* finish keeps every entry tied with the k-th */
  int32_t bad;           /* saw +inf */
  float thr;             /* admission threshold: >= k entries are >= thr once raised */
} ms__topk;

/* A zone pass of typical's band search (ms__zones): the two zones'
   tokens (ids, values: expanded by the caller from the pass's marks), the
   core's weight and count (the pass's include both zones' until the
   caller takes them off). */
typedef struct ms__zone_out {
  int32_t *ida, *idb;
  float *va, *vb;
  int32_t na, nb, core_count;
  int core_plus_b;       /* floor mode: core_mass is all above zone A */
  double core_mass;
} ms__zone_out;

/* The kernel table: one set of function pointers per instruction set. */
typedef struct ms__kernels {
  const char *name;
  /* threshold scan from index `start`: enabled lanes with x >= t->thr are
     appended to t's buffer (+inf sets t->bad); stops after the step where
     the buffer reaches t->soft and returns where to resume (n when done),
     so the caller compacts between calls; *nan is set on a NaN */
  int32_t (*scan_topk)(const float *x, int32_t start, int32_t n, const uint32_t *enable, ms__topk *t, int *nan);
  /* sum of exp((x - m) * s) over enabled lanes; writes e when out != NULL
     (0 for disabled lanes), per-MS__BLOCK sums when blocks != NULL */
  double (*exp_sum)(const float *x, int32_t n, const uint32_t *enable, float m, float s, float *out, float *blocks);
  /* ids (and values) of enabled lanes with x >= cut; returns the count,
     or -1 when more than cap */
  int32_t (*compact_ge)(const float *x, int32_t n, const uint32_t *enable, float cut, int32_t *ids, float *vals, int32_t cap);
  /* weight of v > hi into *above (the values, or their count in
     count_mode), the lanes with lo <= v <= hi and v > 0 gathered (their
     positions into ids unless NULL, values into vals) and their weight
     into *inside; returns their count, -1 past cap. dense: many lanes
     expected in (gather branch-free) */
  int32_t (*bracket)(const float *v, int32_t n, float lo, float hi, int count_mode, int dense, double *above, double *inside, int32_t *ids, float *vals, int32_t cap);
  /* per-block sums of v over lanes with v >= t */
  double (*block_sums_ge)(const float *v, int32_t n, float t, float *blocks);
  /* weight of v > th[j] for 8 thresholds in one pass */
  void (*mass_above8)(const float *v, int32_t n, const float th[8], int count_mode, double out[8]);
  /* number of enabled lanes with x > v */
  int32_t (*count_gt)(const float *x, int32_t n, const uint32_t *enable, float v);
  /* the benchmark floors: a plain max pass and max + sum of exp */
  float (*floor_max)(const float *x, int32_t n);
  double (*floor_softmax)(const float *x, int32_t n);
  /* count, sum and sum of squares of (x - c) over enabled finite lanes */
  void (*moments)(const float *x, int32_t n, const uint32_t *enable, float c, double out[3]);
  /* sum of e * (x - m) * s over enabled lanes with e >= t > 0 */
  double (*wdot)(const float *e, const float *x, int32_t n, const uint32_t *enable, float t, float m, float s);
  /* zeroes e outside [lo, hi] in place; weight, count and max of the rest */
  void (*band_keep)(float *e, int32_t n, float lo, float hi, double *mass, int32_t *count, float *maxv);
  /* exp_sum (no weights written) that also gathers the enabled lanes with
     x >= cut; *count: how many, -1 past cap */
  double (*exp_sum_ge)(const float *x, int32_t n, const uint32_t *enable, float m, float s, float cut,
                       int32_t *ids, float *vals, int32_t cap, int32_t *count);
  /* weights exp((x - m) * s) where e > 0 and x >= cut into out (0
     elsewhere; out may be e), per-block sums; returns their sum */
  double (*exp_where)(const float *x, const float *e, int32_t n, float m, float s, float cut, float *out, float *blocks);
  /* typical's band search over e: the lanes of zones A = [b0, b1] and
     B = [b2, b3] marked in ma / mb (16-bit halves of bit words, lane i:
     bit i % 16 of half i / 16, (n + 31) / 32 * 2 halves), [b0, b3]
     summed (with stats also counted; ms__zone_out; floor mode: all
     above b1); with zero_out e is zeroed outside [b0, b3]; cum (or
     NULL): what is summed before each MS__BLOCK, as core_mass sums it
     (cum[b] for block b, the whole at cum[nb]) */
  void (*zones)(float *e, int32_t n, const float bounds[4], int zero_out, int stats, uint16_t *ma, uint16_t *mb,
                double *cum, ms__zone_out *o);
  /* exp_sum writing the weights, plus the sum of e * (x - m) * s; with
     marks, the lanes whose weight is >= cut marked (as zones) and one lane
     in 16 sampled: its (x - m) * s into sy and weight into se, *n_sample
     of them ((n + 15) / 16 room each); and the last of each 16 of those
     again into sy1 / se1 (*n_sample1; (n + 255) / 256 room each) */
  double (*exp_sum_y)(const float *x, int32_t n, const uint32_t *enable, float m, float s, float *out, double *ysum,
                      float cut, uint16_t *marks, float *sy, float *se, float *sy1, float *se1, int32_t *n_sample,
                      int32_t *n_sample1);
  /* the positions marked (as zones) over a row of n, ascending, into out,
     src's values there into vals, their sum into *sum; nz: scratch for
     (n + 31) / 32 entries */
  int32_t (*expand_bits)(const uint16_t *marks, int32_t n, int32_t *nz, const float *src, int32_t *out, float *vals,
                         int32_t cap, double *sum);
  /* typical's estimate: sums of w and w^2 over the samples with
     0 < w < wmax, and over those with |y - yc| < lo; the indices of those
     within [lo, hi) listed (room for n + 16), sums[4]: their largest
     |y - yc| (hi = inf only; else 0); returns how many */
  int32_t (*typ_window)(const float *y, const float *w, int32_t n, float yc, float wmax, float lo, float hi,
                        double sums[5], int32_t *ids);
  /* exp(x) of one argument, bit for bit what exp_sum's lanes compute:
     every weight outside the kernels (touched ids) comes from it */
  float (*exp1)(float x);
} ms__kernels;

MS__FORCEINLINE uint32_t ms__enable_bits(const uint32_t *enable, int32_t i, int w) {
  /* i is a multiple of w and w divides 32, so the lanes sit in one word */
  uint32_t word = enable[i >> 5] >> (i & 31);
  return w == 32 ? word : (word & ((1u << w) - 1u));
}
#define MS__ENABLED(enable, i) (!(enable) || (((enable)[(i) >> 5] >> ((i) & 31)) & 1u))

/* Bit count without the instruction: code outside the kernels is built
   for the baseline ISA, where __builtin_popcount becomes a library call. */
MS__FORCEINLINE int ms__popcount_sw(uint32_t v) {
  v = v - ((v >> 1) & 0x55555555u);
  v = (v & 0x33333333u) + ((v >> 2) & 0x33333333u);
  return (int)((((v + (v >> 4)) & 0x0F0F0F0Fu) * 0x01010101u) >> 24);
}
#if defined(_MSC_VER) && !defined(__clang__)
MS__PRIVATE int ms__ctz(unsigned v) { unsigned long i; _BitScanForward(&i, v); return (int)i; }
#define ms__popcount(v) ms__popcount_sw(v)
#else
#define ms__ctz(v) __builtin_ctz(v)
#define ms__popcount(v) __builtin_popcount(v)
#endif
