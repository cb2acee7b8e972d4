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
from numba import config, cuda, float32, float64
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


@lru_cache(maxsize=None)
def register_kernel(BM: int, BN: int, BK: int, TM: int, TN: int, PAD: int):
    """Register tiling: a block computes a BM×BN tile of C, each thread a TM×TN sub-tile.

    The sub-tile lives in a local array indexed only by loop counters with constant trip
    counts, so the compiler unrolls the loops and keeps it in registers (the compile check
    asserts the PTX has no local-memory traffic). Thread (tx, ty) owns rows ``ty + i*RS`` and
    columns ``tx + j*CS``: strided rather than contiguous, so neighbouring lanes read
    neighbouring shared-memory words (no bank conflicts) and write neighbouring C elements.
    """
    CS = BN // TN  # threads along x (columns)
    RS = BM // TM  # threads along y (rows)
    THREADS = CS * RS
    A_LOADS = (BM * BK) // THREADS  # elements of the A tile each thread loads
    B_LOADS = (BK * BN) // THREADS
    BMP = BM + PAD  # a closure constant: numba needs shared-array shapes known at compile time
    assert BM % TM == 0 and BN % TN == 0 and (BM * BK) % THREADS == 0 and (BK * BN) % THREADS == 0

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
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        tid = ty * CS + tx
        m0 = cuda.blockIdx.y * BM
        n0 = cuda.blockIdx.x * BN
        for i in range(TM):
            for j in range(TN):
                acc[i, j] = float32(0.0)
        for k0 in range(0, K, BK):
            for l in range(A_LOADS):  # consecutive threads: consecutive k of one row of A
                e = tid + l * THREADS
                r, kk = e // BK, e % BK
                As[kk, r] = A[m0 + r, k0 + kk] if m0 + r < M and k0 + kk < K else float32(0.0)
            for l in range(B_LOADS):  # consecutive threads: consecutive columns of B
                e = tid + l * THREADS
                kk, c = e // BN, e % BN
                Bs[kk, c] = B[k0 + kk, n0 + c] if k0 + kk < K and n0 + c < N else float32(0.0)
            cuda.syncthreads()
            for k in range(BK):
                for i in range(TM):
                    a_frag[i] = As[k, ty + i * RS]
                for j in range(TN):
                    b_frag[j] = Bs[k, tx + j * CS]
                for i in range(TM):  # TM*TN FMAs for TM+TN shared loads
                    for j in range(TN):
                        acc[i, j] += a_frag[i] * b_frag[j]
            cuda.syncthreads()
        for i in range(TM):
            row = m0 + ty + i * RS
            if row < M:
                for j in range(TN):
                    col = n0 + tx + j * CS
                    if col < N:
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
    CS = BN // TN
    RS = BM // TM
    THREADS = CS * RS
    A_LOADS = (BM * BK) // THREADS
    B_LOADS = (BK * BN) // THREADS
    BMP = BM + PAD

    # --8<-- [start:prefetch]
    @cuda.jit
    def matmul_prefetch(A, B, C, M, N, K):
        As = cuda.shared.array((2, BK, BMP), float32)
        Bs = cuda.shared.array((2, BK, BN), float32)
        acc = cuda.local.array((TM, TN), float32)
        a_frag = cuda.local.array(TM, float32)
        b_frag = cuda.local.array(TN, float32)
        a_next = cuda.local.array(A_LOADS, float32)  # the next tile, in flight in registers
        b_next = cuda.local.array(B_LOADS, float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        tid = ty * CS + tx
        m0 = cuda.blockIdx.y * BM
        n0 = cuda.blockIdx.x * BN
        for i in range(TM):
            for j in range(TN):
                acc[i, j] = float32(0.0)
        # Stage 0 gets the first tile.
        for l in range(A_LOADS):
            e = tid + l * THREADS
            r, kk = e // BK, e % BK
            As[0, kk, r] = A[m0 + r, kk] if m0 + r < M and kk < K else float32(0.0)
        for l in range(B_LOADS):
            e = tid + l * THREADS
            kk, c = e // BN, e % BN
            Bs[0, kk, c] = B[kk, n0 + c] if kk < K and n0 + c < N else float32(0.0)
        cuda.syncthreads()
        stage = 0
        for k0 in range(0, K, BK):
            k1 = k0 + BK
            if k1 < K:  # issue the next tile's global loads before computing on this one
                for l in range(A_LOADS):
                    e = tid + l * THREADS
                    r, kk = e // BK, e % BK
                    a_next[l] = A[m0 + r, k1 + kk] if m0 + r < M and k1 + kk < K else float32(0.0)
                for l in range(B_LOADS):
                    e = tid + l * THREADS
                    kk, c = e // BN, e % BN
                    b_next[l] = B[k1 + kk, n0 + c] if k1 + kk < K and n0 + c < N else float32(0.0)
            for k in range(BK):
                for i in range(TM):
                    a_frag[i] = As[stage, k, ty + i * RS]
                for j in range(TN):
                    b_frag[j] = Bs[stage, k, tx + j * CS]
                for i in range(TM):
                    for j in range(TN):
                        acc[i, j] += a_frag[i] * b_frag[j]
            if k1 < K:  # the other stage was last read before the previous barrier: safe to fill
                for l in range(A_LOADS):
                    e = tid + l * THREADS
                    As[1 - stage, e % BK, e // BK] = a_next[l]
                for l in range(B_LOADS):
                    e = tid + l * THREADS
                    Bs[1 - stage, e // BN, e % BN] = b_next[l]
            cuda.syncthreads()
            stage = 1 - stage
        for i in range(TM):
            row = m0 + ty + i * RS
            if row < M:
                for j in range(TN):
                    col = n0 + tx + j * CS
                    if col < N:
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
    per word (bit-cast, which costs no instruction) makes every fragment load an
    ``ld.shared.f64`` carrying two useful values. A thread owns pairs of rows and of columns,
    ``2*(ty + i*RS) + {0, 1}`` and ``2*(tx + j*CS) + {0, 1}``, strided as before.
    """
    CS = BN // TN  # threads along x
    RS = BM // TM  # threads along y
    THREADS = CS * RS
    TM2, TN2 = TM // 2, TN // 2  # pairs per thread
    A_PAIRS = (BM * BK) // (2 * THREADS)  # pairs of the A tile each thread loads
    B_PAIRS = (BK * BN) // (2 * THREADS)
    BMP2 = (BM + PAD) // 2
    BN2 = BN // 2
    assert TM % 2 == 0 and TN % 2 == 0 and PAD % 2 == 0 and (BM * BK) % (2 * THREADS) == 0 and (BK * BN) % (2 * THREADS) == 0

    # --8<-- [start:wide]
    @cuda.jit
    def matmul_wide(A, B, C, M, N, K):
        As = cuda.shared.array((2, BK, BMP2), float64)  # As[s, k, p] = (A[2p, k], A[2p+1, k])
        Bs = cuda.shared.array((2, BK, BN2), float64)  # Bs[s, k, q] = (B[k, 2q], B[k, 2q+1])
        acc = cuda.local.array((TM, TN), float32)
        a_frag = cuda.local.array(TM, float32)
        b_frag = cuda.local.array(TN, float32)
        a_next = cuda.local.array(A_PAIRS, float64)
        b_next = cuda.local.array(B_PAIRS, float64)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        tid = ty * CS + tx
        m0 = cuda.blockIdx.y * BM
        n0 = cuda.blockIdx.x * BN
        for i in range(TM):
            for j in range(TN):
                acc[i, j] = float32(0.0)
        k1 = 0
        stage = 0
        for k0 in range(-BK, K, BK):  # k0 = -BK only loads the first tile
            k1 = k0 + BK
            if k1 < K:  # the next tile's pairs, loaded into registers before the FMAs
                for l in range(A_PAIRS):
                    e = tid + l * THREADS
                    p, kk = e // BK, e % BK
                    r = m0 + 2 * p
                    lo = A[r, k1 + kk] if r < M and k1 + kk < K else float32(0.0)
                    hi = A[r + 1, k1 + kk] if r + 1 < M and k1 + kk < K else float32(0.0)
                    a_next[l] = pack_pair(lo, hi)
                for l in range(B_PAIRS):
                    e = tid + l * THREADS
                    kk, q = e // BN2, e % BN2
                    c = n0 + 2 * q
                    lo = B[k1 + kk, c] if k1 + kk < K and c < N else float32(0.0)
                    hi = B[k1 + kk, c + 1] if k1 + kk < K and c + 1 < N else float32(0.0)
                    b_next[l] = pack_pair(lo, hi)
            if k0 >= 0:
                for k in range(BK):
                    for i in range(TM2):
                        pair = As[stage, k, ty + i * RS]
                        a_frag[2 * i] = low_of(pair)
                        a_frag[2 * i + 1] = high_of(pair)
                    for j in range(TN2):
                        pair = Bs[stage, k, tx + j * CS]
                        b_frag[2 * j] = low_of(pair)
                        b_frag[2 * j + 1] = high_of(pair)
                    for i in range(TM):
                        for j in range(TN):
                            acc[i, j] += a_frag[i] * b_frag[j]
            if k1 < K:
                nxt = 1 - stage if k0 >= 0 else stage
                for l in range(A_PAIRS):
                    e = tid + l * THREADS
                    As[nxt, e % BK, e // BK] = a_next[l]
                for l in range(B_PAIRS):
                    e = tid + l * THREADS
                    Bs[nxt, e // BN2, e % BN2] = b_next[l]
                if k0 >= 0:
                    stage = nxt
            cuda.syncthreads()
        for i in range(TM):
            row = m0 + 2 * (ty + (i // 2) * RS) + i % 2
            if row < M:
                for j in range(TN):
                    col = n0 + 2 * (tx + (j // 2) * CS) + j % 2
                    if col < N:
                        C[row, col] = acc[i, j]
    # --8<-- [end:wide]

    return matmul_wide


def ptx_targets() -> list[tuple[str, object, str]]:
    """Every numba kernel of this chapter with the parameters the registry uses."""
    from gpulab.matmul.variants import REGISTRY

    targets = [("matmul_naive", matmul_naive, SIG), ("matmul_coalesced", matmul_coalesced, SIG)]
    csig = "void(float32[:, ::1], float32[:, ::1], int32, int32, int32)"
    B = np.ones((64, 64), np.float32)
    targets.append(("matmul_constant", constant_kernel(B, True), csig))
    targets.append(("matmul_constant_scattered", constant_kernel(B, False), csig))
    for v in REGISTRY.select(backend="numba"):
        if v.name == "shared":
            targets.append((f"matmul_shared{v.params}", shared_kernel(**v.params), SIG))
        elif v.name.startswith("register"):
            targets.append((f"matmul_register{v.params}", register_kernel(**v.params), SIG))
        elif v.name.startswith("prefetch"):
            targets.append((f"matmul_prefetch{v.params}", prefetch_kernel(**v.params), SIG))
        elif v.name.startswith("wide"):
            targets.append((f"matmul_wide{v.params}", wide_kernel(**v.params), SIG))
    return targets
