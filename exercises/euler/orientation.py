"""Exercise euler.3 — a balanced orientation of an undirected Eulerian graph. See exercises/euler/README.md."""

import numpy as np  # noqa: F401
from numba import cuda, uint32  # noqa: F401

from gpulab.euler.reference import cycle_labels  # noqa: F401


def half_edge_order(src, dst):
    """The half-edges (2e: e at src, 2e + 1: e at dst) sorted by vertex, stably (given)."""
    keys = np.empty(2 * len(src), np.int64)
    keys[0::2], keys[1::2] = src, dst
    return np.argsort(keys, kind="stable").astype(np.int32)


def orientation(src, dst, keep_out=None):
    """bool array: True where edge e keeps the direction src -> dst. ``keep_out`` (an int32
    device array of len(src)) receives the kernel's output if given."""
    raise NotImplementedError("exercise euler.3: write the dart_succ and orient kernels")
