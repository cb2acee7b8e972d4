"""Exercise subset.3 — a block-level argmin reduction.

Write `block_argmin(values, block=64)`: a numba kernel where each block of `block` threads
reduces its `block` consecutive entries of `values` (float64) to the minimum and its index
(ties: the lowest index) with a shared-memory tree reduction, and the host returns the arrays
`(block_min, block_argmin)` (one entry per block; the last block may be partial). Raise
`LimitError` when `block` is not a power of two or exceeds 1024.

The grader also *traces* your kernel on the simulator (`gpulab.trace`) at 2 blocks of 64 and a
partial one, and requires every line that reads or writes shared memory to cost **at most 2
wavefronts per warp-wide request** — what a warp of 8-byte (float64, int64) accesses costs
without a bank conflict, each element covering two of the 32 banks. Sequential addressing
(thread `tid` combines `s[tid]` with `s[tid + step]`, `step` halving) meets it; interleaved
addressing (`s[2 * step * tid]` with `s[2 * step * tid + step]`) sends the lanes' words to a
few banks and does not. (The traced test runs only on the simulator; on a GPU it is skipped.)
"""

import numpy as np  # noqa: F401
from numba import cuda  # noqa: F401

from gpulab.errors import LimitError  # noqa: F401


def block_argmin(values, block=64):
    """Per block of ``block`` consecutive values: (minimum, index of its first occurrence)."""
    raise NotImplementedError("exercise subset.3: write the reduction kernel and this host function")
