"""Exercise subset.1 — revolving-door enumeration. See exercises/subset/README.md."""

from gpulab.errors import LimitError  # noqa: F401


def revolving_door(n, k):
    """Yield every k-subset of range(n) once, as sorted tuples, consecutive ones differing by one swap."""
    raise NotImplementedError("exercise subset.1: write the revolving-door generator")
