#!/usr/bin/env bash
# Every public function (an MSDEF declaration in the API headers) has a
# comment just above it, blank-line free, that states its thread safety
# ("Thread safety", "thread-safe", "reentrant", "pure"), as the standards
# ask. One PASS line per header, a FAIL line naming each function without.
set -u
cd "$(dirname "$0")/.."
fail=0
for h in src/api_*.h src/cuda/api_cuda.h; do
  missing=$(awk '
    # the paragraph above a declaration: the lines since the last blank one
    /^[ \t]*$/ { para = ""; next }
    /^MSDEF/ {
      name = $0; sub(/\(.*/, "", name); n = split(name, w, /[ *]+/); name = w[n]
      if (para !~ /[Tt]hread[ -]safe|[Tt]hread safety|reentrant|[Pp]ure/) print name
      n_decl++
    }
    { para = para " " $0 }
    END { if (n_decl == 0) print "(no MSDEF declaration: the check reads nothing)" }
  ' "$h")
  if [ -z "$missing" ]; then
    echo "PASS api_docs: every function of $h states its thread safety"
  else
    for f in $missing; do echo "FAIL api_docs: $h: $f has no thread-safety note above it"; done
    fail=1
  fi
done
exit $fail
