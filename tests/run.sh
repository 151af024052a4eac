#!/usr/bin/env bash
# Runs every test binary in build/tests and every tests/*.test.sh script,
# then prints the closing line "N passed, N failed, N skipped".
cd "$(dirname "$0")/.."
log=$(mktemp); trap 'rm -f "$log"' EXIT
status=0
for t in build/tests/test_*; do
  [ -x "$t" ] || continue
  echo "== $t"
  if ! "$t" > >(tee -a "$log") 2>&1; then status=1; fi
  wait
done
for s in tests/*.test.sh; do
  [ -f "$s" ] || continue
  echo "== $s"
  if ! bash "$s" > >(tee -a "$log") 2>&1; then status=1; fi
  wait
done
p=$(grep -c '^PASS ' "$log"); f=$(grep -c '^FAIL ' "$log"); s=$(grep -c '^SKIP ' "$log")
# A binary that crashed or exited non-zero without a FAIL line still fails the run.
if [ "$status" != 0 ] && [ "$f" = 0 ]; then f=1; echo "FAIL a test program exited non-zero"; fi
echo "$p passed, $f failed, $s skipped"
[ "$f" = 0 ]
