"""Exercise euler.1 — an Euler path from a circuit with one added edge (solution)."""

import numpy as np
from numba import cuda, uint32

import gpulab.euler as eu


@cuda.jit
def rotate(circ, n, k, out):
    """out[i] = circ[(k + 1 + i) mod (n + 1)]: start right after the extra edge, drop it."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        out[i] = circ[uint32((k + 1 + i) % (n + 1))]
        i += stride


def unbalanced(src, dst):
    src, dst = np.asarray(src), np.asarray(dst)
    V = int(max(src.max(), dst.max())) + 1
    diff = np.bincount(src, minlength=V) - np.bincount(dst, minlength=V)
    starts, ends = np.nonzero(diff == 1)[0], np.nonzero(diff == -1)[0]
    if not diff.any():
        raise eu.NotEulerian("every vertex is balanced: the graph has an Euler circuit, use euler_circuit")
    if starts.size != 1 or ends.size != 1 or np.count_nonzero(diff) != 2:
        raise eu.NotEulerian(f"{np.count_nonzero(diff)} unbalanced vertices: an Euler path needs exactly one "
                             "with out = in + 1 and one with in = out + 1")
    return int(starts[0]), int(ends[0])


def euler_path(src, dst):
    src, dst = np.asarray(src, np.int32), np.asarray(dst, np.int32)
    s, t = unbalanced(src, dst)
    n = src.size
    circ = eu.euler_circuit(np.append(src, t), np.append(dst, s))
    k = int(np.nonzero(circ == n)[0][0])
    out = cuda.device_array(n, np.int32)
    rotate[max(1, -(-n // 128)), 128](cuda.to_device(circ), np.int32(n), np.int32(k), out)
    return out.copy_to_host()
