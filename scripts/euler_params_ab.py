"""Chapter 5's launch parameters in turns, in one process: the public call
(`gpulab.euler.euler_circuit`, ruling_set) on device arrays of the benchmark's deep and shallow
graphs, with each of the given parameter sets over the registry's defaults, the sets' order
rotating each round (CUDA events around each call after warm-up, median per round; the table
has the median of the rounds). Every circuit is checked against the first one of its graph.

    python scripts/euler_params_ab.py --backend cuda-c --sets "BLOCK=128,JUMP_CHECK=4" \
        "BLOCK=128,JUMP_CHECK=8" --rounds 3 --repeat 7 [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="cuda-c")
    ap.add_argument("--sets", nargs="+", required=True)
    ap.add_argument("--sizes", nargs="*", default=["deep-42M", "shallow-42M"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json")
    a = ap.parse_args()

    import numpy as np

    import gpulab.euler as eu  # (gpulab before numba)
    from gpulab.benchmark import utc_now, versions
    from gpulab.device import info
    from gpulab.euler import bench
    from numba import cuda

    sets = [dict((k, int(v)) for k, v in (kv.split("=") for kv in s.split(","))) for s in a.sets]
    cases = {c.label: c for c in bench.cases(False)}
    rng = np.random.default_rng()
    times = {(size, i): [] for size in a.sizes for i in range(len(sets))}
    for size in a.sizes:
        state = bench.setup(cases[size], rng)
        src, dst = state["d_src"], state["d_dst"]
        first = None
        for r in range(a.rounds):
            order = list(range(len(sets)))
            order = order[r % len(order):] + order[:r % len(order)]
            for i in order:
                call = lambda: eu.euler_circuit(src, dst, variant="ruling_set", backend=a.backend, params=sets[i])  # noqa: E731
                out = call()
                got = out.copy_to_host() if hasattr(out, "copy_to_host") else np.asarray(out)
                if first is None:
                    first = got
                assert np.array_equal(got, first), f"{size} {sets[i]}: another circuit"
                call()
                ms = []
                for _ in range(a.repeat):
                    s, e = cuda.event(), cuda.event()
                    s.record()
                    call()
                    e.record()
                    e.synchronize()
                    ms.append(s.elapsed_time(e))
                times[(size, i)].append(statistics.median(ms))
        del state, src, dst
    rows = [{"size": size, "params": a.sets[i], "ms, each round": " / ".join(f"{t:.2f}" for t in times[(size, i)]),
             "median ms": round(statistics.median(times[(size, i)]), 3)} for size in a.sizes for i in range(len(sets))]
    for r in rows:
        print(r, flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"about": f"chapter 5's launch parameters in turns, {a.backend}, public call on device arrays "
                       "(scripts/euler_params_ab.py)", "device": info().as_dict(), "versions": versions(),
                       "date": utc_now(), "rounds": a.rounds, "repeat": a.repeat, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
