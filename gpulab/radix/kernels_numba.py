"""Chapter 4 kernels in numba.cuda: scan, split, and LSD radix sort of uint32 keys.

Keys are always `uint32` here: signed and float keys are mapped to uint32 by an
order-preserving bit transform (`order_keys`, the device twin of
[`to_ordered`][gpulab.radix.host.to_ordered]) and back (`unorder_keys`). Values (for
`argsort` / `sort_pairs`) are `uint32` payloads moved with their keys; kernels take a
run-time `has_vals` flag so one kernel serves keys-only and key-value sorts.

Every count, offset and flag array is `int32`: numba promotes `uint32 op int64` to
float64, so keeping the bookkeeping signed keeps every index an integer.

Compile-time sizes (block sizes, digit width, keys per thread) are closure constants of small
cached factories, as in chapter 1.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import cuda, int32, int64, uint32

U32 = "uint32[::1]"
I32 = "int32[::1]"


def _bounds(BLOCK: int, MIN_BLOCKS: int) -> dict:
    """`cuda.jit` options for `__launch_bounds__(BLOCK, MIN_BLOCKS)`: ptxas caps the registers so
    that MIN_BLOCKS blocks fit an SM (the simulator's jit takes no such option)."""
    from gpulab import device

    return {} if device.on_simulator() or MIN_BLOCKS <= 1 else {"launch_bounds": (BLOCK, MIN_BLOCKS)}


# ----------------------------------------------------------------------------- small helpers

@cuda.jit(device=True)
def add32(a, b):
    """`a + b` of two int32 values, wrapping at 32 bits as the GPU's integer add does.

    The sum is formed in int64 and truncated explicitly: the compiler folds that into the same
    one 32-bit add, and the simulator (numpy scalars, which warn on int32 overflow) computes the
    same wrapped value without relying on overflow."""
    return int32(int64(a) + int64(b))


@cuda.jit(device=True)
def sub32(a, b):
    """`a - b` of two int32 values, wrapping at 32 bits (as `add32`)."""
    return int32(int64(a) - int64(b))

@cuda.jit
def iota(vals, n):
    """vals[i] = i: the initial payload of an argsort."""
    i = cuda.grid(1)
    if i < n:
        vals[i] = i


@lru_cache(maxsize=None)
def max_kernel(BLOCK: int):
    """out[0] = max(keys): a shared-memory tree per block, one atomic per block."""

    # --8<-- [start:max]
    @cuda.jit
    def max_reduce(keys, n, out):
        s = cuda.shared.array(BLOCK, uint32)
        tid = cuda.threadIdx.x
        m = uint32(0)
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        while i < n:  # grid-stride loop: a fixed grid covers any n
            k = keys[i]
            if k > m:
                m = k
            i += stride
        s[tid] = m
        cuda.syncthreads()
        half = BLOCK // 2
        while half > 0:
            if tid < half and s[tid + half] > s[tid]:
                s[tid] = s[tid + half]
            cuda.syncthreads()
            half //= 2
        if tid == 0:
            cuda.atomic.max(out, 0, s[0])
    # --8<-- [end:max]

    return max_reduce


# ----------------------------------------------------------------------------- scan


@lru_cache(maxsize=None)
def scan_hs_kernel(BLOCK: int):
    """Hillis–Steele scan of BLOCK elements per block (log2 steps, O(n log n) additions)."""

    # --8<-- [start:scan_hs]
    @cuda.jit
    def scan_hs(inp, out, sums, n, inclusive):
        # Two buffers: step d reads buffer `src` and writes the other, so no thread
        # overwrites a value another thread still has to read in the same step.
        s = cuda.shared.array((2, BLOCK), int32)
        tid = cuda.threadIdx.x
        i = cuda.blockIdx.x * BLOCK + tid
        x = inp[i] if i < n else int32(0)
        s[0, tid] = x
        src = 0
        offset = 1
        while offset < BLOCK:
            cuda.syncthreads()
            v = s[src, tid]
            if tid >= offset:
                v = add32(v, s[src, tid - offset])
            s[1 - src, tid] = v
            src = 1 - src
            offset *= 2
        cuda.syncthreads()
        incl = s[src, tid]
        if i < n:
            out[i] = incl if inclusive else sub32(incl, x)
        if tid == BLOCK - 1:
            sums[cuda.blockIdx.x] = incl  # the block's total, for the multi-block scan
    # --8<-- [end:scan_hs]

    return scan_hs


@lru_cache(maxsize=None)
def scan_blelloch_kernel(BLOCK: int):
    """Blelloch (work-efficient) scan: 2·BLOCK elements per block, O(n) additions."""

    S2 = 2 * BLOCK  # shared-array shapes must be compile-time constants

    # --8<-- [start:scan_blelloch]
    @cuda.jit
    def scan_blelloch(inp, out, sums, n, inclusive):
        s = cuda.shared.array(S2, int32)
        tid = cuda.threadIdx.x
        a = cuda.blockIdx.x * 2 * BLOCK + tid
        b = a + BLOCK
        xa = inp[a] if a < n else int32(0)
        xb = inp[b] if b < n else int32(0)
        s[tid] = xa
        s[tid + BLOCK] = xb
        # Up-sweep (reduce): build partial sums in place up a balanced tree.
        offset = 1
        d = BLOCK
        while d > 0:
            cuda.syncthreads()
            if tid < d:
                ai = offset * (2 * tid + 1) - 1
                bi = offset * (2 * tid + 2) - 1
                s[bi] = add32(s[bi], s[ai])
            offset *= 2
            d //= 2
        if tid == 0:
            sums[cuda.blockIdx.x] = s[2 * BLOCK - 1]
            s[2 * BLOCK - 1] = 0
        # Down-sweep: push prefixes back down; each node passes its value left and
        # value + left sum right.
        d = 1
        while d < 2 * BLOCK:
            offset //= 2
            cuda.syncthreads()
            if tid < d:
                ai = offset * (2 * tid + 1) - 1
                bi = offset * (2 * tid + 2) - 1
                t = s[ai]
                s[ai] = s[bi]
                s[bi] = add32(s[bi], t)
            d *= 2
        cuda.syncthreads()
        if a < n:
            out[a] = add32(s[tid], xa) if inclusive else s[tid]
        if b < n:
            out[b] = add32(s[tid + BLOCK], xb) if inclusive else s[tid + BLOCK]
    # --8<-- [end:scan_blelloch]

    return scan_blelloch


# --8<-- [start:add_offsets]
@cuda.jit
def add_offsets(out, sums, n, per_block):
    """Third step of the multi-block scan: add the scanned block totals back."""
    i = cuda.grid(1)
    if i < n:
        out[i] = add32(out[i], sums[i // per_block])
# --8<-- [end:add_offsets]


# ----------------------------------------------------------------------------- split (one bit)


# --8<-- [start:split]
@cuda.jit
def split_flags(keys, n, shift, flags):
    """flags[i] = 1 where bit `shift` of keys[i] is 0 (the keys that go first)."""
    i = cuda.grid(1)
    if i < n:
        flags[i] = 1 - int32((keys[i] >> shift) & 1)


@cuda.jit
def split_scatter(keys_in, vals_in, keys_out, vals_out, pos, flags, n, shift, has_vals):
    """Stable partition: zeros to pos[i], ones to totalFalses + i - pos[i]."""
    i = cuda.grid(1)
    if i < n:
        total_falses = pos[n - 1] + flags[n - 1]
        if flags[i] == 1:
            dest = pos[i]
        else:
            dest = total_falses + i - pos[i]
        keys_out[dest] = keys_in[i]
        if has_vals:
            vals_out[dest] = vals_in[i]
# --8<-- [end:split]


# ----------------------------------------------------------------------------- per-block sort in shared memory


@cuda.jit(device=True)
def block_inclusive_scan(s, tid, BLOCK):
    """In-place Hillis–Steele inclusive scan of s[0:BLOCK], one element per thread."""
    offset = 1
    while offset < BLOCK:
        v = s[tid - offset] if tid >= offset else int32(0)
        cuda.syncthreads()
        s[tid] += v
        cuda.syncthreads()
        offset *= 2


@lru_cache(maxsize=None)
def tile_sort_kernel(BLOCK: int, BITS: int):
    """Sort each BLOCK-key tile by one BITS-bit digit with BITS one-bit splits in shared memory,
    and write the tile's digit counts (digit-major, for the global scan) and digit starts."""
    R = 1 << BITS
    MASK = R - 1

    # --8<-- [start:tile_sort]
    @cuda.jit
    def tile_sort(keys_in, vals_in, tkeys, tvals, counts, starts, n, shift, nblocks, has_vals):
        sk = cuda.shared.array(BLOCK, uint32)
        sv = cuda.shared.array(BLOCK, uint32)
        sf = cuda.shared.array(BLOCK, int32)
        first = cuda.shared.array(R, int32)
        cnt = cuda.shared.array(R, int32)
        tid = cuda.threadIdx.x
        blk = cuda.blockIdx.x
        i = blk * BLOCK + tid
        m = min(BLOCK, n - blk * BLOCK)  # valid keys in this tile
        # Past the end: a key whose digit bits are all 1 sorts after every real key.
        key = keys_in[i] if i < n else uint32(0xFFFFFFFF)
        val = vals_in[i] if (i < n and has_vals) else uint32(0)
        for bit in range(BITS):  # BITS stable one-bit splits = a stable sort by the digit
            b = int32((key >> (shift + bit)) & 1)
            sf[tid] = 1 - b
            cuda.syncthreads()
            block_inclusive_scan(sf, tid, BLOCK)
            before = sf[tid] - (1 - b)  # exclusive scan: zeros before me
            total_falses = sf[BLOCK - 1]
            dest = before if b == 0 else total_falses + tid - before
            sk[dest] = key
            sv[dest] = val
            cuda.syncthreads()
            key = sk[tid]
            val = sv[tid]
        for dd in range(tid, R, BLOCK):
            first[dd] = 0
            cnt[dd] = 0
        cuda.syncthreads()
        d = int32((key >> shift) & MASK)
        if tid < m:
            tkeys[i] = key
            if has_vals:
                tvals[i] = val
            if tid == 0 or int32((sk[tid - 1] >> shift) & MASK) != d:
                first[d] = tid  # a run of equal digits starts here
        cuda.syncthreads()
        if tid < m and (tid == m - 1 or int32((sk[tid + 1] >> shift) & MASK) != d):
            cnt[d] = tid - first[d] + 1  # ... and ends here
        cuda.syncthreads()
        for dd in range(tid, R, BLOCK):
            counts[dd * nblocks + blk] = cnt[dd]  # digit-major: the global scan's order
            starts[blk * R + dd] = first[dd]
    # --8<-- [end:tile_sort]

    return tile_sort


@lru_cache(maxsize=None)
def tile_scatter_kernel(BLOCK: int, BITS: int):
    """Move each key of a locally sorted tile to its global place:
    offsets[digit, block] (scanned counts) + its rank among the tile's keys of that digit."""
    R = 1 << BITS
    MASK = R - 1

    # --8<-- [start:tile_scatter]
    @cuda.jit
    def tile_scatter(tkeys, tvals, keys_out, vals_out, offsets, starts, n, shift, nblocks, has_vals):
        blk = cuda.blockIdx.x
        tid = cuda.threadIdx.x
        i = blk * BLOCK + tid
        if i < n:
            key = tkeys[i]
            d = int32((key >> shift) & MASK)
            dest = offsets[d * nblocks + blk] + tid - starts[blk * R + d]
            keys_out[dest] = key
            if has_vals:
                vals_out[dest] = tvals[i]
    # --8<-- [end:tile_scatter]

    return tile_scatter


@cuda.jit
def zero_i32(a, n):
    i = cuda.grid(1)
    if i < n:
        a[i] = 0


# ----------------------------------------------------------------------------- reduce-then-scan with keys in registers


@lru_cache(maxsize=None)
def upsweep_kernel(BLOCK: int, ITEMS: int, BITS: int):
    """Digit histogram of each BLOCK·ITEMS-key tile (shared-memory atomics), digit-major."""
    R = 1 << BITS
    MASK = R - 1
    TILE = BLOCK * ITEMS

    # --8<-- [start:upsweep]
    @cuda.jit
    def upsweep(keys, counts, n, shift, nblocks):
        hist = cuda.shared.array(R, int32)
        tid = cuda.threadIdx.x
        blk = cuda.blockIdx.x
        for d in range(tid, R, BLOCK):
            hist[d] = 0
        cuda.syncthreads()
        base = blk * TILE
        for it in range(ITEMS):
            i = base + it * BLOCK + tid  # coalesced: consecutive threads, consecutive keys
            if i < n:
                cuda.atomic.add(hist, int32((keys[i] >> shift) & MASK), 1)
        cuda.syncthreads()
        for d in range(tid, R, BLOCK):
            counts[d * nblocks + blk] = hist[d]
    # --8<-- [end:upsweep]

    return upsweep


@lru_cache(maxsize=None)
def tile_steps(BLOCK: int, ITEMS: int, BITS: int, BALLOT: int = 0, PAIRS: int = 1, FULL: bool = False,
               EARLY: int = 0, IOTA: int = 0):
    """The steps a register-resident tile shares between `downsweep` and `onesweep`, as device
    functions inlined at numba IR level (so `ks` / `rk` stay registers in the kernel). Each
    warp owns 32·ITEMS consecutive keys, read warp-striped: item `it` of lane `l` is the warp's
    key `32·it + l`, so every load instruction of a warp reads 128 consecutive bytes. Bounds are
    checked against `wn`, how many of the warp's keys exist (a small count, cheap to compare
    again). FULL: the steps of a tile of TILE keys, with no bounds checks (every tile but the
    last; the kernels build both and choose per tile). EARLY (onesweep's early counts): the
    warp's counters already hold where its keys of each digit start in the tile, and the ranking
    writes each key to its place in `stile` at once. IOTA (onesweep_iota, an argsort's pass over
    the input): each value is its key's position, made up where it is staged, `vals_in` not read."""
    R = 1 << BITS
    MASK = R - 1
    NW = BLOCK // 32
    DIGIT_WARPS = (R + 31) // 32

    # --8<-- [start:tile_steps]
    @cuda.jit(device=True, inline="always")
    def load_warp_keys(keys, wbase, lane, wn, ks):
        # Every load issued before the first ranking step: ITEMS loads in flight per thread.
        for it in range(ITEMS):
            if FULL or it * 32 + lane < wn:
                ks[it] = keys[wbase + it * 32 + lane]
            else:
                ks[it] = uint32(0)

    @cuda.jit(device=True, inline="always")
    def rank_warp_keys(ks, rk, whist, w, lane, wn, shift, stile):
        # rk[it]: keys of the same digit before key it among the warp's keys; whist[w·R + d]
        # (zeroed) ends holding the warp's count of digit d. EARLY: rk[it] is the key's place
        # in the tile, where it is written (stile).
        lt = uint32((1 << lane) - 1)  # lanes below me
        for it in range(ITEMS):
            valid = FULL or it * 32 + lane < wn
            d = int32((ks[it] >> shift) & MASK) if valid else int32(R)  # R: "no key" group
            if BALLOT:  # BITS ballots: lanes with the same validity and the same digit bits
                # numba-cuda types ballot_sync's result as int32: mixed with uint32 it widens to
                # int64 with lane 31's bit copied into the 32 high bits (popc then counts 32
                # lanes too many). uint32(...) keeps the mask 32 bits wide.
                peers = uint32(0xFFFFFFFF)
                if not FULL:
                    peers = uint32(cuda.ballot_sync(0xFFFFFFFF, valid)) ^ (uint32(not valid) * uint32(0xFFFFFFFF))
                for b in range(BITS):
                    bit = uint32((d >> b) & 1)
                    bal = uint32(cuda.ballot_sync(0xFFFFFFFF, bit))
                    peers &= bal ^ ((bit ^ uint32(1)) * uint32(0xFFFFFFFF))
            else:
                peers = uint32(cuda.match_any_sync(0xFFFFFFFF, d))  # lanes holding the same digit
            below = cuda.popc(peers & lt)
            leader = cuda.popc(peers ^ (peers - uint32(1))) - 1  # the lowest lane of my group
            cnt = int32(0)
            if valid and below == 0:  # the leader reserves the group's places ...
                cnt = cuda.atomic.add(whist, w * R + d, cuda.popc(peers))
            cnt = cuda.shfl_sync(0xFFFFFFFF, cnt, leader)  # ... and hands the base to its peers
            rk[it] = cnt + below
            if EARLY and valid:
                stile[rk[it]] = ks[it]

    @cuda.jit(device=True, inline="always")
    def count_warp_keys(ks, whist, w, lane, wn, shift):
        # Early counts: the warp's count of each digit (whist[w·R + d], zeroed), one shared
        # atomic a key.
        for it in range(ITEMS):
            if FULL or it * 32 + lane < wn:
                cuda.atomic.add(whist, w * R + int32((ks[it] >> shift) & MASK), 1)

    @cuda.jit(device=True, inline="always")
    def warp_offsets(whist, tid):
        # Per digit (thread tid < R): exclusive scan of the warps' counts in place; returns the
        # digit's count in the tile.
        total = int32(0)
        if tid < R:
            for ww in range(NW):
                c = whist[ww * R + tid]
                whist[ww * R + tid] = total
                total += c
        return total

    @cuda.jit(device=True, inline="always")
    def digit_start(total, wsum, tid):
        # Where digit tid starts in the tile: an exclusive scan of the digits' totals by shuffles
        # within each warp and one pass over the warps' sums (one barrier; a Hillis-Steele scan
        # in shared memory takes two per step).
        lane = tid & 31
        w = tid >> 5
        x = total
        o = 1
        while o < 32:
            y = cuda.shfl_up_sync(0xFFFFFFFF, x, o)
            if lane >= o:
                x += y
            o *= 2
        if lane == 31 and w < DIGIT_WARPS:
            wsum[w] = x
        cuda.syncthreads()
        if tid >= R:
            return int32(0)
        for ww in range(w):
            x += wsum[ww]
        return x - total

    @cuda.jit(device=True, inline="always")
    def tile_starts(total, whist, wsum, tid):
        # whist[w·R + d] += where digit d starts in the tile (stage_tile's first half, which the
        # early counts run before ranking).
        start = digit_start(total, wsum, tid)
        if tid < R:
            for ww in range(NW):
                whist[ww * R + tid] += start
        cuda.syncthreads()
        return start

    @cuda.jit(device=True, inline="always")
    def stage_tile(ks, rk, total, stile, whist, wsum, w, lane, wn, tid, shift):
        # The tile in digit order in shared memory; needs only the tile's own counts, so it runs
        # before the look-back. rk[it] becomes key it's place in the tile (the values follow it).
        start = tile_starts(total, whist, wsum, tid)
        for it in range(ITEMS):
            if FULL or it * 32 + lane < wn:
                rk[it] += whist[w * R + int32((ks[it] >> shift) & MASK)]
                stile[rk[it]] = ks[it]
        return start

    @cuda.jit(device=True, inline="always")
    def scatter_tile(rk, vs, dst, start, base, vals_in, wbase, keys_out, vals_out, stile, dbase, lane, wn, m, tid,
                     shift, has_vals):
        # Place j of the tile goes to dbase[d] + j: consecutive threads write consecutive places
        # of a digit run. Values then take the same way through the same buffer.
        if tid < R:
            dbase[tid] = base - start
        cuda.syncthreads()
        if PAIRS and has_vals and not IOTA:  # (IOTA: an argsort's pass over the input, values = positions)
            load_warp_keys(vals_in, wbase, lane, wn, vs)  # in flight during the key writes
        for it in range(ITEMS):
            j = it * BLOCK + tid
            if FULL or j < m:
                k = stile[j]
                dest = dbase[int32((k >> shift) & MASK)] + j
                keys_out[dest] = k
                if PAIRS:
                    dst[it] = dest
        if PAIRS and has_vals:
            cuda.syncthreads()  # every key read out of the buffer
            for it in range(ITEMS):
                if FULL or it * 32 + lane < wn:
                    stile[rk[it]] = uint32(wbase + it * 32 + lane) if IOTA else vs[it]
            cuda.syncthreads()
            for it in range(ITEMS):
                j = it * BLOCK + tid
                if FULL or j < m:
                    vals_out[dst[it]] = stile[j]
    # --8<-- [end:tile_steps]

    return load_warp_keys, rank_warp_keys, warp_offsets, stage_tile, scatter_tile, count_warp_keys, tile_starts


@cuda.jit(device=True, inline="always")
def tile_counts(tile, TILE, ITEMS, w, n):
    """How many of a tile's keys exist (m), and of its warp w's (wn)."""
    m = min(TILE, n - tile * TILE)
    return m, min(max(m - w * 32 * ITEMS, 0), 32 * ITEMS)


def register_tile_sizes(BLOCK: int, ITEMS: int, BITS: int, PAIRS: int, KERNEL: str):
    """The compile-time sizes of a tile held in registers (`downsweep`, `onesweep`): R digits,
    TILE keys, NWR per-warp digit counters, DIGIT_WARPS warps of the digit scan, VITEMS values
    per thread (1 in a keys-only build). Needs whole warps and a thread per digit."""
    R = 1 << BITS
    assert BLOCK % 32 == 0 and BLOCK >= R, f"{KERNEL} needs whole warps and BLOCK >= 2**BITS"
    return R, BLOCK * ITEMS, (BLOCK // 32) * R, (R + 31) // 32, ITEMS if PAIRS else 1


def full_and_last_tiles(tile_body, BLOCK: int, ITEMS: int, BITS: int, BALLOT: int, PAIRS: int, EARLY: int = 0,
                        IOTA: int = 0):
    """`tile_body(*steps)` built twice: with the `tile_steps` of a full tile (no bounds checks)
    and with those of the last, partial tile (the kernels choose per tile)."""
    return tuple(tile_body(*tile_steps(BLOCK, ITEMS, BITS, BALLOT, PAIRS, FULL, EARLY, IOTA)) for FULL in (True, False))


@lru_cache(maxsize=None)
def downsweep_kernel(BLOCK: int, ITEMS: int, BITS: int, BALLOT: int = 0, PAIRS: int = 1, MIN_BLOCKS: int = 1):
    """Rank a tile's keys held in registers with warp intrinsics (match_any, or BITS ballots),
    exchange them through shared memory into digit order, then write each digit's run to its
    global offset. `PAIRS=0` builds a keys-only kernel (values never move)."""
    R, TILE, NWR, DIGIT_WARPS, VITEMS = register_tile_sizes(BLOCK, ITEMS, BITS, PAIRS, "downsweep")

    def tile_body(load_warp_keys, rank_warp_keys, warp_offsets, stage_tile, scatter_tile, count_warp_keys, tile_starts):

        # --8<-- [start:downsweep_tile]
        @cuda.jit(device=True, inline="always")
        def downsweep_tile(keys_in, vals_in, keys_out, vals_out, offsets, n, shift, nblocks, has_vals, stile, whist,
                           dbase, wsum):
            ks = cuda.local.array(ITEMS, uint32)  # this thread's keys, in registers
            rk = cuda.local.array(ITEMS, int32)  # ... and their ranks within the warp's digit
            vs = cuda.local.array(VITEMS, uint32)  # key-value tiles: the values, then where they go
            dst = cuda.local.array(VITEMS, int32)
            tid = cuda.threadIdx.x
            lane = tid & 31
            w = tid >> 5
            blk = cuda.blockIdx.x
            m, wn = tile_counts(blk, TILE, ITEMS, w, n)
            wbase = blk * TILE + w * 32 * ITEMS  # each warp owns 32·ITEMS consecutive keys
            load_warp_keys(keys_in, wbase, lane, wn, ks)
            for j in range(tid, NWR, BLOCK):
                whist[j] = 0
            cuda.syncthreads()
            rank_warp_keys(ks, rk, whist, w, lane, wn, shift, stile)
            cuda.syncthreads()
            total = warp_offsets(whist, tid)
            start = stage_tile(ks, rk, total, stile, whist, wsum, w, lane, wn, tid, shift)
            base = offsets[tid * nblocks + blk] if tid < R else int32(0)  # from the count table's scan
            scatter_tile(rk, vs, dst, start, base, vals_in, wbase, keys_out, vals_out, stile, dbase, lane, wn, m, tid,
                         shift, has_vals)
        # --8<-- [end:downsweep_tile]

        return downsweep_tile

    full_tile, last_tile = full_and_last_tiles(tile_body, BLOCK, ITEMS, BITS, BALLOT, PAIRS)

    # --8<-- [start:downsweep]
    @cuda.jit(**_bounds(BLOCK, MIN_BLOCKS))
    def downsweep(keys_in, vals_in, keys_out, vals_out, offsets, n, shift, nblocks, has_vals):
        stile = cuda.shared.array(TILE, uint32)  # the tile in digit order: keys, then values
        whist = cuda.shared.array(NWR, int32)  # per-warp digit counters, then where they start
        dbase = cuda.shared.array(R, int32)  # global offset of digit d minus its start in the tile
        wsum = cuda.shared.array(DIGIT_WARPS, int32)  # the digit scan's warp sums
        if (cuda.blockIdx.x + 1) * TILE <= n:
            full_tile(keys_in, vals_in, keys_out, vals_out, offsets, n, shift, nblocks, has_vals, stile, whist, dbase,
                      wsum)
        else:
            last_tile(keys_in, vals_in, keys_out, vals_out, offsets, n, shift, nblocks, has_vals, stile, whist, dbase,
                      wsum)
    # --8<-- [end:downsweep]

    return downsweep


# ----------------------------------------------------------------------------- one-sweep: decoupled look-back

FLAG_AGG = 0x40000000  # status word: the tile's count of a digit is published ...
FLAG_PREFIX = 0x80000000  # ... and so is the inclusive prefix over tiles 0..the tile
VALUE_MASK = 0x3FFFFFFF  # counts read < 2**30: earlier tiles' words only, < n <= 2**30 (kernels.cu)


@lru_cache(maxsize=None)
def onesweep_hist_kernel(BLOCK: int, ITEMS: int, BITS: int):
    """The digit histograms of every pass in one read of the keys (tile-strided blocks,
    PASSES x R shared counters, added to `hist`); and the exclusive scan of each pass's R counts."""
    R = 1 << BITS
    MASK = R - 1
    TILE = BLOCK * ITEMS
    PASSES = -(-32 // BITS)
    PR = PASSES * R

    # --8<-- [start:onesweep_hist]
    @cuda.jit
    def onesweep_hist(keys, hist, n, passes):
        h = cuda.shared.array(PR, int32)
        tid = cuda.threadIdx.x
        for j in range(tid, PR, BLOCK):
            h[j] = 0
        cuda.syncthreads()
        k = cuda.local.array(ITEMS, uint32)
        base = cuda.blockIdx.x * TILE
        while base < n:  # tile-stride loop: a fixed grid covers any n
            if base + TILE <= n:
                # A full tile: every load before the first atomic and no bounds check, so a warp
                # has ITEMS loads in flight instead of waiting on each in turn (as kernels.cu does).
                for it in range(ITEMS):
                    k[it] = keys[base + it * BLOCK + tid]
                for p in range(PASSES):  # one pass's digits at a time (as kernels.cu does)
                    if p < passes:  # compile-time trip counts: the loops unroll
                        for it in range(ITEMS):
                            cuda.atomic.add(h, p * R + int32((k[it] >> uint32(p * BITS)) & uint32(MASK)), 1)
            else:  # the last, partial tile: each key checked against n
                for it in range(ITEMS):
                    i = base + it * BLOCK + tid
                    if i < n:
                        x = keys[i]
                        for p in range(PASSES):
                            if p < passes:
                                cuda.atomic.add(h, p * R + int32((x >> uint32(p * BITS)) & uint32(MASK)), 1)
            base += cuda.gridDim.x * TILE
        cuda.syncthreads()
        for j in range(tid, min(passes, PASSES) * R, BLOCK):  # never past the counters
            if h[j] != 0:
                cuda.atomic.add(hist, j, h[j])

    @cuda.jit
    def onesweep_scan(hist):
        """Block p: exclusive scan of pass p's R digit counts (where each digit starts)."""
        s = cuda.shared.array(BLOCK, int32)
        tid = cuda.threadIdx.x
        p = cuda.blockIdx.x
        x = hist[p * R + tid] if tid < R else int32(0)
        digits = cuda.syncthreads_count(1 if x > 0 else 0)  # one digit holding every key: nothing moves
        s[tid] = x
        cuda.syncthreads()
        block_inclusive_scan(s, tid, BLOCK)
        if tid < R:
            hist[p * R + tid] = s[tid] - x
        if tid == 0:
            hist[PR + p] = 1 if digits > 1 else 0  # after the offsets: read by onesweep_first
    # --8<-- [end:onesweep_hist]

    return onesweep_hist, onesweep_scan


@lru_cache(maxsize=None)
def onesweep_kernel(BLOCK: int, ITEMS: int, BITS: int, BALLOT: int = 0, PAIRS: int = 1, MIN_BLOCKS: int = 1,
                    FIRST: int = 0, EARLY_COUNTS: int = 0, IOTA: int = 0):
    """One digit pass of the one-sweep sort: tile id from an atomic counter, rank in registers
    (as `downsweep`), publish per-digit counts, stage the tile, decoupled look-back over earlier
    tiles, scatter. EARLY_COUNTS: count the tile's digits first (one shared atomic a key), publish,
    then rank each key straight to its place in the tile (kernels.cu)."""
    R, TILE, NWR, DIGIT_WARPS, VITEMS = register_tile_sizes(BLOCK, ITEMS, BITS, PAIRS, "onesweep")
    PR = -(-32 // BITS) * R  # hist: the passes' offsets, then a flag per pass (onesweep_scan)

    def tile_body(load_warp_keys, rank_warp_keys, warp_offsets, stage_tile, scatter_tile, count_warp_keys, tile_starts):

        # --8<-- [start:onesweep_tile]
        @cuda.jit(device=True, inline="always")
        def onesweep_tile(keys_in, vals_in, keys_out, vals_out, hist, status, status_next, n, shift, pss, has_vals,
                          tile, stile, whist, dbase, wsum):
            # status[t*R + d]: one uint32 word, a 2-bit flag and a 30-bit count (see kernels.cu:
            # flag and count in one word need no fence between them). numba has no volatile
            # loads, so the look-back reads a word with an atomic that changes nothing (or 0):
            # atomics are performed at L2, where every SM sees the same word, and are issued on
            # every spin. Publishing uses atomic max: a word only grows (0 < AGG|c < PREFIX|c').
            ks = cuda.local.array(ITEMS, uint32)
            rk = cuda.local.array(ITEMS, int32)
            vs = cuda.local.array(VITEMS, uint32)
            dst = cuda.local.array(VITEMS, int32)
            tid = cuda.threadIdx.x
            lane = tid & 31
            w = tid >> 5
            m, wn = tile_counts(tile, TILE, ITEMS, w, n)
            wbase = tile * TILE + w * 32 * ITEMS
            load_warp_keys(keys_in, wbase, lane, wn, ks)
            if EARLY_COUNTS:  # count first, so that the counts are out before any key is ranked ...
                count_warp_keys(ks, whist, w, lane, wn, shift)
            else:  # ... or count while ranking
                rank_warp_keys(ks, rk, whist, w, lane, wn, shift, stile)
            cuda.syncthreads()
            total = warp_offsets(whist, tid)
            me = tile * R + tid
            if tid < R:  # publish this tile's count of digit tid at once (tile 0: its prefix) ...
                flag = uint32(FLAG_PREFIX) if tile == 0 else uint32(FLAG_AGG)
                cuda.atomic.max(status, me, flag | uint32(total))
            if EARLY_COUNTS:  # ... then rank each key straight to its place in the tile
                start = tile_starts(total, whist, wsum, tid)
                rank_warp_keys(ks, rk, whist, w, lane, wn, shift, stile)
            else:  # ... then place the ranked keys
                start = stage_tile(ks, rk, total, stile, whist, wsum, w, lane, wn, tid, shift)
            excl = int32(0)
            if tid < R:  # ... then (the tile staged meanwhile) look back to a tile with its prefix
                j = tile - 1
                while j >= 0:
                    s = cuda.atomic.or_(status, j * R + tid, uint32(0))  # a coherent read
                    if (s & uint32(FLAG_PREFIX | FLAG_AGG)) == 0:
                        continue  # not yet published: spin (tile j has started)
                    excl += int32(s & uint32(VALUE_MASK))
                    if s & uint32(FLAG_PREFIX):
                        break
                    j -= 1
                if tile > 0:
                    cuda.atomic.max(status, me, uint32(FLAG_PREFIX) | uint32(excl + total))
                status_next[me] = 0
            base = hist[pss * R + tid] + excl if tid < R else int32(0)  # digit offset + earlier tiles
            scatter_tile(rk, vs, dst, start, base, vals_in, wbase, keys_out, vals_out, stile, dbase, lane, wn, m, tid,
                         shift, has_vals)
        # --8<-- [end:onesweep_tile]

        return onesweep_tile

    full_tile, last_tile = full_and_last_tiles(tile_body, BLOCK, ITEMS, BITS, BALLOT, PAIRS, EARLY_COUNTS, IOTA)

    # --8<-- [start:onesweep]
    @cuda.jit(**_bounds(BLOCK, MIN_BLOCKS))
    def onesweep(keys_in, vals_in, keys_out, vals_out, hist, tile_counter, status, status_next, n, shift, pss,
                 has_vals):
        stile = cuda.shared.array(TILE, uint32)
        whist = cuda.shared.array(NWR, int32)
        dbase = cuda.shared.array(R, int32)
        wsum = cuda.shared.array(DIGIT_WARPS, int32)
        tile_sh = cuda.shared.array(1, int32)
        tid = cuda.threadIdx.x
        if FIRST and hist[PR + pss] == 0:  # onesweep_first: one digit holds every key, nothing moves (kernels.cu)
            if tid < R:
                status_next[cuda.blockIdx.x * R + tid] = 0
            return
        if tid == 0:  # tiles in the order blocks start (forward progress: see kernels.cu)
            tile_sh[0] = cuda.atomic.add(tile_counter, pss, 1)
        for j in range(tid, NWR, BLOCK):
            whist[j] = 0
        cuda.syncthreads()
        tile = tile_sh[0]
        if (tile + 1) * TILE <= n:
            full_tile(keys_in, vals_in, keys_out, vals_out, hist, status, status_next, n, shift, pss, has_vals, tile,
                      stile, whist, dbase, wsum)
        else:
            last_tile(keys_in, vals_in, keys_out, vals_out, hist, status, status_next, n, shift, pss, has_vals, tile,
                      stile, whist, dbase, wsum)
    # --8<-- [end:onesweep]

    return onesweep


# ----------------------------------------------------------------------------- distinct


# --8<-- [start:distinct]
@cuda.jit
def head_flags(keys, n, flags):
    """flags[i] = 1 where a run of equal (sorted) keys begins."""
    i = cuda.grid(1)
    if i < n:
        flags[i] = 1 if (i == 0 or keys[i] != keys[i - 1]) else 0


@cuda.jit
def compact(keys, flags, pos, out, n):
    """Keep the flagged keys, at the place the exclusive scan of the flags gives them."""
    i = cuda.grid(1)
    if i < n and flags[i] == 1:
        out[pos[i]] = keys[i]
# --8<-- [end:distinct]


# ----------------------------------------------------------------------------- keys of other types, on the device

KIND_UINT32, KIND_INT32, KIND_FLOAT32 = 0, 1, 2
SIGN = uint32(0x80000000)


# --8<-- [start:order_keys]
@cuda.jit
def order_keys(bits, out, n, kind):
    """out[i] = the uint32 whose unsigned order is the order of key i (`bits`: the keys' bits).

    int32: flip the sign bit. float32: NaNs (any sign or payload) become 0xFFFFFFFF, after
    +inf; -0.0 becomes +0.0; negative floats flip every bit, the others set the sign bit.
    """
    i = cuda.grid(1)
    if i < n:
        b = bits[i]
        if kind == KIND_INT32:
            out[i] = b ^ SIGN
        elif (b & uint32(0x7FFFFFFF)) > uint32(0x7F800000):  # a NaN
            out[i] = uint32(0xFFFFFFFF)
        elif b == SIGN:  # -0.0
            out[i] = SIGN
        elif b & SIGN:
            out[i] = ~b
        else:
            out[i] = b | SIGN


@cuda.jit
def unorder_keys(u, n, kind):
    """The inverse of `order_keys`, in place (NaNs come back as the NaN with bits 0x7FFFFFFF)."""
    i = cuda.grid(1)
    if i < n:
        b = u[i]
        if kind == KIND_INT32:
            u[i] = b ^ SIGN
        elif b & SIGN:
            u[i] = b & uint32(0x7FFFFFFF)
        else:
            u[i] = ~b
# --8<-- [end:order_keys]


@cuda.jit
def widen_indices(src, dst, n):
    """dst[i] = src[i] as int64: argsort's positions in the index type numpy, CuPy and PyTorch use."""
    i = cuda.grid(1)
    if i < n:
        dst[i] = int64(src[i])


# ----------------------------------------------------------------------------- compile checks


def fixed_targets() -> list[tuple[str, object, str]]:
    """The kernels of this chapter that take no compile-time parameters, with their signatures
    (the parametrized ones: `gpulab.radix.variants.ptx_targets`)."""
    s = "int32"
    return [
        ("iota", iota, f"void({U32}, {s})"),
        ("add_offsets", add_offsets, f"void({I32}, {I32}, {s}, {s})"),
        ("split_flags", split_flags, f"void({U32}, {s}, {s}, {I32})"),
        ("split_scatter", split_scatter, f"void({U32}, {U32}, {U32}, {U32}, {I32}, {I32}, {s}, {s}, {s})"),
        ("zero_i32", zero_i32, f"void({I32}, {s})"),
        ("head_flags", head_flags, f"void({U32}, {s}, {I32})"),
        ("compact", compact, f"void({U32}, {I32}, {I32}, {U32}, {s})"),
        ("order_keys", order_keys, f"void({U32}, {U32}, {s}, {s})"),
        ("unorder_keys", unorder_keys, f"void({U32}, {s}, {s})"),
        ("widen_indices", widen_indices, f"void({U32}, int64[::1], {s})"),
    ]


__all__ = [n for n in dir() if not n.startswith("_")] + ["np"]
