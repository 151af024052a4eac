// FlashInfer's sampling kernels, timed with the protocol of `mysample
// bench --device cuda` and tools/gpu_bench.py, for the issue's comparison
// on a GPU machine that has neither FlashInfer nor nvcc: this harness is
// compiled here (tools/flashinfer_build.sh, against the headers of the
// flashinfer-python wheel fetched from PyPI, never committed) into one
// binary that needs only the CUDA driver, and carried to the GPU.
//
// It calls the kernels FlashInfer's Python functions call, composed as
// they compose them (flashinfer/sampling.py, 0.7.2.post1), float32 logits:
//   top_p_0.9            softmax (OnlineSoftmax) + TopPSamplingFromProb
//   min_p_0.05           softmax (OnlineSoftmax) + MinPSamplingFromProb
//   top_k_50_top_p_0.95  top_k_top_p_sampling_from_logits, its default
//                        "top_k_first" fast path (k <= 256, vocab >= 65536):
//                        radix top-k of the row (TopKDispatch, sorted,
//                        deterministic) + softmax of the k values + top-p
//                        sampling over them + the id gather (torch ops in
//                        Python: a softmax over k values and a gather here);
//                        "joint" (softmax + TopKTopPSamplingFromProb, the
//                        rejection sampler) is reported as impl
//                        flashinfer_joint.
// greedy has no FlashInfer kernel (the Python bench skips it too).
// deterministic = true (the Python default); seed and offset are fixed
// scalars, the offset advancing per call as FlashInfer's generator does.
//
// Output: JSON lines with tools/gpu_bench.py's keys ("group": "cuda",
// "impl": "flashinfer", "us_per_batch", ...), which `gpu_bench.py table`
// reads beside mysample's. Usage:
//   flashinfer_bench [--batch 1,32,256] [--vocab 128256,151936]
//                    [--config NAME,...] [--reps 31] [--inner 20]
//                    [--sigma 1] [--working-set-mb 256]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <flashinfer/sampling.cuh>
#include <flashinfer/topk.cuh>

namespace fs = flashinfer::sampling;

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      fprintf(stderr, "flashinfer_bench: %s: %s (line %d)\n", #x, cudaGetErrorString(e_), \
              __LINE__);                                                               \
      return e_;                                                                       \
    }                                                                                  \
  } while (0)

static std::vector<long> parse_list(const char *s) {
  std::vector<long> v;
  while (*s) {
    char *end;
    long x = strtol(s, &end, 10);
    if (end == s) break;
    v.push_back(x);
    s = *end == ',' ? end + 1 : end;
  }
  return v;
}

static std::vector<std::string> split(const char *s) {
  std::vector<std::string> v;
  std::string cur;
  for (; *s; s++) {
    if (*s == ',') { if (!cur.empty()) v.push_back(cur); cur.clear(); }
    else cur += *s;
  }
  if (!cur.empty()) v.push_back(cur);
  return v;
}

// N(0, sigma^2) by Box-Muller from a 64-bit LCG: the distribution the
// other benches use (not their numbers).
static void fill_normal(std::vector<float> &x, float sigma, uint64_t seed) {
  uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  auto u01 = [&]() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return ((double)(s >> 11) + 0.5) * (1.0 / 9007199254740992.0);
  };
  for (size_t i = 0; i < x.size(); i += 2) {
    double r = std::sqrt(-2.0 * std::log(u01())), t = 6.283185307179586 * u01();
    x[i] = (float)(r * std::cos(t)) * sigma;
    if (i + 1 < x.size()) x[i + 1] = (float)(r * std::sin(t)) * sigma;
  }
}

// out[r] = ids[r * k + local[r]]: the fast path's gather back to vocab ids.
__global__ void gather_ids(const int32_t *ids, const int32_t *local, int32_t *out, int k, int B) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < B) {
    int j = local[r];
    out[r] = (j >= 0 && j < k) ? ids[(size_t)r * k + j] : -1;
  }
}

struct Bufs {
  float *probs = nullptr, *vals = nullptr, *pk = nullptr;
  int32_t *out = nullptr, *idx = nullptr, *local = nullptr;
  bool *valid = nullptr;
  void *sm_ws = nullptr, *rows = nullptr;
  size_t sm_ws_bytes = 1 << 20;
};

// One call of configuration `cfg` on logits x (B x V); `call` advances the
// RNG offset. Returns a CUDA error code (0 = ok).
static cudaError_t run_one(const std::string &cfg, int joint, float *x, int B, int V, Bufs &b, uint64_t call,
                           cudaStream_t st) {
  const uint64_t seed = 1234, offset = call * 64;
  if (cfg == "top_p_0.9" || cfg == "min_p_0.05" || (cfg == "top_k_50_top_p_0.95" && joint)) {
    CK(fs::OnlineSoftmax<float>(x, b.probs, B, V, nullptr, 1.0f, b.sm_ws, b.sm_ws_bytes, false, st));
    if (cfg == "top_p_0.9")
      CK((fs::TopPSamplingFromProb<float, int32_t>(b.probs, b.out, b.valid, nullptr, nullptr, B, 0.9f, V, true,
                                                   nullptr, seed, nullptr, offset, st)));
    else if (cfg == "min_p_0.05")
      CK((fs::MinPSamplingFromProb<float, int32_t>(b.probs, nullptr, b.out, b.valid, nullptr, B, 0.05f, V, true,
                                                   nullptr, seed, nullptr, offset, st)));
    else
      CK((fs::TopKTopPSamplingFromProb<float, int32_t>(b.probs, nullptr, nullptr, b.out, b.valid, nullptr, B, 50,
                                                       0.95f, V, true, nullptr, seed, nullptr, offset, st)));
    return cudaSuccess;
  }
  if (cfg == "top_k_50_top_p_0.95") {
    const int k = 50;
    CK((fs::TopKDispatch<float, int32_t>(x, b.idx, b.vals, B, k, V, (fs::RadixRowState *)b.rows, true, true,
                                         fs::TopKTieBreak::None, st, false)));
    CK(fs::OnlineSoftmax<float>(b.vals, b.pk, B, k, nullptr, 1.0f, b.sm_ws, b.sm_ws_bytes, false, st));
    CK((fs::TopPSamplingFromProb<float, int32_t>(b.pk, b.local, b.valid, nullptr, nullptr, B, 0.95f, k, true,
                                                 nullptr, seed, nullptr, offset, st)));
    gather_ids<<<(B + 255) / 256, 256, 0, st>>>(b.idx, b.local, b.out, k, B);
    CK(cudaGetLastError());
    return cudaSuccess;
  }
  return cudaErrorInvalidValue;
}

int main(int argc, char **argv) {
  std::vector<long> batches = {1, 32, 256}, vocabs = {128256, 151936};
  std::vector<std::string> configs = {"top_p_0.9", "min_p_0.05", "top_k_50_top_p_0.95"};
  int reps = 31, inner = 20;
  double sigma = 1.0, ws_mb = 256.0;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--help" || a == "-h") {
      printf("usage: flashinfer_bench [--batch 1,32,256] [--vocab 128256,151936] [--config NAME,...]\n"
             "                        [--reps 31] [--inner 20] [--sigma 1] [--working-set-mb 256]\n"
             "configs: top_p_0.9 min_p_0.05 top_k_50_top_p_0.95 (greedy: no FlashInfer kernel)\n");
      return 0;
    }
    if (!v) { fprintf(stderr, "flashinfer_bench: %s needs a value\n", a.c_str()); return 2; }
    if (a == "--batch") batches = parse_list(v);
    else if (a == "--vocab") vocabs = parse_list(v);
    else if (a == "--config") configs = split(v);
    else if (a == "--reps") reps = atoi(v);
    else if (a == "--inner") inner = atoi(v);
    else if (a == "--sigma") sigma = atof(v);
    else if (a == "--working-set-mb") ws_mb = atof(v);
    else if (a == "--copy-mb") { /* gpu_figures.sh passes its arguments to every bench */ }
    else { fprintf(stderr, "flashinfer_bench: unknown flag %s\n", a.c_str()); return 2; }
    i++;
  }
  if (reps < 1 || inner < 1 || batches.empty() || vocabs.empty()) {
    fprintf(stderr, "flashinfer_bench: bad --reps, --inner, --batch or --vocab\n");
    return 2;
  }
  cudaDeviceProp prop;
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
    fprintf(stderr, "flashinfer_bench: no CUDA device\n");
    return 3;
  }
  int drv = 0;
  cudaDriverGetVersion(&drv);
  printf("{\"group\": \"cuda_device\", \"impl\": \"flashinfer_cpp\", \"device\": \"%s\", \"sm\": %d, "
         "\"driver\": %d, \"flashinfer\": \"%s\", \"harness\": \"tools/flashinfer_bench.cu\"}\n",
         prop.name, prop.major * 10 + prop.minor, drv, FLASHINFER_BENCH_VERSION);
  fflush(stdout);

  cudaStream_t st;
  cudaEvent_t e0, e1;
  if (cudaStreamCreate(&st) != cudaSuccess || cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess) {
    fprintf(stderr, "flashinfer_bench: stream/event creation failed\n");
    return 3;
  }
  int status = 0;
  for (long V : vocabs) {
    for (long B : batches) {
      const size_t unit = (size_t)B * (size_t)V * 4;
      size_t n_units = std::max<size_t>(1, (size_t)(ws_mb * 1048576.0) / unit);
      float *big = nullptr;
      Bufs b;
      bool ok = cudaMalloc(&big, n_units * unit) == cudaSuccess && cudaMalloc(&b.probs, unit) == cudaSuccess &&
                cudaMalloc(&b.vals, (size_t)B * 256 * 4) == cudaSuccess &&
                cudaMalloc(&b.pk, (size_t)B * 256 * 4) == cudaSuccess && cudaMalloc(&b.out, (size_t)B * 4) == cudaSuccess &&
                cudaMalloc(&b.idx, (size_t)B * 256 * 4) == cudaSuccess && cudaMalloc(&b.local, (size_t)B * 4) == cudaSuccess &&
                cudaMalloc(&b.valid, (size_t)B) == cudaSuccess && cudaMalloc(&b.sm_ws, b.sm_ws_bytes) == cudaSuccess &&
                cudaMalloc(&b.rows, 1 << 20) == cudaSuccess && cudaMemset(b.rows, 0, 1 << 20) == cudaSuccess;
      if (!ok) { fprintf(stderr, "flashinfer_bench: out of device memory at B=%ld V=%ld\n", B, V); return 3; }
      {
        std::vector<float> h((size_t)B * (size_t)V);
        fill_normal(h, (float)sigma, (uint64_t)(B * 1000003 + V));
        for (size_t u = 0; u < n_units; u++)
          if (cudaMemcpy(big + u * (unit / 4), h.data(), unit, cudaMemcpyHostToDevice) != cudaSuccess) return 3;
      }
      for (const std::string &cfg : configs) {
        for (int joint = 0; joint < (cfg == "top_k_50_top_p_0.95" ? 2 : 1); joint++) {
          const char *impl = joint ? "flashinfer_joint" : "flashinfer";
          const bool known = cfg == "top_p_0.9" || cfg == "min_p_0.05" || cfg == "top_k_50_top_p_0.95";
          printf("{\"group\": \"cuda\", \"impl\": \"%s\", \"config\": \"%s\", \"batch\": %ld, \"vocab\": %ld, "
                 "\"sigma\": %g, \"device\": \"%s\", \"reps\": %d, \"inner\": %d, \"working_set_mb\": %.0f",
                 impl, cfg.c_str(), B, V, sigma, prop.name, reps, inner, n_units * unit / 1048576.0);
          if (!known) {   // greedy (no FlashInfer kernel) or a name of another bench
            printf(", \"error\": \"no FlashInfer kernel for this configuration\"}\n");
            fflush(stdout);
            continue;
          }
          uint64_t call = 0;
          cudaError_t e = run_one(cfg, joint, big, (int)B, (int)V, b, call++, st);
          std::vector<int32_t> ids((size_t)B);
          if (e == cudaSuccess) e = cudaStreamSynchronize(st);
          if (e == cudaSuccess) e = cudaMemcpy(ids.data(), b.out, (size_t)B * 4, cudaMemcpyDeviceToHost);
          if (e == cudaSuccess)
            for (long r = 0; r < B; r++)
              if (ids[r] < 0 || ids[r] >= V) e = cudaErrorInvalidValue;
          if (e != cudaSuccess) {
            printf(", \"error\": \"%s\"}\n", e == cudaErrorInvalidValue ? "ids out of range" : cudaGetErrorString(e));
            fflush(stdout);
            status = 1;
            continue;
          }
          std::vector<double> times;
          for (int g = -3; g < reps && e == cudaSuccess; g++) {
            cudaEventRecord(e0, st);
            for (int j = 0; j < inner && e == cudaSuccess; j++, call++)
              e = run_one(cfg, joint, big + (call % n_units) * (unit / 4), (int)B, (int)V, b, call, st);
            cudaEventRecord(e1, st);
            if (e == cudaSuccess) e = cudaEventSynchronize(e1);
            float ms = 0.0f;
            if (e == cudaSuccess && g >= 0 && cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess)
              times.push_back(ms * 1000.0 / inner);
          }
          if (e != cudaSuccess || times.empty()) {
            printf(", \"error\": \"%s\"}\n", cudaGetErrorString(e));
            status = 1;
          } else {
            std::sort(times.begin(), times.end());
            double med = times[times.size() / 2];
            printf(", \"us_per_batch\": %.3f, \"us_per_row\": %.4f}\n", med, med / B);
          }
          fflush(stdout);
        }
      }
      cudaFree(big); cudaFree(b.probs); cudaFree(b.vals); cudaFree(b.pk); cudaFree(b.out); cudaFree(b.idx);
      cudaFree(b.local); cudaFree(b.valid); cudaFree(b.sm_ws); cudaFree(b.rows);
    }
  }
  return status;
}
