"""Experiment (issue 30): onesweep's look-back loading LOOKBACK status words at once (CUDA C), against
the one-word look-back, with CUB's sort alone in the same run. Needs a GPU:

    python3 scripts/radix_lookback_ab.py --lookback 1 2 4 8 --rounds 5 --json FILE

Cases: 2^24 and 2^28 uniformly random uint32 keys, keys-only, and 2^28 keys with uint32 values
(as the benchmark gives CUB's SortPairs). Each build's result is checked against numpy's sort
(values: a stable argsort) before it is timed. Every round times every build and CUB once each
(CUDA events, median of --repeat after a warm-up), in an order rotated each round; the table has
the median of the round medians, and its ratio to CUB's.
"""
from __future__ import annotations

import argparse
import json
import statistics

import numpy as np

import gpulab  # noqa: F401  (device selection first)
from gpulab import benchmark
from gpulab.arrays import to_host
from gpulab.radix import bench, peer, plan as radix_plan
from gpulab.timing import measure


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lookback", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--json")
    a = ap.parse_args()
    from numba import cuda

    rng = np.random.default_rng()
    cases = [("2^24", 2**24, False), ("2^28", 2**28, False), ("pairs 2^28", 2**28, True)]
    rows = []
    for label, n, pairs in cases:
        keys = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
        d = cuda.to_device(keys)
        ref = np.sort(keys)
        vals = cuda.to_device(np.arange(n, dtype=np.uint32)) if pairs else None
        runs = {}
        for lb in a.lookback:
            p = radix_plan(n, pairs=pairs, variant="onesweep", backend="cuda-c", params={"LOOKBACK": lb})
            k_out, v_out = p.sort(d, vals)
            ok = np.array_equal(to_host(k_out), ref)
            if pairs:
                ok = ok and bench.check_argsort(keys, to_host(v_out), ref)[0]
            if not ok:
                raise SystemExit(f"LOOKBACK={lb} {label}: wrong result, not timed")
            runs[f"LOOKBACK={lb}"] = (lambda p=p: p.sort(d, vals))
        cub, ck, cv = peer.sorter(d, pairs=pairs)
        cub()
        if not np.array_equal(to_host(ck), ref):
            raise SystemExit("CUB's result differs from numpy's")
        runs["CUB"] = cub
        names = list(runs)
        per = {k: [] for k in names}
        for r in range(a.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for k in order:
                per[k].append(measure(runs[k], warmup=2, repeat=a.repeat).median_ms)
        cub_ms = statistics.median(per["CUB"])
        for k in names:
            ms = statistics.median(per[k])
            rows.append({"case": label, "build": k, "ms": round(ms, 4), "rounds ms": [round(x, 4) for x in per[k]],
                         "of CUB": round(cub_ms / ms, 4)})
            print(f"{label:11s} {k:11s} {ms:8.3f} ms  {cub_ms / ms:6.1%} of CUB  rounds {min(per[k]):.3f}-{max(per[k]):.3f}",
                  flush=True)
        del d, vals, runs, cub, ck, cv
    if a.json:
        from gpulab import device

        with open(a.json, "w") as f:
            json.dump({"about": "scripts/radix_lookback_ab.py: onesweep CUDA C with LOOKBACK status words loaded at "
                       "once in the look-back, CUB in the same run; median of the round medians",
                       "device": device.info().name, "versions": benchmark.versions(), "date": benchmark.utc_now(),
                       "rounds": a.rounds, "repeat": a.repeat, "rows": rows}, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
