"""Exercise euler.2 — list ranking by pointer jumping (Wyllie). See exercises/euler/README.md."""

import numpy as np  # noqa: F401
from numba import cuda, int32, uint32  # noqa: F401


def list_rank(nxt, out=None):
    """``(rank, rounds)``: rank[i] = the number of elements before i in the list ``nxt``
    (int32, -1 after the last element); ``out`` (a device array) receives the ranks if given."""
    raise NotImplementedError("exercise euler.2: write the pointer-jumping kernels and the host loop")
