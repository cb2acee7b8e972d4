"""Exercise subset.1 — revolving-door enumeration.

Write `revolving_door(n, k)`, a generator of all k-subsets of {0..n-1} (as sorted tuples) in
an order where each subset differs from the previous one by exactly one element out and one
element in (the revolving-door Gray code, e.g. Knuth's Algorithm R, or the recursive
definition R(n, k) = R(n-1, k), then reversed R(n-1, k-1) with n-1 added). An incremental
search walking this order updates its sum with k-1 subtractions and k-1 additions per step,
however far the changed element is from the end. Raise `LimitError` unless 0 <= k <= n.
"""

from gpulab.errors import LimitError  # noqa: F401


def revolving_door(n, k):
    """Yield every k-subset of range(n) once, as sorted tuples, consecutive ones differing by one swap."""
    raise NotImplementedError("exercise subset.1: write the revolving-door generator")
