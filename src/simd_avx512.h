/* ---- SIMD layer: AVX-512F ------------------------------------------------- */
#if MS__HAVE_X86_SIMD && (defined(_MSC_VER) || (defined(__clang__) && __clang_major__ >= 8) || (!defined(__clang__) && __GNUC__ >= 7))
#define MSV_ENABLED 1
#define MS__HAVE_AVX512 1
#else
#define MSV_ENABLED 0
#define MS__HAVE_AVX512 0
#endif
#define MSV_NAME "avx512"
/* scalar code called from vector loops must not run with dirty upper
   halves (SSE/AVX transition penalties): clear them first */
#define MSV_CALL_PREP() _mm256_zeroupper()
#define MSV_W 16
#define MSV_FN(name) name##_avx512
#if MS__GNU_TARGETS
#define MSV_TARGET __attribute__((target("avx512f")))
#else
#define MSV_TARGET
#endif
#define msv_f __m512
#define msv_m __mmask16
#define MSV_LOAD(p) _mm512_loadu_ps(p)
#define MSV_STORE(p, v) _mm512_storeu_ps((p), (v))
#define MSV_SET1(x) _mm512_set1_ps(x)
#define MSV_ADD(a, b) _mm512_add_ps(a, b)
#define MSV_SUB(a, b) _mm512_sub_ps(a, b)
#define MSV_MUL(a, b) _mm512_mul_ps(a, b)
#define MSV_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define MSV_RND(v) (v)
#define MSV_MAX(a, b) _mm512_max_ps(a, b)
#define MSV_ABS(a) _mm512_castsi512_ps(_mm512_and_epi32(_mm512_castps_si512(a), _mm512_set1_epi32(0x7fffffff)))
#define MSV_MIN(a, b) _mm512_min_ps(a, b)
#define MSV_GE(a, b) _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ)
#define MSV_GT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ)
#define MSV_LE(a, b) _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ)
#define MSV_UNORD(a, b) _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q)
#define MSV_MAND(a, b) ((__mmask16)((a) & (b)))
#define MSV_MOR(a, b) ((__mmask16)((a) | (b)))
#define MSV_MXOR(a, b) ((__mmask16)((a) ^ (b)))
/* lo <= x <= hi for non-negative, non-NaN floats (weights), whose bit
   patterns order as unsigned integers: one subtraction and one unsigned
   compare instead of two compares (compares into a mask issue on one port) */
#define MSV_INR(x, lo, hi) _mm512_cmple_epu32_mask(_mm512_sub_epi32(_mm512_castps_si512(x), _mm512_castps_si512(lo)), \
                                                   _mm512_sub_epi32(_mm512_castps_si512(hi), _mm512_castps_si512(lo)))
#define MSV_BITS(m) ((unsigned)(m))
#define MSV_FROM_BITS(b) ((__mmask16)(b))
#define MSV_ADD_MASKED(acc, m, w) _mm512_mask_add_ps((acc), (m), (acc), (w))
/* branch-free gather of the lanes of m: values and their ids (register
   compress + a full store: the memory form of vcompress is microcoded) */
#define MSV_HAVE_COMPRESS 1
#define MSV_COMPRESS(ids, vals, m, x, base) do { \
    _mm512_storeu_ps((vals), _mm512_maskz_compress_ps((m), (x))); \
    _mm512_storeu_si512((void *)(ids), _mm512_maskz_compress_epi32((m), _mm512_add_epi32(_mm512_set1_epi32(base), _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)))); \
  } while (0)
/* the values alone (a selection that wants only the threshold) */
#define MSV_COMPRESS_VALS(vals, m, x) _mm512_storeu_ps((vals), _mm512_maskz_compress_ps((m), (x)))
/* the ids alone (the values are read back later where few are kept) */
#define MSV_COMPRESS_IDS(ids, m, base) \
  _mm512_storeu_si512((void *)(ids), _mm512_maskz_compress_epi32((m), _mm512_add_epi32(_mm512_set1_epi32(base), _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))))
/* the same from a vector of ids carried along a loop (MSV_IDX_INIT at
   the first lane, MSV_IDX_NEXT a vector on): no broadcast per vector,
   which shared the compress's port */
#define MSV_IDX_T __m512i
#define MSV_IDX_INIT(base) _mm512_add_epi32(_mm512_set1_epi32(base), _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
#define MSV_IDX_NEXT(v) _mm512_add_epi32((v), _mm512_set1_epi32(16))
#define MSV_COMPRESS_IDX(ids, m, v) _mm512_storeu_si512((void *)(ids), _mm512_maskz_compress_epi32((m), (v)))
#define MSV_SELZ(m, v) _mm512_maskz_mov_ps(m, v)
/* the indices k0 + j of the nonzero 32-bit words among the 16 at p (any
   type) appended to nz at *nn */
#define MSV_HAVE_LIST_NONZERO 1
#define MSV_LIST_NONZERO16(p, k0, nz, nn) do { \
    __m512i w_ = _mm512_loadu_si512((const void *)(p)); \
    __mmask16 m_ = _mm512_test_epi32_mask(w_, w_); \
    _mm512_storeu_si512((void *)((nz) + *(nn)), _mm512_maskz_compress_epi32(m_, _mm512_add_epi32(_mm512_set1_epi32(k0), \
                        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)))); \
    *(nn) += ms__popcount((unsigned)m_); \
  } while (0)
#define MSV_POW2N(n) _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23))
#define MSV_HSUM(v) _mm512_reduce_add_ps(v)
/* lane 0 of a vector */
#define MSV_LANE0(v) _mm_cvtss_f32(_mm512_castps512_ps128(v))
#define MSV_HMAX(v) _mm512_reduce_max_ps(v)
