/* Kernels that test the CPU emulator itself (tests/cuda_emu/test_emu.c):
   the warp intrinsics and barriers against known answers, and broken
   kernels whose launches must fail with a message instead of hanging.
   Plain CUDA: the emulator compiles it with its shim, like kernels.cu. */

/* Per thread t of a block of n (n a multiple of 32): out[t] = inclusive
   prefix sum of t over its warp (__shfl_up_sync); out[n + t] = the warp's
   sum (__shfl_xor_sync); out[2n + t] = the ballot of (lane % 3 == 0);
   out[3n + t] = lane 7's t (__shfl_sync); out[4n + t] = the next lane's t
   (__shfl_down_sync, the last lane keeps its own); out[5n + t] = the block
   total of t (shared memory and __syncthreads); out[6n + t] = the sum of
   t over the 8 lanes of its width-8 group (__shfl_xor_sync, width 8). */
extern "C" __global__ void emu_t_intrinsics(unsigned *out) {
  __shared__ unsigned part[32];
  const unsigned t = threadIdx.x, n = blockDim.x, lane = t & 31;
  unsigned v = t;
  for (int o = 1; o < 32; o <<= 1) {
    unsigned x = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= (unsigned)o) v += x;
  }
  out[t] = v;
  unsigned s = t;
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  out[n + t] = s;
  out[2 * n + t] = __ballot_sync(0xffffffffu, lane % 3 == 0);
  out[3 * n + t] = __shfl_sync(0xffffffffu, t, 7);
  out[4 * n + t] = __shfl_down_sync(0xffffffffu, t, 1);
  if (lane == 0) part[t >> 5] = s;
  __syncthreads();
  unsigned tot = 0;
  for (unsigned w = 0; w < n / 32; w++) tot += part[w];
  out[5 * n + t] = tot;
  unsigned g = t;
  for (int o = 4; o > 0; o >>= 1) g += __shfl_xor_sync(0xffffffffu, g, o, 8);
  out[6 * n + t] = g;
}

/* Block (x, y) of the grid writes its coordinates and dimensions. */
extern "C" __global__ void emu_t_grid(unsigned *out) {
  if (threadIdx.x == 0) {
    unsigned b = blockIdx.y * gridDim.x + blockIdx.x;
    out[4 * b] = blockIdx.x; out[4 * b + 1] = blockIdx.y;
    out[4 * b + 2] = gridDim.x * 1000u + gridDim.y; out[4 * b + 3] = blockDim.x;
  }
}

/* A thread exits before a __syncthreads the others reach. */
extern "C" __global__ void emu_t_exit_before_barrier(unsigned *out) {
  if (threadIdx.x == 5) return;
  __syncthreads();
  out[threadIdx.x] = 1u;
}

/* Only the first warp reaches the barrier. */
extern "C" __global__ void emu_t_divergent_barrier(unsigned *out) {
  if (threadIdx.x < 32) __syncthreads();
  out[threadIdx.x] = 1u;
}

/* A lane exits while its warp shuffles with a full mask. */
extern "C" __global__ void emu_t_exit_in_shuffle(unsigned *out) {
  if (threadIdx.x == 3) return;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, threadIdx.x, 1);
}

/* Lane 0 waits at __syncthreads while the rest of its warp shuffles. */
extern "C" __global__ void emu_t_barrier_vs_shuffle(unsigned *out) {
  if ((threadIdx.x & 31) == 0) __syncthreads();
  else out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, threadIdx.x, 1);
}

/* A missing __syncthreads: thread 0 publishes a value the others read in
   the same barrier interval. Right only when thread 0 happens to run first
   (the default schedule); the random schedule exposes it. */
extern "C" __global__ void emu_t_missing_barrier(unsigned *out) {
  __shared__ unsigned v;
  if (threadIdx.x == 0) v = 42u + blockIdx.x;   /* (not a constant: clang would keep only "was it stored") */
  out[threadIdx.x] = v;
}

/* Shared memory read before anything wrote it: the emulator's poison. */
extern "C" __global__ void emu_t_uninit_shared(unsigned *out) {
  __shared__ unsigned s[4];
  if (threadIdx.x < 4) out[threadIdx.x] = s[threadIdx.x];
  /* a store that never runs: without any, clang folds the loads to 0 */
  if (gridDim.x == 12345u) s[threadIdx.x & 3] = threadIdx.x;
}

/* The same in a template function (gcc leaves its static in .bss, not in
   the shared section, unless the link moves it: tests/cuda_emu/shared.ld);
   it then writes 7s, which a second launch must not see either. */
template <class T> __device__ T emu_t_tpl_shared_read(unsigned i) {
  __shared__ T s[4];
  const T v = s[i];
  __syncthreads();
  if (i == threadIdx.x) s[i] = (T)7;   /* (one writer each) */
  return v;
}
extern "C" __global__ void emu_t_uninit_shared_tpl(unsigned *out) {
  const unsigned v = emu_t_tpl_shared_read<unsigned>(threadIdx.x & 3u);
  if (threadIdx.x < 4) out[threadIdx.x] = v;
}

/* A kernel with a launch bound of 64 threads. */
extern "C" __global__ void __launch_bounds__(64) emu_t_bounded(unsigned *out) {
  out[threadIdx.x] = threadIdx.x + 1u;
}

/* Two arguments of different sizes, copied at launch. */
struct emu_t_pair { unsigned long long a; unsigned b, c; };
extern "C" __global__ void emu_t_args(unsigned *out, emu_t_pair p) {
  if (threadIdx.x == 0) { out[0] = (unsigned)p.a; out[1] = (unsigned)(p.a >> 32); out[2] = p.b; out[3] = p.c; }
}

/* Thread 0 asks L2 for [p + off, p + off + bytes) (cp.async.bulk.prefetch.L2,
   as kernels.cu's l2_prefetch: the emulator checks the range). */
extern "C" __global__ void emu_t_prefetch(unsigned char *p, unsigned off, unsigned bytes) {
  if (threadIdx.x == 0) ms_emu_l2_prefetch(p + off, bytes);
}

/* A row's blocks hand their partials to the last of them to arrive (the
   kernels' protocol; the row's blocks along y, as the kernels' chunks):
   block b's thread 0 writes out[2 + b], counts its arrival in out[0], and
   the last block writes their sum to out[1]. On a
   GPU the count may become visible before the partial unless a
   __threadfence comes between them: the race check across blocks
   (MYSAMPLE_CUDA_EMU_RACE=blocks) finds the unfenced kernel's race and
   none in the fenced one. The two are written out, not one helper, so
   that a report names the kernel. */
extern "C" __global__ void emu_t_fenced_partials(unsigned *out) {
  __shared__ unsigned last;
  if (threadIdx.x == 0) {
    out[2 + blockIdx.y] = blockIdx.y + 1u;
    __threadfence();
    last = atomicAdd(&out[0], 1u) == gridDim.y - 1u;
  }
  __syncthreads();
  if (last && threadIdx.x == 0) {
    unsigned s = 0u;
    for (unsigned b = 0; b < gridDim.y; b++) s += out[2 + b];
    out[1] = s;
  }
}
extern "C" __global__ void emu_t_unfenced_partials(unsigned *out) {
  __shared__ unsigned last;
  if (threadIdx.x == 0) {
    out[2 + blockIdx.y] = blockIdx.y + 1u;
    last = atomicAdd(&out[0], 1u) == gridDim.y - 1u;
  }
  __syncthreads();
  if (last && threadIdx.x == 0) {
    unsigned s = 0u;
    for (unsigned b = 0; b < gridDim.y; b++) s += out[2 + b];
    out[1] = s;
  }
}
