"""Exercise euler.2 — list ranking by pointer jumping (solution)."""

import numpy as np
from numba import cuda, uint32


@cuda.jit
def init(nxt_in, n, nxt, d):
    i = cuda.grid(1)
    if i < n:
        nxt[i] = nxt_in[i]
        d[i] = 1


@cuda.jit
def jump(nxt, d, nxt2, d2, n, changed):
    i = cuda.grid(1)
    if i < n:
        x = nxt[i]
        if x >= 0:
            d2[i] = d[i] + d[uint32(x)]
            nxt2[i] = nxt[uint32(x)]
            changed[0] = 1
        else:
            d2[i] = d[i]
            nxt2[i] = -1


@cuda.jit
def finish(d, n, rank):
    i = cuda.grid(1)
    if i < n:
        rank[i] = n - d[i]


def list_rank(nxt, out=None):
    nxt = np.ascontiguousarray(nxt, dtype=np.int32)
    n = nxt.size
    rank = out if out is not None else cuda.device_array(max(n, 1), np.int32)
    if n == 0:
        return np.zeros(0, np.int32), 0
    grid, block = max(1, -(-n // 128)), 128
    bufs = [(cuda.device_array(n, np.int32), cuda.device_array(n, np.int32)) for _ in range(2)]
    init[grid, block](cuda.to_device(nxt), np.int32(n), *bufs[0])
    changed = cuda.device_array(1, np.int32)
    rounds = 0
    while True:
        changed.copy_to_device(np.zeros(1, np.int32))
        (a, b), (c, e) = bufs[rounds % 2], bufs[(rounds + 1) % 2]
        jump[grid, block](a, b, c, e, np.int32(n), changed)
        rounds += 1
        if changed.copy_to_host()[0] == 0:
            break
    finish[grid, block](bufs[rounds % 2][1], np.int32(n), rank)
    return rank.copy_to_host()[:n], rounds
