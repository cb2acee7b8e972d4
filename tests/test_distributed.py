"""Beyond one GPU (`gpulab.distributed`): a Dask cluster of two worker processes gives the
single-device answers — subset search (combination, distance bit for bit, rank) and GP fitness
(bit for bit) — for any chunking, after a worker is killed mid-run, and rejects bad input
before any task is submitted. On the simulator the workers are CPU processes running numba's
simulator; on a GPU machine (scripts/gpu_dask.sh) one worker per GPU."""

import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

import gpulab.distributed as gd  # noqa: E402
import gpulab.gp as gp  # noqa: E402
import gpulab.subset as ss  # noqa: E402
from gpulab.errors import DtypeError, GpulabError, LimitError, ShapeError  # noqa: E402
from gpulab.gp.breeding import ramped_half_and_half  # noqa: E402
from gpulab.subset.combinatorics import choose  # noqa: E402
from tests.conftest import ON_SIMULATOR, child_env  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SMALL = dict(PARTITION=13, CHUNK=5, MAX_BLOCKS=2)  # several partitions / chunks inside each task


@pytest.fixture(scope="module")
def cluster():
    """Two worker processes, one thread each: CPU workers on the simulator, GPUs on a GPU machine
    (which must have two: on one GPU these tests are skipped, not failed)."""
    if not ON_SIMULATOR and len(gd.visible_gpus()) < 2:
        pytest.skip(f"two GPUs needed for a two-worker GPU cluster; this machine shows {len(gd.visible_gpus())}")
    import dask

    # A worker that misses its heartbeats is restarted after worker-ttl (checked every worker-ttl):
    # 2 minutes instead of Dask's 5, so a stalled worker costs a test minutes, not ten (CI, 2026-11-27:
    # a worker silent for 585 s; the calls now survive its restart, gpulab.distributed.run_sharing).
    with dask.config.set({"distributed.scheduler.worker-ttl": "120s"}):
        with gd.local_cluster(2 if not ON_SIMULATOR else "all", cpu_workers=2) as c:
            yield c


@pytest.fixture(scope="module")
def client(cluster):
    with distributed.Client(cluster) as c:
        c.wait_for_workers(2, timeout=120)
        yield c


def corr(rng, n):
    return ss.correlation(rng.standard_normal((n + 6, n)))


def test_workers_make_the_clients_device_choice(client):
    modes = client.run(lambda: __import__("gpulab").device.MODE)
    assert len(modes) == 2 and set(modes.values()) == {"sim" if ON_SIMULATOR else "gpu"}, modes
    if not ON_SIMULATOR:  # one GPU each: worker i computes on the i-th GPU
        used = client.run(gd.worker_device)
        assert sorted(u["ordinal"] for u in used.values()) == [0, 1], used


# ----------------------------------------------------------------------------- the subset search


@pytest.mark.parametrize("n,k,chunks", [
    (10, 4, None),  # the default rule
    (10, 4, 1),  # one task: the single-GPU search
    (11, 3, 4),  # chunk boundaries unaligned to the kernels' chunks and partitions
    (9, 8, 4),  # 9 subsets
    (6, 2, 40),  # more chunks than subsets (15): one subset per task
    (1, 1, 3),  # one subset in all
])
def test_subset_search_equals_one_device(client, rng, n, k, chunks):
    C = corr(rng, n)
    one = ss.least_correlated(C, k, params=SMALL)
    got = gd.least_correlated(C, k, client=client, chunks=chunks, params=SMALL)
    assert got == one  # dataclass equality: combination, distance (exact float) and rank


@pytest.mark.parametrize("variant,backend", [("shared", "numba"), ("global", "numba"), ("cpu_parallel", "cpu")])
def test_other_variants_and_the_cpu_backend(client, rng, variant, backend):
    C = corr(rng, 9)
    params = SMALL if backend != "cpu" else dict(CHUNK=4)
    one = ss.least_correlated(C, 3, variant, backend, params=params)
    assert gd.least_correlated(C, 3, client=client, chunks=3, variant=variant, backend=backend, params=params) == one


def test_chunks_cover_the_ranks_once(client, rng):
    """Every rank in exactly one task, in order; each task's answer lies in its range."""
    C = corr(rng, 9)
    parts = gd.search_chunks(C, 3, client=client, chunks=5, params=SMALL)
    assert [p.start for p in parts] == sorted(p.start for p in parts)
    assert parts[0].start == 0 and parts[-1].stop == choose(9, 3)
    assert all(a.stop == b.start for a, b in zip(parts, parts[1:]))
    assert all(p.start <= p.rank < p.stop for p in parts)
    assert {p.worker for p in parts} <= set(client.scheduler_info()["workers"])


def test_call_timeline_adds_up(rng):
    """Two workers, tasks at random times: the busiest worker is the one that ended last, its
    parts add up to the call, and gaps between its tasks are counted once each."""
    t0 = 1_000.0 + rng.uniform(0, 100)
    parts, w_end = [], {}
    for w in ("a", "b"):
        t = t0 + rng.uniform(0.001, 0.005)
        for i in range(int(rng.integers(1, 5))):
            busy = rng.uniform(0.01, 0.05)
            search = busy * rng.uniform(0.5, 0.99)
            parts.append(gd.ChunkResult(i, i + 1, 0.0, 0.0, i, search, w, began=t, ended=t + busy))
            t += busy + rng.uniform(0.0, 0.004)  # a gap before the next task
        w_end[w] = parts[-1].ended
    end = max(w_end.values()) + rng.uniform(0.001, 0.01)
    got = gd.call_timeline(parts, t0, end)
    last = max(w_end, key=w_end.get)
    mine = sorted((p for p in parts if p.worker == last), key=lambda p: p.began)
    assert math.isclose(got["call"], 1e3 * (end - t0))
    assert math.isclose(got["searching"], 1e3 * sum(p.seconds for p in mine))
    assert math.isclose(got["between_tasks"], 1e3 * sum(b.began - a.ended for a, b in zip(mine, mine[1:])),
                        abs_tol=1e-9)
    assert math.isclose(got["before_first_task"], 1e3 * (min(p.began for p in parts) - t0))
    total = sum(got[k] for k in ("first_task_of_busiest", "searching", "in_task_besides_search", "between_tasks",
                                 "after_last_task"))
    assert math.isclose(total, got["call"], rel_tol=1e-9)


def test_split_and_default_chunks(monkeypatch):
    assert gd.split(0, 10, 3) == [(0, 3), (3, 6), (6, 10)]
    assert gd.split(5, 8, 10) == [(5, 6), (6, 7), (7, 8)]
    total = choose(200, 6)
    assert gd.default_chunks(total, 2) == 2 * gd.CHUNKS_PER_WORKER
    monkeypatch.setattr(gd, "CHUNKS_PER_WORKER", 4)  # (the default is 1: then MIN_CHUNK_RANKS never binds)
    assert gd.default_chunks(total, 2) == 8
    assert gd.default_chunks(3 * gd.MIN_CHUNK_RANKS, 2) == 2  # no chunk under MIN_CHUNK_RANKS ...
    assert gd.default_chunks(100, 3) == 3  # ... but at least one per worker
    assert gd.default_chunks(2, 3) == 2  # and at most one per subset
    for chunks in (1, 7, 8):
        r = gd.split(0, total, chunks)
        assert r[0][0] == 0 and r[-1][1] == total and max(b - a for a, b in r) - min(b - a for a, b in r) <= 1


def test_ties_across_chunks_go_to_the_lowest_rank(client):
    """Every subset has the same distance: the answer is rank 0 whatever the chunking, and a
    merge that kept a later chunk's winner (highest rank, or the last to finish) would fail."""
    n, k = 9, 3
    C = np.full((n, n), 0.3)
    np.fill_diagonal(C, 1.0)
    parts = gd.search_chunks(C, k, client=client, chunks=4, params=SMALL)
    assert len({p.key for p in parts}) == 1 and len({p.rank for p in parts}) == 4  # a real tie between chunks
    assert gd.merge(parts).rank == 0
    assert max(parts, key=lambda p: (p.key, p.rank)).rank != 0  # the wrong rule is caught
    assert gd.merge(reversed(parts)).rank == 0  # order of arrival does not matter
    assert gd.least_correlated(C, k, client=client, chunks=4, params=SMALL) == ss.least_correlated(C, k)


def _sqrt_collision():
    """Two neighbouring doubles whose squares differ but whose distances sqrt(2 c^2) are one
    double (about one draw in six has one; near 0.3 no neighbours do, so draw, do not walk)."""
    draws = np.random.default_rng(2026)
    for _ in range(100_000):
        c1 = float(draws.uniform(0.1, 0.9))
        c2 = float(np.nextafter(c1, 1.0))
        if c1 * c1 < c2 * c2 and math.sqrt(2 * c1 * c1) == math.sqrt(2 * c2 * c2):
            return c1, c2
    raise AssertionError("no pair of neighbouring doubles with equal distances found")


def test_the_merge_compares_what_the_variant_compares(client):
    """n = 3, k = 2: subset {0,1} (rank 0) has the larger squared sum, subset {0,2} (rank 1) the
    smaller, and both have the same distance. The incremental search compares sums (rank 1 wins);
    a merge comparing distances would pick rank 0 — chunked one subset per task, it must not."""
    c1, c2 = _sqrt_collision()
    C = np.eye(3)
    C[0, 1] = C[1, 0] = c2
    C[0, 2] = C[2, 0] = c1
    C[1, 2] = C[2, 1] = 0.9
    one = ss.least_correlated(C, 2, "incremental")  # (named: on a GPU with pycuda the default at this size is a seed variant)
    assert one.rank == 1
    parts = gd.search_chunks(C, 2, client=client, chunks=3, variant="incremental")
    assert parts[0].distance == parts[1].distance and parts[0].key > parts[1].key
    assert gd.least_correlated(C, 2, client=client, chunks=3, variant="incremental") == one
    assert min(parts, key=lambda p: (p.distance, p.rank)).rank == 0  # a distance merge would be wrong here
    # the seed variants compare distances: their single-GPU answer is rank 0, and so is the merge
    seed = ss.least_correlated(C, 2, "shared")
    assert seed.rank == 0 and gd.least_correlated(C, 2, client=client, chunks=3, variant="shared") == seed


def test_a_default_search_fits_the_workers_smallest_gpu(client, rng, monkeypatch):
    """The client chooses the default variant for the smallest shared memory among its workers'
    GPUs (asked once per set of workers, by a task on each), not for sm_90's or its own device's."""
    import gpulab.subset as subset_pkg
    from gpulab.subset.host import shared_limit

    assert gd.workers_shared_limit(client) == shared_limit()  # the simulator's workers report its limit
    seen = []
    real = subset_pkg.default_choice

    def spy(*a, **kw):
        seen.append(kw.get("limit"))  # (chapter 2's own checks call it too, with their limit)
        return real(*a, **kw)

    asked = []
    monkeypatch.setattr(subset_pkg, "default_choice", spy)
    monkeypatch.setattr(gd, "workers_shared_limit", lambda c: asked.append(c) or 123_456)
    C = corr(rng, 8)
    assert gd.least_correlated(C, 3, client=client, params=SMALL) == ss.least_correlated(C, 3, params=SMALL)
    assert len(asked) == 1 and 123_456 in seen  # the workers asked once, their answer used for the choice
    seen.clear()
    gd.least_correlated(C, 3, client=client, variant="incremental", params=SMALL)  # named: no question asked
    assert len(asked) == 1 and 123_456 not in seen


# ----------------------------------------------------------------------------- GP evaluation


def population(P, seed=11):
    code, offsets = ramped_half_and_half(P, 2, 4, 255, 0.3, seed)
    return gp.Population(code, offsets)


@pytest.mark.parametrize("P,shards", [(5, None), (5, 1), (7, 3), (3, 8)])
def test_gp_fitness_equals_one_device(client, P, shards):
    market = gp.synthetic_market(stocks=3, days=300, seed=2)
    pop = population(P)
    one = gp.evaluate(pop, market)
    got = gd.evaluate(pop, market, client=client, shards=shards)
    assert got.dtype == np.float64 and got.shape == (P,)
    assert np.array_equal(got, one), (got, one)  # bit for bit, in order


def test_gp_shards_are_the_individuals():
    pop = population(7)
    parts = [gp.Population(*gd.shard(pop, a, b)[:2]) for a, b in gd.split(0, 7, 3)]  # stats recomputed
    assert sum(len(p) for p in parts) == 7
    assert [str(x) for p in parts for x in p] == [str(x) for x in pop]
    stats = np.concatenate([gd.shard(pop, a, b)[2] for a, b in gd.split(0, 7, 3)])
    assert np.array_equal(stats, np.concatenate([p.stats for p in parts]))  # the shipped stats are the shard's own


def _globals(obj) -> set[str]:
    """The top-level modules whose classes or functions unpickling `obj` imports (recorded by
    the unpickler itself, as it loads)."""
    import io
    import pickle

    seen = set()

    class Recorder(pickle.Unpickler):
        def find_class(self, module, name):
            seen.add(module.split(".")[0])
            return super().find_class(module, name)

    buffers = []
    data = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    Recorder(io.BytesIO(data), buffers=buffers).load()
    return seen


PLAIN = {"numpy", "builtins", "_codecs", "copyreg"}


def test_what_a_gp_call_scatters_is_plain_and_never_changed(rng):
    """The scattered market is numpy arrays and builtins (dates too), and a task leaves it
    unchanged: Dask may copy it to another worker after a task ran (the CI hangs: a scattered
    Market that evaluation had changed failed to unpickle there). The worker's market gives the
    client's fitness, and a Market that has been evaluated pickles without its device copies."""
    import pickle

    from distributed.protocol import deserialize, serialize

    market = gp.synthetic_market(stocks=2, days=280, seed=int(rng.integers(2**31)))
    dated = gp.Market(*market.ohlcv(window=False).values(), names=("A", "B"),
                      dates=np.datetime64("2020-01-01") + np.arange(market.history_days))
    pop = population(6, seed=int(rng.integers(2**31)))
    for m in (market, dated):
        one = gp.evaluate(pop, m)  # the client's evaluation: indicators computed, shipped along
        payload = gd.market_payload(m)
        assert payload[2] is not None
        assert _globals(payload) <= PLAIN, _globals(payload)
        assert _globals(gd.shard(pop, 1, 4)) <= PLAIN
        before = pickle.dumps(payload, protocol=5)
        got = gd.evaluate_shard(*gd.shard(pop, 0, 6), payload, None, gp.REGISTRY.default("numba"), "numba", None)
        assert np.array_equal(got, one)
        assert pickle.dumps(payload, protocol=5) == before  # the task changed nothing it was given
        copy = deserialize(*serialize(payload))  # what a transfer to another worker does
        assert np.array_equal(gd.evaluate_shard(*gd.shard(pop, 0, 6), copy, None, gp.REGISTRY.default("numba"),
                                                "numba", None), one)
    assert any(isinstance(k, tuple) and k[0] == "device" for k in market._cache)  # the premise: copies cached
    again = pickle.loads(pickle.dumps(market))  # evaluated (device copies cached): still a plain pickle
    assert not any(isinstance(k, tuple) and k[0] == "device" for k in again._cache)
    assert np.array_equal(gp.evaluate(pop, again), gp.evaluate(pop, market))


def test_workers_answer_for_themselves(client):
    """Each worker's GPU is asked (the answers name who gave them), once per set of workers."""
    gd._LIMITS.clear()
    answers = dict(client.gather([client.submit(gd._shared_limit_here, workers=[w], allow_other_workers=False,
                                                pure=False) for w in client.scheduler_info()["workers"]]))
    assert sorted(answers) == sorted(client.scheduler_info()["workers"])
    assert gd.workers_shared_limit(client) == min(answers.values())
    assert len(gd._LIMITS) == 1


def test_gp_other_variant_and_cpu(client):
    market = gp.synthetic_market(stocks=2, days=290, seed=3)
    pop = population(4, seed=5)
    for variant, backend in (("register", "numba"), ("cpu_bitsliced", "cpu")):
        one = gp.evaluate(pop, market, variant, backend)
        assert np.array_equal(gd.evaluate(pop, market, client=client, shards=2, variant=variant, backend=backend), one)


# ----------------------------------------------------------------------------- bad input: before any task


class NoTasks:
    """A client that fails the test if anything is scattered, submitted or asked of the cluster."""

    def __getattr__(self, name):
        raise AssertionError(f"client.{name} was used before the input was checked")


@pytest.mark.parametrize("make,k,kwargs,error,pattern", [
    (lambda: np.eye(4)[:3], 2, {}, ShapeError, "square"),
    (lambda: np.eye(4, dtype=complex), 2, {}, DtypeError, "real numbers"),
    (lambda: np.eye(4), 5, {}, LimitError, "outside 1 <= k <= n"),
    (lambda: np.eye(20), 17, {}, LimitError, "MAX_K = 16"),
    (lambda: np.full((4, 4), np.nan), 2, {}, ShapeError, "NaN"),
    (lambda: np.eye(4), 2, dict(variant="fastest"), GpulabError, "no variant 'fastest'"),
    (lambda: np.eye(4), 2, dict(backend="gpu"), GpulabError, "unknown backend 'gpu'; expected one of numba, cuda-c, cpu"),
    (lambda: np.eye(4), 2, dict(chunks=0), LimitError, "chunks = 0"),
    (lambda: np.eye(4), 2, dict(chunks=2.5), DtypeError, "chunks must be a whole number"),
    (lambda: np.eye(4), 2, dict(chunks=True), DtypeError, "chunks must be a whole number"),
    (lambda: np.eye(4), 2, dict(params=[1]), DtypeError, "params must be a dict"),
    (lambda: np.eye(300), 5, dict(variant="incremental"), LimitError, "shared memory"),  # named: the default reads Q from global memory there
])
def test_bad_subset_input_fails_before_any_task(make, k, kwargs, error, pattern):
    if pattern == "shared memory" and not ON_SIMULATOR:
        pytest.skip("a GPU client leaves the device's shared-memory limit to its workers")
    with pytest.raises(error, match=pattern):
        gd.least_correlated(make(), k, client=NoTasks(), **kwargs)


def test_bad_gp_input_fails_before_any_task():
    market = gp.synthetic_market(stocks=2, days=290, seed=3)
    deep = "(AND NVIG " * 14 + "NVIG" + ")" * 14  # 15 booleans on the bit-sliced stack (BSTACK = 12)
    with pytest.raises(gp.ProgramLimitError, match="too deep"):
        gd.evaluate([(deep, "NVIG")], market, client=NoTasks())
    with pytest.raises(gp.ProgramError):
        gd.evaluate([("(AND MA10)", "NVIG")], market, client=NoTasks())
    with pytest.raises(LimitError, match="shards = 0"):
        gd.evaluate(population(3), market, client=NoTasks(), shards=0)
    with pytest.raises(GpulabError, match="no variant 'fastest'"):
        gd.evaluate(population(3), market, client=NoTasks(), variant="fastest")
    with pytest.raises(DtypeError, match="market must be a gpulab.gp.Market"):
        gd.evaluate(population(3), "market", client=NoTasks())


def test_an_error_on_a_worker_reaches_the_client(client, rng):
    """A limit only the worker checks (here: a block of 16 threads, under the incremental
    kernels' one warp) is raised on the client, with its type and message. The variant is named:
    a search that names none runs the fastest for its size, CUDA C's on a GPU with pycuda,
    which may take such a block."""
    with pytest.raises(LimitError, match="at least one full warp"):
        gd.least_correlated(corr(rng, 8), 3, client=client, chunks=2, variant="incremental", backend="numba",
                            params=dict(BLOCK=16))


# ----------------------------------------------------------------------------- the command line


def gpulab_cli(*args):
    env = child_env()
    return subprocess.run([sys.executable, "-m", "gpulab", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=300)


def test_cli_search_on_a_running_scheduler(client, tmp_path):
    import json

    R = ss.synthetic_returns(30, 8, seed=4)
    path = tmp_path / "returns.csv"
    np.savetxt(path, R, delimiter=",", header=",".join(f"fund{i}" for i in range(8)), comments="")
    p = gpulab_cli("subset", "search", "--csv", str(path), "--k", "3", "--scheduler", client.scheduler.address,
                   "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    one = ss.least_correlated(ss.correlation(R), 3)
    assert (tuple(out["combination"]), out["distance"], out["rank"]) == (one.combination, one.distance, one.rank)
    assert out["names"] == [f"fund{i}" for i in one.combination] and "2 worker(s)" in out["where"]


@pytest.mark.skipif(not ON_SIMULATOR, reason="the GPU run tests --gpus in scripts/gpu_dask.sh's benchmark")
def test_cli_search_on_all_local_gpus():
    import json

    p = gpulab_cli("subset", "search", "--synthetic", "40", "--n", "7", "--k", "3", "--gpus", "all", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    one = ss.least_correlated(ss.correlation(ss.synthetic_returns(40, 7, seed=0)), 3)
    assert (out["distance"], out["rank"]) == (one.distance, one.rank) and "local Dask cluster" in out["where"]


@pytest.mark.parametrize("args,fragment", [
    (["--synthetic", "40", "--n", "5", "--k", "6", "--gpus", "all"], "k = 6 is outside 1 <= k <= n = 5"),
    (["--synthetic", "40", "--k", "3"], "--n is required with --synthetic"),
    (["--csv", "/nonexistent.csv", "--k", "3"], "--csv /nonexistent.csv"),
    (["--synthetic", "40", "--n", "5", "--k", "2", "--gpus", "0"], "--gpus: 0 is below the minimum of 1"),
    (["--synthetic", "40", "--n", "5", "--k", "2", "--gpus", "2", "--scheduler", "tcp://x:1"], "not allowed with"),
    (["--n", "5", "--k", "2"], "one of the arguments --csv --synthetic is required"),
])
def test_cli_mistakes_are_one_line(args, fragment):
    p = gpulab_cli("subset", "search", *args)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and fragment in lines[0], p.stderr


def test_the_cli_on_a_cluster_chooses_for_its_workers(client, rng, monkeypatch):
    """`gpulab subset search --scheduler`: a default variant is decided again after connecting,
    for the workers' smallest shared memory, and what runs (and --json reports) is that choice;
    a named variant is kept."""
    import argparse

    from gpulab.subset import cli as subset_cli
    from gpulab.subset import host
    from gpulab.subset.variants import BEYOND_SHARED, REGISTRY, default_backend

    inc = REGISTRY.get("incremental", "numba")
    block = host.geometry(inc.launch_params())[0]
    small = int(rng.integers(96, 164)) * 1024
    n = next(n for n in range(2, 238) if host.shared_bytes(inc.policy, n, 5, block) > small)
    C = ss.correlation(rng.standard_normal((n + 6, n)))
    ran = []
    monkeypatch.setattr(gd, "workers_shared_limit", lambda c: small)
    monkeypatch.setattr(gd, "least_correlated", lambda C, k, **kw: ran.append((kw["variant"], kw["backend"])))
    # naming nothing: the default backend (CUDA C on a GPU with pycuda, numba on the simulator)
    for named, want in (((None, None), (BEYOND_SHARED, default_backend())),
                        (("incremental", "numba"), ("incremental", "numba"))):
        args = argparse.Namespace(k=5, variant=named[0] or "incremental", backend="numba", chunks=None,
                                  scheduler=client.scheduler.address, gpus=None)
        subset_cli._distributed(C, args, named)
        assert ran[-1] == want and (args.variant, args.backend) == want  # what runs is what --json reports


def test_a_moment_with_no_workers_listed_is_waited_out():
    """The client's view of the scheduler is refreshed in the background: right after a worker
    was replaced it can list no worker (CI, 2026-11-28: `workers_shared_limit` failed with
    "min() arg is an empty sequence"). The worker list then comes from the scheduler itself,
    after waiting for a worker; a cluster that really has none is `NoCluster`. A stand-in client
    (no cluster needed) makes both cases happen by construction."""

    class Stale:
        def __init__(self, real):
            self.real, self.waited = real, 0
            self.scheduler = type("S", (), {"address": "tcp://stand-in:1"})()

        def scheduler_info(self):
            return {"workers": {}}  # the stale view

        def wait_for_workers(self, n, timeout=None):
            self.waited += 1
            if not self.real:
                raise TimeoutError

        def run_on_scheduler(self, fn):
            sched = type("D", (), {"workers": {w: None for w in self.real}})()
            return fn(dask_scheduler=sched)

    c = Stale(["tcp://b:2", "tcp://a:1"])
    assert gd._worker_addresses(c) == ("tcp://a:1", "tcp://b:2") and c.waited == 1
    with pytest.raises(gd.NoCluster, match="no workers"):
        gd._worker_addresses(Stale([]), wait_s=0.1)


def test_the_worker_list_from_the_scheduler_itself(client, monkeypatch):
    """The same path on a real cluster: with the client's view emptied, the addresses come from
    the scheduler and are the workers the view listed."""
    listed = tuple(sorted(client.scheduler_info()["workers"]))
    monkeypatch.setattr(client, "scheduler_info", lambda **kw: {"workers": {}})
    assert gd._worker_addresses(client) == listed and len(listed) == 2



# ----------------------------------------------------------------------------- a worker lost mid-run (last: it restarts one)


@pytest.mark.skipif(not ON_SIMULATOR, reason="a lost worker is tested with CPU worker processes (a GPU shard "
                    "of 40 individuals ends before the kill lands)")
def test_the_scattered_data_lost_with_its_worker_is_scattered_again(client, monkeypatch):
    """Kill the worker holding the only copy of the scattered market while the call's one shard
    runs there. Scattered data has no task to compute it again, and Dask's active memory manager
    drops the copies no task needs (CI, 2026-11-27: a worker restarted mid-call and the GP call
    failed with FutureCancelledError): the call scatters it again, to the worker left, and gives
    the single-device fitness."""
    market = gp.synthetic_market(stocks=3, days=300, seed=4)
    pop = population(40)  # one shard of about 2 s on the simulator: caught while it runs
    one = gp.evaluate(pop, market)
    scattered = []
    real_scatter = client.scatter
    monkeypatch.setattr(client, "scatter", lambda *a, **kw: scattered.append(real_scatter(*a, **kw)) or scattered[-1])
    killed = {}

    def kill_the_holder():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "worker" not in killed:
            busy = [w for w, keys in client.processing().items() if keys]
            if scattered and busy:
                [ref] = scattered[0]
                client.amm.run_once()  # drop the broadcast's copy on the idle worker now, not within 2 s
                holders = set(client.who_has([ref])[ref.key])
                if holders == set(busy):  # the premise: one copy, on the worker running the shard
                    os.kill(client.run(os.getpid, workers=busy)[busy[0]], signal.SIGKILL)
                    killed["worker"], killed["at"] = busy[0], time.monotonic()
                    return
            time.sleep(0.05)

    t = threading.Thread(target=kill_the_holder)
    t.start()
    try:
        got = gd.evaluate(pop, market, client=client, shards=1)
        done = time.monotonic()
        t.join()
        assert "at" in killed and killed["at"] < done, "the only holder of the market was not killed while the shard ran"
        assert len(scattered) == 2, "the market was lost with its worker and scattered again, once"
        assert np.array_equal(got, one)
    finally:
        t.join()
        client.wait_for_workers(2, timeout=120)  # the nanny's new worker, for the tests after this one


@pytest.mark.skipif(not ON_SIMULATOR, reason="a lost worker is tested with CPU worker processes (on two H200s the "
                    "12-chunk search ended, 0.28 s, before the kill landed)")
def test_a_worker_lost_mid_run_changes_nothing(client, rng):
    """Kill one worker process (SIGKILL, as a crash or an out-of-memory kill would) while it runs
    chunks: its nanny starts a new one, Dask recomputes the lost chunks, the answer is unchanged."""
    C = corr(rng, 12)
    k = 4
    one = ss.least_correlated(C, k, params=SMALL)
    victim = sorted(client.scheduler_info()["workers"])[0]
    pid = client.run(os.getpid, workers=[victim])[victim]
    killed = {}

    def kill_when_busy():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if client.processing(workers=[victim]).get(victim):
                time.sleep(0.3)  # inside a chunk
                os.kill(pid, signal.SIGKILL)
                killed["at"], killed["wall"] = time.monotonic(), time.time()
                return
            time.sleep(0.02)

    t = threading.Thread(target=kill_when_busy)
    t.start()
    parts = gd.search_chunks(C, k, client=client, chunks=12, params=SMALL)
    done = time.monotonic()
    t.join()
    assert "at" in killed and killed["at"] < done, "the worker was not killed while the search ran"
    assert gd.merge(parts).rank == one.rank
    assert gd.least_correlated(C, k, client=client, chunks=12, params=SMALL) == one
    client.wait_for_workers(2, timeout=120)  # the nanny's new worker
    # the chunks it had finished came back as they ended (kept); the one it was running was computed again elsewhere
    assert all(p.ended < killed["wall"] for p in parts if p.worker == victim), "a chunk of the killed worker ended after the kill"

