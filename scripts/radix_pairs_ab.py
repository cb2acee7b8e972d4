"""onesweep key-value sorts in CUDA C under several sets of compile-time parameters (for
`VALUE_DIGITS`: each place's digit kept in shared memory instead of each value's destination
in a register, and the key-value tile's blocks per SM, `PAIRS_ONESWEEP_MIN_BLOCKS`), CUB's
SortPairs in the same process; rounds in rotated order, CUDA events, median of 10 after 2
warm-ups. Every build's result is checked (sorted keys, values a stable argsort) before it is
timed, and its ptxas report (registers, spills) is printed.

    python scripts/radix_pairs_ab.py [--log2 28] [--rounds 3] [--json FILE] \
        --sets "" VALUE_DIGITS=1 VALUE_DIGITS=1,PAIRS_ONESWEEP_MIN_BLOCKS=3
"""

from __future__ import annotations

import argparse
import json
import sys


def parse(s: str) -> dict:
    return {k: int(v) for k, v in (x.split("=") for x in s.split(",") if x)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log2", type=int, default=28)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sets", nargs="+", default=["", "VALUE_DIGITS=1", "VALUE_DIGITS=1,PAIRS_ONESWEEP_MIN_BLOCKS=3"])
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    import cupy as cp
    import numpy as np
    from numba import cuda

    import gpulab.radix  # noqa: F401
    from gpulab import benchmark, cudac
    from gpulab.radix import host
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
    runs, builds = {}, {}
    src = cudac.source_text("gpulab.radix", "kernels.cu")
    for s in a.sets:
        params = v.launch_params(parse(s))
        name = s or "default"
        shape = {**host.tile_shape(params, True), "PAIRS": 1}
        rep = cudac.nvrtc_compile(src, "kernels.cu", host.cuda_defines(shape), arch="sm_90", lineinfo=False)
        builds[name] = {"params": shape, "onesweep": rep.resources.get("onesweep") if rep.ok else None}
        plan = v.run(n, True, params)
        ko, vo = plan.sort(d, pos)
        cuda.synchronize()
        ok, why = check_argsort(cp.asarray(keys), cp.asarray(vo), ref, cp)
        ok = ok and bool(cp.array_equal(cp.asarray(ko), ref))
        print(f"{name}: {why}, keys {'ok' if ok else 'WRONG'}; onesweep {builds[name]['onesweep']}", flush=True)
        if not ok:
            return 1
        runs[name] = (lambda plan=plan: plan.sort(d, pos))
    launch, _, _ = cub.sorter(d, pairs=True)
    runs["CUB SortPairs"] = launch
    names = list(runs)
    rows = []
    for r in range(a.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            m = measure(runs[name], warmup=2, repeat=10)
            rows.append({"round": r + 1, "build": name, "ms": m.median_ms})
            print(f"round {r + 1} {name:45} {m.median_ms:.3f} ms", flush=True)
    med = {b: float(np.median([x["ms"] for x in rows if x["build"] == b])) for b in names}
    cubms = med["CUB SortPairs"]
    print("== medians of the rounds")
    for b in names:
        print(f"{b:45} {med[b]:.3f} ms  {cubms / med[b]:.1%} of CUB")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"about": "scripts/radix_pairs_ab.py: onesweep key-value sorts of 2^log2 random uint32 keys "
                       "(positions as values) in CUDA C under each parameter set, CUB SortPairs in the same "
                       "process, rounds in rotated order; CUDA events, median of 10 after 2 warm-ups",
                       "n": n, "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
                       "versions": benchmark.versions(), "date": benchmark.utc_now(), "builds": builds,
                       "rows": rows, "medians_ms": med}, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
