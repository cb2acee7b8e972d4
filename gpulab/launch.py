"""Grid and block arithmetic shared by every chapter."""

from __future__ import annotations


def ceil_div(a: int, b: int) -> int:
    """Smallest integer >= a / b for positive b: the number of blocks that cover ``a`` items."""
    return -(-a // b)


def grid_1d(n: int, block: int) -> tuple[int]:
    """One-dimensional grid of ``block``-thread blocks covering ``n`` items (at least one block)."""
    return (max(1, ceil_div(n, block)),)


def grid_2d(rows: int, cols: int, block: tuple[int, int]) -> tuple[int, int]:
    """Grid ``(x, y)`` for a 2-D launch where x runs over ``cols`` and y over ``rows``.

    ``block`` is ``(block_x, block_y)`` in CUDA order: x is the fastest-varying thread index.
    """
    bx, by = block
    return (max(1, ceil_div(cols, bx)), max(1, ceil_div(rows, by)))


# --8<-- [start:check_block]
def check_block(threads: int, limit: int = 1024) -> None:
    """Raise a clear error for a block that asks for more threads than the hardware allows."""
    from gpulab.errors import LimitError

    if threads > limit:
        raise LimitError(f"a block of {threads} threads exceeds the limit of {limit} threads per block")
# --8<-- [end:check_block]
