"""Exercise gp.2 — a block per individual. See README.md."""

import numpy as np  # noqa: F401
from numba import cuda  # noqa: F401

from gpulab.gp.kernels_numba import register_eval, trade_day  # noqa: F401

BLOCK = 64  # threads per block: one block per individual
CODE = 256  # opcodes of an individual's two trees in shared memory


def evaluate_block(population, market, out=None):
    """Money [P, S] (float64) of every individual on every stock, one block per individual."""
    raise NotImplementedError("exercise gp.2: write the kernel and this host function")
