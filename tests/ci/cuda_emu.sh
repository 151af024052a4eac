#!/usr/bin/env bash
# CI: the GPU code under the CPU emulator (tests/cuda_emu), the heavier
# variants that `make test` (tests/cuda_emu.test.sh) leaves out:
#   asan          emulator and test_cuda built with ASan + UBSan (gcc):
#                 out-of-bounds device accesses, UB in the kernels
#   fma-random-defer  the kernels contracted into FMAs as NVRTC does, on a
#                 random fiber schedule (a missing __syncthreads shows) with
#                 deferred asynchronous work (the host waits before it reads
#                 or reuses memory): one run for the three (CI time), one
#                 seed; without FMA instructions, the plain build
#   ucontext      the emulator's own tests on ucontext fibers (and the
#                 cost of a switch, next to the assembly switch's)
#   arm64         the emulator's own tests built for AArch64, under qemu
# Prints PASS/FAIL/SKIP lines; exits non-zero on FAIL.
set -uo pipefail
cd "$(dirname "$0")/../.."
dir=build/cuda_emu
mkdir -p $dir
fail=0
export MYSAMPLE_CUDA_CACHE=$dir/kernel-cache
command -v g++ >/dev/null && command -v gcc >/dev/null || { echo "SKIP cuda-emu ci: needs gcc and g++"; exit 0; }
if ! make -s $dir/libcuda_emu.so $dir/libcuda_emu_asan.so $dir/test_emu build/tests/test_cuda > $dir/ci-build.log 2>&1; then
  cat $dir/ci-build.log; echo "FAIL cuda-emu ci: build"; exit 1
fi

# runs "$@", prints its PASS/FAIL/SKIP lines with the tag after the verdict
n_run=0
run() { # tag, command...
  local tag=$1; shift
  n_run=$((n_run + 1))
  local log=$dir/ci-$n_run-$tag.log
  if "$@" > "$log" 2>&1; then rc=0; else rc=1; fi
  sed "s/^PASS /PASS $tag /; s/^FAIL /FAIL $tag /; s/^SKIP /SKIP $tag /" "$log" | grep -E '^(PASS|FAIL|SKIP) '
  grep -E "ERROR: (Address|Leak)Sanitizer|runtime error|illegal address|^\[cuda-emu\] primary context" "$log" | head -5
  if [ $rc != 0 ]; then echo "FAIL $tag: exited non-zero (see $log)"; fail=1; fi
}
# run in the background (the two cores): its lines come out at finish_bg
bg_pids=(); bg_outs=()
start_bg() { # tag, command...
  n_run=$((n_run + 1)); local id=$n_run
  ( n_run=$((id * 100)); fail=0; run "$@"; exit $fail ) > $dir/ci-bg-$id.out 2>&1 &
  bg_pids+=($!); bg_outs+=($dir/ci-bg-$id.out)
}
finish_bg() {
  local i
  for i in "${!bg_pids[@]}"; do wait "${bg_pids[$i]}" || fail=1; cat "${bg_outs[$i]}"; done
  bg_pids=(); bg_outs=()
}

# ASan + UBSan: the test program and the emulator from the same compiler.
# test_cuda's build and run, the longest, go beside the next ones.
san="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all"
asan_env="ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1"
asan_cuda() {
  if ! gcc $san -std=c99 -Wall -Wextra -Wpedantic -Werror -DMYSAMPLE_THREADS -I. -Itests -o $dir/test_cuda_asan tests/test_cuda.c          -lm -lpthread -ldl 2> $dir/ci-asan-build.log; then
    head -20 $dir/ci-asan-build.log; echo "FAIL asan cuda-emu: build of test_cuda"; return 1
  fi
  # two processes, each about half of the run (the four longest tests, the rest)
  local heavy="splits_and_vocab,chi_square,llamacpp_matches,history" rc=0
  env $asan_env MYSAMPLE_CUDA_DRIVER_PATH=$dir/libcuda_emu_asan.so $dir/test_cuda_asan --emu "$heavy" > $dir/ci-asan-a.log 2>&1 &
  local pid=$!
  env $asan_env MYSAMPLE_CUDA_DRIVER_PATH=$dir/libcuda_emu_asan.so $dir/test_cuda_asan --emu "!$heavy" > $dir/ci-asan-b.log 2>&1 || rc=1
  wait $pid || rc=1
  cat $dir/ci-asan-a.log $dir/ci-asan-b.log
  return $rc
}
start_bg asan asan_cuda
if gcc $san -std=c99 -Wall -Wextra -Wpedantic -Werror -Itests -o $dir/test_emu_asan tests/cuda_emu/test_emu.c -ldl -lm -lpthread      2> $dir/ci-asan-emu-build.log; then
  run asan env $asan_env $dir/test_emu_asan $dir/libcuda_emu_asan.so
else
  head -20 $dir/ci-asan-emu-build.log; echo "FAIL asan cuda-emu: build of test_emu"; fail=1
fi

# FMA contraction as on a GPU, random schedules, deferred asynchronous work
lib=$dir/libcuda_emu_fma.so tag=fma-random-defer
if [ "$(uname -m)" = x86_64 ] && ! grep -qw fma /proc/cpuinfo 2>/dev/null; then
  echo "SKIP fma cuda-emu: this CPU has no FMA instructions (the random schedule on the plain build)"
  lib=$dir/libcuda_emu.so tag=random-defer
elif ! make -s $dir/libcuda_emu_fma.so >> $dir/ci-build.log 2>&1; then
  echo "FAIL fma cuda-emu: build"; fail=1
  lib=$dir/libcuda_emu.so tag=random-defer
fi
for seed in 11; do
  run $tag-$seed env MYSAMPLE_CUDA_DRIVER_PATH=$lib MYSAMPLE_CUDA_EMU_SCHEDULE=random:$seed MYSAMPLE_CUDA_EMU_ASYNC=defer \
      build/tests/test_cuda --emu
done

finish_bg

# ucontext fibers
run ucontext env MYSAMPLE_CUDA_EMU_FIBERS=ucontext $dir/test_emu $dir/libcuda_emu.so
grep -h "ns per switch" $dir/ci-*-ucontext.log $dir/test_emu.log 2>/dev/null

# the AArch64 fiber switch, under qemu-user (tests/ci/arm64.sh installs the
# cross compiler); only the emulator's own tests: NVRTC is an x86-64 library
if command -v aarch64-linux-gnu-g++ >/dev/null && command -v qemu-aarch64 >/dev/null; then
  mkdir -p $dir/arm64
  if aarch64-linux-gnu-g++ -O2 -std=c++14 -fPIC -shared -fvisibility=hidden -ffp-contract=off -Wall -Wextra -Werror \
       -Wno-unknown-pragmas -Isrc/cuda -Itests/cuda_emu -I$dir -o $dir/arm64/libcuda_emu.so tests/cuda_emu/driver.cpp \
       tests/cuda_emu/runtime.cpp tests/cuda_emu/kernels.cpp tests/cuda_emu/selftest.cpp -lpthread \
       -Wl,--version-script=tests/cuda_emu/exports.map 2> $dir/arm64/build.log &&
     aarch64-linux-gnu-gcc -O2 -std=c99 -Wall -Wextra -Wpedantic -Werror -Itests -o $dir/arm64/test_emu \
       tests/cuda_emu/test_emu.c -ldl -lm -lpthread 2>> $dir/arm64/build.log; then
    run arm64 qemu-aarch64 -L /usr/aarch64-linux-gnu $dir/arm64/test_emu $dir/arm64/libcuda_emu.so
  else
    head -20 $dir/arm64/build.log; echo "FAIL arm64 cuda-emu: build"; fail=1
  fi
else
  echo "SKIP arm64 cuda-emu: no aarch64 cross compiler or qemu-user"
fi
exit $fail
