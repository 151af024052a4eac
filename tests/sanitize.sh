#!/usr/bin/env bash
# Builds every C test with AddressSanitizer + UndefinedBehaviorSanitizer
# and runs it; any sanitizer report fails the run. Prints PASS/FAIL lines
# like the suite (one per test binary and test).
set -uo pipefail
cd "$(dirname "$0")/.."
out=build/asan; mkdir -p $out
cc=${CC_SAN:-clang}; command -v $cc >/dev/null || cc=gcc
flags="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -std=c99 -Wall -Wextra -Wpedantic -Werror -DMYSAMPLE_THREADS"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1
fail=0
for t in tests/test_*.c; do
  name=$(basename "$t" .c)
  if ! $cc $flags -I. -Itests -o "$out/$name" "$t" -lm -lpthread -ldl 2> "$out/$name.build.log"; then
    echo "FAIL asan build $name"; head -20 "$out/$name.build.log"; fail=1; continue
  fi
  if "$out/$name" > "$out/$name.log" 2>&1; then
    sed 's/^PASS /PASS asan /; s/^FAIL /FAIL asan /; s/^SKIP /SKIP asan /' "$out/$name.log" | grep -E '^(PASS|FAIL|SKIP) '
  else
    sed 's/^PASS /PASS asan /; s/^FAIL /FAIL asan /; s/^SKIP /SKIP asan /' "$out/$name.log" | grep -E '^(PASS|FAIL|SKIP) '
    grep -E "ERROR: (Address|Leak)Sanitizer|runtime error" "$out/$name.log" | head -5
    echo "FAIL asan $name exited non-zero"; fail=1
  fi
done
exit $fail
