"""A/B of the subset search's variants through their plans (issue 31: C(200,5) at >= 3e11
subsets/s): each variant's `launch()` (the scan, the final argmin, the 16-byte answer) timed
with CUDA events after a warm-up, median of --repeat, every answer checked against
`incremental` on the same backend. --chunks also times incremental_lanes at other CHUNKs.

    python scripts/subset_lanes_ab.py --sizes 200:5 100:6 50:5 --json ab.json
"""

from __future__ import annotations

import argparse
import json
import numpy as np
from numba import cuda

from gpulab import device
from gpulab.benchmark import utc_now, versions
from gpulab.subset import host
from gpulab.timing import measure
from gpulab.subset.combinatorics import choose
from gpulab.subset.reference import correlation, squared_packed, synthetic_returns
from gpulab.subset.variants import REGISTRY


def timed(launch, repeat):
    out = launch()
    if device.on_simulator():  # a dry run of the script: no events there
        return 0.0, out
    t = measure(launch, warmup=1, repeat=repeat)
    return t.median_ms, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", nargs="+", default=["200:5", "100:6", "50:5"])
    ap.add_argument("--backends", nargs="+", default=["cuda-c", "numba"])
    ap.add_argument("--variants", nargs="+", default=["incremental", "incremental_warp", "incremental_lanes"])
    ap.add_argument("--chunks", nargs="*", type=int, default=[])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = []
    for size in a.sizes:
        n, k = map(int, size.split(":"))
        C = correlation(synthetic_returns(500, n, factors=3, strength=0.5, seed=n * 100 + k))
        dQ = cuda.to_device(squared_packed(C))
        for backend in a.backends:
            want = None
            cases = [(v, None) for v in a.variants] + [("incremental_lanes", c) for c in a.chunks]
            for name, chunk in cases:
                v = REGISTRY.get(name, backend)
                p = v.launch_params(dict(CHUNK=chunk) if chunk else None)
                launch = host.prepare(v.policy, backend, dQ, n, k, p)
                ms, (d, r) = timed(launch, a.repeat)
                if want is None:
                    want = (d, r)
                row = {"size": f"C({n},{k})", "backend": backend, "variant": name, "chunk": p.get("CHUNK"),
                       "ms": ms, "subsets_per_s": choose(n, k) / (ms * 1e-3) if ms else None, "rank": r, "same": (d, r) == want}
                rows.append(row)
                print(f"{row['size']:9s} {backend:7s} {name:18s} chunk {row['chunk']!s:7s} {ms:9.3f} ms "
                      f"{row['subsets_per_s'] or 0:.3g}/s same={row['same']}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"date": utc_now(), "device": device.info().name, "versions": versions(),
                       "script": "python scripts/subset_lanes_ab.py " + " ".join(__import__("sys").argv[1:]),
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
