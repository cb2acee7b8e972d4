"""Exercise radix.1 — segmented inclusive scan in one block (solution)."""

import numpy as np
from numba import cuda, int32

from gpulab.errors import LimitError, ShapeError

MAX_N = 1024


@cuda.jit
def segscan_kernel(values, heads, out, n):
    f = cuda.shared.array(MAX_N, int32)
    v = cuda.shared.array(MAX_N, int32)
    tid = cuda.threadIdx.x
    if tid < n:
        v[tid] = values[tid]
        f[tid] = 1 if (heads[tid] != 0 or tid == 0) else 0
    else:
        v[tid] = 0
        f[tid] = 1
    offset = 1
    while offset < cuda.blockDim.x:  # a power of two >= n
        cuda.syncthreads()
        pf, pv = int32(0), int32(0)
        if tid >= offset:
            pf, pv = f[tid - offset], v[tid - offset]
        cuda.syncthreads()
        if tid >= offset:
            # (pf, pv) ⊕ (f, v): keep my value if a segment starts at or after me, else add.
            if f[tid] == 0:
                v[tid] = pv + v[tid]
            f[tid] = pf | f[tid]
        offset *= 2
    cuda.syncthreads()
    if tid < n:
        out[tid] = v[tid]


def segmented_scan(values, heads, out=None):
    """Inclusive scan of int32 ``values`` restarting where ``heads`` is 1; ``len(values) <= MAX_N``."""
    values = np.ascontiguousarray(values, dtype=np.int32)
    heads = np.ascontiguousarray(heads, dtype=np.int32)
    if values.shape != heads.shape or values.ndim != 1:
        raise ShapeError(f"values {values.shape} and heads {heads.shape} must be 1-D of one length")
    n = values.size
    if n > MAX_N:
        raise LimitError(f"{n} values: this one-block scan takes at most {MAX_N} (one thread each)")
    d_out = out if out is not None else cuda.device_array(max(n, 1), np.int32)
    if n:
        threads = 1 << max(0, (n - 1).bit_length())  # the smallest power of two >= n
        segscan_kernel[1, threads](cuda.to_device(values), cuda.to_device(heads), d_out, np.int32(n))
    return d_out.copy_to_host()[:n]
