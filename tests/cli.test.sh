#!/usr/bin/env bash
# The sampling CLI (mysample probs | sample | logprobs): output shape and
# values, seeded reproducibility, and every bad input exiting non-zero with
# a message. Prints PASS/FAIL lines.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=build/mysample
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
bad bias_range "logit_bias contain out-of-vocab" $bin probs --logits $tmp/l.bin --vocab 10 --logit-bias 12=1
bad ids_syntax "invalid value for --banned-ids" $bin probs --logits $tmp/l.bin --vocab 10 --banned-ids 1,,2
bad profile "invalid value for --profile" $bin probs --logits $tmp/l.bin --vocab 10 --profile nope
$bin probs --help > $tmp/help 2>&1
check help '[ $? = 0 ] && grep -q -- "--repetition-penalty" $tmp/help && grep -q -- "--mode raw|processed" $tmp/help'
exit 0
