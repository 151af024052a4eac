#!/usr/bin/env python3
"""Times each NVRTC program of src/cuda/kernels.cu alone, one after
another on one core: what a machine with a free core per program waits
for in a cold compile is the largest of these (mysample_cuda.h compiles
them at once). No GPU needed, only NVRTC.

usage: tools/nvrtc_programs.py [--arch sm_90] [--reps 3] [--nvrtc PATH]
                               [--source src/cuda/kernels.cu] [--units 0,1,2,3,4,5]
                               [-D NAME=VALUE ...]

Prints the best of --reps compiles per program (the programs alternate
between reps, so a slow spell of the machine touches all of them), then
the largest. The per-program options follow src/cuda/impl_nvrtc.c: -std=c++14,
-DMS_UNIT=u, and --Ofast-compile=min for the programs of kernels the
figures never run (FAST_UNITS below; keep it in step with
ms__cu_unit_fast_ok). -D adds a define to every program (-D MS_TOPP_BINS=1:
the programs of an ms_cuda with top_p's bins)."""
import argparse
import ctypes
import sys
import time

FAST_UNITS = {3, 5}


def load(path):
    names = [path] if path else ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"]
    for n in names:
        for cand in (n, "/usr/local/cuda/lib64/" + n):
            try:
                return ctypes.CDLL(cand)
            except OSError:
                pass
    sys.exit("nvrtc_programs: NVRTC could not be loaded (--nvrtc PATH)")


def compile_once(lib, src, opts):
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
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--nvrtc", default=None)
    ap.add_argument("--source", default="src/cuda/kernels.cu")
    ap.add_argument("--units", default="0,1,2,3,4,5")
    ap.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE")
    a = ap.parse_args()
    lib = load(a.nvrtc)
    src = open(a.source, "rb").read()
    units = [int(u) for u in a.units.split(",")]
    best = {u: float("inf") for u in units}
    for _ in range(a.reps):
        for u in units:
            opts = ["-std=c++14", "--gpu-architecture=" + a.arch, "-DMS_UNIT=%d" % u] + ["-D" + d for d in a.defines]
            if u in FAST_UNITS:
                opts.append("--Ofast-compile=min")
            best[u] = min(best[u], compile_once(lib, src, opts))
    for u in units:
        print("program %d: %.3f s%s" % (u, best[u], "  (--Ofast-compile=min)" if u in FAST_UNITS else ""))
    print("largest: program %d, %.3f s (best of %d, %s)" % (max(best, key=best.get), max(best.values()), a.reps, a.arch))


if __name__ == "__main__":
    main()
