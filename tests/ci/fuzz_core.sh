#!/usr/bin/env bash
# CI: the core fuzzers (sampler, request JSON parser, llama2 loaders, the
# CUDA header's disk-cache reader, symbol scan and options split, the
# token lines `mysample stream` reads, the sampling commands' list flags)
# for a bounded time each, with ASan+UBSan and invariants. Prints PASS
# lines.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v "${FUZZ_CC:-clang}" >/dev/null; then echo "SKIP core fuzzing: no clang"; exit 0; fi
make -s fuzz-core
make -s fuzz-core-run FUZZ_CORE_SECONDS="${CORE_FUZZ_SECONDS:-30}"
echo "PASS core fuzzing (sampler, request JSON, llama2 loaders, CUDA disk cache, stream token lines, CLI lists)"
