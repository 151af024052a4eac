#!/usr/bin/env bash
# CI: the GPU path on the CPU emulator against the CPU sampler
# (tests/fuzz/fuzz_cuda_sample.c: libFuzzer, the emulator built with the
# same ASan + UBSan), for a bounded time from the committed seeds. Needs
# clang, clang++ and NVRTC (the CUDA toolkit); SKIP without them.
set -uo pipefail
cd "$(dirname "$0")/../.."
secs=${CUDA_FUZZ_SECONDS:-45}
for c in "${FUZZ_CC:-clang}" "${FUZZ_CXX:-clang++}"; do
  command -v "$c" >/dev/null || { echo "SKIP cuda fuzzing: no $c"; exit 0; }
done
log=build/fuzz/fuzz_cuda_sample.log
mkdir -p build/fuzz
if ! make -s fuzz-cuda > build/fuzz/fuzz_cuda_build.log 2>&1; then
  tail -20 build/fuzz/fuzz_cuda_build.log; echo "FAIL cuda fuzzing: build"; exit 1
fi
make -s fuzz-cuda-run FUZZ_CUDA_SECONDS="$secs" > "$log" 2>&1
rc=$?
if grep -q "no GPU path to fuzz" "$log"; then
  echo "SKIP cuda fuzzing: $(grep -m1 'no GPU path to fuzz' "$log")"; exit 0
fi
grep -E "^(stat::number_of_executed_units|stat::new_units_added)" "$log"
if [ $rc -ne 0 ]; then
  grep -E "invariant|ERROR: |SUMMARY|runtime error" "$log" | head -10
  echo "FAIL cuda fuzzing: fuzz_cuda_sample (see $log; the input is in build/fuzz/crash-*)"; exit 1
fi
echo "PASS cuda fuzzing: the GPU path on the emulator against the CPU for $secs s"
