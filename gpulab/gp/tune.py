"""Chapter 3 tuning sweep on the GPU: block shapes, days per pass (``register``) and words per
trading pass (``bitsliced``) at seed size (25,000 individuals × 32 stocks × 768 days), both
backends; then a breakdown of one evaluation of each winner (upload, kernel, fitness, host) at
seed size and at P=64, and of ``bitsliced`` into evaluation and trading.

    python -m gpulab.gp.tune --out gpu-out [--budget 200]

Writes ``gp-tuning-<device>.json`` (every row, the winners, the breakdown) and
``gp-params.json`` (the winners, for ``GPULAB_GP_PARAMS``), and prints the change to
``gpulab/gp/variants.py`` that makes the winners the registry's defaults.

Each configuration is checked bit for bit against the first one of its variant (money of every
individual and stock; every configuration is checked against the CPU by the test suite), then
timed like the benchmark (CUDA events, median of repeats after warm-up). On the simulator
(``GPULAB_DEVICE=sim``, tiny sizes) the script runs as a dry run: wall-clock times, no meaning.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import json
import time
from pathlib import Path

import numpy as np

import gpulab  # noqa: F401  (device selection first)
from gpulab import benchmark, device
from gpulab.errors import GpulabError
from gpulab.gp import bench
from gpulab.gp.market import synthetic_market
from gpulab.gp.programs import Population
from gpulab.gp.variants import REGISTRY
from gpulab.timing import measure

variants = importlib.import_module("gpulab.gp.variants")  # (gpulab.gp.variants is also a function's name)

# WPB × (DAYS or TW), plus one configuration that evaluates a day (a word) per pass: the
# step before the optimization, for the book's comparison
SWEEP = {
    "register": [dict(WPB=4, DAYS=1)] + [dict(WPB=w, DAYS=k) for w in (1, 2, 4) for k in (2, 4, 8)],
    "bitsliced": [dict(WPB=4, TW=1)] + [dict(WPB=w, TW=k) for w in (1, 2, 4) for k in (2, 4, 8)],
}
TUNED_KEYS = {"register": ("WPB", "DAYS"), "bitsliced": ("WPB", "TW")}
# The variants whose kernel has a diagnostic build without its trading pass (TRADE=0).
TRADE_SPLIT = {"register": False, "bitsliced": True}


def base_params(name: str, backend: str) -> dict:
    """The registry's parameters without any GPULAB_GP_PARAMS override (the sweep's baseline)."""
    return variants.params_for(name, backend, {})


def sweep(pop, market, repeat: int, budget: float, t0: float) -> tuple[list, dict]:
    work = pop.total_nodes * market.stocks * market.days
    rows, best = [], {}
    P, S = len(pop), market.stocks
    for name, configs in SWEEP.items():
        first = None
        for backend in ("numba", "cuda-c"):
            v = REGISTRY.get(name, backend)
            for cfg in configs:
                params = base_params(name, backend) | cfg
                row = {"variant": name, "backend": backend, **cfg}
                try:
                    if v.unavailable_reason():
                        raise GpulabError(v.unavailable_reason())
                    if time.perf_counter() - t0 > budget:
                        raise GpulabError(f"over the sweep's time budget of {budget:.0f} s")
                    tc = time.perf_counter()
                    ev = v.run(v, market, params)
                    _, money, _ = ev(pop)
                    row["compile_s"] = round(time.perf_counter() - tc, 2)
                    m = money.copy_to_host()[:P * S]
                    if first is None:
                        first = m
                    elif not np.array_equal(m.view(np.uint64), first.view(np.uint64)):
                        raise GpulabError("money differs from the first configuration")
                    t = measure(lambda: ev(pop), warmup=2, repeat=repeat)
                    row.update({"ms": t.median_ms, "GP ops/s": work / (t.median_ms * 1e-3), "clock": t.clock})
                    key = (name, backend)
                    if key not in best or row["ms"] < best[key]["ms"]:
                        best[key] = row
                except GpulabError as exc:
                    row["skipped"] = str(exc)[:160]
                rows.append(row)
                print({k: (round(x, 4) if isinstance(x, float) else x) for k, x in row.items()}, flush=True)
    return rows, best


def breakdown(name: str, backend: str, params: dict, pop, market, repeat: int) -> dict:
    """One evaluation split by CUDA events (upload, kernel, fitness) and the host's wall clock
    per call (Python, launches, the 8-byte readback: everything ``gp.evaluate`` costs)."""
    v = REGISTRY.get(name, backend)
    ev = v.run(v, market, params)
    ev(pop)
    walls, stages = [], []
    for _ in range(repeat):
        tl: list = []
        t = time.perf_counter()
        ev(pop, timeline=tl)
        walls.append((time.perf_counter() - t) * 1e3)
        if tl:
            from numba import cuda

            stages.append({b[0]: cuda.event_elapsed_time(a[1], b[1]) for a, b in zip(tl, tl[1:])})
    out = {"variant": name, "backend": backend, "population": len(pop), "params": params,
           "wall_ms_per_call": float(np.median(walls))}
    if stages:
        for k in stages[0]:
            out[f"{k}_ms"] = float(np.median([s[k] for s in stages]))
        gpu = sum(out[f"{k}_ms"] for k in stages[0])
        out["gpu_ms"] = gpu
        out["host_only_ms"] = out["wall_ms_per_call"] - gpu
    return out


def trade_split(name: str, backend: str, params: dict, pop, market, repeat: int) -> dict:
    """``bitsliced`` (a variant of `TRADE_SPLIT`) with and without its trading pass (a diagnostic build, TRADE=0, whose money
    is a checksum of the signals). The diagnostic build needs fewer registers, so it may fit more
    warps per SM: the difference is an estimate of the trading pass's share, not an exact one."""
    v = REGISTRY.get(name, backend)
    full = v.run(v, market, params)
    bare = v.run(v, market, params | {"TRADE": 0})
    t_full = measure(lambda: full(pop), warmup=2, repeat=repeat).median_ms
    t_bare = measure(lambda: bare(pop), warmup=2, repeat=repeat).median_ms
    return {"variant": name, "backend": backend, "params": params, "ms": t_full, "ms_without_trading": t_bare,
            "trading_ms": t_full - t_bare}


def registry_diff(best: dict) -> str:
    """The change to variants.py that makes the winners the defaults: PARAMS takes the numba
    winner; BACKEND_PARAMS the CUDA C winner where it differs."""
    path = Path(variants.__file__)
    text = path.read_text()
    new = text
    backend_params = dict(variants.BACKEND_PARAMS)
    for name, keys in TUNED_KEYS.items():
        nb, cc = best.get((name, "numba")), best.get((name, "cuda-c"))
        if nb is None and cc is None:
            continue
        win = {k: (nb or cc)[k] for k in keys}
        old_line = next(line for line in text.splitlines() if line.strip().startswith(f'"{name}": dict('))
        params = {**variants.PARAMS[name], **win}
        body = ", ".join(f"{k}={x}" for k, x in params.items())
        new = new.replace(old_line, old_line[:old_line.index('"')] + f'"{name}": dict({body}),')
        backend_params.pop((name, "cuda-c"), None)
        if nb and cc and any(cc[k] != win[k] for k in keys):
            backend_params[(name, "cuda-c")] = {k: cc[k] for k in keys if cc[k] != win[k]}
    old_bp = next(line for line in new.splitlines() if line.startswith("BACKEND_PARAMS: dict ="))
    items = ", ".join(f"{k!r}: dict({', '.join(f'{a}={b}' for a, b in v.items())})" for k, v in backend_params.items())
    new = new.replace(old_bp, f"BACKEND_PARAMS: dict = {{{items}}}")
    return "".join(difflib.unified_diff(text.splitlines(True), new.splitlines(True), "a/gpulab/gp/variants.py",
                                        "b/gpulab/gp/variants.py"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gpulab.gp.tune", description="Chapter 3's tuning sweep on the GPU.")
    ap.add_argument("--out", default="gpu-out")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--population", type=int, default=25_000)
    ap.add_argument("--stocks", type=int, default=32)
    ap.add_argument("--days", type=int, default=768)
    ap.add_argument("--small", type=int, default=64, help="the small population of the breakdown")
    ap.add_argument("--budget", type=float, default=200.0, help="seconds for the sweep (the rest is skipped)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    pop = bench.population(args.population)
    market = synthetic_market(args.stocks, args.days, seed=bench.MARKET_SEED)
    rows, best = sweep(pop, market, args.repeat, args.budget, t0)
    n = min(args.small, len(pop))
    small = Population(pop.code[:pop.offsets[2 * n]], pop.offsets[:2 * n + 1])
    parts, splits = [], []
    for (name, backend), row in sorted(best.items()):
        params = base_params(name, backend) | {k: row[k] for k in TUNED_KEYS[name]}
        for p in (pop, small):
            parts.append(breakdown(name, backend, params, p, market, args.repeat))
            print("breakdown", {k: (round(x, 4) if isinstance(x, float) else x) for k, x in parts[-1].items()}, flush=True)
        if TRADE_SPLIT[name]:
            splits.append(trade_split(name, backend, params, pop, market, args.repeat))
            print("trading", {k: (round(x, 4) if isinstance(x, float) else x) for k, x in splits[-1].items()}, flush=True)
    winners = {f"{n}[{b}]": {k: r[k] for k in TUNED_KEYS[n]} for (n, b), r in best.items()}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    slug = benchmark.device_slug({"device": device.info().as_dict()})
    path = out / f"gp-tuning-{slug}.json"
    path.write_text(json.dumps({"schema": "gpulab-gp-tuning/1", "rows": rows, "winners": winners,
                                "breakdown": parts, "bitsliced_trading": splits, "population": len(pop),
                                "mean_nodes": pop.total_nodes / len(pop), "stocks": market.stocks,
                                "days": market.days, "device": device.info().as_dict(),
                                "versions": benchmark.versions(),
                                "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, indent=1) + "\n")
    (out / "gp-params.json").write_text(json.dumps(winners, indent=1) + "\n")
    split_of = {(t["variant"], t["backend"]): t for t in splits}
    table = []  # the breakdown as the book's table (<!-- gpulab:rows gp-breakdown-<device> -->)
    for b in parts:
        row = {"variant": f"{b['variant']}[{b['backend']}]", "individuals": b["population"],
               "ms per call (host clock)": b["wall_ms_per_call"]}
        for k, label in (("upload_ms", "upload ms"), ("kernel_ms", "kernel ms"), ("fitness_ms", "fitness + flag ms"),
                         ("host_only_ms", "host only ms")):
            if k in b:
                row[label] = b[k]
        split = split_of.get((b["variant"], b["backend"])) if b["population"] == len(pop) else None
        if split:
            row["of which trading ms"] = split["trading_ms"]
        table.append(row)
    (out / f"gp-breakdown-{slug}.json").write_text(json.dumps(
        {"rows": table, "stocks": market.stocks, "days": market.days, "device": device.info().name,
         "versions": benchmark.versions(), "date": benchmark.utc_now(),
         "what": "one evaluation of each tuned winner: CUDA events between its stages; the host clock around the call"},
        indent=1) + "\n")
    print("wrote", path, "and", out / "gp-params.json")
    print("\nwinners (ms at seed size):")
    for (n, b), r in sorted(best.items()):
        print(f"  {n:10s} {b:7s} {', '.join(f'{k}={r[k]}' for k in TUNED_KEYS[n])}: {r['ms']:.4g} ms, "
              f"{r['GP ops/s']:.3g} GP ops/s")
    diff = registry_diff(best)
    (out / "gp-params.diff").write_text(diff)
    print("\nto make them the defaults (gp-params.diff):\n" + (diff or "(no change)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
