"""Does splitting a subset search into rank ranges cost GPU time without Dask? (appendix: one Dask
worker's chunks summed to 8% over the whole search on one GPU). One process, one GPU: the whole
search, then the same ranks as 4, 8 and 16 equal chunks searched one after another; wall clock
after a device synchronize, median of --repeat after a warm-up. Needs a GPU.

    python scripts/subset_chunk_cost.py --n 200 --k 6
"""
from __future__ import annotations

import argparse
import statistics
import time

from gpulab import subset
from gpulab.distributed import split
from gpulab.subset.combinatorics import choose
from gpulab.subset.reference import correlation, squared_packed, synthetic_returns
from numba import cuda


def wall(f, repeat):
    f()
    cuda.synchronize()
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        cuda.synchronize()
        out.append(1e3 * (time.perf_counter() - t0))
    return statistics.median(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--k", type=int, default=6)
    ap.add_argument("--variant", default="incremental")
    ap.add_argument("--backend", default="cuda-c")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--max-blocks", nargs="+", type=int, default=[None],
                    help="MAX_BLOCKS values to compare (default: the registry's)")
    ap.add_argument("--chunks", nargs="+", type=int, default=[4, 8, 16])
    a = ap.parse_args()
    for mb in a.max_blocks:
        run(a, None if mb is None else {"MAX_BLOCKS": mb})


def run(a, params):
    C = correlation(synthetic_returns(500, a.n, factors=3, strength=0.5, seed=7))
    Q = squared_packed(C)
    dQ = cuda.to_device(Q)
    total = choose(a.n, a.k)
    whole = wall(lambda: subset.search_packed(Q, a.n, a.k, a.variant, a.backend, params), a.repeat)
    print(f"C({a.n},{a.k}) {a.backend}/{a.variant} {params or 'registry params'}: whole {whole:.2f} ms")
    for chunks in a.chunks:
        ranges = split(0, total, chunks)
        per = [wall(lambda r=r: subset.search_packed(Q, a.n, a.k, a.variant, a.backend, params, ranks=r), a.repeat)
               for r in ranges]
        allq = wall(lambda: [subset.search_packed(dQ, a.n, a.k, a.variant, a.backend, params, ranks=r) for r in ranges],
                    a.repeat)
        print(f"  {chunks:2} chunks: sum of chunks {sum(per):.1f} ms ({sum(per) / whole:.3f}x whole); back to back {allq:.1f} ms;"
              f" per chunk {min(per):.1f}-{max(per):.1f} ms")


if __name__ == "__main__":
    main()
