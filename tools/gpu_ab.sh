#!/usr/bin/env bash
# Kernel variants side by side on a GPU, in one process tree, rounds
# alternating so clock drift falls on every variant alike:
#
#   bash tools/gpu_ab.sh ROUNDS 'NAME|BINARY|NVRTC OPTIONS|BENCH FLAGS[|ENV]' ...
#
# Each variant runs `BINARY bench --device cuda --json BENCH FLAGS` with
# MYSAMPLE_CUDA_NVRTC_OPTIONS set to its options (kernels.cu's MS_* macros
# via -D, say) and a kernel cache of its own; BINARY defaults to
# build/mysample (an older build carried as another file is the baseline);
# ENV, VAR=VALUE words, goes to its environment (MYSAMPLE_CUDA_PDL=0, say).
# Prints one table: per variant, configuration, batch and vocabulary, the
# median over the rounds of the us per batch. The JSON lines, tagged with
# the variant, go to $AB_OUT (default /tmp/gpu_ab.jsonl). Needs a GPU; not
# part of `make test`.
set -uo pipefail
cd "$(dirname "$0")/.."
rounds=${1:?usage: tools/gpu_ab.sh ROUNDS 'NAME|BINARY|NVRTC OPTIONS|BENCH FLAGS' ...}
shift
out=${AB_OUT:-/tmp/gpu_ab.jsonl}
: > "$out"
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
for ((r = 1; r <= rounds; r++)); do
  for v in "$@"; do
    IFS='|' read -r name bin opts flags envs <<< "$v"
    bin=${bin:-build/mysample}
    # no cold compile a run (seconds of the lease each) where the build
    # can leave it out (older baselines cannot)
    nocc=; "$bin" bench --device cuda --help 2>/dev/null | grep -q -- --no-cold-compile && nocc=--no-cold-compile
    # shellcheck disable=SC2086 # the flags and the environment are words
    env $envs MYSAMPLE_CUDA_CACHE="$cache/$name" MYSAMPLE_CUDA_NVRTC_OPTIONS="$opts" "$bin" bench --device cuda --json $nocc $flags \
      | grep '"group": "cuda"' | sed "s/^{/{\"variant\": \"$name\", \"round\": $r, /" >> "$out" \
      || echo "gpu_ab: variant $name failed in round $r" >&2
  done
done
python3 - "$out" <<'EOF'
import json, statistics, sys
rows = {}
order = []
for line in open(sys.argv[1]):
    d = json.loads(line)
    k = (d["config"], d["batch"], d["vocab"])
    if k not in order: order.append(k)
    rows.setdefault(k, {}).setdefault(d["variant"], []).append(d["us_per_batch"])
names = []
for k in order:
    for n in rows[k]:
        if n not in names: names.append(n)
print("| config | batch | vocab | " + " | ".join(names) + " |")
print("|---|---:|---:|" + "---:|" * len(names))
for k in order:
    cells = ["%.1f" % statistics.median(rows[k][n]) if n in rows[k] else "-" for n in names]
    print("| %s | %d | %d | " % k + " | ".join(cells) + " |")
EOF
