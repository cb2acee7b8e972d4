"""Exercise radix.2 — stream compaction: flag, scan, scatter (solution)."""

import numpy as np
from numba import cuda

from gpulab.errors import DtypeError, ShapeError
from gpulab.launch import grid_1d
from gpulab.radix.host import ScanPlan, provider

BLOCK = 256


@cuda.jit
def flag_greater(x, threshold, n, flags):
    i = cuda.grid(1)
    if i < n:
        flags[i] = 1 if x[i] > threshold else 0


@cuda.jit
def scatter_flagged(x, flags, pos, n, out):
    i = cuda.grid(1)
    if i < n and flags[i] == 1:
        out[pos[i]] = x[i]


def compact_greater(x, threshold):
    """The float32 elements of ``x`` greater than ``threshold``, in input order (any length)."""
    if getattr(x, "ndim", None) != 1:
        raise ShapeError("x must be a 1-D numpy array")
    if x.dtype != np.float32:
        raise DtypeError(f"x has dtype {x.dtype}; expected float32")
    n = x.size
    if n == 0:
        return x.copy()
    d_x = cuda.to_device(np.ascontiguousarray(x))
    flags, pos = cuda.device_array(n, np.int32), cuda.device_array(n, np.int32)
    out = cuda.device_array(n, np.float32)
    g = grid_1d(n, BLOCK)
    flag_greater[g, BLOCK](d_x, np.float32(threshold), np.int32(n), flags)
    ScanPlan(provider("numba", {"SCAN_BLOCK": BLOCK}), n, BLOCK).run(flags, pos)
    scatter_flagged[g, BLOCK](d_x, flags, pos, np.int32(n), out)
    count = int(pos[n - 1:n].copy_to_host()[0] + flags[n - 1:n].copy_to_host()[0])
    return out[:count].copy_to_host() if count else np.zeros(0, np.float32)
