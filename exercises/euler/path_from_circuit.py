"""Exercise euler.1 — an Euler path from a circuit with one added edge.

A directed graph has an Euler path, but no circuit, when exactly one vertex `s` has
out-degree = in-degree + 1 and one vertex `t` has in-degree = out-degree + 1. Add the edge
`t → s` (id `n`, after the n real edges), find an Euler circuit of the n + 1 edges with
`gpulab.euler.euler_circuit`, and cut it at the extra edge.
Write `unbalanced(src, dst)` (numpy: return `(s, t)`, or raise `gpulab.euler.NotEulerian`
naming the problem when the graph has no Euler path or has a circuit) and `euler_path(src, dst)`,
whose last step is a **kernel** `rotate(circ, n, k, out)`: `out[i] = circ[(k + 1 + i) % (n + 1)]`
for `i < n`, where `k` is the position of the extra edge in the circuit (find it on the device
or on the host). The result starts at `s` and ends at `t`.
"""

import numpy as np  # noqa: F401
from numba import cuda, uint32  # noqa: F401

import gpulab.euler as eu  # noqa: F401


def unbalanced(src, dst):
    """``(s, t)``: the vertex with out = in + 1 and the one with in = out + 1; ``NotEulerian`` otherwise."""
    raise NotImplementedError("exercise euler.1: count degrees and find s and t")


def euler_path(src, dst):
    """Edge ids of an Euler path from s to t (numpy int32), via a circuit and the ``rotate`` kernel."""
    raise NotImplementedError("exercise euler.1: add the edge t -> s, find a circuit, rotate it with a kernel")
