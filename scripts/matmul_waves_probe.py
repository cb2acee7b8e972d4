"""Issue 31: is warptile's gap to cuBLAS the last wave? Times warptile (CUDA C) and cuBLAS FP32 at
shapes whose 128x128 tile count fills a whole number of waves (2 blocks per SM) and at shapes that
leave the last wave part-empty, same K and N; prints TFLOP/s and each shape's waves.

    python scripts/matmul_waves_probe.py [--variants warptile streamk] [--shapes 8192x8192x8192 ...] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

import gpulab.matmul  # noqa: F401
from gpulab.benchmark import utc_now, versions
from gpulab.checking import float32_tolerance, poisoned, relative_error
from gpulab.device import info
from gpulab.matmul.variants import REGISTRY
from gpulab.timing import measure

SHAPES = [(7936, 8192, 8192), (8192, 8192, 8192), (8448, 8192, 8192), (4096, 4096, 4096), (4224, 4096, 4096),
          (8192, 128, 128)]


def main() -> None:
    os.environ.pop("CUPY_TF32", None)
    import cupy as cp
    from numba import cuda

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", nargs="+", default=["warptile"],
                    help="variants, or LABEL=VARIANT:K=V,K=V (the variant with parameters replaced)")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--shapes", nargs="+", help="MxKxN shapes (default: the table above)")
    ap.add_argument("--json")
    a = ap.parse_args()
    slots = 2 * info().sm_count
    rng = np.random.default_rng()
    rows = []
    labels = [n.partition("=")[0] for n in a.variants]
    shapes = [tuple(int(x) for x in s.split("x")) for s in a.shapes] if a.shapes else SHAPES
    for M, K, N in shapes:
        A = rng.standard_normal((M, K), dtype=np.float32)
        B = rng.standard_normal((K, N), dtype=np.float32)
        cA, cB = cp.asarray(A), cp.asarray(B)
        ref = cp.asnumpy(cA.astype(cp.float64) @ cB.astype(cp.float64))
        cC = cp.empty((M, N), cp.float32)
        tiles = -(-M // 128) * -(-N // 128)
        flop = 2.0 * M * N * K
        t = measure(lambda: cp.matmul(cA, cB, out=cC), warmup=3, repeat=a.repeat)
        row = {"M": M, "K": K, "N": N, "tiles": tiles, "waves": tiles / slots, "cublas_ms": t.median_ms,
               "cublas_tflops": flop / t.median_ms / 1e9}
        for name in a.variants:  # a variant, or LABEL=VARIANT:K=V,K=V (its parameters replaced)
            label, _, spec = name.partition("=")
            vname, _, kv = (spec or label).partition(":")
            v = REGISTRY.get(vname, "cuda-c")
            over = {k: int(x) for k, x in (p.split("=") for p in kv.split(","))} if kv else {}
            dC = cuda.to_device(poisoned((M, N), np.float32))
            launch = v.run(cA, cB, dC, B, v.launch_params(over))
            launch()
            cuda.synchronize()
            err = relative_error(dC.copy_to_host(), ref)
            t = measure(launch, warmup=3, repeat=a.repeat)
            row[f"{label}_ms"] = t.median_ms
            row[f"{label}_tflops"] = flop / t.median_ms / 1e9
            row[f"{label}_vs_cublas"] = row["cublas_ms"] / t.median_ms
            row[f"{label}_ok"] = bool(err <= float32_tolerance(K))
        rows.append(row)
        print(f"{M}x{K}x{N} waves {row['waves']:6.2f} cuBLAS {row['cublas_tflops']:6.2f} TF/s  " +
              "  ".join(f"{n} {row[n + '_tflops']:6.2f} TF/s {100 * row[n + '_vs_cublas']:5.1f}% "
                        f"{'ok' if row[n + '_ok'] else 'WRONG'}" for n in labels), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": info().name, "versions": versions(), "date": utc_now(), "slots": slots,
                       "script": "python scripts/matmul_waves_probe.py " + " ".join(sys.argv[1:]), "rows": rows},
                      f, indent=1)


if __name__ == "__main__":
    main()
