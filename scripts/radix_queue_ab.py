"""Experiment (docs/benchmarks/radix-runs/run12-h100-queue-ab.*, run13-h100-queue-ab.log, run14-h100-first-pass-ab.*): what queuing onesweep's
first pass before the pass decision saves, in one session, against CUB's sort alone.

Ways to run the same kernels on 2^28 keys (random: keys-only in both languages, keys with
uint32 values in CUDA C; and keys whose low byte all share, where the first pass moves nothing):
  wait pageable -- the order before: histograms, a synchronous copy of the offsets into pageable
                   memory, decide, then launch every pass that moves keys;
  wait pinned   -- the same with the asynchronous copy into page-locked memory and an event
                   that the queued path uses (separates the copy's path from the queuing);
  queued        -- `SortPlan.sort` as it is: histograms, the copy started, pass 0 queued, then
                   the host waits, decides and launches the later passes; pass 0 is
                   `onesweep_first`, which writes nothing when all keys share its digit;
  queued copying -- the same with pass 0 as it was before `onesweep_first` (run 14 on): the
                   plain pass, a stable copy of the keys when it moves nothing (the next pass
                   then reads the input, not that copy: the same bytes as before);
  given         -- `SortPlan.sort(max_key=...)`: no decision, nothing read back (the sweep's path).
These and CUB are timed in rounds (order rotated each round), each round a median of 10 after
warm-up; the table gives the median over rounds. Each way's output is checked first.
Needs a GPU:  python3 scripts/radix_queue_ab.py [out.json]
"""
import datetime
import json
import os
import sys

import numpy as np

import gpulab  # noqa: F401
from numba import cuda
from gpulab import benchmark, device
from gpulab.radix import host
from gpulab.radix import peer as cub
from gpulab.radix.variants import REGISTRY
from gpulab.timing import measure

N, ROUNDS = int(os.environ.get("QUEUE_AB_N", 2**28)), int(os.environ.get("QUEUE_AB_ROUNDS", 5))


def wait_then_launch(plan, d_keys, d_vals, pinned):
    """The order before the queued pass: read the offsets back, then launch the passes."""
    plan.histograms(d_keys, plan.max_passes)
    if pinned:
        back = plan.hist_back.start(plan.hist, plan.stream)()
    else:
        back = host._fetch(plan.hist, plan.stream)
    moves = plan.passes_that_move(back)  # (the offsets' copy, with the flags after them)
    ks, vs = d_keys, d_vals if d_vals is not None else plan.vals[1]
    shifts = [p * plan.bits for p in range(plan.max_passes) if moves[p]]
    for run, shift in enumerate(shifts):
        kd, vd = plan.keys[run % 2], plan.vals[run % 2]
        plan.one_pass(shift, ks, vs, kd, vd, run)
        ks, vs = kd, vd
    return ks, vs


def queued_copying(plan, d_keys, d_vals):
    """`SortPlan.sort` with its queued first pass launched as a plain pass (it always writes)."""
    one_pass = plan.one_pass
    plan.one_pass = lambda *a, skip_same=False, **k: one_pass(*a, **k)
    try:
        return plan.sort(d_keys, d_vals)
    finally:
        del plan.one_pass


def main():
    rng = np.random.default_rng(12)
    keys = rng.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32)
    d_pos = cuda.to_device(np.arange(N, dtype=np.uint32))
    rows = []
    for backend, pairs, low_shared in (("cuda-c", False, False), ("numba", False, False), ("cuda-c", True, False),
                                       ("cuda-c", False, True), ("numba", False, True)):
        k = keys & ~np.uint32(0xFF) if low_shared else keys
        ref = np.sort(k)
        want_v = np.argsort(k, kind="stable") if pairs else None  # the values are positions
        d_keys = cuda.to_device(k)
        v = REGISTRY.get("onesweep", backend)
        plan = host.SortPlan(v.policy, backend, N, pairs, v.params)
        dv = d_pos if pairs else None
        ways = {
            "wait pageable": lambda: wait_then_launch(plan, d_keys, dv, False),
            "wait pinned": lambda: wait_then_launch(plan, d_keys, dv, True),
            "queued": lambda: plan.sort(d_keys, dv),
            "queued copying": lambda: queued_copying(plan, d_keys, dv),
            "given": lambda: plan.sort(d_keys, dv, max_key=2**32 - 1),
        }
        for name, fn in ways.items():  # each way sorts right before it is timed
            for buf in plan.keys:
                buf[:] = np.uint32(0xDEADBEEF)
            out_k, out_v = fn()
            cuda.synchronize()
            if not np.array_equal(out_k[:N].copy_to_host(), ref):
                raise RuntimeError(f"{backend} {name}: wrong keys")
            if pairs and not np.array_equal(out_v[:N].copy_to_host(), want_v):
                raise RuntimeError(f"{backend} {name}: the values are not a stable argsort")
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
        case = ("pairs" if pairs else "keys") + (", low byte shared" if low_shared else "")
        row = {"backend": backend, "case": case, "n": N,
               "rounds_ms": times, "median_ms": med,
               "pct_of_cub": {w: 100 * med["CUB"] / t for w, t in med.items() if w != "CUB"},
               "queued_saves_ms": {w: med[w] - med["queued"] for w in ("wait pageable", "wait pinned")}}
        rows.append(row)
        print(f"{backend:7s} {case:23s} " + "  ".join(
            f"{w} {t:.3f}" + (f" ({row['pct_of_cub'][w]:.1f}%)" if w != "CUB" else "") for w, t in med.items()),
            flush=True)
        del plan
    peer = {"keys": cub.NAME_KEYS, "pairs": cub.NAME_PAIRS}
    result = {"experiment": "onesweep: queued first pass (onesweep_first, or a plain pass) vs wait-then-launch vs max key given",
              "date": datetime.date.today().isoformat(),
              "device": device.info().name,
              "versions": {**benchmark.versions(), "cub": cub.version()},
              "peer": peer, "rounds": ROUNDS, "repeat_per_round": 10, "rows": rows}
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
