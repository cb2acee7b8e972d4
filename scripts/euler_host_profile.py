"""Where the host's time goes in one Euler circuit: the public call (`gpulab.euler.euler_circuit`,
ruling_set with the registry's tuned parameters) on a deep graph already on the device, as the
benchmark's ``deep-<E>`` case builds it, per backend in one process.

After two warm-up calls it prints, per backend: the wall time of --calls calls (each followed
by a synchronize); the numba kernels whose launches take numba's own path (no flattened plan,
or a plan without the packed `cuLaunchKernel`); then --calls calls under cProfile, the
functions with the most time of their own and the most cumulative time.

    python scripts/euler_host_profile.py 41943040 [--calls 5] [--top 25]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("E", type=int)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--backends", nargs="*", default=["cuda-c", "numba"])
    a = ap.parse_args()

    import numpy as np

    import gpulab.euler as eu  # (gpulab before numba: it picks the device)
    from gpulab import launch
    from gpulab.euler import bench, generators as gen
    from gpulab.euler.variants import REGISTRY
    from numba import cuda

    ds, dd = gen.deep_graph(a.E, 4, int(np.random.default_rng().integers(1 << 30)), device=True)
    for backend in a.backends:
        v = REGISTRY.get("ruling_set", backend)
        how = dict(variant="ruling_set", backend=backend, params=bench.tuned_params(v) or None)
        for _ in range(2):
            eu.euler_circuit(ds, dd, **how)
        cuda.synchronize()
        walls = []
        for _ in range(a.calls):
            t = time.perf_counter()
            out = eu.euler_circuit(ds, dd, **how)
            cuda.synchronize()
            walls.append((time.perf_counter() - t) * 1e3)
        assert len(out) == a.E
        print(f"== {backend}: wall ms per call (with a synchronize) median {statistics.median(walls):.2f}, "
              f"all {[round(w, 2) for w in walls]}", flush=True)
        if backend == "numba":
            for kern, plans in list(launch._FAST_PLANS.items()):
                for key, plan in plans.items():
                    if plan is None or plan.packer is None:
                        print(f"   numba's launch path: {getattr(kern, '__name__', kern)} "
                              f"{'no plan' if plan is None else 'no packer'} {key}", flush=True)
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(a.calls):
            eu.euler_circuit(ds, dd, **how)
        cuda.synchronize()
        prof.disable()
        for sort in ("tottime", "cumulative"):
            s = io.StringIO()
            pstats.Stats(prof, stream=s).sort_stats(sort).print_stats(a.top)
            print(f"-- {backend} by {sort} ({a.calls} calls)\n" + "\n".join(
                line for line in s.getvalue().splitlines() if line.strip() and "Ordered by" not in line), flush=True)


if __name__ == "__main__":
    main()
