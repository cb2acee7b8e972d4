r"""Typed GP operators on flat byte code (numba, ``parallel=True``): ramped half-and-half
initialization, tournament selection with lexicographic parsimony, subtree crossover and
subtree mutation.

Everything works on the population's arrays (``code``, ``offsets``), never on Python objects
per node. In RPN a subtree is a contiguous span that **ends** at its root: with ``size[p]``, the
number of nodes of the subtree rooted at position ``p`` (one forward pass with a stack), the
subtree of ``p`` is ``code[p - size[p] + 1 : p + 1]``. Crossover splices such a span from one
parent into the other; mutation splices in a freshly grown one. Types are kept by choosing the
second point among nodes of the first point's type (boolean or float), and limits by checking
the child's depth and length before accepting it (a child over a limit is a copy of its first
parent, as in Koza's GP).

**Parallel and reproducible.** A generation is two parallel passes over the children: the
first decides everything about child ``c`` (parents, operator, crossover points, the grown
subtree's length) and so every child's length; a prefix sum places the children; the second
writes them. Each child draws its random numbers from its own counter-based stream, a
SplitMix64 sequence started from a hash of ``(seed, c)``: the result does not depend on how
many threads run or in which order, so a run is reproducible from its seed on any machine.
The two passes' work per child is in `_plan_child` and `_write_child`, which the GPU breeding
([`gpulab.gp.breeding_gpu`][gpulab.gp.breeding_gpu]) compiles as CUDA device functions and runs
one thread per child: the same children, bit for bit, on the CPU and the GPU.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from gpulab.gp import opcodes as oc

# opcode layout (gpulab.gp.opcodes): 0..16 float terminals, 17..30 boolean terminals,
# 31 AND, 32 OR, 33 NOT, 34 <, 35 > (module globals: numba compiles them as constants)
_NF, _NB = oc.NF, oc.NB
_FIRST_FUNCTION, _NOT = oc.OP_AND, oc.OP_NOT
CHUNK = 256  # children (or trees) per parallel task: each task owns its scratch buffers


# --8<-- [start:rng]
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


@njit(inline="always")
def _mix(z):
    """SplitMix64's finalizer: a bijection of uint64 that scrambles every bit."""
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@njit(inline="always")
def _seed_stream(rng, seed, k):
    """Start stream ``k`` of ``seed`` in ``rng[0]`` (a one-element uint64 array)."""
    rng[0] = _mix(np.uint64(seed) * _GOLDEN + _mix(np.uint64(k) + _GOLDEN))


@njit(inline="always")
def _next(rng):
    rng[0] += _GOLDEN
    return _mix(rng[0])


@njit(inline="always")
def _below(rng, n):
    """A uniform integer in [0, n) (n < 2**32), by a multiply-shift of the top 32 bits."""
    return np.int64(((_next(rng) >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32))


@njit(inline="always")
def _uniform(rng):
    """A uniform float in [0, 1) with 53 random bits."""
    return np.float64(_next(rng) >> np.uint64(11)) * (1.0 / 9007199254740992.0)
# --8<-- [end:rng]


@njit(inline="always")
def _choose(rng, depth, full, p_leaf):
    """The node at a boolean position with ``depth`` levels left: 0 AND, 1 OR, 2 NOT,
    3 <, 4 >, 5 a boolean terminal."""
    if depth <= 1:
        return 5
    if depth == 2:  # a comparison (two float leaves) fits exactly; so does NOT of a terminal
        return _below(rng, 5) if full else _below(rng, 6)
    if not full and _uniform(rng) < p_leaf:
        return 5
    if full:  # a full tree's comparisons sit at the bottom
        return _below(rng, 3)
    return _below(rng, 5)


@njit
def _grow(rng, out, n, limit, is_float, depth, full, p_leaf, ops, left):
    """Append a random subtree of the given type and at most ``depth`` levels to ``out[n:]``
    (in RPN: children first), with an explicit stack of pending functions (``ops``, ``left``:
    scratch of at least ``depth + 1``). Returns the new end, or -1 as soon as it would pass
    ``limit`` (the caller rejects or redraws)."""
    if is_float:
        if n + 1 > limit:
            return -1
        out[n] = _below(rng, _NF)
        return n + 1
    sp = 0
    d = depth  # levels left for the node about to be chosen
    while True:
        c = _choose(rng, d, full, p_leaf)
        if c < 3:  # open a function: choose its first child next
            ops[sp] = _FIRST_FUNCTION + c  # AND, OR, NOT
            left[sp] = 1 if c == 2 else 2
            sp += 1
            d -= 1
            continue
        if n + (1 if c == 5 else 3) + sp > limit:  # the leaf and the functions still open would not fit
            return -1
        if c == 5:
            out[n] = _NF + _below(rng, _NB)
            n += 1
        else:
            out[n] = _below(rng, _NF)
            out[n + 1] = _below(rng, _NF)
            out[n + 2] = 34 + (c - 3)
            n += 3
        # a subtree is complete: close every function whose children are all there
        while sp > 0:
            left[sp - 1] -= 1
            if left[sp - 1] > 0:
                break
            sp -= 1
            out[n] = ops[sp]
            n += 1
            d += 1
        if sp == 0:
            return n


@njit(parallel=True)
def _compact(slots, width, lengths):
    """Trees stored one per ``width``-byte slot → back-to-back code and offsets."""
    T = lengths.size
    offsets = np.zeros(T + 1, np.int32)
    offsets[1:] = np.cumsum(lengths)
    code = np.empty(offsets[T], np.uint8)
    for t in prange(T):
        code[offsets[t]:offsets[t + 1]] = slots[t * width:t * width + lengths[t]]
    return code, offsets


# --8<-- [start:init]
@njit(parallel=True, cache=True)
def ramped_half_and_half(P, min_depth, max_depth, max_nodes, p_leaf, seed):
    """``P`` individuals, two trees each: depths ramped over [min_depth, max_depth], at every
    depth half grown and half full (`_ramp`). Trees longer than ``max_nodes`` are redrawn.
    Tree ``t`` draws from stream ``t`` of ``seed``: the same population whatever the number
    of threads."""
    T = 2 * P
    slots = np.empty(T * max_nodes, np.uint8)
    lengths = np.empty(T, np.int32)
    for task in prange((T + CHUNK - 1) // CHUNK):
        rng = np.empty(1, np.uint64)
        ops = np.empty(max_depth + 2, np.int32)
        left = np.empty(max_depth + 2, np.int32)
        buf = np.empty(max_nodes + 8, np.uint8)
        for t in range(task * CHUNK, min(T, (task + 1) * CHUNK)):
            m = _init_tree(t, min_depth, max_depth, max_nodes, p_leaf, seed, rng, buf, ops, left)
            slots[t * max_nodes:t * max_nodes + m] = buf[:m]
            lengths[t] = m
    return _compact(slots, max_nodes, lengths)


# --8<-- [start:ramp]
@njit(inline="always")
def _ramp(t, min_depth, max_depth):
    """Tree ``t``'s place in the ramp: ``(depth, full)``. Individual ``i = t // 2``
    (both its trees alike) takes depth ``min_depth + i % D`` (``D`` depths) and is
    full in every other round of the ramp (``(i // D) % 2``): every depth gets grown
    and full trees in equal numbers, ``2·D`` consecutive individuals holding each
    (depth, method) once."""
    i = t // 2
    D = max_depth - min_depth + 1
    return min_depth + i % D, (i // D) % 2 == 1
# --8<-- [end:ramp]


@njit(inline="always")
def _init_tree(t, min_depth, max_depth, max_nodes, p_leaf, seed, rng, buf, ops, left):
    """Tree ``t`` of the initial population into ``buf[:m]``; returns ``m``. Its depth and
    method (grown or full) come from `_ramp`; a tree longer than ``max_nodes`` is redrawn from
    the same stream (stream ``t`` of ``seed``). ``buf``: ``max_nodes + 8`` bytes; ``ops``,
    ``left``: ``max_depth + 2``. (The GPU's initialization runs the same function, one thread
    per tree.)"""
    _seed_stream(rng, seed, t)
    depth, full = _ramp(t, min_depth, max_depth)
    m = -1
    while m < 0:
        m = _grow(rng, buf, 0, max_nodes, False, depth, full, p_leaf, ops, left)
    return m
# --8<-- [end:init]


# --8<-- [start:spans]
@njit(inline="always")
def _tree_info(code, a, b, size, height, depth, st):
    """Per node of the tree ``code[a:b]`` (index ``p - a``): subtree size, subtree height and
    depth from the root (root = 1). One forward pass with a stack ``st`` of positions gives
    sizes and heights (children come before their parent in RPN); one backward pass from the
    root gives depths."""
    sp = 0
    for p in range(a, b):
        op = code[p]
        k = p - a
        if op < _FIRST_FUNCTION:
            size[k] = 1
            height[k] = 1
        elif op == _NOT:
            c = st[sp - 1]
            size[k] = size[c] + 1
            height[k] = height[c] + 1
            sp -= 1
        else:
            r, l = st[sp - 1], st[sp - 2]
            size[k] = size[l] + size[r] + 1
            height[k] = max(height[l], height[r]) + 1
            sp -= 2
        st[sp] = k
        sp += 1
    if b > a:
        depth[b - 1 - a] = 1
        for k in range(b - 1 - a, -1, -1):
            op = code[a + k]
            if op == _NOT:
                depth[k - 1] = depth[k] + 1
            elif op >= _FIRST_FUNCTION:
                r = k - 1
                l = r - size[r]
                depth[r] = depth[k] + 1
                depth[l] = depth[k] + 1


@njit(parallel=True, cache=True)
def node_info(code, offsets):
    """Per node of a population: subtree size, subtree height, depth from its tree's root
    (root = 1), type (1 float, 0 boolean)."""
    N = code.size
    T = offsets.size - 1
    size = np.empty(N, np.int32)
    height = np.empty(N, np.int32)
    depth = np.empty(N, np.int32)
    isf = np.empty(N, np.uint8)
    longest = 1
    for t in range(T):
        longest = max(longest, offsets[t + 1] - offsets[t])
    for task in prange((T + CHUNK - 1) // CHUNK):
        st = np.empty(longest + 1, np.int32)
        for t in range(task * CHUNK, min(T, (task + 1) * CHUNK)):
            a, b = offsets[t], offsets[t + 1]
            _tree_info(code, a, b, size[a:b], height[a:b], depth[a:b], st)
            for p in range(a, b):
                isf[p] = code[p] < _NF
    return size, height, depth, isf
# --8<-- [end:spans]


@njit(inline="always")
def _better_values(fc, sc, fb, sb, parsimony):
    """Lexicographic parsimony (Luke & Panait 2002): an individual of fitness ``fc`` and size
    ``sc`` beats one of ``fb``, ``sb`` by higher fitness; on equal fitness, with ``parsimony``,
    by the smaller size."""
    if fc != fb:
        return fc > fb
    return parsimony and sc < sb


@njit(inline="always")
def _better(c, best, fitness, sizes, parsimony):
    """Individual ``c`` beats ``best`` (`_better_values` on their fitness and sizes)."""
    return _better_values(fitness[c], sizes[c], fitness[best], sizes[best], parsimony)


@njit(inline="always")
def _tournament(rng, fitness, sizes, k, parsimony):
    P = fitness.size
    best = _below(rng, P)
    for _ in range(k - 1):
        c = _below(rng, P)
        if _better(c, best, fitness, sizes, parsimony):
            best = c
    return best


@njit(inline="always")
def _pick(rng, code, a, b, want, p_func):
    """A random node of tree span [a, b) (of type ``want``: 1 float, 0 boolean, -1 any);
    functions are preferred with probability ``p_func`` (Koza's 90% internal-point bias).
    -1 if the tree has no node of that type.

    By rejection: draw positions until one is of the wanted kind (uniform over those nodes, in
    O(1) expected draws), and scan only when 64 draws found none. A boolean tree of more than
    one node has a function at its root, and floats are only terminals, so whether the tree has
    functions of the wanted type is known without a scan."""
    L = b - a
    only_funcs = want != 1 and L > 1 and _uniform(rng) < p_func
    for _ in range(64):
        p = a + _below(rng, L)
        op = code[p]
        if (want < 0 or (op < _NF) == (want == 1)) and (not only_funcs or op >= _FIRST_FUNCTION):
            return p
    count = 0
    for p in range(a, b):
        op = code[p]
        count += (want < 0 or (op < _NF) == (want == 1)) and (not only_funcs or op >= _FIRST_FUNCTION)
    if count == 0:
        return -1
    k = _below(rng, count)
    for p in range(a, b):
        op = code[p]
        if (want < 0 or (op < _NF) == (want == 1)) and (not only_funcs or op >= _FIRST_FUNCTION):
            if k == 0:
                return p
            k -= 1
    return -1


# --8<-- [start:walks]
@njit(inline="always")
def _push_children(op, d, st, sp):
    """One step of a backward walk: a node at depth ``d`` pushes the depths of its children
    (none for a terminal, one for NOT, two for the binary functions); returns the new top."""
    if op == _NOT:
        st[sp] = d + 1
        return sp + 1
    if op >= _FIRST_FUNCTION:
        st[sp] = d + 1
        st[sp + 1] = d + 1
        return sp + 2
    return sp


@njit(inline="always")
def _subtree(code, q, st):
    """The subtree rooted at ``q``: its first position and its height. Walks backwards from
    ``q`` (RPN read backwards visits a node, then its right subtree, then its left one) with a
    stack ``st`` of the depths of the nodes still to visit; the walk ends when none is left."""
    st[0] = 1
    sp = 1
    p = q
    h = 0
    while sp > 0:
        sp -= 1
        d = st[sp]
        h = max(h, d)
        sp = _push_children(code[p], d, st, sp)
        p -= 1
    return p + 1, h


@njit(inline="always")
def _depth_at(code, b, p, st):
    """Depth (root = 1) of position ``p`` in the tree ending at ``b``: the same backward walk,
    from the root down to ``p``."""
    st[0] = 1
    sp = 1
    pos = b - 1
    while True:
        sp -= 1
        d = st[sp]
        if pos == p:
            return d
        sp = _push_children(code[pos], d, st, sp)
        pos -= 1
# --8<-- [end:walks]


@njit(inline="always")
def _elites(fitness, sizes, elite, parsimony):
    """The ``elite`` best individuals in order (fitness, then size, then index)."""
    P = fitness.size
    e = min(elite, P)
    out = np.empty(e, np.int64)
    taken = np.zeros(P, np.uint8)
    for k in range(e):
        best = -1
        for c in range(P):
            if taken[c] == 0 and (best < 0 or _better(c, best, fitness, sizes, parsimony)):
                best = c
        out[k] = best
        taken[best] = 1
    return out


# what pass 1 decides for each child (columns of the int64 plan)
_A, _KIND, _TREE, _LO, _HI, _SLO, _SHI, _ROOM, _LEN0, _LEN1 = range(10)
NPLAN = 10


# --8<-- [start:breed]
@njit(inline="always")
def _copy(dst, d0, src, s0, n):
    """``dst[d0:d0 + n] = src[s0:s0 + n]``, as a loop (the same code compiles for the GPU)."""
    for k in range(n):
        dst[d0 + k] = src[s0 + k]


@njit(inline="always")
def _plan_child(c, code, offsets, tree_depth, fitness, sizes, elites, tournament, p_cross, p_mut, max_depth,
                max_nodes, mut_depth, p_leaf, p_func, parsimony, seed, rng, st, ops, left, grown, plan, grown_at):
    """Pass 1 for child ``c`` (see [`breed`][gpulab.gp.breeding.breed]): fills ``plan[c]`` and
    ``grown_at[c]`` from stream ``c`` of ``seed``. ``rng`` (1), ``st`` (longest tree + 2), ``ops``,
    ``left`` (mut_depth + 2) and ``grown`` (max_nodes + 8) are the caller's scratch. The CPU
    breeding and the GPU kernel ([`gpulab.gp.breeding_gpu`][gpulab.gp.breeding_gpu]) both call this."""
    _seed_stream(rng, seed, c)
    if c < elites.size:
        a, kind = elites[c], 0
    else:
        a = _tournament(rng, fitness, sizes, tournament, parsimony)
        r = _uniform(rng)
        kind = 1 if r < p_cross else (2 if r < p_cross + p_mut else 0)
    b = _tournament(rng, fitness, sizes, tournament, parsimony) if kind == 1 else a
    t = _below(rng, 2)  # the tree that crossover / mutation changes
    s0, s1 = offsets[2 * a + t], offsets[2 * a + t + 1]
    lo = hi = slo = shi = room = 0
    new_len = -1  # the changed tree's length, or -1: the child copies parent a
    if kind != 0 and tree_depth[2 * a + t] <= max_depth:
        p = _pick(rng, code, s0, s1, -1, p_func)
        lo, _ = _subtree(code, p, st)
        hi = p + 1
        rest = (s1 - s0) - (hi - lo)
        if kind == 1:
            b0, b1 = offsets[2 * b + t], offsets[2 * b + t + 1]
            q = _pick(rng, code, b0, b1, 1 if code[p] < _NF else 0, p_func)
            if q >= 0:
                qlo, qh = _subtree(code, q, st)
                # a point is at most as deep as its tree: walk to it only when that bound is not enough
                deep = tree_depth[2 * a + t] - 1 + qh > max_depth
                if rest + (q + 1 - qlo) <= max_nodes and (not deep or _depth_at(code, s1, p, st) - 1 + qh <= max_depth):
                    slo, shi = qlo, q + 1
                    new_len = rest + (shi - slo)
        else:
            room = 1 if code[p] < _NF else mut_depth
            if room > 1 and tree_depth[2 * a + t] - 1 + mut_depth > max_depth:
                room = min(mut_depth, max_depth - _depth_at(code, s1, p, st) + 1)
            if room >= 1:
                grown_at[c] = rng[0]
                g = _grow(rng, grown, 0, max_nodes - rest, code[p] < _NF, room, False, p_leaf, ops, left)
                if g >= 0:
                    new_len = rest + g
    plan[c, _A] = a
    plan[c, _KIND] = kind if new_len >= 0 else 0
    plan[c, _TREE] = t
    plan[c, _LO] = lo
    plan[c, _HI] = hi
    plan[c, _SLO] = slo
    plan[c, _SHI] = shi
    plan[c, _ROOM] = room
    for u in range(2):
        full = offsets[2 * a + u + 1] - offsets[2 * a + u]
        plan[c, _LEN0 + u] = new_len if (u == t and new_len >= 0) else full


@njit(inline="always")
def _write_child(c, code, offsets, plan, grown_at, out_off, out, src, max_nodes, p_leaf, rng, ops, left):
    """Pass 2 for child ``c``: writes its two trees at ``out_off[2c]`` and ``out_off[2c + 1]``,
    and ``src`` for them (the CPU breeding and the GPU kernel both call this)."""
    a, kind, t = plan[c, _A], plan[c, _KIND], plan[c, _TREE]
    for u in range(2):
        s0, s1 = offsets[2 * a + u], offsets[2 * a + u + 1]
        n = out_off[2 * c + u]
        if kind == 0 or u != t:
            _copy(out, n, code, s0, s1 - s0)
            src[2 * c + u] = 2 * a + u
            continue
        src[2 * c + u] = -1
        lo, hi = plan[c, _LO], plan[c, _HI]
        _copy(out, n, code, s0, lo - s0)
        n += lo - s0
        if kind == 1:
            slo, shi = plan[c, _SLO], plan[c, _SHI]
            _copy(out, n, code, slo, shi - slo)
            n += shi - slo
        else:  # regrow the same subtree from the same stream state, with the same limits
            rng[0] = grown_at[c]
            rest = (s1 - s0) - (hi - lo)
            n = _grow(rng, out, n, n + max_nodes - rest, code[hi - 1] < _NF, plan[c, _ROOM], False, p_leaf, ops, left)
        _copy(out, n, code, hi, s1 - hi)


@njit(cache=True)
def sizes_and_elites(offsets, fitness, elite, parsimony):
    """Per individual its size (both trees' nodes), the ``elite`` best in order, and the longest
    tree's length (the walks' scratch size): what both breedings compute before their passes."""
    P = (offsets.size - 1) // 2
    sizes = np.empty(P, np.int32)
    longest = 1
    for i in range(P):
        sizes[i] = offsets[2 * i + 2] - offsets[2 * i]
        longest = max(longest, offsets[2 * i + 1] - offsets[2 * i], offsets[2 * i + 2] - offsets[2 * i + 1])
    return sizes, _elites(fitness, sizes, elite, parsimony), longest


@njit(parallel=True, cache=True)
def breed(code, offsets, tree_depth, fitness, elite, tournament, p_cross, p_mut, max_depth, max_nodes, mut_depth,
          p_leaf, p_func, parsimony, seed):
    """One generation: the ``elite`` best copied, then children by crossover (probability
    ``p_cross``), subtree mutation (``p_mut``) or reproduction, parents by tournament
    (lexicographic parsimony when ``parsimony``). Children deeper than ``max_depth`` or longer
    than ``max_nodes`` are replaced by a copy of the first parent, and so is a child of a parent
    tree already deeper than ``max_depth`` (``tree_depth``: every tree's height, from the
    population's stats). Returns the new ``(code, offsets, src)``: ``src[t]`` is the parent
    tree that child tree ``t`` copies byte for byte, or -1 for a changed tree (the only ones that
    need validating again).

    Pass 1 plans child ``c`` (`_plan_child`) — parent ``a``, operator, the changed tree, the
    span ``[lo, hi)`` of ``a``'s tree it replaces and the span ``[slo, shi)`` of parent ``b``'s
    tree that goes in (or, for mutation, the stream state the new subtree is grown from) — and
    its two lengths; pass 2 (`_write_child`) writes every child at its offset. The work per
    child is a few random draws and walks over the two subtrees involved, not over whole trees.
    This is the reference that the GPU breeding
    ([`gpulab.gp.breeding_gpu`][gpulab.gp.breeding_gpu]) reproduces bit for bit: it runs the
    same two per-child functions, one thread per child."""
    P = (offsets.size - 1) // 2
    sizes, elites, longest = sizes_and_elites(offsets, fitness, elite, parsimony)
    plan = np.zeros((P, NPLAN), np.int64)
    grown_at = np.zeros(P, np.uint64)  # mutation: the stream state the subtree is grown from
    ntasks = (P + CHUNK - 1) // CHUNK
    for task in prange(ntasks):
        rng = np.empty(1, np.uint64)
        st = np.empty(longest + 2, np.int32)
        ops = np.empty(mut_depth + 2, np.int32)
        left = np.empty(mut_depth + 2, np.int32)
        grown = np.empty(max_nodes + 8, np.uint8)
        for c in range(task * CHUNK, min(P, (task + 1) * CHUNK)):
            _plan_child(c, code, offsets, tree_depth, fitness, sizes, elites, tournament, p_cross, p_mut, max_depth,
                        max_nodes, mut_depth, p_leaf, p_func, parsimony, seed, rng, st, ops, left, grown, plan,
                        grown_at)
    out_off = np.zeros(2 * P + 1, np.int32)
    out_off[1:] = np.cumsum(plan[:, _LEN0:_LEN1 + 1].ravel())
    out = np.empty(out_off[2 * P], np.uint8)
    src = np.empty(2 * P, np.int64)  # the parent tree a child's tree copies verbatim, or -1 (changed)
    for task in prange(ntasks):
        rng = np.empty(1, np.uint64)
        ops = np.empty(mut_depth + 2, np.int32)
        left = np.empty(mut_depth + 2, np.int32)
        for c in range(task * CHUNK, min(P, (task + 1) * CHUNK)):
            _write_child(c, code, offsets, plan, grown_at, out_off, out, src, max_nodes, p_leaf, rng, ops, left)
    return out, out_off, src
# --8<-- [end:breed]
