"""The traces the book quotes beside the GPU's counters at sizes other than `gpulab trace`'s tour
sizes (where those differ from the GPU's for reasons of size: edge tiles, partial warps, a
warp of one lane): each chapter's benchmark case built at the size named, traced on numba's
simulator. Writes docs/benchmarks/traces-at-sizes.json (one row per variant and kernel: the totals,
the per-request ratios and, where the book reads them, the per-line counts).

    GPULAB_DEVICE=sim python scripts/trace_at_sizes.py [--out docs/benchmarks/traces-at-sizes.json]

Sizes: matmul 128x16x128 (every tile full); subset n=50 k=5 (the GPU's size; a window of ranks
at the start, a third and two thirds in, with the GPU's launch parameters: CHUNK=32 for the
incremental kernels); gp 3 individuals x 32 stocks x 40 days (full warps) and x 768 days (the
GPU's days, for bitsliced, register and shared); radix: every numba step with the GPU's launch
parameters (not the simulator's small tiles), two tiles of keys below 2^BITS (one pass of
random digits, as every pass of random 32-bit keys is).

euler: the labelling ladder's GPU steps with the GPU's parameters (256-thread blocks, full
warps; the pairing's small sort kept, it is not what is compared) on a shallow graph of 4,096
edges (random gathers over an array many sectors long, as at 2^20).

`--chapters` traces only those chapters and keeps the other chapters' rows already in `--out`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from gpulab import trace


def _ratio(t: dict, a: str, b: str):
    return round(t[a] / t[b], 4) if t[b] else None


def _rows(chapter: str, size: str, variant: str, launch, lines: bool, extra: dict | None = None) -> list[dict]:
    out = []
    with trace.recording() as rec:
        launch()
    for rep in trace.merge(rec.reports):
        d = rep.as_dict()
        t = d["totals"]
        row = {"chapter": chapter, "size": size, "variant": variant, "kernel": d["kernel"], **(extra or {}),
               "load_sectors_per_request": _ratio(t, "global_load_sectors", "global_load_requests"),
               "store_sectors_per_request": _ratio(t, "global_store_sectors", "global_store_requests"),
               "shared_wavefronts_per_request": _ratio(t, "shared_wavefronts", "shared_requests"),
               "constant_wavefronts_per_request": _ratio(t, "constant_wavefronts", "constant_requests"),
               "totals": t}
        if lines:
            row["by_line"] = d["by_line"]
        out.append(row)
        print(chapter, size, variant, d["kernel"], row["load_sectors_per_request"], row["store_sectors_per_request"],
              row["shared_wavefronts_per_request"], flush=True)
    return out


def matmul() -> list[dict]:
    from gpulab.matmul import bench
    from gpulab.matmul.variants import REGISTRY

    rows = []
    for v in REGISTRY.select(backend="numba"):
        state = bench.setup(bench._case(128, 16, 128), np.random.default_rng(1))
        rows += _rows("matmul", "128x16x128", v.name, bench.runner(v, state), False)
    return rows


def subset() -> list[dict]:
    from gpulab.subset import bench
    from gpulab.subset.combinatorics import choose
    from gpulab.subset.variants import INCREMENTAL, REGISTRY, SEED

    n, k = 50, 5
    state = bench.setup(bench._case(n, k), np.random.default_rng(7))
    total = choose(n, k)
    rows = []
    for v in REGISTRY.select(backend="numba"):
        if v.name not in ("global", "shared", "constant_local", "incremental", "incremental_warp"):
            continue
        inc = v.policy.chunked
        params = dict(INCREMENTAL if inc else SEED)
        if inc:
            params["CHUNK"] = 32  # what the GPU run uses at n = 50, k = 5 (132 SMs x 2048 threads)
        width = 512 * 32 if inc else 2048
        for base in (0, total // 3, 2 * total // 3):
            launch = v.run(state["Q"], n, k, params, ranks=(base, base + width))
            rows += _rows("subset", "n=50 k=5", v.name, launch, base == 0, {"ranks": [base, base + width]})
    return rows


def gp() -> list[dict]:
    from gpulab.gp import bench
    from gpulab.gp.variants import REGISTRY

    rows = []
    for label, days, names in (("P=3 32x40", 40, None), ("P=3 32x768", 768, ("bitsliced", "register", "shared"))):
        state = bench.setup(bench._case(label, 3, 32, days), np.random.default_rng(3))
        for v in REGISTRY.select(backend="numba"):
            if (names and v.name not in names) or v.policy.compiled:
                continue
            rows += _rows("gp", label, v.name, bench.runner(v, state), days == 768 and v.name == "bitsliced")
    return rows


def radix() -> list[dict]:
    import gpulab.radix as rx
    from gpulab.radix.variants import REGISTRY

    rows = []
    for v in REGISTRY.select(backend="numba"):
        p = dict(v.params)
        tile = p.get("BLOCK", p["SCAN_BLOCK"]) * p.get("ITEMS", 1)
        n, bits = 2 * tile, p.get("BITS", 1)
        keys = np.random.default_rng(11).integers(0, 2 ** bits, n, dtype=np.uint32)
        label = f"{n} keys < 2^{bits}, GPU parameters"

        def launch(keys=keys, v=v, p=p):
            out = rx.sort(keys, variant=v.name, params=p)
            assert np.array_equal(out, np.sort(keys)), v.name

        rows += _rows("radix", label, v.name, launch, False, {"params": p})
    return rows


def euler() -> list[dict]:
    import os

    from gpulab.euler import bench
    from gpulab.euler.variants import REGISTRY

    E, rows = 4096, []
    state = bench.setup(bench._graph("shallow", E), np.random.default_rng(3))
    for v in REGISTRY.select(backend="numba"):
        if v.name not in ("propagate", "jump", "shared", "ruling_set"):
            continue
        p = {k: x for k, x in v.params.items() if k != "SORT_PARAMS"}
        p["SMALL_SORT"] = E + 1
        os.environ["GPULAB_EULER_PARAMS"] = json.dumps({v.name: {"numba": p}})  # read by the bench's plan
        rows += _rows("euler", f"shallow, {E} edges, GPU parameters", v.name, bench.runner(v, state), False,
                      {"params": p})
    os.environ.pop("GPULAB_EULER_PARAMS", None)
    bench.teardown(state)
    return rows


TRACERS = {"matmul": matmul, "subset": subset, "gp": gp, "radix": radix, "euler": euler}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="docs/benchmarks/traces-at-sizes.json")
    ap.add_argument("--chapters", nargs="+", choices=list(TRACERS), default=list(TRACERS))
    a = ap.parse_args()
    rows = []
    out = Path(a.out)
    if out.exists():  # the other chapters' rows stay
        rows = [r for r in json.loads(out.read_text())["rows"] if r["chapter"] not in a.chapters]
    for ch in a.chapters:
        rows += TRACERS[ch]()
    out.write_text(json.dumps({"what": __doc__.split("\n\n")[0], "script": "scripts/trace_at_sizes.py",
                                       "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
