"""Book tables from session 27's matmul runs on the H200 (issue 31), from the raw files in
docs/benchmarks/gpu-runs/2026-11-29-session27/:

    python scripts/matmul_ab_tables.py call   --json docs/benchmarks/ab-runs/matmul-call-ab-2-h200.json
    python scripts/matmul_ab_tables.py steps  --json docs/benchmarks/ab-runs/matmul-host-steps-h200.json
    python scripts/matmul_ab_tables.py skorder --json docs/benchmarks/ab-runs/matmul-stream-k-order-h200.json

`call`: `scripts/matmul_call_ab.py` in the trees before (HEAD of session 26) and after, in turns
old/new/new/old (call 5): per product and kernel, the public call's ms in each turn, the kernel
alone and cuBLAS with a new C (`cA @ cB`), over the turns.
`steps`: `scripts/matmul_host_breakdown.py` (call 6, the final tree; call 5 on another H200
before the launch's key named the context by one driver call): each step's host µs.
`skorder`: `scripts/matmul_waves_probe.py` (calls 1, 2, 7): stream-K schedules tried against
today's `streamk`, each turn's TFLOP/s and the ratio to `streamk` in the same turn. Call 2's
`skfirst_w1` and `sklast_w1` (one more full wave split along k) are left out: that build
wrote past its arrival counters (a GPU test found it), so its times are not evidence.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gpulab.benchmark import write_record

RUNS = Path(__file__).resolve().parents[1] / "docs/benchmarks/gpu-runs/2026-11-29-session27"


def _load(name: str) -> dict:
    return json.loads((RUNS / name).read_text())


def _span(xs, fmt="{:.3f}") -> str:
    lo, hi = min(xs), max(xs)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}–{fmt.format(hi)}"


def call_rows() -> list[dict]:
    turns = sorted(RUNS.glob("call5-mab-*.json"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
    by = {}
    for p in turns:
        tree = p.stem.split("-")[2]  # call5-mab-<tree>-<seconds>
        for r in json.loads(p.read_text())["rows"]:
            by.setdefault((r["size"], r["variant"], r["backend"]), []).append((tree, r))
    rows = []
    for (size, variant, backend), got in by.items():
        before = [r["public ms"] for t, r in got if t == "old"]
        after = [r["public ms"] for t, r in got if t == "new"]
        new_c = [r["cuBLAS new ms"] for _, r in got]
        rows.append({"product": size, "kernel": f"{variant} ({backend})",
                     "before ms, each turn": ", ".join(f"{x:.3f}" for x in before),
                     "after ms, each turn": ", ".join(f"{x:.3f}" for x in after),
                     "kernel alone ms": _span([r["kernel ms"] for _, r in got]),
                     "cuBLAS, new C ms": _span(new_c),
                     "after ÷ cuBLAS, new C": _span([c / a for (t, r), c in zip(got, new_c) if t == "new"
                                                     for a in [r["public ms"]]], "{:.1%}")})
    return rows


STEP_NAMES = {
    "validate": "check A and B (`validate`)", "REGISTRY.resolve": "the variant (`REGISTRY.resolve`)",
    "numba_stream": "the stream", "device_input_on A": "take A (kept view)", "device_input_on B": "take B (kept view)",
    "caller_of": "who gets C (`caller_of`)", "device_result (kept view)": "C from CuPy's pool, its view kept",
    "_plan (kept)": "the kept launch (`_plan`)", "launch": "the launch itself",
    "sum of the steps": "**sum of the steps**", "whole call": "**the whole call**",
    "cupy: matmul(A, B), new C": "for scale: `cA @ cB` (cuBLAS, new C)",
}


def steps_rows() -> list[dict]:
    final, before = _load("call6-mbd.json")["rows"], _load("call5-mbd.json")["rows"]
    us = lambda rows, b, s: next(r["us"] for r in rows if r["backend"] == b and r["step"] == s)  # noqa: E731
    return [{"step": name, "CUDA C µs": f"{us(final, 'cuda-c', step):.1f}", "numba µs": f"{us(final, 'numba', step):.1f}",
             "CUDA C µs, call 5": f"{us(before, 'cuda-c', step):.1f}"} for step, name in STEP_NAMES.items()]


TRIED = [  # (file prefix, label in the probe, what it changes)
    ("call1", "skfirst", "stream-K blocks first (`WT_SK_FIRST=1`)"),
    ("call2", "skfirst", "stream-K blocks first (`WT_SK_FIRST=1`)"),
    ("call1", "skfirst8", "first, `SK_MIN` 8"),
    ("call1", "skfirst64", "first, `SK_MIN` 64"),
    ("call7", "sk1", "slots: 1 block per SM"),
    ("call7", "sk3", "slots: 3 blocks per SM"),
    ("call7", "sk4", "slots: 4 blocks per SM"),
]


def skorder_rows() -> list[dict]:
    out = {}
    for prefix, label, what in TRIED:
        for p in sorted(RUNS.glob(f"{prefix}-waves-*.json")):
            for r in json.loads(p.read_text())["rows"]:
                if f"{label}_tflops" not in r or r["M"] not in (4096, 8192):
                    continue
                key = (what, f"{r['M']}³")
                cell = out.setdefault(key, {"tf": [], "vs": [], "cublas": []})
                cell["tf"].append(r[f"{label}_tflops"])
                cell["vs"].append(r[f"{label}_tflops"] / r["streamk_tflops"])
                cell["cublas"].append(r[f"{label}_tflops"] / r["cublas_tflops"])
    return [{"change to streamk": what, "N": n, "turns": len(c["tf"]), "TFLOP/s": _span(c["tf"], "{:.1f}"),
             "÷ streamk, same turn": _span(c["vs"], "{:.1%}"), "÷ cuBLAS, same turn": _span(c["cublas"], "{:.0%}")}
            for (what, n), c in sorted(out.items(), key=lambda kv: (kv[0][1], [t[2] for t in TRIED].index(kv[0][0])))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", choices=["call", "steps", "skorder"])
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    rows = {"call": call_rows, "steps": steps_rows, "skorder": skorder_rows}[a.table]()
    for r in rows:
        print(r)
    sources = {"call": ["call5-mab-new-191.json", "call5-mab-old-164.json"], "steps": ["call6-mbd.json", "call5-mbd.json"],
               "skorder": ["call1-waves-1.json", "call2-waves-1.json", "call7-waves-1.json"]}[a.table]
    first = _load(sources[0])
    device = first["device"]["name"] if isinstance(first["device"], dict) else first["device"]
    write_record(a.json, f"gpulab-matmul-{a.table}-table/1", rows, what=WHAT[a.table], device=device,
                 versions=first["versions"], versions_of_sources=[_load(f)["versions"] for f in sources],
                 date=first["date"], dates=[_load(f)["date"] for f in sources],
                 source=str(RUNS.relative_to(RUNS.parents[3])))


WHAT = {
    "call": "chapter 1's public call on CuPy arrays (N = 4096, 8192, thin B; CUDA events, median of 20) in the tree "
            "before (4a447ee) and after (a kept launch per shape, C's view kept), in turns old/new/new/old on one "
            "H200 (call 5); the kernel alone and cuBLAS with a new C in the same processes",
    "steps": "each host step of chapter 1's public call on CuPy arrays, thin B (8192x128x128), timed alone in a "
             "loop (µs, median of blocks of calls): call 6 the final tree; call 5, on another H200 machine, the "
             "tree before the kept launch's key took the context in one driver call",
    "skorder": "stream-K schedules tried against today's streamk (CUDA C) at 4096^3 and 8192^3, cuBLAS in the same "
               "turn (scripts/matmul_waves_probe.py, median of 20, calls 1, 2 and 7 on three H200 machines)",
}


if __name__ == "__main__":
    main()
