"""Chapter 1 kernels in numba.cuda: C = A @ B for row-major float32 A (M×K), B (K×N), C (M×N).

Each kernel handles any M, K, N: threads outside C return early, and tile loads past the edge
of A or B load zeros (which add nothing to the dot products).

Compile-time sizes (tile shapes) are closure constants of small cached factory functions:
numba freezes them when it compiles, so the shared and local arrays have static shapes and
the loops over them have constant trip counts the compiler can unroll.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import config, cuda, float32, float64, int32, uint64
from numba.cuda import libdevice

SIG = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1], int32, int32, int32)"


# --8<-- [start:naive]
@cuda.jit
def matmul_naive(A, B, C, M, N, K):
    # x (the fastest-varying thread index, the one that differs between lanes of a warp)
    # runs over ROWS: neighbouring lanes read A[row, k] a whole row apart, and write C a
    # whole row apart. Correct, but every warp-wide load touches 32 different cache lines.
    row, col = cuda.grid(2)
    if row < M and col < N:
        acc = float32(0.0)
        for k in range(K):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc
# --8<-- [end:naive]


# --8<-- [start:coalesced]
@cuda.jit
def matmul_coalesced(A, B, C, M, N, K):
    # Swap the mapping: x runs over COLUMNS. Now the 32 lanes of a warp read 32 consecutive
    # floats of B (one 128-byte line) and all read the same A[row, k] (one broadcast).
    col, row = cuda.grid(2)
    if row < M and col < N:
        acc = float32(0.0)
        for k in range(K):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc
# --8<-- [end:coalesced]


@lru_cache(maxsize=None)
def shared_kernel(tile: int):
    """Shared-memory tiling with ``tile``×``tile`` blocks (one thread per output)."""

    # --8<-- [start:shared]
    @cuda.jit
    def matmul_shared(A, B, C, M, N, K):
        As = cuda.shared.array((tile, tile), float32)
        Bs = cuda.shared.array((tile, tile), float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        col = cuda.blockIdx.x * tile + tx
        row = cuda.blockIdx.y * tile + ty
        acc = float32(0.0)
        for k0 in range(0, K, tile):
            # Each thread loads one element of each tile (zero past the edges) ...
            As[ty, tx] = A[row, k0 + tx] if row < M and k0 + tx < K else float32(0.0)
            Bs[ty, tx] = B[k0 + ty, col] if k0 + ty < K and col < N else float32(0.0)
            cuda.syncthreads()  # ... the whole tile is in shared memory before anyone reads it,
            for k in range(tile):
                acc += As[ty, k] * Bs[k, tx]  # each global value is now read `tile` times from shared
            cuda.syncthreads()  # ... and nobody overwrites it while others still read it.
        if row < M and col < N:
            C[row, col] = acc
    # --8<-- [end:shared]

    return matmul_shared


@lru_cache(maxsize=8)
def _constant_kernel(b_bytes: bytes, k: int, n: int, lanes_on_rows: bool):
    # numba places an array in constant memory by capturing a host array when the kernel is
    # compiled (cuda.const.array_like), so each new B means a new compilation: cache a few.
    B_host = np.frombuffer(b_bytes, dtype=np.float32).reshape(k, n)

    if lanes_on_rows:
        # --8<-- [start:constant]
        @cuda.jit
        def matmul_constant(A, C, M, N, K):
            Bc = cuda.const.array_like(B_host)
            # x runs over rows: all 32 lanes of a warp share one column, so at every k they
            # read the SAME constant address, which the constant cache broadcasts in one go.
            row, col = cuda.grid(2)
            if row < M and col < N:
                acc = float32(0.0)
                for k in range(K):
                    acc += A[row, k] * Bc[k, col]
                C[row, col] = acc
        # --8<-- [end:constant]

        return matmul_constant

    # --8<-- [start:constant_scattered]
    @cuda.jit
    def matmul_constant_scattered(A, C, M, N, K):
        Bc = cuda.const.array_like(B_host)
        # x runs over columns: the lanes of a warp read 32 DIFFERENT constant addresses at
        # every k, and the constant cache serves one address per cycle: 32 serialized reads.
        col, row = cuda.grid(2)
        if row < M and col < N:
            acc = float32(0.0)
            for k in range(K):
                acc += A[row, k] * Bc[k, col]
            C[row, col] = acc
    # --8<-- [end:constant_scattered]

    return matmul_constant_scattered


def constant_kernel(B: np.ndarray, lanes_on_rows: bool = True):
    """The constant-memory kernel compiled for this particular B (K×N float32, ≤ 64 KiB)."""
    B = np.ascontiguousarray(B, dtype=np.float32)
    return _constant_kernel(B.tobytes(), B.shape[0], B.shape[1], lanes_on_rows)


def _unsigned_tile_constants(BM, BN, BK, TM, TN, PAD):
    """The tile shape as uint64 closure constants, and the per-thread load counts.

    numba indexes like NumPy: a negative index counts from the end, so every signed index
    it cannot prove non-negative costs a compare and a select before each load. With every
    index unsigned (thread indices, tile offsets, loop counters, sizes) that code vanishes;
    mixing signed and unsigned would turn the arithmetic into float64, so nothing is left signed.
    """
    U = np.uint64
    CS, RS = BN // TN, BM // TM  # threads along x (columns) and y (rows)
    THREADS = CS * RS
    assert BM % TM == 0 and BN % TN == 0 and (BM * BK) % THREADS == 0 and (BK * BN) % THREADS == 0
    return dict(U=U, CS=U(CS), RS=U(RS), THREADS=U(THREADS), A_LOADS=U(BM * BK // THREADS),
                B_LOADS=U(BK * BN // THREADS), uBM=U(BM), uBN=U(BN), uBK=U(BK), uTM=U(TM), uTN=U(TN))


@lru_cache(maxsize=None)
def register_kernel(BM: int, BN: int, BK: int, TM: int, TN: int, PAD: int):
    """Register tiling: a block computes a BM×BN tile of C, each thread a TM×TN sub-tile.

    The sub-tile lives in a local array indexed only by loop counters with constant trip
    counts, so the compiler unrolls the loops and keeps it in registers (the compile check
    asserts the PTX has no local-memory traffic). Thread (tx, ty) owns rows ``ty + i*RS`` and
    columns ``tx + j*CS``: strided rather than contiguous, so neighbouring lanes read
    neighbouring shared-memory words (no bank conflicts) and write neighbouring C elements.
    """
    c = _unsigned_tile_constants(BM, BN, BK, TM, TN, PAD)
    CS, RS, THREADS, A_LOADS, B_LOADS = c["CS"], c["RS"], c["THREADS"], c["A_LOADS"], c["B_LOADS"]
    uBM, uBN, uBK, uTM, uTN = c["uBM"], c["uBN"], c["uBK"], c["uTM"], c["uTN"]
    BMP = BM + PAD  # shared-array shapes must be compile-time constants

    # --8<-- [start:register]
    @cuda.jit
    def matmul_register(A, B, C, M, N, K):
        # A tile stored transposed (k-major) and padded: the inner loop reads As[k, :] along
        # rows, and the transposing stores of 8 consecutive k land in different banks.
        As = cuda.shared.array((BK, BMP), float32)
        Bs = cuda.shared.array((BK, BN), float32)
        acc = cuda.local.array((TM, TN), float32)
        a_frag = cuda.local.array(TM, float32)
        b_frag = cuda.local.array(TN, float32)
        tx, ty = uint64(cuda.threadIdx.x), uint64(cuda.threadIdx.y)  # unsigned: see above
        tid = ty * CS + tx
        m0 = uint64(cuda.blockIdx.y) * uBM
        n0 = uint64(cuda.blockIdx.x) * uBN
        Mu, Nu, Ku = uint64(M), uint64(N), uint64(K)
        for i in range(uTM):
            for j in range(uTN):
                acc[i, j] = float32(0.0)
        for k0 in range(uint64(0), Ku, uBK):
            for l in range(A_LOADS):  # consecutive threads: consecutive k of one row of A
                e = tid + l * THREADS
                r, kk = e // uBK, e % uBK
                As[kk, r] = A[m0 + r, k0 + kk] if m0 + r < Mu and k0 + kk < Ku else float32(0.0)
            for l in range(B_LOADS):  # consecutive threads: consecutive columns of B
                e = tid + l * THREADS
                kk, c = e // uBN, e % uBN
                Bs[kk, c] = B[k0 + kk, n0 + c] if k0 + kk < Ku and n0 + c < Nu else float32(0.0)
            cuda.syncthreads()
            for k in range(uBK):
                for i in range(uTM):
                    a_frag[i] = As[k, ty + i * RS]
                for j in range(uTN):
                    b_frag[j] = Bs[k, tx + j * CS]
                for i in range(uTM):  # TM*TN FMAs for TM+TN shared loads
                    for j in range(uTN):
                        acc[i, j] += a_frag[i] * b_frag[j]
            cuda.syncthreads()
        for i in range(uTM):
            row = m0 + ty + i * RS
            if row < Mu:
                for j in range(uTN):
                    col = n0 + tx + j * CS
                    if col < Nu:
                        C[row, col] = acc[i, j]
    # --8<-- [end:register]

    return matmul_register


@lru_cache(maxsize=None)
def prefetch_kernel(BM: int, BN: int, BK: int, TM: int, TN: int, PAD: int):
    """Register tiling plus double buffering: two shared-memory stages and register prefetch.

    While the block multiplies stage ``s``, each thread already holds the next tile's values
    (loaded from global memory into registers at the top of the iteration), and stores them
    into stage ``1 - s`` afterwards: global latency hides behind the FMAs, and one barrier
    per tile suffices instead of two.
    """
    c = _unsigned_tile_constants(BM, BN, BK, TM, TN, PAD)
    CS, RS, THREADS, A_LOADS, B_LOADS = c["CS"], c["RS"], c["THREADS"], c["A_LOADS"], c["B_LOADS"]
    uBM, uBN, uBK, uTM, uTN = c["uBM"], c["uBN"], c["uBK"], c["uTM"], c["uTN"]
    BMP = BM + PAD
    NA, NB = int(A_LOADS), int(B_LOADS)
    ONE = np.uint64(1)

    # --8<-- [start:prefetch]
    @cuda.jit
    def matmul_prefetch(A, B, C, M, N, K):
        As = cuda.shared.array((2, BK, BMP), float32)
        Bs = cuda.shared.array((2, BK, BN), float32)
        acc = cuda.local.array((TM, TN), float32)
        a_frag = cuda.local.array(TM, float32)
        b_frag = cuda.local.array(TN, float32)
        a_next = cuda.local.array(NA, float32)  # the next tile, in flight in registers
        b_next = cuda.local.array(NB, float32)
        tx, ty = uint64(cuda.threadIdx.x), uint64(cuda.threadIdx.y)
        tid = ty * CS + tx
        m0 = uint64(cuda.blockIdx.y) * uBM
        n0 = uint64(cuda.blockIdx.x) * uBN
        Mu, Nu, Ku = uint64(M), uint64(N), uint64(K)
        for i in range(uTM):
            for j in range(uTN):
                acc[i, j] = float32(0.0)
        # Stage 0 gets the first tile.
        for l in range(A_LOADS):
            e = tid + l * THREADS
            r, kk = e // uBK, e % uBK
            As[0, kk, r] = A[m0 + r, kk] if m0 + r < Mu and kk < Ku else float32(0.0)
        for l in range(B_LOADS):
            e = tid + l * THREADS
            kk, c = e // uBN, e % uBN
            Bs[0, kk, c] = B[kk, n0 + c] if kk < Ku and n0 + c < Nu else float32(0.0)
        cuda.syncthreads()
        stage = uint64(0)
        for k0 in range(uint64(0), Ku, uBK):
            k1 = k0 + uBK
            if k1 < Ku:  # issue the next tile's global loads before computing on this one
                for l in range(A_LOADS):
                    e = tid + l * THREADS
                    r, kk = e // uBK, e % uBK
                    a_next[l] = A[m0 + r, k1 + kk] if m0 + r < Mu and k1 + kk < Ku else float32(0.0)
                for l in range(B_LOADS):
                    e = tid + l * THREADS
                    kk, c = e // uBN, e % uBN
                    b_next[l] = B[k1 + kk, n0 + c] if k1 + kk < Ku and n0 + c < Nu else float32(0.0)
            for k in range(uBK):
                for i in range(uTM):
                    a_frag[i] = As[stage, k, ty + i * RS]
                for j in range(uTN):
                    b_frag[j] = Bs[stage, k, tx + j * CS]
                for i in range(uTM):
                    for j in range(uTN):
                        acc[i, j] += a_frag[i] * b_frag[j]
            if k1 < Ku:  # the other stage was last read before the previous barrier: safe to fill
                for l in range(A_LOADS):
                    e = tid + l * THREADS
                    As[ONE - stage, e % uBK, e // uBK] = a_next[l]
                for l in range(B_LOADS):
                    e = tid + l * THREADS
                    Bs[ONE - stage, e // uBN, e % uBN] = b_next[l]
            cuda.syncthreads()
            stage = ONE - stage
        for i in range(uTM):
            row = m0 + ty + i * RS
            if row < Mu:
                for j in range(uTN):
                    col = n0 + tx + j * CS
                    if col < Nu:
                        C[row, col] = acc[i, j]
    # --8<-- [end:prefetch]

    return matmul_prefetch


if not config.ENABLE_CUDASIM:
    # --8<-- [start:pairs]
    @cuda.jit(device=True)
    def pack_pair(lo, hi):
        """Two float32 in one 64-bit word (lo at the lower address), by bit-casts that cost no instruction."""
        return libdevice.hiloint2double(libdevice.float_as_int(hi), libdevice.float_as_int(lo))

    @cuda.jit(device=True)
    def low_of(pair):
        return libdevice.int_as_float(libdevice.double2loint(pair))

    @cuda.jit(device=True)
    def high_of(pair):
        return libdevice.int_as_float(libdevice.double2hiint(pair))
    # --8<-- [end:pairs]
else:
    # The simulator's libdevice functions are stubs; the same bit-casts through numpy views
    # let it check everything else about the wide kernel (indexing, edges, barriers).
    @cuda.jit(device=True)
    def pack_pair(lo, hi):
        return np.array([lo, hi], dtype=np.float32).view(np.float64)[0]

    @cuda.jit(device=True)
    def low_of(pair):
        return np.array([pair], dtype=np.float64).view(np.float32)[0]

    @cuda.jit(device=True)
    def high_of(pair):
        return np.array([pair], dtype=np.float64).view(np.float32)[1]


@lru_cache(maxsize=None)
def wide_kernel(BM: int, BN: int, BK: int, TM: int, TN: int, PAD: int):
    """``prefetch`` with 64-bit shared-memory loads: half the load instructions.

    numba has no ``float2``, but a float64 shared array is 8 bytes a word: storing two float32
    per word (bit-casts, which cost no instruction) makes every fragment load an
    ``ld.shared.f64`` carrying two useful values. A thread owns pairs of rows and of columns,
    ``2*(ty + i*RS) + {0, 1}`` and ``2*(tx + j*CS) + {0, 1}``, strided as before.
    """
    U = np.uint64
    CS, RS = BN // TN, BM // TM
    THREADS = CS * RS
    assert TM % 2 == 0 and TN % 2 == 0 and PAD % 2 == 0
    assert (BM * BK) % (2 * THREADS) == 0 and (BK * BN) % (2 * THREADS) == 0
    NA, NB = BM * BK // (2 * THREADS), BK * BN // (2 * THREADS)  # pairs each thread loads
    BMP2, BN2 = (BM + PAD) // 2, BN // 2
    uCS, uRS, uTHREADS, uNA, uNB = U(CS), U(RS), U(THREADS), U(NA), U(NB)
    uBM, uBN, uBK, uBN2, uTM, uTN, uTM2, uTN2 = U(BM), U(BN), U(BK), U(BN2), U(TM), U(TN), U(TM // 2), U(TN // 2)
    ZERO, ONE, TWO = U(0), U(1), U(2)

    # --8<-- [start:wide]
    @cuda.jit
    def matmul_wide(A, B, C, M, N, K):
        As = cuda.shared.array((2, BK, BMP2), float64)  # As[s, k, p] = (A[2p, k], A[2p+1, k])
        Bs = cuda.shared.array((2, BK, BN2), float64)  # Bs[s, k, q] = (B[k, 2q], B[k, 2q+1])
        acc = cuda.local.array((TM, TN), float32)
        a_frag = cuda.local.array(TM, float32)
        b_frag = cuda.local.array(TN, float32)
        a_next = cuda.local.array(NA, float64)
        b_next = cuda.local.array(NB, float64)
        tx, ty = uint64(cuda.threadIdx.x), uint64(cuda.threadIdx.y)
        tid = ty * uCS + tx
        m0 = uint64(cuda.blockIdx.y) * uBM
        n0 = uint64(cuda.blockIdx.x) * uBN
        Mu, Nu, Ku = uint64(M), uint64(N), uint64(K)
        for i in range(uTM):
            for j in range(uTN):
                acc[i, j] = float32(0.0)
        stage = ZERO
        first = True
        k0 = ZERO
        while first or k0 < Ku:  # the first pass only loads tile 0; each later pass computes tile k0
            k1 = ZERO if first else k0 + uBK
            if k1 < Ku:  # the next tile's pairs, loaded into registers before the FMAs
                for l in range(uNA):
                    e = tid + l * uTHREADS
                    p, kk = e // uBK, e % uBK
                    r = m0 + TWO * p
                    lo = A[r, k1 + kk] if r < Mu and k1 + kk < Ku else float32(0.0)
                    hi = A[r + ONE, k1 + kk] if r + ONE < Mu and k1 + kk < Ku else float32(0.0)
                    a_next[l] = pack_pair(lo, hi)
                for l in range(uNB):
                    e = tid + l * uTHREADS
                    kk, q = e // uBN2, e % uBN2
                    c = n0 + TWO * q
                    lo = B[k1 + kk, c] if k1 + kk < Ku and c < Nu else float32(0.0)
                    hi = B[k1 + kk, c + ONE] if k1 + kk < Ku and c + ONE < Nu else float32(0.0)
                    b_next[l] = pack_pair(lo, hi)
            if not first:
                for k in range(uBK):
                    for i in range(uTM2):
                        pair = As[stage, k, ty + i * uRS]
                        a_frag[2 * i] = low_of(pair)
                        a_frag[2 * i + 1] = high_of(pair)
                    for j in range(uTN2):
                        pair = Bs[stage, k, tx + j * uCS]
                        b_frag[2 * j] = low_of(pair)
                        b_frag[2 * j + 1] = high_of(pair)
                    for i in range(uTM):
                        for j in range(uTN):
                            acc[i, j] += a_frag[i] * b_frag[j]
            if k1 < Ku:
                nxt = stage if first else ONE - stage
                for l in range(uNA):
                    e = tid + l * uTHREADS
                    As[nxt, e % uBK, e // uBK] = a_next[l]
                for l in range(uNB):
                    e = tid + l * uTHREADS
                    Bs[nxt, e // uBN2, e % uBN2] = b_next[l]
                stage = nxt
            cuda.syncthreads()
            if first:
                first = False
            else:
                k0 = k1
        for i in range(uTM):
            row = m0 + TWO * (ty + (i // TWO) * uRS) + i % TWO
            if row < Mu:
                for j in range(uTN):
                    col = n0 + TWO * (tx + (j // TWO) * uCS) + j % TWO
                    if col < Nu:
                        C[row, col] = acc[i, j]
    # --8<-- [end:wide]

    return matmul_wide


def _warptile_shape(BM, BN, BK, WM, WN, WNITER, TM, TN, THREADS):
    """The derived sizes of the warp-tiled kernel (the rules of CUDA C's WT_ macros and their
    static_asserts; a shape that breaks one is refused with the rule it breaks)."""
    from gpulab.errors import GpulabError

    WMITER = (WM * WN) // (32 * TM * TN * WNITER)
    rules = [
        (THREADS == 32 * (BM // WM) * (BN // WN), "one warp per warp tile: THREADS = 32*(BM/WM)*(BN/WN)"),
        (BM % WM == 0 and BN % WN == 0, "warp tiles divide the block tile"),
        (WMITER >= 1 and WM % WMITER == 0 and WN % WNITER == 0, "sub-tiles divide the warp tile"),
        (WMITER * WNITER * TM * TN * 32 == WM * WN, "lanes cover the warp tile"),
        (WMITER >= 1 and ((WM // WMITER) // TM) * ((WN // WNITER) // TN) == 32, "32 lanes per sub-tile"),
        (TM % 4 == 0 and TN % 4 == 0 and BK % 4 == 0, "TM, TN, BK are multiples of 4 (CUDA C's float4s; numba's 4 k-steps an iteration)"),
        ((BM * BK // 4) % THREADS == 0 and (BK * BN // 4) % THREADS == 0, "every thread loads as many groups of 4"),
    ]
    for ok, rule in rules:
        if not ok:
            raise GpulabError(f"warptile shape BM={BM} BN={BN} BK={BK} WM={WM} WN={WN} WNITER={WNITER} "
                              f"TM={TM} TN={TN} THREADS={THREADS} breaks the rule: {rule}")
    return dict(WMITER=WMITER, SUBM=WM // WMITER, SUBN=WN // WNITER, LCOLS=(WN // WNITER) // TN,
                A_LOADS=BM * BK // 4 // THREADS, B_LOADS=BK * BN // 4 // THREADS)


@lru_cache(maxsize=None)
def warptile_kernel(WT_BM: int, WT_BN: int, WT_BK: int, WT_WM: int, WT_WN: int, WT_WNITER: int,
                    WT_TM: int, WT_TN: int, WT_THREADS: int, WT_MINBLOCKS: int, WT_APAD: int, stream_k: bool = False):
    """Warp tiling, the twin of CUDA C's `matmul_warptile` (same parameters, same tiling).

    A one-dimensional block of `WT_THREADS` threads computes a `WT_BM`×`WT_BN` tile of C; each
    warp owns a `WT_WM`×`WT_WN` warp tile, which it covers in WMITER×`WT_WNITER` steps of a
    sub-tile in which each lane owns a contiguous `WT_TM`×`WT_TN` block: the shared-memory reads
    of a warp stay inside its warp tile, and every fragment value feeds many FMAs. Two shared
    stages, the next tile prefetched into registers (one barrier per tile); A is stored
    transposed (k-major, rows padded by `WT_APAD`). Like the CUDA C kernel, a uniform fast path
    (M, N, K multiples of the tile) runs without any bounds check. numba has no `#pragma
    unroll`: the loop over a k-tile calls the one-k-step device function 4 times an iteration.

    What numba cannot say: a `float4` load. A group of 4 floats is 4 scalar loads. For shared
    memory the arrays are declared 16-byte aligned and the fragments start at multiples of 4
    floats, so the compiler merges most of them into 128-bit loads; a global array's data pointer
    has no alignment the compiler can see (CUDA C asserts it with a cast after a run-time check),
    so the global loads stay scalar, and the tile loads map consecutive lanes to consecutive
    floats (coalesced per scalar load) instead of CUDA C's 4 consecutive floats per lane.

    `stream_k=True` builds `matmul_streamk` from the same pieces instead
    ([`streamk_kernel`][gpulab.matmul.kernels_numba.streamk_kernel]).
    """
    from gpulab import device

    s = _warptile_shape(WT_BM, WT_BN, WT_BK, WT_WM, WT_WN, WT_WNITER, WT_TM, WT_TN, WT_THREADS)
    U = np.uint64
    BK, AS, BN = WT_BK, WT_BM + WT_APAD, WT_BN
    NA, NB = 4 * s["A_LOADS"], 4 * s["B_LOADS"]  # floats each thread carries to the next tile
    FM, FN = s["WMITER"] * WT_TM, WT_WNITER * WT_TN  # this thread's accumulators: FM×FN
    uTHREADS, uNA, uNB = U(WT_THREADS), U(NA), U(NB)
    uBM, uBN, uBK = U(WT_BM), U(WT_BN), U(WT_BK)
    uWM, uWN, uWARPS_N, uLCOLS = U(WT_WM), U(WT_WN), U(WT_BN // WT_WN), U(s["LCOLS"])
    uWMITER, uWNITER, uSUBM, uSUBN, uTM, uTN = (U(s["WMITER"]), U(WT_WNITER), U(s["SUBM"]), U(s["SUBN"]),
                                                 U(WT_TM), U(WT_TN))
    uFM, uFN, ZERO, ONE, TWO, THREE, FOUR, LANES = U(FM), U(FN), U(0), U(1), U(2), U(3), U(4), U(32)
    uTILE = U(WT_BM * WT_BN)  # floats of one stream-K workspace slot
    on_sim = device.on_simulator()
    ALIGN = None if on_sim else 16  # 16-byte aligned rows of 4-float groups (the simulator takes no alignment)
    inline = {} if on_sim else {"forceinline": True}
    bounds = {} if on_sim else {"launch_bounds": (WT_THREADS, WT_MINBLOCKS)}

    if on_sim:  # the simulator runs kernels as Python: no cache hints
        @cuda.jit(device=True)
        def load_l2(a, i):
            return a[i]
    else:
        @cuda.jit(device=True, **inline)
        def load_l2(a, i):  # ld.global.cg: from L2, past this SM's L1 (other blocks wrote it)
            return cuda.ldcg(a, i)

    def body(GUARD: bool):
        """The kernel's body, with (GUARD) or without bounds checks; GUARD is a compile-time
        constant, so each version has only its own code."""

        # --8<-- [start:warptile_load]
        @cuda.jit(device=True, **inline)
        def load_tile(X, rows, cols, r0, c0, width, n, tid, out):
            # Global -> registers: out[l] = X[r0 + e // width, c0 + e % width] for this thread's
            # e = tid + l*THREADS (zero outside rows × cols when GUARD). Where CUDA C gives each
            # lane a float4, numba's loads are scalar, so consecutive lanes take consecutive
            # floats: each warp-wide load touches 4 sectors, not the 16 of groups 16 bytes apart.
            for l in range(n):
                e = tid + l * uTHREADS
                r, c = r0 + e // width, c0 + e % width
                if GUARD:
                    out[l] = X[r, c] if r < rows and c < cols else float32(0.0)
                else:
                    out[l] = X[r, c]

        @cuda.jit(device=True, **inline)
        def load(A, B, Mu, Nu, Ku, m0, n0, k0, tid, a_next, b_next):
            load_tile(A, Mu, Ku, m0, k0, uBK, uNA, tid, a_next)  # BK lanes: BK consecutive k of a row of A
            load_tile(B, Ku, Nu, k0, n0, uBN, uNB, tid, b_next)  # BN lanes: a row of B
        # --8<-- [end:warptile_load]

        @cuda.jit(device=True, **inline)
        def store_tile(S, stage, width, n, tid, vals, transposed):
            # Registers -> one shared stage, each value at the (row, col) load_tile took it from,
            # or at (col, row) when transposed.
            for l in range(n):
                e = tid + l * uTHREADS
                if transposed:
                    S[stage, e % width, e // width] = vals[l]
                else:
                    S[stage, e // width, e % width] = vals[l]

        @cuda.jit(device=True, **inline)
        def store(As, Bs, stage, tid, a_next, b_next):
            store_tile(As, stage, uBK, uNA, tid, a_next, True)  # k-major; the padding spreads a warp over 32 banks
            store_tile(Bs, stage, uBN, uNB, tid, b_next, False)  # consecutive lanes, consecutive words

        # --8<-- [start:warptile]
        @cuda.jit(device=True, **inline)
        def step(As, Bs, stage, k, ab, bb, acc, a_frag, b_frag):
            # One k of the tile: this thread's fragments of row k of As and Bs, then FM*FN FMAs.
            for mi in range(uWMITER):  # groups of 4 consecutive floats: one 128-bit load each, if merged
                for i in range(uTM):
                    a_frag[mi * uTM + i] = As[stage, k, ab + mi * uSUBM + i]
            for ni in range(uWNITER):
                for j in range(uTN):
                    b_frag[ni * uTN + j] = Bs[stage, k, bb + ni * uSUBN + j]
            for i in range(uFM):
                for j in range(uFN):
                    acc[i, j] += a_frag[i] * b_frag[j]

        @cuda.jit(device=True, **inline)
        def place(tid):
            # (wm0, wn0): this warp's tile inside the block tile; (lr, lc): this lane's block
            # inside a sub-tile
            warp, lane = tid // LANES, tid % LANES
            return (warp // uWARPS_N) * uWM, (warp % uWARPS_N) * uWN, (lane // uLCOLS) * uTM, (lane % uLCOLS) * uTN

        @cuda.jit(device=True, **inline)
        def zero(acc):
            for i in range(uFM):
                for j in range(uFN):
                    acc[i, j] = float32(0.0)

        @cuda.jit(device=True, **inline)
        def tiles(A, B, Mu, Nu, Ku, m0, n0, k_lo, k_hi, tid, ab, bb, As, Bs, acc, a_frag, b_frag, a_next, b_next):
            # acc += the block tile at (m0, n0) over k in [k_lo, k_hi) (k_lo a multiple of BK):
            # two shared stages, the next tile in flight in registers; ends with a barrier.
            load(A, B, Mu, Nu, Ku, m0, n0, k_lo, tid, a_next, b_next)
            store(As, Bs, ZERO, tid, a_next, b_next)
            cuda.syncthreads()
            stage = ZERO
            for k0 in range(k_lo, k_hi, uBK):
                k1 = k0 + uBK
                if k1 < k_hi:  # the next tile's loads are in flight while we compute on this one
                    load(A, B, Mu, Nu, Ku, m0, n0, k1, tid, a_next, b_next)
                for k in range(ZERO, uBK, FOUR):  # numba has no #pragma unroll: 4 steps written out
                    step(As, Bs, stage, k, ab, bb, acc, a_frag, b_frag)
                    step(As, Bs, stage, k + ONE, ab, bb, acc, a_frag, b_frag)
                    step(As, Bs, stage, k + TWO, ab, bb, acc, a_frag, b_frag)
                    step(As, Bs, stage, k + THREE, ab, bb, acc, a_frag, b_frag)
                if k1 < k_hi:  # the other stage was last read before the previous barrier: safe to fill
                    store(As, Bs, ONE - stage, tid, a_next, b_next)
                cuda.syncthreads()
                stage = ONE - stage

        @cuda.jit(device=True, **inline)
        def put(C, Mu, Nu, m0, n0, wm0, wn0, lr, lc, acc):
            for mi in range(uWMITER):  # each lane writes its contiguous TN columns
                for i in range(uTM):
                    row = m0 + wm0 + mi * uSUBM + lr + i
                    if not GUARD or row < Mu:
                        for ni in range(uWNITER):
                            for j in range(uTN):
                                col = n0 + wn0 + ni * uSUBN + lc + j
                                if not GUARD or col < Nu:
                                    C[row, col] = acc[mi * uTM + i, ni * uTN + j]

        @cuda.jit(device=True, **inline)
        def run(A, B, C, Mu, Nu, Ku, As, Bs):
            tid = uint64(cuda.threadIdx.x)
            wm0, wn0, lr, lc = place(tid)
            ab, bb = wm0 + lr, wn0 + lc  # this thread's first fragment columns in As and Bs
            m0 = uint64(cuda.blockIdx.y) * uBM
            n0 = uint64(cuda.blockIdx.x) * uBN
            acc = cuda.local.array((FM, FN), float32)  # constant indices only: registers
            a_frag = cuda.local.array(FM, float32)
            b_frag = cuda.local.array(FN, float32)
            a_next = cuda.local.array(NA, float32)  # the next tile, in flight in registers
            b_next = cuda.local.array(NB, float32)
            zero(acc)
            tiles(A, B, Mu, Nu, Ku, m0, n0, ZERO, Ku, tid, ab, bb, As, Bs, acc, a_frag, b_frag, a_next, b_next)
            put(C, Mu, Nu, m0, n0, wm0, wn0, lr, lc, acc)
        # --8<-- [end:warptile]

        # --8<-- [start:streamk]
        @cuda.jit(device=True, **inline)
        def stream_k(A, B, C, Mu, Nu, Ku, As, Bs, partials, arrivals, dp, sk, b, arrived):
            # Stream-K block b's equal run of the units (one tile of C over one BK-deep k-tile)
            # of the tiles after the first dp, segment by segment, as CUDA C's sk_blocks_work.
            tid = uint64(cuda.threadIdx.x)
            wm0, wn0, lr, lc = place(tid)
            ab, bb = wm0 + lr, wn0 + lc
            acc = cuda.local.array((FM, FN), float32)
            a_frag = cuda.local.array(FM, float32)
            b_frag = cuda.local.array(FN, float32)
            a_next = cuda.local.array(NA, float32)
            b_next = cuda.local.array(NB, float32)
            kt = (Ku + uBK - ONE) // uBK
            tiles_n = (Nu + uBN - ONE) // uBN
            units = (((Mu + uBM - ONE) // uBM) * tiles_n - dp) * kt
            first = units * b // sk
            end = units * (b + ONE) // sk
            u = first
            while u < end:
                t = u // kt  # the stream-K tile: tile dp + t of C
                lo = u - t * kt
                hi = min(kt, end - t * kt)
                m0 = ((dp + t) // tiles_n) * uBM
                n0 = ((dp + t) % tiles_n) * uBN
                zero(acc)
                tiles(A, B, Mu, Nu, Ku, m0, n0, lo * uBK, min(Ku, hi * uBK), tid, ab, bb, As, Bs, acc,
                      a_frag, b_frag, a_next, b_next)
                b_first = ((t * kt + ONE) * sk - ONE) // units  # the blocks whose runs hold tile t
                b_last = ((t * kt + kt) * sk - ONE) // units
                if b_first == b_last:  # the whole tile is this block's
                    put(C, Mu, Nu, m0, n0, wm0, wn0, lr, lc, acc)
                else:  # save this segment, count it in; the last to arrive sums them in k order
                    base = (TWO * b + (ZERO if u == first else ONE)) * uTILE
                    for i in range(uFM):
                        for j in range(uFN):
                            partials[base + (i * uFN + j) * uTHREADS + tid] = acc[i, j]
                    cuda.threadfence()
                    cuda.syncthreads()
                    if tid == ZERO:
                        arrived[0] = cuda.atomic.add(arrivals, t, 1)
                    cuda.syncthreads()
                    if uint64(arrived[0]) == b_last - b_first:
                        cuda.threadfence()
                        for blk in range(b_first, b_last + ONE):
                            src = (TWO * blk + (ZERO if units * blk // sk // kt == t else ONE)) * uTILE
                            for i in range(uFM):
                                for j in range(uFN):
                                    v = load_l2(partials, src + (i * uFN + j) * uTHREADS + tid)
                                    acc[i, j] = v if blk == b_first else acc[i, j] + v
                        put(C, Mu, Nu, m0, n0, wm0, wn0, lr, lc, acc)
                        if tid == ZERO:
                            arrivals[t] = 0  # ready for the next launch
                u = t * kt + hi
        # --8<-- [end:streamk]

        return run, stream_k

    (fast, sk_fast), (guarded, sk_guarded) = body(False), body(True)

    if stream_k:
        @cuda.jit(**bounds)
        def matmul_streamk(A, B, C, M, N, K, partials, arrivals, dp_tiles, sk_blocks):
            As = cuda.shared.array((2, BK, AS), float32, alignment=ALIGN)
            Bs = cuda.shared.array((2, BK, BN), float32, alignment=ALIGN)
            arrived = cuda.shared.array(1, int32)
            Mu, Nu, Ku = uint64(M), uint64(N), uint64(K)
            dp, sk = uint64(dp_tiles), uint64(sk_blocks)
            ident = uint64(cuda.blockIdx.y) * uint64(cuda.gridDim.x) + uint64(cuda.blockIdx.x)
            uniform = Mu % uBM == ZERO and Nu % uBN == ZERO and Ku % uBK == ZERO
            if ident < dp:  # a whole tile, with warptile's code, at its place in warptile's grid
                if uniform:
                    fast(A, B, C, Mu, Nu, Ku, As, Bs)
                else:
                    guarded(A, B, C, Mu, Nu, Ku, As, Bs)
            elif ident < dp + sk:
                if uniform:
                    sk_fast(A, B, C, Mu, Nu, Ku, As, Bs, partials, arrivals, dp, sk, ident - dp, arrived)
                else:
                    sk_guarded(A, B, C, Mu, Nu, Ku, As, Bs, partials, arrivals, dp, sk, ident - dp, arrived)

        return matmul_streamk

    @cuda.jit(**bounds)
    def matmul_warptile(A, B, C, M, N, K):
        As = cuda.shared.array((2, BK, AS), float32, alignment=ALIGN)
        Bs = cuda.shared.array((2, BK, BN), float32, alignment=ALIGN)
        Mu, Nu, Ku = uint64(M), uint64(N), uint64(K)
        if Mu % uBM == ZERO and Nu % uBN == ZERO and Ku % uBK == ZERO:  # uniform: no bounds checks
            fast(A, B, C, Mu, Nu, Ku, As, Bs)
        else:
            guarded(A, B, C, Mu, Nu, Ku, As, Bs)

    return matmul_warptile


def streamk_kernel(**params):
    """warptile + stream-K, the twin of CUDA C's `matmul_streamk` (the same parameters, schedule
    and workspace: [`stream_k_schedule`][gpulab.matmul.host.stream_k_schedule]): the first
    `dp_tiles` blocks of warptile's grid compute whole tiles with warptile's code, the next
    `sk_blocks` share the last wave's k-tiles, and the last block to arrive at a split tile adds
    its partial sums in k order (read with `cuda.ldcg`, from L2)."""
    return warptile_kernel(**params, stream_k=True)
