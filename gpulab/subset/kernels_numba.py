"""Chapter 2 kernels in numba.cuda: the least-correlated k-subset of n strategies.

Every kernel reads `Q`, the packed strictly-lower triangle of the squared correlations
(`Q[i(i-1)/2 + j] = C[i, j]**2` for i > j), and `T`, the binomial table
(`T[r, a] = C(a, r)`, uint64) used to unrank. Ranks are uint64 throughout.

The seed variants (`global`, `shared`, `constant_local`) unrank every subset from
scratch and compare distances `sqrt(2 * sum)`; the incremental ones walk chunks of
consecutive ranks with [`scan_chunk`][gpulab.subset.reference.scan_chunk] and compare sums.

A correlation matrix that already lives on the device (a CuPy array, a PyTorch tensor ...)
is validated and packed into `Q` there by one kernel, `check_and_pack`, so its n² values
never cross to the host.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numba import cuda, float64, int32, int64, uint64

from gpulab.subset.reference import scan_chunk

MAX_K = 16  # size of the thread-local selection arrays (a compile-time size)
RANK_NONE = np.uint64(0xFFFFFFFFFFFFFFFF)  # the rank of "no subset seen" (loses every tie)


# --8<-- [start:unrank_dev]
@cuda.jit(device=True)
def unrank_into(T, n, k, m, out, o):
    """Write the m-th k-subset (lexicographic) into out[o], ..., out[o + k - 1]."""
    x = 0
    for i in range(k):
        r = k - 1 - i
        while m >= T[r, n - 1 - x]:  # skip the C(n-1-x, r) subsets that start with x
            m -= T[r, n - 1 - x]
            x += 1
        out[o + i] = x
        x += 1
# --8<-- [end:unrank_dev]


@cuda.jit(device=True)
def better(v, r, bv, br):
    """(v, r) beats (bv, br): a smaller value, or the same value at a lower rank."""
    return v < bv or (v == bv and r < br)


# --8<-- [start:block_argmin]
@cuda.jit(device=True)
def block_argmin(fs, us, o, best, best_rank):
    """Tree reduction of (value, rank) pairs over the block (blockDim.x a power of two).

    ``fs`` (float64) and ``us`` (uint64) are views of the same dynamic shared memory;
    values go to fs[o : o+B], ranks to us[o+B : o+2B]. Thread 0 gets the block's best.
    """
    tid = cuda.threadIdx.x
    B = cuda.blockDim.x
    fs[o + tid] = best
    us[o + B + tid] = best_rank
    cuda.syncthreads()
    step = B // 2
    while step > 0:
        if tid < step:
            v, r = fs[o + tid + step], us[o + B + tid + step]
            keep = not better(v, r, fs[o + tid], us[o + B + tid])  # stored either way: the same accesses
            fs[o + tid] = fs[o + tid] if keep else v  # whatever the data (the tracer's lines do not vary)
            us[o + B + tid] = us[o + B + tid] if keep else r
        cuda.syncthreads()
        step //= 2
    return fs[o], us[o + B]
# --8<-- [end:block_argmin]


# --8<-- [start:global]
@cuda.jit
def subset_global(Q, T, n, k, base, count, sel, sub, dist):
    """One subset per thread and step of a grid-stride loop; temporaries in global memory.

    ``sel`` (grid × k int32) holds each thread's selection, ``sub`` (grid × k(k-1)/2
    float64) the gathered submatrix; ``dist[t]`` is the distance of rank base + t. The
    argmin happens on the host.
    """
    tid = cuda.grid(1)
    stride = cuda.gridsize(1)
    npk = k * (k - 1) // 2
    for t in range(tid, count, stride):
        unrank_into(T, n, k, base + uint64(t), sel, tid * k)
        p = 0
        for b in range(1, k):  # gather the submatrix (canonical pair order)
            cb = sel[tid * k + b]
            rb = cb * (cb - 1) // 2
            for a in range(b):
                sub[tid * npk + p] = Q[rb + sel[tid * k + a]]
                p += 1
        s = 0.0
        for p in range(npk):
            s += sub[tid * npk + p]
        dist[t] = math.sqrt(2.0 * s)
# --8<-- [end:global]


# --8<-- [start:shared]
@cuda.jit
def subset_shared(Q, T, n, k, npairs, base, count, out_val, out_rank):
    """Q and every thread's selection in dynamic shared memory; a block argmin per block.

    Dynamic shared layout (one allocation, three typed views of it):
    ``[Q: npairs f64][values: B f64][ranks: B u64][selections: B*k i32]``.
    """
    fs = cuda.shared.array(0, float64)
    us = cuda.shared.array(0, uint64)
    isel = cuda.shared.array(0, int32)
    tid = cuda.threadIdx.x
    B = cuda.blockDim.x
    for i in range(tid, npairs, B):  # stage Q once per block
        fs[i] = Q[i]
    cuda.syncthreads()
    so = 2 * (npairs + 2 * B) + tid * k  # this thread's selection, in int32 units
    best = np.inf
    best_rank = RANK_NONE
    for t in range(cuda.grid(1), count, cuda.gridsize(1)):
        m = base + uint64(t)
        unrank_into(T, n, k, m, isel, so)
        s = 0.0
        for b in range(1, k):
            cb = isel[so + b]
            rb = cb * (cb - 1) // 2
            for a in range(b):
                s += fs[rb + isel[so + a]]
        d = math.sqrt(2.0 * s)
        if d < best:  # ranks rise along the loop: strict < keeps the lowest
            best = d
            best_rank = m
    v, r = block_argmin(fs, us, npairs, best, best_rank)
    if tid == 0:
        out_val[cuda.blockIdx.x] = v
        out_rank[cuda.blockIdx.x] = r
# --8<-- [end:shared]


@lru_cache(maxsize=8)
def _constant_local_kernel(q_bytes: bytes, npairs: int):
    Q_host = np.frombuffer(q_bytes, dtype=np.float64).copy() if npairs else np.zeros(1, np.float64)

    # --8<-- [start:constant_local]
    @cuda.jit
    def subset_constant_local(T, n, k, base, count, out_val, out_rank):
        Qc = cuda.const.array_like(Q_host)  # baked into the module's constant bank
        fs = cuda.shared.array(0, float64)
        us = cuda.shared.array(0, uint64)
        sel = cuda.local.array(MAX_K, int32)  # thread-local: registers or the local-memory stack
        best = np.inf
        best_rank = RANK_NONE
        for t in range(cuda.grid(1), count, cuda.gridsize(1)):
            m = base + uint64(t)
            unrank_into(T, n, k, m, sel, 0)
            s = 0.0
            for b in range(1, k):
                rb = sel[b] * (sel[b] - 1) // 2
                for a in range(b):
                    # the 32 lanes hold 32 different subsets: 32 different constant addresses
                    s += Qc[rb + sel[a]]
            d = math.sqrt(2.0 * s)
            if d < best:
                best = d
                best_rank = m
        v, r = block_argmin(fs, us, 0, best, best_rank)
        if cuda.threadIdx.x == 0:
            out_val[cuda.blockIdx.x] = v
            out_rank[cuda.blockIdx.x] = r
    # --8<-- [end:constant_local]

    return subset_constant_local


def constant_local_kernel(Q: np.ndarray):
    """The constant-memory kernel with ``Q`` baked in (numba captures const arrays at compile time)."""
    Q = np.ascontiguousarray(Q, dtype=np.float64)
    return _constant_local_kernel(Q.tobytes(), Q.size)


scan_dev = cuda.jit(device=True)(scan_chunk)


# --8<-- [start:q_placement]
@cuda.jit(device=True)
def q_in_shared(Q, fs, npairs):
    """Copy Q into the block's dynamic shared memory (every block); the scan reads it there,
    and the argmin's slots start after it. Returns `(the Q the scan reads, the slots' offset)`."""
    for i in range(cuda.threadIdx.x, npairs, cuda.blockDim.x):
        fs[i] = Q[i]
    cuda.syncthreads()
    return fs, npairs


@cuda.jit(device=True)
def q_in_global(Q, fs, npairs):
    """No copy: the scan reads Q where it lies, in global memory (through L1 and L2), so the
    block's shared memory holds only the argmin's slots, from 0, whatever n."""
    return Q, 0
# --8<-- [end:q_placement]


@lru_cache(maxsize=None)
def incremental_kernel(K: int, warp: bool, q_in: str = "shared"):
    """Chunks of consecutive ranks per thread, incremental sums, the whole range in one launch.

    ``K`` is a compile-time constant so the loops over positions unroll and ``c``/``P`` can
    live in registers. ``warp``: argmin with warp shuffles first (needs a real GPU).
    ``q_in``: where the scan reads Q, ``"shared"`` (copied there by every block: the device's
    shared memory caps n) or ``"global"`` (read where it lies; chosen here, in Python, so each
    kernel is compiled with one placement: `q_in_shared` or `q_in_global`).
    """
    KA = max(K, 1)
    place = {"shared": q_in_shared, "global": q_in_global}[q_in]

    # --8<-- [start:incremental]
    @cuda.jit
    def subset_incremental(Q, T, n, npairs, base, stop, chunk, nchunks, out_val, out_rank):
        fs = cuda.shared.array(0, float64)
        us = cuda.shared.array(0, uint64)
        q, o = place(Q, fs, npairs)  # the Q the scan reads; where the argmin's slots start
        c = cuda.local.array(KA, int32)
        P = cuda.local.array(KA, float64)
        best = np.inf
        best_rank = RANK_NONE
        # grid-stride over chunks of the ranks [base, stop): the whole partition loop runs on the GPU
        for t in range(cuda.grid(1), nchunks, cuda.gridsize(1)):
            start = base + uint64(t) * chunk
            count = min(chunk, stop - start)
            s, r = scan_dev(q, T, n, K, start, count, c, P)
            if s < best:
                best = s
                best_rank = r
        if warp:
            v, r = warp_block_argmin(fs, us, o, best, best_rank)
        else:
            v, r = block_argmin(fs, us, o, best, best_rank)
        if cuda.threadIdx.x == 0:
            out_val[cuda.blockIdx.x] = v
            out_rank[cuda.blockIdx.x] = r
    # --8<-- [end:incremental]

    return subset_incremental


# --8<-- [start:warp_argmin]
@cuda.jit(device=True)
def warp_argmin(v, r):
    """(value, rank) minimum over the 32 lanes of a warp with shuffles: no shared memory, no barrier."""
    off = 16
    while off > 0:
        v2 = cuda.shfl_down_sync(0xFFFFFFFF, v, off)
        r2 = uint64(cuda.shfl_down_sync(0xFFFFFFFF, int64(r), off))  # numba shuffles int64, not uint64
        if better(v2, r2, v, r):
            v = v2
            r = r2
        off //= 2
    return v, r


@cuda.jit(device=True)
def warp_block_argmin(fs, us, o, best, best_rank):
    """Warp argmin, one (value, rank) per warp in shared memory, then warp 0 reduces those."""
    tid = cuda.threadIdx.x
    lane = tid % 32
    w = tid // 32
    nw = (cuda.blockDim.x + 31) // 32
    v, r = warp_argmin(best, best_rank)
    if lane == 0:
        fs[o + w] = v
        us[o + 32 + w] = r
    cuda.syncthreads()
    if w == 0:
        if lane < nw:
            v, r = fs[o + lane], us[o + 32 + lane]
        else:
            v, r = np.inf, RANK_NONE
        v, r = warp_argmin(v, r)
    return v, r
# --8<-- [end:warp_argmin]


# --8<-- [start:final]
@cuda.jit
def final_argmin(vals, ranks, nblocks, out_val, out_rank):
    """One block reduces the per-block results: the last step of the one-sync search."""
    fs = cuda.shared.array(0, float64)
    us = cuda.shared.array(0, uint64)
    best = np.inf
    best_rank = RANK_NONE
    for i in range(cuda.threadIdx.x, nblocks, cuda.blockDim.x):
        if better(vals[i], ranks[i], best, best_rank):
            best = vals[i]
            best_rank = ranks[i]
    v, r = block_argmin(fs, us, 0, best, best_rank)
    if cuda.threadIdx.x == 0:
        out_val[0] = v
        out_rank[0] = r
# --8<-- [end:final]


# ----------------------------------------------------------------------------- a correlation matrix on the device


# --8<-- [start:device_checks]
@cuda.jit
def check_and_pack(C, n, stats, stale, Q):
    """One pass over C (n×n, any real dtype), read where it lies, for both jobs at once:
    `Q[i(i-1)/2 + j] = C[i, j]**2` for i > j, squared in float64 exactly as the host's
    `squared_packed` (so every variant sums the same bits), and the checks: NaN/inf entries
    are counted in `stats[0]`, `stats[1]` becomes max |C[i,j] - C[j,i]| and `stats[2]`
    max |C[i,i] - 1| (`stats` zeroed before the launch). The first thread zeroes `stale`: the
    host's other buffer of three, which the next launch adds into.

    Consecutive threads take consecutive j of a row, so the reads of C[i, j] and the writes of
    Q are coalesced. Each thread keeps its own count and maxima over a grid-stride loop and
    touches the three atomics only when it saw something (a valid matrix costs no atomics).
    """
    bad = 0.0
    asym = 0.0
    diag = 0.0
    nn = uint64(n) * uint64(n)
    if cuda.grid(1) == 0:
        stale[0] = 0.0
        stale[1] = 0.0
        stale[2] = 0.0
    for p in range(uint64(cuda.grid(1)), nn, uint64(cuda.gridsize(1))):
        i = p // uint64(n)
        j = p - i * uint64(n)
        v = float64(C[i, j])
        if i > j:
            Q[i * (i - uint64(1)) // uint64(2) + j] = v * v
        if not math.isfinite(v):
            bad += 1.0
        elif i == j:
            diag = max(diag, abs(v - 1.0))
        elif i > j:
            w = float64(C[j, i])
            if math.isfinite(w):
                asym = max(asym, abs(v - w))
    if bad > 0.0:
        cuda.atomic.add(stats, 0, bad)
    if asym > 0.0:
        cuda.atomic.max(stats, 1, asym)
    if diag > 0.0:
        cuda.atomic.max(stats, 2, diag)
# --8<-- [end:device_checks]


@cuda.jit
def column_moments(R, T, n, mean, ss, zero_var):
    """Per column j of the T×n returns: its mean and its sum of squared deviations (two
    passes, as numpy does); columns with no variance are counted in `zero_var[0]`.
    Thread j reads column j: the lanes of a warp read one row's consecutive values."""
    j = cuda.grid(1)
    if j < n:
        s = 0.0
        for t in range(T):
            s += float64(R[t, j])
        m = s / T
        q = 0.0
        for t in range(T):
            d = float64(R[t, j]) - m
            q += d * d
        mean[j] = m
        ss[j] = q
        if q == 0.0:
            cuda.atomic.add(zero_var, 0, 1)


@cuda.jit
def correlation_pairs(R, T, n, mean, ss, C):
    """C[i, j] = C[j, i] = Pearson correlation of columns i > j (clipped to [-1, 1] as numpy
    does); C[i, i] = 1 exactly. One thread per pair, x over j for coalesced reads of R's rows."""
    j, i = cuda.grid(2)
    if i < n and j <= i:
        if i == j:
            C[i, i] = 1.0
            return
        mi, mj = mean[i], mean[j]
        s = 0.0
        for t in range(T):
            s += (float64(R[t, i]) - mi) * (float64(R[t, j]) - mj)
        c = min(max(s / math.sqrt(ss[i] * ss[j]), -1.0), 1.0)
        C[i, j] = c
        C[j, i] = c


SIG_GLOBAL = "void(float64[::1], uint64[:, ::1], int32, int32, uint64, int64, int32[::1], float64[::1], float64[::1])"
SIG_SHARED = "void(float64[::1], uint64[:, ::1], int32, int32, int32, uint64, int64, float64[::1], uint64[::1])"
SIG_CONSTANT = "void(uint64[:, ::1], int32, int32, uint64, int64, float64[::1], uint64[::1])"
SIG_INCREMENTAL = "void(float64[::1], uint64[:, ::1], int32, int32, uint64, uint64, uint64, int64, float64[::1], uint64[::1])"
SIG_FINAL = "void(float64[::1], uint64[::1], int32, float64[::1], uint64[::1])"
SIG_CHECKS = "void({0}[:, ::1], int32, float64[::1], float64[::1], float64[::1])"
SIG_MOMENTS = "void({0}[:, ::1], int32, int32, float64[::1], float64[::1], int32[::1])"
SIG_PAIRS = "void({0}[:, ::1], int32, int32, float64[::1], float64[::1], float64[:, ::1])"


# --8<-- [start:lanes]
LANE_SLOTS = 8  # the x's a lane owns: n <= 32 * LANE_SLOTS


@cuda.jit(device=True)
def rows_before(x, xb, n):
    """Ranks from a unit's first subset (G, xb, xb+1) to (G, x, x+1): each x' in [xb, x)
    owns n-1-x' subsets."""
    return (x - xb) * (n - 1) - (x * (x - 1) - xb * (xb - 1)) // 2


@cuda.jit(device=True)
def lanes_unit(Q, c, k, n, xb, xlo, xhi, PX, g, RG, start, end, bounded, lane, best, best_rank):
    """One unit (prefix G = c[0..k-3]), the x in [xlo, xhi] of it; `bounded`: the chunk cuts
    it, so only the ranks in [start, end) count. Returns the lane's best (sum, rank)."""
    for j in range(xlo + 1, n):
        rj = j * (j - 1) // 2
        for a in range(k - 2):  # G's terms of row j: the same in every lane
            g[a] = Q[rj + c[a]]
        # --8<-- [start:lanes_hot]
        for s in range(LANE_SLOTS):
            if xb + 32 * s >= j or xb + 32 * s > xhi:
                break  # the warp's x's from here on are past j
            x = xb + lane + 32 * s
            if x < j and x >= xlo and x <= xhi:
                v = PX[s]
                for a in range(k - 2):
                    v += g[a]
                v += Q[rj + x]  # lanes: consecutive x, consecutive words
                if v <= best:  # rare once best is small: then the rank
                    r = RG + uint64(rows_before(x, xb, n) + j - x - 1)
                    if (not bounded or (r >= start and r < end)) and (v < best or r < best_rank):
                        best = v
                        best_rank = r
        # --8<-- [end:lanes_hot]
    return best, best_rank


@cuda.jit(device=True)
def scan_lanes(Q, T, n, k, start, count, c, P, PX, g, lane, best, best_rank):
    """A warp's walk over the ranks [start, start + count): `lanes_unit` over the units
    (prefixes G = c[0..k-3]) they reach, first and last cut by the chunk. Lane L owns the
    x = xb + L + 32 s and keeps PX[s], the sum over the pairs of (G, x) (scan_chunk's
    P[k-2]); the sums are scan_chunk's, term for term, in its order."""
    if k == 1:  # every sum is 0.0: the chunk's first rank is its best
        if better(0.0, start, best, best_rank):
            return 0.0, start
        return best, best_rank
    m = start
    x = 0
    for i in range(k):  # unrank start: every lane the same
        r = k - 1 - i
        while m >= T[r, n - 1 - x]:
            m -= T[r, n - 1 - x]
            x += 1
        c[i] = x
        x += 1
    P[0] = 0.0
    for b in range(1, k - 2):  # the pairs inside G
        rb = c[b] * (c[b] - 1) // 2
        s = P[b - 1]
        for a in range(b):
            s += Q[rb + c[a]]
        P[b] = s
    end = start + count
    xb = c[k - 3] + 1 if k >= 3 else 0
    RG = start - uint64(rows_before(c[k - 2], xb, n) + c[k - 1] - c[k - 2] - 1)  # the rank of (G, xb, xb+1)
    while True:
        mm = n - xb
        size = uint64(mm * (mm - 1) // 2)
        PG = P[k - 3] if k >= 3 else 0.0
        for s in range(LANE_SLOTS):
            x = xb + lane + 32 * s
            v = PG
            if x < n:
                rx = x * (x - 1) // 2
                for a in range(k - 2):
                    v += Q[rx + c[a]]
            PX[s] = v
        if RG >= start and end - RG >= size:
            best, best_rank = lanes_unit(Q, c, k, n, xb, xb, n - 2, PX, g, RG, start, end, False, lane,
                                         best, best_rank)
        else:  # the chunk cuts this unit: only the x's its ranks reach
            xlo = xb
            xhi = xb
            r = RG
            for x in range(xb, n - 1):
                nxt = r + uint64(n - 1 - x)  # (G, x, .) holds the ranks [r, nxt)
                if nxt <= start:
                    xlo = x + 1
                if r < end:
                    xhi = x
                r = nxt
            best, best_rank = lanes_unit(Q, c, k, n, xb, xlo, xhi, PX, g, RG, start, end, True, lane,
                                         best, best_rank)
        if end - RG <= size:
            break
        RG += size
        if k < 3:
            break
        i = -1  # the next G: the rightmost of c[0..k-3] that can still move (uniform)
        for t in range(k - 2):
            if c[t] != n - k + t:
                i = t
        if i < 0:
            break
        for t in range(k - 2):
            if t == i:
                c[t] += 1
            elif t > i:
                c[t] = c[t - 1] + 1
        for b in range(1, k - 2):
            if b >= i:
                rb = c[b] * (c[b] - 1) // 2
                s = P[b - 1]
                for a in range(b):
                    s += Q[rb + c[a]]
                P[b] = s
        xb = c[k - 3] + 1
    return best, best_rank


@lru_cache(maxsize=None)
def lanes_kernel(K: int):
    """One warp per chunk of consecutive ranks ([`scan_lanes`][gpulab.subset.kernels_numba.scan_lanes]),
    Q copied into shared memory, the block's argmin; `K` a compile-time constant, as in
    `incremental_kernel`."""
    KA = max(K, 1)
    GA = max(K - 2, 1)

    @cuda.jit
    def subset_lanes(Q, T, n, npairs, base, stop, chunk, nchunks, out_val, out_rank):
        fs = cuda.shared.array(0, float64)
        us = cuda.shared.array(0, uint64)
        q, o = q_in_shared(Q, fs, npairs)
        c = cuda.local.array(KA, int32)
        P = cuda.local.array(KA, float64)
        PX = cuda.local.array(LANE_SLOTS, float64)
        g = cuda.local.array(GA, float64)
        best = np.inf
        best_rank = RANK_NONE
        lane = cuda.threadIdx.x % 32
        warps = cuda.blockDim.x // 32
        for t in range(cuda.blockIdx.x * warps + cuda.threadIdx.x // 32, nchunks, cuda.gridDim.x * warps):
            start = base + uint64(t) * chunk
            count = min(chunk, stop - start)
            best, best_rank = scan_lanes(q, T, n, K, start, count, c, P, PX, g, lane, best, best_rank)
        v, r = block_argmin(fs, us, o, best, best_rank)
        if cuda.threadIdx.x == 0:
            out_val[cuda.blockIdx.x] = v
            out_rank[cuda.blockIdx.x] = r

    return subset_lanes
# --8<-- [end:lanes]
