#!/usr/bin/env bash
# Builds build/flashinfer_bench from tools/flashinfer_bench.cu: FlashInfer's
# own sampling kernels (top-p, min-p, top-k + top-p) in a timing harness
# of ours, for the FlashInfer column of the GPU figures on a GPU machine
# that has neither FlashInfer nor nvcc (FlashInfer's Python package
# JIT-compiles with nvcc on first use). Run it on a machine with nvcc and
# PyPI (the development machine): it downloads the flashinfer-python wheel
# (no dependencies; FLASHINFER_VERSION, default 0.7.2.post1) into
# build/flashinfer/, unpacks the headers it ships (FlashInfer's include/
# and its vendored CCCL; nothing of it is committed) and compiles for
# FLASHINFER_ARCHS (default "90": H100 and H200), with FlashInfer's own
# flags (-O3 -use_fast_math, C++17) and the C++ runtime linked statically:
# the binary needs only the CUDA driver. Carry it to the GPU machine (the
# device tool: carry ["build/flashinfer_bench"]); tools/gpu_figures.sh runs
# it when it is there. About 40 s per architecture on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
ver=${FLASHINFER_VERSION:-0.7.2.post1}
archs=${FLASHINFER_ARCHS:-90}
dir=build/flashinfer
nvcc=${NVCC:-nvcc}
command -v "$nvcc" > /dev/null || { echo "flashinfer_build: no nvcc" >&2; exit 3; }
mkdir -p "$dir"
whl=$(ls "$dir"/flashinfer_python-"$ver"-*.whl 2> /dev/null | head -1 || true)
if [ -z "$whl" ]; then
  echo "flashinfer_build: downloading flashinfer-python==$ver" >&2
  python3 -m pip download -q --no-deps --only-binary=:all: -d "$dir" "flashinfer-python==$ver" >&2
  whl=$(ls "$dir"/flashinfer_python-"$ver"-*.whl | head -1)
fi
src=$dir/$ver
if [ ! -f "$src/flashinfer/data/include/flashinfer/sampling.cuh" ]; then
  rm -rf "$src"
  mkdir -p "$src"
  python3 - "$whl" "$src" <<'PY'
import sys, zipfile
whl, dst = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as z:
    for n in z.namelist():
        if n.startswith(("flashinfer/data/include/", "flashinfer/data/cccl/cub/",
                         "flashinfer/data/cccl/libcudacxx/include/", "flashinfer/data/cccl/thrust/")):
            z.extract(n, dst)
PY
fi
d=$src/flashinfer/data
gencode=()
for a in $archs; do gencode+=(-gencode "arch=compute_$a,code=sm_$a"); done
echo "flashinfer_build: nvcc for sm_${archs// /, sm_} (FlashInfer $ver)" >&2
"$nvcc" -std=c++17 -O3 -use_fast_math "${gencode[@]}" -DFLASHINFER_ENABLE_F16 -DFLASHINFER_ENABLE_BF16 \
  -diag-suppress 177 -Xcompiler -static-libstdc++,-static-libgcc \
  -I"$d/cccl/cub" -I"$d/cccl/libcudacxx/include" -I"$d/cccl/thrust" -I"$d/include" \
  -DFLASHINFER_BENCH_VERSION="\"$ver\"" -o build/flashinfer_bench tools/flashinfer_bench.cu
echo "flashinfer_build: build/flashinfer_bench ($(du -h build/flashinfer_bench | cut -f1))" >&2
