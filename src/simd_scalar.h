/* ---- SIMD layer: scalar (always available; the reference) ---------------- */
#define MSV_ENABLED 1
#define MSV_NAME "scalar"
#define MSV_CALL_PREP() ((void)0)
#define MSV_W 1
#define MSV_FN(name) name##_scalar
#define MSV_TARGET
typedef float msv_f_scalar;
typedef int msv_m_scalar;
#define msv_f msv_f_scalar
#define msv_m msv_m_scalar
#define MSV_LOAD(p) (*(p))
#define MSV_STORE(p, v) (*(p) = (v))
#define MSV_SET1(x) ((float)(x))
#define MSV_ADD(a, b) ((a) + (b))
#define MSV_SUB(a, b) ((a) - (b))
#define MSV_MUL(a, b) ((a) * (b))
#define MSV_FMA(a, b, c) ((a) * (b) + (c))
#define MSV_RND(v) MS__FLT(v) /* rounded to float (x87: see MS__FLT) */
#define MSV_MAX(a, b) ((a) > (b) ? (a) : (b))
#define MSV_ABS(a) ((a) < 0.0f ? -(a) : (a))
#define MSV_MIN(a, b) ((a) < (b) ? (a) : (b))
#define MSV_GE(a, b) ((a) >= (b))
#define MSV_GT(a, b) ((a) > (b))
#define MSV_LE(a, b) ((a) <= (b))
#define MSV_UNORD(a, b) ((a) != (a) || (b) != (b))
#define MSV_MAND(a, b) ((a) & (b))
#define MSV_MOR(a, b) ((a) | (b))
#define MSV_MXOR(a, b) ((a) ^ (b))
#define MSV_INR(x, lo, hi) MSV_MAND(MSV_GE(x, lo), MSV_LE(x, hi))
#define MSV_BITS(m) ((unsigned)(m))
#define MSV_FROM_BITS(b) ((int)((b) & 1u))
#define MSV_ADD_MASKED(acc, m, w) MSV_ADD((acc), MSV_SELZ((m), (w)))
#define MSV_SELZ(m, v) ((m) ? (v) : 0.0f)
#define MSV_HSUM(v) (v)
/* lane 0 of a vector */
#define MSV_LANE0(v) (v)
#define MSV_HMAX(v) (v)
static float ms__pow2n_scalar(float n) { union { uint32_t u; float f; } s; s.u = (uint32_t)((int32_t)n + 127) << 23; return s.f; }
#define MSV_POW2N(n) ms__pow2n_scalar(n)
