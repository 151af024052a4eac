#!/usr/bin/env bash
# The GPU code without a GPU: builds the CPU emulator of the CUDA driver
# (tests/cuda_emu: a fake libcuda that runs src/cuda/kernels.cu, one fiber
# per CUDA thread), runs its own tests, then the execution tests of
# build/tests/test_cuda against it through MYSAMPLE_CUDA_DRIVER_PATH. Every
# line it reports starts with "cuda-emu:", never a GPU test's plain name.
# The penalty rounding and top_p-by-bins tests also run on the FMA build
# (the kernels contracted as NVRTC does), a few on a one-SM device (every
# pass one block per row), and the ones with top_p rows again with
# MYSAMPLE_CUDA_TOPP=bins (as cuda-emu-bins132: / cuda-emu-bins1:; with
# MYSAMPLE_CUDA_PBSTATS=0 as cuda-emu-nopbs:). SKIP without a C++ compiler; the execution
# tests SKIP without NVRTC (the launch code compiles the kernels with it,
# and the emulator accepts the CUBIN). A driver error or leak the emulator
# reports during test_cuda fails the run: the launch code made a bad call.
set -uo pipefail
cd "$(dirname "$0")/.."
dir=build/cuda_emu
mkdir -p $dir
cxx=${CXX:-g++}
if ! command -v "$cxx" >/dev/null; then echo "SKIP cuda-emu: no C++ compiler ($cxx)"; exit 0; fi
# one make at a time in $dir (tests/run.sh runs scripts in parallel)
lock=; command -v flock >/dev/null && lock="flock $dir/.make.lock"
if ! $lock make -s $dir/libcuda_emu.so $dir/test_emu build/tests/test_cuda > $dir/build.log 2>&1; then
  cat $dir/build.log; echo "FAIL cuda-emu: build"; exit 1
fi
fail=0
start=$(date +%s.%N)

# the emulator itself
$dir/test_emu $dir/libcuda_emu.so > $dir/test_emu.log 2> $dir/test_emu.err || fail=1
cat $dir/test_emu.log

# mysample_cuda.h's kernels and launch code on it
export MYSAMPLE_CUDA_CACHE=$dir/kernel-cache   # the CUBIN NVRTC makes, once per build tree
MYSAMPLE_CUDA_DRIVER_PATH=$dir/libcuda_emu.so build/tests/test_cuda --emu > $dir/test_cuda.log 2> $dir/test_cuda.err || fail=1
cat $dir/test_cuda.log
if grep -q '^\[cuda-emu\]' $dir/test_cuda.err; then
  grep '^\[cuda-emu\]' $dir/test_cuda.err | head -20
  echo "FAIL cuda-emu: the emulated driver reported errors or leaks during test_cuda (above)"; fail=1
fi

# a test of test_cuda under another name and environment: variant NAME TEST [VAR=VALUE...]
variant() {
  local name=$1 t=$2
  shift 2
  env "$@" MYSAMPLE_CUDA_DRIVER_PATH=$dir/libcuda_emu.so build/tests/test_cuda --emu $t > $dir/test_cuda_$name.log 2>&1 || fail=1
  sed "s/^PASS cuda-emu:/PASS cuda-emu-$name:/; s/^FAIL cuda-emu:/FAIL cuda-emu-$name:/; s/^SKIP cuda-emu:/SKIP cuda-emu-$name:/" $dir/test_cuda_$name.log \
    | grep -E '^(PASS|FAIL|SKIP) ' || { echo "FAIL cuda-emu-$name: $t reported nothing"; fail=1; }
  if grep -q '^\[cuda-emu\]' $dir/test_cuda_$name.log; then
    grep '^\[cuda-emu\]' $dir/test_cuda_$name.log | head -20
    echo "FAIL cuda-emu-$name: the emulated driver reported errors or leaks during $t"; fail=1
  fi
}

# a one-SM device: every batch of more than 6 rows runs its passes with
# one block per row (G = 1, as large batches do on a GPU)
for t in features batch_invariance draws_match logprobs_match greedy_batch llamacpp_matches history; do
  variant 1sm $t MYSAMPLE_CUDA_EMU_SMS=1
done

# top_p by bins (MYSAMPLE_CUDA_TOPP=bins; its route test runs both in
# every mode): the tests that sample top_p rows, on 132 SMs and on one
for t in gpu_probs_match draws_match batch_invariance features splits tie_cuts; do
  variant bins132 $t MYSAMPLE_CUDA_TOPP=bins
done
variant bins1 features MYSAMPLE_CUDA_TOPP=bins MYSAMPLE_CUDA_EMU_SMS=1
# and with the bins counted by P_PBIN rather than the statistics
for t in topp_bins_route topp_bins_large; do
  variant nopbs $t MYSAMPLE_CUDA_PBSTATS=0
done
variant nopbs132 features MYSAMPLE_CUDA_TOPP=bins MYSAMPLE_CUDA_PBSTATS=0

# examples/cuda_sample.c: on the emulator every row's token equals the CPU's;
# with no driver it says why and samples on the CPU
if [ -x build/examples/cuda_sample ]; then
  out=$(MYSAMPLE_CUDA_DRIVER_PATH=$dir/libcuda_emu.so build/examples/cuda_sample 2>&1); rc=$?
  if [ $rc = 0 ] && echo "$out" | grep -q '^GPU: mysample CPU emulator' && echo "$out" | grep -q '^8 of 8 rows agree'; then
    echo "PASS cuda-emu: example cuda_sample agrees with the CPU"
  elif [ $rc = 0 ] && echo "$out" | grep -q '^GPU unavailable'; then
    echo "SKIP cuda-emu: example cuda_sample: $(echo "$out" | head -n1)"
  else echo "$out" | tail -n 12; echo "FAIL cuda-emu: example cuda_sample"; fail=1; fi
  out=$(MYSAMPLE_CUDA_DRIVER_PATH=/nonexistent/libcuda.so.1 build/examples/cuda_sample 2>&1); rc=$?
  if [ $rc = 0 ] && echo "$out" | grep -q '^GPU unavailable (.*nonexistent' && [ "$(echo "$out" | grep -c '^row .*: cpu')" = 8 ]; then
    echo "PASS example cuda_sample falls back to the CPU without a driver"
  else echo "$out" | tail -n 12; echo "FAIL example cuda_sample without a driver"; fail=1; fi
fi

# the FMA build: a plain `a * b + c` in kernels.cu fuses there, as on a GPU
if [ "$(uname -m)" = x86_64 ] && ! grep -qw fma /proc/cpuinfo 2>/dev/null; then
  echo "SKIP cuda-emu-fma: this CPU has no FMA instructions"
elif ! $lock make -s $dir/libcuda_emu_fma.so >> $dir/build.log 2>&1; then
  echo "FAIL cuda-emu-fma: build"; fail=1
else
  { MYSAMPLE_CUDA_DRIVER_PATH=$dir/libcuda_emu_fma.so build/tests/test_cuda --emu penalty_rounding 2>&1
    MYSAMPLE_CUDA_DRIVER_PATH=$dir/libcuda_emu_fma.so build/tests/test_cuda --emu topp_bins 2>&1; } \
    | sed 's/^PASS cuda-emu:/PASS cuda-emu-fma:/; s/^FAIL cuda-emu:/FAIL cuda-emu-fma:/; s/^SKIP cuda-emu:/SKIP cuda-emu-fma:/' \
    | grep -E '^(PASS|FAIL|SKIP) ' || true
fi
awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "  cuda-emu: %.1f s in all\n", e - s }'
exit $fail
