/* ---- SIMD layer: AVX2 + FMA ----------------------------------------------- */
#if MS__HAVE_X86_SIMD
#define MSV_ENABLED 1
#else
#define MSV_ENABLED 0
#endif
#define MSV_NAME "avx2"
/* scalar code called from vector loops must not run with dirty upper
   halves (SSE/AVX transition penalties): clear them first */
#define MSV_CALL_PREP() _mm256_zeroupper()
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
#define MSV_RND(v) (v)
#define MSV_MAX(a, b) _mm256_max_ps(a, b)
#define MSV_ABS(a) _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)))
#define MSV_MIN(a, b) _mm256_min_ps(a, b)
#define MSV_GE(a, b) _mm256_cmp_ps(a, b, _CMP_GE_OQ)
#define MSV_GT(a, b) _mm256_cmp_ps(a, b, _CMP_GT_OQ)
#define MSV_LE(a, b) _mm256_cmp_ps(a, b, _CMP_LE_OQ)
#define MSV_UNORD(a, b) _mm256_cmp_ps(a, b, _CMP_UNORD_Q)
#define MSV_MAND(a, b) _mm256_and_ps(a, b)
#define MSV_MOR(a, b) _mm256_or_ps(a, b)
#define MSV_MXOR(a, b) _mm256_xor_ps(a, b)
#define MSV_INR(x, lo, hi) MSV_MAND(MSV_GE(x, lo), MSV_LE(x, hi))
#define MSV_BITS(m) ((unsigned)_mm256_movemask_ps(m))
#define MSV_FROM_BITS(b) _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)(b)), _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128)), _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128)))
#define MSV_ADD_MASKED(acc, m, w) MSV_ADD((acc), MSV_SELZ((m), (w)))
#define MSV_SELZ(m, v) _mm256_and_ps(m, v)
/* branch-free gather of the lanes of m: a 256-entry table of packed
   4-bit lane indices drives one permute (no BMI2, which is slow on
   some AMD parts) */
#define MSV_HAVE_COMPRESS 1
static const uint32_t ms__compress_lut_avx2[256] = {
0x00000000u, 0x00000000u, 0x00000001u, 0x00000010u, 0x00000002u, 0x00000020u, 0x00000021u, 0x00000210u,
0x00000003u, 0x00000030u, 0x00000031u, 0x00000310u, 0x00000032u, 0x00000320u, 0x00000321u, 0x00003210u,
0x00000004u, 0x00000040u, 0x00000041u, 0x00000410u, 0x00000042u, 0x00000420u, 0x00000421u, 0x00004210u,
0x00000043u, 0x00000430u, 0x00000431u, 0x00004310u, 0x00000432u, 0x00004320u, 0x00004321u, 0x00043210u,
0x00000005u, 0x00000050u, 0x00000051u, 0x00000510u, 0x00000052u, 0x00000520u, 0x00000521u, 0x00005210u,
0x00000053u, 0x00000530u, 0x00000531u, 0x00005310u, 0x00000532u, 0x00005320u, 0x00005321u, 0x00053210u,
0x00000054u, 0x00000540u, 0x00000541u, 0x00005410u, 0x00000542u, 0x00005420u, 0x00005421u, 0x00054210u,
0x00000543u, 0x00005430u, 0x00005431u, 0x00054310u, 0x00005432u, 0x00054320u, 0x00054321u, 0x00543210u,
0x00000006u, 0x00000060u, 0x00000061u, 0x00000610u, 0x00000062u, 0x00000620u, 0x00000621u, 0x00006210u,
0x00000063u, 0x00000630u, 0x00000631u, 0x00006310u, 0x00000632u, 0x00006320u, 0x00006321u, 0x00063210u,
0x00000064u, 0x00000640u, 0x00000641u, 0x00006410u, 0x00000642u, 0x00006420u, 0x00006421u, 0x00064210u,
0x00000643u, 0x00006430u, 0x00006431u, 0x00064310u, 0x00006432u, 0x00064320u, 0x00064321u, 0x00643210u,
0x00000065u, 0x00000650u, 0x00000651u, 0x00006510u, 0x00000652u, 0x00006520u, 0x00006521u, 0x00065210u,
0x00000653u, 0x00006530u, 0x00006531u, 0x00065310u, 0x00006532u, 0x00065320u, 0x00065321u, 0x00653210u,
0x00000654u, 0x00006540u, 0x00006541u, 0x00065410u, 0x00006542u, 0x00065420u, 0x00065421u, 0x00654210u,
0x00006543u, 0x00065430u, 0x00065431u, 0x00654310u, 0x00065432u, 0x00654320u, 0x00654321u, 0x06543210u,
0x00000007u, 0x00000070u, 0x00000071u, 0x00000710u, 0x00000072u, 0x00000720u, 0x00000721u, 0x00007210u,
0x00000073u, 0x00000730u, 0x00000731u, 0x00007310u, 0x00000732u, 0x00007320u, 0x00007321u, 0x00073210u,
0x00000074u, 0x00000740u, 0x00000741u, 0x00007410u, 0x00000742u, 0x00007420u, 0x00007421u, 0x00074210u,
0x00000743u, 0x00007430u, 0x00007431u, 0x00074310u, 0x00007432u, 0x00074320u, 0x00074321u, 0x00743210u,
0x00000075u, 0x00000750u, 0x00000751u, 0x00007510u, 0x00000752u, 0x00007520u, 0x00007521u, 0x00075210u,
0x00000753u, 0x00007530u, 0x00007531u, 0x00075310u, 0x00007532u, 0x00075320u, 0x00075321u, 0x00753210u,
0x00000754u, 0x00007540u, 0x00007541u, 0x00075410u, 0x00007542u, 0x00075420u, 0x00075421u, 0x00754210u,
0x00007543u, 0x00075430u, 0x00075431u, 0x00754310u, 0x00075432u, 0x00754320u, 0x00754321u, 0x07543210u,
0x00000076u, 0x00000760u, 0x00000761u, 0x00007610u, 0x00000762u, 0x00007620u, 0x00007621u, 0x00076210u,
0x00000763u, 0x00007630u, 0x00007631u, 0x00076310u, 0x00007632u, 0x00076320u, 0x00076321u, 0x00763210u,
0x00000764u, 0x00007640u, 0x00007641u, 0x00076410u, 0x00007642u, 0x00076420u, 0x00076421u, 0x00764210u,
0x00007643u, 0x00076430u, 0x00076431u, 0x00764310u, 0x00076432u, 0x00764320u, 0x00764321u, 0x07643210u,
0x00000765u, 0x00007650u, 0x00007651u, 0x00076510u, 0x00007652u, 0x00076520u, 0x00076521u, 0x00765210u,
0x00007653u, 0x00076530u, 0x00076531u, 0x00765310u, 0x00076532u, 0x00765320u, 0x00765321u, 0x07653210u,
0x00007654u, 0x00076540u, 0x00076541u, 0x00765410u, 0x00076542u, 0x00765420u, 0x00765421u, 0x07654210u,
0x00076543u, 0x00765430u, 0x00765431u, 0x07654310u, 0x00765432u, 0x07654320u, 0x07654321u, 0x76543210u
};
/* the permutation that packs the lanes of m to the front */
#define MS__AVX2_SEL(m) \
  _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)ms__compress_lut_avx2[MSV_BITS(m)]), \
                                     _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)), _mm256_set1_epi32(15))
#define MSV_COMPRESS(ids, vals, m, x, base) do { \
    __m256i sel_ = MS__AVX2_SEL(m); \
    _mm256_storeu_ps((vals), _mm256_permutevar8x32_ps((x), sel_)); \
    _mm256_storeu_si256((__m256i *)(void *)(ids), _mm256_add_epi32(_mm256_set1_epi32(base), sel_)); \
  } while (0)
#define MSV_COMPRESS_VALS(vals, m, x) _mm256_storeu_ps((vals), _mm256_permutevar8x32_ps((x), MS__AVX2_SEL(m)))
#define MSV_COMPRESS_IDS(ids, m, base) \
  _mm256_storeu_si256((__m256i *)(void *)(ids), _mm256_add_epi32(_mm256_set1_epi32(base), MS__AVX2_SEL(m)))
#define MSV_IDX_T __m256i
#define MSV_IDX_INIT(base) _mm256_add_epi32(_mm256_set1_epi32(base), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define MSV_IDX_NEXT(v) _mm256_add_epi32((v), _mm256_set1_epi32(8))
#define MSV_COMPRESS_IDX(ids, m, v) \
  _mm256_storeu_si256((__m256i *)(void *)(ids), _mm256_permutevar8x32_epi32((v), MS__AVX2_SEL(m)))
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
/* lane 0 of a vector */
#define MSV_LANE0(v) _mm_cvtss_f32(_mm256_castps256_ps128(v))
#define MSV_HMAX(v) ms__hmax_avx2(v)
