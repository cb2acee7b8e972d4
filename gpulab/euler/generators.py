"""Eulerian graph generators: the blog's two families at any size, seeded, and small hand-built
graphs for tests.

Both families are defined by closed formulas on the position of an edge, so they are
generated vectorised in numpy ([`deep_graph`][gpulab.euler.generators.deep_graph], [`shallow_graph`][gpulab.euler.generators.shallow_graph]) or by one kernel on the
GPU (``device=True``: the 2^30-edge graphs never touch host memory), and the two give the same
arrays bit for bit.

* **deep**: one closed random walk of E steps over V = E / degree vertices (the first V steps
  visit every vertex once, in random order; the rest are random). The pairing of step 1 cuts a
  random walk into few cycles — about ln E, one of them most of the graph — so the cycles are
  *long*: label propagation needs as many rounds as the longest one.
* **shallow**: ceil(E / walk) short closed walks, each over its own pool of ``walk / degree``
  vertices, joined in a tree: walk j starts at a vertex of an earlier walk (random, or j - 1 for
  ``tree="path"``, a deep spanning tree). Pairing splits every short walk into a few cycles: very
  many *short* cycles, as the blog's ``GenerateEulerGraphAlt``.

Edge ids are a pseudo-random permutation of walk positions (a 4-round Feistel network with
cycle walking), so neither family gives the kernels any locality to exploit.
"""

from __future__ import annotations

import numpy as np

from gpulab.launch import u32

MASK32 = 0xFFFFFFFF


# --8<-- [start:hash]
def mix32(x):
    """A 32-bit integer mixer (lowbias32): a good hash of a counter, in numpy or as a Python int."""
    if isinstance(x, (int, np.integer)):
        x = int(x) & MASK32
        x ^= x >> 16
        x = (x * 0x7FEB352D) & MASK32
        x ^= x >> 15
        x = (x * 0x846CA68B) & MASK32
        return x ^ (x >> 16)
    x = np.asarray(x).astype(np.uint32)
    x = x ^ (x >> np.uint32(16))
    x = x * np.uint32(0x7FEB352D)
    x = x ^ (x >> np.uint32(15))
    x = x * np.uint32(0x846CA68B)
    return x ^ (x >> np.uint32(16))


def round_keys(seed: int, salt: int) -> tuple[int, int, int, int]:
    """Four 32-bit Feistel round keys from a seed (the same on the host and in the kernels)."""
    base = mix32((int(seed) * 0x9E3779B1 + salt * 0x85EBCA77) & MASK32)
    return tuple(mix32(base ^ (r * 0xC2B2AE3D & MASK32)) for r in range(4))


def feistel_bits(n: int) -> int:
    """Bits of the Feistel domain for a permutation of [0, n): even, at least 2."""
    b = max(2, int(n - 1).bit_length())
    return b + (b & 1)


def feistel(x, n: int, keys) -> np.ndarray:
    """A pseudo-random permutation of [0, n) applied to ``x`` (numpy, vectorised).

    A balanced 4-round Feistel network permutes [0, 2^bits); values that land outside [0, n) are
    encrypted again until they land inside ("cycle walking"), which keeps it a permutation.
    """
    bits = feistel_bits(n)
    half = np.uint32(bits // 2)
    mask = np.uint32((1 << (bits // 2)) - 1)
    ks = [np.uint32(k) for k in keys]

    def F(v):
        left, right = v >> half, v & mask
        for k in ks:
            left, right = right, left ^ (mix32(right ^ k) & mask)
        return (left << half) | right

    y = F(np.asarray(x).astype(np.uint32))
    out = y >= np.uint32(n)
    while np.any(out):
        y[out] = F(y[out])
        out = y >= np.uint32(n)
    return y
# --8<-- [end:hash]


# ----------------------------------------------------------------------------- the two families


def deep_params(n_edges: int, degree: int, seed: int) -> dict:
    if n_edges < 1 or degree < 1:
        raise ValueError(f"need n_edges >= 1 and degree >= 1, got {n_edges}, {degree}")
    V = max(1, n_edges // degree)
    return dict(E=n_edges, V=V, KV=round_keys(seed, 1), KE=round_keys(seed, 2), KR=round_keys(seed, 3)[0])


def _deep_vertex(i, p):
    V = p["V"]
    first = feistel(np.minimum(i, V - 1), V, p["KV"])  # the first V steps visit every vertex once
    rand = mix32((i.astype(np.uint32)) ^ np.uint32(p["KR"])) % np.uint32(V)
    return np.where(i < V, first, rand).astype(np.int32)


# --8<-- [start:deep]
def deep_graph(n_edges: int, degree: int = 4, seed: int = 0, device: bool = False):
    """One closed random walk of ``n_edges`` steps over ``n_edges // degree`` vertices.

    Returns ``(src, dst)`` int32 arrays (numba device arrays with ``device=True``, generated
    by a kernel). Edge ``feistel(i)`` is step i of the walk.
    """
    p = deep_params(n_edges, degree, seed)
    if device:
        return _generate_deep(p)
    i = np.arange(n_edges, dtype=np.int64)
    ids = feistel(i, n_edges, p["KE"]).astype(np.int64)
    w = _deep_vertex(i, p)
    src, dst = np.empty(n_edges, np.int32), np.empty(n_edges, np.int32)
    src[ids] = w
    dst[ids] = np.roll(w, -1)
    return src, dst
# --8<-- [end:deep]


def shallow_params(n_edges: int, walk: int, degree: int, seed: int, tree: str) -> dict:
    if n_edges < 1 or walk < 2 or degree < 1:
        raise ValueError(f"need n_edges >= 1, walk >= 2 and degree >= 1, got {n_edges}, {walk}, {degree}")
    if tree not in ("random", "path"):
        raise ValueError(f"tree must be 'random' or 'path', got {tree!r}")
    L = walk
    C = -(-n_edges // L)
    L0 = min(L, n_edges)
    M0 = max(1, -(-L0 // degree))  # walk 0's pool covers its steps 0..L0-1
    M = -(-(L - 1) // degree)  # walk j >= 1: step 0 is the contact, the pool covers steps 1..L-1
    last_len = n_edges - (C - 1) * L
    m_last = -(-(last_len - 1) // degree) if C > 1 else M0
    V = M0 if C == 1 else M0 + (C - 2) * M + m_last
    return dict(E=n_edges, L=L, C=C, M0=M0, M=M, V=V, DEGREE=degree, PATH=int(tree == "path"), KE=round_keys(seed, 2),
                KR=round_keys(seed, 3)[0], KP=round_keys(seed, 4)[0], KQ=round_keys(seed, 5)[0])


def _shallow_vertex(j, t, p):
    """Vertex at step t of walk j (numpy int64 arrays)."""
    L, C, M0, M, E = p["L"], p["C"], p["M0"], p["M"], p["E"]
    u32 = lambda a: np.asarray(a).astype(np.uint32)  # noqa: E731
    length = np.where(j == C - 1, E - (C - 1) * L, L)
    m = np.where(j == 0, M0, np.where(j == C - 1, -(-(length - 1) // p["DEGREE"]), M))
    base = np.where(j == 0, 0, M0 + (j - 1) * M)
    h = mix32(u32(j * L + t) ^ np.uint32(p["KR"]))
    # walk 0: steps 0..M0-1 visit its pool once each, later steps random pool vertices
    v0 = np.where(t < M0, t, h % np.uint32(M0))
    # walk j >= 1: step 0 is a vertex of the parent walk, steps 1..m the pool once, then random
    jj = np.maximum(j, 1)
    parent = jj - 1 if p["PATH"] else (mix32(u32(jj) ^ np.uint32(p["KP"])) % u32(jj)).astype(np.int64)
    pm = np.where(parent == 0, M0, M)
    pbase = np.where(parent == 0, 0, M0 + (parent - 1) * M)
    contact = pbase + mix32(u32(jj) ^ np.uint32(p["KQ"])) % u32(pm)
    pool = base + np.where(t <= m, t - 1, h % u32(np.maximum(m, 1)))
    return np.where(j == 0, v0, np.where(t == 0, contact, pool)).astype(np.int32)


# --8<-- [start:shallow]
def shallow_graph(n_edges: int, walk: int = 64, degree: int = 4, seed: int = 0, tree: str = "random",
                  device: bool = False):
    """ceil(n_edges / walk) closed walks of ``walk`` steps, each over its own ~walk/degree
    vertices, joined in a tree (``tree="random"``: walk j starts at a vertex of a random earlier
    walk; ``"path"``: of walk j - 1). Returns ``(src, dst)`` as [`deep_graph`][gpulab.euler.generators.deep_graph] does."""
    p = shallow_params(n_edges, walk, degree, seed, tree)
    if device:
        return _generate_shallow(p)
    i = np.arange(n_edges, dtype=np.int64)
    j, t = i // p["L"], i % p["L"]
    length = np.where(j == p["C"] - 1, n_edges - (p["C"] - 1) * p["L"], p["L"])
    ids = feistel(i, n_edges, p["KE"]).astype(np.int64)
    src, dst = np.empty(n_edges, np.int32), np.empty(n_edges, np.int32)
    src[ids] = _shallow_vertex(j, t, p)
    dst[ids] = _shallow_vertex(j, (t + 1) % length, p)
    return src, dst
# --8<-- [end:shallow]


# ----------------------------------------------------------------------------- small graphs for tests


def from_cycles(cycles: list[list[int]], shuffle_rng=None):
    """Edges of the closed walks given as vertex lists (``[0, 1, 2]`` is 0→1→2→0); edge ids in
    walk order, or shuffled with ``shuffle_rng``."""
    src = np.array([c[i] for c in cycles for i in range(len(c))], np.int32)
    dst = np.array([c[(i + 1) % len(c)] for c in cycles for i in range(len(c))], np.int32)
    if shuffle_rng is not None:
        perm = shuffle_rng.permutation(src.size)
        src, dst = src[perm], dst[perm]
    return src, dst


def flower(petals: int, petal_len: int, shuffle_rng=None):
    """``petals`` cycles of ``petal_len`` edges sharing vertex 0 (many small cycles at one vertex)."""
    cycles, v = [], 1
    for _ in range(petals):
        cycles.append([0] + list(range(v, v + petal_len - 1)))
        v += petal_len - 1
    return from_cycles(cycles, shuffle_rng)


def star_of_cycles(arms: int, arm_len: int, shuffle_rng=None):
    """A central cycle through vertices 0..arms-1, and at each of them a cycle of its own."""
    cycles = [list(range(arms))]
    v = arms
    for a in range(arms):
        cycles.append([a] + list(range(v, v + arm_len - 1)))
        v += arm_len - 1
    return from_cycles(cycles, shuffle_rng)


def path_of_cycles(count: int, length: int, shuffle_rng=None):
    """Cycle i shares one vertex with cycle i + 1: the circuit graph is a long path (a deep tree)."""
    cycles = []
    for i in range(count):
        base = i * (length - 1)
        cycles.append(list(range(base, base + length - 1)) + [base + length - 1])
    # consecutive cycles share vertex base + length - 1 == next base
    return from_cycles(cycles, shuffle_rng)


# ----------------------------------------------------------------------------- generators on the device


def _launch(name: str, n: int, *args):
    """Launch the numba kernel ``name`` over n items, as the plan's element-wise launches (grid-stride loops)."""
    from gpulab import device
    from gpulab.euler.host import KERNELS, launch_shape

    sim = device.on_simulator()
    block = 32 if sim else 256
    grid, blk = launch_shape(n, block, sim)
    KERNELS.provider("numba", {"BLOCK": block})(name, grid, blk, *args)


def _generate_deep(p: dict):
    from numba import cuda

    E, V = p["E"], p["V"]
    src, dst = cuda.device_array(E, np.int32), cuda.device_array(E, np.int32)
    bv, be = feistel_bits(V), feistel_bits(E)
    _launch("gen_deep", E, np.int32(E), np.int32(V), u32(bv // 2), u32((1 << (bv // 2)) - 1),
            u32(be // 2), u32((1 << (be // 2)) - 1), *(u32(k) for k in p["KV"]),
            *(u32(k) for k in p["KE"]), u32(p["KR"]), src, dst)
    return src, dst


def _generate_shallow(p: dict):
    from numba import cuda

    E = p["E"]
    src, dst = cuda.device_array(E, np.int32), cuda.device_array(E, np.int32)
    be = feistel_bits(E)
    _launch("gen_shallow", E, *(np.int32(x) for x in (E, p["L"], p["C"], p["M0"], p["M"], p["DEGREE"], p["PATH"])),
            u32(be // 2), u32((1 << (be // 2)) - 1), *(u32(k) for k in p["KE"]), u32(p["KR"]),
            u32(p["KP"]), u32(p["KQ"]), src, dst)
    return src, dst
