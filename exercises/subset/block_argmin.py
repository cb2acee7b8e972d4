"""Exercise subset.3 — a block-level argmin reduction.

Write `block_argmin(values, block=64)`: a numba kernel where each block of `block` threads
reduces its `block` consecutive entries of `values` (float64) to the minimum and its index
(ties: the lowest index) with a shared-memory tree reduction, and the host returns the arrays
`(block_min, block_argmin)` (one entry per block; the last block may be partial). Raise
`LimitError` when `block` is not a power of two or exceeds 1024.
"""

import numpy as np  # noqa: F401
from numba import cuda  # noqa: F401

from gpulab.errors import LimitError  # noqa: F401


def block_argmin(values, block=64):
    """Per block of ``block`` consecutive values: (minimum, index of its first occurrence)."""
    raise NotImplementedError("exercise subset.3: write the reduction kernel and this host function")
