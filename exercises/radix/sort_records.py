"""Exercise radix.3 — sort (key, id, weight) records by key.

Write `sort_records(records)`: `records` is a numpy structured array with fields
`key` (uint32), `id` (uint32) and `weight` (float32). Return it sorted by `key`, stably, with
the whole record moving. Use `gpulab.radix.argsort` (or a `SortPlan` with `iota=True`) for the
permutation on the GPU and write a **gather kernel** that moves each field:
`out_field[i] = field[perm[i]]`. (Sorting 12-byte records directly would move 3× the bytes per
pass; sorting 4-byte keys with 4-byte positions and gathering once is what libraries do.)
"""

import numpy as np  # noqa: F401
from numba import cuda  # noqa: F401

from gpulab.errors import DtypeError  # noqa: F401

RECORD = np.dtype([("key", np.uint32), ("id", np.uint32), ("weight", np.float32)])


def sort_records(records):
    """``records`` (dtype RECORD) sorted stably by ``key``, computed on the GPU."""
    raise NotImplementedError("exercise radix.3: argsort the keys, then write a gather kernel")
