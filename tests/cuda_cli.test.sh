#!/usr/bin/env bash
# The command-line tool's GPU path (--device cuda) on the CPU emulator of
# the CUDA driver (tests/cuda_emu): probs, sample and logprobs give the
# CPU's output (probabilities within 1e-5, the same seeded tokens, logprobs
# within 1e-4) on small rows for several parameter sets, what the GPU path
# does not implement exits with its message, `bench --device cuda` prints
# well-formed JSON lines and the figures table renders from them. Without
# a driver every GPU command exits 3 with a message (checked always, as are
# the syntax of tools/gpu_bench.py and tools/gpu_figures.sh, which need a
# GPU to run). The emulator parts SKIP without a C++ compiler or NVRTC.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=build/mysample
# the row files and the comparisons are Python: SKIP without python3 (make
# test needs only a C compiler)
if ! command -v python3 >/dev/null; then echo "SKIP cuda_cli: no python3"; exit 0; fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass() { echo "PASS cuda_cli_$1"; }
fail() { echo "FAIL cuda_cli_$1"; }
skip() { echo "SKIP cuda_cli_$1"; }
check() { if eval "$2"; then pass "$1"; else fail "$1"; fi; }
start=$(date +%s.%N)

# ---- always: scripts parse, help, no driver --------------------------------
check gpu_bench_py_compiles "python3 -c 'import py_compile, sys; py_compile.compile(\"tools/gpu_bench.py\", cfile=\"$tmp/gb.pyc\", doraise=True)' 2> $tmp/pyc.err"
check gpu_figures_sh_syntax 'bash -n tools/gpu_figures.sh'
check gpu_check_sh_syntax 'bash -n tools/gpu_check.sh'
# its deadline (no GPU needed: info runs, the rest is skipped in order) and
# the ab step's default variants (no rounds: the list alone)
GPU_CHECK_DEADLINE=15 bash tools/gpu_check.sh $tmp/gc info tests memcheck > /dev/null 2>&1
check gpu_check_deadline 'grep -q "^info .* exit " $tmp/gc/summary.txt &&
  grep -q "^tests .* skipped: .* left of GPU_CHECK_DEADLINE, 60 wanted" $tmp/gc/summary.txt &&
  grep -q "^memcheck .* skipped" $tmp/gc/summary.txt && [ "$(wc -l < $tmp/gc/summary.txt)" = 3 ]'
GPU_AB_ROUNDS=0 bash tools/gpu_check.sh $tmp/gab ab > /dev/null 2>&1
check gpu_check_ab_variants 'grep -q "^ab .* exit 0" $tmp/gab/summary.txt &&
  grep -q "^variant: now|||--vocab 128256" $tmp/gab/ab.log && grep -q "^variant: bins|||.* --topp bins$" $tmp/gab/ab.log'
for c in probs sample logprobs; do
  $bin $c --help > $tmp/help 2>&1
  check "help_device_$c" 'grep -q -- "--device cpu|cuda" $tmp/help'
done
$bin bench --help > $tmp/help 2>&1
check help_device_bench 'grep -q -- "--device cpu|cuda" $tmp/help'
$bin bench --device cuda --help > $tmp/help 2>&1
check help_bench_cuda 'grep -q -- "--working-set-mb" $tmp/help && grep -q "top_k_50_top_p_0.95" $tmp/help'
python3 -c "
import struct, random
random.seed(7)
rows = [[random.gauss(0, 2) for i in range(300)],
        [random.gauss(0, 0.5) for i in range(300)],
        [round(random.gauss(0, 2) * 2) / 2 for i in range(300)]]   # many ties
open('$tmp/l.bin', 'wb').write(b''.join(struct.pack('<300f', *r) for r in rows))
open('$tmp/big.bin', 'wb').write(struct.pack('<9000f', *[random.gauss(0, 1.5) for i in range(9000)]))
open('$tmp/nan.bin', 'wb').write(struct.pack('<4f', 1, float('nan'), 2, 3))
"
nodrv() { # name, command...: exit 3 and a message naming the driver
  local name=$1; shift
  MYSAMPLE_CUDA_DRIVER_PATH=/nonexistent "$@" > $tmp/nd.out 2> $tmp/nd.err; local rc=$?
  if [ $rc = 3 ] && grep -q -- "--device cuda" $tmp/nd.err && grep -qi "driver" $tmp/nd.err && [ ! -s $tmp/nd.out ]; then
    pass "no_driver_$name"
  else
    fail "no_driver_$name (rc $rc: $(head -c 200 $tmp/nd.err))"
  fi
}
nodrv probs $bin probs --logits $tmp/l.bin --vocab 300 --device cuda
nodrv sample $bin sample --logits $tmp/l.bin --vocab 300 --device cuda --seed 1 --draws 3
nodrv logprobs $bin logprobs --logits $tmp/l.bin --vocab 300 --device cuda --top 3
nodrv bench $bin bench --device cuda --batch 1 --vocab 1000 --reps 1 --inner 1
$bin probs --logits $tmp/l.bin --vocab 300 --device tpu > /dev/null 2> $tmp/err
check bad_device '[ $? = 2 ] && grep -q "invalid value for --device" $tmp/err'
# a bad flag is refused before any device is looked for
MYSAMPLE_CUDA_DRIVER_PATH=/nonexistent $bin probs --logits $tmp/l.bin --vocab 300 --device cuda --top-p 0 > /dev/null 2> $tmp/err
check validation_before_device '[ $? = 2 ] && grep -q "top_p must be in" $tmp/err'

# ---- the emulator (or, with MYSAMPLE_CUDA_CLI_GPU=1, the real GPU) ----------
# On a GPU machine `MYSAMPLE_CUDA_CLI_GPU=1 bash tests/cuda_cli.test.sh` runs
# the same CPU-vs-device comparisons on the real driver; the checks that
# only the emulator can pass (its name in the bench output) are left out.
gpu=${MYSAMPLE_CUDA_CLI_GPU:-0}
pfx=emu_; [ "$gpu" = 1 ] && pfx=gpu_
if [ "$gpu" = 1 ]; then
  export MYSAMPLE_CUDA_CACHE=$tmp/kernel-cache
else
  emu=build/cuda_emu/libcuda_emu.so
  cxx=${CXX:-g++}
  if ! command -v "$cxx" > /dev/null; then
    skip "emulator (no C++ compiler: $cxx)"; exit 0
  fi
  mkdir -p build/cuda_emu
  # one make at a time in build/cuda_emu (tests/run.sh runs scripts in parallel)
  lock=; command -v flock > /dev/null && lock="flock build/cuda_emu/.make.lock"
  if ! $lock make -s $emu > $tmp/emu-build.log 2>&1; then
    cat $tmp/emu-build.log; fail "emulator_build"; exit 1
  fi
  export MYSAMPLE_CUDA_DRIVER_PATH=$emu
  export MYSAMPLE_CUDA_CACHE=build/cuda_emu/kernel-cache   # shared with tests/cuda_emu.test.sh
fi
: > $tmp/emu.err
$bin probs --logits $tmp/l.bin --vocab 300 --device cuda > $tmp/first.out 2> $tmp/first.err
rc=$?
if [ $rc = 3 ] && grep -qi nvrtc $tmp/first.err; then
  skip "emulator (NVRTC could not be loaded: $(head -c 160 $tmp/first.err))"; exit 0
fi
check ${pfx}first_call '[ $rc = 0 ] && [ -s $tmp/first.out ]'

# cuda-compile (NVRTC, no GPU): every kernel of sm_90 compiled and listed
# with its program; again from the disk cache; the top_p bins' build
# lists its three kernels more
$bin cuda-compile --arch sm_90 --cache --cache-dir $tmp/cc > $tmp/cc1.out 2>&1; rc1=$?
$bin cuda-compile --arch 90 --cache --cache-dir $tmp/cc > $tmp/cc2.out 2>&1; rc2=$?
$bin cuda-compile --arch=sm_90 --topp-bins > $tmp/cc3.out 2>&1; rc3=$?
check cuda_compile_ok '[ $rc1 = 0 ] && grep -q "^sm_90  kernels.cu  ok  sm_90 CUBIN, [0-9]* bytes, .* (compiled)$" $tmp/cc1.out &&
  [ $(grep -c "^  ms_k_[a-z_]*  *ok  *program [0-9]*, " $tmp/cc1.out) = 12 ] && grep -q "^  ms_k_stats  *ok  *program 2, " $tmp/cc1.out'
check cuda_compile_disk_cache '[ $rc2 = 0 ] && grep -q "^sm_90  kernels.cu  ok  .* (disk cache)$" $tmp/cc2.out'
check cuda_compile_topp_bins '[ $rc3 = 0 ] && [ $(grep -c "^  ms_k_[a-z_]*  *ok  *program [0-9]*, " $tmp/cc3.out) = 15 ] &&
  grep -q "^  ms_k_pgather  *ok  *program 9, " $tmp/cc3.out'

# each parameter set on both devices; sample and logprobs add their flags
sets=(
  ""
  "--temperature 0.7 --top-k 20 --top-p 0.9 --min-p 0.02"
  "--top-p 0.5 --temperature 1.3"
  "--profile hf --top-k 10 --top-p 0.8 --temperature 0.9 --repetition-penalty 1.2 --prompt-ids 5,6,7 --output-ids 8"
  "--repetition-penalty 1.3 --frequency-penalty 0.5 --presence-penalty 0.3 --prompt-ids 1,2,3 --output-ids 4,5,4"
  "--logit-bias 3=5,7=-100,3=0.25 --banned-ids 1,2 --min-tokens 3 --eos-token-id 5 --stop-token-ids 9 --output-ids 11"
  "--temperature 0"
  "--allowed-ids 0,3,10,20,30,40,50 --temperature 0.8 --top-k 4"
  "--profile sglang --top-k 30 --top-p 0.7 --min-p 0.01 --repetition-penalty 1.4 --frequency-penalty 0.3 --logit-bias 4=2 --prompt-ids 4,9 --output-ids 4,12"
  "--bad-words 8,1;2;5,8,3;9,4,5,8,6 --prompt-ids 9 --output-ids 4,5,8 --temperature 0.8"
  "--profile llamacpp"
  "--profile llamacpp --repetition-penalty 1.4 --frequency-penalty 0.2 --presence-penalty 0.1 --penalty-last-n 4 --prompt-ids 3,5 --output-ids 5,7,5"
  "--profile llamacpp --top-k 30 --typical-p 0.8 --xtc-probability 0.9 --xtc-threshold 0.05 --dynatemp-range 0.5 --min-tokens-to-keep 3 --seed 4"
  "--profile llamacpp --samplers kmtp --top-k 20 --top-p 0.6 --min-p 0.1 --temperature 1.4 --logit-bias 3=4 --banned-ids 7"
  "--profile llamacpp --top-n-sigma 1.3 --top-k 80 --banned-ids 3,4"
  "--profile llamacpp --samplers kstm --top-k 60 --top-n-sigma 0.9 --temperature 0.8"
  "--profile hf --top-k 0 --bad-words 2,2,7;5;4,2,2,6 --no-repeat-ngram 2 --exp-decay 1,1.5 --eos-token-id 3 --prompt-ids 9,4,2 --output-ids 2,4,2,2"
  "--budget 2 --budget-start 5 --budget-end 6,7 --prompt-ids 1,5 --output-ids 2,3 --temperature 0.8"
  "--budget 3 --budget-start 5 --budget-end 6,7 --prompt-ids 5 --output-ids 6 --profile hf --top-k 20"
  "--profile hf --top-k 0 --top-p 0.95 --epsilon 0.003 --temperature 0.9"
  "--profile hf --top-k 40 --eta 0.002 --min-p 0.01"
  "--profile hf --top-k 0 --epsilon 0.001 --eta 0.01"
)
cat > $tmp/cmp.py <<'PY'
import json, sys
kind, a, b = sys.argv[1], sys.argv[2], sys.argv[3]
A = [json.loads(l) for l in open(a)]
B = [json.loads(l) for l in open(b)]
def bad(why):
    print(why); sys.exit(1)
if len(A) != len(B) or not A:
    bad("rows: cpu %d, cuda %d" % (len(A), len(B)))
for x, y in zip(A, B):
    if kind == "probs":
        keys = set(x["probs"]) | set(y["probs"])
        d = max(abs(x["probs"].get(k, 0.0) - y["probs"].get(k, 0.0)) for k in keys)
        if d > 1e-5: bad("row %d: probs differ by %g" % (x["row"], d))
    elif kind == "sample":
        if x != y: bad("row %d: cpu %s, cuda %s" % (x["row"], x, y))
    else:
        if (x["token"], x["rank"]) != (y["token"], y["rank"]) or [t[0] for t in x["top"]] != [t[0] for t in y["top"]]:
            bad("row %d: cpu %s, cuda %s" % (x["row"], x, y))
        d = max([abs(x["logprob"] - y["logprob"])] + [abs(s[1] - t[1]) for s, t in zip(x["top"], y["top"])])
        if d > 1e-4: bad("row %d: logprobs differ by %g" % (x["row"], d))
print("ok")
PY
same() { # name, kind, args...: the command on both devices, outputs compared
  local name=$1 kind=$2; shift 2
  "$@" --device cpu > $tmp/cpu.out 2> $tmp/cpu.err; local rc1=$?
  "$@" --device cuda > $tmp/gpu.out 2>> $tmp/emu.err; local rc2=$?
  if [ $rc1 = 0 ] && [ $rc2 = 0 ] && python3 $tmp/cmp.py $kind $tmp/cpu.out $tmp/gpu.out > $tmp/cmp.log 2>&1; then
    pass "$name"
  else
    fail "$name (rc cpu $rc1, cuda $rc2: $(head -c 300 $tmp/cmp.log) $(tail -c 200 $tmp/emu.err))"
  fi
}
for i in "${!sets[@]}"; do
  # shellcheck disable=SC2086
  set -- ${sets[$i]}
  same "${pfx}probs_set$i" probs $bin probs --logits $tmp/l.bin --vocab 300 "$@"
  acc=""
  case "${sets[$i]}" in *penalty*|*bad-words*|*budget*) acc="--accept";; esac
  same "${pfx}sample_set$i${acc:+_accept}" sample $bin sample --logits $tmp/l.bin --vocab 300 --seed 11 --draws 12 $acc "$@"
  mode=raw; [ $((i % 2)) = 1 ] && mode=processed
  same "${pfx}logprobs_${mode}_set$i" logprobs $bin logprobs --logits $tmp/l.bin --vocab 300 --seed 5 --top 5 --mode $mode "$@"
  # a given token scored (ms_score / score_tokens): id i * 37, kept or not
  same "${pfx}logprobs_token_${mode}_set$i" logprobs $bin logprobs --logits $tmp/l.bin --vocab 300 --seed 5 --top 5 --mode $mode \
    --token $(( (i * 37) % 300 )) "$@"
done
# a row long enough for the multi-block first pass (ms_k_stats), unseeded:
# the seed the CPU sequence picks is the one the GPU draws with
same ${pfx}probs_split probs $bin probs --logits $tmp/big.bin --vocab 9000 --temperature 0.8 --top-p 0.95 --min-p 0.01
same ${pfx}sample_split sample $bin sample --logits $tmp/big.bin --vocab 9000 --top-k 50 --top-p 0.95 --draws 6 --seed 3

# what the GPU path refuses: its message, status 2, nothing on stdout
refused() { # name, what the message names, the library's reason (ms_cuda_last_error), args...
  local name=$1 want=$2 why=$3; shift 3
  $bin "$@" --device cuda > $tmp/r.out 2> $tmp/r.err; local rc=$?
  if [ $rc = 2 ] && [ ! -s $tmp/r.out ] && grep -q "GPU path does not implement" $tmp/r.err && grep -q -- "$want" $tmp/r.err \
     && grep -q MS_ERR_UNSUPPORTED $tmp/r.err && grep -q -- "$why" $tmp/r.err; then
    pass "${pfx}refuses_$name"
  else
    fail "${pfx}refuses_$name (rc $rc: $(head -c 200 $tmp/r.err))"
  fi
}
refused llamacpp_mirostat "--mirostat" "mirostat is not implemented on the GPU" sample --logits $tmp/l.bin --vocab 300 --profile llamacpp --mirostat 2 --seed 1
refused llamacpp_no_top_k "first acting stage is not --top-k" "needs top_k before its other samplers" probs --logits $tmp/l.bin --vocab 300 --profile llamacpp --top-k 0
refused llamacpp_sigma_no_top_k "first acting stage is not --top-k" "needs top_k before its other samplers" probs --logits $tmp/l.bin --vocab 300 --profile llamacpp --top-n-sigma 1 --samplers spt
refused typical "--typical-p" "typical_p is not implemented on the GPU" probs --logits $tmp/l.bin --vocab 300 --profile hf --typical-p 0.9
refused top_2000 "--top above 1024" "at most 1024 top logprobs" logprobs --logits $tmp/l.bin --vocab 300 --top 2000
# a row the sampler cannot sample: status 3 on both devices
for dev in cpu cuda; do
  $bin sample --logits $tmp/nan.bin --vocab 4 --seed 1 --device $dev > /dev/null 2> $tmp/nan.err
  check "nan_row_$dev" '[ $? = 3 ] && grep -q "NaN" $tmp/nan.err'
done

# bench --device cuda at toy sizes: the JSON lines and their keys
$bin bench --device cuda --batch 1,2 --vocab 3000 --reps 2 --inner 2 --copy-mb 1 --working-set-mb 0 --json \
  > $tmp/bench.jsonl 2>> $tmp/emu.err
rc=$?
python3 - $tmp/bench.jsonl $gpu > $tmp/bench.log 2>&1 <<'PY'
import json, sys
emu = sys.argv[2] != "1"
L = [json.loads(l) for l in open(sys.argv[1])]
g = {}
for l in L: g.setdefault(l["group"], []).append(l)
assert set(g) == {"cuda_device", "cuda_create", "cuda_floor", "cuda"}, set(g)
d = g["cuda_device"][0]
assert d["emulator"] is emu and ("emulator" in d["device"]) == emu and d["target"].startswith("sm_"), d
c = g["cuda_create"][0]
for k in ("create_first_ms", "create_warm_ms", "first_source", "compile_ms", "disk_load_ms"): assert k in c, k
assert c["create_first_ms"] > 0 and c["create_warm_ms"] > 0
assert c["compile_ms"] is not None and c["compile_ms"] > 0, c
f = g["cuda_floor"][0]
assert f["copy_bytes"] == 1048576 and f["copy_gbps"] > 0, f
cases = {(l["config"], l["batch"], l["vocab"]) for l in g["cuda"]}
assert cases == {(c, b, 3000) for c in ("greedy", "top_p_0.9", "min_p_0.05", "top_k_50_top_p_0.95") for b in (1, 2)}, cases
keys = {"impl", "config", "batch", "vocab", "sigma", "us_per_batch", "us_per_row", "host_us_per_batch", "floor_us", "x_floor",
        "copy_gbps", "device", "target", "emulator", "reps", "inner", "working_set_mb"}
for l in g["cuda"]:
    assert keys <= set(l), keys - set(l)
    assert l["impl"] == "mysample" and l["us_per_batch"] > 0 and l["floor_us"] > 0 and l["emulator"] is emu
    assert l["host_us_per_batch"] > 0
    assert abs(l["x_floor"] - l["us_per_batch"] / l["floor_us"]) < 1e-2 * l["x_floor"]
print("ok")
PY
check ${pfx}bench_json '[ $rc = 0 ] && grep -q "^ok$" $tmp/bench.log || { cat $tmp/bench.log; false; }'
# --min-tokens: the rows take the mask path (EOS, id 0, masked; the bench
# checks the greedy rows against the argmax of the other ids)
$bin bench --device cuda --batch 1,2 --vocab 3000 --config greedy,top_p_0.9 --reps 1 --inner 1 --copy-mb 1 \
  --working-set-mb 0 --no-cold-compile --min-tokens 3 --json > $tmp/bench_mt.jsonl 2>> $tmp/emu.err
check ${pfx}bench_min_tokens '[ $? = 0 ] && [ $(grep -c "\"min_tokens\": 3," $tmp/bench_mt.jsonl) = 4 ]'
# (--no-cold-compile, as the benches below: no cold compile, compile_ms null)
check ${pfx}bench_no_cold_compile 'grep -q "\"compile_ms\": null" $tmp/bench_mt.jsonl'
$bin bench --device cuda --min-tokens -1 > /dev/null 2> $tmp/mt.err
check bench_min_tokens_bad '[ $? = 2 ] && grep -q "bad --min-tokens" $tmp/mt.err'
# cuda-compile's --arch: sm_NN, compute_NN or NN, nothing after the digits
for a in 90abc sm_90a sm_ 9x0 compute_; do
  $bin cuda-compile --arch $a > /dev/null 2> $tmp/arch.err
  check "cuda_compile_bad_arch_$a" '[ $? = 2 ] && grep -q "bad --arch .$a." $tmp/arch.err'
done
# a flag as the last word: unknown (not "needs a value"), or one that wants a value
$bin bench --device cuda --no-such-flag > /dev/null 2> $tmp/uf.err
check bench_unknown_last_flag '[ $? = 2 ] && grep -q "unknown flag .--no-such-flag." $tmp/uf.err && ! grep -q "needs a value" $tmp/uf.err'
$bin bench --device cuda --reps > /dev/null 2> $tmp/uf.err
check bench_last_flag_wants_value '[ $? = 2 ] && grep -q "^mysample bench: --reps needs a value" $tmp/uf.err'
# --logprobs: every row's raw logprob, rank and top 5 (ms_k_lp; the bench
# checks each row's result against its token)
$bin bench --device cuda --batch 1,3 --vocab 3000 --config greedy,top_k_50_top_p_0.95 --reps 1 --inner 1 --copy-mb 1 \
  --working-set-mb 0 --no-cold-compile --logprobs 5 --json > $tmp/bench_lp.jsonl 2>> $tmp/emu.err
check ${pfx}bench_logprobs '[ $? = 0 ] && [ $(grep -c "\"logprobs\": 5}" $tmp/bench_lp.jsonl) = 4 ]'
$bin bench --device cuda --logprobs 1025 > /dev/null 2> $tmp/lp.err
check bench_logprobs_bad '[ $? = 2 ] && grep -q "bad --logprobs" $tmp/lp.err'
# --penalties: every row on a slot whose prompt holds 2000 of the 3000 ids
# (the bench checks the greedy rows against the argmax of the penalised
# logits: the raw argmax lies in the prompt for about 2 rows in 3)
$bin bench --device cuda --batch 1,8 --vocab 3000 --config greedy,min_p_0.05 --reps 1 --inner 1 --copy-mb 1 \
  --working-set-mb 0 --no-cold-compile --penalties 2000 --json > $tmp/bench_pen.jsonl 2>> $tmp/emu.err
check ${pfx}bench_penalties '[ $? = 0 ] && [ $(grep -c "\"penalties\": 2000," $tmp/bench_pen.jsonl) = 4 ]'
$bin bench --device cuda --penalties -1 > /dev/null 2> $tmp/pen.err
check bench_penalties_bad '[ $? = 2 ] && grep -q "bad --penalties" $tmp/pen.err'
[ "$gpu" = 1 ] && { echo "(the real GPU: the emulator-only table and text checks are left out)"; exit 0; }
# the host's side alone: an emulator that runs no kernels (NOEXEC) leaves
# the tokens unwritten, which the bench's check finds unless --no-check
MYSAMPLE_CUDA_EMU_NOEXEC=1 $bin bench --device cuda --batch 2 --vocab 3000 --config greedy --reps 1 --inner 1 --copy-mb 1 \
  --working-set-mb 0 --no-cold-compile > /dev/null 2> $tmp/nx.err
check ${pfx}bench_noexec_caught '[ $? = 1 ] && grep -q "wrong" $tmp/nx.err'
MYSAMPLE_CUDA_EMU_NOEXEC=1 $bin bench --device cuda --batch 2 --vocab 3000 --config greedy,top_p_0.9 --reps 1 --inner 1 --copy-mb 1 \
  --working-set-mb 0 --no-cold-compile --no-check --json > $tmp/nx.jsonl 2> $tmp/nx.err
check ${pfx}bench_noexec_host_us '[ $? = 0 ] && [ $(grep -c "\"host_us_per_batch\": [0-9]" $tmp/nx.jsonl) = 2 ]'
python3 tools/gpu_bench.py table --raw $tmp/bench.jsonl > $tmp/table.md 2> $tmp/table.err
check emu_bench_table '[ $? = 0 ] && grep -q "CPU EMULATOR" $tmp/table.md && [ $(grep -c "^| 3000 |" $tmp/table.md) = 8 ] && grep -q "^- GPU model: mysample CPU emulator" $tmp/table.md'
# build/flashinfer_bench's lines (tools/flashinfer_bench.cu; it needs a GPU):
# its device line and figures reach the FlashInfer column and the verdict
cat > $tmp/fi.jsonl <<'EOF2'
{"group": "cuda_device", "impl": "flashinfer_cpp", "device": "x", "sm": 90, "driver": 13000, "flashinfer": "0.7.2.post1"}
{"group": "cuda", "impl": "flashinfer", "config": "top_p_0.9", "batch": 2, "vocab": 3000, "us_per_batch": 1e9}
{"group": "cuda", "impl": "flashinfer", "config": "greedy", "batch": 2, "vocab": 3000, "error": "no FlashInfer kernel for this configuration"}
{"group": "cuda", "impl": "flashinfer_joint", "config": "top_k_50_top_p_0.95", "batch": 1, "vocab": 3000, "us_per_batch": 77.5}
EOF2
python3 tools/gpu_bench.py table $tmp/bench.jsonl $tmp/fi.jsonl > $tmp/table_fi.md 2> $tmp/table.err
check emu_bench_table_flashinfer '[ $? = 0 ] && grep -q "^- FlashInfer 0.7.2.post1 through tools/flashinfer_bench.cu" $tmp/table_fi.md && grep -q "^| 3000 | 2 | top_p_0.9 | .* | 1000000000.0 | " $tmp/table_fi.md && grep -q "joint route.*V=3000 B=1 top_k_50_top_p_0.95 77.5" $tmp/table_fi.md && grep -q "^- faster than FlashInfer at every batch size: \*\*yes\*\* (1 of 1)" $tmp/table_fi.md'
$bin bench --device cuda --batch 1 --vocab 3000 --config greedy --reps 1 --inner 1 --copy-mb 1 --working-set-mb 0 --no-cold-compile \
  > $tmp/bench.txt 2>> $tmp/emu.err
check emu_bench_text '[ $? = 0 ] && grep -q "^NOTE: this is the CPU emulator" $tmp/bench.txt && grep -q "^greedy  *1  *3000 " $tmp/bench.txt && ! grep -q "cold NVRTC compile" $tmp/bench.txt'

# the emulator reports bad driver calls and leaked allocations on stderr
if grep -q '^\[cuda-emu\]' $tmp/emu.err; then
  grep '^\[cuda-emu\]' $tmp/emu.err | head -5; fail emu_no_driver_errors
else
  pass emu_no_driver_errors
fi
awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "  cuda_cli: %.1f s in all\n", e - s }'
exit 0
