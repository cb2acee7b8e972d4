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


# ----------------------------------------------------------------------------- the CPU baseline


class CpuPlan:
    """numpy on the host, with the [`SortPlan`][gpulab.radix.host.SortPlan] interface: the seed's CPU baseline
    (the registry's `numpy` variant)."""

    backend = "cpu"

    def __init__(self, n: int, has_vals: bool, params: dict, stream=0):
        self.n, self.has_vals, self.params, self.passes_run = n, has_vals, dict(params), 0

    def sort(self, d_keys_in, d_vals_in=None, iota: bool = False):
        keys = to_host(d_keys_in)[: self.n]
        if not self.has_vals:
            return np.sort(keys, kind="stable"), None
        perm = np.argsort(keys, kind="stable")
        vals = perm.astype(np.uint32) if iota else to_host(d_vals_in)[perm]
        return keys[perm], vals

    def distinct(self, d_keys_in):
        out = np.unique(to_host(d_keys_in)[: self.n])
        return out, out.size


def cpu_factory(n: int, has_vals: bool, params: dict, stream=0) -> CpuPlan:
    """The `run` callable of the CPU baseline's registry entry."""
    return CpuPlan(n, has_vals, params)


cpu_factory.backend = "cpu"
