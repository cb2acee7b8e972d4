"""Where a subset search's public call spends its time (issue 31: the kernel is ~0.55 ms of what
was a ~2.3 ms call at n = 50, k = 5). For each backend, the first (cold) call, a call that makes
its plan again, and the warm call that finds its plan kept, beside the warm call's stages and
the kernels alone:

  cold call ms      the backend's first least_correlated(C, k) in this process: kernels compiled
                    (numba's JIT, NVRTC) and loaded, the plan made (one call, so one sample)
  new plan ms       clear_cache(), then the call: the plan made again, the kernels already built
  public ms         least_correlated(C, k, variant=..., backend=...), its plan kept: what a caller
                    that searches again and again pays per call
  validate+pack ms  host.validate + squared_packed: the public call's checks of a host C
  public dev-C ms   the same call on C already on the device (a numba array): checked and packed there
  dev checks+Q ms   that call's checks and packing of the device C alone
  public CuPy ms    the same call on a CuPy C (where CuPy is installed)
  lookup ms         v.run(Q, n, k, params): the kept plan found and bound to Q
  launch ms         launch(): Q into the kept buffer, the kernels, the answer back (16 bytes)
  launch dev-Q ms   the same with Q already on the device (nothing uploaded)
  kernels ms        the kernels alone, CUDA events (incremental variants: the scan and the final
                    argmin; a seed variant: its launch with Q on the device, host loop included)
  empty launch ms   one launch of a kernel that does nothing, synchronized

Every stage but the cold call is the median of --repeat after one warm-up; the host-side ones by
perf_counter after a device synchronize. Each backend's answer is checked against the CPU
baseline. Prints a table (a column per backend) and, with --json, writes it with the device,
versions and date. On numba's simulator (tiny sizes: --n 8 --k 3 --repeat 3) the numbers are the
simulator's CPU cost, never a GPU's; CUDA C needs a GPU and is skipped, saying why.

    python scripts/subset_call_timeline.py --n 50 --k 5 --repeat 20 --json docs/benchmarks/subset-call-timeline-h100.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from gpulab import device, subset  # before numba: gpulab picks the GPU or the simulator
from numba import cuda  # noqa: E402  (after gpulab)
from gpulab.benchmark import utc_now, versions
from gpulab.subset import host
from gpulab.subset.reference import correlation, least_correlated_cpu, squared_packed, synthetic_returns
from gpulab.timing import measure, wall


@cuda.jit
def _empty(x):
    pass


def clock(f, repeat: int, before=None) -> float:
    """Median milliseconds of `repeat` calls of `f` after one warm-up, each ended by a device
    synchronize (`before()`, untimed, runs ahead of each call): `gpulab.timing.wall`."""
    return wall(f, warmup=1, repeat=repeat, before=before).median_ms


def kernels_alone(v, plan, dQ, start: int, stop: int):
    """What `kernels ms` times: the incremental plan's two launches, or a seed variant's launch
    with Q on the device."""
    if isinstance(plan, host.IncrementalPlan):
        return lambda: plan.search(dQ, plan.K, start, stop)
    return v.run(dQ, plan.n, plan.k, v.launch_params(None))


def device_checks(dC, k: int):
    """A device C's checks and Q, as `least_correlated` makes them (before 2026-11-28: two
    functions, two launches, a fresh Q and stats buffer every call)."""
    if hasattr(host, "validated_packed_on_device"):
        return host.validated_packed_on_device(dC, k)[0]
    d, n, k = host.validate_on_device(dC, k)
    return host.squared_packed_on_device(d, n)


def timeline(backend: str, variant: str | None, C, Q, dQ, n: int, k: int, repeat: int) -> dict:
    v = subset.REGISTRY.get(variant or subset.REGISTRY.default(backend), backend)
    row = {"backend": backend, "variant": v.name, "n": n, "k": k}
    reason = v.unavailable_reason()
    if reason:
        return {**row, "skipped": reason}

    def public():
        return subset.least_correlated(C, k, variant=v.name, backend=backend)

    t0 = time.perf_counter()
    got = public()
    cuda.synchronize()
    row["cold call ms"] = 1e3 * (time.perf_counter() - t0)
    s, r = least_correlated_cpu(Q, n, k)
    row["answer rank"], row["same as cpu"] = got.rank, got.rank == r
    p = v.launch_params(None)
    row["new plan ms"] = clock(public, repeat, before=subset.clear_cache)
    row["public ms"] = clock(public, repeat)
    row["validate+pack ms"] = clock(lambda: squared_packed(host.validate(C, k)[0]), repeat)
    dC = cuda.to_device(C)
    row["public dev-C ms"] = clock(lambda: subset.least_correlated(dC, k, variant=v.name, backend=backend), repeat)
    row["dev checks+Q ms"] = clock(lambda: device_checks(dC, k), repeat)
    try:
        import cupy
    except ImportError:
        pass
    else:
        cC = cupy.asarray(C)
        row["public CuPy ms"] = clock(lambda: subset.least_correlated(cC, k, variant=v.name, backend=backend), repeat)
    row["lookup ms"] = clock(lambda: v.run(Q, n, k, p), repeat)
    row["launch ms"] = clock(v.run(Q, n, k, p), repeat)
    row["launch dev-Q ms"] = clock(v.run(dQ, n, k, p), repeat)
    plan, start, stop = host.plan_for(v.policy, backend, n, k, p)
    t = measure(kernels_alone(v, plan, dQ, start, stop), warmup=1, repeat=repeat)
    row["kernels ms"], row["kernels clock"] = t.median_ms, t.clock
    d = cuda.to_device(np.zeros(1))
    row["empty launch ms"] = clock(lambda: _empty[1, 32](d), repeat)
    row["blocks"] = getattr(plan, "grid", None)
    row["plans kept"] = len(host.PLANS)
    return row


def profile(backend: str, variant: str | None, C, k: int, calls: int, where: str = "host") -> None:
    """cProfile of `calls` warm public calls on C where `where` says (the host, a numba device
    array, a CuPy array): the functions with the most time of their own, then the most time
    below them (per call, microseconds)."""
    from gpulab.timing import host_profile

    if where == "numba":
        C = cuda.to_device(C)
    elif where == "cupy":
        import cupy

        C = cupy.asarray(C)
    v = variant or subset.REGISTRY.default(backend)
    for _ in range(3):
        subset.least_correlated(C, k, variant=v, backend=backend)
    lines = host_profile(lambda: subset.least_correlated(C, k, variant=v, backend=backend), calls)
    print(f"== {backend}/{v}, C on {where}: {lines[0]}")
    print("\n".join(lines[1:]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--backends", nargs="+", default=["numba", "cuda-c"])
    ap.add_argument("--variant", help="default: each backend's default (incremental)")
    ap.add_argument("--json", help="write the rows, the device, versions and date to this file")
    ap.add_argument("--profile", type=int, metavar="CALLS",
                    help="instead: cProfile CALLS warm public calls per backend, print where the host time goes")
    ap.add_argument("--profile-input", choices=["host", "numba", "cupy"], default="host",
                    help="with --profile: where C lies (default: host)")
    a = ap.parse_args()
    C = correlation(synthetic_returns(500, a.n, factors=3, strength=0.5, seed=1))
    Q = squared_packed(C)
    dQ = cuda.to_device(Q)
    if a.profile:
        for b in a.backends:
            profile(b, a.variant, C, a.k, a.profile, a.profile_input)
        return
    rows = [timeline(b, a.variant, C, Q, dQ, a.n, a.k, a.repeat) for b in a.backends]
    print(f"{device.info().name}: n = {a.n}, k = {a.k}, medians of {a.repeat}")
    for row in rows:
        if "skipped" in row:
            print(f"{row['backend']}/{row['variant']} skipped: {row['skipped']}")
    ran = [row for row in rows if "skipped" not in row]
    stages = [s for s in dict.fromkeys(key for row in ran for key in row) if s not in ("backend", "variant", "n", "k")]
    print(f"{'':18}" + "".join(f"{row['backend'] + '/' + row['variant']:>24}" for row in ran))
    for s in stages:
        cells = [row.get(s, "") for row in ran]
        print(f"{s:18}" + "".join(f"{c:24.3f}" if isinstance(c, float) else f"{c!s:>24}" for c in cells))
    if a.json:
        out = {"device": device.info().name, "date": utc_now(), "versions": versions(),
               "script": "python scripts/subset_call_timeline.py " + " ".join(sys.argv[1:]),
               "what": "a subset public call: the cold call, a new plan, the warm call with its plan kept, its "
                       "stages and the kernels alone; medians of --repeat after a warm-up (see the script's docstring)",
               "rows": rows}
        Path(a.json).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
