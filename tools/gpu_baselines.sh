#!/usr/bin/env bash
# Builds the older binaries BENCHMARKS.md's A/B commands compare against
# (tools/gpu_ab.sh 'NAME|build/mysample_sNN||...'), each from a git
# worktree of its commit, into build/mysample_sNN; skips those present.
# Run it here (the GPU machine has no network, and carry the binaries):
#
#   bash tools/gpu_baselines.sh [s18 s25 s26 ...]
#
# Known baselines: s18 (ecc48d3, the last figures measured on a GPU), s22
# (1831bd7), s24 (3eff86d), s25 (711c8d0), s26 (90431fa).
set -euo pipefail
cd "$(dirname "$0")/.."
commit_of() {
  case $1 in
    s18) echo ecc48d3 ;; s22) echo 1831bd7 ;; s24) echo 3eff86d ;; s25) echo 711c8d0 ;; s26) echo 90431fa ;;
    *) echo "gpu_baselines: unknown baseline '$1' (s18 s22 s24 s25 s26)" >&2; return 1 ;;
  esac
}
names=${*:-s18 s25 s26}
mkdir -p build
for n in $names; do
  c=$(commit_of "$n")
  out=build/mysample_$n
  if [ -x "$out" ]; then echo "$out: present"; continue; fi
  wt=$(mktemp -d)
  git worktree add -q --detach "$wt" "$c"
  if (cd "$wt" && make -s build/mysample >/dev/null); then
    cp "$wt/build/mysample" "$out"
    echo "$out: built from $c"
  else
    echo "gpu_baselines: $n ($c) did not build" >&2
  fi
  git worktree remove --force "$wt"
done
