#!/usr/bin/env bash
# CI: end-to-end tests of the example server (examples/server.c), on loopback
# only, every wait bounded, every server stopped by this script:
#   1. curl against the server on the embedded n-gram model
#   2. the official OpenAI Python SDK (venv under build/, from PyPI; SKIP when
#      PyPI or venv is unavailable)
#   3. HTTP robustness with tight limits (malformed HTTP, sizes, timeouts,
#      too many connections, disconnects, slow readers, random garbage)
#   4. the server on a generated tiny llama2.c checkpoint
#   5. a load test: 64 concurrent streams for LOAD_SECONDS (default 20) with
#      random disconnects: no lost/truncated/mixed streams, no leaked slots,
#      memory flat
#   6. --cuda on the CUDA emulator (tests/cuda_emu): the same tokens as the
#      CPU path; and --cuda without a driver falls back to the CPU
# Ends with "N passed, N failed, N skipped". Takes about 1.5 minutes.
# SERVER_BIN=path runs another build of the server (e.g. under sanitizers)
# instead of building build/examples/server.
set -uo pipefail
cd "$(dirname "$0")/../.."
LOAD_SECONDS=${LOAD_SECONDS:-20}
SERVER=${SERVER_BIN:-build/examples/server}
tmp=$(mktemp -d)
pids=()
pass=0; fail=0; skip=0
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
ok() { echo "PASS server_$1"; pass=$((pass + 1)); }
ko() { echo "FAIL server_$1${2:+: $2}"; fail=$((fail + 1)); }
sk() { echo "SKIP server_$1: $2"; skip=$((skip + 1)); }
# counts the PASS/FAIL/SKIP lines of a sub-test's output
tally() { # file
  local p f s
  p=$(grep -c '^PASS ' "$1"); f=$(grep -c '^FAIL ' "$1"); s=$(grep -c '^SKIP ' "$1")
  pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
}
# start NAME ARGS...: starts the server on a free port; sets PORT
start() {
  local name=$1; shift
  rm -f "$tmp/$name.port"
  "$SERVER" --host 127.0.0.1 --port 0 --port-file "$tmp/$name.port" --quiet "$@" > "$tmp/$name.log" 2>&1 &
  pids+=($!)
  local i=0
  while [ ! -s "$tmp/$name.port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  if [ ! -s "$tmp/$name.port" ]; then cat "$tmp/$name.log"; return 1; fi
  PORT=$(cat "$tmp/$name.port")
}
alive() { kill -0 "${pids[-1]}" 2>/dev/null; }

echo "-- build"
if [ -z "${SERVER_BIN:-}" ] && ! make -s server >/dev/null; then echo "FAIL server_build"; echo "0 passed, 1 failed"; exit 1; fi
ok build
MODEL=mysample-ngram

echo "-- curl"
if ! start main --slots 64 --max-conns 200 --threads 2; then ko start; echo "$pass passed, $fail failed, $skip skipped"; exit 1; fi
U=http://127.0.0.1:$PORT
if command -v curl >/dev/null 2>&1; then
  C="curl -sS --max-time 20"
  h=$($C "$U/health") && [[ $h == *'"status":"ok"'* ]] && ok curl_health || ko curl_health "$h"
  m=$($C "$U/v1/models") && [[ $m == *"\"id\":\"$MODEL\""* ]] && ok curl_models || ko curl_models "$m"
  body='{"model":"'$MODEL'","messages":[{"role":"user","content":"Tell me about the river."}],"stream":true,"max_tokens":40,"seed":3,"stream_options":{"include_usage":true}}'
  $C -N -H 'Content-Type: application/json' -d "$body" "$U/v1/chat/completions" > "$tmp/sse"
  first=$(head -n1 "$tmp/sse"); last=$(grep -v '^$' "$tmp/sse" | tail -n1)
  if [[ $first == 'data: {"id":"chatcmpl-'* ]] && [ "$last" = "data: [DONE]" ] && grep -q '"choices":\[\],"usage"' "$tmp/sse" \
     && [ "$(grep -c '^data: ' "$tmp/sse")" -ge 4 ] && ! grep -v '^$' "$tmp/sse" | grep -qv '^data: '; then
    ok curl_stream_sse_framing
  else ko curl_stream_sse_framing "$(head -c 400 "$tmp/sse")"; fi
  r=$($C -H 'Content-Type: application/json' -d '{"model":"'$MODEL'","prompt":"The cat","max_tokens":5,"seed":1}' "$U/v1/completions")
  [[ $r == *'"object":"text_completion"'* && $r == *'"completion_tokens":'* ]] && ok curl_completion || ko curl_completion "$r"
  code=$($C -o "$tmp/err" -w '%{http_code}' -H 'Content-Type: application/json' \
         -d '{"model":"'$MODEL'","messages":[{"role":"user","content":"x"}],"temperature":-1}' "$U/v1/chat/completions")
  [ "$code" = 400 ] && grep -q 'temperature must be non-negative, got -1.0.' "$tmp/err" && ok curl_400_validation || ko curl_400_validation "$code $(cat "$tmp/err")"
  head -c 1100000 /dev/zero | tr '\0' 'a' > "$tmp/big"
  code=$($C -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @"$tmp/big" "$U/v1/completions")
  [ "$code" = 413 ] && ok curl_413_body_limit || ko curl_413_body_limit "$code"
  printf '{"model":"%s","prompt":"%0900d","max_tokens":3}' "$MODEL" 0 > "$tmp/mid"
  code=$($C -o /dev/null -w '%{http_code}' -H 'Expect: 100-continue' -H 'Content-Type: application/json' --data-binary @"$tmp/mid" "$U/v1/completions")
  [ "$code" = 200 ] && ok curl_expect_100_continue || ko curl_expect_100_continue "$code"
  n=$($C -v "$U/health" "$U/health" 2>&1 | grep -ci 're-using existing connection\|reusing existing')
  [ "$n" -ge 1 ] && ok curl_keep_alive || ko curl_keep_alive "no connection reuse"
else
  sk curl "curl not installed"
fi

echo "-- OpenAI Python SDK"
if py=$(bash tests/e2e/venv.sh | tail -n1) && [ -x "$py" ]; then
  timeout 180 "$py" tests/e2e/test_openai.py "$U" "$MODEL" > "$tmp/sdk.out" 2>&1
  rc=$?
  cat "$tmp/sdk.out"; tally "$tmp/sdk.out"
  [ $rc = 0 ] || grep -q '^FAIL ' "$tmp/sdk.out" || ko sdk_run "exit $rc"
else
  sk openai_sdk "could not create the venv with the openai package (no python3/venv or no PyPI)"
fi

if ! command -v python3 >/dev/null 2>&1; then
  sk python_tests "python3 not found"
else
  echo "-- load: 64 streams for ${LOAD_SECONDS}s with random disconnects"
  timeout $((LOAD_SECONDS + 90)) python3 tests/e2e/load.py 127.0.0.1 "$PORT" "$MODEL" --streams 64 --duration "$LOAD_SECONDS" > "$tmp/load.out" 2>&1
  rc=$?
  cat "$tmp/load.out"; tally "$tmp/load.out"
  [ $rc = 0 ] || grep -q '^FAIL ' "$tmp/load.out" || ko load_run "exit $rc"
  alive && ok main_server_survived || ko main_server_survived "the server exited: $(tail -n 5 "$tmp/main.log")"

  echo "-- HTTP robustness (tight limits)"
  if start tight --max-conns 8 --request-timeout 500 --idle-timeout 1500 --write-timeout 1000 --max-body 4096 --slots 4; then
    timeout 120 python3 tests/e2e/test_http.py 127.0.0.1 "$PORT" "$MODEL" > "$tmp/http.out" 2>&1
    rc=$?
    cat "$tmp/http.out"; tally "$tmp/http.out"
    [ $rc = 0 ] || grep -q '^FAIL ' "$tmp/http.out" || ko http_run "exit $rc"
    alive && ok tight_server_survived || ko tight_server_survived "$(tail -n 5 "$tmp/tight.log")"
  else ko start_tight; fi

  echo "-- llama2.c checkpoint"
  if python3 tests/e2e/make_tiny_llama2.py "$tmp/l2" >/dev/null && start l2 --model "$tmp/l2/model.bin" --threads 2 --slots 8; then
    timeout 120 python3 tests/e2e/test_llama2.py 127.0.0.1 "$PORT" model.bin > "$tmp/l2.out" 2>&1
    rc=$?
    cat "$tmp/l2.out"; tally "$tmp/l2.out"
    [ $rc = 0 ] || grep -q '^FAIL ' "$tmp/l2.out" || ko llama2_run "exit $rc"
  else ko start_llama2; fi
  echo "-- --cuda on the CUDA emulator (tests/cuda_emu: the kernels on the CPU, no GPU here)"
  if make -s build/cuda_emu/libcuda_emu.so > "$tmp/emu.log" 2>&1; then
    export MYSAMPLE_CUDA_CACHE="$tmp/kernel-cache"
    if MYSAMPLE_CUDA_DRIVER_PATH=build/cuda_emu/libcuda_emu.so start gpu --cuda --slots 16 && gport=$PORT \
       && start cpu --slots 16; then
      if grep -q "sampling on the GPU" "$tmp/gpu.log"; then
        timeout 600 python3 tests/e2e/cuda_compare.py 127.0.0.1 "$gport" "$PORT" "$MODEL" > "$tmp/cuda.out" 2>&1
        rc=$?
        cat "$tmp/cuda.out"; tally "$tmp/cuda.out"
        [ $rc = 0 ] || grep -q '^FAIL ' "$tmp/cuda.out" || ko cuda_compare_run "exit $rc"
      else sk cuda_emu_server "$(grep -- '--cuda' "$tmp/gpu.log" | head -n1)"; fi
    else ko start_cuda_emu "$(tail -n 3 "$tmp/gpu.log")"; fi
  else sk cuda_emu_server "the emulator did not build: $(tail -n 2 "$tmp/emu.log")"; fi
  # --cuda where no driver can be loaded: a message, then the CPU
  if MYSAMPLE_CUDA_DRIVER_PATH=/nonexistent/libcuda.so.1 start nogpu --cuda --slots 2; then
    h=$(curl -sS --max-time 20 "http://127.0.0.1:$PORT/health" 2>/dev/null)
    # (ignore_eos and a seed: an unseeded draw of EOS within 5 tokens once failed this check)
    r=$(curl -sS --max-time 20 -H 'Content-Type: application/json' -d '{"model":"'$MODEL'","prompt":"The cat","max_tokens":5,"ignore_eos":true,"seed":1}' \
        "http://127.0.0.1:$PORT/v1/completions" 2>/dev/null)
    if [[ $h == *'"sampler":"cpu"'* && $r == *'"completion_tokens":5'* ]] && grep -q -- '--cuda: .*nonexistent.*sampling on the CPU' "$tmp/nogpu.log"; then
      ok cuda_fallback_without_driver
    else ko cuda_fallback_without_driver "$h $r $(cat "$tmp/nogpu.log")"; fi
  else ko start_nogpu; fi

  # a checkpoint that does not match its header is refused at start-up
  head -c 1000 "$tmp/l2/model.bin" > "$tmp/l2/bad.bin" 2>/dev/null
  if ! timeout 10 "$SERVER" --port 0 --model "$tmp/l2/bad.bin" --tokenizer "$tmp/l2/tokenizer.bin" > "$tmp/bad.log" 2>&1 \
     && grep -q 'does not match its header' "$tmp/bad.log"; then ok llama2_bad_checkpoint_refused; else ko llama2_bad_checkpoint_refused "$(cat "$tmp/bad.log")"; fi
fi

echo "-- stop"
for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
stopped=1
for p in "${pids[@]}"; do
  i=0; while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
  kill -0 "$p" 2>/dev/null && stopped=0
done
[ $stopped = 1 ] && ok graceful_shutdown || ko graceful_shutdown "a server ignored SIGTERM"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
