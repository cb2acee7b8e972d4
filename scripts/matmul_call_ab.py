"""Issue 31: chapter 1's public call on CuPy arrays in and out, beside cuBLAS and the kernel
alone, at N = 4096, N = 8192 and the thin-B case (8192x128x128), in one process. Every time is
CUDA events around one call, the median of --repeat after a warm-up (`gpulab.timing.measure`):

  public ms       gpulab.matmul.matmul(cA, cB, variant, backend): CuPy in, a CuPy C out
  kernel ms       the variant's launch alone on numba views of the same arrays, C kept
  cuBLAS ms       cp.matmul(cA, cB, out=cC) (FP32; CuPy leaves TF32 off unless CUPY_TF32=1)
  cuBLAS new ms   cA @ cB: cuBLAS with its result allocated per call, as the public call's is

For an A/B of two trees, run it once per tree (PYTHONPATH=tree) in turns and compare the files.

    python scripts/matmul_call_ab.py --variants warptile:cuda-c warptile:numba --repeat 20 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

import gpulab.matmul as mm  # before numba: gpulab picks the GPU or the simulator
from gpulab.benchmark import utc_now, versions
from gpulab.device import info
from gpulab.timing import measure

SIZES = {"N=4096": (4096, 4096, 4096), "N=8192": (8192, 8192, 8192), "8192x128x128 (thin B)": (8192, 128, 128)}


def main() -> None:
    import cupy as cp
    from numba import cuda

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", nargs="+", default=["warptile:cuda-c", "warptile:numba"], help="VARIANT:BACKEND")
    ap.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--tag", default="")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    rng = np.random.default_rng(1)
    rows = []
    for label in a.sizes:
        M, K, N = SIZES[label]
        cA = cp.asarray(rng.standard_normal((M, K), dtype=np.float32))
        cB = cp.asarray(rng.standard_normal((K, N), dtype=np.float32))
        cC = cp.empty((M, N), cp.float32)
        blas = measure(lambda: cp.matmul(cA, cB, out=cC), warmup=3, repeat=a.repeat).median_ms
        blas_new = measure(lambda: cA @ cB, warmup=3, repeat=a.repeat).median_ms
        ref = cp.asnumpy(cA.astype(cp.float64) @ cB.astype(cp.float64))  # (a float64 block: no C of the calls reuses it)
        for spec in a.variants:
            name, backend = spec.split(":")
            v = mm.REGISTRY.get(name, backend)
            got = mm.matmul(cA, cB, variant=name, backend=backend)
            err = float(np.max(np.abs(cp.asnumpy(got) - ref)) / max(float(np.max(np.abs(ref))), 1e-30))
            public = measure(lambda: mm.matmul(cA, cB, variant=name, backend=backend), warmup=3, repeat=a.repeat)
            dA, dB, dC = cuda.as_cuda_array(cA), cuda.as_cuda_array(cB), cuda.as_cuda_array(cC)
            kernel = measure(v.run(dA, dB, dC, None, v.launch_params()), warmup=3, repeat=a.repeat)
            row = {"tag": a.tag, "size": label, "variant": name, "backend": backend,
                   "public ms": round(public.median_ms, 4), "kernel ms": round(kernel.median_ms, 4),
                   "cuBLAS ms": round(blas, 4), "cuBLAS new ms": round(blas_new, 4),
                   "public / cuBLAS new": round(blas_new / public.median_ms, 4),
                   "kernel / cuBLAS": round(blas / kernel.median_ms, 4),
                   "max rel error": err, "public samples ms": public.samples_ms}
            rows.append(row)
            print(f"{a.tag:6} {label:22} {name}:{backend:7} public {row['public ms']:8.3f}  kernel {row['kernel ms']:8.3f}"
                  f"  cuBLAS {blas:8.3f} (new C {blas_new:8.3f})  public/cuBLAS-new {row['public / cuBLAS new']:.3f}"
                  f"  kernel/cuBLAS {row['kernel / cuBLAS']:.3f}  err {err:.1e}", flush=True)
    if a.json:
        a.json.write_text(json.dumps({"device": info().name, "versions": versions(), "date": utc_now(),
                                      "script": "python scripts/matmul_call_ab.py " + " ".join(sys.argv[1:]),
                                      "CUPY_TF32": os.environ.get("CUPY_TF32", ""), "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
