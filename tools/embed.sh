#!/usr/bin/env bash
# Prints a C definition embedding a text file (a .cu kernel source) as
#   static const char *const NAME[] = { "chunk", "chunk", ..., 0 };
# Each chunk is a run of whole lines (adjacent literals, one per line) of
# at most ~1500 bytes, so every concatenated literal stays far below
# MSVC's 2048-byte limit; the program joins the chunks at run time.
# Escapes backslash, double quote, '?' (no trigraphs), tab and non-ASCII.
# Usage: tools/embed.sh NAME FILE
set -euo pipefail
[ $# = 2 ] || { echo "usage: $0 NAME FILE" >&2; exit 2; }
name=$1; file=$2
[ -f "$file" ] || { echo "embed.sh: $file not found" >&2; exit 1; }
printf '/* %s, embedded by tools/embed.sh: edit the .cu file, not this array. */\n' "$file"
printf 'static const char *const %s[] = {\n' "$name"
LC_ALL=C awk '
function esc(s,   out, i, c, o) {
  out = ""
  for (i = 1; i <= length(s); i++) {
    c = substr(s, i, 1)
    if (c == "\\") out = out "\\\\"
    else if (c == "\"") out = out "\\\""
    else if (c == "?") out = out "\\?"
    else if (c == "\t") out = out "\\t"
    else if (c == "\r") continue
    else {
      o = ord[c]
      if (o < 32 || o > 126) out = out sprintf("\\%03o", o)
      else out = out c
    }
  }
  return out
}
function emit(piece, nl,   e) {
  e = esc(piece)
  if (used > 0 && used + length(e) + 4 > 1500) { printf ",\n"; used = 0 }
  printf "  \"%s%s\"\n", e, nl ? "\\n" : ""
  used += length(e) + 4
}
BEGIN { for (i = 0; i < 256; i++) ord[sprintf("%c", i)] = i; used = 0 }
{
  line = $0
  while (length(line) > 400) { emit(substr(line, 1, 400), 0); line = substr(line, 401) }
  emit(line, 1)
}
END { if (used > 0) printf ",\n"; printf "  0\n" }
' "$file"
printf '};\n'
