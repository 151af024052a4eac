#!/usr/bin/env bash
# mysample_cuda.h's own declarations of the driver structs it passes by
# pointer (tests/cuda_abi.c) against the CUDA toolkit's cuda.h, at compile
# time. SKIP without a toolkit ($CUDA_HOME or /usr/local/cuda).
set -u
cd "$(dirname "$0")/.."
inc=
for d in "${CUDA_HOME:-}" /usr/local/cuda; do
  if [ -n "$d" ] && [ -f "$d/include/cuda.h" ]; then inc=$d/include; break; fi
done
if [ -z "$inc" ]; then echo "SKIP cuda-abi: no cuda.h (no CUDA toolkit)"; exit 0; fi
mkdir -p build
if ${CC:-cc} -std=c11 -Wall -Wextra -Werror -I"$inc" -I. tests/cuda_abi.c -o build/cuda_abi -ldl -lm > build/cuda_abi.log 2>&1 &&
   build/cuda_abi; then
  exit 0
fi
cat build/cuda_abi.log
echo "FAIL cuda-abi: mysample_cuda.h's CUlaunchConfig / CUlaunchAttribute differ from $inc/cuda.h"
exit 1
