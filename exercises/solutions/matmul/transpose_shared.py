"""Exercise matmul.2 — shared-memory transpose without bank conflicts (solution)."""

import numpy as np
from numba import cuda, float32

from gpulab.errors import DtypeError, ShapeError
from gpulab.launch import ceil_div

TILE = 32
BLOCK_ROWS = 8
TILE_PADDED = TILE + 1  # shared-array shapes must be constants numba can see: no arithmetic inside


@cuda.jit
def transpose_kernel(A, T, M, N):
    # TILE + 1 columns: row i of the tile starts in bank i, so a column spans all 32 banks.
    tile = cuda.shared.array((TILE, TILE_PADDED), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    c = cuda.blockIdx.x * TILE + tx
    for j in range(ty, TILE, BLOCK_ROWS):
        r = cuda.blockIdx.y * TILE + j
        if r < M and c < N:
            tile[j, tx] = A[r, c]  # a warp reads 32 consecutive floats of a row of A
    cuda.syncthreads()
    c2 = cuda.blockIdx.y * TILE + tx
    for j in range(ty, TILE, BLOCK_ROWS):
        r2 = cuda.blockIdx.x * TILE + j
        if r2 < N and c2 < M:
            T[r2, c2] = tile[tx, j]  # a warp writes a row of T from a column of the tile


def transpose(A, out=None):
    """Return A.T (float32, any M×N) computed with a padded shared-memory tile."""
    if A.ndim != 2:
        raise ShapeError(f"A must be 2-D, got {A.ndim}-D")
    if A.dtype != np.float32:
        raise DtypeError("A must be float32")
    M, N = A.shape
    T = out if out is not None else cuda.device_array((N, M), np.float32)
    grid = (ceil_div(N, TILE), ceil_div(M, TILE))
    transpose_kernel[grid, (TILE, BLOCK_ROWS)](cuda.to_device(A), T, np.int32(M), np.int32(N))
    return T.copy_to_host()
