"""Exercise radix.1 — segmented inclusive scan in one block. See exercises/radix/README.md."""

import numpy as np  # noqa: F401
from numba import cuda, int32  # noqa: F401

from gpulab.errors import LimitError, ShapeError  # noqa: F401

MAX_N = 1024


def segmented_scan(values, heads, out=None):
    """Inclusive scan of int32 ``values`` restarting where ``heads`` is 1; ``len(values) <= MAX_N``.

    ``out``, if given, is an int32 device array of the same length to write into.
    """
    raise NotImplementedError("exercise radix.1: write the kernel and this host function")
