#!/usr/bin/env bash
# CI: test_core's comparison with the naive sort-based reference on the
# vocabularies of real models (128256, 151936), every profile and SIMD
# path (make test stops at 40000 to stay quick). Prints PASS/FAIL lines.
set -uo pipefail
cd "$(dirname "$0")/../.."
make -s build/tests/test_core || { echo "FAIL big-vocab: build"; exit 1; }
MS_TEST_BIG=1 build/tests/test_core > build/tests/test_core_big.log 2>&1; rc=$?
sed 's/^PASS /PASS big-vocab /; s/^FAIL /FAIL big-vocab /; s/^SKIP /SKIP big-vocab /' build/tests/test_core_big.log | grep -E '^(PASS|FAIL|SKIP) '
[ $rc = 0 ] || { grep -vE '^(PASS|SKIP) ' build/tests/test_core_big.log | tail -20; echo "FAIL big-vocab: test_core exited with status $rc"; exit 1; }
