r"""Beyond one GPU: chapter 2's subset search and chapter 3's population evaluation on a Dask
cluster — one worker per GPU, on one machine or many.

```python
from dask.distributed import Client
import gpulab.distributed as gd, gpulab.subset as ss

client = Client(gd.local_cluster())          # one worker per local GPU (or Client("tcp://host:8786"))
C = ss.correlation(ss.synthetic_returns(250, 200, seed=1))
best = gd.least_correlated(C, 6, client=client)   # == ss.least_correlated(C, 6), bit for bit
```

**The subset search.** The ranks [0, C(n, k)) are cut into contiguous ranges, one Dask task
each; a task runs the single-GPU search of [`gpulab.subset`][gpulab.subset] on its range
(`least_correlated(..., ranks=(start, stop))`: every variant unranks its first subset, so a
range needs nothing from the ranges before it). The packed triangle Q is scattered to every
worker once. The partial answers are merged by the rule of the single-GPU search — the least
value, and among equal values the lowest rank — comparing what the variant's own argmin
compares (squared sums for the incremental scans, distances for the seed variants), so the
answer is the single-GPU answer: the same combination, distance (bit for bit) and rank.

**GP evaluation.** The population is cut into contiguous shards of individuals, the market
scattered once; each task is [`gpulab.gp.evaluate`][gpulab.gp.evaluate] on its shard (an
individual's fitness depends on nothing but its own programs and the market), and the fitness
arrays are concatenated in order: bit for bit the single-device fitness.

**A lost worker** (its process killed, its machine gone): Dask reschedules the tasks that were
on it, and the answer does not change, since every task is a pure function of its range. What it
costs is the chunks it held (at most the time of one chunk times the chunks it had in flight).
Where it held the only copy of the scattered data (Q, the market), the call scatters it again
and resubmits the tasks that have no result yet ([`run_sharing`][gpulab.distributed.run_sharing]).

Bad inputs (shape, dtype, k, variant, chunks) fail on the client, before any task is submitted,
with chapter 2's and chapter 3's own checks. Limits only a worker's device knows (the shared
memory of its GPU) are checked on the worker, and the first task to fail raises its error on
the client, the other tasks cancelled.

Inputs are numpy arrays (a device array is copied to the host once: its triangle is what is
scattered); results are numpy (fitness) and a small [`SubsetResult`][gpulab.subset.SubsetResult].
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass

import numpy as np

from gpulab import device
from gpulab.errors import DtypeError, GpulabError, LimitError

# The default number of chunks of a subset search: CHUNKS_PER_WORKER per worker, but no chunk below
# MIN_CHUNK_RANKS subsets (2**32, about 30 ms of an H200 at 1.5e11 subsets/s); always a multiple of
# the worker count, so that equal chunks give every worker equal work. One per worker since
# 2026-11-26: on two H100s (docs/benchmarks/distributed-h100x2.json, runs 6-8 in
# docs/benchmarks/distributed-runs/) one range per worker took C(200,6) in 253.6-257.6 ms, two
# 259.4, four 271.1-273.8 (each range: a launch's tail on the GPU, and a gap between tasks); the
# price is that a lost worker costs its whole share, and ranges of unequal cost are not evened out
# (C(300,5): 102.5-104.1 ms with one, 94.8-100.3 with four). `chunks=` chooses otherwise.
CHUNKS_PER_WORKER = 1
MIN_CHUNK_RANKS = 1 << 32
SHARDS_PER_WORKER = 1


class NoCluster(GpulabError, RuntimeError):
    """No Dask client was given and none is active, or its cluster has no workers."""


# ----------------------------------------------------------------------------- the cluster


def visible_gpus() -> list[str]:
    """The GPUs this machine lets us use, as ``CUDA_VISIBLE_DEVICES`` entries, found without a
    CUDA context in this process: ``$CUDA_VISIBLE_DEVICES`` when set, else ``nvidia-smi -L``;
    none on the simulator (``GPULAB_DEVICE=sim`` / ``NUMBA_ENABLE_CUDASIM=1``) or without a driver."""
    if device.on_simulator():
        return []
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [d.strip() for d in env.split(",") if d.strip() and d.strip() != "-1"]
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, line in enumerate(l for l in out.splitlines() if l.startswith("GPU "))]


# --8<-- [start:cluster]
def local_cluster(gpus="all", *, cpu_workers: int = 2, **kwargs):
    """A Dask cluster of this machine: one worker process per GPU, one thread each.

    Args:
        gpus: ``"all"``, a count, or a list of ``CUDA_VISIBLE_DEVICES`` entries.
        cpu_workers: on the simulator (no GPU), this many CPU worker processes instead.
        kwargs: passed to the cluster class.

    With dask-cuda installed this is its ``LocalCUDACluster``. Without it, a ``SpecCluster``
    of ``Nanny`` workers does what it does: worker i sees only GPU i
    (``CUDA_VISIBLE_DEVICES=i``, so its device 0 is that GPU) and runs one thread, so one
    search at a time owns the GPU. Workers are new processes (Dask spawns them, never forks),
    and each makes its own device choice with the client's ``GPULAB_DEVICE``.
    """
    from distributed import LocalCluster, Nanny, Scheduler, SpecCluster

    mode = "sim" if device.on_simulator() else "gpu"
    env = {"GPULAB_DEVICE": mode}
    kwargs.setdefault("dashboard_address", None)
    devices = visible_gpus()
    if mode == "sim" or not devices:
        return LocalCluster(n_workers=cpu_workers, threads_per_worker=1, processes=True, env=env, **kwargs)
    if gpus != "all":
        if isinstance(gpus, (int, np.integer)) and not isinstance(gpus, bool):
            if not 1 <= gpus <= len(devices):
                raise LimitError(f"gpus = {gpus}: this machine shows {len(devices)} GPU(s)")
            devices = devices[:int(gpus)]
        else:
            devices = [str(d) for d in gpus]
    try:
        from dask_cuda import LocalCUDACluster
    except ImportError:
        pass
    else:
        return LocalCUDACluster(CUDA_VISIBLE_DEVICES=",".join(devices), threads_per_worker=1, env=env, **kwargs)
    # Worker i is bound to its GPU by ordinal (bind_worker_gpu), not by CUDA_VISIBLE_DEVICES: a
    # spawned worker re-imports the client's main module, whose `import gpulab` initialises CUDA
    # (device detection) before the Nanny's env reaches the process, so a CUDA_VISIBLE_DEVICES set
    # there is ignored and every worker lands on GPU 0 (seen on two H200s: 2 workers, 0.88x).
    # CUDA_DEVICE is pycuda's choice of device for the CUDA C backend.
    seen = visible_gpus()
    workers = {f"gpu-{d}": {"cls": Nanny, "options": {"nthreads": 1, "env": dict(
        env, GPULAB_WORKER_GPU=str(seen.index(d)), CUDA_DEVICE=str(seen.index(d)))}} for d in devices}
    scheduler = {"cls": Scheduler, "options": {"dashboard_address": kwargs.pop("dashboard_address")}}
    return SpecCluster(workers=workers, scheduler=scheduler, **kwargs)
# --8<-- [end:cluster]


_BOUND = False


def bind_worker_gpu() -> None:
    """On a worker of [`local_cluster`][gpulab.distributed.local_cluster]: make its GPU (the
    ordinal in ``GPULAB_WORKER_GPU``) numba's current device, once, before the task's first
    CUDA call; pycuda follows through ``CUDA_DEVICE``. Elsewhere (the client, a worker of
    another cluster, the simulator) it does nothing."""
    global _BOUND
    ordinal = os.environ.get("GPULAB_WORKER_GPU")
    if _BOUND or ordinal is None or device.on_simulator():
        return
    from numba import cuda

    cuda.select_device(int(ordinal))
    _BOUND = True


def worker_device() -> dict:
    """The GPU this process computes on (after binding): name, ordinal and PCI bus id."""
    bind_worker_gpu()
    if device.on_simulator():
        return {"name": "simulator", "ordinal": None, "pci_bus_id": None}
    from numba import cuda

    d = cuda.get_current_device()
    name = d.name.decode() if isinstance(d.name, bytes) else str(d.name)
    return {"name": name, "ordinal": int(d.id), "pci_bus_id": int(d.PCI_BUS_ID)}


def _shared_limit_here() -> tuple[str, int]:
    """On a worker: its address and the shared memory per block (with the opt-in) of its GPU."""
    from gpulab.subset.host import shared_limit

    bind_worker_gpu()
    return _worker_name(), int(shared_limit())


_LIMITS: dict = {}  # (scheduler, workers) -> bytes


def workers_shared_limit(client) -> int:
    """The smallest shared memory per block (bytes, with the opt-in) among the client's
    workers' GPUs: what a default subset search must fit on every worker. Asked once per set of
    workers, by one small task on each (the client itself never opens a CUDA context). Each
    answer names the worker that gave it: a probe that Dask moved to another worker (it may, to
    balance load) is asked again, so no worker's GPU goes unasked."""
    client = _client(client)
    workers = _worker_addresses(client)  # none: NoCluster
    key = (client.scheduler.address, workers)
    if key in _LIMITS:
        return _LIMITS[key]
    answers: dict = {}
    for _ in range(3):
        missing = [w for w in workers if w not in answers]
        if not missing:
            break
        # (allow_other_workers: a worker gone meanwhile leaves no probe waiting for it forever)
        answers.update(client.gather([client.submit(_shared_limit_here, workers=[w], allow_other_workers=True,
                                                    pure=False) for w in missing]))
    if not all(w in answers for w in workers):  # the cluster changed meanwhile: this once, not kept
        return min(answers.values())
    _LIMITS[key] = min(answers[w] for w in workers)
    return _LIMITS[key]


def _worker_addresses(client, wait_s: float = 10.0) -> tuple:
    """The addresses of the client's workers, sorted, read once. The client's view of the
    scheduler is refreshed in the background (every 2 s by default), so right after a worker was
    replaced it can list none for a moment (CI, 2026-11-28: `workers_shared_limit` had counted
    the workers in one read and listed none in the next, then took the minimum of no answers):
    then it asks the scheduler itself, waiting up to `wait_s` for a worker, else `NoCluster`."""
    workers = tuple(sorted(client.scheduler_info().get("workers", {})))
    if not workers:
        try:
            client.wait_for_workers(1, timeout=wait_s)
        except TimeoutError:
            pass
        # the scheduler's own list (not the client's cached view)
        workers = tuple(sorted(client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.workers))))
    if not workers:
        raise NoCluster(f"the Dask cluster at {client.scheduler.address} has no workers")
    return workers


def _client(client):
    if client is not None:
        return client
    try:
        from distributed import get_client

        return get_client()
    except ValueError:
        raise NoCluster("no Dask client: pass client=Client(...) (e.g. Client(gpulab.distributed.local_cluster()) "
                        "or Client('tcp://host:8786'))") from None


def worker_count(client) -> int:
    n = len(client.scheduler_info().get("workers", {}))
    if n == 0:
        raise NoCluster(f"the Dask cluster at {client.scheduler.address} has no workers")
    return n


def _count(value, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise DtypeError(f"{name} must be a whole number, got {value!r}")
    if value < 1:
        raise LimitError(f"{name} = {value}: at least 1")
    return int(value)


# ----------------------------------------------------------------------------- the subset search


@dataclass(frozen=True)
class ChunkResult:
    """One task's answer: the best subset of the ranks [start, stop).

    ``key`` is what the variant's argmin compares (the squared sum, or the distance);
    ``seconds`` the search's time on the worker (upload, kernels, the answer back);
    ``variant`` and ``backend`` what it ran (the concrete choice, never `None`); ``began`` and
    ``ended`` the wall clock (`time.time()`) on the worker when the task began and returned,
    comparable with the client's where both share a host (`call_timeline`)."""

    start: int
    stop: int
    key: float
    distance: float
    rank: int
    seconds: float
    worker: str
    variant: str = ""
    backend: str = ""
    began: float = 0.0
    ended: float = 0.0


# --8<-- [start:split]
def default_chunks(total: int, workers: int) -> int:
    """CHUNKS_PER_WORKER chunks per worker, fewer when chunks would fall under MIN_CHUNK_RANKS
    subsets; always a multiple of the workers (and at most one chunk per subset)."""
    per_worker = max(1, min(CHUNKS_PER_WORKER, total // (workers * MIN_CHUNK_RANKS)))
    return min(total, workers * per_worker)


def split(start: int, stop: int, chunks: int) -> list[tuple[int, int]]:
    """[start, stop) as ``chunks`` contiguous ranges (at most one per rank), sizes within one."""
    chunks = min(chunks, stop - start)
    bounds = [start + (stop - start) * i // chunks for i in range(chunks + 1)]
    return list(zip(bounds[:-1], bounds[1:]))
# --8<-- [end:split]


# --8<-- [start:task]
def search_chunk(Q, n: int, k: int, variant: str, backend: str, params, ranks) -> ChunkResult:
    """The task: the single-GPU search of chapter 2 over the ranks [start, stop), on a worker."""
    from gpulab.subset import search_packed, unrank
    from gpulab.subset.reference import subset_sum
    from gpulab.subset.variants import REGISTRY

    began = time.time()
    bind_worker_gpu()
    t0 = time.perf_counter()
    distance, rank = search_packed(Q, n, k, variant, backend, params, ranks)
    seconds = time.perf_counter() - t0
    # the squared sum of the winner, in the kernels' order and with their additions: the same bits
    key = subset_sum(Q, unrank(n, k, rank)) if REGISTRY.get(variant, backend).policy.compares_sums else distance
    return ChunkResult(ranks[0], ranks[1], float(key), float(distance), int(rank), seconds, _worker_name(),
                       variant, backend, began, time.time())
# --8<-- [end:task]


def _worker_name() -> str:
    """The Dask worker running this task, or "client" (no worker, or no Dask installed: the
    single-device search runs these tasks itself)."""
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return "client"


def call_timeline(parts, began: float, ended: float) -> dict:
    """Where one call's wall time went, in ms, from its chunks' clocks (`ChunkResult.began`,
    `ended`, `seconds`) and the client's `time.time()` before and after the call (one host: a
    cluster across machines has clocks that disagree by more than these spans):

    * `before_first_task`: from the call to the first task's start (checks, scatter, submitting,
      the scheduler's dispatch);
    * `searching` / `in_task_besides_search` / `between_tasks`: for the worker whose last task
      ended last (called the busiest), its search time, its tasks' time outside the search, and
      the idle time between its tasks;
    * `after_last_task`: from the last task's end to the call's return (results to the client, merge).

    `first_task_of_busiest` (from the call to that worker's first task) + `searching` +
    `in_task_besides_search` + `between_tasks` + `after_last_task` = `call`, where a worker runs
    one task at a time (one thread, as `local_cluster` starts them).
    """
    last = max(parts, key=lambda p: p.ended).worker
    mine = sorted((p for p in parts if p.worker == last), key=lambda p: p.began)
    gaps = sum(max(0.0, b.began - a.ended) for a, b in zip(mine, mine[1:]))
    return {"before_first_task": 1e3 * (min(p.began for p in parts) - began),
            "first_task_of_busiest": 1e3 * (mine[0].began - began),
            "searching": 1e3 * sum(p.seconds for p in mine),
            "in_task_besides_search": 1e3 * sum(p.ended - p.began - p.seconds for p in mine),
            "between_tasks": 1e3 * gaps,
            "after_last_task": 1e3 * (ended - max(p.ended for p in parts)),
            "call": 1e3 * (ended - began)}


# --8<-- [start:merge]
def merge(parts) -> ChunkResult:
    """The best of the partial answers: the least key, and among equal keys the lowest rank —
    the single-GPU search's own rule, so the merged answer is its answer."""
    return min(parts, key=lambda p: (p.key, p.rank))
# --8<-- [end:merge]


# --8<-- [start:sharing]
# how often a call scatters its data again after losing its holder
LOST_DATA_RETRIES = 3


def run_sharing(client, data, submit, items, *, on_result=None,
                retries: int = LOST_DATA_RETRIES) -> list:
    """Scatter `data` once and run one task per item (`submit(reference, item)`
    submits it); the results in the order of `items`, each passed to `on_result`
    as it arrives.

    Data sent with `scatter` has no task that could compute it again, and Dask's
    active memory manager drops the copies that no task needs (whatever
    `broadcast` asked): with one task, or the tasks left on one worker, one copy
    remains. When its worker is lost, the tasks waiting for the data are
    cancelled (`FutureCancelledError`). Then, and only when the scattered data
    itself is gone, the data is scattered again and the items without a result
    are submitted again, up to `retries` times; results already back, or
    finished on a worker still there, are kept. Any other error of a task is
    raised here, the other tasks cancelled.
    """
    from concurrent.futures import CancelledError

    from distributed import as_completed

    results: dict[int, object] = {}

    def record(i, result):
        results[i] = result
        if on_result is not None:
            on_result(result)

    for attempt in range(retries + 1):
        # one item (a bare tuple would be many)
        [ref] = client.scatter([data], broadcast=True, hash=False)
        futures = {submit(ref, item): i
                   for i, item in enumerate(items) if i not in results}
        try:
            for future in as_completed(futures):  # a task's error: raised here
                record(futures[future], future.result())
            return [results[i] for i in range(len(items))]
        except CancelledError as error:
            lost = ref.status != "finished"  # the scattered copy is gone
            if lost:  # keep what finished on the workers still there
                for future, i in futures.items():
                    if i not in results and future.status == "finished":
                        record(i, future.result())
            client.cancel(list(futures))
            if not lost or attempt == retries or client.status != "running":
                if lost:
                    error.add_note(f"gpulab.distributed: scattered data lost "
                                   f"with its worker {attempt + 1} time(s) "
                                   f"(LOST_DATA_RETRIES = {retries})")
                raise
        except BaseException:
            client.cancel(list(futures))  # the tasks still queued or running
            raise
    raise AssertionError("unreachable")
# --8<-- [end:sharing]


def prepare_subset(C, k, variant, backend, params):
    """Chapter 2's checks, on the client ([`gpulab.subset.check`][gpulab.subset.check]):
    `(Q on the host, n, k)`, what every task reads."""
    from gpulab.subset import check, squared_packed

    C, n, k = check(C, k, variant, backend, params)
    return squared_packed(C), n, k


def search_chunks(C, k: int, *, client=None, chunks: int | None = None, variant: str | None = None,
                  backend: str | None = None, params: dict | None = None,
                  progress: bool | None = None) -> list[ChunkResult]:
    """Every chunk's answer, in rank order (what [`least_correlated`][gpulab.distributed.least_correlated]
    merges; the benchmark reads their times). `progress`: a bar of the subsets searched, on
    stderr (`None`: only where stderr is a terminal; see `gpulab.progress`)."""
    from gpulab.progress import bar
    from gpulab.subset.combinatorics import choose
    from gpulab.subset import default_choice
    from gpulab.subset.host import SM90_SHARED_OPTIN

    Q, n, k = prepare_subset(C, k, variant, backend, params)
    # the defaults, decided once, here on the client (every task runs the same concrete choice)
    chunks = _count(chunks, "chunks")
    client = _client(client)
    # (no CUDA context on the client: the workers' GPUs are asked, and only where a default needs it)
    limit = workers_shared_limit(client) if variant is None and backend != "cpu" else SM90_SHARED_OPTIN
    variant, backend = default_choice(n, k, variant, backend, limit=limit)
    total = choose(n, k)
    ranges = split(0, total, chunks or default_chunks(total, worker_count(client)))
    # --8<-- [start:submit]
    def submit(q, r):  # one chunk's task, reading Q through its reference `q`
        return client.submit(search_chunk, q, n, k, variant, backend, params, r, pure=False)

    with bar(total=total, desc=f"C({n},{k})", unit="subset", unit_scale=True,
             disable=None if progress is None else not progress) as pbar:
        return run_sharing(client, Q, submit, ranges, on_result=lambda part: pbar.update(part.stop - part.start))
    # --8<-- [end:submit]


# --8<-- [start:entry]
def least_correlated(C, k: int, *, client=None, chunks: int | None = None, variant: str | None = None,
                     backend: str | None = None, params: dict | None = None, progress: bool | None = None):
    """[`gpulab.subset.least_correlated`][gpulab.subset.least_correlated] across a Dask cluster.

    Args:
        C: n×n correlation matrix (numpy; a device array is copied to the host once).
        k: subset size.
        client: a ``distributed.Client``; default: the active one.
        chunks: how many rank ranges (tasks); default [`default_chunks`][gpulab.distributed.default_chunks]
            (one per worker: `CHUNKS_PER_WORKER`).
        variant: chapter 2's variant each task runs; `None`: as in the single-GPU search, the
            variant [`default_choice`][gpulab.subset.variants.default_choice] picks for the size
            and backend (with no backend either, the one measured fastest for the size).
        backend: its backend (`"numba"`, `"cuda-c"` or `"cpu"`); `None`: as in the single-GPU
            search ([`default_choice`][gpulab.subset.variants.default_choice]: CUDA C with the
            variant measured fastest for the size where CUDA C runs, else numba), decided on
            the client: name the backend when the client's machine is not like the workers'.
        params: its parameters (overrides), as for the single-GPU search.
        progress: a bar of the subsets searched on stderr; `None`: only where stderr is a terminal.

    Returns:
        The [`SubsetResult`][gpulab.subset.SubsetResult] of the single-GPU search: the same
        combination, distance and rank.

    Raises:
        ShapeError, DtypeError, LimitError, GpulabError: bad input, before any task is submitted.
        NoCluster: no client, or a cluster without workers.
    """
    from gpulab.subset import SubsetResult, unrank

    best = merge(search_chunks(C, k, client=client, chunks=chunks, variant=variant, backend=backend,
                               params=params, progress=progress))
    n = len(C)
    return SubsetResult(unrank(n, k, best.rank), best.distance, best.rank)
# --8<-- [end:entry]


# ----------------------------------------------------------------------------- GP evaluation


def shard(population, start: int, stop: int) -> tuple:
    """Individuals [start, stop) of a population as plain arrays ``(code, offsets, stats)``
    (byte code sliced, no re-parsing): what a task is sent. Rebuild it with
    `gpulab.gp.Population(code, offsets, stats=stats)`."""
    o = population.offsets
    lo, hi = int(o[2 * start]), int(o[2 * stop])
    return population.code[lo:hi], o[2 * start:2 * stop + 1] - lo, population.stats[2 * start:2 * stop]


def market_payload(market) -> tuple:
    """The market as plain data — numpy arrays, ints and strings, without its device arrays or
    device source — which is what is scattered to the workers; its indicators go along where
    the client has computed them (else each worker computes them once).

    A task must never change the data it was given: Dask may copy a scattered object from one
    worker to another at any time (`scatter(broadcast=True)` replicates it while the first tasks
    already run). The scattered `Market` that chapter 3's evaluation used to get was changed by
    it — its evaluations cache their device copies in it — and a copy made after that could not
    be unpickled on the other worker ("Failed to deserialize"), whose task then waited forever:
    reproduced with two simulator workers, and the likely cause of the CI hangs in
    tests/test_distributed.py (2026-11-22, 2026-11-26). This payload is never changed: the
    market is rebuilt from it on each worker (`worker_market`), and that copy holds the cache.
    (A `Market` now also pickles without its device copies.)"""
    h = market._h
    history = (h.open, h.high, h.low, h.close, h.volume)
    overrides = tuple((int(k), np.asarray(v)) for k, v in h.overrides.items())
    terminals = None if h._terminals is None else tuple(h._terminals)
    names = tuple(str(x) for x in market.names)
    return history, overrides, terminals, (int(market.start), int(market.days)), names, market.dates


_MARKETS: dict = {}  # on a worker: Dask key of a scattered payload -> the market rebuilt from it
_MARKETS_LOCK = threading.Lock()


def worker_market(payload, key=None):
    """The market of `market_payload`, rebuilt once per worker and scattered payload (`key`,
    its Dask key): the tasks of one call share it and the device copies it caches. A market
    whose payload the worker no longer holds (its call is over) is dropped at the next call."""
    from gpulab.gp.market import Market, _History

    with _MARKETS_LOCK:
        try:
            from distributed import get_worker

            held = get_worker().data
        except (ImportError, ValueError):  # not on a worker
            held = None
        for k in [k for k in _MARKETS if held is not None and k not in held]:
            del _MARKETS[k]
        if key is not None and key in _MARKETS:
            return _MARKETS[key]
        history, overrides, terminals, window, names, dates = payload
        h = _History(*history, overrides=dict(overrides), _terminals=terminals)
        m = Market(None, None, None, None, None, names=names, dates=dates, _history=h, _window=window)
        if key is not None and held is not None:
            _MARKETS[key] = m
        return m


def evaluate_shard(code, offsets, stats, market_data, market_key, variant: str, backend: str,
                   params) -> np.ndarray:
    """The task: chapter 3's evaluation of one shard (the arrays of `shard`) on the market of
    the scattered `market_data` (Dask key `market_key`), fitness as numpy."""
    import gpulab.gp as gp
    from gpulab.arrays import to_host

    bind_worker_gpu()
    population = gp.Population(code, offsets, stats=stats)
    market = worker_market(market_data, market_key)
    return np.asarray(to_host(gp.evaluate(population, market, variant, backend, params)))


def evaluate(population, market, *, client=None, shards: int | None = None, variant: str | None = None,
             backend: str = "numba", params: dict | None = None) -> np.ndarray:
    """[`gpulab.gp.evaluate`][gpulab.gp.evaluate] across a Dask cluster: the population in
    contiguous shards of individuals, the market scattered once; the fitness (float64 ``[P]``,
    numpy) is the single-device fitness bit for bit.

    Args:
        population: the individuals (as for ``gpulab.gp.evaluate``).
        market: the market they trade on.
        variant: chapter 3's variant (default: the backend's best, as in gp.evaluate).
        backend: its backend.
        params: its parameters (overrides).
        client: a ``distributed.Client``; default: the active one.
        shards: how many tasks; default SHARDS_PER_WORKER per worker (at most one per individual).

    Raises:
        ProgramError, ProgramLimitError, LimitError, GpulabError: bad input, before any task is submitted.
    """
    import gpulab.gp as gp

    variant = variant or gp.REGISTRY.default(backend)  # the backend's best, as gp.evaluate
    pop = gp.check(population, market, variant, backend, params)
    shards = _count(shards, "shards")
    client = _client(client)
    P = len(pop)
    pieces = split(0, P, shards or SHARDS_PER_WORKER * worker_count(client))

    def submit(m, piece):  # one shard's task, reading the market through its reference `m`
        return client.submit(evaluate_shard, *shard(pop, *piece), m, m.key, variant, backend, params, pure=False)

    return np.concatenate(run_sharing(client, market_payload(market), submit, pieces))


def overhead_ms(client, repeat: int = 50) -> float:
    """Dask's round trip for an empty task (submit, run, gather), median in ms."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        client.submit(_nothing, pure=False).result()
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times))


def _nothing():
    return None


__all__ = ["least_correlated", "evaluate", "local_cluster", "visible_gpus", "search_chunks", "merge", "split",
           "call_timeline",
           "default_chunks", "ChunkResult", "NoCluster", "CHUNKS_PER_WORKER", "MIN_CHUNK_RANKS", "overhead_ms",
           "workers_shared_limit", "run_sharing", "LOST_DATA_RETRIES"]

