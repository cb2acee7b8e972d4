"""Chapter 1's launch policy: how each variant launches, as data.

Each registry entry (`gpulab.matmul.variants`) carries a
[`MatmulPolicy`][gpulab.matmul.policy.MatmulPolicy]; the one dispatch path of
[`gpulab.matmul.host`][gpulab.matmul.host] reads its fields, never the variant's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

Dim = Union[int, str]  # a size: a number, or the name of the variant's parameter that holds it


@dataclass(frozen=True)
class MatmulPolicy:
    """How one variant launches (the same on both backends): the data its
    [`launcher`][gpulab.matmul.host.launcher] reads.

    Attributes:
        kernel: the kernel's name (numba and CUDA C name a step's kernel alike).
        tile: `(rows, cols)` of C one block computes (numbers or parameter names).
        per_thread: `(rows, cols)` of C one thread computes: the block is
            `tile / per_thread` threads, x over columns (or rows, with `rows_on_x`).
        threads: a one-dimensional block of this many threads instead (the kernel lays its
            threads over the tile itself, as the warp-tiled one does).
        rows_on_x: x, the fastest thread index and the grid's first dimension, runs over rows
            of C (the naive mapping and the broadcasting constant-memory one).
        constant_b: B is read from constant memory (at most 64 KiB); the kernel takes no B.
        min_cc: the oldest compute capability the kernel compiles for, e.g. `(8, 0)` for
            `cp.async`; on an older GPU the launch is refused with `BackendUnavailable`.
        stream_k: the tiles of the last, part-empty wave are shared along k by every block slot
            of the GPU (stream-K): warptile's grid of whole-tile blocks, then the stream-K
            blocks in the grid rows that follow, as
            [`stream_k_schedule`][gpulab.matmul.host.stream_k_schedule] plans it from the
            parameters `SK_PER_SM` (blocks resident per SM) and `SK_MIN` (the fewest k-tiles a
            stream-K block takes).
    """

    kernel: str
    tile: tuple[Dim, Dim] = (16, 16)
    per_thread: tuple[Dim, Dim] = (1, 1)
    threads: Dim | None = None
    rows_on_x: bool = False
    constant_b: bool = False
    min_cc: tuple[int, int] | None = None
    stream_k: bool = False
