"""Chapter 2's launch policy: how each variant launches, as data.

Each registry entry (`gpulab.subset.variants`) carries a
[`SubsetPolicy`][gpulab.subset.policy.SubsetPolicy]; the one dispatch path of
[`gpulab.subset.host`][gpulab.subset.host] reads its fields, never the variant's name.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SubsetPolicy:
    """How one variant launches (the same on both backends): the data its
    [`launcher`][gpulab.subset.host.launcher] reads.

    Attributes:
        kernel: the search kernel's name (numba and CUDA C alike); `None` for a CPU variant.
        chunked: the incremental scan — chunks of consecutive ranks, the whole search in one
            launch, then `final` reduces the blocks' answers; its kernels are compiled for k
            (`SUBSET_K`). Otherwise the seed's host loop: one launch per partition of ranks.
        per_subset: one distance per subset comes back and the argmin runs on the host
            (`global`); otherwise one (value, rank) per block.
        q_in: where the kernel reads Q: `"global"`, `"shared"` (copied there by every block:
            the layout grows with n, so the device's shared memory caps n) or `"constant"`
            (64 KiB: at most n = 128).
        thread_bytes: dynamic shared memory per thread, `(a, b)`: a + b·k bytes (the block
            argmin's value and rank; the selections of the `shared` kernel).
        signature: numba's launch signature (a `SIG_*` name of `kernels_numba`), compiled
            first to opt the kernel into more than 48 KiB of dynamic shared memory.
        final: the kernel that reduces the blocks' answers (`chunked`).
        per_warp: a chunked kernel whose chunks of ranks go to whole warps (the lanes share a
            prefix and split its last indices), not to threads: the plan sizes its chunks and
            grid in warps.
        compares_sums: the argmin compares squared sums (the incremental scans and the CPU
            baseline), not distances: sqrt maps neighbouring doubles to one, so on ties the two
            orders differ, and a merge of partial searches must compare what the variant compares.
    """

    kernel: str | None = None
    chunked: bool = False
    per_subset: bool = False
    q_in: str = "global"
    thread_bytes: tuple[int, int] = (16, 0)
    signature: str = ""
    final: str = "final_argmin"
    compares_sums: bool = False
    per_warp: bool = False
