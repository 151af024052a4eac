"""Bounded load test and benchmark for examples/server.c (standard library only).

Load test: S concurrent streaming clients for D seconds against one server on
loopback, mixed chat/completions, n of 1 or 2, random seeds and lengths, and
a share of clients that disconnect mid-stream. Checks: every finished stream
is well formed (one id, every choice has exactly one finish_reason, usage
chunk, [DONE], nothing after it), nothing is lost or truncated, no stream is
mixed up with another (a sample of finished streams is replayed non-streamed
with the same seed and must match byte for byte), no slot leaks (the server
reports 0 slots in use afterwards) and memory is flat.

Bench (--bench): S clients stream fixed-length chat completions (ignore_eos)
for D seconds; prints tokens/s (from the server's counters) and the share of
the decode loop spent in the model, in mysample's sampler and in the egress.

usage: load.py HOST PORT MODEL [--streams 64] [--duration 30] [--disconnect 0.2]
               [--verify 24] [--seed 1] [--bench] [--max-tokens 256]"""
import argparse
import http.client
import json
import random
import socket
import sys
import threading
import time

ap = argparse.ArgumentParser()
ap.add_argument("host")
ap.add_argument("port", type=int)
ap.add_argument("model")
ap.add_argument("--streams", type=int, default=64)
ap.add_argument("--duration", type=float, default=30)
ap.add_argument("--disconnect", type=float, default=0.2)
ap.add_argument("--verify", type=int, default=24)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--bench", action="store_true")
ap.add_argument("--max-tokens", type=int, default=256)
ap.add_argument("--json", action="store_true", help="bench: print one JSON line")
args = ap.parse_args()

PROMPTS = ["Tell me about the river.", "The robot in the library", "Zürich, Москва, 東京 🙂", "Numbers are",
           "Good morning! How are you today?", "café crème brûlée", ""]


def health():
    c = http.client.HTTPConnection(args.host, args.port, timeout=10)
    try:
        c.request("GET", "/health")
        return json.loads(c.getresponse().read())
    finally:
        c.close()


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.completed = 0
        self.disconnected = 0
        self.errors = []
        self.records = []
        self.chunks = 0

    def error(self, msg):
        with self.lock:
            if len(self.errors) < 50:
                self.errors.append(msg)


def make_request(rng):
    chat = rng.random() < 0.5
    temperature = rng.choice([0.0, 0.7, 1.0, 1.3])
    # n > 1 asks for random sampling (vLLM refuses it at temperature 0)
    n = 2 if temperature > 0 and rng.random() < 0.25 else 1
    body = {"model": args.model, "stream": True, "stream_options": {"include_usage": True},
            "seed": rng.randrange(1 << 31), "n": n, "temperature": temperature,
            "max_tokens": rng.randint(8, 96)}
    if rng.random() < 0.3:
        body["top_p"] = 0.9
    if rng.random() < 0.2:
        body["stop"] = [" the"]
    if rng.random() < 0.2:
        body["logprobs"] = True if chat else 2
        if chat:
            body["top_logprobs"] = 2
    p = rng.choice(PROMPTS)
    if chat:
        body["messages"] = [{"role": "user", "content": p}]
        path = "/v1/chat/completions"
    else:
        body["prompt"] = p
        path = "/v1/completions"
    if args.bench:
        body = {"model": args.model, "stream": True, "stream_options": {"include_usage": True},
                "messages": [{"role": "user", "content": "Tell me a story."}], "max_tokens": args.max_tokens,
                "ignore_eos": True, "temperature": 0.8, "top_p": 0.95, "seed": rng.randrange(1 << 31)}
        path = "/v1/chat/completions"
    return path, body


def bench_stream(resp, body, st):
    """Bench: reads the whole stream, parses only the usage chunk (a light
    client, so the server rather than Python is measured)."""
    data = resp.read()
    if not data.endswith(b"data: [DONE]\n\n"):
        raise RuntimeError("stream ended without [DONE]")
    usage = json.loads(data[data.rindex(b"data: {"):].split(b"\n", 1)[0][6:])["usage"]
    if usage["completion_tokens"] != body["max_tokens"]:
        raise RuntimeError("short completion %r" % usage)
    with st.lock:
        st.completed += 1
        st.chunks += data.count(b"data: ")
    return "done", 0


def run_stream(conn, path, body, drop_after, st):
    """Returns 'done', 'dropped' or raises."""
    payload = json.dumps(body)
    conn.request("POST", path, body=payload, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        raise RuntimeError("HTTP %d: %s" % (resp.status, resp.read()[:200]))
    if args.bench:
        return bench_stream(resp, body, st)
    ids, texts, finish, usage, done, nchunks = set(), {}, {}, None, False, 0
    key = "delta" if path.endswith("chat/completions") else "text"
    while True:
        line = resp.readline()
        if not line:
            break
        line = line.rstrip(b"\n")
        if not line:
            continue
        if not line.startswith(b"data: "):
            raise RuntimeError("not an SSE data line: %r" % line[:80])
        if done:
            raise RuntimeError("data after [DONE]")
        data = line[6:]
        if data == b"[DONE]":
            done = True
            continue
        obj = json.loads(data)
        nchunks += 1
        if "error" in obj:
            raise RuntimeError("error event: %r" % obj)
        ids.add(obj["id"])
        if obj.get("usage"):
            if usage is not None:
                raise RuntimeError("two usage chunks")
            usage = obj["usage"]
            if obj["choices"]:
                raise RuntimeError("usage chunk with choices")
            continue
        if usage is not None:
            raise RuntimeError("chunk after the usage chunk")
        for ch in obj["choices"]:
            i = ch["index"]
            if not 0 <= i < body.get("n", 1):
                raise RuntimeError("bad choice index %d" % i)
            if i in finish:
                raise RuntimeError("chunk after finish for choice %d" % i)
            t = ch["delta"].get("content") if key == "delta" else ch["text"]
            if t:
                texts[i] = texts.get(i, "") + t
            if ch.get("finish_reason"):
                finish[i] = ch["finish_reason"]
        if drop_after is not None and nchunks >= drop_after:
            conn.sock.shutdown(socket.SHUT_RDWR)
            conn.close()
            return "dropped", nchunks
    if not done:
        raise RuntimeError("stream ended without [DONE] (truncated)")
    if len(ids) != 1:
        raise RuntimeError("chunks with %d different ids (mixed streams)" % len(ids))
    if sorted(finish) != list(range(body.get("n", 1))):
        raise RuntimeError("choices without finish_reason: %r" % finish)
    if usage is None:
        raise RuntimeError("no usage chunk")
    if args.bench and usage["completion_tokens"] != body["max_tokens"]:
        raise RuntimeError("short completion %r" % usage)
    with st.lock:
        st.completed += 1
        st.chunks += nchunks
        if len(st.records) < 5000:
            st.records.append((path, body, texts, finish))
    return "done", nchunks


def worker(wid, deadline, st):
    rng = random.Random(args.seed * 1000 + wid)
    conn = None
    n_req = 0
    while time.monotonic() < deadline and n_req < 100000:
        n_req += 1
        path, body = make_request(rng)
        drop = None
        if not args.bench and rng.random() < args.disconnect:
            drop = rng.randint(1, 8)
        if conn is None:
            conn = http.client.HTTPConnection(args.host, args.port, timeout=30)
        try:
            what, _ = run_stream(conn, path, body, drop, st)
            if what == "dropped":
                with st.lock:
                    st.disconnected += 1
                conn = None
        except Exception as e:  # noqa: BLE001
            st.error("%s %s: %r" % (path, json.dumps(body)[:120], e))
            try:
                conn.close()
            except Exception:  # noqa: BLE001
                pass
            conn = None
    if conn is not None:
        conn.close()


def replay(rec):
    path, body, texts, finish = rec
    b = dict(body)
    b["stream"] = False
    b.pop("stream_options", None)
    c = http.client.HTTPConnection(args.host, args.port, timeout=30)
    try:
        c.request("POST", path, body=json.dumps(b), headers={"Content-Type": "application/json"})
        r = json.loads(c.getresponse().read())
    finally:
        c.close()
    for ch in r["choices"]:
        got = ch["message"]["content"] if path.endswith("chat/completions") else ch["text"]
        if got != texts.get(ch["index"], ""):
            return "choice %d differs: stream %r vs replay %r" % (ch["index"], texts.get(ch["index"], ""), got)
        if ch["finish_reason"] != finish[ch["index"]]:
            return "finish differs"
    return None


def main():
    st = Stats()
    h0 = health()
    t0 = time.monotonic()
    deadline = t0 + args.duration
    threads = [threading.Thread(target=worker, args=(i, deadline, st), daemon=True) for i in range(args.streams)]
    for t in threads:
        t.start()
    rss_mid = None
    while time.monotonic() < deadline:
        time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
        if rss_mid is None and time.monotonic() - t0 >= args.duration / 3:
            rss_mid = health()["rss_kb"]
    for t in threads:
        t.join(timeout=40)
    elapsed = time.monotonic() - t0
    h1 = health()
    alive = sum(t.is_alive() for t in threads)
    if args.bench:
        toks = h1["tokens"] - h0["tokens"]
        tm, ts, te = (h1[k] - h0[k] for k in ("time_model_s", "time_sample_s", "time_egress_s"))
        loop = tm + ts + te
        res = {"streams": args.streams, "seconds": round(elapsed, 2), "tokens": toks,
               "tokens_per_s": round(toks / elapsed, 1), "steps": h1["steps"] - h0["steps"],
               "model_share": round(tm / loop, 3) if loop else 0, "sampler_share": round(ts / loop, 3) if loop else 0,
               "egress_share": round(te / loop, 3) if loop else 0,
               "model_us_per_token": round(tm / toks * 1e6, 2) if toks else 0,
               "sampler_us_per_token": round(ts / toks * 1e6, 2) if toks else 0,
               "egress_us_per_token": round(te / toks * 1e6, 2) if toks else 0,
               "errors": len(st.errors)}
        if args.json:
            print(json.dumps(res))
        else:
            print("%d streams: %.0f tokens/s over %ss; decode loop: model %.1f%%, sampler %.1f%%, egress %.1f%% "
                  "(per token: model %s us, sampler %s us, egress %s us)"
                  % (res["streams"], res["tokens_per_s"], res["seconds"], 100 * res["model_share"],
                     100 * res["sampler_share"], 100 * res["egress_share"], res["model_us_per_token"],
                     res["sampler_us_per_token"], res["egress_us_per_token"]))
        for e in st.errors[:5]:
            print("  error:", e)
        return 0 if not st.errors and alive == 0 else 1
    # load test verdict
    ok = True
    print("load: %d streams for %.1fs: %d completed, %d disconnected on purpose, %d errors, %d chunks"
          % (args.streams, elapsed, st.completed, st.disconnected, len(st.errors), st.chunks))
    for e in st.errors[:10]:
        print("  error:", e)
    if st.errors or alive:
        ok = False
        print("FAIL load_streams_well_formed (%d errors, %d client threads stuck)" % (len(st.errors), alive))
    else:
        print("PASS load_streams_well_formed")
    if st.completed < args.streams:
        ok = False
        print("FAIL load_progress: only %d streams completed" % st.completed)
    rng = random.Random(args.seed)
    sample = rng.sample(st.records, min(args.verify, len(st.records)))
    bad = [m for m in (replay(r) for r in sample) if m]
    if bad:
        ok = False
        print("FAIL load_streams_not_mixed: %s" % bad[0])
    else:
        print("PASS load_streams_not_mixed (%d finished streams replayed byte for byte)" % len(sample))
    t1 = time.monotonic()
    while time.monotonic() - t1 < 10:
        h1 = health()
        if h1["slots_used"] == 0 and h1["queued"] == 0 and h1["connections"] <= 1:
            break
        time.sleep(0.1)
    if h1["slots_used"] or h1["queued"] or h1["connections"] > 1:
        ok = False
        print("FAIL load_no_leaked_slots: %r" % h1)
    else:
        print("PASS load_no_leaked_slots (disconnects seen by the server: %d)" % (h1["disconnects"] - h0["disconnects"]))
    rss_end = h1["rss_kb"]
    if rss_mid is not None and rss_end > rss_mid * 1.25 + 8192:
        ok = False
        print("FAIL load_memory_flat: rss %d kB at 1/3, %d kB at the end" % (rss_mid, rss_end))
    else:
        print("PASS load_memory_flat (rss %s kB at 1/3 of the run, %d kB at the end)" % (rss_mid, rss_end))
    return 0 if ok else 1


sys.exit(main())
