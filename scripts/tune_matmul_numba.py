"""Sweep the tile shapes of chapter 1's numba register/prefetch kernels on a GPU.

Each configuration is checked at an odd size first (NaN-poisoned C, float64 reference), then
timed at N = 8192 with CUDA events next to cuBLAS (CuPy, FP32) measured in the same run.
Prints a table last and writes JSON to $OUT (or ./gpu-results).

    source .gpukit/env.sh && python3 scripts/tune_matmul_numba.py
"""

import json
import os
import sys

import numpy as np

import gpulab  # noqa: F401
from gpulab import compilecheck
from gpulab.checking import float32_tolerance, poisoned, relative_error
from gpulab.matmul import kernels_numba, host
from gpulab.timing import measure

CONFIGS = [
    dict(BM=128, BN=128, BK=8, TM=8, TN=8, PAD=4),
    dict(BM=128, BN=128, BK=16, TM=8, TN=8, PAD=4),
    dict(BM=128, BN=128, BK=8, TM=16, TN=8, PAD=4),
    dict(BM=128, BN=128, BK=8, TM=8, TN=16, PAD=4),
    dict(BM=256, BN=128, BK=8, TM=16, TN=8, PAD=4),
    dict(BM=128, BN=256, BK=8, TM=8, TN=16, PAD=4),
    dict(BM=64, BN=64, BK=8, TM=4, TN=4, PAD=4),
    dict(BM=128, BN=64, BK=8, TM=8, TN=4, PAD=4),
]
N = int(os.environ.get("TUNE_N", 8192))


def main():
    import cupy as cp
    from numba import cuda

    rng = np.random.default_rng()
    out_dir = os.environ.get("OUT", "gpu-results")
    os.makedirs(out_dir, exist_ok=True)
    A = rng.standard_normal((N, N), dtype=np.float32)
    B = rng.standard_normal((N, N), dtype=np.float32)
    dA, dB = cuda.to_device(A), cuda.to_device(B)
    dC = cuda.device_array((N, N), np.float32)
    cA, cB = cp.asarray(A), cp.asarray(B)
    cC = cp.empty((N, N), cp.float32)
    peer = measure(lambda: cp.matmul(cA, cB, out=cC), warmup=3, repeat=10).median_ms
    # odd-size check data
    M2, K2, N2 = 1027, 515, 1029
    A2 = rng.standard_normal((M2, K2), dtype=np.float32)
    B2 = rng.standard_normal((K2, N2), dtype=np.float32)
    ref2 = A2.astype(np.float64) @ B2
    rows = []
    for cfg in CONFIGS:
        for name, factory, prep in (("register", kernels_numba.register_kernel, host.numba_register),
                                    ("prefetch", kernels_numba.prefetch_kernel, host.numba_prefetch),
                                    ("wide", kernels_numba.wide_kernel, host.numba_wide)):
            row = {"kernel": name, **cfg}
            try:
                kern = factory(**cfg)
                d2 = cuda.to_device(poisoned((M2, N2), np.float32))
                prep(cuda.to_device(A2), cuda.to_device(B2), d2, B2, cfg)()
                err = relative_error(d2.copy_to_host(), ref2)
                row["rel_err"] = err
                row["correct"] = err <= float32_tolerance(K2)
                launch = prep(dA, dB, dC, B, cfg)
                ms = measure(launch, warmup=2, repeat=10).median_ms
                row["ms"] = ms
                row["tflops"] = 2.0 * N**3 / (ms * 1e-3) / 1e12
                row["pct_cublas"] = 100 * peer / ms
                try:
                    sig = kernels_numba.SIG
                    ptx, _ = cuda.compile_ptx(kern.py_func, sig, cc=(9, 0))
                    res = compilecheck.link_report(ptx)
                    row["resources"] = next(iter(res.values()))
                except Exception as exc:  # informative only
                    row["resources"] = str(exc)[:200]
            except Exception as exc:
                row["error"] = f"{type(exc).__name__}: {exc}"[:300]
            rows.append(row)
            print(json.dumps(row), flush=True)
    result = {"N": N, "cublas_ms": peer, "cublas_tflops": 2.0 * N**3 / (peer * 1e-3) / 1e12, "rows": rows}
    with open(os.path.join(out_dir, "tune-matmul-numba.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(f"\ncuBLAS N={N}: {peer:.3f} ms = {result['cublas_tflops']:.1f} TFLOP/s")
    print(f"{'kernel':9s} {'BM':>4s} {'BN':>4s} {'BK':>3s} {'TM':>3s} {'TN':>3s} {'regs':>5s} {'TFLOP/s':>8s} {'%cuBLAS':>8s} ok")
    for r in rows:
        regs = r.get("resources", {}).get("registers", "?") if isinstance(r.get("resources"), dict) else "?"
        print(f"{r['kernel']:9s} {r['BM']:4d} {r['BN']:4d} {r['BK']:3d} {r['TM']:3d} {r['TN']:3d} {regs!s:>5s} "
              f"{r.get('tflops', float('nan')):8.2f} {r.get('pct_cublas', float('nan')):8.1f} {r.get('correct', r.get('error', '?'))}")


if __name__ == "__main__":
    sys.exit(main())
