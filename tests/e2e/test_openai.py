"""End-to-end tests of examples/server.c with the official OpenAI Python SDK.
Usage: python test_openai.py BASE_URL MODEL
Prints PASS/FAIL lines and exits non-zero on any failure."""
import sys
import time
import traceback

import openai

BASE, MODEL = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=BASE + "/v1", api_key="unused", timeout=30, max_retries=0)
MSG = [{"role": "user", "content": "Tell me about the café and the river."}]
results = []


def test(fn):
    t0 = time.monotonic()
    try:
        fn()
        print("PASS e2e_%s (%.2fs)" % (fn.__name__, time.monotonic() - t0), flush=True)
        results.append(True)
    except Exception:  # noqa: BLE001 - report every failure and go on
        print("FAIL e2e_%s" % fn.__name__, flush=True)
        traceback.print_exc(file=sys.stdout)
        results.append(False)
    return fn


def chat(**kw):
    return client.chat.completions.create(model=MODEL, messages=kw.pop("messages", MSG), **kw)


def collect_chat_stream(**kw):
    texts, finishes, roles, usage, ids, lps = {}, {}, {}, None, set(), {}
    for ch in chat(stream=True, **kw):
        ids.add(ch.id)
        assert ch.object == "chat.completion.chunk"
        if ch.usage is not None:
            usage = ch.usage
        for c in ch.choices:
            if c.delta.role:
                roles[c.index] = c.delta.role
            if c.delta.content:
                texts[c.index] = texts.get(c.index, "") + c.delta.content
            if c.finish_reason:
                assert c.index not in finishes, "two finish reasons for one choice"
                finishes[c.index] = c.finish_reason
            if c.logprobs and c.logprobs.content:
                lps.setdefault(c.index, []).extend(c.logprobs.content)
    assert len(ids) == 1, "chunks of one stream carry one id"
    return texts, finishes, roles, usage, lps


@test
def models_list():
    ids = [m.id for m in client.models.list().data]
    assert MODEL in ids, ids


@test
def chat_non_stream():
    r = chat(max_tokens=40, seed=1)
    assert r.object == "chat.completion" and r.model == MODEL
    c = r.choices[0]
    assert c.message.role == "assistant" and isinstance(c.message.content, str)
    assert c.finish_reason in ("stop", "length")
    assert r.usage.completion_tokens <= 40 and r.usage.prompt_tokens > 0
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens


@test
def chat_stream_equals_non_stream():
    for seed in (2, 3, 4):
        r = chat(max_tokens=60, seed=seed, temperature=1.2)
        texts, fin, roles, usage, _ = collect_chat_stream(max_tokens=60, seed=seed, temperature=1.2)
        assert roles.get(0) == "assistant"
        assert texts.get(0, "") == r.choices[0].message.content, (texts, r.choices[0].message.content)
        assert fin[0] == r.choices[0].finish_reason
        assert usage is None  # only with stream_options.include_usage


@test
def completion_non_stream_and_stream():
    r = client.completions.create(model=MODEL, prompt="The robot in the library", max_tokens=30, seed=5)
    assert r.object == "text_completion"
    text = "".join(ch.choices[0].text for ch in client.completions.create(
        model=MODEL, prompt="The robot in the library", max_tokens=30, seed=5, stream=True) if ch.choices)
    assert text == r.choices[0].text, (text, r.choices[0].text)
    assert r.usage.completion_tokens <= 30


@test
def seeds_reproducible():
    a = chat(max_tokens=50, seed=1234, temperature=1.0, top_p=0.9).choices[0].message.content
    b = chat(max_tokens=50, seed=1234, temperature=1.0, top_p=0.9).choices[0].message.content
    assert a == b
    others = {chat(max_tokens=50, seed=s, temperature=1.0, top_p=0.9).choices[0].message.content for s in range(5)}
    assert len(others) > 1, "different seeds should give different texts"


@test
def greedy_is_deterministic_without_seed():
    a = chat(max_tokens=30, temperature=0).choices[0].message.content
    b = chat(max_tokens=30, temperature=0).choices[0].message.content
    assert a == b


@test
def usage_chunk():
    texts, fin, _, usage, _ = collect_chat_stream(max_tokens=25, seed=9, stream_options={"include_usage": True})
    assert usage is not None and usage.completion_tokens <= 25
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    # the usage chunk comes last, with no choices
    chunks = list(chat(max_tokens=10, seed=9, stream=True, stream_options={"include_usage": True}))
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert all(c.usage is None for c in chunks[:-1])


@test
def n_greater_than_one():
    r = chat(max_tokens=20, seed=77, n=3)
    assert sorted(c.index for c in r.choices) == [0, 1, 2]
    assert len({c.message.content for c in r.choices}) > 1
    texts, fin, roles, usage, _ = collect_chat_stream(max_tokens=20, seed=77, n=3,
                                                     stream_options={"include_usage": True})
    assert sorted(fin) == [0, 1, 2] and sorted(roles) == [0, 1, 2]
    for c in r.choices:   # the stream and the non-stream response agree choice by choice
        assert texts.get(c.index, "") == c.message.content
    assert usage.completion_tokens == r.usage.completion_tokens


@test
def logprobs_chat():
    r = chat(max_tokens=15, seed=11, logprobs=True, top_logprobs=3)
    lp = r.choices[0].logprobs.content
    assert len(lp) == r.usage.completion_tokens or r.choices[0].finish_reason == "stop"
    for e in lp:
        assert e.logprob <= 0 and len(e.top_logprobs) == 3
        tops = [t.logprob for t in e.top_logprobs]
        assert tops == sorted(tops, reverse=True)
        assert e.logprob <= tops[0] + 1e-6
    raw = b"".join(bytes(e.bytes) for e in lp)
    assert raw.decode("utf-8", "replace").startswith(r.choices[0].message.content[:5])
    texts, fin, _, _, lps = collect_chat_stream(max_tokens=15, seed=11, logprobs=True, top_logprobs=3)
    assert [e.token for e in lps[0]] == [e.token for e in lp]
    assert [e.logprob for e in lps[0]] == [e.logprob for e in lp]


@test
def logprobs_completion():
    r = client.completions.create(model=MODEL, prompt="The cat slept", max_tokens=10, seed=3, logprobs=2)
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset)
    assert all(x <= 0 for x in lp.token_logprobs)
    assert all(1 <= len(t) <= 3 for t in lp.top_logprobs)
    assert lp.text_offset == sorted(lp.text_offset)


@test
def stop_strings():
    kw = dict(max_tokens=60, seed=21, temperature=0.8, extra_body={"ignore_eos": True})
    base = chat(**kw).choices[0].message.content
    words = [w for w in base.split(" ") if len(w) >= 3]
    assert len(words) >= 3, base
    stop = " " + words[len(words) // 2]
    cut = base[: base.index(stop)]
    r = chat(stop=[stop, "zzzz-never"], **kw)
    assert r.choices[0].message.content == cut, (r.choices[0].message.content, cut)
    assert r.choices[0].finish_reason == "stop"
    texts, fin, _, _, _ = collect_chat_stream(stop=stop, **kw)
    assert texts.get(0, "") == cut and fin[0] == "stop"


@test
def logit_bias_forces_a_token():
    r = client.completions.create(model=MODEL, prompt="A", max_tokens=6, seed=1, logit_bias={"120": 100})
    assert r.choices[0].text == "x" * 6, r.choices[0].text
    r = client.completions.create(model=MODEL, prompt="A", max_tokens=8, temperature=0, logit_bias={"120": -100})
    assert "x" not in r.choices[0].text


@test
def max_tokens_and_ignore_eos():
    r = chat(max_tokens=64, seed=2, extra_body={"ignore_eos": True})
    assert r.usage.completion_tokens == 64 and r.choices[0].finish_reason == "length"
    r = chat(max_tokens=1, seed=2)
    assert r.usage.completion_tokens == 1


@test
def penalties_and_filters_accepted():
    r = chat(max_tokens=30, seed=8, temperature=0.8, top_p=0.9, presence_penalty=0.5, frequency_penalty=0.5,
             extra_body={"top_k": 20, "min_p": 0.05, "repetition_penalty": 1.2})
    assert r.choices[0].finish_reason in ("stop", "length")


@test
def utf8_prompt_and_output():
    msgs = [{"role": "user", "content": "Zürich, Москва, 東京 and 🙂 — naïve café"}]
    for seed in range(6):
        r = chat(messages=msgs, max_tokens=40, seed=seed, temperature=1.5)
        texts, _, _, _, _ = collect_chat_stream(messages=msgs, max_tokens=40, seed=seed, temperature=1.5)
        assert texts.get(0, "") == r.choices[0].message.content


def expect_bad_request(fragment, **kw):
    try:
        chat(max_tokens=5, **kw)
    except openai.BadRequestError as e:
        assert e.status_code == 400
        assert fragment in str(e), (fragment, str(e))
        return
    raise AssertionError("no BadRequestError for %r" % (kw,))


@test
def bad_requests_raise():
    expect_bad_request("temperature must be non-negative", temperature=-1)
    expect_bad_request("top_p must be in (0, 1]", top_p=1.5)
    expect_bad_request("top_k must be 0 (disable), or at least 1", extra_body={"top_k": -3})
    expect_bad_request("presence_penalty must be in [-2, 2]", presence_penalty=3)
    expect_bad_request("frequency_penalty must be in [-2, 2]", frequency_penalty=-2.5)
    expect_bad_request("repetition_penalty must be greater than zero", extra_body={"repetition_penalty": 0})
    expect_bad_request("min_p must be in [0, 1]", extra_body={"min_p": 2})
    expect_bad_request("out-of-vocab", logit_bias={"9999999": 1})
    expect_bad_request("Stream options can only be defined when `stream=True`", stream_options={"include_usage": True})
    try:
        client.chat.completions.create(model=MODEL, messages=MSG, max_tokens=0)
        raise AssertionError("max_tokens=0 accepted")
    except openai.BadRequestError as e:
        assert "max_tokens" in str(e)
    try:
        client.chat.completions.create(model="no-such-model", messages=MSG)
        raise AssertionError("unknown model accepted")
    except openai.NotFoundError:
        pass


@test
def server_still_healthy():
    import json
    import urllib.request
    h = json.loads(urllib.request.urlopen(BASE + "/health", timeout=5).read())
    assert h["status"] == "ok" and h["slots_used"] == 0 and h["queued"] == 0, h


print("e2e openai: %d passed, %d failed" % (results.count(True), results.count(False)))
sys.exit(0 if all(results) else 1)
