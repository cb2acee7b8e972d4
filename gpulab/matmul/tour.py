"""``gpulab tour`` for chapter 1: every variant once, checked against the CPU reference."""

from __future__ import annotations

import numpy as np

from gpulab.tour import TourCase


def tour_cases(simulator: bool) -> list[TourCase]:
    from gpulab.matmul import bench
    from gpulab.matmul.variants import REGISTRY

    # Deliberately not multiples of any tile, so edge handling is exercised.
    square = (37, 29, 41) if simulator else (2049, 2047, 2051)
    thin = (37, 29, 41) if simulator else (4099, 127, 128)
    out = []
    for v in REGISTRY:
        M, K, N = thin if v.policy.constant_b else square
        case = bench._case(M, K, N)
        out.append(TourCase(variant=v, label=f"{M}x{K}x{N}", setup=lambda case=case: bench.setup(case, np.random.default_rng()),
                            check=bench.check, runner=bench.runner, work=case.work, unit=case.unit, unit_scale=case.unit_scale))
    return out
