#!/usr/bin/env python3
"""Turns `mysample bench --json` output into the Markdown tables of
BENCHMARKS.md: python3 tools/bench_table.py bench.jsonl"""
import json
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
single = [r for r in rows if not r["config"].startswith("batch")]
batch = [r for r in rows if r["config"].startswith("batch")]

print("### Floors (same run)\n")
print("| vocab | sigma | floor_max_us | floor_softmax_us |")
print("|---|---|---|---|")
seen = set()
for r in single:
    key = (r["vocab"], r["sigma"])
    if key in seen:
        continue
    seen.add(key)
    print(f"| {r['vocab']} | {r['sigma']:g} | {r['floor_max_us']:.2f} | {r['floor_softmax_us']:.2f} |")

print("\n### One row, one thread\n")
print("| config | vocab | sigma | us/row | x floor_max | x floor_softmax | naive us | naive / ours |")
print("|---|---|---|---|---|---|---|---|")
for r in single:
    speed = r["naive_us"] / r["us_per_row"] if r["us_per_row"] > 0 else 0
    print(f"| {r['config']} | {r['vocab']} | {r['sigma']:g} | {r['us_per_row']:.2f} | "
          f"{r['x_floor_max']:.2f} | {r['x_floor_softmax']:.2f} | {r['naive_us']:.0f} | {speed:.0f}x |")

if batch:
    print("\n### 64-row batches, 2 threads vs 1\n")
    print("| batch | vocab | sigma | us/row, 2 threads | us/row, 1 thread | speedup | a max pass over the same rows, 2 vs 1 thread |")
    print("|---|---|---|---|---|---|---|")
    for r in batch:
        print(f"| {r['config']} | {r['vocab']} | {r['sigma']:g} | {r['us_per_row']:.2f} | "
              f"{r['us_per_row_1thread']:.2f} | {r['speedup']:.2f} | {r.get('floor_batch_speedup', 0):.2f} |")
