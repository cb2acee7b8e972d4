"""Exercise subset.1 — revolving-door enumeration (solution)."""

from gpulab.errors import LimitError


def _rd(n, k):
    # R(n, k) = R(n-1, k) followed by reversed R(n-1, k-1) with n-1 appended.
    if k == 0:
        return [()]
    if k == n:
        return [tuple(range(n))]
    return _rd(n - 1, k) + [c + (n - 1,) for c in reversed(_rd(n - 1, k - 1))]


def revolving_door(n, k):
    """Yield every k-subset of range(n) once, as sorted tuples, consecutive ones differing by one swap."""
    if not 0 <= k <= n:
        raise LimitError(f"k = {k} is outside 0 <= k <= n = {n}")
    yield from _rd(n, k)
