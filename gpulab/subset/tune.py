"""Tuning sweep for the incremental kernels on the GPU: block size × chunk length, both backends.

``python -m gpulab.subset.tune --out DIR`` writes ``subset-tuning-<device>.json`` and prints a table,
plus the registers / local memory numba reports for each compiled incremental kernel.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path


import gpulab  # noqa: F401


def main(argv=None) -> int:
    from gpulab import device
    from gpulab.benchmark import device_slug, versions
    from gpulab.subset import host
    from gpulab.subset.reference import correlation, least_correlated_cpu, squared_packed, synthetic_returns
    from gpulab.subset.variants import REGISTRY
    from gpulab.timing import measure

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench-results")
    ap.add_argument("--sizes", default="50:5,200:5")
    ap.add_argument("--blocks", default="128,256,512,1024")
    ap.add_argument("--chunks", default="32,128,256,1024")
    args = ap.parse_args(argv)
    rows = []
    for nk in args.sizes.split(","):
        n, k = map(int, nk.split(":"))
        C = correlation(synthetic_returns(500, n, factors=3, strength=0.5, seed=n * 100 + k))
        Q = squared_packed(C)
        s, r = least_correlated_cpu(Q, n, k)
        for v in REGISTRY:
            name, backend = v.name, v.backend
            if not v.policy.chunked or v.unavailable_reason():
                continue
            for block in map(int, args.blocks.split(",")):
                for chunk in map(int, args.chunks.split(",")):
                    p = v.launch_params(dict(BLOCK=block, CHUNK=chunk, CHUNK_MIN=chunk, MAX_BLOCKS=132 * 64))
                    row = {"n": n, "k": k, "variant": name, "backend": backend, "BLOCK": block, "CHUNK": chunk,
                           "WAVES": p.get("WAVES")}  # the grid cap this sweep ran under (none before WAVES)
                    try:
                        launch = v.run(Q, n, k, p)
                        # the block launched: a plan halves one the kernel's registers cannot hold
                        row["launched BLOCK"] = host.plan_for(v.policy, backend, n, k, p)[0].block
                        d, rr = launch()
                        row["check"] = rr == r and math.isclose(d, math.sqrt(2 * s), rel_tol=1e-9)
                        t = measure(launch, warmup=1, repeat=7)
                        row["median_ms"] = t.median_ms
                        row["subsets_per_s"] = math.comb(n, k) / (t.median_ms * 1e-3)
                    except Exception as exc:  # a block too large for the shared memory, etc.
                        row["error"] = f"{type(exc).__name__}: {exc}"[:300]
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    res = {}
    try:
        from gpulab.subset.kernels_numba import incremental_kernel

        for (K, warp), disp in ((key, incremental_kernel(*key)) for key in [(5, False), (5, True), (6, True)]):
            for sig, kern in disp.overloads.items():
                res[f"K={K} warp={warp}"] = {"regs": kern.regs_per_thread if hasattr(kern, "regs_per_thread") else None,
                                             "local_bytes": getattr(kern, "local_mem_per_thread", None)}
    except Exception as exc:
        res["error"] = str(exc)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result = {"device": device.info().as_dict(), "versions": versions(), "rows": rows, "numba_resources": res}
    path = out / f"subset-tuning-{device_slug({'device': result['device']})}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    ok = [x for x in rows if x.get("median_ms")]
    print("\nbest per (n, k, variant, backend):")
    for key in sorted({(x["n"], x["k"], x["variant"], x["backend"]) for x in ok}):
        b = min((x for x in ok if (x["n"], x["k"], x["variant"], x["backend"]) == key), key=lambda x: x["median_ms"])
        print(f"  n={key[0]} k={key[1]} {key[2]:17s} {key[3]:7s} block={b['BLOCK']:4d} chunk={b['CHUNK']:5d} "
              f"{b['median_ms']:.4f} ms {b['subsets_per_s']:.3g} subsets/s check={b['check']}")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
