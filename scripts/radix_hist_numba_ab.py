"""A/B of numba's one-sweep histogram kernel (issue 30: 1.17-1.53 ms for 2^28 keys against CUDA
C's 0.53-0.62 ms). The kernel before issue 30 (`before()`: each key loaded behind its bounds
check, then its atomics) beside the library's `onesweep_hist`, which now does what the CUDA C
kernel does: a full tile's ITEMS keys loaded first (no bounds check), then the atomics, its pass
loop of compile-time length (PASSES) so that it unrolls. The CUDA C kernel is timed in the same
run. docs/benchmarks/ab-runs/radix-hist-numba-h100.json was measured when the loads-first kernel
was still this script's candidate; its rows are relabelled "numba before" and "numba now (loads
first)" (its `relabelled` field says so). Each build's counts are checked against
numpy's before it is timed; CUDA events, median of --repeat after a warm-up. Needs a GPU:

    python scripts/radix_hist_numba_ab.py --log2n 28 24
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from gpulab import device  # before numba: gpulab picks the GPU or the simulator
from numba import cuda, int32  # noqa: E402
from gpulab.benchmark import utc_now, versions
from gpulab.radix import host
from gpulab.radix import kernels_numba as kn
from gpulab.radix.variants import REGISTRY
from gpulab.timing import measure


def before(BLOCK: int, ITEMS: int, BITS: int):
    """numba's `onesweep_hist` before issue 30 (the library now has the loads-first kernel that
    this script measured as the candidate): each key loaded behind its bounds check and counted,
    in a pass loop of run-time length, before the next key is loaded."""
    R = 1 << BITS
    MASK = R - 1
    TILE = BLOCK * ITEMS
    PR = -(-32 // BITS) * R

    @cuda.jit
    def hist_interleaved(keys, hist, n, passes):
        h = cuda.shared.array(PR, int32)
        tid = cuda.threadIdx.x
        for j in range(tid, PR, BLOCK):
            h[j] = 0
        cuda.syncthreads()
        base = cuda.blockIdx.x * TILE
        while base < n:
            for it in range(ITEMS):
                i = base + it * BLOCK + tid
                if i < n:
                    k = keys[i]
                    for p in range(passes):
                        cuda.atomic.add(h, p * R + int32((k >> (p * BITS)) & MASK), 1)
            base += cuda.gridDim.x * TILE
        cuda.syncthreads()
        for j in range(tid, passes * R, BLOCK):
            if h[j] != 0:
                cuda.atomic.add(hist, j, h[j])

    return hist_interleaved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log2n", nargs="+", type=int, default=[28, 24])
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--json")
    a = ap.parse_args()
    p = REGISTRY.get("onesweep", "numba").params
    B, ITEMS, BITS = p["BLOCK"], p["ITEMS"], p["BITS"]
    passes = -(-32 // BITS)
    builds = {"numba before": before(B, ITEMS, BITS), "numba now (loads first)": kn.onesweep_hist_kernel(B, ITEMS, BITS)[0]}
    try:
        from gpulab.radix.host import KERNELS
        K = KERNELS.provider("cuda-c", host.cuda_defines({**host.tile_shape(p, False), "PAIRS": 0}))
        cuda_c = K.kernel("onesweep_hist")
    except Exception as e:  # noqa: BLE001
        print("CUDA C build skipped:", e)
        cuda_c = None
    rows = []
    for lg in a.log2n:
        n = 1 << lg
        keys = np.random.default_rng(lg).integers(0, 2**32, n, dtype=np.uint32)
        want = np.concatenate([np.bincount((keys >> (q * BITS)) & ((1 << BITS) - 1), minlength=1 << BITS)
                               for q in range(passes)]).astype(np.int32)
        dk = cuda.to_device(keys)
        hist = cuda.device_array(passes << BITS, np.int32)
        nb = -(-n // (B * ITEMS))
        grid = min(nb, host.HIST_GRID)
        calls = {name: (lambda f=f: f[grid, B](dk, hist, np.int32(n), np.int32(passes))) for name, f in builds.items()}
        if cuda_c is not None:
            calls["CUDA C"] = lambda: K("onesweep_hist", (grid,), (B,), dk, hist, np.int32(n), np.int32(passes))
        for name, f in calls.items():
            hist.copy_to_device(np.full(passes << BITS, 0, np.int32))
            f()
            cuda.synchronize()
            ok = bool(np.array_equal(hist.copy_to_host(), want))
            t = measure(f, warmup=1, repeat=a.repeat)
            rows.append({"log2n": lg, "kernel": name, "ms": t.median_ms, "clock": t.clock, "counts_ok": ok,
                         "GB_per_s": 4 * n / (t.median_ms * 1e-3) / 1e9})
    print(device.info().name)
    for r in rows:
        print(f"2^{r['log2n']} {r['kernel']:20} {r['ms']:8.3f} ms {r['GB_per_s']:7.0f} GB/s counts_ok={r['counts_ok']}")
    if a.json:
        Path(a.json).write_text(json.dumps({"device": device.info().name, "date": utc_now(), "versions": versions(),
                                            "params": p, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
