#!/usr/bin/env bash
# CI checks of mysample_cuda.h: the header compiles alone as C99/C11 and
# C++11/17 (-Wall -Wextra -Wpedantic -Werror, gcc and clang), in two
# translation units with MYSAMPLE_STATIC; tools/embed.sh keeps every
# literal short; then, where NVRTC loads, `mysample cuda-compile` and the
# missing-NVRTC path. Prints PASS/FAIL/SKIP lines; exits non-zero on FAIL.
set -uo pipefail
cd "$(dirname "$0")/../.."
headers_only=0; [ "${1:-}" = "--headers-only" ] && headers_only=1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
pass() { echo "PASS $1"; }
bad() { echo "FAIL $1"; fail=1; }
W="-Wall -Wextra -Wpedantic -Werror"

cat > "$tmp/impl.c" <<'C'
#define MYSAMPLE_IMPLEMENTATION
#define MYSAMPLE_CUDA_IMPLEMENTATION
#include "mysample_cuda.h"
int main(void) { char m[256]; return ms_cuda_load_nvrtc(0, m, sizeof m) == MS_OK ? 0 : 0; }
C
cat > "$tmp/decl.c" <<'C'
#include "mysample_cuda.h"
int ms_other(void);
int ms_other(void) { return (int)sizeof(ms_cuda_batch) + (int)sizeof(ms_cuda_out); }
C
cat > "$tmp/static2.c" <<'C'
#define MYSAMPLE_STATIC
#define MYSAMPLE_IMPLEMENTATION
#define MYSAMPLE_CUDA_IMPLEMENTATION
#include "mysample_cuda.h"
int ms_tu2(void);
int ms_tu2(void) { char m[64]; return (int)ms_cuda_load_nvrtc(0, m, sizeof m); }
C
cat > "$tmp/static1.c" <<'C'
#define MYSAMPLE_STATIC
#define MYSAMPLE_IMPLEMENTATION
#define MYSAMPLE_CUDA_IMPLEMENTATION
#include "mysample_cuda.h"
int ms_tu2(void);
int main(void) { char m[64]; return ((int)ms_cuda_load_nvrtc(0, m, sizeof m) + ms_tu2()) < 0; }
C
# the compiles two at a time (each in the background, its verdict in
# $tmp/NAME.out), their lines printed in order
n_job=0
job() { # name, command...
  local name=$1; shift
  n_job=$((n_job + 1))
  [ $((n_job % 2)) = 1 ] || wait
  ( if "$@" > "$tmp/$n_job.err" 2>&1; then echo "PASS $name"; else cat "$tmp/$n_job.err"; echo "FAIL $name"; fi ) > "$tmp/$n_job.out" &
}
for cc in gcc clang; do
  command -v $cc >/dev/null || { echo "SKIP cuda header $cc: not installed"; continue; }
  for std in c99 c11; do
    job "cuda header $cc -std=$std" $cc -std=$std $W -I. -o "$tmp/a-$cc-$std" "$tmp/impl.c" "$tmp/decl.c" -lm -lpthread -ldl
  done
  # -Wno-unused-function: MSDEF is plain `static` under MYSAMPLE_STATIC (api_core.h)
  job "cuda header $cc MYSAMPLE_STATIC in two units" $cc -std=c99 $W -Wno-unused-function -I. -o "$tmp/s-$cc" "$tmp/static1.c" "$tmp/static2.c" -lm -lpthread -ldl
done
for cxx in g++ clang++; do
  command -v $cxx >/dev/null || { echo "SKIP cuda header $cxx: not installed"; continue; }
  for std in c++11 c++17; do
    job "cuda header $cxx -std=$std" $cxx -x c++ -std=$std $W -I. -o "$tmp/a-$cxx-$std" "$tmp/impl.c" -x c++ "$tmp/decl.c" -lpthread -ldl
  done
done
# the Windows branches (LoadLibrary, SRW locks, _beginthreadex) where a
# MinGW cross compiler is installed
if command -v x86_64-w64-mingw32-gcc >/dev/null; then
  job "cuda header MinGW (Windows) -std=c99" x86_64-w64-mingw32-gcc -std=c99 $W -I. -o "$tmp/w.exe" "$tmp/impl.c" "$tmp/decl.c"
else echo "SKIP cuda header MinGW (Windows): x86_64-w64-mingw32-gcc not installed"; fi
wait
for ((i = 1; i <= n_job; i++)); do cat "$tmp/$i.out"; grep -q '^FAIL ' "$tmp/$i.out" && fail=1; done
# every embedded literal run stays below MSVC's 2048-byte limit
long=$(tools/embed.sh X src/cuda/kernels.cu | awk 'BEGIN{RS=",\n"} { if (length($0) > m) m = length($0) } END { print m + 0 }')
if [ "$long" -lt 2000 ]; then pass "embed.sh chunks < 2000 bytes (longest $long)"; else bad "embed.sh chunk of $long bytes"; fi

if [ $headers_only = 0 ]; then
  [ -x build/mysample ] || make -s build/mysample >/dev/null
  if build/mysample cuda-compile --help >/dev/null 2>&1; then
    out=$(build/mysample cuda-compile 2>&1); rc=$?
    if [ $rc = 3 ]; then echo "SKIP mysample cuda-compile: NVRTC not found"
    elif [ $rc = 0 ]; then echo "$out"; pass "mysample cuda-compile sm_80 sm_90"
    else echo "$out"; bad "mysample cuda-compile"; fi
    # the oldest target NVRTC 13 has (sm_70 needs NVRTC 12): kernels
    # "correct on sm_70 and newer" must not use sm_80+ features unguarded
    out=$(build/mysample cuda-compile --arch sm_75 2>&1); rc=$?
    if [ $rc = 0 ]; then echo "$out" | head -1; pass "mysample cuda-compile sm_75"
    elif [ $rc = 3 ]; then echo "SKIP mysample cuda-compile sm_75: NVRTC not found"
    else echo "$out"; bad "mysample cuda-compile sm_75"; fi
    # MYSAMPLE_CUDA_NO_PTHREAD: the programs compile one after another
    cat > "$tmp/serial.c" <<'C'
#define MYSAMPLE_IMPLEMENTATION
#define MYSAMPLE_CUDA_IMPLEMENTATION
#define MYSAMPLE_CUDA_NO_PTHREAD
#include "mysample_cuda.h"
#include <stdio.h>
int main(void) {
  char log[8192];
  ms_cuda_compile_opts o;
  ms_cuda_compile_info info;
  ms_result rc;
  int i, found = 0;
  memset(&o, 0, sizeof o);
  o.no_disk_cache = 1;
  rc = ms_cuda_compile(90, &o, &info, log, sizeof log);
  if (rc == MS_ERR_NO_DEVICE) return 3;
  if (rc != MS_OK) { printf("%s\n%s\n", ms_result_str(rc), log); return 1; }
  for (i = 0; i < info.n_kernels; i++) found += info.kernel_found[i];
  printf("serial compile: %s, %d of %d kernels, %.3f s\n", info.target, found, (int)info.n_kernels, info.seconds);
  return found == info.n_kernels && info.n_kernels > 0 ? 0 : 1;
}
C
    if gcc -std=c99 $W -I. -o "$tmp/serial" "$tmp/serial.c" -lm -ldl 2> "$tmp/err"; then
      out=$("$tmp/serial" 2>&1); rc=$?
      if [ $rc = 0 ]; then echo "  $out"; pass "cuda header MYSAMPLE_CUDA_NO_PTHREAD: compiles the kernels serially"
      elif [ $rc = 3 ]; then echo "SKIP cuda header MYSAMPLE_CUDA_NO_PTHREAD compile: NVRTC not found"
      else echo "$out"; bad "cuda header MYSAMPLE_CUDA_NO_PTHREAD compile"; fi
    else cat "$tmp/err"; bad "cuda header MYSAMPLE_CUDA_NO_PTHREAD build"; fi
    out=$(MYSAMPLE_NVRTC_PATH=/nonexistent/libnvrtc.so build/mysample cuda-compile 2>&1); rc=$?
    if [ $rc = 3 ] && echo "$out" | grep -q "/nonexistent/libnvrtc.so"; then pass "cuda-compile without NVRTC: exit 3 and a message"; else echo "$out"; bad "cuda-compile without NVRTC"; fi
  fi
fi
exit $fail
