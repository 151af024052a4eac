"""HTTP-level robustness tests of examples/server.c (Python standard library
only), and regression tests of request semantics that need no SDK. The server under test must run with the limits the CI script gives:
--max-conns 8 --request-timeout 500 --idle-timeout 1500 --write-timeout 1000
--max-body 4096. Usage: python test_http.py HOST PORT MODEL
Every socket has a timeout; every loop is bounded."""
import json
import random
import socket
import sys
import time
import traceback

HOST, PORT, MODEL = sys.argv[1], int(sys.argv[2]), sys.argv[3]
results = []


def test(fn):
    t0 = time.monotonic()
    try:
        fn()
        print("PASS http_%s (%.2fs)" % (fn.__name__, time.monotonic() - t0), flush=True)
        results.append(True)
    except Exception:  # noqa: BLE001
        print("FAIL http_%s" % fn.__name__, flush=True)
        traceback.print_exc(file=sys.stdout)
        results.append(False)
    return fn


def connect(timeout=5.0):
    s = socket.create_connection((HOST, PORT), timeout=timeout)
    return s


_pending = {}   # socket -> bytes received beyond the last response (pipelining)


def _recv(s):
    chunk = s.recv(65536)
    return chunk


def read_response(s, limit=1 << 22):
    """Reads one HTTP response (Content-Length or chunked); bytes after it stay
    buffered for the next call on the same socket. Returns (status, headers, body)."""
    data = _pending.pop(s, b"")
    while b"\r\n\r\n" not in data:
        chunk = _recv(s)
        if not chunk:
            raise EOFError("closed before the headers: %r" % data[:200])
        data += chunk
        assert len(data) < limit
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for ln in lines[1:]:
        k, v = ln.split(":", 1)
        headers[k.strip().lower()] = v.strip()
    if status == 100:
        _pending[s] = rest
        return status, headers, b""
    if "content-length" in headers:
        n = int(headers["content-length"])
        while len(rest) < n:
            chunk = _recv(s)
            if not chunk:
                raise EOFError("short body")
            rest += chunk
        _pending[s] = rest[n:]
        return status, headers, rest[:n]
    if headers.get("transfer-encoding") == "chunked":
        body = b""
        while True:
            while b"\r\n" not in rest:
                chunk = _recv(s)
                if not chunk:
                    raise EOFError("short chunked body")
                rest += chunk
            size_line, rest = rest.split(b"\r\n", 1)
            n = int(size_line, 16)
            while len(rest) < n + 2:
                chunk = _recv(s)
                if not chunk:
                    raise EOFError("short chunk")
                rest += chunk
            body += rest[:n]
            rest = rest[n + 2:]
            if n == 0:
                _pending[s] = rest
                return status, headers, body
            assert len(body) < limit
    return status, headers, rest


def raw(req, timeout=5.0):
    s = connect(timeout)
    try:
        s.sendall(req)
        return read_response(s)
    finally:
        _pending.pop(s, None)
        s.close()


def post(path, obj, extra=b""):
    body = json.dumps(obj).encode()
    return (b"POST " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra
            + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def health():
    st, _, body = raw(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert st == 200
    return json.loads(body)


def wait_idle(max_s=5.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < max_s:
        h = health()
        if h["slots_used"] == 0 and h["queued"] == 0:
            return h
        time.sleep(0.05)
    raise AssertionError("slots not freed: %r" % h)


def closed_by_server(s, max_s=5.0):
    s.settimeout(max_s)
    try:
        while True:
            d = s.recv(65536)
            if not d:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


@test
def malformed_request_lines():
    for req in (b"GARBAGE\r\n\r\n", b"GET\r\n\r\n", b"GET / \r\n\r\n", b"GET /health HTTP/1.1\nHost: x\n\n\r\n\r\n",
                b"G\x00T /health HTTP/1.1\r\n\r\n", b"GET /he alth HTTP/1.1\r\n\r\n"):
        st, _, body = raw(req)
        assert st == 400, (req, st)
        assert json.loads(body)["error"]["message"]
    st, _, _ = raw(b"GET /health HTTP/2.0\r\n\r\n")
    assert st == 505
    st, _, _ = raw(b"GET /health HTTP/1.1\r\nX: a\r\n folded\r\n\r\n")
    assert st == 400


@test
def header_and_body_limits():
    st, _, _ = raw(b"GET /health HTTP/1.1\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n")
    assert st == 431
    st, _, _ = raw(b"POST /v1/completions HTTP/1.1\r\nContent-Length: 100000\r\n\r\n")
    assert st == 413
    st, _, _ = raw(b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
    assert st == 501
    st, _, _ = raw(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n\r\n")
    assert st == 411
    for cl in (b"12a", b"-1", b"", b"1 2"):
        st, _, _ = raw(b"POST /v1/completions HTTP/1.1\r\nContent-Length: " + cl + b"\r\n\r\n")
        assert st == 400, cl
    st, _, _ = raw(b"POST /v1/completions HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}")
    assert st == 400


@test
def routes_and_methods():
    assert raw(b"GET /nope HTTP/1.1\r\n\r\n")[0] == 404
    assert raw(b"DELETE /v1/models HTTP/1.1\r\n\r\n")[0] == 405
    assert raw(b"GET /v1/chat/completions HTTP/1.1\r\n\r\n")[0] == 405
    st, _, body = raw(b"GET /v1/models?x=1 HTTP/1.1\r\n\r\n")
    assert st == 200 and json.loads(body)["data"][0]["id"] == MODEL


@test
def bad_json_bodies():
    bodies = [b"", b"{", b"[]", b"null", b"{\"model\":1e999999}", b"{\"a\":\"\xff\"}", b"{\"a\":\"\\ud800\"}",
              b"[" * 100 + b"]" * 100, b"{\"prompt\":\"x\",}", b"{\"prompt\":01}", b"{\"prompt\":\"x\"} x",
              b"{\"prompt\":NaN}", b"{\"prompt\":\"a\\u0000b\",\"max_tokens\":\"5\"}",
              b"{\"prompt\":[\"a\",\"b\"]}", b"{\"prompt\":[1,-2]}", b"{\"prompt\":\"x\",\"logit_bias\":{\"abc\":1}}",
              b"{\"prompt\":\"x\",\"stop\":[1]}", b"{\"prompt\":\"x\",\"n\":0}", b"{\"prompt\":\"x\",\"n\":1000}",
              b"{\"prompt\":\"x\",\"seed\":1.5}", b"{\"prompt\":\"x\",\"logprobs\":21}"]
    for b in bodies:
        req = (b"POST /v1/completions HTTP/1.1\r\nContent-Length: " + str(len(b)).encode() + b"\r\n\r\n" + b)
        st, _, body = raw(req)
        assert st == 400, (b, st, body)
        err = json.loads(body)["error"]
        assert err["message"] and err["code"] == 400, err


@test
def keep_alive_and_pipelining():
    s = connect()
    try:
        for _ in range(3):
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            st, h, _ = read_response(s)
            assert st == 200 and h["connection"] == "keep-alive"
        req = post("/v1/completions", {"model": MODEL, "prompt": "The", "max_tokens": 3, "seed": 1})
        s.sendall(req + b"GET /health HTTP/1.1\r\n\r\n" + req)   # pipelined
        a = read_response(s)
        b = read_response(s)
        c = read_response(s)
        assert a[0] == 200 and b[0] == 200 and c[0] == 200
        assert json.loads(a[2])["choices"][0]["text"] == json.loads(c[2])["choices"][0]["text"]
        s.sendall(b"GET /health HTTP/1.1\r\nConnection: close\r\n\r\n")
        st, h, _ = read_response(s)
        assert st == 200 and h["connection"] == "close"
        assert closed_by_server(s, 2)
    finally:
        s.close()
    st, h, _ = raw(b"GET /health HTTP/1.0\r\n\r\n")
    assert st == 200 and h["connection"] == "close"


@test
def expect_100_continue():
    body = json.dumps({"model": MODEL, "prompt": "The", "max_tokens": 2}).encode()
    s = connect()
    try:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: "
                  + str(len(body)).encode() + b"\r\n\r\n")
        st, _, rest = read_response(s)
        assert st == 100 and rest == b""
        s.sendall(body)
        st, _, b = read_response(s)
        assert st == 200 and json.loads(b)["object"] == "text_completion"
    finally:
        s.close()


@test
def slow_sender_gets_408():
    s = connect()
    try:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nContent-Le")
        time.sleep(0.9)
        st, _, _ = read_response(s)
        assert st == 408
        assert closed_by_server(s, 2)
    finally:
        s.close()
    s = connect()   # a body that never completes
    try:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"prompt\":")
        time.sleep(0.9)
        assert read_response(s)[0] == 408
    finally:
        s.close()


@test
def idle_keep_alive_closed():
    s = connect()
    try:
        s.sendall(b"GET /health HTTP/1.1\r\n\r\n")
        assert read_response(s)[0] == 200
        assert closed_by_server(s, 4), "idle connection not closed"
    finally:
        s.close()


@test
def too_many_connections():
    socks = []
    try:
        for _ in range(7):   # the server allows 8: 7 idle + 1 more
            socks.append(connect())
        time.sleep(0.2)
        last = connect()
        socks.append(last)
        time.sleep(0.2)
        extra = connect()
        socks.append(extra)
        extra.settimeout(3)
        data = extra.recv(4096)
        assert data.startswith(b"HTTP/1.1 503"), data[:60]
    finally:
        for s in socks:
            s.close()
    time.sleep(0.2)
    assert health()["rejected_connections"] >= 1


@test
def disconnect_mid_stream_frees_slots():
    for k in range(6):
        s = connect()
        s.sendall(post("/v1/chat/completions", {"model": MODEL, "messages": [{"role": "user", "content": "hi"}],
                                                "stream": True, "max_tokens": 3000, "n": 1 + k % 3,
                                                "ignore_eos": True}))
        got = b""
        while got.count(b"data: ") < 5:
            d = s.recv(4096)
            assert d
            got += d
        s.close()
    h = wait_idle()
    assert h["disconnects"] >= 6, h


@test
def disconnect_while_queued():
    # more choices than slots: the rest queue; close them all while queued
    socks = []
    for _ in range(6):
        s = connect()
        s.sendall(post("/v1/completions", {"model": MODEL, "prompt": "x", "stream": True, "max_tokens": 2000,
                                           "n": 2, "ignore_eos": True}))
        socks.append(s)
    time.sleep(0.1)
    for s in socks:
        s.close()
    wait_idle()


@test
def slow_reader_dropped():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(5)
    s.connect((HOST, PORT))
    before = health()["dropped_slow"]
    s.sendall(post("/v1/chat/completions", {"model": MODEL, "messages": [{"role": "user", "content": "hi"}],
                                            "stream": True, "max_tokens": 3000, "n": 2, "ignore_eos": True,
                                            "logprobs": True, "top_logprobs": 20}))
    try:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 6:
            if health()["dropped_slow"] > before:
                break
            time.sleep(0.2)
        assert health()["dropped_slow"] > before, "a client that never reads was not dropped"
    finally:
        s.close()
    wait_idle()


@test
def random_garbage_does_not_hurt():
    rng = random.Random(1)
    for i in range(150):
        n = rng.randint(0, 600)
        if i % 3 == 0:
            data = bytes(rng.randrange(256) for _ in range(n))
        elif i % 3 == 1:
            body = bytes(rng.choice(b"{}[]\":,0123456789.eE-+tfnul\\ abc") for _ in range(n))
            data = b"POST /v1/completions HTTP/1.1\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
        else:
            data = b"POST /v1/chat/completions HTTP/1.1\r\n" + bytes(rng.randrange(32, 127) for _ in range(n)) + b"\r\n\r\n"
        s = connect(2)
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            s.settimeout(2)
            try:
                while s.recv(65536):
                    pass
            except (socket.timeout, ConnectionResetError):
                pass
        finally:
            s.close()
    assert health()["status"] == "ok"
    wait_idle()


def read_until_close(s, max_s=10.0):
    s.settimeout(max_s)
    data = b""
    while True:
        d = s.recv(65536)
        if not d:
            return data
        data += d


@test
def http10_stream_is_close_delimited():
    # RFC 9112 6.1: no Transfer-Encoding for an HTTP/1.0 client; the stream
    # ends when the server closes (keep-alive or not)
    body = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4,
                       "stream": True, "seed": 2}).encode()
    for extra in (b"", b"Connection: keep-alive\r\n"):
        s = connect()
        try:
            s.sendall(b"POST /v1/chat/completions HTTP/1.0\r\n" + extra + b"Content-Length: "
                      + str(len(body)).encode() + b"\r\n\r\n" + body)
            data = read_until_close(s)
        finally:
            s.close()
        head, _, events = data.partition(b"\r\n\r\n")
        head = head.decode("latin-1").lower()
        assert head.startswith("http/1.1 200") and "transfer-encoding" not in head, head
        assert "connection: close" in head, head
        blocks = events.split(b"\n\n")
        assert blocks[-1] == b"" and blocks[-2] == b"data: [DONE]", events[-80:]
        for b in blocks[:-2]:
            assert b.startswith(b"data: {"), b[:80]
            json.loads(b[6:])


def n_body(data):
    """The Content-Length of the response head in data (-1 before the head is whole)."""
    if b"\r\n\r\n" not in data:
        return -1
    for ln in bytes(data).split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
        k, v = ln.split(b":", 1)
        if k.strip().lower() == b"content-length":
            return int(v)
    return -1


@test
def large_response_not_cut():
    # ~20 MB in one response, queued at once while the client waits: it must
    # arrive whole (the unsent-output cap is for streams read too slowly)
    before = health()["dropped_slow"]
    s = connect(20)
    try:
        s.sendall(post("/v1/chat/completions", {"model": MODEL, "messages": [{"role": "user", "content": "hi"}],
                                                "max_tokens": 4000, "ignore_eos": True, "n": 4, "seed": 1,
                                                "logprobs": True, "top_logprobs": 20}))
        time.sleep(0.6)   # the body is made and queued meanwhile (the write timeout is 1 s)
        data = bytearray()
        while b"\r\n\r\n" not in data or len(data) < data.index(b"\r\n\r\n") + 4 + n_body(data):
            d = s.recv(1 << 20)
            if not d:
                break
            data += d
    finally:
        s.close()
    head, _, body = bytes(data).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and len(body) == n_body(data) > (8 << 20), (head[:100], len(body))
    r = json.loads(body)
    assert [len(c["logprobs"]["content"]) for c in r["choices"]] == [4000] * 4
    assert health()["dropped_slow"] == before


def completion(obj, path="/v1/completions"):
    st, _, body = raw(post(path, dict({"model": MODEL}, **obj)), timeout=20)
    return st, json.loads(body)


def completion_stream(obj):
    st, _, body = raw(post("/v1/completions", dict({"model": MODEL, "stream": True}, **obj)), timeout=20)
    assert st == 200, body[:200]
    return [json.loads(b[6:]) for b in body.split(b"\n\n") if b.startswith(b"data: {")]


@test
def max_tokens_validation():
    chat = {"messages": [{"role": "user", "content": "hi"}]}
    for path, obj in (("/v1/chat/completions", dict(chat, max_tokens=-1)),
                      ("/v1/chat/completions", dict(chat, max_completion_tokens=-1)),
                      ("/v1/completions", {"prompt": "hi", "max_tokens": -1}),
                      ("/v1/completions", {"prompt": "hi", "max_tokens": 0})):
        st, r = completion(obj, path)
        want = "max_tokens must be at least 1, got %d." % obj.get("max_tokens", obj.get("max_completion_tokens"))
        assert st == 400 and r["error"]["message"] == want, (obj, st, r)
    big = 2 ** 63 - 1
    st, r = completion({"prompt": "hi", "max_tokens": big})
    msg = r["error"]["message"]
    n_prompt = int(msg.split("(")[1].split(" ")[0])
    assert st == 400 and ("you requested %d tokens (%d in the messages, %d in the completion)"
                          % (big + n_prompt, n_prompt, big)) in msg, msg
    st, r = completion({"prompt": "hi", "max_tokens": None, "seed": 1})   # null: the default
    assert st == 200 and r["usage"]["completion_tokens"] >= 1, r


@test
def stop_reason_non_stream_equals_stream():
    for seed in range(4):
        for stop in ({"stop": [" the", "."]}, {"stop_token_ids": list(range(300, 340))}):
            obj = dict({"prompt": "The river", "max_tokens": 60, "seed": seed}, **stop)
            st, r = completion(obj)
            assert st == 200, r
            fin = [e["choices"][0] for e in completion_stream(obj) if e["choices"]][-1]
            c = r["choices"][0]
            assert (c["finish_reason"], c["stop_reason"]) == (fin["finish_reason"], fin["stop_reason"]), (c, fin)
            if c["finish_reason"] == "stop" and "stop" in stop:
                assert c["stop_reason"] in stop["stop"], c
    # a stop string that certainly ends it
    stops = [" ", "e", "a", "o"]
    st, r = completion({"prompt": "The river", "max_tokens": 200, "seed": 1, "stop": stops, "ignore_eos": True})
    assert st == 200 and r["choices"][0]["finish_reason"] == "stop" and r["choices"][0]["stop_reason"] in stops, r


@test
def completion_logprobs_zero_same_shape():
    # vLLM: logprobs=0 gives {sampled token: logprob} per token, streamed or not
    obj = {"prompt": "The river", "max_tokens": 5, "logprobs": 0, "seed": 3, "ignore_eos": True}
    st, r = completion(obj)
    lp = r["choices"][0]["logprobs"]
    assert st == 200 and len(lp["top_logprobs"]) == 5, r
    for tok, l, top in zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"]):
        assert top == {tok: l}, (tok, l, top)
    tops = []
    for e in completion_stream(obj):
        for c in e["choices"]:
            if c["logprobs"]:
                tops += c["logprobs"]["top_logprobs"]
    assert tops == lp["top_logprobs"], (tops, lp["top_logprobs"])


@test
def logit_bias_repeated_key_last_wins():
    def greedy(bias_json):
        body = ('{"model":"%s","prompt":"The river","max_tokens":8,"temperature":0,"logit_bias":%s}'
                % (MODEL, bias_json)).encode()
        st, _, data = raw(b"POST /v1/completions HTTP/1.1\r\nContent-Length: " + str(len(body)).encode()
                          + b"\r\n\r\n" + body, timeout=20)
        assert st == 200, data
        return json.loads(data)["choices"][0]["text"]
    want = greedy('{"32":50}')
    assert want != greedy('{"32":1}')
    assert greedy('{"32":-49,"32":50}') == want
    assert greedy('{"32":-49,"032":50}') == want
    assert greedy('{"32":50,"32":-100}') == greedy('{"32":-100}')


@test
def request_fields_as_vllm_reads_them():
    """vLLM's request validation (sampling_params.py, the OpenAI protocol
    classes): each case was answered differently before."""
    chat = "/v1/chat/completions"
    msgs = [{"role": "user", "content": "hi"}]

    def err(obj, path="/v1/completions"):
        st, r = completion(dict({"max_tokens": 2}, **obj), path)
        assert st == 400, (obj, st, r)
        return r["error"]["message"]

    def ok(obj, path="/v1/completions"):
        st, r = completion(dict({"max_tokens": 2}, **obj), path)
        assert st == 200, (obj, st, r)
        return r
    # _verify_greedy_sampling: n > 1 needs sampling
    assert err({"prompt": "x", "n": 2, "temperature": 0}) == "n must be 1 when using greedy sampling, got 2."
    ok({"prompt": "x", "n": 2, "temperature": 0.005})   # raised to 0.01, not greedy
    # seed -1 is no seed: two requests differ (40 tokens of the n-gram model)
    texts = {ok({"prompt": "The river", "max_tokens": 40, "seed": -1, "ignore_eos": True})["choices"][0]["text"]
             for _ in range(3)}
    assert len(texts) > 1, texts
    # logprobs: completions refuse every negative; chat's -1 is the whole vocabulary
    assert err({"prompt": "x", "logprobs": -1}) == "`logprobs` must be a positive value."
    assert err({"messages": msgs, "top_logprobs": -1}, chat) == \
        "when using `top_logprobs`, `logprobs` must be set to true."
    assert err({"messages": msgs, "top_logprobs": -2, "logprobs": True}, chat) == \
        "`top_logprobs` must be a positive value or -1."
    assert err({"messages": msgs, "top_logprobs": -1, "logprobs": True}, chat).startswith("Requested sample logprobs of ")
    assert err({"messages": msgs, "top_logprobs": 21, "logprobs": True}, chat) == \
        "Requested sample logprobs of 21, which is greater than max allowed: 20"
    ok({"messages": msgs, "top_logprobs": 0}, chat)
    # the double is validated: no rounding onto a bound
    assert err({"prompt": "x", "temperature": 2.0000000001}).startswith("temperature must be in [0, 2], got ")
    assert err({"prompt": "x", "top_p": 1.00000000001}).startswith("top_p must be in (0, 1], got ")
    assert err({"prompt": "x", "presence_penalty": -2.0000000001}).startswith("presence_penalty must be in [-2, 2]")
    ok({"prompt": "x", "top_p": 1e-50})
    ok({"prompt": "x", "temperature": 0.50000000000000000000000000000000000000000000000000000000000000001})
    # top_k: any k >= -1; min_tokens past max_tokens
    ok({"prompt": "x", "top_k": 2 ** 40})
    assert err({"prompt": "x", "min_tokens": 2 ** 40}) == \
        "min_tokens must be less than or equal to max_tokens=2, got %d." % 2 ** 40
    # logit_bias keys as Python's int() reads them; NUL is not the end of a string
    ok({"prompt": "x", "logit_bias": {"+5": 1, " 7 ": 1, "1_0": 1}})
    for k in ["5\\u0000x", "1__0", "_1", "", "0x10"]:
        body = ('{"model":"%s","prompt":"x","max_tokens":2,"logit_bias":{"%s":1}}' % (MODEL, k)).encode()
        st, _, data = raw(b"POST /v1/completions HTTP/1.1\r\nContent-Length: " + str(len(body)).encode()
                          + b"\r\n\r\n" + body, timeout=20)
        assert st == 400 and b"cannot be converted to integer token IDs" in data, (k, st, data)
    assert "out-of-vocab" in err({"prompt": "x", "logit_bias": {"99999999999999999999999": 1}})
    body = ('{"model":"%s\\u0000x","prompt":"x","max_tokens":2}' % MODEL).encode()
    st, _, data = raw(b"POST /v1/completions HTTP/1.1\r\nContent-Length: " + str(len(body)).encode()
                      + b"\r\n\r\n" + body, timeout=20)
    assert st == 404, (st, data)
    body = ('{"model":"%s","messages":[{"role":"user\\u0000","content":"x"}],"max_tokens":2}' % MODEL).encode()
    st, _, data = raw(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: " + str(len(body)).encode()
                      + b"\r\n\r\n" + body, timeout=20)
    assert st == 400, (st, data)


print("e2e http: %d passed, %d failed" % (results.count(True), results.count(False)))
sys.exit(0 if all(results) else 1)
