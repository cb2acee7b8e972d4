r"""Chapter 3 kernels in numba.cuda: the RPN interpreter, from global-memory stacks to bit-slicing.

Every kernel evaluates individuals × stocks: per (individual, stock) it walks the evaluation
days in order, evaluates the buy and the sell tree on that day's indicators, and applies the
decision matrix (:func:`gpulab.gp.trading.trade_day`, compiled here as a device function). It
writes the money left after the last day, ``money[i*S + s]`` (float64), and, when
``trace_on``, a trace byte per day (signals and actions) that the tests compare with the
reference bit for bit. A buy that would reach 2**29 shares sets ``flags[0]``.

Compile-time sizes (stack depth, warps per block, program bytes per warp) are closure
constants of small cached factories, as in the other chapters; the host passes the same values
to ``kernels.cu`` as ``-D`` macros. Every index is computed in ``uint64`` (numba indexes like
NumPy: a signed index costs a compare and a select per load).

Indicator layouts: ``F``/``B`` are the float32 / uint8 terminals, flattened, either
stock/indicator/day (``thread_global``) or day/indicator/stock (all others).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import cuda, float32, float64, int64, uint8, uint32, uint64

from gpulab import device
from gpulab.gp import trading

# numba types integer literals as int64, and uint64 op int64 is float64: every constant that
# meets an index is a uint64.
U0, U1, U2, U32 = np.uint64(0), np.uint64(1), np.uint64(2), np.uint64(32)
UNF, UNB, UCP = np.uint64(17), np.uint64(14), np.uint64(15)
UNMASK = np.uint64(303)
FULL = np.uint64(0xFFFFFFFF)
ONES = np.uint32(0xFFFFFFFE)

trade_day = cuda.jit(device=True)(trading.trade_day)

CONST_BYTES = 65536  # __constant__ unsigned char gp_programs[65536]: all of constant memory
CONST_SYMBOL = "gp_programs"


# ----------------------------------------------------------------------------- constant memory
#
# numba's cuda.const.array_like bakes an array into the kernel when it is compiled: the
# population changes every generation (and a population is evaluated in batches), so that
# would mean one compilation per batch. Instead a tiny intrinsic declares the module-level
# symbol ``gp_programs`` in the constant address space (what ``__constant__`` does in CUDA C)
# and loads bytes from it; the host copies each batch into that symbol before the launch.
# On the simulator the "symbol" is a numpy array the host fills.

if device.on_simulator():
    SIM_CONST = np.zeros(CONST_BYTES, np.uint8)

    def const_byte(i):
        return SIM_CONST[i]
else:
    from llvmlite import ir
    from numba import types
    from numba.cuda.extending import intrinsic

    @intrinsic
    def const_byte(typingctx, idx):
        """``gp_programs[idx]``: one byte of the population's constant-memory batch."""
        sig = types.uint8(idx)

        def codegen(context, builder, signature, args):
            mod = builder.module
            gv = mod.globals.get(CONST_SYMBOL)
            if gv is None:
                arrty = ir.ArrayType(ir.IntType(8), CONST_BYTES)
                gv = ir.GlobalVariable(mod, arrty, CONST_SYMBOL, addrspace=4)  # 4: constant
                gv.initializer = ir.Constant(arrty, None)
                gv.global_constant = True
                gv.align = 16
            (i,) = args
            i64 = builder.zext(i, ir.IntType(64)) if i.type.width < 64 else i
            ptr = builder.gep(gv, [ir.Constant(ir.IntType(64), 0), i64], inbounds=True)
            return builder.load(ptr)

        return sig, codegen


# ----------------------------------------------------------------------------- the interpreter


# --8<-- [start:stack_eval]
@cuda.jit(device=True, inline=True)
def stack_eval(code, a, b, F, fbase, fstride, B, bbase, bstride, stack, sbase, sstride):
    """Algorithm 2 for one stock-day: RPN ``code[a:b]``, float terminal ``k`` at
    ``F[fbase + k*fstride]``, boolean ``k`` at ``B[bbase + k*bstride]``, stack slot ``j`` at
    ``stack[sbase + j*sstride]`` (float32; booleans as 0.0 / 1.0). Returns the tree's value."""
    sp = U0
    pc = a
    while pc < b:
        op = code[pc]
        pc += U1
        if op < 17:  # float terminal
            stack[sbase + sp * sstride] = F[fbase + uint64(op) * fstride]
            sp += U1
        elif op < 31:  # boolean terminal
            stack[sbase + sp * sstride] = float32(B[bbase + uint64(op - 17) * bstride])
            sp += U1
        elif op == 33:  # NOT
            k = sbase + (sp - U1) * sstride
            stack[k] = float32(stack[k] == float32(0))
        else:  # AND, OR, <, >: the right argument is on top
            r = stack[sbase + (sp - U1) * sstride]
            sp -= U1
            k = sbase + (sp - U1) * sstride
            l = stack[k]
            if op == 31:
                v = (l != float32(0)) and (r != float32(0))
            elif op == 32:
                v = (l != float32(0)) or (r != float32(0))
            elif op == 34:
                v = l < r
            else:
                v = l > r
            stack[k] = float32(v)
    return stack[sbase] != float32(0)
# --8<-- [end:stack_eval]


@cuda.jit(device=True, inline=True)
def _trace_byte(buy, sell, act):
    return uint8(int64(buy) + 2 * int64(sell) + 4 * (act & 3))


# --8<-- [start:thread_global]
@lru_cache(maxsize=None)
def thread_global_kernel(STACK: int):
    """One thread per (individual, stock), ``t = i*S + s``; programs, stacks (each thread's
    contiguous: ``stack[t*STACK + j]``) and indicators (stock/indicator/day) in global memory."""
    UST = np.uint64(STACK)

    @cuda.jit
    def gp_thread_global(code, offs, P, S, D, F, B, stack, money, trace, trace_on, flags):
        t = uint64(cuda.blockIdx.x) * uint64(cuda.blockDim.x) + uint64(cuda.threadIdx.x)
        uS, uD = uint64(S), uint64(D)
        if t >= uint64(P) * uS:
            return
        i, s = t // uS, t % uS
        a, mid, b = uint64(offs[U2 * i]), uint64(offs[U2 * i + U1]), uint64(offs[U2 * i + U2])
        m, sh = float64(10000.0), int64(0)
        for d in range(uD):
            fbase = s * UNF * uD + d  # F[s, k, d] = F[(s*17 + k)*D + d]
            bbase = s * UNB * uD + d
            buy = stack_eval(code, a, mid, F, fbase, uD, B, bbase, uD, stack, t * UST, U1)
            sell = stack_eval(code, mid, b, F, fbase, uD, B, bbase, uD, stack, t * UST, U1)
            m, sh, act = trade_day(buy, sell, float64(F[fbase + UCP * uD]), m, sh)
            if act == 4:
                flags[0] = 1
            if trace_on:
                trace[t * uD + d] = _trace_byte(buy, sell, act)
        if sh > 0:
            m = m + sh * float64(F[s * UNF * uD + UCP * uD + uD - U1]) - 1.0
        money[t] = m

    return gp_thread_global
# --8<-- [end:thread_global]


@cuda.jit(device=True, inline=True)
def warp_task(S):
    """(global thread id, individual, stock) of a thread when one warp evaluates one
    individual on 32 consecutive stocks; stocks beyond S are idle lanes."""
    t = uint64(cuda.blockIdx.x) * uint64(cuda.blockDim.x) + uint64(cuda.threadIdx.x)
    groups = (uint64(S) + uint64(31)) // U32
    warp = t // U32
    return t, warp // groups, (warp % groups) * U32 + (t % U32)


# --8<-- [start:coalesced]
@lru_cache(maxsize=None)
def coalesced_kernel(STACK: int):
    """A warp = one individual × 32 consecutive stocks (no divergence in the interpreter);
    indicators day/indicator/stock and stacks interleaved depth-major (``stack[j*T + t]``),
    so a warp's 32 loads and stores of the same kind touch 32 consecutive words."""

    @cuda.jit
    def gp_coalesced(code, offs, P, S, D, F, B, stack, money, trace, trace_on, flags):
        t, i, s = warp_task(S)
        uS, uD = uint64(S), uint64(D)
        if i >= uint64(P) or s >= uS:
            return  # idle lanes of the last group, and the grid's tail
        T = uint64(cuda.gridDim.x) * uint64(cuda.blockDim.x)
        a, mid, b = uint64(offs[U2 * i]), uint64(offs[U2 * i + U1]), uint64(offs[U2 * i + U2])
        m, sh = float64(10000.0), int64(0)
        for d in range(uD):
            fbase = d * UNF * uS + s  # F[d, k, s] = F[(d*17 + k)*S + s]
            bbase = d * UNB * uS + s
            buy = stack_eval(code, a, mid, F, fbase, uS, B, bbase, uS, stack, t, T)
            sell = stack_eval(code, mid, b, F, fbase, uS, B, bbase, uS, stack, t, T)
            m, sh, act = trade_day(buy, sell, float64(F[fbase + UCP * uS]), m, sh)
            if act == 4:
                flags[0] = 1
            if trace_on:
                trace[(i * uS + s) * uD + d] = _trace_byte(buy, sell, act)
        if sh > 0:
            m = m + sh * float64(F[((uD - U1) * UNF + UCP) * uS + s]) - 1.0
        money[i * uS + s] = m

    return gp_coalesced
# --8<-- [end:coalesced]


# --8<-- [start:constant]
@cuda.jit(device=True, inline=True)
def const_u16(k):
    return uint64(const_byte(k)) | (uint64(const_byte(k + U1)) << uint64(8))


@cuda.jit(device=True, inline=True)
def const_eval(a, b, F, fbase, fstride, B, bbase, bstride, stack, sbase, sstride):
    """:func:`stack_eval` reading the program from constant memory (``gp_programs``)."""
    sp = U0
    pc = a
    while pc < b:
        op = const_byte(pc)
        pc += U1
        if op < 17:
            stack[sbase + sp * sstride] = F[fbase + uint64(op) * fstride]
            sp += U1
        elif op < 31:
            stack[sbase + sp * sstride] = float32(B[bbase + uint64(op - 17) * bstride])
            sp += U1
        elif op == 33:
            k = sbase + (sp - U1) * sstride
            stack[k] = float32(stack[k] == float32(0))
        else:
            r = stack[sbase + (sp - U1) * sstride]
            sp -= U1
            k = sbase + (sp - U1) * sstride
            l = stack[k]
            if op == 31:
                v = (l != float32(0)) and (r != float32(0))
            elif op == 32:
                v = (l != float32(0)) or (r != float32(0))
            elif op == 34:
                v = l < r
            else:
                v = l > r
            stack[k] = float32(v)
    return stack[sbase] != float32(0)


@lru_cache(maxsize=None)
def constant_kernel(STACK: int):
    """``coalesced`` with the programs of a batch of individuals in constant memory:
    ``gp_programs`` = 2·nb + 1 uint16 tree offsets (relative to the code), then the code.
    Every lane of a warp reads the same opcode: one broadcast from the constant cache."""

    @cuda.jit
    def gp_constant(i0, nb, S, D, F, B, stack, money, trace, trace_on, flags):
        t, j, s = warp_task(S)  # j: the individual within the batch
        uS, uD = uint64(S), uint64(D)
        if j >= uint64(nb) or s >= uS:
            return
        T = uint64(cuda.gridDim.x) * uint64(cuda.blockDim.x)
        i = uint64(i0) + j
        code0 = U2 * (U2 * uint64(nb) + U1)  # the code starts after the offsets
        a = code0 + const_u16(U2 * (U2 * j))
        mid = code0 + const_u16(U2 * (U2 * j + U1))
        b = code0 + const_u16(U2 * (U2 * j + U2))
        m, sh = float64(10000.0), int64(0)
        for d in range(uD):
            fbase = d * UNF * uS + s
            bbase = d * UNB * uS + s
            buy = const_eval(a, mid, F, fbase, uS, B, bbase, uS, stack, t, T)
            sell = const_eval(mid, b, F, fbase, uS, B, bbase, uS, stack, t, T)
            m, sh, act = trade_day(buy, sell, float64(F[fbase + UCP * uS]), m, sh)
            if act == 4:
                flags[0] = 1
            if trace_on:
                trace[(i * uS + s) * uD + d] = _trace_byte(buy, sell, act)
        if sh > 0:
            m = m + sh * float64(F[((uD - U1) * UNF + UCP) * uS + s]) - 1.0
        money[i * uS + s] = m

    return gp_constant
# --8<-- [end:constant]


@cuda.jit(device=True, inline=True)
def load_program(code, offs, P, i, scode, w, lane):
    """The warp's lanes copy individual ``i``'s two trees into ``scode[w, :]``; returns the
    (start of sell, end) positions in that buffer."""
    if i >= uint64(P):
        return U0, U0
    a, mid, b = uint64(offs[U2 * i]), uint64(offs[U2 * i + U1]), uint64(offs[U2 * i + U2])
    k = lane
    while k < b - a:
        scode[w, k] = code[a + k]
        k += U32
    return mid - a, b - a


# --8<-- [start:shared]
@lru_cache(maxsize=None)
def shared_kernel(STACK: int, WPB: int, CODE: int):
    """``coalesced`` with each warp's program (both trees, at most CODE bytes) copied into
    shared memory once, and the stacks in shared memory (``stack[j, lane of the block]``:
    32 lanes hit 32 banks)."""
    THREADS = WPB * 32
    SLOTS = STACK * THREADS  # shared-array shapes must be constants, not expressions

    @cuda.jit
    def gp_shared(code, offs, P, S, D, F, B, money, trace, trace_on, flags):
        scode = cuda.shared.array((WPB, CODE), uint8)
        sstack = cuda.shared.array(SLOTS, float32)
        t, i, s = warp_task(S)
        w = uint64(cuda.threadIdx.x) // U32
        mid, end = load_program(code, offs, P, i, scode, w, t % U32)
        cuda.syncthreads()
        uS, uD = uint64(S), uint64(D)
        if i >= uint64(P) or s >= uS:
            return
        prog = scode[w]
        tb = uint64(cuda.threadIdx.x)
        m, sh = float64(10000.0), int64(0)
        for d in range(uD):
            fbase = d * UNF * uS + s
            bbase = d * UNB * uS + s
            buy = stack_eval(prog, U0, mid, F, fbase, uS, B, bbase, uS, sstack, tb, np.uint64(THREADS))
            sell = stack_eval(prog, mid, end, F, fbase, uS, B, bbase, uS, sstack, tb, np.uint64(THREADS))
            m, sh, act = trade_day(buy, sell, float64(F[fbase + UCP * uS]), m, sh)
            if act == 4:
                flags[0] = 1
            if trace_on:
                trace[(i * uS + s) * uD + d] = _trace_byte(buy, sell, act)
        if sh > 0:
            m = m + sh * float64(F[((uD - U1) * UNF + UCP) * uS + s]) - 1.0
        money[i * uS + s] = m

    return gp_shared
# --8<-- [end:shared]


# --8<-- [start:register_eval]
@cuda.jit(device=True, inline=True)
def register_eval(code, a, b, F, fbase, fstride, B, bbase, bstride):
    """Algorithm 2 with no memory stack. Typing guarantees that floats only meet in ``<`` and
    ``>``, right after their two terminals: two registers hold them (``f0``, ``f1``). Every
    other stack entry is a boolean: a bit of ``bits`` (push ``bits = bits << 1 | v``, the top
    is bit 0). Depth <= 32 booleans, checked on the host."""
    bits = uint32(0)
    f0 = float32(0)
    f1 = float32(0)
    pc = a
    while pc < b:
        op = code[pc]
        pc += U1
        if op < 17:
            f0 = f1
            f1 = F[fbase + uint64(op) * fstride]
        elif op < 31:
            bits = uint32((bits << uint32(1)) | uint32(B[bbase + uint64(op - 17) * bstride]))
        elif op == 31:  # AND: pop the top, clear the new top unless the popped bit was 1
            top = uint32(bits & uint32(1))
            bits = uint32((bits >> uint32(1)) & (ONES | top))
        elif op == 32:  # OR
            top = uint32(bits & uint32(1))
            bits = uint32((bits >> uint32(1)) | top)
        elif op == 33:  # NOT
            bits = uint32(bits ^ uint32(1))
        elif op == 34:
            bits = uint32((bits << uint32(1)) | uint32(f0 < f1))
        else:
            bits = uint32((bits << uint32(1)) | uint32(f0 > f1))
    return (bits & uint32(1)) != uint32(0)
# --8<-- [end:register_eval]


# --8<-- [start:register]
@lru_cache(maxsize=None)
def register_kernel(WPB: int, CODE: int):
    """``shared``'s program buffer, with the stack in registers (:func:`register_eval`)."""

    @cuda.jit
    def gp_register(code, offs, P, S, D, F, B, money, trace, trace_on, flags):
        scode = cuda.shared.array((WPB, CODE), uint8)
        t, i, s = warp_task(S)
        w = uint64(cuda.threadIdx.x) // U32
        mid, end = load_program(code, offs, P, i, scode, w, t % U32)
        cuda.syncthreads()
        uS, uD = uint64(S), uint64(D)
        if i >= uint64(P) or s >= uS:
            return
        prog = scode[w]
        m, sh = float64(10000.0), int64(0)
        for d in range(uD):
            fbase = d * UNF * uS + s
            bbase = d * UNB * uS + s
            buy = register_eval(prog, U0, mid, F, fbase, uS, B, bbase, uS)
            sell = register_eval(prog, mid, end, F, fbase, uS, B, bbase, uS)
            m, sh, act = trade_day(buy, sell, float64(F[fbase + UCP * uS]), m, sh)
            if act == 4:
                flags[0] = 1
            if trace_on:
                trace[(i * uS + s) * uD + d] = _trace_byte(buy, sell, act)
        if sh > 0:
            m = m + sh * float64(F[((uD - U1) * UNF + UCP) * uS + s]) - 1.0
        money[i * uS + s] = m

    return gp_register
# --8<-- [end:register]


# ----------------------------------------------------------------------------- bit-sliced


# --8<-- [start:bits_eval]
@cuda.jit(device=True, inline=True)
def bits_eval(code, a, b, M, mbase, mstride, stack, sbase, sstride):
    """A tree on one 32-day word. Every comparison ``a b <`` (``a b >``) of the RPN is one push of
    the precomputed mask "a < b" (``M[mbase + (a*17 + b)*mstride]``; "a > b" is "b < a"), a
    boolean terminal ``k`` pushes mask ``289 + k``; AND, OR, NOT work on 32 days at once. The
    top of the stack lives in a register, the rest in shared memory."""
    top = U0
    sp = U0
    pc = a
    while pc < b:
        op = code[pc]
        if op < 31:
            if op < 17:  # a float terminal starts "a b <" or "a b >": one mask
                rhs = code[pc + U1]
                if code[pc + U2] == 34:
                    k = uint64(op) * UNF + uint64(rhs)
                else:
                    k = uint64(rhs) * UNF + uint64(op)
                pc += np.uint64(3)
            else:
                k = np.uint64(289) + uint64(op - 17)
                pc += U1
            stack[sbase + sp * sstride] = uint32(top)  # spill the old top
            sp += U1
            top = uint64(M[mbase + k * mstride])
        else:
            pc += U1
            if op == 31:
                sp -= U1
                top = top & uint64(stack[sbase + sp * sstride])
            elif op == 32:
                sp -= U1
                top = top | uint64(stack[sbase + sp * sstride])
            else:  # NOT (< and > never come here: their operands consumed them)
                top = top ^ FULL
    return top
# --8<-- [end:bits_eval]


# --8<-- [start:bitsliced]
@lru_cache(maxsize=None)
def bitsliced_kernel(WPB: int, CODE: int, BSTACK: int):
    """A warp = one individual × 32 stocks, as ``register``; each lane evaluates its stock's
    buy and sell tree on 32 days per word operation, then trades by jumping with ``ffs`` from
    one executable signal to the next. ``M``: masks ``[W, 303, S]``; ``F`` (day/indicator/stock)
    for the close on trading days."""
    THREADS = WPB * 32
    SLOTS = BSTACK * THREADS

    @cuda.jit
    def gp_bitsliced(code, offs, P, S, D, M, F, money, trace, trace_on, flags):
        scode = cuda.shared.array((WPB, CODE), uint8)
        sstack = cuda.shared.array(SLOTS, uint32)
        t, i, s = warp_task(S)
        w = uint64(cuda.threadIdx.x) // U32
        mid, end = load_program(code, offs, P, i, scode, w, t % U32)
        cuda.syncthreads()
        uS, uD = uint64(S), uint64(D)
        if i >= uint64(P) or s >= uS:
            return
        prog = scode[w]
        tb = uint64(cuda.threadIdx.x)
        m, sh = float64(10000.0), int64(0)
        words = (uD + U32 - U1) // U32
        for k in range(words):
            mbase = k * UNMASK * uS + s
            bw = bits_eval(prog, U0, mid, M, mbase, uS, sstack, tb, np.uint64(THREADS))
            sw = bits_eval(prog, mid, end, M, mbase, uS, sstack, tb, np.uint64(THREADS))
            left = uD - k * U32
            valid = FULL if left >= U32 else (U1 << left) - U1
            bw &= valid  # NOT set the bits past the last day
            sw &= valid
            if trace_on:
                for j in range(min(left, U32)):
                    trace[(i * uS + s) * uD + k * U32 + j] = uint8((bw >> j) & U1) + uint8(2) * uint8((sw >> j) & U1)
            eb = bw & ~sw & FULL  # a buy would execute (when flat)
            es = sw & ~bw & FULL  # a sell would execute (when holding)
            done = U0
            while True:
                pending = (es if sh > 0 else eb) & ~done & FULL
                if pending == U0:
                    break
                j = uint64(cuda.ffs(uint32(pending))) - U1
                d = k * U32 + j
                m, sh, act = trade_day(sh == 0, sh > 0, float64(F[(d * UNF + UCP) * uS + s]), m, sh)
                if act == 4:
                    flags[0] = 1
                if trace_on:
                    trace[(i * uS + s) * uD + d] |= uint8(4 * (act & 3))
                done = (U2 << j) - U1
        if sh > 0:
            m = m + sh * float64(F[((uD - U1) * UNF + UCP) * uS + s]) - 1.0
        money[i * uS + s] = m

    return gp_bitsliced
# --8<-- [end:bitsliced]


# ----------------------------------------------------------------------------- fitness


# --8<-- [start:fitness]
@cuda.jit
def gp_fitness(money, bh, P, S, out):
    """``out[i]`` = mean over stocks of (ROI − buy-and-hold ROI), summed in stock order — the
    order of the CPU versions, so every backend gets the same bits."""
    i = cuda.grid(1)
    if i < P:
        acc = 0.0
        for s in range(S):
            acc += (money[i * S + s] - 10000.0) / 10000.0 - bh[s]
        out[i] = acc / S
# --8<-- [end:fitness]


# ----------------------------------------------------------------------------- compile checks

A_U8, A_I32, A_F32, A_F64, A_U32 = "uint8[::1]", "int32[::1]", "float32[::1]", "float64[::1]", "uint32[::1]"
SIG_THREAD = f"void({A_U8}, {A_I32}, int32, int32, int32, {A_F32}, {A_U8}, {A_F32}, {A_F64}, {A_U8}, int32, {A_I32})"
SIG_SHARED = f"void({A_U8}, {A_I32}, int32, int32, int32, {A_F32}, {A_U8}, {A_F64}, {A_U8}, int32, {A_I32})"
SIG_CONST = f"void(int32, int32, int32, int32, {A_F32}, {A_U8}, {A_F32}, {A_F64}, {A_U8}, int32, {A_I32})"
SIG_BITS = f"void({A_U8}, {A_I32}, int32, int32, int32, {A_U32}, {A_F32}, {A_F64}, {A_U8}, int32, {A_I32})"
SIG_FITNESS = f"void({A_F64}, {A_F64}, int32, int32, {A_F64})"


def kernel_for(name: str, params: dict):
    """The numba kernel of a variant with its compile-time parameters, and its signature."""
    p = params
    if name == "thread_global":
        return thread_global_kernel(p["STACK"]), SIG_THREAD
    if name == "coalesced":
        return coalesced_kernel(p["STACK"]), SIG_THREAD
    if name == "constant":
        return constant_kernel(p["STACK"]), SIG_CONST
    if name == "shared":
        return shared_kernel(p["STACK"], p["WPB"], p["CODE"]), SIG_SHARED
    if name == "register":
        return register_kernel(p["WPB"], p["CODE"]), SIG_SHARED
    if name == "bitsliced":
        return bitsliced_kernel(p["WPB"], p["CODE"], p["BSTACK"]), SIG_BITS
    if name == "fitness":
        return gp_fitness, SIG_FITNESS
    raise KeyError(name)


def ptx_targets() -> list[tuple[str, object, str]]:
    """Every numba kernel of this chapter with the parameters the registry uses (plus a
    generated ``compiled`` kernel for a small fixed population)."""
    from gpulab.gp import compiled
    from gpulab.gp.variants import REGISTRY

    out, seen = [("gp_fitness", gp_fitness, SIG_FITNESS)], set()
    for v in REGISTRY.select(backend="numba"):
        if v.name == "compiled":
            kern, sig = compiled.example_numba_kernel()
            out.append(("gp_compiled[example population]", kern, sig))
            continue
        params = {k: x for k, x in v.params.items() if k != "sim"}
        kern, sig = kernel_for(v.name, params)
        key = (v.name, tuple(sorted(params.items())))
        if key not in seen:
            seen.add(key)
            out.append((f"gp_{v.name}{params}", kern, sig))
    return out
