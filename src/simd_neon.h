/* ---- SIMD layer: NEON (AArch64) ------------------------------------------- */
#if MS__HAVE_NEON
#define MSV_ENABLED 1
#else
#define MSV_ENABLED 0
#endif
#define MSV_NAME "neon"
#define MSV_CALL_PREP() ((void)0)
#define MSV_W 4
#define MSV_FN(name) name##_neon
#define MSV_TARGET
#define msv_f float32x4_t
#define msv_m uint32x4_t
#define MSV_LOAD(p) vld1q_f32(p)
#define MSV_STORE(p, v) vst1q_f32((p), (v))
#define MSV_SET1(x) vdupq_n_f32(x)
#define MSV_ADD(a, b) vaddq_f32(a, b)
#define MSV_SUB(a, b) vsubq_f32(a, b)
#define MSV_MUL(a, b) vmulq_f32(a, b)
#define MSV_FMA(a, b, c) vfmaq_f32(c, a, b)
#define MSV_RND(v) (v)
#define MSV_MAX(a, b) vmaxq_f32(a, b)
#define MSV_ABS(a) vabsq_f32(a)
#define MSV_MIN(a, b) vminq_f32(a, b)
#define MSV_GE(a, b) vcgeq_f32(a, b)
#define MSV_GT(a, b) vcgtq_f32(a, b)
#define MSV_LE(a, b) vcleq_f32(a, b)
#define MSV_UNORD(a, b) vmvnq_u32(vandq_u32(vceqq_f32(a, a), vceqq_f32(b, b)))
#define MSV_MAND(a, b) vandq_u32(a, b)
#define MSV_MOR(a, b) vorrq_u32(a, b)
#define MSV_MXOR(a, b) veorq_u32(a, b)
#define MSV_INR(x, lo, hi) MSV_MAND(MSV_GE(x, lo), MSV_LE(x, hi))
#if MSV_ENABLED
static inline unsigned ms__bits_neon(uint32x4_t m) {
  static const uint32_t w[4] = {1, 2, 4, 8};
  return (unsigned)vaddvq_u32(vandq_u32(m, vld1q_u32(w)));
}
static inline uint32x4_t ms__from_bits_neon(unsigned b) {
  static const uint32_t w[4] = {1, 2, 4, 8};
  uint32x4_t sel = vld1q_u32(w);
  return vceqq_u32(vandq_u32(vdupq_n_u32(b), sel), sel);
}
#endif
#define MSV_BITS(m) ms__bits_neon(m)
#define MSV_FROM_BITS(b) ms__from_bits_neon(b)
#define MSV_ADD_MASKED(acc, m, w) MSV_ADD((acc), MSV_SELZ((m), (w)))
#define MSV_SELZ(m, v) vreinterpretq_f32_u32(vandq_u32(m, vreinterpretq_u32_f32(v)))
#define MSV_POW2N(n) vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vcvtnq_s32_f32(n), vdupq_n_s32(127)), 23))
#define MSV_HSUM(v) vaddvq_f32(v)
/* lane 0 of a vector */
#define MSV_LANE0(v) vgetq_lane_f32((v), 0)
#define MSV_HMAX(v) vmaxvq_f32(v)
