#!/usr/bin/env python3
"""GPU comparison baselines for `mysample bench --device cuda`, and the
markdown table of the issue's figures. `run` times, on the GPU, with CUDA
events, on the same shapes, configurations and timing protocol as the C
bench (N(0, sigma^2) logits resident on the device, medians over groups of
back-to-back calls rotating over copies of the logits that fill the same
working set): a PyTorch sort-based sampler written here (torch.sort +
softmax + cumsum + masks + torch.multinomial; argmax for greedy) and
FlashInfer's samplers (top_k_top_p_sampling_from_logits; softmax +
top_p_sampling_from_probs / min_p_sampling_from_probs) when `flashinfer`
imports. It prints JSON lines with the bench's keys. `table` reads the JSON
lines of both and prints the markdown table for BENCHMARKS.md. Driven by
tools/gpu_figures.sh; not part of `make test` (it needs a GPU), which only
byte-compiles this file and renders a table from emulator output.

FlashInfer is not on the GPU machine's image; its wheels travel as files.
On a machine with PyPI access, from the repository root (`.whl/` is
ignored by git through .git/info/exclude; never commit wheels):

    echo /.whl/ >> .git/info/exclude
    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        -d .whl flashinfer-python==0.7.2.post1 apache-tvm-ffi==0.1.15.post2

flashinfer-python is pure Python and JIT-compiles its CUDA kernels with the
machine's nvcc on first use (a minute or two, outside the timing). If
`import flashinfer` then names another missing module (it declares
cuda-tile, nvidia-cudnn-frontend, nvidia-cutlass-dsl, nccl4py, ...;
`unzip -p .whl/flashinfer_python-*.whl '*/METADATA' | grep ^Requires-Dist`),
download that one the same way; the table says why FlashInfer is missing
when it cannot be imported. tools/gpu_figures.sh installs the wheels of
$MYSAMPLE_WHEELS (e.g. MYSAMPLE_WHEELS=.whl) into a temporary directory.
"""
import argparse
import json
import math
import statistics
import sys

CONFIGS = {
    # name: (temperature, top_k, top_p, min_p); the same as cli_bench_cuda.c
    "greedy": (0.0, 0, 1.0, 0.0),
    "top_p_0.9": (1.0, 0, 0.9, 0.0),
    "min_p_0.05": (1.0, 0, 1.0, 0.05),
    "top_k_50_top_p_0.95": (1.0, 50, 0.95, 0.0),
}
IMPLS = ("torch_sort", "flashinfer")


def int_list(s):
    return [int(x) for x in s.split(",") if x]


def emit(obj):
    print(json.dumps(obj), flush=True)


def log(msg):
    print("gpu_bench: " + msg, file=sys.stderr, flush=True)


# ---- the PyTorch sort-based sampler ------------------------------------------
def torch_sort_sample(torch, logits, temperature, top_k, top_p, min_p, generator):
    """vLLM's rules on a sorted copy of each row: min-p on the full softmax,
    top-k keeping ties with the k-th value, top-p on the survivors' softmax
    (a token stays iff the mass strictly above it is < p), then a
    multinomial draw in sorted order mapped back to token ids."""
    if temperature == 0.0:
        return logits.argmax(dim=-1)
    x = logits if temperature == 1.0 else logits / temperature
    sorted_x, order = torch.sort(x, dim=-1, descending=True)
    probs = torch.softmax(sorted_x, dim=-1)
    keep = None
    if min_p > 0.0:
        keep = probs >= min_p * probs[:, :1]
    if top_k > 0:
        k_keep = sorted_x >= sorted_x[:, top_k - 1:top_k]
        keep = k_keep if keep is None else keep & k_keep
    if top_p < 1.0:
        kept = probs if keep is None else probs.masked_fill(~keep, 0.0)
        kept = kept / kept.sum(dim=-1, keepdim=True)
        p_keep = (kept.cumsum(dim=-1) - kept) < top_p
        keep = p_keep if keep is None else keep & p_keep
    if keep is not None:
        probs = probs.masked_fill(~keep, 0.0)
    pick = torch.multinomial(probs, 1, generator=generator)
    return order.gather(-1, pick).squeeze(-1)


def flashinfer_fn(torch, fi, name):
    """The FlashInfer call for a configuration, or None where it has no
    kernel (greedy)."""
    t, k, p, mp = CONFIGS[name]
    sm = getattr(fi, "softmax", None)

    def softmax(x):
        return sm(x) if sm is not None else torch.softmax(x, dim=-1)

    if name == "top_k_50_top_p_0.95":
        return lambda x: fi.top_k_top_p_sampling_from_logits(x, k, p)
    if name == "top_p_0.9":
        return lambda x: fi.top_p_sampling_from_probs(softmax(x), p)
    if name == "min_p_0.05":
        return lambda x: fi.min_p_sampling_from_probs(softmax(x), mp)
    return None


def time_calls(torch, fn, units, reps, inner):
    """Median over `reps` groups (after 3 warm-up groups) of `inner`
    back-to-back calls between two CUDA events, in us per call; the calls
    rotate over the units (copies of the logits)."""
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times, call = [], 0
    for g in range(-3, reps):
        start.record()
        for _ in range(inner):
            fn(units[call % len(units)])
            call += 1
        end.record()
        end.synchronize()
        if g >= 0:
            times.append(start.elapsed_time(end) * 1000.0 / inner)
    return statistics.median(times)


def cmd_run(args):
    import torch
    if not torch.cuda.is_available():
        log("no CUDA device visible to torch")
        return 3
    dev = torch.device("cuda")
    name = torch.cuda.get_device_name(dev)
    fi, fi_err, fi_version = None, None, None
    if "flashinfer" in args.impl:
        try:
            import flashinfer
            import flashinfer.sampling as fi
            fi_version = getattr(flashinfer, "__version__", "?")
        except Exception as e:  # any import failure: report it, go on
            fi_err = "%s: %s" % (type(e).__name__, e)
            log("flashinfer unavailable: " + fi_err)
    emit({"group": "cuda_device", "impl": "baselines", "device": name, "torch": torch.__version__,
          "torch_cuda": torch.version.cuda, "flashinfer": fi_version, "flashinfer_error": fi_err})

    # the copy bandwidth as torch sees it (a cross-check of the C bench's)
    n = int(args.copy_mb * 1048576) // 4 * 4
    src = torch.empty(n // 4, dtype=torch.float32, device=dev)
    dst = torch.empty_like(src)
    us = time_calls(torch, lambda s: dst.copy_(s), [src], args.reps, args.inner)
    emit({"group": "cuda_floor", "impl": "torch", "copy_bytes": n, "copy_us": round(us, 3),
          "copy_gbps": round(2.0 * n / (us * 1e3), 1)})
    del src, dst

    gen = torch.Generator(device=dev)
    gen.manual_seed(1234)
    for V in args.vocab:
        for B in args.batch:
            unit_bytes = B * V * 4
            n_units = max(1, int(args.working_set_mb * 1048576) // unit_bytes)
            big = torch.randn(n_units * B, V, device=dev, generator=gen) * args.sigma
            units = [big[i * B:(i + 1) * B] for i in range(n_units)]
            for cfg in args.config:
                t, k, p, mp = CONFIGS[cfg]
                for impl in args.impl:
                    rec = {"group": "cuda", "impl": impl, "config": cfg, "batch": B, "vocab": V,
                           "sigma": args.sigma, "device": name, "reps": args.reps, "inner": args.inner,
                           "working_set_mb": round(n_units * unit_bytes / 1048576.0)}
                    if impl == "torch_sort":
                        fn = lambda x, t=t, k=k, p=p, mp=mp: torch_sort_sample(torch, x, t, k, p, mp, gen)
                        rec["method"] = "argmax" if t == 0.0 else "sort"
                    elif fi is None:
                        rec["error"] = fi_err or "flashinfer not imported"
                        emit(rec)
                        continue
                    else:
                        fn = flashinfer_fn(torch, fi, cfg)
                        if fn is None:
                            rec["error"] = "no FlashInfer kernel for this configuration"
                            emit(rec)
                            continue
                    try:
                        ids = fn(units[0])   # first call: FlashInfer JIT-compiles here
                        torch.cuda.synchronize()
                        ok = ids.numel() == B and int(ids.min()) >= 0 and int(ids.max()) < V
                        if not ok:
                            raise RuntimeError("ids out of range")
                        us = time_calls(torch, fn, units, args.reps, args.inner)
                    except Exception as e:
                        rec["error"] = "%s: %s" % (type(e).__name__, e)
                        log("%s %s B=%d V=%d: %s" % (impl, cfg, B, V, rec["error"]))
                        emit(rec)
                        continue
                    rec["us_per_batch"] = round(us, 3)
                    rec["us_per_row"] = round(us / B, 4)
                    emit(rec)
            del units, big
            torch.cuda.empty_cache()
    return 0


# ---- the markdown table -------------------------------------------------------
def fmt_us(x):
    if x is None:
        return "—"
    return "%.1f" % x if x >= 10 else "%.2f" % x


def fmt_x(x):
    return "—" if x is None or not math.isfinite(x) else ("%.1fx" % x if x >= 10 else "%.2fx" % x)


def cmd_table(args):
    lines = []
    for path in args.files:
        try:
            with open(path) as f:
                for raw in f:
                    raw = raw.strip()
                    if raw.startswith("{"):
                        lines.append(json.loads(raw))
        except OSError as e:
            log("cannot read %s: %s" % (path, e))
    ms = {}
    base = {}
    dev = create = floor = bdev = fdev = None
    for l in lines:
        g, impl = l.get("group"), l.get("impl")
        if g == "cuda_device" and impl == "mysample":
            dev = l
        elif g == "cuda_device" and impl == "flashinfer_cpp":
            fdev = l
        elif g == "cuda_device":
            bdev = l
        elif g == "cuda_create":
            create = l
        elif g == "cuda_floor" and impl == "mysample":
            floor = l
        elif g == "cuda":
            key = (l["vocab"], l["batch"], l["config"])
            if impl == "mysample":
                ms[key] = l
            else:
                base[(impl,) + key] = l
    if not ms:
        print("No `mysample bench --device cuda` results: the GPU run failed (see its stderr).")
        return 1
    out = []
    gpu = dev["device"] if dev else "?"
    emu = bool(dev and dev.get("emulator"))
    out.append("### GPU figures: %s%s" % (gpu, " (CPU EMULATOR: these numbers mean nothing)" if emu else ""))
    out.append("")
    if dev:
        out.append("- GPU: **%s**, kernels %s, CUDA driver %s, mysample %s" % (
            gpu, dev.get("target"), dev.get("driver_version"), dev.get("version")))
    if bdev:
        out.append("- torch %s (CUDA %s); FlashInfer %s" % (
            bdev.get("torch"), bdev.get("torch_cuda"),
            bdev.get("flashinfer") or "not available (%s)" % (bdev.get("flashinfer_error") or "not run")))
    else:
        out.append("- baselines (torch, FlashInfer): not run")
    if fdev:
        out.append("- FlashInfer %s through tools/flashinfer_bench.cu (built by tools/flashinfer_build.sh): its "
                   "kernels called from C++ and composed as its Python functions compose them (softmax + "
                   "top-p / min-p sampling; top_k_top_p_sampling_from_logits' default top-k-first fast path), "
                   "deterministic, on %s" % (fdev.get("flashinfer"), fdev.get("device")))
    if floor:
        out.append("- floor: one read of B·V·4 bytes at the device-to-device copy bandwidth measured in "
                   "the same run, %.0f GB/s (bytes read + written, cuMemcpyDtoDAsync of %.0f MB)" % (
                       floor["copy_gbps"], floor["copy_bytes"] / 1048576.0))
    if create:
        first = create.get("create_first_ms")
        out.append("- `ms_cuda_create`: first call %.1f ms (%s), warm %.2f ms; cold NVRTC compile %s ms, "
                   "disk-cache load %s ms" % (
                       first, create.get("first_source"), create.get("create_warm_ms"),
                       "%.1f" % create["compile_ms"] if create.get("compile_ms") is not None else "—",
                       "%.2f" % create["disk_load_ms"] if create.get("disk_load_ms") is not None else "—")
                   + (" (NVRTC's own cache was on: the cold compile may have been a cache hit)"
                      if create.get("nvrtc_cache") else ""))
    some = next(iter(ms.values()))
    out.append("- logits N(0, %g) resident on the device, ids left on the device; µs per batch = median "
               "of %d groups of %d back-to-back calls timed with CUDA events, rotating over %s MB of "
               "copies of the logits (so small batches are read from memory, not L2)" % (
                   some.get("sigma", 1), some.get("reps", 0), some.get("inner", 0), some.get("working_set_mb")))
    out.append("")
    out.append("| vocab | batch | config | mysample µs | × floor | torch sort µs | FlashInfer µs "
               "| vs torch sort | vs FlashInfer |")
    out.append("|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    fi_fail, floor_fail, torch_fail = [], [], []
    fi_n = floor_n = torch_n = 0
    for key in sorted(ms, key=lambda k: (k[0], k[1], list(CONFIGS).index(k[2]) if k[2] in CONFIGS else 99)):
        V, B, cfg = key
        m = ms[key]
        us = m["us_per_batch"]
        t = base.get(("torch_sort",) + key, {})
        f = base.get(("flashinfer",) + key, {})
        tus, fus = t.get("us_per_batch"), f.get("us_per_batch")
        tname = fmt_us(tus) + (" (argmax)" if tus is not None and t.get("method") == "argmax" else "")
        vs_t = tus / us if tus else None
        vs_f = fus / us if fus else None
        out.append("| %d | %d | %s | %s | %s | %s | %s | %s | %s |" % (
            V, B, cfg, fmt_us(us), fmt_x(m.get("x_floor")), tname, fmt_us(fus), fmt_x(vs_t), fmt_x(vs_f)))
        if fus:
            fi_n += 1
            if not us < fus:
                fi_fail.append("%s B=%d V=%d (%.2fx)" % (cfg, B, V, vs_f))
        if B == 256:
            floor_n += 1
            if not m.get("x_floor", 99) <= 3.0:
                floor_fail.append("%s V=%d (%.2fx)" % (cfg, V, m.get("x_floor", 0)))
            if tus and t.get("method") == "sort":
                torch_n += 1
                if not vs_t >= 10.0:
                    torch_fail.append("%s V=%d (%.1fx)" % (cfg, V, vs_t))
    out.append("")
    joint = sorted(k[1:] for k in base if k[0] == "flashinfer_joint" and base[k].get("us_per_batch"))
    if joint:
        out.append("FlashInfer's joint route (`filter_apply_order=\"joint\"`: softmax + the rejection sampler "
                   "TopKTopPSamplingFromProb), µs per batch: " + ", ".join(
                       "V=%d B=%d %s %s" % (V, B, cfg, fmt_us(base[("flashinfer_joint", V, B, cfg)]["us_per_batch"]))
                       for V, B, cfg in joint))
        out.append("")

    def verdict(n, fails, what):
        if n == 0:
            return "not measured (%s)" % what
        return "**yes** (%d of %d)" % (n, n) if not fails else "**no**: %s" % ", ".join(fails)

    out.append("Targets:")
    out.append("- faster than FlashInfer at every batch size: " + verdict(fi_n, fi_fail, "no FlashInfer figures"))
    out.append("- within 3x of the one-read floor at batch 256: " + verdict(floor_n, floor_fail, "no batch 256"))
    out.append("- at least 10x faster than the PyTorch sort path at batch 256: "
               + verdict(torch_n, torch_fail, "no torch sort figures at batch 256"))
    out.append("- GPU model: %s" % gpu)
    if args.raw:
        out.append("")
        out.append("<details><summary>raw JSON lines</summary>")
        out.append("")
        out.append("```")
        out.extend(json.dumps(l) for l in lines)
        out.append("```")
        out.append("</details>")
    print("\n".join(out))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="time the baselines on the GPU (JSON lines)")
    r.add_argument("--batch", type=int_list, default=[1, 32, 256])
    r.add_argument("--vocab", type=int_list, default=[128256, 151936])
    r.add_argument("--config", type=lambda s: s.split(","), default=list(CONFIGS))
    r.add_argument("--impl", type=lambda s: s.split(","), default=list(IMPLS))
    r.add_argument("--reps", type=int, default=31)
    r.add_argument("--inner", type=int, default=20)
    r.add_argument("--sigma", type=float, default=1.0)
    r.add_argument("--working-set-mb", type=float, default=256.0)
    r.add_argument("--copy-mb", type=float, default=256.0)
    t = sub.add_parser("table", help="markdown table from JSON lines files")
    t.add_argument("files", nargs="+")
    t.add_argument("--raw", action="store_true", help="append the JSON lines in a <details> block")
    args = ap.parse_args()
    if args.cmd == "run":
        for c in args.config:
            if c not in CONFIGS:
                ap.error("unknown config %s (%s)" % (c, ", ".join(CONFIGS)))
        for i in args.impl:
            if i not in IMPLS:
                ap.error("unknown impl %s (%s)" % (i, ", ".join(IMPLS)))
        return cmd_run(args)
    return cmd_table(args)


if __name__ == "__main__":
    sys.exit(main())
