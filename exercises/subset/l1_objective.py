"""Exercise subset.2 — the least-correlated subset under an L1 objective.

Write `least_correlated_l1(C, k, out=None)`: the k-subset minimizing the sum of |C_ij| over its
pairs (instead of the squares), by exhaustive search on the GPU (numba), ties to the lowest
lexicographic rank. Return `(combination, value, rank)`. You may use
`gpulab.subset.kernels_numba.unrank_into` and `gpulab.subset.binomial_table`. If `out` is
given it is a device array of C(n, k) float64, one value per rank: write every element of it
(the test poisons it with NaN first).
"""

import numpy as np  # noqa: F401
from numba import cuda  # noqa: F401

from gpulab.subset import binomial_table, choose  # noqa: F401
from gpulab.subset.kernels_numba import unrank_into  # noqa: F401

BLOCK = 32


def least_correlated_l1(C, k, out=None):
    """(combination, sum of |C_ij| over its pairs, lexicographic rank), minimized on the GPU."""
    raise NotImplementedError("exercise subset.2: write the kernel and this host function")
