"""``gpulab subset search``: the least-correlated subset of a CSV's strategies (or synthetic
ones), on this device, on every local GPU (``--gpus all``), or on a running Dask cluster
(``--scheduler tcp://host:8786``). The parser lives in :mod:`gpulab.cli`."""

from __future__ import annotations

import json
import time

from gpulab.errors import GpulabError


def returns_from(args):
    """``(returns T×n, names)`` from ``--csv FILE`` (its first ``--n`` columns) or ``--synthetic DAYS``."""
    from gpulab.subset.reference import load_returns_csv, synthetic_returns

    if args.csv:
        try:
            R, names = load_returns_csv(args.csv)
        except OSError as exc:
            raise GpulabError(f"--csv {args.csv}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise GpulabError(f"--csv {args.csv}: {' '.join(str(exc).split())}") from None
        n = args.n or R.shape[1]
        if n > R.shape[1]:
            raise GpulabError(f"--n {n}: {args.csv} has {R.shape[1]} strategies (columns)")
        return R[:, :n], names[:n]
    if not args.n:
        raise GpulabError("--n is required with --synthetic (how many strategies)")
    return synthetic_returns(args.synthetic, args.n, seed=args.seed), [f"s{i}" for i in range(args.n)]


def _gpus(text: str):
    return "all" if text == "all" else int(text)


def run_search(args) -> int:
    import gpulab.subset as ss

    R, names = returns_from(args)
    C = ss.correlation(R)
    t0 = time.perf_counter()
    where = "this device"
    if args.gpus is None and args.scheduler is None:
        best = ss.least_correlated(C, args.k, variant=args.variant, backend=args.backend)
    else:
        best, where = _distributed(C, args)
    seconds = time.perf_counter() - t0
    out = {"combination": list(best.combination), "names": [names[i] for i in best.combination],
           "distance": best.distance, "rank": best.rank, "n": C.shape[0], "k": args.k,
           "subsets": ss.choose(C.shape[0], args.k), "seconds": seconds, "where": where,
           "variant": args.variant, "backend": args.backend}
    if args.json:
        print(json.dumps(out))
    else:
        print(f"least-correlated {args.k} of {out['n']} strategies ({out['subsets']:,} subsets, {where}, "
              f"{seconds:.3f} s): {' '.join(out['names'])}  distance {best.distance:.6g}  rank {best.rank}")
    return 0


def _distributed(C, args):
    from distributed import Client

    import gpulab.distributed as gd

    gd._prepare_subset(C, args.k, args.variant, args.backend, None)  # bad input: before any cluster starts
    if args.scheduler:
        try:
            client = Client(args.scheduler, timeout="20s")
        except (OSError, TimeoutError) as exc:
            raise GpulabError(f"--scheduler {args.scheduler}: cannot connect ({' '.join(str(exc).split())})") from None
        with client:
            where = f"Dask cluster {args.scheduler}, {gd.worker_count(client)} worker(s)"
            return gd.least_correlated(C, args.k, client=client, chunks=args.chunks, variant=args.variant,
                                       backend=args.backend), where
    gpus = _gpus(args.gpus)
    with gd.local_cluster(gpus) as cluster, Client(cluster) as client:
        n = gd.worker_count(client)
        kind = "CPU (simulator)" if not gd.visible_gpus() else "GPU"
        where = f"local Dask cluster, {n} {kind} worker(s)"
        return gd.least_correlated(C, args.k, client=client, chunks=args.chunks, variant=args.variant,
                                   backend=args.backend), where
