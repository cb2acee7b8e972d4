#!/usr/bin/env python3
"""Build, check and time chapter 1's CUDA C kernels (gpulab/matmul/kernels.cu) on one GPU.

Standalone (CuPy + numpy only, no gpulab host code), so it can run on a bare device machine:

    python scripts/tune_matmul_cuda.py [--quick] [--configs NAME ...] [--sizes 4096 8192]

For every (kernel, defines) configuration: compile the whole source with NVRTC through
cupy.RawModule; check it at odd sizes against a float64 product (C poisoned with NaN first,
fresh random inputs per check, ||C - ref|| / ||ref|| < 1e-4); time it with CUDA events
(warm-up, median of REPS) at the timing sizes, next to cupy.matmul in float32 (cuBLAS SGEMM;
CUPY_TF32 is removed from the environment so TF32 stays off). Prints a table last and writes
everything to $OUT/tune_matmul_cuda.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ.pop("CUPY_TF32", None)  # before cupy is imported: FP32 SGEMM, no TF32

import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = os.path.join(ROOT, "gpulab", "matmul", "kernels.cu")


def cdiv(a, b):
    return (a + b - 1) // b


# ---------------------------------------------------------------- launch geometry per kernel
def source_defaults():
    """The #ifndef defaults of kernels.cu (so launch geometry follows the source's defaults)."""
    import re

    out = {}
    for m in re.finditer(r"^#ifndef (\w+)\n#define \1 (\d+)", open(SOURCE).read(), re.M):
        out[m.group(1)] = int(m.group(2))
    return out


def geometry(kernel, d, M, N, K):
    """(grid, block) exactly as documented in kernels.cu / the brief."""
    d = {**source_defaults(), **d}
    if kernel == "matmul_naive":
        return (cdiv(M, 16), cdiv(N, 16)), (16, 16)
    if kernel == "matmul_coalesced":
        return (cdiv(N, 16), cdiv(M, 16)), (16, 16)
    if kernel == "matmul_shared":
        t = d.get("TILE", 16)
        return (cdiv(N, t), cdiv(M, t)), (t, t)
    if kernel == "matmul_constant":
        return (cdiv(M, 32), cdiv(N, 8)), (32, 8)
    if kernel == "matmul_constant_scattered":
        return (cdiv(N, 32), cdiv(M, 8)), (32, 8)
    if kernel in ("matmul_register", "matmul_prefetch", "matmul_vec4"):
        BM, BN = d.get("BM", 128), d.get("BN", 128)
        TM, TN = d.get("TM", 8), d.get("TN", 8)
        return (cdiv(N, BN), cdiv(M, BM)), (BN // TN, BM // TM)
    if kernel == "matmul_warptile":
        BM, BN = d.get("WT_BM", 128), d.get("WT_BN", 128)
        return (cdiv(N, BN), cdiv(M, BM)), (d.get("WT_THREADS", 256),)
    raise KeyError(kernel)


# name, kernel, defines, timing sizes (None = all requested sizes)
LADDER = [
    ("naive", "matmul_naive", {}, [4096]),
    ("coalesced", "matmul_coalesced", {}, [4096]),
    ("shared16", "matmul_shared", {"TILE": 16}, [4096]),
    ("shared32", "matmul_shared", {"TILE": 32}, [4096]),
    ("constant", "matmul_constant", {}, []),
    ("constant_scattered", "matmul_constant_scattered", {}, []),
    ("register", "matmul_register", dict(BM=128, BN=128, BK=8, TM=8, TN=8, PAD=4), None),
    ("prefetch", "matmul_prefetch", dict(BM=128, BN=128, BK=8, TM=8, TN=8, PAD=4), None),
    ("vec4", "matmul_vec4", dict(BM=128, BN=128, BK=8, TM=8, TN=8, PAD=4), None),
]


def wt(**kw):
    return {f"WT_{k}": v for k, v in kw.items()}


WARPTILE = [
    # run 1 (BK = 16 default, 64-bit offsets): BK=8 MINBLOCKS=1 beat BK=16 by 30 %.
    ("wt_default", "matmul_warptile", {}, None),
    ("wt_bk8_mb1", "matmul_warptile", wt(BK=8, MINBLOCKS=1), None),
    ("wt_w32x64_bk8", "matmul_warptile", wt(WM=32, WN=64, WNITER=2, BK=8, MINBLOCKS=1), None),
    # run 2: 32-bit offsets on the fast path let some BK=8 shapes fit 128 registers (2 blocks/SM)
    ("wt_w32x64_bk8_mb2", "matmul_warptile", wt(WM=32, WN=64, WNITER=2, BK=8, MINBLOCKS=2), None),
    ("wt_tm8tn4_bk8_mb2", "matmul_warptile", wt(WM=64, WN=32, WNITER=2, TM=8, TN=4, BK=8, MINBLOCKS=2), None),
    ("wt_bk8_mb2", "matmul_warptile", wt(BK=8, MINBLOCKS=2), None),
    ("wt_256x128_bk8", "matmul_warptile", wt(BM=256, WM=64, WN=64, WNITER=2, BK=8, MINBLOCKS=1), None),
    ("wt_128t_64x64_bk8", "matmul_warptile", wt(THREADS=128, WM=64, WN=64, WNITER=2, BK=8, MINBLOCKS=1), None),
    ("wt_w32x64_bk8_mb2_pad8", "matmul_warptile", wt(WM=32, WN=64, WNITER=2, BK=8, MINBLOCKS=2, APAD=8), None),
    ("wt_bk16_mb2", "matmul_warptile", wt(BK=16, MINBLOCKS=2), None),
    ("wt_w32x64_bk8_mb2_again", "matmul_warptile", wt(WM=32, WN=64, WNITER=2, BK=8, MINBLOCKS=2), None),
    # run 3: around run 2's winner, 4 warps of 64x64 (THREADS=128, BK=8): 49.5 TFLOP/s
    ("wt_128t_bk8_mb2", "matmul_warptile", wt(THREADS=128, WM=64, WN=64, WNITER=2, BK=8, MINBLOCKS=2), None),
    ("wt_128t_bk8_wniter4", "matmul_warptile", wt(THREADS=128, WM=64, WN=64, WNITER=4, BK=8, MINBLOCKS=1), None),
    ("wt_128t_bk8_tm8", "matmul_warptile", wt(THREADS=128, WM=64, WN=64, WNITER=2, TM=8, BK=8, MINBLOCKS=1), None),
    ("wt_128t_bk16_mb2", "matmul_warptile", wt(THREADS=128, WM=64, WN=64, WNITER=2, BK=16, MINBLOCKS=2), None),
    ("wt_128t_bk4", "matmul_warptile", wt(THREADS=128, WM=64, WN=64, WNITER=2, BK=4, MINBLOCKS=1), None),
    ("wt_64t_64x128_bk8", "matmul_warptile", wt(BM=64, THREADS=64, WM=64, WN=64, WNITER=2, BK=8, MINBLOCKS=1), None),
    ("wt_256t_128x256_bk8", "matmul_warptile", wt(BN=256, THREADS=256, WM=64, WN=64, WNITER=2, BK=8, MINBLOCKS=1), None),
    ("wt_128t_bk8_pad8", "matmul_warptile", wt(THREADS=128, WM=64, WN=64, WNITER=2, BK=8, APAD=8, MINBLOCKS=1), None),
    ("wt_default_again", "matmul_warptile", {}, None),
]

CHECK_SIZES = [(1, 1, 1), (127, 129, 131), (257, 100, 513), (512, 256, 384), (4099, 4099, 4099)]
CONST_SIZES = [(1, 1, 1), (127, 100, 131), (257, 128, 128), (300, 16384, 1)]

_modules: dict = {}


def module(defines):
    key = tuple(sorted(defines.items()))
    if key not in _modules:
        opts = ("-std=c++17",) + tuple(f"-D{k}={v}" for k, v in key)
        src = open(SOURCE).read()
        _modules[key] = cp.RawModule(code=src, options=opts)
    return _modules[key]


def launch(fn, kernel, d, A, B, C, M, N, K):
    grid, block = geometry(kernel, d, M, N, K)
    if kernel.startswith("matmul_constant"):
        fn(grid, block, (A, C, np.int32(M), np.int32(N), np.int32(K)))
    else:
        fn(grid, block, (A, B, C, np.int32(M), np.int32(N), np.int32(K)))


def rand(rng, shape):
    return cp.asarray(rng.standard_normal(shape, dtype=np.float32))


def check(mod, kernel, d, sizes, rng):
    fn = mod.get_function(kernel)
    errs = []
    for M, N, K in sizes:
        A, B = rand(rng, (M, K)), rand(rng, (K, N))
        if kernel.startswith("matmul_constant"):
            ptr = mod.get_global("B_const")
            ptr.copy_from_device(B.data, B.nbytes)
        C = cp.full((M, N), cp.nan, dtype=cp.float32)
        launch(fn, kernel, d, A, B, C, M, N, K)
        cp.cuda.runtime.deviceSynchronize()
        ref = A.astype(cp.float64) @ B.astype(cp.float64)
        if bool(cp.isnan(C).any()):
            errs.append((M, N, K, float("nan")))
            continue
        rel = float(cp.linalg.norm(C.astype(cp.float64) - ref) / cp.linalg.norm(ref))
        errs.append((M, N, K, rel))
    ok = all(e == e and e < 1e-4 for *_, e in errs)
    return ok, errs


def time_fn(f, reps, warmup=3):
    for _ in range(warmup):
        f()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    ts = []
    for _ in range(reps):
        start.record()
        f()
        end.record()
        end.synchronize()
        ts.append(cp.cuda.get_elapsed_time(start, end))
    return float(np.median(ts)), ts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", nargs="*", help="names to run (default: all)")
    ap.add_argument("--sizes", nargs="*", type=int, default=[4096, 8192])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--no-ladder", action="store_true")
    ap.add_argument("--extra", nargs="*", default=[],
                    help="extra warptile configs as name:K=V,K=V (WT_ prefix added)")
    args = ap.parse_args()

    out_dir = os.environ.get("OUT", ".")
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    print("device:", props["name"].decode(), "SMs:", props["multiProcessorCount"], flush=True)

    configs = ([] if args.no_ladder else LADDER) + WARPTILE
    for spec in args.extra:
        name, kv = spec.split(":", 1)
        d = {f"WT_{k}": int(v) for k, v in (p.split("=") for p in kv.split(","))}
        configs.append((name, "matmul_warptile", d, None))
    if args.configs:
        configs = [c for c in configs if c[0] in args.configs]

    rng = np.random.default_rng(1234)
    results = []
    # Inputs for timing (random, not zeros), one set per size.
    timing_inputs = {}
    cublas = {}
    for n in args.sizes:
        A, B = rand(rng, (n, n)), rand(rng, (n, n))
        C = cp.empty((n, n), cp.float32)
        timing_inputs[n] = (A, B, C)
        ms, _ = time_fn(lambda: cp.matmul(A, B, out=C), args.reps)
        cublas[n] = ms
        tf = 2 * n**3 / ms / 1e9
        print(f"cuBLAS (cupy.matmul fp32) N={n}: {ms:.3f} ms {tf:.1f} TFLOP/s", flush=True)
        results.append(dict(name="cublas", kernel="cupy.matmul", defines={}, N=n, ms=ms, tflops=tf,
                            pct=100.0, correct=True))

    for name, kernel, d, tsizes in configs:
        t0 = time.time()
        try:
            mod = module(d)
            fn = mod.get_function(kernel)
        except Exception as exc:  # compile error: report and go on
            print(f"{name}: COMPILE FAILED {exc}", flush=True)
            results.append(dict(name=name, kernel=kernel, defines=d, error=str(exc)[:2000]))
            continue
        sizes = CONST_SIZES if kernel.startswith("matmul_constant") else CHECK_SIZES
        if kernel in ("matmul_naive", "matmul_coalesced", "matmul_shared"):
            sizes = sizes[:-1] + [(1031, 1029, 1027)]  # 4099^3 is slow for these
        try:
            ok, errs = check(mod, kernel, d, sizes, rng)
        except Exception as exc:  # e.g. a launch the geometry does not fit: report, go on
            print(f"{name}: LAUNCH FAILED {exc}", flush=True)
            results.append(dict(name=name, kernel=kernel, defines=d, error=str(exc)[:2000]))
            continue
        print(f"{name}: check {'OK' if ok else 'FAILED'} " +
              " ".join(f"{M}x{N}x{K}:{e:.1e}" for M, N, K, e in errs), flush=True)
        regs = fn.num_regs
        spills = fn.local_size_bytes
        smem = fn.shared_size_bytes
        for n in (args.sizes if tsizes is None else [s for s in tsizes if s in args.sizes]):
            A, B, C = timing_inputs[n]
            C.fill(cp.nan)
            launch(fn, kernel, d, A, B, C, n, n, n)
            cp.cuda.runtime.deviceSynchronize()
            # the timed output must be right too (fast path at these sizes)
            ref = cp.matmul(A.astype(cp.float64), B.astype(cp.float64)) if n <= 8192 else None
            rel = float(cp.linalg.norm(C.astype(cp.float64) - ref) / cp.linalg.norm(ref))
            del ref
            reps = args.reps if kernel not in ("matmul_naive",) else 5
            ms, ts = time_fn(lambda: launch(fn, kernel, d, A, B, C, n, n, n), reps)
            tf = 2 * n**3 / ms / 1e9
            pct = 100 * cublas[n] / ms
            good = ok and rel == rel and rel < 1e-4
            print(f"  {name} N={n}: {ms:.3f} ms {tf:.2f} TFLOP/s {pct:.1f}% of cuBLAS  rel={rel:.1e}"
                  f" regs={regs} local={spills} smem={smem}", flush=True)
            results.append(dict(name=name, kernel=kernel, defines=d, N=n, ms=ms, times=ts, tflops=tf,
                                pct=pct, correct=good, rel_timed=rel, checks=errs, regs=regs,
                                local_bytes=spills, smem=smem))
        if not any(r.get("name") == name for r in results):
            results.append(dict(name=name, kernel=kernel, defines=d, correct=ok, checks=errs,
                                regs=regs, local_bytes=spills, smem=smem))
        print(f"  ({time.time() - t0:.1f} s)", flush=True)

    # cuBLAS again at the end: drift (clocks, heat) shows up here
    for n in args.sizes:
        A, B, C = timing_inputs[n]
        ms, _ = time_fn(lambda: cp.matmul(A, B, out=C), args.reps)
        print(f"cuBLAS again N={n}: {ms:.3f} ms {2 * n**3 / ms / 1e9:.1f} TFLOP/s", flush=True)
        results.append(dict(name="cublas_end", kernel="cupy.matmul", defines={}, N=n, ms=ms,
                            tflops=2 * n**3 / ms / 1e9, pct=100 * cublas[n] / ms, correct=True))

    with open(os.path.join(out_dir, "tune_matmul_cuda.json"), "w") as f:
        json.dump(dict(device=props["name"].decode(), results=results), f, indent=1)

    print("\n%-20s %-26s %5s %8s %8s %7s %s" % ("name", "kernel", "N", "TFLOP/s", "%cuBLAS", "correct", "defines"))
    for r in results:
        if "tflops" in r:
            print("%-20s %-26s %5d %8.2f %8.1f %7s %s" % (r["name"], r["kernel"], r["N"], r["tflops"], r["pct"],
                                                       r["correct"], r["defines"]))
        else:
            print("%-20s %-26s %5s %8s %8s %7s %s" % (r["name"], r["kernel"], "-", "-", "-",
                                                   r.get("correct", "ERR"), r["defines"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
