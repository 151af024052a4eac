#!/usr/bin/env bash
# Runs every test binary in build/tests and every tests/*.test.sh script,
# then prints the closing line "N passed, N failed, N skipped".
# TEST_JOBS (default: the number of cores) run at once, the slowest
# first; each one's output is printed whole, in name order, as it
# finishes. TEST_JOBS=1 runs them one by one, streaming.
cd "$(dirname "$0")/.."
jobs=${TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
log=$(mktemp); out=$(mktemp -d); trap 'rm -rf "$log" "$out"' EXIT
items=()
for t in build/tests/test_*; do [ -x "$t" ] && [ -f "$t" ] && items+=("$t"); done
for s in tests/*.test.sh; do [ -f "$s" ] && items+=("$s"); done

run_one() { # item: its output and exit status into $out
  local t=$1 name=${1//\//_}
  if [ "${t%.sh}" != "$t" ]; then bash "$t" > "$out/$name.log" 2>&1; else "$t" > "$out/$name.log" 2>&1; fi
  echo $? > "$out/$name.rc"
}

status=0
if [ "$jobs" -le 1 ]; then
  for t in "${items[@]}"; do
    echo "== $t"
    if [ "${t%.sh}" != "$t" ]; then bash "$t" > >(tee -a "$log") 2>&1 || status=1
    else "$t" > >(tee -a "$log") 2>&1 || status=1; fi
    wait
  done
else
  export out; export -f run_one
  # the slowest first (measured on 2 cores: test_typical 35 s, cuda_emu 53,
  # compile_matrix 40, cuda_cli 23, test_cuda 19, test_core 16,
  # test_sampling 15), so that no long one starts last
  slow=(tests/cuda_emu.test.sh build/tests/test_typical tests/compile_matrix.test.sh tests/cuda_cli.test.sh
        build/tests/test_cuda build/tests/test_core build/tests/test_sampling build/tests/test_llamacpp_ref)
  order=()
  for t in "${slow[@]}"; do for i in "${items[@]}"; do [ "$i" = "$t" ] && order+=("$t"); done; done
  for i in "${items[@]}"; do
    first=0; for t in "${slow[@]}"; do [ "$i" = "$t" ] && first=1; done
    [ $first = 1 ] || order+=("$i")
  done
  # each exactly once (a second run would overwrite the first's output)
  [ ${#order[@]} = ${#items[@]} ] || { echo "FAIL tests/run.sh: ${#order[@]} runs for ${#items[@]} tests"; exit 1; }
  printf '%s\n' "${order[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one {}' &
  runner=$!
  # print each in name order as soon as it and those before it are done
  for t in "${items[@]}"; do
    name=${t//\//_}
    while [ ! -f "$out/$name.rc" ]; do
      kill -0 $runner 2>/dev/null || { [ -f "$out/$name.rc" ] || break; }
      sleep 0.2
    done
    echo "== $t"
    if [ -f "$out/$name.rc" ]; then
      tee -a "$log" < "$out/$name.log"
      [ "$(cat "$out/$name.rc")" = 0 ] || status=1
    else
      echo "FAIL $t: never ran" | tee -a "$log"; status=1
    fi
  done
  wait $runner
fi
p=$(grep -c '^PASS ' "$log"); f=$(grep -c '^FAIL ' "$log"); s=$(grep -c '^SKIP ' "$log")
# A binary that crashed or exited non-zero without a FAIL line still fails the run.
if [ "$status" != 0 ] && [ "$f" = 0 ]; then f=1; echo "FAIL a test program exited non-zero"; fi
echo "$p passed, $f failed, $s skipped"
[ "$f" = 0 ]
