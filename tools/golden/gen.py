#!/usr/bin/env python3
"""Golden vectors for mysample's sampler: the exact final distribution a row
is drawn from, computed by the reference engines' own rules.

  vllm profile: a PyTorch re-statement of vLLM v1's CPU sampler path
                (vllm/v1/sample/sampler.py and the ops it calls), float32.
  hf profile:   transformers' own logits processors, composed by
                GenerationMixin._get_logits_processor exactly as generate()
                composes them.

Writes tests/data/golden_vllm.txt and tests/data/golden_hf.txt (format in
tools/golden/README.md). Deterministic: same versions -> same bytes.
Run through tools/golden/gen.sh, which makes the venv with pinned versions.
"""
import os
import sys

import numpy as np
import torch
import transformers
from transformers import GenerationConfig
from transformers.generation.utils import GenerationMixin

torch.set_num_threads(1)
transformers.logging.set_verbosity_error()  # greedy configs carry unused top_k/top_p
NEG_INF = float("-inf")
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# Safety margins: a case is only kept when no float rounding difference
# between this reference and another correct implementation can change the
# support (the set of tokens with p > 0) or the greedy token.
REL_MARGIN = 1e-5      # top-k boundary, min-p threshold, greedy runner-up
TOPP_MARGIN = 2e-6     # top-p: distance of every cumulative mass to 1 - p
LOGP_HI = -80.0        # survivors must have log p > LOGP_HI (clearly > 0 in float32)
LOGP_LO = -125.0       # ... or log p < LOGP_LO (clearly 0 in float32)


class Reject(Exception):
    """The case sits too close to a boundary: draw another one."""


# --------------------------------------------------------------------------
# shared checks
# --------------------------------------------------------------------------

def f32(x):
    return float(np.float32(x))


def check_gap_at_k(vals, k, what):
    """vals: 1-D float32 tensor (may hold -inf). The k-th largest value is the
    top-k threshold; tokens tied with it stay. Require that no token is within
    REL_MARGIN of the threshold unless it equals it exactly."""
    v = vals.double()
    fin = v[torch.isfinite(v)]
    if fin.numel() <= k:
        return
    srt = torch.sort(fin, descending=True).values
    thr = srt[k - 1].item()
    scale = max(1.0, abs(thr))
    d = (fin - thr).abs()
    near = (d > 0) & (d <= REL_MARGIN * scale)
    if bool(near.any()):
        raise Reject(what + ": top-k boundary near-tie")


def check_minp(logits32, min_p, what):
    """logits32: [V] float32 before the min-p filter."""
    z = logits32.double()
    fin = torch.isfinite(z)
    if not bool(fin.any()):
        return
    lp = z - torch.logsumexp(z[fin], 0)
    p = torch.exp(lp)
    thr = float(p[fin].max()) * min_p
    if thr <= 0:
        return
    rel = ((p[fin] - thr).abs() / thr)
    if bool((rel <= REL_MARGIN).any()):
        raise Reject(what + ": min-p boundary")


def check_topp(logits32, top_p, what):
    """logits32: [V] float32 right before the top-p filter (after top-k).
    Checks the rule 'drop iff ascending inclusive cumulative mass <= 1 - p'
    in float64: no cumulative sum within TOPP_MARGIN of 1 - p, and no exact
    tie between the last dropped and the first kept token."""
    z = logits32.double()
    fin = torch.isfinite(z)
    zf = z[fin]
    if zf.numel() == 0:
        return
    srt = torch.sort(zf).values  # ascending
    p = torch.softmax(srt, 0)
    cum = torch.cumsum(p, 0)
    thr = 1.0 - top_p
    if bool(((cum - thr).abs() <= TOPP_MARGIN).any()):
        raise Reject(what + ": top-p boundary")
    drop = cum <= thr
    drop[-1] = False
    nd = int(drop.sum())
    if nd > 0 and nd < srt.numel():
        a, b = srt[nd - 1].item(), srt[nd].item()
        if abs(a - b) <= REL_MARGIN * max(1.0, abs(b)):
            raise Reject(what + ": top-p boundary tie")
    # any equal values anywhere among the survivors' neighbours would make
    # the sorted order (and thus the cumulative sums) implementation-defined
    # at the boundary only; elsewhere they do not matter.


def check_greedy(z, what):
    v = z.double()
    fin = v[torch.isfinite(v)]
    if fin.numel() < 2:
        return
    top2 = torch.topk(fin, 2).values
    a, b = top2[0].item(), top2[1].item()
    if a != b and (a - b) <= 1e-4 * max(1.0, abs(a)):
        raise Reject(what + ": greedy near-tie")


def final_probs(z, what):
    """Softmax of the final processed logits (float32, as both engines), with
    the underflow-margin check."""
    if not bool(torch.isfinite(z).any()):
        raise Reject(what + ": all masked")
    probs = torch.softmax(z, dim=-1, dtype=torch.float32)
    zd = z.double()
    fin = torch.isfinite(zd)
    lp = zd[fin] - torch.logsumexp(zd[fin], 0)
    bad = (lp <= LOGP_HI) & (lp >= LOGP_LO)
    if bool(bad.any()):
        raise Reject(what + ": probability near float32 underflow")
    if bool(torch.isnan(probs).any()):
        raise Reject(what + ": nan")
    return probs


def one_hot_argmax(z):
    out = torch.zeros_like(z)
    out[int(torch.argmax(z))] = 1.0  # torch.argmax: the first maximal index
    return out


# --------------------------------------------------------------------------
# vLLM v1 re-statement (CPU path)
# --------------------------------------------------------------------------
_SAMPLING_EPS = 1e-5   # vllm/v1/sample/sampler.py
_MAX_TEMP = 1e-2       # vllm/sampling_params.py


def vllm_effective_temperature(t):
    # SamplingParams.__post_init__: 0 < T < 0.01 is raised to 0.01 (before
    # the greedy test, so e.g. 1e-6 samples at 0.01); greedy iff T < 1e-5.
    if 0 < t < _MAX_TEMP:
        t = max(t, _MAX_TEMP)
    return t


def vllm_reference(c):
    V = c["vocab"]
    name = c["name"]
    logits = torch.tensor(c["logits"], dtype=torch.float32).view(1, V).clone()

    # 1. allowed_token_ids whitelist (InputBatch mask, True = fill -inf).
    #    mysample's banned_ids have no vLLM counterpart: modelled as part of
    #    the same mask (they are -inf before everything else).
    if c["allowed"] is not None or c["banned"]:
        mask = torch.zeros(1, V, dtype=torch.bool)
        if c["allowed"] is not None:
            mask[0] = True
            mask[0, c["allowed"]] = False
        if c["banned"]:
            mask[0, c["banned"]] = True
        logits.masked_fill_(mask, NEG_INF)

    # 2. non-argmax-invariant logits processors: MinTokens (EOS and every
    #    stop token id at -inf while len(output) < min_tokens), LogitBias
    #    (added; each value clamped to [-100, 100] in SamplingParams).
    out_ids = c["output"]
    if c["min_tokens"] and len(out_ids) < c["min_tokens"]:
        stop = set(c["stop"])
        if c["eos"] >= 0:
            stop.add(c["eos"])
        if stop:
            logits[0, sorted(stop)] = NEG_INF
    if c["bias"]:
        ids = [t for t, _ in c["bias"]]
        vals = [min(100.0, max(-100.0, b)) for _, b in c["bias"]]
        logits[0, ids] += torch.tensor(vals, dtype=torch.float32)

    # 3. penalties (model_executor/layers/utils.py apply_penalties): only when
    #    some penalty is set. Repetition over prompt | output (each token
    #    once), CPU op = apply_repetition_penalties_torch:
    #    logits *= where(logits > 0, 1/r, r) with 1/r in float32;
    #    then frequency (output counts) and presence (output mask).
    rep, fre, pre = c["repetition"], c["frequency"], c["presence"]
    if rep != 1.0 or fre != 0.0 or pre != 0.0:
        pad = V
        prompt_t = torch.tensor([c["prompt"] or [pad]], dtype=torch.int64)
        out_t = torch.tensor([out_ids or [pad]], dtype=torch.int64)

        def bins(tok):
            b = torch.zeros(1, V + 1, dtype=torch.long)
            b.scatter_add_(1, tok, torch.ones_like(tok))
            b = b[:, :V]
            return b, b > 0
        _, prompt_mask = bins(prompt_t)
        out_counts, out_mask = bins(out_t)
        r = torch.tensor([rep], dtype=torch.float32).unsqueeze(1).repeat(1, V)
        pen = torch.where(prompt_mask | out_mask, r, 1.0)
        scaling = torch.where(logits > 0, 1.0 / pen, pen)
        logits *= scaling
        logits -= torch.tensor([fre], dtype=torch.float32).unsqueeze(1) * out_counts
        logits -= torch.tensor([pre], dtype=torch.float32).unsqueeze(1) * out_mask

    T = vllm_effective_temperature(c["temperature"])
    if T < _SAMPLING_EPS:
        # 4. greedy rows: argmax of the processed logits.
        check_greedy(logits[0], name)
        if not bool(torch.isfinite(logits).any()):
            raise Reject(name + ": all masked")
        return one_hot_argmax(logits[0])

    # 5. temperature: float32 division.
    pre_temp = logits.clone()
    temp = torch.tensor([T], dtype=torch.float32)
    logits = logits.div_(temp.unsqueeze(1))

    # 6. argmax-invariant logits processors: MinP.
    if c["min_p"] > 0:
        check_minp(logits[0], c["min_p"], name)
        probs = torch.nn.functional.softmax(logits, dim=-1)
        maxp = torch.amax(probs, dim=-1, keepdim=True)
        thr = maxp.mul_(torch.tensor([c["min_p"]], dtype=torch.float32).unsqueeze(1))
        logits[probs < thr] = NEG_INF

    # 7. top-k / top-p (ops/topk_topp_sampler.py apply_top_k_top_p).
    k = c["top_k"]
    k_on = 0 < k < V
    p_on = c["top_p"] < 1.0
    if k_on:
        check_gap_at_k(logits[0], k, name)
        check_gap_at_k(pre_temp[0], k, name)
    if k_on and not p_on:
        kth = logits.topk(k, dim=1).values[:, k - 1:k]
        logits.masked_fill_(logits < kth, NEG_INF)
    elif p_on:
        srt, idx = logits.sort(dim=-1, descending=False)
        if k_on:
            kth = srt.gather(1, torch.tensor([[V - k]], dtype=torch.long))
            srt.masked_fill_(srt < kth, NEG_INF)
        check_topp(srt[0], c["top_p"], name)
        ps = srt.softmax(dim=-1)
        cum = torch.cumsum(ps, dim=-1)
        pmask = cum <= 1 - torch.tensor([c["top_p"]], dtype=torch.float32).unsqueeze(1)
        pmask[:, -1] = False
        srt.masked_fill_(pmask, NEG_INF)
        logits = srt.scatter(dim=-1, index=idx, src=srt)

    # 8. the distribution the draw uses.
    return final_probs(logits[0], name)


# --------------------------------------------------------------------------
# HF transformers: its own processors, composed by _get_logits_processor
# --------------------------------------------------------------------------

class _Cfg:
    is_encoder_decoder = False

    def get_text_config(self, *a, **k):
        return self


class _Model(GenerationMixin):
    """Just enough of a model for GenerationMixin._get_logits_processor."""

    def __init__(self):
        self.config = _Cfg()


_MODEL = _Model()
HF_ORDER_SEEN = []


def hf_processors(c):
    do_sample = c["temperature"] > 0
    eos = []
    if c["eos"] >= 0:
        eos.append(c["eos"])
    eos += [t for t in c["stop"] if t not in eos]
    kw = dict(do_sample=do_sample, num_beams=1,
              temperature=float(c["temperature"]) if do_sample else 1.0,
              top_k=int(c["top_k"]), top_p=float(c["top_p"]),
              min_p=float(c["min_p"]) if c["min_p"] > 0 else None,
              repetition_penalty=float(c["repetition"]))
    if c["bias"]:
        kw["sequence_bias"] = [[[int(t)], float(b)] for t, b in c["bias"]]
    if c["banned"]:
        kw["suppress_tokens"] = list(c["banned"])
    if c["min_tokens"] and eos:
        kw["min_new_tokens"] = int(c["min_tokens"])
        kw["eos_token_id"] = eos
    gc = GenerationConfig(**kw)
    # generate() sets this in _prepare_special_tokens
    gc._eos_token_tensor = torch.tensor(eos, dtype=torch.long) if eos else None
    allowed = c["allowed"]
    fn = (lambda batch_id, sent: allowed) if allowed is not None else None
    L = len(c["prompt"]) + len(c["output"])
    procs = _MODEL._get_logits_processor(
        gc, input_ids_seq_length=len(c["prompt"]), encoder_input_ids=None,
        prefix_allowed_tokens_fn=fn, logits_processor=None, device="cpu",
        model_kwargs={"attention_mask": torch.ones(1, L, dtype=torch.long)})
    return procs


def hf_full_order():
    """The processor order generate() builds with every option this file
    uses switched on."""
    c = base_case("order", "hf", 16, [0.0] * 16)
    c.update(temperature=0.7, top_k=5, top_p=0.9, min_p=0.05, repetition=1.3,
             min_tokens=3, eos=1, stop=[2], prompt=[3, 4], output=[5],
             bias=[(6, 1.0)], allowed=[1, 2, 3, 6, 7], banned=[7])
    return [type(p).__name__ for p in hf_processors(c)]


def hf_reference(c):
    V = c["vocab"]
    name = c["name"]
    procs = hf_processors(c)
    order = [type(p).__name__ for p in procs]
    if order not in HF_ORDER_SEEN:
        HF_ORDER_SEEN.append(order)
    ids = torch.tensor([c["prompt"] + c["output"]], dtype=torch.long)
    scores = torch.tensor(c["logits"], dtype=torch.float32).view(1, V).clone()
    # Run the processors one by one (LogitsProcessorList.__call__ does the
    # same) so the boundary checks can look at the input of each warper.
    pre_temp = None
    for p in procs:
        nm = type(p).__name__
        if nm == "TemperatureLogitsWarper":
            pre_temp = scores.clone()
        elif nm == "TopKLogitsWarper":
            k = min(p.top_k, V)
            if k < V:
                check_gap_at_k(scores[0], k, name)
                if pre_temp is not None:
                    check_gap_at_k(pre_temp[0], k, name)
        elif nm == "TopPLogitsWarper":
            check_topp(scores[0], p.top_p, name)
        elif nm == "MinPLogitsWarper":
            check_minp(scores[0], p.min_p, name)
        scores = p(ids, scores)
    if c["temperature"] <= 0:
        check_greedy(scores[0], name)
        if not bool(torch.isfinite(scores).any()):
            raise Reject(name + ": all masked")
        return one_hot_argmax(scores[0])
    return final_probs(scores[0], name)


# --------------------------------------------------------------------------
# case generation
# --------------------------------------------------------------------------

def make_logits(rng, V, dist):
    if dist == "n1":
        x = rng.standard_normal(V)
    elif dist == "n3":
        x = rng.standard_normal(V) * 3.0
    elif dist == "ninf":
        x = rng.standard_normal(V) * 2.0
        n = max(1, V // 8)
        idx = rng.choice(V, size=min(n, V - 2), replace=False)
        x[idx] = -np.inf
    elif dist == "quant":  # ties: rounded to multiples of 0.25
        x = np.round(rng.standard_normal(V) * 1.5 * 4.0) / 4.0
    else:
        raise ValueError(dist)
    return [f32(v) for v in x]


def base_case(name, profile, V, logits):
    return dict(name=name, profile=profile, vocab=V, temperature=1.0,
                top_k=0, top_p=1.0, min_p=0.0, presence=0.0, frequency=0.0,
                repetition=1.0, min_tokens=0, eos=-1, stop=[], prompt=[],
                output=[], bias=[], allowed=None, banned=[], logits=logits)


def rand_ids(rng, V, n, distinct=False):
    if distinct:
        return [int(t) for t in rng.choice(V, size=min(n, V), replace=False)]
    return [int(t) for t in rng.integers(0, V, size=n)]


def history(rng, c, V):
    c["prompt"] = rand_ids(rng, V, int(rng.integers(1, 12)))
    # outputs with repeats so frequency counts > 1 occur
    pool = rand_ids(rng, V, int(rng.integers(1, 6)))
    c["output"] = [int(rng.choice(pool)) for _ in range(int(rng.integers(0, 14)))]


TEMPS = [0.5, 0.7, 1.0, 1.5]
SMALL_V = [8, 50, 257, 1000]


def generate_specs(profile, rng):
    """Yields (group, builder) where builder(rng) returns a case dict."""
    vllm = profile == "vllm"
    specs = []

    def add(group, fn, n):
        for i in range(n):
            specs.append((group, i, fn))

    def k_off():
        return int(rng.choice([0, -1])) if vllm else 0

    # temperature only
    def f_temp(r, i):
        V = SMALL_V[i % 4]
        dist = ["n1", "n3", "ninf"][i % 3]
        c = base_case("", profile, V, make_logits(r, V, dist))
        c["temperature"] = TEMPS[i % 4]
        c["top_k"] = k_off()
        return c
    add("temp", f_temp, 12)

    # greedy (temperature 0), incl. ties: torch.argmax takes the first max
    def f_greedy(r, i):
        V = SMALL_V[i % 4]
        dist = ["n1", "n3", "ninf", "quant"][i % 4]
        c = base_case("", profile, V, make_logits(r, V, dist))
        c["temperature"] = 0.0
        if i % 3 == 1:
            history(r, c, V)
            c["repetition"] = float(r.choice([1.3, 0.8]))
            if vllm:
                c["frequency"] = float(r.choice([0.0, 0.5, -0.5, 2.0]))
                c["presence"] = float(r.choice([0.0, 0.5, -0.5, 2.0]))
        if i % 3 == 2:
            ids = rand_ids(r, V, min(3, V), distinct=True)
            c["bias"] = [(ids[0], 5.0), (ids[1], -150.0 if vllm else -7.5)] + (
                [(ids[2], 150.0)] if len(ids) > 2 else [])
        if dist == "quant" and i % 2 == 0:
            c["top_k"] = 5  # ignored by greedy rows
        return c
    add("greedy", f_greedy, 12)

    # tiny temperature: vLLM raises (0, 0.01) to 0.01, HF divides by it
    def f_lowt(r, i):
        V = [8, 50, 257][i % 3]
        c = base_case("", profile, V, make_logits(r, V, "n1"))
        c["temperature"] = 0.005 if i % 2 == 0 else (1e-6 if vllm else 0.02)
        c["top_k"] = int(r.choice([0, 5])) if V > 5 else 0
        if i % 3 == 2:
            c["min_p"] = 0.3
        return c
    add("lowtemp", f_lowt, 6)

    # top-k, incl. ties with the k-th value (quantized rows)
    def f_topk(r, i):
        V = SMALL_V[i % 4]
        dist = ["n1", "n3", "ninf", "quant"][(i // 4) % 4]
        c = base_case("", profile, V, make_logits(r, V, dist))
        c["top_k"] = [1, 5, 40, V - 1, V + 7][i % 5]
        if c["top_k"] < 1:
            c["top_k"] = 1
        c["temperature"] = TEMPS[(i // 5) % 4]
        return c
    add("topk", f_topk, 24)

    # top-p (tie-free rows)
    def f_topp(r, i):
        V = SMALL_V[i % 4]
        dist = ["n1", "n3", "ninf"][(i // 4) % 3]
        c = base_case("", profile, V, make_logits(r, V, dist))
        c["top_p"] = [0.95, 0.9, 0.5, 0.1][(i // 3) % 4]
        c["temperature"] = TEMPS[(i // 2) % 4]
        c["top_k"] = k_off()
        return c
    add("topp", f_topp, 20)

    # min-p
    def f_minp(r, i):
        V = SMALL_V[i % 4]
        dist = ["n1", "n3", "ninf", "quant"][(i // 2) % 4]
        c = base_case("", profile, V, make_logits(r, V, dist))
        c["min_p"] = [0.05, 0.3][i % 2]
        c["temperature"] = TEMPS[(i // 3) % 4]
        return c
    add("minp", f_minp, 12)

    # combinations of top-k + top-p + min-p + temperature
    def f_combo(r, i):
        V = SMALL_V[i % 4]
        dist = ["n1", "n3", "ninf"][(i // 4) % 3]
        c = base_case("", profile, V, make_logits(r, V, dist))
        c["temperature"] = TEMPS[i % 4] if i % 7 else 0.005
        c["top_k"] = int(r.choice([0, 5, 40, V - 1, V + 3]))
        c["top_p"] = float(r.choice([1.0, 0.95, 0.9, 0.5, 0.1]))
        c["min_p"] = float(r.choice([0.0, 0.05, 0.3]))
        if c["top_k"] == 0 and vllm and r.random() < 0.5:
            c["top_k"] = -1
        return c
    add("combo", f_combo, 32)

    # penalties
    def f_pen(r, i):
        V = SMALL_V[i % 4]
        dist = ["n1", "n3", "ninf"][(i // 4) % 3]
        c = base_case("", profile, V, make_logits(r, V, dist))
        history(r, c, V)
        c["repetition"] = [1.0, 1.3, 0.8][i % 3]
        if vllm:
            c["frequency"] = [0.0, 0.5, -0.5, 2.0][(i // 3) % 4]
            c["presence"] = [0.0, 0.5, -0.5, 2.0][(i // 2) % 4]
            if c["repetition"] == 1.0 and c["frequency"] == 0.0 and c["presence"] == 0.0:
                c["presence"] = 0.5
        elif c["repetition"] == 1.0:
            c["repetition"] = 1.3
        c["temperature"] = TEMPS[(i // 2) % 4]
        if i % 4 == 3:
            c["top_k"] = 5
            c["top_p"] = 0.9
        return c
    add("penalty", f_pen, 24)

    # logit bias (vLLM clamps to [-100, 100]; HF does not)
    def f_bias(r, i):
        V = SMALL_V[i % 4]
        c = base_case("", profile, V, make_logits(r, V, ["n1", "ninf"][i % 2]))
        ids = rand_ids(r, V, min(V, 4), distinct=True)
        vals = [[3.0, -2.5, 150.0, -150.0], [100.0, -100.0, 0.5, 130.0],
                [-1e4, 7.25, -0.75, 101.0], [1.5, 2.5, -3.5, 4.5]][i % 4]
        c["bias"] = list(zip(ids, vals[:len(ids)]))
        c["temperature"] = TEMPS[i % 4]
        if any(abs(b) >= 100 for _, b in c["bias"]):
            # keep the unbiased tokens' probabilities above float32
            # underflow: vLLM's clamp makes +-100 the extreme, HF has none
            c["temperature"] = 1.5 if vllm else 4.0
        if i % 3 == 1:
            c["top_p"] = 0.9
        if i % 3 == 2:
            c["top_k"] = 5
            c["min_p"] = 0.05
        history(r, c, V)
        if i % 2 == 1:
            c["repetition"] = 1.3
        return c
    add("bias", f_bias, 12)

    # masks: allowed ids, banned ids, min_tokens with eos / stop ids
    def f_mask(r, i):
        V = SMALL_V[i % 4]
        c = base_case("", profile, V, make_logits(r, V, ["n1", "n3", "ninf"][i % 3]))
        history(r, c, V)
        kind = i % 4
        if kind in (0, 3):
            c["allowed"] = sorted(rand_ids(r, V, max(2, V // 3), distinct=True))
        if kind in (1, 3):
            c["banned"] = sorted(rand_ids(r, V, max(1, V // 5), distinct=True))
        if kind == 2 or i % 5 == 0:
            c["eos"] = int(r.integers(0, V))
            c["stop"] = sorted(rand_ids(r, V, min(3, V - 2), distinct=True))
            n_out = len(c["output"])
            # below and at/after the minimum
            c["min_tokens"] = n_out + 2 if i % 2 == 0 else max(1, n_out)
        c["temperature"] = [0.0, 0.7, 1.0, 1.5][(i // 2) % 4]
        if i % 3 == 0:
            c["top_p"] = 0.9
        if i % 3 == 1:
            c["top_k"] = 5
        return c
    add("mask", f_mask, 20)

    # -inf rows combined with everything
    def f_ninf(r, i):
        V = SMALL_V[i % 4]
        c = base_case("", profile, V, make_logits(r, V, "ninf"))
        history(r, c, V)
        c["temperature"] = TEMPS[i % 4]
        c["top_k"] = int(r.choice([0, 5, 40]))
        c["top_p"] = float(r.choice([1.0, 0.9, 0.5]))
        c["min_p"] = float(r.choice([0.0, 0.05]))
        c["repetition"] = float(r.choice([1.0, 1.3]))
        if vllm:
            c["frequency"] = float(r.choice([0.0, 0.5]))
        return c
    add("ninf", f_ninf, 8)

    # explicit ties: torch.argmax takes the first maximal index (greedy);
    # top-k keeps every token equal to the k-th largest value (no top-p here:
    # with ties its result would depend on the sort order)
    def f_ties(r, i):
        V = SMALL_V[i % 4]
        c = base_case("", profile, V, make_logits(r, V, "quant"))
        x = np.array(c["logits"], dtype=np.float32)
        order = np.argsort(-x, kind="stable")
        kind = i % 3
        if kind == 0:
            # the max shared by a lower and a higher id than the first maximum
            m = x[order[0]]
            j = int(order[1])
            x[j] = m
            if V > 8:
                x[int(order[2])] = m
            c["temperature"] = 0.0
            if i % 2 == 1:
                history(r, c, V)
                c["repetition"] = 1.3
        else:
            k = [1, 5, 40][(i // 3) % 3]
            k = min(k, V - 2)
            kth = x[order[k - 1]]
            x[int(order[k])] = kth  # one more token tied with the k-th value
            c["top_k"] = k
            c["temperature"] = TEMPS[i % 4]
            if kind == 2:
                c["min_p"] = 0.05
        c["logits"] = [f32(v) for v in x]
        return c
    add("ties", f_ties, 12)

    # a few large-vocab rows
    def f_big(r, i):
        V = 32000
        c = base_case("", profile, V, make_logits(r, V, ["n3", "n1"][i % 2]))
        history(r, c, V)
        if i == 0:
            c["temperature"] = 0.7
            c["top_k"] = 50
            c["top_p"] = 0.95
            c["min_p"] = 0.05
            c["repetition"] = 1.3
        else:
            c["temperature"] = 0.8
            c["top_k"] = 40
            c["repetition"] = 0.8
            if vllm:
                c["presence"] = 0.5
                c["frequency"] = 0.5
        return c
    add("big", f_big, 2)
    return specs


def build_cases(profile, seed):
    rng = np.random.default_rng(seed)
    ref = vllm_reference if profile == "vllm" else hf_reference
    cases = []
    rejects = 0
    for group, i, fn in generate_specs(profile, rng):
        for attempt in range(200):
            c = fn(rng, i)
            c["name"] = "%s_%s_%02d" % (profile, group, i)
            try:
                probs = ref(c)
            except Reject:
                rejects += 1
                continue
            c["probs"] = [f32(v) for v in probs.tolist()]
            cases.append(c)
            break
        else:
            raise SystemExit("could not draw a safe case for %s_%s_%02d" % (profile, group, i))
    return cases, rejects


# --------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------

def fmt(x):
    x = np.float32(x)
    if np.isneginf(x):
        return "-inf"
    if np.isposinf(x):
        return "inf"
    if x == 0:
        return "0"
    return str(x)  # shortest repr that round-trips the float32 value


def ids_line(key, ids):
    return "%s %d%s" % (key, len(ids), "".join(" %d" % t for t in ids))


def write_file(path, profile, cases, header):
    lines = list(header)
    for c in cases:
        lines.append("case " + c["name"])
        lines.append("profile " + profile)
        lines.append("vocab %d" % c["vocab"])
        lines.append("temperature " + fmt(c["temperature"]))
        lines.append("top_k %d" % c["top_k"])
        lines.append("top_p " + fmt(c["top_p"]))
        lines.append("min_p " + fmt(c["min_p"]))
        lines.append("presence_penalty " + fmt(c["presence"]))
        lines.append("frequency_penalty " + fmt(c["frequency"]))
        lines.append("repetition_penalty " + fmt(c["repetition"]))
        lines.append("min_tokens %d" % c["min_tokens"])
        lines.append("eos_token_id %d" % c["eos"])
        lines.append(ids_line("stop_token_ids", c["stop"]))
        lines.append(ids_line("prompt", c["prompt"]))
        lines.append(ids_line("output", c["output"]))
        lines.append("logit_bias %d%s" % (len(c["bias"]), "".join(
            " %d %s" % (t, fmt(b)) for t, b in c["bias"])))
        if c["allowed"] is None:
            lines.append("allowed_ids -1")
        else:
            lines.append(ids_line("allowed_ids", c["allowed"]))
        lines.append(ids_line("banned_ids", c["banned"]))
        lines.append("logits " + " ".join(fmt(v) for v in c["logits"]))
        lines.append("probs " + " ".join(fmt(v) for v in c["probs"]))
        lines.append("end")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    out_dir = os.path.join(ROOT, "tests", "data")
    os.makedirs(out_dir, exist_ok=True)
    versions = "torch %s, transformers %s, numpy %s, python %s" % (
        torch.__version__, transformers.__version__, np.__version__,
        ".".join(map(str, sys.version_info[:3])))
    for profile, seed in (("vllm", 20240601), ("hf", 20240602)):
        cases, rejects = build_cases(profile, seed)
        if profile == "vllm":
            src = ("reference: PyTorch re-statement of vLLM v1's CPU sampler "
                   "(vllm/v1/sample/sampler.py, ops/topk_topp_sampler.py, "
                   "ops/penalties.py, model_executor/layers/utils.py, "
                   "logits_processor/builtin.py, sampling_params.py)")
        else:
            src = ("reference: transformers' own logits processors composed by "
                   "GenerationMixin._get_logits_processor (generate() order): "
                   + " > ".join(hf_full_order()))
        header = [
            "# mysample golden vectors, profile %s: the exact final distribution" % profile,
            "# a row is drawn from (probs), for the logits and parameters given.",
            "# generator: tools/golden/gen.py via tools/golden/gen.sh (do not edit by hand)",
            "# versions: " + versions,
            "# " + src,
            "# cases: %d (draws rejected near a float boundary: %d)" % (len(cases), rejects),
            "# check: |p - ref| <= 1e-5 for every id and p > 0 iff ref > 0",
        ]
        path = os.path.join(out_dir, "golden_%s.txt" % profile)
        write_file(path, profile, cases, header)
        print("wrote %s: %d cases (%d rejected draws), %d bytes"
              % (os.path.relpath(path, ROOT), len(cases), rejects, os.path.getsize(path)))
    print("HF processor order (all options on): " + " > ".join(hf_full_order()))


if __name__ == "__main__":
    main()
