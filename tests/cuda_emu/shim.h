/* CUDA C++ shim of the CPU emulator: the keywords, built-in variables and
   intrinsics a .cu file uses, as host C++, so src/cuda/kernels.cu compiles
   unchanged with g++ (no CUDA headers). Each CUDA thread runs as a fiber
   (runtime.cpp); the warp intrinsics and __syncthreads are fiber barriers.
   Compile with -ffp-contract=off: the __f*_rn intrinsics must be single
   IEEE operations, as on the GPU, so the emulated weights are the GPU's
   (the FMA build, -ffp-contract=fast, fuses only the plain operators). */
#ifndef MS_EMU_SHIM_H
#define MS_EMU_SHIM_H

/* system headers first: the macros below would break them */
#include <math.h>
#include <stdint.h>
#include <string.h>

struct ms_emu_dim3 { unsigned x, y, z; };

/* One emulated CUDA thread (runtime.cpp owns the rest of it). */
struct ms_emu_thread_ids { ms_emu_dim3 tidx; unsigned lane, warp, linear; };

/* The running fiber's ids and the launch geometry (one launch at a time:
   the driver serialises launches). */
extern ms_emu_thread_ids *ms_emu_cur_ids;
extern ms_emu_dim3 ms_emu_block_idx, ms_emu_block_dim, ms_emu_grid_dim;

/* Warp exchanges: every lane of mask deposits (value, arg), the warp
   waits for all of them, each lane gets its result. */
enum { MS_EMU_SHFL_XOR = 1, MS_EMU_SHFL_UP, MS_EMU_SHFL_DOWN, MS_EMU_SHFL_IDX, MS_EMU_BALLOT, MS_EMU_SYNCWARP };
uint64_t ms_emu_warp_op(int op, unsigned mask, uint64_t value, int arg, int width);
void ms_emu_syncthreads(void);
/* cp.async.bulk.prefetch.L2 (kernels.cu's l2_prefetch, compiled in with
   MS_L2PF): a hint on a GPU; here it checks what the hardware requires
   (16-byte aligned, a positive multiple of 16 bytes, inside one
   allocation: the prefetch's address arithmetic) and counts. */
void ms_emu_l2_prefetch(const void *p, unsigned bytes);

#define threadIdx (ms_emu_cur_ids->tidx)
#define blockIdx ms_emu_block_idx
#define blockDim ms_emu_block_dim
#define gridDim ms_emu_grid_dim
#define warpSize 32

/* Blocks run one after another, so a function-level static is exactly the
   block's shared memory. The section lets the runtime fill all of it with
   a poison pattern before each block (a GPU's shared memory starts as
   garbage; reading it before writing then shows up as NaN / ~0). */
#define __shared__ static __attribute__((section("ms_emu_shared")))
#define __device__
#define __global__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __restrict__ __restrict

inline void __syncthreads(void) { ms_emu_syncthreads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { (void)ms_emu_warp_op(MS_EMU_SYNCWARP, mask, 0, 0, 32); }

/* Values travel through the exchange as 64 raw bits. */
template <class T> inline uint64_t ms_emu_bits(T v) {
  static_assert(sizeof(T) <= 8, "warp exchange of a type over 8 bytes");
  uint64_t b = 0;
  memcpy(&b, &v, sizeof v);
  return b;
}
template <class T> inline T ms_emu_from_bits(uint64_t b) {
  T v;
  memcpy(&v, &b, sizeof v);
  return v;
}
template <class T> inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  return ms_emu_from_bits<T>(ms_emu_warp_op(MS_EMU_SHFL_XOR, mask, ms_emu_bits(v), lane_mask, width));
}
template <class T> inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return ms_emu_from_bits<T>(ms_emu_warp_op(MS_EMU_SHFL_UP, mask, ms_emu_bits(v), (int)delta, width));
}
template <class T> inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return ms_emu_from_bits<T>(ms_emu_warp_op(MS_EMU_SHFL_DOWN, mask, ms_emu_bits(v), (int)delta, width));
}
template <class T> inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  return ms_emu_from_bits<T>(ms_emu_warp_op(MS_EMU_SHFL_IDX, mask, ms_emu_bits(v), src, width));
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
  return (unsigned)ms_emu_warp_op(MS_EMU_BALLOT, mask, pred ? 1u : 0u, 0, 32);
}
inline int __any_sync(unsigned mask, int pred) { return (__ballot_sync(mask, pred) & mask) != 0; }
inline int __all_sync(unsigned mask, int pred) { return (__ballot_sync(mask, pred) & mask) == mask; }

/* Loads that bypass L1 (one block reading what others wrote): plain
   loads here, the emulator has no caches. */
template <class T> inline T __ldcg(const T *p) { return *(const volatile T *)p; }

/* Bit and integer intrinsics. */
inline int __ffs(int x) { return x ? __builtin_ctz((unsigned)x) + 1 : 0; }
inline int __ffsll(long long x) { return x ? __builtin_ctzll((unsigned long long)x) + 1 : 0; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; i++) { r = (r << 1) | (x & 1u); x >>= 1; }
  return r;
}
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}

/* Reinterpretations. */
inline float __int_as_float(int x) { float f; memcpy(&f, &x, 4); return f; }
inline float __uint_as_float(unsigned x) { float f; memcpy(&f, &x, 4); return f; }
inline int __float_as_int(float f) { int x; memcpy(&x, &f, 4); return x; }
inline unsigned __float_as_uint(float f) { unsigned x; memcpy(&x, &f, 4); return x; }
inline double __longlong_as_double(long long x) { double d; memcpy(&d, &x, 8); return d; }
inline long long __double_as_longlong(double d) { long long x; memcpy(&x, &d, 8); return x; }

/* Round-to-nearest single operations, never fused with their neighbours:
   the empty asm makes each operand and result a value the compiler must
   hold in a register, so even the FMA build of the emulator (which lets
   the compiler contract plain a * b + c, as NVRTC does on the GPU) keeps
   these as separate roundings, as CUDA guarantees for __f*_rn. */
#if defined(__x86_64__) || defined(__i386__)
#  define MS_EMU_OPAQUE(v) __asm__("" : "+x"(v))
#elif defined(__aarch64__)
#  define MS_EMU_OPAQUE(v) __asm__("" : "+w"(v))
#else
#  define MS_EMU_OPAQUE(v) __asm__("" : "+m"(v))
#endif
template <class T> inline T ms_emu_op(T a, T b, char op) {
  MS_EMU_OPAQUE(a);
  MS_EMU_OPAQUE(b);
  T r = op == '+' ? a + b : op == '-' ? a - b : op == '*' ? a * b : a / b;
  MS_EMU_OPAQUE(r);
  return r;
}
inline float __fadd_rn(float a, float b) { return ms_emu_op(a, b, '+'); }
inline float __fsub_rn(float a, float b) { return ms_emu_op(a, b, '-'); }
inline float __fmul_rn(float a, float b) { return ms_emu_op(a, b, '*'); }
inline float __fdiv_rn(float a, float b) { return ms_emu_op(a, b, '/'); }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline double __dadd_rn(double a, double b) { return ms_emu_op(a, b, '+'); }
inline double __dsub_rn(double a, double b) { return ms_emu_op(a, b, '-'); }
inline double __dmul_rn(double a, double b) { return ms_emu_op(a, b, '*'); }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline float __frcp_rn(float a) { return ms_emu_op(1.0f, a, '/'); }
/* The fast exp: the GPU's is ex2.approx of x * log2(e), within a few ulp;
   the host's expf stands in (results differ in the last bits). */
inline float __expf(float x) { return expf(x); }
/* ex2.approx.ftz.f32 (kernels.cu's ms_ex2_ftz, inline PTX there): the
   host's exp2f, subnormal results flushed to 0. */
inline float ms_ex2_ftz(float x) { const float y = exp2f(x); return y < 1.17549435e-38f ? 0.0f : y; }
inline float __fsqrt_rn(float a) { return sqrtf(a); }
/* float to u64, rounded to nearest even (cvt.rni.u64.f32) */
inline unsigned long long __float2ull_rn(float x) { return (unsigned long long)llrintf(x); }

/* CUDA's min / max overloads (mixed signedness compares unsigned). */
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline unsigned min(int a, unsigned b) { return min((unsigned)a, b); }
inline unsigned max(int a, unsigned b) { return max((unsigned)a, b); }
inline unsigned min(unsigned a, int b) { return min(a, (unsigned)b); }
inline unsigned max(unsigned a, int b) { return max(a, (unsigned)b); }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }

/* Atomics: one fiber runs at a time and never switches inside an atomic,
   so a plain read-modify-write is atomic. They return the old value. In
   the race check (MS_EMU_TSAN) they are the compiler's relaxed atomics,
   which ThreadSanitizer sees as atomic (and as ordering nothing), as a
   GPU's atomics are. */
#ifdef MS_EMU_TSAN
/* The check across blocks (runtime.cpp, MYSAMPLE_CUDA_EMU_RACE=blocks):
   a global atomic acquires what every __threadfence released */
void ms_emu_race_atomic(const void *p);
void ms_emu_race_fence(void);
#define MS_EMU_ATOMIC(name, T, expr) \
  inline T name(T *p, T v) { \
    T old, nw; \
    __atomic_load(p, &old, __ATOMIC_RELAXED); \
    do { nw = (expr); } while (!__atomic_compare_exchange(p, &old, &nw, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)); \
    ms_emu_race_atomic(p); \
    return old; \
  }
#define MS_EMU_CAS(T) \
  inline T atomicCAS(T *p, T cmp, T v) { \
    __atomic_compare_exchange(p, &cmp, &v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED); \
    ms_emu_race_atomic(p); \
    return cmp; \
  }
#else
#define MS_EMU_ATOMIC(name, T, expr) \
  inline T name(T *p, T v) { T old = *p; *p = (expr); return old; }
#define MS_EMU_CAS(T) \
  inline T atomicCAS(T *p, T cmp, T v) { T old = *p; if (old == cmp) *p = v; return old; }
#endif
MS_EMU_ATOMIC(atomicAdd, int, old + v)
MS_EMU_ATOMIC(atomicAdd, unsigned, old + v)
MS_EMU_ATOMIC(atomicAdd, unsigned long long, old + v)
MS_EMU_ATOMIC(atomicAdd, float, old + v)
MS_EMU_ATOMIC(atomicAdd, double, old + v)
MS_EMU_ATOMIC(atomicSub, int, old - v)
MS_EMU_ATOMIC(atomicSub, unsigned, old - v)
MS_EMU_ATOMIC(atomicMin, int, v < old ? v : old)
MS_EMU_ATOMIC(atomicMin, unsigned, v < old ? v : old)
MS_EMU_ATOMIC(atomicMin, long long, v < old ? v : old)
MS_EMU_ATOMIC(atomicMin, unsigned long long, v < old ? v : old)
MS_EMU_ATOMIC(atomicMax, int, v > old ? v : old)
MS_EMU_ATOMIC(atomicMax, unsigned, v > old ? v : old)
MS_EMU_ATOMIC(atomicMax, long long, v > old ? v : old)
MS_EMU_ATOMIC(atomicMax, unsigned long long, v > old ? v : old)
MS_EMU_ATOMIC(atomicOr, int, old | v)
MS_EMU_ATOMIC(atomicOr, unsigned, old | v)
MS_EMU_ATOMIC(atomicOr, unsigned long long, old | v)
MS_EMU_ATOMIC(atomicAnd, int, old & v)
MS_EMU_ATOMIC(atomicAnd, unsigned, old & v)
MS_EMU_ATOMIC(atomicAnd, unsigned long long, old & v)
MS_EMU_ATOMIC(atomicXor, int, old ^ v)
MS_EMU_ATOMIC(atomicXor, unsigned, old ^ v)
MS_EMU_ATOMIC(atomicExch, int, v)
MS_EMU_ATOMIC(atomicInc, unsigned, old >= v ? 0u : old + 1u)
MS_EMU_ATOMIC(atomicExch, unsigned, v)
MS_EMU_ATOMIC(atomicExch, float, v)
MS_EMU_CAS(int)
MS_EMU_CAS(unsigned)
MS_EMU_CAS(unsigned long long)
#undef MS_EMU_ATOMIC
#undef MS_EMU_CAS
/* Fences order memory between concurrent threads; fibers are sequential.
   The race check across blocks sees a __threadfence as a release (of
   everything the thread did before it) that any later global atomic
   acquires: so a block's writes that another block reads once an atomic
   count says they are done must come before a fence. */
#ifdef MS_EMU_TSAN
inline void __threadfence(void) { ms_emu_race_fence(); }
#else
inline void __threadfence(void) {}
#endif
inline void __threadfence_block(void) {}

/* A kernel as the driver sees it: its name (the extern "C" symbol), the
   __launch_bounds__ limit, and an entry that unpacks cuLaunchKernel's
   argument pointers into a call. */
struct ms_emu_kernel {
  const char *name;
  unsigned max_threads;
  int n_params;
  const unsigned *param_sizes;
  void (*entry)(void *const *params);
};

template <int...> struct ms_emu_seq {};
template <int N, int... I> struct ms_emu_make_seq : ms_emu_make_seq<N - 1, N - 1, I...> {};
template <int... I> struct ms_emu_make_seq<0, I...> { typedef ms_emu_seq<I...> type; };

template <class F, F fn> struct ms_emu_invoker;
template <class... P, void (*fn)(P...)> struct ms_emu_invoker<void (*)(P...), fn> {
  static const int n = (int)sizeof...(P);
  static const unsigned *sizes() {
    static const unsigned s[sizeof...(P) + 1] = { (unsigned)sizeof(P)..., 0u };
    return s;
  }
  template <int... I> static void call_seq(void *const *params, ms_emu_seq<I...>) {
    (void)params;
    fn(*(P *)params[I]...);
  }
  static void call(void *const *params) { call_seq(params, typename ms_emu_make_seq<(int)sizeof...(P)>::type()); }
};
#define MS_EMU_KERNEL_ENTRY(name, bound) \
  { #name, (unsigned)(bound), ms_emu_invoker<decltype(&name), &name>::n, \
    ms_emu_invoker<decltype(&name), &name>::sizes(), &ms_emu_invoker<decltype(&name), &name>::call }

/* Each kernel translation unit registers its table (a static constructor). */
void ms_emu_register_kernels(const ms_emu_kernel *k, int n);

#endif
