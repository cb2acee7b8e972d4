r"""Typed GP operators on flat byte code (numba): ramped half-and-half initialization,
tournament selection, subtree crossover and subtree mutation.

Everything works on the population's arrays (``code``, ``offsets``), never on Python objects
per node. In RPN a subtree is a contiguous span that **ends** at its root: with ``size[p]``, the
number of nodes of the subtree rooted at position ``p`` (one backward-free pass with a stack),
the subtree of ``p`` is ``code[p - size[p] + 1 : p + 1]``. Crossover splices such a span from
one parent into the other; mutation splices in a freshly grown one. Types are kept by choosing
the second point among nodes of the first point's type (boolean or float), and limits by
checking the child's depth and length before accepting it.

One generation is one call into compiled code; numba's random generator is seeded from the
host's seeded generator at each call, so a run is reproducible from its seed.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# opcode layout (see gpulab.gp.opcodes): 0..16 float terminals, 17..30 boolean terminals,
# 31 AND, 32 OR, 33 NOT, 34 <, 35 >
_NF, _NB = 17, 14


@njit(cache=True)
def _choose(depth, full, p_leaf):
    """The node at a boolean position with ``depth`` levels left: 0 AND, 1 OR, 2 NOT,
    3 <, 4 >, 5 a boolean terminal."""
    if depth <= 1:
        return 5
    if depth == 2:  # a comparison (two float leaves) fits exactly; so does NOT of a terminal
        return np.random.randint(5) if full else np.random.randint(6)
    if not full and np.random.random() < p_leaf:
        return 5
    if full:  # a full tree's comparisons sit at the bottom
        return np.random.randint(3)
    return np.random.randint(5)


@njit(cache=True)
def _grow(out, n, is_float, depth, full, p_leaf):
    """Append a random subtree of the given type and at most ``depth`` levels to ``out[n:]``
    (in RPN: children first), with an explicit stack of pending functions."""
    if is_float:
        out[n] = np.random.randint(_NF)
        return n + 1
    ops = np.empty(depth + 1, np.int32)  # pending function of each open level
    left = np.empty(depth + 1, np.int32)  # children it still needs
    sp = 0
    d = depth  # levels left for the node about to be chosen
    while True:
        c = _choose(d, full, p_leaf)
        if c == 5:
            out[n] = _NF + np.random.randint(_NB)
            n += 1
        elif c >= 3:
            out[n] = np.random.randint(_NF)
            out[n + 1] = np.random.randint(_NF)
            out[n + 2] = 34 + (c - 3)
            n += 3
        else:  # open a function: choose its first child next
            ops[sp] = 31 + c
            left[sp] = 1 if c == 2 else 2
            sp += 1
            d -= 1
            continue
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


# --8<-- [start:init]
@njit(cache=True)
def ramped_half_and_half(P, min_depth, max_depth, max_nodes, p_leaf, seed):
    """``P`` individuals, two trees each: depths ramped over [min_depth, max_depth], half grown
    and half full. Trees longer than ``max_nodes`` are redrawn."""
    np.random.seed(seed)
    cap = 2 * P * max_nodes
    code = np.empty(cap, np.uint8)
    offsets = np.zeros(2 * P + 1, np.int32)
    buf = np.empty(4 * max_nodes + 8 * (1 << max_depth), np.uint8)
    n = 0
    for t in range(2 * P):
        depth = min_depth + (t // 2) % (max_depth - min_depth + 1)
        full = (t // 2) % 2 == 1
        while True:
            m = _grow(buf, 0, False, depth, full, p_leaf)
            if m <= max_nodes:
                break
        code[n:n + m] = buf[:m]
        n += m
        offsets[t + 1] = n
    return code[:n].copy(), offsets
# --8<-- [end:init]


# --8<-- [start:spans]
@njit(cache=True)
def node_info(code, offsets):
    """Per node: subtree size, subtree height, depth from its tree's root (root = 1), type
    (1 float, 0 boolean). One pass per tree with a stack of (size, height)."""
    N = code.size
    size = np.empty(N, np.int32)
    height = np.empty(N, np.int32)
    depth = np.empty(N, np.int32)
    isf = np.empty(N, np.uint8)
    st = np.empty(N + 1, np.int32)  # stack of node positions
    for t in range(offsets.size - 1):
        a, b = offsets[t], offsets[t + 1]
        sp = 0
        for p in range(a, b):
            op = code[p]
            isf[p] = op < _NF
            if op < 31:
                size[p] = 1
                height[p] = 1
            elif op == 33:
                c = st[sp - 1]
                size[p] = size[c] + 1
                height[p] = height[c] + 1
                sp -= 1
            else:
                r, l = st[sp - 1], st[sp - 2]
                size[p] = size[l] + size[r] + 1
                height[p] = max(height[l], height[r]) + 1
                sp -= 2
            st[sp] = p
            sp += 1
        # depths: walk from the root (last position) down, children before the parent in RPN
        if b > a:
            depth[b - 1] = 1
            for p in range(b - 1, a - 1, -1):
                op = code[p]
                if op == 33:
                    depth[p - 1] = depth[p] + 1
                elif op >= 31:
                    r = p - 1
                    l = r - size[r]
                    depth[r] = depth[p] + 1
                    depth[l] = depth[p] + 1
    return size, height, depth, isf
# --8<-- [end:spans]


@njit(cache=True)
def _tournament(fitness, k):
    best = np.random.randint(fitness.size)
    for _ in range(k - 1):
        c = np.random.randint(fitness.size)
        if fitness[c] > fitness[best]:
            best = c
    return best


@njit(cache=True)
def _pick(a, b, isf, want, p_func, code):
    """A random node of tree span [a, b) (of type ``want`` if want >= 0); functions are
    preferred with probability p_func (Koza's 90% internal-point bias). -1 if none."""
    count = 0
    for p in range(a, b):
        if want < 0 or isf[p] == want:
            count += 1
    if count == 0:
        return -1
    funcs = 0
    for p in range(a, b):
        if (want < 0 or isf[p] == want) and code[p] >= 31:
            funcs += 1
    only_funcs = funcs > 0 and np.random.random() < p_func
    k = np.random.randint(funcs if only_funcs else count)
    for p in range(a, b):
        if (want < 0 or isf[p] == want) and (not only_funcs or code[p] >= 31):
            if k == 0:
                return p
            k -= 1
    return -1


# --8<-- [start:breed]
@njit(cache=True)
def breed(code, offsets, fitness, elite, tournament, p_cross, p_mut, max_depth, max_nodes, mut_depth,
          p_leaf, p_func, seed):
    """One generation: the ``elite`` best copied, then children by crossover (probability
    ``p_cross``), subtree mutation (``p_mut``) or reproduction, parents by tournament.
    Children deeper than ``max_depth`` or longer than ``max_nodes`` are replaced by a copy of
    the first parent. Returns the new ``(code, offsets)``."""
    np.random.seed(seed)
    P = (offsets.size - 1) // 2
    size, height, depth, isf = node_info(code, offsets)
    out = np.empty(2 * P * max_nodes, np.uint8)
    off = np.zeros(2 * P + 1, np.int32)
    grown = np.empty(4 * max_nodes + 8 * (1 << mut_depth), np.uint8)
    order = np.argsort(-fitness, kind="mergesort")  # stable: ties keep the lower index first
    n = 0
    for c in range(P):
        if c < elite:
            a = order[c]
            kind = 0
        else:
            a = _tournament(fitness, tournament)
            r = np.random.random()
            kind = 1 if r < p_cross else (2 if r < p_cross + p_mut else 0)
        b = _tournament(fitness, tournament) if kind == 1 else a
        changed = np.random.randint(2)  # the tree that crossover / mutation changes
        for t in range(2):
            s0, s1 = offsets[2 * a + t], offsets[2 * a + t + 1]
            done = False
            if kind != 0 and t == changed:
                p = _pick(s0, s1, isf, -1, p_func, code)
                lo = p - size[p] + 1
                if kind == 1:
                    b0, b1 = offsets[2 * b + t], offsets[2 * b + t + 1]
                    q = _pick(b0, b1, isf, isf[p], p_func, code)
                    if q >= 0:
                        qlo = q - size[q] + 1
                        new_len = (s1 - s0) - size[p] + size[q]
                        new_depth = depth[p] - 1 + height[q]
                        if new_len <= max_nodes and new_depth <= max_depth and height[s1 - 1] <= max_depth:
                            m = p - lo + 1
                            out[n:n + (lo - s0)] = code[s0:lo]
                            n += lo - s0
                            out[n:n + size[q]] = code[qlo:q + 1]
                            n += size[q]
                            out[n:n + (s1 - p - 1)] = code[p + 1:s1]
                            n += s1 - p - 1
                            done = True
                else:
                    room = min(mut_depth, max_depth - depth[p] + 1)
                    if isf[p]:
                        room = 1
                    if room >= 1:
                        g = _grow(grown, 0, isf[p] == 1, room, False, p_leaf)
                        new_len = (s1 - s0) - size[p] + g
                        if new_len <= max_nodes:
                            out[n:n + (lo - s0)] = code[s0:lo]
                            n += lo - s0
                            out[n:n + g] = grown[:g]
                            n += g
                            out[n:n + (s1 - p - 1)] = code[p + 1:s1]
                            n += s1 - p - 1
                            done = True
            if not done:
                out[n:n + (s1 - s0)] = code[s0:s1]
                n += s1 - s0
            off[2 * c + t + 1] = n
    return out[:n].copy(), off
# --8<-- [end:breed]
