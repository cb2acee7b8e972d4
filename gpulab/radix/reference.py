"""CPU references for chapter 4: numpy's stable sort, stable argsort, unique and cumsum.

They run on the host: a device array is copied there first, and the result is numpy.
"""

import numpy as np

from gpulab.arrays import to_host


def sort_reference(keys: np.ndarray) -> np.ndarray:
    return np.sort(to_host(keys), kind="stable")


def argsort_reference(keys: np.ndarray) -> np.ndarray:
    return np.argsort(to_host(keys), kind="stable")


def distinct_reference(keys: np.ndarray) -> np.ndarray:
    return np.unique(to_host(keys))


def scan_reference(x: np.ndarray, inclusive: bool = False) -> np.ndarray:
    """Prefix sums with the wrap-around of 32-bit integers (what the GPU computes)."""
    x = np.asarray(to_host(x))
    inc = np.cumsum(x, dtype=x.dtype)
    if inclusive or x.size == 0:
        return inc
    return np.concatenate([np.zeros(1, x.dtype), inc[:-1]])


def split_reference(keys: np.ndarray, bit: int) -> np.ndarray:
    """Stable partition by one bit: keys with the bit clear first, then those with it set."""
    keys = to_host(keys)
    b = (keys.astype(np.uint32) >> np.uint32(bit)) & 1
    return np.concatenate([keys[b == 0], keys[b == 1]])
