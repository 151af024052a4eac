/* ---- SIMD layer: SSE2 (baseline of every x86-64 CPU) --------------------- */
#if MS__HAVE_X86_SIMD
#define MSV_ENABLED 1
#else
#define MSV_ENABLED 0
#endif
#define MSV_NAME "sse2"
#define MSV_CALL_PREP() ((void)0)
#define MSV_W 4
#define MSV_FN(name) name##_sse2
#if MS__GNU_TARGETS
#define MSV_TARGET __attribute__((target("sse2")))
#else
#define MSV_TARGET
#endif
#define msv_f __m128
#define msv_m __m128
#define MSV_LOAD(p) _mm_loadu_ps(p)
#define MSV_STORE(p, v) _mm_storeu_ps((p), (v))
#define MSV_SET1(x) _mm_set1_ps(x)
#define MSV_ADD(a, b) _mm_add_ps(a, b)
#define MSV_SUB(a, b) _mm_sub_ps(a, b)
#define MSV_MUL(a, b) _mm_mul_ps(a, b)
#define MSV_FMA(a, b, c) _mm_add_ps(_mm_mul_ps(a, b), c)
#define MSV_RND(v) (v)
#define MSV_MAX(a, b) _mm_max_ps(a, b)
#define MSV_ABS(a) _mm_and_ps(a, _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff)))
#define MSV_MIN(a, b) _mm_min_ps(a, b)
#define MSV_GE(a, b) _mm_cmpge_ps(a, b)
#define MSV_GT(a, b) _mm_cmpgt_ps(a, b)
#define MSV_LE(a, b) _mm_cmple_ps(a, b)
#define MSV_UNORD(a, b) _mm_cmpunord_ps(a, b)
#define MSV_MAND(a, b) _mm_and_ps(a, b)
#define MSV_MOR(a, b) _mm_or_ps(a, b)
#define MSV_MXOR(a, b) _mm_xor_ps(a, b)
#define MSV_INR(x, lo, hi) MSV_MAND(MSV_GE(x, lo), MSV_LE(x, hi))
#define MSV_BITS(m) ((unsigned)_mm_movemask_ps(m))
#define MSV_FROM_BITS(b) _mm_castsi128_ps(_mm_cmpeq_epi32(_mm_and_si128(_mm_set1_epi32((int)(b)), _mm_setr_epi32(1, 2, 4, 8)), _mm_setr_epi32(1, 2, 4, 8)))
#define MSV_ADD_MASKED(acc, m, w) MSV_ADD((acc), MSV_SELZ((m), (w)))
#define MSV_SELZ(m, v) _mm_and_ps(m, v)
#define MSV_POW2N(n) _mm_castsi128_ps(_mm_slli_epi32(_mm_add_epi32(_mm_cvtps_epi32(n), _mm_set1_epi32(127)), 23))
#if MSV_ENABLED
MSV_TARGET static inline float ms__hsum_sse2(__m128 v) {
  __m128 s = _mm_add_ps(v, _mm_movehl_ps(v, v));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}
MSV_TARGET static inline float ms__hmax_sse2(__m128 v) {
  __m128 s = _mm_max_ps(v, _mm_movehl_ps(v, v));
  s = _mm_max_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}
#endif
#define MSV_HSUM(v) ms__hsum_sse2(v)
/* lane 0 of a vector */
#define MSV_LANE0(v) _mm_cvtss_f32(v)
#define MSV_HMAX(v) ms__hmax_sse2(v)
