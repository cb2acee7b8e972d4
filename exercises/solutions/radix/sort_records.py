"""Exercise radix.3 — sort (key, id, weight) records by key (solution)."""

import numpy as np
from numba import cuda

import gpulab.radix as rx
from gpulab.errors import DtypeError
from gpulab.launch import grid_1d

RECORD = np.dtype([("key", np.uint32), ("id", np.uint32), ("weight", np.float32)])
BLOCK = 256


@cuda.jit
def gather(src, perm, dst, n):
    i = cuda.grid(1)
    if i < n:
        dst[i] = src[perm[i]]


def sort_records(records):
    """``records`` (dtype RECORD) sorted stably by ``key``, computed on the GPU."""
    if records.dtype != RECORD:
        raise DtypeError(f"records has dtype {records.dtype}; expected {RECORD}")
    n = records.size
    if n == 0:
        return records.copy()
    # radix4_shared with small blocks: any GPU (and the simulator, where blocks cost per thread).
    keys = np.ascontiguousarray(records["key"])
    perm = cuda.to_device(rx.argsort(keys, "radix4_shared", params={"BLOCK": 64, "SCAN_BLOCK": 64}).astype(np.int32))
    out = np.empty(n, RECORD)
    for field in RECORD.names:
        src = cuda.to_device(np.ascontiguousarray(records[field]))
        dst = cuda.device_array(n, src.dtype)
        gather[grid_1d(n, BLOCK), BLOCK](src, perm, dst, np.int32(n))
        out[field] = dst.copy_to_host()
    return out
