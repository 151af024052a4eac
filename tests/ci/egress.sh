#!/usr/bin/env bash
# CI: the egress fuzzers (ASan+UBSan, libFuzzer) for a bounded time each.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v "${FUZZ_CC:-clang}" >/dev/null; then echo "SKIP egress fuzzing: no clang"; exit 0; fi
make -s fuzz-egress
make -s fuzz-egress-run FUZZ_SECONDS="${EGRESS_FUZZ_SECONDS:-30}"
echo "egress fuzzing passed"
