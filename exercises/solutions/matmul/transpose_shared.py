"""Exercise matmul.2 — shared-memory transpose without bank conflicts (solution)."""

import numpy as np
from numba import cuda, float32

from gpulab.errors import DtypeError, ShapeError
from gpulab.launch import ceil_div

TILE = 16
TILE_PADDED = TILE + 1  # shared-array shapes must be constants numba can see: no arithmetic inside


@cuda.jit
def transpose_kernel(A, T, M, N):
    # TILE + 1 columns: a column of the tile then spans all banks instead of one.
    tile = cuda.shared.array((TILE, TILE_PADDED), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    r, c = cuda.blockIdx.y * TILE + ty, cuda.blockIdx.x * TILE + tx
    if r < M and c < N:
        tile[ty, tx] = A[r, c]  # coalesced read along a row of A
    cuda.syncthreads()
    r2, c2 = cuda.blockIdx.x * TILE + ty, cuda.blockIdx.y * TILE + tx
    if r2 < N and c2 < M:
        T[r2, c2] = tile[tx, ty]  # coalesced write along a row of T; column read of the tile


def transpose(A, out=None):
    """Return A.T (float32, any M×N) computed with a padded shared-memory tile."""
    if A.ndim != 2:
        raise ShapeError(f"A must be 2-D, got {A.ndim}-D")
    if A.dtype != np.float32:
        raise DtypeError("A must be float32")
    M, N = A.shape
    T = out if out is not None else cuda.device_array((N, M), np.float32)
    transpose_kernel[(ceil_div(N, TILE), ceil_div(M, TILE)), (TILE, TILE)](cuda.to_device(A), T, np.int32(M), np.int32(N))
    return T.copy_to_host()
