#!/usr/bin/env python3
"""Golden vectors for the rest of HF transformers' sampler catalogue.

Runs transformers' OWN processors and warpers, composed by
GenerationMixin._get_logits_processor (the function generate() uses), over
random logits rows and parameter grids:

  TypicalLogitsWarper, EpsilonLogitsWarper, EtaLogitsWarper,
  NoRepeatNGramLogitsProcessor, NoBadWordsLogitsProcessor (multi-token),
  ExponentialDecayLengthPenalty, and min_tokens_to_keep variants of
  TopK / TopP / MinP / Typical / Epsilon / Eta.

Writes tests/data/golden_catalogue_hf.txt (format in the file header and in
tools/golden/README.md). Deterministic: same versions -> same bytes.
Usage: build/golden-venv/bin/python tools/golden/gen_catalogue.py
(the venv that tools/golden/gen.sh makes; nothing here uses a GPU).
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen  # noqa: E402  (shared helpers: checks, formatting, stub model)
import transformers  # noqa: E402
from transformers import GenerationConfig  # noqa: E402
from transformers.generation.logits_process import (  # noqa: E402
    EpsilonLogitsWarper,
    EtaLogitsWarper,
    MinPLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
    TypicalLogitsWarper,
)

torch.set_num_threads(1)
ROOT = gen.ROOT
Reject = gen.Reject
f32 = gen.f32
fmt = gen.fmt
REL_MARGIN = gen.REL_MARGIN        # 1e-5 relative
CUM_MARGIN = gen.TOPP_MARGIN       # 2e-6 absolute on cumulative masses

SEED = 20240611
SMALL_V = [8, 50, 257, 1000]
TEMPS = [0.5, 0.7, 1.0, 1.5]


# --------------------------------------------------------------------------
# boundary checks for the new warpers (float64 re-computation)
# --------------------------------------------------------------------------

def _probs64(z32):
    z = z32.double()
    fin = torch.isfinite(z)
    p = torch.zeros_like(z)
    if bool(fin.any()):
        p[fin] = torch.softmax(z[fin], 0)
    return p, fin


def check_typical(z32, mass, what):
    """Typical: order tokens by |-log p - H| ascending; the cut is the first
    position whose inclusive cumulative mass reaches `mass`; tokens whose
    shifted score equals the cut's stay. Reject when a cumulative mass sits
    near `mass` or the shifted score just past the cut nearly equals it."""
    p, fin = _probs64(z32)
    lp = torch.log(p[fin])
    pf = p[fin]
    H = float(-(pf * lp).sum())
    s = torch.abs(-lp - H)
    order = torch.argsort(s, stable=True)
    ss = s[order]
    cum = torch.cumsum(pf[order], 0)
    if bool(((cum - mass).abs() <= CUM_MARGIN).any()):
        raise Reject(what + ": typical mass boundary")
    last = int((cum < mass).sum())
    last = min(last, ss.numel() - 1)
    thr = float(ss[last])
    d = (ss - thr).abs()
    near = (d > 0) & (d <= REL_MARGIN * max(1.0, abs(thr)))
    if bool(near.any()):
        raise Reject(what + ": typical score near-tie at the cut")


def check_cutoff(z32, cutoff, what):
    """Epsilon / eta: drop p < cutoff. Reject when a probability is within
    REL_MARGIN (relative) of the cutoff."""
    p, fin = _probs64(z32)
    rel = (p[fin] - cutoff).abs() / cutoff
    if bool((rel <= REL_MARGIN).any()):
        raise Reject(what + ": cutoff boundary")


def eta_value(z32, eps):
    p, fin = _probs64(z32)
    pf = p[fin]
    pos = pf > 0
    H = float(-(pf[pos] * torch.log(pf[pos])).sum())
    return min(eps, float(np.sqrt(eps) * np.exp(-H)))


def check_keep_k(z32, k, what):
    if k > 1:
        gen.check_gap_at_k(z32, k, what)


# --------------------------------------------------------------------------
# the HF pipeline of one case
# --------------------------------------------------------------------------

def hf_procs(c):
    do_sample = c["temperature"] > 0
    eos = [c["eos"]] if c["eos"] >= 0 else []
    kw = dict(do_sample=do_sample, num_beams=1,
              temperature=float(c["temperature"]) if do_sample else 1.0,
              top_k=int(c["top_k"]), top_p=float(c["top_p"]),
              min_p=float(c["min_p"]) if c["min_p"] > 0 else None,
              typical_p=float(c["typical_p"]),
              epsilon_cutoff=float(c["epsilon"]),
              eta_cutoff=float(c["eta"]),
              repetition_penalty=1.0)
    if c["ngram"] > 0:
        kw["no_repeat_ngram_size"] = int(c["ngram"])
    if c["bad_words"]:
        kw["bad_words_ids"] = [list(w) for w in c["bad_words"]]
    if c["exp_decay"] is not None:
        kw["exponential_decay_length_penalty"] = (int(c["exp_decay"][0]),
                                                  float(c["exp_decay"][1]))
    if eos:
        kw["eos_token_id"] = eos
    gc = GenerationConfig(**kw)
    gc._eos_token_tensor = torch.tensor(eos, dtype=torch.long) if eos else None
    L = len(c["prompt"]) + len(c["output"])
    procs = gen._MODEL._get_logits_processor(
        gc, input_ids_seq_length=len(c["prompt"]), encoder_input_ids=None,
        prefix_allowed_tokens_fn=None, logits_processor=None, device="cpu",
        model_kwargs={"attention_mask": torch.ones(1, L, dtype=torch.long)})
    mtk = c["mtk"]
    if mtk != 1:
        # generate() always passes min_tokens_to_keep = 1 for num_beams = 1;
        # rebuild the warpers (same classes, same order) with the value asked.
        out = []
        for p in procs:
            nm = type(p).__name__
            if nm == "TopKLogitsWarper":
                p = TopKLogitsWarper(top_k=c["top_k"], min_tokens_to_keep=mtk)
            elif nm == "TopPLogitsWarper":
                p = TopPLogitsWarper(top_p=c["top_p"], min_tokens_to_keep=mtk)
            elif nm == "MinPLogitsWarper":
                p = MinPLogitsWarper(min_p=c["min_p"], min_tokens_to_keep=mtk)
            elif nm == "TypicalLogitsWarper":
                p = TypicalLogitsWarper(mass=c["typical_p"], min_tokens_to_keep=mtk)
            elif nm == "EpsilonLogitsWarper":
                p = EpsilonLogitsWarper(epsilon=c["epsilon"], min_tokens_to_keep=mtk)
            elif nm == "EtaLogitsWarper":
                p = EtaLogitsWarper(epsilon=c["eta"], min_tokens_to_keep=mtk)
            out.append(p)
        procs = out
    return procs


ORDERS_SEEN = []


def reference(c):
    V = c["vocab"]
    name = c["name"]
    procs = hf_procs(c)
    order = [type(p).__name__ for p in procs]
    if order not in ORDERS_SEEN:
        ORDERS_SEEN.append(order)
    ids = torch.tensor([c["prompt"] + c["output"]], dtype=torch.long)
    scores = torch.tensor(c["logits"], dtype=torch.float32).view(1, V).clone()
    mtk = c["mtk"]
    pre_temp = None
    for p in procs:
        nm = type(p).__name__
        if nm == "TemperatureLogitsWarper":
            pre_temp = scores.clone()
        elif nm == "TopKLogitsWarper":
            k = min(p.top_k, V)
            if k < V:
                gen.check_gap_at_k(scores[0], k, name)
                if pre_temp is not None:
                    gen.check_gap_at_k(pre_temp[0], k, name)
        elif nm == "TopPLogitsWarper":
            gen.check_topp(scores[0], p.top_p, name)
            check_keep_k(scores[0], mtk, name)
        elif nm == "MinPLogitsWarper":
            gen.check_minp(scores[0], p.min_p, name)
            check_keep_k(scores[0], mtk, name)
        elif nm == "TypicalLogitsWarper":
            check_typical(scores[0], p.mass, name)
            check_keep_k(scores[0], mtk, name)
        elif nm == "EpsilonLogitsWarper":
            check_cutoff(scores[0], p.epsilon, name)
            check_keep_k(scores[0], mtk, name)
        elif nm == "EtaLogitsWarper":
            check_cutoff(scores[0], eta_value(scores[0], float(p.epsilon)), name)
            check_keep_k(scores[0], mtk, name)
        scores = p(ids, scores)
    if c["temperature"] <= 0:
        gen.check_greedy(scores[0], name)
        if not bool(torch.isfinite(scores).any()):
            raise Reject(name + ": all masked")
        return gen.one_hot_argmax(scores[0])
    return gen.final_probs(scores[0], name)


# --------------------------------------------------------------------------
# case generation
# --------------------------------------------------------------------------

def base(V, logits):
    c = gen.base_case("", "hf", V, logits)
    c.update(typical_p=1.0, epsilon=0.0, eta=0.0, mtk=1, ngram=0,
             bad_words=[], exp_decay=None)
    return c


def rep_history(r, V, n_prompt, n_out, pool_size):
    """Histories drawn from a small pool so n-grams repeat."""
    pool = gen.rand_ids(r, V, pool_size, distinct=True)
    prompt = [int(r.choice(pool)) for _ in range(n_prompt)]
    out = [int(r.choice(pool)) for _ in range(n_out)]
    return prompt, out


def specs():
    out = []

    def add(group, fn, n):
        for i in range(n):
            out.append((group, i, fn))

    # typical-p alone (after temperature)
    def f_typ(r, i):
        V = SMALL_V[i % 4]
        c = base(V, gen.make_logits(r, V, ["n1", "n3", "ninf"][(i // 4) % 3]))
        c["temperature"] = TEMPS[i % 4]
        c["typical_p"] = [0.2, 0.5, 0.9, 0.95][(i // 3) % 4]
        return c
    add("typical", f_typ, 16)

    # epsilon cutoff
    def f_eps(r, i):
        V = SMALL_V[i % 4]
        c = base(V, gen.make_logits(r, V, ["n1", "n3", "ninf"][(i // 4) % 3]))
        c["temperature"] = TEMPS[(i + 1) % 4]
        c["epsilon"] = [3e-4, 1e-3, 0.01, 0.05, 0.2][i % 5]
        return c
    add("epsilon", f_eps, 15)

    # eta cutoff (entropy-dependent threshold)
    def f_eta(r, i):
        V = SMALL_V[i % 4]
        c = base(V, gen.make_logits(r, V, ["n1", "n3", "ninf"][(i // 4) % 3]))
        c["temperature"] = TEMPS[(i + 2) % 4]
        c["eta"] = [3e-4, 2e-3, 0.01, 0.05, 0.3][i % 5]
        return c
    add("eta", f_eta, 15)

    # min_tokens_to_keep > 1 on every warper that takes it; parameters
    # chosen so the minimum is what decides the kept set in many rows
    def f_mtk(r, i):
        V = SMALL_V[i % 4]
        c = base(V, gen.make_logits(r, V, ["n3", "n1"][i % 2]))
        c["temperature"] = TEMPS[i % 4]
        c["mtk"] = [2, 3, 5][i % 3]
        kind = (i // 2) % 6
        if kind == 0:
            c["top_k"] = 1
        elif kind == 1:
            c["top_p"] = 0.05
        elif kind == 2:
            c["min_p"] = 0.9
        elif kind == 3:
            c["typical_p"] = 0.05
        elif kind == 4:
            c["epsilon"] = 0.4
        else:
            c["eta"] = 0.3
        return c
    add("mtk", f_mtk, 24)

    # no_repeat_ngram over prompt + output (greedy and sampled rows)
    def f_ngram(r, i):
        V = SMALL_V[i % 4]
        c = base(V, gen.make_logits(r, V, ["n1", "n3"][i % 2]))
        c["ngram"] = [1, 2, 3, 4][(i // 2) % 4]
        c["prompt"], c["output"] = rep_history(
            r, V, int(r.integers(2, 10)), int(r.integers(0, 14)),
            min(V, [2, 3, 4][i % 3]))
        c["temperature"] = [0.0, 0.7, 1.0, 1.5][(i // 3) % 4]
        if i % 5 == 4:
            c["top_p"] = 0.9
        return c
    add("ngram", f_ngram, 16)

    # bad words: single- and multi-token, some whose prefix ends the context
    def f_bad(r, i):
        V = SMALL_V[i % 4]
        c = base(V, gen.make_logits(r, V, ["n1", "n3", "ninf"][i % 3]))
        c["prompt"], c["output"] = rep_history(
            r, V, int(r.integers(1, 8)), int(r.integers(0, 10)), min(V, 5))
        ctx = c["prompt"] + c["output"]
        words = []
        # a word whose prefix matches the end of the context (bans its last)
        for L in ([2, 3] if i % 2 == 0 else [2]):
            if len(ctx) >= L - 1:
                words.append(ctx[len(ctx) - (L - 1):] + [int(r.integers(0, V))])
        # a word whose prefix does not match (no effect unless by chance)
        words.append([int(r.integers(0, V)), int(r.integers(0, V))])
        # single-token words (always banned)
        words.append([int(r.integers(0, V))])
        if i % 4 == 3:
            # the EOS id as a single-token bad word is dropped by HF
            c["eos"] = int(r.integers(0, V))
            words.append([c["eos"]])
        # dedupe, keep order
        seen, uniq = set(), []
        for w in words:
            if tuple(w) not in seen:
                seen.add(tuple(w))
                uniq.append(w)
        c["bad_words"] = uniq
        c["temperature"] = [0.0, 0.7, 1.0, 1.5][(i // 2) % 4]
        if i % 3 == 1:
            c["top_k"] = 5
        return c
    add("badwords", f_bad, 16)

    # exponential decay length penalty on EOS
    def f_decay(r, i):
        V = SMALL_V[i % 4]
        c = base(V, gen.make_logits(r, V, ["n1", "n3"][i % 2]))
        c["prompt"] = gen.rand_ids(r, V, int(r.integers(1, 10)))
        c["output"] = gen.rand_ids(r, V, int(r.integers(0, 12)))
        n_out = len(c["output"])
        c["eos"] = int(r.integers(0, V))
        # start below, at and above the output length
        start = [max(0, n_out - 3), n_out, n_out + 2, 0][i % 4]
        c["exp_decay"] = (start, [1.01, 1.3, 1.6, 0.8][(i // 4) % 4])
        c["temperature"] = [0.0, 0.7, 1.0, 1.5][(i // 2) % 4]
        if i % 5 == 2:
            c["top_k"] = 5
        return c
    add("expdecay", f_decay, 16)

    # everything together, generate() order
    def f_combo(r, i):
        V = SMALL_V[i % 4]
        c = base(V, gen.make_logits(r, V, ["n1", "n3", "ninf"][i % 3]))
        c["prompt"], c["output"] = rep_history(
            r, V, int(r.integers(2, 8)), int(r.integers(1, 10)), min(V, 4))
        c["temperature"] = TEMPS[i % 4]
        c["top_k"] = [0, 40][i % 2]
        c["top_p"] = [1.0, 0.95][(i // 2) % 2]
        c["typical_p"] = [1.0, 0.9][(i // 4) % 2]
        c["epsilon"] = [0.0, 1e-3][(i + 1) % 2]
        c["eta"] = [0.0, 2e-3][(i // 3) % 2]
        c["ngram"] = [0, 3][(i // 2) % 2]
        c["bad_words"] = [[int(r.integers(0, V))]]
        c["eos"] = int(r.integers(0, V))
        c["exp_decay"] = (0, 1.2) if i % 3 == 0 else None
        c["mtk"] = [1, 2][(i // 5) % 2]
        return c
    add("combo", f_combo, 12)
    return out


def build():
    rng = np.random.default_rng(SEED)
    cases, rejects = [], 0
    for group, i, fn in specs():
        for _ in range(500):
            c = fn(rng, i)
            c["name"] = "hf_%s_%02d" % (group, i)
            try:
                probs = reference(c)
            except Reject:
                rejects += 1
                continue
            c["probs"] = [f32(v) for v in probs.tolist()]
            cases.append(c)
            break
        else:
            raise SystemExit("could not draw a safe case for hf_%s_%02d" % (group, i))
    return cases, rejects


HEADER_KEYS = """\
# File format: plain text, one key per line, whitespace-separated; a case runs
# from `case` to `end`. Floats are the shortest decimal that round-trips the
# float32 value (strtof reads them back exactly); -inf / inf as such; 0 = zero.
# Keys shared with golden_hf.txt (same meaning; see tools/golden/README.md):
#   case NAME               hf_<group>_<nn>; groups: typical epsilon eta mtk
#                           ngram badwords expdecay combo
#   profile hf
#   vocab V
#   temperature T           0 = greedy (do_sample=False: no warper runs)
#   top_k K                 0 = off
#   top_p P                 1.0 = off
#   min_p M                 0 = off
#   presence_penalty 0 / frequency_penalty 0 / repetition_penalty 1.0 /
#   min_tokens 0 / stop_token_ids 0 / logit_bias 0 / allowed_ids -1 /
#   banned_ids 0            always neutral in this file
#   eos_token_id ID         -1 = none; used by bad_words (a single-token bad
#                           word equal to EOS is dropped) and exp_decay
#   prompt n a b ...        input ids before generation (counts for ngram,
#                           bad words; sets the exp_decay origin)
#   output n a b ...        tokens already generated
#   logits v0 ... v(V-1)
#   probs p0 ... p(V-1)     the final distribution (one-hot argmax if greedy)
#   end
# New keys (always present, neutral values when unused):
#   typical_p P             TypicalLogitsWarper(mass=P); 1.0 = off
#   epsilon_cutoff E        EpsilonLogitsWarper(epsilon=E); 0 = off
#   eta_cutoff E            EtaLogitsWarper(epsilon=E); 0 = off
#   min_tokens_to_keep N    passed to every warper that takes it (TopK, TopP,
#                           MinP, Typical, Epsilon, Eta); 1 = generate()'s value
#   no_repeat_ngram_size N  NoRepeatNGramLogitsProcessor(N) over prompt+output;
#                           0 = off
#   bad_words n w1 ... wn   NoBadWordsLogitsProcessor; each word is its token
#                           ids joined by commas (e.g. `bad_words 2 5,7,9 12`);
#                           the last id of a word is banned when the word's
#                           other ids end prompt+output; n = 0: none
#   exp_decay START FACTOR  ExponentialDecayLengthPenalty((START, FACTOR));
#                           with L = len(output): if L > START the EOS logit
#                           gets |l| * (FACTOR^(L - START) - 1) added;
#                           `exp_decay -1 0` = off
# Order (generate()): NoRepeatNGram > NoBadWords > ExponentialDecayLength >
# Temperature > TopK > TopP > MinP > Typical > Epsilon > Eta (see the orders
# line below for what the file's cases actually built)."""


def write(path, cases, rejects):
    versions = "torch %s, transformers %s, numpy %s, python %s" % (
        torch.__version__, transformers.__version__, np.__version__,
        ".".join(map(str, sys.version_info[:3])))
    lines = [
        "# mysample golden vectors, profile hf, sampler catalogue: the exact final",
        "# distribution a row is drawn from (probs), for the logits and parameters given.",
        "# generator: tools/golden/gen_catalogue.py (do not edit by hand)",
        "# versions: " + versions,
        "# reference: transformers' own processors, composed by "
        "GenerationMixin._get_logits_processor (min_tokens_to_keep != 1: the "
        "same warper classes rebuilt with that value)",
        "# cases: %d (draws rejected near a float boundary: %d)" % (len(cases), rejects),
        "# check: |p - ref| <= 1e-5 for every id and p > 0 iff ref > 0",
        "# safety margins: no probability within 1e-5 (relative) of an epsilon/eta",
        "# cutoff or a min-p threshold, no cumulative mass within 2e-6 of a top-p or",
        "# typical-p boundary, no near-tie (1e-5) at a top-k / min_tokens_to_keep /",
        "# typical cut, survivors have log p > -80 or < -125.",
    ]
    lines += HEADER_KEYS.split("\n")
    for o in ORDERS_SEEN:
        lines.append("# orders: " + " > ".join(o))
    for c in cases:
        lines.append("case " + c["name"])
        lines.append("profile hf")
        lines.append("vocab %d" % c["vocab"])
        lines.append("temperature " + fmt(c["temperature"]))
        lines.append("top_k %d" % c["top_k"])
        lines.append("top_p " + fmt(c["top_p"]))
        lines.append("min_p " + fmt(c["min_p"]))
        lines.append("presence_penalty 0")
        lines.append("frequency_penalty 0")
        lines.append("repetition_penalty 1.0")
        lines.append("min_tokens 0")
        lines.append("eos_token_id %d" % c["eos"])
        lines.append("stop_token_ids 0")
        lines.append(gen.ids_line("prompt", c["prompt"]))
        lines.append(gen.ids_line("output", c["output"]))
        lines.append("logit_bias 0")
        lines.append("allowed_ids -1")
        lines.append("banned_ids 0")
        lines.append("typical_p " + fmt(c["typical_p"]))
        lines.append("epsilon_cutoff " + fmt(c["epsilon"]))
        lines.append("eta_cutoff " + fmt(c["eta"]))
        lines.append("min_tokens_to_keep %d" % c["mtk"])
        lines.append("no_repeat_ngram_size %d" % c["ngram"])
        lines.append("bad_words %d%s" % (len(c["bad_words"]), "".join(
            " " + ",".join(str(t) for t in w) for w in c["bad_words"])))
        if c["exp_decay"] is None:
            lines.append("exp_decay -1 0")
        else:
            lines.append("exp_decay %d %s" % (c["exp_decay"][0], fmt(c["exp_decay"][1])))
        lines.append("logits " + " ".join(fmt(v) for v in c["logits"]))
        lines.append("probs " + " ".join(fmt(v) for v in c["probs"]))
        lines.append("end")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    cases, rejects = build()
    path = os.path.join(ROOT, "tests", "data", "golden_catalogue_hf.txt")
    write(path, cases, rejects)
    print("wrote %s: %d cases (%d rejected draws), %d bytes"
          % (os.path.relpath(path, ROOT), len(cases), rejects, os.path.getsize(path)))


if __name__ == "__main__":
    main()
