"""Host time per launch of a numba kernel: numba's ``kernel[grid, block](*args)`` against
`gpulab.launch.launch_numba`, on a kernel of 26 arguments (15 device arrays and 11 scalars:
more than the breeding's `breed_plan`, 12 arrays and 10 scalars) and one of 2 arrays (as
`plan_lengths`), each the median
over ROUNDS rounds of N launches (the device synchronized before each round, the host's clock
around the launches alone), the two ways alternating round by round.

    python scripts/launch_numba_ab.py [--n 200] [--rounds 15] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from gpulab import launch
from gpulab.benchmark import utc_now, versions
from gpulab.device import info

from numba import cuda  # noqa: E402  (after gpulab)


@cuda.jit
def wide(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14,
         s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10):
    i = cuda.grid(1)
    if i < a0.size:
        a0[i] = a1[i] + s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7 + s8 + s9 + (1 if s10 else 0)


@cuda.jit
def narrow(a, b):
    i = cuda.grid(1)
    if i < a.size:
        b[i] = a[i]


def per_launch_us(fn, n, rounds):
    out = []
    for _ in range(rounds):
        cuda.synchronize()
        t = time.perf_counter()
        for _ in range(n):
            fn()
        out.append((time.perf_counter() - t) / n * 1e6)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--json")
    a = ap.parse_args()
    P = 25_000
    arrays = [cuda.to_device(np.zeros(P, np.float64)) for _ in range(15)]
    scalars = (1, 2.0, 3.0, 4, 5, 6, 7.0, 8.0, 9, 10, True)
    x, y = cuda.to_device(np.zeros(2 * P, np.int32)), cuda.to_device(np.zeros(2 * P, np.int32))
    grid, block = (P + 127) // 128, 128
    cases = {
        "26 arguments (15 arrays)": (lambda: wide[grid, block](*arrays, *scalars),
                                     lambda: launch.launch_numba(wide, grid, block, *arrays, *scalars)),
        "2 arrays": (lambda: narrow[grid, block](x, y), lambda: launch.launch_numba(narrow, grid, block, x, y)),
    }
    rows = []
    for name, (numba_way, ours) in cases.items():
        numba_way(), ours(), ours()  # compiled; the fast plan made
        times = {"numba": [], "launch_numba": []}
        for _ in range(a.rounds):
            times["numba"] += per_launch_us(numba_way, a.n, 1)
            times["launch_numba"] += per_launch_us(ours, a.n, 1)
        cuda.synchronize()
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append({"kernel": name, "numba's launch µs": round(med["numba"], 1),
                     "launch_numba µs": round(med["launch_numba"], 1),
                     "saved µs": round(med["numba"] - med["launch_numba"], 1)})
        print(rows[-1], flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"about": "host time per launch of a numba kernel, numba's own launch against "
                       "gpulab.launch.launch_numba (scripts/launch_numba_ab.py)", "device": info().as_dict(), "versions": versions(),
                       "date": utc_now(), "launches_per_round": a.n, "rounds": a.rounds, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
