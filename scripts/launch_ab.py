"""CUDA C's launch path before and after (issue 30), on a GPU, in one run: `gpulab.cudac.launch`
as it was (pycuda's unprepared call: every argument's type looked at, every numba array's
`__cuda_array_interface__` dict built, per launch) against the current one (one `struct` format
per kernel through pycuda's prepared call; a numba array keeps its address after the first read).

Workloads, CUDA C only: the radix sort plan (onesweep, uint32 keys, all 32 bits random) at
--log2 sizes; the public call `gpulab.radix.sort` on CuPy keys (where CuPy is installed) at
2^24; the Euler circuit plan (ruling_set) on deep random graphs of --edges edges (directed,
and undirected at the largest); and, with --gp, `gpulab.gp.evolve` at the paper's scale (25,000
individuals, 50 generations, 32 synthetic stocks, 768 training days, breeding on the GPU), timed
by its own `timing.total_s` (wall clock, compilation excluded). Each round times every workload
once with each launcher, the launchers' order alternating by round (CUDA events after warm-up,
median of --repeat; evolve: median of 3 runs after one); the table has the median of the rounds. --json FILE writes it with the device, versions and date.

    python scripts/launch_ab.py --json launch-ab.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

import gpulab.radix as rx  # before numba: gpulab picks the GPU or the simulator
from gpulab import cudac, device  # noqa: E402
from gpulab.benchmark import utc_now, versions  # noqa: E402
from gpulab.euler import bench as euler_bench  # noqa: E402
from gpulab.euler.variants import REGISTRY as EULER  # noqa: E402
from gpulab.radix import bench as radix_bench  # noqa: E402
from gpulab.timing import measure  # noqa: E402


def launch_before(fn, grid, block, *args, shared_bytes: int = 0, stream=0) -> None:
    """`gpulab.cudac.launch` at commit 33141c0 (its default-stream path), kept here as the A side."""
    packed = []
    for a in args:
        cai = getattr(a, "__cuda_array_interface__", None)
        if cai is not None:
            packed.append(np.uintp(cai["data"][0]))
        elif isinstance(a, (bool, int)) and not isinstance(a, np.generic):
            packed.append(np.int32(a))
        else:
            packed.append(a)
    if shared_bytes > 48 * 1024:
        import pycuda.driver as drv

        fn.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, shared_bytes)
    if stream:
        raise ValueError("the A side times the default stream only")
    fn(*packed, grid=tuple(grid) + (1,) * (3 - len(grid)), block=tuple(block) + (1,) * (3 - len(block)),
       shared=shared_bytes)


LAUNCHERS = {"before": launch_before, "after": cudac.launch}


def workloads(a, rng, keep):
    """(name, call) pairs; `keep` collects what must outlive the loop (states to tear down)."""
    out = []
    v = rx.REGISTRY.get("onesweep", "cuda-c")
    for k in a.log2:
        state = radix_bench.setup(radix_bench._case("keys", 2**k, f"2^{k}"), rng)
        keep.append((radix_bench, state))
        out.append((f"radix plan 2^{k}", radix_bench.runner(v, state)))
    try:
        import cupy

        c = cupy.asarray(rng.integers(0, 2**32, 2**24, dtype=np.uint32))
        out.append(("radix public cupy 2^24", lambda: rx.sort(c, "onesweep", "cuda-c")))
    except ImportError:
        pass
    ev = EULER.get("ruling_set", "cuda-c")
    for E in a.edges:
        for directed in (True, False) if E == max(a.edges) else (True,):
            case = euler_bench._case("deep", E, "") if directed else euler_bench._undirected("deep", E)
            state = euler_bench.setup(case, rng)
            keep.append((euler_bench, state))
            out.append((f"euler {'directed' if directed else 'undirected'} {E}", euler_bench.runner(ev, state)))
    if a.gp:
        from gpulab.gp import synthetic_market
        from gpulab.gp.loop import GPParams, evolve

        market = synthetic_market(32, 768 + 256, seed=a.seed)
        params = GPParams(population=25_000, generations=50).check()

        def run():
            return evolve(market, train_days=768, params=params, backend="cuda-c", breeding="gpu", seed=a.seed,
                          progress=None).timing["total_s"] * 1e3

        out.append(("gp evolve 25,000 x 50 (total_s)", run))
    return out


def timed(name, call, warmup, repeat):
    """ms: CUDA events around `call` (median of `repeat`), or for evolve its own clock (median of 3)."""
    if name.startswith("gp evolve"):
        call()
        return statistics.median(call() for _ in range(3))
    return measure(call, warmup=warmup, repeat=repeat).median_ms


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2", type=int, nargs="+", default=[20, 24, 28])
    ap.add_argument("--edges", type=int, nargs="+", default=[2**22, 42_000_000])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--gp", action="store_true", help="also gp.evolve at the paper's scale")
    ap.add_argument("--json")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    keep = []
    rows = []
    try:
        for name, call in workloads(a, rng, keep):
            per = {k: [] for k in LAUNCHERS}
            for r in range(a.rounds):
                for which in (("before", "after") if r % 2 == 0 else ("after", "before")):
                    cudac.launch = LAUNCHERS[which]
                    try:
                        per[which].append(timed(name, call, a.warmup, a.repeat))
                    finally:
                        cudac.launch = LAUNCHERS["after"]
            row = {"workload": name, **{f"{k} ms": statistics.median(x) for k, x in per.items()}, "rounds ms": per}
            row["before / after"] = row["before ms"] / row["after ms"]
            rows.append(row)
            print(json.dumps({k: (round(x, 4) if isinstance(x, float) else x) for k, x in row.items()}), flush=True)
    finally:
        for mod, state in keep:
            mod.teardown(state)
    print(f"\n{'workload':28} {'before ms':>10} {'after ms':>10} {'before/after':>12}")
    for r in rows:
        print(f"{r['workload']:28} {r['before ms']:10.4f} {r['after ms']:10.4f} {r['before / after']:12.3f}")
    print(f"(CUDA C; CUDA events, median of {a.repeat} after {a.warmup} warm-up calls; the median of {a.rounds} "
          "rounds, the launchers' order alternating)")
    if a.json:
        Path(a.json).write_text(json.dumps({
            "schema": "gpulab-launch-ab/1", "date": utc_now(), "script": "python scripts/launch_ab.py " + " ".join(sys.argv[1:]),
            "device": {**device.info().as_dict(), "pycuda": cudac.pycuda_status()}, "versions": versions(),
            "settings": vars(a), "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
