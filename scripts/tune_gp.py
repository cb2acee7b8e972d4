"""Chapter 3 tuning sweep on the GPU: block shapes of the interpreter and bit-sliced variants at
seed size (25,000 individuals × 32 stocks × 768 days), both backends; rows JSON for the book.

    python scripts/tune_gp.py --out gpu-out            # writes gp-tuning-<device>.json

Each configuration is checked bit for bit against the first one measured (all are checked
against the CPU by the test suite), then timed like the benchmark (CUDA events, median).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

import gpulab  # noqa: F401  (device selection first)
from gpulab import benchmark, device
from gpulab.errors import GpulabError
from gpulab.gp import bench
from gpulab.gp.market import synthetic_market
from gpulab.gp.variants import REGISTRY
from gpulab.timing import measure

SWEEP = {
    "coalesced": [dict(BLOCK=b) for b in (64, 128, 256, 512)],
    "register": [dict(WPB=w) for w in (1, 2, 4, 8, 16)],
    "bitsliced": [dict(WPB=w, BSTACK=k) for w in (1, 2, 4, 8) for k in (12, 16)],
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="gpu-out")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--population", type=int, default=25_000)
    args = ap.parse_args()
    pop = bench.population(args.population)
    market = synthetic_market(32, 768, seed=bench.MARKET_SEED)
    work = pop.total_nodes * 32 * 768
    rows, first = [], {}
    for name, configs in SWEEP.items():
        for backend in ("numba", "cuda-c"):
            v = REGISTRY.get(name, backend)
            for cfg in configs:
                params = {k: x for k, x in v.params.items() if k != "sim"} | cfg
                row = {"variant": name, "backend": backend, **cfg}
                try:
                    if v.unavailable_reason():
                        raise GpulabError(v.unavailable_reason())
                    ev = v.run(name, market, params)
                    _, money, _ = ev(pop)
                    m = money.copy_to_host()
                    ref = first.setdefault(name, m)
                    if not np.array_equal(m.view(np.uint64), ref.view(np.uint64)):
                        raise GpulabError("money differs from the first configuration")
                    t = measure(lambda: ev(pop), warmup=2, repeat=args.repeat)
                    row.update({"ms": t.median_ms, "GP ops/s": work / (t.median_ms * 1e-3)})
                except GpulabError as exc:
                    row["skipped"] = str(exc)[:120]
                rows.append(row)
                print(row, flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    slug = benchmark.device_slug({"device": device.info().as_dict()})
    path = out / f"gp-tuning-{slug}.json"
    path.write_text(json.dumps({"rows": rows, "population": len(pop), "stocks": 32, "days": 768,
                                "device": device.info().name, "versions": benchmark.versions()}, indent=1) + "\n")
    print("wrote", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
