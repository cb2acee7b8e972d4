"""Exercise subset.3 — a block-level argmin reduction (solution)."""

from functools import lru_cache

import numpy as np
from numba import cuda, float64, int64

from gpulab.errors import LimitError


@lru_cache(maxsize=None)
def _kernel(block):
    @cuda.jit
    def argmin_kernel(values, n, out_v, out_i):
        sv = cuda.shared.array(block, float64)
        si = cuda.shared.array(block, int64)
        tid = cuda.threadIdx.x
        g = cuda.blockIdx.x * block + tid
        if g < n:
            sv[tid] = values[g]
            si[tid] = g
        else:
            sv[tid] = np.inf
            si[tid] = n  # larger than any real index: loses every tie
        cuda.syncthreads()
        step = block // 2
        while step > 0:
            if tid < step:
                v, i = sv[tid + step], si[tid + step]
                if v < sv[tid] or (v == sv[tid] and i < si[tid]):
                    sv[tid] = v
                    si[tid] = i
            cuda.syncthreads()
            step //= 2
        if tid == 0:
            out_v[cuda.blockIdx.x] = sv[0]
            out_i[cuda.blockIdx.x] = si[0]

    return argmin_kernel


def block_argmin(values, block=64):
    """Per block of ``block`` consecutive values: (minimum, index of its first occurrence)."""
    if block < 1 or block > 1024 or block & (block - 1):
        raise LimitError(f"block = {block} must be a power of two no larger than 1024")
    values = np.ascontiguousarray(values, dtype=np.float64)
    n = values.size
    grid = max(1, -(-n // block))
    out_v = cuda.device_array(grid, np.float64)
    out_i = cuda.device_array(grid, np.int64)
    _kernel(block)[grid, block](cuda.to_device(values), np.int64(n), out_v, out_i)
    return out_v.copy_to_host(), out_i.copy_to_host()
