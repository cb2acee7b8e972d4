"""``gpulab tour`` for chapter 3: every variant once, checked against the CPU interpreter."""

from __future__ import annotations

import numpy as np

from gpulab.tour import TourCase


def tour_cases(simulator: bool) -> list[TourCase]:
    from gpulab.gp import bench
    from gpulab.gp.variants import REGISTRY

    case = bench._case("P=3 33x40", 3, 33, 40) if simulator else bench._case("P=1024 32x768", 25_000, 32, 768, take=1024)
    cache: dict = {}

    def setup(case=case):
        if "state" not in cache:  # one market, population and CPU check for every row
            cache["state"] = bench.setup(case, np.random.default_rng())
        return cache["state"]

    out = []
    for v in REGISTRY:
        label = f"{case.size['population']} ind × {case.size['stocks']} × {case.size['days']}"
        out.append(TourCase(variant=v, label=label, setup=setup, check=bench.check, runner=bench.runner,
                            work=case.work, unit=case.unit, unit_scale=case.unit_scale))
    return out
