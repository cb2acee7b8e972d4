"""Exercise gp.2 — a block per individual.

Write `evaluate_block(population, market, out=None)`: the money of every (individual, stock),
float64 `[P, S]`, with a numba kernel in which **one block evaluates one individual on all
stocks**: the block's threads copy the individual's two trees into shared memory once, then
loop over the stocks (thread `t` takes stocks `t, t + BLOCK, ...`), evaluating both trees with
`gpulab.gp.kernels_numba.register_eval` and trading with `gpulab.gp.kernels_numba.trade_day`,
and selling what is held after the last day. Read the day/indicator/stock layout
(`market.floats("dis")`, `market.bools("dis")`, flattened). If `out` is given it is a device array
of `P * S` float64: write every element (the test poisons it with NaN). The result must equal
`gpulab.gp.reference.evaluate(...).money` bit for bit. Raise `LimitError` when an individual's two
trees have more than `CODE` opcodes or more than 32 booleans on the stack.
"""

import numpy as np  # noqa: F401
from numba import cuda  # noqa: F401

from gpulab.gp.kernels_numba import register_eval, trade_day  # noqa: F401

BLOCK = 64  # threads per block: one block per individual
CODE = 256  # opcodes of an individual's two trees in shared memory


def evaluate_block(population, market, out=None):
    """Money [P, S] (float64) of every individual on every stock, one block per individual."""
    raise NotImplementedError("exercise gp.2: write the kernel and this host function")
