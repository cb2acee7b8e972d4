"""Exercise matmul.3 — shared-memory tiling with rectangular tiles.

Write `matmul_rect(A, B, out=None)` with a block of `TILE_N × TILE_M` threads (x over columns)
computing a `TILE_M × TILE_N` tile of C, staging `TILE_M × TILE_K` tiles of A and
`TILE_K × TILE_N` tiles of B in shared memory. The tiles have fewer elements than the block has
threads: decide which threads load what (the load mapping need not be the compute mapping).
Any M, K, N, with zeros loaded past the edges.
"""

import numpy as np  # noqa: F401
from numba import cuda, float32  # noqa: F401

from gpulab.errors import DtypeError, ShapeError  # noqa: F401
from gpulab.launch import ceil_div  # noqa: F401

TILE_M, TILE_N, TILE_K = 16, 8, 4


def matmul_rect(A, B, out=None):
    """C = A @ B (float32, any M, K, N) with TILE_M×TILE_K and TILE_K×TILE_N shared tiles,
    a block of TILE_N×TILE_M threads computing a TILE_M×TILE_N tile of C.

    ``out``, if given, is an M×N float32 device array to write into.
    """
    raise NotImplementedError("exercise matmul.3: write the kernel and this host function")
