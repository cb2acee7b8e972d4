"""onesweep at exactly 2^30 keys, both backends (a GPU with about 30 GB free): the check behind
onesweep's limit of 2^30 keys (`gpulab.radix.policy.ONE_SWEEP.max_keys`, 2^30 - 1 before): a
tile reads only earlier tiles' running counts, which hold fewer than 2^30 keys; only the last
tile's own prefix can reach 2^30, and no tile reads it (docs/benchmarks/gpu-runs/2026-11-28-session22/).

* every pass runs with one digit holding all keys but one: 2^30 - 1 keys 0xFFFFFFFF and one 0,
  at a random position: the look-back's running count of digit 255 reaches 2^30 - 1, the most
  its 30 bits hold. `argsort` must put the 0 first, then every other position in order.
* 2^30 random keys: `sort` must return them in order, the same multiset (sum and xor kept).
* 2^30 keys all 256, sorted by a plan with ``max_key=256`` (no pass dropped, so both passes run
  with one digit holding every key and the last tile's prefix reaches 2^30): the positions must
  come back in order.

    python scripts/radix_2p30_check.py [--backends cuda-c numba]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", nargs="*", default=["cuda-c", "numba"])
    ap.add_argument("--log2", type=int, default=30, help="2^LOG2 keys (the check is about 30)")
    a = ap.parse_args()
    import gpulab.radix as rx  # (gpulab before numba)
    from numba import cuda

    n = 2**a.log2
    rng = np.random.default_rng()
    for backend in a.backends:
        t = time.perf_counter()
        idx = int(rng.integers(n))
        keys = np.full(n, 0xFFFFFFFF, np.uint32)
        keys[idx] = 0
        order = rx.argsort(cuda.to_device(keys), variant="onesweep", backend=backend).copy_to_host()
        ok1 = order[0] == idx and np.array_equal(order[1:idx + 1], np.arange(idx)) and \
            np.array_equal(order[idx + 1:], np.arange(idx + 1, n))
        del order, keys
        keys = rng.integers(0, 2**32, n, dtype=np.uint32)
        out = rx.sort(cuda.to_device(keys), variant="onesweep", backend=backend).copy_to_host()
        ok2 = bool(np.all(out[1:] >= out[:-1])) and int(out.sum(dtype=np.uint64)) == int(keys.sum(dtype=np.uint64)) \
            and int(np.bitwise_xor.reduce(out)) == int(np.bitwise_xor.reduce(keys))
        del out, keys
        rx.clear_cache()
        sp = rx.plan(n, pairs=True, variant="onesweep", backend=backend)
        _, pos = sp.sort(cuda.to_device(np.full(n, 256, np.uint32)), iota=True, max_key=256)
        ok3 = np.array_equal(pos.copy_to_host(), np.arange(n, dtype=np.uint32))
        del sp, pos
        rx.clear_cache()
        print(f"{backend}: one key apart, argsort {'ok' if ok1 else 'WRONG'}; random keys, sort "
              f"{'ok' if ok2 else 'WRONG'}; all keys 256 with max_key, argsort {'ok' if ok3 else 'WRONG'} "
              f"({time.perf_counter() - t:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
