"""Issue 29: the device time of `choose_elites` (chapter 3's elites chosen on the device: its two
kernels), both backends, at 25,000 and 500,000 individuals with 2 and `DEVICE_ELITES_MAX` elites:
CUDA events around one call, median of 21 after a warm-up call ("one call": the device waits for
the host to launch the second kernel), and the mean of 20 calls queued back to back ("queued":
the host ahead of the device, as in the GP loop); the result checked against the CPU's `_elites`.

    python scripts/gp_elites_time.py [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import numpy as np

import gpulab  # noqa: F401  (before numba)
from gpulab.benchmark import utc_now, versions
from gpulab.device import info
from gpulab.gp import breeding, breeding_gpu


def main() -> None:
    from numba import cuda

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for P in (25_000, 500_000):
        fitness = rng.integers(0, 1000, P).astype(np.float64) / 1000
        sizes = rng.integers(5, 500, P).astype(np.int32)
        f, s = cuda.to_device(fitness), cuda.to_device(sizes)
        for n in (2, breeding_gpu.DEVICE_ELITES_MAX):
            want = breeding._elites(fitness, sizes, n, True)
            for backend in ("cuda-c", "numba"):
                out = cuda.to_device(np.full(n, -1, np.int64))

                cand = cuda.device_array(-(-P // breeding_gpu.ELITE_CHUNK) * n, np.int64)

                def launch():
                    breeding_gpu.choose_elites(f, s, True, out, backend, cand=cand)

                launch()
                cuda.synchronize()
                ok = out.copy_to_host().tolist() == want.tolist()
                times = []
                for _ in range(21):
                    e0, e1 = cuda.event(), cuda.event()
                    e0.record()
                    launch()
                    e1.record()
                    e1.synchronize()
                    times.append(cuda.event_elapsed_time(e0, e1) * 1e3)
                e0, e1 = cuda.event(), cuda.event()
                e0.record()
                for _ in range(20):  # (queued back to back: the host ahead of the device, as in the GP loop)
                    launch()
                e1.record()
                e1.synchronize()
                rows.append({"backend": backend, "population": P, "elites": n,
                             "one call us": round(statistics.median(times), 1),
                             "queued us": round(cuda.event_elapsed_time(e0, e1) * 1e3 / 20, 1), "same as CPU": ok})
                print(rows[-1], flush=True)
    if a.json:
        a.json.write_text(json.dumps({"about": __doc__.split("\n\n")[0].replace("\n", " "), "device": info().name,
                                      "versions": versions(), "date": utc_now(), "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
