"""Exercise gp.2 — a block per individual (solution)."""

import numpy as np
from numba import cuda, float64, int64, uint8, uint64

from gpulab.errors import LimitError
from gpulab.gp.kernels_numba import register_eval, trade_day

BLOCK = 64
CODE = 256
U1, U2, UNF, UNB, UCP = np.uint64(1), np.uint64(2), np.uint64(17), np.uint64(14), np.uint64(15)
UBLOCK = np.uint64(BLOCK)


@cuda.jit
def block_kernel(code, offs, S, D, F, B, money):
    prog = cuda.shared.array(CODE, uint8)
    i = uint64(cuda.blockIdx.x)
    tid = uint64(cuda.threadIdx.x)
    a, mid, b = uint64(offs[U2 * i]), uint64(offs[U2 * i + U1]), uint64(offs[U2 * i + U2])
    k = tid
    while k < b - a:  # the block copies its individual's program once
        prog[k] = code[a + k]
        k += UBLOCK
    cuda.syncthreads()
    uS, uD = uint64(S), uint64(D)
    s = tid
    while s < uS:  # a block-stride loop over the stocks
        m, sh = float64(10000.0), int64(0)
        for d in range(uD):
            fbase = d * UNF * uS + s
            bbase = d * UNB * uS + s
            buy = register_eval(prog, uint64(0), mid - a, F, fbase, uS, B, bbase, uS)
            sell = register_eval(prog, mid - a, b - a, F, fbase, uS, B, bbase, uS)
            m, sh, act = trade_day(buy, sell, float64(F[fbase + UCP * uS]), m, sh)
        if sh > 0:
            m = m + sh * float64(F[((uD - U1) * UNF + UCP) * uS + s]) - 1.0
        money[i * uS + s] = m
        s += UBLOCK


def evaluate_block(population, market, out=None):
    P, S, D = len(population), market.stocks, market.days
    total = population.nodes.sum(axis=1)
    if (total > CODE).any():
        i = int(np.argmax(total > CODE))
        raise LimitError(f"individual {i}: {int(total[i])} opcodes, over CODE = {CODE}")
    if (population.bool_depth > 32).any():
        raise LimitError("a tree has more than 32 booleans on the stack (the bit-stack's limit)")
    F = cuda.to_device(market.floats("dis").ravel())
    B = cuda.to_device(market.bools("dis").ravel())
    d_out = out if out is not None else cuda.device_array(P * S, np.float64)
    block_kernel[P, BLOCK](cuda.to_device(population.code), cuda.to_device(population.offsets), np.int32(S),
                           np.int32(D), F, B, d_out)
    return d_out.copy_to_host().reshape(P, S)
