"""Exercise matmul.2 — shared-memory transpose without bank conflicts.

Write `transpose(A, out=None)`: read a TILE×TILE tile of `A` along rows (coalesced) into shared
memory, and write it out along rows of `A.T` (coalesced) by reading the tile down a column. A
column of a `TILE × TILE` float tile sits in one bank when TILE is a multiple of 32 and in few
banks otherwise; declare the tile `TILE × (TILE + 1)` so a column spans TILE banks. Any M×N.
(On a real GPU numba needs the shape as constants: compute `TILE + 1` in a module-level
constant, not inside `cuda.shared.array(...)` — the simulator accepts both.)
"""

import numpy as np  # noqa: F401
from numba import cuda, float32  # noqa: F401

from gpulab.errors import DtypeError, ShapeError  # noqa: F401
from gpulab.launch import ceil_div  # noqa: F401

TILE = 16


def transpose(A, out=None):
    """Return A.T for a float32 M×N matrix, through a padded TILE×(TILE+1) shared tile.

    ``out``, if given, is an N×M float32 device array to write into.
    """
    raise NotImplementedError("exercise matmul.2: write the kernel and this host function")
