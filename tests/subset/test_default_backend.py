"""The default of a subset search that names no backend (`backend=None`): CUDA C on a GPU where it
runs, with the variant the measured table `FASTEST` gives for the size; numba (its default,
`incremental`) without pycuda and on the simulator. The machine is emulated (monkeypatched
`device.on_simulator` and `cudac.unavailable_reason`), so these run anywhere, fast; the table is
checked against the committed H200 benchmark (the newest full run, every step in one run)."""

import json
from pathlib import Path

import numpy as np
import pytest

import gpulab.subset as ss
from gpulab import cli, cudac, device
from gpulab.subset import host
from gpulab.subset.combinatorics import choose
from gpulab.subset.variants import DEFAULTS, FASTEST, REGISTRY, default_choice
from tests.conftest import ON_SIMULATOR

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "docs" / "benchmarks" / "subset-lanes-h200.json"
MACHINES = {"gpu+pycuda": (False, True), "gpu": (False, False), "sim": (True, True)}


def emulate(monkeypatch, machine: str) -> None:
    """`gpu+pycuda`: a GPU where CUDA C runs; `gpu`: a GPU without pycuda; `sim`: numba's
    simulator (where even a pycuda that imports could not run CUDA C)."""
    sim, pycuda = MACHINES[machine]
    monkeypatch.setattr(device, "on_simulator", lambda: sim)
    monkeypatch.setattr(cudac, "unavailable_reason", lambda: None if pycuda else "pycuda is not installed")
    # the default asks the device's shared memory per block where Q may not fit: the H200's (the
    # emulated GPU has no device to ask)
    monkeypatch.setattr(host, "shared_limit", lambda: 227 * 1024)


def corr(rng, n):
    return ss.correlation(rng.standard_normal((n + 6, n)))


def max_n_by_kernel() -> int:
    """The largest n whose packed Q fits the constant kernel's Q_const (counted here, not read
    from the code under test)."""
    n = 1
    while (n + 1) * n // 2 <= host.CONST_PAIRS:
        n += 1
    return n


@pytest.mark.parametrize("machine,expected", [
    ("gpu+pycuda", {(20, 5): ("constant_local", "cuda-c"), (50, 4): ("constant_local", "cuda-c"),
                    (50, 5): ("incremental", "cuda-c"), (200, 5): ("incremental_lanes", "cuda-c")}),
    ("gpu", {**{size: ("incremental", "numba") for size in ((20, 5), (50, 4), (50, 5))},
             (200, 5): ("incremental_lanes", "numba")}),
    ("sim", {size: ("incremental", "numba") for size in ((20, 5), (50, 4), (50, 5), (200, 5))}),
])
def test_none_picks_by_the_machine_and_the_size(monkeypatch, machine, expected):
    emulate(monkeypatch, machine)
    for (n, k), choice in expected.items():
        assert default_choice(n, k) == choice, (machine, n, k)


def test_the_variant_follows_the_table_and_falls_back_over_a_limit(monkeypatch):
    top = max_n_by_kernel()
    assert top == 128
    if ON_SIMULATOR:  # the simulator's limits are the H200's: the device's own check agrees
        assert host.max_n_constant() == top
    emulate(monkeypatch, "gpu+pycuda")
    most = FASTEST["cuda-c"][0][0]
    assert choose(50, 4) == most and default_choice(50, 4)[0] == "constant_local"  # the boundary itself
    assert choose(51, 4) > most and default_choice(51, 4)[0] == "incremental"  # one size above it
    # few subsets (k = 2), but over the constant kernel's n: the next row that can run, incremental
    assert choose(top, 2) <= most and default_choice(top, 2) == ("constant_local", "cuda-c")
    assert choose(top + 1, 2) <= most and default_choice(top + 1, 2) == ("incremental", "cuda-c")
    assert choose(200, 2) <= most and default_choice(200, 2) == ("incremental", "cuda-c")


def test_lanes_where_units_are_large_and_the_kernel_takes_n(monkeypatch):
    """incremental_lanes replaces a default incremental from units of LANES_FROM_UNIT subsets
    (n(n-1)/(k(k-1)) subsets on average), k >= 5, up to n = 256; past the shared-memory cap the default is
    incremental_global as before; a backend named alone keeps its default."""
    from gpulab.subset.variants import LANES_FROM_UNIT, lanes_instead

    emulate(monkeypatch, "gpu+pycuda")
    assert 200 * 199 // 30 == LANES_FROM_UNIT  # the bound is C(200,6)'s units: n(n-1)/(k(k-1))
    assert choose(200, 6) == 200 * 199 * choose(198, 4) // 30  # C(n, k) over its C(n-2, k-2) units
    assert lanes_instead(200, 6) and default_choice(200, 6) == ("incremental_lanes", "cuda-c")
    assert not lanes_instead(100, 6) and default_choice(100, 6) == ("incremental", "cuda-c")  # units of 330
    assert not lanes_instead(2000, 2) and not lanes_instead(200, 4)  # k < 5: not measured
    assert default_choice(236, 5) == ("incremental_lanes", "cuda-c")
    assert default_choice(300, 5) == ("incremental_global", "cuda-c")  # Q past the shared memory
    assert default_choice(200, 5, None, "cuda-c") == ("incremental", "cuda-c")
    monkeypatch.setattr(host, "shared_limit", lambda: 10**9)  # a GPU with room for Q at n = 257
    assert default_choice(256, 5)[0] == "incremental_lanes" and default_choice(257, 5)[0] == "incremental"


def test_every_row_names_a_registered_variant_smallest_first():
    for backend, rows in FASTEST.items():
        bounds = [most for most, _ in rows]
        assert bounds[-1] is None and bounds[:-1] == sorted(bounds[:-1])  # a last row for every size
        for _, name in rows:
            REGISTRY.get(name, backend)


def test_the_table_is_the_fastest_measured():
    """At every size of the committed H200 benchmark, the choice on a GPU with pycuda is the
    fastest GPU record there, or within 5% of it: the table cannot drift from the data."""
    records = json.loads(BENCH.read_text())["records"]
    sizes = {}
    for r in records:
        if r["backend"] != "cpu" and r["median_ms"] is not None:
            sizes.setdefault((r["size"]["n"], r["size"]["k"]), {})[(r["variant"], r["backend"])] = r["median_ms"]
    assert len(sizes) >= 10, sorted(sizes)  # the seed's sizes, C(100,6) and C(200,5)
    for (n, k), times in sorted(sizes.items()):
        mp = pytest.MonkeyPatch()
        try:
            emulate(mp, "gpu+pycuda")
            choice = default_choice(n, k)
        finally:
            mp.undo()
        best = min(times.values())
        assert choice in times, (n, k, choice)
        assert times[choice] <= 1.05 * best, (n, k, choice, times[choice], min(times, key=times.get), best)


@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_explicit_arguments_are_untouched(monkeypatch, machine):
    emulate(monkeypatch, machine)
    for n, k in ((20, 5), (200, 5)):
        for backend in ("numba", "cuda-c", "cpu"):  # a backend alone: its default, as before
            assert default_choice(n, k, None, backend) == (DEFAULTS[backend], backend)
        for variant, backend in (("global", "cuda-c"), ("incremental_warp", "numba"), ("reference", "cpu")):
            assert default_choice(n, k, variant, backend) == (variant, backend)
        # a variant alone: on the default backend, or on the only backend that has it
        assert default_choice(n, k, "shared") == ("shared", "cuda-c" if machine == "gpu+pycuda" else "numba")
        assert default_choice(n, k, "cpu_parallel") == ("cpu_parallel", "cpu")


def test_the_api_runs_the_concrete_choice(monkeypatch, rng):
    """least_correlated and search_packed resolve None through default_choice (spied: nothing
    runs on the emulated GPU); check checks that choice."""
    emulate(monkeypatch, "gpu+pycuda")
    seen = []
    monkeypatch.setattr(ss, "search_packed", lambda Q, n, k, variant, backend, *a: seen.append((variant, backend)) or (0.0, 0))
    C = corr(rng, 7)
    ss.least_correlated(C, 3)
    ss.least_correlated(C, 3, backend="numba")
    assert seen == [("constant_local", "cuda-c"), ("incremental", "numba")]
    monkeypatch.undo()

    resolved = []
    monkeypatch.setattr(device, "on_simulator", lambda: False)
    monkeypatch.setattr(cudac, "unavailable_reason", lambda: None)
    monkeypatch.setattr(REGISTRY, "resolve", lambda name, backend: resolved.append((name, backend)) or 1 / 0)
    with pytest.raises(ZeroDivisionError):
        ss.search_packed(np.zeros(choose(200, 2)), 200, 5)  # (Q of n = 200; resolve comes first)
    assert resolved == [("incremental_lanes", "cuda-c")]
    C2, n, k = ss.check(C, 3)
    assert (n, k) == (7, 3) and np.array_equal(C2, C)


@pytest.mark.skipif(not ON_SIMULATOR, reason="the simulator's own default (the GPU's is emulated above)")
def test_on_the_simulator_the_default_is_numbas(rng):
    C = corr(rng, 6)
    assert ss.least_correlated(C, 2) == ss.least_correlated(C, 2, "incremental", "numba")


def test_cli_json_reports_the_concrete_choice(monkeypatch, capsys):
    """`gpulab subset search --json` without --backend reports what the default chose (the
    search itself spied: on the emulated GPU nothing runs)."""
    from gpulab.subset import cli as subset_cli

    ran = []

    def search_here(C, k, variant, backend):
        ran.append((variant, backend))
        return ss.least_correlated_reference(C, k)

    monkeypatch.setattr(subset_cli, "search_here", search_here)
    base = ["subset", "search", "--synthetic", "30", "--n", "8", "--k", "3", "--json"]
    for machine, extra, choice in (("gpu+pycuda", [], ("constant_local", "cuda-c")), ("gpu", [], ("incremental", "numba")),
                                   ("gpu+pycuda", ["--backend", "numba"], ("incremental", "numba")),
                                   ("sim", ["--variant", "cpu_parallel"], ("cpu_parallel", "cpu"))):
        emulate(monkeypatch, machine)
        capsys.readouterr()
        assert cli.main(base + extra) == 0
        out = json.loads(capsys.readouterr().out)
        assert (out["variant"], out["backend"]) == choice == ran[-1], (machine, extra, out)


def test_distributed_tasks_run_and_record_the_concrete_choice(rng):
    """gpulab.distributed decides the defaults once, on the client, and every chunk records the
    variant and backend it ran (an in-process cluster: one worker thread)."""
    distributed = pytest.importorskip("distributed")
    import gpulab.distributed as gd

    C = corr(rng, 7)
    choice = default_choice(7, 3)
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None) as client:
        parts = gd.search_chunks(C, 3, client=client, chunks=3)
        cpu = gd.search_chunks(C, 3, client=client, chunks=2, backend="cpu")
    assert [(p.variant, p.backend) for p in parts] == [choice] * 3
    assert [(p.variant, p.backend) for p in cpu] == [("cpu_parallel", "cpu")] * 2
    assert gd.merge(parts).rank == ss.least_correlated(C, 3).rank
