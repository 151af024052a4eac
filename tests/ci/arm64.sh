#!/usr/bin/env bash
# CI: the NEON kernels on AArch64, under qemu-user: cross-compile the
# reference comparisons (every profile, scalar and NEON paths), the
# golden vectors and typical on whole rows, and run them. Installs the
# cross compiler and qemu from Debian's packages when missing; SKIP when
# they cannot be had.
set -uo pipefail
cd "$(dirname "$0")/../.."
need=""
command -v aarch64-linux-gnu-gcc >/dev/null || need="$need gcc-aarch64-linux-gnu libc6-dev-arm64-cross"
command -v qemu-aarch64 >/dev/null || need="$need qemu-user"
if [ -n "$need" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need) > build/arm64-apt.log 2>&1 || true
  fi
fi
if ! command -v aarch64-linux-gnu-gcc >/dev/null || ! command -v qemu-aarch64 >/dev/null; then
  echo "SKIP arm64 neon: no aarch64 cross compiler or qemu-user (see build/arm64-apt.log)"
  exit 0
fi
mkdir -p build/arm64
fail=0
tests="test_typical test_core test_golden"
# build and run each under qemu, two at a time (test_typical, the longest,
# beside the others); its exit status in build/arm64/NAME.rc
# (the tests the Makefile links with one build of the implementation,
# tests/impl.c, link this one, built beside test_typical; its status in
# build/arm64/impl.rc)
one() {
  local t=$1 rows=6 draws=10000 impl=
  case " $shared " in *" $t "*) impl=build/arm64/impl.o ;; esac
  if [ -n "$impl" ]; then
    while [ ! -f build/arm64/impl.rc ]; do sleep 0.2; done
    [ "$(cat build/arm64/impl.rc)" = 0 ] || { cp build/arm64/impl.build.log build/arm64/$t.build.log; echo build > build/arm64/$t.rc; return; }
  fi
  if ! aarch64-linux-gnu-gcc -O2 -std=c99 -Wall -Wextra -Wpedantic -Werror -I. -Itests -o build/arm64/$t tests/$t.c $impl -lm -lpthread 2> build/arm64/$t.build.log; then
    echo build > build/arm64/$t.rc; return
  fi
  # test_typical's rows and draws take most of the time under qemu (~50x
  # native; 280 s with 10000 draws, 60 per row)
  [ $t = test_typical ] && rows=3 draws=2000
  MS_TEST_DRAWS=$draws MS_TEST_ROWS=$rows qemu-aarch64 -L /usr/aarch64-linux-gnu build/arm64/$t > build/arm64/$t.log 2>&1
  echo $? > build/arm64/$t.rc
}
shared=$(make -s shared-impl-tests)
export -f one; export shared
rm -f build/arm64/*.rc
{ aarch64-linux-gnu-gcc -O2 -std=c99 -Wall -Wextra -Wpedantic -Werror -I. -c -o build/arm64/impl.o tests/impl.c 2> build/arm64/impl.build.log
  echo $? > build/arm64/impl.rc; } &
echo $tests | tr ' ' '\n' | xargs -P 2 -I{} bash -c 'one {}'
for t in $tests; do
  rc=$(cat build/arm64/$t.rc 2>/dev/null || echo none)
  if [ "$rc" = build ] || [ "$rc" = none ]; then
    echo "FAIL arm64 build $t"; head -20 build/arm64/$t.build.log; fail=1; continue
  fi
  [ "$rc" = 0 ] || fail=1
  sed 's/^PASS /PASS arm64 /; s/^FAIL /FAIL arm64 /; s/^SKIP /SKIP arm64 /' build/arm64/$t.log | grep -E '^(PASS|FAIL|SKIP) '
  [ "$rc" = 0 ] || echo "FAIL arm64 $t exited with status $rc"
  grep -q "simd path neon" build/arm64/$t.log && echo "PASS arm64 neon path exercised ($t)" || [ $t != test_core ] || { echo "FAIL arm64 neon path not selected"; fail=1; }
done
exit $fail
