"""Exercise euler.3 — a balanced orientation of an undirected Eulerian graph.

Orient every edge of a connected undirected graph whose degrees are all even so that every
vertex gets in-degree = out-degree — the chapter's first step for undirected graphs. Half-edge
`2e` is edge e at its `src` end, `2e + 1` at its `dst` end; dart `d` walks edge `d >> 1`
leaving through half-edge `d`. `order` (given) lists the half-edges sorted by vertex, stably.

1. Write the kernel `dart_succ(order, m, succ)`: pair `order[2j]` with `order[2j + 1]`; arriving
   through half-edge `h` you leave through its partner, so `succ[h0 ^ 1] = h1` and
   `succ[h1 ^ 1] = h0`.
2. Label the cycles of `succ` (given: `gpulab.euler.reference.cycle_labels`, the smallest dart
   id of each cycle; or your list-ranking skills).
3. Write the kernel `orient(label, n, keep)`: `keep[e] = 1` where `label[2e] < label[2e + 1]`.

Why is the result balanced? (Every cycle is a closed trail, its reverse is another cycle, and
you keep exactly one of each pair.) `orientation(src, dst)` returns `keep` as a bool array.
"""

import numpy as np  # noqa: F401
from numba import cuda, uint32  # noqa: F401

from gpulab.euler.reference import cycle_labels  # noqa: F401


def half_edge_order(src, dst):
    """The half-edges (2e: e at src, 2e + 1: e at dst) sorted by vertex, stably (given)."""
    keys = np.empty(2 * len(src), np.int64)
    keys[0::2], keys[1::2] = src, dst
    return np.argsort(keys, kind="stable").astype(np.int32)


def orientation(src, dst, keep_out=None):
    """bool array: True where edge e keeps the direction src -> dst. ``keep_out`` (an int32
    device array of len(src)) receives the kernel's output if given."""
    raise NotImplementedError("exercise euler.3: write the dart_succ and orient kernels")
