"""Experiment (issue 30): onesweep under sets of compile-time parameters, against the registered
build, with CUB's sort alone in the same run. Needs a GPU:

    python3 scripts/radix_params_ab.py --backend cuda-c --sets "" EARLY_COUNTS=1 \
        "EARLY_COUNTS=1,ITEMS=18" --rounds 5 --json FILE

A set is `KEY=VALUE,...` over the registry's parameters (`PAIRS_` prefixed ones apply to
key-value sorts; "" is the registered build). Cases: 2^28 uniformly random uint32 keys, keys-only
and with uint32 values (as the benchmark gives CUB's SortPairs); 2^24 keys; and 2^28 "skewed"
keys, each byte one of four values, so every pass runs with four digits (the case where lanes of a
warp collide on a digit's counter). Each build's result is checked against numpy's sort (values:
a stable argsort) before it is timed. Every round times every build and CUB once each (CUDA
events, median of --repeat after a warm-up), in an order rotated each round; the table has the
median of the round medians and its ratio to CUB's. CUDA C builds print their ptxas report.
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


def parse(s: str) -> dict:
    return {k: int(v) for k, v in (x.split("=") for x in s.split(",") if x)}


def cases(rng, names):
    def skew():  # each byte one of four values, 0x00, 0x3D, 0x7A, 0xB7
        return (rng.integers(0, 4, (2**28, 4), dtype=np.uint8) * np.uint8(0x3D)).view(np.uint32).ravel()

    out = {"2^28": (lambda: rng.integers(0, 2**32, 2**28, dtype=np.uint64).astype(np.uint32), False),
           "pairs 2^28": (lambda: rng.integers(0, 2**32, 2**28, dtype=np.uint64).astype(np.uint32), True),
           "pairs 2^26": (lambda: rng.integers(0, 2**32, 2**26, dtype=np.uint64).astype(np.uint32), True),
           "pairs 2^24": (lambda: rng.integers(0, 2**32, 2**24, dtype=np.uint64).astype(np.uint32), True),
           "2^24": (lambda: rng.integers(0, 2**32, 2**24, dtype=np.uint64).astype(np.uint32), False),
           "skew 2^28": (skew, False)}
    return [(k, *out[k]) for k in names]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="cuda-c", choices=("cuda-c", "numba"))
    ap.add_argument("--sets", nargs="+", default=["", "EARLY_COUNTS=1"])
    ap.add_argument("--cases", nargs="+", default=["2^28", "pairs 2^28", "2^24", "skew 2^28"])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    from numba import cuda

    from gpulab.radix.variants import REGISTRY

    rng = np.random.default_rng()
    builds = {}
    if a.backend == "cuda-c":
        from gpulab import cudac
        from gpulab.radix import host

        src = cudac.source_text("gpulab.radix", "kernels.cu")
        base = REGISTRY.get("onesweep", "cuda-c").params
        for s in a.sets:
            for pairs in (0, 1):
                shape = {**host.tile_shape({**base, **parse(s)}, bool(pairs)), "PAIRS": pairs}
                rep = cudac.nvrtc_compile(src, "kernels.cu", host.cuda_defines(shape), arch="sm_90", lineinfo=False)
                name = f"{s or 'registered'} {'pairs' if pairs else 'keys'}"
                builds[name] = rep.resources.get("onesweep")
                print(f"ptxas {name:46s} {builds[name]}", flush=True)
    rows = []
    for label, make, pairs in cases(rng, a.cases):
        keys = make()
        n = keys.size
        d = cuda.to_device(keys)
        ref = np.sort(keys)
        vals = cuda.to_device(np.arange(n, dtype=np.uint32)) if pairs else None
        runs = {}
        for s in a.sets:
            p = radix_plan(n, pairs=pairs, variant="onesweep", backend=a.backend, params=parse(s))
            k_out, v_out = p.sort(d, vals)
            ok = np.array_equal(to_host(k_out), ref)
            if pairs:
                ok = ok and bench.check_argsort(keys, to_host(v_out), ref)[0]
            if not ok:
                raise SystemExit(f"{s or 'registered'} {label}: wrong result, not timed")
            runs[s or "registered"] = (lambda p=p: p.sort(d, vals))
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
            print(f"{label:11s} {k:40s} {ms:8.3f} ms  {cub_ms / ms:6.1%} of CUB  rounds {min(per[k]):.3f}-{max(per[k]):.3f}",
                  flush=True)
        del d, vals, runs, cub, ck, cv
    if a.json:
        from gpulab import device

        with open(a.json, "w") as f:
            json.dump({"about": f"scripts/radix_params_ab.py: onesweep ({a.backend}) under sets of compile-time "
                       "parameters, CUB in the same run; median of the round medians",
                       "device": device.info().name, "versions": benchmark.versions(), "date": benchmark.utc_now(),
                       "backend": a.backend, "rounds": a.rounds, "repeat": a.repeat, "ptxas": builds, "rows": rows},
                      f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
