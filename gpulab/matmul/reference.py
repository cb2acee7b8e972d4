"""CPU reference for chapter 1: the product in float64, which every variant is checked against."""

import numpy as np


def matmul_reference(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``A @ B`` computed in float64 (exact enough to judge float32 kernels by relative error)."""
    return np.asarray(A, dtype=np.float64) @ np.asarray(B, dtype=np.float64)
