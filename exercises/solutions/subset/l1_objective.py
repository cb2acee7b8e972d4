"""Exercise subset.2 — the least-correlated subset under an L1 objective (solution)."""

import numpy as np
from numba import cuda

from gpulab.subset import binomial_table, choose, pack, unrank
from gpulab.subset.kernels_numba import unrank_into

BLOCK = 32


@cuda.jit
def l1_kernel(A, T, n, k, total, vals):
    """One value per rank: the sum of |C_ij| over the pairs (canonical order)."""
    sel = cuda.local.array(16, np.int32)
    for t in range(cuda.grid(1), total, cuda.gridsize(1)):
        unrank_into(T, n, k, np.uint64(t), sel, 0)
        s = 0.0
        for b in range(1, k):
            rb = sel[b] * (sel[b] - 1) // 2
            for a in range(b):
                s += A[rb + sel[a]]
        vals[t] = s


def least_correlated_l1(C, k, out=None):
    """(combination, sum of |C_ij| over its pairs, lexicographic rank), minimized on the GPU."""
    C = np.asarray(C, dtype=np.float64)
    n = C.shape[0]
    total = choose(n, k)
    A = np.abs(pack(C))
    if A.size == 0:
        A = np.zeros(1)
    vals = out if out is not None else cuda.device_array(total, np.float64)
    grid = max(1, min(-(-total // BLOCK), 64))
    l1_kernel[grid, BLOCK](cuda.to_device(A), cuda.to_device(binomial_table(n, k)), np.int32(n), np.int32(k),
                           np.int64(total), vals)
    v = vals.copy_to_host()[:total]
    m = int(np.argmin(v))  # first minimum: the lowest rank
    return unrank(n, k, m), float(v[m]), m
