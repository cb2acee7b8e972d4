"""Exercise matmul.3 — shared-memory tiling with rectangular tiles (solution)."""

import numpy as np
from numba import cuda, float32

from gpulab.errors import DtypeError, ShapeError
from gpulab.launch import ceil_div

TILE_M, TILE_N, TILE_K = 16, 8, 4  # a block computes 16x8 of C with 128 threads


@cuda.jit
def rect_kernel(A, B, C, M, N, K):
    As = cuda.shared.array((TILE_M, TILE_K), float32)
    Bs = cuda.shared.array((TILE_K, TILE_N), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    tid = ty * TILE_N + tx
    row, col = cuda.blockIdx.y * TILE_M + ty, cuda.blockIdx.x * TILE_N + tx
    acc = float32(0.0)
    for k0 in range(0, K, TILE_K):
        # The load mapping differs from the compute mapping: 64 threads fill As, 32 fill Bs.
        if tid < TILE_M * TILE_K:
            r, k = tid // TILE_K, tid % TILE_K
            gr = cuda.blockIdx.y * TILE_M + r
            As[r, k] = A[gr, k0 + k] if gr < M and k0 + k < K else float32(0.0)
        if tid < TILE_K * TILE_N:
            k, c = tid // TILE_N, tid % TILE_N
            gc = cuda.blockIdx.x * TILE_N + c
            Bs[k, c] = B[k0 + k, gc] if k0 + k < K and gc < N else float32(0.0)
        cuda.syncthreads()
        for k in range(TILE_K):
            acc += As[ty, k] * Bs[k, tx]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc


def matmul_rect(A, B, out=None):
    """C = A @ B (float32) with TILE_M×TILE_K and TILE_K×TILE_N shared tiles."""
    if A.ndim != 2 or B.ndim != 2:
        raise ShapeError("A and B must be 2-D")
    if A.dtype != np.float32 or B.dtype != np.float32:
        raise DtypeError("A and B must be float32")
    (M, K), (K2, N) = A.shape, B.shape
    if K != K2:
        raise ShapeError(f"inner dimensions differ: {K} vs {K2}")
    C = out if out is not None else cuda.device_array((M, N), np.float32)
    rect_kernel[(ceil_div(N, TILE_N), ceil_div(M, TILE_M)), (TILE_N, TILE_M)](
        cuda.to_device(A), cuda.to_device(B), C, np.int32(M), np.int32(N), np.int32(K))
    return C.copy_to_host()
