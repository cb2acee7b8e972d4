"""CPU reference for chapter 1: the product in float64, which every variant is checked against.

It runs on the host: device arrays are copied there first, and the result is numpy.
"""

import numpy as np

from gpulab.arrays import to_host


def matmul_reference(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """`A @ B` computed in float64 (exact enough to judge float32 kernels by relative error)."""
    return np.asarray(to_host(A), dtype=np.float64) @ np.asarray(to_host(B), dtype=np.float64)
