"""Chapter 5 kernels in numba.cuda: the Awerbuch–Israeli–Shiloach pipeline for Euler circuits.

Vertex ids, edge ids, cycle labels and positions are int32 (``NONE = -1`` marks "not set").
The other types: the caller's ids, int32 or int64, which ``to_i32`` validates and narrows (its
min/max statistics are int64, reset by ``preset_i64``); the 8-byte words of pointer jumping
(uint64, ``pack``, below); the spanning forest's tree-link flags (uint8: ``fill_u8``, ``hook``,
``splice``) and the de Bruijn symbols (uint8).

Element-wise kernels are grid-stride loops, so the host may launch any grid (a few thousand
blocks on a GPU, one small block on the simulator). Kernels that *append* to a list
(links, splitters, nodes ...) use a warp-aggregated atomic: one ``atomic.add`` per warp, not per
thread — their loops run in whole warps (``n`` rounded up to 32) so that every lane reaches the
``ballot_sync`` (the ruling set's pick: one per warp and segment of 16 edges a lane, after a
scan of the lanes' counts); on a GPU their blocks are multiples of 32 threads (BLOCK), on the simulator
one block of a partial warp (BLOCK = 8 lanes: `gpulab.simwarp`'s intrinsics exchange among
the lanes that exist).
``TEMPLATED`` lists the kernels built per compile-time parameter (BLOCK or TILE); every other
kernel is a module-level ``cuda.jit`` function.

Hot loops index with ``uint32(...)``: numba indexes like NumPy, and a signed index costs a
compare and a select per load (chapter 1 measured it).

The steps, in the order the host (``host.py``, ``labelling.py``) launches them:

0. loading: ``to_i32`` (validate and narrow ids);
1. pairing: ``small_sort`` or chapter 4's radix sort, ``pair`` (the successor permutation; it
   also counts the positions where in-degree != out-degree), and only when there are such
   positions ``imbalance`` and ``degrees_of`` (which vertices: the message, or an Euler path's
   ends); ``find_first`` (the out-edge a ``source`` starts with);
2. labelling: ``iota`` + ``propagate_round`` | ``jump_init`` + ``jump_round`` +
   ``unpack_labels`` | ``tile_contract`` + ``compact_exits``, ``build_contracted``,
   ``jump_round``, ``expand_labels`` | ruling set (``pick_splitters``, ``walk_label``,
   ``jump_round`` on the splitters, ``unpack_labels``, ``label_from_owner``); ``partition``
   launches none (the CPU walks the cycles);
3. circuit graph: ``list_nodes``, ``find_links``;
4. spanning forest (Borůvka): ``reset_best``, ``min_links``, ``hook``, ``shortcut``, ``count_roots``;
5. ``splice``;
6. ranking: ``wyllie_init`` / ``wyllie_round`` / ``scatter_rank``, or the ruling set's
   ``pick_rank_splitters``, ``walk_rank``, ``wyllie_round`` on the splitters, ``write_ranked``,
   or, from the sublists the labelling kept, ``mark_ends``, ``list_cuts``, ``head_boundary``,
   ``measure``, ``wyllie_round`` on the pieces, ``write_pieces``.

Around the steps: undirected graphs pair half-edges first (``half_keys``, ``dart_succ``, which
also finds whether some vertex has odd degree, ``odd_vertices`` where one does), walk each
closed trail once (``pick_splitters`` with scale 4, ``walk_trail``, pointer jumping on the
walkers) and keep one direction of each edge (``orient_trails``; with TRAILS = 0, the darts are
labelled and ``orient`` keeps it), then ``dart_pairs`` reads the orientation's pairing off the
darts' (``scatter_slice`` writes its successors); the results
(``walk_vertices``, ``gather_i32``, ``reverse_walk``); counters and fills (``preset_i32``,
``preset_i64``, ``fill_i32``, ``fill_u8``); checks on the device (``mark_positions``,
``check_chain``, ``cycle_sizes``); the graph generators (``gen_deep``, ``gen_shallow``) and de
Bruijn graphs (``debruijn_graph``, ``debruijn_ends``, ``debruijn_symbols``).

``mismatch`` is no step: the benchmark (``bench.py``) counts with it where a variant's circuit
differs from the first variant's.

Pointer jumping (labels and ranks) keeps an element's value and next pointer in one 8-byte
word (``pack``): one gather per element per round instead of two. Counters live in one small
int32 array that kernels reset (``preset_i32``) and the host reads once per decision.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import cuda, int32, int64, uint8, uint32, uint64

NONE = -1
INT32_MAX = 2**31 - 1
FULL = 0xFFFFFFFF

I32 = "int32[::1]"
I64 = "int64[::1]"
U8 = "uint8[::1]"
U64 = "uint64[::1]"


# ----------------------------------------------------------------------------- device helpers


# --8<-- [start:append]
@cuda.jit(device=True, inline=True)
def warp_append(pred, counter, idx):
    """Slot of this lane in a list that whole warps append to (its length is counter[idx]);
    NONE where ``pred`` is false.

    One lane per warp (the lowest with ``pred``) reserves room for every lane of the warp that
    appends, with one atomic; the others learn the base by a shuffle and add their rank among
    the appending lanes below them. Every lane of the warp must call this together.
    """
    mask = cuda.ballot_sync(FULL, pred)
    if mask == 0:
        return int32(NONE)
    leader = cuda.popc(mask ^ (mask - uint32(1))) - 1  # the lowest lane that appends
    base = int32(0)
    if cuda.laneid == leader:
        base = cuda.atomic.add(counter, idx, int32(cuda.popc(mask)))
    base = cuda.shfl_sync(FULL, base, leader)
    if not pred:
        return int32(NONE)
    return int32(base + cuda.popc(mask & cuda.lanemask_lt()))
# --8<-- [end:append]


# --8<-- [start:mix32]
@cuda.jit(device=True, inline=True)
def mix32(x):
    """lowbias32: the same 32-bit hash as ``generators.mix32``."""
    x = uint32(x)
    x = uint32(x ^ (x >> uint32(16)))
    x = uint32((uint64(x) * uint64(0x7FEB352D)) & uint64(0xFFFFFFFF))  # wraps mod 2^32, as in C
    x = uint32(x ^ (x >> uint32(15)))
    x = uint32((uint64(x) * uint64(0x846CA68B)) & uint64(0xFFFFFFFF))
    return uint32(x ^ (x >> uint32(16)))
# --8<-- [end:mix32]


@cuda.jit(device=True, inline=True)
def feistel(x, n, half, mask, k0, k1, k2, k3):
    """``generators.feistel`` for one value: a 4-round Feistel permutation of [0, n), cycle-walked."""
    y = uint32(x)
    while True:
        left = uint32(y >> half)
        right = uint32(y & mask)
        t = uint32(left ^ (mix32(right ^ k0) & mask))
        left = right
        right = t
        t = uint32(left ^ (mix32(right ^ k1) & mask))
        left = right
        right = t
        t = uint32(left ^ (mix32(right ^ k2) & mask))
        left = right
        right = t
        t = uint32(left ^ (mix32(right ^ k3) & mask))
        left = right
        right = t
        y = uint32((left << half) | right)
        if y < uint32(n):
            return int32(y)


@cuda.jit(device=True, inline=True)
def lower_bound(a, n, v):
    """First index i with a[i] >= v in the sorted a[0:n]."""
    lo = int32(0)
    hi = int32(n)
    while lo < hi:
        mid = (lo + hi) // 2
        if a[uint32(mid)] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo


# ----------------------------------------------------------------------------- step 1: input and pairing


@lru_cache(maxsize=None)
def to_i32_kernel(BLOCK: int):
    """b = int32(a) (if ``write``) and the min/max of a into stats[2 slot], stats[2 slot + 1],
    reduced per block in shared memory."""

    # --8<-- [start:to_i32]
    @cuda.jit
    def to_i32(a, n, b, stats, write, slot):
        s_min = cuda.shared.array(BLOCK, int64)
        s_max = cuda.shared.array(BLOCK, int64)
        tid = cuda.threadIdx.x
        lo = int64(0x7FFFFFFFFFFFFFFF)
        hi = int64(-0x7FFFFFFFFFFFFFFF)
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        while i < n:
            v = int64(a[i])
            lo = min(lo, v)
            hi = max(hi, v)
            if write:
                b[i] = int32(v)
            i += stride
        s_min[tid] = lo
        s_max[tid] = hi
        cuda.syncthreads()
        half = BLOCK // 2
        while half > 0:
            if tid < half:
                s_min[tid] = min(s_min[tid], s_min[tid + half])
                s_max[tid] = max(s_max[tid], s_max[tid + half])
            cuda.syncthreads()
            half //= 2
        if tid == 0:
            cuda.atomic.min(stats, 2 * slot, s_min[0])
            cuda.atomic.max(stats, 2 * slot + 1, s_max[0])
    # --8<-- [end:to_i32]

    return to_i32


# --8<-- [start:preset]
@cuda.jit
def preset_i32(a, i0, v0, v1, v2, v3):
    """a[i0:i0 + 4] = v0..v3 from one thread: counters reset on the device, in stream order (a
    copy from pageable host memory would first wait for every kernel queued before it)."""
    if cuda.grid(1) == 0:
        a[i0] = v0
        a[i0 + 1] = v1
        a[i0 + 2] = v2
        a[i0 + 3] = v3


@cuda.jit
def preset_i64(a, v0, v1, v2, v3):
    if cuda.grid(1) == 0:
        a[0] = v0
        a[1] = v1
        a[2] = v2
        a[3] = v3
# --8<-- [end:preset]


# --8<-- [start:pack]
@cuda.jit(device=True, inline=True)
def pack(hi, lo):
    """Two int32 in one 8-byte word: a pointer-jumping element (value, next) read by one gather."""
    return (uint64(uint32(int32(hi))) << uint64(32)) | uint64(uint32(int32(lo)))


@cuda.jit(device=True, inline=True)
def hi32(w):
    return int32(uint32(w >> uint64(32)))


@cuda.jit(device=True, inline=True)
def lo32(w):
    return int32(uint32(w & uint64(0xFFFFFFFF)))
# --8<-- [end:pack]


# --8<-- [start:small_sort]
@cuda.jit
def small_sort(keys, n, out_keys, out_perm):
    """Stable sort of a short array in one launch: the rank of element i is the number of keys
    smaller than keys[i] plus the number of equal keys before i. O(n^2) work, which for a few
    thousand keys costs less than the ~20 launches of a radix sort."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        k = keys[i]
        r = 0
        for j in range(n):
            kj = keys[uint32(j)]
            if kj < k or (kj == k and j < i):
                r += 1
        out_keys[r] = k
        out_perm[r] = i
        i += stride
# --8<-- [end:small_sort]


@cuda.jit
def mismatch(a, b, n, out):
    """The benchmark's comparison of two circuits: out[0] = number of i with a[i] != b[i];
    out[1] = the smallest such i (host sets INT32_MAX)."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        if a[i] != b[i]:
            cuda.atomic.add(out, 0, 1)
            cuda.atomic.min(out, 1, int32(i))
        i += stride


# --8<-- [start:pair]
@cuda.jit(device=True, inline=True)
def scatter_in_slice(in_order, out_order, succ, i, lo, hi):
    """succ[in_order[i]] = out_order[i] where it lands in succ[lo:hi] (evict-first loads)."""
    t = cuda.ldcs(in_order, i)
    if t >= lo and t < hi:
        succ[uint32(t)] = cuda.ldcs(out_order, i)


@cuda.jit
def pair(in_order, out_order, ssrc, sdst, n, succ, out, slot, lo, hi):
    """Step 1: each vertex's k-th in-edge is followed by its k-th out-edge. The slice at 0
    also checks in = out: out[slot] counts where the sorted keys differ, out[slot + 1] is the first.
    An empty slice (lo = hi = 0: succ comes from a sort, `EulerPlan.permute_by_sort`) only checks."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        if hi > lo:
            scatter_in_slice(in_order, out_order, succ, i, lo, hi)
        if lo == 0 and cuda.ldcs(ssrc, i) != cuda.ldcs(sdst, i):
            cuda.atomic.add(out, slot, 1)
            cuda.atomic.min(out, slot + 1, int32(i))
        i += stride
# --8<-- [end:pair]


@cuda.jit
def imbalance(ssrc, sdst, n, out):
    """Degree balance of every vertex, from the two sorted key arrays (binary searches).

    out[0] unbalanced vertices, out[1] those with out = in + 1, out[2] the smallest of them,
    out[3] those with in = out + 1, out[4] the smallest of them, out[5] the smallest unbalanced
    vertex. (Host presets out[2], out[4], out[5] to INT32_MAX.)
    """
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < 2 * n:
        first = False
        v = int32(0)
        if i < n:  # every vertex with out-edges, at the start of its segment in ssrc
            v = ssrc[i]
            first = i == 0 or ssrc[i - 1] != v
        else:  # vertices with in-edges only
            j = i - n
            v = sdst[j]
            first = (j == 0 or sdst[j - 1] != v)
            if first:
                k = lower_bound(ssrc, n, v)
                first = k >= n or ssrc[k] != v
        if first:
            out_deg = lower_bound(ssrc, n, v + 1) - lower_bound(ssrc, n, v)
            in_deg = lower_bound(sdst, n, v + 1) - lower_bound(sdst, n, v)
            d = out_deg - in_deg
            if d != 0:
                cuda.atomic.add(out, 0, 1)
                cuda.atomic.min(out, 5, v)
                if d == 1:
                    cuda.atomic.add(out, 1, 1)
                    cuda.atomic.min(out, 2, v)
                elif d == -1:
                    cuda.atomic.add(out, 3, 1)
                    cuda.atomic.min(out, 4, v)
        i += stride


@cuda.jit
def degrees_of(ssrc, sdst, n, v, out):
    """out = (in-degree, out-degree) of vertex v (one thread)."""
    if cuda.grid(1) == 0:
        out[0] = lower_bound(sdst, n, v + 1) - lower_bound(sdst, n, v)
        out[1] = lower_bound(ssrc, n, v + 1) - lower_bound(ssrc, n, v)


@cuda.jit
def find_first(skeys, order, n, v, out):
    """out[0] = the first edge of vertex v in a sorted grouping (its smallest id), or NONE."""
    if cuda.grid(1) == 0:
        k = lower_bound(skeys, n, v)
        out[0] = order[k] if (k < n and skeys[k] == v) else NONE


# ----------------------------------------------------------------------------- undirected graphs


@cuda.jit
def half_keys(src, dst, n, keys):
    """Half-edge 2e is edge e at its src end, 2e + 1 at its dst end."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        keys[2 * i] = src[i]
        keys[2 * i + 1] = dst[i]
        i += stride


@cuda.jit
def odd_vertices(skeys, m, out):
    """Vertices of odd degree, from the sorted half-edge keys: out[0] how many, out[1] the
    smallest, out[2] the largest (host presets INT32_MAX, -1)."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < m:
        v = skeys[i]
        if i == 0 or skeys[i - 1] != v:
            deg = lower_bound(skeys, m, v + 1) - i
            if deg % 2 == 1:
                cuda.atomic.add(out, 0, 1)
                cuda.atomic.min(out, 1, v)
                cuda.atomic.max(out, 2, v)
        i += stride


# --8<-- [start:darts]
@cuda.jit
def dart_succ(order, skeys, n, succ, out, slot, lo, hi):
    """Pair the sorted half-edges two by two: dart d leaves through half-edge d and arrives
    through d ^ 1, so the dart after h0 ^ 1 is h1 and after h1 ^ 1 is h0. Only the successors
    in succ[lo:hi] are written (one launch per slice that stays in L2, as in `pair`); the slice
    at 0 also sets out[slot] = 1 if some slot's two half-edges are at different vertices: none
    is exactly when every vertex has even degree."""
    j = cuda.grid(1)
    stride = cuda.gridsize(1)
    while j < n:
        h0 = cuda.ldcs(order, 2 * j)
        h1 = cuda.ldcs(order, 2 * j + 1)
        a = uint32(h0 ^ 1)
        b = uint32(h1 ^ 1)
        if a >= uint32(lo) and a < uint32(hi):
            succ[a] = h1
        if b >= uint32(lo) and b < uint32(hi):
            succ[b] = h0
        if lo == 0 and cuda.ldcs(skeys, 2 * j) != cuda.ldcs(skeys, 2 * j + 1):
            out[slot] = 1  # any straddling slot (one store, not a count)
        j += stride


@cuda.jit
def orient(label, src, dst, n, osrc, odst, fwd, elabel):
    """Keep the dart of edge e whose closed trail has the smaller label: a balanced orientation
    (fwd[e] = 1 where e keeps the direction src -> dst); elabel[e] = that trail's smallest dart
    as an edge id, the label of e's cycle in the orientation."""
    e = cuda.grid(1)
    stride = cuda.gridsize(1)
    while e < n:
        a = label[2 * e]
        b = label[2 * e + 1]
        if a < b:
            osrc[e] = src[e]
            odst[e] = dst[e]
            fwd[e] = 1
        else:
            osrc[e] = dst[e]
            odst[e] = src[e]
            fwd[e] = 0
        elabel[e] = min(a, b) >> 1
        e += stride


@cuda.jit
def dart_pairs(order, skeys, fwd, n, ssrc, out_order, in_order):
    """Slot j of the sorted half-edges pairs h0 and h1 at one vertex; of the two ways through it
    (arrive by h0's edge and leave by h1's, or the reverse) the kept trails use exactly one: the
    one whose leaving dart is kept (dart h is kept when fwd[h // 2] says h's direction: fwd = 1
    for dart 2e, src -> dst). That is the orientation's pairing, slot by slot (its successors
    are scattered by `scatter_slice`)."""
    j = cuda.grid(1)
    stride = cuda.gridsize(1)
    while j < n:
        h0 = order[2 * j]
        h1 = order[2 * j + 1]
        h1_kept = (fwd[uint32(h1) >> uint32(1)] != 0) == ((h1 & 1) == 0)
        ssrc[j] = skeys[2 * j]
        out_order[j] = (h1 if h1_kept else h0) >> 1
        in_order[j] = (h0 if h1_kept else h1) >> 1
        j += stride


@cuda.jit
def scatter_slice(in_order, out_order, n, succ, lo, hi):
    """succ[in_order[i]] = out_order[i] for the successors in succ[lo:hi] (`pair` without its
    check)."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        scatter_in_slice(in_order, out_order, succ, i, lo, hi)
        i += stride
# --8<-- [end:darts]


# ----------------------------------------------------------------------------- small element-wise kernels


@cuda.jit
def fill_i32(a, n, v):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        a[i] = v
        i += stride


@cuda.jit
def fill_u8(a, n, v):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        a[i] = uint8(v)
        i += stride


@cuda.jit
def iota(a, n):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        a[i] = i
        i += stride


# ----------------------------------------------------------------------------- step 2: labelling the cycles


# --8<-- [start:propagate]
@cuda.jit
def propagate_round(succ, label, n, changed, slot):
    """One round of min-label propagation: every edge pushes its label one step along its cycle.
    A label needs as many rounds as the cycle is long to get around it. changed[slot] = 1 if
    any label moved (each round of a batch has its own flag: the host reads them once a batch)."""
    e = cuda.grid(1)
    stride = cuda.gridsize(1)
    while e < n:
        lab = label[e]
        s = uint32(succ[e])
        if lab < label[s]:
            cuda.atomic.min(label, s, lab)
            changed[slot] = 1
        e += stride
# --8<-- [end:propagate]


@cuda.jit
def jump_init(succ, n, W):
    """Element e of the pointer jumping: (label e, next succ[e]) in one word."""
    e = cuda.grid(1)
    stride = cuda.gridsize(1)
    while e < n:
        W[e] = pack(e, succ[e])
        e += stride


# --8<-- [start:jump]
@cuda.jit
def jump_round(W, W2, lo, hi, changed, slot):
    """Pointer jumping on cycles, elements lo..hi-1: word j holds (the minimum over a window of
    w elements starting at j, the element w steps ahead); one round doubles w. Label and
    pointer share a word, so a round costs one gather per element. A round that changes no
    label means every window already covers its whole cycle (the proof is in the chapter):
    changed[slot] = 1 otherwise."""
    j = lo + cuda.grid(1)
    stride = cuda.gridsize(1)
    while j < hi:
        w = W[j]
        wx = W[uint32(lo32(w))]
        a = hi32(w)
        b = hi32(wx)
        if b < a:
            a = b
            changed[slot] = 1
        W2[j] = pack(a, lo32(wx))
        j += stride


@cuda.jit
def unpack_labels(W, lo, hi, label):
    """label[j] = the value half of word j."""
    j = lo + cuda.grid(1)
    stride = cuda.gridsize(1)
    while j < hi:
        label[j] = hi32(W[j])
        j += stride
# --8<-- [end:jump]


@lru_cache(maxsize=None)
def tile_contract_kernel(TILE: int):
    """Pointer jumping inside one tile of TILE consecutive edge ids, in shared memory."""
    assert TILE & (TILE - 1) == 0 and TILE >= 2, "TILE must be a power of two"
    LOG = TILE.bit_length() - 1

    # --8<-- [start:tile_contract]
    @cuda.jit
    def tile_contract(succ, n, xit, mn, label):
        """For every edge e of the tile: follow successors while they stay in the tile. A chain
        ends at an *exit* (an edge whose successor lies outside): xit[e] = that exit, mn[e] = the
        smallest id from e to it. Cycles entirely inside the tile get their label here."""
        s_nxt = cuda.shared.array(TILE, int32)
        s_min = cuda.shared.array(TILE, int32)
        s_exit = cuda.shared.array(TILE, uint8)
        tid = cuda.threadIdx.x
        base = cuda.blockIdx.x * TILE
        e = base + tid
        if e < n:
            s = succ[e]
            inside = s >= base and s < base + TILE
            s_nxt[tid] = s - base if inside else tid  # an exit points to itself
            s_exit[tid] = 0 if inside else 1
            s_min[tid] = e
        else:
            s_nxt[tid] = tid
            s_exit[tid] = 0
            s_min[tid] = INT32_MAX
        cuda.syncthreads()
        for _ in range(LOG):  # windows of 2, 4, ... TILE: enough to reach any exit, or go round any cycle
            x = s_nxt[tid]
            m = min(s_min[tid], s_min[x])
            xx = s_nxt[x]
            cuda.syncthreads()
            s_min[tid] = m
            s_nxt[tid] = xx
            cuda.syncthreads()
        if e < n:
            x = s_nxt[tid]
            if s_exit[x]:
                xit[e] = base + x
                mn[e] = s_min[tid]
            else:  # a cycle inside the tile: the window went all the way round
                xit[e] = NONE
                label[e] = s_min[tid]
    # --8<-- [end:tile_contract]

    return tile_contract


@cuda.jit
def compact_exits(xit, n, cid, exits, count):
    """Number the exits (edges with xit[e] == e): exits[j] = e, cid[e] = j."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    n_round = (n + 31) // 32 * 32
    while i < n_round:
        pred = False
        if i < n:
            pred = xit[i] == i
        slot = warp_append(pred, count, 0)
        if pred:
            exits[slot] = i
            cid[i] = slot
        i += stride


@cuda.jit
def build_contracted(succ, xit, mn, cid, exits, m, W):
    """The contracted cycle: exit j is followed by the exit of the chain after it, and carries
    that chain's minimum (one word per exit, for ``jump_round``)."""
    j = cuda.grid(1)
    stride = cuda.gridsize(1)
    while j < m:
        s = uint32(succ[uint32(exits[j])])
        W[j] = pack(mn[s], cid[uint32(xit[s])])
        j += stride


@cuda.jit
def expand_labels(xit, cid, W, n, label):
    e = cuda.grid(1)
    stride = cuda.gridsize(1)
    while e < n:
        x = xit[e]
        if x != NONE:
            label[e] = hi32(W[uint32(cid[uint32(x)])])
        e += stride


PICK_ITEMS = 16  # edges per lane of a warp's segment in `pick_splitters` (its CUDA C twin's macro)


@lru_cache(maxsize=None)
def pick_splitters_kernel(BLOCK: int):
    """The ruling set's pick, with the count of unlabelled edges reduced per block."""
    WARP = min(32, BLOCK)  # the simulator's blocks of 8 threads are one 8-lane warp
    SEG = WARP * PICK_ITEMS

    # --8<-- [start:ruling_set]
    @cuda.jit
    def pick_splitters(own, n, thresh, seed, splitters, count, todo_slot, scale, first):
        """Ruling set, one round: every edge not labelled yet (own = NONE) is a splitter with
        probability (thresh + 1) / 2^32, a hash of its id. A splitter owns itself: own[i] = its
        slot (times ``scale``: 4 for an undirected trail's walker 2·slot, `walk_trail`),
        appended at count[0] (which keeps growing over the rounds, so the splitters of round r
        follow those of round r - 1). count[todo_slot] += the edges still unlabelled.

        Each warp takes segments of WARP · PICK_ITEMS edges (item k of lane l: edge
        seg + WARP·k + l, coalesced) and appends a segment's splitters with one atomic: at one
        splitter in 128 edges, an append per 32 edges put about 290,000 atomics on one counter
        at 42M edges. In the ``first`` round nothing is owned yet: own is written, not read."""
        s_cnt = cuda.shared.array(BLOCK, int32)
        tid = cuda.threadIdx.x
        lane = tid % WARP
        todo = int32(0)
        warps = cuda.gridsize(1) // WARP
        seg = (cuda.grid(1) // WARP) * SEG
        while seg < n:
            mask = uint32(0)  # bit k: item k is a new splitter
            for k in range(PICK_ITEMS):
                i = seg + WARP * k + lane
                if i < n and (first != 0 or own[i] == NONE):
                    todo += 1
                    if mix32(uint32(i) ^ seed) <= thresh:
                        mask |= uint32(1) << uint32(k)
            c = int32(cuda.popc(mask))
            incl = c  # the warp's inclusive scan of its lanes' counts
            d = 1
            while d < WARP:
                t = cuda.shfl_up_sync(FULL, incl, d)
                if lane >= d:
                    incl += t
                d *= 2
            total = cuda.shfl_sync(FULL, incl, WARP - 1)
            base = int32(0)
            if lane == WARP - 1 and total > 0:
                base = cuda.atomic.add(count, 0, total)
            slot = cuda.shfl_sync(FULL, base, WARP - 1) + incl - c
            for k in range(PICK_ITEMS):
                i = seg + WARP * k + lane
                if (mask >> uint32(k)) & uint32(1):
                    splitters[slot] = i
                    own[i] = int32(uint32(slot) * uint32(scale))
                    slot += 1
                elif first != 0 and i < n:
                    own[i] = NONE
            seg += warps * SEG
        s_cnt[tid] = todo
        cuda.syncthreads()
        half = BLOCK // 2
        while half > 0:
            if tid < half:
                s_cnt[tid] += s_cnt[tid + half]
            cuda.syncthreads()
            half //= 2
        if tid == 0 and s_cnt[0] > 0:
            cuda.atomic.add(count, todo_slot, s_cnt[0])
    # --8<-- [end:ruling_set]

    return pick_splitters


# --8<-- [start:walk_label]
@cuda.jit(device=True, inline=True)
def is_splitter(e, thresh, seed, head):
    """The same test as the pick: arithmetic, no memory access (within a walked cycle every edge
    is unlabelled, so the hash alone decides)."""
    return e == head or mix32(uint32(e) ^ seed) <= thresh


@cuda.jit
def walk_label(succ, own, splitters, lo, hi, thresh, seed, W, sublist, last, record):
    """One thread per splitter j (lo <= j < hi) walks its sublist up to the next splitter, in
    registers: one dependent load per edge (the successor), O(E) work in all. Every edge it
    passes gets own[e] = j, so the labels can be written later without walking again; the
    word W[j] = (smallest id of the sublist, the next splitter) starts the pointer jumping.
    With ``record``, the walk also keeps what the final ranking reuses (`rank_sublists`):
    sublist[j] = (its length, the next splitter) and last[j] = its last edge."""
    j = lo + cuda.grid(1)
    stride = cuda.gridsize(1)
    while j < hi:
        s = splitters[j]
        m = s
        k = int32(1)
        x = s
        e = succ[uint32(s)]
        while not is_splitter(e, thresh, seed, NONE):
            own[uint32(e)] = j
            m = min(m, e)
            x = e
            k += 1
            e = succ[uint32(e)]
        nxt = own[uint32(e)]
        W[j] = pack(m, nxt)
        if record:
            sublist[j] = pack(k, nxt)
            last[j] = x
        j += stride


@cuda.jit
def label_from_owner(own, n, clab, label):
    """label[e] = the cycle label of the splitter that owns e (``own`` may be ``label``: in place)."""
    e = cuda.grid(1)
    stride = cuda.gridsize(1)
    while e < n:
        label[e] = clab[uint32(own[e])]
        e += stride
# --8<-- [end:walk_label]


# --8<-- [start:trails]
@cuda.jit
def walk_trail(dsucc, town, splitters, lo, hi, thresh, seed, W):
    """An undirected graph's closed trails, each walked once (not once per direction, as its
    darts would be). The pick (scale 4) makes edge e = splitters[k] a splitter owned by walker
    2k, which walks from e in the direction of dart 2e while walker 2k + 1 walks from e the other
    way. A walker claims the edges it reaches (town[g] = walker·2 + the parity of the dart it
    walked g as), until it reaches a splitter or an edge claimed by the walker coming the other
    way: two walkers meet in the middle of every stretch between splitters. Walkers next(w) =
    met(w) ^ 1 (the twin of the one w met) all walk their trail the same way round, so they form
    two cycles per trail, one per direction; W[w] = (the smallest dart w walked, next(w)) starts
    the pointer jumping that gives each walker its cycle's smallest dart."""
    w = 2 * lo + cuda.grid(1)
    stride = cuda.gridsize(1)
    while w < 2 * hi:
        side = w & 1
        d = 2 * splitters[w >> 1] + side
        m = INT32_MAX if side else d  # walker 2k owns its splitter edge, as dart 2e
        tag = uint32(w) << uint32(1)
        nd = dsucc[uint32(d)]
        met = int32(0)
        while True:
            d = nd
            g = uint32(d) >> uint32(1)
            p = d & 1
            if is_splitter(int32(g), thresh, seed, NONE):  # the walker of g that comes this way
                met = int32((uint32(town[g]) >> uint32(1)) | uint32(p ^ 1))
                break
            old = cuda.atomic.cas(town, g, NONE, int32(tag | uint32(p)))
            nd = dsucc[uint32(d)]  # loaded while the claim is in flight
            if old != NONE:  # the walker coming the other way was here first
                met = int32(uint32(old) >> uint32(1))
                break
            m = min(m, d)
        W[w] = pack(m, met ^ 1)
        w += stride


@cuda.jit
def orient_trails(town, clab, src, dst, n, osrc, odst, fwd, elabel):
    """The orientation from the walkers' cycles (clab: each walker's cycle's smallest dart): of
    the two directions of a trail, keep the one that walks its smallest edge as that edge's even
    dart, as the darts' labelling would (its kept cycle has the smaller label)."""
    e = cuda.grid(1)
    stride = cuda.gridsize(1)
    while e < n:
        t = uint32(town[e])
        w = t >> uint32(1)
        a = clab[w]
        b = clab[w ^ uint32(1)]  # this walker's direction, and the other
        kept = (a & 1) == 0 if a < b else (b & 1) == 1
        f = ((t & uint32(1)) == 0) == kept  # e kept as dart 2e: src -> dst
        osrc[e] = src[e] if f else dst[e]
        odst[e] = dst[e] if f else src[e]
        fwd[e] = 1 if f else 0
        elabel[e] = min(a, b) >> 1
        e += stride
# --8<-- [end:trails]


# ----------------------------------------------------------------------------- step 3: the circuit graph


# --8<-- [start:links]
@cuda.jit
def list_nodes(label, n, nodes, comp, best, count, slot):
    """The cycles, one node each: the edges that are their cycle's label (smallest id);
    count[slot] = how many. Each node starts as its own component, with no lightest link yet."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    n_round = (n + 31) // 32 * 32
    while i < n_round:
        pred = False
        if i < n:
            pred = label[i] == i
        k = warp_append(pred, count, slot)
        if pred:
            nodes[k] = i
            comp[i] = i
            best[i] = INT32_MAX
        i += stride

# --8<-- [end:links]


# --8<-- [start:find_links]
LINK_ITEMS = 8  # out-slots per lane of a warp's segment in `find_links` (its CUDA C twin's macro)


@cuda.jit(device=True, inline=True)
def append_links(masks, total, x, y, w, ox, oy, ow, count, slot, lane):
    """Append a segment's links at count[slot] with one atomic: (x[k], y[k], w[k]) of every item
    k whose bit ``lane`` is set in masks[k] (``total``: how many bits the segment's masks hold),
    in order, so consecutive lanes write consecutive places. Every lane of the warp calls it."""
    base = int32(0)
    if lane == 0:
        base = cuda.atomic.add(count, slot, total)
    base = cuda.shfl_sync(FULL, base, 0)
    lt = (uint32(1) << uint32(lane)) - uint32(1)
    for k in range(LINK_ITEMS):
        if (masks[k] >> uint32(lane)) & uint32(1):
            q = base + int32(cuda.popc(masks[k] & lt))
            ox[q] = x[k]
            oy[q] = y[k]
            ow[q] = w[k]
        base += int32(cuda.popc(masks[k]))


@lru_cache(maxsize=None)
def find_links_kernel(BLOCK: int):
    """`find_links` for blocks of BLOCK threads (a warp of min(32, BLOCK) lanes)."""
    WARP = min(32, BLOCK)  # the simulator's blocks of 8 threads are one 8-lane warp
    SEG = WARP * LINK_ITEMS

    @cuda.jit
    def find_links(ssrc, out_order, label, n, lu, lv, lp, best, count, slot):
        """Link p joins the cycles of out-slots p and p + 1 when both leave the same vertex;
        count[slot] = how many. Borůvka's first round rides along: every cycle is still its own
        component, so each link is offered to both ends' lightest-link minimum right here.

        Each warp takes segments of WARP · LINK_ITEMS out-slots (item k of lane l: slot
        seg + WARP·k + l, coalesced). A slot's label is gathered once, by its own lane, and
        handed to the slot before it by a shuffle (one random gather an out-slot, where each
        link gathered both its ends), and a segment's links are appended with one atomic."""
        lane = cuda.threadIdx.x % WARP
        warps = cuda.gridsize(1) // WARP
        seg = (cuda.grid(1) // WARP) * SEG
        s = cuda.local.array(LINK_ITEMS, int32)
        a = cuda.local.array(LINK_ITEMS, int32)
        eq = cuda.local.array(LINK_ITEMS, int32)  # slots p and p + 1 leave the same vertex
        masks = cuda.local.array(LINK_ITEMS, uint32)
        while seg < n:
            after = seg + SEG  # the slot after the segment (lane WARP - 1's)
            for k in range(LINK_ITEMS):
                p = seg + WARP * k + lane
                s[k] = ssrc[p] if p < n else NONE
            s_after = ssrc[after] if lane == WARP - 1 and after < n else NONE
            for k in range(LINK_ITEMS):
                p = seg + WARP * k + lane
                down = cuda.shfl_down_sync(FULL, s[k], 1)
                first = cuda.shfl_sync(FULL, s[min(k + 1, LINK_ITEMS - 1)], 0)
                nxt = down if lane < WARP - 1 else (first if k + 1 < LINK_ITEMS else s_after)
                eq[k] = int32(1) if p + 1 < n and s[k] == nxt else int32(0)
            for k in range(LINK_ITEMS):  # a slot's label is needed by its links, before and after
                p = seg + WARP * k + lane
                up = cuda.shfl_up_sync(FULL, eq[k], 1)
                last = cuda.shfl_sync(FULL, eq[max(k - 1, 0)], WARP - 1)
                prev = up if lane > 0 else (last if k > 0 else 0)  # (slot seg - 1 gathers seg's itself)
                a[k] = label[uint32(out_order[p])] if eq[k] != 0 or prev != 0 else NONE
            total = int32(0)
            for k in range(LINK_ITEMS):
                p = seg + WARP * k + lane
                down = cuda.shfl_down_sync(FULL, a[k], 1)
                first = cuda.shfl_sync(FULL, a[min(k + 1, LINK_ITEMS - 1)], 0)
                if lane < WARP - 1:
                    b = down
                elif k + 1 < LINK_ITEMS:
                    b = first
                elif eq[k] != 0:
                    b = label[uint32(out_order[after])]
                else:
                    b = int32(NONE)
                pred = eq[k] != 0 and a[k] != b
                if pred:  # read first: most links are heavier than the best one already found
                    if p < best[uint32(a[k])]:
                        cuda.atomic.min(best, a[k], int32(p))
                    if p < best[uint32(b)]:
                        cuda.atomic.min(best, b, int32(p))
                masks[k] = uint32(cuda.ballot_sync(FULL, pred))  # (uint32: numba's ballot is signed)
                total += int32(cuda.popc(masks[k]))
                s[k] = b  # (s and eq are free now: keep b and the link's weight, its slot)
                eq[k] = int32(p)
            if total > 0:
                append_links(masks, total, a, s, eq, lu, lv, lp, count, slot, lane)
            seg += warps * SEG

    return find_links
# --8<-- [end:find_links]


# ----------------------------------------------------------------------------- step 4: spanning forest (Borůvka)


# --8<-- [start:boruvka]
@cuda.jit
def reset_best(nodes, c_count, best):
    """No lightest link yet for any cycle (per node, not per link: thousands of links may share
    a root, and as many stores to one address would queue behind each other)."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < c_count:
        best[uint32(nodes[i])] = INT32_MAX
        i += stride


@lru_cache(maxsize=None)
def min_links_kernel(BLOCK: int):
    """`min_links` for blocks of BLOCK threads (a warp of min(32, BLOCK) lanes)."""
    WARP = min(32, BLOCK)
    SEG = WARP * LINK_ITEMS

    @cuda.jit
    def min_links(lu, lv, lp, m, comp, best, lu2, lv2, lp2, count, slot):
        """Every component finds its lightest link to another component (weight = slot, unique);
        links inside a component are dropped, the others copied (as root pairs) for the next
        round (count[slot] = how many). Segments of WARP · LINK_ITEMS links a warp, appended
        with one atomic, as `find_links` does: an append per 32 links put one atomic on one
        counter per warp step, about 14 million in the second round at 2^30 edges."""
        lane = cuda.threadIdx.x % WARP
        warps = cuda.gridsize(1) // WARP
        seg = (cuda.grid(1) // WARP) * SEG
        cu = cuda.local.array(LINK_ITEMS, int32)
        cv = cuda.local.array(LINK_ITEMS, int32)
        w = cuda.local.array(LINK_ITEMS, int32)
        masks = cuda.local.array(LINK_ITEMS, uint32)
        while seg < m:
            total = int32(0)
            for k in range(LINK_ITEMS):
                i = seg + WARP * k + lane
                pred = False
                cu[k] = 0
                cv[k] = 0
                w[k] = 0
                if i < m:
                    cu[k] = comp[uint32(lu[i])]
                    cv[k] = comp[uint32(lv[i])]
                    w[k] = lp[i]
                    pred = cu[k] != cv[k]
                if pred:  # read first: most links are heavier than the best one already found
                    if w[k] < best[uint32(cu[k])]:
                        cuda.atomic.min(best, cu[k], w[k])
                    if w[k] < best[uint32(cv[k])]:
                        cuda.atomic.min(best, cv[k], w[k])
                masks[k] = uint32(cuda.ballot_sync(FULL, pred))  # (uint32: numba's ballot is signed)
                total += int32(cuda.popc(masks[k]))
            if total > 0:
                append_links(masks, total, cu, cv, w, lu2, lv2, lp2, count, slot, lane)
            seg += warps * SEG

    return min_links


@cuda.jit
def hook(lu, lv, lp, count, slot, best, comp, tree):
    """A component whose lightest link is this one hangs below the component at its other end;
    when both ends chose it, the larger root hangs below the smaller (no 2-cycles). The number
    of links, count[slot], is read on the device: the host does not wait for it."""
    m = count[slot]
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < m:
        cu = lu[i]
        cv = lv[i]
        w = lp[i]
        bu = best[uint32(cu)] == w
        bv = best[uint32(cv)] == w
        if bu and bv:
            comp[uint32(max(cu, cv))] = min(cu, cv)
        elif bu:
            comp[uint32(cu)] = cv
        elif bv:
            comp[uint32(cv)] = cu
        if bu or bv:
            tree[uint32(w)] = 1
        i += stride


@cuda.jit
def shortcut(nodes, c_count, comp, changed, slot):
    """Pointer jumping on the forest of hooks until every node points at its root (a batch of
    rounds, each with its own flag changed[slot])."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < c_count:
        x = uint32(nodes[i])
        c = comp[x]
        cc = comp[uint32(c)]
        if c != cc:
            comp[x] = cc
            changed[slot] = 1
        i += stride


@cuda.jit
def count_roots(nodes, c_count, comp, out, slot):
    """out[slot] = trees in the forest (weakly connected components), out[slot + 1] / out[slot + 2]
    = the smallest / largest root (host presets 0, INT32_MAX, -1)."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < c_count:
        x = nodes[i]
        if comp[uint32(x)] == x:
            cuda.atomic.add(out, slot, 1)
            cuda.atomic.min(out, slot + 1, x)
            cuda.atomic.max(out, slot + 2, x)
        i += stride
# --8<-- [end:boruvka]


# ----------------------------------------------------------------------------- step 5: splice


# --8<-- [start:splice]
@cuda.jit
def splice(tree, in_order, out_order, n, succ):
    """At every vertex, a run of tree links k0..k1-1 joins the cycles of slots k0..k1 (all
    different): rotate their successors, succ[p_k] = e_{k+1} and succ[p_k1] = e_k0, where p_k
    is slot k's in-edge and e_k its out-edge. One rotation merges the whole run."""
    k = cuda.grid(1)
    stride = cuda.gridsize(1)
    while k < n:
        if tree[k]:
            succ[uint32(in_order[k])] = out_order[k + 1]
        elif k > 0 and tree[k - 1]:  # k ends a run: find where it starts
            k0 = k - 1
            while k0 > 0 and tree[k0 - 1]:
                k0 -= 1
            succ[uint32(in_order[k])] = out_order[k0]
        k += stride
# --8<-- [end:splice]


# ----------------------------------------------------------------------------- step 6: ranking


# --8<-- [start:wyllie]
@cuda.jit
def wyllie_init(succ, n, head, W):
    """A list from a cycle: cut the link into ``head``. Word i = (distance 1, next)."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        x = succ[i]
        W[i] = pack(1, NONE if x == head else x)
        i += stride


@cuda.jit
def wyllie_round(W, W2, n):
    """Wyllie's list ranking: word i = (the sum of the weights from i up to, not including, its
    next, next); one gather per element per round. After ceil(log2 n) rounds every next is NONE
    and the sum runs to the end of the list."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        w = W[i]
        x = lo32(w)
        if x != NONE:
            wx = W[uint32(x)]
            w = pack(hi32(w) + hi32(wx), lo32(wx))
        W2[i] = w
        i += stride


@cuda.jit
def scatter_rank(W, n, out):
    """Edge e is d[e] edges from the end: it goes to position n - d[e]."""
    e = cuda.grid(1)
    stride = cuda.gridsize(1)
    while e < n:
        out[n - hi32(W[e])] = e
        e += stride
# --8<-- [end:wyllie]


# --8<-- [start:rank_ruling]
@cuda.jit
def pick_rank_splitters(n, thresh, seed, head, sid, splitters, count):
    """Splitters for ranking: the start edge is splitter 0 (host presets count[0] = 1), the
    others are picked by a hash of their id."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    n_round = (n + 31) // 32 * 32
    while i < n_round:
        pred = False
        if i < n:
            pred = i != head and mix32(uint32(i) ^ seed) <= thresh
        slot = warp_append(pred, count, 0)
        if pred:
            splitters[slot] = i
            sid[i] = slot
        if i == head:
            splitters[0] = i
            sid[i] = 0
        i += stride


@cuda.jit
def walk_rank(succ, sid, splitters, s_count, thresh, seed, head, W):
    """One thread per splitter measures its sublist: W[j] = (its length, the next splitter, or
    NONE after the last sublist) — the list that Wyllie ranks with lengths as weights."""
    j = cuda.grid(1)
    stride = cuda.gridsize(1)
    while j < s_count:
        length = 1
        e = succ[uint32(splitters[j])]
        while not is_splitter(e, thresh, seed, head):
            length += 1
            e = succ[uint32(e)]
        W[j] = pack(length, NONE if e == head else sid[uint32(e)])
        j += stride


@cuda.jit
def write_ranked(succ, splitters, s_count, thresh, seed, head, W, n, out):
    """Walk each sublist again and write it at its offset n - d[j] (d from list ranking)."""
    j = cuda.grid(1)
    stride = cuda.gridsize(1)
    while j < s_count:
        pos = n - hi32(W[j])
        e = splitters[j]
        out[pos] = e
        e = succ[uint32(e)]
        while not is_splitter(e, thresh, seed, head):
            pos += 1
            out[pos] = e
            e = succ[uint32(e)]
        j += stride
# --8<-- [end:rank_ruling]


# --8<-- [start:rank_sublists]
ENDS = 0x80000000  # in succ: "my successor starts a piece" (ids are below 2^31)


@cuda.jit(device=True, inline=True)
def edge_of(w):
    return int32(w & uint32(0x7FFFFFFF))


@cuda.jit
def mark_ends(last, s_count, succ):
    """Ranking from the labelling's sublists: each sublist's last edge gets the ENDS bit, so a
    walk sees where a piece ends in the word it reads anyway."""
    j = cuda.grid(1)
    stride = cuda.gridsize(1)
    while j < s_count:
        succ[uint32(last[j])] |= int32(-2**31)
        j += stride


@cuda.jit
def list_cuts(tree, in_order, out_order, succ, own, spl, n, s_count, head, dirty, cut_y, bidx, count, slot):
    """After the splice: every in-edge x whose successor changed (the splice's own test) ends a
    piece, and its sublist is measured again (dirty); x's old successor y starts a piece, and a
    y that is no splitter of the labelling becomes boundary s_count + its slot (bidx). A y that
    is the head is noted in count[slot + 1]."""
    k = cuda.grid(1)
    stride = cuda.gridsize(1)
    n_round = (n + 31) // 32 * 32
    while k < n_round:
        changed = False
        if k < n:
            changed = tree[k] != 0 or (k > 0 and tree[k - 1] != 0)
        cut = False
        y = int32(NONE)
        if changed:
            x = in_order[k]
            succ[uint32(x)] |= int32(-2**31)
            dirty[uint32(own[uint32(x)])] = 1
            y = out_order[k]
            cut = spl[uint32(own[uint32(y)])] != y
        at = warp_append(cut, count, slot)
        if cut:
            cut_y[at] = y
            bidx[uint32(y)] = s_count + at
            if y == head:
                count[slot + 1] = s_count + at
        k += stride


@cuda.jit
def head_boundary(head, own, spl, s_count, dirty, cut_y, count, slot):
    """The head starts the circuit: a boundary already (a splitter or a cut), else boundary
    s_count + c, and the sublist that holds it is measured again."""
    c = count[slot]
    hb = count[slot + 1]
    if hb == NONE:
        o = own[uint32(head)]
        if spl[uint32(o)] == head:
            hb = o
        else:
            hb = s_count + c
            dirty[uint32(o)] = 1
    count[slot + 1] = hb
    cut_y[c] = head  # boundary s_count + c: the head, or nothing


@cuda.jit(device=True, inline=True)
def measure_piece(succ, b, head):
    """(the length of the piece that starts at edge b, the edge after it)."""
    length = int32(1)
    w = uint32(succ[uint32(b)])
    while (w & uint32(ENDS)) == 0 and edge_of(w) != head:
        length += 1
        w = uint32(succ[w])
    return length, edge_of(w)


@cuda.jit
def measure(succ, own, spl, sublist, dirty, cut_y, bidx, s_count, total, head, count, slot, W):
    """Word j = (the length of piece j, the piece after it; NONE before the head's): as the
    labelling left it for an untouched sublist, walked for the others."""
    hb = count[slot + 1]
    c = count[slot]
    j = cuda.grid(1)
    stride = cuda.gridsize(1)
    while j < total:
        length = int32(0)
        nxt = int32(NONE)
        if j < s_count and dirty[j] == 0:
            sl = sublist[j]
            length = hi32(sl)
            nxt = lo32(sl)
        elif j < s_count + c or hb == j:
            b = spl[j] if j < s_count else cut_y[j - s_count]
            length, z = measure_piece(succ, b, head)
            if z == head:
                nxt = hb
            elif spl[uint32(own[uint32(z)])] == z:
                nxt = own[uint32(z)]
            else:
                nxt = bidx[uint32(z)]
        W[j] = pack(length, NONE if nxt == hb else nxt)
        j += stride


@cuda.jit
def write_pieces(succ, spl, cut_y, s_count, total, head, W, n, out):
    """After Wyllie on the pieces: walk each again, writing it from its place n - d[j] on."""
    j = cuda.grid(1)
    stride = cuda.gridsize(1)
    while j < total:
        wj = W[j]
        if hi32(wj) != 0:  # else the head's unused slot
            pos = n - hi32(wj)
            e = spl[j] if j < s_count else cut_y[j - s_count]
            out[pos] = e
            w = uint32(succ[uint32(e)])
            while (w & uint32(ENDS)) == 0 and edge_of(w) != head:
                pos += 1
                out[pos] = edge_of(w)
                w = uint32(succ[w])
        j += stride
# --8<-- [end:rank_sublists]


@cuda.jit
def walk_vertices(out, tail, head, m, vs):
    """The vertices of a walk of m edges: vs[i] = where edge out[i] starts, vs[m] = where the
    last one ends (= vs[0] for a circuit)."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i <= m:
        if i < m:
            vs[i] = tail[uint32(out[i])]
        else:
            vs[i] = head[uint32(out[m - 1])]
        i += stride


@cuda.jit
def gather_i32(a, idx, n, out):
    """out[i] = a[idx[i]]."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        out[i] = a[uint32(idx[i])]
        i += stride


@cuda.jit
def reverse_walk(out, fwd, n, out2, fwd2):
    """The same walk backwards (undirected): reverse the order and every direction."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        out2[i] = out[n - 1 - i]
        fwd2[i] = 1 - fwd[n - 1 - i]
        i += stride


# ----------------------------------------------------------------------------- checking on the device


# --8<-- [start:verify]
@cuda.jit
def mark_positions(out, n, pos, bad):
    """pos[e] = the position of edge e in the walk (pos preset to NONE); bad[0] counts ids out
    of range."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        e = out[i]
        if e < 0 or e >= n:
            cuda.atomic.add(bad, 0, 1)
        else:
            pos[e] = i
        i += stride


@cuda.jit
def check_chain(out, tail, head, pos, n, closed, bad):
    """bad[1]: positions whose edge is also written elsewhere (so some edge is missing);
    bad[2]: edges that do not start where the previous one ended (and, if ``closed``, the
    last one not where the first started). bad[3]: the smallest such position."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        e = out[i]
        if e >= 0 and e < n:
            if pos[e] != i:
                cuda.atomic.add(bad, 1, 1)
                cuda.atomic.min(bad, 3, int32(i))
            if i + 1 < n or closed:
                f = out[i + 1] if i + 1 < n else out[0]
                if f >= 0 and f < n and head[e] != tail[f]:
                    cuda.atomic.add(bad, 2, 1)
                    cuda.atomic.min(bad, 3, int32(i))
        i += stride


@cuda.jit
def cycle_sizes(label, n, size):
    """size[c] = number of edges labelled c (size preset to 0)."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        cuda.atomic.add(size, label[i], 1)
        i += stride
# --8<-- [end:verify]


# ----------------------------------------------------------------------------- generators and de Bruijn


# --8<-- [start:gen_deep]
@cuda.jit
def gen_deep(E, V, half_v, mask_v, half_e, mask_e, kv0, kv1, kv2, kv3, ke0, ke1, ke2, ke3, kr, src, dst):
    """``generators.deep_graph`` on the GPU: step i of the closed walk is edge feistel(i)."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < E:
        j = i + 1 if i + 1 < E else 0
        if i < V:
            a = feistel(i, V, half_v, mask_v, kv0, kv1, kv2, kv3)
        else:
            a = int32(mix32(uint32(i) ^ kr) % uint32(V))
        if j < V:
            b = feistel(j, V, half_v, mask_v, kv0, kv1, kv2, kv3)
        else:
            b = int32(mix32(uint32(j) ^ kr) % uint32(V))
        e = feistel(i, E, half_e, mask_e, ke0, ke1, ke2, ke3)
        src[e] = a
        dst[e] = b
        i += stride
# --8<-- [end:gen_deep]


@cuda.jit(device=True, inline=True)
def shallow_vertex(j, t, E, L, C, M0, M, degree, path, kr, kp, kq):
    length = E - (C - 1) * L if j == C - 1 else L
    h = mix32(uint32(j * L + t) ^ kr)
    if j == 0:
        if t < M0:
            return int32(t)
        return int32(h % uint32(M0))
    if t == 0:
        parent = j - 1 if path else int32(mix32(uint32(j) ^ kp) % uint32(j))
        pm = M0 if parent == 0 else M
        pbase = 0 if parent == 0 else M0 + (parent - 1) * M
        return int32(pbase + int32(mix32(uint32(j) ^ kq) % uint32(pm)))
    m = M
    if j == C - 1:
        m = (length - 1 + degree - 1) // degree
    base = M0 + (j - 1) * M
    if t <= m:
        return int32(base + t - 1)
    return int32(base + int32(h % uint32(max(m, 1))))


@cuda.jit
def gen_shallow(E, L, C, M0, M, degree, path, half_e, mask_e, ke0, ke1, ke2, ke3, kr, kp, kq, src, dst):
    """``generators.shallow_graph`` on the GPU."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < E:
        j = i // L
        t = i - j * L
        length = E - (C - 1) * L if j == C - 1 else L
        t2 = t + 1 if t + 1 < length else 0
        e = feistel(i, E, half_e, mask_e, ke0, ke1, ke2, ke3)
        src[e] = shallow_vertex(j, t, E, L, C, M0, M, degree, path, kr, kp, kq)
        dst[e] = shallow_vertex(j, t2, E, L, C, M0, M, degree, path, kr, kp, kq)
        i += stride


# --8<-- [start:debruijn]
@cuda.jit
def debruijn_graph(N, k, kn1, ssrc, out_order, in_order, succ):
    """The de Bruijn graph B(k, n) without building it: edge w (an n-gram, base k) leaves vertex
    w // k and enters vertex w % k^(n-1). Out-edges of a vertex are consecutive ids (so
    ``out_order`` is the identity), in-edges are ``c * k^(n-1) + v``, and the pairing is a
    rotation of the n digits: succ(w) = (w % k^(n-1)) * k + w // k^(n-1)."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < N:
        ssrc[i] = i // k
        out_order[i] = i
        in_order[i] = (i % k) * kn1 + i // k
        succ[i] = (i % kn1) * k + i // kn1
        i += stride


@cuda.jit
def debruijn_ends(N, k, kn1, tail, head):
    """Where edge w of B(k, n) starts and ends (for checking a circuit on the device)."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < N:
        tail[i] = i // k
        head[i] = i % kn1
        i += stride


@cuda.jit
def debruijn_symbols(circuit, N, kn1, n1, seq):
    """Symbol i of the sequence is the first digit of the i-th edge; the linear sequence repeats
    the first n - 1 symbols at the end."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < N:
        s = uint8(circuit[i] // kn1)
        seq[i] = s
        if i < n1:
            seq[N + i] = s
        i += stride
# --8<-- [end:debruijn]


# ----------------------------------------------------------------------------- compile checks


# The kernels built per compile-time parameter, by the name the host launches them with:
# (builder, the parameter it is built for, the signature it is launched with).
TEMPLATED = {
    "to_i32_i32": (to_i32_kernel, "BLOCK", f"void({I32}, int32, {I32}, {I64}, int32, int32)"),
    "to_i32_i64": (to_i32_kernel, "BLOCK", f"void({I64}, int32, {I32}, {I64}, int32, int32)"),
    "pick_splitters": (pick_splitters_kernel, "BLOCK",
                       f"void({I32}, int32, uint32, uint32, {I32}, {I32}, int32, int32, int32)"),
    "tile_contract": (tile_contract_kernel, "TILE", f"void({I32}, int32, {I32}, {I32}, {I32})"),
    "min_links": (min_links_kernel, "BLOCK",
                  f"void({I32}, {I32}, {I32}, int32, {I32}, {I32}, {I32}, {I32}, {I32}, {I32}, int32)"),
    "find_links": (find_links_kernel, "BLOCK",
                   f"void({I32}, {I32}, {I32}, int32, {I32}, {I32}, {I32}, {I32}, {I32}, int32)"),
}
# the templated kernels of every GPU variant (its policy's `kernels` names the others)
COMMON_TEMPLATED = ("to_i32_i32", "to_i32_i64", "find_links", "min_links")


def fixed_targets() -> list[tuple[str, object, str]]:
    """The kernels of this chapter that take no compile-time parameters, with the signatures the
    host launches them with (the parametrized ones: `gpulab.euler.variants.ptx_targets`)."""
    s = "int32"
    u = "uint32"
    return [
        ("preset_i32", preset_i32, f"void({I32}, {s}, {s}, {s}, {s}, {s})"),
        ("preset_i64", preset_i64, f"void({I64}, int64, int64, int64, int64)"),
        ("small_sort", small_sort, f"void({I32}, {s}, {I32}, {I32})"),
        ("mismatch", mismatch, f"void({I32}, {I32}, {s}, {I32})"),
        ("pair", pair, f"void({I32}, {I32}, {I32}, {I32}, {s}, {I32}, {I32}, {s}, {s}, {s})"),
        ("imbalance", imbalance, f"void({I32}, {I32}, {s}, {I32})"),
        ("degrees_of", degrees_of, f"void({I32}, {I32}, {s}, {s}, {I32})"),
        ("find_first", find_first, f"void({I32}, {I32}, {s}, {s}, {I32})"),
        ("half_keys", half_keys, f"void({I32}, {I32}, {s}, {I32})"),
        ("odd_vertices", odd_vertices, f"void({I32}, {s}, {I32})"),
        ("dart_succ", dart_succ, f"void({I32}, {I32}, {s}, {I32}, {I32}, {s}, {s}, {s})"),
        ("orient", orient, f"void({I32}, {I32}, {I32}, {s}, {I32}, {I32}, {I32}, {I32})"),
        ("dart_pairs", dart_pairs, f"void({I32}, {I32}, {I32}, {s}, {I32}, {I32}, {I32})"),
        ("scatter_slice", scatter_slice, f"void({I32}, {I32}, {s}, {I32}, {s}, {s})"),
        ("fill_i32", fill_i32, f"void({I32}, {s}, {s})"),
        ("fill_u8", fill_u8, f"void({U8}, {s}, {s})"),
        ("iota", iota, f"void({I32}, {s})"),
        ("propagate_round", propagate_round, f"void({I32}, {I32}, {s}, {I32}, {s})"),
        ("jump_init", jump_init, f"void({I32}, {s}, {U64})"),
        ("jump_round", jump_round, f"void({U64}, {U64}, {s}, {s}, {I32}, {s})"),
        ("unpack_labels", unpack_labels, f"void({U64}, {s}, {s}, {I32})"),
        ("compact_exits", compact_exits, f"void({I32}, {s}, {I32}, {I32}, {I32})"),
        ("build_contracted", build_contracted, f"void({I32}, {I32}, {I32}, {I32}, {I32}, {s}, {U64})"),
        ("expand_labels", expand_labels, f"void({I32}, {I32}, {U64}, {s}, {I32})"),
        ("walk_label", walk_label, f"void({I32}, {I32}, {I32}, {s}, {s}, {u}, {u}, {U64}, {U64}, {I32}, {s})"),
        ("label_from_owner", label_from_owner, f"void({I32}, {s}, {I32}, {I32})"),
        ("walk_trail", walk_trail, f"void({I32}, {I32}, {I32}, {s}, {s}, {u}, {u}, {U64})"),
        ("orient_trails", orient_trails, f"void({I32}, {I32}, {I32}, {I32}, {s}, {I32}, {I32}, {I32}, {I32})"),
        ("list_nodes", list_nodes, f"void({I32}, {s}, {I32}, {I32}, {I32}, {I32}, {s})"),
        ("reset_best", reset_best, f"void({I32}, {s}, {I32})"),
        ("hook", hook, f"void({I32}, {I32}, {I32}, {I32}, {s}, {I32}, {I32}, {U8})"),
        ("shortcut", shortcut, f"void({I32}, {s}, {I32}, {I32}, {s})"),
        ("count_roots", count_roots, f"void({I32}, {s}, {I32}, {I32}, {s})"),
        ("splice", splice, f"void({U8}, {I32}, {I32}, {s}, {I32})"),
        ("wyllie_init", wyllie_init, f"void({I32}, {s}, {s}, {U64})"),
        ("wyllie_round", wyllie_round, f"void({U64}, {U64}, {s})"),
        ("scatter_rank", scatter_rank, f"void({U64}, {s}, {I32})"),
        ("pick_rank_splitters", pick_rank_splitters, f"void({s}, {u}, {u}, {s}, {I32}, {I32}, {I32})"),
        ("walk_rank", walk_rank, f"void({I32}, {I32}, {I32}, {s}, {u}, {u}, {s}, {U64})"),
        ("write_ranked", write_ranked, f"void({I32}, {I32}, {s}, {u}, {u}, {s}, {U64}, {s}, {I32})"),
        ("mark_ends", mark_ends, f"void({I32}, {s}, {I32})"),
        ("list_cuts", list_cuts,
         f"void({U8}, {I32}, {I32}, {I32}, {I32}, {I32}, {s}, {s}, {s}, {U8}, {I32}, {I32}, {I32}, {s})"),
        ("head_boundary", head_boundary, f"void({s}, {I32}, {I32}, {s}, {U8}, {I32}, {I32}, {s})"),
        ("measure", measure,
         f"void({I32}, {I32}, {I32}, {U64}, {U8}, {I32}, {I32}, {s}, {s}, {s}, {I32}, {s}, {U64})"),
        ("write_pieces", write_pieces, f"void({I32}, {I32}, {I32}, {s}, {s}, {s}, {U64}, {s}, {I32})"),
        ("walk_vertices", walk_vertices, f"void({I32}, {I32}, {I32}, {s}, {I32})"),
        ("gather_i32", gather_i32, f"void({I32}, {I32}, {s}, {I32})"),
        ("reverse_walk", reverse_walk, f"void({I32}, {I32}, {s}, {I32}, {I32})"),
        ("mark_positions", mark_positions, f"void({I32}, {s}, {I32}, {I32})"),
        ("check_chain", check_chain, f"void({I32}, {I32}, {I32}, {I32}, {s}, {s}, {I32})"),
        ("cycle_sizes", cycle_sizes, f"void({I32}, {s}, {I32})"),
        ("gen_deep", gen_deep, f"void({s}, {s}, {u}, {u}, {u}, {u}, {u}, {u}, {u}, {u}, {u}, {u}, {u}, {u}, {u}, {I32}, {I32})"),
        ("gen_shallow", gen_shallow, f"void({s}, {s}, {s}, {s}, {s}, {s}, {s}, {u}, {u}, {u}, {u}, {u}, {u}, {u}, {u}, {u}, {I32}, {I32})"),
        ("debruijn_graph", debruijn_graph, f"void({s}, {s}, {s}, {I32}, {I32}, {I32}, {I32})"),
        ("debruijn_ends", debruijn_ends, f"void({s}, {s}, {s}, {I32}, {I32})"),
        ("debruijn_symbols", debruijn_symbols, f"void({I32}, {s}, {s}, {s}, {U8})"),
    ]


__all__ = [n for n in dir() if not n.startswith("_")] + ["np"]
