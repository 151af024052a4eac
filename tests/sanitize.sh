#!/usr/bin/env bash
# Builds every C test with AddressSanitizer + UndefinedBehaviorSanitizer
# and runs it; any sanitizer report fails the run. Prints PASS/FAIL lines
# like the suite (one per test binary and test). Two tests at a time
# (SAN_JOBS), their lines printed in order.
set -uo pipefail
cd "$(dirname "$0")/.."
out=build/asan; mkdir -p $out; rm -f $out/*.result
cc=${CC_SAN:-clang}; command -v $cc >/dev/null || cc=gcc
flags="-g1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -std=c99 -Wall -Wextra -Wpedantic -Werror -DMYSAMPLE_THREADS"
# -O1 for the tests whose runs are long (at -O0 test_typical ran 25 times
# longer); -O0 for the others, which then build in a third of the time
# (the builds were most of this step)
opt1="test_typical test_sampling test_core test_llamacpp_ref"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1

# one test: build, run, its report in $out/NAME.result, exit status 1 on FAIL
one() {
  local t=$1 name rc why
  name=$(basename "$t" .c)
  local o=-O0 impl=
  case " $opt1 " in *" $name "*) o=-O1 ;; esac
  case " $shared " in *" $name "*) impl=$out/impl.o ;; esac
  {
    if [ -n "$impl" ]; then
      while [ ! -f $out/impl.rc ]; do sleep 0.2; done
      if [ "$(cat $out/impl.rc)" != 0 ]; then echo "FAIL asan build $name: tests/impl.c did not build"; head -20 $out/impl.build.log; exit 1; fi
    fi
    if ! $cc $o $flags -I. -Itests -o "$out/$name" "$t" $impl -lm -lpthread -ldl 2> "$out/$name.build.log"; then
      echo "FAIL asan build $name"; head -20 "$out/$name.build.log"; exit 1
    fi
    # test_cuda: the cold compiles of sm_90 and of the caches' test, not
    # also sm_80's and the bins' (their host code is the same; NVRTC
    # itself is not instrumented)
    local only=; [ "$name" = test_cuda ] && only='!nvrtc_compile_sm80,sm90_topp_bins'
    MS_TESTS="$only" "$out/$name" > "$out/$name.log" 2>&1; rc=$?
    sed 's/^PASS /PASS asan /; s/^FAIL /FAIL asan /; s/^SKIP /SKIP asan /' "$out/$name.log" | grep -E '^(PASS|FAIL|SKIP) '
    if [ $rc -ne 0 ]; then
      # whatever ended it (a sanitizer report, a CHECK failure, a signal, a
      # failed test): the status and the log's other lines say which
      why="exit status $rc"; [ $rc -gt 128 ] && why="$why (signal $(kill -l $((rc - 128)) 2>/dev/null || echo $((rc - 128))))"
      echo "  $name: $why; the log's last lines other than PASS/SKIP:"
      grep -vE '^(PASS|SKIP) ' "$out/$name.log" | tail -25 | sed 's/^/  | /'
      echo "FAIL asan $name exited non-zero"; exit 1
    fi
  } > "$out/$name.result" 2>&1
}
# the tests the Makefile links with one build of the implementation
# (tests/impl.c) link this one, built once at -O1 beside the first test;
# its exit status in $out/impl.rc
shared=$(make -s shared-impl-tests)
rm -f $out/impl.rc
{ $cc -O1 $flags -I. -c -o $out/impl.o tests/impl.c 2> $out/impl.build.log; echo $? > $out/impl.rc; } &
export -f one; export out cc flags opt1 shared
# the slowest first (so that none starts last); the chi-square tests with
# 20000 draws and typical's row sweeps capped (the sanitizers look for
# memory and UB errors, which the paths show at any count; make test runs
# the full counts)
export MS_TEST_DRAWS=${MS_TEST_DRAWS:-20000} MS_TEST_ROWS=${MS_TEST_ROWS:-50}
slow="tests/test_typical.c tests/test_sampling.c tests/test_core.c tests/test_cuda.c tests/test_llamacpp_ref.c"
{ for t in $slow; do [ -f "$t" ] && echo "$t"; done; ls tests/test_*.c | grep -vxF -f <(printf '%s\n' $slow); } |
  xargs -P "${SAN_JOBS:-2}" -I{} bash -c 'one {}'
fail=0
for t in tests/test_*.c; do
  name=$(basename "$t" .c)
  if [ -f "$out/$name.result" ]; then cat "$out/$name.result"; else echo "FAIL asan $name: no result"; fail=1; fi
  grep -q '^FAIL ' "$out/$name.result" 2>/dev/null && fail=1
done
exit $fail
