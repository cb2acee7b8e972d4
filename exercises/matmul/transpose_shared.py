"""Exercise matmul.2 — shared-memory transpose without bank conflicts.

Implement :func:`transpose`. See exercises/matmul/README.md for the task.
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
