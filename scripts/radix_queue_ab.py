"""Experiment (H200 run 12, docs/benchmarks/radix-runs/run12-queue-ab.log): what queuing onesweep's
first pass before the pass decision saves, in one session, against CUB's sort alone.

Three ways to run the same kernels on 2^28 random keys (keys-only, and keys with uint32 values
for CUDA C):
  queued  -- `SortPlan.sort` as it is: histograms, offsets copied back without waiting, pass 0
             queued, then the host waits, decides and launches the later passes;
  wait    -- the earlier order: histograms, wait for the offsets, decide, then launch every pass;
  given   -- `SortPlan.sort(max_key=...)`: no decision, nothing read back (the sweep's path).
The three and CUB are timed in rounds (order rotated each round), each round a median of 10
after warm-up; the table gives the median over rounds. Each way's output is checked first.
Needs a GPU:  python3 scripts/radix_queue_ab.py [out.json]
"""
import datetime
import json
import sys
from importlib.metadata import version

import numpy as np

import gpulab  # noqa: F401
from numba import cuda
from gpulab.radix import host
from gpulab.radix import peer as cub
from gpulab.radix.variants import REGISTRY
from gpulab.timing import measure

N, ROUNDS = 2**28, 5


def wait_then_launch(plan, d_keys, d_vals):
    """The order before the queued pass: read the offsets back, then launch all the passes."""
    R = 1 << plan.bits
    plan.histograms(d_keys, plan.max_passes)
    starts = host._fetch(plan.hist, plan.stream).reshape(plan.max_passes, R)
    moves = ~np.all((starts == 0) | (starts == plan.n), axis=1)
    ks, vs = d_keys, d_vals if d_vals is not None else plan.vals[1]
    shifts = [p * plan.bits for p in range(plan.max_passes) if moves[p]]
    for run, shift in enumerate(shifts):
        kd, vd = plan.keys[run % 2], plan.vals[run % 2]
        plan.one_pass(shift, ks, vs, kd, vd, run)
        ks, vs = kd, vd
    return ks, vs


def main():
    rng = np.random.default_rng(12)
    keys = rng.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32)
    ref = np.sort(keys)
    d_keys = cuda.to_device(keys)
    d_pos = cuda.to_device(np.arange(N, dtype=np.uint32))
    rows = []
    for backend, pairs in (("cuda-c", False), ("numba", False), ("cuda-c", True)):
        v = REGISTRY.get("onesweep", backend)
        plan = host.SortPlan("onesweep", backend, N, pairs, v.params)
        dv = d_pos if pairs else None
        ways = {
            "queued": lambda: plan.sort(d_keys, dv),
            "wait": lambda: wait_then_launch(plan, d_keys, dv),
            "given": lambda: plan.sort(d_keys, dv, max_key=2**32 - 1),
        }
        for name, fn in ways.items():  # each way sorts right before it is timed
            for buf in plan.keys:
                buf[:] = np.uint32(0xDEADBEEF)
            k, _ = fn()
            cuda.synchronize()
            if not np.array_equal(k[:N].copy_to_host(), ref):
                raise RuntimeError(f"{backend} {name}: wrong result")
        launch, cub_keys, _ = cub.sorter(d_keys, pairs=pairs)
        launch()
        if not np.array_equal(cub_keys.copy_to_host(), ref):
            raise RuntimeError("CUB: wrong result")
        ways["CUB"] = launch
        times = {name: [] for name in ways}
        for r in range(ROUNDS):
            names = list(ways)
            names = names[r % len(names):] + names[: r % len(names)]
            for name in names:
                times[name].append(measure(ways[name], warmup=2, repeat=10).median_ms)
        med = {name: float(np.median(t)) for name, t in times.items()}
        row = {"backend": backend, "case": "pairs" if pairs else "keys", "n": N,
               "rounds_ms": times, "median_ms": med,
               "pct_of_cub": {k: 100 * med["CUB"] / t for k, t in med.items() if k != "CUB"},
               "queued_saves_ms": med["wait"] - med["queued"]}
        rows.append(row)
        print(f"{backend:7s} {row['case']:5s} " + "  ".join(
            f"{k} {t:.3f} ms" + (f" ({row['pct_of_cub'][k]:.1f}%)" if k != "CUB" else "") for k, t in med.items())
            + f"  queued saves {row['queued_saves_ms']:.3f} ms", flush=True)
        del plan
    peer = {"keys": cub.NAME_KEYS, "pairs": cub.NAME_PAIRS}
    name = cuda.get_current_device().name
    result = {"experiment": "onesweep: queued first pass vs wait-then-launch vs max key given",
              "date": datetime.date.today().isoformat(),
              "device": name.decode() if isinstance(name, bytes) else name,
              "versions": {"cuda_driver_api": ".".join(map(str, cuda.cudadrv.driver.driver.get_version())),
                           "numba-cuda": version("numba-cuda"), "cupy": version("cupy"), "cub": cub.version()},
              "peer": peer, "rounds": ROUNDS, "repeat_per_round": 10, "rows": rows}
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
