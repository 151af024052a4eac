#!/usr/bin/env bash
# CI: the Windows branches of both headers, built with MinGW-w64 (-Wall
# -Wextra -Wpedantic -Werror) and run under Wine: the worker pool's
# threads, critical sections and condition variables (batches spread over
# threads), the text and JSON writers, the golden vectors; and
# mysample_cuda.h's Windows loader: nvcuda.dll missing gives the
# no-driver error, NVRTC (nvrtc64_130_0.dll from the nvidia-cuda-nvrtc
# wheel for win_amd64, when pip can fetch it) compiles the kernels on
# threads of _beginthreadex with its builtins DLL preloaded from the same
# folder, and the disk cache writes and renames its file. A subset of each
# program ($MS_TESTS): Wine runs them at about native speed, but CI time
# is short. Installs Wine when missing (root and apt-get; .ci/run does it
# with the other packages), else SKIP. Prints PASS/FAIL/SKIP lines.
set -uo pipefail
cd "$(dirname "$0")/../.."
dir=build/windows
mkdir -p $dir
cc=x86_64-w64-mingw32-gcc
wine_bin() { command -v wine64 || { [ -x /usr/lib/wine/wine64 ] && echo /usr/lib/wine/wine64; } || command -v wine; }
wine=$(wine_bin)
if [ -z "$wine" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wine64) > $dir/apt.log 2>&1
  wine=$(wine_bin)
fi
command -v $cc >/dev/null || { echo "SKIP windows: no MinGW-w64 cross compiler ($cc)"; exit 0; }
[ -n "$wine" ] || { echo "SKIP windows: no Wine (wine64)"; exit 0; }
export WINEDEBUG=-all WINEPREFIX=$PWD/$dir/prefix
fail=0
W="-Wall -Wextra -Wpedantic -Werror"
flags="-O2 -std=c99 $W -DMYSAMPLE_THREADS -I. -Itests"

# NVRTC for Windows, fetched beside the builds (50 MB)
nvrtc_ver=13.5.37
nvrtc=$dir/nvrtc/nvidia/cu13/bin/x86_64/nvrtc64_130_0.dll
fetch_nvrtc() {
  [ -f $nvrtc ] && return 0
  command -v python3 >/dev/null || return 1
  python3 -m pip download --quiet --timeout 20 --retries 1 --no-deps --platform win_amd64 --only-binary=:all: --python-version 3.11 \
    "nvidia-cuda-nvrtc==$nvrtc_ver" -d $dir/wheel > $dir/pip.log 2>&1 || return 1
  python3 -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" $dir/wheel/*.whl $dir/nvrtc || return 1
  [ -f $nvrtc ]
}

# Wine's prefix and the DLL beside the builds; the builds two at a time
# (the shared implementation first)
( "$wine" cmd /c exit > $dir/wineboot.log 2>&1 ) &
boot=$!
( fetch_nvrtc; echo $? > $dir/nvrtc.rc ) &
fetch=$!
rm -f $dir/*.exe
if ! $cc $flags -c -o $dir/impl.o tests/impl.c > $dir/impl.build.log 2>&1; then
  cat $dir/impl.build.log; echo "FAIL windows: tests/impl.c does not build with $cc"; wait; exit 1
fi
build() { # name, sources...: PASS/FAIL into $dir/NAME.build.out
  local name=$1; shift
  if $cc $flags -o $dir/$name.exe "$@" > $dir/$name.build.log 2>&1; then echo "PASS windows build $name"
  else head -20 $dir/$name.build.log; echo "FAIL windows build $name"; fi > $dir/$name.build.out
}
build test_cuda tests/test_cuda.c & b1=$!
build test_sampling tests/test_sampling.c $dir/impl.o
build test_text tests/test_text.c $dir/impl.o
wait $b1
build test_json tests/test_json.c $dir/impl.o & b1=$!
build test_golden tests/test_golden.c $dir/impl.o
wait $b1
for t in test_cuda test_sampling test_text test_json test_golden; do cat $dir/$t.build.out; done
grep -q '^FAIL ' $dir/*.build.out && fail=1
wait $boot $fetch

# runs: each program's PASS/FAIL/SKIP lines tagged "windows" into
# $dir/NAME.out; it fails (status 1) on a FAIL line, or on an exit status
# other than 0 or no test at all
run() { # name, MS_TESTS filter, environment words...
  local t=$1 only=$2 rc; shift 2
  [ -f $dir/$t.exe ] || return 1
  env MS_TESTS="$only" "$@" "$wine" $dir/$t.exe > $dir/$t.log 2>&1; rc=$?
  {
    sed 's/^PASS /PASS windows /; s/^FAIL /FAIL windows /; s/^SKIP /SKIP windows /' $dir/$t.log | grep -E '^(PASS|FAIL|SKIP) '
    grep -qE '^(PASS|FAIL|SKIP) ' $dir/$t.log || { tail -5 $dir/$t.log; echo "FAIL windows $t: no test ran (exit $rc)"; }
    [ $rc = 0 ] || grep -q '^FAIL ' $dir/$t.log || { tail -5 $dir/$t.log; echo "FAIL windows $t: exit $rc"; }
  } > $dir/$t.out
  ! grep -q '^FAIL ' $dir/$t.out
}
# test_cuda's driver-free tests, compiling for sm_90 once (and once more
# for the caches), and its GPU tests, which skip (no driver); without the
# DLL the compiles report NVRTC missing (SKIP)
cuda_env=()
if [ "$(cat $dir/nvrtc.rc)" = 0 ]; then
  cuda_env=(MYSAMPLE_NVRTC_PATH="Z:$(realpath $nvrtc | tr / '\\')")
else echo "SKIP windows NVRTC: nvidia-cuda-nvrtc==$nvrtc_ver for win_amd64 could not be fetched (see $dir/pip.log)"; fi
run test_cuda '!sm80,sm90_topp_bins,test_gpu' \
  "${cuda_env[@]}" MYSAMPLE_CUDA_CACHE="Z:$(realpath $dir | tr / '\\')\\kernel-cache" & cuda_run=$!
run test_sampling "batch_and_thread_invariance,caller_parallel_for,seeds_and_replay,bad_input_codes,workspace_and_init_errors" || fail=1
for t in test_text test_json test_golden; do run $t "" || fail=1; done
wait $cuda_run || fail=1
for t in test_cuda test_sampling test_text test_json test_golden; do [ -f $dir/$t.out ] && cat $dir/$t.out; done
# the loader's message names the Windows library
if grep -q "nvcuda.dll could not be loaded" $dir/test_cuda.log; then echo "PASS windows loader names nvcuda.dll"
else echo "FAIL windows loader: no 'nvcuda.dll could not be loaded' in $dir/test_cuda.log"; fail=1; fi
exit $fail
