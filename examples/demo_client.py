"""Tiny streaming client for `make demo` (Python standard library only):
sends one chat completion with stream=true and prints the deltas as they
arrive, then the finish reason, the usage chunk and the speed."""
import http.client
import json
import sys
import time

port, body = int(sys.argv[1]), sys.argv[2]
req = json.loads(body)
print("user: " + req["messages"][-1]["content"])
print("assistant: ", end="", flush=True)
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
t0 = time.monotonic()
conn.request("POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"})
resp = conn.getresponse()
if resp.status != 200:
    print("\nerror %d: %s" % (resp.status, resp.read().decode("utf-8", "replace")))
    sys.exit(1)
finish, usage, chunks, first = None, None, 0, None
while True:
    line = resp.readline()
    if not line:
        break
    line = line.decode("utf-8").rstrip("\n")
    if not line.startswith("data: "):
        continue
    data = line[6:]
    if data == "[DONE]":
        break
    obj = json.loads(data)
    chunks += 1
    if obj.get("usage"):
        usage = obj["usage"]
    for ch in obj.get("choices", []):
        text = ch.get("delta", {}).get("content")
        if text:
            if first is None:
                first = time.monotonic() - t0
            print(text, end="", flush=True)
        if ch.get("finish_reason"):
            finish = ch["finish_reason"]
elapsed = time.monotonic() - t0
print("\n")
print("finish_reason: %s, %d chunks" % (finish, chunks))
if usage:
    n = usage["completion_tokens"]
    print("usage: %d prompt + %d completion tokens; %.1f tokens/s, first text after %.1f ms"
          % (usage["prompt_tokens"], n, n / elapsed if elapsed > 0 else 0.0, (first or 0) * 1000))
