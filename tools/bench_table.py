#!/usr/bin/env python3
"""Turns `mysample bench --json` output into the Markdown tables of
BENCHMARKS.md: python3 tools/bench_table.py bench.jsonl

Rows with "group": "catalogue" (the sampler catalogue: each sampler alone
on top of a base configuration) get their own tables: the rows in full, then
the extra cost of each sampler over its base, in units of floor_softmax
measured in the same run (target: at most 1x)."""
import json
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
catalogue = [r for r in rows if r.get("group") == "catalogue"]
rows = [r for r in rows if r.get("group") != "catalogue"]
single = [r for r in rows if not r["config"].startswith("batch")]
batch = [r for r in rows if r["config"].startswith("batch")]

print("### Floors (same run)\n")
print("| vocab | sigma | floor_max_us | floor_softmax_us |")
print("|---|---|---|---|")
seen = set()
for r in single + [c for c in catalogue if "error" not in c]:
    key = (r["vocab"], r["sigma"])
    if key in seen:
        continue
    seen.add(key)
    print(f"| {r['vocab']} | {r['sigma']:g} | {r['floor_max_us']:.2f} | {r['floor_softmax_us']:.2f} |")

if single:
    print("\n### One row, one thread\n")
    print("| config | vocab | sigma | us/row | x floor_max | x floor_softmax | naive us | naive / ours |")
    print("|---|---|---|---|---|---|---|---|")
    for r in single:
        speed = r["naive_us"] / r["us_per_row"] if r["us_per_row"] > 0 and r["naive_us"] > 0 else 0
        naive = f"{r['naive_us']:.0f}" if r["naive_us"] > 0 else "-"
        ratio = f"{speed:.0f}x" if speed > 0 else "-"
        print(f"| {r['config']} | {r['vocab']} | {r['sigma']:g} | {r['us_per_row']:.2f} | "
              f"{r['x_floor_max']:.2f} | {r['x_floor_softmax']:.2f} | {naive} | {ratio} |")

if batch:
    print("\n### 64-row batches, 2 threads vs 1\n")
    print("| batch | vocab | sigma | us/row, 2 threads | us/row, 1 thread | speedup | a max pass over the same rows, 2 vs 1 thread |")
    print("|---|---|---|---|---|---|---|")
    for r in batch:
        print(f"| {r['config']} | {r['vocab']} | {r['sigma']:g} | {r['us_per_row']:.2f} | "
              f"{r['us_per_row_1thread']:.2f} | {r['speedup']:.2f} | {r.get('floor_batch_speedup', 0):.2f} |")

if catalogue:
    TARGET = 1.0  # each sampler may add at most 1x floor_softmax_us
    # mirostat replaces llama.cpp's chain (bias, temperature, mirostat): its
    # "extra" is against the chain it replaces, and can be negative
    REPLACES = ("mirostat_1", "mirostat_2")

    print("\n### Sampler catalogue, one row, one thread\n")
    print("Each sampler alone on top of a base, timed interleaved with the base "
          "over the 1024-token history, each call on the next of 16 rows of the sigma "
          "(read once untimed first); extra = (us - base us) / floor_softmax_us, "
          "the floor timed between the base and the sampler on the same rows, and "
          "against the floor timed alone before (one repeated row); <= 1x asks "
          "both.\n")
    print("| base | sampler | profile | vocab | sigma | us/row | x floor_softmax | base us | extra, x floor_softmax | extra, x floor alone | <= 1x |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in catalogue:
        sampler = r["sampler"] if r["sampler"] != "none" else "(base alone)"
        if "error" in r:
            print(f"| {r['base']} | {sampler} | {r['profile']} | {r['vocab']} | {r['sigma']:g} | "
                  f"failed: {r['error']} | | | | | |")
            continue
        if r["sampler"] == "none":
            print(f"| {r['base']} | {sampler} | {r['profile']} | {r['vocab']} | {r['sigma']:g} | "
                  f"{r['us_per_row']:.2f} | {r['x_floor_softmax']:.2f} | | | | |")
            continue
        extra = r["extra_x_floor_softmax"]
        alone = r.get("extra_x_floor_softmax_alone", extra)
        met = "replaces the chain" if r["sampler"] in REPLACES else ("yes" if max(extra, alone) <= TARGET else "**no**")
        print(f"| {r['base']} | {sampler} | {r['profile']} | {r['vocab']} | {r['sigma']:g} | "
              f"{r['us_per_row']:.2f} | {r['x_floor_softmax']:.2f} | {r['base_us']:.2f} | {extra:+.2f} | {alone:+.2f} | {met} |")

    # the summary: one line per sampler, one column per (base, vocab, sigma)
    cols, samplers, cell = [], [], {}
    for r in catalogue:
        if r["sampler"] == "none":
            continue
        col = (r["base"], r["vocab"], r["sigma"])
        if col not in cols:
            cols.append(col)
        if r["sampler"] not in samplers:
            samplers.append(r["sampler"])
        cell[(r["sampler"], col)] = "failed" if "error" in r else \
            f"{max(r['extra_x_floor_softmax'], r.get('extra_x_floor_softmax_alone', r['extra_x_floor_softmax'])):+.2f}"
    bases = []
    for b, _, _ in cols:
        if b not in bases:
            bases.append(b)
    cols.sort(key=lambda c: (bases.index(c[0]), c[1], c[2]))
    if cols:
        many_vocabs = len({c[1] for c in cols}) > 1
        head = [f"{b}, V={v}, σ={s:g}" if many_vocabs else f"{b}, σ={s:g}" for b, v, s in cols]
        print("\n### Sampler catalogue: extra cost over the base, x floor_softmax (target <= 1; "
              "the larger of the ratios to the two floors)\n")
        print("| sampler | " + " | ".join(head) + " |")
        print("|---|" + "---|" * len(cols))
        for s in samplers:
            print(f"| {s} | " + " | ".join(cell.get((s, c), "-") for c in cols) + " |")
