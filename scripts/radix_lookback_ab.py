"""Experiment (issue 30): onesweep's look-back loading LOOKBACK status words at once (CUDA C), against
the one-word look-back, with CUB's sort alone in the same run. Needs a GPU:

    python3 scripts/radix_lookback_ab.py --lookback 1 2 4 8 --rounds 5 --json FILE

Cases: 2^24 and 2^28 uniformly random uint32 keys, keys-only, and 2^28 keys with uint32 values
(as the benchmark gives CUB's SortPairs). Each build's result is checked against numpy's sort
(values: a stable argsort) before it is timed. Every round times every build and CUB once each
(CUDA events, median of --repeat after a warm-up), in an order rotated each round; the table has
the median of the round medians, and its ratio to CUB's. The runs are those of
`scripts/radix_params_ab.py`, with one parameter set per LOOKBACK.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import radix_params_ab  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lookback", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    args = ["--backend", "cuda-c", "--cases", "2^24", "2^28", "pairs 2^28", "--rounds", str(a.rounds),
            "--repeat", str(a.repeat), "--sets", *[f"LOOKBACK={lb}" for lb in a.lookback]]
    return radix_params_ab.main(args + (["--json", a.json] if a.json else []))


if __name__ == "__main__":
    raise SystemExit(main())
