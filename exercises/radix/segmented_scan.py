"""Exercise radix.1 — segmented inclusive scan in one block.

Write `segmented_scan(values, heads, out=None)`: the inclusive prefix sum of int32 `values`
that restarts wherever `heads[i] == 1` (and at `i = 0`), in **one block** of at most
`MAX_N = 1024` threads, in shared memory. Hillis–Steele works on (flag, value) pairs with the
operator `(f1, v1) ⊕ (f2, v2) = (f1 | f2, v2 if f2 else v1 + v2)`: it is associative, so the
log-step scan of the chapter applies unchanged. Raise `LimitError` naming 1024 for longer input,
`ShapeError` when the lengths differ.
"""

import numpy as np  # noqa: F401
from numba import cuda, int32  # noqa: F401

from gpulab.errors import LimitError, ShapeError  # noqa: F401

MAX_N = 1024


def segmented_scan(values, heads, out=None):
    """Inclusive scan of int32 ``values`` restarting where ``heads`` is 1; ``len(values) <= MAX_N``.

    ``out``, if given, is an int32 device array of the same length to write into.
    """
    raise NotImplementedError("exercise radix.1: write the kernel and this host function")
