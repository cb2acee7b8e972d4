"""Issue 31: which of chapter 1's fast variants is fastest for shapes that are not multiples of
the block tile (the kernels' guarded path) and for shapes that are (the fast path), per backend:
each variant's launch on device arrays, CUDA events, the median of --repeat after a warm-up, the
result checked against float64. Prints a table and writes --json (rows: shape, M, K, N, whether
warptile takes its unguarded path, variant, backend, ms, the fastest of the backend at that shape).

    python scripts/matmul_shapes.py --repeat 10 --json docs/benchmarks/matmul-shapes-h200.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

import gpulab.matmul  # noqa: F401  (before numba: gpulab picks the GPU or the simulator)
from gpulab.benchmark import utc_now, versions
from gpulab.checking import poisoned, relative_error
from gpulab.device import info
from gpulab.matmul.variants import REGISTRY, WARP_TILE
from gpulab.timing import measure

SHAPES = [(4096, 4096, 4096), (4099, 4099, 4099), (4000, 4000, 4000), (4097, 4096, 4096), (4096, 4096, 4100),
          (3001, 2999, 5003), (8191, 8191, 8191), (8192, 128, 128), (8191, 127, 129)]
VARIANTS = {"cuda-c": ["warptile", "streamk", "cpasync", "prefetch", "vec4"], "numba": ["warptile", "streamk", "wide", "prefetch"]}


def fast_path(M: int, K: int, N: int) -> bool:
    """warptile's unguarded path: M, N multiples of the block tile, K of its depth (pointers of
    a new array are 16-byte aligned)."""
    return M % WARP_TILE["WT_BM"] == 0 and N % WARP_TILE["WT_BN"] == 0 and K % WARP_TILE["WT_BK"] == 0


def main() -> None:
    from numba import cuda

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    rng = np.random.default_rng(7)
    rows = []
    for M, K, N in SHAPES:
        A = rng.standard_normal((M, K), dtype=np.float32)
        B = rng.standard_normal((K, N), dtype=np.float32)
        ref = A.astype(np.float64) @ B.astype(np.float64)
        dA, dB = cuda.to_device(A), cuda.to_device(B)
        here = []
        for backend, names in VARIANTS.items():
            for name in names:
                v = REGISTRY.get(name, backend)
                if v.unavailable_reason():
                    continue
                dC = cuda.to_device(poisoned((M, N), np.float32))
                launch = v.run(dA, dB, dC, B, v.launch_params())
                t = measure(launch, warmup=2, repeat=a.repeat)
                err = relative_error(dC.copy_to_host(), ref)
                here.append({"shape": f"{M}x{K}x{N}", "M": M, "K": K, "N": N, "fast path": fast_path(M, K, N),
                             "variant": name, "backend": backend, "ms": round(t.median_ms, 4), "rel error": err})
        for backend in VARIANTS:
            mine = [r for r in here if r["backend"] == backend]
            best = min(mine, key=lambda r: r["ms"])
            for r in mine:
                r["fastest"] = best["variant"]
                r["vs fastest"] = round(r["ms"] / best["ms"], 3)
        rows += here
        for r in here:
            print(f"{r['shape']:16} fast={r['fast path']!s:5} {r['backend']:7} {r['variant']:9} {r['ms']:9.3f} ms  "
                  f"x{r['vs fastest']:.3f}  err {r['rel error']:.1e}", flush=True)
    if a.json:
        a.json.write_text(json.dumps({"device": info().name, "versions": versions(), "date": utc_now(),
                                      "script": "python scripts/matmul_shapes.py " + " ".join(sys.argv[1:]),
                                      "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
