#!/usr/bin/env bash
# The sampling CLI (mysample probs | sample | logprobs): output shape and
# values, seeded reproducibility, and every bad input exiting non-zero with
# a message. Prints PASS/FAIL lines.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=build/mysample
# the logits files and the JSON checks are Python (make test needs only a
# C compiler: without python3 this file SKIPs, as stream.test.sh does)
if ! command -v python3 >/dev/null; then echo "SKIP cli: no python3"; exit 0; fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass() { echo "PASS cli_$1"; }
fail() { echo "FAIL cli_$1"; }
check() { if eval "$2"; then pass "$1"; else fail "$1"; fi; }
python3 -c "
import struct, math
rows = [[0.1 * i for i in range(10)], [1, 2, 3, 4, 5, 5, 4, 3, 2, 1]]
open('$tmp/l.bin', 'wb').write(b''.join(struct.pack('<10f', *r) for r in rows))
open('$tmp/bad.bin', 'wb').write(b'\x00' * 13)
"
# probs: top-p 0.5 on row 0 keeps the largest tokens until the mass strictly above reaches 0.5
$bin probs --logits $tmp/l.bin --vocab 10 --top-p 0.5 > $tmp/p.out 2> $tmp/err
check probs_rc '[ $? = 0 ]'
python3 - "$tmp/p.out" > $tmp/py.out <<'PY'
import json, math, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
ok = len(lines) == 2 and [l["row"] for l in lines] == [0, 1]
for l in lines:
    ok &= abs(sum(l["probs"].values()) - 1) < 1e-5
# row 0: softmax of 0.1*i, keep by descending value while mass above < 0.5
x = [0.1 * i for i in range(10)]
z = sum(math.exp(v) for v in x)
p = sorted(((math.exp(v) / z, i) for i, v in enumerate(x)), reverse=True)
kept, above = [], 0.0
for q, i in p:
    if kept and above >= 0.5: break
    kept.append(i); above += q
ok &= sorted(int(k) for k in lines[0]["probs"]) == sorted(kept)
# row 1: the tie at the top (4 and 5) stays together, nothing else
ok &= sorted(lines[1]["probs"]) == ["4", "5"] and abs(lines[1]["probs"]["4"] - 0.5) < 1e-6
print("ok" if ok else "bad")
PY
check probs_values 'grep -q "^ok$" $tmp/py.out'
a=$($bin sample --logits $tmp/l.bin --vocab 10 --seed 7 --draws 50)
b=$($bin sample --logits $tmp/l.bin --vocab 10 --seed 7 --draws 50)
c=$($bin sample --logits $tmp/l.bin --vocab 10 --seed 8 --draws 50)
check sample_seeded_reproducible '[ "$a" = "$b" ] && [ "$a" != "$c" ]'
d=$($bin sample --logits $tmp/l.bin --vocab 10 --seed 7 --draws 5 --position 45 | head -1)
check sample_positions '[ "$(echo "$a" | head -1 | python3 -c "import json,sys; print(json.load(sys.stdin)[\"tokens\"][45:50])")" = "$(echo "$d" | python3 -c "import json,sys; print(json.load(sys.stdin)[\"tokens\"])")" ]'
g=$($bin sample --logits $tmp/l.bin --vocab 10 --temperature 0 --draws 3 | head -1)
check sample_greedy '[ "$(echo "$g" | python3 -c "import json,sys; print(json.load(sys.stdin)[\"tokens\"])")" = "[9, 9, 9]" ]'
$bin logprobs --logits $tmp/l.bin --vocab 10 --top 3 --seed 1 --temperature 0 > $tmp/lp.out
python3 - "$tmp/lp.out" > $tmp/py2.out <<'PY'
import json, math, sys
l = json.loads(open(sys.argv[1]).readline())
x = [0.1 * i for i in range(10)]
lz = math.log(sum(math.exp(v) for v in x))
ok = l["token"] == 9 and l["rank"] == 1 and abs(l["logprob"] - (0.9 - lz)) < 1e-5
ok &= [t[0] for t in l["top"]] == [9, 8, 7] and all(abs(t[1] - (x[t[0]] - lz)) < 1e-5 for t in l["top"])
print("ok" if ok else "bad")
PY
check logprobs_values 'grep -q "^ok$" $tmp/py2.out'
# --token: a given token scored (ms_score), raw and processed (dropped: -9999.0, rank V)
$bin logprobs --logits $tmp/l.bin --vocab 10 --rows 1 --top 2 --token 3 > $tmp/lt.out
$bin logprobs --logits $tmp/l.bin --vocab 10 --rows 1 --top 2 --token 3 --top-k 2 --mode processed >> $tmp/lt.out
python3 - "$tmp/lt.out" > $tmp/py5.out <<'PY'
import json, math, sys
a, b = [json.loads(l) for l in open(sys.argv[1])]
x = [0.1 * i for i in range(10)]
lz = math.log(sum(math.exp(v) for v in x))
ok = a["token"] == 3 and a["rank"] == 7 and abs(a["logprob"] - (0.3 - lz)) < 1e-5 and [t[0] for t in a["top"]] == [9, 8]
ok &= b["token"] == 3 and b["rank"] == 10 and b["logprob"] == -9999.0 and [t[0] for t in b["top"]] == [9, 8]
ok &= abs(b["top"][0][1] - (0.9 - math.log(math.exp(0.9) + math.exp(0.8)))) < 1e-5
print("ok" if ok else "bad")
PY
check logprobs_token 'grep -q "^ok$" $tmp/py5.out'
# bad inputs: non-zero exit and a message
bad() { # name, expected text, command...
  local name=$1 want=$2; shift 2
  "$@" > /dev/null 2> $tmp/err; local rc=$?
  if [ $rc -ne 0 ] && grep -q -- "$want" $tmp/err; then pass "rejects_$name"; else fail "rejects_$name (rc $rc: $(head -c 200 $tmp/err))"; fi
}
bad top_p "top_p must be in (0, 1], got 0.0." $bin probs --logits $tmp/l.bin --vocab 10 --top-p 0
bad temperature "temperature must be non-negative" $bin sample --logits $tmp/l.bin --vocab 10 --temperature -1
bad hf_top_p "has to be a float > 0 and < 1" $bin probs --logits $tmp/l.bin --vocab 10 --profile hf --top-p 1.5
bad unknown_flag "unknown flag" $bin probs --logits $tmp/l.bin --vocab 10 --frobnicate 1
bad bad_number "invalid value for --top-k" $bin probs --logits $tmp/l.bin --vocab 10 --top-k abc
bad missing_logits "--logits is required" $bin probs --vocab 10
bad file_size "not a whole number" $bin probs --logits $tmp/bad.bin --vocab 10
bad no_file "cannot open" $bin probs --logits $tmp/none.bin --vocab 10
bad logits_dir "cannot read $tmp: Is a directory" $bin probs --logits $tmp --vocab 10
bad logits_pipe "needs a regular file" sh -c "cat $tmp/l.bin | $bin probs --logits /dev/stdin --vocab 10"
bad bias_range "logit_bias contain out-of-vocab" $bin probs --logits $tmp/l.bin --vocab 10 --logit-bias 12=1
bad ids_syntax "invalid value for --banned-ids" $bin probs --logits $tmp/l.bin --vocab 10 --banned-ids 1,,2
bad ids_trailing_comma "invalid value for --prompt-ids" $bin probs --logits $tmp/l.bin --vocab 10 --prompt-ids 1,
bad bias_trailing_comma "invalid value for --logit-bias" $bin probs --logits $tmp/l.bin --vocab 10 --logit-bias 1=2,
bad profile "invalid value for --profile" $bin probs --logits $tmp/l.bin --vocab 10 --profile nope
# the sampler catalogue flags: each one parses its value (a bad one is the
# CLI's own error, whatever the profile)
for fl in --typical-p --top-n-sigma --xtc-probability --xtc-threshold --dynatemp-range --dynatemp-exponent \
          --mirostat --mirostat-tau --mirostat-eta --mirostat-mu --dry-multiplier --dry-base --dry-allowed-length \
          --dry-last-n --dry-breakers --penalty-last-n --budget --budget-start --budget-end; do
  bad "syntax${fl}" "invalid value for $fl" $bin probs --logits $tmp/l.bin --vocab 10 --profile llamacpp $fl 1x
done
bad dry_breakers_syntax "invalid value for --dry-breakers" $bin probs --logits $tmp/l.bin --vocab 10 --profile llamacpp --dry-breakers "1,,2"
bad missing_value "invalid value for --samplers" $bin probs --logits $tmp/l.bin --vocab 10 --profile llamacpp --samplers
# ... and the library judges the values and whether the profile has the sampler
bad mirostat_range "mirostat must be" $bin sample --logits $tmp/l.bin --vocab 10 --profile llamacpp --mirostat 3
bad mirostat_range_any_order "mirostat must be" $bin sample --logits $tmp/l.bin --vocab 10 --mirostat 3 --profile llamacpp
bad xtc_vllm "not supported by this profile" $bin probs --logits $tmp/l.bin --vocab 10 --xtc-probability 0.5
bad xtc_vllm_names_it "XTC" $bin probs --logits $tmp/l.bin --vocab 10 --profile vllm --xtc-probability 0.5
bad mirostat_hf "not supported by this profile" $bin sample --logits $tmp/l.bin --vocab 10 --profile hf --mirostat 2
bad dry_sglang "not supported by this profile" $bin probs --logits $tmp/l.bin --vocab 10 --profile sglang --dry-multiplier 0.8
bad typical_sglang "not supported by this profile" $bin probs --logits $tmp/l.bin --vocab 10 --profile sglang --typical-p 0.9
bad top_n_sigma_hf "not supported by this profile" $bin probs --logits $tmp/l.bin --vocab 10 --profile hf --top-n-sigma 1
bad penalty_last_n_vllm "not supported by this profile" $bin probs --logits $tmp/l.bin --vocab 10 --penalty-last-n 64
bad samplers_vllm "not supported by this profile" $bin probs --logits $tmp/l.bin --vocab 10 --samplers kpt
bad hf_typical_range "typical_p" $bin probs --logits $tmp/l.bin --vocab 10 --profile hf --typical-p 0
bad samplers_letter "unknown sampler" $bin probs --logits $tmp/l.bin --vocab 10 --profile llamacpp --samplers kpq
bad dry_breaker_vocab "out-of-vocab" $bin probs --logits $tmp/l.bin --vocab 10 --profile llamacpp --dry-multiplier 0.8 --dry-breakers "1,2;12"
bad dry_allowed_length "dry_allowed_length" $bin probs --logits $tmp/l.bin --vocab 10 --profile llamacpp --dry-allowed-length -1
bad penalty_last_n_range "penalty_last_n" $bin probs --logits $tmp/l.bin --vocab 10 --profile llamacpp --penalty-last-n -2
bad budget_sequences "start and end sequences" $bin sample --logits $tmp/l.bin --vocab 10 --budget 2
bad budget_vocab "out-of-vocab" $bin sample --logits $tmp/l.bin --vocab 10 --budget 2 --budget-start 1 --budget-end 12
bad accept_probs "unknown flag" $bin probs --logits $tmp/l.bin --vocab 10 --accept
bad token_range "outside \[0, vocab)" $bin logprobs --logits $tmp/l.bin --vocab 10 --token 10
bad token_syntax "invalid value for --token" $bin logprobs --logits $tmp/l.bin --vocab 10 --token -1
bad token_sample "unknown flag" $bin sample --logits $tmp/l.bin --vocab 10 --token 1
# bench: a name that matches no row, or a number that is not one, is an
# error (atoi took "5x" as 5; an unknown --config printed nothing, exit 0)
bad bench_config "bad --config 'typo'" $bin bench --config typo
bad bench_config_profile "bad --config 'hf+mirostat_2'" $bin bench --config hf+mirostat_2
bad bench_vocab "bad --vocab '5x'" $bin bench --vocab 5x --config greedy
bad bench_reps "bad --reps 'abc'" $bin bench --reps abc --config greedy
bad bench_sigma "bad --sigma 'abc'" $bin bench --sigma abc --config greedy
bad bench_missing "--vocab needs a value" $bin bench --config greedy --vocab
b1=$($bin bench --vocab 64 --sigma 1 --reps 3 --no-naive --config greedy --json 2>&1)
check bench_config_greedy '[ "$(echo "$b1" | python3 -c "import json,sys; print(\",\".join(json.loads(l)[\"config\"] for l in sys.stdin))")" = "greedy" ]'
# the profile's own defaults, wherever --profile stands
x1=$($bin probs --logits $tmp/l.bin --vocab 10 --profile llamacpp --top-k 3 2>&1)
x2=$($bin probs --logits $tmp/l.bin --vocab 10 --top-k 3 --profile llamacpp 2>&1)
check profile_flag_order '[ -n "$x1" ] && [ "$x1" = "$x2" ]'
# llama.cpp's top-k keeps exactly k (row 1 ties 4 with 4 at the 3rd place)
echo "$x1" > $tmp/k3.out
check llamacpp_top_k_3 '[ "$(python3 -c "import json,sys; print([sum(1 for v in json.loads(l)[\"probs\"].values() if v > 0) for l in open(sys.argv[1])])" $tmp/k3.out)" = "[3, 3]" ]'
# llama.cpp's default chain (ms_params_profile_default): top-k 40, top-p
# 0.95 and min-p 0.05 on the untempered softmax, temperature 0.8 last
$bin probs --logits $tmp/l.bin --vocab 10 --profile llamacpp > $tmp/ld.out 2> $tmp/err
python3 - "$tmp/ld.out" > $tmp/py3.out <<'PY'
import json, math, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
rows = [[0.1 * i for i in range(10)], [1, 2, 3, 4, 5, 5, 4, 3, 2, 1]]
ok = len(lines) == 2
for l, x in zip(lines, rows):
    order = sorted(range(10), key=lambda i: -x[i])[:40]
    z = sum(math.exp(x[i]) for i in order)
    kept, cum = [], 0.0
    for i in order:                     # top-p 0.95: stop once the mass reaches p
        kept.append(i); cum += math.exp(x[i]) / z
        if cum >= 0.95: break
    kept = [i for i in kept if x[i] >= max(x) + math.log(0.05)]   # min-p 0.05
    zt = sum(math.exp(x[i] / 0.8) for i in kept)                     # temperature last
    want = {str(i): math.exp(x[i] / 0.8) / zt for i in kept}
    got = l["probs"]
    ok &= sorted(got) == sorted(want) and all(abs(got[k] - want[k]) < 1e-5 for k in want)
print("ok" if ok else "bad")
PY
check llamacpp_default_chain 'grep -q "^ok$" $tmp/py3.out'
# --accept: a generation over one row; the budget forces its end sequence
# (start 1 in the prompt, budget 2, end 2,3; greedy picks 9 otherwise)
u=$($bin sample --logits $tmp/l.bin --vocab 10 --rows 1 --temperature 0 --prompt-ids 1 --budget 2 --budget-start 1 --budget-end 2,3 --draws 5 --accept 2>&1)
check budget_forces_end '[ "$(echo "$u" | python3 -c "import json,sys; l = json.load(sys.stdin); print(l[\"tokens\"], l[\"budget\"][\"state\"])")" = "[9, 9, 2, 3, 9] done" ]'
u=$($bin sample --logits $tmp/l.bin --vocab 10 --rows 1 --temperature 0 --prompt-ids 1 --budget 2 --budget-start 1 --budget-end 2,3 --draws 5 2>&1)
check budget_counting_without_accept '[ "$(echo "$u" | python3 -c "import json,sys; l = json.load(sys.stdin); print(l[\"tokens\"], l[\"budget\"][\"state\"], l[\"budget\"][\"remaining\"])")" = "[9, 9, 9, 9, 9] counting 2" ]'
# mirostat 2 over 20 accepted draws: seeded, mu reported after each draw
m1=$($bin sample --logits $tmp/l.bin --vocab 10 --profile llamacpp --mirostat 2 --seed 3 --draws 20 --accept 2>&1)
m2=$($bin sample --logits $tmp/l.bin --vocab 10 --profile llamacpp --mirostat 2 --seed 3 --draws 20 --accept 2>&1)
check mirostat_accept_seeded '[ -n "$m1" ] && [ "$m1" = "$m2" ]'
echo "$m1" > $tmp/mu.out
python3 - "$tmp/mu.out" > $tmp/py4.out <<'PY'
import json, sys
ok = True
for line in open(sys.argv[1]):
    l = json.loads(line)
    mu = l.get("mirostat_mu", [])
    # mu starts at 2 * tau = 10 and moves by eta * (tau - surprise) each step
    ok &= len(mu) == 20 and all(-9999.0 < m < 100 for m in mu) and len(set(mu)) > 1
print("ok" if ok else "bad")
PY
check mirostat_mu_carried 'grep -q "^ok$" $tmp/py4.out'
$bin probs --help > $tmp/help 2>&1
check help '[ $? = 0 ] && grep -q -- "--repetition-penalty" $tmp/help && grep -q -- "--mode raw|processed" $tmp/help'
check help_catalogue '( for fl in --typical-p --top-n-sigma --xtc-probability --xtc-threshold --dynatemp-range --dynatemp-exponent --mirostat --mirostat-tau --mirostat-eta --dry-multiplier --dry-base --dry-allowed-length --dry-last-n --dry-breakers --penalty-last-n --samplers --budget --budget-start --budget-end --epsilon --eta --no-repeat-ngram --bad-words llamacpp; do grep -q -- "$fl" $tmp/help || exit 1; done )'
exit 0
