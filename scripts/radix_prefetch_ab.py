"""onesweep key-value sorts in CUDA C with and without prefetching each tile's values
(`PREFETCH_VALUES` = 0 none, 1 into L2, 2 into L1, as the tile starts), CUB's SortPairs
in the same process; rounds in rotated order, CUDA events, median of 10 after 2 warm-ups.
Every build's result is checked (sorted keys, values a stable argsort) before it is timed.
A thin wrapper of `scripts/radix_pairs_ab.py` with one parameter set per build.

    python scripts/radix_prefetch_ab.py [--log2 28] [--rounds 3] [--builds 0 1 2] [--json FILE]
"""

from __future__ import annotations

import argparse
import sys

import radix_pairs_ab  # (beside this script)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log2", type=int, default=28)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--builds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    return radix_pairs_ab.main(["--log2", str(a.log2), "--rounds", str(a.rounds),
                                "--sets", *(f"PREFETCH_VALUES={b}" for b in a.builds),
                                *(["--json", a.json] if a.json else [])])


if __name__ == "__main__":
    sys.exit(main())
