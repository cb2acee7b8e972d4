"""``gpulab tour`` for chapter 4: every variant once, checked against numpy."""

from __future__ import annotations

import numpy as np

from gpulab.tour import TourCase


def tour_cases(simulator: bool) -> list[TourCase]:
    from gpulab.radix import bench
    from gpulab.radix.variants import REGISTRY

    n = 300 if simulator else 10_000_019  # a prime: no tile size divides it
    out = []
    for v in REGISTRY:
        m = min(n, bench.CPU_MAX_KEYS) if v.backend == "cpu" else n
        case = bench._case("keys", m, str(m))
        out.append(TourCase(variant=v, label=f"{m} keys", setup=lambda case=case: bench.setup(case, np.random.default_rng()),
                            check=bench.check, runner=bench.runner, work=case.work, unit=case.unit,
                            unit_scale=case.unit_scale))
    return out
