r"""The CPU peers, compiled with numba: the benchmarks' baseline and the bit-sliced CPU version.

* `interpret` — Algorithm 2 per (individual, stock), a small float32 stack, the days in
  order: exactly the interpreter the GPU variants run, on every core (``prange`` over the
  individual × stock pairs). This is the benchmarks' peer.
* `interpret_bitsliced` — the bit-sliced evaluation (64 days per word operation,
  every comparison one precomputed mask, each program decoded once) and the trading loop that jumps from one signal
  change to the next: the CPU version of the ``bitsliced`` GPU variant, so the book can ask
  whether the GPU still wins once the CPU uses the same trick.
* `fitness` — the per-individual mean over stocks, summed in stock order.

All share `gpulab.gp.trading.trade_day` and `gpulab.gp.trading.liquidate`, compiled here with ``numba.njit``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange
from numba.cpython.unsafe.numbers import trailing_zeros

from gpulab.gp import opcodes as oc
from gpulab.gp import trading
from gpulab.gp.market import NMASK, NPAIR

trade_day = njit(inline="always", cache=True)(trading.trade_day)
liquidate = njit(inline="always", cache=True)(trading.liquidate)

NF, NT, CP = oc.NF, oc.NT, oc.OP_CP
AND, OR, NOT, LT = oc.OP_AND, oc.OP_OR, oc.OP_NOT, oc.OP_LT
E_AND, E_OR = NMASK, NMASK + 1  # decoded entries: 0 .. NMASK-1 a mask, then AND, OR, NOT



@njit(inline="always")
def _eval_tree(code, a, b, floats, bools, s, d, stack):
    sp = 0
    for pc in range(a, b):
        op = np.int32(code[pc])
        if op < NF:
            stack[sp] = floats[s, op, d]
            sp += 1
        elif op < NT:
            stack[sp] = np.float32(bools[s, op - NF, d])
            sp += 1
        elif op == NOT:
            stack[sp - 1] = np.float32(stack[sp - 1] == 0)
        else:
            r = stack[sp - 1]
            l = stack[sp - 2]
            sp -= 1
            if op == AND:
                v = (l != 0) and (r != 0)
            elif op == OR:
                v = (l != 0) or (r != 0)
            elif op == LT:
                v = l < r
            else:
                v = l > r
            stack[sp - 1] = np.float32(v)
    return stack[0] != 0


# --8<-- [start:interpret]
@njit(parallel=True, cache=True)
def interpret(code, offsets, floats, bools, stack_depth, money, trace, trace_on):
    """Algorithm 2 + the trading loop for every (individual, stock), in parallel over pairs.
    ``floats``/``bools``: ``[S, 17, D]`` / ``[S, 14, D]``; ``money``: float64 ``[P*S]``;
    ``trace``: uint8 ``[P*S, D]`` written when ``trace_on``. Returns the overflow count."""
    S, D = floats.shape[0], floats.shape[2]
    P = (offsets.size - 1) // 2
    overflow = 0
    for t in prange(P * S):
        i, s = t // S, t % S
        stack = np.empty(stack_depth, np.float32)
        m, sh = 10000.0, 0
        for d in range(D):
            buy = _eval_tree(code, offsets[2 * i], offsets[2 * i + 1], floats, bools, s, d, stack)
            sell = _eval_tree(code, offsets[2 * i + 1], offsets[2 * i + 2], floats, bools, s, d, stack)
            m, sh, act = trade_day(buy, sell, np.float64(floats[s, CP, d]), m, sh)
            if act == 4:
                overflow += 1
            if trace_on:
                trace[t, d] = np.uint8(buy + 2 * sell + 4 * (act & 3))
        m = liquidate(m, sh, np.float64(floats[s, CP, D - 1]))
        money[t] = m
    return overflow
# --8<-- [end:interpret]


@njit(inline="always")
def _decode(code, a, b, out, n):
    """RPN ``code[a:b]`` → mask-program entries at ``out[n:]`` (as the GPU's ``decode_tree``):
    ``x y <`` → mask ``x*17 + y`` (``x y >`` → ``y*17 + x``), boolean terminal ``k`` → mask
    ``289 + k``, AND/OR/NOT → 303/304/305. Returns the end."""
    pc = a
    while pc < b:
        op = np.int32(code[pc])
        if op < NF:
            rhs = np.int32(code[pc + 1])
            out[n] = op * NF + rhs if code[pc + 2] == LT else rhs * NF + op
            pc += 3
        elif op < NT:
            out[n] = NPAIR + (op - NF)
            pc += 1
        else:
            out[n] = op + (NMASK - NT)  # AND, OR, NOT: the entries after the masks
            pc += 1
        n += 1
    return n


@njit(inline="always")
def _eval_bits(prog, a, b, masks, s, w, stack):
    top = np.uint64(0)
    sp = 0
    for pc in range(a, b):
        e = prog[pc]
        if e < NMASK:
            stack[sp] = top  # spill the old top (unused below position 0)
            sp += 1
            top = masks[s, w, e]
        elif e == E_AND:
            sp -= 1
            top = top & stack[sp]
        elif e == E_OR:
            sp -= 1
            top = top | stack[sp]
        else:
            top = ~top
    return top


# --8<-- [start:interpret_bitsliced]
@njit(parallel=True, cache=True)
def interpret_bitsliced(code, offsets, masks, close, days, stack_depth, money, trace, trace_on):
    """The bit-sliced evaluation: ``masks`` uint64 ``[S, W, 303]``, ``close`` float32 ``[S, D]``.
    Each individual's program is decoded once into mask-program entries (as a GPU warp does);
    each word op then evaluates 64 days; the trading loop jumps to the next day with an
    executable signal (buy ∧ ¬sell when flat, sell ∧ ¬buy when holding) with a
    count-trailing-zeros. Parallel over individuals."""
    S, W = masks.shape[0], masks.shape[1]
    P = (offsets.size - 1) // 2
    overflow = 0
    one = np.uint64(1)
    for i in prange(P):
        prog = np.empty(offsets[2 * i + 2] - offsets[2 * i], np.int32)
        nbuy = _decode(code, offsets[2 * i], offsets[2 * i + 1], prog, 0)
        nend = _decode(code, offsets[2 * i + 1], offsets[2 * i + 2], prog, nbuy)
        stack = np.empty(stack_depth + 1, np.uint64)
        for s in range(S):
            t = i * S + s
            m, sh = 10000.0, 0
            for w in range(W):
                bw = _eval_bits(prog, 0, nbuy, masks, s, w, stack)
                sw = _eval_bits(prog, nbuy, nend, masks, s, w, stack)
                left = days - 64 * w
                valid = ~np.uint64(0) if left >= 64 else (one << np.uint64(left)) - one
                bw &= valid  # NOT sets the bits past the last day: clear them
                sw &= valid
                if trace_on:
                    for j in range(min(64, left)):
                        trace[t, 64 * w + j] = np.uint8(((bw >> np.uint64(j)) & one) + 2 * ((sw >> np.uint64(j)) & one))
                eb = bw & ~sw  # days a buy would execute (when flat)
                es = sw & ~bw  # days a sell would execute (when holding)
                while True:
                    pending = es if sh > 0 else eb
                    if pending == 0:
                        break
                    j = trailing_zeros(pending)
                    d = 64 * w + j
                    m, sh, act = trade_day(sh == 0, sh > 0, np.float64(close[s, d]), m, sh)
                    if act == 4:
                        overflow += 1
                    if trace_on:
                        trace[t, d] |= np.uint8(4 * (act & 3))
                    bit = one << np.uint64(j)
                    later = ~((bit - one) | bit)  # the days after day j
                    eb &= later
                    es &= later
            m = liquidate(m, sh, np.float64(close[s, days - 1]))
            money[t] = m
    return overflow
# --8<-- [end:interpret_bitsliced]


# --8<-- [start:fitness]
@njit(parallel=True, cache=True)
def fitness(money, bh, P, S, out):
    """``out[i]`` = mean over stocks of (ROI − buy-and-hold ROI), summed in stock order."""
    for i in prange(P):
        acc = 0.0
        for s in range(S):
            acc += (money[i * S + s] - 10000.0) / 10000.0 - bh[s]
        out[i] = acc / S
# --8<-- [end:fitness]
