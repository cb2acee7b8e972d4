"""``gpulab tour`` for chapter 5: every variant once on a shallow graph (many cycles after
pairing, none very long, so even ``propagate`` finishes), checked and compared with the others."""

from __future__ import annotations

import numpy as np

from gpulab.tour import TourCase


def tour_cases(simulator: bool) -> list[TourCase]:
    from gpulab.euler import bench
    from gpulab.euler.variants import REGISTRY

    if simulator:
        import sys

        sys.setswitchinterval(0.001)  # simulated warp intrinsics wait on the GIL: see tests/euler/conftest.py
    E = 120 if simulator else 262_147  # networkx needs ~5 s at this size
    case = bench._case("shallow", E, f"shallow, {E} edges")
    state = {}

    def setup():
        if "s" not in state:  # one graph for every variant: they must all return the same circuit
            state["s"] = bench.setup(case, np.random.default_rng(5))
        return state["s"]

    return [TourCase(variant=v, label=f"shallow, {E} edges", setup=setup, check=bench.check, runner=bench.runner,
                     work=float(E), unit="Medges/s", unit_scale=1e6) for v in REGISTRY]
