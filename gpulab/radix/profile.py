"""Where a chapter-4 sort spends its time, stage by stage, on the GPU (CUDA events).

For each configuration of the register/warp-ranked sort (backend, BITS, ITEMS, BALLOT):
the whole keys-only sort of 2^28 random uint32 keys, and the stages of one pass (upsweep,
scan of the count table, downsweep) and the max reduction, each timed alone.

    source .gpukit/env.sh && python3 -m gpulab.radix.profile --out $OUT

(Run as scripts/radix_profile.py in the recorded runs 2 and 3; moved into the package since.)
"""

import argparse
import json
import os

import numpy as np

import gpulab  # noqa: F401
from gpulab.launch import grid_1d  # noqa: F401
from gpulab.radix import bench, host
from gpulab.radix.policy import REDUCE_THEN_SCAN
from gpulab.timing import measure

CONFIGS = [
    ("cuda-c", dict(BITS=8, ITEMS=16, BALLOT=0)),
    ("cuda-c", dict(BITS=8, ITEMS=16, BALLOT=1)),
    ("cuda-c", dict(BITS=4, ITEMS=16, BALLOT=1)),
    ("numba", dict(BITS=8, ITEMS=16, BALLOT=0)),
    # last: its first build stopped with CUDA_ERROR_ILLEGAL_INSTRUCTION (run 2); now branch-free
    ("numba", dict(BITS=8, ITEMS=16, BALLOT=1)),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--log2n", type=int, default=28)
    args = ap.parse_args()
    from numba import cuda

    n = 2**args.log2n
    keys = np.random.default_rng().integers(0, 2**32, n, dtype=np.uint32)
    d = cuda.to_device(keys)
    ref = np.sort(keys)
    rows = []
    try:
        import cupy as cp

        c = cp.asarray(keys)
        cub = measure(lambda: cp.sort(c), repeat=10).median_ms
        dd = cp.empty_like(c)
        copy = measure(lambda: dd.__setitem__(slice(None), c), repeat=10).median_ms
        print(f"CUB sort {cub:.3f} ms ({n / cub / 1e6:.1f} Gkeys/s); d2d copy {copy:.3f} ms "
              f"({2 * 4 * n / copy / 1e9:.2f} TB/s)")
    except ImportError:
        cub = copy = None
    for backend, extra in CONFIGS:
        p = dict(SCAN_BLOCK=512, BLOCK=256, **extra)
        plan = host.SortPlan(REDUCE_THEN_SCAN, backend, n, False, p)
        out, _ = plan.sort(d)
        ok = bool(np.array_equal(out.copy_to_host(), ref))
        total = measure(lambda: plan.sort(d), repeat=10).median_ms
        K, nb = plan.K, plan.nb
        i32 = np.int32
        up = measure(lambda: K("upsweep", (nb,), (256,), d, plan.counts, i32(n), i32(0), i32(nb)), repeat=10).median_ms
        sc = measure(lambda: plan.scan.run(plan.counts, plan.counts), repeat=10).median_ms
        K("upsweep", (nb,), (256,), d, plan.counts, i32(n), i32(0), i32(nb))
        plan.scan.run(plan.counts, plan.counts)
        dn = measure(lambda: K("downsweep", (nb,), (256,), d, plan.vals[0], plan.keys[0], plan.vals[1], plan.counts,
                               i32(n), i32(0), i32(nb), i32(0)), repeat=10).median_ms
        mx = measure(lambda: plan.max_key(d), repeat=10).median_ms
        row = {"backend": backend, **p, "ok": ok, "sort_ms": total, "Gkeys/s": n / total / 1e6,
               "pct_of_CUB": (100 * cub / total) if cub else None, "max_ms": mx, "upsweep_ms": up, "scan_ms": sc,
               "downsweep_ms": dn, "upsweep_TBps": 4 * n / up / 1e9, "downsweep_TBps": 8 * n / dn / 1e9,
               "model_ms": bench.model_ms(REDUCE_THEN_SCAN, p, n)}
        rows.append(row)
        print(f"{backend:7s} BITS={p['BITS']} ITEMS={p['ITEMS']:2d} BALLOT={p['BALLOT']} ok={ok} sort {total:7.3f} ms "
              f"{row['Gkeys/s']:6.2f} Gkeys/s {row['pct_of_CUB'] or 0:5.1f}% CUB | max {mx:.3f} up {up:.3f} "
              f"({row['upsweep_TBps']:.2f} TB/s) scan {sc:.3f} down {dn:.3f} ({row['downsweep_TBps']:.2f} TB/s)", flush=True)
    json.dump({"n": n, "cub_ms": cub, "copy_ms": copy, "rows": rows}, open(os.path.join(args.out, "radix-profile.json"), "w"),
              indent=1)


if __name__ == "__main__":
    main()
