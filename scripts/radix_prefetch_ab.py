"""onesweep key-value sorts in CUDA C with and without prefetching each tile's values
(`PREFETCH_VALUES` = 0 none, 1 into L2, 2 into L1, as the tile starts), CUB's SortPairs
in the same process; rounds in rotated order, CUDA events, median of 10 after 2 warm-ups.
Every build's result is checked (sorted keys, values a stable argsort) before it is timed.

    python scripts/radix_prefetch_ab.py [--log2 28] [--rounds 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log2", type=int, default=28)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--builds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    import cupy as cp
    import numpy as np
    from numba import cuda

    import gpulab.radix  # noqa: F401
    from gpulab.radix import peer as cub
    from gpulab.radix.bench import check_argsort
    from gpulab.radix.variants import REGISTRY
    from gpulab.timing import measure

    n = 1 << a.log2
    keys = np.random.default_rng().integers(0, 2**32, n, dtype=np.uint32)
    d = cuda.to_device(keys)
    pos = cuda.to_device(np.arange(n, dtype=np.uint32))
    ref = cp.sort(cp.asarray(keys))
    v = REGISTRY.get("onesweep", "cuda-c")
    runs = {}
    for pf in a.builds:
        plan = v.run(n, True, v.launch_params({"PREFETCH_VALUES": pf}))
        ko, vo = plan.sort(d, pos)
        cuda.synchronize()
        ok, why = check_argsort(cp.asarray(keys), cp.asarray(vo), ref, cp)
        ok = ok and bool(cp.array_equal(cp.asarray(ko), ref))
        print(f"PREFETCH_VALUES={pf}: {why}, keys {'ok' if ok else 'WRONG'}", flush=True)
        runs[f"PREFETCH_VALUES={pf}"] = (lambda plan=plan: plan.sort(d, pos))
    launch, _, _ = cub.sorter(d, pairs=True)
    runs["CUB SortPairs"] = launch
    names = list(runs)
    rows = []
    for r in range(a.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            m = measure(runs[name], warmup=2, repeat=10)
            rows.append({"round": r + 1, "build": name, "ms": m.median_ms})
            print(f"round {r + 1} {name:20} {m.median_ms:.3f} ms", flush=True)
    med = {b: float(np.median([x["ms"] for x in rows if x["build"] == b])) for b in names}
    cubms = med["CUB SortPairs"]
    print("== medians of the rounds")
    for b in names:
        print(f"{b:20} {med[b]:.3f} ms  {cubms / med[b]:.1%} of CUB")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"n": n, "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "rows": rows,
                       "medians_ms": med, "script": "scripts/radix_prefetch_ab.py"}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
