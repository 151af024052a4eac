#!/bin/sh
# `make demo`: starts the example server on the embedded n-gram model on a
# free loopback port, streams one chat completion to the terminal, stops
# the server. Needs python3 (tiny streaming client) or curl (raw SSE).
# Usage: sh examples/demo.sh [path/to/server] [prompt]
set -eu
bin=${1:-build/examples/server}
prompt=${2:-Tell me about the river and the old mill.}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d 2>/dev/null || echo "/tmp/mysample-demo.$$")
mkdir -p "$tmp"
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$bin" --host 127.0.0.1 --port 0 --port-file "$tmp/port" > "$tmp/log" 2>&1 &
pid=$!
i=0
while [ ! -s "$tmp/port" ]; do
  i=$((i + 1))
  if [ "$i" -gt 100 ] || ! kill -0 "$pid" 2>/dev/null; then
    echo "demo: the server did not start:" >&2; cat "$tmp/log" >&2; exit 1
  fi
  sleep 0.1
done
port=$(cat "$tmp/port")
sed -n '1p' "$tmp/log"
echo "server on http://127.0.0.1:$port  (model trained at start-up on examples/data/corpus.txt)"
echo

# JSON-escape the prompt (backslashes and quotes; the default has neither)
esc=$(printf '%s' "$prompt" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g')
body="{\"model\":\"mysample-ngram\",\"messages\":[{\"role\":\"user\",\"content\":\"$esc\"}],\"stream\":true,\"stream_options\":{\"include_usage\":true},\"max_tokens\":120,\"min_tokens\":40,\"temperature\":0.7,\"top_p\":0.95,\"seed\":42}"

if command -v python3 >/dev/null 2>&1; then
  python3 "$here/demo_client.py" "$port" "$body"
elif command -v curl >/dev/null 2>&1; then
  echo "POST /v1/chat/completions (raw server-sent events):"
  curl -sS -N --max-time 60 -H 'Content-Type: application/json' -d "$body" "http://127.0.0.1:$port/v1/chat/completions"
else
  echo "demo: needs python3 or curl to talk to the server" >&2; exit 1
fi
echo
echo "try it yourself: build/examples/server --port 8000, then"
echo "  curl -N http://127.0.0.1:8000/v1/chat/completions -H 'Content-Type: application/json' \\"
echo "    -d '{\"model\":\"mysample-ngram\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}],\"stream\":true}'"
