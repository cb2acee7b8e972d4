"""Chapter 4's two tables of session 35 (issue 30: the public call's host work, timed where it
runs), from the raw files in docs/benchmarks/gpu-runs/2026-11-30-session35/:

    python scripts/radix_session35_tables.py --pieces docs/benchmarks/ab-runs/radix-inplace-pieces-h200.json \
        --ab docs/benchmarks/ab-runs/radix-public-inplace-h200.json

`--pieces`: `call<k>/inplace.txt` of calls 1 and 4 (`scripts/radix_public_inplace.py`): each piece
of the call by addresses, and what replaced it, timed right after a synchronised sort of 2^20
keys (median of 300). Call 1 ran the tree before the session's changes (c53d374), call 4 the
final one; the pieces themselves are the same code in both but for the package's
`current_context`.

`--ab`: `call5/pab-<tree>-<seconds>.txt` (`scripts/radix_public_pieces.py` in four turns
new/old/old/new on one H200, each a process of its own): per turn and backend the host time of
the whole public call (how fast the host ran that turn), from its entry to the plan's `sort`,
and the public call over the plan's (CUDA events, median of 200, two rounds a turn) at 2^20
keys and for `distinct` 2M.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from gpulab.benchmark import write_record

RUNS = Path(__file__).resolve().parents[1] / "docs/benchmarks/gpu-runs/2026-11-30-session35"
PIECE = re.compile(r"^(\S+)\s+in place\s+(.+?)\s+([\d.]+) us$")
PIECES = [  # (label in the table, name in inplace.txt)
    ("`flags.c_contiguous` (CuPy's flags object)", "keys.flags.c_contiguous"),
    ("`_c_contiguous` (CuPy's own attribute)", "keys._c_contiguous"),
    ("`current_context` (call 1: before this session, call 4: one thread attribute)", "current_context (package)"),
    ("`cuCtxGetCurrent` alone (ctypes)", "cuCtxGetCurrent, CDLL"),
    ("`_launch` + `_plan` (the variant resolved, the key made)", None),
    ("the last plan by the call's arguments (prototype of `PlanCache.last`)", "fused plan look-up"),
    ("`cupy.ndarray(n)`: the result", "cupy.ndarray(n)"),
    ("`result[:count]`: `distinct`'s result before", "result[:count]"),
    ("`cupy.ndarray(count, memptr)`: `distinct`'s result now", "cupy.ndarray(count, memptr)"),
    ("entry to the plan's `sort`: the public call", "entry->plan.sort, public"),
    ("entry to the plan's `sort`: every check in one function (prototype)", "entry->plan.sort, fused"),
]
PRE = re.compile(r"^(\S+)\s+public call host: entry->plan.sort\s+([\d.]+) us.*whole call\s+([\d.]+) us")
EV = re.compile(r"^(\S+)\s+events turn \d: plan\s+[\d.]+ us, public\s+[\d.]+ us, ratio ([\d.]+)")
DEV = re.compile(r"^(\S+)\s+distinct events turn \d: plan\s+[\d.]+ us, public\s+[\d.]+ us, ratio ([\d.]+)")


def pieces(call: str) -> dict:
    """{(backend, name): [µs, ...]} of one call's inplace.txt (entry->plan.sort twice each)."""
    got: dict = {}
    for line in (RUNS / call / "inplace.txt").read_text().splitlines():
        m = PIECE.match(line)
        if m:
            got.setdefault((m.group(1), m.group(2).strip().rstrip(",")), []).append(float(m.group(3)))
    return got


def piece_rows() -> list[dict]:
    calls = {c: pieces(c) for c in ("call1", "call4")}
    rows = []
    for label, name in PIECES:
        row = {"piece": label}
        for c, got in calls.items():
            for backend, col in (("cuda-c", "CUDA C"), ("numba", "numba")):
                if name is None:
                    vals = [got[backend, "_launch"][0] + got[backend, "_plan"][0]]
                else:
                    vals = got[backend, name]
                row[f"{col}, {c.replace('call', 'call ')} (µs)"] = " · ".join(f"{v:.2f}" for v in vals)
        rows.append(row)
    return rows


def ab_rows() -> list[dict]:
    rows = []
    files = sorted(RUNS.glob("call5/pab-*.txt"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
    for k, f in enumerate(files):
        tree = f.stem.split("-")[1]
        got: dict = {}
        for line in f.read_text().splitlines():
            for rx, what in ((PRE, "pre"), (EV, "ratio"), (DEV, "distinct")):
                m = rx.match(line)
                if m:
                    got.setdefault((m.group(1), what), []).append(m.groups()[1:])
        for backend in ("cuda-c", "numba"):
            (pre, whole), = got[backend, "pre"]
            rows.append({"turn": f"{k + 1}: {tree}", "backend": backend, "host µs, whole call": f"{float(whole):.0f}",
                         "µs before the plan": f"{float(pre):.1f}",
                         "public ÷ plan, 2^20": " · ".join(f"{float(r[0]):.3f}" for r in got[backend, "ratio"]),
                         "public ÷ plan, distinct 2M":
                             " · ".join(f"{float(r[0]):.3f}" for r in got[backend, "distinct"])})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pieces", required=True)
    ap.add_argument("--ab", required=True)
    a = ap.parse_args()
    bench = json.loads((RUNS / "call5/radix-h200.json").read_text())
    common = dict(device="NVIDIA H200", versions=bench["versions"], source=str(RUNS.relative_to(RUNS.parents[2])))
    write_record(a.pieces, "gpulab-radix-inplace-pieces-table/1", piece_rows(),
                 dates=["2026-11-30 (session 35, calls 1 and 4)"], **common,
                 what="each piece of the public call by addresses, and what replaced it, timed after a "
                      "synchronised sort of 2^20 keys as the benchmark times a call (median of 300; "
                      "scripts/radix_public_inplace.py); call 1 on the tree before (c53d374), call 4 on the "
                      "final one, two H200 machines; the entry rows ran twice each")
    write_record(a.ab, "gpulab-radix-public-inplace-table/1", ab_rows(),
                 dates=["2026-11-30 (session 35, call 5)"], **common,
                 what="the final tree (new) against c53d374 (old), four turns new/old/old/new on one H200 "
                      "(call 5), each a process of its own (scripts/radix_public_pieces.py): host time of "
                      "the whole public call and from its entry to the plan's sort (medians of 300, "
                      "synchronised between calls), the public call over the plan's (CUDA events, median "
                      "of 200, two rounds a turn)")


if __name__ == "__main__":
    main()
