"""The server's --cuda path against its CPU path: the same requests (seeded,
with penalties, bias, top-p/top-k/min-p, n > 1, logprobs, stop strings,
streams, several at once so they share batches) sent to a server sampling
with mysample_cuda.h and to one sampling on the CPU must give the same
tokens, the same text and logprobs within 1e-4. Run with the CUDA emulator
(tests/cuda_emu) where there is no GPU. Standard library only.
Usage: cuda_compare.py HOST GPU_PORT CPU_PORT MODEL"""
import http.client
import json
import socket
import sys
import threading
import traceback

HOST, GPU, CPU, MODEL = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
results = []


def call(port, path, body=None):
    c = http.client.HTTPConnection(HOST, port, timeout=120)
    try:
        if body is None:
            c.request("GET", path)
        else:
            c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def completion(port, body):
    st, data = call(port, "/v1/completions", body)
    assert st == 200, (port, st, data[:300])
    return json.loads(data)


def chat_stream(port, body):
    st, data = call(port, "/v1/chat/completions", dict(body, stream=True))
    assert st == 200, (port, st, data[:300])
    texts = {}
    for line in data.decode().split("\n"):
        if line.startswith("data: ") and line != "data: [DONE]":
            for ch in json.loads(line[6:])["choices"]:
                texts[ch["index"]] = texts.get(ch["index"], "") + (ch["delta"].get("content") or "")
    return texts


def same_completion(a, b, what):
    assert len(a["choices"]) == len(b["choices"]), what
    for ca, cb in zip(a["choices"], b["choices"]):
        assert ca["text"] == cb["text"], "%s: GPU %r != CPU %r" % (what, ca["text"][:80], cb["text"][:80])
        assert ca["finish_reason"] == cb["finish_reason"], what
        la, lb = ca.get("logprobs"), cb.get("logprobs")
        if la or lb:
            assert la["tokens"] == lb["tokens"], what
            for x, y in zip(la["token_logprobs"], lb["token_logprobs"]):
                assert abs(x - y) <= 1e-4 * max(1.0, abs(y)), "%s: logprob %r vs %r" % (what, x, y)
            for ta, tb in zip(la["top_logprobs"], lb["top_logprobs"]):
                assert sorted(ta) == sorted(tb), "%s: top logprobs %r vs %r" % (what, ta, tb)
    assert a["usage"] == b["usage"], what


BODIES = [
    {"prompt": "The river", "max_tokens": 40, "seed": 3},
    {"prompt": "The river", "max_tokens": 40, "seed": 3, "temperature": 0.8, "top_p": 0.9},
    {"prompt": "Once upon", "max_tokens": 40, "seed": 11, "top_k": 5, "min_p": 0.05, "temperature": 1.3},
    {"prompt": "She said", "max_tokens": 60, "seed": 5, "frequency_penalty": 0.8, "presence_penalty": 0.5,
     "repetition_penalty": 1.3},
    {"prompt": "The cat", "max_tokens": 30, "seed": 9, "logit_bias": {"101": 5, "32": -100}, "min_tokens": 10},
    {"prompt": "In the morning", "max_tokens": 30, "seed": 21, "n": 3, "logprobs": 5},
    {"prompt": "The old man", "max_tokens": 50, "seed": 2, "stop": [".", "!"], "temperature": 0.0},
    {"prompt": [84, 104, 101, 32], "max_tokens": 25, "seed": 4, "logprobs": 2, "temperature": 1.1},
]


def test(fn):
    try:
        fn()
        print("PASS cuda_server_%s" % fn.__name__, flush=True)
        results.append(True)
    except Exception:
        print("FAIL cuda_server_%s" % fn.__name__, flush=True)
        traceback.print_exc(file=sys.stdout)
        results.append(False)


@test
def health_says_cuda():
    st, data = call(GPU, "/health")
    assert st == 200 and json.loads(data)["sampler"] == "cuda", data
    st, data = call(CPU, "/health")
    assert st == 200 and json.loads(data)["sampler"] == "cpu", data


@test
def completions_match_cpu():
    for i, b in enumerate(BODIES):
        b = dict(b, model=MODEL)
        same_completion(completion(GPU, b), completion(CPU, b), "request %d %s" % (i, json.dumps(b)[:80]))


@test
def concurrent_batches_match_cpu():
    # all at once: the rows share the GPU's batches, each with its own parameters and sequence
    out = {}

    def run(port, i, b):
        out[(port, i)] = completion(port, dict(b, model=MODEL))
    for port in (GPU, CPU):
        ts = [threading.Thread(target=run, args=(port, i, b)) for i, b in enumerate(BODIES)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    for i in range(len(BODIES)):
        same_completion(out[(GPU, i)], out[(CPU, i)], "concurrent request %d" % i)


@test
def chat_stream_matches_cpu():
    b = {"model": MODEL, "messages": [{"role": "user", "content": "Tell me about the river."}], "max_tokens": 40,
         "seed": 8, "n": 2, "temperature": 0.9, "presence_penalty": 0.4}
    g, c = chat_stream(GPU, b), chat_stream(CPU, b)
    assert g == c and len(g) == 2 and all(g.values()), (g, c)


@test
def finished_choice_frees_its_slot():
    # a choice that finishes early gives its device slot back at once: a request
    # admitted into that slot while the rest of its request runs on is served
    # (it got a 500 when the slot came back only with the whole request)
    st, data = call(GPU, "/health")
    slots = json.loads(data)["slots"]
    n = min(slots, 16)
    tried = 0
    for seed in range(1, 9):
        body = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "Tell me about the river"}],
                           "max_tokens": 400, "n": n, "seed": seed, "stream": True, "stop": ["."]}).encode()
        a = socket.create_connection((HOST, GPU), timeout=60)
        try:
            a.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: "
                      + str(len(body)).encode() + b"\r\n\r\n" + body)
            got = b""
            while b'"finish_reason":"stop"' not in got and b"[DONE]" not in got:
                d = a.recv(65536)
                assert d, got[-200:]
                got += d
            if b"[DONE]" in got:
                continue   # all choices ended together: try another seed
            tried += 1
            st, data = call(GPU, "/v1/completions", {"model": MODEL, "prompt": "The cat", "max_tokens": 3, "seed": 1})
            assert st == 200, (seed, st, data[:300])
        finally:
            a.close()
        if tried >= 2:
            break
    assert tried >= 1, "no seed had a choice finish before the others"


print("%d passed, %d failed" % (sum(results), len(results) - sum(results)))
sys.exit(0 if all(results) else 1)
