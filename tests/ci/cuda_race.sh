#!/usr/bin/env bash
# CI: the race check of the GPU kernels on the CPU emulator (what
# compute-sanitizer's racecheck does on a GPU): the kernels built with
# gcc's ThreadSanitizer, each CUDA thread a TSan fiber ordered only by
# __syncthreads and __syncwarp (tests/cuda_emu/runtime.cpp, MS_EMU_TSAN),
# so two threads of a block that touch the same shared or global location
# between the same two barriers, not both atomically, are reported
# whatever order the fibers ran in; and across blocks
# (MYSAMPLE_CUDA_EMU_RACE=blocks): the blocks of a row ordered only by a
# __threadfence before the global atomic another block observes (the
# last block to arrive reading the others' partials), as on a GPU.
#   control   the emulator's own tests: the kernel with a missing barrier
#             (emu_t_missing_barrier) and the one whose blocks count their
#             arrival without a fence (emu_t_unfenced_partials) must be
#             reported, and no other (a check that cannot find races
#             would pass anything); and one execution test with every
#             fence dropped (MYSAMPLE_CUDA_EMU_RACE=blocks,nofence; its
#             rows split between blocks) must be reported in the kernels
#   kernels   five of test_cuda's execution tests (across blocks too:
#             topp_bins_route's rows span several), which launch every
#             kernel but ms_k_ties and ms_k_eps, in about 30 s (TSan's
#             vector clocks over up to 1024 fibers make a test with
#             1024-thread blocks up to 70x slower than on the plain
#             emulator): no report, every test passing. RACE_TESTS sets
#             test_cuda's --emu filter; RACE_TESTS=all runs them all
#             (about 40 minutes on one core)
# Prints PASS/FAIL/SKIP lines; exits non-zero on FAIL.
set -uo pipefail
cd "$(dirname "$0")/../.."
dir=build/cuda_emu
mkdir -p $dir
export MYSAMPLE_CUDA_CACHE=$dir/kernel-cache
command -v g++ >/dev/null && command -v gcc >/dev/null || { echo "SKIP cuda-race: needs gcc and g++"; exit 0; }
rt=$(g++ -print-file-name=libtsan.so)
[ -f "$rt" ] || { echo "SKIP cuda-race: gcc's libtsan is not installed"; exit 0; }
if ! make -s $dir/libcuda_emu_race.so $dir/test_emu build/tests/test_cuda > $dir/race-build.log 2>&1; then
  cat $dir/race-build.log; echo "FAIL cuda-race: build"; exit 1
fi
lib=$dir/libcuda_emu_race.so
fail=0
# TSan's reports: their SUMMARY lines
summaries() { grep -E '^SUMMARY: ThreadSanitizer' "$1" || true; }

export MYSAMPLE_CUDA_EMU_RACE=blocks
# the control: races reported, all of them in the broken kernels
env LD_PRELOAD="$rt" TSAN_OPTIONS="exitcode=66" $dir/test_emu $lib > $dir/race-control.log 2>&1
rc=$?
n_all=$(summaries $dir/race-control.log | wc -l)
n_bar=$(summaries $dir/race-control.log | grep -c 'emu_t_missing_barrier')
n_fence=$(summaries $dir/race-control.log | grep -c 'emu_t_unfenced_partials')
n_other=$((n_all - n_bar - n_fence))
if [ "$rc" = 66 ] && [ "$n_bar" -gt 0 ] && [ "$n_fence" -gt 0 ] && [ "$n_other" = 0 ] && ! grep -q '^FAIL ' $dir/race-control.log; then
  echo "PASS cuda-race:control ($n_bar reports in emu_t_missing_barrier, $n_fence in emu_t_unfenced_partials, none elsewhere)"
else
  summaries $dir/race-control.log | sort | uniq -c | head -10
  grep '^FAIL ' $dir/race-control.log | head -5
  echo "FAIL cuda-race:control: exit $rc, $n_bar reports in emu_t_missing_barrier, $n_fence in emu_t_unfenced_partials, $n_other elsewhere (see $dir/race-control.log)"
  fail=1
fi
# the kernels without their fences: the last blocks' reads of the others' partials reported
env LD_PRELOAD="$rt" TSAN_OPTIONS="exitcode=66 suppressions=tests/cuda_emu/tsan.supp" MYSAMPLE_CUDA_EMU_RACE=blocks,nofence \
  MYSAMPLE_CUDA_DRIVER_PATH=$lib build/tests/test_cuda --emu topp_bins_route > $dir/race-nofence.log 2>&1
rc=$?
n_all=$(summaries $dir/race-nofence.log | grep -c -e 'src/cuda/kernels.cu' -e '__ldcg')
if [ "$rc" = 66 ] && [ "$n_all" -gt 0 ]; then
  echo "PASS cuda-race:control_nofence ($n_all reports in the kernels with their fences dropped)"
else
  echo "FAIL cuda-race:control_nofence: exit $rc, $n_all reports in the kernels (see $dir/race-nofence.log)"
  fail=1
fi

# the kernels
filter=${RACE_TESTS:-topp_bins_route,top_list,logprobs_match,stage_order,sequences_match}
[ "$filter" = all ] && filter=
env LD_PRELOAD="$rt" TSAN_OPTIONS="exitcode=66 suppressions=tests/cuda_emu/tsan.supp" MYSAMPLE_CUDA_DRIVER_PATH=$lib build/tests/test_cuda --emu $filter \
  > $dir/race-kernels.log 2>&1
rc=$?
sed 's/^PASS /PASS race /; s/^FAIL /FAIL race /; s/^SKIP /SKIP race /' $dir/race-kernels.log | grep -E '^(PASS|FAIL|SKIP) '
n_all=$(summaries $dir/race-kernels.log | wc -l)
if [ "$n_all" != 0 ]; then
  summaries $dir/race-kernels.log | sort | uniq -c | sort -rn | head -10
  echo "FAIL cuda-race:kernels: $n_all data races (see $dir/race-kernels.log)"
  fail=1
elif [ "$rc" != 0 ]; then
  echo "FAIL cuda-race:kernels: exited $rc (see $dir/race-kernels.log)"
  fail=1
else
  echo "PASS cuda-race:kernels (no data race)"
fi
exit $fail
