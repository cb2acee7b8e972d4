"""Exercise matmul.1 — matrix–vector product with the vector in constant memory (solution)."""

import numpy as np
from numba import cuda, float32

from gpulab.errors import DtypeError, LimitError, ShapeError
from gpulab.launch import ceil_div

CONSTANT_BYTES = 64 * 1024
BLOCK = 128


def make_kernel(x_host):
    @cuda.jit
    def matvec_kernel(A, y, M, K):
        xc = cuda.const.array_like(x_host)  # every lane reads xc[k] at the same k: a broadcast
        row = cuda.grid(1)
        if row < M:
            acc = float32(0.0)
            for k in range(K):
                acc += A[row, k] * xc[k]
            y[row] = acc

    return matvec_kernel


def matvec(A, x, out=None):
    """y = A @ x for float32 A (M×K) and x (K,), with x in constant memory."""
    if A.ndim != 2 or x.ndim != 1:
        raise ShapeError(f"A must be 2-D and x 1-D, got {A.ndim}-D and {x.ndim}-D")
    if A.dtype != np.float32 or x.dtype != np.float32:
        raise DtypeError("A and x must be float32")
    M, K = A.shape
    if x.shape[0] != K:
        raise ShapeError(f"A is {M}x{K} but x has {x.shape[0]} elements")
    if x.nbytes > CONSTANT_BYTES:
        raise LimitError(f"x is {x.nbytes} bytes; constant memory holds {CONSTANT_BYTES} bytes")
    y = out if out is not None else cuda.device_array(M, np.float32)
    make_kernel(np.ascontiguousarray(x))[ceil_div(M, BLOCK), BLOCK](cuda.to_device(A), y, np.int32(M), np.int32(K))
    return y.copy_to_host()
