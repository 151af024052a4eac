#!/usr/bin/env python3
"""Times each NVRTC program of src/cuda/kernels.cu alone, one after
another on one core: what a machine with a free core per program waits
for in a cold compile is the largest of these (mysample_cuda.h compiles
them at once). No GPU needed, only NVRTC.

usage: tools/nvrtc_programs.py [--arch sm_90] [--reps 3] [--nvrtc PATH]
                               [--source src/cuda/kernels.cu ...] [--units 0,1,2,3,4,5,6,7]
                               [-D NAME=VALUE ...] [--save DIR]   (units: 8-10 too with -D MS_TOPP_BINS=1)
                               [--fast-units 3,5,6|all|none] [--fast LEVEL]
                               [--opt NVRTC_OPTION ...] [--variant NVRTC_OPTION ...]

Prints the best of --reps compiles per program (the programs alternate
between reps, so a slow spell of the machine touches all of them), then
the largest. Several --source files (an older kernels.cu from `git show
REV:src/cuda/kernels.cu`, say) are compiled in turn within each rep and
printed side by side, so a noisy machine slows them alike. --save DIR
writes each program's CUBIN (the first source's) as DIR/program-U.cubin:
`cuobjdump -res-usage` then gives the registers and stack of the build
the library loads (NVRTC's, with --Ofast-compile=min where it applies),
which nvcc's full optimisation of the same source need not match.

The per-program options follow src/cuda/impl_nvrtc.c: -std=c++14,
-minimal (NVRTC 12.4 and newer), -DMS_UNIT=u, and --Ofast-compile=min
for the small programs (FAST_UNITS below; keep it in step with
ms__cu_unit_fast_ok; --fast-units as $MYSAMPLE_CUDA_FAST_UNITS, --fast
min|mid|max the level those programs get, to see what each level saves).
-D adds a define to every program (-D MS_TOPP_BINS=1:
the programs of an ms_cuda with top_p's bins, which adds programs 8-10).
--opt adds an NVRTC option to every program (as
$MYSAMPLE_CUDA_NVRTC_OPTIONS does: --ptxas-options=-O2, say); each
--variant adds a column: the first source compiled with that option
too, in the same reps (to weigh an option against the default)."""
import argparse
import ctypes
import os
import sys
import time

FAST_UNITS = {3, 5, 6}


def load(path):
    names = [path] if path else ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"]
    for n in names:
        for cand in (n, "/usr/local/cuda/lib64/" + n):
            try:
                return ctypes.CDLL(cand)
            except OSError:
                pass
    sys.exit("nvrtc_programs: NVRTC could not be loaded (--nvrtc PATH)")


def compile_once(lib, src, opts, save=None):
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), src, b"mysample_kernels.cu", 0, None, None) != 0:
        sys.exit("nvrtc_programs: nvrtcCreateProgram failed")
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    t0 = time.perf_counter()
    rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
    dt = time.perf_counter() - t0
    if rc != 0:
        n = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
        buf = ctypes.create_string_buffer(n.value)
        lib.nvrtcGetProgramLog(prog, buf)
        sys.exit("nvrtc_programs: %s failed:\n%s" % (" ".join(opts), buf.value.decode(errors="replace")[:4000]))
    if save:
        n = ctypes.c_size_t()
        if lib.nvrtcGetCUBINSize(prog, ctypes.byref(n)) == 0 and n.value:
            buf = ctypes.create_string_buffer(n.value)
            lib.nvrtcGetCUBIN(prog, buf)
            with open(save, "wb") as f:
                f.write(buf.raw)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--nvrtc", default=None)
    ap.add_argument("--source", action="append", default=[])
    ap.add_argument("--units", default=None, help="default 0-7, and 8-10 with -D MS_TOPP_BINS=1")
    ap.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--save", default=None, metavar="DIR")
    ap.add_argument("--fast-units", default=None, metavar="LIST")
    ap.add_argument("--fast", default="min", choices=["min", "mid", "max"])
    ap.add_argument("--opt", action="append", default=[], metavar="NVRTC_OPTION")
    ap.add_argument("--variant", action="append", default=[], metavar="NVRTC_OPTION")
    a = ap.parse_args()
    fast_units = FAST_UNITS
    if a.fast_units is not None:
        fast_units = set(range(11)) if a.fast_units == "all" else set() if a.fast_units == "none" else \
            {int(u) for u in a.fast_units.split(",")}
    fast_opt = "--Ofast-compile=" + a.fast
    lib = load(a.nvrtc)
    paths = a.source or ["src/cuda/kernels.cu"]
    srcs = [open(p, "rb").read() for p in paths]
    # each column: a source and the options it adds
    cols = [(s_, []) for s_ in srcs] + [(srcs[0], [v]) for v in a.variant]
    names = list(paths) + ["+" + v for v in a.variant]
    bins = any(d.startswith("MS_TOPP_BINS=") and d != "MS_TOPP_BINS=0" for d in a.defines)
    units = [int(u) for u in a.units.split(",")] if a.units else list(range(11 if bins else 8))
    best = [{u: float("inf") for u in units} for _ in cols]
    if a.save:
        os.makedirs(a.save, exist_ok=True)
    for rep in range(a.reps):
        for u in units:
            opts = ["-std=c++14", "-minimal", "--gpu-architecture=" + a.arch, "-DMS_UNIT=%d" % u] + ["-D" + d for d in a.defines]
            if u in fast_units:
                opts.append(fast_opt)
            opts += a.opt
            for k, (src, extra) in enumerate(cols):
                save = os.path.join(a.save, "program-%d.cubin" % u) if a.save and k == 0 and rep == 0 else None
                best[k][u] = min(best[k][u], compile_once(lib, src, opts + extra, save))
    if len(cols) > 1:
        print("program  " + "  ".join("%12s" % p[-12:] for p in names))
    for u in units:
        print("program %d: %s%s" % (u, "  ".join("%.3f s" % b[u] for b in best),
                                    "  (%s)" % fast_opt if u in fast_units else ""))
    for p, b in zip(names, best):
        print("largest: program %d, %.3f s (best of %d, %s%s)" % (max(b, key=b.get), max(b.values()), a.reps, a.arch,
                                                                  ", " + p if len(cols) > 1 else ""))


if __name__ == "__main__":
    main()
