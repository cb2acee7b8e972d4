"""Issue 31: block tiles for small products. The thin problem (8192x128 times 128x128) gives
warptile's 128x128 tiles 64 blocks for 132 SMs: half the GPU idles, and each block's tile runs
alone on its SM. This times warptile and streamk with smaller block tiles (the same kernels,
other -D shapes / numba parameters), on both backends, at small and thin shapes, beside cuBLAS
(CuPy, FP32, a new C per call, as the benchmark's peer). Each launch is checked against a
float64 product (C poisoned first). Kernel times: CUDA events, median of --repeat after a warm-up.

    python scripts/matmul_small_tiles.py --repeat 20 --json small-tiles.json [--backends cuda-c numba]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

import gpulab.matmul  # noqa: F401  (before numba: gpulab picks the GPU or the simulator)
from gpulab.benchmark import utc_now, versions
from gpulab.checking import poisoned, relative_error
from gpulab.device import info
from gpulab.matmul import host
from gpulab.matmul.variants import REGISTRY
from gpulab.timing import measure

SHAPES = [(8192, 128, 128), (8191, 127, 129), (16384, 128, 128), (8192, 256, 256), (4096, 512, 512),
          (512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096)]
SHAPE_SETS = {"all": SHAPES, "small": SHAPES[:-1]}


def wt(**kw):
    d = dict(WT_BM=128, WT_BN=128, WT_BK=8, WT_WM=64, WT_WN=64, WT_WNITER=2, WT_TM=4, WT_TN=4, WT_MINBLOCKS=1,
             WT_APAD=4)
    d.update({f"WT_{k}": v for k, v in kw.items()})
    d["WT_THREADS"] = 32 * (d["WT_BM"] // d["WT_WM"]) * (d["WT_BN"] // d["WT_WN"])
    return d


CONFIGS = {  # label -> warp-tile shape (THREADS follows)
    "128x128": wt(),
    "64x128": wt(BM=64, WM=32, WN=64),
    "64x64": wt(BM=64, BN=64, WM=32, WN=32),
    "64x64_bk16": wt(BM=64, BN=64, WM=32, WN=32, BK=16),
    "32x128": wt(BM=32, BN=128, WM=32, WN=64),
    "32x64": wt(BM=32, BN=64, WM=32, WN=32),
    "64x128_bk16": wt(BM=64, WM=32, WN=64, BK=16),
    "64x64_bk32": wt(BM=64, BN=64, WM=32, WN=32, BK=32),
    "32x64_bk16": wt(BM=32, BN=64, WM=32, WN=32, BK=16),
    "32x64_bk32": wt(BM=32, BN=64, WM=32, WN=32, BK=32),
    "32x128_bk16": wt(BM=32, BN=128, WM=32, WN=64, BK=16),
    "32x128_bk32": wt(BM=32, BN=128, WM=32, WN=64, BK=32),
}


def as_cpasync(d: dict, stages: int) -> dict:
    """A warp-tile shape as cpasync's defines (CA_ for WT_), with STAGES and no rasterization."""
    return {**{"CA_" + k[3:]: v for k, v in d.items()}, "CA_STAGES": stages, "CA_GROUP": 0}


def main() -> None:
    import cupy as cp
    from numba import cuda

    os.environ.pop("CUPY_TF32", None)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--backends", nargs="*", default=["cuda-c", "numba"])
    ap.add_argument("--variants", nargs="*", default=["warptile", "streamk"])
    ap.add_argument("--configs", nargs="*", default=list(CONFIGS))
    ap.add_argument("--shapes", choices=list(SHAPE_SETS), default="all")
    ap.add_argument("--stages", type=int, nargs="*", default=[3], help="cpasync: pipeline depths")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    rng = np.random.default_rng()
    rows = []
    for M, K, N in SHAPE_SETS[a.shapes]:
        A = rng.standard_normal((M, K), dtype=np.float32)
        B = rng.standard_normal((K, N), dtype=np.float32)
        cA, cB = cp.asarray(A), cp.asarray(B)
        ref = cp.asnumpy(cA.astype(cp.float64) @ cB.astype(cp.float64))
        peer = measure(lambda: cA @ cB, warmup=3, repeat=a.repeat).median_ms
        cC = cp.empty((M, N), cp.float32)
        peer_out = measure(lambda: cp.matmul(cA, cB, out=cC), warmup=3, repeat=a.repeat).median_ms
        dA, dB = cuda.to_device(A), cuda.to_device(B)
        for backend in a.backends:
            for name in a.variants:
                if name == "cpasync" and backend != "cuda-c":
                    continue
                v = REGISTRY.get(name, backend)
                todo = ([(f"{label}_s{st}", as_cpasync(CONFIGS[label], st)) for label in a.configs for st in a.stages]
                        if name == "cpasync" else [(label, CONFIGS[label]) for label in a.configs])
                for label, shape in todo:
                    params = {**v.params, **shape}
                    row = {"shape": f"{M}x{K}x{N}", "backend": backend, "variant": name, "tile": label,
                           "cuBLAS ms": round(peer, 5), "cuBLAS out= ms": round(peer_out, 5)}
                    try:
                        dC = cuda.to_device(poisoned((M, N), np.float32))
                        launch = host.plan(v.policy, backend, M, K, N, params)
                        t = measure(lambda: launch(dA, dB, dC), warmup=3, repeat=a.repeat)
                        row["ms"] = round(t.median_ms, 5)
                        row["vs cuBLAS"] = round(peer / t.median_ms, 3)
                        row["rel error"] = relative_error(dC.copy_to_host(), ref)
                    except Exception as exc:  # noqa: BLE001 (a shape the kernel refuses: say so, go on)
                        row["error"] = f"{type(exc).__name__}: {exc}"[:300]
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    if a.json:
        a.json.write_text(json.dumps({"device": info().name, "versions": versions(), "date": utc_now(),
                                      "script": "python scripts/matmul_small_tiles.py " + " ".join(sys.argv[1:]),
                                      "configs": CONFIGS, "rows": rows}, indent=1) + "\n")
    print(f"\n{'shape':16} {'backend':7} {'variant':9} {'tile':15} {'ms':>9} {'cuBLAS':>8} {'out=':>8} {'÷':>6} err")
    for r in rows:
        if "ms" in r:
            print(f"{r['shape']:16} {r['backend']:7} {r['variant']:9} {r['tile']:15} {r['ms']:9.4f} "
                  f"{r['cuBLAS ms']:8.4f} {r['cuBLAS out= ms']:8.4f} {r['vs cuBLAS']:6.3f} {r['rel error']:.0e}")
        else:
            print(f"{r['shape']:16} {r['backend']:7} {r['variant']:9} {r['tile']:15} {r['error'][:60]}")


if __name__ == "__main__":
    main()
