"""Exercise matmul.1 — matrix–vector product with the vector in constant memory.

Write `matvec(A, x, out=None)`: one thread per row of `A`, `x` in constant memory
(`cuda.const.array_like`, captured when the kernel is compiled — so build the kernel inside a
factory that closes over `x`). Every lane of a warp reads `x[k]` at the same `k`: the broadcast
case of chapter 1's `constant` variant. Raise `LimitError` naming the 65536-byte limit when `x`
does not fit, `ShapeError` / `DtypeError` for bad inputs.
"""

import numpy as np
from numba import cuda, float32  # noqa: F401

from gpulab.errors import DtypeError, LimitError, ShapeError  # noqa: F401
from gpulab.launch import ceil_div  # noqa: F401

CONSTANT_BYTES = 64 * 1024
BLOCK = 128


def matvec(A, x, out=None):
    """y = A @ x for float32 A (M×K) and x (K,), with x in constant memory.

    ``out``, if given, is a device array of M float32 to write y into. Returns y on the host.
    Raise ShapeError / DtypeError for bad inputs and LimitError when x does not fit in
    CONSTANT_BYTES (the message must name the limit).
    """
    raise NotImplementedError("exercise matmul.1: write the kernel and this host function")
