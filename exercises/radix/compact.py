"""Exercise radix.2 — stream compaction: flag, scan, scatter.

Write `compact_greater(x, threshold)`: the elements of a float32 array greater than
`threshold`, in input order, for **any length**: flag (1 where `x[i] > threshold`), exclusive
scan of the flags (use `gpulab.radix.host.ScanPlan`, the chapter's multi-block scan), scatter
`x[i]` to `out[scan[i]]` where flagged. The count is `scan[n-1] + flag[n-1]`. This is the
split primitive with only one side kept — and the last step of the chapter's `distinct`.
"""

import numpy as np  # noqa: F401
from numba import cuda  # noqa: F401

from gpulab.errors import DtypeError, ShapeError  # noqa: F401


def compact_greater(x, threshold):
    """The float32 elements of ``x`` greater than ``threshold``, in input order (any length)."""
    raise NotImplementedError("exercise radix.2: write the flag and scatter kernels and this host function")
