"""Exercise subset.3 — a block-level argmin reduction. See exercises/subset/README.md."""

import numpy as np  # noqa: F401
from numba import cuda  # noqa: F401

from gpulab.errors import LimitError  # noqa: F401


def block_argmin(values, block=64):
    """Per block of ``block`` consecutive values: (minimum, index of its first occurrence)."""
    raise NotImplementedError("exercise subset.3: write the reduction kernel and this host function")
