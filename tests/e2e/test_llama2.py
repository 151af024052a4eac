"""The server on a llama2.c checkpoint (a tiny random one from
make_tiny_llama2.py): the forward pass runs per sequence with its k/v cache,
chunked prefill, context limits. Standard library only.
Usage: test_llama2.py HOST PORT MODEL"""
import http.client
import json
import sys
import time
import traceback

HOST, PORT, MODEL = sys.argv[1], int(sys.argv[2]), sys.argv[3]
results = []


def call(path, body):
    c = http.client.HTTPConnection(HOST, PORT, timeout=30)
    try:
        c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        return r.status, data
    finally:
        c.close()


def stream_text(path, body):
    st, data = call(path, dict(body, stream=True))
    assert st == 200, data
    text, finish = "", None
    for line in data.decode().split("\n"):
        if line.startswith("data: ") and line != "data: [DONE]":
            for ch in json.loads(line[6:])["choices"]:
                text += ch["text"] or ""
                finish = ch["finish_reason"] or finish
    return text, finish


def test(fn):
    try:
        fn()
        print("PASS llama2_%s" % fn.__name__, flush=True)
        results.append(True)
    except Exception:  # noqa: BLE001
        print("FAIL llama2_%s" % fn.__name__, flush=True)
        traceback.print_exc(file=sys.stdout)
        results.append(False)


def stream_equals_non_stream():
    for seed in range(4):
        body = {"model": MODEL, "prompt": "the café " * (seed * 2), "max_tokens": 20, "seed": seed,
                "ignore_eos": True}
        st, data = call("/v1/completions", body)
        assert st == 200, data
        r = json.loads(data)
        assert r["usage"]["completion_tokens"] == 20
        text, finish = stream_text("/v1/completions", body)
        assert text == r["choices"][0]["text"] and finish == r["choices"][0]["finish_reason"] == "length"


def seeds_reproducible_in_a_batch():
    body = {"model": MODEL, "prompt": "the", "max_tokens": 12, "seed": 5, "n": 3, "ignore_eos": True}
    a = json.loads(call("/v1/completions", body)[1])
    b = json.loads(call("/v1/completions", body)[1])
    assert [c["text"] for c in a["choices"]] == [c["text"] for c in b["choices"]]


def context_limit():
    st, data = call("/v1/completions", {"model": MODEL, "prompt": "the", "max_tokens": 500})
    assert st == 400 and b"maximum context length" in data, data
    st, data = call("/v1/completions", {"model": MODEL, "prompt": "x" * 400})
    assert st == 400, data
    # default max_tokens fills the context exactly
    st, data = call("/v1/chat/completions", {"model": MODEL, "messages": [{"role": "user", "content": "hi"}],
                                             "ignore_eos": True, "logprobs": True, "top_logprobs": 2})
    r = json.loads(data)
    assert st == 200 and r["choices"][0]["finish_reason"] == "length", r
    assert r["usage"]["prompt_tokens"] + r["usage"]["completion_tokens"] == 96, r["usage"]
    assert len(r["choices"][0]["logprobs"]["content"]) == r["usage"]["completion_tokens"]


def long_prompt_counted_whole():
    # runs of spaces merge 16:1, so 400 of them fit the context of 96; what
    # follows them must still be counted (it was cut off unseen)
    st, data = call("/v1/completions", {"model": MODEL, "prompt": " " * 400, "max_tokens": 2})
    assert st == 200 and json.loads(data)["usage"]["prompt_tokens"] < 40, data
    st, data = call("/v1/completions", {"model": MODEL, "prompt": " " * 400 + "x" * 200, "max_tokens": 2})
    assert st == 400 and b"maximum context length is 96" in data, data
    st, data = call("/v1/completions", {"model": MODEL, "prompt": " " * 1000 + "x" * 40, "max_tokens": 2})
    assert st == 400 and b"maximum context length is 96" in data, data
    # a long prompt is refused quickly (the merges are O(n log n), and one
    # that cannot fit is refused before them)
    t0 = time.monotonic()
    st, data = call("/v1/completions", {"model": MODEL, "prompt": " " * 200000, "max_tokens": 1})
    assert st == 400 and time.monotonic() - t0 < 2, (st, time.monotonic() - t0)


for f in (stream_equals_non_stream, seeds_reproducible_in_a_batch, context_limit, long_prompt_counted_whole):
    test(f)
print("e2e llama2: %d passed, %d failed" % (results.count(True), results.count(False)))
sys.exit(0 if all(results) else 1)
