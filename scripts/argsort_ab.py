"""An argsort's GPU time through a onesweep plan (`gpulab.radix.plan(..., pairs=True)`,
`plan.sort(keys, iota=True)`): random uint32 keys of all 32 bits (the queued first pass), and
Euler's pairing keys (ids below 2^24 with `max_key` given, as `EulerPlan.sort` sorts them), per
backend; CUDA events around each sort after warm-ups, median of --repeat. Run it in two trees to
compare them (the tree on `sys.path` is the one timed); one line per case, and --json.

    python scripts/argsort_ab.py [--sizes 16777216 41943040] [--repeat 20] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[1 << 24, 41943040])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--backends", nargs="*", default=["cuda-c", "numba"])
    ap.add_argument("--json")
    a = ap.parse_args()

    import numpy as np

    import gpulab.radix as rx  # (gpulab before numba: it picks the device)
    from numba import cuda

    rng = np.random.default_rng()
    rows = []
    for backend in a.backends:
        for n in a.sizes:
            plan = rx.plan(n, pairs=True, variant="onesweep", backend=backend)
            cases = {"32-bit keys": (rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32), None),
                     "ids < 2^24, max_key": (rng.integers(0, 1 << 24, n, dtype=np.uint32), (1 << 24) - 1)}
            for label, (keys, mk) in cases.items():
                d = cuda.to_device(keys)
                for _ in range(3):
                    plan.sort(d, iota=True, max_key=mk)
                cuda.synchronize()
                ms = []
                for _ in range(a.repeat):
                    e0, e1 = cuda.event(), cuda.event()
                    e0.record()
                    plan.sort(d, iota=True, max_key=mk)
                    e1.record()
                    e1.synchronize()
                    ms.append(e0.elapsed_time(e1))
                _, dv = plan.sort(d, iota=True, max_key=mk)
                ok = bool(np.array_equal(dv.copy_to_host()[:n], np.argsort(keys, kind="stable")))
                r = dict(backend=backend, n=n, keys=label, median_ms=statistics.median(ms), ms=ms, ok=ok)
                rows.append(r)
                print(f"argsort {backend:7} n={n:>9} {label:20} {r['median_ms']:.4f} ms  check {'ok' if ok else 'WRONG'}",
                      flush=True)
            del plan
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
