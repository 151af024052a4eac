#!/usr/bin/env bash
# Every GPU check of mysample_cuda.h in one command, for a machine with an
# NVIDIA GPU (the CUDA driver, NVRTC, a C compiler; python3 with torch for
# the baseline):
#
#   bash tools/gpu_check.sh OUTDIR [STEP...]
#
# Steps, in this order unless named: info (GPU, driver, NVRTC), compile
# (cold NVRTC compile for the device: default, and every program with
# NVRTC's fast compile, min and mid; the build with top_p's bins),
# tests (build/tests/test_cuda: the execution tests against the CPU path),
# cli (tests/cuda_cli.test.sh on the real driver), figures
# (tools/gpu_figures.sh: the issue's table with the PyTorch baseline, and
# FlashInfer's when build/flashinfer_bench was built and carried),
# topp (top_p's two threshold searches side by side on vocab 128256,
# radix and bins (ms_cuda_desc.topp) alternating, then the execution
# tests with the bins), memcheck (compute-sanitizer on test_cuda); not by
# default: ofast (the bench again with --Ofast-compile=min kernels), bench
# (mysample's figures alone), large (batches of 512 and 1024 rows: one
# block per row in every pass, G = 1) and profile (Nsight Compute's per-kernel times for each
# configuration at batch 1, 32, 256, or $PROFILE_BATCHES; $PROFILE_CONFIGS, $PROFILE_TOPP), ab (tools/gpu_ab.sh:
# the variants of $GPU_AB_VARIANTS, one 'NAME|BINARY|NVRTC OPTIONS|BENCH
# FLAGS[|ENV]' a line, else the open questions' list below; a carried
# build/mysample_sNN adds that baseline; $GPU_AB_ROUNDS rounds, default 1)
# and bins (the execution tests with top_p's bins). Each writes
# OUTDIR/STEP.log under its own time limit; OUTDIR/summary.txt gets one
# line per step (exit status, seconds, and the test counts where there are
# any); with GPU_CHECK_TAR=F the folder is packed into F after each step.
# GPU_CHECK_DEADLINE=S ends the whole run within S seconds of its start
# (a device lease: one command of at most 600 s): each step's limit is cut
# to what is left, and a step with less than its minimum left is skipped
# ("skipped" in the summary), so the steps go in the order of their worth.
# Builds what is missing with make. Not part of `make test`: it needs a GPU.
set -u
cd "$(dirname "$0")/.."
out=${1:?usage: tools/gpu_check.sh OUTDIR [STEP...]}
shift
mkdir -p "$out"
steps=${*:-info compile tests cli figures topp memcheck}
t_start=$(date +%s)
deadline=${GPU_CHECK_DEADLINE:-0}

# NVRTC where the loader's default names do not reach it (a toolkit
# outside the linker's path)
if ! ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so' && [ -z "${MYSAMPLE_NVRTC_PATH:-}" ]; then
  for f in /usr/local/cuda/lib64/libnvrtc.so.13 /usr/local/cuda/lib64/libnvrtc.so.12 /usr/local/cuda*/lib64/libnvrtc.so.*; do
    [ -f "$f" ] && { export MYSAMPLE_NVRTC_PATH=$f; break; }
  done
fi
[ -x build/mysample ] && [ -x build/tests/test_cuda ] || make -s build/mysample build/tests/test_cuda > "$out/build.log" 2>&1

step() { # name, seconds, least seconds worth starting with, command...
  local name=$1 limit=$2 least=$3 a z rc counts left
  shift 3
  if [ "$deadline" -gt 0 ]; then
    left=$((t_start + deadline - $(date +%s) - 5))   # (5 s to pack the folder)
    if [ "$left" -lt "$least" ]; then
      printf '%-9s skipped: %d s left of GPU_CHECK_DEADLINE, %d wanted\n' "$name" "$left" "$least" | tee -a "$out/summary.txt"
      return
    fi
    [ "$left" -lt "$limit" ] && limit=$left
  fi
  a=$(date +%s.%N)
  timeout "$limit" bash -c "$*" > "$out/$name.log" 2>&1
  rc=$?
  z=$(date +%s.%N)
  counts=$(awk '/^PASS /{p++} /^FAIL /{f++} /^SKIP /{s++} END { if (p + f + s) printf "%d passed, %d failed, %d skipped", p, f, s }' "$out/$name.log")
  awk -v n="$name" -v r="$rc" -v a="$a" -v z="$z" -v c="$counts" \
    'BEGIN { printf "%-9s exit %-3s %6.1f s  %s\n", n, r, z - a, c }' | tee -a "$out/summary.txt"
  [ -n "${GPU_CHECK_TAR:-}" ] && tar czf "$GPU_CHECK_TAR" -C "$out" .
}
info() {
  nvidia-smi
  nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,memory.total --format=csv
  echo "MYSAMPLE_NVRTC_PATH=${MYSAMPLE_NVRTC_PATH:-}"
  ldconfig -p | grep -E 'libcuda\.so|libnvrtc' || true
  nvcc --version || true
  python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))' || true
  if [ -x build/flashinfer_bench ]; then echo "build/flashinfer_bench: present"
  else echo "build/flashinfer_bench: absent (tools/flashinfer_build.sh where nvcc and PyPI are, then carry it)"; fi
}
compile_cold() {
  # CUDA_CACHE_DISABLE=1: NVRTC 12.9+ keeps its own cache of compiled
  # programs beside the driver's (on by default where a driver loads), so
  # without it every compile after the first is a cache hit
  # (the default; every program with NVRTC's fast compile, min and mid:
  # MYSAMPLE_CUDA_FAST_UNITS / _LEVEL)
  local i e
  for e in "" "MYSAMPLE_CUDA_FAST_UNITS=all" "MYSAMPLE_CUDA_FAST_UNITS=all MYSAMPLE_CUDA_FAST_LEVEL=mid"; do
    echo "== ${e:-default}"
    for i in 1 2 3; do
      env $e CUDA_CACHE_DISABLE=1 MYSAMPLE_CUDA_CACHE=off build/mysample cuda-compile --arch sm_90
    done
  done
  echo "== the build with top_p's bins (eleven programs)"
  for i in 1 2; do CUDA_CACHE_DISABLE=1 MYSAMPLE_CUDA_CACHE=off build/mysample cuda-compile --arch sm_90 --topp-bins; done
  echo "(NVRTC's own cache on:)"
  MYSAMPLE_CUDA_CACHE=off build/mysample cuda-compile --arch sm_90
  # each program alone (the largest bounds the cold compile on free cores)
  CUDA_CACHE_DISABLE=1 python3 tools/nvrtc_programs.py --reps 2
}
profile() {
  # per-kernel times and throughputs under Nsight Compute, one batch per case
  local ncu c b m=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_atom.sum
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
  [ -n "$ncu" ] || { echo "ncu not found"; return 1; }
  for c in ${PROFILE_CONFIGS:-greedy top_p_0.9 min_p_0.05 top_k_50_top_p_0.95}; do
    for b in ${PROFILE_BATCHES:-1 32 256}; do
      echo "== $c batch $b"
      "$ncu" --clock-control none --csv --metrics $m build/mysample bench --device cuda --batch $b --vocab 128256 \
        --config $c --reps 1 --inner 1 --working-set-mb 0 --copy-mb 1 --no-cold-compile ${PROFILE_TOPP:+--topp $PROFILE_TOPP} 2>&1 | grep '^"' | grep -v dtod
    done
  done
}
bench() {
  build/mysample bench --device cuda --json
}
large() {
  build/mysample bench --device cuda --batch 256,512,1024 --vocab 128256 --json
}
topp() {
  local t
  for t in radix bins radix bins; do
    build/mysample bench --device cuda --config top_p_0.9,top_k_50_top_p_0.95 --batch 1,32,256 --vocab 128256 \
      --topp $t --no-cold-compile --json | grep '"group": "cuda"'
  done
  MYSAMPLE_CUDA_TOPP=bins build/tests/test_cuda
}
ofast() {
  MYSAMPLE_CUDA_CACHE=off MYSAMPLE_CUDA_NVRTC_OPTIONS=--Ofast-compile=min build/mysample bench --device cuda --json
}
memcheck() {
  MYSAMPLE_CUDA_CACHE=off compute-sanitizer --tool memcheck --error-exitcode 9 build/tests/test_cuda
}
ab() {
  # the questions the sessions without a GPU left open, each a variant of
  # the current build (BENCHMARKS.md, "GPU"): the last measured build
  # (session 18) where carried, top_p by bins, and the switches of what
  # was added unmeasured; then the costs of penalties, masks, logprobs
  local f='--vocab 128256 --batch 1,32,256 --reps 15' b v=()
  if [ -n "${GPU_AB_VARIANTS:-}" ]; then
    mapfile -t v < <(printf '%s\n' "$GPU_AB_VARIANTS" | grep -v '^ *$')
  else
    for b in build/mysample_s*; do [ -x "$b" ] && v+=("${b#build/mysample_}|$b||$f"); done
    v+=("now|||$f" "bins|||$f --topp bins" "nopdl|||$f|MYSAMPLE_CUDA_PDL=0" "nokfast|||$f|MYSAMPLE_CUDA_KFAST=0"
        "l2pf32||-DMS_L2PF=32|$f" "fastmid|||$f|MYSAMPLE_CUDA_FAST_UNITS=all MYSAMPLE_CUDA_FAST_LEVEL=mid"
        "pen|||$f --penalties 512" "mask|||$f --min-tokens 1" "lp5|||$f --logprobs 5")
  fi
  printf 'variant: %s\n' "${v[@]}"
  bash tools/gpu_ab.sh "${GPU_AB_ROUNDS:-1}" "${v[@]}"
}
export -f info compile_cold bench large topp ofast memcheck profile ab
export AB_OUT="$out/ab.jsonl"
for s in $steps; do
  case $s in
    info) step info 30 5 info ;;
    compile) step compile 90 30 compile_cold ;;
    tests) step tests 150 60 build/tests/test_cuda ;;
    bins) step bins 150 60 env MYSAMPLE_CUDA_TOPP=bins build/tests/test_cuda ;;
    cli) step cli 120 60 env MYSAMPLE_CUDA_CLI_GPU=1 bash tests/cuda_cli.test.sh ;;
    figures) step figures 260 120 env KEEP="$out/figures" bash tools/gpu_figures.sh ;;
    ab) step ab 240 60 ab ;;
    bench) step bench 90 30 bench ;;
    large) step large 90 30 large ;;
    topp) step topp 240 60 topp ;;
    ofast) step ofast 90 30 ofast ;;
    memcheck) step memcheck 150 60 memcheck ;;
    profile) step profile 240 60 profile ;;
    *) echo "gpu_check: unknown step $s" >&2; exit 2 ;;
  esac
done
