#!/usr/bin/env bash
# End-to-end: `mysample stream` output parsed by Python's json module (an
# independent parser) and checked field by field; streamed deltas must
# concatenate to the non-stream text; bad input must fail clearly.
cd "$(dirname "$0")/.."
bin=build/mysample
if [ ! -x "$bin" ]; then echo "SKIP stream_cli: build/mysample not built"; exit 0; fi
if ! command -v python3 >/dev/null; then echo "SKIP stream_cli: no python3"; exit 0; fi
python3 - "$bin" <<'PY'
import json, random, subprocess, sys
bin = sys.argv[1]
fails = 0
def check(name, cond, detail=""):
    global fails
    if cond: print("PASS " + name)
    else:
        fails += 1; print("FAIL " + name + (": " + detail if detail else ""))

def run(args, lines):
    inp = "".join(json.dumps(l) + "\n" for l in lines)
    p = subprocess.run([bin, "stream", "--created", "1700000000"] + args, input=inp.encode(), capture_output=True)
    return p.returncode, p.stdout, p.stderr

def events(out):
    text = out.decode("utf-8")          # strict: must be valid UTF-8
    assert text.endswith("data: [DONE]\n\n"), text[-40:]
    evs = []
    for block in text.split("\n\n")[:-1]:
        assert block.startswith("data: ") and "\n" not in block, block
        body = block[6:]
        evs.append(body if body == "[DONE]" else json.loads(body))
    return evs

def tok(i, s, lp=None, top=None):
    d = {"id": i, "bytes": list(s if isinstance(s, bytes) else s.encode())}
    if lp is not None: d["logprob"] = lp
    if top is not None: d["top"] = top
    return d

# 1. chat stream: role first, content, final, usage, [DONE]
toks = [tok(1, "Hel", -0.5, [[1, -0.5, list(b"Hel")], [9, -1.25, [255]]]), tok(2, b"lo \xf0\x9f", -1.0), tok(3, b"\x98\x80!", -1e30), tok(4, "</s>", -0.01)]
rc, out, err = run(["--eos-id", "4", "--include-usage", "--n-prompt-tokens", "5", "--model", "m1", "--id", "chatcmpl-x", "--logprobs", "1"], toks)
ev = events(out)
check("stream_chat_rc", rc == 0, err.decode())
check("stream_chat_role_first", ev[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""})
check("stream_chat_fields", all(list(e.keys())[:5] == ["id", "object", "created", "model", "choices"] and e["object"] == "chat.completion.chunk"
                                 and e["id"] == "chatcmpl-x" and e["model"] == "m1" and e["created"] == 1700000000 for e in ev[:-1]))
content = "".join(e["choices"][0]["delta"].get("content", "") for e in ev[1:-2] if e["choices"])
check("stream_chat_content", content == "Hello \U0001F600!", repr(content))
fin = ev[-3]["choices"][0]
check("stream_chat_final", fin["delta"] == {} and fin["finish_reason"] == "stop" and fin["stop_reason"] is None, repr(fin))
check("stream_chat_usage", ev[-2]["choices"] == [] and ev[-2]["usage"] == {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9})
lp0 = ev[1]["choices"][0]["logprobs"]["content"][0]
check("stream_chat_logprob_floor", ev[3]["choices"][0]["logprobs"]["content"][0]["logprob"] == -9999.0, repr(ev[3]))
check("stream_chat_logprobs", lp0["token"] == "Hel" and lp0["logprob"] == -0.5 and lp0["bytes"] == list(b"Hel")
      and lp0["top_logprobs"] == [{"token": "Hel", "logprob": -0.5, "bytes": list(b"Hel")}], repr(lp0))

# 2. completion non-stream with logprobs and a stop string
rc, out, err = run(["--object", "completion", "--stream", "false", "--stop", "EN", "--logprobs", "2"],
                   [tok(1, "ab", -0.1, [[1, -0.1, [97, 98]], [2, -3.0, [255]], [3, -4.0, [254]]]), tok(2, "cE", -0.2), tok(3, "ND", -0.3)])
o = json.loads(out)
c = o["choices"][0]
check("completion_nonstream", rc == 0 and o["object"] == "text_completion" and c["text"] == "abc" and c["finish_reason"] == "stop"
      and c["stop_reason"] == "EN" and o["usage"]["completion_tokens"] == 3, repr(o))
l = c["logprobs"]
check("completion_logprobs", list(l.keys()) == ["text_offset", "token_logprobs", "tokens", "top_logprobs"] and l["text_offset"] == [0, 2, 4]
      and l["tokens"] == ["ab", "cE", "ND"] and l["top_logprobs"][0] == {"ab": -0.1, "\ufffd": -3.0}, repr(l))

# 3. the round-trip property over random cases
rnd = random.Random(7)
alphabet = [b"a", b"b", b"S", b"T", b"\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\xff", b"\n", b"\x01", b"\xe2\x80\xa8"]
bad = 0
for it in range(150):
    data = b"".join(rnd.choice(alphabet) for _ in range(rnd.randrange(0, 30)))
    stops = [rnd.choice(["ST", "a\u00e9", "TaS", "\u20ac\u20ac", "bb"]) for _ in range(rnd.randrange(0, 3))]
    inc = rnd.random() < 0.3
    toks, i = [], 0
    while i < len(data):
        k = rnd.randrange(1, 6); toks.append(tok(len(toks) + 10, data[i:i + k])); i += k
    args = sum((["--stop", s] for s in stops), []) + (["--include-stop"] if inc else [])
    for obj in ("chat", "completion"):
        rc1, o1, _ = run(args + ["--object", obj], toks)
        rc2, o2, _ = run(args + ["--object", obj, "--stream", "false"], toks)
        ev = events(o1)
        key = "delta" if obj == "chat" else None
        streamed = "".join((e["choices"][0]["delta"].get("content", "") if obj == "chat" else e["choices"][0]["text"]) for e in ev[:-1] if e["choices"])
        full = json.loads(o2)["choices"][0]
        full_text = full["message"]["content"] if obj == "chat" else full["text"]
        ok = rc1 == 0 and rc2 == 0 and streamed == full_text
        ok = ok and (inc or not any(s in streamed for s in stops))
        ok = ok and streamed == streamed.encode("utf-8").decode("utf-8")
        if not ok:
            bad += 1
            if bad < 4: print("  mismatch", repr(data), stops, inc, obj, repr(streamed), repr(full_text))
check("stream_round_trip_random", bad == 0, "%d mismatches" % bad)

# 4. bad input fails with a message naming the line
for name, line in [("bad_json", "{\"id\": 1, \"bytes\": [1,}"), ("byte_range", "{\"id\":1,\"bytes\":[256]}"), ("missing_bytes", "{\"id\":1}"),
                   ("unknown_key", "{\"id\":1,\"bytes\":[],\"x\":1}"), ("not_object", "[1,2]")]:
    p = subprocess.run([bin, "stream"], input=("{\"id\":1,\"bytes\":[65]}\n" + line + "\n").encode(), capture_output=True)
    check("stream_rejects_" + name, p.returncode != 0 and b"line 2" in p.stderr, p.stderr.decode())
p = subprocess.run([bin, "stream", "--stream", "maybe"], input=b"", capture_output=True)
check("stream_rejects_bad_flag", p.returncode != 0 and b"--stream" in p.stderr)
# an empty stop string gets vLLM's message (SamplingParams._verify_args), not "bad limits"
p = subprocess.run([bin, "stream", "--stop", ""], input=b"", capture_output=True)
check("stream_rejects_empty_stop", p.returncode == 2 and b"stop cannot contain an empty string." in p.stderr, p.stderr.decode())
p = subprocess.run([bin, "stream", "--help"], capture_output=True)
check("stream_help", p.returncode == 0 and all(f in p.stdout for f in [b"--object", b"--stream", b"--stop", b"--include-stop", b"--max-tokens",
      b"--min-tokens", b"--eos-id", b"--ignore-eos", b"--logprobs", b"--n-prompt-tokens", b"--include-usage", b"--model", b"--id", b"--created"]))
# 5. max tokens, stop token id (stop_reason is the id), n of the prompt
rc, out, err = run(["--max-tokens", "2", "--stream", "false"], [tok(1, "a"), tok(2, "b"), tok(3, "c")])
check("stream_max_tokens", json.loads(out)["choices"][0]["finish_reason"] == "length" and json.loads(out)["choices"][0]["message"]["content"] == "ab")
rc, out, err = run(["--stop-token-id", "7"], [tok(1, "a"), tok(7, "<|eot|>")])
ev = events(out)
check("stream_stop_token_id", ev[-2]["choices"][0]["stop_reason"] == 7 and "eot" not in out.decode())
sys.exit(1 if fails else 0)
PY
