"""What `least_correlated(C, k)` runs when the caller names nothing, on this GPU, against
`variant="incremental"` in CUDA C: the choice (`default_choice`), the wall-clock time of the
public call on a device C (median of 7 after one warm call) and the answer's rank (equal).

    python scripts/subset_defaults_check.py
"""
import time, statistics, numpy as np
import gpulab.subset as ss
from gpulab.subset.variants import default_choice
from gpulab.subset.reference import correlation, synthetic_returns
from numba import cuda
for n, k in ((200, 5), (100, 6), (50, 5)):
    C = correlation(synthetic_returns(500, n, factors=3, strength=0.5, seed=7))
    dC = cuda.to_device(C)
    rows = []
    for label, kw in (("default", {}), ("incremental", dict(variant="incremental", backend="cuda-c"))):
        ss.least_correlated(dC, k, **kw)
        ts = []
        for _ in range(7):
            t = time.perf_counter(); r = ss.least_correlated(dC, k, **kw); ts.append((time.perf_counter() - t) * 1e3)
        rows.append((label, statistics.median(ts), r.rank))
    print(f"C({n},{k}) default={default_choice(n, k)}", " | ".join(f"{l} {m:.3f} ms rank {r}" for l, m, r in rows), flush=True)
