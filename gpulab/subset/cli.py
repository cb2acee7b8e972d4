"""``gpulab subset search``: the least-correlated subset of a CSV's strategies (or synthetic
ones), on this device, on every local GPU (``--gpus all``), or on a running Dask cluster
(``--scheduler tcp://host:8786``). The parser lives in `gpulab.cli`."""

from __future__ import annotations

import json
import sys
import time

from gpulab.errors import GpulabError

# Subsets per second measured on the machine this was written on (2 shared CPU cores): numba's
# simulator running the incremental kernel (about 4e4 to 8e4 once C(n, k) is above 1e5; each call
# also costs about 0.3 s) and the CPU baseline cpu_parallel (about 1e8, after a 3 s compile).
SIM_RATE = 5e4
CPU_RATE = 1e8
WARN_SECONDS = 60
# With a progress bar on this device the ranks are searched in chunks of at least this many
# subsets (the bar moves once per chunk): about 5 s each on the simulator, so that the ~0.3 s
# a call costs there stays small; on a GPU 2**32 (what gpulab.distributed gives a task).
SIM_CHUNK = 1 << 18
CPU_CHUNK = 1 << 28
GPU_CHUNK = 1 << 32
MAX_CHUNKS = 200


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


def estimate_seconds(subsets: int, backend: str) -> float | None:
    """About how long a search of `subsets` takes on this machine without a GPU (the simulator,
    or the CPU baseline); `None` on a GPU."""
    from gpulab import device

    if backend == "cpu":
        return subsets / CPU_RATE
    return subsets / SIM_RATE if device.on_simulator() else None


def _duration(seconds: float) -> str:
    for unit, size in (("years", 365 * 86400), ("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:,.0f} {unit}"
    return f"{seconds:.0f} s"


def _rate(x: float) -> str:
    return f"{x:.0e}".replace("e+0", "e").replace("e+", "e")


def warn_if_long(subsets: int, n: int, k: int, backend: str) -> None:
    """One line on stderr, before a search that would take minutes or more here."""
    est = estimate_seconds(subsets, backend)
    if est is None or est < WARN_SECONDS:
        return
    where = ("the CPU baseline" if backend == "cpu" else "numba's CUDA simulator (no GPU)")
    print(f"gpulab subset search: C({n},{k}) = {subsets:,} subsets take about {_duration(est)} on {where} at "
          f"~{_rate(CPU_RATE if backend == 'cpu' else SIM_RATE)} subsets/s (a GPU-sized search: an H200 does "
          f"~1.5e11/s); for a quick run use e.g. --n 30 --k 3", file=sys.stderr, flush=True)


def _chunk_size(backend: str) -> int:
    from gpulab import device

    return CPU_CHUNK if backend == "cpu" else SIM_CHUNK if device.on_simulator() else GPU_CHUNK


def search_here(C, k: int, variant: str, backend: str, chunk: int | None = None, progress: bool | None = None):
    """The search on this device, with a progress bar of the subsets searched where one is drawn
    (see [`gpulab.progress`][gpulab.progress]): then the ranks go in chunks of `chunk` subsets
    (default: by backend and device), merged by the single search's own rule, so the answer is
    `least_correlated(C, k, variant, backend)`'s."""
    import gpulab.distributed as gd
    import gpulab.subset as ss
    from gpulab import progress as pg

    disable = pg.enabled(None if progress is None else not progress)
    shown = disable is False or (disable is None and sys.stderr.isatty())
    total = ss.choose(len(C), k)
    chunks = min(MAX_CHUNKS, total // (chunk or _chunk_size(backend)))
    if not shown or chunks < 2:
        return ss.least_correlated(C, k, variant=variant, backend=backend)
    Q, n, k = gd.prepare_subset(C, k, variant, backend, None)
    parts = []
    with pg.bar(total=total, desc=f"C({n},{k})", unit="subset", unit_scale=True, disable=False) as pbar:
        for ranks in gd.split(0, total, chunks):
            parts.append(gd.search_chunk(Q, n, k, variant, backend, None, ranks))
            pbar.update(ranks[1] - ranks[0])
    best = gd.merge(parts)
    return ss.SubsetResult(ss.unrank(n, k, best.rank), best.distance, best.rank)


def run_search(args) -> int:
    import gpulab.subset as ss
    from gpulab import device
    from gpulab.subset import host
    from gpulab.subset.variants import REGISTRY

    R, names = returns_from(args)
    C = ss.correlation(R)
    n, _ = host.check_form(C, args.k)
    # the defaults decided here, once: what runs, and what --json reports, is the concrete choice
    # (a search on a cluster chooses for its workers without asking this machine's GPU: no CUDA
    # context on the client)
    local = getattr(args, "gpus", None) is None and getattr(args, "scheduler", None) is None
    named = (args.variant, args.backend)  # on a cluster the defaults are decided again for its workers' GPUs
    limit = None if local or device.on_simulator() else host.SM90_SHARED_OPTIN  # None: ask this device
    args.variant, args.backend = ss.default_choice(n, args.k, args.variant, args.backend, limit=limit)
    REGISTRY.get(args.variant, args.backend)  # an unknown variant, before any estimate
    subsets = ss.choose(n, args.k)
    if args.scheduler is None:  # on a cluster the work runs on its workers, not on this machine
        warn_if_long(subsets, n, args.k, args.backend)
    t0 = time.perf_counter()
    where = "this device"
    if args.gpus is None and args.scheduler is None:
        best = search_here(C, args.k, args.variant, args.backend)
    else:
        best, where = _distributed(C, args, named)
    seconds = time.perf_counter() - t0
    out = {"combination": list(best.combination), "names": [names[i] for i in best.combination],
           "distance": best.distance, "rank": best.rank, "n": n, "k": args.k,
           "subsets": subsets, "seconds": seconds, "where": where,
           "variant": args.variant, "backend": args.backend}
    if args.json:
        print(json.dumps(out))
    else:
        print(f"least-correlated {args.k} of {out['n']} strategies ({out['subsets']:,} subsets, {where}, "
              f"{seconds:.3f} s): {' '.join(out['names'])}  distance {best.distance:.6g}  rank {best.rank}")
    return 0


def _distributed(C, args, named):
    from distributed import Client

    import gpulab.distributed as gd
    import gpulab.subset as ss

    ss.check(C, args.k, args.variant, args.backend)  # bad input: before any cluster starts

    def search(client, where):
        # a default variant on a GPU backend: chosen for the smallest shared memory among the workers' GPUs
        if named[0] is None and named[1] != "cpu":
            args.variant, args.backend = ss.default_choice(len(C), args.k, *named,
                                                           limit=gd.workers_shared_limit(client))
        return gd.least_correlated(C, args.k, client=client, chunks=args.chunks, variant=args.variant,
                                   backend=args.backend), where

    if args.scheduler:
        try:
            client = Client(args.scheduler, timeout="20s")
        except (OSError, TimeoutError) as exc:
            raise GpulabError(f"--scheduler {args.scheduler}: cannot connect ({' '.join(str(exc).split())})") from None
        with client:
            return search(client, f"Dask cluster {args.scheduler}, {gd.worker_count(client)} worker(s)")
    gpus = _gpus(args.gpus)
    with gd.local_cluster(gpus) as cluster, Client(cluster) as client:
        n = gd.worker_count(client)
        kind = "CPU (simulator)" if not gd.visible_gpus() else "GPU"
        return search(client, f"local Dask cluster, {n} {kind} worker(s)")
