"""Exercise matmul.2 — shared-memory transpose without bank conflicts.

Write `transpose(A, out=None)` for any float32 M×N matrix. Each block of TILE × BLOCK_ROWS
threads (32 × 8) moves one TILE × TILE tile: it reads the tile along rows of `A` (coalesced)
into shared memory, each thread copying TILE / BLOCK_ROWS = 4 rows, then writes it along rows
of `A.T` (coalesced) by reading the tile down a column. A warp is one row of the block: 32
lanes with consecutive `threadIdx.x`.

The grader also *traces* your kernel on the simulator (`gpulab.trace`) at a 64 × 96 matrix and
requires, per warp-wide request: **1 shared-memory wavefront** (no bank conflict, neither on the
tile's writes nor on its column reads) and **at most 4 global sectors** for loads and for stores (a
warp moves 128 contiguous bytes). A `TILE × TILE` tile fails the first: a column of it sits in
one bank. Pad it.
(On a real GPU numba needs the shape as constants: compute `TILE + 1` in a module-level
constant, not inside `cuda.shared.array(...)` — the simulator accepts both. The traced test
runs only on the simulator; on a GPU it is skipped.)
"""

import numpy as np  # noqa: F401
from numba import cuda, float32  # noqa: F401

from gpulab.errors import DtypeError, ShapeError  # noqa: F401
from gpulab.launch import ceil_div  # noqa: F401

TILE = 32
BLOCK_ROWS = 8


def transpose(A, out=None):
    """Return A.T for a float32 M×N matrix, through a padded shared tile, with blocks of
    TILE × BLOCK_ROWS threads.

    ``out``, if given, is an N×M float32 device array to write into.
    """
    raise NotImplementedError("exercise matmul.2: write the kernel and this host function")
