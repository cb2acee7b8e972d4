"""``gpulab tour`` for chapter 2: every variant once, checked against the CPU baseline."""

from __future__ import annotations

import numpy as np

from gpulab.tour import TourCase


def tour_cases(simulator: bool) -> list[TourCase]:
    from gpulab.subset import bench
    from gpulab.subset.variants import REGISTRY

    out = []
    for v in REGISTRY:
        n, k = (10, 4) if simulator else (50, 5)
        case = bench._case(n, k)
        out.append(TourCase(variant=v, label=case.label,
                            setup=lambda case=case: bench.setup(case, np.random.default_rng()),
                            check=bench.check, runner=bench.runner, work=case.work, unit=case.unit,
                            unit_scale=case.unit_scale))
    return out
