/* ---- SIMD layer: AVX2 + FMA ----------------------------------------------- */
#if MS__HAVE_X86_SIMD
#define MSV_ENABLED 1
#else
#define MSV_ENABLED 0
#endif
#define MSV_NAME "avx2"
#define MSV_W 8
#define MSV_FN(name) name##_avx2
#if MS__GNU_TARGETS
#define MSV_TARGET __attribute__((target("avx2,fma")))
#else
#define MSV_TARGET
#endif
#define msv_f __m256
#define msv_m __m256
#define MSV_LOAD(p) _mm256_loadu_ps(p)
#define MSV_STORE(p, v) _mm256_storeu_ps((p), (v))
#define MSV_SET1(x) _mm256_set1_ps(x)
#define MSV_ADD(a, b) _mm256_add_ps(a, b)
#define MSV_SUB(a, b) _mm256_sub_ps(a, b)
#define MSV_MUL(a, b) _mm256_mul_ps(a, b)
#define MSV_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define MSV_MAX(a, b) _mm256_max_ps(a, b)
#define MSV_MIN(a, b) _mm256_min_ps(a, b)
#define MSV_GE(a, b) _mm256_cmp_ps(a, b, _CMP_GE_OQ)
#define MSV_GT(a, b) _mm256_cmp_ps(a, b, _CMP_GT_OQ)
#define MSV_LE(a, b) _mm256_cmp_ps(a, b, _CMP_LE_OQ)
#define MSV_UNORD(a, b) _mm256_cmp_ps(a, b, _CMP_UNORD_Q)
#define MSV_MAND(a, b) _mm256_and_ps(a, b)
#define MSV_MOR(a, b) _mm256_or_ps(a, b)
#define MSV_BITS(m) ((unsigned)_mm256_movemask_ps(m))
#define MSV_FROM_BITS(b) _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)(b)), _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128)), _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128)))
#define MSV_SELZ(m, v) _mm256_and_ps(m, v)
#define MSV_POW2N(n) _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23))
#if MSV_ENABLED
MSV_TARGET static inline float ms__hsum_avx2(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}
MSV_TARGET static inline float ms__hmax_avx2(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}
#endif
#define MSV_HSUM(v) ms__hsum_avx2(v)
#define MSV_HMAX(v) ms__hmax_avx2(v)
