#!/usr/bin/env bash
# The GPU figures of the CUDA issue in one command, on a machine with an
# NVIDIA GPU, the CUDA driver, NVRTC, a C compiler and python3 with torch:
#
#   bash tools/gpu_figures.sh > out.md        # then paste out.md into BENCHMARKS.md
#
# Builds build/mysample, runs `mysample bench --device cuda --json` with a
# fresh kernel cache (so the first ms_cuda_create includes the NVRTC
# compile), runs the baselines of tools/gpu_bench.py (PyTorch sort path,
# FlashInfer when it imports) on the same shapes, and prints the markdown
# table (us per batch, fraction of the one-read floor, speedups, the
# targets' verdicts, the GPU model) on stdout; progress goes to stderr.
# Arguments go to both benches: --batch 1,32,256 --vocab 128256,151936
# --config NAME,... --reps N --inner K --sigma S --working-set-mb M
# --copy-mb M. MYSAMPLE_WHEELS=DIR installs the wheels in DIR (FlashInfer:
# see the header of tools/gpu_bench.py) into a temporary directory first.
# FlashInfer without Python or nvcc on the GPU machine: build/flashinfer_bench
# (tools/flashinfer_build.sh, built where nvcc and PyPI are, then carried)
# is run when it is there, and its figures fill the FlashInfer column.
# KEEP=DIR keeps the JSON lines in DIR. Not part of `make test` (needs a
# GPU); the tests check `bash -n` on it and render a table from emulator
# output.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=${KEEP:-$tmp}
mkdir -p "$out"

echo "gpu_figures: building build/mysample" >&2
make -s build/mysample >&2

py=${PYTHON:-python3}
if [ -n "${MYSAMPLE_WHEELS:-}" ] && ls "$MYSAMPLE_WHEELS"/*.whl > /dev/null 2>&1; then
  echo "gpu_figures: installing the wheels of $MYSAMPLE_WHEELS" >&2
  "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$tmp/site" "$MYSAMPLE_WHEELS"/*.whl >&2
  export PYTHONPATH="$tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi

# a fresh cache: the first ms_cuda_create of the bench compiles with NVRTC;
# CUDA_CACHE_DISABLE=1 turns off NVRTC's own cache of compiled programs
# (NVRTC 12.9+, kept beside the driver's), which otherwise served the
# "cold" compile in ~40 ms on a machine that had compiled the module before
export MYSAMPLE_CUDA_CACHE="$tmp/kernel-cache"
export CUDA_CACHE_DISABLE=1
echo "gpu_figures: mysample bench --device cuda $*" >&2
rc=0
build/mysample bench --device cuda --json "$@" > "$out/mysample.jsonl" || rc=$?
if [ "$rc" != 0 ]; then
  echo "gpu_figures: mysample bench --device cuda failed (exit $rc)" >&2
  cat "$out/mysample.jsonl" >&2
  exit "$rc"
fi
cat "$out/mysample.jsonl" >&2

echo "gpu_figures: baselines (tools/gpu_bench.py run $*)" >&2
if ! PYTHONUNBUFFERED=1 "$py" tools/gpu_bench.py run "$@" > "$out/baselines.jsonl"; then
  echo "gpu_figures: the baselines failed; the table shows mysample alone" >&2
fi
: > "$out/flashinfer.jsonl"
if [ -x build/flashinfer_bench ]; then
  echo "gpu_figures: FlashInfer's kernels (build/flashinfer_bench $*)" >&2
  build/flashinfer_bench "$@" > "$out/flashinfer.jsonl" || echo "gpu_figures: build/flashinfer_bench failed (exit $?)" >&2
  cat "$out/flashinfer.jsonl" >&2
fi
"$py" tools/gpu_bench.py table --raw "$out/mysample.jsonl" "$out/baselines.jsonl" "$out/flashinfer.jsonl"
