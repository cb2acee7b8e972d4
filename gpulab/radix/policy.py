"""Chapter 4's launch policies: what each radix-sort variant runs, as data.

A registry entry (`gpulab.radix.variants`) pairs a name with a
[`RadixPolicy`][gpulab.radix.policy.RadixPolicy] (CUB's *policy*): the algorithm family whose
kernel sequence [`SortPlan`][gpulab.radix.host.SortPlan] launches, the kernels it compiles,
the inputs of the bytes-moved model (`gpulab.radix.bench.bytes_per_key`) and
its limits. The host code, the benchmark and the compile checks read these fields and never a
variant's name, so a new variant of an existing family is one registry entry.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Family(enum.Enum):
    """The algorithm of a sort: the sequence of kernels one digit pass launches."""

    GLOBAL_SPLIT = "global split"  # split_flags, a multi-block scan of the flags, split_scatter
    TILE_SPLIT = "tile split"  # tile_sort (BITS one-bit splits in shared memory), scan of the counts, tile_scatter
    REDUCE_THEN_SCAN = "reduce-then-scan"  # upsweep (counts), scan of the counts, downsweep (ranked in registers)
    ONE_SWEEP = "one-sweep"  # every pass's histogram up front, then one kernel per pass with decoupled look-back
    HOST = "host"  # numpy on the CPU: no kernels


@dataclass(frozen=True)
class RadixPolicy:
    """The launch policy of one radix-sort variant.

    Attributes:
        family: the kernel sequence of a pass (see [`Family`][gpulab.radix.policy.Family]).
        kernels: the kernels of a pass built with the variant's tile parameters (beyond the
            scans and the max reduction every sort shares): the PTX check compiles each of them.
        digit_bits: a digit width fixed by the algorithm (the global split: 1 bit); `None`:
            the `BITS` parameter.
        tile: the parameters whose product is the keys one block holds (`("BLOCK",)`, or
            `("BLOCK", "ITEMS")` for keys held in registers); empty where no tile exists.
        needs_warp_intrinsics: ranks keys with shfl/ballot/match (on the simulator through
            `gpulab.simwarp`).
        histograms_first: counts every pass's digits in one read of the keys before the
            passes, and decides from them which passes run (one-sweep); else the largest key
            decides (the early exit).
        max_keys: the most keys one plan sorts (`None`: the int32 index limit of every sort),
            and `max_keys_why`, the reason the error message gives.
        pass_bytes, value_words, count_bytes: the bytes-moved model of one pass, per key:
            `pass_bytes + 4·value_words` (key-value sorts) `+ count_bytes · 2**BITS / tile`.
    """

    family: Family
    kernels: tuple[str, ...] = ()
    digit_bits: int | None = None
    tile: tuple[str, ...] = ()
    needs_warp_intrinsics: bool = False
    histograms_first: bool = False
    max_keys: int | None = None
    max_keys_why: str = ""
    pass_bytes: float = 0.0
    value_words: int = 0
    count_bytes: float = 0.0

    def bits(self, params: dict) -> int:
        """The digit width a sort with these compile-time parameters uses."""
        return self.digit_bits if self.digit_bits is not None else params["BITS"]

    def tile_keys(self, params: dict) -> int:
        """Keys one block holds (1 where there is no tile)."""
        t = 1
        for k in self.tile:
            t *= params[k]
        return t


# The four families of the ladder, and the CPU baseline. The bytes-moved model's sums are
# derived in gpulab.radix.bench.bytes_per_key.
GLOBAL_SPLIT = RadixPolicy(Family.GLOBAL_SPLIT, digit_bits=1, pass_bytes=40.0, value_words=2)
TILE_SPLIT = RadixPolicy(Family.TILE_SPLIT, kernels=("tile_sort", "tile_scatter"), tile=("BLOCK",),
                         pass_bytes=16.0, value_words=4, count_bytes=32.0)
REDUCE_THEN_SCAN = RadixPolicy(Family.REDUCE_THEN_SCAN, kernels=("upsweep", "downsweep"),
                               tile=("BLOCK", "ITEMS"), needs_warp_intrinsics=True,
                               pass_bytes=12.0, value_words=2, count_bytes=24.0)
# (an argsort's passes over the input run the builds onesweep_iota / onesweep_first_iota, key-value
# tiles only: variants.ptx_targets compiles them beside these)
ONE_SWEEP = RadixPolicy(Family.ONE_SWEEP, kernels=("onesweep_hist", "onesweep_scan", "onesweep_first", "onesweep"),
                        tile=("BLOCK", "ITEMS"), needs_warp_intrinsics=True, histograms_first=True,
                        max_keys=2**30,
                        max_keys_why="its look-back packs counts in 30 bits, and a tile reads only earlier "
                                     "tiles' counts, fewer than the keys",
                        pass_bytes=8.0, value_words=2, count_bytes=20.0)
HOST = RadixPolicy(Family.HOST)
