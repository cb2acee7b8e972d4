"""A small workload for compute-sanitizer: the register-resident sorts (`local`, `onesweep`),
both backends, keys-only and key-value, at sizes around the tile (ragged last tiles, one tile,
many tiles whose look-back chains cross several tiles), each checked against numpy.

    for t in memcheck racecheck synccheck; do
        compute-sanitizer --tool $t --error-exitcode 9 python3 scripts/radix_sanitize.py; done

Small on purpose: under racecheck every shared-memory access is tracked.
"""

import sys

import numpy as np

import gpulab  # noqa: F401  (device selection first)
from gpulab import device
from gpulab.radix import host
from gpulab.radix.variants import REGISTRY


def main() -> int:
    from numba import cuda

    rng = np.random.default_rng(3)
    bad = 0
    for name in sys.argv[1:] or ["onesweep", "local"]:
        for backend in ("cuda-c", "numba"):
            if backend == "cuda-c" and device.on_simulator():
                print(f"{name:8s} {backend:6s} skipped: needs a real GPU")
                continue
            v = REGISTRY.get(name, backend)
            tile = v.params["BLOCK"] * v.params["ITEMS"]
            for n in (1, 37, tile - 1, tile + 1, 5 * tile + 17):
                for pairs in (False, True):
                    keys = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
                    keys[31::32] |= np.uint32(0xFF)  # lane 31 holds digit 255 (the numba ballot mask bug)
                    plan = host.SortPlan(v.run.kind, backend, n, pairs, v.params)
                    kd, vd = plan.sort(cuda.to_device(keys), iota=pairs)
                    ok = np.array_equal(kd.copy_to_host(), np.sort(keys))
                    if pairs:
                        ok = ok and np.array_equal(vd.copy_to_host(), np.argsort(keys, kind="stable"))
                    bad += not ok
                    print(f"{name:8s} {backend:6s} n={n:6d} {'pairs' if pairs else 'keys '} {'ok' if ok else 'WRONG'}",
                          flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
