"""Exercise euler.3 — a balanced orientation of an undirected Eulerian graph (solution)."""

import numpy as np
from numba import cuda, uint32

from gpulab.euler.reference import cycle_labels


def half_edge_order(src, dst):
    """The half-edges (2e: e at src, 2e + 1: e at dst) sorted by vertex, stably (given)."""
    keys = np.empty(2 * len(src), np.int64)
    keys[0::2], keys[1::2] = src, dst
    return np.argsort(keys, kind="stable").astype(np.int32)


@cuda.jit
def dart_succ(order, m, succ):
    j = cuda.grid(1)
    if j < m:
        h0 = order[2 * j]
        h1 = order[2 * j + 1]
        succ[uint32(h0 ^ 1)] = h1
        succ[uint32(h1 ^ 1)] = h0


@cuda.jit
def orient(label, n, keep):
    e = cuda.grid(1)
    if e < n:
        keep[e] = 1 if label[2 * e] < label[2 * e + 1] else 0


def orientation(src, dst, keep_out=None):
    n = len(src)
    if n == 0:
        return np.zeros(0, bool)
    order = half_edge_order(src, dst)
    succ = cuda.device_array(2 * n, np.int32)
    dart_succ[max(1, -(-n // 128)), 128](cuda.to_device(order), np.int32(n), succ)
    label = cycle_labels(succ.copy_to_host()).astype(np.int32)
    keep = keep_out if keep_out is not None else cuda.device_array(n, np.int32)
    orient[max(1, -(-n // 128)), 128](cuda.to_device(label), np.int32(n), keep)
    return keep.copy_to_host()[:n].astype(bool)
