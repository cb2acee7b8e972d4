"""Exercise radix.2 — stream compaction: flag, scan, scatter. See exercises/radix/README.md."""

import numpy as np  # noqa: F401
from numba import cuda  # noqa: F401

from gpulab.errors import DtypeError, ShapeError  # noqa: F401


def compact_greater(x, threshold):
    """The float32 elements of ``x`` greater than ``threshold``, in input order (any length)."""
    raise NotImplementedError("exercise radix.2: write the flag and scatter kernels and this host function")
