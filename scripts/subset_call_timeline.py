"""Where a subset search's public call spends its time on a GPU (issue 31: the kernel is ~0.55 ms
of a ~1.2 ms call at n = 50, k = 5). For each backend, medians of --repeat calls after a warm-up,
each stage timed with perf_counter after a device synchronize:

  validate+pack   host.validate + squared_packed (the public call's checks, host C)
  prepare         v.run(...): limits, kernels built/looked up, buffers allocated -> launch()
  launch          launch(): Q and the binomial table up, the kernels, the answer down
  kernels         the same launch() with the device already holding Q (a device Q is not copied)
  public          gpulab.subset.least_correlated(C, k, backend=...) end to end
  empty launch    one launch of a kernel that does nothing (the launch overhead itself)

    python scripts/subset_call_timeline.py --n 50 --k 5 --repeat 20 --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from gpulab import subset  # before numba: gpulab picks the GPU or the simulator
from numba import cuda  # noqa: E402  (after gpulab)
from gpulab.subset import host
from gpulab.subset.reference import correlation, squared_packed, synthetic_returns


@cuda.jit
def _empty(x):
    pass


def clock(f, repeat):
    f()
    cuda.synchronize()
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        cuda.synchronize()
        out.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--backends", nargs="+", default=["numba", "cuda-c"])
    ap.add_argument("--json")
    a = ap.parse_args()
    C = correlation(synthetic_returns(500, a.n, factors=3, strength=0.5, seed=1))
    Q = squared_packed(C)
    dQ = cuda.to_device(Q)
    d = cuda.to_device(np.zeros(1))
    rows = []
    for b in a.backends:
        v = subset.REGISTRY.resolve(None if b == "cpu" else subset.REGISTRY.default(b), b)
        p = v.launch_params(None)
        launch = v.run(Q, a.n, a.k, p)
        launch_dev = v.run(dQ, a.n, a.k, p)
        row = {"backend": b, "variant": v.name, "n": a.n, "k": a.k,
               "validate+pack ms": clock(lambda: squared_packed(host.validate(C, a.k)[0]), a.repeat),
               "prepare ms": clock(lambda: v.run(Q, a.n, a.k, p), a.repeat),
               "launch ms": clock(launch, a.repeat),
               "kernels ms": clock(launch_dev, a.repeat),
               "public ms": clock(lambda: subset.least_correlated(C, a.k, variant=v.name, backend=b), a.repeat),
               "empty launch ms": clock(lambda: _empty[1, 32](d), a.repeat)}
        rows.append(row)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1) + "\n")
    stages = [k for k in rows[0] if k.endswith(" ms")]
    print("backend  variant      " + "  ".join(f"{k:>16}" for k in stages))
    for row in rows:
        print(f"{row['backend']:8} {row['variant']:12} " + "  ".join(f"{row[k]:16.3f}" for k in stages))


if __name__ == "__main__":
    main()
