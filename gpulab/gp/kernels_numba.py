r"""Chapter 3 kernels in numba.cuda: the RPN interpreter, from global-memory stacks to bit-slicing.

Every kernel evaluates individuals × stocks: per (individual, stock) it walks the evaluation
days in order, evaluates the buy and the sell tree on that day's indicators, and applies the
decision matrix (`gpulab.gp.trading.trade_day`, compiled here as a device function). It
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
from numba import cuda, float32, float64, int64, uint8, uint16, uint32, uint64

from gpulab import device
from gpulab.gp import opcodes as oc
from gpulab.gp import trading
from gpulab.gp.market import NMASK, NPAIR

# numba types integer literals as int64, and uint64 op int64 is float64: every constant that
# meets an index is a uint64.
U0, U1, U2, U32 = np.uint64(0), np.uint64(1), np.uint64(2), np.uint64(32)
UNF, UNB, UCP = np.uint64(oc.NF), np.uint64(oc.NB), np.uint64(oc.OP_CP)
# Opcodes, from the table (module-level ints: numba compiles them in as constants).
NF, NT = oc.NF, oc.NT
AND, OR, NOT, LT = oc.OP_AND, oc.OP_OR, oc.OP_NOT, oc.OP_LT
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
        if op < NF:  # float terminal
            stack[sbase + sp * sstride] = F[fbase + uint64(op) * fstride]
            sp += U1
        elif op < NT:  # boolean terminal
            stack[sbase + sp * sstride] = float32(B[bbase + uint64(op - NF) * bstride])
            sp += U1
        elif op == NOT:  # NOT
            k = sbase + (sp - U1) * sstride
            stack[k] = float32(stack[k] == float32(0))
        else:  # AND, OR, <, >: the right argument is on top
            r = stack[sbase + (sp - U1) * sstride]
            sp -= U1
            k = sbase + (sp - U1) * sstride
            l = stack[k]
            if op == AND:
                v = (l != float32(0)) and (r != float32(0))
            elif op == OR:
                v = (l != float32(0)) or (r != float32(0))
            elif op == LT:
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
    """`stack_eval` reading the program from constant memory (``gp_programs``)."""
    sp = U0
    pc = a
    while pc < b:
        op = const_byte(pc)
        pc += U1
        if op < NF:
            stack[sbase + sp * sstride] = F[fbase + uint64(op) * fstride]
            sp += U1
        elif op < NT:
            stack[sbase + sp * sstride] = float32(B[bbase + uint64(op - NF) * bstride])
            sp += U1
        elif op == NOT:
            k = sbase + (sp - U1) * sstride
            stack[k] = float32(stack[k] == float32(0))
        else:
            r = stack[sbase + (sp - U1) * sstride]
            sp -= U1
            k = sbase + (sp - U1) * sstride
            l = stack[k]
            if op == AND:
                v = (l != float32(0)) and (r != float32(0))
            elif op == OR:
                v = (l != float32(0)) or (r != float32(0))
            elif op == LT:
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
        if op < NF:
            f0 = f1
            f1 = F[fbase + uint64(op) * fstride]
        elif op < NT:
            bits = uint32((bits << uint32(1)) | uint32(B[bbase + uint64(op - NF) * bstride]))
        elif op == AND:  # AND: pop the top, clear the new top unless the popped bit was 1
            top = uint32(bits & uint32(1))
            bits = uint32((bits >> uint32(1)) & (ONES | top))
        elif op == OR:  # OR
            top = uint32(bits & uint32(1))
            bits = uint32((bits >> uint32(1)) | top)
        elif op == NOT:  # NOT
            bits = uint32(bits ^ uint32(1))
        elif op == LT:
            bits = uint32((bits << uint32(1)) | uint32(f0 < f1))
        else:
            bits = uint32((bits << uint32(1)) | uint32(f0 > f1))
    return (bits & uint32(1)) != uint32(0)
# --8<-- [end:register_eval]


# --8<-- [start:register_days]
@lru_cache(maxsize=None)
def register_days_eval(DAYS: int):
    """`register_eval` on ``DAYS`` consecutive days at once: one opcode fetch and one
    dispatch per node for all of them. Day ``j`` has its own bit-stack and float pair
    (``bits[j]``, ``f0[j]``, ``f1[j]``): the loops over ``j`` have a compile-time trip count, so
    the compiler unrolls them and the arrays become ``3·DAYS`` registers. The ``DAYS`` loads of
    a float terminal are independent, so they are in flight together. Returns the tree's values
    as a word, bit ``j`` = day ``j``."""

    @cuda.jit(device=True, inline=True)
    def eval_days(code, a, b, F, fbase, fday, B, bbase, bday, stride):
        bits = cuda.local.array(DAYS, uint32)
        f0 = cuda.local.array(DAYS, float32)
        f1 = cuda.local.array(DAYS, float32)
        for j in range(DAYS):
            bits[j] = uint32(0)
            f0[j] = float32(0)
            f1[j] = float32(0)
        pc = a
        while pc < b:
            op = code[pc]
            pc += U1
            if op < NF:
                fk = fbase + uint64(op) * stride
                for j in range(DAYS):
                    f0[j] = f1[j]
                    f1[j] = F[fk + uint64(j) * fday]
            elif op < NT:
                bk = bbase + uint64(op - NF) * stride
                for j in range(DAYS):
                    bits[j] = uint32((bits[j] << uint32(1)) | uint32(B[bk + uint64(j) * bday]))
            elif op == AND:
                for j in range(DAYS):
                    top = uint32(bits[j] & uint32(1))
                    bits[j] = uint32((bits[j] >> uint32(1)) & (ONES | top))
            elif op == OR:
                for j in range(DAYS):
                    top = uint32(bits[j] & uint32(1))
                    bits[j] = uint32((bits[j] >> uint32(1)) | top)
            elif op == NOT:
                for j in range(DAYS):
                    bits[j] = uint32(bits[j] ^ uint32(1))
            elif op == LT:
                for j in range(DAYS):
                    bits[j] = uint32((bits[j] << uint32(1)) | uint32(f0[j] < f1[j]))
            else:
                for j in range(DAYS):
                    bits[j] = uint32((bits[j] << uint32(1)) | uint32(f0[j] > f1[j]))
        out = uint32(0)
        for j in range(DAYS):
            out |= uint32((bits[j] & uint32(1)) << uint32(j))
        return out

    return eval_days
# --8<-- [end:register_days]


@cuda.jit(device=True, inline=True)
def trade_signal(buy, sell, close_at, F, m, sh):
    """The decision matrix for one day, loading the close only when it can act (a buy signal
    while flat, a sell signal while holding): `trade_day` on those days, nothing else."""
    if (buy and not sell and sh == 0) or (sell and not buy and sh > 0):
        return trade_day(buy, sell, float64(F[close_at]), m, sh)
    return m, sh, 0


# --8<-- [start:register]
@lru_cache(maxsize=None)
def register_kernel(WPB: int, CODE: int, DAYS: int):
    """``shared``'s program buffer, with the stack in registers, ``DAYS`` days per pass over
    the program (`register_days_eval`). ``F`` and ``B`` are padded with 32 days past the
    last one on the device, so the last pass reads real memory; its extra days are ignored."""
    eval_days = register_days_eval(DAYS)
    UDAYS = np.uint64(DAYS)

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
        fday, bday = UNF * uS, UNB * uS  # one day further in F, in B
        m, sh = float64(10000.0), int64(0)
        d0 = U0
        while d0 < uD:
            fbase = d0 * fday + s
            bbase = d0 * bday + s
            bw = eval_days(prog, U0, mid, F, fbase, fday, B, bbase, bday, uS)
            sw = eval_days(prog, mid, end, F, fbase, fday, B, bbase, bday, uS)
            for j in range(min(UDAYS, uD - d0)):
                uj = uint64(j)
                buy = ((bw >> uj) & U1) != U0
                sell = ((sw >> uj) & U1) != U0
                d = d0 + uj
                m, sh, act = trade_signal(buy, sell, fbase + uj * fday + UCP * uS, F, m, sh)
                if act == 4:
                    flags[0] = 1
                if trace_on:
                    trace[(i * uS + s) * uD + d] = _trace_byte(buy, sell, act)
            d0 += UDAYS
        if sh > 0:
            m = m + sh * float64(F[((uD - U1) * UNF + UCP) * uS + s]) - 1.0
        money[i * uS + s] = m

    return gp_register
# --8<-- [end:register]


# ----------------------------------------------------------------------------- bit-sliced


UNMASK64 = np.uint64(NMASK)
E_AND, E_OR = np.uint64(NMASK), np.uint64(NMASK + 1)  # decoded entries: 0..302 a mask, then AND, OR, NOT (305)
ALL64 = np.uint64(0xFFFFFFFFFFFFFFFF)
U64 = np.uint64(64)
FULL32 = np.uint64(0xFFFFFFFF)


# --8<-- [start:decode]
@cuda.jit(device=True, inline=True)
def decode_tree(code, a, b, sdec, w, n, lane):
    """Translate RPN ``code[a:b]`` into mask-program entries at ``sdec[w, n:]``: a comparison
    ``x y <`` (three opcodes; ``x y >`` is ``y x <``) becomes the index of the mask "x < y",
    ``x*17 + y``; a boolean terminal ``k`` becomes mask ``289 + k``; AND, OR, NOT become 303,
    304, 305. Every lane of the warp reads the same opcodes (one broadcast load each) and
    decodes in step; lane 0 writes. Returns the end of the entries."""
    pc = a
    while pc < b:
        op = uint64(code[pc])
        if op < UNF:  # the left operand of a comparison: the validator guarantees "x y <" or "x y >"
            rhs = uint64(code[pc + U1])
            e = op * UNF + rhs if code[pc + U2] == LT else rhs * UNF + op
            pc += np.uint64(3)
        elif op < np.uint64(NT):
            e = np.uint64(NPAIR) + (op - UNF)
            pc += U1
        else:
            e = op + np.uint64(NMASK - NT)  # AND, OR, NOT: the entries after the masks
            pc += U1
        if lane == U0:
            sdec[w, n] = uint16(e)
        n += U1
    return n
# --8<-- [end:decode]# --8<-- [end:decode]


# --8<-- [start:bits_eval]
@cuda.jit(device=True, inline=True)
def bits_eval(prog, a, b, M, mbase, mstride, stack, sbase, sstride):
    """A tree on one 64-day word, from its decoded entries ``prog[a:b]``: an entry below 303
    pushes mask ``e`` (``M[mbase + e*mstride]``, 64 days of "x < y" or of a boolean terminal);
    AND, OR and NOT work on 64 days at once. The top of the stack lives in a register, the rest
    in shared memory."""
    top = U0
    sp = U0
    pc = a
    while pc < b:
        e = uint64(prog[pc])
        pc += U1
        if e < UNMASK64:
            new = M[mbase + e * mstride]  # the load first: it is in flight while the spill waits for the last one
            stack[sbase + sp * sstride] = top  # spill the old top
            sp += U1
            top = new
        elif e == E_AND:
            sp -= U1
            top = top & stack[sbase + sp * sstride]
        elif e == E_OR:
            sp -= U1
            top = top | stack[sbase + sp * sstride]
        else:  # NOT
            top = top ^ ALL64
    return top
# --8<-- [end:bits_eval]


@cuda.jit(device=True, inline=True)
def lowest_bit(x):
    """Index of the lowest set bit of a nonzero uint64 (``__ffsll(x) - 1``), from two 32-bit
    ``ffs``: the simulator's ``ffs`` only knows 32 bits."""
    lo = uint32(x & FULL32)
    if lo != uint32(0):
        return uint64(cuda.ffs(lo)) - U1
    return uint64(cuda.ffs(uint32(x >> U32))) + np.uint64(31)


# --8<-- [start:bitsliced]
@lru_cache(maxsize=None)
def bitsliced_kernel(WPB: int, CODE: int, BSTACK: int, TW: int, TRADE: int = 1):
    """A warp = one individual × 32 stocks, as ``register``. The warp decodes its program once
    into mask-program entries in shared memory (`decode_tree`); each lane then evaluates
    its stock's buy and sell tree on 64 days per word operation, ``TW`` words at a time,
    keeping the days on which a buy or a sell would execute in shared memory, and trades across
    those ``TW`` words, jumping from one executable signal to the next with find-first-set.
    ``M``: masks ``uint64 [W, 303, S]``; ``C``: the close, ``float32 [D, S]``. ``listed = 1``:
    warp ``j`` evaluates individual ``idx[j]`` for ``j < count[0]`` (the list `gp_changed`
    makes) and no other: a generation's changed individuals alone. ``cache = 1``: every tree's
    day masks go to ``Cnew`` (``uint64 [2P, W, S]``); ``cache = 2`` (with ``listed``) also: a
    tree the parents had (``src[t] >= 0``) is not interpreted, its masks come from ``Cprev``
    (the last evaluation's ``Cnew``). ``TRADE = 0``
    builds a diagnostic kernel without the trading pass (wrong money; the tuning script times it
    to split evaluation from trading)."""
    THREADS = WPB * 32
    SLOTS = BSTACK * THREADS
    TSLOTS = TW * THREADS
    UT = np.uint64(THREADS)
    UTW = np.uint64(TW)

    @cuda.jit
    def gp_bitsliced(code, offs, listed, idx, count, cache, src, Cprev, Cnew, P, S, D, M, C, money, trace, trace_on,
                     flags):
        sdec = cuda.shared.array((WPB, CODE), uint16)
        sstack = cuda.shared.array(SLOTS, uint64)
        sbuy = cuda.shared.array(TSLOTS, uint64)  # per word of the chunk and lane: days a buy would execute
        ssell = cuda.shared.array(TSLOTS, uint64)  # ... and a sell
        t, i, s = warp_task(S)
        if listed:  # warp j evaluates individual idx[j] for j < count[0] (gp_changed's list), and no other
            i = uint64(idx[i]) if i < uint64(count[0]) and i < uint64(P) else uint64(P)
        w = uint64(cuda.threadIdx.x) // U32
        lane = t % U32
        nbuy = nend = U0
        cb = cs = int64(-1)  # the buy / sell tree's masks from Cprev (a parent's tree), or -1: interpret it
        if i < uint64(P):
            if listed and cache == 2:
                cb, cs = src[U2 * i], src[U2 * i + U1]
            a, mid, b = uint64(offs[U2 * i]), uint64(offs[U2 * i + U1]), uint64(offs[U2 * i + U2])
            nbuy = U0 if cb >= 0 else decode_tree(code, a, mid, sdec, w, U0, lane)
            nend = nbuy if cs >= 0 else decode_tree(code, mid, b, sdec, w, nbuy, lane)
        cuda.syncthreads()
        uS, uD = uint64(S), uint64(D)
        if i >= uint64(P) or s >= uS:
            return
        prog = sdec[w]
        tb = uint64(cuda.threadIdx.x)
        m, sh = float64(10000.0), int64(0)
        chk = U0  # TRADE = 0 only: a checksum of the signals keeps their evaluation from being optimized away
        words = (uD + U64 - U1) // U64
        w0 = U0
        while w0 < words:
            n = min(UTW, words - w0)
            for k in range(n):  # evaluate the chunk's words
                wk = w0 + uint64(k)
                mbase = wk * UNMASK64 * uS + s
                if cb >= 0:
                    bw = Cprev[(uint64(cb) * words + wk) * uS + s]
                else:
                    bw = bits_eval(prog, U0, nbuy, M, mbase, uS, sstack, tb, UT)
                if cs >= 0:
                    sw = Cprev[(uint64(cs) * words + wk) * uS + s]
                else:
                    sw = bits_eval(prog, nbuy, nend, M, mbase, uS, sstack, tb, UT)
                left = uD - wk * U64
                valid = ALL64 if left >= U64 else (U1 << left) - U1
                bw &= valid  # NOT set the bits past the last day
                sw &= valid
                if cache:
                    Cnew[(U2 * i * words + wk) * uS + s] = bw
                    Cnew[((U2 * i + U1) * words + wk) * uS + s] = sw
                if trace_on:
                    for j in range(min(left, U64)):
                        trace[(i * uS + s) * uD + wk * U64 + j] = uint8((bw >> j) & U1) + uint8(2) * uint8((sw >> j) & U1)
                sbuy[uint64(k) * UT + tb] = bw & (sw ^ ALL64)
                ssell[uint64(k) * UT + tb] = sw & (bw ^ ALL64)
            if not TRADE:
                for k in range(n):
                    chk ^= sbuy[uint64(k) * UT + tb] ^ (ssell[uint64(k) * UT + tb] << U1)
                w0 += UTW
                continue
            # trade across the chunk: each step finds the next executable signal, skipping words
            # with none left, and trades; a lane takes one step per trade it makes
            k = U0
            eb, es = sbuy[tb], ssell[tb]
            while True:
                pending = es if sh > 0 else eb
                while pending == U0:
                    k += U1
                    if k >= n:
                        break
                    eb, es = sbuy[k * UT + tb], ssell[k * UT + tb]
                    pending = es if sh > 0 else eb
                if pending == U0:
                    break
                j = lowest_bit(pending)
                d = (w0 + k) * U64 + j
                m, sh, act = trade_day(sh == 0, sh > 0, float64(C[d * uS + s]), m, sh)
                if act == 4:
                    flags[0] = 1
                if trace_on:
                    trace[(i * uS + s) * uD + d] |= uint8(4 * (act & 3))
                later = (((U1 << j) - U1) | (U1 << j)) ^ ALL64  # the days after day j
                eb &= later
                es &= later
            w0 += UTW
        if sh > 0:
            m = m + sh * float64(C[(uD - U1) * uS + s]) - 1.0
        if not TRADE:
            m = float64(chk & FULL32)
        money[i * uS + s] = m

    return gp_bitsliced
# --8<-- [end:bitsliced]


# ----------------------------------------------------------------------------- fitness


# --8<-- [start:fitness]
@cuda.jit(device=True, inline=True)
def excess_roi(money, bh, i, S):
    """Mean over stocks of (ROI − buy-and-hold ROI) of individual ``i``."""
    acc = 0.0
    for s in range(S):
        acc += (money[i * S + s] - 10000.0) / 10000.0 - bh[s]
    return acc / S


@cuda.jit
def gp_fitness(money, bh, P, S, out, flags):
    """``out[i]`` = mean over stocks of (ROI − buy-and-hold ROI), summed in stock order — the
    order of the CPU versions, so every backend gets the same bits. Thread 0 also hands the
    interpreter's overflow flag to the host (``flags[1]``, the 4 bytes it reads back) and clears
    ``flags[0]`` for the next generation: no host copy to reset it."""
    i = cuda.grid(1)
    if i == 0:
        flags[1] = flags[0]
        flags[0] = 0
    if i < P:
        out[i] = excess_roi(money, bh, i, S)
# --8<-- [end:fitness]


# --8<-- [start:copies]
@cuda.jit(device=True, inline=True)
def is_copy(src, i):
    """Individual ``i`` is parent ``src[2i] // 2``: both its trees are that
    parent's, in order (``src[t]``: the parent tree that child tree ``t``
    copies byte for byte, or -1)."""
    a = src[2 * i]
    return a >= 0 and a % 2 == 0 and src[2 * i + 1] == a + 1


@cuda.jit
def gp_changed(src, P, idx, count):
    """The individuals that are not copies, in ``idx[0:count[0]]``, in no
    fixed order (``count[0]`` is 0 on entry: `gp_fitness_copies` resets
    it)."""
    i = cuda.grid(1)
    if i < P and not is_copy(src, i):
        k = cuda.atomic.add(count, 0, 1)
        if k < P:
            idx[k] = i


@cuda.jit
def gp_copy_masks(src, P, W, S, Cprev, Cnew):
    """A copy's day masks, both trees, from ``Cprev`` to its own place in
    ``Cnew``: a thread per (individual, word, stock). (`gp_bitsliced`
    writes the listed individuals' masks.)"""
    t = uint64(cuda.grid(1))
    per = uint64(W) * uint64(S)
    i, r = t // per, t % per
    if i < uint64(P) and is_copy(src, int64(i)):
        for u in range(2):
            tree = U2 * i + uint64(u)
            Cnew[tree * per + r] = Cprev[uint64(src[tree]) * per + r]


@cuda.jit
def gp_fitness_copies(money, bh, P, S, out, flags, src, prev, count):
    """`gp_fitness` for the individuals `gp_changed` listed; a copy takes
    its parent's fitness from ``prev``. Thread 0 also hands the list's
    length to the host (``flags[2]``) and resets ``count[0]``."""
    i = cuda.grid(1)
    if i == 0:
        flags[1] = flags[0]
        flags[0] = 0
        flags[2] = count[0]
        count[0] = 0
    if i < P:
        if is_copy(src, i):
            out[i] = prev[src[2 * i] // 2]
        else:
            out[i] = excess_roi(money, bh, i, S)
# --8<-- [end:copies]


# ----------------------------------------------------------------------------- compile checks

A_U8, A_I32, A_F32, A_F64, A_U64 = "uint8[::1]", "int32[::1]", "float32[::1]", "float64[::1]", "uint64[::1]"
SIG_THREAD = f"void({A_U8}, {A_I32}, int32, int32, int32, {A_F32}, {A_U8}, {A_F32}, {A_F64}, {A_U8}, int32, {A_I32})"
SIG_SHARED = f"void({A_U8}, {A_I32}, int32, int32, int32, {A_F32}, {A_U8}, {A_F64}, {A_U8}, int32, {A_I32})"
SIG_CONST = f"void(int32, int32, int32, int32, {A_F32}, {A_U8}, {A_F32}, {A_F64}, {A_U8}, int32, {A_I32})"
SIG_BITS = (f"void({A_U8}, {A_I32}, int32, {A_I32}, {A_I32}, int32, int64[::1], {A_U64}, {A_U64}, int32, int32, int32, "
            f"{A_U64}, {A_F32}, {A_F64}, {A_U8}, int32, {A_I32})")
SIG_FITNESS = f"void({A_F64}, {A_F64}, int32, int32, {A_F64}, {A_I32})"
SIG_CHANGED = f"void(int64[::1], int32, {A_I32}, {A_I32})"
SIG_COPY_MASKS = f"void(int64[::1], int32, int32, int32, {A_U64}, {A_U64})"
SIG_FITNESS_COPIES = f"void({A_F64}, {A_F64}, int32, int32, {A_F64}, {A_I32}, int64[::1], {A_F64}, {A_I32})"


# The numba kernels by a policy's `kernel` (gpulab.gp.policy.GPPolicy): the builder of each
# from the variant's compile-time parameters, and its signature.
BUILDERS = {
    "thread_global": (lambda p: thread_global_kernel(p["STACK"]), SIG_THREAD),
    "coalesced": (lambda p: coalesced_kernel(p["STACK"]), SIG_THREAD),
    "constant": (lambda p: constant_kernel(p["STACK"]), SIG_CONST),
    "shared": (lambda p: shared_kernel(p["STACK"], p["WPB"], p["CODE"]), SIG_SHARED),
    "register": (lambda p: register_kernel(p["WPB"], p["CODE"], p["DAYS"]), SIG_SHARED),
    "bitsliced": (lambda p: bitsliced_kernel(p["WPB"], p["CODE"], p["BSTACK"], p["TW"], p.get("TRADE", 1)), SIG_BITS),
    "fitness": (lambda p: gp_fitness, SIG_FITNESS),
    "changed": (lambda p: gp_changed, SIG_CHANGED),
    "fitness_copies": (lambda p: gp_fitness_copies, SIG_FITNESS_COPIES),
    "copy_masks": (lambda p: gp_copy_masks, SIG_COPY_MASKS),
}


def kernel_for(kernel: str, params: dict):
    """The numba kernel `kernel` (a policy's `kernel`, or ``"fitness"``) with the variant's
    compile-time parameters, and its signature."""
    build, sig = BUILDERS[kernel]
    return build(params), sig
