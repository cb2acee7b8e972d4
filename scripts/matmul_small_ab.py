"""Issue 31: `small` (streamk with 64x64 tiles, 16 deep) against `streamk` (128x128, 8 deep) at
small and thin products, both backends, in turns (the two variants in opposite order in each
turn), beside cuBLAS (CuPy, FP32, a new C per call). Per variant and turn:

* kernel: the launch alone (the chapter's one launch path, kept plan), CUDA events around one
  launch, median of --repeat after a warm-up (as `gpulab bench`: the host's launch is inside);
* queued: --queue launches back to back between two events, divided by their number (the GPU's
  time per product once the host runs ahead of it);
* public: `gpulab.matmul.matmul` on CuPy arrays (a new C from CuPy's pool), median of --repeat.

Every variant's C is checked against a float64 product (poisoned first). Writes --json: `runs`
(every measurement) and `rows` (per shape and backend: the medians over turns, for the book).

    python scripts/matmul_small_ab.py --turns 3 --repeat 20 --json matmul-small-ab.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

import numpy as np

import gpulab.matmul as mm  # (before numba: gpulab picks the GPU or the simulator)
from gpulab.benchmark import utc_now, versions
from gpulab.checking import poisoned, relative_error
from gpulab.device import info
from gpulab.matmul import host
from gpulab.matmul.variants import REGISTRY, fastest
from gpulab.timing import measure

SHAPES = [(8192, 128, 128), (8191, 127, 129), (16384, 128, 128), (512, 512, 512), (1024, 1024, 1024),
          (2048, 2048, 2048)]
VARIANTS = ("streamk", "small")


def queued_ms(launch, n: int) -> float:
    from numba import cuda

    launch()
    start, end = cuda.event(), cuda.event()
    start.record()
    for _ in range(n):
        launch()
    end.record()
    end.synchronize()
    return cuda.event_elapsed_time(start, end) / n


def main() -> None:
    import cupy as cp
    from numba import cuda

    os.environ.pop("CUPY_TF32", None)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--queue", type=int, default=100)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    rng = np.random.default_rng()
    runs = []
    for M, K, N in SHAPES:
        A = rng.standard_normal((M, K), dtype=np.float32)
        B = rng.standard_normal((K, N), dtype=np.float32)
        cA, cB = cp.asarray(A), cp.asarray(B)
        ref = cp.asnumpy(cA.astype(cp.float64) @ cB.astype(cp.float64))
        dA, dB = cuda.to_device(A), cuda.to_device(B)
        for backend in ("cuda-c", "numba"):
            for turn in range(a.turns):
                order = VARIANTS if turn % 2 == 0 else VARIANTS[::-1]
                peer = measure(lambda: cA @ cB, warmup=3, repeat=a.repeat).median_ms
                for name in order:
                    v = REGISTRY.get(name, backend)
                    dC = cuda.to_device(poisoned((M, N), np.float32))
                    launch = host.plan(v.policy, backend, M, K, N, v.launch_params())
                    run = lambda: launch(dA, dB, dC)  # noqa: E731
                    kernel = measure(run, warmup=3, repeat=a.repeat).median_ms
                    err = relative_error(dC.copy_to_host(), ref)
                    queued = queued_ms(run, a.queue)
                    public = measure(lambda: mm.matmul(cA, cB, variant=name, backend=backend), warmup=3,
                                     repeat=a.repeat).median_ms
                    got = mm.matmul(cA, cB, variant=name, backend=backend)
                    err = max(err, relative_error(cp.asnumpy(got), ref))
                    r = {"shape": f"{M}x{K}x{N}", "M": M, "K": K, "N": N, "backend": backend, "turn": turn + 1,
                         "variant": name, "kernel ms": kernel, "queued ms": queued, "public ms": public,
                         "cuBLAS ms": peer, "rel error": err, "picked": fastest(backend, M, K, N, info().sm_count)}
                    runs.append(r)
                    print(json.dumps(r), flush=True)
    rows = []
    for M, K, N in SHAPES:
        for backend in ("cuda-c", "numba"):
            mine = [r for r in runs if (r["M"], r["K"], r["N"], r["backend"]) == (M, K, N, backend)]
            med = {(name, col): statistics.median(r[col] for r in mine if r["variant"] == name)
                   for name in VARIANTS for col in ("kernel ms", "queued ms", "public ms")}
            gains = [s["kernel ms"] / t["kernel ms"] for s in mine if s["variant"] == "streamk"
                     for t in mine if t["variant"] == "small" and t["turn"] == s["turn"]]
            cublas = statistics.median(r["cuBLAS ms"] for r in mine)
            rows.append({
                "shape": f"{M}×{K}×{N}" if len({M, K, N}) > 1 else f"{M}³", "backend": backend,
                "picked": mine[0]["picked"],
                "streamk µs": round(1e3 * med["streamk", "kernel ms"], 1),
                "small µs": round(1e3 * med["small", "kernel ms"], 1),
                "gain, each turn": " · ".join(f"{g:.2f}" for g in gains),
                "queued µs (streamk → small)": f"{1e3 * med['streamk', 'queued ms']:.1f} → {1e3 * med['small', 'queued ms']:.1f}",
                "public µs (streamk → small)": f"{1e3 * med['streamk', 'public ms']:.1f} → {1e3 * med['small', 'public ms']:.1f}",
                "cuBLAS µs": round(1e3 * cublas, 1),
                "max rel error": max(r["rel error"] for r in mine)})
    if a.json:
        a.json.write_text(json.dumps({"device": info().name, "versions": versions(), "date": utc_now(),
                                      "script": "python scripts/matmul_small_ab.py " + " ".join(sys.argv[1:]),
                                      "what": __doc__.split("\n\n")[0].replace("\n", " "),
                                      "rows": rows, "runs": runs}, indent=1) + "\n")
    print(f"\n{'shape':16} {'backend':7} {'pick':8} {'streamk':>8} {'small':>8} {'gains':18} {'queued':16} {'public':16} {'cuBLAS':>7}")
    for r in rows:
        print(f"{r['shape']:16} {r['backend']:7} {r['picked']:8} {r['streamk µs']:8.1f} {r['small µs']:8.1f} "
              f"{r['gain, each turn']:18} {r['queued µs (streamk → small)']:16} {r['public µs (streamk → small)']:16} "
              f"{r['cuBLAS µs']:7.1f}")


if __name__ == "__main__":
    main()
