"""Exercise radix.3 — sort (key, id, weight) records by key. See exercises/radix/README.md."""

import numpy as np  # noqa: F401
from numba import cuda  # noqa: F401

from gpulab.errors import DtypeError  # noqa: F401

RECORD = np.dtype([("key", np.uint32), ("id", np.uint32), ("weight", np.float32)])


def sort_records(records):
    """``records`` (dtype RECORD) sorted stably by ``key``, computed on the GPU."""
    raise NotImplementedError("exercise radix.3: argsort the keys, then write a gather kernel")
