"""``gpulab bench subset``: the seed's table (n = 20, k = 5..9; n = 50, k = 3..5) and three large
problems, C(100, 6), C(200, 5) and C(300, 5); every variant against the numba-parallel CPU baseline.

Each timed run is end to end from the packed matrix: upload Q and the binomial table, every
launch (and the seed variants' host partition loop), and the copy of the answer back.

C(300, 5) (1.96e10 subsets) is past the shared-memory cap of n: Q (358,800 bytes) fits no
block's shared memory, so `shared`, `incremental` and `incremental_warp` are recorded as skipped
with their LimitError, `constant_local` with its constant-memory one; `incremental_global`
runs it (and `cpu_parallel`, timed once). The teaching step `global` is not run there
(`runner`): about 8 s a run at C(200, 5) on the H200, 7.7 times the subsets here.
"""

from __future__ import annotations

import math
import os

import numpy as np

from gpulab import device
from gpulab.benchmark import BenchSpec, Case
from gpulab.errors import GpulabError
from gpulab.subset.combinatorics import choose

# The original article's numbers for n = 50, k = 5 (its CPU and its GPU), shown beside ours.
ARTICLE_MS = {"cpu": 5455.0, "gpu": 170.9}


# Above this many subsets (C(200, 5)) a run of the CPU baseline takes seconds (1.5 s at C(200, 5)
# on the H200's host, docs/benchmarks/subset-h200.json): it is timed once, and the teaching
# steps are not run.
LARGE = choose(200, 5)


def _case(n, k, label=None):
    return Case(label=label or f"n={n} k={k}", size={"n": n, "k": k, "subsets": choose(n, k)},
                work=float(choose(n, k)), unit="subsets/s", unit_scale=1.0)


def cases(quick: bool) -> list[Case]:
    if device.on_simulator():
        return [_case(9, 3), _case(10, 4)]
    seed = [_case(20, k) for k in range(5, 10)] + [_case(50, k) for k in (3, 4, 5)]
    large = [_case(100, 6, "C(100,6)"), _case(200, 5, "C(200,5)"), _case(300, 5, "C(300,5)")]
    if quick:
        return [_case(20, 5), _case(50, 5), _case(200, 5, "C(200,5)")]
    return seed + large


def setup(case: Case, rng: np.random.Generator):
    from gpulab.subset.reference import correlation, least_correlated_cpu, squared_packed, synthetic_returns

    from numba import cuda

    n, k = case.size["n"], case.size["k"]
    C = correlation(synthetic_returns(500, n, factors=3, strength=0.5, seed=int(rng.integers(2**31))))
    Q = squared_packed(C)
    s, r = least_correlated_cpu(Q, n, k)  # the check's reference (itself checked by the tests)
    return {"n": n, "k": k, "C": C, "Q": Q, "dC": cuda.to_device(C), "expected": (math.sqrt(2.0 * s), r), "launch": {}}


def runner(variant, state):
    if variant.teaching_only and variant.backend != "cpu" and choose(state["n"], state["k"]) > LARGE:
        raise GpulabError(f"the teaching step {variant.name} is not run above C(200,5) = {LARGE} subsets: "
                          "about 8 s a run at C(200,5) on the H200, and the harness runs it 5 times")
    key = variant.key
    if key not in state["launch"]:
        state["launch"][key] = variant.run(state["Q"], state["n"], state["k"], variant.launch_params())
    return state["launch"][key]


def check(variant, state):
    d, r = runner(variant, state)()
    ed, er = state["expected"]
    ok = r == er and math.isclose(d, ed, rel_tol=1e-9)
    return ok, f"rank {r} distance {d!r} (expected rank {er} distance {ed!r})"


def public(variant, state):
    """`least_correlated` on C already on the device: validation and packing there, the search,
    the answer back — against the launcher's time from the packed host matrix."""
    import gpulab.subset as ss

    return lambda: ss.least_correlated(state["dC"], state["k"], variant=variant.name, backend=variant.backend)


def peer(state):
    """The CPU baseline timed in the same run, so ``ratio_to_peer`` is each variant's speedup over it."""
    from gpulab.subset.reference import least_correlated_cpu

    return lambda: least_correlated_cpu(state["Q"], state["n"], state["k"])


def peer_timing(case: Case) -> tuple[int, int] | None:
    """The CPU baseline once (no warm-up: numba compiles it at import) above `LARGE`."""
    return (0, 1) if case.work > LARGE else None


def repeats(variant, case: Case) -> tuple[int, int] | None:
    """`cpu_parallel` once above `LARGE` (its check already ran it once)."""
    return (0, 1) if variant.backend == "cpu" and case.work > LARGE else None


def teardown(state):
    state["launch"].clear()


SPEC = BenchSpec(chapter="subset", cases=cases, setup=setup, runner=runner, check=check, teardown=teardown,
                 peer_name=f"CPU baseline (numba parallel, {os.cpu_count()} threads)", peer=peer, public=public,
                 peer_timing=peer_timing, repeats=repeats, extra={"article_ms": ARTICLE_MS})
